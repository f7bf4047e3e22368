"""``array.__getitem__`` and ``array.__setitem__``: MLX's (numpy's) indexing rules.

Basic indexing (ints, slices with any step, None / ``mx.newaxis``, Ellipsis) is one zero-copy
view. Integer arrays (and lists) gather along their axes with numpy's placement rule (the
broadcast index dimensions replace the indexed axes when every advanced index, ints included,
is adjacent; otherwise they come first), as MLX's ``__getitem__`` does. Boolean arrays are
refused by ``__getitem__`` as in MLX, and accepted alone by ``__setitem__`` (MLX's masked
scatter).

Also ``take``, ``take_along_axis``, ``put_along_axis`` and ``x.at[idx].add/...`` (ArrayAt).

Out of range: a Python int raises IndexError (MLX reads garbage or crashes); in ``a[idx]`` an
index array whose values are on the host (a list, or an array built from host data) is checked
and raises IndexError; other index arrays (lazy or GPU results), and every index of take /
take_along_axis, are not read back: a gather wraps a negative index once and reads 0 for one
still out of range (MLX reads past the buffer), a scatter skips out-of-range positions. A
slice step of 0 raises ValueError (MLX dies with SIGFPE); slice bounds clamp like Python's.

``setitem`` returns the new value of ``a`` (a copy of its old value with the update, MLX arrays
being values); the array class's ``__setitem__`` makes ``a`` take it, while arrays built from ``a``
before the assignment keep its old value (core/array.py ``_overwrite``). Duplicate positions in a
scatter take the last update, as on MLX's CPU.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..graph.primitives import shape as P
from ..graph.primitives.elementwise import cast_numpy
from ..graph.primitives.shape import ViewSpec
from . import device as dev
from ._base import astype, broadcast_shapes as _broadcast2
from ._nanobind import SIGNATURES, argument_error
from .array import array, fresh, from_data, make
from .shape import _index_dtype, _int, broadcast_view, fmt_shape, view, view_on

__all__ = ["newaxis", "take", "take_along_axis", "put_along_axis", "ArrayAt"]

#: ``mx.newaxis``: None, as in numpy.
newaxis = None

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_NONE, _INT, _SLICE, _ARRAY = 0, 1, 2, 3


def _bad_type(top: bool) -> ValueError:
    return ValueError("Cannot index mlx array using the given type." if top else
                      "Cannot index mlx array using the given type yet")


def _as_int(x: Any) -> int | None:
    """x as an index int (Python or numpy integer; not bool), or None if it is not one."""
    if isinstance(x, (bool, np.bool_, np.ndarray, array)):
        return None
    if isinstance(x, int):
        return x
    try:
        return operator.index(x)
    except TypeError:
        return None


def _index_array(x: Any, top: bool) -> array:
    """A list or mx.array index as an integer mx.array (MLX's errors for others)."""
    if isinstance(x, list):
        x = array(x)
    if x._dtype is dt.bool_:
        raise ValueError("boolean indices are not yet supported" if top else
                         "[Gather] Boolean indices not supported.")
    if x._dtype.kind not in "iu":
        raise ValueError("[gather] Got indices with invalid dtype. Indices must be integral.")
    return x


def _slice_int(v: Any) -> int | None:
    if v is None:
        return None
    i = _as_int(v)
    if i is None:
        raise ValueError("Slice indices must be integers or None.")
    if not _I32_MIN <= i <= _I32_MAX:
        raise ValueError("Slice indices must be 32-bit integers.")
    return i


def _slice_params(s: slice, n: int) -> tuple[int, int, int]:
    """(start, step, length) of a slice over an axis of size n, bounds clamped like Python."""
    start, stop, step = _slice_int(s.start), _slice_int(s.stop), _slice_int(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start, stop, step = slice(start, stop, step).indices(n)
    return start, step, len(range(start, stop, step))


def _parse(a: array, index: Any, scatter: bool = False, converted: list | None = None
           ) -> list[tuple[int, Any]]:
    """The index as a list of (kind, value) over a's axes, Nones included, Ellipsis expanded
    and trailing axes filled with full slices. Ints are normalised and bounds-checked; for a
    scatter (``scatter``: ``a[i] = v``, ``a.at[i].add(v)``) an int out of range becomes a 0-d
    index array instead (appended to ``converted``), whose update the scatter drops (as every
    out-of-range one)."""
    top = not isinstance(index, tuple)
    entries = (index,) if top else index
    shape = a._shape
    ndim = len(shape)
    parsed: list[tuple[int, Any]] = []
    ellipsis_at = -1
    count = 0
    for e in entries:
        if e is None:
            parsed.append((_NONE, None))
        elif e is Ellipsis:
            if ellipsis_at >= 0:
                raise ValueError("An index can only have a single ellipsis (...)")
            ellipsis_at = len(parsed)
        elif isinstance(e, slice):
            parsed.append((_SLICE, e))
            count += 1
        elif isinstance(e, (array, list)):
            parsed.append((_ARRAY, _index_array(e, top)))
            count += 1
        else:
            i = _as_int(e)
            if i is None:
                raise _bad_type(top)
            if not _I32_MIN <= i <= _I32_MAX:
                raise ValueError("Slice indices must be 32-bit integers.")
            parsed.append((_INT, i))
            count += 1
    if top and ndim == 0 and count:
        raise ValueError("too many indices for array: array is 0-dimensional")
    if count > ndim:
        raise ValueError(f"Too many indices for array with {ndim} dimensions.")
    fill = [(_SLICE, slice(None))] * (ndim - count)
    if ellipsis_at >= 0:
        parsed[ellipsis_at:ellipsis_at] = fill
    else:
        parsed += fill
    axis = 0
    for k, (kind, value) in enumerate(parsed):
        if kind == _NONE:
            continue
        if kind == _INT:
            n = shape[axis]
            if not -n <= value < n:
                if scatter:
                    oob = from_data(np.array(value, np.int32), dt.int32)
                    if converted is not None:
                        converted.append(oob)
                    parsed[k] = (_ARRAY, oob)
                    axis += 1
                    continue
                raise IndexError(f"index {value} is out of bounds for axis {axis} with size {n}")
            parsed[k] = (_INT, value + n if value < 0 else value)
        axis += 1
    return parsed


#: _basic_spec's results by (shape, index entries, keep_arrays): models slice their KV caches
#: and activations the same way every step. The spec is shared (ViewSpecs are immutable and
#: memoise their stride arithmetic), the origin is a tuple.
_spec_cache: dict[tuple, tuple[ViewSpec, tuple[int, ...]]] = {}


def _spec_key(shape: tuple[int, ...], parsed: list[tuple[int, Any]], keep_arrays: bool
              ) -> tuple | None:
    """_basic_spec's cache key, or None where a slice bound is not a plain int (np.int64, a
    0-d array: computed, or refused, uncached)."""
    entries = []
    for kind, value in parsed:
        if kind == _SLICE:
            bounds = (value.start, value.stop, value.step)
            for b in bounds:
                if b is not None and type(b) is not int:
                    return None
            entries.append((kind, bounds))
        elif kind == _ARRAY:
            entries.append((kind, None))  # an array-indexed axis: only its position matters
        else:
            entries.append((kind, value))
    return (shape, keep_arrays, tuple(entries))


def _basic_spec(shape: tuple[int, ...], parsed: list[tuple[int, Any]], keep_arrays: bool
                ) -> tuple[ViewSpec, tuple[int, ...]]:
    """The view of slices and ints (and Nones unless ``keep_arrays``); with ``keep_arrays``,
    array-indexed axes stay whole and Nones are left out. Also returns, for each output dim,
    the parsed entry it comes from."""
    key = _spec_key(shape, parsed, keep_arrays)
    if key is None:
        return _basic_spec_of(shape, parsed, keep_arrays)
    hit = _spec_cache.get(key)
    if hit is None:
        hit = _basic_spec_of(shape, parsed, keep_arrays)
        if len(_spec_cache) >= 4096:
            _spec_cache.clear()
        _spec_cache[key] = hit
    return hit


def _basic_spec_of(shape: tuple[int, ...], parsed: list[tuple[int, Any]], keep_arrays: bool
                   ) -> tuple[ViewSpec, tuple[int, ...]]:
    off = [0] * len(shape)
    terms: list[tuple] = []
    out: list[int] = []
    origin: list[int] = []
    axis = 0
    for k, (kind, value) in enumerate(parsed):
        if kind == _NONE:
            if not keep_arrays:
                terms.append(())
                out.append(1)
                origin.append(k)
            continue
        if kind == _INT:
            off[axis] = value
        elif kind == _SLICE:
            start, step, length = _slice_params(value, shape[axis])
            if length:
                off[axis] = start
            terms.append(((axis, step),))
            out.append(length)
            origin.append(k)
        else:
            terms.append(((axis, 1),))
            out.append(shape[axis])
            origin.append(k)
        axis += 1
    return ViewSpec(tuple(out), tuple(off), tuple(terms)), tuple(origin)


def _is_identity(spec: ViewSpec, shape: tuple[int, ...]) -> bool:
    return spec.shape == shape and not any(spec.off) and all(
        t == ((d, 1),) for d, t in enumerate(spec.terms))


def _check_host_bounds(idx: array, size: int, axis: int) -> None:
    """IndexError for an out-of-range index when its values are already on the host."""
    data = idx._data
    if isinstance(data, np.ndarray) and data.size:
        lo, hi = int(data.min()), int(data.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")


class _Advanced:
    """The decomposition of an index with integer arrays: a basic view of the source, a gather
    over some of its axes, and the final arrangement of the gathered dims."""

    __slots__ = ("spec", "axes", "arrays", "bshape", "final", "final_shape", "rest")

    def __init__(self, a: array, parsed: list[tuple[int, Any]], check_host: bool = True,
                 dropped: tuple = ()) -> None:
        shape = a._shape
        self.spec, origin = _basic_spec(shape, parsed, keep_arrays=True)
        vshape = self.spec.shape
        arrays = []
        self.axes = []
        for vdim, k in enumerate(origin):
            if parsed[k][0] == _ARRAY:
                self.axes.append(vdim)
                arrays.append(parsed[k][1])
        bshape: tuple[int, ...] = ()
        for x in arrays:
            bshape = _broadcast2(bshape, x._shape)
        self.bshape = bshape
        bsize = 1
        for e in bshape:
            bsize *= e
        for ax, x in zip(self.axes, arrays):
            # (an int out of range in a scatter, ``dropped``, writes nothing instead)
            if vshape[ax] == 0 and bsize and not any(x is d for d in dropped):
                raise IndexError(f"index out of bounds: cannot take from axis {ax} of size 0")
        self.arrays = arrays
        if check_host:
            self.check_host_bounds()
        # Where the broadcast dims go: in place of the advanced entries when they (ints
        # included) are adjacent, else first.
        adv = [k for k, (kind, _) in enumerate(parsed) if kind in (_INT, _ARRAY)]
        adjacent = adv == list(range(adv[0], adv[-1] + 1))
        self.rest = [d for d in range(len(vshape)) if d not in self.axes]
        nb = len(bshape)
        # Gathered dims: B..., then the rest of the view's dims in order. ``final`` lists, per
        # output dim, the gathered dim it is (or -1 for a None).
        rest_of_entry = {origin[d]: i for i, d in enumerate(self.rest)}
        final: list[int] = []
        placed = False
        if not adjacent:
            final += list(range(nb))
            placed = True
        for k, (kind, _) in enumerate(parsed):
            if kind == _NONE:
                final.append(-1)
            elif kind in (_INT, _ARRAY):
                if not placed:
                    final += list(range(nb))
                    placed = True
            else:
                final.append(nb + rest_of_entry[k])
        self.final = final
        gshape = tuple(bshape) + tuple(vshape[d] for d in self.rest)
        self.final_shape = tuple(1 if g < 0 else gshape[g] for g in final)

    def check_host_bounds(self) -> None:
        """IndexError for an index array (already on the host) out of its axis's range."""
        vshape = self.spec.shape
        for ax, x in zip(self.axes, self.arrays):
            _check_host_bounds(x, vshape[ax], ax)

    def gathered_shape(self) -> tuple[int, ...]:
        return tuple(self.bshape) + tuple(self.spec.shape[d] for d in self.rest)

    def identity_final(self) -> bool:
        return self.final == list(range(len(self.gathered_shape())))


def _cast_indices(arrays: list[array], s: Any) -> list[array]:
    dtype = dt.int32
    for x in arrays:
        if _index_dtype(x._dtype) is dt.int64:
            dtype = dt.int64
    return [astype(x, dtype, s) for x in arrays]


# ----------------------------------------------------------------------------------------------
# __getitem__

#: The view terms of ``a[i]`` for each rank (dimensions 1.. kept).
_ROW_TERMS: dict[int, tuple] = {}


def getitem(a: array, index: Any) -> array:
    """``a[index]`` with MLX's rules (see the module docstring)."""
    shape = a._shape
    if type(index) is int and shape:  # fast path: a[i]
        n = shape[0]
        if not -n <= index < n:
            if not _I32_MIN <= index <= _I32_MAX:
                raise ValueError("Slice indices must be 32-bit integers.")
            raise IndexError(f"index {index} is out of bounds for axis 0 with size {n}")
        i = index + n if index < 0 else index
        ndim = len(shape)
        terms = _ROW_TERMS.get(ndim)
        if terms is None:
            terms = _ROW_TERMS[ndim] = tuple(((d, 1),) for d in range(1, ndim))
        spec = ViewSpec(shape[1:], (i,) + (0,) * (ndim - 1), terms)
        return view_on(a, spec, "getitem", dev.resolve_stream(None))
    if index is Ellipsis or (type(index) is tuple and not index):
        return fresh(a)  # a new array object, as in MLX: y = x[...]; y[0] = v leaves x alone
    if not isinstance(index, (tuple, slice, list, array)) and index is not None \
            and _as_int(index) is None:
        raise ValueError("Cannot index mlx array using the given type.")
    parsed = _parse(a, index)
    if not any(kind == _ARRAY for kind, _ in parsed):
        spec, _ = _basic_spec(shape, parsed, keep_arrays=False)
        if _is_identity(spec, shape):
            return fresh(a)
        return view(a, spec, "getitem", None)
    s = dev.resolve_stream(None)
    adv = _Advanced(a, parsed)
    src = a if _is_identity(adv.spec, shape) else view(a, adv.spec, "getitem", s)
    idx = _cast_indices(adv.arrays, s)
    out = make(P.Gather(adv.axes, adv.bshape), (src, *idx), adv.gathered_shape(), a._dtype, s)
    if adv.identity_final():
        return out
    terms = tuple(() if g < 0 else ((g, 1),) for g in adv.final)
    spec = ViewSpec(adv.final_shape, (0,) * out.ndim, terms)
    return view(out, spec, "getitem", s)


# ----------------------------------------------------------------------------------------------
# __setitem__


def _value_array(a: array, value: Any) -> array:
    """The assigned value as an array of a's dtype (MLX's conversion: a scalar is read as
    ``mx.full`` would with a's dtype, then cast; lists are refused as in MLX)."""
    from .creation import _scalar_value
    from ..graph.primitives.shape import _scalar_numpy

    if isinstance(value, array):
        v = value
    elif isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        val, vdtype = _scalar_value(value, a._dtype)
        host = cast_numpy(_scalar_numpy(val, vdtype), a._dtype)
        return from_data(np.asarray(host).reshape(()), a._dtype)
    elif isinstance(value, np.ndarray):
        v = array(value, a._dtype)
    else:
        c = dt.odd_number(value)  # an object with __float__ / __complex__ / __index__
        if c is not None:
            return _value_array(a, c)
        raise ValueError(f"Invalid type {dt._type_name(value)} received in array "
                         "initialization.")
    return v


def _strip_leading_ones(v: array, ndim: int) -> tuple[int, ...]:
    """v's shape without leading size-1 dims beyond ``ndim`` dims (numpy's and MLX's rule)."""
    shape = v._shape
    i = 0
    while len(shape) - i > ndim and shape[i] == 1:
        i += 1
    return shape[i:]


def _fit(v: array, shape: tuple[int, ...], s: Any) -> array:
    """v (a's dtype) broadcast to ``shape`` after dropping extra leading size-1 dims."""
    vs = _strip_leading_ones(v, len(shape))
    if vs != v._shape:
        v = make(P.Reshape(), (v,), vs, v._dtype, s)
    if len(vs) > len(shape) or _broadcast2(vs, shape) != shape:
        raise ValueError(f"[broadcast_shapes] Shapes {fmt_shape(v._shape)} and "
                         f"{fmt_shape(shape)} cannot be broadcast.")
    return broadcast_view(v, shape, s)


def _check_int_update(vshape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """a[i] = v: MLX broadcasts v (leading size-1 dims dropped) to (1, *a.shape[1:]), so a
    mismatch is reported against that shape, with broadcast_to's messages."""
    i = 0
    while i < len(vshape) and vshape[i] == 1:
        i += 1
    vs, target = vshape[i:], (1,) + shape[1:]
    if _broadcast2(vs, target) != target:
        raise ValueError(f"Cannot broadcast array of shape {fmt_shape(vs)} into shape "
                         f"{fmt_shape(target)}.")


def _masked(old: array, mask: array, v: array, s: Any) -> array:
    """a[mask] = v (MLX's masked scatter): the mask must match a's leading dims; v broadcasts
    to one row per masked position, or (MLX) gives its first rows in order."""
    shape = old._shape
    k = mask.ndim
    if mask._shape != shape[:k]:
        raise ValueError("[masked_scatter] The boolean mask should have the same shape as the "
                         "beginning of the indexed array but the mask has shape "
                         f"{fmt_shape(mask._shape)} and the array has shape {fmt_shape(shape)}")
    host = mask._numpy()
    rows = shape[k:]
    if k == 0:
        if not bool(host):
            return old
        return make(P.Copy(), (_fit(v, shape, s),), shape, old._dtype, s)
    positions = np.nonzero(host)
    count = len(positions[0])
    vs = _strip_leading_ones(v, len(rows) + 1)
    if len(vs) == len(rows) + 1 and vs[0] not in (1, count):
        if vs[0] < count:
            raise ValueError(f"[masked_scatter] {vs[0]} values for {count} masked positions.")
        v = make(P.Reshape(), (v,), vs, v._dtype, s) if vs != v._shape else v
        first = ViewSpec((count,) + vs[1:], (0,) * len(vs), tuple(((d, 1),)
                                                                  for d in range(len(vs))))
        v = view(v, first, "getitem", s)
    upd = _fit(v, (count,) + rows, s)
    idx = [from_data(p.astype(np.int64), dt.int64) for p in positions]
    return make(P.Scatter(P.identity_spec(shape), tuple(range(k)), (count,)), (old, upd, *idx),
                shape, old._dtype, s)


def _update_node(old: array, index: Any, value: Any) -> array:
    """The node of ``old`` with ``old[index] = value`` applied."""
    s = dev.resolve_stream(None)
    v = _value_array(old, value)
    if v._dtype is not old._dtype:
        v = astype(v, old._dtype, s)
    shape = old._shape
    mask = None
    if isinstance(index, array) and index._dtype is dt.bool_:
        mask = index
    elif isinstance(index, list):
        candidate = array(index)
        if candidate._dtype is dt.bool_:
            mask = candidate
    elif isinstance(index, (bool, np.bool_)):  # a[True] = v: MLX takes a bare bool as a mask
        mask = array(bool(index))
    if mask is not None:
        return _masked(old, mask, v, s)
    converted: list = []
    if index is Ellipsis or (type(index) is tuple and not index):
        parsed = [(_SLICE, slice(None))] * len(shape)
    else:
        if not isinstance(index, (tuple, slice, list, array)) and index is not None \
                and _as_int(index) is None:
            raise ValueError("Cannot index mlx array using the given type.")
        parsed = _parse(old, index, scatter=True, converted=converted)
    if not any(kind == _ARRAY for kind, _ in parsed):
        spec, _ = _basic_spec(shape, parsed, keep_arrays=True)
        result, origin = _basic_spec(shape, parsed, keep_arrays=False)
        if type(index) is not tuple and parsed and parsed[0][0] == _INT:
            _check_int_update(v._shape, shape)
        upd = _fit(v, result.shape, s)
        if result.shape != spec.shape:  # drop the Nones' size-1 dims
            keep = [j for j, k in enumerate(origin) if parsed[k][0] != _NONE]
            upd = view(upd, ViewSpec(spec.shape, (0,) * upd.ndim, tuple(((j, 1),) for j in keep)),
                       "setitem", s)
        if _is_identity(spec, shape):
            return make(P.Copy(), (upd,), shape, old._dtype, s)
        return make(P.SliceUpdate(spec), (old, upd), shape, old._dtype, s)
    # Index values out of range (after one negative wrap), on the host or not, drop their
    # updates (JAX's rule; MLX writes out of bounds there): nothing is read back to the host.
    if type(index) is not tuple and parsed and parsed[0][0] == _ARRAY and not isinstance(
            index, (array, list)):  # an int out of range: the same shape check as in range
        _check_int_update(v._shape, shape)
    try:
        adv = _Advanced(old, parsed, check_host=False, dropped=tuple(converted))
    except IndexError as exc:  # an index array into an empty axis: MLX's ValueError
        raise ValueError(f"[scatter] {exc}") from None
    target = _fit(v, adv.final_shape, s)
    # Rearrange the update from the result's layout into the gather's (B..., rest...).
    gshape = adv.gathered_shape()
    pos = {g: j for j, g in enumerate(adv.final) if g >= 0}
    terms = tuple(((pos[g], 1),) for g in range(len(gshape)))
    upd = view(target, ViewSpec(gshape, (0,) * target.ndim, terms), "setitem", s)
    idx = _cast_indices(adv.arrays, s)
    return make(P.Scatter(adv.spec, adv.axes, adv.bshape), (old, upd, *idx), shape, old._dtype,
                s)


def setitem(a: array, index: Any, value: Any) -> array:
    """The new value of ``a`` after ``a[index] = value``: a copy of a with the update (the
    array class's ``__setitem__`` makes ``a`` take it; nodes built on ``a`` before keep its
    old value)."""
    return _update_node(a, index, value)


# ----------------------------------------------------------------------------------------------
# take, take_along_axis, put_along_axis


def _require_array(x: Any, fn: str, sig: str, what: str) -> array:
    if not isinstance(x, array):
        raise argument_error(fn, f"{fn}(): incompatible function arguments. The following "
                             f"argument types are supported:\n    1. {sig}\n\nInvoked with "
                             f"{what} of type {type(x).__name__}", sig)
    return x


_TAKE_SIG = SIGNATURES["take"]
_TAL_SIG = SIGNATURES["take_along_axis"]
_PAL_SIG = SIGNATURES["put_along_axis"]


def _gather_index(idx: array, s: Any) -> array:
    """An integer index array as the int32/int64 the kernels read (MLX's dtype errors)."""
    if idx._dtype is dt.bool_:
        raise ValueError("[Gather] Boolean indices not supported.")
    if idx._dtype.kind not in "iu":
        raise ValueError("[gather] Got indices with invalid dtype. Indices must be integral.")
    return astype(idx, _index_dtype(idx._dtype), s)


def _flat(a: array, s: Any) -> array:
    from .shape import _reshape_node

    return a if a.ndim == 1 else _reshape_node(a, (a.size,), s)


def take(a: array, /, indices: int | array, axis: int | None = None, *,
         stream: Any = None) -> array:
    """Elements (``axis=None``: of the flattened ``a``) or slices along ``axis`` at
    ``indices``. Negative indices wrap once; array indices still out of range give 0 (MLX
    reads past its buffer); an out-of-range int raises ValueError, as in MLX."""
    a = _require_array(a, "take", _TAKE_SIG, "a")
    s = dev.resolve_stream(stream)
    if axis is None:
        a = _flat(a, s)
        ax = 0
    else:
        ax = _int(axis, "axis", "take")
        if not -a.ndim <= ax < a.ndim:
            raise IndexError(f"[take] Received invalid axis {axis} for array with {a.ndim} "
                             "dimensions.")
        ax = ax + a.ndim if ax < 0 else ax
    n = a._shape[ax]
    i = _as_int(indices)
    if i is not None:
        # MLX wraps a negative int only without an axis (with one it raises ValueError).
        if not (-n if axis is None else 0) <= i < n:
            raise ValueError(f"[take] Index {i} is out of bounds for axis {ax} with size {n}.")
        i = i + n if i < 0 else i
        return getitem(a, (slice(None),) * ax + (i,))
    idx = _require_array(indices, "take", _TAKE_SIG, "indices")
    idx = _gather_index(idx, s)
    if n == 0 and idx.size:
        raise ValueError("[take] Cannot do a non-empty take from an empty axis.")
    shape = a._shape[:ax] + idx._shape + a._shape[ax + 1:]
    return make(P.Take(ax), (a, idx), shape, a._dtype, s)


def _along_axis_args(a: array, indices: Any, axis: int | None, fn: str, sig: str,
                     s: Any) -> tuple[array, array, int]:
    a = _require_array(a, fn, sig, "a")
    idx = _require_array(indices, fn, sig, "indices")
    if axis is None:
        a = _flat(a, s)
        ax = 0
    else:
        ax = _int(axis, "axis", fn)
        if not -a.ndim <= ax < a.ndim:
            raise IndexError(f"[{fn}] Axis {axis} is out of bounds for array with {a.ndim} "
                             "dimensions.")
        ax = ax + a.ndim if ax < 0 else ax
    if idx.ndim != a.ndim:
        raise ValueError(f"[{fn}] Indices of dimension {idx.ndim} does not match array of "
                         f"dimension {a.ndim}.")
    if idx._dtype.kind not in "iu":
        if idx.size == 0 and fn == "put_along_axis":  # MLX's scatter skips empty indices
            return a, astype(idx, dt.int32, s), ax
        what = "GatherAxis::eval_cpu] Cannot gather" if fn == "take_along_axis" else \
            "ScatterAxis::eval_cpu] Cannot scatter"
        raise RuntimeError(f"[{what} with indices type.")
    return a, astype(idx, _index_dtype(idx._dtype), s), ax


def _without(shape: tuple[int, ...], ax: int) -> tuple[int, ...]:
    return shape[:ax] + shape[ax + 1:]


def take_along_axis(a: array, /, indices: array, axis: int | None = -1, *,
                    stream: Any = None) -> array:
    """Values of ``a`` at ``indices`` along ``axis`` (``None``: of the flattened ``a``); ``a``
    and ``indices`` broadcast against each other except along the axis. Negative indices wrap
    once; indices still out of range give 0."""
    s = dev.resolve_stream(stream)
    a, idx, ax = _along_axis_args(a, indices, axis, "take_along_axis", _TAL_SIG, s)
    rest = _broadcast2(_without(a._shape, ax), _without(idx._shape, ax))
    shape = rest[:ax] + (idx._shape[ax],) + rest[ax:]
    src_shape = rest[:ax] + (a._shape[ax],) + rest[ax:]
    src = a if src_shape == a._shape else broadcast_view(a, src_shape, s)
    idx = idx if idx._shape == shape else broadcast_view(idx, shape, s)
    return make(P.GatherAxis(ax), (src, idx), shape, a._dtype, s)


def put_along_axis(a: array, /, indices: array, values: array, axis: int | None = None, *,
                   stream: Any = None) -> array:
    """A copy of ``a`` with ``values`` written at ``indices`` along ``axis`` (``None``: into
    the flattened ``a``). ``indices`` and ``values`` broadcast together, then against ``a``
    except along the axis (the result takes that broadcast shape, as in MLX). Duplicates: the
    last value wins; out-of-range indices are skipped (MLX writes out of bounds)."""
    from .shape import _reshape_node

    s = dev.resolve_stream(stream)
    orig = a
    a, idx, ax = _along_axis_args(a, indices, axis, "put_along_axis", _PAL_SIG, s)
    vals = _require_array(values, "put_along_axis", _PAL_SIG, "values")
    vals = astype(vals, a._dtype, s)
    lead = vals.ndim - idx.ndim
    if lead > 0:
        for d in range(lead):
            if vals._shape[d] != 1:
                raise ValueError(f"[squeeze] Cannot squeeze axis {d} with size "
                                 f"{vals._shape[d]} which is not equal to 1.")
        vals = _reshape_node(vals, vals._shape[lead:], s)
    both = _broadcast2(idx._shape, vals._shape)
    rest = _broadcast2(_without(a._shape, ax), _without(both, ax))
    shape = rest[:ax] + (both[ax],) + rest[ax:]
    out_shape = rest[:ax] + (a._shape[ax],) + rest[ax:]
    src = a if out_shape == a._shape else broadcast_view(a, out_shape, s)
    idx = idx if idx._shape == shape else broadcast_view(idx, shape, s)
    vals = vals if vals._shape == shape else broadcast_view(vals, shape, s)
    out = make(P.ScatterAxis(ax), (src, idx, vals), out_shape, a._dtype, s)
    if axis is None and orig.ndim != 1:
        out = _reshape_node(out, orig._shape, s)
    return out


# ----------------------------------------------------------------------------------------------
# x.at[idx].add(v) and friends


def _at_values(a: array, value: Any) -> array:
    """MLX's ``to_array(v, a.dtype)``: scalars take a's dtype where their kind allows (a float
    on an integer array is float32), arrays keep theirs, numpy arrays convert as mx.array."""
    from .creation import _scalar_value
    from ..graph.primitives.shape import _scalar_numpy

    if isinstance(value, array):
        return value
    if isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        val, vdtype = _scalar_value(value, a._dtype)
        return from_data(np.asarray(_scalar_numpy(val, vdtype)).reshape(()), vdtype)
    if isinstance(value, np.ndarray):
        return array(value)
    c = dt.odd_number(value)  # an object with __float__ / __complex__ / __index__ (MLX: complex)
    if c is not None:
        return _at_values(a, c)
    raise ValueError(f"Invalid type {dt._type_name(value)} received in array initialization.")


def _plain_index(index: Any) -> bool:
    """An index with no entry that selects (None, Ellipsis, or tuples of them): MLX applies
    the operation to the whole array with ordinary promotion there."""
    if index is None or index is Ellipsis:
        return True
    return type(index) is tuple and all(e is None or e is Ellipsis for e in index)


_AT_ELEMENTWISE = {"add": "add", "subtract": "subtract", "multiply": "multiply",
                   "divide": "divide", "maximum": "maximum", "minimum": "minimum"}
_AT_SCATTER = {"add": "add", "subtract": "add", "multiply": "prod", "divide": "prod",
               "maximum": "max", "minimum": "min"}


def _at_update(a: array, index: Any, value: Any, name: str) -> array:
    from . import elementwise as E

    s = dev.resolve_stream(None)
    v = _at_values(a, value)
    if _plain_index(index):
        vs = _strip_leading_ones(v, a.ndim)
        if vs != v._shape:
            v = make(P.Reshape(), (v,), vs, v._dtype, s)
        if len(vs) > a.ndim or _broadcast2(vs, a._shape) != a._shape:
            raise ValueError(f"Cannot broadcast array of shape {fmt_shape(v._shape)} into "
                             f"shape {fmt_shape(a._shape)}.")
        return getattr(E, _AT_ELEMENTWISE[name])(a, broadcast_view(v, a._shape, s))
    if name == "subtract":
        v = E.negative(v)
    elif name == "divide":
        v = E.reciprocal(v)
    if v._dtype is not a._dtype:
        v = astype(v, a._dtype, s)
    if isinstance(index, array) and index._dtype is dt.bool_ or isinstance(index, list) and \
            array(index)._dtype is dt.bool_:
        raise ValueError("[ArrayAt] Boolean mask indices are not supported (MLX 0.32.4 fails "
                         "there too); use mx.where.")
    if not isinstance(index, (tuple, slice, list, array)) and _as_int(index) is None:
        raise ValueError("Cannot index mlx array using the given type.")
    try:
        converted: list = []
        parsed = _parse(a, index, scatter=True, converted=converted)
    except ValueError as exc:
        raise ValueError(str(exc).replace("[gather]", "[scatter]")) from None
    op = _AT_SCATTER[name]
    shape = a._shape
    if not any(kind == _ARRAY for kind, _ in parsed):
        spec, _ = _basic_spec(shape, parsed, keep_arrays=True)
        result, origin = _basic_spec(shape, parsed, keep_arrays=False)
        if type(index) is not tuple and parsed and parsed[0][0] == _INT:
            _check_int_update(v._shape, shape)
        upd = _fit(v, result.shape, s)
        if result.shape != spec.shape:
            keep = [j for j, k in enumerate(origin) if parsed[k][0] != _NONE]
            upd = view(upd, ViewSpec(spec.shape, (0,) * upd.ndim,
                                     tuple(((j, 1),) for j in keep)), "setitem", s)
        return make(P.Scatter(spec, (), (), op), (a, upd), shape, a._dtype, s)
    try:
        adv = _Advanced(a, parsed, check_host=False, dropped=tuple(converted))
    except IndexError as exc:  # an index array into an empty axis
        raise ValueError(f"[scatter] {exc}") from None
    target = _fit(v, adv.final_shape, s)
    gshape = adv.gathered_shape()
    pos = {g: j for j, g in enumerate(adv.final) if g >= 0}
    terms = tuple(((pos[g], 1),) for g in range(len(gshape)))
    upd = view(target, ViewSpec(gshape, (0,) * target.ndim, terms), "setitem", s)
    idx = _cast_indices(adv.arrays, s)
    return make(P.Scatter(adv.spec, adv.axes, adv.bshape, op), (a, upd, *idx), shape,
                a._dtype, s)


class ArrayAt:
    """``x.at[idx]``: updates at indices that combine for duplicate positions
    (``x.at[idx].add(v)`` adds twice where idx repeats a position, unlike ``x[idx] += v``).
    Each method returns a new array; ``x`` is unchanged."""

    __slots__ = ("_x", "_index", "_set")

    def __init__(self, x: array) -> None:
        self._x = x
        self._index: Any = None
        self._set = False

    def __getitem__(self, index: Any) -> ArrayAt:
        out = ArrayAt(self._x)
        out._index = index
        out._set = True
        return out

    def _apply(self, value: Any, name: str) -> array:
        if not self._set:
            raise ValueError("Must give indices to array.at (e.g. `x.at[0].add(4)`).")
        return _at_update(self._x, self._index, value, name)

    def add(self, value: Any) -> array:
        """x with ``value`` added at the indices (duplicates add once each)."""
        return self._apply(value, "add")

    def subtract(self, value: Any) -> array:
        """x with ``value`` subtracted at the indices."""
        return self._apply(value, "subtract")

    def multiply(self, value: Any) -> array:
        """x multiplied by ``value`` at the indices."""
        return self._apply(value, "multiply")

    def divide(self, value: Any) -> array:
        """x multiplied by 1 / ``value`` (in x's dtype) at the indices, as MLX computes it."""
        return self._apply(value, "divide")

    def maximum(self, value: Any) -> array:
        """The maximum of x and ``value`` at the indices."""
        return self._apply(value, "maximum")

    def minimum(self, value: Any) -> array:
        """The minimum of x and ``value`` at the indices."""
        return self._apply(value, "minimum")
