"""``mx.eval`` and ``mx.async_eval``: evaluate arrays found anywhere in nested containers."""

from __future__ import annotations

from typing import Any

from ..graph.evaluate import evaluate
from .array import array


def collect_arrays(tree: Any, out: list[array]) -> None:
    """Append every array found in nested lists, tuples and dicts to ``out``.

    Other leaves are skipped, as MLX 0.32's ``mx.eval`` does: programs pass
    ``[model.state, optimizer.state, mx.random.state]`` (the last is no list) and objects.
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
