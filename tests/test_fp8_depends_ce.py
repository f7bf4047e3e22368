"""mx.to_fp8 / mx.from_fp8, mx.depends and mx.fast.cross_entropy against real MLX (CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

mlx = pytest.importorskip("mlx.core")
RNG = np.random.default_rng(8)


def _fp8_inputs() -> list[np.ndarray]:
    boundaries = np.array([0, -0.0, 448, -448, 449, 464, 479.99, 480, 1e9, 2.0 ** -6,
                           2.0 ** -7, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 2.5 * 2.0 ** -9,
                           1.0625, 1.09375, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    random_bits = RNG.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    return [np.arange(65536, dtype=np.uint16).view(np.float16),          # every float16
            np.concatenate([boundaries, random_bits.view(np.float32)]),
            _widened(np.concatenate([boundaries, random_bits.view(np.float32)]))]


def _widened(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # NaN payloads
        return x.astype(np.float64)


@pytest.mark.parametrize("case", range(3))
def test_to_fp8_bits_equal_mlx(case):
    x = _fp8_inputs()[case]
    with np.errstate(invalid="ignore"):
        want = np.array(mlx.to_fp8(mlx.array(x)))
    got = mx.to_fp8(mx.array(x))
    assert got.dtype == mx.uint8
    np.testing.assert_array_equal(np.array(got), want)


def test_to_fp8_every_bfloat16():
    bits = np.arange(65536, dtype=np.uint16)
    want = np.array(mlx.to_fp8(mlx.array(bits).view(mlx.bfloat16)))
    np.testing.assert_array_equal(np.array(mx.to_fp8(mx.array(bits).view(mx.bfloat16))), want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_from_fp8_every_byte(dtype):
    u = np.arange(256, dtype=np.uint8).reshape(16, 16)
    got = mx.from_fp8(mx.array(u), getattr(mx, dtype))
    assert got.dtype == getattr(mx, dtype) and got.shape == (16, 16)
    if dtype == "float64":  # MLX's CPU build has float64 too; compare through float32
        want = np.array(mlx.from_fp8(mlx.array(u), mlx.float32))
    else:
        want = np.array(mlx.from_fp8(mlx.array(u), getattr(mlx, dtype)).astype(mlx.float32))
    np.testing.assert_array_equal(np.array(got.astype(mx.float32)), want)
    assert mx.from_fp8(mx.array(u)).dtype == mx.bfloat16  # the default
    # round trip: every finite fp8 value converts back to its own byte
    finite = u.reshape(-1)[(u.reshape(-1) & 0x7F) != 0x7F]
    back = mx.to_fp8(mx.from_fp8(mx.array(finite), mx.float32))
    np.testing.assert_array_equal(np.array(back), finite)


def test_fp8_errors_match_mlx():
    with pytest.raises(ValueError, match=r"\[to_fp8\] Only real floating types"):
        mx.to_fp8(mx.array([1, 2]))
    with pytest.raises(ValueError, match=r"\[from_fp8\] Input must have type uint8"):
        mx.from_fp8(mx.array([1, 2]))
    with pytest.raises(ValueError, match=r"\[from_fp8\] Only real floating types"):
        mx.from_fp8(mx.array([1, 2], mx.uint8), mx.int32)
    assert mx.from_fp8(mx.array(np.zeros((0, 3), np.uint8))).shape == (0, 3)


def test_depends():
    a, b = mx.array([1, 2]), mx.array([3.0])
    out = mx.depends(a, b)
    assert isinstance(out, mx.array) and out.tolist() == [1, 2] and out.dtype == mx.int32
    outs = mx.depends([a, a * 2], [b])
    assert isinstance(outs, list) and [o.tolist() for o in outs] == [[1, 2], [2, 4]]
    assert isinstance(mx.depends((a,), (b,)), list)
    assert mx.depends([], [b]) == []          # MLX 0.32.4 segfaults here
    for bad in ((1, b), (a, 1)):
        with pytest.raises(RuntimeError, match="bad_cast"):
            mx.depends(*bad)
    # gradients pass through to the inputs, never to the dependencies (as MLX)
    g = mx.grad(lambda x, y: mx.depends(x * x, y * y).sum(), argnums=(0, 1))(
        mx.array([3.0]), mx.array([2.0]))
    want = mlx.grad(lambda x, y: mlx.depends(x * x, y * y).sum(), argnums=(0, 1))(
        mlx.array([3.0]), mlx.array([2.0]))
    assert [v.tolist() for v in g] == [v.tolist() for v in want]
    # the dependency is evaluated with the output
    y = mx.array([1.0]) + 1
    z = mx.depends(a, y)
    mx.eval(z)
    assert y._data is not None


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fast_cross_entropy_matches_mlx(dtype):
    logits = RNG.standard_normal((4, 7, 33)).astype(np.float32) * 3
    targets = RNG.integers(0, 33, (4, 7))
    ours = mx.fast.cross_entropy(mx.array(logits).astype(getattr(mx, dtype)),
                                 mx.array(targets))
    theirs = mlx.fast.cross_entropy(mlx.array(logits).astype(getattr(mlx, dtype)),
                                    mlx.array(targets))
    assert ours.dtype == mx.float32 and ours.shape == (4, 7)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-6, atol=1e-6)
    g = mx.grad(lambda x: mx.fast.cross_entropy(x, mx.array(targets)).sum())(
        mx.array(logits))
    gm = mlx.grad(lambda x: mlx.fast.cross_entropy(x, mlx.array(targets)).sum())(
        mlx.array(logits))
    np.testing.assert_allclose(np.array(g), np.array(gm), rtol=1e-5, atol=1e-6)


def test_fast_cross_entropy_errors_match_mlx():
    logits, t = mx.array(np.zeros((2, 3, 5), np.float32)), mx.array([[0, 4, 2], [1, 1, 3]])
    cases = [((logits, t[0]), r"targets shape \(3\) does not match logits shape \(2,3,5\)"),
             ((logits, t.astype(mx.float32)), "targets must be integer class indices but got "
                                              "float32"),
             ((logits.astype(mx.int32), t), "unsupported logits type int32")]
    for args, msg in cases:
        with pytest.raises(ValueError, match=msg):
            mx.fast.cross_entropy(*args)
