"""FFT primitive: complex/real forward and inverse n-dimensional transforms on numpy.fft.

The op functions (core/fft.py) pad or crop the input to the transform sizes first, so the
primitive transforms exactly the input's extents along ``axes`` (for the inverse real transform,
the last axis holds n//2 + 1 bins and ``n`` gives the output length). numpy computes in double
precision; the evaluator rounds to complex64/float32 as MLX returns.

No GPU kernel yet (``gpu_kernel = False``): on a GPU stream the evaluator runs this on the host
view of managed memory, which PYCUDAMLX_STRICT_GPU=1 refuses. A cuFFT path is the next step.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..primitive import OutSpec, Primitive


class FFT(Primitive):
    """``real``/``inverse`` transform over ``axes`` with sizes ``n``, scaled as ``norm`` says."""

    __slots__ = ("axes", "n", "inverse", "real", "norm")
    name = "fft"

    def __init__(self, axes: tuple[int, ...], n: tuple[int, ...], inverse: bool, real: bool,
                 norm: str) -> None:
        self.axes = axes
        self.n = n
        self.inverse = inverse
        self.real = real
        self.norm = norm

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        shape, dtype = outs[0]
        if 0 in shape or 0 in x.shape:
            return [np.zeros(shape, dtype=dtype.np_dtype)]
        if self.real and not self.inverse:
            x = x.real.astype(np.float64) if np.iscomplexobj(x) else x.astype(np.float64)
            r = np.fft.rfftn(x, s=self.n, axes=self.axes, norm=self.norm)
        elif self.real:
            r = np.fft.irfftn(x.astype(np.complex128), s=self.n, axes=self.axes, norm=self.norm)
        elif self.inverse:
            r = np.fft.ifftn(x.astype(np.complex128), s=self.n, axes=self.axes, norm=self.norm)
        else:
            r = np.fft.fftn(x.astype(np.complex128), s=self.n, axes=self.axes, norm=self.norm)
        return [r]
