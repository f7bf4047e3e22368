"""mlx-lm, unchanged, on pycudamlx: generation, samplers and logits processors, batched
generation, prompt caches, quantizing conversion, LoRA training and several model families,
on tiny random models (tests/mlx_lm_cases.py builds them; no hub).

CPU: each case prints what real MLX's CPU build prints, tokens exactly and floats to 1e-4.
GPU: the same cases on the GPU give the CPU's tokens, floats to 2e-3 (other summation orders;
float32 products without TF32).
The mlx-lm command line runs through ``pycudamlx run -m mlx_lm``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, subprocess_env

# mlx-lm runs in subprocesses only (through the alias there): here it need only be installed;
# importing it would import `mlx`, which a GPU machine without real MLX does not have.
for _module in ("mlx_lm", "tokenizers", "transformers", "safetensors"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"{_module} is not installed (the test extra installs it)",
                    allow_module_level=True)

CASES_SCRIPT = Path(__file__).with_name("mlx_lm_cases.py")
CASES = ["greedy", "chat_template", "sampling", "batch", "prompt_cache", "convert_quantized",
         "families", "lora"]
#: Runs a case under pycudamlx on the given default device.
_OURS = ("import sys, runpy, pycudamlx.mlx_alias, pycudamlx.core as mx; "
         "mx.set_default_device(getattr(mx, sys.argv[1])); sys.argv = sys.argv[2:]; "
         "runpy.run_path(sys.argv[0], run_name='__main__')")


def _env() -> dict[str, str]:
    env = subprocess_env()
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


def _result(args: list[str], env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run(args, cwd=REPO, env=env or _env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(line[-1][len("RESULT "):])


def _ours(work: Path, case: str, device: str = "cpu", **env: str) -> dict:
    return _result([sys.executable, "-c", _OURS, device, str(CASES_SCRIPT), str(work), case],
                   dict(_env(), **env))


def _mlx(work: Path, case: str) -> dict:
    env = _env()
    env.pop("PYTHONPATH", None)  # real MLX, nothing of ours on the path
    return _result([sys.executable, str(CASES_SCRIPT), str(work), case], env)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The tiny models, written once with numpy/safetensors/tokenizers (no MLX involved)."""
    folder = tmp_path_factory.mktemp("mlx_lm")
    _ours(folder, "build")
    return folder


def _same(got, want, rel: float, path: str = "") -> None:
    """Integers and strings equal, floats within ``rel`` (relative, at least absolute)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (path, got, want)
        for k in want:
            _same(got[k], want[k], rel, f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, rel, f"{path}[{i}]")
    elif isinstance(want, float):
        assert abs(got - want) <= rel * max(1.0, abs(want)), (path, got, want)
    else:
        assert got == want, (path, got, want)


@pytest.fixture(scope="module")
def mlx_cpu():
    return pytest.importorskip("mlx.core", reason="real MLX (the oracle) is not installed")


@pytest.mark.parametrize("case", CASES)
def test_mlx_lm_case_matches_mlx(work, case, mlx_cpu):
    _same(_ours(work, case), _mlx(work, case), 1e-4, case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_mlx_lm_case_on_the_gpu_matches_the_cpu(work, case, gpu_device):
    # float32 GEMMs in full float32 (MLX_ENABLE_TF32=0): with TF32, MLX's default on NVIDIA
    # GPUs as on M5 Macs, products differ from the CPU's by ~1e-3 and greedy tokens may too
    gpu = _ours(work, case, "gpu", MLX_ENABLE_TF32="0")
    _same(gpu, _ours(work, case, "cpu"), 2e-3, case)


def test_mlx_lm_command_line(work, mlx_cpu):
    """`pycudamlx run -m mlx_lm generate` prints the text real MLX's `python -m mlx_lm` does."""
    args = ["generate", "--model", str(work / "llama"), "--prompt", "the quick brown fox",
            "--max-tokens", "12", "--temp", "0", "--ignore-chat-template"]

    def text(cmd: list[str], env: dict[str, str]) -> str:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        parts = proc.stdout.split("==========")
        assert len(parts) >= 3, proc.stdout
        return parts[1]

    theirs_env = _env()
    theirs_env.pop("PYTHONPATH", None)
    theirs = text([sys.executable, "-m", "mlx_lm", *args], theirs_env)
    ours = text([sys.executable, "-m", "pycudamlx", "run", "-m", "mlx_lm", *args], _env())
    assert ours == theirs and len(ours.strip()) > 0


def test_cases_cover_every_case_function():
    sys.path.insert(0, str(CASES_SCRIPT.parent))
    try:
        import mlx_lm_cases
    finally:
        sys.path.pop(0)
    assert sorted(CASES) == sorted(mlx_lm_cases.CASES)
    assert os.path.basename(mlx_lm_cases.__file__) == "mlx_lm_cases.py"
