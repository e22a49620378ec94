"""Which columns of a CSV or TSV source set which declared names, and which pass through
to the output: ``--columns``, ``--keep``, ``--delimiter`` and ``--no-header`` of ``--at``.

Without ``--columns`` the header decides: each column names what it sets (``x``, or an
element ``W[0,1]``), and a column that names nothing declared is refused unless
``--keep`` passes it through. With ``--columns``, only the columns it lists set names
(as pandas' ``usecols`` picks columns), the others are left out or kept:

- ``--columns x=col_a,y=3``: ``x`` from the column named ``col_a``, ``y`` from the third
  (columns count from 1, as ``cut``, ``awk`` and csvkit count them, and as messages
  name them); a header name is looked up first, a number is a position.
- ``--columns x,y`` (a bare name): the column of that name (for an array ``W``, its
  element columns ``W[0,0]``...).
- ``--columns 'W[0,1]=w01'``: one element of an array.
- ``--columns p=x1:x3``: an array's elements in C order from a range of columns (first
  and last included, by names or numbers): ``p`` of shape (3,) when it is declared
  without a value, else its declared shape.
- ``--keep id,label`` passes those columns through to every output, verbatim as text;
  ``--keep key=id`` names the output column ``key``.
- ``--no-header``: the first line is data; ``--columns`` (and ``--keep``, with a name:
  ``--keep id=1``) name columns by number.
- ``--delimiter ';'`` (``tab`` or ``\\t`` for a tab): the field separator; ``.tsv``
  files are tab-separated, others comma-separated.

Items of one option are separated by commas (outside brackets and quotes), and options
repeat: ``--columns x=a --columns y=b`` is ``--columns x=a,y=b``. Each option is checked
for its syntax when it is read, before any file is opened.

>>> options = CsvOptions(columns=["x=col_a, p=x1:x3"], keep=["id"])
>>> options.columns, options.keep
([('x', 'col_a'), ('p', 'x1:x3')], [(None, 'id')])
"""
from __future__ import annotations

import math
import re

from ..errors import InputError, LimitError, did_you_mean
from ..lang.limits import MAX_ELEMENTS

__all__ = ["CsvOptions", "Target", "resolve", "split_fields", "target_of"]

#: What a header column (or a --columns target) can say: a name, or one element of it.
_LABEL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*([0-9]+(?:\s*,\s*[0-9]+)*)\s*\])?"
                    r"\s*\Z")
#: Characters that cannot separate fields: they are part of numbers, quotes, comments.
_NOT_DELIMITERS = set("0123456789.+-eE\"'#[]\n\r")


class CsvOptions:
    """How to read a CSV source: ``columns`` and ``keep`` as ``(name or None, column)``
    items, ``delimiter`` (None: by the file's extension), ``header``. ``keep=None``: the
    command has no --keep (``minimize``: no rows are output), which messages then do not
    suggest."""

    def __init__(self, columns=(), keep=(), delimiter: str | None = None,
                 header: bool = True):
        self.columns = [_item(text, "--columns") for text in _items(columns, "--columns")]
        self.can_keep = keep is not None
        self.keep = [_item(text, "--keep") for text in _items(keep, "--keep")]
        self.delimiter = _delimiter(delimiter)
        self.header = header
        if not header and not self.columns:
            raise InputError("--no-header needs --columns to say which column sets which "
                             "name, by number from 1: --columns x=1,y=2")

    @property
    def given(self) -> list[str]:
        """The options given (for a source they do not apply to)."""
        return [name for name, on in (("--columns", bool(self.columns)),
                                      ("--keep", bool(self.keep)),
                                      ("--delimiter", self.delimiter is not None),
                                      ("--no-header", not self.header)) if on]


def _items(options, option: str) -> list[str]:
    out = []
    for text in options or ():
        for item in split_fields(text, ","):
            if not item:
                raise InputError(f"{option} {text!r} has an empty item: give "
                                 f"{'NAME=COLUMN' if option == '--columns' else 'COLUMN'}"
                                 "[,...]")
            out.append(item)
    return out


def _quoted(text: str) -> bool:
    return len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"


def _unquoted(text: str) -> str:
    text = text.strip()
    return text[1:-1] if _quoted(text) else text


def _item(text: str, option: str) -> tuple:
    """``NAME=COLUMN`` -> (NAME, COLUMN); a bare ``COLUMN`` -> (None, COLUMN)."""
    if "=" not in text or _quoted(text.strip()):
        return None, _unquoted(text)
    name, column = (part.strip() for part in text.split("=", 1))
    column = _unquoted(column)
    if not column:
        raise InputError(f"{option} {text!r}: no column after '='")
    if not name:
        raise InputError(f"{option} {text!r}: no name before '='")
    if option == "--columns" and not _LABEL.match(name):
        raise InputError(f"{option} {text!r}: {name!r} is not a name or an element "
                         "(x, W[0,1])")
    return name, column


def _delimiter(text: str | None) -> str | None:
    if text is None:
        return None
    text = {"tab": "\t", "\\t": "\t", "TAB": "\t"}.get(text, text)
    if len(text) != 1 or text in _NOT_DELIMITERS:
        raise InputError(f"--delimiter {text!r}: give one character that cannot be part of "
                         "a number, a quote or a comment (',', ';', '|', tab as 'tab' or "
                         "'\\t', ' ')")
    return text


def split_fields(line: str, delimiter: str) -> list[str]:
    """The fields of a header line (or of an option's list), stripped: split at the
    delimiter outside brackets and quotes, so that ``x,W[0,1]`` and ``x,"W[0,1]"`` are
    both two columns (the quotes stay: a name in quotes is taken as it is)."""
    fields, current, depth, quote = [], [], 0, None
    for ch in line:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            current.append(ch)
        elif ch == "[":
            depth += 1
            current.append(ch)
        elif ch == "]":
            depth -= 1
            current.append(ch)
        elif ch == delimiter and (depth <= 0 or delimiter != ","):
            fields.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    fields.append("".join(current).strip())
    return fields


# ---------------------------------------------------------------------------------------
# Labels: x, W[0,1]
# ---------------------------------------------------------------------------------------
class Target:
    """What one column sets: ``name`` whole (``index`` None) or its element ``index``;
    ``label`` is how the output names the column (``W[0,1]``), ``column`` the file's
    column it is read from (0-based)."""
    __slots__ = ("column", "index", "label", "name")

    def __init__(self, name: str, index: tuple | None, column: int):
        self.name, self.index, self.column = name, index, column
        self.label = name if index is None else f"{name}[{','.join(map(str, index))}]"


def target_of(where: str, text: str, column: int) -> Target | None:
    """The Target a label names (``x``, ``W[0,1]``, quoted or not), or None when it is
    not one. An index at or over the array size limit (beyond C's integers too) is a
    LimitError naming the column."""
    m = _LABEL.match(_unquoted(text))
    if not m:
        return None
    index = None
    if m.group(2) is not None:
        index = []
        for part in m.group(2).split(","):
            part = part.strip()
            if len(part) > len(str(MAX_ELEMENTS)) or int(part) >= MAX_ELEMENTS:
                raise LimitError(f"{where}: column {_unquoted(text)!r}: index {part} is "
                                 f"beyond the array size limit ({MAX_ELEMENTS:,} elements)")
            index.append(int(part))
        index = tuple(index)
    return Target(m.group(1), index, column)


# ---------------------------------------------------------------------------------------
# Resolving the options against a header
# ---------------------------------------------------------------------------------------
class _Header:
    """The columns of a file: ``names`` from its header (None without one), ``width``."""

    def __init__(self, where: str, names: list | None, width: int):
        self.where, self.names, self.width = where, names, width

    def column(self, text: str, option: str) -> int:
        """The 0-based column ``text`` names: a header name, else a number from 1."""
        if self.names is not None:
            found = [k for k, name in enumerate(self.names) if name == text]
            if len(found) > 1:
                raise InputError(f"{self.where}: {option} {text!r}: the header has "
                                 f"{len(found)} columns named {text!r}; name one by number "
                                 f"({', '.join(str(k + 1) for k in found)})")
            if found:
                return found[0]
        if text.isdigit() and text.isascii():
            number = int(text)
            if number == 0:
                raise InputError(f"{self.where}: {option} '0': columns are numbered from 1 "
                                 "(as cut, awk and csvkit number them)")
            if not 1 <= number <= self.width:
                raise InputError(f"{self.where}: {option} {text!r}: the rows have "
                                 f"{self.width} columns, numbered from 1")
            return number - 1
        if self.names is None:
            raise InputError(f"{self.where}: {option} {text!r}: without a header (--no-header), "
                             "name columns by number, from 1")
        shown = ", ".join(self.names[:8]) + (", ..." if len(self.names) > 8 else "")
        one = " (one column: is --delimiter right?)" if len(self.names) == 1 else ""
        raise InputError(f"{self.where}: {option} {text!r}: no column {text!r} in the "
                         f"header{did_you_mean(text, self.names)} (its columns: {shown})"
                         f"{one}")

    def columns(self, text: str, option: str) -> list[int]:
        """The columns of ``text``: one, or a range ``FIRST:LAST`` (both included)."""
        if ":" not in text or (self.names is not None and text in self.names):
            return [self.column(text, option)]
        first, _, last = text.partition(":")
        a, b = self.column(first.strip(), option), self.column(last.strip(), option)
        if b < a:
            raise InputError(f"{self.where}: {option} {text!r}: the range ends before it "
                             "starts")
        return list(range(a, b + 1))


def resolve(where: str, names: list | None, width: int, options: CsvOptions,
            slots: dict) -> tuple[list, list]:
    """``(targets, kept)`` for a file of ``width`` columns (``names`` from its header,
    None without one): the Targets in the order they are read, and the kept columns as
    ``(label, column)``. ``slots`` are the declared names (name -> Slot)."""
    header = _Header(where, None if names is None else [_unquoted(n) for n in names], width)
    kept = _kept(header, options)
    if options.columns:
        targets = [t for name, text in options.columns
                   for t in _listed(header, name, text, slots)]
    else:
        taken = {column for _, column in kept}
        targets = [_from_header(where, names[k], k, slots, options.can_keep)
                   for k in range(width) if k not in taken]
    if not targets:
        raise InputError(f"{where}: no column sets a declared name (declared: "
                         f"{', '.join(slots) or 'none'})")
    for target in targets:
        if target.name not in slots:
            raise _not_declared(where, "--columns", target.name, slots)
    return targets, kept


def _kept(header: _Header, options: CsvOptions) -> list:
    kept, labels = [], set()
    for label, text in options.keep:
        column = header.column(text, "--keep")
        if label is None:
            if header.names is None:
                raise InputError(f"{header.where}: --keep {text!r}: without a header, give the "
                                 f"kept column a name: --keep NAME={text}")
            label = header.names[column]
            if not label:
                raise InputError(f"{header.where}: --keep {text!r}: the column has no name in "
                                 f"the header: give it one, --keep NAME={column + 1}")
        if label in labels:
            raise InputError(f"{header.where}: --keep: two kept columns are named {label!r}: "
                             "rename one (--keep NAME=COLUMN)")
        labels.add(label)
        kept.append((label, column))
    return kept


def _listed(header: _Header, name: str | None, text: str, slots: dict) -> list:
    """The Targets of one --columns item."""
    where = header.where
    if name is None:   # a bare name: its own column, or its element columns
        if header.names is not None and text in header.names:
            target = target_of(where, text, header.column(text, "--columns"))
            if target is None:
                raise InputError(f"{where}: --columns {text!r}: set a declared name from it: "
                                 f"--columns NAME={text}")
            return [target]
        elements = [] if header.names is None or not _LABEL.match(text) else [
            target_of(where, label, k) for k, label in enumerate(header.names)
            if label.split("[", 1)[0].strip() == text and "[" in label]
        if not elements:
            header.column(text, "--columns")   # (the message: no such column)
            raise InputError(f"{where}: --columns {text!r}: set a name from it: "
                             f"--columns NAME={text}")
        return elements
    columns = header.columns(text, "--columns")
    target = target_of(where, name, columns[0])
    if len(columns) == 1:
        return [target]
    if target.index is not None:
        raise InputError(f"{where}: --columns {name}={text}: a range of columns sets a "
                         f"whole name ({target.name}={text}), not one element")
    slot = slots.get(target.name)
    if slot is None:
        raise _not_declared(where, "--columns", target.name, slots)
    shape = (len(columns),) if slot.value is None else tuple(slot.shape)
    if math.prod(shape) != len(columns) or not shape:
        size = math.prod(shape)
        raise InputError(f"{where}: --columns {name}={text}: {len(columns)} columns, but "
                         f"{name} is declared with shape {shape} ({size:,} "
                         f"element{'s' if size != 1 else ''})")
    import numpy as np
    return [Target(target.name, index, column)
            for index, column in zip(np.ndindex(*shape), columns)]


def _from_header(where: str, label: str, column: int, slots: dict, can_keep: bool) -> Target:
    """The Target a header column names, when no --columns says otherwise."""
    target = target_of(where, label, column)
    named = _unquoted(label) or f"NAME={column + 1}"   # (pandas writes its index unnamed)
    keep = f", or pass it through to the output (--keep {named})" if can_keep else ""
    if target is None:
        raise InputError(f"{where}: header column {column + 1} {label.strip()!r} is not a "
                         "name or an element (x, W[0,1]): choose the columns that set names "
                         f"(--columns NAME=COLUMN,...){keep}")
    if target.name not in slots:
        raise _not_declared(where, "header column", target.name, slots,
                            hint=f"declare it (--arg {target.name}), choose the columns "
                                 f"that set names (--columns NAME=COLUMN,...){keep}")
    return target


def _not_declared(where: str, what: str, name: str, slots: dict,
                  hint: str | None = None) -> InputError:
    declared = ", ".join(slots) or "none"
    return InputError(f"{where}: {what} {name!r} is not a declared name"
                      f"{did_you_mean(name, list(slots))} (declared: {declared}); "
                      f"{hint or f'declare it with --arg {name} or --var {name}'}")
