"""``--json`` with ``--at``, ``.jsonl``: JSON Lines, one object per row."""
from __future__ import annotations

import numpy as np

from ..points import BadRow
from .base import Writer, output_ready


class JsonLinesWriter(Writer):
    """Each row the single-point JSON object plus ``"row"``."""

    def __init__(self, *args):
        super().__init__(*args)
        self.template = None

    def write(self, res) -> None:
        from .. import jsonvalue
        from .json import as_json
        layout = self.layout_of()
        fields = ([res.value] if layout.has_value else []) + list(res.grads)
        if self.template is None:
            self.template = layout.template or ""
        n = res.n
        ready = [None if f is None else output_ready(f) for f in fields]
        fast = all(f is None or f.dtype == np.float64 for f in ready)
        finite = np.ones(n, dtype=bool)
        for f in ready:
            if f is not None and fast:
                finite &= np.isfinite(f.reshape(n, -1)).all(axis=1)
        if any(f is None for f in ready) or not self.template:
            fast = False  # (an unconnected gradient: null, written by the general path)
        rows = range(res.start, res.start + n)
        template, heads = self.template, [rows]
        if self.kept:   # the kept columns right after "row": a piece of text per row
            template = template.replace('{"row": %d', '{"row": %d%s', 1)
            heads.append(self._kept_json(res))
        if fast and finite.all():
            lists = [f.tolist() for f in ready]
            text = "".join(map(template.__mod__, zip(*heads, *lists)))
        else:
            lines = []
            lists = [None if f is None else f.tolist() for f in ready]
            kept = res.kept.tolist() if self.kept else [()] * n
            for i, head in enumerate(zip(*heads)):
                if fast and finite[i]:
                    lines.append(template % (head + tuple(x[i] for x in lists)))
                    continue
                value = res.value[i] if res.value is not None else None
                obj = {"row": head[0], **dict(zip(self.kept, kept[i])),
                       **as_json(layout.row_report(value, [None if a is None else a[i]
                                                           for a in res.raw]))}
                lines.append(jsonvalue.dumps(obj, allow_nan=False) + "\n")
            text = "".join(lines)
        self.out.write(text)
        self.rows += n

    def _kept_json(self, res) -> list:
        """Per row, the kept columns as JSON members: ``, "id": "a17"``."""
        from .. import jsonvalue
        keys = [", " + jsonvalue.dumps(label) + ": " for label in self.kept]
        return ["".join(key + jsonvalue.dumps(text) for key, text in zip(keys, texts))
                for texts in res.kept.tolist()]

    def bad(self, row: BadRow) -> None:
        from .. import jsonvalue
        kept = dict(zip(self.kept, row.kept)) if row.kept is not None else {}
        self.out.write(jsonvalue.dumps({"row": row.row, **kept, "error": row.message}) + "\n")
        self.bad_rows += 1

    def check(self, report: dict) -> None:
        from .. import jsonvalue
        self.out.write(jsonvalue.dumps({"check": report}, allow_nan=False) + "\n")
