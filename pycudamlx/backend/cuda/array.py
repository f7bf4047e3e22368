"""GpuArray: the evaluated form of an array whose data lives in GPU-visible memory.

A strided view (buffer, element offset, shape, element strides, dtype) that the kernel launchers
take directly. Conversions to and from numpy live here: a managed buffer is read through a
zero-copy host view after its last writer finished; device memory is copied.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _env
from ... import dtypes as dt
from . import driver, memory
from .stream import CudaStream


def _memory_kind(device: driver.CudaDevice) -> str:
    """managed where the device has concurrent managed access, device memory otherwise.

    PYCUDAMLX_MEMORY=device|managed forces one (device is the mode for WSL, Windows, Jetson).
    """
    forced = _env.get("PYCUDAMLX_MEMORY")  # "", "managed" or "device" (ConfigError if bad)
    if forced:
        return str(forced)
    return memory.MANAGED if device.properties.concurrent_managed_access else memory.DEVICE


_kinds: dict[int, str] = {}


def memory_kind(device: driver.CudaDevice) -> str:
    kind = _kinds.get(device.index)
    if kind is None:
        kind = _kinds[device.index] = _memory_kind(device)
    return kind


_strides_of: dict[tuple[int, ...], tuple[int, ...]] = {}


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of ``shape`` (cached: every result array asks)."""
    strides = _strides_of.get(shape)
    if strides is not None:
        return strides
    if len(_strides_of) > 4096:
        _strides_of.clear()
    strides = _strides_of[shape] = _compute_strides(shape)
    return strides


def _compute_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= shape[i]
    return tuple(strides)


class GpuArray:
    """A strided view of a GPU buffer."""

    __slots__ = ("buffer", "offset", "shape", "strides", "dtype")

    def __init__(self, buffer: memory.Buffer, offset: int, shape: tuple[int, ...],
                 strides: tuple[int, ...], dtype: dt.Dtype) -> None:
        self.buffer = buffer
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype

    @property
    def size(self) -> int:
        n = 1
        for e in self.shape:
            n *= e
        return n

    def is_contiguous(self) -> bool:
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(self.strides)):
            if extent != 1 and stride != expected:
                return False
            expected *= extent
        return True

    def view(self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
             dtype: dt.Dtype | None = None) -> "GpuArray":
        """Another view of the same buffer (no copy)."""
        return GpuArray(self.buffer, offset, shape, strides, dtype or self.dtype)

    # -- host conversion -----------------------------------------------------------------------

    def _span(self) -> tuple[int, int]:
        """The lowest and highest element offsets this view touches in its buffer."""
        lo = hi = self.offset
        for extent, stride in zip(self.shape, self.strides):
            if stride > 0:
                hi += stride * (extent - 1)
            else:
                lo += stride * (extent - 1)
        return lo, hi

    def to_numpy(self, copy: bool = False, view: bool = True) -> np.ndarray:
        """A numpy array of this view: zero-copy for managed memory, a copy for device memory.

        ``copy=True`` asks for an array of our own (``np.array(x)``). ``view=False`` says the
        caller only reads the values (``.item()``, ``tolist()``, a host fallback's inputs), so
        any small read is a copy. Managed pages that are on a device are not pulled over by
        page faults (2-4 GB/s): a copy, or a small read of a large block (or any small read with
        ``view=False``), is a device-to-host copy that leaves them there. A host view of a small
        block would move its page to the host, and the next kernel that touches it would fault
        it back (~60-190 us of GPU time per token in a decode loop reading its token with
        ``.item()``). A view of 2 MiB or more prefetches the range to the host first (11-16
        GB/s). With automatic prefetch off, a managed buffer is always read through a host view
        (the fault path).
        """
        try:  # the slot, not the np_dtype property (~50 ns more on every read of GPU data)
            np_dtype = self.dtype._np_dtype
        except AttributeError:  # bfloat16 before ml_dtypes is imported
            np_dtype = self.dtype.np_dtype
        itemsize = self.dtype.size
        buf = self.buffer
        if self.size == 0:
            return np.empty(self.shape, np_dtype)
        strides = tuple(s * itemsize for s in self.strides)
        if buf.kind == memory.MANAGED:
            if (buf.location != memory.HOST and type(buf) is memory.Buffer
                    and memory._auto_prefetch):
                lo, hi = self._span()
                span = (hi - lo + 1) * itemsize
                if copy or (span < memory.SMALL_READ
                            and (not view or buf.capacity >= memory.PREFETCH_MIN)):
                    return self._copied(lo, hi, copy)
                if span >= memory.PREFETCH_MIN:
                    memory.prefetch_to_host(buf, lo * itemsize, span)
            raw = buf.host_view(np.uint8)
            view = np.ndarray(self.shape, np_dtype, buffer=raw, offset=self.offset * itemsize,
                              strides=strides)
            return np.array(view) if copy else view
        # Device memory: copy the span the view covers, then take the view on the host.
        lo, hi = self._span()
        return self._copied(lo, hi, copy)

    def _copied(self, lo: int, hi: int, contiguous: bool) -> np.ndarray:
        """A host copy of elements lo..hi of the buffer, viewed with this array's layout."""
        itemsize = self.dtype.size
        span = memory.read_to_host(self.buffer, lo * itemsize, (hi - lo + 1) * itemsize)
        view = np.ndarray(self.shape, self.dtype.np_dtype, buffer=span,
                          offset=(self.offset - lo) * itemsize,
                          strides=tuple(s * itemsize for s in self.strides))
        if contiguous and not view.flags.c_contiguous:
            return np.ascontiguousarray(view)
        return view

    def __repr__(self) -> str:
        return (f"GpuArray(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype.name}, {self.buffer!r})")


def empty(shape: tuple[int, ...], dtype: dt.Dtype, stream: CudaStream) -> GpuArray:
    """A new contiguous array whose first user is ``stream``."""
    n = dtype.size
    for e in shape:
        n *= e
    device = stream.device
    kind = _kinds.get(device.index) or memory_kind(device)
    return GpuArray(memory.allocate(n, device, kind, stream), 0, shape,
                    _strides_of.get(shape) or contiguous_strides(shape), dtype)


def device_scratch(shape: tuple[int, ...], dtype: dt.Dtype, stream: CudaStream) -> GpuArray:
    """A temporary in device memory (never managed: no page migration, no host access) that
    only ``stream``'s kernels touch, so its block is reused once they are done."""
    n = dtype.size
    for e in shape:
        n *= e
    buf = memory.allocate(n, stream.device, memory.DEVICE, stream)
    buf.last_use = stream
    return GpuArray(buf, 0, shape, contiguous_strides(shape), dtype)


def from_numpy(host: np.ndarray, dtype: dt.Dtype, stream: CudaStream) -> GpuArray:
    """Upload a numpy array (already of ``dtype``'s numpy type) to ``stream``'s device.

    A small array (SMALL_UPLOAD_MAX, 64 KiB, at most) is copied in stream order through the
    pinned upload ring: the host never waits for the GPU to finish with the pooled block.
    Managed memory: a large array (8 MiB and more) is copied into a block prefetched to the
    device, through the pinned staging buffers (31 GB/s against 7 for writing managed pages from
    the host and prefetching them); a smaller one is written from the host, and its block (2 MiB
    and more) prefetched to the device. Device memory: an explicit copy (staged when large).
    With automatic prefetch off, managed uploads are plain host writes (the fault path).
    """
    host = np.ascontiguousarray(host)
    shape = tuple(host.shape)
    device = stream.device
    kind = memory_kind(device)
    nbytes = host.nbytes
    if nbytes <= memory.SMALL_UPLOAD_MAX and memory._auto_prefetch:
        buf = memory.upload_small(host, device, kind, stream)
    elif kind == memory.MANAGED and (nbytes < memory.STAGE_MIN or not memory._auto_prefetch):
        buf = memory.allocate(nbytes, device, kind, None)
        if nbytes:
            view = buf.host_view(np.uint8, (nbytes,))
            memory.parallel_copy(view, host.reshape(-1).view(np.uint8))
            if memory._auto_prefetch and buf.capacity >= memory.PREFETCH_MIN:
                buf.prefetch(device.index, stream)
    else:
        buf = memory.allocate(nbytes, device, kind, stream)
        memory.copy_host_to_device(buf, host, stream)
    return GpuArray(buf, 0, shape, contiguous_strides(shape), dtype)
