"""MLX's gradient transforms: grad, value_and_grad, vjp, jvp, custom_function, checkpoint.

``fun`` runs on fresh leaf nodes of the differentiated arguments (arrays or trees of arrays);
the graph it builds is walked backwards by ``pycudamlx.autodiff.engine`` with one VJP rule per
primitive, and the result is a lazy graph like any other (it runs where the forward ran, and
can be differentiated again). ``jvp`` is derived from two reverse passes: the vjp is linear in
its cotangent, so the vjp of the vjp function (with respect to the cotangent) is the jvp.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .. import dtypes as dt
from ..autodiff import custom as _custom
from ..autodiff import engine
from ..autodiff.custom import custom_call, flatten_arrays, replace_arrays
from .array import array
from .shape import fmt_shape

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "custom_function", "checkpoint"]

_GRAD_SIG = ("{name}(fun: Callable[P, R], argnums: int | Sequence[int] | None = None, argnames: "
             "str | Sequence[str] = []) -> Callable[P, {ret}]")
_VJP_SIG = ("vjp(fun: Callable, primals: list[array], cotangents: list[array]) -> "
            "tuple[list[array], list[array]]")
_JVP_SIG = ("jvp(fun: Callable, primals: list[array], tangents: list[array]) -> "
            "tuple[list[array], list[array]]")


def _type_error(sig: str, args: tuple, kwargs: dict) -> TypeError:
    name = sig.split("(", 1)[0]
    invoked = ", ".join(dt._type_name(a) for a in args)
    if kwargs:
        kw = ", ".join(f"{k}: {dt._type_name(v)}" for k, v in kwargs.items())
        invoked = f"{invoked}, kwargs = {{ {kw} }}" if invoked else f"kwargs = {{ {kw} }}"
    return TypeError(f"{name}(): incompatible function arguments. The following argument types "
                     f"are supported:\n    1. {sig}\n\nInvoked with types: {invoked}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) or (hasattr(x, "__index__") and not isinstance(x, (float, array)))


def _grad_args(name: str, fun: Any, argnums: Any, argnames: Any) -> tuple[list[int], list[str]]:
    sig = _GRAD_SIG.format(name=name, ret="Any" if name == "grad" else "tuple[R, Any]")
    kwargs = {}
    if argnums is not None:
        kwargs["argnums"] = argnums
    if argnames != []:
        kwargs["argnames"] = argnames
    if not callable(fun):
        raise _type_error(sig, (fun,), kwargs)
    if argnums is None:
        nums: list[int] | None = None
    elif _is_int(argnums):
        nums = [int(argnums)]
    elif isinstance(argnums, (list, tuple)) and all(_is_int(a) for a in argnums):
        nums = [int(a) for a in argnums]
    else:
        raise _type_error(sig, (fun,), kwargs)
    if isinstance(argnames, str):
        names = [argnames]
    elif isinstance(argnames, (list, tuple)) and all(isinstance(a, str) for a in argnames):
        names = list(argnames)
    else:
        raise _type_error(sig, (fun,), kwargs)
    if nums is None:
        nums = [] if names else [0]
    if not nums and not names:
        raise ValueError(f"[{name}] Gradient wrt no argument requested")
    for n in nums:
        if n < 0:
            raise ValueError(f"[{name}] Can't compute the gradient of negative argument index "
                             f"{n}")
    seen = set()
    for n in nums:
        if n in seen:
            raise ValueError(f"[{name}] Duplicate argument index {n} is not allowed.")
        seen.add(n)
    return nums, names


def _shape_mismatch(out_shape: tuple, ct_shape: tuple, grad_hint: bool) -> ValueError:
    msg = (f"[vjp] Output shape {fmt_shape(out_shape)} does not match cotangent shape "
           f"{fmt_shape(ct_shape)}.")
    if grad_hint:
        msg += " If you are using grad your function must return a scalar."
    return ValueError(msg)


def _value_and_grad(name: str, fun: Callable, nums: list[int], names: list[str]
                    ) -> Callable:
    def run(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        for n in nums:
            if n >= len(args):
                raise ValueError(f"[{name}] Can't compute the gradient of argument index {n} "
                                 f"because the function is called with only {len(args)} "
                                 "positional arguments.")
        for k in names:
            if k not in kwargs:
                have = "".join(f"{key}," for key in kwargs)
                raise ValueError(f"[{name}] Can't compute the gradient of keyword argument "
                                 f"'{k}' because the function is called with the following "
                                 f"keyword arguments {{{have}}}")
        flat: list[array] = []
        for n in nums:
            flatten_arrays(args[n], flat, strict=True)
        for k in names:
            flatten_arrays(kwargs[k], flat, strict=True)
        if not flat:  # MLX's message names grad for value_and_grad too
            raise ValueError("[grad] Must specify at least one argument.")
        with engine.Trace() as tape:
            leaves = [engine.leaf(x) for x in flat]
            it = iter(leaves)
            args2 = list(args)
            swapped: list = []
            for n in nums:
                args2[n] = _swap_in(args[n], it, swapped)
            kwargs2 = dict(kwargs)
            for k in names:
                kwargs2[k] = _swap_in(kwargs[k], it, swapped)
            try:
                value = fun(*args2, **kwargs2)
            finally:
                _swap_back(swapped)
            if isinstance(value, array):
                loss = value
            elif name == "value_and_grad" and isinstance(value, tuple) and value and \
                    isinstance(value[0], array):
                loss = value[0]
            elif name == "grad":
                raise ValueError("[grad] The return value of the function whose gradient we "
                                 "want to compute should be a scalar array; but "
                                 f"{dt._type_name(value)} was returned.")
            else:
                raise ValueError("[value_and_grad] The return value of the function whose "
                                 "gradient we want to compute should be either a scalar array "
                                 "or a tuple with the first value being a scalar array "
                                 "(Union[array, tuple[array, Any, ...]]); but "
                                 f"{dt._type_name(value)} was returned.")
            if loss._shape != ():
                raise _shape_mismatch(loss._shape, (), loss.size == 1)
            seed = _ones_like(loss)
            grads = engine.backward([loss], [seed], engine.resolve_leaves(leaves), tape)
        grads = [g if g is not None else engine.zeros_for(x) for g, x in zip(grads, flat)]
        it = iter(grads)
        pos = [replace_arrays(args[n], it) for n in nums]
        kw = {k: replace_arrays(kwargs[k], it) for k in names}
        if not pos:
            positional: Any = None
        elif len(pos) == 1:
            positional = pos[0]
        else:
            positional = tuple(pos)
        return value, ((positional, kw) if names else positional)

    return run


def _swap_in(tree: Any, it: Any, swapped: list) -> Any:
    """``tree`` with its array leaves replaced by the next items of ``it``. Like MLX, lists and
    dicts are updated in place (the function sees the caller's containers, and what it stores
    in them stays); ``_swap_back`` then restores every leaf the function left untouched."""
    if isinstance(tree, array):
        return next(it)
    if isinstance(tree, list):
        for i, c in enumerate(tree):
            new = _swap_in(c, it, swapped)
            if new is not c:
                tree[i] = new
                swapped.append((tree, i, c, new))
        return tree
    if isinstance(tree, dict):
        for k, c in list(tree.items()):
            new = _swap_in(c, it, swapped)
            if new is not c:
                tree[k] = new
                swapped.append((tree, k, c, new))
        return tree
    if isinstance(tree, tuple):
        children = [_swap_in(c, it, swapped) for c in tree]
        return type(tree)(*children) if hasattr(tree, "_fields") else type(tree)(children)
    return tree


def _swap_back(swapped: list) -> None:
    for container, key, original, new in reversed(swapped):
        try:
            current = container[key]
        except (IndexError, KeyError):
            continue
        # A leaf updated in place (``p["w"][0] = v``) stays, as in MLX.
        if current is new and (not isinstance(new, array) or new._prim is engine.LEAF):
            container[key] = original


def _ones_like(x: array) -> array:
    from .creation import ones

    return ones(x._shape, dtype=x._dtype)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] | None = None,
                   argnames: str | Sequence[str] = []) -> Callable:  # noqa: B006 - MLX's default
    """A function returning ``(fun(*args), gradient)``: ``fun`` returns a scalar array, or a
    tuple whose first element is one (the rest is passed through)."""
    nums, names = _grad_args("value_and_grad", fun, argnums, argnames)
    run = _value_and_grad("value_and_grad", fun, nums, names)

    @functools.wraps(fun)
    def value_and_grad_fn(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return run(*args, **kwargs)

    return value_and_grad_fn


def grad(fun: Callable, argnums: int | Sequence[int] | None = None,
         argnames: str | Sequence[str] = []) -> Callable:  # noqa: B006 - MLX's default
    """A function returning the gradient of ``fun`` (which returns a scalar array) with
    respect to the positional arguments ``argnums`` (default 0) and keyword ``argnames``."""
    nums, names = _grad_args("grad", fun, argnums, argnames)
    run = _value_and_grad("grad", fun, nums, names)

    @functools.wraps(fun)
    def grad_fn(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs)[1]

    return grad_fn


def _array_list(x: Any, sig: str, fun: Any, primals: Any, other: Any) -> list[array]:
    if isinstance(x, array):
        return list(x)  # MLX reads an array as the sequence of its rows
    if not isinstance(x, (list, tuple)) or not all(isinstance(a, array) for a in x):
        raise _type_error(sig, (fun, primals, other), {})
    return list(x)


def _outputs(value: Any, name: str) -> list[array]:
    if isinstance(value, array):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, array) for v in value):
        return list(value)
    raise dt._bad_cast(f"[{name}] the function must return an array or a list/tuple of "
                       f"arrays, not {dt._type_name(value)}")


def vjp(fun: Callable, primals: Sequence[array], cotangents: Sequence[array]
        ) -> tuple[list[array], list[array]]:
    """``(fun(*primals), cotangents @ Jacobian)``: the outputs and one vector-Jacobian product
    per primal (zeros where an output does not depend on it)."""
    if not callable(fun):
        raise _type_error(_VJP_SIG, (fun, primals, cotangents), {})
    ps = _array_list(primals, _VJP_SIG, fun, primals, cotangents)
    cs = _array_list(cotangents, _VJP_SIG, fun, primals, cotangents)

    def flat_fun(leaves: list[array]) -> list[array]:
        return _outputs(fun(*leaves), "vjp")

    def seeds(outs: list[array]) -> list[array]:
        # MLX refuses too few cotangents and ignores the extra ones (unchecked, any shape).
        if len(outs) > len(cs):
            raise ValueError(f"[vjp] Number of outputs to compute gradients for ({len(outs)}) "
                             f"does not match number of cotangents ({len(cs)}).")
        fixed = []
        for o, c in zip(outs, cs):
            if o._shape != c._shape:
                raise _shape_mismatch(o._shape, c._shape, False)
            fixed.append(c if c._dtype is o._dtype else c.astype(o._dtype))
        return fixed

    outs, grads = engine.vjp_flat(flat_fun, ps, seeds)
    return outs, [g if g is not None else engine.zeros_for(p) for g, p in zip(grads, ps)]


def jvp(fun: Callable, primals: Sequence[array], tangents: Sequence[array]
        ) -> tuple[list[array], list[array]]:
    """``(fun(*primals), Jacobian @ tangents)``: computed as the transpose of the vjp (two
    reverse passes), so every primitive with a VJP rule has a JVP."""
    if not callable(fun):
        raise _type_error(_JVP_SIG, (fun, primals, tangents), {})
    ps = _array_list(primals, _JVP_SIG, fun, primals, tangents)
    ts = _array_list(tangents, _JVP_SIG, fun, primals, tangents)
    if len(ps) != len(ts):
        raise ValueError("[jvp] Number of inputs does not match number of tangents.")
    for p, t in zip(ps, ts):
        if p._shape != t._shape:
            raise ValueError("[jvp] Input shape does not match shape of tangent.")
    from .creation import zeros

    with engine.Trace() as tape:
        leaves = [engine.leaf(p) for p in ps]
        outs = _outputs(fun(*leaves), "jvp")
        us = [engine.leaf(zeros(o._shape, dtype=o._dtype)) for o in outs]
        with engine.JvpMode() as offsets:
            vjps = engine.backward(outs, us, engine.resolve_leaves(leaves), tape)
        pairs = [(g, t) for g, t in zip(vjps, ts) if g is not None] + offsets
        if pairs:
            gs = [g for g, _ in pairs]
            cts = [t if t._dtype is g._dtype else t.astype(g._dtype) for g, t in pairs]
            jvps = engine.backward(gs, cts, us, tape)
        else:
            jvps = [None] * len(us)
        jvps = [j if j is not None else engine.zeros_for(o) for j, o in zip(jvps, outs)]
        jvps = _tangent_dtypes(jvps, outs, leaves, ts, tape)
    return outs, jvps


#: Non-float elementwise outputs whose MLX tangent has the output's own dtype (bool zeros).
_OWN_DTYPE = frozenset(("logical_and", "logical_or", "isinf", "isfinite"))
#: Float ops with zero derivative, whose MLX tangent is ``zeros_like(primal)``.
_ZERO_OF_PRIMAL = frozenset(("floor", "ceil", "round", "sign"))
_tangent_through: frozenset[type] | None = None


def _through_kinds() -> frozenset[type]:
    """Primitives passing their inputs' tangent dtype through (MLX applies them to the tangent):
    reductions, scans, reshapes and views, copies, concatenation and splits, sorts."""
    global _tangent_through
    if _tangent_through is None:
        from ..graph.primitives import shape as S
        from ..graph.primitives.elementwise import AllTrue
        from ..graph.primitives.reduce import Reduce, Scan
        from ..graph.primitives.sorting import Sort
        from .array import _Alias

        _tangent_through = frozenset((Reduce, Scan, S.View, S.Reshape, S.Copy, S.Contiguous,
                                      S.Assemble, S.Split, AllTrue, Sort, _Alias))
    return _tangent_through


def _tangent_dtypes(jvps: list, outs: list, leaves: list, tangents: list, tape: dict) -> list:
    """Each output tangent in the dtype MLX's forward mode gives it.

    The tangents here come from transposing the vjp, in the primals' dtypes. MLX runs forward
    mode primitive by primitive instead, so its tangent dtypes follow other rules: ``astype``
    casts the tangent (``x.astype(float16) * 2`` has a float16 tangent even for a float32 one),
    a comparison gives zeros of its inputs' tangents' dtype (``x > 0`` has float32 zeros, not
    bool), reductions, reshapes and sorts pass a tangent's dtype on, float ops promote their
    dtype with their inputs' tangents' (a float32 tangent through float16 math stays float32),
    arg-reductions and the logical and/or give their own dtype. This walks the traced graph
    once (iteratively: traced functions can be thousands of ops deep) with those rules and
    casts each output tangent to the result.
    """
    from ..graph.primitives.elementwise import AsType, Binary, Unary, Where

    through_kinds = _through_kinds()
    # id(node) -> tangent dtype, None where the node does not depend on the inputs
    known: dict[int, Any] = {id(leaf): t._dtype for leaf, t in zip(leaves, tangents)}

    def rule(n: array, prim: Any, inputs: tuple) -> Any:
        kind = type(prim)
        through = _promoted([known[id(i)] for i in (inputs[1:] if kind is Where else inputs)])
        own = n._dtype
        if through is None:
            return None
        if kind is AsType:
            return own
        if kind is Binary or kind is Unary:
            if prim.name in _ZERO_OF_PRIMAL:
                return own
            if not dt.issubdtype(own, dt.inexact):
                return own if prim.name in _OWN_DTYPE else through
        elif kind in through_kinds and not getattr(prim, "indices", False):
            return through
        elif not dt.issubdtype(own, dt.inexact):
            return own  # argmax, argsort, ...: their own (integer) dtype
        # float math: its dtype promoted with the tangents' (a real op keeps a complex tangent out)
        return own if (own.kind != "c" and through.kind == "c") else dt.promote_types(own, through)

    for o in outs:
        stack = [(o, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in known:
                continue
            info = engine._node_info(n, tape)
            if info is None:
                known[id(n)] = None
            elif expanded:
                known[id(n)] = rule(n, info[0], info[1])
            else:
                stack.append((n, True))
                stack.extend((i, False) for i in info[1] if id(i) not in known)

    out = []
    for j, o in zip(jvps, outs):
        want = known[id(o)]
        if want is not None and want is not j._dtype:
            j = j.astype(want)
        out.append(j)
    return out


def _promoted(dtypes: list) -> Any:
    present = [d for d in dtypes if d is not None]
    if not present:
        return None
    result = present[0]
    for d in present[1:]:
        result = dt.promote_types(result, d)
    return result


class custom_function:  # noqa: N801 - MLX's name
    """A function with custom vjp/jvp/vmap rules (MLX's ``mx.custom_function`` decorator).

    Called inside a gradient transform, the custom vjp (or jvp) replaces differentiation of the
    body; arrays the body captures are constants. Called inside ``mx.vmap`` with batched
    arguments, the vmap rule replaces batching the body."""

    def __init__(self, f: Callable) -> None:
        if not callable(f):
            raise _type_error("__init__(self, f: Callable)", (self, f), {})
        self.fun = f
        self.vjp_fn: Callable | None = None
        self.jvp_fn: Callable | None = None
        self.vmap_fn: Callable | None = None
        functools.update_wrapper(self, f)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.vmap_fn is not None and _custom.vmap_tracing:
            if kwargs:
                raise ValueError("[custom vmap] Function should only accept positional arguments")
            return custom_call(self.fun, args, kwargs, self.vjp_fn, self.jvp_fn, self.vmap_fn)
        if engine._depth == 0 or (self.vjp_fn is None and self.jvp_fn is None):
            return self.fun(*args, **kwargs)
        return custom_call(self.fun, args, kwargs, self.vjp_fn, self.jvp_fn)

    def vjp(self, f: Callable) -> custom_function:
        """Define a custom vjp ``f(primals, cotangents, outputs)`` for the wrapped function."""
        if not callable(f):
            raise _type_error("vjp(self, f: Callable)", (self, f), {})
        self.vjp_fn = f
        return self

    def jvp(self, f: Callable) -> custom_function:
        """Define a custom jvp ``f(primals, tangents)`` for the wrapped function."""
        if not callable(f):
            raise _type_error("jvp(self, f: Callable)", (self, f), {})
        self.jvp_fn = f
        return self

    def vmap(self, f: Callable) -> custom_function:
        """Define a custom vectorization ``f(inputs, axes) -> (outputs, out_axes)``: ``inputs``
        are the positional arguments (one as itself, several as a tuple) with the batch axis
        first, ``axes`` the same tree holding 0 or None (not batched)."""
        if not callable(f):
            raise _type_error("vmap(self, f: Callable)", (self, f), {})
        self.vmap_fn = f
        return self


def checkpoint(fun: Callable) -> Callable:
    """``fun`` whose intermediates are recomputed in the backward pass instead of kept
    (gradient checkpointing with respect to its arguments)."""
    if not callable(fun):
        raise _type_error("checkpoint(fun: Callable[P, R]) -> Callable[P, R]", (fun,), {})

    @functools.wraps(fun)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        if engine._depth == 0:
            return fun(*args, **kwargs)
        return custom_call(fun, args, kwargs, None, None)

    return checkpointed

