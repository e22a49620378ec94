"""Linear algebra entries: rules on ill-conditioned and batched inputs against independent
truths (mpmath at 50 digits, Python loops over the batch, numpy's own forward), the
conventions at singular and degenerate points, several outputs, ``norm(ord=)``, the
``gc.linalg`` namespace and the command line.

Tolerances for ill-conditioned inputs: a float64 gradient of a function of A is accurate
to about cond(A) * eps relatively (the forward itself is no better), so the gradient's
normwise relative error against the 50-digit truth must be below 100 * cond(A) * eps
(about 1e-8 for the Hilbert matrix of order 5, cond 4.8e5).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from central_differences import numpy_gradient

import gradcli as gc
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.lang import Declarations, build, parse_program

EPS = np.finfo(np.float64).eps
mp = mpmath.mp


def grad(f, *args):
    return [g.numpy() for g in gc.gradients_function(f)(*args)]


def hilbert(n):
    return 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)


def _mp_matrix(a):
    return mp.matrix([[mp.mpf(float(v)) for v in row] for row in a])


def mp_gradient(f_mp, a, weights, h=mpmath.mpf("1e-20")):
    """d/da sum(weights * f_mp(a)) by central differences in 50-digit arithmetic (the
    step's error, h^2, is far below float64's)."""
    with mp.workdps(50):
        out = np.zeros(a.shape)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                def loss(t):
                    m = _mp_matrix(a)
                    m[i, j] += t
                    value = f_mp(m)
                    if isinstance(value, mp.matrix):
                        return mp.fsum(value[r, c] * weights[r, c] for r in range(value.rows)
                                       for c in range(value.cols))
                    return value * weights
                out[i, j] = float((loss(h) - loss(-h)) / (2 * h))
    return out


def assert_close_to_truth(got, want, cond):
    error = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert error < 100 * cond * EPS, (error, 100 * cond * EPS)


# ---------------------------------------------------------------------------------------
# Ill-conditioned inputs against 50-digit truths
# ---------------------------------------------------------------------------------------
H5 = hilbert(5)
COND_H5 = np.linalg.cond(H5)
W5 = np.random.default_rng(0).standard_normal((5, 5))


def test_inverse_gradient_on_hilbert_matrix():
    [g] = grad(lambda a: gc.sum(gc.inv(a) * W5), H5)
    assert_close_to_truth(g, mp_gradient(lambda m: m ** -1, H5, W5), COND_H5)


def test_solve_gradients_on_hilbert_matrix():
    b = np.linspace(-1.0, 1.0, 5)
    w = np.arange(1.0, 6.0)
    ga, gb = grad(lambda a, b: gc.sum(gc.solve(a, b) * w), H5, b)
    truth_a = mp_gradient(lambda m: mp.lu_solve(m, mp.matrix(b.tolist())),
                          H5, w.reshape(5, 1))
    assert_close_to_truth(ga, truth_a, COND_H5)
    # d/db w . inv(a) b = inv(a)^T w, in 50 digits
    with mp.workdps(50):
        truth_b = np.array((_mp_matrix(H5).T ** -1 * mp.matrix(w.tolist())).tolist(),
                           dtype=float).ravel()
    assert_close_to_truth(gb, truth_b, COND_H5)


def test_det_and_slogdet_gradients_on_hilbert_matrix():
    [g] = grad(gc.det, H5)
    truth = mp_gradient(mp.det, H5, mp.mpf(1))
    assert_close_to_truth(g, truth, COND_H5)
    [g] = grad(lambda a: gc.slogdet(a)[1], H5)
    truth = mp_gradient(lambda m: mp.log(abs(mp.det(m))), H5, mp.mpf(1))
    assert_close_to_truth(g, truth, COND_H5)


def test_cholesky_gradient_on_hilbert_matrix():
    weights = np.tril(W5)
    [g] = grad(lambda a: gc.sum(gc.cholesky(a) * weights), H5)
    truth = mp_gradient(lambda m: mp.cholesky((m + m.T) / 2), H5, weights)
    assert_close_to_truth(g, truth, COND_H5)


def test_eigh_gradients_with_nearly_repeated_eigenvalues():
    # eigenvalues 1, 1 + 1e-6, 3: eigenvector gradients grow like 1/gap and stay right
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((3, 3)))
    values = np.array([1.0, 1.0 + 1e-6, 3.0])
    a = (q * values) @ q.T
    weights = np.array([0.3, -0.7, 1.1])
    [gw] = grad(lambda x: gc.sum(gc.eigh(x)[0] * weights), a)
    truth_w = mp_gradient(lambda m: mp.matrix(sorted(mp.eigsy((m + m.T) / 2)[0])),
                          a, weights.reshape(3, 1))
    np.testing.assert_allclose(gw, truth_w, atol=1e-9)
    # the eigenvector of the isolated eigenvalue 3 (sign fixed by its largest entry)
    [gv] = grad(lambda x: gc.sum(gc.eigh(x)[1][:, 2] ** 2 * weights), a)

    def top_vector_squared(m):
        e, vectors = mp.eigsy((m + m.T) / 2)
        k = max(range(3), key=lambda i: e[i])
        return mp.matrix([vectors[r, k] ** 2 for r in range(3)])
    truth_v = mp_gradient(top_vector_squared, a, weights.reshape(3, 1))
    np.testing.assert_allclose(gv, truth_v, atol=1e-8)


def test_singular_values_gradient_of_an_ill_conditioned_matrix():
    [g] = grad(lambda a: gc.sum(gc.svd(a, compute_uv=False) * np.arange(1.0, 6.0)), H5)

    def singular_values(m):
        return mp.matrix(sorted(mp.svd_r(m, compute_uv=False), reverse=True))
    truth = mp_gradient(singular_values, H5, np.arange(1.0, 6.0).reshape(5, 1))
    assert_close_to_truth(g, truth, COND_H5)


def test_pinv_gradient_of_an_ill_conditioned_tall_matrix():
    a = hilbert(6)[:, :4]
    cond = np.linalg.cond(a)
    weights = np.random.default_rng(2).standard_normal((4, 6))
    [g] = grad(lambda x: gc.sum(gc.pinv(x) * weights), a)
    truth = mp_gradient(lambda m: (m.T * m) ** -1 * m.T, a, weights)
    assert_close_to_truth(g, truth, cond)


# ---------------------------------------------------------------------------------------
# Batched inputs: the same as a Python loop over the batch
# ---------------------------------------------------------------------------------------
RNG = np.random.default_rng(5)
SPD = np.stack([x @ x.T + 3 * np.eye(3) for x in RNG.uniform(-1, 1, (4, 3, 3))])
RECT = RNG.uniform(-1, 1, (4, 3, 2))
BATCHED = [
    ("inv", lambda a: gc.inv(a), SPD),
    ("det", lambda a: gc.det(a), SPD),
    ("slogdet", lambda a: gc.slogdet(a)[1], SPD),
    ("cholesky", lambda a: gc.cholesky(a), SPD),
    ("eigh-values", lambda a: gc.eigh(a)[0], SPD),
    ("eigh-vectors", lambda a: gc.eigh(a)[1] ** 2, SPD),
    ("svd-values", lambda a: gc.svd(a, compute_uv=False), RECT),
    ("svd-u", lambda a: gc.svd(a, full_matrices=False)[0] ** 2, RECT),
    ("svd-vh", lambda a: gc.svd(a, full_matrices=False)[2] ** 2, RECT),
    ("pinv", lambda a: gc.pinv(a), RECT),
    ("triu", lambda a: gc.triu(a, 1), RECT),
    ("trace-last-axes", lambda a: gc.linalg.trace(a), SPD),
    ("diagonal-last-axes", lambda a: gc.linalg.diagonal(a, 1), SPD),
    ("norm-2", lambda a: gc.linalg.norm(a, 2, axis=(-2, -1)), RECT),
    ("norm-nuc", lambda a: gc.linalg.norm(a, "nuc", axis=(-2, -1)), RECT),
    ("norm-inf", lambda a: gc.linalg.norm(a, np.inf, axis=(-1, -2)), RECT),
    ("solve-matrix", lambda a: gc.solve(a, np.ones((3, 2))), SPD),
]


@pytest.mark.parametrize("name,f,batch", BATCHED, ids=[b[0] for b in BATCHED])
def test_batched_values_and_gradients_equal_a_loop_over_the_batch(name, f, batch):
    weights = RNG.standard_normal(np.shape(f(batch[0]).numpy()))
    loss = lambda a: gc.sum(f(a) * weights)  # noqa: E731
    values = f(batch).numpy()
    [grads] = grad(loss, batch)
    for i, matrix in enumerate(batch):
        np.testing.assert_allclose(values[i], f(matrix).numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(grads[i], grad(loss, matrix)[0], rtol=1e-10, atol=1e-13)


def test_batched_second_derivatives_equal_a_loop():
    def hessian_vector(a, direction):
        with gc.GradientTape() as outer:
            t = gc.constant(a)
            outer.watch(t)
            with gc.GradientTape() as inner:
                inner.watch(t)
                y = gc.sum(gc.slogdet(t)[1]) + gc.sum(gc.inv(t) ** 2)
            g = inner.gradient(y, t)
            z = gc.sum(g * direction)
        return outer.gradient(z, t).numpy()
    direction = RNG.standard_normal(SPD.shape)
    batched = hessian_vector(SPD, direction)
    for i in range(len(SPD)):
        np.testing.assert_allclose(batched[i], hessian_vector(SPD[i], direction[i]),
                                   rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Singular and degenerate points
# ---------------------------------------------------------------------------------------
def test_det_gradient_of_a_singular_matrix_is_the_adjugate():
    [g] = grad(gc.det, np.array([[1.0, 2.0], [2.0, 4.0]]))
    np.testing.assert_allclose(g, [[4.0, -2.0], [-2.0, 1.0]], atol=1e-14)  # cofactors
    [g] = grad(gc.det, np.zeros((3, 3)))
    assert np.all(g == 0.0)


def numpy_cofactors(a, h=1e-6):
    """d det / d a by central differences of numpy's det (det is a polynomial: the
    differences are exact up to rounding)."""
    out = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = h
        out[i] = (np.linalg.det(a + e) - np.linalg.det(a - e)) / (2 * h)
    return out


def mp_cofactors(m):
    """The cofactor matrix of an mpmath matrix by its minors (exact at singular ones)."""
    n = m.rows
    out = mp.matrix(n, n)
    for i in range(n):
        for j in range(n):
            minor = mp.matrix([[m[r, c] for c in range(n) if c != j]
                               for r in range(n) if r != i])
            out[i, j] = (-1) ** (i + j) * mp.det(minor)
    return out


def det_second_derivative(a, w):
    """d <cofactors(a), w> / d a in 50-digit arithmetic."""
    return mp_gradient(mp_cofactors, a, w)


def gradient_and_second(f, a, w):
    """(d f / d a, d <d f / d a, w> / d a) with nested tapes (the inner rule in engine ops)."""
    x = gc.constant(a)
    with gc.GradientTape() as outer:
        outer.watch(x)
        with gc.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        s = gc.sum(g * w)
    return g.numpy(), outer.gradient(s, x).numpy()


SINGULAR = {"rank-2": np.outer([1.0, 2, 3], [1.0, -1, 2]) + np.outer([0.0, 1, 1], [1.0, 0, 1]),
            "rank-1": np.outer([1.0, 2, 3], [1.0, -1, 2]), "zero": np.zeros((3, 3))}


@pytest.mark.parametrize("label", SINGULAR)
def test_det_at_a_singular_matrix_has_first_and_second_derivatives_in_every_mode(label):
    """The adjugate was right on the numpy path only: under an outer tape (and in forward
    mode, which transposes the rule there) inv(a) was called and refused the matrix."""
    a = SINGULAR[label]
    w = RNG.uniform(-1, 1, (3, 3))
    truth = numpy_cofactors(a)
    [g] = grad(gc.det, a)
    np.testing.assert_allclose(g, truth, atol=1e-9)
    g_nested, second = gradient_and_second(gc.det, a, w)
    np.testing.assert_allclose(g_nested, truth, atol=1e-9)
    np.testing.assert_allclose(second, det_second_derivative(a, w), atol=1e-12)
    _, jvp = gc.jvp(gc.det, [a], [w])
    assert jvp.numpy() == pytest.approx(np.sum(truth * w), abs=1e-9)


@pytest.mark.parametrize("scale", [1e120, 1e-120, 1e100, 1e-110, 1e150])
def test_det_gradient_beyond_the_range_of_det_is_the_representable_cofactor_matrix(scale):
    """det(c a) overflows (or underflows) where its cofactors c^(n-1) cof(a) do not: the
    rule det(a) inv(a)^T gave inf and nan (0 elsewhere: the true cofactors of c I)."""
    a = RNG.uniform(-1, 1, (3, 3)) + np.eye(3)
    truth = scale ** 2 * numpy_cofactors(a)  # cofactors are homogeneous of degree n - 1
    with np.errstate(all="ignore"):
        [g] = grad(gc.det, scale * a)
        np.testing.assert_allclose(g, truth, rtol=1e-8)
        [g] = grad(gc.det, scale * np.eye(3))
        np.testing.assert_allclose(g, scale ** 2 * np.eye(3), rtol=1e-12, atol=0)
        w = RNG.uniform(-1, 1, (3, 3))
        g_nested, second = gradient_and_second(gc.det, scale * a, w)
        np.testing.assert_allclose(g_nested, truth, rtol=1e-8)
        # second derivatives are homogeneous of degree n - 2
        np.testing.assert_allclose(second, scale * det_second_derivative(a, w), rtol=1e-9)
        batched = grad(lambda x: gc.sum(gc.det(x)), np.stack([scale * a, a]))[0]
        np.testing.assert_allclose(batched[0], truth, rtol=1e-8)
        np.testing.assert_allclose(batched[1], numpy_cofactors(a), rtol=1e-8)


def test_det_gradient_of_a_matrix_holding_nan_is_nan_not_numpys_error():
    with np.errstate(all="ignore"):
        [g] = grad(gc.det, np.array([[np.nan, 1.0], [1.0, 1.0]]))
        assert np.all(np.isnan(g))
        [g] = grad(lambda x: gc.sum(gc.det(x)), np.stack([[[np.nan, 1.0], [1.0, 1.0]],
                                                           [[2.0, 1.0], [1.0, 3.0]]]))
    assert np.all(np.isnan(g[0]))
    np.testing.assert_allclose(g[1], [[3.0, -1.0], [-1.0, 2.0]], rtol=1e-14)  # cofactors


@pytest.mark.parametrize("a", [np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((2, 2)),
                               SINGULAR["rank-2"]])
def test_slogdet_gradient_at_a_singular_matrix_is_gradclis_error_in_every_mode(a):
    """numpy's LinAlgError escaped from the backward pass; d log|det| has no limit at a
    singular matrix (+-inf on either side), so it is refused as inv refuses it."""
    from gradcli.errors import ShapeError
    with pytest.raises(ShapeError, match="slogdet: the gradient of logabsdet is not defined "
                                         "at a singular matrix"):
        grad(lambda x: gc.slogdet(x)[1], a)
    with pytest.raises(ShapeError, match="slogdet"):
        gradient_and_second(lambda x: gc.slogdet(x)[1], a, np.ones_like(a))
    with pytest.raises(ShapeError, match="slogdet"):
        gc.jvp(lambda x: gc.slogdet(x)[1], [a], [np.ones_like(a)])
    [g] = grad(lambda x: gc.slogdet(x)[0], a)  # the sign alone: gradient 0
    assert np.all(g == 0.0)


def test_slogdet_gradient_of_a_batch_reads_only_what_each_matrix_needs():
    good = np.array([[2.0, 1.0], [1.0, 3.0]])
    batch = np.stack([good, [[1.0, 2.0], [2.0, 4.0]]])
    [g] = grad(lambda x: gc.slogdet(x)[1][0] + gc.sum(gc.slogdet(x)[0]), batch)
    np.testing.assert_allclose(g[0], np.linalg.inv(good).T, rtol=1e-14)
    assert np.all(g[1] == 0.0)


def test_no_linalg_gradient_lets_numpys_linalg_error_escape(monkeypatch):
    """Every rule of the linear algebra entries turns a LAPACK refusal into the entry's
    ShapeError (here: an SVD made to fail inside svd's and norm's rules)."""
    from gradcli.errors import ShapeError

    def refuse(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")
    a = RNG.uniform(-1, 1, (3, 3))
    for name, f in (("svd", lambda x: gc.sum(gc.svd(x, compute_uv=False))),
                    ("norm", lambda x: gc.norm(x, ord=2)), ("det", gc.det)):
        x = gc.constant(a if name != "det" else np.zeros((3, 3)))
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        monkeypatch.setattr(np.linalg, "svd", refuse)
        with pytest.raises(ShapeError, match=f"{name}: SVD did not converge in its gradient"):
            tape.gradient(y, x)
        monkeypatch.undo()


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
@pytest.mark.parametrize("scale", [1e-170, 1e-200, 1e160])
def test_singular_vector_gradients_of_tiny_and_huge_matrices(shape, scale):
    """U and Vh are the same at a and c a, so the gradient of a function of them at c a is
    its gradient at a over c. The rule's 1 / (s_j^2 - s_i^2) underflowed (a false
    "values repeat" error at 1e-170) or overflowed (nan at 1e160)."""
    a = RNG.uniform(-1, 1, shape)
    wu, wv = RNG.uniform(-1, 1, (shape[0], min(shape))), RNG.uniform(-1, 1, (min(shape), shape[1]))

    def loss_numpy(x):  # squares: the signs of the singular vectors do not matter
        u, _, vh = np.linalg.svd(x, full_matrices=False)
        return np.sum(wu * u * u) + np.sum(wv * vh * vh)

    def loss(x):
        u, _, vh = gc.svd(x, full_matrices=False)
        return gc.sum(wu * u * u) + gc.sum(wv * vh * vh)
    truth = np.zeros(shape)
    h = 1e-6
    for i in np.ndindex(shape):
        e = np.zeros(shape)
        e[i] = h
        truth[i] = (loss_numpy(a + e) - loss_numpy(a - e)) / (2 * h)
    with np.errstate(all="ignore"):
        [g] = grad(loss, scale * a)
        np.testing.assert_allclose(g * scale, truth, rtol=1e-6, atol=1e-8)
        g_nested, _ = gradient_and_second(loss, scale * a, np.ones(shape))
        np.testing.assert_allclose(g_nested * scale, truth, rtol=1e-6, atol=1e-8)


def test_eigenvalue_gradients_exist_at_repeated_eigenvalues():
    [g] = grad(lambda a: gc.sum(gc.eigh(a)[0] ** 2), np.eye(3))
    np.testing.assert_allclose(g, 2 * np.eye(3), atol=1e-14)  # d tr(a^2) = 2a


def test_eigenvector_gradient_at_repeated_eigenvalues_is_a_clear_error():
    with pytest.raises(ValueError, match="eigh: the gradient through the vectors is not "
                                         "defined where values repeat"):
        grad(lambda a: gc.sum(gc.eigh(a)[1]), np.eye(3))


def test_singular_vector_gradient_at_repeated_singular_values_is_a_clear_error():
    with pytest.raises(ValueError, match="svd: the gradient through the vectors"):
        grad(lambda a: gc.sum(gc.svd(a)[0]), np.eye(2))
    [g] = grad(lambda a: gc.sum(gc.svd(a, compute_uv=False)), np.eye(2))
    np.testing.assert_allclose(g, np.eye(2), atol=1e-14)  # d nuc(a) = U Vh


def test_full_svd_ignores_the_extra_columns_as_pytorch():
    a = RNG.uniform(-1, 1, (4, 2))
    u_full = gc.svd(a)[0]
    assert u_full.shape == (4, 4)
    [g] = grad(lambda x: gc.sum(gc.svd(x)[0][:, 2:]), a)
    assert np.all(g == 0.0)
    [g_full] = grad(lambda x: gc.sum(gc.svd(x)[0][:, :2] ** 2), a)
    [g_reduced] = grad(lambda x: gc.sum(gc.svd(x, full_matrices=False)[0] ** 2), a)
    np.testing.assert_allclose(g_full, g_reduced, rtol=1e-12)


def test_slogdet_sign_has_a_zero_gradient():
    a = np.array([[0.0, 1.0], [2.0, 0.5]])
    sign, logdet = gc.slogdet(a)
    assert sign.numpy() == -1.0 and logdet.numpy() == pytest.approx(np.log(2.0))
    [g] = grad(lambda x: gc.slogdet(x)[0], a)
    assert np.all(g == 0.0)


def test_cholesky_and_eigh_read_the_symmetric_part():
    a = np.array([[4.0, 3.0], [1.0, 5.0]])  # symmetric part [[4, 2], [2, 5]]
    np.testing.assert_allclose(gc.cholesky(a).numpy(),
                               np.linalg.cholesky([[4.0, 2.0], [2.0, 5.0]]))
    [g] = grad(lambda x: gc.sum(gc.cholesky(x)), a)
    np.testing.assert_allclose(g, g.T)


def test_not_positive_definite_is_a_clear_error():
    from gradcli.errors import ShapeError
    with pytest.raises(ShapeError, match="cholesky: Matrix is not positive definite"):
        gc.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ShapeError, match="inv needs square matrices"):
        gc.inv(np.ones((2, 3)))


# ---------------------------------------------------------------------------------------
# Several outputs, norm(ord=), gc.linalg
# ---------------------------------------------------------------------------------------
def test_several_outputs_are_tuples_like_numpy():
    a = SPD[0]
    w, v = gc.eigh(a)
    nw, nv = np.linalg.eigh(a)
    np.testing.assert_allclose(w.numpy(), nw, rtol=1e-12)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(nv), rtol=1e-10)
    u, s, vh = gc.svd(RECT[0], full_matrices=False)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ vh.numpy(), RECT[0], atol=1e-14)
    assert [t.shape for t in gc.svd(RECT[0])] == [(3, 3), (2,), (2, 2)]
    sign, logdet = gc.slogdet(SPD)
    assert sign.shape == logdet.shape == (4,)


VECTOR_ORDS = [None, 1, 2, 3, 0.5, 0, np.inf, -np.inf, -1]
MATRIX_ORDS = [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.parametrize("ord_", VECTOR_ORDS)
@pytest.mark.filterwarnings("ignore:divide by zero")
def test_vector_norms_equal_numpy(ord_):
    x = np.array([[0.5, -2.0, 0.0], [1.5, 0.25, -3.0]])
    for axis in (0, 1, -1):
        np.testing.assert_allclose(gc.linalg.norm(x, ord_, axis=axis).numpy(),
                                   np.linalg.norm(x, ord_, axis=axis), rtol=1e-14)


@pytest.mark.parametrize("ord_", MATRIX_ORDS)
def test_matrix_norms_equal_numpy(ord_):
    x = RNG.uniform(-1, 1, (2, 3, 4))
    for axis in ((1, 2), (2, 0), (-1, -2)):
        np.testing.assert_allclose(gc.linalg.norm(x, ord_, axis=axis).numpy(),
                                   np.linalg.norm(x, ord_, axis=axis), rtol=1e-13)
        np.testing.assert_allclose(gc.norm(x, axis, True, ord_).numpy(),
                                   np.linalg.norm(x, ord_, axis=axis, keepdims=True),
                                   rtol=1e-13)


def test_norm_kinks_have_hard_zero_subgradients():
    x = np.array([0.0, 3.0, -3.0, 1.0])
    [g] = grad(lambda t: gc.norm(t, ord=1), x)
    np.testing.assert_array_equal(g, [0.0, 1.0, -1.0, 1.0])
    [g] = grad(lambda t: gc.norm(t, ord=np.inf), x)
    np.testing.assert_array_equal(g, [0.0, 0.5, -0.5, 0.0])  # ties split, as max
    [g] = grad(lambda t: gc.norm(t, ord=3), np.zeros(3))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    [g] = grad(lambda t: gc.norm(t, ord=0.5), x)
    assert g[0] == 0.0 and np.all(np.isfinite(g))
    [g] = grad(lambda t: gc.norm(t, ord=0), x)
    np.testing.assert_array_equal(g, np.zeros(4))
    for ord_ in (1, 3):  # an infinite upstream gradient does not reach a zero element
        with np.errstate(invalid="ignore"):  # (inf * 0 in the branch not selected)
            [g] = grad(lambda t: gc.norm(t, ord=ord_) * np.inf, x)
        assert g[0] == 0.0


def test_norm_without_ord_keeps_its_earlier_behaviour():
    x = RNG.uniform(-1, 1, (2, 3, 2))
    np.testing.assert_allclose(gc.norm(x, (0, 2)).numpy(),
                               np.sqrt(np.sum(x * x, axis=(0, 2))), rtol=1e-14)
    np.testing.assert_allclose(gc.norm(x).numpy(), np.sqrt(np.sum(x * x)), rtol=1e-14)


def test_symbolic_norms_agree_with_numpy():
    import sympy as sp

    from gradcli.engine.rules.linalg import sympy_norm
    x = np.array([[0.5, -2.0, 0.25], [1.5, 0.75, -3.0]])
    for ord_, axis in ((1, None), (np.inf, None), (-np.inf, None), ("fro", None),
                       (1, 1), (3, 0), (np.inf, 1), (-1, (1, 0))):
        got = sympy_norm(sp, x.astype(object), axis, False, ord_)
        want = np.linalg.norm(x, ord_, axis=axis)
        np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-13)
    with pytest.raises(ValueError, match="no symbolic form"):
        sympy_norm(sp, x.astype(object), None, False, 2)


def test_gc_linalg_follows_numpy_linalg():
    assert gc.linalg.inv is gc.inv and gc.linalg.eigh is gc.eigh
    x = RNG.uniform(-1, 1, (2, 3, 3))
    np.testing.assert_allclose(gc.linalg.trace(x).numpy(), np.trace(x, axis1=1, axis2=2))
    np.testing.assert_allclose(gc.trace(x).numpy(), np.trace(x))
    np.testing.assert_allclose(gc.linalg.norm(x[0], 1).numpy(), np.linalg.norm(x[0], 1))
    np.testing.assert_allclose(gc.linalg.diagonal(x, 1).numpy(),
                               np.diagonal(x, 1, axis1=-2, axis2=-1))


def test_products_equal_numpy():
    a, b = RNG.uniform(-1, 1, (2, 3, 4)), RNG.uniform(-1, 1, (4, 3, 2))
    np.testing.assert_allclose(gc.tensordot(a, b, axes=((1, 2), (1, 0))).numpy(),
                               np.tensordot(a, b, axes=((1, 2), (1, 0))))
    c = RNG.uniform(-1, 1, (3, 4, 5))
    np.testing.assert_allclose(gc.tensordot(a, c).numpy(), np.tensordot(a, c))
    np.testing.assert_allclose(gc.inner(a, b.transpose(2, 1, 0)).numpy(),
                               np.inner(a, b.transpose(2, 1, 0)))
    np.testing.assert_allclose(gc.outer(a, b).numpy(), np.outer(a, b))
    np.testing.assert_allclose(gc.kron(a[0], b[0]).numpy(), np.kron(a[0], b[0]))
    np.testing.assert_allclose(gc.cross(a[:, :, :3], b[0, :, 0]).numpy(),
                               np.cross(a[:, :, :3], b[0, :, 0]))
    np.testing.assert_allclose(gc.diag(a[0, 0], k=2).numpy(), np.diag(a[0, 0], k=2))


# ---------------------------------------------------------------------------------------
# The table and the command line
# ---------------------------------------------------------------------------------------
LINALG = ["inv", "solve", "det", "slogdet", "cholesky", "eigh", "svd", "pinv", "trace",
          "diag", "diagonal", "triu", "tril", "outer", "inner", "kron", "cross", "tensordot",
          "einsum"]


def test_every_linalg_entry_is_in_the_table_with_its_samples():
    for name in LINALG:
        op = REGISTRY[name]
        assert op.kind == "linalg" and op.samples is not None, name
        assert op.derivative and op.domain, name
    assert set(LINALG) <= set(ORDER)


def _gradcli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True,
                          text=True, timeout=120, env=env, check=False)


def test_gradcli_functions_lists_every_linalg_entry_with_derivative_and_domain():
    result = _gradcli("functions", "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    entries = {e["name"]: e for e in (listed if isinstance(listed, list)
                                      else listed["functions"])}
    for name in LINALG + ["norm"]:
        assert entries[name]["derivative"] == REGISTRY[name].derivative, name
        assert entries[name]["domain"] == REGISTRY[name].domain, name
    assert "ord" in json.dumps(entries["norm"])


def test_command_line_picks_an_output_and_refuses_a_tuple():
    ok = _gradcli("grad", "sum(eigh(A)[0] ** 2)", "--arg", "A=[[2, 1], [1, 3]]", "--json")
    assert ok.returncode == 0, ok.stderr
    np.testing.assert_allclose(json.loads(ok.stdout)["gradients"][0]["gradient"],
                               [[4.0, 2.0], [2.0, 6.0]], rtol=1e-12)  # d tr(A^2) = 2A
    bad = _gradcli("grad", "sum(eigh(A))", "--arg", "A=[[2, 1], [1, 3]]")
    assert bad.returncode == 2
    assert "eigh returns 2 tensors (w, v): pick one" in bad.stderr and "^" in bad.stderr


@pytest.mark.slow
def test_command_line_check_of_decompositions_uses_finite_differences():
    result = _gradcli("grad", "sum(eigh(A)[1][:, 1] ** 2) + sum(svd(A)[1]) + norm(A, ord=2)",
                      "--arg", "A=[[2, 0.5], [0.5, -1]]", "--check", "--json")
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)["check"]["gradients"]
    assert row["symbolic_skipped"] == "no symbolic form for eigh"
    assert row["rel_error"] < 1e-6


@pytest.mark.parametrize("program", [
    "outer(v, v)", "kron(v, v)", 'einsum("i,j->ij", v, v)', "tensordot(v, v, axes=0)",
    "inner(reshape(v, (5000, 1)), reshape(v, (5000, 1)))", "svd(reshape(v, (5000, 1)))[0]",
    "diag(v)"])
def test_language_refuses_products_over_the_size_limit_before_computing(program):
    from gradcli.errors import LimitError
    decls = Declarations()
    decls.add("arg", "v", np.ones(5000))
    model = build(parse_program(program), decls)
    with pytest.raises(LimitError, match="array size limit"):
        model.function(*model.arg_values)


# --- numpy's signatures (issue 20: TensorFlow/JAX/PyTorch/autograd tests, translated) -----
NONSYMMETRIC = np.array([[2.0, 1.0, 9.0], [0.5, 3.0, -2.0], [4.0, 7.0, 1.0]])


@pytest.mark.parametrize("uplo", ["L", "U", "l", "u"])
def test_eigh_takes_numpys_uplo_and_reads_that_triangle(uplo):
    for eigh in (gc.eigh, gc.linalg.eigh):
        w, v = eigh(NONSYMMETRIC, uplo)
        want_w, want_v = np.linalg.eigh(NONSYMMETRIC, uplo)
        np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-13)
        # eigenvectors up to sign: v^T want_v is diagonal with entries +-1
        np.testing.assert_allclose(np.abs(v.numpy().T @ want_v), np.eye(3), atol=1e-12)
    w_keyword, _ = gc.eigh(NONSYMMETRIC, UPLO=uplo)
    np.testing.assert_allclose(w_keyword.numpy(), want_w, rtol=1e-13)


def test_eigh_with_uplo_is_differentiable_in_the_triangle_it_reads():
    weights = np.array([1.0, -2.0, 0.5])
    [g] = grad(lambda a: gc.sum(gc.eigh(a, "U")[0] * weights), NONSYMMETRIC)
    want = numpy_gradient(lambda a: np.sum(np.linalg.eigh(a, "U")[0] * weights), NONSYMMETRIC)
    np.testing.assert_allclose(g, want, atol=1e-7)
    assert not np.tril(g, -1).any()  # the lower triangle is never read


def test_eigh_refuses_an_unknown_uplo_as_numpy():
    with pytest.raises(ValueError, match="'L' or 'U'"):
        gc.eigh(NONSYMMETRIC, "X")


CROSS_CASES = [  # numpy.cross's axis arguments, positional and by name
    ((RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (4, 3))), {"axisa": 0}),
    ((RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (4, 3)), 0, -1, 0), {}),
    ((RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (4, 3)), 0, 1, 1), {}),
    ((RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (3, 4)), -1, -1, -1, 0), {}),
    ((RNG.uniform(-1, 1, (2, 3, 5)), RNG.uniform(-1, 1, (3,))), {"axisa": 1, "axisc": 0}),
    ((RNG.uniform(-1, 1, (2, 3, 5)), RNG.uniform(-1, 1, (2, 3, 5))), {"axis": 1}),
]


@pytest.mark.parametrize("args,kwargs", CROSS_CASES)
def test_cross_takes_numpys_axisa_axisb_axisc_and_axis(args, kwargs):
    got = gc.cross(*args, **kwargs).numpy()
    want = np.cross(*args, **kwargs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-14)
    # and through numpy's own function, with a tensor (the gradient kept)
    a = gc.constant(args[0])
    with gc.GradientTape() as tape:
        tape.watch(a)
        c = np.cross(a, *args[1:], **kwargs)
    weights = RNG.uniform(-1, 1, want.shape)
    g = tape.gradient(c, a, output_gradients=weights).numpy()
    np.testing.assert_allclose(g, numpy_gradient(
        lambda x: np.sum(np.cross(x, *args[1:], **kwargs) * weights), args[0]), atol=1e-8)


def test_cross_names_the_axis_argument_out_of_range():
    with pytest.raises(ValueError, match="axisa=5"):
        gc.cross(np.ones((3, 2)), np.ones((2, 3)), 5)
