"""``mx.eval`` and ``mx.async_eval``: evaluate arrays found anywhere in nested containers."""

from __future__ import annotations

from typing import Any

from ..graph.evaluate import evaluate
from . import _compile_trace
from .array import array


def collect_arrays(tree: Any, out: list[array]) -> None:
    """Append every array found in nested lists, tuples and dicts to ``out``.

    Other leaves are skipped, as MLX 0.32's ``mx.eval`` does: programs pass
    ``[model.state, optimizer.state, mx.random.state]`` and objects. The random state is walked
    too (it holds the global key), so that key is evaluated with the rest.
    """
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, array):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif _is_random_state(x):
            stack.extend(x)


def _is_random_state(x: Any) -> bool:
    from .random import _RandomState  # here: an unusual leaf, and random imports much of core

    return isinstance(x, _RandomState)


def eval(*args: Any) -> None:  # noqa: A001 - MLX's name
    """Evaluate every array in ``args`` (arrays or trees of them)."""
    if len(args) == 1 and type(args[0]) is array and not _compile_trace.active:
        evaluate(args)  # the common case, kept cheap
        return
    roots: list[array] = []
    collect_arrays(args, roots)
    if _compile_trace.active:
        _compile_trace.check(roots)
    evaluate(roots)


def async_eval(*args: Any) -> None:
    """Queue the evaluation; GPU work is asynchronous, so this is ``eval`` without a host wait.
    As in MLX, arrays that depend on the inputs of a running transformation (grad, vjp, jvp,
    vmap, compile) raise ValueError: MLX cannot schedule a tracer."""
    if _compile_trace.active or _transform_tracing():
        roots: list[array] = []
        collect_arrays(args, roots)
        if _compile_trace.active:
            _compile_trace.check(roots, _compile_trace.ASYNC_EVAL_IN_TRANSFORM)
        if _reaches_tracer(roots):
            raise ValueError(_compile_trace.ASYNC_EVAL_IN_TRANSFORM)
    eval(*args)


def _transform_tracing() -> bool:
    """Whether a grad/vjp/jvp trace or a vmap trace is open (in any thread)."""
    from ..autodiff import custom, engine

    return engine._depth > 0 or custom.vmap_tracing > 0


def _reaches_tracer(roots: list[array]) -> bool:
    """Whether a root is derived from a traced input: a gradient trace's leaf (its graph kept
    on the trace's tape once evaluated) or a vmap placeholder."""
    from ..autodiff import engine
    from ..graph import evaluate as graph_eval

    tape = graph_eval.tape
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        a = stack.pop()
        if id(a) in seen:
            continue
        seen.add(id(a))
        info = engine._node_info(a, tape)
        if info is None:
            continue
        prim, inputs = info[0], info[1]
        if prim is engine.LEAF or prim.name == "vmap_placeholder":
            return True
        stack.extend(inputs)
    return False
