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


def _prims(a) -> set:
    """Names of the primitives in the (unevaluated) graph behind ``a``."""
    seen, todo, names = set(), [a], set()
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if getattr(n, "_prim", None) is not None:
            names.add(n._prim.name)
        todo.extend(getattr(n, "_inputs", None) or ())
    return names


_EPS = {"float32": 0.0, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


@pytest.mark.parametrize("bits,gs", [(4, 32), (4, 64), (4, 128), (8, 32), (8, 64), (8, 128),
                                     (2, 64), (2, 128)])
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_quantized_matvec_kernel(bits, gs, dtype):
    """Decode-sized quantized_matmul is one qmv.cu launch: against the CPU composition (float32
    dequantize + matmul) for 1-8 rows, an odd number of outputs, batch dims."""
    d = getattr(mx, dtype)
    n_out, k = 257, 640
    w = mx.array(RNG.standard_normal((n_out, k)).astype(np.float32)).astype(d)
    q = mx.quantize(w, gs, bits, stream=mx.cpu)
    mx.eval(q)
    wm = _host(mx.dequantize(*q, gs, bits, dtype=mx.float32, stream=mx.cpu)).astype(np.float64)
    for shape in ((1, k), (3, k), (8, k), (k,), (2, 3, k)):
        x = mx.array(RNG.standard_normal(shape).astype(np.float32)).astype(d)
        y = mx.quantized_matmul(x, *q, group_size=gs, bits=bits, stream=mx.gpu)
        assert "quantized_matvec" in _prims(y) and "matmul" not in _prims(y)
        ref = _host(mx.quantized_matmul(x, *q, group_size=gs, bits=bits, stream=mx.cpu))
        _on_gpu(y)
        assert y.dtype == d and y.shape == (*shape[:-1], n_out)
        xh = _host(x).astype(np.float64)
        magnitude = np.abs(xh) @ np.abs(wm).T
        err = np.abs(_host(y).astype(np.float64) - ref)
        bound = 4 * k * 2.0 ** -24 * magnitude + 2 * _EPS[dtype] * np.abs(ref) + 1e-6
        assert (err <= bound).all(), (shape, float((err / (magnitude + 1e-30)).max()))


@pytest.mark.parametrize("bits", (2, 4, 8))
@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
def test_quantized_matvec_kernel_split_k(bits, dtype):
    """A decode projection narrow enough that qmv.cu splits K over the warps of a block (and
    a ragged last block): the same bound against the CPU composition."""
    d = getattr(mx, dtype)
    n_out, k = 2049, 4096
    w = mx.array(RNG.standard_normal((n_out, k)).astype(np.float32)).astype(d)
    q = mx.quantize(w, 64, bits, stream=mx.cpu)
    mx.eval(q)
    wm = _host(mx.dequantize(*q, 64, bits, dtype=mx.float32, stream=mx.cpu)).astype(np.float64)
    for shape in ((1, k), (5, k)):
        x = mx.array(RNG.standard_normal(shape).astype(np.float32)).astype(d)
        y = mx.quantized_matmul(x, *q, group_size=64, bits=bits, stream=mx.gpu)
        assert "quantized_matvec" in _prims(y)
        ref = _host(mx.quantized_matmul(x, *q, group_size=64, bits=bits, stream=mx.cpu))
        _on_gpu(y)
        magnitude = np.abs(_host(x).astype(np.float64)) @ np.abs(wm).T
        err = np.abs(_host(y).astype(np.float64) - ref)
        bound = 4 * k * 2.0 ** -24 * magnitude + 2 * _EPS[dtype] * np.abs(ref) + 1e-6
        assert (err <= bound).all(), (shape, float((err / (magnitude + 1e-30)).max()))


def test_quantized_matvec_layouts_and_fallbacks():
    """Views are read right (copied dense/aligned first); more rows than the kernel takes,
    other modes and gradients keep the dequantize + matmul composition."""
    w = mx.array(RNG.standard_normal((96, 256)).astype(np.float32))
    q = mx.quantize(w, 64, 4, stream=mx.cpu)
    base = mx.array(RNG.standard_normal((1, 257 * 4)).astype(np.float32))
    views = {"transposed": mx.array(RNG.standard_normal((256, 2)).astype(np.float32)).T,
             "misaligned": base[:, 1:257], "strided": base[:, ::4][:, :256]}
    for name, x in views.items():
        y = mx.quantized_matmul(x, *q, stream=mx.gpu)
        assert "quantized_matvec" in _prims(y), name
        ref = _host(mx.quantized_matmul(x, *q, stream=mx.cpu))
        np.testing.assert_allclose(_host(y), ref, rtol=1e-4, atol=1e-4, err_msg=name)
    many = mx.array(RNG.standard_normal((9, 256)).astype(np.float32))
    prims = _prims(mx.quantized_matmul(many, *q, stream=mx.gpu))
    assert "quantized_matvec" not in prims and "dequantize_affine" in prims
    x = mx.array(RNG.standard_normal((2, 256)).astype(np.float32))

    def loss(x):
        return mx.quantized_matmul(x, *q, stream=mx.gpu).sum()

    g = mx.grad(loss)(x)
    _on_gpu(g)
    gr = mx.grad(lambda x: mx.quantized_matmul(x, *q, stream=mx.cpu).sum())(x)
    np.testing.assert_allclose(_host(g), _host(gr), rtol=2e-3, atol=2e-3)


def test_quantized_matvec_compiled_then_differentiated():
    """A compiled step recorded with the fused node still differentiates (through the
    composition), and its weights still refuse a gradient as MLX's do."""
    w = mx.array(RNG.standard_normal((64, 128)).astype(np.float32))
    q = mx.quantize(w, 32, 8, stream=mx.cpu)
    x = mx.array(RNG.standard_normal((1, 128)).astype(np.float32))
    with mx.stream(mx.gpu):
        f = mx.compile(lambda x: mx.quantized_matmul(x, *q, group_size=32, bits=8))
        y = f(x)
        g = mx.grad(lambda x: f(x).sum())(x)
        mx.eval(y, g)
    gr = mx.grad(lambda x: mx.quantized_matmul(x, *q, group_size=32, bits=8,
                                               stream=mx.cpu).sum())(x)
    np.testing.assert_allclose(_host(g), _host(gr), rtol=2e-3, atol=2e-3)
    with pytest.raises(RuntimeError, match="no gradient wrt the quantized weights"):
        mx.grad(lambda wq: mx.quantized_matmul(x, wq, q[1], q[2], group_size=32, bits=8,
                                               stream=mx.gpu).sum())(q[0])


@pytest.mark.parametrize("bits,gs", [(2, 32), (4, 64), (8, 128)])
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_dequantize_affine_kernel_is_exact(bits, gs, dtype):
    """The prefill path's one-kernel dequantization: the composition's float32 values, rounded
    once to the dtype (bit for bit), for batched weights too."""
    from pycudamlx.core.array import make
    from pycudamlx.graph.primitives.quantize import DequantizeAffine

    d = getattr(mx, dtype)
    w = mx.array(RNG.standard_normal((3, 37, 256)).astype(np.float32)).astype(d)
    wq, scales, biases = mx.quantize(w, gs, bits, stream=mx.cpu)
    out = make(DequantizeAffine(bits, gs), (wq, scales, biases), (3, 37, 256), d,
               mx.default_stream(mx.gpu))
    _on_gpu(out)
    # float32 math throughout (mx.dequantize multiplies in the scales' dtype, as MLX's does)
    ref = mx.dequantize(wq, scales.astype(mx.float32), biases.astype(mx.float32), gs, bits,
                        dtype=mx.float32, stream=mx.cpu)
    np.testing.assert_array_equal(_host(out), _host(ref.astype(d, stream=mx.cpu)))


@pytest.mark.parametrize("transpose", (True, False))
@pytest.mark.parametrize("bits", (2, 4, 8))
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16"))
def test_quantized_matmul_prefill_path(transpose, bits, dtype):
    """More rows than qmv takes, batched weights, either transpose: one dequantize kernel and a
    GEMM of x's dtype, within that dtype's rounding of the weights of the CPU composition."""
    d = getattr(mx, dtype)
    shape = (2, 128, 256) if transpose else (2, 256, 128)
    w = mx.array(RNG.standard_normal(shape).astype(np.float32)).astype(d)
    q = mx.quantize(w, 64, bits, stream=mx.cpu)
    x = mx.array(RNG.standard_normal((2, 40, 256)).astype(np.float32)).astype(d)
    y = mx.quantized_matmul(x, *q, transpose=transpose, bits=bits, stream=mx.gpu)
    assert "dequantize_affine" in _prims(y)
    ref = _host(mx.quantized_matmul(x, *q, transpose=transpose, bits=bits, stream=mx.cpu))
    _on_gpu(y)
    assert y.dtype == d and y.shape == (2, 40, 128)
    wm = _host(mx.dequantize(*q, 64, bits, dtype=mx.float32, stream=mx.cpu)).astype(np.float64)
    wm = np.swapaxes(wm, -1, -2) if transpose else wm
    magnitude = np.abs(_host(x).astype(np.float64)) @ np.abs(wm)
    # the weights rounded to the dtype (or TF32 for float32), float32 sums, one final rounding
    rel = {"float32": 2.0 ** -10, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}[dtype]
    err = np.abs(_host(y).astype(np.float64) - ref)
    assert (err <= rel * magnitude + 2 * _EPS[dtype] * np.abs(ref) + 1e-5).all()


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
