"""Numbers and arrays as JSON values, the one place both the output and the check use.

>>> json_value(np.array([1.0, np.inf, np.nan]))
[1.0, 'inf', 'nan']
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
