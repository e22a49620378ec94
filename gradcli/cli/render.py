"""Which writer prints a command's result: the JSON writer (``--json``), the plain one
(``--plain``) or the human page (io/writers/page.py, from the result's ``page()``). No
result is laid out here: each result type of gradcli/run/ says what it holds
(``report()``) and what its human page shows (``page()``), and the writers of
io/writers/ write them.

Three rules hold for every output (the writers keep them):

- **One number format** (io/text.py's ``number_text``): the shortest text that reads back
  to the same value in the value's own dtype (``5.0``, ``0.1``, a float32's
  ``2.9573243``), or with ``--precision N`` exactly N significant digits at most
  (``2.957``); arrays are written element by element with it, never with numpy's fixed
  decimals.
- **Nothing is interpreted**: the human output goes through rich with markup, emoji and
  highlighting off, every piece of text taken literally, so a name, formula or value
  with square brackets prints as written.
- **Nothing is cut**: a table gets columns at least as wide as the longest number in
  them, or, when even that does not fit the terminal, the same rows are printed one field
  per line (io/writers/human.py); a large array is summarised in time that does not
  depend on its size.

JSON and plain output never import rich; the human page imports it when it is used,
except for the simplest pages written to a file or pipe, whose text is rich's, byte for
byte, without rich's ~25 ms import (io/writers/page.py, issue 14).
"""
from __future__ import annotations

import sys

from ..io.report import Page as Page, check_verdict as check_verdict
from ..io.text import (array_text as array_text, json_array as json_array,
                       number_text as number_text, number_texts as number_texts)
from ..io.writers import json as json_writer, page as page_writer, plain as plain_writer
from ..io.writers.human import console as console


def show(page: Page, out=None) -> None:
    """A result's human page (io/writers/page.py); ``out``: a console (tests)."""
    page_writer.write(page, out)


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
