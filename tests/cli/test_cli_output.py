"""Every output mode prints every number so that it reads back to the computed value.

Random values (nan, inf, -0.0, subnormal, huge, float32 and float64, scalars and arrays)
and names, formulas and notes full of square brackets go through the human output, the
plain output, JSON, the check table and the compare table at several terminal widths;
the printed numbers are parsed back and compared with the values (or with the values
rounded to the requested precision). The render functions run in-process for speed;
tests/cli/test_cli.py runs the real command.

GRADCLI_PROPERTY_EXAMPLES sets the number of examples (default 60).
"""
import io
import json
import math
import os
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcli.cli import render
from gradcli.io.writers import json as json_writer, plain as plain_writer
from gradcli.io.jsonvalue import json_value
from gradcli.run.modes import MODES, Gradient, Outcome, compare_page

EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# A number as the outputs print it: digits with an optional fraction and exponent, or
# nan/inf; not part of a name (x1) or of a longer word.
NUMBER = re.compile(r"(?<![\w.])-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]\d+)?)(?![\w.])")

EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 2.2250738585072014e-308,
         1.7976931348623157e308, 0.1, 1 / 3, -2.957324302, 1e16, 123456789.123456789,
         1e-5, 3.4028234663852886e38]
FLOATS = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=True, allow_infinity=True))
SHAPES = st.sampled_from([(), (), (1,), (3,), (2, 2), (2, 1, 3), (0,), (7,), (2, 0)])
# names, formulas and messages that rich would read as markup or emoji
MARKUP = st.sampled_from(["[bold]w[/bold]", "x[i]", "[x,x,x]", "[/]", "[red]", ":smile:",
                          "w[0]", "[[1,2],[3,-4]]", "a]b[c"])
NAMES = st.one_of(MARKUP, st.text(alphabet="abwxyz[]/:_", min_size=1, max_size=8))


@st.composite
def arrays(draw, dtype=None):
    dtype = dtype or draw(st.sampled_from([np.float64, np.float32]))
    shape = draw(SHAPES)
    values = draw(st.lists(FLOATS, min_size=int(np.prod(shape)),
                           max_size=int(np.prod(shape))))
    with np.errstate(all="ignore"):
        return np.array(values, dtype=np.float64).astype(dtype).reshape(shape)


@st.composite
def outcomes(draw, mode=None):
    mode = mode or draw(st.sampled_from(MODES))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    names = draw(st.lists(NAMES, min_size=0, max_size=3, unique=True))
    gradients = [Gradient(name, draw(st.one_of(arrays(dtype), st.none())))
                 for name in names]
    value = draw(arrays(dtype)) if mode in ("tape", "value-grad") else None
    notes = draw(st.lists(MARKUP.map(lambda m: f"note {m} here"), max_size=2))
    return Outcome(mode, value, gradients, notes)


def canonical(value, precision):
    """The numbers the output must show for ``value``: the value of the shortest text of
    its own dtype, or the value rounded to ``precision`` significant digits; a zero
    without its sign (docs/output.md: "A zero prints as `0.0`", never -0.0)."""
    arr = np.asarray(value)
    if precision is not None:
        shown = [float(format(float(v), f".{precision}g")) for v in arr.ravel()]
    elif arr.dtype == np.float32:
        shown = [float(str(v)) for v in arr.ravel()]
    else:
        shown = [float(v) for v in arr.ravel()]
    return [0.0 if x == 0 else x for x in shown]


def key(x: float):
    """Equality that tells -0.0 from 0.0 and nan from everything but nan."""
    return ("nan",) if math.isnan(x) else (x, math.copysign(1.0, x))


def printed_numbers(text: str) -> list[float]:
    return [float(token) for token in NUMBER.findall(text)]


def float_like(text: str) -> list[float]:
    """Tokens that can only be printed values (shapes and counts are integers)."""
    return [float(t) for t in NUMBER.findall(text) if re.search(r"[.e]|nan|inf", t)]


def assert_round_trips(text: str, expected: list[float], precision) -> None:
    """Every expected number is printed, every printed value is expected, none elided."""
    assert "…" not in text
    shown = {key(x) for x in printed_numbers(text)}
    wanted = {key(x) for x in expected}
    missing = wanted - shown
    assert not missing, (missing, text)
    stray = {key(x) for x in float_like(text)} - wanted
    if precision is not None:  # precision 1-2 turns 12.0 into "1e+01": still expected
        stray = {k for k in stray if k not in wanted}
    assert not stray, (stray, text)


def shown_values(outcome: Outcome):
    values = [outcome.value] if outcome.mode in ("tape", "value-grad") else []
    return values + [g.gradient for g in outcome.gradients if g.gradient is not None]


def human(outcome, precision, width, **kwargs) -> str:
    buffer = io.StringIO()
    render.show(outcome.page(precision, **kwargs),
                render.console(file=buffer, width=width))
    return buffer.getvalue()


def check_object(outcome: Outcome, data) -> tuple[dict, list]:
    """A check object as check_outcome gives it, with random references and errors,
    and the numbers its table must show at 2 digits (errors)."""
    entries, errors = [], []
    for g in outcome.gradients:
        symbolic = data.draw(st.one_of(st.none(), arrays(np.float64)))
        numeric = data.draw(st.one_of(st.none(), arrays(np.float64)))
        abs_error = data.draw(st.one_of(st.none(), FLOATS))
        rel_error = data.draw(st.one_of(st.none(), FLOATS))
        errors += [e for e in (abs_error, rel_error) if e is not None]
        entries.append({"name": g.name, "status": data.draw(st.sampled_from(
            ["ok", "mismatch", "skipped", "non-differentiable"])),
            "reason": data.draw(MARKUP), "tape": json_value(g.gradient),
            "symbolic": json_value(symbolic), "numeric": json_value(numeric),
            "abs_error": json_value(abs_error), "rel_error": json_value(rel_error)})
        entries[-1]["_refs"] = [r for r in (symbolic, numeric) if r is not None]
    return {"passed": True, "gradients": entries}, errors


PRECISIONS = st.one_of(st.none(), st.integers(1, 17))
WIDTHS = st.sampled_from([40, 80, 200])


@pytest.mark.slow
@SETTINGS
@given(outcome=outcomes(), precision=PRECISIONS, width=WIDTHS,
       formula=st.one_of(st.none(), MARKUP), data=st.data())
def test_human_output_prints_every_number_and_text_as_it_is(outcome, precision, width,
                                                            formula, data):
    check, errors = check_object(outcome, data) if data.draw(st.booleans()) else (None, [])
    symbolic = {g.name: formula for g in outcome.gradients} if formula else None
    refs = [r for entry in (check or {"gradients": []})["gradients"] for r in entry.pop("_refs")]
    text = human(outcome, precision, width, check=check, symbolic=symbolic, target="y[0]")
    expected = [x for v in shown_values(outcome) + refs for x in canonical(v, precision)]
    expected += [x for e in errors for x in canonical(e, 2)]
    assert_round_trips(text, expected, precision)
    formulas = [formula] if formula and outcome.gradients else []
    for literal in [g.name for g in outcome.gradients] + outcome.notes + formulas:
        assert " ".join(literal.split()) in " ".join(text.split()), (literal, text)
    if check is not None:
        for entry in check["gradients"]:
            assert entry["reason"] in text


@SETTINGS
@given(outcome=outcomes(), precision=PRECISIONS)
def test_plain_output_is_each_value_flattened_in_order(outcome, precision):
    lines = plain_writer.lines(outcome.report(), precision)
    values = ([outcome.value] if outcome.mode in ("tape", "value-grad") else []) + [
        g.gradient for g in outcome.gradients]
    assert len(lines) == len(values)
    for line, value in zip(lines, values):
        if value is None:
            assert line == "null"
        else:
            assert [key(float(t)) for t in line.split()] == [
                key(x) for x in canonical(value, precision)]
    assert plain_writer.notes(outcome.report()) == outcome.notes


@pytest.mark.slow
@SETTINGS
@given(outcome=outcomes())
def test_json_output_reads_back_to_the_values_and_carries_the_notes(outcome):
    obj = json.loads(json.dumps(json_writer.as_json(outcome.report()), allow_nan=False))

    def numbers(x):
        if isinstance(x, list):
            return [n for item in x for n in numbers(item)]
        return [float(x)]  # "nan", "inf", "-inf" and numbers alike
    if outcome.mode in ("tape", "value-grad"):
        assert [key(x) for x in numbers(obj["value"])] == [
            key(x) for x in canonical(outcome.value, None)]
        assert np.shape(obj["value"]) == outcome.value.shape
    for entry, g in zip(obj["gradients"], outcome.gradients):
        assert entry["name"] == g.name
        if g.gradient is None:
            assert entry["gradient"] is None
        else:
            assert [key(x) for x in numbers(entry["gradient"])] == [
                key(x) for x in canonical(g.gradient, None)]
    assert obj.get("notes", []) == outcome.notes


@pytest.mark.slow
@SETTINGS
@given(results=st.fixed_dictionaries({mode: st.one_of(outcomes(mode), MARKUP)
                                      for mode in MODES}),
       precision=PRECISIONS, width=WIDTHS)
def test_compare_table_prints_every_number_and_message_as_it_is(results, precision, width):
    buffer = io.StringIO()
    render.show(compare_page(results, precision), out=render.console(file=buffer, width=width))
    text = buffer.getvalue()
    outcomes_ = [r for r in results.values() if not isinstance(r, str)]
    expected = [x for o in outcomes_ for v in shown_values(o) for x in canonical(v, precision)]
    assert_round_trips(text, expected, precision)
    flat = " ".join(text.split())
    for result in results.values():
        for literal in ([result] if isinstance(result, str) else
                        [g.name for g in result.gradients] + result.notes):
            assert " ".join(literal.split()) in flat, (literal, text)


def test_float32_prints_its_own_shortest_decimal_everywhere():
    value = np.float32(2.957324266433716)
    outcome = Outcome("value-grad", value, [Gradient("w", np.array([value, 1], np.float32))])
    assert plain_writer.lines(outcome.report(), None) == ["2.9573243", "2.9573243 1.0"]
    assert json_writer.as_json(outcome.report())["value"] == 2.9573243
    text = human(outcome, None, 80)
    assert "2.9573243" in text and "2.957324266" not in text


def test_precision_is_significant_digits_for_scalars_and_arrays_alike():
    outcome = Outcome("value-grad", np.float64(2.957324302),
                      [Gradient("w", np.array([2.957324302, 1.97, 79.54]))])
    assert plain_writer.lines(outcome.report(), 2) == ["3", "3 2 80"]
    assert plain_writer.lines(outcome.report(), 4) == ["2.957", "2.957 1.97 79.54"]
    text = human(outcome, 4, 80)
    assert "2.957" in text and "e+00" not in text and "79.54" in text


def test_numbers_are_never_elided_in_the_check_table_at_any_width():
    outcome = Outcome("grad", None, [Gradient("x", np.array([2.9573243021234567, 1e-300]))])
    check = {"passed": False, "gradients": [{
        "name": "x", "status": "mismatch", "reason": "tape differs [a, b]",
        "tape": json_value(outcome.gradients[0].gradient), "symbolic": [2.957324302123457, 0],
        "numeric": [2.9573243021, 1e-300], "abs_error": 1.2345e-13, "rel_error": 4e-14}]}
    for width in (20, 40, 80, 200):
        text = human(outcome, None, width, check=check)
        assert "…" not in text
        for number in (repr(2.9573243021234567), "2.957324302123457", "2.9573243021", "1e-300",
                       "1.2e-13", "4e-14"):
            assert number in NUMBER.findall(text), (number, width, text)


@pytest.mark.parametrize("shape", [(2,) * 20, (10 ** 7,), (1000, 1000), (3,) * 13])
def test_large_arrays_are_summarised_in_bounded_time(shape):
    value = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    outcome = Outcome("value-grad", value, [Gradient("w", value)])
    start = time.perf_counter()
    text = human(outcome, None, 80)
    lines = plain_writer.lines(outcome.report(), None)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed
    flat = value.reshape(-1)
    for x in (flat[0], flat[1], flat[-1]):  # both ends are shown
        assert repr(float(x)) in NUMBER.findall(text)
        assert repr(float(x)) in lines[0].split()
    assert "..." in text and lines[0].split()[3] == "..."
    assert len(text) < 10_000 and all(len(line) < 1000 for line in lines)


def test_a_large_array_in_plain_output_gets_a_note():
    outcome = Outcome("grad", None, [Gradient("x", np.zeros(5000))])
    assert plain_writer.notes(outcome.report()) == [
        "the gradient of x has 5000 elements: shown are the first and last 3 "
        "(--json prints them all)"]


def test_json_of_a_large_array_is_linear_and_complete():
    value = np.linspace(0, 1, 10 ** 6)
    start = time.perf_counter()
    out = render.json_array(value)
    assert time.perf_counter() - start < 10.0  # a bound for quadratic work, not a speed target
    assert out == value.tolist()


def test_functions_table_keeps_brackets():
    from gradcli.engine.core.recording import CONSTANTS
    from gradcli.engine.core.table import ORDER, REGISTRY
    from gradcli.run.functions import FunctionTable
    for width in (40, 80, 200):
        buffer = io.StringIO()
        render.show(FunctionTable([REGISTRY[n] for n in ORDER], CONSTANTS).page(),
                    out=render.console(file=buffer, width=width))
        text = buffer.getvalue()
        assert "x[i]" in text and "[x, ...]" in " ".join(text.split()), width


def test_check_verdict_and_reason_print_as_written():
    outcome = Outcome("tape", np.float64(1.0), [])
    check = {"passed": False, "verdict": "nothing to check",
             "reason": "no source [x] was checked", "gradients": []}
    text = human(outcome, None, 80, check=check)
    assert "check: nothing to check (no source [x] was checked)" in text
    assert "passed" not in text and "MISMATCH" not in text
