"""The elementwise launch shapes beyond contiguous: row kernels (broadcast along rows or columns,
batched, flipped), tiled kernels (transposed operands, for binary, unary and copy/cast) and the
strided fallback next to them, on the GPU against numpy, at sizes that cross tile and block
edges. Each case also checks which kernel the launcher chose, so a test cannot pass by quietly
taking the strided path.
"""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env
from pycudamlx.backend.cuda import elementwise as ew

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int8", "uint8", "complex64"]


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 8
    if dtype == "complex64":
        return (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    if dtype == "bfloat16":
        import ml_dtypes

        return x.astype(ml_dtypes.bfloat16)
    if dtype in ("uint8",):
        return np.abs(x).astype(np.uint8)
    return x.astype(dtype)


def _mx(host, dtype):
    """An mx array of exactly ``dtype`` (mx.array alone turns float64 numpy data into float32,
    as MLX does)."""
    return mx.array(host, dtype=getattr(mx, dtype))


def _kernels_used():
    """Names of the kernels the cached launch plans hold (the launcher's choices)."""
    return {plan[0].name for plan in ew._plans.values() if plan}


def _check(got, want, dtype):
    got = np.array(got)
    if dtype in ("float16", "bfloat16"):
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2,
                                   atol=1e-2)
    elif dtype in ("float32", "complex64"):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


def _np_add(a, b, dtype):
    if dtype in ("float16", "bfloat16"):
        return (a.astype(np.float32) + b.astype(np.float32)).astype(a.dtype)
    return a + b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,cols", [(37, 1024), (3, 4096 + 64), (70000, 512)])
def test_row_broadcasts(dtype, rows, cols):
    a_np = _rand((rows, cols), dtype, 1)
    row_np = _rand((cols,), dtype, 2)
    col_np = _rand((rows, 1), dtype, 3)
    a, row, col = _mx(a_np, dtype), _mx(row_np, dtype), _mx(col_np, dtype)
    ew._plans.clear()
    with mx.stream(mx.gpu):
        _check(a + row, _np_add(a_np, row_np[None, :], dtype), dtype)
        _check(row + a, _np_add(row_np[None, :], a_np, dtype), dtype)
        _check(a + col, _np_add(a_np, col_np, dtype), dtype)
        _check(col + a, _np_add(col_np, a_np, dtype), dtype)
        # flipped rows: a negative outer stride, row starts computed per row
        _check(a[::-1] + row, _np_add(a_np[::-1], row_np[None, :], dtype), dtype)
    used = _kernels_used()
    width = 16 // max(a_np.dtype.itemsize, 1)
    if cols % width == 0 and cols // width >= ew._MIN_ROW_PACKS:
        for ia, ib in ((1, 1), (1, 0), (0, 1)):
            assert any(f"binary_rows<" in k and k.endswith(f", {ia}, {ib}>") for k in used), used


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_batched_row_broadcast(dtype):
    a_np = _rand((5, 7, 2048), dtype, 4)
    b_np = _rand((7, 2048), dtype, 5)  # broadcast over the batch: outer strides (0, 2048)
    a, b = _mx(a_np, dtype), _mx(b_np, dtype)
    ew._plans.clear()
    with mx.stream(mx.gpu):
        _check(a * b, (a_np.astype(np.float64) * b_np.astype(np.float64)).astype(a_np.dtype)
               if dtype != "int64" else a_np * b_np, dtype)
        # a transposed batch: rows of a permuted view still run along a row
        at = mx.transpose(a, (1, 0, 2))
        _check(at - b[:, None, :], _np_add(a_np.transpose(1, 0, 2), -b_np[:, None, :], dtype)
               if dtype != "int64" else a_np.transpose(1, 0, 2) - b_np[:, None, :], dtype)
    assert any("binary_rows<" in k for k in _kernels_used())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(67, 1000), (64, 64), (1, 130), (129, 3), (300, 257)])
def test_transposed_operands(dtype, shape):
    m, n = shape
    a_np = _rand((n, m), dtype, 6)   # used as a.T
    b_np = _rand((m, n), dtype, 7)
    a, b = _mx(a_np, dtype), _mx(b_np, dtype)
    ew._plans.clear()
    with mx.stream(mx.gpu):
        _check(a.T + b, _np_add(a_np.T, b_np, dtype), dtype)
        _check(b + a.T, _np_add(b_np, a_np.T, dtype), dtype)
        _check(a.T + a.T, _np_add(a_np.T, a_np.T, dtype), dtype)  # both: strided kernel
        _check(mx.negative(a.T), -a_np.T if dtype != "uint8" else (-a_np.T).astype(np.uint8),
               dtype)
        _check(mx.contiguous(a.T), np.ascontiguousarray(a_np.T), dtype)
        if dtype != "complex64":
            _check(a.T.astype(mx.float32), a_np.T.astype(np.float32), "float32")
    if m > 1 and n > 1:
        used = _kernels_used()
        for name in ("binary_tiled<", "unary_tiled<", "copy_tiled<"):
            assert any(k.startswith(name) for k in used), (name, used)


def test_tiles_past_the_grid_height():
    """More row tiles than a grid's y extent (65,535): the kernel loops over them."""
    rows, cols = 65535 * 64 + 70, 2
    a_np = _rand((cols, rows), "float32", 8)
    b_np = _rand((rows, cols), "float32", 9)
    a, b = mx.array(a_np), mx.array(b_np)
    ew._plans.clear()
    with mx.stream(mx.gpu):
        _check(a.T + b, a_np.T + b_np, "float32")
        _check(mx.contiguous(a.T), np.ascontiguousarray(a_np.T), "float32")
    assert any(k.startswith("binary_tiled<") for k in _kernels_used())


def test_rows_past_the_grid_height():
    rows, cols = 70000, 512
    a_np = _rand((rows, cols), "float32", 10)
    row_np = _rand((cols,), "float32", 11)
    with mx.stream(mx.gpu):
        _check(mx.array(a_np) + mx.array(row_np), a_np + row_np, "float32")


def test_unaligned_rows_take_the_strided_kernel():
    a_np = _rand((33, 1001), "float32", 12)
    row_np = _rand((1001,), "float32", 13)
    ew._plans.clear()
    with mx.stream(mx.gpu):
        _check(mx.array(a_np) + mx.array(row_np), a_np + row_np, "float32")
    assert not any("binary_rows<" in k for k in _kernels_used())
