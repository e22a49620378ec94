"""The language's own node types: what the parser produces and everything else reads.

Every node carries ``pos`` (line 1-based, col 0-based, width in characters) so that any
later stage (evaluation, shape errors, the sympy translation) can point a caret at it.
Nodes are plain frozen dataclasses; the tree never holds engine values or sympy objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True, slots=True)
class Pos:
    line: int
    col: int
    width: int = 1


NOWHERE = Pos(1, 0, 1)


@dataclass(frozen=True, slots=True)
class Number:
    """A numeric literal, already a Python float (never an unbounded int)."""
    value: float
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Name:
    """A reference to a declared name or a constant (pi, e, inf)."""
    id: str
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Unary:
    """``-x`` or ``+x``."""
    op: str
    operand: "Expr"
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Binary:
    """``+ - * / ** @`` (``^`` in the text is parsed as ``**``)."""
    op: str
    left: "Expr"
    right: "Expr"
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Compare:
    """One comparison ``< <= > >= == !=``: a non-differentiable boolean value."""
    op: str
    left: "Expr"
    right: "Expr"
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a function of the table, by the name the user wrote (alias or not)."""
    func: str
    args: tuple["Expr", ...]
    kwargs: tuple[tuple[str, "Expr"], ...] = ()
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class ArrayLit:
    """``[a, b, ...]``: an array (elements may be expressions, stacked)."""
    elements: tuple["Expr", ...]
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class TupleLit:
    """``(a, b)``: used for shapes and axes, e.g. ``ones((2, 3))``, ``sum(x, axis=(0, 1))``."""
    elements: tuple["Expr", ...]
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Slice:
    """``lower:upper:step`` inside an index; each part may be None."""
    lower: "Expr | None"
    upper: "Expr | None"
    step: "Expr | None"
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Index:
    """``value[i]``, ``value[1:3]``, ``value[:, 0]``: items are expressions or Slices."""
    value: "Expr"
    items: tuple["Expr | Slice", ...]
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Declare:
    """``Variable(value, trainable=..., name=...)`` or ``constant(value)``, only as the
    right-hand side of an assignment. ``kind`` is "variable" or "constant"."""
    kind: str
    value: "Expr"
    trainable: bool = True
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Assign:
    """``name = value``."""
    name: str
    value: "Expr | Declare"
    pos: Pos = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class ExprStatement:
    """A bare expression as a statement (its value is the target when it is last)."""
    value: "Expr"
    pos: Pos = field(default=NOWHERE, compare=False)


Expr = Union[Number, Name, Unary, Binary, Compare, Call, ArrayLit, TupleLit, Index]
Statement = Union[Assign, ExprStatement]


@dataclass(frozen=True, slots=True)
class Program:
    """A parsed program: its statements and the source text (for carets)."""
    statements: tuple[Statement, ...]
    source: str = ""
