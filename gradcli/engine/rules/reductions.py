"""Reductions over ``axis`` (with ``keepdims``): ``sum``, ``mean``, ``prod``, ``max``,
``min``, ``logsumexp``, ``softmax``, and the helpers the reductions of other modules share
(the reduced axes, the upstream gradient brought back to the input's shape, the scaling
that keeps norms' rules representable). A reduction's JVP is ``derive.reduction_jvp``
of its VJP; it batches by moving its axes past the batch axis (``batch="axis"``).
"""
from __future__ import annotations

import math

import numpy as np

from ..core.derive import entry
from ..core.recording import NP
from ..core.tensor import Tensor, shape_of
from .elementwise import gate


def reduced_axes(axis, ndim: int) -> tuple:
    if axis is None or not ndim:  # (a 0-d value has no axes: numpy's axis 0 is all of it)
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def _keep_shape(shape: tuple, axis) -> tuple:
    """The shape a reduction over ``axis`` has with keepdims=True."""
    axes = reduced_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_reduced(m, g, shape, axis, keepdims):
    """Broadcast a reduction's upstream gradient back to the input's shape."""
    if not keepdims and shape_of(g) != ():  # a scalar broadcasts as it is
        g = m.reshape(g, shape=_keep_shape(shape, axis))
    return m.broadcast_to(g, shape=shape)


def keep_reduced_axes(m, ans, shape, axis, keepdims):
    """The reduction's result reshaped so it broadcasts against the input."""
    return ans if keepdims else m.reshape(ans, shape=_keep_shape(shape, axis))


def reduced_count(shape, axis) -> int:
    return int(np.prod([shape[a] for a in reduced_axes(axis, len(shape))], dtype=np.int64))


def _max_vjp(m, g, ans, x, axis=None, keepdims=False):
    shape = shape_of(x)
    mask = x == keep_reduced_axes(m, ans, shape, axis, keepdims)
    # A tie splits the gradient equally between the tied inputs (sympy's Heaviside(0)=1/2).
    count = m.sum(mask * 1.0, axis=axis, keepdims=True)
    ge = expand_reduced(m, g, shape, axis, keepdims)
    return gate(m, mask, ge / count, ge)


def _prod_vjp(m, g, ans, x, axis=None, keepdims=False):
    shape = shape_of(x)
    raw = x._value if isinstance(x, Tensor) else x
    ge = expand_reduced(m, g, shape, axis, keepdims)
    product = ans._value if isinstance(ans, Tensor) else ans
    if not np.any(raw == 0) and ordinary(np.abs(product), (TINY.get(raw.dtype, 0.0),
                                                                     math.inf)):
        kept = keep_reduced_axes(m, ans, shape, axis, keepdims)
        return ge * m.broadcast_to(kept, shape=shape) / x
    # With zeros, ans / x is 0/0 (and with a product that underflowed or overflowed,
    # 0/x or inf/x where the others' product is a number: [1e-200, 1e-200, 1e200]): the
    # product of the others is the product of the elements before times the product of
    # those after, in O(n) (never an n x n array).
    axes = reduced_axes(axis, len(shape))
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    perm = rest + axes
    n = reduced_count(shape, axis)
    lead = tuple(shape[i] for i in rest)
    xt = m.reshape(m.transpose(x, axes=perm), shape=lead + (n,))
    if m is NP:
        others = _products_of_others(xt, lead, n)
    else:
        others = _products_of_others_traced(m, xt, lead, n, raw.dtype)
    others = m.transpose(m.reshape(others, shape=tuple(shape[i] for i in perm)),
                         axes=tuple(int(i) for i in np.argsort(perm)))
    return ge * others


def _products_of_others(xt, lead, n):
    """For each i along the last axis, the product of the other elements: exclusive
    running products from the left times those from the right (numpy, O(n))."""
    ones = np.ones(lead + (1,), xt.dtype)
    left = np.cumprod(np.concatenate([ones, xt[..., :n - 1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, xt[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return left * right


def _products_of_others_traced(m, xt, lead, n, dtype):
    """The same in engine operations, so that it can be differentiated again: running
    products by doubling steps (log2 n multiplications of shifted copies)."""
    every, backwards = (Ellipsis, slice(None)), (Ellipsis, slice(None, None, -1))

    def exclusive_running_products(a):
        a = m.concatenate([np.ones(lead + (1,), dtype),
                           m.getitem(a, index=(Ellipsis, slice(0, n - 1)))], axis=-1)
        k = 1
        while k < n:
            shifted = m.getitem(a, index=(Ellipsis, slice(0, n - k)))
            a = a * m.concatenate([np.ones(lead + (k,), dtype), shifted], axis=-1)
            k *= 2
        return a

    left = exclusive_running_products(m.getitem(xt, index=every))
    right = m.getitem(exclusive_running_products(m.getitem(xt, index=backwards)),
                      index=backwards)
    return left * right


def logsumexp_forward(x, axis=None, keepdims=False):
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.reshape(out, np.shape(np.sum(x, axis=axis)))


def _softmax(x, axis=-1):
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return z / np.sum(z, axis=axis, keepdims=True)


def ordinary(values, bounds) -> bool:
    """Whether every value (a reduction's results) lies in ``bounds = (low, high)``: a
    number the rules of norms may divide by. Outside, the powers summed under it lost
    digits to underflow, or it underflowed to 0 or overflowed to inf."""
    low, high = bounds
    if values.__class__ is not np.ndarray:
        return bool(low <= values < high)
    return bool(np.all((values >= low) & (values < high)))


# tiny / eps of each float dtype (read on every norm's rule: np.finfo costs a microsecond)
_TINY_OVER_EPS = {np.dtype(t): float(np.finfo(t).tiny / np.finfo(t).eps)
                  for t in (np.float64, np.float32)}
TINY = {np.dtype(t): float(np.finfo(t).tiny) for t in (np.float64, np.float32)}


def norm_bounds(x, p) -> tuple:
    """The p-norms whose powers |x|^p kept all their digits (no subnormal power):
    from (tiny / eps)^(1/p) up (1e-146 for a float64 2-norm) for p > 0 (above, inf shows
    an overflow); below (tiny / eps)^(1/p) for p < 0, whose powers underflow for large x."""
    dtype = getattr(x, "dtype", None)
    ratio = _TINY_OVER_EPS.get(dtype, _TINY_OVER_EPS[np.dtype(np.float64)])
    if p < 0:
        return TINY.get(dtype, TINY[np.dtype(np.float64)]), ratio ** (1.0 / p)
    return ratio ** (1.0 / max(p, 1.0)), math.inf


def rescaled(m, x, axes, reduce):
    """``x / s`` and ``reduce(x / s)`` with ``s = max |x|`` over ``axes`` (a constant;
    1 where it is 0 or not finite): the gradients of norms and of std are homogeneous of
    degree 0 (the same at x and at c x for any c > 0), so their rules may run at x / s,
    where no square underflows or overflows, when the norm at x did."""
    raw = x._value if isinstance(x, Tensor) else x
    s = np.max(np.abs(raw), axis=axes, keepdims=True)
    s = np.where((s > 0) & (s < math.inf), s, 1.0).astype(raw.dtype)
    xs = x / s
    return xs, reduce(xs)


def sympy_reduce(fn):
    """A reduction over object arrays of sympy expressions: fn(list) per output element."""
    def build(sp, x, axis=None, keepdims=False, **_):
        arr = np.asarray(x, dtype=object)
        axes = reduced_axes(axis, arr.ndim)
        rest = [i for i in range(arr.ndim) if i not in axes]
        moved = np.transpose(arr, rest + list(axes)).reshape(
            [arr.shape[i] for i in rest] + [-1])
        out = np.empty(moved.shape[:-1], dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = fn(sp, list(moved[idx]))
        if keepdims:
            out = out.reshape(_keep_shape(arr.shape, axis))
        return out if out.ndim else out[()]
    return build


def _sympy_softmax(sp, x, axis=-1):
    arr = np.asarray(x, dtype=object)
    ex = np.vectorize(sp.exp, otypes=[object])(arr)
    return ex / np.sum(ex, axis=axis, keepdims=True)


AXIS_PARAMS = (("axis", None), ("keepdims", False))


# Reductions
def _sum(x, axis=None, keepdims=False):
    # np.sum without its Python-level wrapper (~8 µs when caches are cold)
    return np.add.reduce(x, axis=axis, keepdims=keepdims)


entry(name="sum", forward=_sum,
      vjps=(lambda m, g, ans, x, axis=None, keepdims=False:
           expand_reduced(m, g, shape_of(x), axis, keepdims),),
      jvps=(lambda m, t, ans, x, axis=None, keepdims=False:
           m.sum(t, axis=axis, keepdims=keepdims),),
      inputs=("x",), params=AXIS_PARAMS, kind="reduction", saves="none", doc="sum of elements",
      derivative="1 for each element", sympy=sympy_reduce(lambda sp, xs: sp.Add(*xs)))
entry(name="mean", forward=np.mean,
      vjps=(lambda m, g, ans, x, axis=None, keepdims=False:
           expand_reduced(m, g, shape_of(x), axis, keepdims)
           / float(reduced_count(shape_of(x), axis)),),
      jvps=(lambda m, t, ans, x, axis=None, keepdims=False:
           m.mean(t, axis=axis, keepdims=keepdims),),
      inputs=("x",), params=AXIS_PARAMS, kind="reduction", saves="none", doc="mean of elements",
      derivative="1/n", sympy=sympy_reduce(lambda sp, xs: sp.Add(*xs) / len(xs)))
entry(name="prod", forward=np.prod, vjps=(_prod_vjp,), inputs=("x",), params=AXIS_PARAMS,
      kind="reduction", doc="product of elements", derivative="product of the other elements",
      sympy=sympy_reduce(lambda sp, xs: sp.Mul(*xs)))
entry(name="max", forward=np.max, vjps=(_max_vjp,), inputs=("x",), params=AXIS_PARAMS,
      kind="reduction", doc="largest element", derivative="1 at the maximum; ties split equally",
      sympy=sympy_reduce(lambda sp, xs: sp.Max(*xs)))
entry(name="min", forward=np.min, vjps=(_max_vjp,), inputs=("x",), params=AXIS_PARAMS,
      kind="reduction", doc="smallest element", derivative="1 at the minimum; ties split equally",
      sympy=sympy_reduce(lambda sp, xs: sp.Min(*xs)))
entry(name="logsumexp", forward=logsumexp_forward,
      vjps=(lambda m, g, ans, x, axis=None, keepdims=False:
           expand_reduced(m, g, shape_of(x), axis, keepdims)
           * m.exp(x - keep_reduced_axes(m, ans, shape_of(x), axis, keepdims)),),
      inputs=("x",), params=AXIS_PARAMS, kind="reduction", doc="log(sum(exp(x))), computed stably",
      derivative="softmax(x)",
      sympy=sympy_reduce(lambda sp, xs: sp.log(sp.Add(*[sp.exp(v) for v in xs]))))


entry(name="softmax", listed_after="clip", forward=_softmax,
      vjps=(lambda m, g, ans, x, axis=-1:
                  ans * (g - m.sum(g * ans, axis=axis, keepdims=True)),),
      jvps=(lambda m, t, ans, x, axis=-1:
                  ans * (t - m.sum(t * ans, axis=axis, keepdims=True)),),
      inputs=("x",), params=(("axis", -1),), kind="reduction", saves="ans",
      doc="exp(x) / sum(exp(x)) along an axis", derivative="s (g - sum(g s))",
      sympy=_sympy_softmax)
