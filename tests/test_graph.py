"""The lazy graph: laziness, evaluate-once, iterative scheduling, freeing, multi-output nodes."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import dtypes as dt
from pycudamlx.core.array import from_data, make, make_multi
from pycudamlx.graph.primitive import Primitive


class CountingAdd(Primitive):
    """add, counting how often it runs (to prove each node is evaluated once)."""

    __slots__ = ()
    name = "counting_add"
    calls = 0

    def eval_cpu(self, inputs, outs):
        CountingAdd.calls += 1
        return [inputs[0] + inputs[1]]


class SplitHalves(Primitive):
    __slots__ = ()
    name = "split_halves"
    calls = 0

    def eval_cpu(self, inputs, outs):
        SplitHalves.calls += 1
        x = inputs[0]
        h = x.shape[0] // 2
        return [x[:h].copy(), x[h:].copy()]


def _cpu_stream():
    return mx.default_stream(mx.cpu)


def test_ops_are_lazy_until_eval():
    CountingAdd.calls = 0
    a = mx.array(np.arange(5, dtype=np.float32))
    b = make(CountingAdd(), (a, a), (5,), dt.float32, _cpu_stream())
    assert b._data is None and CountingAdd.calls == 0
    mx.eval(b)
    assert CountingAdd.calls == 1
    np.testing.assert_array_equal(np.array(b), 2 * np.arange(5, dtype=np.float32))


def test_node_evaluates_once_however_often_asked():
    CountingAdd.calls = 0
    a = mx.array(np.ones(4, np.float32))
    shared = make(CountingAdd(), (a, a), (4,), dt.float32, _cpu_stream())
    c = make(CountingAdd(), (shared, shared), (4,), dt.float32, _cpu_stream())
    d = make(CountingAdd(), (shared, c), (4,), dt.float32, _cpu_stream())
    mx.eval(c, d, shared)
    mx.eval(d)
    d.tolist()
    assert CountingAdd.calls == 3
    np.testing.assert_array_equal(np.array(d), np.full(4, 6, np.float32))


def test_implicit_evaluation_paths():
    a = mx.array(np.arange(3, dtype=np.int32))
    for materialise in (lambda x: x.tolist(), lambda x: np.array(x), repr, str,
                        lambda x: x.item() if x.size == 1 else x.tolist()):
        b = mx.add(a, 1)
        assert b._data is None
        materialise(b)
        assert b._data is not None
    single = mx.add(mx.array(1), 1)
    assert bool(single) is True


def test_long_chain_does_not_recurse():
    x = mx.array(np.zeros(3, np.float32))
    one = mx.array(np.ones(3, np.float32))
    limit = sys.getrecursionlimit()
    for _ in range(100_000):
        x = mx.add(x, one)
    mx.eval(x)
    assert sys.getrecursionlimit() == limit
    np.testing.assert_array_equal(np.array(x), np.full(3, 100_000, np.float32))


def test_long_unevaluated_chain_can_be_dropped():
    x = mx.array(np.zeros(2, np.float32))
    for _ in range(200_000):
        x = mx.add(x, 1.0)
    del x  # deallocating a deep chain must not overflow the C stack
    gc.collect()


def test_intermediates_are_released_after_use():
    base = np.arange(1000, dtype=np.float32)
    a = mx.array(base)
    b = mx.add(a, 1.0)
    c = mx.add(b, 1.0)
    mx.eval(c)
    # b was only an input: once c ran, c no longer holds it.
    assert c._inputs == () and c._prim is None
    ref = weakref.ref(b)
    del b
    assert ref() is None


def test_multi_output_node_runs_once_and_has_no_cycles():
    SplitHalves.calls = 0
    x = mx.array(np.arange(6, dtype=np.float32))
    lo, hi = make_multi(SplitHalves(), (x,), [((3,), dt.float32), ((3,), dt.float32)],
                        _cpu_stream())
    np.testing.assert_array_equal(np.array(hi), [3, 4, 5])
    np.testing.assert_array_equal(np.array(lo), [0, 1, 2])
    assert SplitHalves.calls == 1
    gc.disable()
    try:
        lo2, hi2 = make_multi(SplitHalves(), (x,), [((3,), dt.float32), ((3,), dt.float32)],
                              _cpu_stream())
        ref = weakref.ref(lo2)
        del lo2  # freed by reference counting alone: no cycle through the sibling record
        assert ref() is None
        np.testing.assert_array_equal(np.array(hi2), [3, 4, 5])
    finally:
        gc.enable()


def test_a_multi_output_group_is_scheduled_once_with_its_consumers_after_it():
    from pycudamlx.graph import evaluate

    x = mx.array(np.arange(6, dtype=np.float32))
    lo, hi = make_multi(SplitHalves(), (mx.add(x, 1.0),), [((3,), dt.float32)] * 2,
                        _cpu_stream())
    tail = mx.multiply(hi, 2.0)
    order = evaluate._schedule([lo, tail, hi])
    groups = [n for n in order if n is lo or n is hi]
    assert len(groups) == 1  # one output stands for the group (a compiled step has ~335)
    position = {id(n): i for i, n in enumerate(order)}
    assert position[id(groups[0])] < position[id(tail)]
    del order, groups
    SplitHalves.calls = 0
    mx.eval(lo, tail, hi)
    assert SplitHalves.calls == 1
    np.testing.assert_array_equal(np.array(tail), [8, 10, 12])
    np.testing.assert_array_equal(np.array(lo), [1, 2, 3])


def test_eval_accepts_trees_and_skips_other_leaves():
    a = mx.add(mx.array([1, 2]), 1)
    b = mx.add(mx.array([3]), 1)
    mx.eval({"x": [a, (b, None)], "y": 3})
    assert a._data is not None and b._data is not None
    # MLX 0.32.4 skips leaves that are neither arrays nor containers (no error); training
    # loops evaluate ``[model.state, optimizer.state, mx.random.state]``
    c = mx.add(mx.array([5]), 1)
    mx.eval(object())
    mx.eval([c, object(), mx.random.state], "text")
    mx.async_eval(object(), mx.random.state)
    assert c._data is not None


def test_from_data_wraps_numpy():
    host = np.arange(4, dtype=np.int64)
    a = from_data(host, dt.int64)
    assert a.shape == (4,) and a.dtype == mx.int64
    assert a.tolist() == [0, 1, 2, 3]
