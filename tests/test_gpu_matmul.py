"""matmul and friends on the GPU, on every path: cuBLAS, the NVRTC GEMM with tensor cores
(sm_80+: float16/bfloat16 mma, float32 TF32) and the NVRTC FMA GEMM; against numpy float64 of
the same inputs, under strict mode (every op ran as a kernel)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env
from pycudamlx.backend.cuda import cublas, gemm

pytestmark = pytest.mark.gpu

rng = np.random.default_rng(11)

#: error bound per unit of sum(|a| |b|) (the product's condition), per dtype (and TF32)
TOL = {"float32": 1e-5, "tf32": 4e-3, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-13,
       "complex64": 1e-5, "int32": 0, "int64": 0}

PATHS = ["cublas", "mma", "fma"]


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


@pytest.fixture(params=PATHS)
def path(request, gpu_device, monkeypatch):
    monkeypatch.setattr(gemm, "GEMV", False)  # few-row products: tests/test_gpu_gemv.py
    if request.param == "cublas":
        monkeypatch.delenv("PYCUDAMLX_DISABLE_CUBLAS", raising=False)
        if not cublas.available():
            pytest.skip(f"cuBLAS not installed: {cublas.load_error()}")
    else:
        monkeypatch.setenv("PYCUDAMLX_DISABLE_CUBLAS", "1")
        if request.param == "mma" and gpu_device.properties.compute_capability < (8, 0):
            pytest.skip("tensor-core GEMM needs sm_80+")
        monkeypatch.setattr(gemm, "FORCE_FMA", request.param == "fma")
    return request.param


def make(shape, dtype):
    x = rng.standard_normal(shape)
    if dtype == "complex64":
        x = x + 1j * rng.standard_normal(shape)
    arr = mx.array(x.astype(np.complex64 if dtype == "complex64" else np.float64 if
                            dtype == "float64" else np.float32))
    arr = arr.astype(getattr(mx, dtype)) if dtype not in ("float32",) else arr
    return arr


def h64(x):
    x = x.astype(mx.complex64) if x.dtype == mx.complex64 else (
        x if x.dtype == mx.float64 else x.astype(mx.float64 if x.dtype.size < 8 else x.dtype))
    with mx.stream(mx.cpu):
        v = np.array(x)
    return v.astype(np.complex128 if np.iscomplexobj(v) else np.float64)


def tol_for(dtype):
    if dtype == "float32" and cublas.tf32_enabled():
        return TOL["tf32"]
    return TOL[dtype]


def check(got, a64, b64, dtype, extra=None):
    """|got - ref| <= tol * (|a| @ |b|) + output rounding; the result is in GPU memory."""
    mx.eval(got)
    assert type(got._data).__name__ == "GpuArray" or got.size == 0
    ref = np.matmul(a64, b64) + (extra if extra is not None else 0)
    bound = np.matmul(np.abs(a64), np.abs(b64))
    g = h64(got)
    assert g.shape == ref.shape
    tol = tol_for(dtype)
    out_round = {"float16": 1e-3, "bfloat16": 8e-3}.get(dtype, 0) * np.abs(ref)
    err = np.abs(g - ref)
    assert np.all(err <= tol * bound + out_round + 1e-30), (err.max(), (tol * bound).max())


SIZES = [(1, 1, 1), (7, 33, 1), (33, 7, 129), (129, 1000, 33), (1000, 129, 7), (64, 64, 64),
         (65, 63, 17)]


@pytest.mark.parametrize("m,k,n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matmul_sizes(path, m, k, n, dtype):
    a, b = make((m, k), dtype), make((k, n), dtype)
    got = mx.matmul(a, b, stream=mx.gpu)
    mx.eval(got)
    assert got.dtype == getattr(mx, dtype)
    check(got, h64(a), h64(b), dtype)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("m,k,n", [(7, 33, 1), (33, 129, 65), (1, 5, 1000)])
def test_matmul_wide_dtypes(path, dtype, m, k, n):
    a, b = make((m, k), dtype), make((k, n), dtype)
    got = mx.matmul(a, b, stream=mx.gpu)
    check(got, h64(a), h64(b), dtype)


@pytest.mark.parametrize("tf32", ["1", "0"])
def test_float32_tf32_switch(path, tf32, monkeypatch):
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", tf32)
    a, b = make((129, 257), "float32"), make((257, 65), "float32")
    got = mx.matmul(a, b, stream=mx.gpu)
    check(got, h64(a), h64(b), "float32")  # tol_for: float32's bound when TF32 is off


@pytest.mark.parametrize("sa,sb", [((4, 33, 7), (7, 9)), ((2, 1, 5, 7), (3, 7, 6)),
                                   ((3, 5, 7), (3, 7, 2)), ((7,), (2, 7, 5)), ((2, 5, 7), (7,)),
                                   ((7,), (7,)), ((1, 7), (70, 7, 1))])
def test_matmul_batched_broadcast(path, sa, sb):
    a, b = make(sa, "float32"), make(sb, "float32")
    got = mx.matmul(a, b, stream=mx.gpu)
    want = np.matmul(h64(a), h64(b))
    assert got.shape == want.shape
    g = h64(got)
    assert np.allclose(g, want, rtol=1e-2, atol=1e-2 * np.sqrt(sa[-1]))


def test_matmul_transposed_and_sliced_views(path):
    a, b = make((40, 33), "float16"), make((65, 40), "float16")
    c = make((40, 70), "float16")
    for x, y in [(a.T, b.T), (a[::2].T, b.T[::2]), (a[:, 1:30].T[3:], c[:, 1:60:3]),
                 (a[::-1].T, c[::-1, ::-2])]:
        got = mx.matmul(x, y, stream=mx.gpu)
        check(got, h64(x), h64(y), "float16")


def test_matmul_many_rows(path):
    a, b = make((70000, 9), "float32"), make((9, 3), "float32")
    got = mx.matmul(a, b, stream=mx.gpu)
    check(got, h64(a), h64(b), "float32")


def test_matmul_big_batch(path):
    a, b = make((70000, 2, 3), "float32"), make((3, 2), "float32")
    got = mx.matmul(a, b, stream=mx.gpu)
    check(got, h64(a), h64(b), "float32")


def test_matmul_empty_and_k0(path):
    assert mx.matmul(mx.ones((0, 3)), mx.ones((3, 5)), stream=mx.gpu).shape == (0, 5)
    z = mx.matmul(mx.ones((2, 0)), mx.ones((0, 5)), stream=mx.gpu)
    assert np.all(h64(z) == 0) and z.shape == (2, 5)
    r = mx.addmm(mx.ones((2, 5)), mx.ones((2, 0)), mx.ones((0, 5)), beta=3.0, stream=mx.gpu)
    assert np.all(h64(r) == 3)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (2.0, 0.5), (-1.0, 0.0)])
def test_addmm(path, dtype, alpha, beta):
    c, a, b = make((33,), dtype), make((7, 129), dtype), make((129, 33), dtype)
    got = mx.addmm(c, a, b, alpha, beta, stream=mx.gpu)
    ref_extra = beta * h64(c)
    check(got, alpha * h64(a), h64(b), dtype, ref_extra)


def test_addmm_beta_zero_ignores_nan(path):
    c = mx.full((3, 4), float("nan"))
    got = mx.addmm(c, mx.ones((3, 5)), mx.ones((5, 4)), beta=0.0, stream=mx.gpu)
    assert np.all(h64(got) == 5)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "int64", "uint8", "bool_"])
def test_vecdot_integers(path, dtype):
    x = rng.integers(0, 2 if dtype == "bool_" else 100, (5, 37))
    y = rng.integers(0, 2 if dtype == "bool_" else 100, (5, 37))
    with mx.stream(mx.cpu):
        want = mx.vecdot(mx.array(x).astype(getattr(mx, dtype)),
                         mx.array(y).astype(getattr(mx, dtype)))
        want_h = np.array(want)
    got = mx.vecdot(mx.array(x).astype(getattr(mx, dtype)), mx.array(y).astype(getattr(mx, dtype)),
                    stream=mx.gpu)
    assert got.dtype == want.dtype
    with mx.stream(mx.cpu):
        np.testing.assert_array_equal(np.array(got), want_h)


def test_friends_on_gpu(path):
    a, b = make((3, 4, 5), "float32"), make((5, 4, 2), "float32")
    a64, b64 = h64(a), h64(b)
    with mx.stream(mx.gpu):
        got = {
            "tensordot": mx.tensordot(a, b, [[1, 2], [1, 0]]),
            "inner": mx.inner(a, make((6, 5), "float32")[:2]),
            "einsum": mx.einsum("ijk,kjl->il", a, b),
            "vecdot": mx.vecdot(a, a),
            "outer": mx.outer(a[0, 0], b[0, 0]),
        }
        mx.eval(*got.values())
    assert np.allclose(h64(got["tensordot"]), np.tensordot(a64, b64, [[1, 2], [1, 0]]),
                       rtol=1e-2, atol=1e-2)
    assert np.allclose(h64(got["einsum"]), np.einsum("ijk,kjl->il", a64, b64), rtol=1e-2,
                       atol=1e-2)
    assert np.allclose(h64(got["vecdot"]), np.sum(a64 * a64, -1), rtol=1e-2, atol=1e-2)
    assert np.allclose(h64(got["outer"]), np.outer(a64[0, 0], b64[0, 0]), rtol=1e-6)
    assert got["inner"].shape == (3, 4, 2)


def test_cuda_stream_and_operator(path):
    s = mx.new_stream(mx.gpu)
    a, b = make((17, 9), "bfloat16"), make((9, 23), "bfloat16")
    with mx.stream(s):
        got = a @ b
    check(got, h64(a), h64(b), "bfloat16")
