"""``--csv`` with ``--at``, ``.csv``: a header, then a line per row."""
from __future__ import annotations

import numpy as np

from ..points import BadRow, element_labels
from .base import Writer, csv_field, fill_lines, number_spec, output_ready


class CsvWriter(Writer):
    """A header, then a line per row: row, the kept columns (``--keep``), the point's
    columns, value, gradients."""

    def __init__(self, *args):
        super().__init__(*args)
        self.header_done = False
        self.widths = None
        self.pending: list = []

    def _header(self, layout, res) -> None:
        header = ["row"] + self.kept + list(self.labels)
        widths = [len(self.labels)]
        if layout is not None:
            if layout.has_value:
                shape = np.shape(res.value)[1:]
                header += element_labels("value", shape)
                widths.append(max(1, int(np.prod(shape))))
            for k, (name, a) in enumerate(zip(layout.names, res.grads)):
                shape = np.shape(a)[1:] if a is not None else layout.shapes[k]
                header += element_labels(f"{self.kind.prefix}{name}", shape)
            if self.kind.word:
                header.append(self.kind.word)
                widths.append(max(1, int(np.prod(shape))))
        self.out.write(",".join(csv_field(h) for h in header) + "\n")
        self.width = len(header)
        self.header_done = True
        for row in self.pending:
            self._bad(row)
        self.pending = []

    def write(self, res) -> None:
        layout = self.layout_of()
        if not self.header_done:
            self._header(layout, res)
        n = res.n
        specs = ["%d"] + ["%r" if self.precision is None else f"%.{self.precision}g"] * \
            res.columns.shape[1]
        arrays = [np.arange(res.start, res.start + n, dtype=np.float64)[:, None],
                  output_ready(res.columns)]  # (the point too: -0.0 prints 0.0, as everywhere)
        with_value = layout.has_value
        fields = ([res.value] if with_value else []) + list(res.grads)
        for k, f in enumerate(fields):
            if f is None:
                shape = layout.shapes[k - with_value]
                specs += [""] * max(1, int(np.prod(shape)))
                continue
            f = output_ready(f, self.precision)
            flat = f.reshape(n, -1)
            specs += [number_spec(f, self.precision)] * flat.shape[1]
            arrays.append(flat.astype(np.float64))
        template = ",".join(specs) + "\n"
        table = np.concatenate(arrays, axis=1)
        text = fill_lines(template, table)
        if res.words is not None:
            text = "".join(f"{line},{csv_field(word)}\n" for line, word in
                           zip(text.splitlines(), res.words))
        if self.kept:   # after the row number
            lines = []
            for line, kept in zip(text.splitlines(), res.kept.tolist()):
                row, _, rest = line.partition(",")
                lines.append(f"{row},{','.join(map(csv_field, kept))},{rest}\n")
            text = "".join(lines)
        self.out.write(text)
        self.rows += n

    def bad(self, row: BadRow) -> None:
        self.bad_rows += 1
        if not self.header_done:
            self.pending.append(row)
            if len(self.pending) < 100_000:
                return
            self._header(None, None)
            return
        self._bad(row)

    def _bad(self, row: BadRow) -> None:
        kept = [csv_field(text) for text in row.kept] if self.kept and row.kept else []
        self.out.write(",".join([str(row.row), *kept]) + "," * (self.width - 1 - len(kept))
                       + "\n")

    def finish(self) -> None:
        if not self.header_done:
            self._header(None, None)


# ---------------------------------------------------------------------------------------
# One result's table (plot --csv)
# ---------------------------------------------------------------------------------------
def write_table(report, precision: int | None, file=None) -> None:
    """``--csv`` of one result: its table's header, then a line per sample (each column's
    numbers in its own dtype's text)."""
    import sys

    from ..text import number_texts
    header, columns = report.table
    rows = [",".join(header)]
    rows += [",".join(row) for row in zip(*(number_texts(c, precision) for c in columns))]
    (file or sys.stdout).write("".join(row + "\n" for row in rows))
