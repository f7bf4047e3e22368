"""``mx.distributed``: MLX's communication API for one process (a group of size 1).

pycudamlx has no multi-process backend (no ring, MPI, NCCL or JACCL transport). Every group is
the singleton group MLX itself returns from ``init()`` when no backend is configured, and every
operation behaves as MLX 0.32.4's does on such a group:

* ``all_sum``/``all_gather``/``all_max``/``all_min``/``sum_scatter`` return their input's value
  as a new array object (an alias node: no copy, no kernel, on the input's stream), so
  gradients, jvps and vmap pass through unchanged, as MLX's do (MLX returns the input itself);
* ``send``/``recv``/``recv_like`` raise MLX's ValueError ("Cannot send to a singleton group" /
  "Cannot recv from a singleton group") and ``Group.split`` its RuntimeError;
* ``init(strict=True)`` raises MLX's RuntimeError for the backend asked for, and an unknown
  backend name MLX's ValueError.

``is_available()`` answers False for every backend (MLX's Linux CPU wheel says True for
"ring" and "any" because it can open a ring group; we cannot): scripts that check it before
distributing take their single-process path, and ``init()`` still returns the singleton group
for scripts that call it unconditionally. When the environment says that this process was
launched as one rank of several (``mlx.launch``'s MLX_RANK/MLX_HOSTFILE/MLX_WORLD_SIZE/
MLX_JACCL_COORDINATOR, or mpirun's OMPI_COMM_WORLD_SIZE/PMI_SIZE above 1), ``init`` raises
instead of returning a singleton group: each rank would otherwise train alone, silently.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import numpy as np

from .. import _env
from .. import dtypes as dt
from . import device as dev
from ._nanobind import argument_error
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

_NO_BACKEND = ("pycudamlx runs one process: it has no multi-process communication backend "
               "(ring, MPI, NCCL or JACCL), so mx.distributed offers only the singleton group "
               "(see docs/distributed.md)")


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
    """A group of MLX processes that can communicate; here always the singleton group (this
    process, rank 0 of 1). Made by ``init()``, not constructed directly (as in MLX)."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> "Group":
        raise TypeError("mlx.core.distributed.Group: no constructor defined!")

    def rank(self) -> int:
        """The rank of this process in the group: 0."""
        return 0

    def size(self) -> int:
        """The number of processes in the group: 1."""
        return 1

    def split(self, color: int, key: int = -1) -> "Group":
        """MLX's subgroup split; a singleton group cannot be split (MLX's RuntimeError)."""
        if not _is_int(color) or not _is_int(key):
            raise dt._incompatible_arguments("split(self, color: int, key: int = -1) -> Group",
                                             self, color, *(() if key == -1 else (key,)))
        raise RuntimeError("Cannot split the distributed group further.")

    def __reduce__(self) -> Any:
        raise TypeError("cannot pickle 'Group' object")


# MLX's repr and error messages name the class mlx.core.distributed.Group.
Group.__module__ = "mlx.core.distributed"


def _new_group() -> Group:
    return object.__new__(Group)


def _group(fn: str, group: Any, *call: Any) -> Group:
    if not _is_group(group):
        raise _type_error(fn, *call)
    return group if group is not None else _new_group()


def is_available(backend: str = "any") -> bool:
    """Whether a communication backend can be instantiated: False for every name, since
    pycudamlx has none (MLX's CPU wheel answers True for "ring"/"any"); scripts that check
    first then run their single-process path."""
    if not isinstance(backend, str):
        raise _type_error("is_available", backend)
    return False


def _launched_ranks() -> str | None:
    """The environment variables that say this process is one rank of a multi-process launch
    (mlx.launch's or mpirun's), as text for the error; None when it runs alone."""
    env = _env.launch_environment()
    rank, hostfile = env.get("MLX_RANK", ""), env.get("MLX_HOSTFILE", "")
    if rank and hostfile and _hostfile_hosts(hostfile) != 1:
        return f'MLX_RANK="{rank}" and MLX_HOSTFILE="{hostfile}"'
    for name in ("MLX_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        value = env.get(name, "")
        if value.strip().isdigit() and int(value) > 1:
            return f'{name}="{value}"'
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


def init(strict: bool = False, backend: str = "any", *_extra: Any,
         all_gather_factory: Callable[[int, int], Callable[[bytes, int], bytes]] | None = None
         ) -> Group:
    """The global communication group: the singleton group. ``strict=True`` raises MLX's
    RuntimeError for ``backend`` (none can be initialized here); so does a launch of several
    ranks (see the module docstring), whatever ``strict`` is."""
    if (_extra or (strict is not True and strict is not False) or not isinstance(backend, str)
            or not (all_gather_factory is None or callable(all_gather_factory))):
        raise _type_error("init", strict, backend, *_extra)
    if all_gather_factory is not None and backend != "jaccl":
        raise ValueError("all_gather_factory is only supported with backend='jaccl'.")
    if backend not in _BACKENDS:
        raise ValueError("[distributed] The only valid values for backend are 'any', 'mpi', "
                         f"'nccl', 'jaccl' and 'ring' but '{backend}' was provided.")
    launched = _launched_ranks()
    if launched is not None:
        raise RuntimeError(f"[distributed] This process was launched as one of several ranks "
                           f"({launched}), but {_NO_BACKEND}. Run one process.")
    if strict:
        if backend == "ring":
            env = _env.launch_environment()
            raise RuntimeError(
                "[ring] You need to provide via environment variables both a rank (MLX_RANK) "
                f"and a hostfile (MLX_HOSTFILE) but provided MLX_RANK=\"{env.get('MLX_RANK', '')}"
                f"\" and MLX_HOSTFILE=\"{env.get('MLX_HOSTFILE', '')}\"")
        raise RuntimeError(_STRICT_ERRORS[backend])
    return _new_group()


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


def _collective(fn: str, x: Any, group: Any, stream: Any, extra: tuple) -> array:
    """A collective over the singleton group: the value of ``x`` as a new array (MLX returns
    its input; an alias node keeps our in-place-update semantics and passes gradients)."""
    if extra or not _is_group(group) or not _is_stream(stream):
        raise _type_error(fn, x, *extra)
    a = _operand(fn, x, x)
    return make(_ALIAS, (a,), a._shape, a._dtype, a._stream or dev.resolve_stream(None))


def all_sum(x: array, *_extra: Any, group: Group | None = None, stream: Any = None) -> array:
    """Sum of ``x`` over the group's processes: ``x``'s value for one process."""
    return _collective("all_sum", x, group, stream, _extra)


def all_gather(x: array, *_extra: Any, group: Group | None = None, stream: Any = None
               ) -> array:
    """``x`` of every process concatenated along the first axis: ``x``'s value for one."""
    return _collective("all_gather", x, group, stream, _extra)


def all_max(x: array, *_extra: Any, group: Group | None = None, stream: Any = None) -> array:
    """Elementwise maximum of ``x`` over the group's processes: ``x``'s value for one."""
    return _collective("all_max", x, group, stream, _extra)


def all_min(x: array, *_extra: Any, group: Group | None = None, stream: Any = None) -> array:
    """Elementwise minimum of ``x`` over the group's processes: ``x``'s value for one."""
    return _collective("all_min", x, group, stream, _extra)


def sum_scatter(x: array, *_extra: Any, group: Group | None = None, stream: Any = None
                ) -> array:
    """This rank's first-axis shard of the sum over processes: all of ``x`` for one."""
    return _collective("sum_scatter", x, group, stream, _extra)


def send(x: array, dst: int, *_extra: Any, group: Group | None = None, stream: Any = None
         ) -> array:
    """Send ``x`` to rank ``dst``: MLX's ValueError on a singleton group."""
    if _extra or not _is_int(dst) or not _is_group(group) or not _is_stream(stream):
        raise _type_error("send", x, dst, *_extra)
    _operand("send", x, x, dst)
    raise ValueError("Cannot send to a singleton group")


def _is_shape(shape: Any) -> bool:
    if isinstance(shape, (array, np.ndarray)):  # MLX reads 1-D integer arrays as shapes
        return shape.ndim <= 1 and shape.dtype.kind in "iub"
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        return False
    return all(_is_int(d) for d in shape)


def recv(shape: Sequence[int], dtype: dt.Dtype, src: int, *_extra: Any,
         group: Group | None = None, stream: Any = None) -> array:
    """Receive an array from rank ``src``: MLX's ValueError on a singleton group."""
    if (_extra or not _is_shape(shape) or not isinstance(dtype, dt.Dtype) or not _is_int(src)
            or not _is_group(group) or not _is_stream(stream)):
        raise _type_error("recv", shape, dtype, src, *_extra)
    raise ValueError("Cannot recv from a singleton group")


def recv_like(x: array, src: int, *_extra: Any, group: Group | None = None, stream: Any = None
              ) -> array:
    """``recv(x.shape, x.dtype, src)``: MLX's ValueError on a singleton group."""
    if _extra or not _is_int(src) or not _is_group(group) or not _is_stream(stream):
        raise _type_error("recv_like", x, src, *_extra)
    _operand("recv_like", x, x, src)
    raise ValueError("Cannot recv from a singleton group")


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
