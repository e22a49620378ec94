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
    show(s, result, "diff")  # (the steps are lines of the human page and of --plain)
    failed = [d.steps for d in result.derivatives if d.steps.disagreement]
    for derivation in failed:
        sys.stderr.write(f"error: the steps of d/d{derivation.wrt}: "
                         f"{derivation.disagreement}\n")
    if failed:
        raise typer.Exit(1)


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
        render.show(result.page(s.precision, s.latex, s.raw, dep or ""))
    failed = [d for d in result.derivatives if d.disagreement]
    if s.plain or s.json_out:  # (the human output says it beside the formula)
        for d in failed:
            sys.stderr.write(f"error: {d.label()}: {d.disagreement}\n")
    if failed:
        raise typer.Exit(1)


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
        render.show(result.page(s.precision, s.latex))
    if result.disagreement:
        if s.plain or s.json_out:
            sys.stderr.write(f"error: {result.disagreement}\n")
        raise typer.Exit(1)
