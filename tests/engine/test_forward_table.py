"""Forward mode over the whole function table: every entry has a JVP rule per input beside
its VJP rule, and they agree — ``<jvp(t), v> == <t, vjp(v)>`` on random vectors, the
forward and reverse Jacobians are equal, and the JVP matches central differences along
the tangent (the independent truth). In float64, over every entry of the registry,
internal entries used by the rules included."""
import numpy as np
import pytest
from test_ops_table import cases as table_cases  # the table's cases, kept in one place

import gradcli as gc
from gradcli.engine import ops
from gradcli.engine.core import derive
from gradcli.engine.core.table import ORDER, REGISTRY

F = gc.FUNCTIONS
INTERNAL = ops.INTERNAL


def internal_cases():
    """(id, function, args) for the entries only the rules use."""
    rng = np.random.default_rng(7)
    X = lambda *s: rng.uniform(-1, 1, size=s)  # noqa: E731

    def entry(name, **params):
        return lambda *xs: ops.apply(INTERNAL[name], xs, params)
    return [
        ("broadcast_to", entry("broadcast_to", shape=(2, 3)), [X(3)]),
        ("broadcast_to-scalar", entry("broadcast_to", shape=(2, 2)), [X()]),
        ("sum_to", entry("sum_to", shape=(1, 3)), [X(2, 3)]),
        ("sum_to-lead", entry("sum_to", shape=(3,)), [X(2, 3)]),
        ("getitem-repeated", lambda x: x[np.array([0, 0, 2])], [X(3)]),
        ("scatter", entry("scatter", index=(slice(1, 3),), shape=(4,)), [X(2)]),
        ("scatter-repeated", entry("scatter", index=(np.array([0, 0]),), shape=(3,)), [X(2)]),
        ("cast", entry("cast", dtype=np.float64), [X(2, 3)]),
        ("fill", entry("fill", shape=(2, 3)), [X(3)]),
        ("fill-scalar", entry("fill", shape=(2,)), [X()]),
        ("linspace_between", entry("linspace_between", num=5), [X(), X()]),
        ("linspace_between-vector", entry("linspace_between", num=4), [X(2), X(2)]),
    ]


CASES = table_cases() + internal_cases()
IDS = [c[0] for c in CASES]
ENTRIES = {**{name: REGISTRY[name] for name in ORDER}, **INTERNAL}


def _forward(fn, args, tangents):
    xs = [gc.constant(a) for a in args]
    with gc.ForwardAccumulator(xs, [np.asarray(t) for t in tangents]) as acc:
        y = fn(*xs)
    return y.numpy(), acc.jvp(y, unconnected_gradients="zero").numpy()


def _reverse(fn, args, v):
    xs = [gc.constant(a) for a in args]
    with gc.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    grads = tape.gradient(y, xs, output_gradients=v, unconnected_gradients="zero")
    return [g.numpy() for g in grads]


def test_every_entry_has_one_jvp_rule_per_vjp_rule():
    for name, op in ENTRIES.items():
        assert len(op.jvps) == len(op.vjps), f"{name}: no JVP rule"
        for i, (jvp, vjp) in enumerate(zip(op.jvps, op.vjps)):
            assert (jvp is None) == (vjp is None), f"{name}: input {i} JVP/VJP mismatch"


def test_every_differentiable_entry_has_a_forward_case():
    differentiable = {name for name, op in ENTRIES.items() if op.differentiable}
    covered = {name for name in ENTRIES if any(i.startswith(name) for i in IDS)}
    assert differentiable - covered == set()


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=IDS)
def test_jvp_is_the_transpose_of_vjp(fn, args):
    rng = np.random.default_rng(3)
    y, _ = _forward(fn, args, [np.zeros(np.shape(a)) for a in args])
    v = rng.standard_normal(np.shape(y))
    grads = _reverse(fn, args, v)
    for i, a in enumerate(args):  # each input on its own: one rule at a time
        tangents = [np.zeros(np.shape(b)) for b in args]
        tangents[i] = rng.standard_normal(np.shape(a))
        _, jvp = _forward(fn, args, tangents)
        forward, reverse = np.sum(jvp * v), np.sum(tangents[i] * grads[i])
        assert np.isclose(forward, reverse, rtol=1e-10, atol=1e-12), (i, forward, reverse)


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=IDS)
def test_forward_and_reverse_jacobians_agree(fn, args):
    y, _ = _forward(fn, args, [np.zeros(np.shape(a)) for a in args])
    for i, a in enumerate(args):
        columns = []
        for k in range(np.size(a)):
            tangents = [np.zeros(np.shape(b)) for b in args]
            unit = np.zeros(np.size(a))
            unit[k] = 1.0
            tangents[i] = unit.reshape(np.shape(a))
            columns.append(np.ravel(_forward(fn, args, tangents)[1]))
        forward = np.stack(columns, axis=-1) if columns else np.zeros((np.size(y), 0))
        rows = []
        for k in range(np.size(y)):
            seed = np.zeros(np.size(y))
            seed[k] = 1.0
            rows.append(np.ravel(_reverse(fn, args, seed.reshape(np.shape(y)))[i]))
        reverse = np.stack(rows) if rows else np.zeros((0, np.size(a)))
        np.testing.assert_allclose(forward.reshape(np.size(y), np.size(a)), reverse,
                                   rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=IDS)
def test_jvp_matches_central_differences_along_the_tangent(fn, args):
    rng = np.random.default_rng(5)
    tangents = [rng.standard_normal(np.shape(a)) for a in args]
    _, jvp = _forward(fn, args, tangents)
    h = 1e-6

    def at(s):
        return np.asarray(fn(*[gc.constant(a + s * t) for a, t in zip(args, tangents)])
                          .numpy())
    numeric = (at(h) - at(-h)) / (2 * h)
    np.testing.assert_allclose(jvp, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=IDS)
def test_rules_in_engine_operations_give_hessian_vector_products(fn, args):
    """Forward over reverse through every entry: the JVP rules then run in engine
    operations on the VJP rules' own operations. Against central differences of the
    reverse-mode gradient of <v, f(x)>."""
    rng = np.random.default_rng(11)
    y, _ = _forward(fn, args, [np.zeros(np.shape(a)) for a in args])
    v = gc.constant(rng.standard_normal(np.shape(y)))
    vectors = [rng.standard_normal(np.shape(a)) for a in args]

    def scalar(*xs):
        return gc.sum(fn(*xs) * v)
    hvp = gc.hessian_vector_product(scalar, list(args), vectors)
    grad = gc.gradients_function(scalar)
    h = 1e-5

    def gradient_at(s):
        return [g.numpy() if g is not None else 0.0 for g in
                grad(*[gc.constant(a + s * w) for a, w in zip(args, vectors)])]
    for got, up, down in zip(hvp, gradient_at(h), gradient_at(-h)):
        np.testing.assert_allclose(got.numpy(), (np.asarray(up) - down) / (2 * h),
                                   rtol=1e-4, atol=1e-5)


@pytest.fixture
def every_rule_transposed():
    """Every entry's JVP replaced by the transposition of its VJP (ops.transposed), for
    the duration of a test."""
    saved = {name: op.jvps for name, op in ENTRIES.items()}
    for op in ENTRIES.values():
        object.__setattr__(op, "jvps", derive.transposed_rules(op.vjps, op.variadic))
    yield
    for name, op in ENTRIES.items():
        object.__setattr__(op, "jvps", saved[name])


@pytest.fixture
def hand_written_jvps():
    """(id -> jvp) from the entries' own rules, computed before any is replaced."""
    rng = np.random.default_rng(13)
    out = {}
    for name, fn, args in CASES:
        tangents = [rng.standard_normal(np.shape(a)) for a in args]
        out[name] = (tangents, _forward(fn, args, tangents)[1])
    return out


def test_transposed_vjps_give_the_hand_written_jvps(hand_written_jvps, every_rule_transposed):
    for name, fn, args in CASES:
        tangents, expected = hand_written_jvps[name]
        np.testing.assert_allclose(_forward(fn, args, tangents)[1], expected, rtol=1e-12,
                                   atol=1e-14, err_msg=name)
