"""take, take_along_axis, put_along_axis and x.at[idx] ops on the GPU: the same results as the
CPU backend (itself checked against MLX in test_indexing_ops), run as kernels (strict mode),
through every kernel path: take_flat (vector and scalar steps), take_rows (16-byte and
element packs), the strided gather in fill mode, and the atomic scatters (native atomics and
compare-and-swap loops on 1-, 2-, 4- and 8-byte elements)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from shapecheck import (  # noqa: F401 - keep_array_class is an autouse fixture
    DTYPES, host, rand, to_ours, keep_array_class)

pytestmark = pytest.mark.gpu

AT_OPS = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def on_gpu(x: pm.array) -> pm.array:
    """x evaluated into GPU memory (a kernel wrote it)."""
    y = pm.add(x, pm.zeros((), x.dtype), stream=pm.gpu) if x.dtype != pm.bool_ else \
        pm.where(x, True, False, stream=pm.gpu)
    pm.eval(y)
    assert type(y._data).__name__ == "GpuArray"
    return y


def _h(x: pm.array) -> np.ndarray:
    h = host(x)
    if h.dtype.kind == "V" or str(h.dtype) == "bfloat16":
        return h.astype(np.float64)
    return h


def run_both(fn, *arrays: np.ndarray, tol: float | None = None) -> None:
    """fn(*arrays) on the CPU stream and on the GPU stream (inputs uploaded first): same dtype,
    shape and values; the GPU result lives in GPU memory."""
    with pm.stream(pm.cpu):
        ref = fn(*[to_ours(a) for a in arrays])
        ref_h = _h(ref)
    gpu_in = [on_gpu(to_ours(a)) for a in arrays]
    with pm.stream(pm.gpu):
        out = fn(*gpu_in)
        pm.eval(out)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if out.size:
        assert type(out._data).__name__ == "GpuArray"
    oh = _h(out)
    if tol is None:
        np.testing.assert_array_equal(oh, ref_h)
    else:
        np.testing.assert_allclose(oh.astype(np.complex128), ref_h.astype(np.complex128),
                                   rtol=tol, atol=tol)


def _idx(n: int, count: int, seed: int, oob: bool = True) -> np.ndarray:
    lo, hi = (-n - 3, n + 3) if oob else (-n, n)
    return np.random.default_rng(seed).integers(lo, hi, count)


@pytest.mark.parametrize("name", DTYPES)
def test_take_every_dtype_every_path(name):
    x = rand((37, 5, 8), name, 1)
    flat = _idx(x.size, 1003, 2).astype(np.int32)
    run_both(lambda t, i: pm.take(t, i), x, flat)                          # take_flat, V=4
    run_both(lambda t, i: pm.take(t, i[1:]), x, flat)                      # unaligned: V=1
    run_both(lambda t, i: pm.take(t, i), x, flat.astype(np.int64))
    rows = _idx(37, 50, 3)
    run_both(lambda t, i: pm.take(t, i, axis=0), x, rows)                  # take_rows, packs
    run_both(lambda t, i: pm.take(t[:, :, :7], i, axis=0), x, rows)        # strided: gather
    run_both(lambda t, i: pm.take(t, i, axis=1), x, _idx(5, 9, 4))         # inner 8
    run_both(lambda t, i: pm.take(t, i, axis=2), x, _idx(8, 11, 5))        # inner 1
    run_both(lambda t, i: pm.take(t, i.reshape(3, 4), axis=-1), x, _idx(8, 12, 6))
    run_both(lambda t, i: pm.take(pm.transpose(t), i, axis=1), x, _idx(5, 6, 7))
    inside = _idx(37, 50, 3, oob=False)   # a[idx] checks host-side indices on the CPU
    run_both(lambda t, i: t[i], x, inside)                                 # x[idx]: Gather
    run_both(lambda t, i: t[i, :, 2:5], x, inside)
    run_both(lambda t, i: t[:, i[:3], i[3:6]], x, _idx(5, 6, 8, oob=False))


def test_take_out_of_range_reads_zero_on_the_gpu():
    x = np.arange(1, 11, dtype=np.float32)
    xs = on_gpu(to_ours(x))
    with pm.stream(pm.gpu):
        got = pm.take(xs, pm.array([9, 10, -1, -10, -11, 1000]))
        lazy = xs[pm.add(pm.array([1, 17]), 0)]
    np.testing.assert_array_equal(np.array(got), [10, 0, 10, 1, 0, 0])
    np.testing.assert_array_equal(np.array(lazy), [2, 0])


def test_mixed_int32_int64_index_arrays_gather_and_scatter():
    # vmap and autodiff rules pair int32 position arrays with a user's int64 indices
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    i32 = np.array([2, 0, 1, 2], np.int32)
    i64 = np.array([[3], [1]], np.int64)
    xs = on_gpu(to_ours(x))
    with pm.stream(pm.gpu):
        got = xs[pm.array(i32), :, pm.array(i64)]
        upd = xs.at[pm.array(i32), 1, pm.array(i64)].add(pm.array(np.float32(10)))
    np.testing.assert_array_equal(np.array(got), x[i32, :, i64])
    want = x.copy()
    np.add.at(want, (np.broadcast_to(i32, (2, 4)), 1, np.broadcast_to(i64, (2, 4))), 10)
    np.testing.assert_array_equal(np.array(upd), want)


def test_take_large_multi_block():
    n = (1 << 20) + 3
    src = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    idx = np.random.default_rng(1).integers(-n, n, (1 << 20) + 5).astype(np.int32)
    run_both(lambda t, i: pm.take(t, i), src, idx)
    m = np.random.default_rng(2).standard_normal((70001, 3)).astype(np.float32)
    run_both(lambda t, i: pm.take(t, i, axis=0), m, idx[:70007] % 70001)   # > 2^16 rows
    run_both(lambda t, i: pm.take(t, i, axis=1), m, np.array([2, 0, 1, 1]))


@pytest.mark.parametrize("name", DTYPES)
def test_take_put_along_axis_every_dtype(name):
    x = rand((6, 7, 5), name, 3)
    idx = _idx(7, 6 * 4 * 5, 4).reshape(6, 4, 5)
    run_both(lambda t, i: pm.take_along_axis(t, i, axis=1), x, idx)
    run_both(lambda t, i: pm.take_along_axis(t[:, ::-1], i[:1], axis=1), x, idx)
    run_both(lambda t, i: pm.take_along_axis(t, i.reshape(-1), axis=None), x, idx)
    v = rand((6, 4, 5), name, 5)
    uniq = np.argsort(np.random.default_rng(6).random((6, 7, 5)), axis=1)[:, :4]
    run_both(lambda t, i, u: pm.put_along_axis(t, i, u, axis=1), x, uniq, v)
    run_both(lambda t, i, u: pm.put_along_axis(t, i, u, axis=1), x, idx, v)   # dup, oob
    run_both(lambda t, i, u: pm.put_along_axis(t, i, u[0, 0, 0], axis=-2), x, idx, v)


def _tol(name: str, op: str) -> float | None:
    if op in ("maximum", "minimum") or name in ("bool_",) or name.startswith(("int", "uint")):
        return None
    return {"float16": 3e-2, "bfloat16": 6e-2}.get(name, 1e-4)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("op", AT_OPS)
def test_at_every_dtype_and_op(name, op):
    x = rand((9, 6), name, 7)
    if name == "bool_" and op == "subtract":
        # negative is not defined for bool: MLX raises this, on either stream
        for stream in (pm.cpu, pm.gpu):
            with pytest.raises(ValueError, match=r"\[negative\] Not supported for bool"):
                with pm.stream(stream):
                    pm.eval(pm.array(x).at[pm.array([0])].subtract(pm.array(x[:1])))
        return
    v = rand((40, 6), name, 8)
    if op == "divide" and name.startswith(("int", "uint")):
        v = np.where(v == 0, 1, v)
    if op in ("multiply", "divide") and name not in ("bool_",) and \
            not name.startswith(("int", "uint")):
        v = (1 + 0.01 * v).astype(v.dtype)   # keep products of repeats in range
    idx = _idx(9, 40, 9)   # duplicates and out-of-range indices (skipped)
    tol = _tol(name, op)

    def f(t, i, u):
        return getattr(t.at[i], op)(u)

    run_both(f, x, idx, v, tol=tol)
    run_both(lambda t, u: getattr(t.at[1:8:3, ::-2], op)(u[:3, :3]), x, v, tol=tol)
    run_both(lambda t, i, u: getattr(t.at[i[:5], 2], op)(u[:5, 0]), x, idx, v, tol=tol)


def test_at_heavy_contention():
    """2^20 updates into 7 positions: atomics must not lose any (int32 sums exactly)."""
    n = 1 << 20
    idx = np.random.default_rng(0).integers(0, 7, n)
    ones = np.ones(n, np.int32)
    run_both(lambda t, i, u: t.at[i].add(u), np.zeros(7, np.int32), idx, ones)
    run_both(lambda t, i, u: t.at[i].add(u), np.zeros(7, np.int8), idx, ones.astype(np.int8))
    run_both(lambda t, i, u: t.at[i].add(u), np.zeros(7, np.int64), idx, ones.astype(np.int64))
    vals = np.random.default_rng(1).integers(-1000, 1000, n).astype(np.int16)
    run_both(lambda t, i, u: t.at[i].maximum(u), np.zeros(7, np.int16), idx, vals)
    run_both(lambda t, i, u: t.at[i].minimum(u), np.zeros(7, np.float16), idx,
             vals.astype(np.float16))
    f = np.random.default_rng(2).random(n).astype(np.float32)
    run_both(lambda t, i, u: t.at[i].add(u), np.zeros(7, np.float32), idx, f, tol=1e-3)
    # float64 numpy data becomes float32 in mx.array (as in MLX): cast inside to sum in float64
    run_both(lambda t, i, u: t.astype(pm.float64).at[i].add(u.astype(pm.float64)),
             np.zeros(7, np.float32), idx, f, tol=1e-9)


def test_at_nan_rules_on_the_gpu():
    nan = float("nan")
    run_both(lambda t: t.at[pm.array([0])].maximum(1.0), np.array([nan, 0], np.float32))
    run_both(lambda t: t.at[pm.array([0])].minimum(nan), np.array([0, 0], np.float32))
    run_both(lambda t: t.at[pm.array([1, 1])].maximum(pm.array([2.0, 1.0])),
             np.array([0, nan], np.float16))
