"""gather_mm, block_masked_mm, segmented_mm and hadamard_transform against real MLX 0.32.4
(values, dtypes, shapes, errors), with numpy as the oracle where MLX reads out of bounds."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

mlx = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(11)


def _both(fn, *values, tol=1e-5):
    """fn(m, *arrays) in both libraries: the same value, shape and dtype, or the same error."""
    res = []
    for m in (mx, mlx):
        try:
            args = [m.array(v) if isinstance(v, np.ndarray) else v for v in values]
            out = fn(m, *args)
            if isinstance(out, m.array):
                m.eval(out)
            res.append(out)
        except Exception as e:  # noqa: BLE001 - compared below
            res.append(e)
    ours, ref = res
    if isinstance(ref, Exception):
        assert type(ours) is type(ref), (ours, ref)
        assert str(ours).replace("pycudamlx.core.array.array", "mlx.core.array") == str(ref)
        return
    assert not isinstance(ours, Exception), ours
    assert tuple(ours.shape) == tuple(ref.shape)
    assert ours.dtype.name == str(ref.dtype).split(".")[-1]
    a = np.array(ours.astype(mx.float32))
    b = np.array(ref.astype(mlx.float32))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _i(hi, *shape, dtype=np.int32):
    return RNG.integers(0, hi, size=shape).astype(dtype)


# ----------------------------------------------------------------------------------------------
# gather_mm


@pytest.mark.parametrize("case", [
    ((4, 2, 3), (5, 3, 6), (3,), (3,)),
    ((4, 2, 3), (5, 3, 6), (3, 1), (1, 3)),
    ((2, 2, 2, 3), (5, 3, 6), (2, 1), (4,)),
    ((2, 3), (5, 3, 6), None, (3,)),
    ((4, 1, 3), (3, 6), (3,), None),
    ((4, 2, 3), (4, 3, 6), None, None),
    ((4, 2, 3), (5, 3, 6), (), (2,)),
    ((3,), (5, 3, 6), None, (3,)),
    ((4, 2, 3), (3,), (2,), None),
], ids=str)
def test_gather_mm(case):
    ash, bsh, li, ri = case
    a, b = _f(*ash), _f(*bsh)
    na = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
    nb = int(np.prod(bsh[:-2])) if len(bsh) > 2 else 1
    lhs = None if li is None else _i(na, *li)
    rhs = None if ri is None else _i(nb, *ri, dtype=np.uint32)
    _both(lambda m, a, b, l, r: m.gather_mm(a, b, l, r, sorted_indices=True), a, b, lhs, rhs)


@pytest.mark.parametrize("name", ["ints", "float_index", "inner", "default_batch",
                                  "not_array", "half_mixed"])
def test_gather_mm_rules(name):
    a, b = _f(4, 2, 3), _f(5, 3, 6)
    idx = _i(4, 3)
    calls = {
        "ints": lambda m, a, b, i: m.gather_mm(a.astype(m.int32), b.astype(m.int32), i, i),
        "float_index": lambda m, a, b, i: m.gather_mm(a, b, i.astype(m.float32), i),
        "inner": lambda m, a, b, i: m.gather_mm(a, b[:, :2], i, i),
        "default_batch": lambda m, a, b, i: m.gather_mm(a, b, None, i),
        "not_array": lambda m, a, b, i: m.gather_mm(1.0, b, None, i),
        "half_mixed": lambda m, a, b, i: m.gather_mm(a.astype(m.float16), b, i, i),
    }
    _both(calls[name], a, b, idx, tol=1e-3)


# ----------------------------------------------------------------------------------------------
# block_masked_mm


@pytest.mark.parametrize("bs", [32, 64])
@pytest.mark.parametrize("masks", ["none", "out", "lhs_rhs", "all", "float", "broadcast"])
def test_block_masked_mm(bs, masks):
    m_, k, n = 70, 96, 50
    a, b = _f(2, m_, k), _f(2, k, n)
    nm, nk, nn = -(-m_ // bs), -(-k // bs), -(-n // bs)
    mo = RNG.random((2, nm, nn)) > 0.4
    ml = RNG.random((2, nm, nk)) > 0.4
    mr = RNG.random((2, nk, nn)) > 0.4
    pick = {
        "none": (None, None, None), "out": (mo, None, None), "lhs_rhs": (None, ml, mr),
        "all": (mo, ml, mr),
        "float": (mo.astype(np.float32) * 0.5, None, RNG.random((2, nk, nn)).astype(np.float32)),
        "broadcast": (mo[0], ml[:1], None),
    }[masks]
    _both(lambda m, a, b, o, l, r: m.block_masked_mm(a, b, bs, o, l, r), a, b, *pick, tol=1e-4)


def test_block_masked_mm_errors_and_dtypes():
    a, b = _f(64, 64), _f(64, 32)
    mo = np.ones((2, 2), bool)
    _both(lambda m, a, b, o: m.block_masked_mm(a, b, 32, o[:, :1]), a, b, mo)
    _both(lambda m, a, b, o: m.block_masked_mm(a.astype(m.int32), b.astype(m.int32), 32, o),
          a, b, mo)
    _both(lambda m, a, b, o: m.block_masked_mm(a, b[:32], 32, o), a, b, mo)
    _both(lambda m, a, b, o: m.block_masked_mm(a.astype(m.float16), b.astype(m.float16), 32,
                                               o.astype(m.float32)), a, b, mo, tol=5e-2)
    _both(lambda m, a, b, o: m.block_masked_mm(a[0], b, 32, None, o[:1, :2]), a, b, mo)
    _both(lambda m, a, b, o: m.block_masked_mm(a[0], b, 32, o[0, :1], o[0]), a, b, mo)
    _both(lambda m, a, b, o: m.block_masked_mm(a, b[:, 0], 32, o[:, 0], None, o[:, 0]), a, b,
          mo)
    a3, b3 = _f(2, 64, 96), _f(2, 96, 128)
    for mask in [np.ones((2, 2, 3), bool), np.ones((3, 2, 2, 4), np.float32),
                 np.ones((2, 2, 4), np.float32)]:
        _both(lambda m, a, b, o: m.block_masked_mm(a, b, 32, o), a3, b3, mask)
        _both(lambda m, a, b, o: m.block_masked_mm(a, b, 32, None, o), a3, b3, mask)
    _both(lambda m, a, b, o: m.block_masked_mm(a[0], b, 32, None, o), a3, b3,
          np.ones((2, 2, 3), bool))


# ----------------------------------------------------------------------------------------------
# segmented_mm


@pytest.mark.parametrize("segments", [[[0, 2], [2, 5], [1, 1]], [0, 5], [[[0, 3]], [[3, 5]]],
                                      [[4, 2]]], ids=str)
def test_segmented_mm(segments):
    _both(lambda m, a, b, s: m.segmented_mm(a, b, s), _f(3, 5), _f(5, 4),
          np.array(segments, np.int32))


def test_segmented_mm_errors_and_clamp():
    a, b = _f(3, 5), _f(5, 4)
    seg = np.array([[0, 2]], np.int32)
    _both(lambda m, a, b, s: m.segmented_mm(a, b, s.astype(m.float32)), a, b, seg)
    _both(lambda m, a, b, s: m.segmented_mm(a.astype(m.int32), b.astype(m.int32), s), a, b, seg)
    _both(lambda m, a, b, s: m.segmented_mm(a[None], b[None], s), a, b, seg)
    _both(lambda m, a, b, s: m.segmented_mm(a.astype(m.float16), b, s), a, b, seg, tol=1e-2)
    # MLX reads outside a and b for out-of-range segments; here they are clamped to [0, K].
    out = mx.segmented_mm(mx.array(a), mx.array(b), mx.array([[-1, 9], [3, 99]]))
    np.testing.assert_allclose(np.array(out), np.stack([a @ b, a[:, 3:] @ b[3:]]), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match="Last dimension"):
        mx.segmented_mm(mx.array(a), mx.array(b[:4]), mx.array(seg))


@pytest.mark.parametrize("shapes", [((3, 5), (5,)), ((5,), (5, 4)), ((5,), (5,)), ((2, 3, 5), (5, 4))],
                         ids=str)
def test_segmented_mm_needs_matrices(shapes):
    # MLX refuses any operand that is not 2-D (1-D ones too) with the same "Batched" error.
    _both(lambda m, a, b, s: m.segmented_mm(a, b, s), _f(*shapes[0]), _f(*shapes[1]),
          np.array([[0, 2]], np.int32))


@pytest.mark.parametrize("segments", [np.array(3, np.int32), np.array([0, 2, 5], np.int32),
                                      np.array([[0.0, 1.0, 2.0]], np.float32)], ids=str)
def test_segmented_mm_segment_checks_order(segments):
    # A bad segments shape is reported before the operand dtype and the segments dtype.
    a, b = _f(3, 5), _f(5, 4)
    _both(lambda m, a, b, s: m.segmented_mm(a, b, s), a, b, segments)
    _both(lambda m, a, b, s: m.segmented_mm(a.astype(m.int32), b.astype(m.int32), s), a, b,
          segments)


# ----------------------------------------------------------------------------------------------
# hadamard_transform


@pytest.mark.parametrize("n", [1, 2, 8, 256, 12, 24, 20, 80, 28, 56, 12 * 32])
def test_hadamard(n):
    _both(lambda m, x: m.hadamard_transform(x), _f(3, n), tol=2e-5 * max(1, np.log2(n)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "bool_", "complex64"])
def test_hadamard_dtypes(dtype):
    x = (_f(2, 24) * 3).astype(np.float32)
    tol = {"float16": 1e-2, "bfloat16": 6e-2}.get(dtype, 1e-5)
    _both(lambda m, x: m.hadamard_transform(x.astype(getattr(m, dtype)), scale=0.3), x, tol=tol)


def test_hadamard_rules():
    _both(lambda m: m.hadamard_transform(m.array(2.0)))
    _both(lambda m: m.hadamard_transform(m.ones((2, 3, 16)), 2))
    _both(lambda m: m.hadamard_transform(m.ones((0, 4))))
    _both(lambda m: m.hadamard_transform(2.0))
    with pytest.raises(ValueError, match=r"n = m\*2\^k"):  # MLX raises when evaluated
        mx.hadamard_transform(mx.ones((3,)))
    with pytest.raises(ValueError, match="Unsupported type"):
        mx.hadamard_transform(mx.ones((4,), mx.float64))


class _Index:
    def __index__(self) -> int:
        return 1


# nanobind's conversions as MLX's bindings apply them (see tests/test_conv.py): int takes
# bools and __index__ objects, float anything float() takes, bool only True / False.
_VALUES = {"true": lambda m: True, "np_int": lambda m: np.int64(1), "np_0d": lambda m: np.array(1),
           "mx_int": lambda m: m.array(1), "mx_float": lambda m: m.array(1.0),
           "float": lambda m: 1.0, "index": lambda m: _Index(), "np_bool": lambda m: np.bool_(1),
           "none": lambda m: None, "str": lambda m: "a", "zero": lambda m: 0,
           "np_1d": lambda m: np.array([1])}
_CALLS = {
    "gather_mm sorted_indices": lambda m, v: m.gather_mm(
        m.ones((3, 1, 4)), m.ones((2, 4, 5)), None, m.array([0, 0, 1]), sorted_indices=v),
    "block_masked_mm block_size": lambda m, v: m.block_masked_mm(
        m.ones((64, 64)), m.ones((64, 64)), v if isinstance(v, (str, type(None))) else 32 * v,
        m.array([[True, False], [True, True]])),
    "hadamard_transform scale": lambda m, v: m.hadamard_transform(m.ones((2, 4)), v),
}


@pytest.mark.parametrize("value", list(_VALUES))
@pytest.mark.parametrize("call", list(_CALLS))
def test_argument_conversions_like_nanobind(call, value):
    if call == "block_masked_mm block_size" and value == "zero":
        pytest.skip("block_size 0: MLX divides by it")
    got = []
    for m in (mx, mlx):
        try:
            got.append(np.array(_CALLS[call](m, _VALUES[value](m))))
        except Exception as e:  # noqa: BLE001 - the exception is the result
            got.append((type(e), str(e).split("\n")[0]))
    ours, ref = got
    if isinstance(ref, tuple):
        assert ours == ref
    else:
        assert not isinstance(ours, tuple), ours
        np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
