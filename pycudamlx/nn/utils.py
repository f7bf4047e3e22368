"""``nn.value_and_grad`` and ``nn.checkpoint``: transforms of functions of a model's
trainable parameters, built on ``mx.value_and_grad`` / ``mx.checkpoint`` as MLX does.

The core transform is applied when the function is wrapped, as MLX does; while the core does
not provide it yet (NotYetImplemented, an AttributeError), wrapping still succeeds and the
lookup is retried when the returned function runs, which raises the core's error naming what
is missing until the transform exists.
"""

from __future__ import annotations

from functools import wraps
from itertools import accumulate
from typing import Any, Callable, Optional

from .. import core as mx
from .layers.base import Module

__all__ = ["average_gradients", "checkpoint", "value_and_grad"]


def _transform_now_or_later(make: Callable[[], Callable]) -> Callable[[], Callable]:
    """``make()`` now; if the core lacks the transform, again at each call until it works."""
    try:
        ready = make()
    except AttributeError:
        ready = None
    cache = [ready]

    def get() -> Callable:
        if cache[0] is None:
            cache[0] = make()
        return cache[0]

    return get


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """``fn(*args)``'s value and its gradient with respect to ``model.trainable_parameters()``
    (a tree of the same structure). ``fn`` reads the parameters through ``model``; during the
    call the model holds the traced parameters (``model.update``), as in MLX."""
    def inner_fn(params: dict, *args: Any, **kwargs: Any) -> Any:
        model.update(params)
        return fn(*args, **kwargs)

    transformed = _transform_now_or_later(lambda: mx.value_and_grad(inner_fn))

    @wraps(fn)
    def wrapped_value_grad_fn(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        value, grad = transformed()(model.trainable_parameters(), *args, **kwargs)
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

    def make() -> Callable:
        try:
            return mx.checkpoint(inner_fn)
        except AttributeError:  # NotYetImplemented: checkpointing only saves memory
            return inner_fn

    checkpointed = make()

    @wraps(fn)
    def wrapped_checkpointed_fn(*args: Any, **kwargs: Any) -> Any:
        return checkpointed(module.trainable_parameters(), *args, **kwargs)

    return wrapped_checkpointed_fn


def average_gradients(gradients: Any, group: Optional[mx.distributed.Group] = None,
                      all_reduce_size: int = 32 * 1024**2,
                      communication_stream: Optional[mx.Stream] = None) -> Any:
    """Average ``gradients`` (a tree, the same structure on every rank) over the processes of
    ``group`` (default: the global group, ``mx.distributed.init()``). For a group of one the
    tree comes back unchanged (the same object), as in MLX. Otherwise, as MLX does, arrays of
    one dtype are flattened into batches of at least ``all_reduce_size`` bytes (the last may be
    smaller) so that each batch is one ``all_sum`` (<= 0, or mixed dtypes: one per array), and
    the result is rebuilt with ``tree_unflatten``."""
    from ..utils import tree_flatten, tree_map, tree_unflatten

    group = group or mx.distributed.init()
    n = group.size()
    if n == 1:
        return gradients

    def average(x: mx.array) -> mx.array:
        return mx.distributed.all_sum(x, group=group, stream=communication_stream) / n

    if all_reduce_size <= 0:
        return tree_map(average, gradients)
    flat = tree_flatten(gradients)
    if not flat:
        return gradients
    dtype = flat[0][1].dtype
    if any(g.dtype != dtype for _, g in flat):
        return average_gradients(gradients, group, 0, communication_stream)
    batches: list[list[int]] = [[]]
    filled = 0
    for i, (_, g) in enumerate(flat):
        batches[-1].append(i)
        filled += g.size * dtype.size
        if filled >= all_reduce_size:
            batches.append([])
            filled = 0
    averaged: list[tuple[str, mx.array]] = []
    for batch in (b for b in batches if b):
        sizes = [flat[i][1].size for i in batch]
        joined = average(mx.concatenate([flat[i][1].reshape(-1) for i in batch]))
        offsets = list(accumulate(sizes[:-1]))
        for i, part in zip(batch, mx.split(joined, offsets)):
            averaged.append((flat[i][0], part.reshape(flat[i][1].shape)))
    return tree_unflatten(averaged)
