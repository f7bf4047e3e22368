"""VJP rules of reductions, scans, softmax and diff.

MLX's conventions: max/min share the cotangent equally between tied extremes, the cumulative
max/min give it to the latest one, and prod/cumprod are exact where the input has zeros.
"""

from __future__ import annotations

import math
from typing import Any

from .. import core as mx
from ..graph.primitives import reduce as P
from .registry import register_single

#: Above this scan length cumprod's gradient divides by the input (exact only without zeros);
#: at or below it, it uses an n x n product table (exact everywhere).
_CUMPROD_EXACT_MAX = 1024


def _expand(ct: Any, axes: tuple, keepdims: bool) -> Any:
    return ct if keepdims or not axes else mx.expand_dims(ct, list(axes))


def _count(shape: tuple, axes: tuple) -> int:
    return math.prod(shape[a] for a in axes)


def _to_last(x: Any, axes: tuple) -> tuple[Any, list[int], tuple]:
    """x with ``axes`` moved to the end and merged into one: (x2, perm, moved shape)."""
    others = [d for d in range(x.ndim) if d not in axes]
    perm = others + list(axes)
    xt = mx.transpose(x, perm) if perm != list(range(x.ndim)) else x
    moved = xt.shape
    n = _count(x.shape, axes)
    return mx.reshape(xt, tuple(moved[:len(others)]) + (n,)), perm, moved


def _from_last(g: Any, perm: list[int], moved: tuple) -> Any:
    g = mx.reshape(g, moved)
    if perm == list(range(len(perm))):
        return g
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return mx.transpose(g, inv)


@register_single(P.Reduce)
def _reduce(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    x = inputs[0]
    op, axes = prim.op, prim.axes
    if op in ("all", "any", "count_nonzero"):
        return [None]
    ctk = _expand(ct, axes, prim.keepdims)
    if op == "sum":
        return [mx.broadcast_to(ctk, x.shape)]
    if op == "mean":
        # MLX's mean is sum * (1/n): its vjp multiplies by 1/n in the cotangent's dtype.
        n = _count(x.shape, axes)
        return [mx.broadcast_to(ctk * mx.array(1.0 / n if n else float("inf"), ct.dtype),
                                x.shape)]
    outk = _expand(out, axes, prim.keepdims)
    if op in ("var", "std"):
        n = _count(x.shape, axes) - (prim.param or 0)
        centered = x - mx.mean(x, axis=list(axes), keepdims=True)
        if op == "var":
            return [ctk * centered * (2.0 / n)]
        return [ctk * centered / (outk * n)]
    if op == "logsumexp":
        if x.dtype in (mx.float16, mx.bfloat16) and axes != (x.ndim - 1,):
            return [_composed_logsumexp_vjp(x, axes, ctk)]
        # MLX's rule: the precise softmax (same rounding in half dtypes)
        return [ctk * mx.softmax(x, axis=list(axes), precise=True)]
    if op in ("max", "min"):
        # Ties share the cotangent equally (MLX's rule).
        mask = mx.equal(x, outk)
        count = mx.sum(mask, axis=list(axes), keepdims=True)
        return [mx.where(mask, ctk / count.astype(ct.dtype), mx.array(0, ct.dtype))]
    if op == "prod":
        x2, perm, moved = _to_last(x, axes)
        left = mx.cumprod(x2, axis=-1, inclusive=False)
        right = mx.cumprod(x2, axis=-1, reverse=True, inclusive=False)
        ct2 = mx.reshape(ctk, tuple(x2.shape[:-1]) + (1,))
        return [_from_last(left * right * ct2, perm, moved)]
    if op == "median":
        return [_median(x, axes, ctk)]
    raise ValueError(f"[vjp] Not implemented for {op}.")


def _composed_logsumexp_vjp(x: Any, axes: tuple, ctk: Any) -> Any:
    """MLX fuses logsumexp over the last axis alone; over other axes it is max, subtract, exp,
    sum, log, add and a where for infinite maxima, and its gradient is theirs chained, each
    step rounding in a half dtype: (ct / sum) * exp(x - max)."""
    axes_l = list(axes)
    m = mx.stop_gradient(mx.max(x, axis=axes_l, keepdims=True))
    e = mx.exp(x - m)
    s = mx.sum(e, axis=axes_l, keepdims=True)
    ct = mx.where(mx.isinf(m), mx.zeros((), ctk.dtype), ctk)
    return (ct / s) * e


def _median(x: Any, axes: tuple, ctk: Any) -> Any:
    """The cotangent goes to the middle element(s) in sorted order (half each for two)."""
    x2, perm, moved = _to_last(x, axes)
    n = x2.shape[-1]
    order = mx.argsort(x2, axis=-1).astype(mx.int32)
    rank = mx.argsort(order, axis=-1).astype(mx.int32)  # the sorted position of each element
    ct2 = mx.reshape(ctk, tuple(x2.shape[:-1]) + (1,))
    if n % 2:
        g = mx.where(mx.equal(rank, n // 2), ct2, mx.array(0, ct2.dtype))
    else:
        mid = mx.logical_or(mx.equal(rank, n // 2), mx.equal(rank, n // 2 - 1))
        g = mx.where(mid, ct2 * 0.5, mx.array(0, ct2.dtype))
    return _from_last(g, perm, moved)


@register_single(P.ArgReduce)
def _arg_reduce(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [None]


def _flip(x: Any, axis: int) -> Any:
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(None, None, -1)
    return x[tuple(idx)]


def _shift_right(x: Any, axis: int, fill: float) -> Any:
    """[fill, x_0, ..., x_{n-2}] along axis (what an exclusive scan scans inclusively)."""
    n = x.shape[axis]
    if n == 0:
        return x
    head_shape = list(x.shape)
    head_shape[axis] = 1
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(0, n - 1)
    return mx.concatenate([mx.full(head_shape, fill, dtype=x.dtype), x[tuple(idx)]], axis=axis)


def _shift_left(g: Any, axis: int) -> Any:
    """The adjoint of _shift_right: [g_1, ..., g_{n-1}, 0]."""
    n = g.shape[axis]
    if n == 0:
        return g
    tail_shape = list(g.shape)
    tail_shape[axis] = 1
    idx = [slice(None)] * g.ndim
    idx[axis] = slice(1, n)
    return mx.concatenate([g[tuple(idx)], mx.zeros(tail_shape, dtype=g.dtype)], axis=axis)


def _cumprod_inclusive_vjp(x: Any, out: Any, ct: Any, axis: int) -> Any:
    n = x.shape[axis]
    if n > _CUMPROD_EXACT_MAX:
        s = mx.cumsum(ct * out, axis=axis, reverse=True)
        return s / x
    # g_k = L_k * sum_{i>=k} ct_i * prod_{k<j<=i} x_j, with L_k the exclusive product.
    xm = mx.moveaxis(x, axis, -1)
    cm = mx.moveaxis(ct, axis, -1)
    k = mx.arange(n)
    later = mx.greater(mx.expand_dims(k, 0), mx.expand_dims(k, 1))  # [k, j]: j > k
    table = mx.where(later, mx.expand_dims(xm, -2), mx.array(1, x.dtype))  # [..., k, j]
    prods = mx.cumprod(table, axis=-1)  # [..., k, i] = prod_{k<j<=i} x_j  (i >= k)
    upper = mx.greater_equal(mx.expand_dims(k, 0), mx.expand_dims(k, 1))  # i >= k
    s = mx.sum(mx.where(upper, prods * mx.expand_dims(cm, -2), mx.array(0, ct.dtype)), axis=-1)
    left = mx.cumprod(xm, axis=-1, inclusive=False)
    return mx.moveaxis(left * s, -1, axis)


def _cum_extreme_vjp(op: str, x: Any, out: Any, ct: Any, axis: int) -> Any:
    """cummax/cummin: each output's cotangent goes to the latest position holding it."""
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = n
    pos = mx.reshape(mx.arange(n), shape)
    src = mx.cummax(mx.where(mx.equal(x, out), pos, -1), axis=axis)
    from .custom import stop
    from .rules_shape import _scatter_along_axis

    src = stop(mx.broadcast_to(mx.maximum(src, 0), x.shape))
    return _scatter_along_axis(x.shape, axis, src, ct)


@register_single(P.Scan)
def _scan(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    x = inputs[0]
    op, axis = prim.op, prim.axis
    if op == "cumsum":
        return [mx.cumsum(ct, axis=axis, reverse=not prim.reverse, inclusive=prim.inclusive)]
    # The others: reduce to a forward inclusive scan (flip for reverse, shift for exclusive).
    if prim.reverse:
        x, out, ct = _flip(x, axis), _flip(out, axis), _flip(ct, axis)
    xs = x
    if not prim.inclusive:
        # shifted right by the scan's identity: for cummax/cummin, the cotangent of an output
        # holding it lands on that head, which _shift_left drops (it has no source)
        xs = _shift_right(x, axis, P.scan_identity(op, x.dtype.np_dtype))
    if op == "cumprod":
        g = _cumprod_inclusive_vjp(xs, out, ct, axis)
    elif op in ("cummax", "cummin"):
        g = _cum_extreme_vjp(op, xs, out, ct, axis)
    elif op == "logcumsumexp":
        g = mx.exp(xs) * mx.cumsum(ct * mx.exp(-out), axis=axis, reverse=True)
    else:
        raise ValueError(f"[vjp] Not implemented for {op}.")
    if not prim.inclusive:
        g = _shift_left(g, axis)
    if prim.reverse:
        g = _flip(g, axis)
    return [g]


@register_single(P.Softmax)
def _softmax(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    axes = list(prim.axes)
    weighted = ct * out  # MLX's order of operations (it shows in float16/bfloat16)
    return [weighted - out * mx.sum(weighted, axis=axes, keepdims=True)]


@register_single(P.Diff)
def _diff(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    # diff is x[1:] - x[:-1], n times: its adjoint maps g to [-g_0, g_0 - g_1, ..., g_{m-1}].
    axis = prim.axis
    g = ct
    for _ in range(prim.n):
        pad = [(0, 0)] * g.ndim
        pad[axis] = (1, 1)
        gp = mx.pad(g, pad)
        n = gp.shape[axis]
        lo = [slice(None)] * g.ndim
        hi = [slice(None)] * g.ndim
        lo[axis] = slice(0, n - 1)
        hi[axis] = slice(1, n)
        g = gp[tuple(lo)] - gp[tuple(hi)]
    return [g]
