"""mx.distributed on one process, differential against real MLX 0.32.4 (whose CPU wheel, with no
launch environment, also gives the singleton group): values, dtypes, shapes, signatures, errors
(class and message), gradients, vmap and compile; nn.average_gradients."""

from __future__ import annotations

import inspect
import json
import pickle
import re

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
from pycudamlx.core import distributed as dist_api
from pycudamlx.distributed import mpi

mlx = pytest.importorskip("mlx.core")
mlx_nn = pytest.importorskip("mlx.nn")

RNG = np.random.default_rng(11)
COLLECTIVES = ("all_sum", "all_gather", "all_max", "all_min", "sum_scatter")
PUBLIC = ("Group", "all_gather", "all_max", "all_min", "all_sum", "init", "is_available", "recv",
          "recv_like", "send", "sum_scatter")
LAUNCH_ENV = ("MLX_RANK", "MLX_HOSTFILE", "MLX_WORLD_SIZE", "MLX_JACCL_COORDINATOR",
              "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


@pytest.fixture(autouse=True)
def _no_launch_environment(monkeypatch):
    """Both libraries see a plain single-process environment (no mlx.launch / mpirun), and no
    group formed by an earlier test."""
    for name in LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(dist_api, "_FORMED", {})


@pytest.fixture
def no_mpi(monkeypatch):
    """As on MLX's CPU wheel (no MPI library): init(strict=True) has MLX's errors to compare."""
    monkeypatch.setattr(mpi, "available", lambda: False)


def _outcome(call):
    """('ok', value) or (exception class name, message) of ``call()``."""
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return type(e).__name__, str(e)


def _same_error(make_call):
    """``make_call(lib)`` raises the same exception class and message with both libraries."""
    theirs = _outcome(lambda: make_call(mlx))
    ours = _outcome(lambda: make_call(mx))
    assert theirs[0] != "ok", theirs
    assert ours == theirs


def _data(dtype, shape):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype == "complex64":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)
    if dtype.startswith(("int", "uint")):
        return RNG.integers(0, 100, shape).astype(dtype)
    return RNG.standard_normal(shape).astype("float32")


def _pair(dtype, shape):
    x = _data(dtype, shape)
    if dtype in ("float16", "bfloat16", "float64"):
        return mx.array(x).astype(getattr(mx, dtype)), mlx.array(x).astype(getattr(mlx, dtype))
    return mx.array(x), mlx.array(x)


def _values(a):
    if a.dtype in (mx.bfloat16, mlx.bfloat16):
        a = a.astype(mx.float32 if isinstance(a, mx.array) else mlx.float32)
    return np.array(a)


# ---- the namespace and signatures --------------------------------------------------------------


def test_namespace_is_mlxs():
    assert "distributed" in dir(mx) or hasattr(mx, "distributed")
    assert [n for n in dir(mx.distributed) if not n.startswith("_")] == list(PUBLIC)
    assert [n for n in dir(mlx.distributed) if not n.startswith("_")] == list(PUBLIC)


def _mlx_parameters(doc_line: str) -> list[tuple[str, str]]:
    """(name, default text or '') of each parameter of a nanobind signature line, with '*'."""
    inner = doc_line[doc_line.index("(") + 1:doc_line.rindex(") ->")]
    while "[" in inner:  # drop bracketed type arguments (they hold commas)
        inner = re.sub(r"\[[^\[\]]*\]", "", inner)
    out = []
    for part in inner.split(", "):
        name, _, default = part.partition("=")
        out.append((name.split(":")[0].strip(), default.strip()))
    return out


@pytest.mark.parametrize("name", [n for n in PUBLIC if n != "Group"])
def test_signature_matches_mlx(name):
    line = getattr(mlx.distributed, name).__doc__.splitlines()[0]
    want = _mlx_parameters(line)
    params = inspect.signature(getattr(mx.distributed, name)).parameters.values()
    got = []
    for p in params:
        if p.kind is p.KEYWORD_ONLY and ("*", "") not in got:
            got.append(("*", ""))
        got.append((p.name, "" if p.default is p.empty else repr(p.default)))
    assert got == want
    from pycudamlx.core import distributed as ours

    assert ours._SIG[name] == line  # the line nanobind's TypeErrors print


def test_group_methods_and_singleton():
    for lib in (mx, mlx):
        g = lib.distributed.init()
        assert (g.rank(), g.size()) == (0, 1)
        assert type(g).__name__ == "Group"
        assert repr(g).startswith("<mlx.core.distributed.Group object at 0x")
        assert g is not lib.distributed.init()  # a new Group object per call, as in MLX
        assert bool(g)  # ``group or mx.distributed.init()`` keeps a given group
    assert type(mx.distributed.init()).__module__ == mlx.distributed.Group.__module__


def test_group_has_no_constructor_and_does_not_pickle():
    _same_error(lambda lib: lib.distributed.Group())
    _same_error(lambda lib: pickle.dumps(lib.distributed.init()))


@pytest.mark.parametrize("args", [(0,), (0, 1), (3, -1), (-1,), (True,), (np.int32(2),)])
def test_split_cannot_split_a_singleton(args):
    _same_error(lambda lib: lib.distributed.init().split(*args))
    _same_error(lambda lib: lib.distributed.init().split(color=args[0]))


@pytest.mark.parametrize("args", [("a",), (1.5,), (0, 1.5), (None,)])
def test_split_argument_types(args):
    _same_error(lambda lib: lib.distributed.init().split(*args))


# ---- is_available and init ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["any", "mpi", "ring", "nccl", "jaccl", "foo", "", "RING"])
def test_is_available_says_whether_mpi_loads(backend):
    # "mpi" and "any" can be instantiated where mpi4py and an MPI library load; ring, NCCL and
    # JACCL are not implemented (MLX's CPU wheel answers True for "any"/"ring" through its ring
    # backend; the names it answers False for agree).
    want = mpi.available() and backend in ("any", "mpi")
    assert mx.distributed.is_available(backend) is want
    assert mx.distributed.is_available(backend=backend) is want
    if backend not in ("any", "ring"):
        assert mlx.distributed.is_available(backend) is False
    assert mx.distributed.is_available() is mpi.available()


def test_is_available_without_mpi(no_mpi):
    for backend in ("any", "mpi", "ring", "nccl", "jaccl"):
        assert mx.distributed.is_available(backend) is False


@pytest.mark.parametrize("arg", [1, None, b"any", ["ring"]])
def test_is_available_argument_types(arg):
    _same_error(lambda lib: lib.distributed.is_available(arg))
    _same_error(lambda lib: lib.distributed.is_available(backend=arg))


@pytest.mark.parametrize("backend", ["any", "mpi", "ring", "nccl", "jaccl"])
def test_init_non_strict_returns_the_singleton_group(backend):
    for lib in (mx, mlx):
        g = lib.distributed.init(False, backend)
        assert (g.rank(), g.size()) == (0, 1)
        g = lib.distributed.init(strict=False, backend=backend)
        assert (g.rank(), g.size()) == (0, 1)


@pytest.mark.parametrize("backend", ["any", "mpi", "ring", "nccl", "jaccl"])
def test_init_strict_raises_mlxs_error(backend, no_mpi):
    _same_error(lambda lib: lib.distributed.init(True, backend))
    _same_error(lambda lib: lib.distributed.init(strict=True, backend=backend))
    if backend == "any":
        _same_error(lambda lib: lib.distributed.init(True))
        _same_error(lambda lib: lib.distributed.init(strict=True))


@pytest.mark.parametrize("backend", ["foo", "", "RING", "cuda"])
@pytest.mark.parametrize("strict", [False, True])
def test_init_unknown_backend(backend, strict):
    _same_error(lambda lib: lib.distributed.init(strict, backend))


def _factory(rank, size):
    return lambda src, n: src


def test_init_all_gather_factory():
    _same_error(lambda lib: lib.distributed.init(all_gather_factory=_factory))
    _same_error(lambda lib: lib.distributed.init(backend="foo", all_gather_factory=_factory))
    _same_error(lambda lib: lib.distributed.init(True, all_gather_factory=_factory))
    _same_error(lambda lib: lib.distributed.init(True, "jaccl", all_gather_factory=_factory))
    for lib in (mx, mlx):
        assert lib.distributed.init(False, "jaccl", all_gather_factory=_factory).size() == 1
        assert lib.distributed.init(all_gather_factory=None).size() == 1


@pytest.mark.parametrize("call", [
    lambda lib: lib.distributed.init(strict=1),
    lambda lib: lib.distributed.init(strict="x"),
    lambda lib: lib.distributed.init(np.bool_(False)),
    lambda lib: lib.distributed.init(backend=3),
    lambda lib: lib.distributed.init(backend=None),
    lambda lib: lib.distributed.init(False, "any", None),
    lambda lib: lib.distributed.init(all_gather_factory=3),
])
def test_init_argument_types(call):
    _same_error(call)


@pytest.mark.parametrize("env", [{"MLX_WORLD_SIZE": "2"}, {"MLX_JACCL_COORDINATOR": "10.0.0.1:1234"},
                                 {"MLX_RANK": "1", "MLX_HOSTFILE": "/nonexistent/hosts.json"}])
@pytest.mark.parametrize("strict", [False, True])
def test_init_refuses_a_launch_it_cannot_join(monkeypatch, env, strict):
    # One rank of an mlx.launch ring/NCCL/JACCL launch must not silently train alone.
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(RuntimeError, match="launched as one of several ranks.*cannot join"):
        mx.distributed.init(strict)


@pytest.mark.parametrize("env", [{"OMPI_COMM_WORLD_SIZE": "4"}, {"PMI_SIZE": "2"}])
@pytest.mark.parametrize("strict", [False, True])
def test_init_under_an_mpi_launch_needs_mpi(monkeypatch, env, strict, no_mpi):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(RuntimeError, match="launched as one of several ranks.*mpi4py"):
        mx.distributed.init(strict)
    assert mx.distributed.is_available() is False


def test_init_accepts_a_one_rank_launch(monkeypatch, tmp_path, no_mpi):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps([{"ssh": "localhost", "ips": ["127.0.0.1"]}]))
    monkeypatch.setenv("MLX_RANK", "0")
    monkeypatch.setenv("MLX_HOSTFILE", str(hosts))
    monkeypatch.setenv("MLX_WORLD_SIZE", "1")
    assert mx.distributed.init().size() == 1
    with pytest.raises(RuntimeError, match=r'^\[ring\] .*MLX_RANK="0" and MLX_HOSTFILE="'):
        mx.distributed.init(True, "ring")


# ---- collectives -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", COLLECTIVES)
@pytest.mark.parametrize("dtype,shape", [
    ("float32", (3, 5)), ("float16", (7,)), ("bfloat16", (2, 3, 4)), ("float64", (5,)),
    ("int32", (4, 1)), ("int64", ()), ("uint8", (9,)), ("int8", (3, 3)), ("bool", (6,)),
    ("complex64", (2, 2)), ("float32", (0, 3)), ("float32", (1,)),
])
def test_collective_values_dtypes_shapes(name, dtype, shape):
    ours_x, theirs_x = _pair(dtype, shape)
    ours = getattr(mx.distributed, name)(ours_x)
    theirs = getattr(mlx.distributed, name)(theirs_x)
    assert ours is not ours_x and isinstance(ours, mx.array)
    assert ours.shape == theirs.shape == tuple(shape)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(_values(ours), _values(theirs))


@pytest.mark.parametrize("name", COLLECTIVES)
@pytest.mark.parametrize("value", [3, 2.5, True, 1 + 2j, np.float64(2.0), np.int16(7),
                                   np.arange(4), np.ones((2, 3), np.float16)])
def test_collective_converts_scalars_and_numpy(name, value):
    ours = getattr(mx.distributed, name)(value)
    theirs = getattr(mlx.distributed, name)(value)
    assert ours.shape == theirs.shape and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(np.array(ours), np.array(theirs))


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collective_keywords_group_and_stream(name):
    x = RNG.standard_normal((3, 2)).astype(np.float32)
    for lib in (mx, mlx):
        f = getattr(lib.distributed, name)
        for kw in ({}, {"group": None}, {"group": lib.distributed.init()},
                   {"stream": lib.cpu}, {"stream": lib.default_stream(lib.cpu)},
                   {"stream": 0}, {"group": lib.distributed.init(), "stream": None},
                   {"stream": lib.gpu}):  # the singleton path places nothing (MLX's CPU build)
            np.testing.assert_array_equal(np.array(f(lib.array(x), **kw)), x)
        np.testing.assert_array_equal(np.array(f(x=lib.array(x))), x)


@pytest.mark.parametrize("name", COLLECTIVES)
@pytest.mark.parametrize("make_call", [
    lambda f, lib: f([1, 2]),
    lambda f, lib: f((1, 2)),
    lambda f, lib: f("a"),
    lambda f, lib: f(None),
    lambda f, lib: f(lib.ones(2), None),
    lambda f, lib: f(lib.ones(2), None, None),
    lambda f, lib: f(lib.ones(2), group=3),
    lambda f, lib: f(lib.ones(2), group="world"),
    lambda f, lib: f(lib.ones(2), stream="cpu"),
])
def test_collective_errors(name, make_call):
    _same_error(lambda lib: make_call(getattr(lib.distributed, name), lib))


class _ArrayLike:
    def __init__(self, lib):
        self.lib = lib

    def __mlx_array__(self):
        return self.lib.array([1, 2, 3])


def test_collective_accepts_array_likes():
    for lib in (mx, mlx):
        assert lib.distributed.all_sum(_ArrayLike(lib)).tolist() == [1, 2, 3]


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collective_result_keeps_value_after_in_place_update(name):
    # MLX returns the input array itself (a new Python object): updating the input in place
    # afterwards leaves the result with the old value, and the result's update leaves the input.
    got = []
    for lib in (mx, mlx):
        x = lib.array([1.0, 2.0, 3.0])
        y = getattr(lib.distributed, name)(x)
        x += 1
        z = lib.array([5, 6])
        w = getattr(lib.distributed, name)(z)
        z[0] = 9
        w[1] = 7
        got.append((y.tolist(), x.tolist(), w.tolist(), z.tolist()))
    assert got[0] == got[1]


# ---- transforms --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collective_grad_vjp_jvp(name):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    t = RNG.standard_normal((3, 4)).astype(np.float32)
    res = []
    for lib in (mx, mlx):
        f = getattr(lib.distributed, name)
        g = lib.grad(lambda a: (f(a * a) * lib.sin(a)).sum())(lib.array(x))
        _, vjp = lib.vjp(lambda a: f(a) * 3, [lib.array(x)], [lib.array(t)])
        _, jvp = lib.jvp(lambda a: lib.exp(f(a)), [lib.array(x)], [lib.array(t)])
        gg = lib.grad(lambda a: lib.grad(lambda b: (f(b) ** 3).sum())(a).sum())(lib.array(x))
        res.append([np.array(v) for v in (g, vjp[0], jvp[0], gg)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", COLLECTIVES)
@pytest.mark.parametrize("in_axes", [0, 1])
def test_collective_vmap_and_compile(name, in_axes):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    res = []
    for lib in (mx, mlx):
        f = getattr(lib.distributed, name)
        v = lib.vmap(lambda a: f(a) + 1, in_axes=in_axes)(lib.array(x))
        c = lib.compile(lambda a: f(a * 2))(lib.array(x))
        res.append((np.array(v), np.array(c)))
    for a, b in zip(*res):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_value_and_grad_of_a_data_parallel_step():
    x = RNG.standard_normal((8, 3)).astype(np.float32)
    w0 = RNG.standard_normal((3,)).astype(np.float32)
    out = []
    for lib in (mx, mlx):
        world = lib.distributed.init()

        def loss(w):
            return lib.distributed.all_sum(((lib.array(x) @ w) ** 2).mean()) / world.size()

        val, g = lib.value_and_grad(loss)(lib.array(w0))
        g = lib.distributed.all_sum(g) / world.size()
        out.append((val.item(), np.array(g)))
    assert out[0][0] == pytest.approx(out[1][0], rel=1e-6)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-5)


# ---- send / recv -------------------------------------------------------------------------------


@pytest.mark.parametrize("make_call", [
    lambda lib: lib.distributed.send(lib.ones(2), 0),
    lambda lib: lib.distributed.send(lib.ones(2), 1),
    lambda lib: lib.distributed.send(lib.ones(2), -1),
    lambda lib: lib.distributed.send(x=lib.ones(2), dst=0),
    lambda lib: lib.distributed.send(lib.ones(2), True),
    lambda lib: lib.distributed.send(lib.ones(2), np.int64(0)),
    lambda lib: lib.distributed.send(1.0, 0),
    lambda lib: lib.distributed.send(np.ones(3), 0),
    lambda lib: lib.distributed.send(lib.ones(2), 0, group=lib.distributed.init(),
                                     stream=lib.cpu),
    lambda lib: lib.distributed.send([1.0], 0),
    lambda lib: lib.distributed.send(None, 0),
    lambda lib: lib.distributed.send(lib.ones(2), 1.5),
    lambda lib: lib.distributed.send(lib.ones(2), 2**40),
    lambda lib: lib.distributed.send(lib.ones(2), 0, None),
    lambda lib: lib.distributed.send(lib.ones(2), 0, group=3),
    lambda lib: lib.distributed.send(lib.ones(2), 0, stream="gpu"),
    lambda lib: lib.grad(lambda a: lib.distributed.send(a, 0).sum())(lib.ones(2)),
])
def test_send_errors(make_call):
    _same_error(make_call)


@pytest.mark.parametrize("make_call", [
    lambda lib: lib.distributed.recv((2, 2), lib.float32, 0),
    lambda lib: lib.distributed.recv([3], lib.int8, 1),
    lambda lib: lib.distributed.recv((), lib.bool_, 0),
    lambda lib: lib.distributed.recv([-2], lib.float32, 0),
    lambda lib: lib.distributed.recv((np.int64(2),), lib.float32, np.int64(0)),
    lambda lib: lib.distributed.recv(np.array([2, 3]), lib.float32, 0),
    lambda lib: lib.distributed.recv(shape=(2,), dtype=lib.float16, src=0, group=None,
                                     stream=lib.cpu),
    lambda lib: lib.distributed.recv(3, lib.float32, 0),
    lambda lib: lib.distributed.recv((2.0,), lib.float32, 0),
    lambda lib: lib.distributed.recv((2,), "float32", 0),
    lambda lib: lib.distributed.recv((2,), np.float32, 0),
    lambda lib: lib.distributed.recv([2], lib.float32, "a"),
    lambda lib: lib.distributed.recv((2,), lib.float32, 0, None),
    lambda lib: lib.distributed.recv([2], lib.float32, 0, group=3),
    lambda lib: lib.distributed.recv_like(lib.ones((2, 3)), 0),
    lambda lib: lib.distributed.recv_like(x=lib.ones(2), src=1),
    lambda lib: lib.distributed.recv_like(1.0, 0),
    lambda lib: lib.distributed.recv_like([1.0], 0),
    lambda lib: lib.distributed.recv_like(None, 0),
    lambda lib: lib.distributed.recv_like(lib.ones(2), "a"),
    lambda lib: lib.distributed.recv_like(lib.ones(2), 0, stream="x"),
])
def test_recv_errors(make_call):
    _same_error(make_call)


# ---- mlx.nn ------------------------------------------------------------------------------------


def test_average_gradients_on_one_process():
    grads = {"w": mx.ones((3, 2)), "layers": [{"b": mx.zeros(4, dtype=mx.float16)}]}
    theirs_grads = {"w": mlx.ones((3, 2)), "layers": [{"b": mlx.zeros(4, dtype=mlx.float16)}]}
    for kw in ({}, {"all_reduce_size": 0}, {"group": None}, {"communication_stream": None}):
        assert nn.average_gradients(grads, **kw) is grads
        assert mlx_nn.average_gradients(theirs_grads, **kw) is theirs_grads
    assert nn.average_gradients(grads, mx.distributed.init()) is grads
    want = list(inspect.signature(mlx_nn.average_gradients).parameters.items())
    got = list(inspect.signature(nn.average_gradients).parameters.items())
    assert [(k, p.default, p.kind) for k, p in got] == [(k, p.default, p.kind) for k, p in want]


# ---- mlx.nn's sharded layers (singleton group: shards are the whole weights) -------------------

import pycudamlx.nn.layers.distributed as ours_dist  # noqa: E402
from pycudamlx.utils import tree_flatten as ours_flatten  # noqa: E402

theirs_dist = pytest.importorskip("mlx.nn.layers.distributed")
mlx_utils = pytest.importorskip("mlx.utils")


def _libs():
    return ((mx, nn, ours_dist, ours_flatten),
            (mlx, mlx_nn, theirs_dist, mlx_utils.tree_flatten))


def _params(flatten, module):
    return {k: np.array(v) for k, v in flatten(module.parameters())}


def _same_params(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("cls", ["AllToShardedLinear", "ShardedToAllLinear"])
@pytest.mark.parametrize("bias", [True, False])
def test_sharded_linear_matches_mlx(cls, bias):
    x = RNG.standard_normal((5, 12)).astype(np.float32)
    got = []
    for core, nnm, _, flatten in _libs():
        core.random.seed(4)
        layer = getattr(nnm, cls)(12, 6, bias=bias)
        assert layer.group.size() == 1

        def loss(params, inp, layer=layer, core=core):
            layer.update(params)
            return (layer(inp) ** 2).sum()

        val, (gp, gx) = core.value_and_grad(loss, argnums=(0, 1))(layer.parameters(),
                                                                   core.array(x))
        got.append((repr(layer), _params(flatten, layer), np.array(layer(core.array(x))),
                    val.item(), {k: np.array(v) for k, v in flatten(gp)}, np.array(gx)))
    (r1, p1, y1, v1, g1, gx1), (r2, p2, y2, v2, g2, gx2) = got
    assert r1 == r2
    _same_params(p1, p2)
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    assert v1 == pytest.approx(v2, rel=1e-5)
    for k in g1:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx1, gx2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sharding", ["all-to-sharded", "sharded-to-all"])
@pytest.mark.parametrize("segments", [1, 3, [0.5]])
@pytest.mark.parametrize("quantized", [False, True])
def test_shard_linear_matches_mlx(sharding, segments, quantized):
    x = RNG.standard_normal((3, 64)).astype(np.float32)
    got = []
    for core, nnm, dist, flatten in _libs():
        core.random.seed(9)
        base = nnm.Linear(64, 96)
        if quantized:
            base = nnm.QuantizedLinear.from_linear(base, 32, 8)
        status, layer = _outcome(lambda: dist.shard_linear(base, sharding, segments=segments))
        if status != "ok":  # 64 input features do not split in 3 segments: MLX's error
            got.append((status, layer))
            continue
        got.append((type(layer).__name__, repr(layer), _params(flatten, layer),
                    np.array(layer(core.array(x))), len(flatten(layer.trainable_parameters()))))
    assert got[0][:2] == got[1][:2]
    if len(got[0]) == 2:
        return
    _same_params(got[0][2], got[1][2])
    np.testing.assert_allclose(got[0][3], got[1][3], rtol=1e-5, atol=1e-5)
    assert got[0][4] == got[1][4]


@pytest.mark.parametrize("cls", ["QuantizedAllToShardedLinear", "QuantizedShardedToAllLinear"])
@pytest.mark.parametrize("kw", [{}, {"bias": False, "group_size": 32, "bits": 8},
                                {"mode": "mxfp4", "group_size": 32}])
def test_quantized_sharded_layers_match_mlx(cls, kw):
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    got = []
    for core, nnm, _, flatten in _libs():
        core.random.seed(2)
        layer = getattr(nnm, cls)(64, 32, **kw)
        layer.unfreeze()  # the quantized parameters stay frozen
        got.append((repr(layer), _params(flatten, layer), np.array(layer(core.array(x))),
                    sorted(k for k, _ in flatten(layer.trainable_parameters()))))
    assert got[0][0] == got[1][0] and got[0][3] == got[1][3]
    _same_params(got[0][1], got[1][1])
    np.testing.assert_allclose(got[0][2], got[1][2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sharding", ["all-to-sharded", "sharded-to-all",
                                      lambda path, w: (0, 2) if path.endswith("weight") else None,
                                      lambda path, w: -1])
def test_shard_inplace_matches_mlx(sharding):
    got = []
    for core, nnm, dist, flatten in _libs():
        core.random.seed(1)
        model = nnm.Sequential(nnm.Linear(4, 6), nnm.ReLU(), nnm.Linear(6, 2))
        dist.shard_inplace(model, sharding, segments=2)
        got.append(_params(flatten, model))
    _same_params(*got)


@pytest.mark.parametrize("make_call", [
    lambda lib_nn, dist: dist.shard_linear(lib_nn.Linear(2, 2), "sharded"),
    lambda lib_nn, dist: dist.shard_inplace(lib_nn.Linear(2, 2), "all-to-all"),
    lambda lib_nn, dist: dist.shard_inplace(lib_nn.Linear(2, 2), lambda p, w: "x"),
    lambda lib_nn, dist: dist.shard_inplace(lib_nn.Linear(2, 2), lambda p, w: [0]),
])
def test_sharding_errors(make_call):
    theirs = _outcome(lambda: make_call(mlx_nn, theirs_dist))
    ours = _outcome(lambda: make_call(nn, ours_dist))
    assert theirs[0] != "ok" and ours == theirs


def test_fully_shard_and_sum_gradients_on_one_process():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    got = []
    for core, nnm, dist, flatten in _libs():
        core.random.seed(6)
        model = nnm.Sequential(nnm.Linear(4, 8), nnm.GELU(), nnm.Linear(8, 2))
        assert nnm.fully_shard(model) is model
        assert dist.sum_gradients(core.distributed.init())(core.array(x)) is not None
        wrapped = nnm.FullyShardedModule(model, compute_dtype=core.float16)

        def loss(params, w=wrapped, core=core):
            w.update(params)
            return w(core.array(x)).astype(core.float32).sum()

        val, grads = core.value_and_grad(loss)(wrapped.trainable_parameters())
        got.append((repr(wrapped), val.item(), {k: np.array(v) for k, v in flatten(grads)},
                    wrapped(core.array(x)).dtype.__repr__().split(".")[-1],
                    nnm.fully_shard(wrapped) is wrapped))
    assert got[0][0] == got[1][0] and got[0][3:] == got[1][3:]
    assert got[0][1] == pytest.approx(got[1][1], rel=1e-3)
    assert got[0][2].keys() == got[1][2].keys()
    for k in got[0][2]:
        assert got[0][2][k].dtype == got[1][2][k].dtype, k
        np.testing.assert_allclose(got[0][2][k], got[1][2][k], rtol=2e-3, atol=2e-3)


def test_fully_sharded_module_rejects_scalars():
    for core, nnm, _, _ in _libs():
        m = nnm.Linear(2, 2)
        m.s = core.array(1.0)
        with pytest.raises(ValueError, match="Cannot shard parameter 's' because it is a scalar"):
            nnm.FullyShardedModule(m)
