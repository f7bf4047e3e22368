"""Array creation: ``mx.array`` conversion rules, zeros/ones/full/arange and friends."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.primitives.elementwise import cast_numpy

__all__: list[str] = []


def _array_data(val: Any, dtype: dt.Dtype | None) -> tuple[Any, dt.Dtype]:
    """The evaluated data (numpy, or a GpuArray) and dtype of ``mx.array(val, dtype)``
    (MLX's conversion rules: see core/_conversion.py)."""
    from ..graph.evaluate import evaluate
    from ._conversion import convert
    from .array import array

    data, dtype_ = convert(val, dtype)
    if isinstance(data, array):
        if data._data is None:
            evaluate((data,))
        if dtype_ is data._dtype:
            return data._data, dtype_
        return cast_numpy(data._numpy(), dtype_), dtype_
    return data, dtype_


# ----------------------------------------------------------------------------------------------
# Creation ops: zeros/ones/full/empty (+ _like), arange, linspace, eye, identity, tri, tril,
# triu, meshgrid, repeat, tile and the window functions. Each builds one lazy node whose kernel
# writes the output (a fill, the sequence.cu kernels); see graph/primitives/creation.py.

import math as _math  # noqa: E402
import operator as _operator  # noqa: E402

from ..graph.primitives import creation as _C  # noqa: E402
from .array import array, make  # noqa: E402
from ..graph.primitives import shape as _P  # noqa: E402
from . import device as _dev  # noqa: E402
from ._nanobind import argument_error  # noqa: E402

__all__ += [
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
    "arange", "linspace", "eye", "identity", "tri", "tril", "triu", "meshgrid", "repeat",
    "tile", "bartlett", "blackman", "hamming", "hanning",
]

_INT_SMALL_RANGES = {d: (int(np.iinfo(d.np_dtype).min), int(np.iinfo(d.np_dtype).max))
                     for d in dt.ALL_DTYPES if d.kind in "iu" and d.size < 8}


def _shape_ops():
    from . import shape

    return shape


def _dtype_arg(dtype: Any, default: dt.Dtype, fn: str) -> dt.Dtype:
    return default if dtype is None else dt.to_dtype(dtype, fn)


def _new_shape(shape: Any, fn: str) -> tuple[int, ...]:
    """zeros/ones/full's ``int | Sequence[int]``: None is nanobind's TypeError; other values
    fail inside MLX's caster, a RuntimeError (std::bad_cast)."""
    S = _shape_ops()
    if shape is None:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: shape must be an int "
                                 "or a sequence of ints, got NoneType")
    try:
        if isinstance(shape, array):
            raise TypeError
        dims = S.shape_arg(shape, fn)
    except TypeError:
        raise RuntimeError(f"std::bad_cast ({fn}: the shape must be an int or a sequence of ints, "
                           f"got {type(shape).__name__} {shape!r})") from None
    if any(d < 0 for d in dims):
        raise ValueError("[full] Negative dimensions not allowed.")
    return dims


def _scalar_value(val: Any, dtype: dt.Dtype | None) -> tuple[Any, dt.Dtype]:
    """MLX's conversion of a Python scalar ``vals`` with an optional dtype (the bindings'
    ``to_array``): bools take any dtype; ints take integer, floating and complex dtypes (with
    an overflow check for integer dtypes narrower than 64 bits), else int32/int64; floats take
    floating dtypes, else float32; complex numbers are complex64. Returns (value, dtype)."""
    if isinstance(val, (bool, np.bool_)):
        return bool(val), dtype or dt.bool_
    if isinstance(val, (int, np.integer)):
        natural = dt.dtype_from_python(val)
        value = int(val)
        if dtype is None or dtype is dt.bool_:
            return value, natural
        rng = _INT_SMALL_RANGES.get(dtype)
        if rng is not None and not rng[0] <= value <= rng[1]:
            raise ValueError(f"Converting {value} to {dtype.name} would result in overflow.")
        return value, dtype
    if isinstance(val, (float, np.floating)):
        natural = dt.dtype_from_python(val)
        if dtype is not None and dtype.kind == "f":
            return float(val), dtype
        return float(val), (dt.float32 if dtype is not None else natural)
    if isinstance(val, (complex, np.complexfloating)):
        return complex(np.complex64(val)), dt.complex64
    raise TypeError(f"unsupported scalar {type(val).__name__}")


def _odd_scalar(val: Any) -> Any:
    """An object MLX's bindings read as a complex scalar (``__complex__`` / ``__float__`` /
    ``__index__``: a user's class, Fraction, Decimal) as a Python complex; others unchanged."""
    c = dt.odd_number(val)
    return val if c is None else c


def _is_scalar(val: Any) -> bool:
    return isinstance(val, (bool, int, float, complex, np.bool_, np.number))


def _full_node(shape: tuple[int, ...], value: Any, dtype: dt.Dtype, stream: Any) -> array:
    _shape_ops().check_size(shape, dtype, "full")
    return make(_C.Full(value), (), shape, dtype, _dev.resolve_stream(stream))


def _materialize(vals: array, shape: tuple[int, ...], dtype: dt.Dtype, stream: Any) -> array:
    """A new array of ``shape`` holding ``vals`` broadcast and cast (MLX's Full primitive)."""
    S = _shape_ops()
    out = S._broadcast2(vals._shape, shape)
    if out != shape:
        raise ValueError(f"Cannot broadcast array of shape {S.fmt_shape(vals._shape)} into "
                         f"shape {S.fmt_shape(shape)}.")
    S.check_size(shape, dtype, "full")
    s = _dev.resolve_stream(stream)
    return make(_P.Copy(), (S.broadcast_view(vals, shape, s),), shape, dtype, s)


def _vals_array(vals: Any, dtype: dt.Dtype | None) -> array:
    if vals is None:
        raise TypeError("full(): incompatible function arguments: vals must be a scalar or an "
                        "array, got NoneType")
    if isinstance(vals, (list, tuple, str)):  # MLX takes scalars and arrays only
        raise ValueError(f"Invalid type {type(vals).__name__} received in array "
                         "initialization.")
    return array(vals, dtype) if isinstance(vals, np.ndarray) else array(vals)


def full(shape: int | Sequence[int], vals: Any, dtype: dt.Dtype | None = None, *,
         stream: Any = None) -> array:
    """An array of ``shape`` filled with ``vals`` (a scalar, or an array broadcast to shape)."""
    if dtype is not None:
        dtype = dt.to_dtype(dtype, "full")
    if isinstance(vals, array):
        dims = _new_shape(shape, "full")
        return _materialize(vals, dims, vals._dtype, stream)
    if not _is_scalar(vals):
        vals = _odd_scalar(vals)
    if _is_scalar(vals):
        value, out_dtype = _scalar_value(vals, dtype)
        return _full_node(_new_shape(shape, "full"), value, out_dtype, stream)
    v = _vals_array(vals, dtype)
    return _materialize(v, _new_shape(shape, "full"), v._dtype, stream)


def zeros(shape: int | Sequence[int], dtype: dt.Dtype | None = dt.float32, *,
          stream: Any = None) -> array:
    """An array of zeros (float32 by default)."""
    return _full_node(_new_shape(shape, "zeros"), 0, _dtype_arg(dtype, dt.float32, "zeros"),
                      stream)


def ones(shape: int | Sequence[int], dtype: dt.Dtype | None = dt.float32, *,
         stream: Any = None) -> array:
    """An array of ones (float32 by default)."""
    return _full_node(_new_shape(shape, "ones"), 1, _dtype_arg(dtype, dt.float32, "ones"),
                      stream)


def empty(shape: int | Sequence[int], dtype: dt.Dtype | None = dt.float32, *,
          stream: Any = None) -> array:
    """MLX's ``empty`` is ``zeros``: the values are zeros, never uninitialised memory."""
    return zeros(shape, dtype, stream=stream)


def _like(a: Any, fn: str) -> array:
    if not isinstance(a, array):
        raise TypeError(f"{fn}(): incompatible function arguments. The following argument "
                        f"types are supported:\n    1. {fn}(a: array, /, dtype: Dtype | None = "
                        f"None, *, stream: StreamOrDevice = None) -> array\n\nInvoked with "
                        f"types: {type(a).__name__}")
    return a


def zeros_like(a: array, /, dtype: dt.Dtype | None = None, *, stream: Any = None) -> array:
    a = _like(a, "zeros_like")
    return _full_node(a._shape, 0, _dtype_arg(dtype, a._dtype, "zeros_like"), stream)


def ones_like(a: array, /, dtype: dt.Dtype | None = None, *, stream: Any = None) -> array:
    a = _like(a, "ones_like")
    return _full_node(a._shape, 1, _dtype_arg(dtype, a._dtype, "ones_like"), stream)


def empty_like(a: array, /, dtype: dt.Dtype | None = None, *, stream: Any = None) -> array:
    """MLX's ``empty_like`` is ``zeros_like``."""
    return zeros_like(a, dtype, stream=stream)


def full_like(a: array, vals: Any, dtype: dt.Dtype | None = None, *,
              stream: Any = None) -> array:
    """An array like ``a`` (shape broadcast with vals', dtype a's or ``dtype``) of ``vals``."""
    a = _like(a, "full_like")
    out_dtype = _dtype_arg(dtype, a._dtype, "full_like")
    if not _is_scalar(vals) and not isinstance(vals, array):
        vals = _odd_scalar(vals)
    if _is_scalar(vals):
        value, _ = _scalar_value(vals, out_dtype)
        return _full_node(a._shape, value, out_dtype, stream)
    v = vals if isinstance(vals, array) else _vals_array(vals, out_dtype)
    shape = _shape_ops()._broadcast2(a._shape, v._shape)
    return _materialize(v, shape, out_dtype, stream)


# -- arange, linspace --------------------------------------------------------------------------

_ARANGE_SIG = (
    "arange(): incompatible function arguments. The following argument types are supported:\n"
    "    1. arange(start : int | float, stop : None | int | float, step : None | int | float, "
    "dtype: Dtype | None = None, *, stream: StreamOrDevice = None) -> array\n"
    "    2. arange(stop : int | float, step : None | int | float = None, dtype: Dtype | None = "
    "None, *, stream: StreamOrDevice = None) -> array\n\nInvoked with types: ")


def _number(v: Any, types: list) -> int | float | None:
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    raise TypeError(_ARANGE_SIG + ", ".join(dt._type_name(x) for x in types))


def arange(*args: Any, start: Any = None, stop: Any = None, step: Any = None,
           dtype: dt.Dtype | None = None, stream: Any = None) -> array:
    """Evenly spaced values in [start, stop): ``arange(stop)``, ``arange(start, stop[, step])``.

    int32 for int arguments (int64 beyond int32's range), float32 when any is a float.
    Floating results are start + i * step computed in double and rounded once (MLX's CPU
    accumulates in float32 and drifts, sticking at 2**24 for float32)."""
    pos = list(args)
    if pos and isinstance(pos[-1], dt.Dtype):
        if dtype is not None:
            raise TypeError(_ARANGE_SIG + ", ".join(type(x).__name__ for x in args))
        dtype = pos.pop()
    if len(pos) > 3:
        raise TypeError(_ARANGE_SIG + ", ".join(type(x).__name__ for x in args))
    names = ("start", "stop", "step")
    given = dict(zip(names, pos))
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if value is not None:
            if name in given:
                raise TypeError(f"arange() got multiple values for argument '{name}'")
            given[name] = value
    raw = [given.get("start"), given.get("stop"), given.get("step")]
    if len(pos) == 1 and "stop" not in given:
        raw = [None, pos[0], raw[2]]
    vals = [_number(v, args) for v in raw]
    st, sp, stp = vals
    if sp is None:
        if st is None:
            raise TypeError(_ARANGE_SIG + ", ".join(type(x).__name__ for x in args))
        st, sp = None, st
    st = 0 if st is None else st
    stp = 1 if stp is None else stp
    present = [v for v in (st, sp, stp)]
    if dtype is None:
        if any(isinstance(v, bool) for v in (vals[0], vals[1], vals[2]) if v is not None):
            raise ValueError("bool not supported for arange.")
        if any(isinstance(v, float) for v in present):
            dtype = dt.float32
        elif all(-(2**31) <= v <= 2**31 - 1 for v in present):
            dtype = dt.int32
        else:
            dtype = dt.int64
    else:
        dtype = dt.to_dtype(dtype, "arange")
    if dtype is dt.bool_:
        raise ValueError("bool not supported for arange.")
    fs, fe, fst = float(st), float(sp), float(stp)
    if fst == 0.0:
        raise ValueError("[arange] step must be nonzero.")
    if _math.isnan(fs) or _math.isnan(fe) or _math.isnan(fst) or _math.isinf(fs) or \
            _math.isinf(fe):
        raise ValueError("[arange] Cannot compute length.")
    if _math.isinf(fst):
        size = 1 if (fst > 0 and fs < fe) or (fst < 0 and fs > fe) else 0
    elif all(isinstance(v, int) for v in present):
        size = max(0, -((sp - st) // -stp) if stp > 0 else -((st - sp) // stp))
    else:
        size = max(0, _math.ceil((fe - fs) / fst))
    if size > 2**31 - 1:
        raise ValueError("[arange] Maximum size exceeded.")
    s = _dev.resolve_stream(stream)
    if dtype.kind in "iu":
        bits = 8 * dtype.size
        first = _to_int(st, dtype)
        step_i = (_to_int(st + stp, dtype) - first) % (1 << bits)
        prim = _C.Arange(first, step_i)
    else:
        prim = _C.Arange(fs, fst if size > 1 else 0.0)  # an infinite step gives [start]
    return make(prim, (), (size,), dtype, s)


def _to_int(value: int | float, dtype: dt.Dtype) -> int:
    """static_cast<T>(value) with the result's bits (truncation toward zero; floats beyond
    the type saturate), as an int in [0, 2**bits)."""
    bits = 8 * dtype.size
    if isinstance(value, float):
        info = np.iinfo(dtype.np_dtype)
        value = int(min(max(_math.trunc(value), int(info.min)), int(info.max))) \
            if _math.isfinite(value) else 0
    return value % (1 << bits)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             dtype: dt.Dtype | None = dt.float32, stream: Any = None) -> array:
    """``num`` evenly spaced values from start to stop (MLX's formula: float32 arithmetic,
    float64 for a float64 result)."""
    for v in (start, stop):
        if not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError("linspace(): incompatible function arguments: start and stop must "
                            f"be real scalars, got {type(v).__name__}")
    if isinstance(num, bool) or not isinstance(num, (int, np.integer)):
        raise argument_error("linspace", "linspace(): incompatible function arguments: num "
                             f"must be an int, got {type(num).__name__}")
    if endpoint is not True and endpoint is not False:  # MLX takes a Python bool only
        raise argument_error("linspace", "linspace(): incompatible function arguments: endpoint "
                             f"must be a bool, got {type(endpoint).__name__}")
    num = int(num)
    if num < 0:
        raise ValueError(f"[linspace] number of samples, {num}, must be non-negative.")
    dtype = _dtype_arg(dtype, dt.float32, "linspace")
    den = (num - 1 if endpoint else num) if num > 1 else 0
    if num == 1 and not endpoint:
        den = 1
    _shape_ops().check_size((num,), dtype, "linspace")
    return make(_C.Linspace(float(start), float(stop), den), (), (num,), dtype,
                _dev.resolve_stream(stream))


# -- eye, identity, tri, tril, triu ------------------------------------------------------------


def _int_arg(value: Any, fn: str, what: str) -> int:
    """An ``int`` argument as MLX's bindings take it: a C++ int, so outside int32 is a TypeError
    there too (not a huge allocation)."""
    try:
        if isinstance(value, (float, complex, str)) or value is None:
            raise TypeError
        v = _operator.index(value)
    except TypeError:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {what} must be an "
                             f"int, got {type(value).__name__}") from None
    if not -2**31 <= v < 2**31:
        raise TypeError(f"{fn}(): incompatible function arguments: {what}={v} does not fit the "
                        "32-bit int MLX takes")
    return v


def eye(n: int, m: int | None = None, k: int = 0, dtype: dt.Dtype | None = dt.float32, *,
        stream: Any = None) -> array:
    """An n x m array with ones on the k-th diagonal."""
    n = _int_arg(n, "eye", "n")
    m = n if m is None else _int_arg(m, "eye", "m")
    k = _int_arg(k, "eye", "k")
    if n < 0 or m < 0:
        raise ValueError("[eye] N and M must be positive integers.")
    dtype = _dtype_arg(dtype, dt.float32, "eye")
    _shape_ops().check_size((n, m), dtype, "eye")
    return make(_C.TriMask(k, True), (), (n, m), dtype, _dev.resolve_stream(stream))


def identity(n: int, dtype: dt.Dtype | None = dt.float32, *, stream: Any = None) -> array:
    """The n x n identity matrix."""
    n = _int_arg(n, "identity", "n")
    return eye(n, n, 0, dtype, stream=stream)


def tri(n: int, m: int | None = None, k: int = 0, dtype: dt.Dtype | None = None, *,
        stream: Any = None) -> array:
    """An n x m array with ones at and below the k-th diagonal."""
    n = _int_arg(n, "tri", "n")
    m = n if m is None else _int_arg(m, "tri", "m")
    k = _int_arg(k, "tri", "k")
    dtype = _dtype_arg(dtype, dt.float32, "tri")
    shape = (max(n, 0), max(m, 0))
    _shape_ops().check_size(shape, dtype, "tri")
    return make(_C.TriMask(k, False), (), shape, dtype, _dev.resolve_stream(stream))


def _tri_select(x: Any, k: int, lower: bool, stream: Any) -> array:
    fn = "tril" if lower else "triu"
    if not isinstance(x, array):
        raise argument_error(fn, f"{fn}(): incompatible function arguments: x must be an "
                             f"mlx.core.array, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"[{fn}] array must be at least 2-D")
    return make(_P.TriSelect(_int_arg(k, fn, "k"), lower), (x,), x._shape, x._dtype,
                _dev.resolve_stream(stream))


def tril(x: array, k: int = 0, *, stream: Any = None) -> array:
    """x with the elements above the k-th diagonal zeroed (last two axes)."""
    return _tri_select(x, k, True, stream)


def triu(x: array, k: int = 0, *, stream: Any = None) -> array:
    """x with the elements below the k-th diagonal zeroed (last two axes)."""
    return _tri_select(x, k, False, stream)


# -- meshgrid, repeat, tile --------------------------------------------------------------------


def meshgrid(*arrays: array, sparse: bool | None = False, indexing: str | None = "xy",
             stream: Any = None) -> tuple[array, ...]:
    """Coordinate arrays from 1-D vectors (inputs are flattened): views of the inputs."""
    S = _shape_ops()
    if indexing not in ("xy", "ij"):
        raise ValueError("[meshgrid] Invalid indexing value. Valid values are 'xy' and 'ij'.")
    for x in arrays:
        if not isinstance(x, array):
            raise TypeError("meshgrid(): incompatible function arguments: arrays must be "
                            f"mlx.core.array, got {type(x).__name__}")
    ndim = len(arrays)
    outs = []
    for i, x in enumerate(arrays):
        shape = [1] * ndim
        shape[i] = x.size
        outs.append(shape)
    if indexing == "xy" and ndim > 1:
        outs[0][0], outs[0][1] = 1, arrays[0].size
        outs[1][0], outs[1][1] = arrays[1].size, 1
    res = [S._reshape_node(x, tuple(shape), stream) for x, shape in zip(arrays, outs)]
    if not sparse and ndim > 1:
        res = S.broadcast_arrays(*res, stream=stream)
    return tuple(res)


def repeat(array: array, repeats: int, axis: int | None = None, *,  # noqa: A002 - MLX's name
           stream: Any = None) -> array:
    """Repeat each element ``repeats`` times along ``axis`` (the flattened array if None)."""
    S = _shape_ops()
    a = S.require_array(array, "repeat", "array")
    repeats = _int_arg(repeats, "repeat", "repeats")
    if axis is None:
        a = S.flatten(a, stream=stream)
        axis = 0
    ax = S.check_axis(_int_arg(axis, "repeat", "axis"), a.ndim, "repeat")
    if repeats < 0:
        raise ValueError("[repeat] Number of repeats cannot be negative")
    if repeats == 1:
        return S.fresh(a, stream)
    shape = a._shape
    expanded = shape[:ax + 1] + (1,) + shape[ax + 1:]
    target = shape[:ax + 1] + (repeats,) + shape[ax + 1:]
    final = shape[:ax] + (shape[ax] * repeats,) + shape[ax + 1:]
    if shape[ax] * repeats > 2**31 - 1:
        raise OverflowError(f"[repeat] Shape dimension {shape[ax] * repeats} is outside the "
                            f"supported range [{-2**31}, {2**31 - 1}]. MLX currently uses 32-bit "
                            "integers for shape dimensions.")
    S.check_size(final, a._dtype, "repeat")
    s = _dev.resolve_stream(stream)
    x = S._reshape_node(a, expanded, s)
    x = S.broadcast_view(x, target, s)
    return S._reshape_node(x, final, s)


def tile(a: array, reps: int | Sequence[int], /, *, stream: Any = None) -> array:
    """``a`` repeated ``reps`` times along each axis."""
    S = _shape_ops()
    a = S.require_array(a, "tile")
    reps_l = [_int_arg(reps, "tile", "reps")] if not isinstance(reps, (list, tuple)) else \
        S.int_list(reps, "reps", "tile")
    shape = list(a._shape)
    if len(reps_l) < len(shape):
        reps_l = [1] * (len(shape) - len(reps_l)) + reps_l
    if len(reps_l) > len(shape):
        shape = [1] * (len(reps_l) - len(shape)) + shape
    if any(r < 0 for r in reps_l):
        raise ValueError("[broadcast_to] Negative dimensions not allowed.")
    expand, broad, final = [], [], []
    for r, e in zip(reps_l, shape):
        if r != 1:
            expand.append(1)
            broad.append(r)
        expand.append(e)
        broad.append(e)
        final.append(r * e)
    S.check_size(final, a._dtype, "tile")
    s = _dev.resolve_stream(stream)
    x = S._reshape_node(a, tuple(expand), s)
    x = S.broadcast_view(x, tuple(broad), s)
    x = S._reshape_node(x, tuple(final), s)
    return S.fresh(a, s) if x is a else x


# -- window functions --------------------------------------------------------------------------


def _window(kind: str, M: int, stream: Any) -> array:  # noqa: N803 - MLX's name
    if isinstance(M, (bool, float)) or not isinstance(M, (int, np.integer)):
        raise TypeError(f"{kind}(): incompatible function arguments: M must be an int, got "
                        f"{type(M).__name__}")
    return make(_C.Window(kind), (), (max(int(M), 0),), dt.float32, _dev.resolve_stream(stream))


def bartlett(M: int, *, stream: Any = None) -> array:  # noqa: N803
    """The Bartlett (triangular) window of length M, float32."""
    return _window("bartlett", M, stream)


def blackman(M: int, *, stream: Any = None) -> array:  # noqa: N803
    """The Blackman window of length M, float32."""
    return _window("blackman", M, stream)


def hamming(M: int, *, stream: Any = None) -> array:  # noqa: N803
    """The Hamming window of length M, float32."""
    return _window("hamming", M, stream)


def hanning(M: int, *, stream: Any = None) -> array:  # noqa: N803
    """The Hann window of length M, float32."""
    return _window("hanning", M, stream)
