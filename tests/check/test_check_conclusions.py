"""Issue 9 §3: what --check concludes at extreme and singular points.

- a reference that cannot resolve the point (finite differences whose step is larger than
  the function's period, or swamped by rounding) is reported unusable, never a mismatch;
- a row's status agrees with the errors it shows (they are those that decided);
- what lies at a point is named: kink, discontinuity, singularity, overflow;
- a check that compared nothing says "nothing to check", never "passed";
- the time limit bounds the whole check, finite differences included;
- a tape source that is an alias of another value is perturbed as that value.

Independent truths: mpmath (exact cosines at 1e20), hand-derived derivatives, numpy.
"""
from __future__ import annotations

import math
import os
import time

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.check import compare_gradient, numeric_gradient, run_check
from gradcli.check.compare import check_outcome, check_timeout
from gradcli.check.numeric import NumericGradient
from gradcli.check.symbolic import SymbolicGradient
from gradcli.errors import InputError
from gradcli.lang import Declarations, parse_program
from gradcli.lang.evaluate import build
from gradcli.lang.tree import Call, ExprStatement, Name, Program
from gradcli.run.modes import ModeOptions, run_mode


def one_call(func: str) -> Program:
    return Program((ExprStatement(Call(func, (Name("x"),), ())),))


def exact_cos(x: float) -> float:
    """cos(x) of the float x, to float64, from mpmath at 50 digits (independent of numpy)."""
    with mpmath.workdps(50):
        return float(mpmath.cos(mpmath.mpf(x)))


def check_program(text: str, mode: str, **options) -> dict:
    decls = Declarations.from_options(var=options.pop("var", ()), frozen=options.pop("frozen", ()),
                                      arg=options.pop("arg", ()))
    model = build(parse_program(text), decls)
    with np.errstate(all="ignore"):  # nan and inf are the tape's answers here
        outcome = run_mode(mode, model, ModeOptions(**options))
    return check_outcome(model, outcome, timeout=10.0)


# ---------------------------------------------------------------------------------------
# Unusable references are reported as such; the status agrees with the errors shown
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("x", [1e20, 1e6])
def test_finite_differences_that_cannot_resolve_sin_are_unusable_not_a_mismatch(x):
    tape = exact_cos(x)
    report = run_check(one_call("sin"), {"x": x}, ["x"], {"x": tape},
                       lambda v: float(np.sin(v["x"])), timeout=10.0)
    g = report.gradients[0]
    assert report.verdict == "passed" and g.status == "ok", g.reason
    assert float(g.symbolic) == pytest.approx(tape, rel=1e-12)
    assert g.numeric_unusable is not None and "step" in g.numeric_unusable
    assert g.reason == g.numeric_unusable
    # The errors shown are sympy's, the reference that decided.
    assert g.abs_error <= 1e-8 + 1e-6 * abs(tape)
    assert g.rel_error <= 1e-6


@pytest.mark.parametrize("x", [0.5, 3.0, 1e3, 1e5, 3e5, 1e6, 1e8, 1e12, 1e16, 1e20])
def test_an_ok_status_never_sits_beside_an_error_beyond_the_tolerance(x):
    tape = exact_cos(x)
    report = run_check(one_call("sin"), {"x": x}, ["x"], {"x": tape},
                       lambda v: float(np.sin(v["x"])), timeout=10.0)
    g = report.gradients[0]
    assert g.status == "ok", g.reason
    assert g.abs_error <= 1e-8 + 1e-6 * abs(tape), g


def test_a_right_tape_with_unusable_references_only_is_skipped_never_a_mismatch():
    noisy = NumericGradient("x", "central", np.asarray(-4.7e-16), np.asarray(2.9e-14),
                            np.asarray(False), unresolved=np.asarray(True))
    check = compare_gradient("x", 0.76, SymbolicGradient("x", skipped="took longer than 5s"),
                             noisy)
    assert check.status == "skipped" and not check.checked
    assert "unusable" in check.reason and "step" in check.reason
    assert check.abs_error is None and check.rel_error is None


def test_rounding_in_a_huge_target_makes_finite_differences_unusable():
    # x + 1e17: float64 spacing at 1e17 is 16, far more than the change over the step.
    from gradcli.lang.tree import Binary, Number
    prog = Program((ExprStatement(Binary("+", Name("x"), Number(1e17))),))
    report = run_check(prog, {"x": 1.0}, ["x"], {"x": 1.0}, lambda v: float(v["x"] + 1e17),
                       timeout=10.0)
    g = report.gradients[0]
    assert g.status == "ok" and g.abs_error == 0.0
    assert "rounding" in g.numeric_unusable


def test_usable_finite_differences_still_catch_a_wrong_tape_when_sympy_is_skipped():
    report = run_check(one_call("sin"), {"x": 1.0}, ["x"], {"x": math.cos(1.0) * 1.001},
                       lambda v: float(np.sin(v["x"])), symbolic=False)
    assert report.verdict == "mismatch"


# ---------------------------------------------------------------------------------------
# What lies at the point: the finite differences' own classification
# ---------------------------------------------------------------------------------------
def probe(f, x):
    with np.errstate(all="ignore"):
        return numeric_gradient(lambda v: float(np.sum(f(v["x"]))), {"x": x}, ["x"])["x"]


@pytest.mark.parametrize("f, x, kind", [
    (np.abs, 0.0, "kink"),
    (lambda x: np.maximum(x, 0.0), 0.0, "kink"),
    (lambda x: np.minimum(x, 1.0), 1.0, "kink"),
    (np.sign, 0.0, "discontinuity"),
    (np.floor, 2.0, "discontinuity"),
    (lambda x: np.where(x < 1, x ** 2, 3 * x), 1.0, "discontinuity"),
    (lambda x: np.arctan2(x, 0.0), 0.0, "discontinuity"),
    (lambda x: np.sqrt(np.abs(x)), 0.0, "singularity"),   # an unbounded derivative
    (np.cbrt, 0.0, "singularity"),
    (lambda x: 1.0 / x, 0.0, "singularity"),               # undefined at the point only
    (np.exp, 710.0, "overflow"),                           # inf all around: not a kink
])
def test_finite_differences_name_what_lies_at_the_point(f, x, kind):
    res = probe(f, x)
    assert str(res.kind) == kind, res
    assert res.detail  # the evidence, in words


@pytest.mark.parametrize("f, x", [
    (np.sin, 1.0), (np.exp, 30.0), (np.exp, 700.0), (lambda x: x ** 4, 0.0),
    (lambda x: x ** 3, 0.0), (lambda x: np.abs(x) ** 2, 0.0), (np.log, 1e-3),
    (lambda x: x * np.abs(x), 0.0), (lambda x: np.exp(100 * x), 0.3),
])
def test_smooth_points_are_resolved_and_nothing_is_named(f, x):
    res = probe(f, x)
    assert str(res.kind) == "" and not bool(res.unresolved), res


@pytest.mark.parametrize("x", [1e20, 1e6])
def test_a_step_larger_than_the_period_is_unresolved(x):
    assert bool(probe(np.sin, x).unresolved)


# ---------------------------------------------------------------------------------------
# The verdict names the point (through the command line's entry point)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, x, status, kind", [
    ("arctan2(x, 0)", "0", "non-differentiable", "singularity"),
    ("arctan2(x, y)", "0", "non-differentiable", "singularity"),
    ("arccosh(cosh(tanh(reciprocal(x))))", "0", "non-differentiable", "singularity"),
    ("sqrt(x)", "0", "non-differentiable", "singularity"),
    ("where(x < 1, x^2, 3*x)", "1", "non-differentiable", "discontinuity"),
    ("floor(x) * x", "2", "non-differentiable", "discontinuity"),
    ("abs(x)", "0", "non-differentiable", "kink"),
    ("where(x < 1, x^2, 2*x - 1) + abs(x - 1)", "1", "non-differentiable", "kink"),
    ("exp(x)", "710", "overflow", "overflow"),
])
def test_the_status_and_reason_name_what_lies_at_the_point(text, x, status, kind):
    check = check_program(text, "grad", arg=[f"x={x}", "y=0"])
    g = check["gradients"][0]
    assert check["verdict"] == "passed", g
    assert g["status"] == status, g
    if status == "non-differentiable":
        assert g["reason"].startswith(kind), g["reason"]
    else:
        assert "beyond float64's range" in g["reason"] and "kink" not in g["reason"]


@pytest.mark.parametrize("tape", [0.0, np.nan])
def test_arctan2_at_the_origin_is_a_singularity_whatever_the_tapes_convention(tape):
    # The engine may give the subgradient 0 there (as PyTorch) or nan: either way the
    # point is singular, not a mismatch.
    prog = parse_program("arctan2(x, y)")
    report = run_check(prog, {"x": 0.0, "y": 0.0}, ["x", "y"], {"x": tape, "y": tape},
                       lambda v: float(np.arctan2(v["x"], v["y"])), timeout=10.0)
    assert report.verdict == "passed"
    for g in report.gradients:
        assert g.status == "non-differentiable" and g.reason.startswith("singularity"), g


def test_overflow_reports_the_exact_derivative():
    g = check_program("exp(x)", "grad", arg=["x=710"])["gradients"][0]
    assert g["tape"] == "inf"
    with mpmath.workdps(30):
        exact = mpmath.nstr(mpmath.exp(710), 6)
    assert exact.replace("e+", "E+") in g["reason"]
    assert "kink" not in g["reason"]


def test_a_wrong_finite_value_where_the_derivative_overflows_is_a_mismatch():
    sym = SymbolicGradient("x", value=np.asarray(np.inf), kink=np.asarray(False),
                           kind=np.asarray("overflow", dtype=object),
                           note="overflow: the derivative is 2.2e308")
    assert compare_gradient("x", 1.0, sym, None).status == "mismatch"


# ---------------------------------------------------------------------------------------
# A check that compared nothing
# ---------------------------------------------------------------------------------------
def test_an_empty_check_says_nothing_to_check_and_not_passed():
    check = check_program("x * 2", "tape", arg=["x=1"])  # the tape watched nothing
    assert check["gradients"] == []
    assert check["verdict"] == "nothing to check" and check["passed"] is False
    assert check["reason"] == "no sources to compare"


# ---------------------------------------------------------------------------------------
# The time limit
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 0.0, 1e9, "soon", None])
def test_a_bad_time_limit_is_an_input_error(bad):
    with pytest.raises(InputError, match="--check-timeout must be a number of seconds"):
        check_timeout(bad)


@pytest.mark.slow
def test_the_time_limit_bounds_the_finite_differences_too():
    def slow(v):
        time.sleep(0.4)  # 7 evaluations at least: 2.8 s without a limit
        return float(np.sin(v["x"]))

    start = time.monotonic()
    report = run_check(one_call("sin"), {"x": 1.0}, ["x"], {"x": math.cos(1.0)}, slow,
                       timeout=1.0, symbolic=False)
    elapsed = time.monotonic() - start
    g = report.gradients[0]
    assert elapsed < 2.5, elapsed
    assert g.numeric is None and "took longer than" in g.reason
    assert g.status == "skipped" and report.verdict == "nothing to check"


@pytest.mark.slow
def test_one_evaluation_that_never_ends_is_stopped_at_the_time_limit():
    from gradcli.check.numeric import numeric_in_worker

    def stuck(deadline):
        time.sleep(60)  # one evaluation longer than any limit: only killing stops it
        return {}

    start = time.monotonic()
    results = numeric_in_worker([stuck], ["x"], timeout=0.5).collect()
    assert time.monotonic() - start < 5.0
    assert results["x"].value is None
    assert results["x"].note == "took longer than 0.5s (the time limit)"


def test_finite_differences_stop_between_evaluations_at_the_deadline():
    calls = []

    def f(v):
        calls.append(1)
        return float(np.sum(v["x"] ** 2))

    res = numeric_gradient(f, {"x": np.arange(10.0)}, ["x"], deadline=time.monotonic() - 1)
    assert len(calls) == 1  # only the value at the point
    assert np.isnan(res["x"].value).all() and "took longer" in res["x"].note


# ---------------------------------------------------------------------------------------
# Aliases: the check perturbs what the tape's source denotes
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, wrt, expected", [
    ("h = x; h * 2 + x", "h", 3.0),                       # h is x: d(3x)/dx
    ("g = x; h = g; h * 2 + g * x", "h", 4.0),            # d(2x + x^2)/dx at 1
    ("y = x * 2; h = y; h * 3 + y", "h", 4.0),            # h is the value of x * 2
    ("y = x * 2; h = y; y = y + 1; h * 3 + y", "h", 4.0),  # ... also read through y + 1
    ("y = x * 2; h = y; h * 3 + y", "y", 4.0),
])
def test_an_aliased_tape_source_is_checked_as_the_value_it_denotes(text, wrt, expected):
    check = check_program(text, "tape", arg=["x=1"], watch=["x"], wrt=[wrt])
    g = check["gradients"][0]
    assert g["tape"] == expected
    assert check["verdict"] == "passed" and g["status"] == "ok", g
    assert g["symbolic"] == expected
    assert g["numeric"] == pytest.approx(expected, rel=1e-8)


# ---------------------------------------------------------------------------------------
# The class: a right tape is never a mismatch, and an ok row's error is within tolerance,
# at any magnitude (hypothesis; GRADCLI_PROPERTY_EXAMPLES=400 runs more examples)
# ---------------------------------------------------------------------------------------
EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "25"))

# program, numpy f, exact derivative (mpmath, 50 digits)
SMOOTH = {
    "sin(x)": (np.sin, mpmath.cos),
    "cos(x)": (np.cos, lambda x: -mpmath.sin(x)),
    "tanh(x)": (np.tanh, lambda x: mpmath.sech(x) ** 2),
    "x^3": (lambda x: x ** 3, lambda x: 3 * x ** 2),
    "sin(x) * x": (lambda x: np.sin(x) * x, lambda x: mpmath.sin(x) + x * mpmath.cos(x)),
    "exp(-x*x)": (lambda x: np.exp(-x * x), lambda x: -2 * x * mpmath.exp(-x * x)),
}


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.sampled_from(sorted(SMOOTH)), sign=st.sampled_from([-1.0, 1.0]),
       exponent=st.floats(-3.0, 20.0))
def test_a_right_tape_is_never_a_mismatch_at_any_magnitude(text, sign, exponent):
    x = sign * 10.0 ** exponent
    f, exact = SMOOTH[text]
    with mpmath.workdps(50):
        tape = float(exact(mpmath.mpf(x)))
    report = run_check(parse_program(text), {"x": x}, ["x"], {"x": tape},
                       lambda v: float(f(v["x"])), timeout=10.0)
    g = report.gradients[0]
    assert report.verdict == "passed", g
    assert g.status == "ok", g
    assert g.abs_error <= 1e-8 + 1e-6 * abs(tape), g
