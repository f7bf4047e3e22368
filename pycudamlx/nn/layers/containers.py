"""``nn.Sequential``: call modules (or plain callables) in order."""

from __future__ import annotations

from typing import Any, Callable

from .base import Module

__all__ = ["Sequential"]


class Sequential(Module):
    """Calls ``modules`` in order; they are stored in the ``layers`` list (parameter names
    ``layers.0.weight``, ... as in MLX)."""

    def __init__(self, *modules: Callable) -> None:
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x
