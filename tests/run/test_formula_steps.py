"""``gradcli diff --steps`` (issue 22, part 5): every step's derivative against central
differences of its own sub-expression (the independent truth), at random points; the
rules a textbook names; the final line checked, and a wrong rule caught."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cli_process import run_here as run
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.errors import InputError
from gradcli.lang import parse_expression
from gradcli.run import steps as steps_module
from gradcli.run.steps import diff_with_steps, table_rule, text
from test_diff import formula_at

H = 1e-6

TEXTBOOK = [
    # (program, the range its variables are drawn from)
    ("sin(x^2)*exp(x)", (-2, 2)),
    ("3*x^4 - 2*x^3 + x - 7", (-2, 2)),
    ("(x^2 + 1)*(x^3 - x)", (-2, 2)),
    ("(x + 1)/(x^2 + 2)", (-2, 2)),
    ("1/x + x/3", (0.5, 2)),
    ("sqrt(1 + x^2)", (-2, 2)),
    ("exp(-x^2/2)*cos(3*x)", (-2, 2)),
    ("log(x^2 + 1) - tan(x/2)", (-2, 2)),
    ("sinh(x)*cosh(2*x) - tanh(x)^3", (-1.5, 1.5)),
    ("arctan(x)/(1 + x^2) + arcsin(x/2)", (-1.5, 1.5)),
    ("x^x", (0.3, 2)),
    ("x^(1/3)*2^x", (0.3, 2)),
    ("e^(2*x) - 10^x", (-1, 1)),
    ("abs(x)*x + abs(x - 1)", (-2, 2)),
    ("maximum(x, x^2) + where(x > 0, x^3, -x)", (-2, 2)),
    ("sigmoid(2*x) + softplus(x) + erf(x)", (-2, 2)),
    ("x % 0.7 + hypot(x, 2) + arctan2(x, 3)", (0.1, 2)),
    ("u = x^2\nv = sin(u)\nv*u - 3*x", (-2, 2)),
    ("u = x\nu = u*u + 1\nw = u/x\nw + u", (0.5, 2)),
    ("c = constant(2.5)\nc*x^2 + exp(c*x)", (-1, 1)),
]


def _finite_difference(expression: str, values: dict, name: str) -> float:
    up, down = dict(values), dict(values)
    up[name] += H
    down[name] -= H
    return (formula_at(expression, up) - formula_at(expression, down)) / (2 * H)


def _check_every_step(result, low_high, seed=0):
    rng = np.random.default_rng(seed)
    for derivative in result.derivatives:
        derivation = derivative.steps
        assert derivation.disagreement is None, derivation.disagreement
        assert derivation.points >= 8 and derivation.max_rel_err <= 1e-8
        name = derivation.wrt
        for step in derivation.steps:
            expression, its_derivative = step.standalone
            for _ in range(3):
                values = {v: float(rng.uniform(*low_high)) for v in result.variables}
                got = formula_at(its_derivative, values)
                truth = _finite_difference(expression, values, name)
                assert got == pytest.approx(truth, rel=1e-5, abs=1e-5), (step, values)


@pytest.mark.parametrize("program,low_high", TEXTBOOK, ids=[t[0] for t in TEXTBOOK])
def test_every_step_against_central_differences(program, low_high):
    result = diff_with_steps(program)
    _check_every_step(result, low_high)


def test_the_students_example_rule_by_rule():
    [d] = diff_with_steps("sin(x^2)*exp(x)").derivatives
    rows = [(s.rule, s.expression, s.derivative) for s in d.steps.steps]
    assert rows == [
        ("power rule", "x^2", "2*x"),
        ("chain rule", "sin(x^2)", "cos(x^2)*(2*x)"),
        ("table rule", "exp(x)", "exp(x)"),
        ("product rule", "sin(x^2)*exp(x)", "cos(x^2)*(2*x)*exp(x) + sin(x^2)*exp(x)"),
    ]
    assert "sin'(x) = cos(x)" in d.steps.steps[1].law       # the table's own words
    assert d.steps.result == "cos(x^2)*(2*x)*exp(x) + sin(x^2)*exp(x)"


def test_rules_named_as_a_textbook_names_them():
    def rules(program):
        [d] = diff_with_steps(program).derivatives
        return [s.rule for s in d.steps.steps]
    assert rules("x^x") == ["general power rule"]
    assert rules("2^x") == ["exponential rule"]
    assert rules("(x + 1)/(x - 1)") == ["sum rule", "difference rule", "quotient rule"]
    assert rules("-cos(x)") == ["table rule", "negation"]
    assert rules("u = x^3\n5*u") == ["power rule", "intermediate name",
                                     "constant multiple rule"]


def test_intermediate_names_stay_in_their_statements():
    [d] = diff_with_steps("u = x^2\nv = sin(u)\nv*u").derivatives
    by_expression = {s.expression: s for s in d.steps.steps}
    assert by_expression["sin(u)"].derivative == "cos(u)*(2*x)"
    assert by_expression["sin(u)"].within == "v"
    assert by_expression["sin(u)"].standalone == ("sin(x^2)", "cos(x^2)*(2*x)")
    assert d.steps.result == "cos(x^2)*(2*x)*x^2 + sin(x^2)*(2*x)"


def test_several_variables_give_a_derivation_each():
    result = diff_with_steps("x*y^2 + exp(x*y)")
    assert [d.steps.wrt for d in result.derivatives] == ["x", "y"]
    _check_every_step(result, (-1.5, 1.5))


TABLE = [n for n in ORDER if REGISTRY[n].elementwise and REGISTRY[n].sympy is not None
         and REGISTRY[n].differentiable and n not in ("where",)
         and not REGISTRY[n].derivative.startswith("not differentiable")]


@pytest.mark.parametrize("name", TABLE)
def test_each_table_function_rule_against_central_differences(name):
    """The rule --steps uses for each entry, at points of its sample range (away from
    the jumps of steps): d/dx f(x, c...) equals central differences of f."""
    op = REGISTRY[name]
    partials, _ = table_rule(name)
    assert len(partials) == len(op.inputs)
    rng = np.random.default_rng(1)
    call = f"{name}({', '.join(op.inputs)})"
    for _ in range(4):
        values = {v: float(rng.uniform(*op.sample)) for v in op.inputs}
        if name in ("mod", "fmod", "floor_divide"):
            values[op.inputs[1]] = 0.7
        for v, partial in zip(op.inputs, partials):
            got = formula_at(text(partial), values)
            truth = _finite_difference(call, values, v)
            assert got == pytest.approx(truth, rel=1e-5, abs=1e-5), (name, v, values)


def test_the_tables_own_words_are_the_rule_where_they_are_a_formula():
    assert table_rule("sin")[1] and text(table_rule("sin")[0][0]) == "cos(x)"
    assert table_rule("divide")[1]                      # "1/y, -x/y^2"
    assert [text(p) for p in table_rule("divide")[0]] == ["1/y", "-x/y^2"]
    assert not table_rule("sigmoid")[1]                 # prose: "sigmoid(x) (1 - ...)"


def test_a_wrong_rule_is_caught_by_the_final_check(monkeypatch):
    wrong = {"sin": ((parse_expression("-cos(x)"),), True)}
    real = steps_module.table_rule
    monkeypatch.setattr(steps_module, "table_rule", lambda n: wrong.get(n) or real(n))
    [d] = diff_with_steps("sin(x^2)").derivatives
    assert d.steps.disagreement is not None and "verified formula" in d.steps.disagreement


@pytest.mark.parametrize("source", ["-x^2", "(-2)^x", "x^(-1)", "2*-x", "a - (b - c)",
                                    "a - b - c", "x^y^z", "(x^y)^z", "-(-x)", "a/(b*c)",
                                    "where(x > 0, -x, x^2)", "(x + 1)^2*3"])
def test_the_printer_reads_back_to_the_same_tree(source):
    tree = parse_expression(source)
    assert parse_expression(text(tree)) == tree


def test_what_steps_do_not_follow_is_refused():
    with pytest.raises(InputError, match="elementwise"):
        diff_with_steps("sum([x, 2*x])")
    with pytest.raises(InputError, match="scalar"):
        diff_with_steps("[x, x^2]")


@pytest.mark.slow
def test_the_command_in_three_outputs():
    human = run("diff", "sin(x^2)*exp(x)", "--steps")
    assert human.returncode == 0, human.stderr
    assert "product rule" in human.stdout and "equals the verified formula for d/dx" in human.stdout
    plain = run("diff", "x^x", "--steps", "--plain", "--arg", "x=1")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines() == ["d/dx x^x = x^x*(log(x) + x/x)",
                                         "= x^x*(log(x) + x/x)", "x^x*(log(x) + 1) = 1.0"]
    out = run("diff", "u = x^2\nu*y", "--steps", "--json", "--wrt", "x")
    assert out.returncode == 0, out.stderr
    [d] = json.loads(out.stdout)["derivatives"]
    assert [s["rule"] for s in d["steps"]] == ["power rule", "intermediate name",
                                               "constant multiple rule"]
    assert d["steps_result"] == {"formula": "2*x*y", "points": 8, "max_rel_err": 0.0,
                                 "agrees": True}
    refused = run("diff", "x^3", "--steps", "--order", "2")
    assert refused.returncode == 2 and "first derivatives" in refused.stderr


def test_derivations_that_grow_too_large_are_refused_not_slow():
    with pytest.raises(InputError, match="20,000 characters"):
        diff_with_steps("*".join(["x"] * 150))
    with pytest.raises(InputError, match="cannot read the derivation's last line back"):
        diff_with_steps("*".join(["x"] * 110))      # its brackets nest past 100
    with pytest.raises(InputError, match="deeper than 200"):
        diff_with_steps("+".join(["x^2"] * 300))


def test_declarations_constants_and_the_target():
    result = diff_with_steps("c*x^2 + w*x", frozen=["c=3"], var=["w=2"])
    assert [d.steps.result for d in result.derivatives] == ["3*(2*x) + w", "x"]
    _check_every_step(result, (-2, 2))
    program = "x = Variable(2.0)\nk = constant(4.0)\ny = k*sin(x)\nz = y^2\nw = z + y\ny + 1"
    [d] = diff_with_steps(program, target="z").derivatives
    assert d.steps.result == "2*(4*sin(x))*(4*cos(x))"        # of z, not of y + 1
    assert d.steps.steps[-1].expression == "z" and d.steps.disagreement is None
    _check_every_step(diff_with_steps(program, target="z"), (-2, 2))


def test_the_variable_alone_and_a_constant_have_one_step():
    [d] = diff_with_steps("x").derivatives
    assert [(s.rule, s.expression, s.derivative) for s in d.steps.steps] == [
        ("variable", "x", "1")]
    dx, dy = diff_with_steps("x + 0*y", frozen=[]).derivatives
    assert dx.steps.result == "1" and dy.steps.result == "0"
