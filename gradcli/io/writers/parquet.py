"""``--output out.parquet`` (one file) and each part of ``--output out/`` (a directory):
the CSV output's columns as typed Parquet columns: ``row`` (int64), the kept columns
(``--keep``, strings), the point's columns, ``value`` (or ``value[i]``), ``d_x``,
``d_W[0,1]``... (float64, exactly the computed numbers), hessian's ``verdict``; with
``--skip-bad-rows`` an ``error`` column (null for a computed row), a skipped row's
numbers null. An unconnected gradient's columns are null.

A row group per written piece of rows (``base.WRITE_ROWS``); bad rows are held until
the next piece (or the end) so the rows stay in order.
"""
from __future__ import annotations

import numpy as np

from ..points import BadRow, element_labels
from .base import Writer


class ParquetWriter(Writer):
    def __init__(self, out, precision, layout_of, labels, kind, kept=(), errors: bool = False):
        super().__init__(out, precision, layout_of, labels, kind, kept)
        self.errors = errors
        self.file = None       # pyarrow.parquet.ParquetWriter, from the first rows
        self.schema = None
        self.widths = None     # per output field (value, gradients): its columns
        self.pending: list = []

    def _open(self, res) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        layout = self.layout_of()
        fields = [pa.field("row", pa.int64())]
        fields += [pa.field(label, pa.string()) for label in self.kept]
        fields += [pa.field(label, pa.float64()) for label in self.labels]
        self.widths = []
        if res is not None and layout is not None:
            heads = []
            if layout.has_value:
                heads.append(("value", np.shape(res.value)[1:]))
            for k, (name, a) in enumerate(zip(layout.names, res.grads)):
                shape = np.shape(a)[1:] if a is not None else layout.shapes[k]
                heads.append((f"{self.kind.prefix}{name}", shape))
            for head, shape in heads:
                labels = element_labels(head, tuple(shape))
                fields += [pa.field(label, pa.float64()) for label in labels]
                self.widths.append(len(labels))
            if self.kind.word:
                fields.append(pa.field(self.kind.word, pa.string()))
        if self.errors:
            fields.append(pa.field("error", pa.string()))
        self.schema = pa.schema(fields)
        # (through PythonFile: closing the Parquet writer leaves ``out`` open, to commit)
        sink = pa.PythonFile(getattr(self.out, "file", self.out), mode="w")
        self.file = pq.ParquetWriter(sink, self.schema)

    def write(self, res) -> None:
        if self.file is None:
            self._open(res)
        self._bad_rows()
        n = res.n
        columns = [np.arange(res.start, res.start + n, dtype=np.int64)]
        columns += [res.kept[:, k].tolist() for k in range(len(self.kept))]
        columns += [res.columns[:, k] for k in range(res.columns.shape[1])]
        fields = ([res.value] if self.layout_of().has_value else []) + list(res.grads)
        for f, width in zip(fields, self.widths):
            if f is None:
                columns += [None] * width
                continue
            flat = np.asarray(f).reshape(n, -1).astype(np.float64)
            columns += [flat[:, k] for k in range(width)]
        if self.kind.word:
            columns.append(list(res.words))
        if self.errors:
            columns.append(None)
        self._put(columns, n)
        self.rows += n

    def _put(self, columns: list, n: int) -> None:
        import pyarrow as pa
        arrays = [pa.nulls(n, type=field.type) if c is None else pa.array(c, type=field.type)
                  for c, field in zip(columns, self.schema)]
        self.file.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def bad(self, row: BadRow) -> None:
        self.pending.append(row)
        self.bad_rows += 1

    def _bad_rows(self) -> None:
        if not self.pending:
            return
        rows, self.pending = self.pending, []
        n = len(rows)
        columns = [None] * len(self.schema)
        columns[0] = [r.row for r in rows]
        for k in range(len(self.kept)):
            columns[1 + k] = [r.kept[k] if r.kept else None for r in rows]
        if self.errors:
            columns[-1] = [r.message for r in rows]
        self._put(columns, n)

    def finish(self) -> None:
        if self.file is None:
            self._open(None)
        self._bad_rows()
        self.file.close()

    def stopped(self) -> None:
        if self.file is not None:
            self._bad_rows()
            self.file.close()

    def flush(self) -> None:
        pass
