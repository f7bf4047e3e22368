"""gather_mm, block_masked_mm, segmented_mm and hadamard_transform on the GPU under strict mode
(every op of the compositions ran as a kernel), without real MLX: each GPU result is compared
with the same call by pycudamlx on the CPU stream (held to real MLX by
tests/test_masked_matmul.py) and, where the definition is short, with numpy in float64.
TF32 is off (PYCUDAMLX_ENABLE_TF32=0) except in the test of the default TF32 path."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

#: Where the calls under test run, and where their reference runs.
GPU = mx.gpu
CPU = mx.cpu

RNG = np.random.default_rng(3)

#: Relative tolerances (of max(1, |reference|)) of a GPU result against the CPU backend.
TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 6e-2}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    """Host fallbacks on a GPU stream raise; float32 matmuls in full precision."""
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    yield


def _in_gpu_memory(a: mx.array) -> bool:
    mx.eval(a)
    return type(a._data).__name__ == "GpuArray"


def _host(a: mx.array) -> np.ndarray:
    mx.eval(a)
    if a.dtype in (mx.float16, mx.bfloat16):
        a = a.astype(mx.float32, stream=CPU)
    return np.array(a)


def _assert_close(out: np.ndarray, ref: np.ndarray, tol: float) -> None:
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale)


def _check(fn: Callable[..., mx.array], *values: Any, dtype: str = "float32",
           tol: float | None = None, oracle: np.ndarray | None = None) -> mx.array:
    """``fn(*arrays)`` on the GPU: in GPU memory, and the CPU stream's shape, dtype and values
    (and ``oracle``'s values, computed in float64, where given). Float inputs are cast to
    ``dtype`` on the device; integer and bool inputs (indices, masks) keep theirs."""
    tol = TOL[dtype] if tol is None else tol
    d = getattr(mx, dtype)

    def call():
        args = []
        for v in values:
            if isinstance(v, np.ndarray):
                a = mx.array(v)
                args.append(a.astype(d) if v.dtype == np.float32 else a)
            else:
                args.append(v)
        return fn(*args)

    with mx.stream(CPU):
        ref = call()
        mx.eval(ref)
    with mx.stream(GPU):
        out = call()
        mx.eval(out)
    assert _in_gpu_memory(out)
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    _assert_close(_host(out), _host(ref), tol)
    if oracle is not None:
        assert tuple(out.shape) == oracle.shape
        _assert_close(_host(out), oracle, tol)
    return out


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _i(hi: int, *shape: int, dtype=np.int32) -> np.ndarray:
    return RNG.integers(0, hi, size=shape).astype(dtype)


# ----------------------------------------------------------------------------------------------
# gather_mm


def _gather_mm_oracle(a: np.ndarray, b: np.ndarray, li: np.ndarray, ri: np.ndarray
                      ) -> np.ndarray:
    """a[li] @ b[ri] over the flattened batch dimensions, indices broadcast together."""
    af = a.astype(np.float64).reshape(-1, *a.shape[-2:])
    bf = b.astype(np.float64).reshape(-1, *b.shape[-2:])
    li, ri = np.broadcast_arrays(li, ri)
    return af[li] @ bf[ri]


GATHER_CASES = [
    ((4, 2, 3), (5, 3, 6), (3,), (3,)),
    ((4, 2, 3), (5, 3, 6), (3, 1), (1, 3)),
    ((2, 2, 2, 3), (5, 3, 6), (2, 1), (4,)),
    ((2, 3), (5, 3, 6), None, (3,)),
    ((4, 1, 3), (3, 6), (3,), None),
    ((4, 2, 3), (4, 3, 6), None, None),
    ((4, 2, 3), (5, 3, 6), (), (2,)),
    ((3,), (5, 3, 6), None, (3,)),
    ((4, 2, 3), (3,), (2,), None),
    ((8, 16, 64), (6, 64, 32), (5, 3), (3,)),
    ((8, 1, 96), (6, 96, 130), (7,), (7,)),
]


@pytest.mark.parametrize("case", GATHER_CASES, ids=str)
def test_gather_mm(case):
    ash, bsh, li_shape, ri_shape = case
    a, b = _f(*ash), _f(*bsh)
    na = int(np.prod(ash[:-2])) if len(ash) > 2 else 1
    nb = int(np.prod(bsh[:-2])) if len(bsh) > 2 else 1
    li = None if li_shape is None else _i(na, *li_shape)
    ri = None if ri_shape is None else _i(nb, *ri_shape, dtype=np.uint32)
    oracle = None
    if li is not None and ri is not None and len(ash) > 2 and len(bsh) > 2:
        oracle = _gather_mm_oracle(a, b, li, ri)
    _check(lambda a, b, l, r: mx.gather_mm(a, b, l, r), a, b, li, ri, oracle=oracle)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gather_mm_sorted_and_dtypes(dtype):
    a, b = _f(8, 16, 64), _f(6, 64, 32)
    ri = np.sort(_i(6, 9, dtype=np.uint32))
    li = _i(8, 9)
    _check(lambda a, b, r: mx.gather_mm(a[0], b, None, r, sorted_indices=True), a, b, ri,
           dtype=dtype)
    _check(lambda a, b, l, r: mx.gather_mm(a, b, l, r, sorted_indices=True), a, b, li, ri,
           dtype=dtype, oracle=_gather_mm_oracle(a, b, li, ri) if dtype == "float32" else None)


def test_gather_mm_tf32_default(monkeypatch):
    """MLX's default on CUDA: float32 products through TF32 (10 mantissa bits)."""
    monkeypatch.delenv("PYCUDAMLX_ENABLE_TF32", raising=False)
    monkeypatch.delenv("MLX_ENABLE_TF32", raising=False)
    a, b = _f(8, 32, 128), _f(6, 128, 64)
    li, ri = _i(8, 4), _i(6, 4)
    _check(lambda a, b, l, r: mx.gather_mm(a, b, l, r), a, b, li, ri, tol=1e-2,
           oracle=_gather_mm_oracle(a, b, li, ri))


# ----------------------------------------------------------------------------------------------
# block_masked_mm


def _expand(mask: np.ndarray | None, rows: int, cols: int, bs: int) -> np.ndarray | float:
    """A block mask (..., rows/bs, cols/bs) as an element mask (..., rows, cols)."""
    if mask is None:
        return 1.0
    m = np.repeat(np.repeat(mask.astype(np.float64), bs, axis=-2), bs, axis=-1)
    return m[..., :rows, :cols]


def _block_masked_oracle(a, b, bs, mo, ml, mr) -> np.ndarray:
    m_, k = a.shape[-2:]
    n = b.shape[-1]
    out = (a.astype(np.float64) * _expand(ml, m_, k, bs)) @ \
        (b.astype(np.float64) * _expand(mr, k, n, bs))
    return out * _expand(mo, m_, n, bs)


@pytest.mark.parametrize("bs", [32, 64])
@pytest.mark.parametrize("masks", ["none", "out", "lhs_rhs", "all", "float", "broadcast"])
def test_block_masked_mm(bs, masks):
    m_, k, n = 100, 96, 70
    a, b = _f(2, m_, k), _f(2, k, n)
    nm, nk, nn = -(-m_ // bs), -(-k // bs), -(-n // bs)
    mo = RNG.random((2, nm, nn)) > 0.3
    ml = RNG.random((2, nm, nk)) > 0.3
    mr = RNG.random((2, nk, nn)) > 0.3
    pick = {
        "none": (None, None, None), "out": (mo, None, None), "lhs_rhs": (None, ml, mr),
        "all": (mo, ml, mr),
        "float": (mo.astype(np.float32) * 0.5, RNG.random((2, nm, nk)).astype(np.float32),
                  RNG.random((2, nk, nn)).astype(np.float32)),
        "broadcast": (mo[0], ml[:1], None),
    }[masks]
    _check(lambda a, b, o, l, r: mx.block_masked_mm(a, b, bs, o, l, r), a, b, *pick,
           oracle=_block_masked_oracle(a, b, bs, *pick))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_block_masked_mm_low_precision(dtype):
    a, b = _f(3, 64, 128), _f(3, 128, 96)
    mo = RNG.random((3, 2, 3)) > 0.3
    ml = RNG.random((3, 2, 4)) > 0.3
    mr = RNG.random((3, 4, 3)) > 0.3
    _check(lambda a, b, o, l, r: mx.block_masked_mm(a, b, 32, o, l, r), a, b, mo, ml, mr,
           dtype=dtype)
    # float masks take the operands' dtype
    _check(lambda a, b, o: mx.block_masked_mm(a, b, 32, o), a, b,
           RNG.random((3, 2, 3)).astype(np.float32), dtype=dtype)


def test_block_masked_mm_vector_and_unbatched():
    a, b = _f(64, 64), _f(64, 32)
    mo = np.array([[True, False], [True, True]])
    _check(lambda a, b, o: mx.block_masked_mm(a, b, 32, o), a, b, mo[:, :1],
           oracle=_block_masked_oracle(a, b, 32, mo[:, :1], None, None))
    _check(lambda a, b, o: mx.block_masked_mm(a, b, 32, None, o, o[:, :1]), a, b, mo,
           oracle=_block_masked_oracle(a, b, 32, None, mo, mo[:, :1]))
    _check(lambda a, b, o: mx.block_masked_mm(a, b[:, 0], 32, o[:, 0], None, o[:, 0]), a, b, mo)


# ----------------------------------------------------------------------------------------------
# segmented_mm


def _segmented_oracle(a: np.ndarray, b: np.ndarray, seg: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    flat = seg.reshape(-1, 2)
    out = np.stack([a64[..., s:e] @ b64[..., s:e, :] for s, e in flat])
    return out.reshape(*seg.shape[:-1], *out.shape[1:])


@pytest.mark.parametrize("segments", [[[0, 2], [2, 5], [1, 1]], [0, 5], [[[0, 3]], [[3, 5]]],
                                      [[4, 2]]], ids=str)
def test_segmented_mm_small(segments):
    a, b = _f(3, 5), _f(5, 4)
    seg = np.array(segments, np.int32)
    _check(lambda a, b, s: mx.segmented_mm(a, b, s), a, b, seg,
           oracle=_segmented_oracle(a, b, seg))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_segmented_mm(dtype):
    a, b = _f(16, 40), _f(40, 24)
    seg = np.array([[0, 10], [10, 40], [5, 5], [3, 30], [0, 40]], np.int32)
    _check(lambda a, b, s: mx.segmented_mm(a, b, s), a, b, seg, dtype=dtype,
           oracle=_segmented_oracle(a, b, seg) if dtype == "float32" else None)


def test_segmented_mm_many_segments():
    a, b = _f(9, 300), _f(300, 7)
    cuts = np.sort(RNG.integers(0, 300, size=33))
    seg = np.stack([cuts[:-1], cuts[1:]], axis=-1).astype(np.int32).reshape(4, 8, 2)
    _check(lambda a, b, s: mx.segmented_mm(a, b, s), a, b, seg,
           oracle=_segmented_oracle(a, b, seg))


# ----------------------------------------------------------------------------------------------
# hadamard_transform


def _sylvester(n: int) -> np.ndarray:
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


@pytest.mark.parametrize("n", [1, 2, 8, 256, 1024, 4096, 12, 24, 20, 80, 28, 56, 12 * 32,
                               12 * 64, 28 * 4])
def test_hadamard(n):
    x = _f(3, n)
    oracle = None
    if n & (n - 1) == 0:
        oracle = x.astype(np.float64) @ _sylvester(n) / np.sqrt(n)
    _check(lambda x: mx.hadamard_transform(x), x, tol=2e-5 * max(1, np.log2(n)), oracle=oracle)


@pytest.mark.parametrize("n", [64, 4096, 20 * 8, 28 * 4])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_hadamard_low_precision(n, dtype):
    _check(lambda x: mx.hadamard_transform(x, scale=0.3), _f(5, n), dtype=dtype)


def test_hadamard_batched_and_strided():
    x = _f(4, 6, 512)
    _check(lambda x: mx.hadamard_transform(x[:, ::2].swapaxes(0, 1)), x,
           oracle=np.swapaxes(x[:, ::2], 0, 1).astype(np.float64) @ _sylvester(512)
           / np.sqrt(512))
