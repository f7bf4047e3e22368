"""Every op result is its own array, as in MLX: an op whose value equals its input (``x[...]``,
``x[:]``, a reshape to the same shape, astype to the same dtype, a no-op pad, ...) still returns
a new array object, so ``y = op(x); y[0] = v`` (or ``y += v``) changes y and never x.
Differential against real MLX's CPU build (which never aliases)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import keep_array_class  # noqa: F401 - autouse fixture


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


#: name -> f(M, x): an op whose result has x's value.
IDENTITY_OPS = {
    "x[...]": lambda M, x: x[...], "x[:]": lambda M, x: x[:], "x[::1]": lambda M, x: x[::1],
    "x[:, :]": lambda M, x: x[:, :], "x[..., :]": lambda M, x: x[..., :],
    "x[0:100]": lambda M, x: x[0:100], "x[:, ...]": lambda M, x: x[:, ...],
    "x[()]": lambda M, x: x[()],
    "x.reshape": lambda M, x: x.reshape(x.shape), "reshape": lambda M, x: M.reshape(x, x.shape),
    "reshape(-1)": lambda M, x: M.reshape(x, (2, -1)),
    "x.astype": lambda M, x: x.astype(x.dtype), "astype": lambda M, x: M.astype(x, x.dtype),
    "x.view": lambda M, x: x.view(x.dtype), "view": lambda M, x: M.view(x, x.dtype),
    "x.flatten(0, 0)": lambda M, x: x.flatten(0, 0), "flatten": lambda M, x: M.flatten(x, 1, 1),
    "unflatten": lambda M, x: M.unflatten(x, 0, (2,)),
    "x.squeeze": lambda M, x: x.squeeze(), "squeeze": lambda M, x: M.squeeze(x),
    "squeeze(())": lambda M, x: M.squeeze(x, ()), "expand_dims(())": lambda M, x:
    M.expand_dims(x, ()), "transpose": lambda M, x: M.transpose(x, (0, 1)),
    "moveaxis": lambda M, x: M.moveaxis(x, 0, 0), "swapaxes": lambda M, x: M.swapaxes(x, 1, 1),
    "broadcast_to": lambda M, x: M.broadcast_to(x, x.shape),
    "broadcast_arrays1": lambda M, x: M.broadcast_arrays(x)[0],
    "broadcast_arrays2": lambda M, x: M.broadcast_arrays(x, M.array(1.0))[0],
    "atleast_1d": lambda M, x: M.atleast_1d(x), "atleast_2d": lambda M, x: M.atleast_2d(x),
    "pad0": lambda M, x: M.pad(x, 0), "tile1": lambda M, x: M.tile(x, 1),
    "repeat1": lambda M, x: M.repeat(x, 1, axis=0),
    "concatenate1": lambda M, x: M.concatenate([x]), "split1": lambda M, x: M.split(x, 1)[0],
    "flip(())": lambda M, x: M.flip(x, ()), "roll0": lambda M, x: M.roll(x, 0, axis=1),
    "diff0": lambda M, x: M.diff(x, 0), "contiguous": lambda M, x: M.contiguous(x),
    "stop_gradient": lambda M, x: M.stop_gradient(x), "array": lambda M, x: M.array(x),
    "asarray": lambda M, x: M.asarray(x), "pos": lambda M, x: +x,
}

DTYPES = ["float32", "int32"]


def _start(M, dtype, lazy):
    x = M.array(np.arange(6).reshape(2, 3), getattr(M, dtype))
    if lazy:
        x = x + M.array(0, getattr(M, dtype))
    return x


def _try(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the test compares outcomes
        return e


@pytest.mark.parametrize("lazy", [False, True], ids=["evaluated", "lazy"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(IDENTITY_OPS))
def test_setitem_on_identity_result_leaves_input(mx, name, dtype, lazy):
    fn = IDENTITY_OPS[name]
    results = []
    for M in (mx, pm):
        x = _start(M, dtype, lazy)
        y = _try(lambda: fn(M, x))
        if isinstance(y, Exception):
            results.append(type(y))
            continue
        assert y is not x
        y[0] = 99
        y[..., :1] = 7
        results.append((np.array(x).tolist(), np.array(y).tolist()))
    assert results[1] == results[0]


@pytest.mark.parametrize("name", ["x[...]", "x[:]", "x.astype", "x.reshape", "pad0"])
def test_inplace_operator_on_identity_result(mx, name):
    fn = IDENTITY_OPS[name]
    out = []
    for M in (mx, pm):
        x = _start(M, "float32", False)
        y = fn(M, x)
        y += 1
        y *= 2
        out.append((np.array(x).tolist(), np.array(y).tolist()))
    assert out[1] == out[0]


def test_kv_cache_pattern(mx):
    """``y = x[...]; y[..., :d] = v`` (a cache update through a full slice) keeps x."""
    out = []
    for M in (mx, pm):
        x = M.zeros((2, 3, 4))
        y = x[...]
        y[..., :2] = M.ones((2, 3, 2))
        z = x[:]
        z[0] = 5
        out.append((np.array(x).tolist(), np.array(y).tolist(), np.array(z).tolist()))
    assert out[1] == out[0]


def test_gradient_through_identity_ops():
    """The fresh object stays on the graph: gradients flow through x[...] and astype."""
    def f(x):
        y = x[...].astype(pm.float32).reshape(x.shape)
        y[0] = 0.0
        return (y * x).sum()

    x = pm.array([1.0, 2.0, 3.0])
    g = pm.grad(f)(x)
    np.testing.assert_allclose(np.array(g), [0.0, 4.0, 6.0])


def test_gradient_after_eval_inside_trace():
    def f(x):
        y = x * 2
        pm.eval(y)
        return (y[...] * 3).sum()

    np.testing.assert_allclose(np.array(pm.grad(f)(pm.array([1.0, 2.0]))), [6.0, 6.0])
