"""matmul, addmm, inner, outer, tensordot, vecdot, einsum, einsum_path on the CPU backend:
differential against real MLX (dtypes, shapes, errors) and numpy float64 (values)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

mlx = pytest.importorskip("mlx.core")

rng = np.random.default_rng(7)

FLOATS = ["float32", "float16", "bfloat16", "float64", "complex64"]
TOL = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12,
       "complex64": 2e-5}


def data(shape, dtype="float32"):
    x = rng.standard_normal(shape)
    if dtype == "complex64":
        x = x + 1j * rng.standard_normal(shape)
    return x


def ours(x, dtype):
    return mx.array(np.asarray(x, dtype=np.complex64 if dtype == "complex64" else np.float32)
                    if dtype != "float64" else np.asarray(x), getattr(mx, dtype))


def theirs(x, dtype):
    if dtype == "float64":
        return mlx.array(np.asarray(x, np.float64), mlx.float64)
    npd = np.complex64 if dtype == "complex64" else np.float32
    return mlx.array(np.asarray(x, npd)).astype(getattr(mlx, dtype))


def as64(x):
    x = np.array(x.astype(mx.complex64) if x.dtype == mx.complex64 else
                 x.astype(mx.float64) if x.dtype != mx.float64 else x)
    return x.astype(np.complex128) if np.iscomplexobj(x) else x.astype(np.float64)


def ref_inputs(x, dtype):
    """The values our input holds (rounded to the dtype), in float64/complex128."""
    return as64(ours(x, dtype))


def close(got, want64, dtype, k=1):
    g = as64(got)
    scale = np.sqrt(max(k, 1))
    tol = TOL[dtype] * scale * 4
    np.testing.assert_allclose(g, want64, rtol=tol, atol=tol * max(1.0, np.abs(want64).max(
        initial=0.0)))


def _dt(mod, name):
    return getattr(mod, "bool_" if name == "bool" else name)


MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 5)), ((4, 3), (3,)), ((2, 4, 3), (3,)), ((4,), (2, 4, 3)),
    ((1, 1), (1, 1)), ((7, 33), (33, 1)), ((2, 1, 4, 3), (5, 3, 6)), ((3, 4, 5), (3, 5, 2)),
    ((2, 0), (0, 5)), ((0, 3), (3, 5)), ((0, 2, 3), (3, 5)), ((2, 3), (3, 0)),
    ((1, 2, 3), (4, 3, 2)), ((129, 7), (7, 33)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes_vs_mlx(sa, sb):
    xa, xb = data(sa), data(sb)
    got = mx.matmul(ours(xa, "float32"), ours(xb, "float32"))
    want = mlx.matmul(theirs(xa, "float32"), theirs(xb, "float32"))
    assert got.shape == tuple(want.shape)
    assert got.dtype == mx.float32
    close(got, np.matmul(xa, xb), "float32", sa[-1])


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_dtypes(dtype):
    xa, xb = data((5, 7, 9), dtype), data((9, 3), dtype)
    got = ours(xa, dtype) @ ours(xb, dtype)
    want = theirs(xa, dtype) @ theirs(xb, dtype)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    close(got, ref_inputs(xa, dtype) @ ref_inputs(xb, dtype), dtype, 9)
    # agrees with MLX's own CPU result too
    np.testing.assert_allclose(as64(got), np.array(want.astype(mlx.complex64) if dtype ==
                               "complex64" else want.astype(mlx.float64) if dtype != "float64"
                               else want), rtol=TOL[dtype] * 8, atol=TOL[dtype] * 8)


@pytest.mark.parametrize("da,db", [("float16", "float32"), ("int32", "float16"),
                                   ("bfloat16", "float16"), ("int8", "bfloat16"),
                                   ("float32", "complex64"), ("float64", "float32")])
def test_matmul_promotion(da, db):
    a = mx.ones((2, 3), getattr(mx, da))
    b = mx.ones((3, 4), getattr(mx, db))
    want = mlx.matmul(mlx.ones((2, 3), getattr(mlx, da)), mlx.ones((3, 4), getattr(mlx, db)),
                      stream=mlx.cpu)
    got = mx.matmul(a, b)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    assert np.all(np.array(got.astype(mx.float32)) == 3)


def test_matmul_noncontiguous():
    xa = data((6, 8))
    xb = data((5, 8))
    a = ours(xa, "float32")
    b = ours(xb, "float32")
    close(a[::2, 1:7] @ b[:, 1:7].T, xa[::2, 1:7] @ xb[:, 1:7].T, "float32", 6)
    close(a.T @ a, xa.T @ xa, "float32", 6)
    close(mx.broadcast_to(a[:1], (3, 6, 8)) @ b.T, np.broadcast_to(xa[:1], (3, 6, 8)) @ xb.T,
          "float32", 8)


def _err(fn_ours, fn_theirs):
    with pytest.raises(Exception) as want:
        fn_theirs()
    with pytest.raises(type(want.value)) as got:
        fn_ours()
    return str(got.value), str(want.value)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 2, 3), (3, 3, 5)),
                                   ((5,), (2, 4, 3)), ((), (3,)), ((3,), ())])
def test_matmul_errors_match_mlx(sa, sb):
    g, w = _err(lambda: mx.matmul(mx.ones(sa), mx.ones(sb)),
                lambda: mlx.matmul(mlx.ones(sa), mlx.ones(sb)))
    assert g == w


@pytest.mark.parametrize("dtype", ["int32", "bool_", "uint8", "int64"])
def test_matmul_refuses_integers(dtype):
    g, w = _err(lambda: mx.matmul(mx.ones((2, 3), getattr(mx, dtype)),
                                  mx.ones((3, 2), getattr(mx, dtype))),
                lambda: mlx.matmul(mlx.ones((2, 3), getattr(mlx, dtype)),
                                   mlx.ones((3, 2), getattr(mlx, dtype))))
    assert g == w


def test_matmul_type_errors():
    for bad in (2.0, [[1.0]], np.ones((2, 2))):
        with pytest.raises(TypeError, match="incompatible function arguments"):
            mx.matmul(mx.ones((2, 2)), bad)
        with pytest.raises(TypeError, match="incompatible function arguments"):
            mx.ones((2, 2)) @ bad


def test_matmul_stream_and_imatmul():
    a = mx.ones((2, 2))
    assert np.all(np.array(mx.matmul(a, a, stream=mx.cpu)) == 2)
    b = a
    a @= mx.ones((2, 2))
    assert np.all(np.array(a) == 2) and np.all(np.array(b) == 2)


# -- addmm ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sc,sa,sb,alpha,beta", [
    ((2, 4), (2, 3), (3, 4), 2.0, 0.5), ((4,), (2, 3), (3, 4), 1.0, 1.0),
    ((4,), (3,), (3, 4), -1.5, 2.0), ((), (3,), (3,), 1.0, 1.0), ((3, 1, 5), (3, 4, 2), (2, 5),
                                                                    0.5, -1.0),
    ((2, 4), (2, 0), (0, 4), 1.0, 2.0), ((2, 4), (2, 3), (3, 4), 3.0, 0.0),
])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_addmm_vs_mlx(sc, sa, sb, alpha, beta, dtype):
    xc, xa, xb = data(sc), data(sa), data(sb)
    got = mx.addmm(ours(xc, dtype), ours(xa, dtype), ours(xb, dtype), alpha, beta)
    want = mlx.addmm(theirs(xc, dtype), theirs(xa, dtype), theirs(xb, dtype), alpha, beta)
    assert got.shape == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    ref = alpha * (ref_inputs(xa, dtype) @ ref_inputs(xb, dtype)) + beta * ref_inputs(xc, dtype)
    close(got, ref, dtype, max(sa[-1], 1))


def test_addmm_complex_accepted_as_mlx():
    got = mx.addmm(mx.ones((2, 4)), mx.ones((2, 3), mx.complex64) * (1 + 1j), mx.ones((3, 4)),
                   2.0, 0.5)
    assert got.dtype == mx.complex64
    assert np.allclose(np.array(got), 6.5 + 6j)


def test_addmm_beta_zero_ignores_nan_and_keywords():
    c = mx.full((2, 4), float("nan"))
    got = mx.addmm(c, mx.ones((2, 3)), mx.ones((3, 4)), beta=0.0, alpha=2)
    assert np.all(np.array(got) == 6)


@pytest.mark.parametrize("case", [
    lambda m: m.addmm(m.ones((1,)), m.ones((3,)), m.ones((3,))),
    lambda m: m.addmm(m.ones((3, 4)), m.ones((2, 3)), m.ones((3, 4))),
    lambda m: m.addmm(m.ones((5, 2, 4)), m.ones((2, 3)), m.ones((3, 4))),
    lambda m: m.addmm(m.ones((2, 4)), m.array(1.0), m.ones((3, 4))),
    lambda m: m.addmm(m.ones((2, 4)), m.ones((2, 3)), m.ones((2, 4))),
    lambda m: m.addmm(m.ones((2, 4), m.int32), m.ones((2, 3), m.int32), m.ones((3, 4), m.int32)),
    lambda m: m.addmm(1.0, m.ones((2, 3)), m.ones((3, 4))),
])
def test_addmm_errors(case):
    g, w = _err(lambda: case(mx), lambda: case(mlx))
    if not w.startswith("addmm(): incompatible"):
        assert g == w


# -- inner, outer, tensordot, vecdot -------------------------------------------------------------


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (4, 3)), ((), (4, 3)), ((), ()),
                                   ((2, 5, 3), (3,)), ((0, 3), (2, 3))])
def test_inner(sa, sb):
    xa, xb = data(sa), data(sb)
    got = mx.inner(ours(xa, "float32"), ours(xb, "float32"))
    want = mlx.inner(theirs(xa, "float32"), theirs(xb, "float32"))
    assert got.shape == tuple(want.shape)
    close(got, np.inner(xa, xb), "float32", 3)


def test_inner_errors():
    g, w = _err(lambda: mx.inner(mx.ones((2, 3)), mx.ones((4, 2))),
                lambda: mlx.inner(mlx.ones((2, 3)), mlx.ones((4, 2))))
    assert g == w
    g, w = _err(lambda: mx.inner(mx.ones((3,), mx.int32), mx.ones((3,), mx.int32)),
                lambda: mlx.inner(mlx.ones((3,), mlx.int32), mlx.ones((3,), mlx.int32)))
    assert g == w


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("int32", "int32"), ("bool", "bool"),
                                   ("int32", "float16")])
@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (4,)), ((), (4,)), ((0,), (3,))])
def test_outer(sa, sb, da, db):
    xa = (rng.integers(0, 3, sa) if da != "float32" else data(sa))
    xb = (rng.integers(0, 3, sb) if db != "float32" else data(sb))
    got = mx.outer(mx.array(xa).astype(_dt(mx, da)), mx.array(xb).astype(_dt(mx, db)))
    want = mlx.outer(mlx.array(xa).astype(_dt(mlx, da)), mlx.array(xb).astype(_dt(mlx, db)))
    assert got.shape == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.array(got.astype(mx.float32)),
                               np.array(want.astype(mlx.float32)), rtol=1e-3)


@pytest.mark.parametrize("sa,sb,axes", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 5), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), [[1, 2], [1, 0]]), ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
    ((2, 3, 4), (4, 3, 5), [[-1], [0]]), ((3, 4), (3, 4), 2), ((2, 0, 3), (0, 3, 4), 2),
])
def test_tensordot(sa, sb, axes):
    xa, xb = data(sa), data(sb)
    got = mx.tensordot(ours(xa, "float32"), ours(xb, "float32"), axes)
    want = mlx.tensordot(theirs(xa, "float32"), theirs(xb, "float32"), axes)
    assert got.shape == tuple(want.shape)
    close(got, np.tensordot(xa, xb, axes), "float32", 12)


@pytest.mark.parametrize("axes", [[[1], [0]], 4, -1, [[1, 2], [1]], [2, 0]])
def test_tensordot_errors(axes):
    g, w = _err(lambda: mx.tensordot(mx.ones((2, 3, 4)), mx.ones((4, 3, 5)), axes),
                lambda: mlx.tensordot(mlx.ones((2, 3, 4)), mlx.ones((4, 3, 5)), axes))
    if not w.startswith("tensordot(): incompatible"):
        assert g == w


def test_tensordot_out_of_range_axis():
    with pytest.raises(IndexError):
        mx.tensordot(mx.ones((2, 3, 4)), mx.ones((4, 3, 5)), [[5], [0]])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "complex64",
                                   "int8", "uint8", "int16", "int32", "uint32", "int64",
                                   "uint64", "bool"])
def test_vecdot_dtypes(dtype):
    if dtype in FLOATS:
        xa, xb = data((4, 33), dtype), data((4, 33), dtype)
        a, b = ours(xa, dtype), ours(xb, dtype)
        ma, mb = theirs(xa, dtype), theirs(xb, dtype)
        ref = np.sum(np.conj(ref_inputs(xa, dtype)) * ref_inputs(xb, dtype), -1)
    else:
        xa = rng.integers(0, 2 if dtype == "bool" else 100, (4, 33))
        xb = rng.integers(0, 2 if dtype == "bool" else 100, (4, 33))
        a, b = mx.array(xa).astype(_dt(mx, dtype)), mx.array(xb).astype(_dt(mx, dtype))
        ma = mlx.array(xa).astype(_dt(mlx, dtype))
        mb = mlx.array(xb).astype(_dt(mlx, dtype))
    got = mx.vecdot(a, b)
    want = mlx.vecdot(ma, mb)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    assert got.shape == tuple(want.shape)
    if dtype in FLOATS:
        close(got, ref, dtype, 33)
    else:
        np.testing.assert_array_equal(np.array(got), np.array(want))


@pytest.mark.parametrize("sa,sb,axis", [((2, 3), (1, 3), -1), ((1, 3), (2, 3), -1),
                                        ((3, 2), (3, 2), 0), ((2, 0), (2, 0), -1),
                                        ((2, 3, 4), (2, 3, 4), 1)])
def test_vecdot_shapes(sa, sb, axis):
    xa, xb = data(sa), data(sb)
    got = mx.vecdot(ours(xa, "float32"), ours(xb, "float32"), axis=axis)
    want = mlx.vecdot(theirs(xa, "float32"), theirs(xb, "float32"), axis=axis)
    assert got.shape == tuple(want.shape)
    close(got, np.sum(xa * xb, axis), "float32", 4)


@pytest.mark.parametrize("sa,sb,axis", [((3,), (2, 3), -1), ((2, 3), (2, 4), -1),
                                        ((2, 3), (2, 3), 2), ((2, 3), (2, 3), -3),
                                        ((), (), -1)])
def test_vecdot_errors(sa, sb, axis):
    g, w = _err(lambda: mx.vecdot(mx.ones(sa), mx.ones(sb), axis=axis),
                lambda: mlx.vecdot(mlx.ones(sa), mlx.ones(sb), axis=axis))
    assert g == w


# -- einsum --------------------------------------------------------------------------------------


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ba", [(2, 3)]),
    ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->i", [(2, 3)]), ("i,i->i", [(3,), (3,)]),
    ("i,i->", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("bij,bjk->bik", [(4, 2, 3), (4, 3, 5)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]), ("ij, jk -> ik", [(2, 3), (3, 4)]),
    ("iJ,Jk->ik", [(2, 3), (3, 4)]), (",ij->ij", [(), (3, 4)]), ("iij->j", [(3, 3, 4)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]), ("i...->...", [(3, 2, 4)]),
    ("ij,kl->", [(2, 3), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    # paths where MLX's greedy differs from numpy's: outer products, memory limit, no sums
    ("a,b,c,d,e->abcde", [(2,), (3,), (2,), (3,), (2,)]), ("i,j,k->ijk", [(4,), (3,), (2,)]),
    ("ia,ib,ic,id->abcd", [(5, 2), (5, 3), (5, 4), (5, 2)]), ("ij,k,l->ijkl", [(2, 3), (4,), (5,)]),
    ("ea,fb,abcd,gc,hd->efgh", [(3, 2), (4, 3), (2, 3, 4, 5), (2, 4), (3, 5)]),
    ("ij,jk,ki->", [(3, 4), (4, 5), (5, 3)]), ("...a,...a->...", [(2, 3, 4), (4,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum_vs_mlx(eq, shapes):
    xs = [data(s) for s in shapes]
    got = mx.einsum(eq, *[ours(x, "float32") for x in xs])
    want = mlx.einsum(eq, *[theirs(x, "float32") for x in xs])
    assert got.shape == tuple(want.shape)
    assert got.dtype == mx.float32
    close(got, np.einsum(eq.replace(" ", ""), *xs), "float32", 60)
    path, text = mx.einsum_path(eq, *[ours(x, "float32") for x in xs])
    wpath, wtext = mlx.einsum_path(eq, *[theirs(x, "float32") for x in xs])
    assert path == list(wpath)
    assert text == wtext


def test_einsum_random_equations_vs_mlx():
    """Random equations (1-5 operands, repeats, sums, outer products): MLX's path, its text
    and its values."""
    r = np.random.default_rng(5)
    for _ in range(40):
        sizes = {c: int(r.integers(1, 5)) for c in "abcde"}
        ins = ["".join(r.choice(list("abcde"), int(r.integers(0, 4))))
               for _ in range(int(r.integers(1, 6)))]
        out = [c for c in sorted(set("".join(ins))) if r.random() < 0.4]
        r.shuffle(out)
        eq = ",".join(ins) + "->" + "".join(out)
        xs = [r.standard_normal([sizes[c] for c in p]).astype(np.float32) for p in ins]
        got = mx.einsum_path(eq, *[mx.array(x) for x in xs])
        want = mlx.einsum_path(eq, *[mlx.array(x) for x in xs])
        assert got[0] == [tuple(p) for p in want[0]], eq
        assert got[1] == want[1], eq
        np.testing.assert_allclose(np.array(mx.einsum(eq, *[mx.array(x) for x in xs])),
                                   np.array(mlx.einsum(eq, *[mlx.array(x) for x in xs])),
                                   rtol=1e-3, atol=1e-3, err_msg=eq)


def test_einsum_integers_as_mlx():
    a = mx.ones((2, 3), mx.int32)
    assert mx.einsum("ij->i", a).tolist() == [3, 3]
    assert mx.einsum("ij->i", a).dtype == mx.int32
    assert mx.einsum("i,i->i", mx.ones((3,), mx.int32), mx.ones((3,), mx.int32)).tolist() == \
        [1, 1, 1]
    g, w = _err(lambda: mx.einsum("ij,jk->ik", a, mx.ones((3, 4), mx.int32)),
                lambda: mlx.einsum("ij,jk->ik", mlx.ones((2, 3), mlx.int32),
                                   mlx.ones((3, 4), mlx.int32)))
    assert g == w


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (4, 4)]), ("ij,jk->ik", [(2, 3)]), ("i1->i", [(2, 3)]),
    ("ij->ii", [(2, 3)]), ("ijk,jk->ik", [(2, 3), (3, 4)]), ("...i...->i", [(2, 3)]),
    ("...ijk->i", [(2, 3)]), ("ii->i", [(3, 4)]),
])
def test_einsum_errors(eq, shapes):
    g, w = _err(lambda: mx.einsum(eq, *[mx.ones(s) for s in shapes]),
                lambda: mlx.einsum(eq, *[mlx.ones(s) for s in shapes]))
    assert g == w


def test_einsum_bad_operands_as_mlx():
    with pytest.raises(RuntimeError, match="bad_cast"):
        mx.einsum("ij->i", np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[einsum\] At least one operand is required."):
        mx.einsum("->")
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.addmm(mx.ones((2, 2)), mx.ones((2, 2)), mx.ones((2, 2)), alpha="a")


@pytest.mark.parametrize("eq,shapes,dtype", [("i,j->", [(2,), (3,)], "int32"),
                                              ("ij->i", [(2, 3)], "int8"),
                                              ("i,i->i", [(3,), (3,)], "bool_"),
                                              ("i->", [(4,)], "uint8")])
def test_einsum_integer_sums_vs_mlx(eq, shapes, dtype):
    xs = [rng.integers(0, 2 if dtype == "bool_" else 50, s) for s in shapes]
    got = mx.einsum(eq, *[mx.array(x).astype(getattr(mx, dtype)) for x in xs])
    want = mlx.einsum(eq, *[mlx.array(x).astype(getattr(mlx, dtype)) for x in xs])
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(np.array(got), np.array(want))


def test_einsum_output_letter_missing():
    with pytest.raises(ValueError, match="does not appear"):
        mx.einsum("ij->k", mx.ones((2, 3)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "complex64"])
def test_einsum_dtypes(dtype):
    xa, xb = data((3, 4), dtype), data((4, 5), dtype)
    got = mx.einsum("ij,jk->ik", ours(xa, dtype), ours(xb, dtype))
    assert got.dtype == getattr(mx, dtype)
    close(got, ref_inputs(xa, dtype) @ ref_inputs(xb, dtype), dtype, 4)


def test_addmm_jvp_scales_tangents():
    # MLX 0.32.4 drops alpha and beta from addmm's tangent; checked against the formula.
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 1), (4, 5), (5, 1)))
    tc, ta, tb = (rng.standard_normal(s).astype(np.float32) for s in ((4, 1), (4, 5), (5, 1)))
    _, (t,) = mx.jvp(lambda c, a, b: mx.addmm(c, a, b, 2.0, 3.0),
                     [mx.array(v) for v in (c, a, b)], [mx.array(v) for v in (tc, ta, tb)])
    np.testing.assert_allclose(np.array(t), 2.0 * (ta @ b + a @ tb) + 3.0 * tc, rtol=1e-5,
                               atol=1e-5)


class _Float:
    def __float__(self) -> float:
        return 0.5


@pytest.mark.parametrize("alpha", [
    lambda m: 2, lambda m: True, lambda m: np.float32(0.25), lambda m: np.array(1.5),
    lambda m: m.array(0.5), lambda m: m.array([0.5]), lambda m: _Float(),
    lambda m: np.array([0.5]), lambda m: None, lambda m: "1", lambda m: 1j,
    lambda m: m.array([1.0, 2.0])])
def test_addmm_scale_conversions_like_nanobind(alpha):
    # nanobind's float: anything float() takes but strings and numpy arrays with dimensions,
    # converted before addmm's own checks (so an int c still gets the TypeError)
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (2, 4), (4, 3)))
    got = []
    for m in (mx, mlx):
        try:
            out = m.addmm(m.array(c), m.array(a), m.array(b), alpha(m), beta=alpha(m))
            got.append(np.array(out))
        except Exception as e:  # noqa: BLE001 - the exception is the result
            got.append((type(e), str(e)))
        try:
            m.addmm(m.array(c).astype(m.int32), m.array(a), m.array(b), alpha(m))
            got.append(None)
        except Exception as e:  # noqa: BLE001 - the exception is the result
            got.append(type(e))
    assert got[1] == got[3]
    if isinstance(got[2], tuple):
        assert got[0] == got[2]
    else:
        np.testing.assert_allclose(got[0], got[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axes", [
    lambda m: np.int64(1), lambda m: m.array(1), lambda m: True, lambda m: 1.0,
    lambda m: ([1], [0]), lambda m: [range(1, 2), range(0, 1)], lambda m: None,
    lambda m: np.array([[1], [0]]), lambda m: m.array([[1], [0]]), lambda m: "ab",
    lambda m: [[1], ["a"]], lambda m: [[1]], lambda m: [[1], [0], [1]], lambda m: [],
    lambda m: (1, 0)], ids=range(15))
def test_tensordot_axes_conversions_like_nanobind(axes):
    # an int via __index__, or any sequence of int sequences; not two lists: a ValueError
    a, b = data((3, 4)), data((4, 3))
    got = []
    for m in (mx, mlx):
        try:
            got.append(np.array(m.tensordot(m.array(a.astype(np.float32)),
                                            m.array(b.astype(np.float32)), axes=axes(m))))
        except Exception as e:  # noqa: BLE001 - the exception is the result
            got.append((type(e), str(e).split("\n")[0]))
    if isinstance(got[1], tuple):
        assert got[0] == got[1]
    else:
        np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [np.int64(0), np.array(0), True, 1.5, None, "0"], ids=str)
def test_vecdot_axis_conversions_like_nanobind(axis):
    # the axis is converted before vecdot's own checks (a 0-d operand still gets the TypeError)
    got = []
    for m in (mx, mlx):
        for x in (m.ones((3, 2)), m.array(1.0)):
            try:
                got.append(np.array(m.vecdot(x, x, axis=axis)))
            except Exception as e:  # noqa: BLE001 - the exception is the result
                got.append((type(e), str(e).split("\n")[0]))
    for o, r in zip(got[:2], got[2:]):
        if isinstance(r, tuple):
            assert o == r
        else:
            np.testing.assert_allclose(o, r)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex64"])
def test_rows_do_not_depend_on_the_batch(dtype):
    """A row of a product is the same whether it is computed alone, in a chunk or with the rest
    of the batch (MLX's CPU gives this; numpy's float32 BLAS does not at this K), so a prompt
    run in chunks through a KV cache gives the logits of the prompt run whole."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((9, 2048)).astype(np.float32)
    b = rng.standard_normal((2048, 33)).astype(np.float32)
    if dtype == "complex64":
        a = a + 1j * rng.standard_normal(a.shape).astype(np.float32)
    xa, xb = mx.array(a).astype(getattr(mx, dtype)), mx.array(b).astype(getattr(mx, dtype))
    whole = np.array((xa @ xb).astype(mx.complex64 if dtype == "complex64" else mx.float32))
    for lo, hi in [(0, 1), (3, 5), (8, 9), (1, 9)]:
        part = (xa[lo:hi] @ xb).astype(mx.complex64 if dtype == "complex64" else mx.float32)
        np.testing.assert_array_equal(np.array(part), whole[lo:hi])
    col = (xa @ xb[:, 4:5]).astype(mx.complex64 if dtype == "complex64" else mx.float32)
    np.testing.assert_array_equal(np.array(col), whole[:, 4:5])
    batched = (mx.stack([xa[2:4], xa[5:7]]) @ xb).astype(
        mx.complex64 if dtype == "complex64" else mx.float32)
    np.testing.assert_array_equal(np.array(batched[1]), whole[5:7])
    np.testing.assert_allclose(whole, a.astype(np.complex128 if dtype == "complex64" else
                                               np.float64) @ b, rtol=2e-2 if dtype == "bfloat16"
                               else 1e-4, atol=0.5 if dtype == "bfloat16" else 1e-2)


def test_attention_and_quantized_rows_do_not_depend_on_the_batch():
    """The same for the host's quantized_matmul and attention: queries computed in chunks with
    the keys so far equal the queries computed together."""
    rng = np.random.default_rng(8)
    x = mx.array(rng.standard_normal((6, 512)).astype(np.float32))
    w = mx.array(rng.standard_normal((40, 512)).astype(np.float32))
    wq, s, bq = mx.quantize(w, group_size=64, bits=4)
    whole = np.array(mx.quantized_matmul(x, wq, s, bq, group_size=64, bits=4))
    part = np.array(mx.quantized_matmul(x[4:5], wq, s, bq, group_size=64, bits=4))
    np.testing.assert_array_equal(part, whole[4:5])
    q = mx.array(rng.standard_normal((1, 4, 6, 64)).astype(np.float32))
    k = mx.array(rng.standard_normal((1, 2, 6, 64)).astype(np.float32))
    v = mx.array(rng.standard_normal((1, 2, 6, 64)).astype(np.float32))
    full = np.array(mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal"))
    last = np.array(mx.fast.scaled_dot_product_attention(q[:, :, 3:], k, v, scale=0.125,
                                                         mask="causal"))
    np.testing.assert_array_equal(last, full[:, :, 3:])
