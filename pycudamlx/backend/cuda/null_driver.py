"""A null CUDA driver: the subset of ``cuda.bindings.driver`` that pycudamlx calls, run on the host.

For tests and profiling only (``driver.use_null_driver()`` or ``PYCUDAMLX_NULL_DRIVER=1``). The
whole GPU code path runs against it -- graph evaluation, the memory pool and its guard, kernel
lookup and loading, argument packing, ``cuLaunchKernel`` -- on a machine without a GPU, but no
kernel executes. That makes it (a) a profiler of the host cost of the GPU path (every call here is
a few attribute updates, small next to a real binding call) and (b) a cheap CI tier: ``calls``
counts every driver function called, ``launches`` the kernels, ``synchronizing_calls()`` the calls
that would block the host on a real GPU.

Memory is real host memory (numpy blocks kept by address), for device and managed allocations
alike, so host views of managed memory, copies and memsets move real bytes; what kernels would
have written is whatever the block held (zeros in a fresh block, stale bytes in a reused one).

The calling convention is the bindings': every function returns a tuple ``(CUresult, *outputs)``,
with ``CUresult`` 0 (``int``) on success. Handles (streams, events, contexts, modules) are ints.
"""

from __future__ import annotations

import collections
import ctypes
import enum
import itertools
import logging
import time
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------
# The enums pycudamlx names, with CUDA's values (cuda.bindings 12.x/13.x agree on all of them)


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_INITIALIZED = 3
    CUDA_ERROR_DEINITIALIZED = 4
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209
    CUDA_ERROR_INVALID_PTX = 218
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
    CUDA_ERROR_LAUNCH_FAILED = 719
    CUDA_ERROR_NOT_SUPPORTED = 801
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901
    CUDA_ERROR_ILLEGAL_STATE = 401
    CUDA_ERROR_UNKNOWN = 999


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class CUfunction_attribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4
    CU_FUNC_ATTRIBUTE_PTX_VERSION = 5
    CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class CUevent_flags(enum.IntEnum):
    CU_EVENT_DEFAULT = 0
    CU_EVENT_BLOCKING_SYNC = 1
    CU_EVENT_DISABLE_TIMING = 2


class CUstream_flags(enum.IntEnum):
    CU_STREAM_DEFAULT = 0
    CU_STREAM_NON_BLOCKING = 1


class CUstreamCaptureMode(enum.IntEnum):
    CU_STREAM_CAPTURE_MODE_GLOBAL = 0
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
    CU_STREAM_CAPTURE_MODE_RELAXED = 2


class CUmemAttach_flags(enum.IntEnum):
    CU_MEM_ATTACH_GLOBAL = 1
    CU_MEM_ATTACH_HOST = 2
    CU_MEM_ATTACH_SINGLE = 4


class CUmemLocationType(enum.IntEnum):
    CU_MEM_LOCATION_TYPE_INVALID = 0
    CU_MEM_LOCATION_TYPE_DEVICE = 1
    CU_MEM_LOCATION_TYPE_HOST = 2


class CUmem_advise(enum.IntEnum):
    CU_MEM_ADVISE_SET_READ_MOSTLY = 1
    CU_MEM_ADVISE_UNSET_READ_MOSTLY = 2
    CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3
    CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4
    CU_MEM_ADVISE_SET_ACCESSED_BY = 5
    CU_MEM_ADVISE_UNSET_ACCESSED_BY = 6


class CUpointer_attribute(enum.IntEnum):
    CU_POINTER_ATTRIBUTE_CONTEXT = 1
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3
    CU_POINTER_ATTRIBUTE_IS_MANAGED = 8
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


class CUmemLocation:
    """The bindings' struct: a location type and an id (a device index, 0 for the host)."""

    __slots__ = ("type", "id")

    def __init__(self) -> None:
        self.type = CUmemLocationType.CU_MEM_LOCATION_TYPE_INVALID
        self.id = 0


class CUuuid:
    """The bindings' 16-byte UUID struct (``bytes``)."""

    __slots__ = ("bytes",)

    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


#: Handles are plain ints (the bindings' CUstream(int) wraps a raw handle another library gave).
CUstream = int
CUevent = int
CUdevice = int
CUcontext = int

# --------------------------------------------------------------------------------------------------
# The device

_GiB = 1 << 30

#: What an H200 reports (the attributes pycudamlx reads, and a few more).
H200_ATTRIBUTES: dict[int, int] = {
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: 64,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 2**31 - 1,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 65535,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 65535,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 48 * 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE: 32,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: 0x1B,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: 0,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: 60 * 1024 * 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: 2048,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: 0,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 228 * 1024,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: 1,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: 0,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: 1,
    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 227 * 1024,
}
H200_TOTAL_MEMORY = 143_771_090_944  # what cuDeviceTotalMem reports on an H200 (~134 GiB)
DEVICE_NAME = b"NVIDIA H200 (pycudamlx null driver)"
#: What the driver itself keeps of the device's memory (cuMemGetInfo's free excludes it).
_RESERVED = 512 << 20

#: The calls that block the host on a real GPU (copies here are all asynchronous ones).
SYNCHRONIZING = ("cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize")

_ERROR_TEXT = {
    0: "no error",
    1: "invalid argument",
    2: "out of memory",
    3: "initialization error",
    100: "no CUDA-capable device is detected",
    101: "invalid device ordinal",
    200: "device kernel image is invalid",
    400: "invalid resource handle",
    500: "named symbol not found",
    600: "device not ready",
    700: "an illegal memory access was encountered",
    900: "operation not permitted when stream is capturing",
    901: "operation failed due to a previous error during capture",
}

_SUCCESS = 0
_memmove = ctypes.memmove
_memset = ctypes.memset
_ALIGN = 512          # cuMemAlloc's alignment (kernels test 16-byte alignment of their operands)
_LARGE = 2 << 20      # blocks this large sit on 2 MiB boundaries, as the H200's driver places them


class NullDriver:
    """One H200-like device whose driver calls run on the host and launch nothing.

    ``calls`` counts every driver function by name, ``launches`` counts ``cuLaunchKernel``,
    ``launch_log`` keeps the last launches as ``(kernel name, grid, block)``.
    """

    # The bindings' types, where pycudamlx looks them up (``cu.CUresult``, ...).
    CUresult = CUresult
    CUdevice_attribute = CUdevice_attribute
    CUfunction_attribute = CUfunction_attribute
    CUevent_flags = CUevent_flags
    CUstream_flags = CUstream_flags
    CUstreamCaptureMode = CUstreamCaptureMode
    CUmemAttach_flags = CUmemAttach_flags
    CUmemLocationType = CUmemLocationType
    CUmem_advise = CUmem_advise
    CUpointer_attribute = CUpointer_attribute
    CUmemLocation = CUmemLocation
    CUuuid = CUuuid
    CUstream = CUstream
    CUevent = CUevent
    CUdevice = CUdevice
    CUcontext = CUcontext

    def __init__(self, *, launch_log_size: int = 100_000) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.launches = 0
        self.launch_log: collections.deque[tuple[str, tuple[int, int, int],
                                                 tuple[int, int, int]]] = (
            collections.deque(maxlen=launch_log_size))
        #: address -> (numpy block keeping the memory alive, size, managed)
        self.blocks: dict[int, tuple[np.ndarray, int, bool]] = {}
        #: pinned host buffers (cuMemHostAlloc), by address
        self.pinned: dict[int, np.ndarray] = {}
        self.allocated = 0
        self.total_memory = H200_TOTAL_MEMORY
        self.attributes = dict(H200_ATTRIBUTES)
        self._handles = itertools.count(0x1000)
        self.function_names: dict[int, str] = {}
        self.modules: dict[int, int] = {}            # module handle -> image size
        self._timing_events: dict[int, float] = {}    # timing event -> host time of its record
        self.contexts_current = 0
        #: stream -> the work recorded since cuStreamBeginCapture (None once invalidated)
        self.capturing: dict[int, list | None] = {}
        self.graphs: dict[int, list] = {}        # graph handle -> recorded work
        self.graph_execs: dict[int, list] = {}   # executable graph handle -> recorded work

    # -- bookkeeping helpers (not driver functions) ------------------------------------------------

    def synchronizing_calls(self) -> int:
        """How many calls so far would have blocked the host on a real GPU."""
        calls = self.calls
        return sum(calls[name] for name in SYNCHRONIZING)

    def reset_counters(self) -> None:
        """Zero ``calls``, ``launches`` and the launch log (allocations stay)."""
        self.calls.clear()
        self.launches = 0
        self.launch_log.clear()

    def launched_kernels(self) -> collections.Counter[str]:
        """Kernel names in the launch log, with how often each was launched."""
        return collections.Counter(name for name, _, _ in self.launch_log)

    def _new_handle(self) -> int:
        return next(self._handles) << 4

    def _allocate(self, size: int, managed: bool) -> tuple[int, int]:
        if size <= 0:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, 0)
        if self.allocated + size > self.total_memory - _RESERVED:
            return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, 0)
        align = _LARGE if size >= _LARGE else _ALIGN
        # Fresh blocks read as zeros; np.zeros of a large block is calloc's fresh mapping, whose
        # pages cost no memory until something writes them.
        block = np.zeros(size + align, np.uint8)
        base = block.ctypes.data
        ptr = (base + align - 1) & ~(align - 1)
        self.blocks[ptr] = (block, size, managed)
        self.allocated += size
        return (_SUCCESS, ptr)

    def _free(self, ptr: int) -> tuple[int]:
        entry = self.blocks.pop(int(ptr), None)
        if entry is None:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        self.allocated -= entry[1]
        return (_SUCCESS,)

    def _block_of(self, ptr: int) -> tuple[int, int, bool] | None:
        """(base, size, managed) of the block that contains ``ptr``."""
        entry = self.blocks.get(ptr)
        if entry is not None:
            return ptr, entry[1], entry[2]
        for base, (_, size, managed) in self.blocks.items():
            if base <= ptr < base + size:
                return base, size, managed
        return None

    # -- initialisation, devices, contexts ---------------------------------------------------------

    def cuInit(self, flags: int) -> tuple[int]:
        self.calls["cuInit"] += 1
        return (_SUCCESS,)

    def cuDriverGetVersion(self) -> tuple[int, int]:
        self.calls["cuDriverGetVersion"] += 1
        return (_SUCCESS, 13000)

    def cuDeviceGetCount(self) -> tuple[int, int]:
        self.calls["cuDeviceGetCount"] += 1
        return (_SUCCESS, 1)

    def cuDeviceGet(self, ordinal: int) -> tuple[int, int]:
        self.calls["cuDeviceGet"] += 1
        if ordinal != 0:
            return (CUresult.CUDA_ERROR_INVALID_DEVICE, 0)
        return (_SUCCESS, 0)

    def cuDeviceGetName(self, length: int, dev: int) -> tuple[int, bytes]:
        self.calls["cuDeviceGetName"] += 1
        return (_SUCCESS, DEVICE_NAME[:max(0, length - 1)])

    def cuDeviceTotalMem(self, dev: int) -> tuple[int, int]:
        self.calls["cuDeviceTotalMem"] += 1
        return (_SUCCESS, self.total_memory)

    def cuDeviceGetAttribute(self, attrib: int, dev: int) -> tuple[int, int]:
        self.calls["cuDeviceGetAttribute"] += 1
        value = self.attributes.get(int(attrib))
        if value is None:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, 0)
        return (_SUCCESS, value)

    def cuDeviceGetUuid(self, dev: int) -> tuple[int, CUuuid]:
        self.calls["cuDeviceGetUuid"] += 1
        return (_SUCCESS, CUuuid(b"pycudamlx-null\0\0"))

    def cuDevicePrimaryCtxRetain(self, dev: int) -> tuple[int, int]:
        self.calls["cuDevicePrimaryCtxRetain"] += 1
        return (_SUCCESS, 0xC0)

    def cuCtxSetCurrent(self, ctx: int) -> tuple[int]:
        self.calls["cuCtxSetCurrent"] += 1
        self.contexts_current = ctx
        return (_SUCCESS,)

    def cuCtxSynchronize(self) -> tuple[int]:
        self.calls["cuCtxSynchronize"] += 1
        return (_SUCCESS,)

    def cuGetErrorName(self, error: int) -> tuple[int, bytes]:
        self.calls["cuGetErrorName"] += 1
        try:
            return (_SUCCESS, CUresult(int(error)).name.encode())
        except ValueError:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, b"")

    def cuGetErrorString(self, error: int) -> tuple[int, bytes]:
        self.calls["cuGetErrorString"] += 1
        text = _ERROR_TEXT.get(int(error))
        if text is None:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, b"")
        return (_SUCCESS, text.encode())

    # -- memory ------------------------------------------------------------------------------------

    def cuMemAlloc(self, size: int) -> tuple[int, int]:
        self.calls["cuMemAlloc"] += 1
        return self._allocate(size, False)

    def cuMemAllocManaged(self, size: int, flags: int) -> tuple[int, int]:
        self.calls["cuMemAllocManaged"] += 1
        return self._allocate(size, True)

    def cuMemFree(self, ptr: int) -> tuple[int]:
        self.calls["cuMemFree"] += 1
        return self._free(ptr)

    def cuMemHostAlloc(self, size: int, flags: int) -> tuple[int, int]:
        self.calls["cuMemHostAlloc"] += 1
        if size <= 0:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, 0)
        block = np.empty(size, np.uint8)  # pinned host memory: none of the device's
        ptr = block.ctypes.data
        self.pinned[ptr] = block
        return (_SUCCESS, ptr)

    def cuMemFreeHost(self, ptr: int) -> tuple[int]:
        self.calls["cuMemFreeHost"] += 1
        if self.pinned.pop(int(ptr), None) is None:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        return (_SUCCESS,)

    def cuMemGetInfo(self) -> tuple[int, int, int]:
        self.calls["cuMemGetInfo"] += 1
        total = self.total_memory
        return (_SUCCESS, total - _RESERVED - self.allocated, total)

    def cuMemcpyHtoDAsync(self, dst: int, src: int, nbytes: int, stream: int) -> tuple[int]:
        self.calls["cuMemcpyHtoDAsync"] += 1
        if stream in self.capturing:
            return self._record(stream, lambda: _memmove(dst, src, nbytes))
        _memmove(dst, src, nbytes)
        return (_SUCCESS,)

    def cuMemcpyDtoHAsync(self, dst: int, src: int, nbytes: int, stream: int) -> tuple[int]:
        self.calls["cuMemcpyDtoHAsync"] += 1
        if stream in self.capturing:
            return self._record(stream, lambda: _memmove(dst, src, nbytes))
        _memmove(dst, src, nbytes)
        return (_SUCCESS,)

    def cuMemcpyDtoDAsync(self, dst: int, src: int, nbytes: int, stream: int) -> tuple[int]:
        self.calls["cuMemcpyDtoDAsync"] += 1
        if stream in self.capturing:
            return self._record(stream, lambda: _memmove(dst, src, nbytes))
        _memmove(dst, src, nbytes)
        return (_SUCCESS,)

    def cuMemsetD8Async(self, dst: int, value: int, count: int, stream: int) -> tuple[int]:
        self.calls["cuMemsetD8Async"] += 1
        if stream in self.capturing:
            return self._record(stream, lambda: _memset(dst, value, count))
        _memset(dst, value, count)
        return (_SUCCESS,)

    def cuMemsetD16Async(self, dst: int, value: int, count: int, stream: int) -> tuple[int]:
        self.calls["cuMemsetD16Async"] += 1
        if stream in self.capturing:
            return self._record(stream, lambda: ctypes.memmove(dst, (value & 0xFFFF).to_bytes(2, "little") * count, 2 * count))
        ctypes.memmove(dst, (value & 0xFFFF).to_bytes(2, "little") * count, 2 * count)
        return (_SUCCESS,)

    def cuMemsetD32Async(self, dst: int, value: int, count: int, stream: int) -> tuple[int]:
        self.calls["cuMemsetD32Async"] += 1
        if stream in self.capturing:
            return self._record(stream, lambda: ctypes.memmove(dst, (value & 0xFFFFFFFF).to_bytes(4, "little") * count, 4 * count))
        ctypes.memmove(dst, (value & 0xFFFFFFFF).to_bytes(4, "little") * count, 4 * count)
        return (_SUCCESS,)

    # The 13.x spelling: the CUmemLocation forms without the ``_v2`` suffix.
    def cuMemPrefetchAsync(self, ptr: int, nbytes: int, location: CUmemLocation, flags: int,
                           stream: int) -> tuple[int]:
        self.calls["cuMemPrefetchAsync"] += 1
        if stream in self.capturing:  # not capturable: invalidates the capture
            self.capturing[stream] = None
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        return (_SUCCESS,)

    def cuMemAdvise(self, ptr: int, nbytes: int, advice: int,
                    location: CUmemLocation) -> tuple[int]:
        self.calls["cuMemAdvise"] += 1
        return (_SUCCESS,)

    def cuPointerGetAttribute(self, attribute: int, ptr: int) -> tuple[int, int]:
        self.calls["cuPointerGetAttribute"] += 1
        block = self._block_of(int(ptr))
        if block is None:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, 0)
        attribute = int(attribute)
        if attribute == CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED:
            return (_SUCCESS, int(block[2]))
        if attribute == CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            return (_SUCCESS, 0)
        if attribute == CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            return (_SUCCESS, int(ptr))
        return (CUresult.CUDA_ERROR_INVALID_VALUE, 0)

    # -- streams and events ------------------------------------------------------------------------

    def cuStreamCreate(self, flags: int) -> tuple[int, int]:
        self.calls["cuStreamCreate"] += 1
        return (_SUCCESS, self._new_handle())

    def cuStreamDestroy(self, stream: int) -> tuple[int]:
        self.calls["cuStreamDestroy"] += 1
        return (_SUCCESS,)

    def cuStreamSynchronize(self, stream: int) -> tuple[int]:
        self.calls["cuStreamSynchronize"] += 1
        if stream in self.capturing:
            self.capturing[stream] = None
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        return (_SUCCESS,)

    def cuStreamWaitEvent(self, stream: int, event: int, flags: int) -> tuple[int]:
        self.calls["cuStreamWaitEvent"] += 1
        return (_SUCCESS,)

    def cuEventCreate(self, flags: int) -> tuple[int, int]:
        self.calls["cuEventCreate"] += 1
        handle = self._new_handle()
        if not int(flags) & CUevent_flags.CU_EVENT_DISABLE_TIMING:
            self._timing_events[handle] = 0.0
        return (_SUCCESS, handle)

    def cuEventRecord(self, event: int, stream: int) -> tuple[int]:
        self.calls["cuEventRecord"] += 1
        if event in self._timing_events:
            self._timing_events[event] = time.perf_counter()
        return (_SUCCESS,)

    def cuEventSynchronize(self, event: int) -> tuple[int]:
        self.calls["cuEventSynchronize"] += 1
        return (_SUCCESS,)

    def cuEventQuery(self, event: int) -> tuple[int]:
        self.calls["cuEventQuery"] += 1
        return (_SUCCESS,)  # nothing runs, so everything has finished

    def cuEventElapsedTime(self, start: int, end: int) -> tuple[int, float]:
        """Host time between the two records, in ms (the GPU did nothing in between)."""
        self.calls["cuEventElapsedTime"] += 1
        t0 = self._timing_events.get(start)
        t1 = self._timing_events.get(end)
        if t0 is None or t1 is None:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, 0.0)
        return (_SUCCESS, (t1 - t0) * 1e3)

    def cuEventDestroy(self, event: int) -> tuple[int]:
        self.calls["cuEventDestroy"] += 1
        self._timing_events.pop(event, None)
        return (_SUCCESS,)

    # -- modules, functions, launches --------------------------------------------------------------

    def cuModuleLoadData(self, image: bytes) -> tuple[int, int]:
        self.calls["cuModuleLoadData"] += 1
        handle = self._new_handle()
        self.modules[handle] = len(image)
        return (_SUCCESS, handle)

    def cuModuleGetFunction(self, module: int, name: bytes) -> tuple[int, int]:
        self.calls["cuModuleGetFunction"] += 1
        if module not in self.modules:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, 0)
        handle = self._new_handle()
        self.function_names[handle] = name.decode() if isinstance(name, bytes) else str(name)
        return (_SUCCESS, handle)

    def cuFuncGetAttribute(self, attrib: int, func: int) -> tuple[int, int]:
        self.calls["cuFuncGetAttribute"] += 1
        attrib = int(attrib)
        if attrib == CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
            return (_SUCCESS, 1024)
        if attrib == CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            return (_SUCCESS, 48 * 1024)
        if attrib == CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS:
            return (_SUCCESS, 32)
        return (_SUCCESS, 0)

    def cuFuncSetAttribute(self, func: int, attrib: int, value: int) -> tuple[int]:
        self.calls["cuFuncSetAttribute"] += 1
        if (int(attrib) == CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                and int(value) > self.attributes[
                    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]):
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        return (_SUCCESS,)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, func: int, block_size: int,
                                                    dynamic_smem: int) -> tuple[int, int]:
        self.calls["cuOccupancyMaxActiveBlocksPerMultiprocessor"] += 1
        return (_SUCCESS, max(1, min(32, 2048 // max(1, int(block_size)))))

    def cuLaunchKernel(self, f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, stream: int, params: int, extra: int) -> tuple[int]:
        """Record the launch; run nothing (the hot path of a profile: keep it this small)."""
        self.calls["cuLaunchKernel"] += 1
        entry = (self.function_names[f], (gx, gy, gz), (bx, by, bz))
        if self.capturing and stream in self.capturing:
            return self._record(stream, entry)
        self.launches += 1
        self.launch_log.append(entry)
        return (_SUCCESS,)

    # -- graphs (stream capture) -------------------------------------------------------------------

    def _record(self, stream: int, work: Any) -> tuple[int]:
        """Keep ``work`` (a launch entry, or a callable moving bytes) in the capture of
        ``stream``: it runs at each cuGraphLaunch, not now."""
        recorded = self.capturing[stream]
        if recorded is None:
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,)
        recorded.append(work)
        return (_SUCCESS,)

    def cuStreamBeginCapture(self, stream: int, mode: int) -> tuple[int]:
        self.calls["cuStreamBeginCapture"] += 1
        if stream in self.capturing:
            return (CUresult.CUDA_ERROR_ILLEGAL_STATE,)
        self.capturing[stream] = []
        return (_SUCCESS,)

    def cuStreamEndCapture(self, stream: int) -> tuple[int, int]:
        self.calls["cuStreamEndCapture"] += 1
        if stream not in self.capturing:
            return (CUresult.CUDA_ERROR_ILLEGAL_STATE, 0)
        recorded = self.capturing.pop(stream)
        if recorded is None:
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 0)
        handle = self._new_handle()
        self.graphs[handle] = recorded
        return (_SUCCESS, handle)

    def cuGraphInstantiate(self, graph: int, flags: int) -> tuple[int, int]:
        self.calls["cuGraphInstantiate"] += 1
        recorded = self.graphs.get(graph)
        if recorded is None:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, 0)
        handle = self._new_handle()
        self.graph_execs[handle] = list(recorded)
        return (_SUCCESS, handle)

    def cuGraphLaunch(self, graph_exec: int, stream: int) -> tuple[int]:
        """Run the recorded work: copies and memsets move bytes, kernels are logged."""
        self.calls["cuGraphLaunch"] += 1
        recorded = self.graph_execs.get(graph_exec)
        if recorded is None:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE,)
        for work in recorded:
            if callable(work):
                work()
            else:
                self.launches += 1
                self.launch_log.append(work)
        return (_SUCCESS,)

    def cuGraphDestroy(self, graph: int) -> tuple[int]:
        self.calls["cuGraphDestroy"] += 1
        return (_SUCCESS,) if self.graphs.pop(graph, None) is not None else (
            CUresult.CUDA_ERROR_INVALID_HANDLE,)

    def cuGraphExecDestroy(self, graph_exec: int) -> tuple[int]:
        self.calls["cuGraphExecDestroy"] += 1
        return (_SUCCESS,) if self.graph_execs.pop(graph_exec, None) is not None else (
            CUresult.CUDA_ERROR_INVALID_HANDLE,)

    def __repr__(self) -> str:
        return (f"NullDriver({self.launches} launches, {len(self.blocks)} blocks, "
                f"{self.allocated} bytes allocated)")
