"""The language's own node types: what the parser produces and everything else reads.

Every node carries ``pos`` (line 1-based, col 0-based, width in characters) so that any
later stage (evaluation, shape errors, the sympy translation) can point a caret at it.
The tree never holds engine values or sympy objects.

Nodes are small immutable records built on ``Node`` rather than dataclasses: the command
line defines these classes at every start, and fifteen frozen dataclasses cost 8 ms of a
start-up budget of about 40. They behave alike: positional or keyword construction with
defaults, equality and hashing on the fields (``pos`` excluded), a readable repr, and
``node.fields`` (the field names other than ``pos``) for generic walks.
"""
from __future__ import annotations

from typing import Union


class Pos:
    """Where a node is: line (1-based), column (0-based) and width in characters."""
    __slots__ = ("line", "col", "width")

    def __init__(self, line: int, col: int, width: int = 1):
        self.line, self.col, self.width = line, col, width

    def __eq__(self, other):
        return isinstance(other, Pos) and (self.line, self.col, self.width) == (
            other.line, other.col, other.width)

    def __hash__(self):
        return hash((self.line, self.col, self.width))

    def __repr__(self) -> str:
        return f"Pos(line={self.line}, col={self.col}, width={self.width})"

    def __reduce__(self):
        return (Pos, (self.line, self.col, self.width))


NOWHERE = Pos(1, 0, 1)


class Node:
    """Base of the tree's records: ``_fields`` names the fields in order, ``_defaults``
    the optional ones; every node also has ``pos``, which is never compared."""
    __slots__ = ()
    _fields: tuple = ()
    _defaults: dict = {}

    def __init__(self, *args, **kwargs):
        fields = self._fields
        if len(args) > len(fields) + 1:
            raise TypeError(f"{type(self).__name__} takes at most {len(fields) + 1} values")
        values = dict(zip(fields + ("pos",), args))
        for key, value in kwargs.items():
            if key in values or (key not in fields and key != "pos"):
                raise TypeError(f"{type(self).__name__}: bad or repeated field {key!r}")
            values[key] = value
        setter = object.__setattr__
        for name in fields:
            if name in values:
                setter(self, name, values[name])
            elif name in self._defaults:
                setter(self, name, self._defaults[name])
            else:
                raise TypeError(f"{type(self).__name__} needs the field {name!r}")
        setter(self, "pos", values.get("pos", NOWHERE))

    @property
    def fields(self) -> tuple:
        return self._fields

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__,) + self._key())

    def __repr__(self) -> str:
        parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({parts})"

    def __reduce__(self):  # picklable: the sympy worker process receives trees
        return (_rebuild, (type(self), self._key(), self.pos))


def _rebuild(cls, values, pos):
    return cls(*values, pos=pos)


class Number(Node):
    """A numeric literal, already a Python float (never an unbounded int)."""
    __slots__ = ("value", "pos")
    _fields = ("value",)


class Str(Node):
    """A string literal: only einsum's subscripts, ``einsum("ij,jk->ik", a, b)``, which the
    parser turns into einsum's ``subscripts`` parameter."""
    __slots__ = ("value", "pos")
    _fields = ("value",)


class Name(Node):
    """A reference to a declared name or a constant (pi, e, inf)."""
    __slots__ = ("id", "pos")
    _fields = ("id",)


class Unary(Node):
    """``-x`` or ``+x``."""
    __slots__ = ("op", "operand", "pos")
    _fields = ("op", "operand")


class Binary(Node):
    """``+ - * / ** @`` (``^`` in the text is parsed as ``**``)."""
    __slots__ = ("op", "left", "right", "pos")
    _fields = ("op", "left", "right")


class Compare(Node):
    """One comparison ``< <= > >= == !=``: a non-differentiable boolean value."""
    __slots__ = ("op", "left", "right", "pos")
    _fields = ("op", "left", "right")


class Call(Node):
    """A call of a function of the table, by the name the user wrote (alias or not)."""
    __slots__ = ("func", "args", "kwargs", "pos")
    _fields = ("func", "args", "kwargs")
    _defaults = {"kwargs": ()}


class ArrayLit(Node):
    """``[a, b, ...]``: an array (elements may be expressions, stacked)."""
    __slots__ = ("elements", "pos")
    _fields = ("elements",)


class TupleLit(Node):
    """``(a, b)``: used for shapes and axes, e.g. ``ones((2, 3))``, ``sum(x, axis=(0, 1))``."""
    __slots__ = ("elements", "pos")
    _fields = ("elements",)


class Slice(Node):
    """``lower:upper:step`` inside an index; each part may be None."""
    __slots__ = ("lower", "upper", "step", "pos")
    _fields = ("lower", "upper", "step")


class Index(Node):
    """``value[i]``, ``value[1:3]``, ``value[:, 0]``: items are expressions or Slices."""
    __slots__ = ("value", "items", "pos")
    _fields = ("value", "items")


class Declare(Node):
    """``Variable(value, trainable=...)`` or ``constant(value)``, only as the right-hand
    side of an assignment. ``kind`` is "variable" or "constant"."""
    __slots__ = ("kind", "value", "trainable", "pos")
    _fields = ("kind", "value", "trainable")
    _defaults = {"trainable": True}


class Assign(Node):
    """``name = value``."""
    __slots__ = ("name", "value", "pos")
    _fields = ("name", "value")


class ExprStatement(Node):
    """A bare expression as a statement (its value is the target when it is last)."""
    __slots__ = ("value", "pos")
    _fields = ("value",)


Expr = Union[Number, Name, Unary, Binary, Compare, Call, ArrayLit, TupleLit, Index]
Statement = Union[Assign, ExprStatement]


class Program(Node):
    """A parsed program: its statements and the source text (for carets)."""
    __slots__ = ("statements", "source", "pos")
    _fields = ("statements", "source")
    _defaults = {"source": ""}
