"""GPU memory: managed and device allocations, host views, copies, memset, and the oversubscription guard.

Every GPU allocation of the package goes through here. Raw ctypes views of memory exist in this
module alone. A managed buffer remembers where its pages last were (host or a device), so the guard
below knows how much of our managed memory the driver's "free" figure does not yet account for.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import driver
from .driver import CudaDevice, CudaOutOfMemoryError, call
from .stream import CudaEvent, CudaStream

log = logging.getLogger(__name__)

HOST = -1
"""Location value meaning: the pages were last touched by the host (or by nobody yet)."""

MANAGED = "managed"
DEVICE = "device"

_MiB = 1 << 20
#: Memory the guard keeps free for the driver, cuBLAS workspaces and other processes' growth.
GUARD_HEADROOM = 256 * _MiB


@dataclass
class MemoryStats:
    """Counters over every GPU buffer of this process (for MLX's statistics and for tests).

    ``active_bytes`` counts buffers in use (their requested sizes), ``cached_bytes`` blocks the
    pool keeps for reuse; ``managed_bytes`` and ``device_bytes`` count what the driver has
    handed us (in use or cached), which is what the oversubscription guard must account for.
    """

    active_bytes: int = 0
    peak_bytes: int = 0
    cached_bytes: int = 0
    managed_bytes: int = 0
    managed_on_device: dict[int, int] = field(default_factory=dict)
    device_bytes: int = 0
    managed_allocations: int = 0      # driver calls, not pool hits
    device_allocations: int = 0
    pool_hits: int = 0
    prefetches: int = 0


stats = MemoryStats()
_stats_lock = threading.Lock()


class Buffer:
    """One GPU allocation: pointer, size, kind, where its pages are, and the last writer's event."""

    __slots__ = ("ptr", "nbytes", "capacity", "kind", "device", "location", "last_write",
                 "last_use", "exported", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, kind: str, device: CudaDevice,
                 capacity: int | None = None) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.capacity = nbytes if capacity is None else capacity  # the pool block's size
        self.kind = kind
        self.device = device
        # Fresh managed memory has no pages anywhere: as far as the guard is concerned they are
        # not on the device. Device memory is always on its device.
        self.location = HOST if kind == MANAGED else device.index
        # The stream whose work wrote this buffer last (host readers synchronise with it).
        self.last_write: CudaEvent | CudaStream | None = None
        # The stream of the last GPU work that read or wrote it (decides when a freed block
        # may be reused: at once on that stream, after an event wait on another).
        self.last_use: CudaStream | None = None
        self.exported = False

    # -- residency -----------------------------------------------------------------------------

    def set_location(self, location: int) -> None:
        """Record where the pages of a managed buffer now are (HOST or a device index)."""
        if self.kind != MANAGED or location == self.location:
            return
        with _stats_lock:
            if self.location != HOST:
                stats.managed_on_device[self.location] -= self.capacity
            if location != HOST:
                stats.managed_on_device[location] = (
                    stats.managed_on_device.get(location, 0) + self.capacity)
        self.location = location

    def prefetch(self, location: int, stream: CudaStream) -> None:
        """Migrate a managed buffer's pages to a device or the host, ordered on ``stream``."""
        if self.kind != MANAGED:
            return
        driver.prefetch_async(self.ptr, self.nbytes, None if location == HOST else location,
                              stream.handle)
        stats.prefetches += 1
        self.set_location(location)

    def wait_for_writes_on_host(self) -> None:
        """Block the host until the last GPU write to this buffer has finished."""
        writer = self.last_write
        if writer is not None:
            writer.synchronize()
            self.last_write = None

    # -- host access ---------------------------------------------------------------------------

    def host_view(self, dtype: Any = np.uint8, shape: tuple[int, ...] | None = None,
                  *, writable: bool = True) -> np.ndarray:
        """A zero-copy numpy view of a managed buffer, after the GPU's last write completes.

        The view keeps the buffer alive. Device memory has no host view: copy it with ``to_host``.
        """
        if self.kind != MANAGED:
            raise TypeError("device memory has no host view; copy it with to_host()")
        self.wait_for_writes_on_host()
        self.set_location(HOST)
        dt = np.dtype(dtype)
        if shape is None:
            shape = (self.nbytes // dt.itemsize,)
        return np.asarray(_HostWindow(self, dt, shape, writable))

    def free(self) -> None:
        """Return the block to the pool now (the buffer must not be used afterwards)."""
        ptr = self.ptr
        if not ptr:
            return
        self.ptr = 0
        _release(ptr, self.nbytes, self.capacity, self.kind, self.location,
                 self.last_use or self.last_write)

    def __del__(self) -> None:
        if self.ptr:
            self.free()

    def __repr__(self) -> str:
        where = "host" if self.location == HOST else f"gpu{self.location}"
        return f"Buffer({self.kind}, {self.nbytes} bytes, 0x{self.ptr:x}, pages on {where})"


class _HostWindow:
    """Exposes a managed buffer to numpy through ``__array_interface__`` and keeps it alive."""

    __slots__ = ("buffer", "__array_interface__")

    def __init__(self, buffer: Buffer, dtype: np.dtype, shape: tuple[int, ...],
                 writable: bool) -> None:
        self.buffer = buffer
        self.__array_interface__ = {
            "data": (buffer.ptr if buffer.nbytes else None, not writable),
            "shape": tuple(shape),
            "typestr": dtype.str,
            "descr": dtype.descr if dtype.fields else [("", dtype.str)],
            "version": 3,
        }


def _release(ptr: int, nbytes: int, capacity: int, kind: str, location: int,
             last_use: Any) -> None:
    """Give a buffer's block back to the pool (no driver call: safe in destructors)."""
    with _stats_lock:
        stats.active_bytes -= nbytes
    _pool.put(ptr, capacity, kind, location, last_use)


def _block_size(nbytes: int) -> int:
    """Size classes: 512-byte steps below 1 MiB, 2 MiB steps above (the GPU's large page)."""
    n = max(nbytes, 1)
    if n < _MiB:
        return (n + 511) & ~511
    return (n + 2 * _MiB - 1) & ~(2 * _MiB - 1)


class _Pool:
    """Freed blocks kept for reuse, by (kind, device, block size).

    All work of a device runs on its streams in order, and a block returns here only when no
    array refers to it any more; work already queued that reads it precedes any later work on the
    same stream. A block reused from another stream is made safe by an event wait (see allocate).
    """

    def __init__(self) -> None:
        self.free: dict[tuple[str, int, int], list[tuple[int, int, Any]]] = {}
        self.lock = threading.Lock()
        self.limit: int | None = None   # cache limit in bytes; None = unlimited

    def put(self, ptr: int, size: int, kind: str, location: int, last_use: Any) -> None:
        with self.lock:
            self.free.setdefault((kind, _device_of_ptr.get(ptr, 0), size), []).append(
                (ptr, location, last_use))
            with _stats_lock:
                stats.cached_bytes += size
            over = self.limit is not None and stats.cached_bytes > self.limit
        if over:
            self.trim(self.limit or 0)

    def take(self, kind: str, device: int, size: int) -> tuple[int, int, Any] | None:
        with self.lock:
            blocks = self.free.get((kind, device, size))
            if not blocks:
                return None
            block = blocks.pop()
            with _stats_lock:
                stats.cached_bytes -= size
                stats.pool_hits += 1
            return block

    def trim(self, keep_bytes: int = 0) -> int:
        """Return cached blocks to the driver until at most ``keep_bytes`` stay cached."""
        released = 0
        while True:
            with self.lock:
                if stats.cached_bytes <= keep_bytes:
                    return released
                key = next((k for k, v in self.free.items() if v), None)
                if key is None:
                    return released
                ptr, location, last_use = self.free[key].pop()
                kind, device, size = key
                with _stats_lock:
                    stats.cached_bytes -= size
            if last_use is not None:  # cuMemFree waits anyway; make it explicit and cheap
                last_use.synchronize()
            _driver_free(ptr, size, kind, location)
            released += size


_pool = _Pool()
_device_of_ptr: dict[int, int] = {}


def _driver_free(ptr: int, size: int, kind: str, location: int) -> None:
    with _stats_lock:
        if kind == MANAGED:
            stats.managed_bytes -= size
            if location != HOST:
                stats.managed_on_device[location] -= size
        else:
            stats.device_bytes -= size
    _device_of_ptr.pop(ptr, None)
    cu = driver._cu
    if cu is None or sys.is_finalizing() or driver._lost is not None:
        return
    try:
        cu.cuMemFree(ptr)
    except Exception:  # never raise from a destructor
        pass


def clear_cache() -> int:
    """Free every cached block; returns the bytes given back to the driver."""
    return _pool.trim(0)


def set_cache_limit(limit: int | None) -> None:
    _pool.limit = limit
    if limit is not None:
        _pool.trim(limit)


def _count(nbytes: int) -> None:
    with _stats_lock:
        stats.active_bytes += nbytes
        if stats.active_bytes > stats.peak_bytes:
            stats.peak_bytes = stats.active_bytes


_guard_lock = threading.Lock()


def _check_managed_request(device: CudaDevice, nbytes: int) -> None:
    """Refuse a managed request that could oversubscribe the device (which can hang a GPU).

    The driver's free figure counts only pages that are resident on the device; our managed pages
    that are not (fresh, or on the host) would still need room there, so they are subtracted too.
    """
    free, total = device.memory_info()
    with _stats_lock:
        not_resident = stats.managed_bytes - stats.managed_on_device.get(device.index, 0)
    available = free - not_resident - GUARD_HEADROOM
    if nbytes > available:
        raise CudaOutOfMemoryError(
            f"Refusing to allocate {_fmt(nbytes)} of managed memory on GPU {device.index}: only "
            f"{_fmt(max(available, 0))} can be backed by device memory ({_fmt(free)} free of "
            f"{_fmt(total)}, {_fmt(not_resident)} of this process's managed memory not yet "
            f"resident, {_fmt(GUARD_HEADROOM)} kept in reserve). Oversubscribed managed memory "
            "can hang the GPU; free arrays or use smaller ones.",
            call="cuMemAllocManaged", name="CUDA_ERROR_OUT_OF_MEMORY")


def _driver_allocate(size: int, device: CudaDevice, kind: str) -> int:
    cu = driver.init()
    device.activate()
    if kind == MANAGED:
        if not device.properties.managed_memory:
            raise driver.CudaError(f"GPU {device.index} does not support managed memory",
                                   call="cuMemAllocManaged")
        with _guard_lock:  # check and allocate atomically, so two threads cannot both pass
            _check_managed_request(device, size)
            ptr = int(call(cu.cuMemAllocManaged, size,
                           cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value))
            with _stats_lock:
                stats.managed_bytes += size
                stats.managed_allocations += 1
    elif kind == DEVICE:
        ptr = int(call(cu.cuMemAlloc, size))
        with _stats_lock:
            stats.device_bytes += size
            stats.device_allocations += 1
    else:
        raise ValueError(f"unknown memory kind {kind!r}")
    _device_of_ptr[ptr] = device.index
    return ptr


def allocate(nbytes: int, device: CudaDevice, kind: str = MANAGED,
             stream: CudaStream | None = None) -> Buffer:
    """A buffer of at least ``nbytes`` of managed or device memory on ``device``.

    ``stream`` is where the buffer will be used first; None means the host writes it first.
    Reuses a cached block of the same size class when there is one, made safe for its new user:
    work on another stream waits for the block's last user (an event, on the GPU); a host writer
    waits on the host. On out-of-memory, frees the cache and retries once before raising.
    """
    if nbytes < 0:
        raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
    size = _block_size(nbytes)
    block = _pool.take(kind, device.index, size)
    if block is not None:
        ptr, location, last_use = block
        if last_use is not None and last_use is not stream:
            if stream is None:
                last_use.synchronize()
            else:
                stream.wait(last_use.record())
    else:
        try:
            ptr = _driver_allocate(size, device, kind)
        except CudaOutOfMemoryError:
            if not clear_cache():
                raise
            ptr = _driver_allocate(size, device, kind)
        location = HOST if kind == MANAGED else device.index
    _count(nbytes)
    buf = Buffer(ptr, nbytes, kind, device, size)
    buf.location = location
    return buf


# ------------------------------------------------------------------------------------------------
# Copies and memset (all asynchronous on a stream; record the writer for host synchronisation)


def memset(buffer: Buffer, byte: int, stream: CudaStream, nbytes: int | None = None) -> None:
    """Set the first ``nbytes`` (default: all) bytes of ``buffer`` to ``byte``."""
    n = buffer.nbytes if nbytes is None else nbytes
    if n:
        call(driver.init().cuMemsetD8Async, buffer.ptr, byte & 0xFF, n, stream.handle)
    buffer.last_write = stream
    buffer.set_location(stream.device.index)


def copy_device_to_device(dst: Buffer, src: Buffer, nbytes: int, stream: CudaStream,
                          dst_offset: int = 0, src_offset: int = 0) -> None:
    if nbytes:
        call(driver.init().cuMemcpyDtoDAsync, dst.ptr + dst_offset, src.ptr + src_offset,
             nbytes, stream.handle)
    dst.last_write = stream
    dst.set_location(stream.device.index)


def copy_host_to_device(dst: Buffer, host: np.ndarray, stream: CudaStream,
                        dst_offset: int = 0) -> None:
    """Copy a C-contiguous numpy array into ``dst``; waits for completion (pageable source)."""
    host = np.ascontiguousarray(host)
    if host.nbytes > dst.nbytes - dst_offset:
        raise ValueError(f"copy of {host.nbytes} bytes does not fit in a buffer of "
                         f"{dst.nbytes - dst_offset} bytes")
    if host.nbytes:
        call(driver.init().cuMemcpyHtoDAsync, dst.ptr + dst_offset, host.ctypes.data,
             host.nbytes, stream.handle)
        stream.synchronize()  # the pageable source may be freed once we return
    dst.last_write = None
    dst.set_location(stream.device.index)


def copy_device_to_host(host: np.ndarray, src: Buffer, stream: CudaStream,
                        src_offset: int = 0) -> None:
    """Copy into a C-contiguous, writable numpy array; returns when the data is there."""
    if not host.flags.c_contiguous or not host.flags.writeable:
        raise ValueError("copy_device_to_host needs a C-contiguous, writable numpy array")
    if host.nbytes > src.nbytes - src_offset:
        raise ValueError(f"copy of {host.nbytes} bytes reads past a buffer of {src.nbytes} bytes")
    writer = src.last_write
    if isinstance(writer, CudaEvent):
        stream.wait(writer)
    elif isinstance(writer, CudaStream) and writer is not stream:
        stream.wait(writer.record())
    if host.nbytes:
        call(driver.init().cuMemcpyDtoHAsync, host.ctypes.data, src.ptr + src_offset,
             host.nbytes, stream.handle)
    stream.synchronize()


def _fmt(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{nbytes} B"


format_bytes = _fmt
