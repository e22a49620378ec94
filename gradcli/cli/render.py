"""The human pages of the four modes, compare, the --check table and the function table:
rich tables that mirror what each API returns, laid out with io/writers/human.py. The JSON
and plain output of every result are the writers' (io/writers/json.py, plain.py, from the
result's ``report()``); the number text is io/text.py's.

Three rules hold for every output:

- **One number format** (:func:`number_text`): the shortest text that reads back to the
  same value in the value's own dtype (``5.0``, ``0.1``, a float32's ``2.9573243``), or
  with ``--precision N`` exactly N significant digits at most (``2.957``); arrays are
  written element by element with it, never with numpy's fixed decimals.
- **Nothing is interpreted**: the human output goes through :func:`console` (rich with
  markup, emoji and highlighting off) and every piece of text is a rich ``Text``, so a
  name, formula or value with square brackets prints as written.
- **Nothing is cut**: a table gets columns at least as wide as the longest number in
  them, or, when even that does not fit the terminal, the same rows are printed one field
  per line (io/writers/human.py); a large array is summarised (:func:`array_text`) in time
  that does not depend on its size.

JSON and plain output never import rich; the human output imports it when it is used,
except for the simplest results written to a file or pipe (:func:`_plain_human`), whose
text is rich's, byte for byte, without rich's ~25 ms import (issue 14).
"""
from __future__ import annotations

import os
import sys
import numpy as np

from ..io.jsonvalue import json_number as json_number
from ..io.text import (array_text as array_text, flat_text as flat_text,
                       json_array as json_array, number_text as number_text,
                       number_texts as number_texts)
from ..io.writers import json as json_writer, plain as plain_writer
from ..io.writers.human import (console as console, emit as emit, line_breaks,
                                print_notes as print_notes,
                                print_value_lines as print_value_lines, shape_text as shape_text,
                                show_table as show_table, styled as styled)
from ..run.modes import API_CALLS, API_NAMES, Outcome


def print_json(obj, file=None) -> None:
    """One JSON object on one line (the JSON writer, io/writers/json.py)."""
    json_writer.write_json(obj, file)


# ---------------------------------------------------------------------------------------
# Human (rich): every piece of text is a Text, and every table goes through show_table
# ---------------------------------------------------------------------------------------
def _status_style(status: str) -> str:
    return {"ok": "green", "mismatch": "bold red", "skipped": "yellow",
            "non-differentiable": "magenta", "overflow": "cyan"}.get(status, "")


def print_human(outcome: Outcome, precision: int | None, *, check: dict | None = None,
                symbolic: dict | None = None, target: str | None = None, out=None) -> None:
    """The human output of one mode: the API, the value, the gradients, notes, check."""
    if out is None and check is None and symbolic is None:
        text = _plain_human(outcome, precision, target)
        if text is not None:
            sys.stdout.write(text)
            return
    out = out or console()
    emit(out, (outcome.mode, "bold"), "  ", (API_CALLS[outcome.mode], "dim"))
    if outcome.mode in ("tape", "value-grad"):
        print_value_lines(out, f"value of {target}" if target else "value", outcome.value,
                     precision)
    pairs = outcome.mode in ("implicit", "value-grad")
    headers = ["variable" if pairs else "source" if outcome.mode == "tape" else "argument",
               "gradient", "shape"]
    if symbolic is not None:
        headers.append("symbolic derivative")
    rows = []
    for g in outcome.gradients:
        row = [g.name, array_text(g.gradient, precision) if g.gradient is not None
               else ("None (not connected)", "dim"), (shape_text(g.gradient), "dim")]
        if symbolic is not None:
            row.append(str(symbolic.get(g.name) or ""))
        rows.append(row)
    if rows:
        if pairs:
            emit(out, "(gradient, variable) pairs:")
        show_table(out, headers, rows)
    print_notes(out, outcome.notes)
    if check is not None:
        print_check(out, check, precision, tapes={g.name: g.gradient for g in outcome.gradients})


# The simplest results without rich: what rich prints when it sees no terminal (no styles)
def _plain_width() -> int | None:
    """The width rich's console would use on standard output, when rich would write plain
    text there: not a terminal by rich's rules (TTY_COMPATIBLE, FORCE_COLOR, isatty), a
    UTF encoding (else rich draws ASCII boxes), not Windows (legacy consoles), no IPython.
    None otherwise: rich then prints, with its styles."""
    import builtins

    environ = os.environ
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return None
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible == "1":
        return None
    if compatible != "0":
        force = environ.get("FORCE_COLOR")
        if force is not None:
            if force != "":
                return None
        else:
            try:
                if sys.stdout.isatty():
                    return None
            except (AttributeError, ValueError):  # rich: no isatty, or closed: no terminal
                pass
    if not (getattr(sys.stdout, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    columns = environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns) if columns.isascii() else None  # (rich fails on "²")
    width = None
    for descriptor in (0, 1, 2):  # rich asks standard input, output, then error
        try:
            width = os.get_terminal_size(descriptor)[0]
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80


def _literal(text: str, cell: bool = False) -> bool:
    """Text rich prints as it is, one character per column: printable ASCII (no control
    characters or tabs, which rich strips or expands); a table ``cell`` also with no
    space at either end or two in a row (which rich's wrapping may move)."""
    return text.isascii() and text.isprintable() and (
        not cell or (text == text.strip() and "  " not in text))


def _plain_lines(line: str, width: int) -> list[str]:
    """:func:`emit`'s lines for one line of literal text, without rich."""
    indent = len(line) - len(line.lstrip(" "))
    hang = indent + 2 if indent else 0
    offsets = line_breaks(line, max(width, 1), hang)
    pieces = [line[a:b].rstrip() for a, b in zip([0, *offsets], [*offsets, len(line)])]
    return [(" " * hang + piece if i else piece) for i, piece in enumerate(pieces)]


def _plain_human(outcome: Outcome, precision: int | None, target: str | None) -> str | None:
    """:func:`print_human`'s text for a scalar value and scalar gradients written to a file
    or pipe, exactly as rich prints it (tests/cli/test_render_fallback.py compares the two);
    None for anything else (arrays, a terminal, a table wider than the output, text that
    is not printable ASCII), which rich prints."""
    has_value = outcome.mode in ("tape", "value-grad")
    if (has_value and (outcome.value is None or np.ndim(outcome.value))) or any(
            g.gradient is not None and np.ndim(g.gradient) for g in outcome.gradients):
        return None
    width = _plain_width()
    if width is None:
        return None
    texts = [f"{outcome.mode}  {API_CALLS[outcome.mode]}"]
    if has_value:
        label = f"value of {target}" if target else "value"
        texts.append(f"{label}: {array_text(outcome.value, precision)}  shape ()")
    pairs = outcome.mode in ("implicit", "value-grad")
    headers = ["variable" if pairs else "source" if outcome.mode == "tape" else "argument",
               "gradient", "shape"]
    rows = [[g.name, "None (not connected)" if g.gradient is None
             else array_text(g.gradient, precision), shape_text(g.gradient)]
            for g in outcome.gradients]
    cells = [cell for row in rows for cell in row]
    notes = [f"note: {note}" for note in outcome.notes]
    if not (all(_literal(text) for text in texts + notes)
            and all(_literal(cell, cell=True) for cell in cells)):
        return None
    lines = [line for text in texts for line in _plain_lines(text, width)]
    if rows:
        widths = [max(len(cell) for cell in column) for column in zip(headers, *rows)]
        if sum(widths) + 3 * len(widths) - 1 > width:
            return None  # rich shares the width out, or prints the rows one field per line
        if pairs:
            lines += _plain_lines("(gradient, variable) pairs:", width)
        lines.append("\u2503".join(f" {h.ljust(w)} " for h, w in zip(headers, widths)))
        lines.append("\u2547".join("\u2501" * (w + 2) for w in widths))
        lines += ["\u2502".join(f" {c.ljust(w)} " for c, w in zip(row, widths)) for row in rows]
    lines += [line for note in notes for line in _plain_lines(note, width)]
    return "".join(line + "\n" for line in lines)


def print_check(out, check: dict, precision: int | None, tapes: dict | None = None,
                title: str = "cross-check") -> None:
    """The check table: the tape's gradient (in its own dtype when ``tapes`` gives it)
    beside sympy's and the finite differences', errors with 2 significant digits."""
    rows = []
    for entry in check["gradients"]:
        status, reason = entry["status"], entry.get("reason")
        tape = (tapes or {}).get(entry["name"], entry.get("tape"))
        rows.append([entry["name"], _cell(tape, precision),
                     _cell(entry.get("symbolic"), precision),
                     _cell(entry.get("numeric"), precision),
                     _err(entry.get("abs_error")), _err(entry.get("rel_error")),
                     styled((status, _status_style(status)), f" ({reason})" if reason else "")])
    show_table(out, ["name", "tape", "symbolic", "finite diff", "abs err", "rel err", "status"],
          rows, title=title)
    verdict = check_verdict(check)
    emit(out, "check: ", {"passed": ("passed", "green"), "mismatch": ("MISMATCH", "bold red")
                           }.get(verdict, (verdict, "yellow")),
          f" ({check['reason']})" if check.get("reason") else "")


def print_check_failures(checks: dict) -> None:
    """``--plain``: standard output holds only numbers, so a check that failed says so on
    standard error, one line each (``checks``: {label: check object or None}; the label
    names compare's mode or ``--at``'s row, "row 3", and is "" for a single check):
    ``check: MISMATCH: tape differs from sympy at x: tape 0.479, sympy 0.878``, or with a
    label ``check: MISMATCH: row 3: ...``: every line starts ``check: MISMATCH:``, so one
    ``grep '^check: MISMATCH:'`` finds them for every command."""
    lines = []
    for label, check in checks.items():
        if check is None or check_verdict(check) != "mismatch":
            continue
        reasons = [entry.get("reason") or f"{entry['name']} differs"
                   for entry in check["gradients"] if entry["status"] == "mismatch"]
        where = f"{label}: " if label else ""
        lines.append(f"check: MISMATCH: {where}{'; '.join(reasons)}\n")
    if lines:
        sys.stdout.flush()  # keep the order of the two streams on a terminal
        sys.stderr.write("".join(lines))


def check_verdict(check: dict) -> str:
    """The check's verdict: "passed", "mismatch" or "nothing to check" (a check object
    without one: from its ``passed``)."""
    return check.get("verdict") or ("passed" if check["passed"] else "mismatch")


def _cell(value, precision) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # JSON: nested lists with "nan"/"inf" strings numpy reads
        value = np.asarray(value, dtype=float)
    return array_text(value, precision)


def _err(value) -> str:
    """An error, with 2 significant digits: its size is what matters."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return array_text(np.asarray(value, dtype=float), 2)


# ---------------------------------------------------------------------------------------
# compare and functions
# ---------------------------------------------------------------------------------------
def print_compare_human(results: dict, precision: int | None, *, checks: dict | None = None,
                        symbolics: dict | None = None, out=None) -> None:
    """The four modes side by side; with --check, each mode's cross-check below."""
    out = out or console()
    rows = []
    for mode, result in results.items():
        if isinstance(result, str):
            rows.append([mode, API_NAMES[mode], "-", styled(("error:", "red"), " " + result)])
            continue
        value = (array_text(result.value, precision) if mode in ("tape", "value-grad")
                 else ("not returned", "dim"))
        symbolic = (symbolics or {}).get(mode)
        lines = []
        for g in result.gradients:
            text = array_text(g.gradient, precision)
            lines.append(f"{g.name}:" + ("\n" if "\n" in text else " ") + text)
            if symbolic is not None:
                lines.append(f"  symbolic: {symbolic.get(g.name) or '-'}")
        rows.append([mode, API_NAMES[mode], value, "\n".join(lines) or ("(none)", "dim")])
    show_table(out, ["mode", "TensorFlow API", "value", "gradients (in the API's order)"], rows,
          title="the four gradient APIs on one program", lines=True, edge=True)
    emit(out, ("tape: w.r.t. what the tape watched (trainable variables read, --watch); "
                "grad: w.r.t. the arguments, variables are constants; implicit: w.r.t. the "
                "trainable variables read; value-grad: the same, plus the value.", "dim"))
    notes: dict = {}
    for mode, result in results.items():
        for note in ([] if isinstance(result, str) else result.notes):
            notes.setdefault(note, []).append(mode)
    print_notes(out, [f"({', '.join(modes)}) {note}" for note, modes in notes.items()])
    for mode, check in (checks or {}).items():
        print_check(out, check, precision, title=f"cross-check of {mode}",
                    tapes={g.name: g.gradient for g in results[mode].gradients})


def print_functions_human(entries, constants: dict, out=None) -> None:
    """The function table, every text as written in the table."""
    out = out or console()
    rows = []
    for op in entries:
        args = ", ".join(list(op.inputs) + [f"{k}={v!r}" for k, v in op.params])
        if op.variadic:
            args = "[x, ...]" + args[2:]
        rows.append([op.name, ", ".join(op.aliases), args, op.derivative, op.domain, op.doc])
    show_table(out, ["name", "aliases", "arguments", "derivative", "domain", "description"], rows,
          title="gradcli functions", prose=True)
    emit(out, "constants: " + ", ".join(f"{k} = {v!r}" for k, v in constants.items()))
    emit(out, "operators: + - * / ** (also ^) @, unary -, comparisons < <= > >= == != "
               "(where conditions), indexing x[i], x[1:3], x[:, 0]")
