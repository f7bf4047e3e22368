"""Tests for pycudamlx.core.dtypes.

Differential tests compare with real MLX (``mlx.core``) wherever it is importable; they skip
themselves otherwise. The plain tests pin the same facts as constants, so the rules stay checked
on machines without MLX.
"""

from __future__ import annotations

import copy
import decimal
import fractions
import itertools
import operator
import pickle

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycudamlx import dtypes as D  # noqa: N812 - short, used everywhere

DTYPE_NAMES = [
    "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64",
]  # fmt: skip
CATEGORY_NAMES = [
    "complexfloating", "floating", "inexact", "signedinteger",
    "unsignedinteger", "integer", "number", "generic",
]  # fmt: skip
ISDTYPE_KINDS = [
    "bool", "signed integer", "unsigned integer", "integral",
    "real floating", "complex floating", "numeric",
]  # fmt: skip
OURS = {name: getattr(D, name) for name in DTYPE_NAMES}


@pytest.fixture(scope="module")
def mx():
    """Real MLX, the oracle; tests that use it skip where it is not installed."""
    return pytest.importorskip("mlx.core")


def mx_dtype(mx, name: str):
    return getattr(mx, name)


def ours_for(mx_value) -> D.Dtype:
    """Our dtype with the same name as an MLX dtype (``mlx.core.bool`` -> ``bool_``)."""
    return D.dtype_from_name(str(mx_value).rsplit(".", 1)[1])


def outcome(fn, *args, **kwargs):
    """('ok', fn(...)) or ('error', exception class, message): comparable between libraries."""
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:  # every exception: we compare whatever both sides raise
        return ("error", type(exc), str(exc))


def result_dtype(fn, *args, **kwargs):
    """``fn(*args).dtype``: the dtype of an MLX op's result."""
    return fn(*args, **kwargs).dtype


def add_dtype(a, b):
    """The dtype of ``a + b`` through the operator (its errors name the operation)."""
    return (a + b).dtype


def assert_same_error(ours, theirs, fragment: str | None = None):
    """Both raised the same exception class; ours holds the fragment (or MLX's whole message)."""
    assert ours[0] == "error", ours
    assert theirs[0] == "error", theirs
    assert ours[1] is theirs[1], (ours, theirs)
    expected = fragment if fragment is not None else theirs[2]
    assert expected in ours[2], (ours, theirs)
    if fragment is not None:
        assert fragment in theirs[2], (ours, theirs)


# ------------------------------------------------------------------------------------------
# Dtype objects
# ------------------------------------------------------------------------------------------


def test_dtype_public_attributes_match_mlx(mx):
    for name in DTYPE_NAMES:
        theirs, ours = mx_dtype(mx, name), OURS[name]
        assert ours.size == theirs.size
        assert repr(ours) == repr(theirs)
        assert str(ours) == str(theirs)
        assert hash(ours) == hash(theirs)
        assert ours.index == hash(theirs)


def test_dtype_equality_with_foreign_objects_matches_mlx(mx):
    others = [np.float32, np.dtype("float32"), "float32", 10, mx.floating]
    for other in others:
        theirs = other if other is not mx.floating else mx.floating
        ours_other = other if other is not mx.floating else D.floating
        assert (D.float32 == ours_other) is (mx.float32 == theirs) is False
        assert (D.float32 != ours_other) is (mx.float32 != theirs) is True
    assert (np.dtype("float32") == D.float32) is (np.dtype("float32") == mx.float32) is False
    # MLX's binding refuses None in == and != (TypeError), and so do we
    for compare in (operator.eq, operator.ne):
        assert_same_error(
            outcome(compare, D.float32, None),
            outcome(compare, mx.float32, None),
            "__eq__(): incompatible function arguments",
        )
        assert_same_error(
            outcome(compare, None, D.float32),
            outcome(compare, None, mx.float32),
            "__eq__(): incompatible function arguments",
        )
    assert (D.floating == None) is (mx.floating == None) is False  # noqa: E711


def test_dtype_cannot_be_constructed_or_mutated_like_mlx(mx):
    assert_same_error(outcome(D.Dtype), outcome(mx.Dtype))
    assert_same_error(outcome(D.Dtype, 1), outcome(mx.Dtype, 1))
    assert_same_error(
        outcome(setattr, D.float32, "size", 3),
        outcome(setattr, mx.float32, "size", 3),
    )
    assert_same_error(
        outcome(setattr, D.float32, "foo", 3),
        outcome(setattr, mx.float32, "foo", 3),
    )
    assert_same_error(
        outcome(operator.lt, D.float32, D.float16), outcome(operator.lt, mx.float32, mx.float16)
    )


def test_dtype_internal_attributes():
    expected = {
        # name: (size, name, numpy dtype, C type, kind)
        "bool_": (1, "bool", np.dtype(np.bool_), "bool", "b"),
        "uint8": (1, "uint8", np.dtype(np.uint8), "uint8_t", "u"),
        "uint16": (2, "uint16", np.dtype(np.uint16), "uint16_t", "u"),
        "uint32": (4, "uint32", np.dtype(np.uint32), "uint32_t", "u"),
        "uint64": (8, "uint64", np.dtype(np.uint64), "uint64_t", "u"),
        "int8": (1, "int8", np.dtype(np.int8), "int8_t", "i"),
        "int16": (2, "int16", np.dtype(np.int16), "int16_t", "i"),
        "int32": (4, "int32", np.dtype(np.int32), "int32_t", "i"),
        "int64": (8, "int64", np.dtype(np.int64), "int64_t", "i"),
        "float16": (2, "float16", np.dtype(np.float16), "__half", "f"),
        "bfloat16": (2, "bfloat16", np.dtype(ml_dtypes.bfloat16), "__nv_bfloat16", "f"),
        "float32": (4, "float32", np.dtype(np.float32), "float", "f"),
        "float64": (8, "float64", np.dtype(np.float64), "double", "f"),
        "complex64": (8, "complex64", np.dtype(np.complex64), "complex64_t", "c"),
    }
    for attr_name, (size, name, np_dtype, c_type, kind) in expected.items():
        dtype = OURS[attr_name]
        assert (dtype.size, dtype.name, dtype.np_dtype, dtype.c_type, dtype.kind) == (
            size, name, np_dtype, c_type, kind,
        )  # fmt: skip
        assert dtype.np_dtype.itemsize == dtype.size
        assert D.ALL_DTYPES[dtype.index] is dtype
        assert D.dtype_from_name(name) is dtype
    assert sorted(d.index for d in D.ALL_DTYPES) == list(range(14))
    assert len({d.c_type for d in D.ALL_DTYPES}) == 14


def test_dtype_is_an_immutable_hashable_singleton():
    assert hash(D.float32) == D.float32.index == 10
    assert hash(D.bfloat16) == 12  # MLX's enum puts bfloat16 after float64
    assert D.float32 == D.float32 and D.float32 != D.float16
    assert D.float32 != np.float32 and D.float32 != "float32"
    assert {D.float32: 1}[D.ALL_DTYPES[10]] == 1
    with pytest.raises(AttributeError, match="no setter"):
        D.float32.size = 8
    with pytest.raises(AttributeError, match="has no attribute 'name2'"):
        D.float32.name2 = "x"
    with pytest.raises(AttributeError):
        D.float32.name = "float64"
    with pytest.raises(AttributeError):
        del D.float32.kind
    assert D.float32.name == "float32"
    with pytest.raises(TypeError, match="no constructor defined"):
        D.Dtype()
    with pytest.raises(TypeError):
        _ = D.float32 < D.float64
    assert not hasattr(D.float32, "__dict__")


def test_pickle_and_copy_return_the_same_singleton():
    for dtype in D.ALL_DTYPES:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(dtype, protocol)) is dtype
        assert copy.copy(dtype) is dtype
        assert copy.deepcopy(dtype) is dtype
        assert copy.deepcopy([dtype, {"d": dtype}])[1]["d"] is dtype
    for category in D.DtypeCategory:
        assert pickle.loads(pickle.dumps(category)) is category


# ------------------------------------------------------------------------------------------
# Categories, issubdtype, isdtype
# ------------------------------------------------------------------------------------------


def test_dtype_category_matches_mlx(mx):
    assert [c.name for c in D.DtypeCategory] == [c.name for c in mx.DtypeCategory]
    assert [c.value for c in D.DtypeCategory] == [c.value for c in mx.DtypeCategory]
    for name in CATEGORY_NAMES:
        ours, theirs = getattr(D, name), getattr(mx, name)
        assert ours is D.DtypeCategory[name]
        assert repr(ours) == repr(theirs)
        assert str(ours) == str(theirs)
        assert (ours == ours.value) is (theirs == theirs.value) is False
        assert isinstance(ours, int) is isinstance(theirs, int) is False


def test_dtype_category_plain():
    assert [c.name for c in D.DtypeCategory] == CATEGORY_NAMES
    assert [c.value for c in D.DtypeCategory] == list(range(8))
    assert repr(D.floating) == str(D.floating) == "DtypeCategory.floating"
    assert D.DtypeCategory(1) is D.floating
    with pytest.raises(TypeError):
        _ = D.floating < D.inexact


def test_issubdtype_every_pair_matches_mlx(mx):
    ours_items = [OURS[n] for n in DTYPE_NAMES] + [getattr(D, n) for n in CATEGORY_NAMES]
    their_items = [mx_dtype(mx, n) for n in DTYPE_NAMES] + [getattr(mx, n) for n in CATEGORY_NAMES]
    checked = 0
    pairs = list(zip(ours_items, their_items, strict=True))
    for (o1, t1), (o2, t2) in itertools.product(pairs, repeat=2):
        assert D.issubdtype(o1, o2) is mx.issubdtype(t1, t2), (t1, t2)
        checked += 1
    assert checked == 22 * 22


def test_issubdtype_plain():
    assert D.issubdtype(D.int32, D.integer) and D.issubdtype(D.int32, D.signedinteger)
    assert not D.issubdtype(D.int32, D.unsignedinteger)
    assert not D.issubdtype(D.float64, D.float32) and not D.issubdtype(D.float32, D.float64)
    assert D.issubdtype(D.bfloat16, D.floating) and D.issubdtype(D.complex64, D.inexact)
    assert not D.issubdtype(D.complex64, D.floating)
    assert D.issubdtype(D.bool_, D.generic) and not D.issubdtype(D.bool_, D.number)
    assert D.issubdtype(D.floating, D.inexact) and not D.issubdtype(D.inexact, D.floating)
    assert not D.issubdtype(D.floating, D.float32)
    assert not D.issubdtype(D.generic, D.number)


def test_issubdtype_errors_match_mlx(mx):
    cases = [
        ((np.float32, "floating"), (np.float32, mx.floating), "first input"),
        ((D.float32, np.floating), (mx.float32, np.floating), "second input"),
        ((D.float32, "floating"), (mx.float32, "floating"), "second input"),
        (([1], D.floating), ([1], mx.floating), "first input"),
        ((None, D.floating), (None, mx.floating), "incompatible function arguments"),
        ((D.float32, None), (mx.float32, None), "incompatible function arguments"),
    ]
    for ours_args, their_args, fragment in cases:
        assert_same_error(
            outcome(D.issubdtype, *ours_args),
            outcome(mx.issubdtype, *their_args),
            fragment,
        )
    # positional-only in both
    assert_same_error(
        outcome(D.issubdtype, arg1=D.float32, arg2=D.floating),
        outcome(mx.issubdtype, arg1=mx.float32, arg2=mx.floating),
        fragment="",
    )


def test_isdtype_every_dtype_and_kind_matches_mlx(mx):
    for name in DTYPE_NAMES:
        ours, theirs = OURS[name], mx_dtype(mx, name)
        for kind in ISDTYPE_KINDS:
            assert D.isdtype(ours, kind) is mx.isdtype(theirs, kind), (name, kind)
        for other in DTYPE_NAMES:
            assert D.isdtype(ours, OURS[other]) is mx.isdtype(theirs, mx_dtype(mx, other))
        assert D.isdtype(ours, ("bool", D.float16)) is mx.isdtype(theirs, ("bool", mx.float16))
        assert D.isdtype(ours, ()) is mx.isdtype(theirs, ()) is False
        assert D.isdtype(dtype=ours, kind="numeric") is mx.isdtype(dtype=theirs, kind="numeric")


def test_isdtype_errors_match_mlx(mx):
    def both(our_dtype, our_kind, their_dtype, their_kind):
        return outcome(D.isdtype, our_dtype, our_kind), outcome(mx.isdtype, their_dtype, their_kind)

    # (our args, their args, fragment or None for MLX's full message)
    cases = [
        ((D.float32, "floating"), (mx.float32, "floating"), None),
        ((D.float32, "Bool"), (mx.float32, "Bool"), None),
        ((D.float32, ["bool"]), (mx.float32, ["bool"]), None),
        ((D.float32, D.floating), (mx.float32, mx.floating), None),
        ((D.float32, (("bool",),)), (mx.float32, (("bool",),)), None),
        ((D.float32, ("bool", "x")), (mx.float32, ("bool", "x")), None),
        ((D.float32, ("bool", 1)), (mx.float32, ("bool", 1)), None),
        ((D.bool_, (1, "bool")), (mx.bool_, (1, "bool")), None),
        ((D.bool_, ("x", "bool")), (mx.bool_, ("x", "bool")), None),
        ((D.float32, np.float32), (mx.float32, np.float32), None),
        ((D.float32, 1), (mx.float32, 1), None),
        ((D.float32, None), (mx.float32, None), "incompatible function arguments"),
        ((np.float32, "bool"), (np.float32, "bool"), "incompatible function arguments"),
        ((D.floating, "bool"), (mx.floating, "bool"), "incompatible function arguments"),
        ((None, "bool"), (None, "bool"), "incompatible function arguments"),
    ]
    for ours_args, their_args, fragment in cases:
        ours, theirs = both(*ours_args, *their_args)
        assert_same_error(ours, theirs, fragment)
    # a tuple stops at its first match, so later bad entries go unreported (in both)
    assert (
        D.isdtype(D.float32, (D.float32, "x")) is mx.isdtype(mx.float32, (mx.float32, "x")) is True
    )
    assert D.isdtype(D.bool_, ("bool", 1)) is mx.isdtype(mx.bool_, ("bool", 1)) is True


def test_isdtype_plain():
    assert D.isdtype(D.uint8, "integral") and D.isdtype(D.uint8, "unsigned integer")
    assert not D.isdtype(D.bool_, "numeric") and D.isdtype(D.bool_, "bool")
    assert D.isdtype(D.bfloat16, "real floating") and not D.isdtype(D.complex64, "real floating")
    assert D.isdtype(D.int8, ("bool", "integral"))
    with pytest.raises(ValueError, match=r"Unknown data type kind: 'floating'\."):
        D.isdtype(D.float32, "floating")
    with pytest.raises(ValueError, match="must be a dtype, a string, or a tuple"):
        D.isdtype(D.float32, ["bool"])


# ------------------------------------------------------------------------------------------
# Promotion, result_type, can_cast
# ------------------------------------------------------------------------------------------


def test_promotion_every_pair_matches_mlx(mx):
    for a, b in itertools.product(DTYPE_NAMES, repeat=2):
        ta, tb = mx_dtype(mx, a), mx_dtype(mx, b)
        from_op = (mx.zeros(1, ta) + mx.zeros(1, tb)).dtype
        from_result_type = mx.result_type(ta, tb)
        assert from_op == from_result_type
        ours = D.promote_types(OURS[a], OURS[b])
        assert ours is ours_for(from_op), (a, b, ours, from_op)
        assert D.result_type(OURS[a], OURS[b]) is ours


def test_result_type_every_triple_matches_mlx(mx):
    # MLX's promotion is not associative, so this checks the left-to-right fold too.
    for a, b, c in itertools.product(DTYPE_NAMES, repeat=3):
        theirs = mx.result_type(mx_dtype(mx, a), mx_dtype(mx, b), mx_dtype(mx, c))
        assert D.result_type(OURS[a], OURS[b], OURS[c]) is ours_for(theirs), (a, b, c)


def test_promotion_plain():
    table = D._PROMOTION_TABLE
    for a, b in itertools.product(D.ALL_DTYPES, repeat=2):
        assert table[a.index][b.index] is table[b.index][a.index]  # symmetric
        assert D.promote_types(a, a) is a
    assert D.promote_types(D.uint8, D.int8) is D.int16
    assert D.promote_types(D.uint64, D.int64) is D.float32
    assert D.promote_types(D.int64, D.float16) is D.float16
    assert D.promote_types(D.uint64, D.bfloat16) is D.bfloat16
    assert D.promote_types(D.float16, D.bfloat16) is D.float32
    assert D.promote_types(D.float64, D.complex64) is D.complex64
    assert D.promote_types(D.bool_, D.int8) is D.int8
    # not associative: the fold order matters
    assert D.result_type(D.uint64, D.int8, D.float16) is D.float32
    assert D.result_type(D.float16, D.uint64, D.int8) is D.float16


def test_result_type_accepts_arrays_and_dtypes_only(mx):
    assert D.result_type(D.float16) is D.float16
    # anything with a Dtype ``.dtype`` counts as an array
    fake_array = type("FakeArray", (), {"dtype": D.uint8})()
    assert D.result_type(fake_array, D.int8) is D.int16
    assert ours_for(mx.result_type(mx.array([1], mx.uint8), mx.int8)) is D.int16
    bad_inputs = [
        1,
        1.0,
        True,
        np.float32,
        np.dtype("float32"),
        np.zeros(2, np.float16),
        "float32",
        None,
        [1],
    ]
    for bad in bad_inputs:
        assert_same_error(outcome(D.result_type, bad), outcome(mx.result_type, bad))
        assert_same_error(
            outcome(D.result_type, D.uint8, bad),
            outcome(mx.result_type, mx.uint8, bad),
        )
    assert_same_error(outcome(D.result_type, D.floating), outcome(mx.result_type, mx.floating))
    assert_same_error(outcome(D.result_type), outcome(mx.result_type))
    assert_same_error(
        outcome(D.result_type, arrays_and_dtypes=D.float32),
        outcome(mx.result_type, arrays_and_dtypes=mx.float32),
        fragment="",
    )


def test_can_cast_every_pair_matches_mlx(mx):
    for a, b in itertools.product(DTYPE_NAMES, repeat=2):
        assert D.can_cast(OURS[a], OURS[b]) is mx.can_cast(mx_dtype(mx, a), mx_dtype(mx, b)), (a, b)
    assert (
        D.can_cast(from_=D.float32, to=D.float64)
        is mx.can_cast(from_=mx.float32, to=mx.float64)
        is True
    )
    fake_int8_array = type("FakeArray", (), {"dtype": D.int8})()
    assert (
        D.can_cast(fake_int8_array, D.float16)
        is mx.can_cast(mx.array([1], mx.int8), mx.float16)
        is True
    )


def test_can_cast_errors_match_mlx(mx):
    cases = [
        ((1, D.float16), (1, mx.float16), None),
        ((np.float32, D.float32), (np.float32, mx.float32), None),
        ((D.floating, D.float32), (mx.floating, mx.float32), None),
        ((np.zeros(2), D.float32), (np.zeros(2), mx.float32), None),
        ((D.float32, np.float32), (mx.float32, np.float32), "incompatible function arguments"),
        ((D.float32, D.floating), (mx.float32, mx.floating), "incompatible function arguments"),
        ((None, D.float32), (None, mx.float32), "incompatible function arguments"),
    ]
    for ours_args, their_args, fragment in cases:
        assert_same_error(
            outcome(D.can_cast, *ours_args),
            outcome(mx.can_cast, *their_args),
            fragment,
        )


def test_can_cast_plain():
    assert D.can_cast(D.bool_, D.complex64) and D.can_cast(D.uint8, D.int16)
    assert not D.can_cast(D.uint8, D.int8) and not D.can_cast(D.float16, D.bfloat16)
    assert D.can_cast(D.uint64, D.float16)  # MLX: any integer promotes with float16 to float16
    with pytest.raises(ValueError, match="`from_` must be an array or a dtype"):
        D.can_cast(1, D.float32)


# ------------------------------------------------------------------------------------------
# finfo / iinfo
# ------------------------------------------------------------------------------------------


def test_finfo_every_dtype_matches_mlx(mx):
    for name in DTYPE_NAMES:
        ours, theirs = (
            outcome(D.finfo, OURS[name]),
            outcome(mx.finfo, mx_dtype(mx, name)),
        )
        if theirs[0] == "error":
            assert_same_error(ours, theirs)
            continue
        assert ours[0] == "ok", ours
        ours, theirs = ours[1], theirs[1]
        for attr in ("bits", "eps", "max", "min", "smallest_normal"):
            assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), (name, attr)
            assert getattr(ours, attr) == getattr(theirs, attr), (name, attr)
        assert ours.dtype is ours_for(theirs.dtype)
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        public = sorted(a for a in dir(theirs) if not a.startswith("_"))
        assert public == sorted(a for a in dir(ours) if not a.startswith("_"))


def test_iinfo_every_dtype_matches_mlx(mx):
    for name in DTYPE_NAMES:
        ours, theirs = (
            outcome(D.iinfo, OURS[name]),
            outcome(mx.iinfo, mx_dtype(mx, name)),
        )
        if theirs[0] == "error":
            assert_same_error(ours, theirs)
            continue
        ours, theirs = ours[1], theirs[1]
        assert (ours.min, ours.max) == (theirs.min, theirs.max)
        assert type(ours.min) is type(ours.max) is int
        assert ours.dtype is ours_for(theirs.dtype)
        assert repr(ours) == repr(theirs)
        public = sorted(a for a in dir(theirs) if not a.startswith("_"))
        assert public == sorted(a for a in dir(ours) if not a.startswith("_"))


def test_finfo_iinfo_bad_arguments_match_mlx(mx):
    for bad in (np.float32, "float32", None, 1):
        for ours_cls, their_cls in ((D.finfo, mx.finfo), (D.iinfo, mx.iinfo)):
            assert_same_error(
                outcome(ours_cls, bad),
                outcome(their_cls, bad),
                "incompatible function arguments",
            )
    for ours_cls, their_cls in ((D.finfo, mx.finfo), (D.iinfo, mx.iinfo)):
        category_case = (
            outcome(ours_cls, D.floating),
            outcome(their_cls, mx.floating),
        )
        assert_same_error(*category_case, "incompatible function arguments")
        keyword_case = (
            outcome(ours_cls, dtype=D.float32),
            outcome(their_cls, dtype=mx.float32),
        )
        assert_same_error(*keyword_case, fragment="")
    ours_info, their_info = D.finfo(D.float32), mx.finfo(mx.float32)
    assert_same_error(outcome(setattr, ours_info, "x", 1), outcome(setattr, their_info, "x", 1))
    assert_same_error(
        outcome(setattr, ours_info, "eps", 1),
        outcome(setattr, their_info, "eps", 1),
        "no setter",
    )
    assert (
        (D.finfo(D.float32) == D.finfo(D.float32))
        is (mx.finfo(mx.float32) == mx.finfo(mx.float32))
        is False
    )


def test_finfo_iinfo_plain():
    half = D.finfo(D.float16)
    assert (half.bits, half.eps, half.max, half.min) == (16, 0.0009765625, 65504.0, -65504.0)
    assert half.smallest_normal == 6.103515625e-05 and half.dtype is D.float16
    assert repr(half) == "finfo(min=-65504, max=65504, dtype=float16)"
    bf16 = D.finfo(D.bfloat16)
    assert (bf16.eps, bf16.max, bf16.smallest_normal) == (
        0.0078125,
        3.3895313892515355e38,
        2.0**-126,
    )
    assert repr(D.finfo(D.float32)) == "finfo(min=-3.40282e+38, max=3.40282e+38, dtype=float32)"
    assert repr(D.finfo(D.float64)) == "finfo(min=-1.79769e+308, max=1.79769e+308, dtype=float64)"
    complex_info = D.finfo(D.complex64)
    assert complex_info.dtype is D.float32 and complex_info.eps == 2.0**-23
    with pytest.raises(ValueError, match=r"\[finfo\] dtype int32 is not inexact\."):
        D.finfo(D.int32)
    with pytest.raises(ValueError, match=r"\[finfo\] dtype bool is not inexact\."):
        D.finfo(D.bool_)
    assert repr(D.iinfo(D.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
    assert D.iinfo(D.int64).min == -(2**63) and D.iinfo(D.uint64).max == 2**64 - 1
    with pytest.raises(
        ValueError, match=r"\[iinfo\] Only integer types supported but bool was provided"
    ):
        D.iinfo(D.bool_)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        D.finfo(np.float32)
    with pytest.raises(AttributeError):
        half.eps = 1.0


# ------------------------------------------------------------------------------------------
# Weak scalars
# ------------------------------------------------------------------------------------------

PYTHON_SCALARS = [
    True, False, 0, 1, -1, 127, 128, 255, 256, -128, -129, 300, 32767, 32768, 65535, 65536,
    2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32, 2**40, 2**63 - 1, -(2**63),
    1.5, -0.0, 1e300, float("inf"), float("nan"), 1j, complex(1.5, -2),
]  # fmt: skip
# Out of int64's range: MLX raises RuntimeError('std::bad_cast') for every array dtype.
HUGE_INTS = [2**63, -(2**63) - 1, 2**64, 2**100]

NUMPY_SCALARS = [
    np.bool_(True), np.int8(1), np.int16(-3), np.int32(7), np.int64(3), np.int64(300),
    np.uint8(200), np.uint16(1), np.uint32(5), np.uint64(2**64 - 1), np.float16(2.5),
    np.float32(2.5), np.float64(1.5), np.complex64(1 + 1j), np.complex128(2 - 1j),
    np.longdouble(1.5), np.clongdouble(1), ml_dtypes.bfloat16(1.5), ml_dtypes.float8_e4m3fn(1),
    ml_dtypes.int4(1),
]  # fmt: skip


class IndexOnly:
    def __index__(self) -> int:
        return 3


class FloatOnly:
    def __float__(self) -> float:
        return 2.5


class BoolOnly:
    def __bool__(self) -> bool:
        return True


OTHER_OPERANDS = [
    np.array([1.5, 2.5]), np.array(1.5), np.array([3], np.int8), np.arange(6.0)[::2],
    np.array([1, 2], ">i4"), np.array([1.5], object), np.array(1.5, object), np.array(["a"]),
    np.zeros(2, ml_dtypes.bfloat16), np.array(1, ml_dtypes.bfloat16), b"ab", bytearray(b"xy"),
    fractions.Fraction(1, 2), decimal.Decimal("1.5"), IndexOnly(), FloatOnly(), BoolOnly(),
    "a", (1, 2), [1.5], np.str_("a"),
]  # fmt: skip


def compare_scalar_case(mx, name: str, scalar):
    """Our scalar_result_dtype against MLX: mx.add in both operand orders (function form) and
    ``array + scalar`` (operator form, whose error message names the operation)."""
    their_array = mx.zeros(1, mx_dtype(mx, name))
    forms = [
        (None, (result_dtype, mx.add, their_array, scalar)),
        (None, (result_dtype, mx.add, scalar, their_array)),
        ("addition", (add_dtype, their_array, scalar)),
    ]
    for op_name, their_call in forms:
        theirs = outcome(*their_call)
        ours = outcome(D.scalar_result_dtype, OURS[name], scalar, op_name)
        if theirs[0] == "ok":
            assert ours[0] == "ok", (name, repr(scalar), ours, theirs)
            assert ours[1] is ours_for(theirs[1]), (name, repr(scalar), ours, theirs)
        else:
            # MLX's own text up to where we add an explanation ("std::bad_cast (...)")
            assert_same_error(ours, theirs, fragment=theirs[2].split(" (")[0].splitlines()[0])


def test_python_scalars_with_every_dtype_match_mlx(mx):
    for name in DTYPE_NAMES:
        for scalar in PYTHON_SCALARS + HUGE_INTS:
            compare_scalar_case(mx, name, scalar)
            # reflected operator (scalar on the left) behaves the same for Python scalars
            theirs = outcome(add_dtype, scalar, mx.zeros(1, mx_dtype(mx, name)))
            ours = outcome(D.scalar_result_dtype, OURS[name], scalar, "addition")
            assert ours[0] == theirs[0] and (ours[0] == "error" or ours[1] is ours_for(theirs[1]))


def test_numpy_scalars_with_every_dtype_match_mlx(mx):
    for name in DTYPE_NAMES:
        for scalar in NUMPY_SCALARS:
            compare_scalar_case(mx, name, scalar)


def test_other_operands_with_arrays_match_mlx(mx):
    for name in ("bool_", "uint8", "int32", "float16", "bfloat16", "complex64"):
        for operand in OTHER_OPERANDS:
            compare_scalar_case(mx, name, operand)


def test_array_operand_promotes_normally(mx):
    fake_int8_array = type("FakeArray", (), {"dtype": D.int8})()
    theirs = (mx.zeros(1, mx.uint8) + mx.zeros(1, mx.int8)).dtype
    assert D.scalar_result_dtype(D.uint8, fake_int8_array) is ours_for(theirs) is D.int16


def test_none_operand_is_a_type_error_like_mlx(mx):
    ours = outcome(D.scalar_result_dtype, D.float32, None)
    for their_call in ((mx.add, mx.zeros(1), None), (add_dtype, mx.zeros(1), None)):
        assert_same_error(ours, outcome(*their_call), "incompatible function arguments")


@settings(max_examples=300, deadline=None)
@given(value=st.integers(min_value=-(2**65), max_value=2**65), name=st.sampled_from(DTYPE_NAMES))
def test_python_int_overflow_rules_match_mlx(mx, value, name):
    compare_scalar_case(mx, name, value)


@settings(max_examples=200, deadline=None)
@given(value=st.floats(allow_nan=True, allow_infinity=True), name=st.sampled_from(DTYPE_NAMES))
def test_python_float_rules_match_mlx(mx, value, name):
    compare_scalar_case(mx, name, value)


def test_scalar_result_dtype_plain():
    assert D.scalar_result_dtype(D.float16, 1.0) is D.float16
    assert D.scalar_result_dtype(D.bfloat16, 1.5) is D.bfloat16
    assert D.scalar_result_dtype(D.int32, 1.5) is D.float32
    assert D.scalar_result_dtype(D.uint8, 1) is D.uint8
    assert D.scalar_result_dtype(D.bool_, 1) is D.int32
    assert D.scalar_result_dtype(D.bool_, True) is D.bool_
    assert D.scalar_result_dtype(D.bool_, 1.5) is D.float32
    assert D.scalar_result_dtype(D.int64, 2**40) is D.int64
    assert D.scalar_result_dtype(D.uint64, -1) is D.uint64  # 64-bit types are not range-checked
    assert D.scalar_result_dtype(D.complex64, 1.5) is D.complex64
    assert D.scalar_result_dtype(D.float16, 1j) is D.complex64
    assert D.scalar_result_dtype(D.int32, np.float64(1.5)) is D.float32  # np.float64 is a float
    assert D.scalar_result_dtype(D.int32, np.float32(2.5)) is D.int32  # cast to the array's type
    assert D.scalar_result_dtype(D.bool_, np.int64(3)) is D.bool_
    assert D.scalar_result_dtype(D.float32, ml_dtypes.bfloat16(1)) is D.complex64
    with pytest.raises(ValueError, match=r"Converting 300 to uint8 would result in overflow\."):
        D.scalar_result_dtype(D.uint8, 300)
    with pytest.raises(ValueError, match=r"Converting -1 to uint32 would result in overflow\."):
        D.scalar_result_dtype(D.uint32, -1)
    with pytest.raises(RuntimeError, match="std::bad_cast"):
        D.scalar_result_dtype(D.float32, 2**63)
    with pytest.raises(
        ValueError, match=r"Cannot perform multiplication on an mlx\.core\.array and str"
    ):
        D.scalar_result_dtype(D.float32, "a", "multiplication")
    with pytest.raises(ValueError, match=r"Invalid type list received in array initialization\."):
        D.scalar_result_dtype(D.float32, [1])


def test_common_scalars_take_the_fast_path(monkeypatch):
    """Python scalars and the common numpy scalars never reach the slow general path."""

    def fail(*args):
        raise AssertionError("slow path taken for a common scalar")

    monkeypatch.setattr(D, "_scalar_result_dtype_general", fail)
    for dtype in D.ALL_DTYPES:
        for scalar in (
            True,
            1,
            1.5,
            1j,
            np.float64(1.5),
            np.int64(3),
            np.float32(2.5),
            np.bool_(True),
        ):
            assert isinstance(D.scalar_result_dtype(dtype, scalar), D.Dtype)


OPERAND_PAIR_VALUES = [
    True, 1, 2**40, 1.5, 1j, np.bool_(True), np.uint8(1), np.int8(1), np.int64(2), np.uint64(1),
    np.float16(1), np.float32(1), np.float64(1.5), np.complex64(1), np.complex128(1),
    np.array([1.5]), np.array([1], np.uint8), np.array([1j]), np.longdouble(1), b"ab",
    ml_dtypes.bfloat16(1), IndexOnly(), FloatOnly(), fractions.Fraction(1, 3),
]  # fmt: skip


def test_operands_without_an_array_match_mlx(mx):
    for a, b in itertools.product(OPERAND_PAIR_VALUES, repeat=2):
        theirs = outcome(result_dtype, mx.add, a, b)
        ours = outcome(lambda x, y: D.promote_types(D.operand_dtype(x), D.operand_dtype(y)), a, b)
        assert theirs[0] == "ok"
        assert ours[0] == "ok" and ours[1] is ours_for(theirs[1]), (repr(a), repr(b), ours, theirs)


def test_bad_operands_without_an_array_match_mlx(mx):
    bad_values = [
        "a",
        [1],
        (1,),
        BoolOnly(),
        np.array([1, 2], ">i4"),
        np.zeros(2, ml_dtypes.bfloat16),
    ]
    for bad in bad_values:
        assert_same_error(outcome(D.operand_dtype, bad), outcome(mx.add, bad, 1))
    assert_same_error(
        outcome(D.operand_dtype, None),
        outcome(mx.add, None, 1),
        "incompatible function arguments",
    )
    assert_same_error(outcome(D.operand_dtype, 2**64), outcome(mx.add, 2**64, 1), "std::bad_cast")


# ------------------------------------------------------------------------------------------
# Conversions: Python values, numpy dtypes, dtype= arguments
# ------------------------------------------------------------------------------------------

PYTHON_VALUES_FOR_ARRAY = [
    True, False, 0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40, 2**63 - 1, -(2**63),
    2**63, -(2**63) - 1, 2**64, 1.5, 1e300, 1j, np.float64(1), np.float32(1), np.float16(1),
    np.int64(1), np.int8(1), np.uint64(2**64 - 1), np.bool_(True), np.complex128(1),
    np.complex64(1), ml_dtypes.bfloat16(1), np.longdouble(1), np.str_("a"), "a",
    fractions.Fraction(1, 2), None,
]  # fmt: skip


def test_dtype_from_python_matches_mlx(mx):
    for value in PYTHON_VALUES_FOR_ARRAY:
        theirs = outcome(result_dtype, mx.array, value)
        ours = outcome(D.dtype_from_python, value)
        if theirs[0] == "ok":
            assert ours[0] == "ok" and ours[1] is ours_for(theirs[1]), (repr(value), ours, theirs)
        else:
            fragment = {
                RuntimeError: "std::bad_cast",
                TypeError: "incompatible function arguments",
            }.get(theirs[1])
            assert_same_error(ours, theirs, fragment)


def test_dtype_from_python_plain():
    assert D.dtype_from_python(True) is D.bool_
    assert D.dtype_from_python(7) is D.int32
    assert D.dtype_from_python(2**31) is D.int64
    assert D.dtype_from_python(1.0) is D.float32
    assert D.dtype_from_python(1j) is D.complex64
    assert D.dtype_from_python(np.float64(1.0)) is D.float32
    assert D.dtype_from_python(np.int64(3)) is D.int64
    with pytest.raises(RuntimeError, match="std::bad_cast"):
        D.dtype_from_python(2**63)


NUMPY_DTYPES = [
    np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, ml_dtypes.bfloat16,
    np.intc, np.longlong, np.ulonglong, "l", "L", np.longdouble, np.clongdouble, object, "U3", "S3",
    "M8[s]", "m8[s]", "V4", [("a", "i4")], ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ">i4", ">f4",
]  # fmt: skip


def test_dtype_from_numpy_matches_mlx(mx):
    for np_type in NUMPY_DTYPES:
        np_dtype = np.dtype(np_type)
        theirs = outcome(result_dtype, mx.array, np.zeros(3, np_dtype))
        for argument in (np_dtype, np_type):
            ours = outcome(D.dtype_from_numpy, argument)
            if theirs[0] == "ok":
                assert ours[0] == "ok" and ours[1] is ours_for(theirs[1]), (np_dtype, ours, theirs)
            else:
                assert_same_error(ours, theirs, "std::bad_cast")


def test_dtype_from_numpy_plain():
    assert D.dtype_from_numpy(np.dtype(np.float64)) is D.float32
    assert D.dtype_from_numpy(np.dtype(np.complex128)) is D.complex64
    assert D.dtype_from_numpy(np.int64) is D.int64
    assert D.dtype_from_numpy(ml_dtypes.bfloat16) is D.bfloat16
    for dtype in D.ALL_DTYPES:
        assert D.dtype_from_numpy(dtype.np_dtype) is (D.float32 if dtype is D.float64 else dtype)
        assert D.exact_dtype_from_numpy(dtype.np_dtype) is dtype
    with pytest.raises(RuntimeError, match="std::bad_cast"):
        D.dtype_from_numpy(np.dtype(object))
    with pytest.raises(RuntimeError, match="std::bad_cast"):
        D.dtype_from_numpy(np.dtype(">i4"))
    with pytest.raises(TypeError, match="no exact MLX equivalent"):
        D.exact_dtype_from_numpy(np.complex128)


def test_dtype_arguments_accept_only_mlx_dtypes(mx):
    for bad in (np.float32, np.dtype("float32"), "float32", float, ml_dtypes.bfloat16, D.floating):
        their_bad = mx.floating if bad is D.floating else bad
        theirs = outcome(mx.zeros, 3, dtype=their_bad)
        ours = outcome(D.to_dtype, bad, "zeros")
        assert_same_error(ours, theirs, "zeros(): incompatible function arguments")
    assert D.to_dtype(D.float16) is D.float16
    assert mx.zeros(3, dtype=mx.float16).dtype == mx.float16


def test_numpy_complex_scalar_with_real_array_keeps_real_part_silently(mx):
    """MLX reads a numpy complex scalar into a real array's dtype (the real part); no numpy
    ComplexWarning may leak out of the conversion."""
    import warnings

    import pycudamlx.core as pm

    for name in ("uint8", "int32", "float16", "float32", "bool_"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours = pm.array([1, 2], dtype=getattr(pm, name)) + np.complex64(1 + 1j)
            ours = (str(ours.dtype), ours.tolist())
        theirs = mx.array([1, 2], dtype=getattr(mx, name)) + np.complex64(1 + 1j)
        assert ours == (str(theirs.dtype), theirs.tolist())
