"""Output: JSON, plain numbers, and rich tables that mirror what each API returns.

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
  per line (:func:`_vertical`); a large array is summarised (:func:`array_text`) in time
  that does not depend on its size.

JSON and plain output never import rich; the human output imports it when it is used,
except for the simplest results written to a file or pipe (:func:`_plain_human`), whose
text is rich's, byte for byte, without rich's ~25 ms import (issue 14).
"""
from __future__ import annotations

import os
import sys
from itertools import repeat

import numpy as np

from ..io.jsonvalue import json_number as json_number, json_value as _json_value, unsigned_zero
from ..run.modes import API_CALLS, API_NAMES, Outcome

#: Arrays with more elements than this are summarised in human and plain output
#: (numpy's own print threshold); ``--json`` always carries every number.
SUMMARY_THRESHOLD = 1000
#: Elements shown at each end of a summarised axis.
EDGE_ITEMS = 3
#: A summary showing more numbers than this (many short axes, which numpy never elides)
#: shows the first and last elements of the flattened array instead.
SUMMARY_MAX = 300


# ---------------------------------------------------------------------------------------
# Numbers: the one rule
# ---------------------------------------------------------------------------------------
def number_text(x, precision: int | None = None) -> str:
    """One number as every output prints it.

    Default: the shortest text that reads back to the same value in the value's own
    dtype (``repr`` of a float64; numpy's shortest repr of a float32). With
    ``precision=N``: at most N significant digits (``format(x, ".Ng")``).
    Non-finite numbers are ``nan``, ``inf``, ``-inf``; booleans ``True``/``False``; a
    zero is ``0.0`` (``0``), never ``-0.0`` (``x + 0.0``; docs/output.md: "A zero prints as").

    >>> number_text(0.1), number_text(np.float32(2.957324266433716)), number_text(2.9573, 2)
    ('0.1', '2.9573243', '3')
    >>> number_text(-0.0), number_text(-0.0, 3), number_text(np.float32(-0.0))
    ('0.0', '0', '0.0')
    """
    if isinstance(x, (bool, np.bool_)):
        return "True" if x else "False"
    if precision is not None:
        return format(float(x) + 0.0, f".{precision}g")
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, np.floating) and x.dtype != np.float64:
        # numpy: the shortest decimal that reads back in this dtype
        return "0.0" if float(x) == 0 else str(x)
    return repr(float(x) + 0.0)


def number_texts(value, precision: int | None = None) -> list[str]:
    """:func:`number_text` of each element of an array, in C order (flattened), at C
    speed: the same texts, without a Python call per element where a C path gives them.

    float64 (and integers, booleans, and any dtype with ``precision``) go through
    ``tolist`` and ``map`` of ``float.__repr__`` / ``format`` / ``str`` (C loops). float32
    and float16 texts are numpy's shortest float32 (float16) decimal (numpy's scalar
    ``str``), made by numpy's vectorised cast to text (Dragon4, about 0.45 us per number,
    as fast as it gets for that rule; measured in the commit). Other dtypes: element by
    element.

    >>> number_texts(np.array([[0.1, -0.0], [np.nan, -np.inf]]))
    ['0.1', '0.0', 'nan', '-inf']
    >>> number_texts(np.array([2.957324266433716], np.float32)), number_texts([2.9573], 2)
    (['2.9573243'], ['3'])
    """
    arr = np.asarray(value).reshape(-1)
    return _texts_of_flat(arr, precision)


def number_texts_rows(value, precision: int | None = None) -> list[list[str]]:
    """:func:`number_text` of each element of a 2-d array (rows of points, say), row by
    row: ``number_texts_rows(a)[i][j] == number_text(a[i, j])``, at the speed of
    :func:`number_texts` (one C pass over the whole array, then split into rows). For CSV
    and plain lines of many points.

    >>> number_texts_rows(np.array([[1.0, 0.5], [np.inf, 3.0]]))
    [['1.0', '0.5'], ['inf', '3.0']]
    """
    arr = np.asarray(value)
    if arr.ndim != 2:
        raise ValueError(f"number_texts_rows takes a 2-d array, not {arr.ndim}-d")
    flat = _texts_of_flat(arr.reshape(-1), precision)
    width = arr.shape[1]
    return [flat[k:k + width] for k in range(0, len(flat), width)] if width else \
        [[] for _ in range(arr.shape[0])]


def _texts_of_flat(arr: np.ndarray, precision: int | None) -> list[str]:
    kind = arr.dtype.kind
    if kind == "b":
        return np.where(arr, "True", "False").tolist()
    arr = unsigned_zero(arr)  # -0.0 prints 0.0 (one pass in C, a copy of a float array)
    if precision is not None:
        if kind in "fiu":  # format(float(x), ".Ng"): float(x) is the float64 cast
            return list(map(format, arr.astype(np.float64, copy=False).tolist(),
                            repeat(f".{precision}g", arr.size)))
    elif kind == "f" and arr.dtype.itemsize == 8:
        return list(map(float.__repr__, arr.tolist()))  # repr(float(x)), nan and inf too
    elif kind in "iu":
        return list(map(int.__repr__, arr.tolist()))  # str(int(x))
    elif kind == "f" and arr.dtype.itemsize < 8:
        # numpy's str of a float32/float16 scalar, cast in C (the texts are ASCII)
        return arr.astype("S32").astype("U32").tolist()
    return [number_text(v, precision) for v in arr]


def _kept_indices(shape: tuple) -> list[tuple[list[int], int | None]] | None:
    """Per axis, the indices a summary shows and where its ``...`` goes (None: the whole
    axis); None when the summary would still show more than ``SUMMARY_MAX`` numbers."""
    axes, count = [], 1
    for n in shape:
        if n > 2 * EDGE_ITEMS:
            axes.append((list(range(EDGE_ITEMS)) + list(range(n - EDGE_ITEMS, n)), EDGE_ITEMS))
        else:
            axes.append((list(range(n)), None))
        count *= len(axes[-1][0])
    return axes if count <= SUMMARY_MAX else None


def array_text(value, precision: int | None = None) -> str:
    """A value as text: a number, or an array in nested brackets with one number format
    and columns aligned; a large array summarised with ``...``.

    >>> print(array_text(np.array([[1.0, 2.5], [3.0, -4.0]])))
    [[ 1.0,  2.5],
     [ 3.0, -4.0]]
    """
    if value is None:
        return "None"
    arr = np.asarray(value)
    if arr.ndim == 0:
        return number_text(arr[()], precision)
    axes = None
    if arr.size > SUMMARY_THRESHOLD:
        axes = _kept_indices(arr.shape)
        if axes is None:  # many short axes: numpy would print them all
            flat = arr.reshape(-1)
            ends = np.concatenate([flat[:EDGE_ITEMS], flat[-EDGE_ITEMS:]])
            texts = number_texts(ends, precision)
            return ("[" + ", ".join(texts[:EDGE_ITEMS] + ["..."] + texts[EDGE_ITEMS:])
                    + f"] (flattened: the first and last of {arr.size} elements)")
        arr = arr[np.ix_(*[kept for kept, _ in axes])]
    texts = number_texts(arr, precision)
    width = max((len(t) for t in texts), default=0)
    cells = np.array([t.rjust(width) for t in texts] or [""], dtype=object)[:arr.size]
    gaps = [gap for _, gap in axes] if axes is not None else [None] * arr.ndim
    return _nested(cells.reshape(arr.shape), gaps, 0)


def _nested(cells: np.ndarray, gaps: list, depth: int) -> str:
    """numpy's layout: rows of the last axis, one blank line more per outer axis."""
    if cells.ndim == 1:
        items = list(cells)
    else:
        items = [_nested(cells[i], gaps, depth + 1) for i in range(cells.shape[0])]
    if gaps[depth] is not None:
        items.insert(gaps[depth], "...")
    if cells.ndim == 1:
        return "[" + ", ".join(items) + "]"
    separator = ",\n" + "\n" * (cells.ndim - 2) + " " * (depth + 1)
    return "[" + separator.join(items) + "]"


def _summarised(value) -> bool:
    return value is not None and np.size(value) > SUMMARY_THRESHOLD


# ---------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------
def json_array(value):
    """A value as JSON: nested lists of numbers, non-finite numbers as strings. Every
    number is the one rule's default text (a float32 as its shortest float32 decimal),
    in time linear in the size."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        # the float64 that prints as the float32's shortest decimal: numpy writes and
        # parses it in C (bytes: a third faster than str, the same ASCII text)
        arr = arr.astype("S32" if arr.dtype.itemsize < 8 else str).astype(np.float64)
    return _json_value(arr)  # tolist of the float64s, non-finite ones by a mask: in C


def outcome_json(outcome: Outcome, check: dict | None = None,
                 symbolic: dict | None = None) -> dict:
    """The JSON object of SPEC §3: value only where the API gives one; ``notes`` only
    when there are some."""
    obj: dict = {"mode": outcome.mode}
    if outcome.mode in ("tape", "value-grad"):
        obj["value"] = json_array(outcome.value)
    obj["gradients"] = [{"name": g.name, "gradient": json_array(g.gradient)}
                        for g in outcome.gradients]
    if symbolic is not None:
        for entry in obj["gradients"]:
            entry["symbolic"] = symbolic.get(entry["name"])
    if outcome.notes:
        obj["notes"] = list(outcome.notes)
    if check is not None:
        obj["check"] = check
    return obj


def print_json(obj, file=None) -> None:
    """One JSON object on one line."""
    from ..io import jsonvalue  # json.dumps's text without importing json (issue 14)

    jsonvalue.write_line(obj, file or sys.stdout)


# ---------------------------------------------------------------------------------------
# Plain
# ---------------------------------------------------------------------------------------
def plain_lines(outcome: Outcome, precision: int | None, labelled: bool = False) -> list[str]:
    """The value (where there is one), then each gradient flattened, one line each;
    an unconnected gradient is the word null; a large array is summarised as
    ``a b c ... x y z`` (``--json`` prints every number).

    ``labelled`` (``compare --plain``, where four modes' lines follow one another): each
    line starts with the mode and the JSON key of its numbers, and a gradient's with its
    name, so that ``read mode what rest`` or awk can split them:
    ``tape value 31.0``, ``tape gradient w1 5.0``."""
    fields = ([("value", outcome.value)] if outcome.mode in ("tape", "value-grad") else [])
    fields += [(f"gradient {g.name}", g.gradient) for g in outcome.gradients]
    return [(f"{outcome.mode} {label} " if labelled else "")
            + ("null" if value is None else flat_text(value, precision))
            for label, value in fields]


def plain_notes(outcome: Outcome) -> list[str]:
    """The outcome's notes, and one for each array plain output summarised."""
    notes = list(outcome.notes)
    shown = ([("the value", outcome.value)] if outcome.mode in ("tape", "value-grad") else [])
    shown += [(f"the gradient of {g.name}", g.gradient) for g in outcome.gradients]
    for what, value in shown:
        if _summarised(value):
            notes.append(f"{what} has {np.size(value)} elements: shown are the first and "
                         f"last {EDGE_ITEMS} (--json prints them all)")
    return notes


def print_plain(outcome: Outcome, precision: int | None, labelled: bool = False) -> None:
    """Plain output: numbers on standard output, notes on standard error (``labelled``:
    compare's lines, see :func:`plain_lines`, and notes that name the mode)."""
    lines = plain_lines(outcome, precision, labelled)
    sys.stdout.write("".join(line + "\n" for line in lines))
    notes = plain_notes(outcome)
    if notes:
        sys.stdout.flush()  # keep the order of the two streams on a terminal
        label = f"{outcome.mode}: " if labelled else ""  # compare: which mode's note
        sys.stderr.write("".join(f"note: {label}{note}\n" for note in notes))


def flat_text(value, precision: int | None) -> str:
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int8)
    if arr.size > SUMMARY_THRESHOLD:
        flat = arr.reshape(-1)
        head = number_texts(flat[:EDGE_ITEMS], precision)
        return " ".join(head + ["..."] + number_texts(flat[-EDGE_ITEMS:], precision))
    return " ".join(number_texts(arr, precision))


# ---------------------------------------------------------------------------------------
# Human (rich): every piece of text is a Text, and every table goes through show_table
# ---------------------------------------------------------------------------------------
def console(stderr: bool = False, width: int | None = None, file=None):
    """The one console of the human output: no markup, emoji or highlighting, so no user
    or computed text is ever interpreted."""
    from rich.console import Console
    # rich turns colour off by itself for NO_COLOR and for output that is not a terminal.
    out = Console(stderr=stderr, file=file, width=width, markup=False, emoji=False,
                  highlight=False, soft_wrap=False)
    out.on_broken_pipe = _closed_pipe  # rich would exit 1 itself; the caller decides
    return out


def _closed_pipe() -> None:
    raise BrokenPipeError(32, "Broken pipe")


def styled(*parts):
    """A rich Text from strings and (string, style) pairs, all taken literally."""
    from rich.text import Text

    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(part[0], style=part[1])
        else:
            text.append(part)
    return text


def _breaks(line: str, width: int, hang: int) -> list[int]:
    """Where to break ``line`` so that its pieces fit ``width`` (continuations are
    indented by ``hang``): before a word, never inside one (a word longer than the width
    gets a line of its own)."""
    offsets, start, position = [], 0, 0
    for word in line.split(" "):
        end = position + len(word)
        room = width - (hang if offsets else 0)
        if word and end - start > room and line[start:position].strip():
            offsets.append(position)
            start = position
        position = end + 1
    return offsets


def emit(out, *parts) -> None:
    """Print one logical line, wrapped at spaces to the terminal's width (an indented
    line with a hanging indent); a number is never cut, and nothing is interpreted."""
    for line in styled(*parts).split("\n", allow_blank=True):
        indent = len(line.plain) - len(line.plain.lstrip(" "))
        hang = indent + 2 if indent else 0  # a field's continuation under its value
        for i, piece in enumerate(line.divide(_breaks(line.plain, max(out.width, 1), hang))):
            piece.rstrip()
            out.print(styled(" " * hang) + piece if i else piece, soft_wrap=True, crop=False)


def shape_text(value) -> str:
    return "" if value is None else str(tuple(np.shape(value)))


def _status_style(status: str) -> str:
    return {"ok": "green", "mismatch": "bold red", "skipped": "yellow",
            "non-differentiable": "magenta", "overflow": "cyan"}.get(status, "")


def show_table(out, headers: list, rows: list, *, title: str | None = None,
          lines: bool = False, edge: bool = False, prose: bool = False) -> None:
    """A table whose columns are at least as wide as their longest word (so no number is
    ever cut or elided); when even that does not fit, the same rows one field per line.
    A table of ``prose`` (no computed numbers) may fold long words on terminals of 60
    columns or more instead."""
    from rich import box
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(title=styled(title) if title else None, show_edge=edge, show_lines=lines,
                  box=box.HEAVY_HEAD, header_style="bold")
    for header in headers:
        table.add_column(styled(header), overflow="fold")
    for row in rows:
        table.add_row(*[styled(cell) if isinstance(cell, (str, tuple)) else cell for cell in row])
    wide = out.options.update_width(10 ** 6)
    whole = Measurement.get(out, wide, table)
    if whole.maximum > out.width:
        columns = []
        for column in table.columns:
            sizes = [Measurement.get(out, wide, cell) for cell in [column.header, *column.cells]]
            columns.append((max(s.minimum for s in sizes), max(s.maximum for s in sizes)))
        overhead = whole.maximum - sum(high for _, high in columns)
        spare = out.width - overhead - sum(low for low, _ in columns)
        if spare < 0 and not (prose and out.width >= 60):
            _vertical(out, headers, rows, title)
            return
        # every column gets its longest word; the rest goes to the columns that need the
        # least to show their lines whole, so that as many columns as possible do not wrap
        order = sorted(range(len(columns)), key=lambda k: columns[k][1] - columns[k][0])
        for k in order:
            low, high = columns[k]
            give = min(high - low, max(spare, 0))
            spare -= give
            if spare >= 0:  # (prose that does not fit: rich's own layout, which folds)
                table.columns[k].width = low + give
    out.print(table, crop=False)


def _vertical(out, headers: list, rows: list, title: str | None) -> None:
    """The rows of a table too wide for the terminal: the first field as a heading, the
    others indented below it, one per line (a multi-line value under its name)."""
    if title:
        emit(out, (title, "bold"))
    for row in rows:
        emit(out, (f"{headers[0]}: ", "bold"), row[0])
        for header, cell in zip(headers[1:], row[1:]):
            plain = cell if isinstance(cell, str) else cell[0] if isinstance(cell, tuple) \
                else cell.plain
            if "\n" in plain:
                emit(out, f"  {header}:")
                for line in plain.split("\n"):
                    emit(out, "    " + line)
            else:
                emit(out, f"  {header}: ", cell)


def print_value_lines(out, label: str, value, precision: int | None) -> None:
    text = array_text(value, precision)
    shape = f"shape {shape_text(value)}"
    if "\n" in text:
        emit(out, f"{label} ({shape}):")
        for line in text.split("\n"):
            emit(out, "  " + line)
    else:
        emit(out, f"{label}: ", (text, "bold"), "  ", (shape, "dim"))


def print_notes(out, notes) -> None:
    for note in notes:
        emit(out, ("note:", "yellow"), " " + note)


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
    offsets = _breaks(line, max(width, 1), hang)
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


def compare_json(results: dict, checks: dict | None = None,
                 symbolics: dict | None = None) -> dict:
    """``compare --json``: one object per mode, ``{"error": ...}`` for a refusal."""
    return {mode: ({"error": result} if isinstance(result, str) else
                   outcome_json(result, (checks or {}).get(mode), (symbolics or {}).get(mode)))
            for mode, result in results.items()}


def functions_json(entries) -> list:
    """``functions --json``: every table entry."""
    return [{"name": op.name, "aliases": list(op.aliases), "inputs": list(op.inputs),
             "params": {k: _json_default(v) for k, v in op.params},
             "kind": op.kind, "derivative": op.derivative, "domain": op.domain,
             "description": op.doc, "differentiable": op.differentiable,
             "sympy": op.sympy is not None,
             # which modes have rules: reverse (a VJP), forward (a JVP), per entry
             "reverse": op.differentiable,
             "forward": any(rule is not None for rule in op.jvps)} for op in entries]


def _json_default(value):
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


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
