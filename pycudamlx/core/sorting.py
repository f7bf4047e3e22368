"""Sorting: sort, argsort, partition, argpartition, topk, searchsorted, unique.

MLX's order everywhere: ascending, stable (equal elements keep their order; -0.0 equals 0.0),
NaN last (for complex64, a value with a NaN in either part is NaN; the others compare
lexicographically by real, then imaginary part). Indices are uint32, as in MLX.

partition, argpartition and topk leave rows in MLX's CPU order on the CPU (std::nth_element,
graph/primitives/nth_element.py: programs that sample from top-k candidates depend on it) and
fully sorted on the GPU (which satisfies the same contract: the kth element in place, nothing
larger before it, nothing smaller after it). MLX documents those orders as undefined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from ..graph.primitives import sorting as P
from . import device as dev
from ._base import normalize_axis
from ._nanobind import SIGNATURES, argument_error
from .array import array, make, make_multi

__all__ = ["sort", "argsort", "partition", "argpartition", "topk", "searchsorted", "unique"]


def _signature_error(fn: str, sig: str, *args: Any) -> TypeError:
    types = ", ".join("mlx.core.array" if isinstance(a, array) else type(a).__name__
                      for a in args)
    return argument_error(fn, TypeError(
        f"{fn}(): incompatible function arguments. The following argument types are "
        f"supported:\n    1. {sig}\n\nInvoked with types: {types}"), sig)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer))


def _check(fn: str, a: Any, *ints: Any, axis: Any = -1) -> None:
    """MLX's binding checks: an mx.array, integer k/kth, an int or None axis."""
    if not isinstance(a, array) or not all(_is_int(i) for i in ints) or not (
            axis is None or _is_int(axis)):
        raise _signature_error(fn, SIGNATURES[fn], a, *ints)


def _axis(fn: str, a: array, axis: int | None, stream: Any) -> tuple[array, int]:
    """The array to sort (flattened for axis=None) and the non-negative axis."""
    if axis is None:
        if a.ndim != 1:
            from .shape import reshape

            a = reshape(a, (-1,), stream=stream)
        return a, 0
    axis = int(axis)
    if not -a.ndim <= axis < a.ndim:
        from ._base import AxisError

        raise AxisError(f"[{fn}] Axis {axis} is out of bounds for array with {a.ndim} "
                        "dimensions.")
    return a, normalize_axis(axis, a.ndim)


def _sorted(a: array, axis: int, indices: bool, stream: dev.Stream, start: int = 0,
            kth: int | None = None) -> array:
    """Sorted positions ``start:`` along ``axis`` (topk keeps the last k); with ``kth``, rows
    partitioned around it (MLX's CPU order on the CPU)."""
    dtype = dt.uint32 if indices else a._dtype
    shape = list(a._shape)
    shape[axis] -= start
    return make(P.Sort(axis, indices, start, kth), (a,), tuple(shape), dtype, stream)


def sort(a: array, /, axis: int | None = -1, *, stream: Any = None) -> array:
    """A sorted copy of ``a`` along ``axis`` (None: flattened); stable, NaN last."""
    _check("sort", a, axis=axis)
    s = dev.resolve_stream(stream)
    a, ax = _axis("sort", a, axis, s)
    return _sorted(a, ax, False, s)


def argsort(a: array, /, axis: int | None = -1, *, stream: Any = None) -> array:
    """The uint32 indices that sort ``a`` along ``axis``; stable, NaN last."""
    _check("argsort", a, axis=axis)
    s = dev.resolve_stream(stream)
    a, ax = _axis("argsort", a, axis, s)
    return _sorted(a, ax, True, s)


def _kth(fn: str, a: array, kth: int, axis: int, axis_arg: Any) -> None:
    n = a._shape[axis]
    if not -n <= kth < n:
        sep = "" if fn == "partition" else " "  # MLX's own messages, missing space included
        shown = -1 if axis_arg is None else axis_arg
        raise ValueError(f"[{fn}] Received invalid kth {kth}{sep}along axis {shown} for array "
                         f"with shape: {_fmt(a._shape)}")


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + ",".join(str(e) for e in shape) + ")"


def partition(a: array, /, kth: int, axis: int | None = -1, *, stream: Any = None) -> array:
    """``a`` partitioned around its kth smallest element along ``axis`` (in MLX's CPU order on
    the CPU, sorted on the GPU)."""
    _check("partition", a, kth, axis=axis)
    s = dev.resolve_stream(stream)
    a2, ax = _axis("partition", a, axis, s)
    kth = int(kth)
    _kth("partition", a2, kth, ax, axis)
    return _sorted(a2, ax, False, s, kth=kth % a2._shape[ax])


def argpartition(a: array, /, kth: int, axis: int | None = -1, *, stream: Any = None) -> array:
    """uint32 indices that partition ``a`` around its kth smallest element (MLX's CPU order on
    the CPU, sorted on the GPU)."""
    _check("argpartition", a, kth, axis=axis)
    s = dev.resolve_stream(stream)
    a2, ax = _axis("argpartition", a, axis, s)
    kth = int(kth)
    _kth("argpartition", a2, kth, ax, axis)
    return _sorted(a2, ax, True, s, kth=kth % a2._shape[ax])


def topk(a: array, /, k: int, axis: int | None = -1, *, stream: Any = None) -> array:
    """The k largest elements along ``axis`` (NaN counts as largest): in MLX's CPU order on the
    CPU, ascending on the GPU."""
    _check("topk", a, k, axis=axis)
    s = dev.resolve_stream(stream)
    a2, ax = _axis("topk", a, axis, s)
    n = a2._shape[ax]
    k = int(k)
    if not 0 <= k <= n:
        shown = -1 if axis is None else axis
        raise ValueError(f"[topk] Received invalid k={k} along axis {shown} for array with "
                         f"shape: {_fmt(a2._shape)}")
    # MLX's CPU partitions around n - k; with k == n it leaves the row as it is
    return _sorted(a2, ax, False, s, n - k, kth=n if k == n else n - k)


def searchsorted(sorted_sequence: array, values: array, /, side: str = "left", *,
                 stream: Any = None) -> array:
    """uint32 insertion points of ``values`` into the 1-D ``sorted_sequence`` (MLX's order:
    NaN last), compared in the two arrays' promoted dtype."""
    if not isinstance(sorted_sequence, array) or not isinstance(values, array) or not \
            isinstance(side, str):
        raise _signature_error("searchsorted", SIGNATURES["searchsorted"], sorted_sequence, values)
    if side not in ("left", "right"):
        raise ValueError(f"[searchsorted] Invalid side '{side}'. Expected 'left' or 'right'.")
    if sorted_sequence.ndim != 1:
        raise ValueError("[searchsorted] The sorted sequence must be 1-D but has "
                         f"{sorted_sequence.ndim} dimensions.")
    s = dev.resolve_stream(stream)
    dtype = dt.promote_types(sorted_sequence._dtype, values._dtype)
    from ._base import astype

    seq = astype(sorted_sequence, dtype, s)
    vals = astype(values, dtype, s)
    return make(P.SearchSorted(side == "right"), (seq, vals), values._shape, dt.uint32, s)


def _fill_scalar(value: Any, dtype: dt.Dtype) -> array:
    """A Python/numpy scalar as a 0-d array of ``dtype``, with MLX's overflow check."""
    if not isinstance(value, (bool, int, float, complex, np.generic)):
        raise ValueError(f"Invalid type {type(value).__name__} received in array "
                         "initialization.")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and \
            dtype.kind in "iu":
        info = np.iinfo(dtype.np_dtype)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"Converting {value} to {dtype.name} would result in overflow.")
    return array(value, dtype)


def unique(a: array, /, size: int, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, fill_value: Any = None, *, stream: Any = None
           ) -> array | tuple[array, ...]:
    """The ``size`` smallest unique elements of the flattened ``a`` (padded with
    ``fill_value``), and on request the first index, the inverse and the counts."""
    if not isinstance(a, array) or not _is_int(size):
        raise _signature_error("unique", SIGNATURES["unique"], a, *([size] if size is not None
                                                              else []))
    size = int(size)
    if size < 0:
        raise ValueError(f"[unique] Received negative size {size}.")
    s = dev.resolve_stream(stream)
    from ._base import astype

    if fill_value is None:
        if a.size == 0 and size > 0:
            raise ValueError("[unique] A fill value is required for an empty input with a "
                             "non-zero size.")
        fill = None
    elif isinstance(fill_value, array):
        if fill_value.size != 1:
            raise ValueError("[unique] Fill value must have one element, but got shape "
                             f"{_fmt(fill_value.shape)}.")
        from .shape import reshape

        fill = astype(reshape(fill_value, (), stream=s), a._dtype, s)
    else:
        fill = _fill_scalar(fill_value, a._dtype)
    flat = a
    if a.ndim != 1:
        from .shape import reshape

        flat = reshape(a, (-1,), stream=s)
    inputs = (flat,) if fill is None else (flat, fill)
    specs = [((size,), a._dtype), ((size,), dt.uint32), (a._shape, dt.uint32),
             ((size,), dt.int32)]
    values, index, inverse, counts = make_multi(P.Unique(size, fill is not None), inputs,
                                                specs, s)
    extra = []
    if return_index:
        extra.append(index)
    if return_inverse:
        extra.append(inverse)
    if return_counts:
        extra.append(counts)
    if not extra:
        return values
    return (values, *extra)
