"""Convolution workloads: a ResNet-style 3x3 conv2d (N=32, 56x56, 64 -> 64 channels, padding 1,
channels last) in TFLOP/s (2 * N * H * W * C_out * 9 * C_in / median time), ours (im2col +
cuBLAS) against torch (cuDNN, channels_last), CuPy (no conv: skipped) and MLX-CUDA. Each result
is checked on the first image against a numpy float64 oracle, so a fast wrong answer is WRONG.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

log = logging.getLogger("bench")

SHAPE_X = (32, 56, 56, 64)
SHAPE_W = (64, 3, 3, 64)
_TOL = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 2e-2}  # per unit of the |x| |w| bound


def _np_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """float64 conv2d, stride 1, padding 1, channels last."""
    x = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    kh, kw = w.shape[1:3]
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[0]))
    for i in range(kh):
        for j in range(kw):
            out += x[:, i:i + oh, j:j + ow, :] @ w[:, i, j, :].T
    return out


def _rounded(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16).astype(np.float64)
    return x.astype(np.float64)


def _ours(impl: Any, x: np.ndarray, w: np.ndarray, dtype: str, reps: int
          ) -> tuple[float, np.ndarray]:
    mx = impl.mx
    with mx.stream(mx.gpu):
        a = mx.array(x).astype(getattr(mx, dtype))
        b = mx.array(w).astype(getattr(mx, dtype))
        mx.eval(a, b)
        ms = impl.time_gpu(lambda: mx.conv2d(a, b, padding=1), reps)
        out = mx.conv2d(a[:1], b, padding=1).astype(mx.float32)
        mx.eval(out)
    return ms, np.array(out)


def _torch(impl: Any, x: np.ndarray, w: np.ndarray, dtype: str, reps: int
           ) -> tuple[float, np.ndarray]:
    t = impl.torch
    tdt = getattr(t, dtype)
    # NHWC data seen as NCHW tensors in channels_last layout: cuDNN's fast NHWC path
    a = t.from_numpy(x).to("cuda", tdt).permute(0, 3, 1, 2)
    b = t.from_numpy(w).to("cuda", tdt).permute(0, 3, 1, 2)
    conv = t.nn.functional.conv2d
    ms = impl.time_gpu(lambda: conv(a, b, padding=1), reps)
    out = conv(a[:1], b, padding=1).permute(0, 2, 3, 1).float().cpu().numpy()
    return ms, out


def _mlx(impl: Any, x: np.ndarray, w: np.ndarray, dtype: str, reps: int
         ) -> tuple[float, np.ndarray]:
    m = impl.mx
    a = m.array(x).astype(getattr(m, dtype))
    b = m.array(w).astype(getattr(m, dtype))
    m.eval(a, b)
    ms = impl.time_gpu(lambda: m.conv2d(a, b, padding=1), reps)
    out = np.array(m.conv2d(a[:1], b, padding=1).astype(m.float32))
    return ms, out


_RUNNERS = {"pycudamlx": _ours, "torch": _torch, "mlx-cuda": _mlx}


def conv2d_workload(impls: dict[str, Any], reps: int, dtype: str) -> dict[str, float]:
    """TFLOP/s of the 3x3 conv2d per implementation."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE_X, dtype=np.float32)
    w = rng.standard_normal(SHAPE_W, dtype=np.float32) * 0.1
    rx, rw = _rounded(x[:1], dtype), _rounded(w, dtype)
    ref = _np_conv(rx, rw)
    bound = _np_conv(np.abs(rx), np.abs(rw))
    out_round = {"float16": 1e-3, "bfloat16": 8e-3}.get(dtype, 0.0) * np.abs(ref)
    n, h, wd, c_in = SHAPE_X
    flops = 2.0 * n * h * wd * SHAPE_W[0] * 9 * c_in
    results: dict[str, float] = {}
    for name, impl in impls.items():
        runner = _RUNNERS.get(name)
        if runner is None:
            continue  # CuPy has no convolution
        try:
            ms, out = runner(impl, x, w, dtype, reps)
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        if out.shape != ref.shape or not np.all(
                np.abs(out.astype(np.float64) - ref) <= _TOL[dtype] * bound + out_round):
            log.error("%s gave a wrong result for conv2d %s", name, dtype)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = flops / (ms * 1e-3) / 1e12
    return results


WORKLOADS = {
    "conv2d_3x3_f32": ("conv2d 3x3, 32x56x56x64 -> 64, float32", "TFLOP/s",
                       lambda i, r: conv2d_workload(i, r, "float32")),
    "conv2d_3x3_bf16": ("conv2d 3x3, 32x56x56x64 -> 64, bfloat16", "TFLOP/s",
                        lambda i, r: conv2d_workload(i, r, "bfloat16")),
}
