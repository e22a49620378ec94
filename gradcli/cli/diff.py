"""``gradcli diff``: derivatives as formulas (the work is gradcli/run/formulas.py).

Output: human (each formula with its verification line), ``--plain`` (one formula per
line, then ``= VALUE`` on the same line with a point), ``--json``::

    {"mode": "diff", "program": ..., "variables": [...], "derivatives": [
        {"wrt": ["x"], "formula": ..., "latex": ..., "simplified": true, "form": ...,
         "verified": {"points": 8, "max_rel_err": 0.0}, "value": 9.0}]}

A formula that disagrees with the tape is exit 1, with both numbers on standard error.
"""
from __future__ import annotations

import sys

import typer

from .common import Settings, guarded, refuse, split


def label(d, of: str = "") -> str:
    """``d/dx``, ``d^2/dxdy``, ``d^3/dx^2dy`` (of ``f[i]`` for a Jacobian's row, of
    ``of`` when given: ``dy/dx``)."""
    counts: dict = {}
    for name in d.wrt:
        counts[name] = counts.get(name, 0) + 1
    below = "".join(f"d{n}" + (f"^{k}" if k > 1 else "") for n, k in counts.items())
    top = "d" if len(d.wrt) == 1 else f"d^{len(d.wrt)}"
    if d.element is not None:
        of = "f[" + ",".join(map(str, d.element)) + "]"
    return f"{top}{of}/{below}"


def _verification(d, precision) -> str:
    from .render import number_text
    if not d.printable:
        return d.note
    if d.disagreement:
        return f"DISAGREES with the tape: {d.disagreement}"
    if not d.points:
        return "not verified: no point found where the program and its derivatives are finite"
    err = number_text(d.max_rel_err, 2)
    return f"agrees with the tape at {d.points} points, max rel err {err}"


def _form(d, raw: bool) -> str:
    if raw:
        return "raw (not simplified)"
    if not d.simplified:
        return f"{d.form}: simplification ran out of time, the shortest form that finished"
    return f"{d.form} form, {d.operations} operation{'' if d.operations == 1 else 's'}"


def run(s: Settings) -> None:
    if s.taylor:
        return run_taylor(s)
    if s.steps:
        return run_steps(s)
    from ..run.formulas import diff

    def work():
        if s.json_out and s.plain:
            refuse("--json and --plain cannot be used together")
        return diff(s.program, var=s.var, frozen=s.frozen, arg=s.arg, target=s.target,
                    wrt=split(s.wrt), order=s.order, partial=split(s.partial, "--partial"),
                    budget=s.simplify_timeout, raw=s.raw)

    show(s, guarded(work), "diff")


def run_steps(s: Settings) -> None:
    """``diff --steps``: each derivation, then the formulas as ``diff`` prints them; a
    derivation whose last line disagrees with the verified formula is exit 1."""
    from ..run.steps import diff_with_steps

    def work():
        if s.json_out and s.plain:
            refuse("--json and --plain cannot be used together")
        if s.order not in (None, 1) or s.partial:
            refuse("--steps shows first derivatives: not with --order N or --partial")
        return diff_with_steps(s.program, var=s.var, frozen=s.frozen, arg=s.arg,
                               target=s.target, wrt=split(s.wrt), budget=s.simplify_timeout,
                               raw=s.raw)

    result = guarded(work)
    if not s.json_out and not s.plain:  # (--plain: the steps are lines of the report)
        for d in result.derivatives:
            _print_steps(d.steps)
    show(s, result, "diff")
    failed = [d.steps for d in result.derivatives if d.steps.disagreement]
    for derivation in failed:
        sys.stderr.write(f"error: the steps of d/d{derivation.wrt}: "
                         f"{derivation.disagreement}\n")
    if failed:
        raise typer.Exit(1)


def _print_steps(derivation) -> None:
    """Human: numbered steps with their rules, the final line and its check."""
    from .render import number_text
    out, x = sys.stdout, derivation.wrt
    out.write(f"Steps of d/d{x}:\n")
    for number, st in enumerate(derivation.steps, start=1):
        where = f" (in {st.within} = ...)" if st.within else ""
        out.write(f"  {number}. d/d{x} {st.expression} = {st.derivative}\n")
        out.write(f"       {st.rule}{where}: {st.law}\n")
    out.write(f"  so d/d{x} = {derivation.result}\n")
    if derivation.disagreement:
        out.write(f"  DISAGREES with the verified formula: {derivation.disagreement}\n")
    elif derivation.max_rel_err is not None:
        out.write(f"  equals the verified formula for d/d{x} (below) at its "
                  f"{derivation.points} points, max rel err "
                  f"{number_text(derivation.max_rel_err, 2)}\n")
    else:
        out.write(f"  not compared: the formula for d/d{x} (below) has no checked gradcli "
                  "form\n")


def run_idiff(s: Settings) -> None:
    """``gradcli idiff``: the same output, labelled dy/dx, with "dep" in JSON."""
    from ..run.idiff import idiff

    def work():
        if s.json_out and s.plain:
            refuse("--json and --plain cannot be used together")
        from ..lang.source import read_program
        return idiff(read_program(s.program), dep=s.dep, wrt=s.wrt, order=s.order,
                     var=s.var, frozen=s.frozen, arg=s.arg, budget=s.simplify_timeout,
                     raw=s.raw)

    show(s, guarded(work), "idiff", dep=s.dep)


def show(s: Settings, result, mode: str, dep: str | None = None) -> None:
    """Print the formulas (human, --plain or --json: run.formulas.Formulas.report); a
    disagreement is exit 1."""
    from . import render
    if s.json_out:
        render.json_writer.write(result.report(mode, dep))
    elif s.plain:
        render.plain_writer.write(result.report(mode, dep, s.latex), s.precision)
    else:
        _print_human(result, s, dep or "")
    failed = [d for d in result.derivatives if d.disagreement]
    if s.plain or s.json_out:  # (the human output says it beside the formula)
        for d in failed:
            sys.stderr.write(f"error: {label(d)}: {d.disagreement}\n")
    if failed:
        raise typer.Exit(1)


def _print_human(result, s: Settings, of: str = "") -> None:
    from .render import number_text
    at = ", ".join(f"{n}={number_text(v, s.precision)}" for n, v in result.point.items())
    out = sys.stdout
    for d in result.derivatives:
        text = d.latex if s.latex else d.formula
        value = "" if d.value is None else f"    = {number_text(d.value, s.precision)} at {at}"
        out.write(f"{label(d, of)} = {text}{value}\n")
        out.write(f"    {_verification(d, s.precision)}; {_form(d, s.raw)}\n")


def run_taylor(s: Settings) -> None:
    """``diff --taylor``: the polynomial, and how its coefficients compare with sympy's."""
    from ..run.taylor import taylor

    def work():
        if s.json_out and s.plain:
            refuse("--json and --plain cannot be used together")
        if s.partial or s.wrt or s.raw:
            refuse("--taylor takes --order; not --wrt, --partial or --raw")
        return taylor(s.program, s.taylor, s.order, var=s.var, frozen=s.frozen, arg=s.arg,
                      target=s.target)

    result = guarded(work)
    from . import render
    if s.json_out:
        render.json_writer.write(result.report())
    elif s.plain:
        render.plain_writer.write(result.report(s.latex), s.precision)
    else:
        text = result.latex if s.latex else result.polynomial
        at = ", ".join(f"{n}={render.number_text(v, s.precision)}" for n, v in result.at.items())
        sys.stdout.write(f"Taylor polynomial of order {result.order} at {at}:\n  {text}\n")
        if result.disagreement:
            sys.stdout.write(f"  DISAGREES with sympy's series: {result.disagreement}\n")
        elif result.note:
            sys.stdout.write(f"  {result.note}\n")
        else:
            err = render.number_text(result.max_rel_err, 2)
            sys.stdout.write(f"  coefficients from the tape (forward mode); all "
                             f"{len(result.coefficients)} agree with sympy's series, max rel "
                             f"err {err}\n")
    if result.disagreement:
        if s.plain or s.json_out:
            sys.stderr.write(f"error: {result.disagreement}\n")
        raise typer.Exit(1)
