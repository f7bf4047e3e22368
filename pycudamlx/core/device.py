"""Devices and streams, as MLX names them: ``mx.cpu``, ``mx.gpu``, ``mx.Device``, ``mx.Stream``.

An MLX stream on the GPU maps to a non-blocking CUDA stream (created when first used); the CPU
streams run numpy synchronously. The default device is the GPU where a CUDA device exists, the
CPU otherwise; deciding that initialises the driver, so it happens on first use, not at import.
"""

from __future__ import annotations

import enum
import threading
from typing import Any, Iterator

from ..backend.cuda import driver


class DeviceType(enum.Enum):
    cpu = 0
    gpu = 1

    def __repr__(self) -> str:
        return f"DeviceType.{self.name}"

    def __str__(self) -> str:
        return f"DeviceType.{self.name}"


cpu = DeviceType.cpu
gpu = DeviceType.gpu


class Device:
    """A device: its type and index (``Device(gpu, 0)``)."""

    __slots__ = ("type", "index")

    def __init__(self, type: DeviceType, index: int = 0) -> None:  # noqa: A002 - MLX's name
        if not isinstance(type, DeviceType):
            raise TypeError(f"__init__(): incompatible function arguments: expected a "
                            f"DeviceType, got {type!r}")
        self.type = type
        self.index = int(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeviceType):
            return self.type == other and self.index == 0
        if isinstance(other, Device):
            return self.type == other.type and self.index == other.index
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"Device({self.type.name}, {self.index})"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return (Device, (self.type, self.index))


def _as_device(device: Device | DeviceType) -> Device:
    if isinstance(device, Device):
        return device
    if isinstance(device, DeviceType):
        return Device(device, 0)
    raise TypeError(f"expected a Device or DeviceType, got {type(device).__name__}")


class Stream:
    """An ordered queue of work on one device (``Stream(Device(gpu, 0), 0)``)."""

    __slots__ = ("device", "index", "is_gpu", "_cuda", "__weakref__")

    def __init__(self, index: int, device: Device) -> None:
        self.index = index
        self.device = device
        self.is_gpu = device.type is DeviceType.gpu  # read by the evaluator on every node
        self._cuda: Any = None   # the CUDA stream, created on first GPU use

    def cuda_stream(self) -> Any:
        """The backing CudaStream (the library's default stream for stream 0 of a GPU)."""
        s = self._cuda
        if s is None:
            from ..backend.cuda import stream as cuda_stream

            dev = driver.get_device(self.device.index)
            s = (cuda_stream.default_stream(dev) if self.index == _DEFAULT_INDEX[gpu]
                 else cuda_stream.CudaStream(dev))
            self._cuda = s
        return s

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Stream):
            return self.index == other.index and self.device == other.device
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.index, self.device))

    def __repr__(self) -> str:
        return f"Stream({self.device!r}, {self.index})"

    __str__ = __repr__


_lock = threading.Lock()
_DEFAULT_INDEX = {cpu: 0, gpu: 1}
_next_index = 2
_default_streams: dict[Device, Stream] = {}
_default_device: Device | None = None
_thread = threading.local()


def _gpu_available() -> bool:
    return driver.is_available()


def is_available(device: Device | DeviceType) -> bool:
    """Whether ops can run on this device (the CPU always; the GPU where CUDA has a device)."""
    d = _as_device(device)
    if d.type == cpu:
        return d.index == 0
    if not _gpu_available():
        return False
    return d.index < driver.device_count()


def device_count(device_type: DeviceType) -> int:
    if device_type == cpu:
        return 1
    return driver.device_count() if _gpu_available() else 0


def _check_device(d: Device, fn: str) -> None:
    if d.type == gpu and not _gpu_available():
        raise ValueError(f"[{fn}] Cannot get gpu device without gpu backend.")
    if not is_available(d):
        raise ValueError(f"[{fn}] Device {d!r} is not available.")


def default_device() -> Device:
    """The device ops run on by default: the GPU where one exists, else the CPU."""
    global _default_device
    d = getattr(_thread, "device", None)
    if d is not None:
        return d
    if _default_device is None:
        _default_device = Device(gpu, 0) if _gpu_available() else Device(cpu, 0)
    return _default_device


def set_default_device(device: Device | DeviceType) -> None:
    global _default_device
    d = _as_device(device)
    if d.type == gpu and not _gpu_available():
        raise ValueError("[set_default_device] Cannot set gpu device without gpu backend.")
    _check_device(d, "set_default_device")
    _default_device = d
    _thread.device = None
    _thread.stream = None
    _invalidate_default()


def default_stream(device: Device | DeviceType) -> Stream:
    d = _as_device(device)
    s = _default_streams.get(d)
    if s is not None:
        return s
    if d.type == gpu and not _gpu_available():
        raise ValueError("[default_stream] Cannot get gpu stream without gpu backend.")
    _check_device(d, "default_stream")
    with _lock:
        s = _default_streams.get(d)
        if s is None:
            s = _default_streams[d] = Stream(_DEFAULT_INDEX[d.type] if d.index == 0
                                             else _take_index(), d)
    return s


def set_default_stream(stream: Stream) -> None:
    if not isinstance(stream, Stream):
        raise TypeError(f"set_default_stream expects a Stream, got {type(stream).__name__}")
    _default_streams[stream.device] = stream
    _invalidate_default()


def _take_index() -> int:
    global _next_index
    index = _next_index
    _next_index += 1
    return index


def new_stream(device: Device | DeviceType) -> Stream:
    """A new stream on ``device``; GPU streams run concurrently with the default one."""
    d = _as_device(device)
    if d.type == gpu and not _gpu_available():
        raise ValueError("[new_stream] Cannot make gpu stream without gpu backend.")
    _check_device(d, "new_stream")
    with _lock:
        return Stream(_take_index(), d)


_cached_default: Stream | None = None


def _invalidate_default() -> None:
    global _cached_default
    _cached_default = None


def current_stream() -> Stream:
    """The stream an op without ``stream=`` runs on (hot path: keep it cheap)."""
    global _cached_default
    s = getattr(_thread, "stream", None)
    if s is not None:
        return s
    s = _cached_default
    if s is None:
        s = _cached_default = default_stream(default_device())
    return s


def resolve_stream(stream: Stream | Device | DeviceType | None) -> Stream:
    """The stream for an op's ``stream=`` argument (None: the current default)."""
    if stream is None:
        s = getattr(_thread, "stream", None)
        if s is not None:
            return s
        return _cached_default or current_stream()
    if isinstance(stream, Stream):
        return stream
    if isinstance(stream, (Device, DeviceType)):
        return default_stream(stream)
    raise TypeError(f"stream must be a Stream, Device or DeviceType, got {type(stream).__name__}")


class StreamContext:
    """``with mx.stream(s):`` makes ``s`` (or a device's default stream) the current one."""

    def __init__(self, s: Stream | Device | DeviceType) -> None:
        self._target = s
        self._saved: tuple[Any, Any] | None = None

    def __enter__(self) -> None:
        stream_ = resolve_stream(self._target)
        self._saved = (getattr(_thread, "stream", None), getattr(_thread, "device", None))
        _thread.stream = stream_
        _thread.device = stream_.device
        return None

    def __exit__(self, *exc: object) -> None:
        assert self._saved is not None
        _thread.stream, _thread.device = self._saved


def stream(s: Stream | Device | DeviceType) -> StreamContext:
    return StreamContext(s)


def synchronize(stream: Stream | None = None) -> None:
    """Wait for all work on ``stream`` (default: the current default stream) to finish."""
    s = resolve_stream(stream)
    if s.device.type == gpu and s._cuda is not None:
        s._cuda.synchronize()


def device_info(device: Device | DeviceType | None = None) -> dict[str, Any]:
    """What MLX's ``device_info`` reports, for a CUDA device (or the CPU)."""
    d = _as_device(device) if device is not None else default_device()
    if d.type == cpu:
        import platform

        return {"architecture": platform.machine(), "device_name": platform.processor() or
                platform.machine()}
    dev = driver.get_device(d.index)
    p = dev.properties
    free, total = dev.memory_info()
    return {
        "architecture": p.arch,
        "device_name": p.name,
        "memory_size": p.total_memory,
        "free_memory": free,
        "max_buffer_length": p.total_memory,
        "max_recommended_working_set_size": p.total_memory,
        "compute_capability": f"{p.compute_capability[0]}.{p.compute_capability[1]}",
        "multiprocessor_count": p.multiprocessors,
        "concurrent_managed_access": p.concurrent_managed_access,
    }


def iter_streams() -> Iterator[Stream]:
    return iter(list(_default_streams.values()))
