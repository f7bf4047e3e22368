"""What MLX says when function transforms are misused: grad of non-scalars and non-arrays,
argnums/argnames mistakes, vjp/jvp argument mismatches, vmap axis problems, compile and
custom_function misuse, and gradients that cannot be taken (index arguments)."""
# compare: text
from functools import partial

import mlx.core as mx
import mlx.nn as nn


def check(label, fn):
    try:
        out = fn()
        if isinstance(out, mx.array):
            mx.eval(out)
            out = f"{out.shape} {out.dtype}"
        elif callable(out):
            out = "callable"
        elif isinstance(out, (tuple, list)):
            out = type(out).__name__ + str(len(out))
        print(f"{label}: ok {out}")
    except Exception as e:  # noqa: BLE001 - the point is to print what MLX raises
        print(f"{label}: {type(e).__name__}: {e}")


x = mx.array([1.0, -2.0, 3.0])
m = mx.ones((3, 4))


def loss2(a, b):
    return (a * b).sum()


@mx.custom_function
def twice(v):
    return 2 * v


@mx.custom_function
def no_rule(v):
    return mx.sin(v)


@twice.vjp
def twice_vjp(primals, cotangent, output):
    return cotangent * 2, cotangent  # one cotangent too many


@mx.custom_function
def bad_jvp(v):
    return v * 3


@bad_jvp.jvp
def bad_jvp_rule(primals, tangents):
    return "not an array"


CASES = {
    "grad_vector_out": lambda: mx.grad(lambda v: v ** 2)(x),
    "grad_shape_1": lambda: mx.grad(lambda v: v.sum(keepdims=True))(x),
    "grad_argnums_3": lambda: mx.grad(loss2, argnums=(0, 3))(x, x),
    "grad_argnums_neg2": lambda: mx.grad(loss2, argnums=(-2,))(x, x),
    "grad_argnums_list": lambda: mx.grad(loss2, argnums=[1])(x, x),
    "grad_argnames_missing": lambda: mx.grad(lambda a, *, b: (a * b).sum(), argnames="b")(x, c=x),
    "grad_argnames_pos": lambda: mx.grad(loss2, argnames="b")(x, x),
    "grad_argnames_tuple": lambda: mx.grad(lambda a, *, b: (a * b).sum(), argnums=[], argnames=("b",))(x, b=x),
    "grad_kwarg_not_array": lambda: mx.grad(lambda a, *, b: (a * b).sum(), argnames="b")(x, b=2.0),
    "grad_int_arg": lambda: mx.grad(lambda v: v.sum())(mx.array([1, 2, 3])),
    "grad_complex_out": lambda: mx.grad(lambda v: (v * 1j).sum())(x),
    "grad_python_float": lambda: mx.grad(lambda v: v * 2.0)(3.0),
    "grad_aux_tuple": lambda: mx.grad(lambda v: ((v ** 2).sum(), v))(x),
    "vag_aux_dict": lambda: mx.value_and_grad(lambda v: ((v ** 2).sum(), {"v": v}))(x),
    "vag_aux_list_first_vector": lambda: mx.value_and_grad(lambda v: [v, v.sum()])(x),
    "vag_none_aux": lambda: mx.value_and_grad(lambda v: ((v ** 2).sum(), None))(x),
    "grad_of_argmax_index": lambda: mx.grad(lambda v: v[mx.argmax(v)])(x),
    "grad_through_int_cast": lambda: mx.grad(lambda v: v.astype(mx.int32).sum().astype(mx.float32))(x),
    "grad_through_round": lambda: mx.grad(lambda v: mx.round(v).sum())(x),
    "grad_scatter_prod_array": lambda: mx.grad(lambda v: v.at[mx.array([0, 0])].multiply(2.0).sum())(x),
    "grad_scatter_prod_int": lambda: mx.grad(lambda v: v.at[1].multiply(2.0).sum())(x),
    "grad_of_grad_vector": lambda: mx.grad(mx.grad(lambda v: (v ** 3).sum()))(x),
    "vjp_not_list": lambda: mx.vjp(lambda v: v * 2, x, x),
    "vjp_cot_dtype": lambda: mx.vjp(lambda v: v * 2, [x], [mx.ones(3, mx.float16)])[1][0],
    "vjp_two_primals_one": lambda: mx.vjp(loss2, [x], [mx.array(1.0)]),
    "vjp_kwargs_fn": lambda: mx.vjp(lambda v, *, s: v * s, [x], [x]),
    "jvp_tangent_tuple": lambda: mx.jvp(lambda v: v * 2, (x,), (x,)),
    "jvp_two_primals": lambda: mx.jvp(loss2, [x, x], [x]),
    "jvp_tangent_dtype": lambda: mx.jvp(lambda v: v * 2, [x], [mx.ones(3, mx.int32)])[1][0],
    "vmap_size_mismatch": lambda: mx.vmap(loss2)(m, mx.ones((4, 3))),
    "vmap_in_axes_on_float": lambda: mx.vmap(lambda a, s: a * s, in_axes=(0, 0))(m, 2.0),
    "vmap_none_float_ok": lambda: mx.vmap(lambda a, s: a * s, in_axes=(0, None))(m, 2.0),
    "vmap_in_axes_tuple_arg": lambda: mx.vmap(lambda t: t[0] * t[1], in_axes=((0, 1),))((m, m.T)),
    "vmap_in_axes_dict_wrong_key": lambda: mx.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": m}),
    "vmap_in_axes_list_vs_tuple": lambda: mx.vmap(loss2, in_axes=[0, 0])(m, m),
    "vmap_neg_axis": lambda: mx.vmap(lambda a: a.sum(), in_axes=-1)(m),
    "vmap_out_axes_neg": lambda: mx.vmap(lambda a: a * 2, out_axes=-1)(m),
    "vmap_out_axes_none": lambda: mx.vmap(lambda a: a * 2, out_axes=None)(m),
    "vmap_out_axes_scalar_out": lambda: mx.vmap(lambda a: a.sum(), out_axes=1)(m),
    "vmap_out_tree_mismatch": lambda: mx.vmap(lambda a: {"s": a.sum()}, out_axes={"t": 0})(m),
    "vmap_returns_int": lambda: mx.vmap(lambda a: 3)(m),
    "vmap_returns_none": lambda: mx.vmap(lambda a: None)(m),
    "vmap_item_inside": lambda: mx.vmap(lambda a: a.sum().item())(m),
    "vmap_zero_size": lambda: mx.vmap(lambda a: a * 2)(mx.ones((0, 3))),
    "vmap_kwargs": lambda: mx.vmap(loss2)(m, b=m),
    "compile_item_inside": lambda: mx.compile(lambda a: a * a.sum().item())(x),
    "compile_eval_inside": lambda: mx.compile(lambda a: mx.eval(a * 2) or a)(x),
    "compile_bool_branch": lambda: mx.compile(lambda a: a if a.sum() > 0 else -a)(x),
    "compile_shapeless_ok": lambda: mx.compile(lambda a: a.reshape(-1), shapeless=True)(m),
    "compile_object_arg": lambda: mx.compile(lambda a, o: a)(x, object()),
    "compile_kwargs_ok": lambda: mx.compile(lambda a, *, s=1.0: a * s)(x, s=3.0),
    "compile_outputs_not_tree": lambda: partial(mx.compile, outputs=5)(lambda a: a)(x),
    "compile_shapeless_int": lambda: mx.compile(lambda a: a, shapeless=1),
    "compile_uncaptured": lambda: mx.compile(lambda a: a + x)(x),
    "compile_closure_other": lambda: mx.compile(lambda a: a + x)(x * 1),
    "custom_vjp_extra": lambda: mx.grad(lambda v: twice(v).sum())(x),
    "custom_no_rule_ok": lambda: mx.grad(lambda v: no_rule(v).sum())(x),
    "custom_jvp_str": lambda: mx.jvp(bad_jvp, [x], [x]),
    "custom_vjp_not_callable": lambda: mx.custom_function(lambda v: v).vjp(3),
    "custom_not_callable": lambda: mx.custom_function(3),
    "checkpoint_kwargs": lambda: mx.grad(lambda v: mx.checkpoint(lambda a, *, s: a * s)(v, s=2.0).sum())(x),
    "stop_gradient_list": lambda: mx.stop_gradient([x]),
    "nn_vag_not_module": lambda: nn.value_and_grad(lambda p: p, lambda p: p.sum()),
}

for label, fn in CASES.items():
    check(label, fn)
