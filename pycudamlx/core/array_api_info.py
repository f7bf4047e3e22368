"""``mx.__array_namespace_info__()``: the Python array API's inspection object, as MLX 0.32.4
answers it (array-API-generic code asks it for default dtypes, devices and supported dtypes).

float64 is listed for CPU devices only, as in MLX (the GPU has no float64 arithmetic).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as dt

__all__ = ["__array_namespace_info__"]

_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_REAL = ("float32", "float64")
_COMPLEX = ("complex64",)
#: dtype names of each array-API kind
_KINDS: dict[str, frozenset[str]] = {
    "bool": frozenset(("bool",)),
    "signed integer": frozenset(_SIGNED),
    "unsigned integer": frozenset(_UNSIGNED),
    "integral": frozenset(_SIGNED + _UNSIGNED),
    "real floating": frozenset(_REAL),
    "complex floating": frozenset(_COMPLEX),
    "numeric": frozenset(_SIGNED + _UNSIGNED + _REAL + _COMPLEX),
}
#: every device's dtypes in MLX's order (float64 is appended for CPU devices)
_COMMON = ("bool",) + _SIGNED + _UNSIGNED + ("float32", "complex64")


def _device_arg(device: Any) -> Any:
    from .device import Device

    if device is not None and not isinstance(device, Device):
        raise TypeError("Expected a mlx Device")
    return device


class ArrayNamespaceInfo:
    """What ``__array_namespace_info__()`` returns: capabilities, devices and dtypes."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 10}

    def default_device(self) -> Any:
        from .device import default_device

        return default_device()

    def default_dtypes(self, *, device: Any = None) -> dict[str, dt.Dtype]:
        _device_arg(device)
        return {"real floating": dt.float32, "complex floating": dt.complex64,
                "integral": dt.int32, "indexing": dt.int32}

    def devices(self) -> tuple[Any, ...]:
        from .device import Device, cpu, device_count, gpu

        return tuple(Device(kind, i) for kind in (cpu, gpu) for i in range(device_count(kind)))

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, dt.Dtype]:
        from .device import cpu

        device = _device_arg(device) or self.default_device()
        names = _COMMON + (("float64",) if device.type == cpu else ())
        if kind is None:
            wanted = None
        else:
            kinds = (kind,) if isinstance(kind, str) else kind
            if not isinstance(kinds, tuple) or any(k not in _KINDS for k in kinds):
                raise ValueError(f"Unsupported dtype kind: {kinds!r}")
            wanted = frozenset().union(*(_KINDS[k] for k in kinds))
        return {n: getattr(dt, "bool_" if n == "bool" else n) for n in names
                if wanted is None or n in wanted}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The array API inspection object (``xp.__array_namespace_info__()``)."""
    return ArrayNamespaceInfo()
