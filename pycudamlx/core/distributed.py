"""``mx.distributed``: MLX's communication API, over MPI (pycudamlx/distributed/mpi.py).

A program started as several ranks (``pycudamlx launch -n N script.py``, or mpiexec/mpirun/
srun) gets the MPI world from ``init()``; its collectives and transfers are lazy nodes
(graph/primitives/distributed.py) that communicate when evaluated, on every dtype MLX has, with
MLX's shapes, errors and derivatives (the vjp of a reduction passes the cotangent through, of
``all_gather`` takes this rank's block; jvps reduce or gather the tangents; ``sum_scatter``
has neither, as in MLX). ``Group.split`` is MPI_Comm_split.

A process started alone gets the singleton group MLX itself returns when no backend is
configured, and every operation behaves as MLX 0.32.4's does on it: the collectives return
their input's value as a new array object (an alias node: no copy, no kernel, on the input's
stream; gradients, jvps and vmap pass through), ``send``/``recv``/``recv_like`` raise MLX's
ValueError and ``Group.split`` its RuntimeError; a group of one MPI process behaves the same
except that it can be split.

``is_available("mpi")`` (and "any") is True where mpi4py and an MPI library load; "ring",
"nccl" and "jaccl" are not implemented (False; ``init(strict=True)`` raises MLX's errors for
them). A process that mlx.launch started as one rank of a ring/NCCL/JACCL launch gets a
RuntimeError from ``init`` whatever ``strict`` is: each rank would otherwise train alone.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import numpy as np

from .. import _env
from .. import dtypes as dt
from . import device as dev
from ..graph.primitives import distributed as _D
from ._nanobind import argument_error
from ._shape_rules import shape_text
from .array import _ALIAS, array, make

__all__ = ["Group", "init", "is_available", "all_sum", "all_gather", "all_max", "all_min",
           "sum_scatter", "send", "recv", "recv_like"]

_GROUP_TYPE = "Group | None = None, stream: StreamOrDevice = None) -> array"
_SIG = {
    "init": ("init(strict: bool = False, backend: str = 'any', *, all_gather_factory: "
             "Callable[[int, int], Callable[[bytes, int], bytes]] | None = None) -> Group"),
    "is_available": "is_available(backend: str = 'any') -> bool",
    "send": f"send(x: array, dst: int, *, group: {_GROUP_TYPE}",
    "recv": f"recv(shape: Sequence[int], dtype: Dtype, src: int, *, group: {_GROUP_TYPE}",
    "recv_like": f"recv_like(x: array, src: int, *, group: {_GROUP_TYPE}",
}
for _name in ("all_sum", "all_gather", "all_max", "all_min", "sum_scatter"):
    _SIG[_name] = f"{_name}(x: array, *, group: {_GROUP_TYPE}"

#: The backend names MLX's ``init`` accepts, in the order its error message lists them.
_BACKENDS = ("any", "mpi", "nccl", "jaccl", "ring")

#: What MLX 0.32.4 raises for ``init(strict=True, backend=...)`` when that backend cannot form
#: a group (the ring message is the one for an unconfigured environment).
_STRICT_ERRORS = {
    "any": "[distributed] Couldn't initialize any backend",
    "mpi": "Cannot initialize MPI",
    "nccl": "Cannot initialize nccl distributed backend.",
    "jaccl": "Cannot initialize jaccl distributed backend.",
}

def _type_error(fn: str, *args: Any) -> TypeError:
    """nanobind's TypeError for ``mx.distributed.<fn>`` called with wrongly typed arguments
    (the whole call's types where the call can be read, else those of ``args``)."""
    types = ", ".join(dt._type_name(a) for a in args)
    fallback = (f"{fn}(): incompatible function arguments. The following argument types are "
                f"supported:\n    1. {_SIG[fn]}\n\nInvoked with types: {types}")
    return argument_error(fn, fallback, _SIG[fn])


def _is_int(v: Any) -> bool:
    """What nanobind's ``int`` accepts: Python ints (bools too) and objects with ``__index__``
    (numpy integers) within a C int's range; not floats."""
    if isinstance(v, (float, complex, str)) or not hasattr(type(v), "__index__"):
        return False
    try:
        return -(2**31) <= int(v.__index__()) < 2**31
    except (TypeError, ValueError):
        return False


def _is_stream(s: Any) -> bool:
    return s is None or isinstance(s, dev._STREAM_LIKE) or (type(s) in (int, bool)
                                                            and s in (0, 1))


def _is_group(g: Any) -> bool:
    return g is None or isinstance(g, Group)


class Group:
    """A group of processes that can communicate. Made by ``init()`` (or ``split``), not
    constructed directly (as in MLX); without a launch it is the singleton group (this process,
    rank 0 of 1)."""

    __slots__ = ("_comm",)

    def __new__(cls, *args: Any, **kwargs: Any) -> "Group":
        raise TypeError("mlx.core.distributed.Group: no constructor defined!")

    def rank(self) -> int:
        """The rank of this process in the group."""
        return 0 if self._comm is None else self._comm.rank()

    def size(self) -> int:
        """The number of processes in the group."""
        return 1 if self._comm is None else self._comm.size()

    def split(self, color: int, key: int = -1) -> "Group":
        """The subgroup of the ranks that pass the same ``color``, ordered by ``key`` (by rank
        where ``key`` is negative), as MPI_Comm_split; every rank of the group must call it.
        The singleton group cannot be split (MLX's RuntimeError)."""
        if not _is_int(color) or not _is_int(key):
            raise dt._incompatible_arguments("split(self, color: int, key: int = -1) -> Group",
                                             self, color, *(() if key == -1 else (key,)))
        if self._comm is None:
            raise RuntimeError("Cannot split the distributed group further.")
        if int(color) < 0:
            raise ValueError(f"[split] color must be non-negative but got {int(color)}.")
        return _new_group(self._comm.split(int(color), int(key)))

    def __reduce__(self) -> Any:
        raise TypeError("cannot pickle 'Group' object")


# MLX's repr and error messages name the class mlx.core.distributed.Group.
Group.__module__ = "mlx.core.distributed"


def _new_group(comm: Any = None) -> Group:
    g = object.__new__(Group)
    g._comm = comm
    return g


#: The communicator each backend name formed in this process (MLX keeps one group per backend;
#: "any" maps to the one it picked). None: the singleton group.
_FORMED: dict[str, Any] = {}


def _group(fn: str, group: Any, *call: Any) -> Group:
    if not _is_group(group):
        raise _type_error(fn, *call)
    return group if group is not None else init()


def is_available(backend: str = "any") -> bool:
    """Whether a communication backend can be instantiated: "mpi" (and so "any") when mpi4py
    and an MPI library load; "ring", "nccl" and "jaccl" are not implemented here."""
    if not isinstance(backend, str):
        raise _type_error("is_available", backend)
    if backend in ("any", "mpi"):
        return _mpi().available()
    return False


def _mpi() -> Any:
    from ..distributed import mpi
    return mpi


def _mpi_launch() -> str | None:
    """The variable that says an MPI launcher started this process as one rank of several."""
    env = _env.launch_environment()
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        value = env.get(name, "")
        if value.strip().isdigit() and int(value) > 1:
            return f'{name}="{value}"'
    return None


def _other_launch() -> str | None:
    """The variables that say this process is one rank of an mlx.launch ring, NCCL or JACCL
    launch (which pycudamlx cannot join), as text for the error; None when there is none."""
    env = _env.launch_environment()
    rank, hostfile = env.get("MLX_RANK", ""), env.get("MLX_HOSTFILE", "")
    if rank and hostfile and _hostfile_hosts(hostfile) != 1:
        return f'MLX_RANK="{rank}" and MLX_HOSTFILE="{hostfile}"'
    value = env.get("MLX_WORLD_SIZE", "")
    if value.strip().isdigit() and int(value) > 1:
        return f'MLX_WORLD_SIZE="{value}"'
    if env.get("MLX_JACCL_COORDINATOR"):
        return f'MLX_JACCL_COORDINATOR="{env["MLX_JACCL_COORDINATOR"]}"'
    return None


def _hostfile_hosts(path: str) -> int | None:
    """The number of hosts an mlx.launch hostfile (a JSON list) names, None if unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            hosts = json.load(f)
    except (OSError, ValueError):
        return None
    return len(hosts) if isinstance(hosts, list) else None


def _mpi_world(launched: str | None) -> Any:
    """The MPI world's communicator; RuntimeError naming what to install when MPI is absent."""
    mpi = _mpi()
    if not mpi.available():
        where = f"This process was launched as one of several ranks ({launched}), but " \
            if launched else ""
        raise RuntimeError(f"[distributed] {where}mpi4py or an MPI library is missing: "
                           f"{mpi.INSTALL_HINT} ({mpi.unavailable_reason()}).")
    comm = mpi.world(int(_env.get("PYCUDAMLX_DISTRIBUTED_TIMEOUT")))
    want = mpi.launched_size()
    if launched and comm.size() != want:
        raise RuntimeError(f"[distributed] The launcher says {launched} but the MPI world has "
                           f"{comm.size()} rank(s): this Python's mpi4py uses another MPI than "
                           "the launcher (start it with the mpiexec of the same installation, "
                           "or `pycudamlx launch`).")
    return comm


def _form(strict: bool, backend: str) -> Any:
    """The communicator ``init(strict, backend)`` gives (None: the singleton group)."""
    mpi_launch = _mpi_launch()
    other = None if mpi_launch else _other_launch()
    if other is not None:
        raise RuntimeError(
            f"[distributed] This process was launched as one of several ranks ({other}) of a "
            "ring, NCCL or JACCL launch, which pycudamlx cannot join: its backend is MPI. Start "
            "the program with `pycudamlx launch -n N script.py` (or mpiexec).")
    if backend in ("mpi", "any") and (mpi_launch or backend == "mpi" or strict):
        if mpi_launch or _mpi().available():
            return _mpi_world(mpi_launch)
        if strict:
            raise RuntimeError(_STRICT_ERRORS[backend])
        return None
    if mpi_launch:
        raise RuntimeError(
            f"[distributed] This process was launched by MPI as one of several ranks "
            f"({mpi_launch}), but backend='{backend}' is not available in pycudamlx: use "
            "backend='mpi' or 'any'.")
    if strict:
        if backend == "ring":
            env = _env.launch_environment()
            raise RuntimeError(
                "[ring] You need to provide via environment variables both a rank (MLX_RANK) "
                f"and a hostfile (MLX_HOSTFILE) but provided MLX_RANK=\"{env.get('MLX_RANK', '')}"
                f"\" and MLX_HOSTFILE=\"{env.get('MLX_HOSTFILE', '')}\"")
        raise RuntimeError(_STRICT_ERRORS[backend])
    return None


def init(strict: bool = False, backend: str = "any", *_extra: Any,
         all_gather_factory: Callable[[int, int], Callable[[bytes, int], bytes]] | None = None
         ) -> Group:
    """The global communication group. Under an MPI launch (``pycudamlx launch``, mpiexec)
    "any" and "mpi" give the MPI world; ``backend="mpi"`` or ``strict=True`` also form an MPI
    world of one process where MPI is installed; otherwise the singleton group, or MLX's
    RuntimeError with ``strict=True``. A launch pycudamlx cannot join (mlx.launch's ring,
    NCCL, JACCL) raises whatever ``strict`` is: each rank would otherwise train alone."""
    if (_extra or (strict is not True and strict is not False) or not isinstance(backend, str)
            or not (all_gather_factory is None or callable(all_gather_factory))):
        raise _type_error("init", strict, backend, *_extra)
    if all_gather_factory is not None and backend != "jaccl":
        raise ValueError("all_gather_factory is only supported with backend='jaccl'.")
    if backend not in _BACKENDS:
        raise ValueError("[distributed] The only valid values for backend are 'any', 'mpi', "
                         f"'nccl', 'jaccl' and 'ring' but '{backend}' was provided.")
    comm = _FORMED.get(backend)
    if comm is None:
        comm = _form(strict, backend)
        if comm is not None:
            _FORMED[backend] = comm
            _FORMED.setdefault("any", comm)
    return _new_group(comm)


def _operand(fn: str, x: Any, *call: Any) -> array:
    """The array argument as MLX's bindings convert it: arrays, Python and numpy scalars, numpy
    arrays and ``__mlx_array__`` objects; lists and strings are MLX's ValueError, None its
    TypeError."""
    if isinstance(x, array):
        return x
    if x is None:
        raise _type_error(fn, *call)
    if isinstance(x, (list, tuple, str)):
        raise ValueError(f"Invalid type {type(x).__name__} received in array initialization.")
    return array(x)


def _checked(fn: str, x: Any, group: Any, stream: Any, extra: tuple
             ) -> tuple[array, Any, dev.Stream]:
    """The operand, the group's communicator (None for a group of one) and the stream."""
    if extra or not _is_group(group) or not _is_stream(stream):
        raise _type_error(fn, x, *extra)
    a = _operand(fn, x, x)
    comm = _group(fn, group, x)._comm
    if comm is not None and comm.size() == 1:
        comm = None
    if comm is None:
        # MLX's group of one creates no op and ignores ``stream``: the input's own stream.
        return a, None, a._stream or dev.resolve_stream(None)
    return a, comm, dev.resolve_stream(stream)


def _alias(a: array, stream: dev.Stream) -> array:
    """The value of ``a`` as a new array (MLX returns its input; an alias node keeps our
    in-place-update semantics and passes gradients)."""
    return make(_ALIAS, (a,), a._shape, a._dtype, stream)


def _all_reduce(fn: str, op: str, x: Any, group: Any, stream: Any, extra: tuple) -> array:
    a, comm, s = _checked(fn, x, group, stream, extra)
    if comm is None:
        return _alias(a, s)
    return make(_D.AllReduce(comm, op), (a,), a._shape, a._dtype, s)


def all_sum(x: array, *_extra: Any, group: Group | None = None, stream: Any = None) -> array:
    """Sum of ``x`` over the group's processes (``x``'s value for one process)."""
    return _all_reduce("all_sum", "sum", x, group, stream, _extra)


def all_max(x: array, *_extra: Any, group: Group | None = None, stream: Any = None) -> array:
    """Elementwise maximum of ``x`` over the group's processes."""
    return _all_reduce("all_max", "max", x, group, stream, _extra)


def all_min(x: array, *_extra: Any, group: Group | None = None, stream: Any = None) -> array:
    """Elementwise minimum of ``x`` over the group's processes."""
    return _all_reduce("all_min", "min", x, group, stream, _extra)


def all_gather(x: array, *_extra: Any, group: Group | None = None, stream: Any = None
               ) -> array:
    """``x`` of every process concatenated along the first axis, in rank order (0-d inputs
    make a vector of one entry per rank)."""
    a, comm, s = _checked("all_gather", x, group, stream, _extra)
    if comm is None:
        return _alias(a, s)
    n = comm.size()
    shape = (n,) if not a._shape else (n * a._shape[0],) + a._shape[1:]
    return make(_D.AllGather(comm), (a,), shape, a._dtype, s)


def sum_scatter(x: array, *_extra: Any, group: Group | None = None, stream: Any = None
                ) -> array:
    """This rank's block of the first axis of the sum of ``x`` over the processes (the first
    axis must divide by the group's size)."""
    a, comm, s = _checked("sum_scatter", x, group, stream, _extra)
    if comm is None:
        return _alias(a, s)
    n = comm.size()
    if not a._shape or a._shape[0] % n:
        raise ValueError(
            f"[sum_scatter] Invalid shape={shape_text(a._shape)} for a group of size {n}. The "
            "first dimension (axis 0) must be divisible by the group size and input mst have "
            "at least one.")
    shape = (a._shape[0] // n,) + a._shape[1:]
    return make(_D.ReduceScatter(comm, "sum"), (a,), shape, a._dtype, s)


def _peer(what: str, peer: int, comm: Any, singleton_error: str) -> int:
    if comm is None:
        raise ValueError(singleton_error)
    peer = int(peer.__index__())
    if peer < 0 or peer >= comm.size():
        raise ValueError(f"Invalid {what}={peer} for a group of size {comm.size()}")
    return peer


def _comm_of(fn: str, group: Any, *call: Any) -> Any:
    comm = _group(fn, group, *call)._comm
    return None if comm is None or comm.size() == 1 else comm


def send(x: array, dst: int, *_extra: Any, group: Group | None = None, stream: Any = None
         ) -> array:
    """Send ``x`` to rank ``dst``: the send runs when the returned array (``x``'s value) is
    evaluated; the receiving rank evaluates the matching ``recv``."""
    if _extra or not _is_int(dst) or not _is_group(group) or not _is_stream(stream):
        raise _type_error("send", x, dst, *_extra)
    a = _operand("send", x, x, dst)
    comm = _comm_of("send", group, x, dst)
    dst = _peer("destination", dst, comm, "Cannot send to a singleton group")
    return make(_D.Send(comm, dst), (a,), a._shape, a._dtype, dev.resolve_stream(stream))


def _is_shape(shape: Any) -> bool:
    if isinstance(shape, (array, np.ndarray)):  # MLX reads 1-D integer arrays as shapes
        return shape.ndim <= 1 and shape.dtype.kind in "iub"
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        return False
    return all(_is_int(d) for d in shape)


def _recv(shape: tuple[int, ...], dtype: dt.Dtype, src: int, comm: Any, stream: Any) -> array:
    src = _peer("source", src, comm, "Cannot recv from a singleton group")
    if any(d < 0 for d in shape):
        raise ValueError(f"[recv] Invalid shape {shape_text(shape)}: negative dimensions.")
    return make(_D.Recv(comm, src), (), shape, dtype, dev.resolve_stream(stream))


def recv(shape: Sequence[int], dtype: dt.Dtype, src: int, *_extra: Any,
         group: Group | None = None, stream: Any = None) -> array:
    """An array of ``shape`` and ``dtype`` received from rank ``src`` when evaluated."""
    if (_extra or not _is_shape(shape) or not isinstance(dtype, dt.Dtype) or not _is_int(src)
            or not _is_group(group) or not _is_stream(stream)):
        raise _type_error("recv", shape, dtype, src, *_extra)
    comm = _comm_of("recv", group, shape, dtype, src)
    dims = tuple(int(d) for d in (np.asarray(shape).reshape(-1).tolist()
                                  if isinstance(shape, (array, np.ndarray)) else shape))
    return _recv(dims, dtype, src, comm, stream)


def recv_like(x: array, src: int, *_extra: Any, group: Group | None = None, stream: Any = None
              ) -> array:
    """``recv(x.shape, x.dtype, src)``."""
    if _extra or not _is_int(src) or not _is_group(group) or not _is_stream(stream):
        raise _type_error("recv_like", x, src, *_extra)
    a = _operand("recv_like", x, x, src)
    comm = _comm_of("recv_like", group, x, src)
    return _recv(a._shape, a._dtype, src, comm, stream)


def _hide_extra() -> None:
    """inspect.signature shows MLX's signatures (``*_extra`` exists only to give nanobind's
    error for positional arguments past MLX's keyword-only marker)."""
    import inspect

    for name in __all__:
        f = globals()[name]
        if isinstance(f, type):
            continue
        sig = inspect.signature(f)
        f.__signature__ = sig.replace(parameters=[
            p for p in sig.parameters.values() if p.kind is not p.VAR_POSITIONAL])


_hide_extra()


def __dir__() -> list[str]:
    # dir(mx.distributed) as MLX shows it: the public names, not our helpers
    return [n for n in ("__doc__", "__loader__", "__name__", "__package__", "__spec__")
            if n in globals()] + sorted(__all__)
