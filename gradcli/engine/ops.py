"""The function table: every operation of gradcli, one entry each.

An entry holds the forward numpy computation, one backward rule (VJP) per input, the
sympy counterpart, and a description (see ``table.Op``). Rules are written against a
namespace ``m``: on the fast path ``m`` is ``NP`` (each entry's raw numpy forward), and
when an outer tape is recording ``m`` is ``ENGINE`` (each entry's differentiable
wrapper), so one rule gives first derivatives quickly and higher derivatives exactly.

Adding a function is adding one ``register(Op(...))`` below; the Python API
(``gradcli.sin``), the expression language, ``gradcli functions``, the sympy check and
the tests all read it.
"""
from __future__ import annotations

import itertools
import math
import operator
import sys
from types import SimpleNamespace

import numpy as np

from ..errors import ArgumentError, ShapeError
from . import state
from .fast import fits_into, reusable_buffer
from .table import (INPLACE, LOADERS, ORDER, REGISTRY, LazyTable, Op, complete, lookup,
                    normalise_axes, register)
from .tensor import Batched, Node, NotBatchable, Shape, Tensor, Variable, as_value

EMPTY: dict = {}
_recording = state.recording
_forward = state.forward  # active forward accumulators (empty: forward mode is off)
_new_tensor = object.__new__
_sequence = itertools.count(1)  # recording order: the backward pass's topological order

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf}

# An input a rule does not read is kept by its node as its Shape only when it has more
# elements than this (small values cost nothing to keep; large ones are what is freed).
SHAPE_ONLY_ABOVE = 64


# Internal entries serve the backward rules (broadcast_to, sum_to, getitem, scatter, ...);
# they are differentiable like any entry but are not part of the language.
INTERNAL: dict[str, Op] = LazyTable()


# ---------------------------------------------------------------------------------------
# Running an entry
# ---------------------------------------------------------------------------------------
def apply(op: Op, inputs, params=EMPTY, frames: int = 0) -> Tensor:
    """Run a table entry on tensors or array-likes and, when a tape traces one of the
    inputs, record it. For variadic entries ``inputs`` is the sequence of tensors.
    ``frames``: how many Python frames lie between the user's expression and this call
    (1 for the operators), for the temporary-reuse check of ``fast.reusable_buffer``."""
    # Python numbers stay Python numbers: numpy treats them as weak scalars, so float32
    # tensors stay float32, and scalar arithmetic stays fast. A list or tuple is looked
    # into only here, off the path tensors and numbers take (see _sequence_value).
    try:
        values = [x._value if isinstance(x, Tensor) else
                  x if x.__class__ is float or x.__class__ is int else
                  as_value(x) if x.__class__ is not list and x.__class__ is not tuple else
                  _sequence_value(x) for x in inputs]
    except _HoldsTensors:
        return apply(op, tuple(_packed(x) for x in inputs), params, frames)
    except NotBatchable:
        # An input is a batched value of vectorized_map (its __array__ raises): the
        # entry's batching rule runs, off the path plain tensors take.
        from .batching import apply_batched
        return apply_batched(op, inputs, params)
    buffer = None if op.reuse is None else reusable_buffer(inputs, values, frames,
                                                           _recording, _forward)
    try:
        if buffer is not None:
            ans = op.reuse(*values, out=buffer)
        elif params is EMPTY:
            ans = op.forward(*values)
        else:
            if op.axis_params and values:
                # Axes made non-negative once, here: the forward, the recorded node (so
                # the rules) and the messages see the same axes (see table.normalise_axes;
                # entries without parameters never come here).
                params = normalise_axes(op, np.ndim(values[0]), params)
            ans = op.forward(*values, **params)
    except ShapeError:
        raise
    except (ValueError, IndexError, TypeError) as err:
        raise _shape_error(op, values, params, err) from None
    if ans.__class__ is float or ans.__class__ is int:
        ans = np.float64(ans)
    out = _new_tensor(Tensor)  # _make, inlined: this is the hottest path
    out._value = ans
    out._node = None
    if _recording:
        _record(op, out, inputs, values, params)
    if _forward:
        _propagate(op, out, inputs, values, params)
    return out


class _HoldsTensors(Exception):
    """Raised by _sequence_value: an input is a list or tuple holding tensors."""


def _holds_tensor(x) -> bool:
    """Whether x is a tensor or a (nested) list or tuple holding one (iteratively)."""
    stack = [x]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor) or item.__class__ is Batched:
            return True
        if item.__class__ is list or item.__class__ is tuple:
            stack.extend(item)
    return False


def _sequence_value(x):
    """The value of a list or tuple input; one holding tensors must be packed into a
    recorded ``stack`` (as TensorFlow and autograd pack it), so that gradients reach the
    tensors: ``apply`` then starts again with the packed input."""
    if _holds_tensor(x):
        raise _HoldsTensors
    return as_value(x)


def _packed(x):
    """A list or tuple holding tensors as one stacked tensor; anything else unchanged."""
    if (x.__class__ is not list and x.__class__ is not tuple) or not _holds_tensor(x):
        return x
    return apply(REGISTRY["stack"], tuple(_packed(item) for item in x), {"axis": 0})


def _record(op: Op, out: Tensor, inputs, values, params) -> None:
    # (loops rather than comprehensions: this runs between large operations, when the
    # caches are cold and every extra function object and frame costs)
    parents = []
    variables = False
    for x in inputs:
        cls = x.__class__
        if cls is Tensor:
            parents.append(x._node)
        elif cls is Variable:
            parents.append(x._node)
            variables = True
        else:
            parents.append(None)
    tapes = ()
    for trace in _recording:
        if variables and trace.watch_accessed:  # reading a variable makes the tape watch it
            _watch_read(trace, inputs)
        watched = trace.watched
        for node in parents:
            if node is not None and (trace in node.tapes or id(node) in watched):
                tapes = trace.alone if not tapes else tapes + trace.alone
                break
    if not tapes or not op.differentiable:
        return
    ans = out._value
    # A single non-persistent tape differentiates once, in numpy: keep only what the rules
    # read. Otherwise (nested or persistent tapes) keep everything, since rules computed
    # under another tape may be differentiated again.
    if len(_recording) == 1 and not trace.persistent:
        if not op.keeps_inputs:  # (values is apply's own list: changed in place)
            i = 0
            for v in values:  # small values cost nothing to keep; large arrays are freed
                if v.__class__ is np.ndarray and v.size > SHAPE_ONLY_ABOVE:
                    values[i] = Shape((v.shape, v.dtype))
                i += 1
        if not op.keeps_ans:
            ans = None
    out._node = Node(op, parents, values, ans, params, tapes, next(_sequence))


def _watch_read(trace, inputs) -> None:
    for x in inputs:
        if x.__class__ is Variable and x._trainable and id(x._node) not in trace.watched:
            trace.tape._watch_variable(x)


def _shape_error(op: Op, values, params, err: Exception) -> ShapeError:
    shapes = [np.shape(v) for v in values]
    if op.name in ("matmul", "dot") and len(shapes) == 2:
        what = f"{shapes[0]} @ {shapes[1]}"
    elif len(shapes) == 2:
        what = f"{shapes[0]} and {shapes[1]}"
    elif shapes:
        what = ", ".join(str(s) for s in shapes)
    else:
        what = ", ".join(f"{k}={v!r}" for k, v in params.items())
    detail = str(err).split("\n")[0]
    if isinstance(err, np.linalg.LinAlgError):  # not a shape: the matrix is outside the domain
        return ShapeError(f"{op.name}: {detail} ({what})")
    if "broadcast" in detail:
        detail = "the shapes do not broadcast together"
    elif "core dimension" in detail or "not aligned" in detail:
        detail = "the inner dimensions differ"
    return ShapeError(f"shape mismatch in {op.name}: {what} ({detail})")


def _function(op: Op):
    """The Python API function for an entry: ``sin(x)``, ``sum(x, axis=None, ...)``."""
    n_inputs = len(op.inputs)
    defaults = dict(op.params)
    names = [name for name, _ in op.params]

    if op.variadic:
        def fn(xs, *args, **kwargs):
            return apply(op, tuple(xs), _bind(op, names, defaults, args, kwargs))
    elif not op.params and n_inputs == 1:
        def fn(x):
            return apply(op, (x,), EMPTY)
    elif not op.params and n_inputs == 2:
        def fn(x, y):
            return apply(op, (x, y), EMPTY)
    else:
        def fn(*args, **kwargs):
            if len(args) == n_inputs and not kwargs:  # defaults: one shared, unchanged dict
                return apply(op, args, defaults)
            if len(args) < n_inputs:
                raise TypeError(f"{op.name}() takes {n_inputs} input(s) "
                                f"({', '.join(op.inputs)}), got {len(args)}")
            return apply(op, args[:n_inputs], _bind(op, names, defaults, args[n_inputs:], kwargs))
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = f"{op.doc}\n\nDerivative: {op.derivative or 'none'}. Domain: {op.domain}."
    return fn if op.api is None else op.api(op, fn)


def _bind(op, names, defaults, args, kwargs) -> dict:
    if len(args) > len(names):
        raise TypeError(f"{op.name}() got too many arguments")
    params = dict(defaults)
    params.update(zip(names, args))
    for key, value in kwargs.items():
        if key not in defaults:
            raise TypeError(f"{op.name}() got an unexpected keyword argument {key!r}")
        params[key] = value
    return _static_params(op, params, (*names[:len(args)], *kwargs))


def _static_params(op, params: dict, given) -> dict:
    """Tensors given for static parameters (an axis, a shape, a fill value) are read as
    numbers; a tensor a recording tape traces is refused, since its gradient would be
    silently lost (``full``/``linspace``/... take tensors differentiably: see below)."""
    for key in given:
        value = params[key]
        if isinstance(value, Tensor) or (
                (value.__class__ is tuple or value.__class__ is list) and _holds_tensor(value)):
            params[key] = _static_value(op.name, key, value)
    return params


def _static_value(name: str, key: str, value):
    if value.__class__ is tuple or value.__class__ is list:
        return type(value)(_static_value(name, key, v) for v in value)
    if not isinstance(value, Tensor):
        return value
    if _traced(value):
        raise ArgumentError(f"{key} of {name} is a static parameter: it cannot be "
                            f"differentiated, but it was given a tensor that a tape is "
                            f"tracing; pass a number (float(t)) or stop_gradient(t) to "
                            f"use its value as a constant")
    v = value._value
    if np.ndim(v):
        return v
    v = v.item()  # a Python number: 2.0 as an axis or a shape is the integer 2
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _traced(x: Tensor) -> bool:
    """Whether a recording tape traces ``x``, so that a gradient could reach it."""
    node = x._node
    for trace in _recording:
        if node is not None and (trace in node.tapes or id(node) in trace.watched):
            return True
        if x.__class__ is Variable and x._trainable and trace.watch_accessed:
            return True  # reading it would make the tape watch it
    return False


# ---------------------------------------------------------------------------------------
# Helpers the rules share
# ---------------------------------------------------------------------------------------
def _shape(x) -> tuple:
    shape = getattr(x, "shape", None)  # tensors, numpy values, Shape
    return shape if shape is not None else np.shape(x)


def _norm_axes(axis, ndim: int) -> tuple:
    if axis is None or not ndim:  # (a 0-d value has no axes: numpy's axis 0 is all of it)
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def _keep_shape(shape: tuple, axis) -> tuple:
    """The shape a reduction over ``axis`` has with keepdims=True."""
    axes = _norm_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _expand(m, g, shape, axis, keepdims):
    """Broadcast a reduction's upstream gradient back to the input's shape."""
    if not keepdims and _shape(g) != ():  # a scalar broadcasts as it is
        g = m.reshape(g, shape=_keep_shape(shape, axis))
    return m.broadcast_to(g, shape=shape)


def _reduced(m, ans, shape, axis, keepdims):
    """The reduction's result reshaped so it broadcasts against the input."""
    return ans if keepdims else m.reshape(ans, shape=_keep_shape(shape, axis))


def _count(shape, axis) -> int:
    return int(np.prod([shape[a] for a in _norm_axes(axis, len(shape))], dtype=np.int64))


def _sum_to(g, shape):
    """Sum a broadcast gradient back to ``shape`` (the one place un-broadcasting happens)."""
    g = np.asarray(g)
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and gshape[lead + i] != 1)
    # methods rather than np.sum / np.reshape: less Python between two large operations;
    # without leading axes keepdims gives the shape directly, as an array of its own
    if not lead:
        return g.sum(axis=axes, keepdims=True)
    return g.sum(axis=axes).reshape(shape)


def _reshape(x, shape):
    return np.asarray(x).reshape(shape)


def _broadcast_to(x, shape):
    """np.broadcast_to, with a fast path for a single value (what the rule of a sum
    broadcasts): a view with zero strides of a private copy of the value, made without
    np.broadcast_to's Python-level iterator, which costs ~25 µs right after a large array
    operation has flushed the caches. (The private copy makes the view safe without the
    read-only flag, whose setting costs ~5 µs more there: nothing else sees its memory,
    and the backward pass never writes into arrays that are not their own.)"""
    a = np.asarray(x)
    if a.size == 1 and a.ndim <= len(shape):  # (np.ndarray refuses negative sizes)
        if a is x:  # an array someone may hold (a numpy scalar was converted: a new one)
            a = a.copy()
        return np.ndarray(shape, a.dtype, a, 0, (0,) * len(shape))
    return np.broadcast_to(a, shape)


def _getitem(x, index):
    return x[index]


def _scatter(g, index, shape):
    """Zeros of ``shape`` with ``g`` added at ``index`` (the adjoint of indexing)."""
    out = np.zeros(shape, dtype=np.result_type(g, np.float32))
    if any(isinstance(i, (np.ndarray, list)) for i in (index if isinstance(index, tuple) else (index,))):
        np.add.at(out, index, g)  # repeated integer indices must accumulate
    else:
        out[index] = g
    return out


def _swap_last(m, a):
    nd = len(_shape(a))
    if nd == 2:
        return m.transpose(a)
    return m.transpose(a, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _matmul_vjp_x(m, g, ans, x, y):
    xs, ys = _shape(x), _shape(y)
    if len(xs) == 1 and len(ys) == 1:
        return g * y
    if len(ys) == 1:                    # (..., m, n) @ (n,) -> (..., m)
        return m.reshape(g, shape=_shape(g) + (1,)) * y
    if len(xs) == 1:                    # (n,) @ (..., n, k) -> (..., k)
        col = m.matmul(y, m.reshape(g, shape=_shape(g) + (1,)))
        return m.reshape(col, shape=_shape(col)[:-1])
    return m.matmul(g, _swap_last(m, y))


def _matmul_vjp_y(m, g, ans, x, y):
    xs, ys = _shape(x), _shape(y)
    if len(xs) == 1 and len(ys) == 1:
        return g * x
    if len(ys) == 1:
        col = m.matmul(_swap_last(m, x), m.reshape(g, shape=_shape(g) + (1,)))
        return m.reshape(col, shape=_shape(col)[:-1])
    if len(xs) == 1:
        return m.reshape(x, shape=(xs[0], 1)) * m.reshape(g, shape=_shape(g)[:-1] + (1,) + _shape(g)[-1:])
    return m.matmul(_swap_last(m, x), g)


def _dot(x, y):
    if np.ndim(x) > 2 or np.ndim(y) > 2:
        raise ValueError("dot takes arrays of at most 2 dimensions; use matmul (@) for batches")
    return np.dot(x, y)


def _dot_vjp(which):
    def vjp(m, g, ans, x, y):
        if len(_shape(x)) == 0 or len(_shape(y)) == 0:
            other = y if which == 0 else x
            return g * other
        return (_matmul_vjp_x if which == 0 else _matmul_vjp_y)(m, g, ans, x, y)
    return vjp


def _scale_in_place(g, factor):
    """g *= factor, when that keeps g's shape and dtype (else None: use the plain rule)."""
    if g.__class__ is not np.ndarray or not fits_into(g, factor):
        return None
    g *= factor
    return g


def _power_in_place(g, ans, x, y, spare=(None, None)):
    if not ((type(y) is float or type(y) is int) and y == 2
            and x.dtype == getattr(g, "dtype", None)):
        return None
    if g.__class__ is np.ndarray:
        g *= x
        g *= 2.0
        return g
    # a scalar g (the gradient of a sum): 2 g x, into x's array when no one needs it
    out = spare[1] if spare[1] is not None else np.empty_like(x)
    return np.multiply(x, 2.0 * g, out=out)


def _tanh_in_place(g, ans, x, spare=(None, None)):
    """g (1 - ans^2), computed into ans's own array when no one needs it any more (else
    into one new array), then into g when g is an array."""
    t = spare[0] if spare[0] is not None else np.empty_like(ans)
    np.multiply(ans, ans, out=t)  # elementwise: t may be ans itself
    np.subtract(1.0, t, out=t)
    if g.__class__ is np.ndarray:
        g *= t
        return g
    t *= g
    return t


def _sigmoid(x):
    """1 / (1 + exp(-x)) to full relative precision over the whole range: for x < 0 as
    exp(x) / (1 + exp(x)), so that log(sigmoid(-30)) is -30, not -29.99983 (the value
    0.5 (1 + tanh(x/2)) loses the digits of a small result to cancellation)."""
    if x.__class__ is np.ndarray and x.ndim and x.dtype.kind == "f":  # two arrays, not five
        e = np.abs(x)
        np.negative(e, out=e)
        np.exp(e, out=e)
        out = np.where(x >= 0, 1.0, e)
        e += 1.0
        out /= e
        return out
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def _sigmoid_complement(m, ans, x):
    """1 - sigmoid(x) to full relative precision: 1 - ans cancels for x > 0, where it is
    exp(-x) sigmoid(x) instead."""
    return m.where(x > 0, m.exp(-m.abs(x)) * ans, 1.0 - ans)


def _sigmoid_in_place(g, ans, x, spare=(None, None)):
    if g.__class__ is not np.ndarray:
        return None
    g *= ans                                   # g s
    g *= _sigmoid_complement(NP, ans, x)       # (1 - s), accurate on both sides
    return g


def _cos_in_place(g, ans, x, spare=(None, None)):
    if g.__class__ is not np.ndarray:
        return None
    t = np.sin(x)
    np.negative(t, out=t)
    g *= t
    return g


def _power_vjp_x(m, g, ans, x, y):
    # Constant exponents are the common case (x**2): avoid a general power in the rule.
    if type(y) is float or type(y) is int:
        if y == 2:
            return g * 2.0 * x
        if y == 1:
            return g
        if y == 0:  # x ** 0 does not depend on x: a hard zero, even under an infinite g
            return gate(m, False, m.zeros_like(x), g)
        return g * y * x ** (y - 1)
    # y == 0: a hard zero, as the literal x ** 0 (0 * 0 ** -1 would be nan at x = 0).
    return gate(m, y != 0, g * y * x ** (y - 1), g)


def _power_vjp_y(m, g, ans, x, y):
    # d/dy x**y = x**y log x, taken as 0 where x <= 0 (as TensorFlow does), a hard zero.
    # x**y is recomputed rather than kept: exponents are rarely differentiated, and
    # keeping every power's output (x**2 before a sum) would hold an array per power.
    positive = x > 0
    safe = m.where(positive, x, 1.0)
    return gate(m, positive, g * x ** y * m.log(safe), g)


def _max_vjp(m, g, ans, x, axis=None, keepdims=False):
    shape = _shape(x)
    mask = x == _reduced(m, ans, shape, axis, keepdims)
    # A tie splits the gradient equally between the tied inputs (sympy's Heaviside(0)=1/2).
    count = m.sum(mask * 1.0, axis=axis, keepdims=True)
    ge = _expand(m, g, shape, axis, keepdims)
    return gate(m, mask, ge / count, ge)


def _prod_vjp(m, g, ans, x, axis=None, keepdims=False):
    shape = _shape(x)
    raw = x._value if isinstance(x, Tensor) else x
    ge = _expand(m, g, shape, axis, keepdims)
    product = ans._value if isinstance(ans, Tensor) else ans
    if not np.any(raw == 0) and ordinary(np.abs(product), (TINY.get(raw.dtype, 0.0),
                                                                     math.inf)):
        return ge * m.broadcast_to(_reduced(m, ans, shape, axis, keepdims), shape=shape) / x
    # With zeros, ans / x is 0/0 (and with a product that underflowed or overflowed,
    # 0/x or inf/x where the others' product is a number: [1e-200, 1e-200, 1e200]): the
    # product of the others is the product of the elements before times the product of
    # those after, in O(n) (never an n x n array).
    axes = _norm_axes(axis, len(shape))
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    perm = rest + axes
    n = _count(shape, axis)
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


def _logsumexp(x, axis=None, keepdims=False):
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.reshape(out, np.shape(np.sum(x, axis=axis)))


def _softmax(x, axis=-1):
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return z / np.sum(z, axis=axis, keepdims=True)


def _norm(x, axis=None, keepdims=False, ord=None):
    if ord is not None:  # numpy's vector and matrix norms (engine/linalg.py)
        return _linalg.norm_forward(x, axis, keepdims, ord)
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


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


def _norm_vjp(m, g, ans, x, axis=None, keepdims=False, ord=None):
    if ord is not None:
        return _linalg.norm_vjp(m, g, ans, x, axis, keepdims, ord)
    shape = _shape(x)
    if not ordinary(ans._value if isinstance(ans, Tensor) else ans, norm_bounds(x, 2)):
        # underflowed or overflowed ([1e-200, 1e-200] has norm 0, [1e200, 1e200] inf):
        # the gradient x / norm(x) taken at x / max|x|, where the norm is representable
        x, ans = rescaled(m, x, axis, lambda v: m.norm(v, axis=axis, keepdims=keepdims))
    denom = _reduced(m, ans, shape, axis, keepdims)
    # Zero norm: the subgradient 0, as PyTorch gives (a hard zero, whatever g is).
    nonzero = denom != 0
    denom = m.where(nonzero, denom, 1.0)
    ge = _expand(m, g, shape, axis, keepdims)
    return gate(m, nonzero, ge * x / denom, ge)


def _concat_vjp(m, g, ans, *xs, index, axis=0):
    if axis is None:  # numpy joins the flattened inputs: a stretch of the 1-D g, reshaped
        sizes = [math.prod(_shape(x)) for x in xs]
        start = sum(sizes[:index])
        piece = m.getitem(g, index=(slice(start, start + sizes[index]),))
        return m.reshape(piece, shape=_shape(xs[index]))
    nd = len(_shape(g))
    ax = axis % nd
    start = sum(_shape(x)[ax] for x in xs[:index])
    sl = (slice(None),) * ax + (slice(start, start + _shape(xs[index])[ax]),)
    return m.getitem(g, index=sl)


def _stack_vjp(m, g, ans, *xs, index, axis=0):
    ax = axis % len(_shape(g))
    return m.getitem(g, index=(slice(None),) * ax + (index,))


def _joined(m, name, xs, axis):
    """A variadic entry in either namespace (numpy's forwards take the arrays as *xs, the
    engine's functions as one list)."""
    return getattr(m, name)(*xs, axis=axis) if m is NP else getattr(m, name)(xs, axis=axis)


def _sympy_reduce(fn):
    """A reduction over object arrays of sympy expressions: fn(list) per output element."""
    def build(sp, x, axis=None, keepdims=False, **_):
        arr = np.asarray(x, dtype=object)
        axes = _norm_axes(axis, arr.ndim)
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


def _const_array(forward):
    return lambda sp, **params: np.vectorize(sp.Float, otypes=[object])(forward(**params))


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------
# Forward mode for elementwise entries: the Jacobian is diagonal, so it is its own
# transpose, and the VJP rule (g times the local derivative) applied to a tangent is the
# JVP (t times the local derivative). These entries' JVPs are their VJPs, by that fact.
def _unary(name, forward, vjp, sympy, doc, derivative, *, aliases=(), sample=(-2.0, 2.0),
           domain="all reals", kind="elementwise", saves="inputs", inplace=None):
    if inplace:
        INPLACE[vjp] = inplace
    return register(Op(name=name, forward=forward, vjps=(vjp,), inputs=("x",), doc=doc,
                       derivative=derivative, sympy=sympy, elementwise=True, aliases=aliases,
                       sample=sample, domain=domain, kind=kind, saves=saves, jvps=(vjp,)))


def _binary(name, forward, vjps, sympy, doc, derivative, *, aliases=(), sample=(-2.0, 2.0),
            domain="all reals", kind="arithmetic", inputs=("x", "y"), saves="inputs",
            inplace=()):
    for vjp, fast in zip(vjps, inplace):
        if fast is not None:
            INPLACE[vjp] = fast
    return register(Op(name=name, forward=forward, vjps=vjps, inputs=inputs, doc=doc,
                       derivative=derivative, sympy=sympy, elementwise=True, aliases=aliases,
                       sample=sample, domain=domain, kind=kind, saves=saves, jvps=vjps))


_AXIS = (("axis", None), ("keepdims", False))


def _reduction(name, forward, vjp, sympy, doc, derivative, *, sample=(-2.0, 2.0),
               saves="all", jvp=None):
    return register(Op(name=name, forward=forward, vjps=(vjp,), inputs=("x",), doc=doc,
                       derivative=derivative, params=_AXIS, sympy=sympy, sample=sample,
                       kind="reduction", saves=saves,
                       jvps=(jvp if jvp is not None else _reduction_jvp(vjp),)))


def _reduction_jvp(vjp):
    """Forward mode for a reduction: each input element feeds one output element, so the
    output tangent is the sum, over the reduced axes, of the input tangent times the
    local derivative d ans / d x — which is the VJP of an upstream gradient of ones."""
    def jvp(m, t, ans, x, axis=None, keepdims=False, **params):
        local = vjp(m, m.ones_like(ans), ans, x, axis=axis, keepdims=keepdims, **params)
        return m.sum(t * local, axis=axis, keepdims=keepdims)
    return jvp


def _internal(op: Op) -> Op:
    INTERNAL[op.name] = op
    return op


def transposed(vjp, variadic: bool = False):
    """A JVP rule derived from a VJP rule by linear transposition, for entries whose
    forward derivative has no shorter form (factorisations, multi-output entries): the
    VJP ``g -> J^T g`` is linear in ``g``, so ``J t`` is the gradient with respect to
    ``g`` of ``<vjp(g), t>`` (at any ``g``: ones, so no rule skips a zero upstream). One
    VJP and one backward pass through it, as TensorFlow computes forward mode for
    operations without a forward rule. ``variadic``: the rule of a variadic entry (it
    takes the list of tangents)."""
    def jvp(m, t, ans, *inputs, **params):
        from .tape import GradientTape, _unbroadcast
        paused = None
        if m is NP:  # the fast path: no accumulator may see this internal computation
            paused = _forward[:]
            del _forward[:]
        try:
            g = Tensor(np.ones(np.shape(ans._value if isinstance(ans, Tensor) else ans)))
            tangents = t if variadic else [t]
            with GradientTape() as tape:
                tape.watch(g)
                total = 0.0
                for i, ti in enumerate(tangents):
                    x = inputs[i] if variadic else inputs[jvp.index]
                    gx = (vjp(ENGINE, g, ans, *inputs, index=i, **params) if variadic
                          else vjp(ENGINE, g, ans, *inputs, **params))
                    if gx is None:  # no gradient (a custom_gradient's None): no tangent
                        continue
                    gx = _unbroadcast(ENGINE, gx, _shape(x))
                    total = total + FUNCTIONS["sum"](gx * ti)
            out = tape.gradient(total, g, unconnected_gradients="zero")
        finally:
            if paused is not None:
                _forward[:] = paused
        return out._value if m is NP else out
    jvp.index = 0  # which input the rule is for (set by transposed_rules)
    return jvp


def transposed_rules(vjps, variadic: bool = False) -> tuple:
    """``transposed`` for each rule of an entry (None stays None)."""
    if variadic:
        return (transposed(vjps[0], variadic=True),)
    out = []
    for i, vjp in enumerate(vjps):
        if vjp is None:
            out.append(None)
            continue
        rule = transposed(vjp)
        rule.index = i
        out.append(rule)
    return tuple(out)


def _zero_vjp(m, g, ans, x):
    return m.zeros_like(x)


def gate(m, keep, gradient, upstream):
    """``gradient`` where ``keep``; elsewhere the rule's local derivative is 0 (a kink's
    subgradient, relu's flat side, an exponent of 0, the others of a ``max``, a zero norm)
    and so is the gradient, exactly, whatever number flows from above: ``0 * inf`` would
    make it nan (``sqrt(relu(x))`` at -1 is 0, as in PyTorch). A nan from above stays
    nan there, as ``0 * nan`` in TensorFlow (``upstream``: the incoming gradient, broadcast
    as ``gradient`` is). Selections (``where``, ``maximum``, ``clip``) do not come here:
    their unchosen side gets 0 whatever comes, as in TensorFlow."""
    out = m.where(keep, gradient, _zero_or_nan(upstream, gradient))
    # a scalar stays a numpy scalar, as the product it replaces was
    return out[()] if out.__class__ is np.ndarray and not out.ndim else out


def _zero_or_nan(upstream, like):
    """0.0; or, where ``upstream`` holds nan, nan there and 0 elsewhere (in ``like``'s
    dtype). A sum is the cheap first look: it is nan only if a nan (or inf and -inf) is
    in there."""
    raw = upstream._value if isinstance(upstream, Tensor) else upstream
    if raw.__class__ is not np.ndarray:
        return raw if math.isnan(raw) else 0.0
    if not np.isnan(raw.sum()):
        return 0.0
    nan = np.isnan(raw)
    return np.where(nan, np.nan, 0.0).astype(like.dtype) if nan.any() else 0.0


# Arithmetic
ADD = _binary("add", operator.add, (lambda m, g, ans, x, y: g, lambda m, g, ans, x, y: g),
              lambda sp, x, y: x + y, "x + y", "1, 1", saves="none")
SUBTRACT = _binary("subtract", operator.sub,
                   (lambda m, g, ans, x, y: g, lambda m, g, ans, x, y: -g),
                   lambda sp, x, y: x - y, "x - y", "1, -1", saves="none")
def _times(m, g, other):
    """``g * other``, skipping the pass when g is 1 (the upstream gradient of
    ``sum(x * y)``, the most common loss shape): multiplying by one only copies. The
    backward pass hands elementwise rules a broadcast 1 as the scalar 1."""
    if (m is NP and other.__class__ is np.ndarray and g.__class__ is not np.ndarray
            and g == 1.0 and other.dtype == g.dtype):
        return other
    return g * other


MULTIPLY = _binary("multiply", operator.mul,
                   (lambda m, g, ans, x, y: _times(m, g, y), lambda m, g, ans, x, y: _times(m, g, x)),
                   lambda sp, x, y: x * y, "x * y", "y, x",
                   inplace=(lambda g, ans, x, y, spare=None: _scale_in_place(g, y),
                            lambda g, ans, x, y, spare=None: _scale_in_place(g, x)))
DIVIDE = _binary("divide", operator.truediv,
                 # -x / y / y, not -x / y^2: y^2 underflows or overflows for |y| past
                 # 1e154 or below 1e-154 where x / y^2 need not (1e-200 / 1e-200^2)
                 (lambda m, g, ans, x, y: g / y, lambda m, g, ans, x, y: -g * (x / y) / y),
                 lambda sp, x, y: x / y, "x / y", "1/y, -x/y^2", sample=(0.5, 2.0),
                 domain="y != 0", saves="inputs")
# operator.pow, not np.power: ndarray ** 2 takes numpy's fast square path.
POWER = _binary("power", operator.pow, (_power_vjp_x, _power_vjp_y), lambda sp, x, y: x ** y,
                "x ** y (also written x ^ y)", "y*x^(y-1), x^y*log(x)", aliases=("pow",),
                inplace=(_power_in_place, None),
                sample=(0.5, 2.0), domain="x > 0 for non-integer y", saves="inputs")
MATMUL = register(Op(name="matmul", forward=np.matmul, vjps=(_matmul_vjp_x, _matmul_vjp_y),
                     # bilinear: the tangent of one factor times the other
                     jvps=(lambda m, t, ans, x, y: m.matmul(t, y),
                           lambda m, t, ans, x, y: m.matmul(x, t)),
                     inputs=("x", "y"), doc="matrix product x @ y (batched, numpy rules)",
                     derivative="g @ y^T, x^T @ g", sympy=lambda sp, x, y: np.matmul(x, y),
                     kind="linalg", saves="inputs", batch="matmul"))
NEGATIVE = _unary("negative", operator.neg, lambda m, g, ans, x: -g, lambda sp, x: -x,
                  "-x", "-1", kind="arithmetic", saves="none",
                  inplace=lambda g, ans, x, spare=None:
                  np.negative(g, out=g) if g.__class__ is np.ndarray else None)
_unary("square", np.square, lambda m, g, ans, x: g * 2.0 * x, lambda sp, x: x ** 2,
       "x ** 2", "2x", kind="arithmetic")
_unary("reciprocal", np.reciprocal, lambda m, g, ans, x: -g * ans * ans,
       lambda sp, x: 1 / x, "1 / x", "-1/x^2", sample=(0.5, 2.0), domain="x != 0",
       kind="arithmetic", saves="ans")

# Elementwise
_unary("abs", np.abs, lambda m, g, ans, x: gate(m, x != 0, g * m.sign(x), g),
       lambda sp, x: sp.Abs(x),
       "absolute value |x|", "sign(x); 0 at x = 0", aliases=("absolute",))
_unary("exp", np.exp, lambda m, g, ans, x: g * ans, lambda sp, x: sp.exp(x),
       "e ** x", "exp(x)", saves="ans",
       inplace=lambda g, ans, x, spare=None: _scale_in_place(g, ans))
# (exp(x), not ans + 1: for x < -37 ans + 1 is 0, all digits lost)
_unary("expm1", np.expm1, lambda m, g, ans, x: g * m.exp(x), lambda sp, x: sp.exp(x) - 1,
       "exp(x) - 1, accurate near 0", "exp(x)")
_unary("log", np.log, lambda m, g, ans, x: g / x, lambda sp, x: sp.log(x),
       "natural logarithm", "1/x", aliases=("ln",), sample=(0.5, 2.0), domain="x > 0")
_unary("log1p", np.log1p, lambda m, g, ans, x: g / (1.0 + x), lambda sp, x: sp.log(1 + x),
       "log(1 + x), accurate near 0", "1/(1+x)", sample=(-0.5, 2.0), domain="x > -1")
_unary("log2", np.log2, lambda m, g, ans, x: g / (x * math.log(2.0)),
       lambda sp, x: sp.log(x) / sp.log(2), "base-2 logarithm", "1/(x ln 2)",
       sample=(0.5, 2.0), domain="x > 0")
_unary("log10", np.log10, lambda m, g, ans, x: g / (x * math.log(10.0)),
       lambda sp, x: sp.log(x) / sp.log(10), "base-10 logarithm", "1/(x ln 10)",
       sample=(0.5, 2.0), domain="x > 0")
_unary("sqrt", np.sqrt, lambda m, g, ans, x: g * 0.5 / ans, lambda sp, x: sp.sqrt(x),
       "square root", "1/(2 sqrt(x)); inf at 0", sample=(0.5, 2.0), domain="x >= 0",
       saves="ans")
_unary("cbrt", np.cbrt, lambda m, g, ans, x: g / (3.0 * ans * ans),
       lambda sp, x: sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3), "real cube root",
       "1/(3 cbrt(x)^2); inf at 0", sample=(0.5, 2.0), saves="ans")
_unary("sin", np.sin, lambda m, g, ans, x: g * m.cos(x), lambda sp, x: sp.sin(x), "sine",
       "cos(x)", inplace=lambda g, ans, x, spare=None:
       _scale_in_place(g, np.cos(x)) if g.__class__ is np.ndarray else None)
_unary("cos", np.cos, lambda m, g, ans, x: g * -m.sin(x), lambda sp, x: sp.cos(x), "cosine",
       "-sin(x)", inplace=_cos_in_place)
_unary("tan", np.tan, lambda m, g, ans, x: g * (1.0 + ans * ans), lambda sp, x: sp.tan(x),
       "tangent", "1 + tan(x)^2", sample=(-1.2, 1.2), domain="x != pi/2 + k pi",
       saves="ans")
# The square roots of 1 - x^2 and x^2 - 1 as products of factors: 1 - x*x loses digits
# near |x| = 1 and x*x overflows for large |x|.
_unary("arcsin", np.arcsin, lambda m, g, ans, x: g / (m.sqrt(1.0 - x) * m.sqrt(1.0 + x)),
       lambda sp, x: sp.asin(x), "inverse sine", "1/sqrt(1-x^2)", aliases=("asin",),
       sample=(-0.9, 0.9), domain="-1 <= x <= 1")
_unary("arccos", np.arccos, lambda m, g, ans, x: -g / (m.sqrt(1.0 - x) * m.sqrt(1.0 + x)),
       lambda sp, x: sp.acos(x), "inverse cosine", "-1/sqrt(1-x^2)", aliases=("acos",),
       sample=(-0.9, 0.9), domain="-1 <= x <= 1")
_unary("arctan", np.arctan, lambda m, g, ans, x: g / (1.0 + x * x),
       lambda sp, x: sp.atan(x), "inverse tangent", "1/(1+x^2)", aliases=("atan",))
_unary("sinh", np.sinh, lambda m, g, ans, x: g * m.cosh(x), lambda sp, x: sp.sinh(x),
       "hyperbolic sine", "cosh(x)")
_unary("cosh", np.cosh, lambda m, g, ans, x: g * m.sinh(x), lambda sp, x: sp.cosh(x),
       "hyperbolic cosine", "sinh(x)")
_unary("tanh", np.tanh, lambda m, g, ans, x: g * (1.0 - ans * ans), lambda sp, x: sp.tanh(x),
       "hyperbolic tangent", "1 - tanh(x)^2", saves="ans",
       inplace=_tanh_in_place)
_unary("arcsinh", np.arcsinh, lambda m, g, ans, x: g / m.hypot(x, 1.0),
       lambda sp, x: sp.asinh(x), "inverse hyperbolic sine", "1/sqrt(x^2+1)",
       aliases=("asinh",))
_unary("arccosh", np.arccosh,
       lambda m, g, ans, x: g / (m.sqrt(x - 1.0) * m.sqrt(x + 1.0)),
       lambda sp, x: sp.acosh(x), "inverse hyperbolic cosine", "1/sqrt(x^2-1)",
       aliases=("acosh",), sample=(1.2, 3.0), domain="x >= 1")
_unary("arctanh", np.arctanh, lambda m, g, ans, x: g / ((1.0 - x) * (1.0 + x)),
       lambda sp, x: sp.atanh(x), "inverse hyperbolic tangent", "1/(1-x^2)",
       aliases=("atanh",), sample=(-0.9, 0.9), domain="-1 < x < 1")
_unary("sigmoid", _sigmoid,
       lambda m, g, ans, x: g * ans * _sigmoid_complement(m, ans, x),
       lambda sp, x: 1 / (1 + sp.exp(-x)),
       "logistic sigmoid 1/(1+exp(-x))", "sigmoid(x) (1 - sigmoid(x))", saves="all",
       inplace=_sigmoid_in_place)
_unary("relu", lambda x: np.maximum(x, 0.0), lambda m, g, ans, x: gate(m, x > 0, g, g),
       lambda sp, x: sp.Max(0, x), "max(x, 0)", "1 if x > 0 else 0 (0 at x = 0)")
_unary("softplus", lambda x: np.logaddexp(0.0, x), lambda m, g, ans, x: g * m.sigmoid(x),
       lambda sp, x: sp.log(1 + sp.exp(x)), "log(1 + exp(x))", "sigmoid(x)")
_unary("sign", np.sign, _zero_vjp, lambda sp, x: sp.sign(x), "-1, 0 or 1", "0")
_unary("floor", np.floor, _zero_vjp, lambda sp, x: sp.floor(x), "largest integer <= x", "0")
_unary("ceil", np.ceil, _zero_vjp, lambda sp, x: sp.ceiling(x), "smallest integer >= x", "0")

# Two arguments
def _arctan2_vjp(m, g, numerator, y, x):
    """g numerator / (x^2 + y^2), through hypot (x^2 + y^2 underflows for |x|, |y| below
    1e-154, where the derivative is still finite); the subgradient 0 at the origin (as
    PyTorch), where the angle jumps: nan there would poison a whole broadcast sum."""
    r = m.hypot(x, y)
    away = r != 0
    safe = m.where(away, r, 1.0)
    return gate(m, away, g * (numerator / safe) / safe, g)


_binary("arctan2", np.arctan2,
        (lambda m, g, ans, y, x: _arctan2_vjp(m, g, x, y, x),
         lambda m, g, ans, y, x: _arctan2_vjp(m, g, -y, y, x)),
        lambda sp, y, x: sp.atan2(y, x), "angle of the point (x, y): arctan2(y, x)",
        "x/(x^2+y^2), -y/(x^2+y^2)", aliases=("atan2",), inputs=("y", "x"), sample=(0.5, 2.0),
        kind="binary")
_binary("maximum", np.maximum,
        (lambda m, g, ans, x, y: m.where(x > y, g, m.where(x == y, 0.5 * g, 0.0)),
         lambda m, g, ans, x, y: m.where(y > x, g, m.where(x == y, 0.5 * g, 0.0))),
        lambda sp, x, y: sp.Max(x, y), "elementwise larger of x and y",
        "1 where larger; ties split 1/2", kind="binary")
_binary("minimum", np.minimum,
        (lambda m, g, ans, x, y: m.where(x < y, g, m.where(x == y, 0.5 * g, 0.0)),
         lambda m, g, ans, x, y: m.where(y < x, g, m.where(x == y, 0.5 * g, 0.0))),
        lambda sp, x, y: sp.Min(x, y), "elementwise smaller of x and y",
        "1 where smaller; ties split 1/2", kind="binary")
_binary("hypot", np.hypot,
        (lambda m, g, ans, x, y: g * x / ans, lambda m, g, ans, x, y: g * y / ans),
        lambda sp, x, y: sp.sqrt(x ** 2 + y ** 2), "sqrt(x^2 + y^2)", "x/hypot, y/hypot",
        sample=(0.5, 2.0), kind="binary", saves="all")

# Comparisons: boolean results, never differentiable (usable as `where` conditions).
for _name, _fn, _sp, _sym in (("less", operator.lt, "Lt", "<"), ("less_equal", operator.le, "Le", "<="),
                              ("greater", operator.gt, "Gt", ">"),
                              ("greater_equal", operator.ge, "Ge", ">="),
                              ("equal", operator.eq, "Eq", "=="), ("not_equal", operator.ne, "Ne", "!=")):
    _binary(_name, _fn, (None, None), (lambda s: lambda sp, x, y: getattr(sp, s)(x, y))(_sp),
            f"x {_sym} y as booleans (a where condition)", "not differentiable",
            kind="comparison")

# Reductions
def _sum(x, axis=None, keepdims=False):
    # np.sum without its Python-level wrapper (~8 µs when caches are cold)
    return np.add.reduce(x, axis=axis, keepdims=keepdims)


_reduction("sum", _sum, lambda m, g, ans, x, axis=None, keepdims=False:
           _expand(m, g, _shape(x), axis, keepdims), _sympy_reduce(lambda sp, xs: sp.Add(*xs)),
           "sum of elements", "1 for each element", saves="none",
           jvp=lambda m, t, ans, x, axis=None, keepdims=False:
           m.sum(t, axis=axis, keepdims=keepdims))
_reduction("mean", np.mean, lambda m, g, ans, x, axis=None, keepdims=False:
           _expand(m, g, _shape(x), axis, keepdims) / float(_count(_shape(x), axis)),
           _sympy_reduce(lambda sp, xs: sp.Add(*xs) / len(xs)), "mean of elements", "1/n",
           saves="none", jvp=lambda m, t, ans, x, axis=None, keepdims=False:
           m.mean(t, axis=axis, keepdims=keepdims))
_reduction("prod", np.prod, _prod_vjp, _sympy_reduce(lambda sp, xs: sp.Mul(*xs)),
           "product of elements", "product of the other elements")
_reduction("max", np.max, _max_vjp, _sympy_reduce(lambda sp, xs: sp.Max(*xs)),
           "largest element", "1 at the maximum; ties split equally")
_reduction("min", np.min, _max_vjp, _sympy_reduce(lambda sp, xs: sp.Min(*xs)),
           "smallest element", "1 at the minimum; ties split equally")
_reduction("logsumexp", _logsumexp, lambda m, g, ans, x, axis=None, keepdims=False:
           _expand(m, g, _shape(x), axis, keepdims)
           * m.exp(x - _reduced(m, ans, _shape(x), axis, keepdims)),
           _sympy_reduce(lambda sp, xs: sp.log(sp.Add(*[sp.exp(v) for v in xs]))),
           "log(sum(exp(x))), computed stably", "softmax(x)")
_sympy_norm2 = _sympy_reduce(lambda sp, xs: sp.sqrt(sp.Add(*[v ** 2 for v in xs])))
register(Op(name="norm", forward=_norm, vjps=(_norm_vjp,), inputs=("x",),
            doc="Euclidean (Frobenius) norm over axis; with ord=, numpy's vector norms (p, "
            "inf, -inf, 0) and matrix norms (1, -1, 2, -2, inf, -inf, 'fro', 'nuc')",
            derivative="x / norm(x); 0 at 0 (with ord: see gradcli.engine.linalg)",
            params=_AXIS + (("ord", None),),
            sympy=lambda sp, x, axis=None, keepdims=False, ord=None:
            _sympy_norm2(sp, x, axis, keepdims) if ord is None
            else _linalg.sympy_norm(sp, x, axis, keepdims, ord),
            kind="reduction", saves="all",
            samples=lambda rng: _linalg.norm_samples(rng), jvps=(_reduction_jvp(_norm_vjp),)))

# Linear algebra and shape
register(Op(name="dot", forward=_dot, vjps=(_dot_vjp(0), _dot_vjp(1)), inputs=("x", "y"),
            doc="dot product (vectors, matrices; at most 2-D)", derivative="as matmul",
            sympy=lambda sp, x, y: np.dot(x, y), kind="linalg", saves="inputs",
            # bilinear: the tangent of one factor times the other
            jvps=(lambda m, t, ans, x, y: m.dot(t, y), lambda m, t, ans, x, y: m.dot(x, t)),
            batch="dot"))
register(Op(name="transpose", forward=lambda x, axes=None: np.asarray(x).transpose(axes),
            vjps=(lambda m, g, ans, x, axes=None: m.transpose(
                g, axes=None if axes is None else tuple(np.argsort(axes))),),
            inputs=("x",), params=(("axes", None),), doc="reverse or permute the axes",
            derivative="transpose back", sympy=lambda sp, x, axes=None: np.transpose(x, axes),
            kind="shape", saves="none",
            jvps=(lambda m, t, ans, x, axes=None: m.transpose(t, axes=axes),),
            batch="transpose"))
register(Op(name="reshape", forward=_reshape,
            vjps=(lambda m, g, ans, x, shape: m.reshape(g, shape=_shape(x)),),
            inputs=("x",), params=(("shape", None),), doc="same elements, new shape",
            derivative="reshape back", sympy=lambda sp, x, shape: np.reshape(x, shape),
            kind="shape", saves="none",
            jvps=(lambda m, t, ans, x, shape: m.reshape(t, shape=_shape(ans)),),
            batch="reshape"))
register(Op(name="concatenate", forward=lambda *xs, axis=0: np.concatenate(xs, axis=axis),
            vjps=(_concat_vjp,), inputs=("xs",), params=(("axis", 0),), variadic=True,
            doc="join arrays along an existing axis", derivative="slices of g",
            sympy=lambda sp, *xs, axis=0: np.concatenate(xs, axis=axis), kind="shape",
            saves="none",
            jvps=(lambda m, ts, ans, *xs, axis=0: _joined(m, "concatenate", ts, axis),),
            batch="joined"))
register(Op(name="stack", forward=lambda *xs, axis=0: np.stack(xs, axis=axis),
            vjps=(_stack_vjp,), inputs=("xs",), params=(("axis", 0),), variadic=True,
            new_axis=True,
            doc="join arrays along a new axis", derivative="slices of g",
            sympy=lambda sp, *xs, axis=0: np.stack(xs, axis=axis), kind="shape", saves="none",
            jvps=(lambda m, ts, ans, *xs, axis=0: _joined(m, "stack", ts, axis),),
            batch="joined"))
_WHERE_RULES = (None, lambda m, g, ans, c, a, b: m.where(c, g, 0.0),
                lambda m, g, ans, c, a, b: m.where(c, 0.0, g))
register(Op(name="where", forward=np.where, vjps=_WHERE_RULES,
            jvps=_WHERE_RULES,  # elementwise: the VJPs are the JVPs (see _unary)
            inputs=("cond", "a", "b"), doc="a where cond is true, else b",
            derivative="g where chosen, else 0", elementwise=True,
            sympy=lambda sp, c, a, b: sp.Piecewise((a, c), (b, True)), kind="shape",
            saves="inputs"))
# numpy's clip is minimum(maximum(x, lo), hi): with lo > hi every element is hi, so the
# gradient goes to hi there.
_CLIP_RULES = (lambda m, g, ans, x, lo, hi: m.where(x < lo, 0.0, m.where(x > hi, 0.0, g)),
               lambda m, g, ans, x, lo, hi: m.where(lo > hi, 0.0, m.where(x < lo, g, 0.0)),
               lambda m, g, ans, x, lo, hi: m.where(lo > hi, g, m.where(x > hi, g, 0.0)))


def _clip_api(op, plain):
    """``clip(x, lo=None, hi=None)``: None is no bound on that side, as in numpy (the
    entry computes it as -inf or inf, which numpy's clip gives the same values for, and
    whose gradient rules then never select the bound)."""
    def clip(x, lo=None, hi=None):
        return plain(x, -math.inf if lo is None else lo, math.inf if hi is None else hi)
    clip.__doc__ = plain.__doc__
    return clip


register(Op(name="clip", forward=np.clip, vjps=_CLIP_RULES,
            jvps=_CLIP_RULES,  # elementwise: the VJPs are the JVPs (see _unary)
            inputs=("x", "lo", "hi"),
            doc="x limited to [lo, hi] (hi where lo > hi, as numpy); a bound of None (in "
            "the language -inf or inf) is no bound on that side",
            derivative="1 inside [lo, hi] (bounds included), else 0", elementwise=True,
            sympy=lambda sp, x, lo, hi: sp.Min(sp.Max(x, lo), hi), kind="elementwise",
            saves="inputs", api=_clip_api))
register(Op(name="softmax", forward=_softmax,
            vjps=(lambda m, g, ans, x, axis=-1:
                  ans * (g - m.sum(g * ans, axis=axis, keepdims=True)),),
            inputs=("x",), params=(("axis", -1),), doc="exp(x) / sum(exp(x)) along an axis",
            derivative="s (g - sum(g s))", sympy=_sympy_softmax, kind="reduction",
            saves="ans",
            # the Jacobian diag(s) - s s^T is symmetric: the JVP is the VJP's formula
            jvps=(lambda m, t, ans, x, axis=-1:
                  ans * (t - m.sum(t * ans, axis=axis, keepdims=True)),)))
class hold_stop_gradients:
    """Context: record the values ``stop_gradient`` passes on (``values=None``), or pass
    on the recorded ones instead, in the same order.

    Finite differences of a program must hold each ``stop_gradient`` at its value at the
    point, as the tape does; the cross-check evaluates the point once recording, then
    every nudged point replaying."""

    def __init__(self, values: list | None = None):
        self.recording = values is None
        self.values = [] if values is None else values
        self.index = 0
        self._outer = None

    def __enter__(self):
        global _held
        self._outer, _held, self.index = _held, self, 0
        return self

    def __exit__(self, *exc):
        global _held
        _held = self._outer


_held: hold_stop_gradients | None = None


def _stop_gradient_forward(x):
    held = _held
    if held is None:
        return x
    if held.recording:
        held.values.append(x)
        return x
    value = held.values[held.index]
    held.index += 1
    return value


STOP_GRADIENT = register(Op(name="stop_gradient", forward=_stop_gradient_forward, vjps=(None,),
                            jvps=(None,),  # no tangent passes either (as TensorFlow)
                            inputs=("x",), doc="x, with no gradient flowing through",
                            derivative="0 (blocked)", kind="elementwise", batch="same"))

# Value constructors (no tensor inputs: nothing to differentiate).
for _name, _fwd, _params, _doc in (
        ("zeros", lambda shape: np.zeros(shape), (("shape", None),), "an array of zeros"),
        ("ones", lambda shape: np.ones(shape), (("shape", None),), "an array of ones"),
        ("full", lambda shape, fill_value: np.full(shape, float(fill_value)),
         (("shape", None), ("fill_value", None)), "an array filled with a value"),
        ("eye", lambda N, M=None: np.eye(N, M), (("N", None), ("M", None)), "identity matrix"),
        ("linspace", lambda start, stop, num=50: np.linspace(start, stop, num),
         (("start", None), ("stop", None), ("num", 50)), "num evenly spaced values"),
        ("arange", lambda start, stop=None, step=1.0: np.arange(start, stop, step, dtype=float),
         (("start", None), ("stop", None), ("step", 1.0)), "values from start to stop by step")):
    register(Op(name=_name, forward=_fwd, vjps=(), inputs=(), params=_params, doc=_doc,
                derivative="constant", sympy=_const_array(_fwd), kind="constructor",
                batch="no_inputs"))

# Internal entries used by the rules.
_internal(Op(name="broadcast_to", forward=_broadcast_to,
             vjps=(lambda m, g, ans, x, shape: m.sum_to(g, shape=_shape(x)),), inputs=("x",),
             jvps=(lambda m, t, ans, x, shape: m.broadcast_to(t, shape=shape),),
             params=(("shape", None),), doc="x broadcast to shape", kind="shape", saves="none",
             batch="broadcast"))
_internal(Op(name="sum_to", forward=_sum_to,
             vjps=(lambda m, g, ans, x, shape: m.broadcast_to(g, shape=_shape(x)),),
             jvps=(lambda m, t, ans, x, shape: m.sum_to(t, shape=shape),),
             inputs=("x",), params=(("shape", None),), doc="sum x down to shape", kind="shape",
             saves="none", batch="sum_to"))
GETITEM = _internal(Op(name="getitem", forward=_getitem,
                       vjps=(lambda m, g, ans, x, index: m.scatter(g, index=index, shape=_shape(x)),),
                       jvps=(lambda m, t, ans, x, index: m.getitem(t, index=index),),
                       inputs=("x",), params=(("index", None),), doc="x[index]", kind="shape",
                       saves="none", batch="getitem"))
_internal(Op(name="scatter", forward=_scatter,
             vjps=(lambda m, g, ans, x, index, shape: m.getitem(g, index=index),),
             jvps=(lambda m, t, ans, x, index, shape: m.scatter(t, index=index, shape=shape),),
             inputs=("x",), params=(("index", None), ("shape", None)),
             doc="zeros with x added at index", kind="shape", saves="none", batch="scatter"))
def _like(fill):
    def forward(x):
        out = fill(x)
        return out[()] if out.ndim == 0 else out  # scalars are numpy scalars
    return forward


# zeros_like and ones_like have no gradient (None), as TensorFlow's ZerosLike/OnesLike.
_internal(Op(name="zeros_like", forward=_like(np.zeros_like), vjps=(None,), inputs=("x",),
             jvps=(None,),
             doc="zeros shaped like x (no gradient, as in TensorFlow)", kind="shape",
             batch="same"))
_internal(Op(name="ones_like", forward=_like(np.ones_like), vjps=(None,), inputs=("x",),
             jvps=(None,),
             doc="ones shaped like x (no gradient, as in TensorFlow)", kind="shape",
             batch="same"))


def _cast(x, dtype):
    out = np.array(x, dtype=dtype)  # a copy: also the identity that makes a new source
    return out[()] if out.ndim == 0 else out


CAST = _internal(Op(name="cast", forward=_cast,
                    vjps=(lambda m, g, ans, x, dtype: m.cast(
                        g, dtype=getattr(x, "dtype", None) or np.float64),),
                    jvps=(lambda m, t, ans, x, dtype: m.cast(t, dtype=dtype),),
                    inputs=("x",), params=(("dtype", None),),
                    doc="x converted to dtype (a copy)", kind="shape", saves="none",
                    batch="same"))


# The constructors full and linspace given tensors: differentiable in the fill value and
# in the endpoints (the table's entries take numbers, as the language's static values).
def _fill(x, shape):
    out = np.full(shape, x, dtype=np.result_type(x))
    return out[()] if out.ndim == 0 else out


FILL = _internal(Op(name="fill", forward=_fill,
                    vjps=(lambda m, g, ans, x, shape: m.sum_to(g, shape=_shape(x)),),
                    jvps=(lambda m, t, ans, x, shape: m.fill(t, shape=shape),),
                    inputs=("x",), params=(("shape", None),),
                    doc="an array of shape filled with x (broadcast)", kind="shape",
                    saves="none", batch="broadcast"))


def _ramp(g, num):
    """i / (num - 1) for i < num, shaped to broadcast along linspace's first axis."""
    t = np.linspace(0.0, 1.0, num, dtype=getattr(g, "dtype", None) or np.float64)
    return t.reshape((num,) + (1,) * (len(_shape(g)) - 1))


LINSPACE = _internal(Op(name="linspace_between",
                        forward=lambda start, stop, num=50: np.linspace(start, stop, num),
                        vjps=(lambda m, g, ans, start, stop, num=50:
                              m.sum(g * (1.0 - _ramp(g, num)), axis=0),
                              lambda m, g, ans, start, stop, num=50:
                              m.sum(g * _ramp(g, num), axis=0)),
                        # the output is start (1 - i/(n-1)) + stop i/(n-1): linear in both
                        jvps=(lambda m, t, ans, start, stop, num=50: t * (1.0 - _ramp(ans, num)),
                              lambda m, t, ans, start, stop, num=50: t * _ramp(ans, num)),
                        inputs=("start", "stop"), params=(("num", 50),),
                        doc="num evenly spaced values from start to stop (tensors)",
                        kind="shape", saves="none", batch="linspace"))


# Entries whose result may be written over their first input's array (their rules read
# no input, so no node keeps it; see fast.reusable_buffer), with the ufunc that writes there.
for _name, _ufunc in (("add", np.add), ("subtract", np.subtract), ("negative", np.negative),
                      ("exp", np.exp), ("tanh", np.tanh), ("sqrt", np.sqrt)):
    assert REGISTRY[_name].saves in ("none", "ans"), _name
    object.__setattr__(REGISTRY[_name], "reuse", _ufunc)


# ---------------------------------------------------------------------------------------
# Namespaces the rules compute in, and the public functions
# ---------------------------------------------------------------------------------------
# The entries of linalg.py and more_ops.py are registered when first needed (issue 14:
# table.LOADERS); until then these stand for the two modules, loading them when read.
class _OnDemand:
    """A module of the table not loaded yet: reading an attribute loads it."""

    def __init__(self, name: str) -> None:
        self.module = f"{__package__}.{name}"

    def __getattr__(self, attr):
        complete()
        return getattr(sys.modules[self.module], attr)


_linalg, more_ops = _OnDemand("linalg"), _OnDemand("more_ops")


class _Namespace(SimpleNamespace):
    """``NP`` and ``ENGINE``: a name not there yet (an entry loaded on demand) loads the
    pending entries first; a name there costs nothing more (``__getattr__`` runs only on
    a miss)."""

    def __getattr__(self, name: str):
        if LOADERS and not name.startswith("__"):
            complete()
            return object.__getattribute__(self, name)
        raise AttributeError(f"no table function {name!r}")


NP = _Namespace()
FUNCTIONS: dict = LazyTable()
ENGINE = _Namespace()
_PUBLISHED: dict = {}  # name -> the entry NP, FUNCTIONS and ENGINE were made from


def _publish() -> None:
    """NP (each entry's raw forward), FUNCTIONS and ENGINE (its public function) and this
    module's names for every entry registered since the last call (an internal entry
    registered again, as more_ops's cast, replaces the earlier one); then the aliases."""
    entries = {name: dict.__getitem__(REGISTRY, name) for name in list.__iter__(ORDER)}
    entries.update(dict.items(INTERNAL))
    fresh = {}
    for name, op in entries.items():
        if _PUBLISHED.get(name) is not op:
            _PUBLISHED[name] = op
            setattr(NP, name, op.forward)
            fresh[name] = _function(op)
    dict.update(FUNCTIONS, fresh)
    if "full" in fresh:  # (the first call)
        for name, inputs, twin in (("full", ("fill_value",), FILL),
                                   ("linspace", ("start", "stop"), LINSPACE)):
            fresh[name] = FUNCTIONS[name] = _tensor_constructor(name, inputs, twin)
    for name, fn in fresh.items():
        setattr(ENGINE, name, fn)
    for op in dict.values(REGISTRY):
        for alias in op.aliases:
            dict.setdefault(FUNCTIONS, alias, dict.__getitem__(FUNCTIONS, op.name))
    globals().update({k: v for k, v in dict.items(FUNCTIONS)
                      if k not in ("sum", "max", "min", "abs", "pow")})


def _load_on_demand() -> bool:
    """Register the entries of linalg.py, then more_ops.py (the table's order), and
    publish them; False (not yet) while one of them is being imported by itself."""
    global _linalg, more_ops
    for name in ("linalg", "more_ops"):
        module = sys.modules.get(f"{__package__}.{name}")
        if module is not None and getattr(module.__spec__, "_initializing", False):
            return False
    from . import linalg as _linalg  # noqa: F811
    from . import more_ops  # noqa: F811
    _publish()
    return True


def _tensor_constructor(name, inputs, twin):
    """``full``/``linspace`` as the Python API offers them: given a tensor (or a list
    holding tensors) for one of ``inputs``, the differentiable ``twin`` entry computes
    it; given numbers, the table's entry."""
    table_fn, op = FUNCTIONS[name], REGISTRY[name]
    names = [key for key, _ in op.params]

    def fn(*args, **kwargs):
        given = {**dict(zip(names, args)), **kwargs}
        if (len(args) > len(names) or any(k not in given for k in inputs)
                or not any(_holds_tensor(given[k]) for k in inputs)):
            return table_fn(*args, **kwargs)  # numbers, or the table's own argument error
        params = _bind(op, names, dict(op.params), (), {k: v for k, v in given.items()
                                                        if k not in inputs})
        return apply(twin, tuple(given[k] for k in inputs),
                     {k: params[k] for k, _ in twin.params})
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{table_fn.__doc__}\nGiven tensors for {' and '.join(inputs)}, the "
                  f"result is differentiable in them.")
    return fn


_publish()
LOADERS.append(_load_on_demand)

__all__ = ["apply", "CONSTANTS", "REGISTRY", "ORDER", "INTERNAL", "lookup", "FUNCTIONS",
           "NP", "ENGINE", "gate"]


def _propagate(op, out, inputs, values, params) -> None:
    """Forward mode's bookkeeping: apply calls it only while an accumulator is active, so
    forward.py is imported then (the accumulator's own import), not at every start (issue
    14); the first call puts forward.propagate here in its place."""
    from .forward import propagate
    globals()["_propagate"] = propagate
    propagate(op, out, inputs, values, params)

