"""``gradcli jvp`` and the jvp row of ``gradcli compare``: parse, evaluate in forward mode,
check if asked, render. Imported only when one of them runs (see app.py)."""
from __future__ import annotations

import sys

import typer

from .app import _guarded, _mode_options, _prepare, _Settings


def _work(s: _Settings):
    from ..directional import parse_tangents, run_jvp
    model = _prepare(s)
    outcome = run_jvp(model, parse_tangents(model, s.tangent))
    return model, outcome


def outcome_json(outcome, check: dict | None = None) -> dict:
    """``{"mode": "jvp", "value": ..., "jvp": ...}`` (plus ``check`` with --check)."""
    from .render import json_array
    obj = {"mode": "jvp", "value": json_array(outcome.value), "jvp": json_array(outcome.jvp)}
    if check is not None:
        obj["check"] = check
    return obj


def plain_lines(outcome, precision: int | None) -> list[str]:
    """The value, then the jvp, each flattened on one line."""
    from .render import _flat
    return [_flat(outcome.value, precision), _flat(outcome.jvp, precision)]


def print_human(outcome, precision: int | None, check: dict | None = None,
                target: str | None = None) -> None:
    from ..directional import API_CALL
    from .render import _shape, array_text, console, print_check
    out = console()
    out.print(f"[bold]jvp[/bold]  [dim]{API_CALL}[/dim]")
    label = f"value of {target}" if target else "value"
    out.print(f"{label}: [bold]{array_text(outcome.value, precision)}[/bold]"
              f"  [dim]shape {_shape(outcome.value)}[/dim]")
    direction = ", ".join(f"{name} = {array_text(t, precision)}"
                          for name, t in outcome.tangents.items())
    out.print(f"along: {direction}")
    out.print(f"jvp (directional derivative): [bold]{array_text(outcome.jvp, precision)}"
              f"[/bold]  [dim]shape {_shape(outcome.jvp)}[/dim]")
    if check is not None:
        print_check(out, check, precision)


def run_jvp(s: _Settings) -> None:
    """The ``jvp`` command."""
    def work():
        model, outcome = _work(s)
        check = None
        if s.check:
            from ..check.directional import check_jvp
            check = check_jvp(model, outcome, rtol=s.rtol, atol=s.atol,
                              timeout=s.check_timeout)
        return model, outcome, check

    model, outcome, check = _guarded(work)
    from . import render
    if s.json_out:
        render.print_json(outcome_json(outcome, check))
    elif s.plain:
        sys.stdout.write("".join(line + "\n" for line in plain_lines(outcome, s.precision)))
    else:
        print_human(outcome, s.precision, check=check, target=model.target_name)
    if check is not None and check["verdict"] == "mismatch":
        raise typer.Exit(1)


def run_compare(s: _Settings) -> None:
    """``compare`` with ``--tangent``: the four APIs, then a ``jvp`` row (forward mode
    along the tangents: its value and directional derivative)."""
    from ..errors import GradcliError
    from ..modes import MODES, run_mode

    def work():
        from ..directional import parse_tangents, run_jvp as jvp_mode
        model = _prepare(s)
        tangents = parse_tangents(model, s.tangent)  # a bad --tangent is a usage error
        results = {}
        for mode in MODES:
            try:
                results[mode] = run_mode(mode, model, _mode_options(s))
            except GradcliError as err:
                results[mode] = err.message
        try:
            jvp = jvp_mode(model, tangents)
        except GradcliError as err:
            jvp = err.message
        return results, jvp

    results, jvp = _guarded(work)
    from . import render
    if s.json_out:
        obj = render.compare_json(results)
        obj["jvp"] = {"error": jvp} if isinstance(jvp, str) else outcome_json(jvp)
        render.print_json(obj)
    elif s.plain:
        for mode, result in results.items():
            if isinstance(result, str):
                sys.stdout.write(f"{mode} error: {result}\n")
            else:
                for line in render.plain_lines(result, s.precision):
                    sys.stdout.write(f"{mode} {line}\n")
        if isinstance(jvp, str):
            sys.stdout.write(f"jvp error: {jvp}\n")
        else:
            for line in plain_lines(jvp, s.precision):
                sys.stdout.write(f"jvp {line}\n")
    else:
        render.print_compare_human(results, s.precision)
        out = render.console()
        if isinstance(jvp, str):
            out.print(f"jvp (forward mode): [red]error:[/red] {jvp}")
        else:
            direction = ", ".join(f"{n} = {render.array_text(t, s.precision)}"
                                  for n, t in jvp.tangents.items())
            out.print(f"jvp (forward mode, tf.autodiff.ForwardAccumulator) along {direction}: "
                      f"value {render.array_text(jvp.value, s.precision)}, directional "
                      f"derivative [bold]{render.array_text(jvp.jvp, s.precision)}[/bold]")
