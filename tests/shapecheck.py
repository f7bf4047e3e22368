"""Helpers shared by the creation, shape and indexing tests: run an expression on pycudamlx and on
real MLX (and numpy) and compare dtypes, shapes, values, error classes and messages."""

from __future__ import annotations

from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import pycudamlx.core as pm

#: The array class, captured at import (see keep_array_class).
ARRAY_CLASS = pm.array


@pytest.fixture(autouse=True)
def keep_array_class(monkeypatch):
    """Guard against an earlier test having rebound ``pycudamlx.core.array`` to the submodule
    (an in-process ``import mlx.core.array`` through the import hook does that; reported):
    these tests need the class."""
    if pm.array is not ARRAY_CLASS:
        monkeypatch.setattr(pm, "array", ARRAY_CLASS)
    yield


DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "complex64"]


def rand(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """Random values (never all zeros) of a dtype, as numpy."""
    rng = np.random.default_rng(seed)
    if dtype == "bool_":
        return rng.random(shape) > 0.5
    if dtype.startswith("uint"):
        return rng.integers(1, 200, shape).astype(dtype)
    if dtype.startswith("int"):
        return rng.integers(-100, 100, shape).astype(dtype)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    if dtype == "bfloat16":
        return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def host(x: Any) -> Any:
    """An array (ours or MLX's), or a list/tuple of them, as numpy."""
    if isinstance(x, (list, tuple)):
        return [host(e) for e in x]
    if isinstance(x, pm.array):
        return np.array(x)
    mlx_core = pytest.importorskip("mlx.core")
    if isinstance(x, mlx_core.array):
        if x.dtype == mlx_core.bfloat16:
            return np.array(x.astype(mlx_core.float32)).astype(ml_dtypes.bfloat16)
        return np.array(x)
    return x


def dtype_name(x: Any) -> str:
    return str(x.dtype).rsplit(".", 1)[1]


def tolerance(name: str) -> dict[str, float]:
    if name in ("float16", "bfloat16"):
        return {"rtol": 1e-2, "atol": 1e-2}
    if name in ("float32", "complex64"):
        return {"rtol": 1e-6, "atol": 1e-6}
    if name == "float64":
        return {"rtol": 1e-12, "atol": 1e-12}
    return {"rtol": 0, "atol": 0}


def assert_same(ours: Any, theirs: Any, exact: bool = True, tol: dict | None = None) -> None:
    """Same type of result, dtype names, shapes and values (exact or within a tolerance)."""
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)), f"expected a sequence, got {type(ours)}"
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t, exact, tol)
        return
    if not hasattr(theirs, "dtype"):
        assert ours == theirs
        return
    assert dtype_name(ours) == dtype_name(theirs), (dtype_name(ours), dtype_name(theirs))
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    o, t = host(ours), host(theirs)
    if exact and tol is None:
        np.testing.assert_array_equal(o.astype(np.float64) if o.dtype == ml_dtypes.bfloat16
                                      else o, t.astype(np.float64)
                                      if t.dtype == ml_dtypes.bfloat16 else t)
    else:
        tol = tol or tolerance(dtype_name(ours))
        np.testing.assert_allclose(o.astype(np.complex128), t.astype(np.complex128), **tol)


def outcome(fn: Callable[[], Any]) -> tuple:
    try:
        return ("ok", fn())
    except Exception as exc:  # compared between libraries
        return ("error", exc)


def compare(ours_fn: Callable[[], Any], mlx_fn: Callable[[], Any], exact: bool = True,
            tol: dict | None = None, message: bool = True) -> Any:
    """Run both; both succeed with the same result, or both raise: our exception is an instance
    of MLX's class and (with ``message``) ours contains the start of MLX's message."""
    o = outcome(ours_fn)
    t = outcome(mlx_fn)
    if t[0] == "error":
        assert o[0] == "error", f"MLX raised {t[1]!r}, we returned {o[1]!r}"
        assert isinstance(o[1], type(t[1])), f"MLX raised {t[1]!r}, we raised {o[1]!r}"
        if message:
            head = str(t[1]).split("\n")[0][:24]
            assert head in str(o[1]), f"MLX: {t[1]!r}\nours: {o[1]!r}"
        return None
    if o[0] == "error":
        raise AssertionError(f"MLX returned {t[1]!r}, we raised {o[1]!r}") from o[1]
    assert_same(o[1], t[1], exact, tol)
    return o[1]


def to_mlx(mx: Any, x: np.ndarray) -> Any:
    if x.dtype == ml_dtypes.bfloat16:
        return mx.array(x.astype(np.float32)).astype(mx.bfloat16)
    return mx.array(x)


def to_ours(x: np.ndarray) -> pm.array:
    if x.dtype == ml_dtypes.bfloat16:
        return pm.array(x.astype(np.float32), pm.bfloat16)
    return pm.array(x)


def data_of(a: pm.array) -> Any:
    """The evaluated backing data of an array (numpy or GpuArray)."""
    pm.eval(a)
    return a._data
