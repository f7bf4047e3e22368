"""``mx.random``: MLX's counter-based random numbers, the same numbers as MLX for the same key.

Every sampler is MLX's composition over ``bits`` (threefry2x32, see graph/primitives/random.py),
so a seeded script gives MLX's numbers on the CPU and on the GPU: uniform, randint, bernoulli and
permutation bit for bit; normal and truncated_normal nearly so on the CPU (MLX's erf/erfinv
approximations, see backend/optable.py), the samplers built on log/log1p and the GPU within a few
ulps. The global key behaves as
MLX's: ``seed(s)`` sets it to ``key(s)``, and each op without ``key=`` splits it, keeps the first
half and draws with the second. Uniform draws with scalar bounds run as one fused kernel.
"""

from __future__ import annotations

import math
import operator
import threading
import time
from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.primitives import random as rp
from ..graph.primitives.elementwise import cast_numpy
from . import device as dev
from ._base import as_array, astype
from ._nanobind import argument_error
from .array import array, from_data, make
from .elementwise import (
    abs as _abs, add, divide, erf, erfinv, floor, less, log, log1p, maximum, minimum, multiply,
    negative, sign, subtract,
)
from .shape import broadcast_shapes, expand_dims, fmt_shape

__all__ = [
    "seed", "key", "split", "uniform", "normal", "randint", "bernoulli", "truncated_normal",
    "categorical", "gumbel", "laplace", "permutation", "multivariate_normal", "state",
]

_U64 = 1 << 64
_SQRT2 = math.sqrt(2.0)
#: nextafter(-1.0f, 0.0f): the low end of the (-1, 1) draw behind normal and laplace.
_NEG_ONE_UP = float(np.nextafter(np.float32(-1), np.float32(0)))
#: nextafter(float32(UINT32_MAX), +inf): bernoulli's scale for p, so p >= 1 is always true.
_BERNOULLI_UPPER = float(np.nextafter(np.float32(4294967295.0), np.float32(np.inf)))
_UNIFORM_DTYPES = ("float32", "float16", "bfloat16")


# ------------------------------------------------------------------------------------------------
# Keys and the global key sequence


def _seed_value(value: Any, fn: str) -> int:
    """A Python int in [0, 2**64) (nanobind's uint64_t conversion; TypeError otherwise)."""
    sig = f"{fn}(seed: int) -> " + ("None" if fn == "seed" else "mlx.core.array")
    if isinstance(value, (float, complex, str, bytes, array)) or value is None:
        raise dt._incompatible_arguments(sig, value)
    try:
        v = operator.index(value)
    except TypeError:
        raise dt._incompatible_arguments(sig, value) from None
    if not 0 <= v < _U64:
        raise dt._incompatible_arguments(sig, value)
    return v


def _key_words(seed_: int) -> np.ndarray:
    return np.array([seed_ >> 32, seed_ & 0xFFFFFFFF], np.uint32)


class _RandomState:
    """``mx.random.state``: the list-like holder of the global key (one uint32[2] array)."""

    __slots__ = ("_words", "_array", "_lock", "_log")

    def __init__(self, seed_: int) -> None:
        self._words = _key_words(seed_)
        self._array: array | None = None
        self._lock = threading.Lock()
        #: While mx.compile records a body that captures the state: the keys handed out, in
        #: order (a replay hands out fresh keys in their place).
        self._log: list | None = None

    def _set(self, words: np.ndarray) -> None:
        self._words = words
        self._array = None

    def _next(self) -> array:
        """MLX's KeySequence::next: split the key, keep the first half, return the second."""
        with self._lock:
            keep, use = rp.split_scalar(int(self._words[0]), int(self._words[1]))
            self._set(np.array(keep, np.uint32))
            key = from_data(np.array(use, np.uint32), dt.uint32)
            if self._log is not None:
                self._log.append(key)
            return key

    def __getitem__(self, i: int) -> array:
        if i not in (0, -1):
            raise IndexError("list index out of range")
        a = self._array
        if a is None:
            a = self._array = from_data(self._words.copy(), dt.uint32)
        return a

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Any:
        yield self[0]

    def __repr__(self) -> str:
        return f"[{self[0]!r}]"


#: The global key; MLX seeds it from the clock (milliseconds since the epoch).
state = _RandomState(int(time.time() * 1000) % _U64)


def seed(seed: int) -> None:  # noqa: F811 - MLX's parameter name
    """Seed the global PRNG: the global key becomes ``key(seed)``."""
    state._set(_key_words(_seed_value(seed, "seed")))


def key(seed: int) -> array:  # noqa: F811
    """A PRNG key from a seed: uint32 ``[seed >> 32, seed & 0xffffffff]``."""
    return from_data(_key_words(_seed_value(seed, "key")), dt.uint32)


def _check_key(k: Any) -> array:
    if not isinstance(k, array):
        from ._nanobind import outer_argument_error

        raise outer_argument_error("key must be an mlx.core.array (a uint32 array of shape (2,)) "
                                   f"or None, not {type(k).__name__}")
    if k._dtype is not dt.uint32:
        raise ValueError(f"[bits] Expected key type uint32 but received {k._dtype.name}.")
    if k._shape != (2,):
        raise ValueError(f"[bits] Expected key shape (2) but received {fmt_shape(k._shape)}.")
    return k


def _resolve_key(k: Any) -> array:
    """The key an op draws with: the caller's (checked), or the next one of the global key."""
    return state._next() if k is None else _check_key(k)


def _take_key(k: Any) -> Any:
    """MLX's bindings take the next global key before anything else, so a sampler called
    without ``key=`` advances the global key even when it then raises."""
    return state._next() if k is None else k


def _check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(operator.index(e) for e in shape)
    if any(e < 0 for e in shape):
        raise ValueError("[bits] Negative dimensions not allowed.")
    return shape


def _bits(shape: Sequence[int], width: int, k: Any, s: dev.Stream) -> array:
    """mx.random.bits (MLX's C++ ``random::bits``): uint8/16/32 threefry bits."""
    k = _resolve_key(k)
    shape = _check_shape(shape)
    return make(rp.RandomBits(width), (k,), shape, rp._BITS_DTYPES[width], s)


def split(key: array, num: int = 2, stream: Any = None) -> array:  # noqa: F811
    """Split a PRNG key into ``num`` sub keys: a (num, 2) uint32 array."""
    s = dev.resolve_stream(stream)
    try:
        n = operator.index(num)
    except TypeError:
        from ._nanobind import _RANDOM_SPLIT

        raise argument_error("split", f"split(): num must be an int, not "
                                      f"{type(num).__name__}", _RANDOM_SPLIT) from None
    return _bits((n, 2), 4, _check_key(key), s)


# ------------------------------------------------------------------------------------------------
# Samplers


def _shape_tuple(shape: Any, fn: str) -> tuple[int, ...]:
    """A ``Sequence[int]`` shape as MLX's bindings read it (an array is the sequence of its
    elements); anything else is nanobind's TypeError (``mx.random.normal(3)``)."""
    try:
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise TypeError
        return tuple(operator.index(e) for e in shape)
    except TypeError:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: shape must be a "
                                 f"sequence of ints, got {type(shape).__name__}") from None


def _int_param(value: Any, name: str, fn: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {name} must be an "
                                 f"int, got {type(value).__name__}") from None


def _dtype_arg(dtype: Any, fn: str) -> dt.Dtype:
    if dtype is None:
        return dt.float32
    try:
        return dt.to_dtype(dtype, fn)
    except TypeError as e:
        raise argument_error(fn, e) from None


def _float_param(value: Any, name: str, fn: str) -> float:
    """nanobind's float: anything with __float__ or __index__ (an mx.array scalar too), not a
    str."""
    t = type(value)
    if isinstance(value, (str, bytes)) or not (hasattr(t, "__float__") or hasattr(t, "__index__")):
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {name} must be a "
                                 f"float, got {t.__name__}")
    return float(value)


def _array_param(value: Any, fn: str, *values: Any) -> None:
    """nanobind's ``array`` parameters take mx.array only (no lists, numpy arrays, scalars)."""
    if not isinstance(value, array) or not all(isinstance(v, array) for v in values):
        raise argument_error(fn, f"{fn}(): incompatible function arguments: expected mx.array "
                                 f"arguments, got {type(value).__name__}")


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


_scalar_cache: dict[tuple, Any] = {}


def _scalar_in(x: Any, dtype: dt.Dtype) -> Any:
    """A Python scalar converted as MLX converts it (int -> int32, float -> float32) and then
    cast to ``dtype``, as a numpy scalar (cached: bounds repeat from call to call)."""
    key = (type(x), x, dtype)
    v = _scalar_cache.get(key)
    if v is None:
        v = cast_numpy(np.asarray(as_array(x)._numpy()), dtype)[()]
        if len(_scalar_cache) > 1024:
            _scalar_cache.clear()
        _scalar_cache[key] = v
    return v


def _uniform(low: Any, high: Any, shape: tuple[int, ...], dtype: dt.Dtype, k: Any,
             s: dev.Stream) -> array:
    """MLX's random::uniform (dtype already checked to be a real floating type)."""
    if _is_scalar(low) and _is_scalar(high):
        lo = _scalar_in(low, dtype)
        with np.errstate(all="ignore"):
            rng = _scalar_in(high, dtype) - lo
        if dtype.name not in _UNIFORM_DTYPES:
            raise RuntimeError("[uniform] Unsupported type.")
        k = _resolve_key(k)
        shape = _check_shape(shape)
        return make(rp.RandomUniform(float(lo), float(rng)), (k,), shape, dtype, s)
    lo = astype(as_array(low), dtype, s)
    hi = astype(as_array(high), dtype, s)
    rng = subtract(hi, lo, stream=s)
    out_shape = broadcast_shapes(shape, rng._shape)
    if out_shape != shape:
        raise ValueError(f"[uniform] Cannot generate random values of shape {fmt_shape(shape)} "
                         f"from broadcasted shape {fmt_shape(out_shape)}.")
    if dtype.name not in _UNIFORM_DTYPES:
        raise RuntimeError("[uniform] Unsupported type.")
    k = _resolve_key(k)
    shape = _check_shape(shape)
    unit = make(rp.RandomUniform(0.0, 1.0), (k,), shape, dtype, s)
    return add(multiply(rng, unit, stream=s), lo, stream=s)


def uniform(low: Any = 0, high: Any = 1, shape: Sequence[int] = (), dtype: Any = dt.float32,
            key: array | None = None, stream: Any = None) -> array:  # noqa: F811
    """Uniform samples in [low, high) (bounds broadcast to ``shape``)."""
    key = _take_key(key)
    dtype = _dtype_arg(dtype, "uniform")
    if dtype.kind != "f":
        raise ValueError("[uniform] Can only generate uniform numbers with real floating point "
                         "type.")
    s = dev.resolve_stream(stream)
    return _uniform(low, high, _shape_tuple(shape, "uniform"), dtype, key, s)


def _unit_pm1(shape: tuple[int, ...], k: Any, s: dev.Stream) -> array:
    """uniform(nextafter(-1, 0), 1) in float32: the draw behind normal and laplace."""
    return _uniform(_NEG_ONE_UP, 1.0, shape, dt.float32, k, s)


def _as_dtype_array(x: Any, dtype: dt.Dtype, s: dev.Stream) -> array:
    return astype(as_array(x), dtype, s)


def normal(shape: Sequence[int] = (), dtype: Any = dt.float32, loc: Any = None,
           scale: Any = None, key: array | None = None, stream: Any = None) -> array:  # noqa: F811
    """Normal samples: sqrt(2) * erfinv(u) for u uniform in (-1, 1), times ``scale`` plus
    ``loc`` (complex64: real and imaginary parts N(0, 1/2))."""
    key = _take_key(key)
    dtype = _dtype_arg(dtype, "normal")
    s = dev.resolve_stream(stream)
    shape = _shape_tuple(shape, "normal")
    if dtype is dt.complex64:
        u = _unit_pm1(shape + (2,), key, s)
        pair = erfinv(u, stream=s)
        re = pair[..., 0]
        im = pair[..., 1]
        samples = add(astype(re, dt.complex64, s),
                      multiply(astype(im, dt.complex64, s), 1j, stream=s), stream=s)
        if scale is not None:
            samples = multiply(as_array(scale), samples, stream=s)
        if loc is not None:
            samples = add(as_array(loc), samples, stream=s)
        return samples
    if dtype.kind != "f":
        raise ValueError("[normal] Only floating point and complex64 types are supported.")
    if (loc is None or _is_scalar(loc)) and (scale is None or _is_scalar(scale)):
        # One fused draw (its numbers are the composition's below, on both backends).
        lo = _scalar_in(_NEG_ONE_UP, dt.float32)
        rng = _scalar_in(1.0, dt.float32) - lo
        applied = np.array(_SQRT2).astype(dtype.np_dtype)[()]
        if scale is not None:
            with np.errstate(all="ignore"):
                applied = applied * _scalar_in(scale, dtype)
        loc_v = None if loc is None else float(_scalar_in(loc, dtype))
        k = _resolve_key(key)
        shape = _check_shape(shape)
        return make(rp.RandomNormal(float(lo), float(rng), float(applied), loc_v), (k,), shape,
                    dtype, s)
    u = _unit_pm1(shape, key, s)
    applied = from_data(np.array(_SQRT2, dt.float64.np_dtype).astype(dtype.np_dtype), dtype)
    if scale is not None:
        applied = multiply(applied, _as_dtype_array(scale, dtype, s), stream=s)
    samples = astype(erfinv(u, stream=s), dtype, s)
    samples = multiply(applied, samples, stream=s)
    if loc is not None:
        samples = add(_as_dtype_array(loc, dtype, s), samples, stream=s)
    return samples


def randint(low: Any, high: Any, shape: Sequence[int] = (), dtype: Any = dt.int32,
            key: array | None = None, stream: Any = None) -> array:  # noqa: F811
    """Integers in [low, high): floor of a float32 uniform draw, clamped to [low, high - 1]
    (MLX 0.32.4's method, so bounds beyond 2**24 inherit float32's resolution)."""
    key = _take_key(key)
    dtype = dt.int32 if dtype is None else dt.to_dtype(dtype, "randint")
    if dtype.kind in "fc":
        raise ValueError("[randint] randint only accepts integer dtypes and bool.")
    s = dev.resolve_stream(stream)
    shape = _shape_tuple(shape, "randint")
    lo_a = as_array(low)
    hi_a = as_array(high)
    if _is_scalar(low) and _is_scalar(high) and dtype is not dt.bool_:
        # One fused draw (the composition's numbers below, on both backends).
        lo_f = _scalar_in(low, dt.float32)
        with np.errstate(all="ignore"):
            rng_f = _scalar_in(high, dt.float32) - lo_f
            h = np.asarray(hi_a._numpy())
            hi1 = cast_numpy(np.subtract(h, np.ones((), h.dtype)), dtype)[()]
        lo_d = cast_numpy(np.asarray(lo_a._numpy()), dtype)[()]
        k = _resolve_key(key)
        shape = _check_shape(shape)
        return make(rp.RandomRandint(float(lo_f), float(rng_f), int(hi1), int(lo_d)), (k,),
                    shape, dtype, s)
    u = _uniform(low if _is_scalar(low) else lo_a, high if _is_scalar(high) else hi_a, shape,
                 dt.float32, key, s)
    out = astype(floor(u, stream=s), dtype, s)
    one = from_data(np.ones((), hi_a._dtype.np_dtype), hi_a._dtype)
    hi1 = astype(subtract(hi_a, one, stream=s), dtype, s)
    return maximum(minimum(out, hi1, stream=s), astype(lo_a, dtype, s), stream=s)


def bernoulli(p: Any = 0.5, shape: Sequence[int] | None = None, key: array | None = None,
              stream: Any = None) -> array:  # noqa: F811
    """Booleans that are true with probability ``p``: bits < p * nextafter(2**32 - 1, inf)."""
    key = _take_key(key)
    s = dev.resolve_stream(stream)
    shape_t = None if shape is None else _shape_tuple(shape, "bernoulli")  # binding check first
    p_scalar = _is_scalar(p)
    p = as_array(p)
    if p._dtype.kind != "f":
        raise ValueError("[bernoulli] bernoulli probability `p` must be a float type.")
    shape = p._shape if shape_t is None else shape_t
    if p_scalar:
        # One fused draw (dropout's case): bits < p * upper in float32 (float64 for float64 p).
        dtype = dt.promote_types(p._dtype, dt.float32)
        pv = np.asarray(p._numpy()).astype(dtype.np_dtype)
        with np.errstate(all="ignore"):
            thr = pv * np.array(_BERNOULLI_UPPER, np.float32).astype(dtype.np_dtype)
        k = _resolve_key(key)
        shape = _check_shape(shape)
        return make(rp.RandomBernoulli(float(thr), dtype is dt.float64), (k,), shape, dt.bool_,
                    s)
    b = _bits(shape, 4, key, s)
    upper = from_data(np.array(_BERNOULLI_UPPER, np.float32), dt.float32)
    res = less(b, multiply(p, upper, stream=s), stream=s)
    if res._shape != shape:
        raise ValueError("[bernoulli] shape of `p` is incompatible with argument `shape`.")
    return res


def truncated_normal(lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = dt.float32, key: array | None = None,
                     stream: Any = None) -> array:  # noqa: F811
    """Normal samples restricted to (lower, upper), by inverting the CDF (JAX's method)."""
    key = _take_key(key)
    dtype = _dtype_arg(dtype, "truncated_normal")
    if dtype.kind != "f":
        raise ValueError("[trunc_normal] trunc_normal only accepts floating point dtypes.")
    s = dev.resolve_stream(stream)
    lower_a, upper_a = as_array(lower), as_array(upper)
    if shape is None:
        shape = broadcast_shapes(lower_a._shape, upper_a._shape)
    shape = _shape_tuple(shape, "truncated_normal")
    sqrt2 = from_data(np.array(_SQRT2).astype(dtype.np_dtype), dtype)
    lower_t = astype(lower_a, dtype, s)
    upper_t = astype(upper_a, dtype, s)
    a = erf(divide(lower_t, sqrt2, stream=s), stream=s)
    b = erf(divide(upper_t, sqrt2, stream=s), stream=s)
    u = _uniform(a, b, shape, dtype, key, s)
    out = multiply(sqrt2, erfinv(u, stream=s), stream=s)
    return maximum(minimum(upper_t, out, stream=s), lower_t, stream=s)


def gumbel(shape: Sequence[int] = (), dtype: Any = dt.float32, key: array | None = None,
           stream: Any = None) -> array:  # noqa: F811
    """Standard Gumbel samples: -log(-log(u))."""
    key = _take_key(key)
    dtype = _dtype_arg(dtype, "gumbel")
    if dtype.kind != "f":
        raise ValueError("[uniform] Can only generate uniform numbers with real floating point "
                         "type.")
    s = dev.resolve_stream(stream)
    u = _uniform(0, 1, _shape_tuple(shape, "gumbel"), dtype, key, s)
    return negative(log(negative(log(u, stream=s), stream=s), stream=s), stream=s)


def laplace(shape: Sequence[int] = (), dtype: Any = dt.float32, loc: float = 0.0,
            scale: float = 1.0, key: array | None = None, stream: Any = None) -> array:  # noqa
    """Laplace samples by the inverse CDF: sign(u) * log1p(-|u|), u uniform in (-1, 1)."""
    loc = _float_param(loc, "loc", "laplace")
    scale = _float_param(scale, "scale", "laplace")
    key = _take_key(key)
    dtype = _dtype_arg(dtype, "laplace")
    if dtype.kind != "f":
        raise ValueError("[laplace] Only real floating point types are supported.")
    s = dev.resolve_stream(stream)
    u = _unit_pm1(_shape_tuple(shape, "laplace"), key, s)
    # MLX multiplies by -1 as an array of the output dtype: a float64 draw takes its log1p in
    # float64 (the float32 uniform promoted), the others in float32.
    minus_one = from_data(np.array(-1.0).astype(dtype.np_dtype), dtype)
    samples = multiply(sign(u, stream=s),
                       log1p(multiply(minus_one, _abs(u, stream=s), stream=s), stream=s),
                       stream=s)
    samples = astype(samples, dtype, s)
    if scale != 1.0:
        samples = multiply(from_data(np.array(scale, np.float32).astype(dtype.np_dtype), dtype),
                           samples, stream=s)
    if loc != 0.0:
        samples = add(from_data(np.array(loc, np.float32).astype(dtype.np_dtype), dtype),
                      samples, stream=s)
    return samples


def _categorical_axis(axis: int, ndim: int) -> int:
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim:
        raise IndexError(f"[categorical] Invalid axis {axis} for logits with {ndim} dimensions.")
    return ax


def _categorical_impl(logits: array, axis: int, shape: tuple[int, ...], k: Any,
                      s: dev.Stream) -> array:
    n_dists = 1
    for i, e in enumerate(logits._shape):
        if i != axis:
            n_dists *= e
    if n_dists * logits._shape[axis] == 0:
        raise ValueError("[argmax] Cannot argmax reduce zero size array.")
    if n_dists == 1 and len(shape) > 0:
        # MLX 0.32.4 samples one distribution by inverting its float32 CDF (O(N + M)) whenever
        # the result is not a scalar, also for a plain call on (1, V) logits (decoding):
        # cdf = cumsum(exp(l - max(l))), index = searchsorted(cdf, u * cdf[-1], right).
        flat = astype(logits, dt.float32, s).reshape(-1, stream=s)
        u = _uniform(0, 1, shape, dt.float32, k, s)
        return make(rp.CategoricalIcdf(), (flat, u), shape, dt.uint32, s)
    offset = axis + len(shape) - len(logits._shape) + 1
    gshape = shape[:offset] + (logits._shape[axis],) + shape[offset:]
    g = gumbel(gshape, dt.float32, k, s)
    x = add(g, logits, stream=s)
    if any(e == 0 for e in x._shape):
        raise ValueError("[argmax] Cannot argmax reduce zero size array.")
    out_shape = x._shape[:offset] + x._shape[offset + 1:]
    return make(rp.ArgmaxAxis(offset), (x,), out_shape, dt.uint32, s)


def categorical(logits: array, axis: int = -1, shape: Sequence[int] | None = None,
                num_samples: int | None = None, key: array | None = None,
                stream: Any = None) -> array:  # noqa: F811
    """Samples (uint32 indices along ``axis``) from the categorical distributions given by
    unnormalised log-probabilities: argmax(logits + Gumbel noise)."""
    _array_param(logits, "categorical")  # the bindings' checks come first
    axis_i = _int_param(axis, "axis", "categorical")
    n_samples = None if num_samples is None else _int_param(num_samples, "num_samples",
                                                            "categorical")
    key = _take_key(key)
    s = dev.resolve_stream(stream)
    logits = as_array(logits)
    if shape is not None and n_samples is not None:
        raise ValueError("[categorical] At most one of shape or num_samples can be specified.")
    ax = _categorical_axis(axis_i, len(logits._shape))
    if shape is not None:
        shape = _shape_tuple(shape, "categorical")
        reduced = logits._shape[:ax] + logits._shape[ax + 1:]
        if broadcast_shapes(shape, reduced) != shape:
            raise ValueError(f"[categorical] Requested shape {fmt_shape(shape)} is not broadcast "
                             f"compatible with reduced logits shape{fmt_shape(reduced)}.")
        return _categorical_impl(logits, ax, shape, key, s)
    if n_samples is not None:
        logits = expand_dims(logits, -1, stream=s)
        out = list(logits._shape)
        del out[ax]
        out[-1] = n_samples
        return _categorical_impl(logits, ax, tuple(out), key, s)
    reduced = logits._shape[:ax] + logits._shape[ax + 1:]
    return _categorical_impl(logits, ax, reduced, key, s)


def _permutation_indices(n: int, k: Any, s: dev.Stream) -> array:
    b = _bits((n,), 4, k, s)
    return make(rp.ArgsortBits(), (b,), b._shape, dt.uint32, s)


def permutation(x: int | array, axis: int = 0, key: array | None = None,
                stream: Any = None) -> array:  # noqa: F811
    """A random permutation of ``arange(x)``, or of ``x``'s entries along ``axis``: the argsort
    of random bits (stable, so ties keep index order as in MLX)."""
    key = _take_key(key)
    s = dev.resolve_stream(stream)
    if not isinstance(x, array):
        if type(x) is not int and not isinstance(x, bool):
            raise dt._incompatible_arguments(
                "permutation(x: int | array, axis: int = 0, key: array | None = None, "
                "stream: StreamOrDevice = None) -> array", x)
        return _permutation_indices(int(x), key, s)
    ndim = len(x._shape)
    ax = _int_param(axis, "axis", "permutation")
    if not -ndim <= ax < ndim:
        raise IndexError(f"[permutation] Invalid axis {axis} for an array with {ndim} "
                         "dimensions.")
    ax = ax + ndim if ax < 0 else ax
    perm = _permutation_indices(x._shape[ax], key, s)
    return x[(slice(None),) * ax + (perm,)]


def multivariate_normal(mean: array, cov: array, shape: Sequence[int] = (),
                        dtype: Any = dt.float32, key: array | None = None,
                        stream: Any = None) -> array:  # noqa: F811
    """Jointly normal samples: mean + z @ sqrt(cov), the root taken by SVD as MLX does (so,
    like MLX's linalg.svd, on a CPU stream only)."""
    _array_param(mean, "multivariate_normal", cov)  # the bindings' checks come first
    key = _take_key(key)
    dtype = _dtype_arg(dtype, "multivariate_normal")
    s = dev.resolve_stream(stream)
    if dtype is not dt.float32:
        raise ValueError("[multivariate_normal] dtype must be float32.")
    mean, cov = as_array(mean), as_array(cov)
    if len(mean._shape) < 1:
        raise ValueError("[multivariate_normal] mean must have at least one dimension.")
    if len(cov._shape) < 2:
        raise ValueError("[multivariate_normal] cov must have at least two dimensions.")
    n = mean._shape[-1]
    if cov._shape[-1] != cov._shape[-2]:
        raise ValueError("[multivariate_normal] last two dimensions of cov must be equal.")
    if n != cov._shape[-1]:
        raise ValueError("[multivariate_normal] mean and cov must have compatible shapes.")
    out_shape = broadcast_shapes(cov._shape[:-2], mean._shape[:-1])
    out_shape = broadcast_shapes(out_shape, _shape_tuple(shape, "multivariate_normal")) + (n,)
    if s.is_gpu:
        raise ValueError("[linalg::svd] This op is not yet supported on the GPU. Explicitly "
                         "pass a CPU stream to run it.")
    covariance = astype(cov, dt.float32, s)
    root = make(rp.CovarianceRoot(), (covariance,), covariance._shape, dt.float32, s)
    z = normal(out_shape, dtype, 0.0, 1.0, key, s)
    scaled = make(rp.BatchedVecMat(), (z, root), out_shape, dt.float32, s)
    return add(mean, scaled, stream=s)


def __dir__() -> list[str]:
    # dir(mx.random) as MLX shows it: its samplers and _RandomState (state is reached, not
    # listed), not our helpers
    return [n for n in ("__doc__", "__loader__", "__name__", "__package__", "__spec__",
                        "__getattr__") if n in globals()] + sorted(
        [n for n in __all__ if n != "state"] + ["_RandomState"])


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): Module 'random', not our module path
    raise AttributeError(f"Module 'random' has no attribute {name!r}")
