"""Kinks said out loud (issue 23, part 4): an operation evaluated where it is not
differentiable gets a note with a caret into the program and the convention its rule
uses there (the conventions of docs/python-api.md#conventions-at-a-glance).

``KinkNotes`` is an engine observer: for each operation a tape records (or a forward
accumulator follows) whose name is in ``KINKS``, it tests the inputs (or the output)
against the kink and keeps one note per sub-expression.
"""
from __future__ import annotations

import numpy as np

from ..engine.core import state
from ..engine.core.observe import Observer
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

    def forward(self, op, out, inputs) -> None:
        kink = KINKS.get(op.name)
        if kink is None or (out._node is None and not state.forward):
            return  # (not differentiated: the convention does not matter)
        key = (op.name, id(self.where))
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
                self.said.append(self._note(kink[1]))

    def _note(self, convention: str) -> str:
        where = self.where
        if where is None:
            return convention
        pos = where.pos
        caret = GradcliError(convention).at(self.source, pos.line, pos.col, pos.width)
        return caret.render().removeprefix("error: ")
