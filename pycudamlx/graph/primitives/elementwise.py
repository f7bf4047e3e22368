"""Elementwise primitives: unary and binary ops from the op table, astype, where.

Inputs reach a primitive already promoted to one dtype (the op functions insert ``astype``);
broadcasting happens here, as stride-0 views, so no broadcast input is ever materialised.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ...backend import optable
from ..primitive import OutSpec, Primitive, cuda_modules


_cuda = cuda_modules("array", "elementwise")  # (GpuArray module, launchers)


def broadcast_view(x: Any, shape: tuple[int, ...]) -> Any:
    """A GpuArray view of ``x`` broadcast to ``shape`` (stride 0 where it is broadcast)."""
    if x.shape == shape:
        return x
    lead = len(shape) - len(x.shape)
    strides = [0] * lead + [0 if e == 1 and t != 1 else s
                            for e, s, t in zip(x.shape, x.strides, shape[lead:])]
    return x.view(x.offset, shape, tuple(strides))


class Unary(Primitive):
    __slots__ = ("op", "name")
    gpu_kernel = True

    def __init__(self, op: optable.ElementwiseOp) -> None:
        self.op = op
        self.name = op.name

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [self.op.numpy(inputs[0])]  # under evaluate's np.errstate(all="ignore")

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.unary(self.op.name, inputs[0], out, stream)
        return [out]


class Binary(Primitive):
    __slots__ = ("op", "name")
    gpu_kernel = True

    def __init__(self, op: optable.ElementwiseOp) -> None:
        self.op = op
        self.name = op.name

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [self.op.numpy(inputs[0], inputs[1])]  # under evaluate's np.errstate

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.binary(self.op.name, broadcast_view(inputs[0], shape),
                      broadcast_view(inputs[1], shape), out, stream)
        return [out]


def _float_to_int(x: np.ndarray, dtype: dt.Dtype) -> np.ndarray:
    """Float (or complex: the real part) to integer, as common.cuh's float_to_int: MLX's CPU
    results where every processor agrees (NaN -> 0; 8- and 16-bit targets wrap modulo 2**bits
    inside int32's range, since the CPU converts through int32), saturation elsewhere out of
    range (where MLX's own result depends on the processor)."""
    target = dtype.np_dtype
    info = np.iinfo(target)
    src = x.real if x.dtype.kind == "c" else x
    with np.errstate(all="ignore"):
        t = np.trunc(src.astype(np.float64))
        t = np.where(np.isnan(t), 0.0, t)
        if dtype.size <= 2:
            lo, hi = -2.0**31, 2.0**31
        else:
            lo, hi = float(info.min), float(info.max) + 1.0
        inside = (t >= lo) & (t < hi)
        if dtype is dt.uint64:
            out = np.where(inside, t, 0.0).astype(np.uint64)
        else:
            out = np.where(inside, t, 0.0).astype(np.int64).astype(target)
        sat = np.where(t < 0, np.array(info.min, target), np.array(info.max, target))
        out = np.where(inside, out, sat)
    return out.astype(target, copy=False)


def cast_numpy(x: np.ndarray, dtype: dt.Dtype) -> np.ndarray:
    """numpy astype with defined results where C++ leaves them undefined (float -> integer: see
    _float_to_int); the GPU kernels (common.cuh Cast) give the same."""
    target = dtype.np_dtype
    if dtype.kind in "iu" and x.dtype.kind in "fcV":  # numpy's bfloat16 is kind 'V'
        return _float_to_int(x, dtype)
    if dtype is dt.bool_ and x.dtype.kind == "c":
        return x != 0
    if x.dtype.kind == "c" and dtype.kind in "f":
        return x.real.astype(target)
    with np.errstate(all="ignore"):
        return x.astype(target)


class AsType(Primitive):
    __slots__ = ("dtype",)
    name = "astype"
    gpu_kernel = True

    def __init__(self, dtype: dt.Dtype) -> None:
        self.dtype = dtype

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [cast_numpy(inputs[0], self.dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        launch.copy(broadcast_view(inputs[0], shape), out, stream)
        return [out]


class Where(Primitive):
    __slots__ = ()
    name = "where"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [np.where(inputs[0], inputs[1], inputs[2])]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        c, a, b = (broadcast_view(x, shape) for x in inputs)
        launch.where(c, a, b, out, stream)
        return [out]


class DivMod(Primitive):
    """``divmod``: the floor quotient and the remainder, two outputs of one node."""

    __slots__ = ()
    name = "divmod"
    gpu_kernel = True
    _quotient = optable.OPS["floor_divide"]
    _remainder = optable.OPS["remainder"]

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        a, b = inputs
        with np.errstate(all="ignore"):
            return [self._quotient.numpy(a, b), self._remainder.numpy(a, b)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        shape, dtype = outs[0]
        a = broadcast_view(inputs[0], shape)
        b = broadcast_view(inputs[1], shape)
        q = gpu_array.empty(shape, dtype, stream)
        r = gpu_array.empty(shape, dtype, stream)
        launch.binary("floor_divide", a, b, q, stream)
        launch.binary("remainder", a, b, r, stream)
        return [q, r]


class AllTrue(Primitive):
    """Whether every element of a bool array is true, as a 0-d bool (allclose, array_equal)."""

    __slots__ = ()
    name = "all_true"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [np.array(bool(np.all(inputs[0])))]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch = _cuda()
        out = gpu_array.empty((), dt.bool_, stream)
        launch.all_true(inputs[0], out, stream)
        return [out]
