"""NVIDIA's libraries from their wheels (cuBLAS, cuFFT), loaded once, through ctypes.

``cuda.pathfinder`` finds the library of the installed wheel (cu12 or cu13 name), so nothing is
compiled and no toolkit is needed. A library that is missing, of the wrong major version or
without a symbol we bind is remembered as unavailable with the reason (``pycudamlx info``
prints it), and its callers take their fallback (the NVRTC GEMM, host FFTs). Under the null
driver (``driver.use_null_driver()``) every library is unavailable, since a vendor call would run
real GPU code on the fake's handles and pointers.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any, Callable

from ... import _env
from . import driver

log = logging.getLogger(__name__)


def env_switch_on(name: str) -> bool:
    """A PYCUDAMLX_DISABLE_* style switch, parsed by pycudamlx._env (ConfigError if bad)."""
    return _env.flag(name)


NULL_DRIVER_REASON = "unavailable under the null CUDA driver (no kernel runs)"


class VendorLibrary:
    """One library, loaded on first use: ``lib`` (the ctypes.CDLL, None until loaded or when
    unavailable) and ``error`` (why it is unavailable, None otherwise)."""

    def __init__(self, name: str, bind: Callable[[Any], None], fallback: str) -> None:
        self.name = name          # pathfinder's name: "cublas", "cufft"
        self.lib: Any = None
        self._error: str | None = None
        self._bind = bind         # sets argtypes/restype; raises on a missing symbol
        self._fallback = fallback
        self._lock = threading.Lock()

    @property
    def error(self) -> str | None:
        """Why the library is unavailable (None when it is loaded, or not tried yet)."""
        if driver.null_driver() is not None:
            return NULL_DRIVER_REASON
        return self._error

    def load(self) -> Any:
        """The loaded library, or None when it is unavailable (tried once)."""
        if driver.null_driver() is not None:
            return None
        if self.lib is not None or self._error is not None:
            return self.lib
        with self._lock:
            if self.lib is None and self._error is None:
                try:
                    from cuda import pathfinder

                    lib = ctypes.CDLL(pathfinder.load_nvidia_dynamic_lib(self.name).abs_path)
                    self._bind(lib)
                    self.lib = lib
                except Exception as exc:  # not installed, wrong major, no symbols
                    self._error = f"{type(exc).__name__}: {exc}"
                    log.info("%s unavailable (%s); %s", self.name, self.error, self._fallback)
        return self.lib
