"""Small pieces of ``mlx.core``: constants, ``astype`` and ``view`` as functions, and the
``cumulative_*`` aliases (MLX 0.32.4 exposes them with cumsum/cumprod's own signature)."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as dt
from . import device as dev
from ._base import astype as _astype
from ._nanobind import SIGNATURES
from .array import array, fresh, make
from ..graph.primitives.bitview import ViewDtype
from .reduce import cumprod, cumsum

__all__ = ["e", "pi", "inf", "nan", "euler_gamma", "astype", "view", "cumulative_sum",
           "cumulative_prod"]

#: Plain Python floats, as in MLX.
e: float = math.e
pi: float = math.pi
inf: float = math.inf
nan: float = math.nan
euler_gamma: float = 0.5772156649015329

cumulative_sum = cumsum
cumulative_prod = cumprod


def _type_name(a: Any) -> str:
    if isinstance(a, array):
        return "mlx.core.array"
    if isinstance(a, dt.Dtype):
        return "mlx.core.Dtype"
    return type(a).__name__


def _incompatible(fn: str, signature: str, args: tuple) -> TypeError:
    types = ", ".join(_type_name(a) for a in args)
    return TypeError(f"{fn}(): incompatible function arguments. The following argument types are "
                     f"supported:\n    1. {signature}\n\nInvoked with types: {types}")


_ASTYPE_SIG = SIGNATURES["astype"]
_VIEW_SIG = SIGNATURES["view"]


def astype(a: array, /, dtype: dt.Dtype, *, stream: Any = None) -> array:
    """``a`` cast to ``dtype`` (a new array with ``a``'s value when it already has it)."""
    if not isinstance(a, array) or type(dtype) is not dt.Dtype:
        raise _incompatible("astype", _ASTYPE_SIG, (a, dtype))
    if a._dtype is dtype:  # a new array object all the same, as in MLX (see array.fresh)
        return fresh(a, stream)
    return _astype(a, dtype, stream)


def view(a: Any, dtype: dt.Dtype, stream: Any = None) -> array:
    """The bits of ``a`` read as ``dtype``: the last axis grows or shrinks by the ratio of the
    item sizes. Non-contiguous inputs are viewed in their logical (row-major) order."""
    if type(dtype) is not dt.Dtype:
        raise _incompatible("view", _VIEW_SIG, (a, dtype))
    if not isinstance(a, array):
        if isinstance(a, (list, tuple)):
            raise ValueError(f"Invalid type {type(a).__name__} received in array initialization.")
        if not isinstance(a, (bool, int, float, complex)) and not hasattr(a, "dtype"):
            raise _incompatible("view", _VIEW_SIG, (a, dtype))
        a = array(a)
    s = dev.resolve_stream(stream)
    in_size, out_size = a._dtype.size, dtype.size
    shape = a._shape
    if in_size != out_size:
        if not shape:
            raise ValueError("[view] Changing the type of a scalar is only allowed for types "
                             "with the same size.")
        last = shape[-1] * in_size
        if in_size < out_size and last % out_size:
            raise ValueError("[view] When viewing as a larger dtype, the size in bytes of the "
                             "last axis must be a multiple of the requested type size.")
        shape = shape[:-1] + (last // out_size,)
    elif a._dtype is dtype:
        return fresh(a, s)
    return make(ViewDtype(), (a,), shape, dtype, s)
