"""gemv.cu on the GPU: matmul of at most 8 rows by a transposed weight (x @ W.T, nn.Linear in a
decode step), against numpy float64 of the same inputs on random data of odd sizes, and the
layouts it must leave to cuBLAS or the NVRTC GEMM (still correct there)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
from pycudamlx import _env
from pycudamlx.backend.cuda import gemm

pytestmark = pytest.mark.gpu

#: error bound per unit of sum(|x| |w|), float accumulation, plus the output's rounding
TOL = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-3}
OUT_ROUND = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 8e-3}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


@pytest.fixture
def gemv_calls(monkeypatch):
    """How many products gemv.cu computed."""
    ran = []
    real = gemm._gemv

    def spy(*args):
        took = real(*args)
        ran.append(took)
        return took

    monkeypatch.setattr(gemm, "_gemv", spy)
    return ran


def _rand(shape, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return mx.array(x).astype(getattr(mx, dtype))


def _f64(a):
    with mx.stream(mx.cpu):
        return np.array(a.astype(mx.float32)).astype(np.float64)


def _check(got, x, w, dtype):
    mx.eval(got)
    assert type(got._data).__name__ == "GpuArray"
    x64, w64 = _f64(x), _f64(w)
    ref = x64 @ np.swapaxes(w64, -1, -2)
    bound = np.abs(x64) @ np.abs(np.swapaxes(w64, -1, -2))
    g = _f64(got)
    assert g.shape == ref.shape and got.dtype == getattr(mx, dtype)
    err = np.abs(g - ref)
    assert np.all(err <= TOL[dtype] * bound + OUT_ROUND[dtype] * np.abs(ref) + 1e-30), err.max()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("m,k,n", [(1, 8, 1), (1, 2048, 8192), (3, 520, 999), (8, 4096, 4099),
                                   (5, 24, 2047), (1, 16, 2048), (2, 8192, 5), (7, 1032, 3001),
                                   (1, 8192, 2049), (4, 2056, 2047), (1, 2048, 32001)])
def test_few_rows_by_transposed_weight(dtype, m, k, n, gemv_calls):
    x, w = _rand((m, k), dtype, 1), _rand((n, k), dtype, 2)
    got = mx.matmul(x, mx.transpose(w), stream=mx.gpu)
    _check(got, x, w, dtype)
    assert gemv_calls == [True]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_linear_layer_of_a_decode_step(dtype, gemv_calls):
    layer = nn.Linear(1032, 777, bias=False)
    layer.set_dtype(getattr(mx, dtype))
    x = _rand((1, 1, 1032), dtype, 3)
    with mx.stream(mx.gpu):
        got = layer(x)
    _check(got, x, layer.weight, dtype)
    assert gemv_calls == [True]


def test_strided_rows_of_x_are_read_in_place(gemv_calls):
    big = _rand((6, 1040), "bfloat16", 4)
    x = big[:, :1024]  # rows 1040 elements apart: whole 16-byte vectors
    w = _rand((300, 1024), "bfloat16", 5)
    _check(mx.matmul(x, w.T, stream=mx.gpu), x, w, "bfloat16")
    assert gemv_calls == [True]


@pytest.mark.parametrize("case", ["k_not_vectors", "misaligned", "plain_weight", "nine_rows",
                                  "batched", "alpha"])
def test_layouts_it_leaves_to_the_gemm_stay_correct(case, gemv_calls):
    dtype = "float16"
    x, w = _rand((3, 64), dtype, 6), _rand((129, 64), dtype, 7)
    if case == "k_not_vectors":
        x, w = _rand((3, 61), dtype, 6), _rand((129, 61), dtype, 7)
    elif case == "misaligned":
        x = _rand((3 * 64 + 1,), dtype, 6)[1:].reshape(3, 64)  # 2 bytes into a 16-byte vector
        mx.eval(x)
        assert x._data.offset == 1 and x._data.strides == (64, 1)
    elif case == "nine_rows":
        x = _rand((9, 64), dtype, 6)
    elif case == "batched":
        x = _rand((4, 2, 64), dtype, 6)
    if case == "plain_weight":
        wt = mx.array(np.ascontiguousarray(np.array(w.T)))  # (K, N) row-major
        got = mx.matmul(x, wt, stream=mx.gpu)
    elif case == "alpha":
        c = _rand((3, 129), dtype, 8)
        got = mx.addmm(c, x, w.T, alpha=2.0, beta=0.5, stream=mx.gpu)
        mx.eval(got)
        ref = 2.0 * (_f64(x) @ _f64(w).T) + 0.5 * _f64(c)
        np.testing.assert_allclose(_f64(got), ref, rtol=2e-2, atol=5e-2)
        assert True not in gemv_calls
        return
    else:
        got = mx.matmul(x, w.T, stream=mx.gpu)
    _check(got, x, w, dtype)
    assert True not in gemv_calls
