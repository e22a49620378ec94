"""gradcli plot's marked points are exact: extrema refined on the tape's f' and f'' (their
f the program's value there), poles and jumps told apart, aliased stretches reported
instead of marked, curves told apart without colour, the image's legend by kind.

Truth is independent of the engine: sympy's exact roots and singularities, numpy.roots,
the math (sin's extrema at pi/2 + k pi), and numpy evaluating the same formula."""
import json

import numpy as np
import pytest
import sympy
from cli_process import run

EPS = np.finfo(float).eps


def plot(*args):
    """``gradcli plot ARGS --json`` in this process: (the JSON, standard error)."""
    from typer.testing import CliRunner

    from gradcli.cli.app import app
    out = CliRunner().invoke(app, ["plot", *[str(a) for a in args], "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout), out.stderr


def points(*args, kinds=None):
    result, _ = plot(*args)
    return [(p["kind"], float(p["x"]), float(p["f"])) for p in result["points"]
            if kinds is None or p["kind"] in kinds]


def assert_close(got, expected, ulps=4):
    """got within a few units in the last place of expected (exact where the math is)."""
    assert abs(got - expected) <= ulps * EPS * max(abs(expected), 1.0), (got, expected)


def sign_changes(values):
    """How many times the values change sign (exact zeros skipped: one crossing)."""
    signs = np.sign(values)
    signs = signs[signs != 0]
    return int(np.count_nonzero(signs[1:] != signs[:-1]))


# ---------------------------------------------------------------------------------------
# Extrema: x where f' is 0 to the last digits, f the value there
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("span", ["-3:3", "-2:2", "-2.5:2.5", "3:-3"])
def test_cubic_extrema_are_at_plus_minus_one_with_f_exactly_two(span):
    # the samples of -2:2 and -2.5:2.5 miss x = +-1: main interpolated f = 1.99990
    x = sympy.Symbol("x")
    f = x**3 - 3 * x
    truth = sorted((float(r), float(f.subs(x, r)), "maximum" if sympy.diff(f, x, 2).subs(
        x, r) < 0 else "minimum") for r in sympy.solve(sympy.diff(f, x), x))
    got = points("x^3 - 3*x", "--arg", f"x={span}")
    assert [k for k, _, _ in got] == [k for _, _, k in truth] == ["maximum", "minimum"]
    for (_, gx, gf), (tx, tf, _) in zip(got, truth):
        assert_close(gx, tx)
        assert_close(gf, tf)


def test_sine_extrema_are_half_pi_and_three_half_pi_with_f_plus_minus_one():
    got = points("sin(x)", "--arg", "x=0:7")
    assert [k for k, _, _ in got] == ["maximum", "minimum"]
    for (_, gx, gf), k in zip(got, (0, 1)):
        assert_close(gx, float(sympy.pi / 2 + k * sympy.pi))
        assert_close(gf, (-1.0) ** k)


def test_x_exp_minus_x_has_its_maximum_at_one_with_f_one_over_e():
    assert len(points("x*exp(-x)", "--arg", "x=-1:5")) == 1
    kind, x, f = points("x*exp(-x)", "--arg", "x=-1:5")[0]
    assert kind == "maximum"
    assert_close(x, 1.0)
    assert_close(f, float(sympy.exp(-1)))


def test_quartic_extrema_are_the_roots_of_its_derivative_from_numpy_roots():
    coefficients = [1.0, -1.0, -3.0, 1.0, 1.0]           # x^4 - x^3 - 3x^2 + x + 1
    slope, curvature = np.polyder(coefficients), np.polyder(coefficients, 2)
    roots = np.sort(np.roots(slope).real)
    got = points("x^4 - x^3 - 3*x^2 + x + 1", "--arg", "x=-2:3", "--points", "123")
    assert [k for k, _, _ in got] == ["minimum" if np.polyval(curvature, r) > 0 else
                                      "maximum" for r in roots]
    for (_, x, f), root in zip(got, roots):
        np.testing.assert_allclose(x, root, rtol=1e-13)
        np.testing.assert_allclose(f, np.polyval(coefficients, root), rtol=1e-13)


# each program, its numpy twin, f' and f'' (by hand), a range
SMOOTH = [
    ("x^3 - 3*x", lambda x: x**3 - 3 * x, lambda x: 3 * x**2 - 3, lambda x: 6 * x, "-2.5:2.5"),
    ("x^2*sin(x)", lambda x: x**2 * np.sin(x), lambda x: 2 * x * np.sin(x) + x**2 * np.cos(x),
     lambda x: 2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x), "-3:3"),
    ("exp(-x^2)*cos(3*x)", lambda x: np.exp(-x**2) * np.cos(3 * x),
     lambda x: -np.exp(-x**2) * (2 * x * np.cos(3 * x) + 3 * np.sin(3 * x)),
     lambda x: np.exp(-x**2) * ((4 * x**2 - 11) * np.cos(3 * x) + 12 * x * np.sin(3 * x)),
     "-3:3"),
    ("x*exp(-x)", lambda x: x * np.exp(-x), lambda x: (1 - x) * np.exp(-x),
     lambda x: (x - 2) * np.exp(-x), "-1:5"),
    ("sin(x) + cos(2*x)", lambda x: np.sin(x) + np.cos(2 * x),
     lambda x: np.cos(x) - 2 * np.sin(2 * x), lambda x: -np.sin(x) - 4 * np.cos(2 * x),
     "-4:4"),
]


@pytest.mark.parametrize("program, f, df, d2f, span", SMOOTH, ids=[s[0] for s in SMOOTH])
def test_every_marked_extremum_has_the_programs_f_and_a_vanishing_slope(program, f, df,
                                                                        d2f, span):
    result, stderr = plot(program, "--arg", f"x={span}")
    assert result["points"] and stderr == "" and "notes" not in result
    for p in result["points"]:
        x = p["x"]
        assert p["kind"] == ("minimum" if d2f(x) > 0 else "maximum")
        np.testing.assert_allclose(p["f"], f(x), rtol=4 * EPS, atol=4 * EPS)
        # f' there is 0 up to rounding: what a change of x by a few units in its last
        # place, or f' computed with a few rounding errors, gives
        assert abs(df(x)) <= 8 * EPS * ((1 + abs(x)) * abs(d2f(x)) + 1), (x, df(x))
    # and f' changes sign at each marked x, so none is missed or made up
    xs = np.linspace(*(float(v) for v in span.split(":")), 100_001)
    assert len(result["points"]) == sign_changes(df(xs))


def test_printed_table_shows_the_exact_extrema():
    out = run("plot", "x^3 - 3*x", "--arg", "x=-2:2", "--width", "40", "--height", "8")
    assert out.returncode == 0, out.stderr
    rows = [line.split("│") for line in out.stdout.splitlines() if "imum" in line]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["maximum", "-1.0", "2.0"], ["minimum", "1.0", "-2.0"]]


def test_extrema_of_another_modes_plot_and_of_float32_are_refined_too():
    mode = points("w*x^3 - 3*x", "--arg", "x=-2:2", "--var", "w=1", "--mode", "value-grad")
    single = points("x^3 - 3*x", "--arg", "x=-2:2", "--dtype", "float32")
    for got in (mode, single):
        assert got == [("maximum", -1.0, 2.0), ("minimum", 1.0, -2.0)]


def test_float32_extrema_are_float32s_nearest_to_the_true_ones():
    x = sympy.Symbol("x")
    slope = sympy.diff(sympy.sin(x) + sympy.cos(2 * x), x)
    got = points("sin(x) + cos(2*x)", "--arg", "x=-4:4", "--dtype", "float32")
    fine = np.linspace(-4, 4, 100_001)
    assert len(got) == sign_changes(np.cos(fine) - 2 * np.sin(2 * fine))
    for _, gx, gf in got:
        root = float(sympy.nsolve(slope, x, gx))
        # float32's f' is rounding noise within a few of its units around the root
        assert abs(gx - root) <= 8 * float(np.finfo(np.float32).eps) * max(1, abs(root))
        assert gx == np.float32(gx)


@pytest.mark.parametrize("span", ["-1:1.1", "-1:1.2"])   # 0 a sample, or not
def test_three_zeros_of_the_slope_between_two_samples_are_named_by_the_curvature(span):
    # f' = x^3 - 1e-6 x = x (x - 0.001)(x + 0.001): all three zeros lie between two
    # samples; the one found is named by the sign of f'' there, not by the samples'
    x = sympy.Symbol("x")
    f = x**4 / 4 - sympy.Rational(1, 2_000_000) * x**2
    roots = {float(r): sympy.diff(f, x, 2).subs(x, r) for r in sympy.solve(sympy.diff(f, x))}
    got = points("x^4/4 - 1e-6*x^2/2", "--arg", f"x={span}")
    assert got
    for kind, gx, gf in got:
        root = min(roots, key=lambda r: abs(r - gx))
        assert_close(gx, root)
        assert kind == ("minimum" if roots[root] > 0 else "maximum")
        np.testing.assert_allclose(gf, float(f.subs(x, root)), rtol=1e-12)


def test_flat_minimum_of_a_quartic_is_at_zero_exactly():
    # f' = 4x^3 has a triple root: Newton's method creeps towards it linearly
    assert points("x^4", "--arg", "x=-1:1.3") == [("minimum", 0.0, 0.0)]


def test_zero_of_the_slope_at_a_sample_without_sign_change_is_a_stationary_point():
    # x^3 on 401 points samples x = 0 exactly, where f' = 0 and is positive on both sides
    assert points("x^3", "--arg", "x=-1:1", "--points", "401") == [
        ("stationary point", 0.0, 0.0)]


# ---------------------------------------------------------------------------------------
# Poles, jumps and kinks
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("program, expression, span, count", [
    ("1/x", "1/x", "-1:1", "400"),
    ("1/x", "1/x", "-1:1", "401"),          # a sample at the pole itself (f = inf)
    ("tan(x)", "tan(x)", "-3:3", "400"),
    ("1/(x-1)", "1/(x - 1)", "-2:3", "400"),
    ("1/x^2", "1/x**2", "-1:1.5", "400"),   # f' changes sign through it: no maximum
])
def test_poles_are_poles_where_sympy_puts_them(program, expression, span, count):
    x = sympy.Symbol("x")
    a, b = (float(v) for v in span.split(":"))
    expr = sympy.sympify(expression)
    truth = sorted(float(p) for p in sympy.singularities(expr, x, sympy.Interval(a, b)))
    got = points(program, "--arg", f"x={span}", "--points", count)
    assert [k for k, _, _ in got] == ["pole"] * len(truth)
    for (_, gx, gf), tx in zip(got, truth):
        assert_close(gx, tx, ulps=2)
        with np.errstate(divide="ignore"):
            value = float(sympy.lambdify(x, expr, "numpy")(np.float64(gx)))
        assert gf == value    # the program's value at the printed x (inf at 1/x's 0)


@pytest.mark.parametrize("program, jump_at, f", [
    ("sign(x)", 0.0, np.sign),
    ("sign(x) + x", 0.0, lambda x: np.sign(x) + x),
    ("where(x > 0.5, 1, 0) + x", 0.5, lambda x: np.where(x > 0.5, 1, 0) + x),
    ("where(x < -0.25, -1, 2*x)", -0.25, lambda x: np.where(x < -0.25, -1, 2 * x)),
])
def test_jumps_are_jumps_at_their_x_with_the_value_there(program, jump_at, f):
    assert points(program, "--arg", "x=-1:1") == [("jump", jump_at, float(f(jump_at)))]


def test_pole_of_an_even_function_sampled_symmetrically_is_at_zero():
    # the samples nearest 0 are +-h/2 and do not quite cancel: located at -2e-16, shown 0
    assert points("1/x^2", "--arg", "x=-3:3") == [("pole", 0.0, float("inf"))]


def test_float32_points_are_located_to_float32s_precision():
    eps32 = float(np.finfo(np.float32).eps)
    poles = points("tan(x)", "--arg", "x=-3:3", "--dtype", "float32")
    assert [k for k, _, _ in poles] == ["pole", "pole"]
    for (_, x, f), sign in zip(poles, (-1, 1)):
        assert abs(x - sign * np.pi / 2) <= 2 * eps32 and x == np.float32(x)
        assert f == float(np.tan(np.float32(x)))
    corner = float(np.float32(0.3))
    assert sorted(points("abs(x - 0.3)", "--arg", "x=-1:1", "--dtype", "float32")) == [
        ("kink", corner, 0.0), ("minimum", corner, 0.0)]
    assert points("floor(x)", "--arg", "x=-1.5:1.5", "--dtype", "float32") == [
        ("jump", -1.0, -1.0), ("jump", 0.0, 0.0), ("jump", 1.0, 1.0)]


def test_lone_nan_sample_of_a_continuous_curve_is_non_finite_not_a_pole():
    # sin(x)/x sampled at 0 exactly is 0/0; around it f is continuous (it tends to 1)
    got = points("sin(x)/x", "--arg", "x=-1:1", "--points", "401")
    assert len(got) == 1 and got[0][:2] == ("non-finite", 0.0) and np.isnan(got[0][2])


def test_floor_jumps_at_each_integer():
    got = points("floor(x)", "--arg", "x=-1.5:2.5")
    assert got == [("jump", k, float(np.floor(k))) for k in (-1.0, 0.0, 1.0, 2.0)]


def test_kink_of_abs_is_at_its_corner_which_is_also_the_minimum():
    got = points("abs(x - 0.3)", "--arg", "x=-1:1")
    assert sorted(got) == [("kink", 0.3, 0.0), ("minimum", 0.3, 0.0)]


def test_steep_smooth_curve_is_neither_jump_nor_pole():
    result, _ = plot("tanh(50*x)", "--arg", "x=-1:1")
    assert result["points"] == []


# ---------------------------------------------------------------------------------------
# Sampled too coarsely
# ---------------------------------------------------------------------------------------
def test_aliased_oscillation_is_reported_and_its_false_extrema_are_not_marked():
    # x^2 sin(1/x): between samples h apart, 1/x turns by more than pi (under two samples
    # per half period) where |x| < sqrt(h/pi); its sign changes of f' there are aliases
    result, stderr = plot("x^2*sin(1/x)", "--arg", "x=-1:1")
    h = 2 / 399
    aliased = np.sqrt(h / np.pi)
    [note] = result["notes"]
    assert "sampled too coarsely" in note and "--points" in note and "narrow" in note
    assert stderr == f"note: {note}\n"
    extrema = [p for p in result["points"] if p["kind"] in ("minimum", "maximum")]
    assert extrema and all(abs(p["x"]) > aliased for p in extrema)

    # the ones marked are real: f' = 2x sin(1/x) - cos(1/x) is 0 there
    def slope(x):
        return 2 * x * np.sin(1 / x) - np.cos(1 / x)

    def curvature(x):
        return (2 - 1 / x**2) * np.sin(1 / x) - 2 * np.cos(1 / x) / x
    for p in extrema:
        x = p["x"]
        assert abs(slope(x)) <= 8 * EPS * ((1 + abs(x)) * abs(curvature(x)) / x**2 + 1)


def test_same_oscillation_sampled_finely_enough_has_no_note():
    result, stderr = plot("x^2*sin(1/x)", "--arg", "x=0.1:1")
    assert "notes" not in result and stderr == ""
    xs = np.linspace(0.1, 1, 100_001)
    assert len(result["points"]) == sign_changes(2 * xs * np.sin(1 / xs) - np.cos(1 / xs))


# ---------------------------------------------------------------------------------------
# Without colour: a glyph per curve, named in the legend
# ---------------------------------------------------------------------------------------
def _frame_and_legend(text):
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┌"))
    bottom = next(i for i, line in enumerate(lines) if line.startswith("└"))
    return "\n".join(lines[top + 1:bottom]), "\n".join(lines[bottom + 1:bottom + 3])


@pytest.mark.slow
@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {}])   # a pipe has no colour either
def test_without_colour_each_curve_has_its_own_glyph_named_in_the_legend(env):
    out = run("plot", "x^3 - 3*x", "--arg", "x=-2:2", "--order", "2", "--width", "60",
              "--height", "15", env=env)
    assert out.returncode == 0, out.stderr
    assert "\x1b[" not in out.stdout
    inside, legend = _frame_and_legend(out.stdout)
    assert "** f" in legend and "++ df/dx" in legend and "oo d2f/dx2" in legend
    assert "@@ marked points" in legend
    for glyph in "*+o@":
        assert glyph in inside
    # each curve where it is: f'' = 6x is the straight line from -12 to 12; its glyph
    # on the top row is at the right end, f's (f(2) = 2) is not on the top row at all
    rows = inside.splitlines()
    assert rows[0].rstrip(" │0123456789,").endswith("o") and "*" not in rows[0]


def test_with_colour_the_curves_stay_blocks_in_colours():
    from gradcli.cli.plot import terminal_plot
    xs = np.linspace(-2, 2, 50)
    text = terminal_plot("x", xs, [xs**2, 2 * xs], [], "x^2", 40, 8, color=True)
    assert "\x1b[" in text and "*" not in text and "+" not in text


# ---------------------------------------------------------------------------------------
# The image: its legend names the kinds of the marked points
# ---------------------------------------------------------------------------------------
def _legend(program, span):
    from gradcli.cli.plot import curve_figure
    result, _ = plot(program, "--arg", f"x={span}")
    xs, *table = np.array(result["samples"], dtype=float).T
    marked = [(p["kind"], float(p["x"]), float(p["f"])) for p in result["points"]]
    plt, fig, ax, _ = curve_figure("x", xs, table, marked, program)
    try:
        return [text.get_text() for text in ax.get_legend().get_texts()]
    finally:
        plt.close(fig)


def test_image_legend_says_minimum_and_maximum_not_f_prime_zero():
    assert _legend("x^3 - 3*x", "-2:2") == ["f", "df/dx", "minimum", "maximum"]


def test_image_legend_names_poles_and_jumps():
    assert _legend("tan(x) + sign(x)", "-3:3") == ["f", "df/dx", "pole", "jump"]


@pytest.mark.parametrize("xs", [np.linspace(-3, 3, 7), np.linspace(3, -3, 7)])
def test_curves_are_broken_at_poles_and_jumps_not_at_other_points(xs):
    from gradcli.cli.plot import broken_at_poles_and_jumps
    marked = [("pole", 0.5, np.inf), ("jump", -1.5, 0.0), ("minimum", 2.5, 1.0)]
    drawn_xs, (drawn,) = broken_at_poles_and_jumps(xs, [xs**2], marked)
    gaps = drawn_xs[np.isnan(drawn)]
    assert sorted(gaps) == [-1.5, 0.5] and len(drawn_xs) == len(xs) + 2
    # each gap between the two samples around it, the samples kept in their order
    for gap in gaps:
        i = int(np.flatnonzero(drawn_xs == gap)[0])
        assert min(drawn_xs[i - 1], drawn_xs[i + 1]) < gap < max(drawn_xs[i - 1],
                                                                   drawn_xs[i + 1])
    np.testing.assert_array_equal(drawn_xs[~np.isnan(drawn)], xs)
    np.testing.assert_array_equal(drawn[~np.isnan(drawn)], xs**2)
