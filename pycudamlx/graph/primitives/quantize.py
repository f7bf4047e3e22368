"""Fused nodes of quantized_matmul on a GPU stream (backend/cuda/qmv.cu).

QuantizedMatvec: a few rows of x times affine-quantized transposed weights, the packed weights
read once (the decode step). DequantizeAffine: packed weights to a dense matrix in one kernel,
for the larger products (a GEMM follows). core/quantize.py builds them; everywhere else
quantized_matmul stays the dequantize + matmul composition of lazy ops. The CPU implementations
reproduce that composition's numbers (float32 dequantization and products).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..primitive import OutSpec, Primitive
from .matmul import host_matmul


def _dequantized_f32(w: np.ndarray, scales: np.ndarray, biases: np.ndarray, bits: int,
                     group_size: int) -> np.ndarray:
    """(..., K) float32 = scale * q + bias per group, as the op composition computes it."""
    per_word = 32 // bits
    shifts = np.arange(per_word, dtype=np.uint32) * bits
    q = ((w[..., None] >> shifts) & np.uint32((1 << bits) - 1)).astype(np.float32)
    k = w.shape[-1] * per_word
    grouped = q.reshape(*w.shape[:-1], k // group_size, group_size)
    with np.errstate(all="ignore"):
        deq = (grouped * scales.astype(np.float32)[..., None]
               + biases.astype(np.float32)[..., None])
    return deq.reshape(*w.shape[:-1], k)


class DequantizeAffine(Primitive):
    """inputs: w (..., K * bits / 32) uint32, scales and biases (..., K / group_size) of the
    output dtype; output (..., K)."""

    __slots__ = ("bits", "group_size")
    name = "dequantize_affine"
    gpu_kernel = True

    def __init__(self, bits: int, group_size: int) -> None:
        self.bits = bits
        self.group_size = group_size

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        deq = _dequantized_f32(*inputs, self.bits, self.group_size)
        return [deq.astype(outs[0][1].np_dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        from ...backend.cuda import quantized

        return [quantized.dequantize(*inputs, self.bits, self.group_size, outs[0][1], stream)]


class QuantizedMatvec(Primitive):
    """inputs: x (..., K), w (N, K * bits / 32) uint32, scales and biases (N, K / group_size),
    all but w of the output dtype; output (..., N) = x @ dequantize(w).T (one node, no
    reshapes around it: at decode the per-node host cost is most of the time)."""

    __slots__ = ("bits", "group_size")
    name = "quantized_matvec"
    gpu_kernel = True

    def __init__(self, bits: int, group_size: int) -> None:
        self.bits = bits
        self.group_size = group_size

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x, w, scales, biases = inputs
        deq = _dequantized_f32(w, scales, biases, self.bits, self.group_size)
        k = deq.shape[-1]
        with np.errstate(all="ignore"):
            y = host_matmul(x.reshape(-1, k), deq.T)
        return [y.reshape(outs[0][0]).astype(outs[0][1].np_dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        from ...backend.cuda import quantized

        return [quantized.qmv(*inputs, self.bits, self.group_size, stream)]
