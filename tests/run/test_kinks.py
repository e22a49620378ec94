"""Kinks said out loud (issue 23, part 4): an operation evaluated where it is not
differentiable adds a note with a caret under it and the convention used.

Truths: the planted sub-expression's place in the text (``str.index``), and the gradient
the convention names, worked out by hand (abs'(0) = 0, a tie in maximum split 1/2, ...).
"""
from __future__ import annotations

import json

import pytest

from gradcli.cli.common import Settings, observed
from gradcli.lang import Declarations, build, parse_program
from gradcli.run.modes import run_mode

# program, --arg, the sub-expression at its kink, words of the convention, d/dx by hand
PLANTED = [
    ("abs(x - 1) + x", "x=1", "abs(x - 1)", "taken as 0", 1.0),
    ("relu(x - 1)", "x=1", "relu(x - 1)", "taken as 0", 0.0),
    ("3*maximum(x, 1)", "x=1", "maximum(x, 1)", "split equally", 1.5),
    ("minimum(2*x, 2)", "x=1", "minimum(2*x, 2)", "split equally", 1.0),
    ("max([x, 1, 0])", "x=1", "max([x, 1, 0])", "split equally", 0.5),
    ("min([x, 1, 5])", "x=1", "min([x, 1, 5])", "split equally", 0.5),
    ("sum(sort([x, 1]) * [1, 3])", "x=1", "sort([x, 1])", "stable sort", 1.0),
    ("clip(x, 0, 1)", "x=1", "clip(x, 0, 1)", "taken as 1", 1.0),
    ("norm([x - 1, 0]) + x", "x=1", "norm([x - 1, 0])", "taken as 0", 1.0),
    ("sqrt(x)", "x=0", "sqrt(x)", "inf", float("inf")),
]


def _run(program: str, arg: str):
    model = build(parse_program(program), Declarations.from_options(arg=[arg]))
    outcome, _ = observed(Settings(), model, lambda: run_mode("grad", model))
    return outcome


@pytest.mark.parametrize("program, arg, planted, convention, gradient", PLANTED)
def test_a_kink_gets_a_note_with_a_caret_and_its_convention(program, arg, planted,
                                                            convention, gradient):
    import numpy as np
    with np.errstate(all="ignore"):
        outcome = _run(program, arg)
    assert float(outcome.gradients[0].gradient) == gradient  # the convention, by hand
    kinks = [n for n in outcome.notes if "\n" in n]
    assert len(kinks) == 1, outcome.notes
    said, text, caret = kinks[0].split("\n")
    assert convention in said
    line = text.split("| ", 1)[1]
    assert line == program
    start = caret.index("^") - caret.index("| ") - 2
    assert (start, caret.count("^")) == (program.index(planted), len(planted))


@pytest.mark.parametrize("program, arg", [("abs(x - 1)", "x=1.5"), ("relu(x)", "x=-2"),
                                          ("maximum(x, 1)", "x=3"), ("clip(x, 0, 1)", "x=0.5"),
                                          ("max([x, 1])", "x=2"), ("sqrt(x)", "x=4"),
                                          ("abs(c) * x", "x=1")])
def test_no_note_away_from_a_kink_or_off_the_tape(program, arg):
    if "c" in program:  # abs at 0 of a constant: nothing is differentiated through it
        program = "c = 0\n" + program
    assert _run(program, arg).notes == []


@pytest.mark.slow
def test_cli_kink_notes_in_human_plain_and_json():
    from cli_process import run
    args = ("grad", "abs(x - 1)", "--arg", "x=1")
    r = run(*args, "--json")
    notes = json.loads(r.stdout)["notes"]
    assert len(notes) == 1 and notes[0].startswith("abs is not differentiable at 0")
    r = run(*args, "--plain")
    assert r.stdout == "0.0\n" and "note: abs is not differentiable at 0" in r.stderr
    assert "^^^^^^^^^^" in r.stderr
    r = run(*args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert "abs is not differentiable at 0" in r.stdout and "^^^^^^^^^^" in r.stdout


def test_many_kinks_are_counted_after_the_first_ten():
    program = "\n".join(f"y{k} = abs(x - 1) * {k}" for k in range(12)) + "\n" + \
        " + ".join(f"y{k}" for k in range(12))
    notes = _run(program, "x=1").notes
    assert len(notes) == 11 and notes[-1] == "2 more operations were differentiated at a kink"


def test_a_plain_run_has_an_observer_only_when_the_program_calls_a_kink_function():
    """Kink notes cost a run nothing unless it calls abs, relu, ... (by any name): the
    engine's observer list stays empty while the other programs run."""
    from gradcli.engine.core import state
    from gradcli.run.kinks import calls_a_kink, watching
    seen = []
    for program, kink in [("sin(x)*x + exp(x)", False), ("fabs(x) + x", False),
                          ("absolute(x - 1)", True), ("y = maximum (x, 1)\ny", True)]:
        model = build(parse_program(program), Declarations.from_options(arg=["x=1"]))
        assert calls_a_kink(model) is kink, program
        with watching(model) as (kinks, recorder):
            seen.append(len(state.observing))
            run_mode("grad", model)
        assert recorder is None and state.observing == []
        assert bool(kinks.notes()) is kink, program  # (x = 1: both kinks are hit)
    assert seen == [0, 0, 1, 1]
