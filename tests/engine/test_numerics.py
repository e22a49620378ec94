"""Numerical edge cases of the function table (issue 9, section 4), each against an
independent truth: numpy's own forward, mpmath at 50 digits, finite differences."""
import itertools
import math
import warnings

import mpmath
import numpy as np
import pytest
from central_differences import numpy_gradient

import gradcli as gc
from gradcli.engine import ops
from gradcli.engine.core.table import ORDER, REGISTRY

F = gc.FUNCTIONS


def grads(f, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return [g.numpy() for g in gc.gradients_function(f)(*args)]


# --- clip with lo > hi -------------------------------------------------------------------
@pytest.mark.parametrize("x", [0.0, 1.5, 3.0])
def test_clip_with_crossed_bounds_gives_hi_and_its_gradient(x):
    """numpy's clip is minimum(maximum(x, lo), hi): with lo > hi every element is hi."""
    assert F["clip"](x, 2.0, 1.0).numpy() == np.clip(x, 2.0, 1.0) == 1.0
    assert grads(F["clip"], x, 2.0, 1.0) == [0.0, 0.0, 1.0]


def test_clip_gradient_agrees_with_central_differences_off_the_kinks():
    rng = np.random.default_rng(0)
    for _ in range(200):
        x, lo, hi = rng.uniform(-2, 2, size=3)
        h = 1e-6
        fd = [(np.clip(*(v + h * (i == k) for i, v in enumerate((x, lo, hi))))
               - np.clip(*(v - h * (i == k) for i, v in enumerate((x, lo, hi))))) / (2 * h)
              for k in range(3)]
        np.testing.assert_allclose(grads(F["clip"], x, lo, hi), fd, atol=1e-8)


CLIP_POINTS = np.array([-2.0, -0.3, 0.4, 0.9, 1.7, np.inf, -np.inf, np.nan])


def _clip_fd(lo, hi, x, h=1e-6):
    """Central differences of numpy's clip in x, elementwise (off the kinks)."""
    return (np.clip(x + h, lo, hi) - np.clip(x - h, lo, hi)) / (2 * h)


@pytest.mark.parametrize("lo, hi", [(None, 0.5), (0.5, None), (None, None), (-1.0, None)])
def test_clip_takes_none_for_either_bound_as_numpy(lo, hi):
    x = CLIP_POINTS
    np.testing.assert_array_equal(F["clip"](x, lo, hi).numpy(), np.clip(x, lo, hi))
    np.testing.assert_array_equal(gc.clip(x, lo=lo, hi=hi).numpy(), np.clip(x, lo, hi))
    finite = x[np.isfinite(x)]
    [g] = grads(lambda t: gc.sum(gc.clip(t, lo, hi)), finite)
    np.testing.assert_allclose(g, _clip_fd(lo, hi, finite), atol=1e-8)
    h = 1e-6
    if lo is not None:  # the bound that is given gets its gradient
        [b] = grads(lambda t: gc.sum(gc.clip(finite, t, hi)), lo)
        fd = np.sum(np.clip(finite, lo + h, hi) - np.clip(finite, lo - h, hi)) / (2 * h)
        assert b == pytest.approx(fd, abs=1e-8)
    if hi is not None:
        [b] = grads(lambda t: gc.sum(gc.clip(finite, lo, t)), hi)
        fd = np.sum(np.clip(finite, lo, hi + h) - np.clip(finite, lo, hi - h)) / (2 * h)
        assert b == pytest.approx(fd, abs=1e-8)


def test_clip_with_a_none_bound_in_forward_mode_and_float32():
    x = np.array([-2.0, 0.3, 0.9])
    _, jvp = gc.jvp(lambda t: gc.clip(t, None, 0.5), [x], [np.ones(3)])
    np.testing.assert_allclose(jvp.numpy(), _clip_fd(None, 0.5, x), atol=1e-8)
    assert gc.clip(x.astype(np.float32), None, 0.5).dtype == np.float32


def test_the_language_writes_an_absent_clip_bound_as_inf():
    from gradcli.errors import ParseError
    from gradcli.lang.parser import parse_program
    with pytest.raises(ParseError, match="None is not allowed.*clip.*-inf"):
        parse_program("clip(x, None, 1)")


# --- hard zeros ----------------------------------------------------------------------
def test_square_root_and_log_of_relu_below_zero_have_gradient_zero():
    assert grads(lambda x: F["sqrt"](F["relu"](x)), -1.0) == [0.0]
    assert grads(lambda x: F["log"](F["relu"](x)), -1.0) == [0.0]


def test_power_with_exponent_zero_has_a_hard_zero_gradient_in_x():
    assert grads(lambda x, y: x ** y, 0.0, 0.0) == [0.0, 0.0]
    assert grads(lambda x: x ** 0.0, 0.0) == [0.0]
    assert grads(lambda x: F["arccosh"](x ** 0.0), 1.0) == [0.0]
    g = grads(lambda x, y: F["sum"](F["sqrt"](x ** y)), np.array([0.0, 4.0]), np.zeros(2))
    np.testing.assert_array_equal(g[0], [0.0, 0.0])


def test_hard_zeros_hold_on_large_arrays_and_with_broadcast_sums():
    x = np.tile([-1.0, 0.0, 4.0], 3000)  # above the in-place threshold
    [g] = grads(lambda t: F["sum"](F["sqrt"](F["relu"](t))), x)
    np.testing.assert_array_equal(g, np.tile([0.0, 0.0, 0.25], 3000))


def _robustly_constant(fn, args, i) -> bool:
    """Whether fn does not change when input i moves a little, wherever the other inputs
    are nearby: the input has no influence there (a selection, not a product by 0)."""
    def value(a):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*a), dtype=float)
    for shift in itertools.product((-1e-4, 0.0, 1e-4), repeat=len(args)):
        moved = [a if isinstance(a, (bool, np.bool_)) or k == i else a + s
                 for k, (a, s) in enumerate(zip(args, shift))]
        base = value(moved)
        if not np.all(np.isfinite(base)):
            return False  # outside the domain: nothing to hold
        for h in (1e-3, -1e-3, 1e-7, -1e-7):
            nudged = list(moved)
            nudged[i] = moved[i] + h
            if not np.array_equal(value(nudged), base, equal_nan=True):
                return False
    return True


GRID = tuple(np.float64(v) for v in (-2.0, -1.0, 0.0, 0.5, 1.0, 2.0))
HARD_ZERO_ENTRIES = [n for n in ORDER if REGISTRY[n].elementwise and REGISTRY[n].differentiable]


@pytest.mark.slow
@pytest.mark.parametrize("name", HARD_ZERO_ENTRIES)
def test_input_without_local_influence_gets_a_hard_zero_under_an_infinite_gradient(name):
    """For every elementwise entry: where an input has no influence on the result around
    the point, its gradient is exactly 0 even when the gradient from above is inf (as
    sqrt'(0) sends down), in both the numpy and the engine namespace."""
    op = REGISTRY[name]
    grids = [(True, False) if i == "cond" else GRID for i in op.inputs]
    for args in itertools.product(*grids):
        for i, rule in enumerate(op.vjps):
            if rule is None or not _robustly_constant(op.forward, list(args), i):
                continue
            with np.errstate(all="ignore"):
                ans = op.forward(*args)
                fast = rule(ops.NP, np.inf, ans, *args)
                with gc.GradientTape():
                    slow = rule(ops.ENGINE, gc.constant(np.inf), gc.constant(ans),
                                *[gc.constant(a) for a in args]).numpy()
            assert np.all(np.asarray(fast) == 0) and np.all(slow == 0), (name, args, i)


def test_product_by_zero_keeps_pytorch_semantics():
    """x * 0 is a product, not a selection: 0 * inf is nan there, as in PyTorch."""
    [g] = grads(lambda x: F["sqrt"](x * 0.0), 1.0)
    assert math.isnan(g)


# --- a nan from above stays nan (issue 20): TensorFlow's 0 * nan, but for selections ----
def where_log_abs(v):
    return F["where"](v > 0, F["log"](F["abs"](v)), 0.0 * v)


def test_where_of_log_abs_at_zero_has_the_nan_gradient_tensorflow_gives():
    # where sends 0 to the unchosen log(abs(v)); log's rule makes 0 / 0 = nan; abs's
    # subgradient 0 at 0 times that nan is nan, in TensorFlow, JAX and PyTorch alike
    assert math.isnan(grads(where_log_abs, 0.0)[0])
    assert grads(where_log_abs, 2.0) == [0.5] and grads(where_log_abs, -2.0) == [0.0]


def test_the_double_where_rewrite_keeps_the_gradient_finite():
    def safe(v):
        return F["where"](v > 0, F["log"](F["abs"](F["where"](v > 0, v, 1.0))), 0.0 * v)
    vs = np.array([-1.5, 0.0, 0.7, 3.0])
    [g] = grads(lambda v: F["sum"](safe(v)), vs)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0 / 0.7, 1.0 / 3.0])  # (log v)' = 1/v
    off_zero = vs[vs != 0]
    np.testing.assert_allclose(g[vs != 0], numpy_gradient(
        lambda v: np.sum(np.where(v > 0, np.log(np.abs(np.where(v > 0, v, 1.0))), 0.0)),
        off_zero), atol=1e-8)


# The unchosen side of a selection gets 0 whatever comes from above, as in TensorFlow
# (tf.where, tf.maximum, tf.clip_by_value); a piecewise constant function (sign, floor,
# ...) passes nothing on (TensorFlow's zeros).
SELECTIONS = {"where", "maximum", "minimum", "clip", "fmax", "fmin"}
NAN_ENTRIES = [n for n in HARD_ZERO_ENTRIES
               if n not in SELECTIONS and REGISTRY[n].derivative != "0"]


@pytest.mark.parametrize("name", NAN_ENTRIES)
def test_a_nan_from_above_stays_nan_through_every_other_elementwise_rule(name):
    """0 * nan = nan (IEEE; TensorFlow multiplies by the local derivative): a rule whose
    local derivative is 0 at a point (abs and relu at their kinks, relu's flat side, x**0,
    arctan2 at the origin) keeps a nan from above, in both namespaces; only an infinite
    one becomes 0 there (the test above)."""
    op = REGISTRY[name]
    for args in itertools.product(*[GRID for _ in op.inputs]):
        for i, rule in enumerate(op.vjps):
            if rule is None:
                continue
            with np.errstate(all="ignore"):
                ans = op.forward(*args)
                fast = rule(ops.NP, np.nan, ans, *args)
                with gc.GradientTape():
                    slow = rule(ops.ENGINE, gc.constant(np.nan), gc.constant(ans),
                                *[gc.constant(a) for a in args]).numpy()
            assert np.all(np.isnan(fast)) and np.all(np.isnan(slow)), (name, args, i)


def gradient_from(f, x, upstream):
    x = gc.constant(x)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    with np.errstate(all="ignore"):
        return tape.gradient(y, x, output_gradients=np.full(y.shape, upstream)).numpy()


@pytest.mark.parametrize("f,x,at_finite", [
    (lambda t: F["where"](t > 0, t, 2.0 * t), [1.0, -1.0], [1.0, 2.0]),
    (lambda t: F["maximum"](t, 0.0), [1.0, -1.0], [1.0, 0.0]),
    (lambda t: F["clip"](t, -1.0, 1.0), [0.5, 3.0], [1.0, 0.0]),
])
def test_a_selection_gives_its_unchosen_side_zero_under_a_nan_as_tensorflow(f, x, at_finite):
    np.testing.assert_array_equal(gradient_from(f, x, 1.0), at_finite)
    got = gradient_from(f, x, np.nan)
    np.testing.assert_array_equal(np.isnan(got), np.asarray(at_finite) != 0)


@pytest.mark.parametrize("f,x,at_one", [
    (lambda t: F["max"](t), [1.0, 3.0, 2.0], [0.0, 1.0, 0.0]),
    (lambda t: F["norm"](t), [0.0, 0.0], [0.0, 0.0]),
    (lambda t: F["norm"](t, ord=1), [0.0, 2.0], [0.0, 1.0]),
    (lambda t: F["norm"](t, ord=np.inf), [1.0, -3.0], [0.0, -1.0]),
    (lambda t: F["norm"](t, ord=3), [0.0, 2.0], [0.0, 1.0]),
    (lambda t: F["norm"](t, ord=1, axis=(0, 1)), [[1.0, 0.0], [2.0, 0.5]], [[1, 0], [1, 0]]),
    (lambda t: F["std"](t), [1.5, 1.5, 1.5], [0.0, 0.0, 0.0]),
])
def test_the_zeros_of_reductions_keep_a_nan_from_above_as_tensorflow(f, x, at_one):
    """Elements a reduction's value does not depend on there (the others of a max, a
    zero vector's norm, the zero entries of a 1-norm, a constant std) get 0 from a
    number, even an infinite one, and nan from a nan (TensorFlow: nan everywhere)."""
    np.testing.assert_array_equal(gradient_from(f, x, 1.0), at_one)
    one = np.asarray(at_one, dtype=float)
    np.testing.assert_array_equal(gradient_from(f, x, np.inf),
                                  np.where(one > 0, np.inf, np.where(one < 0, -np.inf, 0.0)))
    assert np.all(np.isnan(gradient_from(f, x, np.nan)))


# --- arctan2 at the origin -----------------------------------------------------------
def test_arctan2_at_the_origin_takes_the_subgradient_zero():
    assert grads(F["arctan2"], 0.0, 0.0) == [0.0, 0.0]
    y = np.array([0.0, 1.0, -1.0])
    gy, gx = grads(lambda a, b: F["sum"](F["arctan2"](a, b)), y, 0.0)
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.0])
    assert gx == -1.0 + 1.0 + 0.0  # the origin adds 0, not nan


def test_arctan2_gradient_of_tiny_arguments_does_not_underflow():
    gy, gx = grads(F["arctan2"], 0.0, 1e-200)
    assert gy == pytest.approx(1e200, rel=1e-15) and gx == 0.0
    gy, gx = grads(F["arctan2"], 3e-170, 4e-170)
    mpmath.mp.dps = 50
    y, x = mpmath.mpf(3e-170), mpmath.mpf(4e-170)
    assert gy == pytest.approx(float(x / (x * x + y * y)), rel=1e-14)
    assert gx == pytest.approx(float(-y / (x * x + y * y)), rel=1e-14)


# --- norms and std at extreme magnitudes --------------------------------------------------
# (gradcli function, numpy function, input shape): each gradient is homogeneous of
# degree 0, the same at x and at c x for every c > 0
SCALE_FREE = {
    "norm": (gc.norm, np.linalg.norm, (3,)),
    "norm-rows": (lambda t: gc.norm(t, axis=1), lambda a: np.linalg.norm(a, axis=1), (2, 3)),
    "norm-keepdims": (lambda t: gc.norm(t, axis=0, keepdims=True),
                      lambda a: np.linalg.norm(a, axis=0, keepdims=True), (2, 3)),
    "norm-ord3": (lambda t: gc.norm(t, ord=3), lambda a: np.linalg.norm(a, 3), (3,)),
    "norm-ord1.5": (lambda t: gc.norm(t, ord=1.5), lambda a: np.linalg.norm(a, 1.5), (3,)),
    "norm-ord0.5": (lambda t: gc.norm(t, ord=0.5), lambda a: np.linalg.norm(a, 0.5), (3,)),
    "norm-ord-2": (lambda t: gc.norm(t, ord=-2), lambda a: np.linalg.norm(a, -2), (3,)),
    "norm-fro": (lambda t: gc.norm(t, ord="fro"), lambda a: np.linalg.norm(a, "fro"), (2, 3)),
    "norm-ord2-axis": (lambda t: gc.norm(t, axis=1, ord=2),
                       lambda a: np.linalg.norm(a, 2, axis=1), (2, 3)),
    "std": (gc.std, np.std, (4,)),
    "std-ddof1-axis": (lambda t: gc.std(t, axis=0, ddof=1),
                       lambda a: np.std(a, axis=0, ddof=1), (3, 2)),
}


@pytest.mark.parametrize("scale", [1e-200, 1e-165, 1e200, 1e160])
@pytest.mark.parametrize("name", SCALE_FREE)
def test_norm_and_std_gradients_survive_underflow_and_overflow_of_their_values(name, scale):
    """[1e-200, 1e-200] has norm 0 and [1e200, 1e200] inf in float64 (numpy's values too),
    but its gradient x / norm(x) is 1/sqrt(2): the rules gave 0 (the zero-vector
    convention fired for a non-zero vector). Truth: numpy's differences at x itself."""
    f, reference, shape = SCALE_FREE[name]
    x = np.random.default_rng(3).uniform(0.2, 1.0, shape) * np.where(
        np.arange(np.prod(shape)).reshape(shape) % 2, 1.0, -1.0)
    w = np.random.default_rng(4).uniform(0.5, 1.5, np.shape(reference(x)))
    truth = numpy_gradient(lambda v: np.sum(reference(v) * w), x)
    with np.errstate(all="ignore"):
        [g] = grads(lambda t: gc.sum(f(t) * w), scale * x)
        np.testing.assert_allclose(g, truth, rtol=1e-7, atol=1e-9)
        # the rule in engine operations (under an outer tape) and in forward mode
        t = gc.constant(scale * x)
        with gc.GradientTape() as outer:
            outer.watch(t)
            with gc.GradientTape() as inner:
                inner.watch(t)
                y = gc.sum(f(t) * w)
            g_nested = inner.gradient(y, t)
        np.testing.assert_allclose(g_nested.numpy(), truth, rtol=1e-7, atol=1e-9)
        direction = np.random.default_rng(5).uniform(-1, 1, shape)
        _, jvp = gc.jvp(lambda v: gc.sum(f(v) * w), [scale * x], [direction])
        assert float(jvp) == pytest.approx(np.sum(truth * direction), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("scale", [1e-200, 1e-170, 1e170, 1e200])
def test_norm_second_derivatives_at_extreme_magnitudes(scale):
    """The Hessian of a norm is homogeneous of degree -1: H(c x) = H(x) / c."""
    x = np.array([0.3, -0.4, 0.5])
    truth = np.array([numpy_gradient(lambda v, i=i: numpy_gradient(
        np.linalg.norm, v, 1e-5)[i], x, 1e-4) for i in range(3)])
    with np.errstate(over="ignore", under="ignore"):  # (the value overflows, as numpy's)
        [[h]] = gc.hessians_function(gc.norm)(scale * x)
    np.testing.assert_allclose(h.numpy() * scale, truth, rtol=1e-5, atol=1e-6)


def test_norm_gradient_of_ordinary_vectors_is_still_the_plain_formula():
    """Ordinary magnitudes keep the fast rule, bit for bit: x / sqrt(sum x^2)."""
    x = np.random.default_rng(6).uniform(-1, 1, 50)
    [g] = grads(gc.norm, x)
    np.testing.assert_array_equal(g, x / np.sqrt(np.sum(x * x)))
    [g] = grads(gc.norm, np.zeros(3))  # the zero vector keeps its subgradient 0
    np.testing.assert_array_equal(g, np.zeros(3))


def test_prod_gradient_when_the_product_underflows_or_overflows():
    """d prod / d x_i is the product of the others: ans / x_i divided an underflowed
    (0) or overflowed (inf) product where the others' product is a number."""
    from fractions import Fraction
    for values in ([1e-200, 1e-200, 1e200], [1e200, 1e200, 1e-200], [1e300, 1e10, 1e-300]):
        with np.errstate(all="ignore"):
            [g] = grads(F["prod"], np.array(values))
        exact = [math.prod(Fraction(v) for j, v in enumerate(values) if j != i)
                 for i in range(len(values))]
        exact = [math.inf if e > Fraction(np.finfo(float).max) else float(e) for e in exact]
        np.testing.assert_allclose(g, exact, rtol=1e-15)


@pytest.mark.parametrize("x, y", [(1e-200, 1e-200), (1e200, 1e200), (3e-200, 1e-160),
                                  (2.5, -4.0)])
def test_divide_gradient_in_the_divisor_does_not_square_it(x, y):
    """d (x / y) / dy = -x / y^2: y * y underflowed or overflowed (1e-200^2 is 0) where
    the derivative is representable."""
    from fractions import Fraction
    gx, gy = grads(F["divide"], x, y)
    assert gy == pytest.approx(float(-Fraction(x) / Fraction(y) ** 2), rel=1e-15)
    assert gx == pytest.approx(float(1 / Fraction(y)), rel=1e-15)


# --- accuracy at extreme arguments ------------------------------------------------------
def test_log_sigmoid_of_minus_thirty_to_full_precision():
    mpmath.mp.dps = 50
    exact = -30 - mpmath.log1p(mpmath.exp(-30))
    assert F["log"](F["sigmoid"](-30.0)).numpy() == float(exact)


def test_log_softplus_gradient_at_minus_thirty_to_full_precision():
    mpmath.mp.dps = 50
    x = mpmath.mpf(-30)
    exact = mpmath.diff(lambda t: mpmath.log(mpmath.log1p(mpmath.exp(t))), x)
    [g] = grads(lambda t: F["log"](F["softplus"](t)), -30.0)
    assert g == pytest.approx(float(exact), rel=4e-16)


POINTS = [s * m for m in (1e-300, 1e-20, 1e-8, 0.5, 1 - 1e-10, 1 + 1e-10, 30.0, 700.0, 1e200)
          for s in (1.0, -1.0)]
# tanh's rule reads only its output (1 - tanh^2, as TensorFlow, PyTorch and JAX): past
# |x| = 19 tanh rounds to 1 and the derivative, below 1e-16, is 0 in absolute terms.
ABSOLUTE_ONLY = {"tanh": 1e-16}


def _mp_unary(op):
    """The entry's value and derivative in mpmath, from its sympy form. (The points are
    off every jump, where DiracDelta and the derivative of floor are 0.)"""
    import sympy as sp
    x = sp.Symbol("x", real=True)
    expr = op.sympy(sp, x)
    deriv = sp.diff(expr, x).replace(sp.DiracDelta, lambda *a: sp.S.Zero)
    deriv = deriv.replace(lambda e: isinstance(e, sp.Derivative), lambda e: sp.S.Zero)
    modules = [{"erfc": _mp_erfc}, "mpmath"]
    return (sp.lambdify(x, expr, modules=modules), sp.lambdify(x, deriv, modules=modules))


def _mp_erfc(t):
    """mpmath.erfc, but beyond |t| = 1e100 the regularised upper incomplete gamma function,
    Gamma(1/2, t^2)/sqrt(pi) (and 2 minus that below 0): the same function, but
    mpmath.erfc's own algorithm raises OverflowError beyond t ~ 1e150, where this form
    still gives the (tiny) value. Not everywhere: at t = 1e-300 (1,000 digits) gammainc
    takes over a minute, mpmath.erfc a millisecond."""
    if abs(t) < 1e100:
        return mpmath.erfc(t)
    upper = mpmath.gammainc(0.5, t * t) / mpmath.sqrt(mpmath.pi)
    return upper if t >= 0 else 2 - upper


def _digits_for(x: float) -> int:
    """mpmath digits for a point: 400 (enough for 1 + 1e-300 to keep its last digits),
    and twice the leading zeros more below 1, since a derivative in closed form may cancel
    to x^3 from terms of size x (sinc's (pi x cos(pi x) - sin(pi x)) / (pi x^2))."""
    return 400 + (2 * int(-math.log10(abs(x))) if 0 < abs(x) < 1 else 0)


def _close(got, want, rtol, atol=0.0):
    if want is None:
        return True
    if math.isinf(want) or abs(want) > 1.7e308:
        return got == math.copysign(math.inf, want)
    if abs(want) < 2.3e-308:  # below the normal range: any result under it will do
        return abs(got) < 2.3e-308 + atol
    return abs(got - want) <= rtol * abs(want) + atol


def _real(v):
    try:
        v = mpmath.mpmathify(v)
    except (TypeError, ValueError):
        return None
    if isinstance(v, mpmath.mpc):
        if v.imag != 0:
            return None
        v = v.real
    return None if mpmath.isnan(v) else float(v)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ORDER if REGISTRY[n].elementwise
                                  and len(REGISTRY[n].inputs) == 1
                                  and REGISTRY[n].differentiable
                                  and REGISTRY[n].kind != "shape"])
def test_unary_entry_is_accurate_at_extreme_arguments(name):
    """Value and derivative to ~full relative precision (against mpmath at 50 digits)
    wherever the true result is a normal float64; points outside the domain (a complex
    or undefined true value) are not checked."""
    op = REGISTRY[name]
    value_fn, deriv_fn = _mp_unary(op)
    for x in POINTS:
        mpmath.mp.dps = _digits_for(x)
        try:
            want_v = _real(value_fn(mpmath.mpf(x)))
            want_d = _real(deriv_fn(mpmath.mpf(x)))
        except (ValueError, ZeroDivisionError, TypeError):
            continue
        if want_v is None:
            continue
        with np.errstate(all="ignore"):
            got_v = float(F[name](x).numpy())
        [got_d] = grads(F[name], x)
        assert _close(got_v, want_v, 4e-15), (name, x, got_v, want_v)
        atol = ABSOLUTE_ONLY.get(name, 0.0)
        assert _close(float(got_d), want_d, 4e-15, atol), (name, x, got_d, want_d)


def test_sigmoid_derivative_for_large_positive_x_is_relatively_accurate():
    mpmath.mp.dps = 50
    for x in (20.0, 30.0, 700.0):
        s = 1 / (1 + mpmath.exp(-x))
        [g] = grads(F["sigmoid"], x)
        assert g == pytest.approx(float(s * (1 - s)), rel=1e-15)
    x = np.full(5000, 30.0)  # the in-place twin on large arrays
    [g] = grads(lambda t: F["sum"](F["sigmoid"](t)), x)
    s = 1 / (1 + mpmath.exp(-30))
    np.testing.assert_allclose(g, float(s * (1 - s)), rtol=1e-15)


# --- prod's gradient with zeros: O(n) ----------------------------------------------------
def _others_by_loop(v):
    return [math.prod(v[:i]) * math.prod(v[i + 1:]) for i in range(len(v))]


@pytest.mark.parametrize("values", [[0.0, 2.0, 3.0], [2.0, 0.0, 3.0, 0.0], [0.0],
                                    [1.5, -2.0, 0.0, 4.0, 0.5]])
def test_prod_gradient_with_zeros_is_the_product_of_the_others(values):
    [g] = grads(F["prod"], np.array(values))
    np.testing.assert_array_equal(g, _others_by_loop(values))


def test_prod_gradient_with_zeros_along_axes():
    x = np.array([[[0.0, 2.0], [3.0, 1.5]], [[1.0, 0.5], [2.0, 0.0]]])
    [g] = grads(lambda t: F["prod"](t, axis=(0, 2)), x)
    for j in range(2):
        block = [x[0, j, 0], x[0, j, 1], x[1, j, 0], x[1, j, 1]]
        others = _others_by_loop(block)
        np.testing.assert_array_equal([g[0, j, 0], g[0, j, 1], g[1, j, 0], g[1, j, 1]], others)


def test_prod_second_derivatives_with_zeros_agree_with_finite_differences():
    from gradcli.testing import check_grads
    check_grads(F["prod"], [np.array([0.0, 2.0, 3.0, 1.5])], order=2)
    check_grads(F["prod"], [np.array([0.0, 2.0, 0.0, 1.5, 0.7])], order=2)
    check_grads(lambda t: F["prod"](t, axis=-1, keepdims=True),
                [np.array([[0.0, 2.0, 3.0], [1.0, 0.5, 2.0]])], order=2)


def test_prod_gradient_of_ten_thousand_elements_with_a_zero_stays_small():
    import tracemalloc
    v = np.random.default_rng(0).uniform(0.5, 1.5, 10_000)
    v[1234] = 0.0
    tracemalloc.start()
    try:
        [g] = grads(F["prod"], v)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000  # an n x n intermediate would be 800 MB
    expected = np.zeros(10_000)
    expected[1234] = math.prod(np.delete(v, 1234).tolist())
    np.testing.assert_allclose(g, expected, rtol=1e-11, atol=0)
    v[77] = 0.0
    [g] = grads(F["prod"], v)
    np.testing.assert_array_equal(g, np.zeros(10_000))


def test_sigmoid_of_a_zero_dimensional_array():
    """(where(...) of scalars is a 0-d array, on which numpy's ufuncs return scalars)"""
    x = np.array(0.0)
    assert F["sigmoid"](F["where"](x > -1.0, x, x)).numpy() == 0.5
    mpmath.mp.dps = 50
    exact = float(1 / (1 + mpmath.exp(30)))
    assert F["sigmoid"](np.array(-30.0)).numpy() == pytest.approx(exact, rel=2e-16)
