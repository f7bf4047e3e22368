"""The precompiled PTX shipped in kernels_ptx/: lookup at run time, build and verify for the CLI.

The PTX is emitted by NVRTC 12.0 for compute_70 (PTX ISA 8.0), which every CUDA 12.0+ and 13.x
driver can JIT for Volta and newer. Each module is one gzip-compressed PTX file (git history and
wheels stay small); manifest.json records, per module, the SHA-256 of the program it came from,
so a stale file is never used and ``ptx verify`` fails when a kernel source changed.
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from . import registry
from .nvrtc import Nvrtc

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SHIPPED_ARCH = "compute_70"
EXPECTED_NVRTC = "12.0"
EXPECTED_ISA = "8.0"


def ptx_dir() -> Path:
    """kernels_ptx/: inside the installed package (wheel), else at the checkout's top level."""
    pkg = Path(__file__).resolve().parents[2]          # .../pycudamlx
    inside = pkg / "kernels_ptx"
    if (inside / MANIFEST).exists():
        return inside
    return pkg.parent / "kernels_ptx"


@dataclass(frozen=True)
class ShippedModule:
    name: str
    sha256: str
    file: str
    lowered: dict[str, str]


@dataclass(frozen=True)
class Manifest:
    nvrtc_version: str
    ptx_isa: str
    arch: str
    modules: dict[str, ShippedModule]


def _read_manifest(directory: Path) -> Manifest | None:
    path = directory / MANIFEST
    try:
        raw = json.loads(path.read_text())
        modules = {name: ShippedModule(name, m["sha256"], m["file"], dict(m["lowered"]))
                   for name, m in raw["modules"].items()}
        return Manifest(raw["nvrtc_version"], raw["ptx_isa"], raw["arch"], modules)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("kernels_ptx manifest %s is unreadable (%s); shipped PTX is not used",
                    path, exc)
        return None


@functools.lru_cache(maxsize=1)
def manifest() -> Manifest | None:
    """The shipped manifest, read once per process (None when kernels_ptx is absent)."""
    return _read_manifest(ptx_dir())


def lookup(spec: registry.ModuleSpec) -> tuple[bytes, dict[str, str]] | None:
    """Shipped PTX (NUL-terminated) and lowered names for a module, if shipped and current."""
    m = manifest()
    if m is None:
        return None
    shipped = m.modules.get(spec.name)
    if shipped is None:
        return None
    if shipped.sha256 != spec.sha256:
        log.warning("shipped PTX for %s is stale (its source changed); it is not used. "
                    "Run 'pycudamlx ptx build'.", spec.name)
        return None
    try:
        ptx = gzip.decompress((ptx_dir() / shipped.file).read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        log.warning("shipped PTX file %s is unreadable: %s", shipped.file, exc)
        return None
    if not ptx.endswith(b"\0"):
        ptx += b"\0"
    return ptx, shipped.lowered


def ptx_isa_of(ptx: bytes) -> str | None:
    match = re.search(rb"^\s*\.version\s+(\d+\.\d+)", ptx, re.MULTILINE)
    return match.group(1).decode() if match else None


# NVRTC names internal-linkage entities `_INTERNAL_<8 hex>_<n>_<file>_cu_<8 hex>_<digits>`, where
# the last two parts change from one run to the next (a process id among them), so every rebuild
# would rewrite every file. They are module-local, so a fixed spelling is as good: the mangled
# length prefix (_ZN<len>) is recomputed for it.
_INTERNAL_NAME = re.compile(rb"_ZN(\d+)(_INTERNAL_)")
_INTERNAL_SUFFIX = re.compile(rb"_cu_[0-9a-f]{8}_\d+$")


def normalise_internal_names(ptx: bytes) -> bytes:
    """The PTX with NVRTC's per-run internal-linkage name suffixes made fixed (reproducible)."""
    out = bytearray()
    pos = 0
    for match in _INTERNAL_NAME.finditer(ptx):
        if match.start() < pos:  # inside an identifier already rewritten
            continue
        length = int(match.group(1))
        start = match.start(2)
        ident = ptx[start:start + length]
        fixed = _INTERNAL_SUFFIX.sub(b"_cu_00000000_0", ident)
        out += ptx[pos:match.start()] + b"_ZN" + str(len(fixed)).encode() + fixed
        pos = start + length
    out += ptx[pos:]
    return bytes(out)


# --------------------------------------------------------------------------------------------------
# Build and verify (the CLI's `ptx build` / `ptx verify`)


def build(nvrtc: Nvrtc, directory: Path | None = None,
          modules: Iterable[registry.ModuleSpec] | None = None,
          progress: Callable[[registry.ModuleSpec], None] | None = None) -> Manifest:
    """Compile every built-in module for compute_70 to PTX and write kernels_ptx/."""
    directory = Path(directory) if directory is not None else ptx_dir()
    directory.mkdir(parents=True, exist_ok=True)
    specs = list(modules) if modules is not None else registry.shipped_modules()
    options = list(registry.BUILTIN_OPTIONS) + [f"-arch={SHIPPED_ARCH}"]
    entries: dict[str, ShippedModule] = {}
    isa = None
    for spec in specs:
        result = nvrtc.compile(spec.name, spec.source, spec.expressions, options, want_cubin=False)
        ptx = normalise_internal_names(result.image.rstrip(b"\0"))
        isa = ptx_isa_of(ptx) or isa
        filename = f"{spec.name}.ptx.gz"
        # mtime=0 makes the bytes depend on the PTX alone, so rebuilds do not churn git.
        (directory / filename).write_bytes(gzip.compress(ptx, compresslevel=9, mtime=0))
        lowered = {k: normalise_internal_names(v.encode()).decode()
                   for k, v in result.lowered.items()}
        entries[spec.name] = ShippedModule(spec.name, spec.sha256, filename, lowered)
        if progress is not None:
            progress(spec)
    for stale in directory.glob("*.ptx.gz"):
        if stale.name not in {e.file for e in entries.values()}:
            stale.unlink()
    result_manifest = Manifest(nvrtc.version_string, isa or "unknown", SHIPPED_ARCH, entries)
    doc = {
        "nvrtc_version": result_manifest.nvrtc_version,
        "ptx_isa": result_manifest.ptx_isa,
        "arch": result_manifest.arch,
        "modules": {name: {"sha256": e.sha256, "file": e.file, "lowered": e.lowered}
                    for name, e in sorted(entries.items())},
    }
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, directory / MANIFEST)
    manifest.cache_clear()
    return result_manifest


@dataclass(frozen=True)
class VerifyReport:
    missing: list[str]        # built-in modules with no shipped PTX
    stale: list[str]          # shipped, but the source changed since
    extra: list[str]          # shipped modules the registry no longer has
    bad_files: list[str]      # listed in the manifest, unreadable on disk
    wrong_toolchain: list[str]  # manifest not from NVRTC 12.0 / ISA 8.0 / compute_70

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.extra or self.bad_files
                    or self.wrong_toolchain)


def verify(directory: Path | None = None) -> VerifyReport:
    """Compare kernels_ptx/ with the registry's built-in modules."""
    directory = Path(directory) if directory is not None else ptx_dir()
    m = _read_manifest(directory)
    specs = {s.name: s for s in registry.shipped_modules()}
    if m is None:
        return VerifyReport(sorted(specs), [], [], [], [f"no {MANIFEST} in {directory}"])
    wrong = []
    if m.nvrtc_version != EXPECTED_NVRTC:
        wrong.append(f"NVRTC {m.nvrtc_version} (expected {EXPECTED_NVRTC})")
    if m.ptx_isa != EXPECTED_ISA:
        wrong.append(f"PTX ISA {m.ptx_isa} (expected {EXPECTED_ISA})")
    if m.arch != SHIPPED_ARCH:
        wrong.append(f"arch {m.arch} (expected {SHIPPED_ARCH})")
    missing = sorted(n for n in specs if n not in m.modules)
    stale = sorted(n for n, s in specs.items() if n in m.modules
                   and m.modules[n].sha256 != s.sha256)
    extra = sorted(n for n in m.modules if n not in specs)
    bad = sorted(e.file for e in m.modules.values() if not (directory / e.file).is_file())
    return VerifyReport(missing, stale, extra, bad, wrong)
