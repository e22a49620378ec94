"""``--plain`` with ``--at``, ``.txt``: one line of bare numbers per row."""
from __future__ import annotations

import numpy as np

from ..points import BadRow
from .base import Writer, fill_lines, number_spec, output_ready


class PlainWriter(Writer):
    """One line per row: the kept columns' text (``--keep``), the value, then every
    gradient flattened."""

    def write(self, res) -> None:
        meta = self.meta_of()
        n = res.n
        fields = ([res.value] if self.kind.has_value(meta) else []) + list(res.grads)
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

    def bad(self, row: BadRow) -> None:
        kept = " ".join(row.kept) + " " if self.kept and row.kept is not None else ""
        self.out.write(f"{kept}error: {row.message}\n")
        self.bad_rows += 1
