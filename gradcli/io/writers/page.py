"""The human page of one result (every command's output on a terminal, or without
``--json``/``--plain``): a result's ``page()`` says what it shows (io/report.py's
``Page``: lines, tables, verbatim text, with styles named by meaning), and :func:`write`
lays it out with rich through io/writers/human.py (``emit``, ``show_table``).

A page rich would print as plain text (standard output not a terminal, see
:func:`plain_width`) whose text is all printable ASCII, with tables that fit, is written
here without importing rich (~25 ms, issue 14), byte for byte what rich prints
(tests/cli/test_render_fallback.py compares the two); a page of verbatim text only needs
no rich either.
"""
from __future__ import annotations

import os
import sys

from ..report import Line, Table, Verbatim
from .human import console, emit, line_breaks, show_table, styled

#: The look of each meaning a page names (io/report.py's MEANINGS).
STYLES = {"heading": "bold", "emphasis": "bold", "aside": "dim", "good": "green",
          "bad": "bold red", "error": "red", "caution": "yellow", "kink": "magenta",
          "overflow": "cyan"}


def write(page, out=None) -> None:
    """Write ``page`` to ``out`` (a console of human.py; None: standard output, without
    rich when :func:`plain_text` can)."""
    if out is None:
        text = plain_text(page)
        if text is not None:
            sys.stdout.write(text)
            return
    for block in page.blocks:
        if isinstance(block, Verbatim):
            (sys.stdout if out is None else out.file).write(block.text)
            continue
        out = out or console()
        if isinstance(block, Line):
            if block.wrap:
                emit(out, *_parts(block.parts))
            else:
                out.print(styled(*_parts(block.parts)))
        elif block.fitted:
            show_table(out, block.headers, [[_cell(c) for c in row] for row in block.rows],
                       title=block.title, lines=block.rules, edge=block.frame,
                       prose=block.prose)
        else:
            _rich_table(out, block)


def _parts(parts) -> list:
    """A line's parts with rich styles for their meanings."""
    return [(part[0], STYLES.get(part[1], "")) if isinstance(part, tuple) else part
            for part in parts]


def _cell(cell):
    if isinstance(cell, list):
        return styled(*_parts(cell))
    return _parts([cell])[0]


def _rich_table(out, block: Table) -> None:
    """A table in rich's own layout (its columns shrink and elide to fit)."""
    from rich.table import Table as RichTable
    table = RichTable(title=block.title, show_edge=block.frame, show_lines=block.rules,
                      header_style="bold")
    for header in block.headers:
        table.add_column(header, style="dim" if header in block.aside else None)
    for row in block.rows:
        table.add_row(*[styled(*_parts(c if isinstance(c, list) else [c])) for c in row])
    out.print(table)


# ---------------------------------------------------------------------------------------
# The page as rich prints it to a file or pipe, without rich
# ---------------------------------------------------------------------------------------
def plain_text(page) -> str | None:
    """The text rich prints for ``page`` on standard output when that is not a terminal:
    lines, and tables without title, rules or frame whose columns fit, of printable ASCII
    text (verbatim text as it is); None for anything else (rich prints it)."""
    if all(isinstance(block, Verbatim) for block in page.blocks):
        return "".join(block.text for block in page.blocks)
    width = plain_width()
    if width is None:
        return None
    chunks: list = []
    for block in page.blocks:
        if isinstance(block, Verbatim):
            chunks.append(block.text)
            continue
        if isinstance(block, Line):
            text = "".join(part[0] if isinstance(part, tuple) else part for part in block.parts)
            if not block.wrap or not _literal(text):
                return None
            lines = _plain_lines(text, width)
        else:
            lines = _plain_table(block, width)
            if lines is None:
                return None
        chunks += [line + "\n" for line in lines]
    return "".join(chunks)


def _plain_table(block: Table, width: int) -> list | None:
    """A table's lines as rich draws them (heavy head, no edge), when it can be said."""
    if (not block.fitted or block.title or block.rules or block.frame or not block.rows):
        return None
    rows = [[_text(cell) for cell in row] for row in block.rows]
    if not all(_literal(cell, cell=True) for row in [block.headers, *rows] for cell in row):
        return None
    widths = [max(len(cell) for cell in column) for column in zip(block.headers, *rows)]
    if sum(widths) + 3 * len(widths) - 1 > width:
        return None  # rich shares the width out, or prints the rows one field per line
    return ["\u2503".join(f" {h.ljust(w)} " for h, w in zip(block.headers, widths)),
            "\u2547".join("\u2501" * (w + 2) for w in widths),
            *["\u2502".join(f" {c.ljust(w)} " for c, w in zip(row, widths)) for row in rows]]


def _text(cell) -> str:
    if isinstance(cell, str):
        return cell
    if isinstance(cell, tuple):
        return cell[0]
    return "".join(_text(part) for part in cell)


def plain_width() -> int | None:
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
    """human.emit's lines for one line of literal text, without rich."""
    indent = len(line) - len(line.lstrip(" "))
    hang = indent + 2 if indent else 0
    offsets = line_breaks(line, max(width, 1), hang)
    pieces = [line[a:b].rstrip() for a, b in zip([0, *offsets], [*offsets, len(line)])]
    return [(" " * hang + piece if i else piece) for i, piece in enumerate(pieces)]
