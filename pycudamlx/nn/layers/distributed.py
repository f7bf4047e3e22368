"""MLX's tensor- and fully-sharded layers (``mlx.nn.layers.distributed``), over mx.distributed.

pycudamlx's groups have one process (docs/distributed.md), so a "shard" is the whole weight and
the communication steps are identities; these classes exist so that model code written for
tensor-parallel or fully-sharded runs (mlx-lm's ``shard_linear``, ``fully_shard``) builds and
computes on one GPU with MLX's parameters, shapes, reprs, random draws and errors. The sharding
arithmetic is written for any group size, as MLX's is.
"""

from __future__ import annotations

import math
from functools import lru_cache, reduce
from typing import Any, Callable, Optional, Union

from ... import core as mx
from ...utils import tree_flatten, tree_map_with_path, tree_unflatten
from .base import Module
from .linear import Linear

__all__ = ["AllToShardedLinear", "ShardedToAllLinear", "QuantizedAllToShardedLinear",
           "QuantizedShardedToAllLinear", "FullyShardedModule", "fully_shard", "shard_linear",
           "shard_inplace", "sum_gradients"]

Segments = Union[int, list]


@lru_cache
def sum_gradients(group: mx.distributed.Group) -> Callable[[mx.array], mx.array]:
    """The identity whose backward pass all-sums the cotangent over ``group`` (the plain
    identity for a group of one process)."""
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def identity(x: mx.array) -> mx.array:
        return x

    @identity.vjp
    def identity_vjp(x: mx.array, cotangent: mx.array, _: Any) -> mx.array:
        return mx.distributed.all_sum(cotangent, group=group)

    return identity


def _split(weight: mx.array, segments: Segments, axis: int) -> list:
    """mx.split, where ``segments`` may also be fractions of the axis (e.g. [0.5, 0.75])."""
    if isinstance(segments, int) or isinstance(segments[0], int):
        return mx.split(weight, segments, axis=axis)
    length = weight.shape[axis]
    return mx.split(weight, [int(f * length) for f in segments], axis=axis)


def _shard(parameters: dict, predicate: Callable, group: Optional[mx.distributed.Group] = None
           ) -> dict:
    """``parameters`` with every array the predicate names cut to this rank's shard.

    ``predicate(path, weight)`` returns None (keep), an axis, or (axis, segments): the weight
    is the concatenation of ``segments`` parts along the axis (a fused QKV matrix has 3), and
    each part is split across the group's ranks."""
    group = group or mx.distributed.init()
    ranks, rank = group.size(), group.rank()

    def shard_one(path: str, weight: Any) -> Any:
        if not isinstance(weight, mx.array):
            return weight
        spec = predicate(path, weight)
        if spec is None:
            return weight
        if isinstance(spec, int):
            axis, segments = spec, 1
        elif isinstance(spec, tuple):
            axis, segments = spec
        else:
            raise ValueError("The sharding function should return int or tuple[int, list]")
        mine = [_split(part, ranks, axis)[rank] for part in _split(weight, segments, axis)]
        return mx.contiguous(mx.concatenate(mine, axis=axis))

    return tree_map_with_path(shard_one, parameters)


def _all_to_sharded(segments: Segments) -> Callable:
    """Shard a dense layer's output features (weight rows, the bias)."""
    def predicate(path: str, weight: mx.array) -> tuple:
        if path.endswith("bias"):
            return -1, segments
        return max(weight.ndim - 2, 0), segments
    return predicate


def _sharded_to_all(segments: Segments) -> Callable:
    """Shard a dense layer's input features (weight columns; the bias stays whole)."""
    def predicate(path: str, weight: mx.array) -> Optional[tuple]:
        if path.endswith("bias"):
            return None
        return -1, segments
    return predicate


def _check_sharding(sharding: str) -> None:
    if sharding not in ("all-to-sharded", "sharded-to-all"):
        raise ValueError(f"Sharding type {sharding=} not supported, choose one of "
                         "'all-to-sharded' or 'sharded-to-all'")


def shard_inplace(module: Module, sharding: Union[str, Callable], *, segments: Segments = 1,
                  group: Optional[mx.distributed.Group] = None) -> None:
    """Replace ``module``'s parameters by this rank's shards (the module's code is unchanged:
    it must communicate by itself). ``sharding``: "all-to-sharded", "sharded-to-all" or a
    predicate ``(path, weight) -> None | axis | (axis, segments)``."""
    if isinstance(sharding, str):
        _check_sharding(sharding)
        sharding = (_all_to_sharded(segments) if sharding == "all-to-sharded"
                    else _sharded_to_all(segments))
    module.update(_shard(module.parameters(), sharding, group))


def shard_linear(module: Module, sharding: str, *, segments: Segments = 1,
                 group: Optional[mx.distributed.Group] = None) -> Module:
    """A new sharded layer made from a Linear or QuantizedLinear ``module`` (which is left
    as it is): AllToSharded* or ShardedToAll* by ``sharding``."""
    _check_sharding(sharding)
    dense = isinstance(module, Linear)
    if sharding == "all-to-sharded":
        make = (AllToShardedLinear.from_linear if dense
                else QuantizedAllToShardedLinear.from_quantized_linear)
    else:
        make = (ShardedToAllLinear.from_linear if dense
                else QuantizedShardedToAllLinear.from_quantized_linear)
    return make(module, segments=segments, group=group)


def _uniform(input_dims: int, shape: tuple) -> mx.array:
    scale = math.sqrt(1.0 / input_dims)
    return mx.random.uniform(low=-scale, high=scale, shape=shape)


def _check_outputs(output_dims: int, ranks: int) -> None:
    if output_dims % ranks != 0:
        raise ValueError(f"Cannot shard the output of size {output_dims} across {ranks} devices.")


def _check_inputs(input_dims: int, ranks: int) -> None:
    if input_dims % ranks != 0:
        raise ValueError(
            f"The input of size {input_dims} cannot be sharded across {ranks} devices.")


def _sharded_from_linear(cls: type, linear_layer: Module, predicate: Callable,
                         group: Optional[mx.distributed.Group]) -> Module:
    """A sharded layer of ``cls`` holding this rank's slices of ``linear_layer``'s parameters."""
    group = group or mx.distributed.init()
    output_dims, input_dims = linear_layer.weight.shape
    layer = cls(input_dims, output_dims, hasattr(linear_layer, "bias"), group)
    layer.update(_shard(linear_layer.parameters(), predicate, group))
    return layer


class AllToShardedLinear(Module):
    """A Linear layer whose output features are split across the group: each rank computes
    its slice; the input's gradient is all-summed over the ranks."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Optional[mx.distributed.Group] = None) -> None:
        super().__init__()
        self.group = group or mx.distributed.init()
        ranks = self.group.size()
        _check_outputs(output_dims, ranks)
        self.weight = _uniform(input_dims, (output_dims // ranks, input_dims))
        if bias:
            self.bias = _uniform(input_dims, (output_dims // ranks,))

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (f"input_dims={in_dims}, output_dims={out_dims * self.group.size()}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        x = sum_gradients(self.group)(x)
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Segments = 1,
                    group: Optional[mx.distributed.Group] = None) -> "AllToShardedLinear":
        return _sharded_from_linear(cls, linear_layer, _all_to_sharded(segments), group)


class ShardedToAllLinear(Module):
    """A Linear layer whose input features are split across the group: each rank multiplies
    its slice and the partial products are all-summed, so every rank gets the full output."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Optional[mx.distributed.Group] = None) -> None:
        super().__init__()
        self.group = group or mx.distributed.init()
        ranks = self.group.size()
        _check_inputs(input_dims, ranks)
        self.weight = _uniform(input_dims, (output_dims, input_dims // ranks))
        if bias:
            self.bias = _uniform(input_dims, (output_dims,))

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (f"input_dims={in_dims * self.group.size()}, output_dims={out_dims}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        x = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Segments = 1,
                    group: Optional[mx.distributed.Group] = None) -> "ShardedToAllLinear":
        return _sharded_from_linear(cls, linear_layer, _sharded_to_all(segments), group)


class _QuantizedSharded(Module):
    """What the two quantized sharded layers share: the quantized weight (frozen, as in
    QuantizedLinear), the dense zero bias, the repr and the matmul."""

    def _setup(self, weight: mx.array, bias_dims: int, bias: bool, group_size: int, bits: int,
               mode: str) -> None:
        self.weight, self.scales, *biases = mx.quantize(weight, group_size, bits, mode=mode)
        self.biases = biases[0] if biases else None
        if bias:
            self.bias = mx.zeros((bias_dims,))
        self.freeze()

    def unfreeze(self, *args: Any, **kwargs: Any) -> Module:
        """Unfreeze contained modules only: the quantized parameters stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _dims(self) -> tuple[int, int]:
        out_dims, packed = self.weight.shape
        return packed * 32 // self.bits, out_dims

    def _extra_repr(self) -> str:
        in_dims, out_dims = self._full_dims()
        return (f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def _matmul(self, x: mx.array) -> mx.array:
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self.get("biases"), transpose=True,
                                   group_size=self.group_size, bits=self.bits, mode=self.mode)

    @classmethod
    def _from_quantized(cls, layer: Module, predicate: Callable,
                        group: Optional[mx.distributed.Group]) -> Module:
        group = group or mx.distributed.init()
        output_dims, packed = layer.weight.shape
        out = cls(packed * 32 // layer.bits, output_dims, hasattr(layer, "bias"),
                  group_size=layer.group_size, bits=layer.bits,
                  mode=getattr(layer, "mode", "affine"), group=group)
        out.update(_shard(layer.parameters(), predicate, group))
        return out


class QuantizedAllToShardedLinear(_QuantizedSharded):
    """AllToShardedLinear with a quantized weight (frozen parameters, as QuantizedLinear)."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = 64, bits: int = 4, mode: str = "affine",
                 group: Optional[mx.distributed.Group] = None) -> None:
        super().__init__()
        self.group_size, self.bits, self.mode = group_size, bits, mode
        self.group = group or mx.distributed.init()
        ranks = self.group.size()
        _check_outputs(output_dims, ranks)
        self._setup(_uniform(input_dims, (output_dims // ranks, input_dims)),
                    output_dims // ranks, bias, group_size, bits, mode)

    def _full_dims(self) -> tuple[int, int]:
        in_dims, out_dims = self._dims()
        return in_dims, out_dims * self.group.size()

    def __call__(self, x: mx.array) -> mx.array:
        x = self._matmul(sum_gradients(self.group)(x))
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *, segments: Segments = 1,
                              group: Optional[mx.distributed.Group] = None
                              ) -> "QuantizedAllToShardedLinear":
        return cls._from_quantized(quantized_linear_layer, _all_to_sharded(segments), group)


class QuantizedShardedToAllLinear(_QuantizedSharded):
    """ShardedToAllLinear with a quantized weight (frozen parameters, as QuantizedLinear)."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = 64, bits: int = 4, mode: str = "affine",
                 group: Optional[mx.distributed.Group] = None) -> None:
        super().__init__()
        self.group_size, self.bits, self.mode = group_size, bits, mode
        self.group = group or mx.distributed.init()
        ranks = self.group.size()
        _check_inputs(input_dims, ranks)
        self._setup(_uniform(input_dims, (output_dims, input_dims // ranks)), output_dims,
                    bias, group_size, bits, mode)

    def _full_dims(self) -> tuple[int, int]:
        in_dims, out_dims = self._dims()
        return in_dims * self.group.size(), out_dims

    def __call__(self, x: mx.array) -> mx.array:
        x = mx.distributed.all_sum(self._matmul(x), group=self.group)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *, segments: Segments = 1,
                              group: Optional[mx.distributed.Group] = None
                              ) -> "QuantizedShardedToAllLinear":
        return cls._from_quantized(quantized_linear_layer, _sharded_to_all(segments), group)


def _make_gather_fn(group: mx.distributed.Group, full_shapes: list, shard_sizes: list,
                    compute_dtype: Optional[mx.Dtype]) -> Callable:
    """All-gather a list of axis-0 shards into full parameters (one flat all_gather); the
    backward pass sum-scatters the cotangents and averages them over the ranks."""
    ranks = group.size()
    bounds = reduce(lambda acc, n: acc + [acc[-1] + n], shard_sizes, [0])[1:-1]
    shard_shapes = [(s[0] // ranks,) + tuple(s[1:]) for s in full_shapes]

    def cast(x: mx.array, dtype: Optional[mx.Dtype]) -> mx.array:
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)

    @mx.custom_function
    def gather(shards: list) -> list:
        flat = mx.concatenate([cast(s.reshape(1, -1), compute_dtype) for s in shards], axis=1)
        full = mx.distributed.all_gather(flat, group=group)
        return [p.reshape(shape) for p, shape in zip(mx.split(full, bounds, axis=1),
                                                     full_shapes)]

    @gather.vjp
    def gather_vjp(shards: list, cotangents: list, _: Any) -> list:
        flat = mx.concatenate([c.reshape(ranks, -1) for c in cotangents], axis=1)
        mine = mx.distributed.sum_scatter(flat, group=group) / ranks
        return [cast(p.reshape(shape), s.dtype)
                for p, shape, s in zip(mx.split(mine, bounds, axis=1), shard_shapes, shards)]

    return gather


def _shardable(module: Module, key: str, value: Any) -> bool:
    """Module.valid_parameter_filter, leaving nested FullyShardedModules to themselves."""
    if isinstance(value, FullyShardedModule):
        return False
    return Module.valid_parameter_filter(module, key, value)


class FullyShardedModule(Module):
    """Wraps a module so each rank keeps an axis-0 shard of every parameter: the full
    parameters are gathered for each call and the gradients reduce-scattered back. Made by
    ``fully_shard`` (which returns the module itself on a group of one process)."""

    def __init__(self, module: Module, group: Optional[mx.distributed.Group] = None,
                 compute_dtype: Optional[mx.Dtype] = None) -> None:
        super().__init__()
        group = group or mx.distributed.init()
        ranks = group.size()
        params = module.filter_and_map(_shardable)
        flat = tree_flatten(params)
        for path, a in flat:
            if a.ndim == 0:
                raise ValueError(f"Cannot shard parameter '{path}' because it is a scalar.")
            if a.shape[0] % ranks != 0:
                raise ValueError(f"Cannot shard parameter '{path}' with shape {a.shape} "
                                 f"across {ranks} devices: axis 0 must be divisible by {ranks}.")
        object.__setattr__(self, "_paths", [k for k, _ in flat])
        module.update(_shard(params, lambda p, w: 0, group))
        self.module = module
        self._gather_fn = _make_gather_fn(group, [a.shape for _, a in flat],
                                          [a.size // ranks for _, a in flat], compute_dtype)

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _gathered_call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        shards = self.module.filter_and_map(_shardable)
        fulls = self._gather_fn([a for _, a in tree_flatten(shards)])
        self.module.update(tree_unflatten(list(zip(self._paths, fulls))))
        try:
            return fn(*args, **kwargs)
        finally:
            self.module.update(shards)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._gathered_call(self.module, *args, **kwargs)

    def as_linear(self, *args: Any, **kwargs: Any) -> Any:
        return self._gathered_call(self.module.as_linear, *args, **kwargs)


def fully_shard(module: Module, *, group: Optional[mx.distributed.Group] = None,
                compute_dtype: Optional[mx.Dtype] = None) -> Module:
    """``module`` wrapped in a FullyShardedModule; the module itself for a group of one process,
    for an already wrapped module, or when it has no parameter to shard (as MLX)."""
    group = group or mx.distributed.init()
    if group.size() == 1 or isinstance(module, FullyShardedModule):
        return module
    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
