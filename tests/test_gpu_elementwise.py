"""Elementwise ops on the GPU: the checks of test_elementwise.py with ``stream=mx.gpu``, under
strict mode (an op that would run on the host raises), compared with the CPU backend (which the
CPU tests hold to real MLX).
"""

from __future__ import annotations


import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from pycudamlx.core.array import from_data
from _elementwise_cases import (
    BINARY, DIVISIONS, DTYPES, NP_STORAGE, SHIFTS, UNARY, assert_close, binary_inputs,
    unary_input,
)

pytestmark = pytest.mark.gpu

UNARY_OPS = sorted(UNARY)


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    yield


def _dt(name):
    return getattr(pm, "bool_" if name == "bool" else name)


def _on(stream, op, *args, **kw):
    """("ok", result) or ("err", exception) of pm.op(*args, stream=stream), evaluated."""
    try:
        out = getattr(pm, op)(*args, stream=stream, **kw)
        pm.eval(out)
        return "ok", out
    except Exception as exc:  # noqa: BLE001 - compared below
        return "err", exc


def _assert_gpu(x):
    for y in (x if isinstance(x, (list, tuple)) else [x]):
        assert type(y._data).__name__ == "GpuArray", "the op did not run on the GPU"


def _gpu_matches_cpu(op, *args, dtype=None, **kw):
    cpu = _on(pm.cpu, op, *args, **kw)
    gpu = _on(pm.gpu, op, *args, **kw)
    if cpu[0] == "err":
        assert gpu[0] == "err", f"{op}: CPU raised {cpu[1]!r}, GPU returned"
        assert type(gpu[1]) is type(cpu[1]) and str(gpu[1]) == str(cpu[1])
        return None
    assert gpu[0] == "ok", f"{op}: GPU raised {gpu[1]!r}"
    # nan_to_num returns an integer input's value (a new array object sharing its data)
    if not any(gpu[1] is x or (isinstance(gpu[1], pm.array) and isinstance(x, pm.array)
                               and gpu[1]._data is not None and gpu[1]._data is x._data)
               for x in args):
        _assert_gpu(gpu[1])
    if isinstance(cpu[1], list):
        for g, c in zip(gpu[1], cpu[1]):
            assert_close(g, c, op, dtype)
    else:
        assert_close(gpu[1], cpu[1], op, dtype)
    return gpu[1]


# --------------------------------------------------------------------------------------------------
# Every op over every dtype (float64 included: we go beyond MLX, which refuses it on the GPU)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_gpu_matches_cpu(op, dtype):
    x = unary_input(op, dtype, (37, 29), seed=hash(op) % 1000)
    _gpu_matches_cpu(op, pm.array(x, _dt(dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BINARY)
def test_binary_gpu_matches_cpu(op, dtype):
    a, b = binary_inputs(op, dtype, (31, 37), (31, 37), seed=len(op))
    _gpu_matches_cpu(op, pm.array(a, _dt(dtype)), pm.array(b, _dt(dtype)))


@pytest.mark.parametrize("op", ["add", "multiply", "divide", "maximum", "less", "power",
                                "logaddexp", "bitwise_and", "left_shift", "floor_divide"])
def test_weak_scalars_and_mixed_dtypes_on_gpu(op):
    for dtype in ("uint8", "int32", "float16", "bfloat16", "float32", "complex64"):
        _, b = binary_inputs(op, dtype, (9,), (9,), seed=3)
        x = pm.array(b, _dt(dtype))
        for scalar in (2, 1.5, True):
            _gpu_matches_cpu(op, x, scalar)
            if op not in DIVISIONS and op not in SHIFTS:
                _gpu_matches_cpu(op, scalar, x)
    _gpu_matches_cpu(op, pm.array([1, 2, 3], pm.int8), pm.array([1, 2, 3], pm.uint8))


# --------------------------------------------------------------------------------------------------
# Layouts: broadcasting, scalars, 0-d, empty, large and odd sizes, strided and offset views


@pytest.mark.parametrize("shapes", [((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (5,)),
                                    ((2, 0, 3), (3,)), ((), ()), ((1, 1), (7, 1)),
                                    ((2, 1, 3, 1, 2, 1, 2, 1, 3), (1, 2, 1, 2, 1, 3, 1, 2, 1))])
@pytest.mark.parametrize("op", ["add", "divide", "floor_divide", "remainder", "power", "less",
                                "bitwise_or", "left_shift", "arctan2", "logaddexp", "divmod"])
def test_broadcasting_on_gpu(op, shapes):
    dtype = "int32" if op in ("bitwise_or", "left_shift") else "float32"
    a, b = binary_inputs(op, dtype, *shapes, seed=4)
    _gpu_matches_cpu(op, pm.array(a, _dt(dtype)), pm.array(b, _dt(dtype)))


@pytest.mark.parametrize("n", [1, 3, 17, 255, 4099, (1 << 20) + 3])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64", "complex64"])
def test_sizes_hit_vector_and_tail_paths(n, dtype):
    x = unary_input("abs", dtype, (n,), seed=n)
    a, b = binary_inputs("add", dtype, (n,), (n,), seed=n)
    xa = pm.array(x, _dt(dtype))
    _gpu_matches_cpu("abs", xa)
    _gpu_matches_cpu("add", pm.array(a, _dt(dtype)), pm.array(b, _dt(dtype)))
    _gpu_matches_cpu("equal", pm.array(a, _dt(dtype)), 1)
    _gpu_matches_cpu("logical_not", xa)


def _gpu_views(host, dtype):
    """Strided GPU views of one uploaded buffer: transposed, stepped, reversed, offset by one
    element (misaligned for the vector path), broadcast (stride 0)."""
    from pycudamlx.backend.cuda import array as gpu_array
    from pycudamlx.core import device as dev

    stream = dev.resolve_stream(pm.gpu).cuda_stream()
    g = gpu_array.from_numpy(host.astype(NP_STORAGE[dtype]), _dt(dtype), stream)
    r, c = host.shape
    views = {
        "T": (g.view(0, (c, r), (1, c)), host.T),
        "step": (g.view(1, (r // 2, c // 3), (2 * c, 3)), host[::2, 1::3][:, : c // 3]),
        "reversed": (g.view((r - 1) * c, (r, c), (-c, 1)), host[::-1]),
        "offset": (g.view(1, (r * c - 1,), (1,)), host.reshape(-1)[1:]),
        "broadcast": (g.view(0, (r, c), (0, 1)), np.broadcast_to(host[0], (r, c))),
    }
    out = {}
    for name, (view, ref) in views.items():
        ref = np.ascontiguousarray(ref)
        if name == "step":
            view = view.view(view.offset, ref.shape, view.strides)
        out[name] = (from_data(view, _dt(dtype)), ref)
    return out


_STRIDED_OPS = ["add", "multiply", "floor_divide", "remainder", "maximum", "greater", "power",
                "divmod", "logaddexp", "exp", "sqrt", "isnan", "abs", "sign", "square"]
_NO_COMPLEX = ("floor_divide", "remainder", "divmod")  # undefined for complex64 in MLX


@pytest.mark.parametrize("op, dtype", [
    (op, dtype) for op in _STRIDED_OPS
    for dtype in ("float32", "float16", "int32", "complex64")
    if not (op in _NO_COMPLEX and dtype == "complex64")])
def test_strided_gpu_inputs_read_in_place(op, dtype):
    host = unary_input("sqrt", dtype, (12, 18), seed=6)
    if dtype == "int32":
        host = np.where(host == 0, 5, host)
    views = _gpu_views(host, dtype)
    for name, (view, ref) in views.items():
        cpu_in = pm.array(ref, _dt(dtype))
        if op in UNARY:
            got = getattr(pm, op)(view, stream=pm.gpu)
            want = getattr(pm, op)(cpu_in, stream=pm.cpu)
        else:
            other = views["T"][1].reshape(-1)[: ref.size].reshape(ref.shape)
            got = getattr(pm, op)(view, pm.array(other, _dt(dtype)), stream=pm.gpu)
            want = getattr(pm, op)(cpu_in, pm.array(other, _dt(dtype)), stream=pm.cpu)
        pm.eval(got, want)
        for g, w in zip(got if isinstance(got, list) else [got],
                        want if isinstance(want, list) else [want]):
            _assert_gpu(g)
            assert_close(g, w, f"{op} on a {name} view")


# --------------------------------------------------------------------------------------------------
# Special values and the results we define where MLX crashes


_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30, 0.5, -0.5, 1.0,
                     -1.0, 2.0, 88.5, -88.5, 1e4])


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16"])
@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_special_values_on_gpu(op, dtype):
    with np.errstate(over="ignore"):
        x = _SPECIAL.astype(NP_STORAGE[dtype]).astype(np.float64)
    if op in ("tan", "sin", "cos"):  # libm and CUDA reduce huge arguments differently
        x = x[~(np.abs(x) > 1e3)]
    if op == "exp" and dtype in ("float32", "bfloat16"):
        # MLX's CPU exp (a float32 polynomial, which our CPU backend reproduces) overflows to
        # inf from x = 88.38 and flushes to 0 below -87.3; the GPU computes CUDA's expf, as
        # MLX's CUDA build does, which is finite up to 88.72 and gradual below.
        edge = np.abs(x) == 88.5
        got = np.array(pm.exp(pm.array(x[edge], _dt(dtype)), stream=pm.gpu)).astype(np.float64)
        np.testing.assert_allclose(got, np.exp(x[edge]), rtol=1e-2, atol=1e-37)
        x = x[~edge]
    _gpu_matches_cpu(op, pm.array(x, _dt(dtype)))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "floor_divide",
                                "remainder", "power", "maximum", "minimum", "arctan2",
                                "logaddexp", "equal", "less", "greater_equal", "not_equal",
                                "logical_and", "logical_xor"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_binary_special_values_on_gpu(op, dtype):
    vals = _SPECIAL[:13]
    a = np.repeat(vals, len(vals))
    b = np.tile(vals, len(vals))
    _gpu_matches_cpu(op, pm.array(a, _dt(dtype)), pm.array(b, _dt(dtype)))


def test_complex_predicates_and_order_on_gpu():
    z = np.array([complex(np.inf, 0), complex(-np.inf, 0), complex(np.inf, 1),
                  complex(1, np.inf), complex(np.nan, 0), complex(1, np.nan), 0j, 1j, -1 + 0j])
    zc = pm.array(z, pm.complex64)
    for op in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "abs", "real", "imag",
               "conj", "logical_not"):
        _gpu_matches_cpu(op, zc)
    a = pm.array(np.array([1 + 5j, 2 + 0j, 1 + 1j, 1 + 1j, complex(np.nan, 1), 1 + 0j]))
    b = pm.array(np.array([2 + 0j, 1 + 9j, 1 + 2j, 1 + 0j, 1 + 0j, complex(1, np.nan)]))
    for op in ("maximum", "minimum", "greater", "less_equal", "less", "greater_equal", "equal"):
        _gpu_matches_cpu(op, a, b)
    _gpu_matches_cpu("divide", pm.array([1 + 1j, 1 + 0j]), pm.array([0j, 0j]))
    _gpu_matches_cpu("reciprocal", pm.array([0j, 1 + 1j, 3 - 4j]))


_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


@pytest.mark.parametrize("dtype", _INTS)
def test_defined_integer_results_on_gpu(dtype):
    info = np.iinfo(NP_STORAGE[dtype])
    signed = info.min < 0
    a = np.array([7, 0, 5, 1, info.min, info.max, info.min], NP_STORAGE[dtype])
    b = np.array([0, 0, 0, 3, -1 if signed else 1, 2, 1], NP_STORAGE[dtype])
    for op in ("floor_divide", "remainder", "divmod"):
        out = _gpu_matches_cpu(op, pm.array(a), pm.array(b))
        got = out[0] if isinstance(out, list) else out
        # by zero, as MLX: a quotient of 0 (divmod's first output too), a remainder of x
        want = [7, 0, 5] if op == "remainder" else [0, 0, 0]
        assert np.array(got)[:3].tolist() == want
    bits = np.dtype(NP_STORAGE[dtype]).itemsize * 8
    x = np.array([1, 5, -3 if signed else 3, 1, 2], NP_STORAGE[dtype])
    n = np.array([bits, bits + 1, -1 if signed else bits * 3, 1, bits - 1], NP_STORAGE[dtype])
    for op, ref in (("left_shift", np.left_shift), ("right_shift", np.right_shift)):
        out = _gpu_matches_cpu(op, pm.array(x), pm.array(n))
        np.testing.assert_array_equal(np.array(out), ref(x, n))
    e = np.array([-1, -3, 0, 40, 7] if signed else [0, 3, 9, 40, 7], NP_STORAGE[dtype])
    _gpu_matches_cpu("power", pm.array(x), pm.array(e))
    for op in ("negative", "abs", "square", "sign", "bitwise_invert"):
        _gpu_matches_cpu(op, pm.array(a))


def test_bool_division_by_false_on_gpu():
    t, f = pm.array([True, False]), pm.array([False, False])
    for op in ("floor_divide", "remainder", "divmod", "divide", "power"):
        _gpu_matches_cpu(op, t, f)


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16", "float64", "complex64"])
def test_float_to_integer_casts_on_gpu(src):
    host = np.array([np.nan, -1.0, 300.7, -3.7, 1e10, -1e10, np.inf, -np.inf, 65504.0,
                     -40000.5, 2.5, 1e19])
    x = pm.array(host, _dt(src))
    for dst in _INTS + ("bool",):
        cpu = x.astype(_dt(dst), stream=pm.cpu)
        gpu = x.astype(_dt(dst), stream=pm.gpu)
        pm.eval(cpu, gpu)
        _assert_gpu(gpu)
        np.testing.assert_array_equal(np.array(gpu), np.array(cpu), err_msg=f"{src}->{dst}")


# --------------------------------------------------------------------------------------------------
# Composite ops


def test_composites_on_gpu():
    inf, nan = np.inf, np.nan
    a = pm.array([inf, inf, 1.0, nan, 1.0, -inf, 2.0])
    b = pm.array([inf, -inf, inf, nan, 1.0 + 1e-6, -inf, 2.5])
    for fn in ("isclose", "allclose"):
        for kw in ({}, {"equal_nan": True}, {"rtol": 0.1, "atol": 0.5}):
            _gpu_matches_cpu(fn, a, b, **kw)
        _gpu_matches_cpu(fn, pm.array([1, 2, 3], pm.uint8), pm.array([2, 2, 4], pm.uint8),
                         atol=300)
        _gpu_matches_cpu(fn, pm.array(np.zeros((0, 3))), pm.array(np.zeros((0, 3))))
    big = pm.array(np.random.default_rng(9).uniform(size=(1 << 20) + 7).astype(np.float32))
    assert _gpu_matches_cpu("allclose", big, big).item() is True
    assert _gpu_matches_cpu("allclose", big, big + 1e-3).item() is False
    for x, y, kw in (([1, 2], [1.0, 2.0], {}), ([nan, 1.0], [nan, 1.0], {"equal_nan": True}),
                     ([nan], [nan], {}), ([1, 2], [1, 3], {})):
        _gpu_matches_cpu("array_equal", pm.array(x), pm.array(y), **kw)
    for dtype in ("float32", "float16", "bfloat16"):
        x = pm.array([nan, inf, -inf, 1.0, -2.5], _dt(dtype))
        _gpu_matches_cpu("nan_to_num", x)
        _gpu_matches_cpu("nan_to_num", x, 1.0, 2.0, 3.0)
    for lo, hi in ((2, 7), (2.5, None), (None, 4)):
        _gpu_matches_cpu("clip", pm.array([1, 5, 9]), lo, hi)
    for dtype in ("float32", "float16", "int32", "complex64"):
        data = np.array([0.5, 1.5, 2.5, -0.5, 2.675, 123.456, 15.0, 25.0])
        if dtype == "int32":
            data = np.round(data)
        for decimals in (0, 2, -1):
            _gpu_matches_cpu("round", pm.array(data, _dt(dtype)), decimals)
    _gpu_matches_cpu("degrees", pm.array([1.0, 2.0], pm.float16))
    _gpu_matches_cpu("radians", pm.array([90, 180]))
