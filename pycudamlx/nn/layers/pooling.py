"""Max and average pooling over 1, 2 or 3 spatial dims ([N, ..., C] inputs): windows are a
strided view of the (padded) input, reduced over the window axes (as MLX)."""

from __future__ import annotations

import math
from typing import Callable, Optional, Tuple, Union

from ... import core as mx
from .base import Module

__all__ = ["AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d"]


def _value_or_list(x: object, n: int, msg: str) -> list:
    if isinstance(x, (list, tuple)):
        if len(x) != n:
            raise ValueError(msg)
        return list(x)
    if not isinstance(x, int):
        raise ValueError(msg)
    return [x] * n


def _sliding_windows(x: mx.array, window: list, strides: list) -> mx.array:
    """[N, *out_spatial, *window, C] windows of ``x`` [N, *spatial, C]."""
    if x.ndim < 3:
        raise ValueError("To extract sliding windows at least 1 spatial dimension (3 total) is "
                         f"needed but the input only has {x.ndim} dimensions.")
    spatial = x.shape[1:-1]
    if not len(spatial) == len(window) == len(strides):
        raise ValueError("To extract sliding windows the window shapes and strides must have "
                         "the same number of spatial dimensions as the signal but the signal "
                         f"has {len(spatial)} dims and the window shape has {len(window)} and "
                         f"strides have {len(strides)}.")
    shape = x.shape
    if all(w == s and size % w == 0 for size, w, s in zip(spatial, window, strides)):
        # Non-overlapping windows tiling the input: a reshape and a transpose, no as_strided.
        split = [shape[0]]
        for size, w in zip(spatial, window):
            split += [size // w, w]
        split.append(shape[-1])
        last = len(split) - 1
        return x.reshape(split).transpose([0, *range(1, last, 2), *range(2, last, 2), last])
    elem_strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    out_shape = [shape[0]] + [(size - w) // s + 1 for size, w, s in
                              zip(spatial, window, strides)] + list(window) + [shape[-1]]
    out_strides = ([elem_strides[0]] + [st * s for st, s in zip(elem_strides[1:-1], strides)]
                   + elem_strides[1:-1] + elem_strides[-1:])
    return mx.as_strided(x, out_shape, out_strides)


class _Pool(Module):
    _dims = 1
    _reduce: Callable = staticmethod(mx.max)
    _padding_value: float = 0.0

    def __init__(self, kernel_size: Union[int, Tuple[int, ...]],
                 stride: Optional[Union[int, Tuple[int, ...]]] = None,
                 padding: Union[int, Tuple[int, ...]] = 0) -> None:
        super().__init__()
        name = type(self).__name__
        n = self._dims
        msg = ("[{}] '{}' must be an integer or a tuple containing 1 integer" if n == 1 else
               "[{}] '{}' must be an integer or a tuple containing " + str(n) + " integers")
        kernel_size = _value_or_list(kernel_size, n, msg.format(name, "kernel_size"))
        stride = (kernel_size if stride is None
                  else _value_or_list(stride, n, msg.format(name, "stride")))
        padding = [(p, p) for p in _value_or_list(padding, n, msg.format(name, "padding"))]
        for what, values in (("kernel_size", kernel_size), ("stride", stride)):
            if any(v <= 0 for v in values):
                raise ValueError(f"[{name}] '{what}' must be positive but got {tuple(values)}.")
        if any(p[0] < 0 for p in padding):
            raise ValueError(f"[{name}] 'padding' must be non-negative but got "
                             f"{tuple(p[0] for p in padding)}.")
        self._pooling_function = type(self)._reduce
        self._padding_value = type(self)._padding_value
        self._kernel_size = kernel_size
        self._stride = stride
        self._padding = padding
        self._axes = tuple(range(-len(kernel_size) - 1, -1, 1))

    def _extra_repr(self) -> str:
        return (f"kernel_size={tuple(self._kernel_size)}, stride={tuple(self._stride)}, "
                f"padding={tuple(p[0] for p in self._padding)}")

    def __call__(self, x: mx.array) -> mx.array:
        if any(p[0] > 0 for p in self._padding):
            x = mx.pad(x, [(0, 0)] + self._padding + [(0, 0)],
                       constant_values=self._padding_value)
        windows = _sliding_windows(x, self._kernel_size, self._stride)
        return self._pooling_function(windows, self._axes)


class MaxPool1d(_Pool):
    """Max over windows of [N, L, C] (padding with -inf)."""
    _padding_value = -float("inf")


class AvgPool1d(_Pool):
    """Mean over windows of [N, L, C] (padding with zeros, which count in the mean)."""
    _reduce = staticmethod(mx.mean)


class MaxPool2d(MaxPool1d):
    """Max over windows of [N, H, W, C]."""
    _dims = 2


class AvgPool2d(AvgPool1d):
    """Mean over windows of [N, H, W, C]."""
    _dims = 2


class MaxPool3d(MaxPool1d):
    """Max over windows of [N, D, H, W, C]."""
    _dims = 3


class AvgPool3d(AvgPool1d):
    """Mean over windows of [N, D, H, W, C]."""
    _dims = 3
