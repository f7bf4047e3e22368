"""``mlx.nn.layers.convolution_transpose``: the transposed convolution layers, at MLX's module
path (they are defined with the other convolutions in ``convolution.py``)."""

from __future__ import annotations

from .convolution import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
