"""The --check verdict: ok, mismatch, skipped, non-differentiable, and the JSON object."""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

import more_cases
import numpy as np
import pytest

import gradcli as gc
from gradcli.check import (
    CheckReport,
    Tolerances,
    compare_gradient,
    numeric_gradient,
    run_check,
    symbolic_gradients,
)
from gradcli.check.numeric import NumericGradient
from gradcli.check.symbolic import SymbolicGradient
from gradcli.engine import ops
from gradcli.lang import parse_program
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.lang.tree import (
    ArrayLit,
    Binary,
    Call,
    Compare,
    ExprStatement,
    Name,
    Number,
    Program,
    TupleLit,
    Unary,
)

SEED = Program((ExprStatement(Binary("+", Binary("*", Name("w1"), Name("x1")),
                                     Binary("*", Name("w2"), Name("x2")))),))
SEED_POINT = {"w1": 2.0, "w2": 3.0, "x1": 5.0, "x2": 7.0}


def seed_f(v):
    return v["w1"] * v["x1"] + v["w2"] * v["x2"]


def program(node) -> Program:
    return Program((ExprStatement(node),))


def call(func, *args, **kwargs) -> Call:
    return Call(func, tuple(args), tuple(kwargs.items()))


def sin_chain(depth: int):
    node = Name("x")
    for _ in range(depth):
        node = call("sin", node)

    def f(v):
        x = v["x"]
        for _ in range(depth):
            x = np.sin(x)
        return float(x)
    return program(node), f


def tape_sin_chain_gradient(depth: int, x0: float) -> float:
    x = gc.Variable(x0)
    with gc.GradientTape() as tape:
        y = x
        for _ in range(depth):
            y = gc.sin(y)
    return float(tape.gradient(y, x).numpy())


# ---------------------------------------------------------------------------------------
# run_check end to end (with the sympy worker)
# ---------------------------------------------------------------------------------------
def test_seed_passes():
    report = run_check(SEED, SEED_POINT, ["w1", "w2"], {"w1": 5.0, "w2": 7.0}, seed_f)
    assert report.passed
    assert [g.status for g in report.gradients] == ["ok", "ok"]
    assert [float(g.symbolic) for g in report.gradients] == [5.0, 7.0]
    assert all(g.rel_error < 1e-8 for g in report.gradients)


def test_wrong_gradient_is_a_mismatch():
    report = run_check(SEED, SEED_POINT, ["w1", "w2"], {"w1": 5.0, "w2": 7.001}, seed_f)
    assert not report.passed
    w1, w2 = report.gradients
    assert (w1.status, w2.status) == ("ok", "mismatch")
    assert w2.reason == "tape differs from sympy at w2: tape 7.001, sympy 7"
    assert w2.abs_error == pytest.approx(0.001, rel=1e-6)


@pytest.mark.parametrize("func, f", [("abs", abs), ("relu", lambda x: max(x, 0.0))])
def test_kink_at_zero_is_non_differentiable(func, f):
    report = run_check(program(call(func, Name("x"))), {"x": 0.0}, ["x"], {"x": 0.0},
                       lambda v: f(float(v["x"])))
    assert report.gradients[0].status == "non-differentiable"
    assert report.passed  # a kink is not a failure: the tape's value is a convention
    assert "kink" in report.gradients[0].reason


def test_deep_sin_chain_is_skipped_and_finite_differences_decide():
    prog, f = sin_chain(100)
    tape = tape_sin_chain_gradient(100, 0.5)
    start = time.monotonic()
    report = run_check(prog, {"x": 0.5}, ["x"], {"x": tape}, f, timeout=2.0)
    assert time.monotonic() - start < 5.0
    g = report.gradients[0]
    assert g.status == "skipped"
    assert g.symbolic is None
    assert g.symbolic_skipped.startswith("too deep for sympy")
    assert g.reason.endswith("finite differences agree")
    assert report.passed


def test_deep_sin_chain_with_a_wrong_gradient_fails_on_finite_differences():
    prog, f = sin_chain(100)
    tape = tape_sin_chain_gradient(100, 0.5) * 1.01
    report = run_check(prog, {"x": 0.5}, ["x"], {"x": tape}, f, timeout=2.0)
    assert report.gradients[0].status == "mismatch"
    assert "finite differences" in report.gradients[0].reason
    assert not report.passed


def test_symbolic_text_is_attached_when_asked():
    report = run_check(SEED, SEED_POINT, ["w1"], {"w1": 5.0}, seed_f, want_text=True)
    assert report.gradients[0].symbolic_derivative == "x1"
    assert report.to_json()["gradients"][0]["symbolic_derivative"] == "x1"


def test_without_sympy_finite_differences_decide():
    report = run_check(SEED, SEED_POINT, ["w1"], {"w1": 5.0}, seed_f, symbolic=False)
    assert report.gradients[0].status == "skipped"
    assert report.gradients[0].symbolic_skipped == "not asked for"


def test_large_source_is_checked_along_a_random_direction():
    x = np.linspace(-1, 1, 300)
    prog = program(call("sum", Binary("*", call("sin", Name("x")), Name("x"))))
    grad = np.cos(x) * x + np.sin(x)
    report = run_check(prog, {"x": x}, ["x"], {"x": grad}, lambda v: np.sum(np.sin(v["x"]) * v["x"]))
    g = report.gradients[0]
    assert g.symbolic_skipped == "too large for a symbolic check (300 elements > 256)"
    assert g.numeric_method == "direction"
    assert g.status == "skipped" and report.passed
    bad = run_check(prog, {"x": x}, ["x"], {"x": grad * 1.001},
                    lambda v: np.sum(np.sin(v["x"]) * v["x"]))
    assert bad.gradients[0].status == "mismatch"


# ---------------------------------------------------------------------------------------
# compare_gradient's rules, on hand-made references
# ---------------------------------------------------------------------------------------
def sym(value, kink=False, note=None):
    return SymbolicGradient("x", value=np.asarray(value, dtype=float),
                            kink=np.asarray(kink), note=note)


def central(value, kink=False, error=0.0):
    value = np.asarray(value, dtype=float)
    return NumericGradient("x", "central", value, np.full(value.shape, error),
                           np.asarray(kink) | np.zeros(value.shape, bool))


def test_sympy_kink_where_everything_agrees_is_ok():
    # |x|^2 at 0: sympy sees sign(0) but the function is differentiable there.
    assert compare_gradient("x", 0.0, sym(0.0, kink=True), central(0.0)).status == "ok"


def test_sympy_kink_with_disagreement_is_non_differentiable():
    check = compare_gradient("x", 0.0, sym(0.5, kink=True, note="Heaviside(0)"),
                             central(0.5, kink=True))
    assert check.status == "non-differentiable"
    assert "Heaviside(0)" in check.reason


def test_finite_differences_straddling_a_kink_defer_to_sympy():
    check = compare_gradient("x", 1.0, sym(1.0), central(0.4, kink=True))
    assert check.status == "ok"
    assert "straddle" in check.reason
    wrong = compare_gradient("x", 0.0, sym(1.0), central(0.4, kink=True))
    assert wrong.status == "mismatch"


def test_finite_difference_disagreement_is_a_mismatch_even_when_sympy_agrees():
    assert compare_gradient("x", 1.0, sym(1.0), central(1.5)).status == "mismatch"


def test_finite_difference_error_estimate_widens_the_allowance():
    assert compare_gradient("x", 1.0, None, central(1.01, error=0.02)).status == "skipped"
    assert compare_gradient("x", 1.0, None, central(1.01, error=0.0)).status == "mismatch"


def test_unconnected_tape_gradient_must_be_zero():
    ok = compare_gradient("x", None, sym(0.0), central(0.0))
    assert ok.status == "ok" and "None" in ok.reason
    assert ok.to_json()["tape"] is None
    assert compare_gradient("x", None, sym(2.0), central(2.0)).status == "mismatch"


def test_no_reference_at_all_is_skipped_with_both_reasons():
    check = compare_gradient("x", 1.0, SymbolicGradient("x", skipped="took longer than 5s"),
                             NumericGradient("x", "central", note="the target is not finite"))
    assert check.status == "skipped"
    assert check.reason == ("no reference value (sympy: took longer than 5s; finite "
                            "differences: the target is not finite)")


def test_array_verdict_names_the_first_bad_element():
    check = compare_gradient("x", np.array([[1.0, 2.0], [3.0, 4.0]]),
                             sym([[1.0, 2.0], [3.5, 4.0]]), central([[1.0, 2.0], [3.5, 4.0]]))
    assert check.status == "mismatch"
    assert check.reason.startswith("tape differs from sympy at x[1,0]: tape 3, sympy 3.5")


def test_shape_disagreement_is_a_mismatch():
    check = compare_gradient("x", np.zeros(3), sym(np.zeros(2)), None)
    assert check.status == "mismatch" and "shape" in check.reason


def test_equal_infinities_agree():
    check = compare_gradient("x", np.inf, sym(np.inf), None)
    assert check.abs_error == 0.0


def test_float32_tolerances_are_looser_and_options_override_both():
    loose = Tolerances.for_dtype("float32")
    assert loose.symbolic_rtol == 1e-3
    assert compare_gradient("x", 1.0001, sym(1.0), None, loose).status == "ok"
    assert compare_gradient("x", 1.0001, sym(1.0), None, Tolerances()).status == "mismatch"
    given = Tolerances.for_dtype("float64", rtol=0.1, atol=0.0)
    assert (given.symbolic_rtol, given.numeric_rtol, given.numeric_atol) == (0.1, 0.1, 0.0)


def test_json_object_schema_and_non_finite_numbers():
    report = CheckReport([compare_gradient("x", np.array([np.nan, np.inf, 1.0]),
                                           sym([np.nan, np.inf, 1.0]), None)])
    data = json.loads(json.dumps(report.to_json()))
    assert set(data) == {"passed", "verdict", "rtol", "atol", "gradients"}
    g = data["gradients"][0]
    assert g["tape"] == ["nan", "inf", 1.0]
    assert g["symbolic"] == ["nan", "inf", 1.0]
    assert g["numeric"] is None and g["numeric_method"] is None
    assert {"name", "status", "tape", "symbolic", "numeric", "numeric_method", "abs_error",
            "rel_error"} <= set(g)


# ---------------------------------------------------------------------------------------
# The whole function table: the engine's tape passes the check; a wrong rule does not
# ---------------------------------------------------------------------------------------
RNG = np.random.default_rng(3)
A23 = (2, 3)


def _sample(op, shape):
    lo, hi = op.sample
    return RNG.uniform(lo, hi, size=shape)


def table_check_cases():
    """(name, program, point, wrt, run) where run(values) applies the entry to
    engine values (Variables for wrt) or numpy arrays alike."""
    cases = []
    for name in ORDER:
        op = REGISTRY[name]
        if op.sympy is None or not op.differentiable or op.kind == "constructor":
            continue
        if op.samples is not None and op.kind == "linalg":
            # matrices a range cannot describe: the entry's own samples, as program text
            from table_samples import sample_programs

            from gradcli.lang import parse_program
            for label, text, point, _, run in sample_programs(name):
                cases.append((f"{name}-{label}", parse_program(text), point, list(point), run))
            continue
        if name in more_cases.CASES:  # the entries of more_ops.py
            functions = SimpleNamespace(**gc.FUNCTIONS)
            for text, call_, shapes in more_cases.CASES[name]:
                point = {n: _sample(op, s) for n, s in shapes.items()}
                cases.append((name, parse_program(text), point, list(shapes),
                              lambda v, c=call_: c(functions, v)))
            continue
        if name == "where":
            point = {"c": RNG.uniform(-1, 1, (3,)), "a": _sample(op, A23), "b": _sample(op, A23)}
            prog = program(call("where", Compare(">", Name("c"), Number(0.0)), Name("a"), Name("b")))
            def run(v, op=op):
                return ops.apply(op, (np.asarray(v["c"]) > 0, v["a"], v["b"]))
            cases.append((name, prog, point, ["a", "b"], run))
        elif op.variadic:
            point = {"a": _sample(op, A23), "b": _sample(op, A23)}
            prog = program(Call(name, (ArrayLit((Name("a"), Name("b"))),), (("axis", Number(1.0)),)))
            def run(v, op=op):
                return ops.apply(op, (v["a"], v["b"]), {"axis": 1})
            cases.append((name, prog, point, ["a", "b"], run))
        elif name == "reshape":
            point = {"x": _sample(op, A23)}
            prog = program(call("reshape", Name("x"), TupleLit((Number(3.0), Number(2.0)))))
            def run(v, op=op):
                return ops.apply(op, (v["x"],), {"shape": (3, 2)})
            cases.append((name, prog, point, ["x"], run))
        elif name == "clip":
            point = {"x": _sample(op, A23), "lo": np.array(-0.5), "hi": np.array(0.7)}
            prog = program(call("clip", Name("x"), Name("lo"), Name("hi")))
            def run(v, op=op):
                return ops.apply(op, (v["x"], v["lo"], v["hi"]))
            cases.append((name, prog, point, ["x", "lo", "hi"], run))
        else:
            names = list(op.inputs)
            if name in ("matmul", "dot"):
                shapes = [(2, 3), (3, 2)]
            elif op.elementwise:
                shapes = [A23] + [(3,)] * (len(names) - 1)
            else:
                shapes = [A23] * len(names)
            point = {n: _sample(op, s) for n, s in zip(names, shapes)}
            prog = program(Call(name, tuple(Name(n) for n in names)))
            def run(v, op=op, names=tuple(names)):
                return ops.apply(op, tuple(v[n] for n in names))
            cases.append((name, prog, point, names, run))
    return cases


def tape_gradients(run, point, wrt):
    sources = {n: gc.Variable(point[n]) for n in wrt}
    with gc.GradientTape() as tape:
        y = run({**point, **sources})
    grads = tape.gradient(y, [sources[n] for n in wrt])
    return {n: None if g is None else g.numpy() for n, g in zip(wrt, grads)}


def numeric_f(run):
    return lambda v: float(np.sum(np.asarray(run(v).numpy())))


@pytest.mark.slow
@pytest.mark.parametrize("case", table_check_cases(), ids=lambda c: c[0])
def test_every_differentiable_table_entry_passes_the_check(case):
    name, prog, point, wrt, run = case
    tape = tape_gradients(run, point, wrt)
    symbolic = symbolic_gradients(prog, point, wrt, in_process=True)
    numeric = numeric_gradient(numeric_f(run), point, wrt)
    for n in wrt:
        check = compare_gradient(n, tape[n], symbolic[n], numeric[n])
        assert check.status == "ok", (name, n, check.reason, symbolic[n].skipped)


def test_a_deliberately_wrong_backward_rule_is_caught():
    wrong = REGISTRY["sin"].replace(vjps=(lambda m, g, ans, x: g * m.sin(x),))
    point = {"x": np.array([0.3, 1.1, -0.7])}

    def run(v):
        return ops.apply(wrong, (v["x"],))
    report = run_check(program(call("sin", Name("x"))), point, ["x"],
                       tape_gradients(run, point, ["x"]), numeric_f(run))
    assert report.gradients[0].status == "mismatch"
    assert not report.passed
    assert report.to_json()["passed"] is False


def test_negative_literal_program():
    prog = program(Binary("*", Unary("-", Number(2.0)), Name("x")))
    report = run_check(prog, {"x": 1.0}, ["x"], {"x": -2.0}, lambda v: -2.0 * v["x"])
    assert report.passed and report.gradients[0].status == "ok"


# ---------------------------------------------------------------------------------------
# The command line's entry point: a built model and a mode's outcome
# ---------------------------------------------------------------------------------------
def _checked(text, mode, **options):
    from gradcli.check.compare import check_outcome
    from gradcli.lang import Declarations, parse_program
    from gradcli.lang.evaluate import build
    from gradcli.run.modes import ModeOptions, run_mode
    decls = Declarations.from_options(var=options.pop("var", ()), frozen=options.pop("frozen", ()),
                                      arg=options.pop("arg", ()))
    model = build(parse_program(text), decls, dtype=options.pop("dtype", "float64"))
    outcome = run_mode(mode, model, ModeOptions(**options))
    return check_outcome(model, outcome, timeout=5.0), model


def test_check_outcome_on_the_seed_in_every_mode():
    seed = {"var": ["w1=2", "w2=3"], "arg": ["x1=5", "x2=7"]}
    for mode, names in (("value-grad", ["w1", "w2"]), ("implicit", ["w1", "w2"]),
                        ("grad", ["x1", "x2"]), ("tape", ["w1", "w2"])):
        check, _ = _checked("w1 * x1 + w2 * x2", mode, **seed)
        assert check["passed"], check
        assert [g["name"] for g in check["gradients"]] == names
        assert all(g["status"] == "ok" for g in check["gradients"])


def test_check_outcome_on_intermediate_and_rebound_sources():
    check, _ = _checked("h = x * 2; y = sin(h)", "tape", arg=["x=0.3"], watch=["x"],
                        wrt=["h", "x"])
    assert [g["status"] for g in check["gradients"]] == ["ok", "ok"]
    assert check["gradients"][0]["numeric"] == pytest.approx(np.cos(0.6), rel=1e-8)
    # x rebound: as a tape source, x is still the declared argument (issue 9), so
    # y = (2 sin x)^2 and dy/dx = 8 sin(x) cos(x) = 4 sin(1)
    check, _ = _checked("x = sin(x) * 2; y = x * x", "tape", arg=["x=0.5"], watch=["x"],
                        wrt=["x"])
    g = check["gradients"][0]
    assert g["status"] == "ok", g
    assert g["symbolic"] == pytest.approx(4 * np.sin(1.0), rel=1e-12)
    assert g["numeric"] == pytest.approx(4 * np.sin(1.0), rel=1e-8)


def test_check_outcome_leaves_the_users_variables_alone():
    check, model = _checked("sum(w * x)", "implicit", var=["w=[1, 2]"], arg=["x=[3, 4]"])
    assert check["passed"]
    assert model.variables["w"].numpy().tolist() == [1.0, 2.0]


def test_check_outcome_float32_program():
    check, _ = _checked("sum(tanh(w * x))", "implicit", var=["w=[0.5, -1.5]"], arg=["x=[0.3, 0.7]"],
                        dtype="float32")
    assert check["passed"] and check["rtol"]["symbolic"] == 1e-3
    assert check["gradients"][0]["status"] == "ok"


def test_check_outcome_kink_and_program_variables():
    check, _ = _checked("w = Variable(0.0); c = constant(2.0); abs(w) * c", "implicit")
    g = check["gradients"][0]
    assert g["name"] == "w" and g["status"] == "non-differentiable"


def test_symbolic_texts_for_the_command_line():
    from gradcli.check.compare import symbolic_texts
    from gradcli.lang import Declarations, parse_program
    from gradcli.lang.evaluate import build
    from gradcli.run.modes import run_mode
    model = build(parse_program("w1 * x1 + w2 * x2"),
                  Declarations.from_options(var=["w1=2", "w2=3"], arg=["x1=5", "x2=7"]))
    assert symbolic_texts(model, run_mode("value-grad", model)) == {"w1": "x1", "w2": "x2"}


def test_unwatched_tape_source_is_skipped_not_a_mismatch():
    check = compare_gradient("x", None, sym(2.0), central(2.0), none_may_be_right=True)
    assert check.status == "skipped" and "did not watch" in check.reason
    cli, _ = _checked("x * 2", "tape", arg=["x=1"], wrt=["x"])
    assert cli["gradients"][0]["status"] == "skipped"
    # Nothing was compared, so the check does not claim to have passed (nor failed).
    assert cli["verdict"] == "nothing to check" and cli["passed"] is False
