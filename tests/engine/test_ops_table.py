"""Every entry of the function table: gradients and second derivatives against finite
differences over scalar, vector, matrix and broadcast shapes, and the kink conventions."""
from types import SimpleNamespace

import more_cases
import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.testing import check_grads

SHAPES = [(), (3,), (2, 3)]
PAIRS = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (1, 3)),
         ((3,), ())]
F = gc.FUNCTIONS


def sample(op, shape, rng):
    lo, hi = op.sample
    return rng.uniform(lo, hi, size=shape)


def call_entry(name, args, params):
    """F[name] on args and params; several outputs (eigh, svd, ...) become one tensor, the
    concatenation of their flattened values, so every output is checked."""
    fn = F[name]
    out = fn(list(args), **params) if REGISTRY[name].variadic else fn(*args, **params)
    if isinstance(out, tuple):
        out = F["concatenate"]([F["reshape"](o, (-1,)) for o in out])
    return out


def entry_samples(rng):
    """(test id, name, args, params) from every entry's own ``samples`` (valid calls for
    entries a range cannot describe: square, positive definite or batched matrices)."""
    return [(f"{name}-{label}", name, args, params) for name in ORDER
            if REGISTRY[name].samples is not None
            for label, args, params in REGISTRY[name].samples(rng)]


def cases():
    """(test id, function, args) for every differentiable entry."""
    rng = np.random.default_rng(1)
    out = [(case_id, (lambda n, p: lambda *xs: call_entry(n, xs, p))(name, params), list(args))
           for case_id, name, args, params in entry_samples(rng)]
    for name in ORDER:
        op = REGISTRY[name]
        fn = F[name]
        if op.samples is not None and op.kind not in ("reduction",):
            continue
        if op.kind in ("elementwise", "arithmetic", "binary") and op.elementwise \
                and name not in ("clip", "stop_gradient"):
            if len(op.inputs) == 1:
                for shape in SHAPES:
                    out.append((f"{name}{shape}", fn, [sample(op, shape, rng)]))
            else:
                for a, b in PAIRS:
                    out.append((f"{name}{a}{b}", fn, [sample(op, a, rng), sample(op, b, rng)]))
        elif op.kind == "reduction" and name != "softmax":
            for shape, axis, keep in [((3,), None, False), ((2, 3), None, False),
                                      ((2, 3), 0, False), ((2, 3), -1, True),
                                      ((2, 3, 2), (0, 2), False)]:
                out.append((f"{name}{shape}axis{axis}keep{keep}",
                            (lambda f, a, k: lambda x: f(x, axis=a, keepdims=k))(fn, axis, keep),
                            [sample(op, shape, rng)]))
    X = lambda *s: rng.uniform(-1, 1, size=s)
    out += [
        ("softmax-1", lambda x: F["softmax"](x), [X(2, 3)]),
        ("softmax0", lambda x: F["softmax"](x, axis=0), [X(2, 3)]),
        ("matmul22", F["matmul"], [X(2, 3), X(3, 4)]),
        ("matmul11", F["matmul"], [X(3), X(3)]),
        ("matmul21", F["matmul"], [X(2, 3), X(3)]),
        ("matmul12", F["matmul"], [X(3), X(3, 2)]),
        ("matmul-batched", F["matmul"], [X(2, 2, 3), X(3, 4)]),
        ("dot11", F["dot"], [X(3), X(3)]),
        ("dot22", F["dot"], [X(2, 3), X(3, 2)]),
        ("dot-scalar", F["dot"], [X(), X(3)]),
        ("transpose", F["transpose"], [X(2, 3)]),
        ("transpose-axes", lambda x: F["transpose"](x, axes=(1, 0, 2)), [X(2, 3, 2)]),
        ("reshape", lambda x: F["reshape"](x, (3, 2)), [X(2, 3)]),
        ("concatenate", lambda a, b: F["concatenate"]([a, b], axis=0), [X(2, 3), X(1, 3)]),
        ("concatenate-1", lambda a, b: F["concatenate"]([a, b], axis=-1), [X(2, 3), X(2, 1)]),
        ("stack", lambda a, b: F["stack"]([a, b]), [X(3), X(3)]),
        ("stack1", lambda a, b: F["stack"]([a, b], axis=1), [X(2, 3), X(2, 3)]),
        ("where", lambda a, b: F["where"](np.array([True, False, True]), a, b), [X(3), X(2, 3)]),
        ("clip", lambda x, lo, hi: F["clip"](x, lo, hi), [np.array([-0.9, 0.1, 0.8]),
                                                          np.array(-0.5), np.array(0.5)]),
        ("prod-with-zero", lambda x: F["prod"](x), [np.array([0.0, 2.0, 3.0])]),
        ("prod-axis-zero", lambda x: F["prod"](x, axis=1), [np.array([[0.0, 2.0], [1.5, 3.0]])]),
        ("getitem", lambda x: x[1:, 0], [X(3, 2)]),
    ]
    # The entries of more_ops.py, from tests/more_cases.py.
    ns = SimpleNamespace(**F)
    for name, entries in more_cases.CASES.items():
        for k, (_, call, shapes) in enumerate(entries):
            names = list(shapes)
            fn = (lambda c, ns_: lambda *a: c(ns, dict(zip(ns_, a))))(call, names)
            out.append((f"{name}#{k}", fn, [sample(REGISTRY[name], shapes[n], rng)
                                            for n in names]))
    return out


CASES = cases()


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=[c[0] for c in CASES])
def test_entry_first_and_second_order(fn, args):
    check_grads(fn, args, order=2)


SAMPLES = entry_samples(np.random.default_rng(2))


@pytest.mark.parametrize("name,args,params", [c[1:] for c in SAMPLES], ids=[c[0] for c in SAMPLES])
def test_entry_samples_stay_float32(name, args, params):
    """float32 inputs give float32 values and gradients, equal to float64's within
    float32's precision (gradients of a random projection of the outputs)."""
    rng = np.random.default_rng(0)
    out64 = call_entry(name, args, params)
    weights = rng.standard_normal(out64.shape)

    def loss(*xs):
        return F["sum"](call_entry(name, xs, params) * weights.astype(xs[0].dtype))
    args32 = [np.asarray(a, dtype=np.float32) for a in args]
    value32 = call_entry(name, args32, params)
    assert value32.dtype == np.float32
    np.testing.assert_allclose(value32.numpy(), out64.numpy(), rtol=1e-4, atol=1e-5)
    grads32 = gc.gradients_function(loss)(*args32)
    grads64 = gc.gradients_function(loss)(*args)
    for g32, g64 in zip(grads32, grads64):
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32.numpy(), g64.numpy(), rtol=2e-3, atol=2e-4)


NOT_DIFFERENTIABLE = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
                      "stop_gradient", "zeros", "ones", "full", "eye", "linspace", "arange",
                      *more_cases.NOT_DIFFERENTIABLE}


def test_every_entry_is_covered():
    covered = {name for name in ORDER if any(c[0].startswith(name) for c in CASES)}
    assert set(ORDER) - covered - NOT_DIFFERENTIABLE == set()


# Entries without a sympy counterpart, and why.
NO_SYMPY = {
    "stop_gradient": "no symbolic meaning: the check holds it at its value",
    "eigh": "sympy's eigenvalues of a symbolic matrix have no order and its eigenvectors "
            "no sign convention, so they cannot stand for numpy's",
    "svd": "as eigh: singular vectors have no sign convention and the values no order",
}


def test_every_entry_has_a_description_and_a_sympy_form_or_reason():
    for name in ORDER:
        op = REGISTRY[name]
        assert op.doc, name
        without = name in NO_SYMPY or name in more_cases.NOT_IN_LANGUAGE
        assert (op.sympy is not None) != without, name


@pytest.mark.parametrize("name", sorted(NOT_DIFFERENTIABLE - {"stop_gradient"}))
def test_non_differentiable_entries_compute(name):
    op = REGISTRY[name]
    fn = F[name]
    if op.kind == "comparison":
        out = fn(gc.constant([1.0, 2.0]), 1.5)
        assert out.dtype == np.bool_
    else:
        args = {"zeros": ((2, 3),), "ones": ((2,),), "full": ((2,), 7.0), "eye": (3,),
                "linspace": (0.0, 1.0, 5), "arange": (0.0, 3.0),
                "argmax": (np.array([1.0, 3.0, 2.0]),),
                "argmin": (np.array([[1.0, 3.0], [-2.0, 2.0]]),)}[name]
        expected = getattr(np, name)(*args)
        np.testing.assert_array_equal(fn(*args).numpy(), expected)


def grad(f, x):
    return gc.gradients_function(f)(x)[0].numpy()


def test_kink_conventions():
    assert grad(F["abs"], 0.0) == 0.0
    assert grad(F["relu"], 0.0) == 0.0
    assert grad(F["sign"], 0.5) == 0.0
    assert grad(F["floor"], 0.5) == 0.0
    assert grad(F["ceil"], 0.5) == 0.0
    with np.errstate(divide="ignore"):
        assert grad(F["sqrt"], 0.0) == np.inf


def test_ties_split_the_gradient_equally():
    gx, gy = gc.gradients_function(F["maximum"])(1.0, 1.0)
    assert (gx.numpy(), gy.numpy()) == (0.5, 0.5)
    gx, gy = gc.gradients_function(F["minimum"])(2.0, 2.0)
    assert (gx.numpy(), gy.numpy()) == (0.5, 0.5)
    np.testing.assert_array_equal(grad(F["max"], np.array([3.0, 1.0, 3.0])), [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(grad(F["min"], np.array([1.0, 1.0, 1.0, 2.0])),
                                  [1 / 3, 1 / 3, 1 / 3, 0.0])


def test_aliases_are_the_same_functions():
    assert gc.asin is gc.arcsin and gc.ln is gc.log and gc.atan2 is gc.arctan2
    assert gc.pow is gc.power


def test_large_array_gradient_makes_no_python_loop():
    x = np.linspace(-1, 1, 10 ** 5)
    g = grad(lambda t: gc.sum(gc.sin(t) * gc.exp(-t ** 2)), x)
    expected = np.exp(-x ** 2) * (np.cos(x) - 2 * x * np.sin(x))
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)


def test_check_grads_catches_a_wrong_rule():
    @gc.custom_gradient
    def wrong_square(x):
        return x * x, lambda dy: dy * 3.0  # the true derivative is 2x
    with pytest.raises(AssertionError, match="disagree"):
        check_grads(wrong_square, [1.0])


def test_check_grads_catches_a_wrong_second_derivative():
    @gc.custom_gradient
    def cube(x):
        # First derivative right at x=1 (3x^2), but constant in x: the second order is wrong.
        return x * x * x, lambda dy: dy * 3.0 * gc.stop_gradient(x * x)
    check_grads(cube, [1.0], order=1)
    with pytest.raises(AssertionError, match="order 2"):
        check_grads(cube, [1.0], order=2)


def _twins() -> list:
    """(entry, rule, the rule's in-place twin) for every twin the fast paths keep."""
    from gradcli.engine import fast
    assert fast.TWINS, "the fast paths keep in-place twins"
    return [(REGISTRY[name], REGISTRY[name].vjps[i], twin)
            for name, twins in fast.TWINS.items() for i, twin in enumerate(twins)
            if twin is not None]


def test_in_place_twins_agree_with_their_rules():
    """Each in-place twin (used on large arrays) computes exactly what its rule does."""
    from gradcli.engine import ops
    rng = np.random.default_rng(3)
    for op, rule, twin in _twins():
        lo, hi = op.sample
        values = [rng.uniform(lo, hi, size=5000) for _ in op.inputs]
        if op.name == "power":
            values[1] = 2  # the twin handles constant exponents
        ans = op.forward(*values)
        g = rng.standard_normal(5000)
        expected = rule(ops.NP, g, ans, *values)
        result = twin(g.copy(), ans, *values)
        np.testing.assert_array_equal(result, expected, err_msg=op.name)


def test_large_arrays_take_the_in_place_path_and_stay_right():
    x = np.linspace(0.1, 2.0, 10_000)
    f = lambda t: gc.sum(gc.tanh(gc.sigmoid(gc.cos(-t ** 2) * 3.0)))
    [g] = gc.gradients_function(f)(x)
    s = 1 / (1 + np.exp(-np.cos(-x ** 2) * 3.0))
    expected = (1 - np.tanh(s) ** 2) * s * (1 - s) * (-np.sin(-x ** 2)) * 3.0 * (-2 * x)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)


def test_in_place_twins_with_spare_buffers_and_scalar_upstream():
    """The twins also run with a scalar upstream gradient (from a sum) and write into the
    node's own spent arrays: the results must equal the rules' on every path."""
    from gradcli.engine import ops
    rng = np.random.default_rng(4)
    for op, rule, twin in _twins():
        lo, hi = op.sample
        for upstream in (rng.standard_normal(5000), np.float64(0.7)):
            for use_spare in (False, True):
                values = [rng.uniform(lo, hi, size=5000) for _ in op.inputs]
                if op.name == "power":
                    values[1] = 2
                ans = op.forward(*values)
                expected = np.broadcast_to(rule(ops.NP, upstream, ans, *values), (5000,))
                spare = (ans.copy(), values[0].copy()) if use_spare else (None, None)
                g = upstream.copy() if isinstance(upstream, np.ndarray) else upstream
                args = [spare[1] if use_spare and k == 0 else v for k, v in enumerate(values)]
                result = twin(g, spare[0] if use_spare else ans, *args, spare=spare)
                if result is not None:
                    np.testing.assert_array_equal(np.broadcast_to(result, (5000,)), expected,
                                                  err_msg=f"{op.name} {use_spare}")


BIG_PAIRS = [((64, 1), (64, 100)), ((64, 100), (64, 1)), ((100,), (64, 100)),
             ((64, 100), ()), ((), (64, 100))]


@pytest.mark.parametrize("name", [n for n in ORDER if REGISTRY[n].elementwise
                                  and REGISTRY[n].differentiable
                                  and len(REGISTRY[n].inputs) == 2])
def test_large_broadcast_inputs_get_summed_gradients(name):
    """On large arrays the backward pass hands a sum's gradient to elementwise rules as a
    scalar; an input smaller than the output must still receive the sum over the
    broadcast dimensions. Reference: the same gradients computed in engine operations
    (under an outer tape), which never take that path."""
    op, fn = REGISTRY[name], F[name]
    rng = np.random.default_rng(5)
    lo, hi = op.sample
    for xs, ys in BIG_PAIRS:
        x, y = rng.uniform(lo, hi, size=xs), rng.uniform(lo, hi, size=ys)
        for f in (lambda a, b: gc.sum(fn(a, b)), lambda a, b: gc.sum(fn(a, b) * 2.0)):
            fast = gc.gradients_function(f)(x, y)
            with gc.GradientTape():
                plain = gc.gradients_function(f)(x, y)
            for got, want, shape in zip(fast, plain, (xs, ys)):
                assert got.shape == shape
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12,
                                           err_msg=f"{name} {xs} {ys}")


def test_large_broadcast_add_gives_exact_counts():
    [gx, gy] = gc.gradients_function(lambda a, b: gc.sum(a + b))(np.ones((64, 1)),
                                                                 np.ones((64, 100)))
    assert np.all(gx.numpy() == 100.0) and np.all(gy.numpy() == 1.0)
    [gx] = gc.gradients_function(lambda a, b: gc.sum(a - b), params=[0])(np.ones(100),
                                                                        np.ones((64, 100)))
    assert np.all(gx.numpy() == 64.0)


def test_an_entry_made_with_other_rules_loses_its_twins():
    """Twins belong to the registered entry of their name: an entry copied with a
    different rule (how the tests swap a wrong rule in) must use that rule on large
    arrays too, not the old twin."""
    from gradcli.engine import fast, ops
    tanh = REGISTRY["tanh"]
    assert tanh.twins and tanh.twins[0] is fast.TWINS["tanh"][0]
    wrong = tanh.replace(vjps=(lambda m, g, ans, x: g * 3.0,))
    assert wrong.twins == ()
    x = np.linspace(-1.0, 1.0, 10_000)
    with gc.GradientTape() as tape:
        t = gc.constant(x)
        tape.watch(t)
        y = gc.sum(ops.apply(wrong, (t * 1.0,)) * 2.0)
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), np.full_like(x, 6.0))


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=[c[0] for c in CASES])
def test_entry_rules_work_from_what_a_lean_node_keeps(fn, args, monkeypatch):
    """A single tape keeps only what each rule reads; on arrays above
    ops.SHAPE_ONLY_ABOVE elements an unread input is kept as its Shape. With the threshold
    at 0, every rule must still give the gradients it gives with everything kept (the
    reference: an outer tape records, so nodes keep all)."""
    from gradcli.engine import ops
    monkeypatch.setattr(ops, "SHAPE_ONLY_ABOVE", 0)
    lean = gc.gradients_function(fn)(*args)
    with gc.GradientTape():
        full = gc.gradients_function(fn)(*args)
    for got, want in zip(lean, full):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-15)


def test_the_docs_list_every_function_of_the_table():
    """docs/language.md's list of functions (the paragraph after "Functions come from the
    table") names every entry and alias of the table, and nothing that is not one (in
    process: the quick subset keeps it; tests/cli/test_docs.py checks the same through the CLI)."""
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    start = readme.index("Functions come from the table")
    paragraph = readme[start:readme.index("\n\n", start)]
    listed = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(
        re.findall(r"`([^`]*)`", paragraph))))
    names = set(REGISTRY)
    missing = sorted(names - listed)
    assert missing == [], f"docs/language.md's function list lacks {missing}"
    words = {"x", "y", "axis", "keepdims", "ddof", "weights", "None", "pi", "e", "inf",
             "gradcli", "functions"}
    unknown = sorted(listed - names - words)
    assert unknown == [], f"docs/language.md lists {unknown}, which are not in the table"
