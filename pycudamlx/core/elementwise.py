"""Elementwise op functions (``mx.add`` ... ``mx.isclose``): MLX's argument handling, promotion
and broadcasting, then one node of a table op (backend/optable.py).

Most functions are a row of the op table: ``unary_op``/``binary_op`` convert the operands as MLX
does (Python scalars weak, bool and integers to float32 for transcendental functions, bool to
uint8 for shifts), raise MLX's error for dtypes the op is undefined for, and build the node. The
rest (clip, round with decimals, degrees, nan_to_num, isclose, allclose, array_equal) compose
table ops exactly as MLX's C++ composes its own, so both backends and the GPU kernels follow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..backend import optable
from ..graph.primitives.elementwise import AllTrue, Binary, DivMod, Unary, Where
from . import device as dev
from ._base import _PLAIN_SCALARS, astype, broadcast_shapes, constant, promote_operands
from ._nanobind import SIGNATURES, argument_error
from .array import array, fresh, from_data, make, make_multi

__all__ = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "add", "subtract", "multiply", "divide",
    "floor_divide", "remainder", "divmod", "power", "pow", "exp", "expm1", "log", "log2",
    "log10", "log1p", "logaddexp", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sqrt", "rsqrt",
    "square", "reciprocal", "negative", "positive", "sign", "floor", "ceil", "round", "trunc",
    "clip", "maximum", "minimum", "erf", "erfinv", "sigmoid", "degrees", "radians", "conj",
    "conjugate", "real", "imag", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
    "nan_to_num", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "left_shift",
    "right_shift", "where", "isclose", "allclose", "array_equal",
]

_OPS = optable.OPS
# Per op, built once: (primitive, op row).
_binary_rows: dict[str, tuple[Binary, optable.ElementwiseOp]] = {}
_unary_rows: dict[str, tuple[Unary, optable.ElementwiseOp]] = {}
_FLOAT_KINDS = "fc"


def _binary_row(name: str) -> tuple[Binary, optable.ElementwiseOp]:
    row = _binary_rows.get(name)
    if row is None:
        op = _OPS[name]
        row = _binary_rows[name] = (Binary(op), op)
    return row


def _unary_row(name: str) -> tuple[Unary, optable.ElementwiseOp]:
    row = _unary_rows.get(name)
    if row is None:
        op = _OPS[name]
        row = _unary_rows[name] = (Unary(op), op)
    return row


def _operand(x: Any, fn: str, signature: str | None = None) -> array:
    """An op's array argument: arrays as they are; Python and numpy scalars and numpy arrays
    converted as ``mx.array`` does. Lists and tuples raise ValueError and None TypeError, as
    MLX's bindings do."""
    if isinstance(x, array):
        return x
    if x is None:
        raise dt._incompatible_arguments(
            signature or f"{fn}(a: array, /, *, stream: StreamOrDevice = None) -> array", x)
    if isinstance(x, (list, tuple)):
        raise ValueError(f"Invalid type {type(x).__name__} received in array initialization.")
    if type(x) in _PLAIN_SCALARS or isinstance(x, (np.ndarray, np.generic)):
        return array(x)
    c = dt.odd_number(x)  # an object with __float__ / __complex__ / __index__: complex64
    return array(x if c is None else c)


def _at_least_float(dtype: dt.Dtype) -> dt.Dtype:
    return dtype if dtype.kind in _FLOAT_KINDS else dt.float32


def _reported_dtype(x: Any, converted: array, other_x: Any, other: array) -> dt.Dtype:
    """The dtype MLX's messages give an operand: two scalars convert on their own, and a Python
    float next to a complex array becomes float32 (not weakly complex64) before the check."""
    if isinstance(x, array):
        return x._dtype
    if not isinstance(other_x, array):
        return dt.operand_dtype(x)
    if isinstance(x, float) and other._dtype.kind == "c":
        return dt.float32
    return converted._dtype


def binary_op(name: str, a: Any, b: Any, stream: Any = None, op_label: str | None = None
              ) -> array:
    """Apply the binary op ``name`` of the op table with MLX's promotion and broadcasting.

    ``op_label`` names the operator in MLX's message for an unsupported operand type (the array
    operators pass "addition" ...; the functions pass None)."""
    prim, op = _binary_row(name)
    rule = op.inputs
    if rule == "logical":
        a = a if type(a) is array else _operand(a, name)
        b = b if type(b) is array else _operand(b, name)
        dtype = dt.promote_types(a._dtype, b._dtype)
    else:
        a0, b0 = a, b
        a, b, dtype = promote_operands(a, b, op_label)
        if rule == "float":
            if dtype.kind not in _FLOAT_KINDS:
                dtype = dt.float32
        elif rule == "shift" and dtype is dt.bool_:
            dtype = dt.uint8
        if dtype.kind not in op.families:
            op.check(dtype, _reported_dtype(a0, a, b0, b), _reported_dtype(b0, b, a0, a))
    s = dev.resolve_stream(stream)
    if a._dtype is not dtype:
        a = astype(a, dtype, s)
    if b._dtype is not dtype:
        b = astype(b, dtype, s)
    shape = a._shape if a._shape == b._shape else broadcast_shapes(a._shape, b._shape)
    return make(prim, (a, b), shape, op.output_dtype(dtype), s)


def binary_same(name: str, a: array, b: array) -> array | None:
    """``binary_op(name, a, b)`` for two arrays of one dtype and shape on the default stream:
    the operators' common case (``x + y``), without promotion or broadcasting; None where the
    dtype needs them (integer true division, a family the op refuses: binary_op decides)."""
    prim, op = _binary_row(name)
    dtype = a._dtype
    if dtype.kind not in op.families or (op.inputs == "float" and dtype.kind not in _FLOAT_KINDS):
        return None
    return make(prim, (a, b), a._shape, op.output_dtype(dtype), dev.resolve_stream(None))


def unary_op(name: str, a: Any, stream: Any = None, fn: str | None = None) -> array:
    """Apply the unary op ``name`` of the op table (``fn``: the public name, for messages)."""
    prim, op = _unary_row(name)
    if type(a) is not array:
        a = _operand(a, fn or name)
    dtype = a._dtype
    if op.inputs == "float" and dtype.kind not in _FLOAT_KINDS:
        dtype = dt.float32
    if dtype.kind not in op.families:
        op.check(dtype)
    s = dev.resolve_stream(stream)
    if a._dtype is not dtype:
        a = astype(a, dtype, s)
    return make(prim, (a,), a._shape, op.output_dtype(dtype), s)


# --------------------------------------------------------------------------------------------------
# Binary arithmetic and comparisons


def add(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise addition with numpy-style broadcasting (bool: logical or)."""
    return binary_op("add", a, b, stream)


def subtract(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise subtraction (bool: exclusive or, as MLX)."""
    return binary_op("subtract", a, b, stream)


def multiply(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise multiplication (bool: logical and)."""
    return binary_op("multiply", a, b, stream)


def divide(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise true division; bool and integer operands give float32."""
    return binary_op("divide", a, b, stream)


def floor_divide(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise floor division with Python's signs; integer ``x // 0`` gives 0 (as MLX) and
    ``INT_MIN // -1`` gives INT_MIN (MLX 0.32.4 dies with SIGFPE there for int32/int64)."""
    return binary_op("floor_divide", a, b, stream)


def remainder(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise remainder with the divisor's sign; integer ``x % 0`` gives ``x`` (MLX's
    result) and ``INT_MIN % -1`` gives 0 (MLX: SIGFPE for int32/int64)."""
    return binary_op("remainder", a, b, stream)


_divmod = DivMod()


def divmod(a: Any, b: Any, /, *, stream: Any = None) -> list[array]:  # noqa: A001
    """``[a // b, a % b]`` as two outputs of one node (integer ``divmod(x, 0)`` is ``[0, x]``,
    as ``//`` and ``%``; MLX 0.32.4 dies with SIGFPE there)."""
    a, b, dtype = promote_operands(a, b)
    if dtype is dt.complex64:
        raise ValueError("[divmod] Complex type not supported.")
    s = dev.resolve_stream(stream)
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    shape = a._shape if a._shape == b._shape else broadcast_shapes(a._shape, b._shape)
    return make_multi(_divmod, (a, b), ((shape, dtype), (shape, dtype)), s)


def power(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise power; integer powers wrap, and a negative integer exponent gives 0 (MLX)."""
    return binary_op("power", a, b, stream)


pow = power  # noqa: A001 - MLX's alias


def maximum(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise maximum, propagating NaN (complex: lexicographic order)."""
    return binary_op("maximum", a, b, stream)


def minimum(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise minimum, propagating NaN (complex: lexicographic order)."""
    return binary_op("minimum", a, b, stream)


def arctan2(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise arc tangent of ``a / b`` with the quadrant of ``(b, a)``."""
    return binary_op("arctan2", a, b, stream)


atan2 = arctan2


def logaddexp(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """``log(exp(a) + exp(b))`` without overflow."""
    return binary_op("logaddexp", a, b, stream)


def equal(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("equal", a, b, stream)


def not_equal(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("not_equal", a, b, stream)


def greater(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("greater", a, b, stream)


def greater_equal(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("greater_equal", a, b, stream)


def less(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("less", a, b, stream)


def less_equal(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("less_equal", a, b, stream)


def logical_and(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise logical and of the operands' truth values (any dtype)."""
    return binary_op("logical_and", a, b, stream)


def logical_or(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("logical_or", a, b, stream)


def logical_xor(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("logical_xor", a, b, stream)


def bitwise_and(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise bitwise and (integer and bool operands; RuntimeError otherwise, as MLX)."""
    return binary_op("bitwise_and", a, b, stream)


def bitwise_or(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("bitwise_or", a, b, stream)


def bitwise_xor(a: Any, b: Any, /, *, stream: Any = None) -> array:
    return binary_op("bitwise_xor", a, b, stream)


def left_shift(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise ``a << b`` (bool operands become uint8); a count outside [0, bits) gives
    0, as numpy (MLX's result there depends on the processor)."""
    return binary_op("left_shift", a, b, stream)


def right_shift(a: Any, b: Any, /, *, stream: Any = None) -> array:
    """Element-wise ``a >> b`` (arithmetic for signed types); a count outside [0, bits) gives 0,
    or -1 for negative signed ``a``, as numpy."""
    return binary_op("right_shift", a, b, stream)


bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


# --------------------------------------------------------------------------------------------------
# Unary functions


def _unary(name: str, public: str, doc: str, arrays_only: bool = False) -> Any:
    if arrays_only:  # MLX binds these without scalar conversion
        sig = f"{public}(a: array, /, *, stream: StreamOrDevice = None) -> array"

        def fn(a: Any, /, *, stream: Any = None) -> array:
            if type(a) is not array:
                raise dt._incompatible_arguments(sig, a)
            return unary_op(name, a, stream, public)
    else:
        def fn(a: Any, /, *, stream: Any = None) -> array:
            return unary_op(name, a, stream, public)

    fn.__name__ = fn.__qualname__ = public
    fn.__doc__ = doc
    return fn


abs = _unary("abs", "abs", "Element-wise absolute value (complex64 gives float32).")  # noqa: A001
negative = _unary("negative", "negative", "Element-wise negation (unsigned wraps; bool raises).")
positive = _unary("positive", "positive", "Element-wise unary plus: a copy of the input.",
                  arrays_only=True)
square = _unary("square", "square", "Element-wise square.")
sign = _unary("sign", "sign", "Element-wise sign: -1, 0 or 1 (0 for NaN); x / |x| for complex.")
floor = _unary("floor", "floor", "Element-wise floor (the identity on integers).")
ceil = _unary("ceil", "ceil", "Element-wise ceiling (the identity on integers).")
trunc = _unary("trunc", "trunc", "Element-wise truncation toward zero.", arrays_only=True)
sqrt = _unary("sqrt", "sqrt", "Element-wise square root (integers give float32).")
rsqrt = _unary("rsqrt", "rsqrt", "Element-wise reciprocal square root.")
reciprocal = _unary("reciprocal", "reciprocal", "Element-wise reciprocal.")
exp = _unary("exp", "exp", "Element-wise exponential.")
expm1 = _unary("expm1", "expm1", "Element-wise ``exp(x) - 1``, accurate near 0.")
log = _unary("log", "log", "Element-wise natural logarithm.")
log2 = _unary("log2", "log2", "Element-wise base-2 logarithm.")
log10 = _unary("log10", "log10", "Element-wise base-10 logarithm.")
log1p = _unary("log1p", "log1p", "Element-wise ``log(1 + x)``, accurate near 0.")
sin = _unary("sin", "sin", "Element-wise sine.")
cos = _unary("cos", "cos", "Element-wise cosine.")
tan = _unary("tan", "tan", "Element-wise tangent.")
sinh = _unary("sinh", "sinh", "Element-wise hyperbolic sine.")
cosh = _unary("cosh", "cosh", "Element-wise hyperbolic cosine.")
tanh = _unary("tanh", "tanh", "Element-wise hyperbolic tangent.")
arcsin = _unary("arcsin", "arcsin", "Element-wise inverse sine.")
arccos = _unary("arccos", "arccos", "Element-wise inverse cosine.")
arctan = _unary("arctan", "arctan", "Element-wise inverse tangent.")
arcsinh = _unary("arcsinh", "arcsinh", "Element-wise inverse hyperbolic sine.")
arccosh = _unary("arccosh", "arccosh", "Element-wise inverse hyperbolic cosine.")
arctanh = _unary("arctanh", "arctanh", "Element-wise inverse hyperbolic tangent.")
erf = _unary("erf", "erf", "Element-wise error function.")
erfinv = _unary("erfinv", "erfinv", "Element-wise inverse error function.")
sigmoid = _unary("sigmoid", "sigmoid", "Element-wise logistic sigmoid ``1 / (1 + exp(-x))``.")
conjugate = _unary("conjugate", "conjugate", "Element-wise complex conjugate.")
conj = _unary("conjugate", "conj", "Element-wise complex conjugate.")
real = _unary("real", "real", "The real part (complex64 gives float32; others a copy).")
imag = _unary("imag", "imag", "The imaginary part (complex64 gives float32; others zeros).")
isnan = _unary("isnan", "isnan", "Which elements are NaN (bool).")
isinf = _unary("isinf", "isinf", "Which elements are +/- infinity (bool).")
isfinite = _unary("isfinite", "isfinite", "Which elements are neither infinite nor NaN (bool).")
isposinf = _unary("isposinf", "isposinf", "Which elements are +infinity (bool).")
isneginf = _unary("isneginf", "isneginf", "Which elements are -infinity (bool).")
logical_not = _unary("logical_not", "logical_not", "Element-wise logical not (any dtype).")
bitwise_invert = _unary("bitwise_invert", "bitwise_invert",
                        "Element-wise bitwise inverse ``~a`` (integers and bool).")

acos, acosh, asin, asinh, atan, atanh = arccos, arccosh, arcsin, arcsinh, arctan, arctanh


def degrees(a: Any, /, *, stream: Any = None) -> array:
    """Radians to degrees: ``a * (180 / pi)`` with the constant in ``a``'s (float) dtype."""
    a = _operand(a, "degrees")
    return multiply(a, constant(180.0 / math.pi, _at_least_float(a._dtype)), stream=stream)


def radians(a: Any, /, *, stream: Any = None) -> array:
    """Degrees to radians: ``a * (pi / 180)`` with the constant in ``a``'s (float) dtype."""
    a = _operand(a, "radians")
    return multiply(a, constant(math.pi / 180.0, _at_least_float(a._dtype)), stream=stream)


def round(a: Any, /, decimals: int = 0, *, stream: Any = None) -> array:  # noqa: A001
    """Round half to even, to ``decimals`` places (MLX: ``rint(a * 10**d) * (1 / 10**d)`` in
    ``a``'s float dtype, then back to ``a``'s dtype)."""
    a = _operand(a, "round", SIGNATURES["round"])
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        # the method a.round(...) has its own signature line (argument_error picks it)
        sig = SIGNATURES["round"]
        raise argument_error("round", dt._incompatible_arguments(sig, a, decimals), sig)
    if decimals == 0:
        return unary_op("round", a, stream)
    dtype = _at_least_float(a._dtype)
    try:
        scale = np.float32(10.0 ** int(decimals))  # C++: float scale = std::pow(10, decimals)
    except OverflowError:
        scale = np.float32(np.inf)
    with np.errstate(all="ignore"):
        inverse = np.float32(1.0) / scale
    s = dev.resolve_stream(stream)
    out = multiply(a, constant(scale, dtype), stream=s)
    out = unary_op("round", out, s)
    out = multiply(out, constant(inverse, dtype), stream=s)
    return astype(out, a._dtype, s)


_CLIP_SIG = SIGNATURES["clip"]


def clip(a: Any, /, a_min: Any, a_max: Any, *, stream: Any = None) -> array:
    """``minimum(maximum(a, a_min), a_max)``; either bound may be None, not both."""
    if not isinstance(a, array):
        raise argument_error("clip", dt._incompatible_arguments(_CLIP_SIG, a, a_min, a_max),
                             _CLIP_SIG)
    if a_min is None and a_max is None:
        raise ValueError("At most one of a_min and a_max may be None")
    out = a
    if a_min is not None:
        out = maximum(out, a_min, stream=stream)
    if a_max is not None:
        out = minimum(out, a_max, stream=stream)
    return out


_FLOAT_MAX = {dt.float32: float(np.finfo(np.float32).max),
              dt.float16: float(np.finfo(np.float16).max),
              dt.bfloat16: float(dt.finfo(dt.bfloat16).max)}


def nan_to_num(a: Any, /, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, stream: Any = None) -> array:
    """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (defaults: the dtype's largest
    finite magnitude). Integer and bool arrays come back unchanged, as in MLX."""
    sig = SIGNATURES["nan_to_num"]
    a = _operand(a, "nan_to_num", sig)
    try:  # MLX's binding takes C++ floats
        nan_v = np.float32(float(nan))
        pos_v = None if posinf is None else np.float32(float(posinf))
        neg_v = None if neginf is None else np.float32(float(neginf))
    except (TypeError, ValueError):
        raise dt._incompatible_arguments(sig, a, nan, posinf, neginf) from None
    dtype = a._dtype
    if dtype.kind not in _FLOAT_KINDS:
        return fresh(a, stream)
    if pos_v is None or neg_v is None:
        top = _FLOAT_MAX.get(dtype)
        if top is None:
            raise ValueError(f"[nan_to_num] Does not yet support given type: {dtype.name}.")
        with np.errstate(all="ignore"):
            pos_v = np.float32(top) if pos_v is None else pos_v
            neg_v = np.float32(-top) if neg_v is None else neg_v
    s = dev.resolve_stream(stream)
    out = where(isnan(a, stream=s), constant(nan_v, dtype), a, stream=s)
    out = where(isposinf(a, stream=s), constant(pos_v, dtype), out, stream=s)
    return where(isneginf(a, stream=s), constant(neg_v, dtype), out, stream=s)


# --------------------------------------------------------------------------------------------------
# where, isclose, allclose, array_equal

_where = Where()


def where(condition: Any, x: Any, y: Any, /, *, stream: Any = None) -> array:
    """``x`` where ``condition`` holds, else ``y`` (all three broadcast together)."""
    s = dev.resolve_stream(stream)
    x, y, dtype = promote_operands(x, y)
    c = astype(_operand(condition, "where"), dt.bool_, s)
    x = astype(x, dtype, s)
    y = astype(y, dtype, s)
    shape = broadcast_shapes(broadcast_shapes(c._shape, x._shape), y._shape)
    return make(_where, (c, x, y), shape, dtype, s)


def _tolerance_sig(fn: str) -> str:
    return (f"{fn}(a: array, b: array, /, rtol: float = 1e-05, atol: float = 1e-08, *, "
            "equal_nan: bool = False, stream: StreamOrDevice = None) -> array")


def _isclose(fn: str, a: Any, b: Any, rtol: Any, atol: Any, equal_nan: Any, stream: Any
             ) -> array:
    sig = _tolerance_sig(fn)
    if not isinstance(a, array) or not isinstance(b, array):  # names them in call order
        raise argument_error(fn, dt._incompatible_arguments(sig, a, b), sig)
    try:
        rtol_v = np.float32(float(rtol))  # MLX: array(double) is a float32 array
        atol_v = np.float32(float(atol))
    except (TypeError, ValueError):
        raise argument_error(fn, dt._incompatible_arguments(sig, a, b, rtol, atol), sig) from None
    s = dev.resolve_stream(stream)
    # |a - b| <= atol + rtol * |b|, built as MLX's ops.cpp builds it (same dtypes, same steps).
    rhs = add(constant(atol_v, dt.float32),
              multiply(constant(rtol_v, dt.float32), abs(b, stream=s), stream=s), stream=s)
    lhs = abs(subtract(a, b, stream=s), stream=s)
    out = less_equal(lhs, rhs, stream=s)
    if a._dtype.kind in _FLOAT_KINDS or b._dtype.kind in _FLOAT_KINDS:
        # Infinities: false unless both are infinite with the same sign.
        a_pos, b_pos = isposinf(a, stream=s), isposinf(b, stream=s)
        a_neg, b_neg = isneginf(a, stream=s), isneginf(b, stream=s)
        any_inf = logical_or(logical_or(a_pos, a_neg, stream=s),
                             logical_or(b_pos, b_neg, stream=s), stream=s)
        both_inf = logical_or(logical_and(a_pos, b_pos, stream=s),
                              logical_and(a_neg, b_neg, stream=s), stream=s)
        out = logical_and(out, logical_not(any_inf, stream=s), stream=s)
        out = logical_or(out, both_inf, stream=s)
        if equal_nan:
            out = logical_or(out, logical_and(isnan(a, stream=s), isnan(b, stream=s), stream=s),
                             stream=s)
    return out


def isclose(a: Any, b: Any, /, rtol: float = 1e-05, atol: float = 1e-08, *,
            equal_nan: bool = False, stream: Any = None) -> array:
    """Where ``|a - b| <= atol + rtol * |b|`` (broadcasting); infinities are close only to
    themselves, NaNs to NaNs only with ``equal_nan``."""
    return _isclose("isclose", a, b, rtol, atol, equal_nan, stream)


_all_true = AllTrue()


def _all(x: array, s: dev.Stream) -> array:
    return make(_all_true, (x,), (), dt.bool_, s)


def allclose(a: Any, b: Any, /, rtol: float = 1e-05, atol: float = 1e-08, *,
             equal_nan: bool = False, stream: Any = None) -> array:
    """Whether every element of ``isclose(a, b, ...)`` holds: a 0-d bool array."""
    out = _isclose("allclose", a, b, rtol, atol, equal_nan, stream)
    return _all(out, dev.resolve_stream(stream))


def array_equal(a: Any, b: Any, /, *, equal_nan: bool = False, stream: Any = None) -> array:
    """Whether ``a`` and ``b`` have the same shape and equal values (dtypes may differ): a 0-d
    bool array. NaNs compare equal with ``equal_nan``."""
    a, b, dtype = promote_operands(a, b)
    if a._shape != b._shape:
        return from_data(np.array(False), dt.bool_)
    s = dev.resolve_stream(stream)
    name = "equal_nan" if equal_nan and dtype.kind in _FLOAT_KINDS else "equal"
    return _all(binary_op(name, a, b, s), s)

