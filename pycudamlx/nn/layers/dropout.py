"""``nn.Dropout``, ``Dropout2d``, ``Dropout3d``: zero elements (or whole channels) with
probability p in training mode and scale the rest by 1/(1-p); the identity in eval mode."""

from __future__ import annotations

from ... import core as mx
from .base import Module

__all__ = ["Dropout", "Dropout2d", "Dropout3d"]


class _DropoutBase(Module):
    #: input ranks accepted (None: any) and how many dims before the channels share a mask
    _ranks: tuple | None = None
    _shared_dims = 0

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError(f"The dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x: mx.array) -> mx.array:
        if self._ranks is not None and x.ndim not in self._ranks:
            raise ValueError(f"Received input with {x.ndim} dimensions. Expected "
                             f"{self._ranks[0]} or {self._ranks[1]} dimensions.")
        if self._p_1 == 1 or not self.training:
            return x
        shape = list(x.shape)
        for d in range(2, 2 + self._shared_dims):
            shape[-d] = 1
        mask = mx.random.bernoulli(p=self._p_1, shape=shape)
        return mask * x * (1 / self._p_1)


class Dropout(_DropoutBase):
    """Element-wise dropout."""


class Dropout2d(_DropoutBase):
    """Channel-wise dropout of [N, H, W, C] or [H, W, C] inputs."""
    _ranks = (3, 4)
    _shared_dims = 2


class Dropout3d(_DropoutBase):
    """Channel-wise dropout of [N, D, H, W, C] or [D, H, W, C] inputs."""
    _ranks = (4, 5)
    _shared_dims = 3
