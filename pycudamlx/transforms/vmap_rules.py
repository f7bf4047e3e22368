"""Batching rules of vmap, one per primitive class, kept out of the primitives' own modules.

A rule gets a traced node, its inputs (batched inputs carry the batch axis first; the others
are the traced values themselves) with a flag per input saying which are batched, and the batch
size. It returns the batched value of each of the node's outputs, batch axis first, or None to
use the fallback. The fallback runs the primitive once per batch entry (each batched input
indexed at that entry) and stacks the results: correct for every primitive, since a traced node's
shapes do not depend on the batch, but it builds one node per entry, so the common primitives
have rules that build one node for the whole batch.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from .. import dtypes as dt
from ..core.array import _Alias, array, make, make_multi
from ..core.creation import arange, zeros
from ..core.shape import broadcast_to, moveaxis, reshape, stack, transpose
from ..graph.primitives import distributed, elementwise as ew
from ..graph.primitives import fast, fft, linalg, matmul, random, reduce, shape as sh, sorting
from ..graph.primitives.shape import ViewSpec, identity_spec

_log = logging.getLogger(__name__)

Rule = Callable[[array, list, list, int], "list[array] | None"]
_RULES: dict[type, Rule] = {}
_LOOPED: set[type] = set()


def register(*classes: type) -> Callable[[Rule], Rule]:
    """Declare ``rule`` as the batching rule of ``classes``."""
    def wrap(rule: Rule) -> Rule:
        for cls in classes:
            _RULES[cls] = rule
        return rule
    return wrap


def apply_rule(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """The batched outputs of ``node`` (all of its siblings, in order)."""
    rule = _RULES.get(type(node._prim))
    if rule is not None:
        out = rule(node, inputs, flags, size)
        if out is not None:
            return out
    return _loop(node, inputs, flags, size)


def _specs(node: array) -> tuple:
    sib = node._siblings
    return sib.specs if sib is not None else ((node._shape, node._dtype),)


def _loop(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """The primitive applied per batch entry, results stacked along a new first axis."""
    cls = type(node._prim)
    if cls not in _LOOPED:
        _LOOPED.add(cls)
        _log.debug("vmap: no batching rule for %s; looping over the batch", cls.__name__)
    specs = _specs(node)
    stream = node._stream
    columns: list[list[array]] = [[] for _ in specs]
    for b in range(size):
        args = tuple(x[b] if f else x for x, f in zip(inputs, flags))
        if node._siblings is not None:
            outs = make_multi(node._prim, args, specs, stream)
        else:
            outs = [make(node._prim, args, node._shape, node._dtype, stream)]
        for col, o in zip(columns, outs):
            col.append(o)
    if size == 0:
        return [zeros((0,) + tuple(shape), dtype, stream=stream) for shape, dtype in specs]
    return [stack(col, 0, stream=stream) for col in columns]


def _single(node: array, prim: Any, inputs: Sequence[array], size: int) -> list[array]:
    return [make(prim, tuple(inputs), (size,) + node._shape, node._dtype, node._stream)]


def _multi(node: array, prim: Any, inputs: Sequence[array], size: int) -> list[array]:
    specs = [((size,) + tuple(shape), dtype) for shape, dtype in _specs(node)]
    return make_multi(prim, tuple(inputs), specs, node._stream)


def _lift(x: array, rank: int, node: array) -> array:
    """A batched ``x`` (batch first) with size-1 axes after the batch axis up to ``rank`` + 1
    dimensions, so that it broadcasts against unbatched operands right-aligned."""
    missing = rank + 1 - x.ndim
    if missing <= 0:
        return x
    return reshape(x, (x.shape[0],) + (1,) * missing + x.shape[1:], stream=node._stream)


def _full_batch(x: array, batched: bool, size: int, node: array) -> array:
    """``x`` with a leading batch axis: batched inputs as they are, others broadcast (a view)."""
    if batched:
        return x
    return broadcast_to(x, (size,) + x.shape, stream=node._stream)


# ----------------------------------------------------------------------------------------------
# Broadcasting primitives: batched operands get size-1 axes so the batch axis leads.


@register(ew.Unary, ew.Binary, ew.AsType, ew.Where, sh.Copy, matmul.Matmul)
def _broadcasting(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    rank = len(node._shape)
    lifted = [_lift(x, rank, node) if f else x for x, f in zip(inputs, flags)]
    return _single(node, node._prim, lifted, size)


@register(ew.DivMod)
def _divmod(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    rank = len(node._shape)
    lifted = [_lift(x, rank, node) if f else x for x, f in zip(inputs, flags)]
    return _multi(node, node._prim, lifted, size)


@register(sh.Contiguous, sh.Reshape, _Alias)
def _same_primitive(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """One-input primitives whose output shape is a function of the node's shape alone."""
    return _single(node, node._prim, inputs, size)


# ----------------------------------------------------------------------------------------------
# Views


def _batched_spec(spec: ViewSpec, size: int, batched: bool = True) -> ViewSpec:
    """``spec`` with a leading batch axis: the input's first axis, or stride 0 (broadcast)."""
    terms = tuple(tuple((d + 1 if batched else d, c) for d, c in t) for t in spec.terms)
    lead = ((0, 1),) if batched else ()
    off = ((0,) + spec.off) if batched else spec.off
    return ViewSpec((size,) + spec.shape, off, (lead,) + terms)


@register(sh.View)
def _view(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    prim = sh.View(_batched_spec(node._prim.spec, size), node._prim.name)
    return _single(node, prim, inputs, size)


@register(sh.Split)
def _split(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    prim = sh.Split([_batched_spec(s, size) for s in node._prim.specs])
    return _multi(node, prim, inputs, size)


@register(sh.AsStrided)
def _as_strided(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """The input is read as a contiguous row-major buffer: entry b starts b * its size later."""
    p = node._prim
    per_entry = 1
    for e in inputs[0].shape[1:]:
        per_entry *= e
    prim = sh.AsStrided((size,) + tuple(p.shape), (per_entry,) + tuple(p.strides), p.offset)
    return _single(node, prim, inputs, size)


@register(sh.Assemble)
def _assemble(node: array, inputs: list, flags: list[bool], size: int) -> list[array] | None:
    """Concatenate, stack, pad, ...: each region gains the batch axis (stride: one output)."""
    p = node._prim
    if any(src[0] == "input" and flags[src[1]] for _, src in p.fills):
        return None  # a fill from a batched input's first element differs per entry
    per_out = 1
    for e in node._shape:
        per_out *= e

    def region(r: tuple) -> tuple:
        offset, shape, strides = r
        return (offset, (size,) + tuple(shape), (per_out,) + tuple(strides))

    blocks = []
    for index, spec, reg in p.blocks:
        if spec is None:
            spec = identity_spec(tuple(inputs[index].shape[1:] if flags[index]
                                       else inputs[index].shape))
        blocks.append((index, _batched_spec(spec, size, flags[index]), region(reg)))
    fills = [(region(reg), src) for reg, src in p.fills]
    prim = sh.Assemble(p.name, p.init, blocks, fills)
    return _single(node, prim, inputs, size)


@register(sh.TriSelect, fast.RMSNorm, fast.LayerNorm, fast.RoPE)
def _trailing(node: array, inputs: list, flags: list[bool], size: int) -> list[array] | None:
    """Primitives over the trailing axes of their first input, any leading axes: the batch
    axis is one more leading axis when only that input is batched."""
    if any(flags[1:]):
        return None
    return _single(node, node._prim, inputs, size)


# ----------------------------------------------------------------------------------------------
# Reductions, scans, sorts: shift the axis parameters past the batch axis


def _shift(axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(a + 1 for a in axes)


@register(reduce.Reduce)
def _reduce(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    return _single(node, reduce.Reduce(p.op, _shift(p.axes), p.keepdims, p.param), inputs, size)


@register(reduce.ArgReduce)
def _argreduce(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    x = inputs[0]
    if p.axis is not None:
        return _single(node, reduce.ArgReduce(p.op, p.axis + 1), [x], size)
    flat = reshape(x, (size, -1), stream=node._stream)
    out = make(reduce.ArgReduce(p.op, 1), (flat,), (size,), node._dtype, node._stream)
    return [reshape(out, (size,) + node._shape, stream=node._stream)]


@register(reduce.Scan)
def _scan(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    return _single(node, reduce.Scan(p.op, p.axis + 1, p.reverse, p.inclusive), inputs, size)


@register(reduce.Softmax)
def _softmax(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    return _single(node, reduce.Softmax(_shift(node._prim.axes), node._prim.precise), inputs, size)


@register(reduce.Diff)
def _diff(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    return _single(node, reduce.Diff(p.n, p.axis + 1), inputs, size)


@register(sorting.Sort)
def _sort(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    return _single(node, sorting.Sort(p.axis + 1, p.indices, p.start, p.kth), inputs, size)


@register(random.ArgmaxAxis)
def _argmax_axis(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    return _single(node, random.ArgmaxAxis(node._prim.axis + 1), inputs, size)


@register(fft.FFT)
def _fft(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    return _single(node, fft.FFT(_shift(p.axes), p.n, p.inverse, p.real, p.norm), inputs, size)


# ----------------------------------------------------------------------------------------------
# Gathers and scatters


def _batch_index(size: int, rank: int, node: array) -> array:
    """arange(size) shaped (size, 1, ..., 1) with ``rank`` trailing ones."""
    idx = arange(size, dtype=dt.int32, stream=node._stream)
    return reshape(idx, (size,) + (1,) * rank, stream=node._stream)


@register(sh.Take)
def _take(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    src, idx = inputs
    axis = node._prim.axis
    s = node._stream
    if not flags[1]:
        return _single(node, sh.Take(axis + 1), inputs, size)
    if not flags[0]:
        # src[:axis] + (B,) + idx + src[axis+1:]: the batch axis sits at ``axis``.
        shape = src.shape[:axis] + idx.shape + src.shape[axis + 1:]
        out = make(sh.Take(axis), (src, idx), shape, node._dtype, s)
        return [moveaxis(out, axis, 0, stream=s)]
    # Both batched: a gather over (batch, axis) with a batch index broadcast against idx.
    bshape = idx.shape
    gathered_shape = bshape + src.shape[1:axis + 1] + src.shape[axis + 2:]
    prim = sh.Gather((0, axis + 1), bshape)
    out = make(prim, (src, _batch_index(size, idx.ndim - 1, node), idx), gathered_shape,
               node._dtype, s)
    if axis == 0:
        return [out]
    # (B, idx..., src[:axis], src[axis+1:]) -> (B, src[:axis], idx..., src[axis+1:])
    ni = idx.ndim - 1
    perm = ([0] + list(range(1 + ni, 1 + ni + axis)) + list(range(1, 1 + ni))
            + list(range(1 + ni + axis, out.ndim)))
    return [transpose(out, perm, stream=s)]


@register(sh.Gather)
def _gather(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    p = node._prim
    s = node._stream
    src = inputs[0]
    nb = len(p.bshape)
    if not any(flags[1:]):
        # Indices shared by the batch: gather the batched source, then move the batch axis
        # (the first of the remaining source axes, right after the index dims) to the front.
        shape = p.bshape + (size,) + tuple(
            e for d, e in enumerate(src.shape[1:]) if d not in p.axes)
        out = make(sh.Gather(_shift(p.axes), p.bshape), tuple(inputs), shape, node._dtype, s)
        return [moveaxis(out, nb, 0, stream=s)]
    src = _full_batch(src, flags[0], size, node)
    idx = [_lift(x, nb, node) if f else x for x, f in zip(inputs[1:], flags[1:])]
    prim = sh.Gather((0,) + _shift(p.axes), (size,) + tuple(p.bshape))
    return _single(node, prim, [src, _batch_index(size, nb, node)] + idx, size)


@register(sh.GatherAxis)
def _gather_axis(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """take_along_axis: both operands get the batch axis (broadcast where unbatched)."""
    s = node._stream
    src, idx = (_full_batch(x, f, size, node) for x, f in zip(inputs, flags))
    out_shape = (size,) + node._shape
    idx = broadcast_to(idx, out_shape, stream=s)
    src_shape = list(out_shape)
    src_shape[node._prim.axis + 1] = src.shape[node._prim.axis + 1]
    src = broadcast_to(src, tuple(src_shape), stream=s)
    return _single(node, sh.GatherAxis(node._prim.axis + 1), [src, idx], size)


@register(sh.ScatterAxis)
def _scatter_axis(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """put_along_axis: every operand gets the batch axis (a is copied anyway)."""
    a, idx, upd = (_full_batch(x, f, size, node) for x, f in zip(inputs, flags))
    upd = broadcast_to(upd, idx.shape, stream=node._stream)
    return _single(node, sh.ScatterAxis(node._prim.axis + 1), [a, idx, upd], size)


@register(sh.SliceUpdate)
def _slice_update(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """a[view] = upd: the view gains the batch axis; upd broadcasts against it."""
    a, upd = inputs
    a = _full_batch(a, flags[0], size, node)
    dst = node._prim.dst
    if flags[1]:
        upd = _lift(upd, len(dst.shape), node)
    return _single(node, sh.SliceUpdate(_batched_spec(dst, size)), [a, upd], size)


@register(sh.Scatter)
def _scatter(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """a[view][idx...] = upd (or combined): with shared indices the batch axis is one more
    destination axis; with batched indices a batch index array joins them."""
    p = node._prim
    s = node._stream
    a = _full_batch(inputs[0], flags[0], size, node)
    dst = _batched_spec(p.dst, size)
    nb = len(p.bshape)
    rest = tuple(e for d, e in enumerate(p.dst.shape) if d not in p.axes)
    upd_shape = tuple(p.bshape) + rest
    upd = inputs[1]
    if flags[1]:
        upd = broadcast_to(_lift(upd, len(upd_shape), node), (size,) + upd_shape, stream=s)
    else:
        upd = broadcast_to(upd, (size,) + upd_shape, stream=s)
    if not any(flags[2:]):
        upd = moveaxis(upd, 0, nb, stream=s)
        prim = sh.Scatter(dst, _shift(p.axes), p.bshape, p.op)
        return _single(node, prim, [a, upd] + list(inputs[2:]), size)
    idx = [_lift(x, nb, node) if f else x for x, f in zip(inputs[2:], flags[2:])]
    prim = sh.Scatter(dst, (0,) + _shift(p.axes), (size,) + tuple(p.bshape), p.op)
    return _single(node, prim, [a, upd, _batch_index(size, nb, node)] + idx, size)


@register(sh.DynamicSlice)
def _dynamic_slice(node: array, inputs: list, flags: list[bool], size: int
                   ) -> list[array] | None:
    if flags[1]:
        return None  # a start per entry: slices of different places
    return _single(node, sh.DynamicSlice(_shift(node._prim.axes)), inputs, size)


@register(sh.DynamicSliceUpdate)
def _dynamic_slice_update(node: array, inputs: list, flags: list[bool], size: int
                          ) -> list[array] | None:
    if flags[2]:
        return None
    a = _full_batch(inputs[0], flags[0], size, node)
    upd = inputs[1]
    upd = broadcast_to(upd if flags[1] else upd, (size,) + (upd.shape[1:] if flags[1]
                                                            else upd.shape), stream=node._stream)
    prim = sh.DynamicSliceUpdate(_shift(node._prim.axes))
    return _single(node, prim, [a, upd, inputs[2]], size)


@register(sorting.SearchSorted)
def _searchsorted(node: array, inputs: list, flags: list[bool], size: int) -> list[array] | None:
    """Values of any shape against one shared sorted sequence: the batch axis is one more
    value axis. A batched sequence (one per entry) loops."""
    if flags[0]:
        return None
    return _single(node, node._prim, inputs, size)


@register(sh.Trace)
def _trace(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    return _single(node, sh.Trace(_batched_spec(node._prim.diag, size)), inputs, size)


@register(ew.AllTrue)
def _all_true(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """Whether every element of each entry is true: an ``all`` over the entry's axes."""
    flat = reshape(inputs[0], (size, -1), stream=node._stream)
    return _single(node, reduce.Reduce("all", (1,), False), [flat], size)


@register(linalg.QRF, linalg.SVD, linalg.Inverse, linalg.Cholesky, linalg.Eigh, linalg.Eig)
def _linalg(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """Factorizations over the last two axes, any leading axes (numpy's LAPACK batches)."""
    if node._siblings is not None:
        return _multi(node, node._prim, inputs, size)
    return _single(node, node._prim, inputs, size)


@register(fast.ScaledDotProductAttention)
def _sdpa(node: array, inputs: list, flags: list[bool], size: int) -> list[array] | None:
    """Attention over (batch, heads, length, dim): the vmap axis folds into the batch axis
    (q, k, v and the mask; shared sinks only)."""
    p = node._prim
    main = 3 + (1 if p.mask_kind else 0)
    if p.has_sinks and flags[main]:
        return None
    s = node._stream
    folded = []
    for x, f in zip(inputs[:main], flags[:main]):
        x = _full_batch(x, f, size, node)
        folded.append(reshape(x, (size * x.shape[1],) + x.shape[2:], stream=s))
    shape = (size * node._shape[0],) + node._shape[1:]
    out = make(p, tuple(folded) + tuple(inputs[main:]), shape, node._dtype, s)
    return [reshape(out, (size,) + node._shape, stream=s)]


# ----------------------------------------------------------------------------------------------
# Autodiff's primitives: StopGradient is an identity cast; a custom_function/checkpoint node
# passes its first n_out inputs (the body's values, already batched through the body's graph),
# or, when the custom_function has a vmap rule, returns what the rule computes; mx.depends
# passes its inputs through.

from ..autodiff.custom import CustomCall, NoDerivative, StopGradient, replace_arrays  # noqa: E402
from . import ctrees  # noqa: E402

register(StopGradient)(_broadcasting)

_RULE_RESULT = "[custom vmap] Vmap function should return a tuple with 2 items."


@register(distributed.AllReduce)
def _all_reduce(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """Elementwise over the ranks: the whole batch in one collective (as MLX)."""
    return _single(node, node._prim, inputs, size)


@register(distributed.AllGather)
def _all_gather(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """Each entry gathered along its own first axis: the batch axis moves behind it for the
    one collective and back after."""
    x, s = inputs[0], node._stream
    front = reshape(x, (1, size), stream=s) if x.ndim == 1 else moveaxis(x, 0, 1, stream=s)
    shape = (node._shape[0],) + front.shape[1:]
    return [moveaxis(make(node._prim, (front,), shape, node._dtype, s), 1, 0, stream=s)]


@register(distributed.ReduceScatter)
def _reduce_scatter(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    raise ValueError(f"[Primitive::vmap] Not implemented for {node._prim.mlx_name}.")


@register(sh.Depends, NoDerivative)
def _depends(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    """mx.depends passes its first n_out inputs through (batched through their own graphs)."""
    n_out = node._prim.n_out
    return [_full_batch(x, f, size, node) for x, f in zip(inputs[:n_out], flags[:n_out])]


@register(CustomCall)
def _custom_call(node: array, inputs: list, flags: list[bool], size: int) -> list[array]:
    prim = node._prim
    n_out = prim.n_out
    if prim.vmap_fn is None:
        return [_full_batch(x, f, size, node) for x, f in zip(inputs[:n_out], flags[:n_out])]
    return _user_vmap_rule(node, inputs[n_out:], flags[n_out:], size)


def _user_vmap_rule(node: array, args: list, flags: list[bool], size: int) -> list[array]:
    """The outputs of a custom_function's vmap rule, each with its batch axis moved first."""
    prim = node._prim
    arg_tree = replace_arrays(prim.args, iter(args))
    axes_tree = replace_arrays(prim.args, iter([0 if f else None for f in flags]))
    one = len(prim.args) == 1
    result = prim.vmap_fn(arg_tree[0] if one else arg_tree, axes_tree[0] if one else axes_tree)
    if not isinstance(result, tuple) or len(result) != 2:
        raise ValueError(_RULE_RESULT)
    outputs, out_axes = result
    flat: list[array] = []
    axes: list[Any] = []

    def visit(leaf: Any, axis: Any) -> None:
        if not isinstance(leaf, array):
            raise RuntimeError("[custom vmap] The vmap function's outputs should be arrays "
                               f"(got {type(leaf).__name__}).")
        if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool)):
            raise dt._bad_cast(f"the output vectorization axis {axis!r} is not an int or None")
        flat.append(leaf)
        axes.append(axis)

    ctrees.visit_prefix(outputs, out_axes, visit)
    if len(flat) != prim.n_out:
        raise RuntimeError(f"[custom vmap] The vmap function returned {len(flat)} outputs; the "
                           f"function returns {prim.n_out}.")
    s = node._stream
    batched = []
    for out, axis in zip(flat, axes):
        if axis is None:  # no longer vectorized: the same value for every batch entry
            batched.append(broadcast_to(out, (size,) + out.shape, stream=s))
        else:
            batched.append(out if axis == 0 else moveaxis(out, axis, 0, stream=s))
    return batched
