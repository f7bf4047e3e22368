"""Find or build the machine code of a kernel module and load it into a device's context.

Lookup order, by measured cold-start latency (FIELD-NOTES): the in-process table (a dict lookup),
the disk cache (a CUBIN loads in ~0.1 ms), the shipped PTX in kernels_ptx/ (the driver JITs it in
8-12 ms, then caches it), NVRTC (18-77 ms, or more for large programs; the result goes to the disk
cache). NVRTC targets the device's own ``sm_XY`` (CUBIN) when it can, else PTX for the newest
architecture it knows below the device's. With NVRTC missing or disabled, a module that is neither
cached nor shipped raises KernelUnavailableError naming the module and the remedy.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from ... import __version__ as PACKAGE_VERSION
from . import driver, ptxstore, registry
from .cache import CacheEntry, KernelCache, cache_key
from .driver import CudaDevice
from .launch import Kernel
from .nvrtc import KernelCompileError, Nvrtc, NvrtcUnavailableError, get_nvrtc

log = logging.getLogger(__name__)

__all__ = ["KernelCompileError", "KernelUnavailableError", "LoadedModule", "load",
           "compile_for_arch", "parse_arch", "stats"]


class KernelUnavailableError(RuntimeError):
    """A kernel module is neither cached nor shipped, and NVRTC cannot build it here."""


#: How each module load was satisfied: memory, disk, shipped, nvrtc.
stats: Counter[str] = Counter()

# Errors that mean "this image cannot run here": try the next source instead of failing.
_IMAGE_REJECTED = {200, 209, 218, 222}  # INVALID_IMAGE, NO_BINARY_FOR_GPU, INVALID_PTX,
#                                          UNSUPPORTED_PTX_VERSION


class LoadedModule:
    """A module loaded in one device's context, with its kernels ready to launch."""

    __slots__ = ("spec", "device", "handle", "kernels", "kernel_list", "origin")

    def __init__(self, spec: registry.ModuleSpec, device: CudaDevice, handle: Any,
                 lowered: dict[str, str], origin: str) -> None:
        cu = driver.init()
        self.spec = spec
        self.device = device
        self.handle = handle
        self.origin = origin
        self.kernels: dict[str, Kernel] = {}
        for k in spec.kernels:
            fn = driver.call(cu.cuModuleGetFunction, handle, lowered[k.expression].encode())
            self.kernels[k.expression] = Kernel(k.expression, fn, k.signature)
        #: the kernels in the spec's order, for launchers that index them by position
        self.kernel_list: list[Kernel] = [self.kernels[k.expression] for k in spec.kernels]

    def __getitem__(self, expression: str) -> Kernel:
        return self.kernels[expression]


def parse_arch(arch: str | int) -> int:
    """'sm_90', 'sm90', 'compute_90', '9.0', '90' or 90 -> 90; ValueError for anything else."""
    text = str(arch).strip().lower()
    for prefix in ("sm_", "sm", "compute_", "compute"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    if "." in text:
        major, _, minor = text.partition(".")
        text = major + minor
    text = text.rstrip("a")  # sm_90a is sm_90 for our purposes
    if not text.isdigit() or not 30 <= int(text) <= 199:
        raise ValueError(f"unknown GPU architecture {arch!r}: expected a form like sm_80 or "
                         "sm_90 (compute capability 8.0 is sm_80)")
    return int(text)


def _target(nvrtc: Nvrtc, cc: int) -> tuple[str, bool]:
    """The -arch value for compute capability ``cc`` and whether it yields a CUBIN."""
    archs = nvrtc.supported_archs()
    if cc in archs:
        return f"sm_{cc}", True
    lower = [a for a in archs if a <= cc]
    if not lower:
        raise KernelCompileError(
            "(target)", f"NVRTC {nvrtc.version_string} cannot target sm_{cc} "
            f"(it supports {', '.join(f'sm_{a}' for a in archs)}). For Volta (sm_70) use the "
            "cu12 extra, whose NVRTC 12 still supports it.", [])
    return f"compute_{max(lower)}", False


def _base_key(spec: registry.ModuleSpec, cc: int) -> str:
    """Cache key of a module for a device architecture; the NVRTC version is appended to it."""
    return cache_key(spec.sha256, " ".join(registry.BUILTIN_OPTIONS), f"sm_{cc}",
                     PACKAGE_VERSION)


def _full_key(base: str, nvrtc_version: str) -> str:
    return f"{base}-nvrtc{nvrtc_version}"


def compile_for_arch(spec: registry.ModuleSpec, cc: int, nvrtc: Nvrtc) -> CacheEntry:
    """Compile a module with NVRTC for compute capability ``cc`` (needs no GPU)."""
    arch, cubin = _target(nvrtc, cc)
    options = list(registry.BUILTIN_OPTIONS) + [f"-arch={arch}"]
    result = nvrtc.compile(spec.name, spec.source, spec.expressions, options, want_cubin=cubin)
    return CacheEntry(result.image, result.kind, result.lowered)


def warm(spec: registry.ModuleSpec, cc: int, nvrtc: Nvrtc, cache: KernelCache) -> bool:
    """Put a module compiled for ``cc`` in ``cache``; False when it was there already."""
    key = _full_key(_base_key(spec, cc), nvrtc.version_string)
    if cache.get(key) is not None:
        return False
    cache.put(key, compile_for_arch(spec, cc, nvrtc))
    return True


# --------------------------------------------------------------------------------------------------
# Loading

_cache: KernelCache | None = None
_loaded: dict[tuple[int, str], LoadedModule] = {}
_load_lock = threading.RLock()


def kernel_cache() -> KernelCache:
    """The process's disk cache (its directory is chosen once, from the environment)."""
    global _cache
    if _cache is None:
        _cache = KernelCache()
    return _cache


def reset_for_tests(cache: KernelCache | None = None) -> None:
    """Forget loaded modules and use another cache (tests only)."""
    global _cache
    with _load_lock:
        _loaded.clear()
        _by_builder.clear()
        _cache = cache
        ptxstore.manifest.cache_clear()


def load(spec: registry.ModuleSpec, device: CudaDevice) -> LoadedModule:
    """The module loaded on ``device``, loading it (once per context) on first use."""
    module = _loaded.get((device.index, spec.name))
    if module is not None:
        return module
    with _load_lock:
        module = _loaded.get((device.index, spec.name))
        if module is None:
            module = _load_uncached(spec, device)
            _loaded[(device.index, spec.name)] = module
        return module


_by_builder: dict[tuple, LoadedModule] = {}


def module_for(spec_fn: Any, args: tuple, device: CudaDevice) -> LoadedModule:
    """``load(spec_fn(*args), device)``, cached by the builder and its arguments, so launchers
    skip rebuilding the spec (its source text and hash) on every call."""
    key = (spec_fn, args, device.index)
    mod = _by_builder.get(key)
    if mod is None:
        mod = _by_builder[key] = load(spec_fn(*args), device)
    return mod


def _try_load_image(image: bytes, device: CudaDevice) -> Any | None:
    cu = driver.init()
    device.activate()
    result, handle = cu.cuModuleLoadData(image)
    if int(result) in _IMAGE_REJECTED:
        return None
    driver.raise_for(result, "cuModuleLoadData")
    return handle


def _load_uncached(spec: registry.ModuleSpec, device: CudaDevice) -> LoadedModule:
    major, minor = device.properties.compute_capability
    cc = major * 10 + minor
    cache = kernel_cache()
    base = _base_key(spec, cc)
    try:
        nvrtc: Nvrtc | None = get_nvrtc()
        nvrtc_error: str | None = None
    except NvrtcUnavailableError as exc:
        nvrtc, nvrtc_error = None, str(exc)

    # 1. The disk cache: this NVRTC's entry first, then any other (a cache warmed elsewhere).
    keys = cache.keys_with_prefix(base + "-")
    if nvrtc is not None:
        mine = _full_key(base, nvrtc.version_string)
        keys = [mine] + [k for k in keys if k != mine]
    for key in keys:
        entry = cache.get(key)
        if entry is None:
            continue
        handle = _try_load_image(entry.image, device)
        if handle is not None:
            stats["disk"] += 1
            return LoadedModule(spec, device, handle, entry.lowered, "disk")
        log.info("cached image %s does not load on %s; trying the next source", key,
                 device.properties.arch)

    # 2. The shipped PTX (compute_70: not for modules whose code needs a newer architecture).
    try:
        shipped = ptxstore.lookup(spec) if spec.min_cc <= registry.SHIPPED_CC else None
    except ptxstore.ShippedPtxError as exc:  # never handed to the driver
        shipped = None
        if nvrtc is None:
            raise KernelUnavailableError(
                f"kernel module {spec.name!r} is not in the kernel cache ({cache.directory}) and "
                f"NVRTC cannot build it ({nvrtc_error}); {exc}") from None
        log.warning("%s Building %s with NVRTC instead.", exc, spec.name)
    if shipped is not None:
        ptx, lowered = shipped
        handle = _try_load_image(ptx, device)
        if handle is not None:
            stats["shipped"] += 1
            return LoadedModule(spec, device, handle, lowered, "shipped")
        log.warning("shipped PTX for %s does not load on this driver", spec.name)

    # 3. NVRTC.
    if nvrtc is None:
        why = f" (kernels_ptx is unusable: {ptxstore.manifest_problem})" if (
            ptxstore.manifest_problem and ptxstore.manifest() is None) else ""
        raise KernelUnavailableError(
            f"kernel module {spec.name!r} is not in kernels_ptx/{why} or the kernel cache "
            f"({cache.directory}), and NVRTC cannot build it: {nvrtc_error}. Install NVRTC "
            "(pip install 'pycudamlx[cu13]', or [cu12] for drivers older than 580), or fill a "
            f"cache on a connected machine with 'pycudamlx cache warm --arch sm_{cc} --dir DIR' "
            "and point PYCUDAMLX_CACHE_DIR at a copy of DIR here.")
    entry = compile_for_arch(spec, cc, nvrtc)
    handle = _try_load_image(entry.image, device)
    if handle is None:
        raise driver.CudaError(f"the driver rejected the image NVRTC {nvrtc.version_string} "
                               f"built for {spec.name}; the driver may be older than NVRTC",
                               call="cuModuleLoadData")
    cache.put(_full_key(base, nvrtc.version_string), entry)
    stats["nvrtc"] += 1
    return LoadedModule(spec, device, handle, entry.lowered, "nvrtc")

