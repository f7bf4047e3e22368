"""Constants, mx.astype, mx.view and the cumulative_* aliases, differential against MLX 0.32.4."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import pycudamlx.core as mx

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "complex64"]


@pytest.fixture(scope="module")
def mlx():
    return pytest.importorskip("mlx.core")


def _raw(x) -> np.ndarray:
    """The bytes of an array (ours or MLX's) as uint8, with its shape kept."""
    h = np.array(x.astype(x.dtype)) if not hasattr(x, "_numpy") else np.array(x._numpy())
    return np.ascontiguousarray(h).view(np.uint8)


def _rand_bytes(shape, dtype_name, seed=0):
    rng = np.random.default_rng(seed)
    size = getattr(mx, dtype_name).size
    raw = rng.integers(0, 256, size=tuple(shape[:-1]) + (shape[-1] * size,) if shape else (size,),
                       dtype=np.uint8)
    if dtype_name == "bool_":
        raw = raw & 1
    return raw


@pytest.mark.parametrize("name", ["e", "pi", "inf", "nan", "euler_gamma"])
def test_constants(mlx, name):
    ours, theirs = getattr(mx, name), getattr(mlx, name)
    assert type(ours) is type(theirs) is float
    assert (math.isnan(ours) and math.isnan(theirs)) or ours == theirs


def test_cumulative_aliases(mlx):
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    for ours, theirs in (("cumulative_sum", "cumsum"), ("cumulative_prod", "cumprod")):
        assert getattr(mlx, ours).__doc__ == getattr(mlx, theirs).__doc__  # MLX: true aliases
        for kw in ({}, {"axis": 1}, {"axis": 0, "reverse": True, "inclusive": False}):
            got = np.array(getattr(mx, ours)(mx.array(x), **kw))
            exp = np.array(getattr(mlx, ours)(mlx.array(x), **kw))
            np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", ["uint8", "int16", "float32", "int64", "bfloat16", "complex64"])
def test_view_matches_mlx_bits(mlx, src, dst):
    base = _rand_bytes((3, 8), src)
    # bool only holds 0/1 bytes; view everything else through uint8 to build the input
    ours_in = mx.view(mx.array(base), getattr(mx, src))
    theirs_in = mlx.view(mlx.array(base), getattr(mlx, src))
    for make in (lambda m, a: a, lambda m, a: a[:, 2:6], lambda m, a: m.transpose(a)[::2]):
        try:
            exp = mlx.view(make(mlx, theirs_in), getattr(mlx, dst))
            mlx.eval(exp)
        except ValueError as exc:
            with pytest.raises(ValueError, match=r"\[view\]"):
                mx.view(make(mx, ours_in), getattr(mx, dst))
            assert "[view]" in str(exc)
            continue
        got = mx.view(make(mx, ours_in), getattr(mx, dst))
        assert got.dtype == getattr(mx, dst) and got.shape == exp.shape
        assert _raw(got).tobytes() == np.array(mlx.view(exp, mlx.uint8)).tobytes()


def test_view_cases(mlx):
    a = mx.arange(12, dtype=mx.float32).reshape(3, 4)
    assert mx.view(a, mx.int16).shape == (3, 8)
    assert mx.view(a, mx.int64).shape == (3, 2)
    same = mx.view(a, mx.float32)  # a new array object (as in MLX) with a's value
    assert same is not a and np.array(same).tolist() == np.array(a).tolist()
    assert mx.view(mx.array(1.5), mx.int32).item() == 1069547520
    assert mx.view(1.5, mx.int32).item() == 1069547520  # a Python scalar: float32
    assert mx.view(1, mx.float32).dtype == mx.float32
    assert mx.view(mx.zeros((0, 4)), mx.int64).shape == (0, 2)
    assert mx.view(mx.zeros((4, 0)), mx.int64).shape == (4, 0)
    # broadcast input: viewed in its logical order
    b = mx.broadcast_to(mx.array([1.0, 2.0]), (3, 2))
    np.testing.assert_array_equal(np.array(mx.view(b, mx.int64)),
                                  np.array(mlx.view(mlx.broadcast_to(mlx.array([1.0, 2.0]),
                                                                     (3, 2)), mlx.int64)))
    x = np.arange(6, dtype=np.float32)[1:5]
    np.testing.assert_array_equal(np.array(mx.view(mx.array(np.arange(6, dtype=np.float32))[1:5],
                                                   mx.int64)), x.view(np.int64))
    # method form and stream keyword
    np.testing.assert_array_equal(np.array(a.view(mx.int32, stream=mx.cpu)),
                                  np.arange(12, dtype=np.float32).reshape(3, 4).view(np.int32))


def test_view_errors(mlx):
    with pytest.raises(ValueError, match="multiple of the requested type size"):
        mx.view(mx.arange(5, dtype=mx.float32), mx.int64)
    with pytest.raises(ValueError, match="multiple of the requested type size"):
        mx.view(mx.arange(6, dtype=mx.float32).reshape(3, 2).T, mx.int64)
    with pytest.raises(ValueError, match="scalar is only allowed"):
        mx.view(mx.array(1.5), mx.int16)
    with pytest.raises(ValueError, match="Invalid type list"):
        mx.view([1, 2], mx.int32)
    for bad in ("int32", np.int32):
        with pytest.raises(TypeError, match="incompatible function arguments"):
            mx.view(mx.arange(3), bad)
        with pytest.raises(TypeError):
            mlx.view(mlx.arange(3), bad)


@pytest.mark.parametrize("dst", DTYPES)
def test_astype_function(mlx, dst):
    x = np.array([[0.0, 1.5, 2.25], [3.0, 250.0, 7.5]], np.float32)  # -x to uint: see report
    got = mx.astype(mx.array(x), getattr(mx, dst))
    exp = mlx.astype(mlx.array(x), getattr(mlx, dst))
    assert repr(got.dtype) == repr(exp.dtype)
    if dst == "bfloat16":
        g, e = np.array(got).astype(np.float32), np.array(exp.astype(mlx.float32))
    else:
        g, e = np.array(got), np.array(exp)
    np.testing.assert_array_equal(g, e)


def test_astype_signature(mlx):
    a = mx.arange(3)
    same = mx.astype(a, mx.int32)  # a new array object (as in MLX) with a's value
    assert same is not a and same.tolist() == a.tolist()
    assert mx.astype(a, dtype=mx.float16, stream=mx.cpu).dtype == mx.float16
    for call in (lambda m: m.astype(m.arange(3), "float16"), lambda m: m.astype([1, 2], m.int32),
                 lambda m: m.astype(1.5, m.int32), lambda m: m.astype(a=m.arange(3),
                                                                    dtype=m.int32)):
        with pytest.raises(TypeError):
            call(mx)
        with pytest.raises(TypeError):
            call(mlx)
    with pytest.raises(TypeError):
        mx.astype(mx.arange(3), mx.float16, mx.cpu)  # stream is keyword-only


def test_view_bfloat16_roundtrip():
    x = np.array([1.0, -2.5, 3.25], ml_dtypes.bfloat16)
    bits = mx.view(mx.array(x), mx.uint16)
    np.testing.assert_array_equal(np.array(bits), x.view(np.uint16))
    back = mx.view(bits, mx.bfloat16)
    np.testing.assert_array_equal(np.array(back).view(np.uint16), x.view(np.uint16))
