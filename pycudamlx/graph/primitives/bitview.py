"""ViewDtype: mx.view, the bits of an array read as another dtype.

A row-contiguous input is reinterpreted in place (a numpy ``.view`` on the CPU; on the GPU a
GpuArray over the same buffer, so no kernel runs). Any other layout (transposed, strided,
broadcast, or an offset that is not a whole number of output elements) is first copied to a
row-contiguous buffer with the existing copy kernel, as MLX's view reads the logical order.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..primitive import OutSpec, Primitive
from .shape import _is_row_contiguous, contiguous_strides, gpu_contiguous_copy


class ViewDtype(Primitive):
    """Reinterpret the input's bytes as the output dtype (the last axis rescaled)."""

    __slots__ = ()
    name = "view"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        x = np.ascontiguousarray(inputs[0]).reshape(-1)
        return [x.view(dtype.np_dtype).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        shape, dtype = outs[0]
        x = inputs[0]
        in_size, out_size = x.dtype.size, dtype.size
        if not _is_row_contiguous(x.shape, x.strides) or (x.offset * in_size) % out_size:
            x = gpu_contiguous_copy(x, x.dtype, stream)
        return [x.view(x.offset * in_size // out_size, shape, contiguous_strides(shape), dtype)]
