"""Convolutions against real MLX 0.32.4: values, shapes, result dtypes and error messages."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

mlx = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(1234)

_DT = {"float32": (np.float32, 2e-5), "float16": (np.float16, 2e-2), "bfloat16": (None, 5e-2),
       "float64": (np.float64, 1e-10)}


def _data(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _pair(x, dtype="float32"):
    ours = mx.array(x).astype(getattr(mx, dtype))
    ref = mlx.array(x).astype(getattr(mlx, dtype))
    return ours, ref


def _close(ours, ref, dtype="float32", scale=1.0):
    assert tuple(ours.shape) == tuple(ref.shape)
    assert ours.dtype.name == str(ref.dtype).split(".")[-1]
    a = np.array(ours.astype(mx.float32)).astype(np.float64)
    b = np.array(ref.astype(mlx.float32)).astype(np.float64)
    tol = _DT[dtype][1] * scale
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _conv2d_np(x, w, p):
    """A float64 numpy oracle: stride 1, symmetric padding p."""
    x = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    kh, kw = w.shape[1:3]
    oh, ow = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[0]))
    for i in range(kh):
        for j in range(kw):
            out += x[:, i:i + oh, j:j + ow, :] @ w[:, i, j, :].T
    return out


def _diff(name, xshape, wshape, dtype="float32", **kw):
    x, w = _data(xshape), _data(wshape)
    xo, xr = _pair(x, dtype)
    wo, wr = _pair(w, dtype)
    ours = getattr(mx, name)(xo, wo, **kw)
    ref = getattr(mlx, name)(xr, wr, **kw)
    k = int(np.prod(wshape[1:]))
    _close(ours, ref, dtype, scale=max(1.0, np.sqrt(k) / 2))
    return ours


CONV1D = [
    ((2, 9, 4), (6, 3, 4), {}),
    ((1, 1, 3), (2, 1, 3), {}),
    ((3, 17, 5), (7, 4, 5), dict(stride=3, padding=2, dilation=2)),
    ((2, 10, 6), (9, 3, 2), dict(groups=3, padding=1)),
    ((2, 11, 4), (4, 5, 1), dict(groups=4, stride=2, dilation=2, padding=3)),  # depthwise
    ((2, 8, 3), (5, 2, 3), dict(stride=5)),
]


@pytest.mark.parametrize("xs,ws,kw", CONV1D)
def test_conv1d(xs, ws, kw):
    _diff("conv1d", xs, ws, **kw)


CONV2D = [
    ((2, 7, 6, 3), (4, 3, 3, 3), {}),
    ((1, 9, 8, 4), (5, 3, 2, 4), dict(stride=(2, 3), padding=(1, 2), dilation=(2, 1))),
    ((2, 6, 7, 6), (6, 3, 3, 2), dict(groups=3, padding=1)),
    ((1, 5, 5, 4), (4, 3, 3, 1), dict(groups=4, stride=2, padding=1)),
    ((1, 4, 4, 2), (3, 1, 1, 2), dict(stride=[2, 1])),
    ((1, 5, 5, 2), (3, 5, 5, 2), {}),
]


@pytest.mark.parametrize("xs,ws,kw", CONV2D)
def test_conv2d(xs, ws, kw):
    _diff("conv2d", xs, ws, **kw)


CONV3D = [
    ((1, 5, 4, 6, 3), (2, 2, 3, 3, 3), {}),
    ((2, 6, 5, 5, 2), (3, 3, 2, 3, 2), dict(stride=(1, 2, 2), padding=(1, 0, 2),
                                            dilation=(2, 1, 1))),
]


@pytest.mark.parametrize("xs,ws,kw", CONV3D)
def test_conv3d(xs, ws, kw):
    _diff("conv3d", xs, ws, **kw)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_conv_dtypes(dtype):
    if dtype == "float64":
        # MLX computes float64 only on its CPU stream
        x, w = _data((2, 9, 8, 3)), _data((4, 3, 3, 3))
        ours = mx.conv2d(mx.array(x).astype(mx.float64), mx.array(w).astype(mx.float64),
                         padding=1, stream=mx.cpu)
        assert ours.dtype == mx.float64
        ref = mlx.conv2d(mlx.array(x).astype(mlx.float64), mlx.array(w).astype(mlx.float64),
                         padding=1, stream=mlx.cpu)
        # MLX's CPU float64 conv rounds through float32; ours is float64 throughout
        np.testing.assert_allclose(np.array(ours), np.array(ref), rtol=1e-5, atol=1e-5)
        exact = _conv2d_np(x.astype(np.float64), w.astype(np.float64), 1)
        np.testing.assert_allclose(np.array(ours), exact, rtol=1e-12, atol=1e-12)
        return
    _diff("conv2d", (2, 9, 8, 3), (4, 3, 3, 3), dtype, padding=1)
    _diff("conv1d", (2, 9, 4), (6, 3, 2), dtype, groups=2, stride=2)


@pytest.mark.parametrize("a,b,res", [("float16", "float32", "float32"),
                                     ("bfloat16", "float16", "float32"),
                                     ("float32", "int32", "float32"),
                                     ("float16", "float16", "float16")])
def test_result_dtype(a, b, res):
    x = mx.zeros((1, 5, 2), getattr(mx, a))
    w = mx.ones((3, 2, 2), getattr(mx, b))
    out = mx.conv1d(x, w)
    assert out.dtype == getattr(mx, res)
    ref = mlx.conv1d(mlx.zeros((1, 5, 2), getattr(mlx, a)), mlx.ones((3, 2, 2), getattr(mlx, b)))
    assert str(ref.dtype).endswith(res)


GENERAL = [
    ((1, 7, 6, 4), (2, 3, 3, 4), dict(padding=([1, 0], [0, 2]))),
    ((1, 7, 6, 4), (2, 3, 3, 4), dict(padding=[(1, 2), (0, 1)])),
    ((1, 7, 6, 4), (2, 3, 3, 4), dict(padding=(1, 2), stride=[2])),
    ((2, 5, 6, 4), (4, 3, 2, 2), dict(padding=([1, 2], [0, 1]), stride=2, flip=True,
                                      input_dilation=2, kernel_dilation=[1, 2], groups=2)),
    ((1, 8, 3), (2, 3, 3), dict(input_dilation=3, flip=True, padding=2)),
    ((1, 9, 9, 2), (3, 3, 3, 2), dict(padding=-1)),
    ((1, 6, 5, 4, 2), (3, 2, 2, 2, 2), dict(input_dilation=[2, 1, 2], padding=([0, 1, 1], [1, 0, 2]),
                                            flip=True)),
]


@pytest.mark.parametrize("xs,ws,kw", GENERAL)
def test_conv_general(xs, ws, kw):
    _diff("conv_general", xs, ws, **kw)


TRANSPOSE = [
    ("conv_transpose1d", (2, 5, 4), (6, 3, 4), {}),
    ("conv_transpose1d", (2, 5, 4), (6, 3, 4), dict(stride=2, output_padding=1)),
    ("conv_transpose1d", (2, 7, 4), (6, 4, 2), dict(stride=3, padding=2, dilation=2, groups=2,
                                                    output_padding=2)),
    ("conv_transpose2d", (1, 4, 5, 3), (2, 3, 3, 3), dict(stride=2, padding=1,
                                                          output_padding=(1, 0))),
    ("conv_transpose2d", (2, 5, 5, 4), (6, 3, 2, 2), dict(groups=2, dilation=(1, 2))),
    ("conv_transpose3d", (1, 3, 4, 3, 2), (3, 2, 3, 2, 2), dict(stride=(2, 1, 2), padding=(0, 1, 1),
                                                               output_padding=(1, 0, 0))),
]


@pytest.mark.parametrize("name,xs,ws,kw", TRANSPOSE)
def test_conv_transpose(name, xs, ws, kw):
    _diff(name, xs, ws, **kw)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,k", [(7, 3), (7, 4), (2, 5), (6, 6), (1, 1)])
def test_convolve(mode, n, k):
    u, v = _data(n), _data(k)
    ours = mx.convolve(mx.array(u), mx.array(v), mode)
    ref = mlx.convolve(mlx.array(u), mlx.array(v), mode)
    _close(ours, ref)
    np.testing.assert_allclose(np.array(ours), np.convolve(u, v, mode), rtol=1e-5, atol=1e-5)


def test_convolve_default_and_dtype():
    out = mx.convolve(mx.array([1.0, 2.0, 3.0], mx.float16), mx.array([0.0, 1.0, 0.5]))
    assert out.dtype == mx.float32
    np.testing.assert_allclose(np.array(out), [0, 1, 2.5, 4, 1.5])


def test_non_contiguous_input():
    x = _data((2, 12, 5, 3))
    w = _data((4, 2, 2, 3))
    xo = mx.array(x).transpose(0, 2, 1, 3)[:, :, ::2]
    xr = mlx.array(x).transpose(0, 2, 1, 3)[:, :, ::2]
    _close(mx.conv2d(xo, mx.array(w), stride=(1, 2)), mlx.conv2d(xr, mlx.array(w), stride=(1, 2)))


@pytest.mark.parametrize("xs,ws", [((0, 5, 4), (6, 3, 4)), ((2, 5, 0), (6, 3, 0)),
                                   ((2, 5, 4), (0, 3, 4))])
def test_empty(xs, ws):
    ours = mx.conv1d(mx.zeros(xs), mx.zeros(ws))
    ref = mlx.conv1d(mlx.zeros(xs), mlx.zeros(ws))
    assert tuple(ours.shape) == tuple(ref.shape)
    assert not np.array(ours).any()


def test_stream_argument():
    x, w = _data((1, 6, 2)), _data((3, 3, 2))
    out = mx.conv1d(mx.array(x), mx.array(w), stream=mx.cpu)
    ref = mlx.conv1d(mlx.array(x), mlx.array(w))
    _close(out, ref)


def _error(lib, f):
    try:
        f(lib)
    except Exception as e:  # noqa: BLE001 - the exception is the result
        return type(e), str(e)
    return None, None


ERRORS = [
    lambda m: m.conv1d(m.zeros((2, 5, 4), m.int32), m.zeros((6, 3, 4))),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((5, 3, 2)), groups=2),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 2)), groups=3),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 3))),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 7, 4))),
    lambda m: m.conv1d(m.zeros((5, 4)), m.zeros((6, 3, 4))),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((3, 4))),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), stride=0),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), dilation=0),
    lambda m: m.conv3d(m.zeros((1, 5, 5, 5, 4)), m.zeros((2, 3, 3, 3, 2)), groups=2),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 5, 5, 4)), m.zeros((2, 3, 3, 3, 3, 4))),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)),
                             padding=([1, 0, 1], [0, 2])),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)), stride=[1, 2, 3]),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)),
                             input_dilation=[1, 2, 3]),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)),
                             kernel_dilation=[1, 2, 3]),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)), input_dilation=0),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)), groups=2),
    lambda m: m.conv_general(m.zeros((1, 5, 4)), m.zeros((2, 3, 3, 4))),
    lambda m: m.conv_transpose3d(m.zeros((1, 5, 5, 5, 4)), m.zeros((6, 3, 3, 3, 2)), groups=2),
    lambda m: m.conv_transpose1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), padding=5),
    lambda m: m.conv_general(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)), padding=-2),
    lambda m: m.convolve(m.zeros(5), m.zeros(3), mode="bad"),
    # MLX's check order: dims, dtype, weight, channels, list sizes, dilations, stride
    lambda m: m.conv2d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4))),
    lambda m: m.conv3d(m.zeros((2, 5, 5, 4)), m.zeros((6, 3, 3, 4))),
    lambda m: m.conv_transpose2d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4))),
    lambda m: m.conv1d(m.zeros((2, 5, 5, 4)), m.zeros((6, 3, 4))),
    lambda m: m.conv2d(m.zeros((2, 5, 4), m.int32), m.zeros((6, 3, 4))),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), stride=0, dilation=0),
    lambda m: m.conv_general(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), stride=0, input_dilation=0),
    lambda m: m.conv_general(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), kernel_dilation=[1, 1],
                             padding=[1, 1, 1]),
    lambda m: m.conv_general(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), padding=([1], [1, 2])),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), groups=-1),
    lambda m: m.conv1d(m.zeros((2, 5, 4), m.complex64), m.zeros((6, 3, 4))),
    lambda m: m.conv1d(m.zeros((2, 0, 4)), m.zeros((6, 1, 4))),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), padding=-3),
    lambda m: m.convolve(m.zeros(0), m.zeros(3)),
    lambda m: m.convolve(m.zeros((5, 1)), m.zeros(3)),
    lambda m: m.convolve(m.zeros(5, m.int32), m.zeros(3, m.int32)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_mlx(i):
    ours = _error(mx, ERRORS[i])
    ref = _error(mlx, ERRORS[i])
    assert ref[0] is not None
    assert ours == ref


def test_spatial_error_message():
    # MLX reports the too-small axis and the pads
    with pytest.raises(ValueError, match=r"smaller than weight spatial dimensions. Got error at "
                                         r"axis 1 for input with shape \(2,5,4\), padding low "
                                         r"\(0\), padding high \(0\)"):
        mx.conv1d(mx.zeros((2, 5, 4)), mx.zeros((6, 6, 4)))


@pytest.mark.parametrize("f", [
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), stride=(1,)),
    lambda m: m.conv1d(m.zeros((2, 5, 4)), m.zeros((6, 3, 4)), 1.5),
    lambda m: m.conv2d(m.zeros((1, 5, 5, 4)), m.zeros((2, 3, 3, 4)), stride=(1, 2, 3)),
    lambda m: m.conv1d(np.zeros((2, 5, 4), np.float32), m.zeros((6, 3, 4))),
])
def test_bad_argument_types(f):
    with pytest.raises(TypeError):
        f(mlx)
    with pytest.raises(TypeError):
        f(mx)


def test_groups_zero_is_an_error():
    # MLX 0.32.4 dies with SIGFPE here; we raise
    with pytest.raises(ValueError, match="groups"):
        mx.conv1d(mx.zeros((2, 5, 4)), mx.zeros((6, 3, 4)), groups=0)


@pytest.mark.parametrize("name,xs,ws,kw", [
    ("conv1d", (2, 5, 5, 4), (6, 3, 3, 4), {}),  # conv1d's one stride applies to every dim
    ("conv_general", (2, 5, 5, 4), (6, 3, 3, 4), dict(padding=([1], [1, 2]))),
    ("conv_general", (2, 5, 4), (6, 3, 4), dict(stride=[], padding=([], []))),
    ("conv_transpose1d", (2, 5, 4), (6, 3, 4), dict(output_padding=-1)),
    ("conv_transpose1d", (2, 5, 4), (6, 3, 4), dict(output_padding=5, stride=2)),
])
def test_mlx_argument_rules(name, xs, ws, kw):
    _diff(name, xs, ws, **kw)


def test_weight_dtypes():
    # the weight may be any dtype; the result promotes (bool -> float32, complex64 -> complex64)
    x = mx.ones((1, 4, 2))
    assert mx.conv1d(x, mx.ones((3, 2, 2), mx.bool_)).dtype == mx.float32
    out = mx.conv1d(x, mx.ones((3, 2, 2), mx.complex64))
    assert out.dtype == mx.complex64
    np.testing.assert_allclose(np.array(out), np.full((1, 3, 3), 4.0))


def test_negative_padding_transpose_vs_mlx():
    # padding > dilation * (K - 1): MLX crops the stride-dilated input
    _diff("conv_transpose1d", (1, 9, 2), (3, 3, 2), stride=2, padding=3)
    _diff("conv_transpose2d", (1, 6, 7, 2), (3, 2, 3, 2), stride=(2, 3), padding=(2, 3))


@pytest.mark.parametrize("seed", range(40))
def test_random_conv_general(seed):
    """Random shapes and every knob at once, against MLX."""
    r = np.random.default_rng(seed)
    nd = int(r.integers(1, 4))
    groups = 1 if nd == 3 else int(r.choice([1, 2, 3]))
    cg, og = int(r.integers(1, 4)), int(r.integers(1, 3))
    k = [int(r.integers(1, 4)) for _ in range(nd)]
    kd = [int(r.integers(1, 3)) for _ in range(nd)]
    idl = [int(r.integers(1, 3)) for _ in range(nd)]
    st = [int(r.integers(1, 4)) for _ in range(nd)]
    lo = [int(r.integers(0, 3)) for _ in range(nd)]
    hi = [int(r.integers(0, 3)) for _ in range(nd)]
    sp = [-(-kd[i] * (k[i] - 1) // idl[i]) + 1 + int(r.integers(0, 4)) for i in range(nd)]
    xs = (int(r.integers(1, 3)), *sp, groups * cg)
    ws = (groups * og, *k, cg)
    _diff("conv_general", xs, ws, stride=st, padding=(lo, hi), kernel_dilation=kd,
          input_dilation=idl, groups=groups, flip=bool(r.integers(0, 2)))


_HALF_GRAD_CASES = [
    ("conv2d", (2, 6, 6, 3), (5, 3, 3, 3), dict(padding=1)),
    ("conv2d", (2, 7, 6, 4), (6, 3, 2, 2), dict(stride=2, padding=1, groups=2)),
    ("conv2d", (1, 8, 8, 3), (4, 3, 3, 3), dict(dilation=2)),
    ("conv1d", (2, 9, 3), (4, 3, 3), dict(stride=2)),
    ("conv_transpose2d", (2, 4, 4, 3), (5, 4, 4, 3), dict(stride=2, padding=1)),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", range(len(_HALF_GRAD_CASES)))
def test_half_gradients_round_once_like_mlx(dtype, case):
    """MLX's CPU gradients of a half-precision convolution are convolutions themselves: float32
    sums rounded once. The im2col composition in the half dtype rounded the windows' product
    and then their overlap sum, an ulp off in half the input gradient."""
    name, xs, ws, kw = _HALF_GRAD_CASES[case]
    x, w = _data(xs), _data(ws)
    out = getattr(mlx, name)(mlx.array(x), mlx.array(w), **kw)
    c = _data(out.shape)
    got = []
    for m in (mx, mlx):
        d = getattr(m, dtype)
        args = [m.array(v).astype(d) for v in (x, w)]
        f = getattr(m, name)
        val, grads = m.vjp(lambda a, b: f(a, b, **kw), args, [m.array(c).astype(d)])
        got.append([np.array(g.astype(m.float32)) for g in (val[0], *grads)])
    for o, t in zip(*got):
        # bit for bit but for float32 summation order landing on a rounding boundary (rare)
        assert np.mean(o != t) <= 0.01, np.mean(o != t)
        np.testing.assert_allclose(o, t, rtol=1e-2 if dtype == "bfloat16" else 1e-3, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# Where MLX 0.32.4's CPU build is wrong (found running the configurations of MLX's torch-only
# conv tests against it): checked against numpy and the adjoint identity <c, f(w)> = <f*(c), w>
# of a linear map instead of against MLX.


def _weight_grad_np(x, c, wshape, stride, lo, kd, idl):
    """float64 gradient of sum(c * conv_general(x, w)) w.r.t. w (2-D, one group, no flip)."""
    n, h, wd, ch = x.shape
    xd = np.zeros((n, (h - 1) * idl[0] + 1, (wd - 1) * idl[1] + 1, ch))
    xd[:, ::idl[0], ::idl[1]] = x
    xd = np.pad(xd, ((0, 0), (lo[0], lo[0] + 8), (lo[1], lo[1] + 8), (0, 0)))
    oh, ow = c.shape[1:3]
    g = np.zeros(wshape)
    for i in range(wshape[1]):
        for j in range(wshape[2]):
            win = xd[:, i * kd[0]:i * kd[0] + (oh - 1) * stride[0] + 1:stride[0],
                     j * kd[1]:j * kd[1] + (ow - 1) * stride[1] + 1:stride[1]]
            g[:, i, j, :] = np.einsum("nyxo,nyxc->oc", c, win)
    return g


@pytest.mark.parametrize("wshape,stride,kd,idl", [((3, 3, 5, 2), (2, 3), (3, 2), (2, 4)),
                                                 ((2, 3, 3, 2), (2, 3), (3, 1), (2, 3))])
def test_weight_grad_with_input_dilation(wshape, stride, kd, idl):
    # MLX returns a weight gradient narrower than the weight here (e.g. (3, 3, 3, 2)).
    x = _data((2, 7, 7, 2)).astype(np.float32)
    w = _data(wshape)
    f = lambda w: mx.conv_general(mx.array(x), w, stride=stride, padding=1, kernel_dilation=kd,
                                  input_dilation=idl)
    out = f(mx.array(w))
    c = _data(out.shape)
    _, (gw,) = mx.vjp(f, [mx.array(w)], [mx.array(c)])
    assert gw.shape == w.shape
    ref = _weight_grad_np(x.astype(np.float64), c.astype(np.float64), w.shape, stride, (1, 1),
                          kd, idl)
    np.testing.assert_allclose(np.array(gw), ref, rtol=1e-4, atol=1e-4)


def test_conv_transpose_output_padding_input_grad():
    # MLX returns an input gradient of shape (1, 2, 2, 2) for a (1, 3, 3, 2) input here.
    x, w = _data((1, 3, 3, 2)), _data((3, 3, 3, 2))
    f = lambda x: mx.conv_transpose2d(x, mx.array(w), stride=2, output_padding=1)
    out = f(mx.array(x))
    c = _data(out.shape)
    _, (gx,) = mx.vjp(f, [mx.array(x)], [mx.array(c)])
    assert gx.shape == x.shape
    # f is linear in x: its gradient is J^T c, J built column by column from basis inputs
    basis = np.eye(x.size, dtype=np.float32).reshape((x.size, *x.shape))
    jac = np.stack([np.array(f(mx.array(e))).ravel() for e in basis], axis=1)
    np.testing.assert_allclose(np.array(gx).ravel(), jac.T @ c.ravel(), rtol=1e-4, atol=1e-4)


def test_vmap_over_grouped_weight():
    # MLX's vmap over the weight of a grouped convolution mixes the groups up.
    x, ws = _data((2, 9, 4)), _data((3, 6, 3, 2))
    got = mx.vmap(lambda w: mx.conv1d(mx.array(x), w, groups=2))(mx.array(ws))
    loop = np.stack([np.array(mx.conv1d(mx.array(x), mx.array(w), groups=2)) for w in ws])
    np.testing.assert_allclose(np.array(got), loop, rtol=1e-5, atol=1e-5)
    ref_loop = np.stack([np.array(mlx.conv1d(mlx.array(x), mlx.array(w), groups=2)) for w in ws])
    np.testing.assert_allclose(loop, ref_loop, rtol=2e-5, atol=2e-5)


def _random_conv(seed):
    """A random conv_general or conv_transpose{1,2,3}d call and an input/weight pair."""
    r = np.random.default_rng(seed)
    nd = int(r.integers(1, 4))
    groups = 1 if nd == 3 else int(r.choice([1, 2]))
    cg, og = int(r.integers(1, 3)), int(r.integers(1, 3))
    k = [int(r.integers(1, 4)) for _ in range(nd)]
    kd = [int(r.integers(1, 3)) for _ in range(nd)]
    st = [int(r.integers(1, 4)) for _ in range(nd)]
    if seed % 2:
        idl = [int(r.integers(1, 3)) for _ in range(nd)]
        lo = [int(r.integers(0, 3)) for _ in range(nd)]
        hi = [int(r.integers(0, 3)) for _ in range(nd)]
        sp = [-(-kd[i] * (k[i] - 1) // idl[i]) + 1 + int(r.integers(0, 3)) for i in range(nd)]
        fl = bool(r.integers(0, 2))

        def f(x, w):
            return mx.conv_general(x, w, stride=st, padding=(lo, hi), kernel_dilation=kd,
                                   input_dilation=idl, groups=groups, flip=fl)
    else:
        pd = [int(r.integers(0, kd[i] * (k[i] - 1) // 2 + 1)) for i in range(nd)]
        op = [int(r.integers(0, s)) for s in st]
        sp = [int(r.integers(1, 4)) for _ in range(nd)]
        fn = [mx.conv_transpose1d, mx.conv_transpose2d, mx.conv_transpose3d][nd - 1]
        one = (lambda v: v[0]) if nd == 1 else tuple

        def f(x, w):
            return fn(x, w, stride=one(st), padding=one(pd), dilation=one(kd),
                      output_padding=one(op), groups=groups)
    xs = (int(r.integers(1, 3)), *sp, groups * cg)
    ws = (groups * og, *k, cg)
    return f, r.standard_normal(xs).astype(np.float32), r.standard_normal(ws).astype(np.float32)


@pytest.mark.parametrize("seed", range(16))
def test_random_conv_vjp_is_the_adjoint(seed):
    """vjp of a convolution against its definition: a convolution is linear in the input and
    in the weight, so <c, f(v, w)> = <d_input, v> and <c, f(x, u)> = <d_weight, u> for any v, u.
    (MLX 0.32.4's CPU vjp fails this for 7 of these 16 configurations: wrong values, gradients
    of the wrong shape, or a shape error from inside its vjp.)"""
    f, x, w = _random_conv(seed)
    r = np.random.default_rng(1000 + seed)
    out = f(mx.array(x), mx.array(w))
    c = r.standard_normal(out.shape)
    _, (gx, gw) = mx.vjp(f, [mx.array(x), mx.array(w)], [mx.array(c.astype(np.float32))])
    assert gx.shape == x.shape and gw.shape == w.shape
    v = r.standard_normal(x.shape).astype(np.float32)
    u = r.standard_normal(w.shape).astype(np.float32)
    fv = np.array(f(mx.array(v), mx.array(w)), np.float64)
    fu = np.array(f(mx.array(x), mx.array(u)), np.float64)
    np.testing.assert_allclose((np.array(gx, np.float64) * v).sum(), (c * fv).sum(), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose((np.array(gw, np.float64) * u).sum(), (c * fu).sum(), rtol=1e-4,
                               atol=1e-4)


class _Index:
    def __index__(self) -> int:
        return 2


# (own generator: drawing from RNG at import would change every other test's data)
_ARG_RNG = np.random.default_rng(77)
_X2 = _ARG_RNG.standard_normal((1, 7, 7, 2)).astype(np.float32)
_W2 = _ARG_RNG.standard_normal((3, 2, 2, 2)).astype(np.float32)

# nanobind's argument conversions, as MLX's bindings apply them: int takes bools and anything
# with __index__ (numpy integers, 0-d integer arrays, integer mx scalars) but no float; the
# tuple / Sequence casters take any sequence (numpy, mx arrays, range) but a string; bool takes
# True / False only; str only a str.
_ARG_VALUES = {
    "np_int": lambda m: np.int64(2), "np_0d": lambda m: np.array(2), "mx_int": lambda m: m.array(2),
    "index": lambda m: _Index(), "true": lambda m: True, "np_float": lambda m: np.float64(2.0),
    "mx_float": lambda m: m.array(2.0), "float": lambda m: 2.0, "none": lambda m: None,
    "np_1d": lambda m: np.array([2, 1]), "mx_1d": lambda m: m.array([2, 1]),
    "range": lambda m: range(1, 3), "np_1d_float": lambda m: np.array([2.0, 1.0]),
    "str": lambda m: "ab", "np_bool": lambda m: np.bool_(True), "zero": lambda m: 0,
}
_ARG_CALLS = {
    "conv1d stride": lambda m, x, w, v: m.conv1d(x[:, 0], w[:, 0], stride=v),
    "conv2d stride": lambda m, x, w, v: m.conv2d(x, w, stride=v),
    "conv2d padding pair": lambda m, x, w, v: m.conv2d(x, w, padding=(v, 0)),
    "conv_general stride": lambda m, x, w, v: m.conv_general(x, w, stride=v),
    "conv_general padding": lambda m, x, w, v: m.conv_general(x, w, padding=v),
    "conv_general flip": lambda m, x, w, v: m.conv_general(x, w, flip=v),
    "conv_transpose2d stride": lambda m, x, w, v: m.conv_transpose2d(x, w, stride=v),
    "conv1d groups": lambda m, x, w, v: m.conv1d(x[:, 0], w[:, 0, :, :1], groups=v),
    "convolve mode": lambda m, x, w, v: m.convolve(x[0, 0, :, 0], w[0, 0, :, 0], v),
}


@pytest.mark.parametrize("value", list(_ARG_VALUES))
@pytest.mark.parametrize("call", list(_ARG_CALLS))
def test_argument_conversions_like_nanobind(call, value):
    if call == "conv1d groups" and value == "zero":
        pytest.skip("MLX 0.32.4 dies with SIGFPE on groups=0 (see test_groups_zero_is_an_error)")
    got = []
    for m in (mx, mlx):
        try:
            out = _ARG_CALLS[call](m, m.array(_X2), m.array(_W2), _ARG_VALUES[value](m))
            got.append(np.array(out))
        except Exception as e:  # noqa: BLE001 - the exception is the result
            got.append((type(e), str(e).split("\n")[0]))
    ours, ref = got
    if isinstance(ref, tuple):
        assert ours == ref
    else:
        assert not isinstance(ours, tuple), ours
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
