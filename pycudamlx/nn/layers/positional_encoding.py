"""RoPE, SinusoidalPositionalEncoding, ALiBi."""

from __future__ import annotations

import math
from typing import Optional

from ... import core as mx
from .base import Module

__all__ = ["ALiBi", "RoPE", "SinusoidalPositionalEncoding"]


class RoPE(Module):
    """Rotary positional encoding of the first ``dims`` features (mx.fast.rope)."""

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000,
                 scale: float = 1.0) -> None:
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: mx.array, offset: int = 0) -> mx.array:
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base,
                            scale=self.scale, offset=offset)


class SinusoidalPositionalEncoding(Module):
    """sin/cos features of ``x`` at ``dims // 2`` frequencies log-spaced from max_freq down to
    min_freq."""

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1,
                 scale: Optional[float] = None, cos_first: bool = False,
                 full_turns: bool = False) -> None:
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError("[SinusoidalPositionalEncoding] dims must be positive and even but "
                             f"got {dims}.")
        half = dims // 2
        one_zero = mx.array([1.0]) if dims == 2 else 1 - mx.arange(0, half) / (half - 1)
        lo, hi = math.log(min_freq), math.log(max_freq)
        self._sigmas = mx.exp(one_zero * (hi - lo) + lo)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = scale if scale is not None else (2 / dims) ** 0.5
        self.cos_first = cos_first

    def __call__(self, x: mx.array) -> mx.array:
        y = x[..., None] * self._sigmas
        parts = [mx.cos(y), mx.sin(y)] if self.cos_first else [mx.sin(y), mx.cos(y)]
        y = mx.concatenate(parts, axis=-1)
        if self.scale != 1:
            y = y * self.scale
        return y


class ALiBi(Module):
    """Adds attention-with-linear-biases to attention scores [B, heads, Lq, Lk]."""

    @staticmethod
    def create_alibi_matrix(q_sequence_length: int, k_sequence_length: int, num_heads: int,
                            offset: int = 0, dtype: mx.Dtype = mx.float32) -> mx.array:
        x1 = mx.arange(offset, q_sequence_length)
        x2 = mx.arange(0, k_sequence_length)
        distance = -mx.abs(mx.expand_dims(x1[:, None] - x2[None, :], axis=(0, 1)))
        slope = ALiBi.create_alibi_slope(num_heads=num_heads, dtype=dtype)
        return (distance * slope).astype(dtype)

    @staticmethod
    def create_alibi_slope(num_heads: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        def slopes(n: int) -> list:
            if math.log2(n).is_integer():
                start = 2 ** (-2 ** (-(math.log2(n) - 3)))
                return [start * start**i for i in range(n)]
            p2 = 2 ** math.floor(math.log2(n))
            return slopes(p2) + slopes(2 * p2)[0::2][:n - p2]

        return mx.expand_dims(mx.array(slopes(num_heads), dtype=dtype), axis=(-1, -2))

    def __call__(self, attention_scores: mx.array, offset: int = 0,
                 mask: Optional[mx.array] = None) -> mx.array:
        bias = ALiBi.create_alibi_matrix(
            q_sequence_length=attention_scores.shape[-2] + offset,
            k_sequence_length=attention_scores.shape[-1], num_heads=attention_scores.shape[1],
            offset=offset, dtype=attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
