"""Autodiff on the GPU under strict mode (every forward and backward node runs as a GPU kernel),
compared with the same computation by pycudamlx on the CPU stream, which tests/test_autodiff.py
holds to real MLX. Needs no MLX: the cases come from tests/_autodiff_cases.py.

float32 GEMMs use TF32 on the GPU by default; the fixture turns it off (the flag is read per
call) so float32 tolerances can stay tight. float16/bfloat16 compare with looser ones."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

from _autodiff_cases import (CASES, COMPLEX_CASES, FAST_HALF, FFT_CASES, GRAD_OF_GRAD, mlp_loss,
                             transformer_loss)

pytestmark = pytest.mark.gpu

rng = np.random.default_rng(5)

#: float32 on a GPU (TF32 off): other summation orders and fast transcendental functions.
RTOL, ATOL = 1e-3, 1e-4
HALF_TOL = {"float16": 2e-2, "bfloat16": 8e-2}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    yield


def _assert_on_gpu(tree):
    """Every array of ``tree`` is evaluated into GPU memory."""
    if isinstance(tree, (list, tuple)):
        for t in tree:
            _assert_on_gpu(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            _assert_on_gpu(t)
    elif isinstance(tree, mx.array):
        mx.eval(tree)
        assert type(tree._data).__name__ == "GpuArray", type(tree._data)


def _host(x):
    if isinstance(x, (list, tuple)):
        return [_host(v) for v in x]
    if isinstance(x, dict):
        return {k: _host(v) for k, v in x.items()}
    if x is None:
        return None
    if x.dtype in (mx.float16, mx.bfloat16):
        x = x.astype(mx.float32, stream=mx.cpu)
    return np.array(x)


def _on(device, compute):
    """compute() under ``device``'s default stream, evaluated; on the GPU the results must lie
    in GPU memory. Returns them as numpy trees."""
    with mx.stream(device):
        out = compute()
        mx.eval(out)
        if device is mx.gpu:
            _assert_on_gpu(out)
        return _host(out)


def _both(compute):
    """(GPU result, CPU result) of the same computation."""
    return _on(mx.gpu, compute), _on(mx.cpu, compute)


def _assert_close(a, b, rtol=RTOL, atol=ATOL):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_close(x, y, rtol, atol)
    elif isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _assert_close(a[k], b[k], rtol, atol)
    elif a is None:
        assert b is None
    else:
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _grads(fn, inputs, dtype=None):
    def compute():
        argnums = tuple(range(len(inputs)))
        arrays = [mx.array(x) if dtype is None else mx.array(x).astype(dtype) for x in inputs]
        return mx.grad(lambda *a: fn(mx, *a), argnums=argnums)(*arrays)
    return compute


# eval_inside calls mx.eval inside the traced function: its own test below, with numpy's value.
GPU_CASES = [c for c in CASES if c[0] != "eval_inside"]


@pytest.mark.parametrize("name,fn,inputs", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_grad_on_gpu_matches_cpu(name, fn, inputs):
    _assert_close(*_both(_grads(fn, inputs)))


@pytest.mark.parametrize("name,fn,inputs", GRAD_OF_GRAD, ids=[c[0] for c in GRAD_OF_GRAD])
def test_grad_of_grad_on_gpu(name, fn, inputs):
    def compute():
        return mx.grad(lambda x: mx.sum(mx.grad(lambda y: fn(mx, y))(x) ** 2))(
            mx.array(inputs[0]))
    _assert_close(*_both(compute))


# FFTs have no GPU kernel yet: strict mode refuses their host fallback, so they run apart.
GPU_COMPLEX = [c for c in COMPLEX_CASES if c[0] != "fft"]


@pytest.mark.parametrize("name,fn", GPU_COMPLEX, ids=[c[0] for c in GPU_COMPLEX])
def test_complex_gradients_on_gpu(name, fn):
    z = (rng.uniform(-2, 2, 4) + 1j * rng.uniform(-2, 2, 4)).astype(np.complex64)
    _assert_close(*_both(lambda: mx.grad(lambda a: fn(mx, a))(mx.array(z))))


FFT_ON_GPU = FFT_CASES + [c for c in COMPLEX_CASES if c[0] == "fft"]


@pytest.mark.parametrize("name,fn", FFT_ON_GPU, ids=[c[0] for c in FFT_ON_GPU])
def test_fft_gradients_on_gpu_host_fallback(name, fn, monkeypatch):
    """The FFT nodes fall back to the host (documented; no cuFFT path yet), every other node of
    the backward pass runs as a kernel; strict mode is off for this one test only."""
    monkeypatch.setattr(_env, "STRICT_GPU", False)
    if name == "fft":
        x = (rng.uniform(-2, 2, 4) + 1j * rng.uniform(-2, 2, 4)).astype(np.complex64)
    else:
        x = rng.uniform(-2, 2, 6).astype(np.float32)
    _assert_close(*_both(lambda: mx.grad(lambda a: fn(mx, a))(mx.array(x))))


def test_eval_inside_traced_function_on_gpu():
    def f(x):
        y = mx.exp(x)
        mx.eval(y)
        if (y.sum() > 0).item():
            y = y * 2
        return mx.sum(y * x)

    x = rng.uniform(-1, 1, 100).astype(np.float32)
    g = _on(mx.gpu, lambda: mx.grad(f)(mx.array(x)))
    np.testing.assert_allclose(g, 2 * np.exp(x) * (1 + x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gradient_dtype_follows_primal_on_gpu(dtype):
    d = getattr(mx, dtype)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)

    def compute():
        g = mx.grad(lambda a: mx.sum(mx.exp(a) * a) / 10)(mx.array(x).astype(d))
        assert g.dtype is d
        return g

    tol = HALF_TOL.get(dtype, RTOL)
    _assert_close(*_both(compute), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,fn,shapes", FAST_HALF, ids=[c[0] for c in FAST_HALF])
def test_fast_ops_half_precision_gradients_on_gpu(name, fn, shapes, dtype):
    d = getattr(mx, dtype)
    ins = [rng.normal(size=s).astype(np.float32) for s in shapes]

    def compute():
        g = mx.grad(lambda *a: fn(mx, *a), argnums=(0, 1, 2))(
            *[mx.array(i).astype(d) for i in ins])
        assert all(v.dtype is d for v in g)
        return g

    for a, b in zip(*_both(compute)):
        scale = 1e-3 + float(np.max(np.abs(b)))
        assert float(np.max(np.abs(a - b))) <= 2e-2 * scale


def test_integer_and_bool_inputs_on_gpu():
    def compute():
        i = mx.array([1, 2], mx.int32)
        x = mx.array([1.0, 2.0, 3.0])
        return [mx.grad(lambda a: (a * a).sum())(i), mx.grad(lambda a: (a * 1.5).sum())(i),
                mx.grad(lambda a: a.astype(mx.float32).sum())(mx.array([True, False])),
                mx.grad(lambda a: mx.sum(a > 1))(x),
                mx.grad(lambda a: (a.astype(mx.int32) * 2).sum())(x)]

    gpu, cpu = _both(compute)
    _assert_close(gpu, cpu, rtol=0, atol=0)


def test_trees_argnums_argnames_on_gpu():
    p = {"w": rng.normal(size=(3, 2)).astype(np.float32),
         "b": [rng.normal(size=2).astype(np.float32), (rng.normal(size=2).astype(np.float32),)]}
    x = rng.normal(size=(4, 3)).astype(np.float32)

    def loss(params, x, scale=1.0):
        h = x @ params["w"] + params["b"][0] * params["b"][1][0]
        return mx.mean(h * h) * scale

    def conv(tree):
        if isinstance(tree, dict):
            return {k: conv(v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(conv(v) for v in tree)
        return mx.array(tree)

    for kw in ({}, {"argnums": (0, 1)}, {"argnames": "scale"},
               {"argnums": 0, "argnames": ["scale"]}):
        _assert_close(*_both(lambda: mx.value_and_grad(loss, **kw)(conv(p), mx.array(x),
                                                                    scale=mx.array(2.0))))


def test_vjp_and_jvp_on_gpu():
    xs, ys, t1, t2 = (rng.uniform(-2, 2, 3).astype(np.float32) for _ in range(4))
    a, t = rng.uniform(-2, 2, (2, 3)).astype(np.float32), rng.uniform(-2, 2, (2, 3)).astype(
        np.float32)

    def f(x, y):
        return [mx.sin(x) * y, mx.sum(x * y)]

    def compute():
        o1, v1 = mx.vjp(f, [mx.array(xs), mx.array(ys)], [mx.ones(3), mx.array(2.0)])
        o2, j2 = mx.jvp(f, [mx.array(xs), mx.array(ys)], [mx.array(t1), mx.array(t2)])
        # jvp through matmul, softmax and a gather.
        _, j3 = mx.jvp(lambda b: [mx.softmax(b @ b.T, axis=-1)[mx.array([1, 0])]],
                       [mx.array(a)], [mx.array(t)])
        # Cotangents for inputs the output does not depend on: zeros.
        _, v4 = mx.vjp(lambda x, y: x * 2, [mx.array(xs), mx.array(ys)], [mx.ones(3)])
        return [o1, v1, o2, j2, j3, v4]

    _assert_close(*_both(compute))


def test_grad_of_grad_and_jvp_on_gpu():
    x = rng.uniform(-1, 1, (8, 8)).astype(np.float32)

    def compute():
        a = mx.array(x)
        hv = mx.grad(lambda a: mx.sum(mx.grad(lambda b: mx.sum(mx.tanh(b @ b)))(a) ** 2))(a)
        _, (jv,) = mx.jvp(lambda b: mx.softmax(b @ b, axis=-1), [a], [mx.ones_like(a)])
        return [hv, jv]

    _assert_close(*_both(compute))


def test_stop_gradient_on_gpu():
    def compute():
        c, x = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
        return [mx.grad(lambda x: mx.sum(mx.stop_gradient(x) * x + c * x))(x),
                mx.grad(lambda x: mx.sum(c * 3))(x)]

    gpu, cpu = _both(compute)
    _assert_close(gpu, cpu, rtol=0, atol=0)
    assert gpu[0].tolist() == [4.0, 6.0] and gpu[1].tolist() == [0.0, 0.0]


def test_custom_function_on_gpu():
    @mx.custom_function
    def f(x, y):
        return mx.sin(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return cotangent * 10, None

    @f.jvp
    def f_jvp(primals, tangents):
        dx, dy = tangents
        return dx * 100 + dy

    def gather():
        @mx.custom_function
        def g(shards):
            return [s * 2 for s in shards]

        @g.vjp
        def g_vjp(shards, cotangents, outputs):
            return [c * 10 + s for c, s in zip(cotangents, shards)]

        return g

    shards = [rng.uniform(-2, 2, 3).astype(np.float32), rng.uniform(-2, 2, 2).astype(np.float32)]

    def compute():
        x, y = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
        gx, gy = mx.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, y)
        _, (t,) = mx.jvp(f, [x, y], [mx.ones(2), mx.ones(2)])
        g = gather()
        gs = mx.grad(lambda a: sum(mx.sum(o * o) for o in g(a)))([mx.array(s) for s in shards])
        return [gx, gy, t, f(x, y), gs]

    gpu, cpu = _both(compute)
    _assert_close(gpu, cpu)
    assert gpu[0].tolist() == [10.0, 10.0] and gpu[1].tolist() == [0.0, 0.0]
    assert gpu[2].tolist() == [101.0, 101.0]
    for got, s in zip(gpu[4], shards):
        np.testing.assert_allclose(got, 10 * 2 * (2 * s) + s, rtol=1e-6)


def test_checkpoint_on_gpu():
    w = rng.uniform(-2, 2, (4, 4)).astype(np.float32)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)

    def block(w, x):
        return mx.tanh(x @ w) * mx.sigmoid(x)

    def compute():
        ck = mx.checkpoint(block)
        plain = mx.grad(lambda w, x: mx.sum(block(w, x) ** 2), argnums=(0, 1))(mx.array(w),
                                                                                mx.array(x))
        ckd = mx.grad(lambda w, x: mx.sum(ck(w, x) ** 2), argnums=(0, 1))(mx.array(w),
                                                                          mx.array(x))
        return [plain, ckd]

    gpu, cpu = _both(compute)
    _assert_close(gpu, cpu)
    _assert_close(gpu[1], gpu[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_mlp_step_on_gpu(dtype):
    d = getattr(mx, dtype)
    params = {"l1": {"w": rng.normal(0, 0.3, (64, 32)), "b": rng.normal(0, 0.1, 64)},
              "l2": {"w": rng.normal(0, 0.3, (10, 64)), "b": rng.normal(0, 0.1, 10)}}
    x = rng.normal(size=(128, 32)).astype(np.float32)
    y = rng.integers(0, 10, 128).astype(np.int32)

    def compute():
        p = {k: {n: mx.array(v.astype(np.float32)).astype(d) for n, v in l.items()}
             for k, l in params.items()}
        loss, g = mx.value_and_grad(lambda p, x, y: mlp_loss(mx, p, x, y))(
            p, mx.array(x).astype(d), mx.array(y))
        assert all(v.dtype is d for l in g.values() for v in l.values())
        return [loss, g]

    (lg, gg), (lc, gc) = _both(compute)
    tol = HALF_TOL.get(dtype, RTOL)
    assert abs(float(lg) - float(lc)) <= tol * max(1.0, abs(float(lc)))
    _assert_close(gg, gc, rtol=tol, atol=tol)


def test_mlp_training_steps_on_gpu():
    """Three SGD steps: parameters updated on the device feed the next step's graph."""
    shapes = {"l1": {"w": (16, 5), "b": (16,)}, "l2": {"w": (3, 16), "b": (3,)}}
    init = {k: {n: rng.normal(0, 0.3, s).astype(np.float32) for n, s in v.items()}
            for k, v in shapes.items()}
    x = rng.normal(size=(8, 5)).astype(np.float32)
    y = rng.integers(0, 3, 8).astype(np.int32)

    def compute():
        p = {k: {n: mx.array(a) for n, a in v.items()} for k, v in init.items()}
        step = mx.value_and_grad(lambda p, x, y: mlp_loss(mx, p, x, y))
        losses = []
        for _ in range(3):
            loss, g = step(p, mx.array(x), mx.array(y))
            p = {k: {n: p[k][n] - 0.5 * g[k][n] for n in v} for k, v in p.items()}
            mx.eval(p)
            losses.append(loss)
        return [losses, p]

    _assert_close(*_both(compute))


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

    _assert_close(*_both(_grads(f, [q, k, v, w])), rtol=2e-3, atol=2e-3)


def test_transformer_block_on_gpu():
    D, V = 64, 100
    shapes = {"emb": (V, D), "ln1_w": (D,), "ln1_b": (D,), "qkv": (3 * D, D), "out": (D, D),
              "ln2_w": (D,), "up": (4 * D, D), "down": (D, 4 * D), "head": (V, D)}
    init = {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in shapes.items()}
    tokens = rng.integers(0, V, (4, 32)).astype(np.int32)
    targets = rng.integers(0, V, (4, 32)).astype(np.int32)

    def compute():
        return list(mx.value_and_grad(lambda p, a, b: transformer_loss(mx, p, a, b))(
            {k: mx.array(v) for k, v in init.items()}, mx.array(tokens), mx.array(targets)))

    (lg, gg), (lc, gc) = _both(compute)
    assert abs(float(lg) - float(lc)) < 1e-4 * max(1.0, abs(float(lc)))
    _assert_close(gg, gc, rtol=2e-3, atol=2e-5)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_linear_weight_gradients_are_row_major_on_gpu(dtype):
    # x (B, T, K) @ W.T: W's gradient is one GEMM in W's layout, which the optimizer's fused
    # update then reads as a dense array.
    x = rng.normal(size=(3, 37, 29)).astype(np.float32)
    w = rng.normal(size=(45, 29)).astype(np.float32)
    d = getattr(mx, dtype)

    def compute():
        g = mx.grad(lambda w: mx.sum((mx.array(x).astype(d) @ w.T).astype(mx.float32)
                                     * mx.arange(45)))(mx.array(w).astype(d))
        mx.eval(g)
        if g._data is not None and not isinstance(g._data, np.ndarray):
            assert g._data.is_contiguous()
        return g

    tol = HALF_TOL.get(dtype, RTOL)
    _assert_close(*_both(compute), rtol=tol, atol=tol * 30)
