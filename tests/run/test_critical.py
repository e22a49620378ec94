"""``gradcli critical`` (issue 22, part 6): functions whose critical points are known.

The truth: the points and their kinds worked out by hand (x^3 - 3x: +-1; x^2 - y^2: a
saddle at 0; x*y*exp(-x^2-y^2): a saddle at 0 and four extrema at (+-1/sqrt2, +-1/sqrt2);
Rosenbrock: a minimum at (1, 1)), and Himmelblau's four minima as the literature gives
them (one exact: (3, 2)), with its gradient written out here in numpy for the others.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cli_process import run_here as run
from gradcli.run.critical import critical


def kinds(result) -> list:
    return [(tuple(round(v, 9) for v in p.at.values()), p.verdict) for p in result.points]


# Where a test asserts what sympy found, it gives sympy time to find it: the default budget
# (1 s of compute) is the user's, and a loaded machine can spend it all on a cubic.
SOLVE = 60.0


def test_a_cubic():
    result = critical("x^3 - 3*x", arg=["x=-3:3"], solve_timeout=SOLVE)
    assert kinds(result) == [((-1.0,), "maximum"), ((1.0,), "minimum")]
    assert [p.eigenvalues for p in result.points] == [[-6.0], [6.0]]   # f'' = 6x
    assert result.complete is True and len(result.exact) == 2


def test_a_saddle_and_a_product_with_four_extrema():
    assert kinds(critical("x^2 - y^2", arg=["x=-3:3", "y=-3:3"])) == [((0.0, 0.0), "saddle")]
    r = 1 / math.sqrt(2)
    points = critical("x*y*exp(-x^2-y^2)", arg=["x=-3:3", "y=-3:3"]).points
    found = [(tuple(p.at.values()), p.verdict) for p in points]
    expected = [((-r, -r), "maximum"), ((-r, r), "minimum"), ((0.0, 0.0), "saddle"),
                ((r, -r), "minimum"), ((r, r), "maximum")]
    assert [k for _, k in found] == [k for _, k in expected]
    for (at, _), (truth, _) in zip(found, expected):
        assert at == pytest.approx(truth, abs=1e-12)


def test_rosenbrock():
    result = critical("(1-x)^2 + 100*(y-x^2)^2", arg=["x=-2:2", "y=-1:3"])
    assert kinds(result) == [((1.0, 1.0), "minimum")]


HIMMELBLAU_MINIMA = [(3.0, 2.0), (-2.805118, 3.131312), (-3.779310, -3.283186),
                     (3.584428, -1.848126)]


def himmelblau_gradient(x, y):
    a, b = x * x + y - 11, x + y * y - 7
    return np.array([4 * x * a + 2 * b, 2 * a + 4 * y * b])


def test_himmelblau_all_nine_critical_points():
    result = critical("(x^2+y-11)^2 + (x+y^2-7)^2", arg=["x=-5:5", "y=-5:5"])
    verdicts = [p.verdict for p in result.points]
    assert sorted(verdicts) == ["maximum"] + ["minimum"] * 4 + ["saddle"] * 4
    minima = [(p.at["x"], p.at["y"]) for p in result.points if p.verdict == "minimum"]
    for truth in HIMMELBLAU_MINIMA:
        assert any(np.allclose(m, truth, atol=1e-6) for m in minima), truth
    assert (3.0, 2.0) in minima
    for p in result.points:
        assert np.max(np.abs(himmelblau_gradient(p.at["x"], p.at["y"]))) < 1e-10


@pytest.mark.slow
def test_the_command():
    out = run("critical", "x^3 - 3*x", "--arg", "x=-3:3", "--json",
              "--solve-timeout", str(SOLVE))
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["mode"] == "critical" and obj["complete"] is True
    assert [(p["at"], p["verdict"]) for p in obj["points"]] == [
        ({"x": -1.0}, "maximum"), ({"x": 1.0}, "minimum")]
    assert set(obj["points"][0]) == {"at", "value", "gradient_norm", "eigenvalues", "verdict"}
    none = run("critical", "exp(x)", "--arg", "x=-1:1", "--plain")
    assert none.returncode == 0 and none.stdout == ""
    for args in (["[x, x]", "--arg", "x=-1:1"], ["x^2"], ["x^2 + y", "--arg", "x=-1:1"],
                 ["x <", "--arg", "x=-1:1"]):
        bad = run("critical", *args)
        assert bad.returncode == 2 and bad.stdout == "" and "Traceback" not in bad.stderr
