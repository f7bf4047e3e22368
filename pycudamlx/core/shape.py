"""Shape ops (``mx.reshape`` ... ``mx.kron``, ``mx.slice`` / ``mx.slice_update``): MLX's
signatures, results and errors.

Views where the layout allows (reshape of a compatible layout, transpose, squeeze, expand_dims,
broadcast_to, flip, diagonal, split, unstack, as_strided): no copy and no allocation on either
backend. Everything else (concatenate, stack, pad, roll, diag, contiguous) allocates the output
once and fills it with strided copies; see graph/primitives/shape.py.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.primitives import shape as P
from ..graph.primitives.shape import ViewSpec, contiguous_strides
from . import device as dev
from ._base import AxisError, as_array, astype, broadcast_shapes as _broadcast2
from ._nanobind import argument_error
from ..graph import evaluate as _ev
from . import _compile_trace
from .array import array, from_data, fresh, make, make_multi

__all__ = [
    "reshape", "flatten", "unflatten", "squeeze", "expand_dims", "transpose", "permute_dims",
    "swapaxes", "moveaxis", "matrix_transpose", "broadcast_to", "broadcast_arrays",
    "broadcast_shapes", "concatenate", "concat", "stack", "unstack", "split", "atleast_1d",
    "atleast_2d", "atleast_3d", "pad", "flip", "roll", "as_strided", "contiguous", "diag",
    "diagonal", "trace", "kron", "slice", "slice_update",
]

_pyslice = builtins.slice
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_I64_MAX = 2**63 - 1


# ----------------------------------------------------------------------------------------------
# Argument helpers (shared with creation.py and indexing.py)


def fmt_shape(shape: Sequence[int]) -> str:
    """A shape as MLX prints it: (2,3), (5), ()."""
    return "(" + ",".join(str(e) for e in shape) + ")"


def _int(value: Any, what: str, fn: str) -> int:
    if isinstance(value, bool):
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {what} must be an "
                             f"int, got {type(value).__name__}") from None


def int_list(values: Any, what: str, fn: str) -> list[int]:
    """A sequence of Python ints (TypeError naming the argument otherwise)."""
    if isinstance(values, (str, bytes, array)) or not hasattr(values, "__iter__"):
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {what} must be a "
                             f"sequence of ints, got {type(values).__name__}")
    return [_int(v, what, fn) for v in values]


def shape_arg(shape: Any, fn: str, allow_int: bool = True) -> tuple[int, ...]:
    """A shape argument: an int (if allowed) or a sequence of ints within MLX's int32 range."""
    single = allow_int and not isinstance(shape, (list, tuple)) and not hasattr(shape,
                                                                                "__iter__")
    dims = [_int(shape, "shape", fn)] if single else int_list(shape, "shape", fn)
    for d in dims:
        if not _I32_MIN <= d <= _I32_MAX:
            if single:
                raise OverflowError(f"Shape dimension {d} is outside the supported range "
                                    f"[{_I32_MIN}, {_I32_MAX}]. MLX currently uses 32-bit "
                                    "integers for shape dimensions.")
            raise OverflowError(f"Integer value {d} is outside the supported range "
                                f"[{_I32_MIN}, {_I32_MAX}].")
    return tuple(dims)


def check_size(shape: Sequence[int], dtype: dt.Dtype, fn: str) -> None:
    """A clear error for a shape whose byte size a 64-bit size cannot hold (MLX misbehaves)."""
    n = 1
    for e in shape:
        n *= e
    if n * dtype.size > _I64_MAX:
        raise ValueError(f"[{fn}] Shape {fmt_shape(shape)} has {n} elements of {dtype.size} "
                         "bytes: more than a 64-bit size can address.")


def check_axis(axis: int, ndim: int, fn: str) -> int:
    """Normalise an axis; AxisError with MLX's wording when it is out of range."""
    if not -ndim <= axis < ndim:
        raise AxisError(f"[{fn}] Axis {axis} is out of bounds for array with {ndim} dimensions.")
    return axis + ndim if axis < 0 else axis


def require_array(a: Any, fn: str, what: str = "a") -> array:
    if not isinstance(a, array):
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {what} must be an "
                             f"mlx.core.array, got {type(a).__name__}")
    return a


def _bad_cast(fn: str, value: Any) -> RuntimeError:
    return RuntimeError(f"std::bad_cast ({fn} expects arrays, got {type(value).__name__})")


def view(a: array, spec: ViewSpec, name: str, stream: Any) -> array:
    """A zero-copy view of ``a``: evaluated at once when ``a`` is (see view_on), else a node."""
    return view_on(a, spec, name, dev.resolve_stream(stream))


def view_on(a: array, spec: ViewSpec, name: str, s: dev.Stream) -> array:
    """``view`` on a resolved stream.

    A view of an evaluated array whose data already lives where ``s`` runs (a model's weight
    transposed every step, ``W.T``) is made now: it costs no kernel, and as a node it would
    cost a schedule slot, a fusion-planner visit and an evaluation step each time. While a
    gradient, compile or export trace runs (the tape records nodes; traced inputs are real
    arrays there) it stays a node, as does a view that would move data between devices."""
    data = a._data
    if data is not None and _ev.tape is None and not _compile_trace.active:
        if type(data) is np.ndarray:
            if not s.is_gpu:
                return from_data(spec.numpy(data), a._dtype)
        elif s.is_gpu and data.buffer.device.index == s.device.index:
            return from_data(spec.gpu(data), a._dtype)
    return make(P.View(spec, name), (a,), spec.shape, a._dtype, s)


def _reshape_node(a: array, shape: tuple[int, ...], stream: Any) -> array:
    if a._shape == shape:
        return a
    return make(P.Reshape(), (a,), shape, a._dtype, dev.resolve_stream(stream))


# ----------------------------------------------------------------------------------------------
# Reshapes


def reshape(a: array, /, shape: Sequence[int], *, stream: Any = None) -> array:
    """``a`` with a new shape (one dimension may be -1): a view when the layout allows."""
    a = require_array(a, "reshape")
    if not isinstance(shape, (list, tuple)):
        raise TypeError("reshape(): incompatible function arguments. The following argument "
                        "types are supported:\n    1. reshape(a: array, /, shape: Sequence[int], "
                        f"*, stream: StreamOrDevice = None) -> array\n\nInvoked with types: "
                        f"mlx.core.array, {type(shape).__name__}")
    dims = list(shape_arg(shape, "reshape", allow_int=False))
    shape = _infer_shape(a, dims)
    if shape == a._shape:  # a new array object all the same, as in MLX (see array.fresh)
        return fresh(a, stream)
    return make(P.Reshape(), (a,), shape, a._dtype, dev.resolve_stream(stream))


def _infer_shape(a: array, dims: list[int]) -> tuple[int, ...]:
    size = a.size
    infer = -1
    known = 1
    for i, d in enumerate(dims):
        if d == -1:
            if infer >= 0:
                raise ValueError("[reshape] Reshape can only infer one dimension.")
            infer = i
        else:
            known *= d
    if infer >= 0:
        if known == 0:
            if size == 0 and len(dims) == 1:
                dims[infer] = 0
            else:
                raise ValueError("[reshape] Cannot infer the shape of an empty array")
        else:
            dims[infer] = size // known
    total = 1
    for d in dims:
        total *= d
    if total != size or any(d < 0 for d in dims):
        raise ValueError(f"[reshape] Cannot reshape array of size {size} into shape "
                         f"{fmt_shape(dims)}.")
    return tuple(dims)


def flatten(a: array, /, start_axis: int = 0, end_axis: int = -1, *,
            stream: Any = None) -> array:
    """Flatten the axes start_axis..end_axis (inclusive) into one."""
    a = require_array(a, "flatten")
    start_axis = _int(start_axis, "start_axis", "flatten")
    end_axis = _int(end_axis, "end_axis", "flatten")
    ndim = a.ndim
    if ndim == 0:
        return _reshape_node(a, (1,), stream)
    start = start_axis + ndim if start_axis < 0 else start_axis
    end = end_axis + ndim if end_axis < 0 else end_axis
    start = max(0, start)
    end = min(ndim - 1, end)
    if end < start:
        raise ValueError("[flatten] start_axis must be less than or equal to end_axis")
    if start >= ndim:
        raise AxisError(f"[flatten] Invalid start_axis {start_axis} for array with {ndim} "
                        "dimensions.")
    if end < 0:
        raise AxisError(f"[flatten] Invalid end_axis {end_axis} for array with {ndim} "
                        "dimensions.")
    if start == end:
        return fresh(a, stream)
    n = 1
    for e in a._shape[start:end + 1]:
        n *= e
    return _reshape_node(a, a._shape[:start] + (n,) + a._shape[end + 1:], stream)


def unflatten(a: array, /, axis: int, shape: Sequence[int], *, stream: Any = None) -> array:
    """Split axis ``axis`` into ``shape`` (one entry may be -1)."""
    a = require_array(a, "unflatten")
    dims = list(shape_arg(shape, "unflatten", allow_int=False))
    if not dims:
        raise ValueError("[unflatten] Shape to unflatten to cannot be empty.")
    ndim = a.ndim
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim:
        raise AxisError(f"[unflatten] Invalid axes {ax} for array with {ndim} dimensions.")
    size = 1
    infer = -1
    for i, d in enumerate(dims):
        if d == -1:
            if infer >= 0:
                raise ValueError("[Unflatten] Can only infer one dimension.")
            infer = i
        else:
            size *= d
    if infer >= 0:
        dims[infer] = a._shape[ax] // size if size else 0
        size *= dims[infer]
    if size != a._shape[ax] or any(d < 0 for d in dims):
        raise ValueError(f"[Unflatten] Cannot unflatten axis {axis} with size {a._shape[ax]} "
                         f"into shape {fmt_shape(dims)}.")
    if len(dims) == 1:
        return fresh(a, stream)
    return _reshape_node(a, a._shape[:ax] + tuple(dims) + a._shape[ax + 1:], stream)


def _drop_insert_spec(in_shape: tuple[int, ...], keep: Sequence[int],
                      out_shape: tuple[int, ...], positions: Sequence[int]) -> ViewSpec:
    """A view whose output dims at ``positions`` are the input dims ``keep`` (others size 1)."""
    terms: list[tuple] = [()] * len(out_shape)
    for pos, d in zip(positions, keep):
        terms[pos] = ((d, 1),)
    return ViewSpec(out_shape, (0,) * len(in_shape), tuple(terms))


def squeeze(a: array, /, axis: int | Sequence[int] | None = None, *,
            stream: Any = None) -> array:
    """Remove size-1 axes (all of them, or those named)."""
    a = require_array(a, "squeeze")
    ndim = a.ndim
    shape = a._shape
    if axis is None:
        axes = [i for i, e in enumerate(shape) if e == 1]
    elif isinstance(axis, (list, tuple)):
        raw = int_list(axis, "axis", "squeeze")
        if not raw:
            return fresh(a, stream)
        # MLX's order: the axes sorted, each checked for range then size, duplicates last
        axes = []
        for x in sorted(raw, key=lambda v: v + ndim if -ndim <= v < 0 else v):
            axes.append(_squeezable(check_axis(x, ndim, "squeeze"), shape))
        if len(set(axes)) != len(axes):
            raise ValueError("[squeeze] Received duplicate axes.")
    else:
        axes = [_squeezable(check_axis(_int(axis, "axis", "squeeze"), ndim, "squeeze"), shape)]
    if not axes:
        return fresh(a, stream)
    keep = [d for d in range(ndim) if d not in axes]
    out = tuple(shape[d] for d in keep)
    return view(a, _drop_insert_spec(shape, keep, out, range(len(keep))), "squeeze", stream)


def _squeezable(axis: int, shape: tuple[int, ...]) -> int:
    if shape[axis] != 1:
        raise ValueError(f"[squeeze] Cannot squeeze axis {axis} with size {shape[axis]} which is "
                         "not equal to 1.")
    return axis


def expand_dims(a: array, /, axis: int | Sequence[int], *, stream: Any = None) -> array:
    """Insert size-1 axes at the given positions of the output."""
    a = require_array(a, "expand_dims")
    if isinstance(axis, (list, tuple)):
        raw = int_list(axis, "axis", "expand_dims")
        if not raw:
            return fresh(a, stream)
        if len(set(raw)) != len(raw):
            raise ValueError("[expand_dims] Received duplicate axes.")
    else:
        raw = [_int(axis, "axis", "expand_dims")]
    out_ndim = a.ndim + len(raw)
    if len({x + out_ndim if x < 0 else x for x in raw}) != len(raw):
        raise ValueError("[expand_dims] Received duplicate axes.")
    axes = set()
    for x in raw:
        if not -out_ndim <= x < out_ndim:
            raise AxisError(f"[expand_dims] Axis {x} is out of bounds for array with {out_ndim} "
                            "dimensions.")
        axes.add(x + out_ndim if x < 0 else x)
    positions = [p for p in range(out_ndim) if p not in axes]
    out = [1] * out_ndim
    for p, e in zip(positions, a._shape):
        out[p] = e
    return view(a, _drop_insert_spec(a._shape, range(a.ndim), tuple(out), positions),
                "expand_dims", stream)


#: Permutation views by (input shape, permutation): models transpose the same weights and
#: activations every step, and a spec's stride arithmetic is memoised (ViewSpec.apply).
_permute_specs: dict[tuple, ViewSpec] = {}
_REVERSED = tuple(tuple(range(n - 1, -1, -1)) for n in range(8))


def _permute(a: array, perm: Sequence[int], stream: Any, name: str = "transpose") -> array:
    shape = a._shape
    perm = tuple(perm)
    key = (shape, perm)
    spec = _permute_specs.get(key)
    if spec is None:
        spec = ViewSpec(tuple([shape[p] for p in perm]), (0,) * len(shape),
                        tuple([((p, 1),) for p in perm]))
        if len(_permute_specs) >= 4096:
            _permute_specs.clear()
        _permute_specs[key] = spec
    return view_on(a, spec, name, dev.resolve_stream(stream))


def transpose(a: array, /, axes: Sequence[int] | None = None, *, stream: Any = None) -> array:
    """Permute the axes (reverse them when ``axes`` is None): a view."""
    a = require_array(a, "transpose")
    ndim = len(a._shape)
    if axes is None:
        return _permute(a, _REVERSED[ndim] if ndim < 8 else range(ndim - 1, -1, -1), stream)
    perm = [x + ndim if x < 0 else x for x in int_list(axes, "axes", "transpose")]
    if len(perm) != ndim:
        raise ValueError(f"[transpose] Received {len(perm)} axes for array with {ndim} "
                         "dimensions.")
    seen = [False] * ndim
    for x in perm:
        if not 0 <= x < ndim:
            raise AxisError(f"[transpose] Invalid axis ({x}) for array with {ndim} dimensions.")
        if seen[x]:
            raise ValueError("[transpose] Repeat axes not allowed.")
        seen[x] = True
    return _permute(a, perm, stream)


def permute_dims(a: array, /, axes: Sequence[int] | None = None, *,
                 stream: Any = None) -> array:
    """Same as transpose."""
    return transpose(a, axes, stream=stream)


def _axis_or_raise(ax: int, ndim: int, fn: str) -> int:
    if not -ndim <= ax < ndim:
        raise AxisError(f"[{fn}] Invalid axis {ax} for array with {ndim} dimensions.")
    return ax + ndim if ax < 0 else ax


def swapaxes(a: array, /, axis1: int, axis2: int, *, stream: Any = None) -> array:
    a = require_array(a, "swapaxes")
    i = _axis_or_raise(_int(axis1, "axis1", "swapaxes"), a.ndim, "swapaxes")
    j = _axis_or_raise(_int(axis2, "axis2", "swapaxes"), a.ndim, "swapaxes")
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _permute(a, perm, stream)


def moveaxis(a: array, /, source: int, destination: int, *, stream: Any = None) -> array:
    a = require_array(a, "moveaxis")
    s = _axis_or_raise(_int(source, "source", "moveaxis"), a.ndim, "moveaxis")
    d = _axis_or_raise(_int(destination, "destination", "moveaxis"), a.ndim, "moveaxis")
    if s == d:
        return fresh(a, stream)
    perm = list(range(a.ndim))
    perm.pop(s)
    perm.insert(d, s)
    return _permute(a, perm, stream)


def matrix_transpose(a: array, /, *, stream: Any = None) -> array:
    """Swap the last two axes."""
    a = require_array(a, "matrix_transpose")
    if a.ndim < 2:
        raise ValueError("[matrix_transpose] Input array must have at least 2 dimensions.")
    perm = list(range(a.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _permute(a, perm, stream)


# ----------------------------------------------------------------------------------------------
# Broadcasting


def broadcast_spec(in_shape: tuple[int, ...], shape: tuple[int, ...]) -> ViewSpec:
    lead = len(shape) - len(in_shape)
    terms: list[tuple] = [()] * lead
    for d, (e, t) in enumerate(zip(in_shape, shape[lead:])):
        terms.append(() if (e == 1 and t != 1) else ((d, 1),))
    return ViewSpec(shape, (0,) * len(in_shape), tuple(terms))


def broadcast_view(a: array, shape: tuple[int, ...], stream: Any) -> array:
    """``a`` viewed with ``shape`` (already known to be a valid broadcast)."""
    if a._shape == shape:
        return a
    return view(a, broadcast_spec(a._shape, shape), "broadcast", stream)


def broadcast_to(a: Any, /, shape: Sequence[int], *, stream: Any = None) -> array:
    """``a`` broadcast to ``shape``: a view with stride 0 along the broadcast axes."""
    if isinstance(a, (list, tuple)):  # MLX's ``scalar | array`` converts no sequences
        raise ValueError(f"Invalid type {type(a).__name__} received in array initialization.")
    a = as_array(a)
    shape = shape_arg(shape, "broadcast_to", allow_int=False)
    if a._shape == shape:
        return fresh(a, stream)
    if any(e < 0 for e in shape):
        raise ValueError("[broadcast_to] Negative dimensions not allowed.")
    out = _broadcast2(a._shape, shape)
    if out != shape:
        raise ValueError(f"Cannot broadcast array of shape {fmt_shape(a._shape)} into shape "
                         f"{fmt_shape(shape)}.")
    check_size(shape, a._dtype, "broadcast_to")
    return broadcast_view(a, shape, stream)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape all of ``shapes`` broadcast to (ValueError naming the two that do not)."""
    if not shapes:
        raise ValueError("[broadcast_shapes] Must provide at least one shape.")
    out = None
    for s in shapes:
        if not isinstance(s, (list, tuple)):
            raise _bad_cast("broadcast_shapes", s)
        s = tuple(int_list(s, "shape", "broadcast_shapes"))
        out = s if out is None else _broadcast2(out, s)
    return out


def broadcast_arrays(*arrays: array, stream: Any = None) -> list[array]:
    """The arrays broadcast against each other (views)."""
    for x in arrays:
        if not isinstance(x, array):
            raise _bad_cast("broadcast_arrays", x)
    if len(arrays) <= 1:
        return [fresh(x, stream) for x in arrays]
    shape = arrays[0]._shape
    for x in arrays[1:]:
        shape = _broadcast2(shape, x._shape)
    return [fresh(x, stream) if x._shape == shape else broadcast_view(x, shape, stream)
            for x in arrays]


# ----------------------------------------------------------------------------------------------
# Joining and splitting


_JOIN_SIG = ("{fn}(arrays: list[array], axis: int | None = 0, *, stream: StreamOrDevice = None)"
             " -> array")


def _array_list(arrays: Any, fn: str, axis: Any) -> list[array]:
    """The arrays of concatenate/stack as MLX's bindings read them: a list or tuple of arrays,
    or an array of rank >= 1 (a sequence of its rows, as nanobind converts it)."""
    if isinstance(arrays, array):
        if arrays.ndim:
            return list(arrays)
    elif isinstance(arrays, (list, tuple)) and all(isinstance(x, array) for x in arrays):
        return list(arrays)
    invoked = dt._type_name(arrays)
    if not (type(axis) is int and axis == 0):  # as users pass it: axis=...
        invoked += f", kwargs = {{ axis: {dt._type_name(axis)} }}"
    raise argument_error(fn, f"{fn}(): incompatible function arguments. The following argument "
                         f"types are supported:\n    1. {_JOIN_SIG.format(fn=fn)}\n\nInvoked "
                         f"with types: {invoked}")


def _result_dtype(arrays: Sequence[array]) -> dt.Dtype:
    dtype = arrays[0]._dtype
    for x in arrays[1:]:
        dtype = dt.promote_types(dtype, x._dtype)
    return dtype


def _slab(out_shape: tuple[int, ...], axis: int, start: int, extent: int,
          drop_axis: bool = False) -> P.Region:
    """The region of a contiguous ``out_shape`` array at [start, start+extent) along axis
    (or at index ``start`` with that axis dropped)."""
    strides = contiguous_strides(out_shape)
    offset = start * strides[axis]
    if drop_axis:
        return (offset, out_shape[:axis] + out_shape[axis + 1:],
                strides[:axis] + strides[axis + 1:])
    return (offset, out_shape[:axis] + (extent,) + out_shape[axis + 1:], strides)


def concatenate(arrays: list[array], axis: int | None = 0, *, stream: Any = None) -> array:
    """Join arrays along an existing axis (axis None: flattened), promoting their dtypes."""
    arrays = _array_list(arrays, "concatenate", axis)
    if not arrays:
        raise ValueError("[concatenate] No arrays provided for concatenation")
    if axis is None:
        arrays = [flatten(x, stream=stream) for x in arrays]
        axis = 0
    axis = _int(axis, "axis", "concatenate")
    if len(arrays) == 1:
        return fresh(arrays[0], stream)
    ndim = arrays[0].ndim
    ax = check_axis(axis, ndim, "concatenate")
    shape = list(arrays[0]._shape)
    shape[ax] = 0
    for x in arrays:
        if x.ndim != ndim:
            raise ValueError("[concatenate] All the input arrays must have the same number of "
                             f"dimensions. However, got arrays with dimensions {ndim} and "
                             f"{x.ndim}.")
        for i in range(ndim):
            if i != ax and x._shape[i] != shape[i]:
                shapes = ", ".join(fmt_shape(y._shape) for y in arrays)
                raise ValueError("[concatenate] All the input array dimensions must match "
                                 "exactly except for the concatenation axis. However, the "
                                 f"provided shapes are {shapes}, and the concatenation axis is "
                                 f"{axis}.")
        shape[ax] += x._shape[ax]
    out_shape = tuple(shape)
    dtype = _result_dtype(arrays)
    check_size(out_shape, dtype, "concatenate")
    blocks = []
    start = 0
    for i, x in enumerate(arrays):
        blocks.append((i, None, _slab(out_shape, ax, start, x._shape[ax])))
        start += x._shape[ax]
    return make(P.Assemble("concatenate", None, blocks), tuple(arrays), out_shape, dtype,
                dev.resolve_stream(stream))


def concat(arrays: list[array], axis: int | None = 0, *, stream: Any = None) -> array:
    """Same as concatenate."""
    return concatenate(arrays, axis, stream=stream)


def stack(arrays: list[array], axis: int | None = 0, *, stream: Any = None) -> array:
    """Join arrays of one shape along a new axis."""
    arrays = _array_list(arrays, "stack", axis)
    if not arrays:
        raise ValueError("[stack] No arrays provided for stacking")
    shape = arrays[0]._shape
    if any(x._shape != shape for x in arrays):
        raise ValueError("[stack] All arrays must have the same shape")
    ax = check_axis(0 if axis is None else _int(axis, "axis", "stack"), len(shape) + 1, "stack")
    out_shape = shape[:ax] + (len(arrays),) + shape[ax:]
    dtype = _result_dtype(arrays)
    check_size(out_shape, dtype, "stack")
    blocks = [(i, None, _slab(out_shape, ax, i, 1, drop_axis=True))
              for i in range(len(arrays))]
    return make(P.Assemble("stack", None, blocks), tuple(arrays), out_shape, dtype,
                dev.resolve_stream(stream))


def _select_spec(shape: tuple[int, ...], axis: int, index: int) -> ViewSpec:
    off = [0] * len(shape)
    off[axis] = index
    keep = [d for d in range(len(shape)) if d != axis]
    return ViewSpec(tuple(shape[d] for d in keep), tuple(off), tuple(((d, 1),) for d in keep))


def unstack(x: array, /, *, axis: int = 0, stream: Any = None) -> tuple[array, ...]:
    """The slices of ``x`` along ``axis`` (views), as a tuple."""
    x = require_array(x, "unstack")
    ax = check_axis(_int(axis, "axis", "unstack"), x.ndim, "unstack")
    n = x._shape[ax]
    if n == 0:
        return ()
    specs = [_select_spec(x._shape, ax, i) for i in range(n)]
    outs = make_multi(P.Split(specs), (x,), [(s.shape, x._dtype) for s in specs],
                      dev.resolve_stream(stream))
    return tuple(outs)


def _range_spec(shape: tuple[int, ...], axis: int, start: int, stop: int) -> ViewSpec:
    out = list(shape)
    out[axis] = stop - start
    off = [0] * len(shape)
    off[axis] = start if stop > start else 0
    return ViewSpec(tuple(out), tuple(off), tuple(((d, 1),) for d in range(len(shape))))


def split(a: array, /, indices_or_sections: int | Sequence[int], axis: int = 0, *,
          stream: Any = None) -> list[array]:
    """Split into equal sections (an int) or at indices (a sequence): views."""
    a = require_array(a, "split")
    if isinstance(indices_or_sections, (list, tuple)):
        indices = int_list(indices_or_sections, "indices_or_sections", "split")
        ax = check_axis(_int(axis, "axis", "split"), a.ndim, "split")
        n = a._shape[ax]
        bounds = []
        prev = 0
        for idx in indices + [n]:
            stop = max(0, min(n, idx + n if idx < 0 else idx))
            start = min(prev, n)
            bounds.append((start, max(start, stop)))
            prev = stop
    else:
        sections = _int(indices_or_sections, "indices_or_sections", "split")
        if sections <= 0:
            raise ValueError(f"[split] num_splits must be positive and non-zero but got "
                             f"{sections}.")
        ax = check_axis(_int(axis, "axis", "split"), a.ndim, "split")
        n = a._shape[ax]
        if n % sections:
            raise ValueError("Array split does not result in sub arrays with equal size: "
                             f"attempting {sections} splits along axis {axis} for shape "
                             f"{fmt_shape(a._shape)}.")
        step = n // sections
        bounds = [(i * step, (i + 1) * step) for i in range(sections)]
    if len(bounds) == 1 and bounds[0] == (0, a._shape[ax]):
        return [fresh(a, stream)]
    specs = [_range_spec(a._shape, ax, s, e) for s, e in bounds]
    return make_multi(P.Split(specs), (a,), [(s.shape, a._dtype) for s in specs],
                      dev.resolve_stream(stream))


def _atleast(arys: tuple, nd: int, fn: str, stream: Any) -> array | list[array]:
    outs = []
    for x in arys:
        if not isinstance(x, array):
            raise _bad_cast(fn, x)
        if x.ndim >= nd:
            outs.append(fresh(x, stream))
            continue
        s = x._shape
        if nd == 1:
            shape = (1,)
        elif nd == 2:
            shape = (1,) * (2 - len(s)) + s
        else:
            shape = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)]
        outs.append(_reshape_node(x, shape, stream))
    if len(outs) == 1:
        return outs[0]
    return outs


def atleast_1d(*arys: array, stream: Any = None) -> array | list[array]:
    return _atleast(arys, 1, "atleast_1d", stream)


def atleast_2d(*arys: array, stream: Any = None) -> array | list[array]:
    return _atleast(arys, 2, "atleast_2d", stream)


def atleast_3d(*arys: array, stream: Any = None) -> array | list[array]:
    return _atleast(arys, 3, "atleast_3d", stream)


# ----------------------------------------------------------------------------------------------
# pad, flip, roll


def _pad_pairs(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    bad = TypeError(
        "pad(): incompatible function arguments. The following argument types are supported:\n"
        "    1. pad(a: array, pad_width: int | tuple[int] | tuple[int, int] | "
        "list[tuple[int, int]], mode: Literal['constant', 'edge', 'reflect', 'symmetric'] = "
        "'constant', constant_values: scalar | array = 0, *, stream: StreamOrDevice = None) -> "
        f"array\n\nInvoked with types: mlx.core.array, {type(pad_width).__name__}")

    def is_int(v: Any) -> bool:
        return isinstance(v, (int, np.integer))

    if is_int(pad_width):
        w = int(pad_width)
        return [(w, w)] * ndim
    if not isinstance(pad_width, (list, tuple)):
        raise bad
    if not pad_width:
        return []
    if all(is_int(v) for v in pad_width):
        if len(pad_width) == 1:
            return [(int(pad_width[0]),) * 2] * ndim
        if len(pad_width) == 2:
            return [(int(pad_width[0]), int(pad_width[1]))] * ndim
        raise bad
    pairs = []
    for p in pad_width:
        if not isinstance(p, (list, tuple)) or len(p) != 2 or not all(is_int(v) for v in p):
            raise bad
        pairs.append((int(p[0]), int(p[1])))
    if len(pairs) == 1:
        return pairs * ndim
    return pairs


def _pad_map(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source index of every output position along one padded axis (numpy's pad rules)."""
    i = np.arange(-lo, n + hi, dtype=np.int64)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(i)
        period = 2 * (n - 1)
        j = np.mod(i, period)
        return np.where(j < n, j, period - j)
    period = 2 * n  # symmetric
    j = np.mod(i, period)
    return np.where(j < n, j, period - 1 - j)


def pad(a: array, pad_width: Any, mode: str = "constant", constant_values: Any = 0, *,
        stream: Any = None) -> array:
    """Pad with a constant, or the edge values, or a reflection (with or without the edge)."""
    a = require_array(a, "pad")
    ndim = a.ndim
    pairs = _pad_pairs(pad_width, ndim)
    if len(pairs) != ndim:
        raise ValueError(f"Invalid number of padding sizes passed to pad with axes of size "
                         f"{ndim}")
    for i, (lo, hi) in enumerate(pairs):
        if lo < 0:
            raise ValueError(f"Invalid low padding size ({lo}) passed to pad for axis {i}. "
                             "Padding sizes must be non-negative")
        if hi < 0:
            raise ValueError(f"Invalid high padding size ({hi}) passed to pad for axis {i}. "
                             "Padding sizes must be non-negative")
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"Invalid padding mode ({mode}) passed to pad")
    if ndim == 0 or all(p == (0, 0) for p in pairs):
        return fresh(a, stream)
    shape = a._shape
    out_shape = tuple(e + lo + hi for e, (lo, hi) in zip(shape, pairs))
    check_size(out_shape, a._dtype, "pad")
    s = dev.resolve_stream(stream)
    if mode == "constant":
        return _constant_pad(a, pairs, out_shape, constant_values, s)
    axes = [d for d, p in enumerate(pairs) if p != (0, 0)]
    for d in axes:
        if shape[d] == 0:
            if mode == "edge":  # MLX: an edge pad of an empty axis is zeros
                from .creation import zeros

                return zeros(out_shape, a._dtype, stream=s)
            raise ValueError(f"[pad] Cannot pad empty axis {d} using mode '{mode}'.")
    out = a
    for i in range(0, len(axes), 8):  # a gather takes up to 8 index maps
        group = axes[i:i + 8]
        maps = [_pad_map(shape[d], *pairs[d], mode) for d in group]
        new_shape = list(out._shape)
        for d, m in zip(group, maps):
            new_shape[d] = len(m)
        out = make(P.GatherMaps(group, maps), (out,), tuple(new_shape), a._dtype, s)
    return out


def _constant_pad(a: array, pairs: list[tuple[int, int]], out_shape: tuple[int, ...],
                  value: Any, s: Any) -> array:
    strides = contiguous_strides(out_shape)
    ndim = len(out_shape)
    inputs = [a]
    if isinstance(value, array):
        inputs.append(value)
        source: tuple = ("input", 1)
    else:
        if isinstance(value, (bool, int, float, complex, np.generic)):
            if type(value) is int:  # MLX refuses ints the array's integer type cannot hold
                dt._int_scalar_result(a._dtype, value)
            source = ("const", value)
        else:
            inputs.append(as_array(value))
            source = ("input", 1)
    interior = (sum(lo * st for (lo, _), st in zip(pairs, strides)), a._shape, strides)
    fills = []
    # The pad region, partitioned: for axis d, the low/high slabs with axes < d interior.
    for d in range(ndim):
        lo, hi = pairs[d]
        base = 0
        shape = list(out_shape)
        for e in range(d):
            base += pairs[e][0] * strides[e]
            shape[e] = a._shape[e]
        for start, extent in ((0, lo), (out_shape[d] - hi, hi)):
            if extent:
                shape_d = list(shape)
                shape_d[d] = extent
                fills.append((base + start * strides[d], tuple(shape_d), strides))
    prim = P.Assemble("pad", None, [(0, None, interior)], [(f, source) for f in fills])
    return make(prim, tuple(inputs), out_shape, a._dtype, s)


def _axes_arg(axis: Any, ndim: int, fn: str) -> list[int]:
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (list, tuple)):
        return [check_axis(x, ndim, fn) for x in int_list(axis, "axis", fn)]
    return [check_axis(_int(axis, "axis", fn), ndim, fn)]


def flip(a: array, /, axis: int | Sequence[int] | None = None, *, stream: Any = None) -> array:
    """Reverse the order of elements along the given axes (all by default): a view."""
    a = require_array(a, "flip")
    axes = set(_axes_arg(axis, a.ndim, "flip"))
    if not axes:
        return fresh(a, stream)
    shape = a._shape
    off = tuple((shape[d] - 1 if (d in axes and shape[d]) else 0) for d in range(len(shape)))
    terms = tuple(((d, -1 if d in axes else 1),) for d in range(len(shape)))
    return view(a, ViewSpec(shape, off, terms), "flip", stream)


def roll(a: array, shift: int | Sequence[int], axis: int | Sequence[int] | None = None, *,
         stream: Any = None) -> array:
    """Shift elements along axes, wrapping around (axis None: the flattened array)."""
    a = require_array(a, "roll")
    shifts = int_list(shift, "shift", "roll") if isinstance(shift, (list, tuple)) else \
        [_int(shift, "shift", "roll")]
    if axis is None:
        if a.ndim == 0:
            return fresh(a, stream)
        flat = flatten(a, stream=stream)
        return _reshape_node(roll(flat, sum(shifts), 0, stream=stream), a._shape, stream)
    ndim = a.ndim
    if isinstance(axis, (list, tuple)):
        axes = [_axis_or_raise(x, ndim, "roll") for x in int_list(axis, "axis", "roll")]
        if isinstance(shift, (list, tuple)):
            if len(shifts) < len(axes):
                raise ValueError(f"[roll] At least one shift value per axis is required, "
                                 f"{len(shifts)} provided for {len(axes)} axes.")
            pairs = list(zip(axes, shifts))
        else:
            pairs = [(x, shifts[0]) for x in axes]
    else:
        pairs = [(_axis_or_raise(_int(axis, "axis", "roll"), ndim, "roll"), sum(shifts))]
    total: dict[int, int] = {}
    for ax, sh in pairs:
        total[ax] = total.get(ax, 0) + sh
    shape = a._shape
    rolled = {ax: sh % shape[ax] for ax, sh in total.items() if shape[ax] and sh % shape[ax]}
    if not rolled:
        return fresh(a, stream)
    strides = contiguous_strides(shape)
    blocks = []
    items = sorted(rolled.items())
    for mask in range(1 << len(items)):
        src_off = [0] * ndim
        dst_off = 0
        out = list(shape)
        for bit, (ax, sh) in enumerate(items):
            n = shape[ax]
            if mask >> bit & 1:   # the tail [n - sh, n) moves to the front
                src_off[ax] = n - sh
                out[ax] = sh
            else:                 # the head [0, n - sh) moves to [sh, n)
                dst_off += sh * strides[ax]
                out[ax] = n - sh
        spec = ViewSpec(tuple(out), tuple(src_off), tuple(((d, 1),) for d in range(ndim)))
        blocks.append((0, spec, (dst_off, tuple(out), strides)))
    return make(P.Assemble("roll", None, blocks), (a,), shape, a._dtype,
                dev.resolve_stream(stream))


# ----------------------------------------------------------------------------------------------
# as_strided, contiguous


def as_strided(a: array, /, shape: Sequence[int] | None = None,
               strides: Sequence[int] | None = None, offset: int = 0, *,
               stream: Any = None) -> array:
    """A view of the row-major elements of ``a`` with the given shape, strides (in elements)
    and offset. Unlike MLX, a view reaching outside the array raises ValueError."""
    a = require_array(a, "as_strided")
    shape_t = a._shape if shape is None else shape_arg(shape, "as_strided", allow_int=False)
    if any(e < 0 for e in shape_t):
        raise ValueError("[as_strided] Negative dimensions not allowed.")
    strides_t = contiguous_strides(shape_t) if strides is None else tuple(
        int_list(strides, "strides", "as_strided"))
    if len(strides_t) != len(shape_t):
        raise ValueError(f"[as_strided] Got {len(strides_t)} strides for a shape with "
                         f"{len(shape_t)} dimensions.")
    offset = _int(offset, "offset", "as_strided")
    if 0 not in shape_t:
        lo = offset + sum(min(0, s * (e - 1)) for s, e in zip(strides_t, shape_t))
        hi = offset + sum(max(0, s * (e - 1)) for s, e in zip(strides_t, shape_t))
        if lo < 0 or hi >= a.size:
            raise ValueError(f"[as_strided] The view (shape {fmt_shape(shape_t)}, strides "
                             f"{fmt_shape(strides_t)}, offset {offset}) reaches elements "
                             f"[{lo}, {hi}], outside the array's {a.size} elements.")
    return make(P.AsStrided(tuple(shape_t), strides_t, offset), (a,), tuple(shape_t), a._dtype,
                dev.resolve_stream(stream))


def contiguous(a: array, /, allow_col_major: bool = False, *, stream: Any = None) -> array:
    """``a`` in a row-major (or, if allowed, column-major) layout: a copy only when needed."""
    a = require_array(a, "contiguous")
    return make(P.Contiguous(bool(allow_col_major)), (a,), a._shape, a._dtype,
                dev.resolve_stream(stream))


# ----------------------------------------------------------------------------------------------
# diag, diagonal, trace, kron


def _diagonal_spec(shape: tuple[int, ...], offset: int, ax1: int, ax2: int) -> ViewSpec:
    n1, n2 = shape[ax1], shape[ax2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        r0, c0 = 0, offset
    else:
        length = max(0, min(n1 + offset, n2))
        r0, c0 = -offset, 0
    keep = [d for d in range(len(shape)) if d not in (ax1, ax2)]
    off = [0] * len(shape)
    if length:
        off[ax1], off[ax2] = r0, c0
    out = tuple(shape[d] for d in keep) + (length,)
    return ViewSpec(out, tuple(off), tuple(((d, 1),) for d in keep) + (((ax1, 1), (ax2, 1)),))


def _diagonal_axes(a: array, axis1: int, axis2: int, fn: str) -> tuple[int, int]:
    ndim = a.ndim
    if ndim < 2:
        raise ValueError(f"[{fn}] Array must have at least two dimensions, but got {ndim} "
                         "dimensions.")
    ax1 = axis1 + ndim if axis1 < 0 else axis1
    ax2 = axis2 + ndim if axis2 < 0 else axis2
    if not 0 <= ax1 < ndim:
        raise AxisError(f"[{fn}] Invalid axis1 {axis1} for array with {ndim} dimensions.")
    if not 0 <= ax2 < ndim:
        raise AxisError(f"[{fn}] Invalid axis2 {axis2} for array with {ndim} dimensions.")
    if ax1 == ax2:
        raise ValueError(f"[{fn}] axis1 and axis2 cannot be the same axis")
    return ax1, ax2


def diagonal(a: array, offset: int = 0, axis1: int = 0, axis2: int = 1,
             stream: Any = None) -> array:
    """The diagonal of the (axis1, axis2) planes, as the last axis: a view."""
    a = require_array(a, "diagonal")
    ax1, ax2 = _diagonal_axes(a, _int(axis1, "axis1", "diagonal"),
                              _int(axis2, "axis2", "diagonal"), "diagonal")
    return view(a, _diagonal_spec(a._shape, _int(offset, "offset", "diagonal"), ax1, ax2),
                "diagonal", stream)


def diag(a: array, /, k: int = 0, *, stream: Any = None) -> array:
    """A 1-D array's diagonal matrix, or a 2-D array's k-th diagonal."""
    a = require_array(a, "diag")
    k = _int(k, "k", "diag")
    if a.ndim == 1:
        n = a._shape[0] + abs(k)
        out_shape = (n, n)
        start = k if k >= 0 else -k * n
        region = (start, (a._shape[0],), (n + 1,))
        return make(P.Assemble("diag", 0, [(0, None, region)]), (a,), out_shape, a._dtype,
                    dev.resolve_stream(stream))
    if a.ndim == 2:
        return view(a, _diagonal_spec(a._shape, k, 0, 1), "diag", stream)
    raise ValueError(f"[diag] array must be 1-D or 2-D, got array with {a.ndim} dimensions.")


def trace(a: array, /, offset: int = 0, axis1: int = 0, axis2: int = 1,
          dtype: dt.Dtype | None = None, *, stream: Any = None) -> array:
    """The sum along a diagonal (small integers sum into int32/uint32, as MLX's sum)."""
    from ..backend.cuda.registry import trace_dtype

    a = require_array(a, "trace")
    ax1, ax2 = _diagonal_axes(a, _int(axis1, "axis1", "trace"), _int(axis2, "axis2", "trace"),
                              "trace")
    out_dtype = dt.by_name[trace_dtype(a._dtype.name)] if dtype is None else dt.to_dtype(
        dtype, "trace")
    spec = _diagonal_spec(a._shape, _int(offset, "offset", "trace"), ax1, ax2)
    return make(P.Trace(spec), (a,), spec.shape[:-1], out_dtype, dev.resolve_stream(stream))


def kron(a: array, b: array, *, stream: Any = None) -> array:
    """The Kronecker product (every product a[i] * b[j], blocked)."""
    from .elementwise import multiply

    a = require_array(a, "kron")
    b = require_array(b, "kron", "b")
    if a.size == 0 or b.size == 0:
        raise ValueError("[kron] Input arrays cannot be empty.")
    ndim = max(a.ndim, b.ndim)
    a_shape = [1] * (2 * ndim)
    b_shape = [1] * (2 * ndim)
    out_shape = [1] * ndim
    for i, e in zip(range(ndim - 1, -1, -1), reversed(a._shape)):
        a_shape[2 * i] = e
        out_shape[i] *= e
    for i, e in zip(range(ndim - 1, -1, -1), reversed(b._shape)):
        b_shape[2 * i + 1] = e
        out_shape[i] *= e
    prod = multiply(_reshape_node(a, tuple(a_shape), stream),
                    _reshape_node(b, tuple(b_shape), stream), stream=stream)
    return _reshape_node(prod, tuple(out_shape), stream)


# ----------------------------------------------------------------------------------------------
# slice / slice_update with array start indices


def _index_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """The index dtype the gather kernels read for integer indices of ``dtype``."""
    if dtype.kind in "iu" and (dtype.size < 4 or (dtype.kind == "i" and dtype.size == 4)):
        return dt.int32
    return dt.int64


def _dynamic_inputs(a: array, start: Any, axes: Any, fn: str) -> list[int]:
    if not isinstance(start, array):
        raise TypeError(f"{fn}(): incompatible function arguments: start_indices must be an "
                        f"mlx.core.array, got {type(start).__name__}")
    axes = int_list(axes, "axes", fn)
    ndim = a.ndim
    if start.size > ndim:
        raise ValueError(f"[{fn}] Invalid number of starting positions for array with "
                         f"dimension {ndim}.")
    if start.ndim > 1:
        raise ValueError(f"[{fn}] array of starting indices must be zero or one dimensional but "
                         f"has dimension {start.ndim}.")
    if start.size != len(axes):
        raise ValueError(f"[{fn}] Number of starting indices {start.size} does not match number "
                         f"of axes {len(axes)}.")
    if start._dtype.kind not in "iu":
        raise ValueError(f"[{fn}] Start indices must be integers, got type {start._dtype.name}.")
    out = []
    for ax in axes:
        x = ax + ndim if ax < 0 else ax
        if not 0 <= x < ndim:
            raise AxisError(f"[{fn}] Invalid axis {ax} for array with dimension {ndim}.")
        out.append(x)
    if len(set(out)) != len(out):
        raise ValueError(f"[{fn}] Repeat axes not allowed.")
    return out


def slice(a: array, start_indices: array, axes: Sequence[int], slice_size: Sequence[int], *,
          stream: Any = None) -> array:
    """A slice of ``slice_size`` starting at ``start_indices`` (an array, read on the device)
    along ``axes``. Starts are clamped so the slice stays inside ``a`` (MLX reads out of
    bounds there)."""
    a = require_array(a, "slice")
    axes_n = _dynamic_inputs(a, start_indices, axes, "slice")
    size = tuple(int_list(slice_size, "slice_size", "slice"))
    if len(size) != a.ndim:
        raise ValueError(f"[slice] Invalid slice size for array with {a.ndim} dimensions.")
    if any(e > n for e, n in zip(size, a._shape)):
        raise ValueError(f"[slice] Invalid slice size {fmt_shape(size)} for array with shape "
                         f"{fmt_shape(a._shape)}.")
    if any(e < 0 for e in size):
        raise ValueError(f"[slice] Invalid slice size {fmt_shape(size)}: sizes must be "
                         "non-negative.")
    s = dev.resolve_stream(stream)
    start = astype(start_indices, _index_dtype(start_indices._dtype), s)
    return make(P.DynamicSlice(axes_n), (a, start), size, a._dtype, s)


def slice_update(a: array, update: array, start_indices: array, axes: Sequence[int], *,
                 stream: Any = None) -> array:
    """A copy of ``a`` with ``update`` written at ``start_indices`` (an array) along ``axes``.
    Starts are clamped so the update stays inside ``a``."""
    a = require_array(a, "slice_update")
    update = require_array(update, "slice_update", "update")
    axes_n = _dynamic_inputs(a, start_indices, axes, "slice_update")
    ndim = a.ndim
    if update.ndim > ndim:
        raise ValueError(f"[slice_update] The update has {update.ndim} dimensions, more than "
                         f"the array's {ndim}.")
    diff = ndim - update.ndim
    up = list(a._shape[:diff]) + list(update._shape)
    for d in range(diff, ndim):
        up[d] = min(up[d], a._shape[d])
    for ax in axes_n:
        if ax < diff:
            up[ax] = 1
    up_shape = tuple(up)
    s = dev.resolve_stream(stream)
    upd = astype(update, a._dtype, s)
    bshape = _broadcast2(upd._shape, up_shape)
    if bshape != up_shape:
        raise ValueError(f"Cannot broadcast array of shape {fmt_shape(upd._shape)} into shape "
                         f"{fmt_shape(up_shape)}.")
    upd = broadcast_view(upd, up_shape, s)
    start = astype(start_indices, _index_dtype(start_indices._dtype), s)
    return make(P.DynamicSliceUpdate(axes_n), (a, upd, start), a._shape, a._dtype, s)
