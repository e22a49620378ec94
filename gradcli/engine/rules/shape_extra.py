"""numpy's further shape and indexing functions (issue 10, parts 3 and 4):
``expand_dims``, ``squeeze``, ``ravel``, ``repeat``, ``tile``, ``flip``, ``roll``,
``swapaxes``, ``moveaxis``, ``pad``, ``vstack``, ``split``, ``take``, ``gather``, ... (the
ones every start needs are ``shape.py``'s), and the result sizes the language checks
before running those whose result may be much larger than their inputs.

Loaded on demand (see the package's docstring).

Conventions decided here (where numpy or TensorFlow leave a choice):
- ``split``/``array_split`` return a tuple of tensors (numpy returns a list): each piece
  is recorded as a slice of the input (``getitem``), so the gradient of any piece, or of
  several, flows back into its place. In the language, which has no tuples, index the
  call: ``split(x, 3)[0]``.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ShapeError
from ..core.derive import entry
from ..core.recording import NP, apply, bind
from ..core.table import INTERNAL, REGISTRY, normalise_axes
from ..core.tensor import Tensor, shape_of
from . import elementwise_extra  # noqa: F401  (its entries come first in the table)
from .reductions import (
    reduced_count,
)
from .shape import broadcast_to_forward
from .statistics import axis_batch, axis_of, batching_module, numpy_sympy, raw_value


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
        n = math.prod(shape) if axis is None else shape[axis_of(shape, axis)]
        return _take_vjp(m, g, ans, x, np.repeat(np.arange(n), repeats), axis=axis)
    if axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        return m.reshape(m.sum(m.reshape(g, shape=(n, repeats)), axis=1), shape=shape)
    ax = axis_of(shape, axis)
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
    raw = np.asarray(raw_value(indices))
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
    ax = axis_of(shape, axis)
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
    ax = axis_of(shape, axis)
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


def _squeeze_batch(op, values, batched, params):
    """axis=None squeezes an example's axes of length 1, never the batch axis (a batch of
    one example keeps it)."""
    b = batching_module()
    x = values[0]
    axis = params.get("axis")
    if axis is None:
        axis = tuple(i + 1 for i, n in enumerate(b.example_shape(x, True)) if n == 1)
    else:
        axis = b.shift_axes(axis)
    return apply(op, (x,), {"axis": axis})


def _expand_dims_batch(op, values, batched, params):
    b = batching_module()
    if params.get("axis") is None:  # numpy requires an axis: its own error
        return b.loop(op, values, batched, params)
    return apply(op, (values[0],), {"axis": b.shift_axes(params["axis"])})


def _ravel_batch(op, values, batched, params):
    return batching_module().flat_examples(values[0])


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
        b = batching_module()
        x = values[0]
        return b.reshaped(x, (np.shape(x._value)[0],
                              *_at_least(b.example_shape(x, True), rank)))
    return rule


def _tile_batch(op, values, batched, params):
    """Examples and reps padded with leading ones to one rank, as numpy's tile pads them,
    and the batch axis tiled once."""
    b = batching_module()
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
        b = batching_module()
        if b.example_ndim(values[0], True) <= axis:
            return b.loop(op, values, batched, params)  # numpy's error: too few axes
        return apply(REGISTRY["flip"], (values[0],), {"axis": axis + 1})
    return rule


def _swapaxes_batch(op, values, batched, params):
    """axis1, axis2 (not normalised by the table) made an example's, then moved up."""
    b = batching_module()
    rank = b.example_ndim(values[0], True)
    first = b.example_axis(params.get("axis1"), rank)
    second = b.example_axis(params.get("axis2"), rank)
    if first is None or second is None:
        return b.loop(op, values, batched, params)  # numpy's error
    return apply(op, (values[0],), {"axis1": first + 1, "axis2": second + 1})


def _moveaxis_batch(op, values, batched, params):
    """source and destination (ints or sequences) made an example's, then moved up."""
    b = batching_module()
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
    b = batching_module()
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
        b = batching_module()
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
    b = batching_module()
    x = values[0]
    p = b.example_params(op, params, b.example_ndim(x, True))
    p["axis"] = b.shift_axes(p["axis"])
    return apply(op, (x,), p)


def _take_batch(op, values, batched, params):
    """take and gather. Indices shared by the examples: taken one axis up (axis=None:
    from each flattened example). x shared: taken with the batched indices and the
    batch axis moved first. Both batched: one integer index over the batch axis beside
    the indices (numpy's advanced indexing), the taken axes then put in place."""
    b = batching_module()
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
    b = batching_module()
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


# --- shape functions -------------------------------------------------------------------
# expand_dims' axis indexes its result (one dimension more), as stack's (Op.new_axis).
entry(name="expand_dims", forward=lambda x, axis: np.expand_dims(x, axis), vjps=(_reshape_back,),
      inputs=("x",), params=(("axis", None),), kind="shape", saves="none",
      doc="x with a new axis of length 1 at axis", derivative="reshape back",
      sympy=numpy_sympy(lambda x, axis: np.expand_dims(x, axis)), new_axis=True,
      batch=_expand_dims_batch)
entry(name="squeeze", forward=lambda x, axis=None: np.squeeze(x, axis=axis), vjps=(_reshape_back,),
      inputs=("x",), params=(("axis", None),), kind="shape", saves="none",
      doc="x without its axes of length 1 (or only those named)", derivative="reshape back",
      sympy=numpy_sympy(lambda x, axis=None: np.squeeze(x, axis=axis)), batch=_squeeze_batch)
entry(name="ravel", forward=lambda x: np.ravel(x), vjps=(_reshape_back,), inputs=("x",),
      kind="shape", saves="none", doc="the elements as a 1-D array, in C order",
      derivative="reshape back", sympy=numpy_sympy(np.ravel), aliases=("flatten",),
      batch=_ravel_batch)
entry(name="atleast_1d", forward=np.atleast_1d, vjps=(_reshape_back,), inputs=("x",), kind="shape",
      saves="none", doc="x with at least 1 axis", derivative="reshape back",
      sympy=numpy_sympy(np.atleast_1d), batch=_at_least_batch(1))
entry(name="atleast_2d", forward=np.atleast_2d, vjps=(_reshape_back,), inputs=("x",), kind="shape",
      saves="none", doc="x with at least 2 axes", derivative="reshape back",
      sympy=numpy_sympy(np.atleast_2d), batch=_at_least_batch(2))
entry(name="atleast_3d", forward=np.atleast_3d, vjps=(_reshape_back,), inputs=("x",), kind="shape",
      saves="none", doc="x with at least 3 axes", derivative="reshape back",
      sympy=numpy_sympy(np.atleast_3d), batch=_at_least_batch(3))
entry(name="broadcast_to", forward=broadcast_to_forward,
      vjps=(lambda m, g, ans, x, shape: m.sum_to(g, shape=shape_of(x)),), inputs=("x",),
      params=(("shape", None),), kind="shape", saves="none",
      doc="x broadcast to a shape (numpy's rules)", derivative="g summed back to x's shape",
      sympy=numpy_sympy(lambda x, shape: np.broadcast_to(x, shape)), batch="broadcast")
entry(name="repeat", forward=_repeat, vjps=(_repeat_vjp,), inputs=("x",),
      params=(("repeats", None), ("axis", None)), kind="shape", saves="none",
      doc="each element repeated (an integer count, or a count per element as numpy; "
       "axis=None: flattened)",
      derivative="sum of g over the copies", sympy=numpy_sympy(_repeat), batch=axis_batch())
entry(name="tile", forward=lambda x, reps: np.tile(x, reps), vjps=(_tile_vjp,), inputs=("x",),
      params=(("reps", None),), kind="shape", saves="none",
      doc="x repeated reps times along each axis", derivative="sum of g over the tiles",
      sympy=numpy_sympy(lambda x, reps: np.tile(x, reps)), batch=_tile_batch)
entry(name="flip", forward=lambda x, axis=None: np.flip(x, axis=axis),
      vjps=(lambda m, g, ans, x, axis=None: m.flip(g, axis=axis),), inputs=("x",),
      params=(("axis", None),), kind="shape", saves="none",
      doc="x reversed along an axis (axis=None: all axes)", derivative="g reversed",
      sympy=numpy_sympy(lambda x, axis=None: np.flip(x, axis)), batch=axis_batch(flatten=False))
entry(name="fliplr", forward=np.fliplr, vjps=(lambda m, g, ans, x: m.fliplr(g),), inputs=("x",),
      kind="shape", saves="none", doc="x reversed along axis 1", derivative="g reversed",
      sympy=numpy_sympy(np.fliplr), batch=_flip_axis_batch(1))
entry(name="flipud", forward=np.flipud, vjps=(lambda m, g, ans, x: m.flipud(g),), inputs=("x",),
      kind="shape", saves="none", doc="x reversed along axis 0", derivative="g reversed",
      sympy=numpy_sympy(np.flipud), batch=_flip_axis_batch(0))
entry(name="roll", forward=lambda x, shift, axis=None: np.roll(x, shift, axis=axis),
      vjps=(lambda m, g, ans, x, shift, axis=None: m.roll(
           g, shift=tuple(-s for s in shift) if isinstance(shift, tuple) else -shift,
           axis=axis),),
      inputs=("x",), params=(("shift", None), ("axis", None)), kind="shape", saves="none",
      doc="elements shifted cyclically along an axis (axis=None: flattened)",
      derivative="g rolled back",
      sympy=numpy_sympy(lambda x, shift, axis=None: np.roll(x, shift, axis=axis)),
      batch=axis_batch(unflatten=True))
entry(name="rot90", forward=lambda x, k=1, axes=(0, 1): np.rot90(x, k, axes),
      vjps=(lambda m, g, ans, x, k=1, axes=(0, 1): m.rot90(g, k=-k, axes=axes),), inputs=("x",),
      params=(("k", 1), ("axes", (0, 1))), kind="shape", saves="none",
      doc="x rotated by 90 degrees k times in the plane of two axes", derivative="g rotated back",
      sympy=numpy_sympy(lambda x, k=1, axes=(0, 1): np.rot90(x, k, axes)), batch="axis")
entry(name="swapaxes", forward=lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2),
      vjps=(lambda m, g, ans, x, axis1, axis2: m.swapaxes(g, axis1=axis1, axis2=axis2),),
      inputs=("x",), params=(("axis1", None), ("axis2", None)), kind="shape", saves="none",
      doc="x with two axes interchanged", derivative="g with the axes swapped back",
      sympy=numpy_sympy(lambda x, axis1, axis2: np.swapaxes(x, axis1, axis2)),
      batch=_swapaxes_batch)
entry(name="moveaxis", forward=lambda x, source, destination: np.moveaxis(x, source, destination),
      vjps=(lambda m, g, ans, x, source, destination:
        m.moveaxis(g, source=destination, destination=source),),
      inputs=("x",), params=(("source", None), ("destination", None)), kind="shape", saves="none",
      doc="x with axes moved to new places", derivative="g with the axes moved back",
      sympy=numpy_sympy(lambda x, source, destination: np.moveaxis(x, source, destination)),
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
_joined(name="vstack", promote=np.atleast_2d, axis_of=lambda x: 0,
        doc="arrays joined along axis 0 (1-D as rows)",
        batch=_joined_batch(2, lambda shape: 0))
_joined(name="hstack", promote=np.atleast_1d, axis_of=lambda x: 0 if len(shape_of(x)) <= 1 else 1,
        doc="arrays joined along axis 1 (1-D: along axis 0)",
        batch=_joined_batch(1, lambda shape: 0 if len(shape) == 1 else 1))
_joined(name="dstack", promote=np.atleast_3d, axis_of=lambda x: 2,
        doc="arrays joined along axis 2 (depth)",
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
          sympy=numpy_sympy(lambda x, indices_or_sections, axis=0:
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
