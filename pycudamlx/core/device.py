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

__all__ = [
    "Device", "DeviceType", "Stream", "StreamContext", "ThreadLocalStream", "cpu", "gpu",
    "default_device", "set_default_device", "default_stream", "set_default_stream",
    "new_stream", "new_thread_local_stream", "new_thread_unsafe_stream", "stream",
    "synchronize", "is_available", "device_count", "device_info", "clear_streams",
]


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
            # nanobind converts the enum's integer values too (Device(0) is Device(cpu, 0)).
            if isinstance(type, int) and not isinstance(type, bool) and type in (0, 1):
                type = DeviceType(type)  # noqa: A001
            else:
                raise _bad_args("__init__(self, type: mlx.core.DeviceType, index: int = 0) "
                                "-> None", type)
        if not isinstance(index, int) or isinstance(index, bool):
            raise _bad_args("__init__(self, type: mlx.core.DeviceType, index: int = 0) -> None",
                            type, index)
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


def _bad_args(signature: str, *args: object) -> TypeError:
    from ..dtypes import _incompatible_arguments

    return _incompatible_arguments(signature, *args)


def _as_device(device: Device | DeviceType, fn: str = "function") -> Device:
    if isinstance(device, Device):
        return device
    if isinstance(device, DeviceType):
        return Device(device, 0)
    raise _bad_args(_DEVICE_SIGNATURES.get(fn, f"{fn}(device: Device | DeviceType)"), device)


#: nanobind's signature line of each function that takes a device.
_DEVICE_SIGNATURES = {
    **{f"{fn}": f"{fn}(device: Device | DeviceType) -> {ret}" for fn, ret in (
        ("is_available", "bool"), ("set_default_device", "None"), ("default_stream", "Stream"),
        ("new_stream", "Stream"), ("new_thread_local_stream", "ThreadLocalStream"),
        ("new_thread_unsafe_stream", "Stream"))},
    "device_info": "device_info(d: None | Device | DeviceType = None) -> dict[str, str | int]",
}


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
            own = self.index == _own_default_index.get(self.device)
            s = cuda_stream.default_stream(dev) if own else cuda_stream.CudaStream(dev)
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
#: Stream numbers, as MLX's scheduler hands them out: one counter for every device, a device's
#: default stream numbered when it is first asked for (by the first op on that device), so a
#: new_stream made before any op is Stream(cpu, 0).
_next_index = 0
_default_streams: dict[Device, Stream] = {}
#: The number of each device's own default stream (set_default_stream does not change it): a
#: GPU's is backed by the library's default CUDA stream.
_own_default_index: dict[Device, int] = {}
_default_device: Device | None = None


class _ThreadState(threading.local):
    """Per-thread defaults; class attributes make a thread's first read a plain attribute hit
    (a ``getattr(local, name, None)`` miss costs about a microsecond on every op call)."""

    stream: "Stream | None" = None
    device: "Device | None" = None
    owned: "list | None" = None


_thread = _ThreadState()


def _gpu_available() -> bool:
    return driver.is_available()


def is_available(device: Device | DeviceType) -> bool:
    """Whether ops can run on this device (the CPU always; the GPU where CUDA has a device)."""
    d = _as_device(device, "is_available")
    if d.type == cpu:
        return d.index == 0
    if not _gpu_available():
        return False
    return d.index < driver.device_count()


def device_count(device_type: DeviceType) -> int:
    """The number of available devices of this type (cpu: 1; gpu: the CUDA devices)."""
    if not isinstance(device_type, DeviceType):
        raise _bad_args("device_count(device_type: mlx.core.DeviceType) -> int", device_type)
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
    """Set the default device (for every thread; ``with mx.stream`` still overrides it)."""
    global _default_device
    d = _as_device(device, "set_default_device")
    if d.type == gpu and not _gpu_available():
        raise ValueError("[set_default_device] Cannot set gpu device without gpu backend.")
    _check_device(d, "set_default_device")
    _default_device = d
    _thread.device = None
    _thread.stream = None
    _invalidate_default()


def default_stream(device: Device | DeviceType) -> Stream:
    """The device's default stream (inside ``with mx.stream(s)``: ``s`` for ``s``'s device)."""
    d = _as_device(device, "default_stream")
    ctx = getattr(_thread, "stream", None)
    if ctx is not None and ctx.device == d:
        return ctx
    s = _default_streams.get(d)
    if s is not None:
        return s
    if d.type == gpu and not _gpu_available():
        raise ValueError("[default_stream] Cannot get gpu stream without gpu backend.")
    _check_device(d, "default_stream")
    with _lock:
        s = _default_streams.get(d)
        if s is None:
            s = _default_streams[d] = Stream(_take_index(), d)
            _own_default_index.setdefault(d, s.index)
    return s


def set_default_stream(stream: Stream) -> None:
    """Make ``stream`` the default for its device (the default device does not change)."""
    if not isinstance(stream, Stream):
        raise _bad_args("set_default_stream(stream: mlx.core.Stream) -> None", stream)
    _default_streams[stream.device] = stream
    _invalidate_default()


def _take_index() -> int:
    """The next stream number (the caller holds ``_lock``)."""
    global _next_index
    index = _next_index
    _next_index += 1
    return index


def new_stream(device: Device | DeviceType) -> Stream:
    """A new stream on ``device``; GPU streams run concurrently with the default one."""
    d = _as_device(device, "new_stream")
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


class ThreadLocalStream:
    """A stream that is a different :class:`Stream` in each thread that uses it (created on
    first use in that thread), for running ops on a device from several threads."""

    __slots__ = ("device", "index", "_local", "__weakref__")

    def __init__(self, device: Device, index: int) -> None:
        self.device = device
        self.index = index
        self._local = threading.local()

    def stream(self) -> Stream:
        """This thread's stream."""
        s = getattr(self._local, "stream", None)
        if s is None:
            s = self._local.stream = new_stream(self.device)
            _thread_owned().append((self, s))
        return s

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ThreadLocalStream):
            return self is other
        return NotImplemented

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"ThreadLocalStream({self.device!r}, {self.index})"

    __str__ = __repr__


_next_thread_local_index = 0


def _thread_owned() -> list:
    owned = getattr(_thread, "owned", None)
    if owned is None:
        owned = _thread.owned = []
    return owned


def new_thread_local_stream(device: Device | DeviceType) -> ThreadLocalStream:
    """Make a new stream that will be unique per thread."""
    global _next_thread_local_index
    d = _as_device(device, "new_thread_local_stream")
    if d.type == gpu and not _gpu_available():
        raise ValueError("[new_thread_local_stream] Cannot make gpu stream without gpu backend.")
    _check_device(d, "new_thread_local_stream")
    with _lock:
        index = _next_thread_local_index
        _next_thread_local_index += 1
    return ThreadLocalStream(d, index)


def new_thread_unsafe_stream(device: Device | DeviceType) -> Stream:
    """Make a new stream that can be used in any thread (every stream of ours can)."""
    return new_stream(_as_device(device, "new_thread_unsafe_stream"))


def clear_streams() -> None:
    """Destroy the streams created in the current thread (its thread-local streams); streams
    made with ``new_stream`` stay valid."""
    for tls, s in _thread_owned():
        if getattr(tls._local, "stream", None) is s:
            tls._local.stream = None
            if s._cuda is not None:
                s._cuda.synchronize()
    _thread.owned = []


def resolve_stream(stream: Stream | Device | DeviceType | ThreadLocalStream | None) -> Stream:
    """The stream for an op's ``stream=`` argument (None: the current default)."""
    if stream is None:
        s = _thread.stream
        if s is not None:
            return s
        return _cached_default or current_stream()
    if isinstance(stream, Stream):
        return stream
    if isinstance(stream, (Device, DeviceType)):
        return default_stream(stream)
    if isinstance(stream, ThreadLocalStream):
        return stream.stream()
    if type(stream) in (int, bool) and stream in (0, 1):
        # nanobind converts an int to the DeviceType enum it names (stream=0 is the CPU)
        return default_stream(DeviceType(int(stream)))
    from ._nanobind import stream_argument_error

    raise stream_argument_error(
        "incompatible function arguments: stream must be a Stream, ThreadLocalStream, Device or "
        f"DeviceType (or None), not {type(stream).__name__}")


_STREAM_LIKE = (Stream, ThreadLocalStream, Device, DeviceType)


class StreamContext:
    """``with mx.stream(s):`` makes ``s`` (or a device's default stream) the default stream of
    its device and that device the default device, in this thread, until the block ends."""

    def __init__(self, s: Stream | ThreadLocalStream | Device | DeviceType) -> None:
        if not isinstance(s, _STREAM_LIKE):
            raise _bad_args("__init__(self, s: mlx.core.Stream | mlx.core.ThreadLocalStream | "
                            "mlx.core.Device | mlx.core.DeviceType) -> None", s)
        self._stream = resolve_stream(s)
        self._saved: list[tuple[Any, Any]] = []

    def __enter__(self) -> None:
        self._saved.append((getattr(_thread, "stream", None), getattr(_thread, "device", None)))
        _thread.stream = self._stream
        _thread.device = self._stream.device
        return None

    def __exit__(self, *exc: object) -> None:
        _thread.stream, _thread.device = self._saved.pop()


def stream(s: Stream | ThreadLocalStream | Device | DeviceType) -> StreamContext:
    """Create a context manager to set the default device and stream."""
    if not isinstance(s, _STREAM_LIKE):
        raise _bad_args("stream(s: mlx.core.Stream | mlx.core.ThreadLocalStream | "
                        "mlx.core.Device | mlx.core.DeviceType) -> mlx.core.StreamContext", s)
    return StreamContext(s)


def synchronize(stream: Stream | ThreadLocalStream | Device | DeviceType | None = None) -> None:
    """Wait for all work on ``stream`` (a device: its default stream; None: the default
    stream of the default device) to finish."""
    if stream is not None and not isinstance(stream, _STREAM_LIKE):
        raise _bad_args("synchronize(stream: mlx.core.Stream | mlx.core.ThreadLocalStream | "
                        "mlx.core.Device | mlx.core.DeviceType | None = None) -> None", stream)
    s = resolve_stream(stream)
    if s.device.type == gpu and s._cuda is not None:
        s._cuda.synchronize()


def _gpu_extra_info(dev: Any) -> dict[str, Any]:
    """uuid and pci_bus_id as MLX's CUDA backend reports them (best effort)."""
    out: dict[str, Any] = {}
    try:
        cu = driver.init()
        uuid = driver.call(cu.cuDeviceGetUuid, dev.handle)
        raw = bytes(uuid.bytes) if hasattr(uuid, "bytes") else bytes(uuid)
        h = raw[:16].ljust(16, b"\0").hex()
        out["uuid"] = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    except Exception:
        pass
    try:
        cu = driver.init()
        attr = cu.CUdevice_attribute

        def get(name: str) -> int:
            return int(driver.call(cu.cuDeviceGetAttribute, getattr(attr, name), dev.handle))

        out["pci_bus_id"] = "%04x:%02x:%02x.0" % (
            get("CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID"), get("CU_DEVICE_ATTRIBUTE_PCI_BUS_ID"),
            get("CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID"))
    except Exception:
        pass
    return out


def _cpu_name() -> str:
    """The CPU's brand string as MLX's CPU backend reports it: /proc/cpuinfo's first "model
    name" line on Linux (after ": "), machdep.cpu.brand_string on macOS, else the
    architecture (uname's machine)."""
    import platform
    import subprocess
    import sys

    if sys.platform == "darwin":
        try:
            name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                  capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            name = ""
        if name:
            return name
    elif sys.platform != "win32":
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("model name"):
                        n = line.find(": ")
                        if n >= 0:
                            return line[n + 2:].rstrip("\n")
        except OSError:
            pass
    return platform.machine() or "unknown"


def device_info(d: Device | DeviceType | None = None) -> dict[str, Any]:
    """Information about a device (default: the default device).

    A CUDA device reports MLX's CUDA keys (device_name, architecture ``sm_90``, uuid,
    pci_bus_id, compute_capability_major/minor, free_memory, total_memory) plus the Metal keys
    scripts read (memory_size, max_buffer_length, max_recommended_working_set_size) and ours
    (multiprocessor_count, concurrent_managed_access). The CPU: architecture and device_name.
    A GPU where there is none: {} (as MLX).
    """
    dev_ = _as_device(d, "device_info") if d is not None else default_device()
    if dev_.type == cpu:
        import platform

        return {"architecture": platform.machine(), "device_name": _cpu_name()}
    if not is_available(dev_):
        return {}
    dev = driver.get_device(dev_.index)
    p = dev.properties
    free, total = dev.memory_info()
    return {
        "device_name": p.name,
        "architecture": p.arch,
        **_gpu_extra_info(dev),
        "compute_capability_major": p.compute_capability[0],
        "compute_capability_minor": p.compute_capability[1],
        "free_memory": free,
        "total_memory": total,
        "memory_size": p.total_memory,
        "max_buffer_length": p.total_memory,
        "max_recommended_working_set_size": p.total_memory,
        "multiprocessor_count": p.multiprocessors,
        "concurrent_managed_access": p.concurrent_managed_access,
    }


def iter_streams() -> Iterator[Stream]:
    return iter(list(_default_streams.values()))
