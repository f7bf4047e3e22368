"""mx.quantize & co. on a GPU stream (strict mode: no host fallback). They are compositions of
lazy ops, so every piece must run as a GPU kernel; the packed words, scales and biases must be
bit-identical to the CPU stream's (which test_quantize.py checks against MLX)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _host(a) -> np.ndarray:
    if a.dtype == mx.uint32:
        return np.array(a)
    return np.array(a.astype(mx.float32))


def _on_gpu(a) -> None:
    mx.eval(a)
    assert type(a._data).__name__ == "GpuArray"


@pytest.mark.parametrize("bits", (1, 2, 3, 4, 5, 6, 8))
@pytest.mark.parametrize("gs", (32, 64, 128))
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_quantize_gpu_equals_cpu(bits, gs, dtype):
    w = mx.array(RNG.standard_normal((37, 512)).astype(np.float32)).astype(getattr(mx, dtype))
    ref = mx.quantize(w, gs, bits, stream=mx.cpu)
    out = mx.quantize(w, gs, bits, stream=mx.gpu)
    for o, r in zip(out, ref):
        _on_gpu(o)
        assert o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_array_equal(_host(o), _host(r))
    d = mx.dequantize(*out, gs, bits, stream=mx.gpu)
    dr = mx.dequantize(*ref, gs, bits, stream=mx.cpu)
    _on_gpu(d)
    np.testing.assert_allclose(_host(d), _host(dr), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,bits", [((70000, 32), 4), ((66000, 32), 3), ((64, 8192), 6),
                                        ((3, 5, 256), 5)])
def test_quantize_gpu_large(shape, bits):
    """> 2**16 rows and long rows: every kernel's multi-block path."""
    w = mx.array(RNG.standard_normal(shape).astype(np.float32))
    ref = mx.quantize(w, 32, bits, stream=mx.cpu)
    out = mx.quantize(w, 32, bits, stream=mx.gpu)
    for o, r in zip(out, ref):
        _on_gpu(o)
        np.testing.assert_array_equal(_host(o), _host(r))


@pytest.mark.parametrize("transpose", (True, False))
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_quantized_matmul_gpu(transpose, dtype):
    shape = (256, 512) if transpose else (512, 256)
    w = mx.array(RNG.standard_normal(shape).astype(np.float32)).astype(getattr(mx, dtype))
    x = mx.array(RNG.standard_normal((2, 33, 512)).astype(np.float32)).astype(getattr(mx, dtype))
    q = mx.quantize(w, 64, 4, stream=mx.cpu)
    ref = mx.quantized_matmul(x, *q, transpose=transpose, stream=mx.cpu)
    out = mx.quantized_matmul(x, *q, transpose=transpose, stream=mx.gpu)
    _on_gpu(out)
    assert out.dtype == ref.dtype and out.shape == ref.shape == (2, 33, 256)
    r = _host(ref)
    # the GPU GEMM may use TF32 for float32; the bound covers it
    tol = 2e-3 if dtype == "float32" else 2e-2
    assert np.abs(_host(out) - r).max() <= tol * np.abs(r).max()


def test_gather_qmm_gpu():
    w = mx.array(RNG.standard_normal((4, 128, 256)).astype(np.float32))
    x = mx.array(RNG.standard_normal((3, 2, 256)).astype(np.float32))
    q = mx.quantize(w, 64, 8, stream=mx.cpu)
    li = mx.array(np.array([0, 2, 1, 1], np.uint32))
    ri = mx.array(np.array([3, 0, 1, 3], np.uint32))
    ref = mx.gather_qmm(x, *q, lhs_indices=li, rhs_indices=ri, group_size=64, bits=8,
                        stream=mx.cpu)
    out = mx.gather_qmm(x, *q, lhs_indices=li, rhs_indices=ri, group_size=64, bits=8,
                        stream=mx.gpu)
    _on_gpu(out)
    r = _host(ref)
    assert out.shape == ref.shape
    assert np.abs(_host(out) - r).max() <= 2e-3 * np.abs(r).max()


def test_gather_qmm_nvfp4_global_scale_gpu():
    """Per-expert nvfp4 global scales in gather_qmm: the GPU stream equals the CPU stream's
    (test_quantize.py checks that one against MLX's per-expert dequantize)."""
    w = RNG.standard_normal((3, 64, 128)).astype(np.float32) * np.array([1, 4, 0.25])[:, None,
                                                                                       None]
    g = mx.array(np.abs(w).reshape(3, -1).max(1).astype(np.float32))
    q, sc = mx.quantize(mx.array(w), mode="nvfp4", stream=mx.cpu)
    x = mx.array(RNG.standard_normal((2, 5, 128)).astype(np.float32))
    kw = dict(lhs_indices=mx.array(np.array([0, 1, 1], np.uint32)),
              rhs_indices=mx.array(np.array([2, 0, 1], np.uint32)), mode="nvfp4",
              global_scale=g)
    ref = _host(mx.gather_qmm(x, q, sc, stream=mx.cpu, **kw))
    out = mx.gather_qmm(x, q, sc, stream=mx.gpu, **kw)
    _on_gpu(out)
    assert out.shape == ref.shape == (3, 5, 64)
    # TF32 may be on for the float32 GEMM; the bound covers it
    assert np.abs(_host(out) - ref).max() <= 2e-3 * np.abs(ref).max()


@pytest.mark.parametrize("mode", ("mxfp4", "mxfp8", "nvfp4"))
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_microscaling_modes_gpu_equals_cpu(mode, dtype, monkeypatch):
    """mxfp4/mxfp8/nvfp4 (log2/ceil of the scale, E4M3/E2M1 rounding, the power-of-two and
    fp8 tables) on the GPU: the same codes and scales as the CPU stream's, and the matmul
    within float32 rounding (TF32 off) or within TF32's (the float32 GEMM's default)."""
    w = RNG.standard_normal((67, 256)).astype(np.float32)
    w[0, :64] = 0
    w[1] *= 1e4
    w = mx.array(w).astype(getattr(mx, dtype))
    kw = {"global_scale": mx.array(3.0)} if mode == "nvfp4" and dtype == "float32" else {}
    ref = mx.quantize(w, mode=mode, stream=mx.cpu, **kw)
    out = mx.quantize(w, mode=mode, stream=mx.gpu, **kw)
    for o, r in zip(out, ref):
        _on_gpu(o)
        assert o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_array_equal(np.array(o), np.array(r))
    d = mx.dequantize(*out, mode=mode, dtype=mx.float32, stream=mx.gpu, **kw)
    dr = mx.dequantize(*ref, mode=mode, dtype=mx.float32, stream=mx.cpu, **kw)
    _on_gpu(d)
    np.testing.assert_array_equal(_host(d), _host(dr))
    x = RNG.standard_normal((5, 256)).astype(np.float32)
    yr = _host(mx.quantized_matmul(mx.array(x), *ref, mode=mode, stream=mx.cpu))
    # the size of the dot products' terms (the weights as the matmul sees them: no global
    # scale), which bounds each output's rounding: float32 sums of 256 terms on either side,
    # plus x rounded to TF32's 10 bits with TF32 on
    wm = _host(mx.dequantize(*ref, mode=mode, dtype=mx.float32, stream=mx.cpu))
    magnitude = np.abs(x).astype(np.float64) @ np.abs(wm).astype(np.float64).T
    summing = 2 * x.shape[1] * 2.0 ** -24
    for tf32, rel in (("0", summing), ("1", summing + 2.0 ** -10)):
        monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", tf32)
        y = mx.quantized_matmul(mx.array(x), *out, mode=mode, stream=mx.gpu)
        _on_gpu(y)
        err = np.abs(_host(y).astype(np.float64) - yr)
        assert (err <= rel * magnitude + 1e-6).all(), (tf32, float((err / magnitude).max()))


@pytest.mark.parametrize("mode", ("nvfp4", "mxfp8"))
def test_gather_qqmm_gpu_equals_cpu(mode):
    """gather_qqmm (x quantized on the fly, gathered quantized w) on the GPU stream equals the
    CPU stream's (test_quantize.py checks that one against MLX's dequantize + gather_mm)."""
    x = mx.array(RNG.standard_normal((3, 7, 128)).astype(np.float32))
    w = RNG.standard_normal((4, 64, 128)).astype(np.float32)
    kw = {}
    if mode == "nvfp4":
        kw = dict(global_scale_x=mx.array(np.float32(np.abs(np.array(x)).max())),
                  global_scale_w=mx.array(np.float32(np.abs(w).max())))
    q, sc = mx.quantize(mx.array(w), mode=mode, global_scale=kw.get("global_scale_w"),
                        stream=mx.cpu)
    idx = dict(lhs_indices=mx.array(np.array([2, 0, 1], np.uint32)),
               rhs_indices=mx.array(np.array([3, 3, 0], np.uint32)))
    ref = _host(mx.gather_qqmm(x, q, sc, mode=mode, stream=mx.cpu, **idx, **kw))
    out = mx.gather_qqmm(x, q, sc, mode=mode, stream=mx.gpu, **idx, **kw)
    _on_gpu(out)
    assert out.shape == ref.shape == (3, 7, 64)
    # TF32 may be on for the float32 GEMM; the bound covers it
    assert np.abs(_host(out) - ref).max() <= 2e-3 * np.abs(ref).max()
