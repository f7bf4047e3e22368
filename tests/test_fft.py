"""mx.fft on the CPU, differential against real MLX 0.32.4 and numpy.fft (float64 oracle)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

mlx = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(11)


def _np(x):
    return np.array(x)


def _dname(x):
    return str(x.dtype).split(".")[-1]


def _pair(x, dtype="float32"):
    return (mx.array(x).astype(getattr(mx, dtype)), mlx.array(x).astype(getattr(mlx, dtype)))


def _check(name, x, *args, dtype="float32", tol=None, **kw):
    ours_in, theirs_in = _pair(x, dtype)
    ours = getattr(mx.fft, name)(ours_in, *args, stream=mx.cpu, **kw)
    theirs = getattr(mlx.fft, name)(theirs_in, *args, stream=mlx.cpu, **kw)
    assert ours.shape == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert _dname(ours) == _dname(theirs)
    scale = max(1.0, float(np.abs(_np(theirs)).max())) if theirs.size else 1.0
    t = tol if tol is not None else 2e-5
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=t, atol=t * scale)
    return ours


def _cplx(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("n", [None, 1, 5, 8, 13])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_1d(name, n, axis, norm):
    x = _cplx(6, 7) if name in ("ifft", "irfft", "fft") else RNG.standard_normal((6, 7))
    dtype = "complex64" if np.iscomplexobj(x) else "float32"
    _check(name, x, n, axis, norm, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "uint8",
                                   "bool_", "complex64"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
def test_input_dtypes(dtype, name):
    x = np.abs(RNG.standard_normal((3, 8)) * 4)
    if dtype == "complex64":
        x = x + 1j * RNG.standard_normal((3, 8))
    tol = 5e-3 if dtype in ("float16", "bfloat16") else 2e-5
    _check(name, x, dtype=dtype, tol=tol)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
                                  "irfftn"])
@pytest.mark.parametrize("s,axes", [(None, None), ((3, 8), (-2, -1)), ((4, 2), (0, 2)),
                                    (None, (2, 0)), ((5,), (1,)), (None, (0, 1, 2)),
                                    ((2, 6, 5), (0, 1, 2))])
def test_nd(name, s, axes):
    x = _cplx(4, 5, 6) if name.startswith(("i", "fft")) else RNG.standard_normal((4, 5, 6))
    dtype = "complex64" if np.iscomplexobj(x) else "float32"
    kw = {}
    if s is not None:
        kw["s"] = s
    if axes is not None:
        kw["axes"] = axes
    if name.endswith("2") and (axes is not None and len(axes) != 2):
        return
    if name.endswith("2") and axes is None and s is not None:
        return
    _check(name, x, dtype=dtype, tol=1e-4, **kw)


def test_values_against_numpy_float64():
    x = RNG.standard_normal((5, 33))
    np.testing.assert_allclose(_np(mx.fft.fft(mx.array(x), stream=mx.cpu)), np.fft.fft(x),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(_np(mx.fft.irfft(mx.fft.rfft(mx.array(x), stream=mx.cpu),
                                                33, stream=mx.cpu)), x, rtol=1e-5, atol=1e-5)
    y = _np(mx.fft.fftn(mx.array(x[:4, :6].reshape(2, 3, 4)), stream=mx.cpu))
    np.testing.assert_allclose(y, np.fft.fftn(x[:4, :6].reshape(2, 3, 4)), rtol=1e-5, atol=1e-5)


def test_noncontiguous_and_batched():
    x = RNG.standard_normal((8, 10))
    a = mx.array(x)[::2, 1::2]
    np.testing.assert_allclose(_np(mx.fft.fft(a, stream=mx.cpu)), np.fft.fft(x[::2, 1::2]),
                               rtol=1e-5, atol=1e-5)
    t = mx.array(x).T
    np.testing.assert_allclose(_np(mx.fft.rfft(t, axis=0, stream=mx.cpu)),
                               np.fft.rfft(x.T, axis=0), rtol=1e-5, atol=1e-5)


def test_empty_axes_returns_input():
    x = mx.array(RNG.standard_normal((3, 4)).astype(np.float32))
    r = mx.fft.fftn(x, axes=[])
    assert r.dtype == mx.float32 and r.shape == (3, 4)


ERRORS = [
    ("fft", (np.ones((3, 4)),), {"n": 0}), ("fft", (np.ones((3, 4)),), {"n": -1}),
    ("fft", (np.ones((3, 4)),), {"axis": 2}), ("fft", (np.ones((3, 4)),), {"axis": -3}),
    ("fft", (np.array(1.0),), {}), ("fft", (np.zeros((3, 0)),), {}),
    ("fft", (np.ones((3, 4)),), {"norm": "bad"}), ("fft", (np.array(1.0),), {"norm": "x"}),
    ("fft2", (np.ones(4),), {}), ("fft2", (np.ones((3, 4)),), {"s": (3,)}),
    ("fftn", (np.ones((3, 4)),), {"axes": (0, 0)}), ("fftn", (np.ones((3, 4)),), {"s": (3,)}),
    ("fftn", (np.ones((3, 4)),), {"axes": (5,)}), ("fftn", (np.array(1.0),), {}),
    ("fft2", (np.ones((3, 4)),), {"s": (0, 4)}), ("irfft", (np.ones((4, 1)),), {}),
    ("fftn", (np.ones((3, 4)),), {"s": (2, 2), "axes": (0,)}),
] + [(name, (np.ones((4, 4)),), {"s": (4, 4), "axes": None})  # the message names the function
     for name in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn")]


@pytest.mark.parametrize("name,args,kw", ERRORS)
def test_errors_match_mlx(name, args, kw):
    with pytest.raises(Exception) as theirs:
        mlx.eval(getattr(mlx.fft, name)(*[mlx.array(a) for a in args], **kw))
    with pytest.raises(type(theirs.value)) as ours:
        mx.eval(getattr(mx.fft, name)(*[mx.array(a) for a in args], **kw))
    if "SmallVector" not in str(theirs.value):  # MLX's message there says nothing useful
        assert str(ours.value) == str(theirs.value)


def test_type_errors():
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.fft.fft([1.0, 2.0])
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.fft.fftfreq(4.0)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("shape,axes", [((5,), None), ((4, 7), None), ((4, 7), 1), ((4, 7), [0]),
                                        ((3, 4, 5), [2, 0]), ((), None), ((4, 7), [])])
def test_shifts(name, shape, axes):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    ours = getattr(mx.fft, name)(mx.array(x), axes)
    theirs = getattr(mlx.fft, name)(mlx.array(x), axes)
    assert _dname(ours) == _dname(theirs)
    np.testing.assert_array_equal(_np(ours), _np(theirs))


def test_shift_axis_error():
    for name in ("fftshift", "ifftshift"):
        with pytest.raises(IndexError) as theirs:
            getattr(mlx.fft, name)(mlx.ones((2, 3)), axes=3)
        with pytest.raises(IndexError) as ours:
            getattr(mx.fft, name)(mx.ones((2, 3)), axes=3)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("n", [1, 2, 5, 6, 17])
@pytest.mark.parametrize("d", [1.0, 0.5, 2, -3.0])
def test_freqs(n, d):
    for name in ("fftfreq", "rfftfreq"):
        ours = getattr(mx.fft, name)(n, d)
        theirs = getattr(mlx.fft, name)(n, d)
        assert _dname(ours) == _dname(theirs) == "float32"
        np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-6, atol=1e-7)


def test_freq_errors():
    for args in [(0,), (-1,), (4, 0.0)]:
        for name in ("fftfreq", "rfftfreq"):
            with pytest.raises(ValueError) as theirs:
                getattr(mlx.fft, name)(*args)
            with pytest.raises(ValueError) as ours:
                getattr(mx.fft, name)(*args)
            assert str(ours.value) == str(theirs.value)


def test_all_names():
    assert sorted(mx.fft.__all__) == sorted(n for n in dir(mlx.fft) if not n.startswith("_"))


# ---------------------------------------------------------------------------- stft / istft

def _win(kw, m):
    kw = dict(kw)
    if isinstance(kw.get("window"), np.ndarray):
        kw["window"] = m.array(kw["window"])
    return kw


HANN8 = np.hanning(8).astype(np.float32)
STFT_CASES = [
    dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=5), dict(n_fft=8, center=False),
    dict(n_fft=8, window=HANN8), dict(n_fft=7, hop_length=2, pad_mode="edge"),
    dict(n_fft=8, pad_mode="constant", norm="ortho"), dict(n_fft=8, onesided=False,
                                                           norm="forward"),
    dict(n_fft=8, window=np.arange(1, 6, dtype=np.float32)), dict(n_fft=8, win_length=0),
]


@pytest.mark.parametrize("kw", STFT_CASES)
@pytest.mark.parametrize("complex_input", [False, True])
def test_stft(kw, complex_input):
    x = RNG.standard_normal((2, 37)).astype(np.float32)
    if complex_input:
        x = (x + 1j * x[::-1]).astype(np.complex64)
    ours = mx.fft.stft(mx.array(x), **_win(kw, mx))
    theirs = mlx.fft.stft(mlx.array(x), **_win(kw, mlx))
    assert ours.shape == tuple(theirs.shape) and ours.dtype == mx.complex64
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-5, atol=1e-5)


ISTFT_CASES = [
    dict(n_fft=8, hop_length=2, window=HANN8), dict(), dict(n_fft=8, hop_length=2,
                                                            window=HANN8, center=False),
    dict(n_fft=8, hop_length=2, window=HANN8, length=50), dict(n_fft=8, hop_length=2,
                                                               window=HANN8, length=20),
    dict(n_fft=8, hop_length=3), dict(n_fft=8, hop_length=4, win_length=5),
    dict(n_fft=8, norm="ortho"), dict(n_fft=7, hop_length=2), dict(onesided=False),
]


@pytest.mark.parametrize("kw", ISTFT_CASES)
def test_istft(kw):
    x = RNG.standard_normal((2, 37)).astype(np.float32)
    spec = np.array(mlx.fft.stft(mlx.array(x), n_fft=8, hop_length=2, window=mlx.hanning(8)))
    spec = spec + 0.1j * RNG.standard_normal(spec.shape).astype(np.float32)
    ours = mx.fft.istft(mx.array(spec), **_win(kw, mx))
    theirs = mlx.fft.istft(mlx.array(spec), **_win(kw, mlx))
    assert ours.shape == tuple(theirs.shape) and ours.dtype == mx.float32
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-5, atol=1e-5)


def test_stft_roundtrip():
    x = RNG.standard_normal((3, 64)).astype(np.float32)
    w = mx.hanning(16)
    spec = mx.fft.stft(mx.array(x), n_fft=16, hop_length=4, window=w)
    y = mx.fft.istft(spec, n_fft=16, hop_length=4, window=w, length=64)
    np.testing.assert_allclose(_np(y), x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,shape,kw", [
    ("stft", (2, 5), dict(n_fft=8, center=False)), ("stft", (2, 37), dict(n_fft=0)),
    ("stft", (2, 37), dict(n_fft=8, hop_length=0)), ("stft", (2, 37), dict(n_fft=8,
                                                                           win_length=9)),
    ("stft", (), dict(n_fft=8)), ("stft", (2, 37), dict(n_fft=8, pad_mode="zz")),
    ("stft", (2, 37), dict(n_fft=8, norm="zz")), ("stft", (2, 37), dict(n_fft=8,
                                                                       win_length=-3)),
    ("stft", (2, 37), dict(n_fft=8, window=np.ones((2, 4), np.float32))),
    ("stft", (2, 37), dict(n_fft=8, window=np.ones(9, np.float32))),
    ("istft", (5,), {}), ("istft", (5, 3), dict(hop_length=0)),
    ("istft", (5, 3), dict(win_length=9)), ("istft", (5, 3), dict(n_fft=0)),
])
def test_stft_errors(name, shape, kw):
    x = np.ones(shape, np.complex64 if name == "istft" else np.float32)
    with pytest.raises(Exception) as theirs:
        mlx.eval(getattr(mlx.fft, name)(mlx.array(x), **_win(kw, mlx)))
    with pytest.raises(type(theirs.value)) as ours:
        mx.eval(getattr(mx.fft, name)(mx.array(x), **_win(kw, mx)))
    assert str(ours.value) == str(theirs.value)
