"""One error hierarchy for everything a user can get wrong.

Every error carries what the command line needs to print a caret under the place:
the source text, a 1-based line, a 0-based column and the width of the span. The
CLI turns any ``GradcliError`` into exit code 2 with ``err.render()`` on stderr.

>>> err = UnknownNameError("unknown function 'tnah' (did you mean 'tanh'?)",
...                        source="tnah(x) * 2", line=1, col=0, width=4)
>>> print(err.render())
error: unknown function 'tnah' (did you mean 'tanh'?)
  1 | tnah(x) * 2
    | ^^^^
"""
from __future__ import annotations


def did_you_mean(name: str, candidates) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string.

    >>> did_you_mean("tnah", ["sin", "tanh"])
    " (did you mean 'tanh'?)"
    """
    import difflib  # only on an error: difflib is not on the start-up path

    guess = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{guess[0]}'?)" if guess else ""


def shown_path(path: str) -> str:
    """A file name as messages show it: bytes that are not UTF-8 (which Python carries
    in a name as lone surrogates) as ``\\xNN``, so that printing a message, or writing
    it to a UTF-8 file, never fails.

    >>> shown_path("p\\udcff.csv")
    'p\\\\xff.csv'
    """
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # (a surrogate that no byte made)
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


class GradcliError(Exception):
    """Base of every error gradcli reports to a user (exit code 2 on the command line)."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 col: int | None = None, width: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.col = col
        self.width = max(1, width)

    def at(self, source: str | None, line: int | None, col: int | None, width: int = 1):
        """Attach a position unless one is already known; returns self for ``raise e.at(...)``."""
        if self.line is None and line is not None:
            self.source, self.line, self.col, self.width = source, line, col, max(1, width)
        return self

    def render(self) -> str:
        text = f"error: {shown_path(self.message)}"
        if self.source is None or self.line is None:
            return text
        lines = self.source.splitlines() or [""]
        if not 1 <= self.line <= len(lines):
            return text
        src_line = lines[self.line - 1]
        # Long lines are cut around the caret so a 200,000-character program prints one screen.
        col = self.col or 0
        start = max(0, col - 60)
        shown = src_line[start:start + 120]
        prefix = "..." if start > 0 else ""
        suffix = "..." if start + 120 < len(src_line) else ""
        width = max(1, min(self.width, len(shown) - (col - start) if shown else 1))
        gutter = str(self.line)
        caret_pad = " " * (len(prefix) + col - start)
        return (f"{text}\n  {gutter} | {prefix}{shown}{suffix}\n"
                f"  {' ' * len(gutter)} | {caret_pad}{'^' * width}")

    def __str__(self) -> str:
        return self.message


class ParseError(GradcliError):
    """Text that is not a program of the language (syntax, unsupported constructs)."""


class UnknownNameError(GradcliError):
    """An unknown function, keyword, or an undeclared name."""


class ArgumentError(GradcliError):
    """A call with the wrong number, kind or keywords of arguments."""


class ShapeError(GradcliError, ValueError):
    """Shapes that do not fit an operation; the message names the operation and both shapes."""


class LimitError(GradcliError):
    """An input beyond one of the safety limits; the message names the limit and its value."""


class ChunkTooLarge(LimitError):
    """Rows computed at once (``--at``'s chunk) that together go over the limits of one
    evaluation: ``--at`` computes them in smaller pieces instead (never the user's error:
    a single row is held to the single-point limits)."""


class InputError(GradcliError):
    """A bad declaration, option value or file (missing, unreadable, pickled, not numbers)."""


class ModeError(GradcliError):
    """What the chosen gradient API refuses, e.g. implicit_gradients on a program that
    reads no trainable variable (TensorFlow's ValueError, as a user error)."""
