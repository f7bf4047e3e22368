"""mx.fft on a GPU stream through cuFFT (backend/cuda/cufft.py), under PYCUDAMLX_STRICT_GPU=1
so that a host fallback raises: every transform matches the CPU backend (numpy in double
precision, checked against MLX in test_fft.py) within single-precision error. Without cuFFT
(PYCUDAMLX_DISABLE_CUFFT=1, or the wheel missing) the transforms run on the host view of managed
memory and strict mode refuses them. fftshift/ifftshift/fftfreq/rfftfreq are lazy-op
compositions and run natively. The planning logic is also checked on the CPU:
tests/test_fft_plan.py. Needs no MLX."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env
from pycudamlx.backend.cuda import cufft
from pycudamlx.graph.primitive import StrictGpuError

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)


@pytest.fixture
def host_fallback(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", False)


@pytest.fixture
def strict(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)


@pytest.fixture
def gpu_fft(strict):
    """Strict mode with cuFFT (skips with the reason where cuFFT does not load)."""
    if not cufft.available():
        pytest.skip(f"needs cuFFT: {cufft.load_error() or 'PYCUDAMLX_DISABLE_CUFFT is set'}")


def _close(out, ref, tol=1e-4):
    out, ref = np.asarray(out), np.asarray(ref)
    scale = max(1.0, float(np.abs(ref).max())) if ref.size else 1.0
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)


def _same(fn, x, tol=1e-4):
    ref = fn(mx.array(x), stream=mx.cpu)
    out = fn(mx.array(x), stream=mx.gpu)
    mx.eval(out)
    assert type(out._data).__name__ == "GpuArray"
    assert out.dtype == ref.dtype and out.shape == ref.shape
    _close(np.array(out), np.array(ref), tol)
    return out


def _input(name, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    if name.startswith(("i", "f")):  # fft*, ifft*, irfft*: complex input
        x = (x + 1j * RNG.standard_normal(shape)).astype(np.complex64)
    return x


ONE_D = ["fft", "ifft", "rfft", "irfft"]
N_D = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("shape", [(8,), (17,), (97,), (1009,), (3, 17), (70000, 4),
                                   (2, 4096), (5, 2)])
def test_1d_on_gpu(gpu_fft, name, shape):
    _same(lambda a, stream: getattr(mx.fft, name)(a, stream=stream), _input(name, shape))


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_1d_norms(gpu_fft, name, norm):
    _same(lambda a, stream: getattr(mx.fft, name)(a, norm=norm, stream=stream),
          _input(name, (6, 97)))


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("n", [5, 16, 31, 64, 1009])
def test_1d_n_pads_and_crops(gpu_fft, name, n):
    _same(lambda a, stream: getattr(mx.fft, name)(a, n=n, stream=stream), _input(name, (4, 33)))


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("axis", [0, 1, -3, -2])
def test_1d_axes_not_last(gpu_fft, name, axis):
    _same(lambda a, stream: getattr(mx.fft, name)(a, axis=axis, stream=stream),
          _input(name, (7, 10, 5)))


@pytest.mark.parametrize("name", ONE_D)
def test_1d_large_batch_first_axis(gpu_fft, name):
    _same(lambda a, stream: getattr(mx.fft, name)(a, axis=0, stream=stream),
          _input(name, (70000, 4)))


@pytest.mark.parametrize("name", N_D)
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_nd_on_gpu(gpu_fft, name, norm):
    _same(lambda a, stream: getattr(mx.fft, name)(a, norm=norm, stream=stream),
          _input(name, (6, 10, 12)))


@pytest.mark.parametrize("name", N_D)
def test_nd_sizes_and_axes(gpu_fft, name):
    x = _input(name, (3, 10, 12))
    _same(lambda a, stream: getattr(mx.fft, name)(a, s=(6, 16), axes=(0, 2), stream=stream), x)
    _same(lambda a, stream: getattr(mx.fft, name)(a, s=(9, 5), axes=(-1, -3), stream=stream), x)
    _same(lambda a, stream: getattr(mx.fft, name)(a, s=(17, 7), axes=(1, 0), stream=stream), x)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("shape", [(17, 31), (9, 16, 13), (4, 8, 6, 5)])
def test_fftn_2d_3d_4d(gpu_fft, name, shape):
    _same(lambda a, stream: getattr(mx.fft, name)(a, stream=stream), _input(name, shape))


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_transposed_input(gpu_fft, name):
    """A transposed (non-contiguous) view as the primitive's input."""
    x = _input(name, (12, 9))

    def fn(a, stream):
        return getattr(mx.fft, name)(mx.transpose(a, stream=stream), stream=stream)

    _same(fn, x)


@pytest.mark.parametrize("name", ["fft", "rfft"])
def test_sliced_input(gpu_fft, name):
    x = _input(name, (8, 40))

    def fn(a, stream):
        with mx.stream(stream):
            v = a[1::2, 3:]
        return getattr(mx.fft, name)(v, stream=stream)

    _same(fn, x)


@pytest.mark.parametrize("name, dtype", [
    (name, dtype) for name in ("fft", "rfft", "ifft2")
    for dtype in (np.float64, np.float16, np.int32, np.complex128)
    if not (name == "rfft" and dtype == np.complex128)])   # rfft takes real input
def test_input_dtypes(gpu_fft, name, dtype):
    x = (RNG.standard_normal((5, 24)) * 4).astype(dtype) if dtype != np.complex128 else \
        (RNG.standard_normal((5, 24)) + 1j * RNG.standard_normal((5, 24))).astype(dtype)
    a = mx.array(x)
    ref = getattr(mx.fft, name)(a, stream=mx.cpu)
    out = getattr(mx.fft, name)(a, stream=mx.gpu)
    mx.eval(out)
    assert out.dtype == ref.dtype
    _close(np.array(out), np.array(ref))


def test_round_trips(gpu_fft):
    x = RNG.standard_normal((16, 1009)).astype(np.float32)
    a = mx.array(x)
    back = mx.fft.irfft(mx.fft.rfft(a, stream=mx.gpu), n=1009, stream=mx.gpu)
    _close(np.array(back), x)
    back = mx.fft.ifftn(mx.fft.fftn(a, stream=mx.gpu), stream=mx.gpu)
    _close(np.array(back), x.astype(np.complex64))


def test_zero_size(gpu_fft):
    for name in ("fft", "rfft"):
        _same(lambda a, stream: getattr(mx.fft, name)(a, stream=stream),
              np.zeros((0, 8), np.float32))


def test_repeated_calls_reuse_plans(gpu_fft):
    x = _input("fft", (32, 64))
    first = _same(lambda a, stream: mx.fft.fft(a, stream=stream), x)
    second = _same(lambda a, stream: mx.fft.fft(a, stream=stream), x)
    np.testing.assert_array_equal(np.array(first), np.array(second))


def test_second_stream(gpu_fft):
    s = mx.new_stream(mx.gpu)
    x = _input("fft", (8, 100))
    ref = mx.fft.fft(mx.array(x), stream=mx.cpu)
    a = mx.fft.fft(mx.array(x), stream=mx.gpu)
    b = mx.fft.fft(mx.array(x), stream=s)
    mx.eval(a, b)
    _close(np.array(a), np.array(ref))
    _close(np.array(b), np.array(ref))


def test_stft_istft_on_gpu(gpu_fft):
    x = RNG.standard_normal((2, 500)).astype(np.float32)
    w = mx.hanning(64)
    _same(lambda a, stream: mx.fft.stft(a, n_fft=64, hop_length=16, window=w, stream=stream), x)
    spec = mx.fft.stft(mx.array(x), n_fft=64, hop_length=16, window=w, stream=mx.cpu)
    _same(lambda a, stream: mx.fft.istft(a, n_fft=64, hop_length=16, window=w, length=500,
                                         stream=stream), np.array(spec))


def test_disabled_cufft_falls_back_to_the_host(host_fallback, monkeypatch):
    monkeypatch.setenv("PYCUDAMLX_DISABLE_CUFFT", "1")
    assert not cufft.available()
    x = _input("fft", (3, 17))
    _same(lambda a, stream: mx.fft.fft(a, stream=stream), x)
    _same(lambda a, stream: mx.fft.irfft2(a, stream=stream), x)


def test_strict_mode_refuses_the_host_fallback(strict, monkeypatch):
    monkeypatch.setattr(cufft, "available", lambda: False)
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
