"""mx.compile replayed as CUDA graphs on the GPU: the same values as the op-by-op replay.

From a recording's third call its replay is one node that captures the trace into a CUDA graph
and replays it (graph/primitives/compiled_graph.py). Each case runs the same compiled function
with graphs off and on over several calls on random data of odd sizes and compares the bytes,
and checks that a graph was really captured (or, for work a graph cannot hold, refused).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
import pycudamlx.optimizers as optim
from pycudamlx import _env
from pycudamlx.utils import tree_flatten
from pycudamlx.core import _compile_replay
from pycudamlx.graph.primitives import compiled_graph

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True, params=["driver-copies", "copy-kernels"])
def _strict_gpu(request, gpu_device, monkeypatch):
    """Every case with the graph's inputs and outputs moved by driver copies (the default) and
    by its own copy kernels (PYCUDAMLX_GRAPH_COPY_KERNELS=1)."""
    from pycudamlx.backend.cuda import graphs

    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setattr(_compile_replay, "graphs_enabled", True)
    monkeypatch.setattr(graphs, "COPY_KERNELS", request.param == "copy-kernels")
    yield
    _keep.clear()
    compiled_graph.release_all()


_keep: list = []


def _graph_prims() -> list:
    return [ref() for ref in compiled_graph._live.values() if ref() is not None]


def _run(fn, make_args, calls: int, graphs: bool, monkeypatch) -> list:
    monkeypatch.setattr(_compile_replay, "graphs_enabled", graphs)
    cf = mx.compile(fn)
    _keep.append(cf)  # its graph goes with it: keep it until the test has looked
    results = []
    for i in range(calls):
        out = cf(*make_args(i))
        out = out if isinstance(out, (tuple, list)) else (out,)
        mx.eval(*out)
        results.append([np.array(o) for o in out])
    return results


def _args(shapes, dtype=mx.float32, seed=0):
    def make(i):
        rng = np.random.default_rng(seed + i)
        return [mx.array(rng.standard_normal(s).astype(np.float32)).astype(dtype)
                for s in shapes]
    return make


def _same(a: list, b: list) -> None:
    for xs, ys in zip(a, b):
        for x, y in zip(xs, ys):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)


def test_elementwise_reduction_and_matmul_trace_replays_as_a_graph(monkeypatch) -> None:
    def f(x, w, b):
        h = mx.tanh(x @ w + b) * 0.5 + 1.0
        return h.sum(axis=-1), mx.softmax(h, axis=-1), (h * h).mean()

    make = _args([(37, 61), (61, 29), (29,)])
    plain = _run(f, make, 6, False, monkeypatch)
    assert not _graph_prims()
    graphed = _run(f, make, 6, True, monkeypatch)
    prims = _graph_prims()
    assert len(prims) == 1 and prims[0].replay is not None and prims[0].refused is None
    _same(plain, graphed)
    x = make(0)
    ref = np.tanh(np.array(x[0]) @ np.array(x[1]) + np.array(x[2])) * 0.5 + 1.0
    np.testing.assert_allclose(graphed[0][0], ref.sum(-1), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.int32])
def test_other_dtypes_and_broadcasts(dtype, monkeypatch) -> None:
    def f(x, y):
        z = x * 3 + y.T
        return mx.maximum(z, x), z.sum(axis=0)

    def make(i):
        rng = np.random.default_rng(i)
        return [mx.array(rng.integers(-50, 50, (17, 9))).astype(dtype),
                mx.array(rng.integers(-50, 50, (9, 17))).astype(dtype)]

    _same(_run(f, make, 5, False, monkeypatch), _run(f, make, 5, True, monkeypatch))
    assert _graph_prims()


def test_outputs_a_caller_holds_are_never_overwritten(monkeypatch) -> None:
    cf = mx.compile(lambda x: (x + 1.0) * 2.0)
    held = []
    for i in range(6):
        held.append(cf(mx.full((1000,), float(i))))
        mx.eval(held[-1])
    assert _graph_prims()
    for i, h in enumerate(held):
        np.testing.assert_array_equal(np.array(h), np.full((1000,), (i + 1.0) * 2.0, np.float32))


def test_inputs_of_another_layout_are_copied_in(monkeypatch) -> None:
    cf = mx.compile(lambda x: mx.exp(x) - x)
    rng = np.random.default_rng(3)
    base = mx.array(rng.standard_normal((31, 23)).astype(np.float32))
    row = mx.array(rng.standard_normal((1, 31)).astype(np.float32))
    for i in range(6):  # a transposed view and a broadcast, alternately, of one signature
        x = base.T if i % 2 else mx.broadcast_to(row, (23, 31))
        np.testing.assert_allclose(np.array(cf(x)), np.exp(np.array(x)) - np.array(x),
                                   rtol=1e-5, atol=1e-5)
    assert _graph_prims()


def test_a_training_step_with_captured_state_matches_the_plain_replay(monkeypatch) -> None:
    def train(graphs: bool) -> tuple[list, dict]:
        monkeypatch.setattr(_compile_replay, "graphs_enabled", graphs)
        mx.random.seed(7)
        model = nn.Sequential(nn.Linear(33, 47), nn.GELU(), nn.Dropout(0.1), nn.Linear(47, 5))
        opt = optim.AdamW(learning_rate=1e-2)
        state = [model.state, opt.state, mx.random.state]

        def loss_fn(model, x, y):
            return nn.losses.cross_entropy(model(x), y, reduction="mean")

        def step(x, y):
            loss, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
            opt.update(model, grads)
            return loss

        step = mx.compile(step, inputs=state, outputs=state)
        _keep.append(step)
        rng = np.random.default_rng(1)
        losses = []
        for _ in range(8):
            x = mx.array(rng.standard_normal((19, 33)).astype(np.float32))
            y = mx.array(rng.integers(0, 5, (19,)))
            loss = step(x, y)
            mx.eval(loss, state)
            losses.append(float(loss.item()))
        return losses, {k: np.array(v) for k, v in tree_flatten(model.parameters())}

    plain_losses, plain_params = train(False)
    graph_losses, graph_params = train(True)
    assert _graph_prims(), "the training step was not captured"
    assert plain_losses == graph_losses
    for k in plain_params:
        np.testing.assert_array_equal(plain_params[k], graph_params[k])
    assert len(set(graph_losses)) == len(graph_losses)  # the state did advance each step


def test_random_keys_advance_inside_graph_replays(monkeypatch) -> None:
    state = [mx.random.state]
    cf = mx.compile(lambda x: x + mx.random.uniform(shape=x.shape), inputs=state, outputs=state)
    mx.random.seed(3)
    draws = [np.array(cf(mx.zeros((257,)))) for _ in range(6)]
    assert _graph_prims()
    assert len({d.tobytes() for d in draws}) == 6
    monkeypatch.setattr(_compile_replay, "graphs_enabled", False)
    cf2 = mx.compile(lambda x: x + mx.random.uniform(shape=x.shape), inputs=state, outputs=state)
    mx.random.seed(3)
    for d in draws:
        np.testing.assert_array_equal(np.array(cf2(mx.zeros((257,)))), d)


def test_work_a_graph_cannot_hold_runs_as_plain_launches(monkeypatch, caplog) -> None:
    # mx.fft goes through cuFFT, whose plans own tables a graph would bake in: refused.
    def f(x):
        return mx.abs(mx.fft.rfft(x * 2.0))

    make = _args([(8, 33)])
    plain = _run(f, make, 4, False, monkeypatch)
    with caplog.at_level("DEBUG", logger=compiled_graph.__name__):
        graphed = _run(f, make, 4, True, monkeypatch)
    _same(plain, graphed)
    assert not _graph_prims()
    assert any("plain launches" in r.getMessage() and "cuFFT" in r.getMessage()
               for r in caplog.records)


def test_graphs_are_released_with_their_compiled_function(monkeypatch) -> None:
    from pycudamlx.backend.cuda import memory

    before = memory.stats.active_bytes
    cf = mx.compile(lambda x: mx.sin(x) * x)
    for _ in range(4):
        mx.eval(cf(mx.ones((4099,))))
    assert _graph_prims()
    del cf
    gc.collect()
    assert not _graph_prims()
    assert memory.stats.active_bytes <= before + 4 * 4099 * 4


@pytest.mark.parametrize("nbytes,shift", [(306, 0), (18, 2), (612, 4), (1 << 20, 0),
                                          (4099 * 3, 1), (0, 0)])
def test_copy_many_moves_every_byte(nbytes, shift, gpu_device):
    """kernels/copy_many.cu alone: 16-byte, word and byte paths, odd sizes and offsets."""
    from pycudamlx.backend.cuda import compiler, memory, registry

    stream = mx.default_stream(mx.gpu).cuda_stream()
    kernel = compiler.module_for(registry.copy_many_module, (), gpu_device).kernel_list[0]
    rng = np.random.default_rng(nbytes)
    data = rng.integers(0, 256, nbytes + 8, dtype=np.uint8)
    src = memory.allocate(nbytes + 8, gpu_device, memory.DEVICE, stream)
    memory.copy_host_to_device(src, data, stream)
    dsts = [memory.allocate(nbytes + 8, gpu_device, memory.DEVICE, stream) for _ in range(2)]
    for d in dsts:
        memory.memset(d, 0, stream)
    table = np.array([[dsts[0].ptr, src.ptr + shift, nbytes],
                      [dsts[1].ptr + shift, src.ptr, nbytes]], np.uint64)
    tbuf = memory.allocate(table.nbytes, gpu_device, memory.DEVICE, stream)
    memory.copy_host_to_device(tbuf, table.reshape(-1).view(np.uint8), stream)
    kernel((max(1, -(-nbytes // 16384)), 2, 1), 256, stream, tbuf.ptr)
    stream.synchronize()
    got0 = memory.read_to_host(dsts[0], 0, nbytes + 8)
    got1 = memory.read_to_host(dsts[1], 0, nbytes + 8)
    np.testing.assert_array_equal(got0[:nbytes], data[shift:shift + nbytes])
    assert not got0[nbytes:].any()
    np.testing.assert_array_equal(got1[shift:shift + nbytes], data[:nbytes])
    assert not got1[:shift].any() and not got1[shift + nbytes:].any()
