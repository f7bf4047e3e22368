"""Zero-copy interop on the CPU: DLPack both ways (legacy and versioned capsules), numpy's
__array__, mx.from_dlpack / mx.asarray copy semantics, and capsule lifetimes."""

from __future__ import annotations

import ctypes
import gc

import ml_dtypes
import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx.core import interop

ALL_NUMPY = [np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32,
             np.int64, np.float16, np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(scope="module")
def mlx():
    return pytest.importorskip("mlx.core")


class Producer:
    """A DLPack producer wrapping another object's __dlpack__ (to test our importer on capsules
    rather than on the numpy fast path)."""

    def __init__(self, x, legacy=False):
        self.x = x
        self.legacy = legacy
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if self.legacy:
            if "max_version" in kwargs:
                raise TypeError("legacy producer")
            return self.x.__dlpack__()
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def _values(shape=(3, 4)):
    return (np.random.default_rng(0).standard_normal(shape) * 10).astype(np.float32)


def test_dlpack_device_of_cpu_arrays(mlx):
    a = mx.array([1.0, 2.0])
    assert a.__dlpack_device__() == (1, 0) == mlx.array([1.0]).__dlpack_device__()


@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 1)])
def test_numpy_reads_our_memory_without_a_copy(max_version):
    a = mx.array(_values())
    mine = a._numpy()
    n = np.from_dlpack(a) if max_version is None else np.from_dlpack(
        Producer(a))
    assert n.ctypes.data == mine.ctypes.data  # the very pointer the array holds
    assert n.shape == a.shape and n.dtype == np.float32
    np.testing.assert_array_equal(n, mine)
    cap = a.__dlpack__(max_version=max_version)
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(cap) == (b"dltensor" if max_version is None else b"dltensor_versioned")


def test_strided_views_export_their_strides():
    src = np.arange(24, dtype=np.int32).reshape(4, 6)
    n = np.from_dlpack(mx.array(src))
    np.testing.assert_array_equal(n, src)
    # an array whose data is a non-contiguous view (as views made by ops are)
    from pycudamlx.core.array import from_data

    view = from_data(src.T[::2], mx.int32)
    n = np.from_dlpack(view)
    assert n.ctypes.data == view._data.ctypes.data
    np.testing.assert_array_equal(n, src.T[::2])


@pytest.mark.parametrize("name", ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
                                  "int32", "int64", "float16", "bfloat16", "float32", "float64",
                                  "complex64"])
def test_dlpack_round_trip_every_dtype(name):
    dtype = getattr(mx, name)
    a = mx.array(_values((2, 3)), dtype)
    b = mx.from_dlpack(Producer(a))  # through a capsule, not the mx.array shortcut
    if name == "float64":  # MLX reads every DLPack float64 as float32, its own arrays too
        assert b.dtype == mx.float32 and mx.from_dlpack(a).dtype == mx.float32
        b = b.astype(mx.float64)
        a = a.astype(mx.float32).astype(mx.float64)
    assert b.dtype == dtype and b.shape == a.shape
    assert bytes(b) == bytes(a)
    if name != "bfloat16":
        n = np.from_dlpack(a)
        assert n.dtype == a._numpy().dtype and bytes(np.ascontiguousarray(n)) == bytes(a)


@pytest.mark.parametrize("np_dtype", ALL_NUMPY)
def test_from_dlpack_numpy_matches_mlx(mlx, np_dtype):
    src = _values((3, 5)).astype(np_dtype)
    for view in (src, src.T, src[::2, 1:]):
        ours = mx.from_dlpack(view)
        theirs = mlx.from_dlpack(np.ascontiguousarray(view) if view is not src else view)
        assert repr(ours.dtype) == repr(theirs.dtype)
        assert ours.tolist() == theirs.tolist()
        ours = mx.from_dlpack(Producer(view))
        assert repr(ours.dtype) == repr(theirs.dtype) and ours.tolist() == theirs.tolist()


def test_from_dlpack_copies_host_memory(mlx):
    src = np.arange(4, dtype=np.float32)
    a = mx.from_dlpack(src)
    src[0] = 100
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]  # MLX copies host memory too
    for m in (mx, mlx):
        with pytest.raises(ValueError, match="Cannot import a CPU array without a copy"):
            m.from_dlpack(np.arange(3.0), copy=False)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.from_dlpack([1, 2])
    assert mx.from_dlpack(src, copy=True).tolist() == [100.0, 1.0, 2.0, 3.0]


def test_legacy_producers_are_supported():
    p = Producer(np.arange(5, dtype=np.int16), legacy=True)
    a = mx.from_dlpack(p)
    assert a.dtype == mx.int16 and a.tolist() == [0, 1, 2, 3, 4]
    assert "max_version" in p.calls[0]  # the versioned protocol was asked for first


def test_producers_get_stream_none_for_host_memory():
    p = Producer(np.arange(3, dtype=np.float32))
    mx.from_dlpack(p)
    assert p.calls[0]["stream"] is None


def test_mx_array_of_dlpack_objects():
    class OnlyDLPack:
        def __init__(self, x):
            self._x = x

        def __dlpack__(self, **kw):
            return self._x.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self._x.__dlpack_device__()

    a = mx.array(OnlyDLPack(np.array([[1, 2], [3, 4]], np.uint8)))
    assert a.dtype == mx.uint8 and a.tolist() == [[1, 2], [3, 4]]
    b = mx.array(OnlyDLPack(np.array([1.5, 2.5])), mx.float16)
    assert b.dtype == mx.float16 and b.tolist() == [1.5, 2.5]


def test_capsules_release_their_arrays():
    gc.collect()
    start = len(interop._exports)
    a = mx.array(_values())
    cap = a.__dlpack__()  # never consumed: the capsule destructor releases it
    cap2 = a.__dlpack__(max_version=(1, 0))
    assert len(interop._exports) == start + 2
    del cap, cap2
    gc.collect()
    assert len(interop._exports) == start
    n = np.from_dlpack(a)  # consumed: numpy calls our deleter when it is done
    assert len(interop._exports) == start + 1
    del n
    gc.collect()
    assert len(interop._exports) == start


def test_imported_capsule_cannot_be_imported_twice():
    cap = np.arange(3.0).__dlpack__()

    class Once:
        def __dlpack__(self, **kw):
            return cap

        def __dlpack_device__(self):
            return (1, 0)

    mx.from_dlpack(Once())
    with pytest.raises(ValueError, match="already consumed"):
        mx.from_dlpack(Once())


def test_dlpack_export_errors():
    a = mx.array([1.0, 2.0])
    with pytest.raises(BufferError, match="host memory"):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="Unsupported DLPack device"):
        a.__dlpack__(dl_device=(7, 0))
    cap = a.__dlpack__(dl_device=(1, 0), copy=True, max_version=(1, 0))
    n = np.from_dlpack(Producer_from_capsule(cap))
    assert n.ctypes.data != a._numpy().ctypes.data and n.tolist() == [1.0, 2.0]


class Producer_from_capsule:  # noqa: N801 - a tiny adapter
    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def test_cuda_array_interface_is_absent_for_host_arrays():
    a = mx.array([1.0])
    assert not hasattr(a, "__cuda_array_interface__")


def test_numpy_copy_semantics():
    a = mx.array(_values())
    assert np.asarray(a).ctypes.data == a._numpy().ctypes.data
    assert np.array(a, copy=None).ctypes.data == a._numpy().ctypes.data
    assert np.array(a).ctypes.data != a._numpy().ctypes.data
    with pytest.raises(ValueError):
        np.array(a, dtype=np.int32, copy=False)
    b = mx.array([1, 2], mx.bfloat16)
    assert np.asarray(b).dtype == ml_dtypes.bfloat16


def test_torch_cpu_interop():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = mx.from_dlpack(t)
    assert a.tolist() == t.tolist()
    bf = mx.array(torch.tensor([1.5, 2.0], dtype=torch.bfloat16))
    assert bf.dtype == mx.bfloat16 and bf.tolist() == [1.5, 2.0]
    a = mx.array(_values())
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a._numpy().ctypes.data


def test_bfloat16_refuses_the_buffer_protocol_so_numpy_reads_values():
    """PEP 3118 has no bfloat16: exporting raw uint16 bits would make np.array(x) (which tries
    the buffer protocol first on Python 3.12+) return bit patterns as numbers."""
    import ml_dtypes

    from pycudamlx.core import interop

    x = mx.array([1.5, -2.25, 3.0], dtype=mx.bfloat16)
    with pytest.raises(BufferError, match="bfloat16"):
        interop.buffer_view(x)
    got = np.array(x)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [1.5, -2.25, 3.0])


def test_numpy_view_without_copy_keeps_the_array_alive(mlx):
    """np.array(a, copy=False), as in MLX: a writeable view that does not own its memory, whose
    base keeps the mx array alive; writes show in the array; broadcasts keep their 0 strides."""
    import weakref

    for m in (mx, mlx):
        a = m.ones((2, 2))
        v = np.array(a, copy=False)
        assert not v.flags.owndata and v.flags.writeable
        v[0, 1] = 5.0
        assert a.tolist() == [[1.0, 5.0], [1.0, 1.0]]
        b = np.array(m.broadcast_to(m.ones((2, 2)), (5, 2, 2)), copy=False)
        assert b.strides == (0, 8, 4) and np.array_equal(b, np.ones((5, 2, 2), np.float32))
        c = m.arange(3)
        ref = weakref.ref(c)
        view = np.array(c, copy=False)
        del c
        gc.collect()
        assert ref() is not None and view.tolist() == [0, 1, 2]
        del view
        gc.collect()
        assert ref() is None
    h = np.array(mx.array([1.5, -2.0], mx.bfloat16), copy=False)
    assert h.dtype == ml_dtypes.bfloat16 and h.tolist() == [1.5, -2.0]


def test_numpy_refusing_bfloat16_is_its_runtime_error(mlx):
    """numpy has no bfloat16: from_dlpack raises its RuntimeError, as with MLX (a capsule
    destructor written in Python would turn it into a SystemError)."""
    for lib in (mx, mlx):
        with pytest.raises(RuntimeError, match="Unsupported dtype in DLTensor"):
            np.from_dlpack(lib.array([1.0, 2.0], lib.bfloat16))
    from pycudamlx.core import interop

    before = len(interop._exports)
    for _ in range(3):
        np.from_dlpack(mx.array([1.0, 2.0]))  # other dtypes still release their exports
        mx.array([3.0]).__dlpack__()          # also when nobody consumes the capsule
    assert len(interop._exports) == before
