"""Output: JSON, plain numbers, and rich tables that mirror what each API returns.

JSON and plain output never import rich; the human output imports it when it is used.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ..jsonvalue import json_number as json_number, json_value as json_array
from ..modes import API_CALLS, API_NAMES, Outcome


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------
def number_text(x, precision: int | None) -> str:
    """One number: shortest round-trip repr by default (5.0, 0.1), or N significant digits."""
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return repr(x) if precision is None else f"{x:.{precision}g}"


def array_text(value, precision: int | None) -> str:
    """A value compactly: a number, or numpy's print format for arrays."""
    if value is None:
        return "None"
    arr = np.asarray(value)
    if arr.ndim == 0:
        return str(bool(arr)) if arr.dtype == np.bool_ else number_text(arr, precision)
    return np.array2string(arr, precision=precision if precision is not None else 8,
                           separator=", ", threshold=200, edgeitems=3,
                           floatmode="maxprec" if precision is None else "maxprec_equal")


# ---------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------
def outcome_json(outcome: Outcome, check: dict | None = None,
                 symbolic: dict | None = None) -> dict:
    """The JSON object of SPEC §3: value only where the API gives one."""
    obj: dict = {"mode": outcome.mode}
    if outcome.mode in ("tape", "value-grad"):
        obj["value"] = json_array(outcome.value)
    obj["gradients"] = [{"name": g.name, "gradient": json_array(g.gradient)}
                        for g in outcome.gradients]
    if symbolic is not None:
        for entry in obj["gradients"]:
            entry["symbolic"] = symbolic.get(entry["name"])
    if check is not None:
        obj["check"] = check
    return obj


def print_json(obj, file=None) -> None:
    from .. import jsonvalue as json  # json.dumps's text without importing json (issue 14)

    file = file or sys.stdout
    file.write(json.dumps(obj, allow_nan=False) + "\n")


# ---------------------------------------------------------------------------------------
# Plain
# ---------------------------------------------------------------------------------------
def plain_lines(outcome: Outcome, precision: int | None) -> list[str]:
    """The value (where there is one), then each gradient flattened, one line each;
    an unconnected gradient is the word null."""
    lines = []
    if outcome.mode in ("tape", "value-grad"):
        lines.append(_flat(outcome.value, precision))
    for g in outcome.gradients:
        lines.append("null" if g.gradient is None else _flat(g.gradient, precision))
    return lines


def _flat(value, precision: int | None) -> str:
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        return " ".join(str(int(v)) for v in arr.ravel())
    return " ".join(number_text(v, precision) for v in arr.ravel())


# ---------------------------------------------------------------------------------------
# Human (rich)
# ---------------------------------------------------------------------------------------
def console(stderr: bool = False):
    from rich.console import Console
    # rich turns colour off by itself for NO_COLOR and for output that is not a terminal.
    return Console(stderr=stderr, highlight=False, soft_wrap=False, emoji=False)


def _shape(value) -> str:
    return "" if value is None else str(tuple(np.shape(value)))


def _status_style(status: str) -> str:
    return {"ok": "green", "mismatch": "bold red", "skipped": "yellow",
            "non-differentiable": "magenta", "overflow": "cyan"}.get(status, "")


def print_human(outcome: Outcome, precision: int | None, *, check: dict | None = None,
                symbolic: dict | None = None, target: str | None = None) -> None:
    from rich.table import Table

    out = console()
    out.print(f"[bold]{outcome.mode}[/bold]  [dim]{API_CALLS[outcome.mode]}[/dim]")
    if outcome.mode in ("tape", "value-grad"):
        label = f"value of {target}" if target else "value"
        out.print(f"{label}: [bold]{array_text(outcome.value, precision)}[/bold]"
                  f"  [dim]shape {_shape(outcome.value)}[/dim]")
    pairs = outcome.mode in ("implicit", "value-grad")
    table = Table(show_edge=False, header_style="bold")
    table.add_column("variable" if pairs else "source" if outcome.mode == "tape" else "argument")
    table.add_column("gradient")
    table.add_column("shape", style="dim")
    if symbolic is not None:
        table.add_column("symbolic derivative")
    for g in outcome.gradients:
        row = [g.name, array_text(g.gradient, precision) if g.gradient is not None
               else "[dim]None (not connected)[/dim]", _shape(g.gradient)]
        if symbolic is not None:
            row.append(str(symbolic.get(g.name) or ""))
        table.add_row(*row)
    if outcome.gradients:
        if pairs:
            out.print("(gradient, variable) pairs:")
        out.print(table)
    for note in outcome.notes:
        out.print(f"[yellow]note:[/yellow] {note}")
    if check is not None:
        print_check(out, check, precision)


def print_check(out, check: dict, precision: int | None) -> None:
    from rich.table import Table

    table = Table(title="cross-check", show_edge=False, header_style="bold")
    for column in ("name", "tape", "symbolic", "finite diff", "abs err", "rel err", "status"):
        table.add_column(column)
    for entry in check["gradients"]:
        status = entry["status"]
        reason = entry.get("reason")
        shown = f"[{_status_style(status)}]{status}[/]" + (f" ({reason})" if reason else "")
        table.add_row(entry["name"], _cell(entry.get("tape"), precision),
                      _cell(entry.get("symbolic"), precision),
                      _cell(entry.get("numeric"), precision),
                      _err(entry.get("abs_error")), _err(entry.get("rel_error")), shown)
    out.print(table)
    verdict = {"passed": "[green]passed[/green]", "mismatch": "[bold red]MISMATCH[/bold red]"
               }.get(check["verdict"], f"[yellow]{check['verdict']}[/yellow]")
    out.print(f"check: {verdict}" + (f" ({check['reason']})" if check.get("reason") else ""))


def _cell(value, precision) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    # JSON values: numbers or nested lists, with "nan"/"inf" strings numpy reads itself
    return array_text(np.asarray(value, dtype=float), precision)


def _err(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{float(value):.1e}"


# ---------------------------------------------------------------------------------------
# compare and functions
# ---------------------------------------------------------------------------------------
def print_compare_human(results: dict, precision: int | None) -> None:
    from rich.table import Table

    out = console()
    table = Table(title="the four gradient APIs on one program", show_lines=True,
                  header_style="bold")
    table.add_column("mode", no_wrap=True)
    table.add_column("TensorFlow API", no_wrap=True)
    table.add_column("value")
    table.add_column("gradients (in the API's order)")
    for mode, result in results.items():
        if isinstance(result, str):
            table.add_row(mode, API_NAMES[mode], "-", f"[red]error:[/red] {result}")
            continue
        value = (array_text(result.value, precision)
                 if mode in ("tape", "value-grad") else "[dim]not returned[/dim]")
        grads = "\n".join(f"{g.name}: {array_text(g.gradient, precision)}"
                          for g in result.gradients) or "[dim](none)[/dim]"
        table.add_row(mode, API_NAMES[mode], value, grads)
    out.print(table)
    out.print("[dim]tape: w.r.t. what the tape watched (trainable variables read, --watch); "
              "grad: w.r.t. the arguments, variables are constants; implicit: w.r.t. the "
              "trainable variables read; value-grad: the same, plus the value.[/dim]")


def compare_json(results: dict) -> dict:
    return {mode: ({"error": result} if isinstance(result, str) else outcome_json(result))
            for mode, result in results.items()}


def functions_json(entries) -> list:
    return [{"name": op.name, "aliases": list(op.aliases), "inputs": list(op.inputs),
             "params": {k: _json_default(v) for k, v in op.params},
             "kind": op.kind, "derivative": op.derivative, "domain": op.domain,
             "description": op.doc, "differentiable": op.differentiable,
             "sympy": op.sympy is not None} for op in entries]


def _json_default(value):
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


def print_functions_human(entries, constants: dict) -> None:
    from rich.table import Table

    out = console()
    table = Table(title="gradcli functions", header_style="bold", show_lines=False)
    for column in ("name", "aliases", "arguments", "derivative", "domain", "description"):
        table.add_column(column)
    for op in entries:
        args = ", ".join(list(op.inputs) + [f"{k}={v!r}" for k, v in op.params])
        if op.variadic:
            args = "[x, ...]" + args[2:]
        table.add_row(op.name, ", ".join(op.aliases), args, op.derivative, op.domain, op.doc)
    out.print(table)
    out.print("constants: " + ", ".join(f"{k} = {v!r}" for k, v in constants.items()))
    out.print("operators: + - * / ** (also ^) @, unary -, comparisons < <= > >= == != "
              "(where conditions), indexing x[i], x[1:3], x[:, 0]")
