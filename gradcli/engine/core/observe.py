"""Watching a computation from inside: an observer sees every operation ``apply`` runs
(forward) and every gradient the backward pass computes (backward).

No observer is installed by default: ``apply`` then pays one test of an empty list per
operation, the backward pass one per call. An observer is installed for a ``with`` block
(``observing``); the innermost one is told. ``where`` is whatever the caller says is being
evaluated right now (the language's evaluator sets it to the tree node of the step it
runs, so that every recorded operation can point into the program's text); the engine
never reads it.

``debug_nans()`` is the observer that stops at the first non-finite value, as
``jax.config.update("jax_debug_nans", True)`` and ``tf.debugging.enable_check_numerics``:
it raises ``NonFiniteError`` (a ``FloatingPointError``) naming the operation, the pass and
the input values.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from . import state


class Observer:
    """The base observer: sees everything, does nothing. Subclasses override the hooks."""
    where = None  # set by the caller (the evaluator): what is being evaluated now

    def forward(self, op, out, inputs) -> None:
        """``op`` ran on ``inputs`` (tensors or plain values) and gave the tensor ``out``
        (``out._node``: its recorded node, None when no tape recorded it)."""

    def reached(self, node, g) -> None:
        """The backward pass takes ``node``, whose summed adjoint is ``g``."""

    def flowed(self, node, index: int, parent, g, gx) -> None:
        """``node``'s rule for input ``index`` turned the adjoint ``g`` into ``gx`` (summed
        to the input's shape), on its way to ``parent``."""


@contextmanager
def observing(observer: Observer):
    """Install ``observer`` for the block. What an observer keeps a reference to stays as
    it saw it: fast.py changes an array in place only when nobody else holds it."""
    state.observing.append(observer)
    try:
        yield observer
    finally:
        state.observing.remove(observer)


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
    - ``params``: the operation's static parameters.
    """

    def __init__(self, op: str, pass_: str, inputs, value, *, index=None, adjoint=None,
                 where=None, zeroed_by=None, params=None):
        self.op, self.pass_, self.inputs, self.value = op, pass_, inputs, value
        self.index, self.adjoint, self.where, self.zeroed_by = index, adjoint, where, zeroed_by
        self.params = params or {}
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

    def forward(self, op, out, inputs) -> None:
        node = out._node
        if node is not None:
            self.origins[id(node)] = (node, self.where, values_of(inputs))
        if not finite(out._value):
            raise NonFiniteError(op.name, "forward", values_of(inputs), out._value,
                                 where=self.where, params=getattr(node, "params", None))

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


class Both(Observer):
    """Two observers told everything, the first first (``where`` is set on both)."""

    def __init__(self, first: Observer, second: Observer):
        self.first, self.second = first, second

    @property
    def where(self):
        return self.first.where

    @where.setter
    def where(self, node) -> None:
        self.first.where = self.second.where = node

    def forward(self, op, out, inputs) -> None:
        self.first.forward(op, out, inputs)
        self.second.forward(op, out, inputs)

    def reached(self, node, g) -> None:
        self.first.reached(node, g)
        self.second.reached(node, g)

    def flowed(self, node, index, parent, g, gx) -> None:
        self.first.flowed(node, index, parent, g, gx)
        self.second.flowed(node, index, parent, g, gx)


class Recorder(DebugNans):
    """Keep what the computation did, for ``--explain`` and ``--graph``: every operation
    with its output tensor, inputs and ``where`` (``operations``), the nodes the backward
    pass took with the adjoint that reached each (``taken``), and each gradient a rule
    gave an input (``flows``: node, input index, parent node, gradient). With
    ``stop_at_nan`` it is also ``DebugNans``."""

    def __init__(self, stop_at_nan: bool = False):
        super().__init__()
        self.stop_at_nan = stop_at_nan
        self.operations: list[tuple] = []  # (op, out, inputs, where)
        self.taken: list[tuple] = []       # (node, adjoint)
        self.flows: list[tuple] = []       # (node, index, parent, gradient)

    def forward(self, op, out, inputs) -> None:
        self.operations.append((op, out, tuple(inputs), self.where))
        if self.stop_at_nan:
            super().forward(op, out, inputs)

    def reached(self, node, g) -> None:
        self.taken.append((node, _kept(g)))

    def flowed(self, node, index, parent, g, gx) -> None:
        self.flows.append((node, index, parent, _kept(gx)))
        if self.stop_at_nan:
            super().flowed(node, index, parent, g, gx)


def _kept(g):
    """A gradient's value (no copy: holding it keeps fast.py from writing into it, since
    its in-place tricks count the references first)."""
    return getattr(g, "_value", g)
