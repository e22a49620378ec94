"""The batching transform: ``vectorized_map(fn, elems)`` runs ``fn`` once on a whole batch.

As JAX's ``vmap`` and TensorFlow's ``vectorized_map`` do, ``fn`` is written for one
example and called once, on ``Batched`` values: each holds the examples as one tensor
whose axis 0 is the batch, and reads as one example (``x.shape`` is an example's shape).
An operation on a batched value goes to its table entry's batching rule (``Op.batch``),
which computes the result for all the examples with one call of ordinary entries on the
underlying tensors, so tapes and forward accumulators record it as usual.

A rule is ``rule(op, values, batched, params) -> tensor``: ``values`` are the entry's
inputs (for a variadic entry, its sequence of tensors), the batched ones as their
underlying tensor (batch on axis 0); ``batched`` says which; ``params`` are the static
parameters, with axes already made non-negative for one example. It returns the result
for every example, batch on axis 0. One rule per kind serves most entries:

- ``elementwise``: broadcasting entries; a batched input gets unit axes after its batch
  axis so that numpy's right-aligned broadcasting pairs the examples' axes.
- ``axis``: entries whose ``axis`` parameters index one example (reductions, softmax):
  the axes move up by one; ``axis=None`` (all of an example) becomes every axis but 0.
- ``loop``: one call per example and a stack (for the few entries with no vectorised
  rule yet: correct, not fast).

Data-dependent Python code in ``fn`` (``if x > 0``, ``float(x)``) reads a batched value
as one plain value, which raises ``NotBatchable``; ``vectorized_map`` then runs ``fn`` once
per example and stacks the results, and says so once (a warning), as TensorFlow's
``fallback_to_while_loop`` does.

>>> import gradcli as gc, numpy as np
>>> gc.vectorized_map(lambda x: gc.sum(x * x), np.array([[1.0, 2.0], [3.0, 4.0]])).numpy()
array([ 5., 25.])
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from ...errors import ShapeError
from . import state
from .nest import flatten, pack, pair
from .recording import EMPTY, FUNCTIONS, apply
from .table import INTERNAL, REGISTRY, Op, normalise_axes
from .tensor import Batched, NotBatchable, Shape, Tensor, make_tensor, as_value, constant

__all__ = ["vectorized_map", "Batched", "NotBatchable", "apply_batched", "RULES"]


# ---------------------------------------------------------------------------------------
# Running an entry on batched inputs
# ---------------------------------------------------------------------------------------
def apply_batched(op: Op, inputs, params) -> Batched:
    """Run ``op`` on inputs of which some are ``Batched`` (``recording.apply`` comes here when
    one is): its batching rule, on the underlying tensors."""
    rule = _RULE_OF.get(op) or rule_of(op)
    if rule is elementwise and not state.forward:
        out = _elementwise_as_is(op, inputs, params)
        if out is not None:
            return out
    # A list or tuple holding batched values is packed first, as recording.apply packs one
    # holding tensors (a variadic entry's inputs are its sequence of tensors).
    values, batched, size, first = [], [], None, None
    for x in inputs:
        if x.__class__ is list or x.__class__ is tuple:
            x = _pack(x)
        if first is None:
            first = x
        if isinstance(x, Batched):
            x = x._tensor
            n = x._value.shape[0]
            if size is None:
                size = n
            elif n != size:
                raise ShapeError(f"{op.name}: batched inputs of different batch sizes "
                                 f"{sorted({size, n})}")
            batched.append(True)
        else:
            batched.append(False)
        values.append(x)
    if size is None:
        raise NotBatchable(f"{op.name} read a value as a plain value inside vectorized_map")
    if state.forward:
        _repeat_shared_with_batched_tangents(values, batched, size)
    if params and op.axis_params:
        params = normalise_axes(op, first.ndim if isinstance(first, Batched)
                                else np.ndim(first), params)
    return Batched(rule(op, values, batched, dict(params)))


#: Each entry's batching rule, resolved once from ``Op.batch`` (a rule's name or a rule).
_RULE_OF: dict = {}


def rule_of(op: Op) -> Callable:
    """``op``'s batching rule (looked up once per entry, then kept in ``_RULE_OF``)."""
    rule = _RULE_OF[op] = op.batch if callable(op.batch) else RULES[op.batch]
    return rule


def _elementwise_as_is(op: Op, inputs, params) -> Batched | None:
    """The short path of an elementwise entry whose batched inputs all hold examples of
    one rank and whose other inputs have no more dimensions than an example (numbers, a
    vector shared by every example): right-aligned broadcasting already pairs the
    examples' axes, so the entry runs on the underlying tensors as they are, with
    nothing lifted. None when that does not hold (the rule then lifts)."""
    values = []
    rank = size = None
    shared = 0  # the most dimensions of an unbatched input
    for x in inputs:
        if isinstance(x, Batched):
            x = x._tensor
            shape = x._value.shape
            if rank is None:
                rank, size = len(shape), shape[:1]
            elif len(shape) != rank or shape[:1] != size:
                return None
        elif isinstance(x, (Tensor, np.ndarray, np.generic)):
            ndim = x._value.ndim if isinstance(x, Tensor) else x.ndim
            shared = ndim if ndim > shared else shared
        elif x.__class__ is not float and x.__class__ is not int:
            return None  # (a list, a bool, ...: the general path converts or refuses it)
        values.append(x)
    if rank is None or shared > rank - 1:
        return None
    return Batched(apply(op, values, params or EMPTY))


def _repeat_shared_with_batched_tangents(values: list, batched: list, size: int) -> None:
    """A shared input whose tangent is batched (forward mode over a basis of tangents at
    one point) becomes batched, with its tangents' examples (in place in the lists)."""
    for i, x in enumerate(values):
        if not batched[i] and isinstance(x, Tensor):
            repeated = state.repeat_with_tangents(x, size)
            if repeated is not None:
                values[i], batched[i] = repeated, True


def _pack(x):
    if x.__class__ is list or x.__class__ is tuple:
        return FUNCTIONS["stack"]([_pack(item) for item in x], axis=0)
    return x


def batch_size(op: Op, values, batched) -> int:
    """The number of examples of an entry's batched inputs (all the same, or a
    ``ShapeError`` naming the entry)."""
    sizes = {v._value.shape[0] for v, b in zip(values, batched) if b}
    if len(sizes) > 1:
        raise ShapeError(f"{op.name}: batched inputs of different batch sizes "
                         f"{sorted(sizes)}")
    return sizes.pop()


def example_ndim(value, is_batched: bool) -> int:
    """The rank of one example of an input (a batched input loses its batch axis)."""
    return np.ndim(value._value if isinstance(value, Tensor) else value) - is_batched


def example_shape(value, is_batched: bool) -> tuple:
    shape = np.shape(value._value if isinstance(value, Tensor) else value)
    return shape[1:] if is_batched else shape


def with_batch(value, size: int) -> Tensor:
    """An unbatched input made batched: the same example ``size`` times (a recorded
    broadcast, so the gradient sums over the batch); its batched tangent, if forward mode
    gave it one, becomes the result's, example by example."""
    if state.forward and isinstance(value, Tensor):
        repeated = state.repeat_with_tangents(value, size)
        if repeated is not None:
            return repeated
    shape = np.shape(value._value if isinstance(value, Tensor) else value)
    return apply(INTERNAL["broadcast_to"], (value,), {"shape": (size, *shape)})


def lift(value, rank: int) -> Tensor:
    """A batched input with unit axes after the batch axis, so that one example has
    ``rank`` dimensions (right-aligned broadcasting then pairs the examples' axes)."""
    shape = value._value.shape
    missing = rank - (len(shape) - 1)
    if missing <= 0:
        return value
    return apply(REGISTRY["reshape"], (value,),
                 {"shape": (shape[0], *(1,) * missing, *shape[1:])})


def lift_batched(values, batched) -> list:
    """The batched inputs lifted (``lift``) to the largest example rank of all inputs, for
    entries that broadcast examples against each other (solve, cross): an unbatched
    input then pairs with every example by right-aligned broadcasting as it is."""
    rank = max(example_ndim(v, b) for v, b in zip(values, batched))
    return [lift(v, rank) if b else v for v, b in zip(values, batched)]


def shift_axes(axes):
    """An example's (non-negative) axes as the batched value's."""
    if axes is None:
        return None
    if isinstance(axes, tuple):
        return tuple(a + 1 for a in axes)
    return axes + 1


# ---------------------------------------------------------------------------------------
# The rules for kinds of entries
# ---------------------------------------------------------------------------------------
def elementwise(op: Op, values, batched, params) -> Tensor:
    """Broadcasting entries: batched inputs get unit axes after the batch axis up to the
    largest example rank; unbatched inputs broadcast against the examples as they are."""
    return apply(op, lift_batched(values, batched), params or {})


def axis(op: Op, values, batched, params) -> Tensor:
    """Entries whose axis parameters index one example: they move up by one, and an axis
    of None (the whole example) becomes every axis but the batch's. Other inputs than
    the first are batched like it (made batched when they are not)."""
    size = batch_size(op, values, batched)
    values = [v if b else with_batch(v, size) for v, b in zip(values, batched)]
    rank = example_ndim(values[0], True)
    for name in op.axis_params:
        if name in params:
            value = params[name]
            params[name] = tuple(range(1, rank + 1)) if value is None else shift_axes(value)
    for name, default in op.params:
        if name in op.axis_params and name not in params:
            params[name] = (tuple(range(1, rank + 1)) if default is None
                            else shift_axes(_example_axis(op, default, rank)))
    return apply(op, values, params)


def _example_axis(op: Op, default, rank: int):
    return normalise_axes(op, rank, {"axis": default})["axis"] if isinstance(default, int) \
        else default


def loop(op: Op, values, batched, params) -> Tensor:
    """One call per example, and a stack of the results: correct for any entry."""
    size = batch_size(op, values, batched)
    getitem = INTERNAL["getitem"]
    results = []
    for i in range(size):
        example = [apply(getitem, (v,), {"index": (i,)}) if b else v
                   for v, b in zip(values, batched)]
        results.append(apply(op, example, params or {}))
    return apply(REGISTRY["stack"], results, {"axis": 0})


def same(op: Op, values, batched, params) -> Tensor:
    """Entries of one input that treat every element alike whatever its axes (``cast``,
    ``stop_gradient``, ``zeros_like``): the entry itself on the whole batch."""
    return apply(op, values, params or {})


def _shape_param(shape) -> tuple:
    """A shape parameter (an int, a sequence, an array) as a tuple of ints."""
    if shape.__class__ is tuple and all(n.__class__ is int for n in shape):
        return shape  # (the rules' own shapes: most of the calls)
    return tuple(int(n) for n in np.ravel(np.asarray(shape, dtype=np.int64)))


def reshaped(value, shape) -> Tensor:
    """``value`` reshaped (a recorded reshape: the helpers' way to add or drop unit
    axes)."""
    return apply(REGISTRY["reshape"], (value,), {"shape": tuple(int(n) for n in shape)})


def moved_to_front(value, axis: int) -> Tensor:
    """``value`` with its axis ``axis`` moved to the front (a recorded transpose)."""
    if axis == 0:
        return value
    rank = np.ndim(value._value)
    axes = (axis, *range(axis), *range(axis + 1, rank))
    return apply(REGISTRY["transpose"], (value,), {"axes": axes})


def moved_from_front(value, axis: int) -> Tensor:
    """``value`` with its axis 0 moved to ``axis`` (the inverse of ``moved_to_front``)."""
    if axis == 0:
        return value
    rank = np.ndim(value._value)
    axes = (*range(1, axis + 1), 0, *range(axis + 1, rank))
    return apply(REGISTRY["transpose"], (value,), {"axes": axes})


def broadcast(op: Op, values, batched, params) -> Tensor:
    """Entries that broadcast their input to a ``shape`` parameter (``broadcast_to``,
    ``fill``): each example to that shape, after the batch axis."""
    (x,) = values
    shape = _shape_param(params["shape"])
    size = np.shape(x._value)[0]
    return apply(op, (lift(x, len(shape)),), {**params, "shape": (size, *shape)})


def joined(op: Op, values, batched, params) -> Tensor:
    """``concatenate`` and ``stack``: every input batched (an unbatched one repeated for
    every example), joined along the example's axis plus one."""
    size = batch_size(op, values, batched)
    values = [v if b else with_batch(v, size) for v, b in zip(values, batched)]
    axis = params.get("axis", 0)
    if axis is None:  # concatenate(axis=None) joins the flattened inputs
        values = [reshaped(v, (size, -1)) for v in values]
        axis = 0
    return apply(op, values, {**params, "axis": axis + 1})


def matmul(op: Op, values, batched, params) -> Tensor:
    """``matmul`` (and ``dot`` of at most 2-D examples, which is the same product): a
    1-D example becomes a row (left) or a column (right) matrix, the batch axis becomes
    a leading batch dimension of numpy's matmul (batched operands get unit axes up to
    the other's rank, so that the batch pairs with the batch), and the added row or
    column axis is dropped again."""
    x, y = values
    bx, by = batched
    xs, ys = example_shape(x, bx), example_shape(y, by)
    if not xs or not ys:
        return loop(op, values, batched, params)  # a 0-d operand: the entry's own error
    size = batch_size(op, values, batched)
    if len(xs) == 1:
        x = reshaped(x, (size, 1, xs[0]) if bx else (1, xs[0]))
    if len(ys) == 1:
        y = reshaped(y, (size, ys[0], 1) if by else (ys[0], 1))
    rank = max(len(xs), len(ys), 2)
    if bx:
        x = lift(x, rank)
    if by:
        y = lift(y, rank)
    out = apply(REGISTRY["matmul"], (x, y), EMPTY)
    if len(xs) == 1 or len(ys) == 1:
        shape = np.shape(out._value)
        keep = shape[:-2] + (shape[-2:-1] if len(xs) > 1 else ()) + (
            shape[-1:] if len(ys) > 1 else ())
        out = reshaped(out, keep)
    return out


def dot(op: Op, values, batched, params) -> Tensor:
    """``dot``: a product with a 0-d example is elementwise, two examples of at most two
    dimensions multiply as matmul does; more is the entry's own error (by the loop)."""
    ranks = [example_ndim(v, b) for v, b in zip(values, batched)]
    if 0 in ranks:
        return elementwise(REGISTRY["multiply"], values, batched, EMPTY)
    if max(ranks) > 2:
        return loop(op, values, batched, params)
    return matmul(op, values, batched, params)


def batched_index(index):
    """``index`` (of one example) for the batched value, and the axis of the result that
    the batch lands on: 0, except where numpy moves the dimensions of non-adjacent
    advanced indices to the front (``x[a, :, b]``), where it comes after them. None for
    an index this does not model (a boolean scalar)."""
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(np.asarray(i) if isinstance(i, list) else i for i in items)
    shapes, places, arrays = [], [], False
    for k, item in enumerate(items):
        if item is None or item is Ellipsis or isinstance(item, slice):
            continue
        if item.__class__ is bool or isinstance(item, np.bool_) or (
                isinstance(item, np.ndarray) and item.dtype == bool and item.ndim == 0):
            return None
        if isinstance(item, np.ndarray) and item.ndim:
            arrays = True
            # (a boolean mask stands for the 1-D positions of its true elements)
            shapes.append((int(np.count_nonzero(item)),) if item.dtype == bool
                          else item.shape)
            places.append(k)
        else:  # an integer: an advanced index only beside an array
            shapes.append(())
            places.append(k)
    at = 0
    if arrays and any(b - a > 1 for a, b in zip(places, places[1:])):
        at = len(np.broadcast_shapes(*shapes))
    return (slice(None), *items), at


def getitem(op: Op, values, batched, params) -> Tensor:
    """Indexing with a static index: a full slice for the batch axis before it."""
    found = batched_index(params["index"])
    if found is None:
        return loop(op, values, batched, params)
    index, at = found
    return moved_to_front(apply(op, values, {"index": index}), at)


def scatter(op: Op, values, batched, params) -> Tensor:
    """``scatter`` (indexing's adjoint): the batch axis of the values put where indexing
    the batched result puts it."""
    found = batched_index(params["index"])
    if found is None:
        return loop(op, values, batched, params)
    index, at = found
    (x,) = values
    shape = _shape_param(params["shape"])
    size = x._value.shape[0]
    # each example's values broadcast to the indexed part, as numpy's assignment does
    part = _indexed_shape(shape, params["index"])
    x = moved_from_front(lift(x, len(part)), at)
    return apply(op, (x,), {"index": index, "shape": (size, *shape)})


_ONE = np.zeros(1, dtype=bool)


def _indexed_shape(shape: tuple, index) -> tuple:
    """The shape of ``array[index]`` for an array of ``shape`` (indexing a view of one
    element with zero strides: nothing of that size is made)."""
    return np.ndarray(shape, bool, _ONE, 0, (0,) * len(shape))[index].shape


def transpose(op: Op, values, batched, params) -> Tensor:
    """The example's axes permuted after the batch axis, which stays first."""
    (x,) = values
    rank = example_ndim(x, True)
    axes = params.get("axes")
    axes = tuple(range(rank - 1, -1, -1)) if axes is None else (
        axes if isinstance(axes, tuple) else (axes,))
    return apply(op, (x,), {"axes": (0, *shift_axes(axes))})


def reshape(op: Op, values, batched, params) -> Tensor:
    """Each example to the shape (a -1 is still the example's own)."""
    (x,) = values
    size = np.shape(x._value)[0]
    return apply(op, (x,), {"shape": (size, *_shape_param(params["shape"]))})


def sum_to(op: Op, values, batched, params) -> Tensor:
    """Each example summed down to the shape: its extra leading axes (after the batch
    axis) by a sum, then its unit axes by the entry."""
    (x,) = values
    shape = _shape_param(params["shape"])
    lead = example_ndim(x, True) - len(shape)
    if lead > 0:
        x = apply(REGISTRY["sum"], (x,), {"axis": tuple(range(1, lead + 1)),
                                          "keepdims": False})
    full = (x._value.shape[0], *shape)
    return x if x._value.shape == full else apply(op, (x,), {"shape": full})


def linspace(op: Op, values, batched, params) -> Tensor:
    """``linspace_between``: numpy puts the steps first and the batch after them; the
    batch is moved back to the front."""
    size = batch_size(op, values, batched)
    values = [v if b else with_batch(v, size) for v, b in zip(values, batched)]
    rank = max(example_ndim(v, True) for v in values)
    out = apply(op, [lift(v, rank) for v in values], params or {})
    return moved_to_front(out, 1)


def no_inputs(op: Op, values, batched, params) -> Tensor:  # pragma: no cover
    """Constructors take no tensor input, so nothing of theirs is ever batched."""
    raise RuntimeError(f"{op.name} has no tensor input to batch")


#: The rules named by ``Op.batch``.
RULES: dict[str, Callable[..., Any]] = {
    "elementwise": elementwise, "axis": axis, "loop": loop, "no_inputs": no_inputs,
    "same": same, "broadcast": broadcast, "joined": joined, "matmul": matmul, "dot": dot,
    "getitem": getitem, "scatter": scatter, "transpose": transpose, "reshape": reshape,
    "sum_to": sum_to, "linspace": linspace}


# ---------------------------------------------------------------------------------------
# The transform
# ---------------------------------------------------------------------------------------
def vectorized_map(fn: Callable, elems, fallback_to_while_loop: bool = True):
    """``fn`` mapped over axis 0 of every tensor in the nest ``elems``, in one call of
    ``fn`` on the whole batch (TensorFlow's ``tf.vectorized_map``; JAX's ``vmap``).

    ``elems`` is a tensor, an array or a nest (lists, tuples, dicts) of them, all with
    the same size of axis 0; ``fn`` receives the same nest with each leaf replaced by a
    value that reads as one example. The result is ``fn``'s nest of outputs, each with a
    leading batch axis. Tapes outside record the computation: gradients reach ``elems``.
    When ``fn`` reads a batched value as a plain one (data-dependent Python control flow),
    it runs once per example instead, with the same results, and a warning says so once
    (``fallback_to_while_loop=False``: a ``ValueError``).

    Gradients taken inside ``fn`` are per example (JAX's ``vmap(grad(f))``): see
    ``gradient`` below and docs/python-api.md.

    >>> import gradcli as gc, numpy as np
    >>> gc.vectorized_map(lambda x: x[0] * x[1], np.array([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([ 2., 12.])
    >>> per_example = gc.gradients_function(lambda x: x[0] * x[1] ** 2)
    >>> gc.vectorized_map(per_example, np.array([[1.0, 2.0], [3.0, 4.0]]))[0].numpy()
    array([[ 4.,  4.],
           [16., 24.]])
    """
    leaves, rebuild = _flatten(elems)
    if not leaves:
        raise ValueError("vectorized_map: elems holds no tensor")
    tensors = [x if isinstance(x, (Tensor, Batched)) else constant(x) for x in leaves]
    sizes = {_leading(x) for x in tensors}
    if len(sizes) != 1:
        raise ValueError(f"vectorized_map: the elements have different sizes of axis 0 "
                         f"{sorted(sizes)}")
    size = sizes.pop()
    if state.batching or any(isinstance(x, Batched) for x in tensors):
        # A map inside a map: the inner one runs as a loop over its examples, each step
        # batched by the outer map (its indexing and stacking too). Its own batch could
        # not meet the outer map's values that fn closes over: an operation on both would
        # pair example i of one with example i of the other, or fail on their sizes.
        return _loop(fn, tensors, rebuild, size)
    out, reason = _run_batched(fn, tensors, rebuild, size)
    if reason is None:
        return out
    if not fallback_to_while_loop:
        raise ValueError(f"vectorized_map: fn cannot run batched ({reason}) and "
                         f"fallback_to_while_loop is False")
    # Said once per call (the loop below runs fn once per example without a word).
    warnings.warn(f"vectorized_map: fn cannot run batched: {reason}; running it once "
                  f"per example instead", RuntimeWarning, stacklevel=2)
    return _loop(fn, tensors, rebuild, size)


def _run_batched(fn, tensors: list, rebuild, size: int) -> tuple:
    """``(outputs, None)``: ``fn`` run once on the batched values, its outputs with the
    batch on axis 0; or ``(None, reason)`` when it cannot run batched (the reason names
    the operation that read a batched value as a plain one)."""
    state.batching.append(size)
    try:
        out = fn(rebuild([Batched(t) for t in tensors]))
    except NotBatchable as err:
        return None, str(err)
    finally:
        state.batching.pop()
    results, rebuild_out = _flatten(out)
    return rebuild_out([_unbatched(r, size) for r in results]), None


def _leading(x) -> int:
    shape = x.shape
    if not shape:
        raise ValueError("vectorized_map: every element needs an axis 0 to map over "
                         "(got a scalar)")
    return shape[0]


def _unbatched(result, size: int):
    """An output of fn as a tensor with the batch on axis 0 (an output that does not
    depend on the batch is repeated, as TensorFlow tiles it)."""
    if isinstance(result, Batched):
        return result._tensor
    if result is None:
        return None
    return with_batch(result if isinstance(result, Tensor) else constant(result), size)


def _loop(fn, tensors, rebuild, size: int):
    getitem = INTERNAL["getitem"]
    outs = [fn(rebuild([apply(getitem, (t,), {"index": (i,)}) for t in tensors]))
            for i in range(size)]
    flat = [_flatten(o)[0] for o in outs]
    _, rebuild_out = _flatten(outs[0]) if outs else ((), lambda x: x)
    stacked = [None if column[0] is None else FUNCTIONS["stack"](list(column), axis=0)
               for column in zip(*flat)]
    return rebuild_out(stacked)


def _flatten(structure):
    """The leaves of a nest (``nest.flatten``) and the function that rebuilds it from new
    leaves."""
    return flatten(structure), lambda leaves: pack(structure, iter(leaves))


def _install() -> None:
    """Batched values take the operators and methods of tensors: each goes through
    ``recording.apply`` (so to the batching rules), except what reads a value."""
    own = set(Batched.__dict__) | {"__init__", "__slots__", "__dict__", "__weakref__",
                                   "__module__", "__doc__", "_value", "_node", "__index__",
                                   "__array_function__"}
    for name, member in Tensor.__dict__.items():
        if name not in own:
            setattr(Batched, name, member)
    Batched.__array_function__ = _array_function


def _array_function(self, func, types, args, kwargs):
    """numpy's functions on a batched value: its shape functions read one example; a
    numpy function with a gradcli counterpart (engine/numpy_api: found by the function
    itself, numpy's meaning kept) runs batched; anything else cannot be batched."""
    if func in (np.shape, np.ndim, np.size) and len(args) == 1 and not kwargs:
        return getattr(self, func.__name__)
    from . import numpy_api
    result, reason = numpy_api.compute(func, args, kwargs)
    if result is numpy_api.UNSUPPORTED:
        reason = reason.replace("{name}", f"np.{func.__name__}")
        raise NotBatchable(f"numpy's {func.__name__} has no batching rule: {reason}")
    return result


_install()


# ---------------------------------------------------------------------------------------
# Gradients inside the map (JAX's vmap(grad(f))): the gradient APIs come here when they
# meet batched values, once per call
# ---------------------------------------------------------------------------------------
_SHARED = ("a per-example gradient of a value shared by every example (not batched) was "
           "asked for inside vectorized_map ({})")


def gradient(tape, targets, seeds, sources, release: bool | None = None) -> list:
    """``tape.gradient`` with batched targets or sources: the backward pass runs once on
    the underlying tensors. The examples do not mix, so the gradient of the batch's sum
    holds each example's own gradient (unsummed, one per example). A source shared by
    every example (not batched) of a batched target would get the sum over the examples
    instead: that raises ``NotBatchable``, and the map runs its function per example."""
    plain_targets, plain_seeds, batched_target = [], [], False
    batched_seed = any(isinstance(t, Batched) for t in targets) is False and any(
        isinstance(seed, Batched) for seed in seeds)  # one backward pass of many seeds
    for t, seed in zip(targets, seeds):
        if isinstance(t, Batched):
            batched_target = True
            t = t._tensor
            if isinstance(seed, Batched):
                seed = seed._tensor
            elif isinstance(seed, Tensor):
                seed = with_batch(seed, np.shape(t._value)[0])  # one seed for every example
            elif seed is not None:
                seed = np.broadcast_to(as_value(seed, t.dtype), np.shape(t._value))
        elif isinstance(seed, Batched) and not batched_seed:
            raise NotBatchable(_SHARED.format("tape.gradient with per-example "
                                              "output_gradients of a shared target beside "
                                              "a batched target"))
        plain_targets.append(t)
        plain_seeds.append(seed)
    plain_sources, batched_source = [], []
    for s in sources:
        if isinstance(s, Batched):
            plain_sources.append(s._tensor)
            batched_source.append(True)
        elif isinstance(s, Tensor):
            plain_sources.append(s)
            batched_source.append(False)
        else:
            raise TypeError(f"gradient sources must be tensors or variables, "
                            f"got {type(s).__name__}")
    grads = tape._backward(plain_targets, plain_seeds, plain_sources,
                           release=not tape._persistent if release is None else release)
    out = []
    for g, b in zip(grads, batched_source):
        if g is None:
            out.append(None)
        elif batched_seed:
            out.append(g)  # (the backward pass ran on the Batched seeds: per example)
        elif b:
            out.append(Batched(g))
        elif batched_target:
            raise NotBatchable(_SHARED.format("tape.gradient of a batched target with "
                                              "respect to a shared source"))
        else:
            out.append(g)
    return out


#: Elements of the largest batched cotangent a chunk of Jacobian rows may hold (32 MiB
#: of float64): the basis is cut into chunks of rows so that memory stays bounded.
JACOBIAN_CHUNK_ELEMENTS = 1 << 22


def jacobian_rows(tape, target: Tensor, sources) -> list:
    """The rows of d target / d sources (a target of n elements, not batched), as
    TensorFlow's pfor and ``jax.jacrev`` compute them: a backward pass on a batch of
    seeds, the basis of the target's cotangents, in chunks of rows that bound the
    memory. Per source, a list of chunks (arrays of shape ``(rows, *source.shape)``;
    zeros where the target does not reach it). An operation whose rule cannot batch
    makes ``vectorized_map`` fall back to one backward pass per row, said once."""
    tshape = target.shape
    n = math.prod(tshape)
    widest = max([n, _widest_recorded(target), *(int(np.size(s._value)) for s in sources)])
    chunk = max(1, min(n, JACOBIAN_CHUNK_ELEMENTS // max(widest, 1)))
    out: list[list] = [[] for _ in sources]
    connected = [False] * len(sources)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        basis = np.zeros((stop - start, n), dtype=target.dtype)
        basis[np.arange(stop - start), np.arange(start, stop)] = 1.0
        basis = basis.reshape((stop - start, *tshape))

        def row(seed):
            grads = gradient(tape, [target], [seed], sources, release=False)
            for j, g in enumerate(grads):
                connected[j] = connected[j] or g is not None
            return [g if g is not None else make_tensor(np.zeros(s.shape, s.dtype)[()] if not s.ndim
                                                   else np.zeros(s.shape, s.dtype))
                    for g, s in zip(grads, sources)]
        if n == 1:  # (one row: no batch to make)
            parts = [FUNCTIONS["reshape"](g, (1, *s.shape)) if state.recording else
                     make_tensor(np.reshape(g._value, (1, *s.shape)))
                     for g, s in zip(row(basis[0]), sources)]
        else:
            parts = _map_basis(row, basis)
        for j, part in enumerate(parts):
            out[j].append(part)
    return [chunks if c else [None] for chunks, c in zip(out, connected)]


def _widest_recorded(target) -> int:
    """The most elements of any value recorded on the way to ``target`` (each node's
    inputs, kept as arrays or as their ``Shape``): a chunk of rows holds a cotangent of
    that size per row, so it bounds the chunk, not only the target and sources do."""
    node = target._node if isinstance(target, Tensor) else None
    if node is None:
        return 0
    widest, stack, seen = 0, [node], {node}
    while stack:
        node = stack.pop()
        for v in node.values:  # (numbers count as 1)
            size = v.size if v.__class__ is np.ndarray else (
                math.prod(v.shape) if v.__class__ is Shape else 0)
            if size > widest:
                widest = size
        for p in node.parents:
            if p is not None and p not in seen:
                seen.add(p)
                stack.append(p)
    return widest


def _map_basis(row, basis: np.ndarray) -> list:
    """``vectorized_map(row, basis)`` for a Jacobian, whose fallback, if a rule cannot
    batch, is said as the Jacobian's (the caller wrote no map)."""
    tensors, rebuild = [make_tensor(basis)], lambda leaves: leaves[0]
    if state.batching:  # inside a map: a loop, as vectorized_map runs a map in a map
        return _loop(row, tensors, rebuild, len(basis))
    parts, reason = _run_batched(row, tensors, rebuild, len(basis))
    if reason is None:
        return parts
    warnings.warn(f"jacobian: {reason}; computing it one row at a time instead",
                  RuntimeWarning, stacklevel=4)
    return _loop(row, tensors, rebuild, len(basis))


def jacobian(tape, target, sources, unconnected: str) -> list:
    """``tape.jacobian`` of a batched target: one backward pass per element of an
    example, each seeding that element in every example at once; each example's rows
    are its own Jacobian."""
    if not isinstance(target, Batched):
        raise NotBatchable(_SHARED.format("tape.jacobian of a shared target"))
    under = target._tensor
    shape = np.shape(under._value)
    size, tshape = shape[0], shape[1:]
    n = int(np.prod(tshape, dtype=np.int64))
    if n == 0:
        raise NotBatchable("tape.jacobian: an empty Jacobian inside vectorized_map")
    rows: list[list] = [[] for _ in sources]
    for k in range(n):
        seed = np.zeros((size, n), dtype=under.dtype)
        seed[:, k] = 1.0
        grads = gradient(tape, [target], [Batched(make_tensor(seed.reshape(shape)))], sources,
                         release=False)
        for j, g in enumerate(grads):
            rows[j].append(g)
    out = []
    stack, reshape = FUNCTIONS["stack"], FUNCTIONS["reshape"]
    for s, row in zip(sources, rows):
        if all(g is None for g in row):
            out.append(None if unconnected == "none" else
                       make_tensor(np.zeros(tshape + s.shape, dtype=s.dtype)))
            continue
        parts = [g if g is not None else Batched(make_tensor(np.zeros((size, *s.shape), s.dtype)))
                 for g in row]
        out.append(reshape(stack(parts), tshape + s.shape))
    return out


def batched_arguments(args: list, argnums) -> None:
    """The differentiated arguments of a gradient function called inside
    ``vectorized_map`` (in place in ``args``): an argument shared by every example is
    repeated for each (a recorded broadcast), so that its gradient comes out per example
    too — also when only the function closes over batched values
    (``vectorized_map(lambda x: gradients_function(lambda w: loss(w, x))(w0), xs)``),
    as JAX's ``vmap`` of ``grad`` of such a closure gives per-example gradients."""
    if not state.batching:
        return
    size = state.batching[-1]
    for i in argnums:
        if not isinstance(args[i], Batched):
            x = args[i] if isinstance(args[i], Tensor) else constant(args[i])
            args[i] = Batched(with_batch(x, size))


def custom_gradient_call(wrap, f, xs, kwargs):
    """A ``custom_gradient`` function called with batched inputs: ``f`` and its
    ``grad_fn`` see batched values (written for one example), the recorded entry the
    underlying tensors. A gradient for an input shared by every example is summed over
    the examples (what that input receives from the whole batch). Keyword arguments,
    batched or not, reach ``f`` as given (they are not differentiated)."""
    batched = [isinstance(x, Batched) for x in xs]
    batched_keys = {k for k, v in kwargs.items() if isinstance(v, Batched)}
    size = next(x._tensor.shape[0] for x in (*xs, *kwargs.values()) if isinstance(x, Batched))
    leaves_of = {}

    def under_f(*values, **plain_kwargs):
        ys, grad_fn = pair(f, f(*[Batched(v) if b else v for v, b in zip(values, batched)],
                                 **{k: Batched(v) if k in batched_keys else v
                                    for k, v in plain_kwargs.items()}))
        leaves, rebuild = _flatten(ys)
        leaves_of["rebuild"] = rebuild
        plain = [leaf._tensor if isinstance(leaf, Batched) else
                 with_batch(leaf if isinstance(leaf, Tensor) else constant(leaf), size)
                 for leaf in leaves]

        def under_grad(*dys, **kwargs):
            result = grad_fn(*[Batched(dy if isinstance(dy, Tensor) else make_tensor(dy))
                               for dy in dys], **kwargs)
            if "variables" not in kwargs:
                return per_input(result)
            if not isinstance(result, (list, tuple)) or len(result) != 2:
                return result  # the caller's check says what grad_fn must return
            dxs, dvs = result  # the variables f read are shared by every example
            return per_input(dxs), None if dvs is None else [summed(dv, False) for dv in dvs]
        return (plain[0] if len(plain) == 1 and not isinstance(ys, (list, tuple, dict))
                else plain), under_grad

    def per_input(dxs):
        """grad_fn's gradients for the inputs, each as the recorded entry's (one entry
        beyond the inputs is kept, for the caller's count check to name)."""
        if dxs is None:
            return None
        single = len(xs) == 1 and not isinstance(dxs, (list, tuple))
        flat = [dxs] if single else list(dxs)
        out = [summed(dx, b) for dx, b in zip(flat, batched)] + flat[len(batched):]
        return out[0] if single else out

    def summed(dx, is_batched: bool):
        """One example's gradient as the entry's: as it is for a batched input, summed
        over the examples for one every example shares."""
        if isinstance(dx, Batched):
            return dx._tensor if is_batched else FUNCTIONS["sum"](dx._tensor, axis=0)
        if dx is not None and not is_batched:
            return dx * float(size)  # the same gradient from every example
        return dx

    under_f.__name__ = getattr(f, "__name__", "f")
    out = wrap(under_f)(*[x._tensor if b else x for x, b in zip(xs, batched)],
                        **{k: v._tensor if k in batched_keys else v for k, v in kwargs.items()})
    leaves, _ = _flatten(out)
    return leaves_of["rebuild"]([Batched(leaf) for leaf in leaves])


# ---------------------------------------------------------------------------------------
# Helpers for the rules of single entries (rules/shape_extra.py, rules/linalg.py, ...)
# ---------------------------------------------------------------------------------------
def example_params(op: Op, params: dict, rank: int) -> dict:
    """All of ``op``'s parameters, defaults filled in, with the axes normalised for one
    example of ``rank`` dimensions (``apply_batched`` normalises only the given ones)."""
    merged = {**dict(op.params), **params}
    return normalise_axes(op, rank, merged) if op.axis_params else merged


def example_axis(axis, rank: int):
    """An axis parameter the table does not normalise (``axis1``, ``source``, ...) as a
    non-negative axis of one example of ``rank`` dimensions; None when it is out of range
    or not an integer (the rule then lets the entry give its own error)."""
    try:
        axis = int(axis) if not isinstance(axis, (bool, np.bool_)) else None
    except (TypeError, ValueError):
        return None
    if axis is None or not -rank <= axis < rank:
        return None
    return axis % rank


def flat_examples(value) -> Tensor:
    """A batched input with each example flattened, (batch, size): for the entries whose
    axis=None means "of the flattened array" (cumsum, sort, argmax, repeat, roll, take)."""
    shape = np.shape(value._value)
    return reshaped(value, (shape[0], int(np.prod(shape[1:], dtype=np.int64))))

state.apply_batched = apply_batched  # (apply hands batched inputs here: see core.state)
