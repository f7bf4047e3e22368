"""nanobind's TypeError text for an argument of the wrong type, as MLX raises it.

MLX's bindings reject a float where an int is declared (``mx.repeat(x, 1.5)``), a string axis,
and so on, before the op runs, with a message that names the function's signature and the
types it was called with: "Invoked with types: mlx.core.array, float, kwargs = { axis: int }".
Our ops validate their arguments where they use them; when one is wrong they call
``argument_error`` (on the error path only, so the ops pay nothing), which rebuilds that text
from the call: the public function's frame gives the values, and the caller's bytecode tells
which arguments were passed by keyword (KW_NAMES / CALL_KW). Calls it cannot read (through
another op, an array method, ``f(*args, **kw)``) keep the op's own explanation."""

from __future__ import annotations

import dis
import inspect
import sys
from types import FrameType
from typing import Any

from .. import dtypes as dt

#: The first line of MLX's docstring of each function: nanobind's signature line.
SIGNATURES: dict[str, str] = {
    'repeat': (
        'repeat(array: array, repeats: int, axis: int | None = None, *, stream: StreamOrDevice '
        '= None) -> array'),
    'tile': (
        'tile(a: array, reps: int | Sequence[int], /, *, stream: StreamOrDevice = None) -> '
        'array'),
    'roll': (
        'roll(a: array, shift: int | tuple[int], axis: None | int | tuple[int] = None, /, *, '
        'stream: StreamOrDevice = None) -> array'),
    'tri': (
        'tri(n: int, m: int | None = None, k: int = 0, dtype: Dtype | None = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'tril': (
        'tril(x: array, k: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'triu': (
        'triu(x: array, k: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'linspace': (
        'linspace(start: scalar, stop: scalar, num: int | None = 50, endpoint: bool = True, '
        'dtype: Dtype | None = float32, stream: StreamOrDevice = None) -> array'),
    'diff': (
        'diff(a: array, /, n: int = 1, axis: int = -1, *, stream: StreamOrDevice = None) -> '
        'array'),
    'transpose': (
        'transpose(a: array, /, axes: Sequence[int] | None = None, *, stream: StreamOrDevice = '
        'None) -> array'),
    'expand_dims': (
        'expand_dims(a: array, /, axis: int | Sequence[int], *, stream: StreamOrDevice = None) '
        '-> array'),
    'squeeze': (
        'squeeze(a: array, /, axis: None | int | Sequence[int] = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'split': (
        'split(a: array, /, indices_or_sections: int | Sequence[int], axis: int = 0, *, stream:'
        ' StreamOrDevice = None) -> array'),
    'eye': (
        'eye(n: int, m: int | None = None, k: int = 0, dtype: Dtype | None = float32, *, '
        'stream: StreamOrDevice = None) -> array'),
    'identity': (
        'identity(n: int, dtype: Dtype | None = float32, *, stream: StreamOrDevice = None) -> '
        'array'),
    'swapaxes': (
        'swapaxes(a: array, /, axis1 : int, axis2: int, *, stream: StreamOrDevice = None) -> '
        'array'),
    'moveaxis': (
        'moveaxis(a: array, /, source: int, destination: int, *, stream: StreamOrDevice = None)'
        ' -> array'),
    'flatten': (
        'flatten(a: array, /, start_axis: int = 0, end_axis: int = -1, *, stream: '
        'StreamOrDevice = None) -> array'),
    'unflatten': (
        'unflatten(a: array, /, axis: int, shape: Sequence[int], *, stream: StreamOrDevice = '
        'None) -> array'),
    'broadcast_to': (
        'broadcast_to(a: scalar | array, /, shape: Sequence[int], *, stream: StreamOrDevice = '
        'None) -> array'),
    'as_strided': (
        'as_strided(a: array, /, shape: Sequence[int] | None = None, strides: Sequence[int] | '
        'None = None, offset: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'trace': (
        'trace(a: array, /, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Dtype | '
        'None = None, *, stream: StreamOrDevice = None) -> array'),
    'diag': (
        'diag(a: array, /, k: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'diagonal': (
        'diagonal(a: array, offset: int = 0, axis1: int = 0, axis2: int = 1, stream: '
        'StreamOrDevice = None) -> array'),
    'reshape': (
        'reshape(a: array, /, shape: Sequence[int], *, stream: StreamOrDevice = None) -> array'),
    'sum': (
        'sum(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'mean': (
        'mean(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'prod': (
        'prod(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'max': (
        'max(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'min': (
        'min(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'all': (
        'all(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'any': (
        'any(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'argmax': (
        'argmax(a: array, /, axis: None | int = None, keepdims: bool = False, *, stream: '
        'StreamOrDevice = None) -> array'),
    'argmin': (
        'argmin(a: array, /, axis: None | int = None, keepdims: bool = False, *, stream: '
        'StreamOrDevice = None) -> array'),
    'var': (
        'var(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        'ddof: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'std': (
        'std(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        'ddof: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'logsumexp': (
        'logsumexp(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = '
        'False, *, stream: StreamOrDevice = None) -> array'),
    'softmax': (
        'softmax(a: array, /, axis: None | int | Sequence[int] = None, *, precise: bool = '
        'False, stream: StreamOrDevice = None) -> array'),
    'cumsum': (
        'cumsum(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool'
        ' = True, dtype: Dtype | None = None, stream: StreamOrDevice = None) -> array'),
    'cumprod': (
        'cumprod(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: '
        'bool = True, dtype: Dtype | None = None, stream: StreamOrDevice = None) -> array'),
    'cummax': (
        'cummax(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool'
        ' = True, stream: StreamOrDevice = None) -> array'),
    'cummin': (
        'cummin(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool'
        ' = True, stream: StreamOrDevice = None) -> array'),
    'logcumsumexp': (
        'logcumsumexp(a: array, /, axis: int | None = None, *, reverse: bool = False, '
        'inclusive: bool = True, stream: StreamOrDevice = None) -> array'),
    'median': (
        'median(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        '*, stream: StreamOrDevice = None) -> array'),
    'count_nonzero': (
        'count_nonzero(a: array, /, *, axis: None | int | Sequence[int] = None, keepdims: bool '
        '= False, stream: StreamOrDevice = None) -> array'),
    'take': (
        'take(a: array, /, indices: int | array, axis: int | None = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'take_along_axis': (
        'take_along_axis(a: array, /, indices: array, axis: int | None = -1, *, stream: '
        'StreamOrDevice = None) -> array'),
    'put_along_axis': (
        'put_along_axis(a: array, /, indices: array, values: array, axis: int | None = None, *,'
        ' stream: StreamOrDevice = None) -> array'),
    'stack': (
        'stack(arrays: list[array], axis: int | None = 0, *, stream: StreamOrDevice = None) -> '
        'array'),
    'concatenate': (
        'concatenate(arrays: list[array], axis: int | None = 0, *, stream: StreamOrDevice = '
        'None) -> array'),
    'zeros': (
        'zeros(shape: int | Sequence[int], dtype: Dtype | None = float32, *, stream: '
        'StreamOrDevice = None) -> array'),
    'ones': (
        'ones(shape: int | Sequence[int], dtype: Dtype | None = float32, *, stream: '
        'StreamOrDevice = None) -> array'),
    'full': (
        'full(shape: int | Sequence[int], vals: scalar | array, dtype: Dtype | None = None, *, '
        'stream: StreamOrDevice = None) -> array'),
    # mx.random
    'normal': (
        'normal(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: scalar | array |'
        ' None = None, scale: scalar | array | None = None, key: array | None = None, stream: '
        'StreamOrDevice = None) -> array'),
    'uniform': (
        'uniform(low: scalar | array = 0, high: scalar | array = 1, shape: Sequence[int] = [], '
        'dtype: Dtype | None = float32, key: array | None = None, stream: StreamOrDevice = '
        'None) -> array'),
    'randint': (
        'randint(low: scalar | array, high: scalar | array, shape: Sequence[int] = [], dtype: '
        'Dtype | None = int32, key: array | None = None, stream: StreamOrDevice = None) -> '
        'array'),
    'bernoulli': (
        'bernoulli(p: scalar | array = 0.5, shape: Sequence[int] | None = None, key: array | '
        'None = None, stream: StreamOrDevice = None) -> array'),
    'truncated_normal': (
        'truncated_normal(lower: scalar | array, upper: scalar | array, shape: Sequence[int] | '
        'None = None, dtype: Dtype | None = float32, key: array | None = None, stream: '
        'StreamOrDevice = None) -> array'),
    'gumbel': (
        'gumbel(shape: Sequence[int] = [], dtype: Dtype | None = float32, key: array | None = '
        'None, stream: StreamOrDevice = None) -> array'),
    'laplace': (
        'laplace(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: float = 0.0, '
        'scale: float = 1.0, key: array | None = None, stream: StreamOrDevice = None) -> array'),
    'categorical': (
        'categorical(logits: array, axis: int = -1, shape: Sequence[int] | None = None, '
        'num_samples: int | None = None, key: array | None = None, stream: StreamOrDevice = '
        'None) -> array'),
    'permutation': (
        'permutation(x: int | array, axis: int = 0, key: array | None = None, stream: '
        'StreamOrDevice = None) -> array'),
    'multivariate_normal': (
        'multivariate_normal(mean: array, cov: array, shape: Sequence[int] = [], dtype: Dtype |'
        ' None = float32, key: array | None = None, stream: StreamOrDevice = None) -> array'),
    'kron': (
        'kron(a: array, b: array, *, stream: StreamOrDevice = None) -> array'),
    'topk': (
        'topk(a: array, /, k: int, axis: None | int = -1, *, stream: StreamOrDevice = None) -> '
        'array'),
    'partition': (
        'partition(a: array, /, kth: int, axis: None | int = -1, *, stream: StreamOrDevice = '
        'None) -> array'),
    'argpartition': (
        'argpartition(a: array, /, kth: int, axis: None | int = -1, *, stream: StreamOrDevice ='
        ' None) -> array'),
}

_STREAM = ("mlx.core.Stream | mlx.core.ThreadLocalStream | mlx.core.Device | "
           "mlx.core.DeviceType | None")
_RETURNS = {"array": " = None) -> mlx.core.array", "list": " = None) -> list[mlx.core.array]"}

#: The array methods' own signature lines (``self``, the long stream type): (text up to the
#: stream's type, return kind).
_METHODS: dict[str, tuple[str, str]] = {
    'sum': (
        'sum(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'mean': (
        'mean(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool ='
        ' False, *, stream: ', 'array'),
    'prod': (
        'prod(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool ='
        ' False, *, stream: ', 'array'),
    'max': (
        'max(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'min': (
        'min(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'all': (
        'all(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'any': (
        'any(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'argmax': (
        'argmax(self, axis: int | None = None, keepdims: bool = False, *, stream: ', 'array'),
    'argmin': (
        'argmin(self, axis: int | None = None, keepdims: bool = False, *, stream: ', 'array'),
    'var': (
        'var(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, ddof: int = 0, *, correction: int | None = None, stream: ', 'array'),
    'std': (
        'std(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, ddof: int = 0, *, correction: int | None = None, stream: ', 'array'),
    'logsumexp': (
        'logsumexp(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: '
        'bool = False, *, stream: ', 'array'),
    'cumsum': (
        'cumsum(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'cumprod': (
        'cumprod(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'cummax': (
        'cummax(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'cummin': (
        'cummin(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'logcumsumexp': (
        'logcumsumexp(self, axis: int | None = None, *, reverse: bool = False, inclusive: '
        'bool = True, stream: ', 'array'),
    'swapaxes': (
        'swapaxes(self, axis1: int, axis2: int, *, stream: ', 'array'),
    'moveaxis': (
        'moveaxis(self, source: int, destination: int, *, stream: ', 'array'),
    'flatten': (
        'flatten(self, start_axis: int = 0, end_axis: int = -1, *, stream: ', 'array'),
    'squeeze': (
        'squeeze(self, axis: int | collections.abc.Sequence[int] | None = None, *, stream: ',
        'array'),
    'split': (
        'split(self, indices_or_sections: int | tuple[int, ...], axis: int = 0, *, stream: ',
        'list'),
    'diagonal': (
        'diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1, stream: ', 'array'),
    'diag': (
        'diag(self, k: int = 0, *, stream: ', 'array'),
    'round': (
        'round(self, decimals: int = 0, *, stream: ', 'array'),
}
METHOD_SIGNATURES: dict[str, str] = {
    name: head + _STREAM + _RETURNS[ret] for name, (head, ret) in _METHODS.items()}

_OURS = "pycudamlx."
_ARRAY_MODULE = "pycudamlx.core.array"


def _keyword_names(caller: FrameType) -> tuple[tuple[str, ...], int] | None:
    """(names passed by keyword, number of arguments) of the call the caller is making now,
    read from its bytecode; None where the call is not a plain call."""
    code = caller.f_code
    before = [i for i in dis.get_instructions(code) if i.offset <= caller.f_lasti]
    if not before:
        return None
    call = before[-1]
    if call.opname == "CALL":  # 3.11 / 3.12: KW_NAMES (a co_consts index) precedes PRECALL/CALL
        names: tuple[str, ...] = ()
        for ins in reversed(before[-4:-1]):
            if ins.opname == "KW_NAMES":
                names = code.co_consts[ins.arg]
                break
        return names, call.arg
    if call.opname == "CALL_KW":  # 3.13+: the names tuple is the constant loaded just before
        prev = before[-2] if len(before) > 1 else None
        if prev is not None and prev.opname == "LOAD_CONST" and isinstance(prev.argval, tuple):
            return prev.argval, call.arg
    return None


def _invoked(frame: FrameType, caller: FrameType, fn: str, method: bool) -> str | None:
    if method:
        func = type(frame.f_locals.get("self")).__dict__.get(fn)
    else:
        func = frame.f_globals.get(fn)
    if getattr(func, "__code__", None) is not frame.f_code:
        return None
    call = _keyword_names(caller)
    if call is None:
        return None
    names, argc = call
    values = frame.f_locals
    params = [p for p in inspect.signature(func).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    n_positional = argc - len(names) + (1 if method else 0)  # a method call's argc omits self
    if not 0 <= n_positional <= len(params) or any(n not in values for n in names):
        return None
    parts = [dt._type_name(values[p.name]) for p in params[:n_positional]]
    if names:
        kw = ", ".join(f"{n}: {dt._type_name(values[n])}" for n in names)
        parts.append(f"kwargs = {{ {kw} }}")
    return ", ".join(parts)


def argument_error(fn: str, fallback: str | TypeError, sig: str | None = None) -> TypeError:
    """The TypeError for a wrongly typed argument of ``mx.<fn>`` or of the method
    ``array.<fn>`` (signature line ``sig``, by default from SIGNATURES / METHOD_SIGNATURES):
    nanobind's text when the call came straight from user code, else ``fallback``."""
    frame = sys._getframe(1)
    # the outermost pycudamlx frame: the public function (or method) the user called
    while frame.f_back is not None and frame.f_back.f_globals.get(
            "__name__", "").startswith(_OURS):
        frame = frame.f_back
    caller = frame.f_back
    method = frame.f_globals.get("__name__") == _ARRAY_MODULE and "self" in frame.f_locals
    if method:  # the method's own line, not the op's
        sig = METHOD_SIGNATURES.get(fn)
    elif sig is None:
        sig = SIGNATURES.get(fn)
    if sig is not None and caller is not None:
        try:
            invoked = _invoked(frame, caller, fn, method)
        except Exception:  # noqa: BLE001 - reading the call is best effort
            invoked = None
        if invoked is not None:
            return TypeError(
                f"{fn}(): incompatible function arguments. The following argument types "
                f"are supported:\n    1. {sig}\n\nInvoked with types: {invoked}")
    return fallback if isinstance(fallback, TypeError) else TypeError(fallback)
