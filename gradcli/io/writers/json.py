"""``--json`` of one point: a result's ``Report`` (io/report.py) as one JSON object on one
line, its ``Numbers`` as nested lists (``text.json_array``: each number the one rule's
text). The ``--at`` form of the same object is ``jsonl.py``'s, a line per row."""
from __future__ import annotations

import sys

from ..report import Numbers, Report


def as_json(report: Report) -> dict:
    """The report's fields as a JSON object (arrays as nested lists)."""
    return _value(report.fields)


def _value(value):
    if isinstance(value, Numbers):
        from ..text import json_array
        return json_array(value.array)
    if isinstance(value, dict):
        return {key: _value(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def write_json(obj, file=None) -> None:
    """One JSON object on one line (json.dumps's text without importing json, issue 14)."""
    from .. import jsonvalue
    jsonvalue.write_line(obj, file or sys.stdout)


def write(report: Report, file=None) -> None:
    """``--json``: the report on one line."""
    write_json(as_json(report), file)
