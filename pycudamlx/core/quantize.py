"""Quantization: ``mx.quantize``, ``mx.dequantize``, ``mx.quantized_matmul``, ``mx.gather_qmm``.

MLX's ``"affine"`` mode, built as a composition of existing lazy ops (min/max over groups,
round, clip, uint32 shifts and sums, reshape, take, matmul), so it runs on the CPU and the GPU
without a kernel of its own. The packed output is bit-identical to MLX's: every row of ``w`` is
one little-endian bit stream in which element ``k`` holds bits ``[k*bits, (k+1)*bits)``, read
as uint32 words (3-, 5- and 6-bit values straddle word boundaries). ``quantized_matmul`` is
dequantize + matmul for now; a fused dequantizing GEMM kernel is the next step.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from .. import dtypes as dt
from . import device as dev
from . import quantize_fp as _fp
from ._base import as_array, astype
from ..autodiff import engine as _engine
from ..autodiff.custom import guard_operands
from ..graph.primitives.quantize import DequantizeAffine, QuantizedMatvec
from .array import array, from_data, make
from .elementwise import (
    abs as _abs, add, bitwise_and, bitwise_or, clip, divide, equal, greater, left_shift,
    maximum, multiply, negative, not_equal, right_shift, round as _round, subtract, where,
)
from .indexing import take
from .matmul import matmul
from .reduce import max as _max, min as _min, sum as _sum
from .shape import broadcast_to, concatenate, expand_dims, fmt_shape, reshape, swapaxes

__all__ = ["quantize", "dequantize", "quantized_matmul", "gather_qmm", "qqmm", "gather_qqmm"]

_MODES = ("affine", "mxfp4", "mxfp8", "nvfp4")
_AFFINE_BITS = (1, 2, 3, 4, 5, 6, 8)
_AFFINE_GROUPS = (32, 64, 128)


def _params(fn: str, group_size: int | None, bits: int | None, mode: str,
            check: bool = True) -> tuple[int, int]:
    """Validate mode/group_size/bits as MLX does and fill in the mode's defaults (``check``
    False: the mode only; the caller validates the sizes later via ``_check_sizes``)."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"[{fn}] Invalid quantization mode '{mode}'.")
    if mode != "affine":
        return _fp.check_sizes(fn, mode, group_size, bits)
    gs = 64 if group_size is None else int(group_size)
    b = 4 if bits is None else int(bits)
    if check:
        _check_sizes(fn, gs, b)
    return gs, b


def _check_sizes(fn: str, gs: int, b: int) -> None:
    if gs not in _AFFINE_GROUPS:
        raise ValueError(f"[{fn}] The requested group size {gs} is not supported. The "
                         "supported group sizes are 32, 64, and 128.")
    if b not in _AFFINE_BITS:
        raise ValueError(f"[{fn}] The requested number of bits {b} is not supported. The "
                         "supported bits are 1, 2, 3, 4, 5, 6 and 8.")


@lru_cache(maxsize=None)
def _layout(bits: int) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
    """The repeating unit of the bit stream: ``L`` elements filling ``W`` whole words; for each
    element its word index and bit offset, and which elements straddle into the next word."""
    lcm = bits * 32 // math.gcd(bits, 32)
    n_el, n_words = lcm // bits, lcm // 32
    start = np.arange(n_el) * bits
    word = start // 32
    shift = start % 32
    straddle = shift + bits > 32
    return n_el, n_words, word, shift, straddle


def _u32(values: Any) -> array:
    return from_data(np.asarray(values, dtype=np.uint32), dt.uint32)


#: The per-bits shift and word tables of _unpack, one evaluated array each: on the GPU the first
#: use uploads it and later ones find it there (a fresh host table was one upload per
#: dequantize, every decode step of a quantized embedding).
_tables: dict[tuple, array] = {}


def _table(bits: int, name: str, values: Any, dtype: dt.Dtype = dt.uint32) -> array:
    key = (bits, name)
    a = _tables.get(key)
    if a is None:
        a = _tables[key] = from_data(np.asarray(values, dtype=dtype.np_dtype), dtype)
    return a


def _pack(q: array, bits: int, s: Any) -> array:
    """(R, K) uint32 values < 2**bits -> (R, K*bits/32) uint32 words (MLX's layout)."""
    rows, k = q.shape
    n_el, n_words, word, shift, straddle = _layout(bits)
    units = reshape(q, (rows, k // n_el, n_el), stream=s)
    lo = left_shift(units, _u32(shift), stream=s)  # bits past 32 fall off
    if n_words == 1:
        return reshape(_sum(lo, axis=-1, stream=s), (rows, k * bits // 32), stream=s)
    hi_shift = np.where(straddle, 32 - shift, 0)
    hi = right_shift(units, _u32(hi_shift), stream=s)
    cols = []
    for j in range(n_words):
        idx = np.nonzero(word == j)[0]
        part = _sum(lo[..., int(idx[0]):int(idx[-1]) + 1], axis=-1, keepdims=True, stream=s)
        prev = np.nonzero((word == j - 1) & straddle)[0]
        if len(prev):
            part = add(part, hi[..., int(prev[0]):int(prev[0]) + 1], stream=s)
        cols.append(part)
    return reshape(concatenate(cols, axis=-1, stream=s), (rows, k * bits // 32), stream=s)


def _unpack(w: array, bits: int, s: Any) -> array:
    """(..., Kw) uint32 words -> (..., Kw*32/bits) uint32 values (inverse of ``_pack``)."""
    lead, kw = w.shape[:-1], w.shape[-1]
    n_el, n_words, word, shift, straddle = _layout(bits)
    units = reshape(w, (*lead, kw // n_words, n_words), stream=s)
    mask = _u32((1 << bits) - 1)
    if n_words == 1:
        vals = right_shift(expand_dims(units, -1, stream=s), _table(bits, "shift", shift),
                           stream=s)
        vals = reshape(vals, (*lead, kw // n_words, n_el), stream=s)
    else:
        lo = right_shift(take(units, _table(bits, "word", word, dt.int32), axis=-1,
                              stream=s), _table(bits, "shift", shift), stream=s)
        nxt = np.minimum(word + 1, n_words - 1)
        hi_shift = np.where(straddle, 32 - shift, 0)
        hi = left_shift(take(units, _table(bits, "next", nxt, dt.int32), axis=-1,
                             stream=s), _table(bits, "hi_shift", hi_shift), stream=s)
        hi = multiply(hi, _table(bits, "straddle", straddle.astype(np.uint32)), stream=s)
        vals = bitwise_or(lo, hi, stream=s)
    vals = bitwise_and(vals, mask, stream=s)
    return reshape(vals, (*lead, kw * 32 // bits), stream=s)


def _affine_params(w_max: array, w_min: array, n_bins: float, eps: float, s: Any
                   ) -> tuple[array, array]:
    """Scale and bias per group, snapped so that 0.0 is exactly representable (as MLX)."""
    flip = greater(_abs(w_min, stream=s), _abs(w_max, stream=s), stream=s)
    scale = maximum(divide(subtract(w_max, w_min, stream=s), n_bins, stream=s), eps, stream=s)
    scale = where(flip, scale, negative(scale, stream=s), stream=s)
    edge = where(flip, w_min, w_max, stream=s)
    q0 = _round(divide(edge, scale, stream=s), stream=s)
    nz = not_equal(q0, 0.0, stream=s)
    scale = where(nz, divide(edge, q0, stream=s), scale, stream=s)
    bias = where(nz, edge, 0.0, stream=s)
    return scale, bias


def quantize(w: array, /, group_size: int | None = None, bits: int | None = None,
             mode: str = "affine", *, global_scale: array | None = None,
             stream: Any = None) -> tuple[array, ...]:
    """Quantize ``w`` in groups of ``group_size`` along its last axis (MLX's affine scheme):
    returns ``(w_q, scales, biases)`` with ``w_q`` uint32-packed, bit-identical to MLX."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"[quantize] Invalid quantization mode '{mode}'.")
    s = dev.resolve_stream(stream)
    w = as_array(w)
    # MLX's order: dtype, rank, divisibility, then the group size and bits themselves.
    if group_size is not None:
        gs = int(group_size)
    else:
        gs = _fp.FP_MODES[mode][0] if mode != "affine" else 64
    if w.dtype.kind != "f":
        raise ValueError(f"[quantize] Only real floating types can be quantized but w has type "
                         f"{w.dtype.name}.")
    if w.ndim < 2:
        raise ValueError("[quantize] The matrix to be quantized must have at least 2 dimension "
                         f"but it has only {w.ndim}.")
    if gs > 0 and w.shape[-1] % gs:
        raise ValueError("[quantize] The last dimension of the matrix needs to be divisible by "
                         f"the quantization group size {gs}. However the provided  matrix has "
                         f"shape {fmt_shape(w.shape)}")
    gs, b = _params("quantize", group_size, bits, mode)
    if mode != "affine":
        gscale = None if global_scale is None else as_array(global_scale)
        _fp.check_global_scale("quantize", mode, gscale)
        return _fp.fp_quantize(w, mode, gscale, s)
    if w.dtype is dt.float64:
        # MLX accepts it at call time and fails at evaluation; refuse it up front.
        raise RuntimeError("[quantize] Only float32, float16 and bfloat16 inputs can be "
                           "quantized (MLX's kernels do not support float64).")
    lead, k = w.shape[:-1], w.shape[-1]
    rows = math.prod(lead)
    n_bins = float((1 << b) - 1)
    eps = 1e-7
    # MLX computes in float32 whatever the input dtype (its CPU kernel and fallback both do).
    wf = reshape(astype(w, dt.float32, s), (rows, k // gs, gs), stream=s)
    w_max = _max(wf, axis=-1, keepdims=True, stream=s)
    w_min = _min(wf, axis=-1, keepdims=True, stream=s)
    if b == 1:
        # MLX's 1-bit scheme: two levels at the group's min and max, no zero snapping.
        scale = maximum(subtract(w_max, w_min, stream=s), eps, stream=s)
        bias = w_min
    else:
        scale, bias = _affine_params(w_max, w_min, n_bins, eps, s)
    q = _round(divide(subtract(wf, bias, stream=s), scale, stream=s), stream=s)
    q = astype(clip(q, 0.0, n_bins, stream=s), dt.uint32, s)
    packed = _pack(reshape(q, (rows, k), stream=s), b, s)
    out_shape = (*lead, k * b // 32)
    g_shape = (*lead, k // gs)
    return (reshape(packed, out_shape, stream=s),
            reshape(astype(scale, w.dtype, s), g_shape, stream=s),
            reshape(astype(bias, w.dtype, s), g_shape, stream=s))


def _defaults(fn: str, group_size: int | None, bits: int | None, mode: str) -> tuple[int, int]:
    """The mode's group size and bits, unvalidated: MLX's dequantize and quantized matmuls only
    check them through the shapes they imply (a consistent group size of 16 is accepted)."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"[{fn}] Invalid quantization mode '{mode}'.")
    if mode != "affine":
        return _fp.check_sizes(fn, mode, group_size, bits)
    gs = 64 if group_size is None else int(group_size)
    b = 4 if bits is None else int(bits)
    if gs <= 0 or b <= 0:
        raise ValueError(f"[{fn}] The group size and bits must be positive but got "
                         f"group_size={gs} and bits={b}.")
    return gs, b


def _check_fp(fn: str, w: array, scales: array, biases: array | None, mode: str,
              group_size: int | None, bits: int | None) -> tuple[int, int]:
    """MLX's checks of a microscaling-quantized matrix (scale type, no biases, the mode's
    sizes, then the matrix as for affine)."""
    if scales.dtype is not dt.uint8:
        raise ValueError(f"[{fn}] Scale type must be uint8 but received type "
                         f"{scales.dtype.name}.")
    if biases is not None:
        raise ValueError(f"[{fn}] Biases must be null for quantization mode '{mode}'.")
    gs, b = _fp.check_sizes(fn, mode, group_size, bits)
    if fn == "dequantize":
        if w.dtype is not dt.uint32:
            raise ValueError("[dequantize] The matrix should be given as a uint32")
        if w.ndim < 2:
            raise ValueError("[dequantize] The matrix to be dequantized must have at least 2 "
                             f"dimension but it has only {w.ndim}.")
        if (scales.shape != (*w.shape[:-1], w.shape[-1] * 32 // b // gs)
                or (w.shape[-1] * 32) % (b * gs)):
            raise ValueError("[dequantize] Shape of scales does not match the matrix given the "
                             "quantization parameters. Provided matrix of shape "
                             f"{fmt_shape(w.shape)} and scales of shape "
                             f"{fmt_shape(scales.shape)}.")
    else:
        _check_affine(fn, w, scales, None, gs, b, need_biases=False)
    return gs, b


def _check_affine(fn: str, w: array, scales: array, biases: array | None, gs: int, b: int,
                  need_biases: bool = True) -> None:
    """MLX's checks of a quantized matrix, in its order and words (dequantize's differ from
    the quantized matmuls')."""
    if biases is None and need_biases:
        raise ValueError(f"[{fn}] Biases must be provided for affine quantization.")
    if biases is not None:
        # MLX checks the type the scales and biases promote to before any shape
        if dt.promote_types(scales.dtype, biases.dtype).kind != "f":
            raise ValueError(f"[{fn}] Only real floating types are supported but scales.dtype() "
                             f"== {scales.dtype.name} and biases.dtype() == "
                             f"{biases.dtype.name}.")
    if fn == "dequantize":
        if w.dtype is not dt.uint32:
            raise ValueError("[dequantize] The matrix should be given as a uint32")
        if w.ndim < 2:
            raise ValueError("[dequantize] The matrix to be dequantized must have at least 2 "
                             f"dimension but it has only {w.ndim}.")
        g_shape = (*w.shape[:-1], w.shape[-1] * 32 // b // gs)
        if (scales.shape != biases.shape or scales.shape != g_shape
                or (w.shape[-1] * 32) % (b * gs)):
            raise ValueError("[dequantize] Shape of scales and biases does not match the matrix "
                             "given the quantization parameters. Provided matrix of shape "
                             f"{fmt_shape(w.shape)} and scales/biases of shape "
                             f"{fmt_shape(scales.shape)} with group_size={gs} and bits={b}.")
        return
    if w.dtype is not dt.uint32:
        raise ValueError(f"[{fn}] The weight matrix should be uint32 but received "
                         f"{w.dtype.name}")
    if w.ndim < 2 or scales.ndim != w.ndim or w.shape[:-1] != scales.shape[:-1]:
        raise ValueError(f"[{fn}] Weight and scales should have the same batch shape. Received "
                         f"weight with shape {fmt_shape(w.shape)}, scales with "
                         f"{fmt_shape(scales.shape)}.")
    if biases is not None and scales.shape != biases.shape:
        raise ValueError(f"[{fn}] Scales and biases should have the same shape. Received scales "
                         f"with shape {fmt_shape(scales.shape)} and biases with "
                         f"{fmt_shape(biases.shape)}")
    if (w.shape[-1] * 32) % (b * gs) or scales.shape[-1] != w.shape[-1] * 32 // b // gs:
        raise ValueError(f"[{fn}] The shapes of the weight and scales are incompatible based on "
                         f"bits and group_size. w.shape() == {fmt_shape(w.shape)} and "
                         f"scales.shape() == {fmt_shape(scales.shape)} with group_size={gs} "
                         f"and bits={b}")


def _dequantize(w: array, scales: array, biases: array, gs: int, b: int, out: dt.Dtype,
                s: Any, product_dtype: dt.Dtype | None = None) -> array:
    """``q * scale + bias`` in ``out``; the product rounded to ``product_dtype`` first when
    given (MLX's dequantize multiplies in the scales' dtype, then adds the biases in the
    promoted one)."""
    vals = _unpack(w, b, s)
    lead, k = vals.shape[:-1], vals.shape[-1]
    pd = product_dtype or out
    grouped = reshape(astype(vals, pd, s), (*lead, k // gs, gs), stream=s)
    sc = expand_dims(astype(scales, pd, s), -1, stream=s)
    prod = multiply(grouped, sc, stream=s)
    if pd is not out:
        prod = astype(prod, out, s)
    bi = expand_dims(astype(biases, out, s), -1, stream=s)
    return reshape(add(prod, bi, stream=s), (*lead, k), stream=s)


def _check_out_dtype(dtype: dt.Dtype | None) -> None:
    if dtype is not None and (not isinstance(dtype, dt.Dtype) or dtype.kind != "f"):
        raise ValueError("[dequantize] Only real floating types are supported but output dtype "
                         f"== {getattr(dtype, 'name', dtype)}.")


def dequantize(w: array, /, scales: array, biases: array | None = None,
               group_size: int | None = None, bits: int | None = None, mode: str = "affine",
               global_scale: array | None = None, dtype: dt.Dtype | None = None, *,
               stream: Any = None) -> array:
    """Undo ``quantize``: ``w_i = scale * q_i + bias`` per group, in ``dtype`` (default: the
    type the scales and biases promote to)."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"[dequantize] Invalid quantization mode '{mode}'.")
    s = dev.resolve_stream(stream)
    w, scales = as_array(w), as_array(scales)
    biases = None if biases is None else as_array(biases)
    if mode != "affine":
        _check_fp("dequantize", w, scales, biases, mode, group_size, bits)
        gscale = None if global_scale is None else as_array(global_scale)
        _fp.check_global_scale("dequantize", mode, gscale)
        _check_out_dtype(dtype)
        return _fp.fp_dequantize(w, scales, mode, gscale, dtype or dt.bfloat16, s)
    gs, b = _defaults("dequantize", group_size, bits, mode)
    _check_out_dtype(dtype)
    _check_affine("dequantize", w, scales, biases, gs, b)
    # MLX: scale * q in the scales' dtype, + bias in the promoted dtype, then cast to dtype
    promoted = dt.promote_types(scales.dtype, biases.dtype)
    res = _dequantize(w, scales, biases, gs, b, promoted, s, scales.dtype)
    if dtype is not None and dtype is not promoted:
        res = astype(res, dtype, s)
    return res


def _qmm_prepare(fn: str, x: array, w: array, scales: array, biases: array | None,
                 transpose: bool, gs: int, b: int, need_biases: bool = True
                 ) -> tuple[dt.Dtype, int, int]:
    if need_biases:
        _check_affine(fn, w, scales, biases, gs, b)
    k_full = w.shape[-1] * 32 // b
    rows = w.shape[-2]
    k, n = (k_full, rows) if transpose else (rows, k_full)
    if x.ndim < 1 or x.shape[-1] != k:
        tname = "true" if transpose else "false"
        shp = (rows, k_full) if not transpose else (k_full, rows)
        expanded = f"({shp[0]}, {shp[1]})"  # MLX prints this one shape with a space
        raise ValueError(f"[{fn}] Last dimension of first input with shape (..., "
                         f"{x.shape[-1] if x.ndim else ''}) does not match the expanded "
                         f"quantized matrix {expanded} computed from shape "
                         f"{fmt_shape(w.shape)} with group_size={gs}, bits={b} and "
                         f"transpose={tname}")
    # MLX: x promoted with the (floating, checked above) scale/bias type
    out = dt.promote_types(x.dtype, scales.dtype)
    if biases is not None:
        out = dt.promote_types(out, biases.dtype)
    if out.kind != "f":
        out = dt.float32
    return out, k, n


def quantized_matmul(x: array, w: array, /, scales: array, biases: array | None = None,
                     transpose: bool = True, group_size: int | None = None,
                     bits: int | None = None, mode: str = "affine", *,
                     stream: Any = None) -> array:
    """``x @ dequantize(w).T`` (``transpose=True``) or ``x @ dequantize(w)``: on a GPU stream
    one of qmv.cu's fused paths where it applies (``_fused_path``), else dequantize + matmul."""
    s = dev.resolve_stream(stream)
    x, w, scales = as_array(x), as_array(w), as_array(scales)
    biases = None if biases is None else as_array(biases)
    out, gs, b = _qmm_checks("quantized_matmul", "quantized_matmul", x, w, scales, biases,
                             transpose, group_size, bits, mode)
    fused = _fused_path(x, w, scales, biases, transpose, gs, b, mode, out, s)
    if fused == "matvec":
        return make(QuantizedMatvec(b, gs), (x, w, scales, biases),
                    (*x.shape[:-1], w.shape[0]), out, s)
    if fused == "dequantize":
        wd = make(DequantizeAffine(b, gs), (w, scales, biases),
                  (*w.shape[:-1], w.shape[-1] * 32 // b), out, s)
        return matmul(x, swapaxes(wd, -1, -2, stream=s) if transpose else wd, stream=s)
    # Dequantize and multiply in float32 (as MLX's kernels accumulate), round once at the end.
    wd = _dequantize_f32(w, scales, biases, gs, b, mode, s)
    if transpose:
        wd = swapaxes(wd, -1, -2, stream=s)
    res = astype(matmul(astype(x, dt.float32, s), wd, stream=s), out, s)
    return guard_operands(res, (x, w, scales, biases), *_blocked("QuantizedMatmul", mode))


def _fused_path(x: array, w: array, scales: array, biases: array | None, transpose: bool,
                gs: int, b: int, mode: str, out: dt.Dtype, s: Any) -> str | None:
    """Which fused GPU path quantized_matmul takes, if any (backend/cuda/qmv.cu): "matvec" for
    a decode-sized x (at most qmv's rows) against 2-D transposed weights, "dequantize" (one
    kernel, then a GEMM of x's dtype, as MLX's GPU kernels dequantize into x's dtype) for the
    rest; affine weights of 2/4/8 bits with x, scales and biases of one float dtype, on a GPU
    stream, no gradient being traced (the composition carries the derivatives and their
    errors). None: the dequantize + float32 matmul composition."""
    if not (s.is_gpu and mode == "affine" and biases is not None and x.ndim >= 1
            and _engine._depth == 0):
        return None
    if not (x.dtype is out and scales.dtype is out and biases.dtype is out):
        return None
    from ..backend.cuda import quantized as _qmv

    if not _qmv.dequantizes(out, b):
        return None
    rows = math.prod(x.shape[:-1])
    if (transpose and w.ndim == 2 and 0 < rows <= _qmv.MAX_ROWS
            and _qmv.supported(out, b, gs, x.shape[-1])):
        return "matvec"
    return "dequantize"


def _blocked(prim: str, mode: str) -> tuple[list, list]:
    """MLX's errors for derivatives of a quantized matmul: none wrt the packed weights (nor
    wrt the scales of a microscaling mode), no jvp wrt any quantized operand (GatherQMM: no
    jvp at all)."""
    vjp = [(1, RuntimeError, f"[{prim}::vjp] no gradient wrt the quantized weights.")]
    if mode != "affine":
        vjp.append((2, ValueError, f"[{prim}::vjp] no gradient wrt scales in {mode} "
                                   "quantization."))
    if prim == "GatherQMM":
        return vjp, [(i, RuntimeError, "GatherQMM::jvp NYI") for i in range(4)]
    return vjp, [(i, RuntimeError, "[QuantizedMatmul::jvp] No JVP wrt the quantized matrix yet.")
                 for i in (1, 2, 3)]


def _qmm_checks(fn: str, check_fn: str, x: array, w: array, scales: array,
                biases: array | None, transpose: bool, group_size: int | None,
                bits: int | None, mode: str) -> tuple[dt.Dtype, int, int]:
    """Validate a quantized matmul's operands as MLX does; (output dtype, group size, bits)."""
    if not isinstance(mode, str) or mode not in _MODES or mode == "affine":
        gs, b = _defaults(fn, group_size, bits, mode)
        out, _, _ = _qmm_prepare(check_fn, x, w, scales, biases, transpose, gs, b)
        return out, gs, b
    # the quantized matmuls take the group size and bits as given (only the shapes check them)
    dgs, dbits = _fp.FP_MODES[mode]
    gs = dgs if group_size is None else int(group_size)
    b = dbits if bits is None else int(bits)
    if scales.dtype is not dt.uint8:
        raise ValueError(f"[{check_fn}] Scale type must be uint8 but received type "
                         f"{scales.dtype.name}.")
    if biases is not None:
        raise ValueError(f"[{check_fn}] Biases must be null for quantization mode '{mode}'.")
    _check_affine(check_fn, w, scales, None, gs, b, need_biases=False)
    _qmm_prepare(check_fn, x, w, scales, biases, transpose, gs, b, need_biases=False)
    if x.dtype.kind != "f" or x.dtype is dt.float64:
        raise ValueError(f"[{check_fn}] Only real floating types are supported but x.dtype() "
                         f"== {x.dtype.name}.")
    return x.dtype, gs, b


def _dequantize_f32(w: array, scales: array, biases: array | None, gs: int, b: int, mode: str,
                    s: Any, global_scale: array | None = None) -> array:
    if mode == "affine":
        return _dequantize(w, scales, biases, gs, b, dt.float32, s)
    return _fp.fp_dequantize(w, scales, mode, global_scale, dt.float32, s)


def _gather_global_scale(global_scale: Any, mode: str, experts: int) -> array:
    """gather_qmm's nvfp4 global scale: float32, one for all experts or one per expert."""
    if mode != "nvfp4":
        raise ValueError("[gather_qmm] Global scale is only supported for 'nvfp4' "
                         "quantization mode.")
    g = as_array(global_scale)
    if g.dtype is not dt.float32:
        raise ValueError("[gather_qmm] Global scale must have dtype float32 but got "
                         f"{g.dtype.name}.")
    if g.size not in (1, experts):
        raise ValueError("[gather_qmm] Global scale must be a scalar or have one value per "
                         f"matrix of w ({experts}) but got shape {fmt_shape(g.shape)}.")
    return g


def _indices(idx: array | None, batch: tuple[int, ...], s: Any) -> array:
    """Default gather indices: 0..prod(batch)-1 shaped as ``batch``."""
    if idx is not None:
        return as_array(idx)
    n = math.prod(batch)
    return reshape(from_data(np.arange(n, dtype=np.uint32), dt.uint32), batch, stream=s)


def _flat_indices(lhs: array | None, rhs: array | None, x_batch: tuple[int, ...],
                  w_batch: tuple[int, ...], s: Any) -> tuple[array, array, tuple[int, ...]]:
    """The gathers' matrix indices of x and of w, broadcast together and flattened, and the
    broadcast batch shape."""
    from ._base import broadcast_shapes

    li, ri = _indices(lhs, x_batch, s), _indices(rhs, w_batch, s)
    bshape = broadcast_shapes(li.shape, ri.shape)
    li = reshape(broadcast_to(li, bshape, stream=s), (-1,), stream=s)
    ri = reshape(broadcast_to(ri, bshape, stream=s), (-1,), stream=s)
    return li, ri, bshape


def _take_matrices(a: array, idx: array, s: Any) -> array:
    """The matrices (last two axes) of ``a`` at flat batch indices ``idx``."""
    return take(reshape(a, (-1, *a.shape[-2:]), stream=s), idx, axis=0, stream=s)


def _check_global_scales(fn: str, mode: str, gsx: array | None, gsw: array | None) -> None:
    """qqmm's rules for the pair of global scales (MLX's messages)."""
    if mode == "nvfp4" and (gsx is None) != (gsw is None):
        raise ValueError(f"[{fn}] For nvfp4 mode, either both global_scale_x and "
                         "global_scale_w must be provided, or neither.")
    if mode != "nvfp4" and (gsx is not None or gsw is not None):
        raise ValueError(f"[{fn}] Global scale is only supported for 'nvfp4' quantization "
                         "mode.")


def _qq_weights(w: array, scales: array | None, group_size: int | None, bits: int | None,
                mode: str, gsw: array | None, s: Any) -> tuple[array, array, int, int]:
    """qqmm's weight: quantized on the fly unless already packed; with the group size and
    bits (the mode's defaults unless given)."""
    if w.dtype is not dt.uint32:
        w, scales, *_ = quantize(w, group_size, bits, mode, global_scale=gsw, stream=s)
    dgs, dbits = _fp.FP_MODES.get(mode, (64, 4))
    gs = dgs if group_size is None else int(group_size)
    return w, scales, gs, dbits if bits is None else int(bits)


def _qq_product(x: array, w: array, scales: array, gs: int, b: int, mode: str,
                gsx: array | None, gsw: array | None, s: Any) -> array:
    """x quantized and dequantized (in x's dtype) times the dequantized w, transposed, in
    float32, rounded to x's dtype."""
    xq = quantize(x, gs, b, mode, global_scale=gsx, stream=s)
    xd = dequantize(*xq, group_size=gs, bits=b, mode=mode, global_scale=gsx, dtype=x.dtype,
                    stream=s)
    wd = _fp.fp_dequantize(w, scales, mode, gsw, dt.float32, s)
    return astype(matmul(astype(xd, dt.float32, s), swapaxes(wd, -1, -2, stream=s), stream=s),
                  x.dtype, s)


def gather_qmm(x: array, w: array, /, scales: array, biases: array | None = None,
               lhs_indices: array | None = None, rhs_indices: array | None = None,
               transpose: bool = True, group_size: int | None = None, bits: int | None = None,
               mode: str = "affine", global_scale: array | None = None, *,
               sorted_indices: bool = False, stream: Any = None) -> array:
    """Quantized ``gather_mm``: gathers matrices of ``x`` and ``w`` by flat batch index, then
    multiplies (dequantize of the gathered weights + batched matmul)."""
    s = dev.resolve_stream(stream)
    if lhs_indices is None and rhs_indices is None:
        if global_scale is not None:
            raise ValueError("[gather_qmm] Global scale is not supported without indices.")
        # MLX hands this case to quantized_matmul whole (its checks and names, 1-D x too)
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode,
                                stream=s)
    x, w, scales = as_array(x), as_array(w), as_array(scales)
    biases = None if biases is None else as_array(biases)
    out, gs, b = _qmm_checks("gather_qmm", "gather_qmm", x, w, scales, biases, transpose,
                             group_size, bits, mode)
    if x.ndim < 2:
        raise ValueError("[gather_qmm] Input must have at least two dimensions but got input "
                         f"with shape {fmt_shape(x.shape)}.")
    for name, idx in (("lhs", lhs_indices), ("rhs", rhs_indices)):
        if idx is not None and as_array(idx).dtype.kind not in "iu":
            raise ValueError(f"[gather_qmm] Got {name}_indices with invalid dtype. Indices must "
                             "be integral.")
    xb, wb = x.shape[:-2], w.shape[:-2]
    if global_scale is not None:
        global_scale = _gather_global_scale(global_scale, mode, math.prod(wb))
    li, ri, bshape = _flat_indices(lhs_indices, rhs_indices, xb, wb, s)
    xs, ws, ss = (_take_matrices(a, i, s) for a, i in ((x, li), (w, ri), (scales, ri)))
    bs = None if biases is None else _take_matrices(biases, ri, s)
    gsel = None
    if global_scale is not None:  # each gathered matrix with its own expert's scale
        gsel = reshape(global_scale, (), stream=s) if global_scale.size == 1 else reshape(
            take(reshape(global_scale, (-1,), stream=s), ri, axis=0, stream=s), (-1, 1, 1),
            stream=s)
    wd = _dequantize_f32(ws, ss, bs, gs, b, mode, s, gsel)
    if transpose:
        wd = swapaxes(wd, -1, -2, stream=s)
    res = astype(matmul(astype(xs, dt.float32, s), wd, stream=s), out, s)
    res = reshape(res, (*bshape, *res.shape[-2:]), stream=s)
    return guard_operands(res, (x, w, scales, biases), *_blocked("GatherQMM", mode))


def qqmm(x: array, w: array, scales: array | None = None, group_size: int | None = None,
         bits: int | None = None, mode: str = "nvfp4", global_scale_x: array | None = None,
         global_scale_w: array | None = None, *, stream: Any = None) -> array:
    """``x`` quantized on the fly times ``w`` (already quantized, or quantized on the fly),
    transposed: ``quantized_matmul(dequantize(quantize(x)), w_q, scales)`` in ``x``'s dtype.

    MLX 0.32.4's CPU build computes only a single row of ``x`` against a quantized ``w`` (the
    rest is "[QQMatmul] NYI for the general case"); the same formula serves every case here.
    No gradients (MLX's CPU build has none either)."""
    s = dev.resolve_stream(stream)
    x, w = as_array(x), as_array(w)
    scales = None if scales is None else as_array(scales)
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"[qqmm] Invalid quantization mode '{mode}'.")
    quantized = w.dtype is dt.uint32
    if quantized and scales is None:
        raise ValueError("[qqmm] Scales must be provided if second argument is quantized.")
    if x.dtype.kind != "f" or x.dtype is dt.float64:
        raise ValueError("[qqmm] Only real floating types except float64 are supported but "
                         f"first argument dtype == {x.dtype.name}.")
    if w.ndim != 2:
        raise ValueError("[qqmm] Only 2D inputs are supported but x.ndim() == "
                         f"{x.ndim} and w.ndim() == {w.ndim}.")
    gsx = None if global_scale_x is None else as_array(global_scale_x)
    gsw = None if global_scale_w is None else as_array(global_scale_w)
    _check_global_scales("qqmm", mode, gsx, gsw)
    w, scales, gs, b = _qq_weights(w, scales, group_size, bits, mode, gsw, s)
    _check_affine("qqmm", w, scales, None, gs, b, need_biases=False)
    _qmm_prepare("qqmm", x, w, scales, None, True, gs, b, need_biases=False)
    if mode == "affine":
        raise NotImplementedError("[qqmm] The 'affine' mode has no biases here; use "
                                  "quantized_matmul for affine weights.")
    rows = reshape(x, (-1, x.shape[-1]), stream=s)
    res = _qq_product(rows, w, scales, gs, b, mode, gsx, gsw, s)
    res = reshape(res, (*x.shape[:-1], res.shape[-1]), stream=s)
    blocked = [(i, RuntimeError, "[QQMatmul::vjp] Gradients of qqmm are not implemented in "
                                 "pycudamlx.") for i in range(3)]
    return guard_operands(res, (as_array(x), w, scales), blocked, blocked)


def gather_qqmm(x: array, w: array, /, scales: array | None = None,
                lhs_indices: array | None = None, rhs_indices: array | None = None,
                group_size: int | None = None, bits: int | None = None, mode: str = "nvfp4",
                global_scale_x: array | None = None, global_scale_w: array | None = None, *,
                sorted_indices: bool = False, stream: Any = None) -> array:
    """``qqmm`` with ``gather_mm``'s matrix gather: the matrices of ``x`` (quantized on the fly)
    and of ``w`` picked by flat batch index (a missing index: ``arange`` over its operand's
    batch shape), multiplied as ``x_hat @ w_hat.T`` in float32, in ``x``'s dtype.

    MLX 0.32.4 has it on the GPU only (its CPU build raises "[GatherQQMM] NYI" and crashes
    without scales); here both devices. ``sorted_indices`` is accepted and ignored. No
    gradients (as qqmm)."""
    s = dev.resolve_stream(stream)
    x, w = as_array(x), as_array(w)
    scales = None if scales is None else as_array(scales)
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"[gather_qqmm] Invalid quantization mode '{mode}'.")
    quantized = w.dtype is dt.uint32
    if quantized and scales is None:
        raise ValueError("[gather_qqmm] Scales must be provided if second argument is "
                         "quantized.")
    gsx = None if global_scale_x is None else as_array(global_scale_x)
    gsw = None if global_scale_w is None else as_array(global_scale_w)
    _check_global_scales("gather_qqmm", mode, gsx, gsw)
    w, scales, gs, b = _qq_weights(w, scales, group_size, bits, mode, gsw, s)
    # MLX checks the matrices with qqmm's checks (and name)
    _check_affine("qqmm", w, scales, None, gs, b, need_biases=False)
    _qmm_prepare("qqmm", x, w, scales, None, True, gs, b, need_biases=False)
    if x.ndim < 2:
        raise ValueError("[gather_qqmm] Input must have at least two dimensions but got input "
                         f"with shape {fmt_shape(x.shape)}.")
    for idx in (lhs_indices, rhs_indices):
        if idx is not None and as_array(idx).dtype.kind not in "iu":
            raise ValueError("[gather_qqmm] Got indices with invalid dtype. Indices must be "
                             "integral.")
    if mode == "affine":
        raise NotImplementedError("[gather_qqmm] The 'affine' mode has no biases here; use "
                                  "gather_qmm for affine weights.")
    if x.dtype.kind != "f" or x.dtype is dt.float64:
        raise ValueError("[gather_qqmm] Only real floating types except float64 are supported "
                         f"but first argument dtype == {x.dtype.name}.")
    li, ri, bshape = _flat_indices(lhs_indices, rhs_indices, x.shape[:-2], w.shape[:-2], s)
    xs, ws, ss = (_take_matrices(a, i, s) for a, i in ((x, li), (w, ri), (scales, ri)))
    res = _qq_product(xs, ws, ss, gs, b, mode, gsx, gsw, s)
    res = reshape(res, (*bshape, *res.shape[-2:]), stream=s)
    blocked = [(i, RuntimeError, "[GatherQQMM::vjp] Gradients of gather_qqmm are not "
                                 "implemented in pycudamlx.") for i in range(3)]
    return guard_operands(res, (x, w, scales), blocked, blocked)
