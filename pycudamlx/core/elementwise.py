"""Elementwise op functions (``mx.add`` ... ``mx.where``): promotion, broadcasting, the node.

Each function is a row of the op table (backend/optable.py) plus MLX's argument handling; the
primitives in graph/primitives/elementwise.py run them on either backend.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as dt
from ..backend import optable
from ..graph.primitives.elementwise import Binary, Unary, Where
from . import device as dev
from ._base import as_array, astype, broadcast_shapes, promote_operands
from .array import array, make

__all__ = ["add", "subtract", "multiply", "maximum", "minimum", "negative", "square", "where"]

_binary_prims: dict[str, Binary] = {}
_unary_prims: dict[str, Unary] = {}


def binary_op(name: str, a: Any, b: Any, stream: Any = None, op_label: str | None = None
              ) -> array:
    """Apply the binary op ``name`` of the op table with MLX's promotion and broadcasting."""
    a, b, dtype = promote_operands(a, b, op_label)
    prim = _binary_prims.get(name)
    if prim is None:
        prim = _binary_prims[name] = Binary(optable.OPS[name])
    s = dev.resolve_stream(stream)
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    shape = a._shape if a._shape == b._shape else broadcast_shapes(a._shape, b._shape)
    out_dtype = dt.bool_ if prim.op.result == "bool" else dtype
    return make(prim, (a, b), shape, out_dtype, s)


def unary_op(name: str, a: Any, stream: Any = None) -> array:
    a = as_array(a)
    prim = _unary_prims.get(name)
    if prim is None:
        prim = _unary_prims[name] = Unary(optable.OPS[name])
    out_dtype = dt.bool_ if prim.op.result == "bool" else a._dtype
    return make(prim, (a,), a._shape, out_dtype, dev.resolve_stream(stream))


def add(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise addition with numpy-style broadcasting."""
    return binary_op("add", a, b, stream)


def subtract(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("subtract", a, b, stream)


def multiply(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("multiply", a, b, stream)


def maximum(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("maximum", a, b, stream)


def minimum(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("minimum", a, b, stream)


def negative(a: Any, /, *, stream: Any = None) -> array:
    return unary_op("negative", a, stream)


def square(a: Any, /, *, stream: Any = None) -> array:
    return unary_op("square", a, stream)


_where = Where()


def where(condition: Any, x: Any, y: Any, /, *, stream: Any = None) -> array:
    """``x`` where ``condition`` holds, else ``y`` (all three broadcast together)."""
    s = dev.resolve_stream(stream)
    x, y, dtype = promote_operands(x, y)
    c = astype(as_array(condition), dt.bool_, s)
    x = astype(x, dtype, s)
    y = astype(y, dtype, s)
    shape = broadcast_shapes(broadcast_shapes(c._shape, x._shape), y._shape)
    return make(_where, (c, x, y), shape, dtype, s)
