"""``a[index]`` and ``a[index] = v`` against real MLX and numpy: placement of advanced-index
dimensions, negative steps, clamped bounds, errors, masks, duplicates, and value semantics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import (  # noqa: F401 - keep_array_class is an autouse fixture
    DTYPES, assert_same, compare, rand, to_mlx, to_ours, keep_array_class)


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


A = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)


def both(mx, text: str, message: bool = True, base: np.ndarray = A):
    """``text`` indexes ``a``; M is the library; compare ours and MLX's outcomes, and (on
    success) our values with numpy's."""
    def env(lib, conv):
        return {"M": lib, "np": np, "a": conv(base)}

    result = compare(lambda: eval(text, env(pm, to_ours)),
                     lambda: eval(text, env(mx, lambda x: to_mlx(mx, x))), message=message)
    return result


# -- __getitem__ -------------------------------------------------------------------------------

GET_CASES = [
    "a[0]", "a[-1]", "a[1:]", "a[::-1]", "a[::-2]", "a[:, 1]", "a[..., 1]", "a[None]",
    "a[:, None, 1]", "a[0, :, 1]", "a[0, :, M.array([1, 2])]", "a[:, 0, M.array([1, 2])]",
    "a[M.array([1, 0])]", "a[M.array([[1, 0], [0, 0]])]", "a[M.array([1, 0]), :, M.array([0, 2])]",
    "a[:, M.array([1, 0]), M.array([0, 2])]", "a[:, M.array([1, 0]), :, M.array([0, 2])]",
    "a[M.array([1, 0]), None, M.array([0, 2])]", "a[:, M.array([1, 0]), None, M.array([0, 2])]",
    "a[None, :, M.array([1, 0]), M.array([0, 2])]", "a[..., M.array([1, 0])]",
    "a[..., M.array([1, 0]), :]", "a[1, ..., 2]", "a[1, 2, 3, 4]", "a[1, 2, 3, 4, 5]",
    "a[..., ...]", "a[[0, 1]]", "a[(0, 1)]", "a[[0, 1], [1, 2]]", "a[M.array([True, False])]",
    "a[1.0]", "a['a']", "a[M.array(1)]", "a[M.array([1, 0], M.uint8)]",
    "a[M.array([1, 0], M.int64)]", "a[M.array([1.0, 0])]", "a[10:20]", "a[-100:100]", "a[5::-1]",
    "a[-100::-1]", "a[2:0:-1]", "a[:, :, M.array([-1, -2])]", "a[np.array([1, 0])]",
    "a[np.int64(1)]", "a[True]", "a[()]", "a[:, ::2, 1:3, ::-3]", "a[0, 1, 2:4, None, None]",
    "a[None, ..., None]", "a[M.array([0, 1]), M.array([[0], [2]])]",
    "a[M.array(0), M.array([0, 2])]", "a[M.array([], M.int32)]", "a[:, M.array([0, 1]), 0]",
    "a[0, M.array([0, 1]), 0]", "a[M.array([0, 1]), 0, :, 0]", "a[2**40]", "a[2**31:]",
    "a[:2**40]", "a[1.5:]", "a[None, None, 0]", "a[..., None]", "a[0:1, ..., M.array([0, 1])]",
    "a[[True, False]]", "a[[0.0, 1.0]]", "a[[[0, 1], [1, 0]]]", "a[[0, [1, 2]]]",
    "a[slice(None, None, None)]", "a[:, :, :, :, None]", "a[:, :, :, :, :]", "a[1, 1.5]",
    "a[1, np.array([0])]", "a[1, 'x']", "a[1, [0, 1]]", "a[1, [True, False, True]]",
    "a[1, M.array([True, False, True])]", "a[(1, M.array(1.5))]", "M.array(5)[0]",
    "M.array(5)[:]", "M.array(5)[None]", "M.array(5)[...]", "M.array(5)[()]",
    "M.array(5)[M.array([0])]", "M.array(5)[None, 0]", "M.array([1, 2])[1:2, None]",
    "a[0:1, ::-1, 1:, 3]", "a[M.array(True)]", "a[::2**31]", "a[[]]", "a[[[]]]",
    "a[M.array([[1], [0]]), ..., M.array([[0, 4, 2]])]",
    "a[:, M.array([2, 0]), 1:3, M.array([1, 1])]",
    "a[M.array([1, -1, 0]), -1, ::-1]", "a[-1, M.array([[2, -3]]), None, 1::2]",
]


@pytest.mark.parametrize("text", GET_CASES)
def test_getitem_matches_mlx(mx, text):
    both(mx, text)


_INDEX_PARTS = {
    "i": 1, "n": -2, "s": slice(1, 3), "st": slice(0, 5, 2), "r": slice(None, None, -1),
    "rs": slice(3, 0, -2), "f": slice(None), "a": np.array([2, 0]), "a2": np.array([[1], [0]]),
    "N": None, "E": Ellipsis, "o": slice(-10, 10),
}


def _all_indices(max_parts: int = 3):
    for k in range(1, max_parts + 1):
        for combo in itertools.product(_INDEX_PARTS, repeat=k):
            if combo.count("E") > 1:
                continue
            yield combo


def _ours_index(ix: tuple) -> tuple:
    return tuple(pm.array(x) if isinstance(x, np.ndarray) else x for x in ix)


def test_getitem_combinations_match_numpy():
    base = rand((4, 5, 6), "float32", 1)
    a = pm.array(base)
    checked = 0
    for combo in _all_indices():
        ix = tuple(_INDEX_PARTS[c] for c in combo)
        try:
            ref = base[ix]
        except IndexError:
            continue
        out = a[_ours_index(ix)]
        assert out.shape == ref.shape, (combo, out.shape, ref.shape)
        np.testing.assert_array_equal(np.array(out), ref, err_msg=str(combo))
        checked += 1
    assert checked > 1000


def test_getitem_combinations_match_mlx(mx):
    base = rand((4, 5, 6), "int32", 2)
    a, b = pm.array(base), mx.array(base)
    for combo in _all_indices(2):
        ix = tuple(_INDEX_PARTS[c] for c in combo)
        try:
            base[ix]
        except IndexError:
            continue
        theirs = tuple(mx.array(x) if isinstance(x, np.ndarray) else x for x in ix)
        compare(lambda: a[_ours_index(ix)], lambda: b[theirs])


@pytest.mark.parametrize("name", DTYPES)
def test_getitem_every_dtype_with_strided_sources(mx, name):
    x = rand((4, 5, 3), name, 4)
    o, t = pm.transpose(to_ours(x))[:, ::-2], mx.transpose(to_mlx(mx, x))[:, ::-2]
    idx = np.array([[2, 0], [1, -1]])
    assert_same(o[pm.array(idx), 1:], t[mx.array(idx), 1:])
    assert_same(o[1, :, pm.array([3, 0, 3])], t[1, :, mx.array([3, 0, 3])])
    assert_same(o[None, ..., 0], t[None, ..., 0])


def test_basic_indexing_is_a_view():
    a = pm.array(rand((4, 5, 6)))
    pm.eval(a)
    for view in (a[1], a[::-1, 2:, None], a[..., ::2], a[-1, -1, -1], a[None, 1:3, ..., 4],
                 a[0:0]):
        pm.eval(view)
        if view.size:
            assert np.shares_memory(np.asarray(view._data), a._data)
    for same in (a[:], a[...], a[()]):  # a new array object, as in MLX, with a's data
        assert same is not a and same._data is a._data


def test_out_of_range_ints_raise_index_error_where_mlx_misbehaves():
    a = pm.array(A)
    for index in (5, -3, (0, 5), (1, 2, 3, 7), (0, slice(None), -5)):
        with pytest.raises(IndexError, match="out of bounds"):
            a[index]
    with pytest.raises(IndexError, match="out of bounds"):
        a[[0, 2]]                        # host-side index: checked
    with pytest.raises(IndexError, match="out of bounds"):
        a[:, pm.array([-4])]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        a[::0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        a[1, 2:3:0]


def test_lazy_out_of_range_index_arrays_read_zero():
    a = pm.array(np.arange(10))
    idx = pm.add(pm.array([3, 20, -1, -30]), 0)      # lazy: not read back on the host
    np.testing.assert_array_equal(np.array(a[idx]), [3, 0, 9, 0])


# -- __setitem__ -------------------------------------------------------------------------------

SET_CASES = [
    "A[0] = 5", "A[-1] = 5", "A[0, 1] = M.array([1, 2, 3, 4])", "A[:, 1] = M.array([[1, 2, 3, 4]])",
    "A[1:, ::2] = 7", "A[..., 1] = 9", "A[None] = 3", "A[M.array([1, 0])] = 4",
    "A[M.array([0, 0])] = M.array(np.array([[[1.0]], [[2.0]]], np.float32))",
    "A[M.array([0, 1]), :, M.array([1, 2])] = M.array([10, 20])[:, None]",
    "A[:, M.array([0, 0, 0]), 1] = M.array([[1, 2, 3], [4, 5, 6]])",
    "A[M.array([True, False])] = 3", "A[M.array(np.arange(24).reshape(2, 3, 4) % 2 == 0)] = 3",
    "A[M.array(np.arange(24).reshape(2, 3, 4) % 2 == 0)] = M.array(np.arange(12.))",
    "A[0] = M.array([1, 2])", "A[0] = 2.5", "A[0] = 1 + 2j", "A[0] = True", "A[0] = 'x'",
    "A[0] = [1, 2, 3, 4]", "A[0] = np.array([1, 2, 3, 4])", "A[[0, 1]] = 1",
    "A[1, M.array([1, 2]), 1:3] = M.array([[1, 2], [3, 4]])",
    "A[:, :] = M.array([1, 2, 3, 4])", "A[...] = 0", "A[()] = 0",
    "A[M.array([0, 1])] = M.array(np.ones((1, 1, 2, 3, 4), np.float32))", "A[M.array([-1])] = 9",
    "A[0, M.array([-1])] = 9", "A[0:5:2] = 9", "A[0, ::-1] = M.array([[1.0], [2.0], [3.0]])",
    "A[M.array([True, False])] = M.array(np.ones((3, 4), np.float32) * 7)",
    "A[M.array([True, True])] = M.array(np.arange(24.).reshape(2, 3, 4) * 2)",
    "A[M.array([[True, False, True], [False, False, True]])] = M.array(np.arange(4.))",
    "A[M.array([True, False, True])] = 5", "A[M.array(True)] = 5", "A[M.array(False)] = 5",
    "A[[True, False]] = 5", "A[M.array([True, False])] = M.array([1, 2, 3, 4])",
    "A[M.array(np.arange(24).reshape(2, 3, 4) % 2 == 0)] = M.array(np.arange(24.))",
    "A[M.array([[True, False, True], [False, False, True]])] = M.array(np.arange(24.))",
    "A[M.array([[True, False, True], [False, False, True]])] = "
    "M.array(np.arange(24.).reshape(6, 4))",
    "A[M.array([1, 0])] = M.array(np.arange(24.).reshape(2, 3, 4))", "A[0] = 2**40",
    "A[::-1, M.array([2, 0, 2]), ::2] = M.array(np.arange(12.).reshape(2, 3, 2))",
    "A[M.array([[0], [1]]), M.array([1, 2, 0])] = M.array(np.arange(24.).reshape(2, 3, 4))",
]


def _run_set(lib, text, base, conv):
    env = {"M": lib, "np": np, "A": conv(base)}
    exec(text, env)
    return env["A"]


@pytest.mark.parametrize("text", SET_CASES)
def test_setitem_matches_mlx(mx, text):
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    compare(lambda: _run_set(pm, text, base, to_ours),
            lambda: _run_set(mx, text, base, lambda x: to_mlx(mx, x)))


def test_setitem_combinations_match_numpy(mx):
    """Every combination of up to three index kinds: numpy's placement of the value; MLX
    agrees except where its __setitem__ expects a layout its own __getitem__ does not give
    (there MLX raises, and we follow numpy)."""
    rng = np.random.default_rng(0)
    base = rand((4, 5, 6), "float32", 3)
    agree = 0
    for combo in _all_indices():
        ix = tuple(_INDEX_PARTS[c] for c in combo)
        try:
            target = base[ix].shape
        except IndexError:
            continue
        v = rng.standard_normal(target).astype(np.float32)
        ref = base.copy()
        ref[ix] = v
        a = pm.array(base)
        a[_ours_index(ix)] = pm.array(v)
        np.testing.assert_array_equal(np.array(a), ref, err_msg=str(combo))
        if len(combo) <= 2:
            b = mx.array(base)
            try:
                b[tuple(mx.array(x) if isinstance(x, np.ndarray) else x for x in ix)] = \
                    mx.array(v)
            except ValueError:
                continue
            np.testing.assert_array_equal(np.array(b), ref, err_msg=str(combo))
            agree += 1
    assert agree > 100


@pytest.mark.parametrize("name", DTYPES)
def test_setitem_every_dtype(mx, name):
    x = rand((5, 4), name, 7)
    v = rand((2, 4), name, 8)
    o, t = to_ours(x), to_mlx(mx, x)
    o[pm.array([3, 1])] = to_ours(v)
    t[mx.array([3, 1])] = to_mlx(mx, v)
    o[1:3, ::-2] = to_ours(v)[:, :2]
    t[1:3, ::-2] = to_mlx(mx, v)[:, :2]
    assert_same(o, t)


def test_duplicate_indices_last_write_wins(mx):
    base = np.zeros(6, np.float32)
    idx = [1, 3, 1, 1, 5, 3]
    vals = np.arange(1, 7, dtype=np.float32)
    o, t = pm.array(base), mx.array(base)
    o[pm.array(idx)] = pm.array(vals)
    t[mx.array(idx)] = mx.array(vals)
    assert_same(o, t)
    assert np.array(o).tolist() == [0, 4, 0, 6, 0, 5]


def test_setitem_keeps_old_value_for_earlier_consumers():
    a = pm.array(np.arange(6.0))
    before = a * 2
    view = a[1:4]
    a[0] = 100
    a[1] = a[2] + a[0]
    np.testing.assert_array_equal(np.array(before), np.arange(6.0) * 2)
    np.testing.assert_array_equal(np.array(view), [1, 2, 3])
    np.testing.assert_array_equal(np.array(a), [100, 102, 2, 3, 4, 5])
    alias = a
    alias[5] = -1
    assert np.array(a)[5] == -1


def test_setitem_errors():
    a = pm.array(np.zeros((2, 3), np.float32))
    a[2] = 1         # out of range: the update is dropped (tests/test_scatter_bounds.py)
    a[[0, 5]] = 1    # the row of index 0 is written, index 5's dropped
    np.testing.assert_array_equal(np.array(a), [[1, 1, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        a[::0] = 1
    with pytest.raises(ValueError, match="cannot be broadcast"):
        a[0] = pm.array([1, 2])
    with pytest.raises(ValueError, match="masked positions"):
        a[pm.array([[True, True, False], [True, True, False]])] = pm.array([1.0, 2, 3])
    with pytest.raises(ValueError, match="overflow"):
        u = pm.zeros(3, pm.uint8)
        u[0] = 300


def test_setitem_checks_the_update_shape_before_index_range(mx):
    """A mis-shaped update is MLX's ValueError even when an index array is also out of range
    (MLX does not range-check; we drop the out-of-range updates of an otherwise valid one)."""
    for m in (pm, mx):
        for update in (m.arange(2), m.arange(3)):
            a = m.zeros((4, 3, 4))
            with pytest.raises(ValueError, match="cannot be broadcast"):
                a[m.array([2, 3]), None, m.array([2, 3])] = update
    a = pm.zeros((4, 3, 4))
    a[pm.array([2, 3]), None, pm.array([2, 3])] = pm.arange(4)  # (3, 3) is dropped
    assert np.array(a)[2, 2].tolist() == [0, 1, 2, 3] and np.array(a).sum() == 6

def test_setitem_with_a_bare_bool_is_a_mask(mx):
    """a[True] = v sets every element and a[False] = v none, as MLX (which refuses a bare bool
    in a[...] reads, as we do)."""
    for stmt in ("a[True] = 5.0", "a[False] = 5.0", "a[np.bool_(True)] = m.array([7.0])",
                 "c[True] = m.arange(3)", "c[False] = 2", "s[True] = 4.0"):
        results = []
        for m in (pm, mx):
            env = {"m": m, "np": np, "a": m.array([1.0, 2.0, 3.0]), "c": m.zeros((2, 3)),
                   "s": m.array(1.0)}
            exec(stmt, env)  # noqa: S102 - fixed test statements
            results.append([env[k].tolist() for k in ("a", "c", "s")])
        assert results[0] == results[1], stmt
    with pytest.raises(ValueError, match="Cannot index mlx array using the given type"):
        pm.array([1.0, 2.0])[True]

def test_lazy_out_of_range_scatter_indices_are_skipped():
    a = pm.array(np.zeros(5, np.float32))
    idx = pm.add(pm.array([1, 9, -1, -20]), 0)
    a[idx] = pm.array([1.0, 2, 3, 4])
    np.testing.assert_array_equal(np.array(a), [0, 1, 0, 0, 3])


def test_newaxis_is_none():
    assert pm.newaxis is None
    assert pm.array(np.arange(3))[pm.newaxis].shape == (1, 3)


def test_hypothesis_getitem_outcomes():
    """Any index gives MLX's result (numpy's where MLX is absent) or a typed exception, never a
    crash. MLX runs only indices we accepted (all in range, so safe for it). MLX differs from
    numpy in one place: an Ellipsis standing for no axes does not separate advanced indices."""
    hypothesis = pytest.importorskip("hypothesis")
    try:
        import mlx.core as real
    except ImportError:
        real = None
    st = hypothesis.strategies
    part = st.one_of(st.integers(-6, 6), st.none(), st.just(Ellipsis),
                     st.builds(slice, st.one_of(st.none(), st.integers(-8, 8)),
                               st.one_of(st.none(), st.integers(-8, 8)),
                               st.one_of(st.none(), st.integers(-3, 3))),
                     st.lists(st.integers(-5, 4), min_size=1, max_size=3))
    base = rand((3, 4, 5), "int32", 5)
    a = pm.array(base)
    b = real.array(base) if real is not None else None

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.lists(part, max_size=4))
    def check(parts):
        ix = tuple(parts)
        try:
            ours = np.array(a[ix])
        except (IndexError, ValueError, TypeError):
            return
        if b is not None:
            ref = np.array(b[tuple(real.array(p) if isinstance(p, list) else p for p in ix)])
        elif Ellipsis in ix:
            return
        else:
            ref = base[tuple(np.array(p) if isinstance(p, list) else p for p in ix)]
        assert ours.shape == ref.shape
        np.testing.assert_array_equal(ours, ref)

    check()


@pytest.mark.parametrize("shape,index,vshape", [
    ((2, 3), 0, (4,)), ((2, 3), 1, (2, 3)), ((2, 3), -1, (1, 1, 3)), ((5,), 2, (2,)),
    ((2, 3, 4), 1, (4, 4)), ((2, 3, 4), 1, (1, 2, 3, 4)), ((2, 3, 4), 0, (3, 1))])
def test_setitem_int_index_shape_errors_match_mlx(mx, shape, index, vshape):
    """a[i] = v broadcasts v to (1, *a.shape[1:]) in MLX: its error names that shape."""
    outcomes = []
    for m in (mx, pm):
        a = m.ones(shape)
        try:
            a[index] = m.ones(vshape)
            outcomes.append(("ok", np.array(a).tolist()))
        except ValueError as e:
            outcomes.append(("error", str(e)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("index", [Ellipsis, (), (Ellipsis,), (None,)])
def test_setitem_whole_scalar(mx, index):
    # x[...] = v on a 0-d array used to fail while checking for an integer index
    for make_value in (lambda lib: 0, lambda lib: lib.array(3.0), lambda lib: lib.array([4.0])):
        ours = pm.array(1.0)
        ours[index] = make_value(pm)
        theirs = mx.array(1.0)
        theirs[index] = make_value(mx)
        assert ours.shape == theirs.shape == ()
        assert ours.dtype == pm.float32
        assert ours.item() == theirs.item()


def test_along_axis_with_empty_float_indices(mx):
    """MLX's scatter skips empty indices, so put_along_axis accepts empty float indices;
    take_along_axis refuses them, and non-empty ones are its RuntimeError."""
    for m in (pm, mx):
        a = m.array([], m.float32)
        out = m.put_along_axis(a, a, a, axis=None)
        m.eval(out)
        assert out.shape == (0,)
        out = m.put_along_axis(m.zeros((2, 0)), m.zeros((2, 0)), m.zeros((2, 0)), axis=1)
        m.eval(out)
        assert out.shape == (2, 0)
        with pytest.raises(RuntimeError, match="Cannot gather with indices type"):
            m.eval(m.take_along_axis(m.zeros((2, 0)), m.zeros((2, 0)), axis=1))
    with pytest.raises(RuntimeError, match="Cannot scatter with indices type"):
        pm.put_along_axis(pm.zeros(3), pm.array([0.0, 1.0]), pm.array([1.0, 1.0]), axis=0)


def test_setitem_ellipsis_on_a_scalar_array(mx):
    """s[...] = v on a 0-d array writes v (was an internal IndexError); a[...] broadcasts and
    squeezes leading size-1 dims of the update, as MLX."""
    for m in (pm, mx):
        s = m.array(0)
        s[...] = 7
        assert s.tolist() == 7
        s[...] = m.array([[9]])
        assert s.tolist() == 9 and s.shape == ()
        e = m.zeros((2, 3), m.int32)
        e[...] = m.array([[[1, 2, 3], [4, 5, 6]]])
        assert e.tolist() == [[1, 2, 3], [4, 5, 6]]
        with pytest.raises(ValueError):
            e[...] = m.zeros((2, 1, 3), m.int32)
