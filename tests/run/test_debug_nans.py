"""--debug-nans and gc.debug_nans() (issue 23, part 3): the first non-finite value, forward
or backward, is named with its operation and its span in the program, with a hint.

The truth of each case is planted: the program is written with one known cause, and the
expected span is where that sub-expression is in the text (``str.index``), the expected
operation the one that cause is about (log outside its domain, sqrt's gradient at 0, ...).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core import state
from gradcli.engine.core.observe import NonFiniteError
from gradcli.lang import Declarations, build, parse_program
from gradcli.run import nonfinite
from gradcli.run.modes import run_mode
from cli_process import run as run_cli

# program, declarations, mode, the planted sub-expression, its operation, pass, hint words
PLANTED = [
    ("2*x + log(x)", ["x=-1"], "grad", "log(x)", "log", "forward", "positive inputs"),
    ("y = 3*x\nsqrt(y - 10)", ["x=1"], "grad", "sqrt(y - 10)", "sqrt", "forward",
     "negative number"),
    ("x + (x - 2)^0.5", ["x=1"], "grad", "(x - 2)^0.5", "power", "forward", "domain"),
    ("a = exp(x)\na / (1 + a)", ["x=800"], "grad", "exp(x)", "exp", "forward", "logsumexp"),
    ("x / (x - 1)", ["x=1"], "grad", "x / (x - 1)", "divide", "forward", "division by zero"),
    # non-finite only in the backward pass: the value is finite (0), the gradient is not
    ("x*2 + sqrt(x)", ["x=0"], "grad", "sqrt(x)", "sqrt", "backward", "infinite at 0"),
    ("sqrt(x) * y", ["x=0", "y=0"], "grad", "sqrt(x)", "sqrt", "backward", "0·inf"),
    ("where(x > 0, sqrt(x), 0)", ["x=0"], "grad", "sqrt(x)", "sqrt", "backward",
     "where(x > 0, sqrt(where(x > 0, x, 1)), 0)"),
    # non-finite in the forward pass, but only in a where's untaken branch: the double where
    ("where(x <= 0, 0, log(x))", ["x=0"], "grad", "log(x)", "log", "forward",
     "where(x <= 0, 0, log(where(x <= 0, 1, x)))"),
    ("where(v > 0, log(abs(v)), 0*v)", ["v=0"], "grad", "log(abs(v))", "log", "forward",
     "where(v > 0, log(where(v > 0, abs(v), 1)), 0*v)"),
    ("sum(where(x > 0, log(x), 0))", ["x=[0, 1]"], "grad", "log(x)", "log", "forward",
     "where(x > 0, log(where(x > 0, x, 1)), 0)"),
    # ... and in a branch the condition takes there: the domain's hint
    ("where(x >= 0, log(x), 0)", ["x=0"], "grad", "log(x)", "log", "forward", "positive"),
    ("sum(where(x > -1, log(x), 0))", ["x=[0, 1]"], "grad", "log(x)", "log", "forward",
     "positive"),
]


def _stopped(program: str, args: list, mode: str) -> NonFiniteError:
    model = build(parse_program(program), Declarations.from_options(arg=args))
    with pytest.raises(NonFiniteError) as caught:
        with gc.debug_nans():
            run_mode(mode, model)
    assert state.observing == []  # the observer is gone after the block
    return caught.value


@pytest.mark.parametrize("program, args, mode, planted, op, pass_, hint", PLANTED)
def test_planted_cause_is_named_at_its_span(program, args, mode, planted, op, pass_, hint):
    err = _stopped(program, args, mode)
    assert err.op == op
    assert err.pass_ == pass_
    start = program.index(planted)
    assert nonfinite.span_of(err.where.pos, program) == [start, start + len(planted)]
    assert hint in nonfinite.hint(err, program)


def test_backward_only_value_is_finite_forward():
    # the planted backward cases really are backward-only: the value itself is finite
    x = gc.constant(0.0)
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.where(x > 0, gc.sqrt(x), 0.0)
    assert np.isfinite(float(y))
    assert np.isnan(float(tape.gradient(y, x)))  # 0 * (1/(2*sqrt(0)))


def test_library_debug_nans_raises_floating_point_error_and_leaves_no_trace():
    x = gc.constant(-1.0)
    with pytest.raises(FloatingPointError, match="log gave nan in the forward pass"):
        with gc.debug_nans():
            gc.log(x)
    assert state.observing == []
    assert np.isnan(float(gc.log(x)))  # outside the block: today's behaviour


def test_finite_program_gives_the_same_numbers_under_debug_nans():
    program = "sin(x*y) + x^2"
    model = build(parse_program(program), Declarations.from_options(arg=["x=0.5", "y=2"]))
    with gc.debug_nans():
        watched = run_mode("grad", model)
    x, y = 0.5, 2.0  # the derivative by hand
    assert [float(g.gradient) for g in watched.gradients] == pytest.approx(
        [y * np.cos(x * y) + 2 * x, x * np.cos(x * y)], rel=1e-15)


@pytest.mark.slow
def test_cli_debug_nans_exit_1_with_caret_and_note_without_flag():
    program = "where(x > 0, sqrt(x), 0)"
    r = run_cli("grad", program, "--arg", "x=0", "--debug-nans")
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert "sqrt" in lines[0] and "backward" in lines[0]
    caret = next(line for line in lines if "^" in line)
    text = lines[lines.index(caret) - 1]
    start = program.index("sqrt(x)")
    col = caret.index("^") - (text.index(program))  # caret under the sqrt call
    assert (col, caret.count("^")) == (start, len("sqrt(x)"))
    assert "where(x > 0, sqrt(where(x > 0, x, 1)), 0)" in r.stderr
    # without the flag: today's output (nan), a note suggesting the flag, exit 0
    r = run_cli("grad", program, "--arg", "x=0", "--plain")
    assert r.returncode == 0 and r.stdout.strip() == "nan"
    assert "--debug-nans" in r.stderr
    r = run_cli("grad", program, "--arg", "x=0", "--at", "-", "--debug-nans", stdin="x\n1\n")
    assert r.returncode == 2 and "--at" in r.stderr


@pytest.mark.parametrize("program, args, rewritten", [
    ("where(x <= 0, 0, log(x))", ["x=0"], "where(x <= 0, 0, log(where(x <= 0, 1, x)))"),
    ("where(v > 0, log(abs(v)), 0*v)", ["v=0"],
     "where(v > 0, log(where(v > 0, abs(v), 1)), 0*v)"),
])
def test_the_untaken_branch_rewrite_runs_clean_with_the_same_value(program, args, rewritten):
    """The hint's rewrite is whole (it is the program's own where rewritten) and fixes the
    run: no nan or inf anywhere, the same value, and the gradient of the taken branch
    (0 here: the branches taken are 0 and 0*v, by hand)."""
    assert rewritten in nonfinite.hint(_stopped(program, args, "grad"), program)
    model = build(parse_program(rewritten), Declarations.from_options(arg=args))
    with gc.debug_nans():
        value = model.function(*model.arg_values)
        fixed = run_mode("grad", model)
    assert float(value) == 0.0
    assert float(fixed.gradients[0].gradient) == 0.0
