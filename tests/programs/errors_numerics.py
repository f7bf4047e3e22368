"""Mistakes with dtypes, linalg, einsum, padding, sorting, convolutions, quantization,
compile/grad/vmap arguments, modules and optimizers, tree utilities and comparisons, and
the exceptions MLX raises for them."""
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
sq = mx.eye(3) * 2

CASES = {
    "astype_type": lambda: a.astype(int),
    "view_bool": lambda: mx.ones((4,), mx.float32).view(mx.float16),
    "view_scalar": lambda: mx.array(1.0).view(mx.int8),
    "view_bad_last": lambda: mx.ones((2, 3), mx.int8).view(mx.int16),
    "linalg_batched_inv": lambda: mx.linalg.inv(mx.stack([sq, sq]), stream=mx.cpu),
    "linalg_qr_ns": lambda: mx.linalg.qr(mx.ones((3, 2)), stream=mx.cpu)[0],
    "linalg_svd_gpu": lambda: mx.linalg.svd(sq, stream=mx.gpu),
    "linalg_cholesky_gpu": lambda: mx.linalg.cholesky(sq, stream=mx.gpu),
    "linalg_eigh_uplo": lambda: mx.linalg.eigh(sq, UPLO="X", stream=mx.cpu),
    "linalg_lu_1d": lambda: mx.linalg.lu(v.astype(mx.float32), stream=mx.cpu),
    "linalg_pinv_1d": lambda: mx.linalg.pinv(v.astype(mx.float32), stream=mx.cpu),
    "linalg_cross": lambda: mx.linalg.cross(mx.ones((4,)), mx.ones((4,))),
    "linalg_solve_tri": lambda: mx.linalg.solve_triangular(sq, mx.ones((4,)), stream=mx.cpu),
    "linalg_eig_int": lambda: mx.linalg.eigvals(mx.eye(3, dtype=mx.int32), stream=mx.cpu),
    "linalg_norm_int_ord": lambda: mx.linalg.norm(a, ord=3),
    "linalg_norm_2d_ord": lambda: mx.linalg.norm(a, ord=3, axis=(0, 1)),
    "pad_mode_edge_ok": lambda: mx.pad(a, 1, mode="edge"),
    "pad_width_len": lambda: mx.pad(a, [(1, 1, 1)]),
    "pad_width_neg_pair": lambda: mx.pad(a, [(1, -1), (0, 0)]),
    "pad_value_array": lambda: mx.pad(a, 1, constant_values=mx.ones((2,))),
    "einsum_repeat_out": lambda: mx.einsum("ij->ii", a),
    "einsum_ellipsis": lambda: mx.einsum("...i,...i->...", a, mx.ones((4, 3))),
    "einsum_dim": lambda: mx.einsum("ij,ij->i", a, mx.ones((2, 4))),
    "einsum_empty": lambda: mx.einsum("", a),
    "einsum_arrow2": lambda: mx.einsum("ij->j->i", a),
    "searchsorted_side": lambda: mx.searchsorted(v, mx.array([2]), side="middle"),
    "sort_complex": lambda: mx.sort(mx.array([1j, 2])),
    "argsort_axis_none": lambda: mx.argsort(a, axis=None),
    "topk_axis": lambda: mx.topk(a, 2, axis=2),
    "topk_neg": lambda: mx.topk(v, -1),
    "partition_axis": lambda: mx.partition(a, 1, axis=3),
    "conv_general_stride": lambda: mx.conv_general(mx.ones((1, 5, 3)), mx.ones((2, 3, 3)), stride=(1, 1)),
    "conv1d_stride0": lambda: mx.conv1d(mx.ones((1, 5, 3)), mx.ones((2, 3, 3)), stride=0),
    "conv1d_dtype": lambda: mx.conv1d(mx.ones((1, 5, 3), mx.int32), mx.ones((2, 3, 3), mx.int32)),
    "conv1d_pad_neg": lambda: mx.conv1d(mx.ones((1, 5, 3)), mx.ones((2, 3, 3)), padding=-1),
    "conv3d_ndim": lambda: mx.conv3d(mx.ones((1, 5, 5, 3)), mx.ones((2, 3, 3, 3, 3))),
    "maxpool_stride": lambda: nn.MaxPool1d(2, stride=0)(mx.ones((1, 4, 2))),
    "avgpool_pad": lambda: nn.AvgPool2d(2, padding=2)(mx.ones((1, 4, 4, 2))),
    "pool3d_dims": lambda: nn.MaxPool3d(2)(mx.ones((1, 4, 4, 2))),
    "dequantize_shape": lambda: mx.dequantize(mx.zeros((4, 8), mx.uint32), mx.ones((4, 2)), mx.ones((4, 1))),
    "qmm_shape": lambda: mx.quantized_matmul(mx.ones((2, 32)), *mx.quantize(mx.ones((4, 64)))),
    "quantize_int": lambda: mx.quantize(mx.ones((4, 64), mx.int32)),
    "quantize_mode": lambda: mx.quantize(mx.ones((4, 64)), mode="fp4"),
    "compile_not_callable": lambda: mx.compile(3),
    "compile_shapeless_reshape": lambda: mx.compile(lambda x: x.reshape(x.shape[0] * 2, -1), shapeless=True)(mx.ones((4, 4))),
    "compile_inputs_bad": lambda: mx.compile(lambda x: x, inputs=3)(mx.ones(2)),
    "compile_list_out": lambda: mx.compile(lambda x: [x, {"a": x}])(mx.ones(2)),
    "compile_none_out": lambda: mx.compile(lambda x: None)(mx.ones(2)),
    "compile_int_out": lambda: mx.compile(lambda x: 3)(mx.ones(2)),
    "grad_none_out": lambda: mx.grad(lambda x: None)(mx.ones(2)),
    "grad_list_arg": lambda: mx.grad(lambda xs: xs[0].sum())([mx.ones(2), 3]),
    "grad_dict_arg": lambda: mx.grad(lambda d: d["a"].sum())({"a": mx.ones(2)})["a"],
    "grad_bool_out": lambda: mx.grad(lambda x: (x > 0).sum())(mx.ones(2)),
    "grad_int_out": lambda: mx.grad(lambda x: x.sum().astype(mx.int32))(mx.ones(2)),
    "vag_argnums_str": lambda: mx.value_and_grad(lambda x: x.sum(), argnums="x")(mx.ones(2)),
    "vmap_in_axes_str": lambda: mx.vmap(lambda x: x, in_axes="0")(mx.ones(2)),
    "vmap_nested_bad": lambda: mx.vmap(lambda x: x, in_axes=({"a": 0},))(mx.ones(2)),
    "vmap_out_tuple_len": lambda: mx.vmap(lambda x: (x, x), out_axes=(0,))(mx.ones((2, 2))),
    "module_call_missing": lambda: nn.Module()(mx.ones(2)),
    "module_parameters_set": lambda: setattr(nn.Linear(2, 2), "weight", 3) or nn.Linear(2, 2).parameters()["weight"],
    "module_children": lambda: nn.Linear(2, 2).children()["x"],
    "module_freeze_recurse": lambda: nn.Linear(2, 2).freeze(recurse=False, keys="bias", strict=True),
    "module_set_dtype": lambda: nn.Linear(2, 2).set_dtype("float16"),
    "module_update_shape": lambda: nn.Linear(2, 2).update({"weight": mx.ones((3, 3))}),
    "opt_init_twice": lambda: optim.Adam(0.1).init({"w": [mx.ones(2)]}),
    "opt_state_set": lambda: setattr(optim.SGD(0.1), "state", 3),
    "opt_lr_array": lambda: optim.SGD(mx.array([0.1, 0.2])).apply_gradients({"w": mx.ones(2)}, {"w": mx.ones(2)})["w"],
    "opt_momentum_neg": lambda: optim.SGD(0.1, momentum=0.1, nesterov=True, dampening=0.5),
    "opt_adafactor": lambda: optim.Adafactor(learning_rate=None, relative_step=False).init({"w": mx.ones(2)}),
    "tree_unflatten_dup": lambda: tree_unflatten([("a", 1), ("a.b", 2)]),
    "tree_unflatten_gap": lambda: tree_unflatten([("0", 1), ("2", 2)]),
    "tree_flatten_str": lambda: tree_flatten("abc"),
    "diff_n": lambda: mx.diff(v, n=-1),
    "isclose_shape": lambda: mx.isclose(a, mx.ones((4,))),
    "allclose_shape": lambda: mx.allclose(a, mx.ones((4,))),
    "array_equal_shape": lambda: mx.array_equal(a, mx.ones((4,))),
    "nan_to_num_int": lambda: mx.nan_to_num(v, nan=1.5),
    "median_axis": lambda: mx.median(a, axis=3),
    "hadamard_size": lambda: mx.hadamard_transform(mx.ones((3,))),
    "dtype_finfo_int": lambda: mx.finfo(mx.int32),
    "iinfo_float": lambda: mx.iinfo(mx.float32),
    "issubdtype_bad": lambda: mx.issubdtype(3, mx.floating),
    "tolist_ok": lambda: a.tolist(),
    "item_empty": lambda: mx.zeros((0,)).item(),
    "getitem_empty_tuple": lambda: a[()],
    "array_big_int": lambda: mx.array(2**40, dtype=mx.int32),
    "mx_abs_str": lambda: mx.abs("x"),
    "mx_add_list": lambda: a + [1, 2, 3],
    "mx_mul_str": lambda: a * "x",
}

for name, fn in CASES.items():
    check(name, fn)
