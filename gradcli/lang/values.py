"""Declarations from outside the program: ``--var``, ``--frozen`` and ``--arg`` values.

A value is a constant expression of the language (``2``, ``[1, 2]``, ``linspace(0, 1, 5)``,
``-pi/2``), parsed by the same parser and evaluated on the engine, or ``@path`` to a
``.npy`` (read with ``allow_pickle=False``), ``.csv`` (comma-separated) or ``.txt``
(whitespace-separated) file. A text file may start with a UTF-8 byte order mark and with
a header row of column names (a first row with no number in it): a single value ignores
the names, which ``Declaration.columns`` keeps. Every value becomes a float64 numpy array,
whatever the file held (a float32 ``.npy`` included); ``build`` converts it to the
requested dtype.

What a declaration can be checked for without work is checked when it is added (the
name, the syntax and names of a value, a file's type, existence and size); the value is
made, and a file read, only when ``Declaration.value`` is first asked for, so that a
program refused for its names or its mode never reads a 10^7-element file.

>>> decls = Declarations.from_options(var=["w1=2"], arg=["x1=5", "x2=[1, 2]"])
>>> [(d.kind, d.name, d.value.tolist()) for d in decls]
[('var', 'w1', 2.0), ('arg', 'x1', 5.0), ('arg', 'x2', [1.0, 2.0])]
"""
from __future__ import annotations

import keyword
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import GradcliError, InputError, LimitError, shown_path
from . import limits
from .evaluate import compile_constant
from .parser import DECLARE_NAMES, parse_expression, registry

__all__ = [
    "KINDS",
    "Declaration",
    "Declarations",
    "check_name",
    "load_file",
    "load_value",
    "parse_declaration",
    "prepare_value",
    "read_table",
]

#: The kinds of declaration, with the option that makes each.
KINDS = {"var": "--var", "frozen": "--frozen", "arg": "--arg"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Declaration:
    """One declared name: ``kind`` is "var" (trainable variable), "frozen" (variable with
    ``trainable=False``) or "arg" (a function argument); ``value`` a float64 array, made
    on first access (``load`` makes it: reads the file, evaluates the text); ``columns``
    the column names of a text file's header row, or None.
    (A plain class: the command line defines it at every start.)"""
    __slots__ = ("kind", "name", "text", "_value", "_columns", "_load")

    def __init__(self, kind: str, name: str, value: np.ndarray | None = None, text: str = "",
                 *, load=None, columns: tuple[str, ...] | None = None):
        self.kind, self.name, self.text = kind, name, text
        self._value, self._columns, self._load = value, columns, load

    @property
    def value(self) -> np.ndarray:
        if self._value is None:
            if self._load is None:
                raise InputError(f"{KINDS[self.kind]} {self.name} has no value: give one "
                                 f"({KINDS[self.kind]} {self.name}=VALUE), or read it for "
                                 "every row from a source (--at @points.csv)")
            self._value, self._columns = self._load()
            self._load = None
        return self._value

    @property
    def has_value(self) -> bool:
        """False for a name declared without a value (``--arg x``): ``--at`` sets it."""
        return self._value is not None or self._load is not None

    @property
    def columns(self) -> tuple[str, ...] | None:
        """The names in a text file's header row (None without a header)."""
        self.value  # noqa: B018 - the header is read with the file
        return self._columns

    @property
    def loaded(self) -> bool:
        """Whether the value has been made (a file read) yet."""
        return self._value is not None

    def __repr__(self) -> str:
        return f"Declaration(kind={self.kind!r}, name={self.name!r}, text={self.text!r})"


def check_name(name: str, source: str | None = None) -> None:
    """Refuse a name that the language cannot use: not ``[A-Za-z_][A-Za-z0-9_]*``, starting
    with ``_``, a reserved word, or the name of a function."""
    def fail(message: str) -> InputError:
        if source is not None and name and name in source:
            col = source.index(name)
            return InputError(message, source=source, line=1, col=col, width=len(name))
        return InputError(message)

    if not isinstance(name, str) or not _NAME.match(name):
        shown = name if isinstance(name, str) else type(name).__name__
        hint = " (names must start with a letter)" if isinstance(name, str) and name[:1].isdigit() else ""
        raise fail(f"invalid name {shown!r}: use letters, digits and '_'{hint}")
    if name.startswith("_"):
        raise fail(f"names beginning with '_' are not allowed: {name!r}")
    if keyword.iskeyword(name):
        raise fail(f"{name!r} is a reserved word and cannot be declared")
    if name in DECLARE_NAMES or name in registry():
        raise fail(f"{name!r} is the name of a function and cannot be declared")


def parse_declaration(text: str) -> tuple[str, str]:
    """Split a ``NAME=VALUE`` option into its name and value text (the name is checked).

    >>> parse_declaration("w1 = 2")
    ('w1', '2')
    """
    if not isinstance(text, str) or "=" not in text:
        raise InputError(f"expected NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    name, value = name.strip(), value.strip()
    check_name(name, text)
    if not value:
        raise InputError(f"no value given for {name!r} (expected NAME=VALUE)", source=text,
                         line=1, col=len(text), width=1)
    return name, value


def load_value(text: str) -> np.ndarray:
    """The value of a declaration: a constant expression, or ``@path`` to a file.

    >>> load_value("-pi/2")
    array(-1.57079633)
    """
    return prepare_value(text)()[0]


def prepare_value(text: str) -> Callable[[], tuple[np.ndarray, tuple[str, ...] | None]]:
    """Check a declaration's value text now (syntax and names of an expression; type,
    existence and size of a ``@path`` file) and return ``load()``, which makes the value:
    ``(float64 array, column names or None)``.

    >>> prepare_value("[1, 2]")()
    (array([1., 2.]), None)
    """
    if not isinstance(text, str):
        raise InputError(f"a value must be text, not {type(text).__name__}")
    stripped = text.strip()
    if stripped.startswith("@"):
        return _prepare_file(stripped[1:])
    value = compile_constant(parse_expression(text), text)
    return lambda: (_numbers(value(), "the value"), None)


def _numbers(value, what: str) -> np.ndarray:
    """A float64 array of real numbers (booleans, strings, objects are refused)."""
    array = np.asarray(value)
    if array.dtype == np.bool_:
        raise InputError(f"{what} must be numbers, not booleans")
    if array.dtype.kind not in "iuf":
        raise InputError(f"{what} must hold real numbers, not {array.dtype}")
    limits.check_elements(array.size, what)
    return array.astype(np.float64)


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------
def load_file(path: str) -> np.ndarray:
    """Read numbers from a ``.npy``, ``.csv`` or ``.txt`` file (size-checked first).

    A pickled or object ``.npy``, a non-number in a text file, a missing, unreadable or
    special file (a directory, a pipe) are ``InputError``s naming the file.
    """
    return read_table(path)[0]


def read_table(path: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``load_file``, with the column names of a text file's header row (None without
    one): ``(values, names)``, for a value per row (a later batch mode)."""
    return _prepare_file(path)()


def _prepare_file(path: str) -> Callable[[], tuple[np.ndarray, tuple[str, ...] | None]]:
    """Check a file's type, existence and size now (and a ``.npy`` header: a pickle or
    a huge array is refused at once); return ``load()`` that reads it."""
    shown = shown_path(path)
    path = os.path.expanduser(path)
    extension = os.path.splitext(path)[1].lower()
    if extension not in (".npy", ".csv", ".txt"):
        raise InputError(f"{shown}: unsupported file type {extension or '(none)'!r}; "
                         "use .npy, .csv or .txt")

    def guarded(work: Callable):
        try:
            return work()
        except GradcliError:
            raise
        except (OSError, ValueError, EOFError, UnicodeDecodeError) as err:
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InputError(f"{shown}: cannot read file ({detail})") from None

    check_file(path, shown)
    if extension == ".npy":
        guarded(lambda: _npy_header(path, shown))

    def load():
        check_file(path, shown)  # again: the file may have changed since
        if extension == ".npy":
            return guarded(lambda: _load_npy(path, shown)), None
        return guarded(lambda: _load_text(path, shown, "," if extension == ".csv" else None))
    return load


def check_file(path: str, shown: str, *, limited: bool = True, hint: str = "") -> int:
    """The size of the regular file at ``path``, or one clear error (missing, a
    directory, a pipe or device: those could block forever or never end; with
    ``limited``, over the file size limit). ``hint`` ends the not-a-regular-file message."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise InputError(f"{shown}: cannot read file ({err.strerror or err})") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{shown}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{shown}: not a regular file{hint}")
    if limited and info.st_size > limits.MAX_FILE_BYTES:
        raise LimitError(f"{shown}: file has {info.st_size:,} bytes, over the file size limit "
                         f"({limits.MAX_FILE_BYTES:,} bytes)")
    return info.st_size


def _npy_header(path: str, shown: str) -> None:
    """Refuse a ``.npy`` file from its header: not a .npy (a pickle), objects, not real
    numbers, over the size limit."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:
            raise InputError(f"{shown}: not a .npy file (pickled data is never loaded)") from None
        try:
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        except ValueError as err:
            raise InputError(f"{shown}: bad .npy header ({err})") from None
    # The header says what the file holds: refuse objects and huge arrays before loading.
    if dtype.hasobject:
        raise InputError(f"{shown}: holds Python objects (pickled data), which are never "
                         "loaded")
    if dtype.kind not in "biuf":
        raise InputError(f"{shown}: holds {dtype}, not real numbers")
    count = 1
    for n in shape:
        count *= n
    limits.check_elements(count, shown)


def _load_npy(path: str, shown: str) -> np.ndarray:
    _npy_header(path, shown)  # again: the file may have changed since
    try:
        value = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise InputError(f"{shown}: cannot load ({err})") from None
    return _numbers(value, shown)


def _load_text(path: str, shown: str, delimiter: str | None
               ) -> tuple[np.ndarray, tuple[str, ...] | None]:
    # utf-8-sig: a byte order mark (as spreadsheets write) is dropped, not read as data.
    with open(path, "r", encoding="utf-8-sig", errors="strict") as f:
        text = f.read(limits.MAX_FILE_BYTES + 1)
    lines = text.splitlines()
    # The lines with content, lazily: only the first two are needed here.
    content = (i for i, line in enumerate(lines) if line.split("#", 1)[0].strip())
    header_at = next(content, None)
    if header_at is None:
        raise InputError(f"{shown}: the file holds no numbers")
    columns = _header(lines[header_at], delimiter)
    if columns is not None:
        first_row = next(content, None)
        if first_row is None:
            line = lines[header_at].split("#", 1)[0]
            hint = ""
            if any(c in line for c in "\t;\"'"):
                by = "commas" if delimiter == "," else "spaces"
                hint = (f" ({line.strip()!r} is not numbers separated by {by}: write them "
                        f"without quotes, separated by {by})")
            raise InputError(f"{shown}: the file holds no numbers, only a header row{hint}")
        width = len(_fields(lines[first_row].split("#", 1)[0], delimiter))
        if width != len(columns):
            raise InputError(f"{shown}, line {header_at + 1}: the header names "
                             f"{len(columns)} columns, but the rows have {width} values",
                             source=text, line=header_at + 1, col=0,
                             width=len(lines[header_at]))
        lines[header_at] = ""  # (loadtxt skips empty lines: the line numbers stay)
    try:
        value = np.loadtxt(lines, delimiter=delimiter, dtype=np.float64, ndmin=0)
    except ValueError:
        _locate_bad_field(text, shown, delimiter, skip=set() if columns is None
                          else {header_at})
        raise
    return _numbers(value, shown), columns


def _fields(content: str, delimiter: str | None) -> list[tuple[int, str]]:
    """The fields of a line (without its comment) as (column, text), text stripped."""
    if delimiter is None:
        return [(m.start(), m.group()) for m in re.finditer(r"\S+", content)]
    out, col = [], 0
    for part in content.split(delimiter):
        out.append((col + len(part) - len(part.lstrip()), part.strip()))
        col += len(part) + len(delimiter)
    return out


def is_number_text(field: str) -> bool:
    """Whether a text field is one number as numpy's reader reads it."""
    if "_" in field:  # float() reads 1_000, numpy's reader does not
        return False
    try:
        float(field)
    except ValueError:
        return False
    return True


def _header(line: str, delimiter: str | None) -> tuple[str, ...] | None:
    """The column names if ``line`` is a header row: no field of it is a number."""
    fields = [text for _, text in _fields(line.split("#", 1)[0], delimiter)]
    if not fields or any(not text or is_number_text(text) for text in fields):
        return None
    return tuple(text.strip("\"'") for text in fields)


def _locate_bad_field(text: str, shown: str, delimiter: str | None,
                      skip: set[int] = frozenset()) -> None:
    """Find the first field numpy could not read, to say where it is (the message and
    the quoted frame name the file's own line number)."""
    width = None
    for index, line in enumerate(text.splitlines()):
        number = index + 1
        content = line.split("#", 1)[0]
        if index in skip or not content.strip():
            continue
        fields = _fields(content, delimiter)
        for col, field in fields:
            if not is_number_text(field):
                raise InputError(f"{shown}, line {number}: {field!r} is not a number",
                                 source=text, line=number, col=col,
                                 width=max(1, len(field))) from None
        if width is not None and len(fields) != width:
            raise InputError(f"{shown}, line {number}: {len(fields)} values, but earlier lines "
                             f"have {width}", source=text, line=number, col=0,
                             width=max(1, len(content.rstrip()))) from None
        width = len(fields)


# ---------------------------------------------------------------------------------------
# The ordered collection
# ---------------------------------------------------------------------------------------
def with_option_label(label: str, work: Callable, *args):
    """``work(*args)``, with the option (``--arg x``) named in any error it raises."""
    try:
        return work(*args)
    except GradcliError as err:
        if not err.message.startswith(label + ":"):
            err.message = f"{label}: {err.message}"
            err.args = (err.message,)
        raise


class Declarations:
    """Declared names in order, each with a kind and a float64 value.

    >>> d = Declarations()
    >>> d.add("arg", "x", "linspace(0, 1, 3)").value
    array([0. , 0.5, 1. ])
    """

    def __init__(self, items: Iterable[Declaration] = ()) -> None:
        self._items: list[Declaration] = []
        for item in items:
            self._append(item)

    @classmethod
    def from_options(cls, var: Iterable[str] = (), frozen: Iterable[str] = (),
                     arg: Iterable[str] = ()) -> Declarations:
        """From command-line options, each ``NAME=VALUE``: variables, then frozen
        variables, then arguments (each group in the order given)."""
        decls = cls()
        for kind, options in (("var", var), ("frozen", frozen), ("arg", arg)):
            for option in options or ():
                decls.add_option(kind, option)
        return decls

    def add_option(self, kind: str, option: str) -> Declaration:
        """Add one ``NAME=VALUE`` option of the given kind, or a bare ``NAME``: a name
        declared without a value, which a batch source (``--at``) sets for every row
        (reading its value without one is an ``InputError`` that says so)."""
        if isinstance(option, str) and "=" not in option and option.strip():
            return self.add(kind, option.strip(), None)
        name, value = parse_declaration(option)
        return self.add(kind, name, value)

    def add(self, kind: str, name: str, value: Any) -> Declaration:
        """Declare ``name``: ``value`` is expression text, ``@path``, a number/array, or
        None (no value: ``--at`` gives one per row)."""
        if kind not in KINDS:
            raise InputError(f"unknown declaration kind {kind!r}; use one of "
                             f"{', '.join(KINDS)}")
        check_name(name)
        label = f"{KINDS[kind]} {name}"
        if value is None:
            declaration = Declaration(kind, name, None, "")
        elif isinstance(value, str):
            load = with_option_label(label, prepare_value, value)
            declaration = Declaration(kind, name, None, value,
                                      load=lambda: with_option_label(label, load))
        else:
            try:
                array = _numbers(value, label)
            except (TypeError, ValueError):
                raise InputError(f"{label}: not an array of numbers") from None
            declaration = Declaration(kind, name, array, "")
        return self._append(declaration)

    def _append(self, item: Declaration) -> Declaration:
        for other in self._items:
            if other.name == item.name:
                raise InputError(f"'{item.name}' is declared twice (as {KINDS[other.kind]} and "
                                 f"{KINDS[item.kind]})")
        self._items.append(item)
        return item

    def __iter__(self) -> Iterator[Declaration]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return any(item.name == name for item in self._items)

    def __getitem__(self, name: str) -> Declaration:
        for item in self._items:
            if item.name == name:
                return item
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [item.name for item in self._items]

    def of_kind(self, kind: str) -> list[Declaration]:
        """The declarations of one kind, in order."""
        return [item for item in self._items if item.kind == kind]

    def __repr__(self) -> str:
        return "Declarations(" + ", ".join(f"{KINDS[i.kind]} {i.name}" for i in self._items) + ")"
