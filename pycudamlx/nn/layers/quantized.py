"""QuantizedLinear, QuantizedEmbedding and ``nn.quantize`` (MLX's layout: packed uint32
``weight``, ``scales``, ``biases``; frozen after creation)."""

from __future__ import annotations

import math
from typing import Callable, Optional, Union

from ... import core as mx
from ...utils import tree_map_with_path
from .base import Module

__all__ = ["QQLinear", "QuantizedEmbedding", "QuantizedLinear", "quantize"]

_MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _defaults_for_mode(mode: str, group_size: Optional[int],
                       bits: Optional[int]) -> tuple[int, int]:
    if mode not in _MODE_DEFAULTS:
        raise ValueError(f"Invalid quantization mode '{mode}'. Valid modes are: "
                         f"{', '.join(_MODE_DEFAULTS)}.")
    default_group, default_bits = _MODE_DEFAULTS[mode]
    return group_size or default_group, bits or default_bits


def _set_quantized(layer: Module, weight: mx.array, group_size: Optional[int],
                   bits: Optional[int], mode: str) -> None:
    layer.weight, layer.scales, *biases = mx.quantize(weight, group_size, bits, mode=mode)
    layer.biases = biases[0] if biases else None


def quantize(model: Module, group_size: int = None, bits: int = None, *, mode: str = "affine",
             quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None
             ) -> None:
    """Replace (in place) every leaf module that ``class_predicate(path, module)`` selects (by
    default: those with ``to_quantized``) by its quantized version. The predicate may return
    a dict of ``to_quantized`` arguments instead of True."""
    class_predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def maybe_quantize(path: str, m: Module) -> Module:
        chosen = class_predicate(path, m)
        if not chosen:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(chosen, bool):
            kwargs = {"group_size": group_size, "bits": bits, "mode": mode}
            if quantize_input:
                kwargs["quantize_input"] = quantize_input
            return m.to_quantized(**kwargs)
        if isinstance(chosen, dict):
            if "quantize_input" in chosen and not chosen["quantize_input"]:
                chosen.pop("quantize_input")
            return m.to_quantized(**chosen)
        raise ValueError("``class_predicate`` must return a bool or a dict of parameters to pass "
                         "to ``to_quantized``")

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)


class QuantizedEmbedding(Module):
    """An Embedding whose table is quantized; rows are dequantized on lookup."""

    def __init__(self, num_embeddings: int, dims: int, group_size: int = None,
                 bits: int = None, mode: str = "affine") -> None:
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        weight = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))
        _set_quantized(self, weight, group_size, bits, mode)
        self.num_embeddings = num_embeddings
        self.dims = dims
        self.freeze()

    def __call__(self, x: mx.array) -> mx.array:
        biases = self.get("biases")
        return mx.dequantize(self["weight"][x], scales=self["scales"][x],
                             biases=biases[x] if biases is not None else None,
                             group_size=self.group_size, bits=self.bits, mode=self.mode)

    def as_linear(self, x: mx.array) -> mx.array:
        """x @ table^T with the quantized table (tied output projection)."""
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self.get("biases"), transpose=True,
                                   group_size=self.group_size, bits=self.bits, mode=self.mode)

    def _extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int = None, bits: int = None,
                       mode: str = "affine") -> "QuantizedEmbedding":
        """Quantize an Embedding's table."""
        num, dims = embedding_layer.weight.shape
        layer = cls(num, dims, group_size, bits, mode=mode)
        _set_quantized(layer, embedding_layer.weight, group_size, bits, mode)
        return layer


class QuantizedLinear(Module):
    """A Linear layer with a quantized weight (quantized_matmul); the bias stays dense."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = None, bits: int = None, mode: str = "affine") -> None:
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        _set_quantized(self, weight, group_size, bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def __call__(self, x: mx.array) -> mx.array:
        x = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None, bits: int = None,
                    mode: str = "affine") -> "QuantizedLinear":
        """Quantize a Linear layer's weight (its bias is kept as is)."""
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, False, group_size, bits, mode=mode)
        _set_quantized(layer, linear_layer.weight, group_size, bits, mode)
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


class QQLinear(Module):
    """A Linear layer whose weight *and* input are quantized (``mx.qqmm``; modes nvfp4/mxfp8).
    Dense weights in training mode, quantized in eval mode, as MLX."""

    def __init__(self, input_dims: int, output_dims: int, group_size: int = None,
                 bits: int = None, mode: str = "nvfp4") -> None:
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == mx.uint32:
            in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def quantize(self) -> None:
        """Replace the dense weight by its quantized form (eval mode)."""
        if not self._quantized:
            self.weight, self.scales = mx.quantize(self.weight, self.group_size, self.bits,
                                                   mode=self.mode)
            self._quantized = True

    def dequantize(self) -> None:
        """Back to a dense weight (training mode)."""
        if self._quantized:
            self.weight = mx.dequantize(self.weight, scales=self.scales,
                                        group_size=self.group_size, bits=self.bits,
                                        mode=self.mode)
            self.__delattr__("scales")
            self._quantized = False

    def _set_training_mode(self, mode: bool) -> None:
        super()._set_training_mode(mode)
        if self._training:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x: mx.array) -> mx.array:
        return mx.qqmm(x, self["weight"], scales=self.get("scales"), group_size=self.group_size,
                       bits=self.bits, mode=self.mode)

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None, bits: int = None,
                    mode: str = "nvfp4") -> "QQLinear":
        """A QQLinear holding a bias-free Linear layer's weight."""
        output_dims, input_dims = linear_layer.weight.shape
        if linear_layer.get("bias") is not None:
            raise NotImplementedError("QQLinear does not support bias yet.")
        layer = cls(input_dims, output_dims, group_size, bits, mode=mode)
        layer.weight = linear_layer.weight
        layer.train(linear_layer.training)
        return layer
