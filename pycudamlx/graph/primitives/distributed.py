"""Distributed primitives: collectives and point-to-point transfers over a group of processes.

Each node holds the group's communicator (pycudamlx/distributed: blocking operations on host
buffers, bounded by a timeout). Evaluating the node runs the communication, so every rank
must evaluate the same collectives in the same order, as in MLX. Groups of one process never
reach here: core/distributed.py returns its input's value then, as MLX does.

CPU streams call the communicator on the numpy inputs. The MPI transport has no device path, so
on GPU streams the evaluator runs ``eval_cpu`` on the host view of managed memory
(``gpu_kernel = False``; PYCUDAMLX_STRICT_GPU=1 refuses that).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..primitive import OutSpec, Primitive


class AllReduce(Primitive):
    """``all_sum``/``all_max``/``all_min``: the elementwise reduction over the group's ranks.

    ``jvp_transposed`` marks the node a jvp builds in its first reverse pass: its vjp is the
    same reduction (MLX's jvp reduces the tangents), where a plain vjp passes the cotangent
    through unchanged (MLX's vjp)."""

    __slots__ = ("comm", "op", "jvp_transposed")
    name = "all_reduce"

    def __init__(self, comm: Any, op: str, jvp_transposed: bool = False) -> None:
        self.comm = comm
        self.op = op
        self.jvp_transposed = jvp_transposed

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        return [self.comm.all_reduce(inputs[0], self.op)]


class AllGather(Primitive):
    """``all_gather``: every rank's input concatenated along the first axis (0-d inputs
    stacked into a vector)."""

    __slots__ = ("comm",)
    name = "all_gather"

    def __init__(self, comm: Any) -> None:
        self.comm = comm

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        return [self.comm.all_gather(inputs[0])]


class RankShard(Primitive):
    """This rank's block of the first axis of an ``all_gather`` result (no communication).

    The first reverse pass of a jvp through ``all_gather`` builds it (its value is the vjp,
    the slice); its own vjp gathers again, so the jvp is ``all_gather`` of the tangents, as
    MLX's."""

    __slots__ = ("comm", "scalar")
    name = "rank_shard"

    def __init__(self, comm: Any, scalar: bool) -> None:
        self.comm = comm
        self.scalar = scalar

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        x, rank = inputs[0], self.comm.rank()
        if self.scalar:
            return [x[rank].copy()]
        n = outs[0][0][0]
        return [x[rank * n:(rank + 1) * n].copy()]


class ReduceScatter(Primitive):
    """``sum_scatter``: this rank's block of the first axis of the sum over the ranks."""

    __slots__ = ("comm", "op")
    name = "reduce_scatter"
    mlx_name = "Sum ReduceScatter"  # MLX differentiates and batches it neither: its error text

    def __init__(self, comm: Any, op: str) -> None:
        self.comm = comm
        self.op = op

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        return [self.comm.reduce_scatter(inputs[0], self.op)]


class Send(Primitive):
    """``send``: sends its input to rank ``dst`` when evaluated; its value is the input's."""

    __slots__ = ("comm", "dst")
    name = "send"
    mlx_name = "Send"

    def __init__(self, comm: Any, dst: int) -> None:
        self.comm = comm
        self.dst = dst

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        self.comm.send(inputs[0], self.dst)
        return [inputs[0]]


class Recv(Primitive):
    """``recv``: an array of the node's shape and dtype received from rank ``src``."""

    __slots__ = ("comm", "src")
    name = "recv"
    mlx_name = "Recv"

    def __init__(self, comm: Any, src: int) -> None:
        self.comm = comm
        self.src = src

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        shape, dtype = outs[0]
        return [self.comm.recv(tuple(shape), dtype.np_dtype, self.src)]
