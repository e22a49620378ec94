"""Axis parameters: every ``axis``/``axes`` of every entry is normalised once, in
``ops.apply``, so negative axes mean what numpy means everywhere (forward, rules, sympy)
and a bad axis is one clear ShapeError naming the function. The registry is iterated, so
entries added later are covered without a change here."""
import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.table import ORDER, REGISTRY
from gradcli.errors import ShapeError
from gradcli.lang import Declarations, build, parse_program

F = gc.FUNCTIONS
AXIS_ENTRIES = [name for name in ORDER if REGISTRY[name].axis_params
                and REGISTRY[name].kind != "constructor"]


def test_entries_with_axis_parameters_are_found_from_their_names():
    assert {"sum", "mean", "prod", "max", "min", "logsumexp", "norm", "transpose",
            "concatenate", "stack", "softmax"} <= set(AXIS_ENTRIES)
    assert REGISTRY["transpose"].axis_params == ("axes",)
    assert REGISTRY["sin"].axis_params == ()


def test_transpose_with_negative_axes_gives_the_transposed_gradient():
    c = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    [g] = gc.gradients_function(lambda x: gc.sum(gc.transpose(x, (-1, 0)) * c))(
        np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(g.numpy(), [[1.0, 3.0], [2.0, 4.0]])


def test_transpose_with_negative_axes_of_a_non_square_matrix():
    c = np.arange(6.0).reshape(3, 2)
    [g] = gc.gradients_function(lambda x: gc.sum(gc.transpose(x, (-1, 0)) * c))(
        np.ones((2, 3)))
    np.testing.assert_array_equal(g.numpy(), c.T)


def test_language_transpose_with_negative_axes():
    decls = Declarations.from_options(var=["X=[[1, 2, 3], [4, 5, 6]]"],
                                      arg=["C=[[1, 2], [3, 4], [5, 6]]"])
    model = build(parse_program("sum(transpose(X, (-1, 0)) * C)"), decls)
    value, pairs = gc.implicit_value_and_gradients(model.function)(*model.arg_values)
    assert value.numpy() == 86.0
    np.testing.assert_array_equal(pairs[0][0].numpy(), [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])


def _inputs(op, rng, shape=(2, 3, 4)):
    lo, hi = op.sample
    n = 2 if op.variadic else len(op.inputs)
    return [rng.uniform(lo, hi, size=shape) for _ in range(n)]


def _call(name, inputs, **params):
    op, fn = REGISTRY[name], F[name]
    return fn(inputs, **params) if op.variadic else fn(*inputs, **params)


def _axis_pairs(op, ndim):
    """(negative form, non-negative form) of the axis parameters for an input of ndim."""
    rank = ndim + op.new_axis
    pairs = []
    for name in op.axis_params:
        if name == "axes":
            pairs.append((name, (-1, 0, -2), (rank - 1, 0, rank - 2)))
        else:
            pairs.append((name, -1, rank - 1))
            pairs.append((name, -rank, 0))
    return pairs


@pytest.mark.parametrize("name", AXIS_ENTRIES)
def test_negative_axes_give_the_values_and_gradients_of_the_positive_ones(name):
    op = REGISTRY[name]
    rng = np.random.default_rng(7)
    inputs = _inputs(op, rng)
    for param, negative, positive in _axis_pairs(op, 3):
        def loss(params):
            def f(*xs):
                out = _call(name, list(xs), **params)
                return gc.sum(out * np.arange(out.numpy().size).reshape(out.shape))
            return f
        value_neg, grads_neg = gc.value_and_gradients_function(loss({param: negative}))(*inputs)
        value_pos, grads_pos = gc.value_and_gradients_function(loss({param: positive}))(*inputs)
        assert value_neg.numpy() == value_pos.numpy(), (name, param, negative)
        for a, b in zip(grads_neg, grads_pos):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"{name} {negative}")


@pytest.mark.parametrize("name", AXIS_ENTRIES)
def test_axis_out_of_range_is_a_shape_error_naming_the_function(name):
    op = REGISTRY[name]
    inputs = _inputs(op, np.random.default_rng(8), shape=(2, 3))
    rank = 2 + op.new_axis
    for param in op.axis_params:
        for bad in (rank, -rank - 1):
            value = (bad, 0) if param == "axes" else bad
            with pytest.raises(ShapeError, match=rf"^{name}: axis {bad} is out of range"):
                _call(name, inputs, **{param: value})


@pytest.mark.parametrize("name", AXIS_ENTRIES)
def test_negative_axes_in_the_sympy_counterpart(name):
    """The symbolic form reads the normalised axes too (the --check reference)."""
    import sympy as sp
    op = REGISTRY[name]
    arrays = [np.array(sp.symbols(f"a{i}_0:6"), dtype=object).reshape(2, 3)
              for i in range(2 if op.variadic else len(op.inputs))]
    for param, negative, positive in _axis_pairs(op, 2):
        if param == "axes":
            negative, positive = (-1, 0), (1, 0)
        neg = np.asarray(op.sympy(sp, *arrays, **{param: negative}), dtype=object)
        pos = np.asarray(op.sympy(sp, *arrays, **{param: positive}), dtype=object)
        assert neg.shape == pos.shape
        assert all(sp.simplify(a - b) == 0 for a, b in zip(neg.ravel(), pos.ravel())), name


def test_repeated_axes_are_refused():
    with pytest.raises(ShapeError, match="transpose: repeated axis"):
        F["transpose"](np.ones((2, 3)), (1, -1))
    with pytest.raises(ShapeError, match="sum: repeated axis"):
        F["sum"](np.ones((2, 3)), axis=(0, -2))


def test_axis_that_is_not_an_integer_is_refused():
    with pytest.raises(ShapeError, match="sum: axis must be an integer"):
        F["sum"](np.ones((2, 3)), axis=1.5)


def test_recorded_node_keeps_the_normalised_axes():
    x = gc.constant(np.ones((2, 3)))
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = F["softmax"](x)
        z = F["sum"](x, axis=(-1, -2))
    assert y._node.params["axis"] == 1
    assert z._node.params["axis"] == (1, 0)
    del tape


def test_scalar_input_takes_axis_zero_or_minus_one_as_numpy():
    assert F["sum"](3.0, axis=-1).numpy() == 3.0
    assert F["softmax"](2.0).numpy() == 1.0
    with pytest.raises(ShapeError, match="sum: axis 1 is out of range"):
        F["sum"](3.0, axis=1)


@pytest.mark.parametrize("name", [n for n in AXIS_ENTRIES if dict(REGISTRY[n].params).get(
    "axis", 0) is None])
def test_reduction_of_a_scalar_along_axis_zero_is_differentiable(name):
    """numpy takes axis 0 or -1 on a 0-d value (all of it); so must the gradient (found
    by the differential fuzzer: prod and mean of a scalar with axis=0 crashed)."""
    for axis in (0, -1, (0,)):
        value, [g] = gc.value_and_gradients_function(
            lambda x: F[name](x, axis=axis))(np.float64(2.0))
        assert value.numpy() == F[name](np.float64(2.0)).numpy()
        h = 1e-6
        fd = (F[name](2.0 + h).numpy() - F[name](2.0 - h).numpy()) / (2 * h)
        assert g.numpy() == pytest.approx(fd, rel=1e-8), (name, axis)
