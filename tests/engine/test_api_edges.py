"""The library at its edges (issue 9, part 1): values entering as lists, several outputs,
repeated arguments, tape misuse, custom gradients, empty jacobians, constructors given
tensors, dtypes, targets that are sources. Truths are hand-derived formulas, numpy, or
central differences computed with numpy, never the engine against itself.

The property tests run briefly by default; ``GRADCLI_PROPERTY_EXAMPLES=2000`` runs them
longer."""
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcli as gc
from gradcli.engine import ops
from gradcli.engine.core import state
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.errors import ArgumentError, ShapeError

EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "60"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def no_tape_left_recording():
    """Every test starts and must end with no tape recording (global state is clean)."""
    assert state.recording == []
    yield
    assert state.recording == []


def _value(t):
    return t.numpy() if isinstance(t, gc.Tensor) else t


# --- lists and tuples of tensors are packed wherever a value is accepted ------------------
def test_mean_of_a_list_holding_tensors_is_differentiable():
    [g] = gc.gradients_function(lambda x: gc.mean([x, x + 2]))(0.0)
    assert g.numpy() == 1.0


def test_norm_of_a_list_holding_tensors_is_differentiable():
    [g] = gc.gradients_function(lambda x: gc.norm([x, 2.0 * x]))(1.0)
    assert g.numpy() == pytest.approx(math.sqrt(5.0), rel=1e-15)


def test_elementwise_function_of_a_tuple_holding_tensors_is_differentiable():
    [g] = gc.gradients_function(lambda x: gc.sum(gc.exp((x, x))))(0.0)
    assert g.numpy() == 2.0


def test_nested_list_mixing_tensors_and_numbers_is_packed():
    x = gc.constant(3.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        m = gc.constant([[1.0, 2.0], [3.0, 4.0]]) @ [[x, 1.0], [2.0, x * x]]
        y = gc.sum(m)
    np.testing.assert_array_equal(m.numpy(), [[7.0, 19.0], [17.0, 39.0]])
    # d/dx sum(A @ [[x, 1], [2, x^2]]) = (1 + 3) + (2 + 4) * 2x
    assert tape.gradient(y, x).numpy() == 4.0 + 6.0 * 6.0


def test_list_holding_a_variable_makes_the_tape_watch_it():
    w = gc.Variable(2.0)
    [(g, v)] = gc.implicit_gradients(lambda: gc.prod([w, w, 3.0]))()
    assert v is w and g.numpy() == 12.0


def test_python_operators_pack_lists_holding_tensors_on_either_side():
    # sum([x^2 + x + x - 1, 2x + x + x - x]): d/dx = 2x + 2 + 3
    [g] = gc.gradients_function(
        lambda x: gc.sum([x, 2.0] * x + x + [x, x] - [1.0, x]))(3.0)
    assert g.numpy() == 11.0


def test_list_of_plain_numbers_is_still_a_value():
    np.testing.assert_array_equal(gc.square([1.0, 2.0]).numpy(), [1.0, 4.0])
    assert gc.sum(((1, 2), (3, 4))).numpy() == 10.0


def test_ragged_list_holding_tensors_is_a_shape_error():
    x = gc.constant([1.0, 2.0])
    with pytest.raises(ShapeError, match="stack"):
        gc.sum([x, 1.0, 2.0, 3.0])


def test_list_argument_of_gradients_function_is_packed_and_connected_to_outer_tapes():
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        [g] = gc.gradients_function(lambda v: gc.sum(v * v))([x, 3.0 * x])
    np.testing.assert_array_equal(g.numpy(), [4.0, 12.0])
    assert tape.gradient(g, x).numpy() == 2.0 + 2.0 * 3.0  # sum(2 v) with v = [x, 3x]


_UNARY = [n for n in ORDER if REGISTRY[n].elementwise and len(REGISTRY[n].inputs) == 1
          and REGISTRY[n].differentiable and REGISTRY[n].kind in ("elementwise", "arithmetic")]


@pytest.mark.parametrize("name", _UNARY)
def test_every_elementwise_entry_differentiates_a_list_of_tensors(name):
    """gc.f([x, x/2, c]) summed: d/dx = f'(x) + f'(x/2) / 2, checked by central differences
    of numpy's own function (the entry's forward is numpy's)."""
    op = REGISTRY[name]
    lo, hi = op.sample
    x0 = lo + 0.9 * (hi - lo)  # x0 / 2 stays inside the sample range too
    fn = getattr(gc, name)
    [g] = gc.gradients_function(lambda x: gc.sum(fn([x, 0.5 * x, lo])))(x0)

    def numeric(x):
        return float(np.sum(op.forward(np.array([x, 0.5 * x, lo]))))
    h = 1e-6
    expected = (numeric(x0 + h) - numeric(x0 - h)) / (2 * h)
    assert g.numpy() == pytest.approx(expected, rel=1e-6, abs=1e-8)


# --- static parameters never silently swallow a traced tensor ----------------------------
def _sample_inputs(op):
    a = np.array([[0.6, 0.8], [1.2, 1.4]])
    if op.variadic:
        return [[a, a]]
    if op.name == "where":
        return [a > 1.0, a, a]
    return [a] * len(op.inputs)


_DIFFERENTIABLE_PARAMS = {("full", "fill_value"), ("linspace", "start"), ("linspace", "stop")}
_PARAMS = [(n, key) for n in sorted(set(ORDER) | set(ops.INTERNAL))
           for key, _ in (REGISTRY.get(n) or ops.INTERNAL[n]).params
           if (n, key) not in _DIFFERENTIABLE_PARAMS]


@pytest.mark.parametrize("name, key", _PARAMS)
def test_traced_tensor_for_a_static_parameter_is_refused(name, key):
    t = gc.constant(1.0)
    op = REGISTRY.get(name) or ops.INTERNAL[name]
    with gc.GradientTape() as tape:
        tape.watch(t)
        with pytest.raises(ArgumentError, match=f"{key} of {name} is a static parameter"):
            ops.FUNCTIONS[name](*_sample_inputs(op), **{key: t})


def test_traced_tensor_inside_a_static_tuple_is_refused():
    n = gc.Variable(2.0)
    with gc.GradientTape(), pytest.raises(ArgumentError, match="shape of zeros"):
        gc.zeros((n, 3))


def test_untraced_tensor_for_a_static_parameter_is_read_as_its_value():
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(gc.sum(x, axis=gc.constant(0)).numpy(), [4.0, 6.0])
    assert gc.zeros((gc.constant(2), 3)).shape == (2, 3)


def test_stop_gradient_makes_a_traced_tensor_usable_as_a_static_parameter():
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.sum(gc.ones((3,)) * x, axis=gc.stop_gradient(x - 2.0))
    assert y.numpy() == 6.0 and tape.gradient(y, x).numpy() == 3.0


# --- constructors given tensors -----------------------------------------------------------
def test_linspace_is_differentiable_in_its_endpoints():
    a, b = gc.constant(1.0), gc.constant(3.0)
    w = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0])
    value, (ga, gb) = gc.value_and_gradients_function(
        lambda a, b: gc.sum(gc.linspace(a, b, 5) * w))(a, b)
    t = np.linspace(0.0, 1.0, 5)
    np.testing.assert_array_equal(gc.linspace(a, b, 5).numpy(), np.linspace(1.0, 3.0, 5))
    assert value.numpy() == pytest.approx(float(np.sum(np.linspace(1.0, 3.0, 5) * w)))
    # y_i = a (1 - t_i) + b t_i
    assert ga.numpy() == pytest.approx(float(np.sum(w * (1 - t))), rel=1e-15)
    assert gb.numpy() == pytest.approx(float(np.sum(w * t)), rel=1e-15)


def test_linspace_with_vector_endpoints_and_one_point():
    a = gc.constant([0.0, 1.0])
    [g] = gc.gradients_function(lambda a: gc.sum(gc.linspace(a, 5.0, num=4)))(a)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0], rtol=1e-15)  # sum of 1 - i/3
    [g1] = gc.gradients_function(lambda a: gc.sum(gc.linspace(a, 5.0, 1)))(2.0)
    assert g1.numpy() == 1.0  # linspace(a, b, 1) is [a]


def test_full_is_differentiable_in_its_fill_value():
    [g] = gc.gradients_function(lambda a: gc.sum(gc.full((3,), a) * [1.0, 2.0, 3.0]))(2.0)
    assert g.numpy() == 6.0
    [gv] = gc.gradients_function(lambda v: gc.sum(gc.full((2, 3), v)))(np.ones(3))
    np.testing.assert_array_equal(gv.numpy(), [2.0, 2.0, 2.0])


def test_full_of_a_float32_tensor_is_float32():
    a = gc.constant(np.float32(2.0))
    assert gc.full((2,), a).dtype == np.float32
    assert gc.full((2,), 2.0).dtype == np.float64


def test_zeros_like_and_ones_like_have_no_gradient_as_in_tensorflow():
    x = gc.constant(np.array([1.0, 2.0], np.float32))
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z, o = gc.zeros_like(x), gc.ones_like(x)
    np.testing.assert_array_equal(z.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(o.numpy(), [1.0, 1.0])
    assert z.dtype == o.dtype == np.float32
    assert tape.gradient(o, x) is None
    assert tape.gradient(z, x, unconnected_gradients="zero").numpy().tolist() == [0.0, 0.0]


# --- several outputs ---------------------------------------------------------------------
def test_gradients_function_sums_over_a_tuple_of_outputs():
    [g] = gc.gradients_function(lambda x: (x, 2 * x))(1.0)
    assert g.numpy() == 3.0


def test_implicit_gradients_sum_over_a_tuple_of_outputs():
    w = gc.Variable(1.0)
    [(g, v)] = gc.implicit_gradients(lambda: (w * 1.0, 2 * w))()
    assert v is w and g.numpy() == 3.0


def test_value_and_gradients_function_returns_the_structure_of_the_outputs():
    value, [g] = gc.value_and_gradients_function(
        lambda x: {"a": x * x, "b": [x, (3.0 * x,)]})(2.0)
    assert set(value) == {"a", "b"}
    assert value["a"].numpy() == 4.0
    assert isinstance(value["b"], list) and isinstance(value["b"][1], tuple)
    assert value["b"][0].numpy() == 2.0 and value["b"][1][0].numpy() == 6.0
    assert g.numpy() == 4.0 + 1.0 + 3.0


def test_implicit_value_and_gradients_returns_the_structure_of_the_outputs():
    w = gc.Variable(2.0)
    value, [(g, _)] = gc.implicit_value_and_gradients(lambda: (w * w, [w * 5.0]))()
    assert isinstance(value, tuple) and isinstance(value[1], list)
    assert (value[0].numpy(), value[1][0].numpy()) == (4.0, 10.0)
    assert g.numpy() == 4.0 + 5.0


def test_dy_weights_each_output():
    [g] = gc.gradients_function(lambda x: (x * x, 3.0 * x))(2.0, dy=(10.0, 100.0))
    assert g.numpy() == 10.0 * 4.0 + 100.0 * 3.0


def test_returning_the_source_itself_gives_one():
    [g] = gc.gradients_function(lambda x: x)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])


def test_output_structure_with_none_is_a_clear_error():
    with pytest.raises(ValueError, match="None among its outputs"):
        gc.gradients_function(lambda x: (x, None))(1.0)


# --- the same tensor passed as several arguments -----------------------------------------
def test_same_tensor_as_two_arguments_is_two_sources():
    x = gc.constant(1.0)
    ga, gb = gc.gradients_function(lambda a, b: a * b)(x, x)
    assert (ga.numpy(), gb.numpy()) == (1.0, 1.0)


def test_same_tensor_three_times_with_params_subset():
    x = gc.constant(2.0)
    ga, gc_ = gc.gradients_function(lambda a, b, c: a * b * b * c, params=[0, 2])(x, x, x)
    assert (ga.numpy(), gc_.numpy()) == (8.0, 8.0)


def test_variable_argument_stays_connected_to_an_outer_tape():
    v = gc.Variable(3.0)
    with gc.GradientTape() as outer:
        [g] = gc.gradients_function(lambda a: a ** 3)(v)
    assert g.numpy() == 27.0
    assert outer.gradient(g, v).numpy() == 18.0


# --- tape misuse leaves no global state --------------------------------------------------
def test_reentering_a_recording_tape_raises_and_leaves_nothing_recording():
    tape = gc.GradientTape()
    with pytest.raises(ValueError, match="re-enter"), tape, tape:
        pass
    assert state.recording == []


def test_exception_inside_the_block_leaves_nothing_recording():
    x = gc.constant(1.0)
    with pytest.raises(KeyError), gc.GradientTape() as outer, \
            gc.GradientTape(persistent=True) as inner:
        inner.watch(x)
        raise KeyError("boom")
    assert state.recording == [] and not outer._recording and not inner._recording


def test_gradient_inside_its_own_block_stops_a_non_persistent_tape():
    x = gc.constant(3.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        assert tape.gradient(y, x).numpy() == 6.0
        assert state.recording == []
        z = x * y  # not recorded: the tape is spent
    assert state.recording == [] and z._node is None


def test_misused_stop_recording_leaves_nothing_recording():
    tape = gc.GradientTape()
    with pytest.raises(RuntimeError, match="not recording"), tape.stop_recording():
        pass
    with pytest.raises(RuntimeError, match="not recording"), tape, tape.stop_recording(), \
            tape.stop_recording():
        pass
    assert state.recording == []


def test_failing_gradient_call_inside_the_block_leaves_nothing_recording():
    x = gc.constant(1.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        with pytest.raises(TypeError):
            tape.gradient(y, "x")
    assert state.recording == []


def test_spent_tape_entered_again_records_afresh_as_in_tensorflow():
    x = gc.constant(2.0)
    tape = gc.GradientTape()
    with tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x).numpy() == 4.0
    with tape:
        tape.watch(x)
        z = x * x * x
    assert tape.gradient(z, x).numpy() == 12.0


# --- custom_gradient ---------------------------------------------------------------------
def _custom(grad_fn):
    @gc.custom_gradient
    def f(x):
        return x * 2.0, grad_fn
    return f


@pytest.mark.parametrize("grad_fn, count", [(lambda dy: [], 0), (lambda dy: [dy, dy], 2),
                                            (lambda dy: (dy, None, dy), 3)])
def test_custom_gradient_with_a_wrong_number_of_gradients_names_the_expected_count(grad_fn,
                                                                                   count):
    with pytest.raises(ValueError, match=f"returned {count} gradient.*expected 1"):
        gc.gradients_function(_custom(grad_fn))(1.0)


def test_custom_gradient_with_too_few_gradients_for_two_inputs():
    @gc.custom_gradient
    def f(x, y):
        return x * y, lambda dy: dy * y
    with pytest.raises(ValueError, match="returned 1 gradient.*expected 2"):
        gc.gradients_function(f)(1.0, 2.0)


def test_custom_gradient_of_the_wrong_shape_is_refused():
    @gc.custom_gradient
    def f(x):
        return x * 2.0, lambda dy: gc.ones((3,))
    with pytest.raises(ShapeError, match=r"shape \(3,\) for input 0 of shape \(\)"):
        gc.gradients_function(f)(1.0)


def test_custom_gradient_with_nested_outputs():
    calls = []

    @gc.custom_gradient
    def f(x, y):
        def grad_fn(da, db):
            calls.append(1)
            # a = x y: d/dx = y, d/dy = x; b = ([x^2, x^2],): d/dx = 2x each, d/dy = 0
            return [da * y + gc.sum(db) * 2.0 * x, da * x]
        return [x * y, (gc.stack([x * x, x * x]),)], grad_fn
    value, (gx, gy) = gc.value_and_gradients_function(f)(3.0, 5.0)
    assert isinstance(value, list) and isinstance(value[1], tuple)
    assert value[0].numpy() == 15.0
    np.testing.assert_array_equal(value[1][0].numpy(), [9.0, 9.0])
    assert (gx.numpy(), gy.numpy()) == (5.0 + 2 * 2.0 * 3.0, 3.0)
    assert calls == [1]  # grad_fn runs once per backward pass, not once per input


def test_custom_gradient_unused_output_gets_a_zero_upstream_gradient():
    seen = []

    @gc.custom_gradient
    def f(x):
        def grad_fn(da, db):
            seen.append((float(da), float(db)))
            return da * 2.0
        return (x * 2.0, x * 3.0), grad_fn
    [g] = gc.gradients_function(lambda x: f(x)[0])(1.0)
    assert g.numpy() == 2.0 and seen == [(1.0, 0.0)]


@pytest.mark.parametrize("result, what", [
    (lambda a: a * 2.0, r"a tensor of shape \(\)"),
    (lambda a: None, "None"),
    (lambda a: (a, a), r"a pair whose second item is a tensor of shape \(\), not a function"),
    (lambda a: (a, lambda dy: dy, a), r"a tuple of 3 item"),
])
@pytest.mark.parametrize("under_a_tape", [False, True])
def test_custom_gradient_f_not_returning_a_pair_is_a_type_error_saying_so(result, what,
                                                                          under_a_tape):
    f = gc.custom_gradient(result)
    x = gc.constant(1.0)
    with pytest.raises(TypeError, match=r"<lambda> must return a pair \(outputs, grad_fn\)"
                                        r".*it returned " + what):
        if under_a_tape:
            with gc.GradientTape() as tape:
                tape.watch(x)
                f(x)
        else:
            f(x)


@gc.custom_gradient
def _first_only(a, b):  # grad_fn gives b no gradient
    return a + b, lambda dy: (dy, None)


def test_custom_gradient_none_for_an_input_leaves_it_unconnected():
    # As in TensorFlow, whose tape skips a None input gradient.
    a, b = gc.constant([2.0, 3.0]), gc.constant([1.0, -1.0])
    with gc.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y = _first_only(a, b)
        z = y + 3.0 * b  # reaches b another way too
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [1.0, 1.0])
    assert gb is None
    zeros = tape.gradient(y, b, unconnected_gradients="zero")
    assert zeros.shape == (2,)
    np.testing.assert_array_equal(zeros.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(tape.gradient(z, b).numpy(), [3.0, 3.0])
    assert tape.jacobian(y, b) is None
    np.testing.assert_array_equal(tape.jacobian(y, b, unconnected_gradients="zero").numpy(),
                                  np.zeros((2, 2)))
    assert gc.gradients_function(_first_only)(2.0, 1.0)[1] is None


def test_custom_gradient_none_for_a_variable_leaves_it_unconnected():
    w = gc.Variable(3.0)

    @gc.custom_gradient
    def f(x):
        return x * w, lambda dy, variables=None: (dy * w, [None])
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gw = tape.gradient(y, [x, w])
    assert gx.numpy() == 3.0 and gw is None


def test_custom_gradient_passes_keyword_arguments_to_f_undifferentiated():
    # As TensorFlow eager: keywords reach f; only positional arguments are inputs.
    @gc.custom_gradient
    def scaled(a, scale=2.0):
        return a * scale, lambda dy: dy * scale
    x, s = gc.constant(2.0), gc.constant(5.0)
    with gc.GradientTape() as tape:
        tape.watch([x, s])
        y = scaled(x, scale=s)
    assert y.numpy() == 10.0
    gx, gs = tape.gradient(y, [x, s])
    assert gx.numpy() == 5.0 and gs is None
    [g] = gc.gradients_function(lambda a: scaled(a, scale=3.0))(1.0)
    assert g.numpy() == 3.0
    assert scaled(x).numpy() == 4.0  # the default, with no tape recording


def test_custom_gradient_keyword_variable_is_watched_but_gets_no_gradient():
    # TensorFlow's tape records f, so it watches what f reads; the keyword is no input.
    w = gc.Variable(2.0)

    @gc.custom_gradient
    def f(x, v=None):
        return x * v, lambda dy: dy * v
    x = gc.constant(3.0)
    for persistent in (False, True):
        with gc.GradientTape(persistent=persistent) as tape:
            tape.watch(x)
            y = f(x, v=w)
        assert tape.watched_variables() == (w,)
        gx, gw = tape.gradient(y, [x, w])
        assert gx.numpy() == 2.0 and gw is None
    [(g, v)] = gc.implicit_gradients(lambda: f(x, v=w))()
    assert g is None and v is w


def test_custom_gradient_variable_passed_as_an_argument_is_an_input_not_a_variable():
    w = gc.Variable(3.0)

    @gc.custom_gradient
    def f(v, factor=None):
        return v * v * factor, lambda dy: dy * 10.0 * v  # no variables=: none are read
    with gc.GradientTape() as tape:
        y = f(w, factor=gc.Variable(2.0))
    assert y.numpy() == 18.0 and tape.gradient(y, w).numpy() == 30.0


# --- custom_gradient: derivatives of grad_fn (second and higher order) -------------------
# As in TensorFlow eager, f runs while the tapes record, so a grad_fn closing over f's
# intermediates is connected to the inputs; the first derivative is grad_fn alone.
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@gc.custom_gradient
def _log1pexp(x):  # the example of TensorFlow's custom_gradient documentation
    e = gc.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))
    return gc.log(1 + e), grad


@gc.custom_gradient
def _myexp(x):
    y = gc.exp(x)

    def grad(dy):
        return dy * y
    return y, grad


def test_custom_gradient_second_derivative_through_intermediates_with_nested_tapes():
    x = gc.constant(1.0)
    with gc.GradientTape() as outer:
        outer.watch(x)
        with gc.GradientTape() as inner:
            inner.watch(x)
            y = _log1pexp(x)
        g = inner.gradient(y, x)
    assert float(g) == pytest.approx(_sigmoid(1.0), rel=1e-15)
    s = _sigmoid(1.0)  # log1pexp'' = sigmoid' = s (1 - s) = 0.19661193324148185
    assert float(outer.gradient(g, x)) == pytest.approx(s * (1 - s), rel=1e-14)


def test_custom_gradient_hessian_through_the_output_it_closes_over():
    [[h]] = gc.hessians_function(_myexp)(1.0)
    assert float(h) == pytest.approx(math.e, rel=1e-15)
    [d2] = gc.gradients_function(gc.gradients_function(_myexp))(1.0)
    assert float(d2) == pytest.approx(math.e, rel=1e-15)


def test_custom_gradient_third_derivative_with_three_tapes():
    x = gc.constant(0.5)
    with gc.GradientTape() as t3:
        t3.watch(x)
        with gc.GradientTape() as t2:
            t2.watch(x)
            with gc.GradientTape() as t1:
                t1.watch(x)
                y = _myexp(x)
            g = t1.gradient(y, x)
        h = t2.gradient(g, x)
    assert float(t3.gradient(h, x)) == pytest.approx(math.exp(0.5), rel=1e-15)


def test_custom_gradient_second_derivative_on_one_persistent_tape():
    x = gc.constant(1.0)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _myexp(x)
        g = tape.gradient(y, x)  # recorded: the tape is persistent and still recording
    assert float(tape.gradient(g, x)) == pytest.approx(math.e, rel=1e-15)


def test_custom_gradient_first_derivative_is_grad_fn_and_the_second_its_derivative():
    # grad_fn deliberately is not f's derivative (3x^2): the first derivative is grad_fn's
    # 2 y = 2 x^3, the second that of 2 x^3 through f's intermediate y: 6 x^2.
    @gc.custom_gradient
    def f(x):
        y = x ** 3
        return y, lambda dy: dy * 2.0 * y
    x = 1.5
    [[h]] = gc.hessians_function(f)(x)
    assert float(h) == pytest.approx(6 * x ** 2, rel=1e-15)
    for persistent in (False, True):
        t = gc.constant(x)
        with gc.GradientTape(persistent=persistent) as tape:
            tape.watch(t)
            y = f(t)
        assert float(tape.gradient(y, t)) == pytest.approx(2 * x ** 3, rel=1e-15)


def test_custom_gradient_hessian_of_two_arguments_matches_finite_differences():
    @gc.custom_gradient
    def f(x, y):
        s, c, y2 = gc.sin(x), gc.cos(x), y * y

        def grad(dz):
            return dz * c * y2, dz * 2.0 * s * y
        return s * y2, grad

    def plain(p):
        return np.sin(p[0]) * p[1] ** 2
    point, h = np.array([0.7, -1.3]), 1e-4
    steps = np.eye(2) * h
    fd = np.array([[(plain(point + a + b) - plain(point + a - b) - plain(point - a + b)
                     + plain(point - a - b)) / (4 * h * h) for b in steps] for a in steps])
    blocks = gc.hessians_function(f)(*point)
    got = np.array([[float(b) for b in row] for row in blocks])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def test_custom_gradient_second_derivative_in_a_variable_it_reads():
    w = gc.Variable(0.5)

    @gc.custom_gradient
    def f(x):
        y = gc.exp(w * x)

        def grad(dy, variables=None):
            return dy * w * y, [dy * x * y]
        return y, grad
    x = gc.constant(2.0)
    with gc.GradientTape() as outer:
        with gc.GradientTape() as inner:
            y = f(x)
        [gw] = inner.gradient(y, [w])
    assert float(gw) == pytest.approx(2.0 * math.exp(1.0), rel=1e-15)
    # d2/dw2 exp(w x) = x^2 exp(w x)
    assert float(outer.gradient(gw, w)) == pytest.approx(4.0 * math.exp(1.0), rel=1e-15)


def test_custom_gradient_tape_entered_after_the_call_sees_none_of_its_body():
    # As in TensorFlow: a tape sees the operations of f only if it recorded while f ran.
    x = gc.constant(1.0)
    with gc.GradientTape() as first:
        first.watch(x)
        y = _myexp(x)
    with gc.GradientTape() as later:
        later.watch(x)
        g = first.gradient(y, x)
    assert float(g) == pytest.approx(math.e, rel=1e-15)
    assert later.gradient(g, x) is None


# --- jacobians ---------------------------------------------------------------------------
def test_jacobian_of_an_empty_target_is_empty_with_tensorflows_shape():
    x = gc.zeros((1, 0))
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 2
    assert tape.jacobian(y, x).shape == (1, 0, 1, 0)
    assert tape.batch_jacobian(y, x).shape == (1, 0, 0)


def test_jacobian_of_an_empty_target_keeps_unconnected_sources_none():
    x, u = gc.zeros((2, 0)), gc.constant([1.0, 2.0])
    with gc.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = x * 3.0
    assert tape.jacobian(y, u) is None
    assert tape.jacobian(y, u, unconnected_gradients="zero").shape == (2, 0, 2)


@pytest.mark.parametrize("tshape, sshape", [((2,), (2, 1)), ((2, 1), (2,)), ((), ())])
def test_batch_jacobian_refuses_rank_below_two(tshape, sshape):
    x = gc.constant(np.ones(sshape))
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.reshape(gc.sum(x) * np.ones(tshape), tshape)
    with pytest.raises(ValueError, match="must have rank at least 2"):
        tape.batch_jacobian(y, x)


def test_batch_jacobian_of_an_empty_batch():
    x = gc.zeros((0, 3))
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    assert tape.batch_jacobian(y, x).shape == (0, 3, 3)


# --- dtypes ------------------------------------------------------------------------------
def test_float32_source_gets_a_float32_gradient_beside_float64_constants():
    x = gc.constant(np.ones((4, 2), np.float32))
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.sum(x * gc.constant(2.0))
    assert y.dtype == np.float64
    g = tape.gradient(y, x)
    assert g.dtype == np.float32 and np.all(g.numpy() == 2.0)


def test_float32_gradients_in_every_api():
    x32 = np.float32(1.5)
    w = gc.Variable(np.float32(1.5))
    c64 = gc.constant(2.0)
    [g] = gc.gradients_function(lambda x: x * c64)(gc.constant(x32))
    _, [g2] = gc.value_and_gradients_function(lambda x: x * c64)(gc.constant(x32))
    [(g3, _)] = gc.implicit_gradients(lambda: w * c64)()
    _, [(g4, _)] = gc.implicit_value_and_gradients(lambda: w * c64)()
    assert [t.dtype for t in (g, g2, g3, g4)] == [np.float32] * 4
    with gc.GradientTape(persistent=True) as tape:
        y = w * c64 * gc.constant([1.0, 2.0])
    assert tape.jacobian(y, w).dtype == np.float32


def test_float32_gradient_of_a_gradient_is_float32():
    x = gc.constant(np.float32(3.0))
    with gc.GradientTape() as outer:
        outer.watch(x)
        with gc.GradientTape() as inner:
            inner.watch(x)
            y = x * x * gc.constant(2.0)
        dy = inner.gradient(y, x)
    assert dy.dtype == np.float32 and dy.numpy() == 12.0
    d2 = outer.gradient(dy, x)
    assert d2.dtype == np.float32 and d2.numpy() == 4.0


# --- a target that is a source -----------------------------------------------------------
def test_target_that_is_a_source_has_gradient_one():
    v = gc.Variable([[1.0, 2.0], [3.0, 4.0]])
    with gc.GradientTape() as tape:
        y = v
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), np.ones((2, 2)))


def test_unwatched_constant_target_that_is_the_source_has_gradient_one():
    c = gc.constant(5.0)
    with gc.GradientTape(persistent=True) as tape:
        pass
    assert tape.gradient(c, c).numpy() == 1.0
    assert tape.gradient([c, c * 2.0], [c])[0].numpy() == 1.0  # c * 2.0 is not recorded


@pytest.mark.parametrize("value", [np.array([True, False]), np.bool_(True),
                                   np.array([3, 4], dtype=np.int64)])
def test_a_boolean_or_integer_target_that_is_its_source_gets_its_seed(value):
    # TensorFlow 2 (tape.gradient(s, s), s watched): the seed, ones of s's dtype (all
    # True for a boolean), or output_gradients in that dtype; never None.
    s = gc.constant(value).astype(value.dtype)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(s)
    g = tape.gradient(s, s)
    assert g.dtype == value.dtype
    np.testing.assert_array_equal(g.numpy(), np.ones_like(value))
    seed = np.zeros_like(value)
    given = tape.gradient(s, s, output_gradients=seed)
    assert given.dtype == value.dtype
    np.testing.assert_array_equal(given.numpy(), seed)
    assert tape.gradient(s * 2.5, s) is None  # reached through an operation: none


# --- property tests ----------------------------------------------------------------------
# A leaf of a random output structure: (name, coefficient); value and derivative by hand.
_LEAVES = {
    "identity": (lambda x: x, lambda x: np.ones_like(x)),
    "square": (lambda x: x * x, lambda x: 2.0 * x),
    "sin": (np.sin, np.cos),
    "exp": (np.exp, np.exp),
}


def _engine_leaf(name, x):
    if name == "identity":
        return x
    if name == "square":
        return x * x
    return getattr(gc, name)(x)


_leaf = st.tuples(st.sampled_from(sorted(_LEAVES)), st.sampled_from([1.0, -2.0, 0.5]))
_structure = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, min_size=1, max_size=3),
                            st.lists(inner, min_size=1, max_size=3).map(tuple),
                            st.dictionaries(st.sampled_from("abc"), inner, min_size=1,
                                            max_size=3)),
    max_leaves=6)


def _build(structure, x):
    """The structure with each (name, c) leaf replaced by c * leaf(x) (1 * x is x itself)."""
    if isinstance(structure, dict):
        return {k: _build(v, x) for k, v in structure.items()}
    if isinstance(structure, list):
        return [_build(v, x) for v in structure]
    if isinstance(structure, tuple) and not isinstance(structure[0], str):
        return tuple(_build(v, x) for v in structure)
    name, c = structure
    out = _engine_leaf(name, x)
    # a float64 constant factor: a float32 source's gradient must still be float32
    return out if c == 1.0 else out * gc.constant(c)


def _leaves(structure):
    if isinstance(structure, dict):
        return [leaf for v in structure.values() for leaf in _leaves(v)]
    if isinstance(structure, (list, tuple)) and not isinstance(structure[0], str):
        return [leaf for v in structure for leaf in _leaves(v)]
    return [structure]


def _same_shape(structure, value, x0, tol):
    """value has structure's nesting, with each leaf equal to numpy's c * f(x0)."""
    if isinstance(structure, dict):
        assert isinstance(value, dict) and list(value) == list(structure)
        return all(_same_shape(structure[k], value[k], x0, tol) for k in structure)
    if isinstance(structure, (list, tuple)) and not isinstance(structure[0], str):
        assert type(value) is type(structure) and len(value) == len(structure)
        return all(_same_shape(s, v, x0, tol) for s, v in zip(structure, value))
    name, c = structure
    leaf = _LEAVES[name][0](x0)  # in the source's dtype, then times a float64 constant
    np.testing.assert_allclose(value.numpy(), leaf if c == 1.0 else leaf * np.float64(c),
                               rtol=tol)
    return True


_points = st.one_of(st.floats(-2.0, 2.0), st.lists(st.floats(-2.0, 2.0), min_size=1,
                                                    max_size=3).map(np.array))


@PROPERTY
@given(structure=_structure, x0=_points, dtype=st.sampled_from([np.float64, np.float32]))
def test_any_nest_of_outputs_differentiates_as_the_sum_of_its_leaves(structure, x0, dtype):
    x0 = np.asarray(x0, dtype=dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    expected = sum(c * _LEAVES[name][1](x0.astype(float)) for name, c in _leaves(structure))
    value, [g] = gc.value_and_gradients_function(lambda x: _build(structure, x))(
        gc.constant(x0))
    assert g.dtype == dtype and g.shape == x0.shape
    np.testing.assert_allclose(g.numpy(), expected, rtol=tol, atol=tol)
    assert _same_shape(structure, value, x0, tol)
    w = gc.Variable(x0)
    value, [(gw, v)] = gc.implicit_value_and_gradients(lambda: _build(structure, w))()
    assert v is w and gw.dtype == dtype
    np.testing.assert_allclose(gw.numpy(), expected, rtol=tol, atol=tol)
    assert _same_shape(structure, value, x0, tol)
    assert state.recording == []


@PROPERTY
@given(pattern=st.lists(st.integers(0, 2), min_size=1, max_size=4),
       values=st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))
def test_repeated_arguments_are_each_their_own_source(pattern, values):
    """f(a_0, ..., a_k) = sum_i (i + 1) a_i^2 * prod_{j<i} a_j with arguments drawn from a
    pool of three tensors (so the same tensor often appears several times); the partial
    derivative with respect to each argument position is computed by hand."""
    pool = [gc.constant(v) for v in values]
    args = [pool[i] for i in pattern]
    xs = [values[i] for i in pattern]

    def f(*a):
        total, prefix = 0.0, 1.0
        for i, ai in enumerate(a):
            total = total + (i + 1) * ai * ai * prefix
            prefix = prefix * ai
        return total

    def partial(k):
        # d/dx_k of sum_i (i + 1) x_i^2 prod_{j<i} x_j, the x's taken as independent
        out = 0.0
        for i in range(len(xs)):
            prefix = [xs[j] for j in range(i)]
            if i == k:
                out += (i + 1) * 2.0 * xs[i] * math.prod(prefix)
            elif k < i:
                out += (i + 1) * xs[i] ** 2 * math.prod(p for j, p in enumerate(prefix)
                                                        if j != k)
        return out

    grads = gc.gradients_function(f)(*args)
    for k, g in enumerate(grads):
        assert g.numpy() == pytest.approx(partial(k), rel=1e-12, abs=1e-12)


_nested_lists = st.recursive(
    st.sampled_from(["x", "y", 1.5]),
    lambda inner: st.lists(inner, min_size=2, max_size=2).map(tuple)
    | st.lists(inner, min_size=2, max_size=2),
    max_leaves=8)


def _substitute(structure, env):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_substitute(s, env) for s in structure)
    return env.get(structure, structure) if isinstance(structure, str) else structure


def _count(structure, name):
    if isinstance(structure, (list, tuple)):
        return sum(_count(s, name) for s in structure)
    return int(structure == name)


def _shape_of(structure):
    if isinstance(structure, (list, tuple)):
        inner = {_shape_of(s) for s in structure}
        if len(inner) != 1 or None in inner:
            return None
        return (len(structure),) + inner.pop()
    return ()


@PROPERTY
@given(structure=_nested_lists, x0=st.floats(-2.0, 2.0), y0=st.floats(-2.0, 2.0),
       fn=st.sampled_from(["sin", "exp", "square"]))
def test_nested_lists_holding_tensors_are_differentiable_in_every_table_function(
        structure, x0, y0, fn):
    """sum(f(nested list of x, y and numbers)): d/dx = f'(x) times the number of x's."""
    if _shape_of(structure) is None:  # ragged: refused like numpy refuses it
        with pytest.raises(ShapeError):
            env = {"x": gc.constant(x0), "y": gc.constant(y0)}
            gc.sum(getattr(gc, fn)(_substitute(structure, env)))
        return
    nx, ny = _count(structure, "x"), _count(structure, "y")
    gx, gy = gc.gradients_function(
        lambda x, y: gc.sum(getattr(gc, fn)(_substitute(structure, {"x": x, "y": y}))))(
        x0, y0)
    derivative = {"sin": np.cos, "exp": np.exp, "square": lambda v: 2.0 * v}[fn]
    for g, n, v in ((gx, nx, x0), (gy, ny, y0)):
        if n == 0:
            assert g is None
        else:
            assert g.numpy() == pytest.approx(n * derivative(v), rel=1e-12, abs=1e-12)


def test_ragged_list_of_numbers_is_the_librarys_shape_error():
    with pytest.raises(ShapeError, match="cannot make a tensor from list"):
        gc.constant([[1.0, 2.0], [3.0]])
    with pytest.raises(ShapeError):
        gc.sin([[1.0, 2.0], [3.0]])


def test_custom_gradient_reading_a_variable_needs_grad_fn_to_take_variables():
    w = gc.Variable(3.0, name="w")

    @gc.custom_gradient
    def f(x):
        return x * w, lambda dy: dy * w
    with pytest.raises(TypeError, match="reads variables \\(w\\).*'variables'"):
        gc.implicit_gradients(lambda: f(gc.constant(2.0)))()


def test_custom_gradient_gives_variables_their_gradients():
    w = gc.Variable(3.0)

    @gc.custom_gradient
    def f(x):
        def grad_fn(dy, variables=None):
            assert variables == [w]
            return dy * w * 10.0, [dy * x * 100.0]  # scaled: the custom rule is used
        return x * w, grad_fn
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gw = tape.gradient(y, [x, w])
    assert y.numpy() == 6.0 and (gx.numpy(), gw.numpy()) == (30.0, 200.0)


def test_stop_recording_left_after_its_tape_block_does_not_resume_recording():
    tape = gc.GradientTape()
    paused = tape.stop_recording()
    with tape:
        paused.__enter__()
    paused.__exit__(None, None, None)
    assert state.recording == []


def test_gradient_inside_stop_recording_then_recording_resumes_on_a_fresh_trace():
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            assert tape.gradient(y, x).numpy() == 4.0
        tape.watch(x)
        z = x * x * x
    assert state.recording == []
    assert tape.gradient(z, x).numpy() == 12.0


def test_custom_gradient_output_given_as_a_number_is_a_scalar_tensor():
    @gc.custom_gradient
    def f(x):
        return 2.0, lambda dy: dy * 0.0
    y = f(gc.constant(1.0))
    assert isinstance(y.numpy(), np.float64) and y.numpy() == 2.0


def test_constructors_given_tensors_keep_their_argument_errors():
    a = gc.constant(1.0)
    with pytest.raises(TypeError, match="too many arguments"):
        gc.full((2,), a, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nums'"):
        gc.linspace(a, 2.0, nums=3)
    np.testing.assert_array_equal(gc.full(fill_value=a, shape=(2,)).numpy(), [1.0, 1.0])


# --- dict targets and sources pair by key (TensorFlow's nest sorts dict keys) -------------
def test_output_gradients_pair_with_dict_targets_by_key_not_by_order():
    x = gc.constant([1.0, 2.0])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = {"b": 3 * x, "a": x * x}
    g = tape.gradient(y, x, output_gradients={"a": np.array([1.0, 0.0]),
                                              "b": np.array([0.0, 1.0])})
    # 2x * [1, 0] + 3 * [0, 1] at x = [1, 2]
    np.testing.assert_array_equal(g.numpy(), [2.0, 3.0])


def test_dy_pairs_with_dict_outputs_by_key_and_the_value_keeps_its_key_order():
    f = gc.value_and_gradients_function(lambda a: {"b": 3 * a, "a": a * a})
    value, [g] = f(2.0, dy={"a": 1.0, "b": 0.0})
    assert g.numpy() == 4.0  # d(a*a)/da at 2: only "a" is weighted
    assert list(value) == ["b", "a"]
    assert (value["b"].numpy(), value["a"].numpy()) == (6.0, 4.0)


def test_dict_sources_get_their_own_gradients_by_key():
    a, b = gc.constant(2.0), gc.constant(5.0)
    with gc.GradientTape() as tape:
        tape.watch([a, b])
        y = a * a * b
    grads = tape.gradient(y, {"z": a, "y": b})
    assert list(grads) == ["z", "y"]
    assert (grads["z"].numpy(), grads["y"].numpy()) == (20.0, 4.0)  # 2ab, a^2


def test_namedtuple_sources_come_back_as_the_namedtuple():
    from collections import namedtuple
    Pair = namedtuple("Pair", "u v")
    u, v = gc.constant(3.0), gc.constant(4.0)
    with gc.GradientTape() as tape:
        tape.watch([u, v])
        y = u * v * v
    grads = tape.gradient(y, Pair(u, v))
    assert isinstance(grads, Pair)
    assert (grads.u.numpy(), grads.v.numpy()) == (16.0, 24.0)  # v^2, 2uv


def test_dicts_with_keys_that_do_not_sort_are_refused_clearly():
    x = gc.constant(1.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = {1: x * 2, "a": x * 3}
    with pytest.raises(TypeError, match="sortable keys"):
        tape.gradient(y, x)


# --- booleans and integers have no gradient (None), as in TensorFlow ----------------------
@pytest.mark.parametrize("source", [np.array([True, False]), np.array([1, 2], dtype=np.int64)])
def test_a_boolean_or_integer_source_has_no_gradient(source):
    s = gc.constant(source).astype(source.dtype)
    assert s.dtype == source.dtype
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(s)
        y = gc.sum(s * 2.5)
    assert tape.gradient(y, s) is None
    zeros = tape.gradient(y, s, unconnected_gradients="zero")
    assert zeros.dtype == source.dtype and not zeros.numpy().any()
    assert tape.jacobian(s * 2.5, s) is None


def test_a_boolean_argument_has_no_gradient_beside_a_float_one():
    m, v = np.array([True, False]), np.array([1.0, 2.0])
    gm, gv = gc.gradients_function(lambda m, v: gc.sum(m * v))(m, v)
    assert gm is None
    np.testing.assert_array_equal(gv.numpy(), [1.0, 0.0])


# --- params: a repeated entry is the same argument, given once per entry ------------------
@pytest.mark.parametrize("params", [[0, 0], ["a", "a"]])
def test_a_repeated_params_entry_gives_that_gradient_for_each_entry(params):
    grads = gc.gradients_function(lambda a, b: a * b, params=params)(1.0, 2.0)
    assert [g.numpy() for g in grads] == [2.0, 2.0]  # d(ab)/da = b, twice


def test_params_in_any_order_with_repeats():
    grads = gc.gradients_function(lambda a, b: a * a * b, params=[1, 0, 1])(3.0, 2.0)
    assert [g.numpy() for g in grads] == [9.0, 12.0, 9.0]  # a^2, 2ab, a^2


# --- jacobian refuses what gradient refuses ------------------------------------------------
def test_jacobian_refuses_an_array_source_and_an_unknown_unconnected_value():
    x = gc.constant([1.0, 2.0])
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2
    with pytest.raises(TypeError, match="gradient sources must be tensors or variables"):
        tape.jacobian(y, np.ones(2))
    with pytest.raises(ValueError, match="unconnected_gradients must be 'none' or 'zero'"):
        tape.jacobian(y, x, unconnected_gradients="bogus")
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), 2 * np.eye(2))
