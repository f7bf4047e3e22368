"""FFT primitive: complex/real forward and inverse n-dimensional transforms.

The op functions (core/fft.py) pad or crop the input to the transform sizes first and cast it
(float32 for the forward real transform, complex64 otherwise), so the primitive transforms
exactly the input's extents along ``axes`` (for the inverse real transform, the last axis holds
n//2 + 1 bins and ``n`` gives the output length).

CPU: numpy.fft in double precision; the evaluator rounds to complex64/float32 as MLX returns.

GPU: cuFFT (backend/cuda/cufft.py), single precision, one axis at a time as numpy does:
C2C for fft/ifft; for rfftn R2C on the last of ``axes`` first, then C2C on the others; for
irfftn C2C on the others, then C2R on the last axis last. Each step is one batched 1-D plan in
cuFFT's advanced layout (element x of batch b at b*dist + x*stride), read in place when the
axis and the other axes of the view allow it (e.g. a contiguous array's last axis, or its first
axis when all the others collapse into one stride), else after one copy that moves the axis
last. Each step writes a fresh array in its input's memory order, so the result may be a
permuted (non-contiguous) view, as a transpose is. C2R gets an input we own (cuFFT overwrites
it), with the imaginary parts of the zero and (even n) Nyquist bins cleared, which numpy's
(and MLX's) irfft ignore and cuFFT does not promise to. cuFFT does not scale: ``norm`` is one
elementwise multiply at the end ("backward": the inverse divides by prod(n); "ortho": both by
sqrt(prod(n)); "forward": the forward divides). ``gpu_kernel`` is True only where cuFFT loads
and PYCUDAMLX_DISABLE_CUFFT is not set; otherwise the evaluator runs eval_cpu on the host view
of managed memory (which PYCUDAMLX_STRICT_GPU=1 refuses).

The step planning (``steps``, ``batched_layout``, ``norm_scale``, ``run_steps``) is pure logic
over anything with GpuArray's view interface, so tests check it on the CPU against numpy with a
numpy model of cuFFT's layout (tests/test_fft_plan.py).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive

# cufftType values (cufft.h), repeated here so that the planning logic imports no CUDA module.
R2C, C2R, C2C = 0x2A, 0x2C, 0x29
FORWARD, INVERSE = -1, 1
#: Input pointers used in place must be this aligned (pool blocks are; odd views are copied).
ALIGN = 16


def steps(axes: Sequence[int], n: Sequence[int], inverse: bool, real: bool
          ) -> list[tuple[int, int, int]]:
    """(axis, cufftType, signal length) in execution order."""
    pairs = list(zip(axes, n))
    if real and not inverse:
        return [(pairs[-1][0], R2C, pairs[-1][1])] + [(a, C2C, m) for a, m in
                                                        reversed(pairs[:-1])]
    if real:
        return [(a, C2C, m) for a, m in pairs[:-1]] + [(pairs[-1][0], C2R, pairs[-1][1])]
    return [(a, C2C, m) for a, m in reversed(pairs)]


def norm_scale(norm: str, inverse: bool, total: int) -> float:
    """The factor applied once after the unnormalised transforms (total = prod(n))."""
    if norm == "ortho":
        return 1.0 / math.sqrt(total)
    if (norm == "backward") == inverse:  # backward inverse, or forward forward
        return 1.0 / total
    return 1.0


def batched_layout(shape: Sequence[int], strides: Sequence[int], axis: int
                   ) -> tuple[int, int, int | None, tuple[int, ...]] | None:
    """cuFFT's advanced layout for 1-D transforms along ``axis`` of a strided view:
    (stride, batch, dist, batch dims outer to inner), or None when the other axes do not
    collapse into one batch stride (or a stride is not positive). dist is None for batch 1."""
    n = shape[axis]
    stride = strides[axis] if n != 1 else 1
    if stride <= 0:
        return None
    others = [(strides[i], shape[i], i) for i in range(len(shape)) if i != axis and shape[i] != 1]
    if any(s <= 0 for s, _, _ in others):
        return None
    others.sort(key=lambda t: (-t[0], t[2]))
    for (s1, _, _), (s2, e2, _) in zip(others, others[1:]):
        if s1 != s2 * e2:
            return None
    batch = 1
    for _, e, _ in others:
        batch *= e
    dist = others[-1][0] if others else None
    return stride, batch, dist, tuple(i for _, _, i in others)


def _contiguous(shape: Sequence[int]) -> list[int]:
    st = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = acc
        acc *= shape[i]
    return st


def _perm_strides(perm: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """Logical strides of an array of ``shape`` laid out in memory in the order ``perm``
    (outer to inner)."""
    pst = _contiguous([shape[p] for p in perm])
    st = [0] * len(shape)
    for k, p in enumerate(perm):
        st[p] = pst[k]
    return tuple(st)


def _out_view(ops: Any, perm: Sequence[int], shape: Sequence[int], dtype: dt.Dtype) -> Any:
    """A fresh array laid out in memory in the order ``perm``, seen as a view of ``shape``."""
    phys = ops.empty(tuple(shape[p] for p in perm), dtype)
    return phys.view(phys.offset, tuple(shape), _perm_strides(perm, shape))


def _memory_order(shape: Sequence[int], strides: Sequence[int]) -> list[int]:
    return sorted(range(len(shape)), key=lambda i: (-(strides[i] if shape[i] != 1 else 0), i))


def _embeds(fft_type: int, n: int) -> tuple[int, int]:
    half = n // 2 + 1
    return (n, half) if fft_type == R2C else (half, n) if fft_type == C2R else (n, n)


def _direct(ops: Any, cur: Any, axis: int, out_shape: Sequence[int], out_dtype: dt.Dtype
            ) -> tuple[Any, tuple, tuple] | None:
    """The output and both layouts when cuFFT can read ``cur`` in place, else None. The
    output takes ``cur``'s memory order, so its batches enumerate as the input's do."""
    lin = batched_layout(cur.shape, cur.strides, axis)
    if lin is None:
        return None
    perm = _memory_order(cur.shape, cur.strides)
    lout = batched_layout(out_shape, _perm_strides(perm, out_shape), axis)
    if lout is None or lout[3] != lin[3] or lout[1] != lin[1]:
        return None
    return _out_view(ops, perm, out_shape, out_dtype), lin, lout


def _step(ops: Any, cur: Any, owned: bool, axis: int, fft_type: int, n: int,
          direction: int) -> Any:
    """One batched 1-D transform of ``cur`` along ``axis``; returns the new array."""
    in_dtype = dt.float32 if fft_type == R2C else dt.complex64
    out_dtype = dt.float32 if fft_type == C2R else dt.complex64
    inem, onem = _embeds(fft_type, n)
    if cur.shape[axis] != inem:
        raise ValueError(f"fft step: axis {axis} has {cur.shape[axis]} elements, the "
                         f"transform reads {inem}")
    out_shape = list(cur.shape)
    out_shape[axis] = onem
    plan = None
    if cur.dtype == in_dtype and (owned or fft_type != C2R) and ops.aligned(cur):
        plan = _direct(ops, cur, axis, out_shape, out_dtype)
    if plan is None:  # one copy, the axis last (and the dtype cuFFT reads)
        perm = [i for i in range(len(cur.shape)) if i != axis] + [axis]
        moved = cur.view(cur.offset, tuple(cur.shape[p] for p in perm),
                         tuple(cur.strides[p] for p in perm))
        phys = ops.copy(moved, in_dtype)
        cur = phys.view(phys.offset, tuple(cur.shape), _perm_strides(perm, cur.shape))
        out = _out_view(ops, perm, out_shape, out_dtype)
        lin = batched_layout(cur.shape, cur.strides, axis)
        lout = batched_layout(out.shape, out.strides, axis)
        plan = (out, lin, lout)
    out, (istride, batch, idist, _), (ostride, _, odist, _) = plan
    if batch == 1:
        idist, odist = istride * inem, ostride * onem
    if fft_type == C2R:
        _clear_hermitian_imag(ops, cur, axis, n)
    ops.execute(fft_type, n, batch, istride, idist, ostride, odist, cur, out, direction)
    return out


def _clear_hermitian_imag(ops: Any, x: Any, axis: int, n: int) -> None:
    """Zero the imaginary parts of bin 0 and (even n) bin n/2 of a complex64 view we own."""
    shape = list(x.shape)
    shape[axis] = 1
    fst = tuple(2 * s for s in x.strides)
    bins = [0] + ([n // 2] if n % 2 == 0 and n // 2 < x.shape[axis] else [])
    for k in bins:
        ops.zero(x.view(2 * (x.offset + k * x.strides[axis]) + 1, tuple(shape), fst,
                        dt.float32))


def run_steps(ops: Any, x: Any, axes: Sequence[int], n: Sequence[int], inverse: bool,
              real: bool, norm: str, out_spec: OutSpec) -> Any:
    """The GPU algorithm over an ``ops`` backend (see FFT.eval_gpu's _GpuOps)."""
    shape, dtype = out_spec
    if 0 in shape or 0 in x.shape:
        out = ops.empty(tuple(shape), dtype)
        if out.size:
            ops.zero(out)
        return out
    direction = INVERSE if inverse else FORWARD
    cur, owned = x, False
    for axis, fft_type, m in steps(axes, n, inverse, real):
        cur = _step(ops, cur, owned, axis, fft_type, m, direction)
        owned = True
    if tuple(cur.shape) != tuple(shape):
        raise ValueError(f"fft: computed shape {cur.shape}, expected {shape}")
    total = 1
    for m in n:
        total *= m
    scale = norm_scale(norm, inverse, total)
    if cur.dtype != dtype:  # not reached through the op layer
        cur = ops.copy(cur, dtype)
    if scale != 1.0:
        if ops.is_dense(cur):
            ops.scale(cur, scale, cur)
        else:
            out = ops.empty(tuple(shape), dtype)
            ops.scale(cur, scale, out)
            cur = out
    return cur


class _GpuOps:
    """run_steps' backend on a CUDA stream: GpuArrays, the copy/fill/multiply kernels, cuFFT."""

    __slots__ = ("stream", "gpu_array", "launch", "cufft", "memory")
    _modules: tuple | None = None

    def __init__(self, stream: Any) -> None:
        mods = _GpuOps._modules
        if mods is None:
            from ...backend.cuda import array as gpu_array, cufft, elementwise as launch, memory

            mods = _GpuOps._modules = (gpu_array, launch, cufft, memory)
        self.stream = stream
        self.gpu_array, self.launch, self.cufft, self.memory = mods

    def empty(self, shape: tuple[int, ...], dtype: dt.Dtype) -> Any:
        return self.gpu_array.empty(shape, dtype, self.stream)

    def copy(self, x: Any, dtype: dt.Dtype) -> Any:
        out = self.gpu_array.empty(tuple(x.shape), dtype, self.stream)
        self.launch.copy(x, out, self.stream)
        return out

    def aligned(self, x: Any) -> bool:
        return (x.buffer.ptr + x.offset * x.dtype.size) % ALIGN == 0

    @staticmethod
    def is_dense(x: Any) -> bool:
        return x.is_contiguous()

    def zero(self, view: Any) -> None:
        """Write zeros through a (strided) view."""
        z = self.gpu_array.empty((1,), view.dtype, self.stream)
        self.memory.memset(z.buffer, 0, self.stream, view.dtype.size)
        self.launch.copy(z.view(0, tuple(view.shape), (0,) * len(view.shape)), view, self.stream)

    def scale(self, x: Any, factor: float, out: Any) -> None:
        s = self.gpu_array.empty((1,), x.dtype, self.stream)
        self.launch.fill(s, np.array(factor, dtype=x.dtype.np_dtype).tobytes(), self.stream)
        self.launch.binary("multiply", x, s.view(0, tuple(x.shape), (0,) * len(x.shape)), out,
                           self.stream)

    def execute(self, fft_type: int, n: int, batch: int, istride: int, idist: int, ostride: int,
                odist: int, src: Any, dst: Any, direction: int) -> None:
        stream = self.stream
        sp = src.buffer.ptr + src.offset * src.dtype.size
        dp = dst.buffer.ptr + dst.offset * dst.dtype.size
        self.cufft.execute(stream, fft_type, n, batch, istride, idist, ostride, odist, sp, dp,
                           direction)
        src.buffer.last_use = stream
        buf = dst.buffer
        buf.last_write = stream
        buf.last_use = stream
        if buf.location != stream.device.index:
            buf.set_location(stream.device.index)


_cufft_module: Any = None


def _cufft() -> Any:
    global _cufft_module
    if _cufft_module is None:
        from ...backend.cuda import cufft

        _cufft_module = cufft
    return _cufft_module


class FFT(Primitive):
    """``real``/``inverse`` transform over ``axes`` with sizes ``n``, scaled as ``norm`` says."""

    __slots__ = ("axes", "n", "inverse", "real", "norm")
    name = "fft"

    def __init__(self, axes: tuple[int, ...], n: tuple[int, ...], inverse: bool, real: bool,
                 norm: str) -> None:
        self.axes = axes
        self.n = n
        self.inverse = inverse
        self.real = real
        self.norm = norm

    @property
    def gpu_kernel(self) -> bool:  # type: ignore[override]
        """cuFFT when it loads and is not disabled (read by the evaluator on GPU streams only);
        otherwise the host fallback."""
        return _cufft().available()

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        shape, dtype = outs[0]
        if 0 in shape or 0 in x.shape:
            return [np.zeros(shape, dtype=dtype.np_dtype)]
        if self.real and not self.inverse:
            x = x.real.astype(np.float64) if np.iscomplexobj(x) else x.astype(np.float64)
            r = np.fft.rfftn(x, s=self.n, axes=self.axes, norm=self.norm)
        elif self.real:
            r = np.fft.irfftn(x.astype(np.complex128), s=self.n, axes=self.axes, norm=self.norm)
        elif self.inverse:
            r = np.fft.ifftn(x.astype(np.complex128), s=self.n, axes=self.axes, norm=self.norm)
        else:
            r = np.fft.fftn(x.astype(np.complex128), s=self.n, axes=self.axes, norm=self.norm)
        return [r]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any
                 ) -> list[Any]:
        return [run_steps(_GpuOps(stream), inputs[0], self.axes, self.n, self.inverse,
                          self.real, self.norm, outs[0])]
