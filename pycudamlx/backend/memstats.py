"""Memory counters shared by both backends: every buffer an array holds is counted here.

GPU buffers are counted by backend/cuda/memory.py as they are allocated and freed. The CPU
backend's buffers are numpy arrays; ``track_host`` counts the memory block behind one (once, however
many views of it exist) and a weak reference's callback uncounts it when numpy frees it, so the
statistics follow CPU arrays with no work at free time beyond that callback. Importing this module
never touches CUDA.

The limits (``memory_limit``, ``cache_limit``) live here too, so the public API can read and set
them on a machine without a GPU; None means the default (see core/memory.py).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np


@dataclass
class MemoryStats:
    """Counters over every buffer of this process (MLX's statistics, the guard, and tests).

    ``active_bytes`` counts GPU buffers in use (their requested sizes) and ``host_bytes`` the
    numpy buffers held by evaluated CPU arrays; ``peak_bytes`` is the peak of their sum (MLX's
    peak memory). ``cached_bytes`` counts GPU blocks the pool keeps for reuse; ``managed_bytes``
    and ``device_bytes`` what the driver has handed us (in use or cached), which the
    oversubscription guard and the memory limit account for; ``managed_on_device`` the part of
    the managed bytes known to be resident on each device.
    """

    active_bytes: int = 0
    host_bytes: int = 0
    peak_bytes: int = 0
    cached_bytes: int = 0
    managed_bytes: int = 0
    managed_on_device: dict[int, int] = field(default_factory=dict)
    device_bytes: int = 0
    managed_allocations: int = 0      # driver calls, not pool hits
    device_allocations: int = 0
    pool_hits: int = 0
    prefetches: int = 0               # cuMemPrefetchAsync calls we issued (automatic or asked)
    prefetch_bytes: int = 0
    advice_calls: int = 0             # cuMemAdvise calls
    host_copies: int = 0              # host reads served by a device-to-host copy
    staged_bytes: int = 0             # bytes moved through the pinned staging buffers
    pinned_bytes: int = 0             # pinned host memory held for staging
    oom_retries: int = 0              # out-of-memory answered by freeing the cache and retrying
    limit_refusals: int = 0           # allocations refused by the memory limit


stats = MemoryStats()
#: Guards every counter. Reentrant: a garbage collection triggered inside a locked section may
#: free a buffer, whose release takes the lock again in the same thread.
lock = threading.RLock()

#: Bytes the GPU buffers (in use and cached) may reach; None: the default (set by core/memory).
memory_limit: int | None = None
#: Bytes the GPU pool may keep cached; None: the memory limit.
cache_limit: int | None = None

#: numpy bases that are views of GPU memory (already counted as GPU buffers); set by
#: backend/cuda/memory.py.
gpu_view_types: tuple[type, ...] = ()


def note_peak() -> None:
    """Raise the peak to the current total (call with ``lock`` held)."""
    total = stats.active_bytes + stats.host_bytes
    if total > stats.peak_bytes:
        stats.peak_bytes = total


class _HostRef(weakref.ref):
    """A weak reference to a counted numpy block that remembers its size and key."""

    __slots__ = ("nbytes", "key")


_host_refs: dict[int, _HostRef] = {}


def _host_freed(ref: _HostRef) -> None:
    # Called by numpy's deallocation (any thread, any time): only dict and integer operations,
    # each atomic under the GIL (this runs once per CPU result: no lock on that path).
    if _host_refs.get(ref.key) is ref and _host_refs.pop(ref.key, None) is ref:
        stats.host_bytes -= ref.nbytes


_ndarray = np.ndarray


def _owner(arr: np.ndarray) -> tuple[np.ndarray, object | None]:
    """(outermost ndarray, the non-ndarray object owning its memory or None) behind ``arr``,
    following numpy bases through as_strided's DummyArray (which keeps its base in ``.base``)."""
    root = arr
    base = root.base
    while base is not None:
        if not isinstance(base, _ndarray):
            inner = getattr(base, "base", None)  # np.lib.stride_tricks' DummyArray
            if not isinstance(inner, _ndarray) or isinstance(base, gpu_view_types):
                return root, base
            base = inner
        root = base
        base = root.base
    return root, None


def track_host(arr: np.ndarray) -> None:
    """Count the memory block behind numpy array ``arr`` (once per block) until numpy frees it.

    Views count their base's block (MLX counts a buffer once however many arrays share it);
    views of GPU memory (host windows of managed buffers) are already counted as GPU buffers.
    """
    root, owner = _owner(arr)
    if owner is not None and isinstance(owner, gpu_view_types):
        return
    key = id(root)
    if key in _host_refs:
        return
    nbytes = root.nbytes
    if not nbytes:
        return
    ref = _HostRef(root, _host_freed)
    ref.nbytes = nbytes
    ref.key = key
    if _host_refs.setdefault(key, ref) is not ref:  # another thread got there first
        return
    stats.host_bytes += nbytes
    total = stats.active_bytes + stats.host_bytes
    if total > stats.peak_bytes:
        stats.peak_bytes = total


def host_block_size(arr: np.ndarray) -> tuple[int, int]:
    """(identity, bytes) of the memory block behind ``arr`` (for get_array_buffer_size)."""
    root, owner = _owner(arr)
    if owner is None:
        return id(root), root.nbytes
    if isinstance(owner, gpu_view_types):  # a host window of a GPU buffer: that buffer
        return id(owner.buffer), owner.buffer.capacity
    return id(owner), root.nbytes
