"""The function transformations and the values: errors and edge cases of SPEC §1."""
import numpy as np
import pytest

import gradcli as gc


def test_value_and_gradients_function_with_an_index():
    value, grads = gc.value_and_gradients_function(lambda a, b: a * b, params=[1])(2.0, 3.0)
    assert value.numpy() == 6.0
    assert [g.numpy() for g in grads] == [2.0]


def test_params_mixing_names_and_indices_raises():
    with pytest.raises(ValueError, match="mix"):
        gc.gradients_function(lambda a, b: a * b, params=["a", 1])


def test_unknown_param_name_is_named():
    with pytest.raises(ValueError, match="'c'"):
        gc.gradients_function(lambda a, b: a * b, params=["c"])


def test_keyword_arguments_other_than_dy_raise():
    with pytest.raises(ValueError, match="keyword"):
        gc.gradients_function(lambda a: a * a)(2.0, scale=3.0)


def test_dy_weights_the_output():
    [g] = gc.gradients_function(lambda a: a * a)(3.0, dy=2.0)
    assert g.numpy() == 12.0


def test_implicit_gradients_follow_creation_order():
    v0 = gc.Variable(1.0)
    v1 = gc.Variable(2.0)
    pairs = gc.implicit_gradients(lambda: v1 * v1 + v0 * v0)()
    assert [(g.numpy(), v) for g, v in pairs] == [(2.0, v0), (4.0, v1)]


def test_implicit_gradients_without_variables_raise_tensorflows_message():
    with pytest.raises(ValueError, match="No trainable variables were accessed while the "
                                         "function was being computed."):
        gc.implicit_gradients(lambda x: x * x)(3.0)


def test_implicit_read_but_unconnected_variable_gives_none():
    v, w = gc.Variable(1.0), gc.Variable(2.0)
    pairs = gc.implicit_gradients(lambda: gc.stop_gradient(w * 1.0) + v * 3.0)()
    assert [v_ for _, v_ in pairs] == [v, w]
    assert pairs[0][0].numpy() == 3.0 and pairs[1][0] is None


def test_function_returning_none_raises():
    for make in (gc.gradients_function, gc.value_and_gradients_function,
                 gc.implicit_gradients, gc.implicit_value_and_gradients):
        with pytest.raises(ValueError, match="None"):
            make(lambda x: None)(1.0)


def test_non_scalar_output_is_summed():
    [g] = gc.gradients_function(lambda x: x * x)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])


def test_variables_inside_gradients_function_are_constants():
    w = gc.Variable(4.0)
    [g] = gc.gradients_function(lambda x: w * x)(2.0)
    assert g.numpy() == 4.0


def test_nested_gradients_function_gives_second_derivative():
    d2 = gc.gradients_function(lambda x: gc.gradients_function(lambda y: y ** 3)(x)[0])
    assert d2(2.0)[0].numpy() == 12.0


def test_custom_gradient_replaces_the_rule():
    @gc.custom_gradient
    def scaled(x):
        return x * x, lambda dy: dy * 100.0
    [g] = gc.gradients_function(scaled)(3.0)
    assert g.numpy() == 100.0


def test_stop_gradient_blocks():
    [g] = gc.gradients_function(lambda x: x * gc.stop_gradient(x))(3.0)
    assert g.numpy() == 3.0


def test_integers_become_differentiable_floats():
    [g] = gc.gradients_function(lambda x: x * x)(3)
    assert g.numpy() == 6.0 and g.dtype == np.float64
    assert gc.constant(3).dtype == np.float64


def test_booleans_are_never_differentiable():
    b = gc.constant([True, False])
    assert b.dtype == np.bool_
    with pytest.raises(TypeError):
        gc.Variable(True)


def test_tensor_protocol():
    t = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and len(t) == 2
    assert float(t[1, 0]) == 3.0
    np.testing.assert_array_equal(t[:, 1].numpy(), [2.0, 4.0])
    np.testing.assert_array_equal((t > 2.0).numpy(), [[False, False], [True, True]])
    np.testing.assert_array_equal((2.0 - t).numpy(), [[1.0, 0.0], [-1.0, -2.0]])
    np.testing.assert_array_equal((t @ t).numpy(), [[7.0, 10.0], [15.0, 22.0]])
    assert (-t).numpy()[0, 0] == -1.0
    assert (np.float64(2.0) * t).numpy()[1, 1] == 8.0


def test_variable_assign_family():
    v = gc.Variable([1.0, 2.0], name="v")
    assert v.name == "v" and v.trainable
    v.assign([3.0, 4.0]).assign_add([1.0, 1.0]).assign_sub([0.5, 0.5])
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    with pytest.raises(ValueError, match="shape"):
        v.assign([1.0, 2.0, 3.0])


def test_shape_mismatch_names_the_operation_and_shapes():
    with pytest.raises(gc.errors.ShapeError, match=r"matmul: \(2, 3\) @ \(2, 3\)"):
        gc.constant(np.ones((2, 3))) @ gc.constant(np.ones((2, 3)))


def test_reusing_temporaries_never_changes_a_value_someone_holds():
    """Large results may be written over a temporary's array (as numpy's temporary
    elision does); a named tensor, the user's array, or a value a tape kept never is."""
    a = np.ones(5000)
    x = gc.constant(a)
    y = x * 2.0
    z = y + 1.0
    assert y.numpy()[0] == 2.0 and z.numpy()[0] == 3.0
    w = (x * 2.0) + 1.0
    assert w.numpy()[0] == 3.0 and x.numpy()[0] == 1.0 and a[0] == 1.0
    v = gc.constant(a) + 1.0
    assert v.numpy()[0] == 2.0 and a[0] == 1.0
    e = gc.exp(x * 0.0)
    assert (e + 1.0).numpy()[0] == 2.0 and e.numpy()[0] == 1.0
    held = (x * 3.0).numpy()
    assert held[0] == 3.0
    with gc.GradientTape() as tape:
        tape.watch(x)
        s = gc.sum(gc.tanh(gc.exp(x * 0.5) + 1.0))
    t = np.exp(0.5) + 1.0
    np.testing.assert_allclose(tape.gradient(s, x).numpy(),
                               (1 - np.tanh(t) ** 2) * np.exp(0.5) * 0.5)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = gc.sum(gc.tanh(x * 0.5 + 1.0))
    first = tape.gradient(s, x).numpy().copy()
    np.testing.assert_array_equal(tape.gradient(s, x).numpy(), first)
