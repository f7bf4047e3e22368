"""mx.distributed on the GPU (strict mode): the singleton group's collectives are alias nodes on
the input's stream, so a data-parallel step (all_sum of the loss and of the gradients, then an
update) stays on the GPU and gives the CPU's values (test_distributed.py checks those against
MLX)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
from pycudamlx import _env

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")  # GPU and CPU matmuls both in float32
    yield


@pytest.mark.parametrize("name", ["all_sum", "all_gather", "all_max", "all_min", "sum_scatter"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "bool"])
def test_collective_on_gpu(name, dtype):
    x_np = RNG.standard_normal((33, 7)) * 10
    x = mx.array(x_np.astype(np.float32)).astype(getattr(mx, dtype if dtype != "bool" else "bool_"))
    with mx.stream(mx.gpu):
        y = mx.multiply(x, 1) if dtype != "bool" else mx.logical_not(x)
        out = getattr(mx.distributed, name)(y, stream=mx.gpu)
        z = out + 0 if dtype != "bool" else mx.logical_not(out)
    mx.eval(z)
    assert type(out._data).__name__ == "GpuArray" and type(z._data).__name__ == "GpuArray"
    assert out.dtype == x.dtype and out.shape == x.shape
    want = np.array(x.astype(mx.float32) if dtype == "bfloat16" else x)
    np.testing.assert_array_equal(np.array(z.astype(mx.float32) if dtype == "bfloat16" else z),
                                  want)


def test_data_parallel_step_on_gpu():
    x = mx.array(RNG.standard_normal((64, 16)).astype(np.float32))
    y = mx.array(RNG.standard_normal((64, 4)).astype(np.float32))

    def step(device):
        mx.random.seed(0)
        with mx.stream(device):
            model = nn.Linear(16, 4)
            world = mx.distributed.init()

            def loss_fn(m):
                return mx.distributed.all_sum(nn.losses.mse_loss(m(x), y)) / world.size()

            loss, grads = nn.value_and_grad(model, loss_fn)(model)
            grads = nn.average_gradients(grads)
            grads = mx.distributed.all_gather(grads["weight"])
            mx.eval(loss, grads)
            return loss, grads

    loss_gpu, g_gpu = step(mx.gpu)
    assert type(g_gpu._data).__name__ == "GpuArray"
    loss_cpu, g_cpu = step(mx.cpu)
    assert loss_gpu.item() == pytest.approx(loss_cpu.item(), rel=1e-4)
    np.testing.assert_allclose(np.array(g_gpu), np.array(g_cpu), rtol=2e-3, atol=1e-5)


@pytest.mark.parametrize("cls", ["AllToShardedLinear", "ShardedToAllLinear"])
def test_sharded_linear_on_gpu(cls):
    x = mx.array(RNG.standard_normal((8, 32)).astype(np.float32))
    outs = []
    for device in (mx.gpu, mx.cpu):
        mx.random.seed(1)
        with mx.stream(device):
            layer = getattr(nn, cls)(32, 16)
            y = layer(x)
            g = mx.grad(lambda inp: (layer(inp) ** 2).sum())(x)
            mx.eval(y, g)
        outs.append((y, g))
    assert type(outs[0][0]._data).__name__ == "GpuArray"
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=2e-3, atol=1e-4)
