"""Scatters past the end: ``x[idx] = v``, ``x.at[idx].add(v)`` (and the other combiners),
``put_along_axis``, with index values out of range (after MLX's one negative wrap) drop their
updates, as JAX does, whether the index values are on the host (a list, numpy, a Python int) or
lazy; kernels never touch memory outside the array. MLX 0.32.4 writes out of bounds there (heap
corruption), so the oracle is MLX running the same program without the dropped updates.
Reads are unchanged (``x[7]`` raises IndexError; ``take`` past the end reads 0)."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from shapecheck import keep_array_class  # noqa: F401 - autouse fixture


@pytest.fixture(scope="module")
def mx():
    return pytest.importorskip("mlx.core")


N = 5
INDICES = [1, 7, -1, -6, 3, 5, -5, 2**20]


def _in_range(i: int) -> bool:
    return -N <= i < N


def _index(M, values, lazy):
    idx = M.array(values)
    return idx + M.array(0) if lazy else idx


@pytest.mark.parametrize("lazy", [False, True], ids=["host", "lazy"])
def test_setitem_drops_out_of_range(mx, lazy):
    keep = [k for k, i in enumerate(INDICES) if _in_range(i)]
    vals = np.arange(1, len(INDICES) + 1, dtype=np.float32)
    x = pm.zeros((N,))
    x[_index(pm, INDICES, lazy)] = pm.array(vals)
    y = mx.zeros((N,))
    y[mx.array([INDICES[k] for k in keep])] = mx.array(vals[keep])
    np.testing.assert_array_equal(np.array(x), np.array(y))


def test_setitem_list_and_int_indices_drop(mx):
    x = pm.zeros((3, 4))
    x[[0, 9, -1]] = pm.array([[1.0], [2.0], [3.0]])
    x[5] = 7.0
    x[-4] = 7.0
    x[1, 9] = 8.0
    y = mx.zeros((3, 4))
    y[mx.array([0, -1])] = mx.array([[1.0], [3.0]])
    np.testing.assert_array_equal(np.array(x), np.array(y))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("lazy", [False, True], ids=["host", "lazy"])
def test_at_drops_out_of_range(mx, op, lazy):
    keep = [k for k, i in enumerate(INDICES) if _in_range(i)]
    vals = np.arange(2, len(INDICES) + 2, dtype=np.float32)
    base = np.linspace(-1, 1, N).astype(np.float32)
    got = getattr(pm.array(base).at[_index(pm, INDICES, lazy)], op)(pm.array(vals))
    exp = getattr(mx.array(base).at[mx.array([INDICES[k] for k in keep])], op)(
        mx.array(vals[keep]))
    np.testing.assert_allclose(np.array(got), np.array(exp), rtol=1e-6)
    np.testing.assert_array_equal(np.array(pm.array(base).at[N + 2].add(1.0)), base)


@pytest.mark.parametrize("lazy", [False, True], ids=["host", "lazy"])
def test_put_along_axis_drops_out_of_range(mx, lazy):
    idx = np.array([[0, 3], [-1, -4], [5, 1]])  # one in range per row
    vals = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    got = pm.put_along_axis(pm.zeros((3, 3)), _index(pm, idx, lazy), pm.array(vals), axis=1)
    mask = (idx >= -3) & (idx < 3)
    exp = np.zeros((3, 3), np.float32)
    for r in range(3):
        for c in range(2):
            if mask[r, c]:
                exp[r, idx[r, c]] = vals[r, c]
    # the in-range part against MLX (one in-range column per row)
    theirs = mx.put_along_axis(mx.zeros((3, 3)), mx.array([[0], [-1], [1]]),
                               mx.array([[1.0], [3.0], [6.0]]), axis=1)
    np.testing.assert_array_equal(exp, np.array(theirs))
    np.testing.assert_array_equal(np.array(got), exp)


def test_scatter_into_an_empty_axis(mx):
    """An int drops its update (MLX: no error); an index array is MLX's ValueError."""
    for M in (pm, mx):
        x = M.zeros((0, 2))
        x[0] = 1.0
        assert x.shape == (0, 2)
        for stmt in ("x[M.array([0])] = 1.0", "x.at[M.array([0, -1])].add(1.0)"):
            with pytest.raises(ValueError, match=r"\[scatter\]"):
                exec(stmt)
    assert pm.zeros((0, 2)).at[0].add(1.0).shape == (0, 2)


def test_update_shape_is_still_checked_for_an_out_of_range_int(mx):
    for M in (pm, mx):
        x = M.zeros((4,))
        with pytest.raises(ValueError, match="Cannot broadcast"):
            x[1] = M.array([1.0, 2.0])
    x = pm.zeros((4,))
    with pytest.raises(ValueError, match="Cannot broadcast"):
        x[7] = pm.array([1.0, 2.0])


def test_reads_stay_checked():
    x = pm.arange(4.0)
    with pytest.raises(IndexError, match="out of bounds"):
        x[7]
    with pytest.raises(IndexError, match="out of bounds"):
        x[pm.array([1, 9])]  # host index values: numpy's IndexError
    np.testing.assert_array_equal(np.array(pm.take(x, pm.array([1, 9, -9]))), [1, 0, 0])
    lazy = pm.array([1, 9]) + pm.array(0)
    np.testing.assert_array_equal(np.array(x[lazy]), [1, 0])


def test_gpu_scatter_kernels_bounds_check_every_index():
    """The CUDA scatters drop out-of-range updates: scatter_claim / scatter_write in skip
    mode (the host passes skip=1 for Scatter and ScatterAxis) and scatter_reduce always."""
    from pathlib import Path

    import pycudamlx.backend.cuda.kernels as K
    src = (Path(K.__file__).parent / "gather.cu").read_text()
    assert "if (v < 0 || v >= A.axis_sizes[k]) return false;" in src
    for kernel in ("scatter_claim", "scatter_write", "scatter_reduce"):
        body = src.split(f"void {kernel}(", 1)[1].split("\n}\n", 1)[0]
        assert "if (!index_term<IdxT, I>(A, idx," in body and "continue;" in body
    from pycudamlx.graph.primitives import shape as P
    import inspect
    for cls in (P.Scatter, P.ScatterAxis):
        assert "skip=True" in inspect.getsource(cls.eval_gpu)
