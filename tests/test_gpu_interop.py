"""Zero-copy interop with torch and CuPy on the GPU (the ``gpu`` marker; run with
PYCUDAMLX_STRICT_GPU=1): they read our GPU arrays with the pointer we hold, we read theirs with
theirs, DLPack and ``__cuda_array_interface__`` both ways, with stream ordering."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import pycudamlx.core as mx

try:  # import torch at collection, before any test runs: in a full GPU run a later first
    # import of torch failed registering its own custom ops (order-dependent; seen on the H200)
    import torch as _torch_module  # noqa: F401
except Exception:  # torch absent or broken: the fixture below skips with the reason
    _torch_module = None

pytestmark = pytest.mark.gpu


def gpu(values, dtype=None):
    """An evaluated array computed on the GPU (its data is a GpuArray)."""
    a = mx.array(values, dtype)
    out = mx.multiply(a, 1 if a.dtype != mx.bool_ else True, stream=mx.gpu)
    if out.dtype != a.dtype:
        from pycudamlx.core._base import astype

        out = astype(out, a.dtype, stream=mx.gpu)
    mx.eval(out)
    assert not isinstance(out._data, np.ndarray)
    return out


def ptr(a):
    d = a._data
    return d.buffer.ptr + d.offset * d.dtype.size


def values(shape=(64, 33)):
    return (np.random.default_rng(0).standard_normal(shape) * 10).astype(np.float32)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


@pytest.fixture(scope="module")
def cupy():
    return pytest.importorskip("cupy")


def test_gpu_arrays_report_a_cuda_device():
    a = gpu(values())
    assert a.__dlpack_device__() == (2, a._data.buffer.device.index)


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "int32", "int64", "uint8",
                                  "bool_", "complex64", "float64"])
def test_torch_reads_our_gpu_arrays_in_place(torch, name):
    a = gpu(values(), getattr(mx, name))
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.data_ptr() == ptr(a)
    assert tuple(t.shape) == a.shape
    expected = np.array(a.astype(mx.float32) if name == "bfloat16" else a)
    got = t.float().cpu().numpy() if name == "bfloat16" else t.cpu().numpy()
    np.testing.assert_array_equal(got, expected)


def test_torch_sees_strided_views(torch):
    from pycudamlx.core.array import from_data

    a = gpu(values((6, 8)))
    d = a._data
    view = from_data(d.view(d.offset + 1, (4, 3), (1, 8 * 2)), mx.float32)  # a strided window
    t = torch.from_dlpack(view)
    assert t.data_ptr() == ptr(view) and t.stride() == (1, 16)
    np.testing.assert_array_equal(t.cpu().numpy(), np.array(view))


def test_torch_waits_for_our_writes(torch):
    x = mx.array(values((2048, 2048)))
    with mx.stream(mx.gpu):
        y = x
        for _ in range(20):
            y = y * 1.0001 + 0.5  # queued asynchronously on our stream
    mx.eval(y)  # no host synchronisation: the kernels may still be running
    t = torch.from_dlpack(y)  # torch's stream waits for our last write (an event)
    s = float(t.sum().item())
    np.testing.assert_allclose(s, float(np.array(y, dtype=np.float64).sum()), rtol=1e-4)


def test_we_read_torch_tensors_in_place(torch):
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    a = mx.from_dlpack(t)
    assert ptr(a) == t.data_ptr() and a.shape == (3, 4) and a.dtype == mx.float32
    assert a.tolist() == t.cpu().tolist()
    b = mx.add(a, 1, stream=mx.gpu)
    assert b.tolist() == (t + 1).cpu().tolist()
    t.mul_(2)  # shared memory: our array sees their write
    torch.cuda.synchronize()
    assert mx.array(a).tolist() == t.cpu().tolist()
    c = mx.array(t)  # mx.array shares CUDA memory too (MLX shares Metal's)
    assert ptr(c) == t.data_ptr()
    h = mx.array(t, mx.float16)
    assert h.dtype == mx.float16 and h.tolist() == t.half().cpu().tolist()
    tt = t.t()  # a transposed (strided) tensor
    v = mx.from_dlpack(tt)
    assert v.tolist() == tt.cpu().tolist()
    d64 = mx.from_dlpack(torch.ones(3, dtype=torch.float64, device="cuda"))
    assert d64.dtype == mx.float32 and d64.tolist() == [1.0, 1.0, 1.0]
    bf = mx.from_dlpack(torch.tensor([1.5, 2.0], dtype=torch.bfloat16, device="cuda"))
    assert bf.dtype == mx.bfloat16 and bf.tolist() == [1.5, 2.0]


def test_imported_memory_outlives_the_producer_reference(torch):
    t = torch.full((1000,), 7.0, device="cuda")
    a = mx.from_dlpack(t)
    del t
    gc.collect()
    torch.cuda.synchronize()
    assert mx.sum(a).item() == 7000.0 if hasattr(mx, "sum") else a.tolist()[0] == 7.0


def test_our_export_outlives_our_array(torch):
    a = gpu(values())
    expected = np.array(a)
    t = torch.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.cpu().numpy(), expected)


def test_cupy_reads_us_through_the_cuda_array_interface(cupy):
    a = gpu(values())
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"][0] == ptr(a) and cai["typestr"] == "<f4"
    c = cupy.asarray(a)
    assert c.data.ptr == ptr(a)
    np.testing.assert_array_equal(cupy.asnumpy(c), np.array(a))
    d = cupy.from_dlpack(a)
    assert d.data.ptr == ptr(a)


def test_we_read_cupy_arrays_in_place(cupy):
    c = cupy.arange(10, dtype=cupy.int32)
    a = mx.array(c)  # through __dlpack__
    assert ptr(a) == c.data.ptr and a.tolist() == list(range(10))

    class OnlyCAI:  # numba-style producers: __cuda_array_interface__ alone
        def __init__(self, x):
            self.x = x
            self.__cuda_array_interface__ = x.__cuda_array_interface__

    b = mx.array(OnlyCAI(c[::2]))
    assert ptr(b) == c[::2].data.ptr and b.tolist() == list(range(0, 10, 2))
    assert mx.add(b, 1, stream=mx.gpu).tolist() == list(range(1, 11, 2))


def test_managed_gpu_arrays_export_to_the_cpu(torch):
    from pycudamlx.backend.cuda import memory

    a = gpu(values())
    n = np.from_dlpack(a, device="cpu")
    np.testing.assert_array_equal(n, np.array(a))
    if a._data.buffer.kind == memory.MANAGED:
        assert n.ctypes.data == ptr(a)  # in place: managed memory is host-accessible
        assert np.asarray(a).ctypes.data == ptr(a)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Python classes get the buffer protocol "
                    "in 3.12 (PEP 688)")
def test_memoryview_of_gpu_arrays():
    a = gpu(values((3, 4)))
    m = memoryview(a)
    assert m.shape == (3, 4) and m.format == "f"
    assert bytes(m) == bytes(a)


def test_strict_gpu_keeps_kernels_on_the_gpu(torch):
    # imported memory feeds our kernels directly (no host fallback even under strict mode)
    t = torch.arange(8, dtype=torch.float32, device="cuda")
    a = mx.from_dlpack(t)
    r = mx.multiply(a, 2, stream=mx.gpu)
    assert r.tolist() == [float(2 * i) for i in range(8)]
