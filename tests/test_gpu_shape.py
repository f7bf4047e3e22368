"""Creation, shape and indexing ops on the GPU: the same results as the CPU backend (itself
checked against MLX in test_creation/test_shape/test_indexing), run as kernels (strict mode), and
views that allocate nothing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from shapecheck import (  # noqa: F401 - keep_array_class is an autouse fixture
    DTYPES, host, rand, to_ours, keep_array_class)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def on_gpu(x: pm.array) -> pm.array:
    """x evaluated into GPU memory (a kernel wrote it)."""
    y = pm.add(x, pm.zeros((), x.dtype), stream=pm.gpu) if x.dtype != pm.bool_ else \
        pm.where(x, True, False, stream=pm.gpu)
    pm.eval(y)
    assert type(y._data).__name__ == "GpuArray"
    return y


def run_both(fn, *arrays: np.ndarray, tol: float | None = None):
    """fn(*arrays) on the CPU stream and on the GPU stream (inputs uploaded first): same dtype,
    shape and values; the GPU result lives in GPU memory."""
    with pm.stream(pm.cpu):
        ref = fn(*[to_ours(a) for a in arrays])
        ref_h = host(ref)
    gpu_in = [on_gpu(to_ours(a)) for a in arrays]
    with pm.stream(pm.gpu):
        out = fn(*gpu_in)
        pm.eval(out)
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    ref_hs = ref_h if isinstance(ref, (list, tuple)) else [ref_h]
    for o, r, rh in zip(outs, refs, ref_hs):
        assert o.dtype == r.dtype and o.shape == r.shape
        if o.size:
            assert type(o._data).__name__ == "GpuArray"
        oh = host(o)
        if tol is None:
            np.testing.assert_array_equal(oh.astype(np.float64) if oh.dtype.itemsize == 2 and
                                          oh.dtype.kind == "V" else oh, rh.astype(np.float64)
                                          if rh.dtype.itemsize == 2 and rh.dtype.kind == "V"
                                          else rh)
        else:
            np.testing.assert_allclose(oh.astype(np.complex128), rh.astype(np.complex128),
                                       rtol=tol, atol=tol)
    return out


def _h(x):  # numpy comparison helper for bfloat16 (ml_dtypes kind 'V')
    return x.astype(np.float32) if x.dtype.kind == "V" else x


# -- creation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_creation_every_dtype(name):
    d = getattr(pm, name)
    run_both(lambda: pm.zeros((3, 257), d))
    run_both(lambda: pm.ones((5, 3), d))
    run_both(lambda: pm.full((2, 7), 1, d))
    run_both(lambda: pm.eye(5, 7, 1, d))
    run_both(lambda: pm.tri(6, 4, -1, d))
    run_both(lambda: pm.linspace(-3, 7, 37, dtype=d))
    if name != "bool_":
        run_both(lambda: pm.arange(-7, 300, 3, d))
    x = rand((3, 4, 5), name, 1)
    run_both(lambda t: pm.tril(t, 1), x)
    run_both(lambda t: pm.triu(pm.transpose(t), -1), x)
    run_both(lambda t: pm.full((2, 3, 4, 5), t), x)
    run_both(lambda t: pm.full_like(t, 3), x)
    run_both(lambda t: pm.repeat(t, 3, 1), x)
    run_both(lambda t: pm.tile(t[:, ::2], (2, 1, 2)), x)


def test_creation_special_cases():
    run_both(lambda: pm.arange(0, 1e6, 0.37))
    run_both(lambda: pm.arange(2**24 + 10, dtype=pm.float32))
    run_both(lambda: pm.arange(10, 0, -3, pm.uint32))
    run_both(lambda: pm.arange(2**40, 2**40 + 1000))
    run_both(lambda: pm.arange(-3, 3, dtype=pm.uint8))
    run_both(lambda: pm.linspace(0.1, 1, 1001, dtype=pm.float64))
    run_both(lambda: pm.linspace(0, 1, 1))
    run_both(lambda: pm.linspace(0, 1, 4, endpoint=False))
    for fn in (pm.hanning, pm.hamming, pm.blackman, pm.bartlett):
        run_both(lambda: fn(101), tol=1e-7)
        run_both(lambda: fn(1))
    run_both(lambda: pm.meshgrid(pm.arange(4), pm.arange(3.0), pm.arange(2), indexing="ij"))
    run_both(lambda: pm.zeros((0, 5)))


# -- shape ops ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPES)
def test_shape_ops_every_dtype(name):
    x = rand((4, 5, 6), name, 2)
    y = rand((4, 2, 6), name, 3)
    run_both(lambda t: pm.reshape(pm.transpose(t), (-1, 4)), x)
    run_both(lambda t: pm.concatenate([t, t[:, ::-2]], 1), x)
    run_both(lambda t, u: pm.concatenate([t, u], 1), x, y)
    run_both(lambda t: pm.stack([t, pm.flip(t, 1)], 3), x)
    run_both(lambda t: pm.roll(t, (2, -3), (1, 2)), x)
    for mode in ("constant", "edge", "reflect", "symmetric"):
        run_both(lambda t: pm.pad(t, [(1, 2), (0, 3), (7, 1)], mode), x)
    run_both(lambda t: pm.pad(pm.transpose(t), 2, constant_values=1), x)
    run_both(lambda t: pm.diag(t[0, 1], 2), x)
    run_both(lambda t: pm.contiguous(pm.swapaxes(t, 0, 2)), x)
    run_both(lambda t: pm.as_strided(pm.transpose(t), (3, 3), (5, 1), 2), x)
    run_both(lambda t: pm.slice(t, pm.array([1, 2]), [0, 2], (2, 5, 3)), x)
    run_both(lambda t: pm.slice_update(t, pm.flip(t[:1, :2], 0), pm.array([3, 9]), [0, 1]), x)
    tol = 5e-2 if name in ("float16", "bfloat16") else (1e-5 if name in (
        "float32", "complex64") else None)
    run_both(lambda t: pm.trace(t, 1, 0, 2), x, tol=tol)
    run_both(lambda t: pm.trace(pm.transpose(t), -1), x, tol=tol)


def test_shape_ops_misc():
    x = rand((3, 4), "float32", 4)
    run_both(lambda t: pm.kron(t, t[:2, ::-1]), x, tol=1e-6)
    run_both(lambda t: pm.split(t, [1, 3], axis=1), x)
    run_both(lambda t: pm.unstack(t, axis=1), x)
    run_both(lambda t: pm.roll(t, 5), x)
    run_both(lambda t: pm.pad(t, 1, constant_values=pm.array(2.5)), x)
    run_both(lambda t: pm.pad(pm.zeros((0, 2)), 1, mode="edge"), x)
    run_both(lambda t: pm.concatenate([t, pm.zeros((3, 0)), t.astype(pm.int8)], 1), x)
    big = rand((2,) * 11, "int32", 5)
    run_both(lambda t: pm.reshape(pm.transpose(t), (-1,)), big)
    run_both(lambda t: pm.pad(t, 1, "reflect"), big)
    run_both(lambda t: t[pm.array([1, 0, 1]), ..., pm.array([0, 1, 1])], big)


def test_shape_beyond_device_memory_is_a_memory_error():
    with pm.stream(pm.gpu):
        big = pm.zeros((2**31 - 1, 2**20), pm.float32)  # 8 PiB
    with pytest.raises(MemoryError):
        pm.eval(big)
    small = pm.ones((3,), stream=pm.gpu)  # the device still works
    assert np.array(small).tolist() == [1, 1, 1]


def test_views_allocate_nothing():
    from pycudamlx.backend.cuda import memory

    x = on_gpu(to_ours(rand((8, 6, 5), "float32", 6)))
    s = memory.stats
    before = (s.active_bytes, s.managed_allocations, s.device_allocations, s.pool_hits)
    with pm.stream(pm.gpu):
        views = [
            pm.transpose(x), pm.swapaxes(x, 0, 2), pm.reshape(x, (48, 5)), pm.flatten(x, 1),
            pm.expand_dims(x, (0, 2)), pm.squeeze(x[:1]), pm.broadcast_to(x[:, :1], (3, 8, 6, 5)),
            pm.flip(x, (0, 2)), pm.diagonal(x, 1, 0, 1), x[1, ::-2, None, 1:4], x[..., 2],
            pm.as_strided(x, (4, 4), (5, 1), 3), pm.contiguous(x), pm.matrix_transpose(x),
            *pm.split(x, [1, 2], axis=1), *pm.unstack(x[:2]), pm.moveaxis(x, 0, -1),
            *pm.meshgrid(x[0, 0], x[1, 1]), pm.atleast_3d(x[0, 0]),
        ]
        pm.eval(*views)
    after = (s.active_bytes, s.managed_allocations, s.device_allocations, s.pool_hits)
    assert before == after
    for v in views:
        assert v._data.buffer is x._data.buffer
        np.testing.assert_array_equal(np.array(v), np.array(v))  # readable


# -- indexing ----------------------------------------------------------------------------------

_PARTS = {
    "i": 1, "n": -2, "s": slice(1, 3), "st": slice(0, 5, 2), "r": slice(None, None, -1),
    "f": slice(None), "a": np.array([2, 0, 2]), "a2": np.array([[1], [0]]), "N": None,
    "E": Ellipsis,
}


def _index(ix):
    return tuple(pm.array(v) if isinstance(v, np.ndarray) else v for v in ix)


def test_getitem_and_setitem_combinations_on_the_gpu():
    base = rand((4, 5, 6), "float32", 7)
    x = on_gpu(to_ours(base))
    rng = np.random.default_rng(0)
    for k in (1, 2, 3):
        for combo in itertools.product(_PARTS, repeat=k):
            if combo.count("E") > 1:
                continue
            ix = tuple(_PARTS[c] for c in combo)
            try:
                ref = base[ix]
            except IndexError:
                continue
            with pm.stream(pm.gpu):
                out = x[_index(ix)]
                pm.eval(out)
            np.testing.assert_array_equal(np.array(out), ref, err_msg=str(combo))
            if k == 3 and rng.random() > 0.3:
                continue
            v = rng.standard_normal(ref.shape).astype(np.float32)
            want = base.copy()
            want[ix] = v
            y = on_gpu(to_ours(base))
            with pm.stream(pm.gpu):
                y[_index(ix)] = pm.array(v)
                pm.eval(y)
            assert type(y._data).__name__ == "GpuArray"
            np.testing.assert_array_equal(np.array(y), want, err_msg=str(combo))


@pytest.mark.parametrize("name", DTYPES)
def test_gather_scatter_every_dtype(name):
    x = rand((6, 5), name, 8)
    v = rand((3, 5), name, 9)
    run_both(lambda t: t[pm.array([5, 0, -1, 2])], x)
    run_both(lambda t: pm.transpose(t)[::-1, pm.array([[1], [4]])], x)

    def upd(t, u):
        t[pm.array([4, 1, 4])] = u  # a duplicate: the last update wins
        t[::2, pm.array([0, 0])] = u[0, 0]
        return t

    run_both(upd, x, v)


def test_scatter_duplicates_and_masks_on_the_gpu():
    n = 1 << 16
    base = np.zeros(1000, np.float32)
    idx = np.random.default_rng(1).integers(0, 1000, n)
    vals = np.arange(n, dtype=np.float32)
    want = base.copy()
    for i, v in zip(idx, vals):
        want[i] = v
    run_both(lambda t, i, u: _set(t, i, u), base, idx.astype(np.int32), vals)
    y = on_gpu(to_ours(base))
    with pm.stream(pm.gpu):
        y[pm.array(idx)] = pm.array(vals)
    np.testing.assert_array_equal(np.array(y), want)
    m = rand((4, 5), "float32", 10)
    mask = m > 0
    run_both(lambda t, k: _set(t, k, 7.0), m, mask)
    run_both(lambda t, k: _set(t, k[:, 0], t[0]), m, mask)


def _set(t, i, u):
    t[i] = u
    return t


def test_lazy_out_of_range_indices_on_the_gpu():
    x = on_gpu(to_ours(np.arange(10, dtype=np.int32)))
    idx = on_gpu(to_ours(np.array([3, 20, -1, -30], np.int32)))
    with pm.stream(pm.gpu):
        g = x[idx]
        y = pm.zeros(5)
        y[idx] = pm.array([1.0, 2, 3, 4])
    np.testing.assert_array_equal(np.array(g), [3, 0, 9, 0])   # out of range reads 0
    np.testing.assert_array_equal(np.array(y), [0, 0, 0, 1, 3])  # 20 and -30 are skipped
    with pm.stream(pm.gpu):
        s = pm.slice(x, pm.array([8]), [0], (4,))
    np.testing.assert_array_equal(np.array(s), [6, 7, 8, 9])
