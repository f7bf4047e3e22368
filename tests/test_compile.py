"""NVRTC compiles the built-in kernel modules (no GPU needed); compile errors carry NVRTC's log.

Every module is proven once: the shipped ones by kernels_ptx/ (built by NVRTC from the very
source whose hash ``ptx verify`` checks), every other one here as PTX, and one module per family
down to machine code (CUBIN for sm_90).

Tests that need NVRTC skip with the reason where it is missing, and fail instead under
PYCUDAMLX_REQUIRE_NVRTC=1 (CI), through conftest.require_nvrtc.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys

import pytest

from pycudamlx import _env
from pycudamlx.backend.cuda import compiler, nvrtc, registry

from conftest import REPO, require_nvrtc, subprocess_env

ELF_MAGIC = b"\x7fELF"


def _not_shipped(modules: list[registry.ModuleSpec]) -> list[registry.ModuleSpec]:
    """The modules kernels_ptx/ does not vouch for.

    A shipped module's PTX was built by NVRTC from exactly its current source (``ptx verify``
    compares the hashes, tests/test_ptx.py), so compiling it again here proves nothing new; the
    other dtypes, and modules for newer architectures (min_cc), are proven here.
    """
    shipped = {s.name for s in registry.shipped_modules()}
    return [s for s in modules if s.name not in shipped]


def _one_per_family(modules: list[registry.ModuleSpec]) -> list[registry.ModuleSpec]:
    """The first module of each family: machine code (ptxas) for every module would cost CI
    many minutes; the front end of each is already proven by PTX."""
    chosen: dict[str, registry.ModuleSpec] = {}
    for spec in modules:
        chosen.setdefault(spec.family, spec)
    return list(chosen.values())


def _compile_all(target: str, check, select) -> None:
    """Compile the modules ``select`` picks from every built-in module for ``target``; report
    every failure."""
    nv = require_nvrtc()
    modules = select(registry.builtin_modules(registry.ALL_DTYPES))
    assert len(modules) > 10

    def one(spec: registry.ModuleSpec) -> str | None:
        try:
            check(spec, target, nv)
        except Exception as exc:  # collected, so one run shows every broken module
            return f"{spec.name}: {type(exc).__name__}: {exc}"
        return None

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(one, modules) if f]
    assert not failures, f"{len(failures)} of {len(modules)} modules failed:\n" + "\n".join(
        failures[:20])


def _check_lowered(spec: registry.ModuleSpec, lowered: dict[str, str]) -> None:
    assert set(lowered) == set(spec.expressions)
    assert all(name.startswith("_Z") for name in lowered.values()), lowered


def _cubin(spec: registry.ModuleSpec, target: str, nv: nvrtc.Nvrtc) -> None:
    cc = compiler.parse_arch(target)
    assert cc in nv.supported_archs(), f"NVRTC {nv.version_string} cannot target {target}"
    entry = compiler.compile_for_arch(spec, cc, nv)  # the runtime's own path
    assert entry.kind == "cubin" and entry.image.startswith(ELF_MAGIC)
    _check_lowered(spec, entry.lowered)


def _ptx(spec: registry.ModuleSpec, target: str, nv: nvrtc.Nvrtc) -> None:
    options = list(registry.BUILTIN_OPTIONS) + [f"-arch={target}"]
    result = nv.compile(spec.name, spec.source, spec.expressions, options, want_cubin=False)
    ptx = result.image.rstrip(b"\0")
    assert result.kind == "ptx" and b".version" in ptx
    assert b".target sm_75" in ptx
    for mangled in result.lowered.values():
        assert f".entry {mangled}(".encode() in ptx
    _check_lowered(spec, result.lowered)


def test_one_module_per_family_compiles_to_cubin_for_sm_90():
    _compile_all("sm_90", _cubin, _one_per_family)


def test_modules_not_shipped_compile_to_ptx_for_compute_75():
    _compile_all("compute_75", _ptx, _not_shipped)


# --------------------------------------------------------------------------------------------------
# Errors


BROKEN = """
extern "C" __global__ void broken(float* out) {
  out[0] = 1.0f +;   // a syntax error
}
"""


def test_syntax_error_raises_kernel_compile_error_with_nvrtcs_log(nvrtc_lib):
    with pytest.raises(nvrtc.KernelCompileError) as info:
        nvrtc_lib.compile("broken_module", BROKEN, [], ["-arch=compute_75"], want_cubin=False)
    err = info.value
    assert err.module == "broken_module"
    assert "error" in err.log and "expected an expression" in err.log
    assert err.log.strip() in str(err)
    assert "broken_module" in str(err) and "-arch=compute_75" in str(err)


def test_syntax_error_through_the_compiler(nvrtc_lib):
    spec = registry.ModuleSpec("broken.float32", "broken", BROKEN, (), ("float32",))
    with pytest.raises(compiler.KernelCompileError, match="expected an expression"):
        compiler.compile_for_arch(spec, 80, nvrtc_lib)


def test_an_arch_nvrtc_cannot_target_is_a_clear_error(nvrtc_lib):
    archs = nvrtc_lib.supported_archs()
    too_old = min(archs) - 1
    spec = registry.copy_module("float32", "float32")
    with pytest.raises(compiler.KernelCompileError) as info:
        compiler.compile_for_arch(spec, too_old, nvrtc_lib)
    assert f"cannot target sm_{too_old}" in str(info.value)


def test_a_newer_arch_than_nvrtc_knows_gets_ptx(nvrtc_lib):
    newest = max(nvrtc_lib.supported_archs())
    spec = registry.copy_module("float32", "float32")
    entry = compiler.compile_for_arch(spec, newest + 1, nvrtc_lib)
    assert entry.kind == "ptx" and f".target sm_{newest}".encode() in entry.image


def test_compiling_leaves_pythons_shared_bytes_objects_alone(nvrtc_lib, capsys):
    # Regression: NVRTC once wrote an empty log (one NUL) into b" " * 1, which is CPython's
    # shared b" "; every later print() then separated its arguments with "\x00".
    compiler.compile_for_arch(registry.copy_module("float32", "float32"), 80, nvrtc_lib)
    nvrtc_lib.compile("empty_log", 'extern "C" __global__ void k() {}', [],
                      ["-arch=compute_75"], want_cubin=False)
    assert b" "[0] == 32 and bytes([0]) == b"\0"
    print("x", "y")
    assert capsys.readouterr().out == "x y\n"


def test_disabled_nvrtc_is_unavailable(monkeypatch):
    monkeypatch.setattr(_env, "DISABLE_NVRTC", True)
    with pytest.raises(nvrtc.NvrtcUnavailableError, match="PYCUDAMLX_DISABLE_NVRTC"):
        nvrtc.get_nvrtc()


@pytest.mark.parametrize("require, outcomes, code", [
    ("0", ("1 skipped",), 0),
    ("1", ("1 failed", "1 error"), 1),  # pytest.fail in a fixture reports an error
])
def test_missing_nvrtc_skips_with_the_reason_unless_required(require, outcomes, code):
    env = subprocess_env(PYCUDAMLX_DISABLE_NVRTC="1", PYCUDAMLX_REQUIRE_NVRTC=require)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider",
         "tests/test_compile.py::test_syntax_error_raises_kernel_compile_error_with_nvrtcs_log"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert any(o in proc.stdout for o in outcomes), proc.stdout
    assert "PYCUDAMLX_DISABLE_NVRTC" in proc.stdout  # the reason is shown
