"""Convolution layers (channels last; weight [out, *kernel, in/groups]; bias zeros; weight
U(-s, s), s = 1/sqrt(in/groups * prod(kernel)), as MLX)."""

from __future__ import annotations

import math
from typing import Union

from ... import core as mx
from .base import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_IntOrTuple = Union[int, tuple]


def _expand(value: _IntOrTuple, n: int) -> tuple:
    return (value,) * n if isinstance(value, int) else value


def _uniform_weight(out_channels: int, kernel: tuple, in_channels: int) -> mx.array:
    scale = math.sqrt(1 / (in_channels * math.prod(kernel)))
    return mx.random.uniform(low=-scale, high=scale, shape=(out_channels, *kernel, in_channels))


def _check_groups(in_channels: int, groups: int) -> None:
    if in_channels % groups != 0:
        raise ValueError(f"The number of input channels ({in_channels}) must be divisible by "
                         f"the number of groups ({groups})")


class _ConvBase(Module):
    _ndim = 1

    def _kernel_repr(self) -> object:
        return self.weight.shape[1] if self._ndim == 1 else self.weight.shape[1:1 + self._ndim]

    def _with_bias(self, y: mx.array) -> mx.array:
        return y + self.bias if "bias" in self else y


class Conv1d(_ConvBase):
    """1-D convolution over [N, L, C_in] inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        _check_groups(in_channels, groups)
        self.weight = _uniform_weight(out_channels, (kernel_size,), in_channels // groups)
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.groups = groups

    def _extra_repr(self) -> str:
        return (f"{self.weight.shape[-1] * self.groups}, {self.weight.shape[0]}, "
                f"kernel_size={self._kernel_repr()}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        return self._with_bias(mx.conv1d(x, self.weight, self.stride, self.padding,
                                         self.dilation, self.groups))


class Conv2d(Conv1d):
    """2-D convolution over [N, H, W, C_in] inputs."""
    _ndim = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: _IntOrTuple,
                 stride: _IntOrTuple = 1, padding: _IntOrTuple = 0, dilation: _IntOrTuple = 1,
                 groups: int = 1, bias: bool = True) -> None:
        Module.__init__(self)
        _check_groups(in_channels, groups)
        kernel_size, stride, padding = (_expand(v, 2) for v in (kernel_size, stride, padding))
        self.weight = _uniform_weight(out_channels, kernel_size, in_channels // groups)
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.stride = stride
        self.dilation = dilation
        self.groups = groups

    def __call__(self, x: mx.array) -> mx.array:
        return self._with_bias(mx.conv2d(x, self.weight, self.stride, self.padding,
                                         self.dilation, self.groups))


class Conv3d(_ConvBase):
    """3-D convolution over [N, D, H, W, C_in] inputs (no groups, as MLX's layer)."""
    _ndim = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: _IntOrTuple,
                 stride: _IntOrTuple = 1, padding: _IntOrTuple = 0, dilation: _IntOrTuple = 1,
                 bias: bool = True) -> None:
        super().__init__()
        kernel_size, stride, padding = (_expand(v, 3) for v in (kernel_size, stride, padding))
        self.weight = _uniform_weight(out_channels, kernel_size, in_channels)
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.stride = stride
        self.dilation = dilation

    def _extra_repr(self) -> str:
        return (f"{self.weight.shape[-1]}, {self.weight.shape[0]}, "
                f"kernel_size={self._kernel_repr()}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        return self._with_bias(mx.conv3d(x, self.weight, self.stride, self.padding,
                                         self.dilation))


class _ConvTransposeBase(_ConvBase):
    _op = staticmethod(mx.conv_transpose1d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: _IntOrTuple,
                 stride: _IntOrTuple = 1, padding: _IntOrTuple = 0, dilation: _IntOrTuple = 1,
                 output_padding: _IntOrTuple = 0, bias: bool = True) -> None:
        super().__init__()
        n = self._ndim
        if n > 1:
            kernel_size, stride, padding, output_padding = (
                _expand(v, n) for v in (kernel_size, stride, padding, output_padding))
        else:
            kernel_size = (kernel_size,)
        self.weight = _uniform_weight(out_channels, tuple(kernel_size), in_channels)
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.output_padding = output_padding

    def _extra_repr(self) -> str:
        return (f"{self.weight.shape[-1]}, {self.weight.shape[0]}, "
                f"kernel_size={self._kernel_repr()}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"output_padding={self.output_padding}, bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        return self._with_bias(type(self)._op(x, self.weight, self.stride, self.padding,
                                              self.dilation, self.output_padding))


class ConvTranspose1d(_ConvTransposeBase):
    """1-D transposed convolution; weight [out, kernel, in]."""
    _ndim = 1
    _op = staticmethod(mx.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeBase):
    """2-D transposed convolution; weight [out, kh, kw, in]."""
    _ndim = 2
    _op = staticmethod(mx.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeBase):
    """3-D transposed convolution; weight [out, kd, kh, kw, in]."""
    _ndim = 3
    _op = staticmethod(mx.conv_transpose3d)
