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


def test_himmelblau_exactly_nine_and_the_numeric_list_is_complete():
    """sympy's set (the Groebner path: solve does not finish) is the nine points where
    the gradient written out in numpy vanishes, and the same set as Newton's."""
    result = critical("(x^2+y-11)^2 + (x+y^2-7)^2", arg=["x=-5:5", "y=-5:5"],
                      solve_timeout=SOLVE)
    assert len(result.exact) == 9 and result.complete is True
    assert {"x": 3.0, "y": 2.0} in result.exact
    for p in result.exact:
        assert np.max(np.abs(himmelblau_gradient(p["x"], p["y"]))) < 1e-9


@pytest.mark.parametrize("f", ["x^3 - 3*x + y^3 - 3*y", "x^4 + y^4 - 4*x*y",
                               "x^2 - y^2 + x*y^2", "(x - 1/3)^2*(y + 2) + y^2",
                               "x^2 + 0.5*y^2 - x*y + 0.25*x", "x^2 + y^2 + 1"])
def test_the_groebner_path_finds_what_solve_finds(f):
    """On polynomials sympy's solve handles, the Groebner path gives its real solutions
    (the first two through the separating form: x^2 - 1, y^2 - 1 is not in shape)."""
    import sympy as sp

    from gradcli.run.critical import polynomial_solutions, solved
    x, y = sp.symbols("x y")
    expr = sp.parse_expr(f.replace("^", "**"))  # (the test's own text, not a user's)
    gradient = [sp.diff(expr, x), sp.diff(expr, y)]
    exact = sorted(polynomial_solutions(sp, gradient, [x, y]))
    truth = sorted(solved(sp, [sp.nsimplify(g, rational=True) for g in gradient], [x, y]))
    assert len(exact) == len(truth)
    for got, want in zip(exact, truth):
        assert got == pytest.approx(want, abs=1e-12)


def test_what_the_groebner_path_leaves_to_solve():
    """Not polynomial, or not isolated points (a circle of minima): None, and solve says."""
    import sympy as sp

    from gradcli.run.critical import polynomial_solutions
    x, y = sp.symbols("x y")
    for expr in (sp.sin(x) * sp.cos(y), (x**2 + y**2 - 1)**2):
        assert polynomial_solutions(sp, [sp.diff(expr, x), sp.diff(expr, y)], [x, y]) is None
    circle = critical("(x^2+y^2-1)^2", arg=["x=-2:2", "y=-2:2"], solve_timeout=SOLVE)
    assert circle.complete is None and "not isolated" in circle.exact_note


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


def himmelblau_hessian(x, y):
    a, b = x * x + y - 11, x + y * y - 7
    return np.array([[4 * a + 8 * x * x + 2, 4 * x + 4 * y],
                     [4 * x + 4 * y, 2 + 4 * b + 8 * y * y]])


def numpy_newton(start, low, high):
    """Newton's method on Himmelblau's gradient written out in numpy, one start, with the
    command's rules (a step by least squares; dropped beyond a tenth of the box's width
    outside it or after 60 steps)."""
    point = np.array(start, dtype=float)
    for _ in range(60):
        gradient = himmelblau_gradient(*point)
        if np.max(np.abs(gradient)) < 1e-9:
            return point
        point = point + np.linalg.lstsq(himmelblau_hessian(*point), -gradient, rcond=None)[0]
        if np.any(point < low - (high - low) / 10) or np.any(point > high + (high - low) / 10):
            return None
    return None


@pytest.mark.parametrize("batchable", [True, False])
def test_every_start_reaches_what_its_own_newton_iteration_reaches(batchable):
    """All starts step together (one Hessian of every running start a step): each one
    ends where a numpy Newton iteration from it ends; also when the program cannot run
    batched (a value read as a plain number: the map runs start by start)."""
    from gradcli.run.critical import _newton, _starts
    from gradcli.run.formulas import prepare
    _, model = prepare("(x^2 + y - 11)^2 + (x + y^2 - 7)^2", arg=["x", "y"])
    if not batchable:
        original = model.function

        def data_dependent(x, y):
            float(x)  # a batched value read as a plain one
            return original(x, y)
        model.function = data_dependent
    box = {"x": (-5.0, 5.0), "y": (-5.0, 5.0)}
    low, high = np.array([-5.0, -5.0]), np.array([5.0, 5.0])
    starts = _starts(box)
    reached = _newton(model, ["x", "y"], starts, low, high)
    assert len(reached) == len(starts) == 81
    for start, got in zip(starts, reached):
        truth = numpy_newton(start, low, high)
        assert (got is None) == (truth is None), start
        if truth is not None:
            np.testing.assert_allclose(got[0], truth, atol=1e-9)
            assert got[1].critical


def test_sympy_solves_in_its_worker_while_newton_runs_here():
    """This process never imports sympy (the worker does, while the numeric search runs),
    and sympy's exact solutions still arrive and are compared."""
    import subprocess
    import sys
    code = ("import sys\nfrom gradcli.run.critical import critical\n"
            f"r = critical('x^3 - 3*x', arg=['x=-3:3'], solve_timeout={SOLVE})\n"
            "print(r.complete, sorted(p['x'] for p in r.exact), 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["True", "[-1.0,", "1.0]", "False"]
