"""VJP rules of the elementwise primitives: unary and binary op-table rows, astype, where,
divmod (zero gradients, as MLX), and the alias/copy nodes. MLX's conventions at ties: maximum's and minimum's gradient
goes to the second operand where they are equal; abs and sign use sign(0) = 0.

In float16/bfloat16 every intermediate rounds, so each rule is written as MLX's own formula
(checked bit for bit against MLX 0.32.4's CPU on thousands of half values): tanh'(x) =
1 / cosh(x)^2, rsqrt's -0.5 * out / x, reciprocal's -c / x^2, logaddexp's sigmoid(a - b).

Complex numbers follow MLX: a cotangent is dL/dRe + i dL/dIm, so a holomorphic op's rule uses
the conjugate of its derivative (computed as conj(rule(conj(cotangent))), the rules being linear
in the cotangent); abs, real, imag and conjugate have their own rules."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import core as mx
from ..core.array import _Alias
from ..graph.primitives import elementwise as P
from .registry import register, register_single


def _zero(ct: Any) -> Any:
    return mx.array(0, ct.dtype)


def _masked(mask: Any, ct: Any) -> Any:
    return mx.where(mask, ct, _zero(ct))


def _const(value: float, like: Any) -> Any:
    """A scalar in ``like``'s dtype: MLX's rules round their constants to the primal's dtype
    and multiply in the order written below, which decides the last bit in float16/bfloat16."""
    return mx.array(value, like.dtype)


# MLX takes 1/ln(base) in single precision.
_INV_LN2 = float(1 / np.log(np.float32(2.0)))
_INV_LN10 = float(1 / np.log(np.float32(10.0)))

# Unary: fn(x, out, ct) -> cotangent of x (None: no gradient). Each follows MLX 0.32.4's rule
# term by term (tanh as 1/cosh^2, not 1 - tanh^2, which cancels for |x| > 3 in float32).
_UNARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "abs": lambda x, o, c: c * mx.sign(x),
    "negative": lambda x, o, c: mx.negative(c),
    "positive": lambda x, o, c: c,
    "square": lambda x, o, c: c * (x * 2),
    "sqrt": lambda x, o, c: (c * _const(0.5, x)) / o,
    "rsqrt": lambda x, o, c: (c * _const(-0.5, x)) * (o / x),
    "exp": lambda x, o, c: c * o,
    "expm1": lambda x, o, c: c * (o + 1),
    "log": lambda x, o, c: c / x,
    "log2": lambda x, o, c: _const(_INV_LN2, c) * (c / x),
    "log10": lambda x, o, c: _const(_INV_LN10, c) * (c / x),
    "log1p": lambda x, o, c: c / (x + 1),
    "sin": lambda x, o, c: c * mx.cos(x),
    "cos": lambda x, o, c: -(c * mx.sin(x)),
    "tan": lambda x, o, c: c / mx.square(mx.cos(x)),
    "sinh": lambda x, o, c: c * mx.cosh(x),
    "cosh": lambda x, o, c: c * mx.sinh(x),
    "tanh": lambda x, o, c: c / mx.square(mx.cosh(x)),
    "arcsin": lambda x, o, c: c * mx.rsqrt(1 - x * x),
    "arccos": lambda x, o, c: -(c * mx.rsqrt(1 - x * x)),
    "arctan": lambda x, o, c: c / (x * x + 1),
    "arcsinh": lambda x, o, c: c * mx.rsqrt(x * x + 1),
    "arccosh": lambda x, o, c: c * mx.rsqrt(x * x - 1),
    "arctanh": lambda x, o, c: c / (1 - x * x),
    "erf": lambda x, o, c: (c * _const(2.0 / math.sqrt(math.pi), x)) * mx.exp(-mx.square(x)),
    "erfinv": lambda x, o, c: (c * _const(math.sqrt(math.pi) / 2.0, x)) * mx.exp(mx.square(o)),
    "sigmoid": lambda x, o, c: c * (o * (1 - o)),
    "reciprocal": lambda x, o, c: -(c / mx.square(x)),
    "conjugate": lambda x, o, c: mx.conjugate(c),
    "real": lambda x, o, c: c,
    "imag": lambda x, o, c: c * complex(0.0, 1.0),
}
# Piecewise constant, boolean or integer-valued: no gradient (MLX: zeros).
for _name in ("sign", "floor", "ceil", "trunc", "round", "logical_not", "bitwise_invert",
              "isnan", "isinf", "isfinite", "isposinf", "isneginf"):
    _UNARY[_name] = lambda x, o, c: None


@register_single(P.Unary)
def _unary(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    fn = _UNARY.get(prim.name)
    if fn is None:
        raise ValueError(f"[vjp] Not implemented for {prim.name}.")
    x = inputs[0]
    if x.dtype is mx.complex64 and prim.name not in _NOT_HOLOMORPHIC:
        g = fn(x, out, mx.conjugate(ct))
        return [None if g is None else mx.conjugate(g)]
    return [fn(x, out, ct)]


_NOT_HOLOMORPHIC = frozenset(("abs", "real", "imag", "conjugate"))


def _none(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    return None, None


def _maximum(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    m = mx.greater(a, b)
    return (_masked(m, c) if w[0] else None,
            _masked(mx.logical_not(m), c) if w[1] else None)


def _minimum(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    m = mx.less(a, b)
    return (_masked(m, c) if w[0] else None,
            _masked(mx.logical_not(m), c) if w[1] else None)


def _power(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    # d(a^b)/db = a^b log(a), taken as 0 where a^b is 0 (MLX: 0 * log 0 -> 0, so a zero base
    # with a positive exponent has a zero, not NaN, exponent gradient).
    return (c * (b * mx.power(a, b - 1)) if w[0] else None,
            c * mx.where(o, o * mx.log(a), _zero(o)) if w[1] else None)


def _arctan2(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    den = a * a + b * b
    return (c * b / den if w[0] else None, -(c * a) / den if w[1] else None)


def _logaddexp(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    s = mx.sigmoid(a - b)
    return (c * s if w[0] else None, c * (1 - s) if w[1] else None)


def _remainder(a: Any, b: Any, o: Any, c: Any, w: list) -> tuple:
    return (c if w[0] else None, -(c * mx.floor_divide(a, b)) if w[1] else None)


_BINARY: dict[str, Callable[..., tuple]] = {
    "add": lambda a, b, o, c, w: (c, c),
    "subtract": lambda a, b, o, c, w: (c, mx.negative(c) if w[1] else None),
    "multiply": lambda a, b, o, c, w: (c * b if w[0] else None, c * a if w[1] else None),
    "divide": lambda a, b, o, c, w: (c / b if w[0] else None,
                                     -((c * a) / mx.square(b)) if w[1] else None),
    "maximum": _maximum,
    "minimum": _minimum,
    "power": _power,
    "arctan2": _arctan2,
    "logaddexp": _logaddexp,
    "remainder": _remainder,
}
for _name in ("floor_divide", "equal", "not_equal", "greater", "greater_equal", "less",
              "less_equal", "equal_nan", "logical_and", "logical_or", "logical_xor",
              "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
    _BINARY[_name] = _none


@register_single(P.Binary)
def _binary(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    fn = _BINARY.get(prim.name)
    if fn is None:
        raise ValueError(f"[vjp] Not implemented for {prim.name}.")
    if out.dtype is mx.complex64 and prim.name != "power":
        # MLX's power rule multiplies by the plain (unconjugated) derivative for complex inputs.
        return [None if g is None else mx.conjugate(g)
                for g in fn(inputs[0], inputs[1], out, mx.conjugate(ct), wanted)]
    return list(fn(inputs[0], inputs[1], out, ct, wanted))


@register(P.DivMod)
def _divmod(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
    # MLX's DivMod gives zero gradients to both operands, for both outputs (unlike `a % b`,
    # whose remainder rule is 1 and -floor(a / b)); jvp, derived from this, is zero too.
    return [None, None]


@register_single(P.AsType, _Alias)
def _identity(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [ct]


@register_single(P.Where)
def _where(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    c = inputs[0]
    z = _zero(ct)
    return [None, mx.where(c, ct, z) if wanted[1] else None,
            mx.where(c, z, ct) if wanted[2] else None]


@register_single(P.AllTrue)
def _no_grad(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [None] * len(inputs)
