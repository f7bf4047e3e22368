"""``nn.Identity``, ``nn.Linear``, ``nn.Bilinear`` (MLX's shapes and U(-1/sqrt(fan_in), ...)
initialization)."""

from __future__ import annotations

import math
from typing import Any, Optional

from ... import core as mx
from .base import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: mx.array) -> mx.array:
        return x


class Linear(Module):
    """y = x W^T + b, W of shape [output_dims, input_dims]."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale,
                                        shape=(output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self) -> str:
        return (f"input_dims={self.weight.shape[1]}, output_dims={self.weight.shape[0]}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    def to_quantized(self, group_size: Optional[int] = None, bits: Optional[int] = None,
                     mode: str = "affine", quantize_input: bool = False) -> Module:
        """A QuantizedLinear (or, with ``quantize_input``, a QQLinear) approximating this
        layer."""
        from .quantized import QQLinear, QuantizedLinear

        if quantize_input:
            if mode not in ("nvfp4", "mxfp8"):
                raise ValueError("Quantized activations are only supported for 'nvfp4' and "
                                 f"'mxfp8' modes, got {mode}.")
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    """y_i = x2^T W_i x1 + b_i, W of shape [output_dims, input2_dims, input1_dims]."""

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int,
                 bias: bool = True) -> None:
        super().__init__()
        scale = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale,
                                        shape=(output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return (f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, "
                f"bias={'bias' in self}")

    def __call__(self, x1: mx.array, x2: mx.array) -> mx.array:
        out, in2, in1 = self.weight.shape
        lead = x1.shape[:-1]
        # (x1 W^T) per output as [n, out, in2], then contracted with x2 by one batched matmul.
        y = x1.reshape(-1, in1) @ self.weight.reshape(out * in2, in1).T
        y = y.reshape(-1, out, in2).swapaxes(-2, -1)
        y = (x2.reshape(-1, 1, in2) @ y).squeeze(1)
        y = y.reshape(*lead, out)
        if "bias" in self:
            y = y + self.bias
        return y
