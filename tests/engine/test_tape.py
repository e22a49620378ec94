"""GradientTape semantics, with the values of TensorFlow's own tests and docs."""
import numpy as np
import pytest

import gradcli as gc


def test_gradient_through_an_intermediate_source():
    x = gc.constant(3.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx, dz_dy = tape.gradient(z, [x, y])
    assert (dz_dx.numpy(), dz_dy.numpy()) == (108.0, 18.0)


def test_second_call_on_non_persistent_tape_raises():
    x = gc.constant(3.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)


def test_persistent_tape_differentiates_its_own_gradients():
    x = gc.Variable(3.0)
    with gc.GradientTape(persistent=True) as tape:
        y = x ** 3
        dy = tape.gradient(y, x)
        d2y = tape.gradient(dy, x)
        d3y = tape.gradient(d2y, x)
    assert (dy.numpy(), d2y.numpy(), d3y.numpy()) == (27.0, 18.0, 6.0)


def test_nested_tapes_give_the_second_derivative():
    x = gc.constant(5.0)
    with gc.GradientTape() as outer:
        outer.watch(x)
        with gc.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy_dx = inner.gradient(y, x)
    assert dy_dx.numpy() == 10.0
    assert outer.gradient(dy_dx, x).numpy() == 2.0


def test_several_targets_are_summed():
    x, y = gc.constant(3.0), gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch([x, y])
        targets = [2.0 * x, 3.0 * y]
    gx, gy = tape.gradient(targets, [x, y])
    assert (gx.numpy(), gy.numpy()) == (2.0, 3.0)


def test_target_list_sharing_a_source():
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient([x, y], x).numpy() == 5.0


def test_non_scalar_target_is_summed():
    x = gc.constant([1.0, 2.0, 3.0])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])


def test_output_gradients_weight_the_target():
    x = gc.constant([1.0, 2.0])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=np.array([10.0, 100.0]))
    np.testing.assert_array_equal(g.numpy(), [20.0, 400.0])


def test_nested_structure_of_sources_is_kept():
    a, b = gc.Variable(1.0), gc.Variable(2.0)
    with gc.GradientTape() as tape:
        y = a * b
    grads = tape.gradient(y, {"a": a, "pair": (b, a)})
    assert grads["a"].numpy() == 2.0
    assert isinstance(grads["pair"], tuple)
    assert (grads["pair"][0].numpy(), grads["pair"][1].numpy()) == (1.0, 2.0)


def test_list_of_tensors_inside_a_list_keeps_its_place():
    a, b, c = gc.Variable(1.0), gc.Variable(2.0), gc.Variable(3.0)
    with gc.GradientTape() as tape:
        y = a * b * c
    grads = tape.gradient(y, [[a, b], c])
    assert [[g.numpy() for g in grads[0]], grads[1].numpy()] == [[6.0, 3.0], 2.0]


def test_unconnected_source_is_none_or_zeros():
    x, y = gc.Variable([1.0, 2.0]), gc.Variable(3.0)
    with gc.GradientTape(persistent=True) as tape:
        z = x * 2.0
    assert tape.gradient(z, y) is None
    zero = tape.gradient(z, y, unconnected_gradients="zero")
    assert zero.numpy() == 0.0 and zero.shape == ()
    with pytest.raises(ValueError):
        tape.gradient(z, y, unconnected_gradients="nonsense")


def test_stop_recording_hides_operations():
    x = gc.constant(3.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
    assert tape.gradient(y, x) is None


def test_reset_forgets_what_was_recorded():
    v = gc.Variable(1.0)
    with gc.GradientTape() as tape:
        loss = v * v
        tape.reset()
        loss += v * v
    assert tape.gradient(loss, v).numpy() == 2.0


def test_watch_accessed_variables_false_watches_only_what_is_asked():
    x1, x2 = gc.Variable(2.0), gc.Variable(1.0)
    with gc.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x2)
        y = x1 ** 2 + x2 ** 3
    g1, g2 = tape.gradient(y, [x1, x2])
    assert g1 is None and g2.numpy() == 3.0
    assert tape.watched_variables() == (x2,)


def test_watched_variables_in_creation_order():
    first, second = gc.Variable(1.0), gc.Variable(2.0)
    with gc.GradientTape() as tape:
        _ = second * first
    assert tape.watched_variables() == (first, second)


def test_untrainable_variable_is_not_watched():
    frozen = gc.Variable(2.0, trainable=False)
    with gc.GradientTape() as tape:
        y = frozen * frozen
    assert tape.watched_variables() == ()
    assert tape.gradient(y, frozen) is None


def test_watch_rejects_other_types_naming_them_with_tensorflows_value_error():
    with gc.GradientTape() as tape:
        with pytest.raises(ValueError, match="str"):
            tape.watch("x")
        with pytest.raises(ValueError, match="takes tensors or variables.*got ndarray"):
            tape.watch(np.array(1.0))


def test_jacobian_of_elementwise_product():
    x, y = gc.constant([1.0, 2.0]), gc.constant([3.0, 4.0])
    with gc.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = x * x * y
    np.testing.assert_array_equal(tape.jacobian(z, x).numpy(), [[6.0, 0.0], [0.0, 16.0]])
    np.testing.assert_array_equal(tape.jacobian(z, y).numpy(), [[1.0, 0.0], [0.0, 4.0]])


def test_batch_jacobian():
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    y = gc.constant([[3.0, 4.0], [5.0, 6.0]])
    with gc.GradientTape() as tape:
        tape.watch(x)
        z = x * x * y
    jac = tape.batch_jacobian(z, x)
    np.testing.assert_array_equal(jac.numpy(), [[[6, 0], [0, 16]], [[30, 0], [0, 48]]])


def test_batch_jacobian_rejects_mismatched_batches():
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    with gc.GradientTape() as tape:
        tape.watch(x)
        z = gc.sum(x, axis=0, keepdims=True)
    with pytest.raises(ValueError, match="batch"):
        tape.batch_jacobian(z, x)


def test_jacobian_unconnected_zero_shape():
    x, y = gc.constant([1.0, 2.0]), gc.constant([1.0, 2.0, 3.0])
    with gc.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = x * 2.0
    assert tape.jacobian(z, y) is None
    assert tape.jacobian(z, y, unconnected_gradients="zero").shape == (2, 3)


@pytest.mark.slow
def test_chain_of_100000_operations_has_no_recursion_limit():
    x = gc.constant(0.5)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(100_000):
            y = y * 1.0000001
    g = tape.gradient(y, x)
    assert g.numpy() == pytest.approx(1.0000001 ** 100_000, rel=1e-9)


def test_broadcast_gradient_sums_back_to_input_shape():
    x = gc.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = gc.constant([1.0, 1.0, 1.0])
    with gc.GradientTape() as tape:
        tape.watch(b)
        y = x * b
    np.testing.assert_array_equal(tape.gradient(y, b).numpy(), [5.0, 7.0, 9.0])


def test_float32_stays_float32():
    x = gc.Variable(2.0, dtype="float32")
    with gc.GradientTape() as tape:
        y = x * 3.0 + 1.0
    assert y.dtype == np.float32
    assert tape.gradient(y, x).dtype == np.float32
