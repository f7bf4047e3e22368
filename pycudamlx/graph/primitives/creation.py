"""Creation primitives without inputs: full, arange, linspace, tri/eye masks, window functions.

Each writes a new contiguous output. On the GPU: a fill (or a memset for zeros) and the
sequence.cu kernels; on the CPU: numpy computing the same formulas, so both backends agree.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive, cuda_modules
from .elementwise import cast_numpy
from .shape import _scalar_numpy


_cuda = cuda_modules("array", "elementwise", "indexing", "memory")


class Full(Primitive):
    """Every element = one Python scalar, converted to the output dtype as MLX converts it."""

    __slots__ = ("value",)
    name = "full"
    gpu_kernel = True

    def __init__(self, value: Any) -> None:
        self.value = value

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        return [np.full(shape, _scalar_numpy(self.value, dtype))]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch, _, memory = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        if out.size:
            raw = _scalar_numpy(self.value, dtype).tobytes()
            if raw.count(0) == len(raw):
                memory.memset(out.buffer, 0, stream, out.size * dtype.size)
            else:
                launch.fill(out, raw, stream)
        return [out]


class Arange(Primitive):
    """out[i] = start + i * step. Integer dtypes: MLX's start and step in the dtype (its own
    wrapping arithmetic); floating dtypes: computed in double and rounded once (MLX's CPU adds
    the step repeatedly in float32, which drifts and sticks at 2**24: not reproduced)."""

    __slots__ = ("start", "step")
    name = "arange"
    gpu_kernel = True

    def __init__(self, start: Any, step: Any) -> None:
        self.start = start
        self.step = step

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        n = shape[0]
        if dtype.kind in "iu":
            bits = 8 * dtype.size
            mask = (1 << 64) - 1
            i = np.arange(n, dtype=np.uint64)
            with np.errstate(over="ignore"):
                v = np.uint64(self.start & mask) + i * np.uint64(self.step & mask)
            if bits < 64:
                v = v & np.uint64((1 << bits) - 1)
            return [v.astype(np.dtype(f"u{dtype.size}")).view(dtype.np_dtype)]
        v = float(self.start) + np.arange(n, dtype=np.float64) * float(self.step)
        return [cast_numpy(v, dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing, _ = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        indexing.arange(out, self.start, self.step, stream)
        return [out]


class Linspace(Primitive):
    """MLX's linspace: t = i / den, (1 - t) * start + t * stop, in float32 (in float64 for a
    float64 output), then cast to the dtype."""

    __slots__ = ("start", "stop", "den")
    name = "linspace"
    gpu_kernel = True

    def __init__(self, start: float, stop: float, den: int) -> None:
        self.start = float(start)
        self.stop = float(stop)
        self.den = den

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        ct = np.float64 if dtype is dt.float64 else np.float32
        with np.errstate(all="ignore"):
            start, stop = ct(self.start), ct(self.stop)
            if self.den == 0:
                v = np.full(shape, start)
            else:
                t = np.arange(shape[0], dtype=ct) / ct(self.den)
                v = (ct(1) - t) * start + t * stop
        return [cast_numpy(v, dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing, _ = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        start, stop = self.start, self.stop
        if dtype is not dt.float64:  # the kernel takes float32 arguments: round them first
            start, stop = float(np.float32(start)), float(np.float32(stop))
        indexing.linspace(out, start, stop, float(self.den), stream)
        return [out]


class TriMask(Primitive):
    """tri (c - r <= k) or eye (c - r == k) as a rows x cols array of the output dtype."""

    __slots__ = ("k", "eye", "name")
    gpu_kernel = True

    def __init__(self, k: int, eye: bool) -> None:
        self.k = k
        self.eye = eye
        self.name = "eye" if eye else "tri"

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        (rows, cols), dtype = outs[0]
        c = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        mask = c == self.k if self.eye else c <= self.k
        return [cast_numpy(mask, dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing, _ = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        indexing.tri_mask(out, self.k, self.eye, stream)
        return [out]


class Window(Primitive):
    """hanning / hamming / blackman / bartlett of length M, float32 (numpy's formulas in
    double, rounded once)."""

    __slots__ = ("kind", "name")
    gpu_kernel = True

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = kind

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        (m,), _ = outs[0]
        return [getattr(np, self.kind)(m).astype(np.float32)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing, _ = _cuda()
        shape, _ = outs[0]
        out = gpu_array.empty(shape, dt.float32, stream)
        indexing.window(out, self.kind, stream)
        return [out]
