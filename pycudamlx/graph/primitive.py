"""Primitive: what an op node computes, declared once with one implementation per backend.

A primitive gets the evaluated inputs and the (shape, dtype) of each output, decided when the op
was built. ``eval_cpu`` takes and returns numpy arrays; ``eval_gpu`` takes and returns GpuArrays
and launches kernels on a CUDA stream. A primitive without a GPU kernel yet runs its CPU
implementation on the host's view of managed memory (``gpu_kernel = False``); with
PYCUDAMLX_STRICT_GPU=1 that fallback raises instead, so GPU tests prove that kernels ran.
``eval_cpu`` runs under ``np.errstate(all="ignore")`` (set once per evaluation by
graph/evaluate.py): numpy bodies need not enter it themselves.
Slots for later transforms (vjp, jvp, vmap) live here too.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes as dt

OutSpec = tuple[tuple[int, ...], dt.Dtype]


def cuda_modules(*names: str) -> Callable[[], Any]:
    """A getter of ``backend.cuda``'s modules ``names`` (the module itself for one name, else a
    tuple), imported on the first GPU use: importing the graph layer never touches CUDA, and a
    function-level import would cost about a microsecond on every op."""
    loaded: Any = None

    def get() -> Any:
        nonlocal loaded
        if loaded is None:
            mods = tuple(importlib.import_module(f"pycudamlx.backend.cuda.{n}") for n in names)
            loaded = mods[0] if len(mods) == 1 else mods
        return loaded

    return get


class StrictGpuError(RuntimeError):
    """PYCUDAMLX_STRICT_GPU=1 and an op on a GPU stream would have run on the host."""


class Primitive:
    """Base class. Subclasses set ``name`` and implement ``eval_cpu`` (and ``eval_gpu``)."""

    __slots__ = ()
    name = "primitive"
    #: True when eval_gpu launches kernels (False: host fallback on GPU streams).
    gpu_kernel = False
    #: True when ``eval_gpu_donated`` can write the result into its first input's buffer, which
    #: graph/evaluate.py offers when nothing else can see that buffer (MLX's donation).
    donates_first = False

    def eval_gpu_donated(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any
                         ) -> list[Any] | None:
        """``eval_gpu`` writing into ``inputs[0]`` (which nobody else holds), or None where its
        layout does not allow it (then ``eval_gpu`` runs)."""
        return None

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        raise NotImplementedError(f"{self.name} has no CPU implementation")

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any
                 ) -> list[Any]:
        raise NotImplementedError(f"{self.name} has no GPU implementation")

    # Later transforms (autodiff, vmap) attach rules here.
    vjp = None
    jvp = None
    vmap = None

    def __repr__(self) -> str:
        return self.name
