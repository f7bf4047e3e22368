"""Autodiff on the GPU (strict mode: the backward pass must run as GPU kernels), compared with
the CPU backend, which tests/test_autodiff.py holds to real MLX."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytest.importorskip("mlx.core")  # test_autodiff's cases compare with MLX on import

from test_autodiff import CASES, _mlp, _transformer_loss  # noqa: E402

pytestmark = pytest.mark.gpu

rng = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _host(x):
    if isinstance(x, (list, tuple)):
        return [_host(v) for v in x]
    if isinstance(x, dict):
        return {k: _host(v) for k, v in x.items()}
    if x.dtype in (mx.float16, mx.bfloat16):
        x = x.astype(mx.float32, stream=mx.cpu)
    return np.array(x)


def _grads_on(device, fn, inputs, **kw):
    with mx.stream(device):
        argnums = tuple(range(len(inputs)))
        g = mx.grad(lambda *a: fn(mx, *a), argnums=argnums, **kw)(*[mx.array(x) for x in inputs])
        mx.eval(g)
        return _host(g)


def _assert_close(a, b, rtol=2e-4, atol=2e-5):
    if isinstance(a, list):
        for x, y in zip(a, b):
            _assert_close(x, y, rtol, atol)
    elif isinstance(a, dict):
        for k in a:
            _assert_close(a[k], b[k], rtol, atol)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


GPU_CASES = [c for c in CASES if c[0] not in ("eval_inside",)]


@pytest.mark.parametrize("name,fn,inputs", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_grad_on_gpu_matches_cpu(name, fn, inputs):
    _assert_close(_grads_on(mx.gpu, fn, inputs), _grads_on(mx.cpu, fn, inputs))


def test_eval_inside_traced_function_on_gpu():
    def f(x):
        y = mx.exp(x)
        mx.eval(y)
        if (y.sum() > 0).item():
            y = y * 2
        return mx.sum(y * x)

    x = rng.uniform(-1, 1, 100).astype(np.float32)
    with mx.stream(mx.gpu):
        g = _host(mx.grad(f)(mx.array(x)))
    np.testing.assert_allclose(g, 2 * np.exp(x) * (1 + x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_mlp_step_on_gpu(dtype):
    d = getattr(mx, dtype)
    params = {"l1": {"w": rng.normal(0, 0.3, (64, 32)), "b": rng.normal(0, 0.1, 64)},
              "l2": {"w": rng.normal(0, 0.3, (10, 64)), "b": rng.normal(0, 0.1, 10)}}
    x = rng.normal(size=(128, 32)).astype(np.float32)
    y = rng.integers(0, 10, 128).astype(np.int32)

    def run(device):
        with mx.stream(device):
            p = {k: {n: mx.array(v.astype(np.float32)).astype(d) for n, v in l.items()}
                 for k, l in params.items()}
            loss, g = mx.value_and_grad(lambda p, x, y: _mlp(mx, p, x, y))(
                p, mx.array(x).astype(d), mx.array(y))
            mx.eval(loss, g)
            assert all(v.dtype is d for l in g.values() for v in l.values())
            return float(loss.astype(mx.float32).item()), _host(g)

    lg, gg = run(mx.gpu)
    lc, gc = run(mx.cpu)
    tol = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 8e-2}[dtype]
    assert abs(lg - lc) <= tol * max(1.0, abs(lc))
    _assert_close(gg, gc, rtol=tol, atol=tol)


def test_attention_block_grad_on_gpu():
    q = rng.normal(size=(2, 4, 16, 64)).astype(np.float32)
    k = rng.normal(size=(2, 2, 16, 64)).astype(np.float32)
    v = rng.normal(size=(2, 2, 16, 64)).astype(np.float32)
    w = rng.normal(size=(64,)).astype(np.float32)

    def f(m, q, k, v, w):
        q = m.fast.rope(m.fast.rms_norm(q, w, 1e-5), 64, traditional=False, base=1e4,
                        scale=1.0, offset=0)
        o = m.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal")
        return m.sum(m.fast.layer_norm(o, w, None, 1e-5) ** 2)

    _assert_close(_grads_on(mx.gpu, f, [q, k, v, w]), _grads_on(mx.cpu, f, [q, k, v, w]),
                  rtol=2e-3, atol=2e-3)


def test_grad_of_grad_and_jvp_on_gpu():
    x = rng.uniform(-1, 1, (8, 8)).astype(np.float32)

    def run(device):
        with mx.stream(device):
            a = mx.array(x)
            hv = mx.grad(lambda a: mx.sum(mx.grad(lambda b: mx.sum(mx.tanh(b @ b)))(a) ** 2))(a)
            _, (jv,) = mx.jvp(lambda b: mx.softmax(b @ b, axis=-1), [a], [mx.ones_like(a)])
            mx.eval(hv, jv)
            return [_host(hv), _host(jv)]

    _assert_close(run(mx.gpu), run(mx.cpu), rtol=1e-3, atol=1e-4)


def test_transformer_block_on_gpu():
    D, V = 64, 100
    shapes = {"emb": (V, D), "ln1_w": (D,), "ln1_b": (D,), "qkv": (3 * D, D), "out": (D, D),
              "ln2_w": (D,), "up": (4 * D, D), "down": (D, 4 * D), "head": (V, D)}
    init = {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in shapes.items()}
    tokens = rng.integers(0, V, (4, 32)).astype(np.int32)
    targets = rng.integers(0, V, (4, 32)).astype(np.int32)

    def run(device):
        with mx.stream(device):
            loss, g = mx.value_and_grad(lambda p, a, b: _transformer_loss(mx, p, a, b))(
                {k: mx.array(v) for k, v in init.items()}, mx.array(tokens), mx.array(targets))
            mx.eval(loss, g)
            return float(loss.item()), _host(g)

    lg, gg = run(mx.gpu)
    lc, gc = run(mx.cpu)
    assert abs(lg - lc) < 1e-4 * max(1.0, abs(lc))
    _assert_close(gg, gc, rtol=2e-3, atol=2e-5)
