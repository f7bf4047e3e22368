"""The GPU GEMM launcher's plan (batch collapse, broadcast strides, the row-major transpose
trick, leading dimensions) checked on the CPU: the cuBLAS call and the NVRTC kernel are replaced
by numpy models that read host memory at the pointers the launcher computes, exactly as the
documented column-major cuBLAS call (and gemm.cu's strided indexing) would."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from pycudamlx import dtypes as dt
from pycudamlx.backend.cuda import cublas, gemm

rng = np.random.default_rng(3)


class FakeBuffer:
    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self.ptr = host.ctypes.data
        self.location = 0
        self.last_write = None

    def set_location(self, loc: int) -> None:
        self.location = loc


class FakeDevice:
    index = 0


class FakeStream:
    device = FakeDevice()


class View:
    """A GpuArray look-alike over host memory."""

    def __init__(self, buf: FakeBuffer, offset: int, shape, strides, dtype) -> None:
        self.buffer, self.offset, self.shape, self.strides, self.dtype = (
            buf, offset, tuple(shape), tuple(strides), dtype)


def _read(ptr: int, shape, strides, np_dtype) -> np.ndarray:
    """A numpy view of host memory at ``ptr`` with element strides (may be 0 or negative)."""
    isz = np.dtype(np_dtype).itemsize
    lo = sum(min(0, s * (e - 1)) for s, e in zip(strides, shape))
    hi = sum(max(0, s * (e - 1)) for s, e in zip(strides, shape))
    raw = np.ctypeslib.as_array(ctypes.cast(ptr + lo * isz, ctypes.POINTER(ctypes.c_uint8)),
                                shape=((hi - lo + 1) * isz,))
    base = raw.view(np_dtype)
    return np.lib.stride_tricks.as_strided(base[-lo:], shape, [s * isz for s in strides],
                                           writeable=True)


def fake_cublas(stream, dtype_name, op_a, op_b, m, n, k, alpha, pa, lda, sa, pb, ldb, sb,
                beta, pc, ldc, sc, batch):
    npd = dt.by_name[dtype_name].np_dtype
    assert lda >= max(1, m if op_a == cublas.OP_N else k)
    assert ldb >= max(1, k if op_b == cublas.OP_N else n)
    assert ldc >= max(1, m)
    for z in range(batch):
        # column-major: element (i, j) at i + j * ld
        A = _read(pa + z * sa * np.dtype(npd).itemsize, (m, k) if op_a == cublas.OP_N else (k, m),
                  (1, lda), npd).astype(np.float64)
        B = _read(pb + z * sb * np.dtype(npd).itemsize, (k, n) if op_b == cublas.OP_N else (n, k),
                  (1, ldb), npd).astype(np.float64)
        C = _read(pc + z * sc * np.dtype(npd).itemsize, (m, n), (1, ldc), npd)
        opA = A if op_a == cublas.OP_N else A.T
        opB = B if op_b == cublas.OP_N else B.T
        res = alpha * (opA @ opB) + (beta * C.astype(np.float64) if beta else 0)
        C[...] = res.astype(npd)


def fake_kernel_call(a, b, dtype, pa, pb, pc, m, n, k, sa, sb, batch, alpha, beta, stream,
                     force_fma=False):
    npd = dtype.np_dtype
    isz = dtype.size
    for z in range(batch):
        A = _read(pa + z * sa * isz, (m, k), (a.strides[-2], a.strides[-1]), npd)
        B = _read(pb + z * sb * isz, (k, n), (b.strides[-2], b.strides[-1]), npd)
        C = _read(pc + z * m * n * isz, (m, n), (n, 1), npd)
        res = alpha * (A.astype(np.float64) @ B.astype(np.float64))
        if beta:
            res = res + beta * C.astype(np.float64)
        C[...] = res.astype(npd)


def _contig_copy(x, stream):
    host = np.ascontiguousarray(_read(x.buffer.ptr + x.offset * x.dtype.size, x.shape,
                                      x.strides, x.dtype.np_dtype))
    return View(FakeBuffer(host), 0, host.shape, [s // host.itemsize for s in host.strides],
                x.dtype)


@pytest.fixture(params=["cublas", "kernel"])
def path(request, monkeypatch):
    monkeypatch.setattr(gemm, "_contiguous", _contig_copy)
    monkeypatch.setattr(gemm, "_record_write", lambda out, stream: None)
    monkeypatch.setattr(gemm, "_fallback_call", fake_kernel_call)
    monkeypatch.setattr(cublas, "gemm_strided_batched", fake_cublas)
    monkeypatch.setattr(gemm, "use_cublas", lambda d: request.param == "cublas")
    return request.param


def _operand(full: np.ndarray, index):
    """A View of full[index] (sharing full's memory) and the numpy value it stands for."""
    v = full[index]
    isz = full.itemsize
    off = (v.__array_interface__["data"][0] - full.ctypes.data) // isz
    return View(FakeBuffer(full), off, v.shape, [s // isz for s in v.strides],
                dt.float32), v


CASES = [
    # (a full shape, a index, b full shape, b index)
    ((5, 7), np.s_[...], (7, 3), np.s_[...]),
    ((7, 5), np.s_[...], (7, 3), np.s_[...]),                       # a transposed below
    ((2, 4, 6), np.s_[...], (6, 5), np.s_[...]),                    # b broadcast over batch
    ((3, 1, 4, 6), np.s_[...], (2, 6, 5), np.s_[...]),              # (3,1) x (2,): loop
    ((9, 8), np.s_[1::2, ::3], (8, 9), np.s_[::3, 1:8]),            # strided slices
    ((4, 6), np.s_[::-1], (6, 5), np.s_[...]),                      # negative stride: copy
    ((1, 6), np.s_[...], (6, 1), np.s_[...]),
    ((3, 5, 2), np.s_[...], (3, 2, 4), np.s_[...]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_launcher_plan(path, case, beta):
    fa_shape, ia, fb_shape, ib = CASES[case]
    fa = rng.standard_normal(fa_shape).astype(np.float32)
    fb = rng.standard_normal(fb_shape).astype(np.float32)
    a, av = _operand(fa, ia)
    b, bv = _operand(fb, ib)
    if case == 1:  # a transposed view: shape (5, 7) with strides (1, 5)
        av = fa.T
        a = View(FakeBuffer(fa), 0, av.shape, (1, 5), dt.float32)
    batch = np.broadcast_shapes(av.shape[:-2], bv.shape[:-2])
    shape = tuple(batch) + (av.shape[-2], bv.shape[-1])
    c0 = rng.standard_normal(shape).astype(np.float32)
    host = c0.copy()
    out = View(FakeBuffer(host), 0, shape, [s // 4 for s in host.strides], dt.float32)
    gemm.run(a, b, out, 1.5, beta, FakeStream())
    want = 1.5 * np.matmul(av.astype(np.float64), bv.astype(np.float64)) + beta * c0
    np.testing.assert_allclose(host, want, rtol=1e-5, atol=1e-5)


def test_layout_rules():
    assert gemm._layout(4, 3, 3, 1) == (cublas.OP_N, 3)
    assert gemm._layout(4, 3, 1, 4) == (cublas.OP_T, 4)
    assert gemm._layout(4, 3, 0, 1) is None          # broadcast rows: copy
    assert gemm._layout(4, 3, -3, 1) is None         # flipped rows: copy
    assert gemm._layout(1, 3, 0, 1) == (cublas.OP_N, 3)
    assert gemm._layout(4, 1, 1, 0) == (cublas.OP_N, 1)


def test_tf32_switch(monkeypatch):
    monkeypatch.delenv("MLX_ENABLE_TF32", raising=False)
    monkeypatch.delenv("PYCUDAMLX_ENABLE_TF32", raising=False)
    assert cublas.tf32_enabled()
    monkeypatch.setenv("MLX_ENABLE_TF32", "0")
    assert not cublas.tf32_enabled()
    monkeypatch.delenv("MLX_ENABLE_TF32")
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    assert not cublas.tf32_enabled()


def test_disable_cublas(monkeypatch):
    monkeypatch.setenv("PYCUDAMLX_DISABLE_CUBLAS", "1")
    assert not cublas.available()
    assert not gemm.use_cublas(dt.float32)


def test_cublas_binding_loads_when_installed():
    """The library and every symbol the binding uses load (no GPU needed); skip without the
    nvidia-cublas wheel."""
    if cublas.library() is None:
        pytest.skip(f"cuBLAS not installed: {cublas.load_error()}")
    v = cublas.version()
    assert v and v.split(".")[0].isdigit()
    for sym in ("cublasCreate_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2",
                "cublasGemmStridedBatchedEx", "cublasGemmEx"):
        assert hasattr(cublas.library(), sym)


def test_c_broadcasts_to_the_output():
    # vmap batches addmm's a and b but not c: c arrives with fewer (or size-1) dimensions
    from pycudamlx.backend.cuda.array import GpuArray

    buf = FakeBuffer(np.arange(6, dtype=np.float32))
    c = GpuArray(buf, 0, (1, 3, 2), (6, 2, 1), dt.float32)
    v = gemm._broadcast(c, (4, 3, 2))
    assert v.shape == (4, 3, 2) and v.strides == (0, 2, 1) and v.buffer is buf
    row = GpuArray(buf, 2, (2,), (1,), dt.float32)
    v = gemm._broadcast(row, (4, 3, 2))
    assert v.shape == (4, 3, 2) and v.strides == (0, 0, 1) and v.offset == 2
    np.testing.assert_array_equal(_read(buf.ptr + 8, v.shape, v.strides, np.float32),
                                  np.broadcast_to(np.float32([2, 3]), (4, 3, 2)))
    assert gemm._broadcast(c, (1, 3, 2)) is c
