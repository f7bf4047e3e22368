"""Output shapes of a recorded step at new input shapes: what a shapeless trace (``mx.compile``'s
``shapeless=True``, a shapeless ``export_function``) needs to rerun its graph at another size.

A rule exists for the primitives whose output shape follows from their input shapes alone
(elementwise, broadcasting, reductions, matmul, attention, norms); any other step keeps its
recorded shape only while its inputs keep theirs (``infer`` returns None otherwise: the caller
decides whether that is an error or a reason to trace again)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

#: Primitives whose output has their first input's shape.
SAME_SHAPE = frozenset({"Unary", "AsType", "StopGradient", "Softmax", "Scan", "Copy",
                        "Contiguous", "RMSNorm", "LayerNorm", "RoPE"})
#: Primitives whose output is their inputs' broadcast shape.
BROADCAST = frozenset({"Binary", "Where"})


def shape_text(shape: Sequence[int]) -> str:
    return "(" + ",".join(str(s) for s in shape) + ")"


def infer(prim: Any, shapes: Sequence[tuple], recorded_in: Sequence[tuple],
          recorded_out: tuple) -> tuple | None:
    """The output shape of ``prim`` on inputs of ``shapes`` (recorded: ``recorded_in`` ->
    ``recorded_out``), or None when no rule gives it. Inputs that cannot broadcast, or a matmul
    whose inner dimensions differ, are MLX's ValueError."""
    shapes = [tuple(s) for s in shapes]
    if shapes == [tuple(s) for s in recorded_in]:
        return recorded_out
    kind = type(prim).__name__
    if kind in SAME_SHAPE:
        return shapes[0]
    if kind in BROADCAST:
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            text = " and ".join(shape_text(s) for s in shapes)
            raise ValueError(f"[broadcast_shapes] Shapes {text} cannot be broadcast.") from None
    if kind == "ScaledDotProductAttention":
        return shapes[0][:-1] + shapes[2][-1:]
    if kind == "ArgReduce" and prim.axis is not None:
        if len(recorded_out) == len(recorded_in[0]):  # keepdims
            return tuple(1 if i == prim.axis else s for i, s in enumerate(shapes[0]))
        return tuple(s for i, s in enumerate(shapes[0]) if i != prim.axis)
    if kind == "Reduce":
        axes = set(prim.axes)
        if prim.keepdims:
            return tuple(1 if i in axes else s for i, s in enumerate(shapes[0]))
        return tuple(s for i, s in enumerate(shapes[0]) if i not in axes)
    if kind == "Matmul" and min(len(s) for s in shapes[:2]) >= 2:
        a, b = shapes[:2]
        if a[-1] != b[-2]:
            raise ValueError(f"[matmul] Last dimension of first input with shape "
                             f"{shape_text(a)} must match second to last dimension of second "
                             f"input with shape {shape_text(b)}.")
        out = tuple(np.broadcast_shapes(a[:-2], b[:-2])) + (a[-2], b[-1])
        if len(shapes) == 3 and tuple(np.broadcast_shapes(shapes[2], out)) != out:
            return None  # an addend that no longer broadcasts to the product
        return out
    return None
