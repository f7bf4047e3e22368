"""Fused: several elementwise nodes evaluated as one (graph/fusion.py decides which).

The CPU body runs the member primitives' own numpy bodies in order, normalised as the evaluator
normalises each node's result, so it is the unfused result by construction (the CPU gains
nothing from fusion; this body serves tests of the planner). The GPU body is one kernel
generated from the op table (backend/cuda/fused.py), bit-identical to the unfused kernels.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive, cuda_modules
from .elementwise import broadcast_view

_cuda = cuda_modules("array", "fused")


class Fused(Primitive):
    """``program`` (backend/cuda/fused.py's structural form) over the external inputs, with
    ``prims[k]`` the primitive of step k (for the CPU body) and ``shape`` the common shape."""

    __slots__ = ("program", "prims", "module")
    name = "fused"
    gpu_kernel = True

    def __init__(self, program: tuple, prims: tuple, module: Any = None) -> None:
        self.program = program
        self.prims = prims
        self.module = module

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        shape = outs[0][0]
        values = list(inputs)
        for prim, step in zip(self.prims, self.program[1]):
            dtype = dt.by_name[step[-1]]
            srcs = [values[s] for s in step[2:-1]]
            r = np.asarray(prim.eval_cpu(srcs, ((shape, dtype),))[0])
            if r.dtype != dtype.np_dtype:
                r = r.astype(dtype.np_dtype)
            values.append(r)
        r = values[-1]
        if r.shape != shape:
            r = np.broadcast_to(r, shape).copy()
        return [r]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any
                 ) -> list[Any]:
        gpu_array, fused = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        fused.launch(self.module, self.program, [broadcast_view(x, shape) for x in inputs],
                     out, stream)
        return [out]
