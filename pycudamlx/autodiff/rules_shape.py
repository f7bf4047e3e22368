"""VJP rules of the shape, copy and indexing primitives.

A view's cotangent goes back to the positions it read: broadcast dimensions are summed, a
permutation is transposed back, any other one-to-one view (slices, flips, diagonals, integer
indices) is written into zeros with a ``SliceUpdate`` of the same ``ViewSpec``, and a view that
reads a position twice (as_strided windows) is scattered back with atomic adds. Gathers become
scatter-adds into zeros with the same indices (out-of-range indices read 0 and are skipped), and
scatters split their cotangent between the destination and the update.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import core as mx
from .. import dtypes as dt
from ..core import device as dev
from ..core.array import make
from ..core.indexing import _cast_indices
from ..graph.primitives import shape as P
from ..graph.primitives.shape import ViewSpec, contiguous_strides
from .registry import register, register_single


def _stream(*xs: Any) -> Any:
    for x in xs:
        s = getattr(x, "_stream", None)
        if s is not None:
            return s
    return dev.resolve_stream(None)


def _no_index_grad(op: str, wanted: list, first: int) -> None:
    """MLX refuses to differentiate through indices that depend on a differentiated input."""
    if any(wanted[first:]):
        raise ValueError(f"[{op}] Cannot calculate VJP with respect to indices. Use "
                         "stop_gradient on indices to stop gradients from being computed.")


def _zeros(shape: Sequence[int], like: Any) -> Any:
    return mx.zeros(tuple(shape), dtype=like.dtype)


def _injective(spec: ViewSpec, in_shape: Sequence[int]) -> bool:
    """Whether the view reads each input position at most once (a sufficient test)."""
    in_strides = contiguous_strides(in_shape)
    dims = []
    for n, t in zip(spec.shape, spec.terms):
        if n > 1:
            dims.append((abs(sum(c * in_strides[d] for d, c in t)), n))
    dims.sort()
    extent = 0
    for s, n in dims:
        if s <= extent:
            return False
        extent += s * (n - 1)
    return True


def _scatter_flat(in_shape: Sequence[int], idx: np.ndarray, ct: Any) -> Any:
    """zeros(in_shape) with ct added at the flat positions ``idx`` (ct's shape)."""
    size = int(np.prod(in_shape, dtype=np.int64))
    itype = np.int32 if size < 2**31 else np.int64
    flat = mx.zeros((size,), dtype=ct.dtype)
    out = flat.at[mx.array(idx.astype(itype))].add(ct)
    return mx.reshape(out, tuple(in_shape))


def _flat_index(shape: Sequence[int], base: int, strides: Sequence[int]) -> np.ndarray:
    idx = np.full(tuple(shape), base, np.int64)
    for j, (n, s) in enumerate(zip(shape, strides)):
        if s and n > 1:
            r = np.arange(n, dtype=np.int64) * s
            idx += r.reshape((1,) * j + (n,) + (1,) * (len(shape) - j - 1))
    return idx


def view_vjp(spec: ViewSpec, in_shape: tuple[int, ...], ct: Any) -> Any:
    """The cotangent of the input of ``View(spec)`` (input shape ``in_shape``)."""
    terms = spec.terms
    shape = spec.shape
    if any(not t for t in terms):
        bdims = [j for j, t in enumerate(terms) if not t and shape[j] != 1]
        if bdims:
            ct = mx.sum(ct, axis=bdims, keepdims=True)
        keep = [j for j, t in enumerate(terms) if t]
        shape = tuple(shape[j] for j in keep)
        terms = tuple(terms[j] for j in keep)
        ct = mx.reshape(ct, shape)
    if not any(spec.off) and all(len(t) == 1 and t[0][1] == 1 for t in terms):
        dims = [t[0][0] for t in terms]
        if len(set(dims)) == len(dims) and all(
                shape[j] == in_shape[d] for j, d in enumerate(dims)) and all(
                in_shape[d] == 1 for d in range(len(in_shape)) if d not in dims):
            perm = sorted(range(len(dims)), key=lambda j: dims[j])
            if perm != list(range(len(dims))):
                ct = mx.transpose(ct, perm)
            return mx.reshape(ct, in_shape)
    spec2 = ViewSpec(tuple(shape), spec.off, tuple(terms))
    if _injective(spec2, in_shape):
        s = _stream(ct)
        return make(P.SliceUpdate(spec2), (_zeros(in_shape, ct), ct), tuple(in_shape),
                    ct.dtype, s)
    in_strides = contiguous_strides(in_shape)
    base = sum(o * st for o, st in zip(spec.off, in_strides))
    strides = [sum(c * in_strides[d] for d, c in t) for t in terms]
    return _scatter_flat(in_shape, _flat_index(shape, base, strides), ct)


@register_single(P.View)
def _view(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [view_vjp(prim.spec, inputs[0].shape, ct)]


def _chunk_axis(specs: Sequence[ViewSpec], in_shape: tuple[int, ...]) -> int | None:
    """The axis along which ``specs`` cut the input into consecutive chunks, or None."""
    nd = len(in_shape)
    ident = tuple(((d, 1),) for d in range(nd))
    axis = None
    pos = 0
    for spec in specs:
        if spec.terms != ident:
            return None
        moved = [d for d in range(nd) if spec.shape[d] != in_shape[d] or spec.off[d]]
        if len(moved) > 1 or (axis is not None and moved and moved[0] != axis):
            return None
        if moved:
            axis = moved[0]
        ax = axis if axis is not None else 0
        if spec.off[ax] != pos:
            return None
        pos += spec.shape[ax]
    if axis is None or pos != in_shape[axis]:
        return None
    return axis


@register(P.Split)
def _split(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
    x = inputs[0]
    axis = _chunk_axis(prim.specs, x.shape)
    if axis is not None:  # mx.split: the cotangents side by side
        like = next(c for c in cts if c is not None)
        parts = [c if c is not None else _zeros(spec.shape, like)
                 for spec, c in zip(prim.specs, cts)]
        return [mx.concatenate(parts, axis=axis)]
    total = None
    for spec, ct in zip(prim.specs, cts):
        if ct is None:
            continue
        g = view_vjp(spec, x.shape, ct)
        total = g if total is None else total + g
    return [total]


@register_single(P.Reshape)
def _reshape(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [mx.reshape(ct, inputs[0].shape)]


@register_single(P.Copy, P.Contiguous)
def _copy(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [ct]  # the engine sums broadcasts back and casts to the input's dtype


@register_single(P.AsStrided)
def _as_strided(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    in_shape = inputs[0].shape
    return [_scatter_flat(in_shape, _flat_index(prim.shape, prim.offset, prim.strides), ct)]


def _region_spec(region: Any, out_shape: tuple[int, ...]) -> ViewSpec | None:
    """The ViewSpec over the contiguous output that addresses ``region`` (offset, shape and
    element strides), or None when its strides are not multiples of the output's."""
    offset, shape, strides = region
    out_strides = contiguous_strides(out_shape)
    off = []
    rest = offset
    for e, st in zip(out_shape, out_strides):
        off.append(rest // st if e > 1 else 0)
        rest -= off[-1] * st
    if rest:
        return None
    terms = []
    for n, st in zip(shape, strides):
        if n == 1 or st == 0:
            terms.append(() if st == 0 and n > 1 else ())
            continue
        for d, (e, ost) in enumerate(zip(out_shape, out_strides)):
            if e > 1 and st % ost == 0 and abs(st // ost) < e:
                terms.append(((d, st // ost),))
                break
        else:
            return None
    spec = ViewSpec(tuple(shape), tuple(off), tuple(terms))
    if spec.apply(0, out_strides) != (offset, tuple(0 if n == 1 else st for n, st in
                                                    zip(shape, strides))):
        return None
    return spec


@register_single(P.Assemble)
def _assemble(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    grads: list[Any] = [None] * len(inputs)

    def region(r: Any) -> Any:
        spec = _region_spec(r, ct.shape)
        if spec is not None:  # a zero-copy view of the cotangent
            return make(P.View(spec), (ct,), spec.shape, ct.dtype, _stream(ct))
        offset, shape, strides = r
        return mx.as_strided(ct, shape, strides, offset)

    for index, spec, r in prim.blocks:
        if not wanted[index] or 0 in r[1]:
            continue
        g = region(r)
        if spec is not None:
            g = view_vjp(spec, inputs[index].shape, g)
        grads[index] = g if grads[index] is None else grads[index] + g
    for r, source in prim.fills:
        if source[0] != "input" or not wanted[source[1]] or 0 in r[1]:
            continue
        k = source[1]
        x = inputs[k]
        total = mx.sum(region(r))
        if x.size == 1:
            g = mx.reshape(total, x.shape)
        else:  # the fill reads the input's first element
            g = mx.reshape(mx.concatenate([mx.reshape(total, (1,)),
                                           mx.zeros((x.size - 1,), dtype=ct.dtype)]), x.shape)
        grads[k] = g if grads[k] is None else grads[k] + g
    return grads


def _scatter_add_axis0(shape: Sequence[int], idx: Any, ct: Any) -> Any:
    """zeros(shape) with ct (idx.shape + shape[1:]) added at rows idx."""
    return _zeros(shape, ct).at[idx].add(ct)


@register_single(P.GatherMaps)
def _gather_maps(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    shapes = [tuple(inputs[0].shape)]
    for ax, mp in zip(prim.axes, prim.maps):
        s = list(shapes[-1])
        s[ax] = len(mp)
        shapes.append(tuple(s))
    for k in range(len(prim.axes) - 1, -1, -1):
        ax, mp = prim.axes[k], prim.maps[k]
        target = shapes[k]
        ct_t = mx.moveaxis(ct, ax, 0)
        tshape = (target[ax],) + tuple(ct_t.shape[1:])
        ct = mx.moveaxis(_scatter_add_axis0(tshape, mx.array(mp), ct_t), 0, ax)
    return [ct]


def _scatter_add(dst_shape: Sequence[int], axes: Sequence[int], bshape: Sequence[int],
                 upd: Any, idx: Sequence[Any]) -> Any:
    """zeros(dst_shape) with ``upd`` (bshape + the other dims) added at the index arrays."""
    s = _stream(upd)
    spec = P.identity_spec(tuple(dst_shape))
    return make(P.Scatter(spec, tuple(axes), tuple(bshape), "add"),
                (_zeros(dst_shape, upd), upd, *_cast_indices(list(idx), s)),
                tuple(dst_shape), upd.dtype, s)


@register_single(P.Gather)
def _gather(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    src = inputs[0]
    idx = inputs[1:]
    _no_index_grad("gather", wanted, 1)
    return [_scatter_add(src.shape, prim.axes, prim.bshape, ct, idx)] + [None] * len(idx)


@register_single(P.Take)
def _take(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    src, idx = inputs
    _no_index_grad("gather", wanted, 1)
    ax, ni = prim.axis, idx.ndim
    perm = list(range(ax, ax + ni)) + list(range(ax)) + list(range(ax + ni, ct.ndim))
    if perm != list(range(ct.ndim)):
        ct = mx.transpose(ct, perm)
    return [_scatter_add(src.shape, (ax,), idx.shape, ct, (idx,)), None]


def _scatter_along_axis(shape: Sequence[int], axis: int, idx: Any, ct: Any) -> Any:
    """zeros(shape) with ct[..., j, ...] added at [..., idx[..., j, ...], ...] along axis
    (ct and idx of one shape, equal to ``shape`` except along the axis)."""
    bshape = tuple(ct.shape)
    nd = len(bshape)
    index = []
    itype = dt.int64 if idx.dtype in (dt.int64, dt.uint64) else dt.int32
    for d in range(nd):
        if d == axis:
            index.append(idx)
        else:
            r = mx.arange(bshape[d], dtype=itype)
            index.append(mx.reshape(r, (1,) * d + (bshape[d],) + (1,) * (nd - d - 1)))
    return _scatter_add(shape, range(nd), bshape, ct, index)


@register_single(P.GatherAxis)
def _gather_axis(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    src, idx = inputs
    _no_index_grad("gather_axis", wanted, 1)
    target = list(ct.shape)
    target[prim.axis] = src.shape[prim.axis]
    if idx.shape != ct.shape:
        idx = mx.broadcast_to(idx, ct.shape)
    return [_scatter_along_axis(target, prim.axis, idx, ct), None]


@register_single(P.ScatterAxis)
def _scatter_axis(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    a, idx, upd = inputs
    _no_index_grad("scatter_axis", [wanted[1]], 0)
    s = _stream(ct)
    ga = gu = None
    if wanted[0]:
        ga = make(P.ScatterAxis(prim.axis), (ct, idx, _zeros(upd.shape, ct)), a.shape,
                  ct.dtype, s)
    if wanted[2]:
        gu = make(P.GatherAxis(prim.axis), (ct, idx), tuple(idx.shape), ct.dtype, s)
    return [ga, None, gu]


def _gather_dst(prim: Any, x: Any, idx: tuple) -> Any:
    """What a Scatter's update positions hold in ``x`` (shaped like the update)."""
    s = _stream(x)
    v = make(P.View(prim.dst), (x,), prim.dst.shape, x.dtype, s)
    if not prim.axes:
        return v
    rest = [e for d, e in enumerate(prim.dst.shape) if d not in prim.axes]
    return make(P.Gather(prim.axes, prim.bshape), (v, *idx), tuple(prim.bshape) + tuple(rest),
                x.dtype, s)


@register_single(P.Scatter)
def _scatter(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    a, upd = inputs[0], inputs[1]
    idx = inputs[2:]
    op = prim.op
    if op == "prod" and idx:
        raise RuntimeError("[scatter] VJP not implemented for scatter_prod")
    _no_index_grad("scatter", wanted, 2)
    s = _stream(ct)
    ga = gu = None
    zero = mx.array(0, ct.dtype)
    if op == "prod":
        # x.at[i].multiply(v) / .divide(v) with basic indices only: MLX writes x[i] * v back
        # as a slice update there, which it can differentiate (no duplicate positions).
        if wanted[0]:
            ga = make(P.Scatter(prim.dst, (), (), "prod"), (ct, upd), a.shape, ct.dtype, s)
        if wanted[1]:
            gu = mx.multiply(_gather_dst(prim, ct, ()), _gather_dst(prim, a, ()))
        return [ga, gu]
    if wanted[0]:
        if op == "add":
            ga = ct
        elif op == "set":
            ga = make(P.Scatter(prim.dst, prim.axes, prim.bshape, "set"),
                      (ct, _zeros(upd.shape, ct), *idx), a.shape, ct.dtype, s)
        else:  # max / min: where the destination kept its value (ties: both get it, as MLX)
            ga = mx.where(mx.equal(out, a), ct, zero)
    if wanted[1]:
        gu = _gather_dst(prim, ct, idx)
        if op in ("max", "min"):
            gu = mx.where(mx.equal(_gather_dst(prim, out, idx), upd), gu, zero)
    return [ga, gu] + [None] * len(idx)


@register_single(P.SliceUpdate)
def _slice_update(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    a, upd = inputs
    s = _stream(ct)
    ga = gu = None
    if wanted[0]:
        ga = make(P.SliceUpdate(prim.dst), (ct, _zeros(prim.dst.shape, ct)), a.shape,
                  ct.dtype, s)
    if wanted[1]:
        gu = make(P.View(prim.dst), (ct,), prim.dst.shape, ct.dtype, s)
    return [ga, gu]


@register_single(P.DynamicSlice)
def _dynamic_slice(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    a, start = inputs
    s = _stream(ct)
    return [make(P.DynamicSliceUpdate(prim.axes), (_zeros(a.shape, ct), ct, start), a.shape,
                 ct.dtype, s), None]


@register_single(P.DynamicSliceUpdate)
def _dynamic_slice_update(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    a, upd, start = inputs
    s = _stream(ct)
    ga = gu = None
    if wanted[0]:
        ga = make(P.DynamicSliceUpdate(prim.axes), (ct, _zeros(upd.shape, ct), start),
                  a.shape, ct.dtype, s)
    if wanted[1]:
        gu = make(P.DynamicSlice(prim.axes), (ct, start), tuple(upd.shape), ct.dtype, s)
    return [ga, gu, None]


@register_single(P.TriSelect)
def _tri_select(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [make(P.TriSelect(prim.k, prim.lower), (ct,), ct.shape, ct.dtype, _stream(ct))]


@register_single(P.Trace)
def _trace(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    x = inputs[0]
    if ct.dtype != x.dtype:
        ct = ct.astype(x.dtype)
    full = mx.broadcast_to(mx.expand_dims(ct, -1), prim.diag.shape)
    return [view_vjp(prim.diag, x.shape, full)]
