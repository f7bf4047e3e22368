"""``nn.Upsample``: nearest, (bi/tri)linear and cubic upsampling of [N, *spatial, C] inputs,
with MLX's index/weight rules (align_corners, antialiasing for downscaling factors)."""

from __future__ import annotations

import math
import operator
from functools import reduce
from itertools import product
from typing import Callable, Literal, Tuple, Union

from ... import core as mx
from .base import Module

__all__ = ["Upsample", "upsample_cubic", "upsample_linear", "upsample_nearest"]


def _along(indices: mx.array, dim: int, ndims: int) -> mx.array:
    """``indices`` shaped to broadcast along spatial dim ``dim`` of ``ndims``."""
    shape = [1] * ndims
    shape[dim] = -1
    return indices.reshape(shape)


def _scaled_indices(n: int, scale: float, align_corners: bool, dim: int,
                    ndims: int) -> mx.array:
    """Fractional source coordinates of the int(scale * n) output positions."""
    m = int(scale * n)
    positions = mx.arange(m, dtype=mx.float32)
    if align_corners:
        coords = positions * ((n - 1) / max(m - 1, 1))
    else:
        step = 1 / scale
        coords = positions * step - ((m - 1) * step - n + 1) / 2
    return _along(coords, dim, ndims)


def _nearest_indices(n: int, scale: float, dim: int, ndims: int) -> mx.array:
    m = int(scale * n)
    positions = mx.arange(m, dtype=mx.float32)
    if m > n:
        positions = ((positions + 0.5) * (n / m) - 0.5).round()
    else:
        positions = positions * (n / m)
    return _along(positions.astype(mx.uint32), dim, ndims)


def _linear_indices(n: int, scale: float, align_corners: bool, dim: int, ndims: int) -> tuple:
    coords = mx.clip(_scaled_indices(n, scale, align_corners, dim, ndims), a_min=0, a_max=n - 1)
    left, right = mx.floor(coords), mx.ceil(coords)
    weight = mx.expand_dims(coords - left, -1)
    return ((left.astype(mx.uint32), 1 - weight), (right.astype(mx.uint32), weight))


def _triangle_kernel(x: mx.array) -> mx.array:
    return mx.maximum(1.0 - x, 0.0)


def _cubic_kernel(x: mx.array) -> mx.array:
    a = -0.5
    inner = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    outer = (((x - 5) * x + 8) * x - 4) * a
    return mx.where(x <= 1.0, inner, mx.where(x <= 2.0, outer, 0.0))


def _antialiased_indices(n: int, scale: float, align_corners: bool, dim: int, ndims: int,
                         kernel_fn: Callable, kernel_radius: float) -> tuple:
    """Taps of a kernel widened by 1/scale when downscaling, weights normalized per output."""
    coords = _scaled_indices(n, scale, align_corners, dim, ndims)
    widen = 1.0 / scale if scale < 1 else 1.0
    taps = math.ceil(kernel_radius * widen) + 1
    positions, weights = [], []
    for k in range(-taps + 1, taps):
        idx = mx.floor(coords) + k
        w = kernel_fn(mx.abs(coords - idx) / widen)
        positions.append(idx)
        weights.append(mx.where((idx >= 0) & (idx < n), w, 0.0))
    total = sum(weights)
    total = mx.where(total > 0, total, 1.0)
    return tuple((mx.clip(idx, a_min=0, a_max=n - 1).astype(mx.uint32),
                  mx.expand_dims(w / total, -1)) for idx, w in zip(positions, weights))


def _linear_aa_indices(n: int, scale: float, align_corners: bool, dim: int,
                       ndims: int) -> tuple:
    return _antialiased_indices(n, scale, align_corners, dim, ndims, _triangle_kernel, 1.0)


def _cubic_aa_indices(n: int, scale: float, align_corners: bool, dim: int, ndims: int) -> tuple:
    return _antialiased_indices(n, scale, align_corners, dim, ndims, _cubic_kernel, 2.0)


def _cubic_indices(n: int, scale: float, align_corners: bool, dim: int, ndims: int) -> tuple:
    coords = _scaled_indices(n, scale, align_corners, dim, ndims)
    l1 = mx.floor(coords)
    r1 = mx.floor(coords + 1)
    a = -0.75

    def weight(grid: mx.array, near: bool) -> mx.array:
        x = mx.abs(coords - grid)
        if near:
            return (((a + 2.0) * x - (a + 3.0)) * x * x + 1)[..., None]
        return ((((x - 5) * x + 8) * x - 4) * a)[..., None]

    taps = [(l1, True), (r1, True), (l1 - 1, False), (r1 + 1, False)]
    return tuple((mx.clip(g, a_min=0, a_max=n - 1).astype(mx.uint32), weight(g, near))
                 for g, near in taps)


def _check_scales(x: mx.array, scale_factor: Tuple) -> int:
    dims = x.ndim - 2
    if dims != len(scale_factor):
        raise ValueError("A scale needs to be provided for each spatial dimension")
    return dims


def _validate_antialias_align_corners(align_corners: bool, antialias: bool) -> None:
    if antialias and align_corners:
        raise ValueError("[Upsample] antialias=True with align_corners=True is not supported. "
                         "Use align_corners=False for antialiased interpolation.")


def upsample_nearest(x: mx.array, scale_factor: Tuple) -> mx.array:
    """Nearest-neighbour upsampling (integer factors: a broadcast and reshape)."""
    dims = _check_scales(x, scale_factor)
    if tuple(map(int, scale_factor)) == scale_factor:
        shape = list(x.shape)
        for d in range(dims):
            shape.insert(2 + 2 * d, 1)
        x = x.reshape(shape)
        for d in range(dims):
            shape[2 + 2 * d] = int(scale_factor[d])
        x = mx.broadcast_to(x, shape)
        for d in range(dims):
            shape[d + 1] *= shape[d + 2]
            shape.pop(d + 2)
        return x.reshape(shape)
    _, *spatial, _ = x.shape
    index = [slice(None)] + [_nearest_indices(n, s, i, dims)
                             for i, (n, s) in enumerate(zip(spatial, scale_factor))]
    return x[tuple(index)]


def _interpolate(x: mx.array, scale_factor: Tuple, indices_fn: Callable,
                 align_corners: bool = False) -> mx.array:
    """Weighted sum over every combination of per-dim taps (one gather per combination)."""
    dims = _check_scales(x, scale_factor)
    _, *spatial, _ = x.shape
    per_dim = [indices_fn(n, s, align_corners, i, dims)
               for i, (n, s) in enumerate(zip(spatial, scale_factor))]
    total = 0
    for combo in product(*per_dim):
        idx, weight = zip(*combo)
        total = total + reduce(operator.mul, weight) * x[(slice(None),) + idx]
    return total


def _interpolate_separable(x: mx.array, scale_factor: Tuple, indices_fn: Callable,
                           align_corners: bool = False) -> mx.array:
    """One spatial dim at a time: take along the axis, weight, sum the taps."""
    dims = _check_scales(x, scale_factor)
    _, *spatial, _ = x.shape
    out = x
    for i, (n, s) in enumerate(zip(spatial, scale_factor)):
        out = sum(mx.take(out, idx.reshape(-1), axis=i + 1) * w
                  for idx, w in indices_fn(n, s, align_corners, i, dims))
    return out


def upsample_linear(x: mx.array, scale_factor: Tuple, align_corners: bool = False,
                    antialias: bool = False) -> mx.array:
    """(Bi/tri)linear interpolation."""
    _validate_antialias_align_corners(align_corners, antialias)
    if antialias:
        return _interpolate_separable(x, scale_factor, _linear_aa_indices, align_corners)
    if not align_corners:
        return _interpolate_separable(x, scale_factor, _linear_indices, align_corners)
    return _interpolate(x, scale_factor, _linear_indices, align_corners)


def upsample_cubic(x: mx.array, scale_factor: Tuple, align_corners: bool = False,
                   antialias: bool = False) -> mx.array:
    """(Bi/tri)cubic interpolation (a = -0.75; antialiased with a = -0.5)."""
    _validate_antialias_align_corners(align_corners, antialias)
    if antialias:
        return _interpolate_separable(x, scale_factor, _cubic_aa_indices, align_corners)
    return _interpolate(x, scale_factor, _cubic_indices, align_corners)


class Upsample(Module):
    """Upsample the spatial dims of [N, *spatial, C] by ``scale_factor`` (one value, or one
    per spatial dim)."""

    def __init__(self, scale_factor: Union[float, Tuple],
                 mode: Literal["nearest", "linear", "cubic"] = "nearest",
                 align_corners: bool = False, antialias: bool = False) -> None:
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias and mode == "nearest":
            raise ValueError("[Upsample] Antialiasing is not supported for nearest neighbor "
                             "upsampling")
        if isinstance(scale_factor, (list, tuple)):
            scale_factor = tuple(map(float, scale_factor))
        else:
            scale_factor = float(scale_factor)
        _validate_antialias_align_corners(align_corners, antialias)
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        text = (f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
                f"align_corners={self.align_corners}")
        return text + (", antialias=True" if self.antialias else "")

    def __call__(self, x: mx.array) -> mx.array:
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError("[Upsample] The input should have at least 1 spatial dimension "
                             f"which means it should be at least 3D but {x.ndim}D was provided")
        scale = self.scale_factor
        if isinstance(scale, tuple):
            if len(scale) != dims:
                raise ValueError("[Upsample] One scale per spatial dimension is required but "
                                 f"scale_factor={scale} and the number of spatial dimensions "
                                 f"were {dims}")
        else:
            scale = (scale,) * dims
        if self.mode == "nearest":
            return upsample_nearest(x, scale)
        if self.mode == "linear":
            return upsample_linear(x, scale, self.align_corners, self.antialias)
        return upsample_cubic(x, scale, self.align_corners, self.antialias)
