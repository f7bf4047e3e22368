"""Trees of arrays as MLX's C++ bindings walk them (vmap, and the other function transforms).

These are not ``mlx.utils``'s trees: the bindings know only lists, tuples and dicts as
containers, and every other object is a leaf. ``flatten`` refuses leaves that are not arrays
(MLX's ``[tree_flatten]`` error), ``unflatten`` rebuilds the containers around new leaves, and
``visit_prefix`` walks a tree together with a prefix tree (``in_axes``/``out_axes``), where a
leaf of the prefix applies to the whole subtree below it, with MLX's two error messages.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

_NOT_PREFIX = "[tree_map] Additional input tree is not a valid prefix of the first tree."
_MISSING_KEY = "[tree_visit] Tree is not a valid prefix tree of the first tree."


def leaves(tree: Any) -> Iterator[Any]:
    """The leaves of ``tree`` in MLX's order (lists and tuples in order, dicts by insertion)."""
    if isinstance(tree, (list, tuple)):
        for item in tree:
            yield from leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from leaves(item)
    else:
        yield tree


def flatten(tree: Any, is_array: Callable[[Any], bool]) -> list[Any]:
    """Every leaf of ``tree``; a leaf that is not an array is MLX's ValueError."""
    out = []
    for leaf in leaves(tree):
        if not is_array(leaf):
            raise ValueError("[tree_flatten] The argument should contain only arrays")
        out.append(leaf)
    return out


def unflatten(tree: Any, values: Iterator[Any], is_array: Callable[[Any], bool]) -> Any:
    """``tree`` with its array leaves replaced, in order, by the next items of ``values``
    (new lists, tuples and dicts; other leaves kept as they are)."""
    if isinstance(tree, list):
        return [unflatten(x, values, is_array) for x in tree]
    if isinstance(tree, tuple):
        return tuple(unflatten(x, values, is_array) for x in tree)
    if isinstance(tree, dict):
        return {k: unflatten(v, values, is_array) for k, v in tree.items()}
    return next(values) if is_array(tree) else tree


def _check_same_kind(kind: type, length: int, other: Any) -> None:
    """MLX's validate_subtrees: the prefix may be a leaf or a container of the same kind and
    size, never a container of another kind."""
    if isinstance(other, kind):
        if len(other) != length:
            raise ValueError(_NOT_PREFIX)
        return
    if isinstance(other, (list, tuple, dict)):
        raise ValueError(_NOT_PREFIX)


def visit_prefix(tree: Any, prefix: Any, visit: Callable[[Any, Any], None]) -> None:
    """Call ``visit(leaf, prefix_leaf)`` for every leaf of ``tree``, in flatten order."""
    if isinstance(tree, (list, tuple)):
        kind = list if isinstance(tree, list) else tuple
        _check_same_kind(kind, len(tree), prefix)
        spread = isinstance(prefix, kind)
        for i, item in enumerate(tree):
            visit_prefix(item, prefix[i] if spread else prefix, visit)
    elif isinstance(tree, dict):
        _check_same_kind(dict, len(tree), prefix)
        spread = isinstance(prefix, dict)
        for key, item in tree.items():
            if spread and key not in prefix:
                raise ValueError(_MISSING_KEY)
            visit_prefix(item, prefix[key] if spread else prefix, visit)
    else:
        visit(tree, prefix)
