"""Launchers for sort.cu: sort/argsort/topk along an axis, searchsorted, unique.

The sorted axis is moved last (a view; a contiguous copy when the rows are not contiguous), so
the kernels see ``rows`` contiguous rows of ``n`` elements. Rows of up to 2,048 elements are
sorted by one block each (bitonic, in shared memory); longer rows by a radix sort, 8 bits per
pass, one pass per key byte: for a values-only sort of 4-byte keys the onesweep sort of the keys
alone (the key maps one-to-one to its value), otherwise an LSD sort of (key, index) pairs. The
output is written contiguous in the moved layout and returned as a strided view in the input's
axis order.
"""

from __future__ import annotations

from typing import Any, Sequence

from ... import dtypes as dt
from . import array as gpu_array, compiler, elementwise, registry
from .elementwise import _ptr, _record_write
from .launch import grid_for
from .stream import CudaStream

BLOCK = 256
SCAN_SEG = 4096            # elements per block of the two-level uint32 scan (unique)
SERIAL_SCAN_MAX = 32       # radix tiles per row up to which a thread scans a whole segment
_MAX_GRID = 2**31 - 1
ONESWEEP_TILE = 256 * 16   # keys per tile of the onesweep passes (sort.cu ONESWEEP_TILE)
ONESWEEP_UP_TILES = 4      # tiles per block of the onesweep upsweep
ONESWEEP_MAX_ROW = 2**30   # look-back status words hold counts below this
_KEY_DTYPES = {"uint8_t": dt.uint8, "uint16_t": dt.uint16, "uint32_t": dt.uint32,
               "uint64_t": dt.uint64}


def radix_tile(key_size: int) -> int:
    """Keys per tile of the radix passes (sort.cu RadixCfg<T>::TILE)."""
    return 256 * (16 if key_size <= 4 else 8)


def _size(shape: Sequence[int]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _module(dtype: dt.Dtype, stream: CudaStream) -> compiler.LoadedModule:
    return compiler.module_for(registry.sort_module, (dtype.name,), stream.device)


def _contiguous(x: Any, stream: CudaStream) -> Any:
    if x.is_contiguous():
        return x
    out = gpu_array.device_scratch(tuple(x.shape), x.dtype, stream)
    elementwise.copy(x, out, stream)
    return out


def _p(x: Any | None) -> int:
    return 0 if x is None else _ptr(x)


def sort_rows(x: Any, rows: int, n: int, m: int, start: int, out_val: Any | None,
              out_idx: Any | None, stream: CudaStream) -> None:
    """Sort the contiguous (rows, n) ``x``; write sorted positions start..n of each row (m of
    them) into the contiguous (rows, m) ``out_val`` (values) and/or ``out_idx`` (uint32)."""
    if rows == 0 or m == 0:
        return
    mod = _module(x.dtype, stream)
    t = x.dtype.c_type
    if n <= registry.SORT_BLOCK_CAPS[-1]:
        cap = next(c for c in registry.SORT_BLOCK_CAPS if c >= n)
        kernel = mod[f"block_sort<{t}, {cap}>"]
        isz, vsz = 4, x.dtype.size
        for r0 in range(0, rows, _MAX_GRID):
            nr = min(_MAX_GRID, rows - r0)
            kernel(nr, cap // 2, stream, _ptr(x) + r0 * n * x.dtype.size,
                   0 if out_val is None else _ptr(out_val) + r0 * m * vsz,
                   0 if out_idx is None else _ptr(out_idx) + r0 * m * isz, nr, n, m, start)
        return
    if out_idx is None and x.dtype.name in registry.ONESWEEP_DTYPES and n < ONESWEEP_MAX_ROW:
        _onesweep_rows(mod, x, rows, n, m, start, out_val, stream)
    else:
        _radix_rows(mod, x, rows, n, m, start, out_val, out_idx, stream)


def _onesweep_rows(mod: compiler.LoadedModule, x: Any, rows: int, n: int, m: int, start: int,
                   out_val: Any, stream: CudaStream) -> None:
    """Values only, 4-byte keys: one upsweep for all four digit histograms, then one pass per
    key byte (rank, look back, scatter), then the zero/NaN fix-up for float rows."""
    t = x.dtype.c_type
    tiles = -(-n // ONESWEEP_TILE)
    blocks = rows * tiles
    if blocks > _MAX_GRID:
        raise ValueError(f"[sort] {rows} rows of {n} elements exceed the radix sort's grid.")
    # one zeroed scratch: digit histograms, the four passes' tile counters, float row stats,
    # the four passes' look-back status words; tile_counts is written whole by the upsweep
    hist_words, stats_words, status_words = rows * 4 * 256, rows * 4, blocks * 256
    zeroed = gpu_array.device_scratch((hist_words + 4 + stats_words + 4 * status_words,), dt.uint32, stream)
    elementwise.fill(zeroed, b"\0\0\0\0", stream)
    base = _ptr(zeroed)
    hist, counters = base, base + 4 * hist_words
    stats = counters + 16
    status = stats + 4 * stats_words
    is_float = x.dtype == dt.float32
    tile_counts = gpu_array.device_scratch((blocks,), dt.uint32, stream) if is_float else None
    keys = [gpu_array.device_scratch((rows * n,), dt.uint32, stream) for _ in range(2)]
    chunks = -(-tiles // ONESWEEP_UP_TILES)
    mod[f"onesweep_upsweep<{t}>"](rows * chunks, 256, stream, _ptr(x), hist, _p(tile_counts),
                                   stats if is_float else 0, n, tiles)
    src = _ptr(x)
    for p, variant in enumerate(("true, false", "false, false", "false, false", "false, true")):
        kout = _ptr(keys[p % 2]) if p < 3 else 0
        mod[f"onesweep_pass<{t}, {variant}>"](
            blocks, 256, stream, src, kout, _ptr(out_val) if p == 3 else 0, hist,
            status + 4 * p * status_words, counters + 4 * p, n, p, tiles, start)
        src = kout
    if is_float:
        mod[f"onesweep_fix<{t}>"](blocks, 256, stream, _ptr(x), _ptr(out_val), _ptr(tile_counts),
                                  stats, n, tiles, start)


def _radix_rows(mod: compiler.LoadedModule, x: Any, rows: int, n: int, m: int, start: int,
                out_val: Any | None, out_idx: Any | None, stream: CudaStream) -> None:
    """One histogram, scan and scatter per key byte; the first scatter reads the input, the
    last writes the outputs."""
    t = x.dtype.c_type
    kdt = _KEY_DTYPES[registry.SORT_KEY_TYPES[x.dtype.name]]
    passes = kdt.size
    total = rows * n
    tiles = -(-n // radix_tile(kdt.size))
    device = stream.device
    keys = [None, None]
    idx = [None, None]
    if passes > 1:
        keys = [gpu_array.device_scratch((total,), kdt, stream), gpu_array.device_scratch((total,), kdt, stream)]
        idx = [gpu_array.device_scratch((total,), dt.uint32, stream),
               gpu_array.device_scratch((total,), dt.uint32, stream)]
    hist = gpu_array.device_scratch((rows * 256 * tiles,), dt.uint32, stream)
    totals = gpu_array.device_scratch((rows * 256,), dt.uint32, stream)
    blocks = rows * tiles
    nseg = rows * 256
    if tiles > SERIAL_SCAN_MAX:
        def scan() -> None:
            mod["seg_scan"](nseg, 1024, stream, _ptr(hist), _ptr(totals), nseg * tiles, tiles)
    else:  # few tiles per row: one thread per (row, digit) beats a block of 1,024 per segment
        def scan() -> None:
            mod["seg_scan_serial"](grid_for(nseg, BLOCK, device), BLOCK, stream, _ptr(hist),
                                   _ptr(totals), nseg, tiles)
    carry = 1 if out_idx is None and x.dtype.size <= 4 else 0
    src, isrc = _ptr(x), 0
    for p in range(passes):
        first, last = p == 0, p == passes - 1
        fl = "true" if first else "false"
        shift = 8 * p
        mod[f"radix_hist<{t}, {fl}>"](blocks, 256, stream, src, _ptr(hist), n, shift, tiles)
        scan()
        kout, iout = (0, 0) if last else (_ptr(keys[p % 2]), _ptr(idx[p % 2]))
        mod[f"radix_scatter<{t}, {fl}, {'true' if last else 'false'}>"](
            blocks, 256, stream, src, isrc, kout, iout, _ptr(x), _p(out_val), _p(out_idx),
            _ptr(hist), _ptr(totals), n, shift, tiles, start, carry)
        src, isrc = kout, iout


def sort(x: Any, axis: int, indices: bool, start: int, stream: CudaStream) -> Any:
    """Sorted values (or uint32 indices) of ``x`` along ``axis``, sorted positions start.."""
    shape = tuple(x.shape)
    n = shape[axis]
    m = n - start
    out_shape = shape[:axis] + (m,) + shape[axis + 1:]
    out_dtype = dt.uint32 if indices else x.dtype
    if _size(out_shape) == 0:
        return gpu_array.empty(out_shape, out_dtype, stream)
    if n > 2**32 - 1:
        raise ValueError(f"[sort] Rows of {n} elements exceed uint32 indices (2^32 - 1).")
    perm = [d for d in range(len(shape)) if d != axis] + [axis]
    tshape = tuple(shape[p] for p in perm)
    xt = _contiguous(x.view(x.offset, tshape, tuple(x.strides[p] for p in perm)), stream)
    rows = _size(tshape[:-1])
    out_t = gpu_array.empty(tshape[:-1] + (m,), out_dtype, stream)
    sort_rows(xt, rows, n, m, start, None if indices else out_t, out_t if indices else None,
              stream)
    _record_write(out_t, stream)
    strides = [0] * len(shape)
    for i, p in enumerate(perm):
        strides[p] = out_t.strides[i]
    return out_t.view(out_t.offset, out_shape, tuple(strides))


def searchsorted(seq: Any, vals: Any, right: bool, stream: CudaStream) -> Any:
    """uint32 insertion points of ``vals`` into the 1-D ``seq`` (same dtype)."""
    out = gpu_array.empty(tuple(vals.shape), dt.uint32, stream)
    n = _size(vals.shape)
    if n == 0:
        return out
    v = _contiguous(vals, stream)
    mod = _module(seq.dtype, stream)
    mod[f"searchsorted<{seq.dtype.c_type}>"](
        grid_for(n, BLOCK, stream.device), BLOCK, stream, _ptr(seq), seq.strides[0],
        seq.shape[0], _ptr(v), _ptr(out), n, 1 if right else 0)
    _record_write(out, stream)
    return out


def unique(flat: Any, fill: Any | None, size: int, outs: Sequence[Any], stream: CudaStream
           ) -> list[Any]:
    """MLX's unique of the 1-D ``flat``: values, index, inverse (outs[2]'s shape), counts."""
    dtype = flat.dtype
    device = stream.device
    values = gpu_array.empty((size,), dtype, stream)
    index = gpu_array.empty((size,), dt.uint32, stream)
    inverse = gpu_array.empty(tuple(outs[2][0]), dt.uint32, stream)
    counts = gpu_array.empty((size,), dt.int32, stream)
    n = _size(flat.shape)
    mod = _module(dtype, stream)
    t = dtype.c_type
    if size:
        elementwise.fill(counts, b"\0\0\0\0", stream)
    nuniq = None
    if n:
        x = _contiguous(flat, stream)
        s = gpu_array.device_scratch((n,), dtype, stream)
        idx = gpu_array.device_scratch((n,), dt.uint32, stream)
        sort_rows(x, 1, n, n, 0, s, idx, stream)
        ex = gpu_array.device_scratch((n,), dt.uint32, stream)
        grid = grid_for(n, BLOCK, device)
        mod[f"unique_flags<{t}>"](grid, BLOCK, stream, _ptr(s), _ptr(ex), n)
        nseg = -(-n // SCAN_SEG)
        seg_totals = gpu_array.device_scratch((nseg,), dt.uint32, stream)
        nuniq = gpu_array.device_scratch((1,), dt.uint32, stream)
        mod["seg_scan"](nseg, 1024, stream, _ptr(ex), _ptr(seg_totals), n, SCAN_SEG)
        mod["seg_scan"](1, 1024, stream, _ptr(seg_totals), _ptr(nuniq), nseg, nseg)
        mod["add_offsets"](grid, BLOCK, stream, _ptr(ex), _ptr(seg_totals), n, SCAN_SEG)
        mod[f"unique_scatter<{t}>"](grid, BLOCK, stream, _ptr(s), _ptr(idx), _ptr(ex),
                                    _ptr(values), _ptr(index), _ptr(inverse), _ptr(counts),
                                    n, size)
    if size:
        mod[f"unique_pad<{t}>"](grid_for(size, BLOCK, device), BLOCK, stream, _ptr(values),
                                _ptr(index), _p(nuniq), _p(fill), size)
    for o in (values, index, inverse, counts):
        _record_write(o, stream)
    return [values, index, inverse, counts]
