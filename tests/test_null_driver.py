"""The GPU code path on the null driver (backend/cuda/null_driver.py): no GPU needed, so these run
in CI. They count what the path asks of the driver -- kernels launched, calls that would block
the host -- over whole programs, which no CPU test sees and a GPU test sees only as time.

The null driver cannot be swapped back out within a process (devices, streams, loaded kernels
and pooled blocks are built on it, and ``mx.default_device()`` is decided once), and on a GPU
machine its kernels would poison the real device's caches. So every ``@null_test`` runs in one
child pytest process started with ``PYCUDAMLX_NULL_DRIVER=1`` and ``PYCUDAMLX_STRICT_GPU=1``;
the parent replays each test's outcome, and its xfail marks apply there (the child runs with
``--runxfail``, reporting raw results). The rest of the suite never sees the null driver.
"""

from __future__ import annotations

import gc
import inspect
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any, Callable

import numpy as np
import pytest

from conftest import REPO, subprocess_env

CHILD = os.environ.get("_PYCUDAMLX_NULL_DRIVER_CHILD") == "1"
_MARKER = "_PYCUDAMLX_NULL_DRIVER_CHILD"

# Python scalars, x[i] = v values, optimizer hyperparameters and random keys reach the GPU through
# backend/cuda/constants.py (written by cuMemsetD*Async in stream order): before it, each was an
# upload through memory.allocate(stream=None), which synchronized the stream when it reused a
# pooled block -- one host wait per op in a batched chain.


# --------------------------------------------------------------------------------------------------
# The child process and the replay


@pytest.fixture(scope="module")
def null_child(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Run this file's ``@null_test``s in a child on the null driver; name -> (outcome, detail)."""
    xml = tmp_path_factory.mktemp("null_driver") / "results.xml"
    env = subprocess_env(PYCUDAMLX_NULL_DRIVER="1", PYCUDAMLX_STRICT_GPU="1", **{_MARKER: "1"})
    env.pop("PYTEST_ADDOPTS", None)  # the parent's options (say, -n for xdist) are not the child's
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--runxfail",
         "-o", "addopts=", f"--junitxml={xml}", __file__],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    tail = (proc.stdout + proc.stderr)[-4000:]
    if not xml.exists():
        pytest.fail(f"the null-driver child process wrote no results (rc {proc.returncode}):\n"
                    f"{tail}", pytrace=False)
    results: dict[str, tuple[str, str]] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, detail = "failed", (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "skipped":
                outcome, detail = "skipped", child.get("message") or ""
        results[case.get("name", "")] = (outcome, detail)
    results["<output>"] = ("", tail)
    return results


def null_test(fn: Callable[..., None]) -> Callable[..., None]:
    """Run ``fn`` in the null-driver child; in the parent, replay the child's outcome."""
    if CHILD:
        return fn

    def replay(null_child: dict[str, tuple[str, str]], request: pytest.FixtureRequest,
               **params: Any) -> None:
        name = request.node.name
        outcome, detail = null_child.get(name, ("missing", ""))
        if outcome == "passed":
            return
        if outcome == "skipped":
            pytest.skip(detail)
        if outcome == "missing":
            detail = "the child did not run it:\n" + null_child["<output>"][1]
        pytest.fail(f"in the null-driver child process: {detail}", pytrace=False)

    replay.__name__ = fn.__name__
    replay.__qualname__ = fn.__qualname__
    replay.__doc__ = fn.__doc__
    replay.__module__ = fn.__module__
    # The parent takes the test's own arguments too (parametrize needs them), and ignores them.
    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
           for p in inspect.signature(fn).parameters.values()]
    replay.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in ("null_child", "request")] + own)
    if hasattr(fn, "pytestmark"):  # marks applied below the decorator (parametrize, xfail)
        replay.pytestmark = fn.pytestmark  # type: ignore[attr-defined]
    return replay


def test_the_parent_process_keeps_the_real_driver() -> None:
    """The rest of the suite sees the machine as it is (here: no GPU), never the fake."""
    if CHILD:
        pytest.skip("parent-side check")
    from pycudamlx.backend.cuda import driver

    assert driver.null_driver() is None


# --------------------------------------------------------------------------------------------------
# Helpers (child side)


def _null() -> Any:
    from pycudamlx.backend.cuda import driver

    cu = driver.init()  # PYCUDAMLX_NULL_DRIVER=1 installs it at the first init
    assert cu is driver.null_driver() is not None, "PYCUDAMLX_NULL_DRIVER=1 had no effect"
    return cu


def _evaluated(*arrays: Any) -> None:
    import pycudamlx.core as mx

    mx.eval(*arrays)


def _counted(build: Callable[[], Any], fuse: bool = True) -> Any:
    """Reset the counters, build a graph, evaluate it once (with automatic fusion off unless
    ``fuse``); return the null driver."""
    import pycudamlx.core as mx
    from pycudamlx.graph import fusion

    cu = _null()
    cu.reset_counters()
    fusion.enabled = fuse
    try:
        mx.eval(build())
    finally:
        fusion.enabled = True
    return cu


# --------------------------------------------------------------------------------------------------
# The null driver itself


@null_test
def test_the_null_driver_is_an_h200_with_the_gpu_as_default_device() -> None:
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import cublas, cufft, driver

    cu = _null()
    assert driver.init() is cu
    assert driver.use_null_driver() is cu  # installing it again keeps the instance
    assert mx.default_device() == mx.gpu
    assert mx.is_available(mx.gpu) and mx.device_count(mx.gpu) == 1
    p = driver.get_device(0).properties
    assert p.compute_capability == (9, 0) and p.arch == "sm_90"
    assert p.multiprocessors == 132 and p.warp_size == 32
    assert p.max_threads_per_block == 1024 and p.max_shared_memory_per_block == 48 * 1024
    assert p.concurrent_managed_access and p.managed_memory
    assert p.total_memory > 140 * 10**9
    info = mx.device_info(mx.gpu)
    assert info["architecture"] == "sm_90" and "null driver" in info["device_name"]
    # The vendor libraries would run real GPU code: unavailable, with the reason.
    assert not cublas.available() and not cufft.available()
    assert "null" in (cublas.load_error() or "")


@null_test
def test_copies_and_memsets_move_real_bytes() -> None:
    from pycudamlx.backend.cuda import driver, memory
    from pycudamlx.backend.cuda.stream import default_stream

    dev = driver.get_device(0)
    stream = default_stream(dev)
    host = np.arange(1000, dtype=np.float32)
    for kind in (memory.MANAGED, memory.DEVICE):
        buf = memory.allocate(host.nbytes, dev, kind, stream)
        memory.copy_host_to_device(buf, host, stream)
        back = np.empty_like(host)
        memory.copy_device_to_host(back, buf, stream)
        np.testing.assert_array_equal(back, host)
        memory.memset(buf, 0, stream, 400)
        memory.copy_device_to_host(back, buf, stream)
        assert not back[:100].any() and np.array_equal(back[100:], host[100:])
    managed = memory.allocate(host.nbytes, dev, memory.MANAGED, stream)
    memory.copy_host_to_device(managed, host, stream)
    np.testing.assert_array_equal(managed.host_view(np.float32), host)


@null_test
def test_an_allocation_beyond_the_device_raises_out_of_memory() -> None:
    from pycudamlx.backend.cuda import driver, memory

    with pytest.raises(driver.CudaOutOfMemoryError):
        memory.allocate(200 * 10**9, driver.get_device(0), memory.DEVICE)
    with pytest.raises(driver.CudaOutOfMemoryError):  # the managed-memory guard
        memory.allocate(200 * 10**9, driver.get_device(0), memory.MANAGED)


@null_test
def test_timing_events_measure_host_time() -> None:
    from pycudamlx.backend.cuda import driver
    from pycudamlx.backend.cuda.stream import TimingEvent, default_stream

    dev = driver.get_device(0)
    start, end = TimingEvent(dev), TimingEvent(dev)
    start.record(default_stream(dev))
    end.record(default_stream(dev))
    assert 0.0 <= start.elapsed_ms(end) < 1000.0


# --------------------------------------------------------------------------------------------------
# Ops evaluate end to end on the GPU path (PYCUDAMLX_STRICT_GPU=1: no host fallback)


def _ops() -> dict[str, Callable[[Any, Any], Any]]:
    import pycudamlx.core as mx

    return {
        "binary": lambda x, b: x + b,
        "unary": lambda x, b: mx.exp(x),
        "scalar": lambda x, b: x * 0.5 + 1.0,
        "compare_where": lambda x, b: mx.where(x > b, x, b),
        "sum": lambda x, b: mx.sum(x),
        "sum_axis": lambda x, b: mx.sum(x, axis=0),
        "max_axis": lambda x, b: mx.max(x, axis=1),
        "mean": lambda x, b: mx.mean(x),
        "softmax": lambda x, b: mx.softmax(x, axis=-1),
        "cumsum": lambda x, b: mx.cumsum(x, axis=1),
        "matmul": lambda x, b: x @ mx.transpose(x),
        "matmul_f16": lambda x, b: x.astype(mx.float16) @ mx.transpose(x).astype(mx.float16),
        "take": lambda x, b: mx.take(x, mx.array([0, 3, 5]), axis=0),
        "slice": lambda x, b: x[1:5, ::2] + 1,
        "gather": lambda x, b: x[mx.array([1, 2])],
        "concatenate": lambda x, b: mx.concatenate([x, x], axis=0),
        "normal": lambda x, b: mx.random.normal((1000,)),
        "uniform": lambda x, b: mx.random.uniform(shape=(1000,)),
        "randint": lambda x, b: mx.random.randint(0, 10, (100,)),
        "sort": lambda x, b: mx.sort(x, axis=-1),
        "argsort_long": lambda x, b: mx.argsort(mx.reshape(x, (-1,))),
        "layer_norm": lambda x, b: mx.fast.layer_norm(x, b, b, 1e-5),
        "attention": lambda x, b: mx.fast.scaled_dot_product_attention(
            mx.reshape(x, (1, 2, 32, 128)), mx.reshape(x, (1, 2, 32, 128)),
            mx.reshape(x, (1, 2, 32, 128)), scale=0.1),
    }


_OP_NAMES = ["binary", "unary", "scalar", "compare_where", "sum", "sum_axis", "max_axis",
             "mean", "softmax", "cumsum", "matmul", "matmul_f16", "take", "slice", "gather",
             "concatenate", "normal", "uniform", "randint", "sort", "argsort_long", "layer_norm",
             "attention"]


@null_test
@pytest.mark.parametrize("name", _OP_NAMES)
def test_ops_run_as_kernels(name: str) -> None:
    import pycudamlx.core as mx

    assert sorted(_ops()) == sorted(_OP_NAMES)
    x = mx.ones((64, 128))
    b = mx.ones((128,))
    _evaluated(x, b)
    cu = _counted(lambda: _ops()[name](x, b))
    assert cu.launches >= 1


@null_test
def test_item_and_numpy_read_back_without_errors() -> None:
    import pycudamlx.core as mx

    x = mx.ones((1024,))
    assert isinstance(mx.sum(x + 1).item(), float)  # the value is whatever the block held
    assert np.array(x * 2).shape == (1024,)


@null_test
def test_matmul_takes_the_nvrtc_gemm() -> None:
    import pycudamlx.core as mx

    a, b = mx.ones((256, 512)), mx.ones((512, 64))
    _evaluated(a, b)
    cu = _counted(lambda: a @ b)
    assert any("gemm" in name for name in cu.launched_kernels()), cu.launched_kernels()


@null_test
def test_a_decode_step_linear_is_one_gemv_launch() -> None:
    import pycudamlx.core as mx

    x, w = mx.ones((1, 1, 2048), dtype=mx.bfloat16), mx.ones((8192, 2048), dtype=mx.bfloat16)
    _evaluated(x, w)
    cu = _counted(lambda: x @ w.T)
    names = cu.launched_kernels()  # mangled: _Z6gemv_tI13__nv_bfloat16Li2EE...
    assert sum(names.values()) == 1 and all("gemv_t" in n for n in names), names


@null_test
@pytest.mark.parametrize("bits", [3, 4])
def test_dequantize_uploads_nothing_after_its_first_call(bits: int) -> None:
    import pycudamlx.core as mx

    w = mx.ones((64, 128), dtype=mx.float16)
    q, scales, biases = mx.quantize(w, group_size=64, bits=bits)
    _evaluated(q, scales, biases)
    mx.eval(mx.dequantize(q, scales, biases, group_size=64, bits=bits))
    cu = _counted(lambda: mx.dequantize(q, scales, biases, group_size=64, bits=bits))
    assert cu.calls["cuMemcpyHtoDAsync"] == 0 and cu.synchronizing_calls() == 0, dict(cu.calls)


@null_test
def test_a_kv_cache_update_writes_in_place_when_nothing_else_sees_the_old_cache() -> None:
    import pycudamlx.core as mx

    cache = mx.zeros((1, 8, 256, 64), dtype=mx.bfloat16)
    new = mx.ones((1, 8, 1, 64), dtype=mx.bfloat16)
    _evaluated(cache, new)
    cu = _null()

    def update(t: int) -> int:
        cache[..., t:t + 1, :] = new
        cu.reset_counters()
        mx.eval(cache)
        return cu.launches

    assert [update(t) for t in range(3)] == [1, 1, 1]  # the update's copy only
    alias = cache  # the same array object: it sees the update anyway (MLX's in-place rule)
    assert update(3) == 1
    # Whoever can still read the old value keeps it: a whole copy first, then the update.
    held = cache[...]  # shares the evaluated data
    assert update(4) == 2
    del held
    view = cache.T  # a live view of the buffer
    assert update(5) == 2
    del view
    pending = cache * 2  # a lazy consumer of the old value, evaluated later
    assert update(6) == 2
    mx.eval(pending)
    del pending, alias
    assert update(7) == 1
    with mx.stream(mx.cpu):
        host = mx.array(0.0) + 1  # an unrelated CPU graph does not change the rule
    assert update(8) == 1 and host.item() == 1.0


# --------------------------------------------------------------------------------------------------
# What a chain of ops asks of the driver


@null_test
def test_a_chain_of_adds_launches_one_kernel_per_op_and_never_waits() -> None:
    import pycudamlx.core as mx

    x, b = mx.ones((1024,)), mx.ones((1024,))
    _evaluated(x, b)

    def chain() -> Any:
        y = x
        for _ in range(1000):
            y = y + b
        return y

    for _ in range(2):  # fresh blocks the first time, pooled ones the second
        cu = _counted(chain, fuse=False)  # the unfused path: one kernel per node
        assert cu.launches == 1000
        assert cu.synchronizing_calls() <= 2, dict(cu.calls)
        assert set(cu.launched_kernels()) == {n for n in cu.launched_kernels()
                                              if "binary" in n}


@null_test
def test_a_lazy_chain_fuses_into_few_kernels_once_built() -> None:
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import fused

    x, b = mx.ones((1024,)), mx.ones((1024,))
    _evaluated(x, b)

    def chain() -> Any:
        y = x
        for _ in range(1000):
            y = (y + b) * 0.5
        return y

    # first sight: the programs are built in the background (a disk-cache hit can be ready
    # before the planner reaches the chain's last groups)
    first = _counted(chain)
    assert first.launches <= 2000
    fused.wait()
    cu = _counted(chain)
    steps = fused.MAX_STEPS
    assert cu.launches <= -(-2000 // steps) + 2, cu.launches
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)
    assert all("fused_contig" in n for n in cu.launched_kernels()), cu.launched_kernels()
    assert _counted(chain, fuse=False).launches == 2000


@null_test
def test_an_intermediate_the_user_holds_is_materialised() -> None:
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import fused

    x = mx.ones((1024,))
    _evaluated(x)
    for _ in range(2):
        fused.wait()
        held = mx.exp(x) + 1.0
        out = mx.sin(held * 2.0) - 3.0
        mx.eval(out)
        assert held._data is not None  # evaluated, not folded away


@null_test
def test_one_sum_is_one_launch() -> None:
    import pycudamlx.core as mx

    for n in (1024, 1 << 22):  # one block per row, and partials the last block combines
        x = mx.ones((n,))
        _evaluated(x)
        cu = _counted(lambda: mx.sum(x))
        assert cu.launches == 1, list(cu.launch_log)
        assert cu.synchronizing_calls() == 0


@null_test
def test_memory_returns_to_baseline_when_arrays_are_dropped() -> None:
    import pycudamlx.core as mx

    cu = _null()
    gc.collect()
    mx.clear_cache()
    active, driver_bytes = mx.get_active_memory(), cu.allocated
    arrays = [mx.ones((n,)) + i for i, n in enumerate((1000, 100_000, 3_000_000))]
    arrays.append(mx.sum(arrays[-1], axis=0))
    arrays.append(arrays[0] @ mx.ones((1000, 1000)))
    mx.eval(arrays)
    assert mx.get_active_memory() > active
    assert cu.allocated > driver_bytes
    del arrays
    gc.collect()
    assert mx.get_active_memory() == active
    assert mx.get_cache_memory() > 0
    mx.clear_cache()
    assert mx.get_cache_memory() == 0
    # The driver got every block back, bar the library's own scratch (split-reduction counters
    # live as long as their stream).
    assert cu.allocated - driver_bytes <= 64 * 1024, cu.allocated - driver_bytes


@null_test
def test_full_updates_in_place_do_not_wait() -> None:
    import pycudamlx.core as mx

    x, v = mx.zeros((1024,)), mx.ones((1024,))
    _evaluated(x, v)

    def updates() -> Any:
        for _ in range(100):
            x[...] = v
        return x

    cu = _counted(updates)
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)


@null_test
def test_a_chain_with_python_scalars_never_waits() -> None:
    import pycudamlx.core as mx

    x = mx.ones((1024,))
    _evaluated(x)

    def chain() -> Any:
        y = x
        for _ in range(1000):
            y = y * 0.5 + 1.0
        return y

    cu = _counted(chain, fuse=False)
    assert cu.launches == 2000
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)
    assert cu.calls["cuMemsetD32Async"] <= 2  # 0.5 and 1.0 written once, then cached


@null_test
def test_small_host_arrays_in_a_chain_never_wait() -> None:
    """mx.array(host data) inside a batched chain (a per-call constant, a token list) goes up
    through the pinned upload ring: no host wait for the pooled block's last GPU user."""
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import memory

    x = mx.ones((8,), dtype=mx.uint32)
    _evaluated(x)
    n = memory.UPLOAD_RING_SLOTS * 2 + 3  # the ring wraps

    def chain() -> Any:
        y = x
        for i in range(n):
            y = y + mx.array(np.arange(8, dtype=np.uint32) + i)
        return y

    cu = _counted(chain, fuse=False)
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)
    assert cu.calls["cuMemcpyHtoDAsync"] >= n
    # each slot records its own event again: no event made per upload
    assert cu.calls["cuEventCreate"] <= memory.UPLOAD_RING_SLOTS, dict(cu.calls)


@null_test
def test_small_uploads_through_the_ring_keep_their_bytes() -> None:
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import memory
    from pycudamlx.graph.evaluate import to_gpu

    cuda_stream = mx.default_stream(mx.gpu).cuda_stream()
    n = memory.UPLOAD_RING_SLOTS + 9  # the ring wraps
    host = [np.arange(i, i + 7 + i % 5, dtype=np.float32) for i in range(n)]
    uploaded = [to_gpu(mx.array(h), cuda_stream) for h in host]
    for g, h in zip(uploaded, host):
        np.testing.assert_array_equal(g.to_numpy(), h)
    big = np.arange(memory.SMALL_UPLOAD_MAX // 4 + 1, dtype=np.float32)  # past the ring
    np.testing.assert_array_equal(to_gpu(mx.array(big), cuda_stream).to_numpy(), big)


@null_test
def test_scalar_updates_in_place_do_not_wait() -> None:
    import pycudamlx.core as mx

    x = mx.zeros((1024,))
    _evaluated(x)

    def updates() -> Any:
        for i in range(100):
            x[i] = 1.0
        return x

    cu = _counted(updates)
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)


@null_test
def test_optimizer_steps_evaluated_once_do_not_wait() -> None:
    import pycudamlx.core as mx
    import pycudamlx.nn as nn
    import pycudamlx.optimizers as optim

    model = nn.Linear(16, 8)
    opt = optim.AdamW(learning_rate=1e-3)
    a = mx.ones((4, 16))

    def loss(m: Any, inp: Any) -> Any:
        return mx.mean(m(inp) ** 2)

    step = nn.value_and_grad(model, loss)
    _, grads = step(model, a)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)  # state initialised, kernels loaded

    def steps() -> Any:
        for _ in range(5):
            _, g = step(model, a)
            opt.update(model, g)
        return [model.parameters(), opt.state]

    cu = _counted(steps)
    assert cu.launches > 0
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)


@null_test
def test_random_draws_do_not_wait() -> None:
    import pycudamlx.core as mx

    acc = mx.zeros((1024,))
    _evaluated(acc)

    def draws() -> Any:
        total = acc
        for _ in range(100):
            total = total + mx.random.normal((1024,))
        return total

    cu = _counted(draws)
    assert cu.synchronizing_calls() <= 2, dict(cu.calls)


@null_test
def test_a_weight_read_on_another_stream_waits_for_its_writer_once() -> None:
    """mlx-lm decodes on a stream of its own with weights written on the default stream: each
    weight costs one event wait in all, not one per use (~200 a token before)."""
    import pycudamlx.core as mx

    weight = mx.ones((256,)) * 3.0  # written on the default stream
    _evaluated(weight)
    generation = mx.new_stream(mx.gpu)

    def uses() -> Any:
        outs = []
        with mx.stream(generation):
            for _ in range(50):
                outs.append(mx.sum(weight * 2.0 + 1.0))
        return outs

    _evaluated(*uses())  # the pool now holds blocks this stream freed (reused without a wait)
    weight = mx.ones((256,)) * 3.0  # a new weight, written on the default stream
    _evaluated(weight)
    cu = _counted(uses)
    assert cu.launches >= 50
    assert cu.calls["cuStreamWaitEvent"] <= 3, dict(cu.calls)
    assert cu.calls["cuEventRecord"] <= 3, dict(cu.calls)


# --------------------------------------------------------------------------------------------------
# mx.compile as CUDA graphs (graph/primitives/compiled_graph.py, backend/cuda/graphs.py)


def _compiled_chain(ops: int = 40) -> tuple[Any, Any, Any]:
    import pycudamlx.core as mx

    x, b = mx.ones((1024,)), mx.ones((1024,))
    _evaluated(x, b)

    def body(x: Any, b: Any) -> Any:
        for i in range(ops // 2):
            x = mx.tanh(x) + b if i % 2 else x * 0.5 + b
        return x

    return mx.compile(body), x, b


@null_test
def test_a_compiled_chain_replays_as_one_graph_launch_from_its_third_call() -> None:
    from pycudamlx.core import _compile_replay

    assert _compile_replay.graphs_enabled
    cf, x, b = _compiled_chain()
    per_call = []
    for _ in range(5):
        cu = _counted(lambda: cf(x, b))
        per_call.append((cu.calls["cuLaunchKernel"], cu.calls["cuGraphLaunch"],
                         cu.calls["cuStreamBeginCapture"]))
        assert cu.synchronizing_calls() == 0, dict(cu.calls)
    assert per_call[0][1] == per_call[1][1] == 0  # the trace, then the op-by-op warm-up
    assert per_call[2][2] == 1 and per_call[2][1] == 1  # captured once, launched
    # later calls: one launch of the graph, no kernel launched one by one, no capture
    assert per_call[3] == per_call[4] == (0, 1, 0), per_call
    assert cu.calls["cuMemcpyDtoDAsync"] == 3  # two inputs in, one output out


@null_test
def test_graph_copy_kernels_replace_the_per_array_copies(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from pycudamlx.backend.cuda import graphs

    monkeypatch.setattr(graphs, "COPY_KERNELS", True)
    cf, x, b = _compiled_chain()
    for _ in range(4):
        cu = _counted(lambda: cf(x, b))
    assert cu.calls["cuGraphLaunch"] == 1 and cu.calls["cuLaunchKernel"] == 0
    # inputs in and outputs out are the graph's own copy kernels: two table uploads, no copy
    assert cu.calls["cuMemcpyDtoDAsync"] == 0 and cu.calls["cuMemcpyHtoDAsync"] == 2, cu.calls


@null_test
def test_a_graph_replay_fills_its_copy_tables_with_this_calls_addresses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import graphs
    from pycudamlx.graph.primitives import compiled_graph

    monkeypatch.setattr(graphs, "COPY_KERNELS", True)
    cf, x, b = _compiled_chain(8)
    for _ in range(3):
        _evaluated(cf(x, b))
    (prim,) = [r() for r in compiled_graph._live.values() if r() is not None]
    replay = prim.replay
    table_in, table_out = replay.tables
    bt = mx.ones((2048,))[::2]  # another layout: copied in by a kernel before the launch
    _evaluated(bt)
    held = []
    cu = _counted(lambda: held.append(cf(x, bt)) or held[0])
    out = held[0]
    srcs = {int(r[1]) for r in table_in.host if r[2]}
    assert x._data.buffer.ptr in srcs and len(srcs) == 1  # bt's row says 0 bytes
    assert sorted(int(r[2]) for r in table_in.host) == [0, 4096]
    assert [int(r[0]) for r in table_in.host] == [g.buffer.ptr for g in replay.static_in]
    assert [int(r[0]) for r in table_out.host] == [out._data.buffer.ptr]
    assert int(table_out.host[0, 1]) == replay.static_out[0].buffer.ptr
    assert int(table_out.host[0, 2]) == 4096
    assert cu.calls["cuLaunchKernel"] == 1 and cu.calls["cuGraphLaunch"] == 1  # bt's copy


@null_test
def test_graphs_off_keeps_the_op_by_op_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    from pycudamlx.core import _compile_replay

    monkeypatch.setattr(_compile_replay, "graphs_enabled", False)
    cf, x, b = _compiled_chain()
    for _ in range(4):
        cu = _counted(lambda: cf(x, b))
    assert cu.calls["cuGraphLaunch"] == 0 and cu.calls["cuStreamBeginCapture"] == 0
    assert cu.calls["cuLaunchKernel"] > 0


@null_test
def test_a_graph_goes_with_its_compiled_function() -> None:
    from pycudamlx.backend.cuda import memory
    from pycudamlx.graph.primitives import compiled_graph

    cf, x, b = _compiled_chain()
    for _ in range(3):
        _evaluated(cf(x, b))
    gc.collect()
    live = [r() for r in compiled_graph._live.values() if r() is not None]
    assert len(live) == 1 and live[0].replay is not None
    active = memory.stats.active_bytes
    pool_bytes = live[0].replay.pool.nbytes
    assert pool_bytes > 0
    cu = _null()
    cu.reset_counters()
    del cf, live
    gc.collect()
    assert cu.calls["cuGraphExecDestroy"] == 1
    assert not [r for r in compiled_graph._live.values() if r() is not None]
    assert memory.stats.active_bytes <= active - pool_bytes


@null_test
def test_work_a_graph_cannot_hold_abandons_the_capture_cleanly() -> None:
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import graphs, memory
    _evaluated(mx.ones((4,)))
    stream = mx.default_stream(mx.default_device()).cuda_stream()
    cu = _null()
    cu.reset_counters()
    active = memory.stats.active_bytes
    inputs = [graphs.GpuArray(memory.allocate(64, stream.device, memory.DEVICE, stream), 0,
                              (16,), (1,), mx.float32)]

    def build(static_in: list) -> list:
        out = memory.allocate(64, stream.device, memory.DEVICE, stream)
        assert isinstance(out, graphs.GraphBuffer)  # allocations come from the graph's pool
        memory.copy_host_to_device(out, np.ones(16, np.float32), stream)  # refused
        return []

    with pytest.raises(graphs.CaptureUnsupported, match="host-to-device copy"):
        graphs.Replay(stream, inputs, build)
    assert memory.capture_pool is None and not cu.capturing  # the capture ended
    assert cu.calls["cuGraphInstantiate"] == 0
    del inputs
    gc.collect()
    assert memory.stats.active_bytes <= active


@null_test
def test_a_graph_copy_table_never_takes_a_block_freed_inside_the_capture() -> None:
    """The replay overwrites a freed-and-reused block during the launch; the host writes the
    copy tables before it, so theirs must be blocks of their own."""
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import graphs

    _evaluated(mx.ones((4,)))
    device = mx.default_stream(mx.default_device()).cuda_stream().device
    pool = graphs.GraphPool(device)
    first = pool.allocate(48, device)
    ptr = first.ptr
    first.free()
    table = pool.allocate(48, device, fresh=True)
    assert table.ptr != ptr
    again = pool.allocate(48, device)
    assert again.ptr == ptr
    del table, again
    pool.release(None)
