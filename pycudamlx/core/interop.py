"""Zero-copy exchange with numpy, torch, CuPy, JAX, numba: DLPack and ``__cuda_array_interface__``.

Export (``array.__dlpack__``, ``array.__dlpack_device__``, ``array.__cuda_array_interface__``):
an evaluated array hands out the pointer it holds. A GPU array (managed or device memory) is a
CUDA array (kDLCUDA = 2 with its device index; torch, CuPy and JAX accept kDLCUDA for managed
pointers); a CPU array is kDLCPU pointing at its numpy data. Asked for the CPU
(``dl_device=(1, 0)``), a managed GPU array is exported in place once its writers finished (managed
memory is host-accessible); device memory is copied unless ``copy=False``.

Import (``mx.from_dlpack``, ``mx.array``/``mx.asarray`` of a DLPack or CAI producer): CUDA memory
is wrapped without a copy (a non-owning buffer keeps the producer's tensor alive and calls its
DLPack deleter when our last view goes); host memory is copied, as MLX copies it.

Stream semantics: a consumer's ``stream`` argument to our ``__dlpack__`` makes that stream wait
(on the GPU, through an event) for our last write; ``-1`` asks for no synchronisation; ``None``
means the legacy default stream. Our ``__cuda_array_interface__`` reports the stream of a write
that may still be running ("stream" of CAI v3: the consumer synchronises on it), None otherwise.
When we import, we pass our stream to the producer's ``__dlpack__`` so it orders its work before
ours; a CAI producer's "stream" is waited on through an event.

DLPack structures and capsules are built with ctypes (``PyCapsule_New`` with a destructor that
releases the export when no consumer took it).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

import numpy as np

from .. import dtypes as dt

__all__ = ["from_dlpack", "asarray"]

# ------------------------------------------------------------------------------------------------
# DLPack ABI (dlpack.h v1.x)

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13

_FLAG_READ_ONLY = 1
_FLAG_IS_COPIED = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


# DLDataType code, bits for each dtype (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
# kDLComplex 5, kDLBool 6).
_DL_OF_DTYPE: dict[dt.Dtype, tuple[int, int]] = {
    dt.bool_: (6, 8), dt.uint8: (1, 8), dt.uint16: (1, 16), dt.uint32: (1, 32),
    dt.uint64: (1, 64), dt.int8: (0, 8), dt.int16: (0, 16), dt.int32: (0, 32), dt.int64: (0, 64),
    dt.float16: (2, 16), dt.bfloat16: (4, 16), dt.float32: (2, 32), dt.float64: (2, 64),
    dt.complex64: (5, 64),
}
_DTYPE_OF_DL: dict[tuple[int, int], dt.Dtype] = {v: k for k, v in _DL_OF_DTYPE.items()}
_DL_BFLOAT16 = _DL_OF_DTYPE[dt.bfloat16]
# numpy dtypes of host views of imported data (complex128 has no Dtype: converted on import);
# bfloat16's is read when such data arrives (dt.bfloat16.np_dtype imports ml_dtypes).
_NUMPY_OF_DL: dict[tuple[int, int], np.dtype] = {
    k: v.np_dtype for k, v in _DTYPE_OF_DL.items() if v is not dt.bfloat16}
_NUMPY_OF_DL[(5, 128)] = np.dtype(np.complex128)
_NUMPY_OF_DL[(1, 1)] = np.dtype(np.bool_)  # some producers spell bool as 1-bit unsigned

# Capsule names: module-level bytes, alive as long as the interpreter (capsules keep pointers).
_NAME = b"dltensor"
_NAME_USED = b"used_dltensor"
_NAME_V = b"dltensor_versioned"
_NAME_V_USED = b"used_dltensor_versioned"

_api = ctypes.pythonapi
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                   ctypes.c_void_p)(("PyCapsule_New", _api))
_PyCapsule_GetName = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", _api))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_PyCapsule_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
_PyCapsule_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
# In the capsule destructor the capsule is being destroyed: take it as a raw pointer (a
# py_object argument would incref a dying object).
_PyCapsule_IsValid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_PyCapsule_GetPointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

# ------------------------------------------------------------------------------------------------
# Export


#: Live exports: address of the managed tensor -> what it keeps alive (struct, shape/strides
#: storage, the data's owner). The DLPack deleter (or the capsule destructor) removes the entry.
_exports: dict[int, tuple[Any, ...]] = {}
_exports_lock = threading.Lock()


def _release_export(addr: int) -> None:
    with _exports_lock:
        _exports.pop(addr, None)


@_Deleter
def _dl_deleter(addr: int | None) -> None:  # called by the consumer when it is done
    if addr:
        _release_export(addr)


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CapsuleDestructor
def _capsule_destructor(capsule: int | None) -> None:
    # A capsule nobody consumed (still named "dltensor"): release its export. A consumed one was
    # renamed "used_dltensor" and its consumer calls the deleter itself.
    if not capsule:
        return
    for name in (_NAME, _NAME_V):
        if _PyCapsule_IsValid_raw(capsule, name):
            addr = _PyCapsule_GetPointer_raw(capsule, name)
            if addr:
                _release_export(addr)
            return


_DELETER_PTR = ctypes.cast(_dl_deleter, ctypes.c_void_p).value
_DESTRUCTOR_PTR = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value


def _make_capsule(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
                  dtype: dt.Dtype, device: tuple[int, int], owner: Any, versioned: bool,
                  read_only: bool = False, copied: bool = False) -> Any:
    """A DLPack capsule over ``ptr`` (strides in elements) that keeps ``owner`` alive."""
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides)
    code, bits = _DL_OF_DTYPE[dtype]
    if versioned:
        mt = DLManagedTensorVersioned()
        mt.version.major, mt.version.minor = 1, 0
        mt.flags = (_FLAG_READ_ONLY if read_only else 0) | (_FLAG_IS_COPIED if copied else 0)
        name = _NAME_V
    else:
        mt = DLManagedTensor()
        name = _NAME
    t = mt.dl_tensor
    t.data = ptr or None
    t.device.device_type, t.device.device_id = device
    t.ndim = ndim
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    mt.manager_ctx = None
    mt.deleter = _DELETER_PTR
    addr = ctypes.addressof(mt)
    with _exports_lock:
        _exports[addr] = (mt, shape_arr, strides_arr, owner)
    # A bfloat16 capsule gets no destructor: numpy refuses bfloat16, and drops the capsule with
    # its RuntimeError ("Unsupported dtype in DLTensor.") set; a destructor written in Python
    # would then turn that error into a SystemError. Consumers that take bfloat16 (torch,
    # JAX) call the deleter as usual; only a bfloat16 capsule nobody consumes keeps its export.
    destructor = None if dtype is dt.bfloat16 else _DESTRUCTOR_PTR
    try:
        return _PyCapsule_New(addr, name, destructor)
    except BaseException:
        _release_export(addr)
        raise


def _evaluated_data(a: Any) -> Any:
    if a._data is None:
        from ..graph.evaluate import evaluate

        evaluate((a,))
    return a._data


def _is_gpu(data: Any) -> bool:
    return not isinstance(data, np.ndarray)


def dlpack_device(a: Any) -> tuple[int, int]:
    """``__dlpack_device__``: (kDLCUDA, device) for GPU data, (kDLCPU, 0) for host data."""
    data = _evaluated_data(a)
    if _is_gpu(data):
        return (kDLCUDA, data.buffer.device.index)
    return (kDLCPU, 0)


def _pending_writer_event(buffer: Any) -> Any:
    """An event marking our last write to ``buffer`` (None: nothing may still be running)."""
    writer = buffer.last_write
    if writer is None:
        return None
    if hasattr(writer, "record"):
        return writer.record()
    return writer


def _order_on_consumer_stream(buffer: Any, stream: Any) -> None:
    """Make the consumer's CUDA stream (an int handle per the DLPack spec) wait for our writes."""
    if stream == -1:
        return
    event = _pending_writer_event(buffer)
    if event is None:
        return
    from ..backend.cuda import driver

    cu = driver.init()
    buffer.device.activate()
    handle = 1 if stream is None else int(stream)  # None: the legacy default stream
    driver.call(cu.cuStreamWaitEvent, cu.CUstream(handle), event.handle, 0)


def _host_export(host: np.ndarray, dtype: dt.Dtype, versioned: bool, copied: bool) -> Any:
    itemsize = host.itemsize
    if host.size and any(s % itemsize for s in host.strides):
        host = np.ascontiguousarray(host)
        copied = True
    strides = tuple(s // itemsize for s in host.strides)
    ptr = host.ctypes.data if host.size else 0
    return _make_capsule(ptr, host.shape, strides, dtype, (kDLCPU, 0), host, versioned,
                         read_only=not host.flags.writeable, copied=copied)


def export_dlpack(a: Any, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                  copy: bool | None = None) -> Any:
    """``array.__dlpack__``: a capsule over the array's own memory (see the module docstring)."""
    data = _evaluated_data(a)
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    gpu = _is_gpu(data)
    here = (kDLCUDA, data.buffer.device.index) if gpu else (kDLCPU, 0)
    target = here if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
    if target[0] == kDLCPU:  # (a stream given for host memory is ignored, as MLX ignores it)
        if gpu:
            from ..backend.cuda import memory

            if data.buffer.kind != memory.MANAGED and copy is False:
                raise BufferError("This array is in GPU device memory: exporting it to the CPU "
                                  "needs a copy (copy=False was given).")
            data.buffer.exported = True
            host = data.to_numpy()  # managed: in place, after the writers finished
            copied = data.buffer.kind != memory.MANAGED
        else:
            host = data
            copied = False
        if copy:
            host = np.array(host, copy=True)
            copied = True
        return _host_export(host, a._dtype, versioned, copied)
    if target[0] in (kDLCUDA, kDLCUDAManaged):
        if not gpu:
            raise BufferError("This array is in host memory (it was computed on the CPU): it "
                              "cannot be exported as a CUDA array. Compute it on a GPU stream "
                              "or ask for dl_device=(1, 0).")
        if target[1] != here[1]:
            raise BufferError(f"This array is on CUDA device {here[1]}, not {target[1]}; "
                              "cross-device export is not supported.")
        if copy:
            data = _gpu_copy(data)
        buf = data.buffer
        buf.exported = True
        _order_on_consumer_stream(buf, stream)
        ptr = buf.ptr + data.offset * data.dtype.size if data.size else 0
        return _make_capsule(ptr, data.shape, data.strides, data.dtype, here, data, versioned,
                             copied=bool(copy))
    raise BufferError(f"Unsupported DLPack device {target}: this array can be exported to "
                      f"{here} or to the CPU (1, 0).")


def _gpu_copy(data: Any) -> Any:
    """A contiguous copy of GPU data on the library's default stream of its device."""
    from ..backend.cuda import array as gpu_array
    from ..backend.cuda import elementwise, stream as cuda_stream

    s = cuda_stream.default_stream(data.buffer.device)
    writer = _pending_writer_event(data.buffer)
    if writer is not None:
        s.wait(writer)
    out = gpu_array.empty(data.shape, data.dtype, s)
    elementwise.copy(data, out, s)
    s.synchronize()
    return out


def cuda_array_interface(a: Any) -> dict[str, Any]:
    """``__cuda_array_interface__`` (version 3) of an array whose data is in GPU memory."""
    data = _evaluated_data(a)
    if not _is_gpu(data):
        raise AttributeError(
            "__cuda_array_interface__: this array is in host memory (it was computed on the "
            "CPU); compute it on a GPU stream, or use __array__ / DLPack")
    if data.dtype is dt.bfloat16:
        raise TypeError("bfloat16 has no __cuda_array_interface__ type string; exchange bfloat16 "
                        "arrays through DLPack (__dlpack__)")
    buf = data.buffer
    buf.exported = True
    itemsize = data.dtype.size
    contiguous = data.is_contiguous()
    writer = buf.last_write
    stream = None
    if writer is not None:
        if hasattr(writer, "record"):
            stream = writer.address  # the consumer synchronises on our writer stream
        else:
            writer.synchronize()
    typestr = data.dtype.np_dtype.str
    return {
        "shape": tuple(data.shape),
        "typestr": typestr,
        "descr": [("", typestr)],
        "data": (buf.ptr + data.offset * itemsize if data.size else 0, False),
        "strides": None if contiguous else tuple(s * itemsize for s in data.strides),
        "version": 3,
        "stream": stream,
    }


# ------------------------------------------------------------------------------------------------
# Import


class _DLPackOwner:
    """Holds an imported DLPack tensor: calls the producer's deleter when our last view goes."""

    __slots__ = ("addr", "deleter", "capsule", "__weakref__")

    def __init__(self, addr: int, deleter: int | None, capsule: Any) -> None:
        self.addr = addr
        self.deleter = deleter
        self.capsule = capsule  # keeps the (renamed) capsule object alive too

    def __del__(self) -> None:
        deleter, self.deleter = self.deleter, None
        if deleter and not sys.is_finalizing():
            try:
                _Deleter(deleter)(self.addr)
            except Exception:  # never raise from a destructor
                pass


class _HostWindow:
    """numpy's view of imported host memory: ``__array_interface__`` plus the owner."""

    __slots__ = ("owner", "__array_interface__")

    def __init__(self, owner: Any, interface: dict[str, Any]) -> None:
        self.owner = owner
        self.__array_interface__ = interface


def _host_view(ptr: int, shape: tuple[int, ...], byte_strides: tuple[int, ...] | None,
               np_dtype: np.dtype, read_only: bool, owner: Any) -> np.ndarray:
    if any(e == 0 for e in shape):
        return np.empty(shape, np_dtype)
    bf16 = np_dtype.kind == "V"  # numpy's bfloat16 (the only such dtype in _NUMPY_OF_DL)
    typestr = "<u2" if bf16 else np_dtype.str
    window = _HostWindow(owner, {"data": (ptr, read_only), "shape": shape,
                                 "strides": byte_strides, "typestr": typestr, "version": 3})
    host = np.asarray(window)
    return host.view(np_dtype) if bf16 else host


def _span(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    lo = hi = 0
    for e, s in zip(shape, strides):
        if e == 0:
            return 0, -1
        if s > 0:
            hi += s * (e - 1)
        else:
            lo += s * (e - 1)
    return lo, hi


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= shape[i]
    return tuple(out)


def _is_managed_pointer(ptr: int) -> bool:
    from ..backend.cuda import driver

    cu = driver.init()
    try:
        value = driver.call(cu.cuPointerGetAttribute,
                            cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr)
        return bool(value)
    except Exception:
        return False


def _wrap_gpu(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: dt.Dtype,
              device_id: int, managed: bool | None, owner: Any) -> Any:
    """A GpuArray over another library's CUDA memory (no copy; ``owner`` keeps it alive)."""
    from ..backend.cuda import array as gpu_array
    from ..backend.cuda import driver, memory

    device = driver.get_device(device_id)
    itemsize = dtype.size
    lo, hi = _span(shape, strides)
    nbytes = (hi - lo + 1) * itemsize
    if managed is None:
        managed = _is_managed_pointer(ptr) if ptr else False
    kind = memory.MANAGED if managed else memory.DEVICE
    buf = memory.ForeignBuffer(ptr + lo * itemsize if nbytes > 0 else ptr, max(nbytes, 0), kind,
                               device, owner)
    return gpu_array.GpuArray(buf, -lo, tuple(shape), tuple(strides), dtype)


def _consumer_stream(device_id: int) -> Any:
    """The CUDA stream of ours that will read data imported from CUDA device ``device_id``."""
    from . import device as dev

    s = dev.resolve_stream(None)
    if s.device.type is not dev.gpu or s.device.index != device_id:
        s = dev.default_stream(dev.Device(dev.gpu, device_id))
    return s.cuda_stream()


def _call_dlpack(x: Any, stream: Any, copy: bool | None) -> Any:
    """The producer's capsule, trying the newest calling convention first."""
    kwargs: dict[str, Any] = {"stream": stream, "max_version": (1, 0)}
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return x.__dlpack__(**kwargs)
    except TypeError:
        pass
    try:
        return x.__dlpack__(stream=stream)
    except TypeError:
        return x.__dlpack__()


def _open_capsule(capsule: Any) -> tuple[DLTensor, bool, Any]:
    """(tensor, read_only, owner) of a DLPack capsule, which is marked consumed."""
    try:
        name = _PyCapsule_GetName(capsule)
    except (ValueError, TypeError):
        raise TypeError("__dlpack__ did not return a DLPack capsule") from None
    if name == _NAME_V:
        addr = _PyCapsule_GetPointer(capsule, _NAME_V)
        mt = DLManagedTensorVersioned.from_address(addr)
        if mt.version.major > 1:
            raise BufferError(f"Unsupported DLPack version {mt.version.major}."
                              f"{mt.version.minor}")
        read_only = bool(mt.flags & _FLAG_READ_ONLY)
        _PyCapsule_SetName(capsule, _NAME_V_USED)
    elif name == _NAME:
        addr = _PyCapsule_GetPointer(capsule, _NAME)
        mt = DLManagedTensor.from_address(addr)
        read_only = False
        _PyCapsule_SetName(capsule, _NAME_USED)
    else:
        raise ValueError("This DLPack capsule was already consumed (each __dlpack__ result can "
                         "be imported once).")
    owner = _DLPackOwner(addr, mt.deleter, capsule)
    return mt.dl_tensor, read_only, owner


def import_dlpack(x: Any, copy: bool | None = None) -> tuple[Any, dt.Dtype]:
    """Read a DLPack producer: (numpy view or GpuArray, the dtype MLX gives it).

    Host memory comes back as a numpy view (the caller copies it); CUDA memory as a GpuArray
    over the producer's pointer, whose own dtype may differ from the returned one (float64
    is float32 in MLX: the caller converts).
    """
    try:
        device = tuple(x.__dlpack_device__())
    except AttributeError:
        raise TypeError(f"from_dlpack(): {dt._type_name(x)} does not implement __dlpack__ and "
                        "__dlpack_device__") from None
    device_type, device_id = int(device[0]), int(device[1])
    gpu = device_type in (kDLCUDA, kDLCUDAManaged)
    if gpu:
        stream = _consumer_stream(device_id).address
    elif device_type in (kDLCPU, kDLCUDAHost):
        stream = None
    else:
        raise ValueError(f"[from_dlpack] Unsupported DLPack device type {device_type}: "
                         "only CPU and CUDA arrays can be imported.")
    capsule = _call_dlpack(x, stream, copy if copy else None)
    tensor, read_only, owner = _open_capsule(capsule)
    key = (tensor.dtype.code, tensor.dtype.bits)
    if tensor.dtype.lanes != 1 or (key not in _NUMPY_OF_DL and key != _DL_BFLOAT16):
        raise ValueError(f"[from_dlpack] Unsupported DLPack data type (code {tensor.dtype.code}, "
                         f"{tensor.dtype.bits} bits, {tensor.dtype.lanes} lanes).")
    ndim = tensor.ndim
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    if tensor.strides:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim))
    else:
        strides = _contiguous_strides(shape)
    ptr = (tensor.data or 0) + tensor.byte_offset
    np_dtype = dt.bfloat16.np_dtype if key == _DL_BFLOAT16 else _NUMPY_OF_DL[key]
    natural = dt.dtype_from_numpy(np_dtype)
    if gpu:
        exact = _DTYPE_OF_DL.get(key)
        if exact is None:
            raise ValueError("[from_dlpack] complex128 CUDA arrays are not supported: convert "
                             "them to complex64 first.")
        data = _wrap_gpu(ptr, shape, strides, exact, tensor.device.device_id,
                         True if tensor.device.device_type == kDLCUDAManaged else None, owner)
        return data, natural
    itemsize = np_dtype.itemsize
    host = _host_view(ptr, shape, tuple(s * itemsize for s in strides), np_dtype, read_only,
                      owner)
    return host, natural


def import_cuda_array_interface(x: Any) -> tuple[Any, dt.Dtype]:
    """Read an object's ``__cuda_array_interface__`` (v2/v3): a GpuArray over its pointer."""
    from ..backend.cuda import driver

    cai = x.__cuda_array_interface__
    shape = tuple(int(e) for e in cai["shape"])
    np_dtype = np.dtype(cai["typestr"])
    natural = dt.dtype_from_numpy(np_dtype)
    try:
        exact = dt.exact_dtype_from_numpy(np_dtype)
    except TypeError:
        raise ValueError(f"[array] __cuda_array_interface__ type {cai['typestr']!r} is not "
                         "supported.") from None
    itemsize = np_dtype.itemsize
    byte_strides = cai.get("strides")
    if byte_strides is None:
        strides = _contiguous_strides(shape)
    else:
        if any(int(s) % itemsize for s in byte_strides):
            raise ValueError("[array] __cuda_array_interface__ strides are not a multiple of the "
                             "item size.")
        strides = tuple(int(s) // itemsize for s in byte_strides)
    ptr = int(cai["data"][0] or 0)
    device_id = 0
    if ptr:
        cu = driver.init()
        try:
            device_id = int(driver.call(
                cu.cuPointerGetAttribute,
                cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr))
        except Exception:
            device_id = 0
    their_stream = cai.get("stream")
    if their_stream is not None and ptr:
        ours = _consumer_stream(device_id)
        cu = driver.init()
        from ..backend.cuda.stream import CudaEvent

        event = CudaEvent(ours.device)
        driver.call(cu.cuEventRecord, event.handle, cu.CUstream(int(their_stream)))
        ours.wait(event)
    return _wrap_gpu(ptr, shape, strides, exact, device_id, None, x), natural


# ------------------------------------------------------------------------------------------------
# numpy conversion


def to_numpy(a: Any, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``array.__array__`` with numpy 2's ``copy`` semantics.

    copy=None: a view of the array's memory where it is host-accessible (CPU data, managed GPU
    memory once the GPU's writes finished), else a copy; copy=True: always a new array;
    copy=False: a view or ValueError. bfloat16 arrays come back as ml_dtypes.bfloat16 arrays.
    """
    data = _evaluated_data(a)
    shared = True
    if isinstance(data, np.ndarray):
        host = data
    else:
        from ..backend.cuda import memory

        shared = data.buffer.kind == memory.MANAGED
        if not shared and copy is False:
            raise ValueError("Unable to avoid copy while creating a numpy array as requested: "
                             "this array is in GPU device memory.")
        if copy or (copy is None and dtype is not None
                    and np.dtype(dtype) != data.dtype.np_dtype):
            host = data.to_numpy(copy=True)  # our own array (a fast device-to-host copy)
            shared = False
        else:
            if shared:
                data.buffer.exported = True  # a view leaves: the host may write it
            host = data.to_numpy()
    if dtype is not None:
        np_dtype = np.dtype(dtype)
        if np_dtype != host.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating a numpy array as "
                                 f"requested: {a._dtype.name} -> {np_dtype} needs a copy.")
            return host.astype(np_dtype)
    if copy and shared:
        return np.array(host, copy=True)
    if copy is False:
        # As MLX: an explicit no-copy request gets a view that does not own its memory and keeps
        # the mx array alive (its base), not our internal buffer itself.
        view = np.asarray(_ViewOwner(host, a))
        return view if view.dtype == host.dtype else view.view(host.dtype)  # bfloat16: |V2
    return host


class _ViewOwner:
    """The base of ``np.array(a, copy=False)``: exposes the host memory, holds the mx array."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, host: np.ndarray, owner: Any) -> None:
        self.__array_interface__ = host.__array_interface__
        self._owner = owner


def buffer_view(a: Any, flags: int = 0) -> memoryview:
    """``array.__buffer__`` (PEP 688): a memoryview of the array's host data.

    numpy consults the buffer protocol before ``__array__`` (Python 3.12+), so this decides how
    ``np.array(x)`` and ``np.asarray(x)`` read GPU data. An array of 2 MiB or more whose data
    is on the GPU (device memory, or managed pages on the GPU) refuses with BufferError: numpy
    then calls ``__array__`` with its ``copy`` request, so ``np.array(x)`` gets one fast
    device-to-host copy (the pages stay on the GPU) instead of a view that numpy copies again,
    ``np.asarray(x)`` a view after one prefetch (managed) or a copy (device memory), and
    ``np.array(x, copy=False)`` of device memory the ValueError numpy requires. Smaller arrays,
    and data already on the host, give a memoryview as before (of a copy, for device memory);
    ``memoryview(np.asarray(x))`` works for every array.
    """
    data = _evaluated_data(a)
    if _is_gpu(data) and data.size * data.dtype.size >= _LARGE:
        from ..backend.cuda import memory

        buf = data.buffer
        if buf.kind != memory.MANAGED:
            raise BufferError("This array is in GPU device memory: use np.asarray(x) or "
                              "np.array(x) (copies), or memoryview(np.asarray(x)).")
        if (memory.auto_prefetch_enabled() and buf.location != memory.HOST
                and type(buf) is memory.Buffer):
            raise BufferError("This array's pages are on the GPU: np.asarray(x) gives a host view "
                              "(after one prefetch), np.array(x) a copy.")
    if a._dtype is dt.bfloat16:
        # PEP 3118 has no bfloat16: raw uint16 bits would reach np.array(x) as wrong numbers.
        # Refusing sends numpy to __array__ (ml_dtypes.bfloat16); MLX cannot export it at all.
        raise BufferError("'bfloat16' is not a valid PEP 3118 buffer format string: use "
                          "np.array(x) (ml_dtypes.bfloat16) or x.astype(mx.float32).")
    return memoryview(to_numpy(a))


_LARGE = 2 << 20  # memory.PREFETCH_MIN, without importing the GPU side on CPU-only paths


# ------------------------------------------------------------------------------------------------
# Public functions


def from_dlpack(x: Any, /, *, copy: bool | None = None) -> Any:
    """An array from an object that supports DLPack: CUDA memory is shared (no copy) unless
    ``copy=True``; host memory is copied (MLX cannot import a CPU array without a copy, so
    ``copy=False`` for host memory raises ValueError, as MLX does)."""
    from .array import array, from_data
    from ._base import astype

    if not hasattr(x, "__dlpack__"):
        raise dt._incompatible_arguments(
            "from_dlpack(x: DLPackCompatible, /, *, copy: bool | None = None) -> array", x)
    if isinstance(x, array):
        if x._dtype is dt.float64:  # MLX reads DLPack float64 as float32, its own arrays too
            return astype(x, dt.float32)
        return _lazy_copy(x) if copy else array(x)
    data, natural = import_dlpack(x, copy=copy)
    if isinstance(data, np.ndarray):
        if copy is False:
            raise ValueError("[convert] Cannot import a CPU array without a copy.")
        from ._conversion import numpy_data

        host, dtype = numpy_data(data, None)
        return from_data(host, dtype)
    out = from_data(data, data.dtype)
    if natural is not data.dtype:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return astype(out, natural)
    if copy:
        return _lazy_copy(out)
    return out


def _lazy_copy(a: Any) -> Any:
    """A new buffer holding ``a``'s values (an AsType node to the same dtype copies)."""
    from ..graph.primitives.elementwise import AsType
    from . import device as dev
    from .array import make

    return make(AsType(a._dtype), (a,), a._shape, a._dtype, dev.resolve_stream(None))


def _is_foreign(data: Any) -> bool:
    """Whether GPU data lives in another library's memory (a DLPack/CAI import)."""
    from ..backend.cuda import memory

    return isinstance(getattr(data, "buffer", None), memory.ForeignBuffer)


def asarray(a: Any, dtype: dt.Dtype | None = None, *, copy: bool | None = None) -> Any:
    """Convert the input to an array.

    ``copy=None``: share memory where MLX shares it (another mx array of the same dtype, CUDA
    memory of a DLPack producer), copy otherwise; ``copy=True``: always a new buffer;
    ``copy=False``: never copy, ValueError when a copy would be needed (Python values, host
    memory, a dtype change), as MLX.
    """
    from .array import array

    if dtype is not None:
        dtype = dt.to_dtype(dtype, "asarray")
    if isinstance(a, array):
        if dtype is None or dtype is a._dtype:
            return _lazy_copy(a) if copy else array(a)
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return array(a, dtype)
    if copy is False:
        if isinstance(a, np.ndarray):
            raise ValueError("[convert] Cannot import a CPU array without a copy.")
        if hasattr(a, "__dlpack__"):
            out = from_dlpack(a, copy=False)
            if dtype is not None and dtype is not out._dtype:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return out
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    out = array(a, dtype)
    if copy and out._data is not None and _is_foreign(out._data):
        return _lazy_copy(out)  # a GPU import shares the producer's memory
    return out
