"""Imported functions on the GPU under strict mode: a function exported on the CPU replays as
lazy GPU ops (kernels, not host fallbacks) with the CPU's values, shapeless calls included.
tests/test_export.py holds the CPU behaviour to real MLX."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    yield


def _block_weights():
    return [mx.array(RNG.standard_normal(s).astype(np.float32)) for s in ((16, 12), (16,),
                                                                          (16,), (4, 16))]


def _block(x, w1, b1, g, w2):
    h = mx.fast.layer_norm(mx.maximum(x @ w1.T + b1, 0), g, None, 1e-5)
    p = mx.softmax(h @ w2.T, axis=-1)
    return p, mx.argmax(p, axis=-1), p.sum(axis=0)


def _export_on_cpu(path, shapeless):
    weights = _block_weights()
    with mx.stream(mx.cpu):
        mx.export_function(path, lambda x: _block(x, *weights), mx.ones((3, 12)),
                           shapeless=shapeless)
    return weights


@pytest.mark.parametrize("shapeless, n", [(False, 3), (True, 3), (True, 17)])
def test_imported_function_runs_as_gpu_kernels(tmp_path, shapeless, n):
    path = str(tmp_path / "block.fn")
    _export_on_cpu(path, shapeless)
    f = mx.import_function(path)
    x = RNG.standard_normal((n, 12)).astype(np.float32)
    with mx.stream(mx.cpu):
        want = f(mx.array(x))
        mx.eval(want)
    with mx.stream(mx.gpu):
        got = f(mx.array(x))
        mx.eval(got)
    for o, e in zip(got, want):
        assert type(o._data).__name__ == "GpuArray"
        assert o.shape == e.shape and o.dtype == e.dtype
        np.testing.assert_allclose(np.asarray(o), np.asarray(e), rtol=1e-4, atol=1e-5)


def test_grad_of_an_imported_function_on_the_gpu(tmp_path):
    path = str(tmp_path / "f.fn")
    with mx.stream(mx.cpu):
        mx.export_function(path, lambda a, b: mx.sin(a) * b, mx.ones((5,)), mx.ones((5,)))
    f = mx.import_function(path)
    a = RNG.standard_normal(5).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    with mx.stream(mx.gpu):
        g = mx.grad(lambda u: f(u, mx.array(b))[0].sum())(mx.array(a))
        mx.eval(g)
    assert type(g._data).__name__ == "GpuArray"
    np.testing.assert_allclose(np.asarray(g), np.cos(a) * b, rtol=1e-5, atol=1e-6)
