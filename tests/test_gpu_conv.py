"""Convolutions on the GPU under strict mode (every op of the composition ran as a kernel or
cuBLAS): the same values as pycudamlx's CPU backend (held to real MLX by test_conv.py), in GPU
memory. Needs no MLX: the GPU machine has none."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(77)
TOL = {"float32": 2e-4, "float16": 3e-2, "bfloat16": 8e-2}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")  # float32 GEMMs in full precision
    yield


def _check(name, xs, ws, dtype="float32", **kw):
    x = RNG.standard_normal(xs).astype(np.float32)
    w = RNG.standard_normal(ws).astype(np.float32)
    with mx.stream(mx.cpu):
        ref = getattr(mx, name)(mx.array(x).astype(getattr(mx, dtype)),
                                mx.array(w).astype(getattr(mx, dtype)), **kw)
        mx.eval(ref)
    with mx.stream(mx.gpu):
        xo = mx.array(x).astype(getattr(mx, dtype))
        wo = mx.array(w).astype(getattr(mx, dtype))
        out = getattr(mx, name)(xo, wo, **kw)
        mx.eval(out)
    assert type(out._data).__name__ == "GpuArray"
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype == ref.dtype
    a = np.array(out.astype(mx.float32, stream=mx.gpu)).astype(np.float64)
    b = np.array(ref.astype(mx.float32, stream=mx.cpu)).astype(np.float64)
    scale = max(1.0, np.sqrt(np.prod(ws[1:])) / 2)
    np.testing.assert_allclose(a, b, rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)


CASES = [
    ("conv1d", (2, 9, 4), (6, 3, 4), {}),
    ("conv1d", (3, 17, 6), (9, 4, 2), dict(stride=3, padding=2, dilation=2, groups=3)),
    ("conv2d", (2, 7, 6, 3), (4, 3, 3, 3), dict(padding=1)),
    ("conv2d", (1, 9, 8, 4), (4, 3, 2, 1), dict(stride=(2, 3), padding=(1, 2), groups=4)),
    ("conv3d", (1, 5, 4, 6, 3), (2, 2, 3, 3, 3), dict(stride=(1, 2, 1), dilation=(2, 1, 1))),
    ("conv_general", (2, 5, 6, 4), (4, 3, 2, 2), dict(padding=([1, 2], [0, 1]), stride=2,
                                                      flip=True, input_dilation=2,
                                                      kernel_dilation=[1, 2], groups=2)),
    ("conv_transpose1d", (2, 7, 4), (6, 4, 2), dict(stride=3, padding=2, dilation=2, groups=2,
                                                    output_padding=2)),
    ("conv_transpose2d", (1, 4, 5, 3), (2, 3, 3, 3), dict(stride=2, padding=1,
                                                          output_padding=(1, 0))),
    ("conv_transpose3d", (1, 3, 4, 3, 2), (3, 2, 3, 2, 2), dict(stride=(2, 1, 2))),
    ("conv_transpose1d", (1, 9, 2), (3, 3, 2), dict(stride=2, padding=3)),
]


@pytest.mark.parametrize("name,xs,ws,kw", CASES)
def test_conv_gpu(name, xs, ws, kw):
    _check(name, xs, ws, **kw)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv_gpu_half(dtype):
    _check("conv2d", (2, 9, 8, 8), (16, 3, 3, 8), dtype, padding=1)
    _check("conv1d", (2, 33, 6), (6, 5, 3), dtype, groups=2, stride=2)


def test_conv_gpu_large():
    # a ResNet-like layer: a multi-block im2col (> 2^16 rows) and a cuBLAS-sized GEMM
    _check("conv2d", (4, 66, 70, 16), (32, 3, 3, 16), padding=1)
    _check("conv2d", (2, 64, 64, 32), (32, 3, 3, 1), padding=1, groups=32)


def test_convolve_gpu():
    u = RNG.standard_normal(1001).astype(np.float32)
    v = RNG.standard_normal(31).astype(np.float32)
    for mode in ("full", "same", "valid"):
        with mx.stream(mx.gpu):
            out = mx.convolve(mx.array(u), mx.array(v), mode)
            mx.eval(out)
        np.testing.assert_allclose(np.array(out), np.convolve(u, v, mode), rtol=1e-4, atol=1e-4)


def test_conv_gpu_empty():
    with mx.stream(mx.gpu):
        out = mx.conv1d(mx.zeros((0, 5, 4)), mx.zeros((6, 3, 4)))
        mx.eval(out)
    assert tuple(out.shape) == (0, 3, 6)
