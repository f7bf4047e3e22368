"""``mx.eval`` and ``mx.async_eval``: evaluate arrays found anywhere in nested containers."""

from __future__ import annotations

from typing import Any

from ..graph.evaluate import evaluate
from .array import array


def collect_arrays(tree: Any, out: list[array], strict: bool = True) -> None:
    """Append every array found in nested lists, tuples and dicts to ``out``.

    ``strict``: other leaves except None and Python scalars raise (``mx.eval``'s rule);
    otherwise they are ignored (``mx.get_array_buffer_size``'s).
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
        elif not strict or x is None or isinstance(x, (bool, int, float, complex, str)):
            continue
        elif _is_random_state(x):
            # ``mx.random.state`` (MLX's idiom: ``state = [model.state, opt.state,
            # mx.random.state]; mx.eval(state)``) holds the global key
            stack.extend(x)
        else:
            raise ValueError("[eval] Invalid argument: expected arrays or trees of arrays "
                             f"(lists, tuples, dicts), got {type(x).__name__}.")


def _is_random_state(x: Any) -> bool:
    from .random import _RandomState  # here: an unusual leaf, and random imports much of core

    return isinstance(x, _RandomState)


def eval(*args: Any) -> None:  # noqa: A001 - MLX's name
    """Evaluate every array in ``args`` (arrays or trees of them)."""
    if len(args) == 1 and type(args[0]) is array:  # the common case, kept cheap
        evaluate(args)
        return
    roots: list[array] = []
    collect_arrays(args, roots)
    evaluate(roots)


def async_eval(*args: Any) -> None:
    """Queue the evaluation; GPU work is asynchronous, so this is ``eval`` without a host wait."""
    eval(*args)
