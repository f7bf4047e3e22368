"""Function transforms: mx.compile and stop_gradient.

``mx.compile`` returns a function that computes what ``fun`` computes, with MLX's trace cache
(``_compile_replay``): the body runs on the first call of each trace signature (argument
shapes, dtypes, tree structure, constants; captured ``inputs``' shapes; the default stream) and
later calls rebuild the recorded lazy graph on the new arrays, so Python side effects happen once
per trace and arrays the body reads outside its arguments are trace constants, as in MLX. No
graph fusion: the ops are lazy already. Random numbers drawn inside a compiled function that
does not capture ``mx.random.state`` are constants of the trace (the global key advances at the
trace only); capturing the key (or a transform around the call) runs the body every call.
``enable_compile``/``disable_compile`` switch it off and on. ``stop_gradient`` is the identity
on values.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .. import dtypes as dt
from . import _compile_replay as _replay
from . import _compile_trace
from . import device as dev
from ._nanobind import SIGNATURES
from .array import array, make, make_multi

__all__ = ["compile", "depends", "disable_compile", "enable_compile", "stop_gradient"]

_enabled = True


def compile(fun: Callable[..., Any], inputs: object | None = None, outputs: object | None = None,
            shapeless: bool = False) -> Callable[..., Any]:
    """A function producing the same outputs as ``fun``, tracing it once per signature.

    ``inputs`` arrays are inputs of the trace, ``outputs`` arrays are written back after each
    replayed call. Random draws repeat between calls of one trace signature unless
    ``mx.random.state`` is captured, as in MLX. ``shapeless``: as MLX, one trace per ndim is
    rerun at other shapes where every step's output shape follows from its inputs'
    (_shape_rules); a step without such a rule (a slice, a reshape) runs the body again."""
    if not callable(fun) or not isinstance(shapeless, bool):
        sig = ("compile(fun: Callable[P, R], inputs: object | None = None, outputs: object | "
               "None = None, shapeless: bool = False) -> Callable[P, R]")
        if callable(fun):  # shapeless given as an int etc. (by keyword, as programs write it)
            raise TypeError(f"{str(dt._incompatible_arguments(sig, fun))}, kwargs = "
                            f"{{ shapeless: {dt._type_name(shapeless)} }}")
        raise dt._incompatible_arguments(sig, fun)
    from . import random as rnd

    key_state = rnd.state
    random_captured = _holds(inputs, key_state) or _holds(outputs, key_state)
    #: MLX's trace cache, reduced to what is observable here: per trace signature, the global
    #: key the trace drew its random numbers from.
    traced: dict[tuple, Any] = {}
    #: Recorded traces (_compile_replay), per exact signature (shapes even when shapeless:
    #: a recording is rebuilt at its own shapes only). Shared by every compiled wrapper of
    #: the same function while one lives, as MLX's cache (keyed by the function's id).
    recordings = _replay.shared_cache(fun)
    can_record = _replay.writable(outputs)

    @functools.wraps(fun)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        if not _enabled:
            return fun(*args, **kwargs)
        keep = _replay.first_call_done()
        signature: list = []
        _argument_signature(args, shapeless, signature)
        if kwargs:
            signature.append(tuple(kwargs))
            _argument_signature(tuple(kwargs.values()), shapeless, signature)
        # What MLX's trace sees as inputs: evaluating anything that depends on them inside
        # ``fun`` is MLX's ValueError.
        leaves: list[array] = _replay.array_leaves((args, kwargs, inputs), [])
        if can_record and not _compile_trace.active and not _transform_active():
            state_sig: list = []
            _argument_signature(inputs, False, state_sig, state=True)
            first: dict[int, int] = {}
            replay_key = (tuple(signature), tuple(state_sig), dev.resolve_stream(None),
                          tuple(a._shape for a in leaves) if shapeless else None,
                          tuple(first.setdefault(id(a), i) for i, a in enumerate(leaves)))
            rec = recordings.get(replay_key)
            if rec is not None and (not rec.state_refs or len(
                    _replay.array_leaves(outputs, [])) == len(rec.state_refs)):
                return _replay.replay(rec, leaves, outputs)
            if shapeless:  # MLX traces once per ndim: rerun that trace at these shapes
                rec = recordings.get(_shapeless_key(replay_key))
                if rec is not None and not rec.state_refs:
                    out = _replay.replay_at_new_shapes(rec, leaves)
                    if out is not _replay.NO_RULE:
                        return out
            return _record_call(fun, args, kwargs, leaves, inputs, outputs, shapeless, signature,
                                traced, key_state, recordings, replay_key, keep,
                                random_captured)
        _compile_trace.enter(leaves)
        try:
            if random_captured:  # the key is an input: fresh draws each call, as run eagerly
                return fun(*args, **kwargs)
            _argument_signature(inputs, shapeless, signature, state=True)
            sig = tuple(signature)
            words = traced.get(sig)
            if words is None:  # a new trace draws from (and advances) the global key
                words = key_state._words
                out = fun(*args, **kwargs)
                traced[sig] = words
                return out
            current = key_state._words
            key_state._set(words)
            try:
                return fun(*args, **kwargs)
            finally:
                key_state._set(current)
        finally:
            _compile_trace.leave()

    recordings_owner = _replay.CacheUser(fun)
    compiled.__dict__["_recordings_user"] = recordings_owner  # released with the wrapper
    return compiled


def _shapeless_key(replay_key: tuple) -> tuple:
    """A shapeless trace's key without its exact leaf shapes (the signature has the ndims)."""
    return ("shapeless",) + replay_key[:3] + replay_key[4:]


def _transform_active() -> bool:
    """Whether a grad/vjp/jvp/vmap is tracing (a compiled call inside runs its body)."""
    from ..autodiff import custom as _custom
    from ..autodiff import engine

    return engine._depth > 0 or _custom.vmap_tracing > 0


def _record_call(fun: Callable[..., Any], args: tuple, kwargs: dict, leaves: list, inputs: Any,
                 outputs: Any,
                 shapeless: bool, signature: list, traced: dict, key_state: Any,
                 recordings: dict, replay_key: tuple, keep: bool,
                 random_captured: bool = False) -> Any:
    """Run ``fun`` as a trace (eagerly, on the real arguments) and record its graph for later
    calls with ``replay_key`` (_compile_replay), unless the body did something a replay could
    not repeat (or ``keep`` is False: MLX's first compiled call of a process traces again at
    the next call)."""
    # The body gets stand-ins for its array arguments (MLX's tracers): in-place updates inside
    # do not reach the caller's arrays, and a closure reading an argument array is told apart.
    args = tuple(_replay.stand_in(a) for a in args)
    kwargs = {k: _replay.stand_in(v) for k, v in kwargs.items()}
    originals = [a for a in leaves if isinstance(a, array)]
    before = _replay.array_leaves((args, kwargs, inputs), [])
    nodes = [(a._prim, a._inputs, a._data) for a in before]
    _compile_trace.enter(before)
    keys: list = []
    try:
        with _replay.KeepEvaluated() as tape:
            _argument_signature(inputs, shapeless, signature, state=True)
            sig = tuple(signature)
            words = traced.get(sig)
            if random_captured:  # the key is an input: fresh draws each call (logged, so that
                key_state._log = keys  # a replay draws its own keys in their place)
                try:
                    out = fun(*args, **kwargs)
                finally:
                    key_state._log = None
            elif words is None:  # a new trace draws from (and advances) the global key
                traced[sig] = key_state._words
                out = fun(*args, **kwargs)
            else:
                current = key_state._words
                key_state._set(words)
                try:
                    out = fun(*args, **kwargs)
                finally:
                    key_state._set(current)
            after_args = _replay.array_leaves((args, kwargs), [])
            n_args = len(after_args)
            unchanged = (len(before) >= n_args and all(
                a is b for a, b in zip(after_args, before)) and all(
                a._prim is p and a._inputs is i and a._data is d
                for a, (p, i, d) in zip(before, nodes)))
            if unchanged and outputs is None and inputs is not None:
                unchanged = all(a is b for a, b in zip(
                    _replay.array_leaves(inputs, []), before[n_args:]))
            if unchanged:
                state_out = _replay.array_leaves(outputs, []) if outputs is not None else []
                rec = _replay.record(before, out, state_out, tape,
                                     {id(a) for a, b in zip(originals, before) if a is not b},
                                     keys)
                if rec is not None and keep:
                    recordings[replay_key] = rec
                    if shapeless:  # the trace other shapes of this ndim replay
                        recordings.setdefault(_shapeless_key(replay_key), rec)
    finally:
        _compile_trace.leave()
    return out


_CONSTANTS = "floats, ints, strings, or None"


def _argument_signature(tree: Any, shapeless: bool, out: list, state: bool = False) -> None:
    """Append what MLX keys a trace on: array shapes (ndim when shapeless) and dtypes, the
    structure of lists/tuples (alike)/dicts, and constants by value (bools count as ints);
    other leaves are MLX's ValueError. For the captured ``inputs`` (``state``) only the arrays
    and the structure count, and other leaves are ignored, as MLX does."""
    if isinstance(tree, array):
        out.append((len(tree._shape) if shapeless else tree._shape, tree._dtype))
    elif isinstance(tree, (list, tuple)):
        out.append(len(tree))
        for x in tree:
            _argument_signature(x, shapeless, out, state)
    elif isinstance(tree, dict):
        out.append(tuple(tree))
        for x in tree.values():
            _argument_signature(x, shapeless, out, state)
    elif state:
        pass
    elif tree is None or isinstance(tree, str):
        out.append(tree)
    elif isinstance(tree, int):
        out.append((int, int(tree)))
    elif isinstance(tree, float):
        out.append((float, tree))
    else:
        raise ValueError("[compile] Function arguments must be trees of arrays or constants "
                         f"({_CONSTANTS}), but received type {type(tree).__name__}.")


def _holds(tree: Any, target: object) -> bool:
    """Whether ``target`` is ``tree`` or sits in its lists, tuples and dicts."""
    stack = [tree]
    while stack:
        x = stack.pop()
        if x is target:
            return True
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return False


def disable_compile() -> None:
    """Globally disable compilation: compiled functions run their body at every call."""
    global _enabled
    _enabled = False


def enable_compile() -> None:
    """Globally enable compilation (the trace cache)."""
    global _enabled
    _enabled = True


def stop_gradient(a: array, /, *, stream: Any = None) -> array:
    """The identity on values that gradients do not cross (a new array: later in-place updates
    of ``a`` do not reach it)."""
    from ..autodiff.custom import StopGradient

    if not isinstance(a, array):
        raise dt._incompatible_arguments(
            SIGNATURES["stop_gradient"],
            a)
    return make(StopGradient(a._dtype), (a,), a._shape, a._dtype, dev.resolve_stream(stream))


def depends(inputs: array | Sequence[array], dependencies: array | Sequence[array]
            ) -> array | list[array]:
    """``inputs`` unchanged (an array, or a list for a sequence), but evaluated only after
    ``dependencies``: an ordering edge in the graph (MLX's ``mx.depends``)."""
    single = isinstance(inputs, array)
    ins = [inputs] if single else list(inputs) if isinstance(inputs, (list, tuple)) else None
    deps = ([dependencies] if isinstance(dependencies, array) else list(dependencies)
            if isinstance(dependencies, (list, tuple)) else None)
    if ins is None or deps is None or not all(isinstance(a, array) for a in ins + deps):
        raise RuntimeError("[depends] std::bad_cast: inputs and dependencies must be arrays or "
                           "sequences of arrays.")
    if not ins:
        return []
    from ..graph.primitives.shape import Depends

    outs = make_multi(Depends(len(ins)), tuple(ins + deps),
                      [(a._shape, a._dtype) for a in ins], dev.resolve_stream(None))
    return outs[0] if single else outs
