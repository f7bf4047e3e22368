"""mx.vmap against real MLX 0.32.4: the same function, inputs and axes give the same values,
shapes and dtypes, and the same errors. Each case also runs with the batching rules switched
off (every node through the per-entry loop), so rule and fallback are checked against each
other, and the cases that should need no loop assert that none ran. The case tables live in
tests/_vmap_cases.py (no MLX), shared with tests/test_gpu_vmap.py."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
from pycudamlx.transforms import vmap_rules

from _vmap_cases import CASES, LOOP_CASES, LOW_PRECISION_IDS, RNG, _data, _mk

mlx = pytest.importorskip("mlx.core")


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


LOW_PRECISION = {c[1] for c in CASES if c[0] in LOW_PRECISION_IDS}


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


# ---- custom_function's vmap rule -------------------------------------------------------------


def _custom(m, rule, n_out=1, vjp=None):
    """A custom_function (x -> x*2, or (x*2, x*3)) whose vmap rule is ``rule(m, inputs, axes)``;
    ``seen`` records what the rule was given."""
    seen = []

    @m.custom_function
    def f(a):
        return a * 2 if n_out == 1 else (a * 2, a * 3)

    @f.vmap
    def f_vmap(inputs, axes):
        seen.append((type(inputs).__name__, axes))
        return rule(m, inputs, axes)

    if vjp is not None:
        f.vjp(vjp)
    return f, seen


CUSTOM_VMAP = {
    "replaces_body": (lambda m, i, a: (i * 2 + 100, a), lambda m, f: m.vmap(f)(m.array(X))),
    "in_axis_1": (lambda m, i, a: (i * 2 + 100, a), lambda m, f: m.vmap(f, in_axes=1)(m.array(X))),
    "out_axes_1": (lambda m, i, a: (i * 2 + 1, a),
                   lambda m, f: m.vmap(f, out_axes=1)(m.array(X))),
    "negative_out_axis": (lambda m, i, a: (m.swapaxes(i, 0, -1) + 1, -1),
                          lambda m, f: m.vmap(f)(m.array(X))),
    "list_outputs": (lambda m, i, a: ([i * 2 + 1], [a]), lambda m, f: m.vmap(f)(m.array(X))),
    "nested": (lambda m, i, a: (i * 5 + 1, a),
               lambda m, f: m.vmap(m.vmap(f))(m.array(X)[..., None] + m.arange(2))),
    "grad_of_vmap_uses_rule": (lambda m, i, a: (i * 5, a),
                               lambda m, f: m.grad(lambda v: m.vmap(f)(v).sum())(m.array(X))),
    "vmap_of_grad_uses_body": (lambda m, i, a: (i * 5, a),
                               lambda m, f: m.vmap(m.grad(lambda v: f(v).sum()))(m.array(X))),
    "unbatched_call_skips_rule": (lambda m, i, a: (i * 7, a),
                                  lambda m, f: m.vmap(lambda v: f(m.ones(2)) + v)(
                                      m.array(X).reshape(-1, 2))),
}


@pytest.mark.parametrize("name", list(CUSTOM_VMAP))
def test_custom_function_vmap_rule_matches_mlx(name):
    rule, call = CUSTOM_VMAP[name]
    f_ref, seen_ref = _custom(mlx, rule)
    f_ours, seen_ours = _custom(mx, rule)
    _compare(call(mx, f_ours), call(mlx, f_ref), 1e-5)
    assert [s[0] for s in seen_ours] == [s[0] for s in seen_ref]
    # pycudamlx hands the rule its inputs with the batch axis first (MLX: where in_axes put it)
    assert all(a == 0 for _, a in seen_ours) and len(seen_ours) == len(seen_ref)


def test_custom_function_vmap_rule_several_arguments_and_outputs():
    x, y = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)

    def build(m, seen):
        @m.custom_function
        def f(d, b):
            return d["x"] * b, d["x"] + b

        @f.vmap
        def f_vmap(inputs, axes):
            seen.append(axes)
            d, b = inputs
            return (d["x"] * b + 10, d["x"] - b), (axes[0]["x"], 0)
        return f

    seen_ref, seen_ours = [], []
    ref = mlx.vmap(build(mlx, seen_ref), in_axes=({"x": 0}, None))({"x": mlx.array(x)},
                                                                   mlx.array(y))
    ours = mx.vmap(build(mx, seen_ours), in_axes=({"x": 0}, None))({"x": mx.array(x)},
                                                                 mx.array(y))
    _compare(ours, ref, 1e-5)
    assert seen_ours == seen_ref == [({"x": 0}, None)]


CUSTOM_VMAP_ERRORS = {
    "list_result": lambda m, i, a: [i, a],
    "three_items": lambda m, i, a: (i, a, a),
    "axes_tree_mismatch": lambda m, i, a: ((i, i), (0,)),
}


@pytest.mark.parametrize("name", list(CUSTOM_VMAP_ERRORS))
def test_custom_function_vmap_rule_errors_match_mlx(name):
    n_out = 2 if name == "axes_tree_mismatch" else 1
    errors = []
    for m in (mlx, mx):
        f, _ = _custom(m, CUSTOM_VMAP_ERRORS[name], n_out)
        with pytest.raises(Exception) as info:
            m.eval(m.vmap(f)(m.array(X)))
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]) and str(errors[1]) == str(errors[0])


def test_custom_function_vmap_rule_refuses_keyword_arguments_like_mlx():
    for m in (mlx, mx):
        f, _ = _custom(m, lambda m_, i, a: (i, a))
        with pytest.raises(ValueError, match="only accept positional arguments"):
            m.vmap(lambda v: f(a=v))(m.array(X))


def test_custom_function_vmap_rule_bad_outputs_are_clear_errors():
    """MLX fails later with '[eval] Attempting to eval an array without a primitive'."""
    f, _ = _custom(mx, lambda m, i, a: (3.0, a))
    with pytest.raises(RuntimeError, match="outputs should be arrays"):
        mx.vmap(f)(mx.array(X))
    f, _ = _custom(mx, lambda m, i, a: ((i,), (a,)), n_out=2)
    with pytest.raises(RuntimeError, match="returned 1 outputs; the function returns 2"):
        mx.vmap(f)(mx.array(X))
    f, _ = _custom(mx, lambda m, i, a: (i, "x"))
    with pytest.raises(RuntimeError, match="std::bad_cast"):
        mx.vmap(f)(mx.array(X))


def test_custom_function_vmap_rule_unbatched_output_is_repeated():
    """An output axis of None (no longer vectorized) is the same for every batch entry, as the
    documentation describes (MLX 0.32.4 moves the output's last axis instead)."""
    f, _ = _custom(mx, lambda m, i, a: (m.ones(4), None))
    out = mx.vmap(f)(mx.array(X))
    assert out.shape == (X.shape[0], 4) and float(out.sum()) == X.shape[0] * 4
