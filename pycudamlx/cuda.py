"""``pycudamlx.cuda``: managed-memory hints and counters (beyond MLX's API).

pycudamlx already prefetches on its own (docs/memory.md): inputs to the device before a kernel,
results to the host before numpy reads them. These functions are for what it cannot guess:

* ``prefetch(x, "gpu")`` moves an array's pages to a GPU ahead of time, e.g. on a side stream
  while other work runs; ``prefetch(x, "cpu")`` before host code walks a large result. After
  writing through a numpy view that you keep (``v = np.asarray(x); v[...] = ...``), prefetch to
  the GPU tells the library the pages are on the host again (taking the view again does too).
* ``advise(x, read_mostly=True)`` lets the host and the GPU each keep a read-only copy of data
  both read often (a lookup table); ``preferred_location`` pins where pages live;
  ``accessed_by`` maps them for a device without moving them.
* ``set_auto_prefetch(False)`` turns the automatic prefetches off, to measure the fault path.

Hints act on whole blocks of 2 MiB or more (arrays of 1 MiB and more), which the allocator keeps
on 2 MiB boundaries, so a hint never moves another array's pages; smaller arrays share pages
with their neighbours, migrate cheaply by faults, and are left alone (``prefetch`` and ``advise``
return False). In device mode (no managed memory: ``memory_mode() == "device"``) arrays are
always on their GPU and host reads copy: ``prefetch`` does nothing (False), ``advise`` raises.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["prefetch", "advise", "set_auto_prefetch", "auto_prefetch", "memory_stats",
           "memory_mode"]


def _memory() -> Any:
    from .backend.cuda import memory

    return memory


def _location(device: Any, arg: str) -> int | None:
    """A device index, or None for the host, from "gpu" / "cpu" / "gpu:N" / mx.Device."""
    from .core import device as dev

    if isinstance(device, str):
        name = device.strip().lower()
        if name == "cpu":
            return None
        if name in ("gpu", "cuda"):
            return _gpu_index(dev.Device(dev.gpu, 0), arg)
        for prefix in ("gpu:", "cuda:"):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                return _gpu_index(dev.Device(dev.gpu, int(name[len(prefix):])), arg)
        raise ValueError(f"{arg} must be 'gpu', 'cpu', 'gpu:N' or an mx.Device, not {device!r}")
    if isinstance(device, dev.DeviceType):
        device = dev.Device(device, 0)
    if isinstance(device, dev.Device):
        if device.type is dev.cpu:
            return None
        return _gpu_index(device, arg)
    raise TypeError(f"{arg} must be 'gpu', 'cpu', 'gpu:N' or an mx.Device, not "
                    f"{type(device).__name__}")


def _gpu_index(device: Any, arg: str) -> int:
    from .backend.cuda import driver

    reason = driver.unavailable_reason()
    if reason is not None:
        raise ValueError(f"{arg}: no GPU is available ({reason})")
    count = driver.device_count()
    if not 0 <= device.index < count:
        raise ValueError(f"{arg}: GPU {device.index} does not exist (this machine has {count})")
    return device.index


def _check_array(x: Any, fn: str) -> Any:
    from .core.array import array

    if not isinstance(x, array):
        raise TypeError(f"{fn}() takes an mx.array, not {type(x).__name__}")
    if x._data is None:
        from .graph.evaluate import evaluate

        evaluate((x,))
    return x


def _cuda_stream(stream: Any, index: int) -> Any:
    """The CUDA stream to order a hint on: ``stream`` (a GPU stream or device), else the
    default stream of GPU ``index``."""
    from .core import device as dev

    if stream is None:
        s = dev.default_stream(dev.Device(dev.gpu, index))
    else:
        s = dev.resolve_stream(stream)
        if not s.is_gpu:
            raise ValueError(f"stream must be a GPU stream or device, not {s!r}")
    return s.cuda_stream()


def prefetch(array: Any, device: Any = "gpu", stream: Any = None) -> bool:
    """Move ``array``'s pages to ``device`` ("gpu", "cpu", "gpu:N" or an mx.Device), ordered on
    ``stream`` (a GPU stream; default: the target GPU's default stream, or the writer's stream
    for the CPU). Returns True when a prefetch was issued.

    The array is evaluated first. An array computed on the CPU (numpy data) prefetched to a GPU
    is uploaded there (later GPU ops use that copy). Nothing is issued (False) for a block
    smaller than 2 MiB, for device memory (device mode: always on its GPU), for memory another
    library owns, or when the pages are already there.
    """
    import numpy as np

    x = _check_array(array, "prefetch")
    target = _location(device, "device")
    data = x._data
    if isinstance(data, np.ndarray):
        if target is None or x.size == 0:
            return False
        from .backend.cuda.array import from_numpy

        s = _cuda_stream(stream, target)
        s.device.activate()
        x._data = from_numpy(data, x._dtype, s)  # managed memory serves the host too
        return True
    mem = _memory()
    buf = data.buffer
    if buf.kind != mem.MANAGED or type(buf) is not mem.Buffer or buf.capacity < mem.PREFETCH_MIN:
        return False
    buf.device.activate()
    if target is None:
        if buf.location == mem.HOST:
            return False
        if stream is None:
            mem.prefetch_to_host(buf)
        else:
            s = _cuda_stream(stream, buf.device.index)
            _after_writer(buf, s)
            buf.prefetch(mem.HOST, s)
        return True
    if target != buf.device.index:
        raise ValueError(f"this array lives on GPU {buf.device.index}; prefetching it to GPU "
                         f"{target} is not supported")
    s = _cuda_stream(stream, target)
    _after_writer(buf, s)
    buf.prefetch(target, s)
    return True


def _after_writer(buf: Any, s: Any) -> None:
    writer = buf.last_write
    if writer is not None and writer is not s:
        s.wait(writer.record() if hasattr(writer, "record") else writer)


def _locations(value: Any, arg: str) -> list[int | None]:
    if isinstance(value, (list, tuple, set)):
        return [_location(v, arg) for v in value]
    return [_location(value, arg)]


def advise(array: Any, read_mostly: bool | None = None, preferred_location: Any = None,
           accessed_by: Any = None) -> bool:
    """Give the driver a hint about how ``array``'s managed memory is used.

    read_mostly: True sets, False removes the read-mostly hint (each processor that reads keeps
        a copy; a write invalidates the others).
    preferred_location: "gpu", "cpu", "gpu:N" or an mx.Device sets where pages should stay;
        False removes it.
    accessed_by: a device (or a list) whose page tables map the pages wherever they are, so it
        reads them without faults; False removes it for the array's GPU and the host.

    None leaves a hint unchanged. Returns True when a hint was applied, False for an array in a
    block smaller than 2 MiB (it shares pages with other arrays). Raises ValueError for an array
    in device memory (device mode), on the CPU, or owned by another library.
    """
    import numpy as np

    x = _check_array(array, "advise")
    for name, value in (("read_mostly", read_mostly),):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{name} must be True, False or None, not {type(value).__name__}")
    prefs = None if preferred_location is None or preferred_location is False else \
        _location(preferred_location, "preferred_location")
    access = [] if accessed_by is None or accessed_by is False else \
        _locations(accessed_by, "accessed_by")
    data = x._data
    if isinstance(data, np.ndarray):
        raise ValueError("advise(): this array is in host memory (it was computed on the CPU); "
                         "compute it on a GPU stream, or prefetch(x, 'gpu') it first")
    mem = _memory()
    buf = data.buffer
    if type(buf) is not mem.Buffer:
        raise ValueError("advise(): this array's memory belongs to another library (a DLPack or "
                         "__cuda_array_interface__ import); advise it there")
    if buf.kind != mem.MANAGED:
        raise ValueError("advise(): this array is in GPU device memory (device mode, "
                         "PYCUDAMLX_MEMORY=device or a GPU without concurrent managed access); "
                         "memory advice applies to managed memory only")
    if buf.capacity < mem.PREFETCH_MIN:
        return False
    gpu = buf.device.index
    buf.device.activate()
    if read_mostly is not None:
        mem.advise(buf, "read_mostly", gpu, unset=not read_mostly)
    if preferred_location is False:
        mem.advise(buf, "preferred_location", gpu, unset=True)
    elif preferred_location is not None:
        mem.advise(buf, "preferred_location", prefs)
    if accessed_by is False:
        for where in (gpu, None):
            mem.advise(buf, "accessed_by", where, unset=True)
    else:
        for where in access:
            mem.advise(buf, "accessed_by", where)
    return True


def set_auto_prefetch(enabled: bool) -> bool:
    """Turn the automatic prefetches and copy fast paths on or off; returns the previous state.

    Off, managed memory behaves as in MLX's CUDA backend: pages move only by page faults (GPU
    kernels reading host-written data, numpy reading GPU results). Meant for measuring.
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be True or False, not {type(enabled).__name__}")
    return _memory().set_auto_prefetch(enabled)


def auto_prefetch() -> bool:
    """Whether automatic prefetching is on (the default; PYCUDAMLX_AUTO_PREFETCH=0 starts it
    off)."""
    return _memory().auto_prefetch_enabled()


def memory_mode(device: Any = "gpu") -> str:
    """"managed" or "device": how arrays on that GPU are allocated (PYCUDAMLX_MEMORY forces
    one; the default is managed where the GPU has concurrent managed access)."""
    from .backend.cuda import array as gpu_array
    from .backend.cuda import driver

    index = _location(device, "device")
    if index is None:
        raise ValueError("memory_mode() is about a GPU, not the CPU")
    return gpu_array.memory_kind(driver.get_device(index))


def memory_stats() -> dict[str, Any]:
    """The allocator's counters (a snapshot): bytes in use (GPU, host), peak, cached, managed
    and device bytes from the driver, allocations, pool hits, prefetches issued and bytes
    moved, advice calls, host copies, staged bytes, pinned bytes, out-of-memory retries and limit
    refusals; plus the automatic-prefetch switch and the limits."""
    from .backend import memstats

    with memstats.lock:
        out = dataclasses.asdict(memstats.stats)
    out["managed_on_device"] = dict(out["managed_on_device"])
    mem = _memory()
    out["auto_prefetch"] = mem.auto_prefetch_enabled()
    out["memory_limit"] = memstats.memory_limit
    out["cache_limit"] = memstats.cache_limit
    return out

