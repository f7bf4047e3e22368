"""Reductions, scans, softmax, median and diff on the GPU (strict mode: kernels must run): the
same dtypes, shapes and values as the CPU backend (itself checked against MLX in test_reduce.py),
on sizes that take every kernel path: warp rows, block rows, split rows (a full reduce of a big
array), columns (split and not), permuted axis sets, > 2^16 rows, multi-tile scans, softmax rows
kept in registers and the online two-read path, non-contiguous and empty inputs."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx import _env

pytestmark = pytest.mark.gpu

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "complex64"]


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _data(dtype: str, shape, seed: int = 0, small: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool_":
        return rng.random(shape) < 0.7
    hi = 3 if small else 50
    if dtype.startswith("uint"):
        return rng.integers(1, hi, shape).astype(dtype)
    if dtype.startswith("int"):
        return (rng.integers(1, hi, shape) * rng.choice([-1, 1], shape)).astype(dtype)
    scale = 1.5 if small else 4.0
    v = (rng.random(shape) + 0.25) * scale * rng.choice([-1, 1], shape)
    if dtype == "complex64":
        return (v + 1j * rng.random(shape)).astype(np.complex64)
    return v.astype(np.float32 if dtype == "bfloat16" else dtype)


def _array(values: np.ndarray, dtype: str) -> mx.array:
    a = mx.array(values)
    return a.astype(mx.bfloat16) if dtype == "bfloat16" else a


def _host(x: mx.array) -> np.ndarray:
    if x.dtype == mx.bfloat16:
        x = x.astype(mx.float32, stream=mx.cpu)
    return np.array(x)


def _tol(x: mx.array, n: int = 1) -> float:
    if x.dtype in (mx.float16, mx.bfloat16):
        return 3e-2
    if x.dtype == mx.float64:
        return 1e-9
    return 2e-5 * max(1.0, np.sqrt(n) / 8)


def both(fn, a: mx.array, n: int = 1, exact: bool | None = None) -> None:
    """fn(a) on the CPU stream and on the GPU stream: same dtype, shape and values, and the GPU
    result is in GPU memory."""
    try:
        with mx.stream(mx.cpu):
            ref = fn(a)
            refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
            mx.eval(*refs)
    except Exception as exc:  # noqa: BLE001 - the GPU stream must raise the same
        with pytest.raises(type(exc)):
            with mx.stream(mx.gpu):
                out = fn(a)
                mx.eval(*(list(out) if isinstance(out, (tuple, list)) else [out]))
        return
    with mx.stream(mx.gpu):
        out = fn(a)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        mx.eval(*outs)
    for o, r in zip(outs, refs):
        assert o.dtype == r.dtype and o.shape == r.shape, (o.dtype, r.dtype, o.shape, r.shape)
        if o.size:
            assert type(o._data).__name__ == "GpuArray"
        oh, rh = _host(o), _host(r)
        name = str(o.dtype).split(".")[-1]
        if exact or (exact is None and (name == "bool" or "int" in name)):
            np.testing.assert_array_equal(oh, rh)
        else:
            # Absolute error scales with the largest magnitude (a long scan's partial sums
            # carry rounding of their running total into entries near zero).
            t = _tol(o, n)
            finite = np.abs(rh[np.isfinite(rh)]) if rh.size else np.zeros(1)
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            np.testing.assert_allclose(oh.astype(np.complex128), rh.astype(np.complex128),
                                       rtol=t, atol=t * scale, equal_nan=True)


REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "all", "any", "logsumexp",
              "count_nonzero", "median"]
SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


#: Ops whose result is floating point for every input dtype (compared with a tolerance).
FLOAT_RESULT_OPS = ("mean", "var", "std", "logsumexp", "median", "logcumsumexp", "softmax")


def _integral(dtype: str) -> bool:
    return dtype == "bool_" or dtype[0] in "iu"


def _exact(dtype: str, op: str) -> bool:
    return _integral(dtype) and op not in FLOAT_RESULT_OPS


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_every_dtype(dtype):
    v = _data(dtype, (3, 5, 4), small=True)
    a = _array(v, dtype)
    for op in REDUCTIONS:
        for axis in (None, 1, -1, (0, 2), (), [2, 0], 0):
            for keepdims in (False, True):
                fn = getattr(mx, op)
                both(lambda x: fn(x, axis=axis, keepdims=keepdims), a,
                     exact=_exact(dtype, op))
    for ddof in (1, 2, 5):
        both(lambda x: mx.var(x, 0, ddof=ddof), a)
        both(lambda x: mx.std(x, (1, 2), ddof=ddof), a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_arg_reductions_every_dtype(dtype):
    a = _array(_data(dtype, (6, 37, 5)), dtype)
    for op in (mx.argmax, mx.argmin):
        for axis in (None, 0, 1, 2, -1):
            both(lambda x: op(x, axis, keepdims=True), a, exact=True)
    ties = mx.array(np.array([[3, 1, 3, 1], [2, 2, 2, 2]], np.int32))
    both(lambda x: mx.argmax(x, 1), ties, exact=True)
    both(lambda x: mx.argmin(x, 0), ties, exact=True)
    nan = mx.array(np.array([1.0, np.nan, 5.0, np.nan], np.float32))
    both(lambda x: mx.argmax(x), nan, exact=True)
    both(lambda x: mx.argmin(x), nan, exact=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scans_every_dtype(dtype):
    a = _array(_data(dtype, (3, 7), small=True), dtype)
    for op in SCANS:
        fn = getattr(mx, op)
        for axis in (None, 0, 1):
            for reverse in (False, True):
                for inclusive in (True, False):
                    both(lambda x: fn(x, axis, reverse=reverse, inclusive=inclusive), a,
                         exact=_exact(dtype, op))
    both(lambda x: mx.cumsum(x, dtype=mx.float32), a)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64",
                                   "int32", "bool_"])
def test_softmax_and_diff_every_dtype(dtype):
    a = _array(_data(dtype, (5, 9)), dtype)
    for axis in (None, -1, 0, (0, 1), ()):
        both(lambda x: mx.softmax(x, axis), a)
        both(lambda x: mx.softmax(x, axis, precise=True), a)
    for n, axis in ((1, -1), (2, 0), (3, 1), (7, 0)):
        both(lambda x: mx.diff(x, n, axis), a, exact=_integral(dtype))


@pytest.mark.parametrize("shape,axes", [
    ((1 << 20,), None),          # one row, split over many blocks (partials)
    ((3, 300001), 1),            # few long rows, split
    ((70000, 5), 1),             # > 2^16 rows, one warp per row
    ((512, 1000), 1),            # block rows
    ((1000, 37), 0),             # columns
    ((200000, 3), 0),            # columns split along the reduced axis
    ((7, 3001, 33), 1),          # (outer, len, inner) columns
    ((6, 7, 8, 9), (0, 2)),      # two reduced groups: permuted into rows
    ((5, 1, 7), (1,)),           # only a size-1 axis
])
def test_reduction_paths(shape, axes):
    v = _data("float32", shape, seed=1)
    a = mx.array(v)
    n = v.size
    for op in ("sum", "mean", "var", "max", "min", "logsumexp", "prod", "any", "all",
               "count_nonzero"):
        fn = getattr(mx, op)
        if op == "prod" and n > 10000:
            continue  # overflows to inf/0 either way; covered on small shapes
        both(lambda x: fn(x, axes), a, n=n)
    both(lambda x: mx.std(x, axes, ddof=1), a, n=n)
    ax = axes if isinstance(axes, int) or axes is None else axes[0]
    both(lambda x: mx.argmax(x, ax), a, exact=True)
    both(lambda x: mx.argmin(x, ax), a, exact=True)
    if n <= 300000:
        both(lambda x: mx.median(x, axes), a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_rows_every_accumulator(dtype):
    """Few long rows split over blocks, the last block of each row combining the partials (no
    second launch): every accumulator type (bool, integers, float, double, complex) and the
    variants that read a per-row value (var's mean, logsumexp's max)."""
    n = 100003
    a = _array(_data(dtype, (3, n), seed=3, small=True), dtype)
    for op in ("sum", "mean", "var", "max", "min", "all", "any", "count_nonzero", "logsumexp"):
        fn = getattr(mx, op)
        both(lambda x: fn(x, 1), a, n=n, exact=_exact(dtype, op))


def test_split_rows_again_and_on_two_streams():
    """Each launch leaves its arrival counters at 0 for the next; two streams have their own."""
    a = mx.array(_data("float32", (5, 1 << 18), seed=4))
    other = mx.new_stream(mx.gpu)
    with mx.stream(mx.gpu):
        first = [mx.sum(a, 1) for _ in range(6)]
    with mx.stream(other):
        second = [mx.sum(a, 1) for _ in range(6)]
    mx.eval(first, second)
    want = _host(first[0])
    np.testing.assert_allclose(want, _data("float32", (5, 1 << 18), seed=4).astype(
        np.float64).sum(1), rtol=1e-5)
    for r in first[1:] + second:
        np.testing.assert_array_equal(_host(r), want)


def test_split_rows_one_launch_equals_two(monkeypatch):
    """The last block combines the partials in the order reduce_partials does: bit-identical."""
    from pycudamlx.backend.cuda import reduce as K

    monkeypatch.setattr(K, "_SPLIT_BLOCK", K.BLOCK)
    monkeypatch.setattr(K, "_plans", {})
    a = mx.array(_data("float32", (2, 1 << 20), seed=5))
    with mx.stream(mx.gpu):
        one = mx.sum(a, 1)
        mx.eval(one)
    monkeypatch.setattr(K, "_LAST_BLOCK_FINISHES", False)
    monkeypatch.setattr(K, "_plans", {})
    with mx.stream(mx.gpu):
        two = mx.sum(a, 1)
        mx.eval(two)
    np.testing.assert_array_equal(np.array(one), np.array(two))


def test_reductions_of_halves_accumulate_in_float32():
    v = np.full(1 << 16, 1.0, np.float32)
    for d in (mx.float16, mx.bfloat16):
        with mx.stream(mx.gpu):
            s = mx.sum(mx.array(v).astype(d))
            m = mx.mean(mx.array(v).astype(d))
        assert s.item() == 65536.0 if d == mx.bfloat16 else np.isinf(s.item())
        # MLX's mean is the sum (rounded to the half type) times 1/n: float16 overflows to inf
        assert m.item() == 1.0 if d == mx.bfloat16 else np.isinf(m.item())


def test_full_sum_of_a_large_array():
    v = np.random.default_rng(2).random(1 << 24, dtype=np.float32)
    with mx.stream(mx.gpu):
        s = mx.sum(mx.array(v)).item()
    np.testing.assert_allclose(s, v.astype(np.float64).sum(), rtol=1e-5)


def test_non_contiguous_and_empty_inputs():
    v = _data("float32", (4, 6, 5), seed=3)
    views = [lambda m: m.transpose(m.array(v), (2, 0, 1)), lambda m: m.array(v)[1:, ::2, 1:4],
             lambda m: m.array(v)[::-1, :, ::-2],
             lambda m: m.broadcast_to(m.array(v)[:1], (3, 6, 5))]
    for make in views:
        a = make(mx)
        for fn in (lambda x: mx.sum(x, (0, 2)), lambda x: mx.max(x, 1),
                   lambda x: mx.var(x, -1, ddof=1), lambda x: mx.argmax(x, 0),
                   lambda x: mx.cumsum(x, 1, reverse=True), lambda x: mx.softmax(x, 2),
                   lambda x: mx.softmax(x, 0), lambda x: mx.median(x, (1, 2)),
                   lambda x: mx.logsumexp(x, 0, True), lambda x: mx.diff(x, 1, 1),
                   lambda x: mx.cummin(x, inclusive=False)):
            both(fn, a)
    for shape in ((0,), (0, 3), (3, 0), (2, 0, 5)):
        a = mx.array(np.zeros(shape, np.float32))
        for fn in (mx.sum, mx.mean, mx.prod, mx.all, mx.any, mx.count_nonzero, mx.var,
                   mx.cumsum, mx.softmax):
            both(lambda x: fn(x), a)
            both(lambda x: fn(x, 0), a)


@pytest.mark.parametrize("length", [1, 31, 32, 255, 256, 257, 1024, 4097, 8192, 10000, 70000])
def test_softmax_row_lengths(length):
    rows = max(1, min(300, 300000 // length))
    v = np.random.default_rng(length).standard_normal((rows, length)).astype(np.float32) * 4
    a = mx.array(v)
    both(lambda x: mx.softmax(x, -1), a)
    with mx.stream(mx.gpu):
        got = np.array(mx.softmax(a, -1))
    e = np.exp(v.astype(np.float64) - v.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    both(lambda x: mx.softmax(x.astype(mx.float16), -1), a)
    both(lambda x: mx.logsumexp(x, -1), a, n=length)


def test_softmax_special_values():
    v = np.array([[1.0, np.nan, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0],
                  [-np.inf, 0.0, 1.0]], np.float32)
    both(lambda x: mx.softmax(x, -1), mx.array(v))
    wide = np.full((2, 20000), -np.inf, np.float32)
    wide[1, 5] = 0.0
    both(lambda x: mx.softmax(x, -1), mx.array(wide))


@pytest.mark.parametrize("length", [1, 7, 100, 1000, 5000, 20000])
def test_scan_row_lengths(length):
    rows = max(1, min(64, 200000 // length))
    v = np.random.default_rng(length).standard_normal((rows, length)).astype(np.float32)
    a = mx.array(v)
    for op in SCANS:
        fn = getattr(mx, op)
        for reverse in (False, True):
            for inclusive in (True, False):
                both(lambda x: fn(x, -1, reverse=reverse, inclusive=inclusive), a, n=length)
    ints = mx.array(np.random.default_rng(1).integers(-9, 9, (rows, length)).astype(np.int32))
    both(lambda x: mx.cumsum(x, -1), ints, exact=True)
    both(lambda x: mx.cumsum(x, 0, reverse=True, inclusive=False), ints, exact=True)


def test_median_values():
    rng = np.random.default_rng(4)
    for shape, axes in (((9,), None), ((10,), None), ((4, 1001), 1), ((4, 1000), -1),
                        ((50, 6), 0), ((3, 4, 5), (0, 2))):
        v = rng.standard_normal(shape).astype(np.float32)
        with mx.stream(mx.gpu):
            got = np.array(mx.median(mx.array(v), axes))
        np.testing.assert_allclose(got, np.median(v, axes), rtol=1e-6)
    v = np.array([[3.0, np.nan, 1.0], [-0.0, 0.0, -1.0]], np.float32)
    both(lambda x: mx.median(x, 1), mx.array(v))
    ints = mx.array(np.array([[5, -3, 9, 9], [2**30, -2**30, 0, 1]], np.int32))
    both(lambda x: mx.median(x, 1), ints)
    both(lambda x: mx.median(x.astype(mx.float64), 1), ints)


def test_integer_wrapping_and_widening():
    cases = [("int8", [100, 100, 27]), ("int32", [2**31 - 1, 1]), ("uint8", [200, 100]),
             ("int16", [30000, 30000]), ("uint32", [2**32 - 1, 2]), ("int64", [2**62, 2**62])]
    for dtype, vals in cases:
        a = mx.array(np.array(vals, dtype))
        for fn in (mx.sum, mx.prod, mx.cumsum, mx.cumprod, mx.diff):
            both(lambda x: fn(x), a, exact=True)
        both(lambda x: mx.mean(x), a)


def test_array_methods_on_gpu():
    a = mx.array(np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    with mx.stream(mx.gpu):
        assert a.sum().item() == 21.0
        assert a.max(1).tolist() == [3.0, 6.0]
        assert a.argmax().item() == 5
        assert a.cumsum(1, reverse=True).tolist() == [[6.0, 5.0, 3.0], [15.0, 11.0, 6.0]]
        assert abs(a.std(ddof=1).item() - float(np.std(np.arange(1, 7), ddof=1))) < 1e-5
        assert abs(a.logsumexp().item() - float(np.log(np.exp(np.arange(1, 7)).sum()))) < 1e-4
