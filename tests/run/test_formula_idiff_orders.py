"""``gradcli idiff --order N`` beyond 2 (issue 22, part 7): each order's formula against
sympy's own ``idiff`` of the same equation (evaluated exactly, at rational points: its
floats cancel badly where F_y is small), the tape's numbers at a point on the curve
against values worked out by hand, and the cap."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from cli_process import run_here as run
from gradcli.errors import InputError
from gradcli.run.idiff import MAX_ORDER, idiff
from test_diff import formula_at

x, y = sp.symbols("x y", real=True)

CURVES = [
    pytest.param("x^2 + y^2 = 25", x**2 + y**2 - 25, id="circle"),
    pytest.param("x^3 + y^3 = 6*x*y", x**3 + y**3 - 6 * x * y, id="folium"),
    pytest.param("exp(x*y) = x + y", sp.exp(x * y) - x - y,   # (sympy's idiff: ~20 s)
                 marks=pytest.mark.slow, id="exp(x*y) = x + y"),
    pytest.param("sin(x*y) = x", sp.sin(x * y) - x, id="sin(x*y) = x"),
]


@pytest.mark.parametrize("text,F", CURVES)
def test_orders_1_to_4_against_sympys_idiff(text, F):
    result = idiff(text, dep="y", wrt="x", order=4)
    assert result.verified and len(result.derivatives) == 4
    rng = np.random.default_rng(7)
    points = [(sp.Rational(int(rng.integers(3, 17)), 10),
               sp.Rational(int(rng.integers(3, 17)), 10)) for _ in range(4)]
    for order, d in enumerate(result.derivatives, start=1):
        assert d.wrt == ("x",) * order
        truth = sp.idiff(F, y, x, order)
        for px, py in points:
            if sp.diff(F, y).subs({x: px, y: py}) == 0:
                continue
            expected = float(truth.subs({x: px, y: py}))
            got = formula_at(d.formula, {"x": float(px), "y": float(py)})
            assert got == pytest.approx(expected, rel=1e-9), (order, d.formula)


def test_the_tapes_numbers_on_the_circle_are_exact():
    # y = sqrt(25 - x^2) at x = 3, y = 4: y' = -x/y, y'' = -25/y^3, y''' = -75x/y^5,
    # y'''' = -375 x^2/y^7 - 75/y^5 (differentiated by hand along the curve)
    values = [d.value for d in idiff("x^2 + y^2 = 25", dep="y", wrt="x", order=4,
                                     arg=["x=3", "y=4"]).derivatives]
    assert values == pytest.approx([-3 / 4, -25 / 64, -225 / 1024,
                                    -375 * 9 / 4**7 - 75 / 4**5], rel=1e-14)


def test_order_six_is_the_cap():
    assert MAX_ORDER == 6
    with pytest.raises(InputError, match="between 1 and 6"):
        idiff("x^2 + y^2 = 25", dep="y", wrt="x", order=7)
    with pytest.raises(InputError, match="between 1 and 6"):
        idiff("x^2 + y^2 = 25", dep="y", wrt="x", order=0)


@pytest.mark.slow
def test_the_command_refuses_order_7_and_gives_order_3():
    refused = run("idiff", "x^2 + y^2 = 25", "--dep", "y", "--wrt", "x", "--order", "7")
    assert refused.returncode == 2 and "between 1 and 6" in refused.stderr
    out = run("idiff", "x^2 + y^2 = 25", "--dep", "y", "--wrt", "x", "--order", "3",
              "--arg", "x=3", "--arg", "y=4", "--plain")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and lines[2].endswith("= -0.2197265625")   # -225/1024
