"""The human output of ``jacobian``, ``hessian`` and ``grad --order`` prints every number so
that it reads back to the computed value, and every name, label, formula and note as
written (issue 9, "Rich markup eats output" and "Numbers are cut").

As in tests/cli/test_cli_output.py: random results (nan, inf, -0.0, huge and tiny numbers,
float32 and float64) with names full of square brackets go through their pages (``page()``
of the result types, written by io/writers/page.py) in-process at widths 40, 80 and 200; the printed numbers are
parsed back and compared with the values. The real commands run at the same widths with
bracketed values and non-finite results, checked against their own ``--json`` and
against values worked out by hand.

GRADCLI_PROPERTY_EXAMPLES sets the number of examples (default 60).
"""
from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_cli_output import (MARKUP, NAMES, NUMBER, PRECISIONS, SETTINGS, WIDTHS, arrays,
                             canonical, float_like, key, printed_numbers)
from typer.testing import CliRunner

from gradcli.cli import higher, render
from gradcli.cli.app import app
from gradcli.io.report import Page
from gradcli.run.derivatives import HessianResult, Jacobian, JacobianResult, classify, labels
from gradcli.run.modes import Gradient, Outcome

# What rich markup would have printed (or eaten): none of it may appear as a tag.
TAGS = ("[bold", "[/bold", "[dim", "[/dim", "[red", "[/red", "[yellow", "[/yellow", "[/]")


def rendered(print_fn, *args, width: int, **kwargs) -> str:
    """What ``print_fn(*args, out=...)`` prints on a console of ``width`` columns (a
    page: what the page writer prints of it)."""
    if isinstance(print_fn, Page):
        print_fn, args = render.show, (print_fn, *args)
    buffer = io.StringIO()
    print_fn(*args, out=render.console(file=buffer, width=width), **kwargs)
    return buffer.getvalue()


def flat(text: str) -> str:
    return " ".join(text.split())


def assert_numbers(text: str, required: list[float], allowed: list[float] = ()) -> None:
    """Every required number is printed, every printed value is required or allowed
    (numbers of an explanation at 3 digits), none elided."""
    assert "…" not in text, text
    shown = {key(x) for x in printed_numbers(text)}
    missing = {key(x) for x in required} - shown
    assert not missing, (missing, text)
    stray = {key(x) for x in float_like(text)} - {key(x) for x in [*required, *allowed]}
    assert not stray, (stray, text)


def assert_literal(text: str, literals) -> None:
    """Each user or computed text is printed as written, and no markup tag is printed
    besides those in these texts (our own styles are styles, not tags)."""
    rest = flat(text)
    for literal in literals:
        assert flat(literal) in rest, (literal, text)
    for literal in sorted(literals, key=len, reverse=True):
        rest = rest.replace(flat(literal), " ")
    assert not any(tag in rest for tag in TAGS), text


# ---------------------------------------------------------------------------------------
# Random results through the render functions
# ---------------------------------------------------------------------------------------
@st.composite
def jacobian_results(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    value = draw(arrays(dtype))
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    jacobians = [Jacobian(name, draw(arrays(dtype)), draw(st.booleans())) for name in names]
    return JacobianResult(value, jacobians, "reverse", "rev")


@pytest.mark.slow
@SETTINGS
@given(result=jacobian_results(), precision=PRECISIONS, width=WIDTHS,
       target=st.one_of(st.none(), MARKUP))
def test_jacobian_human_output_prints_every_number_and_name_as_it_is(result, precision,
                                                                     width, target):
    text = rendered(result.page(precision, None, target), width=width)
    values = [result.value] + [j.jacobian for j in result.jacobians]
    assert_numbers(text, [x for v in values for x in canonical(v, precision)])
    assert_literal(text, [j.name for j in result.jacobians] + [target or "target"])
    unconnected = sum(not j.connected for j in result.jacobians)
    # (a narrow cell may wrap the marker after "(not")
    assert text.count("connected)") == unconnected


@pytest.mark.slow
@SETTINGS
@given(result=jacobian_results(), error=st.one_of(st.none(), MARKUP),
       precision=PRECISIONS, width=WIDTHS)
def test_compare_jacobian_row_prints_every_number_and_message_as_it_is(result, error,
                                                                       precision, width):
    row = higher.CompareRow.__new__(higher.CompareRow)  # the row without running a model
    row.result, row.error = (None, error) if error else (result, None)
    text = rendered(row.print_human, precision, width=width)
    if error:
        assert_literal(text, [f"error: {error}"])
        return
    expected = [x for j in result.jacobians for x in canonical(j.jacobian, precision)]
    assert_numbers(text, expected)
    assert_literal(text, [j.name for j in result.jacobians])


FINITE = st.floats(-1e6, 1e6)
ENTRIES = st.one_of(FINITE, FINITE, FINITE, st.sampled_from([math.nan, math.inf, -0.0]))


@st.composite
def hessian_results(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    shapes = [draw(st.sampled_from([(), (2,), (1, 3), (2, 2)])) for _ in names]
    labelled = labels(names, shapes)
    n = len(labelled)
    gradient = np.array(draw(st.lists(ENTRIES, min_size=n, max_size=n)))
    if draw(st.booleans()):
        gradient = np.zeros(n)  # a critical point: minimum, maximum, saddle, degenerate
    matrix = np.array(draw(st.lists(ENTRIES, min_size=n * n, max_size=n * n))).reshape(n, n)
    if draw(st.booleans()):
        matrix = (matrix + matrix.T) / 2  # symmetric, as a right rule gives
    point = np.array(draw(st.lists(FINITE, min_size=n, max_size=n)))
    return HessianResult(value=np.float64(draw(ENTRIES)), names=names, shapes=shapes,
                         labels=labelled, gradient=gradient, hessian=matrix,
                         dtype="float64", point=point, **classify(gradient, matrix, point))


@pytest.mark.slow
@SETTINGS
@given(result=hessian_results(), precision=PRECISIONS, width=WIDTHS,
       target=st.one_of(st.none(), MARKUP))
def test_hessian_human_output_prints_every_number_and_label_as_it_is(result, precision,
                                                                     width, target):
    text = rendered(result.page(precision, None, target), width=width)
    values = [result.value, result.gradient, result.hessian]
    if result.eigenvalues is not None:
        values.append(result.eigenvalues)
    # the explanation's tolerances and norms are printed with 3 digits
    said = [result.gradient_norm, result.gradient_tolerance, result.zero_tolerance,
            result.condition_number, result.asymmetry, result.asymmetry_tolerance]
    words = " ".join(text.split(" (nan or inf)"))  # the undefined verdict's words
    assert_numbers(words, [x for v in values for x in canonical(v, precision)],
                   [x for v in said if v is not None for x in canonical(v, 3)])
    assert_literal(text, [*result.labels, ", ".join(result.names), target or "target",
                          f"verdict: {result.verdict}:"])
    assert ("not symmetric" in text) == (not result.symmetric)


@pytest.mark.slow
@SETTINGS
@given(order=st.integers(1, 10), names=st.lists(NAMES, min_size=1, max_size=3, unique=True),
       precision=PRECISIONS, width=WIDTHS, formula=st.one_of(st.none(), MARKUP),
       notes=st.lists(MARKUP.map(lambda m: f"note {m} here"), max_size=2), data=st.data())
def test_grad_order_human_output_prints_every_number_and_text_as_it_is(
        order, names, precision, width, formula, notes, data):
    dtype = data.draw(st.sampled_from([np.float64, np.float32]))
    gradients = [Gradient(name, data.draw(arrays(dtype).filter(lambda a: a.ndim == 0)))
                 for name in names]
    outcome = Outcome("grad", None, gradients, notes)
    texts = {name: formula for name in names} if formula else None
    text = rendered(outcome.order_page(order, precision, None, texts), width=width)
    assert_numbers(text, [x for g in gradients for x in canonical(g.gradient, precision)])
    assert_literal(text, names + [f"note: {note}" for note in notes]
                   + ([formula] if formula else []))


# ---------------------------------------------------------------------------------------
# The real commands, with bracketed values and non-finite results
# ---------------------------------------------------------------------------------------
def invoke(args: list[str], width: int | None = None):
    env = {"COLUMNS": str(width)} if width else {}
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def json_numbers(x) -> list[float]:
    if isinstance(x, list):
        return [n for item in x for n in json_numbers(item)]
    return [float(x)]  # "nan", "inf", "-inf" and numbers alike


def assert_every_json_number_printed(text: str, obj, keys) -> None:
    assert "…" not in text, text
    shown = {key(float(t)) for t in NUMBER.findall(text)}
    for name in keys:
        for entry in obj if isinstance(obj, list) else [obj]:
            for x in json_numbers(entry[name]):
                assert key(x) in shown, (name, x, text)


@pytest.mark.parametrize("width", [40, 80, 200])
def test_jacobian_command_prints_bracketed_values_and_infinities_literally(width):
    args = ["jacobian", "x*b + log(c)", "--arg", "x=2", "--arg", "b=[1, 2]", "--arg",
            "c=[-1, 0]"]
    text = invoke(args, width)
    obj = json.loads(invoke(args + ["--json"]))
    # by hand: value [2 + log(-1), 4 + log(0)], d/dx = b, d/db = x * identity
    assert obj["value"] == ["nan", "-inf"]
    assert obj["jacobians"][0]["jacobian"] == [1.0, 2.0]
    assert obj["jacobians"][1]["jacobian"] == [[2.0, 0.0], [0.0, 2.0]]
    assert_every_json_number_printed(text, obj, ["value"])
    assert_every_json_number_printed(text, obj["jacobians"], ["jacobian"])
    assert_literal(text, ["[ nan, -inf]", "[1.0, 2.0]", "[[2.0, 0.0],", "[0.0, 2.0]]"])


@pytest.mark.parametrize("width", [40, 80, 200])
def test_hessian_command_prints_bracketed_labels_and_nan_literally(width):
    args = ["hessian", "sum(b*x^2)", "--arg", "x=1.2345678901234567", "--arg",
            "b=[1, inf]"]
    text = invoke(args, width)
    obj = json.loads(invoke(args + ["--json"]))
    assert obj["labels"] == ["x", "b[0]", "b[1]"] and obj["verdict"] == "undefined"
    x = 1.2345678901234567
    assert obj["gradient"] == ["inf", x * x, x * x]  # by hand: 2x*sum(b), x^2, x^2
    assert json_numbers(obj["hessian"])[0] == math.inf
    assert any(math.isnan(v) for v in json_numbers(obj["hessian"]))
    assert_every_json_number_printed(text, obj, ["value", "gradient", "hessian"])
    assert_literal(text, ["b[0]", "b[1]", "verdict: undefined:"])


@pytest.mark.parametrize("width", [40, 80, 200])
def test_hessian_command_prints_every_number_of_a_long_row(width):
    # eight long numbers in a row: the table does not fit 80 columns, and nothing is cut
    args = ["hessian", "sum(w * x^3) / 7", "--arg", "x=[1.1, 2.2, 3.3, 4.4, 5.5, 6.6, 7.7, 8.8]",
            "--arg", "w=3"]
    text = invoke(args, width)
    obj = json.loads(invoke(args + ["--json"]))
    assert_every_json_number_printed(text, obj, ["value", "gradient", "hessian", "eigenvalues"])
    assert_literal(text, ["x[0]", "x[7]", "verdict: not-critical:"])


@pytest.mark.parametrize("width", [40, 80, 200])
def test_grad_order_command_prints_infinities_and_notes_literally(width):
    args = ["grad", "x^3 * b", "--order", "2", "--arg", "x=1", "--arg", "b=inf"]
    text = invoke(args, width)
    obj = json.loads(invoke(args + ["--json"]))
    # by hand: d2/dx2 = 6 x b = inf, d2/db2 = 0
    assert [g["gradient"] for g in obj["gradients"]] == ["inf", 0.0]
    assert_every_json_number_printed(text, obj["gradients"], ["gradient"])
    assert_literal(text, ["note: these are the pure second partials"])


def test_hessian_verdict_and_warning_are_text_not_markup():
    # a wrong rule (d/dy of x*y says 0): the warning's words and numbers print as written
    text = rendered(HessianResult(
        value=np.float64(6.0), names=["x", "y"], shapes=[(), ()], labels=["x", "y"],
        gradient=np.array([3.0, 2.0]), hessian=np.array([[0.0, 1.0], [0.0, 0.0]]),
        dtype="float64", point=np.array([2.0, 3.0]),
        **classify(np.array([3.0, 2.0]), np.array([[0.0, 1.0], [0.0, 0.0]]))).page(
        None, None, "y[0]"), width=80)
    assert "warning: the Hessian is not symmetric: max |H - H^T| = 1" in flat(text)
    assert "verdict: not-critical: not a critical point" in flat(text)
    assert "value of y[0]: 6.0" in text
