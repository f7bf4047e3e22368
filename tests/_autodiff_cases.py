"""Autodiff cases shared by tests/test_autodiff.py (CPU, against real MLX) and
tests/test_gpu_autodiff.py (GPU, against the CPU backend).

No MLX here: each function takes the array module as its first argument ``m`` (mlx.core or
pycudamlx.core) and the inputs are numpy arrays drawn once at import, so both libraries, or both
devices, differentiate the same function at the same point.
"""

from __future__ import annotations

import math

import numpy as np

_RNG = np.random.default_rng(0)


def _rand(*shape, lo=-2.0, hi=2.0):
    return _RNG.uniform(lo, hi, shape).astype(np.float32)


# (name, function of (module, *arrays) -> scalar, input arrays as numpy)
UNARY_POS = ["sqrt", "rsqrt", "log", "log2", "log10", "log1p"]
UNARY_ANY = ["exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arctan", "arcsinh",
             "erf", "sigmoid", "abs", "negative", "square", "sign", "floor", "ceil", "round"]
UNARY_UNIT = ["arcsin", "arccos", "arctanh", "erfinv"]

CASES = []
for _n in UNARY_ANY:
    CASES.append((_n, lambda m, x, n=_n: m.sum(getattr(m, n)(x) * m.arange(1, 8)), [_rand(7)]))
for _n in UNARY_POS:
    CASES.append((_n, lambda m, x, n=_n: m.sum(getattr(m, n)(x) * m.arange(1, 8)),
                  [_rand(7, lo=0.2, hi=3.0)]))
for _n in UNARY_UNIT:
    CASES.append((_n, lambda m, x, n=_n: m.sum(getattr(m, n)(x)), [_rand(7, lo=-0.8, hi=0.8)]))
CASES += [
    ("arccosh", lambda m, x: m.sum(m.arccosh(x)), [_rand(5, lo=1.2, hi=3)]),
    ("reciprocal", lambda m, x: m.sum(m.reciprocal(x)), [_rand(5, lo=0.5, hi=3)]),
    ("add_bcast", lambda m, a, b: m.sum((a + b) * m.arange(12).reshape(3, 4)),
     [_rand(3, 4), _rand(4)]),
    ("sub_bcast", lambda m, a, b: m.sum((a - b) ** 2), [_rand(3, 1), _rand(1, 4)]),
    ("mul_div", lambda m, a, b: m.sum(a * b / (b * b + 1)), [_rand(2, 3), _rand(3)]),
    ("divide", lambda m, a, b: m.sum(a / b), [_rand(4), _rand(4, lo=0.5, hi=2)]),
    ("power", lambda m, a, b: m.sum(m.power(a, b)), [_rand(4, lo=0.5, hi=2), _rand(4)]),
    ("power_scalar", lambda m, a: m.sum(a ** 3 + 2.0 ** a), [_rand(5)]),
    ("maximum", lambda m, a, b: m.sum(m.maximum(a, b) * 3), [_rand(6), _rand(6)]),
    ("minimum", lambda m, a, b: m.sum(m.minimum(a, b) * 3), [_rand(6), _rand(6)]),
    ("max_ties", lambda m, a: m.sum(m.maximum(a, 0.5) + m.minimum(a, 0.5)),
     [np.array([0.5, 1.0, 0.0, 0.5], np.float32)]),
    ("arctan2", lambda m, a, b: m.sum(m.arctan2(a, b)), [_rand(5), _rand(5)]),
    ("logaddexp", lambda m, a, b: m.sum(m.logaddexp(a, b)), [_rand(5), _rand(5)]),
    ("remainder", lambda m, a, b: m.sum(m.remainder(a, b)), [_rand(5, lo=1, hi=5),
                                                            _rand(5, lo=0.3, hi=0.9)]),
    ("where", lambda m, a, b: m.sum(m.where(a > 0, a * b, b)), [_rand(8), _rand(8)]),
    ("clip", lambda m, a: m.sum(m.clip(a, -0.5, 0.7) * m.arange(9)), [_rand(9)]),
    ("astype", lambda m, a: m.sum(a.astype(m.float16).astype(m.float32) * 2), [_rand(5)]),
    ("sum_axis", lambda m, a: m.sum(m.sum(a, axis=1) * m.arange(3)), [_rand(3, 4)]),
    ("sum_keep", lambda m, a: m.sum(m.sum(a, axis=(0, 2), keepdims=True) ** 2),
     [_rand(2, 3, 4)]),
    ("mean", lambda m, a: m.sum(m.mean(a, axis=0) ** 2), [_rand(3, 4)]),
    ("var", lambda m, a: m.sum(m.var(a, axis=-1)) + m.var(a, ddof=1), [_rand(3, 5)]),
    ("std", lambda m, a: m.sum(m.std(a, axis=0)) + m.std(a), [_rand(4, 3)]),
    ("max", lambda m, a: m.sum(m.max(a, axis=1) * m.arange(3)), [_rand(3, 5)]),
    ("min_all", lambda m, a: m.min(a), [_rand(3, 5)]),
    ("max_tie", lambda m, a: m.max(a * m.array([1.0, 3.0, 3.0])), [np.ones(3, np.float32)]),
    ("prod", lambda m, a: m.sum(m.prod(a, axis=1)), [_rand(3, 4)]),
    ("prod_zero", lambda m, a: m.prod(a), [np.array([0, 1, 2, 3], np.float32)]),
    ("prod_zeros", lambda m, a: m.prod(a), [np.array([0, 1, 2, 0, 3], np.float32)]),
    ("logsumexp", lambda m, a: m.sum(m.logsumexp(a, axis=-1) * m.arange(3)), [_rand(3, 4)]),
    ("softmax", lambda m, a: m.sum(m.softmax(a, axis=-1) * m.arange(4)), [_rand(3, 4)]),
    ("cumsum", lambda m, a: m.sum(m.cumsum(a, axis=1) * m.arange(4)), [_rand(2, 4)]),
    ("cumsum_rev_excl", lambda m, a: m.sum(m.cumsum(a, reverse=True, inclusive=False)
                                           * m.arange(5)), [_rand(5)]),
    ("cumprod", lambda m, a: m.sum(m.cumprod(a, axis=0) * m.arange(5)), [_rand(5)]),
    ("cumprod_zeros", lambda m, a: m.sum(m.cumprod(a)),
     [np.array([0.0, 1, 2, 0, 3], np.float32)]),
    ("cummax", lambda m, a: m.sum(m.cummax(a) * m.arange(5)),
     [np.array([1.0, 3, 2, 3, 5], np.float32)]),
    ("cummin_rev", lambda m, a: m.sum(m.cummin(a, reverse=True) * m.arange(5)), [_rand(5)]),
    ("cummax_exclusive", lambda m, a: m.sum(m.cummax(a, inclusive=False)[1:] * m.arange(1, 5)),
     [_rand(5)]),
    ("cummin_rev_exclusive_ties",
     lambda m, a: m.sum(m.cummin(a, reverse=True, inclusive=False)[:-1] * m.arange(1, 5)),
     [np.array([3.0, 1.0, 4.0, 1.0, 5.0], np.float32)]),
    ("cummax_exclusive_2d_axis1",
     lambda m, a: m.sum(m.cummax(a, axis=1, inclusive=False)[:, 1:] ** 2), [_rand(3, 4)]),
    ("cummin_exclusive_with_inf",
     lambda m, a: m.sum(m.cummin(a, inclusive=False)[1:]),
     [np.array([np.inf, 2.0, -1.0, np.inf, -1.0], np.float32)]),
    ("logcumsumexp", lambda m, a: m.sum(m.logcumsumexp(a) * m.arange(5)), [_rand(5)]),
    ("transpose", lambda m, a: m.sum(m.transpose(a, (2, 0, 1)) * m.arange(24).reshape(4, 2, 3)),
     [_rand(2, 3, 4)]),
    ("reshape", lambda m, a: m.sum(a.reshape(6, 2) * m.arange(12).reshape(6, 2)),
     [_rand(3, 4)]),
    ("slice", lambda m, a: m.sum(a[1:, ::2] * 3) + m.sum(a[::-1, 1] * m.arange(3)),
     [_rand(3, 5)]),
    ("int_index", lambda m, a: m.sum(a[1, :3] * a[:, 2]), [_rand(3, 4)]),
    ("broadcast_to", lambda m, a: m.sum(m.broadcast_to(a, (3, 4)) * m.arange(12).reshape(3, 4)),
     [_rand(1, 4)]),
    ("expand_squeeze", lambda m, a: m.sum(m.squeeze(m.expand_dims(a, 1), 1) * 2), [_rand(3)]),
    ("concatenate", lambda m, a, b: m.sum(m.concatenate([a, b, a], axis=1)
                                          * m.arange(10).reshape(2, 5)),
     [_rand(2, 2), _rand(2, 1)]),
    ("stack", lambda m, a, b: m.sum(m.stack([a, b]) * m.arange(6).reshape(2, 3)),
     [_rand(3), _rand(3)]),
    ("split", lambda m, a: m.sum(m.split(a, 3, axis=0)[1] * 2 + m.split(a, [1], axis=0)[0]),
     [_rand(6, 2)]),
    ("pad", lambda m, a: m.sum(m.pad(a, ((1, 2), (0, 1))) * m.arange(30).reshape(6, 5)),
     [_rand(3, 4)]),
    ("pad_edge", lambda m, a: m.sum(m.pad(a, (2, 1), mode="edge") * m.arange(8)), [_rand(5)]),
    ("take", lambda m, a: m.sum(m.take(a, m.array([0, 2, 2, -1]), axis=1) * 2), [_rand(3, 4)]),
    ("gather_getitem", lambda m, a: m.sum(a[m.array([1, 1, 0])] * m.arange(4)), [_rand(3, 4)]),
    ("gather_2d", lambda m, a: m.sum(a[m.array([0, 2]), m.array([1, 3])]), [_rand(3, 4)]),
    ("take_along_axis", lambda m, a: m.sum(m.take_along_axis(
        a, m.array([[0, 1], [2, 2], [3, 0]]), axis=1) * m.arange(6).reshape(3, 2)),
     [_rand(3, 4)]),
    ("put_along_axis", lambda m, a, v: m.sum(m.put_along_axis(
        a, m.array([[0], [2], [1]]), v, axis=1) * m.arange(12).reshape(3, 4)),
     [_rand(3, 4), _rand(3, 1)]),
    ("setitem", lambda m, a, v: _setitem(m, a, v), [_rand(4, 3), _rand(3)]),
    ("at_add", lambda m, a, v: m.sum(a.at[m.array([0, 0, 2])].add(v) * m.arange(4)),
     [_rand(4), _rand(3)]),
    ("at_maximum", lambda m, a, v: m.sum(a.at[m.array([0, 0, 2])].maximum(v) * m.arange(4)),
     [np.array([1.0, 2, 3, 4], np.float32), np.array([5.0, 1, 3], np.float32)]),
    ("at_minimum", lambda m, a, v: m.sum(a.at[m.array([1, 3])].minimum(v) * m.arange(4)),
     [_rand(4), _rand(2)]),
    ("at_set_slices", lambda m, a, v: m.sum(a.at[1:3].add(v) * m.arange(4)), [_rand(4), _rand(2)]),
    ("slice_update", lambda m, a, v: m.sum(m.slice_update(a, v, m.array([1]), axes=(0,))
                                           * m.arange(6)), [_rand(6), _rand(2)]),
    ("dynamic_slice", lambda m, a: m.sum(m.slice(a, m.array([1]), axes=(0,), slice_size=(2,))
                                         * m.array([1.0, 5.0])), [_rand(5)]),
    ("tril_triu", lambda m, a: m.sum(m.tril(a) * 2 + m.triu(a, 1)), [_rand(3, 3)]),
    ("trace", lambda m, a: m.trace(a) * 3, [_rand(3, 4)]),
    ("diagonal", lambda m, a: m.sum(m.diagonal(a) * m.arange(3)), [_rand(3, 3)]),
    ("diag", lambda m, a: m.sum(m.diag(a) * m.arange(9).reshape(3, 3)), [_rand(3)]),
    ("flip_roll", lambda m, a: m.sum(m.roll(a, 2) * m.arange(5)), [_rand(5)]),
    ("repeat_tile", lambda m, a: m.sum(m.tile(a, 2) * m.arange(6)) + m.sum(m.repeat(a, 2)),
     [_rand(3)]),
    ("as_strided", lambda m, a: m.sum(m.as_strided(a, (3, 3), (1, 1)) * m.arange(9).reshape(3, 3)),
     [_rand(5)]),
    ("moveaxis_swap", lambda m, a: m.sum(m.swapaxes(m.moveaxis(a, 0, 2), 0, 1) ** 2),
     [_rand(2, 3, 4)]),
    ("matmul", lambda m, a, b: m.sum((a @ b) * m.arange(6).reshape(2, 3)),
     [_rand(2, 4), _rand(4, 3)]),
    ("matmul_batch_bcast", lambda m, a, b: m.sum((a @ b) ** 2), [_rand(2, 3, 4), _rand(4, 2)]),
    ("linear_weight_shared_by_batch", lambda m, x, w: m.sum(m.sin(x @ w.T) * x[..., :1]),
     [_rand(3, 5, 4), _rand(6, 4)]),
    ("matmul_4d_batch_bcast", lambda m, a, b: m.sum((a @ b) ** 2), [_rand(2, 2, 3, 4), _rand(4, 5)]),
    ("addmm_batched_alpha", lambda m, a, b: m.sum(m.matmul(a, b) * 0.5 + m.matmul(a, b) ** 2),
     [_rand(2, 3, 4), _rand(4, 2)]),
    ("matvec", lambda m, a, b: m.sum((a @ b) ** 2), [_rand(3, 4), _rand(4)]),
    ("addmm", lambda m, c, a, b: m.sum(m.addmm(c, a, b, alpha=0.5, beta=2.0) ** 2),
     [_rand(3), _rand(2, 4), _rand(4, 3)]),
    ("einsum", lambda m, a, b: m.sum(m.einsum("ij,jk->ik", a, b) ** 2),
     [_rand(2, 3), _rand(3, 2)]),
    ("sort", lambda m, a: m.sum(m.sort(a) * m.arange(6)), [_rand(6)]),
    ("topk", lambda m, a: m.sum(m.topk(a, 2) * m.arange(2)), [_rand(6)]),
    ("median", lambda m, a: m.median(a) + m.sum(m.median(a, axis=0)), [_rand(3, 4)]),
    ("diff", lambda m, a: m.sum(m.diff(a, n=2) * m.arange(4)), [_rand(6)]),
    ("softmax_ce", lambda m, z: -m.mean(m.take_along_axis(
        z - m.logsumexp(z, axis=-1, keepdims=True), m.array([[1], [0], [3]]), axis=-1)),
     [_rand(3, 5)]),
    ("stop_gradient", lambda m, a: m.sum(m.stop_gradient(a * 2) * a), [_rand(4)]),
    ("rms_norm", lambda m, x, w: m.sum(m.fast.rms_norm(x, w, 1e-5) * m.arange(8)),
     [_rand(3, 8), _rand(8)]),
    ("layer_norm", lambda m, x, w, b: m.sum(m.fast.layer_norm(x, w, b, 1e-5) * m.arange(8)),
     [_rand(3, 8), _rand(8), _rand(8)]),
    ("layer_norm_nw", lambda m, x: m.sum(m.fast.layer_norm(x, None, None, 1e-5) ** 3),
     [_rand(2, 6)]),
    ("rope", lambda m, x: m.sum(m.fast.rope(x, 4, traditional=False, base=10000.0, scale=1.0,
                                            offset=3) * m.arange(6)), [_rand(1, 2, 3, 6)]),
    ("rope_trad", lambda m, x: m.sum(m.fast.rope(x, 6, traditional=True, base=100.0, scale=0.5,
                                                 offset=1) ** 2), [_rand(2, 1, 4, 6)]),
    ("sdpa", lambda m, q, k, v: m.sum(m.fast.scaled_dot_product_attention(
        q, k, v, scale=0.5, mask="causal") * m.arange(4)),
     [_rand(1, 2, 3, 4), _rand(1, 2, 5, 4), _rand(1, 2, 5, 4)]),
    ("sdpa_gqa_mask", lambda m, q, k, v: m.sum(m.fast.scaled_dot_product_attention(
        q, k, v, scale=0.3, mask=m.arange(5).reshape(1, 5) * 0.1) ** 2),
     [_rand(1, 4, 3, 4), _rand(1, 2, 5, 4), _rand(1, 2, 5, 4)]),
    ("conv1d", lambda m, x, w: m.sum(m.conv1d(x, w, padding=1) ** 2),
     [_rand(2, 7, 3), _rand(4, 3, 3)]),
    ("conv2d", lambda m, x, w: m.sum(m.conv2d(x, w, stride=2, padding=1) ** 2),
     [_rand(1, 6, 6, 2), _rand(3, 3, 3, 2)]),
    ("erf_gelu", lambda m, x: m.sum(x * (1 + m.erf(x / math.sqrt(2))) / 2), [_rand(6)]),
    ("silu_relu", lambda m, x: m.sum(x * m.sigmoid(x) + m.maximum(x, 0.0)), [_rand(6)]),
    ("eval_inside", lambda m, x: _eval_inside(m, x), [_rand(4)]),
    ("used_twice", lambda m, x: m.sum(x * x * x + m.exp(x) * x), [_rand(4)]),
]


def _setitem(m, a, v):
    b = a * 1
    b[1] = v
    b[2:, 1:] = 0
    return m.sum(b * m.arange(12).reshape(4, 3))


def _eval_inside(m, x):
    y = m.exp(x)
    m.eval(y)
    if (y.sum() > 0).item():
        y = y * 2
    return m.sum(y * x)


def mlp_loss(m, params, x, y):
    h = m.maximum(x @ params["l1"]["w"].T + params["l1"]["b"], 0)
    h = h * m.sigmoid(h)
    logits = h @ params["l2"]["w"].T + params["l2"]["b"]
    lse = m.logsumexp(logits, axis=-1)
    picked = m.take_along_axis(logits, y[:, None], axis=-1).squeeze(-1)
    return m.mean(lse - picked)


# grad of grad: (name, function of (module, x) -> scalar, [x])
GRAD_OF_GRAD = [
    ("poly", lambda m, x: m.sum(x ** 3 * m.sin(x)), [_rand(4)]),
    ("softmax", lambda m, x: m.sum(m.softmax(x) * m.arange(4)), [_rand(4)]),
    ("matmul_tanh", lambda m, x: m.sum(m.tanh(x @ x.T)), [_rand(2, 3)]),
    ("norm", lambda m, x: m.sum(m.sqrt(m.sum(x * x, axis=-1))), [_rand(3, 2)]),
    ("slices", lambda m, x: m.sum(m.concatenate([x[1:], x[:1]]) ** 2 * x), [_rand(4)]),
]


# Gradients through FFTs and complex arithmetic: function of (module, x) -> real scalar.
FFT_CASES = [
    ("fft_abs", lambda m, x: m.sum(m.abs(m.fft.fft(x)) * m.arange(6))),
    ("fft_real", lambda m, x: m.sum(m.fft.fft(x).real * m.arange(6))),
    ("ifft_imag", lambda m, x: m.sum(m.fft.ifft(x * 2).imag * m.arange(6))),
    ("rfft", lambda m, x: m.sum(m.abs(m.fft.rfft(x)) * m.arange(4))),
    ("rfft_ortho_n", lambda m, x: m.sum(m.abs(m.fft.rfft(x, n=8)) ** 2)),
    ("irfft", lambda m, x: m.sum(m.fft.irfft(m.fft.rfft(x * x)) * m.arange(6))),
    ("irfft_odd", lambda m, x: m.sum(m.fft.irfft(m.fft.rfft(x) * (1 + 2j), n=5) ** 2)),
    ("fft2", lambda m, x: m.sum(m.abs(m.fft.fft2(x.reshape(2, 3))))),
    ("complex_mul", lambda m, x: m.sum((x.astype(m.complex64) * (1 + 2j)).imag
                                       + m.abs(x.astype(m.complex64) * (2 - 1j)))),
]

COMPLEX_CASES = [
    ("square_real", lambda m, z: (z * z).real.sum()),
    ("exp", lambda m, z: m.exp(z).real.sum() + m.sin(z).imag.sum()),
    ("abs", lambda m, z: m.abs(z).sum()),
    ("divide", lambda m, z: (z / (2 + 1j)).real.sum() + (1 / z).imag.sum()),
    ("fft", lambda m, z: m.fft.fft(z).real.sum() + m.abs(m.fft.ifft(z * z)).sum()),
    ("matmul_conj", lambda m, z: m.abs(m.conj(z).reshape(2, 2) @ z.reshape(2, 2)).sum()),
    # MLX's power rule uses the unconjugated derivative (unlike multiply/divide/exp).
    ("power", lambda m, z: m.power(z, 2.0).real.sum() + m.power(1.5 + 0.5j, z).imag.sum()),
]


# mx.fast in float16/bfloat16: (name, function of (module, a, b, c), [shapes of a, b, c])
FAST_HALF = [
    ("rms_norm", lambda m, x, w, b: m.sum(m.fast.rms_norm(x, w, 1e-5).astype(m.float32)
                                          * m.arange(16)), [(4, 16), (16,), (16,)]),
    ("layer_norm", lambda m, x, w, b: m.sum(m.fast.layer_norm(x, w, b, 1e-5).astype(m.float32)
                                            * m.arange(16)), [(4, 16), (16,), (16,)]),
    ("sdpa", lambda m, q, k, v: m.sum(m.fast.scaled_dot_product_attention(
        q, k, v, scale=0.3, mask="causal").astype(m.float32) * m.arange(8)),
     [(1, 2, 5, 8), (1, 1, 7, 8), (1, 1, 7, 8)]),
    ("rope", lambda m, q, k, v: m.sum(m.fast.rope(q, 8, traditional=False, base=1e4, scale=1.0,
                                                  offset=2).astype(m.float32) * m.arange(8)),
     [(1, 2, 5, 8), (1,), (1,)]),
]


def transformer_loss(m, p, tokens, targets):
    """Embedding, pre-norm attention block (RoPE, causal SDPA), GELU MLP, tied-free head, CE."""
    x = p["emb"][tokens]                                         # (B, T, D)
    B, T, D = x.shape
    h = m.fast.layer_norm(x, p["ln1_w"], p["ln1_b"], 1e-5)
    qkv = h @ p["qkv"].T
    q, k, v = m.split(qkv, 3, axis=-1)
    q, k, v = (t.reshape(B, T, 2, D // 2).transpose(0, 2, 1, 3) for t in (q, k, v))
    q = m.fast.rope(q, D // 2, traditional=False, base=1e4, scale=1.0, offset=0)
    k = m.fast.rope(k, D // 2, traditional=False, base=1e4, scale=1.0, offset=0)
    o = m.fast.scaled_dot_product_attention(q, k, v, scale=(D // 2) ** -0.5, mask="causal")
    x = x + o.transpose(0, 2, 1, 3).reshape(B, T, D) @ p["out"].T
    h = m.fast.rms_norm(x, p["ln2_w"], 1e-5)
    u = h @ p["up"].T
    x = x + (0.5 * u * (1 + m.erf(u / math.sqrt(2)))) @ p["down"].T
    logits = x @ p["head"].T
    lse = m.logsumexp(logits, axis=-1)
    picked = m.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return m.mean(lse - picked)
