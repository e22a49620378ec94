"""``gradcli jvp`` and the jvp row of ``gradcli compare``: parse, evaluate in forward mode,
check if asked, render. Imported only when one of them runs (see app.py)."""
from __future__ import annotations

import sys

import typer

from .common import (
    Settings,
    compare_json,
    compare_modes,
    computed_and_checked,
    finish,
    guarded,
    mode_options,
    observed,
    prepare,
    print_compare_plain,
    print_explanation,
)


def _work(s: Settings):
    from ..run.directional import parse_tangents, run_jvp
    model = prepare(s)
    tangents = parse_tangents(model, s.tangent)
    outcome, s.explanation = observed(s, model, lambda: run_jvp(model, tangents))
    return model, outcome


def run_jvp(s: Settings) -> None:
    """The ``jvp`` command."""
    from . import render
    model, outcome, check = computed_and_checked(s, _work, "directional.check_jvp")
    if s.json_out:
        obj = render.json_writer.as_json(outcome.report(check))
        if s.explanation:
            obj["explain"] = s.explanation
        render.json_writer.write_json(obj)
    elif s.plain:
        render.plain_writer.write(outcome.report(), s.precision)
    else:
        render.show(outcome.page(s.precision, check, model.target_name))
    print_explanation(s, s.explanation)  # (--explain: run/explain.py)
    finish(check, s.plain)


def run_compare(s: Settings) -> None:
    """``compare`` with ``--tangent``: the four APIs as ``commands.compare`` gives them
    (with --check, each checked), then a ``jvp`` row: forward mode along the tangents,
    its value and directional derivative (checked too with --check)."""
    from ..errors import GradcliError

    def work():
        from ..run.directional import parse_tangents
        from ..run.directional import run_jvp as jvp_mode
        mode_options(s)  # a malformed option is the command's error, not one mode's
        model = prepare(s)
        tangents = parse_tangents(model, s.tangent)  # a bad --tangent is a usage error
        results, checks, symbolics = compare_modes(s, model)
        jvp_check = None
        try:
            jvp = jvp_mode(model, tangents)
        except GradcliError as err:
            jvp = err.message
        else:
            if s.check:
                from ..check.directional import check_jvp
                jvp_check = check_jvp(model, jvp, rtol=s.rtol, atol=s.atol,
                                      timeout=s.check_timeout)
        return results, checks, symbolics, jvp, jvp_check

    results, checks, symbolics, jvp, jvp_check = guarded(work)
    from . import render
    if s.json_out:
        obj = compare_json(results, checks, symbolics)
        obj["jvp"] = {"error": jvp} if isinstance(jvp, str) else \
            render.json_writer.as_json(jvp.report(jvp_check))
        render.json_writer.write_json(obj)
    elif s.plain:
        print_compare_plain(results, s.precision)
        if isinstance(jvp, str):
            sys.stdout.write(f"jvp error: {jvp}\n")
        else:
            render.plain_writer.write(jvp.report(), s.precision, labelled=True)
        render.print_check_failures({**checks, "jvp": jvp_check})
    else:
        from ..io.report import Page
        from ..run.modes import compare_page
        page = compare_page(results, s.precision, checks if s.check else None,
                            symbolics if s.symbolic else None)
        page.extend(Page().error("jvp (forward mode): ", jvp) if isinstance(jvp, str)
                    else jvp.page(s.precision, jvp_check, compared=True))
        render.show(page)
    verdicts = [render.check_verdict(c) for c in (*checks.values(), jvp_check) if c]
    if "mismatch" in verdicts:
        raise typer.Exit(1)
