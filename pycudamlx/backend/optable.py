"""The elementwise op table, shared by both backends: one row per op.

A row names the op, its arity, its numpy implementation (the CPU backend and the test oracle) and
its CUDA C++ expression per dtype family, over the compute-type operands ``a`` (and ``b``). The
CUDA backend turns the expression into the ``Op`` functor of a kernel module; a fused kernel can be
composed from the same expressions. Adding an op is adding a row.

Dtype families: ``b`` bool, ``i`` signed integer, ``u`` unsigned integer, ``f`` real floating
(float16 and bfloat16 compute in float), ``c`` complex64. ``*`` matches any family. Expressions
call the helpers of kernels/math.cuh (``pcm_*``), overloaded for every compute type, which give
defined results where C++ does not (integer division by zero, INT_MIN / -1, shift counts outside
the bit width, signed overflow): numpy's results, which the numpy functions here give too. Inside
an expression ``S`` names the storage type (``__half`` for float16), for ops whose MLX definition
rounds an intermediate to it.

Every rule here was checked against real MLX 0.32.4 (tests/test_elementwise.py compares them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import dtypes as dt

_F16 = np.dtype(np.float16)
# numpy reports ml_dtypes' bfloat16 as kind 'V', and no other dtype of ours is 'V': testing the
# kind needs no ml_dtypes (imported only when bfloat16 data exists) and costs less than ==.


@dataclass(frozen=True)
class ElementwiseOp:
    name: str
    arity: int
    numpy: Callable[..., np.ndarray]
    cuda: dict[str, str]
    #: output dtype: "same" (the kernel's input dtype), "bool" (comparisons, predicates),
    #: "real" (complex64 -> float32: abs, real, imag).
    result: str = "same"
    #: Dtype families the kernel is defined for (the op functions raise ``error`` for others).
    families: str = "biufc"
    #: How the op functions convert operands before the kernel: "same" (promote to a common
    #: dtype), "float" (promote, then bool and integers to float32: MLX's at_least_float),
    #: "shift" (promote, then bool to uint8), "logical" (each operand converted on its own, as
    #: ``mx.array`` would, then promoted: only truth values matter).
    inputs: str = "same"
    #: (exception class, message) for dtypes outside ``families``; the message may use
    #: {name} (MLX's name of the op), {dtype} (the kernel dtype), {a} and {b} (operand dtypes).
    error: tuple[type, str] | None = None
    #: the op's name in MLX's error messages, when it differs from ``name``
    label: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def expression(self, family: str) -> str:
        """The C++ expression for one dtype family; KeyError when the op has none."""
        expr = self.cuda.get(family)
        if expr is None:
            expr = self.cuda["*"]
        return expr

    def output_dtype(self, dtype: dt.Dtype) -> dt.Dtype:
        """The dtype this op's kernel writes for inputs of ``dtype``."""
        if self.result == "bool":
            return dt.bool_
        if self.result == "real" and dtype is dt.complex64:
            return dt.float32
        return dtype

    def check(self, dtype: dt.Dtype, a: dt.Dtype | None = None, b: dt.Dtype | None = None
              ) -> None:
        """Raise MLX's error when the op is undefined for (kernel) dtype ``dtype``."""
        if dtype.kind in self.families:
            return
        cls, msg = self.error or (ValueError, "[{name}] Not supported for {dtype}.")
        raise cls(msg.format(name=self.label or self.name, dtype=dtype.name,
                             a=(a or dtype).name, b=(b or dtype).name))


OPS: dict[str, ElementwiseOp] = {}


def _op(name: str, arity: int, numpy_fn: Callable[..., np.ndarray], cuda: dict[str, str] | str,
        **kw: object) -> None:
    if isinstance(cuda, str):
        cuda = {"*": cuda}
    OPS[name] = ElementwiseOp(name, arity, numpy_fn, cuda, **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# numpy helpers: MLX's semantics on numpy arrays (the inputs already have the kernel's dtype)


def _low(x: np.ndarray) -> bool:
    return x.dtype == _F16 or x.dtype.kind == "V"


def _inexact(x: np.ndarray) -> bool:
    """Real or complex floating (numpy reports ml_dtypes' bfloat16 as kind 'V')."""
    return x.dtype.kind in "fcV"


def _in_float(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``fn`` evaluated in float32 for float16/bfloat16 operands and rounded once, as the GPU
    kernels compute (and as MLX does for single-step functions)."""

    def run(*xs: np.ndarray) -> np.ndarray:
        d = xs[0].dtype
        if d == _F16 or d.kind == "V":
            r = fn(*(x.astype(np.float32) for x in xs))
            return r.astype(d) if r.dtype.kind == "f" else r
        return fn(*xs)

    run.__name__ = getattr(fn, "__name__", "op")
    return run


def _copy(a: np.ndarray) -> np.ndarray:
    return np.array(a, copy=True)


def _real_only(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` on inexact arrays, the identity (a copy) on integer and bool arrays."""

    def run(a: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "biu":
            return _copy(a)
        return fn(a)

    return run


def _sign(a: np.ndarray) -> np.ndarray:
    k = a.dtype.kind
    if k == "b":
        return _copy(a)
    if k == "u":
        return (a != 0).astype(a.dtype)
    if k == "i":
        return np.sign(a)
    if k == "c":
        r = np.abs(a)
        return np.where(a == 0, a, a / np.where(r == 0, 1, r).astype(a.dtype)).astype(a.dtype)
    return np.where(a > 0, 1, np.where(a < 0, -1, 0)).astype(a.dtype)  # NaN -> 0, as MLX


def _round(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return (np.rint(a.real) + 1j * np.rint(a.imag)).astype(a.dtype)
    return np.rint(a)


def _log1p(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "c":
        return np.log1p(a)
    # MLX's complex formula (accurate near 0).
    x, y = a.real, a.imag
    theta = np.arctan2(y, x + 1)
    small = np.hypot(x, y) < 0.5
    r = x * (2 + x) + y * y
    near = np.where(r == 0, x, 0.5 * np.log1p(r))
    far = np.log(np.hypot(x + 1, y))
    return (np.where(small, near, far) + 1j * theta).astype(a.dtype)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    d = x.dtype
    if d == _F16 or d.kind == "V":
        # MLX's CPU: exp(|x|) rounds to the half dtype, the rest runs in float32 (1.0f / ...)
        e = _exp32(np.abs(x.astype(np.float32))).astype(d).astype(np.float32)
        y = np.float32(1) / (np.float32(1) + e)
        return np.where(x < 0, y, np.float32(1) - y).astype(d)
    if d == np.float32:  # MLX's exp approximation, so bit for bit with MLX's CPU
        y = np.float32(1) / (np.float32(1) + _exp32(np.abs(x)))
        return np.where(x < 0, y, np.float32(1) - y)
    y = 1 / (1 + np.exp(np.abs(x)))
    return np.where(x < 0, y, 1 - y).astype(d)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    k = a.dtype.kind
    if k == "b":
        return a | ~b
    if k == "i":
        neg = b < 0
        return np.where(neg, 0, np.power(a, np.where(neg, 0, b))).astype(a.dtype)
    if k == "u":
        return np.power(a, b)
    if k == "c":
        with np.errstate(all="ignore"):
            return np.exp(b * np.log(a)).astype(a.dtype)  # MLX's std::pow: 0 ** 0 is nan
    return np.power(a, b)


def _subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.not_equal(a, b) if a.dtype.kind == "b" else np.subtract(a, b)


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    k = a.dtype.kind
    if k == "b":
        return np.logical_and(a, b)
    if k in "iu":
        return np.floor_divide(a, b)  # x // 0 -> 0 and INT_MIN // -1 -> INT_MIN
    if k == "c":
        return np.divide(a, b)  # MLX: floor of a complex quotient is the quotient
    return np.floor(np.divide(a, b))  # MLX: floor(divide(a, b)), the quotient rounded first


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    k = a.dtype.kind
    if k == "b":  # MLX: a % b over {0, 1}, x % False is x
        return np.logical_and(a, np.logical_not(b))
    if k in "iu":  # MLX: integer x % 0 is x (numpy's 0); INT_MIN % -1 is 0 (MLX: SIGFPE)
        return np.where(b == 0, a, np.remainder(a, b))
    low = _low(a)
    x, y = (a.astype(np.float32), b.astype(np.float32)) if low else (a, b)
    r = np.fmod(x, y)
    r = np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)
    return r.astype(a.dtype)


def _lex_gt(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "c":
        return np.maximum(a, b)
    return np.where(np.isnan(b), b, np.where(np.isnan(a), a, np.where(_lex_gt(a, b), a, b)))


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "c":
        return np.minimum(a, b)
    return np.where(np.isnan(b), b, np.where(np.isnan(a), a, np.where(_lex_gt(b, a), a, b)))


def _logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    hi = _maximum(a, b)
    lo = _minimum(a, b)
    d = a.dtype
    with np.errstate(all="ignore"):
        if d == _F16 or d.kind == "V":
            # MLX's CPU runs max + log1p(exp(min - max)) in the half dtype: every step (the
            # difference, exp, log1p, the sum) rounds to it (softplus and mish show it).
            f32 = np.float32

            def rnd(x: np.ndarray) -> np.ndarray:
                return x.astype(d).astype(f32)

            h = hi.astype(f32)
            out = h + rnd(np.log1p(rnd(np.exp(rnd(lo.astype(f32) - h)))))
        else:
            out = hi + _log1p(_exp(lo - hi))
    mask = (lo == -np.inf) | (hi == np.inf)
    return np.where(mask, hi, out).astype(a.dtype)


def _zeros_bool(a: np.ndarray) -> np.ndarray:
    return np.zeros(a.shape, dtype=np.bool_)


def _isnan(a: np.ndarray) -> np.ndarray:
    return np.isnan(a) if _inexact(a) else _zeros_bool(a)


def _isinf(a: np.ndarray) -> np.ndarray:
    return np.isinf(a) if _inexact(a) else _zeros_bool(a)


def _isfinite(a: np.ndarray) -> np.ndarray:
    return np.isfinite(a) if _inexact(a) else np.ones(a.shape, dtype=np.bool_)


def _isposinf(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return (a.real == np.inf) & (a.imag == 0)
    return a == np.inf if _inexact(a) else _zeros_bool(a)


def _isneginf(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return (a.real == -np.inf) & (a.imag == 0)
    return a == -np.inf if _inexact(a) else _zeros_bool(a)


def _real(a: np.ndarray) -> np.ndarray:
    return np.array(a.real, copy=True)


def _imag(a: np.ndarray) -> np.ndarray:
    return np.array(a.imag, copy=True) if a.dtype.kind == "c" else np.zeros_like(a)


def _equal_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    eq = a == b
    if _inexact(a):
        eq |= np.isnan(a) & np.isnan(b)
    return eq


# MLX's CPU float32 approximations, repeated step for step so that values match bit for bit:
# exp, sin/cos, and erf/erfinv (numpy has neither; MLX evaluates them in float32 for every
# floating dtype), so mx.random.normal draws print MLX's digits and gelu agrees exactly.

def _fma32(a: Any, b: Any, c: Any) -> np.ndarray:
    """float32 fma: the product of two float32 values is exact in float64, so one float64
    add rounded to float32 is the fused result (but for double-rounding ties, ~2^-29)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
            ).astype(np.float32)


_EXP_POLY = tuple(np.float32(c) for c in (
    1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
    2.402264791363012e-1, 6.931472028550421e-1, 1.0))


def _exp32(x: np.ndarray) -> np.ndarray:
    """MLX's CPU exp for float32 (bit for bit): 2^round(x log2 e) times a degree-6 polynomial in
    the fraction, inf above 88 and 0 below -88 (MLX's cutoffs, not float32's)."""
    with np.errstate(all="ignore"):
        y = x * np.float32(1.442695)
        ipart = np.floor(y + np.float32(0.5))
        fpart = y - ipart
        p = np.full(x.shape, _EXP_POLY[0], np.float32)
        for c in _EXP_POLY[1:]:
            p = _fma32(p, fpart, c)
        e = np.clip(ipart, -127, 128).astype(np.int32)
        r = ((e + 127).astype(np.uint32) << np.uint32(23)).view(np.float32) * p
        r = np.where(np.isnan(x), x, r)
        r = np.where(x > np.float32(88.0), np.float32(np.inf), r)
        return np.where(x < np.float32(-88.0), np.float32(0.0), r).astype(np.float32)


def _sincos32(v: np.ndarray, sine: bool) -> np.ndarray:
    """MLX's CPU sin/cos for float32 (Cephes' sinf/cosf, bit for bit): reduce by multiples of
    pi/4 in three fma steps, then one of two polynomials; |x| > 2^23 goes to libm (here the
    correctly rounded double result, as glibc's sinf/cosf nearly always are)."""
    f32 = np.float32
    with np.errstate(all="ignore"):
        x = np.abs(v)
        big = ~(x <= f32(8388608.0))
        x = np.where(big, f32(0.0), x)
        quad = (x * f32(1.27323954473516)).astype(np.uint32)
        quad = (quad + np.uint32(1)) & ~np.uint32(1)
        y = quad.astype(f32)
        for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
            x = _fma32(y, f32(c), x)
        z = x * x
        y1 = _fma32(z, f32(2.443315711809948e-5), f32(-1.388731625493765e-3))
        y2 = _fma32(z, f32(-1.9515295891e-4), f32(8.3321608736e-3))
        y1 = _fma32(y1, z, f32(4.166664568298827e-2))
        y2 = _fma32(y2, z, f32(-1.6666654611e-1))
        y1 = y1 * z * z
        y2 = _fma32(x, y2 * z, x)
        y1 = _fma32(z, f32(-0.5), y1) + f32(1.0)
        second = (quad & np.uint32(2)) != 0
        if sine:
            r = np.where(second, y1, y2)
            r = np.where((v < 0) ^ ((quad & np.uint32(4)) != 0), -r, r)
            libm = np.sin(v.astype(np.float64)).astype(f32)
        else:
            r = np.where(second, y2, y1)
            r = np.where(((quad - np.uint32(2)) & np.uint32(4)) != 0, r, -r)
            libm = np.cos(v.astype(np.float64)).astype(f32)
        r = np.where(big, libm, r)
        return np.where(np.isnan(v), v, r)


def _sin(a: np.ndarray) -> np.ndarray:
    return _sincos32(a, True) if a.dtype == np.float32 else np.sin(a)


def _cos(a: np.ndarray) -> np.ndarray:
    return _sincos32(a, False) if a.dtype == np.float32 else np.cos(a)


def _log(a: np.ndarray) -> np.ndarray:
    """float32 log correctly rounded (through float64), as glibc's logf that MLX's CPU calls
    is but for ~0.5% of inputs; numpy's own float32 log differs from it in ~20%."""
    if a.dtype == np.float32:
        with np.errstate(all="ignore"):
            return np.log(a.astype(np.float64)).astype(np.float32)
    return np.log(a)


def _exp(a: np.ndarray) -> np.ndarray:
    return _exp32(a) if a.dtype == np.float32 else np.exp(a)


def _erf32(x: np.ndarray) -> np.ndarray:
    """MLX's CPU erf for float32 (bit for bit): Abramowitz-Stegun 7.1.26 with MLX's exp, error
    up to ~1e-7 absolute (so erf(1e-4) is off by ~1e-3 relative, and erf(0) is -0.0)."""
    with np.errstate(all="ignore"):
        t = np.float32(1.0) / _fma32(np.float32(0.3275911), np.abs(x), np.float32(1.0))
        r = _fma32(np.float32(1.061405429), t, np.float32(-1.453152027))
        for c in (1.421413741, -0.284496736, 0.254829592):
            r = _fma32(r, t, np.float32(c))
        e = -_exp32((-x) * x)
        res = _fma32(e * t, r, np.float32(1.0))
        return np.where(x > 0, res, -res)


def _erf(a: np.ndarray) -> np.ndarray:
    # MLX evaluates every floating type (float64 and the halves included) in float32.
    return _erf32(a.astype(np.float32)).astype(a.dtype)


# MLX's CPU erfinv (M. Giles' single-precision approximation, ~2.4 ulp): t = log(1 - a^2),
# then a * p(t) with one of two degree-8/9 polynomials in fma steps. Each fma is emulated in
# float64 (the float32 product is exact there) and rounded to float32, the log correctly
# rounded: bit-exact with MLX's CPU but for ~3e-4 of inputs (glibc's logf is not always
# correctly rounded), and ~20x faster than refining to float64 precision.
_ERFINV_BIG = tuple(np.float32(c) for c in (
    3.03697567e-10, 2.93243101e-8, 1.22150334e-6, 2.84108955e-5, 3.93552968e-4,
    3.02698812e-3, 4.83185798e-3, -2.64646143e-1, 8.40016484e-1))
_ERFINV_SMALL = tuple(np.float32(c) for c in (
    5.43877832e-9, 1.43285448e-7, 1.22774793e-6, 1.12963626e-7, -5.61530760e-5,
    -1.47697632e-4, 2.31468678e-3, 1.15392581e-2, -2.32015476e-1, 8.86226892e-1))


def _fma_poly32(coeffs: tuple, t: np.ndarray, t64: np.ndarray) -> np.ndarray:
    p = np.full(t.shape, coeffs[0], np.float32)
    for c in coeffs[1:]:
        p = (p.astype(np.float64) * t64 + np.float64(c)).astype(np.float32)
    return p


def _erfinv32(a: np.ndarray) -> np.ndarray:
    a64 = a.astype(np.float64)
    with np.errstate(all="ignore"):
        t = np.log((1.0 - a64 * a64).astype(np.float32).astype(np.float64)).astype(np.float32)
        t64 = t.astype(np.float64)
        p = np.where(np.abs(t) > np.float32(6.125), _fma_poly32(_ERFINV_BIG, t, t64),
                     _fma_poly32(_ERFINV_SMALL, t, t64))
        return a * p


def _erfinv(a: np.ndarray) -> np.ndarray:
    # MLX evaluates every floating type (float64 and the halves included) in float32.
    return _erfinv32(a.astype(np.float32)).astype(a.dtype)


def _shift(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return fn(a, b).astype(a.dtype)

    return run


# --------------------------------------------------------------------------------------------------
# Error messages (MLX 0.32.4's wording and exception classes)

_NOT_SUPPORTED = (ValueError, "[{name}] Not supported for {dtype}.")
_BITWISE = (RuntimeError,
            "[{name}] Only allowed on integer or boolean types but got types {a} and {b}.")

# --------------------------------------------------------------------------------------------------
# Unary rows

_op("abs", 1, np.abs, "pcm_abs(a)", result="real")
_op("negative", 1, np.negative, "pcm_neg(a)", families="iufc",
    error=(ValueError, "[negative] Not supported for bool, use logical_not instead."))
_op("positive", 1, _copy, "a")
_op("square", 1, lambda a: np.multiply(a, a), "pcm_mul(a, a)")
_op("sign", 1, _sign, "pcm_sign(a)")
_op("floor", 1, _real_only(np.floor), "pcm_floor_op(a)", families="biuf")
_op("ceil", 1, _real_only(np.ceil), "pcm_ceil_op(a)", families="biuf")
_op("trunc", 1, _real_only(np.trunc), "pcm_trunc_op(a)", families="biuf")
_op("round", 1, _real_only(_round), "pcm_round(a)")
_op("real", 1, _real, "pcm_real(a)", result="real")
_op("imag", 1, _imag, "pcm_imag(a)", result="real")
_op("conjugate", 1, np.conjugate, "pcm_conj(a)")
_op("logical_not", 1, np.logical_not, "!pcm_truthy(a)", result="bool")
_op("bitwise_invert", 1, np.invert, {"b": "!a", "*": "~a"}, families="biu",
    error=(ValueError, "[bitwise_invert] Bitwise inverse only allowed on integer types."))
_op("isnan", 1, _isnan, "pcm_isnan(a)", result="bool")
_op("isinf", 1, _isinf, "pcm_isinf(a)", result="bool")
_op("isfinite", 1, _isfinite, "pcm_isfinite(a)", result="bool")
_op("isposinf", 1, _isposinf, "pcm_isposinf(a)", result="bool")
_op("isneginf", 1, _isneginf, "pcm_isneginf(a)", result="bool")

# Transcendental functions: bool and integers become float32 first (MLX's at_least_float).
for _name, _np_fn, _families in (
    ("sqrt", np.sqrt, "fc"), ("exp", _exp, "fc"), ("expm1", np.expm1, "f"),
    ("log", _log, "fc"), ("log2", np.log2, "fc"), ("log10", np.log10, "fc"),
    ("log1p", _log1p, "fc"), ("sin", _sin, "fc"), ("cos", _cos, "fc"),
    ("tan", np.tan, "fc"), ("sinh", np.sinh, "fc"), ("cosh", np.cosh, "fc"),
    ("tanh", np.tanh, "fc"), ("arcsin", np.arcsin, "fc"), ("arccos", np.arccos, "fc"),
    ("arctan", np.arctan, "fc"), ("arcsinh", np.arcsinh, "fc"), ("arccosh", np.arccosh, "fc"),
    ("arctanh", np.arctanh, "fc"), ("erf", _erf, "f"), ("erfinv", _erfinv, "f"),
):
    _cname = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
              "arccosh": "acosh", "arctanh": "atanh"}.get(_name, _name)
    _op(_name, 1, _in_float(_np_fn), f"pcm_{_cname}(a)", families=_families, inputs="float")
_op("sigmoid", 1, _sigmoid, "pcm_sigmoid(a)", families="f", inputs="float")  # halves: own rule


def _rsqrt(a: np.ndarray) -> np.ndarray:
    d = a.dtype
    if d == _F16 or d.kind == "V":
        # MLX's CPU: the square root rounds to the half dtype before 1 / x (every norm layer
        # in mixed precision shows it: a rounding once in float32 differs for 14% of inputs)
        root = np.sqrt(a.astype(np.float32)).astype(d).astype(np.float32)
        return (np.float32(1) / root).astype(d)
    return 1 / np.sqrt(a)


_op("rsqrt", 1, _rsqrt, "pcm_rsqrt(a)", families="fc", inputs="float")
_op("reciprocal", 1, _in_float(lambda a: 1 / a), "pcm_reciprocal(a)", families="fc",
    inputs="float")

# --------------------------------------------------------------------------------------------------
# Binary rows

_op("add", 2, np.add, {"*": "a + b", "b": "a || b"})
_op("subtract", 2, _subtract, {"*": "a - b", "b": "a != b"})
_op("multiply", 2, np.multiply, "pcm_mul(a, b)")
_op("divide", 2, _in_float(np.divide), "pcm_div(a, b)", families="fc", inputs="float")
_op("floor_divide", 2, _floor_divide,
    {"f": "pcm_floor_op(to_compute(cast<S>(a / b)))", "c": "pcm_div(a, b)",
     "*": "pcm_floordiv(a, b)"})
# Integer x % 0 is x (MLX's result; math.cuh's pcm_remainder gives 0 there: guarded here, so only
# the remainder modules of kernels_ptx change).
_op("remainder", 2, _remainder,
    {"b": "a && !b", "i": "(b == 0 ? a : pcm_remainder(a, b))",
     "u": "(b == 0 ? a : pcm_remainder(a, b))", "*": "pcm_remainder(a, b)"}, families="biuf",
    error=(ValueError, "[{name}] Complex type not supported."))
_op("power", 2, _power, "pcm_power(a, b)")
_op("maximum", 2, _maximum, "pcm_max(a, b)")
_op("minimum", 2, _minimum, "pcm_min(a, b)")
_op("arctan2", 2, _in_float(np.arctan2), "pcm_atan2(a, b)", families="f", inputs="float")
_op("logaddexp", 2, _logaddexp, "pcm_logaddexp(a, b)", families="fc",
    inputs="float")  # halves: own rule
_op("equal", 2, np.equal, "a == b", result="bool")
_op("not_equal", 2, np.not_equal, "a != b", result="bool")
_op("greater", 2, np.greater, {"*": "a > b", "c": "pcm_gt(a, b)"}, result="bool")
_op("greater_equal", 2, np.greater_equal, {"*": "a >= b", "c": "pcm_ge(a, b)"}, result="bool")
_op("less", 2, np.less, {"*": "a < b", "c": "pcm_lt(a, b)"}, result="bool")
_op("less_equal", 2, np.less_equal, {"*": "a <= b", "c": "pcm_le(a, b)"}, result="bool")
_op("equal_nan", 2, _equal_nan, "pcm_equal_nan(a, b)", result="bool")
_op("logical_and", 2, np.logical_and, "pcm_truthy(a) && pcm_truthy(b)", result="bool",
    inputs="logical")
_op("logical_or", 2, np.logical_or, "pcm_truthy(a) || pcm_truthy(b)", result="bool",
    inputs="logical")
_op("logical_xor", 2, np.logical_xor, "pcm_truthy(a) != pcm_truthy(b)", result="bool",
    inputs="logical")
_op("bitwise_and", 2, np.bitwise_and, {"b": "a && b", "*": "a & b"}, families="biu",
    error=_BITWISE)
_op("bitwise_or", 2, np.bitwise_or, {"b": "a || b", "*": "a | b"}, families="biu",
    error=_BITWISE)
_op("bitwise_xor", 2, np.bitwise_xor, {"b": "a != b", "*": "a ^ b"}, families="biu",
    error=_BITWISE)
_op("left_shift", 2, _shift(np.left_shift), "pcm_shl(a, b)", families="iu", inputs="shift",
    error=_BITWISE)
_op("right_shift", 2, _shift(np.right_shift), "pcm_shr(a, b)", families="iu", inputs="shift",
    error=(RuntimeError, "[{name}] Only allowed on integer or boolean types but got types "
           "{dtype} and {dtype}."))  # MLX reports the promoted dtype here

del _name, _np_fn, _families, _cname
