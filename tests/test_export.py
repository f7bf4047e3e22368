"""mx.export_function / exporter / import_function / export_to_dot, held to real MLX 0.32.4.

The file formats differ (ours is pycudamlx's own), so the oracle is behaviour: what the
imported function returns on new inputs, which calls it accepts, the exception classes and
messages, what shapeless allows. Each case runs on both libraries with the same data.
"""

from __future__ import annotations

import io
import json
import os
import re

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
from pycudamlx.utils import tree_map

mlx = pytest.importorskip("mlx.core")

RNG = np.random.default_rng(7)


def _data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _both(fn_of_lib):
    """Run ``fn_of_lib(lib)`` on MLX and on pycudamlx: (result or exception) of each."""
    out = []
    for lib in (mlx, mx):
        try:
            out.append(fn_of_lib(lib))
        except Exception as e:  # noqa: BLE001 - the exception is the result being compared
            out.append(e)
    return out


def _same_values(theirs, ours, atol=1e-5):
    assert type(theirs) is tuple and type(ours) is tuple
    assert len(theirs) == len(ours)
    for t, o in zip(theirs, ours):
        assert tuple(t.shape) == tuple(o.shape)
        assert str(t.dtype).split(".")[-1] == str(o.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(o.astype(mx.float32)),
                                   np.asarray(t.astype(mlx.float32)), atol=atol, rtol=1e-5)


def _same_error(theirs, ours, exact=True):
    assert isinstance(theirs, Exception) and isinstance(ours, Exception), (theirs, ours)
    assert type(theirs).__name__ == type(ours).__name__, (theirs, ours)
    if exact:
        assert str(ours) == str(theirs)


# ----------------------------------------------------------------------------------------------
# Round trips on new inputs


def _mlp(lib, x, w1, b1, w2):
    return lib.maximum(x @ w1 + b1, 0) @ w2


@pytest.mark.parametrize("shape", [(3, 5), (1, 5), (7, 5)])
def test_round_trip_gives_the_function_on_new_inputs(tmp_path, shape):
    w1, b1, w2 = _data(5, 9), _data(9), _data(9, 2)
    x0, x1 = _data(*shape), _data(*shape)

    def run(lib):
        weights = [lib.array(w) for w in (w1, b1, w2)]
        path = str(tmp_path / f"{lib.__name__}.fn")
        lib.export_function(path, lambda x: _mlp(lib, x, *weights), lib.array(x0))
        return lib.import_function(path)(lib.array(x1))

    theirs, ours = _both(run)
    _same_values(theirs, ours)
    np.testing.assert_allclose(np.asarray(ours[0]), np.maximum(x1 @ w1 + b1, 0) @ w2,
                               rtol=1e-5, atol=1e-5)


_OPS = {
    "softmax": lambda m, a: m.softmax(a, axis=-1),
    "slices": lambda m, a: a[1:3, ::2] * 2,
    "concat": lambda m, a: m.concatenate([a, a * 2], axis=0),
    "pad": lambda m, a: m.pad(a, ((1, 0), (0, 2)), constant_values=0.5),
    "pad_edge": lambda m, a: m.pad(a, 1, mode="edge"),
    "sort": lambda m, a: m.sort(a, axis=-1),
    "cumsum": lambda m, a: m.cumsum(a, axis=1, reverse=True),
    "var": lambda m, a: m.var(a, axis=0, ddof=1),
    "argmax": lambda m, a: m.argmax(a, axis=1),
    "logsumexp": lambda m, a: m.logsumexp(a, axis=1),
    "where": lambda m, a: m.where(a > 0, a, -1.0),
    "split": lambda m, a: m.split(a, 2, axis=0),
    "divmod": lambda m, a: list(m.divmod(a, 0.7)),
    "int16": lambda m, a: (a * 10).astype(m.int16) // 3,
    "bfloat16": lambda m, a: a.astype(m.bfloat16) * 2,
    "arange_const": lambda m, a: a + m.arange(6),
    "tril_roll": lambda m, a: m.roll(m.tril(a), 2, axis=1),
    "scatter_add": lambda m, a: a.at[m.array([0, 2, 0])].add(1.0),
    "rms_norm": lambda m, a: m.fast.rms_norm(a, m.ones((6,)), 1e-5),
    "sdpa": lambda m, a: m.fast.scaled_dot_product_attention(
        *(a.reshape(1, 1, 4, 6),) * 3, scale=0.5),
    "rope": lambda m, a: m.fast.rope(a.reshape(1, 4, 6), 6, traditional=False, base=1e4,
                                     scale=1.0, offset=0),
    "rfft": lambda m, a: m.abs(m.fft.rfft(a)),
    "complex": lambda m, a: m.abs(a.astype(m.complex64) * 1j + 1),
    "view": lambda m, a: a.view(m.int32) >> 3,
    "passthrough": lambda m, a: (a, a + 1),
}


@pytest.mark.parametrize("name", sorted(_OPS))
def test_ops_survive_the_file(tmp_path, name):
    op = _OPS[name]
    a0, a1 = _data(4, 6), _data(4, 6)

    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        lib.export_function(path, lambda a: op(lib, a), lib.array(a0))
        return lib.import_function(path)(lib.array(a1))

    theirs, ours = _both(run)
    _same_values(theirs, ours, atol=1e-4)


def test_nn_module_with_its_weights_as_constants(tmp_path):
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    x0, x1 = mx.array(_data(2, 6)), mx.array(_data(5, 6))
    path = str(tmp_path / "model.fn")
    mx.export_function(path, model, x0, shapeless=True)
    expected = model(x1)
    model.update(tree_map(lambda p: p * 0, model.parameters()))  # later changes...
    (out,) = mx.import_function(path)(x1)  # ...do not reach the exported constants
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-5, atol=1e-5)


def test_in_place_update_and_repeated_example_array(tmp_path):
    def fun(x, y):
        out = x
        out += y
        return out * 2

    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        x = lib.array([1.0, 2.0])
        lib.export_function(path, fun, x, x)  # the same array twice: two inputs still
        return lib.import_function(path)(lib.array([1.0, 5.0]), lib.array([10.0, 20.0])), x

    (theirs, tx), (ours, ox) = _both(run)
    _same_values(theirs, ours)
    assert ox.tolist() == tx.tolist() == [1.0, 2.0]  # the example array is not updated


def test_random_draws_are_constants_of_the_trace(tmp_path):
    def run(lib):
        lib.random.seed(5)
        path = str(tmp_path / f"{lib.__name__}.fn")
        lib.export_function(path, lambda: lib.random.uniform(shape=(3,)))
        f = lib.import_function(path)
        after = lib.random.uniform(shape=(2,))  # the export drew from the global key
        lib.random.seed(5)
        return f(), f(), (lib.random.uniform(shape=(3,)), after)

    theirs, ours = _both(run)
    for t, o in zip(theirs, ours):
        _same_values(tuple(t), tuple(o))
    assert np.array_equal(np.asarray(ours[0][0]), np.asarray(ours[2][0]))


# ----------------------------------------------------------------------------------------------
# Calling conventions and errors


def test_calling_forms_and_keyword_matching(tmp_path):
    x, y, z = ([1.0, 2.0], [3.0, 5.0], [7.0, 11.0])

    def run(lib):
        a, b, c = lib.array(x), lib.array(y), lib.array(z)
        p1, p2 = str(tmp_path / f"{lib.__name__}1.fn"), str(tmp_path / f"{lib.__name__}2.fn")
        lib.export_function(p1, lambda u, v: u - v, a, b)
        lib.export_function(p2, lambda u, w=None: u * w, (a,), {"w": c})
        f, g = lib.import_function(p1), lib.import_function(p2)
        results = []
        for call in (lambda: f(a, b), lambda: f((a, b)), lambda: f([a, b]),
                     lambda: f(a, z=b), lambda: f(u=a, v=b), lambda: f((a, b), {}),
                     lambda: g(a, w=c), lambda: g((a,), {"w": c}), lambda: g(w=c, u=a),
                     lambda: g(a, c), lambda: g(a, y=c), lambda: f(a, 1.0),
                     lambda: f(a, [b]), lambda: f(a), lambda: f(a, b, c),
                     lambda: f(a, b.astype(lib.int32)), lambda: f(a, lib.ones((3,)))):
            try:
                results.append(call())
            except Exception as e:  # noqa: BLE001
                results.append(e)
        return results

    theirs, ours = _both(run)
    for t, o in zip(theirs, ours):
        if isinstance(t, Exception):
            _same_error(t, o)
        else:
            _same_values(t, o)


def test_bad_inputs_and_outputs_raise_mlx_errors(tmp_path):
    def cases(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        a = lib.array(1.0)
        return [
            lambda: lib.export_function(path, lambda x: x, "hi"),
            lambda: lib.export_function(path, lambda x, y: x, a, "hi"),
            lambda: lib.export_function(path, lambda x: x, [[a]]),
            lambda: lib.export_function(path, lambda x: x, 1.0),
            lambda: lib.export_function(path, lambda x, y=None: x, (a,), y=a),
            lambda: lib.export_function(path, lambda x, y=None: x, (a,), {"y": a}, a),
            lambda: lib.export_function(path, lambda x: x, {1: a}),
            lambda: lib.export_function(path, lambda: (lib.zeros(3), 1)),
            lambda: lib.export_function(path, lambda: {"a": lib.zeros(3)}),
            lambda: lib.export_function(path, lambda: None),
            lambda: lib.export_function(path, lambda x: x * x.sum().item(), a),
            lambda: lib.export_function(path, lambda x: x, a, metadata=3),
            lambda: lib.export_function(path, 3, a),
            lambda: lib.export_function("/nonexistent-dir/f.fn", lambda x: x, a),
            lambda: lib.exporter(path, lambda x: x, True),
            lambda: lib.import_function(str(tmp_path / "missing.fn")),
            lambda: lib.export_function(lambda d: None, lambda x: x, a, metadata="m"),
        ]

    theirs = [None] * 17
    ours = [None] * 17
    for store, lib in ((theirs, mlx), (ours, mx)):
        for i, c in enumerate(cases(lib)):
            try:
                c()
            except Exception as e:  # noqa: BLE001
                store[i] = e
    for t, o in zip(theirs, ours):
        _same_error(t, o)


def test_no_match_message_lists_the_traces(tmp_path):
    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        with lib.exporter(path, lambda a, b=None: a if b is None else a * b) as ex:
            ex(lib.ones((2, 3)))
            ex(lib.ones((4,), lib.int32), b=lib.ones((4,), lib.int32))
        return lib.import_function(path)(lib.ones((2,), lib.float16))

    theirs, ours = _both(run)
    _same_error(theirs, ours)  # MLX's hash-map order of the traces included


def test_exporter_lifecycle(tmp_path):
    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        log = []
        ex = lib.exporter(path, lambda a: a * 2, metadata="cfg")
        log.append(os.path.exists(path))  # the file exists from the start
        ex(lib.array([1.0, 2.0]))
        log.append(lib.import_function(path)(lib.array([3.0, 4.0]))[0].tolist())  # usable now
        for call in (lambda: ex(lib.array([5.0, 6.0])), lambda: ex.close(),
                     lambda: ex(lib.array([1, 2, 3])), lambda: ex.close()):
            try:
                log.append(call())
            except Exception as e:  # noqa: BLE001
                log.append((type(e).__name__, str(e)))
        f, meta = lib.import_function(path, return_metadata=True)
        log.append(meta)
        with lib.exporter(path, lambda a: a) as ex2:
            pass
        log.append(type(ex2).__name__)
        try:
            lib.import_function(path)(lib.array([1.0]))
        except ValueError as e:
            log.append(str(e))
        log.append(lib.import_function(path, return_metadata=True)[1])
        return log

    theirs, ours = _both(run)
    assert ours == theirs


def test_large_constant_is_stored_once(tmp_path):
    constant = mx.zeros((16, 2048))
    mx.eval(constant)
    path = str(tmp_path / "c.fn")
    with mx.exporter(path, lambda *args: constant + sum(args)) as ex:
        for i in range(5):
            ex(*[mx.array(1)] * i)
    assert os.path.getsize(path) < constant.nbytes + 8192
    f = mx.import_function(path)
    assert f()[0].shape == (16, 2048) and f(mx.array(1), mx.array(2))[0][0, 0].item() == 3


# ----------------------------------------------------------------------------------------------
# Shapeless


def test_shapeless_new_shapes_same_ndim_and_dtype(tmp_path):
    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        lib.export_function(path, lambda a, b: (lib.exp(a) + 1) @ b - b.sum(axis=0),
                            lib.ones((2, 3)), lib.ones((3, 4)), shapeless=True)
        f = lib.import_function(path)
        out = [f(lib.array(_a), lib.array(_b)) for _a, _b in ((A1, B1),)]
        for bad in ((lib.ones((2, 2, 3)), lib.ones((3, 4))),
                    (lib.ones((2, 3), lib.float16), lib.ones((3, 4)))):
            try:
                f(*bad)
            except ValueError as e:
                out.append(type(e).__name__)
        return out

    A1, B1 = _data(5, 7), _data(7, 2)
    theirs, ours = _both(run)
    _same_values(theirs[0], ours[0], atol=1e-4)
    assert ours[1:] == theirs[1:] == ["ValueError"] * 2


def test_shapeless_inner_dimension_mismatch_is_an_error(tmp_path):
    # MLX 0.32.4 returns numbers for (2,5) @ (3,4) here (it reads past the operands); we raise.
    path = str(tmp_path / "m.fn")
    mx.export_function(path, lambda a, b: a @ b, mx.ones((2, 3)), mx.ones((3, 4)),
                       shapeless=True)
    with pytest.raises(ValueError, match=r"\[matmul\] Last dimension of first input"):
        mx.import_function(path)(mx.ones((2, 5)), mx.ones((3, 4)))


def test_shapeless_variable_argument_count(tmp_path):
    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        with lib.exporter(path, lambda *args: sum(args), shapeless=True) as ex:
            for n in (1, 2, 3):
                ex(*[lib.array(n)] * n)
        f = lib.import_function(path)
        return [f(*[lib.array(k)] * n)[0].item() for n, k in ((1, 4), (2, 5), (3, 6))]

    theirs, ours = _both(run)
    assert ours == theirs == [4, 10, 18]


def test_shapeless_operation_without_a_shape_rule_says_so(tmp_path):
    path = str(tmp_path / "r.fn")
    mx.export_function(path, lambda a: a.reshape(2, 2) + 1, mx.ones((4,)), shapeless=True)
    f = mx.import_function(path)
    assert f(mx.ones((4,)))[0].shape == (2, 2)
    with pytest.raises(ValueError, match="cannot run the operation 'reshape' of this shapeless"):
        f(mx.ones((8,)))


# ----------------------------------------------------------------------------------------------
# Transforms of imported functions


def test_grad_vmap_compile_of_an_imported_function(tmp_path):
    def run(lib):
        path = str(tmp_path / f"{lib.__name__}.fn")
        lib.export_function(path, lambda a, b: lib.sin(a) * b, lib.ones((3,)), lib.ones((3,)))
        f = lib.import_function(path)
        x, y = lib.array([0.1, 0.5, 2.0]), lib.array([1.0, -2.0, 3.0])
        g = lib.grad(lambda a: f(a, y)[0].sum())(x)
        v = lib.vmap(lambda a: f(a, y)[0])(lib.stack([x, y]))
        c = lib.compile(lambda a: f(a, a)[0])(x)
        return (g, v, c)

    theirs, ours = _both(run)
    _same_values(theirs, ours)


# ----------------------------------------------------------------------------------------------
# The file format


def test_files_do_not_cross_between_mlx_and_pycudamlx(tmp_path):
    theirs, ours = str(tmp_path / "mlx.mlxfn"), str(tmp_path / "ours.fn")
    mlx.export_function(theirs, lambda a: a + 1, mlx.array([1.0]))
    mx.export_function(ours, lambda a: a + 1, mx.array([1.0]))
    with pytest.raises(RuntimeError, match=r"looks like a file exported by MLX 0\.32"):
        mx.import_function(theirs)
    with pytest.raises(RuntimeError, match="Invalid string size"):
        mlx.import_function(ours)
    (tmp_path / "junk.fn").write_bytes(b"not a function file")
    with pytest.raises(RuntimeError, match="is not a function file exported by pycudamlx"):
        mx.import_function(str(tmp_path / "junk.fn"))


def _rewrite(path, edit):
    """Apply ``edit`` to the JSON description of one of our files."""
    from pycudamlx.core import _export_format as fmt

    raw = open(path, "rb").read()
    head = len(fmt.MAGIC) + 12
    (length,) = np.frombuffer(raw[len(fmt.MAGIC) + 4:head], "<u8")
    doc = json.loads(raw[head:head + int(length)])
    edit(doc)
    text = json.dumps(doc).encode()
    with open(path, "wb") as f:
        f.write(raw[:len(fmt.MAGIC)] + fmt._PREFIX.pack(1, len(text)) + text
                + raw[head + int(length):])


def test_loading_is_safe_and_checked(tmp_path):
    path = str(tmp_path / "f.fn")
    mx.export_function(path, lambda a: mx.exp(a) * mx.array([2.0, 3.0]), mx.array([1.0, 2.0]))
    raw = open(path, "rb").read()
    assert raw.startswith(b"PYCUDAMLXFN\n") and b"pickle" not in raw

    def swap_class(doc):
        doc["functions"][0]["steps"][0][1]["$prim"] = "os:system"

    _rewrite(path, swap_class)
    with pytest.raises(RuntimeError, match="damaged.*unknown class 'os:system'"):
        mx.import_function(path)

    mx.export_function(path, lambda a: a * 2, mx.array([1.0]))
    _rewrite(path, lambda doc: doc.update(version=99))  # the JSON copy is informative only
    mx.import_function(path)
    with open(path, "r+b") as f:  # the binary version field is what counts
        f.seek(12)
        f.write(np.array([99], "<u4").tobytes())
    with pytest.raises(RuntimeError, match="format version 99"):
        mx.import_function(path)


def test_a_primitive_that_cannot_be_stored_is_a_clear_error(tmp_path):
    from pycudamlx.core.array import make
    from pycudamlx.graph.primitive import Primitive

    class Outsider(Primitive):  # not one of pycudamlx's primitive classes
        __slots__ = ()
        name = "outsider"

        def eval_cpu(self, inputs, outs):
            return [inputs[0]]

    def f(x):
        return make(Outsider(), (x,), x.shape, x.dtype, mx.default_stream(mx.cpu))

    with pytest.raises(ValueError, match="Unable to serialize the primitive Outsider"):
        mx.export_function(str(tmp_path / "c.fn"), f, mx.array([1.0]))


def test_callback_receives_the_graph_description():
    seen = []
    x = mx.array([1.0, 2.0])
    mx.export_function(seen.append, lambda a, b: a * b + 1, x, b=x)
    kinds = [d["type"] for d in seen]
    assert kinds[:4] == ["inputs", "keyword_inputs", "outputs", "constants"]
    assert seen[0]["inputs"] == [("A", (2,), mx.float32)]
    assert seen[1]["keywords"] == [("b", "B")]
    assert [d["name"] for d in seen[4:]] == ["Multiply", "Add"]


# ----------------------------------------------------------------------------------------------
# export_to_dot


def _normalise(dot: str) -> str:
    ids: dict[str, str] = {}
    return re.sub(r"\b\d{6,}\b", lambda m: ids.setdefault(m.group(), f"N{len(ids)}"), dot)


@pytest.mark.parametrize("case", ["single", "chain", "divmod", "named", "evaluated"])
def test_export_to_dot_matches_mlx_structure(case):
    def run(lib):
        x, y = lib.array([1.0, 2.0]), lib.array([3.0, 4.0])
        f = io.StringIO()
        if case == "single":
            lib.export_to_dot(f, x + y)
        elif case == "chain":
            a = x + y
            lib.export_to_dot(f, lib.exp(a) * x, a)
        elif case == "divmod":
            lib.export_to_dot(f, *lib.divmod(x, y))
        elif case == "named":
            lib.export_to_dot(f, lib.exp(x + y) * x, x=x, y=y)
        else:
            lib.export_to_dot(f, x)
        return _normalise(f.getvalue())

    theirs, ours = _both(run)
    assert ours == theirs


def test_export_to_dot_to_a_path_and_errors(tmp_path):
    path = str(tmp_path / "g.dot")
    mx.export_to_dot(path, mx.array(1.0) + 2)
    assert open(path).read().startswith("digraph {")
    theirs, ours = _both(lambda lib: lib.export_to_dot(3, lib.array(1.0)))
    _same_error(theirs, ours)
    theirs, ours = _both(lambda lib: lib.export_to_dot(io.StringIO(), 3))
    _same_error(theirs, ours)


def test_shapeless_layer_stack_at_other_batch_sizes(tmp_path):
    # Oracle: the same block run eagerly at each size (MLX 0.32.4 segfaults evaluating this
    # imported shapeless graph at new sizes, so it is not called here).
    w, b, g = (mx.array(v) for v in (_data(8, 6), _data(8), _data(8)))

    def block(x):
        p = mx.softmax(mx.fast.layer_norm(x @ w.T + b, g, None, 1e-5), axis=-1)
        return p, mx.argmax(p, axis=-1, keepdims=True), p.max(axis=0)

    path = str(tmp_path / "b.fn")
    mx.export_function(path, block, mx.ones((2, 6)), shapeless=True)
    f = mx.import_function(path)
    X = mx.array(_data(5, 6))
    for n in (5, 1, 2):
        got, want = f(X[:n]), block(X[:n])
        for o, e in zip(got, want):
            assert o.shape == e.shape and o.dtype == e.dtype
            np.testing.assert_allclose(np.asarray(o), np.asarray(e), rtol=1e-5, atol=1e-6)


def test_shapeless_addmm_rebroadcasts_its_bias(tmp_path):
    w, b, x = _data(8, 6), _data(8), _data(5, 6)
    path = str(tmp_path / "a.fn")
    W, B = mx.array(w), mx.array(b)
    mx.export_function(path, lambda v: mx.addmm(B, v, W.T), mx.ones((2, 6)), shapeless=True)
    (out,) = mx.import_function(path)(mx.array(x))
    np.testing.assert_allclose(np.asarray(out), x @ w.T + b, rtol=1e-5, atol=1e-5)


def test_updating_a_returned_constant_does_not_change_later_calls(tmp_path):
    path = str(tmp_path / "k.fn")
    mx.export_function(path, lambda a: (a + 1, mx.array([5, 6])), mx.array([1]))
    f = mx.import_function(path)
    _, const = f(mx.array([2]))
    const += 10
    assert const.tolist() == [15, 16] and f(mx.array([2]))[1].tolist() == [5, 6]
