"""mx.vmap on the GPU under strict mode: every batched node (rules and per-entry loops) runs as a
kernel and lands in GPU memory, with the values pycudamlx computes on the CPU stream (which
tests/test_vmap.py holds to real MLX). Needs no MLX: the cases come from tests/_vmap_cases.py.

float32 GEMMs use TF32 on the GPU by default; the fixture turns it off (the flag is read per
call) so float32 tolerances stay tight; the large batched MLP runs with TF32 on, as by default."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env
from pycudamlx.transforms import vmap_rules

from _vmap_cases import CASES, LOOP_CASES, LOW_PRECISION_IDS, _data, _mk

pytestmark = pytest.mark.gpu

#: float32 on a GPU (TF32 off) and float16/bfloat16.
TOL, LOW_TOL = 1e-4, 3e-2

# FFTs have no GPU kernel yet (strict mode refuses their host fallback): a test of their own.
_HOST_ONLY = {"fft"}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    yield


def _on_gpu(tree):
    if isinstance(tree, (list, tuple)):
        for t in tree:
            _on_gpu(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            _on_gpu(t)
    else:
        mx.eval(tree)
        assert type(tree._data).__name__ == "GpuArray", type(tree._data)


def _to_numpy(x):
    if x.dtype is mx.bfloat16:
        x = x.astype(mx.float32, stream=mx.cpu)
    return np.array(x)


def _compare(ours, ref, tol):
    """Same tree structure, shapes and dtypes; values within tol (exact for integers/bools)."""
    if isinstance(ref, (list, tuple)):
        assert type(ours) is type(ref) and len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _compare(o, r, tol)
        return
    if isinstance(ref, dict):
        assert isinstance(ours, dict) and list(ours) == list(ref)
        for k in ref:
            _compare(ours[k], ref[k], tol)
        return
    assert isinstance(ours, mx.array) and isinstance(ref, mx.array), (type(ours), type(ref))
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert ours.dtype is ref.dtype, (ours.dtype, ref.dtype)
    a, b = _to_numpy(ours), _to_numpy(ref)
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(a, b)


def _vmap_both(fn, values, specs, in_axes, out_axes):
    """fn(mx, *args) under mx.vmap on the GPU (results checked to be in GPU memory) and on the
    CPU stream, from the same data."""
    with mx.stream(mx.cpu):
        ref = mx.vmap(lambda *a: fn(mx, *a), in_axes, out_axes)(
            *[_mk(mx, v, d) for v, (_, d) in zip(values, specs)])
        mx.eval(ref)
    with mx.stream(mx.gpu):
        ours = mx.vmap(lambda *a: fn(mx, *a), in_axes, out_axes)(
            *[_mk(mx, v, d) for v, (_, d) in zip(values, specs)])
        _on_gpu(ours)
    return ours, ref


GPU_CASES = [c for c in CASES if c[0] not in _HOST_ONLY]


@pytest.mark.parametrize("name,fn,specs,in_axes,out_axes,needs_loop",
                         [pytest.param(*c, id=c[0]) for c in GPU_CASES])
def test_vmap_gpu(name, fn, specs, in_axes, out_axes, needs_loop, monkeypatch):
    if not needs_loop:  # the batching rules must cover it on the GPU as on the CPU
        def no_loop(node, *args):
            raise AssertionError(f"looped over {type(node._prim).__name__}")

        monkeypatch.setattr(vmap_rules, "_loop", no_loop)
    values = [_data(s, d) for s, d in specs]
    ours, ref = _vmap_both(fn, values, specs, in_axes, out_axes)
    _compare(ours, ref, LOW_TOL if name in LOW_PRECISION_IDS else TOL)


@pytest.mark.parametrize("name,fn,specs,in_axes,out_axes,needs_loop",
                         [pytest.param(*c, id=c[0]) for c in GPU_CASES[::3]])
def test_vmap_gpu_fallback_loop(name, fn, specs, in_axes, out_axes, needs_loop, monkeypatch):
    """With no batching rule at all, the per-entry loop's slices, stacks and ops run as kernels."""
    monkeypatch.setattr(vmap_rules, "_RULES", {})
    values = [_data(s, d) for s, d in specs]
    ours, ref = _vmap_both(fn, values, specs, in_axes, out_axes)
    _compare(ours, ref, LOW_TOL if name in LOW_PRECISION_IDS else TOL)


def test_vmap_gpu_fft_host_fallback(monkeypatch):
    """FFT nodes fall back to the host (documented; no cuFFT path yet): strict mode off here."""
    monkeypatch.setattr(_env, "STRICT_GPU", False)
    for name, fn, specs, in_axes, out_axes, _ in CASES:
        if name in _HOST_ONLY:
            values = [_data(s, d) for s, d in specs]
            _compare(*_vmap_both(fn, values, specs, in_axes, out_axes), TOL)


# These cases pin their linalg ops to the CPU stream (no GPU factorizations): their results
# are host arrays by design, so only their values are checked.
_CPU_PINNED = {"qr", "inv_cholesky", "eigh_svd"}


@pytest.mark.parametrize("name,fn,specs,in_axes", [pytest.param(*c, id=c[0]) for c in LOOP_CASES])
def test_vmap_gpu_equals_loop(name, fn, specs, in_axes):
    with mx.stream(mx.gpu):
        values = [mx.array(_data(s, d)) for s, d in specs]
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(values)
        size = next(v.shape[0] for v, ax in zip(values, axes) if ax is not None)
        expected = np.stack([np.array(fn(*[v[b] if ax is not None else v
                                           for v, ax in zip(values, axes)]))
                             for b in range(size)])
        got = mx.vmap(fn, in_axes=in_axes)(*values)
        if name not in _CPU_PINNED:
            _on_gpu(got)
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5, atol=1e-5)


def test_vmap_gpu_setitem_divmod_as_strided():
    x = _data((4, 6))
    a = np.random.default_rng(3).integers(-9, 9, size=(3, 4)).astype(np.int32)
    b = np.random.default_rng(4).integers(1, 5, size=(4,)).astype(np.int32)

    def setitem(v):
        c = v * 1
        c[1] = 5.0
        return c

    with mx.stream(mx.gpu):
        s = mx.vmap(setitem)(mx.array(x))
        q, r = mx.vmap(lambda u, v: mx.divmod(u, v), in_axes=(0, None))(mx.array(a), mx.array(b))
        st = mx.vmap(lambda v: mx.as_strided(v, (3, 2), (1, 2)))(mx.array(x))
        _on_gpu([s, q, r, st])
    expected = x.copy()
    expected[:, 1] = 5.0  # every entry updated (MLX 0.32.4 updates only the first)
    np.testing.assert_array_equal(np.array(s), expected)
    np.testing.assert_array_equal(np.array(q), a // b)
    np.testing.assert_array_equal(np.array(r), a % b)
    np.testing.assert_array_equal(
        np.array(st), np.stack([np.lib.stride_tricks.as_strided(row, (3, 2), (4, 8))
                                for row in x]))


def _gpu_and_cpu(make):
    """make() on the GPU (in GPU memory) and on the CPU stream."""
    with mx.stream(mx.gpu):
        ours = make()
        _on_gpu(ours)
    with mx.stream(mx.cpu):
        ref = make()
        mx.eval(ref)
    return ours, ref


def test_vmap_gpu_trees_of_arguments():
    x, y = _data((2, 3)), _data((4, 3))
    _compare(*_gpu_and_cpu(lambda: mx.vmap(lambda d: d["a"] * d["b"], in_axes={"a": 1, "b": None})(
        {"a": mx.array(x), "b": mx.array(x[:, 0])})), TOL)
    for in_axes in ((0, 1), ([0, None], 1)):
        _compare(*_gpu_and_cpu(lambda: mx.vmap(lambda pair, z: pair[0] + pair[1] * z,
                                               in_axes=in_axes)(
            [mx.array(y.T), mx.array(y.T)], mx.array(y))), TOL)


def test_vmap_gpu_nested():
    a, b = _data((5, 3, 4)), _data((2, 3))

    def make():
        f = mx.vmap(mx.vmap(lambda x, y: x @ y, in_axes=(None, 0)), in_axes=(0, None))
        g = mx.vmap(lambda x: mx.vmap(lambda y: mx.sum(y * x))(mx.ones((4, 2))))
        h = mx.vmap(mx.vmap(lambda x: mx.softmax(x, axis=0), in_axes=1, out_axes=1),
                    in_axes=2, out_axes=0)
        return [f(mx.array(b), mx.array(a)), g(mx.array(a[:, :, :2])), h(mx.array(a))]

    _compare(*_gpu_and_cpu(make), TOL)


def test_vmap_gpu_closure_constant():
    w, x = _data((4, 3)), _data((5, 4))

    def make():
        wa = mx.array(w)

        def inner(v):
            scale = (wa * 2).sum().item()  # evaluating a constant inside is allowed
            return (v @ wa) * scale
        return mx.vmap(inner)(mx.array(x))

    _compare(*_gpu_and_cpu(make), 1e-3)


def test_vmap_gpu_random_keys():
    def make():
        keys = mx.random.split(mx.random.key(3), 4)
        return [mx.vmap(lambda k: mx.random.uniform(shape=(3,), key=k))(keys),
                mx.vmap(lambda k: mx.random.normal(shape=(2, 2), key=k))(keys)]

    _compare(*_gpu_and_cpu(make), 1e-6)


def test_vmap_gpu_large_batch(monkeypatch):
    """A batch of 4096 small MLPs: one batched GEMM per layer, not a loop; TF32 on (default)."""
    monkeypatch.delenv("PYCUDAMLX_ENABLE_TF32")
    monkeypatch.delenv("MLX_ENABLE_TF32", raising=False)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4096, 32)).astype(np.float32)
    w1 = rng.standard_normal((4096, 32, 64)).astype(np.float32) / 8
    w2 = rng.standard_normal((64, 10)).astype(np.float32) / 8

    def make():
        net = lambda xi, wi, wo: mx.softmax(mx.maximum(xi @ wi, 0) @ wo, axis=-1)  # noqa: E731
        return mx.vmap(net, in_axes=(0, 0, None))(mx.array(x), mx.array(w1), mx.array(w2))

    _compare(*_gpu_and_cpu(make), 5e-3)
