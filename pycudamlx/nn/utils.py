"""``nn.value_and_grad`` and ``nn.checkpoint``: transforms of functions of a model's
trainable parameters, built on ``mx.value_and_grad`` / ``mx.checkpoint`` as MLX does.

The core transforms are looked up when the returned function first runs (not at import or
wrap time), so this module works as soon as pycudamlx.core provides them and raises the core's
NotYetImplemented error, naming what is missing, until then.
"""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable, Optional

from .. import core as mx
from .layers.base import Module

__all__ = ["average_gradients", "checkpoint", "value_and_grad"]


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """``fn(*args)``'s value and its gradient with respect to ``model.trainable_parameters()``
    (a tree of the same structure). ``fn`` reads the parameters through ``model``; during the
    call the model holds the traced parameters (``model.update``), as in MLX."""
    def inner_fn(params: dict, *args: Any, **kwargs: Any) -> Any:
        model.update(params)
        return fn(*args, **kwargs)

    transformed: list = []

    @wraps(fn)
    def wrapped_value_grad_fn(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if not transformed:
            transformed.append(mx.value_and_grad(inner_fn))
        value, grad = transformed[0](model.trainable_parameters(), *args, **kwargs)
        return value, grad

    return wrapped_value_grad_fn


def checkpoint(module: Module, fn: Optional[Callable] = None) -> Callable:
    """``fn`` (default: the module itself) with gradient checkpointing over the module's
    trainable parameters: intermediates are recomputed in the backward pass. Without
    ``mx.checkpoint`` in the core the call runs unchanged (same values, no memory saving)."""
    if fn is None:
        fn = module  # the module, not its __call__, so a later monkey-patch is honoured

    def inner_fn(params: dict, *args: Any, **kwargs: Any) -> Any:
        module.update(params)
        return fn(*args, **kwargs)

    transformed: list = []

    @wraps(fn)
    def wrapped_checkpointed_fn(*args: Any, **kwargs: Any) -> Any:
        if not transformed:
            try:
                transformed.append(mx.checkpoint(inner_fn))
            except AttributeError:  # NotYetImplemented: checkpointing only saves memory
                transformed.append(inner_fn)
        return transformed[0](module.trainable_parameters(), *args, **kwargs)

    return wrapped_checkpointed_fn


def average_gradients(gradients: Any, group: Any = None, all_reduce_size: int = 32 * 1024**2,
                      communication_stream: Any = None) -> Any:
    """Average gradients over a distributed group. pycudamlx runs one process (a group of
    size 1), so the gradients are returned unchanged, as MLX does for a size-1 group."""
    if group is not None and getattr(group, "size", lambda: 1)() != 1:
        raise NotImplementedError("distributed groups are not implemented in pycudamlx yet")
    return gradients
