"""The matrix product primitive: ``alpha * (a @ b) + beta * c``, batched with broadcast batches.

Inputs reach it promoted to one dtype, with ``a`` of shape (..., M, K) and ``b`` (..., K, N)
(1-D operands already reshaped by the op functions) and M, N, K and the batch all non-empty;
``c`` (addmm) already broadcast to the output shape. The public ops only send inexact dtypes;
integer dtypes arrive from vecdot and einsum's sums, which MLX computes with wrapping integer
arithmetic.

CPU: numpy, accumulating in float64 (complex128) and rounding once (``host_matmul``).
GPU: cuBLAS where it is installed, an NVRTC tiled GEMM otherwise (backend/cuda/gemm.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..primitive import OutSpec, Primitive

_gemm_module: Any = None


def _gemm() -> Any:
    """backend.cuda.gemm, imported on first GPU use (importing never touches CUDA)."""
    global _gemm_module
    if _gemm_module is None:
        from ...backend.cuda import gemm

        _gemm_module = gemm
    return _gemm_module


def host_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` on the host, inexact dtypes accumulated in float64 (complex128) and returned so,
    for the caller to round once to its dtype.

    Why not float32: numpy's BLAS picks its kernel by shape (gemv for one row, other blockings
    and thread splits for others), so a row's float32 result changes with the number of rows
    beside it. MLX's CPU gives every row the same result whatever the batch, and programs rely
    on it: a prompt processed in chunks must give the logits of the prompt processed whole
    (mlx-lm's cache tests). The float32 products are exact in float64 and the rounding of the
    float64 sum to float32 hides the order of the additions; it also costs less than MLX's own
    CPU matmul (a 1024^3 float32 product: ~35 ms here, MLX's CPU build ~840 ms on a 2-core box).
    Integer products (vecdot, einsum) wrap in their own dtype as MLX's do.
    """
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        wide = np.complex128 if a.dtype.kind == "c" or b.dtype.kind == "c" else np.float64
        return np.matmul(a.astype(wide, copy=False), b.astype(wide, copy=False))
    return np.matmul(a, b)


class Matmul(Primitive):
    """``alpha * (a @ b) + beta * c`` (c only when there is a third input)."""

    __slots__ = ("alpha", "beta")
    name = "matmul"
    gpu_kernel = True

    def __init__(self, alpha: float = 1.0, beta: float = 0.0) -> None:
        self.alpha = alpha
        self.beta = beta

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        a, b = inputs[0], inputs[1]
        with np.errstate(all="ignore"):
            r = host_matmul(a, b)
            if self.alpha != 1.0:
                r = r * r.dtype.type(self.alpha)
            if len(inputs) > 2 and self.beta != 0.0:
                c = inputs[2].astype(r.dtype, copy=False)
                r = r + (c if self.beta == 1.0 else c * r.dtype.type(self.beta))
        return [np.asarray(r).astype(dtype.np_dtype, copy=False).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        shape, dtype = outs[0]
        c = inputs[2] if len(inputs) > 2 else None
        return [_gemm().matmul(inputs[0], inputs[1], c, shape, dtype, self.alpha, self.beta,
                               stream)]

    def __repr__(self) -> str:
        return f"matmul(alpha={self.alpha}, beta={self.beta})"
