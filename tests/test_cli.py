"""The CLI through click's CliRunner and as `python cli.py` / `python -m pycudamlx` subprocesses:
exit codes, the no-GPU message, the --json schemas (docs/cli.md), and clear errors for bad input.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pycudamlx import _env, cli, diagnostics
from pycudamlx.backend.cuda import cache as cache_mod
from pycudamlx.backend.cuda import compiler, ptxstore, registry

from conftest import REPO, gpu_unavailable_reason, require_nvrtc, subprocess_env
from test_cache import _read_only

# The documented --json schemas (docs/cli.md). Adding a key is fine; these must stay.
INFO_KEYS = {"schema", "package", "python", "numpy", "cuda_bindings", "nvrtc", "driver",
             "devices", "cache", "kernels_ptx"}
DRIVER_KEYS = {"available", "reason", "version", "cuda_version"}
DEVICE_KEYS = {"index", "name", "compute_capability", "arch", "multiprocessors",
               "memory_total_bytes", "memory_free_bytes", "managed_memory",
               "concurrent_managed_access", "pageable_memory_access", "l2_cache_bytes"}
CACHE_KEYS = {"directory", "exists", "usable", "problem", "entries", "size_bytes",
              "corrupt_entries"}
PTX_KEYS = {"directory", "present", "modules", "files", "size_bytes", "nvrtc_version", "ptx_isa",
            "arch", "verify_ok", "problems"}
PROBLEM_KEYS = {"manifest", "missing", "stale", "extra", "bad_files", "corrupt",
                "wrong_toolchain"}
SMOKE_KEYS = {"schema", "backend", "gpu_unavailable_reason", "ok", "passes"}
PASS_KEYS = {"device", "device_name", "path", "nvrtc", "kernel_sources", "ok", "error", "results"}
ROW_KEYS = {"op", "dtype", "size", "bytes", "status", "time_ms", "gb_per_s", "detail"}

no_gpu = pytest.mark.skipif(gpu_unavailable_reason() is None,
                            reason="checks the behaviour without a GPU, and this machine has one")


def invoke(*args: str, env: dict[str, str] | None = None):
    result = CliRunner().invoke(cli.main, list(args), env=env, prog_name="pycudamlx")
    assert "Traceback" not in result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def run_cli(*args: str, module: bool = False, **env: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pycudamlx"] if module else [sys.executable, str(REPO / "cli.py")]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=REPO,
                          env=subprocess_env(**env), timeout=300)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    return proc


@pytest.fixture(autouse=True)
def _restore_env_flags():
    """The CLI re-reads the environment into pycudamlx._env; undo that after each test."""
    saved = {k: getattr(_env, k) for k in ("DEBUG_SYNC", "DISABLE_NVRTC", "REQUIRE_NVRTC",
                                           "STRICT_GPU", "CACHE_DIR", "_errors")}
    yield
    for k, v in saved.items():
        setattr(_env, k, v)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A private, empty cache directory that the commands use by default."""
    d = tmp_path / "cache"
    monkeypatch.setenv("PYCUDAMLX_CACHE_DIR", str(d))
    return d


# --------------------------------------------------------------------------------------------------
# info


def test_info_exits_0_and_reports_every_part(cache_dir):
    result = invoke("info")
    assert result.exit_code == 0, result.output
    out = result.output
    for label in ("pycudamlx", "Python", "numpy", "cuda-bindings", "NVRTC", "Kernel cache",
                  "kernels_ptx"):
        assert label in out
    assert str(cache_dir) in out and "NVRTC 12.0, PTX ISA 8.0, compute_70" in out
    reason = gpu_unavailable_reason()
    if reason is None:
        assert "GPU 0" in out and "Driver" in out
    else:
        assert out.count(reason) == 1 and "only the CPU backend" in reason


@no_gpu
def test_info_without_gpu_says_so_in_one_line():
    proc = run_cli("info")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "CPU backend" in line]
    assert lines == [gpu_unavailable_reason()]
    assert proc.stderr == ""


def test_info_json_schema(cache_dir):
    result = invoke("info", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert INFO_KEYS <= set(doc) and doc["schema"] == diagnostics.INFO_SCHEMA
    assert set(doc["package"]) == {"name", "version"}
    assert set(doc["nvrtc"]) == {"version", "disabled"}
    for lib in ("cublas", "cufft"):
        assert set(doc[lib]) == {"version", "disabled", "error"}
        assert (doc[lib]["version"] is None) != (doc[lib]["error"] is None)
    assert DRIVER_KEYS <= set(doc["driver"])
    assert CACHE_KEYS <= set(doc["cache"]) and doc["cache"]["directory"] == str(cache_dir)
    assert doc["cache"]["usable"] is True and doc["cache"]["exists"] is False
    assert not cache_dir.exists()  # info creates nothing
    assert PTX_KEYS <= set(doc["kernels_ptx"]) and PROBLEM_KEYS <= set(
        doc["kernels_ptx"]["problems"])
    # (whether kernels_ptx is current is test_ptx.py's freshness test, not this one's)
    assert doc["kernels_ptx"]["verify_ok"] is ptxstore.verify().ok
    assert doc["kernels_ptx"]["present"] is True and doc["kernels_ptx"]["ptx_isa"] == "8.0"
    if doc["driver"]["available"]:
        assert doc["devices"] and all(DEVICE_KEYS <= set(d) for d in doc["devices"])
    else:
        assert doc["devices"] == [] and doc["driver"]["reason"]


def test_info_reports_an_unusable_cache_in_full_then_exits_1(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    result = invoke("info", "--json", env={"PYCUDAMLX_CACHE_DIR": str(d)})
    assert result.exit_code == 1
    doc = json.loads(result.output)  # the whole report still comes out
    cache = doc["cache"]
    assert cache["usable"] is False and "other users can write" in cache["problem"]
    assert "kernels_ptx" in doc and "driver" in doc
    text = invoke("info", env={"PYCUDAMLX_CACHE_DIR": str(d)})
    assert text.exit_code == 1 and "UNUSABLE" in text.output and "kernels_ptx" in text.output
    cache_only = invoke("cache", "info", env={"PYCUDAMLX_CACHE_DIR": str(d)})
    assert cache_only.exit_code == 1 and "UNUSABLE" in cache_only.output


# --------------------------------------------------------------------------------------------------
# smoke


@no_gpu
def test_smoke_without_gpu_runs_the_cpu_check_and_exits_0():
    result = invoke("smoke")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == gpu_unavailable_reason()
    assert "CPU backend" in result.output and "smoke: ok" in result.output
    for op in ("copyto", "fill", "add", "mul"):
        assert op in result.output


@no_gpu
def test_smoke_json_schema_without_gpu():
    result = invoke("smoke", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc) == SMOKE_KEYS
    assert doc["schema"] == "pycudamlx-smoke/1" and doc["backend"] == "cpu" and doc["ok"] is True
    assert doc["gpu_unavailable_reason"] == gpu_unavailable_reason()
    (cpu_pass,) = doc["passes"]
    assert set(cpu_pass) == PASS_KEYS and cpu_pass["path"] == "cpu"
    assert cpu_pass["results"] and all(set(r) == ROW_KEYS for r in cpu_pass["results"])
    assert all(r["status"] == "ok" for r in cpu_pass["results"])


@no_gpu
def test_smoke_require_gpu_exits_1_without_gpu():
    result = invoke("smoke", "--require-gpu")
    assert result.exit_code == 1
    assert "--require-gpu" in result.output and gpu_unavailable_reason() in result.output
    proc = run_cli("smoke", "--require-gpu")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"Error: {gpu_unavailable_reason()} (--require-gpu)"]


@no_gpu
def test_smoke_subprocess_without_gpu():
    proc = run_cli("smoke", module=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == gpu_unavailable_reason()


@no_gpu
def test_smoke_sizes_are_honoured_on_the_cpu():
    doc = json.loads(invoke("smoke", "--json", "--sizes", "5,7").output)
    assert sorted({r["size"] for p in doc["passes"] for r in p["results"]}) == [5, 7]


@no_gpu
def test_smoke_device_without_a_gpu_is_refused():
    result = invoke("smoke", "--device", "3")
    assert result.exit_code == 2 and "GPU 3 does not exist: no GPU is usable here" in result.output
    proc = run_cli("smoke", "--device", "3")
    assert proc.returncode == 2 and "GPU 3 does not exist" in proc.stderr


def test_smoke_rejects_bad_sizes():
    result = invoke("smoke", "--sizes", "1,x")
    assert result.exit_code == 2 and "comma-separated" in result.output
    assert invoke("smoke", "--sizes", "0").exit_code == 2


def test_smoke_cpu_check_catches_a_wrong_result(monkeypatch):
    import numpy as np

    from pycudamlx import smoke
    from pycudamlx.backend import optable

    monkeypatch.setitem(optable.OPS, "add", optable.ElementwiseOp(
        "add", 2, lambda a, b, out=None: np.subtract(a, b, out=out), {"*": "a - b"}))
    p = smoke.cpu_pass(sizes=(1001,))
    assert not p.ok
    bad = [r for r in p.results if r.status == "FAIL"]
    assert [r.op for r in bad] == ["add"] and "elements differ" in bad[0].detail


@pytest.mark.gpu
def test_smoke_on_the_gpu_checks_both_paths(gpu_device, cache_dir):
    proc = run_cli("smoke", "--json", "--sizes", "1,1000003", "--device", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["backend"] == "cuda"
    paths = [p["path"] for p in doc["passes"]]
    assert paths == ["default", "kernels_ptx"]
    ptx_pass = doc["passes"][1]
    assert ptx_pass["kernel_sources"].get("shipped", 0) > 0
    assert not ptx_pass["kernel_sources"].get("nvrtc")
    for p in doc["passes"]:
        ops = {r["op"] for r in p["results"] if r["status"] == "ok"}
        assert ops == {"memcpy", "copyto", "memset", "fill", "add", "mul"}


@pytest.mark.gpu
def test_smoke_with_a_device_that_does_not_exist(gpu_device):
    result = invoke("smoke", "--device", "99")
    assert result.exit_code == 2 and "GPU 99 does not exist" in result.output


# --------------------------------------------------------------------------------------------------
# cache


@pytest.mark.parametrize("arch", ["sm_7", "foo", "sm_", "compute_9x", "1000"])
def test_cache_warm_with_a_bad_arch_is_a_usage_error(arch, cache_dir):
    result = invoke("cache", "warm", "--arch", arch)
    assert result.exit_code == 2
    assert "Invalid value for '--arch'" in result.output and "unknown GPU architecture" in result.output
    proc = run_cli("cache", "warm", "--arch", arch)
    assert proc.returncode == 2 and "unknown GPU architecture" in proc.stderr


def test_cache_warm_for_an_arch_nvrtc_cannot_target(cache_dir):
    nv = require_nvrtc()
    too_old = min(nv.supported_archs()) - 1
    result = invoke("cache", "warm", "--arch", f"sm_{too_old}")
    assert result.exit_code == 2 and f"cannot target sm_{too_old}" in result.output


@no_gpu
def test_cache_warm_without_gpu_or_arch_asks_for_arch(cache_dir):
    require_nvrtc()
    result = invoke("cache", "warm")
    assert result.exit_code == 2 and "--arch sm_80" in result.output


def test_cache_warm_with_a_world_writable_dir_is_a_clear_error(tmp_path):
    require_nvrtc()
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    result = invoke("cache", "warm", "--arch", "sm_90", "--dir", str(d))
    assert result.exit_code == 1
    assert "other users can write" in result.output and f"chmod 700 {d}" in result.output
    proc = run_cli("cache", "warm", "--arch", "sm_90", "--dir", str(d))
    assert proc.returncode == 1 and proc.stderr.startswith("Error: refusing the kernel cache")


def test_cache_warm_with_an_uncreatable_dir_is_a_clear_error(tmp_path):
    require_nvrtc()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = invoke("cache", "warm", "--arch", "sm_90", "--dir", str(blocker / "cache"))
    assert result.exit_code == 1 and "cannot create the kernel cache directory" in result.output


def test_cache_warm_with_a_read_only_dir_is_a_clear_error(tmp_path):
    require_nvrtc()
    d = tmp_path / "ro"
    d.mkdir(mode=0o700)
    with _read_only(d):
        result = invoke("cache", "warm", "--arch", "sm_90", "--dir", str(d))
    assert result.exit_code == 1 and "not readable and writable" in result.output


def test_cache_warm_fills_the_keys_the_runtime_looks_up(tmp_path):
    nv = require_nvrtc()
    d = tmp_path / "warm"
    only = ("copy.float32.*", "binary.add.*")
    modules = [s for s in registry.builtin_modules(registry.COMMON_DTYPES)
               if s.name.startswith(("copy.float32.", "binary.add."))]
    args = ["cache", "warm", "--arch", "sm_80", "--dtypes", "common", "--dir", str(d)]
    for pattern in only:
        args += ["--only", pattern]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert f"{len(modules)} compiled, 0 already cached" in result.output
    kc = cache_mod.KernelCache(d)
    assert len(kc.entries()) == len(modules)
    for spec in modules:
        key = compiler._full_key(compiler._base_key(spec, 80), nv.version_string)
        entry = kc.get(key)
        assert entry is not None and entry.kind == "cubin"
    again = invoke(*args)
    assert again.exit_code == 0 and f"0 compiled, {len(modules)} already cached" in again.output

    info = invoke("cache", "info", "--dir", str(d), "--json")
    doc = json.loads(info.output)
    assert doc["schema"] == "pycudamlx-cache-info/1" and CACHE_KEYS <= set(doc)
    assert doc["entries"] == len(modules) and doc["usable"] is True and doc["size_bytes"] > 0
    assert f"{len(modules)} entries" in invoke("cache", "info", "--dir", str(d)).output

    cleared = invoke("cache", "clear", "--dir", str(d))
    assert cleared.exit_code == 0 and f"Removed {len(modules)} entries" in cleared.output
    assert kc.entries() == []


def test_cache_warm_only_matching_nothing_is_a_usage_error(tmp_path):
    require_nvrtc()
    result = invoke("cache", "warm", "--arch", "sm_80", "--only", "nothing.*", "--dir",
                    str(tmp_path))
    assert result.exit_code == 2 and "no 'all' module matches nothing.*" in result.output


def test_cache_warm_only_explains_module_names(tmp_path):
    require_nvrtc()
    result = invoke("cache", "warm", "--arch", "sm_90", "--dir", str(tmp_path / "c"),
                    "--only", "binary.mul.float32")
    assert result.exit_code == 2
    assert "Did you mean binary.multiply.float32?" in result.output
    assert "FAMILY.OP.DTYPE" in result.output


def test_cache_warm_without_a_terminal_logs_progress_every_few_seconds(tmp_path, monkeypatch):
    """CI logs and nohup: no progress bar, but a line every PROGRESS_INTERVAL seconds, also
    while one long compile is running, and one at the end."""
    require_nvrtc()
    import time

    monkeypatch.setattr(cli, "PROGRESS_INTERVAL", 0.05)
    monkeypatch.setattr(compiler, "warm", lambda spec, cc, nv, kc: time.sleep(0.4) or True)
    result = invoke("cache", "warm", "--arch", "sm_90", "--dir", str(tmp_path / "c"), "--jobs",
                    "1", "--only", "binary.add.float32", "--only", "binary.multiply.float32")
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("Compiling for sm_90: ")]
    assert lines[0] == "Compiling for sm_90: 0/2"
    assert len(lines) >= 6, lines  # ~0.8 s of work at 0.05 s intervals
    assert lines[-1].startswith("Compiling for sm_90: 2/2 (100%)")
    assert any(ln.startswith("Compiling for sm_90: 1/2 (50%)") for ln in lines)
    assert "2 compiled" in result.output


def test_cache_warm_dtype_sets():
    every = {s.name for s in cli._warm_modules("all")}
    common = {s.name for s in cli._warm_modules("common")}
    uncommon = {s.name for s in cli._warm_modules("uncommon")}
    shipped = {s.name for s in registry.shipped_modules(registry.COMMON_DTYPES)}
    assert common == {s.name for s in registry.builtin_modules(registry.COMMON_DTYPES)}
    # "uncommon" is what kernels_ptx/ lacks: other dtypes, and modules for newer architectures
    assert uncommon == every - shipped and common | uncommon == every
    assert "gemm_mma.float16" in uncommon
    assert "copy.float32.float64" in uncommon and "binary.add.float64" in uncommon


def test_cache_clear_of_a_missing_dir(tmp_path):
    result = invoke("cache", "clear", "--dir", str(tmp_path / "nothing"))
    assert result.exit_code == 0 and "Removed 0 entries" in result.output
    assert not (tmp_path / "nothing").exists()


def _filled(d: Path, n: int = 4) -> cache_mod.KernelCache:
    from test_cache import _entry, _key

    kc = cache_mod.KernelCache(d)
    for i in range(n):
        assert kc.put(_key(i), _entry(seed=i))
    return kc


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_cache_info_of_an_uncreatable_dir_says_unusable(tmp_path):
    env = {"PYCUDAMLX_CACHE_DIR": "/proc/nope"}
    doc = json.loads(invoke("cache", "info", "--json", env=env).output)
    assert doc["usable"] is False and "/proc/nope cannot be created" in doc["problem"]
    assert "not created yet" not in invoke("cache", "info", env=env).output
    assert not Path("/proc/nope").exists()
    warm = invoke("cache", "warm", "--arch", "sm_90", "--only", "copy.float32.float32", env=env)
    assert warm.exit_code != 0 and "/proc/nope" in warm.output


def test_cache_info_counts_entries_of_an_unusable_dir(tmp_path):
    d = tmp_path / "shared"
    _filled(d, 5)
    d.chmod(0o777)
    doc = json.loads(invoke("cache", "info", "--json", "--dir", str(d)).output)
    assert doc["usable"] is False and doc["entries"] == 5 and doc["size_bytes"] > 0
    assert "It holds 5 entries" in invoke("cache", "info", "--dir", str(d)).output


def test_cache_info_reports_corrupt_entries(tmp_path):
    d = tmp_path / "cache"
    kc = _filled(d, 3)
    bad = kc.entries()[1]
    bad.write_bytes(bad.read_bytes()[:-10])  # truncated
    doc = json.loads(invoke("cache", "info", "--json", "--dir", str(d)).output)
    assert doc["usable"] is True and doc["entries"] == 3
    [(path, problem)] = [(c["path"], c["problem"]) for c in doc["corrupt_entries"]]
    assert path == str(bad) and re.fullmatch(r"truncated \((\d+) of \1\d* payload bytes\)|"
                                             r"truncated \(\d+ of \d+ payload bytes\)", problem)
    line = invoke("cache", "info", "--dir", str(d)).output
    assert f"3 entries (1 corrupt, e.g. {bad}: {problem}; rebuilt when next needed" in line
    assert sorted(p.name for p in d.iterdir()) == sorted(p.name for p in d.iterdir()
                                                         if not p.name.startswith(".tmp"))


def test_cache_info_and_clear_of_a_read_only_dir(tmp_path):
    d = tmp_path / "ro"
    kc = _filled(d, 4)
    subs = sorted({p.parent for p in kc.entries()})
    with contextlib.ExitStack() as stack:
        stack.enter_context(_read_only(d))
        for sub in subs:
            stack.enter_context(_read_only(sub))
        doc = json.loads(invoke("cache", "info", "--json", "--dir", str(d)).output)
        assert doc["usable"] is False and doc["entries"] == 4
        result = invoke("cache", "clear", "--dir", str(d))
        assert result.exit_code == 1 and "internal error" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert f"could not remove 4 of 4 files from {d}" in result.output
        assert len(kc.entries()) == 4


# --------------------------------------------------------------------------------------------------
# ptx


def test_ptx_verify_of_the_checkout_agrees_with_ptxstore(tmp_path):
    ok = ptxstore.verify().ok  # (test_ptx.py asserts that it is ok)
    result = invoke("ptx", "verify")
    assert result.exit_code == (0 if ok else 1), result.output
    assert ("is current" in result.output) is ok
    doc = json.loads(invoke("ptx", "verify", "--json").output)
    assert doc["ok"] is ok and set(doc["problems"]) == PROBLEM_KEYS
    assert doc["schema"] == "pycudamlx-ptx-verify/1"


def test_ptx_verify_lists_what_is_wrong_and_exits_1(tmp_path):
    d = tmp_path / "kernels_ptx"
    shutil.copytree(REPO / "kernels_ptx", d)
    manifest = json.loads((d / ptxstore.MANIFEST).read_text())
    first, second = sorted(manifest["modules"])[:2]
    manifest["modules"][first]["sha256"] = "0" * 64
    (d / manifest["modules"][second]["file"]).unlink()
    (d / ptxstore.MANIFEST).write_text(json.dumps(manifest))
    result = invoke("ptx", "verify", "--dir", str(d))
    assert result.exit_code == 1
    assert f"stale: {first}" in result.output
    assert f"bad files: {manifest['modules'][second]['file']}" in result.output
    assert "ptx build" in result.output
    proc = run_cli("ptx", "verify", "--dir", str(d))
    assert proc.returncode == 1 and f"stale: {first}" in proc.stdout


def test_ptx_verify_of_an_empty_dir(tmp_path):
    result = invoke("ptx", "verify", "--dir", str(tmp_path))
    assert result.exit_code == 1 and "missing:" not in result.output
    assert f"{tmp_path / 'manifest.json'}: no such file" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "ptx build" in result.output


def test_ptx_verify_names_a_tampered_file(tmp_path):
    import gzip

    d = tmp_path / "kernels_ptx"
    shutil.copytree(REPO / "kernels_ptx", d)
    name = json.loads((d / ptxstore.MANIFEST).read_text())["modules"]["binary.add.float32"]["file"]
    ptx = gzip.decompress((d / name).read_bytes())
    (d / name).write_bytes(gzip.compress(ptx.replace(b"ret;", b"trap;", 1), mtime=0))
    result = invoke("ptx", "verify", "--dir", str(d))
    assert result.exit_code == 1 and f"corrupt: {name}" in result.output
    assert "ptx build" in result.output and "einstall" in result.output
    doc = json.loads(invoke("ptx", "verify", "--dir", str(d), "--json").output)
    assert doc["ok"] is False and doc["problems"]["corrupt"] == [name]
    from pycudamlx import diagnostics as diag

    line = cli._ptx_line(diag.kernels_ptx_info(d))
    assert "VERIFY FAILED: 1 corrupt (run 'pycudamlx ptx verify')" in line


@pytest.mark.parametrize("text", ['{"modules": 5}', '{"nvrtc_version": "12.0", "modu', "\xff"])
def test_a_malformed_manifest_is_one_line_and_exit_1(tmp_path, monkeypatch, text):
    d = tmp_path / "kernels_ptx"
    d.mkdir()
    (d / ptxstore.MANIFEST).write_bytes(text.encode("latin-1"))
    result = invoke("ptx", "verify", "--dir", str(d))
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output and "missing:" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert str(d / ptxstore.MANIFEST) in result.output
    monkeypatch.setattr(ptxstore, "ptx_dir", lambda: d)
    info_result = invoke("info")
    assert "internal error" not in info_result.output
    assert f"UNUSABLE: {d / ptxstore.MANIFEST}" in info_result.output
    doc = json.loads(invoke("info", "--json").output)
    assert doc["kernels_ptx"]["verify_ok"] is False
    assert len(doc["kernels_ptx"]["problems"]["manifest"]) == 1


def test_ptx_build_without_nvrtc_in_the_dir_is_a_clear_error(tmp_path):
    result = invoke("ptx", "build", "--nvrtc-dir", str(tmp_path), "--out", str(tmp_path / "o"))
    assert result.exit_code == 1 and "no libnvrtc.so" in result.output
    missing = invoke("ptx", "build", "--nvrtc-dir", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_ptx_build_into_an_unwritable_place_fails_before_compiling(tmp_path):
    nv = require_nvrtc()
    import cuda.pathfinder

    lib = cuda.pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = invoke("ptx", "build", "--nvrtc-dir", lib, "--allow-other-nvrtc", "--out",
                    str(blocker / "kernels_ptx"))
    assert result.exit_code == 1 and f"cannot create {blocker / 'kernels_ptx'}" in result.output
    assert nv is not None


def test_ptx_build_refuses_an_nvrtc_other_than_12_0(tmp_path):
    nv = require_nvrtc()
    if nv.version_string == "12.0":
        pytest.skip("the installed NVRTC is 12.0 itself")
    import cuda.pathfinder

    lib = cuda.pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path
    out = tmp_path / "out"
    result = invoke("ptx", "build", "--nvrtc-dir", lib, "--out", str(out))
    assert result.exit_code == 1
    assert f"NVRTC {nv.version_string}, not 12.0" in result.output
    assert "--allow-other-nvrtc" in result.output and not out.exists()


# --------------------------------------------------------------------------------------------------
# The app itself


def test_help_version_and_module_entry_point():
    assert "info" in invoke("--help").output
    assert cli.__version__ in invoke("--version").output
    proc = run_cli("--help", module=True)
    assert proc.returncode == 0 and "smoke" in proc.stdout and "Usage: pycudamlx" in proc.stdout


def test_an_internal_error_is_one_line_with_a_hint(monkeypatch):
    def broken() -> dict:
        raise KeyError("oops")

    monkeypatch.setattr(diagnostics, "collect_info", broken)
    result = invoke("info")
    assert result.exit_code == 1
    assert "internal error: KeyError" in result.output and "-vv" in result.output


def test_verbose_logging_goes_to_stderr_not_stdout(tmp_path):
    proc = run_cli("-v", "cache", "clear", "--dir", str(tmp_path))
    assert proc.returncode == 0
    assert proc.stdout.startswith("Removed 0 entries")
