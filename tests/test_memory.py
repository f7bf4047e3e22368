"""MLX's memory API on any machine (CPU backend): names, signatures, return types, limits and
their previous-value returns, MLX's errors for bad arguments, statistics that move with CPU
arrays, the cache, get_array_buffer_size, the mx.metal aliases and the public
pycudamlx.cuda module's argument checks. Real MLX (CPU build) is the oracle where its
behaviour is observable on a CPU.
"""

from __future__ import annotations

import gc
import inspect
import warnings

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import cuda as pcuda
from pycudamlx.backend import memstats

API = ["get_active_memory", "get_peak_memory", "reset_peak_memory", "get_cache_memory",
       "set_memory_limit", "get_memory_limit", "set_cache_limit", "clear_cache",
       "set_wired_limit", "get_array_buffer_size"]


@pytest.fixture
def mlx():
    return pytest.importorskip("mlx.core")


@pytest.fixture
def cpu():
    """Run ops on the CPU stream, and restore the limits a test changes."""
    saved = (memstats.memory_limit, memstats.cache_limit)
    with mx.stream(mx.cpu):
        yield
    memstats.memory_limit, memstats.cache_limit = saved


def _rand(n, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32) + 0.5


@pytest.mark.parametrize("name", API)
def test_names_exist_and_parameters_match_mlx(mlx, name):
    ours = getattr(mx, name)
    assert callable(ours) and ours.__doc__
    doc = getattr(mlx, name).__doc__.splitlines()[0]  # MLX's first doc line: its signature
    theirs = [p.split(":")[0].strip() for p in doc[doc.index("(") + 1:doc.index(")")].split(",")
              if p.strip()]
    params = [("*" if p.kind is p.VAR_POSITIONAL else "") + p.name
              for p in inspect.signature(ours).parameters.values()]
    assert params == theirs


def test_return_types_match_mlx(mlx, cpu):
    for name in ("get_active_memory", "get_peak_memory", "get_cache_memory",
                 "get_memory_limit"):
        assert type(getattr(mx, name)()) is type(getattr(mlx, name)()) is int
    assert mx.reset_peak_memory() is None and mlx.reset_peak_memory() is None
    assert mx.clear_cache() is None and mlx.clear_cache() is None
    assert type(mx.set_wired_limit(0)) is int


def test_set_memory_limit_returns_the_previous_limit_like_mlx(mlx, cpu):
    theirs0 = mlx.get_memory_limit()
    ours0 = mx.get_memory_limit()
    try:
        assert mlx.set_memory_limit(1 << 30) == theirs0
        assert mx.set_memory_limit(1 << 30) == ours0
        assert mlx.set_memory_limit(12345) == 1 << 30
        assert mx.set_memory_limit(12345) == 1 << 30
        assert mlx.get_memory_limit() == mx.get_memory_limit() == 12345
        # MLX accepts 0, bools and numpy integers (anything int-like up to 2**64 - 1).
        assert mx.set_memory_limit(0) == 12345 and mx.get_memory_limit() == 0
        assert mx.set_memory_limit(True) == 0 and mx.get_memory_limit() == 1
        assert mx.set_memory_limit(np.int64(7)) == 1
        assert mx.set_memory_limit(2**64 - 1) == 7
        assert mx.set_memory_limit(limit=5) == 2**64 - 1
    finally:
        mlx.set_memory_limit(theirs0)
        mx.set_memory_limit(ours0)


def test_default_memory_limit_without_a_gpu_is_mlx_cpu_default(mlx):
    from conftest import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("with a GPU the default is 95% of its memory (MLX's CUDA backend)")
    saved = memstats.memory_limit
    memstats.memory_limit = None
    try:
        assert mx.get_memory_limit() == mlx.get_memory_limit()  # 80% of RAM
    finally:
        memstats.memory_limit = saved


def test_set_cache_limit_returns_previous(mlx, cpu):
    first = mx.set_cache_limit(1000)
    assert first == mx.get_memory_limit() or first >= 0  # default: the memory limit
    assert mx.set_cache_limit(0) == 1000
    assert mx.set_cache_limit(2000) == 0
    theirs = mlx.set_cache_limit(1000)
    assert mlx.set_cache_limit(0) == 1000
    mlx.set_cache_limit(theirs)


def test_set_wired_limit_is_an_accepted_no_op_like_mlx_without_metal(mlx):
    assert mlx.set_wired_limit(10) == 0 and mlx.set_wired_limit(0) == 0
    assert mx.set_wired_limit(10) == 0 and mx.set_wired_limit(0) == 0


@pytest.mark.parametrize("name", ["set_memory_limit", "set_cache_limit", "set_wired_limit"])
@pytest.mark.parametrize("bad", [-1, 1.5, None, "1", 2**64, 2.0])
def test_bad_limits_raise_mlx_type_error(mlx, cpu, name, bad):
    with pytest.raises(TypeError) as theirs:
        getattr(mlx, name)(bad)
    with pytest.raises(TypeError) as ours:
        getattr(mx, name)(bad)
    assert str(ours.value) == str(theirs.value)


def test_statistics_move_with_cpu_arrays(cpu):
    gc.collect()
    base = mx.get_active_memory()
    mx.reset_peak_memory()
    assert mx.get_peak_memory() == 0
    a = mx.array(_rand(1000))                       # numpy data: 4000 bytes
    assert mx.get_active_memory() == base + 4000
    b = mx.multiply(a, 3)
    assert mx.get_active_memory() == base + 4000    # lazy: nothing allocated yet
    mx.eval(b)
    assert mx.get_active_memory() >= base + 8000
    peak = mx.get_peak_memory()
    assert peak >= base + 8000
    del a
    gc.collect()
    assert mx.get_active_memory() >= base + 4000
    after_a = mx.get_active_memory()
    del b
    gc.collect()
    assert mx.get_active_memory() == after_a - 4000 == base
    assert mx.get_peak_memory() == peak             # the peak stays until reset
    mx.reset_peak_memory()
    assert mx.get_peak_memory() == 0


def test_views_count_their_buffer_once(cpu):
    gc.collect()
    base = mx.get_active_memory()
    a = mx.array(_rand(1024))
    mx.eval(a)
    v = mx.reshape(a, (32, 32))
    mx.eval(v)
    t = mx.transpose(v)
    mx.eval(t)
    assert mx.get_active_memory() == base + 4096
    del a, v, t
    gc.collect()
    assert mx.get_active_memory() == base


def test_a_loop_of_cpu_ops_returns_to_its_starting_memory(cpu):
    gc.collect()
    base = mx.get_active_memory()
    x = mx.array(_rand(513))
    b = mx.array(_rand(513, seed=1))
    for _ in range(200):
        x = mx.add(mx.multiply(x, 0.5), b)
        mx.eval(x)
    del x, b
    gc.collect()
    assert mx.get_active_memory() == base


def test_clear_cache_empties_the_cache(cpu):
    mx.clear_cache()
    assert mx.get_cache_memory() == 0


def test_get_array_buffer_size_matches_mlx(mlx, cpu):
    host = _rand(1001)
    grid = _rand(20).reshape(4, 5)
    cases = [
        lambda m: (m.array(host),),
        lambda m: (m.array(3.0),),
        lambda m: (m.array([]),),
        lambda m: (m.array(grid), m.array(grid)),                    # two buffers
        lambda m: ((lambda a: (a, [a, {"k": a}], 3, "x"))(m.array(grid)),),  # one, in a tree
        lambda m: (np.ones(3),),                                     # not an array: ignored
        lambda m: (),
    ]
    for make in cases:
        # MLX reports the size of the buffer its allocator handed out, which can be a larger
        # cached one that an earlier test freed (176 for two 80-byte arrays was seen): start empty
        mlx.clear_cache()
        theirs_args = make(mlx)
        ours_args = make(mx)
        assert mx.get_array_buffer_size(*ours_args) == mlx.get_array_buffer_size(*theirs_args)
    a = mx.array(grid)
    t = mx.transpose(a)
    mx.eval(t)
    assert mx.get_array_buffer_size(a, t) == mx.get_array_buffer_size(t) == 80
    s = mx.add(a, 1)
    mx.eval(s)
    assert mx.get_array_buffer_size((a, s)) == 160


def test_get_array_buffer_size_of_a_lazy_array_raises_like_mlx(mlx, cpu):
    with pytest.raises(ValueError) as theirs:
        mlx.get_array_buffer_size(mlx.add(mlx.array([1.0]), 1))
    with pytest.raises(ValueError) as ours:
        mx.get_array_buffer_size(mx.array([1.0]), [mx.add(mx.array([1.0]), 1)])
    assert str(ours.value) == str(theirs.value)


def test_metal_aliases_forward_with_a_deprecation_warning(cpu):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert mx.metal.get_active_memory() == mx.get_active_memory()
        assert mx.metal.get_peak_memory() == mx.get_peak_memory()
        assert mx.metal.get_cache_memory() == mx.get_cache_memory()
        previous = mx.get_memory_limit()
        assert mx.metal.set_memory_limit(previous) == previous
        assert mx.metal.set_wired_limit(0) == 0
        assert mx.metal.clear_cache() is None
        assert mx.metal.reset_peak_memory() is None
    assert caught and all(issubclass(w.category, DeprecationWarning) for w in caught)


def test_metal_memory_names_are_mlx_s(mlx):
    names = {n for n in dir(mlx.metal) if not n.startswith("_")}
    assert names <= set(dir(mx.metal))


# ------------------------------------------------------------------------------------------------
# pycudamlx.cuda: what can be checked without a GPU


def test_public_cuda_module_names():
    for name in ("prefetch", "advise", "set_auto_prefetch", "auto_prefetch", "memory_stats",
                 "memory_mode"):
        assert callable(getattr(pcuda, name))


def test_auto_prefetch_switch_returns_previous_state():
    first = pcuda.auto_prefetch()
    try:
        assert pcuda.set_auto_prefetch(False) is first
        assert pcuda.auto_prefetch() is False
        assert pcuda.set_auto_prefetch(True) is False
        assert pcuda.auto_prefetch() is True
        with pytest.raises(TypeError, match="True or False"):
            pcuda.set_auto_prefetch(1)
    finally:
        pcuda.set_auto_prefetch(first)


def test_memory_stats_is_a_snapshot_dict(cpu):
    stats = pcuda.memory_stats()
    for key in ("active_bytes", "host_bytes", "peak_bytes", "cached_bytes", "managed_bytes",
                "device_bytes", "managed_allocations", "device_allocations", "pool_hits",
                "prefetches", "prefetch_bytes", "advice_calls", "host_copies", "staged_bytes",
                "pinned_bytes", "oom_retries", "limit_refusals", "auto_prefetch"):
        assert key in stats
    stats["prefetches"] += 100
    assert pcuda.memory_stats()["prefetches"] == stats["prefetches"] - 100
    a = mx.array(_rand(100))
    assert pcuda.memory_stats()["host_bytes"] >= 400
    del a


def test_hints_check_their_arguments(cpu):
    a = mx.array(_rand(10))
    with pytest.raises(TypeError, match="mx.array"):
        pcuda.prefetch(np.ones(3))
    with pytest.raises(ValueError, match="'gpu', 'cpu'"):
        pcuda.prefetch(a, "tpu")
    with pytest.raises(TypeError, match="'gpu', 'cpu'"):
        pcuda.prefetch(a, 3.5)
    assert pcuda.prefetch(a, "cpu") is False          # host data is on the host already
    assert pcuda.prefetch(a, mx.cpu) is False
    with pytest.raises(TypeError, match="read_mostly"):
        pcuda.advise(a, read_mostly="yes")
    with pytest.raises(TypeError, match="mx.array"):
        pcuda.advise([1, 2])
    from conftest import gpu_unavailable_reason

    if gpu_unavailable_reason() is not None:
        with pytest.raises(ValueError, match="no GPU"):
            pcuda.prefetch(a, "gpu")
