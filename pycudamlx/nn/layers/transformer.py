"""MultiHeadAttention and the Transformer encoder/decoder stacks (MLX's parameter names, so
MLX checkpoints load)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from ... import core as mx
from .activations import relu
from .base import Module
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["MultiHeadAttention", "Transformer", "TransformerDecoder",
           "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer"]


def _split_heads(x: mx.array, num_heads: int) -> mx.array:
    """[B, L, H*D] -> [B, H, L, D]."""
    return mx.unflatten(x, -1, (num_heads, -1)).transpose(0, 2, 1, 3)


class MultiHeadAttention(Module):
    """Scaled dot-product attention over ``num_heads`` heads with input/output projections
    (no bias by default, as MLX)."""

    def __init__(self, dims: int, num_heads: int, query_input_dims: Optional[int] = None,
                 key_input_dims: Optional[int] = None, value_input_dims: Optional[int] = None,
                 value_dims: Optional[int] = None, value_output_dims: Optional[int] = None,
                 bias: bool = False) -> None:
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError("The input feature dimensions should be divisible by the number of "
                             f"heads ({dims} % {num_heads}) != 0")
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def __call__(self, queries: mx.array, keys: mx.array, values: mx.array,
                 mask: Any = None) -> mx.array:
        h = self.num_heads
        q = _split_heads(self.query_proj(queries), h)
        k = _split_heads(self.key_proj(keys), h)
        v = _split_heads(self.value_proj(values), h)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=math.sqrt(1 / q.shape[-1]),
                                                   mask=mask)
        return self.out_proj(out.transpose(0, 2, 1, 3).flatten(-2, -1))

    @staticmethod
    def create_additive_causal_mask(N: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        """[N, N]: 0 on and below the diagonal, the dtype's lowest value above it."""
        idx = mx.arange(N)
        return (idx[:, None] < idx[None]).astype(dtype) * mx.finfo(dtype).min


def _maybe_checkpoint(layer: Module, enabled: bool) -> Callable:
    if not enabled:
        return layer
    from ..utils import checkpoint

    return checkpoint(layer)


class TransformerEncoderLayer(Module):
    """Self-attention then an MLP, each with a residual; pre-norm when ``norm_first``."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True) -> None:
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, y: mx.array) -> mx.array:
        return self.linear2(self.dropout2(self.activation(self.linear1(y))))

    def __call__(self, x: mx.array, mask: Any) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._mlp(self.ln2(x))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._mlp(x))


class TransformerEncoder(Module):
    """``num_layers`` encoder layers and a final LayerNorm."""

    def __init__(self, num_layers: int, dims: int, num_heads: int,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Callable[[Any], Any] = relu, norm_first: bool = True,
                 checkpoint: bool = False) -> None:
        super().__init__()
        self.layers = [TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation,
                                               norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: mx.array, mask: Any) -> mx.array:
        for layer in self.layers:
            x = _maybe_checkpoint(layer, self.checkpoint)(x, mask)
        return self.ln(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then an MLP, each with a residual."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True) -> None:
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, y: mx.array) -> mx.array:
        return self.linear2(self.dropout3(self.activation(self.linear1(y))))

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Any,
                 memory_mask: Any) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._mlp(x))


class TransformerDecoder(Module):
    """``num_layers`` decoder layers and a final LayerNorm."""

    def __init__(self, num_layers: int, dims: int, num_heads: int,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Callable[[Any], Any] = relu, norm_first: bool = True,
                 checkpoint: bool = False) -> None:
        super().__init__()
        self.layers = [TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation,
                                               norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Any,
                 memory_mask: Any) -> mx.array:
        for layer in self.layers:
            x = _maybe_checkpoint(layer, self.checkpoint)(x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """An encoder-decoder Transformer (custom encoder/decoder modules may replace either)."""

    def __init__(self, dims: int = 512, num_heads: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 custom_encoder: Optional[Any] = None, custom_decoder: Optional[Any] = None,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
            checkpoint)
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
            checkpoint)

    def __call__(self, src: mx.array, tgt: mx.array, src_mask: Any, tgt_mask: Any,
                 memory_mask: Any) -> mx.array:
        return self.decoder(tgt, self.encoder(src, src_mask), tgt_mask, memory_mask)
