"""The precompiled PTX shipped in kernels_ptx/: lookup at run time, build and verify for the CLI.

The PTX is emitted by NVRTC 12.0 for compute_70 (PTX ISA 8.0), which every CUDA 12.0+ and 13.x
driver can JIT for Volta and newer. Each module is one gzip-compressed PTX file (git history and
wheels stay small); manifest.json records, per module, the SHA-256 of the program it came from
(``sha256``: a stale file is never used and ``ptx verify`` fails when a kernel source changed) and
the SHA-256 of the shipped file's bytes (``file_sha256``: a file that was edited, truncated or
replaced is never loaded, and ``ptx verify`` names it). Checking a file costs one hash of its few
compressed KB, once per module and process, when it is first loaded.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import logging
import os
import re
import dataclasses
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


REPAIR = ("Reinstall pycudamlx (pip install --force-reinstall pycudamlx), or rebuild kernels_ptx "
          "with 'pycudamlx ptx build --nvrtc-dir DIR' (scripts/fetch-nvrtc-12.0.sh DIR fetches "
          "NVRTC 12.0).")


class ManifestError(RuntimeError):
    """kernels_ptx/manifest.json is missing, truncated or malformed (one line: file and problem)."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class ShippedPtxError(RuntimeError):
    """A shipped PTX file does not match its digest in the manifest (edited, truncated, replaced
    or missing): it is never loaded."""


@dataclass(frozen=True)
class ShippedModule:
    name: str
    sha256: str         # of the kernel program the file was built from
    file: str
    lowered: dict[str, str]
    file_sha256: str = ""  # of the shipped file's bytes (gzip-compressed PTX)


@dataclass(frozen=True)
class Manifest:
    nvrtc_version: str
    ptx_isa: str
    arch: str
    modules: dict[str, ShippedModule]


_HEX64 = re.compile(r"[0-9a-f]{64}")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\.ptx\.gz")


def file_digest(data: bytes) -> str:
    """The digest manifest.json records for a shipped file (SHA-256 of its bytes, hex)."""
    return hashlib.sha256(data).hexdigest()


def _parse_manifest(raw: object, path: Path) -> Manifest:
    """A Manifest from decoded JSON, or ManifestError naming the first problem."""
    if not isinstance(raw, dict):
        raise ManifestError(path, f"expected a JSON object, found {type(raw).__name__}")
    for key in ("nvrtc_version", "ptx_isa", "arch"):
        if not isinstance(raw.get(key), str):
            raise ManifestError(path, f"{key!r} is missing or not a string")
    mods = raw.get("modules")
    if not isinstance(mods, dict):
        raise ManifestError(path, "'modules' is missing or not an object of name: entry")
    modules: dict[str, ShippedModule] = {}
    for name, m in mods.items():
        where = f"module {name!r}"
        if not isinstance(m, dict):
            raise ManifestError(path, f"{where} is not an object")
        for key in ("sha256", "file_sha256"):
            if not isinstance(m.get(key), str) or not _HEX64.fullmatch(m[key]):
                raise ManifestError(path, f"{where}: {key!r} is missing or not 64 hex digits")
        file = m.get("file")
        if not isinstance(file, str) or not _FILE_NAME.fullmatch(file):
            raise ManifestError(path, f"{where}: 'file' is missing or not a plain *.ptx.gz name")
        lowered = m.get("lowered")
        if not isinstance(lowered, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in lowered.items()):
            raise ManifestError(path, f"{where}: 'lowered' is not an object of strings")
        modules[name] = ShippedModule(name, m["sha256"], file, dict(lowered), m["file_sha256"])
    return Manifest(raw["nvrtc_version"], raw["ptx_isa"], raw["arch"], modules)


def read_manifest(directory: Path) -> Manifest:
    """The manifest of a kernels_ptx directory; ManifestError when it is absent or malformed."""
    path = Path(directory) / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(path, "no such file") from None
    except UnicodeDecodeError:
        raise ManifestError(path, "not UTF-8 text (corrupt)") from None
    except OSError as exc:
        raise ManifestError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        hint = " (truncated?)" if "Expecting" in str(exc) or "Unterminated" in str(exc) else ""
        raise ManifestError(path, f"not valid JSON{hint}: {exc}") from None
    return _parse_manifest(raw, path)


def _read_manifest(directory: Path) -> Manifest | None:
    """The manifest, or None when there is none; a malformed one is logged and ignored."""
    try:
        return read_manifest(directory)
    except ManifestError as exc:
        if exc.problem != "no such file":
            log.warning("%s; the shipped PTX is not used. %s", exc, REPAIR)
        return None


#: Why the shipped manifest could not be used (for the KernelUnavailableError text), or None.
manifest_problem: str | None = None


@functools.lru_cache(maxsize=1)
def manifest() -> Manifest | None:
    """The shipped manifest, read once per process (None when kernels_ptx is absent or unusable)."""
    global manifest_problem
    try:
        manifest_problem = None
        return read_manifest(ptx_dir())
    except ManifestError as exc:
        manifest_problem = str(exc)
        if exc.problem != "no such file":
            log.warning("%s; the shipped PTX is not used. %s", exc, REPAIR)
        return None


def read_checked(directory: Path, shipped: ShippedModule) -> bytes:
    """A shipped file's PTX (decompressed), after checking its digest; ShippedPtxError if the file
    is missing, does not match, or does not decompress."""
    path = Path(directory) / shipped.file
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ShippedPtxError(f"shipped PTX file {path} cannot be read ({exc.strerror or exc}); "
                              f"it is not loaded. {REPAIR}") from None
    if file_digest(data) != shipped.file_sha256:
        raise ShippedPtxError(f"shipped PTX file {path} does not match its digest in "
                              f"{MANIFEST} (edited, truncated or replaced); it is not loaded. "
                              f"{REPAIR}")
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:  # only with a manifest made for it
        raise ShippedPtxError(f"shipped PTX file {path} is not gzip data ({exc}); it is not "
                              f"loaded. {REPAIR}") from None


def lookup(spec: registry.ModuleSpec) -> tuple[bytes, dict[str, str]] | None:
    """Shipped PTX (NUL-terminated) and lowered names for a module, if shipped and current.

    None when the module is not shipped or its source changed; ShippedPtxError when the shipped
    file does not match its digest (it is never handed to the driver)."""
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
    ptx = read_checked(ptx_dir(), shipped)
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
        data = gzip.compress(ptx, compresslevel=9, mtime=0)
        (directory / filename).write_bytes(data)
        lowered = {k: normalise_internal_names(v.encode()).decode()
                   for k, v in result.lowered.items()}
        entries[spec.name] = ShippedModule(spec.name, spec.sha256, filename, lowered,
                                           file_digest(data))
        if progress is not None:
            progress(spec)
    for stale in directory.glob("*.ptx.gz"):
        if stale.name not in {e.file for e in entries.values()}:
            stale.unlink()
    result_manifest = Manifest(nvrtc.version_string, isa or "unknown", SHIPPED_ARCH, entries)
    write_manifest(directory, result_manifest)
    return result_manifest


def write_manifest(directory: Path, m: Manifest) -> None:
    """Write manifest.json atomically (temp file, then rename)."""
    doc = {
        "nvrtc_version": m.nvrtc_version,
        "ptx_isa": m.ptx_isa,
        "arch": m.arch,
        "modules": {name: {"sha256": e.sha256, "file": e.file, "file_sha256": e.file_sha256,
                           "lowered": e.lowered}
                    for name, e in sorted(m.modules.items())},
    }
    tmp = Path(directory) / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, Path(directory) / MANIFEST)
    manifest.cache_clear()


@dataclass(frozen=True)
class VerifyReport:
    missing: list[str]        # built-in modules with no shipped PTX
    stale: list[str]          # shipped, but the source changed since
    extra: list[str]          # shipped modules the registry no longer has
    bad_files: list[str]      # listed in the manifest, absent on disk
    wrong_toolchain: list[str]  # manifest not from NVRTC 12.0 / ISA 8.0 / compute_70
    corrupt: list[str] = dataclasses.field(default_factory=list)  # digest does not match
    manifest: list[str] = dataclasses.field(default_factory=list)  # manifest unusable (one line)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.extra or self.bad_files
                    or self.wrong_toolchain or self.corrupt or self.manifest)


def verify(directory: Path | None = None) -> VerifyReport:
    """Compare kernels_ptx/ with the registry's built-in modules and each file with its digest."""
    directory = Path(directory) if directory is not None else ptx_dir()
    try:
        m = read_manifest(directory)
    except ManifestError as exc:
        return VerifyReport([], [], [], [], [], [], [str(exc)])
    specs = {s.name: s for s in registry.shipped_modules()}
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
    bad, corrupt = [], []
    for e in m.modules.values():
        path = directory / e.file
        if not path.is_file():
            bad.append(e.file)
            continue
        try:
            read_checked(directory, e)
        except ShippedPtxError:
            corrupt.append(e.file)
    return VerifyReport(missing, stale, extra, sorted(bad), wrong, sorted(corrupt))
