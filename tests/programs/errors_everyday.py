"""More everyday slips (array construction, indexing, shapes, reshapes, broadcasting,
attention masks, value_and_grad with an auxiliary output, missing names) and what MLX says."""
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
k = mx.random.key(0)

def tup_loss(m, x):
    y = m(x)
    return y.sum(), y

CASES = {
    "vag_tuple_loss": lambda: nn.value_and_grad(nn.Linear(3, 2), tup_loss)(nn.Linear(3, 2), a),
    "vag_model_not_module": lambda: nn.value_and_grad(3, lambda m: 0)(3),
    "split_key_num0": lambda: mx.random.split(k, 0),
    "split_key_neg": lambda: mx.random.split(k, -1),
    "randint_shape_none": lambda: mx.random.randint(0, 5),
    "categorical_axis": lambda: mx.random.categorical(a, axis=3),
    "random_missing_name": lambda: mx.random.choice(v, 3),
    "reshape_list": lambda: a.reshape([3, 2]),
    "reshape_tuple_neg2": lambda: a.reshape(-2, 3),
    "transpose_list": lambda: a.transpose([1, 0]),
    "sum_axis_list": lambda: a.sum(axis=[0, 1]),
    "where_nonbool": lambda: mx.where(v, 1, 0),
    "where_str": lambda: mx.where(v > 2, "a", 0),
    "array_none": lambda: mx.array(None),
    "array_dict": lambda: mx.array({"a": 1}),
    "array_mixed": lambda: mx.array([1, "a"]),
    "array_nested_array": lambda: mx.array([mx.ones(2), mx.ones(3)]),
    "array_list_of_arrays": lambda: mx.array([mx.ones(2), mx.ones(2)]),
    "slice_index_float": lambda: v[1.0:3],
    "slice_array_bound": lambda: v[: mx.array(2)],
    "index_tuple_list": lambda: a[[0, 1], 0],
    "index_none_too_many": lambda: a[None, 0, 0, 0],
    "index_ellipsis_too_many": lambda: a[..., 0, 0, 0],
    "index_bool_py": lambda: v[True],
    "setitem_float_idx": lambda: v.__setitem__(1.5, 0),
    "setitem_str": lambda: v.__setitem__(0, "x"),
    "at_wrong_idx": lambda: v.at["a"].add(1),
    "stack_dtype_mixed": lambda: mx.stack([v, v.astype(mx.float32)]),
    "concat_scalars": lambda: mx.concatenate([mx.array(1), mx.array(2)]),
    "stack_scalars": lambda: mx.stack([mx.array(1), mx.array(2)]),
    "split_indices_unsorted": lambda: mx.split(v, [4, 2]),
    "split_zero": lambda: mx.split(v, 0),
    "expand_dims_neg": lambda: mx.expand_dims(a, -4),
    "squeeze_tuple": lambda: mx.squeeze(mx.ones((1, 2, 1)), (0, 1)),
    "broadcast_arrays": lambda: mx.broadcast_arrays(a, mx.ones((4,))),
    "broadcast_shapes": lambda: mx.broadcast_shapes((2, 3), (4,)),
    "broadcast_shapes_none": lambda: mx.broadcast_shapes(),
    "matmul_int_float": lambda: v.reshape(2, 3) @ a.T,
    "matmul_batch": lambda: mx.ones((2, 2, 3)) @ mx.ones((3, 3, 2)),
    "gelu_int": lambda: nn.gelu(v),
    "relu_str": lambda: nn.relu("x"),
    "linear_int_input": lambda: nn.Linear(6, 2)(v),
    "module_bad_attr_assign": lambda: nn.Linear(2, 2).update({"weight": 3}),
    "sequential_index": lambda: nn.Sequential(nn.Linear(2, 2))(mx.ones((2, 3))),
    "rope_dims_module": lambda: nn.RoPE(5)(mx.ones((1, 2, 4))),
    "sinusoidal": lambda: nn.SinusoidalPositionalEncoding(5)(mx.arange(3)),
    "mha_mask_shape": lambda: nn.MultiHeadAttention(8, 2)(mx.ones((1, 3, 8)), mx.ones((1, 3, 8)), mx.ones((1, 3, 8)), mask=mx.ones((4, 4))),
    "mha_dims_input": lambda: nn.MultiHeadAttention(8, 2)(mx.ones((1, 3, 6)), mx.ones((1, 3, 6)), mx.ones((1, 3, 6))),
    "causal_mask_neg": lambda: nn.MultiHeadAttention.create_additive_causal_mask(-1),
    "opt_schedule_str": lambda: optim.Adam(learning_rate="x").init({"w": mx.ones(2)}),
    "opt_state_dict_bad": lambda: setattr(optim.Adam(0.1), "state", {"a": 1}),
    "clip_grad_neg": lambda: optim.clip_grad_norm({"w": mx.ones(2)}, -1.0)[0]["w"],
    "tree_map_leaf_fn_err": lambda: tree_map(lambda x: x.foo, {"a": mx.ones(2)}),
}

for name, fn in CASES.items():
    check(name, fn)
