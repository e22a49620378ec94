"""Numbers and arrays as JSON values, the one place both the output and the check use, and
the JSON text itself.

>>> json_value(np.array([1.0, np.inf, np.nan]))
[1.0, 'inf', 'nan']
>>> dumps({"value": 31.0, "gradients": [{"name": "w1", "gradient": [5.0, -0.0]}]})
'{"value": 31.0, "gradients": [{"name": "w1", "gradient": [5.0, -0.0]}]}'

Speed (issue 12, item 7): an array's numbers are converted and written by numpy's and
Python's C code, not element by element in Python. :func:`json_value` turns a numeric array
into a :class:`NumberList` with ``tolist`` (non-finite elements replaced by their strings
with a vectorised mask), and :func:`dumps` writes a ``NumberList`` as its ``repr``, which
for lists of floats and strings is JSON's text but for the quotes. What remains is
Python's shortest float text itself (``float.__repr__``, about 0.45 us per number).
"""
from __future__ import annotations

import math

import numpy as np


def unsigned_zero(arr: np.ndarray) -> np.ndarray:
    """An array with -0.0 made 0.0 and everything else unchanged, in C: ``arr + 0`` in
    its own dtype (IEEE, rounding to nearest: -0.0 + 0.0 is 0.0). Integer and boolean
    arrays are returned as they are. Every text output prints numbers through this
    (docs/output.md: "A zero prints as 0.0"): a zero result is 0.0, whatever sign IEEE
    arithmetic left on it (``-x * 0``).

    >>> unsigned_zero(np.array([-0.0, -1.5, 0.0])).tolist()
    [0.0, -1.5, 0.0]
    """
    if arr.dtype.kind != "f":
        return arr
    with np.errstate(invalid="ignore"):  # (a signalling nan read from a file: still nan)
        return arr + arr.dtype.type(0)


def json_number(x) -> float | str:
    """A float, or the strings "nan", "inf", "-inf" for non-finite numbers; -0.0 is 0.0
    (:func:`unsigned_zero`)."""
    x = float(x) + 0.0
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


class NumberList(list):
    """The JSON value of a numeric array, as :func:`json_value` makes it: nested lists
    whose leaves are only finite ``float`` objects and the strings "nan", "inf", "-inf".

    It is a list (``==``, indexing, ``json.dumps`` work as for any list); what it adds is
    the promise about its leaves, which lets :func:`dumps` write it as its ``repr`` (C
    code) instead of number by number. Treat it as read-only: a leaf of another type put
    into it would be written by its ``repr``."""
    __slots__ = ()


def json_value(value):
    """None stays None; booleans stay booleans; numbers as json_number; arrays as nested
    lists of those (an integer or float array as a :class:`NumberList`, converted in C:
    ``tolist`` of its float64 values, -0.0 as 0.0, non-finite elements set by a mask)."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        return arr.tolist()
    if arr.ndim == 0:
        return json_number(arr)
    if arr.dtype.kind in "fiu":
        # float(x) of each element is its float64 cast (a float32 widened exactly)
        return number_list(unsigned_zero(arr.astype(np.float64, copy=False)))
    return [json_value(row) for row in arr]


def number_list(arr: np.ndarray) -> NumberList:
    """A float64 array (ndim >= 1) as the :class:`NumberList` of its values: finite
    numbers as floats, the others as "nan", "inf", "-inf" (:func:`json_number`'s
    spelling), in time linear in the size and at C speed for any mix of them."""
    finite = np.isfinite(arr)
    if finite.all():
        return NumberList(arr.tolist())
    leaves = arr.astype(object)  # Python floats, made in C
    leaves[np.isnan(arr)] = "nan"
    leaves[arr == math.inf] = "inf"
    leaves[arr == -math.inf] = "-inf"
    return NumberList(leaves.tolist())


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


_FLOAT = {float}


def _parts(obj, allow_nan: bool, out: list) -> None:
    """Append ``obj``'s JSON text to ``out`` in pieces (joined once at the end: an array's
    text of hundreds of megabytes is not copied again at every level of nesting)."""
    # The order of json's C encoder: True and False before int (bool is an int).
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(_string(obj))
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        out.append(_float(obj, allow_nan))
    elif type(obj) is NumberList:
        # repr of lists of floats and of "nan"-like strings: JSON's text once ' is "
        out.append(list.__repr__(obj).replace("'", '"'))
    elif isinstance(obj, (list, tuple)):
        if type(obj) is list and set(map(type, obj)) <= _FLOAT:  # a row of numbers
            row = list.__repr__(obj)  # float.__repr__ of each, ", " between: in C
            if "n" in row:  # nan, inf, -inf (the digits of finite floats have no "n")
                if not allow_nan:
                    raise _Unusual  # json's ValueError, with its message
                row = row.replace("nan", "NaN").replace("inf", "Infinity")
            out.append(row)
            return
        out.append("[")
        for k, item in enumerate(obj):
            if k:
                out.append(", ")
            _parts(item, allow_nan, out)
        out.append("]")
    elif isinstance(obj, dict):
        out.append("{")
        for k, (key, item) in enumerate(obj.items()):
            if not isinstance(key, str):
                raise _Unusual  # json turns numbers, booleans and None into key strings
            out.append(f"{', ' if k else ''}{_string(key)}: ")
            _parts(item, allow_nan, out)
        out.append("}")
    else:
        raise _Unusual


def dumps(obj, *, allow_nan: bool = True) -> str:
    """``json.dumps(obj, allow_nan=allow_nan)``, the same text, with the default options
    (ASCII output, separators ", " and ": "). None, booleans, strings, ints, floats, lists,
    tuples and dicts with string keys are written here; anything else (other keys or types,
    non-finite floats when ``allow_nan`` is false, cycles) goes to the json module, which
    writes it or raises its own error."""
    out: list = []
    try:
        _parts(obj, allow_nan, out)
    except (_Unusual, RecursionError):
        import json
        return json.dumps(obj, allow_nan=allow_nan)
    return "".join(out)


def write_line(obj, file, *, allow_nan: bool = False) -> None:
    """``dumps(obj, allow_nan=allow_nan)`` and a newline written to ``file``: one JSON
    object on one line (also one line of JSON Lines). Nothing is written when ``obj``
    cannot be written (the error is ``json.dumps``'s)."""
    file.write(dumps(obj, allow_nan=allow_nan))
    file.write("\n")
