"""Partitioned sources for ``--at``: Parquet files, directories and globs of them, and
globs of ``.npy`` shards, read a partition at a time.

SOURCE is ``@data.parquet``, ``@data/`` (every ``*.parquet`` file in it, else every
``*.npy``, in name order) or a glob ``@'data/part-*.parquet'`` / ``@'x/part-*.npy'``
(matches in name order). A partition is one row group of one Parquet file (pyarrow reads
it alone, from the file's footer) or one ``.npy`` shard; rows keep their global order
and numbering across partitions (partition ``p`` starts where ``p - 1`` ends). A Parquet
file's column names say what they set as a CSV header does (``x``, ``W[0,1]``), with
``--columns`` and ``--keep`` (``gradcli.io.columns``); a shard sets one declared name as a
``.npy`` source does. A null in a column that sets a name is a bad row, named by file,
partition and row.

A ``Partitioned`` source is picklable: a Dask worker reads its own partitions
(``chunks(part)``), the client only the footers. ``as_source()`` is the same rows as one
``points.Source``, for a run on one machine.

pyarrow is the ``dask`` extra's: it is imported here only, and only when a source is one
of these (``need_pyarrow``).
"""
from __future__ import annotations

import glob
import math
import os
from collections.abc import Iterator

import numpy as np

from ..errors import InputError, shown_path
from ..lang.limits import MAX_ELEMENTS
from .columns import CsvOptions, resolve
from .points import (DEFAULT_CHUNK_ELEMENTS, MAX_CHUNK, BadRow, Chunk, Labels, Source,
                     open_source)

__all__ = ["INSTALL", "Partition", "Partitioned", "is_partitioned", "need_pyarrow",
           "open_partitioned"]

INSTALL = "pip install 'gradcli[dask]'"
_GLOB = set("*?[")


def need_pyarrow():
    """pyarrow.parquet, or an InputError naming the install command."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"Parquet needs pyarrow, which is not installed: {INSTALL}") \
            from None
    return pq


def is_partitioned(spec: str | None) -> bool:
    """Whether ``--at spec`` is read here: a .parquet file, a directory or a glob."""
    if not spec or not spec.strip().startswith("@"):
        return False
    path = os.path.expanduser(spec.strip()[1:])
    return (path.lower().endswith(".parquet") or os.path.isdir(path)
            or any(c in _GLOB for c in path))


class Partition:
    """Partition ``index``: rows ``start`` .. ``start + n - 1`` of the source, from
    ``path`` (row group ``group`` of a Parquet file; None for a .npy shard)."""
    __slots__ = ("group", "index", "n", "path", "start")

    def __init__(self, index: int, path: str, group: int | None, start: int, n: int):
        self.index, self.path, self.group, self.start, self.n = index, path, group, start, n

    def __getstate__(self):
        return (self.index, self.path, self.group, self.start, self.n)

    def __setstate__(self, state):
        self.index, self.path, self.group, self.start, self.n = state

    @property
    def where(self) -> str:
        """How messages name it: ``part-3.parquet (partition 7)``."""
        return f"{shown_path(self.path)} (partition {self.index})"


def open_partitioned(spec: str, slots: dict, chunk: int | None = None,
                     csv: CsvOptions | None = None) -> Partitioned:
    """The partitions of ``spec`` for the declared names ``slots``; every refusal is an
    InputError naming the source (only the files' footers or headers are read)."""
    if chunk is not None and chunk < 1:
        raise InputError(f"--chunk must be at least 1, got {chunk}")
    shown = shown_path(spec.strip()[1:])
    files = _files(os.path.expanduser(spec.strip()[1:]), shown)
    kinds = {os.path.splitext(f)[1].lower() for f in files}
    if len(kinds) > 1:
        raise InputError(f"{shown}: mixes {' and '.join(sorted(kinds))} files: a source is "
                         "Parquet files or .npy shards")
    if kinds == {".npy"}:
        if csv is not None and csv.given:
            raise InputError(f"{shown}: {', '.join(csv.given)} are for CSV, TSV and Parquet "
                             "sources (a .npy shard sets one name)")
        return _open_shards(shown, files, slots, chunk)
    return _open_parquet(shown, files, slots, chunk, csv or CsvOptions())


def _files(path: str, shown: str) -> list[str]:
    if os.path.isdir(path):
        for pattern in ("*.parquet", "*.npy"):
            found = sorted(glob.glob(os.path.join(glob.escape(path), pattern)))
            if found:
                return found
        raise InputError(f"{shown}: the directory holds no .parquet or .npy files")
    if any(c in _GLOB for c in path):
        found = sorted(f for f in glob.glob(path) if os.path.isfile(f))
        if not found:
            raise InputError(f"{shown}: no file matches")
        wrong = [f for f in found if os.path.splitext(f)[1].lower() not in (".parquet",
                                                                             ".npy")]
        if wrong:
            raise InputError(f"{shown_path(wrong[0])}: a glob source matches .parquet files "
                             "or .npy shards only")
        return found
    if not os.path.isfile(path):
        raise InputError(f"{shown}: no such file")
    return [path]


class Partitioned:
    """An opened partitioned source: what ``points.Source`` says of its rows (``shown``,
    ``names``, ``shapes``, ``labels``, ``kept``, ``total``) and its ``partitions``."""

    def __init__(self, shown: str, names: list, shapes: dict, labels, kept: list,
                 partitions: list, reader):
        self.shown, self.names, self.shapes, self.kept = shown, names, shapes, kept
        self.labels, self.partitions, self.reader = labels, partitions, reader
        self.total = sum(p.n for p in partitions)

    def __getstate__(self):
        """Pickled for a worker, which reads the partitions it is given: without the list
        of them all (every task carries its job, so that list would make each task O(P)
        and a run O(P^2): at 10^4 partitions, gigabytes through the scheduler)."""
        return {**self.__dict__, "partitions": []}

    def chunks(self, part: Partition) -> Iterator[Chunk | BadRow]:
        """The chunks and bad rows of one partition, rows numbered globally."""
        try:
            yield from self.reader.chunks(part)
        except InputError:
            raise
        except (OSError, ValueError) as err:  # (pyarrow's errors are both)
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InputError(f"{part.where}: cannot read it ({detail})") from None

    def as_source(self) -> Source:
        def reader(source: Source):
            for part in self.partitions:
                yield from self.chunks(part)
                source.position = part.start + part.n
        return Source(self.shown, self.names, self.shapes, self.labels, reader, self.total,
                      None, self.kept)


def _chunk_rows(chunk: int | None, per_row: int) -> int:
    """Rows at a time, as ``points`` reads them (--chunk, or about
    DEFAULT_CHUNK_ELEMENTS numbers, held to the array size limit)."""
    rows = chunk if chunk is not None else min(MAX_CHUNK,
                                               DEFAULT_CHUNK_ELEMENTS // max(1, per_row))
    return max(1, min(rows, MAX_ELEMENTS // max(1, per_row)))


# ---------------------------------------------------------------------------------------
# .npy shards: each one a points.Source of its own
# ---------------------------------------------------------------------------------------
class _Shards:
    def __init__(self, slots: dict, chunk: int | None):
        self.slots, self.chunk = slots, chunk

    def chunks(self, part: Partition):
        for item in open_source("@" + part.path, self.slots, self.chunk).items():
            if isinstance(item, BadRow):
                item.row += part.start
                item.message = f"{part.where}: {item.message}"
            else:
                item.start += part.start
            yield item


def _open_shards(shown: str, files: list, slots: dict, chunk: int | None) -> Partitioned:
    partitions, first, start = [], None, 0
    for index, path in enumerate(files):
        one = open_source("@" + path, slots, chunk)
        if first is None:
            first = one
        elif (one.names, one.shapes) != (first.names, first.shapes):
            raise InputError(f"{shown_path(path)}: sets {one.names} of shapes "
                             f"{list(one.shapes.values())}, where {first.shown} sets "
                             f"{first.names} of shapes {list(first.shapes.values())}")
        partitions.append(Partition(index, path, None, start, one.total))
        start += one.total
    return Partitioned(shown, first.names, first.shapes, Labels(first.shapes), [],
                       partitions, _Shards(slots, chunk))


# ---------------------------------------------------------------------------------------
# Parquet: a row group at a time
# ---------------------------------------------------------------------------------------
class _Columns:
    """Which Parquet columns set which names (as a CSV header's would), and which pass
    through as text (``--keep``)."""

    def __init__(self, header: list, targets: list, kept: list, slots: dict, where: str):
        self.header = header
        self.used = [header[t.column] for t in targets]
        self.kept = [header[column] for _, column in kept]
        self.kept_labels = [label for label, _ in kept]
        self.targets = targets
        self.names = list(dict.fromkeys(t.name for t in targets))
        self.shapes, self.fill, self.flat = {}, {}, {}
        for name in self.names:
            mine = [t for t in targets if t.name == name]
            slot = slots[name]
            whole = [t for t in mine if t.index is None]
            if whole:
                if len(mine) > 1 or (slot.value is not None and slot.shape != ()):
                    raise InputError(f"{where}: column {whole[0].label!r} gives one number, "
                                     f"but {name} is declared with shape {slot.shape}: give "
                                     "its elements as columns W[0,0]...")
                shape = ()
            elif slot.value is not None:
                shape = slot.shape
            else:
                rank = len(mine[0].index)
                shape = tuple(max(t.index[a] for t in mine) + 1 for a in range(rank))
            size = math.prod(shape)
            if size > MAX_ELEMENTS:
                raise InputError(f"{where}: {name} would have {size:,} elements, over the "
                                 f"array size limit ({MAX_ELEMENTS:,})")
            flat = [0 if t.index is None else int(np.ravel_multi_index(t.index, shape))
                    for t in mine]
            if any(t.index is not None and (len(t.index) != len(shape) or any(
                    k >= n for k, n in zip(t.index, shape))) for t in mine):
                raise InputError(f"{where}: an element column of {name} is outside its "
                                 f"shape {shape}")
            if len(set(flat)) < max(1, size):
                if slot.value is None:
                    raise InputError(f"{where}: {name} is declared without a value, so every "
                                     "element needs a column")
                self.fill[name] = np.asarray(slot.value, dtype=np.float64).reshape(-1)
            self.shapes[name] = tuple(shape)
            self.flat[name] = [(k, self.used.index(header[t.column])) for k, t in
                               zip(flat, mine)]
        missing = [n for n, slot in slots.items() if slot.value is None and n not in
                   self.names]
        if missing:
            raise InputError(f"{where}: {', '.join(missing)} declared without a value but not "
                             f"set by the source (it sets: {', '.join(self.names)})")

    def values(self, table: np.ndarray) -> dict:
        n = len(table)
        out = {}
        for name in self.names:
            shape = self.shapes[name]
            flat = np.empty((n, max(1, math.prod(shape))))
            if name in self.fill:
                flat[:] = self.fill[name]
            for element, column in self.flat[name]:
                flat[:, element] = table[:, column]
            out[name] = flat.reshape((n, *shape))
        return out


class _Parquet:
    def __init__(self, columns: _Columns, rows: int):
        self.columns, self.rows = columns, rows

    def chunks(self, part: Partition):
        pq = need_pyarrow()
        import pyarrow.compute as pc
        c = self.columns
        table = pq.ParquetFile(part.path).read_row_group(part.group,
                                                         columns=c.used + c.kept)
        for at in range(0, part.n, self.rows):
            piece = table.slice(at, self.rows)
            n = piece.num_rows
            numbers = np.empty((n, len(c.used)))
            bad = np.zeros(n, dtype=bool)
            for k, name in enumerate(c.used):
                column = piece.column(name)
                if column.null_count:
                    bad |= pc.is_null(column).to_numpy(zero_copy_only=False)
                numbers[:, k] = column.to_numpy(zero_copy_only=False).astype(np.float64)
            kept = None
            if c.kept:
                kept = np.empty((n, len(c.kept)), dtype=object)
                for k, name in enumerate(c.kept):
                    texts = pc.cast(piece.column(name), "string").to_pylist()
                    kept[:, k] = ["" if t is None else t for t in texts]
            start = part.start + at
            yield from _split_bad(start, numbers, kept, bad, c, part, piece)


def _split_bad(start: int, numbers, kept, bad, c: _Columns, part: Partition, piece):
    """A chunk, or (a null in it) the good runs as chunks and each bad row between."""
    if not bad.any():
        yield Chunk(start, c.values(numbers), numbers, kept)
        return
    at = 0
    for i in np.flatnonzero(bad):
        if i > at:
            cut = slice(at, i)
            yield Chunk(start + at, c.values(numbers[cut]), numbers[cut],
                        None if kept is None else kept[cut])
        nulls = [name for name in c.used if piece.column(name)[int(i)].as_py() is None]
        yield BadRow(start + int(i), f"{part.where}: row {start + int(i)}: "
                     f"{', '.join(nulls)} {'is' if len(nulls) == 1 else 'are'} null",
                     kept=None if kept is None else kept[i].tolist())
        at = int(i) + 1
    if at < len(numbers):
        cut = slice(at, None)
        yield Chunk(start + at, c.values(numbers[cut]), numbers[cut],
                    None if kept is None else kept[cut])


def _open_parquet(shown: str, files: list, slots: dict, chunk: int | None,
                  csv: CsvOptions) -> Partitioned:
    pq = need_pyarrow()
    import pyarrow as pa
    partitions, columns, start = [], None, 0
    for path in files:
        where = shown_path(path)
        try:
            meta = pq.ParquetFile(path)
        except (OSError, ValueError, pa.ArrowException) as err:
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InputError(f"{where}: not a Parquet file ({detail})") from None
        schema = meta.schema_arrow
        if columns is None:
            header = list(schema.names)
            targets, kept = resolve(where, header, len(header), csv, slots)
            columns = _Columns(header, targets, kept, slots, where)
            first = where
        for name in columns.used:
            if name not in schema.names:
                raise InputError(f"{where}: has no column {name!r} (which {first} has)")
            kind = schema.field(name).type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                    or pa.types.is_boolean(kind)):
                raise InputError(f"{where}: column {name!r} holds {kind}, not numbers")
        for name in columns.kept:
            if name not in schema.names:
                raise InputError(f"{where}: has no column {name!r} (which {first} has)")
        for group in range(meta.metadata.num_row_groups):
            n = meta.metadata.row_group(group).num_rows
            if n:
                partitions.append(Partition(len(partitions), path, group, start, n))
                start += n
    per_row = max(len(columns.used), sum(max(1, math.prod(s))
                                         for s in columns.shapes.values()))
    return Partitioned(shown, columns.names, columns.shapes,
                       [t.label for t in columns.targets], columns.kept_labels, partitions,
                       _Parquet(columns, _chunk_rows(chunk, per_row)))
