"""``mx.export_to_dot``: the unevaluated graph behind some arrays, in Graphviz's DOT language.

The layout follows MLX's: every array is a node named by a letter (A, B, ..., or the name
given as a keyword), every operation a rectangle labelled with its primitive's name; arrays
with a value (or no operation) rank as sources, the requested outputs as sinks. Operation
node ids are process-local numbers, as MLX's (which are addresses).
"""

from __future__ import annotations

import string
from typing import Any

from .array import array

__all__ = ["export_to_dot"]


def _letters(n: int) -> str:
    s = ""
    while True:
        s = string.ascii_uppercase[n % 26] + s
        n = n // 26 - 1
        if n < 0:
            return s


#: Labels where MLX's class name is not the CamelCase of our primitive's name.
_LABELS = {"divmod": "DivMod", "getitem": "Slice", "alias": "Copy", "matmul": "Matmul"}


def _label(prim: Any) -> str:
    label = _LABELS.get(str(prim.name))
    if label is not None:
        return label
    return "".join(p[:1].upper() + p[1:] for p in str(prim.name).split("_"))


def _consumed(args: tuple) -> set[int]:
    """Ids of the arrays that an operation of the graph reads (MLX ranks only the others as
    sinks, even when they were asked for)."""
    seen: set[int] = set()
    used: set[int] = set()
    stack = list(args)
    while stack:
        a = stack.pop()
        if id(a) in seen:
            continue
        seen.add(id(a))
        if a._prim is not None:
            for i in a._inputs:
                used.add(id(i))
                stack.append(i)
    return used


def export_to_dot(file: Any, *args: array, **kwargs: array) -> None:
    """Write the graph that computes ``args`` (its unevaluated inputs, recursively) to
    ``file`` (a path or a file-like object); ``kwargs`` name arrays of the graph."""
    if not (isinstance(file, str) or hasattr(file, "write")):
        raise ValueError("[export_to_dot] Accepts file-like objects or strings to be used as "
                         "filenames.")
    if not all(isinstance(a, array) for a in args) or not all(
            isinstance(a, array) for a in kwargs.values()):
        raise ValueError("[tree_flatten] The argument should contain only arrays")
    names: dict[int, str] = {}
    for k, a in kwargs.items():
        names.setdefault(id(a), k)

    def name(a: array) -> str:
        n = names.get(id(a))
        if n is None:
            n = names[id(a)] = _letters(len(names))
        return n

    outputs = {id(a) for a in args}
    consumed = _consumed(args)
    lines = ["digraph {"]
    done: set[int] = set()
    printed: set[int] = set()
    keep: list = []
    for root in args:  # iterative post-order: inputs before the arrays that use them
        stack = [(root, False)]
        while stack:
            a, expanded = stack.pop()
            if id(a) in done:
                continue
            if not expanded and a._prim is not None:
                stack.append((a, True))
                stack.extend((i, False) for i in reversed(a._inputs) if id(i) not in done)
                continue
            done.add(id(a))
            keep.append(a)
            if a._prim is None:
                lines.append(f'{{ rank=source; "{name(a)}"; }}')
                continue
            group = a._siblings
            node = id(group) if group is not None else id(a)
            if node in printed:
                continue
            printed.add(node)
            keep.append(group)
            lines.append(f'{{ {node} [label ="{_label(a._prim)}", shape=rectangle]; }}')
            for i in a._inputs:
                lines.append(f'"{name(i)}" -> {node}')
            outs = [r() for r in group.refs] if group is not None else [a]
            for o in outs:
                if o is None:
                    continue
                done.add(id(o))
                keep.append(o)
                rank = "rank=sink; " if id(o) in outputs and id(o) not in consumed else ""
                lines.append(f'{{ {rank}"{name(o)}"; }}')
                lines.append(f'{node} -> "{name(o)}"')
    lines.append("}")
    text = "\n".join(lines)  # MLX's text ends at the brace
    if isinstance(file, str):
        with open(file, "w") as f:
            f.write(text)
    else:
        file.write(text)
