"""MLX's microscaling quantization modes: ``"mxfp4"``, ``"mxfp8"`` and ``"nvfp4"``.

Each group of ``group_size`` consecutive elements of a row shares one 8-bit scale and no bias:

- ``mxfp4`` (group 32, 4 bits): E2M1 codes; the scale is a power of two stored as E8M0
  (``ceil(log2(amax / 6)) + 127``, 0 for an all-zero group).
- ``mxfp8`` (group 32, 8 bits): E4M3 bytes; E8M0 scale ``ceil(log2(amax / 448)) + 127``.
- ``nvfp4`` (group 16, 4 bits): E2M1 codes; the scale is ``amax / 6`` stored as E4M3
  (saturating at 448). With a float32 ``global_scale`` g (the tensor's amax by NVIDIA's
  convention), the stored scale is ``amax / 6 * (448 * 6 / g)`` and values dequantize as
  ``code * (scale * (g / (448 * 6)))``, in float32.

Codes are packed LSB first into uint32 words like affine 4- and 8-bit quantization. All of it is
a composition of existing lazy ops, so it runs on the CPU and the GPU; the packed words and
scales are bit-identical to MLX's.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as dt
from ._base import astype
from .array import array, from_data
from .elementwise import (
    abs as _abs, add, ceil, clip, divide, equal, greater, less, log2, logical_and, multiply,
    where,
)
from .fp8 import from_fp8, to_fp8
from .indexing import take
from .reduce import max as _max, sum as _sum
from .shape import expand_dims, fmt_shape, reshape

#: mode -> (group size, bits)
FP_MODES: dict[str, tuple[int, int]] = {"mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}
#: E2M1's 16 codes: sign bit 3, then the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
_E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], np.float32)
#: Midpoints between consecutive E2M1 magnitudes: a value exactly between two rounds down.
_E2M1_MIDPOINTS = np.array([.25, .75, 1.25, 1.75, 2.5, 3.5, 5.0], np.float32)
#: E8M0's 256 values, 2**(i - 127) (the last one overflows float32 to inf).
with np.errstate(over="ignore"):
    _E8M0 = np.ldexp(np.float32(1), np.arange(256) - 127).astype(np.float32)
#: 2**e for e in [_POW2_MIN, 129]: the scale steps of E8M0 exponents outside the byte's range
#: (MLX divides by the power of two before the byte wraps around).
_POW2_MIN = -151
with np.errstate(over="ignore"):
    _POW2 = np.ldexp(np.float64(1), np.arange(_POW2_MIN, 130)).astype(np.float32)
#: 448 (E4M3's largest value) * 6 (E2M1's): nvfp4's global-scale normalizer.
_NV_NORM = 448.0 * 6.0


def check_sizes(fn: str, mode: str, group_size: int | None, bits: int | None
                ) -> tuple[int, int]:
    """The mode's group size and bits; any other value is MLX's error (group size first)."""
    gs, b = FP_MODES[mode]
    if group_size is not None and int(group_size) != gs:
        raise ValueError(f"[{fn}] {mode} quantization requires group size {gs} but got "
                         f"{int(group_size)}.")
    if bits is not None and int(bits) != b:
        raise ValueError(f"[{fn}] {mode} quantization requires bits to be {b} but got "
                         f"{int(bits)}.")
    return gs, b


def check_global_scale(fn: str, mode: str, global_scale: array | None) -> None:
    if global_scale is None:
        return
    if mode != "nvfp4":
        raise ValueError(f"[{fn}] Global scale is only supported for 'nvfp4' quantization mode.")
    if global_scale.dtype is not dt.float32:
        raise ValueError(f"[{fn}] Global scale must have dtype float32 but got "
                         f"{global_scale.dtype.name}.")
    if global_scale.size != 1:
        raise ValueError(f"[{fn}] Global scale must be a scalar but got shape "
                         f"{fmt_shape(global_scale.shape)}.")


def _f32(value: float) -> array:
    return from_data(np.asarray(value, dtype=np.float32), dt.float32)


def _e8m0(scale_bytes: array, s: Any) -> array:
    """E8M0 bytes as float32 powers of two, 2**(byte - 127), exactly (a table lookup)."""
    return take(from_data(_E8M0, dt.float32), astype(scale_bytes, dt.int32, s), stream=s)


def _pow2(exponent: array, s: Any) -> array:
    """2**e for integral float32 ``e``, exactly (subnormal, zero or inf at the extremes)."""
    idx = astype(clip(add(exponent, float(-_POW2_MIN), stream=s), 0.0,
                      float(len(_POW2) - 1), stream=s), dt.int32, s)
    return take(from_data(_POW2, dt.float32), idx, stream=s)


def _e2m1_codes(v: array, s: Any) -> array:
    """Nearest E2M1 code of each float32 value (ties to the smaller magnitude; -0 and values
    that round to zero get the +0 code, as MLX's first-minimum argmin over the code table)."""
    mags = expand_dims(_abs(v, stream=s), -1, stream=s)
    mids = from_data(_E2M1_MIDPOINTS, dt.float32)
    code = _sum(astype(greater(mags, mids, stream=s), dt.uint32, s), axis=-1, stream=s)
    neg = logical_and(less(v, 0.0, stream=s), greater(code, 0, stream=s), stream=s)
    code = where(neg, add(code, 8, stream=s), code, stream=s)
    # inf and NaN (a zero nvfp4 scale) are equally far from every code: the first one, +0
    return where(less(mags[..., 0], float("inf"), stream=s), code, 0, stream=s)


def _pack(codes: array, bits: int, s: Any) -> array:
    """Flat uint32 codes < 2**bits -> uint32 words, LSB first. MLX packs the whole array as
    units of 32 codes, so a size that is not a multiple of 32 is its reshape error."""
    n = codes.size
    per_word = 32 // bits
    if bits == 4 and n % 32:
        raise ValueError(f"[reshape] Cannot reshape array of size {n} into shape "
                         f"({n // 32},4,8).")
    shifts = from_data(np.arange(per_word, dtype=np.uint32) * bits, dt.uint32)
    from .elementwise import left_shift

    units = reshape(codes, (n // per_word, per_word), stream=s)
    return _sum(left_shift(units, shifts, stream=s), axis=-1, stream=s)


def _unpack(w: array, bits: int, s: Any) -> array:
    """(..., Kw) uint32 words -> (..., Kw * 32 / bits) uint32 codes."""
    from .elementwise import bitwise_and, right_shift

    per_word = 32 // bits
    shifts = from_data(np.arange(per_word, dtype=np.uint32) * bits, dt.uint32)
    codes = right_shift(expand_dims(w, -1, stream=s), shifts, stream=s)
    codes = bitwise_and(codes, from_data(np.asarray((1 << bits) - 1, np.uint32), dt.uint32),
                        stream=s)
    return reshape(codes, (*w.shape[:-1], w.shape[-1] * per_word), stream=s)


def fp_quantize(w: array, mode: str, global_scale: array | None, s: Any
                ) -> tuple[array, array]:
    """``(w_q, scales)`` of ``w`` (already validated) in ``mode``.

    As MLX: the group's ``amax / max(element format)`` and the division by the scale's step
    happen in w's own type (a half type flushes tiny scales to zero and tiny steps to zero,
    whose codes are those of inf: +0), the E8M0 exponent ``ceil(log2(.))`` in float32."""
    gs, bits = FP_MODES[mode]
    lead, k = w.shape[:-1], w.shape[-1]
    rows = math.prod(lead)
    work = dt.float32 if w.dtype is dt.float64 else w.dtype
    groups = reshape(astype(w, work, s), (rows * k // gs, gs), stream=s)
    amax = _max(_abs(groups, stream=s), axis=-1, keepdims=True, stream=s)
    scale = astype(divide(amax, 6.0 if bits == 4 else 448.0, stream=s), dt.float32, s)
    if mode == "nvfp4":
        if global_scale is not None:
            scale = multiply(scale, divide(_f32(_NV_NORM), global_scale, stream=s), stream=s)
        scale_bytes = to_fp8(scale, stream=s)
        step = from_fp8(scale_bytes, dt.float32, stream=s)
    else:
        # E8M0: the power of two at or above the scale
        exponent = ceil(log2(scale, stream=s), stream=s)
        exponent = where(equal(scale, 0.0, stream=s), 0.0, exponent, stream=s)
        scale_bytes = astype(astype(add(exponent, 127.0, stream=s), dt.int32, s), dt.uint8, s)
        step = _pow2(exponent, s)
        # an inf or NaN in the group: every value's code is that of NaN (as MLX)
        step = where(less(_abs(exponent, stream=s), float("inf"), stream=s), step,
                     float("nan"), stream=s)
    v = divide(groups, astype(step, groups.dtype, s), stream=s)
    if mode == "nvfp4" and global_scale is not None:  # then rescaled in float32
        v = multiply(v, divide(_f32(_NV_NORM), global_scale, stream=s), stream=s)
    if bits == 4:
        codes = _e2m1_codes(astype(v, dt.float32, s), s)
    else:
        codes = astype(to_fp8(v, stream=s), dt.uint32, s)
    words = _pack(reshape(codes, (-1,), stream=s), bits, s)
    return (reshape(words, (*lead, k * bits // 32), stream=s),
            reshape(scale_bytes, (*lead, k // gs), stream=s))


def fp_dequantize(w: array, scales: array, mode: str, global_scale: array | None,
                  out: dt.Dtype, s: Any) -> array:
    """The values of quantized ``w`` (validated) as ``out`` (float32 with a global scale)."""
    gs, bits = FP_MODES[mode]
    codes = _unpack(w, bits, s)
    lead, k = codes.shape[:-1], codes.shape[-1]
    if bits == 4:
        vals = take(from_data(_E2M1, dt.float32), astype(codes, dt.int32, s), stream=s)
    else:
        vals = from_fp8(astype(codes, dt.uint8, s), dt.float32, stream=s)
    if mode == "nvfp4":
        step = from_fp8(scales, dt.float32, stream=s)
        if global_scale is not None:  # float32 then, whatever ``out`` says (as MLX)
            step = multiply(step, divide(global_scale, _f32(_NV_NORM), stream=s), stream=s)
            out = dt.float32
    else:
        step = _e8m0(scales, s)
    # the product in the output type (a float16 step can be subnormal, zero or inf), as MLX
    grouped = reshape(astype(vals, out, s), (*lead, k // gs, gs), stream=s)
    res = multiply(grouped, expand_dims(astype(step, out, s), -1, stream=s), stream=s)
    return reshape(res, (*lead, k), stream=s)
