"""What every ``--at`` writer shares: the rows' number text, a chunk at a time (one
C-level %-formatting per chunk), and ``Writer``, the interface each format implements.

A writer is made with ``(out, precision, layout_of, labels, kind, kept)``: ``out`` the file
(standard output, an ``outfile.OutputFile``, a ``JsonArrayFile`` or an ``NpzOutput``),
``layout_of()`` what every row holds (``report.RowLayout``: the value or not, the outputs'
names and shapes, the notes, a row's single-point ``Report``; None before the first
computed row), ``labels`` the point's column names, ``kind`` the result type's constant
part (``report.RowKind``: the columns' prefix, the norm, a word per row), ``kept`` the
``--keep`` labels. Writers read only these neutral descriptions (io/report.py), never a
run type. It is given, in order: ``start(res, point)`` before the first rows,
``write(res)`` for each computed piece of rows (``res``: ``start``, ``n``, ``columns``,
``value``, ``grads``, ``raw``, ``words``, ``kept``), ``bad(row)`` for each row skipped
with ``--skip-bad-rows``, optionally ``check(report)``, then ``finish()`` -- or
``stopped()`` when the run stops early.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError

#: Rows whose output text is made at once (a chunk's rows are written in such pieces).
WRITE_ROWS = 8192


# ---------------------------------------------------------------------------------------
# Number text, a chunk at a time
# ---------------------------------------------------------------------------------------
def output_ready(arr: np.ndarray, precision: int | None = None) -> np.ndarray:
    """An output array whose float64 text is the single-point output's: a float32's
    shortest decimal (or, with ``precision``, its exact value, which ``number_text``
    rounds), -0.0 as 0.0 (``unsigned_zero``); booleans as they are."""
    from ..jsonvalue import unsigned_zero
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        arr = arr.astype(np.float64) if precision is not None else \
            arr.astype(str).astype(np.float64)
    return unsigned_zero(arr)


def number_spec(arr, precision: int | None) -> str:
    if arr is not None and arr.dtype == np.bool_:
        return "%d"
    return "%r" if precision is None else f"%.{precision}g"


def fill_lines(template: str, table: np.ndarray) -> str:
    """``template`` (one row's line, one %-field per column of ``table``) filled with
    every row of ``table`` in one C-level formatting."""
    n = len(table)
    if n == 0:
        return ""
    return (template * n) % tuple(table.ravel().tolist())


# ---------------------------------------------------------------------------------------
# The writers' common part
# ---------------------------------------------------------------------------------------
class Writer:
    def __init__(self, out, precision: int | None, layout_of, labels: list, kind,
                 kept: list = ()):
        self.out, self.precision, self.layout_of, self.labels = (out, precision, layout_of,
                                                                 labels)
        self.kind = kind
        self.kept = list(kept)   # the labels of the columns --keep passes through
        self.rows = 0
        self.bad_rows = 0

    def start(self, res, point: list) -> None:
        """Before the first rows: a kept column may not take a name the output gives
        (``row``, a name of the point, ``value``, ``d_x``, a JSON key, ``error``...)."""
        if not self.kept:
            return
        layout, kind = self.layout_of(), self.kind
        taken = {"row", "error", "error_message", "check", *point, "value",
                 *(f"{kind.prefix}{name}" for name in layout.names)}
        if kind.word:
            taken.add(kind.word)
        value = None if res.value is None else res.value[0]
        taken.update(layout.row_report(value, [None if r is None else r[0]
                                               for r in res.raw]).fields)
        clash = [label for label in self.kept if label in taken]
        if clash:
            raise InputError(f"--keep: the kept column {clash[0]!r} would have the name of a "
                             "column of the output (row, the point, value, d_NAME, error...): "
                             "rename it, --keep NEWNAME=COLUMN")

    def flush(self) -> None:
        self.out.flush()

    def finish(self) -> None:
        pass

    def stopped(self) -> None:
        """The run stopped early (a bad row, Ctrl-C): the complete rows are flushed."""
        self.flush()


def csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if ("," in text or '"' in text) else text
