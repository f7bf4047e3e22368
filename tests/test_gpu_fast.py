"""mx.fast on the GPU (strict mode: the fused kernels must run), compared with the CPU backend,
which tests/test_fast.py holds to real MLX, and with numpy float64.

Sizes reach every kernel path: 16-byte and scalar row loads, rows longer than the register
cache, more than 2^16 rows, rope offsets on the device, tiled attention for head dims 64/80/96/128
with partial query and key tiles, the generic attention kernel (other head dims, Dv != Dk,
float64, output dims split over grid.z), more than 65,535 batch*heads, and user cuda_kernels.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env

pytestmark = pytest.mark.gpu

TOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2, "float64": 1e-5}
FLOATS = ["float32", "float16", "bfloat16", "float64"]
rng = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _arr(x: np.ndarray, dtype: str | None = None) -> pm.array:
    a = pm.array(x)
    return a.astype(getattr(pm, dtype)) if dtype else a


def _host(x: pm.array) -> np.ndarray:
    if x.dtype in (pm.float16, pm.bfloat16):
        x = x.astype(pm.float32, stream=pm.cpu)
    return np.array(x)


def _both(fn, dtype: str, scale: float = 1.0):
    """fn(stream) on the GPU and on the CPU: the GPU ran a kernel and agrees with the CPU."""
    g = fn(pm.gpu)
    pm.eval(g)
    assert type(g._data).__name__ == "GpuArray"
    c = fn(pm.cpu)
    assert g.dtype == c.dtype and g.shape == c.shape
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(_host(g), _host(c), rtol=tol, atol=tol)
    return g


# ------------------------------------------------------------------------------------------------
# Norms

NORM_SHAPES = [(7,), (3, 5), (2, 3, 33), (4, 1), (5, 4096), (3, 4099), (2, 40000),
               (70000, 8), (0, 5), (3, 0)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", NORM_SHAPES)
def test_norms_gpu(dtype, shape):
    x = _arr(rng.standard_normal(shape).astype(np.float32) * 2 + 0.5, dtype)
    w = _arr(rng.standard_normal(shape[-1:]).astype(np.float32), dtype)
    b = _arr(rng.standard_normal(shape[-1:]).astype(np.float32), dtype)
    # The CPU reference of a float64 norm is MLX's, which accumulates in float32 (~3e-5 off
    # the exact result over 40,000 elements); the GPU is compared with it at float32's tolerance
    scale = 8.0 if dtype == "float64" else 1.0
    _both(lambda s: pm.fast.rms_norm(x, w, 1e-5, stream=s), dtype, scale)
    _both(lambda s: pm.fast.rms_norm(x, None, 1e-5, stream=s), dtype, scale)
    _both(lambda s: pm.fast.layer_norm(x, w, b, 1e-5, stream=s), dtype, scale)
    _both(lambda s: pm.fast.layer_norm(x, None, b, 1e-5, stream=s), dtype, scale)
    _both(lambda s: pm.fast.layer_norm(x, w, None, 1e-5, stream=s), dtype, scale)


def test_norms_gpu_unaligned_and_strided():
    base = rng.standard_normal((9, 257)).astype(np.float32)
    x = _arr(base, "bfloat16")[:, 1:]        # rows start off 16-byte boundaries
    w = _arr(rng.standard_normal(256).astype(np.float32), "bfloat16")
    _both(lambda s: pm.fast.rms_norm(x, w, 1e-5, stream=s), "bfloat16")
    xt = _arr(base[:, :64]).T                 # transposed: a contiguous copy first
    _both(lambda s: pm.fast.layer_norm(xt, None, None, 1e-5, stream=s), "float32")
    flat = _arr(rng.standard_normal(9 * 256 + 1).astype(np.float32), "float16")
    xo = flat[1:].reshape(9, 256)            # contiguous, but 2 bytes off alignment
    _both(lambda s: pm.fast.rms_norm(xo, w.astype(pm.float16), 1e-5, stream=s), "float16")
    _both(lambda s: pm.fast.layer_norm(xo, None, None, 1e-5, stream=s), "float16")
    wm = _arr(rng.standard_normal(9).astype(np.float32), "float16")
    _both(lambda s: pm.fast.rms_norm(_arr(base[:, :9]), wm, 1e-5, stream=s), "float32")


def test_rms_norm_gpu_float64_oracle():
    x = rng.standard_normal((300, 1000)).astype(np.float32)
    out = np.array(pm.fast.rms_norm(_arr(x), None, 1e-6, stream=pm.gpu))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out, x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6),
                               rtol=2e-5, atol=2e-5)


# ------------------------------------------------------------------------------------------------
# RoPE


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("shape,dims", [((2, 3, 5, 8), 8), ((2, 3, 5, 10), 6),
                                        ((1, 4, 300, 128), 64), ((3, 5, 12), 12),
                                        ((2, 2, 3, 4, 16), 16), ((2, 3, 0, 8), 8)])
def test_rope_gpu(dtype, traditional, shape, dims):
    x = _arr(rng.standard_normal(shape).astype(np.float32), dtype)
    kw = dict(traditional=traditional, base=10000.0, scale=0.5)
    # numpy's float32 exp and CUDA's expf may differ by an ulp in the frequencies: at angles
    # of hundreds of radians that moves float32 results by ~1e-4
    rs = 50 if dtype in ("float32", "float64") else 4
    _both(lambda s: pm.fast.rope(x, dims, offset=7, stream=s, **kw), dtype, rs)
    offs = _arr(np.arange(shape[0], dtype=np.int32) * 5 + 1)
    _both(lambda s: pm.fast.rope(x, dims, offset=offs, stream=s, **kw), dtype, rs)
    one = _arr(np.array(1234, np.int64))
    _both(lambda s: pm.fast.rope(x, dims, offset=one, stream=s, **kw), dtype, rs)
    f = _arr((rng.random(dims // 2) * 10 + 1).astype(np.float32))
    _both(lambda s: pm.fast.rope(x, dims, traditional=traditional, base=None, scale=1.0,
                                 offset=3, freqs=f, stream=s), dtype, rs)


def test_rope_gpu_non_contiguous():
    x = _arr(rng.standard_normal((2, 9, 3, 16)).astype(np.float32)).transpose(0, 2, 1, 3)
    _both(lambda s: pm.fast.rope(x, 16, traditional=False, base=1e4, scale=1.0, offset=2,
                                 stream=s), "float32", 4)


# ------------------------------------------------------------------------------------------------
# Attention


def _qkv(B, Hq, Hkv, Tq, Tk, D, Dv, dtype):
    q = _arr(rng.standard_normal((B, Hq, Tq, D)).astype(np.float32), dtype)
    k = _arr(rng.standard_normal((B, Hkv, Tk, D)).astype(np.float32), dtype)
    v = _arr(rng.standard_normal((B, Hkv, Tk, Dv)).astype(np.float32), dtype)
    return q, k, v


SDPA_SHAPES = [
    # tiled kernel: head dims 64/80/96/128, partial query (16) and key (32) tiles, GQA
    (1, 2, 2, 1, 1, 64, 64), (2, 4, 2, 17, 33, 64, 64), (1, 3, 1, 40, 70, 80, 80),
    (1, 4, 2, 16, 32, 96, 96), (2, 2, 2, 100, 257, 128, 128), (1, 2, 1, 300, 20, 128, 128),
    # generic kernel: other head dims, Dv != Dk, Dv over 128 (several grid.z slices)
    (2, 4, 2, 5, 7, 8, 8), (1, 2, 2, 9, 40, 24, 40), (1, 1, 1, 3, 50, 130, 300),
    (1, 2, 1, 6, 3, 0, 5),
]


@pytest.fixture(params=["mma", "simt"])
def sdpa_path(request, monkeypatch):
    """16-bit attention on the tensor cores (sm_80+) and on the SIMT tiled kernel."""
    from pycudamlx.backend.cuda import fast

    monkeypatch.setattr(fast, "USE_MMA", request.param == "mma")
    return request.param


#: (dtype, kernel path): float32 attention has no tensor-core path, so it runs SIMT only.
SDPA_CASES = [("float32", "simt"), ("float16", "mma"), ("float16", "simt"),
              ("bfloat16", "mma"), ("bfloat16", "simt")]


@pytest.mark.parametrize("dtype,path", SDPA_CASES)
@pytest.mark.parametrize("shape", SDPA_SHAPES)
def test_sdpa_gpu(dtype, path, shape, monkeypatch):
    from pycudamlx.backend.cuda import fast

    monkeypatch.setattr(fast, "USE_MMA", path == "mma")
    _sdpa_mask_cases(shape, dtype, sinks_with="causal")


def _sdpa_mask_cases(shape, dtype, sinks_with):
    """GPU against CPU on random q, k, v of ``shape``: no mask, causal, boolean, additive, and
    sinks with the causal or the boolean mask (``sinks_with``)."""
    B, Hq, Hkv, Tq, Tk, D, Dv = shape
    q, k, v = _qkv(B, Hq, Hkv, Tq, Tk, D, Dv, dtype)
    sc = 1.0 / max(D, 1) ** 0.5
    f = pm.fast.scaled_dot_product_attention
    _both(lambda s: f(q, k, v, scale=sc, stream=s), dtype, 3)
    _both(lambda s: f(q, k, v, scale=sc, mask="causal", stream=s), dtype, 3)
    bm = _arr(rng.random((Tq, Tk)) > 0.3)
    _both(lambda s: f(q, k, v, scale=sc, mask=bm, stream=s), dtype, 3)
    am = _arr(rng.standard_normal((B, 1, Tq, Tk)).astype(np.float32), dtype)
    _both(lambda s: f(q, k, v, scale=sc, mask=am, stream=s), dtype, 3)
    sk = _arr(rng.standard_normal(Hq).astype(np.float32), dtype)
    sink_mask = bm if sinks_with == "bool" else "causal"
    _both(lambda s: f(q, k, v, scale=sc, mask=sink_mask, sinks=sk, stream=s), dtype, 3)


def test_sdpa_gpu_kernel_choice(gpu_device):
    from pycudamlx.backend.cuda import fast

    major = gpu_device.properties.compute_capability[0]
    assert fast.sdpa_kernel_kind(128, 128, pm.bfloat16, gpu_device) == (
        "mma" if major >= 8 else "tiled")
    assert fast.sdpa_kernel_kind(128, 128, pm.float32, gpu_device) == "tiled"
    assert fast.sdpa_kernel_kind(128, 64, pm.float16, gpu_device) == "generic"
    assert fast.sdpa_kernel_kind(64, 64, pm.float64, gpu_device) == "generic"


def test_sdpa_gpu_mma_long_and_strided(sdpa_path):
    """Long causal rows over many key tiles; strided q (no 16-byte path) and contiguous k, v."""
    base = rng.standard_normal((2, 700, 4, 128)).astype(np.float32)
    qt = _arr(base, "bfloat16").transpose(0, 2, 1, 3)
    k = _arr(rng.standard_normal((2, 2, 700, 128)).astype(np.float32), "bfloat16")
    _both(lambda s: pm.fast.scaled_dot_product_attention(qt, k, k, scale=0.09, mask="causal",
                                                         stream=s), "bfloat16", 3)
    q, k, v = _qkv(1, 8, 2, 129, 1000, 64, 64, "float16")
    am = _arr(rng.standard_normal((129, 1000)).astype(np.float32), "float16")
    _both(lambda s: pm.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask=am,
                                                         stream=s), "float16", 3)


def test_sdpa_gpu_float64_and_strided():
    q, k, v = _qkv(2, 4, 2, 11, 13, 64, 64, "float64")
    _both(lambda s: pm.fast.scaled_dot_product_attention(q, k, v, scale=0.1, mask="causal",
                                                         stream=s), "float64")
    base = rng.standard_normal((2, 37, 4, 128)).astype(np.float32)
    qt = _arr(base, "bfloat16").transpose(0, 2, 1, 3)      # (B, H, T, D) with T strided
    _both(lambda s: pm.fast.scaled_dot_product_attention(qt, qt, qt, scale=0.09,
                                                         mask="causal", stream=s), "bfloat16", 3)


def test_sdpa_gpu_masked_rows_and_empty():
    q, k, v = _qkv(1, 2, 1, 40, 3, 64, 64, "float32")
    f = pm.fast.scaled_dot_product_attention
    _both(lambda s: f(q, k, v, scale=0.3, mask="causal", stream=s), "float32")
    none = _arr(np.zeros((40, 3), bool))
    _both(lambda s: f(q, k, v, scale=0.3, mask=none, stream=s), "float32")
    ninf = _arr(np.full((40, 3), -np.inf, np.float32))
    assert np.isnan(np.array(f(q, k, v, scale=0.3, mask=ninf, stream=pm.gpu))).all()
    q, k, v = _qkv(1, 2, 2, 3, 0, 64, 64, "float32")
    out = f(q, k, v, scale=1.0, stream=pm.gpu)
    assert out.shape == (1, 2, 3, 64) and not np.array(out).any()


def test_sdpa_gpu_many_heads():
    """More than 65,535 batch*heads: the launcher splits grid.y."""
    q, k, v = _qkv(1, 66000, 66000, 1, 2, 64, 64, "float16")
    _both(lambda s: pm.fast.scaled_dot_product_attention(q, k, v, scale=0.125, stream=s),
          "float16", 3)


#: (B, Hq, Hkv, Tq, Tk, Dk, Dv): few queries against a KV cache (flash-decoding, sdpa_split):
#: one split and many, GQA groups of 1-8, MHA, every head-dim variant, Dk != Dv, ragged tails.
SPLIT_SHAPES = [
    (1, 32, 8, 1, 1, 64, 64), (1, 32, 8, 1, 777, 64, 64), (2, 8, 2, 1, 4099, 128, 128),
    (1, 4, 4, 3, 65, 80, 80), (1, 16, 2, 2, 1000, 96, 96), (3, 6, 3, 8, 300, 256, 256),
    (1, 2, 1, 5, 130, 40, 200), (1, 64, 8, 1, 33000, 128, 128),
]


@pytest.fixture(params=["split", "prefill"])
def split_path(request, monkeypatch):
    """Few-query attention on the decode kernels and on the prefill kernels."""
    from pycudamlx.backend.cuda import fast

    monkeypatch.setattr(fast, "USE_SPLIT", request.param == "split")
    return request.param


#: every shape on the decode kernels; on the prefill kernels too where the cache is short (their
#: long rows are covered above)
SPLIT_CASES = [(shape, path) for shape in SPLIT_SHAPES for path in ("split", "prefill")
               if path == "split" or shape[4] <= 5000]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,path", SPLIT_CASES)
def test_sdpa_gpu_decode_split(dtype, shape, path, monkeypatch):
    from pycudamlx.backend.cuda import fast

    monkeypatch.setattr(fast, "USE_SPLIT", path == "split")
    B, Hq, Hkv, Tq, Tk, D, Dv = shape
    assert (fast._split_variant(pm.zeros((B, Hq, Tq, D)), pm.zeros((B, Hkv, Tk, D)),
                                pm.zeros((B, Hkv, Tk, Dv)), getattr(pm, dtype)) is None) == (
        path == "prefill")
    _sdpa_mask_cases(shape, dtype, sinks_with="bool")


def test_sdpa_gpu_decode_cache_views_and_hidden_rows(split_path):
    """A KV cache read through a slice of its buffer (strided rows) and a transposed query;
    rows that see no key (boolean: they average V) and rows of -inf (NaN), over many splits."""
    f = pm.fast.scaled_dot_product_attention
    buf = _arr(rng.standard_normal((1, 8, 2048, 64)).astype(np.float32), "bfloat16")
    k, v = buf[..., :1500, :], buf[..., 7:1507, :]
    q = _arr(rng.standard_normal((1, 1, 32, 64)).astype(np.float32), "bfloat16")
    q = q.transpose(0, 2, 1, 3)
    _both(lambda s: f(q, k, v, scale=0.125, stream=s), "bfloat16", 3)
    offset = pm.array([1000], dtype=pm.int32)
    visible = pm.arange(1500, dtype=pm.int32)[None, :] <= offset[:, None]
    _both(lambda s: f(q, k, v, scale=0.125, mask=visible, stream=s), "bfloat16", 3)
    q, k, v = _qkv(1, 4, 2, 2, 3000, 64, 64, "float32")
    hidden = np.ones((2, 3000), bool)
    hidden[1] = False
    _both(lambda s: f(q, k, v, scale=0.125, mask=_arr(hidden), stream=s), "float32")
    ninf = np.zeros((2, 3000), np.float32)
    ninf[0] = -np.inf
    out = np.array(f(q, k, v, scale=0.125, mask=_arr(ninf), stream=pm.gpu))
    assert np.isnan(out[:, :, 0]).all() and not np.isnan(out[:, :, 1]).any()


def test_sdpa_gpu_decode_split_fills_the_gpu(gpu_device):
    """One sequence, 32 k keys, GQA 32/8: the keys split over at least a block per SM."""
    from pycudamlx.backend.cuda import fast

    q, k, v = _qkv(1, 32, 8, 1, 32768, 128, 128, "bfloat16")
    fast._plans.clear()
    pm.eval(pm.fast.scaled_dot_product_attention(q, k, v, scale=0.1, stream=pm.gpu))
    (plan,) = [p for p in fast._plans.values() if p[0] == "split"]
    gx, gy, gz = plan[2]
    assert gx > 1 and gx * gy * gz >= gpu_device.properties.multiprocessors


def test_sdpa_gpu_float64_oracle_long():
    q, k, v = _qkv(1, 2, 1, 1000, 1000, 128, 128, "float32")
    out = np.array(pm.fast.scaled_dot_product_attention(q, k, v, scale=0.088, mask="causal",
                                                        stream=pm.gpu))
    qn, kn, vn = (np.array(t).astype(np.float64) for t in (q, k, v))
    kn, vn = np.repeat(kn, 2, 1), np.repeat(vn, 2, 1)
    s = qn @ np.swapaxes(kn, -1, -2) * 0.088
    s = np.where(np.tri(1000, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ vn
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# cuda_kernel


@contextlib.contextmanager
def _compiled_by_nvrtc():
    """A user's kernel is compiled by NVRTC. With NVRTC disabled (gpu-check's offline pass) its
    first launch must raise KernelUnavailableError naming NVRTC, which ends the test there."""
    if not _env.DISABLE_NVRTC:
        yield
        return
    from pycudamlx.backend.cuda.compiler import KernelUnavailableError

    with pytest.raises(KernelUnavailableError, match="NVRTC"):
        yield


def test_cuda_kernel_mlx_example():
    with _compiled_by_nvrtc():
        _cuda_kernel_mlx_example()


def test_cuda_kernel_shapes_strides_init_and_shared_memory():
    with _compiled_by_nvrtc():
        _cuda_kernel_shapes_strides_init_and_shared_memory()


def test_cuda_kernel_mlx_helpers_on_strided_input():
    with _compiled_by_nvrtc():
        _cuda_kernel_mlx_helpers_on_strided_input()


def _cuda_kernel_mlx_example():
    source = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """
    kernel = pm.fast.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                                 source=source)
    for dtype in (pm.float16, pm.float32, pm.bfloat16):
        a = pm.array(rng.standard_normal((16, 16)).astype(np.float32)).astype(dtype)
        (b,) = kernel(inputs=[a], template=[("T", dtype)], grid=(a.size, 1, 1),
                      threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[dtype])
        assert b.dtype == dtype and b.shape == a.shape
        tol = 1e-2 if dtype is not pm.float32 else 1e-6
        np.testing.assert_allclose(_host(b), np.exp(_host(a)), rtol=tol, atol=tol)


def _cuda_kernel_shapes_strides_init_and_shared_memory():
    source = """
        int i = threadIdx.x + blockIdx.x * blockDim.x;
        extern __shared__ float buf[];
        bool live = i < x_shape[0] * x_shape[1];
        if (live) {
          int r = i / x_shape[1], c = i % x_shape[1];
          buf[threadIdx.x] = (float)x[r * x_strides[0] + c * x_strides[1]];
        }
        __syncthreads();
        if (live) {
          out[i] = buf[threadIdx.x] * SCALE + (float)x_ndim;
          atomicAdd(total, 1.0f);
        }
    """
    kernel = pm.fast.cuda_kernel(name="strided", input_names=["x"], output_names=["out", "total"],
                                 source=source, ensure_row_contiguous=False,
                                 shared_memory=64 * 4)
    x = pm.array(rng.standard_normal((30, 20)).astype(np.float32)).T  # strided view
    out, total = kernel(inputs=[x], template=[("SCALE", 3)], grid=(600, 1, 1),
                        threadgroup=(64, 1, 1), output_shapes=[(20, 30), (1,)],
                        output_dtypes=[pm.float32, pm.float32], init_value=5.0)
    # NVRTC contracts x * 3 + 2 into one fma (one rounding instead of numpy's two)
    np.testing.assert_allclose(np.array(out), np.array(x) * 3 + 2, rtol=1e-6, atol=1e-6)
    assert np.array(total)[0] == 605.0  # init_value, then one add per element


def _cuda_kernel_mlx_helpers_on_strided_input():
    """MLX's CUDA helpers (elem_to_loc over Shape/Strides .data(), WARP_SIZE) read a strided
    input as MLX's test_custom_kernel_strides does."""
    source = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        if (elem < out_size) {
          auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
          out[elem] = exp(inp[loc]) * WARP_SIZE;
        }
    """
    base = rng.standard_normal((6, 5)).astype(np.float32)
    a = pm.array(base)[::2].T  # (5, 3), not row-contiguous
    kernel = pm.fast.cuda_kernel(name="loc_exp", input_names=["inp"], output_names=["out"],
                                 source=source, ensure_row_contiguous=False)
    (out,) = kernel(inputs=[a], template=[("out_size", a.size)], grid=(a.size, 1, 1),
                    threadgroup=(32, 1, 1), output_shapes=[a.shape], output_dtypes=[pm.float32])
    np.testing.assert_allclose(np.array(out), np.exp(base[::2].T) * 32, rtol=1e-5)
