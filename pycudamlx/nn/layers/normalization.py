"""Normalization layers: LayerNorm, RMSNorm, GroupNorm, BatchNorm, InstanceNorm (features
last, as MLX)."""

from __future__ import annotations

from ... import core as mx
from .base import Module

__all__ = ["BatchNorm", "GroupNorm", "InstanceNorm", "LayerNorm", "RMSNorm"]


def _check_eps(layer: str, eps: float) -> None:
    if eps <= 0.0:
        raise ValueError(f"[{layer}] 'eps' must be positive but got {eps}.")


class InstanceNorm(Module):
    """Normalizes each channel of each sample over the spatial dims ([N, ..., C] input)."""

    def __init__(self, dims: int, eps: float = 1e-05, affine: bool = False) -> None:
        super().__init__()
        _check_eps("InstanceNorm", eps)
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 3:
            raise ValueError("InstanceNorm expects inputs with at least 3 dimensions (N, ..., C) "
                             f"but the input has {x.ndim} dimensions.")
        n, c = x.shape[0], x.shape[-1]
        spatial = x.shape[1:-1]
        rows = mx.transpose(x, (0, x.ndim - 1, *range(1, x.ndim - 1))).reshape(n, c, -1)
        y = mx.fast.layer_norm(rows, None, None, self.eps).reshape(n, c, *spatial)
        y = mx.transpose(y, (0, *range(2, len(spatial) + 2), 1))
        return self.weight * y + self.bias if "weight" in self else y


class LayerNorm(Module):
    """Normalizes over the last axis; learned scale (and bias) when ``affine``."""

    def __init__(self, dims: int, eps: float = 1e-05, affine: bool = True,
                 bias: bool = True) -> None:
        super().__init__()
        _check_eps("LayerNorm", eps)
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        weight = self.weight if "weight" in self else None
        bias = self.bias if "bias" in self else None
        return mx.fast.layer_norm(x, weight, bias, self.eps)


class RMSNorm(Module):
    """x / rms(x) * weight over the last axis."""

    def __init__(self, dims: int, eps: float = 1e-05) -> None:
        super().__init__()
        _check_eps("RMSNorm", eps)
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.rms_norm(x, self["weight"], self.eps)


class GroupNorm(Module):
    """Normalizes groups of channels over the spatial dims. ``pytorch_compatible`` groups
    contiguous channels (PyTorch); otherwise channel c belongs to group c % num_groups (MLX's
    default)."""

    def __init__(self, num_groups: int, dims: int, eps: float = 1e-05, affine: bool = True,
                 pytorch_compatible: bool = False) -> None:
        super().__init__()
        _check_eps("GroupNorm", eps)
        if num_groups <= 0:
            raise ValueError(f"The number of groups ({num_groups}) must be a positive integer.")
        if dims <= 0:
            raise ValueError(f"The number of features ({dims}) must be a positive integer.")
        if dims % num_groups != 0:
            raise ValueError(f"The number of features ({dims}) must be evenly divisible by the "
                             f"number of groups ({num_groups}).")
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
                f"pytorch_compatible={self.pytorch_compatible}")

    def _pytorch_compatible_group_norm(self, x: mx.array) -> mx.array:
        g = self.num_groups
        batch, *rest, dims = x.shape
        size = dims // g
        x = x.reshape(batch, -1, g, size).transpose(0, 2, 1, 3).reshape(batch, g, -1)
        x = mx.fast.layer_norm(x, eps=self.eps, weight=None, bias=None)
        x = x.reshape(batch, g, -1, size).transpose(0, 2, 1, 3)
        return x.reshape(batch, *rest, dims)

    def _group_norm(self, x: mx.array) -> mx.array:
        batch, *rest, dims = x.shape
        x = x.reshape(batch, -1, self.num_groups)
        mean = mx.mean(x, axis=1, keepdims=True)
        var = mx.var(x, axis=1, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return x.reshape(batch, *rest, dims)

    def __call__(self, x: mx.array) -> mx.array:
        if self.pytorch_compatible:
            x = self._pytorch_compatible_group_norm(x)
        else:
            x = self._group_norm(x)
        return self.weight * x + self.bias if "weight" in self else x


class BatchNorm(Module):
    """Normalizes each feature over the batch (and spatial) dims; in training mode it updates
    ``running_mean``/``running_var`` (unbiased variance) with ``momentum``, in eval mode it
    uses them. The running statistics are frozen parameters."""

    def __init__(self, num_features: int, eps: float = 1e-05, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True) -> None:
        super().__init__()
        _check_eps("BatchNorm", eps)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if self.track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs) -> "BatchNorm":
        """Unfreeze as Module does; the running statistics stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(keys=["running_mean", "running_var"], recurse=False)
        return None  # MLX's BatchNorm.unfreeze returns None

    def _extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={'weight' in self}, track_running_stats={self.track_running_stats}")

    def _calc_stats(self, x: mx.array, ddof: int = 0) -> tuple[mx.array, mx.array]:
        axes = tuple(range(0, x.ndim - 1))
        return mx.mean(x, axis=axes), mx.var(x, axis=axes, ddof=ddof)

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 2 or x.ndim > 4:
            raise ValueError(f"Expected input tensor to have 2, 3 or 4 dimensions, but got "
                             f"{x.ndim}")
        if self.training:
            count = 1
            for size in x.shape[:-1]:
                count *= size
            if count == 1:
                raise ValueError("BatchNorm training requires more than one value per channel.")
        mean, var = self._calc_stats(x)
        if self.training and self.track_running_stats:
            mu = self.momentum
            _, unbiased = self._calc_stats(x, ddof=1)
            self.running_mean = (1 - mu) * self.running_mean + mu * mean
            self.running_var = (1 - mu) * self.running_var + mu * unbiased
        elif self.track_running_stats:
            mean, var = self.running_mean, self.running_var
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return self.weight * x + self.bias if "weight" in self else x
