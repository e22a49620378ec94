"""Issue 11: ``gradcli grad --order N``, the N-th pure partial derivatives, against
sympy's ``diff(f, x, N)``."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from typer.testing import CliRunner

from cli_process import run

from gradcli.cli.app import app


def grad_json(*args) -> dict:
    result = CliRunner().invoke(app, ["grad", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_third_derivative_of_x2_sin_x_equals_sympy():
    out = grad_json("x^2*sin(x)", "--arg", "x=1.3", "--order", "3")
    x = sp.Symbol("x", real=True)
    truth = float(sp.diff(x ** 2 * sp.sin(x), x, 3).subs(x, sp.Rational(13, 10)).evalf(30))
    assert out["mode"] == "grad"
    assert out["order"] == 3
    [g] = out["gradients"]
    assert g["name"] == "x"
    assert g["gradient"] == pytest.approx(truth, rel=1e-13)


@pytest.mark.slow
@pytest.mark.parametrize("order", range(1, 11))
def test_every_order_up_to_ten_equals_sympy(order):
    out = grad_json("exp(-x/2)*cos(3*x)", "--arg", "x=0.4", "--order", order)
    x = sp.Symbol("x", real=True)
    truth = float(sp.diff(sp.exp(-x / 2) * sp.cos(3 * x), x, order).subs(
        x, sp.Rational(2, 5)).evalf(30))
    assert out["gradients"][0]["gradient"] == pytest.approx(truth, rel=1e-11)


def test_order_one_is_the_gradient():
    plain = grad_json("x^3*y", "--arg", "x=2", "--arg", "y=5")
    first = grad_json("x^3*y", "--arg", "x=2", "--arg", "y=5", "--order", "1")
    assert first["order"] == 1
    assert first["gradients"] == plain["gradients"] == [{"name": "x", "gradient": 60.0},
                                                        {"name": "y", "gradient": 8.0}]


def test_pure_partials_per_argument_hold_the_others():
    out = grad_json("x^3*y^4", "--arg", "x=2", "--arg", "y=3", "--order", "2")
    # d2/dx2 = 6 x y^4, d2/dy2 = 12 x^3 y^2
    assert out["gradients"] == [{"name": "x", "gradient": 6 * 2 * 3 ** 4},
                                {"name": "y", "gradient": 12 * 2 ** 3 * 3 ** 2}]
    assert "hessian" in out["note"]


def test_params_choose_the_arguments():
    out = grad_json("x^3*y^4", "--arg", "x=2", "--arg", "y=3", "--order", "3",
                    "--params", "y")
    assert out["gradients"] == [{"name": "y", "gradient": 24 * 2 ** 3 * 3}]
    assert "note" not in out


def test_derivative_beyond_the_degree_is_zero():
    out = grad_json("x^2", "--arg", "x=5", "--order", "4")
    assert out["gradients"] == [{"name": "x", "gradient": 0.0}]


def test_order_two_with_several_arguments_points_to_hessian_in_human_output():
    result = CliRunner().invoke(app, ["grad", "x*y", "--arg", "x=1", "--arg", "y=2",
                                      "--order", "2"])
    assert result.exit_code == 0, result.output
    assert "gradcli hessian" in result.stdout


def test_plain_prints_one_line_per_argument():
    result = CliRunner().invoke(app, ["grad", "x^3*y^4", "--arg", "x=2", "--arg", "y=3",
                                      "--order", "2", "--plain"])
    assert result.stdout.splitlines() == ["972.0", "864.0"]


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["x", "--arg", "x=1", "--order", "11"], "between 1 and 10"),
    (["x", "--arg", "x=1", "--order", "0"], "between 1 and 10"),
    (["sum(x)", "--arg", "x=[1, 2]", "--order", "2"], "scalar arguments"),
    (["x*y", "--arg", "x=1", "--arg", "y=2", "--order", "2", "--params", "z"], "unknown"),
])
def test_bad_order_input_is_one_message_and_exit_2(args, words):
    result = run("grad", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert words in result.stderr


@pytest.mark.slow
def test_check_and_symbolic_for_an_order():
    result = run("grad", "x^2*sin(x)", "--arg", "x=1.3", "--order", "3", "--check",
                 "--symbolic", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    [g] = out["check"]["gradients"]
    assert g["status"] == "ok"
    x = sp.Symbol("x", real=True)
    truth = sp.diff(x ** 2 * sp.sin(x), x, 3)
    assert sp.simplify(sp.sympify(out["gradients"][0]["symbolic"],
                                  locals={"x": x}) - truth) == 0
    assert np.isclose(g["numeric"], float(truth.subs(x, 1.3)), rtol=1e-6)
