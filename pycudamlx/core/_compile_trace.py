"""Which arrays a running ``mx.compile`` call treats as traced inputs.

MLX traces a compiled function with value-less stand-ins for its array arguments and captured
``inputs``, so evaluating anything that depends on them inside the function (``.item()``,
``print``, ``mx.eval``, ``if x > 0``, ``np.array(x)``) raises
``ValueError("[eval] Attempting to eval an array during function transformations ...")``;
constants built inside (``mx.array(3).item()``) still evaluate. pycudamlx runs the function as
written, so ``compile`` registers its inputs here for the duration of the call and the public
evaluation entry points call ``check``: the same error, with no cost outside compiled calls.
"""

from __future__ import annotations

from typing import Any, Iterable

EVAL_IN_TRANSFORM = ("[eval] Attempting to eval an array during function transformations like "
                     "compile or vmap is not allowed.")
ASYNC_EVAL_IN_TRANSFORM = "[async_eval] Not allowed inside a graph transformation."

#: One entry per compiled call in progress: the traced arrays (held, so that their ids stay
#: theirs while the call runs) and their ids.
active: list[tuple[list[Any], set[int]]] = []


def enter(arrays: list[Any]) -> None:
    active.append((arrays, {id(a) for a in arrays}))


def leave() -> None:
    active.pop()


def depends_on_traced(roots: Iterable[Any]) -> bool:
    """Whether a root is a traced input or reaches one through unevaluated nodes."""
    traced: set[int] = set()
    for _, ids in active:
        traced |= ids
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        a = stack.pop()
        key = id(a)
        if key in seen:
            continue
        seen.add(key)
        if key in traced:
            return True
        if a._data is None and a._inputs:
            stack.extend(a._inputs)
    return False


def check(roots: Iterable[Any], message: str = EVAL_IN_TRANSFORM) -> None:
    """Raise MLX's error when evaluating ``roots`` needs a traced input (call only while
    ``active`` is non-empty)."""
    if depends_on_traced(roots):
        raise ValueError(message)
