"""gather_mm, block_masked_mm, segmented_mm and hadamard_transform on the GPU under strict mode
(every op of the compositions ran as a kernel), with MLX's CPU values."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

mlx = pytest.importorskip("mlx.core")

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _check(fn, *values, tol=3e-3):
    ref = fn(mlx, *[mlx.array(v) if isinstance(v, np.ndarray) else v for v in values])
    with mx.stream(mx.gpu):
        out = fn(mx, *[mx.array(v) if isinstance(v, np.ndarray) else v for v in values])
        mx.eval(out)
    assert type(out._data).__name__ == "GpuArray"
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(np.array(out.astype(mx.float32, stream=mx.cpu)),
                               np.array(ref.astype(mlx.float32)), rtol=tol, atol=tol)


def test_gather_mm_gpu():
    a = RNG.standard_normal((8, 16, 64)).astype(np.float32)
    b = RNG.standard_normal((6, 64, 32)).astype(np.float32)
    li = RNG.integers(0, 8, (5, 3)).astype(np.int32)
    ri = RNG.integers(0, 6, (3,)).astype(np.uint32)
    _check(lambda m, a, b, l, r: m.gather_mm(a, b, l, r), a, b, li, ri)
    _check(lambda m, a, b, r: m.gather_mm(a[0], b, None, r, sorted_indices=True), a, b,
           np.sort(ri))


def test_block_masked_mm_gpu():
    a = RNG.standard_normal((2, 100, 64)).astype(np.float32)
    b = RNG.standard_normal((2, 64, 70)).astype(np.float32)
    mo = RNG.random((2, 4, 3)) > 0.3
    ml = RNG.random((2, 4, 2)).astype(np.float32)
    mr = RNG.random((2, 2, 3)) > 0.3
    _check(lambda m, a, b, o, l, r: m.block_masked_mm(a, b, 32, o, l, r), a, b, mo, ml, mr)


def test_segmented_mm_gpu():
    a = RNG.standard_normal((16, 40)).astype(np.float32)
    b = RNG.standard_normal((40, 24)).astype(np.float32)
    seg = np.array([[0, 10], [10, 40], [5, 5], [3, 30]], np.int32)
    _check(lambda m, a, b, s: m.segmented_mm(a, b, s), a, b, seg)


@pytest.mark.parametrize("n,dtype", [(1024, "float32"), (12 * 64, "float32"),
                                     (4096, "float16"), (28 * 4, "bfloat16")])
def test_hadamard_gpu(n, dtype):
    x = RNG.standard_normal((3, n)).astype(np.float32)
    tol = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 6e-2}[dtype]
    _check(lambda m, x: m.hadamard_transform(x.astype(getattr(m, dtype))), x, tol=tol)
