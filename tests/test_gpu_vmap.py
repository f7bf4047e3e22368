"""mx.vmap on the GPU under strict mode: every batched node (rules and per-entry loops) runs as a
kernel, with the values real MLX computes on its CPU."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

from test_vmap import CASES, LOOP_CASES, _compare, _data, _mk  # noqa: E402

mlx = pytest.importorskip("mlx.core")

pytestmark = pytest.mark.gpu

# FFTs have no GPU kernel yet (strict mode refuses their host fallback).
_HOST_ONLY = {"fft"}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
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
        assert type(tree._data).__name__ == "GpuArray"


@pytest.mark.parametrize("name,fn,specs,in_axes,out_axes",
                         [pytest.param(*c[:5], id=c[0]) for c in CASES
                          if c[0] not in _HOST_ONLY])
def test_vmap_gpu(name, fn, specs, in_axes, out_axes):
    values = [_data(s, d) for s, d in specs]
    ref = mlx.vmap(lambda *a: fn(mlx, *a), in_axes, out_axes)(
        *[_mk(mlx, v, d) for v, (_, d) in zip(values, specs)])
    with mx.stream(mx.gpu):
        args = [_mk(mx, v, d) for v, (_, d) in zip(values, specs)]
        ours = mx.vmap(lambda *a: fn(mx, *a), in_axes, out_axes)(*args)
        _on_gpu(ours)
    # float32 GEMMs use TF32 on the GPU by default, as MLX-CUDA does.
    _compare(ours, ref, 3e-2 if name in ("bf16", "scalar_ops") else 3e-3)


@pytest.mark.parametrize("fn,specs,in_axes",
                         [pytest.param(*c[1:], id=c[0]) for c in LOOP_CASES
                          if c[0] not in ("qr", "inv_cholesky", "eigh_svd")])
def test_vmap_gpu_equals_loop(fn, specs, in_axes):
    with mx.stream(mx.gpu):
        values = [mx.array(_data(s, d)) for s, d in specs]
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(values)
        size = next(v.shape[0] for v, ax in zip(values, axes) if ax is not None)
        expected = np.stack([np.array(fn(*[v[b] if ax is not None else v
                                           for v, ax in zip(values, axes)]))
                             for b in range(size)])
        got = mx.vmap(fn, in_axes=in_axes)(*values)
        _on_gpu(got)
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5, atol=1e-5)


def test_vmap_gpu_large_batch():
    """A batch of 4096 small MLPs: one batched GEMM per layer, not a loop."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4096, 32)).astype(np.float32)
    w1 = rng.standard_normal((4096, 32, 64)).astype(np.float32) / 8
    w2 = rng.standard_normal((64, 10)).astype(np.float32) / 8

    def net(m):
        return lambda xi, wi, wo: m.softmax(m.maximum(xi @ wi, 0) @ wo, axis=-1)

    ref = mlx.vmap(net(mlx), in_axes=(0, 0, None))(mlx.array(x), mlx.array(w1), mlx.array(w2))
    with mx.stream(mx.gpu):
        ours = mx.vmap(net(mx), in_axes=(0, 0, None))(mx.array(x), mx.array(w1),
                                                      mx.array(w2))
        _on_gpu(ours)
    _compare(ours, ref, 5e-3)
