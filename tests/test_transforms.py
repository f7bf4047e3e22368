"""mx.compile (runs the function as written), stop_gradient, and the names not provided yet."""

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


def test_names_not_implemented_yet_say_so_and_stay_attribute_errors():
    with pytest.raises(AttributeError, match=r"mx\.qqmm is not implemented in pycudamlx yet"):
        mx.qqmm  # noqa: B018
    assert not hasattr(mx, "export_function") and not hasattr(mx, "qqmm")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mx.no_such_name  # noqa: B018
