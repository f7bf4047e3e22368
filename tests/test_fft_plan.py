"""The GPU FFT's planning logic, on the CPU: graph/primitives/fft.py's run_steps over a numpy
model of GpuArray views and of cuFFT's advanced layout (element x of batch b at
b*dist + x*stride), checked against numpy.fft; plus the cuFFT binding's pure parts (plan keys,
embeds, the LRU, status names, the disable switch) and FFT.eval_gpu's glue over numpy stand-ins
of the CUDA modules (real GpuArray views, pointer arithmetic). Real cuFFT: tests/test_gpu_fft.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from pycudamlx import dtypes as dt
from pycudamlx.backend.cuda import cufft
from pycudamlx.graph.primitives import fft as P

RNG = np.random.default_rng(11)


class FakeArray:
    """A strided view of a flat numpy buffer, with GpuArray's interface (element units)."""

    def __init__(self, buf, offset, shape, strides, dtype):
        self.buf, self.offset, self.shape, self.strides, self.dtype = (
            buf, offset, tuple(shape), tuple(strides), dtype)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def is_contiguous(self):
        expected = 1
        for e, s in zip(reversed(self.shape), reversed(self.strides)):
            if e != 1 and s != expected:
                return False
            expected *= e
        return True

    def view(self, offset, shape, strides, dtype=None):
        dtype = dtype or self.dtype
        buf = self.buf if dtype is self.dtype else self.buf.view(dtype.np_dtype)
        return FakeArray(buf, offset, shape, strides, dtype)

    def numpy(self):
        isz = self.buf.itemsize
        return np.lib.stride_tricks.as_strided(
            self.buf[self.offset:], self.shape, [s * isz for s in self.strides]).copy()

    def write(self, values):
        isz = self.buf.itemsize
        v = np.lib.stride_tricks.as_strided(self.buf[self.offset:], self.shape,
                                            [s * isz for s in self.strides])
        v[...] = values


def fake(x: np.ndarray, dtype) -> FakeArray:
    x = np.ascontiguousarray(x, dtype=dtype.np_dtype)
    st = [s // x.itemsize for s in x.strides]
    return FakeArray(x.reshape(-1).copy(), 0, x.shape, st, dtype)


class NumpyOps:
    """run_steps' backend in numpy; execute models cuFFT (unnormalised, advanced layout)."""

    def __init__(self, misalign=False):
        self.calls = []
        self.copies = 0
        self.misalign = misalign
        self.inputs = set()

    def empty(self, shape, dtype):
        n = int(np.prod(shape, dtype=np.int64))
        buf = np.full(n, np.nan, dtype.np_dtype) if n else np.empty(0, dtype.np_dtype)
        st = P._contiguous(shape)
        return FakeArray(buf, 0, shape, st, dtype)

    def copy(self, x, dtype):
        self.copies += 1
        out = self.empty(x.shape, dtype)
        v = x.numpy()
        out.write(v.real if dtype is dt.float32 and np.iscomplexobj(v) else v)
        return out

    def aligned(self, x):
        return not (self.misalign and x.offset % 2)

    def is_dense(self, x):
        return x.is_contiguous()

    def zero(self, view):
        view.write(0)

    def scale(self, x, factor, out):
        out.write((x.numpy() * np.array(factor, x.dtype.np_dtype)).astype(out.dtype.np_dtype))

    def execute(self, fft_type, n, batch, istride, idist, ostride, odist, src, dst, direction):
        assert id(src.buf) not in self.inputs or fft_type != P.C2R, "C2R on the caller's input"
        self.calls.append((fft_type, n, batch, istride, idist, ostride, odist))
        inem, onem = P._embeds(fft_type, n)
        assert istride >= 1 and ostride >= 1 and idist >= 1 and odist >= 1
        cufft.plan_key(0, fft_type, n, batch, istride, idist, ostride, odist)
        b = np.arange(batch)[:, None]
        iidx = src.offset + b * idist + np.arange(inem)[None, :] * istride
        oidx = dst.offset + b * odist + np.arange(onem)[None, :] * ostride
        assert len(np.unique(oidx)) == oidx.size, "output elements overlap"
        assert oidx.max() < dst.buf.size and iidx.max() < src.buf.size
        data = src.buf[iidx]
        if fft_type == P.C2C:
            r = np.fft.fft(data, axis=-1) if direction == P.FORWARD else \
                np.fft.ifft(data, axis=-1) * n
        elif fft_type == P.R2C:
            r = np.fft.rfft(data, axis=-1)
        else:
            # cuFFT promises nothing for non-Hermitian input: run_steps must clear these.
            assert not np.any(data[:, 0].imag)
            if n % 2 == 0:
                assert not np.any(data[:, n // 2].imag)
            r = np.fft.irfft(data, n, axis=-1) * n
            src.buf[iidx] = np.nan  # C2R may overwrite its input
        dst.buf[oidx] = r.astype(dst.dtype.np_dtype)


def _reference(x, axes, n, inverse, real, norm):
    prim = P.FFT(tuple(axes), tuple(n), inverse, real, norm)
    out_dtype = dt.float32 if real and inverse else dt.complex64
    return prim.eval_cpu([x], [(_out_shape(x.shape, axes, n, inverse, real), out_dtype)])[0]


def _out_shape(shape, axes, n, inverse, real):
    out = list(shape)
    if real and not inverse:
        out[axes[-1]] = n[-1] // 2 + 1
    elif real:
        out[axes[-1]] = n[-1]
    return tuple(out)


def _check(x, axes, n=None, inverse=False, real=False, norm="backward", ops=None,
           transposed=False):
    ndim = x.ndim
    axes = [a % ndim for a in axes]
    if n is None:
        n = [x.shape[a] for a in axes]
        if real and inverse:
            n[-1] = 2 * (n[-1] - 1)
    in_dtype = dt.float32 if real and not inverse else dt.complex64
    out_dtype = dt.float32 if real and inverse else dt.complex64
    ops = ops or NumpyOps()
    if transposed:  # a transposed view of a contiguous array
        base = fake(np.ascontiguousarray(x.T), in_dtype)
        arr = base.view(0, x.shape, tuple(reversed(base.strides)))
    else:
        arr = fake(x, in_dtype)
    ops.inputs.add(id(arr.buf))
    before = arr.buf.copy()
    out_shape = _out_shape(x.shape, axes, n, inverse, real)
    got = P.run_steps(ops, arr, axes, n, inverse, real, norm, (out_shape, out_dtype))
    np.testing.assert_array_equal(arr.buf, before)  # the input is never written
    assert got.shape == out_shape and got.dtype is out_dtype
    ref = _reference(x.astype(in_dtype.np_dtype), axes, n, inverse, real, norm)
    val = got.numpy()
    scale = max(1.0, float(np.abs(ref).max()) if ref.size else 1.0)
    np.testing.assert_allclose(val, ref, rtol=1e-4, atol=1e-4 * scale)
    return ops


def _data(shape, complex_=True):
    x = RNG.standard_normal(shape)
    if complex_:
        x = x + 1j * RNG.standard_normal(shape)
    return x


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("shape,axes", [((17,), [0]), ((3, 97), [-1]), ((97, 3), [0]),
                                        ((4, 6, 5), [1]), ((4, 6, 5), [0, 2]),
                                        ((4, 6, 5), [2, 0]), ((5, 7, 9), [0, 1, 2]),
                                        ((2, 3, 4, 5), [-3, -1]), ((1, 8, 1), [1])])
def test_run_steps_matches_numpy(inverse, real, norm, shape, axes):
    x = _data(shape, complex_=not (real and not inverse))
    _check(x, axes, inverse=inverse, real=real, norm=norm)


@pytest.mark.parametrize("inverse,real", [(False, False), (True, False), (False, True),
                                          (True, True)])
def test_transposed_input(inverse, real):
    x = _data((9, 14), complex_=not (real and not inverse))
    _check(x, [0], inverse=inverse, real=real, transposed=True)
    _check(x, [1], inverse=inverse, real=real, transposed=True)
    _check(x, [0, 1], inverse=inverse, real=real, transposed=True)


@pytest.mark.parametrize("n", [1, 2, 16, 17, 1009])
def test_irfft_lengths(n):
    x = _data((3, n // 2 + 1))  # imaginary DC/Nyquist parts: numpy ignores them
    _check(x, [1], n=[n], inverse=True, real=True)
    _check(x.T.copy(), [0], n=[n], inverse=True, real=True)


def test_last_axis_contiguous_is_read_in_place():
    ops = _check(_data((70000, 4)), [1])
    assert ops.copies == 0 and ops.calls == [(P.C2C, 4, 70000, 1, 4, 1, 4)]
    ops = _check(_data((70000, 4)), [0])  # the other axes collapse: strided, no copy
    assert ops.copies == 0 and ops.calls == [(P.C2C, 70000, 4, 4, 1, 4, 1)]
    ops = _check(_data((4, 70000), complex_=False), [1], real=True)
    assert ops.copies == 0 and ops.calls == [(P.R2C, 70000, 4, 1, 70000, 1, 35001)]


def test_middle_axis_takes_one_copy():
    ops = _check(_data((3, 5, 7)), [1])
    assert ops.copies == 1 and ops.calls == [(P.C2C, 5, 21, 1, 5, 1, 5)]


def test_c2r_never_overwrites_the_input():
    ops = _check(_data((6, 9)), [1], inverse=True, real=True)
    assert ops.copies == 1  # the caller's input is copied before C2R
    ops = _check(_data((6, 9)), [0, 1], inverse=True, real=True)
    assert ops.copies == 0  # the C2C step's output is ours


def test_misaligned_views_are_copied():
    ops = NumpyOps(misalign=True)
    base = fake(_data((5, 8)), dt.complex64)
    view = base.view(1, (5, 7), base.strides)
    got = P.run_steps(ops, view, [1], [7], False, False, "backward", ((5, 7), dt.complex64))
    assert ops.copies == 1
    np.testing.assert_allclose(got.numpy(), np.fft.fft(view.numpy(), axis=1), rtol=1e-4,
                               atol=1e-4)


def test_zero_size():
    ops = NumpyOps()
    x = FakeArray(np.empty(0, np.complex64), 0, (0, 8), (8, 1), dt.complex64)
    got = P.run_steps(ops, x, [1], [8], False, False, "backward", ((0, 8), dt.complex64))
    assert got.shape == (0, 8) and not ops.calls


def test_steps_order():
    assert P.steps([0, 2], [4, 6], False, False) == [(2, P.C2C, 6), (0, P.C2C, 4)]
    assert P.steps([0, 2], [4, 6], False, True) == [(2, P.R2C, 6), (0, P.C2C, 4)]
    assert P.steps([0, 2], [4, 6], True, True) == [(0, P.C2C, 4), (2, P.C2R, 6)]
    assert P.steps([1], [5], True, False) == [(1, P.C2C, 5)]


@pytest.mark.parametrize("norm,inverse,factor", [("backward", False, 1.0),
                                                 ("backward", True, 1 / 12),
                                                 ("forward", False, 1 / 12),
                                                 ("forward", True, 1.0),
                                                 ("ortho", False, 12 ** -0.5),
                                                 ("ortho", True, 12 ** -0.5)])
def test_norm_scale(norm, inverse, factor):
    assert P.norm_scale(norm, inverse, 12) == pytest.approx(factor, rel=1e-15)


def test_batched_layout():
    assert P.batched_layout((4, 5), (5, 1), 1) == (1, 4, 5, (0,))
    assert P.batched_layout((4, 5), (5, 1), 0) == (5, 5, 1, (1,))
    assert P.batched_layout((3, 4, 5), (20, 5, 1), 1) is None  # two batch strides
    assert P.batched_layout((3, 4, 5), (20, 5, 1), 2) == (1, 12, 5, (0, 1))
    assert P.batched_layout((3, 1, 5), (5, 99, 1), 0) == (5, 5, 1, (2,))
    assert P.batched_layout((6,), (1,), 0) == (1, 1, None, ())
    assert P.batched_layout((4, 5), (0, 1), 1) is None  # broadcast batch
    assert P.batched_layout((4, 5), (5, -1), 1) is None  # reversed


def test_cufft_constants_and_keys():
    assert (cufft.R2C, cufft.C2R, cufft.C2C) == (0x2A, 0x2C, 0x29) == (P.R2C, P.C2R, P.C2C)
    assert (cufft.FORWARD, cufft.INVERSE) == (-1, 1) == (P.FORWARD, P.INVERSE)
    assert cufft.embeds(cufft.R2C, 9) == (9, 5) and cufft.embeds(cufft.C2R, 8) == (5, 8)
    assert cufft.embeds(cufft.C2C, 7) == (7, 7)
    for t in (cufft.R2C, cufft.C2R, cufft.C2C):
        assert cufft.embeds(t, 10) == P._embeds(t, 10)
    k = cufft.plan_key(1, cufft.C2C, 8, 3, 1, 8, 1, 8)
    assert k == (1, cufft.C2C, 8, 3, 1, 8, 1, 8)
    assert k != cufft.plan_key(0, cufft.C2C, 8, 3, 1, 8, 1, 8)
    with pytest.raises(ValueError):
        cufft.plan_key(0, 0x69, 8, 1, 1, 8, 1, 8)  # double precision: not ours
    with pytest.raises(ValueError):
        cufft.plan_key(0, cufft.C2C, 0, 1, 1, 8, 1, 8)
    assert cufft.status_name(5) == "CUFFT_INTERNAL_ERROR"
    assert cufft.status_name(0xD) == "CUFFT_NO_WORKSPACE"
    assert "99" in cufft.status_name(99)


def test_plan_cache_is_a_bounded_lru():
    destroyed = []
    c = cufft.PlanCache(2, destroyed.append)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # a is now the most recent
    c.put("c", 3)
    assert destroyed == [2] and c.get("b") is None and len(c) == 2
    assert c.put("a", 4) == 1 and destroyed == [2, 4]  # a racing duplicate is destroyed
    c.clear()
    assert sorted(destroyed) == [1, 2, 3, 4] and len(c) == 0


def test_disable_switch(monkeypatch):
    monkeypatch.setenv("PYCUDAMLX_DISABLE_CUFFT", "1")
    assert cufft.disabled() and not cufft.available()
    assert P.FFT((0,), (4,), False, False, "backward").gpu_kernel is False
    monkeypatch.setenv("PYCUDAMLX_DISABLE_CUFFT", "0")
    assert not cufft.disabled()
    monkeypatch.setattr(cufft, "library", lambda: object())
    assert P.FFT((0,), (4,), False, False, "backward").gpu_kernel is True


def test_binding_prototypes():
    """ctypes prototypes of every function, checked on a stand-in library object."""
    import ctypes

    class Fn:
        argtypes = restype = None

    class Lib:
        def __getattr__(self, name):
            f = Fn()
            object.__setattr__(self, name, f)
            return f

    lib = Lib()
    cufft._bind(lib)
    ll, p_ll = ctypes.c_longlong, ctypes.POINTER(ctypes.c_longlong)
    assert lib.cufftMakePlanMany64.argtypes == [
        ctypes.c_int, ctypes.c_int, p_ll, p_ll, ll, ll, p_ll, ll, ll, ctypes.c_int, ll,
        ctypes.POINTER(ctypes.c_size_t)]
    assert lib.cufftExecC2C.argtypes == [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_int]
    assert lib.cufftCreate.argtypes == [ctypes.POINTER(ctypes.c_int)]
    assert lib.cufftDestroy.restype is ctypes.c_int


# -- FFT.eval_gpu's glue (_GpuOps) over numpy stand-ins of the CUDA modules ---------------------
# The real GpuArray class over fake buffers whose pointers are numpy addresses, so that the
# pointer arithmetic (element offsets times item sizes) and the argument order of every launcher
# and of cufft.execute are exercised as on the GPU.


class FakeBuffer:
    live: list = []

    def __init__(self, nbytes):
        self.data = np.zeros(max(nbytes, 16) + 16, np.uint8)
        self.ptr = (self.data.ctypes.data + 15) & ~15
        self.base = self.ptr - self.data.ctypes.data
        self.nbytes = nbytes
        self.last_use = self.last_write = None
        self.location = -1
        FakeBuffer.live.append(self)

    def set_location(self, loc):
        self.location = loc


def _typed(ptr, np_dtype):
    """The buffer holding ``ptr`` as a flat array of np_dtype, and ptr's element index."""
    for b in FakeBuffer.live:
        if b.ptr <= ptr < b.ptr + max(b.nbytes, 1):
            flat = b.data[b.base:b.base + b.nbytes].view(np_dtype)
            off = ptr - b.ptr
            assert off % np.dtype(np_dtype).itemsize == 0
            return flat, off // np.dtype(np_dtype).itemsize
    raise AssertionError(f"pointer {ptr:#x} is in no buffer")


def _strided(g):
    isz = g.dtype.size
    flat, off = _typed(g.buffer.ptr + g.offset * isz, g.dtype.np_dtype)
    return np.lib.stride_tricks.as_strided(flat[off:], g.shape, [s * isz for s in g.strides])


class FakeModules:
    def __init__(self):
        from pycudamlx.backend.cuda import array as ga

        self.ga = ga
        self.calls = []

    # gpu_array
    def empty(self, shape, dtype, stream):
        n = int(np.prod(shape, dtype=np.int64))
        return self.ga.GpuArray(FakeBuffer(n * dtype.size), 0, tuple(shape),
                                self.ga.contiguous_strides(tuple(shape)), dtype)

    # elementwise
    def copy(self, src, dst, stream):
        v = _strided(src)
        _strided(dst)[...] = v.real if not np.iscomplexobj(_strided(dst)) and \
            np.iscomplexobj(v) else v
        dst.buffer.last_write = stream  # as the launchers' _record_write

    def fill(self, dst, raw, stream):
        assert dst.is_contiguous()
        _strided(dst)[...] = np.frombuffer(raw, dst.dtype.np_dtype)[0]
        dst.buffer.last_write = stream

    def binary(self, op, a, b, out, stream):
        assert op == "multiply" and a.dtype is b.dtype and out.is_contiguous()
        _strided(out)[...] = _strided(a) * _strided(b)
        out.buffer.last_write = stream

    # memory
    DEVICE = "device"

    def memset(self, buffer, byte, stream, nbytes=None):
        buffer.data[buffer.base:buffer.base + (nbytes or buffer.nbytes)] = byte

    # cufft
    def execute(self, stream, fft_type, n, batch, istride, idist, ostride, odist, sp, dp,
                direction):
        self.calls.append(fft_type)
        ind, outd = ((np.float32, np.complex64) if fft_type == P.R2C else
                     (np.complex64, np.float32) if fft_type == P.C2R else
                     (np.complex64, np.complex64))
        src, so = _typed(sp, ind)
        dst, do = _typed(dp, outd)
        src_arr = FakeArray(src, so, (1,), (1,), None)
        dst_arr = FakeArray(dst, do, (1,), (1,), dt.float32 if outd is np.float32 else
                            dt.complex64)
        NumpyOps().execute(fft_type, n, batch, istride, idist, ostride, odist, src_arr, dst_arr,
                           direction)


@pytest.mark.parametrize("inverse,real", [(False, False), (True, False), (False, True),
                                          (True, True)])
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_gpu_ops_glue(monkeypatch, inverse, real, norm):
    from types import SimpleNamespace

    fm = FakeModules()
    monkeypatch.setattr(P._GpuOps, "_modules", (fm, fm, fm, fm))
    stream = SimpleNamespace(device=SimpleNamespace(index=0))
    x = _data((6, 10, 9), complex_=not (real and not inverse))
    in_dtype = dt.float32 if real and not inverse else dt.complex64
    g = fm.empty((8, 10, 9), in_dtype, stream)
    _strided(g)[2:] = x.astype(in_dtype.np_dtype)
    view = g.view(g.offset + 180, (10, 6, 9), (9, 90, 1))  # transposed, 16-byte aligned offset
    axes = (0, 2)
    n = [10, 9] if not (real and inverse) else [10, 16]
    out_shape = _out_shape(view.shape, axes, n, inverse, real)
    out_dtype = dt.float32 if real and inverse else dt.complex64
    prim = P.FFT(axes, tuple(n), inverse, real, norm)
    (got,) = prim.eval_gpu([view], [(out_shape, out_dtype)], stream)
    assert got.shape == out_shape and got.dtype is out_dtype
    assert got.buffer.last_write is stream
    ref = prim.eval_cpu([np.transpose(x, (1, 0, 2))], [(out_shape, out_dtype)])[0]
    np.testing.assert_allclose(_strided(got), ref, rtol=1e-4,
                               atol=1e-4 * max(1.0, float(np.abs(ref).max())))
    FakeBuffer.live.clear()
