"""``nn.Embedding``: a lookup table, N(0, 1/dims) initialized."""

from __future__ import annotations

import math
from typing import Optional

from ... import core as mx
from .base import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """Maps integer ids to rows of ``weight`` [num_embeddings, dims]."""

    def __init__(self, num_embeddings: int, dims: int) -> None:
        super().__init__()
        self.weight = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x: mx.array) -> mx.array:
        return self.weight[x]

    def as_linear(self, x: mx.array) -> mx.array:
        """x @ weight^T: the embedding as an output projection (tied weights)."""
        return x @ self.weight.T

    def to_quantized(self, group_size: Optional[int] = None, bits: Optional[int] = None,
                     mode: str = "affine", quantize_input: bool = False) -> Module:
        """A QuantizedEmbedding approximating this layer."""
        from .quantized import QuantizedEmbedding

        if quantize_input:
            raise ValueError("Quantized input is not supported.")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
