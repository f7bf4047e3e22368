"""``nn.init``: initializer factories. Each returns ``initializer(array, ...)`` producing a new
array of the same shape, drawn from the distribution MLX uses (same calls into mx.random, so the
same numbers under the same key)."""

from __future__ import annotations

import math
from typing import Callable, Literal

from .. import core as mx

__all__ = ["constant", "normal", "uniform", "identity", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "sparse", "orthogonal"]

Initializer = Callable[..., mx.array]


def constant(value: float, dtype: mx.Dtype = mx.float32) -> Initializer:
    """Every element ``value``."""
    def initializer(a: mx.array) -> mx.array:
        return mx.full(a.shape, value, dtype=dtype)
    return initializer


def normal(mean: float = 0.0, std: float = 1.0, dtype: mx.Dtype = mx.float32) -> Initializer:
    """N(mean, std^2)."""
    def initializer(a: mx.array) -> mx.array:
        return mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)
    return initializer


def uniform(low: float = 0.0, high: float = 1.0, dtype: mx.Dtype = mx.float32) -> Initializer:
    """U(low, high)."""
    def initializer(a: mx.array) -> mx.array:
        return mx.random.uniform(low, high, a.shape, dtype=dtype)
    return initializer


def identity(dtype: mx.Dtype = mx.float32) -> Initializer:
    """The identity matrix (square 2-D arrays only)."""
    def initializer(arr: mx.array) -> mx.array:
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ValueError(f"The input array must be a square matrix but got shape "
                             f"{arr.shape}.")
        return mx.eye(n=arr.shape[0], dtype=dtype)
    return initializer


def _fans(x: mx.array) -> tuple[int, int]:
    """(fan_in, fan_out): last and first dims, times the receptive field (middle dims)."""
    if x.ndim < 2:
        raise ValueError("Glorot / He initialization requires at least 2 dimensional input but "
                         f"input with {x.ndim} dimensions.")
    receptive = math.prod(x.shape[1:-1]) if x.ndim > 2 else 1
    return x.shape[-1] * receptive, x.shape[0] * receptive


def _fan(a: mx.array, mode: str) -> int:
    fan_in, fan_out = _fans(a)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"Invalid mode: {mode}. Valid modes are: fan_in, fan_out")


def glorot_normal(dtype: mx.Dtype = mx.float32) -> Initializer:
    """N(0, gain^2 * 2 / (fan_in + fan_out))."""
    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a)
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)
    return initializer


def glorot_uniform(dtype: mx.Dtype = mx.float32) -> Initializer:
    """U(-l, l), l = gain * sqrt(6 / (fan_in + fan_out))."""
    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a)
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)
    return initializer


def he_normal(dtype: mx.Dtype = mx.float32) -> Initializer:
    """N(0, (gain / sqrt(fan))^2), fan = fan_in or fan_out."""
    def initializer(a: mx.array, mode: Literal["fan_in", "fan_out"] = "fan_in",
                    gain: float = 1.0) -> mx.array:
        std = gain / math.sqrt(_fan(a, mode))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)
    return initializer


def he_uniform(dtype: mx.Dtype = mx.float32) -> Initializer:
    """U(-l, l), l = gain * sqrt(3 / fan)."""
    def initializer(a: mx.array, mode: Literal["fan_in", "fan_out"] = "fan_in",
                    gain: float = 1.0) -> mx.array:
        limit = gain * math.sqrt(3.0 / _fan(a, mode))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)
    return initializer


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0,
           dtype: mx.Dtype = mx.float32) -> Initializer:
    """N(mean, std^2) with ceil(sparsity * columns) entries of each row set to zero."""
    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError("Only tensors with 2 dimensions are supported")
        rows, cols = a.shape
        num_zeros = int(math.ceil(sparsity * cols))
        order = mx.argsort(mx.random.uniform(shape=a.shape), axis=1)
        out = mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)
        out[mx.arange(rows).reshape(rows, 1), order[:, :num_zeros]] = 0
        return out
    return initializer


def orthogonal(gain: float = 1.0, dtype: mx.Dtype = mx.float32) -> Initializer:
    """A (semi-)orthogonal matrix from the QR of a normal matrix, times ``gain``."""
    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError("Orthogonal initialization requires a 2D array but got a "
                             f"{a.ndim}D array.")
        rows, cols = a.shape
        n = max(rows, cols)
        q, r = mx.linalg.qr(mx.random.normal(shape=(n, n)), stream=mx.cpu)
        q = q * mx.sign(mx.diag(r))
        return (q[:rows, :cols] * gain).astype(dtype)
    return initializer


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.nn.init', not our module path
    raise AttributeError(f"module 'mlx.nn.init' has no attribute {name!r}")
