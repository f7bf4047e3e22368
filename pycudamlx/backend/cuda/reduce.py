"""Launchers for reduce.cu: reductions, arg-reductions, scans, softmax and median.

Every reduction is brought to one of two shapes of a contiguous array: rows (the reduced
elements of each output are contiguous and innermost) or columns (reduce the middle axis of
(outer, len, inner)). Non-contiguous inputs are copied dense first; axis sets that are not one
group after merging neighbours are permuted into rows by one copy. Launch plans (kernels, grid,
split factor) are cached per (op, dtype, layout, alignment), so a loop of small reductions pays a
dict lookup and the launches.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Sequence

from ... import dtypes as dt
from . import compiler, memory, registry
from . import elementwise as ew
from .array import GpuArray, contiguous_strides, empty
from .launch import grid_for
from .stream import CudaStream

BLOCK = 256
_module = compiler.module_for
_plans: dict[tuple, Any] = {}
_MAX_PLANS = 4096


def _remember(key: tuple, plan: Any) -> Any:
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    _plans[key] = plan
    return plan


def _size(shape: Sequence[int]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _ptr(v: GpuArray | None) -> int:
    return 0 if v is None else v.buffer.ptr + v.offset * v.dtype.size


def scratch(shape: tuple[int, ...], dtype: dt.Dtype, stream: CudaStream) -> GpuArray:
    """A temporary on ``stream``, returned to the pool in stream order once dropped."""
    a = empty(shape, dtype, stream)
    a.buffer.last_use = stream
    return a


def dense(x: GpuArray, stream: CudaStream, dtype: dt.Dtype | None = None) -> GpuArray:
    """``x`` itself when row-contiguous (and of ``dtype``), else a contiguous (cast) copy."""
    if x.is_contiguous() and (dtype is None or dtype is x.dtype):
        return x
    d = scratch(tuple(x.shape), dtype or x.dtype, stream)
    ew.copy(x, d, stream)
    return d


def _groups(shape: Sequence[int], axes: Sequence[int]) -> list[list]:
    """[extent, reduced] of a contiguous shape, size-1 dimensions dropped, neighbours with the
    same status merged."""
    g: list[list] = []
    for i, e in enumerate(shape):
        if e == 1:
            continue
        r = i in axes
        if g and g[-1][1] == r:
            g[-1][0] *= e
        else:
            g.append([e, r])
    return g


def _permuted(x: GpuArray, axes: Sequence[int], stream: CudaStream) -> GpuArray:
    """A contiguous copy of ``x`` with the kept axes first and the reduced axes last."""
    order = [i for i in range(len(x.shape)) if i not in axes] + list(axes)
    view = x.view(x.offset, tuple(x.shape[i] for i in order), tuple(x.strides[i] for i in order))
    d = scratch(view.shape, x.dtype, stream)
    ew.copy(view, d, stream)
    return d


def reorder_dense(x: GpuArray, axes: Sequence[int]) -> tuple[GpuArray, tuple[int, ...]] | None:
    """A contiguous view of the same elements with the dimensions reordered (``x.T`` of a
    dense array is one), and the reduced axes renumbered; None when there is none, or when it
    would reorder the kept dimensions (the output order would change)."""
    nd = len(x.shape)
    dims = [i for i in range(nd) if x.shape[i] != 1]
    if any(x.strides[i] <= 0 for i in dims):
        return None
    order = sorted(range(nd), key=lambda i: (-x.strides[i] if x.shape[i] != 1 else 0, i))
    kept = [i for i in order if i not in axes and x.shape[i] != 1]
    if kept != sorted(kept):
        return None
    # size-1 dimensions go where they do not break the kept order: keep them all in place
    order = [i for i in order if x.shape[i] != 1] + [i for i in range(nd) if x.shape[i] == 1]
    view = x.view(x.offset, tuple(x.shape[i] for i in order),
                  tuple(x.strides[i] for i in order))
    if not view.is_contiguous():
        return None
    return view, tuple(order.index(a) for a in axes)


def layout(x: GpuArray, axes: Sequence[int], stream: CudaStream
           ) -> tuple[GpuArray, int, int, int]:
    """(contiguous x, outer, len, inner) such that the reduction is over axis 1 of
    (outer, len, inner); inner == 1 means rows. Dense inputs that need no permutation are
    decided once per (shape, strides, axes)."""
    key = ("layout", x.shape, x.strides, tuple(axes))
    known = _plans.get(key)
    if known is not None:
        return (x,) + known
    if x.is_contiguous():
        g = _groups(x.shape, axes)
        red = [i for i, (_, r) in enumerate(g) if r]
        if not red:
            known = (_size(x.shape), 1, 1)
        elif len(red) == 1:
            k = red[0]
            known = (_size(e for e, _ in g[:k]), g[k][0], _size(e for e, _ in g[k + 1:]))
        if known is not None:
            _remember(key, known)
            return (x,) + known
    if not x.is_contiguous():
        reordered = reorder_dense(x, axes)
        if reordered is not None:
            x, axes = reordered
            axes = tuple(sorted(axes))
    x = dense(x, stream)
    g = _groups(x.shape, axes)
    red = [i for i, (_, r) in enumerate(g) if r]
    if not red:
        return x, _size(x.shape), 1, 1
    if len(red) == 1:
        k = red[0]
        return x, _size(e for e, _ in g[:k]), g[k][0], _size(e for e, _ in g[k + 1:])
    x = _permuted(x, axes, stream)
    cut = len(x.shape) - len(axes)
    return x, _size(x.shape[:cut]), _size(x.shape[cut:]), 1


# --------------------------------------------------------------------------------------------------
# Reductions


_occupancy: dict[tuple[int, int], int] = {}


def _resident_blocks(kernel: Any, block: int) -> int:
    """Blocks of ``block`` threads one SM holds at once for ``kernel`` (4 if unknown); asked
    once per kernel and block size."""
    key = (id(kernel), block)
    n = _occupancy.get(key)
    if n is None:
        try:
            from . import driver

            cu = driver.init()
            n = max(1, int(driver.call(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor,
                                       kernel.function, block, 0)))
        except Exception:  # noqa: BLE001 - an estimate is enough to size a grid
            n = 4
        _occupancy[key] = n
    return n


def _target_blocks(stream: CudaStream, kernel: Any = None, block: int = 256) -> int:
    """One full wave of resident blocks (a whole number of waves leaves no partial last wave;
    split row reductions ask for _SPLIT_WAVES of them)."""
    per_sm = _resident_blocks(kernel, block) if kernel is not None else 4
    return stream.device.properties.multiprocessors * per_sm


#: Split row reductions: blocks of _SPLIT_BLOCK threads (rows of 8192 or more), _SPLIT_WAVES
#: waves of them, the last block of a row combining the partials (_LAST_BLOCK_FINISHES=False:
#: a second launch, for comparison). scripts/tune_sum.py on the H200, sum of 2^28 float32:
#: 4.50 TB/s with 2 waves of 512 (or 1 of 256), 4.41 with 4 waves, 4.27-4.33 with 8.
_SPLIT_BLOCK = 512
_SPLIT_WAVES = 2
_LAST_BLOCK_FINISHES = True
#: Per-row arrival counters a stream keeps for split row reductions (rows split only while
#: fewer than a few waves of blocks, far below this).
_COUNTERS = 16384
_counters: "weakref.WeakKeyDictionary[CudaStream, int]" = weakref.WeakKeyDictionary()
_counters_lock = threading.Lock()


def _split_counters(stream: CudaStream) -> int:
    """The address of ``stream``'s _COUNTERS uint32 counters, zero between launches (the last
    block of a row resets its count). Device memory of the library's own, like cuBLAS's
    workspace, outside the pool; freed with the stream. One set per stream: launches on one
    stream never overlap, launches on two streams may."""
    ptr = _counters.get(stream)
    if ptr is None:
        with _counters_lock:
            ptr = _counters.get(stream)
            if ptr is None:
                ptr = memory.internal_zeroed(4 * _COUNTERS, stream)
                _counters[stream] = ptr
    return ptr


def _reduce_plan(op: str, dtype: str, outer: int, length: int, inner: int, vec: bool,
                 stream: CudaStream) -> tuple:
    mod = _module(registry.reduce_module, (dtype,), stream.device)
    row_e, cols_e, part_e = registry.reduce_expressions(op, dtype)
    acc = dt.by_name[registry.reduce_variant(op, dtype)[1]]
    if inner == 1:
        rows = outer
        if length <= 256:
            return ("warp", mod[row_e], None, (rows + 7) // 8, 256, 1, acc)
        block = _SPLIT_BLOCK if length >= 8192 else 256
        target = _target_blocks(stream, mod[row_e], block) * _SPLIT_WAVES
        splits = 1
        if rows < target:
            splits = max(1, min(-(-target // rows), length // (block * 16)))
        finish = None
        if splits > 1 and not (_LAST_BLOCK_FINISHES and rows <= _COUNTERS):
            finish = mod[part_e]
        return ("row", mod[row_e], finish, rows * splits, block, splits, acc)
    target = _target_blocks(stream)
    ntiles = -(-inner // 32)
    base = outer * ntiles
    splits = 1
    if base < target and length >= 128:
        splits = max(1, min(-(-target // base), length // 64))
    by = 8 if length >= 8 else max(1, length)
    return ("cols", mod[cols_e], mod[part_e] if splits > 1 else None, base * splits, (32, by, 1),
            splits, acc)


def reduce_into(op: str, x: GpuArray, outer: int, length: int, inner: int, out: GpuArray,
                stream: CudaStream, scale: float = 1.0, aux: GpuArray | None = None) -> None:
    """out[o, i] = reduction ``op`` (a registry.REDUCE_OPS variant) of contiguous ``x`` viewed
    as (outer, length, inner) over axis 1; ``aux`` holds one value per output."""
    n_out = outer * inner
    if n_out == 0:
        return
    xp = _ptr(x)
    vec = inner == 1 and xp % 16 == 0 and (length * x.dtype.size) % 16 == 0
    key = ("reduce", op, x.dtype.name, outer, length, inner, vec, stream.device.index)
    plan = _plans.get(key)
    if plan is None:
        plan = _remember(key, _reduce_plan(op, x.dtype.name, outer, length, inner, vec, stream))
    kind, kernel, finish, grid, block, splits, acc = plan
    op_, ap = _ptr(out), _ptr(aux)
    if kind == "warp":
        kernel(grid, block, stream, xp, op_, 0, ap, 0, outer, length, 1, 1, int(vec), scale)
    elif kind == "row":
        part = scratch((grid,), acc, stream) if splits > 1 else None
        done = _split_counters(stream) if splits > 1 and finish is None else 0
        kernel(grid, block, stream, xp, op_, _ptr(part), ap, done, outer, length, splits, 0,
               int(vec), scale)
        if finish is not None:
            finish(outer, BLOCK, stream, _ptr(part), op_, ap, outer, splits, scale)
    else:
        part = scratch((n_out * splits,), acc, stream) if splits > 1 else None
        kernel(grid, block, stream, xp, op_, _ptr(part), ap, outer, length, inner, splits, scale)
        if finish is not None:
            finish(n_out, BLOCK, stream, _ptr(part), op_, ap, n_out, splits, scale)
    ew._record_write(out, stream)


def _inv(d: int) -> float:
    return 1.0 / d if d > 0 else float("inf")


def reduce(op: str, x: GpuArray, axes: Sequence[int], out: GpuArray, stream: CudaStream,
           ddof: int = 0) -> None:
    """out = ``op`` of x over ``axes`` (sum, prod, max, min, all, any, count_nonzero, mean, var,
    std, logsumexp); ``out`` is contiguous with the reduction's element count."""
    if out.size == 0:
        return
    if op == "median":
        median(x, axes, out, stream)
        return
    xd, outer, length, inner = layout(x, axes, stream)
    n = _size(x.shape[i] for i in axes)
    name = x.dtype.name
    if op == "mean":
        reduce_into("mean", xd, outer, length, inner, out, stream, _inv(n))
    elif op in ("var", "std"):
        w = dt.by_name[registry.reduce_variant("mean_w", name)[0]]
        mean = scratch((out.size,), w, stream)
        reduce_into("mean_w", xd, outer, length, inner, mean, stream, _inv(n))
        reduce_into(op, xd, outer, length, inner, out, stream, _inv(n - ddof), aux=mean)
    elif op == "logsumexp":
        shift = None
        if registry.reduce_variant("lse_max", name) is not None:
            w = dt.by_name[registry.reduce_variant("lse_max", name)[0]]
            shift = scratch((out.size,), w, stream)
            reduce_into("lse_max", xd, outer, length, inner, shift, stream)
        reduce_into("lse", xd, outer, length, inner, out, stream, aux=shift)
    else:
        reduce_into(op, xd, outer, length, inner, out, stream)


def median(x: GpuArray, axes: Sequence[int], out: GpuArray, stream: CudaStream) -> None:
    """The median over ``axes`` (bit-by-bit selection of the middle keys, one block per row)."""
    xd = dense(x, stream)
    g = _groups(xd.shape, axes)
    red = [i for i, (_, r) in enumerate(g) if r]
    if len(red) > 1 or (red and red[0] != len(g) - 1):
        xd = _permuted(xd, axes, stream)
    length = _size(x.shape[i] for i in axes)
    rows = out.size
    mod = _module(registry.scan_module, (x.dtype.name,), stream.device)
    expr = registry.median_expression(x.dtype.name)
    mod[expr](rows, BLOCK, stream, _ptr(xd), _ptr(out), rows, length)
    ew._record_write(out, stream)


def argreduce(op: str, x: GpuArray, axis: int | None, out: GpuArray, stream: CudaStream) -> None:
    """argmax/argmin (uint32) along ``axis`` (None: over the flattened array); few long rows
    split over a wave of blocks writing (value, index) partials."""
    if out.size == 0:
        return
    xd = dense(x, stream)
    if axis is None:
        outer, length, inner = 1, xd.size, 1
    else:
        outer = _size(xd.shape[:axis])
        length = xd.shape[axis]
        inner = _size(xd.shape[axis + 1:])
    mod = _module(registry.scan_module, (x.dtype.name,), stream.device)
    row_e, cols_e, part_e = registry.arg_expressions(op, x.dtype.name)
    if inner > 1 and _few_columns(outer * inner, length):
        xd = _axis_last(xd, outer, length, inner, stream)
        outer, inner = outer * inner, 1
    if inner == 1:
        if length <= 256:
            mod[row_e]((outer + 7) // 8, 256, stream, _ptr(xd), _ptr(out), outer, length, 1, 1,
                       0, 0)
        else:
            block = 512 if length >= 8192 else 256
            target = _target_blocks(stream, mod[row_e], block)
            splits = 1
            if outer < target:
                splits = max(1, min(-(-target // outer), length // (block * 16)))
            if splits > 1:
                acc = dt.by_name[registry.scan_carry_dtype(x.dtype.name)]
                pv = scratch((outer * splits,), acc, stream)
                pi = scratch((outer * splits,), dt.int64, stream)
                mod[row_e](outer * splits, block, stream, _ptr(xd), 0, outer, length, 0, splits,
                           _ptr(pv), _ptr(pi))
                mod[part_e](outer, BLOCK, stream, _ptr(pv), _ptr(pi), _ptr(out), outer, splits)
            else:
                mod[row_e](outer, block, stream, _ptr(xd), _ptr(out), outer, length, 0, 1, 0, 0)
    else:
        mod[cols_e](grid_for(outer * inner, BLOCK, stream.device), BLOCK, stream, _ptr(xd),
                    _ptr(out), outer, length, inner)
    ew._record_write(out, stream)


#: Column kernels give each column one thread walking the axis: below this many columns a long
#: axis is moved innermost by a copy instead, so the row kernels spread it over many threads.
FEW_COLUMNS = 16384


def _few_columns(columns: int, length: int) -> bool:
    return columns < FEW_COLUMNS and length >= 64


def _axis_last(xd: GpuArray, outer: int, length: int, inner: int, stream: CudaStream
               ) -> GpuArray:
    """A contiguous (outer, inner, length) copy of contiguous (outer, length, inner) ``xd``."""
    view = xd.view(xd.offset, (outer, inner, length), (length * inner, 1, inner))
    d = scratch((outer, inner, length), xd.dtype, stream)
    ew.copy(view, d, stream)
    return d


# --------------------------------------------------------------------------------------------------
# Scans, softmax


def scan(op: str, x: GpuArray, axis: int, reverse: bool, inclusive: bool, out: GpuArray,
         stream: CudaStream) -> None:
    """out = the ``op`` scan of x along ``axis`` in out's dtype (the input is cast first)."""
    if out.size == 0:
        return
    xd = dense(x, stream, out.dtype)
    outer = _size(xd.shape[:axis])
    length = xd.shape[axis]
    inner = _size(xd.shape[axis + 1:])
    name = out.dtype.name
    mod = _module(registry.scan_module, (name,), stream.device)
    row_e, cols_e, totals_e = registry.scan_expressions(op, name)
    if inner > 1 and _few_columns(outer * inner, length):
        rows = _axis_last(xd, outer, length, inner, stream)
        res = scratch(rows.shape, out.dtype, stream)
        _scan_rows(op, mod, row_e, totals_e, rows, res, outer * inner, length, reverse,
                   inclusive, stream)
        back = out.view(out.offset, (outer, inner, length), (length * inner, 1, inner))
        ew.copy(res, back, stream)
    elif inner == 1:
        _scan_rows(op, mod, row_e, totals_e, xd, out, outer, length, reverse, inclusive, stream)
    else:
        mod[cols_e](grid_for(outer * inner, BLOCK, stream.device), BLOCK, stream, _ptr(xd),
                    _ptr(out), outer, length, inner, int(reverse), int(inclusive))
    ew._record_write(out, stream)


def _scan_rows(op: str, mod: Any, row_e: str, totals_e: str, xd: GpuArray, out: GpuArray,
               rows: int, length: int, reverse: bool, inclusive: bool, stream: CudaStream
               ) -> None:
    target = _target_blocks(stream)
    if rows < target and length > LONG_SCAN:
        _long_scan(op, mod, row_e, totals_e, xd, out, rows, length, reverse, inclusive,
                   target, stream)
    else:
        mod[row_e](rows, _scan_block(length), stream, _ptr(xd), _ptr(out), rows, length,
                   int(reverse), int(inclusive), length, 0)


#: Rows longer than this (when there are too few rows to fill the GPU) scan in three phases.
LONG_SCAN = 16384
_SCAN_TILE = 4096  # 1024 threads x 4 elements


def _scan_block(length: int) -> int:
    per_thread = -(-length // 4)  # 4 elements per thread and tile
    return min(1024, max(32, (per_thread + 31) // 32 * 32))


def _long_scan(op: str, mod: Any, row_e: str, totals_e: str, xd: GpuArray, out: GpuArray,
               rows: int, length: int, reverse: bool, inclusive: bool, target: int,
               stream: CudaStream) -> None:
    """A scan of few long rows over many blocks: chunk totals, an exclusive scan of the
    totals, then every chunk scanned from its carry."""
    chunks = max(1, min(-(-target // rows), -(-length // _SCAN_TILE)))
    chunk_len = -(-length // chunks)
    chunk_len = -(-chunk_len // _SCAN_TILE) * _SCAN_TILE
    chunks = -(-length // chunk_len)
    acc_name = registry.scan_carry_dtype(xd.dtype.name)
    acc = dt.by_name[acc_name]
    totals = scratch((rows * chunks,), acc, stream)
    carries = scratch((rows * chunks,), acc, stream)
    mod[totals_e](rows * chunks, 1024, stream, _ptr(xd), _ptr(totals), rows, length,
                  int(reverse), chunk_len)
    amod = _module(registry.scan_module, (acc_name,), stream.device)
    arow = registry.scan_expressions(op, acc_name)[0]
    amod[arow](rows, _scan_block(chunks), stream, _ptr(totals), _ptr(carries), rows, chunks, 0,
               0, chunks, 0)
    mod[row_e](rows * chunks, 1024, stream, _ptr(xd), _ptr(out), rows, length, int(reverse),
               int(inclusive), chunk_len, _ptr(carries))


def _softmax_rows(x: GpuArray, out: GpuArray, rows: int, length: int, stream: CudaStream
                  ) -> None:
    name = x.dtype.name
    key = ("softmax", name, rows, length, stream.device.index)
    plan = _plans.get(key)
    if plan is None:
        mod = _module(registry.scan_module, (name,), stream.device)
        kernels = {m: mod[e] for m, e in registry.softmax_expressions(name).items()}
        # reduce.cu sm_ept: elements of a row each thread keeps in registers
        per_thread = 8 if x.dtype.size >= 8 and x.dtype.kind != "c" else 32
        if length <= 256:
            grid, block, warp_rows = (rows + 7) // 8, 256, 1
        else:
            block = min(1024, max(32, (-(-length // per_thread) + 31) // 32 * 32))
            grid, block, warp_rows = rows, block, 0
        threads = 32 if warp_rows else block
        if "packs" not in kernels:  # complex
            cached = packs = kernels["online"]
        elif length <= threads * per_thread:
            cached, packs = kernels["scalars"], kernels["packs"]
        else:
            cached = packs = kernels["online"]
        plan = (packs, cached, grid, block, warp_rows)
        _remember(key, plan)
    packs, cached, grid, block, warp_rows = plan
    xp, op_ = _ptr(x), _ptr(out)
    aligned = not ((xp | op_ | (length * x.dtype.size)) & 15)
    (packs if aligned else cached)(grid, block, stream, xp, op_, rows, length, warp_rows)


def softmax(x: GpuArray, axes: Sequence[int], out: GpuArray, stream: CudaStream) -> None:
    """out = softmax of x over ``axes`` (fused: one kernel per row of the reduced elements)."""
    if out.size == 0:
        return
    work = out.dtype if out.dtype.kind in "fc" else dt.float32
    xd = dense(x, stream, work)
    g = _groups(xd.shape, axes)
    red = [i for i, (_, r) in enumerate(g) if r]
    length = _size(x.shape[i] for i in axes)
    rows = out.size // max(length, 1)
    direct = work is out.dtype and (not red or (len(red) == 1 and red[0] == len(g) - 1))
    if direct:
        _softmax_rows(xd, out, rows, length, stream)
    else:
        if red and not (len(red) == 1 and red[0] == len(g) - 1):
            src = _permuted(xd, axes, stream)
        else:
            src = xd
        res = scratch(tuple(src.shape), work, stream)
        _softmax_rows(src, res, rows, length, stream)
        # back to out's layout (and dtype): a permuted view of out receives res
        order = [i for i in range(len(x.shape)) if i not in axes] + list(axes)
        if src is xd:
            order = list(range(len(x.shape)))
        ostr = contiguous_strides(tuple(out.shape))
        oview = out.view(out.offset, tuple(out.shape[i] for i in order),
                         tuple(ostr[i] for i in order))
        ew.copy(res, oview, stream)
    ew._record_write(out, stream)


def diff(x: GpuArray, n: int, axis: int, out: GpuArray, stream: CudaStream) -> None:
    """The n-th forward difference along ``axis`` (bool: xor), n subtract launches on views."""
    if out.size == 0:
        return
    cur = x
    for step in range(n):
        m = cur.shape[axis] - 1
        shape = list(cur.shape)
        shape[axis] = m
        shape_t = tuple(shape)
        hi = cur.view(cur.offset + cur.strides[axis], shape_t, cur.strides)
        lo = cur.view(cur.offset, shape_t, cur.strides)
        dst = out if step == n - 1 else scratch(shape_t, x.dtype, stream)
        ew.binary("subtract", hi, lo, dst, stream)
        cur = dst
