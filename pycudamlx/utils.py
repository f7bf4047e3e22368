"""Python trees (nested lists, tuples, dicts) of arrays: MLX's ``mlx.utils``.

A tree is a leaf, or a list/tuple/namedtuple/dict of trees. Paths join keys and indices with
dots (``"layers.0.weight"``). Same functions, arguments and results as ``mlx.utils`` 0.32.4.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import zip_longest
from typing import Any, Callable

__all__ = ["tree_map", "tree_map_with_path", "tree_flatten", "tree_unflatten", "tree_reduce",
           "tree_merge"]


def _rebuild(node: Any, children: Any) -> Any:
    """A list/tuple/namedtuple of the same type as ``node`` holding ``children``."""
    kind = type(node)
    return kind(*children) if hasattr(node, "_fields") else kind(children)


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Apply ``fn`` to every leaf of ``tree`` (and the matching leaves of the ``rest`` trees,
    which must contain ``tree``'s structure) and return a tree of the results."""
    if is_leaf is not None and is_leaf(tree):
        return fn(tree, *rest)
    if isinstance(tree, (list, tuple)):
        return _rebuild(tree, (tree_map(fn, child, *(r[i] for r in rest), is_leaf=is_leaf)
                               for i, child in enumerate(tree)))
    if isinstance(tree, dict):
        return {k: tree_map(fn, child, *(r[k] for r in rest), is_leaf=is_leaf)
                for k, child in tree.items()}
    return fn(tree, *rest)


def tree_map_with_path(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None,
                       path: Any = None) -> Any:
    """``tree_map`` whose ``fn`` gets the leaf's dotted path first (``"model.0.w"``)."""
    if is_leaf is not None and is_leaf(tree):
        return fn(path, tree, *rest)
    prefix = f"{path}." if path else ""
    if isinstance(tree, (list, tuple)):
        return _rebuild(tree, (
            tree_map_with_path(fn, child, *(r[i] for r in rest), is_leaf=is_leaf,
                               path=f"{prefix}{i}")
            for i, child in enumerate(tree)))
    if isinstance(tree, dict):
        return {k: tree_map_with_path(fn, child, *(r[k] for r in rest), is_leaf=is_leaf,
                                      path=f"{prefix}{k}")
                for k, child in tree.items()}
    return fn(path, tree, *rest)


def tree_flatten(tree: Any, prefix: str = "", is_leaf: Callable | None = None,
                 destination: list | dict | None = None) -> list | dict:
    """The leaves of ``tree`` as (dotted path, leaf) pairs, in a list (default) or added to
    ``destination`` (a list or a dict). ``prefix``'s first character is dropped, as in MLX."""
    if destination is None:
        destination = []
    if isinstance(destination, list):
        add = destination.extend
    elif isinstance(destination, dict):
        add = destination.update
    else:
        raise ValueError("Destination should be either a list or a dictionary or None")
    if is_leaf is not None and is_leaf(tree):
        add([(prefix[1:], tree)])
    elif isinstance(tree, (list, tuple)):
        for i, item in enumerate(tree):
            tree_flatten(item, f"{prefix}.{i}", is_leaf, destination)
    elif isinstance(tree, dict):
        for key, value in tree.items():
            tree_flatten(value, f"{prefix}.{key}", is_leaf, destination)
    else:
        add([(prefix[1:], tree)])
    return destination


def tree_unflatten(tree: list | dict) -> Any:
    """Rebuild a tree from (dotted path, leaf) pairs (a list of pairs or a dict): all-integer
    keys make a list (gaps filled with empty dicts), other keys a dict."""
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    children: dict[str, list] = defaultdict(list)
    for key, value in items:
        head, _, tail = key.partition(".")
        children[head].append((tail, value))
    indices: dict[int, str] = {}
    try:
        for key in children:
            indices[int(key)] = key
        as_list = len(indices) == len(children)  # "01" and "1" are different keys
    except ValueError:
        as_list = False
    if not as_list:
        return {k: tree_unflatten(v) for k, v in children.items()}
    out: list = []
    for i, key in sorted(indices.items()):
        out.extend({} for _ in range(i - len(out)))
        out.append(tree_unflatten(children[key]))
    return out


def tree_reduce(fn: Callable, tree: Any, initializer: Any = None,
                is_leaf: Callable | None = None) -> Any:
    """Fold ``fn(accumulator, leaf)`` over the leaves (the first leaf starts the fold when
    ``initializer`` is None)."""
    if is_leaf is not None and is_leaf(tree):
        return tree if initializer is None else fn(initializer, tree)
    acc = initializer
    if isinstance(tree, (list, tuple)):
        for item in tree:
            acc = tree_reduce(fn, item, acc, is_leaf)
    elif isinstance(tree, dict):
        for item in tree.values():
            acc = tree_reduce(fn, item, acc, is_leaf)
    else:
        return tree if acc is None else fn(acc, tree)
    return acc


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Callable | None = None) -> Any:
    """Merge two trees (a deep ``dict.update``); empty containers count as empty subtrees and
    leaves present in both need ``merge_fn``."""
    empty_a = isinstance(tree_a, (dict, list, tuple)) and len(tree_a) == 0
    empty_b = isinstance(tree_b, (dict, list, tuple)) and len(tree_b) == 0
    if empty_a and empty_b:
        if type(tree_a) is not type(tree_b):
            raise ValueError(f"Cannot merge {type(tree_a).__name__} with "
                             f"{type(tree_b).__name__}")
        return type(tree_a)()
    a = None if empty_a else tree_a
    b = None if empty_b else tree_b
    if (a is None) != (b is None):  # two Nones are two leaves at one place, as in MLX
        return b if a is None else a
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return _rebuild(a, (tree_merge(x, y, merge_fn) for x, y in zip_longest(a, b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: tree_merge(a.get(k), b.get(k), merge_fn) for k in set(a) | set(b)}
    if merge_fn is None:
        raise ValueError("Trees contain elements at the same locations but no merge function "
                         "was provided")
    return merge_fn(a, b)
