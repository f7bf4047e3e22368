"""GpuArray: the evaluated form of an array whose data lives in GPU-visible memory.

A strided view (buffer, element offset, shape, element strides, dtype) that the kernel launchers
take directly. Conversions to and from numpy live here: a managed buffer is read through a
zero-copy host view after its last writer finished; device memory is copied.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ... import dtypes as dt
from . import driver, memory
from .stream import CudaStream


def _memory_kind(device: driver.CudaDevice) -> str:
    """managed where the device has concurrent managed access, device memory otherwise.

    PYCUDAMLX_MEMORY=device|managed forces one (device is the mode for WSL, Windows, Jetson).
    """
    forced = os.environ.get("PYCUDAMLX_MEMORY", "").strip().lower()
    if forced in (memory.MANAGED, memory.DEVICE):
        return forced
    return memory.MANAGED if device.properties.concurrent_managed_access else memory.DEVICE


_kinds: dict[int, str] = {}


def memory_kind(device: driver.CudaDevice) -> str:
    kind = _kinds.get(device.index)
    if kind is None:
        kind = _kinds[device.index] = _memory_kind(device)
    return kind


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
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

    def to_numpy(self) -> np.ndarray:
        """A numpy array of this view: zero-copy for managed memory, a copy for device memory."""
        np_dtype = self.dtype.np_dtype
        itemsize = self.dtype.size
        buf = self.buffer
        if self.size == 0:
            return np.empty(self.shape, np_dtype)
        if buf.kind == memory.MANAGED:
            raw = buf.host_view(np.uint8)
            return np.ndarray(self.shape, np_dtype, buffer=raw, offset=self.offset * itemsize,
                              strides=tuple(s * itemsize for s in self.strides))
        # Device memory: copy the span the view covers, then take the view on the host.
        lo = hi = self.offset
        for extent, stride in zip(self.shape, self.strides):
            if stride > 0:
                hi += stride * (extent - 1)
            else:
                lo += stride * (extent - 1)
        span = np.empty((hi - lo + 1) * itemsize, np.uint8)
        from .stream import default_stream

        memory.copy_device_to_host(span, buf, default_stream(buf.device), src_offset=lo * itemsize)
        return np.ndarray(self.shape, np_dtype, buffer=span, offset=(self.offset - lo) * itemsize,
                          strides=tuple(s * itemsize for s in self.strides))

    def __repr__(self) -> str:
        return (f"GpuArray(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype.name}, {self.buffer!r})")


def empty(shape: tuple[int, ...], dtype: dt.Dtype, stream: CudaStream) -> GpuArray:
    """A new contiguous array whose first user is ``stream``."""
    n = 1
    for e in shape:
        n *= e
    device = stream.device
    buf = memory.allocate(n * dtype.size, device, memory_kind(device), stream)
    return GpuArray(buf, 0, shape, contiguous_strides(shape), dtype)


def from_numpy(host: np.ndarray, dtype: dt.Dtype, stream: CudaStream) -> GpuArray:
    """Upload a numpy array (already of ``dtype``'s numpy type) to ``stream``'s device."""
    host = np.ascontiguousarray(host)
    shape = host.shape
    device = stream.device
    kind = memory_kind(device)
    buf = memory.allocate(host.nbytes, device, kind, None)
    if kind == memory.MANAGED:
        if host.nbytes:
            view = buf.host_view(np.uint8, (host.nbytes,))
            view[:] = host.reshape(-1).view(np.uint8)
            buf.prefetch(device.index, stream)
    else:
        memory.copy_host_to_device(buf, host, stream)
    return GpuArray(buf, 0, tuple(shape), contiguous_strides(tuple(shape)), dtype)
