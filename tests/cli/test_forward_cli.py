"""``gradcli jvp`` and compare's jvp row, as a user runs them; ``functions --json`` says
which entries have forward and reverse rules."""
import json

import numpy as np
import pytest
import sympy as sp
from test_cli import run, run_json

from gradcli.check.directional import check_jvp
from gradcli.run.directional import parse_tangents, run_jvp
from gradcli.engine.core.table import REGISTRY
from gradcli.lang import Declarations, build, parse_program


def test_jvp_json_is_the_value_and_the_directional_derivative():
    out = run_json("jvp", "x^2 * y", "--arg", "x=3", "--arg", "y=2",
                   "--tangent", "x=1", "--tangent", "y=0.5")
    # d(x^2 y) = 2xy dx + x^2 dy = 12 + 4.5
    assert out == {"mode": "jvp", "value": 18.0, "jvp": 16.5}


@pytest.mark.slow
def test_jvp_of_a_vector_target_matches_sympy_element_by_element():
    out = run_json("jvp", "tanh(W @ x)", "--var", "W=[[1, 2], [0.5, -1]]",
                   "--arg", "x=[0.3, -0.2]", "--tangent", "W=[[1, 0], [0, 2]]",
                   "--tangent", "x=[0.5, 1]")
    s = sp.symbols("s")
    W = sp.Matrix([[1, 2], [0.5, -1]]) + s * sp.Matrix([[1, 0], [0, 2]])
    x = sp.Matrix([0.3, -0.2]) + s * sp.Matrix([0.5, 1])
    expected = [float(sp.diff(sp.tanh(e), s).subs(s, 0)) for e in W * x]
    np.testing.assert_allclose(out["jvp"], expected, rtol=1e-12)


@pytest.mark.slow
def test_one_number_fills_an_array_tangent():
    out = run_json("jvp", "sum(x^2)", "--arg", "x=[1, 2, 3]", "--tangent", "x=1")
    assert out["jvp"] == 12.0


@pytest.mark.slow
def test_a_target_the_tangents_do_not_reach_has_a_zero_jvp():
    out = run_json("jvp", "y * 2", "--arg", "x=1", "--arg", "y=[1, 2]", "--tangent", "x=1")
    assert out["jvp"] == [0.0, 0.0]


@pytest.mark.slow
def test_variables_declared_in_the_program_take_tangents():
    out = run_json("jvp", "w = Variable(2.0); w^3 * x", "--arg", "x=5", "--tangent", "w=1")
    assert out == {"mode": "jvp", "value": 40.0, "jvp": 60.0}


@pytest.mark.slow
def test_jvp_plain_prints_the_value_then_the_jvp():
    result = run("jvp", "[x^2, 3*x]", "--arg", "x=2", "--tangent", "x=1", "--plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "4.0 6.0\n4.0 3.0\n"


@pytest.mark.slow
def test_jvp_check_agrees_with_sympy_and_finite_differences():
    out = run_json("jvp", "sin(x) * exp(y)", "--arg", "x=0.5", "--arg", "y=-1",
                   "--tangent", "x=2", "--tangent", "y=1", "--check")
    entry = out["check"]["gradients"][0]
    assert out["check"]["verdict"] == "passed" and entry["name"] == "jvp"
    expected = (2 * np.cos(0.5) + np.sin(0.5)) * np.exp(-1)
    assert entry["symbolic"] == pytest.approx(expected, rel=1e-15)
    assert entry["numeric"] == pytest.approx(expected, rel=1e-8)
    assert out["jvp"] == pytest.approx(expected, rel=1e-15)


@pytest.mark.slow
def test_jvp_check_of_a_vector_target_checks_the_summed_jvp():
    out = run_json("jvp", "[x^2, x^3]", "--arg", "x=2", "--tangent", "x=1", "--check")
    entry = out["check"]["gradients"][0]
    assert entry["name"] == "sum(jvp)" and entry["tape"] == 16.0
    assert entry["status"] == "ok"


def test_jvp_check_catches_a_wrong_forward_rule():
    sin = REGISTRY["sin"]
    right = sin.jvps
    object.__setattr__(sin, "jvps", (lambda m, t, ans, x: t * ans,))  # sin' = sin: wrong
    try:
        model = build(parse_program("sin(x)"), Declarations.from_options(arg=["x=0.5"]))
        outcome = run_jvp(model, parse_tangents(model, ["x=1"]))
        check = check_jvp(model, outcome)
    finally:
        object.__setattr__(sin, "jvps", right)
    assert float(outcome.jvp) == np.sin(0.5)
    assert check["verdict"] == "mismatch"


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    ((), "needs a direction"),
    (("--tangent", "z=1"), "unknown name 'z'"),
    (("--tangent", "h=1"), "only arguments and variables"),
    (("--tangent", "x=1", "--tangent", "x=2"), "given twice"),
    (("--tangent", "x=[1, 2, 3]"), "shape (3,)"),
    (("--tangent", "x=[1, 2"), ""),
    (("--tangent", "x"), "NAME=VALUE"),
])
def test_bad_tangents_are_one_message_and_exit_2(args, message):
    result = run("jvp", "h = x * 2; sum(h)", "--arg", "x=[1, 2]", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("tangent, message", [
    ("x=nan", "--tangent x: a value can use only numbers, pi, e, inf and functions, not "
              "the name 'nan'"),
    ("x=[1, 2", "--tangent x: '[' was never closed"),
    ("x=@missing.npy", "--tangent x: missing.npy: cannot read file"),
    ("x", "--tangent: expected NAME=VALUE, got 'x'"),
    ("=1", "--tangent: invalid name ''"),
])
def test_every_bad_tangent_value_names_its_option_as_arg_does(tangent, message):
    result = run("jvp", "x^2", "--arg", "x=[3, 4]", "--tangent", tangent)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"error: {message}"), result.stderr


@pytest.mark.slow
def test_compare_gains_a_jvp_row_with_tangents_only():
    without = run_json("compare", "w * x", "--var", "w=2", "--arg", "x=3")
    assert "jvp" not in without
    out = run_json("compare", "w * x", "--var", "w=2", "--arg", "x=3", "--tangent", "w=1")
    assert out["jvp"] == {"mode": "jvp", "value": 6.0, "jvp": 3.0}
    assert out["tape"]["gradients"] == [{"name": "w", "gradient": 3.0}]


@pytest.mark.slow
def test_functions_json_says_which_entries_have_forward_and_reverse_rules():
    result = run("functions", "--json")
    entries = {e["name"]: e for e in json.loads(result.stdout)["functions"]}
    assert entries["sin"]["forward"] and entries["sin"]["reverse"]
    assert not entries["less"]["forward"] and not entries["less"]["reverse"]
    assert all(e["forward"] == e["reverse"] for e in entries.values())


@pytest.mark.slow
def test_compare_with_tangents_and_check_checks_the_jvp_row_too():
    out = run_json("compare", "w * sin(x)", "--var", "w=2", "--arg", "x=0.5",
                   "--tangent", "w=1", "--tangent", "x=2", "--check")
    entry = out["jvp"]["check"]["gradients"][0]
    assert out["jvp"]["check"]["verdict"] == "passed" and entry["name"] == "jvp"
    assert entry["symbolic"] == pytest.approx(np.sin(0.5) + 2 * 2 * np.cos(0.5), rel=1e-15)
    assert out["tape"]["check"]["verdict"] == "passed"


@pytest.mark.slow
def test_jvp_human_output_is_literal_text():
    # brackets of arrays are printed, not read as rich markup
    result = run("jvp", "x * 2", "--arg", "x=[1, 2]", "--tangent", "x=[1, 0]")
    assert result.returncode == 0, result.stderr
    assert "jvp (directional derivative): [2.0, 0.0]  shape (2,)" in result.stdout


@pytest.mark.parametrize("program,decls", [
    ("[x*y, sin(x), x^2]", ["--arg", "x=1", "--arg", "y=2"]),
    ("tanh(W @ x) * 2", ["--var", "W=[[1, 2], [3, 4], [0.5, -1]]", "--arg", "x=[0.3, -0.2]"]),
    ("y * 3", ["--arg", "x=[1, 2]", "--arg", "y=[1, 2, 3]"]),
])
def test_jacobian_by_forward_mode_equals_reverse_mode(program, decls):
    forward = run_json("jacobian", program, *decls, "--mode", "fwd")
    reverse = run_json("jacobian", program, *decls, "--mode", "rev")
    assert forward["computed_by"] == "forward" and reverse["computed_by"] == "reverse"
    assert forward["value"] == reverse["value"]
    for f, r in zip(forward["jacobians"], reverse["jacobians"]):
        assert (f["name"], f["shape"], f["connected"]) == (r["name"], r["shape"], r["connected"])
        np.testing.assert_allclose(f["jacobian"], r["jacobian"], rtol=1e-14, atol=0)


@pytest.mark.slow
def test_jacobian_auto_takes_forward_mode_for_fewer_source_elements():
    out = run_json("jacobian", "[x, 2*x, 3*x]", "--arg", "x=1", "--mode", "auto")
    assert out["computed_by"] == "forward" and out["jacobians"][0]["jacobian"] == [1, 2, 3]
    out = run_json("jacobian", "sum(x)", "--arg", "x=[1, 2]", "--mode", "auto")
    assert out["computed_by"] == "reverse"
