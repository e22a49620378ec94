"""The writers: one module per output format, each used by every command.

- ``json.py`` (``--json`` of one point: a result's ``Report`` as one JSON object) and
  ``jsonl.py`` (``--at``: a line per row); ``plain.py`` (``--plain``: one point's lines, and
  ``PlainWriter`` for ``--at``); ``page.py`` (the human page of one point: a result's
  ``Page``); ``csvtext.py``, ``npz.py``, ``jsonarray.py`` (``--at`` only). They read the
  neutral descriptions of io/report.py, never a run type.
- ``WRITERS`` maps an ``--at`` format (``--json``/.jsonl, ``--plain``/.txt, ``--csv``/.csv,
  .npz) to its writer, on one interface (``base.Writer``); the human table is the CLI's
  (cli/batch.py ``HumanWriter``, on the same interface).

A new format is one module here (and, for ``--at``, one entry in ``WRITERS``). The
modules are imported when first named (a single-point run loads only json.py or
plain.py, not the ``--at`` machinery).
"""
from __future__ import annotations

_WHERE = {"Writer": "base", "CsvWriter": "csvtext", "JsonArrayFile": "jsonarray",
          "JsonLinesWriter": "jsonl", "NpzOutput": "npz", "NpzWriter": "npz",
          "PlainWriter": "plain"}

__all__ = ["WRITERS", *_WHERE]


def __getattr__(name: str):
    from importlib import import_module
    if name == "WRITERS":
        value = {"json": __getattr__("JsonLinesWriter"), "plain": __getattr__("PlainWriter"),
                 "csv": __getattr__("CsvWriter"), "npz": __getattr__("NpzWriter")}
    elif name in _WHERE:
        value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
