"""mx.view, mx.astype and file IO with GPU arrays: the same bits as the CPU backend (checked
against MLX in test_misc_ops/test_io), views of contiguous GPU arrays allocate nothing, and
arrays saved from GPU memory load back bit for bit (strict mode: no host fallbacks)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx import _env
from shapecheck import DTYPES, rand, to_ours, keep_array_class  # noqa: F401

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


def _bytes(a: pm.array) -> bytes:
    return np.ascontiguousarray(a._numpy()).tobytes()


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", ["uint8", "int16", "float32", "int64", "complex64"])
def test_view_matches_cpu(src, dst):
    x = to_ours(rand((6, 16), src, seed=3))
    g = on_gpu(x)
    layouts = {"c": lambda a: a, "slice": lambda a: a[1:5, 8:],
               "T": lambda a: pm.transpose(a)[:, 2:4], "strided": lambda a: a[:, ::2],
               "offset": lambda a: pm.reshape(a, (-1,))[1:17], "empty": lambda a: a[:0]}
    for name, f in layouts.items():
        with pm.stream(pm.cpu):
            try:
                ref = pm.view(f(x), getattr(pm, dst))
                pm.eval(ref)
            except ValueError:
                with pytest.raises(ValueError, match=r"\[view\]"):
                    pm.view(f(g), getattr(pm, dst), stream=pm.gpu)
                continue
        out = pm.view(f(g), getattr(pm, dst), stream=pm.gpu)
        pm.eval(out)
        assert out.shape == ref.shape and out.dtype == ref.dtype, name
        if out.size:
            assert type(out._data).__name__ == "GpuArray"
        assert _bytes(out) == _bytes(ref), name


def test_view_of_contiguous_gpu_array_shares_its_buffer():
    g = on_gpu(pm.arange(4096, dtype=pm.float32))
    v = pm.view(g, pm.int64, stream=pm.gpu)
    pm.eval(v)
    assert v._data.buffer is g._data.buffer and v.shape == (2048,)
    w = pm.view(g[2:], pm.int64, stream=pm.gpu)  # offset 2 float32 = 1 int64: still a view
    pm.eval(w)
    assert w._data.buffer is g._data.buffer and w._data.offset == g._data.offset // 2 + 1
    big = on_gpu(pm.ones((70000, 3), pm.float16))  # > 2^16 rows, odd last axis: copy path
    t = pm.view(pm.transpose(big), pm.int16, stream=pm.gpu)
    pm.eval(t)
    assert t.shape == (3, 70000)
    assert (np.array(t) == np.float16(1).view(np.int16)).all()


@pytest.mark.parametrize("dst", DTYPES)
def test_astype_function_on_gpu(dst):
    x = to_ours(rand((5, 33), "float32"))
    with pm.stream(pm.cpu):
        ref = pm.astype(x, getattr(pm, dst))
        pm.eval(ref)
    out = pm.astype(on_gpu(x), getattr(pm, dst), stream=pm.gpu)
    pm.eval(out)
    assert type(out._data).__name__ == "GpuArray" and _bytes(out) == _bytes(ref)


@pytest.mark.parametrize("name", DTYPES)
def test_io_round_trip_of_gpu_arrays(tmp_path, name):
    g = on_gpu(to_ours(rand((7, 9), name, seed=5)))
    cases = {"c": g, "T": pm.transpose(g), "s": g[::2, 1::3], "z": g[3, 4], "e": g[:0]}
    for k, a in cases.items():
        with pm.stream(pm.gpu):
            pm.save(tmp_path / f"{k}.npy", a)
            back = pm.load(tmp_path / f"{k}.npy")
        assert back.shape == a.shape and back.dtype == a.dtype and _bytes(back) == _bytes(a)
    with pm.stream(pm.gpu):
        pm.savez_compressed(tmp_path / "all.npz", **cases)
        pm.save_safetensors(tmp_path / "all", cases, {"device": "gpu"})
        npz = pm.load(tmp_path / "all.npz")
        st, meta = pm.load(tmp_path / "all.safetensors", return_metadata=True)
        used = pm.add(st["c"], st["c"]) if name != "bool_" else pm.logical_not(st["c"])
        pm.eval(used)
    assert meta == {"device": "gpu"}
    for k, a in cases.items():
        assert _bytes(npz[k]) == _bytes(a) and _bytes(st[k]) == _bytes(a)
    buf = io.BytesIO()
    pm.save(buf, g)
    buf.seek(0)
    assert _bytes(pm.load(buf, format="npy")) == _bytes(g)


def test_gguf_round_trip_of_gpu_arrays(tmp_path):
    cases = {name: on_gpu(to_ours(rand((5, 7), name, seed=9)))
             for name in ("float32", "float16", "int8", "int16", "int32")}
    cases["T"] = pm.transpose(cases["float32"])
    cases["s"] = cases["int16"][::2, 1::3]
    with pm.stream(pm.gpu):
        pm.save_gguf(tmp_path / "g", cases, {"v": on_gpu(pm.array([1, 2, 3])), "s": "x"})
        back, meta = pm.load(tmp_path / "g.gguf", return_metadata=True)
    for k, a in cases.items():
        assert back[k].shape == a.shape and back[k].dtype == a.dtype
        assert _bytes(back[k]) == _bytes(a)
    assert meta["s"] == "x" and np.array(meta["v"]).tolist() == [1, 2, 3]


# ------------------------------------------------------------------------------------------------
# fp8, depends, fast.cross_entropy (compositions: the GPU gives the CPU backend's bits)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_fp8_round_trip_matches_cpu(dtype):
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2 ** 32, 100_003, dtype=np.uint64).astype(np.uint32)
    x = pm.array(np.concatenate([bits.view(np.float32),
                                 np.float32([0, -0.0, 448, 480, 2.0 ** -10, np.inf, np.nan])]))
    x = x.astype(getattr(pm, dtype), stream=pm.cpu)
    with pm.stream(pm.cpu):
        want = pm.to_fp8(x)
        back_want = pm.from_fp8(want, getattr(pm, dtype))
        pm.eval(want, back_want)
    with pm.stream(pm.gpu):
        got = pm.to_fp8(x)
        back = pm.from_fp8(got, getattr(pm, dtype))
        pm.eval(got, back)
    assert type(got._data).__name__ == "GpuArray" and got.dtype == pm.uint8
    np.testing.assert_array_equal(np.array(got), np.array(want))
    np.testing.assert_array_equal(_bytes(back), _bytes(back_want))


def test_depends_on_gpu():
    with pm.stream(pm.gpu):
        dep = pm.arange(5, dtype=pm.float32) * 2
        out = pm.depends(pm.ones((3,)) + 1, dep)
        pm.eval(out)
    assert type(out._data).__name__ == "GpuArray" and out.tolist() == [2.0, 2.0, 2.0]
    assert dep._data is not None  # evaluated first


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fast_cross_entropy_gpu_accumulates_in_float32(dtype, monkeypatch):
    rng = np.random.default_rng(6)
    logits = (rng.standard_normal((9, 5, 1001)) * 4).astype(np.float32)
    targets = rng.integers(0, 1001, (9, 5))
    x = pm.array(logits).astype(getattr(pm, dtype), stream=pm.cpu)
    with pm.stream(pm.gpu):
        out = pm.fast.cross_entropy(x, pm.array(targets))
        pm.eval(out)
    assert type(out._data).__name__ == "GpuArray" and out.dtype == pm.float32
    xs = np.array(x.astype(pm.float32, stream=pm.cpu)).astype(np.float64)
    m = xs.max(-1, keepdims=True)
    ref = (np.log(np.exp(xs - m).sum(-1)) + m[..., 0]
           - np.take_along_axis(xs, targets[..., None], -1)[..., 0])
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)
