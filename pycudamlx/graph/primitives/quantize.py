"""QuantizedMatvec: a few rows of x times affine-quantized transposed weights, as one node.

core/quantize.py builds it on a GPU stream for the decode-sized case (backend/cuda/qmv.cu reads
the packed weights once); everywhere else quantized_matmul stays the dequantize + matmul
composition, whose numbers this node's CPU implementation reproduces (float32 dequantization
and products, one rounding to the output dtype).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..primitive import OutSpec, Primitive


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
        per_word = 32 // self.bits
        shifts = (np.arange(per_word, dtype=np.uint32) * self.bits)
        q = (w[..., None] >> shifts) & np.uint32((1 << self.bits) - 1)
        q = q.reshape(w.shape[0], -1).astype(np.float32)
        n, k = q.shape
        grouped = q.reshape(n, k // self.group_size, self.group_size)
        deq = (grouped * scales.astype(np.float32)[..., None]
               + biases.astype(np.float32)[..., None]).reshape(n, k)
        with np.errstate(all="ignore"):
            y = x.reshape(-1, k).astype(np.float32) @ deq.T
        return [y.reshape(outs[0][0]).astype(outs[0][1].np_dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        from ...backend.cuda import quantized

        return [quantized.qmv(*inputs, self.bits, self.group_size, stream)]
