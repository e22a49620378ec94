"""Statistics and scans (issue 10, parts 3 and 4): ``var``, ``std``, ``average``,
``median``, ``sort``, ``argmax``, ``argmin``, ``cumsum``, ``cumprod``, ``diff``,
``log_softmax``, and TensorFlow's names of the reductions (``reduce_sum``, ...).

Loaded on demand (see the package's docstring).

Conventions decided here (where numpy or TensorFlow leave a choice):
- ``sort``, ``median``: the gradient flows through the permutation that sorts the input
  (numpy's stable order); tied elements get the gradient of the place each was sorted
  to. ``median`` of an even count gives 1/2 to each of the two middle elements.
- ``std`` at an input whose elements are all equal: the subgradient 0 (as ``norm`` at 0).
- ``argmax``/``argmin``: integer results, not differentiable (declared: no rule);
  usable as indices (``x[argmax(x)]``, ``take(x, argmax(x))``).
"""
from __future__ import annotations

import numpy as np

from ..core.derive import entry, linear_rules
from ..core.recording import NP, apply
from ..core.table import REGISTRY
from ..core.tensor import Tensor, shape_of
from . import linalg  # noqa: F401  (its entries come first in the table)
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


def raw_value(x):
    """The numpy value of a rule's argument (a Tensor under nested tapes, else numpy)."""
    return x._value if isinstance(x, Tensor) else x


def numpy_sympy(forward):
    """A shape function's sympy form: the numpy function itself, on object arrays."""
    return lambda sp, *xs, **params: forward(*xs, **params)


def axis_of(shape, axis) -> int:
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
    if not ordinary(raw_value(ans), norm_bounds(x, 2)):
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
    raw = np.asarray(raw_value(x))
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
    raw = np.asarray(raw_value(x))
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
    raw = np.asarray(raw_value(x))
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
    ax = axis_of(shape_of(x), axis)
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
# Batching rules (inside vectorized_map; see gradcli.engine.batching): each computes the
# result for every example at once, with a few calls of entries on the batched tensors
# (batch on axis 0), whatever the batch size. Where numpy reads an input specially
# (axis=None, an example's rank) the rule says how; an input numpy refuses goes to
# batching.loop, whose first example then raises the entry's own error.
# ---------------------------------------------------------------------------------------
def batching_module():
    """The batching module, imported on first use (it imports the table, which this
    module is still filling when it is imported)."""
    from ..core import batching
    return batching


def axis_batch(flatten: bool = True, unflatten: bool = False):
    """One input with an ``axis`` of one example: the axis moves up by one. axis=None is
    numpy's "of the flattened array" (``flatten``: each example flattened, the entry run
    along axis 1, and with ``unflatten`` reshaped back, as roll does), or else all of an
    example's axes (flip)."""
    def rule(op, values, batched, params):
        b = batching_module()
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


def _average_batch(op, values, batched, params):
    """sum(w x) / sum(w) for every example: 1-D weights along an integer axis aligned to
    x as numpy aligns them, batched inputs lifted to one example rank (a shared x gets a
    unit batch axis), and the axes moved up by one."""
    b = batching_module()
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
      derivative="g put back through the permutation", sympy=_sympy_sort, batch=axis_batch())
entry(name="argmax",
      forward=lambda x, axis=None, keepdims=False:
       np.argmax(x, axis=axis, keepdims=keepdims),
      vjps=(None,), inputs=("x",), params=(("axis", None), ("keepdims", False)), kind="index",
      doc="index of the largest element (the first, on ties); an integer usable as an index",
      derivative="not differentiable", sympy=_sympy_arg(lambda sp, a, b: a >= b),
      batch=axis_batch())
entry(name="argmin",
      forward=lambda x, axis=None, keepdims=False:
       np.argmin(x, axis=axis, keepdims=keepdims),
      vjps=(None,), inputs=("x",), params=(("axis", None), ("keepdims", False)), kind="index",
      doc="index of the smallest element (the first, on ties); an integer usable as an index",
      derivative="not differentiable", sympy=_sympy_arg(lambda sp, a, b: a <= b),
      batch=axis_batch())

# --- scans -----------------------------------------------------------------------------
entry(name="cumsum", forward=lambda x, axis=None: np.cumsum(x, axis=axis), vjps=(_cumsum_vjp,),
      jvps=linear_rules("cumsum"), inputs=("x",), params=(("axis", None),), kind="scan",
      saves="none", doc="cumulative sum along an axis (axis=None: of the flattened array)",
      derivative="reversed cumulative sum of g",
      sympy=lambda sp, x, axis=None: np.cumsum(np.asarray(x, dtype=object), axis=axis),
      batch=axis_batch())
entry(name="cumprod", forward=lambda x, axis=None: np.cumprod(x, axis=axis), vjps=(_cumprod_vjp,),
      inputs=("x",), params=(("axis", None),), kind="scan",
      doc="cumulative product along an axis (axis=None: of the flattened array)",
      derivative="products of the others, exact with zeros",
      sympy=lambda sp, x, axis=None: np.cumprod(np.asarray(x, dtype=object), axis=axis),
      batch=axis_batch())
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


# --- TensorFlow names of existing reductions -------------------------------------------
_add_aliases(name="sum", aliases=("reduce_sum",))
_add_aliases(name="mean", aliases=("reduce_mean",))
_add_aliases(name="max", aliases=("reduce_max",))
_add_aliases(name="min", aliases=("reduce_min",))
_add_aliases(name="prod", aliases=("reduce_prod",))
_add_aliases(name="logsumexp", aliases=("reduce_logsumexp",))
