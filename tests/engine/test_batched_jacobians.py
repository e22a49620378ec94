"""Jacobians and Hessians in one batched backward pass (issue 25, part 1): the basis of
cotangents goes through the backward pass as one batch, in chunks that bound memory,
instead of one backward pass per row. Truths: central differences, Hessians and
Jacobians written out by hand in numpy."""
import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core import batching
from gradcli.engine.core.tape import GradientTape

RNG = np.random.default_rng(2025)


def _rosen_lse(m):
    def f(x):
        return (m.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
                + m.log(m.sum(m.exp(x))))
    return f


def _rosen_lse_hessian(x):
    n = x.size
    H = np.zeros((n, n))
    i = np.arange(n - 1)
    H[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    H[i + 1, i + 1] += 200.0
    H[i, i + 1] = H[i + 1, i] = -400.0 * x[:-1]
    p = np.exp(x) / np.sum(np.exp(x))
    return H + np.diag(p) - np.outer(p, p)


@pytest.fixture
def backward_passes(monkeypatch):
    """How many backward passes run (GradientTape._backward calls)."""
    calls = []
    original = GradientTape._backward

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(GradientTape, "_backward", counting)
    return calls


def _quiet():
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("error", RuntimeWarning)  # a per-row fallback warns
    return context


def test_a_jacobian_is_one_backward_pass_not_one_per_row(backward_passes):
    W = RNG.standard_normal((40, 30))
    x0 = RNG.standard_normal(30)
    x = gc.constant(x0)
    context = _quiet()
    try:
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.tanh(gc.constant(W) @ x) * gc.sum(x)
        J = tape.jacobian(y, x).numpy()
    finally:
        context.__exit__(None, None, None)
    assert len(backward_passes) == 1
    h = 1e-6

    def f(z):
        return np.tanh(W @ z) * np.sum(z)
    fd = np.stack([(f(x0 + h * e) - f(x0 - h * e)) / (2 * h) for e in np.eye(30)], axis=1)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8)


def test_hessians_function_is_two_backward_passes_and_the_hand_hessian(backward_passes):
    x0 = RNG.standard_normal(60) * 0.5
    context = _quiet()
    try:
        H = gc.hessians_function(_rosen_lse(gc))(x0)[0][0].numpy()
    finally:
        context.__exit__(None, None, None)
    assert len(backward_passes) == 2  # the gradient, then all of its Jacobian's rows
    np.testing.assert_allclose(H, _rosen_lse_hessian(x0), rtol=1e-12, atol=1e-10)


def test_the_basis_is_cut_into_chunks_that_bound_memory(backward_passes, monkeypatch):
    monkeypatch.setattr(batching, "JACOBIAN_CHUNK_ELEMENTS", 7 * 25)  # 7 rows of 25
    x0 = RNG.standard_normal(25) * 0.5
    H = gc.hessians_function(_rosen_lse(gc))(x0)[0][0].numpy()
    assert len(backward_passes) == 1 + 4  # ceil(25 / 7) chunks of rows
    np.testing.assert_allclose(H, _rosen_lse_hessian(x0), rtol=1e-12, atol=1e-10)


def test_a_jacobian_of_a_matrix_target_and_two_sources():
    A0, b0 = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    A, b = gc.constant(A0), gc.constant(b0)
    context = _quiet()
    try:
        with gc.GradientTape() as tape:
            tape.watch([A, b])
            y = gc.sin(A * b)  # (3, 4)
        dA, db = tape.jacobian(y, [A, b])
    finally:
        context.__exit__(None, None, None)
    c = np.cos(A0 * b0)
    want_dA = np.zeros((3, 4, 3, 4))
    want_db = np.zeros((3, 4, 4))
    for i in range(3):
        for j in range(4):
            want_dA[i, j, i, j] = c[i, j] * b0[j]
            want_db[i, j, j] = c[i, j] * A0[i, j]
    np.testing.assert_allclose(dA.numpy(), want_dA, rtol=1e-14)
    np.testing.assert_allclose(db.numpy(), want_db, rtol=1e-14)


@pytest.mark.parametrize("name, f, second", [
    ("abs", lambda m, x: m.sum(m.abs(x) * x), lambda x: np.diag(2.0 * np.sign(x))),
    ("relu", lambda m, x: m.sum(m.relu(x) * x), lambda x: np.diag(2.0 * (x > 0))),
    ("sigmoid", lambda m, x: m.sum(m.sigmoid(x)),
     lambda x: np.diag((s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s))),
])
def test_hessians_through_gated_rules_stay_batched(name, f, second):
    """The kink rules' gate looks for nan in the upstream gradient: on a batch of seeds
    it does so element by element instead of reading the batch as one array."""
    x0 = np.array([-1.5, -0.5, 0.5, 2.0])
    context = _quiet()
    try:
        H = gc.hessians_function(lambda x: f(gc, x))(x0)[0][0].numpy()
    finally:
        context.__exit__(None, None, None)
    np.testing.assert_allclose(H, second(x0), rtol=1e-12, atol=1e-15)


def test_a_rule_that_cannot_batch_computes_row_by_row_and_says_so_once():
    @gc.custom_gradient
    def twice(x):
        def grad_fn(g):
            return gc.constant(np.asarray(g) * 2.0)  # reads the upstream as an array
        return x * 2.0, grad_fn

    x = gc.constant([1.0, 2.0, 3.0])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = twice(x) * x
    with pytest.warns(RuntimeWarning, match="jacobian: .*one row at a time") as caught:
        J = tape.jacobian(y, x).numpy()
    assert len([w for w in caught if "jacobian" in str(w.message)]) == 1
    np.testing.assert_allclose(J, np.diag(4.0 * x.numpy()))


def test_a_chunk_is_bounded_by_the_widest_intermediate_too(backward_passes, monkeypatch):
    """A target and source of 12 elements through a 12x12 intermediate: the chunks are
    sized by the intermediate's 144 elements per row, not by the target's 12."""
    monkeypatch.setattr(batching, "JACOBIAN_CHUNK_ELEMENTS", 144 * 4)  # 4 rows a chunk
    x0 = RNG.standard_normal(12)
    x = gc.constant(x0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        outer = gc.reshape(x, (12, 1)) * gc.reshape(x, (1, 12))  # 144 elements
        y = gc.sum(gc.sin(outer), axis=1)  # y_i = sum_j sin(x_i x_j)
    J = tape.jacobian(y, x).numpy()
    assert len(backward_passes) == 3  # 12 rows, 4 a chunk
    c = np.cos(np.outer(x0, x0))
    want = c * x0[:, None] + np.diag(c @ x0)  # d y_i / d x_k = c_ik x_i + [i=k] (c x)_i
    np.testing.assert_allclose(J, want, rtol=1e-12, atol=1e-13)


def test_the_jacobian_command_in_forward_mode_is_one_pass_over_the_basis(monkeypatch):
    """``jacobian --mode fwd`` runs the program once on the batch of unit tangents (as
    jax.jacfwd), not once per source element; the Jacobian is the one written by hand."""
    from gradcli.lang import Declarations, build, parse_program
    from gradcli.run.derivatives import jacobian

    entered = []
    original = gc.ForwardAccumulator.__enter__

    def counting(self):
        entered.append(1)
        return original(self)
    monkeypatch.setattr(gc.ForwardAccumulator, "__enter__", counting)
    A = np.array([[1.0, 2.0, 0.5], [3.0, -4.0, 1.0]])
    v = np.array([0.5, -1.0, 2.0])
    decls = Declarations.from_options(arg=[f"A={A.tolist()}", f"v={v.tolist()}"])
    model = build(parse_program("tanh(A @ v) * sum(v)"), decls)
    context = _quiet()
    try:
        result = jacobian(model, ["v"], mode="fwd")
    finally:
        context.__exit__(None, None, None)
    assert result.computed_by == "forward" and len(entered) == 1
    t = np.tanh(A @ v)
    want = ((1.0 - t * t)[:, None] * A) * np.sum(v) + t[:, None]  # d/dv of t * sum(v)
    np.testing.assert_allclose(result.jacobians[0].jacobian, want, rtol=1e-13)
