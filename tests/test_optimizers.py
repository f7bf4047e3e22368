"""pycudamlx.optimizers against real mlx.optimizers 0.32.4: the same gradients applied to the
same parameters give the same parameters and optimizer state, step by step; schedules,
clip_grad_norm, MultiOptimizer, state handling and errors."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
import pycudamlx.optimizers as optim
from pycudamlx.utils import tree_flatten, tree_map

M = pytest.importorskip("mlx.core")
MN = pytest.importorskip("mlx.nn")
MO = pytest.importorskip("mlx.optimizers")
from mlx.utils import tree_flatten as m_tree_flatten  # noqa: E402

rng = np.random.default_rng(0)


def tree_pair(dtype=np.float32):
    """A parameter-shaped tree (nested dicts, a list, a scalar-like vector, a 3-D tensor)."""
    shapes = {"w": (5, 3), "b": (3,), "layers": [{"k": (2, 3, 4)}, {"k": (4, 2), "s": (1,)}]}

    def make(shape):
        return rng.standard_normal(shape).astype(dtype)

    tree = tree_map(make, shapes, is_leaf=lambda x: isinstance(x, tuple))
    return (tree_map(mx.array, tree), tree_map(M.array, tree))


def assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6):
    fo, ft = tree_flatten(ours), m_tree_flatten(theirs)
    assert [k for k, _ in fo] == [k for k, _ in ft]
    for (k, a), (_, b) in zip(fo, ft):
        if isinstance(a, mx.array):
            assert a.shape == tuple(b.shape), k
            assert str(a.dtype) == str(b.dtype), k
            np.testing.assert_allclose(np.array(a.astype(mx.float32)),
                                       np.array(b.astype(M.float32)), rtol=rtol, atol=atol,
                                       err_msg=k)
        else:
            assert a == b, k


OPTIMIZERS = [
    "SGD(0.1)", "SGD(0.05, momentum=0.9)", "SGD(0.05, momentum=0.9, weight_decay=0.01)",
    "SGD(0.05, momentum=0.8, dampening=0.3)", "SGD(0.05, momentum=0.9, nesterov=True)",
    "RMSprop(0.01)", "RMSprop(0.01, alpha=0.8, eps=1e-6)",
    "Adagrad(0.1)", "AdaDelta(0.5, rho=0.8)",
    "Adam(0.01)", "Adam(0.01, betas=[0.8, 0.9], bias_correction=True)",
    "AdamW(0.01)", "AdamW(0.02, weight_decay=0.1, bias_correction=True)",
    "Adamax(0.01)", "Lion(0.001)", "Lion(0.001, weight_decay=0.1)",
    "Adafactor()", "Adafactor(learning_rate=0.01, relative_step=False, beta_1=0.9, "
    "weight_decay=0.01)", "Adafactor(warmup_init=True, scale_parameter=False)",
    "Muon(0.02)", "Muon(0.02, nesterov=False, weight_decay=0.0, ns_steps=3)",
    "Adam(learning_rate=L.exponential_decay(0.1, 0.9))",
    "SGD(L.cosine_decay(0.1, 3, end=0.01), momentum=0.5)",
]


@pytest.mark.parametrize("expr", OPTIMIZERS)
def test_optimizer_steps_match(expr):
    ours = eval("optim." + expr, {"optim": optim, "L": optim})
    theirs = eval("MO." + expr, {"MO": MO, "L": MO})
    params, params_m = tree_pair()
    for _ in range(3):
        grads, grads_m = tree_pair()
        params = ours.apply_gradients(grads, params)
        params_m = theirs.apply_gradients(grads_m, params_m)
        assert_trees_close(params, params_m, rtol=1e-4, atol=1e-5)
    assert_trees_close(ours.state, theirs.state, rtol=1e-4, atol=1e-6)
    assert ours.step.dtype == mx.uint64 and ours.step.item() == 3


@pytest.mark.parametrize("expr", ["SGD(0.1, momentum=0.9)", "Adam(0.01)", "AdamW(0.01)",
                                  "Lion(0.01)", "Adafactor()"])
def test_low_precision_parameters(expr):
    ours, theirs = eval("optim." + expr), eval("MO." + expr)
    p = rng.standard_normal((4, 6)).astype(np.float32)
    params, params_m = {"w": mx.array(p).astype(mx.bfloat16)}, {"w": M.array(p, M.bfloat16)}
    for _ in range(2):
        g = rng.standard_normal((4, 6)).astype(np.float32)
        params = ours.apply_gradients({"w": mx.array(g).astype(mx.bfloat16)}, params)
        params_m = theirs.apply_gradients({"w": M.array(g, M.bfloat16)}, params_m)
    assert_trees_close(params, params_m, rtol=2e-2, atol=2e-2)


def test_update_model_in_place():
    M.random.seed(0)
    theirs = MN.Sequential(MN.Linear(3, 4), MN.LayerNorm(4), MN.Linear(4, 2))
    ours = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    ours.update(tree_map(lambda a: mx.array(np.array(a)), theirs.parameters(),
                         is_leaf=lambda a: isinstance(a, M.array)))
    ours.layers[1].freeze()
    theirs.layers[1].freeze()
    o, t = optim.Adam(0.1), MO.Adam(0.1)
    for _ in range(2):
        grads = tree_map(lambda a: np.ones(a.shape, np.float32) * 0.3,
                         m_tree_flatten(theirs.trainable_parameters(), destination={}))
        o.update(ours, tree_map_unflat(grads, mx.array))
        t.update(theirs, tree_map_unflat(grads, M.array))
    assert_trees_close(ours.parameters(), theirs.parameters())
    assert_trees_close(o.state, t.state)


def tree_map_unflat(flat, conv):
    from pycudamlx.utils import tree_unflatten
    return tree_unflatten([(k, conv(v)) for k, v in flat.items()])


def test_learning_rate_property_and_schedule_state():
    o, t = optim.SGD(optim.step_decay(0.5, 0.5, 2)), MO.SGD(MO.step_decay(0.5, 0.5, 2))
    p, pm = {"x": mx.ones((2,))}, {"x": M.ones((2,))}
    lrs_o, lrs_t = [], []
    for _ in range(5):
        p = o.apply_gradients({"x": mx.ones((2,))}, p)
        pm = t.apply_gradients({"x": M.ones((2,))}, pm)
        lrs_o.append(o.learning_rate.item())
        lrs_t.append(t.learning_rate.item())
    assert lrs_o == pytest.approx(lrs_t)
    assert_trees_close(p, pm)
    o.learning_rate = 0.25
    assert o.learning_rate.dtype == mx.float32 and o.state["learning_rate"].item() == 0.25
    fixed = optim.Adam(0.1)
    assert fixed.learning_rate.dtype == mx.float32
    assert sorted(fixed.state) == ["learning_rate", "step"]


@pytest.mark.parametrize("expr", [
    "exponential_decay(0.1, 0.8)", "step_decay(1.0, 0.5, 3)", "cosine_decay(1.0, 7)",
    "cosine_decay(0.5, 4, end=0.1)", "linear_schedule(0.0, 1.0, 5)",
    "join_schedules([S.linear_schedule(0.0, 0.1, 3), S.cosine_decay(0.1, 5)], [3])",
    "join_schedules([S.linear_schedule(0, 1, 2), S.exponential_decay(1.0, 0.5), "
    "S.step_decay(0.3, 0.1, 1)], [2, 5])",
])
def test_schedules(expr):
    ours = eval("S." + expr, {"S": optim})
    theirs = eval("S." + expr, {"S": MO})
    for step in range(10):
        a = ours(mx.array(step))
        b = theirs(M.array(step))
        assert np.array(a) == pytest.approx(np.array(b), rel=1e-5, abs=1e-7), step
        assert str(a.dtype) == str(b.dtype)


@pytest.mark.parametrize("expr", [
    "step_decay(0.1, 0.5, 0)", "cosine_decay(0.1, 0)", "linear_schedule(0, 1, 0)",
    "join_schedules([], [])", "join_schedules([S.linear_schedule(0, 1, 2)], [3])",
    "SGD(0.1, nesterov=True)", "SGD(0.1, momentum=0.9, dampening=0.1, nesterov=True)",
    "RMSprop(0.1, alpha=-1)", "RMSprop(0.1, eps=0)", "Adagrad(0.1, eps=0)",
    "AdaDelta(0.1, rho=-0.5)", "AdaDelta(0.1, eps=0)", "Adam(0.1, betas=[1.0, 0.9])",
    "Adam(0.1, betas=[0.9, -0.1])", "Adam(0.1, eps=-1)", "Lion(0.1, betas=[0.9, 1.5])",
    "MultiOptimizer([S.SGD(0.1), S.Adam(0.1)], [])", "clip_grad_norm({}, -1.0)",
])
def test_errors_match(expr):
    def error(lib):
        try:
            eval("S." + expr, {"S": lib})
        except Exception as exc:  # noqa: BLE001 - compare class and message
            return type(exc), str(exc)
        return None

    assert error(optim) == error(MO) != None  # noqa: E711


@pytest.mark.parametrize("max_norm", [0.5, 100.0, 0.0])
def test_clip_grad_norm(max_norm):
    grads, grads_m = tree_pair()
    grads["h"] = mx.array(np.ones((3,), np.float16))
    grads_m["h"] = M.array(np.ones((3,), np.float16))
    clipped, norm = optim.clip_grad_norm(grads, max_norm)
    clipped_m, norm_m = MO.clip_grad_norm(grads_m, max_norm)
    assert norm.item() == pytest.approx(norm_m.item(), rel=1e-5)
    assert_trees_close(clipped, clipped_m)


def test_multi_optimizer():
    def split(path, g):
        return path.startswith("w") or path.endswith("s")

    o = optim.MultiOptimizer([optim.Adam(0.01), optim.SGD(0.1, momentum=0.9)], [split])
    t = MO.MultiOptimizer([MO.Adam(0.01), MO.SGD(0.1, momentum=0.9)], [split])
    params, params_m = tree_pair()
    for _ in range(2):
        grads, grads_m = tree_pair()
        params = o.apply_gradients(grads, params)
        params_m = t.apply_gradients(grads_m, params_m)
    assert_trees_close(params, params_m)
    assert_trees_close(o.state, t.state)
    o.learning_rate = 0.5
    assert o.learning_rate.item() == 0.5 and o.optimizers[1].learning_rate.item() == 0.5
    with pytest.raises(ValueError, match="Invalid state provided"):
        o.state = {"states": [{}]}


def test_state_roundtrip_and_init_keeps_existing_state():
    o = optim.Adam(0.01)
    params, _ = tree_pair()
    o.init(params)
    assert sorted(o.state["layers"][1]) == ["k", "s"]
    assert sorted(o.state["w"]) == ["m", "v"]
    saved = o.state
    o.state["w"]["m"] = mx.ones((5, 3))
    o.init(params)  # existing entries are kept
    assert o.state["w"]["m"].sum().item() == 15
    fresh = optim.Adam(0.01)
    fresh.state = saved
    grads, _ = tree_pair()
    fresh.apply_gradients(grads, params)
    assert fresh.step.item() == 1
    # init of a longer list grows the state list
    o.init({"layers": [{"k": mx.ones((1,))}, {}, {"k": mx.ones((2,))}]})
    assert len(o.state["layers"]) == 3 and "m" in o.state["layers"][2]["k"]


def test_optimizer_base_needs_subclass_methods():
    class Plain(optim.Optimizer):
        pass

    with pytest.raises(NotImplementedError):
        Plain().init({"a": mx.ones((1,))})
