"""Reverse-mode differentiation of the lazy graph.

``fun`` runs on fresh leaf nodes (aliases of the primals, so a nested trace stays connected to
the graph of an outer one); its ops build the graph as usual. ``backward`` then walks the nodes
reachable from the outputs in reverse topological order and applies one VJP rule per primitive
(``registry``). The rules are written with the public lazy ops, so the backward graph runs on
whatever stream the forward ran on and is itself differentiable (grad of grad).

Evaluation inside ``fun`` (``.item()``, ``mx.eval``, printing, ``if x > 0``) drops the inputs of
the nodes it evaluates; while a trace is open, ``graph.evaluate.tape`` keeps what it dropped, and
the walk reads a node's primitive and inputs from there.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from ..graph import evaluate as _ev
from ..core import device as dev
from ..core.array import _LEAF, _MOVED_LEAVES, array, make
from .registry import lookup

_trace_lock = threading.RLock()
_depth = 0
_jvp_depth = 0
_owned_tape = False  # whether the open traces created graph.evaluate.tape (and drop it)


def jvp_mode() -> bool:
    """Whether the vjp being built is the inner half of a jvp (custom jvp rules apply)."""
    return _jvp_depth > 0


#: Per open JvpMode: (cotangent reaching a custom function's output, the constant part of its
#: custom jvp). jvp runs as the transpose of a vjp, which keeps only the linear part of a
#: custom jvp; jvp() adds these pairs to its second pass to carry the constant through.
_jvp_offsets: list[list] = []


class JvpMode:
    def __enter__(self) -> list:
        global _jvp_depth
        _jvp_depth += 1
        _jvp_offsets.append([])
        return _jvp_offsets[-1]

    def __exit__(self, *exc: Any) -> None:
        global _jvp_depth
        _jvp_depth -= 1
        _jvp_offsets.pop()


def add_jvp_offset(cotangent: array, constant: array) -> None:
    """Record the constant term of a custom jvp (see ``_jvp_offsets``)."""
    if _jvp_offsets:
        _jvp_offsets[-1].append((cotangent, constant))


class Trace:
    """While open, evaluation keeps the graph (``graph.evaluate.tape``); nests (grad of grad).
    Traces in several threads share one tape, dropped when the last one closes."""

    __slots__ = ("tape",)

    def __enter__(self) -> dict:
        global _depth, _owned_tape
        with _trace_lock:
            if _ev.tape is None:
                _ev.tape = {}
                _owned_tape = True
            _depth += 1
            self.tape = _ev.tape
        return self.tape

    def __exit__(self, *exc: Any) -> None:
        global _depth, _owned_tape
        with _trace_lock:
            _depth -= 1
            if _depth == 0:
                _MOVED_LEAVES.clear()
                if _owned_tape:  # a compile trace's tape outlives the gradient
                    _ev.tape = None
                    _owned_tape = False


LEAF = _LEAF


def leaf(x: array) -> array:
    """A fresh node with ``x``'s value that the backward walk stops at (and an outer walk passes
    through, to ``x``)."""
    return make(_LEAF, (x,), x._shape, x._dtype, x._stream or dev.resolve_stream(None))


def resolve_leaves(leaves: list[array]) -> list[array]:
    """``leaves`` with each one the traced function updated in place (``x[i] = v``) replaced
    by the node that kept its original value: MLX differentiates against the input, not
    against the updated array object."""
    if not _MOVED_LEAVES:
        return leaves
    out = []
    for x in leaves:
        rec = _MOVED_LEAVES.pop(id(x), None)
        out.append(rec[1] if rec is not None and rec[0] is x else x)
    return out


def _node_info(n: array, tape: dict | None) -> tuple | None:
    """(primitive, inputs, siblings) of ``n``, or None for a constant."""
    p = n._prim
    if p is not None:
        return p, n._inputs, n._siblings
    if tape:
        rec = tape.get(id(n))
        if rec is not None and rec[0] is n:
            return rec[1], rec[2], rec[3]
    return None


def unbroadcast(ct: array, shape: tuple[int, ...]) -> array:
    """Sum ``ct`` down to ``shape`` (the reverse of broadcasting ``shape`` to ct's shape)."""
    from ..core import reduce as R, shape as S

    if ct._shape == shape:
        return ct
    lead = ct.ndim - len(shape)
    axes = list(range(lead))
    for i, e in enumerate(shape):
        if e == 1 and ct._shape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        ct = R.sum(ct, axis=axes, keepdims=True)
    return S.reshape(ct, shape)


def _fix(ct: array, like: array) -> array:
    """A rule's cotangent made to ``like``'s dtype and shape."""
    if ct._shape != like._shape:
        ct = unbroadcast(ct, like._shape)
    if ct._dtype is not like._dtype:
        from ..core._base import astype

        ct = astype(ct, like._dtype)
    return ct


def _add(a: array, b: array) -> array:
    from ..core.elementwise import add

    return add(a, b)


class _Op:
    __slots__ = ("prim", "inputs", "outputs", "traverse", "wanted")

    def __init__(self, prim: Any, inputs: tuple, outputs: list, traverse: Sequence[int]) -> None:
        self.prim = prim
        self.inputs = inputs
        self.outputs = outputs
        self.traverse = traverse
        self.wanted: list[bool] | None = None


def backward(outputs: Sequence[array], cotangents: Sequence[array], leaves: Sequence[array],
             tape: dict | None) -> list[array | None]:
    """The cotangent of each leaf (None where no path leads from it to an output)."""
    leaf_ids = {id(x) for x in leaves}
    # 1. Ops reachable from the outputs, in post-order (an op after the ops of its inputs).
    #    A multi-output op is one entry, keyed by its siblings object.
    order: list[_Op] = []
    op_of: dict[int, _Op | None] = {}  # node id -> its op (None: constant or leaf)
    seen: set[int] = set()
    # MLX's order: a recursive walk over the outputs and each node's inputs first to last.
    # The stack pops in reverse, so they are pushed last to first. In float16/bfloat16 the
    # order in which a shared node's cotangents are summed shows in the rounding.
    work: list[tuple[array, bool]] = [(o, False) for o in reversed(outputs)]
    pending: dict[int, _Op] = {}
    while work:
        node, expanded = work.pop()
        nid = id(node)
        if expanded:
            op = pending.pop(nid)
            order.append(op)
            continue
        if nid in op_of or nid in leaf_ids:
            continue
        info = _node_info(node, tape)
        if info is None:
            op_of[nid] = None
            continue
        prim, inputs, sib = info
        key = id(sib) if sib is not None else nid
        if key in seen:
            # A sibling of an op already expanded (or being expanded).
            op_of[nid] = op_of.get(key)  # type: ignore[arg-type]
            continue
        seen.add(key)
        if sib is not None:
            outs = [r() for r in sib.refs]
        else:
            outs = [node]
        traverse = _traversed(prim, len(inputs))
        op = _Op(prim, inputs, outs, traverse)
        for o in outs:
            if o is not None:
                op_of[id(o)] = op
        op_of[key] = op
        op_of[nid] = op
        pending[nid] = op
        work.append((node, True))
        for i in reversed(traverse):
            inp = inputs[i]
            if id(inp) not in op_of and id(inp) not in leaf_ids:
                work.append((inp, False))
    del work, pending
    # 2. Which inputs of which ops lead to a leaf.
    depends: set[int] = set(leaf_ids)  # ids of nodes that depend on a leaf
    live: list[_Op] = []
    for op in order:
        wanted = [False] * len(op.inputs)
        any_ = False
        for i in op.traverse:
            if id(op.inputs[i]) in depends:
                wanted[i] = True
                any_ = True
        if any_:
            op.wanted = wanted
            for o in op.outputs:
                if o is not None:
                    depends.add(id(o))
            live.append(op)
    # 3. Cotangents, outputs first.
    cts: dict[int, array] = {}
    for o, c in zip(outputs, cotangents):
        k = id(o)
        if k in depends:
            cts[k] = _add(cts[k], c) if k in cts else c
    for op in reversed(live):
        outs = op.outputs
        got = [cts.pop(id(o), None) if o is not None else None for o in outs]
        if all(g is None for g in got):
            continue
        rule = lookup(op.prim)
        if rule is None:
            kind = "jvp" if _jvp_depth > 0 else "vjp"
            mlx_name = getattr(op.prim, "mlx_name", None)
            if mlx_name is not None:  # one MLX has no rule for either: its own text
                raise ValueError(f"[Primitive::{kind}] Not implemented for {mlx_name}.")
            raise ValueError(f"[{kind}] Not implemented for {op.prim.name}: pycudamlx has no "
                             f"gradient rule for this primitive.")
        results = rule(op.prim, op.inputs, outs, got, op.wanted)
        for i, (inp, r) in enumerate(zip(op.inputs, results)):
            if r is None or not op.wanted[i]:
                continue
            r = _fix(r, inp)
            k = id(inp)
            cts[k] = _add(cts[k], r) if k in cts else r
    return [cts.get(id(x)) for x in leaves]


def _traversed(prim: Any, n: int) -> Sequence[int]:
    f = getattr(prim, "grad_inputs", None)
    if f is not None:
        return f(n)
    return range(n)


def vjp_flat(fun: Callable[[list[array]], list[array]], primals: Sequence[array],
             cotangents: Callable[[list[array]], list[array]] | Sequence[array],
             ) -> tuple[list[array], list[array | None]]:
    """Run ``fun`` on leaves of ``primals`` and pull ``cotangents`` (a list, or a function of
    the outputs that returns one) back to them. Returns (outputs, cotangents or None)."""
    with Trace() as tape:
        leaves = [leaf(p) for p in primals]
        outs = fun(leaves)
        cts = cotangents(outs) if callable(cotangents) else list(cotangents)
        grads = backward(outs, cts, resolve_leaves(leaves), tape)
    return outs, grads


def zeros_for(x: array) -> array:
    from ..core.creation import zeros_like

    return zeros_like(x)
