"""Launchers for the elementwise families: copy/cast, fill, unary, binary, where.

Operands are strided views: any object with ``buffer`` (memory.Buffer), ``offset`` (elements),
``shape``, ``strides`` (elements; 0 broadcasts, negative flips) and ``dtype`` (with ``name`` and
``size``). Outputs of unary/binary/where are contiguous. Each launcher collapses dimensions that
are contiguous in every operand, then takes, in order: the vectorised contiguous kernel (all
operands dense and 16-byte aligned); for binary ops, a row kernel where every operand runs along
rows densely or not at all (a + row, a + col[:, None]); a tiled kernel where an operand of a 2-D
launch lies down columns (a.T); otherwise a strided kernel with 32-bit indexing where it fits.
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

from . import compiler, registry
from .driver import CudaDevice
from .launch import grid_for
from .stream import CudaStream

BLOCK = 256
_INT32_MAX = 2**31 - 1
_layout_structs = {n: struct.Struct(f"<{registry.MAX_DIMS}q{n * registry.MAX_DIMS}qi4x")
                   for n in (1, 2, 3)}


_module = compiler.module_for


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for extent in reversed(shape):
        strides.append(acc)
        acc *= extent
    return tuple(reversed(strides))


def collapse(shape: Sequence[int], strides: Sequence[Sequence[int]]
             ) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dimensions and merge neighbours that are contiguous in every operand."""
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d, extent in enumerate(shape):
        if extent == 1:
            continue
        if out_shape and all(st[-1] == s[d] * extent for st, s in zip(out_strides, strides)):
            out_shape[-1] *= extent
            for st, s in zip(out_strides, strides):
                st[-1] = s[d]
            continue
        out_shape.append(extent)
        for st, s in zip(out_strides, strides):
            st.append(s[d])
    return out_shape, out_strides


def _pack_layout(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> bytes:
    pad = registry.MAX_DIMS - len(shape)
    values = list(shape) + [1] * pad
    for st in strides:
        values += list(st) + [0] * pad
    return _layout_structs[len(strides)].pack(*values, len(shape))


def _fits_int32(n: int, shape: Sequence[int], strides: Sequence[Sequence[int]]) -> bool:
    if n > _INT32_MAX:
        return False
    for st in strides:
        if sum(abs(s) * (e - 1) for s, e in zip(st, shape)) > _INT32_MAX:
            return False
    return True


def _ptr(view: Any) -> int:
    return view.buffer.ptr + view.offset * view.dtype.size


def _record_write(out: Any, stream: CudaStream) -> None:
    buf = out.buffer
    buf.last_write = stream
    if buf.location != stream.device.index:
        buf.set_location(stream.device.index)


# --------------------------------------------------------------------------------------------------


# Launch plans: everything about a launch that depends only on shapes, strides, dtypes and
# pointer alignment is decided once and cached, so a loop of small ops pays for one dict lookup,
# the pointer arithmetic and cuLaunchKernel. A plan is (kernel, grid, block, trailing arguments)
# launched as kernel(grid, block, stream, *pointers, *trailing); () means nothing to launch (an
# empty array), None that the rank exceeds MAX_DIMS and the launch takes the splitting path.
_plans: dict[tuple, tuple | None] = {}
_MAX_PLANS = 8192
_NOTHING: tuple = ()
#: 2-D blocks of the tiled kernels (common.cuh TileSide: each thread moves TILE/8 rows).
_TILE_BLOCK = (32, 8, 1)
#: Row kernels need this many packs per row to keep a block busy; shorter rows go strided.
_MIN_ROW_PACKS = 128
_MAX_GRID_Y = 65535


def _remember(key: tuple, plan: tuple | None) -> tuple | None:
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    _plans[key] = plan
    return plan


def _size(shape: Sequence[int]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _cover(items: int) -> int:
    """Blocks for one item per thread: streaming kernels run fastest with the whole range in
    flight at once (measured on the H200: 0.99-1.03 of copy bandwidth against 0.91-0.94 for a
    grid of one resident wave looping); the kernels still loop, so any size is correct."""
    return max(1, min(-(-items // BLOCK), _INT32_MAX))


def _plan_contig(kernel: Any, n: int, width: int) -> tuple:
    return (kernel, _cover(n // width), BLOCK, (n,))


def _plan_strided(mod: compiler.LoadedModule, index32: int, index64: int, n: int,
                  shape: list[int], layout: list[list[int]], device: CudaDevice
                  ) -> tuple | None:
    if len(shape) > registry.MAX_DIMS:
        return None
    kernel = mod.kernel_list[index32 if _fits_int32(n, shape, layout) else index64]
    return (kernel, grid_for(n, BLOCK, device), BLOCK, (n, _pack_layout(shape, layout)))


def _down_columns(strides: Sequence[int]) -> bool:
    """An operand of a 2-D launch whose neighbours lie down a column (a.T): reading it along
    rows would touch one element per memory transaction, so it goes through a tile."""
    return strides[1] not in (0, 1) and abs(strides[0]) < abs(strides[1])


def _plan_tiled(kernel: Any, shape: list[int], dtype_name: str, strides: list[int]) -> tuple:
    rows, cols = shape
    tile = registry.tile_side(dtype_name)
    grid = (-(-cols // tile), min(-(-rows // tile), _MAX_GRID_Y), 1)
    return (kernel, grid, _TILE_BLOCK, (rows, cols, *strides))


def copy(src: Any, dst: Any, stream: CudaStream) -> None:
    """dst[...] = src cast to dst's dtype; src may broadcast (stride 0) over dst's shape."""
    sp, dp = _ptr(src), _ptr(dst)
    key = ("copy", src.dtype, dst.dtype, dst.shape, src.strides, dst.strides,
           not (sp | dp) & 15, stream.device.index)
    plan = _plans.get(key, False)
    if plan is False:
        plan = _remember(key, _plan_copy(src, dst, not (sp | dp) & 15, stream.device))
    if plan:
        kernel, grid, block, trailing = plan
        kernel(grid, block, stream, sp, dp, *trailing)
    elif plan is None:
        mod = _module(registry.copy_module, (src.dtype.name, dst.dtype.name), stream.device)
        shape, (s_st, d_st) = collapse(dst.shape, (src.strides, dst.strides))
        _launch_layout(mod, 4, 5, _size(shape), shape, [s_st, d_st], (src, dst), [sp, dp],
                       stream)
    _record_write(dst, stream)


def _plan_copy(src: Any, dst: Any, aligned: bool, device: CudaDevice) -> tuple | None:
    n = _size(dst.shape)
    if n == 0:
        return _NOTHING
    mod = _module(registry.copy_module, (src.dtype.name, dst.dtype.name), device)
    shape, (s_st, d_st) = collapse(dst.shape, (src.strides, dst.strides))
    if len(shape) <= 1 and (not shape or (s_st[0] == 1 and d_st[0] == 1)):
        width = 16 // max(src.dtype.size, dst.dtype.size) if aligned else 1
        return _plan_contig(mod.kernel_list[0 if aligned else 1], n, width)
    if list(d_st) == list(contiguous_strides(shape)):
        if len(shape) == 2 and _down_columns(s_st):
            return _plan_tiled(mod.kernel_list[6], shape, src.dtype.name, s_st)
        return _plan_strided(mod, 2, 3, n, shape, [s_st], device)
    return _plan_strided(mod, 4, 5, n, shape, [s_st, d_st], device)


def fill(dst: Any, value_bytes: bytes, stream: CudaStream) -> None:
    """Fill a contiguous view with one value, given as the dtype's raw bytes."""
    n = _size(dst.shape)
    if n == 0:
        return
    name = dst.dtype.name
    mod = _module(registry.copy_module, (name, name), stream.device)
    dp = _ptr(dst)
    vec = dp % 16 == 0
    k = mod.kernel_list[7 if vec else 8]
    width = 16 // dst.dtype.size if vec else 1
    k(_cover(n // width), BLOCK, stream, dp, value_bytes, n)
    _record_write(dst, stream)


def unary(op: str, a: Any, out: Any, stream: CudaStream) -> None:
    """out = op(a); out is contiguous, a any strided view of out's shape."""
    ap, op_ = _ptr(a), _ptr(out)
    key = (op, a.dtype, out.shape, a.strides, not (ap | op_) & 15, stream.device.index)
    plan = _plans.get(key, False)
    if plan is False:
        plan = _remember(key, _plan_unary(op, a, out, not (ap | op_) & 15, stream.device))
    if plan:
        kernel, grid, block, trailing = plan
        kernel(grid, block, stream, ap, op_, *trailing)
    elif plan is None:
        mod = _module(registry.unary_module, (op, a.dtype.name), stream.device)
        shape, (a_st,) = collapse(out.shape, (a.strides,))
        _launch_layout(mod, 2, 3, _size(shape), shape, [a_st], (a, out), [ap, op_], stream)
    _record_write(out, stream)


def _plan_unary(op: str, a: Any, out: Any, aligned: bool, device: CudaDevice) -> tuple | None:
    n = _size(out.shape)
    if n == 0:
        return _NOTHING
    mod = _module(registry.unary_module, (op, a.dtype.name), device)
    shape, (a_st,) = collapse(out.shape, (a.strides,))
    if len(shape) <= 1 and (not shape or a_st[0] == 1):
        width = 16 // max(a.dtype.size, out.dtype.size) if aligned else 1
        return _plan_contig(mod.kernel_list[0 if aligned else 1], n, width)
    if len(shape) == 2 and _down_columns(a_st):
        return _plan_tiled(mod.kernel_list[4], shape, a.dtype.name, a_st)
    return _plan_strided(mod, 2, 3, n, shape, [a_st], device)


def binary(op: str, a: Any, b: Any, out: Any, stream: CudaStream) -> None:
    """out = op(a, b); a and b have out's shape (broadcast by stride 0) and one dtype."""
    ap, bp, op_ = _ptr(a), _ptr(b), _ptr(out)
    aligned = not (ap | bp | op_) & 15
    key = (op, a.dtype, out.shape, a.strides, b.strides, aligned, stream.device.index)
    plan = _plans.get(key, False)
    if plan is False:
        plan = _remember(key, _plan_binary(op, a, b, out, aligned, stream.device))
    if plan:
        kernel, grid, block, trailing = plan
        kernel(grid, block, stream, ap, bp, op_, *trailing)
    elif plan is None:
        mod = _module(registry.binary_module, (op, a.dtype.name), stream.device)
        shape, (a_st, b_st) = collapse(out.shape, (a.strides, b.strides))
        _launch_layout(mod, 6, 7, _size(shape), shape, [a_st, b_st], (a, b, out),
                       [ap, bp, op_], stream)
    _record_write(out, stream)


def _plan_binary(op: str, a: Any, b: Any, out: Any, aligned: bool, device: CudaDevice
                 ) -> tuple | None:
    n = _size(out.shape)
    if n == 0:
        return _NOTHING
    mod = _module(registry.binary_module, (op, a.dtype.name), device)
    shape, (a_st, b_st) = collapse(out.shape, (a.strides, b.strides))
    width = 16 // max(a.dtype.size, out.dtype.size)
    if len(shape) <= 1:
        sa = not shape or a_st[0] == 0
        sb = not shape or b_st[0] == 0
        dense_a = not shape or a_st[0] in (0, 1)
        dense_b = not shape or b_st[0] in (0, 1)
        if dense_a and dense_b and not (sa and sb and shape):
            if sa and sb:  # a single element
                sa = sb = False
            variant = 1 if sa else 2 if sb else 0
            return _plan_contig(mod.kernel_list[variant + (0 if aligned else 3)], n,
                                width if aligned else 1)
    elif len(shape) - 1 <= registry.MAX_DIMS:
        rows = _plan_rows(op, a.dtype.name, shape, a_st, b_st, aligned, width, device)
        if rows is not None:
            return rows
        tiles = (int(_down_columns(a_st)), int(_down_columns(b_st))) if len(shape) == 2 else ()
        if tiles in registry.TILE_VARIANTS:
            mod2d = _module(registry.binary2d_module, (op, a.dtype.name), device)
            kernel = mod2d.kernel_list[3 + registry.TILE_VARIANTS.index(tiles)]
            return _plan_tiled(kernel, shape, a.dtype.name, [a_st[0], a_st[1], b_st[0], b_st[1]])
    return _plan_strided(mod, 6, 7, n, shape or [1], [a_st or [0], b_st or [0]], device)


def _plan_rows(op: str, dtype_name: str, shape: list[int], a_st: list[int], b_st: list[int],
               aligned: bool, width: int, device: CudaDevice) -> tuple | None:
    """binary_rows, where every operand runs along rows densely (stride 1) or not at all (0)."""
    ia, ib = a_st[-1], b_st[-1]
    if (ia, ib) not in registry.ROW_VARIANTS:
        return None
    cols = shape[-1]
    vec = aligned and cols % width == 0 and all(
        s % width == 0 for st, inner in ((a_st, ia), (b_st, ib)) if inner for s in st[:-1])
    if not vec or cols // width < _MIN_ROW_PACKS:
        return None
    rows = _size(shape) // cols
    mod2d = _module(registry.binary2d_module, (op, dtype_name), device)
    kernel = mod2d.kernel_list[registry.ROW_VARIANTS.index((ia, ib))]
    # A few packs per thread along a row (measured on the H200: 0.87-0.94 of copy bandwidth
    # for 8,192-wide rows, against 0.83-0.86 with one pack per thread).
    grid = (max(1, -(-cols // width // (4 * BLOCK))), min(rows, _MAX_GRID_Y), 1)
    return (kernel, grid, BLOCK, (cols, rows, _pack_layout(shape[:-1], [a_st[:-1], b_st[:-1]])))


def where(cond: Any, a: Any, b: Any, out: Any, stream: CudaStream) -> None:
    """out = cond ? a : b, every input broadcast to out's shape by its strides."""
    n = 1
    for e in out.shape:
        n *= e
    if n == 0:
        return
    mod = _module(registry.where_module, (a.dtype.name,), stream.device)
    shape, sts = collapse(out.shape, (cond.strides, a.strides, b.strides))
    _launch_layout(mod, 0, 1, n, shape or [1], [s or [0] for s in sts], (cond, a, b, out),
                   [_ptr(cond), _ptr(a), _ptr(b), _ptr(out)], stream)
    _record_write(out, stream)


def all_true(x: Any, out: Any, stream: CudaStream) -> None:
    """out (a one-element bool view) = every element of bool view x is true."""
    fill(out, b"\x01", stream)
    n = 1
    for e in x.shape:
        n *= e
    if n == 0:
        return
    if list(x.strides) != list(contiguous_strides(x.shape)):
        from .array import empty

        dense = empty(tuple(x.shape), x.dtype, stream)
        copy(x, dense, stream)
        dense.buffer.last_use = stream  # freed in stream order, after the kernel below
        x = dense
    mod = _module(registry.all_true_module, (), stream.device)
    mod.kernel_list[0](grid_for(n, BLOCK, stream.device), BLOCK, stream, _ptr(x), _ptr(out), n)
    _record_write(out, stream)


def _launch_layout(mod: compiler.LoadedModule, index32: int, index64: int, n: int,
                   shape: list[int], layout: list[list[int]], views: Sequence[Any],
                   ptrs: list[int], stream: CudaStream) -> None:
    """A strided launch. ``layout`` holds the strides the kernel takes (its inputs', and for
    copy_general the destination's); ``views`` and ``ptrs`` are every operand, the output last.
    Rank beyond MAX_DIMS is split into a Python loop over the leading dimensions."""
    if len(shape) > registry.MAX_DIMS:
        lead = len(shape) - registry.MAX_DIMS
        inner = shape[lead:]
        inner_n = 1
        for e in inner:
            inner_n *= e
        all_strides = layout + ([] if len(layout) == len(ptrs) else
                                [list(contiguous_strides(shape))])
        for idx in range(n // inner_n):
            rem = idx
            offs = [0] * len(ptrs)
            for d in range(lead - 1, -1, -1):
                rem, r = divmod(rem, shape[d])
                for k, st in enumerate(all_strides):
                    offs[k] += r * st[d]
            sub = [p + o * v.dtype.size for p, o, v in zip(ptrs, offs, views)]
            _launch_layout(mod, index32, index64, inner_n, inner,
                           [st[lead:] for st in layout], views, sub, stream)
        return
    kernel = mod.kernel_list[index32 if _fits_int32(n, shape, layout) else index64]
    kernel(grid_for(n, BLOCK, stream.device), BLOCK, stream, *ptrs, n,
           _pack_layout(shape, layout))
