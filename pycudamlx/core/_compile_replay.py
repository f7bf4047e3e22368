"""The trace cache of ``mx.compile``: record the graph a compiled function built once, rebuild
it for later calls with the same signature instead of running the Python function again.

MLX runs a compiled function's Python body only when it traces (the first call, and again for
each new trace signature: argument shapes, dtypes, tree structure, constants). Programs observe
that: side effects in the body (a print, a counter, a list append) happen once per trace, and
values the body reads outside its arguments and captured ``inputs`` (a model's weights read
through a closure) are constants of the trace. This module gives the same behaviour.

Recording: the body runs eagerly on the real arguments (its results are the first call's
results). The lazy graph from its outputs (and from the arrays it left in the captured
``outputs`` tree) is walked back to the argument arrays and captured ``inputs`` arrays (the
leaves). Nodes that do not depend on a leaf are kept as constants (the very array objects,
random draws included: they repeat, as in MLX); the others become steps (primitive, inputs,
shape, dtype, stream). Nodes evaluated while the body ran (graph.evaluate.tape keeps what
evaluation drops) are walked through, so nothing that depends on a leaf is taken for a constant.

Replay: the steps are rebuilt on the new leaves with ``make``/``make_multi`` (lazy, as any op),
the output tree is rebuilt, and the captured ``outputs`` tree gets its new arrays written back
at the same positions (dict and list slots, as MLX's tree_fill).

From the third call of a recording whose steps all run on one GPU stream (the first call
traced, the second warmed modules and library workspaces up), a replay is one node instead
(graph/primitives/compiled_graph.py): evaluated, it captures the steps once into a CUDA graph and
then replays them with one launch. ``PYCUDAMLX_COMPILE_GRAPHS=0`` keeps the per-op replay.

Recording is skipped (the body runs at every call, as before) where a replay could differ from
running it: inside grad/vjp/jvp/vmap or another compiled call, when the body replaced arrays in
its argument containers or mutated an argument array in place, when captured ``inputs`` changed
without ``outputs``, or when an ``outputs`` array cannot be written back (a tuple slot).
"""

from __future__ import annotations

from typing import Any

from .. import _env
from ..graph import evaluate as _ev
from ..graph.primitives.compiled_graph import CompiledGraph
from . import device as dev
from .array import _ALIAS, array, from_data, make, make_multi

#: Whether replays on GPU streams become CUDA graphs (PYCUDAMLX_COMPILE_GRAPHS; tests set it).
graphs_enabled = _env.flag_or_default("PYCUDAMLX_COMPILE_GRAPHS")


#: id(function) -> [number of live compiled wrappers, {trace key: Recording}].
_shared: dict[int, list] = {}
_first_call_pending = True


def first_call_done() -> bool:
    """False for the first compiled call of the process when no op has asked for a default
    stream yet, True otherwise: MLX 0.32.4 keys its trace cache by the default stream, which
    that first lookup creates, so the first trace is not found again (the body runs twice)."""
    global _first_call_pending
    if _first_call_pending:
        _first_call_pending = False
        return bool(dev._default_streams)
    return True


def shared_cache(fun: Any) -> dict:
    """The recordings of ``fun``, shared by its compiled wrappers (MLX keys its cache by the
    function's id)."""
    entry = _shared.get(id(fun))
    if entry is None:
        entry = _shared[id(fun)] = [0, {}]
    return entry[1]


class CacheUser:
    """Held by a compiled wrapper: when a wrapper goes, its function's recordings are dropped
    (MLX erases the function's cache entry, even while another wrapper of it lives)."""

    __slots__ = ("key",)

    def __init__(self, fun: Any) -> None:
        self.key = id(fun)
        _shared.setdefault(self.key, [0, {}])[0] += 1

    def __del__(self) -> None:
        entry = _shared.get(self.key)
        if entry is not None:
            entry[0] -= 1
            entry[1].clear()
            if entry[0] <= 0:
                del _shared[self.key]


class Recording:
    """One trace: how to rebuild its outputs from the leaves of a call."""

    __slots__ = ("n_leaves", "steps", "out_tree", "out_refs", "state_refs", "n_keys",
                 "replays", "graph", "leaf_shapes", "_shapes")

    def __init__(self, n_leaves: int, steps: list, out_tree: Any, out_refs: list,
                 state_refs: list, n_keys: int = 0, leaf_shapes: tuple = ()) -> None:
        self.n_leaves = n_leaves
        self.leaf_shapes = leaf_shapes  # the traced call's leaf shapes (shapeless reruns)
        self._shapes: list | None = None
        self.n_keys = n_keys  # keys drawn from a captured mx.random.state, in order
        self.steps = steps
        self.out_tree = out_tree  # fun's return value (arrays replaced on replay)
        self.out_refs = out_refs  # a value reference per array of out_tree, in order
        self.state_refs = state_refs  # a value reference per array of the outputs tree
        self.replays = 0
        self.graph: _GraphPlan | None | bool = None  # False: replays op by op

    def value_shapes(self) -> list:
        """The traced shape of every value a replay builds: leaves, then each step's (a
        recording without random keys: replay_at_new_shapes refuses those)."""
        if self._shapes is None:
            shapes = list(self.leaf_shapes)
            for step in self.steps:
                if step[0] == "node":
                    shapes.append(step[3])
                elif step[0] == "multi":
                    shapes.append(None)  # a group: its members are "pick" steps
                else:
                    shapes.append(self.steps[step[1] - len(self.leaf_shapes)][3][step[2]][0])
            self._shapes = shapes
        return self._shapes


def array_leaves(tree: Any, out: list) -> list:
    """The arrays of ``tree``'s lists, tuples and dicts, depth first in order."""
    if isinstance(tree, array):
        out.append(tree)
    elif isinstance(tree, (list, tuple)):
        for x in tree:
            array_leaves(x, out)
    elif isinstance(tree, dict):
        for x in tree.values():
            array_leaves(x, out)
    return out


def writable(tree: Any) -> bool:
    """Whether every array of ``tree`` sits in a dict or list slot (replaceable in place)."""
    if isinstance(tree, dict):
        return all(writable(x) for x in tree.values() if not isinstance(x, array))
    if isinstance(tree, list):
        return all(writable(x) for x in tree if not isinstance(x, array))
    if isinstance(tree, tuple):
        return all(not isinstance(x, array) and writable(x) for x in tree)
    return not isinstance(tree, array)


def _write_back(tree: Any, values: Any) -> None:
    """Put ``values`` (an iterator) into the array slots of ``tree``, in array_leaves order."""
    if isinstance(tree, dict):
        for k, x in list(tree.items()):
            if isinstance(x, array):
                tree[k] = next(values)
            else:
                _write_back(x, values)
    elif isinstance(tree, list):
        for i, x in enumerate(tree):
            if isinstance(x, array):
                tree[i] = next(values)
            else:
                _write_back(x, values)
    elif isinstance(tree, tuple):
        for x in tree:
            _write_back(x, values)


class _Slot:
    """Where an array of a recorded output tree goes (the tree keeps no array alive)."""

    __slots__ = ()


_SLOT = _Slot()


def _plain(tree: Any) -> bool:
    """Whether ``tree``'s containers are plain lists, tuples and dicts (rebuilt as such)."""
    t = type(tree)
    if t is list or t is tuple:
        return all(_plain(x) for x in tree)
    if t is dict:
        return all(_plain(x) for x in tree.values())
    return not isinstance(tree, (list, tuple, dict))


def _skeleton(tree: Any) -> Any:
    """``tree`` with each array replaced by _SLOT."""
    if isinstance(tree, array):
        return _SLOT
    if isinstance(tree, list):
        return [_skeleton(x) for x in tree]
    if isinstance(tree, tuple):
        return tuple(_skeleton(x) for x in tree)
    if isinstance(tree, dict):
        return {k: _skeleton(x) for k, x in tree.items()}
    return tree


def _rebuild(tree: Any, values: Any) -> Any:
    """``tree`` (a skeleton) with its slots filled from ``values`` (an iterator)."""
    if tree is _SLOT:
        return next(values)
    if isinstance(tree, list):
        return [_rebuild(x, values) for x in tree]
    if isinstance(tree, tuple):
        return tuple(_rebuild(x, values) for x in tree)
    if isinstance(tree, dict):
        return {k: _rebuild(x, values) for k, x in tree.items()}
    return tree


def _node(n: array, tape: dict) -> tuple | None:
    """(primitive, inputs, siblings) of ``n``, through evaluation (the tape); None: a value."""
    if n._prim is not None:
        return n._prim, n._inputs, n._siblings
    rec = tape.get(id(n))
    if rec is not None and rec[0] is n:
        return rec[1], rec[2], rec[3]
    return None


def stand_in(x: Any) -> Any:
    """What a traced body gets for a top-level argument: a fresh node with an array's value."""
    if not isinstance(x, array):
        return x
    return make(_ALIAS, (x,), x._shape, x._dtype, x._stream or dev.resolve_stream(None))


_UNCAPTURED = ("[compile] Attempting to compile a function with uncaptured inputs is not "
               "allowed.")


def record(leaves: list, outputs: Any, state_out: list, tape: dict,
           replaced: set[int], keys: list = ()) -> Recording | None:
    """The recording of a trace whose leaves are ``leaves`` and whose results are the arrays
    of ``outputs`` and ``state_out``; None when nothing can be recorded. ``replaced``: ids of
    argument arrays the body got stand-ins for; reaching one (read through a closure) is
    MLX's ValueError."""
    if not _plain(outputs):  # a namedtuple, a Module...: the body builds it at every call
        return None
    out_arrays = array_leaves(outputs, [])
    slot: dict[int, int] = {}
    for i, a in enumerate(leaves):  # an array passed twice: its first place (the key has
        slot.setdefault(id(a), i)   # the pattern of repeats)
    # Keys the body drew from a captured mx.random.state are leaves too: a replay draws new
    # ones (fresh random numbers at each call, as running the body would give).
    for j, k in enumerate(keys):
        slot.setdefault(id(k), len(leaves) + j)
    base = len(leaves) + len(keys)
    info: dict[int, tuple | None] = {}
    keep: list = []  # the walked nodes stay alive while ids identify them
    steps: list = []
    groups: dict[int, int] = {}  # id(siblings) -> the step that builds the group
    stack = [(a, False) for a in reversed(out_arrays + state_out)]
    while stack:
        n, expanded = stack.pop()
        key = id(n)
        if not expanded:
            if key in slot or key in info:
                continue
            if key in replaced:
                raise ValueError(_UNCAPTURED)
            node = _node(n, tape)
            info[key] = None
            keep.append(n)
            if node is None:
                continue
            stack.append((n, True))
            for i in reversed(node[1]):
                if id(i) not in slot and id(i) not in info:
                    stack.append((i, False))
            continue
        prim, inputs, sib = _node(n, tape)
        refs = [slot[id(i)] if id(i) in slot else i for i in inputs]
        if all(isinstance(r, array) for r in refs):
            continue  # no leaf below: a constant of the trace
        stream = n._stream or dev.resolve_stream(None)
        if sib is not None:
            pos = next((j for j, r in enumerate(sib.refs) if r() is n), None)
            if pos is None:
                return None
            group = groups.get(id(sib))
            if group is None:
                group = groups[id(sib)] = base + len(steps)
                steps.append(("multi", prim, refs, tuple(sib.specs), stream))
                keep.append(sib)
            slot[key] = base + len(steps)
            steps.append(("pick", group, pos))
        else:
            slot[key] = base + len(steps)
            steps.append(("node", prim, refs, n._shape, n._dtype, stream))
    out_refs = [slot.get(id(a), a) for a in out_arrays]
    state_refs = [slot.get(id(a), a) for a in state_out]
    return Recording(len(leaves), steps, _skeleton(outputs), out_refs, state_refs, len(keys),
                     tuple(a._shape for a in leaves))


def replay(rec: Recording, leaves: list, state_tree: Any) -> Any:
    """The outputs of a call with ``leaves``; the captured outputs tree gets its new arrays."""
    values: list = list(leaves)
    if rec.n_keys:
        from .random import state as key_state

        values.extend(key_state._next() for _ in range(rec.n_keys))
    rec.replays += 1
    plan = rec.graph
    if plan is None and rec.replays > 1 and graphs_enabled:
        plan = rec.graph = _GraphPlan.of(rec)
    if plan:
        get = plan.call(values)
    else:
        _run_steps(rec.steps, values)
        get = values.__getitem__
    outs = iter([get(r) if type(r) is int else r for r in rec.out_refs])
    result = _rebuild(rec.out_tree, outs)
    if rec.state_refs:
        _write_back(state_tree, iter([get(r) if type(r) is int else r for r in rec.state_refs]))
    return result


#: replay_at_new_shapes' answer when a step has no shape rule (the caller traces again).
NO_RULE = object()


def replay_at_new_shapes(rec: Recording, leaves: list) -> Any:
    """The outputs of a shapeless trace's recording rerun on ``leaves`` of other shapes (same
    ndims), each step's shape from _shape_rules; NO_RULE when a step has none. Op by op (a
    CUDA graph holds one set of shapes), no captured state (its shapes are the trace's)."""
    from . import _shape_rules

    if rec.n_keys:
        return NO_RULE
    shapes = rec.value_shapes()
    values: list = list(leaves)
    get = values.__getitem__
    for step in rec.steps:
        kind = step[0]
        if kind == "pick":
            values.append(values[step[1]][step[2]])
            continue
        refs = step[2]
        ins = tuple(get(r) if type(r) is int else r for r in refs)
        now = [a._shape for a in ins]
        traced = [shapes[r] if type(r) is int else r._shape for r in refs]
        if kind == "node":
            _, prim, _, shape, dtype, stream = step
            new = _shape_rules.infer(prim, now, traced, shape)
            if new is None:
                return NO_RULE
            values.append(make(prim, ins, new, dtype, stream))
        else:  # a multi-output group keeps its traced shapes only
            if now != traced:
                return NO_RULE
            values.append(make_multi(step[1], ins, step[3], step[4]))
    outs = iter([get(r) if type(r) is int else r for r in rec.out_refs])
    return _rebuild(rec.out_tree, outs)


def _run_steps(steps: list, values: list) -> None:
    """Append to ``values`` (the leaves, then the keys) the lazy node of each step."""
    get = values.__getitem__
    for step in steps:
        kind = step[0]
        if kind == "node":
            _, prim, refs, shape, dtype, stream = step
            ins = tuple(get(r) if type(r) is int else r for r in refs)
            values.append(make(prim, ins, shape, dtype, stream))
        elif kind == "multi":
            _, prim, refs, specs, stream = step
            ins = tuple(get(r) if type(r) is int else r for r in refs)
            values.append(make_multi(prim, ins, specs, stream))
        else:
            values.append(values[step[1]][step[2]])


class _GraphPlan:
    """How a recording replays as one CompiledGraph node: which values are its outputs."""

    __slots__ = ("prim", "stream", "base", "targets", "specs", "index")

    @classmethod
    def of(cls, rec: Recording) -> "_GraphPlan | bool":
        """The plan of ``rec``, or False when its steps do not all run on one GPU stream."""
        streams = {step[-1] for step in rec.steps if step[0] != "pick"}
        if len(streams) != 1:
            return False
        (stream,) = streams
        if not stream.is_gpu:
            return False
        base = rec.n_leaves + rec.n_keys
        targets = sorted({r for r in rec.out_refs + rec.state_refs
                          if type(r) is int and r >= base})
        if not targets:
            return False
        return cls(rec, stream, base, targets)

    def __init__(self, rec: Recording, stream: Any, base: int, targets: list) -> None:
        self.stream = stream
        self.base = base
        self.targets = targets
        self.index = {r: k for k, r in enumerate(targets)}
        specs = []
        for r in targets:
            step = rec.steps[r - base]
            if step[0] == "pick":
                specs.append(rec.steps[step[1] - base][3][step[2]])
            else:
                specs.append((step[3], step[4]))
        self.specs = tuple(specs)
        # The closures hold the steps, not the recording: no reference cycle through the
        # plan, so a graph's memory goes as soon as its compiled function does.
        steps = rec.steps
        constants = [r for step in steps if step[0] != "pick" for r in step[2]
                     if type(r) is not int]

        def build(inputs: list) -> list:
            values = [from_data(g, g.dtype) for g in inputs]
            _run_steps(steps, values)
            outs = [values[r] for r in targets]
            del values  # the fusion planner fuses only what nothing else holds
            _ev.evaluate(outs)
            return [o._data for o in outs]

        def prepare() -> None:
            # Constants go to the GPU before the capture: an upload inside it would be
            # recorded, not run, and a graph cannot read host memory.
            _ev.evaluate(constants)
            cuda_stream = stream.cuda_stream()
            for c in constants:
                _ev.to_gpu(c, cuda_stream)

        label = f"a trace of {len(steps)} steps"
        self.prim = CompiledGraph(build, prepare, label)

    def call(self, values: list) -> Any:
        """Build the node for ``values`` (leaves and keys); a getter of each value reference
        (a leaf or key, or the node's output for a step)."""
        outs = make_multi(self.prim, tuple(values), self.specs, self.stream)
        base = self.base
        index = self.index
        return lambda r: values[r] if r < base else outs[index[r]]


class KeepEvaluated:
    """While open (outside any gradient trace), evaluation keeps what it drops in a tape, so
    that ``record`` can walk through nodes the body evaluated."""

    __slots__ = ("tape", "_prev")

    def __enter__(self) -> dict:
        self._prev = _ev.tape
        self.tape = _ev.tape = {} if self._prev is None else self._prev
        return self.tape

    def __exit__(self, *exc: Any) -> None:
        _ev.tape = self._prev
