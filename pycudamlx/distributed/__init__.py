"""Communication between processes for ``mx.distributed``: the transports, below the array layer.

A *communicator* moves host buffers between the ranks of a group: ``all_reduce``,
``all_gather``, ``reduce_scatter``, ``send``, ``recv`` and ``split`` on contiguous numpy arrays,
each bounded by a timeout so that a peer that never arrives is an error, not a hang. The graph
layer's distributed primitives (graph/primitives/distributed.py) call them when their node is
evaluated; core/distributed.py is the public API over them.

Backends here: ``mpi`` (mpi4py over any MPI, mpi.py). ``launch.py`` starts a program as several
ranks (``pycudamlx launch``). This package imports nothing from the rest of pycudamlx except
the environment module, so the launcher starts without loading the array library.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class DistributedError(RuntimeError):
    """A collective or point-to-point operation failed or timed out (names the operation)."""


class Communicator(Protocol):
    """What a backend's group gives the primitives: blocking operations on host buffers."""

    backend: str

    def rank(self) -> int: ...

    def size(self) -> int: ...

    def all_reduce(self, x: np.ndarray, op: str) -> np.ndarray: ...

    def all_gather(self, x: np.ndarray) -> np.ndarray: ...

    def reduce_scatter(self, x: np.ndarray, op: str) -> np.ndarray: ...

    def send(self, x: np.ndarray, dst: int) -> None: ...

    def recv(self, shape: tuple[int, ...], dtype: np.dtype, src: int) -> np.ndarray: ...

    def split(self, color: int, key: int) -> Any: ...


__all__ = ["Communicator", "DistributedError"]
