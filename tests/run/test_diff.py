"""``gradcli diff``: derivatives as formulas (issue 22, parts 1, 2, 3 and 8).

The truth is sympy's own derivative of an expression built here with sympy (never from
gradcli's output), evaluated with sympy at random points, and exact values where the
math gives them. What is tested of gradcli is the formula it prints, parsed back by its
own parser and evaluated by its engine, as a user pasting it back would.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from cli_process import run_here as run
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.lang import Declarations, build, parse_program
from gradcli.run import formulas


def diff(text: str, **options):
    """``gradcli diff`` as the library runs it, with time for sympy to simplify: these tests
    assert the simplified formulas, and the user's 2 s budget can run out on a loaded
    machine (a test of the budget itself passes its own)."""
    options.setdefault("budget", 60.0)
    return formulas.diff(text, **options)

x, y, z = sp.symbols("x y z", real=True)
SYMBOLS = {"x": x, "y": y, "z": z}


def formula_at(formula: str, values: dict) -> float:
    """The printed formula, pasted back into gradcli as a program, at ``values``."""
    program = parse_program(formula)
    used = [n for n in values if n in formula]
    model = build(program, Declarations.from_options(arg=used))
    model.bind({n: np.float64(values[n]) for n in used})
    return float(model.function(*model.arg_values).numpy())


def sympy_at(expr, values: dict) -> float:
    return float(expr.subs({SYMBOLS[n]: sp.Float(v, 30) for n, v in values.items()}).evalf(30))


def assert_same_function(formula: str, truth, names, low, high, seed=1, points=6):
    rng = np.random.default_rng(seed)
    for _ in range(points):
        values = {n: float(rng.uniform(low, high)) for n in names}
        expected = sympy_at(truth, values)
        got = formula_at(formula, values)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), (formula, values)


# ---------------------------------------------------------------------------------------
# The whole function table
# ---------------------------------------------------------------------------------------
def _table_entries():
    """Every elementwise entry with a sympy form, one or two inputs and no parameters,
    that gives a number (the comparisons give true/false, which has no derivative)."""
    out = []
    for name in ORDER:
        op = REGISTRY[name]
        if (op.elementwise and op.sympy is not None and 1 <= len(op.inputs) <= 2
                and not op.params and op.kind != "comparison"):
            form = op.sympy(sp, *[x, y][:len(op.inputs)])
            if isinstance(form, sp.Expr):
                out.append(name)
    return out


TABLE = _table_entries()


def test_the_table_list_is_the_table():
    assert len(TABLE) > 50 and "arctan" in TABLE and "maximum" in TABLE


@pytest.mark.slow
@pytest.mark.parametrize("name", TABLE)
def test_every_table_function_derivative_parses_back_to_sympys(name):
    op = REGISTRY[name]
    names = ["x", "y"][:len(op.inputs)]
    result = diff(f"{name}({', '.join(names)})")
    assert result.verified, [d.disagreement for d in result.derivatives]
    form = op.sympy(sp, *[SYMBOLS[n] for n in names])
    low, high = op.sample
    for d in result.derivatives:
        assert d.printable, d.note
        assert "**" not in d.formula and "sympy" not in d.formula
        truth = sp.diff(form, SYMBOLS[d.wrt[0]])
        truth = truth.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.Integer(0))
        if truth.has(sp.Derivative):  # floor, ceil, trunc: 0 away from the steps
            truth = truth.replace(lambda e: isinstance(e, sp.Derivative), lambda e: sp.Integer(0)).doit()
        assert_same_function(d.formula, truth, names, low, high)


# ---------------------------------------------------------------------------------------
# A textbook list
# ---------------------------------------------------------------------------------------
TEXTBOOK = [
    ("x^3 - 3*x", 3 * x**2 - 3, (-2, 2)),
    ("x^7 - 2*x^4 + 5", 7 * x**6 - 8 * x**3, (-2, 2)),
    ("x^2 * sin(x)", 2 * x * sp.sin(x) + x**2 * sp.cos(x), (-2, 2)),
    ("(x^2 + 1) / (x - 3)", sp.diff((x**2 + 1) / (x - 3), x), (-2, 2)),
    ("exp(sin(x^2))", sp.exp(sp.sin(x**2)) * sp.cos(x**2) * 2 * x, (-2, 2)),
    ("log(cosh(x))", sp.tanh(x), (-2, 2)),
    ("tan(x)", 1 + sp.tan(x)**2, (-1.2, 1.2)),
    ("tanh(x)", 1 - sp.tanh(x)**2, (-2, 2)),
    ("arcsinh(x) * exp(-x)", sp.diff(sp.asinh(x) * sp.exp(-x), x), (-2, 2)),
    ("x^x", x**x * (sp.log(x) + 1), (0.2, 3)),
    ("sqrt(1 + x^2)", x / sp.sqrt(1 + x**2), (-2, 2)),
    ("log(x) / x", (1 - sp.log(x)) / x**2, (0.2, 3)),
    ("abs(x) * x", 2 * sp.Abs(x), (-2, 2)),          # d/dx x|x| = 2|x|
    ("maximum(x^2, 1)", sp.Piecewise((2 * x, sp.Abs(x) > 1), (0, True)), (-2, 2)),
]


@pytest.mark.parametrize("program,truth,bounds", TEXTBOOK, ids=[t[0] for t in TEXTBOOK])
def test_textbook_derivatives(program, truth, bounds):
    result = diff(program)
    [d] = result.derivatives
    assert d.printable and d.disagreement is None and d.points == 8
    assert_same_function(d.formula, truth, ["x"], *bounds)


def test_the_issues_examples_are_printed_simplified_in_gradcli_notation():
    [d] = diff("x^3 - 3*x").derivatives
    assert d.formula == "3*x^2 - 3" and d.simplified
    dx, dy = diff("atan(x/y)").derivatives
    assert dx.formula == "y/(x^2 + y^2)" and dy.formula == "-x/(x^2 + y^2)"
    assert dx.latex == r"\frac{y}{x^{2} + y^{2}}"


def test_raw_is_sympys_derivative_unsimplified():
    [d] = diff("atan(x/y)", raw=True, wrt=["x"]).derivatives
    assert d.form == "raw"
    assert_same_function(d.formula, y / (x**2 + y**2), ["x", "y"], 0.5, 2)


def test_hessian_symmetric_entries_once_and_mixed_partial():
    f = x * y * sp.exp(-x**2 - y**2)
    result = diff("x*y*exp(-x^2-y^2)", order=2)
    assert [d.wrt for d in result.derivatives] == [("x", "x"), ("x", "y"), ("y", "y")]
    for d in result.derivatives:
        assert_same_function(d.formula, sp.diff(f, *[SYMBOLS[n] for n in d.wrt]),
                             ["x", "y"], -2, 2)
    [d] = diff("x^3*y^2 + sin(x*y)", partial=["x", "x", "y"]).derivatives
    assert_same_function(d.formula, sp.diff(x**3 * y**2 + sp.sin(x * y), x, x, y),
                         ["x", "y"], -2, 2)


def test_jacobian_of_a_vector_program():
    result = diff("[x*y, sin(x) + y^2]")
    assert [(d.element, d.wrt) for d in result.derivatives] == [
        ((0,), ("x",)), ((0,), ("y",)), ((1,), ("x",)), ((1,), ("y",))]
    truths = [y, x, sp.cos(x), 2 * y]
    for d, truth in zip(result.derivatives, truths):
        assert_same_function(d.formula, truth, ["x", "y"], -2, 2)


def test_constants_are_put_in_and_variables_stay():
    [d] = diff("c*x^2", frozen=["c=3"]).derivatives
    assert d.formula == "6*x"
    [d] = diff("c = constant(2.5)\nc*x").derivatives
    assert d.formula == "2.5"
    result = diff("w = Variable(2.0)\nw*x^2")
    assert {d.wrt[0]: d.formula for d in result.derivatives} == {"x": "2*w*x", "w": "x^2"}


def test_a_point_gives_the_value_there():
    [d] = diff("x^3 - 3*x", arg=["x=2"]).derivatives
    assert d.value == 9.0 and d.points == 9      # 3*2^2 - 3, and the point is checked


def test_a_formula_that_disagrees_with_the_tape_is_reported(monkeypatch):
    """A printer that gets a formula wrong (here: made to add 1e-3) is caught."""
    from gradcli.check import notation
    real = notation.to_gradcli
    monkeypatch.setattr(notation, "to_gradcli", lambda e: real(e) + " + 0.001")
    [d] = diff("sin(x)").derivatives
    assert d.disagreement and "the tape" in d.disagreement
    assert not diff("sin(x)").verified


def test_what_gradcli_cannot_spell_is_said_not_hidden():
    from gradcli.check import notation
    from gradcli.run.formulas import Derivative, Form, settle
    with pytest.raises(notation.Unprintable):
        notation.to_gradcli(sp.gamma(x))
    d = Derivative(wrt=("x",))
    settle(d, [Form("raw", sp.gamma(x))], [], ["x"], 0, raw=True)
    assert not d.printable and "sympy's notation" in d.note and d.formula == "gamma(x)"


def _given_expressions(sp_, job, emit):
    """A worker computation that "differentiates" to the expressions it is given."""
    for key, expr in enumerate(job["exprs"]):
        emit(str(key), (expr,))


def test_the_forms_shared_out_among_workers_are_sympys_forms_of_each_derivative(monkeypatch):
    """The simplifying workers take the forms one at a time from a shared counter: each
    form is made once and lands on its own derivative (sympy's expand, factor and
    simplify of each, computed here), and what runs meanwhile here comes back."""
    monkeypatch.setattr(formulas, "cores", lambda: 3)  # three workers, whatever the machine
    exprs = [(x + 1)**2 * (x - 2), sp.sin(x)**2 + sp.cos(x)**2 + x, x**3 / (x**2 - 1),
             sp.exp(x) * (x + 1) - sp.exp(x)]
    job = {"compute": _given_expressions, "exprs": exprs}
    forms, meanwhile = formulas.raw_and_simplified(job, len(exprs), 60.0, False, "diff",
                                                   lambda: "ran")
    assert meanwhile == "ran"
    for expr, made in zip(exprs, forms):
        assert (made[0].name, made[0].expression) == ("raw", expr)
        assert {f.name: f.expression for f in made} == {
            "raw": expr, "expand": sp.expand(expr), "factor": sp.factor(expr),
            "simplify": sp.simplify(expr)}
        assert [f.operations for f in made] == [sp.count_ops(f.expression) for f in made]


# ---------------------------------------------------------------------------------------
# The command as a user runs it
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_command_outputs_and_errors():
    out = run("diff", "x^3 - 3*x", "--arg", "x=2", "--json", "--simplify-timeout", "60")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["mode"] == "diff" and obj["program"] == "x^3 - 3*x"
    [d] = obj["derivatives"]
    assert d["wrt"] == ["x"] and d["formula"] == "3*x^2 - 3" and d["value"] == 9.0
    assert d["simplified"] is True and d["verified"]["points"] == 9
    assert d["verified"]["max_rel_err"] <= 1e-12 and d["latex"] == "3 x^{2} - 3"

    plain = run("diff", "atan(x/y)", "--plain")
    assert plain.returncode == 0 and plain.stdout == "y/(x^2 + y^2)\n-x/(x^2 + y^2)\n"
    human = run("diff", "x^3 - 3*x")
    assert human.returncode == 0
    assert "d/dx = 3*x^2 - 3" in human.stdout and "agrees with the tape at 8 points" \
        in human.stdout

    for args in (["x +"], ["x^2", "--wrt", "z"], ["x < 1"], ["x^2", "--order", "9"],
                 ["stop_gradient(x)*x"], ["x^2", "--json", "--plain"]):
        bad = run("diff", *args)
        assert bad.returncode == 2 and bad.stdout == "" and "Traceback" not in bad.stderr
        assert len(bad.stderr.strip().splitlines()) <= 3, bad.stderr


# ---------------------------------------------------------------------------------------
# --taylor (issue 22, part 4): the truth is the series worked out by hand
# ---------------------------------------------------------------------------------------
def test_taylor_polynomials_against_known_series():
    from gradcli.run.taylor import taylor
    exp = taylor("exp(x)", ["x=0"], 4)
    assert [c["value"] for c in exp.coefficients] == pytest.approx(
        [1, 1, 1 / 2, 1 / 6, 1 / 24], rel=1e-15)
    assert exp.disagreement is None and exp.max_rel_err <= 1e-15
    cubic = taylor("x^3 - 3*x", ["x=2"], 3)                      # (x-2)^3 + 6(x-2)^2 + 9(x-2) + 2
    assert cubic.polynomial == "(x - 2)^3 + 6*(x - 2)^2 + 9*(x - 2) + 2"
    two = taylor("sin(x)*cos(y)", ["x=0,y=0"], 3)                # x - x^3/6 - x*y^2/2
    values = {tuple(c["powers"].values()): c["value"] for c in two.coefficients}
    assert values[(1, 0)] == 1 and values[(3, 0)] == pytest.approx(-1 / 6, rel=1e-15)
    assert values[(1, 2)] == pytest.approx(-1 / 2, rel=1e-15)
    assert all(v == 0 for k, v in values.items() if k not in ((1, 0), (3, 0), (1, 2)))
    assert formula_at(two.polynomial, {"x": 0.3, "y": 0.2}) == pytest.approx(
        0.3 - 0.3**3 / 6 - 0.3 * 0.2**2 / 2, rel=1e-14)


def test_taylor_where_there_is_none():
    from gradcli.errors import InputError
    from gradcli.run.taylor import taylor
    with pytest.raises(InputError, match="no Taylor polynomial"):
        taylor("sqrt(x)", ["x=0"], 2)
    with pytest.raises(InputError, match="give y a value"):
        taylor("x*y", ["x=1"], 2)
