"""Forward mode in the library: ForwardAccumulator with TensorFlow 2's semantics, gc.jvp,
and gc.hessian_vector_product (forward over reverse), against exact values, sympy and
finite differences."""
import numpy as np
import pytest
import sympy as sp

import gradcli as gc
from gradcli.engine.core import state


def test_jvp_of_a_product_is_the_directional_derivative():
    x, y = gc.constant(3.0), gc.constant(4.0)
    with gc.ForwardAccumulator([x, y], [1.0, 2.0]) as acc:
        z = x * x * y
    # d(x^2 y) = 2xy dx + x^2 dy = 24 + 18
    assert float(acc.jvp(z)) == 42.0


def test_jvp_of_a_primal_is_its_tangent():
    x = gc.constant([1.0, 2.0])
    acc = gc.ForwardAccumulator(x, [5.0, 6.0])
    np.testing.assert_array_equal(acc.jvp(x).numpy(), [5.0, 6.0])


def test_unconnected_values_have_none_or_zeros():
    x, c = gc.constant(2.0), gc.constant([1.0, 2.0])
    with gc.ForwardAccumulator(x, 1.0) as acc:
        y = gc.sin(c)
    assert acc.jvp(y) is None
    np.testing.assert_array_equal(acc.jvp(y, unconnected_gradients="zero").numpy(), [0, 0])
    with pytest.raises(ValueError, match="unconnected_gradients"):
        acc.jvp(y, unconnected_gradients="maybe")


def test_jvp_takes_and_returns_nests():
    x = gc.constant(2.0)
    with gc.ForwardAccumulator(x, 1.0) as acc:
        out = {"square": x * x, "pair": [x * 3.0, gc.exp(x)]}
    jvps = acc.jvp(out)
    assert float(jvps["square"]) == 4.0 and float(jvps["pair"][0]) == 3.0
    assert float(jvps["pair"][1]) == pytest.approx(np.exp(2.0), rel=1e-15)


def test_operations_after_the_block_carry_no_tangent():
    x = gc.constant(2.0)
    with gc.ForwardAccumulator(x, 1.0) as acc:
        y = x * x
    z = y * 3.0
    assert float(acc.jvp(y)) == 4.0 and acc.jvp(z) is None
    assert state.forward == []


def test_the_accumulator_is_removed_when_the_block_raises():
    x = gc.constant(2.0)
    with pytest.raises(RuntimeError), gc.ForwardAccumulator(x, 1.0):
        raise RuntimeError("boom")
    assert state.forward == []


def test_without_an_accumulator_nothing_is_recorded():
    y = gc.sin(gc.constant(1.0)) * 2.0
    assert y._node is None


def test_bad_primals_and_tangents_are_refused():
    x = gc.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        gc.ForwardAccumulator(x, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one tangent per primal"):
        gc.ForwardAccumulator([x, gc.constant([3.0, 4.0])], [[1.0, 2.0]])
    with pytest.raises(TypeError, match="tensors or variables"):
        gc.ForwardAccumulator(2.0, 1.0)


@pytest.mark.parametrize("make", [lambda: gc.constant(2.0), lambda: gc.Variable(2.0)])
def test_a_primal_given_twice_is_refused_as_tensorflow_refuses_it(make):
    # tf.autodiff.ForwardAccumulator's documented behaviour: "ValueError: If the same
    # tensor or variable is specified multiple times in primals" (it summed the tangents)
    x = make()
    with pytest.raises(ValueError, match="twice"):
        gc.ForwardAccumulator([x, x], [1.0, 2.0])
    with pytest.raises(ValueError, match="twice"):
        gc.ForwardAccumulator({"a": x, "b": [x]}, {"a": 1.0, "b": [2.0]})
    # two tensors of the same value are two primals: d(x*y) = y dx + x dy = 2 + 4
    y = gc.constant(2.0)
    with gc.ForwardAccumulator([x, y], [1.0, 2.0]) as acc:
        z = x * y
    assert float(acc.jvp(z)) == 6.0


def test_reentering_an_active_accumulator_is_refused():
    acc = gc.ForwardAccumulator(gc.constant(1.0), 1.0)
    with acc, pytest.raises(ValueError, match="re-entered"):
        acc.__enter__()


def test_variables_as_primals_carry_their_tangent_where_read():
    w = gc.Variable([1.0, 2.0])
    x = gc.constant([3.0, 5.0])
    with gc.ForwardAccumulator(w, [1.0, 0.0]) as acc:
        loss = gc.sum(w * x)
    assert float(acc.jvp(loss)) == 3.0


def test_tangents_keep_the_primal_dtype():
    x = gc.constant([1.0, 2.0], dtype="float32")
    with gc.ForwardAccumulator(x, [1.0, 1.0]) as acc:
        y = x * 2.0
    assert acc.jvp(y).dtype == np.float32


def test_forward_over_reverse_gives_a_hessian_vector_product():
    # TensorFlow's own example: the Hessian of sum(x^3) is diag(6x).
    x, v = gc.constant([1.0, 2.0]), gc.constant([1.0, 0.0])
    with gc.ForwardAccumulator(x, v) as acc:
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.sum(x ** 3.0)
        backward = tape.gradient(y, x)
    np.testing.assert_array_equal(acc.jvp(backward).numpy(), [6.0, 0.0])


def test_reverse_over_forward_differentiates_a_jvp():
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        with gc.ForwardAccumulator(x, 1.0) as acc:
            y = x ** 3.0
        derivative = acc.jvp(y)  # 3 x^2
    assert float(derivative) == 12.0
    assert float(tape.gradient(derivative, x)) == 12.0  # 6 x


def test_nested_accumulators_give_second_directional_derivatives():
    x = gc.constant(2.0)
    with gc.ForwardAccumulator(x, 1.0) as outer:
        with gc.ForwardAccumulator(x, 1.0) as inner:
            y = x ** 3.0
        first = inner.jvp(y)
    assert float(first) == 12.0
    assert float(outer.jvp(first)) == 12.0  # 6 x
    assert float(outer.jvp(y)) == 12.0


@pytest.mark.parametrize("name,f,derivatives", [
    ("exp", gc.exp, [np.exp] * 4),
    ("sin", gc.sin, [np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v), np.sin]),
    ("tanh", gc.tanh, [lambda v: 1 - np.tanh(v) ** 2,
                       lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2),
                       lambda v: (6 * np.tanh(v) ** 2 - 2) * (1 - np.tanh(v) ** 2),
                       lambda v: (16 * np.tanh(v) - 24 * np.tanh(v) ** 3)
                       * (1 - np.tanh(v) ** 2)]),
])
def test_four_nested_accumulators_give_the_fourth_derivative(name, f, derivatives):
    """Rules that read their own output (exp's t * ans): each accumulator must see the
    inner ones' tangent computations of it (they once gave 0 from the second on)."""
    x = gc.constant(0.7)
    accumulators = [gc.ForwardAccumulator(x, 1.0) for _ in range(4)]
    for acc in accumulators:
        acc.__enter__()
    try:
        value = f(x)
        found = []
        for acc in reversed(accumulators):   # innermost first: d/dx of the one inside
            value = acc.jvp(value)
            found.append(float(value))
    finally:
        for acc in reversed(accumulators):
            acc.__exit__(None, None, None)
    assert found == pytest.approx([d(0.7) for d in derivatives], rel=1e-13), name


def test_large_arrays_stay_right_where_results_reuse_buffers():
    # (a * b + c) reuses a temporary's array when nothing needs it; forward mode does.
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-1, 1, 5000) for _ in range(3))
    ta = rng.uniform(-1, 1, 5000)
    x = gc.constant(a)
    with gc.ForwardAccumulator(x, ta) as acc:
        y = gc.exp(gc.tanh(x * b + c) + 1.0)
    inner = np.tanh(a * b + c)
    expected = np.exp(inner + 1.0) * (1 - inner ** 2) * b * ta
    np.testing.assert_allclose(acc.jvp(y).numpy(), expected, rtol=1e-12)


# --- custom_gradient: forward mode through grad_fn, as TensorFlow's accumulators ---------
@gc.custom_gradient
def _myexp(x):
    y = gc.exp(x)
    return y, lambda dy: dy * y


@gc.custom_gradient
def _sin_times_square(x, y):
    s, c, y2 = gc.sin(x), gc.cos(x), y * y
    return s * y2, lambda dz: (dz * c * y2, dz * 2.0 * s * y)


def test_custom_gradient_jvp_is_the_transposition_of_grad_fn():
    # The tangent follows grad_fn (J^T = 100), not f's body (2x), as the gradient does.
    @gc.custom_gradient
    def scaled(x):
        return x * x, lambda dy: dy * 100.0
    _, derivative = gc.jvp(scaled, [3.0], [2.0])
    assert float(derivative) == 200.0


def test_custom_gradient_jvp_of_several_inputs_and_outputs_matches_differences():
    @gc.custom_gradient
    def f(x, y):
        def grad(da, db):
            return da * y + db * gc.cos(x), da * x
        return [x * y, gc.sin(x)], grad

    def plain(p):
        return np.array([p[0] * p[1], np.sin(p[0])])
    point, tangent, h = np.array([0.4, -2.0]), np.array([1.5, 0.5]), 1e-6
    fd = (plain(point + h * tangent) - plain(point - h * tangent)) / (2 * h)
    _, derivative = gc.jvp(f, list(point), list(tangent))
    np.testing.assert_allclose([float(d) for d in derivative], fd, rtol=1e-8)


def test_hessian_vector_product_through_a_custom_gradient_function():
    x, y, v = 0.7, -1.3, np.array([2.0, -0.5])
    hessian = np.array([[-np.sin(x) * y * y, 2 * y * np.cos(x)],
                        [2 * y * np.cos(x), 2 * np.sin(x)]])
    got = gc.hessian_vector_product(_sin_times_square, [x, y], list(v))
    np.testing.assert_allclose([float(g) for g in got], hessian @ v, rtol=1e-14)
    [e] = gc.hessian_vector_product(_myexp, [1.0], [3.0])
    assert float(e) == pytest.approx(3.0 * np.e, rel=1e-15)


def test_reverse_over_forward_and_forward_over_forward_through_custom_gradient():
    x = gc.constant(1.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        _, derivative = gc.jvp(_myexp, [x], [1.0])
    assert float(tape.gradient(derivative, x)) == pytest.approx(np.e, rel=1e-15)
    with gc.ForwardAccumulator(x, 1.0) as outer:
        with gc.ForwardAccumulator(x, 1.0) as inner:
            y = _myexp(x)
        first = inner.jvp(y)
    assert float(outer.jvp(first)) == pytest.approx(np.e, rel=1e-15)


# --- gc.jvp ----------------------------------------------------------------------------
def test_gc_jvp_returns_the_value_and_the_directional_derivative():
    value, derivative = gc.jvp(lambda x, y: gc.sin(x) * y, [0.5, 2.0], [1.0, 3.0])
    assert float(value) == np.sin(0.5) * 2.0
    assert float(derivative) == pytest.approx(np.cos(0.5) * 2.0 + np.sin(0.5) * 3.0,
                                              rel=1e-15)


def test_gc_jvp_gives_zeros_for_outputs_the_arguments_do_not_reach():
    c = gc.constant([1.0, 2.0])
    value, derivative = gc.jvp(lambda x: (x * 2.0, c * 3.0), [1.0], [1.0])
    assert float(derivative[0]) == 2.0
    np.testing.assert_array_equal(derivative[1].numpy(), [0.0, 0.0])


def test_gc_jvp_holds_other_uses_of_an_argument_constant():
    x = gc.constant(3.0)
    # x inside the closure is a constant; only the argument moves
    _, derivative = gc.jvp(lambda a: a * x, [x], [1.0])
    assert float(derivative) == 3.0


def test_gc_jvp_refuses_mismatched_tangents():
    # jax.jvp: primals and tangents of different structures are a TypeError (JAX's
    # test_jvp_mismatched_arguments), tangents of another shape a ValueError
    with pytest.raises(TypeError, match="one tangent per primal"):
        gc.jvp(lambda x: x, [1.0], [1.0, 2.0])
    with pytest.raises(TypeError, match="one tangent per primal"):
        gc.jvp(lambda x, y: x * y, (2.0,), ())
    with pytest.raises(TypeError, match="one tangent per primal"):
        gc.jvp(lambda x: x, [1.0], gc.constant(1.0))
    with pytest.raises(TypeError, match="list or tuple"):
        gc.jvp(lambda x: x, gc.constant(1.0), [1.0])
    with pytest.raises(ValueError, match="shape"):
        gc.jvp(lambda x: x + 1.0, [[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0, 4.0]])
    with pytest.raises(TypeError, match="one vector per primal"):
        gc.hessian_vector_product(lambda x, y: x * y, [1.0, 2.0], [1.0])


# --- hessian_vector_product --------------------------------------------------------------
def _sympy_hvp(expr, symbols, point, vector):
    hessian = sp.hessian(expr, symbols).subs(dict(zip(symbols, point)))
    return np.array(hessian * sp.Matrix(vector), dtype=float).ravel()


@pytest.mark.parametrize("point,vector", [((1.2, 1.0), (1.0, 0.0)), ((1.2, 1.0), (0.0, 1.0)),
                                          ((-0.5, 2.0), (0.3, -1.7))])
def test_hessian_vector_product_of_rosenbrock_matches_sympy(point, vector):
    x, y = sp.symbols("x y")
    expected = _sympy_hvp((1 - x) ** 2 + 100 * (y - x ** 2) ** 2, [x, y], point, vector)
    hvp = gc.hessian_vector_product(lambda a, b: (1 - a) ** 2 + 100 * (b - a ** 2) ** 2,
                                    list(point), list(vector))
    np.testing.assert_allclose([float(h) for h in hvp], expected, rtol=1e-12)


def test_rosenbrock_hessian_columns_at_the_seed_point():
    f = lambda a, b: (1 - a) ** 2 + 100 * (b - a ** 2) ** 2  # noqa: E731
    columns = [[float(h) for h in gc.hessian_vector_product(f, [1.2, 1.0], v)]
               for v in ([1.0, 0.0], [0.0, 1.0])]
    np.testing.assert_allclose(columns, [[1330.0, -480.0], [-480.0, 200.0]], rtol=1e-12)


def test_hessian_vector_product_of_a_transcendental_program_matches_sympy():
    x, y, z = sp.symbols("x y z")
    expr = sp.sin(x * y) * sp.exp(z) + sp.log(1 + x ** 2) * z ** 3
    point, vector = (0.7, -1.3, 0.4), (0.5, 2.0, -1.0)
    expected = _sympy_hvp(expr, [x, y, z], point, vector)
    hvp = gc.hessian_vector_product(
        lambda a, b, c: gc.sin(a * b) * gc.exp(c) + gc.log(1 + a ** 2) * c ** 3,
        list(point), list(vector))
    np.testing.assert_allclose([float(h) for h in hvp], expected, rtol=1e-12)


def test_hessian_vector_product_matches_differences_of_the_gradient():
    rng = np.random.default_rng(2)
    W = gc.constant(rng.standard_normal((4, 6)))
    x0, v = rng.standard_normal(6), rng.standard_normal(6)

    def f(x):
        return gc.sum(gc.tanh(W @ x))
    hvp = gc.hessian_vector_product(f, [x0], [v])[0].numpy()
    grad = gc.gradients_function(f)
    h = 1e-5
    numeric = (grad(x0 + h * v)[0].numpy() - grad(x0 - h * v)[0].numpy()) / (2 * h)
    np.testing.assert_allclose(hvp, numeric, rtol=1e-7, atol=1e-9)


def test_hessian_vector_product_of_an_unreached_argument_is_zero():
    hvp = gc.hessian_vector_product(lambda a, b: a * a, [3.0, 1.0], [1.0, 1.0])
    assert [float(h) for h in hvp] == [2.0, 0.0]


def test_a_tape_inside_the_accumulator_does_not_record_its_tangent_computations():
    # As TensorFlow: only tapes entered before the accumulator see its computations.
    x = gc.constant(2.0)
    with gc.ForwardAccumulator(x, 1.0) as acc:
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = x ** 3.0
            derivative = acc.jvp(y)
    assert float(derivative) == 12.0
    assert tape.gradient(derivative, x) is None
