"""pycudamlx.nn / optimizers on the GPU under strict mode: an MLP, a conv net and a
Transformer encoder give real MLX's CPU values with identical weights; losses, an optimizer
step, and a full training step once autodiff exists."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
import pycudamlx.optimizers as optim
from pycudamlx import _env
from pycudamlx.utils import tree_flatten, tree_map

M = pytest.importorskip("mlx.core")
MN = pytest.importorskip("mlx.nn")
MO = pytest.importorskip("mlx.optimizers")
from mlx.utils import tree_flatten as m_tree_flatten  # noqa: E402

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _gpu_default(gpu_device, monkeypatch):
    """Every op (parameter creation included) on the GPU, host fallbacks raising."""
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    previous = mx.default_device()
    mx.set_default_device(mx.gpu)
    yield
    mx.set_default_device(previous)


def _copy_weights(ours, theirs):
    ours.update(tree_map(lambda a: mx.array(np.array(a)), theirs.parameters(),
                         is_leaf=lambda a: isinstance(a, M.array)))


def _on_gpu(a):
    mx.eval(a)
    return type(a._data).__name__ == "GpuArray"


def _close(out, ref, tol=2e-4):
    assert _on_gpu(out)
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(np.array(out), np.array(ref), rtol=tol, atol=tol)


def _pair(build_theirs, build_ours):
    M.random.seed(0)
    theirs = build_theirs()
    ours = build_ours()
    _copy_weights(ours, theirs)
    return ours, theirs


def _x(*shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    return mx.array(x), M.array(x)


def test_mlp_forward_and_loss():
    def build(lib):
        return lambda: lib.Sequential(lib.Linear(12, 32), lib.GELU(), lib.LayerNorm(32),
                                      lib.Linear(32, 32), lib.SiLU(), lib.RMSNorm(32),
                                      lib.Linear(32, 10))

    ours, theirs = _pair(build(MN), build(nn))
    x, xm = _x(7, 12)
    out, ref = ours(x), theirs(xm)
    _close(out, ref)
    tgt = RNG.integers(0, 10, size=(7,)).astype(np.int32)
    _close(nn.losses.cross_entropy(out, mx.array(tgt), reduction="mean"),
           MN.losses.cross_entropy(ref, M.array(tgt), reduction="mean"))
    _close(nn.losses.cross_entropy(out, mx.array(tgt), label_smoothing=0.1),
           MN.losses.cross_entropy(ref, M.array(tgt), label_smoothing=0.1))


def test_conv_net_forward():
    def build(lib):
        return lambda: lib.Sequential(
            lib.Conv2d(3, 8, 3, padding=1), lib.BatchNorm(8), lib.ReLU(), lib.MaxPool2d(2),
            lib.Conv2d(8, 8, 3, stride=2, groups=2), lib.GroupNorm(2, 8), lib.AvgPool2d(2, 1),
            lib.Upsample(2, mode="linear"))

    ours, theirs = _pair(build(MN), build(nn))
    ours.eval(), theirs.eval()
    x, xm = _x(2, 16, 16, 3)
    _close(ours(x), theirs(xm), tol=5e-4)


def test_transformer_encoder_forward():
    def build(lib):
        return lambda: lib.TransformerEncoder(2, 32, 4, mlp_dims=48)

    ours, theirs = _pair(build(MN), build(nn))
    x, xm = _x(2, 9, 32)
    mask = MN.MultiHeadAttention.create_additive_causal_mask(9)
    _close(ours(x, mx.array(np.array(mask))), theirs(xm, mask), tol=1e-3)
    emb = nn.Embedding(50, 32)
    ids = mx.array(RNG.integers(0, 50, size=(2, 9)).astype(np.int32))
    assert _on_gpu(emb.as_linear(ours(emb(ids), None)))


def test_recurrent_and_dropout():
    ours, theirs = _pair(lambda: MN.LSTM(6, 8), lambda: nn.LSTM(6, 8))
    x, xm = _x(3, 5, 6)
    for a, b in zip(ours(x), theirs(xm)):
        _close(a, b)
    drop = nn.Dropout(0.5)
    assert _on_gpu(drop(x))


def test_optimizer_step_on_gpu():
    params = {"w": RNG.standard_normal((16, 8)).astype(np.float32),
              "b": RNG.standard_normal((8,)).astype(np.float32)}
    grads = tree_map(lambda a: a * 0.1 + 0.01, params)
    for name in ("SGD(0.1, momentum=0.9)", "AdamW(0.01)", "Adafactor()", "Muon(0.02)"):
        o, t = eval("optim." + name), eval("MO." + name)
        p, pm = tree_map(mx.array, params), tree_map(M.array, params)
        for _ in range(2):
            p = o.apply_gradients(tree_map(mx.array, grads), p)
            pm = t.apply_gradients(tree_map(M.array, grads), pm)
        for (k, a), (_, b) in zip(tree_flatten(p), m_tree_flatten(pm)):
            _close(a, b, tol=1e-4)
    clipped, norm = optim.clip_grad_norm(tree_map(mx.array, grads), 0.5)
    assert _on_gpu(norm) and _on_gpu(clipped["w"])


def _has_autodiff() -> bool:
    try:
        mx.value_and_grad
    except AttributeError:
        return False
    return True


@pytest.mark.skipif(not _has_autodiff(), reason="mx.value_and_grad not in pycudamlx.core yet")
def test_training_step_matches_mlx():
    def build(lib):
        return lambda: lib.Sequential(lib.Linear(6, 16), lib.ReLU(), lib.Linear(16, 3))

    ours, theirs = _pair(build(MN), build(nn))
    x, xm = _x(8, 6)
    y = RNG.integers(0, 3, size=(8,)).astype(np.int32)
    o, t = optim.Adam(0.01), MO.Adam(0.01)
    step_o = nn.value_and_grad(ours, lambda m, a, b: nn.losses.cross_entropy(m(a), b).mean())
    step_t = MN.value_and_grad(theirs, lambda m, a, b: MN.losses.cross_entropy(m(a), b).mean())
    for _ in range(3):
        loss_o, g_o = step_o(ours, x, mx.array(y))
        loss_t, g_t = step_t(theirs, xm, M.array(y))
        o.update(ours, g_o)
        t.update(theirs, g_t)
        _close(loss_o, loss_t, tol=1e-4)
    for (k, a), (_, b) in zip(tree_flatten(ours.parameters()),
                              m_tree_flatten(theirs.parameters())):
        _close(a, b, tol=1e-4)
