"""Random primitives: MLX's counter-based threefry bits, a fused uniform, and the two reductions
the samplers need (argmax over an axis for categorical, an argsort of bits for permutation).

The bits are MLX's exactly (mlx/backend/cpu RandomBits): threefry2x32 with 20 rounds; for a key
and an output of B bytes, W = ceil(B / 4) 32-bit words, half = W // 2, and counter pair
(i, i + half + W % 2) for i < half gives words i and i + half + W % 2; an odd W takes its middle
word from the pair (half, 0). The words are laid out little-endian and cut to B bytes, so width
1 and 2 outputs are the same byte stream. Both backends compute the same integers; the fused
uniform rounds exactly as MLX's chain of ops (divide, minimum, astype, multiply, add).
"""

from __future__ import annotations

import math

from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive, cuda_modules

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
#: 2**32 - 1 as float32 (it rounds to 2**32): MLX's divisor from bits to [0, 1].
MAXVAL = np.float32(4294967295.0)
#: The largest value below 1 of each dtype, as float32: MLX clamps the unit draw to it.
UPPER = {
    "float32": np.float32(np.nextafter(np.float32(1), np.float32(0))),
    "float16": np.float32(1 - 2.0 ** -11),
    "bfloat16": np.float32(1 - 2.0 ** -8),
}


_cuda = cuda_modules("array", "random")


def threefry2x32(k0: int, k1: int, c0: np.ndarray, c1: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """threefry2x32-20 of the counter pairs (c0, c1) under key (k0, k1), vectorised."""
    u32 = np.uint32
    ks = (u32(k0), u32(k1), u32(k0 ^ k1 ^ _PARITY))
    with np.errstate(over="ignore"):
        x0 = c0.astype(np.uint32) + ks[0]
        x1 = c1.astype(np.uint32) + ks[1]
        t = np.empty_like(x1)
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                np.add(x0, x1, out=x0)
                np.left_shift(x1, u32(r), out=t)      # rotate left in place, no temporaries
                np.right_shift(x1, u32(32 - r), out=x1)
                np.bitwise_or(x1, t, out=x1)
                np.bitwise_xor(x1, x0, out=x1)
            np.add(x0, ks[(i + 1) % 3], out=x0)
            np.add(x1, u32((int(ks[(i + 2) % 3]) + i + 1) & 0xFFFFFFFF), out=x1)
    return x0, x1


def threefry2x32_scalar(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    """threefry2x32-20 of one counter pair in plain Python ints (key splits: no numpy calls)."""
    m = 0xFFFFFFFF
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = (x0 + k0) & m
    x1 = (x1 + k1) & m
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = (x0 + x1) & m
            x1 = ((x1 << r) | (x1 >> (32 - r))) & m
            x1 ^= x0
        x0 = (x0 + ks[(i + 1) % 3]) & m
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & m
    return x0, x1


def split_scalar(k0: int, k1: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """MLX's split(key) into two keys: the 4 words of bits((2, 2)), as two (k0, k1) pairs."""
    a0, a1 = threefry2x32_scalar(k0, k1, 0, 2)
    b0, b1 = threefry2x32_scalar(k0, k1, 1, 3)
    return (a0, b0), (a1, b1)


def bits_words(k0: int, k1: int, words: int) -> np.ndarray:
    """The ``words`` 32-bit words MLX draws for one key."""
    half, odd = words // 2, words % 2
    out = np.empty(words, np.uint32)
    if half:
        i = np.arange(half, dtype=np.uint32)
        a, b = threefry2x32(k0, k1, i, i + np.uint32(half + odd))
        out[:half] = a
        out[half + odd:] = b
    if odd:
        a, _ = threefry2x32(k0, k1, np.array([half], np.uint32), np.zeros(1, np.uint32))
        out[half] = a[0]
    return out


def bits_numpy(key: np.ndarray, shape: tuple[int, ...], width: int) -> np.ndarray:
    """mx.random.bits: ``shape`` of uint8/16/32 (``width`` bytes) from one uint32[2] key."""
    n = math.prod(shape)
    nbytes = n * width
    words = bits_words(int(key[0]), int(key[1]), (nbytes + 3) // 4)
    raw = words.view(np.uint8)[:nbytes]
    return raw.view(_BITS_DTYPES[width].np_dtype).reshape(shape)


_BITS_DTYPES = {1: dt.uint8, 2: dt.uint16, 4: dt.uint32}


def key_numpy(key: np.ndarray) -> tuple[int, int]:
    return int(key[0]), int(key[1])


def unit_numpy(words: np.ndarray, dtype: dt.Dtype) -> np.ndarray:
    """MLX's unit draw: min(float32(bits) / (2**32 - 1), below_one(dtype)) cast to dtype."""
    with np.errstate(all="ignore"):
        u = words.astype(np.float32)
        np.divide(u, MAXVAL, out=u)
        np.minimum(u, UPPER[dtype.name], out=u)
    return u if dtype is dt.float32 else u.astype(dtype.np_dtype)


def _scalar(value: float, dtype: dt.Dtype) -> Any:
    return np.array(value, np.float32).astype(dtype.np_dtype)[()]


class RandomBits(Primitive):
    """Input: the uint32[2] key. Output: ``shape`` of uint8/uint16/uint32 threefry bits."""

    __slots__ = ("width",)
    name = "random_bits"
    gpu_kernel = True

    def __init__(self, width: int) -> None:
        self.width = width

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, _ = outs[0]
        return [bits_numpy(inputs[0], shape, self.width)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.bits(inputs[0], out, self.width, stream)
        return [out]


class RandomUniform(Primitive):
    """uniform with scalar bounds in one pass: out = range * unit + low, each step rounded in
    the output dtype (``low`` and ``range`` are already values of that dtype)."""

    __slots__ = ("low", "range")
    name = "random_uniform"
    gpu_kernel = True

    def __init__(self, low: float, range_: float) -> None:
        self.low = float(low)
        self.range = float(range_)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        n = math.prod(shape)
        k0, k1 = key_numpy(inputs[0])
        u = unit_numpy(bits_words(k0, k1, n), dtype)
        if self.range != 1.0 or self.low != 0.0:
            with np.errstate(all="ignore"):
                u = _scalar(self.range, dtype) * u + _scalar(self.low, dtype)
        return [np.asarray(u, dtype.np_dtype).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.uniform(inputs[0], out, self.low, self.range, float(UPPER[dtype.name]), stream)
        return [out]


class RandomNormal(Primitive):
    """normal with scalar loc/scale in one pass: u = range * unit + low in float32,
    out = loc + applied * dtype(erfinv(u)), each step rounded in the output dtype (``applied``
    = sqrt(2) * scale and ``loc`` are already values of that dtype; loc None: no add)."""

    __slots__ = ("low", "range", "applied", "loc")
    name = "random_normal"
    gpu_kernel = True

    def __init__(self, low: float, range_: float, applied: float, loc: float | None) -> None:
        self.low = float(low)
        self.range = float(range_)
        self.applied = float(applied)
        self.loc = None if loc is None else float(loc)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        from ...backend import optable
        from .elementwise import cast_numpy

        shape, dtype = outs[0]
        n = math.prod(shape)
        k0, k1 = key_numpy(inputs[0])
        with np.errstate(all="ignore"):
            u = unit_numpy(bits_words(k0, k1, n), dt.float32)
            u = np.float32(self.range) * u + np.float32(self.low)
            t = cast_numpy(optable.OPS["erfinv"].numpy(u), dtype)
            r = _scalar64(self.applied, dtype) * t
            if self.loc is not None:
                r = _scalar64(self.loc, dtype) + r
        return [np.asarray(r, dtype.np_dtype).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.normal(inputs[0], out, self.low, self.range, float(UPPER["float32"]),
                      self.applied, self.loc, stream)
        return [out]


def _scalar64(value: float, dtype: dt.Dtype) -> Any:
    return np.array(value, np.float64).astype(dtype.np_dtype)[()]


class RandomRandint(Primitive):
    """randint with scalar bounds in one pass: u = range * unit + low in float32, out =
    max(min(dtype(floor(u)), hi1), lo) (``hi1`` = dtype(high - 1), ``lo`` = dtype(low), Python
    ints of the dtype's values)."""

    __slots__ = ("low", "range", "hi1", "lo")
    name = "random_randint"
    gpu_kernel = True

    def __init__(self, low: float, range_: float, hi1: int, lo: int) -> None:
        self.low = float(low)
        self.range = float(range_)
        self.hi1 = int(hi1)
        self.lo = int(lo)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        from .elementwise import cast_numpy

        shape, dtype = outs[0]
        n = math.prod(shape)
        k0, k1 = key_numpy(inputs[0])
        with np.errstate(all="ignore"):
            u = unit_numpy(bits_words(k0, k1, n), dt.float32)
            if self.range != 1.0 or self.low != 0.0:
                u = np.float32(self.range) * u + np.float32(self.low)
            v = cast_numpy(np.floor(u), dtype)
        t = dtype.np_dtype.type
        v = np.maximum(np.minimum(v, t(self.hi1)), t(self.lo))
        return [v.reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.randint(inputs[0], out, self.low, self.range, float(UPPER["float32"]), self.hi1,
                       self.lo, stream)
        return [out]


class RandomBernoulli(Primitive):
    """bernoulli with a scalar p in one pass: bits < thr (thr = p * nextafter(2**32 - 1, inf)
    in the comparison dtype: float32, or float64 for a float64 p)."""

    __slots__ = ("thr", "in_double")
    name = "random_bernoulli"
    gpu_kernel = True

    def __init__(self, thr: float, in_double: bool) -> None:
        self.thr = float(thr)
        self.in_double = bool(in_double)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, _ = outs[0]
        n = math.prod(shape)
        k0, k1 = key_numpy(inputs[0])
        w = bits_words(k0, k1, n)
        if self.in_double:
            res = w.astype(np.float64) < self.thr
        else:
            res = w.astype(np.float32) < np.float32(self.thr)
        return [res.reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.bernoulli(inputs[0], out, self.thr, self.in_double, stream)
        return [out]


class ArgmaxAxis(Primitive):
    """Index (uint32) of the first maximum along ``axis`` (categorical's argmax)."""

    __slots__ = ("axis",)
    name = "random_argmax"
    gpu_kernel = True

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, _ = outs[0]
        x = inputs[0]
        if x.shape[self.axis] == 0:
            return [np.zeros(shape, np.uint32)]
        return [np.argmax(x, axis=self.axis).astype(np.uint32).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.argmax_axis(inputs[0], out, self.axis, stream)
        return [out]


class CategoricalIcdf(Primitive):
    """Inputs: one distribution's float32 logits (1-D) and float32 uniforms u. Output: uint32
    searchsorted(cdf, u * cdf[-1], right) clipped to N - 1, cdf = cumsum(exp(l - max(l)))
    accumulated in float32 in order (MLX's single-distribution categorical)."""

    __slots__ = ()
    name = "random_categorical_icdf"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, _ = outs[0]
        v, u = inputs
        n = v.shape[0]
        if n == 0:
            return [np.zeros(shape, np.uint32)]
        with np.errstate(all="ignore"):
            w = np.exp(v - v.max())
            cdf = np.cumsum(w, dtype=np.float32)
            t = (u * cdf[-1]).astype(np.float32)
        idx = np.minimum(np.searchsorted(cdf, t, side="right"), n - 1)
        return [idx.astype(np.uint32).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.categorical_icdf(inputs[0], inputs[1], out, stream)
        return [out]


class ArgsortBits(Primitive):
    """A stable argsort (uint32 indices) of a 1-D uint32 array: permutation's argsort(bits)."""

    __slots__ = ()
    name = "random_argsort"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [np.argsort(inputs[0], kind="stable").astype(np.uint32)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.argsort_u32(inputs[0], out, stream)
        return [out]


class CovarianceRoot(Primitive):
    """U * sqrt(S) @ Vt of a batch of float32 covariance matrices (multivariate_normal), on the
    CPU only, as MLX's linalg.svd."""

    __slots__ = ()
    name = "random_cov_root"

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        c = np.asarray(inputs[0], np.float32)
        u, s, vt = np.linalg.svd(c, full_matrices=True)
        with np.errstate(invalid="ignore"):
            root = (u * np.sqrt(s)[..., None, :]) @ vt
        return [root.astype(np.float32)]


class BatchedVecMat(Primitive):
    """out[..., :] = z[..., :] @ m[..., :, :] with batch broadcasting (float32, CPU only)."""

    __slots__ = ()
    name = "random_vecmat"

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, _ = outs[0]
        z, m = inputs
        r = np.matmul(z[..., None, :], m)[..., 0, :]
        return [np.broadcast_to(r, shape).astype(np.float32)]
