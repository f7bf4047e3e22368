"""Donation on the GPU: a slice update (``a[i:j] = v``, a KV cache's step) writes into its
input's buffer when nothing else can see the old value, and copies first when something can.
Either way every array holds MLX's value; numpy is the oracle. (test_null_driver.py counts the
launches that tell the two paths apart.)"""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_a_kv_cache_filled_step_by_step_holds_every_step(dtype):
    shape = (2, 3, 37, 17)  # odd sizes
    ref = np.zeros(shape, np.float32)
    cache = mx.zeros(shape, dtype=getattr(mx, dtype))
    mx.eval(cache)
    for t in range(shape[2]):
        step = rng.integers(-8, 8, size=(2, 3, 1, 17)).astype(np.float32)
        cache[..., t:t + 1, :] = mx.array(step).astype(cache.dtype)
        ref[..., t:t + 1, :] = step
        seen = cache[..., :t + 1, :]  # what attention reads, as mlx-lm's cache returns it
        np.testing.assert_array_equal(np.array(seen.astype(mx.float32)), ref[..., :t + 1, :])
        del seen


def test_every_holder_of_the_old_value_keeps_it():
    base = rng.normal(size=(5, 33)).astype(np.float32)
    a = mx.array(base)
    mx.eval(a)
    held = a[...]            # shares the data
    view = a.T               # a view of the buffer
    lazy = a * 2             # a pending consumer
    host = np.array(a)       # a host copy
    a[1:3] = 7.0
    mx.eval(a)
    expected = base.copy()
    expected[1:3] = 7.0
    np.testing.assert_array_equal(np.array(a), expected)
    np.testing.assert_array_equal(np.array(held), base)
    np.testing.assert_array_equal(np.array(view), base.T)
    np.testing.assert_array_equal(np.array(lazy), base * 2)
    np.testing.assert_array_equal(host, base)


def test_an_update_whose_value_reads_the_array_itself():
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    a = mx.array(base)
    mx.eval(a)
    a[0:2] = a[2:4]  # the update reads the buffer it would write: no donation there
    a[:, 1::3] = a[:, 0:9:3] * 10
    expected = base.copy()
    expected[0:2] = base[2:4]
    expected[:, 1::3] = expected[:, 0:9:3] * 10
    np.testing.assert_array_equal(np.array(a), expected)


def test_in_place_updates_inside_grad_and_compile_keep_their_values():
    x = mx.array(np.arange(6, dtype=np.float32))

    def f(v):
        w = v * 1.0
        w[1:3] = v[1:3] * 3
        return (w * w).sum()

    g = mx.grad(f)(x)
    np.testing.assert_allclose(np.array(g), [0, 18 * 1, 18 * 2, 6, 8, 10])
    c = mx.compile(f)
    for scale in (1.0, 2.0, 3.0):  # replays (a CUDA graph from the third call)
        xs = x * scale
        assert c(xs).item() == pytest.approx(f(xs).item())
