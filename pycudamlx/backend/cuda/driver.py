"""The CUDA driver: initialisation, devices, primary contexts, and error translation.

This is the only module that knows how cuda-bindings 12.x and 13.x differ (prefetch and advise take
a ``CUmemLocation`` in both, but 12.x names them ``*_v2``). Every ``CUresult`` the package sees is
translated here, once, into a typed exception that carries the CUDA error name, its description and
the call that failed. Importing this module never touches the driver: ``cuInit`` runs on first use.

For tests and profiling, ``use_null_driver()`` (or ``PYCUDAMLX_NULL_DRIVER=1`` at the first
``init``) puts ``null_driver.NullDriver`` in the bindings' place: the GPU path runs on a machine
without a GPU, and no kernel executes.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ... import _env

if TYPE_CHECKING:
    from .null_driver import NullDriver

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------
# Exceptions


class CudaError(RuntimeError):
    """A CUDA driver call failed. ``name`` is the CUDA error name, ``call`` the driver function."""

    def __init__(self, message: str, *, call: str = "", code: int = -1, name: str = "",
                 description: str = "") -> None:
        super().__init__(message)
        self.call = call
        self.code = code
        self.name = name
        self.description = description


class CudaOutOfMemoryError(CudaError, MemoryError):
    """The device (or our managed-memory guard) cannot satisfy an allocation."""


class CudaUnavailableError(CudaError):
    """No NVIDIA driver, or no CUDA device: only the CPU backend can run."""


class CudaContextLostError(CudaError):
    """A sticky error (e.g. an illegal address in a kernel) destroyed the CUDA context.

    Every later CUDA call in this process raises this too: the process must be restarted.
    """


# Errors after which the context is unusable (CUDA documents these as sticky).
_STICKY_CODES = frozenset({
    214,  # ECC_UNCORRECTABLE
    700,  # ILLEGAL_ADDRESS
    702,  # LAUNCH_TIMEOUT
    710,  # ASSERT
    714,  # HARDWARE_STACK_ERROR
    715,  # ILLEGAL_INSTRUCTION
    716,  # MISALIGNED_ADDRESS
    717,  # INVALID_ADDRESS_SPACE
    718,  # INVALID_PC
    719,  # LAUNCH_FAILED
})
_OOM_CODE = 2
_NO_DEVICE_CODE = 100
_NOT_INITIALIZED_CODE = 3
_INSUFFICIENT_DRIVER_CODE = 35

NO_DRIVER_MESSAGE = "No NVIDIA driver was found on this machine: only the CPU backend is available."

# --------------------------------------------------------------------------------------------------
# Process-wide state

_lock = threading.RLock()
_cu: Any = None                 # the cuda.bindings.driver module, once initialised
_init_error: CudaError | None = None
_initialised_pid: int | None = None
_lost: CudaContextLostError | None = None
class _ThreadState(threading.local):
    """The device whose context this thread made current (a class default: reads never miss)."""

    device: "CudaDevice | None" = None


_thread_state = _ThreadState()
_null: Any = None               # the NullDriver, while it stands in for the bindings


def _error_strings(code: int) -> tuple[str, str]:
    """The CUDA name and description of an error code (best effort: the context may be gone)."""
    cu = _cu
    if cu is None:
        return f"CUDA_ERROR_{code}", ""
    try:
        enum = cu.CUresult(code)
    except Exception:  # an unknown code: still report it
        return f"CUDA_ERROR_{code}", ""
    # The enum knows the name even when the driver cannot be asked (gone, or never loaded).
    fallback = str(getattr(enum, "name", f"CUDA_ERROR_{code}"))
    try:
        name_res, name = cu.cuGetErrorName(enum)
        desc_res, desc = cu.cuGetErrorString(enum)
    except Exception:
        return fallback, ""
    name_s = name.decode() if name_res == 0 and name else fallback
    desc_s = desc.decode() if desc_res == 0 and desc else ""
    return name_s, desc_s


def raise_for(result: Any, call: str) -> None:
    """Translate a non-success ``CUresult`` from ``call`` into the matching exception."""
    global _lost
    code = int(result)
    if code == 0:
        return
    name, description = _error_strings(code)
    message = f"{call} failed: {name}: {description}" if description else f"{call} failed: {name}"
    if code in _STICKY_CODES:
        err = CudaContextLostError(
            message + ". The CUDA context is lost; every later GPU call in this process will fail. "
            "Restart the process (set PYCUDAMLX_DEBUG_SYNC=1 to find the op that caused it).",
            call=call, code=code, name=name, description=description)
        with _lock:
            if _lost is None:
                _lost = err
        raise err
    if code == _OOM_CODE:
        raise CudaOutOfMemoryError(message, call=call, code=code, name=name, description=description)
    if code in (_NO_DEVICE_CODE, _INSUFFICIENT_DRIVER_CODE):
        raise CudaUnavailableError(message, call=call, code=code, name=name, description=description)
    raise CudaError(message, call=call, code=code, name=name, description=description)


def check_alive() -> None:
    """Raise the saved error if a sticky error already destroyed the context."""
    lost = _lost
    if lost is not None:
        raise CudaContextLostError(
            f"The CUDA context was lost earlier ({lost.name} in {lost.call}); "
            "no GPU work can run in this process any more. Restart the process.",
            call=lost.call, code=lost.code, name=lost.name, description=lost.description)


def call(fn: Callable[..., tuple], *args: Any) -> Any:
    """Call a driver function and check its result; return its single output, a tuple, or None."""
    if _lost is not None:
        check_alive()
    out = fn(*args)
    if out[0]:
        raise_for(out[0], fn.__name__)
    n = len(out)
    if n == 1:
        return None
    if n == 2:
        return out[1]
    return out[1:]


# --------------------------------------------------------------------------------------------------
# Initialisation


def _after_fork_in_child() -> None:
    global _cu, _init_error
    if _initialised_pid is not None:
        _init_error = CudaError(
            "CUDA was initialised in the parent process before fork(); a forked child cannot use "
            "the GPU. Use multiprocessing's 'spawn' or 'forkserver' start method.",
            call="fork", name="CUDA_ERROR_NOT_INITIALIZED")
        _cu = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def bindings_version() -> str | None:
    """The installed cuda-bindings version, or None when it is missing."""
    try:
        import cuda.bindings as cb
    except ImportError:
        return None
    return getattr(cb, "__version__", "unknown")


def bindings_major() -> int:
    version = bindings_version() or "0"
    try:
        return int(version.split(".")[0])
    except ValueError:
        return 0


def _copy_error(err: CudaError) -> CudaError:
    """A fresh exception equal to the saved one: raising the saved object itself would attach
    each raise's traceback to it, and with it the frames (and the arrays) of the first GPU call
    on a machine without a GPU, kept alive for the life of the process."""
    return type(err)(str(err), call=err.call, code=err.code, name=err.name,
                     description=err.description)


def init() -> Any:
    """Initialise the driver once per process and return the bindings module.

    Raises CudaUnavailableError with one clear sentence when there is no driver or no device.
    """
    global _cu, _init_error, _initialised_pid
    cu = _cu
    if cu is not None:
        return cu
    with _lock:
        if _cu is not None:
            return _cu
        if _init_error is not None:
            raise _copy_error(_init_error)
        if _env.flag("PYCUDAMLX_NULL_DRIVER"):
            return _install_null_driver()
        try:
            from cuda.bindings import driver as cu_mod
        except ImportError as exc:
            _init_error = CudaUnavailableError(
                f"cuda-bindings is not installed ({exc}); install pycudamlx[cu12] or "
                "pycudamlx[cu13]. Only the CPU backend is available.", call="import")
            raise _copy_error(_init_error) from None
        try:
            (result,) = cu_mod.cuInit(0)
        except RuntimeError as exc:  # cuda.pathfinder: libcuda.so not found
            log.debug("cuInit could not load the driver: %s", exc)
            _init_error = CudaUnavailableError(NO_DRIVER_MESSAGE, call="cuInit",
                                               name="CUDA_ERROR_NO_DRIVER")
            raise _copy_error(_init_error) from None
        if int(result) != 0:
            _cu = cu_mod  # for the error strings
            try:
                raise_for(result, "cuInit")
            except CudaError as exc:
                _cu = None
                msg = ("No CUDA device is available: only the CPU backend can run."
                       if exc.code == _NO_DEVICE_CODE else
                       f"The NVIDIA driver could not be initialised ({exc}); "
                       "only the CPU backend is available.")
                _init_error = CudaUnavailableError(msg, call="cuInit", code=exc.code,
                                                   name=exc.name, description=exc.description)
                raise _copy_error(_init_error) from None
        _cu = cu_mod
        _initialised_pid = os.getpid()
        return cu_mod


def use_null_driver() -> NullDriver:
    """For tests and profiling only: make ``init()`` return a null driver from now on.

    The whole GPU path (graph evaluation, memory pool, kernel loading, launches) then runs on the
    host with one H200-like device and no kernel executing; the returned object counts the
    calls. Resets this module's state (a failed earlier init, the devices, the lost context).
    Call it before the first GPU use: a real device already in use cannot be swapped out
    (RuntimeError), and ``mx.default_device()`` is decided once, at its first call. Calling it
    again while the null driver is installed returns the same instance.
    """
    with _lock:
        if _null is not None and _cu is _null:
            return _null
        if _devices:
            raise RuntimeError("use_null_driver() must come before the first GPU use: the real "
                               "driver's devices, streams and kernels are already in use")
        return _install_null_driver()


def null_driver() -> NullDriver | None:
    """The installed null driver, or None with the real bindings (or none at all)."""
    cu = _null
    return cu if cu is not None and _cu is cu else None


def _install_null_driver() -> NullDriver:
    global _cu, _init_error, _initialised_pid, _lost, _null, _thread_state
    global _prefetch_fn, _advise_fn
    from .null_driver import NullDriver

    with _lock:
        _devices.clear()
        _location_cache.clear()
        _prefetch_fn = _advise_fn = None
        _thread_state = _ThreadState()
        _init_error = None
        _lost = None
        _null = _cu = NullDriver()
        _initialised_pid = os.getpid()
        log.info("the null CUDA driver is installed: GPU ops run no kernels")
        return _null


def is_available() -> bool:
    """True when a driver and at least one CUDA device are present (initialises the driver)."""
    try:
        return device_count() > 0
    except CudaError:
        return False


def unavailable_reason() -> str | None:
    """Why the GPU cannot be used, or None when it can."""
    try:
        if device_count() == 0:
            return "No CUDA device is available: only the CPU backend can run."
        return None
    except CudaError as exc:
        return str(exc)


def driver_version() -> int:
    """The driver's CUDA version as an int, e.g. 13000 for CUDA 13.0."""
    cu = init()
    return call(cu.cuDriverGetVersion)


def format_cuda_version(version: int) -> str:
    return f"{version // 1000}.{(version % 1000) // 10}"


# --------------------------------------------------------------------------------------------------
# Devices and contexts


@dataclass(frozen=True)
class DeviceProperties:
    """What the library and `pycudamlx info` need to know about one device."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    total_memory: int
    l2_cache_bytes: int
    managed_memory: bool
    concurrent_managed_access: bool
    pageable_memory_access: bool
    max_threads_per_block: int
    max_shared_memory_per_block: int
    warp_size: int

    @property
    def arch(self) -> str:
        """The SM architecture name NVRTC targets, e.g. ``sm_90``."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


class CudaDevice:
    """One CUDA device and its primary context, made current in each thread that uses it."""

    __slots__ = ("index", "handle", "context", "properties", "__weakref__")

    def __init__(self, index: int) -> None:
        cu = init()
        self.index = index
        self.handle = call(cu.cuDeviceGet, index)
        self.context = call(cu.cuDevicePrimaryCtxRetain, self.handle)
        self.properties = self._read_properties(cu)

    def _read_properties(self, cu: Any) -> DeviceProperties:
        attr = cu.CUdevice_attribute

        def get(name: str) -> int:
            return int(call(cu.cuDeviceGetAttribute, getattr(attr, name), self.handle))

        raw_name = call(cu.cuDeviceGetName, 256, self.handle)
        name = raw_name.split(b"\0", 1)[0].decode(errors="replace")
        return DeviceProperties(
            index=self.index,
            name=name,
            compute_capability=(get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                                get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")),
            multiprocessors=get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            total_memory=int(call(cu.cuDeviceTotalMem, self.handle)),
            l2_cache_bytes=get("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
            managed_memory=bool(get("CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY")),
            concurrent_managed_access=bool(get("CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS")),
            pageable_memory_access=bool(get("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS")),
            max_threads_per_block=get("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
            max_shared_memory_per_block=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
            warp_size=get("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
        )

    def activate(self) -> None:
        """Make this device's primary context current in the calling thread (cheap if it is)."""
        if _thread_state.device is self:
            return
        if _lost is not None:
            check_alive()
        cu = _cu if _cu is not None else init()
        call(cu.cuCtxSetCurrent, self.context)
        _thread_state.device = self

    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory in bytes, as the driver reports them now."""
        self.activate()
        free, total = call(init().cuMemGetInfo)
        return int(free), int(total)

    def synchronize(self) -> None:
        self.activate()
        call(init().cuCtxSynchronize)

    def __repr__(self) -> str:
        return f"CudaDevice({self.index}, {self.properties.name!r}, {self.properties.arch})"


_devices: dict[int, CudaDevice] = {}


def device_count() -> int:
    cu = init()
    return int(call(cu.cuDeviceGetCount))


def get_device(index: int = 0) -> CudaDevice:
    """The device with this index; a clear ValueError when there is no such device."""
    dev = _devices.get(index)
    if dev is not None:
        return dev
    with _lock:
        dev = _devices.get(index)
        if dev is not None:
            return dev
        count = device_count()
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise ValueError(
                f"CUDA device index {index!r} does not exist: this machine has {count} "
                f"CUDA device{'s' if count != 1 else ''}"
                + (f" (valid indices 0..{count - 1})." if count else "."))
        dev = CudaDevice(index)
        _devices[index] = dev
        return dev


def current_device() -> CudaDevice | None:
    """The device whose context this thread made current through us, if any."""
    return _thread_state.device


# --------------------------------------------------------------------------------------------------
# The 12.x / 13.x differences


def _mem_location(device_index: int | None) -> Any:
    """A CUmemLocation for a device index, or for the host when ``device_index`` is None."""
    cu = init()
    loc = cu.CUmemLocation()
    if device_index is None:
        loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
        loc.id = 0
    else:
        loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = device_index
    return loc


def _versioned(name: str) -> Callable[..., tuple]:
    """12.2+ bindings spell the CUmemLocation form ``name_v2``; 13.x drops the suffix."""
    cu = init()
    fn = getattr(cu, name + "_v2", None)
    return fn if fn is not None else getattr(cu, name)


_location_cache: dict[int | None, Any] = {}
_prefetch_fn: Callable[..., tuple] | None = None
_advise_fn: Callable[..., tuple] | None = None


def prefetch_async(ptr: int, nbytes: int, device_index: int | None, stream: Any) -> None:
    """Migrate managed memory to a device (or to the host when ``device_index`` is None)."""
    global _prefetch_fn
    fn = _prefetch_fn
    if fn is None:
        fn = _prefetch_fn = _versioned("cuMemPrefetchAsync")
    loc = _location_cache.get(device_index)
    if loc is None:
        loc = _location_cache[device_index] = _mem_location(device_index)
    call(fn, ptr, nbytes, loc, 0, stream)


ADVICE = {
    "read_mostly": ("CU_MEM_ADVISE_SET_READ_MOSTLY", "CU_MEM_ADVISE_UNSET_READ_MOSTLY"),
    "preferred_location": ("CU_MEM_ADVISE_SET_PREFERRED_LOCATION",
                           "CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION"),
    "accessed_by": ("CU_MEM_ADVISE_SET_ACCESSED_BY", "CU_MEM_ADVISE_UNSET_ACCESSED_BY"),
}


def mem_advise(ptr: int, nbytes: int, advice: str, device_index: int | None, *,
               unset: bool = False) -> None:
    """Apply (or with ``unset`` remove) one managed-memory advice for a device or the host."""
    global _advise_fn
    if advice not in ADVICE:
        raise ValueError(f"unknown advice {advice!r}; expected one of {sorted(ADVICE)}")
    fn = _advise_fn
    if fn is None:
        fn = _advise_fn = _versioned("cuMemAdvise")
    cu = init()
    enum = getattr(cu.CUmem_advise, ADVICE[advice][1 if unset else 0])
    call(fn, ptr, nbytes, enum, _mem_location(device_index))


# --------------------------------------------------------------------------------------------------
# CUDA graphs (stream capture). cuda.bindings 12.x and 13.x spell these alike: cuGraphInstantiate
# takes (graph, flags) since 12.0.


def begin_capture(stream_handle: Any) -> None:
    """Start recording ``stream``'s work into a graph. Relaxed mode: allocation from the graph's
    private pool may call the driver's allocator meanwhile (forbidden in the stricter modes)."""
    cu = init()
    call(cu.cuStreamBeginCapture, stream_handle,
         cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)


def end_capture(stream_handle: Any) -> tuple[int, Any]:
    """Stop recording; (CUresult, graph). Never raises: a failed capture still has to end."""
    out = init().cuStreamEndCapture(stream_handle)
    return int(out[0]), out[1]


def instantiate_graph(graph: Any) -> Any:
    """An executable graph of ``graph``."""
    cu = init()
    return call(cu.cuGraphInstantiate, graph, 0)


def launch_graph(graph_exec: Any, stream_handle: Any) -> None:
    (result,) = _cu.cuGraphLaunch(graph_exec, stream_handle)
    if result:
        raise_for(result, "cuGraphLaunch")


def destroy_graph(graph: Any, executable: bool = False) -> None:
    """Free a graph (``executable``: an instantiated one); quiet at interpreter exit or after a
    lost context, so finalizers may call it."""
    cu = _cu
    if cu is None or graph is None or sys.is_finalizing() or _lost is not None:
        return
    try:
        (cu.cuGraphExecDestroy if executable else cu.cuGraphDestroy)(graph)
    except Exception:  # never raise from a finalizer
        pass
