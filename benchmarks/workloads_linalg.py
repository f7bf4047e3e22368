"""linalg/fft workloads for bench.py.

- ``linalg_norm``: row L2 norms (``mx.linalg.norm(a, axis=-1)``) of a 16,384 x 4,096 float32
  matrix; unit GB/s of input read. Ours is composed of square, sum and sqrt kernels (no fused
  kernel), so this shows what the composition costs next to torch.linalg.norm / cupy.linalg.norm.
- ``fft_rfft``: rfft along the last axis of 1,024 x 4,096 float32; unit Gsamples/s. Ours runs on
  the host (no cuFFT path yet: the primitive has gpu_kernel = False), so this measures the gap a
  cuFFT path would close. It needs PYCUDAMLX_STRICT_GPU unset.

Every implementation gets the same input and its result is checked against numpy (float64).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")


def _run(impls: dict[str, Any], reps: int, host: np.ndarray, expected: np.ndarray,
         ours: Callable[[Any, Any], Any], torch_fn: Callable[[Any, Any], Any],
         cupy_fn: Callable[[Any, Any], Any], rtol: float, atol: float, amount: float
         ) -> dict[str, float]:
    """``amount`` (GB or Gsamples) per call divided by each implementation's median seconds."""
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            if name in ("pycudamlx", "mlx-cuda"):
                m = impl.mx
                a = m.array(host)
                m.eval(a)
                fn: Callable[[], Any] = lambda: ours(m, a)  # noqa: E731
                ms = impl.time_gpu(fn, reps)
                got = np.array(fn())
            elif name == "torch":
                t = impl.torch
                a = t.from_numpy(host).to("cuda")
                fn = lambda: torch_fn(t, a)  # noqa: E731
                ms = impl.time_gpu(fn, reps)
                got = fn().cpu().numpy()
            else:
                cp = impl.cp
                a = cp.asarray(host)
                fn = lambda: cupy_fn(cp, a)  # noqa: E731
                ms = impl.time_gpu(fn, reps)
                got = cp.asnumpy(fn())
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=rtol, atol=atol):
            log.error("%s gave a wrong result", name)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = amount / (ms * 1e-3)
        del a, got, fn
        _free(impls)
    return results


def _norm_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    host = np.random.default_rng(0).standard_normal((16384, 4096), dtype=np.float32)
    expected = np.linalg.norm(host.astype(np.float64), axis=-1)
    return _run(impls, reps, host, expected,
                lambda m, a: m.linalg.norm(a, axis=-1),
                lambda t, a: t.linalg.norm(a, dim=-1),
                lambda cp, a: cp.linalg.norm(a, axis=-1),
                1e-4, 1e-3, host.nbytes / 1e9)


def _rfft_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    host = np.random.default_rng(0).standard_normal((1024, 4096), dtype=np.float32)
    expected = np.fft.rfft(host.astype(np.float64), axis=-1)
    return _run(impls, reps, host, expected,
                lambda m, a: m.fft.rfft(a),
                lambda t, a: t.fft.rfft(a),
                lambda cp, a: cp.fft.rfft(a),
                1e-4, 1e-2, host.size / 1e9)


WORKLOADS = {
    "linalg_norm": ("row L2 norm, 16384x4096 float32", "GB/s", _norm_workload),
    "fft_rfft": ("rfft, 1024x4096 float32 (ours: host fallback)", "Gsamples/s",
                 _rfft_workload),
}
