"""The human page of one result (every command's output on a terminal, or without
``--json``/``--plain``): a result's ``page()`` says what it shows (io/report.py's
``Page``: lines, tables, verbatim text, with styles named by meaning), and :func:`write`
lays it out with rich through io/writers/human.py (``emit``, ``show_table``).

A page whose text is all printable ASCII, with tables that fit, is written here without
importing rich (~25 ms to a pipe, ~45 ms to a terminal, where rich.console and rich.table
load; issue 14), byte for byte what rich prints (tests/cli/test_render_fallback.py
compares the two): to a file or pipe as plain text (:func:`plain_width`), to a terminal
with the SGR codes rich would write for the page's styles (:func:`terminal_codes`). A
page of verbatim text only needs no rich either.
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
    rich when :func:`page_text` can)."""
    if out is None:
        text = page_text(page)
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
# The page as rich prints it to a file, a pipe or a terminal, without rich
# ---------------------------------------------------------------------------------------
def page_text(page) -> str | None:
    """The text rich prints for ``page`` on standard output: lines, and tables without
    title, rules or frame whose columns fit, of printable ASCII text (verbatim text as it
    is); as plain text when standard output is not a terminal (:func:`plain_width`), else
    with rich's SGR codes (:func:`terminal_codes`). None for anything else: rich prints
    it."""
    if all(isinstance(block, Verbatim) for block in page.blocks):
        return "".join(block.text for block in page.blocks)
    target = _rich_target()
    if target is None:
        return None
    width, terminal = target
    if not terminal:
        return _page_text(page, width, None)
    codes = terminal_codes()
    return None if codes is None else _page_text(page, width, codes)


def _page_text(page, width: int, codes: dict | None) -> str | None:
    """``page`` laid out as rich lays it out in ``width`` columns, its styles written
    with ``codes`` (None: plain text); None when that cannot be said here."""
    chunks: list = []
    for block in page.blocks:
        if isinstance(block, Verbatim):
            chunks.append(block.text)
            continue
        if isinstance(block, Line):
            parts = _coded(block.parts, codes)
            if not block.wrap or not _literal("".join(t for t, _ in parts)):
                return None
            lines = _wrapped_lines(parts, width)
        else:
            lines = _table_lines(block, width, codes)
            if lines is None:
                return None
        chunks += [line + "\n" for line in lines]
    return "".join(chunks)


def _table_lines(block: Table, width: int, codes: dict | None) -> list | None:
    """A table's lines as rich draws them (heavy head, no edge), when it can be said. On a
    terminal, as rich writes them: each header cell's padding and text (the spaces that
    fill the column included) in bold, apart; a body cell's styled parts in their codes."""
    if (not block.fitted or block.title or block.rules or block.frame or not block.rows):
        return None
    rows = [[_coded(_cell_parts(cell), codes) for cell in row] for row in block.rows]
    texts = [["".join(t for t, _ in cell) for cell in row] for row in rows]
    if not all(_literal(cell, cell=True) for row in [block.headers, *texts] for cell in row):
        return None
    widths = [max(len(cell) for cell in column) for column in zip(block.headers, *texts)]
    if sum(widths) + 3 * len(widths) - 1 > width:
        return None  # rich shares the width out, or prints the rows one field per line
    bold = "" if codes is None else codes["bold"]
    head = [_sgr(" ", bold) + _sgr(h.ljust(w), bold) + _sgr(" ", bold)
            for h, w in zip(block.headers, widths)]
    body = [[" " + "".join(_sgr(t, c) for t, c in cell) + " " * (w - len(text) + 1)
             for cell, text, w in zip(row, row_texts, widths)]
            for row, row_texts in zip(rows, texts)]
    return ["\u2503".join(head), "\u2547".join("\u2501" * (w + 2) for w in widths),
            *["\u2502".join(cells) for cells in body]]


def _cell_parts(cell) -> list:
    """A table cell (a string, a (string, meaning) pair, or a list of them) as parts."""
    return cell if isinstance(cell, list) else [cell]


def _coded(parts, codes: dict | None) -> list:
    """A line's or cell's parts as (text, SGR codes) pairs ("" unstyled; all "" for plain
    text)."""
    out = []
    for part in parts:
        text, meaning = part if isinstance(part, tuple) else (part, None)
        out.append((text, "" if codes is None or meaning is None
                    else codes[STYLES.get(meaning, "")]))
    return out


def _sgr(text: str, code: str) -> str:
    """``text`` as rich writes a segment of it: wrapped in its codes, when it has some."""
    return f"\x1b[{code}m{text}\x1b[0m" if code and text else text


def _wrapped_lines(parts: list, width: int) -> list[str]:
    """human.emit's lines for one line of literal text, without rich: broken where emit
    breaks it, each piece's trailing spaces cut, each part's piece in its codes."""
    line = "".join(t for t, _ in parts)
    indent = len(line) - len(line.lstrip(" "))
    hang = indent + 2 if indent else 0
    offsets = line_breaks(line, max(width, 1), hang)
    out = []
    for i, (a, b) in enumerate(zip([0, *offsets], [*offsets, len(line)])):
        b = a + len(line[a:b].rstrip())
        pieces, position = [], 0
        for text, code in parts:
            start, stop = max(position, a), min(position + len(text), b)
            if start < stop:
                pieces.append(_sgr(line[start:stop], code))
            position += len(text)
        out.append((" " * hang if i else "") + "".join(pieces))
    return out


#: SGR codes of the words of STYLES, as rich writes them (attributes, then the colour).
_ATTRIBUTES = {"bold": "1", "dim": "2"}
_COLOURS = {"red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}


def terminal_codes() -> dict | None:
    """The SGR codes rich writes on a terminal for each style of STYLES (and "" for
    none): attributes first, then the colour; without colours under NO_COLOR, as rich
    drops them there. None where rich would not style (a dumb terminal) or a style has a
    word this module does not know."""
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    colour = os.environ.get("NO_COLOR", "") == ""
    codes = {"": ""}
    for style in STYLES.values():
        words = style.split()
        if not set(words) <= _ATTRIBUTES.keys() | _COLOURS.keys():
            return None
        codes[style] = ";".join([_ATTRIBUTES[w] for w in _ATTRIBUTES if w in words]
                                + [_COLOURS[w] for w in words if w in _COLOURS and colour])
    return codes


def plain_width() -> int | None:
    """The width rich's console would use on standard output, when rich would write plain
    text there (:func:`_rich_target`); None otherwise (rich prints, with its styles)."""
    target = _rich_target()
    return None if target is None or target[1] else target[0]


def _rich_target() -> tuple[int, bool] | None:
    """``(width, terminal)``: the width rich's console would use on standard output and
    whether it takes it for a terminal (TTY_COMPATIBLE, FORCE_COLOR, isatty: rich's
    rules); None where this module cannot say what rich prints: Windows (legacy
    consoles), IPython, an encoding that is not UTF (rich draws ASCII boxes)."""
    import builtins

    environ = os.environ
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return None
    terminal = False
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible == "1":
        terminal = True
    elif compatible != "0":
        force = environ.get("FORCE_COLOR")
        if force is not None:
            terminal = force != ""
        else:
            try:
                terminal = bool(sys.stdout.isatty())
            except (AttributeError, ValueError):  # rich: no isatty, or closed: no terminal
                pass
    if not (getattr(sys.stdout, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    columns = environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return (int(columns), terminal) if columns.isascii() else None  # (rich fails on "²")
    width = None
    for descriptor in (0, 1, 2):  # rich asks standard input, output, then error
        try:
            width = os.get_terminal_size(descriptor)[0]
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80, terminal


def _literal(text: str, cell: bool = False) -> bool:
    """Text rich prints as it is, one character per column: printable ASCII (no control
    characters or tabs, which rich strips or expands); a table ``cell`` also with no
    space at either end or two in a row (which rich's wrapping may move)."""
    return text.isascii() and text.isprintable() and (
        not cell or (text == text.strip() and "  " not in text))
