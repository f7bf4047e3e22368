"""Activation functions and their Module wrappers (MLX's formulas, so values match).

MLX wraps most of these in ``mx.compile(shapeless=True)``; pycudamlx's compile runs a function
as written, so they are plain functions here.
"""

from __future__ import annotations

import math
from typing import Any

from ... import core as mx
from .base import Module

__all__ = [
    "celu", "elu", "gelu", "gelu_approx", "gelu_fast_approx", "glu", "hard_shrink", "hard_tanh",
    "hardswish", "leaky_relu", "log_sigmoid", "log_softmax", "mish", "prelu", "relu", "relu2",
    "relu6", "selu", "sigmoid", "silu", "softmax", "softmin", "softplus", "softshrink",
    "softsign", "step", "tanh",
    "CELU", "ELU", "GELU", "GLU", "SELU", "HardShrink", "Hardswish", "HardTanh", "LeakyReLU",
    "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU2", "ReLU6", "Sigmoid", "SiLU",
    "Softmax", "Softmin", "Softplus", "Softshrink", "Softsign", "Step", "Tanh",
]

_SQRT_2 = math.sqrt(2)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def sigmoid(x: mx.array) -> mx.array:
    """1 / (1 + exp(-x))."""
    return mx.sigmoid(x)


def relu(x: mx.array) -> mx.array:
    """max(x, 0)."""
    return mx.maximum(x, 0)


def relu2(x: mx.array) -> mx.array:
    """max(x, 0)^2."""
    return mx.square(mx.maximum(x, 0))


def relu6(x: mx.array) -> mx.array:
    """min(max(x, 0), 6)."""
    return mx.minimum(mx.maximum(x, 0), 6.0)


def leaky_relu(x: mx.array, negative_slope: float = 0.01) -> mx.array:
    """max(negative_slope * x, x)."""
    return mx.maximum(negative_slope * x, x)


def log_softmax(x: mx.array, axis: int = -1) -> mx.array:
    """x - logsumexp(x) along ``axis`` (the max subtracted first for range)."""
    x = x - mx.stop_gradient(mx.max(x, axis=axis, keepdims=True))
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


def elu(x: mx.array, alpha: float = 1.0) -> mx.array:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return mx.where(x > 0, x, alpha * (mx.exp(x) - 1))


def softmax(x: mx.array, axis: int = -1) -> mx.array:
    """exp(x) / sum(exp(x)) along ``axis``."""
    return mx.softmax(x, axis=axis)


def softplus(x: mx.array) -> mx.array:
    """log(1 + exp(x))."""
    return mx.logaddexp(x, 0)


def softsign(x: mx.array) -> mx.array:
    """x / (1 + |x|)."""
    return mx.divide(x, 1 + mx.abs(x))


def softshrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    """x - sign(x) * lambd where |x| > lambd, else 0."""
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


def celu(x: mx.array, alpha: float = 1.0) -> mx.array:
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)."""
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


def silu(x: mx.array) -> mx.array:
    """x * sigmoid(x)."""
    return x * mx.sigmoid(x)


def log_sigmoid(x: mx.array) -> mx.array:
    """log(sigmoid(x)) = -softplus(-x)."""
    return -softplus(-x)


def gelu(x: mx.array) -> mx.array:
    """x * Phi(x) with the exact normal CDF (erf)."""
    return x * (1 + mx.erf(x / _SQRT_2)) / 2


def gelu_approx(x: mx.array) -> mx.array:
    """The tanh approximation of gelu."""
    return 0.5 * x * (1 + mx.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def gelu_fast_approx(x: mx.array) -> mx.array:
    """x * sigmoid(1.702 x)."""
    return x * mx.sigmoid(1.702 * x)


def glu(x: mx.array, axis: int = -1) -> mx.array:
    """a * sigmoid(b) with a, b the two halves of ``x`` along ``axis``."""
    a, b = mx.split(x, indices_or_sections=2, axis=axis)
    return a * mx.sigmoid(b)


def step(x: mx.array, threshold: float = 0.0) -> mx.array:
    """1 where x >= threshold, else 0 (an int32 array, as MLX's where of two ints)."""
    return mx.where(x >= threshold, 1, 0)


def selu(x: mx.array) -> mx.array:
    """1.0507 * elu(x, 1.67326)."""
    return elu(x, 1.67326) * 1.0507


def prelu(x: mx.array, alpha: mx.array) -> mx.array:
    """max(0, x) + alpha * min(0, x)."""
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


def mish(x: mx.array) -> mx.array:
    """x * tanh(softplus(x))."""
    return x * mx.tanh(softplus(x))


def hardswish(x: mx.array) -> mx.array:
    """x * min(max(x + 3, 0), 6) / 6."""
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


def hard_tanh(x: mx.array, min_val: float = -1.0, max_val: float = 1.0) -> mx.array:
    """x clipped to [min_val, max_val]."""
    return mx.minimum(mx.maximum(x, min_val), max_val)


def hard_shrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    """x where |x| > lambd, else 0."""
    return mx.where(mx.abs(x) > lambd, x, 0)


def softmin(x: mx.array, axis: int = -1) -> mx.array:
    """softmax(-x)."""
    return mx.softmax(-x, axis=axis)


def tanh(x: mx.array) -> mx.array:
    """The hyperbolic tangent."""
    return mx.tanh(x)


def _activation_class(name: str, fn: Any, doc: str) -> type:
    """A parameterless Module whose call is ``fn(x)``."""
    return type(name, (Module,), {"__call__": lambda self, x: fn(x), "__doc__": doc,
                                  "__module__": __name__})


Sigmoid = _activation_class("Sigmoid", sigmoid, "Applies sigmoid element-wise.")
Mish = _activation_class("Mish", mish, "Applies mish element-wise.")
ReLU = _activation_class("ReLU", relu, "Applies relu element-wise.")
ReLU2 = _activation_class("ReLU2", relu2, "Applies relu2 element-wise.")
ReLU6 = _activation_class("ReLU6", relu6, "Applies relu6 element-wise.")
Softmax = _activation_class("Softmax", softmax, "softmax over the last axis.")
Softplus = _activation_class("Softplus", softplus, "Applies softplus element-wise.")
Softsign = _activation_class("Softsign", softsign, "Applies softsign element-wise.")
SiLU = _activation_class("SiLU", silu, "Applies silu element-wise.")
LogSoftmax = _activation_class("LogSoftmax", log_softmax, "log_softmax over the last axis.")
LogSigmoid = _activation_class("LogSigmoid", log_sigmoid, "Applies log_sigmoid element-wise.")
Tanh = _activation_class("Tanh", tanh, "Applies tanh element-wise.")
Hardswish = _activation_class("Hardswish", hardswish, "Applies hardswish element-wise.")
SELU = _activation_class("SELU", selu, "Applies selu element-wise.")
HardTanh = _activation_class("HardTanh", hard_tanh, "hard_tanh with its default bounds.")
Softmin = _activation_class("Softmin", softmin, "softmin over the last axis.")


class GLU(Module):
    """glu along ``axis``."""

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = axis

    def __call__(self, x: mx.array) -> Any:
        return glu(x=x, axis=self.axis)


class LeakyReLU(Module):
    """leaky_relu with a fixed ``negative_slope``."""

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x: mx.array) -> mx.array:
        return leaky_relu(x, self._negative_slope)


class ELU(Module):
    """elu with a fixed ``alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return elu(x, self._alpha)


class CELU(Module):
    """celu with a fixed ``alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return celu(x, self._alpha)


class Softshrink(Module):
    """softshrink with a fixed ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return softshrink(x, self.lambd)


class HardShrink(Module):
    """hard_shrink with a fixed ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return hard_shrink(x, self.lambd)


class Step(Module):
    """step with a fixed ``threshold``."""

    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self.threshold = threshold

    def __call__(self, x: mx.array) -> mx.array:
        return step(x, self.threshold)


class PReLU(Module):
    """prelu with a learned slope ``weight`` (``num_parameters`` values, all ``init``)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x: mx.array) -> mx.array:
        return prelu(x, self.weight)


class GELU(Module):
    """gelu; ``approx`` 'none' (erf), 'precise'/'tanh' (gelu_approx) or 'fast'."""

    def __init__(self, approx: str = "none") -> None:
        super().__init__()
        allowed = ["none", "precise", "tanh", "fast"]
        if approx not in allowed:
            raise ValueError(f"The approximation should be in {allowed} but '{approx}' was "
                             "given")
        self._approx = approx

    def __call__(self, x: mx.array) -> mx.array:
        if self._approx == "none":
            return gelu(x)
        if self._approx in ("precise", "tanh"):
            return gelu_approx(x)
        return gelu_fast_approx(x)
