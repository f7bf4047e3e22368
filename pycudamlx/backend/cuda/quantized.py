"""Launchers for qmv.cu: quantized_matmul's fused GPU paths for affine weights.

The decode step of a quantized model multiplies one token's activations by every weight
matrix; dequantizing each matrix to a dense float32 one first moves 8x more bytes than the
packed 4-bit weights: ``qmv`` reads them once. Larger products (prefill) dequantize in one
kernel (``dequantize``) into x's dtype and run a GEMM of that dtype. Operands are GpuArrays; the
op layer (core/quantize.py) decides which path applies and keeps the dequantize + matmul
composition of lazy ops for the rest.
"""

from __future__ import annotations

from typing import Any

from ... import dtypes as dt
from . import array as gpu_array, compiler, registry
from .elementwise import _ptr, _record_write
from .fast import contiguous
from .launch import k_slices
from .stream import CudaStream

#: Rows of x the kernel takes (its MAX_ROWS); more rows go through dequantize + GEMM.
MAX_ROWS = 8
_WARPS_PER_BLOCK = 8
#: Columns per warp: two reuse each lane's x values (scripts/tune_qmv.py on the H200: as fast
#: or faster than one in every shape measured, 1.3-2.7x at 8 rows), unless the output is too
#: narrow to give every SM warps.
_TWO_COLUMNS_FROM = 2048
_plans: dict[tuple, tuple] = {}


def dequantizes(dtype: dt.Dtype, bits: int) -> bool:
    """Whether qmv.cu's dequantize_affine unpacks weights of ``bits`` into ``dtype``."""
    return dtype.name in registry.QMV_DTYPES and bits in registry.QMV_BITS


def supported(dtype: dt.Dtype, bits: int, group_size: int, k_len: int) -> bool:
    """Whether qmv.cu computes this case: its dtypes and bit widths, groups holding whole
    16-byte vectors of packed values."""
    per_vec = 128 // bits if bits in registry.QMV_BITS else 0
    return (dtype.name in registry.QMV_DTYPES and per_vec > 0 and group_size % per_vec == 0
            and k_len % group_size == 0)


def qmv(x: Any, w: Any, scales: Any, biases: Any, bits: int, group_size: int,
        stream: CudaStream) -> Any:
    """(..., N) = x (..., K) @ dequantize(w, scales, biases).T, x with at most MAX_ROWS rows
    (its leading dimensions together)."""
    k_len, n_out = x.shape[-1], w.shape[0]
    out = gpu_array.empty((*x.shape[:-1], n_out), x.dtype, stream)
    rows = out.size // n_out if n_out else 0
    if rows == 0:
        return out
    x, w = contiguous(x, stream), contiguous(w, stream)
    scales, biases = contiguous(scales, stream), contiguous(biases, stream)
    xp, wp = _ptr(x), _ptr(w)
    if (xp | wp) & 15:  # the kernel reads both 16 bytes at a time
        x, w = _aligned_copy(x, stream), _aligned_copy(w, stream)
        xp, wp = _ptr(x), _ptr(w)
    key = (x.dtype.name, bits, n_out, k_len, stream.device.index)
    plan = _plans.get(key)
    if plan is None:
        columns = 2 if n_out >= _TWO_COLUMNS_FROM else 1
        mod = compiler.module_for(registry.qmv_module, (x.dtype.name,), stream.device)
        warps = -(-n_out // columns)
        ksplit = k_slices(warps, k_len * bits // 128, stream.device.properties.multiprocessors,
                          _WARPS_PER_BLOCK)
        plan = (mod[registry.qmv_expression(x.dtype.name, bits, columns)],
                -(-warps // (_WARPS_PER_BLOCK // ksplit)), ksplit)
        if len(_plans) > 1024:
            _plans.clear()
        _plans[key] = plan
    kernel, grid, ksplit = plan
    kernel(grid, 32 * _WARPS_PER_BLOCK, stream, xp, wp, _ptr(scales), _ptr(biases), _ptr(out),
           rows, n_out, k_len, group_size, ksplit)
    _record_write(out, stream)
    return out


def _aligned_copy(a: Any, stream: CudaStream) -> Any:
    """A fresh (pool-aligned) contiguous copy of ``a``, unless it is already 16-byte aligned."""
    if not _ptr(a) & 15:
        return a
    from .elementwise import copy

    out = gpu_array.empty(tuple(a.shape), a.dtype, stream)
    copy(a, out, stream)
    return out


def dequantize(w: Any, scales: Any, biases: Any, bits: int, group_size: int, out_dtype: dt.Dtype,
               stream: CudaStream) -> Any:
    """(..., K) of ``out_dtype`` = scales * unpack(w) + biases, w (..., K * bits / 32) uint32:
    the weight the prefill-sized products multiply with a GEMM of x's dtype."""
    k_len = w.shape[-1] * 32 // bits
    out = gpu_array.empty((*w.shape[:-1], k_len), out_dtype, stream)
    words = w.size
    if words == 0:
        return out
    w = contiguous(w, stream)
    scales, biases = contiguous(scales, stream), contiguous(biases, stream)
    key = ("dequantize", out_dtype.name, bits, stream.device.index)
    plan = _plans.get(key)
    if plan is None:
        mod = compiler.module_for(registry.qmv_module, (out_dtype.name,), stream.device)
        kernel = mod[registry.dequantize_expression(out_dtype.name, bits)]
        plan = _plans[key] = (kernel, stream.device.properties.multiprocessors * 8)
    kernel, max_blocks = plan
    grid = max(1, min(-(-words // 256), max_blocks))
    kernel(grid, 256, stream, _ptr(w), _ptr(scales), _ptr(biases), _ptr(out), words, k_len,
           group_size)
    _record_write(out, stream)
    return out
