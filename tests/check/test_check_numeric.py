"""Finite differences for --check: accuracy, scaled steps, random directions, kinks."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli.check.numeric import STEP, numeric_gradient


def grad_of(f, x, **kwargs):
    return numeric_gradient(lambda v: f(v["x"]), {"x": x}, ["x"], **kwargs)["x"]


def test_step_is_the_cube_root_of_machine_epsilon():
    assert STEP == pytest.approx(np.finfo(np.float64).eps ** (1 / 3))


def test_full_gradient_of_a_smooth_function_is_accurate():
    x = np.linspace(-1.5, 2.0, 6).reshape(2, 3)
    res = grad_of(lambda x: np.sum(np.sin(x) * np.exp(-x ** 2)), x)
    want = np.cos(x) * np.exp(-x ** 2) - 2 * x * np.sin(x) * np.exp(-x ** 2)
    assert res.method == "central"
    np.testing.assert_allclose(res.value, want, rtol=1e-8, atol=1e-10)
    assert (res.error < 1e-7).all()
    assert not res.kink.any()


def test_seed_gradients():
    def f(v):
        return v["w1"] * v["x1"] + v["w2"] * v["x2"]
    res = numeric_gradient(f, {"w1": 2.0, "w2": 3.0, "x1": 5.0, "x2": 7.0}, ["w1", "w2"])
    assert float(res["w1"].value) == pytest.approx(5.0, rel=1e-9)
    assert float(res["w2"].value) == pytest.approx(7.0, rel=1e-9)


def test_step_scales_with_large_inputs():
    res = grad_of(lambda x: x ** 2, 1e6)
    assert float(res.value) == pytest.approx(2e6, rel=1e-9)
    # Below 1 the step stays eps**(1/3): the truncation error (h^2 for x^3) is absolute,
    # and the error estimate covers it.
    tiny = grad_of(lambda x: x ** 3, 1e-3)
    assert abs(float(tiny.value) - 3e-6) <= float(tiny.error)
    assert abs(float(tiny.value) - 3e-6) < 1e-10


def test_steep_function_is_not_a_kink():
    res = grad_of(lambda x: np.exp(100 * x), 0.3)
    assert float(res.value) == pytest.approx(100 * np.exp(30.0), rel=1e-6)
    assert not bool(res.kink)


@pytest.mark.parametrize("f, x", [
    (np.abs, 0.0),
    (lambda x: np.maximum(x, 0.0), 0.0),
    (lambda x: np.minimum(x, 1.0), 1.0),
    (np.sign, 0.0),        # a jump in the value
    (np.floor, 2.0),       # a jump on one side only
])
def test_kinks_and_jumps_are_detected(f, x):
    assert bool(grad_of(f, x).kink)


@pytest.mark.parametrize("f, x", [
    (np.abs, 0.5), (lambda x: np.maximum(x, 0.0), -1.0), (np.floor, 2.5),
    (lambda x: np.abs(x) ** 2, 0.0),   # |x|^2 is differentiable at 0
    (np.sin, 0.0), (lambda x: x * np.abs(x), 0.0),
])
def test_no_kink_where_the_function_is_differentiable(f, x):
    assert not bool(grad_of(f, x).kink)


def test_kink_only_on_the_element_at_it():
    res = grad_of(lambda x: np.sum(np.abs(x)), np.array([0.0, 1.0, -2.0]))
    assert res.kink.tolist() == [True, False, False]
    np.testing.assert_allclose(res.value, [0.0, 1.0, -1.0], atol=1e-9)


def test_large_input_uses_one_random_direction():
    x = np.linspace(-1, 1, 1000)
    res = grad_of(lambda x: np.sum(x ** 3), x)
    assert res.method == "direction"
    assert res.direction.shape == x.shape
    assert float(res.value) == pytest.approx(float(np.dot(3 * x ** 2, res.direction)), rel=1e-8)
    assert not bool(res.kink)


def test_direction_is_reproducible_and_scaled_to_the_input():
    x = np.full(100, 50.0)
    first = grad_of(lambda x: np.sum(x), x)
    second = grad_of(lambda x: np.sum(x), x)
    np.testing.assert_array_equal(first.direction, second.direction)
    assert np.max(np.abs(first.direction)) == pytest.approx(50.0)


def test_kink_along_a_random_direction():
    x = np.concatenate([np.linspace(-1, 1, 100), [0.0]])
    assert bool(grad_of(lambda x: np.sum(np.abs(x)), x).kink)


def test_small_limit_switches_to_a_direction():
    assert grad_of(lambda x: np.sum(x), np.ones(5), full_limit=4).method == "direction"


def test_failing_evaluation_gives_no_estimate_and_says_why():
    def f(x):
        raise ValueError("boom")
    res = grad_of(f, 1.0)
    assert res.value is None
    assert "boom" in res.note


def test_outside_the_domain_gives_nan_with_a_note():
    res = grad_of(np.sqrt, 0.0)  # sqrt(-h) is nan
    assert np.isnan(res.value)
    assert "not finite" in res.note


def test_missing_source_value():
    res = numeric_gradient(lambda v: 0.0, {}, ["h"])["h"]
    assert res.value is None
    assert res.note == "no value for 'h' to perturb"


def test_perturbations_do_not_touch_the_callers_arrays():
    x = np.array([1.0, 2.0])
    grad_of(lambda x: np.sum(x ** 2), x)
    assert x.tolist() == [1.0, 2.0]
