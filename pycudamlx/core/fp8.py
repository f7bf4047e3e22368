"""fp8 (e4m3) conversions: MLX's ``to_fp8`` and ``from_fp8``, as compositions of lazy ops.

e4m3 here is the "fn" variant (no infinities, one NaN pattern 0x7f/0xff, largest finite 448)
stored in uint8. ``to_fp8`` rounds to nearest even like a cast, but saturates as MLX does:
anything beyond 448 in magnitude, infinities and NaN become +-448 (NaN keeps its sign bit).
Encoding works on the float32 bit pattern (exact for float16/bfloat16 inputs too), so the same
integer ops run on the GPU and the CPU and give the same bits. ``from_fp8`` looks each byte up in a 256-entry table
of exact values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from ._nanobind import SIGNATURES
from .array import array
from .creation import full
from .elementwise import (abs, bitwise_and, bitwise_or, clip, isnan, left_shift, less,  # noqa: A004
                          right_shift, round, subtract, where)
from .indexing import take
from .misc import view

__all__ = ["to_fp8", "from_fp8"]

_FP8_MAX = 448.0
_MIN_NORMAL = 2.0 ** -6     # below: subnormals, multiples of 2^-9
_SUBNORMAL_STEP = 2.0 ** 9
_UINT_OF_WIDTH = {16: dt.uint16, 32: dt.uint32, 64: dt.uint64}


def _real_float(d: dt.Dtype) -> bool:
    return d in (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def to_fp8(x: array, /, *, stream: Any = None) -> array:
    """``x`` (a real floating type) as fp8 e4m3 bytes (``uint8``), saturating at +-448."""
    if not isinstance(x, array):
        raise dt._incompatible_arguments(
            SIGNATURES["to_fp8"], x)
    if not _real_float(x.dtype):
        raise ValueError("[to_fp8] Only real floating types are supported but x.dtype() == "
                         f"{x.dtype.name}.")
    s = stream
    f = x.astype(dt.float32, stream=s)
    # the sign from x's own bits: -0.0 keeps its sign, and so does a NaN, which the GPU's
    # float16/float64 -> float32 conversion turns into the positive canonical NaN
    width = x.dtype.size * 8
    sign = right_shift(view(x, _UINT_OF_WIDTH[width], stream=s), width - 1, stream=s)
    sign = sign.astype(dt.uint32, stream=s)
    a = where(isnan(f, stream=s), _FP8_MAX, clip(abs(f, stream=s), None, _FP8_MAX, stream=s),
              stream=s)
    bits = view(a, dt.uint32, stream=s)
    # normal: drop 20 of float32's 23 mantissa bits rounding to nearest even (a carry moves
    # into the exponent), then rebias the exponent from 127 to 7
    lsb = bitwise_and(right_shift(bits, 20, stream=s), 1, stream=s)
    normal = subtract(right_shift(bits + (0x7FFFF + lsb), 20, stream=s), (127 - 7) << 3,
                      stream=s)
    # subnormal: a multiple of 2^-9, rounded to nearest even (0..8; 8 is the smallest normal)
    sub = round(a * _SUBNORMAL_STEP, stream=s).astype(dt.uint32, stream=s)
    mag = where(less(a, _MIN_NORMAL, stream=s), sub, normal, stream=s)
    return bitwise_or(mag, left_shift(sign, 7, stream=s), stream=s).astype(dt.uint8, stream=s)


def _decoded() -> np.ndarray:
    """The value of every e4m3 byte, as float32 (exact)."""
    b = np.arange(256, dtype=np.int64)
    sign = np.where(b >> 7, -1.0, 1.0)
    e, m = (b >> 3) & 0xF, b & 7
    val = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    val = np.where((b & 0x7F) == 0x7F, np.nan, val)
    return (sign * val).astype(np.float32)


_TABLE = _decoded()


def from_fp8(x: array, dtype: dt.Dtype = dt.bfloat16, *, stream: Any = None) -> array:
    """fp8 e4m3 bytes (``uint8``) as values of the real floating ``dtype``."""
    if not isinstance(x, array) or not isinstance(dtype, dt.Dtype):
        raise dt._incompatible_arguments(
            SIGNATURES["from_fp8"], x, dtype)
    if x.dtype != dt.uint8:
        raise ValueError(f"[from_fp8] Input must have type uint8 but x.dtype() == "
                         f"{x.dtype.name}.")
    if not _real_float(dtype):
        raise ValueError("[from_fp8] Only real floating types are supported but dtype == "
                         f"{dtype.name}.")
    table = array(_TABLE).astype(dtype, stream=stream)
    if x.size == 0:
        return full(x.shape, 0, dtype, stream=stream)
    return take(table, x.astype(dt.int32, stream=stream), stream=stream)
