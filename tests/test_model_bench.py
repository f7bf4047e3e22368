"""benchmarks/model.py at its tiny shape: the llama model runs on pycudamlx, its greedy tokens
and training losses equal real MLX's from the same numpy weights (float32), and the GPU's tokens
equal the CPU's."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import pytest

from conftest import REPO, subprocess_env

_spec = importlib.util.spec_from_file_location("model_bench", REPO / "benchmarks" / "model.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["model_bench"] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)  # type: ignore[union-attr]

#: Small enough for CI: a 24-token prompt, 12 generated tokens, a 2 x 24 training batch.
SMALL = ["--shape", "tiny", "--dtype", "float32", "--prompt", "24", "--tokens", "12",
         "--batch", "2", "--seq", "24", "--reps", "1", "--warmup", "0"]


def _mlx_or_skip():
    try:
        import mlx.core  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"real MLX is not importable here: {exc}")


@pytest.fixture
def keep_default_device():
    """Runner(device=...) sets the backend's default device: put it back afterwards."""
    import pycudamlx.core as mx

    before = mx.default_device()
    yield
    mx.set_default_device(before)


def _run(backend: str, *extra: str, device: str | None = None) -> dict:
    argv = [*SMALL, "--backend", backend, *extra]
    if device:
        argv += ["--device", device]
    return bench.run_backend(bench.parse_args(argv))


def _by_key(doc: dict) -> dict:
    return {(r["workload"], r["variant"]): r for r in doc["rows"]}


@pytest.fixture(scope="module")
def ours_cpu() -> dict:
    import pycudamlx.core as mx

    before = mx.default_device()
    try:
        return _run("pycudamlx", device="cpu")
    finally:
        mx.set_default_device(before)


def test_pycudamlx_tiny_runs(ours_cpu):
    rows = _by_key(ours_cpu)
    assert set(rows) == {("prefill", "dense"), ("decode", "dense"), ("prefill", "q4"),
                         ("decode", "q4"), ("train", "eager")}
    for r in rows.values():
        assert r["median"] > 0 and r["best"] >= r["median"] and len(r["times_s"]) == 1
    for variant in ("dense", "q4"):
        toks = rows[("decode", variant)]["token_ids"]
        assert len(toks) == 12 and all(0 <= t < 256 for t in toks)
        assert len(set(toks)) > 1  # the weights do not make greedy decoding stick to one token
    losses = rows[("train", "eager")]["losses"]
    assert len(losses) == 1 and math.isfinite(losses[0])
    assert ours_cpu["backend"] == "pycudamlx" and ours_cpu["dtype"] == "float32"
    assert ours_cpu["versions"]["device"] == "Device(cpu, 0)"


def test_compiled_train_step_matches_eager(keep_default_device):
    """mx.compile(step, inputs=state, outputs=state): the same losses as the eager step."""
    runner = bench.Runner("pycudamlx", "cpu")
    args = bench.model_args("tiny", tied=False)
    batch = bench.np.random.default_rng(3).integers(0, 256, (2, 17)).astype(bench.np.uint32)
    losses = {}
    for compiled in (False, True):
        model = runner.build(args, "float32", 0)
        _, losses[compiled] = runner.train_steps(model, batch, 2, compiled, 1)
    assert losses[True] == pytest.approx(losses[False], rel=1e-6)
    assert losses[False][2] < losses[False][0]  # AdamW steps reduce the loss on one batch


def test_tiny_matches_mlx(ours_cpu):
    """Bit-identical weights -> identical greedy tokens (dense and 4-bit) and close losses."""
    _mlx_or_skip()
    theirs = _run("mlx")
    docs = {"pycudamlx": ours_cpu, "mlx": theirs}
    assert bench.check(docs, 1e-4) == []
    a, b = _by_key(ours_cpu), _by_key(theirs)
    for variant in ("dense", "q4"):
        assert a[("decode", variant)]["token_ids"] == b[("decode", variant)]["token_ids"]
    assert a[("train", "eager")]["losses"] == pytest.approx(b[("train", "eager")]["losses"],
                                                            rel=1e-4)


def test_tied_head_matches_mlx(keep_default_device):
    """The tied head (embed_tokens.as_linear, and QuantizedEmbedding.as_linear under q4)."""
    _mlx_or_skip()
    docs = {b: _run(b, "--tied", "--workload", "decode", device="cpu") for b in bench.BACKENDS}
    assert bench.check(docs, 1e-4) == []


def test_compare_cli(tmp_path):
    """--compare --check in one call: both backends in subprocesses, ratios, exit status 0."""
    _mlx_or_skip()
    out = tmp_path / "both.json"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "model.py"), "--compare",
                           "--check", *SMALL, "--workload", "decode", "--variant", "dense",
                           "--json", str(out)], capture_output=True, text=True,
                          env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: greedy tokens identical" in proc.stdout
    assert "ours/mlx" in proc.stdout
    doc = json.loads(out.read_text())
    assert set(doc["runs"]) == {"pycudamlx", "mlx"}
    (row,) = doc["compare"]
    assert row["tokens_equal"] is True and row["ratio"] > 0


def test_decode_compiled_matches_eager_and_mlx(keep_default_device):
    """The compiled step over a fixed-size KV buffer gives eager decode's greedy tokens, and
    MLX's from the same script (dense and 4-bit)."""
    extra = ("--workload", "decode", "--workload", "decode-compiled")
    ours = _by_key(_run("pycudamlx", *extra, device="cpu"))
    for variant in ("dense", "q4"):
        assert (ours[("decode-compiled", variant)]["token_ids"]
                == ours[("decode", variant)]["token_ids"])
    _mlx_or_skip()
    theirs = _by_key(_run("mlx", *extra, device="cpu"))
    for variant in ("dense", "q4"):
        assert (ours[("decode-compiled", variant)]["token_ids"]
                == theirs[("decode-compiled", variant)]["token_ids"])


@pytest.mark.gpu
def test_tiny_gpu_decode_compiled_equals_cpu(keep_default_device, monkeypatch):
    """The compiled decode step on the GPU (a CUDA graph from its third call: the graph's copy
    kernels, flash-decoding over the masked buffer) gives the CPU's greedy tokens."""
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    extra = ("--workload", "decode-compiled", "--tokens", "20")
    gpu = _by_key(_run("pycudamlx", *extra, device="gpu"))
    cpu = _by_key(_run("pycudamlx", *extra, device="cpu"))
    for variant in ("dense", "q4"):
        assert (gpu[("decode-compiled", variant)]["token_ids"]
                == cpu[("decode-compiled", variant)]["token_ids"])


@pytest.mark.gpu
def test_tiny_gpu_tokens_equal_cpu(ours_cpu, keep_default_device, monkeypatch):
    """The tiny model on the GPU (float32 GEMMs without TF32) gives the CPU's greedy tokens."""
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    gpu = _run("pycudamlx", "--workload", "decode", "--workload", "train", device="gpu")
    assert gpu["versions"]["device"] == "Device(gpu, 0)"
    a, b = _by_key(gpu), _by_key(ours_cpu)
    for variant in ("dense", "q4"):
        assert a[("decode", variant)]["token_ids"] == b[("decode", variant)]["token_ids"]
    assert a[("train", "eager")]["losses"] == pytest.approx(b[("train", "eager")]["losses"],
                                                            rel=1e-4)
