"""The human output: rich, with nothing interpreted and nothing cut.

- Every piece of text is a rich ``Text`` (:func:`styled`) printed through :func:`console`
  (markup, emoji and highlighting off), so a name, formula or value with square brackets
  prints as written; :func:`emit` wraps a line at spaces, never inside a number.
- A table (:func:`show_table`) gets columns at least as wide as the longest number in
  them, or, when even that does not fit the terminal, the same rows one field per line
  (:func:`_vertical`).
- io/writers/page.py lays out a result's human page (io/report.py's ``Page``) with these.
- ``HumanWriter``: ``--at``'s human output on the writers' interface (base.Writer): the
  first rows as a table and a summary of all of them.

rich is imported when a function here first needs it, not with this module.
"""
from __future__ import annotations

import numpy as np

from ..text import array_text, number_text
from .base import Writer

#: Rows the human output of --at shows in its table.
HEAD_ROWS = 10
#: Row numbers listed for non-finite results in the human summary.
LISTED_ROWS = 10


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


def line_breaks(line: str, width: int, hang: int) -> list[int]:
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
        for i, piece in enumerate(line.divide(line_breaks(line.plain, max(out.width, 1), hang))):
            piece.rstrip()
            out.print(styled(" " * hang) + piece if i else piece, soft_wrap=True, crop=False)


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


class HumanWriter(Writer):
    """The first rows as a table, and a summary of all of them."""

    def __init__(self, *args):
        super().__init__(*args)
        # (row, columns, value, [gradients], kept), or (row, message, kept) for a bad row
        self.head: list = []
        self.value_min = self.value_max = None
        self.norm_min = self.norm_max = None
        self.non_finite = 0
        self.non_finite_rows: list = []
        self.words: dict = {}   # hessian's verdicts: word -> rows

    def write(self, res) -> None:
        layout = self.layout_of()
        n = res.n
        for i in range(min(n, HEAD_ROWS - len(self.head))):
            self.head.append((res.start + i, res.columns[i],
                              None if res.value is None else res.value[i],
                              [None if g is None else g[i] for g in res.grads]
                              + ([res.words[i]] if res.words is not None else []),
                              [] if res.kept is None else res.kept[i].tolist()))
        if res.words is not None:
            for word in res.words:
                self.words[word] = self.words.get(word, 0) + 1
        finite = np.ones(n, dtype=bool)
        if layout.has_value and res.value is not None:
            v = res.value.reshape(n, -1).astype(np.float64)
            finite &= np.isfinite(v).all(axis=1)
            self.value_min = _extreme(self.value_min, v, finite, res.start, min)
            self.value_max = _extreme(self.value_max, v, finite, res.start, max)
        squares = np.zeros(n)
        normed = res.grads if self.kind.norm_of is None else [res.grads[k] for k in
                                                                self.kind.norm_of]
        for g in normed:
            if g is not None:
                flat = g.reshape(n, -1).astype(np.float64)
                finite &= np.isfinite(flat).all(axis=1)
                squares += (flat * flat).sum(axis=1)
        if any(g is not None for g in normed):
            norms = np.sqrt(squares)[:, None]
            self.norm_min = _extreme(self.norm_min, norms, finite, res.start, min)
            self.norm_max = _extreme(self.norm_max, norms, finite, res.start, max)
        bad = np.flatnonzero(~finite)
        self.non_finite += len(bad)
        room = LISTED_ROWS - len(self.non_finite_rows)
        self.non_finite_rows += [int(res.start + i) for i in bad[:max(room, 0)]]
        self.rows += n

    def bad(self, row: BadRow) -> None:
        if len(self.head) < HEAD_ROWS:
            self.head.append((row.row, row.message, row.kept or [""] * len(self.kept)))
        self.bad_rows += 1

    def finish(self) -> None:
        out = console()
        layout = self.layout_of()
        precision = self.precision
        show_point = len(self.labels) <= 6
        labels = list(self.labels[:6])   # (a row of a big array has millions)
        headers = ["row"] + self.kept + (labels if show_point else ["point"])
        with_value = layout is not None and layout.has_value
        if with_value:
            headers.append("value")
        names = layout.names if layout is not None else []
        headers += [f"{self.kind.prefix}{name}" for name in names]
        if self.kind.word:
            headers.append(self.kind.word)
        rows = []
        for item in self.head:
            if len(item) == 3:
                row, message, kept = item
                cells = [str(row), *kept, f"error: {message}"]
                rows.append(cells + [""] * (len(headers) - len(cells)))
                continue
            row, columns, value, grads, kept = item
            texts = [number_text(x, precision) for x in columns[:6].tolist()]
            cells = [str(row)] + kept + (texts if show_point else [", ".join(
                f"{k}={t}" for k, t in zip(labels[:4], texts[:4])) + (
                ", ..." if len(self.labels) > 4 else "")])
            if with_value:
                cells.append(array_text(value, precision))
            cells += [g if isinstance(g, str) else array_text(g, precision)
                      if g is not None else "None" for g in grads]
            rows.append(cells)
        total = self.rows + self.bad_rows
        what = layout.title if layout is not None else "rows"
        title = (f"{what}: the first {len(rows)} of {total} rows" if total > len(rows)
                 else f"{what}: {total} rows")
        if rows:
            show_table(out, headers, rows, title=title)
        lines = [f"rows: {total:,}" + (f" ({self.bad_rows:,} could not be read or computed)"
                                        if self.bad_rows else "")]
        if self.value_min is not None:
            what = "value" if layout.value_ndim == 0 else "value (elements)"
            lines.append(f"{what}: min {number_text(self.value_min[0], precision)} "
                         f"(row {self.value_min[1]}), max "
                         f"{number_text(self.value_max[0], precision)} "
                         f"(row {self.value_max[1]})")
        if self.norm_min is not None:
            lines.append(f"{self.kind.norm}: min {number_text(self.norm_min[0], precision)}"
                         f" (row {self.norm_min[1]}), max "
                         f"{number_text(self.norm_max[0], precision)} "
                         f"(row {self.norm_max[1]})")
        if self.words:
            lines.append(f"{self.kind.word}: " + ", ".join(
                f"{word} {count:,}" for word, count in sorted(self.words.items())))
        if self.non_finite:
            listed = ", ".join(map(str, self.non_finite_rows))
            more = ", ..." if self.non_finite > len(self.non_finite_rows) else ""
            lines.append(f"non-finite results (nan or inf): {self.non_finite:,} row"
                         f"{'s' if self.non_finite != 1 else ''} ({listed}{more})")
        else:
            lines.append("non-finite results: none")
        for line in lines:
            emit(out, line)


def _extreme(current, values: np.ndarray, finite: np.ndarray, start: int, pick):
    """The running min or max of the finite rows' elements: (number, row)."""
    if not finite.any():
        return current
    rows = np.flatnonzero(finite)
    per_row = (values[rows].min(axis=1) if pick is min else values[rows].max(axis=1))
    k = int(np.argmin(per_row) if pick is min else np.argmax(per_row))
    candidate = (float(per_row[k]), int(start + rows[k]))
    if current is None:
        return candidate
    return pick(current, candidate, key=lambda c: c[0])
