"""``--plain`` with ``--at``, ``.txt``: one line of bare numbers per row."""
from __future__ import annotations

import numpy as np

from .base import Writer, fill_lines, number_spec, output_ready


class PlainWriter(Writer):
    """One line per row: the kept columns' text (``--keep``), the value, then every
    gradient flattened."""

    def write(self, res) -> None:
        n = res.n
        fields = ([res.value] if self.layout_of().has_value else []) + list(res.grads)
        pieces, arrays = [], []
        for f in fields:
            if f is None:
                pieces.append("null")
                continue
            f = output_ready(f, self.precision)
            width = f.reshape(n, -1).shape[1]
            pieces.append(" ".join([number_spec(f, self.precision)] * width))
            arrays.append(f.reshape(n, -1).astype(np.float64))
        template = " ".join(pieces) + "\n"
        table = np.concatenate(arrays, axis=1) if arrays else np.zeros((n, 0))
        text = fill_lines(template, table) if arrays else template * n
        if res.words is not None:
            text = "".join(f"{line} {word}\n" for line, word in
                           zip(text.splitlines(), res.words))
        if self.kept:
            text = "".join(" ".join((*kept, line)) + "\n" for kept, line in
                           zip(res.kept.tolist(), text.splitlines()))
        self.out.write(text)
        self.rows += n

    def bad(self, row) -> None:
        kept = " ".join(row.kept) + " " if self.kept and row.kept is not None else ""
        self.out.write(f"{kept}error: {row.message}\n")
        self.bad_rows += 1


# ---------------------------------------------------------------------------------------
# One point
# ---------------------------------------------------------------------------------------
def lines(report, precision: int | None, labelled: bool = False) -> list[str]:
    """The report's plain lines, in order: each array flattened on one line (a large one
    summarised as ``a b c ... x y z`` where it says so; ``--json`` prints every number),
    ``null`` for an unconnected gradient, a word as it is.

    ``labelled`` (``compare --plain``, where several modes' lines follow one another):
    each line starts with the mode and its label, so that ``read mode what rest`` or awk
    can split them: ``tape value 31.0``, ``tape gradient w1 5.0``."""
    from ..report import Numbers
    from ..text import flat_text, number_texts

    def text(item) -> str:
        if isinstance(item, list):
            return " ".join(map(text, item))
        if not isinstance(item, Numbers):
            return item
        if item.array is None:
            return "null"
        return flat_text(item.array, precision) if item.summarise else \
            " ".join(number_texts(item.array, precision))
    return [(f"{report.mode} {label} " if labelled else "") + text(item)
            for label, item in report.lines]


def notes(report) -> list[str]:
    """The report's notes, and one for each array its plain lines summarised."""
    from ..report import Numbers
    from ..text import EDGE_ITEMS, summarised
    said = list(report.notes)
    for _, item in report.lines:
        if isinstance(item, Numbers) and item.what and item.summarise \
                and summarised(item.array):
            said.append(f"{item.what} has {np.size(item.array)} elements: shown are the "
                        f"first and last {EDGE_ITEMS} (--json prints them all)")
    return said


def write(report, precision: int | None, labelled: bool = False) -> None:
    """``--plain``: the numbers on standard output, the notes on standard error
    (``labelled``: compare's lines, and notes that name the mode)."""
    import sys
    sys.stdout.write("".join(line + "\n" for line in lines(report, precision, labelled)))
    said = notes(report)
    if said:
        sys.stdout.flush()  # keep the order of the two streams on a terminal
        label = f"{report.mode}: " if labelled else ""
        sys.stderr.write("".join(f"note: {label}{note}\n" for note in said))
