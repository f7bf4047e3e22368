"""mx.fast.gated_delta_update (Qwen3-Next's gated delta rule) against real MLX 0.32.4, and the
mlx.nn.layers.convolution_transpose module path."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import keep_array_class  # noqa: F401 - autouse fixture


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


def _inputs(B, T, Hk, Hv, Dk, Dv, seed=0, per_key_gamma=False):
    rng = np.random.default_rng(seed)
    g_shape = (B, T, Hv, Dk) if per_key_gamma else (B, T, Hv)
    return dict(
        q=rng.standard_normal((B, T, Hk, Dk)).astype(np.float32),
        k=(rng.standard_normal((B, T, Hk, Dk)) * 0.3).astype(np.float32),
        v=rng.standard_normal((B, T, Hv, Dv)).astype(np.float32),
        gamma=rng.uniform(0.5, 1.0, g_shape).astype(np.float32),
        beta=rng.uniform(0, 1, (B, T, Hv)).astype(np.float32),
        state=rng.standard_normal((B, Hv, Dv, Dk)).astype(np.float32),
        mask=rng.uniform(size=(B, T)) > 0.3)


@pytest.mark.parametrize("shape", [(2, 5, 2, 4, 8, 6), (1, 1, 3, 3, 4, 4), (1, 7, 1, 2, 16, 8)])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matches_mlx(mx, shape, with_state, with_mask, dtype):
    d = _inputs(*shape)
    out = []
    for M in (mx, pm):
        a = {n: M.array(x).astype(getattr(M, dtype)) if x.dtype != np.bool_ else M.array(x)
             for n, x in d.items()}
        y, s = M.fast.gated_delta_update(
            a["q"], a["k"], a["v"], a["gamma"], a["beta"],
            a["state"] if with_state else None, a["mask"] if with_mask else None)
        out.append((str(y.dtype).rsplit(".", 1)[1], y.shape, s.shape,
                    np.array(y.astype(M.float32)), np.array(s.astype(M.float32))))
    theirs, ours = out
    assert ours[:3] == theirs[:3]
    tol = 1e-4 if dtype == "float32" else 3e-2
    np.testing.assert_allclose(ours[3], theirs[3], rtol=tol, atol=tol)
    np.testing.assert_allclose(ours[4], theirs[4], rtol=tol, atol=tol)


def test_per_key_gamma_matches_mlx(mx):
    d = _inputs(2, 3, 2, 2, 4, 5, per_key_gamma=True)
    res = [M.fast.gated_delta_update(*(M.array(d[n]) for n in ("q", "k", "v", "gamma", "beta")))
           for M in (mx, pm)]
    for a, b in zip(*res):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-4, atol=1e-4)


def test_bad_inputs_raise_clearly(mx):
    d = _inputs(2, 3, 2, 4, 4, 5)
    q, k, v, g, b = (pm.array(d[n]) for n in ("q", "k", "v", "gamma", "beta"))
    with pytest.raises(IndexError):  # MLX: IndexError (SmallVector out of range)
        pm.fast.gated_delta_update(q[0], k[0], v[0], g[0], b[0])
    with pytest.raises(ValueError, match="multiple of Hk"):
        pm.fast.gated_delta_update(q, k, v[:, :, :3], g[:, :, :3], b[:, :, :3])
    with pytest.raises(TypeError, match="incompatible function arguments"):
        pm.fast.gated_delta_update(d["q"], k, v, g, b)


def test_gradient_flows():
    d = _inputs(1, 3, 1, 1, 4, 3)
    args = [pm.array(d[n]) for n in ("q", "k", "v", "gamma", "beta")]
    g = pm.grad(lambda q: pm.fast.gated_delta_update(q, *args[1:])[0].sum())(args[0])
    assert g.shape == args[0].shape and np.isfinite(np.array(g)).all()


def test_convolution_transpose_module_path():
    from pycudamlx.nn.layers import convolution, convolution_transpose as ct

    assert ct.ConvTranspose1d is convolution.ConvTranspose1d
    assert {"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"} <= set(dir(ct))
    layer = ct.ConvTranspose2d(2, 3, kernel_size=3)
    assert layer(pm.zeros((1, 5, 5, 2))).shape == (1, 7, 7, 3)
