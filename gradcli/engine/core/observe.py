"""Watching a computation from inside: an observer sees every operation ``apply`` runs
(forward) and every gradient the backward pass computes (backward).

No observer is installed by default: ``apply`` then pays one test of an empty list per
operation, the backward pass one per call. An observer is installed for a ``with`` block
(``observing``); the innermost one is told. ``where`` is whatever the caller says is being
evaluated right now (the language's evaluator sets it to the tree node of the step it
runs, so that every recorded operation can point into the program's text); the engine
only hands it back, in each operation's row.

``forward`` and ``reached`` take one argument each (a row, a pair), so that an observer
that only keeps them can be a list's ``extend``: a call in C, where a Python method costs
about as much as a scalar operation (``Recorder``).

``debug_nans()`` is the observer that stops at the first non-finite value, as
``jax.config.update("jax_debug_nans", True)`` and ``tf.debugging.enable_check_numerics``:
it raises ``NonFiniteError`` (a ``FloatingPointError``) naming the operation, the pass and
the input values.
"""
from __future__ import annotations

from contextlib import contextmanager
from operator import attrgetter

import numpy as np

from . import state


class Observer:
    """The base observer: sees every operation, does nothing. Subclasses override the hooks:

    - ``forward(row)``: ``row`` is ``(op, out, inputs, where)``: ``op`` ran on ``inputs``
      (tensors or plain values) and gave the tensor ``out`` (``out._node``: its recorded
      node, None when no tape recorded it), while the caller was evaluating ``where``;
    - ``reached((node, g))``: the backward pass takes ``node``, whose summed adjoint is
      ``g``; read once a pass (it may be a property that chooses);
    - ``flowed(node, index, parent, g, gx)``: ``node``'s rule for input ``index`` turned
      the adjoint ``g`` into ``gx`` (summed to the input's shape), on its way to ``parent``;
    - ``accumulating(accumulator)``: a ``ForwardAccumulator``'s block starts (forward mode).

    The backward hooks are None for an observer that does not watch them: the backward
    pass then calls nothing (each call costs about as much as a scalar operation's rule).
    """
    where = None  # set by the caller (the evaluator): what is being evaluated now
    alone = True  # after its block: whether no other observer was installed inside it
    reached = None
    flowed = None

    def forward(self, row) -> None:
        """See the class."""

    def accumulating(self, accumulator) -> None:
        """See the class."""


@contextmanager
def observing(observer: Observer):
    """Install ``observer`` for the block. What an observer keeps a reference to stays as
    it saw it: fast.py changes an array in place only when nobody else holds it. After the
    block, ``observer.alone`` says whether it saw every operation run in it (no other
    observer was installed inside it)."""
    global _installed
    _installed += 1
    mine = _installed
    state.observing.append(observer)
    try:
        yield observer
    finally:
        state.observing.remove(observer)
        observer.alone = _installed == mine


_installed = 0  # observers installed so far (``observing``)


def values_of(inputs) -> list:
    """The input values of an operation, as numpy values (what ``apply`` computed on)."""
    out = []
    for x in inputs:
        value = getattr(x, "_value", x)
        out.append(value)
    return out


def finite(value) -> bool:
    """Whether every element of ``value`` is finite (non-numeric values count as finite)."""
    try:
        arr = np.asarray(value)
    except Exception:  # pragma: no cover - an object numpy cannot read
        return True
    if arr.dtype.kind not in "fc":
        return True
    with np.errstate(all="ignore"):
        return bool(np.isfinite(arr).all())


class NonFiniteError(FloatingPointError):
    """The first non-finite value ``debug_nans`` met.

    - ``op``: the operation's name; ``pass_``: "forward" or "backward";
    - ``inputs``: the operation's input values; ``value``: the non-finite value (the
      operation's output in the forward pass, the input's gradient in the backward);
    - ``index``: in the backward pass, which input's gradient is non-finite;
      ``adjoint``: the adjoint that reached the operation;
    - ``where``: what the caller was evaluating when the operation ran (the evaluator:
      the tree node, for a caret); ``zeroed_by``: in the backward pass, where the adjoint
      that reached the operation was zeroed by a ``where`` (its ``where``), else None;
    - ``params``: the operation's static parameters; ``seen``: in the forward pass, the
      last value computed for each ``where`` so far (``id(where) -> (where, value)``: a
      ``where``'s condition, for one whose untaken branch holds the operation).
    """

    def __init__(self, op: str, pass_: str, inputs, value, *, index=None, adjoint=None,
                 where=None, zeroed_by=None, params=None, seen=None):
        self.op, self.pass_, self.inputs, self.value = op, pass_, inputs, value
        self.index, self.adjoint, self.where, self.zeroed_by = index, adjoint, where, zeroed_by
        self.params, self.seen = params or {}, seen or {}
        kind = "nan" if np.isnan(np.asarray(value)).any() else "inf"
        what = (f"{op} gave {kind}" if pass_ == "forward"
                else f"the gradient of {op} for its input {_input_name(op, index)} "
                     f"became {kind}")
        super().__init__(f"{what} in the {pass_} pass")


class DebugNans(Observer):
    """Raise ``NonFiniteError`` at the first operation whose value (forward) or whose
    input's gradient (backward) holds a nan or an inf."""

    def __init__(self):
        self.origins: dict[int, tuple] = {}  # id(node) -> (node, where, op, params)
        self.zeroed: dict[int, object] = {}  # id(node) -> where of the `where` that zeroed it
        self.seen: dict[int, tuple] = {}  # id(where) -> (where, the last value computed there)

    def forward(self, row) -> None:
        op, out, inputs, where = row
        node = out._node
        if node is not None:
            self.origins[id(node)] = (node, where, values_of(inputs))
        if not finite(out._value):
            raise NonFiniteError(op.name, "forward", values_of(inputs), out._value,
                                 where=where, params=getattr(node, "params", None),
                                 seen=self.seen)
        self.seen[id(where)] = (where, out._value)

    def flowed(self, node, index, parent, g, gx) -> None:
        if finite(gx):
            if node.op.name == "where" and parent is not None and _has_zero(gx):
                origin = self.origins.get(id(node))
                self.zeroed[id(parent)] = origin[1] if origin else None
            return
        origin = self.origins.get(id(node))
        raise NonFiniteError(node.op.name, "backward", origin[2] if origin else node.values,
                             gx, index=index, adjoint=g,
                             where=origin[1] if origin else None,
                             zeroed_by=self.zeroed.get(id(node)), params=node.params)


def _input_name(op: str, index: int) -> str:
    """The table's name of input ``index`` of ``op`` (as `gradcli functions` shows it)."""
    from .table import REGISTRY
    entry = REGISTRY.get(op)
    names = entry.inputs if entry is not None else ()
    return names[index] if index is not None and index < len(names) else str(index)


def _has_zero(value) -> bool:
    return bool((np.asarray(value) == 0).any())


@contextmanager
def debug_nans():
    """Stop at the first nan or inf, forward or backward, with a ``FloatingPointError``
    (``NonFiniteError``) that names the operation:

    >>> import gradcli as gc
    >>> x = gc.constant(0.0)
    >>> with gc.debug_nans(), gc.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = gc.sqrt(x)
    ...     tape.gradient(y, x)
    Traceback (most recent call last):
    ...
    gradcli.engine.core.observe.NonFiniteError: the gradient of sqrt for its input x \
became inf in the backward pass
    """
    # (numpy's warnings are off in the block: the first non-finite value is an error)
    with np.errstate(all="ignore"), observing(DebugNans()) as observer:
        yield observer


_accumulating = state.forward  # the active forward accumulators, outermost first


class Recorder(DebugNans):
    """Keep what the computation did, for ``--explain`` and ``--graph``: every operation's
    row ``(op, out, inputs, where)`` (``operations``), the nodes the backward pass took
    with the adjoint that reached each (``taken``), and with ``flows`` each gradient a
    rule gave an input (``flows``: node, input index, parent node, gradient). With
    ``stop_at_nan`` it is also ``DebugNans``. In forward mode, ``accumulator`` is the
    outermost ``ForwardAccumulator`` (its ``jvp`` reads each operation's tangent after
    the run), else None.

    It only keeps references, and flat: ``operations`` holds each row's four entries one
    after the other (``rows()``: as tuples), ``taken`` each node and its adjoint. Its
    hooks are then its lists' ``extend`` (C calls), and a run keeps no tuple per
    operation: on a long run of scalars, what is kept costs more than the calls (memory
    the run cannot reuse, passes after it over objects cold in the caches). What the
    references mean (texts, spans, ids) is worked out after the run, for the nodes shown
    (run/explain.py).

    Two cases take a Python hook. With ``stop_at_nan`` each row is also checked. With
    ``ends``, on a run with arrays, only the adjoints of the first and the last ``ends``
    nodes taken are kept (the others are None): an adjoint kept is an array the backward
    pass cannot reuse, which cost --explain more than the rest of its recording together
    (a fresh array per node, on arrays of 1,000); scalars are kept, costing nothing."""

    def __init__(self, stop_at_nan: bool = False, flows: bool = True,
                 ends: int | None = None):
        super().__init__()
        self.stop_at_nan, self.keep_flows, self.ends = stop_at_nan, flows, ends
        self.operations: list = []    # op, out, inputs, where, op, out, ... (ROW a row)
        self.taken: list = []         # node, the adjoint that reached it, node, ... in order
        self.flows: list[tuple] = []  # (node, index, parent, gradient)
        self.accumulator = None
        self.passes = 0  # backward passes taken (``reached`` is read once at each start)
        if not stop_at_nan:
            self.forward = self.operations.extend
        if not (flows or stop_at_nan):
            self.flowed = None  # (the backward pass then makes no call per gradient)

    def rows(self) -> list[tuple]:
        """Every operation's row ``(op, out, inputs, where)``, in the order run."""
        ops = self.operations
        return list(zip(*(ops[i::ROW] for i in range(ROW))))

    def forward(self, row) -> None:  # (with stop_at_nan; else the list's extend)
        self.operations.extend(row)
        DebugNans.forward(self, row)

    @property
    def reached(self):
        """The backward pass's hook, chosen once a pass: the list's extend, or with
        ``ends`` on a run with arrays the hook that lets the middle adjoints go."""
        self.passes += 1
        if self.ends is None or not _holds_arrays(self.operations):
            return self.taken.extend
        return self._reached_keeping_ends

    def _reached_keeping_ends(self, pair) -> None:
        # (no copy: holding a gradient keeps fast.py from writing into it, since its
        # in-place tricks count the references first)
        taken = self.taken
        taken.extend(pair)
        if len(taken) > 4 * self.ends:  # (two entries a node) one leaves the last kept
            taken[-2 * self.ends - 1] = None

    def flowed(self, node, index, parent, g, gx) -> None:
        if self.keep_flows:
            self.flows.append((node, index, parent, getattr(gx, "_value", gx)))
        if self.stop_at_nan:
            DebugNans.flowed(self, node, index, parent, g, gx)

    def accumulating(self, accumulator) -> None:
        if self.accumulator is None:  # (an inner one's tangents are the outermost's too)
            self.accumulator = _accumulating[0]


ROW = 4  # entries a row in Recorder.operations: op, out, inputs, where


def _holds_arrays(operations: list) -> bool:
    """Whether the run computes on arrays, judged from about 32 of its operations spread
    over it and its last (a pass over all of a long run's rows, cold in the caches, costs
    more than its recording): an array operation rarer than that only keeps its adjoint."""
    step = ROW * (len(operations) // ROW // 32 or 1)
    # (the last row's out too; a slice touches what it holds: only a sample is taken)
    outs = operations[1::step] + operations[1 - ROW::ROW]
    return np.ndarray in map(type, map(attrgetter("_value"), outs))
