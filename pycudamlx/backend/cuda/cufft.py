"""cuFFT through ctypes: the transforms behind mx.fft on GPU streams, from NVIDIA's wheel.

The library is found with ``cuda.pathfinder`` (``nvidia-cufft-cu12`` for the cu12 extra,
``nvidia-cufft`` for cu13), so nothing is compiled and no toolkit is needed. Every plan is a
batched one-dimensional transform (the FFT primitive transforms one axis at a time) made with
``cufftMakePlanMany64`` (64-bit sizes and strides: one code path for every size) in the advanced
layout: element ``x`` of batch ``b`` at ``b * dist + x * stride`` on both sides.

Plans are cached per (device, type, n, batch, istride, idist, ostride, odist) in a small LRU
(``PYCUDAMLX_CUFFT_PLAN_CACHE`` entries, 32 by default); an evicted plan is destroyed. Work
areas: plans are made with ``cufftSetAutoAllocation(0)``, so a cached plan holds no workspace;
each execution takes its work area from our memory pool (stream-ordered, returned to the pool
right after the launch is queued, with the stream recorded as its last user), so the pool is the
one allocator of GPU memory and memory limits and statistics see cuFFT's scratch too. Plans are
shared by streams: the stream and the work area are set on the plan, under its lock, before
each execution. Plans are created with the device's primary context current (the one our driver
layer uses), as cuBLAS's handles are.

Switch: ``PYCUDAMLX_DISABLE_CUFFT=1`` makes ``available()`` False (mx.fft on a GPU stream then
runs numpy on the host view of managed memory, which PYCUDAMLX_STRICT_GPU=1 refuses).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections import OrderedDict
from typing import Any

from ... import _env
from .vendor import VendorLibrary, env_switch_on

log = logging.getLogger(__name__)

# cufftType (cufft.h)
R2C, C2R, C2C = 0x2A, 0x2C, 0x29
# directions (cufft.h)
FORWARD, INVERSE = -1, 1

_STATUS = {0x0: "CUFFT_SUCCESS", 0x1: "CUFFT_INVALID_PLAN", 0x2: "CUFFT_ALLOC_FAILED",
           0x3: "CUFFT_INVALID_TYPE", 0x4: "CUFFT_INVALID_VALUE", 0x5: "CUFFT_INTERNAL_ERROR",
           0x6: "CUFFT_EXEC_FAILED", 0x7: "CUFFT_SETUP_FAILED", 0x8: "CUFFT_INVALID_SIZE",
           0x9: "CUFFT_UNALIGNED_DATA", 0xA: "CUFFT_INCOMPLETE_PARAMETER_LIST",
           0xB: "CUFFT_INVALID_DEVICE", 0xC: "CUFFT_PARSE_ERROR", 0xD: "CUFFT_NO_WORKSPACE",
           0xE: "CUFFT_NOT_IMPLEMENTED", 0xF: "CUFFT_LICENSE_ERROR",
           0x10: "CUFFT_NOT_SUPPORTED", 0x11: "CUFFT_MISSING_DEPENDENCY",
           0x12: "CUFFT_NVRTC_FAILURE", 0x13: "CUFFT_NVJITLINK_FAILURE",
           0x14: "CUFFT_NVSHMEM_FAILURE"}

_TYPE_NAMES = {R2C: "R2C", C2R: "C2R", C2C: "C2C"}


class CufftError(RuntimeError):
    """A cuFFT call failed; the message names the call and the status."""


def status_name(status: int) -> str:
    return _STATUS.get(status, f"cufftResult {status}")


def disabled() -> bool:
    return env_switch_on("PYCUDAMLX_DISABLE_CUFFT")


def _cache_size() -> int:
    return int(_env.get("PYCUDAMLX_CUFFT_PLAN_CACHE"))  # type: ignore[arg-type]


def _bind(lib: Any) -> None:
    c_int, c_ll, vp = ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p
    p_ll = ctypes.POINTER(c_ll)
    # cufftHandle is an int; every call returns cufftResult (an int enum).
    lib.cufftCreate.argtypes = [ctypes.POINTER(c_int)]
    lib.cufftDestroy.argtypes = [c_int]
    lib.cufftSetAutoAllocation.argtypes = [c_int, c_int]
    lib.cufftMakePlanMany64.argtypes = [
        c_int, c_int, p_ll,           # plan, rank, n
        p_ll, c_ll, c_ll,             # inembed, istride, idist
        p_ll, c_ll, c_ll,             # onembed, ostride, odist
        c_int, c_ll, ctypes.POINTER(ctypes.c_size_t)]  # type, batch, workSize
    lib.cufftSetWorkArea.argtypes = [c_int, vp]
    lib.cufftSetStream.argtypes = [c_int, vp]
    lib.cufftExecC2C.argtypes = [c_int, vp, vp, c_int]
    lib.cufftExecR2C.argtypes = [c_int, vp, vp]
    lib.cufftExecC2R.argtypes = [c_int, vp, vp]
    lib.cufftGetVersion.argtypes = [ctypes.POINTER(c_int)]
    for fn in ("cufftCreate", "cufftDestroy", "cufftSetAutoAllocation", "cufftMakePlanMany64",
               "cufftSetWorkArea", "cufftSetStream", "cufftExecC2C", "cufftExecR2C",
               "cufftExecC2R", "cufftGetVersion"):
        getattr(lib, fn).restype = c_int


_library = VendorLibrary("cufft", _bind, "mx.fft on GPU streams runs on the host")


def library() -> Any:
    """The loaded libcufft (a ctypes.CDLL), or None when it is missing."""
    return _library.load()


def available() -> bool:
    """Whether mx.fft on GPU streams goes to cuFFT (installed, loadable, not disabled)."""
    return not disabled() and library() is not None


def load_error() -> str | None:
    library()
    return _library.error


def version() -> int | None:
    """cufftGetVersion's number (e.g. 12000; no GPU needed), or None without cuFFT."""
    lib = library()
    if lib is None:
        return None
    v = ctypes.c_int()
    if lib.cufftGetVersion(ctypes.byref(v)):
        return None
    return v.value


def _check(status: int, call: str) -> None:
    if status:
        raise CufftError(f"{call} failed: {status_name(status)}")


def plan_key(device_index: int, fft_type: int, n: int, batch: int, istride: int, idist: int,
             ostride: int, odist: int) -> tuple:
    """What identifies a plan: everything cufftMakePlanMany64 is given, and the device."""
    if fft_type not in _TYPE_NAMES:
        raise ValueError(f"unknown cufftType {fft_type:#x}")
    if n < 1 or batch < 1:
        raise ValueError(f"cuFFT plan needs n >= 1 and batch >= 1 (n={n}, batch={batch})")
    return (device_index, fft_type, n, batch, istride, idist, ostride, odist)


def embeds(fft_type: int, n: int) -> tuple[int, int]:
    """inembed[0] and onembed[0] (the element counts of one transform's input and output).
    cuFFT reads only inembed[1:]/onembed[1:] for rank 1, but the arrays must be non-NULL for the
    advanced layout (strides and distances) to be used at all."""
    half = n // 2 + 1
    if fft_type == R2C:
        return n, half
    if fft_type == C2R:
        return half, n
    return n, n


class _Plan:
    __slots__ = ("handle", "work_size", "stream", "lock", "device", "last_stream")

    def __init__(self, handle: int, work_size: int, device: Any) -> None:
        self.handle: int | None = handle  # None once destroyed
        self.work_size = work_size
        self.stream: int | None = None  # the raw handle set on the plan
        self.lock = threading.Lock()
        self.device = device
        self.last_stream: Any = None  # the CudaStream of the last execution


class PlanCache:
    """A bounded LRU of plans; ``destroy`` is called on what falls out (and on ``clear``)."""

    def __init__(self, capacity: int, destroy: Any) -> None:
        self.capacity = capacity
        self.destroy = destroy
        self.entries: OrderedDict[tuple, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        with self.lock:
            plan = self.entries.get(key)
            if plan is not None:
                self.entries.move_to_end(key)
            return plan

    def put(self, key: tuple, plan: Any) -> Any:
        """Insert (or keep the one already there, returned); evict beyond capacity."""
        evicted = []
        with self.lock:
            old = self.entries.get(key)
            if old is not None:
                self.entries.move_to_end(key)
                evicted.append(plan)
                plan = old
            else:
                self.entries[key] = plan
                while len(self.entries) > self.capacity:
                    evicted.append(self.entries.popitem(last=False)[1])
        for p in evicted:
            self.destroy(p)
        return plan

    def clear(self) -> None:
        with self.lock:
            plans = list(self.entries.values())
            self.entries.clear()
        for p in plans:
            self.destroy(p)

    def __len__(self) -> int:
        return len(self.entries)


def _destroy(plan: _Plan) -> None:
    lib = _library.lib
    if lib is None:
        return
    with plan.lock:  # never during an execution's calls
        handle, plan.handle = plan.handle, None
        if handle is None:
            return
        try:
            plan.device.activate()
            if plan.last_stream is not None:
                # Its kernels may still be queued: they read the plan's device tables.
                plan.last_stream.synchronize()
            status = lib.cufftDestroy(handle)
            if status:
                log.warning("cufftDestroy failed: %s", status_name(status))
        except Exception as exc:  # interpreter shutdown, context gone
            log.debug("cufftDestroy skipped: %s", exc)


_plans = PlanCache(_cache_size(), _destroy)


def clear_plans() -> None:
    """Destroy every cached plan."""
    _plans.clear()


def _make_plan(device: Any, key: tuple) -> _Plan:
    lib = library()
    _, fft_type, n, batch, istride, idist, ostride, odist = key
    device.activate()
    h = ctypes.c_int()
    _check(lib.cufftCreate(ctypes.byref(h)), "cufftCreate")
    try:
        _check(lib.cufftSetAutoAllocation(h.value, 0), "cufftSetAutoAllocation")
        inem, onem = embeds(fft_type, n)
        arr = ctypes.c_longlong * 1
        work = ctypes.c_size_t(0)
        _check(lib.cufftMakePlanMany64(h.value, 1, arr(n), arr(inem), istride, idist, arr(onem),
                                       ostride, odist, fft_type, batch, ctypes.byref(work)),
               f"cufftMakePlanMany64({_TYPE_NAMES[fft_type]}, n={n}, batch={batch})")
    except BaseException:
        lib.cufftDestroy(h.value)
        raise
    return _Plan(h.value, int(work.value), device)


def _plan(device: Any, key: tuple) -> _Plan:
    plan = _plans.get(key)
    if plan is None:
        plan = _plans.put(key, _make_plan(device, key))
    return plan


def execute(stream: Any, fft_type: int, n: int, batch: int, istride: int, idist: int,
            ostride: int, odist: int, src: int, dst: int, direction: int = FORWARD) -> None:
    """Queue ``batch`` one-dimensional transforms of length ``n`` (the signal length: real
    samples for R2C/C2R, whose complex side holds n//2 + 1 bins) on ``stream``, reading the
    device pointer ``src`` and writing ``dst`` in the advanced layout. Unnormalised, as cuFFT
    is. C2R may overwrite its input. ``direction`` matters for C2C only."""
    from . import memory

    # A plan owns device tables its kernels read; the plan cache may evict it while a graph
    # that baked them in lives on, so transforms never go into a CUDA graph.
    memory.refuse_in_capture("cuFFT")
    lib = _library.lib or library()
    device = stream.device
    key = plan_key(device.index, fft_type, n, batch, istride, idist, ostride, odist)
    while True:
        plan = _plan(device, key)
        work = None
        if plan.work_size:
            work = memory.allocate(plan.work_size, device, memory.DEVICE, stream)
        with plan.lock:
            if plan.handle is None:  # evicted by another thread meanwhile: make it again
                continue
            sh = int(stream.handle)
            if plan.stream != sh:
                _check(lib.cufftSetStream(plan.handle, sh), "cufftSetStream")
                plan.stream = sh
            plan.last_stream = stream
            if work is not None:
                _check(lib.cufftSetWorkArea(plan.handle, work.ptr), "cufftSetWorkArea")
            if fft_type == C2C:
                _check(lib.cufftExecC2C(plan.handle, src, dst, direction), "cufftExecC2C")
            elif fft_type == R2C:
                _check(lib.cufftExecR2C(plan.handle, src, dst), "cufftExecR2C")
            else:
                _check(lib.cufftExecC2R(plan.handle, src, dst), "cufftExecC2R")
        break
    if work is not None:
        # Back to the pool when dropped: the next user on this stream runs after the
        # transform; one on another stream waits for this stream's event first
        # (memory.allocate).
        work.last_use = stream
