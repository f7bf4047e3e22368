"""Shared plumbing of the op functions: operand conversion, promotion, broadcasting, axes.

Everything here runs on every op call, so it is lookups in tables built once and small caches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from ..graph.primitives.elementwise import AsType
from . import device as dev
from .array import array, from_data, make


class AxisError(IndexError, ValueError):
    """An axis out of range: both an IndexError (what MLX raises) and a ValueError, as numpy's
    AxisError is (issue 3 asks for both, so code catching either works). Its printed name is
    MLX's, ``IndexError``, since programs print ``type(e).__name__``."""


AxisError.__name__ = AxisError.__qualname__ = "IndexError"


_broadcast_cache: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ",".join(str(e) for e in shape) + ")"


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of two shapes; ValueError naming both, as MLX's."""
    key = (a, b)
    out = _broadcast_cache.get(key)
    if out is not None:
        return out
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    res = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            res.append(x)
        elif x == 1:
            res.append(y)
        else:
            raise ValueError(f"[broadcast_shapes] Shapes {_fmt_shape(a)} and {_fmt_shape(b)} "
                             "cannot be broadcast.")
    out = tuple(res)
    if len(_broadcast_cache) < 4096:
        _broadcast_cache[key] = out
    return out


#: (dtype, type, value) -> the 0-d numpy data of a Python scalar (ops make one per call: a
#: loop's ``x * 0.5`` converts 0.5 once). Float zeros are not cached: -0.0 == 0.0.
_constant_data: dict[tuple, np.ndarray] = {}


def constant(value: Any, dtype: dt.Dtype) -> array:
    """An evaluated 0-d array holding a Python scalar converted to ``dtype``."""
    t = type(value)
    if t is float or t is int or t is bool:
        key = (dtype, t, value)
        data = _constant_data.get(key)
        if data is not None:
            return from_data(data, dtype)
        data = _constant_value(value, dtype)
        if value or t is not float:
            if len(_constant_data) > 1024:
                _constant_data.clear()
            data.flags.writeable = False
            _constant_data[key] = data
        return from_data(data, dtype)
    return from_data(_constant_value(value, dtype), dtype)


def _constant_value(value: Any, dtype: dt.Dtype) -> np.ndarray:
    if dtype.kind != "c" and isinstance(value, (complex, np.complexfloating)):
        value = value.real  # MLX keeps the real part (numpy would warn: ComplexWarning)
    with np.errstate(all="ignore"):
        if dtype.kind in "iu" and isinstance(value, (int, np.integer)) and not isinstance(
                value, bool):
            # Python ints wrap into the array's dtype as MLX does (uint64 + -1, and
            # bool_array + 2**40, whose int32 result holds the wrapped value).
            data = np.array(int(value) % (1 << (8 * dtype.size)), dtype=np.uint64).astype(
                dtype.np_dtype)
        elif dtype.kind in "iub" and isinstance(value, (float, complex, np.floating)):
            data = np.array(value).astype(dtype.np_dtype)
        else:
            data = np.array(value, dtype=dtype.np_dtype)
    return data


def as_array(x: Any, dtype: dt.Dtype | None = None) -> array:
    """``x`` as an array (scalars and sequences converted as ``mx.array`` would)."""
    if isinstance(x, array):
        return x
    return array(x, dtype)


def astype(a: array, dtype: dt.Dtype, stream: Any = None) -> array:
    """``a`` converted to ``dtype`` (the same array when it already is)."""
    if a._dtype is dtype:
        return a
    return make(AsType(dtype), (a,), a._shape, dtype, dev.resolve_stream(stream))


def promote_operands(a: Any, b: Any, op_name: str | None = None
                     ) -> tuple[array, array, dt.Dtype]:
    """Two operands as arrays of their common dtype, with Python scalars weak as in MLX."""
    a_is = isinstance(a, array)
    b_is = isinstance(b, array)
    if a_is and b_is:
        dtype = dt.promote_types(a._dtype, b._dtype)
    elif a_is:
        dtype = dt.scalar_result_dtype(a._dtype, b, op_name)
        b = constant(b, dtype) if not hasattr(b, "__len__") else _operand_array(b, dtype)
    elif b_is:
        dtype = dt.scalar_result_dtype(b._dtype, a, op_name)
        a = constant(a, dtype) if not hasattr(a, "__len__") else _operand_array(a, dtype)
    else:
        dtype = dt.promote_types(dt.operand_dtype(a), dt.operand_dtype(b))
        a = array(a, dtype) if type(a) in _PLAIN_SCALARS else _scalar_array(a, dtype)
        b = array(b, dtype) if type(b) in _PLAIN_SCALARS else _scalar_array(b, dtype)
    return a, b, dtype


_PLAIN_SCALARS = frozenset((int, float, bool, complex))


def _operand_array(x: Any, dtype: dt.Dtype) -> array:
    """A sized non-array operand (a list, a numpy array, a sequence) as an array of ``dtype``;
    one that MLX's bindings read as a number first (a mock: it has ``__len__`` and
    ``__complex__``) as that scalar."""
    if type(x) is list or type(x) is tuple or isinstance(x, np.ndarray):
        return array(x, dtype)
    c = dt.odd_number(x)
    return array(x, dtype) if c is None else constant(c, dtype)


def _scalar_array(x: Any, dtype: dt.Dtype) -> array:
    """A non-array operand of a two-scalar op (``mx.add(a, b)`` with neither an array) as an
    array of ``dtype``: what ``mx.array`` accepts as it converts it; a number MLX's bindings
    read as complex (an object with ``__complex__``, ``__float__`` or ``__index__``, a Fraction,
    a Decimal), which ``mx.array`` refuses, through ``complex()`` as nanobind does."""
    c = dt.odd_number(x) if dtype.kind == "c" else None
    if c is not None:
        return constant(c, dtype)
    return array(x, dtype)


def normalize_axis(axis: int, ndim: int, fn: str = "") -> int:
    """A non-negative axis; IndexError (as MLX) when out of range."""
    if not -ndim <= axis < ndim:
        prefix = f"[{fn}] " if fn else ""
        raise AxisError(f"{prefix}Invalid axis {axis} for array with {ndim} dimensions.")
    return axis + ndim if axis < 0 else axis
