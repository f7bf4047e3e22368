"""User kernels (``mx.fast.cuda_kernel``): NVRTC compile with our disk cache, then load.

A user kernel is a one-kernel module compiled with extra options (the CUDA headers' include
directory, so ``__half``/``__nv_bfloat16`` arithmetic and cooperative groups work as in MLX's
JIT). Its cache key covers the source, the kernel's name expression, the options, the target
architecture and the package version; the NVRTC version is appended as for built-in modules,
so a cache warmed elsewhere is used when this NVRTC's entry is missing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from typing import Any, Sequence

from ... import __version__ as PACKAGE_VERSION
from . import compiler, driver, nvrtc as nvrtc_mod
from .cache import CacheEntry, cache_key
from .driver import CudaDevice
from .launch import Kernel

_loaded: dict[tuple, Kernel] = {}
_lock = threading.Lock()
_modules: list[Any] = []


@functools.lru_cache(maxsize=1)
def cccl_include_dir() -> str | None:
    """CCCL's headers (``<nv/target>``, which cooperative_groups.h needs), if installed."""
    try:
        import cuda.pathfinder as pathfinder

        found = pathfinder.find_nvidia_header_directory("cccl")
    except Exception:  # not installed, or an older cuda.pathfinder
        found = None
    if found and os.path.exists(os.path.join(found, "nv", "target")):
        return found
    return None


def options() -> list[str]:
    """NVRTC options of user kernels: C++17 and the CUDA (and CCCL) header directories."""
    opts = ["-std=c++17"]
    inc = nvrtc_mod.cuda_include_dir()
    if inc:
        opts.append(f"-I{inc}")
        cccl = cccl_include_dir()
        if cccl:
            opts.append(f"-I{cccl}")
    return opts


def has_cuda_headers() -> bool:
    """cuda_fp16.h / cuda_bf16.h are available (else 16-bit types are storage-only)."""
    return nvrtc_mod.cuda_include_dir() is not None


def has_cooperative_groups() -> bool:
    """NVIDIA's cooperative_groups.h can be compiled (else a small built-in subset is used)."""
    return has_cuda_headers() and cccl_include_dir() is not None


def compile_source(name: str, source: str, expression: str, cc: int,
                   nv: nvrtc_mod.Nvrtc) -> CacheEntry:
    """Compile a user kernel for compute capability ``cc`` (no GPU needed)."""
    arch, cubin = compiler._target(nv, cc)
    result = nv.compile(name, source, [expression], options() + [f"-arch={arch}"],
                        want_cubin=cubin)
    return CacheEntry(result.image, result.kind, result.lowered)


def load(name: str, source: str, expression: str, signature: Sequence[str],
         shared_memory: int, device: CudaDevice) -> Kernel:
    """The kernel loaded on ``device``: from memory, the disk cache, or NVRTC."""
    key = (source, expression, tuple(signature), shared_memory, device.index)
    kernel = _loaded.get(key)
    if kernel is not None:
        return kernel
    with _lock:
        kernel = _loaded.get(key)
        if kernel is None:
            kernel = _loaded[key] = _load_uncached(name, source, expression, signature,
                                                   shared_memory, device)
        return kernel


def _load_uncached(name: str, source: str, expression: str, signature: Sequence[str],
                   shared_memory: int, device: CudaDevice) -> Kernel:
    major, minor = device.properties.compute_capability
    cc = major * 10 + minor
    digest = hashlib.sha256((source + "\0" + expression).encode()).hexdigest()
    base = cache_key(digest, " ".join(options()), f"sm_{cc}", PACKAGE_VERSION)
    cache = compiler.kernel_cache()
    try:
        nv: nvrtc_mod.Nvrtc | None = nvrtc_mod.get_nvrtc()
        why = ""
    except nvrtc_mod.NvrtcUnavailableError as exc:
        nv, why = None, str(exc)
    keys = cache.keys_with_prefix(base + "-")
    if nv is not None:
        mine = f"{base}-nvrtc{nv.version_string}"
        keys = [mine] + [k for k in keys if k != mine]
    entry = handle = None
    for k in keys:
        entry = cache.get(k)
        if entry is not None:
            handle = compiler._try_load_image(entry.image, device)
            if handle is not None:
                break
    if handle is None:
        if nv is None:
            raise compiler.KernelUnavailableError(
                f"custom kernel {name!r} is not in the kernel cache ({cache.directory}) and "
                f"NVRTC cannot build it: {why}. Install NVRTC (pip install 'pycudamlx[cu13]', "
                "or [cu12] for drivers older than 580).")
        entry = compile_source(name, source, expression, cc, nv)
        handle = compiler._try_load_image(entry.image, device)
        if handle is None:
            raise driver.CudaError(f"the driver rejected the image NVRTC built for custom "
                                   f"kernel {name!r}", call="cuModuleLoadData")
        cache.put(f"{base}-nvrtc{nv.version_string}", entry)
    cu = driver.init()
    fn = driver.call(cu.cuModuleGetFunction, handle, entry.lowered[expression].encode())
    if shared_memory > 48 * 1024:
        driver.call(cu.cuFuncSetAttribute, fn,
                    cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    int(shared_memory))
    _modules.append(handle)  # modules stay loaded for the process, as built-in ones do
    return Kernel(expression, fn, signature)

