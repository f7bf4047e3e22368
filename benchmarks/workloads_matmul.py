"""Matmul workloads: 8192^3 GEMMs in TFLOP/s (2*M*N*K / median time), ours against torch,
CuPy and MLX-CUDA on the same inputs. The issue's bar: >= 0.97 of torch's cuBLAS on each row.

TF32 (float32 only) is set per implementation: ours by PYCUDAMLX_ENABLE_TF32 (read per call),
torch by ``torch.backends.cuda.matmul.allow_tf32``, CuPy by its per-dtype compute type. MLX reads
MLX_ENABLE_TF32 once at start, so its TF32-off row is measured only when the benchmark process
was started with MLX_ENABLE_TF32=0 (its TF32-on row is its default). Each result is checked
against numpy (float64) on a slice of rows, so a fast wrong answer is reported as WRONG.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

N = 8192
CHECK_ROWS = 64
#: Relative error (per unit of |a| @ |b|) tolerated in the check, per row kind.
_TOL = {"bfloat16": 2e-2, "float16": 4e-3, "float32": 1e-5, "tf32": 5e-3}


def _inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return a, b


def _rounded(x: np.ndarray, dtype: str) -> np.ndarray:
    """x as the implementations hold it (rounded to dtype), in float64."""
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16).astype(np.float64)
    return x.astype(np.float64)


def _ours(impl: Any, a: np.ndarray, b: np.ndarray, dtype: str, tf32: bool, reps: int
          ) -> tuple[float, np.ndarray]:
    mx = impl.mx
    old = os.environ.get("PYCUDAMLX_ENABLE_TF32")
    os.environ["PYCUDAMLX_ENABLE_TF32"] = "1" if tf32 else "0"
    try:
        with mx.stream(mx.gpu):
            x = mx.array(a).astype(getattr(mx, dtype))
            y = mx.array(b).astype(getattr(mx, dtype))
            mx.eval(x, y)
            ms = impl.time_gpu(lambda: mx.matmul(x, y), reps)
            out = mx.matmul(x[:CHECK_ROWS], y).astype(mx.float32)
            mx.eval(out)
        return ms, np.array(out)
    finally:
        if old is None:
            os.environ.pop("PYCUDAMLX_ENABLE_TF32", None)
        else:
            os.environ["PYCUDAMLX_ENABLE_TF32"] = old


def _torch(impl: Any, a: np.ndarray, b: np.ndarray, dtype: str, tf32: bool, reps: int
           ) -> tuple[float, np.ndarray]:
    t = impl.torch
    old = t.backends.cuda.matmul.allow_tf32
    t.backends.cuda.matmul.allow_tf32 = tf32
    try:
        tdt = getattr(t, dtype)
        x = t.from_numpy(a).to("cuda").to(tdt)
        y = t.from_numpy(b).to("cuda").to(tdt)
        ms = impl.time_gpu(lambda: x @ y, reps)
        out = (x[:CHECK_ROWS] @ y).float().cpu().numpy()
        return ms, out
    finally:
        t.backends.cuda.matmul.allow_tf32 = old


def _cupy(impl: Any, a: np.ndarray, b: np.ndarray, dtype: str, tf32: bool, reps: int
          ) -> tuple[float, np.ndarray] | None:
    if dtype == "bfloat16":
        return None  # CuPy has no bfloat16
    cp = impl.cp
    linalg = None
    if dtype == "float32":
        try:
            from cupy._core import _routines_linalg as linalg  # type: ignore

            linalg.set_compute_type(cp.float32, linalg.COMPUTE_TYPE_TF32 if tf32 else
                                    linalg.COMPUTE_TYPE_FP32)
        except Exception as exc:  # an API change: skip rather than report the wrong mode
            log.warning("cupy: cannot set the float32 compute type (%r)", exc)
            return None
    try:
        x = cp.asarray(a).astype(dtype)
        y = cp.asarray(b).astype(dtype)
        ms = impl.time_gpu(lambda: x @ y, reps)
        out = cp.asnumpy((x[:CHECK_ROWS] @ y).astype(cp.float32))
        return ms, out
    finally:
        if linalg is not None:
            linalg.set_compute_type(cp.float32, linalg.COMPUTE_TYPE_DEFAULT)


def _mlx(impl: Any, a: np.ndarray, b: np.ndarray, dtype: str, tf32: bool, reps: int
         ) -> tuple[float, np.ndarray] | None:
    if dtype == "float32" and tf32 == (os.environ.get("MLX_ENABLE_TF32", "1") == "0"):
        log.info("mlx-cuda: TF32 is fixed at start (MLX_ENABLE_TF32); row skipped")
        return None
    m = impl.mx
    x = m.array(a).astype(getattr(m, dtype))
    y = m.array(b).astype(getattr(m, dtype))
    m.eval(x, y)
    ms = impl.time_gpu(lambda: m.matmul(x, y), reps)
    out = np.array(m.matmul(x[:CHECK_ROWS], y).astype(m.float32))
    return ms, out


_RUNNERS = {"pycudamlx": _ours, "torch": _torch, "cupy": _cupy, "mlx-cuda": _mlx}


def matmul_workload(impls: dict[str, Any], reps: int, dtype: str, tf32: bool = False,
                    n: int = N) -> dict[str, float]:
    """TFLOP/s of an n^3 matmul per implementation (2 n^3 flops over the median time)."""
    a, b = _inputs(n)
    ra, rb = _rounded(a, dtype), _rounded(b, dtype)
    ref = ra[:CHECK_ROWS] @ rb
    bound = np.abs(ra[:CHECK_ROWS]) @ np.abs(rb)
    tol = _TOL["tf32" if (dtype == "float32" and tf32) else dtype]
    out_round = {"float16": 1e-3, "bfloat16": 8e-3}.get(dtype, 0.0) * np.abs(ref)
    flops = 2.0 * n * n * n
    results: dict[str, float] = {}
    for name, impl in impls.items():
        runner = _RUNNERS.get(name)
        if runner is None:
            continue
        try:
            got = runner(impl, a, b, dtype, tf32, reps)
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        if got is None:
            continue
        ms, out = got
        if not np.all(np.abs(out.astype(np.float64) - ref) <= tol * bound + out_round):
            log.error("%s gave a wrong result for matmul %s (tf32=%s)", name, dtype, tf32)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = flops / (ms * 1e-3) / 1e12
        _free(impls)
    return results


WORKLOADS = {
    "matmul_bf16": ("matmul 8192^3 bfloat16 (bar >= 0.97 x torch)", "TFLOP/s",
                    lambda i, r: matmul_workload(i, r, "bfloat16")),
    "matmul_f16": ("matmul 8192^3 float16 (bar >= 0.97 x torch)", "TFLOP/s",
                   lambda i, r: matmul_workload(i, r, "float16")),
    "matmul_f32": ("matmul 8192^3 float32, TF32 off (bar >= 0.97 x torch)", "TFLOP/s",
                   lambda i, r: matmul_workload(i, r, "float32", tf32=False)),
    "matmul_tf32": ("matmul 8192^3 float32, TF32 on (bar >= 0.97 x torch)", "TFLOP/s",
                    lambda i, r: matmul_workload(i, r, "float32", tf32=True)),
}
