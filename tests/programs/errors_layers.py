"""Mistakes with layers and losses fed the wrong shapes or dtypes, bad random keys, indexing
with the wrong types, and MLX's messages for them."""
# compare: text
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_unflatten


def check(label, fn):
    try:
        out = fn()
        if isinstance(out, mx.array):
            mx.eval(out)
        print(f"{label}: ok")
    except Exception as e:  # noqa: BLE001 - the point is to print what MLX raises
        print(f"{label}: {type(e).__name__}: {e}")


a = mx.ones((2, 3))
v = mx.arange(6)
mx.random.seed(1)

CASES = {
    "index_list": lambda: v[[0, 1]],
    "index_slice_array": lambda: v[mx.array(1):3],
    "index_str": lambda: v["a"],
    "index_two_ellipsis": lambda: a[..., ...],
    "index_bool_mask": lambda: v[v > 2],
    "index_0d": lambda: mx.array(1.0)[0],
    "at_add_shape": lambda: v.at[mx.array([0, 1])].add(mx.ones((3,))),
    "at_bad": lambda: v.at[0].foo(1),
    "gather_mm_shape": lambda: mx.gather_mm(mx.ones((2, 3)), mx.ones((4, 5))),
    "block_masked": lambda: mx.block_masked_mm(mx.ones((4, 4)), mx.ones((4, 4)), block_size=3),
    "sdpa_dims": lambda: mx.fast.scaled_dot_product_attention(mx.ones((2, 3)), mx.ones((2, 3)), mx.ones((2, 3)), scale=1.0),
    "sdpa_heads": lambda: mx.fast.scaled_dot_product_attention(mx.ones((1, 3, 4, 8)), mx.ones((1, 2, 4, 8)), mx.ones((1, 2, 4, 8)), scale=1.0),
    "rms_norm_w": lambda: mx.fast.rms_norm(mx.ones((2, 4)), mx.ones((3,)), 1e-5),
    "layer_norm_w": lambda: mx.fast.layer_norm(mx.ones((2, 4)), mx.ones((3,)), None, 1e-5),
    "rope_dims": lambda: mx.fast.rope(mx.ones((2, 4)), 6, traditional=False, base=10000.0, scale=1.0, offset=0),
    "rope_odd": lambda: mx.fast.rope(mx.ones((1, 2, 4)), 3, traditional=False, base=10000.0, scale=1.0, offset=0),
    "softmax_int": lambda: mx.softmax(v),
    "sigmoid_int": lambda: mx.sigmoid(v),
    "erf_int": lambda: mx.erf(v),
    "divmod_complex": lambda: mx.divmod(mx.array([1j]), mx.array([1j])),
    "remainder_complex": lambda: mx.remainder(mx.array([1j]), 2),
    "maximum_complex": lambda: mx.maximum(mx.array([1j]), 2),
    "round_decimals": lambda: mx.round(a, 1.5),
    "random_key_float": lambda: mx.random.normal((2,), key=mx.array([1.0, 2.0])),
    "random_key_shape": lambda: mx.random.uniform(shape=(2,), key=mx.array([[1, 2]], dtype=mx.uint32)),
    "random_seed_neg": lambda: mx.random.seed(-1),
    "random_seed_float": lambda: mx.random.seed(1.5),
    "randint_bounds": lambda: mx.random.randint(mx.zeros((2,)), mx.ones((3,)) * 5, (2,)),
    "truncated_shape": lambda: mx.random.truncated_normal(mx.zeros((2,)), mx.ones((3,))),
    "gumbel_dtype": lambda: mx.random.gumbel((2,), dtype=mx.int32),
    "laplace_dtype": lambda: mx.random.laplace((2,), dtype=mx.int32),
    "bernoulli_p_int": lambda: mx.random.bernoulli(mx.array([1, 0])),
    "key_neg": lambda: mx.random.key(-1),
    "nn_dropout_p": lambda: nn.Dropout(p=1.5),
    "nn_dropout2d_dims": lambda: nn.Dropout2d(0.5)(mx.ones((3,))),
    "nn_groupnorm": lambda: nn.GroupNorm(3, 4)(mx.ones((1, 2, 2, 4))),
    "nn_instancenorm": lambda: nn.InstanceNorm(3)(mx.ones((1, 2, 4))),
    "nn_rnn_dims": lambda: nn.RNN(3, 4)(mx.ones((3,))),
    "nn_lstm_width": lambda: nn.LSTM(3, 4)(mx.ones((2, 5, 2))),
    "nn_gru_width": lambda: nn.GRU(3, 4)(mx.ones((2, 5, 2))),
    "nn_upsample_mode": lambda: nn.Upsample(2.0, mode="cubicx"),
    "nn_upsample_dims": lambda: nn.Upsample(2.0)(mx.ones((4, 4))),
    "nn_avgpool_kernel": lambda: nn.AvgPool2d(5)(mx.ones((1, 3, 3, 2))),
    "nn_conv_transpose": lambda: nn.ConvTranspose2d(3, 4, 3)(mx.ones((1, 5, 5, 2))),
    "nn_transformer_dims": lambda: nn.TransformerEncoder(1, 8, 3),
    "nn_quantize_small": lambda: nn.QuantizedLinear(40, 8),
    "nn_quantize_model": lambda: nn.quantize(nn.Sequential(nn.Linear(40, 8)), group_size=64),
    "nn_alibi": lambda: nn.ALiBi()(mx.ones((2, 3)), mx.ones((2, 3))),
    "nn_embedding_as_linear": lambda: nn.Embedding(10, 4).as_linear(mx.ones((2, 3))),
    "nn_sequential_item": lambda: nn.Sequential(nn.Linear(2, 2)).layers[3],
    "losses_nll_shape": lambda: nn.losses.nll_loss(mx.ones((4, 3)), mx.zeros((3,), mx.int32)),
    "losses_smooth_l1": lambda: nn.losses.smooth_l1_loss(mx.ones((3,)), mx.ones((2,))),
    "losses_huber": lambda: nn.losses.huber_loss(mx.ones((3,)), mx.ones((2,))),
    "losses_hinge": lambda: nn.losses.hinge_loss(mx.ones((3,)), mx.ones((2,))),
    "losses_cosine": lambda: nn.losses.cosine_similarity_loss(mx.ones((3, 2)), mx.ones((2, 2))),
    "losses_triplet": lambda: nn.losses.triplet_loss(mx.ones((3, 2)), mx.ones((2, 2)), mx.ones((3, 2))),
    "losses_margin": lambda: nn.losses.margin_ranking_loss(mx.ones((3,)), mx.ones((2,)), mx.ones((3,))),
    "losses_gaussian": lambda: nn.losses.gaussian_nll_loss(mx.ones((3,)), mx.ones((2,)), mx.ones((3,))),
    "losses_ce_smoothing": lambda: nn.losses.cross_entropy(mx.ones((3, 2)), mx.zeros((3,), mx.int32), label_smoothing=1.5),
    "losses_ce_probs": lambda: nn.losses.cross_entropy(mx.ones((3, 2)), mx.ones((3, 3))),
    "losses_bce_reduction": lambda: nn.losses.binary_cross_entropy(mx.ones((3,)), mx.ones((3,)), reduction="x"),
    "init_uniform_bad": lambda: nn.init.he_uniform()(mx.ones((3,))),
    "init_glorot_1d": lambda: nn.init.glorot_normal()(mx.ones((3,))),
    "init_he_mode": lambda: nn.init.he_normal()(mx.ones((3, 3)), mode="x"),
    "opt_adam_betas": lambda: optim.Adam(0.1, betas=[0.9]).init({"w": mx.ones(2)}),
    "opt_multi": lambda: optim.MultiOptimizer([optim.SGD(0.1), optim.SGD(0.1)], [lambda n, p: True]),
    "opt_cosine": lambda: optim.cosine_decay(0.1, -1)(mx.array(2)),
    "opt_step_decay": lambda: optim.step_decay(0.1, 0.5, 0),
    "tree_flatten_prefix": lambda: tree_flatten({"a": 1}, prefix="x", is_leaf=3),
    "tree_unflatten_empty": lambda: tree_unflatten([]),
    "tree_map_none": lambda: tree_map(lambda a: a, None),
    "stream_bad": lambda: mx.new_stream("gpu"),
    "default_device_bad": lambda: mx.set_default_device("cpu"),
    "compile_bad_arg": lambda: mx.compile(lambda a: a)("x"),
    "compile_kw": lambda: mx.compile(lambda a: a * 2)(a=mx.ones(2)),
    "eval_bad": lambda: mx.eval("x"),
    "async_eval_bad": lambda: mx.async_eval(3),
    "checkpoint_bad": lambda: mx.checkpoint(3),
    "custom_fn_bad": lambda: mx.custom_function(3),
    "stop_gradient_list": lambda: mx.stop_gradient([1.0]),
    "vmap_dict": lambda: mx.vmap(lambda d: d["x"] * 2)({"x": mx.ones((3, 2))}),
    "vmap_kwargs": lambda: mx.vmap(lambda a: a * 2)(a=mx.ones((3,))),
    "grad_kwargs": lambda: mx.grad(lambda a: a.sum())(a=mx.ones((3,))),
}

for name, fn in CASES.items():
    check(name, fn)
