"""mx.fast workloads for benchmarks/bench.py: rms_norm bandwidth and fused attention throughput.

Each workload times pycudamlx, torch and MLX-CUDA on the same inputs (CuPy has no such ops),
checks every result against numpy, and reports the issue's unit:
- ``rms_norm_bf16``: rms_norm of (16384, 4096) bfloat16 with a weight, TB/s of x read once and
  the output written once (the weight's 8 KB is left out);
- ``sdpa_bf16_causal``: attention, batch 4, 32 heads, 2,048 queries and keys, head dim 128,
  bfloat16, causal, TFLOP/s counted as FlashAttention does (4 * B * H * T * T * D, halved
  for the causal mask).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

_ROWS, _COLS = 16384, 4096
_B, _H, _T, _D = 4, 32, 2048, 128


def _bf16_exact(x: np.ndarray) -> np.ndarray:
    """float32 values that bfloat16 holds exactly (so every library starts from equal data)."""
    import ml_dtypes

    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def _run(impls: dict[str, Any], reps: int, make: dict[str, Callable[[Any], tuple]],
         check: Callable[[np.ndarray], bool], amount: float) -> dict[str, float]:
    """For each impl: ``make[name](impl) -> (fn, to_numpy)``; time fn, check to_numpy(fn())."""
    results: dict[str, float] = {}
    for name, impl in impls.items():
        builder = make.get(name)
        if builder is None:
            continue
        try:
            fn, to_numpy = builder(impl)
            ms = impl.time_gpu(fn, reps)
            got = to_numpy(fn())
        except Exception as exc:  # one library failing must not stop the others
            log.warning("%s failed: %r", name, exc)
            continue
        if not check(got):
            log.error("%s gave a wrong result", name)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = amount / (ms * 1e-3) / 1e12
        del fn, got
        _free(impls)
    return results


def rms_norm_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x = _bf16_exact(rng.standard_normal((_ROWS, _COLS), dtype=np.float32))
    w = _bf16_exact(rng.standard_normal(_COLS, dtype=np.float32))
    eps = 1e-5
    rows = slice(0, _ROWS, 97)  # the check uses a sample of rows (numpy is slow on the host)
    xs = x[rows]
    expected = xs / np.sqrt(np.mean(xs * xs, axis=-1, keepdims=True) + eps) * w

    def ours(impl):
        mx = impl.mx
        a = mx.array(x).astype(mx.bfloat16)
        b = mx.array(w).astype(mx.bfloat16)
        mx.eval(a, b)
        return (lambda: mx.fast.rms_norm(a, b, eps),
                lambda out: np.asarray(out.astype(mx.float32)))

    def torch_(impl):
        t = impl.torch
        a = t.from_numpy(x).to("cuda", t.bfloat16)
        b = t.from_numpy(w).to("cuda", t.bfloat16)
        return (lambda: t.nn.functional.rms_norm(a, (_COLS,), b, eps),
                lambda out: out.float().cpu().numpy())

    def mlx(impl):
        m = impl.mx
        a = m.array(x).astype(m.bfloat16)
        b = m.array(w).astype(m.bfloat16)
        m.eval(a, b)
        return (lambda: m.fast.rms_norm(a, b, eps),
                lambda out: np.array(out.astype(m.float32)))

    def check(got: np.ndarray) -> bool:
        return got.shape == x.shape and np.allclose(got[rows], expected, rtol=2e-2, atol=2e-2)

    nbytes = 2 * x.size * 2  # bfloat16 read + write
    return _run(impls, reps, {"pycudamlx": ours, "torch": torch_, "mlx-cuda": mlx}, check,
                nbytes)


def _attention_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    s = (q @ k.T) * scale
    s = np.where(np.tri(s.shape[0], s.shape[1], dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def sdpa_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    shape = (_B, _H, _T, _D)
    q, k, v = (_bf16_exact(rng.standard_normal(shape, dtype=np.float32)) for _ in range(3))
    scale = _D ** -0.5
    # the check covers two (batch, head) pairs in float32 on the host
    picks = [(0, 0), (_B - 1, _H - 1)]
    expected = [_attention_ref(q[b, h], k[b, h], v[b, h], scale) for b, h in picks]

    def ours(impl):
        mx = impl.mx
        a, b_, c = (mx.array(t).astype(mx.bfloat16) for t in (q, k, v))
        mx.eval(a, b_, c)
        f = mx.fast.scaled_dot_product_attention
        return (lambda: f(a, b_, c, scale=scale, mask="causal"),
                lambda out: np.asarray(out.astype(mx.float32)))

    def torch_(impl):
        t = impl.torch
        a, b_, c = (t.from_numpy(x).to("cuda", t.bfloat16) for x in (q, k, v))
        f = t.nn.functional.scaled_dot_product_attention
        return (lambda: f(a, b_, c, is_causal=True, scale=scale),
                lambda out: out.float().cpu().numpy())

    def mlx(impl):
        m = impl.mx
        a, b_, c = (m.array(t).astype(m.bfloat16) for t in (q, k, v))
        m.eval(a, b_, c)
        f = m.fast.scaled_dot_product_attention
        return (lambda: f(a, b_, c, scale=scale, mask="causal"),
                lambda out: np.array(out.astype(m.float32)))

    def check(got: np.ndarray) -> bool:
        if got.shape != shape:
            return False
        return all(np.allclose(got[b, h], e, rtol=2e-2, atol=2e-2)
                   for (b, h), e in zip(picks, expected))

    flops = 4.0 * _B * _H * _T * _T * _D / 2  # causal: half the score matrix
    return _run(impls, reps, {"pycudamlx": ours, "torch": torch_, "mlx-cuda": mlx}, check,
                flops)


WORKLOADS = {
    "rms_norm_bf16": ("mx.fast.rms_norm, 16384x4096 bfloat16", "TB/s", rms_norm_workload),
    "sdpa_bf16_causal": ("sdpa B4 H32 T2048 D128 bfloat16 causal", "TFLOP/s", sdpa_workload),
}
