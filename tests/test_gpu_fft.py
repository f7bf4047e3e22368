"""mx.fft on a GPU stream. The transforms have no GPU kernel yet: without strict mode they run
on the host view of managed memory and equal the CPU results (checked against MLX in
test_fft.py); under PYCUDAMLX_STRICT_GPU=1 they raise. fftshift/ifftshift/fftfreq/rfftfreq are
lazy-op compositions and run natively (strict mode)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env
from pycudamlx.graph.primitive import StrictGpuError

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)


@pytest.fixture
def host_fallback(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", False)


@pytest.fixture
def strict(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)


def _same(fn, x, tol=1e-5):
    ref = fn(mx.array(x), stream=mx.cpu)
    out = fn(mx.array(x), stream=mx.gpu)
    mx.eval(out)
    assert type(out._data).__name__ == "GpuArray"
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(np.array(out), np.array(ref), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("shape", [(8,), (3, 17), (70000, 4), (2, 4096)])
def test_1d_host_fallback_equals_cpu(host_fallback, name, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    if name in ("ifft", "irfft", "fft"):
        x = (x + 1j * RNG.standard_normal(shape)).astype(np.complex64)
    _same(lambda a, stream: getattr(mx.fft, name)(a, stream=stream), x, tol=1e-4)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                                  "irfftn"])
def test_nd_host_fallback_equals_cpu(host_fallback, name):
    x = RNG.standard_normal((3, 10, 12)).astype(np.float32)
    _same(lambda a, stream: getattr(mx.fft, name)(a, s=(6, 16), axes=(0, 2), stream=stream),
          x, tol=1e-4)


def test_stft_host_fallback_equals_cpu(host_fallback):
    x = RNG.standard_normal((2, 500)).astype(np.float32)
    w = mx.hanning(64)
    _same(lambda a, stream: mx.fft.stft(a, n_fft=64, hop_length=16, window=w, stream=stream),
          x, tol=1e-4)
    spec = mx.fft.stft(mx.array(x), n_fft=64, hop_length=16, window=w, stream=mx.cpu)
    _same(lambda a, stream: mx.fft.istft(a, n_fft=64, hop_length=16, window=w, length=500,
                                         stream=stream), np.array(spec), tol=1e-4)


def test_strict_mode_refuses_the_host_fallback(strict):
    with pytest.raises(StrictGpuError, match="fft"):
        mx.eval(mx.fft.fft(mx.ones((4, 8)), stream=mx.gpu))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("shape,axes", [((5,), None), ((300, 1001), None), ((4, 7, 9), [2, 0]),
                                        ((70000, 3), 0)])
def test_shifts_native_on_gpu(strict, name, shape, axes):
    x = RNG.standard_normal(shape).astype(np.float32)
    _same(lambda a, stream: getattr(mx.fft, name)(a, axes, stream=stream), x, tol=0)


@pytest.mark.parametrize("n", [1, 6, 7, 100001])
def test_freqs_native_on_gpu(strict, n):
    for name in ("fftfreq", "rfftfreq"):
        ref = getattr(mx.fft, name)(n, 0.25, stream=mx.cpu)
        out = getattr(mx.fft, name)(n, 0.25, stream=mx.gpu)
        mx.eval(out)
        assert type(out._data).__name__ == "GpuArray" and out.dtype == mx.float32
        np.testing.assert_allclose(np.array(out), np.array(ref), rtol=1e-6, atol=0)
