"""gradcli plot: the sampled table against the single-point commands and sympy, the terminal
plot at a fixed width, the PNG's pixels, the marked points, the missing-extra messages."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import sympy
from cli_process import run_here

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gradcli(*args, env=None):
    """The command run in this process (what it computes and prints is tested here; the
    tests of which modules a process imports start their own)."""
    return run_here(*args, env=env, cwd=ROOT)


def csv_table(text):
    lines = text.strip().splitlines()
    return lines[0].split(","), np.array([[float(v) for v in line.split(",")]
                                          for line in lines[1:]])


def sympy_columns(text, xs, order):
    x = sympy.Symbol("x")
    expr = sympy.sympify(text)
    return [np.array([float(sympy.diff(expr, x, k).subs(x, v)) for v in xs])
            for k in range(order + 1)]


@pytest.mark.slow
def test_csv_matches_single_point_tape_command_at_each_sample():
    out = gradcli("plot", "x^2*sin(x)", "--arg", "x=-3:3", "--points", "7", "--csv")
    assert out.returncode == 0, out.stderr
    header, table = csv_table(out.stdout)
    assert header == ["x", "f", "df/dx"]
    np.testing.assert_array_equal(table[:, 0], np.linspace(-3, 3, 7))
    for x, f, df in table:
        single = gradcli("tape", "x^2*sin(x)", "--arg", f"x={float(x)!r}", "--watch", "x", "--json")
        result = json.loads(single.stdout)
        assert f == result["value"] and df == result["gradients"][0]["gradient"]


def test_csv_matches_sympy_derivatives_up_to_third_order():
    out = gradcli("plot", "x^2*sin(x)", "--arg", "x=-3:3", "--order", "3", "--csv")
    header, table = csv_table(out.stdout)
    assert header == ["x", "f", "df/dx", "d2f/dx2", "d3f/dx3"] and len(table) == 400
    xs = table[:, 0]
    for k, column in enumerate(sympy_columns("x**2*sin(x)", xs[::37], 3)):
        np.testing.assert_allclose(table[::37, k + 1], column, rtol=1e-12, atol=1e-12)


def test_json_has_samples_and_marked_extrema_where_sympy_puts_them():
    out = gradcli("plot", "x^2*sin(x)", "--arg", "x=-3:3", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["mode"] == "plot" and result["columns"] == ["x", "f", "df/dx"]
    assert result["evaluation"] == "vectorised" and len(result["samples"]) == 400
    x = sympy.Symbol("x")
    extremum = float(sympy.nsolve(sympy.diff(x**2 * sympy.sin(x), x), x, 2.3))
    kinds = {(p["kind"], round(p["x"], 4)) for p in result["points"]}
    # linear interpolation between samples 0.015 apart: within 1e-4 of the true zero
    assert kinds == {("maximum", round(extremum, 4)), ("minimum", round(-extremum, 4))}


def test_non_elementwise_program_is_batched_per_point_and_stays_right():
    # x * mean(x) is x^2 at one point; summing over all points would give x * mean(xs)
    out = gradcli("plot", "x * mean(x)", "--arg", "x=0:2", "--points", "5", "--json")
    result = json.loads(out.stdout)
    assert result["evaluation"] == "vectorised"
    samples = np.array(result["samples"])
    np.testing.assert_array_equal(samples[:, 1], samples[:, 0] ** 2)
    np.testing.assert_array_equal(samples[:, 2], 2 * samples[:, 0])


def test_program_summing_over_a_vector_is_sampled_right_at_every_point():
    # f = sum((x - [0, 0.5, 1])^2) = 3x^2 - 3x + 1.25, f' = 6x - 3, f'' = 6
    out = gradcli("plot", "sum((x - linspace(0, 1, 3))^2)", "--arg", "x=-1:2", "--points",
                  "13", "--order", "2", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["evaluation"] == "vectorised"
    x, f, df, d2f = np.array(result["samples"]).T
    np.testing.assert_array_equal(x, np.linspace(-1, 2, 13))
    np.testing.assert_allclose(f, 3 * x**2 - 3 * x + 1.25, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(df, 6 * x - 3, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(d2f, np.full(13, 6.0))


def test_ranged_variable_is_sampled_by_the_batching_transform():
    out = gradcli("plot", "w * sum(w * linspace(1, 2, 2))", "--var", "w=-1:1", "--points",
                  "5", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["evaluation"] == "vectorised"
    w, f, df = np.array(result["samples"]).T
    np.testing.assert_allclose(f, 3 * w**2, atol=1e-15)
    np.testing.assert_allclose(df, 6 * w, atol=1e-15)


@pytest.mark.slow
def test_kink_jump_and_non_finite_points_are_marked():
    kink = json.loads(gradcli("plot", "abs(x - 0.3)", "--arg", "x=-1:1", "--json").stdout)
    assert [(p["kind"], round(p["x"], 2)) for p in kink["points"]
            if p["kind"] == "kink"] == [("kink", 0.3)]
    jump = json.loads(gradcli("plot", "sign(x) + x", "--arg", "x=-1:1", "--json").stdout)
    assert [p["kind"] for p in jump["points"]] == ["jump"]
    pole = json.loads(gradcli("plot", "1/x", "--arg", "x=-1:1", "--points", "401",
                              "--json").stdout)
    assert [(p["kind"], p["x"]) for p in pole["points"]] == [("pole", 0.0)]
    undefined = json.loads(gradcli("plot", "sqrt(x)", "--arg", "x=-1:1", "--json").stdout)
    assert [(p["kind"], p["x"]) for p in undefined["points"]] == [("non-finite", -1.0)]


def test_smooth_function_has_no_false_kinks():
    out = json.loads(gradcli("plot", "exp(-x^2) * cos(3*x)", "--arg", "x=-3:3",
                             "--order", "2", "--json").stdout)
    assert not [p for p in out["points"] if p["kind"] in ("kink", "jump", "pole")]


@pytest.mark.slow
def test_terminal_plot_at_fixed_width_has_frame_legend_and_table():
    out = gradcli("plot", "x^2*sin(x)", "--arg", "x=-3:3", "--width", "60", "--height", "12")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    frame = [i for i, line in enumerate(lines) if line.startswith("┌")]
    assert len(frame) == 1 and lines[frame[0]] == "┌" + "─" * 60 + "┐"
    bottom = [i for i, line in enumerate(lines) if line.startswith("└")]
    assert bottom[0] - frame[0] == 13  # 12 rows of plot between the corners
    assert "x^2*sin(x)" in lines[frame[0] - 1]
    assert any("f" in line and "df/dx" in line for line in lines[bottom[0]:])
    assert "marked points" in out.stdout and "maximum" in out.stdout
    assert "\x1b[" not in out.stdout  # not a terminal: no colour codes


def test_terminal_plot_takes_the_terminal_width():
    out = gradcli("plot", "x^2", "--arg", "x=-1:1", env={"COLUMNS": "70", "LINES": "30"})
    top = [line for line in out.stdout.splitlines() if line.startswith("┌")][0]
    assert len(top) == 70 - 14 + 2


def _png_axes(path):
    from PIL import Image
    image = Image.open(path)
    axes = json.loads(image.text["gradcli-axes"])
    return np.asarray(image.convert("RGB")).astype(int), axes


def _pixel(axes, x, y):
    (x0, x1), (y0, y1) = axes["xlim"], axes["ylim"]
    px = axes["x0"] + (x - x0) / (x1 - x0) * (axes["x1"] - axes["x0"])
    py = axes["y0"] + (y - y0) / (y1 - y0) * (axes["y1"] - axes["y0"])
    return int(round(axes["height"] - py)), int(round(px))


def _has_colour(pixels, row, col, rgb, radius=2):
    patch = pixels[row - radius:row + radius + 1, col - radius:col + radius + 1]
    return np.min(np.abs(patch - np.array(rgb)).sum(axis=2)) < 60


BLUE, ORANGE = (31, 119, 180), (255, 127, 14)   # matplotlib's C0 (f) and C1 (f')


@pytest.mark.slow
def test_png_has_f_and_its_derivative_where_they_should_be(tmp_path):
    path = tmp_path / "f.png"
    out = gradcli("plot", "x^2*sin(x)", "--arg", "x=-3:3", "--output", str(path))
    assert out.returncode == 0, out.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels, axes = _png_axes(path)
    for x in np.linspace(-2.8, 2.8, 15):
        f = x ** 2 * np.sin(x)
        df = 2 * x * np.sin(x) + x ** 2 * np.cos(x)
        if abs(f - df) < 0.5:  # where the curves cross, the one drawn last covers the other
            continue
        assert _has_colour(pixels, *_pixel(axes, x, f), BLUE), x
        assert _has_colour(pixels, *_pixel(axes, x, df), ORANGE), x
    # and not where they are not: f mirrored at its maximum
    assert not _has_colour(pixels, *_pixel(axes, 2.29, -3.95), BLUE)


@pytest.mark.slow
def test_svg_and_pdf_outputs_are_written(tmp_path):
    for name, magic in (("f.svg", b"<?xml"), ("f.pdf", b"%PDF")):
        out = gradcli("plot", "x^2", "--arg", "x=-1:1", "-o", str(tmp_path / name))
        assert out.returncode == 0, out.stderr
        assert (tmp_path / name).read_bytes().startswith(magic)


def test_ranged_variable_and_fixed_argument():
    out = gradcli("plot", "w * a", "--var", "w=0:1", "--arg", "a=3", "--points", "3", "--csv")
    assert out.stdout == "w,f,df/dw\n0.0,0.0,3.0\n0.5,1.5,3.0\n1.0,3.0,3.0\n"


@pytest.mark.parametrize("args, message", [
    (["x^2", "--arg", "x=2"], "one value given as a range"),
    (["x*y*z", "--arg", "x=0:1", "--arg", "y=0:1", "--arg", "z=0:1"], "or two"),
    (["x*y", "--arg", "x=0:1", "--arg", "y=0:1", "--order", "2"], "apply to one ranged"),
    (["x*w", "--arg", "x=0:1", "--var", "w=1", "--mode", "hessian"], "unknown mode"),
    (["x^2", "--arg", "x=1:1"], "must be finite and different"),
    (["x^2", "--arg", "x=0:1", "-o", "f.gif"], "unsupported image type"),
    (["x^2", "--arg", "x=0:1", "--csv", "--json"], "cannot be used together"),
    (["x^2", "--arg", "x=__import__('os'):1"], "error"),
])
def test_bad_input_is_one_message_and_exit_2(args, message):
    out = gradcli("plot", *args)
    assert out.returncode == 2 and message in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize("module, args", [
    ("matplotlib", ["-o", "never.png"]),
    ("uniplot", []),
])
def test_missing_extra_names_the_install_command(module, args, tmp_path):
    code = (f"import sys; sys.modules[{module!r}] = None; "
            "from gradcli.cli.app import main; "
            f"sys.argv = ['gradcli', 'plot', 'x^2', '--arg', 'x=0:1'] + {args!r}; main()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60, cwd=tmp_path)
    assert out.returncode == 2
    assert "python -m pip install 'gradcli[plot]'" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "never.png").exists()


def test_other_commands_do_not_import_plot_or_minimize_code():
    code = ("import sys; from gradcli.cli.app import main; sys.argv = ['gradcli', "
            "'value-grad', 'w*x', '--var', 'w=2', '--arg', 'x=3', '--json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "bad = [m for m in ('gradcli.cli.plot', 'gradcli.cli.minimize', 'gradcli.run.optimize',"
            " 'gradcli.run.plotting', 'scipy', 'matplotlib', 'uniplot') if m in sys.modules]\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_full_help_lists_plot_and_minimize():
    out = gradcli("--help")
    assert out.returncode == 0 and "plot" in out.stdout and "minimize" in out.stdout
    code = ("import sys; import gradcli.cli.app as app; app.build_app()\n"
            "print([m for m in ('gradcli.cli.plot', 'gradcli.cli.minimize') "
            "if m in sys.modules])")
    # building the full app records the commands; their modules load only when it runs
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert listed.stdout.strip() == "[]"


@pytest.mark.slow
def test_mode_plots_that_modes_gradients_against_single_point_commands():
    out = gradcli("plot", "w*x^2", "--arg", "x=-1:1", "--var", "w=2", "--points", "5",
                  "--mode", "value-grad", "--csv")
    header, table = csv_table(out.stdout)
    assert header == ["x", "f", "df/dw"]
    for x, f, dw in table:
        single = json.loads(gradcli("value-grad", "w*x^2", "--arg", f"x={float(x)!r}",
                                    "--var", "w=2", "--json").stdout)
        assert f == single["value"] and dw == single["gradients"][0]["gradient"]


def test_two_ranges_give_the_gradient_on_a_grid_matching_sympy():
    out = gradcli("plot", "sin(x)*cos(y) + x*y^2", "--arg", "x=-2:2", "--arg", "y=-1:3",
                  "--points", "9", "--csv")
    header, table = csv_table(out.stdout)
    assert header == ["x", "y", "f", "df/dx", "df/dy"] and len(table) == 81
    x, y = sympy.symbols("x y")
    expr = sympy.sin(x) * sympy.cos(y) + x * y ** 2
    for row in table[::7]:
        at = {x: row[0], y: row[1]}
        expected = [expr.subs(at), sympy.diff(expr, x).subs(at), sympy.diff(expr, y).subs(at)]
        np.testing.assert_allclose(row[2:], [float(v) for v in expected], rtol=1e-12,
                                   atol=1e-12)


def test_contour_marks_critical_points_by_kind_where_the_math_puts_them():
    out = json.loads(gradcli("plot", "sin(x)*cos(y)", "--arg", "x=-3:3", "--arg", "y=-3:3",
                             "--json").stdout)
    got = sorted((p["kind"], round(p["x"], 9), round(p["y"], 9)) for p in out["points"])
    h = round(np.pi / 2, 9)
    assert got == sorted([("minimum", -h, 0.0), ("maximum", h, 0.0),
                          ("saddle", 0.0, -h), ("saddle", 0.0, h)])


def test_rosenbrock_valley_gives_one_minimum_not_false_crossings():
    out = json.loads(gradcli("plot", "(1 - x)^2 + 100*(y - x^2)^2", "--arg", "x=-2:2",
                             "--arg", "y=-1:3", "--json").stdout)
    assert [(p["kind"], round(p["x"], 9), round(p["y"], 9)) for p in out["points"]] == [
        ("minimum", 1.0, 1.0)]


@pytest.mark.slow
def test_terminal_heatmap_has_frame_scale_and_marks():
    out = gradcli("plot", "x^2 + y^2", "--arg", "x=-1:1", "--arg", "y=-1:1",
                  "--width", "41", "--height", "21")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1].startswith("┌" + "─" * 41 + "┐") and lines[1].endswith("y = 1")
    body = lines[2:23]
    assert all(len(line) == 43 for line in body)
    assert body[10][21] == "m"      # the minimum at the centre
    assert body[0][1] == "@" and body[10][20] == " "   # high corners, low centre
    assert "f: ' ' 0.000" in out.stdout and "… '@' 2;" in out.stdout


@pytest.mark.slow
def test_contour_png_has_colour_scale_low_in_the_middle(tmp_path):
    path = tmp_path / "c.png"
    out = gradcli("plot", "x^2 + y^2", "--arg", "x=-1:1", "--arg", "y=-1:1", "-o", str(path))
    assert out.returncode == 0, out.stderr
    pixels, axes = _png_axes(path)
    import matplotlib
    scale = matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3] * 255

    def position(x, y):  # where on the colour scale (0 low .. 1 high) the pixel lies
        row, col = _pixel(axes, x, y)
        return np.argmin(np.abs(scale - pixels[row, col]).sum(axis=1)) / 255

    # f = x^2 + y^2: low near the minimum (away from its marker), high at the corners
    assert position(0.1, 0.15) < 0.15
    assert position(-0.97, -0.97) > 0.85 and position(0.97, 0.97) > 0.85
    assert 0.35 < position(0.7, 0.7) < 0.65   # f = 0.98, about half of the top value 2


@pytest.mark.slow
def test_pole_draws_with_a_gap_and_undefined_f_is_refused():
    pole = gradcli("plot", "1/x", "--arg", "x=-1:1", "--points", "3", "--width", "30",
                   "--height", "5")
    assert pole.returncode == 0, pole.stderr
    assert "pole" in pole.stdout and "┌" in pole.stdout
    # log is nan for x < 0, though its rule would give 1/x: nothing is drawn
    nothing = gradcli("plot", "log(x)", "--arg", "x=-2:-1")
    assert nothing.returncode == 2 and "nothing to draw" in nothing.stderr


# ---------------------------------------------------------------------------------------
# Sizes: a contour grid batched from arrays whatever its size, refused above the limit
# ---------------------------------------------------------------------------------------
def _model(program, **declared):
    from gradcli.lang import Declarations, build, parse_program
    declarations = Declarations()
    for name, value in declared.items():
        declarations.add("arg", name, value)
    return build(parse_program(program), declarations)


def test_contour_grid_over_the_limit_is_refused_before_the_program_is_read():
    # 3000 per axis was a 9-million-point grid that ran point by point without end; the
    # program file does not exist: the limit is checked before it is read
    out = gradcli("plot", "@no/such/program.grad", "--arg", "x=-1:1", "--arg", "y=-1:1",
                  "--points", "3000")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("error: a contour grid of 3,000 x 3,000 = 9,000,000 points is over "
                          "the limit of 250,000 points (500 per axis: --points 500)\n")


def test_largest_allowed_grid_is_accepted_and_one_more_point_per_axis_is_not():
    from gradcli.run import plotting
    from gradcli.errors import LimitError
    plotting.check_size([np.zeros(500), np.zeros(500)])
    with pytest.raises(LimitError, match="501 x 500 = 250,500 points"):
        plotting.check_size([np.zeros(501), np.zeros(500)])


def test_largest_grid_is_batched_in_chunks_and_matches_numpy():
    from gradcli.run import plotting
    axes = [np.linspace(-1, 1, 500), np.linspace(-2, 3, 500)]
    table, how = plotting.sample_grid(_model("x^2 + y", x=-1.0, y=-2.0), ["x", "y"], axes)
    x, y = np.meshgrid(*axes)
    assert how == "vectorised"
    np.testing.assert_array_equal(table[0], x ** 2 + y)
    np.testing.assert_array_equal(table[1], 2 * x)
    np.testing.assert_array_equal(table[2], np.ones_like(x))


def test_grid_above_the_old_text_limit_is_batched_and_each_point_gets_its_own_value():
    # 100 x 100 points: the grid used to be written as program text, over the 100,000
    # character limit from 75 per axis, and then ran point by point; and sum([x, y]^2)
    # summed over every point of the grid at once, so it could not be batched that way
    out = gradcli("plot", "sum([x, y]^2)", "--arg", "x=-1:1", "--arg", "y=0:2", "--points",
                  "100", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["evaluation"] == "vectorised"
    x, y, f, dx, dy = np.array(result["samples"]).T
    gx, gy = np.meshgrid(np.linspace(-1, 1, 100), np.linspace(0, 2, 100))
    np.testing.assert_array_equal(x, gx.ravel())
    np.testing.assert_array_equal(y, gy.ravel())
    np.testing.assert_array_equal(f, x ** 2 + y ** 2)
    np.testing.assert_array_equal(dx, 2 * x)
    np.testing.assert_array_equal(dy, 2 * y)


def test_points_too_big_for_one_evaluation_go_in_smaller_chunks(monkeypatch):
    # 10,000 points x 100 elements is over a (lowered) array limit of one evaluation:
    # halves, still batched (the text path ran these point by point)
    from gradcli.run import plotting
    from gradcli.lang import limits
    monkeypatch.setattr(limits, "MAX_ELEMENTS", 100_000)
    axes = [np.linspace(-1, 1, 100), np.linspace(0, 1, 100)]
    table, how = plotting.sample_grid(_model("sum((x^2 + y) * ones(100))", x=-1.0, y=0.0),
                                      ["x", "y"], axes)
    x, y = np.meshgrid(*axes)
    assert how == "vectorised"
    np.testing.assert_allclose(table[0], 100 * (x ** 2 + y), rtol=1e-13)
    np.testing.assert_allclose(table[1], 200 * x, rtol=1e-13)
    np.testing.assert_array_equal(table[2], np.full_like(x, 100.0))


def test_curve_over_the_point_limit_is_refused():
    out = gradcli("plot", "x^2", "--arg", "x=linspace(0, 1, 200000)")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == "error: a curve of 200,000 points is over the limit of 100,000 points\n"


def test_a_failing_point_is_found_by_halves_and_alone_is_nan():
    # inv is singular at x = 0 only: that point is nan, every other one is 1/x + 1
    from gradcli.run import plotting
    xs = np.linspace(-1, 1, 2001)
    (f, df), how = plotting.sample(_model("sum(inv([[x, 0], [0, 1]]))", x=-1.0), "x", xs)
    assert how == "loop"
    zero = 1000
    assert xs[zero] == 0.0 and np.isnan(f[zero]) and np.isnan(df[zero])
    rest = np.arange(2001) != zero
    np.testing.assert_allclose(f[rest], 1 / xs[rest] + 1, rtol=1e-13)
    np.testing.assert_allclose(df[rest], -1 / xs[rest] ** 2, rtol=1e-13)


def test_points_computed_alone_are_capped_with_a_clear_message(monkeypatch):
    # cholesky fails for every x < 0: half the points would go one at a time
    from gradcli.run import plotting
    from gradcli.errors import LimitError
    monkeypatch.setattr(plotting, "MAX_SINGLE_POINTS", 100)
    model = _model("sum(cholesky([[x, 0], [0, 1]]))", x=-1.0)
    with pytest.raises(LimitError) as caught:
        plotting.sample(model, "x", np.linspace(-1, 1, 400))
    assert "the program fails at some points (cholesky" in caught.value.message
    assert "more than 100 would be (the limit): use fewer --points" in caught.value.message
    # within the cap: nan where it fails, sqrt(x) + 1 elsewhere
    xs = np.linspace(-1, 1, 150)
    (f, df), how = plotting.sample(model, "x", xs)
    assert how == "loop" and np.all(np.isnan(f[xs < 0]))
    np.testing.assert_allclose(f[xs > 0], np.sqrt(xs[xs > 0]) + 1, rtol=1e-13)
    np.testing.assert_allclose(df[xs > 0], 0.5 / np.sqrt(xs[xs > 0]), rtol=1e-13)


@pytest.mark.slow
@pytest.mark.parametrize("mode, columns", [
    ("grad", lambda x: [3 * x ** 2, 6 * x, x ** 2]),           # d/dx and d/da of a*x^2
    ("value-grad", lambda x: [3 * x ** 2, x ** 2]),            # d/dw of w*x^2
    ("tape", lambda x: [3 * x ** 2, x ** 2, 6 * x]),           # w (read), then x (watched)
])
def test_mode_curves_are_batched_with_a_gradient_per_point(mode, columns):
    # --mode ran each point alone (100,000 points took 35 s); a value shared by every
    # point (a=3, w=3) gets its own copy per point, so its gradient is per point too
    program, other = (("a*x^2", ["--arg", "a=3"]) if mode == "grad"
                      else ("w*x^2", ["--var", "w=3"]))
    out = gradcli("plot", program, "--arg", "x=-2:2", *other, "--points", "3001",
                  "--mode", mode, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["evaluation"] == "vectorised"
    samples = np.array(result["samples"])
    x = np.linspace(-2, 2, 3001)
    np.testing.assert_array_equal(samples[:, 0], x)
    np.testing.assert_allclose(samples[:, 1:].T, columns(x), rtol=1e-15, atol=0)


# ---------------------------------------------------------------------------------------
# Sample points are numbers, never text read back; values near float64's edge are drawn
# ---------------------------------------------------------------------------------------
def test_terminal_plot_of_values_near_float64s_edge_is_drawn_with_scaled_labels():
    out = gradcli("plot", "x*1e308", "--arg", "x=-1:1", "--points", "5", "--width", "40",
                  "--height", "8")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    top, bottom = lines.index("┌" + "─" * 40 + "┐"), lines.index("└" + "─" * 40 + "┘")
    # the labels carry the power of ten the values are drawn divided by
    assert lines[top + 1].endswith("│ 1e308") and lines[bottom - 1].endswith("│ -1e308")


def test_terminal_plot_of_a_curve_running_into_overflow_is_drawn():
    out = gradcli("plot", "1e300*x^2", "--arg", "x=-1e5:1e5", "--points", "50",
                  "--width", "40", "--height", "8")
    assert out.returncode == 0, out.stderr
    assert "┌" in out.stdout and "non-finite" in out.stdout and out.stderr == ""


def test_range_whose_span_overflows_gives_finite_points_not_nan():
    out = gradcli("plot", "x^2", "--arg", "x=-1e308:1e308", "--points", "5", "--json")
    assert out.returncode == 0, out.stderr
    samples = json.loads(out.stdout)["samples"]
    # x^2 overflows but at 0; 2x overflows at the ends
    assert samples == [[-1e308, "inf", "-inf"], [-5e307, "inf", -1e308], [0.0, 0.0, 0.0],
                       [5e307, "inf", 1e308], [1e308, "inf", "inf"]]


def test_linspace_range_whose_span_overflows_is_refused_without_a_name_never_typed():
    out = gradcli("plot", "x^2", "--arg", "x=linspace(-1e308, 1e308, 5)")
    assert out.returncode == 2 and out.stdout == ""
    assert "its points are not all finite numbers (the span overflows float64)" \
        in out.stderr and "nan" not in out.stderr


def test_heat_map_of_huge_values_is_drawn():
    out = gradcli("plot", "x*1e308 + y", "--arg", "x=-1:1", "--arg", "y=-1:1", "--points",
                  "5", "--width", "20", "--height", "5")
    assert out.returncode == 0, out.stderr
    assert "f: ' ' -1e+308 … '@' 1e+308" in out.stdout
    # f grows with x alone (y is nothing beside 1e308): the same shades on every line
    rows = out.stdout.splitlines()[2:7]
    assert rows == ["│   :::::====#####@@@│"] * 5


def _in_process(*args):
    """The command line in this process (matplotlib is imported once for the file)."""
    from typer.testing import CliRunner

    from gradcli.cli.app import app
    return CliRunner().invoke(app, [str(a) for a in args])


def test_image_of_huge_values_is_drawn_divided_by_a_power_of_ten(tmp_path):
    path = tmp_path / "big.png"
    out = _in_process("plot", "x", "--arg", "x=-1e308:1e308", "--points", "5", "-o", path)
    assert out.exit_code == 0, out.output
    _, axes = _png_axes(path)
    assert axes["xscale"] == 1e308 and axes["yscale"] == 1e308
    assert axes["xlim"][0] < -0.99 and axes["xlim"][1] > 0.99   # drawn from -1 to 1


def test_contour_image_of_huge_values_is_drawn(tmp_path):
    out = _in_process("plot", "x+y", "--arg", "x=-1e308:1e308", "--arg", "y=-1:1",
                      "--points", "5", "-o", tmp_path / "c.png")
    assert out.exit_code == 0, out.output
    assert out.output == f"wrote {tmp_path / 'c.png'}\n"


def test_non_scalar_target_names_the_point_as_a_plain_number():
    out = gradcli("plot", "[x, x]", "--arg", "x=-1:1")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("error: plot needs a scalar target; at x = -1.0 the target has "
                          "shape (2,) (reduce it, e.g. sum(...))\n")


def test_non_scalar_target_on_a_grid_names_both_coordinates():
    out = gradcli("plot", "[x, y]", "--arg", "x=-1:1", "--arg", "y=0:1")
    assert out.returncode == 2 and out.stdout == ""
    assert "at x = -1.0, y = 0.0 the target has shape (2,)" in out.stderr


def test_critical_points_of_a_grid_are_all_found_where_the_math_puts_them():
    # sin(3x) sin(3y) on [-3, 3]^2: saddles where both sines vanish (x, y = k pi/3),
    # maxima and minima where both cosines do ((k + 1/2) pi/3): 25 + 36 points
    out = gradcli("plot", "sin(3*x)*sin(3*y)", "--arg", "x=-3:3", "--arg", "y=-3:3",
                  "--points", "100", "--json")
    assert out.returncode == 0, out.stderr
    zeros = [k * np.pi / 3 for k in range(-2, 3)]
    peaks = [(k + 0.5) * np.pi / 3 for k in range(-3, 3)]
    expected = [("saddle", x, y) for x in zeros for y in zeros] + [
        ("maximum" if np.sin(3 * x) * np.sin(3 * y) > 0 else "minimum", x, y)
        for x in peaks for y in peaks]
    got = [(p["kind"], p["x"], p["y"]) for p in json.loads(out.stdout)["points"]]

    def order(points):
        return sorted(points, key=lambda p: (p[0], round(p[1], 3), round(p[2], 3)))
    assert [p[0] for p in order(got)] == [p[0] for p in order(expected)]
    np.testing.assert_allclose([p[1:] for p in order(got)], [p[1:] for p in order(expected)],
                               atol=1e-9)


def test_too_many_critical_points_to_mark_are_counted_in_a_note_not_refined():
    # sin(5x) sin(5y) on [-3, 3]^2 has 9 * 9 + 10 * 10 = 181 critical points
    out = gradcli("plot", "sin(5*x)*sin(5*y)", "--arg", "x=-3:3", "--arg", "y=-3:3",
                  "--points", "100", "--json")
    assert out.returncode == 0, out.stderr
    note = ("181 critical points on the grid, more than 100: none is marked (plot a smaller "
            "range to see them)")
    result = json.loads(out.stdout)
    assert result["points"] == [] and result["notes"] == [note]
    assert out.stderr == f"note: {note}\n"
