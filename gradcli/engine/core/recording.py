"""Running a table entry (``apply``), recording it on the tapes, and publishing the
table's entries as Python functions.

The table itself is filled by the rule modules (``gradcli.engine.rules``); this module only
reads the registry (``table.REGISTRY``), so it imports no rule. It keeps three views of
the registered entries, made by ``publish()`` after each rule module registers:

- ``NP``: each entry's raw numpy forward, the namespace rules compute in on the fast path;
- ``ENGINE``: each entry's differentiable function, the namespace rules compute in when an
  outer tape records, so one rule gives first derivatives quickly and higher ones exactly;
- ``FUNCTIONS``: the same functions by name (and alias), what ``gradcli.NAME`` is.
"""
from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np

from ...errors import ArgumentError, ShapeError
from .. import fast
from . import state
from .table import (
    AFTER_LOADING,
    INTERNAL,
    ORDER,
    PENDING,
    REGISTRY,
    LazyTable,
    Op,
    load_defining,
    normalise_axes,
)
from .tensor import Batched, Node, NotBatchable, Shape, Tensor, Variable, as_value

EMPTY: dict = {}
_recording = state.recording
_forward = state.forward  # active forward accumulators (empty: forward mode is off)
_observing = state.observing  # observers (core/observe.py; empty: nobody is watching)
_batching = state.batching  # the vectorized_map calls running batched (empty: none)
_new_tensor = object.__new__
_sequence = itertools.count(1)  # recording order: the backward pass's topological order

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf}

# An input a rule does not read is kept by its node as its Shape only when it has more
# elements than this (small values cost nothing to keep; large ones are what is freed).
SHAPE_ONLY_ABOVE = 64




# ---------------------------------------------------------------------------------------
# Running an entry
# ---------------------------------------------------------------------------------------
def apply(op: Op, inputs, params=EMPTY, frames: int = 0) -> Tensor:
    """Run a table entry on tensors or array-likes and, when a tape traces one of the
    inputs, record it. For variadic entries ``inputs`` is the sequence of tensors.
    ``frames``: how many Python frames lie between the user's expression and this call
    (1 for the operators), for the temporary-reuse check of ``fast.reusable_buffer``."""
    if _batching:  # inside vectorized_map: a batched input goes to the entry's batching
        for x in inputs:  # rule at once (raising NotBatchable below costs ~2 us an entry)
            if x.__class__ is Batched:
                return state.apply_batched(op, inputs, params)
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
        # entry's batching rule runs, off the path plain tensors take (batching.py, which
        # makes every batched value, set state.apply_batched).
        return state.apply_batched(op, inputs, params)
    buffer = None if op.reuse is None else fast.reusable_buffer(inputs, values, frames,
                                                                _recording)
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
    out = _new_tensor(Tensor)  # make_tensor, inlined: this is the hottest path
    out._value = ans
    out._node = None
    if _recording:
        _record(op, out, inputs, values, params)
    if _forward:
        _propagate(op, out, inputs, values, params)
    if _observing:  # (one row, one call: a Recorder's hook is its list's extend, in C)
        observer = _observing[-1]
        observer.forward((op, out, inputs, observer.where))
    return out


class _HoldsTensors(Exception):
    """Raised by _sequence_value: an input is a list or tuple holding tensors."""


def holds_tensor(x) -> bool:
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
    if holds_tensor(x):
        raise _HoldsTensors
    return as_value(x)


def _packed(x):
    """A list or tuple holding tensors as one stacked tensor; anything else unchanged."""
    if (x.__class__ is not list and x.__class__ is not tuple) or not holds_tensor(x):
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
            return apply(op, tuple(xs), bind(op, names, defaults, args, kwargs))
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
            return apply(op, args[:n_inputs], bind(op, names, defaults, args[n_inputs:], kwargs))
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = f"{op.doc}\n\nDerivative: {op.derivative or 'none'}. Domain: {op.domain}."
    return fn if op.api is None else op.api(op, fn)


def bind(op, names, defaults, args, kwargs) -> dict:
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
                (value.__class__ is tuple or value.__class__ is list) and holds_tensor(value)):
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


class _Namespace(SimpleNamespace):
    """``NP`` and ``ENGINE``: a name not there yet (an entry loaded on demand) loads the
    pending entries first; a name there costs nothing more (``__getattr__`` runs only on
    a miss)."""

    def __getattr__(self, name: str):
        if PENDING and not name.startswith("__"):
            load_defining(name)
            if name in self.__dict__:
                return self.__dict__[name]
        raise AttributeError(f"no table function {name!r}")


NP = _Namespace()
FUNCTIONS: dict = LazyTable()
ENGINE = _Namespace()
_PUBLISHED: dict = {}  # name -> the entry NP, FUNCTIONS and ENGINE were made from


def publish() -> None:
    """NP (each entry's raw forward), FUNCTIONS and ENGINE (its public function) for every
    entry registered since the last call (an internal entry registered again, as the
    shape rules' cast, replaces the earlier one); then the aliases. The rule modules call
    it once they have registered their entries."""
    entries = {name: dict.__getitem__(REGISTRY, name) for name in list.__iter__(ORDER)}
    entries.update(dict.items(INTERNAL))
    fresh = {}
    for name, op in entries.items():
        if _PUBLISHED.get(name) is not op:
            _PUBLISHED[name] = op
            setattr(NP, name, op.forward)
            fresh[name] = _function(op)
    dict.update(FUNCTIONS, fresh)
    for name, fn in fresh.items():
        setattr(ENGINE, name, fn)
    for op in dict.values(REGISTRY):
        for alias in op.aliases:
            dict.setdefault(FUNCTIONS, alias, dict.__getitem__(FUNCTIONS, op.name))


def _propagate(op, out, inputs, values, params) -> None:
    """Forward mode's bookkeeping, while an accumulator is active: the accumulator's
    module (forward.py, imported with it) set ``state.propagate``."""
    state.propagate(op, out, inputs, values, params)


AFTER_LOADING.append(publish)  # (entries registered on demand become functions at once)
