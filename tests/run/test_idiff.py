"""``gradcli idiff`` (issue 22, part 7): implicit differentiation against sympy's own
``idiff`` of the same equation, built here with sympy, at random points; the values at a
point on the curve exactly where the math gives them."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from cli_process import run
from gradcli.errors import InputError
from gradcli.run.idiff import idiff
from test_diff import formula_at

x, y = sp.symbols("x y", real=True)

EQUATIONS = [
    ("x^3 + y^3 = 6*x*y", x**3 + y**3 - 6 * x * y),
    ("x^2 + y^2 = 25", x**2 + y**2 - 25),
    ("sin(x*y) = x", sp.sin(x * y) - x),
    ("exp(y) + x*y = e", sp.exp(y) + x * y - sp.E),
    ("y^5 + x^2*y = 3*x + 1", y**5 + x**2 * y - 3 * x - 1),
]


@pytest.mark.parametrize("text,F", EQUATIONS, ids=[e[0] for e in EQUATIONS])
def test_against_sympys_idiff(text, F):
    result = idiff(text, dep="y", wrt="x", order=2)
    assert result.verified
    rng = np.random.default_rng(3)
    for d, order in zip(result.derivatives, (1, 2)):
        truth = sp.idiff(F, y, x, order)
        for _ in range(5):
            values = {"x": float(rng.uniform(0.3, 1.7)), "y": float(rng.uniform(0.3, 1.7))}
            expected = float(truth.subs({x: values["x"], y: values["y"]}).evalf(30))
            assert formula_at(d.formula, values) == pytest.approx(expected, rel=1e-9), d.formula


def test_a_point_on_the_curve_gives_the_numbers():
    first, second = idiff("x^2 + y^2 = 25", dep="y", wrt="x", order=2,
                          arg=["x=3", "y=4"]).derivatives
    assert first.value == -0.75 and second.value == -25 / 64   # -x/y, -(x^2+y^2)/y^3


def test_a_point_off_the_curve_or_no_equation_is_refused():
    with pytest.raises(InputError, match="not on the curve"):
        idiff("x^2 + y^2 = 25", dep="y", wrt="x", arg=["x=3", "y=3"])
    with pytest.raises(InputError, match="one '='"):
        idiff("x^2 + y^2", dep="y", wrt="x")
    with pytest.raises(InputError, match="one '='"):
        idiff("x = y = 1", dep="y", wrt="x")
    with pytest.raises(InputError, match="--dep z"):
        idiff("x^2 + y^2 = 1", dep="z", wrt="x")


@pytest.mark.slow
def test_the_command():
    out = run("idiff", "x^3 + y^3 = 6*x*y", "--dep", "y", "--wrt", "x", "--arg", "x=3",
              "--arg", "y=3", "--json")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["mode"] == "idiff" and obj["dep"] == "y"
    [d] = obj["derivatives"]
    assert d["value"] == -1.0          # (x^2 - 2y)/(2x - y^2) at (3, 3): 3/-3
    off = run("idiff", "x^2 + y^2 = 25", "--dep", "y", "--wrt", "x", "--arg", "x=3",
              "--arg", "y=3")
    assert off.returncode == 2 and "not on the curve" in off.stderr and off.stdout == ""
