"""Fused elementwise kernels on the GPU: bit for bit the unfused kernels' results.

Each case builds the same lazy graph twice on the GPU: once with fusion off (one kernel per
node) and once with fusion on, after its programs were built (the first sight of a program runs
unfused while NVRTC builds it in the background). The raw bytes must agree (NaN payloads and
float16/bfloat16 rounding of every intermediate included), on random data of odd sizes, every
dtype family, broadcasts, transposed inputs and Python scalars.
"""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from pycudamlx.graph import fusion

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    fusion.reset()
    yield
    fusion.enabled = True


def _expect_folded(folded: int, at_least: int) -> None:
    """With NVRTC the graph fused at least ``at_least`` nodes; without it (an offline box,
    PYCUDAMLX_DISABLE_NVRTC=1) nothing fuses and the shipped unfused kernels ran."""
    from pycudamlx.backend.cuda import fused

    if fused.available():
        assert folded >= at_least
    else:
        assert folded == 0


def _rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return pm.array(rng.random(shape) > 0.5)
    if dtype in ("int32", "int64", "uint8"):
        return pm.array(rng.integers(-50 if dtype != "uint8" else 0, 100, shape).astype(dtype))
    if dtype == "complex64":
        return pm.array((rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
                        .astype(np.complex64))
    x = pm.array(rng.standard_normal(shape).astype(np.float32) * 3)
    return x.astype(getattr(pm, dtype))


def _raw(x):
    a = np.array(x)
    return a.view(np.uint8).tobytes(), a.dtype, a.shape


def _fused_and_unfused(build, *inputs):
    """(unfused result, fused result, launches folded) of build(*inputs) on the GPU."""
    from pycudamlx.backend.cuda import fused

    with pm.stream(pm.gpu):
        ins = [pm.array(np.array(x)) for x in inputs]
        pm.eval(*ins)
        fusion.enabled = False
        ref = build(*ins)
        pm.eval(ref)
        fusion.enabled = True
        first = build(*ins)  # first sight: programs start building
        pm.eval(first)
        fused.wait()
        folded = []
        original = fusion.plan

        def spy(order):
            n = original(order)
            folded.append(n)
            return n

        fusion.plan = spy
        try:
            out = build(*ins)
            pm.eval(out)
        finally:
            fusion.plan = original
    assert _raw(first) == _raw(ref)
    return ref, out, sum(folded)


def _chain(x, y):
    z = pm.exp(x) * 0.5 + y
    w = pm.where(z > 0.25, z, pm.sin(z) - 1.0)
    return pm.sqrt(pm.abs(w)) * w - y


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1,), (7,), (1023,), (4097,), (3, 5, 7), (65, 130)])
def test_float_chains_are_bit_identical(dtype, shape):
    x, y = _rand(shape, dtype, 1), _rand(shape, dtype, 2)
    ref, out, folded = _fused_and_unfused(_chain, x, y)
    _expect_folded(folded, 5)
    assert _raw(out) == _raw(ref)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_broadcast_rows_columns_and_scalars(dtype):
    x = _rand((33, 65), dtype, 3)
    row = _rand((65,), dtype, 4)
    col = _rand((33, 1), dtype, 5)

    def build(a, r, c):
        return pm.maximum(a * r - c, 0.1) / (c * c + 1.5) + pm.tanh(r)

    ref, out, folded = _fused_and_unfused(build, x, row, col)
    _expect_folded(folded, 5)
    assert _raw(out) == _raw(ref)


def test_transposed_and_sliced_inputs():
    x = _rand((37, 53), "float32", 6)
    y = _rand((53, 37), "float32", 7)

    def build(a, b):
        return pm.sqrt(pm.abs(a[:, ::2] + b.T[:, ::2])) * 3.0 - a[:, ::2]

    ref, out, folded = _fused_and_unfused(build, x, y)
    _expect_folded(folded, 3)
    assert _raw(out) == _raw(ref)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_chains(dtype):
    x, y = _rand((1001,), dtype, 8), _rand((1001,), dtype, 9)

    def build(a, b):
        q = (a * 3 + b) // (pm.abs(b) + 1)
        return pm.where(q > 2, q % 7, (q << 2) ^ b) - 1

    ref, out, folded = _fused_and_unfused(build, x, y)
    _expect_folded(folded, 5)
    assert _raw(out) == _raw(ref)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "int16"])
def test_integer_overflow_wraps_as_unfused(dtype):
    """(a + b) > a at the type's maximum: the unfused kernels store the wrapped sum, so the
    comparison is False there; a compiler that assumes no signed overflow says True."""
    info = np.iinfo(dtype)
    a = np.array([info.max, info.max - 1, info.min, 5, -7, info.max, 0] * 37, dtype)
    b = np.array([1, 2, -1, 3, -9, info.max, info.min] * 37, dtype)

    def build(x, y):
        s = x + y
        d = x - y
        return pm.where((s > x) & (d < x), s * 3, d * 5) - (s < y).astype(x.dtype)

    ref, out, folded = _fused_and_unfused(build, a, b)
    _expect_folded(folded, 6)
    assert _raw(out) == _raw(ref)
    with np.errstate(over="ignore"):
        s, d = a + b, a - b
        want = np.where((s > a) & (d < a), s * 3, d * 5) - (s < b).astype(dtype)
    np.testing.assert_array_equal(np.array(out), want)


def test_mixed_dtypes_astype_bool_and_complex():
    x = _rand((513,), "float16", 10)
    i = _rand((513,), "int32", 11)
    m = _rand((513,), "bool", 12)
    c = _rand((513,), "complex64", 13)

    def build(a, b, mask, z):
        s = a.astype(pm.float32) + b.astype(pm.float32) * 0.25
        t = pm.where(mask & (s > 0), s, -s).astype(pm.bfloat16)
        u = pm.abs(z * 2.0 + 1.0)  # complex -> float32
        return t.astype(pm.float32) * u + pm.logical_not(mask).astype(pm.float32)

    ref, out, folded = _fused_and_unfused(build, x, i, m, c)
    _expect_folded(folded, 8)
    assert _raw(out) == _raw(ref)


def test_nan_and_inf_payloads_survive():
    x = pm.array(np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 65504.0] * 9,
                          np.float32))

    def build(a):
        return (pm.exp(a) - a * 2.0).astype(pm.float16) * 3.0

    ref, out, folded = _fused_and_unfused(build, x)
    _expect_folded(folded, 3)
    assert _raw(out) == _raw(ref)


def test_held_intermediates_are_materialised_and_correct():
    x = _rand((2049,), "float32", 14)
    with pm.stream(pm.gpu):
        from pycudamlx.backend.cuda import fused

        for _ in range(2):
            held = pm.exp(x) + 1.0
            out = pm.sin(held * 2.0) - 3.0
            pm.eval(out)
            fused.wait()
        assert held._data is not None
        np.testing.assert_array_equal(np.array(held), np.array(pm.exp(x) + 1.0))
        np.testing.assert_allclose(np.array(out), np.sin(np.array(held) * 2.0) - 3.0,
                                   rtol=1e-5, atol=1e-5)


def test_long_chain_splits_into_groups():
    x = _rand((4099,), "float32", 15)
    b = _rand((4099,), "float32", 16)

    def build(a, c):
        y = a
        for k in range(300):
            y = y * 0.999 + c if k % 2 else y - c * 0.5
        return y

    ref, out, folded = _fused_and_unfused(build, x, b)
    _expect_folded(folded, 500)
    assert _raw(out) == _raw(ref)
