"""mx.compile (trace cache: the body runs once per trace signature), stop_gradient, and the names
not provided yet."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pycudamlx.core as mx


def test_compile_gives_the_functions_results_as_decorator_and_with_state():
    @mx.compile
    def f(x, y):
        return mx.exp(x) * y, x.sum()

    x, y = mx.array([0.5, 1.5]), mx.array([2.0, 3.0])
    a, b = f(x, y)
    np.testing.assert_allclose(np.array(a), np.exp([0.5, 1.5]) * [2.0, 3.0], rtol=1e-6)
    assert b.item() == 2.0 and f.__name__ == "f"

    state = [mx.array(1.0)]

    @functools.partial(mx.compile, inputs=state, outputs=state)
    def step(x):
        state[0] = state[0] * x
        return state[0]

    step(mx.array(3.0))
    assert step(mx.array(2.0)).item() == 6.0 and state[0].item() == 6.0
    assert mx.compile(lambda x: x + 1, shapeless=True)(mx.array([1]))[0].item() == 2
    mx.disable_compile()
    mx.enable_compile()


def _random_draws_through_compile(m):
    """What a program sees from random draws inside compiled functions (run with ``m`` as
    ``mlx.core``): MLX's trace makes them constants unless ``mx.random.state`` is captured."""
    m.random.seed(0)
    x = m.ones((3,))
    seen = []
    frozen = m.compile(lambda x: x * m.random.uniform(shape=x.shape))
    seen += [frozen(x), frozen(x), frozen(x + 1)]  # one trace: the same draws
    seen.append(frozen(m.ones((2,))))  # new shapes, a new trace: new draws
    seen.append(frozen(x))  # the first trace again
    seen.append(m.random.uniform(shape=(2,)))  # the key advanced once per trace
    state = m.random.state
    fresh = m.compile(lambda x: x * m.random.uniform(shape=x.shape), inputs=state,
                      outputs=state)
    seen += [fresh(x), fresh(x)]  # the key is an input: fresh draws
    scaled = m.compile(lambda x, s=1, **kw: x * s + m.random.normal(x.shape))
    seen += [scaled(x, 2), scaled(x, 2), scaled(x, 3), scaled(x, 2.0), scaled(x, s=2),
             scaled(x, True), scaled(x, 1), scaled(x, 2, flag="a"), scaled(x, 2, flag="b"),
             scaled(x.astype(m.float16), 2), scaled(x, m.array(2)), scaled(x, m.array(3))]
    pair = m.compile(lambda t: t[0] + t[1]["a"] + m.random.uniform())
    seen += [pair((x, {"a": x})), pair([x, {"a": x}])]  # lists and tuples key alike
    captured = {"a": m.ones((2,))}
    reads = m.compile(lambda x: x + captured["a"].sum() + m.random.uniform(), inputs=captured)
    seen.append(reads(x))
    captured["a"] = m.ones((3,))  # captured shapes are part of the key: a new trace
    seen += [reads(x), reads(x)]
    captured["b"] = m.zeros((1,))  # so is the captured tree's structure
    seen.append(reads(x))
    m.disable_compile()
    seen += [frozen(x), frozen(x)]  # compiled functions run eagerly: fresh draws
    m.enable_compile()
    seen.append(m.random.uniform(shape=(2,)))
    return [np.array(a) for a in seen]


def test_random_draws_in_compiled_functions_repeat_per_trace_as_in_mlx():
    mlx = pytest.importorskip("mlx.core")
    theirs = _random_draws_through_compile(mlx)
    ours = _random_draws_through_compile(mx)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"draw {i}")


def test_compile_rejects_arguments_that_are_not_trees_of_arrays_or_constants():
    mlx = pytest.importorskip("mlx.core")
    for bad in (np.ones(2), object(), 1 + 2j, b"ab", [object()]):
        for m in (mlx, mx):
            f = m.compile(lambda x, o=None, **kw: x + 1)
            with pytest.raises(ValueError, match=r"\[compile\] Function arguments must be trees "
                               r"of arrays or constants \(floats, ints, strings, or None\), but "
                               f"received type {type(np.ravel(bad)[0] if isinstance(bad, list) else bad).__name__}"):
                f(m.ones(1), bad)
            with pytest.raises(ValueError, match=r"\[compile\] Function arguments"):
                f(m.ones(1), z=bad)
        # objects in the captured inputs are ignored
        assert mx.compile(lambda x: x + 1, inputs=[object(), 3])(mx.ones(1)).item() == 2


def test_compile_refuses_what_is_not_callable_as_mlx():
    mlx = pytest.importorskip("mlx.core")
    with pytest.raises(TypeError) as theirs:
        mlx.compile(3)
    with pytest.raises(TypeError) as ours:
        mx.compile(3)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


def test_stop_gradient_is_a_new_array_with_the_same_values():
    a = mx.array([1, 2, 3], dtype=mx.int16)
    b = mx.stop_gradient(a)
    a += 1
    assert b.dtype == mx.int16 and b.tolist() == [1, 2, 3] and a.tolist() == [2, 3, 4]
    with pytest.raises(TypeError, match="stop_gradient"):
        mx.stop_gradient(3)


def test_names_not_implemented_yet_say_so_and_stay_attribute_errors(monkeypatch):
    import pycudamlx.core as core

    monkeypatch.setitem(core._NOT_YET_AREA, "some_future_name", "future")
    with pytest.raises(AttributeError,
                       match=r"mx\.some_future_name is not implemented in pycudamlx yet"):
        mx.some_future_name  # noqa: B018
    assert not hasattr(mx, "some_future_name")
    assert hasattr(mx, "export_function") and hasattr(mx, "import_function")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mx.no_such_name  # noqa: B018


def _eval_inside_compile_cases(m):
    """(name, thunk) pairs: evaluation inside a compiled function, as programs write it."""
    x = m.array([1.0, 2.0])
    state = {"w": m.array([3.0])}
    const = m.array([5.0]) * 2  # built outside, lazy: a constant of the trace
    run = lambda fn: m.compile(fn)(x)  # noqa: E731
    return [
        ("item", lambda: run(lambda v: v.sum().item())),
        ("tolist", lambda: run(lambda v: v.tolist())),
        ("if", lambda: run(lambda v: v if v.sum() > 0 else -v)),
        ("float", lambda: run(lambda v: float(v[0]))),
        ("eval", lambda: run(lambda v: (m.eval(v * 2), v)[1])),
        ("async_eval", lambda: run(lambda v: (m.async_eval(v), v)[1])),
        ("numpy", lambda: run(lambda v: np.array(v))),
        ("repr", lambda: run(lambda v: (repr(v + 1), v)[1])),
        ("format", lambda: run(lambda v: f"{v.sum():.2f}")),
        ("captured state", lambda: functools.partial(m.compile, inputs=state)(
            lambda v: v * state["w"].item())(x)),
        ("nested", lambda: m.compile(lambda v: m.compile(lambda u: u * 2)(v).sum().item())(x)),
        ("grad inside", lambda: run(lambda v: m.grad(lambda u: (u * u).sum())(v).sum().item())),
        ("constant item", lambda: run(lambda v: v + (m.array(3) + 1).item())),
        ("closure item", lambda: run(lambda v: v + const.sum().item())),
        ("constant eval", lambda: run(lambda v: (m.eval(m.array(2) * 2), v)[1])),
        ("shape", lambda: run(lambda v: v.shape)),
        ("after", lambda: (run(lambda v: v * 2), x.sum().item())[1]),
        ("vmap item", lambda: m.vmap(lambda v: v * v.sum().item())(m.ones((2, 2)))),
        ("grad item", lambda: m.grad(lambda v: (v * v.sum().item()).sum())(x)),
    ]


def _outcome(thunk):
    try:
        out = thunk()
    except Exception as e:  # noqa: BLE001 - the exception is the outcome
        return type(e).__name__, str(e)
    return "ok", repr(out) if not isinstance(out, np.ndarray) else out.tolist()


def test_evaluating_traced_values_inside_compile_raises_as_in_mlx():
    """MLX traces compiled functions with value-less inputs: evaluating what depends on them
    (.item(), if, print, mx.eval, np.array) is its ValueError; constants still evaluate, and
    outside compile (or under grad) everything does."""
    mlx = pytest.importorskip("mlx.core")
    ours = _eval_inside_compile_cases(mx)
    theirs = _eval_inside_compile_cases(mlx)
    for (name, a), (_, b) in zip(ours, theirs):
        assert _outcome(a) == _outcome(b), name
    mx.disable_compile()
    try:
        assert mx.compile(lambda v: v.sum().item())(mx.array([1.0, 2.0])) == 3.0
    finally:
        mx.enable_compile()


def _async_eval_in_transform_cases(m):
    """(name, thunk) pairs: mx.async_eval inside grad/vjp/jvp/vmap/compile/checkpoint."""
    def traced(x):  # schedules an array derived from the transformation's input
        y = x + 1.0
        m.async_eval(y)
        return m.exp(y)

    def constant(x):  # only arrays that do not depend on the input
        z = m.array(2.0) + 1
        m.async_eval(z)
        m.async_eval()
        m.async_eval([], {"a": z})
        return x * z

    def stopped(x):  # stop_gradient's output still depends on the input
        m.async_eval(m.stop_gradient(x) + 1)
        return x * 2

    def outer_in_inner(x):  # an outer trace's array scheduled inside an inner trace
        y = x * 3
        return m.grad(lambda u: (m.async_eval(y), (u * u).sum())[1])(x) + y

    one, ones = m.array(1.0), m.ones((2, 2))
    return [
        ("grad", lambda: m.grad(traced)(one)),
        ("value_and_grad", lambda: m.value_and_grad(traced)(one)),
        ("vjp", lambda: m.vjp(traced, [one], [one])),
        ("jvp", lambda: m.jvp(traced, [one], [one])),
        ("vmap", lambda: m.vmap(traced)(ones)),
        ("compile", lambda: m.compile(traced)(one)),
        ("checkpoint", lambda: m.grad(m.checkpoint(traced))(one)),
        ("custom_function", lambda: m.grad(m.custom_function(traced))(one)),
        ("stop_gradient", lambda: m.grad(stopped)(one)),
        ("outer in inner", lambda: m.grad(lambda v: outer_in_inner(v).sum())(one)),
        ("grad constant", lambda: m.grad(constant)(one)),
        ("vmap constant", lambda: m.vmap(constant)(m.ones((2,)))),
        ("after", lambda: traced(one)),
        ("eval inside grad", lambda: m.grad(lambda v: (m.eval(v * 3), m.exp(v))[1])(one)),
    ]


def test_async_eval_inside_transforms_raises_as_in_mlx():
    """MLX refuses to schedule a tracer: async_eval of anything derived from a grad/vjp/jvp/
    vmap/compile input is ValueError "[async_eval] Not allowed inside a graph
    transformation." (mx.eval under grad still evaluates); constants are scheduled."""
    mlx = pytest.importorskip("mlx.core")
    for (name, a), (_, b) in zip(_async_eval_in_transform_cases(mx),
                                 _async_eval_in_transform_cases(mlx)):
        assert _outcome(a) == _outcome(b), name


def _trace_cache_effects(m):
    """What a program observes of MLX's trace cache: how often the body runs, captured state
    written back, closure-read arrays baked in, grads and multi-output ops inside, repeats."""
    import mlx.nn as mnn  # noqa: F401 - only for the module case below (either framework)

    calls = []

    def body(x, s=1.0):
        calls.append(tuple(x.shape))
        q, r = m.divmod(x * s + 3.0, 2.0)
        parts = m.split(m.concatenate([x, x]), 2)
        return q + r + parts[1], m.grad(lambda v: (m.sin(v) * s).sum())(x)

    f = m.compile(body)
    seen = []
    for x, s in [([1.0, 2.0], 1.0), ([3.0, 5.0], 1.0), ([1.0, 2.0, 3.0], 1.0), ([4.0, 1.0], 2.0),
                 ([0.5, 0.25], 1.0), ([0.5, 0.25], 2.0)]:
        a, g = f(m.array(x), s)
        seen += [a, g]
    counts = [len(calls)]
    calls.clear()
    free = m.compile(lambda x: calls.append(1) or m.exp(x) * 2, shapeless=True)
    for n in (2, 2, 1):
        seen.append(free(m.ones((n, 3))))
    counts.append(len(calls))

    state = {"total": m.array(0.0), "n": [m.array(0)]}

    @functools.partial(m.compile, inputs=state, outputs=state)
    def accumulate(v):
        calls.append(1)
        state["total"] = state["total"] + v.sum()
        state["n"][0] = state["n"][0] + v.size
        return state["total"] / state["n"][0]

    calls.clear()
    for v in ([1.0, 2.0], [3.0, 5.0], [0.5, 0.5]):
        seen.append(accumulate(m.array(v)))
    seen += [state["total"], state["n"][0]]
    counts.append(len(calls))

    w = m.array([1.0, 2.0])
    keep = w
    scaled = m.compile(lambda x: x * w)
    seen.append(scaled(m.array([3.0, 4.0])))
    w = m.array([10.0, 10.0])  # the trace keeps the array it read (still alive: ``keep``)
    seen.append(scaled(m.array([3.0, 4.0])))
    twice = m.compile(lambda a, b: a * 2 + b)
    x = m.array([1.0, 2.0])
    seen += [twice(x, x), twice(x, m.array([5.0, 5.0])), twice(x, x)]
    del keep
    return [np.array(a) for a in seen], counts


def test_compiled_body_runs_once_per_trace_and_replays_like_mlx():
    mlx = pytest.importorskip("mlx.core")
    for m in (mlx, mx):  # MLX traces its first compiled call of a process twice
        m.compile(lambda v: v)(m.ones(1))
    theirs, their_counts = _trace_cache_effects(mlx)
    ours, our_counts = _trace_cache_effects(mx)
    # MLX 0.32.4 gives [3, 1, 1] in a fresh process (shapeless traces once per ndim), at times
    # more traces (its cache is keyed by function ids, which Python reuses).
    assert our_counts == [3, 1, 1] and their_counts[2] == 1
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_compiled_calls_inside_transforms_run_their_body():
    calls = []

    def body(x):
        calls.append(1)
        return (x * x).sum()

    f = mx.compile(body)
    x = mx.array([1.0, 2.0])
    g = [mx.grad(f)(x), mx.grad(f)(x)]
    v = mx.vmap(f)(mx.ones((3, 2)))
    assert len(calls) == 3
    np.testing.assert_allclose(np.array(g[1]), [2.0, 4.0])
    np.testing.assert_allclose(np.array(v), [2.0, 2.0, 2.0])


def _argument_stand_ins(m):
    """MLX traces with stand-ins for array arguments: in-place updates of an argument inside
    stay inside, and a closure reading an array also passed as an argument is refused."""
    z = m.array([1.0, 2.0])

    def mutate(a):
        a[0] = 9.0
        return a * 2

    out = m.compile(mutate)(z)
    x = m.array([1.0, 2.0])
    try:
        m.compile(lambda a: a + x)(x)
        err = None
    except ValueError as e:
        err = str(e)
    y = m.array([3.0, 4.0])
    ok = m.compile(lambda a: a + y)(y * 1)  # another array with the same values: fine
    return np.array(out), np.array(z), err, np.array(ok)


def test_compiled_body_gets_stand_ins_for_array_arguments_as_mlx():
    mlx = pytest.importorskip("mlx.core")
    ours, theirs = _argument_stand_ins(mx), _argument_stand_ins(mlx)
    assert ours[2] == theirs[2] and "uncaptured inputs" in ours[2]
    for a, b in zip(ours[:2] + ours[3:], theirs[:2] + theirs[3:]):
        np.testing.assert_array_equal(a, b)


def test_compile_refuses_a_shapeless_that_is_not_a_bool_as_mlx():
    mlx = pytest.importorskip("mlx.core")
    for bad in (1, np.bool_(True), None):
        errors = []
        for m in (mx, mlx):
            with pytest.raises(TypeError) as info:
                m.compile(lambda a: a, shapeless=bad)
            errors.append(str(info.value))
        assert errors[0] == errors[1]


# ---- a captured mx.random.state: traced once, replayed with fresh keys -----------------


def _dropout_training(lib, nn_mod, optim_mod):
    """Five compiled steps of a model with dropout, mx.random.state captured (the common
    MLX training-loop pattern); returns (losses, extra draws, body runs, final key)."""
    lib.random.seed(0)
    model = nn_mod.Sequential(nn_mod.Linear(3, 16), nn_mod.ReLU(), nn_mod.Dropout(0.3),
                              nn_mod.Linear(16, 1))
    opt = optim_mod.SGD(0.05)
    lvg = nn_mod.value_and_grad(model, lambda m, x, y: nn_mod.losses.mse_loss(m(x), y))
    state = [model.state, opt.state, lib.random.state]
    runs = [0]

    @functools.partial(lib.compile, inputs=state, outputs=state)
    def step(x, y):
        runs[0] += 1
        loss, grads = lvg(model, x, y)
        opt.update(model, grads)
        return loss, lib.random.uniform(shape=(2,))

    x = lib.random.normal((16, 3))
    y = x.sum(-1, keepdims=True)
    losses, draws = [], []
    for _ in range(5):
        loss, noise = step(x, y)
        losses.append(loss.item())
        draws.append(noise.tolist())
    return losses, draws, runs[0], lib.random.state[0].tolist()


def test_compile_with_random_state_replays_with_fresh_keys():
    import pycudamlx.nn as pnn
    import pycudamlx.optimizers as poptim

    m = pytest.importorskip("mlx.core")
    mnn = pytest.importorskip("mlx.nn")
    moptim = pytest.importorskip("mlx.optimizers")
    ours = _dropout_training(mx, pnn, poptim)
    theirs = _dropout_training(m, mnn, moptim)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[3] == theirs[3]  # the global key advanced exactly as in MLX
    assert ours[2] <= 2  # traced, then replayed (MLX: 1, or 2 on a process's first call)
    assert len({tuple(d) for d in ours[1]}) == 5  # fresh draws at every replay


def test_shapeless_compile_reruns_one_trace_per_ndim_as_mlx():
    """A shapeless trace rerun at other shapes: the body is not run again (a closure's new
    value is not seen, as in MLX 0.32.4, checked by hand: MLX's compile cache is keyed by
    function ids, which pytest's earlier tests free and Python reuses, so it is not run here),
    and elementwise ops, reductions, arg-reductions and matmul follow the new shapes."""
    y = 1
    calls = []

    def fun(x, w):
        calls.append(1)
        h = mx.softmax(x @ w, axis=-1) + y
        return h.sum(axis=0, keepdims=True), mx.argmax(h, axis=1), mx.exp(x).mean()

    def reference(x, w):
        s = x @ w
        e = np.exp(s - s.max(-1, keepdims=True))
        h = e / e.sum(-1, keepdims=True) + 1  # y as traced
        return h.sum(0, keepdims=True), h.argmax(1), np.exp(x).mean()

    f = mx.compile(fun, shapeless=True)
    rng = np.random.default_rng(0)
    for n, k in ((3, 4), (5, 4), (2, 6), (3, 4)):
        x = rng.standard_normal((n, k)).astype(np.float32)
        w = rng.standard_normal((k, 2)).astype(np.float32)
        got = f(mx.array(x), mx.array(w))
        for g, r in zip(got, reference(x, w)):
            assert g.shape == np.shape(r)
            np.testing.assert_allclose(np.array(g), r, rtol=1e-5, atol=1e-6)
        y = 2
    assert len(calls) == 1
    out = f(mx.ones((1, 2, 2)), mx.ones((2, 2)))  # a new ndim: a new trace, which sees y = 2
    assert len(calls) == 2 and out[0].shape == (1, 2, 2)
    np.testing.assert_allclose(np.array(out[0]), np.full((1, 2, 2), 2.5), rtol=1e-6)


def test_shapeless_compile_at_shapes_that_do_not_fit_raises():
    """MLX computes out of bounds there; here it is MLX's broadcast / matmul ValueError."""
    add = mx.compile(lambda a, b: a + b, shapeless=True)
    add(mx.ones((2,)), mx.ones((2,)))
    with pytest.raises(ValueError, match=r"\[broadcast_shapes\] Shapes \(3\) and \(4\)"):
        add(mx.ones((3,)), mx.ones((4,)))
    mm = mx.compile(lambda a, w: a @ w, shapeless=True)
    mm(mx.ones((2, 3)), mx.ones((3, 4)))
    with pytest.raises(ValueError, match=r"\[matmul\] Last dimension of first input"):
        mm(mx.ones((2, 5)), mx.ones((3, 4)))
    assert mm(mx.ones((7, 5)), mx.ones((5, 2))).shape == (7, 2)


def test_shapeless_compile_traces_again_where_a_step_has_no_shape_rule():
    calls = []

    def head(x):
        calls.append(x.shape)
        return x[:2] * 2 + x.sum()

    f = mx.compile(head, shapeless=True)
    assert f(mx.arange(5.0)).tolist() == [10.0, 12.0]
    assert f(mx.arange(7.0)).tolist() == [21.0, 23.0]  # a slice: the body runs again
    assert calls == [(5,), (7,)]
