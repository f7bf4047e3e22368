"""sort, argsort, partition, argpartition, topk, searchsorted, unique on the CPU backend, against
real MLX 0.32.4 (dtypes, shapes, stable order, NaN placement, errors) and numpy (values)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import (  # noqa: F401 - keep_array_class is an autouse fixture
    DTYPES, compare, host, keep_array_class, rand, to_mlx)


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


@pytest.fixture(autouse=True)
def _cpu():
    with pm.stream(pm.cpu):
        yield


def ours(x: np.ndarray) -> pm.array:
    import ml_dtypes

    if x.dtype == ml_dtypes.bfloat16:
        return pm.array(x.astype(np.float32)).astype(pm.bfloat16)
    return pm.array(x)


def tied(shape, dtype: str, seed: int = 0) -> np.ndarray:
    """Random data with many ties (and NaN, inf, -0.0 for floats)."""
    rng = np.random.default_rng(seed)
    x = rand(shape, dtype, seed)
    if dtype in ("bool_",):
        return x
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        base = rng.integers(-3, 4, shape).astype(np.float64)
        pick = rng.random(shape)
        base[pick < 0.1] = np.nan
        base[(pick >= 0.1) & (pick < 0.15)] = np.inf
        base[(pick >= 0.15) & (pick < 0.2)] = -np.inf
        base[(pick >= 0.2) & (pick < 0.3)] = -0.0
        return base.astype(x.dtype)
    if dtype == "complex64":
        re = rng.integers(-2, 3, shape).astype(np.float32)
        im = rng.integers(-2, 3, shape).astype(np.float32)
        re[rng.random(shape) < 0.1] = np.nan
        im[rng.random(shape) < 0.05] = np.nan
        return (re + 1j * im).astype(np.complex64)
    return (x % 5).astype(x.dtype)


SHAPES = [(7,), (3, 5), (2, 3, 4), (0,), (2, 0, 3), (1,), (33, 17)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_argsort_match_mlx(mx, dtype):
    for i, shape in enumerate(SHAPES):
        x = tied(shape, dtype, i)
        for axis in [None] + list(range(-len(shape), len(shape))):
            for fn in ("sort", "argsort"):
                compare(lambda: getattr(pm, fn)(ours(x), axis=axis),
                        lambda: getattr(mx, fn)(to_mlx(mx, x), axis=axis))


def test_default_axis_and_nan_order(mx):
    x = np.array([3.0, np.nan, -1.0, -np.inf, np.nan, 2.0, 0.0, -0.0, np.inf], np.float32)
    s = pm.sort(ours(x))
    np.testing.assert_array_equal(host(s)[:7], [-np.inf, -1, 0, 0, 2, 3, np.inf])
    assert np.isnan(host(s)[7:]).all()
    assert host(pm.argsort(ours(x))).tolist() == [3, 2, 6, 7, 5, 0, 8, 1, 4]  # stable
    assert np.signbit(host(s)[3]) and not np.signbit(host(s)[2])


def test_noncontiguous_and_large(mx):
    x = tied((40, 300), "float32", 3)
    xt = ours(x).T
    compare(lambda: pm.argsort(xt, axis=1), lambda: mx.argsort(to_mlx(mx, x).T, axis=1))
    compare(lambda: pm.sort(ours(x)[::2, ::-3]), lambda: mx.sort(to_mlx(mx, x)[::2, ::-3]))
    y = tied((5000,), "int32", 4)
    compare(lambda: pm.argsort(ours(y)), lambda: mx.argsort(to_mlx(mx, y)))


def test_zero_dim(mx):
    for fn in ("sort", "argsort"):
        compare(lambda: getattr(pm, fn)(pm.array(3.0)), lambda: getattr(mx, fn)(mx.array(3.0)))
        compare(lambda: getattr(pm, fn)(pm.array(3.0), axis=None),
                lambda: getattr(mx, fn)(mx.array(3.0), axis=None))
    compare(lambda: pm.topk(pm.array(3.0), 1, axis=None), lambda: mx.topk(mx.array(3.0), 1,
                                                                          axis=None))
    compare(lambda: pm.partition(pm.array(3.0), 0, axis=None),
            lambda: mx.partition(mx.array(3.0), 0, axis=None))


def _mlx_key(v: np.ndarray) -> np.ndarray:
    """Integer keys in MLX's total order (NaN largest, -0.0 == 0.0): comparable with <=."""
    from pycudamlx.graph.primitives.sorting import sort_keys

    k = sort_keys(v)
    if k.dtype.kind != "f":
        return k
    f = k.astype(np.float64)
    f[f == 0] = 0.0
    bits = f.view(np.uint64)
    out = np.where(bits >> np.uint64(63), ~bits, bits | np.uint64(1 << 63))
    return np.where(np.isnan(f), np.uint64(2**64 - 1), out)


def check_partition(x: np.ndarray, part: np.ndarray, kth: int, axis: int) -> None:
    """The partition property in MLX's order: part is a permutation of x along axis with the
    kth element in its sorted place, nothing greater before it and nothing smaller after."""
    xs = np.moveaxis(x, axis, -1)
    ps = np.moveaxis(part, axis, -1)
    ref = np.take_along_axis(xs, np.argsort(_mlx_key(xs), axis=-1, kind="stable"), -1)
    n = xs.shape[-1]
    k = kth % n
    np.testing.assert_array_equal(np.sort(_mlx_key(ps), -1), np.sort(_mlx_key(xs), -1))
    kp = _mlx_key(ps)
    np.testing.assert_array_equal(kp[..., k], _mlx_key(ref)[..., k])
    assert (kp[..., :k] <= kp[..., k:k + 1]).all()
    assert (kp[..., k + 1:] >= kp[..., k:k + 1]).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_partition_property(mx, dtype):
    x = tied((6, 19), dtype, 5)
    for axis in (0, 1, -1):
        n = x.shape[axis]
        for kth in (0, 3, n - 1, -1, -n):
            p = pm.partition(ours(x), kth, axis=axis)
            ref = mx.partition(to_mlx(mx, x), kth, axis=axis)
            assert str(p.dtype) == str(ref.dtype) and p.shape == ref.shape
            check_partition(x, host(p), kth, axis)
            idx = pm.argpartition(ours(x), kth, axis=axis)
            assert idx.dtype == pm.uint32
            check_partition(x, np.take_along_axis(x, host(idx).astype(np.int64), axis), kth,
                            axis)


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk(mx, dtype):
    x = tied((5, 23), dtype, 6)
    for axis in (0, 1, -1, None):
        n = x.size if axis is None else x.shape[axis]
        for k in (0, 1, 4, n):
            t = pm.topk(ours(x), k, axis=axis)
            r = mx.topk(to_mlx(mx, x), k, axis=axis)
            assert str(t.dtype) == str(r.dtype) and t.shape == r.shape
            # the same multiset as MLX's k largest (NaN counts as largest)
            ax = -1 if axis is None else axis
            np.testing.assert_array_equal(np.sort(_mlx_key(host(t)), ax),
                                          np.sort(_mlx_key(host(r)), ax))


def _bits(x: np.ndarray) -> np.ndarray:
    """Bit patterns (-0.0 differs from 0.0, NaN equals NaN): an exact comparison of orders."""
    if x.dtype.kind in "fc" or x.dtype.name == "bfloat16":
        return np.ascontiguousarray(x).view(np.uint8).reshape(x.shape + (-1,))
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_partition_order_is_mlx_cpu_order(mx, dtype):
    # MLX's CPU order is std::nth_element's: top-k sampling picks from candidates in it
    x = tied((6, 19), dtype, 7)
    for axis in (0, 1, -1):
        n = x.shape[axis]
        for kth in (0, 3, n // 2, n - 1, -1):
            text = f"{dtype} axis={axis} kth={kth}"
            np.testing.assert_array_equal(
                host(pm.argpartition(ours(x), kth, axis=axis)),
                host(mx.argpartition(to_mlx(mx, x), kth, axis=axis)), err_msg=text)
            np.testing.assert_array_equal(
                _bits(host(pm.partition(ours(x), kth, axis=axis))),
                _bits(host(mx.partition(to_mlx(mx, x), kth, axis=axis))), err_msg=text)
        for k in (1, 4, n):
            np.testing.assert_array_equal(_bits(host(pm.topk(ours(x), k, axis=axis))),
                                          _bits(host(mx.topk(to_mlx(mx, x), k, axis=axis))))


@pytest.mark.parametrize("pattern", ["sorted", "reversed", "equal", "organ", "random", "few"])
def test_partition_order_on_long_rows(mx, pattern):
    # long rows reach introselect's pivoting (and, for adversarial inputs, its heap fallback)
    n = 3001
    rng = np.random.default_rng(11)
    x = {"sorted": np.arange(n), "reversed": np.arange(n)[::-1], "equal": np.zeros(n),
         "organ": np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]),
         "random": rng.standard_normal(n), "few": rng.integers(0, 3, n)}[pattern]
    x = np.ascontiguousarray(x, dtype=np.float32)
    for kth in (0, 7, n // 2, n - 2):
        np.testing.assert_array_equal(host(pm.argpartition(pm.array(x), kth)),
                                      host(mx.argpartition(mx.array(x), kth)))
    np.testing.assert_array_equal(host(pm.topk(pm.array(x), 50)), host(mx.topk(mx.array(x), 50)))


def test_heap_select_fallback_matches_libstdcxx():
    # a median-of-3 killer drives introselect to its depth limit; checked against sorted order
    # (the partition property) since MLX cannot be asked which path it took
    from pycudamlx.graph.primitives.nth_element import nth_element

    n = 64
    ranks = list(range(n))
    for i in range(0, n, 2):
        ranks[i], ranks[(i + n // 2) % n] = ranks[(i + n // 2) % n], ranks[i]
    for kth in (0, 5, 31, 63):
        order = nth_element(ranks, kth)
        assert sorted(order) == list(range(n))
        vals = [ranks[i] for i in order]
        assert vals[kth] == kth and max(vals[:kth] + [-1]) < kth < min(vals[kth + 1:] + [n])


def test_topk_gradient_goes_where_mlx_sends_it(mx):
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.5, 2.0]], np.float32)
    w = np.arange(1, 4, dtype=np.float32)
    g = pm.grad(lambda a: (pm.topk(a, 3) * pm.array(w)).sum())(pm.array(x))
    r = mx.grad(lambda a: (mx.topk(a, 3) * mx.array(w)).sum())(mx.array(x))
    np.testing.assert_array_equal(host(g), host(r))


def test_topk_nan_is_largest():
    t = pm.topk(pm.array([1.0, float("nan"), 3.0, 2.0]), 2)
    v = host(t)
    assert v[0] == 3.0 and np.isnan(v[1])


@pytest.mark.parametrize("text", [
    "sort(A, axis=2)", "sort(A, axis=-3)", "argsort(A, axis=5)", "partition(A, 1, axis=2)",
    "argpartition(A, 1, axis=-3)", "topk(A, 1, axis=2)", "topk(A, 4)", "topk(A, -1)",
    "topk(A, 3)", "topk(A, 0)", "partition(A, 3)", "partition(A, -3)", "partition(A, -4)",
    "argpartition(A, 5)", "argpartition(A, -4)", "sort(A, axis=1.0)", "topk(A, 1.0)",
    "partition(E, 0)", "topk(E, 0)", "sort([3, 1])", "sort(3)", "argsort(Z)", "sort(Z)",
    "topk(A, k=1, axis=0)", "partition(A, kth=1, axis=0)", "sort(A, axis=True)",
    "topk(A, True)", "argsort(A, axis=I64)", "topk(A, K64)",
])
def test_errors_and_edges(mx, text):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)

    def env(lib, conv):
        return {"A": conv(a), "E": conv(np.zeros((2, 0), np.float32)),
                "Z": conv(np.array(2.0, np.float32)), "I64": np.int64(0), "K64": np.int32(2),
                **{n: getattr(lib, n) for n in ("sort", "argsort", "partition", "argpartition",
                                                "topk")}}

    compare(lambda: eval(text, env(pm, ours)), lambda: eval(text, env(mx, lambda v:
                                                                      to_mlx(mx, v))))


SEARCH = [
    ("[1, 2, 2, 4]", "int32", "[0, 2, 3, 5]", "int32"),
    ("[1, 2, 2, 4]", "int32", "[0.5, 2.0, 3.5, 5]", "float32"),
    ("[1, 2, nan]", "float32", "[nan, 2, inf, -inf, 1]", "float32"),
    ("[-0.0, 0.0]", "float32", "[0.0, -0.0]", "float32"),
    ("[1, 2]", "uint8", "[-1, 300]", "int32"),
    ("[1, 2]", "uint32", "[-1, 3]", "int32"),
    ("[1, 2]", "float16", "[1.5, 2]", "bfloat16"),
    ("[True, True]", "bool_", "[False, True]", "bool_"),
    ("[1+1j, 2+0j, nan]", "complex64", "[1+2j, 2, nan, 0]", "complex64"),
    ("[]", "int32", "[1, 3]", "int32"),
    ("[1, 3, 3, 9]", "int64", "[[1, 5], [3, 10]]", "uint64"),
    ("[1, 3, 3, 9]", "int64", "7", "int64"),
]


@pytest.mark.parametrize("seq,sd,vals,vd", SEARCH)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(mx, seq, sd, vals, vd, side):
    env = {"nan": float("nan"), "inf": float("inf")}
    s = np.array(eval(seq, env))
    v = np.array(eval(vals, env))
    import ml_dtypes

    def conv(x, d):
        d = ml_dtypes.bfloat16 if d == "bfloat16" else ("bool" if d == "bool_" else d)
        with np.errstate(all="ignore"):
            return x.astype(d) if not (x.dtype.kind in "iu" and d in ("uint8", "uint32")) \
                else x.astype(np.int64).astype(d)
    s2, v2 = conv(s, sd), conv(v, vd)
    compare(lambda: pm.searchsorted(ours(s2), ours(v2), side=side),
            lambda: mx.searchsorted(to_mlx(mx, s2), to_mlx(mx, v2), side=side))


@pytest.mark.parametrize("dtype", DTYPES)
def test_searchsorted_random(mx, dtype):
    seq = tied((37,), dtype, 8)
    seq = host(pm.sort(ours(seq)))
    vals = tied((4, 9), dtype, 9)
    for side in ("left", "right"):
        compare(lambda: pm.searchsorted(ours(seq), ours(vals), side),
                lambda: mx.searchsorted(to_mlx(mx, seq), to_mlx(mx, vals), side))


@pytest.mark.parametrize("text", [
    "searchsorted(S, V, side='middle')", "searchsorted(S, V, 'LEFT')", "searchsorted(S, 3)",
    "searchsorted([1, 2], V)", "searchsorted(M, V)", "searchsorted(Z, V)",
    "searchsorted(S, Z)", "searchsorted(S, W)",
])
def test_searchsorted_errors(mx, text):
    def env(lib, conv):
        return {"S": conv(np.array([1, 2, 2, 4], np.int32)), "V": conv(np.array([0, 2, 3, 5])),
                "M": conv(np.array([[1, 2], [3, 4]])), "Z": conv(np.array(1)),
                "W": conv(np.zeros((2, 0, 3), np.float32)), "searchsorted": lib.searchsorted}

    compare(lambda: eval(text, env(pm, ours)), lambda: eval(text, env(mx, lambda v:
                                                                      to_mlx(mx, v))))


UNIQUE = [
    "unique(A, 3)", "unique(A, 5)", "unique(A, 2, True, True, True)",
    "unique(A, 4, True, True, True, fill_value=0)", "unique(A, 0, True, True, True)",
    "unique(A, -1)", "unique(A, 3, return_counts=True, fill_value=2.5)",
    "unique(A, 4, fill_value=2.5)", "unique(A, 4, fill_value=F2)",
    "unique(A, 4, fill_value=F0)", "unique(A, 4, fill_value=True)",
    "unique(B, 3, return_inverse=True)", "unique(N, 5, True, True, True)",
    "unique(E, 3, True, True, True)", "unique(E, 3, True, True, True, fill_value=1)",
    "unique(E, 0, True, True, True)", "unique(S, 2, True, True, True)",
    "unique(BO, 3, True, True, True)", "unique(C, 3, True, True, True)",
    "unique(U8, 2, True, True, True)", "unique(A, 3.0)", "unique([1, 2], 2)",
    "unique(H, 3, fill_value=1e6)", "unique(I8, 3, fill_value=300)",
    "unique(I8, 3, fill_value=-1)", "unique(U8, 3, fill_value=-1)",
    "unique(U8, 6, fill_value=FN)", "unique(A, 4, fill_value='x')",
    "unique(A, 4, fill_value=[1])",
]


@pytest.mark.parametrize("text", UNIQUE)
def test_unique_cases(mx, text):
    nan = float("nan")

    def env(lib, conv):
        return {
            "A": conv(np.array([2, 1, 2, 3, 1], np.int32)),
            "B": conv(np.array([[3, 1], [1, 3]], np.int32)),
            "N": conv(np.array([1.0, nan, nan, 0.0, -0.0], np.float32)),
            "E": conv(np.array([], np.float32)), "S": conv(np.array(5, np.int32)),
            "BO": conv(np.array([True, False, True])),
            "C": conv(np.array([1 + 1j, 1 + 1j, 0j], np.complex64)),
            "U8": conv(np.array([5, 4, 5, 4, 3], np.uint8)),
            "H": conv(np.array([1, 2], np.float16)), "I8": conv(np.array([1, 2], np.int8)),
            "F2": conv(np.array([7, 8], np.int32)), "F0": conv(np.array(7.5, np.float32)),
            "FN": conv(np.array(-1, np.int32)), "unique": lib.unique}

    compare(lambda: eval(text, env(pm, ours)), lambda: eval(text, env(mx, lambda v:
                                                                      to_mlx(mx, v))))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_random(mx, dtype):
    x = tied((6, 11), dtype, 10)
    for size in (1, 4, 66, 70):
        compare(lambda: pm.unique(ours(x), size, True, True, True),
                lambda: mx.unique(to_mlx(mx, x), size, True, True, True))
