"""mx.linalg on a GPU stream (strict mode): the factorizations refuse it with MLX's error before
any work; norm (composed of lazy ops) and cross run on the GPU and equal the CPU results, which
test_linalg.py checks against MLX."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _gpu_result(fn, *xs):
    ref = fn(*[mx.array(x) for x in xs], stream=mx.cpu)
    out = fn(*[mx.array(x) for x in xs], stream=mx.gpu)
    mx.eval(out)
    assert type(out._data).__name__ == "GpuArray"
    assert out.dtype == ref.dtype and out.shape == ref.shape
    return np.array(out.astype(mx.float32) if out.dtype in (mx.float16, mx.bfloat16) else out), \
        np.array(ref.astype(mx.float32) if ref.dtype in (mx.float16, mx.bfloat16) else ref)


REFUSING = [("qr", 1, "qr"), ("svd", 1, "svd"), ("inv", 1, "inv"), ("tri_inv", 1, "inv"),
            ("cholesky", 1, "cholesky"), ("cholesky_inv", 1, "cholesky_inv"),
            ("pinv", 1, "pinv"), ("eig", 1, "eig"), ("eigh", 1, "eigh"),
            ("eigvals", 1, "eigvals"), ("eigvalsh", 1, "eigvalsh"), ("lu", 1, "lu"),
            ("lu_factor", 1, "lu_factor"), ("solve", 2, "solve"),
            ("solve_triangular", 2, "solve_triangular"), ("det", 1, "det"),
            ("slogdet", 1, "slogdet")]


@pytest.mark.parametrize("name,nargs,prefix", REFUSING)
def test_factorizations_refuse_gpu_stream(name, nargs, prefix):
    args = [mx.array(np.eye(3, dtype=np.float32))] * nargs
    msg = (rf"^\[linalg::{prefix}\] This op is not yet supported on the GPU\. "
           r"Explicitly pass a CPU stream to run it\.$")
    with pytest.raises(ValueError, match=msg):
        getattr(mx.linalg, name)(*args, stream=mx.gpu)
    with mx.stream(mx.gpu), pytest.raises(ValueError, match=msg):  # the default stream too
        getattr(mx.linalg, name)(*args)


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, 0.5, -1, math.inf, -math.inf])
@pytest.mark.parametrize("shape,axis", [((7,), None), ((300, 1000), 1), ((300, 1000), 0),
                                        ((70000, 3), -1), ((2, 3, 4), (1,))])
def test_vector_norms_on_gpu(ord, shape, axis):
    x = RNG.standard_normal(shape).astype(np.float32)
    out, ref = _gpu_result(lambda a, stream: mx.linalg.norm(a, ord, axis, stream=stream), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("shape,axis,keepdims", [((5, 9), None, False),
                                                 ((4, 300, 500), (1, 2), True),
                                                 ((4, 30, 50), (2, 0), False)])
def test_matrix_norms_on_gpu(ord, shape, axis, keepdims):
    x = RNG.standard_normal(shape).astype(np.float32)
    if ord is None and axis is None and len(shape) > 2:
        return
    out, ref = _gpu_result(
        lambda a, stream: mx.linalg.norm(a, ord, axis, keepdims, stream=stream), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["int32", "float16", "bfloat16", "complex64"])
def test_norm_dtypes_on_gpu(dtype):
    x = (RNG.standard_normal((6, 33)) * 4).astype(np.float32)
    for ord in (None, 1, math.inf):
        ref = mx.linalg.norm(mx.array(x).astype(getattr(mx, dtype)), ord, 1, stream=mx.cpu)
        out = mx.linalg.norm(mx.array(x).astype(getattr(mx, dtype)), ord, 1, stream=mx.gpu)
        assert out.dtype == ref.dtype
        tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-5
        conv = (lambda a: np.array(a)) if dtype == "complex64" else (
            lambda a: np.array(a.astype(mx.float32)))
        np.testing.assert_allclose(conv(out), conv(ref), rtol=tol, atol=tol)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_svd_matrix_norms_refuse_gpu(ord):
    with pytest.raises(ValueError, match=r"^\[linalg::svd\] This op is not yet supported"):
        mx.linalg.norm(mx.ones((3, 3)), ord, stream=mx.gpu)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((100000, 3), (3,)), ((2,), (5, 3))])
def test_cross_on_gpu(sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    out, ref = _gpu_result(lambda x, y, stream: mx.linalg.cross(x, y, stream=stream), a, b)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
