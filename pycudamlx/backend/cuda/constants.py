"""Small host values on the GPU without a host synchronization: a per-device constant cache.

Python scalars (``x * 0.5``, ``lr * g``), keys of ``mx.random`` and other host arrays of at most
8 bytes become one-element GPU arrays. Uploading them like any numpy array would take a pooled
block that a kernel may still be reading, so the host would first wait for the stream (one host
sync per op in a batched chain), and writing managed pages from the host would move them there and
back. Instead the value is written by the GPU itself, in stream order, with ``cuMemsetD8/D16/D32
Async`` (an 8-byte value is two 32-bit words): no host buffer to keep alive, no wait.

Values seen before cost a dict lookup: each distinct (device, dtype, bytes) gets a 16-byte slot in
a slab of device memory owned by this module, outside the pool and the memory statistics (as
cuBLAS's workspaces: library bookkeeping, not arrays; a slab is 64 KiB and at most
``MAX_SLABS`` exist per device). The cached arrays are read-only by construction: kernels write
only their fresh outputs. Once the slabs are full, new values go to pool blocks, still written
in stream order.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ... import dtypes as dt
from . import driver, memory
from .stream import CudaStream

SLOT = 16
SLAB_SLOTS = 4096
MAX_SLABS = 4
#: The largest value written by memsets (two 32-bit words).
MAX_BYTES = 8


class ConstantBuffer(memory.Buffer):
    """A slot of a constant slab: device memory the pool never sees and nothing frees early."""

    __slots__ = ("slab",)

    def __init__(self, ptr: int, nbytes: int, device: driver.CudaDevice, slab: "_Slab") -> None:
        super().__init__(ptr, nbytes, memory.DEVICE, device, SLOT)
        self.slab = slab
        self.counted = memory.HOST

    def set_location(self, location: int) -> None:  # device memory: always on its device
        pass

    def free(self) -> None:  # the slab owns the memory
        self.ptr = 0


class _Slab:
    """SLAB_SLOTS slots of one cuMemAlloc, handed out in order, freed with the process."""

    __slots__ = ("ptr", "used", "__weakref__")

    def __init__(self, device: driver.CudaDevice) -> None:
        device.activate()
        self.ptr = int(driver.call(driver.init().cuMemAlloc, SLOT * SLAB_SLOTS))
        self.used = 0
        weakref.finalize(self, _free_slab, self.ptr)


def _free_slab(ptr: int) -> None:
    import sys

    cu = driver._cu
    if cu is None or sys.is_finalizing() or driver._lost is not None:
        return
    try:
        cu.cuMemFree(ptr)
    except Exception:  # never raise from a finalizer
        pass


_cache: dict[tuple[int, dt.Dtype, bytes], Any] = {}
_slabs: dict[int, list[_Slab]] = {}


def write(ptr: int, raw: bytes, stream: CudaStream) -> None:
    """Write ``raw`` (1, 2, 4 or 8 bytes) at ``ptr`` in ``stream``'s order."""
    cu = driver._cu
    n = len(raw)
    h = stream.handle
    if n == 4:
        value = int.from_bytes(raw, "little")
        driver.call(cu.cuMemsetD32Async, ptr, value, 1, h)
    elif n == 8:
        driver.call(cu.cuMemsetD32Async, ptr, int.from_bytes(raw[:4], "little"), 1, h)
        driver.call(cu.cuMemsetD32Async, ptr + 4, int.from_bytes(raw[4:], "little"), 1, h)
    elif n == 2:
        driver.call(cu.cuMemsetD16Async, ptr, int.from_bytes(raw, "little"), 1, h)
    elif n == 1:
        driver.call(cu.cuMemsetD8Async, ptr, raw[0], 1, h)
    else:
        raise ValueError(f"a constant is 1, 2, 4 or 8 bytes, not {n}")


def _slot(device: driver.CudaDevice) -> tuple[int, _Slab] | None:
    slabs = _slabs.get(device.index)
    if slabs is None:
        slabs = _slabs[device.index] = []
    if not slabs or slabs[-1].used == SLAB_SLOTS:
        if len(slabs) == MAX_SLABS:
            return None
        slabs.append(_Slab(device))
    slab = slabs[-1]
    ptr = slab.ptr + SLOT * slab.used
    slab.used += 1
    return ptr, slab


def upload(host: np.ndarray, dtype: dt.Dtype, stream: CudaStream) -> Any:
    """A GpuArray of ``host``'s shape and value (at most MAX_BYTES bytes), written on the GPU in
    ``stream``'s order; cached per value, so a repeated scalar costs one dict lookup.

    The buffer's ``last_write`` stays the stream that wrote it, so readers on other streams and
    host reads order themselves after the write as they do for any GPU buffer."""
    from .array import GpuArray, contiguous_strides, memory_kind

    raw = host.tobytes()
    device = stream.device
    key = (device.index, dtype, raw, host.shape)
    g = _cache.get(key)
    if g is not None:
        # written on another stream: this one waits, on the GPU, once (None: a host read
        # already waited for the write)
        memory.order_after_write(g.buffer, stream)
        return g
    shape = tuple(host.shape)
    # While a CUDA graph is captured the write is recorded, not run: the value goes to a block
    # of the graph's own pool (rewritten at each replay), never to the shared cache.
    slot = None if memory.capturing() else _slot(device)
    if slot is None:  # the slabs are full: a pool block, still written in stream order
        buf = memory.allocate(len(raw), device, memory_kind(device), stream)
        write(buf.ptr, raw, stream)
        buf.last_write = stream
        buf.set_location(device.index)
        return GpuArray(buf, 0, shape, contiguous_strides(shape), dtype)
    ptr, slab = slot
    write(ptr, raw, stream)
    buf = ConstantBuffer(ptr, len(raw), device, slab)
    buf.last_write = stream
    g = GpuArray(buf, 0, shape, contiguous_strides(shape), dtype)
    _cache[key] = g
    return g


def reset() -> None:
    """Forget every cached value (tests; the slabs stay until the process ends)."""
    _cache.clear()
