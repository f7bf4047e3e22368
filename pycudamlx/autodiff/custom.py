"""Primitives that only exist for differentiation: stop_gradient and custom functions.

A call of a ``custom_function`` (with a custom rule) inside a gradient trace (or, with a vmap
rule, inside a vmap trace), or of a ``checkpoint``-ed function, becomes one ``CustomCall``
node: its outputs are the values ``fun`` computed (its first inputs, passed through without a
copy), its remaining inputs are the array leaves of the
positional arguments. The backward walk does not enter ``fun``'s own graph; the node's rule calls
the user's vjp, or (no vjp, and for checkpoint) differentiates ``fun`` again from the arguments,
recomputing its intermediates instead of keeping them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.array import array, make_multi
from ..graph.primitive import OutSpec, Primitive
from ..graph.primitives.elementwise import AsType
from ..graph.primitives.shape import Depends
from .registry import register

#: How many ``mx.vmap`` traces are running: inside one, a custom_function with a vmap rule
#: becomes a CustomCall node so that the replay can hand its arguments to the rule.
vmap_tracing = 0


class StopGradient(AsType):
    """The identity on values (the input's buffer, no copy: in-place updates never write into
    buffers); the backward walk never crosses it."""

    __slots__ = ()
    name = "stop_gradient"

    def grad_inputs(self, n: int) -> Sequence[int]:
        return ()

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list:
        return [inputs[0]]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list:
        return [inputs[0]]


def stop(x: array) -> array:
    """``stop_gradient(x)`` for index arrays the backward pass derives from primals."""
    from ..core.array import make

    return make(StopGradient(x._dtype), (x,), x._shape, x._dtype, x._stream or _default())


def _default() -> Any:
    from ..core import device as dev

    return dev.resolve_stream(None)


# ---- trees of arrays -----------------------------------------------------------------------


def flatten_arrays(tree: Any, out: list, strict: bool) -> None:
    """Append the array leaves of ``tree`` (lists, tuples, dicts) to ``out``; with ``strict``
    any other leaf is MLX's tree_flatten error."""
    if isinstance(tree, array):
        out.append(tree)
    elif isinstance(tree, (list, tuple)):
        for c in tree:
            flatten_arrays(c, out, strict)
    elif isinstance(tree, dict):
        for v in tree.values():
            flatten_arrays(v, out, strict)
    elif strict:
        raise ValueError("[tree_flatten] The argument should contain only arrays")


def replace_arrays(tree: Any, it: Any) -> Any:
    """``tree`` with each array leaf replaced by the next item of ``it``."""
    if isinstance(tree, array):
        return next(it)
    if isinstance(tree, (list, tuple)):
        children = [replace_arrays(c, it) for c in tree]
        if hasattr(tree, "_fields"):
            return type(tree)(*children)
        return type(tree)(children)
    if isinstance(tree, dict):
        return {k: replace_arrays(v, it) for k, v in tree.items()}
    return tree


# ---- custom calls ------------------------------------------------------------------------


class CustomCall(Primitive):
    """Outputs = inputs[:n_out] (fun's values); inputs[n_out:] = the arguments' arrays."""

    __slots__ = ("n_out", "fn", "args", "kwargs", "out_tree", "vjp_fn", "jvp_fn", "vmap_fn")
    name = "custom_function"
    gpu_kernel = True

    def __init__(self, n_out: int, fn: Callable, args: tuple, kwargs: dict, out_tree: Any,
                 vjp_fn: Callable | None, jvp_fn: Callable | None,
                 vmap_fn: Callable | None = None) -> None:
        self.n_out = n_out
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.out_tree = out_tree
        self.vjp_fn = vjp_fn
        self.jvp_fn = jvp_fn
        self.vmap_fn = vmap_fn

    def grad_inputs(self, n: int) -> Sequence[int]:
        return range(self.n_out, n)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list:
        return list(inputs[:self.n_out])

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list:
        return list(inputs[:self.n_out])


def custom_call(fn: Callable, args: tuple, kwargs: dict, vjp_fn: Callable | None,
                jvp_fn: Callable | None, vmap_fn: Callable | None = None) -> Any:
    """Run ``fn(*args, **kwargs)`` and wrap its array outputs in one CustomCall node."""
    result = fn(*args, **kwargs)
    outs: list[array] = []
    flatten_arrays(result, outs, strict=False)
    if not outs:
        return result
    flat_in: list[array] = []
    flatten_arrays(args, flat_in, strict=False)
    prim = CustomCall(len(outs), fn, args, kwargs, result, vjp_fn, jvp_fn, vmap_fn)
    from ..core import device as dev

    stream = outs[0]._stream or dev.resolve_stream(None)
    nodes = make_multi(prim, tuple(outs) + tuple(flat_in),
                       [(o._shape, o._dtype) for o in outs], stream)
    return replace_arrays(result, iter(nodes))


def _single_or_tuple(items: Sequence[Any]) -> Any:
    return items[0] if len(items) == 1 else tuple(items)


@register(CustomCall)
def _custom_call_vjp(prim: CustomCall, inputs: tuple, outs: list, cts: list,
                     wanted: list) -> list:
    from .. import core as mx
    from .engine import add_jvp_offset, jvp_mode, vjp_flat

    n_out = prim.n_out
    primal_arrays = list(inputs[n_out:])
    given = cts
    cts = [c if c is not None else mx.zeros(o_spec.shape, dtype=o_spec.dtype)
           for c, o_spec in zip(cts, inputs[:n_out])]
    args = replace_arrays(prim.args, iter(primal_arrays))
    result: list[Any]
    if jvp_mode() and prim.jvp_fn is not None:
        # jvp runs as the transpose of a vjp: transpose the user's (linear) jvp here.
        def tangent_fn(tangents: list) -> list:
            t_args = replace_arrays(prim.args, iter(tangents))
            r = prim.jvp_fn(_single_or_tuple(args), _single_or_tuple(t_args))
            flat: list = []
            flatten_arrays(r, flat, strict=False)
            return flat
        zeros = [mx.zeros_like(p) for p in primal_arrays]
        _, result = vjp_flat(tangent_fn, zeros, cts)
        # The transpose keeps the linear part only: jvp() adds the constant part
        # (the user's jvp at zero tangents) along each cotangent that reached an output.
        for ct, const in zip(given, tangent_fn(zeros)):
            if ct is not None and isinstance(const, array):
                add_jvp_offset(ct, const)
    elif prim.vjp_fn is not None and not jvp_mode():
        # Cotangents and outputs in the structure fun returned, as MLX passes them.
        ct_tree = replace_arrays(prim.out_tree, iter(cts))
        out_tree = replace_arrays(prim.out_tree, iter(inputs[:n_out]))
        r = prim.vjp_fn(_single_or_tuple(args) if len(prim.args) != 1 else args[0],
                        ct_tree, out_tree, **prim.kwargs)
        if len(prim.args) == 1:
            one = isinstance(r, (tuple, list)) and len(r) == 1 and isinstance(prim.args[0],
                                                                               array)
            r = tuple(r) if one else (r,)
        elif not isinstance(r, (tuple, list)):
            r = (r,)
        result = []
        for a, g in zip(prim.args, r):
            flat_a: list = []
            flatten_arrays(a, flat_a, strict=False)
            if g is None:
                result.extend([None] * len(flat_a))
                continue
            flat_g: list = []
            flatten_arrays(g, flat_g, strict=False)
            result.extend(flat_g + [None] * (len(flat_a) - len(flat_g)))
        result += [None] * (len(primal_arrays) - len(result))
    else:
        # The default: differentiate fun again from its arguments (recomputing it).
        def fun_flat(leaves: list) -> list:
            r = prim.fn(*replace_arrays(prim.args, iter(leaves)), **prim.kwargs)
            flat: list = []
            flatten_arrays(r, flat, strict=False)
            return flat
        _, result = vjp_flat(fun_flat, primal_arrays, cts)
    return [None] * n_out + list(result[:len(primal_arrays)])



# ---- operands without a derivative ---------------------------------------------------------


class NoDerivative(Depends):
    """Passes its first input (an op's result) through; the inputs after it are operands of that
    op that MLX cannot differentiate with respect to (a quantized matrix, its fp8 scales). Its
    rule raises MLX's error when a gradient (``vjp_blocked``) or a jvp (``jvp_blocked``) is
    asked for one of them, instead of a silent zero gradient through the unpacking ops. Each
    entry is ``(operand index, exception class, message)``, checked in order."""

    __slots__ = ("vjp_blocked", "jvp_blocked")
    name = "no_derivative"

    def __init__(self, vjp_blocked: tuple, jvp_blocked: tuple) -> None:
        super().__init__(1)
        self.vjp_blocked = vjp_blocked
        self.jvp_blocked = jvp_blocked

    def grad_inputs(self, n: int) -> Sequence[int]:
        return range(n)  # every operand, so that the walk knows which ones are differentiated


Blocked = tuple  # (operand index, exception class, message)


def guard_operands(result: array, operands: Sequence[array | None],
                   vjp_blocked: Sequence[Blocked], jvp_blocked: Sequence[Blocked]) -> array:
    """``result`` marked with the operands it may not be differentiated for (indices into
    ``operands``); a no-op outside gradient traces."""
    from . import engine
    from ..core.array import make

    if engine._depth == 0:
        return result
    present: list[array] = []
    index: dict[int, int] = {}
    for i, o in enumerate(operands):
        if o is not None:
            index[i] = len(present)
            present.append(o)

    def remap(entries: Sequence[Blocked]) -> tuple:
        return tuple((index[i], exc, msg) for i, exc, msg in entries if i in index)

    prim = NoDerivative(remap(vjp_blocked), remap(jvp_blocked))
    return make(prim, (result, *present), result._shape, result._dtype, result._stream)
