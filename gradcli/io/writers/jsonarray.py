"""``--output PATH.json`` with ``--at``: the JSON Lines rows as one JSON array."""
from __future__ import annotations


class JsonArrayFile:
    """``--output PATH.json``: one JSON document, an array whose elements are the JSON
    Lines writer's lines (the rows, then ``{"check": ...}``), so that ``json.load``
    reads the file; the commit closes the array. Every write is whole lines, and a line
    holds no raw newline (JSON escapes them in strings)."""

    def __init__(self, out):
        self.out = out
        self.started = self.closed = False

    def write(self, text: str) -> None:
        if text:
            self.out.write((",\n" if self.started else "[\n") +
                           text[:-1].replace("\n", ",\n"))
            self.started = True

    def flush(self) -> None:
        self.out.flush()

    def commit(self) -> None:
        if not self.closed:
            self.closed = True
            self.out.write("\n]\n" if self.started else "[]\n")
        self.out.commit()

    def discard(self) -> None:
        self.out.discard()
