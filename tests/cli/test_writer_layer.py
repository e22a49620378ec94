"""The writer layer (issue 21): every command of the table whose record has an ``at``
(per-point function) computes its result through that function, the result says what it
holds once (``report()``, ``layout()``), and the SAME writer objects of io/writers/ render
it: JSON and plain at one point; JSON Lines, plain, CSV, .npz and the human table at many.
The numbers are checked against the derivatives of f = x^2 * y by hand, never against
the engine."""
from __future__ import annotations

import io
import json
from importlib import import_module

import numpy as np
import pytest

from gradcli.cli.app import COMMANDS
from gradcli.io.points import Chunk
from gradcli.io.writers import WRITERS, json as json_writer, plain as plain_writer
from gradcli.io.writers.human import HumanWriter
from gradcli.lang import Declarations, build, parse_program
from gradcli.run.many import Evaluator, evaluate_chunk, per_point
from gradcli.run.modes import ModeOptions

PROGRAM = "x^2 * y"
POINTS = np.array([[3.0, 2.0], [-1.0, 0.5], [0.25, -4.0]])


def truth(x: float, y: float) -> dict:
    """f = x^2 y by hand: its value, gradient, Hessian and jvp along x."""
    return {"value": x * x * y, "gradient": [2 * x * y, x * x],
            "hessian": [[2 * y, 2 * x], [2 * x, 0.0]], "jvp": 2 * x * y}


# name -> (declarations, the per-point function's arguments, what a row shows by hand)
CASES = {
    "tape": ("var", {"mode": "tape", "options": ModeOptions()},
             lambda t: [t["value"], *t["gradient"]]),
    "grad": ("arg", {"mode": "grad", "options": ModeOptions()}, lambda t: t["gradient"]),
    "implicit": ("var", {"mode": "implicit", "options": ModeOptions()},
                 lambda t: t["gradient"]),
    "value-grad": ("var", {"mode": "value-grad", "options": ModeOptions()},
                   lambda t: [t["value"], *t["gradient"]]),
    "jacobian": ("arg", {"wrt": None, "mode": "rev"}, lambda t: [t["value"], *t["gradient"]]),
    "hessian": ("arg", {"wrt": None},
                lambda t: [t["value"], *t["gradient"], *np.ravel(t["hessian"])]),
    "jvp": ("arg", {"tangents": ["x=1"]}, lambda t: [t["value"], t["jvp"]]),
}
AT_COMMANDS = [c for c in COMMANDS if c.at is not None]


def _named(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(import_module(f"gradcli.{module}"), name)


def _model(kind: str, x: float = 3.0, y: float = 2.0):
    decls = Declarations.from_options(**{kind: [f"x={x}", f"y={y}"]})
    return build(parse_program(PROGRAM), decls)


def _numbers(obj) -> list:
    """Every number of a JSON value, in order (hessian's labels and words left out)."""
    if isinstance(obj, dict):
        return [n for key, v in obj.items() if key not in ("row", "shape", "labels")
                for n in _numbers(v)]
    if isinstance(obj, list):
        return [n for v in obj for n in _numbers(v)]
    return [float(obj)] if isinstance(obj, (int, float)) and not isinstance(obj, bool) else []


def _floats(tokens) -> list:
    """The numbers among text tokens (words such as a verdict or null left out)."""
    out = []
    for token in tokens:
        try:
            out.append(float(token))
        except ValueError:
            pass
    return out


def test_every_command_with_many_points_is_covered_here():
    assert {c.name for c in AT_COMMANDS} == set(CASES)


@pytest.mark.parametrize("command", AT_COMMANDS, ids=lambda c: c.name)
def test_one_point_renders_through_the_json_and_plain_writers(command):
    kind, arguments, shown = CASES[command.name]
    result = _named(command.at)(model=_model(kind), **arguments)
    assert isinstance(result, _named(command.result))
    report = result.report()
    expected = shown(truth(3.0, 2.0))
    got = _numbers(json_writer.as_json(report))
    assert got[:len(expected)] == pytest.approx(expected, rel=1e-12)
    plain = _floats(t for line in plain_writer.lines(report, None) for t in line.split())
    assert plain[:len(expected)] == pytest.approx(expected, rel=1e-12)


def _rows(command):
    """The command at POINTS, through run.many (as --at and a worker compute them)."""
    kind, arguments, _ = CASES[command.name]
    model = _model(kind)
    evaluate = Evaluator(model, per_point(command.at, arguments))
    chunk = Chunk(0, {"x": POINTS[:, 0].copy(), "y": POINTS[:, 1].copy()}, POINTS.copy())
    parts = evaluate_chunk(evaluate, chunk)
    assert len(parts) == 1 and parts[0].n == len(POINTS)
    return evaluate, parts[0]


def _write(command, fmt: str, evaluate, part) -> str:
    out = io.StringIO()
    writer_class = {**WRITERS, "human": HumanWriter}[fmt]
    writer = writer_class(out, None, evaluate.meta.layout, ["x", "y"],
                          _named(command.result).ROWS, [])
    writer.start(part, ["x", "y"])
    writer.write(part)
    writer.finish()
    return out.getvalue()


@pytest.mark.parametrize("command", AT_COMMANDS, ids=lambda c: c.name)
def test_many_points_render_through_every_at_writer(command, capsys):
    _, _, shown = CASES[command.name]
    evaluate, part = _rows(command)
    expected = [shown(truth(x, y)) for x, y in POINTS]

    lines = _write(command, "json", evaluate, part).splitlines()
    assert len(lines) == len(POINTS)
    for row, (line, want) in enumerate(zip(lines, expected)):
        obj = json.loads(line)
        assert obj["row"] == row
        assert _numbers(obj)[:len(want)] == pytest.approx(want, rel=1e-12)
        # the row's object is the single-point JSON at that row
        x, y = POINTS[row]
        kind, arguments, _ = CASES[command.name]
        one = _named(command.at)(model=_model(kind, x, y), **arguments)
        assert {k: v for k, v in obj.items() if k != "row"} == json.loads(
            json.dumps(json_writer.as_json(one.report())))

    for line, want in zip(_write(command, "plain", evaluate, part).splitlines(), expected):
        numbers = _floats(line.split())
        assert numbers[:len(want)] == pytest.approx(want, rel=1e-12)

    csv = _write(command, "csv", evaluate, part).splitlines()
    assert csv[0].split(",")[:3] == ["row", "x", "y"]
    for row, (line, want) in enumerate(zip(csv[1:], expected)):
        cells = line.split(",")
        assert [float(c) for c in cells[:3]] == [row, *POINTS[row]]
        numbers = _floats(cells[3:])
        assert numbers[:len(want)] == pytest.approx(want, rel=1e-12)

    _write(command, "human", evaluate, part)
    text = capsys.readouterr().out
    assert f"{len(POINTS)} rows" in text
    for want in expected:
        assert repr(float(want[0])) in text or repr(float(want[0]) + 0.0) in text


@pytest.mark.parametrize("command", AT_COMMANDS, ids=lambda c: c.name)
def test_npz_holds_the_rows_numbers(command, tmp_path):
    from gradcli.io.writers import NpzOutput, NpzWriter
    _, _, shown = CASES[command.name]
    evaluate, part = _rows(command)
    path = tmp_path / "out.npz"
    npz = NpzOutput(str(path), ["x", "y"], {"x": (), "y": ()}, [])
    writer = NpzWriter(npz, None, evaluate.meta.layout, ["x", "y"],
                       _named(command.result).ROWS, [])
    writer.start(part, ["x", "y"])
    writer.write(part)
    writer.finish()
    with np.load(path) as z:
        assert z["row"].tolist() == [0, 1, 2]
        for i, (x, y) in enumerate(POINTS):
            numbers = [float(v) for name in z.files
                       if name not in ("row", "x", "y", "error", "error_message", "verdict",
                                       "eigenvalues")
                       for v in np.ravel(z[name][i])]
            want = shown(truth(x, y))
            assert numbers[:len(want)] == pytest.approx(want, rel=1e-12)


def test_critical_points_render_through_the_same_json_and_plain_writers():
    # f = x^3 - 3x: f' = 3x^2 - 3 is zero at x = -1 (a maximum, f = 2) and 1 (a minimum,
    # f = -2), by hand
    from gradcli.run.critical import Critical, critical
    command = next(c for c in COMMANDS if c.name == "critical")
    result = critical("x^3 - 3*x", var=None, frozen=None, arg=["x=-3:3"], target=None,
                      solve_timeout=0.1)
    assert isinstance(result, _named(command.result)) and isinstance(result, Critical)
    report = result.report()
    obj = json_writer.as_json(report)
    assert [(p["at"]["x"], p["value"], p["verdict"]) for p in obj["points"]] == [
        (pytest.approx(-1.0), pytest.approx(2.0), "maximum"),
        (pytest.approx(1.0), pytest.approx(-2.0), "minimum")]
    assert plain_writer.lines(report, 3) == ["-1 2 maximum", "1 -2 minimum"]


def _record(name: str):
    return next(c for c in COMMANDS if c.name == name)


def test_the_function_table_renders_through_the_json_writer():
    import math

    from gradcli.run.functions import FunctionTable, function_table
    table = function_table()
    assert isinstance(table, _named(_record("functions").result))
    assert isinstance(table, FunctionTable)
    out = io.StringIO()
    json_writer.write(table.report(), out)
    obj = json.loads(out.getvalue())
    assert obj["constants"]["pi"] == math.pi and obj["constants"]["e"] == math.e
    by_name = {f["name"]: f for f in obj["functions"]}
    assert obj["constants"]["inf"] == "inf"  # (JSON has no infinity)
    assert {k: by_name["sin"][k] for k in ("inputs", "derivative", "reverse", "forward")} \
        == {"inputs": ["x"], "derivative": "cos(x)", "reverse": True, "forward": True}
    assert len(by_name) == len(obj["functions"]) == len(table.entries)
    assert plain_writer.lines(table.report(), None) == []


def test_a_minimize_run_renders_through_the_same_json_and_plain_writers():
    # (x - 3)^2 by sgd with lr 0.1 from x = 0: x - 3 shrinks by 1 - 0.1*2 = 0.8 a step,
    # so after 20 steps x = 3 - 3*0.8^20, the loss (3*0.8^20)^2 and the gradient's norm
    # 6*0.8^20; step k of the history has loss 9*0.64^k and norm 6*0.8^k (by hand)
    from gradcli.run.optimize import minimize_program
    model = build(parse_program("(x - 3)^2"), Declarations.from_options(var=["x=0"]))
    result = minimize_program(model, "sgd", lr=0.1, steps=20)
    assert isinstance(result, _named(_record("minimize").result))
    report = result.report(0.1, default=False)
    obj = json.loads(json.dumps(json_writer.as_json(report)))
    assert (obj["optimizer"], obj["optimizer_default"], obj["lr"]) == ("sgd", False, 0.1)
    assert obj["variables"] == [{"name": "x", "value": pytest.approx(3 - 3 * 0.8 ** 20)}]
    assert obj["loss"] == pytest.approx((3 * 0.8 ** 20) ** 2, rel=1e-12)
    assert obj["grad_norm"] == pytest.approx(6 * 0.8 ** 20, rel=1e-12)
    assert (obj["steps"], obj["reason"], obj["converged"]) == (20, "max steps", False)
    assert [(h["step"], h["loss"], h["grad_norm"]) for h in obj["history"][:3]] == [
        (k, pytest.approx(9 * 0.64 ** k), pytest.approx(6 * 0.8 ** k)) for k in range(3)]
    assert plain_writer.lines(report, 4) == ["0.001196", "2.965"]


def test_diff_and_idiff_formulas_render_through_the_same_json_and_plain_writers():
    # f = x^2 y at (1, 2): df/dx = 2xy = 4, df/dy = x^2 = 1; on x^2 + y^2 = 1 at
    # (0.6, 0.8): dy/dx = -x/y = -0.75 (by hand)
    from gradcli.run.formulas import Formulas, diff
    from gradcli.run.idiff import idiff
    assert {_named(_record(name).result) for name in ("diff", "idiff")} == {Formulas}
    result = diff("x^2*y", arg=["x=1", "y=2"], budget=60)
    obj = json_writer.as_json(result.report("diff"))
    assert (obj["mode"], obj["variables"]) == ("diff", ["x", "y"])
    assert [(d["wrt"], d["value"], d["verified"]["agrees"]) for d in obj["derivatives"]] == [
        (["x"], 4.0, True), (["y"], 1.0, True)]
    formulas = [d["formula"] for d in obj["derivatives"]]
    assert plain_writer.lines(result.report("diff"), None) == [
        f"{formulas[0]} = 4.0", f"{formulas[1]} = 1.0"]
    latex = [d["latex"] for d in obj["derivatives"]]
    assert plain_writer.lines(result.report("diff", latex=True), 2) == [
        f"{latex[0]} = 4", f"{latex[1]} = 1"]

    implicit = idiff("x^2 + y^2 = 1", dep="y", wrt="x", arg=["x=0.6", "y=0.8"], budget=60)
    assert isinstance(implicit, Formulas)
    obj = json_writer.as_json(implicit.report("idiff", dep="y"))
    assert list(obj)[:2] == ["mode", "dep"] and (obj["mode"], obj["dep"]) == ("idiff", "y")
    assert [d["value"] for d in obj["derivatives"]] == [pytest.approx(-0.75, rel=1e-12)]
    assert plain_writer.lines(implicit.report("idiff", "y"), 3)[0].endswith(" = -0.75")


def test_diff_steps_are_plain_lines_of_the_same_report():
    # d/dx x^2 sin(x): the factors' derivatives 2x and cos(x), then the product rule's
    # 2x sin(x) + x^2 cos(x) (by hand), then "= RESULT", then the formula's line
    from gradcli.run.steps import diff_with_steps
    result = diff_with_steps("x^2*sin(x)", budget=60)
    report = result.report("diff")
    (d,) = result.derivatives
    lines = plain_writer.lines(report, None)
    assert lines[:3] == ["d/dx x^2 = 2*x", "d/dx sin(x) = cos(x)",
                         "d/dx x^2*sin(x) = 2*x*sin(x) + x^2*cos(x)"]
    assert lines[3:] == ["= 2*x*sin(x) + x^2*cos(x)", d.formula]
    obj = json_writer.as_json(report)
    assert obj["derivatives"][0]["steps_result"]["agrees"] is True
    assert [st["expression"] for st in obj["derivatives"][0]["steps"]] == [
        line.split(" = ")[0][len("d/dx "):] for line in lines[:-2]]


def test_a_taylor_polynomial_renders_through_the_same_json_and_plain_writers():
    # exp(x) at 0 to order 3: coefficients 1, 1, 1/2, 1/6 (by hand)
    from gradcli.run.taylor import taylor
    result = taylor("exp(x)", ["x=0"], 3)
    obj = json_writer.as_json(result.report())
    assert [c["value"] for c in obj["coefficients"]] == pytest.approx([1, 1, 0.5, 1 / 6])
    assert obj["verified"]["agrees"] is True
    assert plain_writer.lines(result.report(), None) == [obj["polynomial"]]
    assert plain_writer.lines(result.report(latex=True), None) == [obj["latex"]]


def _hand_samples(xs: list) -> list:
    # f = x^3 - 3x, f' = 3x^2 - 3, f'' = 6x (by hand)
    return [[x, x ** 3 - 3 * x, 3 * x * x - 3, 6 * x] for x in xs]


def test_a_plot_table_renders_through_the_json_writer_and_the_csv_table_writer():
    from gradcli.io.writers.csvtext import write_table
    from gradcli.run.plotting import plot_program
    result = plot_program("x^3 - 3*x", arg=["x=-2:2"], points=5, order=2)
    assert isinstance(result, _named(_record("plot").result))
    obj = json_writer.as_json(result.report(order=2))
    want = _hand_samples([-2.0, -1.0, 0.0, 1.0, 2.0])
    assert (obj["order"], obj["derivatives"]) == (2, "ranged")
    assert obj["columns"] == ["x", "f", "df/dx", "d2f/dx2"]
    assert obj["samples"] == want
    # the maximum at x = -1 (f = 2) and the minimum at x = 1 (f = -2)
    assert obj["points"] == [{"kind": "maximum", "x": -1.0, "f": 2.0},
                             {"kind": "minimum", "x": 1.0, "f": -2.0}]
    out = io.StringIO()
    write_table(result.report(order=2), 3, out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "x,f,df/dx,d2f/dx2"
    assert [[float(c) for c in line.split(",")] for line in lines[1:]] == want
    assert lines[1] == "-2,-2,9,-12"  # (3 significant digits)
    assert plain_writer.lines(result.report(), None) == []


def test_a_contour_table_has_a_row_per_grid_point():
    # f = x*y on x in {0, 1}, y in {2, 3}: df/dx = y, df/dy = x (by hand), x varying first
    from gradcli.run.plotting import plot_program
    result = plot_program("x*y", arg=["x=0:1", "y=2:3"], points=2)
    obj = json_writer.as_json(result.report())
    assert obj["columns"] == ["x", "y", "f", "df/dx", "df/dy"]
    assert obj["samples"] == [[x, y, x * y, y, x] for y in (2.0, 3.0) for x in (0.0, 1.0)]


ROUTED = [  # (argv, the writer that prints it, the report's mode)
    (["functions", "--json"], "json", "functions"),
    (["diff", "x^2", "--json"], "json", "diff"),
    (["diff", "x^2", "--plain"], "plain", "diff"),
    (["idiff", "x^2 + y^2 = 1", "--dep", "y", "--wrt", "x", "--plain"], "plain", "idiff"),
    (["diff", "exp(x)", "--taylor", "x=0", "--json"], "json", "taylor"),
    (["plot", "x^2", "--arg", "x=-1:1", "--points", "3", "--json"], "json", "plot"),
    (["plot", "x^2", "--arg", "x=-1:1", "--points", "3", "--csv"], "table", "plot"),
    (["minimize", "(x-3)^2", "--var", "x=0", "--optimizer", "sgd", "--steps", "2",
      "--json"], "json", "minimize"),
    (["minimize", "(x-3)^2", "--var", "x=0", "--optimizer", "sgd", "--steps", "2",
      "--plain"], "plain", "minimize"),
]


@pytest.mark.parametrize("argv, writer, mode", ROUTED, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else v)
def test_the_commands_print_through_the_writer_objects(argv, writer, mode, monkeypatch):
    # each command's --json, --plain and --csv is its result's Report handed to the one
    # writer object (recorded here), and what it printed is all of standard output
    from typer.testing import CliRunner

    from gradcli.cli.app import app
    from gradcli.io.writers import csvtext
    seen = []
    module, name = {"json": (json_writer, "write"), "plain": (plain_writer, "write"),
                    "table": (csvtext, "write_table")}[writer]
    real = getattr(module, name)

    def recorded(report, *args, **kwargs):
        seen.append(report)
        return real(report, *args, **kwargs)
    monkeypatch.setattr(module, name, recorded)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert [r.mode for r in seen] == [mode]
    out = io.StringIO()
    if writer == "json":
        json_writer.write_json(json_writer.as_json(seen[0]), out)
    elif writer == "table":
        csvtext.write_table(seen[0], None, out)
    else:
        out.write("".join(line + "\n" for line in plain_writer.lines(seen[0], None)))
    assert result.stdout == out.getvalue()


# ---------------------------------------------------------------------------------------
# The human page: every command's result says what its page shows (``page()``), and the
# one page writer (io/writers/page.py) lays it out; cli/ only chooses the writer
# ---------------------------------------------------------------------------------------
HUMAN = [
    ["grad", "x^2*y", "--arg", "x=3", "--arg", "y=2", "--check", "--symbolic"],
    ["value-grad", "w*x", "--var", "w=2", "--arg", "x=[1, 2]"],
    ["compare", "[x*y, sin(x)]", "--arg", "x=1", "--arg", "y=2"],
    ["compare", "x^2*y", "--arg", "x=3", "--arg", "y=2", "--tangent", "x=1", "--check"],
    ["functions"],
    ["jacobian", "[x*y, sin(x)]", "--arg", "x=1", "--arg", "y=2", "--check"],
    ["hessian", "x^2 - y^2", "--arg", "x=0", "--arg", "y=0"],
    ["grad", "x^3", "--arg", "x=2", "--order", "2"],
    ["jvp", "x^2*y", "--arg", "x=3", "--arg", "y=2", "--tangent", "x=1"],
    ["diff", "x^2*y", "--arg", "x=1", "--arg", "y=2"],
    ["diff", "sin(x^2)", "--steps"],
    ["diff", "exp(x)", "--taylor", "x=0"],
    ["idiff", "x^2 + y^2 = 1", "--dep", "y", "--wrt", "x"],
    ["critical", "x^3 - 3*x", "--arg", "x=-3:3"],
    ["plot", "x^3 - 3*x", "--arg", "x=-2:2", "--width", "40", "--height", "8"],
    ["minimize", "(x-3)^2", "--var", "x=0", "--optimizer", "sgd", "--steps", "2"],
]


@pytest.mark.parametrize("argv", HUMAN, ids=" ".join)
def test_every_human_page_is_written_by_the_page_writer(argv, monkeypatch):
    # all of standard output is what the page writer wrote of the pages it was given
    import contextlib

    from typer.testing import CliRunner

    from gradcli.cli.app import app
    from gradcli.io.report import Page
    from gradcli.io.writers import page as page_writer
    real, pages, written = page_writer.write, [], []

    def recorded(page, out=None):
        assert isinstance(page, Page) and page.blocks
        pages.append(page)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            real(page, out)
        written.append(buffer.getvalue())
        print(written[-1], end="")
    monkeypatch.setattr(page_writer, "write", recorded)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert pages and result.stdout == "".join(written)


def _cli_modules():
    import pathlib

    import gradcli.cli
    return sorted(pathlib.Path(gradcli.cli.__file__).parent.glob("*.py"))


def test_no_command_module_lays_out_output_itself():
    # cli/ imports no rich module but the progress bars (rich.progress, on standard error),
    # takes no layout piece of the human writer, and builds no table or styled text
    import ast
    layout = {"show_table", "styled", "Table", "Text", "add_row", "add_column",
              "print_value_lines", "print_notes"}
    found = []
    for path in _cli_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
                if (node.module or "").endswith("writers.human"):
                    found += [f"{path.name}: {alias.name}" for alias in node.names
                              if alias.name not in ("console", "emit", "HumanWriter")]
                found += [f"{path.name}: {alias.name}" for alias in node.names
                          if alias.name in layout]
            elif isinstance(node, (ast.Attribute, ast.Name)):
                name = node.attr if isinstance(node, ast.Attribute) else node.id
                if name in layout:
                    found.append(f"{path.name}: {name}")
                continue
            else:
                continue
            found += [f"{path.name}: import {m}" for m in modules
                      if (m == "rich" or m.startswith("rich.")) and m != "rich.progress"]
    assert not found
    assert len(_cli_modules()) > 10  # (the search looked where the modules are)


def test_every_meaning_a_page_names_has_a_look():
    from gradcli.io.report import MEANINGS, STATUS_MEANING
    from gradcli.io.writers.page import STYLES
    assert set(STYLES) == set(MEANINGS) >= set(STATUS_MEANING.values())
