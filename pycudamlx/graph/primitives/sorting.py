"""Sorting primitives: Sort (sort/argsort/partition/argpartition/topk), SearchSorted, Unique.

The CPU side sorts numpy arrays in MLX's order (stable, NaN last, -0.0 == 0.0; a complex value
with a NaN part is NaN, the others lexicographic); the GPU side (backend/cuda/sorting.py) sorts
order-preserving unsigned keys: a block-local bitonic sort for rows of up to 2,048 elements and
an LSD radix sort for longer rows.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..primitive import OutSpec, Primitive, cuda_modules
from .nth_element import nth_element, row_ranks


_cuda = cuda_modules("sorting")


def _float_key32(f: np.ndarray) -> np.ndarray:
    """Order-preserving uint32 keys of float32 values (-0.0 as 0.0; callers handle NaN)."""
    f = np.where(f == 0, np.float32(0), f).astype(np.float32)
    bits = f.view(np.uint32)
    return np.where(bits >> np.uint32(31), ~bits, bits | np.uint32(0x80000000))


def sort_keys(x: np.ndarray) -> np.ndarray:
    """An array that numpy's stable sorts and comparisons order exactly as MLX orders ``x``."""
    if x.dtype == np.complex64 or x.dtype == np.complex128:
        re = np.ascontiguousarray(x.real, dtype=np.float32)
        im = np.ascontiguousarray(x.imag, dtype=np.float32)
        key = (_float_key32(re).astype(np.uint64) << np.uint64(32)) | _float_key32(im).astype(
            np.uint64)
        return np.where(np.isnan(re) | np.isnan(im), np.uint64(2**64 - 1), key)
    if x.dtype.kind == "V" or x.dtype.name == "bfloat16":
        return x.astype(np.float32)  # exact; numpy orders floats NaN last, -0.0 == 0.0
    return x


def _stable_argsort(x: np.ndarray, axis: int) -> np.ndarray:
    return np.argsort(sort_keys(x), axis=axis, kind="stable")


class Sort(Primitive):
    """Sorted values (or uint32 indices) along ``axis``, keeping sorted positions ``start:``.

    ``kth`` (partition, argpartition, topk): on the CPU the rows are arranged as MLX's CPU
    build arranges them (std::nth_element around ``kth``); the GPU sorts them fully, which
    satisfies the same contract."""

    __slots__ = ("axis", "indices", "start", "kth")
    name = "sort"
    gpu_kernel = True

    def __init__(self, axis: int, indices: bool, start: int = 0, kth: int | None = None) -> None:
        self.axis = axis
        self.indices = indices
        self.start = start
        self.kth = kth

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        ax = self.axis
        order = (_stable_argsort(x, ax) if self.kth is None
                 else _nth_element_order(x, ax, self.kth, self.indices))
        if self.start:
            order = order[(slice(None),) * ax + (slice(self.start, None),)]
        if self.indices:
            return [order.astype(np.uint32)]
        return [np.take_along_axis(x, order, axis=ax)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        return [_cuda().sort(inputs[0], self.axis, self.indices, self.start, stream)]


def _nth_element_order(x: np.ndarray, axis: int, kth: int, by_index: bool) -> np.ndarray:
    """Per row along ``axis``: the positions std::nth_element leaves in each slot (MLX's
    comparator: NaN last; argpartition breaks ties by position, partition does not)."""
    keys = np.moveaxis(sort_keys(x), axis, -1)
    complex_keys = x.dtype.kind == "c"
    rows = keys.reshape(-1, keys.shape[-1]) if keys.size else keys.reshape(0, keys.shape[-1])
    out = np.empty(rows.shape, np.int64)
    for r in range(rows.shape[0]):
        out[r] = nth_element(row_ranks(rows[r], by_index, complex_keys), kth)
    return np.moveaxis(out.reshape(keys.shape), -1, axis)


class SearchSorted(Primitive):
    """uint32 insertion points of values (input 1) into the 1-D sorted sequence (input 0)."""

    __slots__ = ("right",)
    name = "searchsorted"
    gpu_kernel = True

    def __init__(self, right: bool) -> None:
        self.right = right

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        seq, vals = inputs
        side = "right" if self.right else "left"
        res = np.searchsorted(sort_keys(seq), sort_keys(vals), side=side)
        return [np.asarray(res, dtype=np.uint32).reshape(outs[0][0])]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        return [_cuda().searchsorted(inputs[0], inputs[1], self.right, stream)]


def _distinct_from_previous(s: np.ndarray) -> np.ndarray:
    """flags[i]: s[i] starts a new run of equal values (NaN never equals NaN, as in MLX)."""
    flags = np.ones(s.shape, dtype=bool)
    if s.size > 1:
        with np.errstate(invalid="ignore"):
            flags[1:] = ~(s[1:] == s[:-1])
    return flags


class Unique(Primitive):
    """Outputs values, index, inverse, counts of MLX's ``unique`` (inputs: flat a[, fill])."""

    __slots__ = ("size", "has_fill")
    name = "unique"
    gpu_kernel = True

    def __init__(self, size: int, has_fill: bool) -> None:
        self.size = size
        self.has_fill = has_fill

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        flat = inputs[0].reshape(-1)
        size = self.size
        n = flat.size
        order = _stable_argsort(flat, 0)
        s = flat[order]
        flags = _distinct_from_previous(s)
        gid = np.cumsum(flags, dtype=np.int64) - 1
        starts = np.flatnonzero(flags)
        nuniq = starts.size
        m = min(size, nuniq)
        values = np.empty(size, dtype=flat.dtype)
        values[:m] = s[starts[:m]]
        fill = inputs[1] if self.has_fill else (s[0] if n else None)
        if m < size:
            values[m:] = fill
        index = np.empty(size, dtype=np.uint32)
        index[:m] = order[starts[:m]]
        if m < size:
            index[m:] = order[starts[0]] if nuniq else 0
        inverse = np.empty(n, dtype=np.uint32)
        inverse[order] = np.clip(gid, 0, max(size - 1, 0)).astype(np.uint32)
        counts = np.zeros(size, dtype=np.int32)
        if m:
            ends = np.append(starts[1:], n)
            counts[:m] = (ends - starts)[:m]
        return [values, index, inverse.reshape(outs[2][0]), counts]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        fill = inputs[1] if self.has_fill else None
        return _cuda().unique(inputs[0], fill, self.size, outs, stream)
