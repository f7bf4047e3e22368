"""Reduction and softmax rows of the benchmark (issue 4 section 1's bars).

- sum_f32: sum of 2^28 float32 into one value, TB/s of bytes read (the bar: >= the best peer,
  CuPy ~4.3 TB/s, torch ~4.2).
- softmax_8192 / softmax_65536x1024: softmax over the last axis of float32 (8192, 8192) and
  (65536, 1024), TB/s of bytes read + written (the bar: >= the best peer, MLX 3.35 TB/s batched
  on the first, torch 3.8 on the second).

Loaded by bench.py (``_load_area_workloads``); each function follows ``_binary_workload``: the
same inputs for every implementation, timed with its own ``time_gpu`` (CUDA events), every
result checked against numpy before its figure counts.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench.reduce")


def _run(impls: dict[str, Any], reps: int, host: np.ndarray, nbytes: int,
         ours: Callable[[Any, Any], Any], torch_fn: Callable[[Any, Any], Any],
         cupy_fn: Callable[[Any, Any], Any] | None, mlx_fn: Callable[[Any, Any], Any],
         check: Callable[[np.ndarray], bool], what: str) -> dict[str, float]:
    """TB/s of ``nbytes`` per call for each implementation whose result passes ``check``."""
    results: dict[str, float] = {}
    for name, impl in impls.items():
        x = None
        try:
            if name == "pycudamlx":
                mx = impl.mx
                x = mx.array(host)
                mx.eval(x)
                ms = impl.time_gpu(lambda: ours(mx, x), reps)
                got = np.asarray(ours(mx, x))
            elif name == "torch":
                t = impl.torch
                x = t.from_numpy(host).to("cuda")
                ms = impl.time_gpu(lambda: torch_fn(t, x), reps)
                got = torch_fn(t, x).cpu().numpy()
            elif name == "cupy":
                if cupy_fn is None:
                    continue
                cp = impl.cp
                x = cp.asarray(host)
                ms = impl.time_gpu(lambda: cupy_fn(cp, x), reps)
                got = cp.asnumpy(cupy_fn(cp, x))
            else:
                m = impl.mx
                x = m.array(host)
                m.eval(x)
                ms = impl.time_gpu(lambda: mlx_fn(m, x), reps)
                got = np.array(mlx_fn(m, x))
        except Exception as exc:  # one implementation failing must not stop the row
            log.warning("%s failed on %s: %r", name, what, exc)
            continue
        if not check(np.asarray(got, dtype=np.float64)):
            log.error("%s gave a wrong result for %s", name, what)
            results[name + " (WRONG)"] = float("nan")
        else:
            results[name] = nbytes / (ms * 1e-3) / 1e12
        del x, got
        _free(impls)
    return results


def sum_workload(impls: dict[str, Any], reps: int, n: int = 1 << 28) -> dict[str, float]:
    """TB/s of sum(x), x = n float32 (bytes: x read once)."""
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    expected = float(host.astype(np.float64).sum())
    return _run(impls, reps, host, host.nbytes,
                ours=lambda mx, x: mx.sum(x),
                torch_fn=lambda t, x: t.sum(x),
                cupy_fn=lambda cp, x: cp.sum(x),
                mlx_fn=lambda m, x: m.sum(x),
                check=lambda got: abs(float(got) - expected) <= 1e-4 * abs(expected),
                what="sum")


def softmax_workload(impls: dict[str, Any], reps: int, shape: tuple[int, int]
                     ) -> dict[str, float]:
    """TB/s of softmax(x, -1), x float32 of ``shape`` (bytes: x read once, the result written
    once)."""
    host = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    rows = np.random.default_rng(2).choice(shape[0], 64, replace=False)
    sub = host[rows].astype(np.float64)
    e = np.exp(sub - sub.max(-1, keepdims=True))
    expected = e / e.sum(-1, keepdims=True)

    def cupy_softmax(cp: Any, x: Any) -> Any:
        m = x.max(axis=-1, keepdims=True)
        ex = cp.exp(x - m)
        return ex / ex.sum(axis=-1, keepdims=True)

    return _run(impls, reps, host, 2 * host.nbytes,
                ours=lambda mx, x: mx.softmax(x, axis=-1),
                torch_fn=lambda t, x: t.softmax(x, dim=-1),
                cupy_fn=cupy_softmax,
                mlx_fn=lambda m, x: m.softmax(x, axis=-1),
                check=lambda got: np.allclose(got[rows], expected, rtol=1e-4, atol=1e-7),
                what=f"softmax {shape}")


WORKLOADS = {
    "sum_f32": ("sum, 2^28 float32", "TB/s", lambda i, r: sum_workload(i, r)),
    "softmax_8192": ("softmax last axis, 8192x8192 float32", "TB/s",
                     lambda i, r: softmax_workload(i, r, (8192, 8192))),
    "softmax_65536x1024": ("softmax last axis, 65536x1024 float32", "TB/s",
                           lambda i, r: softmax_workload(i, r, (65536, 1024))),
}
