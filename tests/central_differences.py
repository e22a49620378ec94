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


def numeric_hessian(f, z, h=1e-4):
    """Central second differences of the scalar numpy function f at z (of any shape),
    as a (size, size) matrix."""
    z = np.asarray(z, dtype=float)
    n = z.size
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i = (np.eye(n)[i] * h).reshape(z.shape)
            e_j = (np.eye(n)[j] * h).reshape(z.shape)
            out[i, j] = (f(z + e_i + e_j) - f(z + e_i - e_j) - f(z - e_i + e_j)
                         + f(z - e_i - e_j)) / (4 * h * h)
    return out
