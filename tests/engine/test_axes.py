"""Axis parameters: every ``axis``/``axes`` of every entry is normalised once, in
``ops.apply``, so negative axes mean what numpy means everywhere (forward, rules, sympy)
and a bad axis is one clear ShapeError naming the function. The registry is iterated, so
entries added later are covered without a change here."""
import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core.table import ORDER, REGISTRY
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


# The other required parameters of entries (by parameter name), valid along any axis.
_REQUIRED = {"repeats": 2, "shift": 1, "indices_or_sections": [1]}


def _shape_for(name, ndim):
    """squeeze takes only axes of length 1: the first and last are (the axes tested)."""
    if name == "squeeze":
        return (1,) * ndim if ndim < 3 else (1,) + (3,) * (ndim - 2) + (1,)
    return (2, 3, 4)[:ndim]


def _inputs(op, rng, shape=(2, 3, 4)):
    """Inputs in the entry's sample range; integer indices valid along every axis of
    ``shape`` (all its axes are at least 2 long) for the entries that take them."""
    lo, hi = op.sample
    n = 2 if op.variadic else len(op.inputs)
    inputs = [rng.uniform(lo, hi, size=shape) for _ in range(n)]
    if "indices" in op.inputs:
        at = op.inputs.index("indices")
        if op.name == "take_along_axis" and shape:
            inputs[at] = rng.integers(0, 2, size=shape)
        else:
            inputs[at] = np.array([1, 0]) if shape else np.array([0])
    return inputs


def _required(op):
    """Values for the entry's required parameters that are not axes (repeat's repeats...)."""
    return {p: _REQUIRED[p] for p, default in op.params
            if default is None and p not in op.axis_params and p in _REQUIRED}


def _call(name, inputs, **params):
    op, fn = REGISTRY[name], F[name]
    params = {**_required(op), **params}
    return fn(inputs, **params) if op.variadic else fn(*inputs, **params)


def _axis_pairs(op, ndim):
    """(negative form, non-negative form) of the axis parameters for an input of ndim."""
    rank = ndim + op.new_axis
    pairs = []
    for name in op.axis_params:
        default = dict(op.params)[name]
        if name == "axes":
            negative, positive = (-1, 0, -2), (rank - 1, 0, rank - 2)
            if isinstance(default, tuple):  # a fixed count (rot90's plane: two axes)
                negative, positive = negative[:len(default)], positive[:len(default)]
            pairs.append((name, negative, positive))
        else:
            pairs.append((name, -1, rank - 1))
            pairs.append((name, -rank, 0))
    return pairs


def _flat(out):
    """One tensor of an entry's result (split's pieces joined)."""
    if isinstance(out, tuple):
        return gc.concatenate([F["ravel"](piece) for piece in out])
    return out


@pytest.mark.parametrize("name", AXIS_ENTRIES)
def test_negative_axes_give_the_values_and_gradients_of_the_positive_ones(name):
    op = REGISTRY[name]
    rng = np.random.default_rng(7)
    inputs = _inputs(op, rng, _shape_for(name, 3))
    for param, negative, positive in _axis_pairs(op, 3):
        if not op.differentiable and op.kind != "multi":  # argmax, argmin: integer results
            np.testing.assert_array_equal(_call(name, inputs, **{param: negative}).numpy(),
                                          _call(name, inputs, **{param: positive}).numpy())
            continue

        def loss(params):
            def f(*xs):
                out = _flat(_call(name, list(xs) + inputs[len(xs):], **params))
                return gc.sum(out * np.arange(out.numpy().size).reshape(out.shape))
            return f
        # the float inputs are the sources (take's indices are not differentiable)
        sources = inputs[:1] if "indices" in op.inputs else inputs
        value_neg, grads_neg = gc.value_and_gradients_function(loss({param: negative}))(*sources)
        value_pos, grads_pos = gc.value_and_gradients_function(loss({param: positive}))(*sources)
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


@pytest.mark.parametrize("name", [n for n in AXIS_ENTRIES if REGISTRY[n].sympy is not None])
def test_negative_axes_in_the_sympy_counterpart(name):
    """The symbolic form reads the normalised axes too (the --check reference); split and
    array_split give a tuple of pieces, compared piece by piece."""
    import sympy as sp
    op = REGISTRY[name]
    shape = _shape_for(name, 2)
    arrays = [np.array(sp.symbols(f"a{i}_0:{int(np.prod(shape))}"), dtype=object).reshape(shape)
              for i in range(2 if op.variadic else len(op.inputs))]
    if "indices" in op.inputs:  # integer constants, as the check passes them
        at = op.inputs.index("indices")
        arrays[at] = _inputs(op, np.random.default_rng(9), shape)[at]
    for param, negative, positive in _axis_pairs(op, 2):
        if param == "axes":
            negative, positive = (-1, 0), (1, 0)
        params = _required(op)
        neg = op.sympy(sp, *arrays, **params, **{param: negative})
        pos = op.sympy(sp, *arrays, **params, **{param: positive})
        neg, pos = (neg, pos) if isinstance(neg, tuple) else ((neg,), (pos,))
        assert len(neg) == len(pos), name
        for neg_part, pos_part in zip(neg, pos):
            neg_part = np.asarray(neg_part, dtype=object)
            pos_part = np.asarray(pos_part, dtype=object)
            assert neg_part.shape == pos_part.shape
            assert all(sp.simplify(a - b) == 0
                       for a, b in zip(neg_part.ravel(), pos_part.ravel())), name


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
    "axis", 0) is None and not REGISTRY[n].new_axis])
def test_reduction_of_a_scalar_along_axis_zero_is_differentiable(name):
    """numpy takes axis 0 or -1 on a 0-d value (all of it); so must the gradient (found
    by the differential fuzzer: prod and mean of a scalar with axis=0 crashed). Checked
    against central differences of the sum of the result (what a non-scalar target's
    gradient is). (expand_dims is left out: its axis indexes the result, one dimension
    more, so axis 0 of a scalar is a real axis there, tested above.)"""
    op = REGISTRY[name]
    others = _inputs(op, np.random.default_rng(10), shape=())[1:]  # average's weights...

    def f(x, **params):
        return _call(name, [x, *others], **params)
    for axis in (0, -1, (0,)):
        expected = f(np.float64(2.0)).numpy()
        if not op.differentiable:  # argmax, argmin: the value only
            assert f(np.float64(2.0), axis=axis).numpy() == expected, (name, axis)
            continue
        value, [g] = gc.value_and_gradients_function(
            lambda x: f(x, axis=axis))(np.float64(2.0))
        np.testing.assert_array_equal(value.numpy(), expected)
        h = 1e-6
        fd = (np.sum(f(2.0 + h).numpy()) - np.sum(f(2.0 - h).numpy())) / (2 * h)
        assert g.numpy() == pytest.approx(fd, rel=1e-8), (name, axis)
