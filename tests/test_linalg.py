"""mx.linalg on the CPU, differential against real MLX 0.32.4 (numpy float64 as value oracle)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx.core import linalg as la

mlx = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(7)
CPU = mx.cpu


def _np(x):
    return np.array(x)


def _ours(name, *args, **kw):
    args = [mx.array(a) if isinstance(a, np.ndarray) else a for a in args]
    return getattr(mx.linalg, name)(*args, stream=mx.cpu, **kw)


def _theirs(name, *args, **kw):
    args = [mlx.array(a) if isinstance(a, np.ndarray) else a for a in args]
    return getattr(mlx.linalg, name)(*args, stream=mlx.cpu, **kw)


def _outs(r):
    return [_np(x) for x in r] if isinstance(r, (tuple, list)) else [_np(r)]


def _dname(x):
    return str(x.dtype).split(".")[-1]


def _same_error(name, *args, **kw):
    """Both raise the same exception class and message."""
    with pytest.raises(Exception) as theirs:
        r = _theirs(name, *args, **kw)
        mlx.eval(r)
    with pytest.raises(Exception) as ours:
        r = _ours(name, *args, **kw)
        mx.eval(r)
    assert type(theirs.value).__name__ == type(ours.value).__name__ or (
        isinstance(ours.value, type(theirs.value))), (theirs.value, ours.value)
    assert str(ours.value) == str(theirs.value)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float32)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------ norm

NORM_CASES = [
    ((7,), None, None), ((7,), 0, None), ((7,), 1, None), ((7,), 2, None), ((7,), 3, None),
    ((7,), -1, None), ((7,), 0.5, None), ((7,), math.inf, None), ((7,), -math.inf, None),
    ((3, 5), None, None), ((3, 5), "fro", None), ((3, 5), "nuc", None), ((3, 5), 1, None),
    ((3, 5), -1, None), ((3, 5), 2, None), ((3, 5), -2, None), ((3, 5), math.inf, None),
    ((3, 5), -math.inf, None), ((3, 5), None, 0), ((3, 5), 1, 1), ((3, 5), 3, -1),
    ((2, 3, 4), None, None), ((2, 3, 4), None, (1, 2)), ((2, 3, 4), 1, (2, 0)),
    ((2, 3, 4), -1, (0, 2)), ((2, 3, 4), math.inf, (2, 1)), ((2, 3, 4), -math.inf, (0, 1)),
    ((2, 3, 4), "fro", (0, 2)), ((2, 3, 4), "nuc", (2, 1)), ((2, 3, 4), 2, (0, 2)),
    ((2, 3, 4), -2, (1, 0)), ((2, 3, 4), 0, 1), ((), None, None), ((0,), None, None),
    ((0, 3), None, 1),
    # negative axes are normalized before the 1/inf matrix norms pick the axis to reduce last
    ((2, 3, 5), 1, (-1, -2)), ((2, 3, 5), -1, (-1, 1)), ((2, 3, 5), math.inf, (-2, -1)),
    ((2, 3, 5), -math.inf, (1, -1)), ((2, 3, 5), math.inf, (-3, -2)), ((2, 3, 5), 1, (-2, 2)),
]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,ord,axis", NORM_CASES)
def test_norm_matches_mlx(shape, ord, axis, keepdims):
    x = _rand(*shape) if shape else np.float32(RNG.standard_normal())
    x = np.asarray(x, np.float32)
    ax = list(axis) if isinstance(axis, tuple) else axis
    ours = mx.linalg.norm(mx.array(x), ord, ax, keepdims, stream=mx.cpu)
    theirs = mlx.linalg.norm(mlx.array(x), ord, ax, keepdims, stream=mlx.cpu)
    assert ours.shape == tuple(theirs.shape)
    assert _dname(ours) == _dname(theirs)
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool_", "float16", "bfloat16", "float64",
                                   "complex64"])
@pytest.mark.parametrize("ord", [None, 0, 1, 2, math.inf, 3])
def test_norm_dtypes(dtype, ord):
    x = (RNG.standard_normal((4, 5)) * 3).astype(np.float32)
    if dtype == "uint8":
        x = np.abs(x)
    ours = mx.linalg.norm(mx.array(x).astype(getattr(mx, dtype)), ord, 1, stream=mx.cpu)
    theirs = mlx.linalg.norm(mlx.array(x).astype(getattr(mlx, dtype)), ord, 1, stream=mlx.cpu)
    assert _dname(ours) == _dname(theirs)
    tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-5
    np.testing.assert_allclose(_np(ours.astype(mx.float32) if dtype != "complex64" else ours),
                               _np(theirs.astype(mlx.float32) if dtype != "complex64"
                                   else theirs), rtol=tol, atol=tol)


def test_norm_noncontiguous_and_matrix_norm_alias():
    x = _rand(6, 8)[::2, 1::3]
    ours = mx.linalg.norm(mx.array(_rand(6, 8)).T, 1, stream=mx.cpu)
    assert ours.shape == ()
    np.testing.assert_allclose(_np(mx.linalg.norm(mx.array(x), stream=mx.cpu)),
                               np.linalg.norm(x), rtol=1e-5)
    assert mx.matrix_norm is mx.linalg.norm


@pytest.mark.parametrize("shape,ord,axis", [
    ((), 1, None), ((2, 3, 4), 2, None), ((2, 3, 4), "fro", None), ((2, 3), 3, None),
    ((2, 3), "abc", None), ((2, 3), 0.5, [0, 1]), ((2, 3), None, [0, 1, 1]),
    ((2, 3), None, 5), ((2, 3), 2, 5), ((2, 3), "nuc", [0]),
])
def test_norm_errors(shape, ord, axis):
    x = np.ones(shape, np.float32)
    with pytest.raises(Exception) as theirs:
        mlx.linalg.norm(mlx.array(x), ord, axis)
    with pytest.raises(type(theirs.value)) as ours:
        mx.linalg.norm(mx.array(x), ord, axis)
    assert str(ours.value) == str(theirs.value)


def test_norm_type_errors():
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.linalg.norm([1.0, 2.0])
    with pytest.raises(TypeError):
        mx.linalg.cross([1, 2, 3], [4, 5, 6])
    with pytest.raises(TypeError):
        mx.linalg.eigh(mx.eye(3), UPLO=3, stream=mx.cpu)


ARGUMENT_MISTAKES = {
    # nanobind's bool takes only True/False
    "svd_uv_int": lambda m, A: m.linalg.svd(A, compute_uv=0, stream=m.cpu),
    "svd_uv_npbool": lambda m, A: m.linalg.svd(A, compute_uv=np.bool_(True), stream=m.cpu),
    "cholesky_upper_int": lambda m, A: m.linalg.cholesky(A, upper=1, stream=m.cpu),
    "cholesky_upper_none": lambda m, A: m.linalg.cholesky(A, None, stream=m.cpu),
    "tri_inv_upper_int": lambda m, A: m.linalg.tri_inv(A, upper=0, stream=m.cpu),
    "cholesky_inv_upper_int": lambda m, A: m.linalg.cholesky_inv(A, upper=0, stream=m.cpu),
    "solve_tri_upper_int": lambda m, A: m.linalg.solve_triangular(A, A, upper=1, stream=m.cpu),
    "norm_keepdims_int": lambda m, A: m.linalg.norm(A, keepdims=1),
    "cross_axis_float": lambda m, A: m.linalg.cross(A, A, axis=1.0),
    # positional arguments where MLX's are keyword-only
    "qr_positional_stream": lambda m, A: m.linalg.qr(A, m.cpu),
    "eigh_positional_stream": lambda m, A: m.linalg.eigh(A, "U", m.cpu),
    "svd_positional_stream": lambda m, A: m.linalg.svd(A, True, m.cpu),
    "solve_tri_positional_upper": lambda m, A: m.linalg.solve_triangular(A, A, True,
                                                                         stream=m.cpu),
    "norm_five_positional": lambda m, A: m.linalg.norm(A, 2, None, False, m.cpu),
    # the whole call's types, keywords included
    "inv_list": lambda m, A: m.linalg.inv([[1.0, 0.0], [0.0, 1.0]], stream=m.cpu),
    "inv_numpy": lambda m, A: m.linalg.inv(np.eye(2), stream=m.cpu),
    "inv_stream_str": lambda m, A: m.linalg.inv(A, stream="cpu"),
    "norm_stream_str": lambda m, A: m.linalg.norm(A, stream="cpu"),
}


@pytest.mark.parametrize("case", list(ARGUMENT_MISTAKES))
def test_argument_mistakes_raise_nanobinds_text(case):
    call = ARGUMENT_MISTAKES[case]
    with pytest.raises(TypeError) as theirs:
        call(mlx, mlx.eye(2))
    with pytest.raises(TypeError) as ours:
        call(mx, mx.eye(2))
    assert str(ours.value) == str(theirs.value)


def test_accepted_argument_kinds_match_mlx():
    A = mx.eye(2)
    assert mx.linalg.norm(A, ord=True).item() == 1.0  # a bool ord is the int 1
    assert mx.linalg.norm(A, ord=np.int64(1), axis=np.int64(0)).shape == (2,)
    assert mx.linalg.qr(A, stream=0)[0].shape == (2, 2)  # nanobind's int -> DeviceType.cpu
    assert mx.linalg.cross(mx.ones(3), mx.ones(3), axis=np.int64(0)).shape == (3,)
    # the *_extra that collects mistaken positional arguments stays out of the signature
    import inspect
    assert str(inspect.signature(mx.linalg.qr)) == "(a: 'array', *, stream: 'Any' = None) -> " \
        "'tuple[array, array]'"


# ---------------------------------------------------------------------------------- cross

@pytest.mark.parametrize("sa,sb,axis", [((3,), (3,), -1), ((2,), (3,), -1), ((3,), (2,), 0),
                                        ((2,), (2,), -1), ((4, 3), (1, 3), -1),
                                        ((3, 5), (3, 1), 0), ((2, 3, 2), (3, 2), -2)])
def test_cross(sa, sb, axis):
    a, b = _rand(*sa), _rand(*sb)
    ours = mx.linalg.cross(mx.array(a), mx.array(b), axis)
    theirs = mlx.linalg.cross(mlx.array(a), mlx.array(b), axis)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-5, atol=1e-6)


def test_cross_int_and_errors():
    r = mx.linalg.cross(mx.array([1, 2, 3]), mx.array([4, 5, 6]))
    assert r.dtype == mx.int32 and r.tolist() == [-3, 6, -3]
    for args in [(np.ones(4, np.float32), np.ones(3, np.float32)),
                 (np.ones(3, np.float32), np.ones(3, np.float32), 2)]:
        with pytest.raises(Exception) as theirs:
            mlx.linalg.cross(mlx.array(args[0]), mlx.array(args[1]), *args[2:])
        with pytest.raises(type(theirs.value)) as ours:
            mx.linalg.cross(mx.array(args[0]), mx.array(args[1]), *args[2:])
        assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------------ factorizations

@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4), (1, 1)])
def test_qr(shape):
    a = _rand(*shape)
    q, r = _outs(_ours("qr", a))
    tq, tr = _outs(_theirs("qr", a))
    assert q.shape == tq.shape and r.shape == tr.shape and q.dtype == tq.dtype
    np.testing.assert_allclose(q @ r, a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.abs(r), np.abs(tr), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(r, np.triu(r))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4)])
def test_svd(shape):
    a = _rand(*shape)
    u, s, vt = _outs(_ours("svd", a))
    tu, ts, tvt = _outs(_theirs("svd", a))
    assert (u.shape, s.shape, vt.shape) == (tu.shape, ts.shape, tvt.shape)
    np.testing.assert_allclose(s, ts, rtol=1e-4, atol=1e-5)
    k = min(shape[-2:])
    rec = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
    np.testing.assert_allclose(rec, a, rtol=1e-4, atol=1e-4)
    s_only = _ours("svd", a, compute_uv=False)
    np.testing.assert_allclose(_np(s_only), ts, rtol=1e-4, atol=1e-5)


def test_svd_complex_and_float64():
    a = (_rand(3, 3) + 1j * _rand(3, 3)).astype(np.complex64)
    u, s, vt = _outs(_ours("svd", a))
    assert u.dtype == np.complex64 and s.dtype == np.float32
    np.testing.assert_allclose((u * s) @ vt, a, rtol=1e-4, atol=1e-4)
    r = mx.linalg.svd(mx.array(_rand(3, 4)).astype(mx.float64), stream=mx.cpu)
    assert [x.dtype for x in r] == [mx.float64] * 3


def test_inv_tri_inv():
    a = _rand(2, 5, 5) + 5 * np.eye(5, dtype=np.float32)
    np.testing.assert_allclose(_np(_ours("inv", a)), _np(_theirs("inv", a)), rtol=1e-4,
                               atol=1e-5)
    for upper in (False, True):
        ours = _np(_ours("tri_inv", a, upper=upper))
        theirs = _np(_theirs("tri_inv", a, upper=upper))
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        assert np.all((np.triu(ours, 1) if not upper else np.tril(ours, -1)) == 0)
    assert mx.linalg.inv(mx.array(a).astype(mx.float64), stream=mx.cpu).dtype == mx.float64


def test_cholesky_family():
    a = _spd(5, (3,))
    for upper in (False, True):
        ours = _np(_ours("cholesky", a, upper=upper))
        np.testing.assert_allclose(ours, _np(_theirs("cholesky", a, upper=upper)), rtol=1e-4,
                                   atol=1e-5)
        ci = _np(_ours("cholesky_inv", ours, upper=upper))
        np.testing.assert_allclose(ci, np.linalg.inv(a.astype(np.float64)), rtol=1e-3,
                                   atol=1e-4)
    # Only the lower triangle is read, as MLX's potrf call.
    junk = np.triu(_rand(5, 5), 1)
    np.testing.assert_allclose(_np(_ours("cholesky", a[0] + junk)),
                               _np(_theirs("cholesky", a[0] + junk)), rtol=1e-4, atol=1e-5)


def test_cholesky_not_positive_definite_returns_partial_factor():
    for a in (-np.eye(3, dtype=np.float32), np.array([[1, 2], [2, 1]], np.float32)):
        np.testing.assert_array_equal(_np(_ours("cholesky", a)), _np(_theirs("cholesky", a)))


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (5, 5), (2, 3, 4)])
def test_pinv(shape):
    a = _rand(*shape)
    np.testing.assert_allclose(_np(_ours("pinv", a)), _np(_theirs("pinv", a)), rtol=1e-3,
                               atol=1e-4)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    a = _spd(5, (2,)) - 6 * np.eye(5, dtype=np.float32)
    tri = np.tril(a) if uplo == "L" else np.triu(a)  # only that triangle is read
    w, v = _outs(_ours("eigh", tri, UPLO=uplo))
    tw, tv = _outs(_theirs("eigh", tri, UPLO=uplo))
    np.testing.assert_allclose(w, tw, rtol=1e-4, atol=1e-4)
    # Eigenvectors are unique up to sign.
    sgn = np.sign(np.sum(v * tv, axis=-2, keepdims=True))
    np.testing.assert_allclose(v * sgn, tv, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(_np(_ours("eigvalsh", tri, UPLO=uplo)), tw, rtol=1e-4, atol=1e-4)


def test_eigh_complex():
    b = _rand(4, 4) + 1j * _rand(4, 4)
    h = (b + b.conj().T).astype(np.complex64)
    w, v = _ours("eigh", h)
    assert w.dtype == mx.float32 and v.dtype == mx.complex64
    np.testing.assert_allclose(_np(w), _np(_theirs("eigvalsh", h)), rtol=1e-4, atol=1e-4)


def test_eig():
    a = _rand(3, 5, 5)
    w, v = _outs(_ours("eig", a))
    tw, tv = _outs(_theirs("eig", a))
    assert w.dtype == tw.dtype == np.complex64 and v.shape == tv.shape
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(tw), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=1e-5)
    np.testing.assert_allclose(np.sort_complex(_np(_ours("eigvals", a))), np.sort_complex(tw),
                               rtol=1e-4, atol=1e-4)
    assert mx.linalg.eigvals(mx.array(a).astype(mx.float64), stream=mx.cpu).dtype == mx.complex64


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4), (6, 6)])
def test_lu_matches_mlx(shape):
    a = _rand(*shape)
    p, l, u = _outs(_ours("lu", a))
    tp, tl, tu = _outs(_theirs("lu", a))
    np.testing.assert_array_equal(p, tp)
    assert p.dtype == np.uint32
    np.testing.assert_allclose(l, tl, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(u, tu, rtol=1e-4, atol=1e-5)
    lu, piv = _outs(_ours("lu_factor", a))
    tlu, tpiv = _outs(_theirs("lu_factor", a))
    np.testing.assert_array_equal(piv, tpiv)
    np.testing.assert_allclose(lu, tlu, rtol=1e-4, atol=1e-5)
    rec = np.take_along_axis(l, p[..., None].astype(np.int64), axis=-2) @ u
    np.testing.assert_allclose(rec, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("a", [np.arange(16, dtype=np.float32).reshape(4, 4),
                               np.ones((4, 4), np.float32), np.zeros((3, 5), np.float32),
                               np.eye(5, dtype=np.float32)[::-1].copy(),
                               RNG.integers(-2, 3, (2, 5, 3)).astype(np.float32)])
def test_lu_ties_and_singular_match_mlx(a):
    """Pivot choice on ties (the first largest, as idamax) and zero columns."""
    for fn in ("lu", "lu_factor"):
        for x, y in zip(_outs(_ours(fn, a)), _outs(_theirs(fn, a))):
            np.testing.assert_allclose(x, y, atol=1e-5)
    if a.shape[-1] == a.shape[-2]:
        np.testing.assert_allclose(_np(_ours("det", a)), _np(_theirs("det", a)), atol=1e-4)


@pytest.mark.parametrize("sa,sb", [((4, 4), (4,)), ((4, 4), (4, 3)), ((2, 4, 4), (2, 4, 3)),
                                   ((5, 5), (5, 1))])
def test_solve(sa, sb):
    a = _rand(*sa) + 4 * np.eye(sa[-1], dtype=np.float32)
    b = _rand(*sb)
    np.testing.assert_allclose(_np(_ours("solve", a, b)), _np(_theirs("solve", a, b)),
                               rtol=1e-4, atol=1e-5)
    for upper in (False, True):
        np.testing.assert_allclose(_np(_ours("solve_triangular", a, b, upper=upper)),
                                   _np(_theirs("solve_triangular", a, b, upper=upper)),
                                   rtol=1e-4, atol=1e-5)


def test_solve_int_b_promotes():
    a = _rand(3, 3) + 3 * np.eye(3, dtype=np.float32)
    b = np.arange(3, dtype=np.int32)
    r = _ours("solve", a, b)
    assert r.dtype == mx.float32
    np.testing.assert_allclose(_np(r), _np(_theirs("solve", a, b)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 6])
def test_det_slogdet(n):
    a = _rand(2, n, n)
    np.testing.assert_allclose(_np(_ours("det", a)), _np(_theirs("det", a)), rtol=1e-4,
                               atol=1e-5)
    if n:
        s, ld = _outs(_ours("slogdet", a))
        ts, tld = _outs(_theirs("slogdet", a))
        np.testing.assert_array_equal(s, ts)
        np.testing.assert_allclose(ld, tld, rtol=1e-4, atol=1e-4)


def test_det_int_singular_and_small_float16():
    for a in (np.arange(9).reshape(3, 3), np.arange(16).reshape(4, 4), np.zeros((5, 5))):
        ours = _ours("det", a)
        theirs = _theirs("det", a)
        assert _dname(ours) == _dname(theirs)
        np.testing.assert_allclose(_np(ours), _np(theirs), atol=1e-5)
        for x, y in zip(_outs(_ours("slogdet", a)), _outs(_theirs("slogdet", a))):
            np.testing.assert_array_equal(x, y)
    h = mx.array(_rand(2, 2)).astype(mx.float16)
    assert mx.linalg.det(h, stream=mx.cpu).dtype == mx.float16


# ---------------------------------------------------------------------------------- errors

ERRORS = [
    ("svd", (np.ones((3, 3), np.int32),), {}), ("svd", (np.ones(3, np.float32),), {}),
    ("qr", (np.ones((3, 3), np.float16),), {}), ("qr", (np.ones(3, np.float32),), {}),
    ("inv", (np.ones((3, 2), np.float32),), {}), ("inv", (np.ones((3, 3), np.complex64),), {}),
    ("inv", (np.ones((3, 3), np.int32),), {}), ("inv", (np.zeros((3, 3), np.float32),), {}),
    ("tri_inv", (np.zeros((3, 3), np.float32),), {}),
    ("cholesky", (np.ones(3, np.float32),), {}), ("cholesky", (np.ones((2, 3), np.float32),), {}),
    ("cholesky_inv", (np.ones((2, 3), np.float32),), {}),
    ("pinv", (np.ones(3, np.float32),), {}), ("eig", (np.ones((3, 3), np.int32),), {}),
    ("eig", (np.ones((3, 3), np.float16),), {}), ("eigh", (np.ones((2, 3), np.float32),), {}),
    ("eigvalsh", (np.ones(3, np.float32),), {}), ("eigvals", (np.ones((2, 3), np.float32),), {}),
    ("lu", (np.ones(3, np.float32),), {}), ("lu_factor", (np.ones((3, 3), np.int32),), {}),
    ("solve", (np.eye(3, dtype=np.int32), np.ones(3, np.int32)), {}),
    ("solve", (np.eye(3, dtype=np.float32), np.array(1.0, np.float32)), {}),
    ("solve", (np.ones((3, 2), np.float32), np.ones(3, np.float32)), {}),
    ("solve", (np.eye(4, dtype=np.float32), np.ones(3, np.float32)), {}),
    ("solve", (np.ones(3, np.float32), np.ones(3, np.float32)), {}),
    ("solve_triangular", (np.eye(4, dtype=np.float32), np.ones((3, 2), np.float32)), {}),
    ("det", (np.ones(3, np.float32),), {}), ("det", (np.ones((3, 3), np.complex64),), {}),
    ("det", (np.ones((2, 3), np.float32),), {}),
    ("slogdet", (np.ones((4, 4), np.float16),), {}),
]


@pytest.mark.parametrize("name,args,kw", ERRORS)
def test_errors_match_mlx(name, args, kw):
    _same_error(name, *args, **kw)


class _GpuStream:
    is_gpu = True


@pytest.mark.parametrize("name,nargs", [
    ("qr", 1), ("svd", 1), ("inv", 1), ("tri_inv", 1), ("cholesky", 1), ("cholesky_inv", 1),
    ("pinv", 1), ("eig", 1), ("eigh", 1), ("eigvals", 1), ("eigvalsh", 1), ("lu", 1),
    ("lu_factor", 1), ("solve", 2), ("solve_triangular", 2), ("det", 1), ("slogdet", 1)])
def test_gpu_stream_refused_before_any_work(monkeypatch, name, nargs):
    monkeypatch.setattr(la.dev, "resolve_stream", lambda s: _GpuStream())
    args = [mx.array(np.eye(3, dtype=np.float32))] * nargs
    prefix = "inv" if name == "tri_inv" else name  # MLX's tri_inv shares inv's check
    with pytest.raises(ValueError, match=r"^\[linalg::" + prefix + r"\] This op is not yet "
                       r"supported on the GPU\. Explicitly pass a CPU stream to run it\.$"):
        getattr(mx.linalg, name)(*args)


def test_signature_and_all():
    assert sorted(mx.linalg.__all__) == sorted(n for n in dir(mlx.linalg) if not n.startswith("_"))
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.linalg.inv(np.eye(3), stream=mx.cpu)


@pytest.mark.parametrize("name", ["inv", "cholesky", "svd", "qr", "eigvalsh", "eigvals",
                                  "lu_factor", "tri_inv"])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_underivable_factorizations_name_mlxs_primitive(name, mode):
    def run(m):
        S = m.array([[2.0, 0.5], [0.5, 1.0]])
        first = (lambda r: r[0] if isinstance(r, (tuple, list)) else r)
        fn = (lambda x: first(getattr(m.linalg, name)(x, compute_uv=False, stream=m.cpu))) \
            if name == "svd" else (lambda x: first(getattr(m.linalg, name)(x, stream=m.cpu)))
        if mode == "grad":
            return m.grad(lambda x: m.abs(fn(x)).sum())(S)
        return m.jvp(fn, [S], [m.ones((2, 2))])

    with pytest.raises(ValueError) as theirs:
        run(mlx)
    with pytest.raises(ValueError) as ours:
        run(mx)
    assert str(ours.value) == str(theirs.value)


def test_dir_lists_mlxs_public_names():
    for sub in ("linalg", "random", "fft"):
        assert dir(getattr(mx, sub)) == dir(getattr(mlx, sub)), sub


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.inv(m.zeros((0, 0)), stream=m.cpu),
    lambda m: m.linalg.inv(m.zeros((2, 0, 0)), stream=m.cpu),
    lambda m: m.linalg.tri_inv(m.zeros((0, 0)), stream=m.cpu),
    lambda m: m.linalg.cholesky_inv(m.zeros((0, 0)), stream=m.cpu),
    lambda m: m.linalg.solve(m.zeros((0, 0)), m.zeros((0,)), stream=m.cpu),
    lambda m: m.linalg.solve_triangular(m.zeros((0, 0)), m.zeros((0,)), stream=m.cpu),
    lambda m: m.linalg.lu(m.zeros((2, 0)), stream=m.cpu),
    lambda m: m.linalg.lu_factor(m.zeros((0, 3)), stream=m.cpu),
])
def test_empty_matrices_that_crash_mlx_are_refused(call):
    # MLX 0.32.4 dies with SIGFPE here (probed in a subprocess); we raise instead
    with pytest.raises(ValueError, match="empty .* matrix; MLX 0.32.4 crashes"):
        mx.eval(call(mx))


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.pinv(m.zeros((0, 3)), stream=m.cpu),
    lambda m: m.linalg.pinv(m.zeros((2, 3, 0)), stream=m.cpu),
    lambda m: m.linalg.pinv(m.zeros((0, 2, 3)), stream=m.cpu),
    lambda m: m.linalg.det(m.zeros((2, 0, 0)), stream=m.cpu),
    lambda m: m.linalg.slogdet(m.zeros((0, 0)), stream=m.cpu)[1],
    lambda m: m.linalg.lu_factor(m.zeros((0, 2, 2)), stream=m.cpu)[0],
    lambda m: m.linalg.solve(m.zeros((0, 2, 2)), m.zeros((0, 2, 1)), stream=m.cpu),
    lambda m: m.linalg.cholesky(m.zeros((0, 0)), stream=m.cpu),
    lambda m: m.linalg.svd(m.array([[float("inf"), 1.0], [0.0, 1.0]]), compute_uv=False,
                           stream=m.cpu),
])
def test_empty_and_nonfinite_inputs_match_mlx(call):
    ours, theirs = call(mx), call(mlx)
    assert ours.shape == tuple(theirs.shape) and _dname(ours) == _dname(theirs)
    np.testing.assert_array_equal(_np(ours), _np(theirs))


def test_svd_of_nan_is_mlxs_runtime_error():
    for m in (mx, mlx):
        x = m.array([[float("nan"), 1.0], [0.0, 1.0]])
        for f in (lambda: m.linalg.svd(x, stream=m.cpu), lambda: m.linalg.pinv(x, stream=m.cpu),
                  lambda: m.linalg.norm(x, 2, stream=m.cpu)):
            with pytest.raises(RuntimeError, match=r"^\[SVD::eval_cpu\] SVD failed with error "
                                                   r"code -4$"):
                m.eval(f())


def test_eig_of_nonfinite_input_is_nan_not_numpys_error():
    w, v = mx.linalg.eig(mx.array([[float("nan"), 1.0], [0.0, 1.0]]), stream=mx.cpu)
    assert w.dtype == mx.complex64 and v.shape == (2, 2)
    assert np.isnan(_np(w)).all() and np.isnan(_np(v)).all()


def _norm_outcome(m, x, ord, axis, keepdims):
    try:
        r = m.linalg.norm(m.array(x), ord=ord, axis=axis, keepdims=keepdims, stream=m.cpu)
        return (tuple(r.shape), str(r.dtype).split(".")[-1], np.round(np.array(r), 3).tolist())
    except Exception as e:  # noqa: BLE001 - the outcome is compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4), (2, 0)])
def test_norm_outcomes_over_ord_axis_grid_match_mlx(shape):
    # bad axes are reported by the ops a norm is built of (sum, moveaxis), after the ord checks
    x = RNG.standard_normal(shape).astype(np.float32)
    for ord in [None, 0, 1, -1, 2, 3, math.inf, -math.inf, "fro", "nuc"]:
        for axis in [None, -1, (0, 1), (-2, -1), (1, 0), (0, 0), [0], 5]:
            for keepdims in (False, True):
                assert _norm_outcome(mx, x, ord, axis, keepdims) == \
                    _norm_outcome(mlx, x, ord, axis, keepdims), (shape, ord, axis, keepdims)


def test_factor_signs_and_eigenvalue_order_follow_mlxs_lapack_call():
    # MLX hands row-major data to LAPACK, which factors the transpose: singular/eigen vector
    # signs and geev's eigenvalue order follow from that (numpy on A itself agrees ~10-50%)
    rng = np.random.default_rng(5)
    agree = {"svd": 0, "eigh": 0, "eigvals": 0}
    n_cases = 24
    for i in range(n_cases):
        n = 3 + i % 4
        x = rng.standard_normal((n, n + i % 3 - 1)).astype(np.float32)
        sq = rng.standard_normal((n, n)).astype(np.float32)
        spd = sq @ sq.T + np.eye(n, dtype=np.float32)
        ours = [_np(t) for t in mx.linalg.svd(mx.array(x), stream=mx.cpu)]
        theirs = [_np(t) for t in mlx.linalg.svd(mlx.array(x), stream=mlx.cpu)]
        k = min(x.shape)
        agree["svd"] += bool(np.allclose(ours[0][:, :k], theirs[0][:, :k], atol=1e-3)
                             and np.allclose(ours[2][:k], theirs[2][:k], atol=1e-3))
        agree["eigh"] += bool(np.allclose(_np(mx.linalg.eigh(mx.array(spd), stream=mx.cpu)[1]),
                                          _np(mlx.linalg.eigh(mlx.array(spd), stream=mlx.cpu)[1]),
                                          atol=1e-3))
        agree["eigvals"] += bool(np.allclose(_np(mx.linalg.eigvals(mx.array(sq), stream=mx.cpu)),
                                             _np(mlx.linalg.eigvals(mlx.array(sq),
                                                                   stream=mlx.cpu)), atol=1e-3))
    assert all(v >= 0.75 * n_cases for v in agree.values()), agree
