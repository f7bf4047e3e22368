"""Array creation: ``mx.array`` conversion rules, zeros/ones/full/arange and friends."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from ..graph.primitives.elementwise import cast_numpy

__all__: list[str] = []


def _array_data(val: Any, dtype: dt.Dtype | None) -> tuple[Any, dt.Dtype]:
    """The evaluated data (numpy, or the source's GpuArray) and dtype of ``mx.array(val, dtype)``."""
    from .array import array
    from ..graph.evaluate import evaluate

    if dtype is not None:
        dtype = dt.to_dtype(dtype, "array")
    if isinstance(val, array):
        if val._data is None:
            evaluate((val,))
        if dtype is None or dtype is val._dtype:
            return val._data, val._dtype
        host = val._numpy()
        return cast_numpy(host, dtype), dtype
    if isinstance(val, (bool, int, float, complex, np.generic)):
        natural = dt.dtype_from_python(val)
        target = dtype or natural
        return cast_numpy(np.array(val, dtype=natural.np_dtype), target), target
    if isinstance(val, np.ndarray):
        natural = dt.dtype_from_numpy(val.dtype)
        target = dtype or natural
        return cast_numpy(np.ascontiguousarray(val), target).copy(), target
    if isinstance(val, (list, tuple)):
        host = np.array(val)
        if host.dtype == object:
            raise ValueError("Initialization encountered non-uniform length.")
        if host.dtype.kind == "f":
            natural = dt.float32
        elif host.dtype.kind in "iu":
            natural = dt.int32 if host.size == 0 or (
                host.min() >= -2**31 and host.max() < 2**31) else dt.int64
        elif host.dtype.kind == "b":
            natural = dt.bool_
        elif host.dtype.kind == "c":
            natural = dt.complex64
        else:
            raise ValueError(f"Invalid type {type(val).__name__} received in array "
                             "initialization.")
        if host.size == 0 and host.dtype.kind == "f":
            natural = dt.float32
        target = dtype or natural
        return cast_numpy(host, target), target
    if hasattr(val, "__array__") or hasattr(val, "__array_interface__"):
        return _array_data(np.asarray(val), dtype)
    raise ValueError(f"Invalid type {type(val).__name__} received in array initialization.")
