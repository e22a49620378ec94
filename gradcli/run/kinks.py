"""Kinks said out loud (issue 23, part 4): an operation evaluated where it is not
differentiable gets a note with a caret into the program and the convention its rule
uses there (the conventions of docs/python-api.md#conventions-at-a-glance).

``KinkNotes`` tests each operation a tape records (or a forward accumulator follows)
whose name is in ``KINKS``: its inputs (or its output) against the kink, keeping one note
per sub-expression. It is an engine observer only for a program that calls one of those
functions (``calls_a_kink``): any other run has no observer and costs nothing more. With
``--explain``, ``--graph`` or ``--debug-nans`` it reads the operations the engine's
``Recorder`` kept, after the run (``read``). ``watching`` installs the observer a
command-line run needs, if any.
"""
from __future__ import annotations

from contextlib import contextmanager
from itertools import compress, count

import numpy as np

from ..engine.core import state
from ..engine.core.observe import ROW, Observer, Recorder, observing
from ..errors import GradcliError


def _at(x, value) -> bool:
    if x.__class__ is np.float64 or x.__class__ is float:  # (the common case, quickly)
        return x == value
    return bool(np.any(np.asarray(x) == value))


def _tie(a, b) -> bool:
    """Whether some element of ``a`` equals its counterpart in ``b`` (broadcast)."""
    if (a.__class__ is np.float64 or a.__class__ is float) and (
            b.__class__ is np.float64 or b.__class__ is float):
        return a == b
    return bool(np.any(np.asarray(a) == np.asarray(b)))


def _tie_in_reduction(values, out, params) -> bool:
    """Whether the max (min) is reached by more than one element along the axis."""
    x = np.asarray(values[0])
    axis = params.get("axis")
    top = np.asarray(out)
    if axis is not None and not params.get("keepdims", False):
        top = np.expand_dims(top, axis)
    with np.errstate(invalid="ignore"):
        return bool(np.any(np.sum(x == top, axis=axis) > 1))


def _tie_in_sort(values, out, params) -> bool:
    ordered = np.asarray(out)
    return ordered.size > 1 and bool(np.any(np.diff(ordered, axis=params.get(
        "axis", -1) if ordered.ndim else None) == 0))


# name -> (test(input values, output value, params) -> bool, the convention said)
KINKS = {
    "abs": (lambda v, out, p: _at(v[0], 0),
            "abs is not differentiable at 0: its derivative there is taken as 0 "
            "(sign(0); PyTorch's and sympy's choice)"),
    "relu": (lambda v, out, p: _at(v[0], 0),
             "relu is not differentiable at 0: its derivative there is taken as 0"),
    "maximum": (lambda v, out, p: _tie(v[0], v[1]),
                "a tie in maximum: the gradient is split equally between the two inputs"),
    "minimum": (lambda v, out, p: _tie(v[0], v[1]),
                "a tie in minimum: the gradient is split equally between the two inputs"),
    "max": (_tie_in_reduction,
            "a tie in max: the gradient is split equally among the tied elements"),
    "min": (_tie_in_reduction,
            "a tie in min: the gradient is split equally among the tied elements"),
    "sort": (_tie_in_sort,
             "a tie in sort: each tied element gets the gradient of the place numpy's "
             "stable sort put it in"),
    "clip": (lambda v, out, p: _tie(v[0], v[1]) or _tie(v[0], v[2]),
             "clip at a bound: its derivative there is taken as 1 (the bounds are inside)"),
    "norm": (lambda v, out, p: _at(out, 0),
             "norm at the zero vector: its gradient there is taken as 0"),
    "sqrt": (lambda v, out, p: _at(v[0], 0),
             "sqrt is not differentiable at 0: its derivative there is inf"),
}


def calls_a_kink(model) -> bool:
    """Whether the program's steps run a function of ``KINKS`` (by any of its names: the
    built program knows the entries it runs, so this runs before every plain run in
    about a microsecond, where a search of a long program's text took 80)."""
    return not model.calls.isdisjoint(KINKS)


MAX_NOTES = 10  # then only counted: a loop of kinks is not a page of notes


class KinkNotes(Observer):
    """Collects notes: one per sub-expression evaluated at a kink (the first
    ``MAX_NOTES``, then a count: ``notes()``)."""

    def __init__(self, source: str):
        self.source = source
        self.said: list[str] = []
        self.seen: set = set()

    def notes(self) -> list[str]:
        more = len(self.seen) - len(self.said)
        return self.said + ([f"{more} more operations were differentiated at a kink"]
                            if more else [])

    def forward(self, row) -> None:
        self.check(*row, bool(state.forward))

    def read(self, recorder) -> None:
        """Test the operations an engine ``Recorder`` kept, after the run."""
        forward = recorder.accumulator is not None
        flat = recorder.operations
        ops = flat[::ROW]  # (each row's op: picked by it alone, in C; a run has many)
        kinky = {op for op in set(ops) if op.name in KINKS}
        for k in compress(count(), map(kinky.__contains__, ops)) if kinky else ():
            self.check(*flat[ROW * k:ROW * (k + 1)], forward)

    def check(self, op, out, inputs, where, forward: bool) -> None:
        """Test one operation, run on ``inputs`` for the tree node ``where`` (``forward``:
        in forward mode, where every operation is differentiated)."""
        kink = KINKS.get(op.name)
        if kink is None or (out._node is None and not forward):
            return  # (not differentiated: the convention does not matter)
        key = (op.name, id(where))
        if key in self.seen:
            return
        values = [getattr(x, "_value", x) for x in inputs]
        node = out._node
        params = node.params if node is not None and node.params else {}
        try:
            hit = kink[0](values, out._value, params)
        except (ValueError, TypeError):  # pragma: no cover - a shape the test cannot read
            return
        if hit:
            self.seen.add(key)
            if len(self.said) < MAX_NOTES:
                self.said.append(self._note(kink[1], where))

    def _note(self, convention: str, where) -> str:
        if where is None:
            return convention
        pos = where.pos
        caret = GradcliError(convention).at(self.source, pos.line, pos.col, pos.width)
        return caret.render().removeprefix("error: ")


@contextmanager
def watching(model, *, explain: bool = False, explain_all: bool = False,
             graph: bool = False, debug_nans: bool = False):
    """Watch one run of the built program ``model`` with as little as the options ask for;
    gives ``(kinks, recorder)``. --explain, --explain-all, --graph or --debug-nans: an
    engine ``Recorder`` (it keeps each gradient a rule gave for --graph and --debug-nans
    only, and with --explain alone only the adjoints of the nodes shown), whose
    operations the kink notes read after the run when the program calls a function with
    a kink; else a ``KinkNotes`` observer when it calls one (recorder None); else no
    observer at all."""
    kinks = KinkNotes(model.program.source)
    recorder = None
    if explain or explain_all or graph or debug_nans:
        from .explain import SHOWN
        recorder = Recorder(debug_nans, flows=graph or debug_nans,
                            ends=SHOWN if explain and not (explain_all or graph) else None)
    observer = recorder if recorder is not None else kinks if calls_a_kink(model) else None
    if observer is None:
        yield kinks, None
        return
    with observing(observer):
        yield kinks, recorder
    if recorder is not None and calls_a_kink(model):
        kinks.read(recorder)
