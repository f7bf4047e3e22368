"""``mx.vmap``: vectorize a function over an axis of its inputs, with MLX's semantics.

How it works (the same two phases as MLX's ``vmap_trace``/``vmap_replace``):

1. Trace. Each vmapped input is replaced by a placeholder: a lazy node of the input's shape
   without the vmapped axis, whose primitive cannot be evaluated (evaluating anything that
   depends on it is MLX's ``[eval] ...`` ValueError, so ``print``/``.item()`` of traced values
   fail as in MLX). ``fun`` runs once on the placeholders and returns a lazy graph.
2. Replay. The graph is walked from the outputs, inputs first. A node none of whose inputs
   depends on a placeholder stays as it is (closed-over arrays, constants, random numbers drawn
   without a key: they are shared by every batch entry, as in MLX). A node with a batched input
   is rebuilt by its primitive's batching rule (``vmap_rules``), which returns the batched
   result with the batch axis first; primitives without a rule run once per batch entry and
   are stacked, so every primitive is supported.

A ``custom_function`` call with a vmap rule is one CustomCall node whose rule gets the batched
arguments; its body is not replayed. Outputs then get their batch axis moved to ``out_axes``;
an output that does not depend on a vmapped input is repeated along a new axis, as MLX does. Nested vmaps compose: the inner
replay builds ordinary lazy nodes on the outer placeholders.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes as dt
from ..autodiff import custom as _custom
from ..core import device as dev
from ..core.array import array, make
from ..core.creation import repeat
from ..core.shape import expand_dims, fmt_shape, moveaxis
from ..graph.primitive import OutSpec, Primitive
from . import ctrees
from .vmap_rules import apply_rule

__all__ = ["vmap"]

_EVAL_IN_TRANSFORM = ("[eval] Attempting to eval an array during function transformations like "
                      "compile or vmap is not allowed.")
_SIGNATURE = ("vmap(fun: Callable[P, R], in_axes: object = 0, out_axes: object = 0) -> "
              "Callable[P, R]")
_INT32 = (-(2**31), 2**31 - 1)


class Placeholder(Primitive):
    """A vmapped input while ``fun`` is traced: it has a shape and dtype but no value."""

    __slots__ = ("index",)
    name = "vmap_placeholder"
    gpu_kernel = True  # eval_gpu raises MLX's error itself (not strict mode's)

    def __init__(self, index: int) -> None:
        self.index = index

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        raise ValueError(_EVAL_IN_TRANSFORM)

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        raise ValueError(_EVAL_IN_TRANSFORM)


def _is_array(x: Any) -> bool:
    return isinstance(x, array)


def _axis_value(value: Any) -> int | None:
    """An axis given as a Python int (bool included, as nanobind's int caster) or None."""
    if value is None:
        return None
    if isinstance(value, int):
        if not _INT32[0] <= value <= _INT32[1]:
            raise dt._bad_cast(f"vmap axis {value} does not fit a C++ int")
        return int(value)
    raise ValueError("[vmap] axis must be int or None.")


def _flat_axes(tree: Any, axes: Any, output: bool) -> list[int]:
    """One axis per array leaf of ``tree`` (-1 for None), normalized and range-checked as MLX's
    binding does (an output axis may also be ndim, the new last axis)."""
    flat: list[int] = []
    saw_tuple = False

    def visit(leaf: Any, ax: Any) -> None:
        nonlocal saw_tuple
        if not isinstance(leaf, array):
            raise ValueError("[vmap] The arguments should contain only arrays")
        if isinstance(ax, tuple):
            saw_tuple = True
            if len(ax) != 1 or not (ax[0] is None or isinstance(ax[0], int)):
                raise ValueError("[vmap] axis must be int or None.")
            ax = ax[0]
        value = _axis_value(ax)
        if value is None:
            flat.append(-1)
            return
        ndim = leaf.ndim + output
        if value < 0:
            value += ndim
        if value < 0 or value >= ndim:
            kind = " output " if output else " "
            raise IndexError(f"[vmap] Invalid{kind}vectorization axis {value} for array with "
                             f"shape {fmt_shape(leaf.shape)}")
        flat.append(value)

    ctrees.visit_prefix(tree, axes, visit)
    if saw_tuple and not isinstance(tree, array):
        raise ValueError("[vmap] axis must be int or None.")
    return flat


def _topological(outputs: Sequence[array]) -> list[array]:
    """Every node reachable from ``outputs``, inputs before the nodes that read them."""
    order: list[array] = []
    seen: set[int] = set()
    work: list[tuple[array, bool]] = [(o, False) for o in reversed(outputs)]
    while work:
        node, expanded = work.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        work.append((node, True))
        inputs = node._inputs
        prim = node._prim
        if type(prim) is _custom.CustomCall and prim.vmap_fn is not None:
            inputs = inputs[prim.n_out:]  # its vmap rule replaces batching the body
        for inp in reversed(inputs):
            if id(inp) not in seen:
                work.append((inp, False))
    return order


def _replay(outputs: Sequence[array], batched_inputs: dict[int, array], size: int
            ) -> list[array | None]:
    """The batched value (batch axis first) of each output, or None where an output does not
    depend on a vmapped input. ``batched_inputs`` maps id(placeholder primitive) to the input
    with its vmapped axis moved first."""
    values: dict[int, array] = {}  # id(node) -> batched value (absent: unbatched)
    sibling_results: dict[int, list[array]] = {}
    order = _topological(outputs)
    for node in order:
        prim = node._prim
        if prim is None:
            continue
        if not node._inputs:
            found = batched_inputs.get(id(prim))
            if found is not None:
                values[id(node)] = found
            continue
        inputs = node._inputs
        flags = [id(i) in values for i in inputs]
        if not any(flags):
            continue
        sib = node._siblings
        if sib is not None:
            done = sibling_results.get(id(sib))
            if done is None:
                done = sibling_results[id(sib)] = apply_rule(
                    node, [values.get(id(i), i) for i in inputs], flags, size)
            for ref, value in zip(sib.refs, done):
                if ref() is node:
                    values[id(node)] = value
                    break
            continue
        values[id(node)] = apply_rule(node, [values.get(id(i), i) for i in inputs], flags,
                                      size)[0]
    # ``order`` keeps every traced node alive while ``values`` is keyed by ids.
    result = [values.get(id(o)) for o in outputs]
    del order
    return result


def _finish_output(traced: array, value: array | None, axis: int, size: int) -> array:
    """An output with its batch axis at ``axis`` (-1: out_axes None)."""
    if value is None:
        # No dependence on a vmapped input: repeat along a new axis (MLX; None appends it).
        out = expand_dims(traced, axis)
        return repeat(out, size, axis)
    if axis == -1:
        raise ValueError(f"[vmap] Axis -1 invalid for output with {value.ndim} dimensions.")
    return value if axis == 0 else moveaxis(value, 0, axis)


def _vmap_call(fun: Callable[..., Any], in_axes: Any, out_axes: Any, args: tuple) -> Any:
    inputs = ctrees.flatten(args, _is_array)
    flat_in = _flat_axes(args[0] if len(args) == 1 else args, in_axes, False)
    size = None
    for x, ax in zip(inputs, flat_in):
        if ax != -1:
            size = x.shape[ax]
    for x, ax in zip(inputs, flat_in):
        if ax != -1 and x.shape[ax] != size:
            raise ValueError(f"[vmap] Inconsistent axis sizes: {x.shape[ax]} and {size}.")

    stream = dev.resolve_stream(None)
    traced_inputs = []
    batched: dict[int, array] = {}
    prims = []
    for i, (x, ax) in enumerate(zip(inputs, flat_in)):
        if ax == -1:
            traced_inputs.append(x)
            continue
        prim = Placeholder(i)
        prims.append(prim)
        shape = x.shape[:ax] + x.shape[ax + 1:]
        traced_inputs.append(make(prim, (), shape, x.dtype, stream))
        batched[id(prim)] = x if ax == 0 else moveaxis(x, ax, 0)

    _custom.vmap_tracing += 1
    try:
        py_outputs = fun(*ctrees.unflatten(args, iter(traced_inputs), _is_array))
    finally:
        _custom.vmap_tracing -= 1
    outputs = ctrees.flatten(py_outputs, _is_array)
    flat_out = _flat_axes(py_outputs, out_axes, True)
    if size is None:
        raise ValueError("At least one of in_axes must be non-None.")
    values = _replay(outputs, batched, size)
    results = [_finish_output(o, v, ax, size) for o, v, ax in zip(outputs, values, flat_out)]
    del prims
    return ctrees.unflatten(py_outputs, iter(results), _is_array)


def vmap(fun: Callable[..., Any], in_axes: object = 0, out_axes: object = 0) -> Callable[..., Any]:
    """A function that maps ``fun`` over an axis of its inputs (``in_axes``) and stacks the
    results along ``out_axes``, without a Python loop over the batch.

    ``in_axes``/``out_axes``: an int, None (not vmapped; inside a tree only, as MLX) or a
    prefix tree of the arguments (of the single argument when there is one) or of the outputs.
    Keyword arguments are refused, as in MLX."""
    bad = None
    if not callable(fun):
        bad = _type_list((fun,), {})
    elif in_axes is None or out_axes is None:
        kw = {k: v for k, v in (("in_axes", in_axes), ("out_axes", out_axes)) if v is None}
        bad = _type_list((fun,), kw)
    if bad is not None:
        raise TypeError("vmap(): incompatible function arguments. The following argument types "
                        f"are supported:\n    1. {_SIGNATURE}\n\nInvoked with types: {bad}")

    @functools.wraps(fun)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError("[vmap] Keyword arguments are not supported.")
        return _vmap_call(fun, in_axes, out_axes, args)

    return vmapped


def _type_list(args: tuple, kwargs: dict) -> str:
    """nanobind's 'Invoked with types' text."""
    parts = [dt._type_name(a) for a in args]
    if kwargs:
        inner = ", ".join(f"{k}: {dt._type_name(v)}" for k, v in kwargs.items())
        parts.append(f"kwargs = {{ {inner} }}")
    return ", ".join(parts)
