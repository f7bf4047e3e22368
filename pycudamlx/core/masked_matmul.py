"""Batched and masked matrix products: gather_mm, block_masked_mm, segmented_mm.

MLX has dedicated kernels for these; here each is a composition of lazy ops that already run on
the GPU (take, where/multiply, repeat, matmul), with MLX's argument rules, result dtypes and
errors. What that costs: gather_mm materializes the gathered operands (indices.shape + (M, K)
and + (K, N)) before one batched GEMM; block_masked_mm multiplies full blocks and masks them
(no work is skipped); segmented_mm runs one GEMM over masked copies of ``a`` (segments x M x K).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as dt
from . import device as dev
from ._base import astype, broadcast_shapes
from ._nanobind import SIGNATURES, argument_error, to_int
from .array import array
from .creation import arange, repeat, zeros
from .elementwise import greater_equal, less, logical_and, multiply, where
from .indexing import take
from .matmul import matmul
from .shape import broadcast_to, expand_dims, fmt_shape, reshape, squeeze

__all__ = ["gather_mm", "block_masked_mm", "segmented_mm"]

def _check_types(fn: str, args: tuple, optional: tuple = ()) -> None:
    """nanobind's TypeError for an argument that is not an array (None where optional)."""
    bad = any(not isinstance(x, array) for x in args) or any(
        x is not None and not isinstance(x, array) for x in optional)
    if bad:
        raise dt._incompatible_arguments(SIGNATURES[fn], *args, *optional)


def _float_result(fn: str, a: array, b: array) -> dt.Dtype:
    out = dt.promote_types(a._dtype, b._dtype)
    if out.kind != "f":
        raise ValueError(f"[{fn}] Only real floating point types are supported but "
                         f"{a._dtype.name} and {b._dtype.name} were provided which results in "
                         f"{out.name}, which is not a real floating point type.")
    return out


def _check_inner(fn: str, a: array, b: array) -> None:
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"[{fn}] Last dimension of first input with shape {fmt_shape(a.shape)} "
                         "must match second to last dimension of second input with shape "
                         f"{fmt_shape(b.shape)}.")


def _batch_size(shape: tuple[int, ...]) -> int:
    n = 1
    for e in shape[:-2]:
        n *= e
    return n


def gather_mm(a: array, b: array, /, lhs_indices: array | None = None,
              rhs_indices: array | None = None, *, sorted_indices: bool = False,
              stream: Any = None) -> array:
    """Matrices of ``a`` and ``b`` picked by flat batch indices, then multiplied (broadcast
    over the indices' shapes): the mixture-of-experts product. ``sorted_indices`` is a hint."""
    _check_types("gather_mm", (a, b), (lhs_indices, rhs_indices))
    if type(sorted_indices) is not bool:  # nanobind's bool takes True / False only
        raise argument_error("gather_mm", dt._incompatible_arguments(
            SIGNATURES["gather_mm"], a, b, lhs_indices, rhs_indices, sorted_indices))
    s = dev.resolve_stream(stream)
    if lhs_indices is None and rhs_indices is None:
        return matmul(a, b, stream=s)
    dtype = _float_result("gather_mm", a, b)
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    a1, b1 = a.ndim == 1, b.ndim == 1
    if a1:
        a = expand_dims(a, 0, stream=s)
    if b1:
        b = expand_dims(b, 1, stream=s)
    _check_inner("gather_mm", a, b)
    for idx in (lhs_indices, rhs_indices):
        if idx is not None and idx._dtype.kind not in "iu":
            raise ValueError("[gather_mm] Got indices with invalid dtype. Indices must be "
                             "integral.")
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if lhs_indices is None:
        lhs_indices = reshape(arange(_batch_size(a.shape), dtype=dt.uint32, stream=s),
                              a.shape[:-2], stream=s)
    if rhs_indices is None:
        rhs_indices = reshape(arange(_batch_size(b.shape), dtype=dt.uint32, stream=s),
                              b.shape[:-2], stream=s)
    batch = broadcast_shapes(lhs_indices.shape, rhs_indices.shape)
    lhs = take(reshape(a, (-1, m, k), stream=s), lhs_indices, axis=0, stream=s)
    rhs = take(reshape(b, (-1, k, n), stream=s), rhs_indices, axis=0, stream=s)
    out = matmul(lhs, rhs, stream=s)
    if out.shape[:-2] != batch:  # scalar indices on both sides
        out = reshape(out, batch + (m, n), stream=s)
    if a1:
        out = squeeze(out, -2, stream=s)
    if b1:
        out = squeeze(out, -1, stream=s)
    return out


def _block_mask(mask: array, block: int, rows: int, cols: int, expected: tuple[int, ...],
                s: Any) -> array:
    """A (..., ceil(rows/block), ceil(cols/block)) mask expanded to (..., rows, cols)."""
    mask = broadcast_to(mask, expected, stream=s)  # MLX's errors name the block shapes
    up = repeat(repeat(mask, block, -2, stream=s), block, -1, stream=s)
    return up[..., :rows, :cols]


def _apply_mask(x: array, mask: array) -> array:
    if mask._dtype is dt.bool_:
        return where(mask, x, zeros((), x._dtype))
    return multiply(x, astype(mask, x._dtype))


def block_masked_mm(a: array, b: array, /, block_size: int = 64, mask_out: array | None = None,
                    mask_lhs: array | None = None, mask_rhs: array | None = None, *,
                    stream: Any = None) -> array:
    """``a @ b`` with ``block_size`` x ``block_size`` blocks of a, b and the output masked:
    bool masks keep or zero a block, numeric masks scale it (MLX's rules)."""
    _check_types("block_masked_mm", (a, b), (mask_out, mask_lhs, mask_rhs))
    bs = to_int(block_size)
    if bs is None:
        raise argument_error("block_masked_mm", dt._incompatible_arguments(
            SIGNATURES["block_masked_mm"], a, b, block_size))
    block_size = bs
    s = dev.resolve_stream(stream)
    if mask_out is None and mask_lhs is None and mask_rhs is None:
        return matmul(a, b, stream=s)
    dtype = _float_result("block_masked_mm", a, b)
    if block_size <= 0:
        raise ValueError(f"[block_masked_mm] block_size must be positive, got {block_size}.")
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    a1, b1 = a.ndim == 1, b.ndim == 1
    if a1:  # a row vector: its masks lose the row-block axis too
        a = expand_dims(a, 0, stream=s)
        mask_lhs = None if mask_lhs is None else expand_dims(mask_lhs, -2, stream=s)
        mask_out = None if mask_out is None else expand_dims(mask_out, -2, stream=s)
    if b1:
        b = expand_dims(b, 1, stream=s)
        mask_rhs = None if mask_rhs is None else expand_dims(mask_rhs, -1, stream=s)
        mask_out = None if mask_out is None else expand_dims(mask_out, -1, stream=s)
    if a.ndim < 2 or b.ndim < 2:
        return matmul(a, b, stream=s)  # MLX's matmul error for 0-d operands
    _check_inner("block_masked_mm", a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])

    def blocks(*dims: int) -> tuple[int, ...]:
        return batch + tuple(-(-e // block_size) for e in dims)

    if mask_lhs is not None:
        a = _apply_mask(a, _block_mask(mask_lhs, block_size, m, k, blocks(m, k), s))
    if mask_rhs is not None:
        b = _apply_mask(b, _block_mask(mask_rhs, block_size, k, n, blocks(k, n), s))
    out = matmul(a, b, stream=s)
    if mask_out is not None:
        out = _apply_mask(out, _block_mask(mask_out, block_size, m, n, blocks(m, n), s))
    if a1:
        out = squeeze(out, -2, stream=s)
    if b1:
        out = squeeze(out, -1, stream=s)
    return out


def segmented_mm(a: array, b: array, /, segments: array, *, stream: Any = None) -> array:
    """One ``a[:, start:end] @ b[start:end]`` per (start, end) pair of ``segments`` (its last
    axis); starts and ends are clamped to [0, K], and an empty segment gives zeros."""
    _check_types("segmented_mm", (a, b, segments))
    s = dev.resolve_stream(stream)
    # MLX's order of checks: operand rank, segments shape, operand dtype, segments dtype.
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError("[segmented_mm] Batched matmul not supported")
    if segments.ndim == 0 or segments.shape[-1] != 2:
        raise ValueError("[segmented_mm] The segments should have shape (..., 2) but "
                         f"{fmt_shape(segments.shape)} was provided.")
    dtype = _float_result("segmented_mm", a, b)
    if segments._dtype.kind not in "iu":
        raise ValueError("[segmented_mm] Got segments with invalid dtype. Segments must be "
                         "integral.")
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    if a.shape[-1] != b.shape[-2]:
        # MLX reads past the end of the shorter operand here; refuse instead.
        _check_inner("segmented_mm", a, b)
    k = a.shape[-1]
    pos = arange(k, dtype=dt.int32, stream=s)
    lo = expand_dims(segments[..., 0], -1, stream=s)
    hi = expand_dims(segments[..., 1], -1, stream=s)
    inside = logical_and(greater_equal(pos, lo, stream=s), less(pos, hi, stream=s), stream=s)
    # (..., 1, K) masks over a's columns: one masked copy of a per segment.
    masked = where(expand_dims(inside, -2, stream=s), a, zeros((), dtype), stream=s)
    return matmul(masked, b, stream=s)
