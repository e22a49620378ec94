"""Declarations from outside the program: ``--var``, ``--frozen`` and ``--arg`` values.

A value is a constant expression of the language (``2``, ``[1, 2]``, ``linspace(0, 1, 5)``,
``-pi/2``), parsed by the same parser and evaluated on the engine, or ``@path`` to a
``.npy`` (read with ``allow_pickle=False``), ``.csv`` (comma-separated) or ``.txt``
(whitespace-separated) file. Every value becomes a float64 numpy array at once; ``build``
converts it to the requested dtype.

>>> decls = Declarations.from_options(var=["w1=2"], arg=["x1=5", "x2=[1, 2]"])
>>> [(d.kind, d.name, d.value.tolist()) for d in decls]
[('var', 'w1', 2.0), ('arg', 'x1', 5.0), ('arg', 'x2', [1.0, 2.0])]
"""
from __future__ import annotations

import keyword
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import GradcliError, InputError, LimitError
from . import limits
from .parser import DECLARE_NAMES, parse_expression, registry

__all__ = [
    "KINDS",
    "Declaration",
    "Declarations",
    "check_name",
    "load_file",
    "load_value",
    "parse_declaration",
]

#: The kinds of declaration, with the option that makes each.
KINDS = {"var": "--var", "frozen": "--frozen", "arg": "--arg"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Declaration:
    """One declared name: ``kind`` is "var" (trainable variable), "frozen" (variable with
    ``trainable=False``) or "arg" (a function argument); ``value`` a float64 array.
    (A plain class: the command line defines it at every start.)"""
    __slots__ = ("kind", "name", "value", "text")

    def __init__(self, kind: str, name: str, value: np.ndarray, text: str = ""):
        self.kind, self.name, self.value, self.text = kind, name, value, text

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
    from .evaluate import evaluate_constant
    if not isinstance(text, str):
        raise InputError(f"a value must be text, not {type(text).__name__}")
    stripped = text.strip()
    if stripped.startswith("@"):
        return load_file(stripped[1:])
    value = evaluate_constant(parse_expression(text), text)
    return _numbers(value, "the value")


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
    shown = path
    path = os.path.expanduser(path)
    extension = os.path.splitext(path)[1].lower()
    if extension not in (".npy", ".csv", ".txt"):
        raise InputError(f"{shown}: unsupported file type {extension or '(none)'!r}; "
                         "use .npy, .csv or .txt")
    try:
        info = os.stat(path)
    except OSError as err:
        raise InputError(f"{shown}: cannot read file ({err.strerror or err})") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{shown}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        # Pipes and devices could block forever or never end.
        raise InputError(f"{shown}: not a regular file")
    if info.st_size > limits.MAX_FILE_BYTES:
        raise LimitError(f"{shown}: file has {info.st_size:,} bytes, over the file size limit "
                         f"({limits.MAX_FILE_BYTES:,} bytes)")
    try:
        if extension == ".npy":
            return _load_npy(path, shown)
        return _load_text(path, shown, "," if extension == ".csv" else None)
    except GradcliError:
        raise
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as err:
        raise InputError(f"{shown}: cannot read file ({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None


def _load_npy(path: str, shown: str) -> np.ndarray:
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
    try:
        value = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise InputError(f"{shown}: cannot load ({err})") from None
    return _numbers(value, shown)


def _load_text(path: str, shown: str, delimiter: str | None) -> np.ndarray:
    with open(path, "r", encoding="utf-8", errors="strict") as f:
        text = f.read(limits.MAX_FILE_BYTES + 1)
    if not any(line.split("#", 1)[0].strip() for line in text.splitlines()):
        raise InputError(f"{shown}: the file holds no numbers")
    try:
        value = np.loadtxt(text.splitlines(), delimiter=delimiter, dtype=np.float64, ndmin=0)
    except ValueError:
        _locate_bad_field(text, shown, delimiter)
        raise
    return _numbers(value, shown)


def _locate_bad_field(text: str, shown: str, delimiter: str | None) -> None:
    """Find the first field numpy could not read, to say where it is."""
    width = None
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0]
        if not content.strip():
            continue
        fields = content.split(delimiter)
        for field_text in fields:
            try:
                float(field_text)
            except ValueError:
                col = line.find(field_text.strip()) if field_text.strip() else 0
                raise InputError(f"{shown}, line {number}: {field_text.strip()!r} is not a "
                                 "number", source=line, line=1, col=max(0, col),
                                 width=max(1, len(field_text.strip()))) from None
        if width is not None and len(fields) != width:
            raise InputError(f"{shown}, line {number}: {len(fields)} values, but earlier lines "
                             f"have {width}")
        width = len(fields)


# ---------------------------------------------------------------------------------------
# The ordered collection
# ---------------------------------------------------------------------------------------
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
        """Add one ``NAME=VALUE`` option of the given kind."""
        name, value = parse_declaration(option)
        return self.add(kind, name, value)

    def add(self, kind: str, name: str, value: Any) -> Declaration:
        """Declare ``name``: ``value`` is expression text, ``@path``, or a number/array."""
        if kind not in KINDS:
            raise InputError(f"unknown declaration kind {kind!r}; use one of "
                             f"{', '.join(KINDS)}")
        check_name(name)
        label = f"{KINDS[kind]} {name}"
        if isinstance(value, str):
            try:
                array = load_value(value)
            except GradcliError as err:
                err.message = f"{label}: {err.message}"
                err.args = (err.message,)
                raise
            text = value
        else:
            try:
                array = _numbers(value, label)
            except (TypeError, ValueError):
                raise InputError(f"{label}: not an array of numbers") from None
            text = ""
        return self._append(Declaration(kind, name, array, text))

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
