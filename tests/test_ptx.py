"""kernels_ptx/: fresh (matches the kernel sources), ISA 8.0, assembles for sm_70 and sm_90 with
the CUDA 12 ptxas, small, and shipped inside the wheel.

SM 7.0 and CUDA 12.0 drivers, which no test machine has, count as covered by these checks: every
CUDA 12.0+ driver JITs PTX ISA 8.0, and ptxas assembling it for sm_70 shows Volta can run it.
A missing ptxas skips (with the reason) except under PYCUDAMLX_REQUIRE_NVRTC=1 (CI), where it fails.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import gzip
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from pycudamlx import _env
from pycudamlx.backend.cuda import ptxstore, registry

from conftest import REPO, require_nvrtc, subprocess_env

PTX_DIR = REPO / "kernels_ptx"
#: "Tens of MB at most" (DESIGN.md); today it is under 1 MiB, so a tenth of that bound is plenty.
SIZE_BOUND = 16 << 20


def _shipped() -> list[Path]:
    return sorted(PTX_DIR.glob("*.ptx.gz"))


def test_ptx_verify_passes_on_the_committed_kernels_ptx():
    """The freshness test: fails whenever a kernel source changed and kernels_ptx was not rebuilt."""
    report = ptxstore.verify(PTX_DIR)
    assert report.ok, (
        "kernels_ptx/ does not match the kernel sources: "
        f"missing={report.missing} stale={report.stale} extra={report.extra} "
        f"bad_files={report.bad_files} wrong_toolchain={report.wrong_toolchain}. Rebuild it: "
        "scripts/fetch-nvrtc-12.0.sh DIR && python cli.py ptx build --nvrtc-dir DIR")


def test_the_checkout_uses_this_kernels_ptx():
    assert ptxstore.ptx_dir() == PTX_DIR


def test_verify_notices_a_changed_source(monkeypatch):
    specs = registry.shipped_modules()
    changed = dataclasses.replace(specs[0], source=specs[0].source + "\n// changed\n")
    new = dataclasses.replace(specs[1], name="copy.brand.new")
    monkeypatch.setattr(registry, "builtin_modules",
                        lambda dtypes=registry.COMMON_DTYPES: [changed, new] + specs[2:])
    report = ptxstore.verify(PTX_DIR)
    assert not report.ok
    assert report.stale == [specs[0].name]
    assert report.missing == ["copy.brand.new"]
    assert report.extra == [specs[1].name]


def test_lookup_serves_current_modules_and_refuses_stale_ones():
    spec = registry.binary_module("add", "float32")
    shipped = ptxstore.lookup(spec)
    assert shipped is not None
    ptx, lowered = shipped
    assert ptx.endswith(b"\0") and set(lowered) == set(spec.expressions)
    stale = dataclasses.replace(spec, source=spec.source + "\n")
    assert ptxstore.lookup(stale) is None
    assert ptxstore.lookup(registry.binary_module("add", "float64")) is None  # not shipped


def test_manifest_matches_the_files_and_the_toolchain():
    manifest = json.loads((PTX_DIR / ptxstore.MANIFEST).read_text())
    assert manifest["nvrtc_version"] == "12.0"
    assert manifest["ptx_isa"] == "8.0"
    assert manifest["arch"] == "compute_70"
    files = {m["file"] for m in manifest["modules"].values()}
    assert files == {p.name for p in _shipped()}
    assert set(manifest["modules"]) == {s.name for s in registry.shipped_modules()}


def test_every_shipped_ptx_is_isa_8_0_for_sm_70_with_every_entry():
    manifest = json.loads((PTX_DIR / ptxstore.MANIFEST).read_text())
    for name, m in manifest["modules"].items():
        ptx = gzip.decompress((PTX_DIR / m["file"]).read_bytes())
        assert ptxstore.ptx_isa_of(ptx) == "8.0", name
        assert re.search(rb"^\.target sm_70\b", ptx, re.MULTILINE), name
        assert b"release 12.0" in ptx[:400], name  # emitted by NVRTC 12.0
        for mangled in m["lowered"].values():
            assert f".entry {mangled}(".encode() in ptx, (name, mangled)


def test_shipped_ptx_is_reproducible():
    """No per-run NVRTC name suffix survives, so a rebuild rewrites only what changed."""
    for f in _shipped():
        ptx = gzip.decompress(f.read_bytes())
        assert not re.search(rb"_cu_(?!00000000_0)[0-9a-f]{8}_[0-9]+", ptx), f.name


def test_normalising_internal_names_keeps_the_mangling_valid():
    name = b"_INTERNAL_00000000_13_where_bool_cu_96561710_32736"
    ptx = (b".global .u64 _ZN" + str(len(name)).encode() + name + b"2nv6target5sm_35E = 2;\n"
           b"_Z13binary_contigIfEvPKT_")
    fixed = ptxstore.normalise_internal_names(ptx)
    new = b"_INTERNAL_00000000_13_where_bool_cu_00000000_0"
    assert fixed == (b".global .u64 _ZN" + str(len(new)).encode() + new
                     + b"2nv6target5sm_35E = 2;\n_Z13binary_contigIfEvPKT_")
    assert ptxstore.normalise_internal_names(fixed) == fixed


def test_kernels_ptx_stays_small():
    total = sum(p.stat().st_size for p in PTX_DIR.iterdir() if p.is_file())
    assert total < SIZE_BOUND, f"kernels_ptx is {total / 2**20:.1f} MiB"


# --------------------------------------------------------------------------------------------------
# ptxas


def find_ptxas() -> Path | None:
    """The ptxas of the nvidia-cuda-nvcc-cu12 wheel (site-packages/nvidia/cuda_nvcc/bin)."""
    spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        candidate = Path(loc) / "bin" / "ptxas"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def ptxas() -> Path:
    path = find_ptxas()
    if path is None:
        reason = ("ptxas of CUDA 12 not found: pip install nvidia-cuda-nvcc-cu12 "
                  "(part of the test extra)")
        if _env.REQUIRE_NVRTC:
            pytest.fail(reason + " (required under PYCUDAMLX_REQUIRE_NVRTC=1)")
        pytest.skip(reason)
    version = subprocess.run([str(path), "--version"], capture_output=True, text=True).stdout
    assert "release 12." in version, f"{path} is not a CUDA 12 ptxas:\n{version}"
    return path


def test_every_shipped_ptx_assembles_for_sm_70_and_sm_90(ptxas, tmp_path):
    files = _shipped()
    assert files
    sources = []
    for f in files:
        plain = tmp_path / f.name[: -len(".gz")]
        plain.write_bytes(gzip.decompress(f.read_bytes()))
        sources.append(plain)

    def assemble(job: tuple[Path, str]) -> str | None:
        src, arch = job
        proc = subprocess.run([str(ptxas), f"-arch={arch}", "-o", os.devnull, str(src)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return f"{src.name} for {arch}: {proc.stderr.strip()[:500]}"
        return None

    jobs = [(s, arch) for s in sources for arch in ("sm_70", "sm_90")]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(assemble, jobs) if f]
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------------------------------
# The wheel


@pytest.mark.slow
def test_the_wheel_ships_kernels_ptx_and_the_kernel_sources(tmp_path):
    # Build from a copy, so the checkout gets no build/ or .egg-info from the test.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "pycudamlx", src / "pycudamlx", ignore=ignore)
    shutil.copytree(PTX_DIR, src / "kernels_ptx", ignore=ignore)
    out = tmp_path / "dist"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(out), str(src)], capture_output=True, text=True,
                          env=subprocess_env(), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(out.glob("pycudamlx-*.whl"))
    assert len(wheels) == 1
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    assert "pycudamlx/kernels_ptx/manifest.json" in names
    for f in _shipped():
        assert f"pycudamlx/kernels_ptx/{f.name}" in names
    kernel_sources = {p.name for p in (REPO / "pycudamlx/backend/cuda/kernels").iterdir()
                      if p.suffix in (".cu", ".cuh")}
    assert kernel_sources
    for name in kernel_sources:
        assert f"pycudamlx/backend/cuda/kernels/{name}" in names
    assert "pycudamlx/cli.py" in names and "pycudamlx/__main__.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "pycudamlx = pycudamlx.cli:main" in zipfile.ZipFile(wheels[0]).read(
        entry_points).decode()
    print(f"wheel built in {time.monotonic() - t0:.1f} s")


# --------------------------------------------------------------------------------------------------
# Content digests: a shipped file that was edited, truncated or replaced is never loaded


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "kernels_ptx"
    shutil.copytree(PTX_DIR, d)
    return d


def _tamper(d: Path, module: str, how: str) -> Path:
    entry = json.loads((d / ptxstore.MANIFEST).read_text())["modules"][module]
    path = d / entry["file"]
    if how == "trap":  # the hostile edit of the issue: valid PTX, still gzip, different code
        ptx = gzip.decompress(path.read_bytes())
        assert b"ret;" in ptx
        path.write_bytes(gzip.compress(ptx.replace(b"ret;", b"trap;", 1), mtime=0))
    elif how == "random":
        path.write_bytes(os.urandom(path.stat().st_size))
    else:  # truncated
        path.write_bytes(path.read_bytes()[:100])
    return path


def test_every_shipped_file_has_a_matching_digest():
    m = ptxstore.read_manifest(PTX_DIR)
    for e in m.modules.values():
        assert e.file_sha256 == ptxstore.file_digest((PTX_DIR / e.file).read_bytes()), e.file


@pytest.mark.parametrize("how", ["trap", "random", "truncated"])
def test_verify_and_lookup_refuse_a_tampered_file(tmp_path, monkeypatch, how):
    d = _copy(tmp_path)
    module = "binary.add.float32"
    path = _tamper(d, module, how)
    report = ptxstore.verify(d)
    assert not report.ok and report.corrupt == [path.name]
    assert not (report.missing or report.stale or report.bad_files or report.manifest)
    monkeypatch.setattr(ptxstore, "ptx_dir", lambda: d)
    ptxstore.manifest.cache_clear()
    try:
        with pytest.raises(ptxstore.ShippedPtxError) as err:
            ptxstore.lookup(registry.binary_module("add", "float32"))
        assert str(path) in str(err.value) and "does not match its digest" in str(err.value)
        assert "ptx build" in str(err.value) and "einstall" in str(err.value)
        assert ptxstore.lookup(registry.binary_module("multiply", "float32")) is not None
    finally:
        ptxstore.manifest.cache_clear()


_LOAD_CHILD = r"""
import sys
from pathlib import Path
from pycudamlx.backend.cuda import compiler, driver, ptxstore, registry
ptxstore.ptx_dir = lambda: Path(sys.argv[1])
driver.use_null_driver()
dev = driver.get_device(0)
for op in ("add", "multiply"):
    try:
        mod = compiler.load(registry.binary_module(op, "float32"), dev)
        print(op, "LOADED", mod.origin)
    except compiler.KernelUnavailableError as exc:
        print(op, "REFUSED", exc)
"""


@pytest.mark.parametrize("nvrtc", ["disabled", "enabled"])
def test_a_tampered_file_is_never_handed_to_the_driver(tmp_path, nvrtc):
    """Without NVRTC the load fails with the file and the remedy named; with NVRTC it is built
    afresh (a warning names the file). The untouched module still loads from kernels_ptx."""
    if nvrtc == "enabled":
        require_nvrtc()
    d = _copy(tmp_path)
    path = _tamper(d, "binary.add.float32", "trap")
    env = subprocess_env(PYCUDAMLX_CACHE_DIR=str(tmp_path / "cache"),
                         PYCUDAMLX_DISABLE_NVRTC="1" if nvrtc == "disabled" else "0")
    env.pop("PYCUDAMLX_NULL_DRIVER", None)
    proc = subprocess.run([sys.executable, "-c", _LOAD_CHILD, str(d)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["multiply"] == "LOADED shipped"
    if nvrtc == "disabled":
        assert lines["add"].startswith("REFUSED") and str(path) in lines["add"]
        assert "does not match its digest" in lines["add"] and "ptx build" in lines["add"]
    else:
        assert lines["add"] == "LOADED nvrtc"
        assert str(path) in proc.stderr and "does not match its digest" in proc.stderr


@pytest.mark.parametrize("text,problem", [
    ('{"modules": 5}', "'nvrtc_version' is missing"),
    ('{"nvrtc_version": "12.0", "ptx_isa": "8.0", "arch": "compute_70", "modules": 5}',
     "'modules' is missing or not an object"),
    ("[1, 2]", "expected a JSON object, found list"),
    ("", "not valid JSON"),
    ('{"nvrtc_version": "12.0", "ptx_is', "not valid JSON (truncated?)"),
    ('{"nvrtc_version": "12.0", "ptx_isa": "8.0", "arch": "compute_70", "modules": '
     '{"m": {"sha256": "' + "0" * 64 + '", "file_sha256": "' + "0" * 64 + '", '
     '"file": "../../etc/passwd", "lowered": {}}}}', "not a plain *.ptx.gz name"),
    ('{"nvrtc_version": "12.0", "ptx_isa": "8.0", "arch": "compute_70", "modules": '
     '{"m": {"sha256": "' + "0" * 64 + '", "file": "m.ptx.gz", "lowered": {}}}}',
     "'file_sha256' is missing"),
])
def test_a_malformed_manifest_is_one_clear_problem(tmp_path, text, problem):
    (tmp_path / ptxstore.MANIFEST).write_text(text)
    with pytest.raises(ptxstore.ManifestError) as err:
        ptxstore.read_manifest(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / ptxstore.MANIFEST}: ")
    assert problem in str(err.value) and "\n" not in str(err.value)
    report = ptxstore.verify(tmp_path)
    assert not report.ok and len(report.manifest) == 1 and problem in report.manifest[0]
    assert not (report.missing or report.bad_files or report.wrong_toolchain)


def test_a_truncated_manifest_of_the_real_kernels_ptx(tmp_path):
    d = _copy(tmp_path)
    path = d / ptxstore.MANIFEST
    path.write_bytes(path.read_bytes()[:5000])
    report = ptxstore.verify(d)
    assert report.manifest and "truncated" in report.manifest[0] and not report.missing
