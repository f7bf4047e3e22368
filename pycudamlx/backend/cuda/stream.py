"""CUDA streams and events: MLX streams map to non-blocking CUDA streams, ordered by events."""

from __future__ import annotations

import sys
import threading
from typing import Any

from . import driver
from .driver import CudaDevice, call


class CudaEvent:
    """A point in a stream's work; other streams wait on it on the GPU, the host only if asked."""

    __slots__ = ("device", "handle")

    def __init__(self, device: CudaDevice) -> None:
        cu = driver.init()
        device.activate()
        self.device = device
        self.handle = call(cu.cuEventCreate, cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)

    def synchronize(self) -> None:
        call(driver.init().cuEventSynchronize, self.handle)

    def record(self, stream: "CudaStream") -> None:
        """Move this event to the current end of ``stream``'s work (a stream of its device)."""
        call(driver.init().cuEventRecord, self.handle, stream.handle)

    def query(self) -> bool:
        """True once the GPU has passed this event."""
        cu = driver.init()
        (result,) = cu.cuEventQuery(self.handle)
        if int(result) == int(cu.CUresult.CUDA_ERROR_NOT_READY):
            return False
        driver.raise_for(result, "cuEventQuery")
        return True

    def __del__(self) -> None:
        _destroy(self.handle, "cuEventDestroy")


class TimingEvent:
    """An event that records time, for benchmarks (CUDA events, as torch.cuda.Event)."""

    __slots__ = ("handle",)

    def __init__(self, device: CudaDevice) -> None:
        cu = driver.init()
        device.activate()
        self.handle = call(cu.cuEventCreate, cu.CUevent_flags.CU_EVENT_DEFAULT)

    def record(self, stream: "CudaStream") -> None:
        call(driver.init().cuEventRecord, self.handle, stream.handle)

    def synchronize(self) -> None:
        """Block the host until the GPU has passed this event."""
        call(driver.init().cuEventSynchronize, self.handle)

    def elapsed_ms(self, end: "TimingEvent") -> float:
        cu = driver.init()
        call(cu.cuEventSynchronize, end.handle)
        return float(call(cu.cuEventElapsedTime, self.handle, end.handle))

    def __del__(self) -> None:
        _destroy(self.handle, "cuEventDestroy")


class CudaStream:
    """A non-blocking CUDA stream on one device (never the legacy default stream)."""

    __slots__ = ("device", "handle", "__weakref__")

    def __init__(self, device: CudaDevice) -> None:
        cu = driver.init()
        device.activate()
        self.device = device
        self.handle = call(cu.cuStreamCreate, cu.CUstream_flags.CU_STREAM_NON_BLOCKING)

    def synchronize(self) -> None:
        """Block the host until all work queued on this stream is done."""
        call(driver.init().cuStreamSynchronize, self.handle)

    def record(self) -> CudaEvent:
        event = CudaEvent(self.device)
        event.record(self)
        return event

    def wait(self, event: CudaEvent) -> None:
        """Make later work on this stream wait for ``event``, on the GPU (the host does not block)."""
        call(driver.init().cuStreamWaitEvent, self.handle, event.handle, 0)

    @property
    def address(self) -> int:
        """The raw cudaStream_t, as ``__cuda_array_interface__`` and DLPack consumers want it."""
        return int(self.handle)

    def __repr__(self) -> str:
        return f"CudaStream(device={self.device.index}, handle=0x{int(self.handle):x})"

    def __del__(self) -> None:
        _destroy(self.handle, "cuStreamDestroy")


def _destroy(handle: Any, fn_name: str) -> None:
    """Release a driver object unless the process is shutting down or the context is gone.

    At interpreter exit module globals may already be None: never let a destructor raise.
    """
    try:
        cu = driver._cu
        if cu is None or sys.is_finalizing() or driver._lost is not None:
            return
        getattr(cu, fn_name)(handle)
    except Exception:
        pass


_default_streams: dict[int, CudaStream] = {}
_default_lock = threading.Lock()


def default_stream(device: CudaDevice) -> CudaStream:
    """The library's own default stream for a device (non-blocking, created on first use)."""
    stream = _default_streams.get(device.index)
    if stream is None:
        with _default_lock:
            stream = _default_streams.get(device.index)
            if stream is None:
                stream = _default_streams[device.index] = CudaStream(device)
    return stream
