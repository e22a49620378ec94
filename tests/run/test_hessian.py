"""Issue 11: ``gradcli hessian`` and ``gc.hessians_function``.

Truths are independent of the engine: sympy's ``hessian`` of the same expression, exact
values where the maths gives them, and central differences of the gradient written out
here in numpy.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from central_differences import numeric_hessian
from cli_process import run

import gradcli as gc
from gradcli.cli.app import app
from gradcli.run.derivatives import classify


def hessian_json(*args) -> dict:
    result = CliRunner().invoke(app, ["hessian", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def sympy_hessian(expr: str, order: list[str], point: dict) -> np.ndarray:
    symbols = sp.symbols(order, real=True)
    f = sp.sympify(expr, locals=dict(zip(order, symbols)))  # test text, not user text
    h = sp.hessian(f, symbols).subs({s: point[n] for s, n in zip(symbols, order)})
    return np.array(h.tolist(), dtype=float)


# ---------------------------------------------------------------------------------------
# The examples
# ---------------------------------------------------------------------------------------
def test_seed_example_has_ones_at_weight_input_pairs_and_is_not_critical():
    out = hessian_json("w1*x1 + w2*x2", "--var", "w1=2", "--var", "w2=3", "--arg", "x1=5",
                       "--arg", "x2=7", "--wrt", "x1,x2,w1,w2")
    assert out["labels"] == ["x1", "x2", "w1", "w2"]
    truth = sympy_hessian("w1*x1 + w2*x2", out["labels"], {"w1": 2, "w2": 3, "x1": 5, "x2": 7})
    assert out["hessian"] == truth.tolist()
    h = np.array(out["hessian"])
    i = out["labels"].index
    assert h[i("w1"), i("x1")] == h[i("x1"), i("w1")] == 1.0
    assert h[i("w2"), i("x2")] == h[i("x2"), i("w2")] == 1.0
    assert np.count_nonzero(h) == 4
    assert out["gradient"] == [2.0, 3.0, 5.0, 7.0]
    assert out["value"] == 31.0
    assert out["verdict"] == "not-critical"
    assert out["critical"] is False


def test_rosenbrock_hessian_at_1_2_and_1_is_exact():
    out = hessian_json("(1-x)^2 + 100*(y-x^2)^2", "--arg", "x=1.2", "--arg", "y=1")
    assert out["hessian"] == [[1330.0, -480.0], [-480.0, 200.0]]
    truth = sympy_hessian("(1-x)**2 + 100*(y-x**2)**2", ["x", "y"],
                          {"x": sp.Rational(6, 5), "y": 1})
    assert out["hessian"] == truth.tolist()
    assert out["verdict"] == "not-critical"


def test_rosenbrock_at_its_minimum_is_a_minimum():
    out = hessian_json("(1-x)^2 + 100*(y-x^2)^2", "--arg", "x=1", "--arg", "y=1")
    assert out["gradient"] == [0.0, 0.0]
    assert out["hessian"] == sympy_hessian("(1-x)**2 + 100*(y-x**2)**2", ["x", "y"],
                                           {"x": 1, "y": 1}).tolist()
    truth = np.linalg.eigvalsh(np.array([[802.0, -400.0], [-400.0, 200.0]]))
    np.testing.assert_allclose(out["eigenvalues"], truth, rtol=1e-12)
    assert out["verdict"] == "minimum"


def test_difference_of_squares_at_origin_is_a_saddle():
    out = hessian_json("x^2 - y^2", "--arg", "x=0", "--arg", "y=0")
    assert out["hessian"] == [[2.0, 0.0], [0.0, -2.0]]
    assert out["eigenvalues"] == [-2.0, 2.0]
    assert out["verdict"] == "saddle"


def test_fourth_power_at_zero_is_degenerate():
    out = hessian_json("x^4", "--arg", "x=0")
    assert out["hessian"] == [[0.0]]
    assert out["verdict"] == "degenerate"


def test_negative_paraboloid_at_top_is_a_maximum():
    out = hessian_json("3 - x^2 - 2*y^2 + x*y", "--arg", "x=0", "--arg", "y=0")
    assert out["verdict"] == "maximum"


# ---------------------------------------------------------------------------------------
# Arrays, labels and truths for larger programs
# ---------------------------------------------------------------------------------------

def test_array_sources_are_flattened_with_element_labels():
    w = [[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]]
    out = hessian_json("sum(tanh(W @ x))", "--var", f"W={w}", "--arg", "x=[0.7, -1.1, 0.4]",
                       "--wrt", "x,W")
    assert out["labels"] == ["x[0]", "x[1]", "x[2]", "W[0,0]", "W[0,1]", "W[0,2]",
                             "W[1,0]", "W[1,1]", "W[1,2]"]

    def f(z):
        x, wm = z[:3], z[3:].reshape(2, 3)
        return float(np.sum(np.tanh(wm @ x)))
    z = np.concatenate([[0.7, -1.1, 0.4], np.ravel(w)])
    np.testing.assert_allclose(out["hessian"], numeric_hessian(f, z), atol=1e-6)
    np.testing.assert_allclose(out["hessian"], np.array(out["hessian"]).T, atol=1e-15)


def test_wrt_selects_and_orders_the_sources():
    out = hessian_json("x^2*y^3 + z", "--arg", "x=2", "--arg", "y=3", "--arg", "z=1",
                       "--wrt", "y,x")
    assert out["labels"] == ["y", "x"]
    assert out["hessian"] == sympy_hessian("x**2*y**3", ["y", "x"], {"x": 2, "y": 3}).tolist()


def test_frozen_variable_can_be_named_with_wrt():
    out = hessian_json("c*x^2", "--frozen", "c=3", "--arg", "x=2", "--wrt", "x,c")
    assert out["hessian"] == [[6.0, 4.0], [4.0, 0.0]]


# ---------------------------------------------------------------------------------------
# Refusals (exit 2, nothing on standard output)
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["sin(x)", "--arg", "x=[1, 2]"], "scalar target"),
    (["x", "--arg", "x=1", "--wrt", "y"], "unknown source 'y'"),
    (["y = 2*x; y", "--arg", "x=1", "--wrt", "y"], "computed by the program"),
    (["c = constant(2); c*x", "--arg", "x=1", "--wrt", "c"], "is a constant"),
    (["2 + 3"], "needs something to differentiate"),
    (["x < 1", "--arg", "x=0"], "boolean"),
    (["sum(x)", "--arg", "x=zeros((0,))"], "have no elements"),
])
def test_bad_hessian_input_is_one_message_and_exit_2(args, words):
    result = run("hessian", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert words in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------
# The verdict's rules
# ---------------------------------------------------------------------------------------
def test_indefinite_hessian_beside_a_zero_eigenvalue_is_still_a_saddle():
    assert classify(np.zeros(3), np.diag([1.0, 0.0, -1.0]))["verdict"] == "saddle"


def test_semidefinite_hessian_is_degenerate():
    assert classify(np.zeros(2), np.diag([1.0, 0.0]))["verdict"] == "degenerate"


def test_gradient_within_rounding_of_zero_is_critical():
    # cos(pi/2) in float64 is 6.1e-17, not 0: still the top of sin
    out = hessian_json("sin(x)", "--arg", "x=pi/2")
    assert out["gradient"][0] != 0.0
    assert out["verdict"] == "maximum"


def test_gradient_tolerance_is_relative_to_curvature_and_point():
    # 1e-20 * (x-1)^2 at 0: the gradient is tiny, but so is the curvature: not critical
    out = hessian_json("1e-20 * (x - 1)^2", "--arg", "x=0")
    assert out["verdict"] == "not-critical"
    # adding a huge constant changes nothing
    out = hessian_json("1e12 + (x - 1)^2", "--arg", "x=1.001")
    assert out["verdict"] == "not-critical"


def test_non_finite_hessian_is_undefined():
    out = hessian_json("sqrt(x)", "--arg", "x=0")
    assert out["verdict"] == "undefined"
    assert out["eigenvalues"] is None


def test_asymmetric_hessian_from_a_wrong_rule_is_reported(monkeypatch):
    from gradcli.engine.core import table
    # d(x*y)/dy is x; this rule says x^2, so d/dx of it (2x) differs from d/dy of y (1)
    multiply = table.REGISTRY["multiply"]
    wrong = multiply.replace(vjps=(multiply.vjps[0], lambda m, g, ans, x, y: g * x * x))
    monkeypatch.setitem(table.REGISTRY, "multiply", wrong)
    result = CliRunner().invoke(app, ["hessian", "x*y", "--arg", "x=2", "--arg", "y=3",
                                      "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["hessian"] == [[0.0, 1.0], [4.0, 0.0]]
    assert out["symmetric"] is False
    assert out["asymmetry"] == 3.0
    human = CliRunner().invoke(app, ["hessian", "x*y", "--arg", "x=2", "--arg", "y=3"])
    assert "not symmetric" in human.stdout
    assert "rule is wrong" in human.stdout


# ---------------------------------------------------------------------------------------
# Output forms and --check
# ---------------------------------------------------------------------------------------
def test_plain_prints_value_gradient_rows_eigenvalues_and_verdict():
    result = CliRunner().invoke(app, ["hessian", "x^2 - y^2", "--arg", "x=0", "--arg", "y=0",
                                      "--plain"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["0.0", "0.0 0.0", "2.0 0.0", "0.0 -2.0",
                                          "-2.0 2.0", "saddle"]


def test_human_output_explains_the_verdict():
    result = CliRunner().invoke(app, ["hessian", "(1-x)^2 + 100*(y-x^2)^2", "--arg", "x=1",
                                      "--arg", "y=1"])
    assert result.exit_code == 0, result.output
    assert "verdict: minimum" in result.stdout
    assert "positive definite" in result.stdout


@pytest.mark.slow
def test_check_passes_against_sympy_and_finite_differences():
    result = run("hessian", "sum(W^2)*x + sin(x*W[0,1])", "--var", "W=[[1, 2]]", "--arg",
                 "x=0.5", "--wrt", "x,W", "--check", "--json")
    assert result.returncode == 0, result.stderr
    check = json.loads(result.stdout)["check"]
    assert check["verdict"] == "passed"
    assert [g["name"] for g in check["gradients"]] == [
        "gradient", "hessian row x", "hessian row W[0,0]", "hessian row W[0,1]"]
    assert all(g["status"] == "ok" for g in check["gradients"])
    assert all(g["symbolic"] is not None and g["numeric"] is not None
               for g in check["gradients"])


def test_check_finds_a_wrong_second_derivative(monkeypatch):
    from gradcli.engine.core import table
    multiply = table.REGISTRY["multiply"]
    wrong = multiply.replace(vjps=(multiply.vjps[0], lambda m, g, ans, x, y: g * x * x))
    monkeypatch.setitem(table.REGISTRY, "multiply", wrong)
    result = CliRunner().invoke(app, ["hessian", "x*y", "--arg", "x=2", "--arg", "y=3",
                                      "--check", "--json"])
    assert result.exit_code == 1, result.output
    check = json.loads(result.stdout)["check"]
    assert check["verdict"] == "mismatch"
    statuses = {g["name"]: g["status"] for g in check["gradients"]}
    assert statuses["hessian row y"] == "mismatch"


# ---------------------------------------------------------------------------------------
# The library: gc.hessians_function
# ---------------------------------------------------------------------------------------
def test_hessians_function_gives_every_block_like_sympy():
    x, y = sp.symbols("x y", real=True)
    f = x ** 3 * sp.sin(y) + x * y
    truth = sp.hessian(f, (x, y)).subs({x: 1.5, y: 0.5})
    blocks = gc.hessians_function(lambda a, b: a ** 3 * gc.sin(b) + a * b)(1.5, 0.5)
    got = [[float(block) for block in row] for row in blocks]
    np.testing.assert_allclose(got, np.array(truth.tolist(), dtype=float), rtol=1e-14)


def test_hessians_function_block_shapes_and_values_for_arrays():
    w = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    x = np.array([0.7, -1.1, 0.4])
    blocks = gc.hessians_function(lambda W, v: gc.sum(gc.tanh(W @ v)))(w, x)
    assert [[b.shape for b in row] for row in blocks] == [[(2, 3, 2, 3), (2, 3, 3)],
                                                          [(3, 2, 3), (3, 3)]]

    def f(z):
        return float(np.sum(np.tanh(z[:6].reshape(2, 3) @ z[6:])))
    full = numeric_hessian(f, np.concatenate([w.ravel(), x]))
    np.testing.assert_allclose(blocks[0][1].numpy().reshape(6, 3), full[:6, 6:], atol=1e-6)
    np.testing.assert_allclose(blocks[1][1].numpy(), full[6:, 6:], atol=1e-6)


def test_hessians_function_params_and_zero_blocks():
    blocks = gc.hessians_function(lambda x, y: x * y, params=["y"])(2.0, 3.0)
    assert [[float(b) for b in row] for row in blocks] == [[0.0]]


def test_hessians_function_is_itself_differentiable():
    # d/dx of (d2/dx2 x^5) = 60 x^2
    x = gc.constant(2.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        [[h]] = gc.hessians_function(lambda v: v ** 5)(x)
    assert float(h) == 20 * 2.0 ** 3
    assert float(tape.gradient(h, x)) == 60 * 2.0 ** 2


# ---------------------------------------------------------------------------------------
# A property: the Hessian of smooth programs equals sympy's at random points
# ---------------------------------------------------------------------------------------
EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "60"))
SMOOTH = [  # (program text, the same in sympy's syntax: test text, never user text)
    ("sin(x)*exp(y) + x^3*y", "sin(x)*exp(y) + x**3*y"),
    ("tanh(x*y) - log(1 + x^2 + y^2)", "tanh(x*y) - log(1 + x**2 + y**2)"),
    ("sqrt(1 + x^2) * cos(y - x) / (2 + sin(y))",
     "sqrt(1 + x**2) * cos(y - x) / (2 + sin(y))"),
    ("sigmoid(x) * softplus(y) + hypot(x, y)",
     "1/(1 + exp(-x)) * log(1 + exp(y)) + sqrt(x**2 + y**2)"),
]


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from(SMOOTH), st.floats(-2, 2), st.floats(-2, 2))
def test_hessian_of_smooth_programs_equals_sympy(program, x, y):
    from gradcli.run.derivatives import hessian
    from gradcli.lang import Declarations, build, parse_program
    if abs(x) + abs(y) < 1e-3:  # hypot's second derivative is unbounded at the origin
        return
    text, sympy_text = program
    result = hessian(build(parse_program(text), Declarations.from_options(
        arg=[f"x={x!r}", f"y={y!r}"])))
    truth = sympy_hessian(sympy_text, ["x", "y"], {"x": x, "y": y})
    np.testing.assert_allclose(result.hessian, truth, rtol=1e-9, atol=1e-12)
    assert result.symmetric


# ---------------------------------------------------------------------------------------
# Issue 20 (6): the verdict never contradicts the eigenvalues
# ---------------------------------------------------------------------------------------
def exact_verdict(sympy_text: str, order: list[str], point: dict) -> tuple[str, float]:
    """The second-derivative test decided exactly: sympy's gradient and the eigenvalues
    (``Matrix.eigenvals``) of its Hessian, from the formula and the point as exact
    rationals. Gives (verdict, condition number: inf when an eigenvalue is 0)."""
    symbols = sp.symbols(order, real=True)
    f = sp.sympify(sympy_text, locals=dict(zip(order, symbols)), rational=True)
    at = {s: sp.Rational(point[n]) for s, n in zip(symbols, order)}
    gradient = [sp.diff(f, s).subs(at) for s in symbols]
    eigenvalues = [ev for ev, k in sp.hessian(f, symbols).subs(at).eigenvals().items()
                   for _ in range(k)]
    signs = [0 if sp.simplify(ev) == 0 else (1 if sp.re(ev.evalf(60)) > 0 else -1)
             for ev in eigenvalues]
    sizes = [abs(float(sp.re(ev.evalf(60)))) for ev in eigenvalues]
    condition = math.inf if 0 in signs else max(sizes) / min(sizes)
    if any(g != 0 for g in gradient):
        return "not-critical", condition
    if 1 in signs and -1 in signs:
        return "saddle", condition
    if 0 in signs:
        return "degenerate", condition
    return ("minimum" if 1 in signs else "maximum"), condition


# (program, the same formula in sympy's syntax: test text, never user text, point)
VERDICT_CASES = [
    ("x^2 - 1e-9*y^2", "x**2 - 1e-9*y**2", {"x": "0", "y": "0"}),
    ("x^2 + 1e-9*y^2", "x**2 + 1e-9*y**2", {"x": "0", "y": "0"}),
    ("-x^2 - 1e-12*y^2", "-x**2 - 1e-12*y**2", {"x": "0", "y": "0"}),
    ("x^2 - 1e-14*y^2", "x**2 - 1e-14*y**2", {"x": "0", "y": "0"}),
    ("1e-14*x^2 + y^2", "1e-14*x**2 + y**2", {"x": "0", "y": "0"}),
    ("x^2 + 2*x*y + (1 + 1e-9)*y^2", "x**2 + 2*x*y + (1 + 1e-9)*y**2", {"x": "0", "y": "0"}),
    ("x^2 + y^2 + x*y - 1e-12*z^2", "x**2 + y**2 + x*y - 1e-12*z**2",
     {"x": "0", "y": "0", "z": "0"}),
    ("x^4 + y^2", "x**4 + y**2", {"x": "0", "y": "0"}),
    ("x^3 - y^2", "x**3 - y**2", {"x": "0", "y": "0"}),
    ("x^2", "x**2", {"x": "0", "y": "1.5"}),           # y declared, absent: H = diag(2, 0)
    ("1e8*(x^2 + y^2)", "1e8*(x**2 + y**2)", {"x": "0", "y": "0"}),
    ("1e8*(x^2 - y^2)", "1e8*(x**2 - y**2)", {"x": "0", "y": "0"}),
    ("1e-8*(x^2 + y^2)", "1e-8*(x**2 + y**2)", {"x": "0", "y": "0"}),
    ("(1-x)^2 + 100*(y-x^2)^2", "(1-x)**2 + 100*(y-x**2)**2", {"x": "1", "y": "1"}),
    ("x^2 - 1e-9*y^2", "x**2 - 1e-9*y**2", {"x": "0", "y": "1"}),  # gradient -2e-9
    # 1 + 2^-30, exact in float64: the gradient 2^-29 is small, and not 0
    ("(x - 1)^2 + y^2", "(x - 1)**2 + y**2", {"x": "1.000000000931322574615478515625",
                                              "y": "0"}),
    ("1e8*(x^2 + y^2)", "1e8*(x**2 + y**2)", {"x": "1e-6", "y": "0"}),
]


@pytest.mark.parametrize("program, sympy_text, point", VERDICT_CASES)
def test_verdict_is_the_exact_second_derivative_test(program, sympy_text, point):
    args = [a for name, value in point.items() for a in ("--arg", f"{name}={value}")]
    out = hessian_json(program, *args)
    verdict, _ = exact_verdict(sympy_text, list(point), point)
    assert out["verdict"] == verdict


@pytest.mark.parametrize("program, sympy_text, point", VERDICT_CASES)
def test_condition_number_is_the_exact_one(program, sympy_text, point):
    args = [a for name, value in point.items() for a in ("--arg", f"{name}={value}")]
    out = hessian_json(program, *args)
    _, condition = exact_verdict(sympy_text, list(point), point)
    if math.isinf(condition):
        assert out["condition_number"] == "inf"
    else:
        assert out["condition_number"] == pytest.approx(condition, rel=1e-6)


def assert_verdict_follows_eigenvalues(out: dict) -> None:
    """What a reader checks by eye: the verdict against the printed eigenvalues' signs
    beyond the printed tolerance."""
    ev, tol = np.array(out["eigenvalues"], dtype=float), out["zero_tolerance"]
    positive, negative = bool(np.any(ev > tol)), bool(np.any(ev < -tol))
    if not out["critical"]:
        assert out["verdict"] == "not-critical"
    elif positive and negative:
        assert out["verdict"] == "saddle"
    elif np.any(np.abs(ev) <= tol):
        assert out["verdict"] == "degenerate"
    else:
        assert out["verdict"] == ("minimum" if positive else "maximum")


@pytest.mark.parametrize("program, sympy_text, point", VERDICT_CASES[:6])
def test_printed_verdict_follows_printed_eigenvalues(program, sympy_text, point):
    args = [a for name, value in point.items() for a in ("--arg", f"{name}={value}")]
    out = hessian_json(program, *args)
    assert_verdict_follows_eigenvalues(out)
    # the tolerance is the rounding bound, far below the smallest eigenvalue here
    assert 0 < out["zero_tolerance"] < 1e-14


@st.composite
def quadratic_forms(draw):
    """``Q diag(lambda) Q^T`` built in numpy from known eigenvalues: magnitudes from 1e-14
    to 1e2 times a scale from 1e-8 to 1e8, random signs, some exactly 0."""
    n = draw(st.integers(1, 6))
    scale = 10.0 ** draw(st.integers(-8, 8))
    eigenvalues = np.array([draw(st.sampled_from([-1.0, 0.0, 1.0]))
                            * 10.0 ** draw(st.floats(-14, 2)) for _ in range(n)]) * scale
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return eigenvalues, q @ np.diag(eigenvalues) @ q.T


def assert_agrees_with_known_eigenvalues(verdict: str, eigenvalues, tol: float) -> None:
    """The verdict at a critical point against the eigenvalues the matrix was built
    from: the stated tolerance bounds rounding, so twice it separates them from 0; and
    it is of rounding's order (n eps ||H||, generously), not a cut like sqrt(eps)."""
    n, eps = len(eigenvalues), np.finfo(np.float64).eps
    assert tol <= 100 * n * eps * np.max(np.abs(eigenvalues))
    strong_positive = bool(np.any(eigenvalues > 2 * tol))
    strong_negative = bool(np.any(eigenvalues < -2 * tol))
    if strong_positive and strong_negative:
        assert verdict == "saddle"
    elif np.all(np.abs(eigenvalues) > 2 * tol):
        assert verdict == ("minimum" if strong_positive else "maximum")
    if verdict == "saddle":
        assert np.any(eigenvalues > 0) and np.any(eigenvalues < 0)
    if verdict == "minimum":
        assert np.all(eigenvalues > 0)
    if verdict == "maximum":
        assert np.all(eigenvalues < 0)
    if verdict == "degenerate":
        assert np.min(np.abs(eigenvalues)) <= 2 * tol


@pytest.mark.slow
@settings(max_examples=EXAMPLES * 5, deadline=None)
@given(quadratic_forms())
def test_verdict_of_a_quadratic_form_agrees_with_its_known_eigenvalues(form):
    eigenvalues, matrix = form
    out = classify(np.zeros(len(eigenvalues)), matrix)
    assert_agrees_with_known_eigenvalues(out["verdict"], eigenvalues, out["zero_tolerance"])
    assert_verdict_follows_eigenvalues({**out, "eigenvalues": out["eigenvalues"].tolist()})
    # the condition number is infinite exactly when the test calls an eigenvalue 0
    assert math.isinf(out["condition_number"]) == bool(
        np.any(np.abs(out["eigenvalues"]) <= out["zero_tolerance"]))


def test_plain_verdict_is_one_token_for_every_verdict():
    cases = {"minimum": ["x^2", "--arg", "x=0"], "maximum": ["-x^2", "--arg", "x=0"],
             "saddle": ["x^2 - y^2", "--arg", "x=0", "--arg", "y=0"],
             "degenerate": ["x^4", "--arg", "x=0"],
             "not-critical": ["x^2", "--arg", "x=1"],
             "undefined": ["sqrt(x)", "--arg", "x=0"]}
    for verdict, args in cases.items():
        result = CliRunner().invoke(app, ["hessian", *args, "--plain"])
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1] == verdict
        assert hessian_json(*args)["verdict"] == verdict


@pytest.mark.parametrize("args", [
    ["x^4", "--arg", "x=0"],                                 # H = 0, critical
    ["x^4 + y", "--arg", "x=0", "--arg", "y=0"],             # H = 0, not critical
    ["x^2 - 1e-9*y^2", "--arg", "x=0", "--arg", "y=0"],
    ["x^2", "--arg", "x=0", "--arg", "y=2"],
])
def test_human_verdict_states_tolerance_and_condition_number_and_never_a_zero_one(args):
    result = CliRunner().invoke(app, ["hessian", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    out = hessian_json(*args)
    assert "within 0" not in text and "tolerance 0 " not in text + " "
    assert "<= 0 " not in text + " " and "<= 0)" not in text
    condition = out["condition_number"]
    shown = "inf" if condition == "inf" else format(condition, ".3g")
    assert f"condition number {shown}" in text
    if out["zero_tolerance"] > 0:
        assert f"|eigenvalue| <= {out['zero_tolerance']:.3g}" in text
    else:
        assert "the Hessian is 0" in text


@settings(max_examples=EXAMPLES, deadline=None)
@given(quadratic_forms())
def test_tape_hessian_of_a_quadratic_form_has_the_verdict_of_its_eigenvalues(form):
    from gradcli.run.derivatives import hessian
    from gradcli.lang import Declarations, build, parse_program
    eigenvalues, matrix = form
    n = len(eigenvalues)
    # 0.5 x^T A x at 0: gradient 0, Hessian A, computed by the tape's nested passes
    result = hessian(build(parse_program("sum(x * (A @ x)) / 2"), Declarations.from_options(
        arg=[f"x={[0.0] * n}"], frozen=[f"A={matrix.tolist()}"])))
    assert result.critical
    assert_agrees_with_known_eigenvalues(result.verdict, eigenvalues, result.zero_tolerance)
