"""The entries of more_ops.py at the points where their rules need care: cumprod with
zeros, sort/median through the permutation, std at equal elements, sinc near 0 and near
integers, erf/erfc against the math module, argmax as an index, split's pieces, float32,
TF aliases. (docs/language.md's function list is checked against the table in
test_ops_table.py.)"""
from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import more_cases
from central_differences import numeric_hessian, numpy_gradient
import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.testing import check_grads


def grad(f, *args):
    return [g.numpy() for g in gc.gradients_function(f)(*args)]


def loop_cumprod_grad(x):
    """d sum(cumprod(x)) / dx by a Python loop over the products of the others."""
    n = len(x)
    out = np.zeros(n)
    for i in range(n):
        for j in range(i, n):
            out[i] += math.prod(x[k] for k in range(j + 1) if k != i)
    return out


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 0.0, 5.0], [1.5, -2.0, 3.0, 0.0],
                               [0.0, 0.0, 0.0], [3.0, 1.0, 0.5, 2.0]])
def test_cumprod_gradient_is_exact_with_zeros(x):
    [g] = grad(lambda t: gc.sum(gc.cumprod(t)), np.array(x))
    np.testing.assert_allclose(g, loop_cumprod_grad(x), rtol=1e-15, atol=0)
    assert np.all(np.isfinite(g))


def test_cumprod_with_zeros_along_an_axis_and_second_order():
    x = np.array([[2.0, 0.0, 3.0], [1.0, 4.0, 0.0]])
    [g] = grad(lambda t: gc.sum(gc.cumprod(t, axis=1)), x)
    np.testing.assert_allclose(g, [loop_cumprod_grad(row) for row in x], rtol=1e-15)
    check_grads(lambda t: gc.cumprod(t, axis=1), [x], order=2)
    check_grads(lambda t: gc.cumprod(t), [x], order=2)


def test_sort_gradient_goes_back_through_the_permutation():
    x = np.array([3.0, -1.0, 2.0, 0.5])
    weights = np.array([10.0, 20.0, 30.0, 40.0])  # place k of the sorted array
    [g] = grad(lambda t: gc.sum(gc.sort(t) * weights), x)
    # sorted order: -1 (index 1), 0.5 (3), 2 (2), 3 (0)
    np.testing.assert_array_equal(g, [40.0, 10.0, 30.0, 20.0])


def test_sort_flattened_and_along_axis_zero():
    x = np.array([[3.0, -1.0], [2.0, 5.0]])
    w = np.arange(4.0)
    [g] = grad(lambda t: gc.sum(gc.sort(t, axis=None) * w), x)
    np.testing.assert_array_equal(g, [[2.0, 0.0], [1.0, 3.0]])
    [g] = grad(lambda t: gc.sum(gc.sort(t, axis=0) * np.array([[1.0, 2.0], [3.0, 4.0]])), x)
    np.testing.assert_array_equal(g, [[3.0, 2.0], [1.0, 4.0]])


def test_median_gradient_picks_the_middle_elements():
    [g] = grad(gc.median, np.array([5.0, 1.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
    [g] = grad(gc.median, np.array([4.0, 1.0, 3.0, 9.0]))
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.5, 0.0])
    [g] = grad(lambda t: gc.sum(gc.median(t, axis=0)), np.array([[1.0, 8.0], [2.0, 7.0],
                                                                 [3.0, 6.0]]))
    np.testing.assert_array_equal(g, [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])


def test_std_of_equal_elements_has_the_zero_subgradient():
    [g] = grad(gc.std, np.full(4, 2.5))
    np.testing.assert_array_equal(g, np.zeros(4))


def test_var_and_std_with_ddof_match_the_definition():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    n, mean = len(x), x.mean()
    [g] = grad(lambda t: gc.var(t, ddof=1), x)
    np.testing.assert_allclose(g, 2 * (x - mean) / (n - 1), rtol=1e-15)
    [g] = grad(lambda t: gc.std(t, ddof=1), x)
    np.testing.assert_allclose(g, (x - mean) / ((n - 1) * np.std(x, ddof=1)), rtol=1e-15)


def test_average_with_one_dimensional_weights_along_an_axis():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    w = np.array([1.0, 3.0])
    value = gc.average(x, w, axis=0).numpy()
    np.testing.assert_allclose(value, np.average(x, axis=0, weights=w), rtol=1e-15)
    gx, gw = grad(lambda a, b: gc.sum(gc.average(a, b, axis=0)), x, w)
    np.testing.assert_allclose(gx, [[0.25] * 3, [0.75] * 3], rtol=1e-15)
    # d/dw_k sum_j (sum_i w_i x_ij / W) = sum_j (x_kj - avg_j) / W
    avg = np.average(x, axis=0, weights=w)
    np.testing.assert_allclose(gw, ((x - avg) / w.sum()).sum(axis=1), rtol=1e-14)


def test_sinc_derivative_near_and_at_zero():
    for x in (0.0, 1e-9, 1e-4, 0.05, 0.0999, 0.1, 0.3, 2.5):
        [g] = grad(gc.sinc, x)
        if x == 0.0:
            assert g == 0.0
            continue
        px = math.pi * x
        exact = (px * math.cos(px) - math.sin(px)) / (math.pi * x * x)
        series = -math.pi ** 2 * x / 3 + math.pi ** 4 * x ** 3 / 30
        reference = series if x < 1e-3 else exact  # the closed form cancels near 0
        assert g == pytest.approx(reference, rel=1e-13, abs=0), x
    check_grads(gc.sinc, [np.array([0.0, 0.05, 0.5])], order=2)


def test_sinc_is_exact_at_integers_and_accurate_beside_them():
    """sin(pi x) from x minus its nearest integer: numpy's sin(pi * x) leaves ~1e-16 of
    rounding, so np.sinc(700) is 1e-16 and np.sinc(1 - 1e-10) is off in the 7th digit."""
    import mpmath
    mpmath.mp.dps = 60
    np.testing.assert_array_equal(gc.sinc(np.array([1.0, -3.0, 700.0, 1e200])).numpy(), 0.0)
    for x in (1 - 1e-10, 2 + 3e-12, -5.5, 1e6 + 0.25, 0.3):
        t = mpmath.mpf(x)
        want = mpmath.sin(mpmath.pi * t) / (mpmath.pi * t)
        dwant = (mpmath.cos(mpmath.pi * t) - want) / t
        [g] = grad(gc.sinc, x)
        assert gc.sinc(x).numpy() == pytest.approx(float(want), rel=1e-15, abs=0), x
        assert g == pytest.approx(float(dwant), rel=1e-14, abs=0), x
    [g] = grad(gc.sinc, 1e200)  # cos(pi x) = 1 at an even integer: 1 / x
    assert g == pytest.approx(1e-200, rel=1e-15)


def test_erf_and_erfc_agree_with_the_math_module():
    xs = np.concatenate([np.linspace(-7.0, 7.0, 4001), np.linspace(1.4, 1.6, 201),
                         -np.logspace(-300, 1.4, 300), np.logspace(-300, 1.4, 300),
                         [0.0, -0.0, 26.0, 27.5]])
    erf, erfc = gc.erf(xs).numpy(), gc.erfc(xs).numpy()
    for x, e, c in zip(xs, erf, erfc):
        assert e == pytest.approx(math.erf(x), rel=1e-15, abs=0), x
        assert c == pytest.approx(math.erfc(x), rel=2e-14, abs=0), x
    assert gc.erf(np.inf).numpy() == 1.0 and gc.erfc(-np.inf).numpy() == 2.0
    assert np.isnan(gc.erf(np.nan).numpy())


def test_erf_derivative_is_the_gaussian():
    x = np.array([-2.0, 0.0, 0.7])
    [g] = grad(lambda t: gc.sum(gc.erf(t) - gc.erfc(t)), x)
    np.testing.assert_allclose(g, 4 / math.sqrt(math.pi) * np.exp(-x * x), rtol=1e-15)


def test_argmax_is_not_differentiable_and_indexes():
    assert not REGISTRY["argmax"].differentiable and not REGISTRY["argmin"].differentiable
    x = np.array([0.5, 3.0, -1.0, 3.0])
    i = gc.argmax(x)
    assert i.numpy() == 1 and gc.argmin(x).numpy() == 2
    [g] = grad(lambda t: t[gc.argmax(t)] * 2.0, x)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0, 0.0])
    rowmin = lambda t: gc.take_along_axis(t, gc.expand_dims(gc.argmin(t, axis=1), 1), 1)
    [g] = grad(lambda t: gc.sum(rowmin(t) * 2.0), np.array([[2.0, 1.0], [0.0, 5.0]]))
    np.testing.assert_array_equal(g, [[0.0, 2.0], [2.0, 0.0]])
    with gc.GradientTape() as tape:
        t = gc.constant(x)
        tape.watch(t)
        y = gc.argmax(t) * 1.0
    assert tape.gradient(y, t) is None


def test_take_accumulates_repeated_indices():
    [g] = grad(lambda t: gc.sum(gc.take(t, np.array([0, 2, 0, 0]))), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [3.0, 0.0, 1.0])
    [g] = grad(lambda t: gc.sum(gc.gather(t, np.array([1, 1])) * 2.0),
               np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(g, [[0.0, 0.0], [4.0, 4.0]])


def test_take_refuses_non_integer_indices():
    from gradcli.errors import ShapeError
    with pytest.raises(ShapeError, match="integers"):
        gc.take(np.arange(3.0), np.array([0.5]))


def test_split_returns_a_tuple_of_pieces_and_their_gradients_meet():
    x = np.arange(6.0)
    a, b, c = gc.split(x, 3)
    assert [p.numpy().tolist() for p in (a, b, c)] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    [g] = grad(lambda t: gc.sum(gc.split(t, [1, 4])[1] * 2.0) + gc.split(t, 3)[2][1], x)
    np.testing.assert_array_equal(g, [0.0, 2.0, 2.0, 2.0, 0.0, 1.0])
    pieces = gc.array_split(np.arange(7.0), 3)
    assert [p.shape for p in pieces] == [(3,), (2,), (2,)]
    with pytest.raises(Exception, match="equal division"):
        gc.split(x, 4)


def test_mod_fmod_and_floor_divide_signs():
    x, y = np.array([-7.5, 7.5, -7.5]), np.array([2.0, -2.0, -2.0])
    np.testing.assert_array_equal(gc.mod(x, y).numpy(), [math.fmod(-7.5, 2) + 2, -0.5, -1.5])
    np.testing.assert_array_equal(gc.fmod(x, y).numpy(), [math.fmod(a, b) for a, b in zip(x, y)])
    gx, gy = grad(lambda a, b: gc.sum(gc.fmod(a, b)), x, y)
    np.testing.assert_array_equal(gy, [-math.trunc(a / b) for a, b in zip(x, y)])
    gx, gy = grad(lambda a, b: gc.sum(gc.floor_divide(a, b)), x, y)
    assert not gx.any() and not gy.any()


def test_fmax_gives_the_gradient_to_the_number_beside_a_nan():
    gx, gy = grad(lambda a, b: gc.sum(gc.fmax(a, b)), np.array([np.nan, 1.0, 2.0]),
                  np.array([3.0, np.nan, 2.0]))
    np.testing.assert_array_equal(gx, [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(gy, [1.0, 0.0, 0.5])


def test_nan_to_num_has_a_hard_zero_gradient_where_it_replaced():
    [g] = grad(lambda t: gc.sum(gc.nan_to_num(t) * 0.5), np.array([np.nan, np.inf, 1.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.5])


def test_log_softmax_is_stable_and_its_exp_sums_to_one():
    x = np.array([1000.0, 0.0, -1000.0])
    out = gc.log_softmax(x).numpy()
    np.testing.assert_array_equal(out, [0.0, -1000.0, -2000.0])
    [g] = grad(lambda t: gc.log_softmax(t)[1], x)
    np.testing.assert_allclose(g, [-1.0, 1.0, 0.0], atol=1e-300)


def test_reduce_aliases_are_the_reductions():
    assert gc.reduce_sum is gc.sum and gc.reduce_mean is gc.mean
    assert gc.reduce_max is gc.max and gc.reduce_min is gc.min
    assert gc.reduce_prod is gc.prod and gc.reduce_logsumexp is gc.logsumexp
    assert "reduce_sum" in REGISTRY["sum"].aliases
    assert gc.radians is gc.deg2rad and gc.flatten is gc.ravel and gc.remainder is gc.mod


def test_diff_of_order_two_and_pad_and_tile_values():
    x = np.array([1.0, 4.0, 9.0, 16.0])
    np.testing.assert_array_equal(gc.diff(x, 2).numpy(), np.diff(x, 2))
    [g] = grad(lambda t: gc.sum(gc.diff(t, 2) * np.array([1.0, 10.0])), x)
    np.testing.assert_array_equal(g, [1.0, 8.0, -19.0, 10.0])  # adjoint of [1,-2,1] twice


FUNCTIONS = SimpleNamespace(**gc.FUNCTIONS)


@pytest.mark.parametrize("name", sorted(more_cases.CASES))
def test_new_entries_keep_float32(name):
    """A float32 input gives a float32 value (argmax/argmin: integers) and gradients of
    float32 close to the float64 ones."""
    op = REGISTRY[name]
    lo, hi = op.sample
    rng = np.random.default_rng(7)
    for _, call, shapes in more_cases.CASES[name]:
        names = list(shapes)
        values = [rng.uniform(lo, hi, size=shapes[n]) for n in names]

        def f(*xs, call=call, names=names):
            return gc.sum(call(FUNCTIONS, dict(zip(names, xs))) * 1.0)
        singles = [gc.constant(v, dtype="float32") for v in values]
        out = call(FUNCTIONS, dict(zip(names, singles)))
        if op.differentiable or op.kind == "multi":
            assert out.dtype == np.float32, name
        else:
            assert out.dtype.kind == "i", name
        g64 = gc.gradients_function(f)(*values)
        g32 = gc.gradients_function(f)(*singles)
        for a, b in zip(g32, g64):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-4, atol=2e-5)


def test_gradcli_functions_lists_every_entry_with_derivative_and_domain():
    import json
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "gradcli", "functions", "--json"], env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    listed = {item["name"]: item for item in json.loads(out)["functions"]}
    assert set(listed) == set(ORDER)
    for name in more_cases.CASES:
        assert listed[name]["derivative"] and listed[name]["domain"], name
    assert listed["argmax"]["differentiable"] is False
    assert "reduce_sum" in listed["sum"]["aliases"]


def test_diff_of_an_order_beyond_the_length_is_empty_at_once():
    import time
    x = np.array([1.0, 4.0, 9.0])
    start = time.perf_counter()
    out = gc.diff(x, 10 ** 9)
    assert out.shape == (0,)
    [g] = grad(lambda t: gc.sum(gc.diff(t, 10 ** 9)), x)
    np.testing.assert_array_equal(g, np.zeros(3))
    assert time.perf_counter() - start < 5.0  # 10**9 steps would hang: a bound, no target


@pytest.mark.parametrize("name", ["mod", "fmod"])
def test_remainder_divisor_gradient_is_a_hard_zero_where_the_quotient_is_zero(name):
    """d/dy (x mod y) = -floor(x/y) is exactly 0 for |x| < |y|: an infinite upstream
    gradient must give 0 there, not 0 * inf = nan."""
    a, b = gc.constant(1.0), gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(b)
        out = gc.FUNCTIONS[name](a, b)
    assert tape.gradient(out, b, output_gradients=gc.constant(np.inf)).numpy() == 0.0


def test_take_along_axis_gradient_with_indices_broadcast_along_other_axes():
    # numpy broadcasts the indices against x along the axes other than `axis`
    x = np.arange(6.0).reshape(2, 3)
    idx = np.array([[1]])
    assert np.array_equal(np.take_along_axis(x, idx, axis=0), [[3.0, 4.0, 5.0]])
    value, (grad,) = gc.value_and_gradients_function(
        lambda x: gc.sum(gc.take_along_axis(x, idx, axis=0)))(x)
    assert float(value) == 12.0
    assert np.array_equal(grad.numpy(), [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


def test_var_and_std_with_ddof_at_least_n_are_numpys_inf_with_an_infinite_gradient():
    """numpy divides by max(n - ddof, 0): ddof >= n gives inf, never a ZeroDivisionError;
    the gradient 2 (x - mean) / 0 is -inf and inf."""
    import warnings
    x = np.array([1.0, 2.0])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Degrees of freedom <= 0"
        for ddof in (2, 5):
            assert gc.var(x, ddof=ddof).numpy() == np.var(x, ddof=ddof) == math.inf
            assert grad(lambda t, d=ddof: gc.var(t, ddof=d), x)[0].tolist() == [-math.inf,
                                                                              math.inf]
            assert gc.std(x, ddof=ddof).numpy() == np.std(x, ddof=ddof) == math.inf
            assert np.isnan(grad(lambda t, d=ddof: gc.std(t, ddof=d), x)[0]).all()


def test_var_of_too_few_elements_on_the_command_line_is_a_result_not_an_error():
    import json
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "gradcli", "grad", "var([x, y], ddof=2)",
                          "--arg", "x=1", "--arg", "y=2", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert [g["gradient"] for g in json.loads(run.stdout)["gradients"]] == ["-inf", "inf"]


@pytest.mark.parametrize("shapes, axis", [(((2, 2), (2, 2)), None), (((2, 3), (4,)), None),
                                          (((), (3,)), None), (((2, 3), (1, 3)), 0)])
def test_concatenate_along_axis_none_has_a_gradient_in_every_mode(shapes, axis):
    """numpy's concatenate(axis=None) joins the flattened inputs: the forward worked, the
    backward raised a TypeError (axis None % ndim)."""
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, s) for s in shapes]
    w = rng.uniform(-1, 1, np.concatenate(xs, axis=axis).shape)
    grads = gc.gradients_function(
        lambda a, b: gc.sum(gc.concatenate([a, b], axis=axis) * w))(*xs)
    for k, g in enumerate(grads):
        def f(v, k=k):
            parts = list(xs)
            parts[k] = v
            return np.sum(np.concatenate(parts, axis=axis) * w)
        np.testing.assert_allclose(g.numpy(), numpy_gradient(f, xs[k]), atol=1e-8)
    tangents = [rng.uniform(-1, 1, s) for s in shapes]
    _, jvp = gc.jvp(lambda a, b: gc.concatenate([a, b], axis=axis), xs, tangents)
    np.testing.assert_array_equal(jvp.numpy(), np.concatenate(tangents, axis=axis))
    batch = [np.stack([x, 2 * x]) for x in xs]
    mapped = gc.vectorized_map(lambda ab: gc.concatenate(list(ab), axis=axis), batch)
    np.testing.assert_array_equal(mapped.numpy(), [np.concatenate([b[i] for b in batch],
                                                                  axis=axis) for i in range(2)])


@pytest.mark.parametrize("shape, repeats, axis", [
    ((3,), [1, 0, 2], None), ((2, 2), [2, 1, 0, 3], None), ((2, 3), [1, 0, 2], 1),
    ((2, 3), [3, 1], 0), ((2, 3), [2], 1), ((3,), np.array([0, 0, 0]), None), ((), [3], None)])
def test_repeat_with_a_count_per_element_has_a_gradient_in_every_mode(shape, repeats, axis):
    """np.repeat takes one count per element: the forward worked, the backward raised
    TypeError (a list as a reshape size). The gradient of each element is the sum of g
    over its copies (zero for a count of 0)."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, shape)
    w = rng.uniform(-1, 1, np.repeat(x, repeats, axis=axis).shape)
    [g] = grad(lambda t: gc.sum(gc.repeat(t, repeats, axis) * w), x)
    truth = numpy_gradient(lambda v: np.sum(np.repeat(v, repeats, axis=axis) * w), x)
    np.testing.assert_allclose(g, truth, atol=1e-8)
    t = rng.uniform(-1, 1, shape)
    _, jvp = gc.jvp(lambda v: gc.repeat(v, repeats, axis), [x], [t])
    np.testing.assert_array_equal(jvp.numpy(), np.repeat(t, repeats, axis=axis))
    [[h]] = gc.hessians_function(lambda v: gc.sum(gc.repeat(v, repeats, axis) ** 2 * w))(x)
    hessian = numeric_hessian(lambda v: np.sum(np.repeat(v, repeats, axis=axis) ** 2 * w), x,
                              h=1e-3)
    np.testing.assert_allclose(h.numpy().reshape(x.size, x.size), hessian, atol=1e-8)
    if shape:
        batch = np.stack([x, 2 * x, -x])
        mapped = gc.vectorized_map(lambda v: gc.sum(gc.repeat(v, repeats, axis) * w), batch)
        np.testing.assert_allclose(mapped.numpy(), [np.sum(np.repeat(b, repeats, axis=axis) * w)
                                                    for b in batch], rtol=1e-14)
        per_example = gc.vectorized_map(gc.gradients_function(
            lambda v: gc.sum(gc.repeat(v, repeats, axis) * w)), batch)
        np.testing.assert_allclose(per_example[0].numpy(), np.stack([truth] * 3), atol=1e-8)


# --- numpy.pad's signature: the mode is the third argument (issue 20) ----------------------
@pytest.mark.parametrize("width", [1, (1, 2), ((0, 1), (2, 0))])
def test_pad_takes_numpys_mode_positionally(width):
    x = np.arange(6.0).reshape(2, 3)
    for args, kwargs in (((width, "constant"), {}),
                         ((width, "constant"), {"constant_values": 2.5}),
                         ((width,), {"mode": "constant"})):
        np.testing.assert_array_equal(gc.pad(x, *args, **kwargs).numpy(),
                                      np.pad(x, *args, **kwargs))
    weights = np.random.default_rng(3).uniform(-1, 1, np.pad(x, width).shape)
    [g] = grad(lambda t: gc.sum(gc.pad(t, width, "constant", constant_values=7.0) * weights),
               x)
    np.testing.assert_allclose(g, numpy_gradient(
        lambda t: np.sum(np.pad(t, width, "constant", constant_values=7.0) * weights), x),
        atol=1e-8)


def test_pad_refuses_modes_it_does_not_compute_and_a_fill_given_as_the_mode():
    with pytest.raises(ValueError, match="mode 'edge'"):
        gc.pad(np.ones(3), 1, "edge")
    with pytest.raises(TypeError, match="constant_values="):
        gc.pad(np.ones(3), 1, 5.0)
