"""Operands that are neither arrays nor Python numbers: objects with ``__float__``,
``__complex__``, ``__index__`` or only ``__int__``, conversions that raise or return junk, mocks,
Fraction and Decimal, subclasses of int/float/complex. MLX's bindings read a number-like object
as a complex scalar (nanobind's complex caster), refuse the rest with its ValueError, and answer
False for ``==``; differential against real MLX's CPU build."""

from __future__ import annotations

import decimal
import fractions
import unittest.mock

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import keep_array_class  # noqa: F401 - autouse fixture


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


class HasFloat:
    def __float__(self):
        return 2.5


class HasInt:  # __int__ alone: not a number for MLX
    def __int__(self):
        return 3


class HasIndex:
    def __index__(self):
        return 1


class HasComplex:
    def __complex__(self):
        return complex(1, 2)


class FloatAndIndex:
    def __float__(self):
        return 2.5

    def __index__(self):
        return 2  # in range: MLX reads past the end for an out-of-range index


class ComplexAndFloat:  # __complex__ wins
    def __complex__(self):
        return complex(1, 2)

    def __float__(self):
        return 2.5


class BadFloat:  # returns a non-float: not a number
    def __float__(self):
        return "x"


class RaisingFloat:  # raises: not a number (the error does not leak)
    def __float__(self):
        raise RuntimeError("boom")


class Mock:
    pass


class SizedComplex:  # a number-like object with __len__ (as a MagicMock has): still a scalar
    def __len__(self):
        return 0

    def __complex__(self):
        return complex(3, 1)


class IntSub(int):
    pass


class ComplexSub(complex):
    pass


OBJECTS = {
    "float": HasFloat, "int_only": HasInt, "index": HasIndex, "complex": HasComplex,
    "float_index": FloatAndIndex, "complex_float": ComplexAndFloat, "bad_float": BadFloat,
    "raising": RaisingFloat, "mock": Mock, "int_sub": lambda: IntSub(2),
    "complex_sub": lambda: ComplexSub(1 + 1j), "fraction": lambda: fractions.Fraction(1, 2),
    "decimal": lambda: decimal.Decimal("1.5"), "magic_mock": unittest.mock.MagicMock,
    "sized_complex": SizedComplex,
}


def _set(a, o):
    a[0] = o
    return a


OPS = {
    "add": lambda M, a, o: a + o, "radd": lambda M, a, o: o + a, "mul": lambda M, a, o: a * o,
    "sub_r": lambda M, a, o: o - a, "truediv": lambda M, a, o: a / o,
    "mx.add": lambda M, a, o: M.add(a, o), "mx.add_r": lambda M, a, o: M.add(o, a),
    "eq": lambda M, a, o: a == o, "ne": lambda M, a, o: a != o, "lt": lambda M, a, o: a < o,
    "and": lambda M, a, o: a & o, "iadd": lambda M, a, o: a.__iadd__(o),
    "mx.array": lambda M, a, o: M.array(o), "maximum": lambda M, a, o: M.maximum(a, o),
    "where": lambda M, a, o: M.where(a > 1, a, o), "where_scalars": lambda M, a, o:
    M.where(True, o, 1.0), "two_scalars": lambda M, a, o: M.multiply(o, o),
    "scalar_and_int": lambda M, a, o: M.add(o, 2), "exp": lambda M, a, o: M.exp(o),
    "full": lambda M, a, o: M.full((2,), o), "full_like": lambda M, a, o: M.full_like(a, o),
    "clip": lambda M, a, o: M.clip(a, o, None), "setitem": lambda M, a, o: _set(a, o),
    "at.add": lambda M, a, o: a.at[0].add(o), "getitem": lambda M, a, o: a[o],
}


def _outcome(fn):
    try:
        r = fn()
        if isinstance(r, bool):
            return ("bool", r)
        if not hasattr(r, "dtype") or isinstance(r, unittest.mock.Mock):
            return ("not an array", type(r).__name__)  # the operand's own operator answered
        return ("ok", str(r.dtype).rsplit(".", 1)[1], np.array(r))
    except Exception as e:  # noqa: BLE001 - compared below
        return ("error", e)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("obj", list(OBJECTS))
def test_operand_like_mlx(mx, obj, op, dtype):
    make = OBJECTS[obj]
    theirs = _outcome(lambda: OPS[op](mx, mx.array([1, 2, 3], getattr(mx, dtype)), make()))
    ours = _outcome(lambda: OPS[op](pm, pm.array([1, 2, 3], getattr(pm, dtype)), make()))
    if theirs[0] == "error":
        assert ours[0] == "error", f"MLX raised {theirs[1]!r}, we returned {ours[1:]!r}"
        assert isinstance(ours[1], type(theirs[1])), (theirs[1], ours[1])
        assert str(theirs[1]).split("\n")[0][:40] in str(ours[1]), (theirs[1], ours[1])
        return
    assert ours[0] == theirs[0], f"MLX returned {theirs[1:]!r}, we gave {ours[1:]!r}"
    if ours[0] in ("bool", "not an array"):
        assert ours[1] == theirs[1]
        return
    assert ours[1] == theirs[1]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6, atol=1e-6)


def test_plain_operands_stay_on_the_fast_path(monkeypatch):
    """Python numbers, numpy scalars and arrays never reach the slow conversion."""
    from pycudamlx import dtypes as D

    def boom(_value):
        raise AssertionError("odd_number reached for a plain operand")

    monkeypatch.setattr(D, "odd_number", boom)
    a = pm.array([1.0, 2.0])
    for o in (1, 2.5, True, 1 + 2j, np.float32(2), np.int64(3), np.ones(2, np.float32), a):
        pm.eval(a + o, o * a, pm.maximum(a, o))
    pm.eval(pm.add(1, 2.5), pm.exp(1.0), pm.full((2,), 3))
