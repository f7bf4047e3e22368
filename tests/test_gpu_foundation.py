"""The foundation on a real GPU: memory, copies, every elementwise launcher, the managed-memory
guard, PYCUDAMLX_DEBUG_SYNC, the kernels_ptx path and the error for a kernel that is not shipped.

Every test here is marked ``gpu`` and skips with the reason where no driver or device is present.
numpy is the oracle, on random data of odd sizes. Checks that need a fresh process (NVRTC
disabled, a lost context) run in a subprocess so this session's context stays healthy.
"""

from __future__ import annotations

import gc
import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pycudamlx import _env
from pycudamlx import dtypes as dt
from pycudamlx.backend import optable
from pycudamlx.backend.cuda import array as garray
from pycudamlx.backend.cuda import compiler, driver, elementwise, memory, ptxstore, registry
from pycudamlx.backend.cuda import stream as stream_mod

from conftest import REPO, subprocess_env

pytestmark = pytest.mark.gpu

ODD_SIZES = (1, 7, 1000003)


@pytest.fixture(scope="module")
def stream(gpu_device):
    return stream_mod.CudaStream(gpu_device)


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def rand(name: str, shape, rng, lo: int = -100, hi: int = 100) -> np.ndarray:
    """Random values of a dtype: never all zeros, in a range every cast below keeps exact."""
    d = dt.by_name[name]
    if name == "bool":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        info = np.iinfo(d.np_dtype)
        low = max(0 if d.kind == "u" else lo, int(info.min))
        return rng.integers(low, min(hi, int(info.max)), size=shape, endpoint=True).astype(
            d.np_dtype)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d.np_dtype)
    return (rng.standard_normal(shape) * 10).astype(d.np_dtype)


def up(host: np.ndarray, name: str, stream) -> garray.GpuArray:
    return garray.from_numpy(np.asarray(host, dt.by_name[name].np_dtype), dt.by_name[name], stream)


def down(arr: garray.GpuArray) -> np.ndarray:
    return np.array(arr.to_numpy())  # a copy: the buffer may be reused after the test


def assert_matches(got: np.ndarray, want: np.ndarray, name: str) -> None:
    """Exact, except the 16-bit floats (one rounding of a float result; allow an ulp or so)."""
    assert got.shape == want.shape
    if name in ("float16", "bfloat16"):
        rtol = 8e-3 if name == "bfloat16" else 1e-3
        np.testing.assert_allclose(got.astype(np.float32), np.asarray(want).astype(np.float32),
                                   rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def ran(fn, spec: registry.ModuleSpec) -> bool:
    """Run a launch that needs module ``spec``; True when it ran.

    With NVRTC disabled, a module that is neither shipped in kernels_ptx/ nor in the kernel cache
    must raise KernelUnavailableError naming it instead: check that, and return False. (The GPU
    check script runs these tests a second time that way, with the other dtypes' modules in a
    cache filled by `pycudamlx cache warm --dtypes uncommon`.)
    """
    if _env.DISABLE_NVRTC and ptxstore.lookup(spec) is None and not _cached(spec):
        with pytest.raises(compiler.KernelUnavailableError, match=re.escape(spec.name)):
            fn()
        return False
    fn()
    return True


def _cached(spec: registry.ModuleSpec) -> bool:
    major, minor = driver.get_device(0).properties.compute_capability
    base = compiler._base_key(spec, major * 10 + minor)
    return bool(compiler.kernel_cache().keys_with_prefix(base + "-"))


# --------------------------------------------------------------------------------------------------
# Memory


@pytest.mark.parametrize("kind", [memory.MANAGED, memory.DEVICE])
def test_allocate(gpu_device, kind):
    gc.collect()  # no buffer of an earlier test may be freed in the middle of this one
    before = memory.stats.active_bytes
    buf = memory.allocate(1000003, gpu_device, kind)
    assert buf.ptr and buf.nbytes == 1000003 and buf.kind == kind
    assert memory.stats.active_bytes == before + 1000003
    if kind == memory.DEVICE:
        with pytest.raises(TypeError, match="no host view"):
            buf.host_view()
    buf.free()
    assert memory.stats.active_bytes == before
    empty = memory.allocate(0, gpu_device, kind)
    assert empty.nbytes == 0
    with pytest.raises(ValueError, match="negative"):
        memory.allocate(-1, gpu_device, kind)


def test_host_view_round_trip(gpu_device, stream, rng):
    n = 1000003
    buf = memory.allocate(n * 4, gpu_device, memory.MANAGED)
    data = rand("float32", n, rng)
    buf.host_view(np.float32, (n,))[:] = data
    buf.prefetch(gpu_device.index, stream)
    assert buf.location == gpu_device.index
    np.testing.assert_array_equal(buf.host_view(np.float32, (n,)), data)  # syncs, then reads
    assert buf.location == memory.HOST
    view = buf.host_view(np.uint8, (4, n))
    assert view.shape == (4, n) and view.base is not None


@pytest.mark.parametrize("kind", [memory.MANAGED, memory.DEVICE])
def test_memset(gpu_device, stream, kind):
    n = 1000003
    buf = memory.allocate(n, gpu_device, kind)
    memory.memset(buf, 0x5A, stream)
    memory.memset(buf, 0x1C3, stream, nbytes=17)  # only the low byte counts
    host = np.empty(n, np.uint8)
    memory.copy_device_to_host(host, buf, stream)
    assert (host[:17] == 0xC3).all() and (host[17:] == 0x5A).all()
    if kind == memory.MANAGED:
        assert (buf.host_view()[17:] == 0x5A).all()


@pytest.mark.parametrize("kind", [memory.MANAGED, memory.DEVICE])
def test_copies_host_device_and_device_device(gpu_device, stream, rng, kind):
    n = 1000003
    data = rng.integers(0, 256, n, dtype=np.uint8)
    a = memory.allocate(n, gpu_device, kind)
    b = memory.allocate(n + 64, gpu_device, kind)
    memory.copy_host_to_device(a, data, stream)
    memory.copy_device_to_device(b, a, n - 5, stream, dst_offset=64, src_offset=5)
    back = np.empty(n - 5, np.uint8)
    memory.copy_device_to_host(back, b, stream, src_offset=64)
    np.testing.assert_array_equal(back, data[5:])
    whole = np.empty(n, np.uint8)
    memory.copy_device_to_host(whole, a, stream)
    np.testing.assert_array_equal(whole, data)
    with pytest.raises(ValueError, match="does not fit"):
        memory.copy_host_to_device(a, np.zeros(n + 1, np.uint8), stream)
    with pytest.raises(ValueError, match="reads past"):
        memory.copy_device_to_host(np.empty(n + 1, np.uint8), a, stream)
    with pytest.raises(ValueError, match="C-contiguous"):
        memory.copy_device_to_host(np.empty((n, 2), np.uint8)[:, 0], a, stream)


def test_managed_guard_refuses_before_calling_the_driver(gpu_device, monkeypatch):
    cu = driver.init()
    calls = []
    real = cu.cuMemAllocManaged

    def spy(size, flags):
        calls.append(size)
        raise AssertionError(f"cuMemAllocManaged({size}) reached the driver")

    free, _ = gpu_device.memory_info()
    request = free + (1 << 30)
    monkeypatch.setattr(cu, "cuMemAllocManaged", spy)
    with pytest.raises(driver.CudaOutOfMemoryError) as info:
        memory.allocate(request, gpu_device, memory.MANAGED)
    assert calls == []
    assert isinstance(info.value, MemoryError)
    assert "Refusing to allocate" in str(info.value) and "hang" in str(info.value)
    monkeypatch.setattr(cu, "cuMemAllocManaged", real)
    small = memory.allocate(4096, gpu_device, memory.MANAGED)  # the guard lets sane ones through
    assert small.ptr


# --------------------------------------------------------------------------------------------------
# copy / cast


CAST_PAIRS = [
    ("float32", "float32"), ("float32", "float16"), ("float16", "float32"),
    ("float32", "bfloat16"), ("bfloat16", "float32"), ("float32", "int32"),
    ("int32", "float32"), ("int64", "uint8"), ("uint8", "int64"), ("bool", "int32"),
    ("int32", "bool"), ("float32", "bool"), ("float64", "float32"), ("int8", "float64"),
    ("float16", "bfloat16"), ("int32", "complex64"), ("uint16", "int16"),
]


def _cast(host: np.ndarray, dst: str) -> np.ndarray:
    return host.astype(dt.by_name[dst].np_dtype)


@pytest.mark.parametrize("src, dst", CAST_PAIRS)
@pytest.mark.parametrize("n", ODD_SIZES)
def test_copy_contiguous_with_cast(stream, rng, src, dst, n):
    host = rand(src, n, rng, lo=0 if dt.by_name[dst].kind == "u" else -100)
    out = garray.empty((n,), dt.by_name[dst], stream)
    if ran(lambda: elementwise.copy(up(host, src, stream), out, stream),
           registry.copy_module(src, dst)):
        assert_matches(down(out), _cast(host, dst), dst)


@pytest.mark.parametrize("src, dst", [("float32", "float32"), ("int64", "int64"),
                                      ("float16", "float32"), ("uint8", "int32"),
                                      ("bool", "bool")])
def test_copy_misaligned_start_takes_the_scalar_path(stream, rng, src, dst):
    host = rand(src, 1001, rng)
    g = up(host, src, stream)
    view = g.view(1, (1000,), (1,))
    out = garray.empty((1000,), dt.by_name[dst], stream)
    elementwise.copy(view, out, stream)
    assert_matches(down(out), _cast(host[1:], dst), dst)


@pytest.mark.parametrize("src, dst", [("float32", "float32"), ("float32", "float16"),
                                      ("int32", "float32"), ("bfloat16", "bfloat16")])
def test_copy_strided_broadcast_and_negative_stride_sources(stream, rng, src, dst):
    m = rand(src, (37, 53), rng)
    g = up(m, src, stream)
    cases = {
        "transpose": (g.view(0, (53, 37), (1, 53)), m.T),
        "broadcast row": (g.view(53, (29, 53), (0, 1)), np.broadcast_to(m[1], (29, 53))),
        "broadcast column": (g.view(0, (37, 11), (53, 0)),
                             np.broadcast_to(m[:, :1], (37, 11))),
        "reversed": (g.view(37 * 53 - 1, (37 * 53,), (-1,)), m.reshape(-1)[::-1]),
        "reversed rows, step 2": (g.view(36 * 53 + 1, (37, 26), (-53, 2)), m[::-1, 1::2]),
        "scalar": (g.view(5, (1001,), (0,)), np.full(1001, m.reshape(-1)[5])),
    }
    for name, (view, want) in cases.items():
        out = garray.empty(view.shape, dt.by_name[dst], stream)
        elementwise.copy(view, out, stream)
        assert_matches(down(out), _cast(np.ascontiguousarray(want), dst), dst)


def test_copy_into_a_strided_destination(stream, rng):
    host = rand("float32", (37, 53), rng)
    base = rand("float32", (37, 106), rng)
    dst = up(base, "float32", stream)
    target = dst.view(1, (37, 53), (106, 2))  # every other column
    elementwise.copy(up(host, "float32", stream), target, stream)
    want = base.copy()
    want[:, 1::2] = host
    assert_matches(down(dst), want, "float32")
    rev = dst.view(36 * 106, (37, 53), (-106, 2))  # rows reversed, even columns, cast from int
    ints = rand("int32", (37, 53), rng)
    elementwise.copy(up(ints, "int32", stream), rev, stream)
    want[::-1, 0::2] = ints.astype(np.float32)
    assert_matches(down(dst), want, "float32")


def test_copy_of_empty_arrays_is_a_no_op(stream):
    f32 = dt.by_name["float32"]
    for shape in [(0,), (3, 0)]:
        src = garray.empty(shape, f32, stream)
        out = garray.empty(shape, f32, stream)
        elementwise.copy(src, out, stream)
        elementwise.fill(out, np.float32(1).tobytes(), stream)
        elementwise.binary("add", src, src, out, stream)
        assert down(out).shape == shape


# --------------------------------------------------------------------------------------------------
# fill


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "int8", "int64", "uint8",
                                  "bool", "complex64", "float64"])
@pytest.mark.parametrize("n", ODD_SIZES)
def test_fill(stream, rng, name, n):
    value = rand(name, 1, rng)
    d = dt.by_name[name]
    out = garray.empty((n + 1,), d, stream)
    if not ran(lambda: elementwise.fill(out, value.tobytes(), stream),
               registry.copy_module(name, name)):
        return
    assert_matches(down(out), np.full(n + 1, value[0], d.np_dtype), name)
    shifted = out.view(1, (n,), (1,))  # a start that is not 16-byte aligned
    other = rand(name, 1, rng)
    elementwise.fill(shifted, other.tobytes(), stream)
    got = down(out)
    assert_matches(got[1:], np.full(n, other[0], d.np_dtype), name)
    assert_matches(got[:1], value, name)


# --------------------------------------------------------------------------------------------------
# binary


BINARY_DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "int8",
                 "bool"]


def _binary_want(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return optable.OPS[op].numpy(a, b)


@pytest.mark.parametrize("op", ["add", "multiply", "maximum"])
@pytest.mark.parametrize("name", BINARY_DTYPES)
def test_binary_contiguous_and_scalar_operands(stream, rng, op, name):
    d = dt.by_name[name]
    for n in ODD_SIZES:
        a, b = rand(name, n, rng), rand(name, n, rng)
        ga, gb = up(a, name, stream), up(b, name, stream)
        cases = {
            "arrays": (ga, gb, a, b),
            "scalar b": (ga, gb.view(n // 2, (n,), (0,)), a, np.full(n, b[n // 2])),
            "scalar a": (ga.view(0, (n,), (0,)), gb, np.full(n, a[0]), b),
            "both scalar": (ga.view(0, (n,), (0,)), gb.view(0, (n,), (0,)),
                            np.full(n, a[0]), np.full(n, b[0])),
            "misaligned": (ga.view(1, (n - 1,), (1,)), gb.view(0, (n - 1,), (1,)), a[1:],
                           b[:-1]) if n > 1 else None,
        }
        for case, spec in cases.items():
            if spec is None:
                continue
            x, y, hx, hy = spec
            out = garray.empty(x.shape, d, stream)
            if not ran(lambda: elementwise.binary(op, x, y, out, stream),
                       registry.binary_module(op, name)):
                return
            assert_matches(down(out), _binary_want(op, hx, hy), name), (case, n)


@pytest.mark.parametrize("op", ["add", "multiply", "maximum"])
@pytest.mark.parametrize("name", ["float32", "int32", "bfloat16", "bool"])
def test_binary_broadcasting_and_strided_operands(stream, rng, op, name):
    d = dt.by_name[name]
    col = rand(name, (37, 1), rng)
    row = rand(name, (53,), rng)
    m = rand(name, (53, 37), rng)
    gcol, grow, gm = up(col, name, stream), up(row, name, stream), up(m, name, stream)
    cases = {
        "column + row": (gcol.view(0, (37, 53), (1, 0)), grow.view(0, (37, 53), (0, 1)),
                         np.broadcast_to(col, (37, 53)), np.broadcast_to(row, (37, 53))),
        "transposed + row": (gm.view(0, (37, 53), (1, 37)), grow.view(0, (37, 53), (0, 1)),
                             m.T, np.broadcast_to(row, (37, 53))),
        "reversed + scalar": (gm.view(53 * 37 - 1, (53, 37), (-37, -1)), grow.view(3, (53, 37),
                              (0, 0)), m[::-1, ::-1], np.full((53, 37), row[3])),
    }
    for case, (x, y, hx, hy) in cases.items():
        out = garray.empty(x.shape, d, stream)
        elementwise.binary(op, x, y, out, stream)
        assert_matches(down(out), _binary_want(op, np.ascontiguousarray(hx),
                                               np.ascontiguousarray(hy)), name), case


def test_maximum_propagates_nan(stream, rng):
    a = rand("float32", 1001, rng)
    b = rand("float32", 1001, rng)
    a[::7] = np.nan
    b[::5] = np.nan
    out = garray.empty((1001,), dt.by_name["float32"], stream)
    elementwise.binary("maximum", up(a, "float32", stream), up(b, "float32", stream), out, stream)
    np.testing.assert_array_equal(down(out), np.maximum(a, b))


def test_binary_on_device_memory(gpu_device, stream, rng):
    f32 = dt.by_name["float32"]
    n = 1000003
    a, b = rand("float32", n, rng), rand("float32", n, rng)
    bufs = []
    for host in (a, b, None):
        buf = memory.allocate(n * 4, gpu_device, memory.DEVICE, stream)
        if host is not None:
            memory.copy_host_to_device(buf, host, stream)
        bufs.append(garray.GpuArray(buf, 0, (n,), (1,), f32))
    elementwise.binary("add", bufs[0], bufs[1], bufs[2], stream)
    np.testing.assert_array_equal(down(bufs[2]), a + b)


# --------------------------------------------------------------------------------------------------
# Rank beyond registry.MAX_DIMS: split into launches over the leading dimensions


def test_rank_above_max_dims_is_split(stream, rng):
    shape = (2, 3, 2, 3, 2, 2, 3, 2, 3, 2)
    assert len(shape) > registry.MAX_DIMS
    m = rand("float32", shape, rng)
    other = rand("float32", shape[::-1], rng)
    gm, go = up(m, "float32", stream), up(other, "float32", stream)
    strides = garray.contiguous_strides(shape)
    t = gm.view(0, shape[::-1], strides[::-1])  # all axes reversed: nothing collapses
    want_t = np.ascontiguousarray(m.transpose())

    out = garray.empty(shape[::-1], dt.by_name["float32"], stream)
    elementwise.copy(t, out, stream)
    assert_matches(down(out), want_t, "float32")

    summed = garray.empty(shape[::-1], dt.by_name["float32"], stream)
    elementwise.binary("add", t, go, summed, stream)
    assert_matches(down(summed), want_t + other, "float32")

    dst = garray.empty(shape, dt.by_name["float16"], stream)  # a strided, cast destination
    elementwise.copy(go, dst.view(0, shape[::-1], strides[::-1]), stream)
    assert_matches(down(dst), other.transpose().astype(np.float16), "float16")


# --------------------------------------------------------------------------------------------------
# PYCUDAMLX_DEBUG_SYNC


def test_debug_sync_synchronises_after_every_launch(stream, rng, monkeypatch):
    cu = driver.init()
    syncs = []
    real = cu.cuStreamSynchronize

    def spy(handle):
        syncs.append(handle)
        return real(handle)

    monkeypatch.setattr(cu, "cuStreamSynchronize", spy)
    monkeypatch.setattr(_env, "DEBUG_SYNC", True)
    a = rand("float32", 1001, rng)
    ga = up(a, "float32", stream)
    syncs.clear()
    out = garray.empty((1001,), dt.by_name["float32"], stream)
    elementwise.binary("add", ga, ga, out, stream)
    elementwise.copy(ga, out, stream)
    assert len(syncs) >= 2
    monkeypatch.setattr(_env, "DEBUG_SYNC", False)
    syncs.clear()
    elementwise.binary("add", ga, ga, out, stream)
    assert syncs == []
    np.testing.assert_array_equal(down(out), a + a)


def _run(code: str, **env: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=REPO, env=subprocess_env(**env), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_debug_sync_names_the_kernel_of_an_async_error_and_the_context_stays_lost():
    # In a subprocess: an illegal address destroys that process's context, not this one's.
    result = _run("""
        import json, types
        import numpy as np
        from pycudamlx import dtypes as dt
        from pycudamlx.backend.cuda import array, driver, elementwise, stream as st

        dev = driver.get_device(0)
        s = st.CudaStream(dev)
        f32 = dt.by_name["float32"]
        out = array.empty((1 << 20,), f32, s)
        bad = array.GpuArray(types.SimpleNamespace(ptr=16), 0, (1 << 20,), (1,), f32)
        errors = []
        try:
            elementwise.copy(bad, out, s)  # reads from address 16
        except Exception as exc:
            errors.append((type(exc).__name__, str(exc)))
        try:
            dev.synchronize()
        except Exception as exc:
            errors.append((type(exc).__name__, str(exc)))
        print(json.dumps(errors))
    """, PYCUDAMLX_DEBUG_SYNC="1")
    assert len(result) == 2, result
    (first_type, first), (later_type, later) = result
    assert first_type == "CudaContextLostError"
    assert "copy_contig" in first and "PYCUDAMLX_DEBUG_SYNC" in first
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in first
    assert later_type == "CudaContextLostError" and "Restart" in later


# --------------------------------------------------------------------------------------------------
# Without NVRTC: the shipped kernels_ptx, and a clear error for what is not shipped


def test_kernels_ptx_path_with_nvrtc_disabled(tmp_path):
    result = _run("""
        import json
        import numpy as np
        from pycudamlx import dtypes as dt
        from pycudamlx.backend.cuda import array, compiler, driver, elementwise, stream as st

        dev = driver.get_device(0)
        s = st.CudaStream(dev)
        rng = np.random.default_rng(1)
        ok = {}
        for name in ("float32", "bfloat16", "int64", "bool"):
            d = dt.by_name[name]
            a = (rng.standard_normal(1000003) * 10).astype(d.np_dtype)
            b = (rng.standard_normal(1000003) * 10).astype(d.np_dtype)
            out = array.empty((1000003,), d, s)
            elementwise.binary("add", array.from_numpy(a, d, s), array.from_numpy(b, d, s), out, s)
            want = (a.astype(np.float32) + b.astype(np.float32)).astype(d.np_dtype) \\
                if name == "bfloat16" else a + b
            got = out.to_numpy()
            ok[name] = bool(np.allclose(got.astype(np.float64), want.astype(np.float64),
                                        rtol=1e-2)) if name == "bfloat16" else \\
                bool(np.array_equal(got, want))
        print(json.dumps({"stats": dict(compiler.stats), "ok": ok,
                          "cache_entries": len(compiler.kernel_cache().entries())}))
    """, PYCUDAMLX_DISABLE_NVRTC="1", PYCUDAMLX_CACHE_DIR=str(tmp_path / "empty"))
    assert all(result["ok"].values()), result
    assert result["stats"].get("shipped", 0) > 0
    assert not result["stats"].get("nvrtc") and not result["stats"].get("disk")
    assert result["cache_entries"] == 0


def test_a_kernel_that_is_not_shipped_raises_naming_the_module_and_the_remedy(tmp_path):
    result = _run("""
        import json
        import numpy as np
        from pycudamlx import dtypes as dt
        from pycudamlx.backend.cuda import array, compiler, driver, elementwise, stream as st

        dev = driver.get_device(0)
        s = st.CudaStream(dev)
        d = dt.by_name["float64"]
        a = array.from_numpy(np.arange(5, dtype=np.float64), d, s)
        out = array.empty((5,), d, s)
        try:
            elementwise.binary("add", a, a, out, s)
            print(json.dumps({"raised": None}))
        except Exception as exc:
            print(json.dumps({"raised": type(exc).__name__, "message": str(exc)}))
    """, PYCUDAMLX_DISABLE_NVRTC="1", PYCUDAMLX_CACHE_DIR=str(tmp_path / "empty"))
    assert result["raised"] == "KernelUnavailableError", result
    message = result["message"]
    assert "binary.add.float64" in message
    assert "PYCUDAMLX_DISABLE_NVRTC" in message
    assert "pycudamlx cache warm --arch sm_" in message and "pip install" in message
