"""Reductions, scans, softmax and diff (``mx.sum`` ... ``mx.diff``): MLX 0.32.4's signatures,
result dtypes and errors.

Computed by the numpy primitives of graph/primitives/reduce.py. On GPU streams they run on the
host view of managed memory for now (``gpu_kernel = False``, the documented fallback; they raise
under PYCUDAMLX_STRICT_GPU=1); GPU kernels come in a later session. See docs/reductions.md.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

from .. import dtypes as dt
from ..graph.primitives import reduce as R
from . import device as dev
from ._base import AxisError, normalize_axis
from ._nanobind import argument_error
from .array import array, fresh, make
from .shape import require_array

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "minmax", "all", "any", "argmax",
    "argmin", "logsumexp", "count_nonzero", "median", "cumsum", "cumprod", "cummax", "cummin",
    "logcumsumexp", "softmax", "diff",
]

_pyall = all

# Result dtypes, as MLX 0.32.4 gives them (checked against mlx.core on every dtype).
_SUM_DTYPE = {"bool": dt.int32, "int8": dt.int32, "int16": dt.int32, "uint8": dt.uint32,
              "uint16": dt.uint32}


def _sum_dtype(d: dt.Dtype) -> dt.Dtype:
    return _SUM_DTYPE.get(d.name, d)


def _float_dtype(d: dt.Dtype) -> dt.Dtype:
    """mean/logsumexp/median/softmax: integers and bool give float32, floats keep theirs."""
    return d if d.kind in "fc" else dt.float32


def _var_dtype(d: dt.Dtype) -> dt.Dtype:
    """var/std: also complex64 gives float32."""
    return d if d.kind == "f" else dt.float32


def _incompatible(fn: str, what: str, value: Any) -> TypeError:
    return argument_error(fn, f"{fn}(): incompatible function arguments: {what} must be "
                          f"None | int | Sequence[int], got {type(value).__name__}")


def _axis_int(value: Any, fn: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise _incompatible(fn, "axis", value) from None


def _axes(a: array, axis: Any, fn: str, bad_axis: str | None = None,
          duplicate: str = "Duplicate axes detected in reduction.") -> tuple[int, ...]:
    """Normalized, sorted, unique reduction axes; MLX's errors for bad or duplicate axes."""
    ndim = len(a._shape)
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (str, bytes, array)):
        raise _incompatible(fn, "axis", axis)
    if hasattr(axis, "__iter__"):
        raw = [_axis_int(x, fn) for x in axis]
    else:
        raw = [_axis_int(axis, fn)]
    if bad_axis is not None:
        for x in raw:
            if not -ndim <= x < ndim:
                raise AxisError(bad_axis.format(axis=x, ndim=ndim))
    axes = [normalize_axis(x, ndim) for x in raw]
    if len(set(axes)) != len(axes):
        raise ValueError(duplicate)
    return tuple(sorted(axes))


def _refuse_axes_of_scalar(a: array, axis: Any, fn: str) -> None:
    """softmax/logsumexp of a 0-d array over given axes: MLX's ValueError (not IndexError)."""
    if axis is not None and not (hasattr(axis, "__len__") and len(axis) == 0):
        raise ValueError(f"[{fn}] Received non-empty axes for array with 0 dimensions.")


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
               ) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else e for i, e in enumerate(shape))
    return tuple(e for i, e in enumerate(shape) if i not in axes)


# mean/var/std name MLX's mean in their bad-axis message; the others give normalize_axis's.
_MEAN_BAD_AXIS = "[mean] axis {axis} is out of bounds for array with {ndim} dimensions."


def _reduce(op: str, a: Any, axis: Any, keepdims: bool, stream: Any, dtype_of: Any,
            param: Any = None) -> array:
    a = require_array(a, op)
    axes = _axes(a, axis, op, _MEAN_BAD_AXIS if op in ("mean", "var", "std") else None)
    # Over no axes MLX's sum and prod copy the input, keeping its dtype.
    out_dtype = a._dtype if not axes and op in ("sum", "prod") else dtype_of(a._dtype)
    return make(R.Reduce(op, axes, bool(keepdims), param), (a,),
                _out_shape(a._shape, axes, keepdims), out_dtype,
                dev.resolve_stream(stream))


def _same(d: dt.Dtype) -> dt.Dtype:
    return d


def _bool(d: dt.Dtype) -> dt.Dtype:
    return dt.bool_


def _int32(d: dt.Dtype) -> dt.Dtype:
    return dt.int32


def sum(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,  # noqa: A001
        stream: Any = None) -> array:
    """Sum over ``axis``; bool/int8/int16 sum into int32 and uint8/uint16 into uint32 (MLX)."""
    return _reduce("sum", a, axis, keepdims, stream, _sum_dtype)


def prod(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,
         stream: Any = None) -> array:
    """Product over ``axis``; small integers widen as in ``sum``."""
    return _reduce("prod", a, axis, keepdims, stream, _sum_dtype)


_HALF = ("float16", "bfloat16")


def _count(a: array, axes: tuple[int, ...]) -> int:
    n = 1
    for ax in axes:
        n *= a._shape[ax]
    return n


def _times_reciprocal(total: array, n: int, stream: Any) -> array:
    """``total * (1 / n)`` with the factor rounded to ``total``'s dtype, as MLX scales."""
    from .creation import full
    from .elementwise import multiply

    factor = 1.0 / n if n > 0 else float("inf")
    return multiply(total, full((), factor, total._dtype, stream=stream), stream=stream)


def mean(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,
         stream: Any = None) -> array:
    """Mean over ``axis`` (integers give float32; an empty reduction gives NaN, as MLX)."""
    a = require_array(a, "mean")
    if a._dtype.name in _HALF:
        # MLX: sum (float32 accumulator, rounded to the half dtype) times the rounded 1/n;
        # dividing in float32 and rounding once differs from it by an ulp (0.4% in bfloat16)
        axes = _axes(a, axis, "mean", _MEAN_BAD_AXIS)
        total = _reduce("sum", a, axes, keepdims, stream, _sum_dtype)
        return _times_reciprocal(total, _count(a, axes), stream)
    return _reduce("mean", a, axis, keepdims, stream, _float_dtype)


builtins_max = builtins.max


def _half_variance(a: array, axis: Any, keepdims: bool, fn: str, stream: Any,
                   ddof: int = 0) -> array:
    """MLX's float16/bfloat16 ``var``: each step rounded to the half dtype, the sum of the
    squared deviations from the (half) mean times the rounded 1/n (ddof 0) or divided by
    max(n - ddof, 0) in the half dtype."""
    from .creation import full
    from .elementwise import divide, square, subtract

    axes = _axes(a, axis, fn, _MEAN_BAD_AXIS)
    mu = mean(a, axes, True, stream=stream)
    squares = square(subtract(a, mu, stream=stream), stream=stream)
    total = _reduce("sum", squares, axes, keepdims, stream, _sum_dtype)
    if ddof == 0:
        return _times_reciprocal(total, _count(a, axes), stream)
    factor = float(builtins_max(_count(a, axes) - ddof, 0))
    return divide(total, full((), factor, total._dtype, stream=stream), stream=stream)


def _ddof(ddof: Any, fn: str, name: str = "ddof") -> int:
    """An int argument (var/std's ddof, diff's n); the TypeError names it."""
    if isinstance(ddof, bool):
        return int(ddof)
    try:
        return operator.index(ddof)
    except TypeError:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {name} must be an "
                             f"int, got {type(ddof).__name__}") from None


def var(a: array, /, axis: None | int | Any = None, keepdims: bool = False, ddof: int = 0, *,
        correction: int | None = None, stream: Any = None) -> array:
    """Variance over ``axis`` divided by max(n - ddof, 0) (inf/NaN when ddof >= n, as MLX);
    ``correction``, when given, is used in place of ``ddof``."""
    a = require_array(a, "var")
    ddof = _ddof(ddof, "var")
    if correction is not None:  # MLX's keyword (the array API's name): it replaces ddof
        ddof = _ddof(correction, "var", "correction")
    if a._dtype.name in _HALF:
        return _half_variance(a, axis, keepdims, "var", stream, ddof)
    return _reduce("var", a, axis, keepdims, stream, _var_dtype, ddof)


def std(a: array, /, axis: None | int | Any = None, keepdims: bool = False, ddof: int = 0, *,
        correction: int | None = None, stream: Any = None) -> array:
    """Standard deviation: the square root of ``var``."""
    a = require_array(a, "std")
    ddof = _ddof(ddof, "std")
    if correction is not None:  # MLX's keyword (the array API's name): it replaces ddof
        ddof = _ddof(correction, "std", "correction")
    if a._dtype.name in _HALF:
        from .elementwise import sqrt

        return sqrt(_half_variance(a, axis, keepdims, "std", stream, ddof), stream=stream)
    return _reduce("std", a, axis, keepdims, stream, _var_dtype, ddof)


def _check_nonempty_axes(a: array, axes: tuple[int, ...], fn: str) -> None:
    for ax in axes:
        if a._shape[ax] == 0:
            raise ValueError(f"[{fn}] Cannot {fn} reduce over axis {ax} with size 0.")


def max(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,  # noqa: A001
        stream: Any = None) -> array:
    """Maximum over ``axis``; NaN propagates; ValueError over an axis of size 0 (MLX)."""
    a = require_array(a, "max")
    axes = _axes(a, axis, "max")
    _check_nonempty_axes(a, axes, "max")
    return make(R.Reduce("max", axes, bool(keepdims)), (a,),
                _out_shape(a._shape, axes, keepdims), a._dtype, dev.resolve_stream(stream))


def min(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,  # noqa: A001
        stream: Any = None) -> array:
    """Minimum over ``axis``; NaN propagates; ValueError over an axis of size 0 (MLX)."""
    a = require_array(a, "min")
    axes = _axes(a, axis, "min")
    _check_nonempty_axes(a, axes, "min")
    return make(R.Reduce("min", axes, bool(keepdims)), (a,),
                _out_shape(a._shape, axes, keepdims), a._dtype, dev.resolve_stream(stream))


def minmax(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,
           stream: Any = None) -> tuple[array, array]:
    """``(min(a, axis), max(a, axis))``, as MLX's ``minmax``."""
    a = require_array(a, "minmax")
    return (min(a, axis, keepdims, stream=stream), max(a, axis, keepdims, stream=stream))


def all(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,  # noqa: A001
        stream: Any = None) -> array:
    """True where every element over ``axis`` is nonzero (True over nothing)."""
    return _reduce("all", a, axis, keepdims, stream, _bool)


def any(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,  # noqa: A001
        stream: Any = None) -> array:
    """True where some element over ``axis`` is nonzero (False over nothing)."""
    return _reduce("any", a, axis, keepdims, stream, _bool)


def count_nonzero(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,
                  stream: Any = None) -> array:
    """The number of nonzero elements over ``axis``, as int32 (MLX; its docs mark axis
    keyword-only, yet it takes it positionally too)."""
    return _reduce("count_nonzero", a, axis, keepdims, stream, _int32)


def logsumexp(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,
              stream: Any = None) -> array:
    """log(sum(exp(a))) computed stably; ValueError for an empty array (MLX)."""
    a = require_array(a, "logsumexp")
    if not a._shape:
        _refuse_axes_of_scalar(a, axis, "logsumexp")
    axes = _axes(a, axis, "logsumexp")
    if a.size == 0:
        raise ValueError("[logsumexp] Received empty array.")
    return make(R.Reduce("logsumexp", axes, bool(keepdims)), (a,),
                _out_shape(a._shape, axes, keepdims), _float_dtype(a._dtype),
                dev.resolve_stream(stream))


def median(a: array, /, axis: None | int | Any = None, keepdims: bool = False, *,
           stream: Any = None) -> array:
    """The median over ``axis`` (NaN propagates); ValueError over an empty axis (MLX)."""
    a = require_array(a, "median")
    axes = _axes(a, axis, "median",
                 "[median] axis {axis} is out of bounds for array with {ndim} dimensions.",
                 "[median] Received duplicate axis.")
    if not axes and axis is not None:
        raise ValueError("[flatten] start_axis must be less than or equal to end_axis")
    if not _pyall(a._shape[i] != 0 for i in axes):
        raise ValueError("[median] Cannot take median along empty axis.")
    return make(R.Reduce("median", axes, bool(keepdims)), (a,),
                _out_shape(a._shape, axes, keepdims), _float_dtype(a._dtype),
                dev.resolve_stream(stream))


def _argreduce(op: str, a: Any, axis: Any, keepdims: bool, stream: Any) -> array:
    a = require_array(a, op)
    ndim = len(a._shape)
    if axis is None:
        ax = None
        shape = (1,) * ndim if keepdims else ()
    else:
        if isinstance(axis, (tuple, list, str, bytes, array, float)):
            raise argument_error(op, f"{op}(): incompatible function arguments: axis must be "
                                 f"None | int, got {type(axis).__name__}")
        ax = normalize_axis(_axis_int(axis, op), ndim)
        shape = _out_shape(a._shape, (ax,), keepdims)
    if a.size == 0:
        raise ValueError(f"[{op}] Cannot {op} reduce zero size array.")
    return make(R.ArgReduce(op, ax), (a,), shape, dt.uint32, dev.resolve_stream(stream))


def argmax(a: array, /, axis: None | int = None, keepdims: bool = False, *,
           stream: Any = None) -> array:
    """Index (uint32) of the maximum; the first on ties and the first NaN, as MLX."""
    return _argreduce("argmax", a, axis, keepdims, stream)


def argmin(a: array, /, axis: None | int = None, keepdims: bool = False, *,
           stream: Any = None) -> array:
    """Index (uint32) of the minimum; the first on ties and the first NaN, as MLX."""
    return _argreduce("argmin", a, axis, keepdims, stream)


# ----------------------------------------------------------------------------------------------
# Scans


def _scan(op: str, a: Any, axis: Any, reverse: bool, inclusive: bool, stream: Any,
          out_dtype: dt.Dtype | None) -> array:
    from .shape import reshape

    a = require_array(a, op)
    if axis is None:
        a = reshape(a, (-1,), stream=stream)
        ax = 0
    else:
        ax = _axis_int(axis, op)
        ndim = len(a._shape)
        if not -ndim <= ax < ndim:
            raise AxisError(f"[{op}] Axis {ax} is out of bounds for array with {ndim} "
                            "dimensions.")
        ax %= ndim
    d = a._dtype
    if out_dtype is None:
        if op == "cumsum":
            out_dtype = dt.int32 if d is dt.bool_ else d
        elif op == "logcumsumexp":
            out_dtype = _float_dtype(d)
        else:
            out_dtype = d
    return make(R.Scan(op, ax, bool(reverse), bool(inclusive)), (a,), a._shape, out_dtype,
                dev.resolve_stream(stream))


def cumsum(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool = True,
           dtype: dt.Dtype | None = None, stream: Any = None) -> array:
    """Cumulative sum (bool -> int32; integers wrap in their dtype, as MLX); ``dtype=`` casts
    the input first."""
    out = None if dtype is None else dt.to_dtype(dtype, "cumsum")
    return _scan("cumsum", a, axis, reverse, inclusive, stream, out)


def cumprod(a: array, /, axis: int | None = None, *, reverse: bool = False,
            inclusive: bool = True, dtype: dt.Dtype | None = None, stream: Any = None) -> array:
    """Cumulative product in the input dtype; ``dtype=`` casts the input first (as MLX)."""
    out = None if dtype is None else dt.to_dtype(dtype, "cumprod")
    return _scan("cumprod", a, axis, reverse, inclusive, stream, out)


def cummax(a: array, /, axis: int | None = None, *, reverse: bool = False,
           inclusive: bool = True, stream: Any = None) -> array:
    """Cumulative maximum (NaN propagates; exclusive scans start at the dtype's lowest)."""
    return _scan("cummax", a, axis, reverse, inclusive, stream, None)


def cummin(a: array, /, axis: int | None = None, *, reverse: bool = False,
           inclusive: bool = True, stream: Any = None) -> array:
    """Cumulative minimum (NaN propagates; exclusive scans start at the dtype's highest)."""
    return _scan("cummin", a, axis, reverse, inclusive, stream, None)


def logcumsumexp(a: array, /, axis: int | None = None, *, reverse: bool = False,
                 inclusive: bool = True, stream: Any = None) -> array:
    """Cumulative log(sum(exp)) (integers give float32; exclusive scans start at -inf)."""
    return _scan("logcumsumexp", a, axis, reverse, inclusive, stream, None)


# ----------------------------------------------------------------------------------------------
# softmax, diff


def softmax(a: array, /, axis: None | int | Any = None, *, precise: bool = False,
            stream: Any = None) -> array:
    """exp(a - max) / sum over ``axis`` (all axes for None). float16/bfloat16 compute in float32
    with ``precise``; without it the CPU rounds every step to the half dtype as MLX's CPU does
    (the GPU kernel always computes in float32)."""
    a = require_array(a, "softmax")
    if not a._shape:
        _refuse_axes_of_scalar(a, axis, "softmax")
    axes = _axes(a, axis, "softmax")
    # Over no axes MLX gives exp(a - a) / 1 in a's own dtype (ones, NaN where a is).
    out_dtype = _float_dtype(a._dtype) if axes else a._dtype
    return make(R.Softmax(axes, bool(precise)), (a,), a._shape, out_dtype,
                dev.resolve_stream(stream))


def diff(a: array, /, n: int = 1, axis: int = -1, *, stream: Any = None) -> array:
    """The n-th discrete difference along ``axis`` (bools: xor; integers wrap), as MLX."""
    a = require_array(a, "diff")
    n = _ddof(n, "diff", "n")
    ax = _axis_int(axis, "diff")
    ndim = len(a._shape)
    if not -ndim <= ax < ndim:
        raise AxisError("[diff] Axis is out of bounds for the array.")
    if n < 0:
        raise ValueError("[diff] Order `n` must be non-negative.")
    ax %= ndim
    if n == 0:
        return fresh(a, stream)
    shape = list(a._shape)
    shape[ax] = shape[ax] - n if shape[ax] > n else 0
    return make(R.Diff(n, ax), (a,), tuple(shape), a._dtype, dev.resolve_stream(stream))
