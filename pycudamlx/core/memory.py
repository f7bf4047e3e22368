"""MLX's memory API: statistics, limits and the cache (``mx.get_active_memory`` ...).

The statistics count every buffer an array holds: GPU buffers (managed or device memory, in use
or cached by the pool) and the CPU backend's numpy buffers, each buffer once however many arrays
view it, as MLX counts them. Limits follow MLX's CUDA backend: the memory limit defaults to 95%
of GPU 0's memory (80% of RAM without a GPU, as MLX's CPU build), the cache limit to the memory
limit. Unlike MLX, where the memory limit is only a guideline, a GPU allocation that would take
the pool (buffers in use plus cached blocks) past a limit set with ``set_memory_limit`` first
frees cached blocks and then raises MLX's allocation error (a RuntimeError, and a MemoryError,
``[malloc] Unable to allocate N bytes ...``). numpy allocates the CPU backend's buffers: they are
counted, not refused. None of these functions initialises CUDA except the default memory limit,
which reads the GPU's size.
"""

from __future__ import annotations

import operator
import os
import sys
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..backend import memstats

__all__ = [
    "get_active_memory", "get_peak_memory", "reset_peak_memory", "get_cache_memory",
    "set_memory_limit", "get_memory_limit", "set_cache_limit", "clear_cache",
    "set_wired_limit", "get_array_buffer_size",
]

_stats = memstats.stats
_UINT64_MAX = 2**64 - 1
_default_limit: int | None = None


def _cuda_memory() -> Any:
    """backend.cuda.memory if the GPU side was ever used (else nothing is cached there)."""
    return sys.modules.get("pycudamlx.backend.cuda.memory")


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16 << 30


def _default_memory_limit() -> int:
    """MLX's defaults: 95% of GPU 0's memory (its CUDA backend), else 80% of RAM (its CPU build)."""
    global _default_limit
    if _default_limit is None:
        limit = None
        try:
            from ..backend.cuda import driver

            if driver.is_available():
                limit = int(driver.get_device(0).properties.total_memory * 0.95)
        except Exception:  # no driver, no device: the CPU build's default
            limit = None
        _default_limit = limit if limit is not None else int(_physical_memory() * 0.8)
    return _default_limit


def _limit_arg(name: str, limit: Any) -> int:
    """MLX takes a size_t: any int-like from 0 to 2**64-1; anything else is nanobind's
    TypeError."""
    try:
        value = operator.index(limit)
    except TypeError:
        value = None
    if value is None or not 0 <= value <= _UINT64_MAX:
        raise dt._incompatible_arguments(f"{name}(limit: int) -> int", limit)
    return value


def get_active_memory() -> int:
    """Get the actively used memory in bytes.

    Note, this will not always match memory use reported by the system because it does not
    include cached memory buffers.
    """
    return _stats.active_bytes + _stats.host_bytes


def get_peak_memory() -> int:
    """Get the peak amount of used memory in bytes.

    The maximum memory used recorded from the beginning of the program execution or since the
    last call to :func:`reset_peak_memory`.
    """
    return _stats.peak_bytes


def reset_peak_memory() -> None:
    """Reset the peak memory to zero."""
    with memstats.lock:
        _stats.peak_bytes = 0


def get_cache_memory() -> int:
    """Get the cache size in bytes.

    The cache includes memory not currently used that has not been returned to the system
    allocator.
    """
    return _stats.cached_bytes


def get_memory_limit() -> int:
    """Get the current memory limit in bytes."""
    limit = memstats.memory_limit
    return _default_memory_limit() if limit is None else limit


def set_memory_limit(limit: int) -> int:
    """Set the memory limit; returns the previous memory limit in bytes.

    The limit bounds the GPU memory the pool holds (buffers in use plus cached blocks): an
    allocation beyond it frees cached blocks, then raises ``[malloc] Unable to allocate``.
    The default (95% of the GPU's memory) is reported but not enforced beyond the device
    itself; CPU buffers (numpy) are counted in the statistics, not refused.
    """
    value = _limit_arg("set_memory_limit", limit)
    previous = get_memory_limit()
    memstats.memory_limit = value
    return previous


def set_cache_limit(limit: int) -> int:
    """Set the free cache limit; returns the previous cache limit in bytes.

    If using more than the given limit, free memory is reclaimed from the cache (at once, and
    on every later free). To disable the cache, set the limit to ``0``. The cache limit defaults
    to the memory limit.
    """
    value = _limit_arg("set_cache_limit", limit)
    previous = memstats.cache_limit
    if previous is None:
        previous = get_memory_limit()
    mem = _cuda_memory()
    if mem is not None:
        mem.set_cache_limit(value)
    else:
        memstats.cache_limit = value
    return previous


def clear_cache() -> None:
    """Clear the memory cache.

    After calling this, :func:`get_cache_memory` returns ``0``.
    """
    mem = _cuda_memory()
    if mem is not None:
        mem.clear_cache()


def set_wired_limit(limit: int) -> int:
    """Set the wired size limit: accepted and ignored (returns 0, as MLX builds without Metal).

    Wiring keeps memory resident on Apple silicon; NVIDIA GPUs have their own memory, and
    pycudamlx keeps managed pages resident by prefetching them (see docs/memory.md).
    """
    _limit_arg("set_wired_limit", limit)
    return 0


def get_array_buffer_size(*args: Any) -> int:
    """Get the size of the buffers backing arrays in bytes.

    Each unique buffer is counted once. The full allocator size of each buffer is used, which
    can exceed the logical size of its arrays (GPU blocks are rounded to 512 bytes, or to 2 MiB
    from 1 MiB on). Arrays must be evaluated before calling this function. The result does not
    include graph objects, cached buffers, or other non-buffer memory.

    Args:
      *args (arrays or trees of arrays): Each argument can be a single array or a tree of
        arrays. Leaves which are not arrays are ignored.
    """
    from .evaluation import collect_arrays

    arrays: list[Any] = []
    collect_arrays(args, arrays)
    seen: dict[int, int] = {}
    for a in arrays:
        data = a._data
        if data is None:
            raise ValueError("[get_array_buffer_size] Arrays must be evaluated before querying "
                             "buffer size.")
        if isinstance(data, np.ndarray):
            key, size = memstats.host_block_size(data)
        else:
            buf = data.buffer
            key, size = id(buf), (buf.capacity if buf.nbytes else 0)
        seen[key] = size
    return sum(seen.values())
