"""Launchers for mx.random (random.cu): threefry bits, the fused uniform, categorical's argmax
and inverse CDF, and the bitonic argsort behind permutation.

Keys are read on the GPU (key[0], key[stride]), so a lazily split key never visits the host.
Outputs are fresh contiguous arrays; inputs that are not contiguous are copied first.
"""

from __future__ import annotations

from typing import Any

from ... import dtypes as dt
from . import array as gpu_array, compiler, registry
from .elementwise import BLOCK, _ptr, _record_write, copy
from .launch import grid_for
from .stream import CudaStream

_module = compiler.module_for
#: bitonic_local sorts tiles of 2 * _LOCAL_THREADS keys (8 KiB of shared memory).
_LOCAL_THREADS = 512


def _size(shape: Any) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _contiguous(x: Any, stream: CudaStream) -> Any:
    if tuple(x.strides) == gpu_array.contiguous_strides(tuple(x.shape)) or _size(x.shape) <= 1:
        return x
    out = gpu_array.empty(tuple(x.shape), x.dtype, stream)
    copy(x, out, stream)
    return out


def _key(key: Any) -> tuple[int, int]:
    return _ptr(key), int(key.strides[0]) if key.strides else 1


def bits(key: Any, out: Any, width: int, stream: CudaStream) -> None:
    """out (uint8/16/32, contiguous) = MLX's threefry bits for ``key``."""
    nbytes = _size(out.shape) * width
    if nbytes:
        words = (nbytes + 3) // 4
        pairs = words // 2 + words % 2
        kp, ks = _key(key)
        mod = _module(registry.random_bits_module, (), stream.device)
        mod["random_bits"](grid_for(pairs, BLOCK, stream.device), BLOCK, stream, kp, ks,
                           _ptr(out), nbytes)
    _record_write(out, stream)


def uniform(key: Any, out: Any, low: float, range_: float, upper: float,
            stream: CudaStream) -> None:
    """out = range * min(bits / (2**32 - 1), upper) + low, rounded as MLX rounds each step."""
    n = _size(out.shape)
    if n:
        pairs = n // 2 + n % 2
        kp, ks = _key(key)
        name = out.dtype.name
        mod = _module(registry.random_module, (name,), stream.device)
        affine = 0 if (range_ == 1.0 and low == 0.0) else 1
        mod[f"random_uniform<{out.dtype.c_type}>"](
            grid_for(pairs, BLOCK, stream.device), BLOCK, stream, kp, ks, _ptr(out), n,
            float(low), float(range_), float(upper), affine)
    _record_write(out, stream)


def normal(key: Any, out: Any, low: float, range_: float, upper: float, applied: float,
           loc: float | None, stream: CudaStream) -> None:
    """out = loc + applied * erfinv(uniform(low, low + range)), rounded as MLX's chain."""
    n = _size(out.shape)
    if n:
        pairs = n // 2 + n % 2
        kp, ks = _key(key)
        mod = _module(registry.random_module, (out.dtype.name,), stream.device)
        mod[f"random_normal<{out.dtype.c_type}>"](
            grid_for(pairs, BLOCK, stream.device), BLOCK, stream, kp, ks, _ptr(out), n,
            float(low), float(range_), float(upper), float(applied),
            0.0 if loc is None else float(loc), 0 if loc is None else 1)
    _record_write(out, stream)


def randint(key: Any, out: Any, low: float, range_: float, upper: float, hi1: int, lo: int,
            stream: CudaStream) -> None:
    """out = max(min(floor(range * unit + low), hi1), lo) (MLX 0.32.4's randint)."""
    n = _size(out.shape)
    if n:
        pairs = n // 2 + n % 2
        kp, ks = _key(key)
        mod = _module(registry.random_module, (out.dtype.name,), stream.device)
        affine = 0 if (range_ == 1.0 and low == 0.0) else 1
        mask, sign = (1 << 64) - 1, 1 << 63
        hi1_bits = ((hi1 & mask) ^ sign) - sign  # the value's bits as a signed 64-bit argument
        lo_bits = ((lo & mask) ^ sign) - sign
        mod[f"random_randint<{out.dtype.c_type}>"](
            grid_for(pairs, BLOCK, stream.device), BLOCK, stream, kp, ks, _ptr(out), n,
            float(low), float(range_), float(upper), affine, hi1_bits, lo_bits)
    _record_write(out, stream)


def bernoulli(key: Any, out: Any, thr: float, in_double: bool, stream: CudaStream) -> None:
    """out (bool) = bits < thr, compared in float32 (or float64)."""
    n = _size(out.shape)
    if n:
        pairs = n // 2 + n % 2
        kp, ks = _key(key)
        mod = _module(registry.random_bits_module, (), stream.device)
        mod["random_bernoulli"](grid_for(pairs, BLOCK, stream.device), BLOCK, stream, kp, ks,
                                _ptr(out), n, float(thr), 1 if in_double else 0)
    _record_write(out, stream)


def argmax_axis(x: Any, out: Any, axis: int, stream: CudaStream) -> None:
    """out (uint32) = the first index of the maximum of ``x`` along ``axis``."""
    n = _size(out.shape)
    if n:
        shape = tuple(x.shape)
        k = shape[axis]
        if k == 0:
            raise ValueError("[argmax] Cannot argmax over an empty axis.")
        name = x.dtype.name
        if name not in registry.RANDOM_ARGMAX_DTYPES:
            cast = gpu_array.empty(shape, dt.float32, stream)
            copy(x, cast, stream)
            x = cast
        x = _contiguous(x, stream)
        inner = _size(shape[axis + 1:])
        outer = _size(shape[:axis])
        mod = _module(registry.random_module, (x.dtype.name,), stream.device)
        mod[f"argmax_axis<{x.dtype.c_type}>"](grid_for(n, BLOCK, stream.device), BLOCK, stream,
                                              _ptr(x), _ptr(out), outer, k, inner)
    _record_write(out, stream)


def argsort_u32(bits_: Any, out: Any, stream: CudaStream) -> None:
    """out (uint32) = the stable argsort of the 1-D uint32 ``bits_``: a bitonic sort of the
    unique keys bits << 32 | index (global passes for long strides, shared-memory tiles for the
    rest)."""
    n = _size(out.shape)
    if n:
        bits_ = _contiguous(bits_, stream)
        p = 1
        while p < n:
            p *= 2
        span = 2 * _LOCAL_THREADS
        if p < span:
            p = span
        keys = gpu_array.empty((p,), dt.uint64, stream)
        mod = _module(registry.random_bits_module, (), stream.device)
        dev = stream.device
        grid = grid_for(p, BLOCK, dev)
        mod["bitonic_init"](grid, BLOCK, stream, _ptr(bits_), _ptr(keys), n, p)
        step, local = mod["bitonic_step"], mod["bitonic_local"]
        tiles = p // span
        k = 2
        while k <= p:
            j = k // 2
            while j >= span:
                step(grid, BLOCK, stream, _ptr(keys), p, j, k)
                j //= 2
            local(tiles, _LOCAL_THREADS, stream, _ptr(keys), p, k, j,
                  shared_bytes=8 * span)
            k *= 2
        mod["bitonic_extract"](grid_for(n, BLOCK, dev), BLOCK, stream, _ptr(keys), _ptr(out), n)
    _record_write(out, stream)


def categorical_icdf(logits: Any, u: Any, out: Any, stream: CudaStream) -> None:
    """out (uint32) = upper_bound(cdf, u * cdf[-1]) clipped to n - 1, cdf the float32 running
    sum of exp(logits - max(logits))."""
    m = _size(out.shape)
    n = _size(logits.shape)
    if m:
        logits = _contiguous(logits, stream)
        u = _contiguous(u, stream)
        dev = stream.device
        mod = _module(registry.random_bits_module, (), dev)
        if n == 0:
            raise ValueError("[categorical] Cannot sample from an empty distribution.")
        cdf = gpu_array.empty((n,), dt.float32, stream)
        mod["categorical_cdf"](1, 1, stream, _ptr(logits), _ptr(cdf), n)
        mod["categorical_search"](grid_for(m, BLOCK, dev), BLOCK, stream, _ptr(cdf), _ptr(u),
                                  _ptr(out), n, m)
    _record_write(out, stream)
