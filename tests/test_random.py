"""mx.random against real MLX: the same keys give the same numbers (bit for bit for uniform,
randint, bernoulli, permutation, split; within a few ulps where erfinv/log/erf enter), the global
key advances as MLX's, and errors match MLX's classes and messages."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import host, keep_array_class, outcome, to_mlx, to_ours  # noqa: F401

SEEDS = [0, 1, 7, 12345, 2**32 + 5, 2**64 - 1]


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


def _bits_view(x: np.ndarray) -> np.ndarray:
    if x.dtype == ml_dtypes.bfloat16 or x.dtype == np.float16:
        return x.view(np.uint16)
    if x.dtype == np.float32:
        return x.view(np.uint32)
    if x.dtype in (np.float64, np.complex64):
        return x.view(np.uint64)
    return x


def _dtype_name(x) -> str:
    return str(x.dtype).rsplit(".", 1)[1]


def run(mx, text: str, seed: int = 3, arrays: dict | None = None, ulps: float | None = None,
        message: bool = True):
    """Evaluate ``text`` with M = the library, K = its key(seed) and the numpy ``arrays`` as
    its arrays. ulps=None: bit-identical results; else |diff| within ulps * eps * max(1, |x|)."""
    arrays = arrays or {}

    def env(lib, conv):
        e = {"M": lib, "np": np, "K": lib.random.key(seed)}
        e.update({k: conv(v) for k, v in arrays.items()})
        return e

    o = outcome(lambda: eval(text, env(pm, to_ours)))
    t = outcome(lambda: eval(text, env(mx, lambda v: to_mlx(mx, v))))
    if t[0] == "error":
        assert o[0] == "error", f"MLX raised {t[1]!r}, we returned {o[1]!r}"
        assert isinstance(o[1], type(t[1])), f"MLX raised {t[1]!r}, we raised {o[1]!r}"
        if message:
            head = str(t[1]).split("\n")[0][:30]
            assert head in str(o[1]), f"MLX: {t[1]!r}\nours: {o[1]!r}"
        return None
    if o[0] == "error":
        raise AssertionError(f"MLX returned {t[1]!r}, we raised {o[1]!r}") from o[1]
    ours, theirs = o[1], t[1]
    assert _dtype_name(ours) == _dtype_name(theirs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = host(ours), host(theirs)
    if ulps is None:
        np.testing.assert_array_equal(_bits_view(np.ascontiguousarray(a)),
                                      _bits_view(np.ascontiguousarray(b)), err_msg=text)
    else:
        if a.dtype == ml_dtypes.bfloat16:
            eps = 2.0 ** -7
        else:
            eps = float(np.finfo(a.dtype).eps) if a.dtype.kind in "fc" else 0.0
        a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
        bound = ulps * eps * np.maximum(1.0, np.abs(b64))
        bad = ~(np.abs(a64 - b64) <= bound)
        assert not bad.any(), (text, a64[bad][:5], b64[bad][:5])
    return ours


# -- keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_key_and_split(mx, seed):
    run(mx, "K", seed)
    for num in (0, 1, 2, 3, 5, 17):
        run(mx, f"M.random.split(K, {num})", seed)
    run(mx, "M.random.split(K)", seed)
    run(mx, "M.random.split(M.random.split(K, 3)[1])", seed)
    run(mx, "M.random.split(M.random.split(K, 4)[:, 1])", seed)  # a strided key


@pytest.mark.parametrize("text", [
    "M.random.key(-1)", "M.random.key(2**64)", "M.random.key(1.5)", "M.random.seed(-1)",
    "M.random.seed(2**64)", "M.random.split(M.array([1, 2]))",
    "M.random.split(M.array([1, 2, 3], M.uint32))", "M.random.split(K, -1)",
    "M.random.uniform(shape=(3,), key=M.zeros((2, 2), M.uint32))",
    "M.random.uniform(shape=(3,), key=M.array([1, 2]))",
    "M.random.uniform(shape=(-1,), key=K)", "M.random.normal((2, -3), key=K)",
])
def test_key_errors(mx, text):
    run(mx, text)


# -- uniform -------------------------------------------------------------------------------------

SHAPES = [(), (0,), (1,), (2,), (3,), (7,), (8,), (2, 3), (5, 0, 2), (1001,), (3, 5, 7)]


@pytest.mark.parametrize("seed", SEEDS[:4])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_uniform_bits(mx, seed, dtype):
    for shape in SHAPES:
        run(mx, f"M.random.uniform(shape={shape}, dtype=M.{dtype}, key=K)", seed)
    run(mx, f"M.random.uniform(-3, 5.5, (33,), M.{dtype}, key=K)", seed)
    run(mx, f"M.random.uniform(2, -1, (9,), dtype=M.{dtype}, key=K)", seed)
    run(mx, f"M.random.uniform(1e-3, 1e4, (64,), M.{dtype}, K)", seed)


@pytest.mark.parametrize("text", [
    "M.random.uniform(A, 1, shape=(4, 3), key=K)",
    "M.random.uniform(A, B, shape=(4, 3), key=K)",
    "M.random.uniform(0, C, shape=(2, 4, 3), key=K)",
    "M.random.uniform(A, C, shape=(2, 4, 3), dtype=M.float16, key=K)",
    "M.random.uniform(A, 10, shape=(4, 3), dtype=M.bfloat16, key=K)",
    "M.random.uniform(I, 9, shape=(4, 3), key=K)",
    "M.random.uniform(M.array(1, M.int32), M.array(4, M.int32), shape=(3,), key=K)",
    "M.random.uniform(A.T, B.T, shape=(3, 4), key=K)",
    "M.random.uniform(A[::2], 5, shape=(2, 3), key=K)",
    # shape errors
    "M.random.uniform(A, 1, shape=(3,), key=K)", "M.random.uniform(A, 1, shape=(5,), key=K)",
    "M.random.uniform(A, 1, key=K)",
    # dtype errors
    "M.random.uniform(shape=(3,), dtype=M.float64, key=K)",
    "M.random.uniform(shape=(3,), dtype=M.int32, key=K)",
    "M.random.uniform(shape=(3,), dtype=M.complex64, key=K)",
])
def test_uniform_arrays_and_errors(mx, text):
    rng = np.random.default_rng(5)
    arrays = {"A": rng.standard_normal((4, 3)).astype(np.float32),
              "B": (rng.standard_normal((4, 3)) + 4).astype(np.float32),
              "C": (rng.random((2, 1, 3)) + 1).astype(np.float32),
              "I": rng.integers(-5, 5, (4, 3)).astype(np.int32)}
    run(mx, text, arrays=arrays)


def test_uniform_large_odd(mx):
    run(mx, "M.random.uniform(shape=(100003,), key=K)", 11)
    run(mx, "M.random.uniform(shape=(257, 129), dtype=M.float16, key=K)", 12)


# -- the global key --------------------------------------------------------------------------


def test_global_key_sequence(mx):
    def script(M):
        M.random.seed(42)
        out = [M.random.uniform(shape=(5,)), M.random.normal((3,)), M.random.randint(0, 9, (4,)),
               M.random.bernoulli(0.5, (6,)), M.random.permutation(7),
               M.random.randint(0, 9, (4,), dtype=M.int64), M.random.categorical(
                   M.zeros((2, 5))), M.random.gumbel((2,)), M.random.laplace((2,)),
               M.random.truncated_normal(-1, 1, (3,)), M.random.split(M.random.state[0]),
               M.random.uniform(shape=(2,), dtype=M.float16), M.random.state[0]]
        M.random.seed(2**63 + 3)
        out += [M.random.uniform(shape=(4,)), M.random.state[0]]
        return out

    ours, theirs = script(pm), script(mx)
    for o, t in zip(ours, theirs):
        a, b = host(o), host(t)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5,
                                   atol=1e-6)


def test_state(mx):
    pm.random.seed(9)
    mx.random.seed(9)
    assert len(pm.random.state) == len(mx.random.state) == 1
    np.testing.assert_array_equal(np.array(pm.random.state[0]), np.array(mx.random.state[0]))
    assert pm.random.state[0] is pm.random.state[0]
    pm.random.uniform()
    mx.random.uniform()
    np.testing.assert_array_equal(np.array(list(pm.random.state)[0]),
                                  np.array(list(mx.random.state)[0]))
    assert pm.random.state[0].dtype == pm.uint32


def test_state_is_an_eval_tree(mx):
    # MLX's training idiom: state = [model.state, optimizer.state, mx.random.state]; eval(state)
    for M in (pm, mx):
        M.random.seed(4)
        M.eval(M.random.state)
        M.eval([{"w": M.ones((2,))}, M.random.state], M.random.state)
        M.async_eval(M.random.state)
    np.testing.assert_array_equal(np.array(pm.random.state[0]), np.array(mx.random.state[0]))


def test_global_key_not_advanced_by_dtype_errors(mx):
    for M in (pm, mx):
        M.random.seed(5)
        with pytest.raises(RuntimeError):
            M.random.uniform(shape=(2,), dtype=M.float64)
        with pytest.raises(ValueError):
            M.random.uniform(shape=(2,), dtype=M.int32)
    np.testing.assert_array_equal(np.array(pm.random.state[0]), np.array(mx.random.state[0]))


# -- normal --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_normal(mx, seed):
    for shape in SHAPES:
        run(mx, f"M.random.normal({shape}, key=K)", seed, ulps=4)
    run(mx, "M.random.normal((1000,), M.float16, key=K)", seed, ulps=1)
    run(mx, "M.random.normal((1000,), M.bfloat16, key=K)", seed, ulps=1)
    run(mx, "M.random.normal((1000,), M.float64, key=K)", seed, ulps=2 ** 29 * 4)
    run(mx, "M.random.normal((10001,), key=K)", seed, ulps=4)
    run(mx, "M.random.normal((7,), M.complex64, key=K)", seed, ulps=4)
    run(mx, "M.random.normal((7,), M.complex64, loc=1.0, scale=2.0, key=K)", seed, ulps=4)


@pytest.mark.parametrize("text", [
    "M.random.normal((3,), loc=1, scale=2, key=K)",
    "M.random.normal((3,), loc=-0.5, key=K)", "M.random.normal((3,), scale=3.5, key=K)",
    "M.random.normal((4, 3), loc=A, scale=B, key=K)",
    "M.random.normal((4, 3), M.float16, loc=A, key=K)",
    "M.random.normal((2,), loc=M.array([1.0, 2, 3]), key=K)",
    "M.random.normal((3,), M.int32, key=K)", "M.random.normal((3,), M.uint8, key=K)",
    "M.random.normal((3,), M.bool_, key=K)",
])
def test_normal_params(mx, text):
    rng = np.random.default_rng(2)
    arrays = {"A": rng.standard_normal((4, 3)).astype(np.float32),
              "B": (rng.random((1, 3)) + 0.5).astype(np.float32)}
    run(mx, text, arrays=arrays, ulps=8)


# -- randint -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS[:4])
@pytest.mark.parametrize("dtype", ["int32", "int8", "int16", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "bool_"])
def test_randint_dtypes(mx, seed, dtype):
    run(mx, f"M.random.randint(0, 100, (257,), M.{dtype}, key=K)", seed)
    run(mx, f"M.random.randint(0, 2, (9,), M.{dtype}, key=K)", seed)
    run(mx, f"M.random.randint(3, 3, (4,), M.{dtype}, key=K)", seed)


@pytest.mark.parametrize("text", [
    "M.random.randint(-5, 3, (1000,), key=K)", "M.random.randint(5, 2, (10,), key=K)",
    "M.random.randint(0, 2**30, (100,), key=K)",
    "M.random.randint(-2**31, 2**31 - 1, (50,), key=K)",
    "M.random.randint(2**24, 2**24 + 2, (200,), key=K)",
    "M.random.randint(2**40, 2**40 + 1024, (20,), M.int64, key=K)",
    "M.random.randint(0.5, 10.7, (30,), key=K)", "M.random.randint(0, 1, (), key=K)",
    "M.random.randint(0, 300, (50,), M.uint8, key=K)", "M.random.randint(0, 10, (0, 3), key=K)",
    "M.random.randint(L, H, (4, 3), key=K)", "M.random.randint(L, 50, (2, 4, 3), key=K)",
    "M.random.randint(M.array([0, 5]), M.array([[3], [10]]), (2, 2), key=K)",
    "M.random.randint(L, H, (3,), key=K)",
    "M.random.randint(0, 10, (3,), M.float32, key=K)",
    "M.random.randint(0, 10, (3,), M.complex64, key=K)",
    "M.random.randint(0, 10, (-3,), key=K)",
])
def test_randint_cases(mx, text):
    rng = np.random.default_rng(4)
    arrays = {"L": rng.integers(-20, 5, (4, 3)).astype(np.int32),
              "H": rng.integers(5, 40, (4, 3)).astype(np.int32)}
    run(mx, text, arrays=arrays)


# -- bernoulli -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "M.random.bernoulli(key=K)", "M.random.bernoulli(0.3, (1001,), key=K)",
    "M.random.bernoulli(0.0, (100,), key=K)", "M.random.bernoulli(1.0, (100,), key=K)",
    "M.random.bernoulli(P, key=K)", "M.random.bernoulli(P, (5, 4, 3), key=K)",
    "M.random.bernoulli(P.astype(M.float16), key=K)",
    "M.random.bernoulli(P.astype(M.bfloat16), (2, 4, 3), key=K)",
    "M.random.bernoulli(M.array([-1.0, 2.0, 0.5]), key=K)", "M.random.bernoulli(0.5, (), key=K)",
    "M.random.bernoulli(0.5, (0, 2), key=K)",
    "M.random.bernoulli(P, (3,), key=K)", "M.random.bernoulli(1, (3,), key=K)",
    "M.random.bernoulli(M.array([1, 0]), key=K)",
])
def test_bernoulli(mx, text):
    p = np.random.default_rng(1).random((4, 3)).astype(np.float32)
    for seed in (0, 3):
        run(mx, text, seed, arrays={"P": p})


# -- truncated_normal, gumbel, laplace -----------------------------------------------------------


@pytest.mark.parametrize("text", [
    "M.random.truncated_normal(-1, 1, key=K)", "M.random.truncated_normal(-1, 1, (501,), key=K)",
    "M.random.truncated_normal(0.5, 3, (64,), key=K)",
    "M.random.truncated_normal(LO, 1.5, key=K)",
    "M.random.truncated_normal(LO, HI, (2, 4, 3), key=K)",
    "M.random.truncated_normal(-2, 2, (64,), M.float16, key=K)",
    "M.random.truncated_normal(-2, 2, (64,), M.bfloat16, key=K)",
    "M.random.truncated_normal(-1, 1, (3,), M.int32, key=K)",
    "M.random.truncated_normal(-1, 1, (3,), M.float64, key=K)",
    "M.random.truncated_normal(LO, HI, (3,), key=K)",
])
def test_truncated_normal(mx, text):
    rng = np.random.default_rng(8)
    arrays = {"LO": (rng.standard_normal((4, 3)) - 1).astype(np.float32),
              "HI": (rng.standard_normal((4, 3)) + 2).astype(np.float32)}
    # erfinv near +-1 magnifies the last-bit differences of erf (ours rounds from double,
    # MLX's is a float32 approximation) by up to ~50x in the tails.
    run(mx, text, arrays=arrays, ulps=256)


@pytest.mark.parametrize("text", [
    "M.random.gumbel(key=K)", "M.random.gumbel((1001,), key=K)",
    "M.random.gumbel((3, 5), M.float16, key=K)", "M.random.gumbel((64,), M.bfloat16, key=K)",
    "M.random.gumbel((3,), M.int32, key=K)", "M.random.gumbel((3,), M.float64, key=K)",
    "M.random.laplace(key=K)", "M.random.laplace((1001,), key=K)",
    "M.random.laplace((64,), M.float16, key=K)", "M.random.laplace((64,), M.bfloat16, key=K)",
    "M.random.laplace((64,), M.float64, key=K)",
    "M.random.laplace((64,), loc=1.0, scale=2.0, key=K)",
    "M.random.laplace((64,), M.float16, 0.5, 0.25, key=K)",
    "M.random.laplace((3,), M.int32, key=K)",
])
def test_gumbel_laplace(mx, text):
    # float64 laplace takes its log1p in float64, as MLX does: within a few float64 ulps.
    run(mx, text, 6, ulps=8)


# -- categorical ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "M.random.categorical(LG, key=K)", "M.random.categorical(LG, axis=0, key=K)",
    "M.random.categorical(LG, axis=-2, key=K)", "M.random.categorical(LG, 1, key=K)",
    "M.random.categorical(LG, shape=(5, 3), key=K)",
    "M.random.categorical(LG, num_samples=7, key=K)",
    "M.random.categorical(LG, axis=0, num_samples=2, key=K)",
    "M.random.categorical(L3, axis=1, key=K)",
    "M.random.categorical(L3, axis=1, shape=(2, 4, 6), key=K)",
    "M.random.categorical(L3, axis=2, num_samples=3, key=K)",
    "M.random.categorical(LG.astype(M.float16), key=K)", "M.random.categorical(LI, key=K)",
    "M.random.categorical(V, key=K)", "M.random.categorical(V, num_samples=50, key=K)",
    "M.random.categorical(LG, axis=2, key=K)", "M.random.categorical(M.array(1.0), key=K)",
    "M.random.categorical(LG, shape=(2, 4), key=K)",
    "M.random.categorical(LG, num_samples=5, shape=(3, 5), key=K)",
    # one distribution: MLX 0.32.4 inverts its CDF instead of adding Gumbel noise
    "M.random.categorical(V, shape=(2, 3), key=K)", "M.random.categorical(V, shape=(), key=K)",
    "M.random.categorical(V, num_samples=1, key=K)",
    "M.random.categorical(V[None], num_samples=9, key=K)",
    "M.random.categorical(V[None], shape=(4, 1), key=K)",
    "M.random.categorical(V[:, None], axis=0, num_samples=9, key=K)",
    "M.random.categorical(V[None], axis=1, shape=(3, 2), key=K)",
    # one distribution, non-scalar result: MLX inverts the CDF here too (a (1, vocab) decode step)
    "M.random.categorical(V[None], key=K)", "M.random.categorical(V[:, None], axis=0, key=K)",
    "M.random.categorical(V[None, None], axis=2, key=K)",
    "M.random.categorical(V, num_samples=3000, key=K)",
    "M.random.categorical(M.zeros((3, 0)), key=K)", "M.random.categorical(M.zeros((0, 4)), key=K)",
    "M.random.categorical(M.zeros((0,)), num_samples=3, key=K)",
    "M.random.categorical(V, num_samples=0, key=K)",
    "M.random.categorical(V, num_samples=-1, key=K)",
    "M.random.categorical(LG, shape=(0, 3), key=K)",
])
def test_categorical(mx, text):
    rng = np.random.default_rng(3)
    arrays = {"LG": (rng.standard_normal((3, 10)) * 2).astype(np.float32),
              "L3": rng.standard_normal((4, 5, 6)).astype(np.float32),
              "LI": rng.integers(-3, 3, (3, 8)).astype(np.int32),
              "V": np.log(rng.random(25) + 0.05).astype(np.float32)}
    run(mx, text, arrays=arrays)


# -- permutation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "M.random.permutation(0, key=K)", "M.random.permutation(1, key=K)",
    "M.random.permutation(5, key=K)", "M.random.permutation(1000, key=K)",
    "M.random.permutation(X, key=K)", "M.random.permutation(X, axis=1, key=K)",
    "M.random.permutation(X, axis=-1, key=K)", "M.random.permutation(X.T, axis=0, key=K)",
    "M.random.permutation(M.arange(9), key=K)", "M.random.permutation(-1, key=K)",
    "M.random.permutation(X, axis=2, key=K)", "M.random.permutation(M.array(3), key=K)",
])
def test_permutation(mx, text):
    arrays = {"X": np.arange(35, dtype=np.float32).reshape(5, 7)}
    for seed in (0, 2):
        # MLX's bad-axis message is "SmallVector out of range."; ours names the axis.
        run(mx, text, seed, arrays=arrays, message="axis=2" not in text and "(3)" not in text)


def test_permutation_ties_stable(mx):
    # 300,000 32-bit draws hold a handful of equal pairs: the argsort must keep index order.
    run(mx, "M.random.permutation(300000, key=K)", 1)


# -- multivariate_normal -------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "M.random.multivariate_normal(MU, COV, (6,), key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, COV, key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MB, COV, key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, CB, (4, 2), key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, M.eye(3), (5,), key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, COV, (2,), M.float16, key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, M.eye(4), (3,), key=K, stream=M.cpu)",
    "M.random.multivariate_normal(M.array(0.0), COV, (3,), key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, MU, (3,), key=K, stream=M.cpu)",
    "M.random.multivariate_normal(MU, M.zeros((3, 4)), (3,), key=K, stream=M.cpu)",
])
def test_multivariate_normal(mx, text):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 3))
    cov = (a @ a.T + np.eye(3)).astype(np.float32)
    b = rng.standard_normal((2, 3, 3))
    arrays = {"MU": np.array([1.0, -2.0, 0.5], np.float32), "COV": cov,
              "MB": rng.standard_normal((4, 3)).astype(np.float32),
              "CB": (b @ b.transpose(0, 2, 1) + np.eye(3)).astype(np.float32)}
    run(mx, text, arrays=arrays, ulps=64)


def test_signatures(mx):
    import inspect

    for name in ("seed", "key", "split", "uniform", "normal", "randint", "bernoulli",
                 "truncated_normal", "categorical", "gumbel", "laplace", "permutation",
                 "multivariate_normal"):
        ours = list(inspect.signature(getattr(pm.random, name)).parameters)
        doc = getattr(mx.random, name).__doc__.split("\n")[0]
        theirs = [p.split(":")[0].strip() for p in doc[doc.index("(") + 1:doc.rindex(")")]
                  .split(", ") if p and "=" in p or ":" in p]
        assert ours == theirs, (name, ours, theirs)


@pytest.mark.parametrize("text", [
    "M.random.key(np.int64(5))", "M.random.key(True)", "M.random.key(np.uint64(2**63))",
    "M.random.split(K, np.int64(3))", "M.random.split(K, 2.0)",
    "M.random.uniform(shape=5, key=K)", "M.random.uniform(shape=[2, 3.0], key=K)",
    "M.random.uniform(shape=(2,), key=[1, 2])", "M.random.permutation(5.0, key=K)",
    "M.random.permutation(np.int64(4), key=K)",
    "M.random.categorical(M.zeros((2, 3)), axis=1.0, key=K)",
    "M.random.normal(shape=(2,), loc=M.zeros((2, 3)), key=K)",
    "M.random.randint(0, 10, (2,), dtype=None, key=K)",
    "M.random.uniform(shape=(2,), dtype=None, key=K)",
    "M.random.truncated_normal(1, -1, (3,), key=K)", "M.random.laplace((2,), loc=1, key=K)",
])
def test_argument_conversions(mx, text):
    run(mx, text, message=False, ulps=4)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                   "uint64", "float32", "float16", "bfloat16", "float64"])
def test_fused_draws_equal_the_composition(dtype):
    """Scalar bounds take one fused primitive; array bounds the op chain MLX builds. Same bits."""
    d = getattr(pm, dtype)
    k = pm.random.key(5)

    def same(a, b):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.array(a).view(np.uint8), np.array(b).view(np.uint8))

    if dtype.startswith(("int", "uint")):
        for lo, hi in [(0, 10), (-5, 3), (3, 3), (5, 2), (0, 300), (-2**31, 2**31 - 1),
                       (0.5, 10.7), (-1.5, 2), (2**24, 2**24 + 2)]:
            same(pm.random.randint(lo, hi, (999,), d, key=k),
                 pm.random.randint(pm.array(lo), pm.array(hi), (999,), d, key=k))
        return
    for loc, scale in [(None, None), (1.5, None), (None, 3), (-2, 7.5)]:
        same(pm.random.normal((1001,), d, loc, scale, key=k),
             pm.random.normal((1001,), d, None if loc is None else pm.array(loc),
                              None if scale is None else pm.array(scale), key=k))
    if dtype != "float64":
        same(pm.random.uniform(-3, 5.5, (1001,), d, key=k),
             pm.random.uniform(pm.array(-3), pm.array(5.5), (1001,), d, key=k))


def test_fused_bernoulli_equals_the_composition():
    k = pm.random.key(8)
    for p in (0.0, 1.0, -1.0, 2.0, 0.5, 0.3, 1e-10, 0.9999999):
        for shape in ((), (1,), (7,), (1000,), (3, 0)):
            a = pm.random.bernoulli(p, shape, key=k)
            b = pm.random.bernoulli(pm.array(p), shape, key=k)
            assert a.dtype == b.dtype == pm.bool_ and a.shape == b.shape
            np.testing.assert_array_equal(np.array(a), np.array(b))
    a = pm.random.bernoulli(np.float64(0.25), (999,), key=k)
    b = pm.random.bernoulli(pm.array(np.float64(0.25)), (999,), key=k)
    np.testing.assert_array_equal(np.array(a), np.array(b))


RANDOM_ARGUMENT_CASES = [
    "R.normal(3)", "R.normal((2.0,))", "R.uniform(shape=(2.5,))", "R.uniform(0, 1, 3)",
    "R.randint(0, 5, (2.5,))", "R.randint(0, 5, 3)", "R.bernoulli(0.5, 3)",
    "R.truncated_normal(-1, 1, 3)", "R.gumbel(3)", "R.laplace(3)", "R.normal('a')",
    "R.permutation(2.5)", "R.categorical(M.ones((3,)), num_samples=1.5)",
    "R.normal([2, 3.0])", "R.uniform(shape=[None])",
]


@pytest.mark.parametrize("text", RANDOM_ARGUMENT_CASES)
def test_wrong_shape_arguments_raise_nanobind_text(mx, text):
    """``mx.random.normal(3)`` (an int, not a shape) and friends: MLX's TypeError text."""
    msgs = []
    for lib in (pm, mx):
        with pytest.raises(TypeError) as err:
            eval(text, {"R": lib.random, "M": lib})
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


def test_array_shape_is_a_sequence(mx):
    assert pm.random.normal(pm.array([2, 3])).shape == mx.random.normal(mx.array([2, 3])).shape


def test_split_num_of_the_wrong_type_gets_nanobinds_text():
    mlx = pytest.importorskip("mlx.core")
    with pytest.raises(TypeError) as theirs:
        mlx.random.split(mlx.random.key(1), 2.0)
    with pytest.raises(TypeError) as ours:
        pm.random.split(pm.random.key(1), 2.0)
    assert str(ours.value) == str(theirs.value)


_RANDOM_ARG_MISTAKES = {
    "normal_dtype_str": lambda m: m.random.normal((2,), dtype="float32"),
    "normal_key_list": lambda m: m.random.normal((2,), key=[0, 1]),
    "split_key_list": lambda m: m.random.split([0, 1]),
    "categorical_list": lambda m: m.random.categorical([0.0, 1.0]),
    "categorical_scalar": lambda m: m.random.categorical(1.0),
    "mvn_lists": lambda m: m.random.multivariate_normal([0.0], [[1.0]], stream=m.cpu),
    "permutation_axis_float": lambda m: m.random.permutation(m.arange(3), axis=0.0),
    "laplace_loc_str": lambda m: m.random.laplace((2,), loc="a"),
}


@pytest.mark.parametrize("case", list(_RANDOM_ARG_MISTAKES))
def test_sampler_argument_types_get_nanobinds_text(case):
    mlx = pytest.importorskip("mlx.core")
    call = _RANDOM_ARG_MISTAKES[case]
    with pytest.raises(TypeError) as theirs:
        call(mlx)
    with pytest.raises(TypeError) as ours:
        call(pm)
    assert str(ours.value) == str(theirs.value)


def test_laplace_takes_what_nanobinds_float_takes():
    k = pm.random.key(0)
    a = pm.random.laplace((2,), loc=1, scale=pm.array(2.0), key=k)
    b = pm.random.laplace((2,), loc=1.0, scale=2.0, key=k)
    assert pm.array_equal(a, b).item()
