"""Execution-engine workloads for benchmarks/bench.py (issue 15): host cost per op with and
without automatic fusion, and a lazy chain of 16 elementwise ops.

- ``op_batched_unfused``: bench.py's ``op_batched`` (``x = x + b`` on 1,024 float32, one sync
  after 10,000) with pycudamlx's fusion off (PYCUDAMLX_FUSION=0's switch): the per-node path.
  The peers have no such switch and are timed as in ``op_batched``.
- ``chain16_small``: 16 elementwise ops (``y = y * b`` and ``y = y + 0.5`` in turn) on 1,024
  float32 built lazily and evaluated once; host microseconds per op, the eval and a sync
  included (torch and CuPy run the same ops eagerly, MLX lazily with one eval).
- ``chain16_large``: the same chain on 2^24 float32, TB/s counting only its inputs (x, b) and
  its output (3 x 64 MiB), timed on the GPU; compare with the copy bandwidth row.
Results are checked against numpy (float32 tolerance) before timing.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

_OPS = 16


def _chain(x: Any, b: Any) -> Any:
    y = x
    for k in range(_OPS):
        y = y * b if k % 2 == 0 else y + 0.5
    return y


def _reference(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    y = x.astype(np.float64)
    for k in range(_OPS):
        y = y * b if k % 2 == 0 else y + 0.5
    return y


def _inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return (rng.standard_normal(n, dtype=np.float32),
            (0.9 + 0.2 * rng.random(n)).astype(np.float32))


def _ours_wait() -> None:
    from pycudamlx.backend.cuda import fused

    fused.wait()  # first sight of a program builds it in the background


def _setup(name: str, impl: Any, xh: np.ndarray, bh: np.ndarray) -> tuple:
    """(x, b, evaluate(y), to_numpy(y)) for one implementation."""
    if name == "pycudamlx":
        mx = impl.mx
        x, b = mx.array(xh), mx.array(bh)
        mx.eval(x, b)
        return x, b, lambda y: mx.eval(y), lambda y: np.array(y)
    if name == "torch":
        t = impl.torch
        x, b = t.from_numpy(xh).cuda(), t.from_numpy(bh).cuda()
        return x, b, lambda y: None, lambda y: y.cpu().numpy()
    if name == "cupy":
        cp = impl.cp
        return cp.asarray(xh), cp.asarray(bh), lambda y: None, lambda y: cp.asnumpy(y)
    m = impl.mx
    x, b = m.array(xh), m.array(bh)
    m.eval(x, b)
    return x, b, lambda y: m.eval(y), lambda y: np.array(y)


def chain_small(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """Host microseconds per op of a 16-op lazy chain on 1,024 elements (eval + sync)."""
    xh, bh = _inputs(1024)
    ref = _reference(xh, bh)
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            x, b, evaluate, to_np = _setup(name, impl, xh, bh)
            y = _chain(x, b)
            evaluate(y)
            if name == "pycudamlx":
                _ours_wait()
                y = _chain(x, b)
                evaluate(y)
            got = to_np(y)
            if not np.allclose(got, ref, rtol=1e-4, atol=1e-4):
                log.warning("%s: chain16 result is wrong", name)
                continue
            n = 2000
            samples = []
            for _ in range(3):
                impl.sync()
                t0 = time.perf_counter()
                for _ in range(n):
                    evaluate(_chain(x, b))
                impl.sync()
                samples.append((time.perf_counter() - t0) / (n * _OPS) * 1e6)
            results[name] = statistics.median(samples)
        except Exception as exc:
            log.warning("%s failed in chain16_small: %r", name, exc)
    return results


def chain_large(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """TB/s of the 16-op chain on 2^24 float32, counting its two inputs and its output."""
    n = 1 << 24
    xh, bh = _inputs(n)
    ref = _reference(xh[:4096], bh[:4096])
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            x, b, evaluate, to_np = _setup(name, impl, xh, bh)
            y = _chain(x, b)
            evaluate(y)
            if name == "pycudamlx":
                _ours_wait()
                y = _chain(x, b)
                evaluate(y)
            got = to_np(y)[:4096]
            if not np.allclose(got, ref, rtol=1e-4, atol=1e-4):
                log.warning("%s: chain16 (2^24) result is wrong", name)
                continue
            del y
            ms = impl.time_gpu(lambda: _chain(x, b), reps)
            results[name] = 3 * n * 4 / (ms * 1e-3) / 1e12
            del x, b
        except Exception as exc:
            log.warning("%s failed in chain16_large: %r", name, exc)
        _free(impls)
    return results


def op_batched_unfused(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """bench.py's op_batched with pycudamlx's fusion switched off."""
    import sys

    from pycudamlx.graph import fusion

    bench = sys.modules["__main__"] if hasattr(sys.modules["__main__"], "per_op_overhead") \
        else __import__("bench")

    old = fusion.enabled
    fusion.enabled = False
    try:
        return bench.per_op_overhead({k: v for k, v in impls.items() if k == "pycudamlx"},
                                     10000, False)
    finally:
        fusion.enabled = old


WORKLOADS = {
    "op_batched_unfused": ("per op, x = x + b (1,024 el.), one sync after 10,000, fusion off",
                           "us/op", op_batched_unfused),
    "chain16_small": ("16-op lazy elementwise chain, 1,024 el., eval once", "us/op",
                      chain_small),
    "chain16_large": ("16-op lazy elementwise chain, 2^24 float32 (in + out bytes)", "TB/s",
                      chain_large),
}
