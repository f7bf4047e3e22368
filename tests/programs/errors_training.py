"""Mistakes made while writing training code, and what MLX says about them: a Linear fed the
wrong width, grad of a non-scalar, bad argnums, vmap size mismatches, load_weights with
missing/extra/wrong-shape keys, update with the wrong structure, tree utilities misuse."""
# compare: text
import os
import tempfile

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_unflatten


def check(label, fn):
    try:
        out = fn()
        if isinstance(out, mx.array):
            mx.eval(out)
        elif isinstance(out, (tuple, list)):
            mx.eval(*[o for o in out if isinstance(o, mx.array)])
        print(f"{label}: ok")
    except Exception as e:  # noqa: BLE001 - the point is to print what MLX raises
        # the temporary directory's name changes from run to run
        print(f"{label}: {type(e).__name__}: {str(e).replace(tmp, '<tmp>')}")


class MLP(nn.Module):
    def __init__(self, din, dh, dout):
        super().__init__()
        self.l1 = nn.Linear(din, dh)
        self.l2 = nn.Linear(dh, dout)

    def __call__(self, x):
        return self.l2(nn.relu(self.l1(x)))


mx.random.seed(0)
model = MLP(4, 8, 2)
mx.eval(model.parameters())
x = mx.random.normal((5, 4))
y = mx.array([0, 1, 1, 0, 1])
tmp = tempfile.mkdtemp()
path = os.path.join(tmp, "w.safetensors")
model.save_weights(path)
npz = os.path.join(tmp, "w.npz")
model.save_weights(npz)


def loss_fn(m, x, y):
    return nn.losses.cross_entropy(m(x), y, reduction="mean")


def vec_loss(m, x, y):
    return nn.losses.cross_entropy(m(x), y)


CASES = {
    "linear_width": lambda: model(mx.ones((5, 3))),
    "linear_1d": lambda: nn.Linear(3, 2)(mx.ones((4,))),
    "conv2d_layout": lambda: nn.Conv2d(3, 4, 3)(mx.ones((1, 3, 8, 8))),
    "conv1d_ndim": lambda: nn.Conv1d(3, 4, 3)(mx.ones((3, 8))),
    "conv2d_small": lambda: nn.Conv2d(3, 4, 5)(mx.ones((1, 3, 3, 3))),
    "maxpool_ndim": lambda: nn.MaxPool2d(2)(mx.ones((4, 4))),
    "embedding_float": lambda: nn.Embedding(10, 4)(mx.array([0.0, 1.0])),
    "layernorm_dims": lambda: nn.LayerNorm(5)(mx.ones((2, 4))),
    "batchnorm_dims": lambda: nn.BatchNorm(5)(mx.ones((2, 4))),
    "mha_dims": lambda: nn.MultiHeadAttention(8, 3),
    "ce_shape": lambda: nn.losses.cross_entropy(mx.ones((5, 2)), mx.zeros((4,), mx.int32)),
    "ce_reduction": lambda: nn.losses.cross_entropy(mx.ones((5, 2)), y, reduction="avg"),
    "mse_shape": lambda: nn.losses.mse_loss(mx.ones((5, 2)), mx.ones((5, 3))),
    "bce_shape": lambda: nn.losses.binary_cross_entropy(mx.ones((5,)), mx.ones((4,))),
    "l1_shape": lambda: nn.losses.l1_loss(mx.ones((2,)), mx.ones((3,))),
    "kl_ok": lambda: nn.losses.kl_div_loss(mx.zeros((2, 3)), mx.zeros((2, 3))),
    "grad_nonscalar": lambda: mx.grad(lambda a: a * 2)(mx.ones((3,))),
    "grad_argnums": lambda: mx.grad(lambda a, b: (a * b).sum(), argnums=2)(mx.ones(2), mx.ones(2)),
    "grad_argnums_neg": lambda: mx.grad(lambda a: a.sum(), argnums=-1)(mx.ones(2)),
    "grad_argnums_dup": lambda: mx.grad(lambda a, b: (a * b).sum(), argnums=(0, 0))(mx.ones(2), mx.ones(2)),
    "grad_argnames": lambda: mx.grad(lambda a, b=1: (a * b).sum(), argnames="c")(mx.ones(2)),
    "grad_int_input": lambda: mx.grad(lambda a: a.sum())(mx.array([1, 2])),
    "grad_str_output": lambda: mx.grad(lambda a: "x")(mx.ones(2)),
    "grad_tuple_output": lambda: mx.grad(lambda a: (a.sum(), a))(mx.ones(2)),
    "vag_nonscalar": lambda: mx.value_and_grad(lambda a: a)(mx.ones((2,))),
    "vag_tuple_first": lambda: mx.value_and_grad(lambda a: (a, a.sum()))(mx.ones((2,))),
    "nn_vag_nonscalar": lambda: nn.value_and_grad(model, vec_loss)(model, x, y),
    "nn_vag_ok": lambda: nn.value_and_grad(model, loss_fn)(model, x, y)[0],
    "vmap_sizes": lambda: mx.vmap(lambda a, b: a + b)(mx.ones((3, 2)), mx.ones((4, 2))),
    "vmap_axis": lambda: mx.vmap(lambda a: a * 2, in_axes=2)(mx.ones((3, 2))),
    "vmap_in_axes_len": lambda: mx.vmap(lambda a, b: a + b, in_axes=(0,))(mx.ones((3,)), mx.ones((3,))),
    "vmap_out_axes": lambda: mx.vmap(lambda a: a * 2, out_axes=3)(mx.ones((3, 2))),
    "vmap_all_none": lambda: mx.vmap(lambda a: a * 2, in_axes=None)(mx.ones((3,))),
    "vmap_scalar": lambda: mx.vmap(lambda a: a * 2)(mx.array(1.0)),
    "vmap_non_array": lambda: mx.vmap(lambda a: "s")(mx.ones((3,))),
    "compile_str": lambda: mx.compile(lambda a: "s")(mx.ones(2)),
    "compile_shape": lambda: mx.compile(lambda a, b: a @ b)(mx.ones((2, 3)), mx.ones((2, 3))),
    "jvp_len": lambda: mx.jvp(lambda a: a * 2, [mx.ones(2)], [mx.ones(2), mx.ones(2)]),
    "jvp_shape": lambda: mx.jvp(lambda a: a * 2, [mx.ones(2)], [mx.ones(3)]),
    "vjp_len": lambda: mx.vjp(lambda a: a * 2, [mx.ones(2)], [mx.ones(2), mx.ones(2)]),
    "vjp_shape": lambda: mx.vjp(lambda a: a * 2, [mx.ones(2)], [mx.ones(3)]),
    "load_missing_key": lambda: MLP(4, 8, 2).load_weights([("l1.weight", mx.zeros((8, 4)))]),
    "load_extra_key": lambda: MLP(4, 8, 2).load_weights(
        list(model.parameters().items()) and tree_flatten(model.parameters()) + [("l3.weight", mx.zeros((2,)))]),
    "load_shape": lambda: MLP(4, 8, 2).load_weights(
        [(k, mx.zeros((1,)) if k == "l2.bias" else v) for k, v in tree_flatten(model.parameters())]),
    "load_nonstrict": lambda: MLP(4, 8, 2).load_weights([("l1.weight", mx.zeros((8, 4)))], strict=False),
    "load_nonstrict_shape": lambda: MLP(4, 8, 2).load_weights([("l1.weight", mx.zeros((8, 3)))], strict=False),
    "load_not_array": lambda: MLP(4, 8, 2).load_weights([("l1.weight", [1.0])], strict=False),
    "load_file_ok": lambda: MLP(4, 8, 2).load_weights(path),
    "load_file_npz": lambda: MLP(4, 8, 2).load_weights(npz),
    "load_file_wrong_model": lambda: MLP(4, 6, 2).load_weights(path),
    "load_file_missing": lambda: MLP(4, 8, 2).load_weights(os.path.join(tmp, "nope.safetensors")),
    "save_weights_ext": lambda: model.save_weights(os.path.join(tmp, "w.pt")),
    "update_extra": lambda: MLP(4, 8, 2).update({"l3": {"weight": mx.zeros((2,))}}),
    "update_strict_false": lambda: MLP(4, 8, 2).update({"l3": {"weight": mx.zeros((2,))}}, strict=False),
    "update_wrong_type": lambda: MLP(4, 8, 2).update({"l1": mx.zeros((2,))}),
    "update_list": lambda: MLP(4, 8, 2).update([1, 2]),
    "update_modules_bad": lambda: MLP(4, 8, 2).update_modules({"l1": 3}),
    "freeze_unknown": lambda: MLP(4, 8, 2).freeze(keys=["nope"]),
    "freeze_unknown_strict": lambda: MLP(4, 8, 2).freeze(keys=["nope"], strict=True),
    "unfreeze_unknown_strict": lambda: MLP(4, 8, 2).unfreeze(keys="nope", strict=True),
    "getattr_missing": lambda: model.l3,
    "apply_to_modules": lambda: model.apply_to_modules(lambda k, m: None),
    "sequential_shape": lambda: nn.Sequential(nn.Linear(4, 3), nn.Linear(4, 2))(x),
    "opt_update_mismatch": lambda: optim.SGD(0.1).update(MLP(4, 8, 2), {"l1": {"weight": mx.zeros((8, 4))}}),
    "opt_apply_extra": lambda: optim.Adam(0.1).apply_gradients({"w": mx.ones(2), "b": mx.ones(2)}, {"w": mx.ones(2)}),
    "opt_apply_shape": lambda: optim.Adam(0.1).apply_gradients({"w": mx.ones(3)}, {"w": mx.ones(2)}),
    "opt_lr_bad": lambda: optim.SGD(learning_rate="fast").update(MLP(4, 8, 2), MLP(4, 8, 2).parameters()),
    "schedule_join_len": lambda: optim.join_schedules([optim.linear_schedule(0, 1, 10)], [5, 10]),
    "clip_grad_ok": lambda: optim.clip_grad_norm({"a": mx.ones(3)}, 1.0)[1],
    "tree_unflatten_mixed": lambda: tree_unflatten([("0", mx.ones(1)), ("a", mx.ones(1))]),
    "tree_unflatten_bad_index": lambda: tree_unflatten([("a.x.1", 1)]),
    "tree_unflatten_not_pair": lambda: tree_unflatten([1, 2]),
    "tree_map_structure": lambda: tree_map(lambda a, b: a + b, {"a": 1}, {"b": 2}),
    "tree_map_list_len": lambda: tree_map(lambda a, b: a + b, [1, 2], [1]),
    "mx_load_missing": lambda: mx.load(os.path.join(tmp, "missing.npz")),
    "mx_load_missing_st": lambda: mx.load(os.path.join(tmp, "missing.safetensors")),
    "mx_load_ext": lambda: mx.load(os.path.join(tmp, "weights.pt")),
    "mx_load_noext": lambda: mx.load(os.path.join(tmp, "weights")),
    "mx_load_format": lambda: mx.load(path, format="pt"),
    "mx_save_dict": lambda: mx.save(os.path.join(tmp, "d.npy"), {"a": mx.ones(2)}),
    "mx_save_st_list": lambda: mx.save_safetensors(os.path.join(tmp, "d.safetensors"), [mx.ones(2)]),
    "mx_save_st_meta_list": lambda: mx.save_safetensors(path, {"a": mx.ones(2)}, [1]),
    "mx_save_st_file": lambda: mx.save_safetensors(3, {"a": mx.ones(2)}),
    "mx_save_dir": lambda: mx.save_safetensors(os.path.join(tmp, "no", "x"), {"a": mx.ones(2)}),
    "vjp_extra_cotangent": lambda: mx.vjp(lambda a: a * 2, [mx.ones(2)], [mx.ones(2), mx.ones(3)])[1][0],
    "vjp_few_cotangents": lambda: mx.vjp(lambda a: (a, a), [mx.ones(2)], [mx.ones(2)]),
    "mx_save_st_meta": lambda: mx.save_safetensors(os.path.join(tmp, "m.safetensors"), {"a": mx.ones(2)}, metadata={"k": 1}),
}

for name, fn in CASES.items():
    check(name, fn)
