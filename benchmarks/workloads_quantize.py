"""Quantization workloads for bench.py.

- ``qmm_decode``: ``quantized_matmul`` of one float16 row by a 4096 x 4096 weight quantized to
  4 bits (group 64), the LLM decode step; unit TFLOP/s (2*M*N*K per call).
- ``qmm_prefill``: the same weight times 512 rows (prefill); TFLOP/s.
- ``quantize``: ``quantize`` of a 4096 x 4096 float16 matrix (4 bits, group 64); GB/s of input.

Ours: decode runs qmv.cu (one pass over the packed words), prefill the dequantize + GEMM
composition of lazy ops; MLX-CUDA runs its fused quantized kernels. torch and CuPy have no 4-bit matmul: they run the dense float16 matmul with
the dequantized weight (the same math), the bar a fused kernel should beat at decode since it
reads 4x fewer weight bytes. Every result is checked against numpy float64.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

_N = _K = 4096
_GS, _BITS = 64, 4


def _weights() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random quantized weight in MLX's layout, built on the host (same for everyone): the
    packed words, float16 scales/biases and the dequantized float64 matrix."""
    rng = np.random.default_rng(0)
    vals = rng.integers(0, 1 << _BITS, (_N, _K), dtype=np.uint32)
    scales = (rng.random((_N, _K // _GS)) * 0.02 + 0.01).astype(np.float16)
    biases = (rng.standard_normal((_N, _K // _GS)) * 0.05).astype(np.float16)
    per = 32 // _BITS
    shifts = (np.arange(per, dtype=np.uint32) * _BITS)
    packed = (vals.reshape(_N, _K // per, per) << shifts).sum(-1, dtype=np.uint64)
    packed = packed.astype(np.uint32)
    deq = (vals.reshape(_N, _K // _GS, _GS) * scales.astype(np.float64)[..., None]
           + biases.astype(np.float64)[..., None]).reshape(_N, _K)
    return packed, scales, biases, deq


def _qmm_workload(impls: dict[str, Any], reps: int, rows: int) -> dict[str, float]:
    packed, scales, biases, deq = _weights()
    x = np.random.default_rng(1).standard_normal((rows, _K)).astype(np.float16)
    expected = x.astype(np.float64) @ deq.T
    flops = 2.0 * rows * _N * _K
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            if name in ("pycudamlx", "mlx-cuda"):
                m = impl.mx
                xa, wq, sc, bi = (m.array(a) for a in (x, packed, scales, biases))
                m.eval(xa, wq, sc, bi)
                fn: Callable[[], Any] = lambda: m.quantized_matmul(  # noqa: E731
                    xa, wq, sc, bi, transpose=True, group_size=_GS, bits=_BITS)
                ms = impl.time_gpu(fn, reps)
                got = np.array(fn().astype(m.float32))
            elif name == "torch":
                t = impl.torch
                xa = t.from_numpy(x).to("cuda")
                w = t.from_numpy(deq.astype(np.float16)).to("cuda")
                fn = lambda: xa @ w.T  # noqa: E731
                ms = impl.time_gpu(fn, reps)
                got = fn().float().cpu().numpy()
            else:
                cp = impl.cp
                xa = cp.asarray(x)
                w = cp.asarray(deq.astype(np.float16))
                fn = lambda: xa @ w.T  # noqa: E731
                ms = impl.time_gpu(fn, reps)
                got = cp.asnumpy(fn()).astype(np.float32)
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        scale = np.abs(expected).max()
        if got.shape != expected.shape or np.abs(got - expected).max() > 5e-2 * scale:
            log.error("%s gave a wrong result", name)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = flops / (ms * 1e-3) / 1e12
        del fn, got
        _free(impls)
    return results


def _quantize_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """Only MLX-style implementations have mx.quantize; results must match each other's bits."""
    host = np.random.default_rng(2).standard_normal((_N, _K)).astype(np.float16)
    results: dict[str, float] = {}
    ref = None
    for name, impl in impls.items():
        if name not in ("pycudamlx", "mlx-cuda"):
            continue
        try:
            m = impl.mx
            a = m.array(host)
            m.eval(a)
            fn: Callable[[], Any] = lambda: m.quantize(a, _GS, _BITS)  # noqa: E731
            ms = impl.time_gpu(fn, reps)
            q, s, b = fn()
            got = (np.array(q), np.array(s.astype(m.float32)), np.array(b.astype(m.float32)))
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        # 4-bit quantization of a standard normal: relative RMS error ~0.1
        per = 32 // _BITS
        vals = (got[0][..., None] >> (np.arange(per, dtype=np.uint32) * _BITS)) & 0xF
        deq = (vals.reshape(_N, _K // _GS, _GS) * got[1][..., None]
               + got[2][..., None]).reshape(_N, _K)
        err = np.sqrt(np.mean((deq - host.astype(np.float32)) ** 2))
        if not err <= 0.2 * np.sqrt(np.mean(host.astype(np.float32) ** 2)):
            log.error("%s gave a wrong result", name)
            results[name + " (WRONG)"] = float("nan")
            continue
        if ref is not None and not np.array_equal(ref, got[0]):
            log.warning("%s: packed words differ from %s's", name, "the first implementation")
        ref = got[0] if ref is None else ref
        results[name] = host.nbytes / 1e9 / (ms * 1e-3)
        _free(impls)
    return results


WORKLOADS = {
    "qmm_decode": ("quantized_matmul 1x4096 @ (4096x4096, 4-bit g64)^T float16 "
                   "(torch/cupy: dense float16)", "TFLOP/s",
                   lambda impls, reps: _qmm_workload(impls, reps, 1)),
    "qmm_prefill": ("quantized_matmul 512x4096 @ (4096x4096, 4-bit g64)^T float16 "
                    "(torch/cupy: dense float16)", "TFLOP/s",
                    lambda impls, reps: _qmm_workload(impls, reps, 512)),
    "quantize": ("quantize 4096x4096 float16, 4-bit g64", "GB/s", _quantize_workload),
}
