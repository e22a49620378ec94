"""``vectorized_map`` around the gradient APIs (issue 12): gradients taken inside the
mapped function (JAX's ``vmap(grad(f))``) come out per example, unsummed, in every API,
without the per-example fallback; gradients taken by a tape around the map reach the
mapped inputs; a function the transform cannot batch runs as a loop and says so once.
The independent truth throughout is a Python loop over the examples."""
import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core.tensor import Batched
from gradcli.lang import Declarations, build, parse_program
from gradcli.run.modes import MODES, ModeOptions, run_mode

XS = np.array([[1.0, 2.0], [3.0, -4.0], [0.5, -1.5]])


def _leaves(nest):
    if isinstance(nest, (list, tuple)):
        return [leaf for item in nest for leaf in _leaves(item)]
    return [nest]


def _batched_and_looped(fn, *elems):
    """fn mapped over elems (the vectorised path: a fallback warning is an error), and
    the stack of fn's results example by example."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = gc.vectorized_map(lambda e: fn(*e), [gc.constant(e) for e in elems])
    rows = [fn(*[gc.constant(e[b]) for e in elems]) for b in range(len(elems[0]))]
    want = [np.stack([np.asarray(r.numpy()) for r in column])
            for column in zip(*[_leaves(r) for r in rows])]
    return [leaf.numpy() for leaf in _leaves(got)], want


def assert_map_equals_loop(fn, *elems):
    """Values inside the map equal the loop's, and so do the gradients a tape around
    the map takes of a weighted sum of them."""
    got, want = _batched_and_looped(fn, *elems)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(w.shape) for w in want]
    sources = [gc.constant(e) for e in elems]
    with gc.GradientTape() as tape:
        tape.watch(sources)
        out = _leaves(gc.vectorized_map(lambda e: fn(*e), sources))
        total = sum(gc.sum(o * w) for o, w in zip(out, weights))
    outer = tape.gradient(total, sources, unconnected_gradients="zero")
    for i, e in enumerate(elems):
        truth = []
        for b in range(len(e)):
            xs = [gc.constant(a[b]) for a in elems]
            with gc.GradientTape() as t:
                t.watch(xs)
                y = sum(gc.sum(o * w[b]) for o, w in zip(_leaves(fn(*xs)), weights))
            truth.append(t.gradient(y, xs[i], unconnected_gradients="zero").numpy())
        np.testing.assert_allclose(outer[i].numpy(), np.stack(truth), rtol=1e-10,
                                   atol=1e-12)


def cubes(x):
    return gc.sum(x ** 3) + x[0] * x[1]


# --- GradientTape -------------------------------------------------------------------------
def test_tape_inside_the_map_gives_one_gradient_per_example():
    def fn(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = cubes(x)
        return y, tape.gradient(y, x)
    assert_map_equals_loop(fn, XS)
    _, grads = gc.vectorized_map(fn, XS)
    # d/dx (x0^3 + x1^3 + x0 x1) = (3 x0^2 + x1, 3 x1^2 + x0): unsummed, one per row
    np.testing.assert_allclose(grads.numpy(), np.stack(
        [3 * XS[:, 0] ** 2 + XS[:, 1], 3 * XS[:, 1] ** 2 + XS[:, 0]], axis=1))


def test_persistent_tape_inside_the_map_answers_twice_with_output_gradients():
    def fn(x, w):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            total = gc.sum(y)
        plain = tape.gradient(y, x, output_gradients=gc.constant([1.0, 10.0]))
        batched = tape.gradient(y, x, output_gradients=w)
        return plain, batched, tape.gradient(total, x)
    assert_map_equals_loop(fn, XS, XS[::-1].copy())


def test_tape_jacobian_and_batch_jacobian_inside_the_map_are_per_example():
    def fn(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = gc.stack([x * x[0], gc.sin(x)])
            row = gc.reshape(x, (1, 2))
            rows = row ** 2
        return tape.jacobian(y, x), tape.batch_jacobian(rows, row)
    jac, batch_jac = gc.vectorized_map(fn, XS)
    assert jac.shape == (3, 2, 2, 2) and batch_jac.shape == (3, 1, 2, 2)
    assert_map_equals_loop(lambda x: fn(x)[0], XS)
    for b, x in enumerate(XS):
        np.testing.assert_allclose(jac.numpy()[b, 0], [[2 * x[0], 0], [x[1], x[0]]])
        np.testing.assert_allclose(jac.numpy()[b, 1], np.diag(np.cos(x)))


def test_a_shared_tape_source_falls_back_to_the_loop_never_to_a_summed_gradient():
    shared = gc.constant(2.0)

    def fn(x):
        with gc.GradientTape() as tape:
            tape.watch(shared)
            y = gc.sum(x) * shared * shared
        return tape.gradient(y, shared)
    with pytest.warns(RuntimeWarning, match="once per example"):
        got = gc.vectorized_map(fn, XS)
    np.testing.assert_allclose(got.numpy(), 2 * 2.0 * XS.sum(axis=1))  # d/ds s^2 sum(x)


# --- gradients_function and its kin --------------------------------------------------------
def test_gradients_function_inside_the_map_gives_per_example_gradients_of_shared_arguments():
    g = gc.gradients_function(lambda x, s: gc.sum(x * x) * s)
    assert_map_equals_loop(lambda x: g(x, 3.0), XS)
    dx, ds = gc.vectorized_map(lambda x: g(x, 3.0), XS)
    np.testing.assert_allclose(dx.numpy(), 6.0 * XS)
    np.testing.assert_allclose(ds.numpy(), (XS * XS).sum(axis=1))  # not summed over rows


def test_value_and_gradients_function_inside_the_map():
    vg = gc.value_and_gradients_function(lambda x, y: gc.sum(x * y) + x[0], params=[0])
    assert_map_equals_loop(lambda x, y: vg(x, y), XS, XS[::-1].copy())


def test_hessians_function_inside_the_map():
    h = gc.hessians_function(lambda x: gc.sum(x ** 3) * x[0])
    assert_map_equals_loop(lambda x: h(x)[0][0], XS)


def test_hessian_vector_product_inside_the_map():
    def fn(x, v):
        return gc.hessian_vector_product(lambda a: gc.sum(a ** 3) * a[1], [x], [v])[0]
    assert_map_equals_loop(fn, XS, XS[::-1].copy())
    assert_map_equals_loop(lambda x: fn(x, np.array([1.0, 0.0])), XS)


def test_implicit_gradients_of_a_variable_made_inside_the_map_are_per_example():
    def fn(x):
        w = gc.Variable(x, name="w")
        value, pairs = gc.implicit_value_and_gradients(lambda: gc.sum(w ** 3) * 2.0)()
        [(grad, variable)] = pairs
        assert variable is w and variable.name == "w"
        [(again, _)] = gc.implicit_gradients(lambda: gc.sum(w * w))()
        return value, grad, again
    value, grad, again = gc.vectorized_map(fn, XS)
    np.testing.assert_allclose(value.numpy(), 2 * (XS ** 3).sum(axis=1))
    np.testing.assert_allclose(grad.numpy(), 6 * XS ** 2)
    np.testing.assert_allclose(again.numpy(), 2 * XS)


def test_a_variable_made_inside_the_map_is_watched_when_read_under_a_tape():
    def fn(x):
        w = gc.Variable(x)
        with gc.GradientTape() as tape:
            y = gc.sum(gc.sin(w))
        assert tape.watched_variables() == (w,)
        return tape.gradient(y, w)
    np.testing.assert_allclose(gc.vectorized_map(fn, XS).numpy(), np.cos(XS))


def test_a_shared_variable_falls_back_to_the_loop_with_per_example_gradients():
    w = gc.Variable(2.0)
    with pytest.warns(RuntimeWarning):
        got = gc.vectorized_map(
            lambda x: gc.implicit_gradients(lambda: gc.sum(x) * w * w)()[0][0], XS)
    np.testing.assert_allclose(got.numpy(), 4.0 * XS.sum(axis=1))


# --- forward mode and custom gradients ----------------------------------------------------
def test_forward_accumulator_inside_the_map_with_batched_and_shared_tangents():
    def fn(x, t):
        with gc.ForwardAccumulator(x, t) as acc:
            y = gc.sin(x) * x[0]
        with gc.ForwardAccumulator(x, [1.0, 0.5]) as shared:
            z = gc.sum(x ** 2)
        return acc.jvp(y), shared.jvp(z)
    assert_map_equals_loop(fn, XS, XS[::-1].copy())


def test_forward_accumulator_of_a_shared_primal_inside_the_map():
    s = gc.constant(1.5)

    def fn(x):
        with gc.ForwardAccumulator(s, 1.0) as acc:
            y = x * s * s
        return acc.jvp(y)
    got = gc.vectorized_map(fn, XS)
    np.testing.assert_allclose(got.numpy(), 3.0 * XS)  # d/ds (x s^2) = 2 s x


def test_jvp_inside_the_map():
    assert_map_equals_loop(
        lambda x, t: gc.jvp(lambda a: (gc.sum(a ** 3), a * 2.0), [x], [t])[1], XS,
        XS[::-1].copy())


def test_custom_gradient_inside_the_map():
    @gc.custom_gradient
    def clipped_square(x, s):
        return x * x * s, lambda dy: (gc.clip(dy * 2.0 * x * s, -5.0, 5.0), gc.sum(dy * x * x))

    def fn(x):
        s = gc.constant(1.5)
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.sum(clipped_square(x, s))
        return y, tape.gradient(y, x)
    assert_map_equals_loop(fn, XS)
    _, grads = gc.vectorized_map(fn, XS)
    np.testing.assert_allclose(grads.numpy(), np.clip(3.0 * XS, -5, 5))


@gc.custom_gradient
def _log1pexp(x):  # TensorFlow's documented example: grad_fn closes over f's exp(x)
    e = gc.exp(x)
    return gc.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))


def _vectorised(fn, elems):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no per-example fallback
        return gc.vectorized_map(fn, elems)


def test_custom_gradient_second_derivatives_inside_the_map():
    x = np.array([-2.0, 0.0, 1.0, 3.0])
    s = 1 / (1 + np.exp(-x))

    def nested_tapes(t):
        with gc.GradientTape() as outer:
            outer.watch(t)
            with gc.GradientTape() as inner:
                inner.watch(t)
                y = _log1pexp(t)
            g = inner.gradient(y, t)
        return g, outer.gradient(g, t)
    g, h = _vectorised(nested_tapes, x)
    np.testing.assert_allclose(g.numpy(), s, rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), s * (1 - s), rtol=1e-13)
    [[blocks]] = _vectorised(gc.hessians_function(_log1pexp), x)
    np.testing.assert_allclose(blocks.numpy(), s * (1 - s), rtol=1e-13)
    [hvp] = _vectorised(lambda t: gc.hessian_vector_product(_log1pexp, [t], [2.0]), x)
    np.testing.assert_allclose(hvp.numpy(), 2 * s * (1 - s), rtol=1e-13)


def test_custom_gradient_keyword_arguments_inside_the_map():
    @gc.custom_gradient
    def scaled(a, scale=2.0):
        return a * scale, lambda dy: dy * scale

    def fn(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = scaled(x, scale=x + 1.0)  # a batched keyword argument
        return y, tape.gradient(y, x)
    x = np.array([1.0, 2.0, -3.0])
    y, g = _vectorised(fn, x)
    np.testing.assert_array_equal(y.numpy(), x * (x + 1))
    np.testing.assert_array_equal(g.numpy(), x + 1)  # grad_fn's: scale, not 2x + 1
    shared_input = _vectorised(lambda t: scaled(gc.constant(1.5), scale=t), x)
    np.testing.assert_array_equal(shared_input.numpy(), 1.5 * x)


def test_custom_gradient_none_for_an_input_inside_the_map():
    @gc.custom_gradient
    def first_only(a, b):
        return a * b, lambda dy: (dy * b, None)

    def grads(a, b, unconnected):
        with gc.GradientTape() as tape:
            tape.watch([a, b])
            y = first_only(a, b)
        return tape.gradient(y, [a, b], unconnected_gradients=unconnected)
    a, b = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    ga, gb = _vectorised(lambda e: grads(*e, "zero"), [a, b])
    np.testing.assert_array_equal(ga.numpy(), b)
    np.testing.assert_array_equal(gb.numpy(), [0.0, 0.0])
    seen = []
    _vectorised(lambda e: seen.append(grads(*e, "none")[1]) or e[0], [a, b])
    assert seen == [None]


def test_custom_gradient_reading_a_shared_variable_inside_the_map():
    w = gc.Variable(3.0)

    @gc.custom_gradient
    def f(x):
        def grad_fn(dy, variables=None):
            return dy * w, [dy * x * 10.0]  # scaled: the custom rule is the one used
        return x * w, grad_fn

    def per_example(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)
    xs = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(_vectorised(per_example, xs).numpy(), [3.0, 3.0, 3.0])
    t = gc.constant(xs)
    with gc.GradientTape() as tape:  # around the map: w gets the examples' sum
        tape.watch(t)
        total = gc.sum(_vectorised(f, t))
    gx, gw = tape.gradient(total, [t, w])
    np.testing.assert_array_equal(gx.numpy(), [3.0, 3.0, 3.0])
    assert gw.numpy() == 10.0 * xs.sum()


def test_custom_gradient_not_returning_a_pair_inside_the_map_says_so():
    f = gc.custom_gradient(lambda a: a * 2.0)
    with pytest.raises(TypeError, match=r"must return a pair \(outputs, grad_fn\).*"
                                        r"returned a tensor of shape \(\)"):
        gc.vectorized_map(f, np.array([1.0, 2.0]))


# --- the modes of the command line on batched declared values ---------------------------
PROGRAM = "u = Variable(0.5); y = w * sum(x ** 2) + f * x[0] * u + sin(w * x[1])"


def _model(row):
    w, f, (x0, x1) = float(row["w"]), float(row["f"]), (float(v) for v in row["x"])
    decls = Declarations.from_options(var=[f"w={w!r}"], frozen=[f"f={f!r}"],
                                      arg=[f"x=[{x0!r}, {x1!r}]"])
    return build(parse_program(PROGRAM), decls)


def _outcome_columns(outcome):
    """[value (None for grad and implicit), gradients...] and the gradients' names."""
    return ([outcome.value] + [g.gradient for g in outcome.gradients],
            [g.name for g in outcome.gradients])


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_runs_on_batched_declared_values_like_row_by_row(mode):
    rows = {"w": np.array([1.0, 2.0, -0.5]), "f": np.array([0.5, 1.0, 3.0]),
            "x": XS, "u": np.array([0.5, -1.0, 2.0])}
    options = ModeOptions(watch=["x"] if mode == "tape" else [])
    model = _model({k: v[0] for k, v in rows.items()})
    model.load()
    names = []

    def fn(elems):
        # what --at does: the declared arguments and variables become batched values
        model._arg_values[:] = [elems["x"]]
        for name in ("w", "f", "u"):
            variable = gc.Variable(elems[name], trainable=name != "f", name=name)
            model._variables[name] = variable
            if name != "u":
                model._base_env[name] = variable
        outcome = run_mode(mode, model, options)
        columns, names[:] = _outcome_columns(outcome)
        return [c for c in columns if c is not None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = gc.vectorized_map(fn, {k: gc.constant(v) for k, v in rows.items()})
    for b in range(3):
        single = _model({k: v[b] for k, v in rows.items()})
        single.variables["u"].assign(rows["u"][b])
        columns, row_names = _outcome_columns(run_mode(mode, single, options))
        assert row_names == names
        want = [c for c in columns if c is not None]
        assert len(want) == len(got)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy()[b], w, rtol=1e-12, atol=1e-12)


# --- the fallback ------------------------------------------------------------------------
def _data_dependent(x):
    return x * 2.0 if float(gc.sum(x)) > 0 else -x


def test_data_dependent_code_runs_as_a_loop_and_says_so_once_per_call():
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = gc.vectorized_map(_data_dependent, XS)
        assert [w.category for w in caught] == [RuntimeWarning]
        np.testing.assert_array_equal(got.numpy(), np.stack(
            [_data_dependent(gc.constant(x)).numpy() for x in XS]))


def test_no_fallback_when_asked_raises_value_error():
    with pytest.raises(ValueError, match="fallback_to_while_loop"):
        gc.vectorized_map(_data_dependent, XS, fallback_to_while_loop=False)


def test_nested_maps_equal_a_double_loop():
    grid = np.arange(24.0).reshape(2, 3, 4) / 10.0

    def inner(row):
        return gc.sum(gc.sin(row) * row[0])
    got = gc.vectorized_map(lambda m: gc.vectorized_map(inner, m), grid)
    want = [[inner(gc.constant(row)).numpy() for row in m] for m in grid]
    np.testing.assert_allclose(got.numpy(), np.array(want), rtol=1e-14)


def test_batched_values_read_as_one_example():
    def fn(x):
        assert isinstance(x, Batched) and x.shape == (2,) and len(x) == 2
        return x
    np.testing.assert_array_equal(gc.vectorized_map(fn, XS).numpy(), XS)


def test_a_gradient_function_of_a_shared_argument_closing_over_a_batched_value_stays_batched():
    # (issue 25: this fell back to the per-example loop; the shared argument is now
    # repeated for each example, as when the function is called on batched values)
    got = _no_fallback(
        lambda x: gc.gradients_function(lambda s: s * s * gc.sum(x))(2.0)[0], XS)
    np.testing.assert_allclose(got.numpy(), 4.0 * XS.sum(axis=1))


# --- translated from TensorFlow's parallel_for and JAX's batching tests (issue 20) --------
def _no_fallback(fn, elems):
    """vectorized_map on the vectorised path: a fallback warning is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return gc.vectorized_map(fn, elems)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, bool])
def test_a_cast_to_an_integer_or_boolean_dtype_is_batched(dtype):
    got = _no_fallback(lambda v: v.astype(dtype), XS)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), np.stack([x.astype(dtype) for x in XS]))


def test_an_integer_cast_inside_the_map_has_no_gradient_but_its_product_has():
    # d/dv sum(trunc(v) * v) = trunc(v), trunc held constant (an integer has no gradient)
    x = gc.constant(XS)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = _no_fallback(lambda v: gc.sum(v.astype(np.int64) * v), x)
    np.testing.assert_array_equal(y.numpy(), [np.sum(np.trunc(r) * r) for r in XS])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.trunc(XS))


@pytest.mark.parametrize("ys", [np.array([10.0, 20.0]), np.array([10.0, 20.0, 30.0])])
def test_an_inner_map_closing_over_the_outer_example_is_a_double_loop(ys):
    # JAX's vmap(lambda x: vmap(lambda y: x * y)(ys))(xs): the outer product, whether the
    # inner batch has another size (it raised a batch-size ShapeError) or the same (it
    # paired x_i with y_i)
    xs = np.array([1.0, 2.0, -3.0])
    got = _no_fallback(lambda x: gc.vectorized_map(lambda y: x * gc.sin(y), ys), xs)
    want = [[x * np.sin(y) for y in ys] for x in xs]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)


def test_gradient_through_an_inner_map_closing_over_the_outer_example():
    xs, ys = np.array([0.3, -1.2, 2.0]), np.array([0.5, 1.5])
    x = gc.constant(xs)
    with gc.GradientTape() as tape:
        tape.watch(x)
        out = _no_fallback(lambda a: gc.vectorized_map(lambda b: gc.sin(a * b), ys), x)
    # d/dx_i sum_j sin(x_i y_j) = sum_j y_j cos(x_i y_j)
    want = [sum(y * np.cos(v * y) for y in ys) for v in xs]
    np.testing.assert_allclose(tape.gradient(out, x).numpy(), want, rtol=1e-14)


def test_data_dependent_code_on_the_outer_example_inside_an_inner_map_falls_back():
    xs, ys = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])

    def outer(x):
        return gc.vectorized_map(lambda y: x * y if float(x) > 1.5 else x - y, ys)
    with pytest.warns(RuntimeWarning, match="once per example"):
        got = gc.vectorized_map(outer, xs)
    want = [[x * y if x > 1.5 else x - y for y in ys] for x in xs]
    np.testing.assert_array_equal(got.numpy(), want)
