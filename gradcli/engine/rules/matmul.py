"""The matrix products every start needs (the ``@`` operator): ``matmul`` and ``dot``.
The rest of linear algebra is ``linalg.py``, loaded on demand.
"""
from __future__ import annotations

import numpy as np

from ..core.derive import entry
from ..core.tensor import shape_of


def swap_last(m, a):
    nd = len(shape_of(a))
    if nd == 2:
        return m.transpose(a)
    return m.transpose(a, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _matmul_vjp_x(m, g, ans, x, y):
    xs, ys = shape_of(x), shape_of(y)
    if len(xs) == 1 and len(ys) == 1:
        return g * y
    if len(ys) == 1:                    # (..., m, n) @ (n,) -> (..., m)
        return m.reshape(g, shape=shape_of(g) + (1,)) * y
    if len(xs) == 1:                    # (n,) @ (..., n, k) -> (..., k)
        col = m.matmul(y, m.reshape(g, shape=shape_of(g) + (1,)))
        return m.reshape(col, shape=shape_of(col)[:-1])
    return m.matmul(g, swap_last(m, y))


def _matmul_vjp_y(m, g, ans, x, y):
    xs, ys = shape_of(x), shape_of(y)
    if len(xs) == 1 and len(ys) == 1:
        return g * x
    if len(ys) == 1:
        col = m.matmul(swap_last(m, x), m.reshape(g, shape=shape_of(g) + (1,)))
        return m.reshape(col, shape=shape_of(col)[:-1])
    if len(xs) == 1:
        gs = shape_of(g)
        return m.reshape(x, shape=(xs[0], 1)) * m.reshape(g, shape=gs[:-1] + (1,) + gs[-1:])
    return m.matmul(swap_last(m, x), g)


def _dot(x, y):
    if np.ndim(x) > 2 or np.ndim(y) > 2:
        raise ValueError("dot takes arrays of at most 2 dimensions; use matmul (@) for batches")
    return np.dot(x, y)


def _dot_vjp(which):
    def vjp(m, g, ans, x, y):
        if len(shape_of(x)) == 0 or len(shape_of(y)) == 0:
            other = y if which == 0 else x
            return g * other
        return (_matmul_vjp_x if which == 0 else _matmul_vjp_y)(m, g, ans, x, y)
    return vjp


MATMUL = entry(name="matmul", listed_after="power", forward=np.matmul,
               vjps=(_matmul_vjp_x, _matmul_vjp_y),
               jvps=(lambda m, t, ans, x, y: m.matmul(t, y),
                           lambda m, t, ans, x, y: m.matmul(x, t)),
               inputs=("x", "y"), kind="linalg", saves="inputs",
               doc="matrix product x @ y (batched, numpy rules)", derivative="g @ y^T, x^T @ g",
               sympy=lambda sp, x, y: np.matmul(x, y), batch="matmul")


# Linear algebra and shape
entry(name="dot", forward=_dot, vjps=(_dot_vjp(0), _dot_vjp(1)),
      jvps=(lambda m, t, ans, x, y: m.dot(t, y), lambda m, t, ans, x, y: m.dot(x, t)),
      inputs=("x", "y"), kind="linalg", saves="inputs",
      doc="dot product (vectors, matrices; at most 2-D)", derivative="as matmul",
      sympy=lambda sp, x, y: np.dot(x, y), batch="dot")
