"""The two seed texts, run as the library: their numbers, exactly."""
import pytest

import gradcli as gc


@pytest.fixture
def weights():
    return gc.Variable(2.0), gc.Variable(3.0)


def test_seed_value_is_31(weights):
    w1, w2 = weights
    assert (w1 * 5.0 + w2 * 7.0).numpy() == 31.0


def test_tape_gives_x1(weights):
    w1, w2 = weights
    with gc.GradientTape() as tape:
        s = w1 * 5.0 + w2 * 7.0
    [w1_grad] = tape.gradient(s, [w1])
    assert w1_grad.numpy() == 5.0


def test_gradients_function_gives_the_weights(weights):
    w1, w2 = weights
    grad_fn = gc.gradients_function(lambda x1, x2: w1 * x1 + w2 * x2)
    x1_grad, x2_grad = grad_fn(5.0, 7.0)
    assert (x1_grad.numpy(), x2_grad.numpy()) == (2.0, 3.0)


def test_gradients_function_with_named_params(weights):
    w1, w2 = weights

    def weighted_sum_with_weights(w1, x1, w2, x2):
        return w1 * x1 + w2 * x2
    grad_fn = gc.gradients_function(weighted_sum_with_weights, params=["w1", "w2"])
    w1_grad, w2_grad = grad_fn(w1, 5.0, w2, 7.0)
    assert (w1_grad.numpy(), w2_grad.numpy()) == (5.0, 7.0)


def test_implicit_gradients_pairs_the_very_variables(weights):
    w1, w2 = weights
    grad_fn = gc.implicit_gradients(lambda x1, x2: w1 * x1 + w2 * x2)
    [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5.0, 7.0)
    assert (w1_grad.numpy(), w2_grad.numpy()) == (5.0, 7.0)
    assert w1_var is w1 and w2_var is w2


def test_implicit_value_and_gradients(weights):
    w1, w2 = weights
    grad_fn = gc.implicit_value_and_gradients(lambda x1, x2: w1 * x1 + w2 * x2)
    s, [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5.0, 7.0)
    assert s.numpy() == 31.0
    assert (w1_grad.numpy(), w2_grad.numpy()) == (5.0, 7.0)


def test_untrainable_w1_leaves_only_w2():
    w1 = gc.Variable(2.0, trainable=False)
    w2 = gc.Variable(3.0)
    pairs = gc.implicit_gradients(lambda x1, x2: w1 * x1 + w2 * x2)(5.0, 7.0)
    assert len(pairs) == 1
    assert pairs[0][0].numpy() == 7.0 and pairs[0][1] is w2


def test_seed2_square_in_all_modes():
    x = gc.Variable(3.0)
    with gc.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 6.0
    [g] = gc.gradients_function(lambda v: v * v)(3.0)
    assert g.numpy() == 6.0
    [(g, var)] = gc.implicit_gradients(lambda: x * x)()
    assert g.numpy() == 6.0 and var is x
    value, [(g, var)] = gc.implicit_value_and_gradients(lambda: x * x)()
    assert value.numpy() == 9.0 and g.numpy() == 6.0
