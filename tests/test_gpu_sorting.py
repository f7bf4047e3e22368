"""Sorting on the GPU (strict mode: kernels ran): the same results as the CPU backend, itself
checked against MLX in test_sorting.py. Sizes cover both kernel paths: the bitonic block sort
(rows <= 2,048, every capacity) and the radix sort (longer rows, several tiles, every key width),
many rows (> 2^16), non-contiguous inputs, ties and NaNs."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from shapecheck import DTYPES, host, keep_array_class  # noqa: F401
from test_sorting import ours, tied

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def on_gpu(x: np.ndarray) -> pm.array:
    a = ours(x)
    y = pm.where(a, True, False, stream=pm.gpu) if a.dtype == pm.bool_ else pm.add(
        a, pm.zeros((), a.dtype), stream=pm.gpu)
    pm.eval(y)
    assert type(y._data).__name__ == "GpuArray"
    return y


def _as_f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if x.dtype.kind == "V" else x


def same(fn, x: np.ndarray, *extra) -> None:
    """fn on the CPU stream and on the GPU stream: same dtype, shape, values, exactly."""
    with pm.stream(pm.cpu):
        ref = fn(ours(x), *extra)
        ref_h = [host(r) for r in ref] if isinstance(ref, tuple) else [host(ref)]
    g = on_gpu(x)
    with pm.stream(pm.gpu):
        out = fn(g, *extra)
        pm.eval(out)
    outs = list(out) if isinstance(out, tuple) else [out]
    refs = list(ref) if isinstance(ref, tuple) else [ref]
    for o, r, rh in zip(outs, refs, ref_h):
        assert o.dtype == r.dtype and o.shape == r.shape
        if o.size:
            assert type(o._data).__name__ == "GpuArray"
        np.testing.assert_array_equal(_as_f64(host(o)), _as_f64(rh))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 31, 33, 100, 257, 1000, 2048, 2049, 5000])
def test_sort_argsort_every_dtype(dtype, n):
    x = tied((3, n), dtype, n)
    same(lambda a: pm.sort(a), x)
    same(lambda a: pm.argsort(a), x)


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "uint8", "complex64"])
def test_radix_multi_tile(dtype):
    x = tied((70001,), dtype, 1)
    same(lambda a: pm.argsort(a), x)
    same(lambda a: pm.sort(a), x)


def test_large_float32_and_distinct_values():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    same(lambda a: pm.argsort(a), x)
    same(lambda a: pm.sort(a), x)


def _bits_as_cpu(fn, x: np.ndarray, cpu_fn=None) -> None:
    """fn on the GPU gives the CPU's result (of cpu_fn where given) bit for bit: the sign of
    each zero, NaN payloads."""
    with pm.stream(pm.cpu):
        want = host((cpu_fn or fn)(ours(x)))
    # on the GPU through an integer copy: a float add would turn -0.0 into 0.0 and NaN payloads
    # into the canonical NaN
    g = pm.view(on_gpu(x.view(np.uint32)), pm.float32)
    with pm.stream(pm.gpu):
        got = fn(g)
        pm.eval(got)
    assert type(got._data).__name__ == "GpuArray"
    np.testing.assert_array_equal(host(got).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("n", [2049, 4096, 4097, 70001])
def test_onesweep_float32_keeps_stable_order_of_zeros_and_nans(n):
    # the onesweep sort orders keys by their bits (-0.0 before 0.0, NaNs by payload); MLX's
    # stable sort keeps the input order of equal values, which the fix-up pass restores
    rng = np.random.default_rng(n)
    bits = rng.integers(0, 2**32, (5, n), dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).copy()
    pick = rng.random((5, n))
    x[pick < 0.2] = 0.0
    x[(pick >= 0.2) & (pick < 0.35)] = -0.0
    nan_bits = rng.choice(np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FC0BEEF],
                                   np.uint32), (5, n))
    x[pick > 0.9] = nan_bits[pick > 0.9].view(np.float32)
    x[1] = np.where(x[1] == 0, np.float32(0.0), x[1])     # zeros of one sign: no fix needed
    x[2, : n // 2] = -0.0                                  # long runs
    x[3] = np.float32(np.nan)
    x[4] = rng.standard_normal(n).astype(np.float32)       # no zeros, no NaNs
    _bits_as_cpu(pm.sort, x)
    _bits_as_cpu(lambda a: pm.sort(a, axis=None), x)
    # the GPU's topk: sorted positions n - k.. of each row (the CPU keeps MLX's CPU order)
    _bits_as_cpu(lambda a: pm.topk(a, 1000, axis=-1), x, lambda a: pm.sort(a)[:, n - 1000:])


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_onesweep_integers_every_bit_pattern(dtype):
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2**32, (3, 70001), dtype=np.uint64).astype(np.uint32).view(dtype)
    x[1, ::3] = x[1, 0]                                    # ties
    same(lambda a: pm.sort(a), x)
    same(lambda a: pm.sort(a, axis=None), x)


def test_many_rows_and_axes():
    x = tied((70000, 5), "float32", 3)
    same(lambda a: pm.sort(a, axis=-1), x)
    same(lambda a: pm.argsort(a, axis=0), x)       # strided rows: a copy first
    y = tied((4, 3000, 3), "int32", 4)
    same(lambda a: pm.argsort(a, axis=1), y)
    same(lambda a: pm.sort(a, axis=None), y)
    same(lambda a: pm.argsort(a.T, axis=-1), y)


def test_short_rows_workload_shape():
    x = tied((4096, 256), "float32", 5)
    same(lambda a: pm.sort(a), x)
    same(lambda a: pm.argsort(a), x)


def test_empty_and_single():
    same(lambda a: pm.sort(a), np.zeros((3, 0), np.float32))
    same(lambda a: pm.argsort(a, axis=0), np.zeros((0, 4), np.int32))
    same(lambda a: pm.sort(a, axis=None), np.array(2.5, np.float32))


def gpu_equals_cpu(gpu_fn, cpu_fn, x: np.ndarray) -> None:
    """gpu_fn on the GPU stream gives exactly what cpu_fn gives on the CPU stream."""
    with pm.stream(pm.cpu):
        ref = cpu_fn(ours(x))
        ref_h = host(ref)
    with pm.stream(pm.gpu):
        out = gpu_fn(on_gpu(x))
        pm.eval(out)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_array_equal(_as_f64(host(out)), _as_f64(ref_h))


@pytest.mark.parametrize("dtype", DTYPES)
def test_partition_topk(dtype):
    # the GPU sorts the rows fully (a valid partition); the CPU keeps MLX's CPU order instead
    for n in (17, 3000):
        x = tied((3, n), dtype, 7)
        gpu_equals_cpu(lambda a: pm.partition(a, 5), pm.sort, x)
        gpu_equals_cpu(lambda a: pm.argpartition(a, -2, axis=1), pm.argsort, x)
        gpu_equals_cpu(lambda a: pm.topk(a, 4), lambda a: pm.sort(a)[:, n - 4:], x)
        gpu_equals_cpu(lambda a: pm.topk(a, n, axis=-1), pm.sort, x)
        gpu_equals_cpu(lambda a: pm.topk(a, 2, axis=0), lambda a: pm.sort(a, axis=0)[1:], x)
        same(lambda a: pm.topk(a, 0), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_searchsorted(dtype):
    seq = tied((301,), dtype, 8)
    with pm.stream(pm.cpu):
        seq = host(pm.sort(ours(seq)))
    vals = tied((7, 45), dtype, 9)
    g_seq = on_gpu(seq)
    for side in ("left", "right"):
        with pm.stream(pm.cpu):
            ref = host(pm.searchsorted(ours(seq), ours(vals), side))
        with pm.stream(pm.gpu):
            out = pm.searchsorted(g_seq, on_gpu(vals), side)
            pm.eval(out)
        assert out.dtype == pm.uint32 and out.shape == (7, 45)
        np.testing.assert_array_equal(host(out), ref)
        with pm.stream(pm.gpu):  # a strided sequence and strided values
            out = pm.searchsorted(g_seq[::2], on_gpu(vals).T, side)
        with pm.stream(pm.cpu):
            ref = host(pm.searchsorted(ours(seq)[::2], ours(vals).T, side))
        np.testing.assert_array_equal(host(out), ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(dtype):
    for shape in ((5, 13), (9000,)):
        x = tied(shape, dtype, 10)
        for size in (1, 4, 70, 9001):
            same(lambda a, s=size: pm.unique(a, s, True, True, True), x)
        same(lambda a: pm.unique(a, 6, True, True, True, fill_value=1), x)


def test_unique_empty_and_zero_size():
    same(lambda a: pm.unique(a, 3, True, True, True, fill_value=2), np.zeros((0,), np.float32))
    same(lambda a: pm.unique(a, 0, True, True, True), np.arange(5, dtype=np.int32))
