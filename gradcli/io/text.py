"""Numbers as text, the one rule every output follows (docs/output.md): the shortest text
that reads back to the same value in the value's own dtype, or with ``--precision N``
exactly N significant digits at most; arrays element by element with it (``array_text``:
nested brackets, a large array summarised; ``flat_text``: one line; ``json_array``: JSON's
nested lists), never with numpy's fixed decimals. Every writer (io/writers/) and the
human output use these.
"""
from __future__ import annotations

from itertools import repeat

import numpy as np

from .jsonvalue import json_value as _json_value, unsigned_zero

#: Arrays with more elements than this are summarised in human and plain output
#: (numpy's own print threshold); ``--json`` always carries every number.
SUMMARY_THRESHOLD = 1000
#: Elements shown at each end of a summarised axis.
EDGE_ITEMS = 3
#: A summary showing more numbers than this (many short axes, which numpy never elides)
#: shows the first and last elements of the flattened array instead.
SUMMARY_MAX = 300


# ---------------------------------------------------------------------------------------
# Numbers: the one rule
# ---------------------------------------------------------------------------------------
def number_text(x, precision: int | None = None) -> str:
    """One number as every output prints it.

    Default: the shortest text that reads back to the same value in the value's own
    dtype (``repr`` of a float64; numpy's shortest repr of a float32). With
    ``precision=N``: at most N significant digits (``format(x, ".Ng")``).
    Non-finite numbers are ``nan``, ``inf``, ``-inf``; booleans ``True``/``False``; a
    zero is ``0.0`` (``0``), never ``-0.0`` (``x + 0.0``; docs/output.md: "A zero prints as").

    >>> number_text(0.1), number_text(np.float32(2.957324266433716)), number_text(2.9573, 2)
    ('0.1', '2.9573243', '3')
    >>> number_text(-0.0), number_text(-0.0, 3), number_text(np.float32(-0.0))
    ('0.0', '0', '0.0')
    """
    if isinstance(x, (bool, np.bool_)):
        return "True" if x else "False"
    if precision is not None:
        return format(float(x) + 0.0, f".{precision}g")
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, np.floating) and x.dtype != np.float64:
        # numpy: the shortest decimal that reads back in this dtype
        return "0.0" if float(x) == 0 else str(x)
    return repr(float(x) + 0.0)


def number_texts(value, precision: int | None = None) -> list[str]:
    """:func:`number_text` of each element of an array, in C order (flattened), at C
    speed: the same texts, without a Python call per element where a C path gives them.

    float64 (and integers, booleans, and any dtype with ``precision``) go through
    ``tolist`` and ``map`` of ``float.__repr__`` / ``format`` / ``str`` (C loops). float32
    and float16 texts are numpy's shortest float32 (float16) decimal (numpy's scalar
    ``str``), made by numpy's vectorised cast to text (Dragon4, about 0.45 us per number,
    as fast as it gets for that rule; measured in the commit). Other dtypes: element by
    element.

    >>> number_texts(np.array([[0.1, -0.0], [np.nan, -np.inf]]))
    ['0.1', '0.0', 'nan', '-inf']
    >>> number_texts(np.array([2.957324266433716], np.float32)), number_texts([2.9573], 2)
    (['2.9573243'], ['3'])
    """
    arr = np.asarray(value).reshape(-1)
    return _texts_of_flat(arr, precision)


def number_texts_rows(value, precision: int | None = None) -> list[list[str]]:
    """:func:`number_text` of each element of a 2-d array (rows of points, say), row by
    row: ``number_texts_rows(a)[i][j] == number_text(a[i, j])``, at the speed of
    :func:`number_texts` (one C pass over the whole array, then split into rows). For CSV
    and plain lines of many points.

    >>> number_texts_rows(np.array([[1.0, 0.5], [np.inf, 3.0]]))
    [['1.0', '0.5'], ['inf', '3.0']]
    """
    arr = np.asarray(value)
    if arr.ndim != 2:
        raise ValueError(f"number_texts_rows takes a 2-d array, not {arr.ndim}-d")
    flat = _texts_of_flat(arr.reshape(-1), precision)
    width = arr.shape[1]
    return [flat[k:k + width] for k in range(0, len(flat), width)] if width else \
        [[] for _ in range(arr.shape[0])]


def _texts_of_flat(arr: np.ndarray, precision: int | None) -> list[str]:
    kind = arr.dtype.kind
    if kind == "b":
        return np.where(arr, "True", "False").tolist()
    arr = unsigned_zero(arr)  # -0.0 prints 0.0 (one pass in C, a copy of a float array)
    if precision is not None:
        if kind in "fiu":  # format(float(x), ".Ng"): float(x) is the float64 cast
            return list(map(format, arr.astype(np.float64, copy=False).tolist(),
                            repeat(f".{precision}g", arr.size)))
    elif kind == "f" and arr.dtype.itemsize == 8:
        return list(map(float.__repr__, arr.tolist()))  # repr(float(x)), nan and inf too
    elif kind in "iu":
        return list(map(int.__repr__, arr.tolist()))  # str(int(x))
    elif kind == "f" and arr.dtype.itemsize < 8:
        # numpy's str of a float32/float16 scalar, cast in C (the texts are ASCII)
        return arr.astype("S32").astype("U32").tolist()
    return [number_text(v, precision) for v in arr]


def _kept_indices(shape: tuple) -> list[tuple[list[int], int | None]] | None:
    """Per axis, the indices a summary shows and where its ``...`` goes (None: the whole
    axis); None when the summary would still show more than ``SUMMARY_MAX`` numbers."""
    axes, count = [], 1
    for n in shape:
        if n > 2 * EDGE_ITEMS:
            axes.append((list(range(EDGE_ITEMS)) + list(range(n - EDGE_ITEMS, n)), EDGE_ITEMS))
        else:
            axes.append((list(range(n)), None))
        count *= len(axes[-1][0])
    return axes if count <= SUMMARY_MAX else None


def array_text(value, precision: int | None = None) -> str:
    """A value as text: a number, or an array in nested brackets with one number format
    and columns aligned; a large array summarised with ``...``.

    >>> print(array_text(np.array([[1.0, 2.5], [3.0, -4.0]])))
    [[ 1.0,  2.5],
     [ 3.0, -4.0]]
    """
    if value is None:
        return "None"
    arr = np.asarray(value)
    if arr.ndim == 0:
        return number_text(arr[()], precision)
    axes = None
    if arr.size > SUMMARY_THRESHOLD:
        axes = _kept_indices(arr.shape)
        if axes is None:  # many short axes: numpy would print them all
            flat = arr.reshape(-1)
            ends = np.concatenate([flat[:EDGE_ITEMS], flat[-EDGE_ITEMS:]])
            texts = number_texts(ends, precision)
            return ("[" + ", ".join(texts[:EDGE_ITEMS] + ["..."] + texts[EDGE_ITEMS:])
                    + f"] (flattened: the first and last of {arr.size} elements)")
        arr = arr[np.ix_(*[kept for kept, _ in axes])]
    texts = number_texts(arr, precision)
    width = max((len(t) for t in texts), default=0)
    cells = np.array([t.rjust(width) for t in texts] or [""], dtype=object)[:arr.size]
    gaps = [gap for _, gap in axes] if axes is not None else [None] * arr.ndim
    return _nested(cells.reshape(arr.shape), gaps, 0)


def _nested(cells: np.ndarray, gaps: list, depth: int) -> str:
    """numpy's layout: rows of the last axis, one blank line more per outer axis."""
    if cells.ndim == 1:
        items = list(cells)
    else:
        items = [_nested(cells[i], gaps, depth + 1) for i in range(cells.shape[0])]
    if gaps[depth] is not None:
        items.insert(gaps[depth], "...")
    if cells.ndim == 1:
        return "[" + ", ".join(items) + "]"
    separator = ",\n" + "\n" * (cells.ndim - 2) + " " * (depth + 1)
    return "[" + separator.join(items) + "]"


def summarised(value) -> bool:
    """Whether plain and human output shorten ``value`` to its ends."""
    return value is not None and np.size(value) > SUMMARY_THRESHOLD


# ---------------------------------------------------------------------------------------
# One line, and JSON
# ---------------------------------------------------------------------------------------
def flat_text(value, precision: int | None) -> str:
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int8)
    if arr.size > SUMMARY_THRESHOLD:
        flat = arr.reshape(-1)
        head = number_texts(flat[:EDGE_ITEMS], precision)
        return " ".join(head + ["..."] + number_texts(flat[-EDGE_ITEMS:], precision))
    return " ".join(number_texts(arr, precision))


def json_array(value):
    """A value as JSON: nested lists of numbers, non-finite numbers as strings. Every
    number is the one rule's default text (a float32 as its shortest float32 decimal),
    in time linear in the size."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        # the float64 that prints as the float32's shortest decimal: numpy writes and
        # parses it in C (bytes: a third faster than str, the same ASCII text)
        arr = arr.astype("S32" if arr.dtype.itemsize < 8 else str).astype(np.float64)
    return _json_value(arr)  # tolist of the float64s, non-finite ones by a mask: in C
