"""mx.vmap against real MLX 0.32.4: the same function, inputs and axes give the same values,
shapes and dtypes, and the same errors. Each case also runs with the batching rules switched
off (every node through the per-entry loop), so rule and fallback are checked against each
other, and the cases that should need no loop assert that none ran."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx.transforms import vmap_rules

mlx = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(2024)


def _data(shape, dtype="float32"):
    if isinstance(dtype, tuple):  # ("int32", n): indices in [0, n)
        return RNG.integers(0, dtype[1], size=shape).astype(dtype[0])
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype.startswith("int") or dtype.startswith("uint"):
        return RNG.integers(0, 7, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(np.float32)


def _mk(m, value, dtype):
    if isinstance(dtype, tuple):
        dtype = dtype[0]
    a = m.array(value)
    return a.astype(getattr(m, dtype)) if dtype not in ("bool",) else a


def _to_numpy(x):
    if x.dtype in (mx.bfloat16, mlx.bfloat16):
        x = x.astype(mx.float32 if isinstance(x, mx.array) else mlx.float32)
    return np.array(x)


def _compare(ours, ref, tol):
    if isinstance(ref, (list, tuple)):
        assert type(ours) is type(ref) and len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _compare(o, r, tol)
        return
    if isinstance(ref, dict):
        assert isinstance(ours, dict) and list(ours) == list(ref)
        for k in ref:
            _compare(ours[k], ref[k], tol)
        return
    assert isinstance(ours, mx.array), type(ours)
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert ours.dtype.name == str(ref.dtype).split(".")[-1]
    a, b = _to_numpy(ours), _to_numpy(ref)
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(a, b)


def _run(fn, specs, in_axes=0, out_axes=0, tol=1e-5):
    """fn(m, *args) under m.vmap in both libraries; specs: (shape, dtype) per argument."""
    values = [_data(s, d) for s, d in specs]
    ref = mlx.vmap(lambda *a: fn(mlx, *a), in_axes, out_axes)(*[_mk(mlx, v, d) for v, (_, d)
                                                               in zip(values, specs)])
    ours = mx.vmap(lambda *a: fn(mx, *a), in_axes, out_axes)(*[_mk(mx, v, d) for v, (_, d)
                                                             in zip(values, specs)])
    _compare(ours, ref, tol)
    return values, ref


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


LOW_PRECISION = {c[1] for c in CASES if c[0] in ("bf16", "scalar_ops")}


def _case_params(cases):
    return [pytest.param(*c[1:], id=c[0]) for c in cases]


@pytest.mark.parametrize("fn,specs,in_axes,out_axes,needs_loop", _case_params(CASES))
def test_against_mlx(fn, specs, in_axes, out_axes, needs_loop, monkeypatch):
    if not needs_loop:
        def no_loop(node, *args):
            raise AssertionError(f"looped over {type(node._prim).__name__}")

        monkeypatch.setattr(vmap_rules, "_loop", no_loop)
    _run(fn, specs, in_axes, out_axes, tol=3e-2 if fn in LOW_PRECISION else 1e-5)


@pytest.mark.parametrize("fn,specs,in_axes,out_axes,needs_loop", _case_params(CASES[::3]))
def test_fallback_loop_matches(fn, specs, in_axes, out_axes, needs_loop, monkeypatch):
    """With no batching rule at all, the per-entry loop gives MLX's results too."""
    monkeypatch.setattr(vmap_rules, "_RULES", {})
    _run(fn, specs, in_axes, out_axes, tol=3e-2)


# ----------------------------------------------------------------------------------------------
# Where MLX 0.32.4 is wrong or refuses: numpy is the oracle


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


@pytest.mark.parametrize("fn,specs,in_axes", [pytest.param(*c[1:], id=c[0]) for c in LOOP_CASES])
def test_equals_python_loop(fn, specs, in_axes):
    values = [mx.array(_data(s, d)) for s, d in specs]
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(values)
    size = next(v.shape[0] for v, ax in zip(values, axes) if ax is not None)
    expected = np.stack([np.array(fn(*[v[b] if ax is not None else v
                                       for v, ax in zip(values, axes)]))
                         for b in range(size)])
    got = mx.vmap(fn, in_axes=in_axes)(*values)
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5, atol=1e-5)


def test_setitem_inside_vmap():
    """MLX 0.32.4 updates only the first entry of ``b[1] = v`` under vmap; every entry is
    updated here, as a loop over the batch would."""
    x = _data((3, 4))

    def fn(a):
        b = a * 1
        b[1] = 5.0
        return b

    expected = x.copy()
    expected[:, 1] = 5.0
    np.testing.assert_array_equal(np.array(mx.vmap(fn)(mx.array(x))), expected)


def test_divmod():
    """MLX 0.32.4 returns a garbage output axis for divmod under vmap; here both outputs are
    batched as numpy computes them."""
    a = RNG.integers(-9, 9, size=(3, 4)).astype(np.int32)
    b = RNG.integers(1, 5, size=(4,)).astype(np.int32)
    q, r = mx.vmap(lambda u, v: mx.divmod(u, v), in_axes=(0, None))(mx.array(a), mx.array(b))
    np.testing.assert_array_equal(np.array(q), a // b)
    np.testing.assert_array_equal(np.array(r), a % b)


def test_primitives_mlx_cannot_vmap():
    """MLX raises "[Primitive::vmap] Not implemented for AsStrided"; here the primitive runs per
    batch entry on that entry's row-major data."""
    x = _data((4, 6))
    out = mx.vmap(lambda a: mx.as_strided(a, (3, 2), (1, 2)))(mx.array(x))
    expected = np.stack([np.lib.stride_tricks.as_strided(r, (3, 2), (4, 8)) for r in x])
    np.testing.assert_array_equal(np.array(out), expected)


# ----------------------------------------------------------------------------------------------
# Trees of arguments


def test_single_dict_argument():
    x = _data((2, 3))
    for m in (mx, mlx):
        out = m.vmap(lambda d: d["a"] * d["b"], in_axes={"a": 1, "b": None})(
            {"a": m.array(x), "b": m.array(x[:, 0])})
        assert tuple(out.shape) == (3, 2)
    _compare(
        mx.vmap(lambda d: d["a"] * d["b"], in_axes={"a": 1, "b": None})(
            {"a": mx.array(x), "b": mx.array(x[:, 0])}),
        mlx.vmap(lambda d: d["a"] * d["b"], in_axes={"a": 1, "b": None})(
            {"a": mlx.array(x), "b": mlx.array(x[:, 0])}), 1e-6)


@pytest.mark.parametrize("in_axes", [(0, 1), ((0, None), 1), [0, 1]], ids=str)
def test_list_and_tuple_arguments(in_axes):
    x, y = _data((3, 4)), _data((4, 3))

    def call(m):
        f = m.vmap(lambda pair, z: pair[0] + pair[1] * z, in_axes=in_axes)
        return f([m.array(x), m.array(x)], m.array(y))

    outs = []
    for m in (mx, mlx):
        try:
            outs.append(call(m))
        except Exception as e:  # noqa: BLE001 - compared below
            outs.append(e)
    ours, ref = outs
    if isinstance(ref, Exception):
        assert type(ours) is type(ref) and str(ours) == str(ref)
    else:
        _compare(ours, ref, 1e-6)


def test_nested_vmap():
    a, b = _data((5, 3, 4)), _data((2, 3))
    f = lambda m: m.vmap(m.vmap(lambda x, y: x @ y, in_axes=(None, 0)),  # noqa: E731
                         in_axes=(0, None))
    _compare(f(mx)(mx.array(b), mx.array(a)), f(mlx)(mlx.array(b), mlx.array(a)), 1e-5)
    g = lambda m: m.vmap(lambda x: m.vmap(lambda y: m.sum(y * x))(m.ones((4, 2))))  # noqa: E731
    _compare(g(mx)(mx.array(a[:, :, :2])), g(mlx)(mlx.array(a[:, :, :2])), 1e-5)
    h = lambda m: m.vmap(m.vmap(lambda x: m.softmax(x, axis=0), in_axes=1, out_axes=1),  # noqa
                         in_axes=2, out_axes=0)
    _compare(h(mx)(mx.array(a)), h(mlx)(mlx.array(a)), 1e-5)


def test_closure_constant_and_evaluated_constant():
    w = _data((4, 3))
    x = _data((5, 4))

    def fn(m, wa):
        def inner(v):
            scale = (wa * 2).sum().item()  # evaluating a constant inside is allowed
            return (v @ wa) * scale
        return inner

    ours = mx.vmap(fn(mx, mx.array(w)))(mx.array(x))
    ref = mlx.vmap(fn(mlx, mlx.array(w)))(mlx.array(x))
    _compare(ours, ref, 1e-4)


def test_random_keys_and_global_key():
    keys_ref = mlx.random.split(mlx.random.key(3), 4)
    keys = mx.array(np.array(keys_ref))
    ours = mx.vmap(lambda k: mx.random.uniform(shape=(3,), key=k))(keys)
    ref = mlx.vmap(lambda k: mlx.random.uniform(shape=(3,), key=k))(keys_ref)
    _compare(ours, ref, 1e-7)
    ours = mx.vmap(lambda k: mx.random.normal(shape=(2, 2), key=k))(keys)
    ref = mlx.vmap(lambda k: mlx.random.normal(shape=(2, 2), key=k))(keys_ref)
    _compare(ours, ref, 1e-6)
    # Without a key every entry shares the numbers drawn while tracing (one draw).
    mx.random.seed(1)
    mlx.random.seed(1)
    ours = mx.vmap(lambda v: v + mx.random.uniform(shape=(3,)))(mx.zeros((2, 3)))
    ref = mlx.vmap(lambda v: v + mlx.random.uniform(shape=(3,)))(mlx.zeros((2, 3)))
    _compare(ours, ref, 1e-7)


def test_wrapper_keeps_name_and_reuses():
    def my_fun(a):
        return a + 1

    f = mx.vmap(my_fun)
    assert f.__name__ == "my_fun"
    for n in (1, 4):
        assert f(mx.zeros((n, 2))).shape == (n, 2)


# ----------------------------------------------------------------------------------------------
# Errors: same class and message as MLX


def _error(m, make_call):
    try:
        make_call(m)
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        return e
    return None


X = _data((2, 3))

ERRORS = {
    "item": lambda m: m.vmap(lambda a: a.sum().item())(m.array(X)),
    "print": lambda m: m.vmap(lambda a: repr(a) and a)(m.array(X)),
    "eval": lambda m: m.vmap(lambda a: (m.eval(a * 2), a)[1])(m.array(X)),
    "numpy": lambda m: m.vmap(lambda a: np.array(a))(m.array(X)),
    "scalar_out": lambda m: m.vmap(lambda a: 1.0)(m.array(X)),
    "none_out": lambda m: m.vmap(lambda a: (a, None))(m.array(X)),
    "in_axes_none": lambda m: m.vmap(lambda a: a, in_axes=None),
    "out_axes_none": lambda m: m.vmap(lambda a: a, out_axes=None),
    "not_callable": lambda m: m.vmap(3),
    "in_axis_range": lambda m: m.vmap(lambda a: a, in_axes=2)(m.array(X)),
    "in_axis_neg_range": lambda m: m.vmap(lambda a: a, in_axes=-3)(m.array(X)),
    "out_axis_range": lambda m: m.vmap(lambda a: a, out_axes=2)(m.array(X)),
    "out_axis_neg_range": lambda m: m.vmap(lambda a: a, out_axes=-3)(m.array(X)),
    "out_axis_const": lambda m: m.vmap(lambda a: m.ones(2), out_axes=2)(m.array(X)),
    "sizes": lambda m: m.vmap(lambda a, b: a + b)(m.array(X), m.ones((3, 3))),
    "sizes3": lambda m: m.vmap(lambda a, b, c: a)(m.ones((2,)), m.ones((3,)), m.ones((3,))),
    "in_tuple_len": lambda m: m.vmap(lambda a, b: a + b, in_axes=(0,))(m.array(X), m.array(X)),
    "in_list_for_tuple": lambda m: m.vmap(lambda a, b: a, in_axes=[0, 1])(m.array(X),
                                                                           m.array(X)),
    "kwargs": lambda m: m.vmap(lambda a, b: a + b)(m.array(X), b=m.array(X)),
    "arg_scalar": lambda m: m.vmap(lambda a, b: a + b)(m.array(X), 1.0),
    "arg_none": lambda m: m.vmap(lambda a, b: a)(m.array(X), None),
    "zero_dim": lambda m: m.vmap(lambda a: a)(m.array(1.0)),
    "no_args": lambda m: m.vmap(lambda: m.ones(2))(),
    "all_none": lambda m: m.vmap(lambda a: a, in_axes=(None,))(m.array(X)),
    "axis_str": lambda m: m.vmap(lambda a: a, in_axes="a")(m.array(X)),
    "axis_float": lambda m: m.vmap(lambda a: a, in_axes=0.0)(m.array(X)),
    "axis_np_int": lambda m: m.vmap(lambda a: a, in_axes=np.int64(0))(m.array(X)),
    "axis_big": lambda m: m.vmap(lambda a: a, in_axes=2**40)(m.array(X)),
    "nested_tuple_axis": lambda m: m.vmap(lambda a, b: a, in_axes=((0,), 0))(m.array(X),
                                                                              m.array(X)),
    "list_axis_leaf": lambda m: m.vmap(lambda a: a, in_axes=[0])(m.array(X)),
    "dict_missing_key": lambda m: m.vmap(lambda d: d["a"], in_axes={"b": 0})({"a": m.array(X)}),
    "dict_extra_key": lambda m: m.vmap(lambda d: d["a"], in_axes={"a": 0, "b": 0})(
        {"a": m.array(X)}),
    "dict_in_tuple_for_single": lambda m: m.vmap(lambda d: d["a"], in_axes=({"a": 0},))(
        {"a": m.array(X)}),
    "out_tuple_len": lambda m: m.vmap(lambda a: (a, a, a), out_axes=(0, 1))(m.array(X)),
    "out_list_for_tuple": lambda m: m.vmap(lambda a: (a, a), out_axes=[0, 1])(m.array(X)),
    "out_none_batched": lambda m: m.vmap(lambda a: (a, a), out_axes=(0, None))(m.array(X)),
    "out_list_leaf": lambda m: m.vmap(lambda a: a, out_axes=[0])(m.array(X)),
    "fun_raises": lambda m: m.vmap(lambda a: a.reshape(7))(m.array(X)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_mlx(name):
    ref = _error(mlx, ERRORS[name])
    ours = _error(mx, ERRORS[name])
    assert ref is not None, "MLX accepted it"
    assert type(ours) is type(ref), (ours, ref)
    if str(ref) == "std::bad_cast":  # pycudamlx adds what did not fit
        assert str(ours).startswith("std::bad_cast")
    else:
        assert str(ours) == str(ref)


def test_accepted_axis_forms_match_mlx():
    """Forms MLX accepts although they look odd: bool axes, (axis,) at an array leaf."""
    forms = [
        (lambda m: m.vmap(lambda a: a, in_axes=True)(m.array(X))),
        (lambda m: m.vmap(lambda a: a, in_axes=(1,))(m.array(X))),
        (lambda m: m.vmap(lambda a: a * 2, out_axes=(1,))(m.array(X))),
        (lambda m: m.vmap(lambda a: m.ones(3), out_axes=(None,))(m.array(X))),
        (lambda m: m.vmap(lambda a, b: a + b, in_axes=(0, None))(m.array(X), m.ones(3))),
        (lambda m: m.vmap(lambda a: m.ones(2), out_axes=-1)(m.array(X))),
    ]
    for form in forms:
        _compare(form(mx), form(mlx), 1e-6)
