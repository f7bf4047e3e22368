"""vmap cases shared by tests/test_vmap.py (CPU, against real MLX) and tests/test_gpu_vmap.py
(GPU, against the CPU backend).

No MLX here: CASES functions take the array module as their first argument ``m`` (mlx.core or
pycudamlx.core); argument specs are (shape, dtype) pairs turned into data by ``_data``;
LOOP_CASES (where MLX 0.32.4 is wrong or refuses) are written against pycudamlx only, their
oracle being a Python loop over the batch.
"""

from __future__ import annotations

import numpy as np

import pycudamlx.core as mx

RNG = np.random.default_rng(2024)


def _data(shape, dtype="float32"):
    """numpy data for one (shape, dtype) spec, drawn from the shared RNG."""
    if isinstance(dtype, tuple):  # ("int32", n): indices in [0, n)
        return RNG.integers(0, dtype[1], size=shape).astype(dtype[0])
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype.startswith("int") or dtype.startswith("uint"):
        return RNG.integers(0, 7, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(np.float32)


def _mk(m, value, dtype):
    """``value`` as an array of module ``m`` in the spec's dtype."""
    if isinstance(dtype, tuple):
        dtype = dtype[0]
    a = m.array(value)
    return a.astype(getattr(m, dtype)) if dtype not in ("bool",) else a


F = "float32"
I4, I5 = ("int32", 4), ("int32", 5)

# (id, fn(m, *args), [(shape, dtype) ...], in_axes, out_axes, needs_loop)
CASES = [
    # elementwise and broadcasting
    ("unary", lambda m, a: m.exp(m.sin(a)) * 2 + 1, [((5, 3, 4), F)], 0, 0, False),
    ("binary_bcast", lambda m, a, b: a * b - b, [((3, 4), F), ((4,), F)], (0, None), 0, False),
    ("binary_bcast_rank", lambda m, a, b: a + b, [((4,), F), ((2, 3, 4), F)], (0, None), 0,
     False),
    ("binary_both", lambda m, a, b: m.maximum(a, b), [((3, 2, 5), F), ((5, 3), F)], (0, 1), 0,
     False),
    ("binary_low_rank_batched", lambda m, a, b: a + b, [((3,), F), ((2, 4), F)], (0, None), 0,
     False),
    ("where", lambda m, c, a, b: m.where(c, a, b), [((3, 4), "bool"), ((4,), F), ((3, 4), F)],
     (0, None, 0), 0, False),
    ("astype_int", lambda m, a: (a * 3).astype(m.int32) // 2, [((3, 5), F)], 0, 0, False),
    ("compare", lambda m, a, b: (a > b) & (a > 0), [((4, 3), F), ((4, 3), F)], 0, 0, False),
    ("scalar_ops", lambda m, a: 2.5 - a / 3, [((2, 3), "float16")], 0, 0, False),
    ("int_dtype", lambda m, a: a * 3 + 1, [((3, 2), "int32")], 0, 0, False),
    # reductions, scans, sorts, softmax
    ("sum_all", lambda m, a: m.sum(a), [((4, 3, 5), F)], 0, 0, False),
    ("sum_axis", lambda m, a: m.sum(a, axis=0), [((4, 3, 5), F)], 1, 0, False),
    ("mean_keep", lambda m, a: m.mean(a, axis=-1, keepdims=True), [((4, 3, 5), F)], 0, 0, False),
    ("var", lambda m, a: m.var(a, axis=(0, 1), ddof=1), [((2, 3, 4, 5), F)], 3, 0, False),
    ("max_min", lambda m, a: (m.max(a, axis=1), m.min(a)), [((3, 4, 5), F)], 0, 0, False),
    ("logsumexp", lambda m, a: m.logsumexp(a, axis=-1), [((3, 6), F)], 0, 0, False),
    ("argmax", lambda m, a: m.argmax(a, axis=1), [((3, 4, 5), F)], 0, 0, False),
    ("argmin_flat", lambda m, a: m.argmin(a), [((3, 4, 5), F)], 0, 0, False),
    ("argmax_keep", lambda m, a: m.argmax(a, keepdims=True), [((3, 4, 5), F)], 2, 0, False),
    ("cumsum", lambda m, a: m.cumsum(a, axis=0, reverse=True), [((3, 4), F)], 1, 0, False),
    ("cumprod_flat", lambda m, a: m.cumprod(a), [((3, 2, 2), F)], 0, 0, False),
    ("cummax", lambda m, a: m.cummax(a, axis=-1, inclusive=False), [((3, 5), F)], 0, 0, False),
    ("softmax", lambda m, a: m.softmax(a, axis=-1), [((3, 4, 6), F)], 0, 0, False),
    ("softmax_axes", lambda m, a: m.softmax(a, axis=(0, 1)), [((3, 4, 6), F)], 2, 0, False),
    ("sort", lambda m, a: m.sort(a, axis=0), [((5, 4, 3), F)], 0, 0, False),
    ("argsort", lambda m, a: m.argsort(a), [((5, 7), F)], 1, 0, False),
    ("topk", lambda m, a: m.topk(a, 2), [((4, 6), F)], 0, 0, False),
    ("partition_vs_sort", lambda m, a: m.sort(m.partition(a, 2, axis=-1), axis=-1),
     [((3, 4, 6), F)], 0, 0, False),
    ("diff", lambda m, a: m.diff(a, n=2, axis=0), [((3, 6), F)], 0, 0, False),
    # matmul
    ("matmul_both", lambda m, a, b: a @ b, [((4, 2, 3), F), ((4, 3, 5), F)], 0, 0, False),
    ("matmul_left", lambda m, a, b: a @ b, [((4, 2, 3), F), ((3, 5), F)], (0, None), 0, False),
    ("matmul_right", lambda m, a, b: a @ b, [((2, 3), F), ((3, 5, 4), F)], (None, 2), 0, False),
    ("matvec", lambda m, a, b: a @ b, [((3, 4), F), ((5, 4), F)], (None, 0), 0, False),
    ("vecmat_batched", lambda m, a, b: a @ b, [((5, 3), F), ((5, 3, 2), F)], 0, 0, False),
    ("matmul_batch_dims", lambda m, a, b: a @ b, [((2, 6, 3, 4), F), ((4, 2), F)], (1, None), 0,
     False),
    ("addmm", lambda m, c, a, b: m.addmm(c, a, b, alpha=0.5, beta=2.0),
     [((2,), F), ((3, 2, 4), F), ((4, 2), F)], (None, 0, None), 0, False),
    ("mlp", lambda m, x, w1, w2: m.softmax(m.maximum(x @ w1, 0) @ w2, axis=-1),
     [((6, 8), F), ((8, 16), F), ((16, 3), F)], (0, None, None), 0, False),
    # shapes and views
    ("reshape", lambda m, a: a.reshape(2, -1), [((3, 4, 3), F)], 0, 0, False),
    ("transpose", lambda m, a: a.T + 1, [((3, 4, 5), F)], 1, 0, False),
    ("swapaxes_slice", lambda m, a: m.swapaxes(a, 0, 1)[1:, ::2], [((3, 4, 5), F)], 0, 0,
     False),
    ("int_index", lambda m, a: a[1] * a[-1, 2], [((3, 4, 5), F)], 2, 0, False),
    ("expand_squeeze", lambda m, a: m.squeeze(m.expand_dims(a, (0, 2)), 0),
     [((3, 4), F)], 0, 0, False),
    ("flatten", lambda m, a: m.flatten(a), [((3, 2, 5), F)], 1, 0, False),
    ("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), [((5, 1, 4), F)], 0, 0, False),
    ("concatenate", lambda m, a, b: m.concatenate([a, b, a], axis=0),
     [((3, 2, 4), F), ((2, 4), F)], (0, None), 0, False),
    ("concat_last", lambda m, a, b: m.concatenate([a, b], axis=-1), [((3, 2, 4), F),
                                                                      ((3, 2, 1), F)], 0, 0,
     False),
    ("stack", lambda m, a, b: m.stack([a, b, a], axis=1), [((3, 4), F), ((3, 4), F)],
     (0, 0), 0, False),
    ("split", lambda m, a: m.split(a, [1, 3], axis=-1), [((3, 2, 5), F)], 0, 0, False),
    ("pad", lambda m, a: m.pad(a, ((1, 2), (0, 1))), [((3, 2, 5), F)], 0, 0, False),
    ("pad_edge", lambda m, a: m.pad(a, 2, mode="edge"), [((3, 4), F)], 0, 0, True),
    ("repeat_tile", lambda m, a: (m.repeat(a, 2, axis=0), m.tile(a, (2, 1))),
     [((3, 2, 3), F)], 0, 0, False),
    ("tril", lambda m, a: m.tril(a, -1) + m.triu(a, 1), [((3, 4, 4), F)], 0, 0, False),
    ("flip_roll", lambda m, a: m.roll(a[::-1], 2, axis=0), [((3, 5), F)], 0, 0, False),
    ("trace_diag", lambda m, a: (m.trace(a, 1), m.diagonal(a, -1)), [((3, 4, 5), F)], 0, 0,
     False),
    ("allclose", lambda m, a, b: m.allclose(a, b) & m.array_equal(a, a), [((4, 3), F),
                                                                          ((4, 3), F)], 0, 0,
     False),
    ("moveaxis", lambda m, a: m.moveaxis(a, 0, -1), [((2, 3, 4), F)], 1, 0, False),
    # indexing
    ("take_const_idx", lambda m, a: a[m.array([2, 0, 2])], [((3, 4, 2), F)], 0, 0, False),
    ("take_axis", lambda m, a: m.take(a, m.array([[1, 0], [0, 2]]), axis=1),
     [((3, 2, 3), F)], 0, 0, False),
    ("take_batched_idx", lambda m, a, i: m.take(a, i, axis=0), [((5, 3), F), ((4, 2), I5)],
     (None, 0), 0, False),
    ("take_both", lambda m, a, i: m.take(a, i, axis=1),
     [((4, 2, 5, 3), F), ((4, 2, 3), I5)], 0, 0, False),
    ("take_both_axis0", lambda m, a, i: a[i], [((4, 5, 3), F), ((4, 2), I5)], 0, 0, False),
    ("gather_2d", lambda m, a, i, j: a[i, j], [((3, 4, 5), F), ((3, 2), I4),
                                               ((2,), I5)], (0, 0, None), 0, False),
    ("gather_const_2d", lambda m, a: a[m.array([0, 3]), 1:, m.array([1, 0])],
     [((3, 4, 2, 2), F)], 0, 0, False),
    ("gather_src_unbatched", lambda m, a, i: a[i, 1], [((5, 4), F), ((3, 2), I5)],
     (None, 0), 0, False),
    ("take_along", lambda m, a, i: m.take_along_axis(a, i, axis=-1),
     [((3, 4, 5), F), ((4, 2), I5)], (0, None), 0, False),
    ("take_along_both", lambda m, a, i: m.take_along_axis(a, i, axis=0),
     [((3, 4, 5), F), ((3, 2, 5), I4)], 0, 0, False),
    ("put_along", lambda m, a, i: m.put_along_axis(a, i, m.array(7.0), axis=1),
     [((3, 4, 5), F), ((3, 4, 1), I4)], 0, 0, False),
    ("scatter_set", lambda m, a, v: a.at[m.array([0, 2])].add(v), [((3, 4, 2), F), ((2,), F)],
     (0, None), 0, True),
    ("scatter_add_shared", lambda m, a, v: a.at[m.array([0, 2, 0])].add(v),
     [((3, 4, 2), F), ((2,), F)], (0, None), 0, False),
    ("scatter_max_batched_v", lambda m, a, v: a.at[m.array([1, 3]), 0].maximum(v),
     [((3, 4, 2), F), ((3, 2), F)], 0, 0, False),
    ("scatter_batched_idx", lambda m, a, i, v: a.at[i].add(v),
     [((3, 5, 2), F), ((3, 4), I5), ((3, 4, 2), F)], 0, 0, False),
    ("scatter_idx_only", lambda m, a, i: a.at[i].multiply(2.0),
     [((5, 2), F), ((3, 4), I5)], (None, 0), 0, False),
    ("slice_update", lambda m, a, v: m.slice_update(a, v, m.array([1]), axes=(0,)),
     [((3, 4, 2), F), ((3, 2, 2), F)], 0, 0, False),
    ("dynamic_slice", lambda m, a: m.slice(a, m.array([1, 0]), (0, 1), (2, 2)),
     [((3, 4, 3), F)], 0, 0, False),
    # mx.fast
    ("rms_norm", lambda m, x, w: m.fast.rms_norm(x, w, 1e-5), [((3, 2, 8), F), ((8,), F)],
     (0, None), 0, False),
    ("layer_norm", lambda m, x, w, b: m.fast.layer_norm(x, w, b, 1e-5),
     [((3, 8), F), ((8,), F), ((8,), F)], (0, None, None), 0, False),
    ("rms_norm_batched_w", lambda m, x, w: m.fast.rms_norm(x, w, 1e-5),
     [((3, 8), F), ((3, 8), F)], 0, 0, True),
    ("sdpa", lambda m, q, k, v: m.fast.scaled_dot_product_attention(q, k, v, scale=0.5),
     [((2, 1, 2, 3, 4), F), ((2, 1, 2, 5, 4), F), ((2, 1, 2, 5, 4), F)], 0, 0, False),
    ("sdpa_mask_shared_kv", lambda m, q, k, v, mk: m.fast.scaled_dot_product_attention(
        q, k, v, scale=0.3, mask=mk), [((3, 2, 4, 3, 4), F), ((2, 2, 5, 4), F), ((2, 2, 5, 4), F),
                                       ((3, 3, 5), "bool")], (0, None, None, 0), 0, False),
    ("sdpa_causal_gqa", lambda m, q, k, v: m.fast.scaled_dot_product_attention(
        q, k, v, scale=0.5, mask="causal"), [((2, 1, 4, 3, 4), F), ((2, 1, 2, 5, 4), F),
                                             ((2, 1, 2, 5, 4), F)], 0, 0, False),
    # compositions
    ("conv1d", lambda m, x, w: m.conv1d(x, w, padding=1), [((3, 1, 7, 2), F), ((4, 3, 2), F)],
     (0, None), 0, False),
    ("conv2d_batched_w", lambda m, x, w: m.conv2d(x, w), [((2, 1, 5, 5, 2), F),
                                                          ((2, 3, 3, 3, 2), F)], 0, 0, True),
    ("fft", lambda m, a: m.abs(m.fft.rfft(a, axis=0)), [((3, 8, 2), F)], 0, 0, False),
    ("einsum", lambda m, a, b: m.einsum("ij,jk->ik", a, b), [((3, 2, 4), F), ((4, 5), F)],
     (0, None), 0, False),
    ("norm", lambda m, a: m.linalg.norm(a, axis=-1), [((3, 4, 5), F)], 0, 0, False),
    ("clip_isnan", lambda m, a: m.where(m.isnan(a), 0, m.clip(a, -0.5, 0.5)), [((4, 5), F)],
     0, 0, False),
    ("logical", lambda m, a, b: m.logical_and(a > 0, m.logical_not(b > 0)),
     [((4, 5), F), ((4, 5), F)], 0, 0, False),
    ("cumsum_bool", lambda m, a: m.cumsum(a > 0, axis=-1), [((4, 5), F)], 0, 0, False),
    ("erf_sigmoid", lambda m, a: m.erf(a) + m.sigmoid(a), [((4, 5), F)], 1, 0, False),
    ("inner_outer", lambda m, a, b: (m.inner(a, b), m.outer(a, b)), [((3, 4), F), ((3, 4), F)],
     0, 0, False),
    ("rope", lambda m, x: m.fast.rope(x, 4, traditional=False, base=10000.0, scale=1.0,
                                      offset=1), [((2, 1, 3, 4), F)], 0, 0, False),
    ("hadamard", lambda m, a: m.hadamard_transform(a), [((3, 2, 24), F)], 0, 0, False),
    # axes and trees
    ("in_neg", lambda m, a, b: a - b, [((3, 4), F), ((4, 3), F)], (-1, 0), 0, False),
    ("out_axis", lambda m, a: a * 2, [((3, 4, 5), F)], 0, 2, False),
    ("out_neg", lambda m, a: a * 2, [((3, 4, 5), F)], 1, -1, False),
    ("out_tuple", lambda m, a: (a, a.sum(0), m.ones((2,))), [((3, 4, 5), F)], 0, (1, 0, 1),
     False),
    ("out_none_const", lambda m, a: (a + 1, m.arange(3)), [((3, 4), F)], 0, (0, None), False),
    ("out_dict", lambda m, a: {"x": a, "y": [a.T, a[0]]}, [((3, 4, 2), F)], 0,
     {"x": 1, "y": [0, -1]}, False),
    ("identity", lambda m, a: a, [((3, 4), F)], 1, 0, False),
    ("const_output", lambda m, a: m.ones((2, 2)), [((3, 4), F)], 0, 1, False),
    ("size1", lambda m, a, b: a @ b + 1, [((1, 2, 3), F), ((3, 2), F)], (0, None), 0, False),
    ("odd_size", lambda m, a: m.softmax(a, axis=0), [((7, 5), F)], 1, 1, False),
    ("empty_batch", lambda m, a: m.sum(a * 2, axis=-1), [((0, 3), F)], 0, 0, False),
    ("bf16", lambda m, a: m.softmax(a.astype(m.bfloat16), axis=-1), [((3, 8), F)], 0, 0, False),
]

#: Cases computed in float16/bfloat16: compared with a looser tolerance.
LOW_PRECISION_IDS = ("bf16", "scalar_ops")


# MLX 0.32.4 gives wrong values (scatters into slices, setitem) or refuses these; the oracle is
# a Python loop over the batch of the unbatched function (itself tested against MLX elsewhere).
LOOP_CASES = [
    ("scatter_slice", lambda a, v: a.at[1:3].add(v), [((3, 4, 2), F), ((2,), F)], (0, None)),
    ("dynamic_slice_batched_start", lambda a, i: mx.slice(a, i, (0,), (2,)),
     [((3, 5), F), ((3, 1), I4)], 0),
    ("dynamic_slice_update_batched_start",
     lambda a, u, i: mx.slice_update(a, u, i, axes=(1,)), [((3, 2, 5), F), ((3, 2, 2), F),
                                                           ((3, 1), I4)], 0),
    ("dynamic_slice_update", lambda a, u, i: mx.slice_update(a, u, i, axes=(1,)),
     [((3, 2, 5), F), ((2, 2), F), ((1,), I4)], (0, None, None)),
    ("scatter_set_batched_idx", lambda a, i, v: _set(a, i, v),
     [((3, 5, 2), F), ((3, 2), I5), ((3, 2, 2), F)], 0),
    ("scatter_set_shared_idx", lambda a, v: _set(a, mx.array([4, 0]), v),
     [((3, 5, 2), F), ((3, 2, 2), F)], 0),
    ("searchsorted", lambda v: mx.searchsorted(mx.array([-1.0, 0.0, 0.5, 2.0]), v),
     [((3, 2, 4), F)], 0),
    ("searchsorted_batched_seq", lambda s, v: mx.searchsorted(mx.sort(s), v),
     [((3, 5), F), ((3, 4), F)], 0),
    # MLX: "[Primitive::vmap] Not implemented for GatherMM."
    ("gather_mm", lambda a, b, i: mx.gather_mm(a, b, None, i),
     [((3, 2, 4), F), ((5, 4, 3), F), ((3, 2), I5)], (0, None, 0)),
    ("qr", lambda a: mx.linalg.qr(a, stream=mx.cpu)[1], [((3, 4, 4), F)], 0),
    ("inv_cholesky", lambda a: mx.linalg.cholesky(mx.linalg.inv(
        a @ a.T + 4 * mx.eye(4), stream=mx.cpu), stream=mx.cpu), [((3, 4, 4), F)], 0),
    ("eigh_svd", lambda a: mx.linalg.eigvalsh(a + a.T, stream=mx.cpu)
     + mx.linalg.svd(a, compute_uv=False, stream=mx.cpu), [((3, 4, 4), F)], 0),
    ("multi_output_sibling_dropped", lambda a: mx.split(a, 3)[1] * 2, [((2, 6), F)], 0),
]


def _set(a, i, v):
    b = a * 1
    b[i] = v
    return b
