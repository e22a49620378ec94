"""The ``--at`` writers: one per output format, behind one interface (``base.Writer``).

``WRITERS`` maps a format (``--json``/.jsonl, ``--plain``/.txt, ``--csv``/.csv, .npz) to
its writer; the human table is the CLI's own (cli/batch.py ``HumanWriter``, on the same
interface). A new format is one module here and one entry in ``WRITERS``.
"""
from __future__ import annotations

from .base import Writer
from .csvtext import CsvWriter
from .jsonarray import JsonArrayFile
from .jsonl import JsonLinesWriter
from .npz import NpzOutput, NpzWriter
from .plain import PlainWriter

WRITERS = {"json": JsonLinesWriter, "plain": PlainWriter, "csv": CsvWriter, "npz": NpzWriter}

__all__ = ["WRITERS", "Writer", "CsvWriter", "JsonArrayFile", "JsonLinesWriter", "NpzOutput",
           "NpzWriter", "PlainWriter"]
