"""Shared fixtures: the `gpu` marker's auto-skip, a GPU device, and NVRTC (skip, or fail in CI).

A test marked ``@pytest.mark.gpu`` is skipped, with the reason, where no driver or no device is
present; PYCUDAMLX_STRICT_GPU=1 changes nothing here (it makes host fallbacks raise, not tests
run). A test that needs NVRTC takes the ``nvrtc_lib`` fixture (or calls require_nvrtc): it skips with the reason where NVRTC
is missing, and fails instead when PYCUDAMLX_REQUIRE_NVRTC=1 (set by .ci/run).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from pycudamlx import _env

REPO = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here (None when they can). Initialises the driver once."""
    from pycudamlx.backend.cuda import driver

    return driver.unavailable_reason()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Tests of managed-memory behaviour (the ``managed`` fixture) carry the ``managed`` marker,
    # added before -m deselects, so a device-mode run can leave them out: -m "gpu and not managed".
    for item in items:
        if "managed" in getattr(item, "fixturenames", ()):
            item.add_marker("managed")
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # "No tests collected" (exit 5) means pytest ran from the wrong place or every test was
    # deselected; CI must never read that as anything but a failure with a clear cause.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line("error: no tests were collected (run pytest from the repository "
                          "root, or check the -m/-k selection)", red=True)


@pytest.fixture(scope="session")
def gpu_device():
    """GPU 0, or a skip with the reason where there is none."""
    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs a GPU: {reason}")
    from pycudamlx.backend.cuda import driver

    return driver.get_device(0)


def require_nvrtc():
    """The runtime's NVRTC; skip with the reason, or fail under PYCUDAMLX_REQUIRE_NVRTC=1."""
    from pycudamlx.backend.cuda import nvrtc

    try:
        return nvrtc.get_nvrtc()
    except nvrtc.NvrtcUnavailableError as exc:
        if _env.REQUIRE_NVRTC:
            pytest.fail(f"NVRTC is required (PYCUDAMLX_REQUIRE_NVRTC=1) but unavailable: {exc}")
        pytest.skip(f"needs NVRTC: {exc}")


@pytest.fixture(scope="session")
def nvrtc_lib():
    """The runtime's NVRTC (see require_nvrtc)."""
    return require_nvrtc()


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that imports this checkout's pycudamlx."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env
