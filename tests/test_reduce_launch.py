"""The GPU reduction launchers (backend/cuda/reduce.py) without a GPU.

The kernels of reduce.cu are replaced by numpy emulations of their documented contract (grid,
arguments, which rows/columns/splits each block covers), and GPU buffers by a numpy heap, so the
launchers' layout decisions (dense copies, merged axis groups, permutations, rows vs columns,
split partials, warp rows, alignment flags) run on any machine and are checked against the CPU
primitives. The CUDA code itself is covered by test_compile (NVRTC) and tests/test_gpu_reduce.py.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from pycudamlx import dtypes as dt
from pycudamlx.backend.cuda import array as gpu_array
from pycudamlx.backend.cuda import reduce as K
from pycudamlx.backend.cuda import registry
from pycudamlx.graph.primitives import reduce as R

BASE = 1 << 20
_CT = {"float": np.float32, "double": np.float64, "__half": np.float16,
       "__nv_bfloat16": ml_dtypes.bfloat16, "complex64_t": np.complex64, "bool": np.bool_,
       "int8_t": np.int8, "int16_t": np.int16, "int32_t": np.int32, "int64_t": np.int64,
       "uint8_t": np.uint8, "uint16_t": np.uint16, "uint32_t": np.uint32,
       "uint64_t": np.uint64}
_OPS = {v: k for k, v in registry.RED_OPS.items()}
_MAPS = {v: k for k, v in registry.RED_MAPS.items()}
_FINS = {v: k for k, v in registry.RED_FINS.items()}


class Heap:
    def __init__(self) -> None:
        self.mem = np.zeros(1 << 26, np.uint8)
        self.top = 0

    def alloc(self, nbytes: int) -> SimpleNamespace:
        ptr = BASE + self.top
        self.top += (max(nbytes, 1) + 255) // 256 * 256
        assert self.top <= self.mem.size
        return SimpleNamespace(ptr=ptr, last_use=None, last_write=None, location=0,
                               set_location=lambda i: None)

    def typed(self, ptr: int, dtype) -> np.ndarray:
        off = ptr - BASE
        dtype = np.dtype(dtype)
        assert off % dtype.itemsize == 0, "misaligned element pointer"
        return self.mem[off:].view(dtype)

    def read(self, v) -> np.ndarray:
        base = self.typed(v.buffer.ptr, v.dtype.np_dtype)
        item = base.itemsize
        return np.lib.stride_tricks.as_strided(base[v.offset:], v.shape,
                                               [s * item for s in v.strides]).copy()

    def write(self, v, values: np.ndarray) -> None:
        base = self.typed(v.buffer.ptr, v.dtype.np_dtype)
        item = base.itemsize
        dst = np.lib.stride_tricks.as_strided(base[v.offset:], v.shape,
                                              [s * item for s in v.strides])
        dst[...] = values


def _cast(values: np.ndarray, dtype) -> np.ndarray:
    return R._finish(values, dt.by_name[{np.dtype(ml_dtypes.bfloat16): "bfloat16"}.get(
        np.dtype(dtype), np.dtype(dtype).name if np.dtype(dtype).name != "bool" else "bool")])


def _identity(op: str, a):
    a = np.dtype(a)
    if op == "sum":
        return np.zeros((), a)
    if op == "prod":
        return np.ones((), a)
    if op in ("and", "or"):
        return np.array(op == "and")
    if op == "max":
        return np.array(R.scan_identity("cummax", a), a)
    if op == "min":
        return np.array(R.scan_identity("cummin", a), a)
    raise AssertionError(op)


def _combine(op: str, v: np.ndarray, a) -> np.ndarray:
    with np.errstate(all="ignore"):
        ident = _identity(op, a)
        if v.size == 0:
            return ident
        if op == "sum":
            return np.add.reduce(v.astype(a), dtype=a)
        if op == "prod":
            return np.multiply.reduce(v.astype(a), dtype=a)
        if op == "max":
            return np.asarray(np.max(v)).astype(a)
        if op == "min":
            return np.asarray(np.min(v)).astype(a)
        if op == "and":
            return np.asarray(np.all(v))
        return np.asarray(np.any(v))


class Fake:
    """Emulated kernels, looked up by name expression as LoadedModule does."""

    def __init__(self, heap: Heap) -> None:
        self.heap = heap
        self.launches: list[str] = []

    def module(self, spec_fn, args, device):
        spec = spec_fn(*args)
        sigs = {k.expression: k.signature for k in spec.kernels}
        fake = self

        def kernel(expr):
            def call(grid, block, stream, *a):
                assert len(a) == len(sigs[expr]), (expr, a, sigs[expr])  # the registry's layout
                fake.launch(expr, grid, block, a)
            return call

        class M:
            def __getitem__(self, expr):
                assert expr in sigs, expr
                return kernel(expr)
        return M()

    def arr(self, ptr, ctype, n):
        return self.heap.typed(ptr, _CT[ctype])[:n]

    def launch(self, expr: str, grid, block, args) -> None:
        self.launches.append(expr)
        name, targs = re.match(r"(\w+)<(.*)>", expr).groups()
        t = [s.strip() for s in targs.split(",")]
        getattr(self, name)(t, grid, block, *args)

    # -- reductions ------------------------------------------------------------------------
    def _map(self, m, v, a, w, c):
        with np.errstate(all="ignore"):
            if m == "cast":
                return _cast(v, a) if v.size else v.astype(a)
            if m == "sqdev":
                d = v.astype(w) - c
                return (d * np.conj(d)).real.astype(a)
            if m == "expdev":
                return np.exp(v.astype(w) - c).astype(a)
            if m == "nonzero":
                return (v != 0).astype(a)
            return v != 0

    def _finish(self, f, acc, u, c, scale):
        fdt = np.float32 if np.dtype(u) in (np.float16, np.dtype(ml_dtypes.bfloat16)) else u
        with np.errstate(all="ignore"):
            if f == "none":
                r = acc
            elif f == "scale":
                r = acc.astype(fdt) * np.asarray(scale).astype(fdt)
            elif f == "sqrt":
                r = np.sqrt(acc.astype(fdt) * np.asarray(scale).astype(fdt))
            elif f == "logadd":
                r = np.log(acc.astype(fdt)) + np.asarray(c).astype(fdt)
            else:
                r = acc if np.isfinite(acc) else np.zeros((), acc.dtype)
            return _cast(np.asarray(r), u)

    def reduce_row(self, t, grid, block, x, out, part, aux, done, rows, length, splits,
                   warp_rows, vec, scale):
        T, U, A, W = (_CT[s] for s in t[:4])
        op, m, f = _OPS[int(t[4])], _MAPS[int(t[5])], _FINS[int(t[6])]
        n_vec = 16 // np.dtype(T).itemsize
        if vec:
            assert x % 16 == 0 and (length * np.dtype(T).itemsize) % 16 == 0
        xs = self.arr(x, t[0], rows * length).reshape(rows, length) if rows * length else None
        auxv = self.arr(aux, t[3], rows) if aux else None
        outv = self.arr(out, t[1], rows) if out else None
        if warp_rows:
            assert splits == 1 and block % 32 == 0 and grid * (block // 32) >= rows
            for r in range(rows):
                c = auxv[r] if aux else np.zeros((), W)
                v = xs[r] if length else np.zeros(0, T)
                acc = _combine(op, self._map(m, v, A, W, c), A)
                outv[r] = self._finish(f, acc, U, c, scale)
            return
        assert grid == rows * splits
        chunk = -(-length // splits)
        chunk = (chunk + 15) & ~15
        partv = self.arr(part, t[2], grid) if splits > 1 else None
        for b in range(grid):
            r, s = divmod(b, splits)
            lo = min(s * chunk, length)
            hi = min(lo + chunk, length)
            if vec:
                assert lo % n_vec == 0
            c = auxv[r] if aux else np.zeros((), W)
            v = xs[r, lo:hi] if length else np.zeros(0, T)
            acc = _combine(op, self._map(m, v, A, W, c), A)
            if splits == 1:
                outv[r] = self._finish(f, acc, U, c, scale)
                continue
            partv[b] = acc
            if done:  # the row's last block to arrive combines the partials, resets the count
                counts = self.heap.typed(done, np.uint32)
                counts[r] += 1
                if counts[r] == splits:
                    pv = partv[r * splits:(r + 1) * splits]
                    outv[r] = self._finish(f, _combine(op, pv, A), U, c, scale)
                    counts[r] = 0

    def reduce_partials(self, t, grid, block, part, out, aux, rows, splits, scale):
        U, A, W = (_CT[s] for s in t[:3])
        op, f = _OPS[int(t[3])], _FINS[int(t[4])]
        assert grid == rows
        pv = self.arr(part, t[1], rows * splits).reshape(rows, splits)
        auxv = self.arr(aux, t[2], rows) if aux else None
        outv = self.arr(out, t[0], rows)
        for r in range(rows):
            c = auxv[r] if aux else np.zeros((), W)
            outv[r] = self._finish(f, _combine(op, pv[r], A), U, c, scale)

    def reduce_cols(self, t, grid, block, x, out, part, aux, outer, length, inner, splits,
                    scale):
        T, U, A, W = (_CT[s] for s in t[:4])
        op, m, f = _OPS[int(t[4])], _MAPS[int(t[5])], _FINS[int(t[6])]
        ntiles = -(-inner // 32)
        assert block[0] == 32 and 1 <= block[1] <= 8 and grid == outer * ntiles * splits
        xs = self.arr(x, t[0], outer * length * inner).reshape(outer, length, inner)
        auxv = self.arr(aux, t[3], outer * inner) if aux else None
        outv = self.arr(out, t[1], outer * inner) if out else None
        partv = self.arr(part, t[2], outer * inner * splits) if splits > 1 else None
        chunk = -(-length // splits)
        for b in range(grid):
            bb, s = divmod(b, splits)
            o, tile = divmod(bb, ntiles)
            lo, hi = min(s * chunk, length), min(s * chunk + chunk, length)
            for i in range(tile * 32, min(tile * 32 + 32, inner)):
                oi = o * inner + i
                c = auxv[oi] if aux else np.zeros((), W)
                acc = _combine(op, self._map(m, xs[o, lo:hi, i], A, W, c), A)
                if splits > 1:
                    partv[oi * splits + s] = acc
                else:
                    outv[oi] = self._finish(f, acc, U, c, scale)

    # -- arg, scans, softmax, median -------------------------------------------------------
    @staticmethod
    def _arg(v: np.ndarray, is_max: bool) -> int:
        w = v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
        nan = np.isnan(w)
        if nan.any():
            return int(np.argmax(nan))
        return int(np.argmax(w) if is_max else np.argmin(w))

    def arg_row(self, t, grid, block, x, out, rows, length, warp_rows, splits, pv, pi):
        xs = self.arr(x, t[0], rows * length).reshape(rows, length)
        if warp_rows:
            assert grid * (block // 32) >= rows and splits == 1
        else:
            assert grid == rows * splits
        if splits > 1:
            a = self._acc(t)
            vals, idx = self.heap.typed(pv, a)[:grid], self.heap.typed(pi, np.int64)[:grid]
            chunk = -(-length // splits)
            for b in range(grid):
                r, s = divmod(b, splits)
                lo, hi = min(s * chunk, length), min(s * chunk + chunk, length)
                if hi > lo:
                    k = lo + self._arg(xs[r, lo:hi], t[1] == "true")
                    vals[b], idx[b] = xs[r, k], k
                else:
                    idx[b] = -1
            return
        outv = self.arr(out, "uint32_t", rows)
        for r in range(rows):
            outv[r] = self._arg(xs[r], t[1] == "true")

    def arg_partials(self, t, grid, block, pv, pi, out, rows, splits):
        a = self._acc(t)
        vals = self.heap.typed(pv, a)[:rows * splits].reshape(rows, splits)
        idx = self.heap.typed(pi, np.int64)[:rows * splits].reshape(rows, splits)
        outv = self.arr(out, "uint32_t", rows)
        for r in range(rows):
            ok = idx[r] >= 0
            k = self._arg(vals[r][ok], t[1] == "true")
            outv[r] = idx[r][ok][k]

    def arg_cols(self, t, grid, block, x, out, outer, length, inner):
        xs = self.arr(x, t[0], outer * length * inner).reshape(outer, length, inner)
        outv = self.arr(out, "uint32_t", outer * inner).reshape(outer, inner)
        for o in range(outer):
            for i in range(inner):
                outv[o, i] = self._arg(xs[o, :, i], t[1] == "true")

    def _scan(self, t, v, reverse, inclusive):
        op = {0: "cumsum", 1: "cumprod", 2: "cummax", 3: "cummin", 6: "logcumsumexp"}[int(t[1])]
        prim = R.Scan(op, v.ndim - 1, bool(reverse), bool(inclusive))
        name = [k for k, c in _CT.items() if c == _CT[t[0]]][0]
        d = {v2: k for k, v2 in {d.name: d.c_type for d in dt.ALL_DTYPES}.items()}[name]
        return prim.eval_cpu([v], [(v.shape, dt.by_name[d])])[0]

    _UFUNC = {0: np.add, 1: np.multiply, 2: np.maximum, 3: np.minimum, 6: np.logaddexp}
    _SCAN_OP = {0: "sum", 1: "prod", 2: "max", 3: "min"}

    def _acc(self, t):
        a = np.dtype(_CT[t[0]])
        return np.dtype(np.float32) if a.itemsize == 2 and a.kind in "fV" else a

    def _scan_ident(self, t, a):
        if int(t[1]) == 6:
            return np.array(-np.inf).astype(a)
        return _identity(self._SCAN_OP[int(t[1])], a)

    def scan_row(self, t, grid, block, x, out, rows, length, reverse, inclusive, chunk_len,
                 carry):
        assert block % 32 == 0 and block <= 1024
        chunks = -(-length // chunk_len)
        assert grid == rows * chunks
        a = self._acc(t)
        xs = self.arr(x, t[0], rows * length).reshape(rows, length)
        outv = self.arr(out, t[0], rows * length).reshape(rows, length)
        carries = self.heap.typed(carry, a)[:grid] if carry else None
        if a.kind == "c" and int(t[1]) == 6:  # numpy has no complex logaddexp: one chunk only
            assert chunks == 1 and not carry
            outv[...] = self._scan(t, xs, reverse, inclusive)
            return
        uf = self._UFUNC[int(t[1])]
        for b in range(grid):
            r, c = divmod(b, chunks)
            lo, hi = c * chunk_len, min(length, c * chunk_len + chunk_len)
            seq = xs[r, ::-1] if reverse else xs[r]
            start = carries[b] if carry else self._scan_ident(t, a)
            with np.errstate(all="ignore"):
                acc = uf.accumulate(np.concatenate([[start], seq[lo:hi].astype(a)]).astype(a),
                                    dtype=a)
            res = acc[1:] if inclusive else acc[:-1]
            res = _cast(res, _CT[t[0]])
            if reverse:
                outv[r, length - hi:length - lo] = res[::-1]
            else:
                outv[r, lo:hi] = res

    def scan_totals(self, t, grid, block, x, totals, rows, length, reverse, chunk_len):
        chunks = -(-length // chunk_len)
        assert grid == rows * chunks
        a = self._acc(t)
        xs = self.arr(x, t[0], rows * length).reshape(rows, length)
        tv = self.heap.typed(totals, a)[:grid]
        uf = self._UFUNC[int(t[1])]
        for b in range(grid):
            r, c = divmod(b, chunks)
            seq = xs[r, ::-1] if reverse else xs[r]
            with np.errstate(all="ignore"):
                tv[b] = uf.reduce(np.concatenate([[self._scan_ident(t, a)],
                                                  seq[c * chunk_len:(c + 1) * chunk_len]
                                                  .astype(a)]).astype(a), dtype=a)

    def scan_cols(self, t, grid, block, x, out, outer, length, inner, reverse, inclusive):
        xs = self.arr(x, t[0], outer * length * inner).reshape(outer, length, inner)
        r = self._scan(t, np.moveaxis(xs, 1, -1), reverse, inclusive)
        self.arr(out, t[0], outer * length * inner)[:] = np.moveaxis(r, -1, 1).reshape(-1)

    def softmax_row(self, t, grid, block, x, out, rows, length, warp_rows):
        if warp_rows:
            assert grid * (block // 32) >= rows and length <= 256
        else:
            assert grid == rows and block % 32 == 0 and block <= 1024
        mode = registry.SOFTMAX_MODES[int(t[1])]
        if mode == "packs":  # 16-byte loads and stores
            assert x % 16 == 0 and out % 16 == 0 and length * np.dtype(_CT[t[0]]).itemsize % 16 == 0
        if mode in ("packs", "scalars"):  # the row fits the registers (reduce.cu sm_ept)
            ept = 8 if t[0] == "double" else 32
            assert length <= (32 if warp_rows else block) * ept
        xs = self.arr(x, t[0], rows * length).reshape(rows, length)
        d = dt.float32 if t[0] == "float" else dt.by_name[
            {"double": "float64", "__half": "float16", "__nv_bfloat16": "bfloat16",
             "complex64_t": "complex64"}[t[0]]]
        r = R.Softmax((1,)).eval_cpu([xs], [(xs.shape, d)])[0]
        self.arr(out, t[0], rows * length)[:] = r.reshape(-1)

    def median_row(self, t, grid, block, x, out, rows, length):
        assert grid == rows
        xs = self.arr(x, t[0], rows * length).reshape(rows, length)
        with np.errstate(all="ignore"):
            r = np.median(xs.astype(np.complex128 if xs.dtype.kind == "c" else np.float64),
                          axis=1)
        self.arr(out, t[1], rows)[:] = r.astype(_CT[t[1]])


@pytest.fixture
def fake(monkeypatch):
    heap = Heap()
    f = Fake(heap)
    device = SimpleNamespace(index=0, properties=SimpleNamespace(multiprocessors=132))
    stream = SimpleNamespace(device=device)

    def empty(shape, dtype, stream):
        n = int(np.prod(shape, dtype=np.int64))
        return gpu_array.GpuArray(heap.alloc(n * dtype.size), 0, tuple(shape),
                                  gpu_array.contiguous_strides(tuple(shape)), dtype)

    def copy(src, dst, stream):
        heap.write(dst, _cast(heap.read(src), dst.dtype.np_dtype) if src.size else
                   heap.read(src).astype(dst.dtype.np_dtype))

    def binary(op, a, b, out, stream):
        assert op == "subtract"
        x, y = heap.read(a), heap.read(b)
        with np.errstate(all="ignore"):
            heap.write(out, x != y if x.dtype == np.bool_ else x - y)

    monkeypatch.setattr(K, "empty", empty)
    monkeypatch.setattr(K, "_module", f.module)
    monkeypatch.setattr(K, "_plans", {})
    monkeypatch.setattr(K, "_occupancy", {})
    monkeypatch.setattr(K.ew, "copy", copy)
    monkeypatch.setattr(K.ew, "binary", binary)
    monkeypatch.setattr(K.ew, "_record_write", lambda out, stream: None)
    monkeypatch.setattr(K, "grid_for", lambda n, block, device: max(1, min(-(-n // block), 1056)))
    counters = heap.alloc(4 * K._COUNTERS).ptr  # the heap starts zeroed
    monkeypatch.setattr(K, "_split_counters", lambda stream: counters)
    f.counters = lambda: heap.typed(counters, np.uint32)[:K._COUNTERS]
    f.stream = stream
    f.empty = empty

    def upload(values: np.ndarray, view: str = "dense"):
        d = dt.by_name["bfloat16" if values.dtype == ml_dtypes.bfloat16 else
                       ("bool" if values.dtype == np.bool_ else values.dtype.name)]
        if view == "transposed":
            base = empty(values.T.shape, d, stream)
            heap.write(base, np.ascontiguousarray(values.T))
            return base.view(0, values.shape, tuple(reversed(base.strides)))
        if view == "offset":  # a dense view that starts one element in (misaligned)
            base = empty((values.size + 1,), d, stream)
            heap.write(base, np.concatenate([np.zeros(1, values.dtype), values.reshape(-1)]))
            return base.view(1, values.shape, gpu_array.contiguous_strides(values.shape))
        a = empty(values.shape, d, stream)
        heap.write(a, values)
        return a

    f.upload = upload
    yield f
    assert not f.counters().any(), "a split row reduction left its arrival count set"


def _data(dtype: str, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.6
    if dtype[0] in "iu":
        return rng.integers(1, 4, shape).astype(dtype)
    v = (rng.random(shape) + 0.25) * rng.choice([-1, 1], shape)
    if dtype == "complex64":
        return (v + 1j * rng.random(shape)).astype(np.complex64)
    if dtype == "bfloat16":
        return v.astype(ml_dtypes.bfloat16)
    return v.astype(dtype)


def _gpu_reference(prim, v: np.ndarray, shape, d) -> np.ndarray:
    """What the GPU kernels compute: float results of float32/integer inputs in float64 and
    rounded (the CPU backend adds in MLX's CPU order: one running float32 sum), half scans
    with a float32 running value (the CPU keeps it in the half dtype, as MLX's CPU)."""
    half = v.dtype.kind == "f" and v.dtype.itemsize == 2
    if isinstance(prim, R.Reduce) and d.kind == "f" and v.dtype.kind in "biuf" and not half:
        return prim.eval_cpu([v.astype(np.float64)], [(shape, dt.float64)])[0].astype(
            d.np_dtype)
    if isinstance(prim, R.Scan) and half:
        return prim.eval_cpu([v.astype(np.float32)], [(shape, dt.float32)])[0].astype(
            d.np_dtype)
    return prim.eval_cpu([v], [(shape, d)])[0]


def _check(got: np.ndarray, ref: np.ndarray, what) -> None:
    assert got.shape == ref.shape and got.dtype == ref.dtype, what
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref, err_msg=str(what))
    else:
        tol = 2e-2 if ref.dtype.itemsize == 2 else 1e-5
        np.testing.assert_allclose(got.astype(np.complex128), ref.astype(np.complex128),
                                   rtol=tol, atol=tol, equal_nan=True, err_msg=str(what))


SHAPES = [((5, 7), (1,)), ((5, 7), (0,)), ((5, 7), (0, 1)), ((4, 300), (1,)),
          ((3, 5000), (1,)), ((3, 9000), (1,)), ((20000,), (0,)), ((6, 7, 8), (0, 2)),
          ((6, 7, 8), (1,)), ((3000, 3), (0,)), ((2, 1, 3), (1,)), ((0, 3), (0,)),
          ((3, 0), (1,)), ((2, 3), ()), ((4, 3, 2, 5), (1, 3))]


def _reduce_dtype(op: str, d: dt.Dtype, axes) -> dt.Dtype:
    from pycudamlx.core import reduce as core_reduce

    if not axes and op in ("sum", "prod"):
        return d
    return {"sum": core_reduce._sum_dtype, "prod": core_reduce._sum_dtype,
            "mean": core_reduce._float_dtype, "var": core_reduce._var_dtype,
            "std": core_reduce._var_dtype, "logsumexp": core_reduce._float_dtype,
            "median": core_reduce._float_dtype, "all": lambda _: dt.bool_,
            "any": lambda _: dt.bool_, "count_nonzero": lambda _: dt.int32,
            "max": lambda x: x, "min": lambda x: x}[op](d)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int8", "int32",
                                   "uint16", "bool", "complex64", "int64"])
def test_reductions_through_the_launchers(fake, dtype):
    for shape, axes in SHAPES:
        v = _data(dtype, shape)
        for view in ("dense", "transposed", "offset") if dtype == "float32" else (
                "dense", "transposed"):
            x = fake.upload(v, view)
            for op in ("sum", "prod", "mean", "var", "std", "max", "min", "all", "any",
                       "count_nonzero", "logsumexp", "median"):
                if op in ("max", "min", "median", "logsumexp") and 0 in shape:
                    continue
                if op in ("sum", "prod") and not axes:
                    continue  # a copy in Reduce.eval_gpu
                d = _reduce_dtype(op, x.dtype, axes)
                prim = R.Reduce(op, axes, False, 1 if op in ("var", "std") else None)
                oshape = tuple(e for i, e in enumerate(shape) if i not in axes)
                ref = _gpu_reference(prim, v, oshape, d)
                out = fake.empty(oshape, d, fake.stream)
                K.reduce(op, x, axes, out, fake.stream, ddof=1 if op in ("var", "std") else 0)
                _check(fake.heap.read(out), ref, (op, dtype, shape, axes, view))


def test_a_full_reduce_splits_and_aligned_rows_vectorise(fake):
    v = _data("float32", (1 << 16,))
    x = fake.upload(v)
    out = fake.empty((), dt.float32, fake.stream)
    K.reduce("sum", x, (0,), out, fake.stream)
    # one launch: the last block of the row combines the partials
    assert fake.launches[-1].startswith("reduce_row")
    np.testing.assert_allclose(fake.heap.read(out), v.astype(np.float64).sum(), rtol=1e-5)
    plan = [p for k, p in K._plans.items() if k[0] == "reduce"][-1]
    assert plan[0] == "row" and plan[5] > 1 and plan[2] is None  # split, no second kernel
    assert [k for k in K._plans if k[0] == "reduce"][-1][6] is True  # 16-byte loads
    assert not fake.counters().any()  # every count back to 0 for the next launch


def test_split_rows_with_a_second_launch_when_asked(fake, monkeypatch):
    monkeypatch.setattr(K, "_LAST_BLOCK_FINISHES", False)
    v = _data("float32", (3, 1 << 15))
    x = fake.upload(v)
    out = fake.empty((3,), dt.float32, fake.stream)
    K.reduce("sum", x, (1,), out, fake.stream)
    assert fake.launches[-1].startswith("reduce_partials") and fake.launches[-2].startswith(
        "reduce_row")
    np.testing.assert_allclose(fake.heap.read(out), v.astype(np.float64).sum(1), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool", "complex64",
                                   "float64"])
def test_arg_scan_softmax_diff_through_the_launchers(fake, dtype):
    views = ("dense", "transposed", "offset") if dtype == "float32" else ("dense", "transposed")
    for shape in ((5, 7), (3, 600), (4, 3, 5), (1,), (700, 2)):
        v = _data(dtype, shape)
        for view in views:
            x = fake.upload(v, view)
            for op in ("argmax", "argmin"):
                for axis in [None] + list(range(len(shape))):
                    prim = R.ArgReduce(op, axis)
                    oshape = () if axis is None else tuple(
                        e for i, e in enumerate(shape) if i != axis)
                    ref = prim.eval_cpu([v], [(oshape, dt.uint32)])[0]
                    out = fake.empty(oshape, dt.uint32, fake.stream)
                    K.argreduce(op, x, axis, out, fake.stream)
                    _check(fake.heap.read(out), ref, (op, shape, axis, view))
            for op in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
                for axis in range(len(shape)):
                    for reverse, inclusive in ((False, True), (True, False)):
                        d = x.dtype
                        if op == "cumsum" and d is dt.bool_:
                            d = dt.int32
                        if op == "logcumsumexp" and d.kind not in "fc":
                            d = dt.float32
                        prim = R.Scan(op, axis, reverse, inclusive)
                        ref = _gpu_reference(prim, v, shape, d)
                        out = fake.empty(shape, d, fake.stream)
                        K.scan(op, x, axis, reverse, inclusive, out, fake.stream)
                        _check(fake.heap.read(out), ref, (op, shape, axis, view))
            axes_list = [(len(shape) - 1,), (0,), tuple(range(len(shape))), ()]
            for axes in axes_list:
                d = x.dtype if not axes else (x.dtype if x.dtype.kind in "fc" else dt.float32)
                ref = R.Softmax(axes).eval_cpu([v], [(shape, d)])[0]
                out = fake.empty(shape, d, fake.stream)
                K.softmax(x, axes, out, fake.stream)
                _check(fake.heap.read(out), ref, ("softmax", shape, axes, view))
            for n, axis in ((1, 0), (2, len(shape) - 1)):
                oshape = list(shape)
                oshape[axis] = max(shape[axis] - n, 0)
                ref = R.Diff(n, axis).eval_cpu([v], [(tuple(oshape), x.dtype)])[0]
                out = fake.empty(tuple(oshape), x.dtype, fake.stream)
                K.diff(x, n, axis, out, fake.stream)
                _check(fake.heap.read(out), ref, ("diff", shape, n, axis, view))


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_long_rows_scan_in_three_phases(fake, dtype):
    v = _data(dtype, (2, 40001), seed=5)
    if dtype == "float16":
        v = (v * 0.01).astype(np.float16)
    x = fake.upload(v)
    for op in ("cumsum", "cummax", "cummin", "logcumsumexp"):
        if op == "logcumsumexp" and dtype == "int32":
            continue
        for reverse, inclusive in ((False, True), (True, False), (True, True)):
            prim = R.Scan(op, 1, reverse, inclusive)
            ref = _gpu_reference(prim, v, v.shape, x.dtype)
            out = fake.empty(v.shape, x.dtype, fake.stream)
            fake.launches.clear()
            K.scan(op, x, 1, reverse, inclusive, out, fake.stream)
            assert fake.launches[0].startswith("scan_totals"), fake.launches
            got = fake.heap.read(out)
            if dtype == "float16" or op == "cumsum" and dtype == "float32":
                np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64),
                                           rtol=2e-2 if dtype == "float16" else 1e-4, atol=0.5)
            else:
                _check(got, ref, (op, reverse, inclusive))


def test_a_long_argmax_splits(fake):
    v = _data("float32", (3, 50001), seed=7)
    v[1, 40000] = 9.0
    v[2, 123] = np.nan
    v[2, 30000] = np.nan
    x = fake.upload(v)
    for op, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        out = fake.empty((3,), dt.uint32, fake.stream)
        fake.launches.clear()
        K.argreduce(op, x, 1, out, fake.stream)
        assert fake.launches[-1].startswith("arg_partials")
        got = fake.heap.read(out)
        assert got[2] == 123
        np.testing.assert_array_equal(got[:2], fn(v[:2], 1))


def test_few_long_columns_move_the_axis_innermost(fake):
    v = _data("float32", (3000, 3), seed=8)
    x = fake.upload(v)
    out = fake.empty((3,), dt.uint32, fake.stream)
    fake.launches.clear()
    K.argreduce("argmax", x, 0, out, fake.stream)
    assert fake.launches[0].startswith("arg_row")
    np.testing.assert_array_equal(fake.heap.read(out), v.argmax(0))
    for op in ("cumsum", "cummin"):
        out = fake.empty(v.shape, dt.float32, fake.stream)
        fake.launches.clear()
        K.scan(op, x, 0, True, False, out, fake.stream)
        assert fake.launches[0].startswith("scan_row")
        ref = R.Scan(op, 0, True, False).eval_cpu([v], [(v.shape, dt.float32)])[0]
        np.testing.assert_allclose(fake.heap.read(out), ref, rtol=1e-5, atol=1e-4)
