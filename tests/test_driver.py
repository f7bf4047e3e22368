"""The driver layer without a GPU: no-driver behaviour, lazy initialisation, error translation.

These need cuda.bindings importable, not a GPU or a driver: error names come from the bindings'
CUresult enum, and the no-driver case is simulated where a driver is present.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pycudamlx.backend.cuda import compiler, driver

from conftest import REPO, subprocess_env

cu = pytest.importorskip("cuda.bindings.driver")


def _run_python(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (clean driver state); it prints one JSON line last."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=REPO, env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# No driver


def test_no_driver_is_one_clear_sentence_without_pathfinder_traceback():
    result = _run_python("""
        import json, traceback
        import cuda.bindings.driver as cu
        from cuda.pathfinder import DynamicLibNotFoundError

        simulated = False
        try:
            cu.cuInit(0)
        except RuntimeError:
            pass  # really no driver here
        else:
            simulated = True  # a driver is present: make cuInit fail as pathfinder does without one
            def cuInit(flags):
                raise DynamicLibNotFoundError(
                    '"cuda" is an NVIDIA driver library and can only be found via system search.')
            cu.cuInit = cuInit

        from pycudamlx.backend.cuda import driver
        errors = []
        for _ in range(2):
            try:
                driver.init()
            except Exception as exc:
                errors.append({"type": type(exc).__name__, "message": str(exc),
                               "formatted": "".join(traceback.format_exception(exc))})
        print(json.dumps({"errors": errors, "reason": driver.unavailable_reason(),
                          "available": driver.is_available(), "expected": driver.NO_DRIVER_MESSAGE,
                          "simulated": simulated}))
    """)
    errors = result["errors"]
    assert len(errors) == 2
    for err in errors:
        assert err["type"] == "CudaUnavailableError"
        assert err["message"] == result["expected"]
        assert "pathfinder" not in err["formatted"]
        assert "DynamicLibNotFoundError" not in err["formatted"]
    message = result["expected"]
    assert "\n" not in message and message.endswith(".") and message.count(". ") == 0
    assert "CPU backend" in message
    assert result["reason"] == message
    assert result["available"] is False


def test_importing_pycudamlx_never_calls_cuinit():
    result = _run_python("""
        import importlib, json, pathlib
        import cuda.bindings.driver as cu

        calls = []
        real = cu.cuInit
        def cuInit(flags):
            calls.append(flags)
            return real(flags)
        cu.cuInit = cuInit

        import pycudamlx
        # Every module file (pkgutil would skip the directories without __init__.py).
        root = pathlib.Path(pycudamlx.__file__).parent
        names = []
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(parts)
            importlib.import_module(name)
            names.append(name)
        from pycudamlx.backend.cuda import driver
        print(json.dumps({"calls": len(calls), "cu_is_none": driver._cu is None,
                          "pid": driver._initialised_pid, "modules": names}))
    """)
    assert result["calls"] == 0
    assert result["cu_is_none"] is True
    assert result["pid"] is None
    assert "pycudamlx.cli" in result["modules"]
    assert "pycudamlx.backend.cuda.memory" in result["modules"]


# --------------------------------------------------------------------------------------------------
# Error translation


@pytest.fixture
def bindings(monkeypatch):
    """driver._cu set to the bindings (for error names), with the sticky-error state restored."""
    monkeypatch.setattr(driver, "_cu", cu)
    monkeypatch.setattr(driver, "_lost", None)
    return cu


def test_out_of_memory_is_a_memory_error(bindings):
    with pytest.raises(driver.CudaOutOfMemoryError) as info:
        driver.raise_for(cu.CUresult(2), "cuMemAlloc")
    err = info.value
    assert isinstance(err, MemoryError) and isinstance(err, driver.CudaError)
    assert "cuMemAlloc" in str(err) and "CUDA_ERROR_OUT_OF_MEMORY" in str(err)
    assert (err.call, err.code, err.name) == ("cuMemAlloc", 2, "CUDA_ERROR_OUT_OF_MEMORY")


def test_sticky_error_makes_every_later_call_raise_context_lost(bindings):
    with pytest.raises(driver.CudaContextLostError) as info:
        driver.raise_for(700, "cuStreamSynchronize")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in str(info.value)
    assert "cuStreamSynchronize" in str(info.value)
    assert driver._lost is not None

    called = []

    def cuCtxSynchronize():
        called.append(1)
        return (cu.CUresult(0),)

    with pytest.raises(driver.CudaContextLostError) as later:
        driver.call(cuCtxSynchronize)
    assert called == []  # refused before reaching the driver
    assert "cuStreamSynchronize" in str(later.value) and "Restart" in str(later.value)
    with pytest.raises(driver.CudaContextLostError):
        driver.check_alive()


def test_no_device_is_unavailable(bindings):
    with pytest.raises(driver.CudaUnavailableError) as info:
        driver.raise_for(100, "cuDeviceGet")
    assert "CUDA_ERROR_NO_DEVICE" in str(info.value) and "cuDeviceGet" in str(info.value)


def test_other_codes_are_plain_cuda_errors_naming_call_and_error(bindings):
    with pytest.raises(driver.CudaError) as info:
        driver.raise_for(1, "cuMemcpyDtoHAsync")
    assert type(info.value) is driver.CudaError
    assert "cuMemcpyDtoHAsync" in str(info.value) and "CUDA_ERROR_INVALID_VALUE" in str(info.value)
    with pytest.raises(driver.CudaError) as unknown:
        driver.raise_for(123456, "cuFoo")
    assert "CUDA_ERROR_123456" in str(unknown.value)


def test_success_is_silent_and_call_unpacks_outputs(bindings):
    driver.raise_for(0, "cuInit")
    ok = cu.CUresult(0)
    assert driver.call(lambda: (ok,)) is None
    assert driver.call(lambda: (ok, 5)) == 5
    assert driver.call(lambda: (ok, 1, 2)) == (1, 2)

    def cuMemGetInfo():
        return (cu.CUresult(2), 0, 0)

    with pytest.raises(driver.CudaOutOfMemoryError, match="cuMemGetInfo"):
        driver.call(cuMemGetInfo)


def test_fork_after_init_gives_the_child_a_clear_error(monkeypatch):
    monkeypatch.setattr(driver, "_cu", None)
    monkeypatch.setattr(driver, "_init_error", None)
    monkeypatch.setattr(driver, "_initialised_pid", 12345)
    driver._after_fork_in_child()
    with pytest.raises(driver.CudaError, match="fork"):
        driver.init()


# --------------------------------------------------------------------------------------------------
# Architectures and devices


@pytest.mark.parametrize("text, cc", [
    ("sm_90", 90), ("sm90", 90), ("compute_90", 90), ("9.0", 90), ("90", 90), (90, 90),
    ("SM_80", 80), (" sm_86 ", 86), ("sm_90a", 90), ("compute_75", 75), ("12.0", 120),
    ("sm_100", 100), ("sm_70", 70),
])
def test_parse_arch_accepts_the_usual_spellings(text, cc):
    assert compiler.parse_arch(text) == cc


@pytest.mark.parametrize("text", ["", "sm_", "foo", "sm_7", "9", "sm_9x", "1000", "sm-90",
                                  "compute_", "9.0.1", None])
def test_parse_arch_rejects_anything_else_with_a_clear_message(text):
    with pytest.raises(ValueError) as info:
        compiler.parse_arch(text)
    assert repr(text) in str(info.value) and "sm_80" in str(info.value)


@pytest.mark.parametrize("index", [2, 5, -1, "0", 1.0, True])
def test_get_device_with_a_bad_index_names_the_count(monkeypatch, index):
    monkeypatch.setattr(driver, "device_count", lambda: 2)
    monkeypatch.setattr(driver, "_devices", {})
    with pytest.raises(ValueError) as info:
        driver.get_device(index)
    assert "2 CUDA devices" in str(info.value) and "0..1" in str(info.value)


def test_get_device_without_devices(monkeypatch):
    monkeypatch.setattr(driver, "device_count", lambda: 0)
    monkeypatch.setattr(driver, "_devices", {})
    with pytest.raises(ValueError, match="0 CUDA devices"):
        driver.get_device(0)
