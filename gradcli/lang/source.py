"""Where a program's text comes from: the argument itself, ``-`` (standard input) or
``@path`` (a file), read with the same length limit as typed text."""
from __future__ import annotations

import os
import sys

from ..errors import InputError, LimitError
from .limits import MAX_PROGRAM_CHARS


def read_program(argument: str, stdin=None) -> str:
    """The program text named by a command-line argument.

    >>> read_program("x * x")
    'x * x'
    """
    if argument == "-":
        stream = stdin if stdin is not None else sys.stdin
        if stream is None:
            raise InputError("the program is '-' but there is no standard input")
        try:
            text = stream.read(MAX_PROGRAM_CHARS + 1)
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"cannot read the program from standard input: {err}") from None
        return _checked(text, "standard input")
    if argument.startswith("@"):
        return _checked(_read_file(argument[1:]), argument[1:])
    return argument


def _read_file(path: str) -> str:
    if not path:
        raise InputError("'@' must be followed by a file name, e.g. @program.grad")
    if not os.path.exists(path):
        raise InputError(f"no such file: {path}")
    if os.path.isdir(path):
        raise InputError(f"{path} is a directory, not a program file")
    try:
        size = os.path.getsize(path)
        if size > 4 * MAX_PROGRAM_CHARS:
            raise LimitError(f"{path} is {size:,} bytes, over the program length limit "
                             f"({MAX_PROGRAM_CHARS:,} characters)")
        with open(path, "rb") as handle:
            data = handle.read(4 * MAX_PROGRAM_CHARS + 1)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None


def _checked(text: str, where: str) -> str:
    # A byte order mark (as Notepad writes) is not part of the program: dropped, as the
    # data files drop it.
    if text.startswith("\ufeff"):
        text = text[1:]
    if len(text) > MAX_PROGRAM_CHARS:
        raise LimitError(f"the program in {where} is over the program length limit "
                         f"({MAX_PROGRAM_CHARS:,} characters)")
    return text
