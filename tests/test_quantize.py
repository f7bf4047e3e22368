"""mx.quantize / dequantize / quantized_matmul / gather_qmm on the CPU, against real MLX 0.32.4:
the packed words, scales and biases must be bit-identical; dequantized values and products
match MLX and a numpy float64 oracle within float tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

M = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(11)
BITS = (1, 2, 3, 4, 5, 6, 8)
DTYPES = ("float32", "float16", "bfloat16")


def _mine(x: np.ndarray, dtype: str = "float32"):
    return mx.array(x).astype(getattr(mx, dtype))


def _theirs(x: np.ndarray, dtype: str = "float32"):
    return M.array(x).astype(getattr(M, dtype))


def _np(a) -> np.ndarray:
    """float arrays (bfloat16 included) as float32 numpy, uint32 as is; ours or MLX's."""
    if "uint32" in str(a.dtype):
        return np.array(a)
    return np.array(a.astype(M.float32 if isinstance(a, M.array) else mx.float32))


def _assert_same_quant(ours, ref):
    assert len(ours) == len(ref) == 3
    for o, r in zip(ours, ref):
        assert o.shape == tuple(r.shape)
        assert o.dtype.name == str(r.dtype).split(".")[-1]
        np.testing.assert_array_equal(_np(o), _np(r))


def _oracle_dequant(q: np.ndarray, scales: np.ndarray, biases: np.ndarray, gs: int,
                    bits: int) -> np.ndarray:
    """Independent unpacking: the row as one little-endian bit stream, LSB first."""
    lead, kw = q.shape[:-1], q.shape[-1]
    by = q.astype("<u4").reshape(-1, kw).view(np.uint8)
    stream = np.unpackbits(by, axis=-1, bitorder="little")
    k = kw * 32 // bits
    vals = stream.reshape(-1, k, bits).astype(np.int64) @ (1 << np.arange(bits))
    vals = vals.reshape(*lead, k // gs, gs).astype(np.float64)
    out = vals * scales.astype(np.float64)[..., None] + biases.astype(np.float64)[..., None]
    return out.reshape(*lead, k)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("gs", (32, 64, 128))
def test_quantize_bit_identical(bits, gs):
    for dtype in DTYPES:
        w = RNG.standard_normal((5, 256)).astype(np.float32)
        ours = mx.quantize(_mine(w, dtype), gs, bits)
        ref = M.quantize(_theirs(w, dtype), gs, bits)
        _assert_same_quant(ours, ref)
        # dequantize: equal to MLX and to the independent oracle
        d = mx.dequantize(*ours, gs, bits)
        dr = M.dequantize(*ref, gs, bits)
        assert d.dtype.name == dtype and d.shape == (5, 256)
        tol = 1e-6 if dtype == "float32" else 1e-2
        np.testing.assert_allclose(_np(d), _np(dr), rtol=tol, atol=tol)
        orc = _oracle_dequant(np.array(ours[0]), _np(ours[1]), _np(ours[2]), gs, bits)
        np.testing.assert_allclose(_np(d), orc, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("name,w", [
    ("zeros", np.zeros((2, 64), np.float32)),
    ("const", np.full((2, 64), 3.5, np.float32)),
    ("negconst", np.full((2, 64), -0.25, np.float32)),
    ("positive", RNG.random((3, 128)).astype(np.float32) + 1),
    ("negative", -RNG.random((3, 128)).astype(np.float32) - 1),
    ("huge", (RNG.standard_normal((2, 64)) * 1e30).astype(np.float32)),
    ("tiny", (RNG.standard_normal((2, 64)) * 1e-9).astype(np.float32)),
    ("integers", RNG.integers(-8, 8, (4, 64)).astype(np.float32)),
    ("batched", RNG.standard_normal((2, 3, 64)).astype(np.float32)),
    ("onerow", RNG.standard_normal((1, 32)).astype(np.float32)),
])
def test_quantize_edge_values(name, w):
    for bits in BITS:
        _assert_same_quant(mx.quantize(_mine(w), 32, bits), M.quantize(_theirs(w), 32, bits))


def test_defaults_and_lazy_streams():
    w = RNG.standard_normal((4, 128)).astype(np.float32)
    q, s, b = mx.quantize(_mine(w), stream=mx.cpu)
    assert q.shape == (4, 16) and s.shape == (4, 2)  # group_size=64, bits=4
    _assert_same_quant((q, s, b), M.quantize(_theirs(w)))
    d = mx.dequantize(q, s, b, dtype=mx.float16, stream=mx.cpu)
    assert d.dtype == mx.float16
    assert hasattr(mx, "quantize") and hasattr(mx, "gather_qmm")


@pytest.mark.parametrize("bits", (2, 3, 4, 5, 8))
@pytest.mark.parametrize("transpose", (True, False))
def test_quantized_matmul(bits, transpose):
    gs = 32
    for dtype in DTYPES:
        shape = (48, 96) if transpose else (96, 64)
        n = shape[0] if transpose else shape[1]
        w = RNG.standard_normal(shape).astype(np.float32)
        x = RNG.standard_normal((2, 3, 96)).astype(np.float32)
        ours = mx.quantize(_mine(w, dtype), gs, bits)
        ref = M.quantize(_theirs(w, dtype), gs, bits)
        r = mx.quantized_matmul(_mine(x, dtype), *ours, transpose=transpose, group_size=gs,
                                bits=bits)
        rr = M.quantized_matmul(_theirs(x, dtype), *ref, transpose=transpose, group_size=gs,
                                bits=bits)
        assert r.shape == tuple(rr.shape) == (2, 3, n)
        assert r.dtype.name == str(rr.dtype).split(".")[-1]
        wd = _oracle_dequant(np.array(ours[0]), _np(ours[1]), _np(ours[2]), gs, bits)
        xd = _np(_mine(x, dtype)).astype(np.float64)
        want = xd @ (wd.T if transpose else wd)
        scale = np.abs(want).max()
        tol = 1e-5 if dtype == "float32" else 1e-2 if dtype == "float16" else 2e-2
        assert np.abs(_np(r) - want).max() <= tol * scale
        assert np.abs(_np(r) - _np(rr)).max() <= 5 * tol * scale


def test_quantized_matmul_shapes_and_dtypes():
    w = RNG.standard_normal((8, 64)).astype(np.float32)
    q, s, b = mx.quantize(_mine(w), 32, 4)
    qr, sr, br = M.quantize(_theirs(w), 32, 4)
    x = RNG.standard_normal((64,)).astype(np.float32)
    r = mx.quantized_matmul(_mine(x), q, s, b, group_size=32)
    assert r.shape == (8,)
    np.testing.assert_allclose(np.array(r), np.array(M.quantized_matmul(_theirs(x), qr, sr, br,
                                                                       group_size=32)),
                               rtol=1e-5, atol=1e-5)
    # half x with float32 scales promotes to float32 (as MLX)
    r = mx.quantized_matmul(_mine(RNG.standard_normal((3, 64)), "float16"), q, s, b,
                            group_size=32)
    assert r.dtype == mx.float32
    # broadcast batch dims
    xb = RNG.standard_normal((2, 1, 5, 64)).astype(np.float32)
    qb, sb, bb = (mx.stack([a, a]) for a in (q, s, b))
    r = mx.quantized_matmul(_mine(xb), qb, sb, bb, group_size=32)
    rr = M.quantized_matmul(_theirs(xb), *(M.stack([a, a]) for a in (qr, sr, br)),
                            group_size=32)
    assert r.shape == tuple(rr.shape) == (2, 2, 5, 8)
    np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-5, atol=1e-4)


def test_gather_qmm():
    w = RNG.standard_normal((4, 64, 128)).astype(np.float32)
    x = RNG.standard_normal((3, 2, 128)).astype(np.float32)
    ours, ref = mx.quantize(_mine(w), 64, 4), M.quantize(_theirs(w), 64, 4)
    li = np.array([0, 2, 1, 1], np.uint32)
    ri = np.array([3, 0, 1, 3], np.uint32)
    r = mx.gather_qmm(_mine(x), *ours, lhs_indices=mx.array(li), rhs_indices=mx.array(ri))
    rr = M.gather_qmm(_theirs(x), *ref, lhs_indices=M.array(li), rhs_indices=M.array(ri))
    assert r.shape == tuple(rr.shape) == (4, 2, 64)
    np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-4, atol=1e-4)
    ri2 = np.array([[3], [0], [2]], np.int32)
    r = mx.gather_qmm(_mine(x[:, None]), *ours, rhs_indices=mx.array(ri2))
    rr = M.gather_qmm(_theirs(x[:, None]), *ref, rhs_indices=M.array(ri2))
    assert r.shape == tuple(rr.shape)
    np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-4, atol=1e-4)
    # no indices: plain quantized_matmul over broadcast batches
    r = mx.gather_qmm(_mine(x[:1]), *ours, transpose=True)
    rr = M.gather_qmm(_theirs(x[:1]), *ref, transpose=True)
    np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-4, atol=1e-4)


def test_errors():
    w = _mine(RNG.standard_normal((4, 64)).astype(np.float32))
    with pytest.raises(ValueError, match="group size 16 is not supported"):
        mx.quantize(w, group_size=16)
    with pytest.raises(ValueError, match="number of bits 7 is not supported"):
        mx.quantize(w, bits=7)
    with pytest.raises(ValueError, match="Invalid quantization mode 'foo'"):
        mx.quantize(w, mode="foo")
    for mode, gs in (("mxfp4", 32), ("mxfp8", 32), ("nvfp4", 16)):
        with pytest.raises(ValueError, match=f"{mode} quantization requires group size {gs}"):
            mx.quantize(w, group_size=64, mode=mode)
    with pytest.raises(ValueError, match="at least 2 dimension"):
        mx.quantize(w[0])
    with pytest.raises(ValueError, match="divisible by the quantization group size 32"):
        mx.quantize(w[:, :40], group_size=32)
    with pytest.raises(ValueError, match="Only real floating types"):
        mx.quantize(w.astype(mx.int32))
    with pytest.raises(RuntimeError, match="float64"):
        mx.quantize(w.astype(mx.float64), stream=mx.cpu)
    q, s, b = mx.quantize(w, 32, 4)
    with pytest.raises(ValueError, match="Biases must be provided"):
        mx.dequantize(q, s, None, group_size=32)
    with pytest.raises(ValueError, match="Shape of scales and biases"):
        mx.dequantize(q, s, b, group_size=64)
    with pytest.raises(ValueError, match="Shape of scales and biases"):
        mx.dequantize(q, s, b, group_size=32, bits=3)
    with pytest.raises(ValueError, match="at least 2 dimension"):
        mx.dequantize(q[0], s[0], b[0], group_size=32)
    with pytest.raises(ValueError, match="output dtype == int32"):
        mx.dequantize(q, s, b, group_size=32, dtype=mx.int32)
    x = _mine(RNG.standard_normal((3, 64)).astype(np.float32))
    with pytest.raises(ValueError, match="should be uint32 but received int32"):
        mx.quantized_matmul(x, q.astype(mx.int32), s, b, group_size=32)
    with pytest.raises(ValueError, match="does not match the expanded quantized matrix"):
        mx.quantized_matmul(x[:, :32], q, s, b, group_size=32)
    with pytest.raises(ValueError, match="transpose=false"):
        mx.quantized_matmul(x, q, s, b, transpose=False, group_size=32)
    with pytest.raises(ValueError, match="indices"):
        mx.gather_qmm(x, q, s, b, rhs_indices=mx.array([0.5]), group_size=32)


def test_non_contiguous_and_wide():
    w = RNG.standard_normal((128, 6)).astype(np.float32)
    ours = mx.quantize(mx.array(w).T, 32, 3)   # transposed view
    ref = M.quantize(M.array(w).T, 32, 3)
    _assert_same_quant(ours, ref)
    w = RNG.standard_normal((3, 4096)).astype(np.float32)[:, ::2]
    for bits in (3, 5, 6):
        _assert_same_quant(mx.quantize(mx.array(w), 128, bits), M.quantize(M.array(w), 128, bits))


def test_empty_rows():
    ours = mx.quantize(mx.zeros((0, 64)), 32, 4)
    ref = M.quantize(M.zeros((0, 64)), 32, 4)
    _assert_same_quant(ours, ref)
    # MLX's dequantize fails on this ("Cannot infer the shape of an empty array"); we return it
    assert mx.dequantize(*ours, 32, 4).shape == (0, 64)
    assert [a.shape for a in mx.quantize(mx.zeros((2, 0, 64)), 32, 3)] == [(2, 0, 6), (2, 0, 2),
                                                                           (2, 0, 2)]


@pytest.mark.parametrize("shape,group_size,bits,dtype", [
    ((8, 64), 48, 4, "float32"), ((8, 96), 48, 7, "float32"), ((8, 64), 48, 7, "float32"),
    ((64,), 48, 7, "float32"), ((64,), 64, 4, "int32"), ((8, 40), 48, 7, "int32"),
    ((8, 40), 16, 4, "float32"), ((8, 40), 48, 4, "float64"), ((8, 128), 64, 7, "float64"),
])
def test_quantize_checks_in_mlx_order(shape, group_size, bits, dtype):
    """MLX checks the dtype, the rank and the divisibility by the group size before it checks
    the group size and bits themselves (nn.QuantizedLinear(64, 8, group_size=48) says the
    64 columns are not divisible by 48)."""
    def err(m):
        try:
            m.quantize(m.ones(shape, dtype=getattr(m, dtype)), group_size=group_size, bits=bits)
        except ValueError as e:
            return str(e)
        return None

    assert err(mx) == err(M)


_QMATRIX_CASES = [
    lambda m, q, s, b: m.dequantize(q, s, b, group_size=48),
    lambda m, q, s, b: m.dequantize(q, s, b, group_size=32, bits=7),
    lambda m, q, s, b: m.dequantize(q, s, None, group_size=48),
    lambda m, q, s, b: m.dequantize(q.astype(m.int32), s, b),
    lambda m, q, s, b: m.dequantize(q[0].astype(m.int32), s, b),
    lambda m, q, s, b: m.dequantize(q[0], s, b),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q, s, b, group_size=32),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q, s, None, group_size=48),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q.astype(m.int32), s, b),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q[0], s[0], b[0]),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q[None], s, b),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q, s, b[:, :1]),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 60)), q, s, b),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 60)), q, s, b, transpose=False),
    lambda m, q, s, b: m.quantized_matmul(m.ones((2, 128)), q, s, b, group_size=16, bits=8),
    lambda m, q, s, b: m.gather_qmm(m.ones((2, 128)), q, s, b, group_size=48),
    lambda m, q, s, b: m.gather_qmm(m.ones((2, 128)), q, s, None),
    lambda m, q, s, b: m.gather_qmm(m.ones((2, 60)), q, s, b),
    # a group size MLX does not quantize with is accepted where the shapes agree with it
    # (MLX's quantized_matmul then fails at evaluation: "Quantization group size must be 32,
    # 64 or 128"; ours computes it)
    lambda m, q, s, b: m.dequantize(q, m.ones((8, 8)), m.ones((8, 8)) * 0.5, group_size=16),
]


@pytest.mark.parametrize("i", range(len(_QMATRIX_CASES)))
def test_quantized_matrix_checks_match_mlx(i):
    """dequantize/quantized_matmul/gather_qmm check the matrices (not the group size and bits
    themselves) in MLX's order and words; gather_qmm's messages say quantized_matmul."""
    def run(m):
        q, s, b = m.quantize(m.array(np.linspace(-1, 1, 8 * 128, dtype=np.float32)
                                     .reshape(8, 128)), group_size=64, bits=4)
        try:
            return np.array(_QMATRIX_CASES[i](m, q, s, b))
        except ValueError as e:
            return str(e)

    ours, theirs = run(mx), run(M)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)

@pytest.mark.parametrize("cols,kw", [(64, dict(group_size=48)), (96, dict(group_size=48)),
                                     (64, dict(group_size=48, bits=7)), (96, dict(bits=7)),
                                     (64, dict(bits=7)), (40, dict(group_size=16))])
def test_quantize_checks_the_shape_before_group_size_and_bits(cols, kw):
    """MLX reports a last dimension not divisible by the group size before an unsupported
    group size or bit width."""
    with pytest.raises(ValueError) as theirs:
        M.quantize(M.ones((4, cols)), **kw)
    with pytest.raises(ValueError) as ours:
        mx.quantize(mx.ones((4, cols)), **kw)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("transpose", [True, False])
def test_quantized_matmul_width_mismatch_message(transpose):
    """MLX prints the expanded matrix as '(64, 4)' (with a space), unlike its other shapes."""
    msgs = []
    for m in (M, mx):
        wq, s, b = m.quantize(m.ones((4, 64)))
        with pytest.raises(ValueError) as info:
            m.quantized_matmul(m.ones((2, 32)), wq, s, b, transpose=transpose)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def _derivatives(lib, x, w):
    """Every gradient/jvp of quantized_matmul and gather_qmm MLX has, or MLX's RuntimeError."""
    wq, s, b = lib.quantize(w, group_size=32, bits=4)
    qmm = lambda *a: lib.quantized_matmul(*a, group_size=32, bits=4)  # noqa: E731
    gqmm = lambda *a: lib.gather_qmm(a[0][:, None], *a[1:], rhs_indices=lib.array([1, 0]),  # noqa: E731
                                     group_size=32, bits=4)
    w2, s2, b2 = lib.stack([wq, wq]), lib.stack([s, s * 2]), lib.stack([b, b])
    out = []

    def attempt(f):
        try:
            out.append(np.array(f()))
        except RuntimeError as e:
            out.append(str(e))

    for fn, ops in ((qmm, (x, wq, s, b)), (gqmm, (x, w2, s2, b2))):
        for argnum in range(4):
            attempt(lambda: lib.grad(lambda *a: (fn(*a) ** 2).sum(), argnums=argnum)(*ops))
            t = lib.ones_like(ops[argnum])
            attempt(lambda: lib.jvp(lambda v: fn(*ops[:argnum], v, *ops[argnum + 1:]),
                                    [ops[argnum]], [t])[1][0])
    return out


def test_no_derivative_wrt_the_quantized_matrix():
    """MLX raises for a gradient wrt the packed weights (QuantizedLinear unfrozen) and for a
    jvp wrt any quantized operand; ours used to return silent zeros / a dequantize jvp."""
    w = RNG.standard_normal((16, 64)).astype(np.float32)
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    ours, ref = _derivatives(mx, _mine(x), _mine(w)), _derivatives(M, _theirs(x), _theirs(w))
    assert len(ours) == len(ref) == 16
    for o, r in zip(ours, ref):
        if isinstance(r, str):
            assert o == r
        else:
            np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-3)
    # nn: an unfrozen QuantizedLinear cannot be trained; its bias alone can
    import pycudamlx.nn as nn

    layer = nn.QuantizedLinear(64, 16, group_size=32, bits=4)
    layer.unfreeze(keys=["bias"])
    loss = nn.value_and_grad(layer, lambda m, v: m(v).sum())
    assert sorted(loss(layer, _mine(x))[1]) == ["bias"]
    layer.unfreeze()
    with pytest.raises(RuntimeError, match=r"QuantizedMatmul::vjp\] no gradient"):
        loss(layer, _mine(x))


FP_MODES = ("mxfp4", "mxfp8", "nvfp4")


def _fp_weights() -> np.ndarray:
    """Rows at several magnitudes, an all-zero group, values on E2M1's midpoints, powers of
    two and float32 subnormals (whose E8M0 exponent falls below the byte's range)."""
    w = RNG.standard_normal((8, 128)).astype(np.float32)
    w *= np.array([1e-6, 1e-3, 1, 1, 30, 1e4, 1, 1], np.float32)[:, None]
    w[2, :40] = 0
    w[3] = RNG.choice(np.float32([0.25, 0.75, -0.25, -0.75, 5, -5, 3, 6, -0.0, 1.25]), 128)
    w[6] = np.float32(2.0) ** RNG.integers(-20, 20, 128)
    w[7, :32] = np.float32(1e-40)
    return w


@pytest.mark.parametrize("mode", FP_MODES)
@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
def test_fp_modes_bit_identical(mode, dtype):
    """mxfp4/mxfp8/nvfp4: packed codes and uint8 scales equal MLX's bit for bit; dequantize
    in every output dtype (default bfloat16) equal too."""
    w = _fp_weights()
    ours, ref = mx.quantize(_mine(w, dtype), mode=mode), M.quantize(_theirs(w, dtype), mode=mode)
    _assert_same_quant_n(ours, ref, 2)
    for out in (None, "float32", "float16", "bfloat16"):
        kw_o = {} if out is None else {"dtype": getattr(mx, out)}
        kw_r = {} if out is None else {"dtype": getattr(M, out)}
        d, dr = mx.dequantize(*ours, mode=mode, **kw_o), M.dequantize(*ref, mode=mode, **kw_r)
        assert d.dtype.name == str(dr.dtype).split(".")[-1]
        np.testing.assert_array_equal(_np(d), _np(dr))


def _assert_same_quant_n(ours, ref, n):
    assert len(ours) == len(ref) == n
    for o, r in zip(ours, ref):
        assert o.shape == tuple(r.shape) and o.dtype.name == str(r.dtype).split(".")[-1]
        np.testing.assert_array_equal(np.array(o), np.array(r))


@pytest.mark.parametrize("scale", (1.0, 3.0, 0.37, None))
def test_nvfp4_global_scale(scale):
    w = RNG.standard_normal((4, 64)).astype(np.float32) * 2
    g = float(np.abs(w).max()) if scale is None else scale
    ours = mx.quantize(_mine(w), mode="nvfp4", global_scale=mx.array(g))
    ref = M.quantize(_theirs(w), mode="nvfp4", global_scale=M.array(g))
    _assert_same_quant_n(ours, ref, 2)
    d = mx.dequantize(*ours, mode="nvfp4", global_scale=mx.array(g), dtype=mx.bfloat16)
    dr = M.dequantize(*ref, mode="nvfp4", global_scale=M.array(g), dtype=M.bfloat16)
    assert d.dtype == mx.float32 and dr.dtype == M.float32  # the global scale makes it float32
    np.testing.assert_array_equal(np.array(d), np.array(dr))


@pytest.mark.parametrize("mode", FP_MODES)
def test_fp_modes_matmuls(mode):
    w = RNG.standard_normal((2, 24, 64)).astype(np.float32)
    x = RNG.standard_normal((3, 64)).astype(np.float32)
    ours, ref = mx.quantize(_mine(w), mode=mode), M.quantize(_theirs(w), mode=mode)
    for transpose, xs in ((True, x), (False, x[:, :24])):
        r = mx.quantized_matmul(_mine(xs), ours[0][0], ours[1][0], transpose=transpose, mode=mode)
        rr = M.quantized_matmul(_theirs(xs), ref[0][0], ref[1][0], transpose=transpose, mode=mode)
        assert r.shape == tuple(rr.shape) and r.dtype == mx.float32
        np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-5, atol=1e-5)
    # half inputs give half outputs (MLX's CPU kernel accumulates groups in the half type,
    # so the values agree to the half type's precision only)
    r = mx.quantized_matmul(_mine(x, "bfloat16"), ours[0][1], ours[1][1], mode=mode)
    rr = M.quantized_matmul(_theirs(x, "bfloat16"), ref[0][1], ref[1][1], mode=mode)
    assert r.dtype == mx.bfloat16
    np.testing.assert_allclose(_np(r), _np(rr), rtol=0, atol=0.02 * np.abs(_np(rr)).max())
    idx = np.array([1, 0, 1], np.uint32)
    r = mx.gather_qmm(_mine(x[:, None]), *ours, rhs_indices=mx.array(idx), mode=mode)
    rr = M.gather_qmm(_theirs(x[:, None]), *ref, rhs_indices=M.array(idx), mode=mode)
    np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-5, atol=1e-5)
    g = mx.grad(lambda v: mx.quantized_matmul(v, *[a[0] for a in ours], mode=mode).sum())(
        _mine(x))
    gr = M.grad(lambda v: M.quantized_matmul(v, *[a[0] for a in ref], mode=mode).sum())(
        _theirs(x))
    np.testing.assert_allclose(np.array(g), np.array(gr), rtol=1e-5, atol=1e-5)


def _fp_error(lib, case):
    w = lib.array(np.linspace(-2, 2, 256, dtype=np.float32).reshape(4, 64))
    x = lib.ones((3, 64))
    q, s = lib.quantize(w, mode="mxfp4")
    qn, sn = lib.quantize(w, mode="nvfp4")
    cases = {
        "bits": lambda: lib.quantize(w, bits=8, mode="mxfp4"),
        "gs_bits": lambda: lib.quantize(w, group_size=64, bits=8, mode="mxfp8"),
        "odd_width": lambda: lib.quantize(w[:, :48], mode="mxfp4"),
        "int": lambda: lib.quantize(w.astype(lib.int32), mode="nvfp4"),
        "nv_rows": lambda: lib.quantize(w[:3, :16], mode="nvfp4"),
        "global_mx": lambda: lib.quantize(w, mode="mxfp4", global_scale=lib.array(2.0)),
        "global_f16": lambda: lib.quantize(w, mode="nvfp4",
                                           global_scale=lib.array(2.0, dtype=lib.float16)),
        "global_shape": lambda: lib.quantize(w, mode="nvfp4", global_scale=lib.array([2.0, 3.0])),
        "deq_biases": lambda: lib.dequantize(q, s, s, group_size=64, mode="mxfp4"),
        "deq_scale_type": lambda: lib.dequantize(q, s.astype(lib.float32), s, mode="mxfp4"),
        "deq_gs": lambda: lib.dequantize(q, s, group_size=64, mode="mxfp4"),
        "deq_shape": lambda: lib.dequantize(q, s[:, :1], mode="mxfp4"),
        "deq_w": lambda: lib.dequantize(q.astype(lib.int32), s, mode="mxfp4"),
        "deq_dtype": lambda: lib.dequantize(q, s, mode="mxfp4", dtype=lib.int32),
        "deq_global": lambda: lib.dequantize(q, s, mode="mxfp4", global_scale=lib.array(1.0)),
        "qmm_scale_type": lambda: lib.quantized_matmul(x, q, s.astype(lib.float32), mode="mxfp4"),
        "qmm_biases": lambda: lib.quantized_matmul(x, qn, sn, sn, mode="nvfp4"),
        "qmm_gs": lambda: lib.quantized_matmul(x, q, s, group_size=64, mode="mxfp4"),
        "qmm_width": lambda: lib.quantized_matmul(x[:, :32], q, s, mode="mxfp4"),
        "qmm_int_x": lambda: lib.quantized_matmul(x.astype(lib.int32), q, s, mode="mxfp4"),
        "grad_scales": lambda: lib.grad(lambda v: lib.quantized_matmul(
            x, q, v, mode="mxfp4").sum())(s),
        "grad_scales_gather": lambda: lib.grad(lambda v: lib.gather_qmm(
            x[:, None], q[None], v[None], rhs_indices=lib.array([0, 0, 0]),
            mode="nvfp4" if False else "mxfp4").sum())(s),
        "grad_weights": lambda: lib.grad(lambda v: lib.quantized_matmul(
            x, v, s, mode="mxfp4").sum())(q),
    }
    try:
        lib.eval(cases[case]())
    except (ValueError, RuntimeError) as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", [
    "bits", "gs_bits", "odd_width", "int", "nv_rows", "global_mx", "global_f16", "global_shape",
    "deq_biases", "deq_scale_type", "deq_gs", "deq_shape", "deq_w", "deq_dtype", "deq_global",
    "qmm_scale_type", "qmm_biases", "qmm_gs", "qmm_width", "qmm_int_x", "grad_scales",
    "grad_scales_gather", "grad_weights"])
def test_fp_modes_errors_match_mlx(case):
    ref = _fp_error(M, case)
    assert ref is not None
    assert _fp_error(mx, case) == ref


@pytest.mark.parametrize("mode", ("nvfp4", "mxfp8"))
def test_qqmm_single_row(mode):
    """mx.qqmm (x quantized on the fly, w quantized): MLX's CPU build computes a single row
    of x; ours equals it (float32), and the same formula serves more rows and a dense w."""
    w = RNG.standard_normal((32, 64)).astype(np.float32)
    x = RNG.standard_normal((1, 64)).astype(np.float32)
    ours, ref = mx.quantize(_mine(w), mode=mode), M.quantize(_theirs(w), mode=mode)
    for xs in (x, x[0], x[None]):
        r, rr = mx.qqmm(_mine(xs), *ours, mode=mode), M.qqmm(_theirs(xs), *ref, mode=mode)
        assert r.shape == tuple(rr.shape) and r.dtype == mx.float32
        np.testing.assert_allclose(np.array(r), np.array(rr), rtol=1e-5, atol=1e-5)
    many = RNG.standard_normal((3, 64)).astype(np.float32)
    rows = np.concatenate([np.array(mx.qqmm(_mine(many[i:i + 1]), *ours, mode=mode))
                           for i in range(3)])
    np.testing.assert_allclose(np.array(mx.qqmm(_mine(many), *ours, mode=mode)), rows,
                               rtol=1e-6)
    np.testing.assert_array_equal(np.array(mx.qqmm(_mine(x), _mine(w), mode=mode)),
                                  np.array(mx.qqmm(_mine(x), *ours, mode=mode)))
    with pytest.raises(RuntimeError, match="QQMatmul::vjp"):
        mx.grad(lambda v: mx.qqmm(v, _mine(w), mode=mode).sum())(_mine(x))


def _qqmm_error(lib, case):
    w = lib.array(np.linspace(-2, 2, 32 * 64, dtype=np.float32).reshape(32, 64))
    x = lib.ones((1, 64))
    q, s = lib.quantize(w, mode="nvfp4")
    cases = {
        "no_scales": lambda: lib.qqmm(x, q, mode="nvfp4"),
        "gs": lambda: lib.qqmm(x, q, s, group_size=32, mode="nvfp4"),
        "width": lambda: lib.qqmm(x[:, :32], q, s, mode="nvfp4"),
        "int_x": lambda: lib.qqmm(x.astype(lib.int32), q, s, mode="nvfp4"),
        "w_3d": lambda: lib.qqmm(x, q[None], s[None], mode="nvfp4"),
        "one_global": lambda: lib.qqmm(x, q, s, mode="nvfp4", global_scale_x=lib.array(2.0)),
        "global_mx": lambda: lib.qqmm(x, *lib.quantize(w, mode="mxfp8"), mode="mxfp8",
                                      global_scale_x=lib.array(2.0),
                                      global_scale_w=lib.array(2.0)),
    }
    try:
        lib.eval(cases[case]())
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", ["no_scales", "gs", "width", "int_x", "w_3d", "one_global",
                                  "global_mx"])
def test_qqmm_errors_match_mlx(case):
    ref = _qqmm_error(M, case)
    assert ref is not None and _qqmm_error(mx, case) == ref


@pytest.mark.parametrize("bits,gs", [(2, 64), (4, 32), (4, 128), (8, 64)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_quantized_matvec_node_equals_the_composition(bits, gs, dtype):
    """The fused node a GPU stream uses for decode-sized products (its CPU implementation, and
    its derivative rule) gives quantized_matmul's composition's numbers."""
    from pycudamlx.core.array import make
    from pycudamlx.graph.primitives.quantize import QuantizedMatvec

    d = getattr(mx, dtype)
    w = mx.array(RNG.standard_normal((33, 256)).astype(np.float32)).astype(d)
    wq, scales, biases = mx.quantize(w, gs, bits)
    x = mx.array(RNG.standard_normal((3, 256)).astype(np.float32)).astype(d)

    def fused(x):
        return make(QuantizedMatvec(bits, gs), (x, wq, scales, biases), (3, 33), d,
                    mx.default_stream(mx.cpu))

    def composed(x):
        return mx.quantized_matmul(x, wq, scales, biases, group_size=gs, bits=bits)

    y, ref = fused(x), composed(x)
    assert y.dtype == ref.dtype == d
    np.testing.assert_allclose(_np(y), _np(ref), rtol=1e-5 if dtype == "float32" else 1e-2,
                               atol=1e-4 if dtype == "float32" else 1e-2)
    g = mx.grad(lambda x: fused(x).astype(mx.float32).sum())(x)
    gr = mx.grad(lambda x: composed(x).astype(mx.float32).sum())(x)
    np.testing.assert_array_equal(_np(g), _np(gr))


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dequantize_node_equals_the_composition(bits, dtype):
    """The prefill path's dequantization node (its CPU implementation and derivative rule):
    the composition's float32 values rounded once to the dtype; gradients wrt the scales."""
    from pycudamlx.core.array import make
    from pycudamlx.graph.primitives.quantize import DequantizeAffine

    d = getattr(mx, dtype)
    w = mx.array(RNG.standard_normal((2, 5, 128)).astype(np.float32)).astype(d)
    wq, scales, biases = mx.quantize(w, 32, bits)

    def fused(scales):
        return make(DequantizeAffine(bits, 32), (wq, scales, biases), (2, 5, 128), d,
                    mx.default_stream(mx.cpu))

    # float32 math throughout (mx.dequantize multiplies in the scales' dtype, as MLX's does)
    ref = mx.dequantize(wq, scales.astype(mx.float32), biases.astype(mx.float32), 32, bits,
                        dtype=mx.float32).astype(d)
    np.testing.assert_array_equal(_np(fused(scales)), _np(ref))
    g = mx.grad(lambda s: fused(s).astype(mx.float32).sum())(scales)
    gr = mx.grad(lambda s: mx.dequantize(wq, s, biases, 32, bits).astype(mx.float32).sum())(
        scales)
    np.testing.assert_allclose(_np(g), _np(gr), rtol=1e-2)


# ------------------------------------------------------------------------------------------------
# Scale/bias dtypes (found by MLX's own test_quantized.py::test_mode_error_cases)

_SB_DTYPES = ("int32", "bool_", "float16", "bfloat16", "float32")


def _sb_case(lib, what: str, sd: str, bd: str, out: str | None = None):
    """dequantize / quantized_matmul / gather_qmm with scales and biases cast to sd / bd:
    (dtype name, float32 values) or the ValueError's message."""
    w = lib.array(np.linspace(-1, 1, 16 * 64, dtype=np.float32).reshape(16, 64))
    q, s, b = lib.quantize(w, group_size=32, bits=4)
    s, b = s.astype(getattr(lib, sd)), b.astype(getattr(lib, bd))
    x = lib.array(np.linspace(-2, 2, 2 * 64, dtype=np.float32).reshape(2, 64))
    calls = {
        "dequantize": lambda: lib.dequantize(
            q, s, b, group_size=32, bits=4, dtype=None if out is None else getattr(lib, out)),
        "qmm": lambda: lib.quantized_matmul(x.astype(lib.float16), q, s, b, group_size=32,
                                            bits=4),
        "gather": lambda: lib.gather_qmm(x, q, s, b, rhs_indices=lib.array([0]),
                                         group_size=32, bits=4),
        # the dtype check comes before the shape checks
        "dequantize_bad_shape": lambda: lib.dequantize(q, s[:, :1], b[:, :1], group_size=32,
                                                       bits=4),
    }
    try:
        r = calls[what]()
        return str(r.dtype).split(".")[-1], np.array(r.astype(lib.float32))
    except ValueError as e:
        return str(e)


@pytest.mark.parametrize("what", ["dequantize", "qmm", "gather", "dequantize_bad_shape"])
@pytest.mark.parametrize("sd", _SB_DTYPES)
@pytest.mark.parametrize("bd", _SB_DTYPES)
def test_scale_bias_dtypes_match_mlx(what, sd, bd):
    """Scales and biases must promote to a floating type (MLX's ValueError otherwise); the
    result is that type (promoted with x for the matmuls); dequantize multiplies in the
    scales' dtype, then adds the biases in the promoted one, bit for bit as MLX."""
    ours, theirs = _sb_case(mx, what, sd, bd), _sb_case(M, what, sd, bd)
    if isinstance(theirs, str):
        assert ours == theirs
        return
    assert ours[0] == theirs[0]
    if "float" not in sd or "float" not in bd:
        return  # values of integer/bool scales: MLX's own are odd (bool biases read raw)
    exact = what == "dequantize"
    np.testing.assert_allclose(ours[1], theirs[1], rtol=0 if exact else 2e-3,
                               atol=0 if exact else 2e-2)


@pytest.mark.parametrize("sd,bd,out", [("float16", "float16", "float32"),
                                       ("float32", "float32", "float16"),
                                       ("float16", "float32", "bfloat16"),
                                       ("int32", "int32", "float32")])
def test_dequantize_dtype_argument_rounds_like_mlx(sd, bd, out):
    """``dtype=`` casts the result computed in the scales/biases types (MLX: float16 scales
    with dtype=float32 still multiply in float16)."""
    ours, theirs = _sb_case(mx, "dequantize", sd, bd, out), _sb_case(M, "dequantize", sd, bd,
                                                                     out)
    if isinstance(theirs, str):
        assert ours == theirs
        return
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1], theirs[1])


def _gather_error(lib, case: str):
    w = lib.array(np.linspace(-1, 1, 2 * 32 * 64, dtype=np.float32).reshape(2, 32, 64))
    q, s, b = lib.quantize(w, group_size=32, bits=4)
    idx = lib.array([1, 0])
    x = lib.ones((2, 1, 64))
    cases = {
        "w_int": lambda: lib.gather_qmm(x, q.astype(lib.int32), s, b, rhs_indices=idx),
        "no_bias": lambda: lib.gather_qmm(x, q, s, None, rhs_indices=idx),
        "width": lambda: lib.gather_qmm(lib.ones((2, 1, 60)), q, s, b, rhs_indices=idx,
                                        group_size=32),
        "gs": lambda: lib.gather_qmm(x, q, s, b, rhs_indices=idx, group_size=64),
        "x_1d": lambda: lib.gather_qmm(lib.ones((64,)), q, s, b, rhs_indices=idx,
                                       group_size=32),
        "x_1d_int_scales": lambda: lib.gather_qmm(lib.ones((64,)), q, s.astype(lib.int32),
                                                  b.astype(lib.int32), rhs_indices=idx,
                                                  group_size=32),
        "mode_no_indices": lambda: lib.gather_qmm(x, q, s, b, mode="xyz"),
        "width_no_indices": lambda: lib.gather_qmm(lib.ones((2, 1, 60)), q, s, b,
                                                   group_size=32),
    }
    try:
        lib.eval(cases[case]())
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", ["w_int", "no_bias", "width", "gs", "x_1d", "x_1d_int_scales",
                                  "mode_no_indices", "width_no_indices"])
def test_gather_qmm_errors_name_gather_qmm_with_indices(case):
    """With indices MLX's messages say [gather_qmm]; without any, gather_qmm is
    quantized_matmul (its messages)."""
    ref = _gather_error(M, case)
    assert ref is not None and _gather_error(mx, case) == ref


def test_gather_qmm_without_indices_takes_1d_x():
    w = np.linspace(-1, 1, 32 * 64, dtype=np.float32).reshape(32, 64)
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    ours = mx.gather_qmm(_mine(x), *mx.quantize(_mine(w), group_size=32), group_size=32)
    ref = M.gather_qmm(_theirs(x), *M.quantize(_theirs(w), group_size=32), group_size=32)
    assert ours.shape == tuple(ref.shape) == (32,)
    np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("per_expert", [True, False])
def test_gather_qmm_nvfp4_global_scale_per_expert(transpose, per_expert):
    """gather_qmm(global_scale=) (MLX: GPU only; ours on both devices): each gathered matrix
    dequantized with its own expert's scale; compared with MLX's own per-expert dequantize."""
    E, N, K = 3, 32, 64
    w = (RNG.standard_normal((E, N, K) if transpose else (E, K, N))
         * np.array([1.0, 4.0, 0.25])[:, None, None]).astype(np.float32)
    x = RNG.standard_normal((2, 3, K)).astype(np.float32)
    amax = np.abs(w).reshape(E, -1).max(1).astype(np.float32)
    g = amax if per_expert else np.full(E, amax.max(), np.float32)
    rhs = np.array([[2, 0], [1, 2]], np.uint32)
    lhs = np.array([[0, 1], [1, 0]], np.uint32)
    parts = [M.quantize(M.array(w[e]), mode="nvfp4", global_scale=M.array(g[e]))
             for e in range(E)]
    wq = np.stack([np.array(q) for q, _ in parts])
    sc = np.stack([np.array(sv) for _, sv in parts])
    ref_w = [np.array(M.dequantize(q, sv, mode="nvfp4", global_scale=M.array(g[e]),
                                   dtype=M.float32)) for e, (q, sv) in enumerate(parts)]
    expected = np.stack([np.stack([x[lhs[i, j]] @ (ref_w[rhs[i, j]].T if transpose
                                                   else ref_w[rhs[i, j]])
                                   for j in range(2)]) for i in range(2)])
    gs = mx.array(g) if per_expert else mx.array(g[:1])
    out = mx.gather_qmm(mx.array(x), mx.array(wq), mx.array(sc), lhs_indices=mx.array(lhs),
                        rhs_indices=mx.array(rhs), transpose=transpose, mode="nvfp4",
                        global_scale=gs)
    assert out.shape == expected.shape and out.dtype == mx.float32
    np.testing.assert_allclose(np.array(out), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["no_indices", "affine", "mxfp4"])
def test_gather_qmm_global_scale_errors_match_mlx(case):
    def run(lib):
        w = lib.array(np.linspace(-1, 1, 2 * 32 * 64, dtype=np.float32).reshape(2, 32, 64))
        g = lib.array(np.array([1.0, 2.0], np.float32))
        mode = {"no_indices": "nvfp4"}.get(case, case)
        q = lib.quantize(w, mode=mode)
        idx = None if case == "no_indices" else lib.array([1, 0])
        try:
            lib.eval(lib.gather_qmm(lib.ones((2, 1, 64)), *q, rhs_indices=idx, mode=mode,
                                    global_scale=g))
        except ValueError as e:
            return str(e)
    ref = run(M)
    assert ref is not None and run(mx) == ref


def test_gather_qmm_global_scale_shape_and_dtype_checked():
    w = mx.array(np.linspace(-1, 1, 3 * 32 * 64, dtype=np.float32).reshape(3, 32, 64))
    q, sc = mx.quantize(w, mode="nvfp4")
    for g, msg in ((mx.ones((2,)), "one value per matrix"),
                   (mx.ones((3,), dtype=mx.float16), "dtype float32")):
        with pytest.raises(ValueError, match=msg):
            mx.gather_qmm(mx.ones((1, 64)), q, sc, rhs_indices=mx.array([0]), mode="nvfp4",
                          global_scale=g)


# ------------------------------------------------------------------------------------------------
# gather_qqmm (MLX 0.32.4: GPU only, "[GatherQQMM] NYI" on its CPU build)

_GQQ_BATCHES = [((1,), (0,), (3,), (2, 1)), ((1,), None, (3,), (2, 1)), ((2,), None, (3,), (2, 1)),
                ((3,), (0, 2), (1,), (0,)), ((5,), (0, 2), (3,), (2, 1))]


@pytest.mark.parametrize("batch", range(len(_GQQ_BATCHES)))
@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
@pytest.mark.parametrize("m_rows", [1, 5])
def test_gather_qqmm_equals_gather_mm_of_mlx_dequantized(batch, mode, m_rows):
    """gather_qqmm == gather_mm(x quantized and dequantized, dequantized w transposed) with
    MLX's own quantize/dequantize/gather_mm as the oracle (nvfp4 with global scales)."""
    batch_a, lhs, batch_b, rhs = _GQQ_BATCHES[batch]
    K, N = 64, 48
    x = RNG.standard_normal((*batch_a, m_rows, K)).astype(np.float32)
    w = RNG.standard_normal((*batch_b, N, K)).astype(np.float32)
    gx = np.float32(np.abs(x).max()) if mode == "nvfp4" else None
    gw = np.float32(np.abs(w).max()) if mode == "nvfp4" else None
    tg = (lambda lib, g: None if g is None else lib.array(g))  # noqa: E731
    x_hat = M.dequantize(*M.quantize(M.array(x), mode=mode, global_scale=tg(M, gx)), mode=mode,
                         dtype=M.float32, global_scale=tg(M, gx))
    wq, sc = M.quantize(M.array(w), mode=mode, global_scale=tg(M, gw))
    w_hat = M.dequantize(wq, sc, mode=mode, dtype=M.float32, global_scale=tg(M, gw))
    li = None if lhs is None else np.array(lhs, np.uint32)
    ri = np.array(rhs, np.uint32)
    expected = np.array(M.gather_mm(x_hat, M.swapaxes(w_hat, -1, -2),
                                    None if li is None else M.array(li), M.array(ri)))
    out = mx.gather_qqmm(mx.array(x), mx.array(np.array(wq)), mx.array(np.array(sc)),
                         None if li is None else mx.array(li), mx.array(ri), mode=mode,
                         global_scale_x=tg(mx, gx), global_scale_w=tg(mx, gw))
    assert out.shape == expected.shape and out.dtype == mx.float32
    np.testing.assert_allclose(np.array(out), expected, rtol=1e-4, atol=1e-4)
    # w given unquantized: quantized on the fly (with its global scale) to the same result
    again = mx.gather_qqmm(mx.array(x), mx.array(w), None, None if li is None else mx.array(li),
                           mx.array(ri), mode=mode, global_scale_x=tg(mx, gx),
                           global_scale_w=tg(mx, gw))
    np.testing.assert_array_equal(np.array(again), np.array(out))


def _gqq_error(lib, case):
    x = lib.ones((2, 1, 64))
    w = lib.array(np.linspace(-1, 1, 3 * 32 * 64, dtype=np.float32).reshape(3, 32, 64))
    q, sc = lib.quantize(w, mode="nvfp4")
    li, ri = lib.array([0, 1]), lib.array([2, 0])
    cases = {
        "mode": lambda: lib.gather_qqmm(x, q, sc, li, ri, mode="xyz"),
        "affine": lambda: lib.gather_qqmm(x, q, sc, li, ri, mode="affine"),
        "width": lambda: lib.gather_qqmm(x[..., :32], q, sc, li, ri),
        "x_1d": lambda: lib.gather_qqmm(x[0, 0], q, sc, li, ri),
        "float_indices": lambda: lib.gather_qqmm(x, q, sc, li.astype(lib.float32), ri),
        "batches": lambda: lib.gather_qqmm(x, q, sc),
    }
    try:
        cases[case]()  # MLX's checks run when the graph is built
    except ValueError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", ["mode", "affine", "width", "x_1d", "float_indices", "batches"])
def test_gather_qqmm_errors_match_mlx(case):
    ref = _gqq_error(M, case)
    assert ref is not None and _gqq_error(mx, case) == ref


def test_gather_qqmm_errors_where_mlx_crashes_or_defers():
    x = mx.ones((2, 1, 64))
    q, sc = mx.quantize(mx.ones((3, 32, 64)), mode="nvfp4")
    idx = dict(lhs_indices=mx.array([0, 1]), rhs_indices=mx.array([2, 0]))
    with pytest.raises(ValueError, match="Scales must be provided"):  # MLX: segfault
        mx.gather_qqmm(x, q, None, **idx)
    with pytest.raises(ValueError, match="either both global_scale_x and global_scale_w"):
        mx.gather_qqmm(x, q, sc, global_scale_x=mx.array(1.0), **idx)
    with pytest.raises(ValueError, match="except float64"):
        mx.gather_qqmm(x.astype(mx.int32), q, sc, **idx)
    with pytest.raises(RuntimeError, match="not implemented"):
        mx.grad(lambda v: mx.gather_qqmm(v, q, sc, **idx).sum())(x)
