"""Shape and indexing entries: ``transpose``, ``reshape``, ``concatenate``, ``stack``, and
the internal entries the rules are written with (``broadcast_to``, ``sum_to``, ``getitem``,
``scatter``, ``zeros_like``, ``ones_like``, ``cast``, and the tensor forms of ``full`` and
``linspace``). Each is linear in its tensor inputs: its JVP is the entry applied to the
tangent.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.derive import entry
from ..core.recording import NP
from ..core.tensor import shape_of


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


def broadcast_to_forward(x, shape):
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
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (np.ndarray, list)) for i in parts):
        np.add.at(out, index, g)  # repeated integer indices must accumulate
    else:
        out[index] = g
    return out


def _concat_vjp(m, g, ans, *xs, index, axis=0):
    if axis is None:  # numpy joins the flattened inputs: a stretch of the 1-D g, reshaped
        sizes = [math.prod(shape_of(x)) for x in xs]
        start = sum(sizes[:index])
        piece = m.getitem(g, index=(slice(start, start + sizes[index]),))
        return m.reshape(piece, shape=shape_of(xs[index]))
    nd = len(shape_of(g))
    ax = axis % nd
    start = sum(shape_of(x)[ax] for x in xs[:index])
    sl = (slice(None),) * ax + (slice(start, start + shape_of(xs[index])[ax]),)
    return m.getitem(g, index=sl)


def _stack_vjp(m, g, ans, *xs, index, axis=0):
    ax = axis % len(shape_of(g))
    return m.getitem(g, index=(slice(None),) * ax + (index,))


def _joined(m, name, xs, axis):
    """A variadic entry in either namespace (numpy's forwards take the arrays as *xs, the
    engine's functions as one list)."""
    return getattr(m, name)(*xs, axis=axis) if m is NP else getattr(m, name)(xs, axis=axis)


entry(name="transpose", forward=lambda x, axes=None: np.asarray(x).transpose(axes),
      vjps=(lambda m, g, ans, x, axes=None: m.transpose(
                g, axes=None if axes is None else tuple(np.argsort(axes))),),
      jvps=(lambda m, t, ans, x, axes=None: m.transpose(t, axes=axes),), inputs=("x",),
      params=(("axes", None),), kind="shape", saves="none", doc="reverse or permute the axes",
      derivative="transpose back", sympy=lambda sp, x, axes=None: np.transpose(x, axes),
      batch="transpose")
entry(name="reshape", forward=_reshape,
      vjps=(lambda m, g, ans, x, shape: m.reshape(g, shape=shape_of(x)),),
      jvps=(lambda m, t, ans, x, shape: m.reshape(t, shape=shape_of(ans)),), inputs=("x",),
      params=(("shape", None),), kind="shape", saves="none", doc="same elements, new shape",
      derivative="reshape back", sympy=lambda sp, x, shape: np.reshape(x, shape), batch="reshape")
entry(name="concatenate", forward=lambda *xs, axis=0: np.concatenate(xs, axis=axis),
      vjps=(_concat_vjp,),
      jvps=(lambda m, ts, ans, *xs, axis=0: _joined(m, "concatenate", ts, axis),), inputs=("xs",),
      params=(("axis", 0),), variadic=True, kind="shape", saves="none",
      doc="join arrays along an existing axis", derivative="slices of g",
      sympy=lambda sp, *xs, axis=0: np.concatenate(xs, axis=axis), batch="joined")
entry(name="stack", forward=lambda *xs, axis=0: np.stack(xs, axis=axis), vjps=(_stack_vjp,),
      jvps=(lambda m, ts, ans, *xs, axis=0: _joined(m, "stack", ts, axis),), inputs=("xs",),
      params=(("axis", 0),), variadic=True, kind="shape", saves="none",
      doc="join arrays along a new axis", derivative="slices of g",
      sympy=lambda sp, *xs, axis=0: np.stack(xs, axis=axis), new_axis=True, batch="joined")


# Internal entries used by the rules.
entry(name="broadcast_to", forward=broadcast_to_forward,
      vjps=(lambda m, g, ans, x, shape: m.sum_to(g, shape=shape_of(x)),),
      jvps=(lambda m, t, ans, x, shape: m.broadcast_to(t, shape=shape),), inputs=("x",),
      params=(("shape", None),), kind="shape", saves="none", doc="x broadcast to shape",
      batch="broadcast", internal=True)
entry(name="sum_to", forward=_sum_to,
      vjps=(lambda m, g, ans, x, shape: m.broadcast_to(g, shape=shape_of(x)),),
      jvps=(lambda m, t, ans, x, shape: m.sum_to(t, shape=shape),), inputs=("x",),
      params=(("shape", None),), kind="shape", saves="none", doc="sum x down to shape",
      batch="sum_to", internal=True)
GETITEM = entry(name="getitem", forward=_getitem,
                vjps=(lambda m, g, ans, x, index: m.scatter(g, index=index, shape=shape_of(x)),),
                jvps=(lambda m, t, ans, x, index: m.getitem(t, index=index),), inputs=("x",),
                params=(("index", None),), kind="shape", saves="none", doc="x[index]",
                batch="getitem", internal=True)
entry(name="scatter", forward=_scatter,
      vjps=(lambda m, g, ans, x, index, shape: m.getitem(g, index=index),),
      jvps=(lambda m, t, ans, x, index, shape: m.scatter(t, index=index, shape=shape),),
      inputs=("x",), params=(("index", None), ("shape", None)), kind="shape", saves="none",
      doc="zeros with x added at index", batch="scatter", internal=True)
def _like(fill):
    def forward(x):
        out = fill(x)
        return out[()] if out.ndim == 0 else out  # scalars are numpy scalars
    return forward


# zeros_like and ones_like have no gradient (None), as TensorFlow's ZerosLike/OnesLike.
entry(name="zeros_like", forward=_like(np.zeros_like), vjps=(None,), jvps=(None,), inputs=("x",),
      kind="shape", doc="zeros shaped like x (no gradient, as in TensorFlow)", batch="same",
      internal=True)
entry(name="ones_like", forward=_like(np.ones_like), vjps=(None,), jvps=(None,), inputs=("x",),
      kind="shape", doc="ones shaped like x (no gradient, as in TensorFlow)", batch="same",
      internal=True)


def _cast(x, dtype):
    out = np.array(x, dtype=dtype)  # a copy: also the identity that makes a new source
    return out[()] if out.ndim == 0 else out


CAST = entry(name="cast", forward=_cast,
             vjps=(lambda m, g, ans, x, dtype: m.cast(
                        g, dtype=getattr(x, "dtype", None) or np.float64),),
             jvps=(lambda m, t, ans, x, dtype: m.cast(t, dtype=dtype),), inputs=("x",),
             params=(("dtype", None),), kind="shape", saves="none",
             doc="x converted to dtype (a copy)", batch="same", internal=True)


# The constructors full and linspace given tensors: differentiable in the fill value and
# in the endpoints (the table's entries take numbers, as the language's static values).
def _fill(x, shape):
    out = np.full(shape, x, dtype=np.result_type(x))
    return out[()] if out.ndim == 0 else out


FILL = entry(name="fill", forward=_fill,
             vjps=(lambda m, g, ans, x, shape: m.sum_to(g, shape=shape_of(x)),),
             jvps=(lambda m, t, ans, x, shape: m.fill(t, shape=shape),), inputs=("x",),
             params=(("shape", None),), kind="shape", saves="none",
             doc="an array of shape filled with x (broadcast)", batch="broadcast", internal=True)


def _ramp(g, num):
    """i / (num - 1) for i < num, shaped to broadcast along linspace's first axis."""
    t = np.linspace(0.0, 1.0, num, dtype=getattr(g, "dtype", None) or np.float64)
    return t.reshape((num,) + (1,) * (len(shape_of(g)) - 1))


LINSPACE = entry(name="linspace_between",
                 forward=lambda start, stop, num=50: np.linspace(start, stop, num),
                 vjps=(lambda m, g, ans, start, stop, num=50:
                              m.sum(g * (1.0 - _ramp(g, num)), axis=0),
                              lambda m, g, ans, start, stop, num=50:
                              m.sum(g * _ramp(g, num), axis=0)),
                 jvps=(lambda m, t, ans, start, stop, num=50: t * (1.0 - _ramp(ans, num)),
                              lambda m, t, ans, start, stop, num=50: t * _ramp(ans, num)),
                 inputs=("start", "stop"), params=(("num", 50),), kind="shape", saves="none",
                 doc="num evenly spaced values from start to stop (tensors)", batch="linspace",
                 internal=True)
