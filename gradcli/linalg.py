"""``gc.linalg``: the linear algebra entries of the function table under numpy.linalg's
names and signatures (the same functions as ``gc.inv``, ``gc.eigh``, ...).

Where numpy.linalg's signature differs from the table's, this module follows numpy:
``norm(x, ord=None, axis=None, keepdims=False)`` takes ``ord`` second (``gc.norm`` keeps
its earlier order ``norm(x, axis, keepdims, ord)``), and ``trace``/``diagonal`` work on the
last two axes as ``numpy.linalg.trace``/``diagonal`` do (``gc.trace`` is ``numpy.trace``,
axes 0 and 1).

>>> import gradcli as gc
>>> round(float(gc.linalg.det([[2.0, 1.0], [1.0, 3.0]])), 12)
5.0
>>> sign, logdet = gc.linalg.slogdet([[2.0, 1.0], [1.0, 3.0]])
>>> float(sign)
1.0
"""
from __future__ import annotations

from .engine.core.recording import FUNCTIONS as _F

__all__ = ["inv", "solve", "det", "slogdet", "cholesky", "eigh", "svd", "pinv", "norm",
           "trace", "diagonal", "outer", "cross", "tensordot", "matmul", "einsum"]

inv = _F["inv"]
solve = _F["solve"]
det = _F["det"]
slogdet = _F["slogdet"]
cholesky = _F["cholesky"]
eigh = _F["eigh"]
svd = _F["svd"]
pinv = _F["pinv"]
outer = _F["outer"]
cross = _F["cross"]
tensordot = _F["tensordot"]
matmul = _F["matmul"]
einsum = _F["einsum"]


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (numpy's name)
    """numpy.linalg.norm: vector norms over one axis, matrix norms over two (``ord`` 1,
    -1, 2, -2, inf, -inf, 'fro', 'nuc'), Frobenius of the whole array by default.

    >>> import gradcli as gc
    >>> float(gc.linalg.norm([[1.0, -2.0], [3.0, 4.0]], 1))
    6.0
    """
    return _F["norm"](x, axis=axis, keepdims=keepdims, ord=ord)


def trace(x, offset=0):
    """numpy.linalg.trace: the trace of each matrix of the last two axes."""
    return _F["trace"](x, offset=offset, axis1=-2, axis2=-1)


def diagonal(x, offset=0):
    """numpy.linalg.diagonal: the diagonal of each matrix of the last two axes."""
    return _F["diagonal"](x, offset=offset, axis1=-2, axis2=-1)
