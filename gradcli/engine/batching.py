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

import warnings
from typing import Any, Callable

import numpy as np

from ..errors import ShapeError
from .ops import FUNCTIONS, INTERNAL, REGISTRY, apply
from .table import Op, normalise_axes
from .tensor import Batched, NotBatchable, Tensor, constant

__all__ = ["vectorized_map", "Batched", "NotBatchable", "apply_batched", "RULES"]


# ---------------------------------------------------------------------------------------
# Running an entry on batched inputs
# ---------------------------------------------------------------------------------------
def apply_batched(op: Op, inputs, params) -> Batched:
    """Run ``op`` on inputs of which some are ``Batched`` (``ops.apply`` comes here when
    one is): its batching rule, on the underlying tensors."""
    # A list or tuple holding batched values is packed first, as ops.apply packs one
    # holding tensors (a variadic entry's inputs are its sequence of tensors).
    items = [_pack(x) for x in inputs]
    batched = [x.__class__ is Batched for x in items]
    if not any(batched):
        raise NotBatchable("a value was read as a plain value inside vectorized_map")
    values = [x._tensor if b else x for x, b in zip(items, batched)]
    _batch_size(values, batched, op.name)
    if params and op.axis_params:
        first = items[0]
        params = normalise_axes(op, first.ndim if first.__class__ is Batched
                                else np.ndim(first), params)
    rule = op.batch if callable(op.batch) else RULES[op.batch]
    return Batched(rule(op, values, batched, dict(params)))


def _pack(x):
    if x.__class__ is list or x.__class__ is tuple:
        return FUNCTIONS["stack"]([_pack(item) for item in x], axis=0)
    return x


def _batch_size(values, batched, name: str) -> int:
    sizes = {np.shape(v._value)[0] for v, b in zip(values, batched) if b}
    if len(sizes) > 1:
        raise ShapeError(f"{name}: batched inputs of different batch sizes {sorted(sizes)}")
    return sizes.pop()


def example_ndim(value, is_batched: bool) -> int:
    """The rank of one example of an input (a batched input loses its batch axis)."""
    return np.ndim(value._value if isinstance(value, Tensor) else value) - is_batched


def example_shape(value, is_batched: bool) -> tuple:
    shape = np.shape(value._value if isinstance(value, Tensor) else value)
    return shape[1:] if is_batched else shape


def with_batch(value, size: int) -> Tensor:
    """An unbatched input made batched: the same example ``size`` times (a recorded
    broadcast, so the gradient sums over the batch)."""
    shape = np.shape(value._value if isinstance(value, Tensor) else value)
    return apply(INTERNAL["broadcast_to"], (value,), {"shape": (size, *shape)})


def lift(value, rank: int) -> Tensor:
    """A batched input with unit axes after the batch axis, so that one example has
    ``rank`` dimensions (right-aligned broadcasting then pairs the examples' axes)."""
    shape = np.shape(value._value)
    missing = rank - (len(shape) - 1)
    if missing <= 0:
        return value
    return apply(REGISTRY["reshape"], (value,),
                 {"shape": (shape[0], *(1,) * missing, *shape[1:])})


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
    rank = max(example_ndim(v, b) for v, b in zip(values, batched))
    values = [lift(v, rank) if b else v for v, b in zip(values, batched)]
    return apply(op, values, params or {})


def axis(op: Op, values, batched, params) -> Tensor:
    """Entries whose axis parameters index one example: they move up by one, and an axis
    of None (the whole example) becomes every axis but the batch's. Other inputs than
    the first are batched like it (made batched when they are not)."""
    size = _batch_size(values, batched, op.name)
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
    size = _batch_size(values, batched, op.name)
    getitem = INTERNAL["getitem"]
    results = []
    for i in range(size):
        example = [apply(getitem, (v,), {"index": (i,)}) if b else v
                   for v, b in zip(values, batched)]
        results.append(apply(op, example, params or {}))
    return apply(REGISTRY["stack"], results, {"axis": 0})


def no_inputs(op: Op, values, batched, params) -> Tensor:  # pragma: no cover
    """Constructors take no tensor input, so nothing of theirs is ever batched."""
    raise RuntimeError(f"{op.name} has no tensor input to batch")


#: The rules named by ``Op.batch``.
RULES: dict[str, Callable[..., Any]] = {"elementwise": elementwise, "axis": axis,
                                        "loop": loop, "no_inputs": no_inputs}


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

    >>> import gradcli as gc, numpy as np
    >>> gc.vectorized_map(lambda x: x[0] * x[1], np.array([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([ 2., 12.])
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
    if any(x.__class__ is Batched for x in tensors):
        # A map inside a map: the inner one runs as a loop (its indexing and stacking
        # are batched by the outer map).
        return _loop(fn, tensors, rebuild, size)
    try:
        out = fn(rebuild([Batched(t) for t in tensors]))
    except NotBatchable:
        if not fallback_to_while_loop:
            raise ValueError("vectorized_map: fn reads a batched value as a plain value "
                             "(data-dependent Python code) and fallback_to_while_loop is "
                             "False") from None
        warnings.warn("vectorized_map: fn reads a batched value as a plain value "
                      "(data-dependent Python code); running it once per example instead",
                      RuntimeWarning, stacklevel=2)
        return _loop(fn, tensors, rebuild, size)
    results, rebuild_out = _flatten(out)
    return rebuild_out([_unbatched(r, size) for r in results])


def _leading(x) -> int:
    shape = x.shape
    if not shape:
        raise ValueError("vectorized_map: every element needs an axis 0 to map over "
                         "(got a scalar)")
    return shape[0]


def _unbatched(result, size: int):
    """An output of fn as a tensor with the batch on axis 0 (an output that does not
    depend on the batch is repeated, as TensorFlow tiles it)."""
    if result.__class__ is Batched:
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


def _flatten(nest):
    """The leaves of a nest of lists, tuples and dicts, and the function that rebuilds
    the nest from new leaves."""
    if isinstance(nest, (list, tuple)):
        parts = [_flatten(x) for x in nest]
        counts = [len(p[0]) for p in parts]
        kind = type(nest)

        def rebuild(leaves):
            out, i = [], 0
            for (_, again), n in zip(parts, counts):
                out.append(again(leaves[i:i + n]))
                i += n
            return kind(out) if kind in (list, tuple) else kind(*out)
        return [leaf for p in parts for leaf in p[0]], rebuild
    if isinstance(nest, dict):
        keys = list(nest)
        leaves, again = _flatten([nest[k] for k in keys])
        return leaves, lambda new: dict(zip(keys, again(new)))
    return [nest], lambda leaves: leaves[0]


def _install() -> None:
    """Batched values take the operators and methods of tensors: each goes through
    ``ops.apply`` (so to the batching rules), except what reads a value."""
    own = set(Batched.__dict__) | {"__init__", "__slots__", "__dict__", "__weakref__",
                                   "__module__", "__doc__", "_value", "_node", "__index__",
                                   "__array_function__"}
    for name, member in Tensor.__dict__.items():
        if name not in own:
            setattr(Batched, name, member)
    Batched.__array_function__ = _array_function


def _array_function(self, func, types, args, kwargs):
    """numpy's functions on a batched value: its shape functions read one example; a
    table entry of the name runs batched; anything else cannot be batched."""
    name = func.__name__
    if name in ("shape", "ndim", "size") and len(args) == 1 and not kwargs:
        return getattr(self, name)
    op = REGISTRY.get(name)
    if op is not None and op.kind != "constructor":
        return FUNCTIONS[name](*args, **kwargs)
    raise NotBatchable(f"numpy's {name} has no batching rule")


_install()


# ---------------------------------------------------------------------------------------
# Helpers for the rules of single entries (more_ops.py, linalg.py)
# ---------------------------------------------------------------------------------------
def batch_size(op: Op, values, batched) -> int:
    """The number of examples of an entry's batched inputs."""
    return _batch_size(values, batched, op.name)


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


def reshaped(value, shape) -> Tensor:
    """``value`` reshaped (a recorded reshape)."""
    return apply(REGISTRY["reshape"], (value,), {"shape": tuple(int(n) for n in shape)})


def flat_examples(value) -> Tensor:
    """A batched input with each example flattened, (batch, size): for the entries whose
    axis=None means "of the flattened array" (cumsum, sort, argmax, repeat, roll, take)."""
    shape = np.shape(value._value)
    return reshaped(value, (shape[0], int(np.prod(shape[1:], dtype=np.int64))))


def lift_batched(values, batched) -> list:
    """The batched inputs lifted (``lift``) to the largest example rank of all inputs, for
    entries that broadcast examples against each other (solve, cross): an unbatched
    input then pairs with every example by right-aligned broadcasting as it is."""
    rank = max(example_ndim(v, b) for v, b in zip(values, batched))
    return [lift(v, rank) if b else v for v, b in zip(values, batched)]
