"""Creation ops against real MLX (dtypes, shapes, values, errors) and numpy: zeros ... hanning."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import (  # noqa: F401 - keep_array_class is an autouse fixture
    DTYPES, assert_same, compare, host, rand, to_mlx, to_ours, keep_array_class)


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


def both(mx, text: str, exact: bool = True, tol: dict | None = None, message: bool = True):
    """Evaluate ``text`` with ``M`` bound to pycudamlx and to MLX; compare."""
    return compare(lambda: eval(text, {"M": pm, "np": np}),
                   lambda: eval(text, {"M": mx, "np": np}), exact, tol, message)


# -- zeros, ones, full, empty and the _like forms ----------------------------------------------

FULL_CASES = [
    "M.zeros(3)", "M.zeros((2, 3), M.int32)", "M.zeros([])", "M.zeros(())", "M.zeros((0, 3))",
    "M.zeros(-1)", "M.zeros((2, -1))", "M.zeros(3, 'float32')", "M.zeros((2, 3), None)",
    "M.zeros(True)", "M.zeros((2, True))", "M.zeros((np.int64(3),))", "M.zeros(2**31)",
    "M.ones(3, M.bool_)", "M.ones((2, 1, 3), M.float16)", "M.ones(4, M.complex64)",
    "M.empty(3)", "M.empty((2, 2), M.int32)",
    "M.full(3, 2)", "M.full(3, 2.5)", "M.full(3, True)", "M.full(3, 1 + 2j)", "M.full(3, 2**40)",
    "M.full(3, 2**63)", "M.full((2, 3), M.array([1, 2, 3]))", "M.full((2, 3), M.array([1, 2]))",
    "M.full((2, 3), 2.5, M.int32)", "M.full((2, 3), 300, M.uint8)", "M.full((2, 3), -1, M.uint8)",
    "M.full(3, 2, M.bool_)", "M.full(3, 2, M.float16)", "M.full(3, 2**40, M.int32)",
    "M.full(3, 2**40, M.float16)", "M.full(3, -1, M.uint64)", "M.full(3, -1, M.uint32)",
    "M.full(3, 1 + 2j, M.float32)", "M.full(3, True, M.float32)", "M.full(3, 2.5, M.complex64)",
    "M.full(3, 2.5, M.bool_)", "M.full(3, 1, M.complex64)", "M.full(3, 2**31, M.uint32)",
    "M.full(3, -2**31)", "M.full((2, 3), M.array([1, 2, 3]), M.float16)",
    "M.full(3, M.array(2.0, M.float16))", "M.full([2, 3], 1)", "M.full(3, 'a')",
    "M.full(3, [1, 2, 3])", "M.full((1,), 0.1, M.float64)", "M.full((1,), 2**53 + 1, M.float64)",
    "M.full((1,), np.float64(0.1), M.float64)", "M.full((1,), np.float32(0.1), M.float64)",
    "M.full((1,), np.float16(0.1))", "M.full((1,), np.int8(3))", "M.full(3, np.float64(2.5))",
    "M.full(3, np.int64(2))", "M.full(3, np.array([1., 2, 3]))",
    "M.full(3, np.array([1., 2, 3]), M.int32)", "M.full(3, np.float64(2.5), M.int32)",
    "M.full((2, 0), 7)", "M.full((), 5)",
]


@pytest.mark.parametrize("text", FULL_CASES)
def test_full_family_matches_mlx(mx, text):
    both(mx, text)


LIKE_CASES = [
    "M.zeros_like(M.array([1, 2]))", "M.zeros_like(M.array([1, 2]), M.float32)",
    "M.zeros_like([1, 2])", "M.zeros_like(3)", "M.ones_like(M.array([1, 2], M.float16))",
    "M.ones_like(M.array([1, 2]), M.bool_)", "M.ones_like(M.array([1, 2]), None)",
    "M.empty_like(M.array([1, 2]))", "M.full_like(M.array([1, 2]), 2.7)",
    "M.full_like(M.array([1., 2]), 2.7)", "M.full_like(M.array([1., 2]), M.array([3, 4]))",
    "M.full_like(M.array([1., 2]), 2, M.int32)", "M.full_like(M.array([1, 2]), 300)",
    "M.full_like(M.array([1, 2], M.uint8), 300)", "M.full_like(M.array([1, 2], M.uint8), -1)",
    "M.full_like(M.zeros(3), M.array([[1], [2]]))", "M.full_like(M.zeros(1, M.float64), 0.1)",
    "M.zeros_like(M.zeros((2, 0, 3), M.int8))", "M.full_like(M.array(1.5), 3)",
]


@pytest.mark.parametrize("text", LIKE_CASES)
def test_like_family_matches_mlx(mx, text):
    both(mx, text)


@pytest.mark.parametrize("name", DTYPES)
def test_zeros_ones_full_every_dtype(mx, name):
    dtype_p, dtype_m = getattr(pm, name), getattr(mx, name)
    for fn in ("zeros", "ones"):
        assert_same(getattr(pm, fn)((3, 5), dtype_p), getattr(mx, fn)((3, 5), dtype_m))
    assert_same(pm.full((4, 1), 1, dtype_p), mx.full((4, 1), 1, dtype_m))
    assert_same(pm.zeros_like(pm.zeros((2, 7)), dtype_p), mx.zeros_like(mx.zeros((2, 7)), dtype_m))
    src = rand((3, 4), name, seed=3)
    assert_same(pm.full((2, 3, 4), to_ours(src)), mx.full((2, 3, 4), to_mlx(mx, src)))


def test_shape_that_overflows_a_64_bit_size_is_a_clear_error():
    with pytest.raises(ValueError, match="more than a 64-bit size"):
        pm.zeros((2**30, 2**30, 2**30))
    with pytest.raises(ValueError, match="64-bit"):
        pm.broadcast_to(pm.zeros(1), (2**31 - 1,) * 3)
    with pytest.raises(ValueError, match="64-bit"):
        pm.tile(pm.zeros(4), (2**31 - 1, 2**31 - 1, 2**31 - 1))


def test_shape_beyond_memory_is_a_memory_error_when_evaluated():
    big = pm.zeros((2**31 - 1, 2**31 - 1), pm.uint8, stream=pm.cpu)  # 4 EiB: fits in 64 bits
    with pytest.raises(MemoryError):
        pm.eval(big)


def test_zeros_is_lazy_and_holds_zeros():
    z = pm.zeros((3, 4), pm.bfloat16)
    assert z._data is None
    assert np.array(z).astype(np.float32).tolist() == [[0] * 4] * 3


# -- arange, linspace --------------------------------------------------------------------------

ARANGE_CASES = [
    "M.arange(5)", "M.arange(2, 5)", "M.arange(0, 1, 0.25)", "M.arange(5.0)", "M.arange(0, 5, 2)",
    "M.arange(5, 0, -2)", "M.arange(0, 5, 0)", "M.arange(0, 5, 0.0)", "M.arange(5, 0)",
    "M.arange(0, 5, -1)", "M.arange(5, dtype=M.float16)", "M.arange(5, dtype=M.bool_)",
    "M.arange(5, dtype=M.complex64)", "M.arange(0.5, 5, dtype=M.int32)",
    "M.arange(0, 5, 0.5, dtype=M.int32)", "M.arange(0, 5, 1.5, dtype=M.int32)",
    "M.arange(-3, 5, 1.5, dtype=M.int32)", "M.arange(5, dtype=M.uint8)",
    "M.arange(0, 300, dtype=M.uint8)", "M.arange(0, 1e10)", "M.arange(0, 1e10, 1e-10)",
    "M.arange(float('nan'))", "M.arange(float('inf'))", "M.arange(0, 5, float('inf'))",
    "M.arange(5, 0, float('inf'))", "M.arange(0, float('inf'), 1)",
    "M.arange(2**31 + 5, 2**31 + 8)", "M.arange(2**40, 2**40 + 3)", "M.arange(0, 5, 1, M.int64)",
    "M.arange(start=1, stop=4)", "M.arange(stop=4)", "M.arange(1, 4, step=2)",
    "M.arange(1, step=2)", "M.arange(True)", "M.arange(3, dtype=M.float64)", "M.arange(-5)",
    "M.arange(3, None)", "M.arange(3, None, 2)", "M.arange(1, 10, None)",
    "M.arange(5, dtype=M.uint64)", "M.arange(0, 10, 3, M.uint32)", "M.arange(10, 0, -3, M.uint32)",
    "M.arange(0.1, 1.0, 0.1)", "M.arange(1, 2**31 + 100, 2**30)", "M.arange(-3, 3, dtype=M.uint8)",
    "M.arange(5, dtype=M.int8)", "M.arange(0.1, 1, 0.3, dtype=M.float64)",
    "M.arange(-7, 13, 3, dtype=M.int16)", "M.arange(2.5, -4, -0.75, dtype=M.bfloat16)",
    "M.arange(0, 100, 7, M.float32)",
]


@pytest.mark.parametrize("text", ARANGE_CASES)
def test_arange_matches_mlx(mx, text):
    both(mx, text, exact=False)


def test_arange_large_float_is_accurate_where_mlx_drifts():
    # MLX's CPU adds the step repeatedly in float32 (stuck at 2**24, drifting for 0.1 steps);
    # we give start + i * step rounded once, numpy's result.
    a = np.array(pm.arange(2**24 + 10, dtype=pm.float32))
    np.testing.assert_array_equal(a, np.arange(2**24 + 10, dtype=np.float64).astype(np.float32))
    b = np.array(pm.arange(0, 100000, 0.1))
    ref = (np.arange(b.size) * 0.1).astype(np.float32)
    assert b.size == 1000000 and np.abs(b - ref).max() == 0
    c = np.array(pm.arange(2**62, 2**62 + 3, dtype=pm.int64))
    assert c.tolist() == [2**62, 2**62 + 1, 2**62 + 2]


LINSPACE_CASES = [
    "M.linspace(0, 1, 5)", "M.linspace(0, 1, 1)", "M.linspace(0, 1, 0)", "M.linspace(0, 1, -1)",
    "M.linspace(0, 10, 5, dtype=M.int32)", "M.linspace(0, 1, 5, endpoint=False)",
    "M.linspace(1, 0, 4, False)", "M.linspace(0, 1, 1, endpoint=False)",
    "M.linspace(0, 1, 5, dtype=M.float16)", "M.linspace(0, 1, 3, dtype=M.bool_)",
    "M.linspace(0, 1, 3, dtype=M.complex64)", "M.linspace(0.5, 1e10, 3)",
    "M.linspace(0, 1, 2.5)", "M.linspace(0, 1)", "M.linspace(0, 1, None)",
    "M.linspace(0, 1, 3, dtype=M.float64)", "M.linspace(1 + 1j, 2, 3)",
    "M.linspace(0, 1, 3, dtype=None)", "M.linspace(0.1, 1, 4, dtype=M.float64)",
    "M.linspace(0.3, 7.7, 13)", "M.linspace(-5.5, 2.25, 101)", "M.linspace(1e-3, 3e5, 1000)",
    "M.linspace(-5.5, 2.25, 101, dtype=M.bfloat16)", "M.linspace(-3, 300, 77, dtype=M.uint8)",
    "M.linspace(0.3, 7.7, 13, dtype=M.float64)", "M.linspace(0.3, 7.7, 13, endpoint=False)",
]


@pytest.mark.parametrize("text", LINSPACE_CASES)
def test_linspace_matches_mlx_exactly(mx, text):
    both(mx, text)


# -- eye, identity, tri, tril, triu ------------------------------------------------------------

MATRIX_CASES = [
    "M.eye(3)", "M.eye(2, 3, 1)", "M.eye(3, k=-1, dtype=M.int32)", "M.eye(3, 2, 5)", "M.eye(0)",
    "M.eye(-1)", "M.eye(2, 0)", "M.eye(3, dtype=M.bool_)", "M.eye(3, 4.5)", "M.eye(4, 7, -2)",
    "M.eye(5, 3, 1, M.bfloat16)", "M.identity(2)", "M.identity(0)", "M.identity(2, M.int8)",
    "M.identity(3, M.complex64)", "M.tri(3)", "M.tri(2, 3, 1)", "M.tri(3, k=-1)",
    "M.tri(3, dtype=M.int32)", "M.tri(0)", "M.tri(-1)", "M.tri(3, 0)", "M.tri(2, dtype=None)",
    "M.tri(4, 6, -2, M.float16)",
]


@pytest.mark.parametrize("text", MATRIX_CASES)
def test_eye_tri_match_mlx(mx, text):
    both(mx, text)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("k", [-2, 0, 1, 5])
def test_tril_triu_every_dtype(mx, name, k):
    src = rand((2, 4, 5), name, seed=k + 10)
    for fn in ("tril", "triu"):
        assert_same(getattr(pm, fn)(to_ours(src), k), getattr(mx, fn)(to_mlx(mx, src), k))
    # A transposed (non-contiguous) input.
    t = rand((5, 3), name, seed=1)
    ours = pm.tril(pm.transpose(to_ours(t)), k)
    assert_same(ours, mx.tril(mx.transpose(to_mlx(mx, t)), k))


@pytest.mark.parametrize("text", ["M.tril(M.array([1, 2]))", "M.triu(M.array(1))",
                                  "M.tril(M.zeros((0, 3)))", "M.triu(M.zeros((2, 0, 4)), 1)"])
def test_tril_triu_errors_and_empty(mx, text):
    both(mx, text)


# -- meshgrid, repeat, tile --------------------------------------------------------------------

MESH_CASES = [
    "M.meshgrid(M.array([1, 2]), M.array([3, 4, 5]))",
    "M.meshgrid(M.array([1, 2]), M.array([3, 4, 5]), indexing='ij')",
    "M.meshgrid(M.array([1, 2]), M.array([3., 4, 5]), sparse=True)",
    "M.meshgrid(M.array([1, 2]), M.array([3, 4, 5]), indexing='ab')",
    "M.meshgrid(M.array([1, 2]))", "M.meshgrid()",
    "M.meshgrid(M.array([[1, 2], [3, 4]]), M.array([7, 8]))",
    "M.meshgrid(M.array(1), M.array([5, 6]))",
    "M.meshgrid(M.array([1, 2]), M.array([3, 4, 5]), M.array([6]), sparse=True)",
    "M.meshgrid(M.array([1, 2]), M.array([3, 4, 5]), M.array([6, 7]), indexing='ij')",
    "M.meshgrid(M.array([1, 2]), M.array([3, 4, 5]), M.array([6, 7]))",
]


@pytest.mark.parametrize("text", MESH_CASES)
def test_meshgrid_matches_mlx(mx, text):
    both(mx, text)


def test_meshgrid_outputs_are_views():
    x, y = pm.array(np.arange(4.0)), pm.array(np.arange(3.0))
    pm.eval(x, y)
    gx, gy = pm.meshgrid(x, y)
    pm.eval(gx, gy)
    assert np.shares_memory(gx._data, x._data) and np.shares_memory(gy._data, y._data)


REPEAT_TILE_CASES = [
    "M.repeat(M.array([1, 2, 3]), 2)", "M.repeat(M.array([[1, 2], [3, 4]]), 2)",
    "M.repeat(M.array([[1, 2], [3, 4]]), 3, 1)", "M.repeat(M.array([[1, 2], [3, 4]]), 2, axis=-1)",
    "M.repeat(M.array([[1, 2], [3, 4]]), 0, 1)", "M.repeat(M.array([[1, 2], [3, 4]]), 0)",
    "M.repeat(M.array([[1, 2], [3, 4]]), -1)", "M.repeat(M.array([[1, 2], [3, 4]]), 2, 2)",
    "M.repeat(M.array([[1, 2], [3, 4]]), 1, 0)", "M.repeat(M.array([[1, 2], [3, 4]]), [1, 2])",
    "M.repeat(M.array(1), 3)", "M.repeat(M.array(1), 3, 0)",
    "M.tile(M.array([1, 2, 3]), 2)", "M.tile(M.array([1, 2, 3]), (2, 2))",
    "M.tile(M.array([[1, 2], [3, 4]]), 2)", "M.tile(M.array([[1, 2], [3, 4]]), (2, 1, 2))",
    "M.tile(M.array([[1, 2], [3, 4]]), 0)", "M.tile(M.array([[1, 2], [3, 4]]), -1)",
    "M.tile(M.array([[1, 2], [3, 4]]), ())", "M.tile(M.array(1), 3)", "M.tile(M.array(1), ())",
]


@pytest.mark.parametrize("text", REPEAT_TILE_CASES)
def test_repeat_tile_match_mlx(mx, text):
    both(mx, text)


@pytest.mark.parametrize("name", ["bool_", "int8", "uint32", "float16", "bfloat16", "float64",
                                  "complex64"])
def test_repeat_tile_dtypes_and_strided_inputs(mx, name):
    src = rand((3, 5), name, seed=2)
    o, t = pm.transpose(to_ours(src))[::2], mx.transpose(to_mlx(mx, src))[::2]
    assert_same(pm.repeat(o, 3, 0), mx.repeat(t, 3, 0))
    assert_same(pm.tile(o, (2, 1, 3)), mx.tile(t, (2, 1, 3)))


# -- window functions --------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("m", [-1, 0, 1, 2, 5, 6, 7, 16, 101])
def test_windows_match_mlx_and_numpy(mx, fn, m):
    ours = getattr(pm, fn)(m)
    assert ours.dtype == pm.float32
    compare(lambda: getattr(pm, fn)(m), lambda: getattr(mx, fn)(m), tol={"rtol": 0, "atol": 2e-6})
    np.testing.assert_allclose(host(ours), getattr(np, fn)(max(m, 0)), rtol=0, atol=1e-6)


@pytest.mark.parametrize("text", ["M.hanning(2.0)", "M.bartlett('3')"])
def test_window_errors(mx, text):
    both(mx, text, message=False)


def test_repeat_counts_beyond_int32_are_refused_as_mlx():
    """Found by the fuzz test: repeats=2**31 asked numpy for 2**32 elements (MLX's bindings
    refuse an int that does not fit a C++ int; a result dimension past int32 is its
    OverflowError)."""
    mlx = pytest.importorskip("mlx.core")
    a = pm.array([[0], [1]])
    with pytest.raises(TypeError, match="repeat"):
        pm.repeat(a, 2**31)
    with pytest.raises(TypeError):
        mlx.repeat(mlx.array([[0], [1]]), 2**31)
    with pytest.raises(OverflowError, match=r"\[repeat\] Shape dimension 4294967294"):
        pm.repeat(a, 2**31 - 1)
    with pytest.raises(OverflowError, match=r"\[repeat\] Shape dimension 4294967294"):
        mlx.repeat(mlx.array([[0], [1]]), 2**31 - 1)


def test_arange_type_error_names_types_as_mlx(mx):
    """nanobind prints MLX's array type as mlx.core.array (not the Python class path)."""
    for args in [lambda m: (m.array(1),), lambda m: ("a",), lambda m: (1, m.array(2.0)),
                 lambda m: (np.array(2),)]:
        msgs = []
        for m in (mx, pm):
            with pytest.raises(TypeError) as info:
                m.arange(*args(m))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("text", [
    "M.zeros(2.0)", "M.zeros((2.0,))", "M.zeros([2, 'a'])", "M.ones('3')", "M.full((2.0,), 1)",
    "M.full(2.5, 1)", "M.zeros(M.array(3))", "M.zeros(None)", "M.full(None, 1)",
    "M.ones(None, M.int32)", "x.reshape(2.0, 6)", "x.reshape((2.0, 6))", "x.reshape(None)",
    "x.reshape(True, 12)", "x.transpose(1.0, 0)", "x.transpose([1.0, 0])",
])
def test_bad_shape_values_fail_like_mlx(mx, text):
    """zeros/ones/full's int | Sequence[int] and the methods' *shape: a float fails in MLX's
    caster (RuntimeError std::bad_cast), None in nanobind's overloads (its TypeError text)."""
    got, want = [], []
    for lib, out in ((pm, got), (mx, want)):
        try:
            eval(text, {"M": lib, "x": lib.ones((2, 6))})
            out.append("ok")
        except Exception as e:  # noqa: BLE001 - comparing what each raises
            out.append((type(e).__name__, str(e).split(" (")[0]))
    assert got == want
    assert pm.zeros(True).shape == (1,) and pm.ones((2, True)).shape == (2, 1)


def test_linspace_endpoint_takes_a_bool_only(mx):
    """linspace's 4th positional argument is endpoint: MLX refuses anything but a Python bool
    (so linspace(0, 10, 5, mx.int64) is a TypeError, not a float32 result)."""
    for m in (pm, mx):
        for bad in (m.int64, 1, 0, np.bool_(True), None, 1.0):
            with pytest.raises(TypeError, match="incompatible function arguments"):
                m.linspace(0, 10, 5, bad)
        assert m.linspace(0, 1, 4, False).tolist() == [0.0, 0.25, 0.5, 0.75]
        assert m.linspace(0, 10, 5, dtype=m.int64).dtype == m.int64
