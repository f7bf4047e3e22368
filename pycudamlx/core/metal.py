"""``mx.metal``: MLX's Metal namespace. There is no Metal on NVIDIA machines: ``is_available()``
is False, ``device_info()`` is {} and the capture functions do nothing, as in MLX builds without
Metal. The memory functions are MLX's deprecated aliases of the top-level ones (``mx.metal.
get_active_memory`` is ``mx.get_active_memory``): they warn and forward, so scripts that still
call them keep working."""

import sys
import warnings
from typing import Any

__all__ = [
    "clear_cache", "device_info", "get_active_memory", "get_cache_memory", "get_peak_memory",
    "is_available", "reset_peak_memory", "set_cache_limit", "set_memory_limit",
    "set_wired_limit", "start_capture", "stop_capture",
]


def is_available() -> bool:
    """Check if the Metal back-end is available: never, on an NVIDIA machine."""
    return False


def _deprecated(name: str) -> None:
    warnings.warn(f"mx.metal.{name} is deprecated and will be removed in a future version. "
                  f"Use mx.{name} instead.", DeprecationWarning, stacklevel=3)


def device_info() -> dict[str, Any]:
    """Metal device information: {} (no Metal device; use ``mx.device_info()``)."""
    _deprecated("device_info")
    return {}


def _forward(name: str, *args: "Any") -> "Any":
    _deprecated(name)
    f = getattr(sys.modules["pycudamlx.core"], name, None)
    if f is None:
        raise NotImplementedError(f"mx.{name} is not implemented in pycudamlx yet")
    return f(*args)


def get_active_memory() -> int:
    """Deprecated alias of ``mx.get_active_memory``."""
    return _forward("get_active_memory")


def get_peak_memory() -> int:
    """Deprecated alias of ``mx.get_peak_memory``."""
    return _forward("get_peak_memory")


def reset_peak_memory() -> None:
    """Deprecated alias of ``mx.reset_peak_memory``."""
    return _forward("reset_peak_memory")


def get_cache_memory() -> int:
    """Deprecated alias of ``mx.get_cache_memory``."""
    return _forward("get_cache_memory")


def set_memory_limit(limit: int) -> int:
    """Deprecated alias of ``mx.set_memory_limit``."""
    return _forward("set_memory_limit", limit)


def set_cache_limit(limit: int) -> int:
    """Deprecated alias of ``mx.set_cache_limit``."""
    return _forward("set_cache_limit", limit)


def set_wired_limit(limit: int) -> int:
    """Deprecated alias of ``mx.set_wired_limit``."""
    return _forward("set_wired_limit", limit)


def clear_cache() -> None:
    """Deprecated alias of ``mx.clear_cache``."""
    return _forward("clear_cache")


def start_capture(path: str) -> None:
    """Start a Metal capture: nothing to capture without Metal (as MLX without Metal)."""
    return None


def stop_capture() -> None:
    """Stop a Metal capture: nothing to do."""
    return None


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.core.metal', not our module path
    raise AttributeError(f"module 'mlx.core.metal' has no attribute {name!r}")
