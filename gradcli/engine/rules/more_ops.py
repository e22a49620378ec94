"""More entries of the function table: statistics and scans, more elementwise functions,
and shape functions (issue 10, parts 3 and 4).

Loaded when one of its names is first needed (``core.table.on_demand``, issue 14),
then published in the namespaces ``NP`` and ``ENGINE``, so every entry here is an ordinary
entry: ``gc.NAME``, the language, ``gradcli functions``, the sympy check and the
table-wide tests all read it. The rules follow
the other rule modules: written against the namespace ``m`` (so second derivatives work through nested
tapes), axes with numpy's semantics under the parameter names ``axis``/``axes``, and a
zero local derivative as a hard zero (``gate``: never ``0 * inf``, but nan stays nan).

Conventions decided here (where numpy or TensorFlow leave a choice):
- ``sort``, ``median``: the gradient flows through the permutation that sorts the input
  (numpy's stable order); tied elements get the gradient of the place each was sorted
  to. ``median`` of an even count gives 1/2 to each of the two middle elements.
- ``std`` at an input whose elements are all equal: the subgradient 0 (as ``norm`` at 0).
- ``argmax``/``argmin``: integer results, not differentiable (declared: no rule);
  usable as indices (``x[argmax(x)]``, ``take(x, argmax(x))``).
- ``mod``/``remainder`` (the ``%`` operator) follow Python and numpy: the result has the
  divisor's sign; ``fmod`` follows C: the dividend's sign. ``floor_divide`` (``//``) has
  a zero gradient, as ``floor``.
- ``erf``/``erfc``: numpy has none and scipy is not a dependency, so they are computed
  here: a Taylor series below |x| = 1.5 and a continued fraction for erfc above (the
  algorithm of CPython's own fallback ``math.erf``, with exp(-x^2) computed to full
  precision): erf within 1e-15 relative of ``math.erf`` (a few units in the last place),
  erfc within 2e-14 relative of ``math.erfc`` (below x = 1.5 it is 1 - erf).
- ``split``/``array_split`` return a tuple of tensors (numpy returns a list): each piece
  is recorded as a slice of the input (``getitem``), so the gradient of any piece, or of
  several, flows back into its place. In the language, which has no tuples, index the
  call: ``split(x, 3)[0]``.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ShapeError
from ..core.derive import entry, linear_rules
from ..core.recording import NP, apply, bind
from ..core.table import (
    INTERNAL,
    REGISTRY,
    normalise_axes,
)
from ..core.tensor import Tensor, shape_of
from . import linalg as _linalg  # noqa: F401  (its entries come first in the table)
from .elementwise import gate
from .reductions import (
    expand_reduced,
    keep_reduced_axes,
    logsumexp_forward,
    norm_bounds,
    ordinary,
    reduced_axes,
    reduced_count,
    rescaled,
    sympy_reduce,
)
from .shape import broadcast_to_forward


def _raw(x):
    """The numpy value of a rule's argument (a Tensor under nested tapes, else numpy)."""
    return x._value if isinstance(x, Tensor) else x


def _numpy_sympy(forward):
    """A shape function's sympy form: the numpy function itself, on object arrays."""
    return lambda sp, *xs, **params: forward(*xs, **params)


def _axis_of(shape, axis) -> int:
    return axis % len(shape) if len(shape) else 0


def _rev_cumsum(m, g, axis):
    """sum_{j >= i} g_j along axis: the adjoint of cumsum."""
    return m.flip(m.cumsum(m.flip(g, axis=axis), axis=axis), axis=axis)


def _lanes(arr, axis):
    """``arr`` with the reduced axes moved last and merged: (rest..., n), and the
    permutation used (axis None: all axes)."""
    axes = reduced_axes(axis, arr.ndim)
    rest = tuple(i for i in range(arr.ndim) if i not in axes)
    perm = rest + axes
    moved = np.transpose(arr, perm)
    return moved.reshape(moved.shape[:len(rest)] + (-1,)), perm, moved.shape


def _from_lanes(lanes, perm, moved_shape):
    return np.transpose(lanes.reshape(moved_shape), np.argsort(perm))


# ---------------------------------------------------------------------------------------
# erf and erfc without scipy (CPython's fallback algorithm, vectorised)
# ---------------------------------------------------------------------------------------
_SQRT_PI = math.sqrt(math.pi)
_ERF_SERIES_CUTOFF, _ERF_SERIES_TERMS, _ERFC_CONTFRAC_TERMS = 1.5, 25, 50


def _erf_series(x):
    """erf(x) by its Taylor series, for |x| < 1.5."""
    x2 = x * x
    acc = np.zeros_like(x)
    fk = _ERF_SERIES_TERMS + 0.5
    for _ in range(_ERF_SERIES_TERMS):
        acc = 2.0 + x2 * acc / fk
        fk -= 1.0
    return acc * x * np.exp(-x2) / _SQRT_PI


def _erfc_contfrac(x):
    """erfc(x) by a continued fraction, for x >= 1.5 (0 beyond 30, where it underflows)."""
    x = np.minimum(x, 30.0)
    x2 = x * x
    a, da = 0.0, 0.5
    p, p_last = np.ones_like(x), np.zeros_like(x)
    q, q_last = da + x2, np.ones_like(x)
    for _ in range(_ERFC_CONTFRAC_TERMS):
        a += da
        da += 2.0
        b = da + x2
        p, p_last = b * p - a * p_last, p
        q, q_last = b * q - a * q_last, q
    return np.where(x >= 30.0, 0.0, p / q * x * _exp_minus_square(x) / _SQRT_PI)


def _exp_minus_square(x):
    """exp(-x^2) to full relative precision: x^2 rounded would carry an error of x^2
    ulps into the result (1e-13 at x = 30), so x is split as hi + lo with hi^2 exact."""
    hi = np.round(x * 4096.0) / 4096.0
    lo = x - hi
    return np.exp(-hi * hi) * np.exp(-lo * (x + hi))


def _erf_parts(x):
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.float64
    v = x.astype(np.float64)
    small = np.abs(v) < _ERF_SERIES_CUTOFF
    series = _erf_series(np.where(small, v, 0.0))
    cf = _erfc_contfrac(np.where(small, _ERF_SERIES_CUTOFF, np.abs(v)))
    return v, small, series, cf, dtype


def _erf(x):
    v, small, series, cf, dtype = _erf_parts(x)
    out = np.where(small, series, np.where(v > 0, 1.0 - cf, cf - 1.0))
    out = np.where(np.isnan(v), np.nan, out)
    return out.astype(dtype)[()]


def _erfc(x):
    v, small, series, cf, dtype = _erf_parts(x)
    out = np.where(small, 1.0 - series, np.where(v > 0, cf, 2.0 - cf))
    out = np.where(np.isnan(v), np.nan, out)
    return out.astype(dtype)[()]


_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI


# ---------------------------------------------------------------------------------------
# sinc: the derivative from its Taylor series near 0, where the closed form cancels
# ---------------------------------------------------------------------------------------
# d/dx sinc(x) = sum_k c_k x^(2k-1), c_k = (-1)^k 2k pi^(2k) / (2k+1)!, k = 1..7: within
# 1e-16 of the closed form's exact value below |x| = 0.1.
_SINC_SERIES = tuple((-1) ** k * 2 * k * math.pi ** (2 * k) / math.factorial(2 * k + 1)
                     for k in range(1, 8))


def _near_integer(x):
    """(n, sign): an integer n nearest to x (a constant) and (-1)^n. x - n is exact in
    floating point, so sin(pi x) = sign sin(pi (x - n)) and cos(pi x) = sign cos(pi (x - n))
    are exact at every integer: numpy's sinc computes sin(pi * x), whose rounding of pi * x
    leaves ~1e-16 absolute, a relative error of 1e-6 at x = 1 - 1e-10 and a garbage
    value at x = 1e200 (an integer: sinc is 0 there)."""
    raw = np.asarray(_raw(x))
    n = np.rint(raw)
    with np.errstate(invalid="ignore"):  # inf and nan: nan, as numpy's sinc
        sign = np.where(np.remainder(n, 2.0) == 1.0, -1.0, 1.0).astype(n.dtype)
    return n, sign


def _sinc(x):
    x = np.asarray(x)
    v = x if x.dtype.kind == "f" else x.astype(np.float64)
    n, sign = _near_integer(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sign * np.sin(math.pi * (v - n)) / (math.pi * v) + 0.0  # (no -0.0 at 1)
    return np.where(v == 0, np.ones_like(v), out)[()]


def _sinc_vjp(m, g, ans, x):
    raw = np.asarray(_raw(x))
    small = np.abs(raw) < 0.1
    xs = m.where(small, x, 0.0)  # the series only where it is used (x * x overflows)
    x2 = xs * xs
    poly = _SINC_SERIES[-1]
    for c in _SINC_SERIES[-2::-1]:
        poly = c + x2 * poly
    near = xs * poly
    n, sign = _near_integer(raw)
    safe = m.where(small, 1.0, x)
    far = (m.cos(math.pi * (x - n)) * sign - ans) / safe
    return g * m.where(small, near, far)


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------
_STAT = (("axis", None), ("keepdims", False), ("ddof", 0))  # axis, keepdims as the reductions


def _per_dof(c: float, shape, axis, ddof) -> np.float64:
    """``c / (n - ddof)`` as numpy's var divides: by ``max(n - ddof, 0)``, so ddof >= n
    gives inf (numpy's value there), not a ZeroDivisionError."""
    with np.errstate(divide="ignore"):
        return np.float64(c) / np.float64(max(reduced_count(shape, axis) - ddof, 0))


def _var_vjp(m, g, ans, x, axis=None, keepdims=False, ddof=0):
    shape = shape_of(x)
    centered = x - m.mean(x, axis=axis, keepdims=True)
    return expand_reduced(m, g, shape, axis, keepdims) * centered * _per_dof(2.0, shape, axis, ddof)


def _std_vjp(m, g, ans, x, axis=None, keepdims=False, ddof=0):
    shape = shape_of(x)
    if not ordinary(_raw(ans), norm_bounds(x, 2)):
        # the squares underflowed or overflowed (std of [1e-200, 3e-200] is 0, of
        # [1e200, -1e200] inf): the gradient, the same at x and c x, taken at x / max|x|
        x, ans = rescaled(m, x, axis, lambda v: m.std(v, axis=axis, keepdims=keepdims,
                                                         ddof=ddof))
    std = keep_reduced_axes(m, ans, shape, axis, keepdims)
    flat = std == 0  # all elements equal: the subgradient 0, a hard zero (gate)
    centered = x - m.mean(x, axis=axis, keepdims=True)
    ge = expand_reduced(m, g, shape, axis, keepdims)
    scale = ge / m.where(flat, 1.0, std)
    return gate(m, std != 0, scale * centered * _per_dof(1.0, shape, axis, ddof), ge)


def _sympy_var(sp, x, axis=None, keepdims=False, ddof=0, root=False):
    def var(sp, xs):
        mean = sp.Add(*xs) / len(xs)
        v = sp.Add(*[(e - mean) ** 2 for e in xs]) / (len(xs) - ddof)
        return sp.sqrt(v) if root else v
    return sympy_reduce(var)(sp, x, axis=axis, keepdims=keepdims)


def _weights_along(m, x, w, axis):
    """numpy's average: 1-D weights with an integer axis lie along that axis."""
    xs, ws = shape_of(x), shape_of(w)
    if len(ws) == 1 and len(xs) > 1 and isinstance(axis, int):
        ax = axis % len(xs)
        return m.reshape(w, shape=tuple(ws[0] if i == ax else 1 for i in range(len(xs)))), True
    return w, False


def _average(x, weights, axis=None, keepdims=False):
    w, _ = _weights_along(NP, x, weights, axis)
    wb = np.broadcast_to(w, np.broadcast_shapes(np.shape(x), np.shape(w)))
    return np.sum(x * w, axis=axis, keepdims=keepdims) / np.sum(wb, axis=axis, keepdims=keepdims)


def _average_parts(m, g, ans, x, weights, axis, keepdims):
    w, along = _weights_along(m, x, weights, axis)
    shape = np.broadcast_shapes(shape_of(x), shape_of(w))
    total = m.sum(m.broadcast_to(w, shape=shape), axis=axis, keepdims=True)
    ge = expand_reduced(m, g, shape, axis, keepdims) / total
    return shape, w, along, ge


def _average_vjp_x(m, g, ans, x, weights, axis=None, keepdims=False):
    shape, w, along, ge = _average_parts(m, g, ans, x, weights, axis, keepdims)
    return ge * w


def _average_vjp_w(m, g, ans, x, weights, axis=None, keepdims=False):
    shape, w, along, ge = _average_parts(m, g, ans, x, weights, axis, keepdims)
    gw = ge * (x - keep_reduced_axes(m, ans, shape, axis, keepdims))
    if along:  # summed back onto the 1-D weights
        ax = axis % len(shape)
        return m.sum(gw, axis=tuple(i for i in range(len(shape)) if i != ax))
    return gw


def _sympy_average(sp, x, weights, axis=None, keepdims=False):
    w, _ = _weights_along(NP, x, weights, axis)
    shape = np.broadcast_shapes(np.shape(x), np.shape(w))
    xw = np.broadcast_to(np.asarray(x, dtype=object) * w, shape)
    wb = np.broadcast_to(np.asarray(w, dtype=object), shape)
    top = sympy_reduce(lambda sp, xs: sp.Add(*xs))(sp, xw, axis=axis, keepdims=keepdims)
    bottom = sympy_reduce(lambda sp, xs: sp.Add(*xs))(sp, wb, axis=axis, keepdims=keepdims)
    return top / bottom


def _median_weights(raw, axis):
    """Constant weights of each element in the median: 1 (odd count) or 1/2 and 1/2 (even)
    at the middle place(s) of the stable sorting permutation, else 0."""
    lanes, perm, moved_shape = _lanes(raw, axis)
    n = lanes.shape[-1]
    order = np.argsort(lanes, axis=-1, kind="stable")
    weights = np.zeros(lanes.shape, dtype=raw.dtype if raw.dtype.kind == "f" else np.float64)
    if n:
        middle = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
        for k in middle:
            np.put_along_axis(weights, order[..., k:k + 1], 1.0 / len(middle), axis=-1)
    return _from_lanes(weights, perm, moved_shape)


def _median_vjp(m, g, ans, x, axis=None, keepdims=False):
    raw = np.asarray(_raw(x))
    return expand_reduced(m, g, raw.shape, axis, keepdims) * _median_weights(raw, axis)


def _sorted_lane(sp, xs):
    """A sorting network (odd-even transposition) of Min/Max: the sorted values as sympy
    expressions, exact for any order of the symbols' values."""
    xs = list(xs)
    n = len(xs)
    for rnd in range(n):
        for i in range(rnd % 2, n - 1, 2):
            xs[i], xs[i + 1] = sp.Min(xs[i], xs[i + 1]), sp.Max(xs[i], xs[i + 1])
    return xs


def _sympy_sort(sp, x, axis=-1):
    arr = np.asarray(x, dtype=object)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    moved = np.moveaxis(arr, axis, -1)
    out = np.empty(moved.shape, dtype=object)
    for idx in np.ndindex(moved.shape[:-1]):
        out[idx] = _sorted_lane(sp, moved[idx])
    return np.moveaxis(out, -1, axis)


def _sympy_median(sp, x, axis=None, keepdims=False):
    def median(sp, xs):
        s = _sorted_lane(sp, xs)
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return sympy_reduce(median)(sp, x, axis=axis, keepdims=keepdims)


def _sort_vjp(m, g, ans, x, axis=-1):
    raw = np.asarray(_raw(x))
    if axis is None:  # numpy sorts the flattened array
        inverse = np.argsort(np.argsort(raw.reshape(-1), kind="stable"))
        return m.reshape(m.take_along_axis(g, inverse, axis=0), shape=raw.shape)
    inverse = np.argsort(np.argsort(raw, axis=axis, kind="stable"), axis=axis)
    return m.take_along_axis(g, inverse, axis=axis)


def _sympy_arg(pick):
    """argmax/argmin of each lane: the first index whose value beats all the others, as a
    Piecewise of comparisons (constant between ties, as the integer result is)."""
    def build(sp, x, axis=None, keepdims=False):
        def arg(sp, xs):
            pieces = []
            for i, xi in enumerate(xs[:-1]):
                conds = [pick(sp, xi, xj) if j > i else pick(sp, xi, xj) & sp.Ne(xi, xj)
                         for j, xj in enumerate(xs) if j != i]
                pieces.append((sp.Integer(i), sp.And(*conds)))
            return sp.Piecewise(*pieces, (sp.Integer(len(xs) - 1), True))
        return sympy_reduce(arg)(sp, x, axis=axis, keepdims=keepdims)
    return build


# ---------------------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------------------
def _cumsum_vjp(m, g, ans, x, axis=None):
    if axis is None:  # numpy scans the flattened array
        return m.reshape(_rev_cumsum(m, g, 0), shape=shape_of(x))
    return _rev_cumsum(m, g, axis)


def _cumprod_vjp(m, g, ans, x, axis=None):
    if axis is None:
        flat = m.reshape(x, shape=(-1,))
        return m.reshape(_cumprod_grad(m, g, ans, flat, 0), shape=shape_of(x))
    return _cumprod_grad(m, g, ans, x, axis)


def _cumprod_grad(m, g, ans, x, axis):
    """Exact with zeros, in O(n): before a lane's first zero, d ans_j / d x_i is
    ans_j / x_i; at the first zero it is the product of the others, which is the scan of
    the lane with that zero replaced by 1; after it every product holds that zero."""
    raw = np.asarray(_raw(x))
    if not np.any(raw == 0):
        return _rev_cumsum(m, g * ans, axis) / x
    zero = raw == 0
    before = np.cumsum(zero, axis=axis) - zero  # zeros strictly before each place
    clean = before == 0
    first = clean & zero
    clean &= ~zero
    spared = m.where(first, 1.0, x)
    others = m.cumprod(spared, axis=axis)
    at_zero = _rev_cumsum(m, g * others, axis)
    ahead = _rev_cumsum(m, g * ans, axis) / m.where(clean, x, 1.0)
    if m is NP:
        after = 0.0
    else:
        # Under an outer tape the zero's own factor must stay in the expression, so its
        # derivative is there: after the first zero z, the gradient is x_z (0 in value)
        # times the gradient of the lane with x_z replaced by 1 (one zero fewer).
        x_zero = m.sum(m.where(first, x, 0.0), axis=axis, keepdims=True)
        after = x_zero * _cumprod_grad(m, g, others, spared, axis)
    return m.where(clean, ahead, m.where(first, at_zero, after))


def _diff_order(x, n, axis) -> int:
    """n, or the axis length when n exceeds it (the same empty result; numpy would loop n
    times, and diff(x, n=1e9) would not finish)."""
    shape = shape_of(x)
    if n < 0 or not shape:
        return n  # numpy's own error
    return min(n, shape[axis % len(shape)])


def _diff(x, n=1, axis=-1):
    return np.diff(x, n=_diff_order(x, n, axis), axis=axis)


def _diff_vjp(m, g, ans, x, n=1, axis=-1):
    n = _diff_order(x, n, axis)
    nd = len(shape_of(x))
    ax = _axis_of(shape_of(x), axis)
    lo = tuple((1, 0) if i == ax else (0, 0) for i in range(nd))
    hi = tuple((0, 1) if i == ax else (0, 0) for i in range(nd))
    for _ in range(n):  # y_i = x_(i+1) - x_i: x_k gets g_(k-1) - g_k
        g = m.pad(g, pad_width=lo) - m.pad(g, pad_width=hi)
    return g


def _log_softmax(x, axis=-1):
    return x - logsumexp_forward(x, axis=axis, keepdims=True)


def _sympy_log_softmax(sp, x, axis=-1):
    arr = np.asarray(x, dtype=object)
    lse = sympy_reduce(lambda sp, xs: sp.log(sp.Add(*[sp.exp(v) for v in xs])))(
        sp, arr, axis=axis, keepdims=True)
    return arr - lse


# ---------------------------------------------------------------------------------------
# Two-argument elementwise functions
# ---------------------------------------------------------------------------------------
def _fmax_rule(first: bool, larger: bool):
    """fmax/fmin: like maximum/minimum, but a nan loses to a number (the number gets the
    gradient); ties split it equally."""
    def vjp(m, g, ans, x, y):
        a, b = (_raw(x), _raw(y)) if first else (_raw(y), _raw(x))
        a, b = np.asarray(a), np.asarray(b)
        beats = (a > b) if larger else (a < b)
        take = beats | (np.isnan(b) & ~np.isnan(a))
        return m.where(take, g, m.where(a == b, 0.5 * g, 0.0))
    return vjp


def _zero_binary(m, g, ans, x, y):
    return m.zeros_like(x)


def _zero_binary_y(m, g, ans, x, y):
    return m.zeros_like(y)


def _trunc_sympy(sp, t):
    return sp.Piecewise((sp.floor(t), t >= 0), (sp.ceiling(t), True))


# ---------------------------------------------------------------------------------------
# Shape functions: helpers
# ---------------------------------------------------------------------------------------
def _reshape_back(m, g, ans, x, **params):
    return m.reshape(g, shape=shape_of(x))


def _repeat(x, repeats, axis=None):
    return np.repeat(x, repeats, axis=axis)


def _repeat_vjp(m, g, ans, x, repeats, axis=None):
    shape = shape_of(x)
    if np.ndim(repeats):
        # A count per element (numpy broadcasts a list of one): repeat is take of the
        # indices np.repeat(arange(n), repeats), so its adjoint is take's scatter-add.
        n = math.prod(shape) if axis is None else shape[_axis_of(shape, axis)]
        return _take_vjp(m, g, ans, x, np.repeat(np.arange(n), repeats), axis=axis)
    if axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        return m.reshape(m.sum(m.reshape(g, shape=(n, repeats)), axis=1), shape=shape)
    ax = _axis_of(shape, axis)
    split = shape[:ax] + (shape[ax], repeats) + shape[ax + 1:]
    return m.sum(m.reshape(g, shape=split), axis=ax + 1)


def _tile_vjp(m, g, ans, x, reps):
    shape = shape_of(x)
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    d = max(len(shape), len(reps))
    xs = (1,) * (d - len(shape)) + tuple(shape)
    rs = (1,) * (d - len(reps)) + reps
    interleaved = tuple(v for pair in zip(rs, xs) for v in pair)
    summed = m.sum(m.reshape(g, shape=interleaved), axis=tuple(range(0, 2 * d, 2)))
    return m.reshape(summed, shape=shape)


def _pad(x, pad_width, constant_values=0.0):
    return np.pad(x, pad_width, mode="constant", constant_values=constant_values)


def _pad_vjp(m, g, ans, x, pad_width, constant_values=0.0):
    shape = shape_of(x)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2)
                             if np.ndim(pad_width) == 2 else np.asarray(pad_width),
                             (len(shape), 2))
    index = tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(widths, shape))
    return m.getitem(g, index=index)


def _sympy_pad(sp, x, pad_width, constant_values=0.0):
    return np.pad(np.asarray(x, dtype=object), pad_width, mode="constant",
                  constant_values=sp.Float(constant_values))


def _stack_offsets(xs, index, promote, axis):
    """(start, stop) of input ``index`` along the join axis of vstack/hstack/dstack."""
    sizes = [promote(np.empty(shape_of(x), dtype=bool)).shape[axis] for x in xs]
    start = sum(sizes[:index])
    return start, start + sizes[index]


def _joined(name, promote, axis_of, doc, batch):
    def forward(*xs):
        return getattr(np, name)(xs)

    def vjp(m, g, ans, *xs, index):
        ax = axis_of(xs[index])
        start, stop = _stack_offsets(xs, index, promote, ax)
        sl = (slice(None),) * ax + (slice(start, stop),)
        return m.reshape(m.getitem(g, index=sl), shape=shape_of(xs[index]))
    def jvp(m, ts, ans, *xs):  # linear: the tangents joined the same way
        return getattr(m, name)(*ts) if m is NP else getattr(m, name)(list(ts))
    entry(name=name, forward=forward, vjps=(vjp,), jvps=(jvp,), inputs=("xs",), variadic=True,
          kind="shape", saves="none", doc=doc, derivative="slices of g",
          sympy=lambda sp, *xs: getattr(np, name)([np.asarray(x, dtype=object) for x in xs]),
          batch=batch)


def _split_points(n, sections, what):
    """numpy's boundaries for np.split/np.array_split along an axis of length n."""
    if isinstance(sections, (tuple, list)):
        return [0] + [int(s) for s in sections] + [n]
    sections = int(sections)
    if sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    if what == "split" and n % sections:
        raise ValueError("array split does not result in an equal division")
    each, extra = divmod(n, sections)
    sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
    return list(np.cumsum(sizes))


def _splitter(what):
    def forward(x, indices_or_sections, axis=0):
        return tuple(getattr(np, what)(x, indices_or_sections, axis=axis))

    def public(x, *args, **kwargs):
        """The pieces of ``x`` as a tuple of tensors, each recorded as a slice of x."""
        op = REGISTRY[what]  # parameters bound as every entry's are (bind)
        params = bind(op, [name for name, _ in op.params], dict(op.params), args, kwargs)
        indices_or_sections, axis = params["indices_or_sections"], params["axis"]
        if indices_or_sections is None:
            raise TypeError(f"{what}() needs indices_or_sections (a count or indices)")
        shape = shape_of(x) if isinstance(x, Tensor) else np.shape(x)
        if not shape:
            raise ShapeError(f"shape mismatch in {what}: () (a scalar cannot be split)")
        # the one axis normalisation (an out-of-range axis is refused, never wrapped)
        ax = normalise_axes(op, len(shape), {"axis": axis})["axis"]
        try:
            points = _split_points(shape[ax], indices_or_sections, what)
        except (ValueError, TypeError) as err:
            raise ShapeError(f"shape mismatch in {what}: {shape} ({err})") from None
        pieces = []
        for start, stop in zip(points[:-1], points[1:]):
            index = (slice(None),) * ax + (slice(int(start), int(stop)),)
            pieces.append(apply(INTERNAL["getitem"], (x,), {"index": index}))
        return tuple(pieces)
    public.__name__ = public.__qualname__ = what
    return forward, public


# ---------------------------------------------------------------------------------------
# take, take_along_axis, gather: integer indices given as an input (not differentiable)
# ---------------------------------------------------------------------------------------
def _int_indices(indices):
    raw = np.asarray(_raw(indices))
    if raw.dtype.kind == "f":
        if not np.all(np.isfinite(raw)) or np.any(raw != np.floor(raw)):
            raise IndexError("indices must be integers")
        raw = raw.astype(np.intp)
    elif raw.dtype.kind not in "iu":
        raise IndexError("indices must be integers")
    return raw


def _take(x, indices, axis=None):
    return np.take(x, _int_indices(indices), axis=axis)


def _take_index(shape, indices, axis):
    """The index tuple with which ``x[index]`` is ``take(x, indices, axis)``."""
    ax = _axis_of(shape, axis)
    return (slice(None),) * ax + (_int_indices(indices),)


def _take_vjp(m, g, ans, x, indices, axis=None):
    shape = shape_of(x)
    if axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        flat = m.scatter(g, index=(_int_indices(indices),), shape=(n,))
        return m.reshape(flat, shape=shape)
    return m.scatter(g, index=_take_index(shape, indices, axis), shape=shape)


def _sympy_take(sp, x, indices, axis=None):
    return np.take(np.asarray(x, dtype=object), _sympy_int_indices(indices), axis=axis)


def _sympy_int_indices(indices):
    arr = np.asarray(indices, dtype=object)
    return np.vectorize(lambda v: int(v), otypes=[np.intp])(arr) if arr.size else \
        arr.astype(np.intp)


def _along_index(shape, indices, axis):
    """The index tuple with which ``x[index]`` is ``take_along_axis(x, indices, axis)``."""
    idx = _int_indices(indices)
    ax = _axis_of(shape, axis)
    nd = len(shape)
    # numpy broadcasts the indices against x along the other axes
    idx = np.broadcast_to(idx, tuple(idx.shape[i] if i == ax else shape[i] for i in range(nd)))
    grids = np.ix_(*[np.arange(n) for n in idx.shape]) if idx.ndim else ()
    return tuple(idx if i == ax else grids[i] for i in range(nd))


def _take_along_axis(x, indices, axis):
    if axis is None:
        return np.take_along_axis(np.reshape(x, -1), _int_indices(indices), axis=0)
    return np.take_along_axis(x, _int_indices(indices), axis=axis)


def _take_along_axis_vjp(m, g, ans, x, indices, axis):
    shape = shape_of(x)
    if axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        flat = m.scatter(g, index=_along_index((n,), indices, 0), shape=(n,))
        return m.reshape(flat, shape=shape)
    return m.scatter(g, index=_along_index(shape, indices, axis), shape=shape)


def _sympy_take_along_axis(sp, x, indices, axis):
    arr = np.asarray(x, dtype=object)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    return np.take_along_axis(arr, _sympy_int_indices(indices), axis=axis)


# ---------------------------------------------------------------------------------------
# Batching rules (inside vectorized_map; see gradcli.engine.batching): each computes the
# result for every example at once, with a few calls of entries on the batched tensors
# (batch on axis 0), whatever the batch size. Where numpy reads an input specially
# (axis=None, an example's rank) the rule says how; an input numpy refuses goes to
# batching.loop, whose first example then raises the entry's own error.
# ---------------------------------------------------------------------------------------
def _batching():
    """The batching module, imported on first use (it imports the table, which this
    module is still filling when it is imported)."""
    from ..core import batching
    return batching


def _axis_batch(flatten: bool = True, unflatten: bool = False):
    """One input with an ``axis`` of one example: the axis moves up by one. axis=None is
    numpy's "of the flattened array" (``flatten``: each example flattened, the entry run
    along axis 1, and with ``unflatten`` reshaped back, as roll does), or else all of an
    example's axes (flip)."""
    def rule(op, values, batched, params):
        b = _batching()
        x = values[0]
        shape = b.example_shape(x, True)
        p = b.example_params(op, params, len(shape))
        if p["axis"] is not None:
            p["axis"] = b.shift_axes(p["axis"])
            return apply(op, (x,), p)
        if not flatten:
            p["axis"] = tuple(range(1, len(shape) + 1))
            return apply(op, (x,), p)
        n = np.shape(x._value)[0]
        keepdims = p.get("keepdims", False)  # argmax's: a shape of ones, one per axis
        p["axis"] = 1
        if keepdims:
            p["keepdims"] = False
        out = apply(op, (b.flat_examples(x),), p)
        if keepdims:
            return b.reshaped(out, (n,) + (1,) * len(shape))
        return b.reshaped(out, (n, *shape)) if unflatten else out
    return rule


def _squeeze_batch(op, values, batched, params):
    """axis=None squeezes an example's axes of length 1, never the batch axis (a batch of
    one example keeps it)."""
    b = _batching()
    x = values[0]
    axis = params.get("axis")
    if axis is None:
        axis = tuple(i + 1 for i, n in enumerate(b.example_shape(x, True)) if n == 1)
    else:
        axis = b.shift_axes(axis)
    return apply(op, (x,), {"axis": axis})


def _expand_dims_batch(op, values, batched, params):
    b = _batching()
    if params.get("axis") is None:  # numpy requires an axis: its own error
        return b.loop(op, values, batched, params)
    return apply(op, (values[0],), {"axis": b.shift_axes(params["axis"])})


def _ravel_batch(op, values, batched, params):
    return _batching().flat_examples(values[0])


def _at_least(shape, rank: int) -> tuple:
    """The shape np.atleast_1d/2d/3d gives an input of ``shape`` (a vector is a row, and
    for 3-D also a matrix gets a trailing axis)."""
    shape = tuple(shape)
    if len(shape) >= rank:
        return shape
    if not shape:
        return (1,) * rank
    if len(shape) == 1:
        return (1,) + shape + (1,) * (rank - 2)
    return shape + (1,)


def _at_least_batch(rank: int):
    """The rank of each example decides (a batched vector is not a matrix)."""
    def rule(op, values, batched, params):
        b = _batching()
        x = values[0]
        return b.reshaped(x, (np.shape(x._value)[0],
                              *_at_least(b.example_shape(x, True), rank)))
    return rule


def _tile_batch(op, values, batched, params):
    """Examples and reps padded with leading ones to one rank, as numpy's tile pads them,
    and the batch axis tiled once."""
    b = _batching()
    x = values[0]
    shape = b.example_shape(x, True)
    try:
        reps = tuple(int(r) for r in np.atleast_1d(params.get("reps")))
    except (TypeError, ValueError):
        reps = None
    if reps is None or any(r < 0 for r in reps):
        return b.loop(op, values, batched, params)  # numpy's own error
    rank = max(len(shape), len(reps))
    x = b.reshaped(x, (np.shape(x._value)[0],) + (1,) * (rank - len(shape)) + shape)
    return apply(op, (x,), {"reps": (1,) * (1 + rank - len(reps)) + reps})


def _flip_axis_batch(axis: int):
    """fliplr (axis 1 of an example), flipud (axis 0) as flip one axis up."""
    def rule(op, values, batched, params):
        b = _batching()
        if b.example_ndim(values[0], True) <= axis:
            return b.loop(op, values, batched, params)  # numpy's error: too few axes
        return apply(REGISTRY["flip"], (values[0],), {"axis": axis + 1})
    return rule


def _swapaxes_batch(op, values, batched, params):
    """axis1, axis2 (not normalised by the table) made an example's, then moved up."""
    b = _batching()
    rank = b.example_ndim(values[0], True)
    first = b.example_axis(params.get("axis1"), rank)
    second = b.example_axis(params.get("axis2"), rank)
    if first is None or second is None:
        return b.loop(op, values, batched, params)  # numpy's error
    return apply(op, (values[0],), {"axis1": first + 1, "axis2": second + 1})


def _moveaxis_batch(op, values, batched, params):
    """source and destination (ints or sequences) made an example's, then moved up."""
    b = _batching()
    rank = b.example_ndim(values[0], True)

    def moved(axes):
        many = isinstance(axes, (tuple, list, np.ndarray))
        out = [b.example_axis(a, rank) for a in (axes if many else (axes,))]
        if any(a is None for a in out):
            return None
        return tuple(a + 1 for a in out) if many else out[0] + 1
    source, destination = moved(params.get("source")), moved(params.get("destination"))
    if source is None or destination is None:
        return b.loop(op, values, batched, params)  # numpy's error
    return apply(op, (values[0],), {"source": source, "destination": destination})


def _pad_batch(op, values, batched, params):
    """numpy's forms of pad_width (n, (n,), (before, after), a pair per axis) written out
    for each axis of an example, and no padding of the batch axis."""
    b = _batching()
    x = values[0]
    rank = b.example_ndim(x, True)
    p = b.example_params(op, params, rank)
    try:
        pairs = np.broadcast_to(np.asarray(p["pad_width"], dtype=np.int64), (rank, 2))
        constant = p["constant_values"]
        if np.ndim(constant):  # a pair of values per axis, as numpy allows
            constant = ((0, 0),) + tuple(map(tuple, np.broadcast_to(
                np.asarray(constant), (rank, 2)).tolist()))
    except (TypeError, ValueError):
        pairs = None
    if pairs is None or np.any(pairs < 0):
        return b.loop(op, values, batched, params)  # numpy's own error
    widths = ((0, 0),) + tuple(map(tuple, pairs.tolist()))
    return apply(op, (x,), {"pad_width": widths, "constant_values": constant})


def _joined_batch(rank: int, axis_of):
    """vstack/hstack/dstack: each example promoted as np.atleast_{rank}d promotes it (an
    input shared by all examples, then given the batch axis), and one concatenation one
    axis up. ``axis_of(promoted shape of the first)`` is the join axis of an example."""
    def rule(op, values, batched, params):
        b = _batching()
        n = b.batch_size(op, values, batched)
        shapes = [_at_least(b.example_shape(v, k), rank) for v, k in zip(values, batched)]
        axis = axis_of(shapes[0])
        rest = {s[:axis] + s[axis + 1:] for s in shapes}
        if len(rest) != 1 or len({len(s) for s in shapes}) != 1:
            return b.loop(op, values, batched, params)  # numpy's error: shapes differ
        parts = [b.reshaped(v, (n, *s)) if k else b.with_batch(b.reshaped(v, s), n)
                 for v, k, s in zip(values, batched, shapes)]
        return apply(REGISTRY["concatenate"], parts, {"axis": axis + 1})
    return rule


def _split_batch(op, values, batched, params):
    """Every example cut at once, one axis up: each piece has the batch on axis 0. (The
    public gc.split cuts by getitem, batched as such; this serves the entry applied
    itself.)"""
    b = _batching()
    x = values[0]
    p = b.example_params(op, params, b.example_ndim(x, True))
    p["axis"] = b.shift_axes(p["axis"])
    return apply(op, (x,), p)


def _take_batch(op, values, batched, params):
    """take and gather. Indices shared by the examples: taken one axis up (axis=None:
    from each flattened example). x shared: taken with the batched indices and the
    batch axis moved first. Both batched: one integer index over the batch axis beside
    the indices (numpy's advanced indexing), the taken axes then put in place."""
    b = _batching()
    (x, indices), (x_batched, i_batched) = values, batched
    shape = b.example_shape(x, x_batched)
    axis = b.example_params(op, params, len(shape))["axis"]
    try:
        idx = _int_indices(indices)
    except IndexError:
        idx = None
    length = reduced_count(shape, None) if axis is None else shape[axis]
    if idx is None or (idx.size and (idx.min() < -length or idx.max() >= length)):
        return b.loop(op, values, batched, params)  # take's own error, for one example
    if not i_batched:
        if axis is None:
            return apply(op, (b.flat_examples(x), indices), {"axis": 1})
        return apply(op, (x, indices), {"axis": axis + 1})
    if not x_batched:
        out = apply(op, (x, indices), {"axis": axis})  # x's axis became (batch, *indices)
        if not axis:
            return out
        return apply(REGISTRY["moveaxis"], (out,), {"source": axis, "destination": 0})
    n, k = idx.shape[0], idx.ndim - 1
    rows = np.arange(n).reshape((n,) + (1,) * k)
    if axis is None:
        return apply(INTERNAL["getitem"], (b.flat_examples(x),), {"index": (rows, idx)})
    out = apply(INTERNAL["getitem"], (x,), {"index": (rows,) + (slice(None),) * axis + (idx,)})
    if axis == 0:
        return out
    # integer arrays apart put their axes first: (batch, *taken, *before, *after)
    perm = ((0,) + tuple(range(1 + k, 1 + k + axis)) + tuple(range(1, 1 + k))
            + tuple(range(1 + k + axis, np.ndim(out._value))))
    return apply(REGISTRY["transpose"], (out,), {"axes": perm})


def _take_along_axis_batch(op, values, batched, params):
    """One axis up, indices shared by the examples given a unit batch axis (numpy and the
    rule broadcast it); axis=None: from each flattened example (x shared: ``take``)."""
    b = _batching()
    (x, indices), (x_batched, i_batched) = values, batched
    shape = b.example_shape(x, x_batched)
    axis = b.example_params(op, params, len(shape))["axis"]
    index_shape = b.example_shape(indices, i_batched)
    if len(index_shape) != (1 if axis is None else len(shape)):
        return b.loop(op, values, batched, params)  # numpy's error: ranks differ
    if axis is None:
        if not x_batched:
            return apply(REGISTRY["take"], (x, indices), {"axis": None})
        x, axis = b.flat_examples(x), 0
    elif not x_batched:
        # (a unit batch axis would do for numpy, but the rule's scatter needs x's shape)
        x = b.with_batch(x, b.batch_size(op, values, batched))
    if not i_batched:
        indices = b.reshaped(indices, (1, *index_shape))
    return apply(op, (x, indices), {"axis": axis + 1})


def _average_batch(op, values, batched, params):
    """sum(w x) / sum(w) for every example: 1-D weights along an integer axis aligned to
    x as numpy aligns them, batched inputs lifted to one example rank (a shared x gets a
    unit batch axis), and the axes moved up by one."""
    b = _batching()
    (x, w), (x_batched, w_batched) = values, batched
    sx, sw = b.example_shape(x, x_batched), b.example_shape(w, w_batched)
    p = b.example_params(op, params, len(sx))
    axis = p["axis"]
    if len(sw) == 1 and len(sx) > 1 and isinstance(axis, int):  # weights along the axis
        along = tuple(sw[0] if i == axis else 1 for i in range(len(sx)))
        lead = (b.batch_size(op, values, batched),) if w_batched else ()
        w, sw = b.reshaped(w, lead + along), along
    rank = max(len(sx), len(sw))
    if w_batched:
        w = b.lift(w, rank)
    x = b.lift(x, rank) if x_batched else b.reshaped(x, (1,) * (1 + rank - len(sx)) + sx)
    p["axis"] = tuple(range(1, rank + 1)) if axis is None else b.shift_axes(axis)
    return apply(op, (x, w), p)


def _add_aliases(name: str, aliases: tuple) -> None:
    """TensorFlow spellings of existing entries (``reduce_sum`` is ``sum``): added to the
    entry's ``aliases`` and the registry, as ``register`` does for its own aliases."""
    op = REGISTRY[name]
    for alias in aliases:
        if alias in REGISTRY:
            raise RuntimeError(f"function table: {alias!r} defined twice")
        REGISTRY[alias] = op
    object.__setattr__(op, "aliases", op.aliases + aliases)


# =======================================================================================
# The entries
# =======================================================================================
# --- statistics ------------------------------------------------------------------------
entry(name="var",
      forward=lambda x, axis=None, keepdims=False, ddof=0:
       np.var(x, axis=axis, ddof=ddof, keepdims=keepdims),
      vjps=(_var_vjp,), inputs=("x",), params=_STAT, kind="reduction",
      doc="variance (ddof: delta degrees of freedom, divides by n - ddof)",
      derivative="2 (x - mean) / (n - ddof)", sympy=_sympy_var)
entry(name="std",
      forward=lambda x, axis=None, keepdims=False, ddof=0:
       np.std(x, axis=axis, ddof=ddof, keepdims=keepdims),
      vjps=(_std_vjp,), inputs=("x",), params=_STAT, kind="reduction",
      doc="standard deviation sqrt(var) (ddof as var)",
      derivative="(x - mean) / ((n - ddof) std); 0 where std = 0",
      sympy=lambda sp, x, **p: _sympy_var(sp, x, root=True, **p))
entry(name="average", forward=_average, vjps=(_average_vjp_x, _average_vjp_w),
      inputs=("x", "weights"), params=(("axis", None), ("keepdims", False)), kind="statistics",
      doc="weighted mean sum(w x) / sum(w) (1-D weights lie along an integer axis, as numpy)",
      derivative="w / sum(w), (x - average) / sum(w)", domain="sum(w) != 0", sample=(0.5, 2.0),
      sympy=_sympy_average, batch=_average_batch)
entry(name="median",
      forward=lambda x, axis=None, keepdims=False:
       np.median(x, axis=axis, keepdims=keepdims),
      vjps=(_median_vjp,), inputs=("x",), params=(("axis", None), ("keepdims", False)),
      kind="reduction", doc="median (the mean of the two middle values for an even count)",
      derivative="1 at the middle element (1/2 at each of two); through the sorting permutation",
      sympy=_sympy_median)
entry(name="sort", forward=lambda x, axis=-1: np.sort(x, axis=axis), vjps=(_sort_vjp,),
      inputs=("x",), params=(("axis", -1),), kind="statistics",
      doc="sorted along an axis (axis=None: flattened)",
      derivative="g put back through the permutation", sympy=_sympy_sort, batch=_axis_batch())
entry(name="argmax",
      forward=lambda x, axis=None, keepdims=False:
       np.argmax(x, axis=axis, keepdims=keepdims),
      vjps=(None,), inputs=("x",), params=(("axis", None), ("keepdims", False)), kind="index",
      doc="index of the largest element (the first, on ties); an integer usable as an index",
      derivative="not differentiable", sympy=_sympy_arg(lambda sp, a, b: a >= b),
      batch=_axis_batch())
entry(name="argmin",
      forward=lambda x, axis=None, keepdims=False:
       np.argmin(x, axis=axis, keepdims=keepdims),
      vjps=(None,), inputs=("x",), params=(("axis", None), ("keepdims", False)), kind="index",
      doc="index of the smallest element (the first, on ties); an integer usable as an index",
      derivative="not differentiable", sympy=_sympy_arg(lambda sp, a, b: a <= b),
      batch=_axis_batch())

# --- scans -----------------------------------------------------------------------------
entry(name="cumsum", forward=lambda x, axis=None: np.cumsum(x, axis=axis), vjps=(_cumsum_vjp,),
      jvps=linear_rules("cumsum"), inputs=("x",), params=(("axis", None),), kind="scan",
      saves="none", doc="cumulative sum along an axis (axis=None: of the flattened array)",
      derivative="reversed cumulative sum of g",
      sympy=lambda sp, x, axis=None: np.cumsum(np.asarray(x, dtype=object), axis=axis),
      batch=_axis_batch())
entry(name="cumprod", forward=lambda x, axis=None: np.cumprod(x, axis=axis), vjps=(_cumprod_vjp,),
      inputs=("x",), params=(("axis", None),), kind="scan",
      doc="cumulative product along an axis (axis=None: of the flattened array)",
      derivative="products of the others, exact with zeros",
      sympy=lambda sp, x, axis=None: np.cumprod(np.asarray(x, dtype=object), axis=axis),
      batch=_axis_batch())
entry(name="diff", forward=_diff, vjps=(_diff_vjp,), jvps=linear_rules("diff"), inputs=("x",),
      params=(("n", 1), ("axis", -1)), kind="scan", saves="none",
      doc="n-th forward difference x[1:] - x[:-1] along an axis",
      derivative="g(k-1) - g(k), n times",
      sympy=lambda sp, x, n=1, axis=-1: _diff(np.asarray(x, dtype=object), n=n, axis=axis),
      batch="axis")
entry(name="log_softmax", forward=_log_softmax,
      vjps=(lambda m, g, ans, x, axis=-1: g - m.exp(ans) * m.sum(g, axis=axis, keepdims=True),),
      jvps=(lambda m, t, ans, x, axis=-1:
             t - m.sum(m.exp(ans) * t, axis=axis, keepdims=True),),
      inputs=("x",), params=(("axis", -1),), kind="softmax", saves="ans",
      doc="x - logsumexp(x) along an axis, computed stably", derivative="g - softmax(x) sum(g)",
      sympy=_sympy_log_softmax, batch="axis")

# --- elementwise -----------------------------------------------------------------------
entry(name="nan_to_num",
      forward=lambda x, nan=0.0, posinf=None, neginf=None:
       np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
      vjps=(lambda m, g, ans, x, **_: m.where(np.isfinite(_raw(x)), g, 0.0),), inputs=("x",),
      params=(("nan", 0.0), ("posinf", None), ("neginf", None)), elementwise=True,
      doc="nan, inf and -inf replaced by numbers (nan=0, the largest finite floats)",
      derivative="1 where x is finite, else 0", sympy=lambda sp, x, **_: x)
entry(name="exp2", forward=np.exp2, vjps=(lambda m, g, ans, x: g * ans * math.log(2.0),),
      inputs=("x",), elementwise=True, saves="ans", doc="2 ** x", derivative="2^x ln 2",
      sympy=lambda sp, x: 2 ** x)
entry(name="sinc", forward=_sinc, vjps=(_sinc_vjp,), inputs=("x",), elementwise=True,
      doc="sin(pi x) / (pi x), 1 at 0 (numpy's sinc)",
      derivative="(cos(pi x) - sinc(x)) / x; 0 at 0", sympy=lambda sp, x: sp.sinc(sp.pi * x))
entry(name="deg2rad", forward=np.deg2rad, vjps=(lambda m, g, ans, x: g * (math.pi / 180.0),),
      inputs=("x",), elementwise=True, saves="none", doc="degrees to radians", derivative="pi/180",
      sympy=lambda sp, x: x * sp.pi / 180, aliases=("radians",))
entry(name="rad2deg", forward=np.rad2deg, vjps=(lambda m, g, ans, x: g * (180.0 / math.pi),),
      inputs=("x",), elementwise=True, saves="none", doc="radians to degrees", derivative="180/pi",
      sympy=lambda sp, x: x * 180 / sp.pi, aliases=("degrees",))
entry(name="fabs", forward=np.fabs, vjps=(lambda m, g, ans, x: g * m.sign(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="absolute value |x| (as abs)",
      derivative="sign(x); 0 at x = 0", sympy=lambda sp, x: sp.Abs(x))
entry(name="trunc", forward=np.trunc, vjps=(lambda m, g, ans, x: m.zeros_like(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="x rounded toward zero", derivative="0",
      sympy=_trunc_sympy, aliases=("fix",))
entry(name="erf", forward=_erf,
      vjps=(lambda m, g, ans, x: g * _TWO_OVER_SQRT_PI * m.exp(-(x * x)),), inputs=("x",),
      elementwise=True, saves="inputs",
      doc="error function (computed here: series and continued fraction, no scipy)",
      derivative="2/sqrt(pi) exp(-x^2)", sympy=lambda sp, x: sp.erf(x))
entry(name="erfc", forward=_erfc,
      vjps=(lambda m, g, ans, x: -g * _TWO_OVER_SQRT_PI * m.exp(-(x * x)),), inputs=("x",),
      elementwise=True, saves="inputs",
      doc="complementary error function 1 - erf(x), accurate for large x",
      derivative="-2/sqrt(pi) exp(-x^2)", sympy=lambda sp, x: sp.erfc(x))
entry(name="logaddexp", forward=np.logaddexp,
      vjps=(lambda m, g, ans, x, y: g * m.exp(x - ans),
                                   lambda m, g, ans, x, y: g * m.exp(y - ans)),
      inputs=("x", "y"), elementwise=True, kind="binary",
      doc="log(exp(x) + exp(y)), computed stably", derivative="exp(x - ans), exp(y - ans)",
      sympy=lambda sp, x, y: sp.log(sp.exp(x) + sp.exp(y)))
entry(name="logaddexp2", forward=np.logaddexp2,
      vjps=(lambda m, g, ans, x, y: g * m.exp2(x - ans),
                                     lambda m, g, ans, x, y: g * m.exp2(y - ans)),
      inputs=("x", "y"), elementwise=True, kind="binary", doc="log2(2^x + 2^y), computed stably",
      derivative="2^(x - ans), 2^(y - ans)",
      sympy=lambda sp, x, y: sp.log(2 ** x + 2 ** y) / sp.log(2))
def _quotient_rule(quotient):
    """d/dy of x - y q(x/y) with q piecewise constant: -q, a hard zero where q is 0 (no
    0 * inf = nan from an infinite upstream gradient; see gate)."""
    def vjp(m, g, ans, x, y):
        q = quotient(m, x, y)
        return -gate(m, q != 0, g, g) * q  # (g is replaced first: no inf * 0)
    return vjp


entry(name="mod", forward=np.mod,
      vjps=(lambda m, g, ans, x, y: g,
                       _quotient_rule(lambda m, x, y: m.floor_divide(x, y))),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="remainder of x / y with the sign of y (Python's %, numpy's mod)",
      derivative="1, -floor(x / y)", domain="y != 0", sample=(0.5, 2.0),
      sympy=lambda sp, x, y: x - y * sp.floor(x / y), aliases=("remainder",))
entry(name="fmod", forward=np.fmod,
      vjps=(lambda m, g, ans, x, y: g,
                         _quotient_rule(lambda m, x, y: m.trunc(x / y))),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="remainder of x / y with the sign of x (C's fmod)", derivative="1, -trunc(x / y)",
      domain="y != 0", sample=(0.5, 2.0), sympy=lambda sp, x, y: x - y * _trunc_sympy(sp, x / y))
entry(name="floor_divide", forward=np.floor_divide, vjps=(_zero_binary, _zero_binary_y),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="floor(x / y) (Python's //)", derivative="0", domain="y != 0", sample=(0.5, 2.0),
      sympy=lambda sp, x, y: sp.floor(x / y))
entry(name="fmax", forward=np.fmax, vjps=(_fmax_rule(True, True), _fmax_rule(False, True)),
      inputs=("x", "y"), elementwise=True, kind="binary",
      doc="elementwise larger of x and y, ignoring nan",
      derivative="1 where larger; ties split 1/2", sympy=lambda sp, x, y: sp.Max(x, y))
entry(name="fmin", forward=np.fmin, vjps=(_fmax_rule(True, False), _fmax_rule(False, False)),
      inputs=("x", "y"), elementwise=True, kind="binary",
      doc="elementwise smaller of x and y, ignoring nan",
      derivative="1 where smaller; ties split 1/2", sympy=lambda sp, x, y: sp.Min(x, y))

# --- shape functions -------------------------------------------------------------------
# expand_dims' axis indexes its result (one dimension more), as stack's (Op.new_axis).
entry(name="expand_dims", forward=lambda x, axis: np.expand_dims(x, axis), vjps=(_reshape_back,),
      inputs=("x",), params=(("axis", None),), kind="shape", saves="none",
      doc="x with a new axis of length 1 at axis", derivative="reshape back",
      sympy=_numpy_sympy(lambda x, axis: np.expand_dims(x, axis)), new_axis=True,
      batch=_expand_dims_batch)
entry(name="squeeze", forward=lambda x, axis=None: np.squeeze(x, axis=axis), vjps=(_reshape_back,),
      inputs=("x",), params=(("axis", None),), kind="shape", saves="none",
      doc="x without its axes of length 1 (or only those named)", derivative="reshape back",
      sympy=_numpy_sympy(lambda x, axis=None: np.squeeze(x, axis=axis)), batch=_squeeze_batch)
entry(name="ravel", forward=lambda x: np.ravel(x), vjps=(_reshape_back,), inputs=("x",),
      kind="shape", saves="none", doc="the elements as a 1-D array, in C order",
      derivative="reshape back", sympy=_numpy_sympy(np.ravel), aliases=("flatten",),
      batch=_ravel_batch)
entry(name="atleast_1d", forward=np.atleast_1d, vjps=(_reshape_back,), inputs=("x",), kind="shape",
      saves="none", doc="x with at least 1 axis", derivative="reshape back",
      sympy=_numpy_sympy(np.atleast_1d), batch=_at_least_batch(1))
entry(name="atleast_2d", forward=np.atleast_2d, vjps=(_reshape_back,), inputs=("x",), kind="shape",
      saves="none", doc="x with at least 2 axes", derivative="reshape back",
      sympy=_numpy_sympy(np.atleast_2d), batch=_at_least_batch(2))
entry(name="atleast_3d", forward=np.atleast_3d, vjps=(_reshape_back,), inputs=("x",), kind="shape",
      saves="none", doc="x with at least 3 axes", derivative="reshape back",
      sympy=_numpy_sympy(np.atleast_3d), batch=_at_least_batch(3))
entry(name="broadcast_to", forward=broadcast_to_forward,
      vjps=(lambda m, g, ans, x, shape: m.sum_to(g, shape=shape_of(x)),), inputs=("x",),
      params=(("shape", None),), kind="shape", saves="none",
      doc="x broadcast to a shape (numpy's rules)", derivative="g summed back to x's shape",
      sympy=_numpy_sympy(lambda x, shape: np.broadcast_to(x, shape)), batch="broadcast")
entry(name="repeat", forward=_repeat, vjps=(_repeat_vjp,), inputs=("x",),
      params=(("repeats", None), ("axis", None)), kind="shape", saves="none",
      doc="each element repeated (an integer count, or a count per element as numpy; "
       "axis=None: flattened)",
      derivative="sum of g over the copies", sympy=_numpy_sympy(_repeat), batch=_axis_batch())
entry(name="tile", forward=lambda x, reps: np.tile(x, reps), vjps=(_tile_vjp,), inputs=("x",),
      params=(("reps", None),), kind="shape", saves="none",
      doc="x repeated reps times along each axis", derivative="sum of g over the tiles",
      sympy=_numpy_sympy(lambda x, reps: np.tile(x, reps)), batch=_tile_batch)
entry(name="flip", forward=lambda x, axis=None: np.flip(x, axis=axis),
      vjps=(lambda m, g, ans, x, axis=None: m.flip(g, axis=axis),), inputs=("x",),
      params=(("axis", None),), kind="shape", saves="none",
      doc="x reversed along an axis (axis=None: all axes)", derivative="g reversed",
      sympy=_numpy_sympy(lambda x, axis=None: np.flip(x, axis)), batch=_axis_batch(flatten=False))
entry(name="fliplr", forward=np.fliplr, vjps=(lambda m, g, ans, x: m.fliplr(g),), inputs=("x",),
      kind="shape", saves="none", doc="x reversed along axis 1", derivative="g reversed",
      sympy=_numpy_sympy(np.fliplr), batch=_flip_axis_batch(1))
entry(name="flipud", forward=np.flipud, vjps=(lambda m, g, ans, x: m.flipud(g),), inputs=("x",),
      kind="shape", saves="none", doc="x reversed along axis 0", derivative="g reversed",
      sympy=_numpy_sympy(np.flipud), batch=_flip_axis_batch(0))
entry(name="roll", forward=lambda x, shift, axis=None: np.roll(x, shift, axis=axis),
      vjps=(lambda m, g, ans, x, shift, axis=None: m.roll(
           g, shift=tuple(-s for s in shift) if isinstance(shift, tuple) else -shift,
           axis=axis),),
      inputs=("x",), params=(("shift", None), ("axis", None)), kind="shape", saves="none",
      doc="elements shifted cyclically along an axis (axis=None: flattened)",
      derivative="g rolled back",
      sympy=_numpy_sympy(lambda x, shift, axis=None: np.roll(x, shift, axis=axis)),
      batch=_axis_batch(unflatten=True))
entry(name="rot90", forward=lambda x, k=1, axes=(0, 1): np.rot90(x, k, axes),
      vjps=(lambda m, g, ans, x, k=1, axes=(0, 1): m.rot90(g, k=-k, axes=axes),), inputs=("x",),
      params=(("k", 1), ("axes", (0, 1))), kind="shape", saves="none",
      doc="x rotated by 90 degrees k times in the plane of two axes", derivative="g rotated back",
      sympy=_numpy_sympy(lambda x, k=1, axes=(0, 1): np.rot90(x, k, axes)), batch="axis")
entry(name="swapaxes", forward=lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2),
      vjps=(lambda m, g, ans, x, axis1, axis2: m.swapaxes(g, axis1=axis1, axis2=axis2),),
      inputs=("x",), params=(("axis1", None), ("axis2", None)), kind="shape", saves="none",
      doc="x with two axes interchanged", derivative="g with the axes swapped back",
      sympy=_numpy_sympy(lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2)),
      batch=_swapaxes_batch)
entry(name="moveaxis", forward=lambda x, source, destination: np.moveaxis(x, source, destination),
      vjps=(lambda m, g, ans, x, source, destination:
        m.moveaxis(g, source=destination, destination=source),),
      inputs=("x",), params=(("source", None), ("destination", None)), kind="shape", saves="none",
      doc="x with axes moved to new places", derivative="g with the axes moved back",
      sympy=_numpy_sympy(lambda x, source, destination: np.moveaxis(x, source, destination)),
      batch=_moveaxis_batch)
def _pad_api(op, plain):
    """``pad(x, pad_width, mode='constant', constant_values=0.0)``: numpy.pad's signature
    (the third argument is numpy's mode; constant is the one mode gradcli computes)."""
    def pad(x, pad_width=None, mode="constant", constant_values=0.0):
        if not isinstance(mode, str):
            raise TypeError(f"pad: the third argument is numpy's mode ('constant'), got "
                            f"{mode!r}; give the fill value as constant_values=")
        if mode != "constant":
            raise ValueError(f"pad: mode {mode!r} is not computed by gradcli; only "
                             f"'constant' (with constant_values=)")
        return plain(x, pad_width, constant_values)
    pad.__doc__ = (f"{plain.__doc__}\n\npad(x, pad_width, mode='constant', "
                   f"constant_values=0.0) as numpy.pad.")
    return pad


entry(name="pad", forward=_pad, vjps=(_pad_vjp,),
      jvps=(lambda m, t, ans, x, pad_width, constant_values=0.0:
             m.pad(t, pad_width=pad_width, constant_values=0.0),),
      inputs=("x",), params=(("pad_width", None), ("constant_values", 0.0)), kind="shape",
      saves="none", doc="x padded with a constant (numpy's pad, constant mode)",
      derivative="the middle of g", sympy=_sympy_pad, batch=_pad_batch, api=_pad_api)
_joined(name="vstack", promote=np.atleast_2d, axis_of=lambda x: 0, doc="arrays joined along axis 0 (1-D as rows)",
        batch=_joined_batch(2, lambda shape: 0))
_joined(name="hstack", promote=np.atleast_1d, axis_of=lambda x: 0 if len(shape_of(x)) <= 1 else 1,
        doc="arrays joined along axis 1 (1-D: along axis 0)",
        batch=_joined_batch(1, lambda shape: 0 if len(shape) == 1 else 1))
_joined(name="dstack", promote=np.atleast_3d, axis_of=lambda x: 2, doc="arrays joined along axis 2 (depth)",
        batch=_joined_batch(3, lambda shape: 2))
_SPLIT, _split_public = _splitter("split")
_ARRAY_SPLIT, _array_split_public = _splitter("array_split")


def _pieces(public):
    """The ``api`` of an entry returning several tensors: ``public`` runs it as one
    recorded slice per piece, so the gradient of any piece flows back into its place."""
    def api(op, plain):
        public.__doc__ = plain.__doc__
        return public
    return api


def _splitting(name, forward, public, numpy_split, doc):
    """``split`` and ``array_split``: one recorded slice per piece (``public``)."""
    entry(name=name, forward=forward, vjps=(None,), inputs=("x",),
          params=(("indices_or_sections", None), ("axis", 0)), kind="multi", doc=doc,
          derivative="each piece is a slice of x (gradients flow through getitem)",
          sympy=_numpy_sympy(lambda x, indices_or_sections, axis=0:
                             tuple(numpy_split(x, indices_or_sections, axis=axis))),
          batch=_split_batch, api=_pieces(public))


_splitting(name="split", forward=_SPLIT, public=_split_public, numpy_split=np.split,
           doc="x cut into equal pieces (a count) or at indices: a tuple of tensors")
_splitting(name="array_split", forward=_ARRAY_SPLIT, public=_array_split_public,
           numpy_split=np.array_split,
           doc="x cut into pieces (a count need not divide the length): a tuple of tensors")
# (The language picks one piece by index, ``split(x, 2)[1]``; the sympy form returns the
# pieces as a tuple.)
entry(name="take", forward=_take, vjps=(_take_vjp, None), inputs=("x", "indices"),
      params=(("axis", None),), kind="index",
      doc="elements at integer indices (along an axis; axis=None: of the flattened array)",
      derivative="g added back at the indices", sympy=_sympy_take, batch=_take_batch)
entry(name="gather", forward=lambda x, indices, axis=0: _take(x, indices, axis=axis),
      vjps=(
       lambda m, g, ans, x, indices, axis=0: _take_vjp(m, g, ans, x, indices, axis=axis),
       None),
      inputs=("x", "indices"), params=(("axis", 0),), kind="index",
      doc="TensorFlow's gather: take along axis 0 by default",
      derivative="g added back at the indices",
      sympy=lambda sp, x, indices, axis=0: _sympy_take(sp, x, indices, axis=axis),
      batch=_take_batch)
entry(name="take_along_axis", forward=_take_along_axis, vjps=(_take_along_axis_vjp, None),
      inputs=("x", "indices"), params=(("axis", None),), kind="index",
      doc="elements picked along an axis by an index array of the same rank",
      derivative="g added back at the indices", sympy=_sympy_take_along_axis,
      batch=_take_along_axis_batch)

# --- internal: the dtype cast behind Tensor.astype --------------------------------------
entry(name="cast", forward=lambda x, dtype: np.asarray(x).astype(dtype)[()],
      vjps=(lambda m, g, ans, x, dtype:
                   m.cast(g, dtype=getattr(x, "dtype", np.dtype(np.float64))),),
      jvps=(lambda m, t, ans, x, dtype: m.cast(t, dtype=dtype),), inputs=("x",),
      params=(("dtype", None),), kind="shape", saves="none", doc="x in another float dtype",
      batch="elementwise", internal=True)

# --- result sizes of the entries whose result may be much larger than their inputs -----
def _prod(dims) -> int:
    return math.prod(int(d) for d in dims)


def _pad_size(shapes, params) -> int:
    shape = shapes[0]
    try:  # numpy's forms: n, (n,), (before, after), ((before, after), ...) per axis
        pairs = np.broadcast_to(np.asarray(params["pad_width"], dtype=np.int64),
                                (len(shape), 2))
    except ValueError:
        return 0  # numpy reports the mismatch
    return _prod(n + int(lo) + int(hi) for n, (lo, hi) in zip(shape, pairs))


def _take_size(shapes, params) -> int:
    x, idx = shapes
    axis = params.get("axis")
    if axis is None or not x:
        return _prod(idx)
    return _prod(x) // max(1, x[axis % len(x)]) * _prod(idx)


#: name -> fn(input shapes, params) -> the number of elements of the result, for entries
#: whose result can be much larger than their inputs. The language checks it against its
#: array size limit before running them (gradcli.lang.evaluate).
RESULT_SIZE = {
    "repeat": lambda shapes, p: _prod(shapes[0]) * max(0, int(p["repeats"])),
    "tile": lambda shapes, p: _prod(shapes[0]) * _prod(
        p["reps"] if isinstance(p["reps"], tuple) else (p["reps"],)),
    "pad": _pad_size,
    "broadcast_to": lambda shapes, p: _prod(
        p["shape"] if isinstance(p["shape"], tuple) else (p["shape"],)),
    "take": _take_size,
    "gather": _take_size,
    "take_along_axis": lambda shapes, p: max(_prod(shapes[1]), _prod(shapes[0])),
}

# --- TensorFlow names of existing reductions -------------------------------------------
_add_aliases(name="sum", aliases=("reduce_sum",))
_add_aliases(name="mean", aliases=("reduce_mean",))
_add_aliases(name="max", aliases=("reduce_max",))
_add_aliases(name="min", aliases=("reduce_min",))
_add_aliases(name="prod", aliases=("reduce_prod",))
_add_aliases(name="logsumexp", aliases=("reduce_logsumexp",))
