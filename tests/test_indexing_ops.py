"""take, take_along_axis, put_along_axis and ``x.at[idx].add/...`` against real MLX (semantics,
dtypes, errors) and numpy (values), plus the results we define where MLX reads or writes out
of bounds (docs/indexing.md)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import (  # noqa: F401 - keep_array_class is an autouse fixture
    DTYPES, assert_same, compare, rand, to_mlx, to_ours, keep_array_class)

INDEX_DTYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


def _env(lib, conv, base):
    return {"M": lib, "np": np, "a": conv(base), "m": conv(base[0]),
            "v": conv(np.arange(10, dtype=np.float32)),
            "z": conv(np.zeros((0, 3), np.float32)), "s": conv(np.array(5.0, np.float32))}


B = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5) * 1.5 - 7


def _evaluated(lib, x):
    lib.eval(x)
    return x


def both(mx, text: str, message: bool = True, base: np.ndarray = B):
    """Ours and MLX's outcome of ``text`` (MLX evaluated inside, so its errors at evaluation
    count as errors)."""
    return compare(lambda: _evaluated(pm, eval(text, _env(pm, to_ours, base))),
                   lambda: _evaluated(mx, eval(text, _env(mx, lambda x: to_mlx(mx, x), base))),
                   message=message)


# -- take --------------------------------------------------------------------------------------

TAKE_CASES = [
    "M.take(v, M.array([0, -1, 3]))", "M.take(v, 3)", "M.take(v, -2)", "M.take(a, 7)",
    "M.take(a, 29)", "M.take(a, -30)", "M.take(a, M.array([[1, 0], [29, 3]]))",
    "M.take(a, M.array([1, 0]), axis=0)", "M.take(a, M.array([2, 0, 2]), axis=1)",
    "M.take(a, M.array([[4, 0], [-1, 2]]), axis=2)", "M.take(a, M.array([[4, 0]]), axis=-1)",
    "M.take(a, M.array([1, -3]), axis=-2)", "M.take(a, 1, axis=1)", "M.take(a, 4, axis=-1)",
    "M.take(a, M.array(1), axis=1)", "M.take(a, M.array(1))", "M.take(s, M.array([0]))",
    "M.take(s, M.array([0, 0]), axis=None)", "M.take(a, M.array([], M.int32), axis=1)",
    "M.take(z, M.array([], M.int32))", "M.take(z, M.array([1, 0]), axis=1)",
    "M.take(M.transpose(a), M.array([1, 0, 1]), axis=1)", "M.take(a[:, ::2, ::-1], M.array([2, 0]))",
    "M.take(a[:, ::2, ::-1], M.array([2, 0]), axis=2)",
    "M.take(a, M.array([[0, 1, 2], [2, 1, 0]])[:, ::2], axis=1)",
    "M.take(a, M.broadcast_to(M.array([1]), (3, 2)), axis=2)",
    "M.take(a.astype(M.float16), M.array([1, 0]), axis=0)",
    # errors
    "M.take(a, M.array([1, 0]), axis=3)", "M.take(a, M.array([1, 0]), axis=-4)",
    "M.take(s, M.array([0]), axis=0)", "M.take(a, M.array([1.0, 0]))",
    "M.take(a, M.array([True, False]))", "M.take(a, [1, 2])", "M.take(a, np.array([1, 2]))",
    "M.take(z, M.array([0]))", "M.take(z, M.array(0), axis=0)",
]


@pytest.mark.parametrize("text", TAKE_CASES)
def test_take_matches_mlx(mx, text):
    both(mx, text, message="[1, 2]" not in text and "np.array" not in text)


def test_take_out_of_range_int_raises_value_error(mx):
    # MLX wraps a negative int only without an axis
    for text in ("M.take(v, 10)", "M.take(v, -11)", "M.take(a, 5, axis=2)",
                 "M.take(a, -1, axis=2)"):
        both(mx, text, message=False)     # MLX: a ValueError from squeeze; ours names the index
    with pytest.raises(ValueError, match="out of bounds"):
        pm.take(pm.arange(10), 2**40)


@pytest.mark.parametrize("name", INDEX_DTYPES)
def test_take_every_index_dtype(mx, name):
    idx = np.array([3, 0, 4, 1, 1], dtype=name)
    for axis in (None, 2, 0):
        i = idx if axis != 0 else idx % 2
        compare(lambda: pm.take(to_ours(B), pm.array(i), axis=axis),
                lambda: mx.take(to_mlx(mx, B), mx.array(i), axis=axis))
    if name.startswith("int"):
        neg = np.array([-1, -5, 2], dtype=name)
        compare(lambda: pm.take(to_ours(B), pm.array(neg), axis=2),
                lambda: mx.take(to_mlx(mx, B), mx.array(neg), axis=2))


@pytest.mark.parametrize("name", DTYPES)
def test_take_every_dtype(mx, name):
    x = rand((7, 6, 3), name, 1)
    idx = np.random.default_rng(2).integers(-7, 7, (4, 5))
    for axis in (None, 0, 1, 2):
        n = x.size if axis is None else x.shape[axis]
        i = np.clip(idx, -n, n - 1)
        compare(lambda: pm.take(to_ours(x), pm.array(i), axis=axis),
                lambda: mx.take(to_mlx(mx, x), mx.array(i), axis=axis))


def test_take_out_of_range_reads_zero():
    """MLX reads past its buffer (garbage); we define 0 after one negative wrap."""
    x = np.arange(1, 11, dtype=np.float32)
    got = pm.take(pm.array(x), pm.array([9, 10, 11, 100, -1, -10, -11, -1000]))
    np.testing.assert_array_equal(np.array(got), [10, 0, 0, 0, 10, 1, 0, 0])
    m = np.arange(1, 13, dtype=np.int64).reshape(3, 4)
    got = pm.take(pm.array(m), pm.array([[1, 5], [-4, -5]]), axis=1)
    ref = np.stack([m[:, 1], np.zeros(3), m[:, 0], np.zeros(3)], axis=1).reshape(3, 2, 2)
    np.testing.assert_array_equal(np.array(got), ref)
    rows = pm.take(pm.array(m), pm.array([2, 3, -4]), axis=0)
    np.testing.assert_array_equal(np.array(rows), [m[2], [0] * 4, [0] * 4])
    lazy = pm.add(pm.array([1, 17]), 0)
    np.testing.assert_array_equal(np.array(pm.array(x)[lazy]), [2, 0])


def test_take_random_against_numpy():
    rng = np.random.default_rng(5)
    for shape in [(1,), (17,), (5, 1, 9), (3, 4, 5, 2), (2, 3, 1, 4, 2, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for axis in [None] + list(range(-len(shape), len(shape))):
            n = x.size if axis is None else shape[axis]
            idx = rng.integers(-n, n, rng.integers(1, 4, rng.integers(0, 3)))
            ref = np.take(x, idx, axis=axis)
            got = pm.take(pm.array(x), pm.array(idx), axis=axis)
            np.testing.assert_array_equal(np.array(got), ref)


# -- take_along_axis ---------------------------------------------------------------------------

TAL_CASES = [
    "M.take_along_axis(m, M.array([[1], [0], [4]]), axis=1)",
    "M.take_along_axis(m, M.array([[1, 2, 0, 1, 2]]), axis=0)",
    "M.take_along_axis(m, M.array([[1, 2]]), axis=0)",
    "M.take_along_axis(m, M.array([[-1]]), axis=1)", "M.take_along_axis(m, M.array([[-1, -3]]))",
    "M.take_along_axis(m, M.array([1, 2, 14]), axis=None)",
    "M.take_along_axis(m, M.array([[1, 2]]), axis=None)",
    "M.take_along_axis(a, M.array([[[1]], [[2]]]), axis=1)",
    "M.take_along_axis(a, M.array([[[1, 0, 2, 2]]]), axis=2)",
    "M.take_along_axis(a, M.array([[[1, 0, 2, 2, 4, 0, 1]]]).reshape(1, 1, 7), axis=2)",
    "M.take_along_axis(m[:1], M.array([[1, 2], [3, 4], [0, 0]]), axis=1)",
    "M.take_along_axis(M.transpose(a), M.array([[[1], [0]]]), axis=2)",
    "M.take_along_axis(a[:, ::-1], M.array([[[4, 3, 2, 1, 0]]])[:, :, ::2], axis=-1)",
    "M.take_along_axis(m, M.array([[1, 0]], M.uint8), axis=0)",
    "M.take_along_axis(m, M.array([[1, 0]], M.int64), axis=-2)",
    "M.take_along_axis(m, M.zeros((3, 0), M.int32), axis=1)",
    # errors
    "M.take_along_axis(m, M.array([1, 2]), axis=1)", "M.take_along_axis(m, M.array([[1]]), axis=2)",
    "M.take_along_axis(m, M.array([[1]]), axis=-3)", "M.take_along_axis(m, M.array([[1.0]]))",
    "M.take_along_axis(m, M.array([[True]]))", "M.take_along_axis(m, [[1]])",
    "M.take_along_axis(m, 1)", "M.take_along_axis(m, M.array([[0], [1], [2], [0]]), axis=1)",
    "M.take_along_axis(s, M.array(0), axis=None)",
]


@pytest.mark.parametrize("text", TAL_CASES)
def test_take_along_axis_matches_mlx(mx, text):
    both(mx, text, message="[[1]])" not in text and "(m, 1)" not in text)


@pytest.mark.parametrize("name", DTYPES)
def test_take_along_axis_every_dtype(mx, name):
    x = rand((4, 6, 3), name, 3)
    idx = np.argsort(np.random.default_rng(4).random((4, 6, 3)), axis=1)[:, :5]
    compare(lambda: pm.take_along_axis(to_ours(x), pm.array(idx), axis=1),
            lambda: mx.take_along_axis(to_mlx(mx, x), mx.array(idx), axis=1))


def test_take_along_axis_out_of_range_reads_zero():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    got = pm.take_along_axis(pm.array(x), pm.array([[0, 3], [-1, -4]]), axis=1)
    np.testing.assert_array_equal(np.array(got), [[1, 0], [6, 0]])


# -- put_along_axis ----------------------------------------------------------------------------

PAL_CASES = [
    "M.put_along_axis(m, M.array([[1], [0], [4]]), M.array(7.0), axis=1)",
    "M.put_along_axis(m, M.array([[1], [1], [1]]), M.array([[7.0], [8], [9]]), axis=1)",
    "M.put_along_axis(m, M.array([[1, 1]]), M.array([[7.0, 8]]), axis=1)",
    "M.put_along_axis(m, M.array([1, 1, 13]), M.array([7.0, 8, 9]))",
    "M.put_along_axis(m, M.array([1, -1]), M.array([7.0, 8]), axis=None)",
    "M.put_along_axis(m, M.array([[-1]]), M.array(3.0), axis=1)",
    "M.put_along_axis(m, M.array([[0], [2], [1]]), M.array([1.0, 2, 3, 4]), axis=1)",
    "M.put_along_axis(m, M.array([[0]]), M.array([[5.0], [6], [7]]), axis=1)",
    "M.put_along_axis(m, M.array([[0], [2], [4]]), M.array([[[5.0], [6], [7]]]), axis=1)",
    "M.put_along_axis(m[:1], M.array([[0], [2]]), M.array([[5.0], [6]]), axis=1)",
    "M.put_along_axis(m, M.array([[0, 1, 2, 0], [2, 1, 1, 1], [4, 4, 4, 4]]), M.array(1.0), "
    "axis=1)",
    "M.put_along_axis(m.astype(M.int32), M.array([[1]]), M.array(3.7), axis=1)",
    "M.put_along_axis(m.astype(M.float16), M.array([[1]]), M.array([2.5]), axis=1)",
    "M.put_along_axis(m.astype(M.bool_), M.array([[1]]), M.array([7.0]), axis=1)",
    "M.put_along_axis(a, M.array([[[1]], [[2]]]), M.array(-1.0), axis=1)",
    "M.put_along_axis(M.transpose(a), M.array([[[1]], [[0]]]), M.array(-1.0), axis=0)",
    "M.put_along_axis(a, M.array([[[4, 0]]], M.uint8), M.array([[[1.0], [2], [3]]]), axis=-1)",
    "M.put_along_axis(m, M.zeros((3, 0), M.int32), M.array(1.0), axis=1)",
    # errors
    "M.put_along_axis(m, M.array([[0], [1], [2], [0]]), M.array(1.0), axis=1)",
    "M.put_along_axis(m, M.array([[0.0]]), M.array(1.0), axis=1)",
    "M.put_along_axis(m, M.array([[0]]), M.array(1.0), axis=2)",
    "M.put_along_axis(m, M.array([0]), M.array(1.0), axis=1)",
    "M.put_along_axis(m, M.array([[0]]), M.array(1.0), axis=None)",
    "M.put_along_axis(s, M.array(0), M.array(1.0), axis=None)",
    "M.put_along_axis(m, M.array([[0, 1]]), M.array([[1.0, 2, 3]]), axis=1)",
    "M.put_along_axis(m, M.array([[0], [2]]), M.array([[[5.0], [6]], [[7], [8]]]), axis=1)",
    "M.put_along_axis(m, M.array([[0]]), 3.0, axis=1)",
    "M.put_along_axis(m, [[0]], M.array(3.0), axis=1)",
]


@pytest.mark.parametrize("text", PAL_CASES)
def test_put_along_axis_matches_mlx(mx, text):
    both(mx, text, message="3.0, axis" not in text and "[[0]], M" not in text)


@pytest.mark.parametrize("name", DTYPES)
def test_put_along_axis_every_dtype(mx, name):
    x = rand((4, 6, 3), name, 5)
    vals = rand((4, 2, 3), name, 6)
    idx = np.argsort(np.random.default_rng(7).random((4, 6, 3)), axis=1)[:, :2]
    compare(lambda: pm.put_along_axis(to_ours(x), pm.array(idx), to_ours(vals), axis=1),
            lambda: mx.put_along_axis(to_mlx(mx, x), mx.array(idx), to_mlx(mx, vals), axis=1))


def test_put_along_axis_out_of_range_is_skipped():
    """MLX writes out of bounds there (heap corruption); we skip the update."""
    x = pm.zeros((2, 3))
    got = pm.put_along_axis(x, pm.array([[3], [-4]]), pm.array([[1.0], [2.0]]), axis=1)
    np.testing.assert_array_equal(np.array(got), np.zeros((2, 3)))
    got = pm.put_along_axis(x, pm.array([[3, 1], [-1, 5]]), pm.array(4.0), axis=1)
    np.testing.assert_array_equal(np.array(got), [[0, 4, 0], [0, 0, 4]])


# -- x.at[idx] ---------------------------------------------------------------------------------

AT_CASES = [
    "v.at[M.array([0, 0, 1])].add(1.0)", "v.at[[0, 0, 1]].add(1.0)",
    "v.at[M.array([0, 0, 1])].subtract(M.array([1.0, 2, 3]))",
    "(v + 2).at[M.array([0, 0, 1])].multiply(3.0)", "(v + 2).at[M.array([0, 0, 1])].divide(4.0)",
    "(v + 2).at[M.array([0, 0, 1])].maximum(M.array([1.0, 50, 3]))",
    "(v + 2).at[M.array([0, 0, 1])].minimum(M.array([1.0, -5, 3]))",
    "M.arange(5).at[M.array([1, 1])].divide(2)", "M.arange(5).at[M.array([4])].divide(M.array([2]))",
    "M.arange(5).at[M.array([4])].multiply(1.5)", "M.arange(5).at[M.array([4])].add(1.5)",
    "M.arange(5).astype(M.float16).at[M.array([4])].add(M.array([1.5]))",
    "M.zeros((3,), M.bool_).at[M.array([1, 1])].add(True)",
    "M.ones((3,), M.bool_).at[M.array([1, 1])].multiply(False)",
    "M.zeros((3,), M.uint8).at[M.array([1, 1])].subtract(1)", "v.at[1].add(2.0)",
    "v.at[1:3].add(2.0)", "v.at[::2].add(M.array([1.0, 2, 3, 4, 5]))", "v.at[...].add(2.0)",
    "M.arange(5).at[...].add(1.5)", "M.arange(5).at[...].divide(2)",
    "M.arange(5).at[1:3].divide(2)", "M.arange(5).at[1].divide(2)",
    "M.arange(5).at[M.array([1])].divide(0.5)", "M.arange(5).at[...].divide(0.5)",
    "M.arange(5).at[()].add(1)", "M.arange(5).at[None].add(1)", "M.arange(5).at[...].maximum(2.5)",
    "M.zeros((3, 4)).at[M.array([0, 0]), 1:3].add(M.array([1.0, 2]))",
    "M.zeros((3, 4)).at[M.array([0, 0, 2]), M.array([1, 1, 3])].add(1.0)",
    "M.zeros((3, 4)).at[None, M.array([0, 0])].add(1.0)",
    "M.zeros((3, 4)).at[:, M.array([0, 3, 0])].add(M.array([1.0, 2, 3]))",
    "M.zeros((3, 4)).at[M.array([[0], [2]]), M.array([1, 1])].add(M.array([[1.0], [2]]))",
    "a.at[M.array([1, 1]), ..., M.array([4, 4])].multiply(-2.0)",
    "a.at[1, M.array([2, 2, 0]), 1::2].add(M.array([[1.0, 2], [3, 4], [5, 6]]))",
    "a.at[M.array([1, 0, 1])].maximum(M.zeros((3, 3, 5)))",
    "M.zeros((3,), M.complex64).at[M.array([0, 0])].multiply(1j)",
    "M.ones((3,), M.complex64).at[M.array([0, 0])].maximum(2j)",
    "M.array([1 + 1j, 0]).at[M.array([0, 0])].maximum(M.array([1 + 2j, 1 + 0.5j]))",
    "v.at[M.array([0, 1])].add(np.array([1.0, 2]))",
    "v.at[M.array([0, 1])].add(M.array([[[1.0, 2]]]))",
    "v.at[M.array([0, 0], M.uint8)].add(1.0)", "v.at[M.array([-1, -1], M.int8)].add(1.0)",
    "M.arange(5).at[M.array([0, 0])].maximum(M.array([3, 7]))",
    "M.array([100], M.int8).at[M.array([0, 0])].multiply(3)",
    "M.ones((3,)).at[M.array([1])].add(1j)", "M.ones((3,), M.float16).at[M.array([1])].divide(3.0)",
    "M.ones((3,), M.bool_).at[M.array([1])].divide(True)",
    "v.at[M.array([], M.int32)].add(1.0)", "z.at[M.array([1])].add(1.0)",
    # NaN rules of MLX's CPU scatter (array indices)
    "M.array([np.nan, 0.0]).at[M.array([0])].maximum(1.0)",
    "M.array([np.nan, 0.0]).at[M.array([0])].minimum(1.0)",
    "M.array([0.0, 0.0]).at[M.array([0])].maximum(np.nan)",
    "M.array([0.0, 0.0]).at[M.array([0])].minimum(np.nan)",
    "v.at[M.array([0, 0])].minimum(M.array([np.nan, -1.0]))",
    "v.at[M.array([0, 0])].maximum(M.array([-1.0, np.nan]))",
    "M.array([np.nan, 0.0], M.bfloat16).at[M.array([0, 1])].maximum(M.array([1.0, np.nan]))",
    "M.array([np.nan, 0.0], M.float16).at[M.array([0, 1])].minimum(M.array([1.0, np.nan]))",
    # errors
    "v.at[M.array([0, 1])].add(M.array([1.0, 2, 3]))", "v.at[M.array([0, 1])].add([1.0, 2])",
    "v.at[M.array([0.0])].add(1.0)", "M.zeros((3,), M.bool_).at[M.array([1])].subtract(True)",
    "v.at.add(1)", "v.at[1, 2].add(1)",
]


@pytest.mark.parametrize("text", AT_CASES)
def test_at_matches_mlx(mx, text):
    both(mx, text, message="v.at[1, 2]" not in text and "z.at" not in text)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum"])
def test_at_every_dtype_with_duplicates(mx, name, op):
    if name == "bool_" and op == "subtract":
        pytest.skip("MLX: negative is not defined for bool (checked in AT_CASES)")
    x = rand((6, 3), name, 8)
    v = rand((7, 3), name, 9)
    if name.startswith(("int", "uint")) and op == "divide":
        v = np.where(v == 0, 1, v)
    idx = np.array([1, 4, 1, 1, 5, 0, 4])
    if name in ("float16", "bfloat16") and op in ("add", "subtract", "multiply", "divide"):
        tol = {"rtol": 2e-2, "atol": 2e-2}   # float16 rounds each step; the order may differ
    elif name in ("float32", "complex64", "float64"):
        tol = {"rtol": 1e-5, "atol": 1e-5}
    else:
        tol = None
    compare(lambda: getattr(to_ours(x).at[pm.array(idx)], op)(to_ours(v)),
            lambda: getattr(to_mlx(mx, x).at[mx.array(idx)], op)(to_mlx(mx, v)),
            exact=tol is None, tol=tol)


def test_at_out_of_range_array_indices_are_skipped():
    x = pm.zeros((5,))
    got = x.at[pm.array([0, 7, -6, -1, 0])].add(pm.array([1.0, 2, 3, 4, 5]))
    np.testing.assert_array_equal(np.array(got), [6, 0, 0, 0, 4])
    # a Python int out of range is dropped too, as in a[7] = v
    np.testing.assert_array_equal(np.array(x.at[7].add(1.0)), np.zeros(5))


def test_at_refuses_boolean_masks():
    with pytest.raises(ValueError, match="Boolean mask"):
        pm.zeros(3).at[pm.array([True, False, True])].add(1.0)   # MLX: SystemError


def test_at_leaves_the_array_unchanged_and_is_lazy():
    x = pm.array(np.arange(4.0))
    at = x.at
    assert isinstance(at, pm.ArrayAt)
    y = at[pm.array([1, 1])].add(10.0)
    np.testing.assert_array_equal(np.array(x), np.arange(4.0))
    np.testing.assert_array_equal(np.array(y), [0, 21, 2, 3])


def test_at_add_random_against_numpy():
    rng = np.random.default_rng(11)
    for shape in [(9,), (6, 5), (4, 3, 7)]:
        x = rng.standard_normal(shape).astype(np.float32)
        idx = rng.integers(-shape[0], shape[0], 40)
        v = rng.standard_normal((40,) + shape[1:]).astype(np.float32)
        ref = x.astype(np.float64)
        np.add.at(ref, idx, v.astype(np.float64))
        got = pm.array(x).at[pm.array(idx)].add(pm.array(v))
        np.testing.assert_allclose(np.array(got), ref, rtol=1e-5, atol=1e-5)
        ref = x.copy()
        np.maximum.at(ref, idx, v)
        got = pm.array(x).at[pm.array(idx)].maximum(pm.array(v))
        np.testing.assert_array_equal(np.array(got), ref)


def test_take_along_an_empty_axis_reads_zeros():
    """Every index is out of range on an empty axis: MLX 0.32.4 reads past its buffer (whatever
    is there, so it is not run here); we give its shape (2, 3) and dtype, filled with our
    documented out-of-range value, 0."""
    ours = pm.take_along_axis(pm.zeros((2, 0)), pm.zeros((2, 3), pm.int32), axis=1)
    assert ours.shape == (2, 3) and ours.dtype.name == "float32"
    np.testing.assert_array_equal(np.array(ours), np.zeros((2, 3), np.float32))
