"""Closures and shared values stay batched inside ``vectorized_map`` (issue 25, part 2):
per-example gradients of a function closing over a batched value, forward mode over a
batch of tangents at one shared point (Jacobians, Hessian-vector products over a basis),
without the per-example fallback; and the fallback's warning names what forced it.
Truths: a plain Python loop over the examples, central differences, numpy's Hessian of a
function written out by hand."""
import warnings

import numpy as np
import pytest

import gradcli as gc

RNG = np.random.default_rng(25)
N = 5
A = RNG.standard_normal((N, N))
X0 = RNG.standard_normal(N)
XS = RNG.standard_normal((4, N))
H_STEP = 1e-6


def _no_fallback(fn, elems):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the per-example loop warns
        return gc.vectorized_map(fn, elems)


def _central(f, x, v):
    return (f(x + H_STEP * v) - f(x - H_STEP * v)) / (2 * H_STEP)


def test_per_example_gradients_of_a_closure_over_the_batched_value():
    w0 = RNG.standard_normal(N)
    a = gc.constant(A)

    def loss(w, x):
        return gc.sum(gc.tanh(w * x) ** 2) + gc.sum((w @ a) * x)

    got = _no_fallback(lambda x: gc.gradients_function(lambda w: loss(w, x))(w0)[0], XS)
    loop = [gc.gradients_function(lambda w, x=x: loss(w, gc.constant(x)))(w0)[0].numpy()
            for x in XS]
    np.testing.assert_allclose(got.numpy(), np.stack(loop), rtol=1e-13, atol=1e-14)


def test_forward_mode_over_a_basis_of_tangents_at_a_shared_point_is_the_jacobian():
    x = gc.constant(X0)
    a = gc.constant(A)

    def jvp(v):
        with gc.ForwardAccumulator(x, v) as acc:
            y = gc.tanh(a @ x) * gc.sum(x)
        return acc.jvp(y)

    got = _no_fallback(jvp, np.eye(N)).numpy()  # row k: the derivative along e_k

    def f(z):
        return np.tanh(A @ z) * np.sum(z)
    want = np.stack([_central(f, X0, e) for e in np.eye(N)])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_hessian_vector_products_over_a_basis_at_a_shared_point_are_the_hessian():
    """Rosenbrock plus log-sum-exp (the issue's Hessian), x shared by every example:
    no tiling of x by hand."""
    def f(x):
        return (gc.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
                + gc.log(gc.sum(gc.exp(x))))

    got = _no_fallback(lambda v: gc.hessian_vector_product(f, [X0], [v])[0], np.eye(N))
    # the Hessian by hand: Rosenbrock's tridiagonal one plus diag(p) - p p^T
    x = X0
    H = np.zeros((N, N))
    for i in range(N - 1):
        H[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        H[i + 1, i + 1] += 200.0
        H[i, i + 1] += -400.0 * x[i]
        H[i + 1, i] += -400.0 * x[i]
    p = np.exp(x) / np.sum(np.exp(x))
    H += np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(got.numpy(), H, rtol=1e-12, atol=1e-12)


def test_a_shared_primal_with_batched_tangents_meeting_batched_values():
    x = gc.constant(X0)
    a = gc.constant(A)
    vs = RNG.standard_normal((4, N))

    def jvp(pair):
        v, xb = pair
        with gc.ForwardAccumulator(x, v) as acc:
            y = gc.sum(gc.sin(x) * xb) + gc.sum((x @ a) * xb) + gc.sum(xb) * gc.sum(x)
        return acc.jvp(y)

    got = _no_fallback(jvp, [vs, XS]).numpy()

    def f(z, xb):
        return np.sum(np.sin(z) * xb) + np.sum((z @ A) * xb) + np.sum(xb) * np.sum(z)
    want = [_central(lambda z, xb=xb: f(z, xb), X0, v) for v, xb in zip(vs, XS)]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, names", [
    (lambda x: x * float(gc.sum(x)), "float()"),
    (lambda x: x if gc.sum(x) > 0 else -x, "truth test"),
])
def test_the_fallback_warning_names_the_reading_that_forced_it(fn, names):
    with pytest.warns(RuntimeWarning, match="once per example") as caught:
        gc.vectorized_map(fn, XS)
    assert names in str(caught[0].message)


def test_the_fallback_warning_names_the_gradient_of_a_shared_tape_source():
    shared = gc.constant(2.0)

    def fn(x):
        with gc.GradientTape() as tape:
            tape.watch(shared)
            y = gc.sum(x) * shared * shared
        return tape.gradient(y, shared)

    with pytest.warns(RuntimeWarning, match="tape.gradient of a batched target"):
        got = gc.vectorized_map(fn, XS)
    np.testing.assert_allclose(got.numpy(), 4.0 * XS.sum(axis=1))


def test_batched_output_gradients_of_a_shared_target_are_vector_jacobian_products():
    """vectorized_map of tape.gradient(y, x, output_gradients=v) over a basis of v: the
    rows of the Jacobian's transpose products, one backward pass for all of them."""
    x0 = RNG.standard_normal(N)
    x = gc.constant(x0)
    a = gc.constant(A)

    def vjp(v):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.tanh(a @ x) * gc.sum(x)
        return tape.gradient(y, x, output_gradients=v)

    vs = RNG.standard_normal((3, N))
    got = _no_fallback(vjp, vs).numpy()

    def f(z):
        return np.tanh(A @ z) * np.sum(z)
    J = np.stack([_central(f, x0, e) for e in np.eye(N)], axis=1)  # J[i, k] = dy_i/dx_k
    np.testing.assert_allclose(got, vs @ J, rtol=1e-6, atol=1e-8)
