"""Environment switches, read once at import so hot paths test a module global, not os.environ."""

from __future__ import annotations

import os


def _flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


#: Synchronise and check after every kernel launch, so an asynchronous error names its op.
DEBUG_SYNC: bool = _flag("PYCUDAMLX_DEBUG_SYNC")
#: Never call NVRTC: only the disk cache and the shipped PTX in kernels_ptx/ are used.
DISABLE_NVRTC: bool = _flag("PYCUDAMLX_DISABLE_NVRTC")
#: Tests that need NVRTC fail instead of skipping (set by CI).
REQUIRE_NVRTC: bool = _flag("PYCUDAMLX_REQUIRE_NVRTC")
#: An op on a GPU stream that would run on the host raises instead (used by the GPU tests).
STRICT_GPU: bool = _flag("PYCUDAMLX_STRICT_GPU")
#: Where compiled kernels are cached; None means the XDG default.
CACHE_DIR: str | None = os.environ.get("PYCUDAMLX_CACHE_DIR") or None


def refresh() -> None:
    """Re-read the environment (for tests and the CLI, which may set variables after import)."""
    global DEBUG_SYNC, DISABLE_NVRTC, REQUIRE_NVRTC, STRICT_GPU, CACHE_DIR
    DEBUG_SYNC = _flag("PYCUDAMLX_DEBUG_SYNC")
    DISABLE_NVRTC = _flag("PYCUDAMLX_DISABLE_NVRTC")
    REQUIRE_NVRTC = _flag("PYCUDAMLX_REQUIRE_NVRTC")
    STRICT_GPU = _flag("PYCUDAMLX_STRICT_GPU")
    CACHE_DIR = os.environ.get("PYCUDAMLX_CACHE_DIR") or None
