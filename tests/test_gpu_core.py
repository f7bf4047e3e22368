"""The evaluator on the GPU: kernels run, data moves between devices, streams order work."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env
from pycudamlx import dtypes as dt
from pycudamlx.core.array import make
from pycudamlx.graph.primitive import Primitive, StrictGpuError

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu(gpu_device):
    yield


def _rand(shape, dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def test_binary_runs_as_a_kernel_and_matches_numpy():
    from pycudamlx.backend.cuda import compiler

    a_h, b_h = _rand((301, 7)), _rand((7,), seed=1)
    a, b = mx.array(a_h), mx.array(b_h)
    c = mx.add(a, b, stream=mx.gpu)
    d = mx.maximum(c, mx.multiply(a, 0.5, stream=mx.gpu), stream=mx.gpu)
    mx.eval(d)
    assert type(d._data).__name__ == "GpuArray"
    assert sum(compiler.stats.values()) > 0
    np.testing.assert_allclose(np.array(d), np.maximum(a_h + b_h, a_h * 0.5), rtol=1e-6)


def test_gpu_result_feeds_a_cpu_op_and_back():
    a_h = _rand((1000,))
    g = mx.add(mx.array(a_h), 1.0, stream=mx.gpu)
    c = mx.multiply(g, 2.0, stream=mx.cpu)          # reads managed memory on the host
    h = mx.subtract(c, g, stream=mx.gpu)            # CPU data uploaded once
    np.testing.assert_allclose(np.array(h), (a_h + 1) * 2 - (a_h + 1), rtol=1e-6)
    assert type(h._data).__name__ == "GpuArray"


def test_new_stream_orders_dependent_work():
    s1 = mx.new_stream(mx.gpu)
    s2 = mx.new_stream(mx.gpu)
    a_h = _rand((1 << 20,))
    x = mx.array(a_h)
    y = x
    for _ in range(20):
        y = mx.add(y, 1.0, stream=s1)
    z = mx.multiply(y, 2.0, stream=s2)  # s2 must wait for s1's writes on the GPU
    np.testing.assert_allclose(np.array(z), (a_h + 20) * 2, rtol=1e-5)


def test_the_gpu_default_stream_is_backed_by_the_library_default_cuda_stream():
    """Streams are numbered in the order they are first asked for (as MLX's scheduler does),
    so the GPU's default stream may have any number; it, not its number, picks the CUDA
    stream, and new streams get their own."""
    from pycudamlx.backend.cuda import driver
    from pycudamlx.backend.cuda import stream as cuda_stream

    default = mx.default_stream(mx.gpu)
    lib_default = cuda_stream.default_stream(driver.get_device(0))
    assert default.cuda_stream() is lib_default
    other = mx.new_stream(mx.gpu)
    assert other.index > default.index and other.cuda_stream() is not lib_default
    mx.set_default_stream(other)
    try:
        assert mx.default_stream(mx.gpu).cuda_stream() is not lib_default
    finally:
        mx.set_default_stream(default)


def test_with_stream_context_and_synchronize():
    with mx.stream(mx.gpu):
        a = mx.add(mx.array(_rand((17,))), 2.0)
    assert a._stream.device == mx.gpu
    mx.eval(a)
    mx.synchronize()


def test_strict_mode_rejects_host_fallback(monkeypatch):
    class HostOnly(Primitive):
        __slots__ = ()
        name = "host_only"

        def eval_cpu(self, inputs, outs):
            return [inputs[0] * 2]

    monkeypatch.setattr(_env, "STRICT_GPU", True)
    x = mx.array(np.ones(3, np.float32))
    y = make(HostOnly(), (x,), (3,), dt.float32, mx.default_stream(mx.gpu))
    with pytest.raises(StrictGpuError, match="host_only"):
        mx.eval(y)
    monkeypatch.setattr(_env, "STRICT_GPU", False)
    z = make(HostOnly(), (x,), (3,), dt.float32, mx.default_stream(mx.gpu))
    np.testing.assert_array_equal(np.array(z), [2, 2, 2])


def test_pool_reuses_blocks_for_a_loop_of_ops():
    from pycudamlx.backend.cuda import memory

    x = mx.array(_rand((4096,)))
    b = mx.array(_rand((4096,), seed=3))
    for _ in range(5):
        x = mx.add(x, b, stream=mx.gpu)
        mx.eval(x)
    before = memory.stats.managed_allocations + memory.stats.device_allocations
    for _ in range(200):
        x = mx.add(x, b, stream=mx.gpu)
        mx.eval(x)
    after = memory.stats.managed_allocations + memory.stats.device_allocations
    assert after == before, "a steady loop of ops must be served from the pool"


def test_threads_evaluate_concurrently():
    errors = []

    def work(seed):
        try:
            h = _rand((513,), seed=seed)
            y = mx.array(h)
            for _ in range(50):
                y = mx.add(y, 1.0, stream=mx.gpu)
            np.testing.assert_allclose(np.array(y), h + 50, rtol=1e-5)
        except Exception as exc:  # collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_float64_and_bfloat16_on_the_gpu():
    for dtype, tol in ((mx.float64, 1e-12), (mx.bfloat16, 2e-2), (mx.float16, 2e-3)):
        a_h, b_h = _rand((1001,)), _rand((1001,), seed=5)
        a = mx.array(a_h).astype(dtype)
        b = mx.array(b_h).astype(dtype)
        c = mx.multiply(a, b, stream=mx.gpu)
        assert c.dtype == dtype
        got = np.array(c.astype(mx.float32) if dtype is mx.bfloat16 else c).astype(np.float64)
        want = (np.array(a.astype(mx.float32)).astype(np.float64)
                * np.array(b.astype(mx.float32)).astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_long_chain_on_the_gpu():
    x = mx.array(np.zeros(8, np.float32))
    for _ in range(20_000):
        x = mx.add(x, 1.0, stream=mx.gpu)
    np.testing.assert_array_equal(np.array(x), np.full(8, 20_000, np.float32))


def test_compiled_function_replays_its_trace_on_the_gpu():
    calls = []

    def body(x, w):
        calls.append(1)
        g = mx.grad(lambda v: (mx.tanh(x @ v) ** 2).sum())(w)
        return mx.tanh(x @ w).sum(axis=0), g

    f = mx.compile(body)
    w = mx.array(_rand((5, 3), seed=1)) * 1.0  # an op first: see _compile_replay.first_call_done
    for seed in (2, 3, 4):
        x = mx.array(_rand((8, 5), seed=seed))
        got = f(x, w)
        calls_before = len(calls)
        want = body(x, w)
        del calls[calls_before:]
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-5)
    assert len(calls) == 1
