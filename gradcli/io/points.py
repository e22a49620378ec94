"""Sources of many points for ``--at``: the rows of a file or of standard input, read in
chunks, each chunk a dict of arrays with a leading row axis, one per declared name the
source sets.

SOURCE is ``@points.csv`` (a header row names what each column sets: a declared name of
shape ``()``, or one element ``W[0,1]`` of an array), ``@x.npy`` (one declared name: the
file's stem, or else the one name declared without a value; axis 0 is the row), ``@p.npz``
(arrays by name, axis 0 the row), ``@p.jsonl`` (one JSON object of named values per line)
or ``-`` (standard input: JSON Lines when its first non-blank character is ``{``, CSV
otherwise). Memory never grows with the number of rows: text is read a chunk of lines at
a time and parsed by numpy's C reader, ``.npy`` and ``.npz`` arrays a chunk of rows at a
time from the file.

Rows are numbered from 0 in input order (the header, blank and ``#`` comment lines are
not rows); messages about a row name the file and its line (``points.csv:7``), 1-based as
editors count. A row that cannot be read is a ``BadRow`` item between the chunks, so that
the rows before it are computed and written first.

>>> import numpy as np, io
>>> src = open_source("-", {"x": Slot("arg", None)}, chunk=2, stdin=io.StringIO("x\\n1\\n2\\n3\\n"))
>>> [(c.start, c.values["x"].tolist()) for c in src.items()]
[(0, [1.0, 2.0]), (2, [3.0])]
"""
from __future__ import annotations

import itertools
import math
import os
import sys
import warnings
from collections.abc import Iterator

import numpy as np

from ..errors import GradcliError, InputError, LimitError, shown_path
from ..lang.limits import MAX_ELEMENTS
from ..lang.values import is_number_text, check_file
from .columns import CsvOptions, resolve, split_fields

__all__ = ["Slot", "Chunk", "BadRow", "Source", "CsvOptions", "open_source",
           "element_labels", "DEFAULT_CHUNK_ELEMENTS", "MAX_CHUNK"]

#: The default chunk holds about this many input numbers (and at most MAX_CHUNK rows):
#: its arrays stay in the CPU's caches (16,384 rows of the Rosenbrock gradient ran 10^7
#: rows in 30 s where 65,536 took 42 s) and far below memory.
DEFAULT_CHUNK_ELEMENTS = 1 << 15
MAX_CHUNK = 1 << 14


class Slot:
    """What the program declares for a name: its kind ("var", "frozen", "arg") and its
    declared value (a float64 array), or None when it is declared without one."""
    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: np.ndarray | None):
        self.kind, self.value = kind, value

    @property
    def shape(self) -> tuple | None:
        return None if self.value is None else np.shape(self.value)


class Chunk:
    """Rows ``start`` .. ``start + n - 1``: ``values`` maps each name the source sets to
    a float64 array of shape ``(n, *shape)``; ``columns`` the point's columns as the
    source gave them, a float64 array ``(n, len(Source.labels))``; ``kept`` the text of
    the columns kept for the output (``--keep``), an array of str objects
    ``(n, len(Source.kept))``, or None without any."""
    __slots__ = ("columns", "kept", "start", "values")

    def __init__(self, start: int, values: dict, columns: np.ndarray,
                 kept: np.ndarray | None = None):
        self.start, self.values, self.columns, self.kept = start, values, columns, kept

    @property
    def n(self) -> int:
        return len(self.columns)


class BadRow:
    """Row ``row`` could not be read (or computed); ``message`` says why and where
    (file:line, or the row); ``error`` the computation's own error, if any; ``kept`` the
    text of its kept columns (``--keep``) when they could be read (a row that could not
    be computed), else None."""
    __slots__ = ("error", "kept", "message", "row")

    def __init__(self, row: int, message: str, error=None, kept: list | None = None):
        self.row, self.message, self.error, self.kept = row, message, error, kept


def element_labels(name: str, shape: tuple) -> list[str]:
    """The column labels of a value: ``x`` for a number, ``W[0,1]``... in C order."""
    if not shape:
        return [name]
    # (each axis's index texts made once: np.ndindex and a str per index cost 4x more)
    indices = itertools.product(*[[str(i) for i in range(n)] for n in shape])
    return [f"{name}[{index}]" for index in map(",".join, indices)]


class Labels:
    """The labels of the point's columns (``x``, ``W[0,0]``, ``W[0,1]``...) for values
    of the given shapes, made when asked for: a row of a (3000, 3000) array has 9 million,
    which a human table (the first few) or JSON output (none) never needs.

    >>> labels = Labels({"x": (), "W": (2, 2)})
    >>> len(labels), labels[:3], list(labels)[-1]
    (5, ['x', 'W[0,0]', 'W[0,1]'], 'W[1,1]')
    """

    def __init__(self, shapes: dict):
        self.shapes = dict(shapes)
        self._len = sum(math.prod(shape) for shape in self.shapes.values())

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        for name, shape in self.shapes.items():
            if not shape:
                yield name
            else:
                for index in np.ndindex(*shape):
                    yield f"{name}[{','.join(map(str, index))}]"

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self._len)
            if step != 1:
                return list(self)[key]
            return list(itertools.islice(self, start, stop))
        return self[key:key + 1 or None][0]


class Source:
    """An opened source: ``names`` the declared names it sets (in its order), ``shapes``
    their shapes for one row, ``labels`` the point's columns (``x``, ``W[0,1]``), ``kept``
    the labels of the columns passed through to the output (``--keep``), ``total`` the
    number of rows when known in advance (``.npy``, ``.npz``), and ``items()`` the chunks
    and bad rows in input order."""

    def __init__(self, shown: str, names: list, shapes: dict, labels: list, reader,
                 total: int | None = None, size: int | None = None, kept: list = ()):
        self.shown, self.names, self.shapes, self.labels = shown, names, shapes, labels
        self.kept = list(kept)
        self._reader, self.total, self.size = reader, total, size
        self.position = 0   # bytes read so far (text sources), for the progress bar

    def items(self) -> Iterator[Chunk | BadRow]:
        """The chunks and bad rows in input order. A source that cannot be read further
        (a byte that is not UTF-8 on line 70,000, a truncated .npz) is an InputError
        naming it."""
        reader = self._reader(self)
        while True:
            try:
                item = next(reader)
            except StopIteration:
                return
            except (GradcliError, MemoryError):
                raise
            except Exception as err:  # noqa: BLE001 - OSError, UnicodeDecodeError, zip errors
                detail = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise InputError(f"{self.shown}: cannot read further ({detail})") from None
            yield item


# ---------------------------------------------------------------------------------------
# Text, a line at a time, no line held whole beyond MAX_LINE
# ---------------------------------------------------------------------------------------
#: Characters in one line of a text source (CSV, JSON Lines): a JSON number costs ~160
#: bytes and ~2 µs to read (Python's json module), so a row of 10^7 numbers would take
#: 1.6 GB and 20 s; a line without end (a binary file, ``yes | tr -d '\n'``) would
#: take all memory. Larger arrays go in .npy or .npz files, read at numpy's speed.
MAX_LINE = 1 << 23
#: Characters in one block of lines read at once (beyond one line): a chunk of many
#: long lines is read in several blocks.
MAX_BLOCK = 1 << 23
#: Characters read from a file at once: as a text file decodes them, so that the rows
#: before a byte that is not UTF-8 are read and computed before it stops the run.
_PIECE = 1 << 13


class LongLine:
    """A line of more than MAX_LINE characters, read through but not kept: ``chars``
    its length, ``head`` its first characters (what it starts with)."""
    __slots__ = ("chars", "head")

    def __init__(self, chars: int, head: str):
        self.chars, self.head = chars, head

    def __len__(self) -> int:
        return self.chars

    def problem(self, what: str) -> str:
        return (f"the line has {self.chars:,} characters, over the limit of {MAX_LINE:,} "
                f"for a {what} row (write large arrays in .npy or .npz files)")


class TextLines:
    """The lines of a text stream, each a ``str`` or a ``LongLine``: memory holds at
    most about MAX_LINE characters of a line, and ``block`` about MAX_BLOCK of lines,
    whatever the stream. A file is read 8K characters at a time and split at C speed
    (its lines come without their ``\\n``); another stream (standard input) a line at a
    time, so that a row is computed as soon as it is typed or piped. ``number`` is the
    1-based line number of the last line given, ``chars`` the characters given so far."""

    def __init__(self, stream, whole_file: bool = False):
        self._stream = stream
        self._whole_file = whole_file
        self._back = None
        self._ready: list = []     # (a file) lines split off, not given yet
        self._at = 0
        self._pending: list = []   # (a file) the pieces of a line not ended yet
        self._pending_chars = 0
        self._skipped = None       # (a file) a long line being read through: (chars, head)
        self.number = 0
        self.chars = 0
        self.long = 0   # LongLines given so far (a block with one is read line by line)

    @classmethod
    def of_file(cls, path: str) -> TextLines:
        # utf-8-sig: a byte order mark (as spreadsheets write) is dropped, not read as data.
        return cls(open(path, encoding="utf-8-sig", errors="strict", newline=None),
                   whole_file=True)

    def line(self):
        """The next line, or None at the end."""
        block = self.block(1)
        return block[0] if block else None

    def put_back(self, line) -> None:
        """Give ``line`` (the last one given) again next time."""
        self._back = line
        self.number -= 1
        self.chars -= len(line)

    def block(self, rows: int) -> list:
        """The next ``rows`` lines (fewer at the end, or once MAX_BLOCK characters are
        read); an empty list at the end."""
        out: list = []
        if self._back is not None:
            out.append(self._back)
            self._back = None
        chars = (self._file_lines if self._whole_file else self._stream_lines)(out, rows)
        self.number += len(out)
        self.chars += chars
        return out

    def _stream_lines(self, out: list, rows: int) -> int:
        chars = sum(map(len, out))
        readline, limit = self._stream.readline, MAX_LINE + 1
        while len(out) < rows and chars < MAX_BLOCK:
            line = readline(limit)
            if not line:
                break
            if len(line) == limit and line[-1] != "\n":
                line = self._read_through(line)
            out.append(line)
            chars += len(line)
        return chars

    def _read_through(self, start: str) -> LongLine:
        self.long += 1
        chars = len(start)
        while True:
            more = self._stream.readline(_PIECE)
            chars += len(more)
            if not more or more[-1] == "\n":
                return LongLine(chars - (1 if more else 0), start[:80])

    def _file_lines(self, out: list, rows: int) -> int:
        chars = sum(map(len, out))
        while len(out) < rows and chars < MAX_BLOCK:
            if self._at == len(self._ready) and not self._fill():
                break
            take = self._ready[self._at:self._at + rows - len(out)]
            self._at += len(take)
            out += take
            chars += sum(map(len, take)) + len(take)   # (and the line ends)
        return chars

    def _fill(self) -> bool:
        """Split the next piece of the file into lines; False at the end."""
        if self._stream is None:
            return False
        piece = self._stream.read(_PIECE)
        if not piece:
            self._stream.close()
            self._stream = None
            last = self._end_line("")
            self._ready, self._at = ([last] if last is not None else []), 0
            return bool(self._ready)
        parts = piece.split("\n")
        rest = parts.pop()
        if parts:
            parts[0] = self._end_line(parts[0])
            self._ready, self._at = parts, 0
        self._add_pending(rest)
        return True

    def _end_line(self, tail: str):
        """The line whose pieces are pending, ended by ``tail`` (None: no line)."""
        if self._skipped is not None:
            (chars, head), self._skipped = self._skipped, None
            self.long += 1
            return LongLine(chars + len(tail), head)
        if not self._pending:
            return tail if tail or self._stream is not None else None
        line = "".join(self._pending) + tail
        self._pending, self._pending_chars = [], 0
        if len(line) > MAX_LINE:
            self.long += 1
            return LongLine(len(line), line[:80])
        return line

    def _add_pending(self, text: str) -> None:
        if self._skipped is not None:
            self._skipped = (self._skipped[0] + len(text), self._skipped[1])
            return
        if text:
            self._pending.append(text)
            self._pending_chars += len(text)
        if self._pending_chars > MAX_LINE:   # too long: read through, not kept
            head = "".join(self._pending)[:80]
            self._skipped = (self._pending_chars, head)
            self._pending, self._pending_chars = [], 0


def _content(line) -> str:
    """A line without its comment, stripped ("" for a blank or comment line)."""
    return line.split("#", 1)[0].strip()


# ---------------------------------------------------------------------------------------
# Opening
# ---------------------------------------------------------------------------------------
def open_source(spec: str, slots: dict, chunk: int | None = None, stdin=None,
                csv: CsvOptions | None = None) -> Source:
    """Open ``spec`` (``@path`` or ``-``) for the declared names ``slots`` (name -> Slot);
    every refusal is an ``InputError`` naming the source. ``chunk`` rows are read at a
    time (None: sized so that a chunk holds about DEFAULT_CHUNK_ELEMENTS numbers);
    ``csv`` says how to read a CSV or TSV source (``gradcli.io.columns``)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("--at needs a source: @points.csv, @x.npy, @p.npz, @p.jsonl or - "
                         "(standard input)")
    spec = spec.strip()
    if chunk is not None and chunk < 1:
        raise InputError(f"--chunk must be at least 1, got {chunk}")
    if spec == "-":
        stream = stdin if stdin is not None else sys.stdin
        if stream is None:  # (started with standard input closed: <&-)
            raise InputError("--at -: there is no standard input")
        text = TextLines(stream)
        first = _first_character(text)
        if first is None:
            raise InputError("standard input: no rows (the source is empty)")
        if first == "{":
            _not_csv("standard input (JSON Lines)", csv)
            return _open_jsonl("standard input", "<stdin>", text, slots, chunk, None)
        return _open_csv("standard input", "<stdin>", text, slots, chunk, None, csv)
    if not spec.startswith("@"):
        raise InputError(f"--at {spec!r}: give a file as @path (@points.csv, @x.npy, "
                         "@p.npz, @p.jsonl) or - for standard input")
    path = os.path.expanduser(spec[1:])
    shown = shown_path(spec[1:])
    extension = os.path.splitext(path)[1].lower()
    if extension not in (".csv", ".tsv", ".npy", ".npz", ".jsonl", ".ndjson"):
        raise InputError(f"{shown}: unsupported source type {extension or '(none)'!r}; use "
                         ".csv, .tsv, .npy, .npz or .jsonl")
    if extension not in (".csv", ".tsv"):
        _not_csv(shown, csv)
    # A streamed source has no size limit: memory does not grow with it.
    size = check_file(path, shown, limited=False, hint=" (use - to read standard input)")
    try:
        if extension == ".npy":
            return _open_npy(path, shown, slots, chunk)
        if extension == ".npz":
            return _open_npz(path, shown, slots, chunk)
        text = TextLines.of_file(path)
        if extension in (".jsonl", ".ndjson"):
            return _open_jsonl(shown, shown, text, slots, chunk, size)
        return _open_csv(shown, shown, text, slots, chunk, size, csv,
                         "\t" if extension == ".tsv" else ",")
    except GradcliError:
        raise
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"{shown}: cannot read file ({detail})") from None


def _not_csv(shown: str, csv: CsvOptions | None) -> None:
    given = csv.given if csv is not None else []
    if given:
        raise InputError(f"{shown}: {', '.join(given)} {'is' if len(given) == 1 else 'are'} "
                         "for CSV and TSV sources (a .npy, .npz or JSON Lines source names "
                         "what it sets)")


def _first_character(text: TextLines) -> str | None:
    """The first non-blank character of ``text`` (its line is put back), or None."""
    while True:
        line = text.line()
        if line is None:
            return None
        if isinstance(line, LongLine):  # (never blank: it is a row, refused as too long)
            text.put_back(line)
            return (line.head.lstrip("\ufeff").strip() or "?")[0]
        shown = line.lstrip("\ufeff").strip()
        if shown:
            text.put_back(line)
            return shown[0]


def _chunk_rows(chunk: int | None, per_row: int) -> int:
    """Rows read at once: ``--chunk`` (or by size), held to MAX_ELEMENTS numbers in all
    (a --chunk of 10^6 rows of 1,000 numbers would be 8 GB; the output does not depend
    on the chunk size)."""
    rows = chunk if chunk is not None else DEFAULT_CHUNK_ELEMENTS // max(1, per_row)
    if chunk is None:
        rows = min(MAX_CHUNK, rows)
    return max(1, min(rows, MAX_ELEMENTS // max(1, per_row)))


def _check_row_size(where: str, shapes: dict) -> int:
    """The numbers of one row (all its values), checked against the array size limit
    from what a header says, before anything is built."""
    sizes = {name: math.prod(shape) for name, shape in shapes.items()}
    total = sum(sizes.values())
    if total > MAX_ELEMENTS:
        biggest = max(sizes, key=sizes.get)
        raise LimitError(f"{where}: one row would hold {_count(total)} numbers ({biggest} "
                         f"of shape {tuple(shapes[biggest])}), over the array size limit "
                         f"({MAX_ELEMENTS:,} elements)")
    return total


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**30 else f"{float(n):.3g}"


def _unknown_name(shown: str, what: str, name: str, slots: dict) -> InputError:
    from ..errors import did_you_mean
    declared = ", ".join(slots) or "none"
    return InputError(f"{shown}: {what} {name!r} is not a declared name"
                      f"{did_you_mean(name, list(slots))} (declared: {declared}); declare "
                      f"it with --arg {name} or --var {name}")


def _missing_check(shown: str, names, slots: dict) -> None:
    """Every name declared without a value must be set by the source."""
    missing = [n for n, slot in slots.items() if slot.value is None and n not in names]
    if missing:
        raise InputError(f"{shown}: {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} declared without a value "
                         f"but not set by the source (it sets: {', '.join(names) or 'nothing'})")


def _check_shape(shown: str, name: str, shape: tuple, slot) -> None:
    if slot.value is not None and tuple(shape) != tuple(slot.shape):
        raise InputError(f"{shown}: {name} has shape {tuple(shape)} in every row, but it is "
                         f"declared with shape {tuple(slot.shape)}")


# ---------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------
class _Layout:
    """How the numbers of a CSV row make the values: ``targets`` say what each number
    sets (column k of the table sets ``targets[k]``); per name, its shape and which flat
    elements which numbers set (the rest keep the declared value). Every size is checked
    before anything is made: the shape element columns make, the numbers of a row."""

    def __init__(self, where: str, targets: list, slots: dict):
        self.parts: dict = {}   # name -> [(flat element, column)], in column order
        whole: dict = {}
        indices: dict = {}
        for column, target in enumerate(targets):
            key = (target.name, target.index)
            if key in indices:
                raise InputError(f"{where}: column {target.label!r} appears twice")
            indices[key] = column
            if target.index is None:
                whole[target.name] = column
        self.names = list(dict.fromkeys(n for n, _ in indices))
        self.shapes: dict = {}
        self.fill: dict = {}
        for name in self.names:
            slot = slots[name]
            elements = [(i, c) for (n, i), c in indices.items() if n == name]
            if name in whole:
                if len(elements) > 1:
                    raise InputError(f"{where}: {name} is set both whole and by elements")
                shape = slot.shape if slot.value is not None else ()
                if shape != ():
                    raise InputError(f"{where}: column {name!r} gives one number, but {name} "
                                     f"is declared with shape {shape}: give its elements "
                                     f"as columns {', '.join(element_labels(name, shape)[:3])}"
                                     "...")
                self.shapes[name] = ()
                self.parts[name] = [(0, whole[name])]
                continue
            ranks = {len(i) for i, _ in elements}
            if len(ranks) > 1:
                raise InputError(f"{where}: the elements of {name} have different numbers of "
                                 "indices")
            if slot.value is not None:
                shape = slot.shape
                for index, _ in elements:
                    if len(index) != len(shape) or any(k >= n for k, n in zip(index, shape)):
                        raise InputError(f"{where}: {name}[{','.join(map(str, index))}] is "
                                         f"outside {name}'s declared shape {shape}")
            else:
                shape = _shape_of(where, name, [targets[c] for _, c in elements])
            self.shapes[name] = tuple(shape)
            self.parts[name] = [(int(np.ravel_multi_index(i, shape)) if shape else 0, c)
                                for i, c in elements]
            if len(elements) < max(1, math.prod(shape)):
                self.fill[name] = np.asarray(slot.value, dtype=np.float64)
        self.per_row = max(len(targets), _check_row_size(where, self.shapes))

    def values(self, table: np.ndarray) -> dict:
        n = len(table)
        out = {}
        for name in self.names:
            shape = self.shapes[name]
            parts = self.parts[name]
            if name in self.fill:
                flat = np.empty((n, max(1, math.prod(shape))))
                flat[:] = self.fill[name].reshape(-1)
            elif len(parts) == 1:
                out[name] = table[:, parts[0][1]].reshape((n, *shape))
                continue
            else:
                flat = np.empty((n, math.prod(shape)))
            for element, column in parts:
                flat[:, element] = table[:, column]
            out[name] = flat.reshape((n, *shape))
        return out


def _shape_of(where: str, name: str, targets: list) -> tuple:
    """The shape that element columns make for a name declared without a value: every
    element needs its column (the first missing one is named), and the shape is held to
    the array size limit before anything is made."""
    indices = [t.index for t in targets]
    rank = len(indices[0])
    shape = tuple(max(i[a] for i in indices) + 1 for a in range(rank))
    if math.prod(shape) > MAX_ELEMENTS:
        widest = [t.label for t in targets
                  if any(t.index[a] + 1 == shape[a] for a in range(rank))]
        raise LimitError(f"{where}: the element columns of {name} ({', '.join(widest[:3])}) "
                         f"make a shape {shape} of {_count(math.prod(shape))} elements, over "
                         f"the array size limit ({MAX_ELEMENTS:,} elements)")
    given = set(indices)
    if len(given) < math.prod(shape):
        # The first missing element in C order is among the first len(given) + 1.
        absent = next(i for i in np.ndindex(*shape) if i not in given)
        raise InputError(f"{where}: {name} is declared without a value, so every element "
                         f"needs a column; missing {name}[{','.join(map(str, absent))}]")
    return shape


class _Fields:
    """How the lines of a CSV block become rows: ``numbers`` (the columns ``used``, in
    that order, float64) and ``kept`` (the columns ``kept``: the text as it is, what
    Python's csv module reads), in one pass of numpy's C parser. When every column is a
    number set in order (the common case), the pass reads float64; otherwise it reads
    a record per row, float64 where a column is used and text elsewhere (quotes
    honoured, so that a kept "Smith, J" is one field), every row of the same width."""

    def __init__(self, delimiter: str, width: int, used: list, kept: list, header: bool):
        self.delimiter, self.width, self.used, self.kept = delimiter, width, used, kept
        self.header = header
        self.simple = used == list(range(width)) and not kept
        self.record = np.dtype([(f"c{k}", np.float64 if k in used else object)
                                for k in range(width)])

    def _load(self, lines, **kw) -> np.ndarray:
        return _loadtxt(lines, self.delimiter, **kw)

    def parse(self, block: list) -> tuple | None:
        """``(numbers, kept)`` of the block's rows (``kept`` None without kept columns),
        or None when some line is bad (a wrong count, not a number, an empty field)."""
        try:
            if self.simple:
                table = self._load(block, dtype=np.float64)
                if table.size and table.shape[1] != self.width:
                    return None
                return (table if table.size else np.zeros((0, self.width))), None
            records = self._load(block, dtype=self.record, quotechar='"').reshape(-1)
        except ValueError:
            return None
        numbers = np.empty((len(records), len(self.used)))
        for k, column in enumerate(self.used):
            numbers[:, k] = records[f"c{column}"]
        kept = None
        if self.kept:
            kept = np.empty((len(records), len(self.kept)), dtype=object)
            for k, column in enumerate(self.kept):
                kept[:, k] = records[f"c{column}"]
        return numbers, kept

    def problem(self, line: str) -> tuple:
        """Why one line is not a row (None: it is one), and its kept columns' text when
        it has the right number of fields (None otherwise): ``(problem, kept)``."""
        if self.simple:
            fields = [f.strip() for f in _content(line).split(self.delimiter)]
        else:
            try:
                text = self._load([line], dtype=str, quotechar='"')[0].tolist()
            except ValueError as err:
                return f"cannot be split into fields ({str(err).splitlines()[0]})", None
            fields = [f.strip() for f in text]
        if len(fields) != self.width:
            what = "the header names" if self.header else "the first row has"
            return f"{len(fields)} values, but {what} {self.width} columns", None
        kept = [text[k] for k in self.kept] if self.kept else None
        for k in self.used:
            if not fields[k]:
                return f"missing value in column {k + 1}", kept
            if not is_number_text(fields[k]):
                return f"{fields[k]!r} is not a number (column {k + 1})", kept
        return None, kept

    def rows(self, lines: list) -> tuple:
        """``parse`` of lines each known to be a row."""
        parsed = self.parse(lines)
        if parsed is None:   # (a number Python reads and numpy does not: 1_000, ١)
            raise ValueError("a number numpy cannot read")
        return parsed


def _loadtxt(lines, delimiter: str, **kw) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "input contained no data": blank lines only
        return np.loadtxt(lines, delimiter=delimiter, comments="#", ndmin=2, **kw)


def _open_csv(shown: str, where: str, text: TextLines, slots: dict, chunk: int | None,
              size: int | None, options: CsvOptions | None = None,
              delimiter: str = ",") -> Source:
    options = options or CsvOptions()
    delimiter = options.delimiter or delimiter
    first = None
    while (line := text.line()) is not None:
        if isinstance(line, LongLine):
            raise InputError(f"{where}:{text.number}: {line.problem('CSV')}")
        if _content(line.lstrip("\ufeff")):
            first = line.lstrip("\ufeff")
            break
    if first is None:
        raise InputError(f"{shown}: no rows (the source is empty)")
    line_no = text.number
    at = f"{where}:{line_no}"
    if options.header:
        names = split_fields(_content(first), delimiter)
        if all(is_number_text(f) for f in names):
            raise InputError(f"{at}: the first line must be a header naming what each column "
                             "sets (x,y or W[0,0],W[0,1]...), not numbers; for a file without "
                             "header, give --no-header and --columns x=1,y=2")
        width = len(names)
    else:
        names = None
        try:
            width = _loadtxt([first], delimiter, dtype=str, quotechar='"').shape[1]
        except ValueError as err:
            raise InputError(f"{at}: cannot be split into fields "
                             f"({str(err).splitlines()[0]})") from None
        text.put_back(first)
        at = f"{where}:{line_no} (the first row)"
    targets, kept = resolve(at, names, width, options, slots)
    layout = _Layout(at, targets, slots)
    _missing_check(shown, layout.names, slots)
    fields = _Fields(delimiter, width, [t.column for t in targets],
                     [column for _, column in kept], options.header)
    rows = _chunk_rows(chunk, max(layout.per_row, width))

    def chunk_of(row: int, parsed: tuple) -> Chunk:
        table, kept_text = parsed
        return Chunk(row, layout.values(table), table, kept_text)

    def reader(source: Source) -> Iterator[Chunk | BadRow]:
        row = 0
        while True:
            first, long = text.number + 1, text.long
            block = text.block(rows)
            if not block:
                return
            source.position = text.chars
            parsed = fields.parse(block) if text.long == long else None
            if parsed is not None:
                yield chunk_of(row, parsed)
                row += len(parsed[0])
                continue
            # Some line of the block is bad: the good rows before it first, then it.
            good: list = []
            for offset, line in enumerate(block):
                if isinstance(line, LongLine):
                    problem, kept_text = line.problem("CSV"), None
                elif not _content(line):
                    continue
                else:
                    problem, kept_text = fields.problem(line)
                if problem is None:
                    good.append(line)
                    continue
                if good:
                    yield chunk_of(row, fields.rows(good))
                    row += len(good)
                    good = []
                yield BadRow(row, f"{where}:{first + offset}: {problem}", kept=kept_text)
                row += 1
            if good:
                yield chunk_of(row, fields.rows(good))
                row += len(good)

    return Source(shown, layout.names, layout.shapes, [t.label for t in targets], reader,
                  None, size, kept=[label for label, _ in kept])


# ---------------------------------------------------------------------------------------
# JSON Lines
# ---------------------------------------------------------------------------------------
def _open_jsonl(shown: str, where: str, text: TextLines, slots: dict, chunk: int | None,
                size: int | None) -> Source:
    import json
    first = None
    while (line := text.line()) is not None:
        if isinstance(line, LongLine) or line.strip().lstrip("\ufeff"):
            first = line if isinstance(line, LongLine) else line.strip().lstrip("\ufeff")
            break
    if first is None:
        raise InputError(f"{shown}: no rows (the source is empty)")
    line_no = text.number
    obj = _json_line(json, first)
    if isinstance(obj, str):
        raise InputError(f"{where}:{line_no}: {obj}")
    if not isinstance(obj, dict) or not obj:
        raise InputError(f"{where}:{line_no}: each line must be a JSON object of named "
                         'values, e.g. {"x": 1.5, "W": [[1, 2], [3, 4]]}')
    shapes = {}
    for name, value in obj.items():
        if name not in slots:
            raise _unknown_name(f"{where}:{line_no}", "key", name, slots)
        slot = slots[name]
        try:
            shape = np.shape(_json_numbers(value))
        except ValueError as err:
            raise InputError(f"{where}:{line_no}: {name}: {err}") from None
        _check_shape(f"{where}:{line_no}", name, shape, slot)
        shapes[name] = shape
    names = list(shapes)
    _missing_check(shown, names, slots)
    labels = Labels(shapes)
    per_row = sum(max(1, int(np.prod(s))) for s in shapes.values())
    rows = _chunk_rows(chunk, per_row)
    pending = [(line_no, first)]

    def parse(number: int, text: str):
        obj = _json_line(json, text)
        if isinstance(obj, str):
            return obj
        if not isinstance(obj, dict):
            return "not a JSON object of named values"
        for key in obj:
            if key not in shapes:
                return (f"key {key!r} is not set by the first line ({', '.join(names)})"
                        if key in slots else f"key {key!r} is not a declared name")
        row = {}
        for name in names:
            if name not in obj:
                if slots[name].value is None:
                    return f"missing value for {name}"
                row[name] = slots[name].value
                continue
            try:
                value = _json_numbers(obj[name])
            except ValueError as err:
                return f"{name}: {err}"
            if np.shape(value) != shapes[name]:
                return (f"{name} has shape {np.shape(value)}, but the first line's has shape "
                        f"{shapes[name]}")
            row[name] = value
        return row

    def reader(source: Source) -> Iterator[Chunk | BadRow]:
        row_index = 0
        first_block = True
        while True:
            number = text.number
            block = [(number + 1 + k, line) for k, line in
                     enumerate(text.block(rows - 1 if first_block else rows))]
            if first_block:
                block = pending + block
                first_block = False
            if not block:
                return
            source.position = text.chars
            good: list = []
            for at, line in block:
                if not isinstance(line, LongLine) and not line.strip():
                    continue
                parsed = parse(at, line)
                if isinstance(parsed, str):
                    if good:
                        yield _json_chunk(row_index, good, names, shapes)
                        row_index += len(good)
                        good = []
                    yield BadRow(row_index, f"{where}:{at}: {parsed}")
                    row_index += 1
                else:
                    good.append(parsed)
            if good:
                yield _json_chunk(row_index, good, names, shapes)
                row_index += len(good)

    return Source(shown, names, shapes, labels, reader, None, size)


def _json_line(json, text):
    """One JSON Lines row parsed, or the reason it cannot be (a string). Integers are
    read as floats (the values are float64), so that a long one is no Python int."""
    if isinstance(text, LongLine):
        return text.problem("JSON Lines")
    try:
        return json.loads(text, parse_int=float)
    except RecursionError:
        return "not a JSON object (nested too deeply)"
    except ValueError as err:
        return f"not a JSON object ({err})"


def _json_numbers(value) -> np.ndarray:
    """A JSON value as a float64 array: numbers, nested lists of them, or the strings
    "nan", "inf", "-inf" (as gradcli writes them)."""
    if isinstance(value, bool) or value is None or isinstance(value, dict):
        raise ValueError(f"{_json_kind(value)} is not a number")
    if isinstance(value, str):
        if value in ("nan", "inf", "-inf", "NaN", "Infinity", "-Infinity"):
            return np.float64(value.replace("Infinity", "inf"))
        raise ValueError(f"{value!r} is not a number")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError):
        if isinstance(value, list):
            for item in value:
                _json_numbers(item)
            raise ValueError("rows of different lengths") from None
        raise ValueError(f"{_json_kind(value)} is not a number") from None
    return array


def _json_kind(value) -> str:
    return {type(None): "null", bool: "a boolean", dict: "an object"}.get(type(value),
                                                                           repr(value))


def _json_chunk(start: int, rows: list, names: list, shapes: dict) -> Chunk:
    values = {name: np.array([r[name] for r in rows], dtype=np.float64).reshape(
        (len(rows), *shapes[name])) for name in names}
    columns = np.concatenate([values[n].reshape(len(rows), -1) for n in names], axis=1)
    return Chunk(start, values, columns)


# ---------------------------------------------------------------------------------------
# .npy and .npz: a chunk of rows at a time from the file
# ---------------------------------------------------------------------------------------
def _npy_header(f, shown: str) -> tuple:
    try:
        version = np.lib.format.read_magic(f)
    except ValueError:
        raise InputError(f"{shown}: not a .npy file (pickled data is never loaded)") from None
    try:
        shape, fortran, dtype = np.lib.format._read_array_header(f, version)
    except (ValueError, AttributeError):
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    if dtype.hasobject:
        raise InputError(f"{shown}: holds Python objects (pickled data), which are never "
                         "loaded")
    if dtype.kind not in "iuf":
        raise InputError(f"{shown}: holds {dtype}, not real numbers")
    if not shape:
        raise InputError(f"{shown}: holds one number; --at needs a leading axis of rows")
    return shape, fortran, dtype


def _open_npy(path: str, shown: str, slots: dict, chunk: int | None) -> Source:
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem in slots:
        name = stem
    else:
        unset = [n for n, slot in slots.items() if slot.value is None]
        if len(unset) != 1:
            raise InputError(f"{shown}: a .npy file sets one declared name: name the file "
                             f"after it ({', '.join(f'{n}.npy' for n in slots) or 'none'}), "
                             "or declare exactly one name without a value")
        name = unset[0]
    with open(path, "rb") as f:
        shape, fortran, dtype = _npy_header(f, shown)
    _check_shape(shown, name, shape[1:], slots[name])
    _missing_check(shown, [name], slots)
    return _array_source(shown, {name: (path, None)}, {name: (shape, fortran, dtype)},
                         chunk)


def _open_npz(path: str, shown: str, slots: dict, chunk: int | None) -> Source:
    import zipfile
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise InputError(f"{shown}: not a .npz file") from None
    headers, members = {}, {}
    with archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[:-4]
            if name not in slots:
                raise _unknown_name(shown, "array", name, slots)
            with archive.open(info) as f:
                headers[name] = _npy_header(f, f"{shown}[{name}]")
            members[name] = (path, info.filename)
    if not headers:
        raise InputError(f"{shown}: holds no arrays")
    for name, (shape, _, _) in headers.items():
        _check_shape(shown, name, shape[1:], slots[name])
    _missing_check(shown, list(headers), slots)
    return _array_source(shown, members, headers, chunk)


def _array_source(shown: str, members: dict, headers: dict, chunk: int | None) -> Source:
    lengths = {name: h[0][0] for name, h in headers.items()}
    if len(set(lengths.values())) > 1:
        raise InputError(f"{shown}: the arrays have different numbers of rows (" +
                         ", ".join(f"{n}: {k}" for n, k in lengths.items()) + ")")
    total = next(iter(lengths.values()))
    names = list(headers)
    shapes = {name: tuple(h[0][1:]) for name, h in headers.items()}
    per_row = _check_row_size(shown, shapes)
    whole = {name: math.prod(h[0]) for name, h in headers.items() if _column_major(*h[:2])}
    if sum(whole.values()) > MAX_ELEMENTS:
        raise LimitError(f"{shown}: {', '.join(whole)} {'is' if len(whole) == 1 else 'are'} "
                         "stored in Fortran (column-major) order, where a row's numbers are "
                         f"apart, so {'it is' if len(whole) == 1 else 'they are'} read whole: "
                         f"{_count(sum(whole.values()))} numbers, over the array size limit "
                         f"({MAX_ELEMENTS:,} elements); save in C order "
                         "(np.ascontiguousarray) to read a chunk of rows at a time")
    labels = Labels(shapes)
    rows = _chunk_rows(chunk, per_row)

    def reader(source: Source) -> Iterator[Chunk | BadRow]:
        import contextlib
        import zipfile
        with contextlib.ExitStack() as stack:
            streams = {}
            for name, (path, member) in members.items():
                shape, fortran, dtype = headers[name]
                if member is None:
                    f = stack.enter_context(open(path, "rb"))
                    _npy_header(f, shown)
                else:
                    archive = stack.enter_context(zipfile.ZipFile(path))
                    f = stack.enter_context(archive.open(member))
                    _npy_header(f, shown)
                if _column_major(shape, fortran):
                    # Column-major on disk: rows are not contiguous, so read it whole
                    # (held to the array size limit when the source was opened).
                    whole = np.lib.format.read_array(
                        stack.enter_context(open(path, "rb"))) if member is None else \
                        np.load(path, allow_pickle=False)[name]
                    streams[name] = ("array", whole)
                else:
                    streams[name] = ("stream", f)
            for start in range(0, total, rows):
                n = min(rows, total - start)
                values = {}
                for name in names:
                    shape, _, dtype = headers[name]
                    kind, what = streams[name]
                    if kind == "array":
                        block = np.asarray(what[start:start + n], dtype=np.float64)
                    else:
                        count = n * math.prod(shape[1:])
                        data = what.read(count * dtype.itemsize)
                        if len(data) < count * dtype.itemsize:
                            raise InputError(f"{shown}: the file ends early (row {start})")
                        block = np.frombuffer(data, dtype=dtype, count=count).astype(
                            np.float64).reshape((n, *shape[1:]))
                    values[name] = block
                columns = np.concatenate([values[nm].reshape(n, -1) for nm in names], axis=1)
                source.position = start + n
                yield Chunk(start, values, columns)

    return Source(shown, names, shapes, labels, reader, total, None)


def _column_major(shape: tuple, fortran: bool) -> bool:
    """Whether an array's rows are apart in its file: Fortran order with more than one
    axis longer than 1 (otherwise the two orders lay the numbers out alike)."""
    return fortran and sum(k > 1 for k in shape) > 1


def read_all(spec: str, slots: dict, max_numbers: int, stdin=None, check=None,
             csv: CsvOptions | None = None) -> tuple:
    """Every row of ``spec`` in memory (``gradcli minimize --at``): ``(source, values)``,
    ``values`` mapping each name the source sets to a float64 array whose axis 0 is the
    row. A bad row is an ``InputError`` naming its file and line (the same message as
    ``--at``); so is a source without rows, or one of more than ``max_numbers`` numbers.
    ``check(source)``, if given, runs once the source is open, before its rows are read;
    ``csv`` says how to read a CSV source (as ``open_source``).

    >>> import io
    >>> _, v = read_all("-", {"x": Slot("arg", None)}, 100, stdin=io.StringIO("x\\n1\\n2\\n"))
    >>> v["x"].tolist()
    [1.0, 2.0]
    """
    source = open_source(spec, slots, stdin=stdin, csv=csv)
    if check is not None:
        check(source)
    parts: dict = {name: [] for name in source.names}
    count = 0
    for item in source.items():
        if isinstance(item, BadRow):
            raise InputError(item.message)
        count += item.columns.size
        if count > max_numbers:
            raise InputError(f"{source.shown}: more than {max_numbers:,} numbers; minimize "
                             "holds its data in memory, so train on a sample of the rows")
        for name in source.names:
            parts[name].append(item.values[name])
    values = {name: np.concatenate(chunks) if chunks else np.zeros((0, *source.shapes[name]))
              for name, chunks in parts.items()}
    if not values or len(next(iter(values.values()))) == 0:
        raise InputError(f"{source.shown}: no rows (the source is empty)")
    return source, values
