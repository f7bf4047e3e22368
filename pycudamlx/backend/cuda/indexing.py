"""Launchers for sequences (sequence.cu), gathers and scatters (gather.cu), and trace's sum.

Operands are strided GpuArray-like views (``buffer``, ``offset``, ``shape``, ``strides`` in
elements, ``dtype``), as for the elementwise launchers. Outputs of arange, linspace, masks,
windows, gathers and sums are contiguous; fills and scatters write strided views.
"""

from __future__ import annotations

import struct
from typing import Any, Iterator, Sequence

from . import compiler, memory, registry
from .driver import CudaDevice
from .elementwise import BLOCK, _fits_int32, _pack_layout, _ptr, _record_write, collapse, \
    contiguous_strides
from .launch import grid_for
from .stream import CudaStream

_MAX_DIMS = registry.MAX_DIMS
_MAX_INDEX = registry.MAX_INDEX
_INT32_MAX = 2**31 - 1
_index_struct = struct.Struct(
    f"<{_MAX_DIMS}q{_MAX_DIMS}q{_MAX_DIMS}q{_MAX_INDEX * _MAX_DIMS}q{_MAX_INDEX}q"
    f"{_MAX_INDEX}q{_MAX_INDEX}q{_MAX_INDEX}qii")
assert _index_struct.size == registry.INDEX_ARGS_BYTES


_module = compiler.module_for


def _size(shape: Sequence[int]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _chunks(shape: list[int], strides: list[list[int]]
            ) -> Iterator[tuple[list[int], list[list[int]], list[int], int]]:
    """Split a rank beyond MAX_DIMS into launches over the last MAX_DIMS dimensions: yields
    (shape, strides, element offset per operand, linear offset of the chunk)."""
    if len(shape) <= _MAX_DIMS:
        yield shape, strides, [0] * len(strides), 0
        return
    lead = len(shape) - _MAX_DIMS
    inner = shape[lead:]
    inner_n = _size(inner)
    for chunk in range(_size(shape[:lead])):
        rem = chunk
        offs = [0] * len(strides)
        for d in range(lead - 1, -1, -1):
            rem, r = divmod(rem, shape[d])
            for k, st in enumerate(strides):
                offs[k] += r * st[d]
        yield inner, [st[lead:] for st in strides], offs, chunk * inner_n


# -- sequences ---------------------------------------------------------------------------------


def _seq(dtype_name: str, device: CudaDevice) -> compiler.LoadedModule:
    return _module(registry.sequence_module, (dtype_name,), device)


def arange(out: Any, start: Any, step: Any, stream: CudaStream) -> None:
    """out[i] = start + i * step: integer dtypes wrap in their own width (start and step are
    Python ints), floating and complex ones compute in double (floats)."""
    n = _size(out.shape)
    if n == 0:
        return
    t = out.dtype.c_type
    mod = _seq(out.dtype.name, stream.device)
    if out.dtype.kind in "iu":
        mask = (1 << 64) - 1
        mod[f"arange_int<{t}>"](grid_for(n, BLOCK, stream.device), BLOCK, stream, _ptr(out), n,
                                int(start) & mask, int(step) & mask)
    else:
        mod[f"arange_float<{t}>"](grid_for(n, BLOCK, stream.device), BLOCK, stream, _ptr(out), n,
                                  float(start), float(step))
    _record_write(out, stream)


def linspace(out: Any, start: float, stop: float, den: float, stream: CudaStream) -> None:
    """MLX's linspace: (1 - t) * start + t * stop, t = i / den (den 0: start), in float32
    (float64 for a float64 output; start and stop arrive already rounded to that type)."""
    n = _size(out.shape)
    if n == 0:
        return
    mod = _seq(out.dtype.name, stream.device)
    name = "linspace_d" if out.dtype.name == "float64" else "linspace"
    mod[f"{name}<{out.dtype.c_type}>"](grid_for(n, BLOCK, stream.device), BLOCK, stream,
                                       _ptr(out), n, float(start), float(stop), float(den))
    _record_write(out, stream)


def tri_mask(out: Any, k: int, eye: bool, stream: CudaStream) -> None:
    """A contiguous rows x cols ``out``: 1 where c - r <= k (tri) or c - r == k (eye)."""
    n = _size(out.shape)
    if n == 0:
        return
    mod = _seq(out.dtype.name, stream.device)
    mod[f"tri_mask<{out.dtype.c_type}>"](grid_for(n, BLOCK, stream.device), BLOCK, stream,
                                         _ptr(out), n, out.shape[-1], k, 1 if eye else 0)
    _record_write(out, stream)


def tri_select(x: Any, out: Any, k: int, lower: bool, stream: CudaStream) -> None:
    """tril (lower) / triu of x (strided, out's shape) into the contiguous ``out``."""
    n = _size(out.shape)
    if n == 0:
        return
    rows, cols = out.shape[-2], out.shape[-1]
    mod = _seq(out.dtype.name, stream.device)
    t = out.dtype.c_type
    shape, (x_st,) = collapse(out.shape, (x.strides,))
    xp, op = _ptr(x), _ptr(out)
    for sub, (st,), (off,), lin in _chunks(shape or [1], [x_st or [0]]):
        m = _size(sub)
        i = "int32_t" if _fits_int32(m, sub, [st]) else "int64_t"
        mod[f"tri_select<{t}, {i}>"](grid_for(m, BLOCK, stream.device), BLOCK, stream,
                                     xp + off * x.dtype.size, op + lin * out.dtype.size, m,
                                     _pack_layout(sub, [st]), rows, cols, k, 1 if lower else 0)
    _record_write(out, stream)


def fill_strided(dst: Any, value_bytes: bytes, stream: CudaStream) -> None:
    """Every element of the strided view ``dst`` = the value (the dtype's raw bytes)."""
    n = _size(dst.shape)
    if n == 0:
        return
    mod = _seq(dst.dtype.name, stream.device)
    t = dst.dtype.c_type
    shape, (d_st,) = collapse(dst.shape, (dst.strides,))
    dp = _ptr(dst)
    for sub, (st,), (off,), _ in _chunks(shape or [1], [d_st or [0]]):
        m = _size(sub)
        i = "int32_t" if _fits_int32(m, sub, [st]) else "int64_t"
        mod[f"fill_strided<{t}, {i}>"](grid_for(m, BLOCK, stream.device), BLOCK, stream,
                                       dp + off * dst.dtype.size, value_bytes, m,
                                       _pack_layout(sub, [st]))
    _record_write(dst, stream)


WINDOWS = {"hanning": 0, "hamming": 1, "blackman": 2, "bartlett": 3}


def window(out: Any, kind: str, stream: CudaStream) -> None:
    """A float32 window function of length out.shape[0] (numpy's formulas, in double)."""
    n = _size(out.shape)
    if n == 0:
        return
    mod = _seq("float32", stream.device)
    mod["window"](grid_for(n, BLOCK, stream.device), BLOCK, stream, _ptr(out), n, WINDOWS[kind])
    _record_write(out, stream)


def diag_sum(x: Any, out: Any, length: int, dstride: int, stream: CudaStream) -> None:
    """out[i] = sum over j < length of x[i's offset + j * dstride] (x: a strided view of out's
    shape addressing each diagonal's first element)."""
    n = _size(out.shape)
    if n == 0:
        return
    mod = _module(registry.trace_module, (x.dtype.name, out.dtype.name), stream.device)
    t, u = x.dtype.c_type, out.dtype.c_type
    shape, (x_st,) = collapse(out.shape, (x.strides,))
    xp, op = _ptr(x), _ptr(out)
    for sub, (st,), (off,), lin in _chunks(shape or [1], [x_st or [0]]):
        m = _size(sub)
        span = abs(dstride) * max(length - 1, 0)
        i = "int32_t" if (_fits_int32(m, sub, [st]) and span <= _INT32_MAX) else "int64_t"
        mod[f"diag_sum<{t}, {u}, {i}>"](grid_for(m, BLOCK, stream.device), BLOCK, stream,
                                        xp + off * x.dtype.size, op + lin * out.dtype.size, m,
                                        _pack_layout(sub, [st]), length, dstride)
    _record_write(out, stream)


# -- gathers and scatters ----------------------------------------------------------------------


class IndexOperand:
    """One index array of a gather/scatter: a view (int32 or int64), its strides over the
    iteration shape, the indexed axis' stride in the main operand, the size negative indices
    wrap by (0: no wrap), and the clamp bound (or, in skip mode, the valid range's end)."""

    __slots__ = ("view", "strides", "axis_stride", "wrap", "clamp_hi")

    def __init__(self, view: Any, strides: Sequence[int], axis_stride: int, wrap: int,
                 clamp_hi: int) -> None:
        self.view = view
        self.strides = list(strides)
        self.axis_stride = axis_stride
        self.wrap = wrap
        self.clamp_hi = clamp_hi


def _pack_index_args(shape: list[int], main: list[int], upd: list[int],
                     idx_strides: list[list[int]], ptrs: list[int], ops: Sequence[IndexOperand]
                     ) -> bytes:
    pad = _MAX_DIMS - len(shape)
    values: list[int] = list(shape) + [1] * pad
    values += list(main) + [0] * pad
    values += list(upd) + [0] * pad
    for k in range(_MAX_INDEX):
        values += (list(idx_strides[k]) + [0] * pad) if k < len(ops) else [0] * _MAX_DIMS
    values += ptrs + [0] * (_MAX_INDEX - len(ptrs))
    values += [op.axis_stride for op in ops] + [0] * (_MAX_INDEX - len(ops))
    values += [op.wrap for op in ops] + [0] * (_MAX_INDEX - len(ops))
    values += [op.clamp_hi for op in ops] + [0] * (_MAX_INDEX - len(ops))
    values += [len(shape), len(ops)]
    return _index_struct.pack(*values)


def _index_dtype(ops: Sequence[IndexOperand]) -> str:
    names = {op.view.dtype.name for op in ops}
    if len(names) != 1 or not names <= set(registry.INDEX_DTYPES):
        raise TypeError(f"index arrays must all be int32 or all int64, got {sorted(names)}")
    return names.pop()


def gather(src: Any, out: Any, strides: Sequence[int], ops: Sequence[IndexOperand],
           stream: CudaStream, *, fill: bool = False) -> None:
    """out (contiguous) = src at strided offset ``strides`` over out's shape plus each index
    array's value (wrapped, then clamped; with ``fill``, 0 where an index is out of range)
    times its axis stride."""
    n = _size(out.shape)
    if n == 0:
        return
    if len(ops) > _MAX_INDEX:
        raise ValueError(f"at most {_MAX_INDEX} index arrays per gather, got {len(ops)}")
    idx_name = _index_dtype(ops)
    mod = _module(registry.gather_module, (src.dtype.name, idx_name), stream.device)
    t, x = src.dtype.c_type, ops[0].view.dtype.c_type
    all_strides = [list(strides), list(contiguous_strides(out.shape))] + [op.strides for op in ops]
    shape, sts = collapse(out.shape, all_strides)
    if not shape:
        shape, sts = [1], [[0] for _ in sts]
    sp, op_ = _ptr(src), _ptr(out)
    iptrs = [_ptr(o.view) for o in ops]
    isz = ops[0].view.dtype.size
    for sub, (s_st, o_st, *i_sts), offs, lin in _chunks(shape, sts):
        m = _size(sub)
        fits = _fits_int32(m, sub, [s_st] + i_sts)
        args = _pack_index_args(sub, s_st, [0] * len(sub), i_sts,
                                [p + o * isz for p, o in zip(iptrs, offs[2:])], ops)
        mod[f"gather<{t}, {x}, {'int32_t' if fits else 'int64_t'}>"](
            grid_for(m, BLOCK, stream.device), BLOCK, stream, sp + offs[0] * src.dtype.size,
            op_ + lin * out.dtype.size, m, args, 1 if fill else 0)
    _record_write(out, stream)


def take(src: Any, idx: Any, out: Any, outer: int, size: int, inner: int,
         stream: CudaStream) -> None:
    """out[o, k, r] = src[o, idx[k], r] (0 where idx[k], wrapped once, is out of [0, size)),
    for a row-contiguous ``src`` viewed as [outer][size][inner], a contiguous int32/int64
    ``idx`` and a contiguous ``out`` [outer][idx.size][inner]. Never reads outside src."""
    nidx = _size(idx.shape)
    total = outer * nidx * inner
    if total == 0:
        return
    mod = _module(registry.gather_module, (src.dtype.name, idx.dtype.name), stream.device)
    t, x = src.dtype.c_type, idx.dtype.c_type
    sp, ip, op_ = _ptr(src), _ptr(idx), _ptr(out)
    tsz, isz = src.dtype.size, idx.dtype.size
    if outer == 1 and inner == 1:
        v = 4 if (ip % (4 * isz) == 0 and op_ % (4 * tsz) == 0) else 1
        threads = (nidx + v - 1) // v
        blocks = max(1, min((threads + BLOCK - 1) // BLOCK, 2**31 - 1))
        mod[f"take_flat<{t}, {x}, {v}>"](blocks, BLOCK, stream, sp, ip, op_, nidx, size)
    else:
        w = registry.take_vector_width(src.dtype.name)
        pack = w * tsz
        if not (inner % w == 0 and sp % pack == 0 and op_ % pack == 0):
            w = 1
        packs = total // w
        i = "int32_t" if packs <= _INT32_MAX and outer * size * (inner // w) <= _INT32_MAX \
            else "int64_t"
        mod[f"take_rows<{t}, {x}, {i}, {w}>"](grid_for(packs, BLOCK, stream.device), BLOCK,
                                               stream, sp, ip, op_, packs, nidx, size,
                                               inner // w)
    _record_write(out, stream)


def scatter(upd: Any, dst: Any, shape: Sequence[int], dst_strides: Sequence[int],
            upd_strides: Sequence[int], ops: Sequence[IndexOperand], stream: CudaStream, *,
            skip: bool, unique: bool, op: str = "set") -> None:
    """For each element of the iteration ``shape``: dst[strided offset + index terms] =
    upd[strided offset]. ``skip``: elements with an index out of range are not written (else
    indices clamp). Unless ``unique``, duplicate destinations take the last update (in
    row-major order of the iteration), through a winner array with one entry per element of
    dst's buffer (so flipped destination views index it in range too). ``op`` "add", "prod",
    "max" or "min" combines each update into dst atomically instead (duplicates combine;
    out-of-range elements are skipped); ``ops`` may then be empty (a basic-index view)."""
    n = _size(shape)
    if n == 0:
        return
    if len(ops) > _MAX_INDEX:
        raise ValueError(f"at most {_MAX_INDEX} index arrays per scatter, got {len(ops)}")
    if op != "set":
        _scatter_reduce(upd, dst, shape, dst_strides, upd_strides, ops, stream, op)
        return
    idx_name = _index_dtype(ops)
    mod = _module(registry.scatter_module, (dst.dtype.name, idx_name), stream.device)
    kernels = mod.kernel_list
    all_strides = [list(dst_strides), list(upd_strides)] + [op.strides for op in ops]
    cshape, sts = collapse(shape, all_strides)
    if not cshape:
        cshape, sts = [1], [[0] for _ in sts]
    dp, up = _ptr(dst), _ptr(upd)
    iptrs = [_ptr(o.view) for o in ops]
    isz = ops[0].view.dtype.size
    # Variant 0: int32 index math with 32-bit winners; variant 1: int64 math, 64-bit winners.
    launches = []
    for sub, (d_st, u_st, *i_sts), offs, lin in _chunks(cshape, sts):
        m = _size(sub)
        variant = 0 if _fits_int32(m, sub, [d_st, u_st] + i_sts) else 1
        args = _pack_index_args(sub, d_st, u_st, i_sts,
                                [p + o * isz for p, o in zip(iptrs, offs[2:])], ops)
        launches.append((variant, m, args, offs))
    wsize = 8 if any(v for v, *_ in launches) else 4
    if wsize == 8:
        launches = [(1, m, args, offs) for _, m, args, offs in launches]
    winner = None
    if not unique:
        dst_elements = dst.buffer.nbytes // dst.dtype.size
        winner = memory.allocate(dst_elements * wsize, stream.device,
                                 _memory_kind(stream.device), stream)
        memory.memset(winner, 0, stream)
    try:
        grid = lambda m: grid_for(m, BLOCK, stream.device)  # noqa: E731
        if winner is not None:
            # Ranks beyond MAX_DIMS launch in row-major chunks; each chunk claims and writes on
            # its own (a fresh winner array), and later chunks overwrite earlier ones.
            for variant, m, args, offs in launches:
                wp = winner.ptr + (dst.offset + offs[0]) * wsize
                kernels[variant](grid(m), BLOCK, stream, wp, m, args, 1 if skip else 0)
                kernels[2 + variant](grid(m), BLOCK, stream, up + offs[1] * upd.dtype.size,
                                     dp + offs[0] * dst.dtype.size, wp, m, args,
                                     1 if skip else 0)
                if len(launches) > 1:
                    memory.memset(winner, 0, stream)
        else:
            for variant, m, args, offs in launches:
                kernels[2 + variant](grid(m), BLOCK, stream, up + offs[1] * upd.dtype.size,
                                     dp + offs[0] * dst.dtype.size, 0, m, args,
                                     1 if skip else 0)
    finally:
        if winner is not None:
            winner.last_use = stream
            winner.free()
    _record_write(dst, stream)


def _scatter_reduce(upd: Any, dst: Any, shape: Sequence[int], dst_strides: Sequence[int],
                    upd_strides: Sequence[int], ops: Sequence[IndexOperand],
                    stream: CudaStream, op: str) -> None:
    idx_name = _index_dtype(ops) if ops else "int32"
    mod = _module(registry.scatter_module, (dst.dtype.name, idx_name), stream.device)
    t, x = dst.dtype.c_type, registry._ctype(idx_name)
    functor = registry.SCATTER_OPS[op]
    all_strides = [list(dst_strides), list(upd_strides)] + [o.strides for o in ops]
    cshape, sts = collapse(shape, all_strides)
    if not cshape:
        cshape, sts = [1], [[0] for _ in sts]
    dp, up = _ptr(dst), _ptr(upd)
    iptrs = [_ptr(o.view) for o in ops]
    isz = ops[0].view.dtype.size if ops else 4
    for sub, (d_st, u_st, *i_sts), offs, _ in _chunks(cshape, sts):
        m = _size(sub)
        i = "int32_t" if _fits_int32(m, sub, [d_st, u_st] + i_sts) else "int64_t"
        args = _pack_index_args(sub, d_st, u_st, i_sts,
                                [p + o * isz for p, o in zip(iptrs, offs[2:])], ops)
        mod[f"scatter_reduce<{t}, {x}, {i}, {functor}>"](
            grid_for(m, BLOCK, stream.device), BLOCK, stream, up + offs[1] * upd.dtype.size,
            dp + offs[0] * dst.dtype.size, m, args)
    _record_write(dst, stream)


def _memory_kind(device: CudaDevice) -> str:
    from .array import memory_kind

    return memory_kind(device)


__all__ = ["arange", "linspace", "tri_mask", "tri_select", "fill_strided", "window", "diag_sum",
           "IndexOperand", "gather", "take", "scatter", "WINDOWS"]
