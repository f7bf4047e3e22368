"""Environment variables: parsed in pycudamlx/_env.py alone, validated (a bad value is one
ConfigError naming the variable and what it accepts), and all listed in docs/configuration.md."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pycudamlx import _env, cli

from conftest import REPO, subprocess_env

BOOLS = [n for n, v in _env.VARIABLES.items() if v.kind == "bool"]


@pytest.fixture(autouse=True)
def _reread_after():
    yield
    _env._memo.clear()
    try:
        _env.refresh()
    except _env.ConfigError:  # the process's own environment was bad to begin with
        pass


@pytest.mark.parametrize("name", BOOLS)
def test_booleans_accept_the_documented_values_and_nothing_else(monkeypatch, name):
    for raw, want in [("1", True), ("0", False), ("true", True), ("FALSE", False),
                      (" yes ", True), ("off", False)]:
        monkeypatch.setenv(name, raw)
        assert _env.flag(name) is want, raw
    monkeypatch.setenv(name, "")
    assert _env.flag(name) is _env.VARIABLES[name].default
    monkeypatch.setenv(name, "bogus")
    with pytest.raises(_env.ConfigError) as err:
        _env.flag(name)
    assert str(err.value) == (f"{name}='bogus' is not valid: it accepts {_env.BOOLEAN_VALUES}")


@pytest.mark.parametrize("name,raw,accepts", [
    ("PYCUDAMLX_MEMORY", "bogus", "managed or device"),
    ("PYCUDAMLX_CUFFT_PLAN_CACHE", "-5", "an integer >= 1"),
    ("PYCUDAMLX_CUFFT_PLAN_CACHE", "lots", "an integer >= 1"),
    ("PYCUDAMLX_FUZZ_EXAMPLES", "1.5", "an integer >= 0"),
])
def test_other_kinds_name_what_they_accept(monkeypatch, name, raw, accepts):
    monkeypatch.setenv(name, raw)
    with pytest.raises(_env.ConfigError, match=re.escape(f"{name}={raw!r} is not valid")) as err:
        _env.get(name)
    assert accepts in str(err.value)


def test_valid_other_values(monkeypatch):
    monkeypatch.setenv("PYCUDAMLX_MEMORY", "Device")
    assert _env.get("PYCUDAMLX_MEMORY") == "device"
    monkeypatch.setenv("PYCUDAMLX_CUFFT_PLAN_CACHE", "7")
    assert _env.get("PYCUDAMLX_CUFFT_PLAN_CACHE") == 7
    monkeypatch.delenv("PYCUDAMLX_CUFFT_PLAN_CACHE")
    assert _env.get("PYCUDAMLX_CUFFT_PLAN_CACHE") == 32


def test_refresh_raises_and_check_repeats_it(monkeypatch):
    monkeypatch.setenv("PYCUDAMLX_STRICT_GPU", "maybe")
    with pytest.raises(_env.ConfigError, match="PYCUDAMLX_STRICT_GPU='maybe'"):
        _env.refresh()
    with pytest.raises(_env.ConfigError, match="PYCUDAMLX_STRICT_GPU"):
        _env.check()
    assert _env.STRICT_GPU is False  # the default stands in until fixed
    monkeypatch.setenv("PYCUDAMLX_STRICT_GPU", "true")
    _env.refresh()
    _env.check()
    assert _env.STRICT_GPU is True


@pytest.mark.parametrize("name,raw", [("PYCUDAMLX_DISABLE_NVRTC", "bogus"),
                                      ("PYCUDAMLX_MEMORY", "bogus"),
                                      ("PYCUDAMLX_CUFFT_PLAN_CACHE", "-5"),
                                      ("MLX_ENABLE_TF32", "maybe")])
def test_every_command_says_it_in_one_line(name, raw):
    result = CliRunner().invoke(cli.main, ["cache", "info"], env={name: raw})
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: {name}={raw!r} is not valid: it accepts {_env._accepts(_env.VARIABLES[name])}"]


def test_importing_the_library_raises_one_config_error():
    env = subprocess_env(PYCUDAMLX_FUSION="sometimes")
    proc = subprocess.run([sys.executable, "-c", "import pycudamlx.core"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        "pycudamlx._env.ConfigError: PYCUDAMLX_FUSION='sometimes' is not valid: it accepts "
        + _env.BOOLEAN_VALUES)


def test_disable_nvrtc_error_does_not_quote_a_value(monkeypatch):
    from pycudamlx.backend.cuda import nvrtc

    monkeypatch.setattr(_env, "DISABLE_NVRTC", True)
    with pytest.raises(nvrtc.NvrtcUnavailableError, match="disabled by PYCUDAMLX_DISABLE_NVRTC"):
        nvrtc.get_nvrtc()


def _names_in(paths) -> set[str]:
    found: set[str] = set()
    for p in paths:
        found |= set(re.findall(r"\b(?:PYCUDAMLX|MLX)_[A-Z0-9_]*[A-Z0-9]\b", p.read_text()))
    return found


def test_every_variable_the_code_reads_is_declared_and_documented():
    read = _names_in((REPO / "pycudamlx").rglob("*.py")) | _names_in(
        (REPO / "tests").rglob("*.py"))
    read -= {"PYCUDAMLX_NULL_DRIVER_CHILD", "MLX_APPROX", "MLX_OVERFLOW_MESSAGES",
             "MLX_API_VERSION"}  # not variables of the environment
    declared = set(_env.VARIABLES) | set(_env.LAUNCH_VARIABLES)
    assert read - declared == set(), "read but not declared in pycudamlx/_env.py"
    doc = (REPO / "docs" / "configuration.md").read_text()
    for name in declared:
        assert f"`{name}`" in doc, f"{name} is not in docs/configuration.md"


def test_modules_that_read_their_own_variable_agree_with_env():
    """graph/fusion.py and backend/cuda/memory.py still read their switch themselves; for every
    value _env accepts, they must come to the same answer (a bad one never gets that far)."""
    for raw in ("1", "0", "true", "false", "yes", "no", "on", "off", "TRUE"):
        theirs = raw.strip().lower() not in ("0", "false", "no", "off")
        ours = _env._parse(_env.VARIABLES["PYCUDAMLX_FUSION"], raw)
        assert theirs is ours, raw
