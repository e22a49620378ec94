"""Central differences in plain numpy: the independent truth of the gradient tests that
need one for a numpy function (never gradcli's own check code)."""
from __future__ import annotations

import numpy as np


def numpy_gradient(f, x, h=1e-6):
    """Central differences of the scalar numpy function f at x."""
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out
