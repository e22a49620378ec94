"""Numbers and arrays as JSON values, the one place both the output and the check use, and
the JSON text itself.

>>> json_value(np.array([1.0, np.inf, np.nan]))
[1.0, 'inf', 'nan']
>>> dumps({"value": 31.0, "gradients": [{"name": "w1", "gradient": [5.0, -0.0]}]})
'{"value": 31.0, "gradients": [{"name": "w1", "gradient": [5.0, -0.0]}]}'
"""
from __future__ import annotations

import math

import numpy as np


def json_number(x) -> float | str:
    """A float, or the strings "nan", "inf", "-inf" for non-finite numbers."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def json_value(value):
    """None stays None; booleans stay booleans; numbers as json_number; arrays as nested
    lists of those."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        return arr.tolist()
    if arr.ndim == 0:
        return json_number(arr)
    return [json_value(row) for row in arr]


# ---------------------------------------------------------------------------------------
# The text: json.dumps's, without importing json (2 ms and five regular expressions at
# every ``--json`` start, issue 14) for the types the output holds
# ---------------------------------------------------------------------------------------
class _Unusual(Exception):
    """A value outside the writer's types: the json module decides (and raises)."""


# What json.dumps escapes in a string with ensure_ascii=True (its default), ASCII part:
# the controls and DEL (everything outside " " to "~"), the quote and the backslash.
_ESCAPES = {**{code: f"\\u{code:04x}" for code in (*range(0x20), 0x7F)},
            0x22: '\\"', 0x5C: "\\\\", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f",
            0x0D: "\\r"}


def _non_ascii(ch: str) -> str:
    code = ord(ch)
    if code < 0x80:
        return ch
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as json writes it
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def _string(s: str) -> str:
    s = s.translate(_ESCAPES)
    if not s.isascii():
        s = "".join(map(_non_ascii, s))
    return f'"{s}"'


def _float(x: float, allow_nan: bool) -> str:
    if x != x or x in (math.inf, -math.inf):
        if not allow_nan:
            raise _Unusual  # json's ValueError, with its message
        return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
    return float.__repr__(x)  # float's repr also for subclasses (numpy.float64), as json


def _text(obj, allow_nan: bool) -> str:
    # The order of json's C encoder: True and False before int (bool is an int).
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, str):
        return _string(obj)
    if isinstance(obj, int):
        return int.__repr__(obj)
    if isinstance(obj, float):
        return _float(obj, allow_nan)
    if isinstance(obj, (list, tuple)):
        if all(type(item) is float for item in obj):  # a row of numbers: most of a big output
            row = ", ".join(map(float.__repr__, obj))
            if "n" not in row:  # no nan, inf, -inf: the digits of finite floats have no "n"
                return f"[{row}]"
        return "[" + ", ".join([_text(item, allow_nan) for item in obj]) + "]"
    if isinstance(obj, dict):
        parts = []
        for key, item in obj.items():
            if not isinstance(key, str):
                raise _Unusual  # json turns numbers, booleans and None into key strings
            parts.append(f"{_string(key)}: {_text(item, allow_nan)}")
        return "{" + ", ".join(parts) + "}"
    raise _Unusual


def dumps(obj, *, allow_nan: bool = True) -> str:
    """``json.dumps(obj, allow_nan=allow_nan)``, the same text, with the default options
    (ASCII output, separators ", " and ": "). None, booleans, strings, ints, floats, lists,
    tuples and dicts with string keys are written here; anything else (other keys or types,
    non-finite floats when ``allow_nan`` is false, cycles) goes to the json module, which
    writes it or raises its own error."""
    try:
        return _text(obj, allow_nan)
    except (_Unusual, RecursionError):
        import json
        return json.dumps(obj, allow_nan=allow_nan)
