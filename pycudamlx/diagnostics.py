"""What `pycudamlx info` reports: versions, driver, devices, kernel cache and kernels_ptx status.

Kept apart from the CLI so that other tools (a GPU check script, bug reports) can collect the same
facts as a plain dict. Nothing here raises for a missing driver, NVRTC or cache: each part says
what is missing instead. The JSON schema is documented in docs/cli.md; keep the two in step.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, _env
from .backend.cuda import driver, nvrtc, ptxstore
from .backend.cuda.cache import CacheDirError, KernelCache, default_cache_dir

INFO_SCHEMA = "pycudamlx-info/1"


def nvidia_driver_version() -> str | None:
    """The kernel driver's version (e.g. "580.95.05") from /proc, or None where it is not there.

    cuDriverGetVersion only gives the CUDA version the driver supports; the driver's own version
    is what `nvidia-smi` shows and what the cu12/cu13 choice depends on.
    """
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return _nvml_driver_version()  # containers and sandboxes may hide /proc/driver
    match = re.search(r"Kernel Module(?: for \w+)?\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else _nvml_driver_version()


def _nvml_driver_version() -> str | None:
    """The driver's version from NVML (libnvidia-ml ships with the driver), or None."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    try:
        if nvml.nvmlInit_v2() != 0:
            return None
        try:
            buf = ctypes.create_string_buffer(96)
            if nvml.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(len(buf))) != 0:
                return None
            return buf.value.decode(errors="replace") or None
        finally:
            nvml.nvmlShutdown()
    except (AttributeError, OSError):
        return None


def driver_info() -> dict[str, Any]:
    """Availability, the driver's version and the CUDA version it supports."""
    reason = driver.unavailable_reason()
    info: dict[str, Any] = {"available": reason is None, "reason": reason,
                            "version": nvidia_driver_version(), "cuda_version": None}
    if reason is None:
        try:
            info["cuda_version"] = driver.format_cuda_version(driver.driver_version())
        except driver.CudaError:
            pass
    return info


def device_info(index: int) -> dict[str, Any]:
    """One device's properties and current memory figures (an "error" key if it cannot be read)."""
    try:
        dev = driver.get_device(index)
        p = dev.properties
        free, total = dev.memory_info()
    except driver.CudaError as exc:
        return {"index": index, "error": str(exc)}
    major, minor = p.compute_capability
    return {
        "index": index,
        "name": p.name,
        "compute_capability": f"{major}.{minor}",
        "arch": p.arch,
        "multiprocessors": p.multiprocessors,
        "memory_total_bytes": total,
        "memory_free_bytes": free,
        "managed_memory": p.managed_memory,
        "concurrent_managed_access": p.concurrent_managed_access,
        "pageable_memory_access": p.pageable_memory_access,
        "l2_cache_bytes": p.l2_cache_bytes,
    }


def devices_info() -> list[dict[str, Any]]:
    if driver.unavailable_reason() is not None:
        return []
    return [device_info(i) for i in range(driver.device_count())]


def cache_info(directory: Path | str | None = None) -> dict[str, Any]:
    """State of a kernel cache directory. Nothing is changed: usability is found by trying to
    create (or write in) the directory with a temporary file removed at once; entries are counted
    (and checked) whatever the directory's state."""
    d = Path(directory) if directory is not None else default_cache_dir()
    cache = KernelCache(d)
    exists = d.exists()
    problem: str | None = None
    if exists:
        try:
            cache.ensure_directory()  # creates nothing: the path exists
        except CacheDirError as exc:
            problem = str(exc)
    if problem is None:
        problem = cache.probe_writable()
    count, corrupt = cache.scan() if exists else (0, [])
    size = cache.size_bytes() if exists else 0
    return {"directory": str(d), "exists": exists, "usable": problem is None,
            "problem": problem, "entries": count, "size_bytes": size,
            "corrupt_entries": [{"path": str(p), "problem": why} for p, why in corrupt]}


def kernels_ptx_info(directory: Path | str | None = None) -> dict[str, Any]:
    """What kernels_ptx/ holds, and whether it matches the kernel sources (ptx verify)."""
    d = Path(directory) if directory is not None else ptxstore.ptx_dir()
    try:
        m: ptxstore.Manifest | None = ptxstore.read_manifest(d)
    except ptxstore.ManifestError:
        m = None  # verify() names the problem
    files = sorted(d.glob("*.ptx.gz")) if d.is_dir() else []
    report = ptxstore.verify(d)
    return {
        "directory": str(d),
        "present": (d / ptxstore.MANIFEST).exists(),
        "modules": len(m.modules) if m else 0,
        "files": len(files),
        "size_bytes": sum(f.stat().st_size for f in files),
        "nvrtc_version": m.nvrtc_version if m else None,
        "ptx_isa": m.ptx_isa if m else None,
        "arch": m.arch if m else None,
        "verify_ok": report.ok,
        "problems": verify_problems(report),
    }


def verify_problems(report: ptxstore.VerifyReport) -> dict[str, list[str]]:
    return {"manifest": report.manifest, "missing": report.missing, "stale": report.stale,
            "extra": report.extra, "bad_files": report.bad_files, "corrupt": report.corrupt,
            "wrong_toolchain": report.wrong_toolchain}


def cublas_info() -> dict[str, Any]:
    """cuBLAS (matmul's main path): its version, or why the NVRTC GEMM is used instead."""
    from .backend.cuda import cublas

    version = cublas.version()
    return {"version": version, "disabled": cublas.disabled(),
            "error": None if version else cublas.load_error()}


def cufft_info() -> dict[str, Any]:
    """cuFFT (mx.fft's GPU path): its version, or why the transforms run on the host instead."""
    from .backend.cuda import cufft

    v = cufft.version()
    return {"version": None if v is None else f"{v // 1000}.{v % 1000 // 100}.{v % 100}",
            "disabled": cufft.disabled(),
            "error": None if v else (cufft.load_error() or "cufftGetVersion failed")}


def collect_info() -> dict[str, Any]:
    """Everything `pycudamlx info --json` prints (schema: docs/cli.md)."""
    drv = driver_info()
    return {
        "schema": INFO_SCHEMA,
        "package": {"name": "pycudamlx", "version": __version__},
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cuda_bindings": driver.bindings_version(),
        "nvrtc": {"version": nvrtc.nvrtc_version_or_none(), "disabled": _env.DISABLE_NVRTC},
        "cublas": cublas_info(),
        "cufft": cufft_info(),
        "driver": drv,
        "devices": devices_info() if drv["available"] else [],
        "cache": cache_info(),
        "kernels_ptx": kernels_ptx_info(),
    }
