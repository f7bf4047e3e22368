"""How ``mx.array`` reads a Python value: scalars, nested lists and tuples, numpy arrays, buffers,
DLPack producers and ``__mlx_array__`` objects.

The rules are MLX 0.32.4's, checked case by case against it (tests/test_array.py):

* A Python scalar: bool -> bool, int -> int32 (int64 beyond int32, RuntimeError beyond int64),
  float -> float32, complex -> complex64; ``dtype=`` converts the value (ints wrap).
* A nested list: its shape follows the first element at every level; the element kinds decide the
  dtype (bool < int < float < complex; empty lists are float32); ints beyond int32 make it int64,
  ints beyond int64 raise MLX's RuntimeError("std::bad_cast"). With an integer ``dtype=``, the ints
  must fit the type MLX reads them as (int32; uint32, uint64 and int64 for those types) or the same
  RuntimeError is raised, then they wrap. numpy scalars other than np.float64/np.complex128 (float
  and complex subclasses) are refused inside lists, as MLX refuses them. A list that contains mx
  arrays is the stack of its elements, each converted on its own (so ``[mx.array(1, int8), 2]``
  is int32). Lists deeper than numpy's dimension limit raise a clear ValueError.
* A numpy array keeps its dtype, except float64 -> float32 and complex128 -> complex64; types MLX
  lacks raise RuntimeError("std::bad_cast ...").
* Anything else: ``__mlx_array__``, then DLPack (a GPU producer is shared, not copied), then the
  buffer protocol, then (beyond MLX) ``__array__`` / ``__array_interface__``; else ValueError.

Performance: a list of Python scalars is checked level by level with C-speed builtins (``map``,
``set``, ``chain``) and converted with one ``np.array`` call; the exact, element-by-element walk
that reproduces MLX's error messages runs only when something is wrong or mx arrays are inside.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..backend.memstats import track_host
from ..graph.primitives.elementwise import cast_numpy

_I32_MAX = 2**31 - 1  # MLX's shape dimensions are int32


def _numpy_max_dims() -> int:
    for n in (64, 32):
        try:
            np.empty((1,) * n)
            return n
        except ValueError:
            continue
    return 32


#: Most dimensions an array can have (numpy's limit: the CPU backend holds numpy arrays).
MAX_NDIM = _numpy_max_dims()

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
_EXACT_KIND = {bool: _BOOL, int: _INT, float: _FLOAT, complex: _COMPLEX}
_SEQ = (list, tuple)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _cast(host: np.ndarray, target: dt.Dtype) -> np.ndarray:
    """``host`` converted to ``target`` as MLX's array constructor converts (complex -> bool
    looks at the real part only, unlike astype), C-contiguous, any ndim (0-d too)."""
    if host.dtype == target.np_dtype:
        return host if host.flags.c_contiguous else host.copy(order="C")
    if target is dt.bool_ and host.dtype.kind == "c":
        host = host.real
    out = np.asarray(cast_numpy(host, target))
    if not out.flags.c_contiguous:
        out = out.copy(order="C")
    return out


def _bad_cast(detail: str) -> RuntimeError:
    return RuntimeError(f"std::bad_cast ({detail})")


def _non_uniform() -> ValueError:
    return ValueError("Initialization encountered non-uniform length.")


def _too_deep() -> ValueError:
    return ValueError(f"Initialization encountered a sequence nested more than {MAX_NDIM} levels "
                      f"deep: arrays have at most {MAX_NDIM} dimensions.")


def _invalid_type(value: Any) -> ValueError:
    return ValueError(f"Invalid type {dt._type_name(value)} received in array initialization.")


def _kind_of_type(t: type) -> int | None:
    """The scalar kind MLX reads an element of type ``t`` as (None: not a scalar it accepts)."""
    kind = _EXACT_KIND.get(t)
    if kind is not None:
        return kind
    if issubclass(t, bool):
        return _BOOL
    if issubclass(t, int):
        return _INT
    if issubclass(t, float):
        return _FLOAT
    if issubclass(t, complex):
        return _COMPLEX
    return None


# ------------------------------------------------------------------------------------------------
# Scalars


_FLT_MAX = float(np.finfo(np.float32).max)


def scalar_data(val: Any, dtype: dt.Dtype | None) -> tuple[np.ndarray, dt.Dtype]:
    """A 0-d numpy array and dtype for a Python bool/int/float/complex (or a subclass)."""
    t = type(val)
    if dtype is None:  # the common cases, without casts (each costs about a microsecond)
        if t is float and -_FLT_MAX <= val <= _FLT_MAX:
            return np.array(val, dtype=np.float32), dt.float32
        if t is int and _INT32_MIN <= val <= _INT32_MAX:
            return np.array(val, dtype=np.int32), dt.int32
        if t is bool:
            return np.array(val), dt.bool_
    kind = _kind_of_type(t)
    if kind == _BOOL:
        host = np.array(bool(val))
        natural = dt.bool_
    elif kind == _INT:
        natural = dt.dtype_from_python(int(val))  # bad_cast beyond int64
        host = np.array(int(val), dtype=np.int64)
    elif kind == _FLOAT:
        host = np.array(float(val), dtype=np.float64)
        natural = dt.float32
    else:
        with np.errstate(all="ignore"):
            host = np.array(complex(val), dtype=np.complex128).astype(np.complex64)
        natural = dt.complex64
    target = dtype or natural
    return _cast(host, target), target


# ------------------------------------------------------------------------------------------------
# Nested sequences


def _flatten_fast(val: Any) -> tuple[list[int], list[Any]] | None:
    """(shape, leaves) of a well-formed nested list of scalars, level by level at C speed.

    None when anything is irregular (ragged, mixed depths, mx arrays or odd leaves inside):
    the exact walk then decides what MLX would say.
    """
    shape: list[int] = []
    level: list[Any] = [val]
    while True:
        n = len(level[0])
        if len(level) > 1 and len(set(map(len, level))) != 1:
            return None
        shape.append(n)
        if n == 0:
            return shape, []
        nxt = list(chain.from_iterable(level))
        types = set(map(type, nxt))
        if types.issubset(_SEQ):
            if len(shape) >= MAX_NDIM:
                return None
            level = nxt
            continue
        for t in types:
            if t in _SEQ or _kind_of_type(t) is None:
                return None
        return shape, nxt


def _exact_walk(val: Any) -> tuple[list[int], int, bool]:
    """MLX's shape inference and validation, element by element and in MLX's order, so that
    the first problem found is the one MLX reports. Returns (shape, kind, has_arrays)."""
    from .array import array

    # Shape: follow the first element at every level; an mx array there adds its own shape.
    shape: list[int] = []
    x = val
    while True:
        shape.append(len(x))
        if len(shape) > MAX_NDIM:
            raise _too_deep()
        if not len(x):
            break
        first = x[0]
        if isinstance(first, _SEQ):
            x = first
            continue
        if isinstance(first, array):
            shape.extend(first.shape)
            if len(shape) > MAX_NDIM:
                raise _too_deep()
        break
    ndim = len(shape)
    kind = _BOOL
    has_arrays = False
    # Depth-first, in order; a stack of (iterator, depth of its elements).
    if len(val) != shape[0]:
        raise _non_uniform()
    if shape[0] == 0:
        return shape, _FLOAT, False
    stack = [(iter(val), 1)]
    while stack:
        it, depth = stack[-1]
        el = next(it, _DONE)
        if el is _DONE:
            stack.pop()
            continue
        if isinstance(el, _SEQ):
            if depth >= ndim:
                raise ValueError("Initialization encountered extra dimension.")
            if len(el) != shape[depth]:
                raise _non_uniform()
            if shape[depth] == 0:
                kind = max(kind, _FLOAT)
                continue
            stack.append((iter(el), depth + 1))
        elif isinstance(el, array):
            has_arrays = True
            if el.ndim + depth != ndim or tuple(el.shape) != tuple(shape[depth:]):
                raise _non_uniform()
        else:
            k = _kind_of_type(type(el))
            if k is None:
                raise _invalid_type(el)
            if depth != ndim:
                raise _non_uniform()
            if k == _INT:
                v = int(el)
                if not _INT64_MIN <= v <= _INT64_MAX:
                    raise _bad_cast(f"Python int {v} does not fit in int64")
            if k > kind:
                kind = k
    return shape, kind, has_arrays


_DONE = object()


def _int_leaves(leaves: list[Any], target: dt.Dtype) -> np.ndarray:
    """Python ints (and bools) read as MLX reads them for ``target``, before the final cast."""
    try:
        wide = np.array(leaves, dtype=np.int64)
    except OverflowError:
        raise _bad_cast("a Python int in the list does not fit in int64") from None
    if target is dt.int64 or not wide.size:
        return wide
    lo, hi = int(wide.min()), int(wide.max())
    if target is dt.uint64:
        if lo < 0:
            raise _bad_cast(f"{lo} does not fit in uint64")
        return wide.astype(np.uint64)
    if target is dt.uint32:
        if lo < 0 or hi > 2**32 - 1:
            raise _bad_cast(f"{lo if lo < 0 else hi} does not fit in uint32")
        return wide.astype(np.uint32)
    if target.kind in "fc":
        return wide.astype(np.float64)
    if lo < _INT32_MIN or hi > _INT32_MAX:
        raise _bad_cast(f"{lo if lo < _INT32_MIN else hi} does not fit in int32")
    return wide.astype(np.int32)


_SMALL = 4096  # up to this many leaves, Python's min/max beat two numpy reductions


def _leaves_data(leaves: list[Any], shape: list[int], kind: int,
                 dtype: dt.Dtype | None) -> tuple[np.ndarray, dt.Dtype]:
    """Convert validated scalar leaves (no mx arrays) of one kind to numpy data and dtype."""
    if kind == _BOOL:
        target = dtype or dt.bool_
        host = np.array(leaves, dtype=np.bool_)
    elif kind == _INT:
        if dtype is None:
            if len(leaves) <= _SMALL and _INT32_MIN <= min(leaves) and max(
                    leaves) <= _INT32_MAX:
                return np.array(leaves, dtype=np.int32).reshape(shape), dt.int32
            try:
                host = np.array(leaves, dtype=np.int64)
            except OverflowError:
                raise _bad_cast("a Python int in the list does not fit in int64") from None
            wide = host.size and (host.min() < _INT32_MIN or host.max() > _INT32_MAX)
            target = dt.int64 if wide else dt.int32
        else:
            target = dtype
            host = _int_leaves(leaves, target)
    elif kind == _FLOAT:
        target = dtype or dt.float32
        ints = [v for v in leaves if type(v) is int]
        if ints and (max(ints) > _INT64_MAX or min(ints) < _INT64_MIN):
            raise _bad_cast("a Python int in the list does not fit in int64")
        if dtype is None and len(leaves) <= _SMALL and -_FLT_MAX <= min(leaves) and max(
                leaves) <= _FLT_MAX:  # (no overflow to check: a NaN takes the general path)
            return np.array(leaves, dtype=np.float32).reshape(shape), dt.float32
        host = np.array(leaves, dtype=np.float64)
    else:
        target = dtype or dt.complex64
        ints = [v for v in leaves if type(v) is int]
        if ints and (max(ints) > _INT64_MAX or min(ints) < _INT64_MIN):
            raise _bad_cast("a Python int in the list does not fit in int64")
        with np.errstate(all="ignore"):
            host = np.array(leaves, dtype=np.complex128).astype(np.complex64)
    host = host.reshape(shape)
    return _cast(host, target), target


def sequence_data(val: list | tuple, dtype: dt.Dtype | None) -> tuple[Any, dt.Dtype]:
    """Data and dtype of ``mx.array(list_or_tuple, dtype)``: numpy data, or an mx array (the
    stack of the elements) when mx arrays are inside."""
    fast = _flatten_fast(val)
    if fast is not None:
        shape, leaves = fast
        if not leaves:
            target = dtype or dt.float32
            return np.zeros(shape, dtype=target.np_dtype), target
        kinds = {_kind_of_type(t) for t in set(map(type, leaves))}
        kind = max(kinds)  # type: ignore[type-var]
        return _leaves_data(leaves, shape, kind, dtype)
    shape, kind, has_arrays = _exact_walk(val)
    if not has_arrays:
        leaves = list(_iter_leaves(val, len(shape)))
        if not leaves:
            target = dtype or dt.float32
            return np.zeros(shape, dtype=target.np_dtype), target
        return _leaves_data(leaves, shape, kind, dtype)
    # mx arrays inside: MLX converts each top-level element on its own and stacks the results,
    # in the graph (so mx.array([x, y]) under grad/vjp differentiates through x and y).
    from .array import array, from_data
    from .shape import stack

    parts = [element_data(el, dtype) for el in val]
    target = parts[0][1]
    for _, d in parts[1:]:
        target = dt.promote_types(target, d)
    items = [p.astype(target) if isinstance(p, array)
             else from_data(_cast(np.asarray(p), target), target) for p, _ in parts]
    return stack(items), target


def _iter_leaves(val: Any, ndim: int):
    """The scalars of a validated nested sequence in C order (iterative: no recursion limit)."""
    stack = [iter(val)]
    while stack:
        el = next(stack[-1], _DONE)
        if el is _DONE:
            stack.pop()
        elif isinstance(el, _SEQ):
            stack.append(iter(el))
        else:
            yield el


def element_data(el: Any, dtype: dt.Dtype | None) -> tuple[Any, dt.Dtype]:
    """One element of a list that holds mx arrays, converted as ``mx.array(el, dtype)`` would:
    an mx array (kept in the graph, cast lazily by astype's rules) or host data."""
    from .array import array

    if isinstance(el, array):
        if dtype is None or dtype is el._dtype:
            return el, el._dtype
        return el.astype(dtype), dtype
    if isinstance(el, _SEQ):
        return sequence_data(el, dtype)
    return scalar_data(el, dtype)


# ------------------------------------------------------------------------------------------------
# numpy arrays and other objects


def numpy_data(val: np.ndarray, dtype: dt.Dtype | None) -> tuple[np.ndarray, dt.Dtype]:
    """A copy of a numpy array (any layout) converted as MLX converts it."""
    if val.ndim > MAX_NDIM:  # pragma: no cover - numpy itself refuses these
        raise _too_deep()
    if val.size > _I32_MAX:  # only then can a dimension be beyond MLX's int32 shapes
        for d in val.shape:
            if d > _I32_MAX:
                raise OverflowError(f"Shape dimension {d} is outside the supported range "
                                    "[-2147483648, 2147483647]. MLX currently uses 32-bit "
                                    "integers for shape dimensions.")
    natural = dt.dtype_from_numpy(val.dtype)
    target = dtype or natural
    try:  # the slot, not the np_dtype property (~50 ns more on every mx.array(ndarray))
        np_dtype = target._np_dtype
    except AttributeError:  # bfloat16 before ml_dtypes is imported
        np_dtype = target.np_dtype
    if val.dtype == np_dtype:
        return np.array(val, order="C", copy=True), target
    return _cast(val, target), target


def _buffer_numpy(val: Any) -> np.ndarray | None:
    """A numpy view of a buffer-protocol object, or None when it has none."""
    try:
        view = memoryview(val)
    except TypeError:
        return None
    fmt = view.format
    code = fmt.lstrip("@=<>!")
    if code == "d" or fmt in dt._BUFFER_FORMAT_TO_DTYPE:
        try:
            return np.asarray(view)
        except (ValueError, TypeError):
            return None
    raise _bad_cast(f"buffer format {fmt!r} has no MLX equivalent")


def object_data(val: Any, dtype: dt.Dtype | None) -> tuple[Any, dt.Dtype]:
    """Objects that are not scalars, sequences, numpy or mx arrays."""
    from .array import array

    mlx_array = getattr(type(val), "__mlx_array__", None)
    if mlx_array is not None:
        out = mlx_array(val)
        if not isinstance(out, array):
            raise ValueError(f"__mlx_array__ of {dt._type_name(val)} returned "
                             f"{dt._type_name(out)}, not an mlx.core.array.")
        return out, dtype or out._dtype
    if hasattr(val, "__dlpack__") and hasattr(val, "__dlpack_device__"):
        from . import interop

        data, natural = interop.import_dlpack(val, copy=None)
        target = dtype or natural
        if isinstance(data, np.ndarray):
            if data.dtype == target.np_dtype:
                return np.array(data, order="C", copy=True), target
            return _cast(data, target), target
        if target is data.dtype:
            return data, target  # GPU memory of another library: shared, as MLX shares Metal's
        from .array import from_data

        return from_data(data, data.dtype), target  # converted lazily by the caller
    host = _buffer_numpy(val)
    if host is not None:
        return numpy_data(host, dtype)
    if hasattr(val, "__cuda_array_interface__"):
        from . import interop

        data, natural = interop.import_cuda_array_interface(val)
        target = dtype or natural
        if target is data.dtype:
            return data, target
        from .array import from_data

        return from_data(data, data.dtype), target
    if hasattr(val, "__array__") or hasattr(val, "__array_interface__"):
        host = np.asarray(val)
        if host.dtype == object:
            raise _invalid_type(val)
        return numpy_data(host, dtype)
    raise _invalid_type(val)


# ------------------------------------------------------------------------------------------------
# Entry point


def convert(val: Any, dtype: Any) -> tuple[Any, dt.Dtype]:
    """(data, dtype) of ``mx.array(val, dtype)``; host data counts in the memory statistics."""
    data, dtype_ = _convert(val, dtype)
    if type(data) is np.ndarray:
        track_host(data)
    return data, dtype_


_array_class: Any = None


def _array_type() -> Any:
    global _array_class
    if _array_class is None:
        from .array import array

        _array_class = array
    return _array_class


def _convert(val: Any, dtype: Any) -> tuple[Any, dt.Dtype]:
    """(data, dtype) of ``mx.array(val, dtype)``.

    ``data`` is a numpy array (host values, always a fresh copy), a GpuArray (CUDA memory of a
    DLPack/CAI producer, shared), or an mx array whose value is meant (an mx array given, an
    ArrayLike's ``__mlx_array__``, a GPU import needing a dtype conversion): the caller aliases
    or converts it lazily.
    """
    array = _array_class or _array_type()
    if dtype is not None:
        dtype = dt.to_dtype(dtype, "array")
    t = type(val)
    if t in _EXACT_KIND:
        return scalar_data(val, dtype)
    if t is list or t is tuple:
        return sequence_data(val, dtype)
    if t is array:
        return val, dtype or val._dtype
    if isinstance(val, np.ndarray):
        return numpy_data(val, dtype)
    if isinstance(val, np.generic):
        return numpy_data(np.asarray(val), dtype)
    if isinstance(val, array):
        return val, dtype or val._dtype
    if isinstance(val, _SEQ):
        return sequence_data(val, dtype)
    if _kind_of_type(t) is not None:
        return scalar_data(val, dtype)
    if val is None:
        raise dt._incompatible_arguments(
            "__init__(self: array, val: scalar | list | tuple | DLPackCompatible | array, "
            "dtype: Dtype | None = None)", dt._SelfArray, val)
    return object_data(val, dtype)
