"""Launchers for mx.fast: rms_norm / layer_norm, rope, scaled_dot_product_attention.

Operands are GpuArrays. The row kernels take a contiguous input (a strided one is copied
first); attention reads q, k, v and the mask through their strides. Launch geometry depends only
on shapes, so it is computed once per shape and cached with the kernel (low per-op overhead).
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from ... import dtypes as dt
from . import array as gpu_array, compiler, registry
from .elementwise import _ptr, _record_write, copy as _copy, fill as _fill
from .stream import CudaStream

_module = compiler.module_for
log = logging.getLogger(__name__)
_NORM_CACHE = 4  # fast_norm.cu NORM_CACHE
_MAX_GRID_Y = 65535
_SDPA_ARGS = struct.Struct("<20qdf13i")
assert _SDPA_ARGS.size == registry.SDPA_ARGS_BYTES

_plans: dict[tuple, tuple] = {}


def contiguous(x: Any, stream: CudaStream) -> Any:
    """``x`` itself when row-contiguous, else a contiguous copy."""
    if x.is_contiguous():
        return x
    out = gpu_array.empty(tuple(x.shape), x.dtype, stream)
    _copy(x, out, stream)
    return out


def _norm_plan(dtype: dt.Dtype, rows: int, n: int, aligned: bool, ln: bool,
               stream: CudaStream) -> tuple:
    key = ("norm", dtype, rows, n, aligned, ln, stream.device.index)
    plan = _plans.get(key)
    if plan is None:
        mod = _module(registry.fast_norm_module, (dtype.name,), stream.device)
        vec = registry.vector_width(dtype.name)
        wide = aligned and n % vec == 0
        kernel = mod.kernel_list[(2 if ln else 0) + (0 if wide else 1)]
        width = vec if wide else 1
        packs = n // width
        threads = -(-packs // _NORM_CACHE)
        # No wider than the compiled kernel can launch: its registers decide (on the H200 the
        # unvectorised variants failed to launch 1,024 threads, rows of 4,099 and 40,000).
        threads = max(32, min(kernel.max_threads // 32 * 32, -(-threads // 32) * 32))
        cap = stream.device.properties.multiprocessors * max(1, 2048 // threads) * 4
        plan = (kernel, max(1, min(rows, cap)), threads)
        if len(_plans) > 4096:
            _plans.clear()
        _plans[key] = plan
    return plan


def norm(x: Any, weight: Any | None, bias: Any | None, eps: float, layer: bool,
         out_dtype: dt.Dtype, stream: CudaStream) -> Any:
    """rms_norm (layer=False) or layer_norm over the last axis; weight/bias 1-D or None."""
    x = contiguous(x, stream)
    out = gpu_array.empty(tuple(x.shape), out_dtype, stream)
    n = x.shape[-1] if x.shape else 1
    rows = x.size // n if n else 0
    if rows == 0 or n == 0:
        return out
    wp = bp = 0
    flags = 0
    if weight is not None:
        weight = contiguous(weight, stream)
        wp = _ptr(weight)
        flags |= 1
    if bias is not None:
        bias = contiguous(bias, stream)
        bp = _ptr(bias)
        flags |= 2
    xp, op = _ptr(x), _ptr(out)
    row_bytes = n * out_dtype.size
    aligned = not ((xp | op | wp | bp | row_bytes) & 15)
    kernel, grid, threads = _norm_plan(out_dtype, rows, n, aligned, layer, stream)
    kernel(grid, threads, stream, xp, wp, bp, op, rows, n, float(eps), flags)
    _record_write(out, stream)
    return out


def rope(x: Any, offset: Any | None, freqs: Any | None, dims: int, traditional: bool,
         base: float, scale: float, off_const: int, stream: CudaStream) -> Any:
    """Rotary embedding over a (B, *, T, D) array; ``offset`` an int32 GpuArray or None."""
    import math

    x = contiguous(x, stream)
    out = gpu_array.empty(tuple(x.shape), x.dtype, stream)
    shape = x.shape
    B, T, D = shape[0], shape[-2], shape[-1]
    H = 1
    for e in shape[1:-2]:
        H *= e
    half = dims // 2
    total = B * H * T * (half + D - dims)
    if total == 0:
        return out
    mod = _module(registry.fast_norm_module, (x.dtype.name,), stream.device)
    kernel = mod.kernel_list[4]
    op_, fp = 0, 0
    off_stride = 0
    if offset is not None:
        offset = contiguous(offset, stream)
        op_ = _ptr(offset)
        off_stride = 1 if offset.size > 1 else 0
    if freqs is not None:
        freqs = contiguous(freqs, stream)
        fp = _ptr(freqs)
    lbh = math.log(base) / half if freqs is None else 0.0
    threads = 256
    grid = max(1, min(-(-total // threads), stream.device.properties.multiprocessors * 16))
    kernel(grid, threads, stream, _ptr(x), _ptr(out), op_, fp, total, H * T, T, D, dims,
           int(off_const), off_stride, float(scale), float(lbh), int(bool(traditional)))
    _record_write(out, stream)
    return out


#: Set to False to keep attention off the tensor cores (tests compare both paths).
USE_MMA = True


def sdpa_kernel_kind(Dk: int, Dv: int, dtype: dt.Dtype, device: Any) -> str:
    """"mma" (tensor cores: 16-bit floats on sm_80+), "tiled" (SIMT, float32 or older GPUs) or
    "generic" (any head dims, float64)."""
    if Dk != Dv or Dk not in registry.SDPA_TILED_DIMS or dtype.name == "float64":
        return "generic"
    major, _ = device.properties.compute_capability
    if USE_MMA and dtype.name in registry.SDPA_MMA_DTYPES and major >= 8:
        return "mma"
    return "tiled"


def _rows_16b(x: Any) -> bool:
    """Every (batch, head, token) row of x starts 16-byte aligned and its dims are contiguous."""
    if x.strides[3] != 1 and x.shape[3] > 1:
        return False
    if _ptr(x) % 16:
        return False
    return all(s % 8 == 0 for s, e in zip(x.strides[:3], x.shape[:3]) if e > 1)


#: Set to False to keep few-query attention on the prefill kernels (tests compare both paths).
USE_SPLIT = True
#: keys per split at least (a split's fixed cost is a block start and one merge)
_SPLIT_MIN_KEYS = 64


def _split_variant(q: Any, k: Any, v: Any, out_dtype: dt.Dtype) -> int | None:
    """The sdpa_split variant index for few queries against a KV cache, or None."""
    B, Hq, Tq, Dk = q.shape
    Hkv, Dv = k.shape[1], v.shape[3]
    if (not USE_SPLIT or Tq > registry.SDPA_SPLIT_MAX_TQ or out_dtype.name == "float64"
            or B * Hkv > _MAX_GRID_Y):
        return None
    widest = max(Dk, Dv)
    for index, (per_lane, _) in enumerate(registry.SDPA_SPLIT_VARIANTS):
        if widest <= 32 * per_lane:
            return index
    return None


def _split_plan(q: Any, k: Any, v: Any, ms: tuple, mask_kind: int, causal: bool,
                has_sinks: bool, scale: float, masked_value: float, out_dtype: dt.Dtype,
                variant: int, stream: CudaStream) -> tuple:
    """("split", split kernel, grid, args, chunk, splits, combine kernel): flash-decoding.

    Enough key splits that the blocks fill the GPU about twice, each of at least
    _SPLIT_MIN_KEYS keys (a multiple of the 16 keys the 4 warps take at a time)."""
    B, Hq, Tq, Dk = q.shape
    Hkv, Tk, Dv = k.shape[1], k.shape[2], v.shape[3]
    mod = _module(registry.sdpa_decode_module, (out_dtype.name,), stream.device)
    rows_per_block = registry.SDPA_SPLIT_VARIANTS[variant][1]
    gz = -(-(Hq // Hkv) * Tq // rows_per_block)
    base = B * Hkv * gz
    target = 2 * stream.device.properties.multiprocessors
    splits = max(1, min(-(-target // base), Tk // _SPLIT_MIN_KEYS))
    chunk = -(-Tk // splits)
    chunk = -(-chunk // 16) * 16
    splits = -(-Tk // chunk)
    out_strides = gpu_array.contiguous_strides((B, Hq, Tq, Dv))
    args = _SDPA_ARGS.pack(*q.strides, *k.strides, *v.strides, *out_strides, *ms,
                           float(masked_value), float(scale), B, Hq, Hkv, Tq, Tk, Dk, Dv,
                           mask_kind, int(causal), int(has_sinks), 0, 0, 0)
    return ("split", mod.kernel_list[variant], (splits, B * Hkv, gz), args, chunk, splits,
            mod.kernel_list[len(registry.SDPA_SPLIT_VARIANTS)], B * Hq * Tq, Dv)


def _sdpa_plan(q: Any, k: Any, v: Any, ms: tuple, mask_kind: int, causal: bool,
               has_sinks: bool, scale: float, masked_value: float, out_dtype: dt.Dtype,
               stream: CudaStream) -> tuple:
    """A plan for one attention configuration: _split_plan's for few queries, else (kernel,
    [(grid, packed SdpaArgs)])."""
    B, Hq, Tq, Dk = q.shape
    Hkv, Tk, Dv = k.shape[1], k.shape[2], v.shape[3]
    variant = _split_variant(q, k, v, out_dtype)
    if variant is not None:
        return _split_plan(q, k, v, ms, mask_kind, causal, has_sinks, scale, masked_value,
                           out_dtype, variant, stream)
    kind = sdpa_kernel_kind(Dk, Dv, out_dtype, stream.device)
    vec = 0
    if kind == "mma":
        try:  # built for the device (min_cc 80: never the compute_70 shipped PTX)
            mma = _module(registry.sdpa_mma_module, (out_dtype.name, Dk), stream.device)
        except (compiler.KernelUnavailableError, compiler.KernelCompileError) as exc:
            log.info("tensor-core attention unavailable (%s); using the SIMT kernel", exc)
            kind = "tiled"
    if kind == "mma":
        kernel = mma.kernel_list[0]
        gx, gz = -(-Tq // 64), 1
        for bit, x in ((1, q), (2, k), (4, v)):
            if _rows_16b(x):
                vec |= bit
    else:
        mod = _module(registry.sdpa_module, (out_dtype.name,), stream.device)
        if kind == "tiled":
            kernel = mod.kernel_list[1 + registry.SDPA_TILED_DIMS.index(Dk)]
            gx, gz = -(-Tq // 16), 1
        else:
            kernel = mod.kernel_list[0]
            gx, gz = -(-Tq // 4), -(-Dv // 128)
    out_strides = gpu_array.contiguous_strides((B, Hq, Tq, Dv))
    launches = []
    bh_total = B * Hq
    for base in range(0, bh_total, _MAX_GRID_Y):
        gy = min(_MAX_GRID_Y, bh_total - base)
        args = _SDPA_ARGS.pack(*q.strides, *k.strides, *v.strides, *out_strides, *ms,
                               float(masked_value), float(scale), B, Hq, Hkv, Tq, Tk, Dk, Dv,
                               mask_kind, int(causal), int(has_sinks), base, vec, 0)
        launches.append(((gx, gy, gz), args))
    return kernel, launches


def sdpa(q: Any, k: Any, v: Any, mask: Any | None, mask_kind: int, sinks: Any | None,
         scale: float, causal: bool, masked_value: float, out_dtype: dt.Dtype,
         stream: CudaStream) -> Any:
    """Fused attention. ``mask`` is broadcast to (B, Hq, Tq, Tk) (zero strides allowed)."""
    B, Hq, Tq, Dk = q.shape
    Hkv, Tk, Dv = k.shape[1], k.shape[2], v.shape[3]
    out = gpu_array.empty((B, Hq, Tq, Dv), out_dtype, stream)
    if out.size == 0:
        return out
    if Tk == 0:  # softmax over no keys, then a sum over no values: zeros
        _fill(out, bytes(out_dtype.size), stream)
        return out
    mp = _ptr(mask) if mask is not None else 0
    ms = tuple(mask.strides) if mask is not None else (0, 0, 0, 0)
    sp = 0
    if sinks is not None:
        sinks = contiguous(sinks, stream)
        sp = _ptr(sinks)
    qp, kp, vp, op = _ptr(q), _ptr(k), _ptr(v), _ptr(out)
    key = ("sdpa", out_dtype, q.shape, q.strides, k.shape, k.strides, v.shape, v.strides, ms,
           mask_kind, bool(causal), sinks is not None, float(scale), float(masked_value),
           (qp & 15, kp & 15, vp & 15), USE_MMA, USE_SPLIT, stream.device.index)
    plan = _plans.get(key)
    if plan is None:
        plan = _sdpa_plan(q, k, v, ms, mask_kind, causal, sinks is not None, scale,
                          masked_value, out_dtype, stream)
        if len(_plans) > 4096:
            _plans.clear()
        _plans[key] = plan
    if plan[0] == "split":
        _, kernel, grid, args, chunk, splits, combine, rows, Dv = plan
        if splits == 1:
            kernel(grid, 128, stream, qp, kp, vp, mp, sp, op, args, 0, chunk)
        else:
            part = gpu_array.device_scratch((splits * rows * (Dv + 2),), dt.float32, stream)
            kernel(grid, 128, stream, qp, kp, vp, mp, sp, op, args, _ptr(part), chunk)
            combine(rows, 128, stream, _ptr(part), sp, op, args, splits)
        _record_write(out, stream)
        return out
    kernel, launches = plan
    for grid, args in launches:
        kernel(grid, 128, stream, qp, kp, vp, mp, sp, op, args)
    _record_write(out, stream)
    return out
