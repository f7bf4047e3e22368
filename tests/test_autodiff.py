"""Autodiff (mx.grad, value_and_grad, vjp, jvp, custom_function, checkpoint, stop_gradient)
against real MLX 0.32.4 on the same inputs, and numeric differences in float64. The case tables
live in tests/_autodiff_cases.py (no MLX), shared with tests/test_gpu_autodiff.py."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx

from _autodiff_cases import (CASES, COMPLEX_CASES, FAST_HALF, FFT_CASES, GRAD_OF_GRAD,
                             mlp_loss, transformer_loss)

M = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(0)


def _np(a):
    if isinstance(a, (mx.array, M.array)):
        return np.array(a.astype(a.dtype if a.dtype not in (mx.bfloat16, M.bfloat16)
                                 else (mx.float32 if isinstance(a, mx.array) else M.float32)))
    return np.asarray(a)


def _close(ours, theirs, rtol=1e-4, atol=1e-5):
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _close(o, t, rtol, atol)
        return
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs)
        for k in theirs:
            _close(ours[k], theirs[k], rtol, atol)
        return
    if theirs is None:
        assert ours is None
        return
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1].replace("bool_", "bool"), (
        ours.dtype, theirs.dtype)
    wide = np.complex128 if ours.dtype.name == "complex64" else np.float64
    np.testing.assert_allclose(_np(ours).astype(wide), _np(theirs).astype(wide),
                               rtol=rtol, atol=atol)


def _both(data, dtype="float32"):
    return mx.array(data).astype(getattr(mx, dtype)), M.array(data).astype(getattr(M, dtype))


def _rand(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_grad_matches_mlx(name, fn, inputs):
    argnums = tuple(range(len(inputs)))
    ours = mx.grad(lambda *a: fn(mx, *a), argnums=argnums)(*[mx.array(x) for x in inputs])
    theirs = M.grad(lambda *a: fn(M, *a), argnums=argnums)(*[M.array(x) for x in inputs])
    _close(ours, theirs, rtol=2e-4, atol=2e-5)


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f(x)
        flat[i] = old - eps
        lo = f(x)
        flat[i] = old
        g.reshape(-1)[i] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize("fn", [
    lambda x: mx.sum(mx.tanh(x) * mx.exp(-x * x)),
    lambda x: mx.logsumexp(x * 3),
    lambda x: mx.sum(mx.cumprod(x)),
    lambda x: mx.sum(mx.sort(x) * mx.arange(x.size)),
    lambda x: mx.sum(mx.softmax(x) ** 2),
])
def test_grad_matches_finite_differences_float64(fn):
    x = RNG.uniform(-1, 1, 6)
    x64 = mx.array(x, mx.float64)
    g = np.array(mx.grad(fn)(x64))
    num = _numeric_grad(lambda v: float(fn(mx.array(v, mx.float64)).item()), x.copy())
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_gradient_dtype_follows_primal(dtype):
    a, b = _both(_rand(3, 4), dtype)
    f = lambda m, x: m.sum(m.exp(x) * x) / 10  # noqa: E731
    ours = mx.grad(lambda x: f(mx, x))(a)
    theirs = M.grad(lambda x: f(M, x))(b)
    assert ours.dtype.name == dtype
    _close(ours, theirs, rtol=2e-2, atol=2e-2)


def test_integer_and_bool_inputs_follow_mlx():
    for f in (lambda m, x: (x * x).sum(), lambda m, x: (x / 2).sum(),
              lambda m, x: (x * 1.5).sum(), lambda m, x: x.sum()):
        _close(mx.grad(lambda x: f(mx, x))(mx.array([1, 2], mx.int32)),
               M.grad(lambda x: f(M, x))(M.array([1, 2], M.int32)))
    _close(mx.grad(lambda x: x.astype(mx.float32).sum())(mx.array([True, False])),
           M.grad(lambda x: x.astype(M.float32).sum())(M.array([True, False])))
    # A path through a comparison or an integer cast.
    x = [1.0, 2.0, 3.0]
    _close(mx.grad(lambda x: mx.sum(x > 1))(mx.array(x)), M.grad(lambda x: M.sum(x > 1))(
        M.array(x)))
    _close(mx.grad(lambda x: (x.astype(mx.int32) * 2).sum())(mx.array(x)),
           M.grad(lambda x: (x.astype(M.int32) * 2).sum())(M.array(x)))


def test_trees_argnums_argnames():
    p = {"w": _rand(3, 2), "b": [_rand(2), (_rand(2),)]}
    x = _rand(4, 3)

    def loss(m, params, x, scale=1.0):
        h = x @ params["w"] + params["b"][0] * params["b"][1][0]
        return m.mean(h * h) * scale

    def conv(m, tree):
        if isinstance(tree, dict):
            return {k: conv(m, v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(conv(m, v) for v in tree)
        return m.array(tree)

    for kw in ({}, {"argnums": 1}, {"argnums": (0, 1)}, {"argnums": [0]},
               {"argnames": "scale"}, {"argnums": 0, "argnames": ["scale"]},
               {"argnums": [], "argnames": ("scale",)}):
        ours = mx.value_and_grad(lambda *a, **k: loss(mx, *a, **k), **kw)(
            conv(mx, p), mx.array(x), scale=mx.array(2.0))
        theirs = M.value_and_grad(lambda *a, **k: loss(M, *a, **k), **kw)(
            conv(M, p), M.array(x), scale=M.array(2.0))
        _close(ours[0], theirs[0])
        _close(ours[1], theirs[1])


def test_non_array_arguments_pass_through():
    x = mx.array([1.0, 2.0])
    g = mx.grad(lambda x, n, s, none: (x * n).sum() if s == "a" and none is None else None)(
        x, 3, "a", None)
    assert g.tolist() == [3.0, 3.0]


def test_value_and_grad_aux_tuple():
    x = mx.array([1.0, 2.0, 3.0])
    (v, aux), g = mx.value_and_grad(lambda x: (x.sum(), {"x": x * 2}))(x)
    assert v.item() == 6.0 and aux["x"].tolist() == [2.0, 4.0, 6.0]
    assert g.tolist() == [1.0, 1.0, 1.0]


def test_mlp_training_steps_match_mlx():
    shapes = {"l1": {"w": (16, 5), "b": (16,)}, "l2": {"w": (3, 16), "b": (3,)}}
    init = {k: {n: RNG.normal(0, 0.3, s).astype(np.float32) for n, s in v.items()}
            for k, v in shapes.items()}
    x = RNG.normal(size=(8, 5)).astype(np.float32)
    y = RNG.integers(0, 3, 8).astype(np.int32)
    ours = {k: {n: mx.array(a) for n, a in v.items()} for k, v in init.items()}
    theirs = {k: {n: M.array(a) for n, a in v.items()} for k, v in init.items()}
    f_ours = mx.value_and_grad(lambda p, x, y: mlp_loss(mx, p, x, y))
    f_theirs = M.value_and_grad(lambda p, x, y: mlp_loss(M, p, x, y))
    for _ in range(3):
        lo, go = f_ours(ours, mx.array(x), mx.array(y))
        lt, gt = f_theirs(theirs, M.array(x), M.array(y))
        _close(lo, lt)
        _close(go, gt, rtol=1e-4, atol=1e-5)
        ours = {k: {n: ours[k][n] - 0.5 * go[k][n] for n in v} for k, v in ours.items()}
        theirs = {k: {n: theirs[k][n] - 0.5 * gt[k][n] for n in v} for k, v in theirs.items()}
        mx.eval(ours)
    _close(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,fn,inputs", GRAD_OF_GRAD, ids=[c[0] for c in GRAD_OF_GRAD])
def test_grad_of_grad(name, fn, inputs):
    a = mx.array(inputs[0])
    b = M.array(inputs[0])
    ours = mx.grad(lambda x: mx.sum(mx.grad(lambda y: fn(mx, y))(x) ** 2))(a)
    theirs = M.grad(lambda x: M.sum(M.grad(lambda y: fn(M, y))(x) ** 2))(b)
    _close(ours, theirs, rtol=1e-3, atol=1e-4)


def test_vjp_and_jvp_match_mlx():
    xs, ys = _rand(3), _rand(3)
    f = lambda m, x, y: [m.sin(x) * y, m.sum(x * y)]  # noqa: E731
    o1, v1 = mx.vjp(lambda x, y: f(mx, x, y), [mx.array(xs), mx.array(ys)],
                    [mx.ones(3), mx.array(2.0)])
    o2, v2 = M.vjp(lambda x, y: f(M, x, y), [M.array(xs), M.array(ys)],
                   [M.ones(3), M.array(2.0)])
    _close(o1, o2)
    _close(v1, v2)
    t1, t2 = _rand(3), _rand(3)
    o1, j1 = mx.jvp(lambda x, y: f(mx, x, y), [mx.array(xs), mx.array(ys)],
                    [mx.array(t1), mx.array(t2)])
    o2, j2 = M.jvp(lambda x, y: f(M, x, y), [M.array(xs), M.array(ys)],
                   [M.array(t1), M.array(t2)])
    _close(o1, o2)
    _close(j1, j2)
    # jvp through matmul, softmax and a gather.
    g = lambda m, a: [m.softmax(a @ a.T, axis=-1)[m.array([1, 0])]]  # noqa: E731
    a, t = _rand(2, 3), _rand(2, 3)
    _close(mx.jvp(lambda a: g(mx, a), [mx.array(a)], [mx.array(t)])[1],
           M.jvp(lambda a: g(M, a), [M.array(a)], [M.array(t)])[1])
    # Outputs that do not depend on the primals: zeros.
    _close(mx.vjp(lambda x, y: x * 2, [mx.array(xs), mx.array(ys)], [mx.ones(3)])[1],
           M.vjp(lambda x, y: x * 2, [M.array(xs), M.array(ys)], [M.ones(3)])[1])


def test_divmod_has_zero_gradients_like_mlx():
    """MLX's DivMod vjp/jvp are zeros for both operands (a % b alone has the remainder rule)."""
    a, b = _rand(4), np.abs(_rand(4)) + 0.5

    def loss(m):
        return lambda x, y: (m.divmod(x, y)[1] * m.divmod(x, y)[0]).sum() + (x % y).sum()

    _close(mx.grad(loss(mx), argnums=(0, 1))(mx.array(a), mx.array(b)),
           M.grad(loss(M), argnums=(0, 1))(M.array(a), M.array(b)))
    tangents = [np.ones(4, np.float32), np.ones(4, np.float32)]
    _close(mx.jvp(lambda x, y: mx.divmod(x, y), [mx.array(a), mx.array(b)],
                  [mx.array(t) for t in tangents])[1],
           M.jvp(lambda x, y: M.divmod(x, y), [M.array(a), M.array(b)],
                 [M.array(t) for t in tangents])[1])


def test_stop_gradient_blocks_and_constants_get_nothing():
    c = mx.array([1.0, 2.0])
    x = mx.array([3.0, 4.0])
    assert mx.grad(lambda x: mx.sum(mx.stop_gradient(x) * x + c * x))(x).tolist() == [4.0, 6.0]
    assert mx.grad(lambda x: mx.sum(c * 3))(x).tolist() == [0.0, 0.0]


def test_custom_function_vjp_jvp():
    @mx.custom_function
    def f(x, y):
        return mx.sin(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return cotangent * 10, None

    @f.jvp
    def f_jvp(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return dx * 100 + dy

    x, y = mx.array([1.0, 2.0]), mx.array([3.0, 4.0])
    gx, gy = mx.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, y)
    assert gx.tolist() == [10.0, 10.0] and gy.tolist() == [0.0, 0.0]
    _, (t,) = mx.jvp(f, [x, y], [mx.ones(2), mx.ones(2)])
    assert t.tolist() == [101.0, 101.0]
    assert f(x, y).tolist() == pytest.approx((np.sin([1.0, 2.0]) * [3, 4]).tolist(), rel=1e-6)
    assert callable(f.vmap(lambda inputs, axes: None))

    # Captured arrays are constants; a single-argument vjp gets the argument itself.
    def g(x, y):
        @mx.custom_function
        def h(x):
            return x * y

        @h.vjp
        def h_vjp(x, dx, fx):
            assert isinstance(x, mx.array)
            return dx * 7

        return h(x)

    a, b = mx.array(2.0), mx.array(3.0)
    assert mx.grad(g)(a, b).item() == 7.0
    assert mx.grad(g, argnums=1)(a, b).item() == 0.0


def test_custom_function_tree_arguments():
    @mx.custom_function
    def h(d, s=2.0):
        return d["a"] * s

    @h.vjp
    def h_vjp(p, c, o, s=2.0):
        return {"a": c * 7 * s}

    x = mx.array([1.0, 2.0])
    assert mx.grad(lambda x: h({"a": x}).sum())(x).tolist() == [14.0, 14.0]
    assert mx.grad(lambda x: h({"a": x}, s=1.0).sum())(x).tolist() == [7.0, 7.0]


def test_checkpoint_matches_plain_gradient():
    w = _rand(4, 4)
    x = _rand(3, 4)

    def block(w, x):
        return mx.tanh(x @ w) * mx.sigmoid(x)

    plain = mx.grad(lambda w, x: mx.sum(block(w, x) ** 2), argnums=(0, 1))(mx.array(w),
                                                                            mx.array(x))
    ck = mx.checkpoint(block)
    ckd = mx.grad(lambda w, x: mx.sum(ck(w, x) ** 2), argnums=(0, 1))(mx.array(w), mx.array(x))
    _close(ckd, plain)
    mlx_ck = M.checkpoint(lambda w, x: M.tanh(x @ w) * M.sigmoid(x))
    _close(ckd, M.grad(lambda w, x: M.sum(mlx_ck(w, x) ** 2), argnums=(0, 1))(M.array(w),
                                                                             M.array(x)))
    assert ck(mx.array(w), mx.array(x)).shape == (3, 4)


def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None, None


ERRORS = [
    lambda m, x: m.grad(lambda x: x)(x),
    lambda m, x: m.grad(lambda x: x.sum(keepdims=True))(x),
    lambda m, x: m.grad(lambda x: 3.0)(x),
    lambda m, x: m.grad(lambda x: (x.sum(), x))(x),
    lambda m, x: m.value_and_grad(lambda x: [x.sum(), x])(x),
    lambda m, x: m.grad(lambda x: x.sum(), argnums=1)(x),
    lambda m, x: m.grad(lambda x: x.sum(), argnums=-1)(x),
    lambda m, x: m.grad(lambda x: x.sum(), argnums=(0, 0))(x),
    lambda m, x: m.grad(lambda x: x.sum(), argnums=[])(x),
    lambda m, x: m.grad(lambda x, y=None: x.sum(), argnames=["z"])(x, y=x),
    lambda m, x: m.grad(lambda x: x.sum())(3.0),
    lambda m, x: m.grad(lambda x: x[0].sum())([x, None]),
    lambda m, x: m.grad(lambda x: x.sum(), argnums=0.5)(x),
    lambda m, x: m.grad(3),
    lambda m, x: m.grad(lambda x: x.sum(), argnames=3)(x),
    lambda m, x: m.vjp(lambda x: x * 2, [x], [m.ones(2)]),
    lambda m, x: m.vjp(lambda x: (x * 2, x.sum()), [x], [x]),
    lambda m, x: m.vjp(lambda x: x * 2, [1.0], [x]),
    lambda m, x: m.jvp(lambda x: x * 2, [x], []),
    lambda m, x: m.jvp(lambda x: x * 2, [x], [m.ones(2)]),
    lambda m, x: m.checkpoint(3),
    lambda m, x: m.vjp(lambda x: {"a": x}, [x], [x]),
    lambda m, x: m.grad(lambda x: x.at[m.array([0, 1])].multiply(m.array([5.0, 1.0])).sum())(x),
    lambda m, x: m.grad(lambda x: m.take(x, m.argmax(x)).sum())(x),
    lambda m, x: m.grad(lambda x: x[m.argsort(x)].sum())(x),
    lambda m, x: m.grad(lambda x: m.take_along_axis(x, m.argsort(x), axis=0).sum())(x),
    lambda m, x: m.grad(lambda x: m.put_along_axis(x, m.argsort(x)[:1], m.array(0.0),
                                                   axis=0).sum())(x),
    lambda m, x: m.grad(lambda x: x.at[m.argmax(x)].add(1.0).sum())(x),
    # differentiated arguments that hold no array (a module without trainable parameters)
    lambda m, x: m.grad(lambda p, x: x.sum())({}, x),
    lambda m, x: m.value_and_grad(lambda p: m.array(1.0))([]),
    lambda m, x: m.grad(lambda p, x: x.sum(), argnums=(0,))({"a": []}, x),
    lambda m, x: m.grad(lambda p, x=None: 1.0, argnums=[], argnames="x")(x, x={}),
    # rules that are not callables: nanobind's signature error, at definition time
    lambda m, x: m.custom_function(lambda v: v).vjp(3),
    lambda m, x: m.custom_function(lambda v: v).jvp(x),
    lambda m, x: m.custom_function(lambda v: v).vmap(None),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_mlx(i):
    f = ERRORS[i]
    ours = _err(lambda: f(mx, mx.array([1.0, 2.0, 3.0])))
    theirs = _err(lambda: f(M, M.array([1.0, 2.0, 3.0])))
    assert theirs[0] is not None
    assert ours[0] is theirs[0], (ours, theirs)
    # std::bad_cast gets a sentence saying why (dtypes._bad_cast).
    assert ours[1] == theirs[1] or ours[1].startswith(theirs[1] + " ("), (ours, theirs)


def test_stop_gradient_on_indices_allows_them():
    x = [3.0, 1.0, 2.0]
    f = lambda m, x: m.sum(m.take_along_axis(  # noqa: E731
        x, m.stop_gradient(m.argsort(x)), axis=0) * m.arange(3))
    _close(mx.grad(lambda x: f(mx, x))(mx.array(x)), M.grad(lambda x: f(M, x))(M.array(x)))


def test_missing_rule_names_the_primitive():
    x = mx.array([[2.0, 1.0], [1.0, 3.0]])
    # MLX's own text: it has no derivative for the factorizations either
    with pytest.raises(ValueError, match=r"^\[Primitive::vjp\] Not implemented for Inverse\.$"):
        mx.grad(lambda x: mx.linalg.inv(x, stream=mx.cpu).sum())(x)


@pytest.mark.parametrize("name,fn", FFT_CASES, ids=[c[0] for c in FFT_CASES])
def test_fft_grad_matches_mlx(name, fn):
    x = _rand(6)
    _close(mx.grad(lambda a: fn(mx, a))(mx.array(x)), M.grad(lambda a: fn(M, a))(M.array(x)),
           rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name,fn", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_gradients_follow_mlx_convention(name, fn):
    z = (_rand(4) + 1j * _rand(4)).astype(np.complex64)
    _close(mx.grad(lambda a: fn(mx, a))(mx.array(z)), M.grad(lambda a: fn(M, a))(M.array(z)),
           rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,fn,shapes", FAST_HALF, ids=[c[0] for c in FAST_HALF])
def test_fast_ops_half_precision_gradients(name, fn, shapes, dtype):
    ins = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    ours = mx.grad(lambda *a: fn(mx, *a), argnums=(0, 1, 2))(
        *[mx.array(i).astype(getattr(mx, dtype)) for i in ins])
    theirs = M.grad(lambda *a: fn(M, *a), argnums=(0, 1, 2))(
        *[M.array(i).astype(getattr(M, dtype)) for i in ins])
    for a, b in zip(ours, theirs):
        assert a.dtype.name == dtype
        b32 = np.array(b.astype(M.float32))
        scale = 1e-3 + float(np.max(np.abs(b32)))
        assert float(np.max(np.abs(np.array(a.astype(mx.float32)) - b32))) <= 2e-2 * scale


def test_checkpoint_of_a_parameter_tree_like_mlx_nn():
    class Module:
        def __init__(self):
            self.params = {"w": mx.array([3.0, 4.0])}

        def update(self, p):
            self.params = p

    m = Module()

    def inner(params, x):
        m.update(params)
        return {"out": (m.params["w"] * x).sum(), "n": 3}

    ck = mx.checkpoint(inner)
    x = mx.array([1.0, 2.0])
    v, (gp, gx) = mx.value_and_grad(lambda p, x: ck(p, x)["out"] * 2, argnums=(0, 1))(
        {"w": mx.array([3.0, 4.0])}, x)
    assert v.item() == 22.0
    assert gp["w"].tolist() == [2.0, 4.0] and gx.tolist() == [6.0, 8.0]


def test_custom_function_list_argument_and_outputs_like_mlx_nn_distributed():
    def body(m):
        @m.custom_function
        def gather(shards):
            return [s * 2 for s in shards]

        @gather.vjp
        def gather_vjp(shards, cotangents, outputs):
            assert isinstance(cotangents, list) and isinstance(outputs, list)
            return [c * 10 + s for c, s in zip(cotangents, shards)]

        return gather

    xs = [_rand(3), _rand(2)]
    for m, conv in ((mx, mx.array), (M, M.array)):
        g = body(m)
        res = m.grad(lambda a: sum(m.sum(o * o) for o in g(a)))([conv(x) for x in xs])
        if m is mx:
            ours = res
        else:
            theirs = res
    _close(ours, theirs)


def test_transformer_block_gradients_match_mlx():
    D, V = 8, 11
    shapes = {"emb": (V, D), "ln1_w": (D,), "ln1_b": (D,), "qkv": (3 * D, D), "out": (D, D),
              "ln2_w": (D,), "up": (2 * D, D), "down": (D, 2 * D), "head": (V, D)}
    init = {k: RNG.normal(0, 0.4, s).astype(np.float32) for k, s in shapes.items()}
    tokens = RNG.integers(0, V, (2, 5)).astype(np.int32)
    targets = RNG.integers(0, V, (2, 5)).astype(np.int32)
    lo, go = mx.value_and_grad(lambda p, a, b: transformer_loss(mx, p, a, b))(
        {k: mx.array(v) for k, v in init.items()}, mx.array(tokens), mx.array(targets))
    lt, gt = M.value_and_grad(lambda p, a, b: transformer_loss(M, p, a, b))(
        {k: M.array(v) for k, v in init.items()}, M.array(tokens), M.array(targets))
    _close(lo, lt)
    _close(go, gt, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_gradients_round_as_mlx(name):
    """In half dtypes each intermediate of a VJP rule rounds, so the rules follow MLX's own
    formulas: bit for bit against MLX's CPU (mixed-precision training prints these)."""
    rng = np.random.default_rng(5)
    x_np = (rng.random(2000) * 0.8 + 0.1).astype(np.float32)
    y_np = (rng.random(2000) * 0.8 + 0.1).astype(np.float32)
    c_np = rng.standard_normal(2000).astype(np.float32)
    rows = rng.standard_normal((200, 10)).astype(np.float32)
    cases = {
        "rsqrt": lambda m, x, y: m.rsqrt(x), "tanh": lambda m, x, y: m.tanh(x),
        "erf": lambda m, x, y: m.erf(x), "erfinv": lambda m, x, y: m.erfinv(x * 0.9),
        "reciprocal": lambda m, x, y: m.reciprocal(x), "log2": lambda m, x, y: m.log2(x),
        "log10": lambda m, x, y: m.log10(x), "tan": lambda m, x, y: m.tan(x),
        "divide": lambda m, x, y: m.divide(y, x),
        "logsumexp": lambda m, x, y: m.logsumexp(x.reshape(200, 10), axis=-1).reshape(200, 1)
        * m.ones((200, 10), x.dtype),
        "softmax": lambda m, x, y: m.softmax(x.reshape(200, 10), axis=-1,
                                             precise=True).reshape(-1),
    }
    for label, fn in cases.items():
        got = []
        for m in (mx, M):
            dt = getattr(m, name)
            x = m.array(rows.reshape(-1) if label in ("logsumexp", "softmax") else x_np)
            x, y, c = x.astype(dt), m.array(y_np).astype(dt), m.array(c_np).astype(dt)
            _, (g,) = m.vjp(lambda t: fn(m, t, y).reshape(-1), [x], [c])
            got.append(np.array(g.astype(m.float32)))
        np.testing.assert_array_equal(got[0], got[1], err_msg=label)

# ---- rules written term by term as MLX's ----------------------------------------------------

_HALF_EXACT_UNARY = {"tanh": (-5, 5), "tan": (-1.4, 1.4), "erf": (-3, 3), "erfinv": (-0.9, 0.9),
                     "log2": (0.1, 4), "log10": (0.1, 4), "sqrt": (0.1, 4),
                     "reciprocal": (0.2, 4), "exp": (-3, 3), "log1p": (-0.5, 3)}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(_HALF_EXACT_UNARY))
def test_half_precision_unary_gradients_are_bit_exact_with_mlx(op, dtype):
    """In float16/bfloat16 every intermediate is rounded, so the rule's constants, their dtype
    and the order of its products decide the result (erf's vjp differed in a third of the
    elements, which moved a bfloat16 GELU MLP off MLX's loss after four steps)."""
    lo, hi = _HALF_EXACT_UNARY[op]
    rng = np.random.default_rng(len(op))
    x = rng.uniform(lo, hi, 257).astype(np.float32)
    c = rng.standard_normal(257).astype(np.float32)
    got = []
    for m in (mx, M):
        d = getattr(m, dtype)
        g = m.vjp(getattr(m, op), [m.array(x).astype(d)], [m.array(c).astype(d)])[1][0]
        got.append(np.array(g.astype(m.float32)))
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_divide_and_gelu_gradients_are_bit_exact_with_mlx(dtype):
    import mlx.nn as mlx_nn

    import pycudamlx.nn as nn

    rng = np.random.default_rng(9)
    a, b, c = (rng.uniform(0.2, 3, (5, 40)).astype(np.float32) for _ in range(3))
    got = []
    for m, gelu in ((mx, nn.gelu), (M, mlx_nn.gelu)):
        d = getattr(m, dtype)
        A, B, C = (m.array(v).astype(d) for v in (a, b, c))
        ga, gb = m.vjp(m.divide, [A, B], [C])[1]
        gg = m.vjp(gelu, [A - 1.5], [C])[1][0]
        got.append([np.array(g.astype(m.float32)) for g in (ga, gb, gg)])
    for ours, theirs in zip(*got):
        np.testing.assert_array_equal(ours, theirs)


def test_tanh_gradient_keeps_its_precision_where_tanh_saturates():
    """1 - tanh(x)^2 cancels for |x| > 3 in float32 (3e-3 relative at x = 7, 2x at x = 9);
    MLX's 1/cosh(x)^2 does not."""
    x = np.array([0.5, 2.0, 4.0, 5.0, 7.0, 9.0, -8.0], np.float32)
    ours = np.array(mx.grad(lambda v: mx.tanh(v).sum())(mx.array(x)))
    theirs = np.array(M.grad(lambda v: M.tanh(v).sum())(M.array(x)))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6)
    np.testing.assert_allclose(ours, 1 / np.cosh(x.astype(np.float64)) ** 2, rtol=1e-5)


def test_logaddexp_gradient_is_mlx_sigmoid_form():
    a = np.array([0.0, 30.0, -30.0, 1e-3, 5.0], np.float32)
    b = np.array([0.0, -30.0, 30.0, 0.0, 4.0], np.float32)
    ours = mx.vjp(mx.logaddexp, [mx.array(a), mx.array(b)], [mx.ones(5)])[1]
    theirs = M.vjp(M.logaddexp, [M.array(a), M.array(b)], [M.ones(5)])[1]
    _close(list(ours), list(theirs), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_shared_node_cotangents_add_up_in_mlx_order(dtype):
    """A node used several times gets its cotangents summed in the order MLX's walk reaches
    its consumers (inputs first to last); in half dtypes each sum rounds, so another order
    moved a GroupNorm's gradient (x feeds the centring, the mean and the variance)."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 18, 3)).astype(np.float32)
    t = rng.uniform(size=(4, 18, 3)).astype(np.float32)

    def group_norm(m, z, w):
        mean = m.mean(z, axis=1, keepdims=True)
        var = m.var(z, axis=1, keepdims=True)
        return (((z - mean) * m.rsqrt(var + 1e-5)) * w).sum() + (m.exp(z) * z).sum() * 0.01

    got = []
    for m in (mx, M):
        d = getattr(m, dtype)
        X, T = m.array(x).astype(d), m.array(t).astype(d)
        g = m.grad(lambda z: group_norm(m, z, T))(X)
        got.append(np.array(g.astype(m.float32)))
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_logsumexp_gradient_over_other_axes_is_mlx_composition(dtype):
    """Over axes other than the last alone MLX's logsumexp is composed of primitives, so its
    gradient is (ct / sum) * exp(x - max) rounded step by step, not the fused softmax."""
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((5, 6, 7)) * 3).astype(np.float32)
    for axes in ((1, 2), (0,), None, (2,)):
        shape = np.zeros(x.shape).sum(axis=axes).shape
        c = rng.standard_normal(shape).astype(np.float32)
        got = []
        for m in (mx, M):
            d = getattr(m, dtype)
            ct = m.array(c).astype(d)
            g = m.vjp(lambda z: m.logsumexp(z, axis=axes), [m.array(x).astype(d)], [ct])[1][0]
            got.append(np.array(g.astype(m.float32)))
        np.testing.assert_array_equal(got[0], got[1], err_msg=str(axes))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("mask", [None, "causal", "additive", "bool"])
def test_half_sdpa_gradients_are_mlx_fallback_on_the_cpu(dtype, mask):
    """MLX's CPU differentiates its attention fallback in the half dtype (scale, q @ k^T,
    mask, precise softmax, @ v, each rounding): a float32 recomputation was an ulp off in
    most elements of dq, dk and dv (grouped-query heads included)."""
    rng = np.random.default_rng(14)
    q, c = (rng.standard_normal((2, 4, 7, 8)).astype(np.float32) for _ in range(2))
    k, v = (rng.standard_normal((2, 2, 9, 8)).astype(np.float32) for _ in range(2))
    add = rng.standard_normal((7, 9)).astype(np.float32)
    keep = rng.random((7, 9)) > 0.3
    keep[:, 0] = True
    got = []
    for m in (mx, M):
        d = getattr(m, dtype)
        mk = {None: None, "causal": "causal", "additive": m.array(add).astype(d),
              "bool": m.array(keep)}[mask]
        args = [m.array(a).astype(d) for a in (q, k, v)]
        gs = m.vjp(lambda a, b, e: m.fast.scaled_dot_product_attention(a, b, e, scale=0.35,
                                                                       mask=mk),
                   args, [m.array(c).astype(d)])[1]
        got.append([np.array(g.astype(m.float32)) for g in gs])
    for o, t in zip(*got):
        np.testing.assert_array_equal(o, t)

def test_power_exponent_gradient_is_zero_where_the_power_is_zero():
    """MLX takes a^b log(a) as 0 where a^b == 0 (0^b, b > 0): no NaN from 0 * log(0)."""
    base = np.array([0.0, 0.0, 2.0, -1.0, 0.0], np.float32)
    exp = np.array([1.0, 2.5, 2.0, 2.0, -1.0], np.float32)
    for dtype in ("float32", "float16"):
        ours = mx.grad(lambda p: mx.power(mx.array(base).astype(getattr(mx, dtype)), p).sum())(
            mx.array(exp).astype(getattr(mx, dtype)))
        theirs = M.grad(lambda p: M.power(M.array(base).astype(getattr(M, dtype)), p).sum())(
            M.array(exp).astype(getattr(M, dtype)))
        np.testing.assert_array_equal(np.isnan(_np(ours)), np.isnan(_np(theirs)))
        _close(ours, theirs, rtol=1e-3, atol=1e-3)


def test_vjp_ignores_extra_cotangents_and_refuses_too_few():
    """MLX zips outputs with cotangents: extra cotangents (any shape) are ignored; fewer than
    the outputs is a ValueError."""
    for m in (M, mx):
        outs, grads = m.vjp(lambda a: a * 2, [m.ones(2)], [m.full((2,), 3.0), m.ones(3)])
        np.testing.assert_array_equal(np.array(grads[0]), [6.0, 6.0])
    msgs = []
    for m in (M, mx):
        with pytest.raises(ValueError) as info:
            m.vjp(lambda a: (a, a), [m.ones(2)], [m.ones(2)])
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("index", [0, -1, "rows", "step", "rev"])
@pytest.mark.parametrize("op", ["multiply", "divide"])
def test_at_multiply_divide_with_basic_indices_differentiates_like_mlx(index, op):
    """MLX writes x[i] * v back as a slice update when no index is an array: differentiable
    there (only an index array makes it an undifferentiable scatter_prod)."""
    def fn(m, a, b):
        idx = {"rows": slice(0, 2), "step": (slice(None), slice(None, None, 2)),
               "rev": (1, slice(None, None, -1))}.get(index, index)
        v = b[:2] if index == "step" else b
        return (getattr(a.at[idx], op)(v) * m.arange(4)).sum()

    a = _rand(3, 4)
    b = _rand(4, lo=0.5, hi=2.0)
    ours = mx.grad(lambda *x: fn(mx, *x), argnums=(0, 1))(mx.array(a), mx.array(b))
    theirs = M.grad(lambda *x: fn(M, *x), argnums=(0, 1))(M.array(a), M.array(b))
    _close(ours, theirs)


@pytest.mark.parametrize("name", ["mul", "sin", "softmax", "neg", "matmul", "chain"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_jvp_float32_tangents_of_a_half_function_are_float32_as_mlx(name, dtype):
    """mx.ones(shape) tangents (float32) for a half-precision function: MLX's tangents promote
    through each jvp, so the output tangents are float32."""
    fns = {"mul": lambda m, v: v * v, "sin": lambda m, v: m.sin(v),
           "softmax": lambda m, v: m.softmax(v), "neg": lambda m, v: -v,
           "matmul": lambda m, v: v @ v, "chain": lambda m, v: m.exp(m.sin(v) * v).sum()}
    x = _rand(5)
    t = _rand(5)
    ours = mx.jvp(lambda v: fns[name](mx, v), [mx.array(x).astype(getattr(mx, dtype))],
                  [mx.array(t)])
    theirs = M.jvp(lambda v: fns[name](M, v), [M.array(x).astype(getattr(M, dtype))],
                   [M.array(t)])
    _close(ours[0], theirs[0], rtol=1e-2, atol=1e-2)
    _close(ours[1], theirs[1], rtol=2e-2, atol=2e-2)


# ---- in-place updates of the differentiated inputs -------------------------------------


def _setitem_then_sum(lib):
    def f(x, idx):
        x[idx] = 2.0  # overwrites the traced input: the gradient is still w.r.t. the input
        return x.sum()
    return f


def test_grad_sees_through_inplace_update_of_input():
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    idx = np.array([1, 3])
    ours = mx.grad(_setitem_then_sum(mx))(mx.array(x), mx.array(idx))
    theirs = M.grad(_setitem_then_sum(M))(M.array(x), M.array(idx))
    assert ours.dtype == mx.float32
    _close(ours, theirs)
    np.testing.assert_array_equal(np.array(ours), [1.0, 0.0, 1.0, 0.0])


def test_vjp_of_slice_update_of_input():
    def f(lib):
        def g(a, b):
            a[3:0:-2] = b
            return a * 3.0
        return g

    a = np.arange(1.0, 5.0, dtype=np.float32)
    b = np.array([7.0, 8.0], np.float32)
    ct = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    _, (ga, gb) = mx.vjp(f(mx), [mx.array(a), mx.array(b)], [mx.array(ct)])
    _, (ra, rb) = M.vjp(f(M), [M.array(a), M.array(b)], [M.array(ct)])
    _close(ga, ra)
    _close(gb, rb)
    # the caller's arrays keep their values
    x = mx.array(a)
    mx.grad(lambda x: f(mx)(x, mx.array(b)).sum())(x)
    np.testing.assert_array_equal(np.array(x), a)


def _mutating_loss(lib):
    def loss(model):
        model[1] = lib.array(2.0)  # stored into the caller's list, as in MLX
        return model[0] * 3.0
    return loss


def test_grad_passes_the_callers_list_and_restores_untouched_leaves():
    ours = [mx.array(1.0), mx.array(1.0)]
    theirs = [M.array(1.0), M.array(1.0)]
    first = id(ours[0])
    g_ours = mx.grad(_mutating_loss(mx))(ours)
    g_theirs = M.grad(_mutating_loss(M))(theirs)
    assert id(ours[0]) == first  # the caller's array object is back
    assert [a.item() for a in ours] == [a.item() for a in theirs] == [1.0, 2.0]
    assert [a.item() for a in g_ours] == [a.item() for a in g_theirs] == [3.0, 0.0]


def test_grad_keeps_a_dict_leaf_updated_in_place():
    def loss(p):
        p["extra"] = 1
        p["w"][0] = 5.0
        return (p["w"] * 2.0).sum()

    ours = {"w": mx.array([1.0, 2.0])}
    theirs = {"w": M.array([1.0, 2.0])}
    g_ours = mx.grad(loss)(ours)
    g_theirs = M.grad(loss)(theirs)
    assert sorted(ours) == sorted(theirs) == ["extra", "w"]
    np.testing.assert_array_equal(np.array(ours["w"]), np.array(theirs["w"]))
    np.testing.assert_array_equal(np.array(g_ours["w"]), np.array(g_theirs["w"]))


def _affine_custom(lib):
    @lib.custom_function
    def f(x, y):
        return x * y, x + y

    @f.jvp
    def f_jvp(primals, tangents):  # affine in the tangents: the constants must survive
        x, y = primals
        tx, ty = tangents
        return (x * ty + y * tx + 0.5, tx + ty - 1.0)

    return f


def test_custom_jvp_with_constant_term():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([0.5, -1.0, 2.0], np.float32)
    tx = np.array([1.0, 0.0, 2.0], np.float32)
    ty = np.array([0.0, 1.0, 1.0], np.float32)
    for body in (lambda lib, f: (lambda a, b: f(a, b)),
                 lambda lib, f: (lambda a, b: lib.sin(f(a, b)[0]) * f(a, b)[1])):
        results = []
        for lib in (mx, M):
            f = _affine_custom(lib)
            _, tangents = lib.jvp(body(lib, f), [lib.array(x), lib.array(y)],
                                  [lib.array(tx), lib.array(ty)])
            results.append(tangents)
        assert len(results[0]) == len(results[1])
        for ours, theirs in zip(*results):
            _close(ours, theirs)


def test_grad_with_respect_to_a_module_argument_passes_the_module():
    import pycudamlx.nn as pnn

    mnn = pytest.importorskip("mlx.nn")
    results = []
    for lib, nn_mod in ((mx, pnn), (M, mnn)):
        lib.random.seed(0)
        model = nn_mod.Linear(2, 1)
        weight = model.weight
        seen = []

        def loss(mod, x):
            seen.append(isinstance(mod, nn_mod.Module))
            return mod(x).sum()  # callable: MLX hands fun the module itself

        g = lib.grad(loss)(model, lib.ones((3, 2)))
        assert type(g) is dict and seen == [True]
        assert model.weight is weight  # the caller's parameters are put back
        results.append(np.array(g["weight"]))
    np.testing.assert_allclose(results[0], results[1])


@pytest.mark.parametrize("x_shape", [(5, 7), (3, 5, 7)])
def test_the_weight_gradient_of_x_at_w_transposed_is_row_major(x_shape):
    # nn.Linear's x @ W.T: W's gradient comes out in W's own layout, so an optimizer's
    # elementwise update reads it in rows (on the GPU: dense kernels, not column reads).
    x = RNG.normal(size=x_shape).astype(np.float32)
    w = RNG.normal(size=(11, 7)).astype(np.float32)

    def f(m, w, x):
        return m.sum((x @ w.T) * m.arange(11))

    ours = mx.grad(lambda w: f(mx, w, mx.array(x)))(mx.array(w))
    theirs = M.grad(lambda w: f(M, w, M.array(x)))(M.array(w))
    _close(ours, theirs)
    mx.eval(ours)
    assert ours._data.flags["C_CONTIGUOUS"]


# jvp's tangent dtypes: MLX runs forward mode primitive by primitive, so a comparison's tangent
# is zeros of the input tangent's dtype, astype casts the tangent, float math promotes it.
_JVP_DTYPE_CASES = {
    "greater": lambda M: lambda x: x > 0,
    "equal_f16": lambda M: lambda x: x.astype(M.float16) == 0,
    "isnan": lambda M: lambda x: M.isnan(x),
    "isinf": lambda M: lambda x: M.isinf(x),
    "isposinf": lambda M: lambda x: M.isposinf(x),
    "logical_not": lambda M: lambda x: M.logical_not(x > 0),
    "logical_and": lambda M: lambda x: M.logical_and(x > 0, x < 1),
    "xor": lambda M: lambda x: (x > 0) ^ (x < 0),
    "sum_of_bool": lambda M: lambda x: M.sum(x > 0, axis=1),
    "any": lambda M: lambda x: M.any(x > 0),
    "cumsum_of_bool": lambda M: lambda x: M.cumsum(x > 0, axis=1),
    "sort_of_bool": lambda M: lambda x: M.sort(x > 0),
    "argsort": lambda M: lambda x: M.argsort(x),
    "argmax": lambda M: lambda x: M.argmax(x),
    "stack_of_bool": lambda M: lambda x: M.stack([x > 0, x < 0]),
    "reshape_of_bool": lambda M: lambda x: (x > 0).reshape(-1),
    "maximum_of_bool": lambda M: lambda x: M.maximum(x > 0, x < 0),
    "where_int": lambda M: lambda x: M.where(x > 0, 1, 2),
    "where_float": lambda M: lambda x: M.where(x > 0, x, 0),
    "astype_int": lambda M: lambda x: x.astype(M.int32),
    "astype_int_cmp": lambda M: lambda x: x.astype(M.int32) > 0,
    "astype_f16_mul": lambda M: lambda x: x.astype(M.float16) * 2,
    "mul_astype_f16": lambda M: lambda x: (x * 2).astype(M.float16),
    "bool_astype_bf16": lambda M: lambda x: (x > 0).astype(M.bfloat16),
    "floor": lambda M: lambda x: M.floor(x),
}


@pytest.mark.parametrize("primal", ["float32", "float16"])
@pytest.mark.parametrize("case", list(_JVP_DTYPE_CASES))
def test_jvp_tangent_dtypes_match_mlx(case, primal):
    M = pytest.importorskip("mlx.core")
    got = []
    for lib in (mx, M):
        x = lib.array([[1.5, -2.0, 0.0], [3.0, 0.5, -1.0]], getattr(lib, primal))
        t = lib.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # float32 tangents
        out, jv = lib.jvp(_JVP_DTYPE_CASES[case](lib), [x], [t])
        j = jv[0]
        got.append((str(j.dtype).rsplit(".", 1)[-1], tuple(j.shape),
                    np.array(j.astype(lib.float32)).tolist()))
    assert got[0] == got[1]


def test_jvp_of_a_deep_function():
    """The tangent-dtype walk is iterative: thousands of traced ops deep is fine."""
    def f(x):
        for _ in range(3000):
            x = x * 1.0001
        return x > 0, x

    _, (cmp, val) = mx.jvp(f, [mx.array([1.0])], [mx.array([1.0])])
    assert cmp.dtype == mx.float32 and cmp.tolist() == [0.0]
    np.testing.assert_allclose(val.tolist(), [1.0001 ** 3000], rtol=1e-3)
