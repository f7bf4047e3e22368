"""Function transforms: the part that needs no autodiff yet.

``mx.compile`` returns a function that computes what ``fun`` computes. MLX traces and fuses the
graph; pycudamlx runs the function as written (its ops are lazy already, so the results, dtypes
and errors are those of the uncompiled function, which MLX's compile promises to preserve).
``enable_compile``/``disable_compile`` are kept for code that calls them. ``stop_gradient`` is
the identity on values. Gradients (grad, vjp, jvp, value_and_grad) and vmap are not here yet.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .. import dtypes as dt
from . import device as dev
from .array import array, make, make_multi

__all__ = ["compile", "depends", "disable_compile", "enable_compile", "stop_gradient"]

_enabled = True


def compile(fun: Callable[..., Any], inputs: object | None = None, outputs: object | None = None,
            shapeless: bool = False) -> Callable[..., Any]:
    """A function producing the same outputs as ``fun`` (run as written: no graph fusion).

    ``inputs``/``outputs`` (state captured by MLX's compiled function) need no capture here:
    the function reads and writes that state itself each time it runs."""
    if not callable(fun):
        raise dt._incompatible_arguments(
            "compile(fun: Callable[P, R], inputs: object | None = None, outputs: object | None "
            "= None, shapeless: bool = False) -> Callable[P, R]", fun)

    @functools.wraps(fun)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)

    return compiled


def disable_compile() -> None:
    """Globally disable compilation (accepted; functions always run as written here)."""
    global _enabled
    _enabled = False


def enable_compile() -> None:
    """Globally enable compilation (accepted; functions always run as written here)."""
    global _enabled
    _enabled = True


def stop_gradient(a: array, /, *, stream: Any = None) -> array:
    """The identity on values that gradients do not cross (a new array: later in-place updates
    of ``a`` do not reach it)."""
    from ..autodiff.custom import StopGradient

    if not isinstance(a, array):
        raise dt._incompatible_arguments(
            "stop_gradient(a: array, /, *, stream: StreamOrDevice = None) -> array",
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
