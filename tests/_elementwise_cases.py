"""Cases shared by tests/test_elementwise.py (CPU, against real MLX) and
tests/test_gpu_elementwise.py (GPU, against the CPU backend and MLX).

Inputs are built in numpy from values that every dtype holds exactly, then handed to both
libraries with ``dtype=``, so both start from identical data. Integer divisors are never 0 (MLX
0.32.4 dies with SIGFPE on integer division by zero; our defined results are tested apart).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

DTYPES = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "float32", "float64", "bfloat16", "complex64")
NP_STORAGE = {"bool": np.bool_, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
              "uint64": np.uint64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
              "int64": np.int64, "float16": np.float16, "float32": np.float32,
              "float64": np.float64, "bfloat16": ml_dtypes.bfloat16,
              "complex64": np.complex64}

# Public unary functions: name -> input domain for real floats (lo, hi).
UNARY: dict[str, tuple[float, float]] = {
    "abs": (-3, 3), "negative": (-3, 3), "positive": (-3, 3), "square": (-3, 3),
    "sign": (-3, 3), "floor": (-3, 3), "ceil": (-3, 3), "trunc": (-3, 3), "round": (-3, 3),
    "sqrt": (0.01, 5), "rsqrt": (0.05, 5), "reciprocal": (0.1, 4), "exp": (-4, 4),
    "expm1": (-2, 2), "log": (0.05, 5), "log2": (0.05, 5), "log10": (0.05, 5),
    "log1p": (-0.9, 4), "sin": (-3, 3), "cos": (-3, 3), "tan": (-1.2, 1.2),
    "sinh": (-3, 3), "cosh": (-3, 3), "tanh": (-3, 3), "arcsin": (-0.95, 0.95),
    "arccos": (-0.95, 0.95), "arctan": (-3, 3), "arcsinh": (-3, 3), "arccosh": (1.05, 4),
    "arctanh": (-0.9, 0.9), "erf": (-2.5, 2.5), "erfinv": (-0.95, 0.95), "sigmoid": (-6, 6),
    "degrees": (-3, 3), "radians": (-200, 200), "conj": (-3, 3), "conjugate": (-3, 3),
    "real": (-3, 3), "imag": (-3, 3), "isnan": (-3, 3), "isinf": (-3, 3),
    "isfinite": (-3, 3), "isposinf": (-3, 3), "isneginf": (-3, 3), "nan_to_num": (-3, 3),
    "logical_not": (-3, 3), "bitwise_invert": (-3, 3),
    "acos": (-0.95, 0.95), "acosh": (1.05, 4), "asin": (-0.95, 0.95), "asinh": (-3, 3),
    "atan": (-3, 3), "atanh": (-0.9, 0.9),
}
# Integer inputs of these stay in a small range (so float results stay in the domain).
INT_RANGE = {"arccosh": (1, 4), "acosh": (1, 4), "arcsin": (-1, 1), "asin": (-1, 1),
             "arccos": (-1, 1), "acos": (-1, 1), "arctanh": (0, 0), "atanh": (0, 0),
             "erfinv": (0, 0), "log": (1, 9), "log2": (1, 9), "log10": (1, 9),
             "log1p": (0, 9), "sqrt": (0, 9), "rsqrt": (1, 9), "reciprocal": (1, 9),
             "exp": (-5, 5), "expm1": (-5, 5), "sinh": (-5, 5), "cosh": (-5, 5),
             "radians": (-120, 120), "degrees": (-5, 5)}

BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "divmod",
          "power", "pow", "maximum", "minimum", "arctan2", "atan2", "logaddexp", "equal",
          "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
          "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
          "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift")
DIVISIONS = {"divide", "floor_divide", "remainder", "divmod"}
SHIFTS = {"left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift"}
POWERS = {"power", "pow"}


def _exact(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` rounded to what ``dtype`` holds, as float64/complex128/int64/bool data."""
    if dtype == "bool":
        return values.astype(bool)
    if dtype == "complex64":
        return values.astype(np.complex64).astype(np.complex128)
    storage = np.dtype(NP_STORAGE[dtype])
    if storage.kind == "f":
        return values.astype(storage).astype(np.float64)
    return values.astype(np.int64)


def int_bounds(dtype: str) -> tuple[int, int]:
    info = np.iinfo(NP_STORAGE[dtype])
    return int(info.min), int(info.max)


def unary_input(op: str, dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype == "complex64":
        v = rng.uniform(-2, 2, n) + 1j * rng.uniform(-2, 2, n)
        return _exact(v, dtype).reshape(shape)
    if dtype in ("float16", "float32", "float64", "bfloat16"):
        lo, hi = UNARY.get(op, (-3, 3))
        return _exact(rng.uniform(lo, hi, n), dtype).reshape(shape)
    lo, hi = INT_RANGE.get(op, (-20, 20))
    imin, imax = int_bounds(dtype)
    lo, hi = max(lo, imin), min(hi, imax)
    return rng.integers(lo, hi + 1, n).astype(np.int64).reshape(shape)


def binary_inputs(op: str, dtype: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...],
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    na, nb = int(np.prod(shape_a)), int(np.prod(shape_b))
    if dtype == "bool":
        a = rng.integers(0, 2, na).astype(bool)
        b = np.ones(nb, bool) if op in DIVISIONS else rng.integers(0, 2, nb).astype(bool)
        return a.reshape(shape_a), b.reshape(shape_b)
    if dtype == "complex64":
        a = rng.uniform(-2, 2, na) + 1j * rng.uniform(-2, 2, na)
        b = rng.uniform(-2, 2, nb) + 1j * rng.uniform(-2, 2, nb)
        if op in POWERS:
            a = rng.uniform(0.2, 2, na) + 1j * rng.uniform(-1, 1, na)
        # ties for comparisons
        b[: nb // 3] = a[: nb // 3] if na == nb else b[: nb // 3]
        return _exact(a, dtype).reshape(shape_a), _exact(b, dtype).reshape(shape_b)
    if dtype in ("float16", "float32", "float64", "bfloat16"):
        a = rng.uniform(-4, 4, na)
        b = rng.uniform(-4, 4, nb)
        if op in POWERS:
            a = rng.uniform(0.1, 3, na)
            b = rng.uniform(-3, 3, nb)
        if op in DIVISIONS:
            b = np.where(np.abs(b) < 0.25, 1.5, b)
        if na == nb:
            b[: nb // 4] = a[: nb // 4]  # ties for comparisons, exact quotients
        return _exact(a, dtype).reshape(shape_a), _exact(b, dtype).reshape(shape_b)
    imin, imax = int_bounds(dtype)
    if op in SHIFTS:
        bits = np.dtype(NP_STORAGE[dtype]).itemsize * 8
        a = rng.integers(max(imin, -1000), min(imax, 1000) + 1, na)
        b = rng.integers(0, bits, nb)
        return a.reshape(shape_a), b.reshape(shape_b)
    if op in POWERS:
        a = rng.integers(max(imin, -4), 5, na)
        b = rng.integers(-3 if imin < 0 else 0, 7, nb)
        return a.reshape(shape_a), b.reshape(shape_b)
    lo, hi = max(imin, -50), min(imax, 50)
    a = rng.integers(lo, hi + 1, na)
    b = rng.integers(lo, hi + 1, nb)
    if op in DIVISIONS:
        b = np.where(b == 0, 3, b)
    if na == nb:
        b[: nb // 4] = np.where(a[: nb // 4] == 0, 3, a[: nb // 4]) if op in DIVISIONS \
            else a[: nb // 4]
    return a.reshape(shape_a), b.reshape(shape_b)


def to_host(x: Any) -> np.ndarray:
    """An array of either library as numpy (bfloat16 as float32, which holds it exactly)."""
    if dtype_name(x) == "bfloat16":
        if type(x).__module__.startswith("mlx"):
            import mlx.core as lib
        else:
            import pycudamlx.core as lib
        x = x.astype(lib.float32)
    return np.array(x)


def dtype_name(x: Any) -> str:
    return str(x.dtype).rsplit(".", 1)[-1]


#: Looser tolerances where MLX computes in steps of the small dtype or with approximations.
_LOOSE = {"sigmoid", "logaddexp", "erf", "erfinv", "rsqrt", "tan", "power", "pow",
          "degrees", "radians"}


def tolerance(op: str, dtype: str) -> tuple[float, float]:
    """(rtol, atol) for comparing ``op``'s results in ``dtype`` across implementations."""
    if dtype == "float16":
        return (1e-2, 2e-3) if op in _LOOSE else (2e-3, 1e-3)
    if dtype == "bfloat16":
        return (4e-2, 2e-2) if op in _LOOSE else (1e-2, 1e-2)
    if dtype == "complex64":
        return 2e-4, 2e-5
    if dtype == "float32":
        return (2e-5, 2e-6) if op in _LOOSE else (1e-5, 1e-6)
    if dtype == "float64":
        # MLX computes several float64 functions (sin, cos, exp, erf ...) through float32
        # approximations; we keep double precision, so compare at float32's accuracy.
        return (2e-6, 5e-7) if op in ("erf", "erfinv") else (2e-6, 1e-7)
    return 0.0, 0.0


def assert_close(ours: Any, ref: Any, op: str, dtype: str | None = None) -> None:
    """Same dtype name, shape and values (NaN where NaN; exact for integers and bool)."""
    assert dtype_name(ours) == dtype_name(ref), (op, dtype_name(ours), dtype_name(ref))
    assert tuple(ours.shape) == tuple(ref.shape), (op, ours.shape, ref.shape)
    got, want = to_host(ours), to_host(ref)
    kind = got.dtype.kind
    if kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=op)
        return
    rtol, atol = tolerance(op, dtype or dtype_name(ours))
    if kind == "c":
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(got), part(want), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=op)
        return
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=op)
