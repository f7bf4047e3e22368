"""mx.random on the GPU: the same bits as the CPU backend (itself checked against MLX in
test_random.py), run as kernels (strict mode): bit for bit for bits, split, uniform, randint,
bernoulli and permutation; within a few ulps where the GPU's erfinv/log/exp enter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from shapecheck import host, keep_array_class, to_ours  # noqa: F401

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _bits_view(x: np.ndarray) -> np.ndarray:
    if x.dtype == ml_dtypes.bfloat16 or x.dtype == np.float16:
        return x.view(np.uint16)
    if x.dtype == np.float32:
        return x.view(np.uint32)
    if x.dtype == np.float64:
        return x.view(np.uint64)
    return x


def both(fn, ulps: float | None = None, arrays: tuple = ()):
    """fn(M, *arrays) on the CPU stream and on the GPU stream; the GPU result is a GpuArray with
    the CPU's bits (ulps=None) or within ulps * eps * max(1, |x|)."""
    with pm.stream(pm.cpu):
        ref = fn(*[to_ours(a) for a in arrays])
        r = host(ref)
    with pm.stream(pm.gpu):
        out = fn(*[to_ours(a) for a in arrays])
        pm.eval(out)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if out.size:
        assert type(out._data).__name__ == "GpuArray"
    o = host(out)
    if ulps is None:
        np.testing.assert_array_equal(_bits_view(np.ascontiguousarray(o)),
                                      _bits_view(np.ascontiguousarray(r)))
    else:
        eps = 2.0 ** -7 if o.dtype == ml_dtypes.bfloat16 else float(np.finfo(o.dtype).eps)
        a, b = o.astype(np.complex128), r.astype(np.complex128)
        bad = ~(np.abs(a - b) <= ulps * eps * np.maximum(1.0, np.abs(b)))
        assert not bad.any(), (a[bad][:5], b[bad][:5])
    return out


K = pm.random.key

# sizes that exercise odd word counts, partial last words, multi-block grids and grid strides
SIZES = [0, 1, 2, 3, 5, 8, 1001, 65537, 1 << 20, 3 * (1 << 20) + 7]


@pytest.mark.parametrize("n", SIZES)
def test_uniform_and_bits(n):
    for seed in (0, 12345):
        both(lambda: pm.random.uniform(shape=(n,), key=K(seed)))
        both(lambda: pm.random.uniform(-2, 7.5, (n,), key=K(seed)))
        both(lambda: pm.random.uniform(shape=(n,), dtype=pm.float16, key=K(seed)))
        both(lambda: pm.random.uniform(1, 3, (n,), dtype=pm.bfloat16, key=K(seed)))
        both(lambda: pm.random.bernoulli(0.3, (n,), key=K(seed)))
        both(lambda: pm.random.randint(-7, 100, (n,), key=K(seed)))
        both(lambda: pm.random.randint(0, 200, (n,), dtype=pm.uint8, key=K(seed)))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "bool_"])
def test_randint_dtypes(dtype):
    d = getattr(pm, dtype)
    for lo, hi in [(0, 100), (-5, 3), (3, 3), (5, 2), (0, 300), (0.5, 10.7), (2**24, 2**24 + 2)]:
        both(lambda: pm.random.randint(lo, hi, (4097,), d, key=K(9)))
        both(lambda: pm.random.randint(pm.array(lo), pm.array(hi), (4097,), d, key=K(9)))


def test_bernoulli_scalar_and_array_p():
    for p in (0.0, 1.0, 0.5, 0.1, 1e-10):
        both(lambda: pm.random.bernoulli(p, (4099,), key=K(4)))
        both(lambda: pm.random.bernoulli(pm.array(p), (4099,), key=K(4)))
        with pm.stream(pm.gpu):
            a = pm.random.bernoulli(p, (4099,), key=K(4))
            b = pm.random.bernoulli(pm.array(p), (4099,), key=K(4))
            pm.eval(a, b)
        np.testing.assert_array_equal(np.array(a), np.array(b))


def test_bits_widths_and_split():
    from pycudamlx.core import random as r

    for n in (0, 1, 2, 3, 4, 5, 7, 9, 1023, 4097):
        for width in (1, 2, 4):
            both(lambda: r._bits((n,), width, K(3), pm.default_stream(pm.default_device())))
    for num in (0, 1, 2, 3, 17):
        both(lambda: pm.random.split(K(7), num))
    # a key that is a strided view computed on the GPU
    both(lambda: pm.random.uniform(shape=(33,), key=pm.random.split(K(1), 4).T[:, 1]))
    both(lambda: pm.random.uniform(shape=(2, 3, 5), key=pm.random.split(K(2))[1]))


def test_array_bounds():
    rng = np.random.default_rng(0)
    lo = rng.standard_normal((64, 1)).astype(np.float32)
    hi = (rng.random((1, 33)) + 2).astype(np.float32)
    both(lambda a, b: pm.random.uniform(a, b, (64, 33), key=K(4)), arrays=(lo, hi))
    both(lambda a, b: pm.random.uniform(a, b, (2, 64, 33), pm.float16, key=K(4)),
         arrays=(lo, hi))
    li = rng.integers(-50, 0, (64, 1)).astype(np.int32)
    both(lambda a: pm.random.randint(a, 77, (64, 33), key=K(5)), arrays=(li,))
    p = rng.random((64, 33)).astype(np.float32)
    both(lambda a: pm.random.bernoulli(a, key=K(6)), arrays=(p,))
    both(lambda a: pm.random.bernoulli(a.T, (3, 33, 64), key=K(6)), arrays=(p,))


@pytest.mark.parametrize("n", [1, 7, 1000, 1 << 16])
def test_normal_family(n):
    both(lambda: pm.random.normal((n,), key=K(1)), ulps=8)
    both(lambda: pm.random.normal((n,), pm.float16, loc=1.0, scale=2.0, key=K(1)), ulps=2)
    both(lambda: pm.random.normal((n,), pm.bfloat16, key=K(1)), ulps=2)
    both(lambda: pm.random.normal((n,), pm.complex64, key=K(1)), ulps=8)
    both(lambda: pm.random.gumbel((n,), key=K(2)), ulps=16)
    both(lambda: pm.random.laplace((n,), loc=0.5, scale=2.0, key=K(3)), ulps=16)
    both(lambda: pm.random.truncated_normal(-1.5, 2.0, (n,), key=K(4)), ulps=512)


def test_fused_normal_equals_composition_on_gpu():
    """Scalar loc/scale take the fused kernel, array ones the elementwise chain: the same bits
    (both use the GPU's erfinvf and round each step in the dtype)."""
    for dtype in (pm.float32, pm.float16, pm.bfloat16, pm.float64):
        with pm.stream(pm.gpu):
            a = pm.random.normal((4097,), dtype, 0.5, 2.0, key=K(3))
            b = pm.random.normal((4097,), dtype, pm.array(0.5), pm.array(2.0), key=K(3))
            pm.eval(a, b)
        if _env.DISABLE_NVRTC:
            # kernels_ptx (NVRTC 12.0) for the common dtypes, a cache filled by NVRTC 13 for
            # float64: two compilers may round an erfinvf step 1 float32 ulp apart (H200)
            np.testing.assert_allclose(host(a).astype(np.float64), host(b).astype(np.float64),
                                       rtol=2.4e-7, atol=0)
        else:
            np.testing.assert_array_equal(_bits_view(host(a)), _bits_view(host(b)))
    both(lambda: pm.random.normal((999,), pm.float64, loc=-1, scale=0.5, key=K(2)),
         ulps=2.0 ** 31)


def _mostly_same(fn, arrays: tuple) -> None:
    """CPU and GPU indices agree but for draws whose top two candidates tie to the last bit of
    the Gumbel noise (the GPU's logf rounds differently from numpy's)."""
    with pm.stream(pm.cpu):
        ref = np.array(fn(*[to_ours(a) for a in arrays]))
    with pm.stream(pm.gpu):
        out = fn(*[to_ours(a) for a in arrays])
        pm.eval(out)
    assert type(out._data).__name__ == "GpuArray" and out.dtype == pm.uint32
    got = np.array(out)
    assert got.shape == ref.shape and (got == ref).mean() > 0.99


def test_categorical():
    rng = np.random.default_rng(1)
    logits = (rng.standard_normal((37, 51)) * 3).astype(np.float32)
    for axis in (0, 1, -1):
        _mostly_same(lambda x: pm.random.categorical(x, axis=axis, key=K(8)), (logits,))
    _mostly_same(lambda x: pm.random.categorical(x, num_samples=9, key=K(8)), (logits,))
    _mostly_same(lambda x: pm.random.categorical(x, shape=(4, 37), key=K(8)), (logits,))
    _mostly_same(lambda x: pm.random.categorical(x.astype(pm.float64), key=K(8)), (logits,))
    _mostly_same(lambda x: pm.random.categorical(x.T, axis=0, key=K(8)), (logits,))
    v = np.log(rng.random(1000) + 1e-3).astype(np.float32)
    # one distribution: the inverse-CDF path (GPU expf may move a boundary draw: compare most)
    with pm.stream(pm.cpu):
        ref = np.array(pm.random.categorical(to_ours(v), num_samples=5000, key=K(9)))
    with pm.stream(pm.gpu):
        out = pm.random.categorical(to_ours(v), num_samples=5000, key=K(9))
        pm.eval(out)
    assert type(out._data).__name__ == "GpuArray"
    assert (np.array(out) == ref).mean() > 0.999


@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000, 1024, 1025, 70000, 300000])
def test_permutation(n):
    out = both(lambda: pm.random.permutation(n, key=K(n)))
    assert sorted(np.array(out).tolist()) == list(range(n))


def test_permutation_of_array():
    x = np.arange(5 * 300, dtype=np.float32).reshape(5, 300)
    both(lambda a: pm.random.permutation(a, axis=1, key=K(2)), arrays=(x,))
    both(lambda a: pm.random.permutation(a, key=K(3)), arrays=(x,))


def test_global_key_on_gpu():
    def draw(stream):
        pm.random.seed(11)
        with pm.stream(stream):
            out = [pm.random.uniform(shape=(1000,)), pm.random.randint(0, 9, (100,)),
                   pm.random.permutation(50)]
            pm.eval(out)
        return [np.array(o) for o in out]

    for a, b in zip(draw(pm.cpu), draw(pm.gpu)):
        np.testing.assert_array_equal(a, b)


def test_multivariate_normal_gpu_stream_raises():
    with pytest.raises(ValueError, match="CPU stream"):
        pm.random.multivariate_normal(pm.zeros((2,)), pm.eye(2), (3,), key=K(0), stream=pm.gpu)


def test_uniform_large():
    """A draw past 2**31 bytes: 64-bit indexing in the grid-stride loops."""
    n = (1 << 29) + 3
    with pm.stream(pm.gpu):
        x = pm.random.uniform(shape=(n,), key=K(5))
        pm.eval(x)
        tail = np.array(x[-5:])
    from pycudamlx.graph.primitives.random import threefry2x32

    half, odd = n // 2, n % 2
    j = np.arange(n - 5, n, dtype=np.uint64)  # words of the second half: pair (j - half - odd, j)
    _, w = threefry2x32(0, 5, (j - np.uint64(half + odd)).astype(np.uint32), j.astype(np.uint32))
    ref = np.minimum(w.astype(np.float32) / np.float32(4294967295.0),
                     np.nextafter(np.float32(1), np.float32(0)))
    np.testing.assert_array_equal(tail.view(np.uint32), ref.view(np.uint32))
