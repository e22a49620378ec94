"""Tensors behave like numpy arrays: methods and properties, % and //, and numpy's own
functions applied to tensors dispatching to the table (gradients kept) or refusing when
a gradient would be lost. Expected gradients are worked out by hand or by numpy."""
from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc


def grad_of(f, value):
    [g] = gc.gradients_function(f)(value)
    return g.numpy()


X = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])


def test_properties_read_like_numpy():
    x = gc.constant(X)
    assert (x.shape, x.ndim, x.size, x.dtype) == ((2, 3), 2, 6, np.float64)
    assert len(x) == 2
    np.testing.assert_array_equal(x.T.numpy(), X.T)
    assert [row.numpy().tolist() for row in x] == X.tolist()
    assert isinstance(x.numpy(), np.ndarray)


@pytest.mark.parametrize("method, reference", [
    (lambda t: t.sum(), lambda a: a.sum()),
    (lambda t: t.sum(axis=0), lambda a: a.sum(axis=0)),
    (lambda t: t.mean(1, keepdims=True), lambda a: a.mean(1, keepdims=True)),
    (lambda t: t.max(), lambda a: a.max()),
    (lambda t: t.min(axis=1), lambda a: a.min(axis=1)),
    (lambda t: t.prod(axis=0), lambda a: a.prod(axis=0)),
    (lambda t: t.var(ddof=1), lambda a: a.var(ddof=1)),
    (lambda t: t.std(axis=0), lambda a: a.std(axis=0)),
    (lambda t: t.reshape(3, 2), lambda a: a.reshape(3, 2)),
    (lambda t: t.reshape((6,)), lambda a: a.reshape((6,))),
    (lambda t: t.transpose(), lambda a: a.transpose()),
    (lambda t: t.transpose(1, 0), lambda a: a.transpose(1, 0)),
    (lambda t: t.reshape(2, 1, 3).squeeze(), lambda a: a.reshape(2, 1, 3).squeeze()),
    (lambda t: t.reshape(2, 1, 3).squeeze(1), lambda a: a.reshape(2, 1, 3).squeeze(1)),
    (lambda t: t.flatten(), lambda a: a.flatten()),
    (lambda t: t % 2.5, lambda a: a % 2.5),
    (lambda t: 7.0 % t, lambda a: 7.0 % a),
    (lambda t: t // 2.5, lambda a: a // 2.5),
    (lambda t: 7.0 // t, lambda a: 7.0 // a),
    (lambda t: abs(t), lambda a: abs(a)),
    (lambda t: -t, lambda a: -a),
    (lambda t: t @ np.ones(3), lambda a: a @ np.ones(3)),
    (lambda t: np.ones((4, 2)) @ t, lambda a: np.ones((4, 2)) @ a),
    (lambda t: [[1.0, 2.0]] @ t, lambda a: [[1.0, 2.0]] @ a),
])
def test_methods_and_operators_compute_what_numpy_computes(method, reference):
    np.testing.assert_array_equal(method(gc.constant(X)).numpy(), reference(X))


def test_methods_keep_the_gradient():
    g = grad_of(lambda t: t.sum() + t.mean(axis=0).sum() + t.reshape(3, 2)[0, 1]
                + t.T[2, 1] + t.max(), X)
    expected = np.ones_like(X) + 0.5
    expected[0, 1] += 1.0   # reshape(3, 2)[0, 1] is X[0, 1]
    expected[1, 2] += 1.0   # T[2, 1] is X[1, 2]
    expected[1, 1] += 1.0   # the maximum, 5
    np.testing.assert_array_equal(g, expected)


def test_mod_has_gradient_one_and_floor_division_zero():
    np.testing.assert_array_equal(grad_of(lambda t: (t % 2.5).sum(), X), np.ones_like(X))
    np.testing.assert_array_equal(grad_of(lambda t: (t // 2.5).sum() + 0.0 * t.sum(), X),
                                  np.zeros_like(X))
    # d/dy (x mod y) = -floor(x / y)
    np.testing.assert_array_equal(grad_of(lambda t: (7.0 % t).sum(), X), -(7.0 // X))


def test_astype_float32_is_differentiable_and_integers_are_not():
    x = gc.constant(X)
    assert x.astype(np.float32).dtype == np.float32
    g = grad_of(lambda t: (t.astype("float32") * 2.0).sum(), X)
    assert g.dtype == np.float64 and np.all(g == 2.0)
    ints = x.astype(int)
    assert ints.dtype.kind == "i" and ints.numpy().tolist() == X.astype(int).tolist()
    with pytest.raises(TypeError, match="float32 or float64"):
        x.astype(np.float16)


def test_an_integer_tensor_is_a_python_index():
    x = gc.constant([0.5, 3.0, 1.0])
    assert ["a", "b", "c"][gc.argmax(x)] == "b"
    with pytest.raises(TypeError, match="integer tensor"):
        [1, 2][x[0]]


@pytest.mark.parametrize("value", [2.7, -2.7, 0.5, 1e300, -0.0, 3.0])
def test_int_of_a_float_tensor_truncates_as_numpy_and_tensorflow(value):
    assert int(gc.constant(value)) == int(np.float64(value))
    assert int(gc.Variable(value)) == int(np.float64(value))
    if abs(value) < 1e38:  # (float32's range)
        assert int(gc.constant(np.float32(value))) == int(np.float32(value))


def test_int_float_and_bool_of_tensors_follow_numpy_on_every_value():
    for value in (np.float64(2.7), np.True_, np.int64(7)):
        t = gc.constant(value)
        assert (int(t), float(t), bool(t)) == (int(value), float(value), bool(value))
    with pytest.raises(ValueError):  # as int(np.float64("nan"))
        int(gc.constant(np.nan))
    with pytest.raises(TypeError):  # as numpy 2: only a 0-d value converts
        int(gc.constant([2.7, 1.0]))
    with pytest.raises(TypeError, match="integer tensor"):  # still no float index
        [1, 2][gc.constant(1.0)]


def test_numpy_functions_on_tensors_dispatch_to_the_table_and_keep_gradients():
    def f(t):
        return (np.sum(np.sin(t) * np.ones(3), axis=1).sum() + np.mean(t)
                + np.max(np.concatenate([t, t]), axis=0)[0] + np.exp(t)[0, 0]
                + (np.ones((1, 2)) @ t).sum())
    g = grad_of(f, X)
    expected = np.cos(X) + 1 / 6 + 1.0
    expected[1, 0] += 1.0  # max of column 0 of [X; X] is 4 = X[1, 0], found twice: 1/2 + 1/2
    expected[0, 0] += np.exp(X[0, 0])
    np.testing.assert_allclose(g, expected, rtol=1e-15)


def test_numpy_ufunc_with_an_array_on_the_left_gives_a_tensor():
    out = np.array([1.0, 2.0]) * gc.constant([3.0, 4.0])
    assert isinstance(out, gc.Tensor) and out.numpy().tolist() == [3.0, 8.0]
    assert isinstance(np.float64(2.0) - gc.constant(1.0), gc.Tensor)


def test_numpy_functions_gradcli_lacks_work_on_untraced_tensors():
    x = gc.constant([1.0, np.nan, 3.0])
    assert np.isnan(x).tolist() == [False, True, False]
    assert np.nanmean(x) == 2.0
    assert np.allclose(gc.constant([1.0, 2.0]), [1.0, 2.0])


def test_numpy_functions_that_would_lose_a_gradient_refuse_with_the_name_to_use():
    x = gc.Variable([1.0, 2.0])
    with gc.GradientTape():
        with pytest.raises(TypeError, match="lose its gradient.*nanmean"):
            np.nanmean(x)
        with pytest.raises(TypeError, match="gradcli.sum"):
            np.add.reduce(x)
        with pytest.raises(TypeError, match="takes no out"):
            np.sin(x, out=np.zeros(2))
        assert np.isfinite(x).tolist() == [True, True]  # booleans lose nothing
        with pytest.raises(TypeError, match="np.sum on tensors is gradcli.sum"):
            np.sum(x, dtype=np.float32)


def test_operators_on_tensors_are_the_entries_not_the_numpy_protocol(monkeypatch):
    """Tensor-first operators go straight to their entry: the numpy protocol is only met
    when numpy holds the left operand."""
    from gradcli.engine import methods
    calls = []
    original = methods._array_ufunc
    monkeypatch.setattr(gc.Tensor, "__array_ufunc__",
                        lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    x = gc.constant([1.0, 2.0])
    _ = x * np.ones(2) + x - x / 2.0 @ np.ones(2) ** 2
    assert calls == []
    _ = np.ones(2) * x
    assert calls == [np.multiply]
