"""The symbolic cross-check: program tree -> sympy -> exact derivative at the point.

The program is translated node by node from the parsed tree (never from text: nothing the
user typed reaches ``sympify``, ``parse_expr``, ``lambdify`` or ``eval``), with the sympy
builder of each function-table entry (``Op.sympy``). Values are numpy object arrays of
sympy expressions, so numpy's own broadcasting, indexing and reshaping apply unchanged.

Inputs become element symbols declared ``real=True``: a scalar ``w1`` is
``Symbol('w1', real=True)``, an array ``x`` of shape (2, 3) is an object array of symbols
``x[0,0] ... x[1,2]``. Every declared name is an input: ``--var``, ``--frozen``, ``--arg``
and ``Variable(...)``/``constant(...)`` in the program (its value comes from ``point``;
when absent, its value expression is evaluated at the point). Which of them are
differentiated is decided by ``wrt`` alone, so constants and frozen variables are simply
symbols that get substituted.

The target (the last statement, or ``target``) is summed over its elements when it is not
a scalar, as TensorFlow does, differentiated with ``sympy.diff`` for each element symbol
of each ``wrt`` name, substituted at the point and evaluated to float64.

Intermediate sources (``--wrt h`` where ``h = x * 2`` is an assignment): the tape gives
the total derivative of the target with respect to ``h`` taken as an independent input.
The translation reproduces that by cutting ``h`` out: its (last) assignment binds ``h`` to
fresh symbols whose values are ``x * 2`` at the point, and everything downstream uses
those symbols. Each intermediate source gets a translation of its own, so that with
``--wrt h1,h2`` (``h2`` computed from ``h1``) the derivative for ``h1`` still flows through
``h2``, as on the tape. ``stop_gradient(v)`` becomes the value of ``v`` at the point (a
number), so nothing flows through it.

Kinks and other non-differentiable points (``kind`` per element): the point sits on a kink
or a discontinuity of the target for an element symbol ``s`` when, at the point, a
Heaviside, sign or DiracDelta argument that depends on ``s`` is 0, a Max/Min has a tie
involving ``s``, a floor/ceiling argument depending on ``s`` is an integer, a Piecewise
condition on ``s`` is at its boundary, or an Abs argument depending on ``s`` is 0 (Abs is
looked for in the target, the others in the target and its derivative). A step in the
target (Heaviside, sign, floor, ceiling, a Piecewise whose pieces differ at the boundary)
is a ``discontinuity``; a step in the derivative only, Abs and Max/Min are a ``kink``.
The point is a ``singularity`` when the target itself is undefined there (sympy gives
nan or zoo: ``1/x`` or ``atan2(x, 0)`` at 0, an infinite intermediate), or when the
derivative is infinite (``zoo``, ``oo``: ``sqrt(x)`` at 0). A derivative that is a finite
number beyond float64 (``exp(x)`` at 710) is an ``overflow``, not a kink. sympy's
conventions give ``Heaviside(0) = 1/2``, ``sign(0) = 0`` and an unevaluated
``DiracDelta(0)``; :mod:`gradcli.check.compare` decides what all this means for the
verdict.

Safety: the sympy work runs in a worker process (``fork`` on Linux) that is killed at the
time limit, so a slow ``diff`` can never hang the caller; sympy's RecursionError on deep
expressions and any other sympy exception become a "skipped" result with the reason.
Expressions nested deeper than ``max_depth`` are refused before sympy recurses into them
(a 100-deep ``sin(sin(...))`` makes sympy's diff die with RecursionError depending on how
deep the caller's stack already is; refusing by depth makes the outcome the same
everywhere). sympy is imported only inside this path.

Example::

    >>> from gradcli.lang.tree import Binary, Name, Program, ExprStatement
    >>> seed = Program((ExprStatement(Binary("+", Binary("*", Name("w1"), Name("x1")),
    ...                                             Binary("*", Name("w2"), Name("x2")))),))
    >>> point = {"w1": 2.0, "w2": 3.0, "x1": 5.0, "x2": 7.0}
    >>> res = symbolic_gradients(seed, point, ["w1", "w2"])
    >>> float(res["w1"].value), float(res["w2"].value)
    (5.0, 7.0)
"""
from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lang.tree import (
    ArrayLit,
    Assign,
    Binary,
    Call,
    Compare,
    Declare,
    ExprStatement,
    Node,
    Index,
    Name,
    Number,
    Program,
    Str,
    Slice,
    TupleLit,
    Unary,
)

# Total element symbols (all inputs together) beyond which sympy is not attempted.
DEFAULT_MAX_ELEMENTS = 256
# Any single intermediate array beyond this many elements is refused (object arrays of
# sympy expressions are slow and large).
DEFAULT_MAX_INTERMEDIATE = 10_000
# Nesting depth of the target's sympy expression beyond which sympy's recursive
# algorithms are not trusted (see the module docstring).
DEFAULT_MAX_DEPTH = 80
# Seconds of sympy work before the worker is killed.
DEFAULT_TIMEOUT = 5.0
# Longest derivative text kept for --symbolic (per gradient).
MAX_TEXT = 4000
# Python frames the worker may use beyond where it starts (its recursion budget).
_RECURSION_BUDGET = 1000

_COMPARE = {"<": "Lt", "<=": "Le", ">": "Gt", ">=": "Ge", "==": "Eq", "!=": "Ne"}
_CONSTANTS = {"pi": "pi", "e": "E", "inf": "oo"}


class SymbolicSkip(Exception):
    """Raised inside the translation when sympy cannot be used; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class SymbolicGradient:
    """sympy's gradient for one source.

    - ``value``: float64 array shaped like the source (0-d for a scalar); ``nan`` where
      sympy gives no real number (complex, unevaluated), ``inf`` for ``oo``/``zoo``.
      ``None`` when the whole gradient was skipped.
    - ``kink``: bool array shaped like ``value``: the point is on a kink for that element
      (or the derivative is infinite there).
    - ``note``: what the kinks or missing values are, in words (or None).
    - ``skipped``: why there is no symbolic result at all (too large, too deep, timeout...).
    - ``text``: sympy's str of the derivative (when asked for), element symbols unevaluated.
    - ``kind``: object array of str shaped like ``value``: "" or what lies at the point
      for that element: "kink", "discontinuity", "singularity" (the target undefined at
      the point, or an infinite derivative) or "overflow" (a finite derivative beyond
      float64's range, ``exp(x)`` at 710; not a kink).
    """
    name: str
    value: np.ndarray | None = None
    kink: np.ndarray | None = None
    note: str | None = None
    skipped: str | None = None
    text: str | None = None
    kind: np.ndarray | None = None


@dataclass
class SymbolicProgram:
    """A translated program (what :func:`to_sympy` returns).

    ``target`` is an object array of sympy expressions (None when ``skipped``), ``sources``
    maps each input or cut-out intermediate name to its object array of symbols, ``values``
    maps every symbol to its sympy number at the point.
    """
    target: np.ndarray | None
    sources: dict[str, np.ndarray]
    values: dict
    skipped: str | None = None


# ---------------------------------------------------------------------------------------
# Walking the tree without sympy (for the checks done before any sympy work)
# ---------------------------------------------------------------------------------------
def _walk(root) -> list:
    """Every node under ``root`` (iteratively: trees can be deep)."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif isinstance(node, Node):
            out.append(node)
            stack.extend(getattr(node, name) for name in node.fields)
    return out


def computed_names(program: Program) -> set[str]:
    """Names whose last assignment is a computed value (not a declaration): as tape
    sources they mean that value, not an input of the same name."""
    last: dict[str, bool] = {}
    for st in program.statements:
        if isinstance(st, Assign):
            last[st.name] = not isinstance(st.value, Declare)
    return {name for name, computed in last.items() if computed}


def input_elements(program: Program, point: Mapping[str, Any], wrt: Sequence[str]) -> int:
    """How many element symbols the translation needs (known before importing sympy)."""
    used = {n.id for n in _walk(program.statements) if isinstance(n, Name)}
    used |= {st.name for st in program.statements
             if isinstance(st, Assign) and isinstance(st.value, Declare)}
    used |= set(wrt)
    return sum(int(np.size(point[name])) for name in used if name in point)


# ---------------------------------------------------------------------------------------
# The translation
# ---------------------------------------------------------------------------------------
def _default_lookup() -> Callable[[str], Any]:
    from ..engine.core.table import lookup  # (importing the engine fills the registry)
    return lookup


def _constants() -> dict[str, float]:
    from ..engine.core.recording import CONSTANTS
    return dict(CONSTANTS)


class _Translator:
    """Tree -> object arrays of sympy expressions, one program at a time.

    ``cut`` names an intermediate to replace by fresh symbols at its last assignment.
    """

    def __init__(self, sp, program: Program, point: Mapping[str, Any], *, lookup, cut=None,
                 max_elements=DEFAULT_MAX_ELEMENTS,
                 max_intermediate=DEFAULT_MAX_INTERMEDIATE) -> None:
        self.sp = sp
        self.program = program
        self.point = point
        self.lookup = lookup
        self.cut = cut
        self.max_elements = max_elements
        self.max_intermediate = max_intermediate
        self.env: dict[str, np.ndarray] = {}
        self.sources: dict[str, np.ndarray] = {}
        self.values: dict = {}
        self.elements = 0
        self._symbol_names: set[str] = set()
        self._constants = _constants()

    # -- values --------------------------------------------------------------------------
    def number(self, value) -> Any:
        """A Python/numpy number or bool as a sympy number (no text involved)."""
        sp = self.sp
        if isinstance(value, (bool, np.bool_)):
            return sp.true if value else sp.false
        value = float(value)
        if math.isnan(value):
            return sp.nan
        if math.isinf(value):
            return sp.oo if value > 0 else -sp.oo
        if value.is_integer() and abs(value) < 2 ** 53:
            return sp.Integer(int(value))
        return sp.Float(value)

    def wrap(self, x) -> np.ndarray:
        """Any builder result as an object array whose elements are sympy objects."""
        sp = self.sp
        if isinstance(x, np.ndarray):
            arr = x if x.dtype == object else x.astype(object)
        else:
            arr = np.empty((), dtype=object)
            arr[()] = x
        if arr.size > self.max_intermediate:
            raise SymbolicSkip(f"too large for a symbolic check (an intermediate of "
                               f"{arr.size} elements > {self.max_intermediate})")
        if any(not isinstance(v, sp.Basic) for v in arr.flat):
            arr = arr.copy()
            for idx in np.ndindex(arr.shape):
                if not isinstance(arr[idx], sp.Basic):
                    arr[idx] = self.number(arr[idx])
        return arr

    def symbols(self, name: str, shape: tuple) -> np.ndarray:
        sp = self.sp
        size = int(np.prod(shape, dtype=np.int64))
        self.elements += size
        if self.elements > self.max_elements:
            raise SymbolicSkip(f"too large for a symbolic check ({self.elements} elements > "
                               f"{self.max_elements})")
        out = np.empty(shape, dtype=object)
        for idx in np.ndindex(shape):
            label = f"{name}[{','.join(map(str, idx))}]" if shape else name
            # A name declared again (or cut out while also an input) gets distinct symbols.
            out[idx] = (sp.Dummy(label, real=True) if label in self._symbol_names
                        else sp.Symbol(label, real=True))
            self._symbol_names.add(label)
        return out

    def bind_symbols(self, name: str, values: np.ndarray) -> np.ndarray:
        """Fresh symbols for ``name`` taking ``values`` (sympy numbers) at the point."""
        syms = self.symbols(name, values.shape)
        for s, v in zip(syms.flat, values.flat):
            self.values[s] = v
        self.sources[name] = syms
        return syms

    def at_point(self, arr: np.ndarray) -> np.ndarray:
        """The numeric value of every element at the point (sympy numbers)."""
        out = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(arr.shape):
            out[idx] = arr[idx].xreplace(self.values)
        return out

    def point_values(self, name: str) -> np.ndarray:
        raw = np.asarray(self.point[name])
        if raw.dtype == object:
            raise SymbolicSkip(f"the value of {name!r} is not numeric")
        out = np.empty(raw.shape, dtype=object)
        for idx in np.ndindex(raw.shape):
            out[idx] = self.number(raw[idx])
        return out

    def as_number(self, el):
        """A boolean used as a number counts 1 or 0 (as numpy does)."""
        sp = self.sp
        if _is_boolean(sp, el):
            if el is sp.true:
                return sp.Integer(1)
            if el is sp.false:
                return sp.Integer(0)
            return sp.Piecewise((1, el), (0, True))
        return el

    def as_condition(self, el):
        sp = self.sp
        return el if _is_boolean(sp, el) else sp.Ne(el, 0)

    def as_numbers(self, arr: np.ndarray) -> np.ndarray:
        return np.vectorize(self.as_number, otypes=[object])(arr) if arr.size else arr

    # -- statements ----------------------------------------------------------------------
    def run(self, target: str | None) -> np.ndarray:
        statements = self.program.statements
        if not statements:
            raise SymbolicSkip("the program is empty")
        last_assign = {st.name: i for i, st in enumerate(statements) if isinstance(st, Assign)}
        result = None
        for i, st in enumerate(statements):
            is_last = i == len(statements) - 1
            if isinstance(st, Assign):
                if isinstance(st.value, Declare):
                    self.declare(st.name, st.value)
                else:
                    value = self.expr(st.value)
                    if st.name == self.cut and last_assign[st.name] == i:
                        value = self.bind_symbols(st.name, self.at_point(value))
                    self.env[st.name] = value
                if is_last:
                    result = self.env[st.name]
            elif isinstance(st, ExprStatement):
                # Bare expressions before the last one cannot reach the target.
                if is_last and target is None:
                    result = self.expr(st.value)
            else:
                raise SymbolicSkip(f"unsupported statement {type(st).__name__}")
        if target is not None:
            result = self.name(target)
        return result

    def declare(self, name: str, node: Declare) -> None:
        if name in self.point:
            values = self.point_values(name)
        else:
            values = self.at_point(self.expr(node.value))
        self.env[name] = self.bind_symbols(name, values)

    def name(self, name: str) -> np.ndarray:
        if name in self.env:
            return self.env[name]
        if name in self.point:  # declared outside the program: an input
            self.env[name] = self.bind_symbols(name, self.point_values(name))
            return self.env[name]
        if name in self._constants:
            attr = _CONSTANTS.get(name)
            value = getattr(self.sp, attr) if attr else self.number(self._constants[name])
            return self.wrap(value)
        if name in ("True", "False"):
            return self.wrap(self.sp.true if name == "True" else self.sp.false)
        raise SymbolicSkip(f"unknown name {name!r}")

    # -- expressions (iterative: left-deep sums of many terms must not recurse) ---------
    def expr(self, root) -> np.ndarray:
        stack: list = [(root, None)]
        results: list = []
        while stack:
            node, plan = stack.pop()
            if plan is None:
                plan = self.plan(node)
                stack.append((node, plan))
                stack.extend((kid, None) for kid in reversed(plan[0]))
            else:
                n = len(plan[0])
                args = results[len(results) - n:] if n else []
                if n:
                    del results[len(results) - n:]
                results.append(self.combine(node, plan, args))
        return results[0]

    def plan(self, node) -> tuple:
        """(child expressions to translate first, extra information for combine)."""
        if isinstance(node, (Number, Name)):
            return ((), None)
        if isinstance(node, Unary):
            return ((node.operand,), None)
        if isinstance(node, (Binary, Compare)):
            return ((node.left, node.right), None)
        if isinstance(node, (ArrayLit, TupleLit)):
            return (tuple(node.elements), None)
        if isinstance(node, Index):
            return ((node.value,), None)
        if isinstance(node, Call):
            return self.plan_call(node)
        if isinstance(node, Declare):
            raise SymbolicSkip(f"{'Variable' if node.kind == 'variable' else 'constant'}(...) "
                               "is only allowed as the value of an assignment")
        raise SymbolicSkip(f"unsupported expression {type(node).__name__}")

    def plan_call(self, node: Call) -> tuple:
        op = self.lookup(node.func)
        if op is None:
            raise SymbolicSkip(f"unknown function {node.func!r}")
        if op.name == "stop_gradient":
            if len(node.args) != 1 or node.kwargs:
                raise SymbolicSkip("stop_gradient takes one argument")
            return ((node.args[0],), (op, "stop_gradient", {}))
        if op.sympy is None:
            raise SymbolicSkip(f"no symbolic form for {op.name}")
        param_names = [p for p, _ in op.params]
        kwargs = dict(node.kwargs)
        if op.variadic:
            if not node.args:
                raise SymbolicSkip(f"{op.name} takes a sequence of arrays")
            first = node.args[0]
            items = tuple(first.elements) if isinstance(first, (ArrayLit, TupleLit)) else (first,)
            spread = not isinstance(first, (ArrayLit, TupleLit))
            extra = node.args[1:]
            inputs = items
        else:
            n_in = len(op.inputs)
            inputs = list(node.args[:n_in])
            for key in op.inputs[len(inputs):]:
                if key in kwargs:
                    inputs.append(kwargs.pop(key))
            if len(inputs) != n_in:
                raise SymbolicSkip(f"{op.name} takes {n_in} input(s)")
            extra = node.args[n_in:]
            spread = False
        if len(extra) > len(param_names):
            raise SymbolicSkip(f"{op.name} got too many arguments")
        params_nodes = dict(zip(param_names, extra))
        for key, value in kwargs.items():
            if key not in param_names:
                raise SymbolicSkip(f"{op.name} has no keyword {key!r}")
            params_nodes[key] = value
        return (tuple(inputs), (op, "spread" if spread else "call", params_nodes))

    def combine(self, node, plan, args: list) -> np.ndarray:
        sp = self.sp
        if isinstance(node, Number):
            return self.wrap(self.number(node.value))
        if isinstance(node, Name):
            return self.name(node.id)
        if isinstance(node, Unary):
            if node.op == "-":
                return self.wrap(-self.as_numbers(args[0]))
            if node.op == "+":
                return args[0]
            raise SymbolicSkip(f"unsupported unary operator {node.op!r}")
        if isinstance(node, Binary):
            return self.binary(node.op, args[0], args[1])
        if isinstance(node, Compare):
            rel = getattr(sp, _COMPARE[node.op])
            return self.elementwise(lambda a, b: rel(a, b), args)
        if isinstance(node, (ArrayLit, TupleLit)):
            if not args:
                return np.empty((0,), dtype=object)
            try:
                return self.wrap(np.stack(args))
            except ValueError:
                raise SymbolicSkip("an array literal with rows of different shapes") from None
        if isinstance(node, Index):
            index = tuple(self.index_item(item) for item in node.items)
            if isinstance(args[0], tuple):  # eigh(a)[0]: the first index picks an output
                args, index = [args[0][index[0]]], index[1:]
            try:
                return self.wrap(args[0][index])
            except (IndexError, TypeError, ValueError) as err:
                raise SymbolicSkip(f"indexing failed: {err}") from None
        if isinstance(node, Call):
            return self.call(plan[1], args)
        raise SymbolicSkip(f"unsupported expression {type(node).__name__}")

    def binary(self, op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = self.as_numbers(a), self.as_numbers(b)
        try:
            if op == "+":
                out = a + b
            elif op == "-":
                out = a - b
            elif op == "*":
                out = a * b
            elif op == "/":
                out = a / b
            elif op == "**":
                out = a ** b
            elif op == "%":  # Python's and numpy's mod: the sign of the divisor
                return self.elementwise(lambda p, q: p - q * self.sp.floor(p / q), [a, b])
            elif op == "//":
                return self.elementwise(lambda p, q: self.sp.floor(p / q), [a, b])
            elif op == "@":
                if a.ndim == 0 or b.ndim == 0:
                    raise SymbolicSkip("matmul of a scalar")
                out = np.matmul(a, b)
            else:
                raise SymbolicSkip(f"unsupported operator {op!r}")
        except ValueError as err:
            raise SymbolicSkip(f"shape mismatch in {op}: {a.shape} and {b.shape} ({err})") from None
        return self.wrap(out)

    def elementwise(self, fn, arrays: list) -> np.ndarray:
        try:
            arrays = np.broadcast_arrays(*arrays)
        except ValueError:
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise SymbolicSkip(f"shapes do not broadcast: {shapes}") from None
        shape = arrays[0].shape if arrays else ()
        out = np.empty(shape, dtype=object)
        if out.size > self.max_intermediate:
            self.wrap(out)  # raises the size limit
        for idx in np.ndindex(shape):
            out[idx] = fn(*(a[idx] for a in arrays))
        return self.wrap(out)

    def call(self, info, args: list) -> np.ndarray:
        op, how, param_nodes = info
        if how == "stop_gradient":
            return self.at_point(args[0])
        params = {key: self.static(value) for key, value in param_nodes.items()}
        sp = self.sp
        if op.elementwise:
            conds = (0,) if op.name == "where" else ()
            prepared = [np.vectorize(self.as_condition if i in conds else self.as_number,
                                     otypes=[object])(a) if a.size else a
                        for i, a in enumerate(args)]
            return self.elementwise(lambda *xs: op.sympy(sp, *xs, **params), prepared)
        if getattr(op, "kind", "") == "constructor":
            size = int(np.size(op.forward(**params)))
            if size > self.max_intermediate:
                raise SymbolicSkip(f"too large for a symbolic check (an intermediate of "
                                   f"{size} elements > {self.max_intermediate})")
        inputs = [self.as_numbers(a) for a in args]
        if how == "spread":
            inputs = list(inputs[0])
        try:
            out = op.sympy(sp, *inputs, **params)
        except (ValueError, IndexError, TypeError) as err:
            raise SymbolicSkip(f"{op.name} failed in sympy: {err}") from None
        if isinstance(out, tuple):  # several outputs (slogdet): an index picks one
            return tuple(self.wrap(o) for o in out)
        return self.wrap(out)

    def index_item(self, item):
        if isinstance(item, Slice):
            return slice(self.static(item.lower), self.static(item.upper), self.static(item.step))
        if isinstance(item, ArrayLit):  # a list index picks elements (numpy fancy indexing)
            return list(self.static(item))
        value = self.static(item)
        return np.asarray(value) if isinstance(value, tuple) else value

    def static(self, node):
        """A parameter's Python value (axis, shape, keepdims, an index), at the point."""
        if node is None:
            return None
        if isinstance(node, Name) and node.id in ("None", "True", "False") \
                and node.id not in self.env and node.id not in self.point:
            return {"None": None, "True": True, "False": False}[node.id]
        if isinstance(node, (TupleLit, ArrayLit)):
            return tuple(self.static(e) for e in node.elements)
        if isinstance(node, Str):  # einsum's subscripts
            return node.value
        if isinstance(node, Number):
            return _python_number(node.value)
        values = self.at_point(self.expr(node))
        python = np.empty(values.shape, dtype=object)
        for idx in np.ndindex(values.shape):
            python[idx] = self.python_value(values[idx])
        return python[()] if python.ndim == 0 else tuple(python.tolist())

    def python_value(self, v):
        sp = self.sp
        if v is sp.true or v is sp.false:
            return bool(v)
        try:
            return _python_number(float(v.evalf()))
        except (TypeError, ValueError):
            raise SymbolicSkip(f"a parameter is not a number at the point: {v}") from None


def _is_boolean(sp, el) -> bool:
    """A truth value (a comparison, And/Or/Not, true/false); sympy Symbols are Booleans
    too, so the plain ``Boolean`` class would not do."""
    boolalg = sp.logic.boolalg
    return isinstance(el, (sp.core.relational.Relational, boolalg.BooleanAtom,
                           boolalg.BooleanFunction))


def _python_number(value: float):
    return int(value) if float(value).is_integer() and abs(value) < 2 ** 53 else float(value)


def to_sympy(program: Program, point: Mapping[str, Any], target: str | None = None, *,
             wrt: Sequence[str] = (), cut: str | None = None, max_elements: int = DEFAULT_MAX_ELEMENTS,
             max_intermediate: int = DEFAULT_MAX_INTERMEDIATE,
             lookup: Callable[[str], Any] | None = None) -> SymbolicProgram:
    """Translate ``program`` to sympy in this process (imports sympy).

    Returns a :class:`SymbolicProgram`; when the program cannot be translated (too large,
    an op without a sympy form, ...) its ``skipped`` says why and ``target`` is None.
    ``wrt`` names inputs that must have symbols in ``sources`` even when the program never
    reads them; ``cut`` names an intermediate assignment to turn into fresh source symbols.

    >>> from gradcli.lang.tree import Name, Program, ExprStatement, Binary
    >>> prog = to_sympy(Program((ExprStatement(Binary("*", Name("x"), Name("x"))),)), {"x": 3.0})
    >>> str(prog.target[()])
    'x**2'
    """
    import sympy as sp

    tr = _Translator(sp, program, point, lookup=lookup or _default_lookup(), cut=cut,
                     max_elements=max_elements, max_intermediate=max_intermediate)
    try:
        result = tr.run(target)
        for name in wrt:  # sources the program never reads: symbols all the same (gradient 0)
            if name not in tr.sources and name in point:
                tr.bind_symbols(name, tr.point_values(name))
    except SymbolicSkip as skip:
        return SymbolicProgram(None, tr.sources, tr.values, skip.reason)
    except RecursionError:
        return SymbolicProgram(None, tr.sources, tr.values, "too deep for sympy (RecursionError)")
    return SymbolicProgram(result, tr.sources, tr.values)


# ---------------------------------------------------------------------------------------
# Differentiation, kinks, evaluation (all inside the worker)
# ---------------------------------------------------------------------------------------
def tree_depth(expr) -> int:
    """Nesting depth of a sympy expression, computed without recursion."""
    depth: dict[int, int] = {}
    stack = [(expr, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in depth:
            continue
        if done or not node.args:
            depth[key] = 1 + max((depth[id(a)] for a in node.args), default=0)
        else:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args if id(a) not in depth)
    return depth[id(expr)]


def scalar_target(sp, target: np.ndarray):
    if target.size and any(_is_boolean(sp, v) for v in target.flat):
        raise SymbolicSkip("the target is a comparison (boolean), which has no gradient")
    # A non-scalar target is differentiated as the sum of its elements, as TensorFlow does.
    return target[()] if target.ndim == 0 else sp.Add(*target.flat)


def _is_zero(sp, value) -> bool:
    value = value.evalf() if value.is_number else value
    return bool(value.is_zero)


def _real(sp, value):
    """A sympy number as a Python float, or None."""
    try:
        c = complex(value.evalf())
    except (TypeError, ValueError):
        return None
    return c.real if abs(c.imag) <= 1e-12 * max(1.0, abs(c.real)) else None


def _kink_at(sp, atom, values, symbol, kinds, in_target: bool) -> tuple[str, str] | None:
    """What ``atom`` puts at the point in ``symbol``: (kind, why), or None.

    The kind is "kink" (continuous, the slope jumps) or "discontinuity" (the value jumps):
    a step (Heaviside, sign, floor, ceiling) in the target is a jump of the target, in the
    derivative only a jump of the slope; a DiracDelta (the derivative of a step) is a
    jump; Abs and Max/Min are continuous; a Piecewise boundary is a jump when its pieces
    differ there.
    """
    if isinstance(atom, (sp.Heaviside, sp.sign, sp.DiracDelta, sp.Abs)):
        if not isinstance(atom, kinds):
            return None
        arg = atom.args[0]
        if symbol in arg.free_symbols and _is_zero(sp, arg.xreplace(values)):
            step = isinstance(atom, sp.DiracDelta) or (
                in_target and isinstance(atom, (sp.Heaviside, sp.sign)))
            return ("discontinuity" if step else "kink"), f"{type(atom).__name__}(0)"
        return None
    if isinstance(atom, (sp.Max, sp.Min)):
        if symbol not in atom.free_symbols:
            return None
        vals = [(_real(sp, a.xreplace(values)), symbol in a.free_symbols) for a in atom.args]
        if any(v is None for v, _ in vals):
            return None
        top = (max if isinstance(atom, sp.Max) else min)(v for v, _ in vals)
        tied = [has for v, has in vals if v == top]
        if len(tied) > 1 and any(tied):
            return "kink", f"a tie in {type(atom).__name__}"
        return None
    if isinstance(atom, (sp.floor, sp.ceiling)):
        arg = atom.args[0]
        if symbol in arg.free_symbols:
            v = _real(sp, arg.xreplace(values))
            if v is not None and v == round(v):
                return (("discontinuity" if in_target else "kink"),
                        f"{type(atom).__name__} at an integer")
        return None
    if isinstance(atom, sp.Piecewise):
        for _, cond in atom.args:
            rels = cond.atoms(sp.core.relational.Relational)
            if isinstance(cond, sp.core.relational.Relational):
                rels.add(cond)
            for rel in rels:
                gap = rel.lhs - rel.rhs
                if symbol in gap.free_symbols and _is_zero(sp, gap.xreplace(values)):
                    pieces = {_real(sp, expr.xreplace(values)) for expr, _ in atom.args}
                    jump = in_target and (None in pieces or len(pieces) > 1)
                    return (("discontinuity" if jump else "kink"),
                            "the boundary of a piecewise condition")
        return None
    return None


# Which kind wins when an element has several (the least regular one).
_KIND_ORDER = ("singularity", "discontinuity", "kink")


def _kink_types(sp):
    return (sp.Heaviside, sp.sign, sp.DiracDelta, sp.Abs, sp.Max, sp.Min, sp.floor, sp.ceiling,
            sp.Piecewise)


def drop_step_derivatives(sp, expr):
    """floor/ceiling are constant between integers: their unevaluated derivatives are 0
    (their kinks are found in the target itself)."""
    steps = (sp.floor, sp.ceiling)

    def is_step(e) -> bool:
        if isinstance(e, sp.Subs):
            e = e.expr
        return isinstance(e, sp.Derivative) and isinstance(e.expr, steps)

    found = [e for e in expr.atoms(sp.Derivative, sp.Subs) if is_step(e)]
    return expr.xreplace({e: sp.S.Zero for e in found}) if found else expr


OVERFLOW = "overflow"


def _undefined(sp, value) -> bool:
    """A value sympy cannot give at the point (0/0, 1/0, atan2(0, 0): nan or zoo)."""
    return value is sp.nan or value is sp.zoo or bool(value.has(sp.nan, sp.zoo))


def _evaluate(sp, derivative, values) -> tuple[float, str | None]:
    """The derivative at the point as a float, and a note when it is not a real number."""
    v = derivative.xreplace(values)
    if v is sp.zoo:
        return math.inf, "the derivative is infinite (complex infinity)"
    if v is sp.nan:
        return math.nan, "sympy gives nan"
    if v is sp.oo or v is -sp.oo:
        return (math.inf if v is sp.oo else -math.inf), "the derivative is infinite"
    if v.has(sp.DiracDelta):
        return math.nan, "the derivative holds DiracDelta(0)"
    if v.has(sp.Derivative, sp.Subs):
        return math.nan, "sympy left a derivative unevaluated"
    try:
        c = complex(v.evalf())
    except (TypeError, ValueError):
        return math.nan, f"sympy's derivative does not evaluate to a number ({short_text(str(v))})"
    if (math.isinf(c.real) or math.isinf(c.imag)) and v.is_finite:
        # A finite number beyond float64 (exp(710)): an overflow, not an infinity.
        return math.copysign(math.inf, c.real), (f"{OVERFLOW}: the derivative is "
                                                 f"{sp.N(v, 6)}, beyond float64's range")
    if math.isinf(c.real) or math.isinf(c.imag):
        return math.inf, "the derivative is infinite"
    if abs(c.imag) > 1e-12 * max(1.0, abs(c.real)):
        return math.nan, "the derivative is not real at the point"
    return c.real, None


def short_text(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _text(derivatives: np.ndarray) -> str:
    text = str(derivatives[()]) if derivatives.ndim == 0 else str(derivatives.tolist())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."


def symbolic_gradient(sp, name, translated: SymbolicProgram, target_expr, source, *, evaluate: bool,
              want_text: bool) -> SymbolicGradient:
    values = translated.values
    kinds_target = _kink_types(sp)
    kinds_derivative = tuple(k for k in kinds_target if k is not sp.Abs)
    target_atoms = list(target_expr.atoms(*kinds_target))
    derivatives = np.empty(source.shape, dtype=object)
    value = np.full(source.shape, np.nan)
    kink = np.zeros(source.shape, dtype=bool)
    kind = np.full(source.shape, "", dtype=object)
    notes: list[str] = []
    undefined = None
    if evaluate:
        # The target itself undefined at the point (an infinite or 0/0 intermediate, the
        # origin of atan2): a singularity, for every element it depends on.
        at = target_expr.xreplace(values)
        undefined = (f"the target is undefined at the point ({at})"
                     if _undefined(sp, at) else None)
    for idx in np.ndindex(source.shape):
        symbol = source[idx]
        d = drop_step_derivatives(sp, sp.diff(target_expr, symbol))
        derivatives[idx] = d
        if not evaluate:
            continue
        found = [r for atom in target_atoms
                 if (r := _kink_at(sp, atom, values, symbol, kinds_target, True))]
        found += [r for atom in d.atoms(*kinds_derivative)
                  if (r := _kink_at(sp, atom, values, symbol, kinds_derivative, False))]
        v, note = _evaluate(sp, d, values)
        value[idx] = v
        if undefined is not None and symbol in target_expr.free_symbols:
            found.append(("singularity", undefined))
        elif math.isinf(v) and not (note or "").startswith(OVERFLOW):
            found.append(("singularity", "an infinite derivative"))
        where = f"{symbol}: " if source.ndim else ""
        if found:
            kink[idx] = True
            kind[idx] = min((k for k, _ in found), key=_KIND_ORDER.index)
            notes.append(f"{where}{', '.join(sorted({r for _, r in found}))}")
        elif note:
            if note.startswith(OVERFLOW):
                kind[idx] = OVERFLOW
            notes.append(f"{where}{note}")
    note = "; ".join(dict.fromkeys(notes)) or None
    return SymbolicGradient(name, value if evaluate else None, kink if evaluate else None,
                            short_text(note, 400) if note else None,
                            text=_text(derivatives) if want_text else None,
                            kind=kind if evaluate else None)


def _compute(sp, job: dict, emit: Callable[[str, SymbolicGradient], None]) -> None:
    """The worker's job: translate once per distinct cut, differentiate each source."""
    program, point, wrt = job["program"], job["point"], job["wrt"]
    intermediates = job["intermediates"]
    translations: dict = {}
    for name in wrt:
        cut = name if name in intermediates else None
        try:
            if cut not in translations:
                translated = to_sympy(program, point, job["target"], cut=cut,
                                      wrt=[w for w in wrt if w not in intermediates],
                                      max_elements=job["max_elements"],
                                      max_intermediate=job["max_intermediate"],
                                      lookup=job["lookup"])
                expr = None
                if translated.skipped is None:
                    expr = scalar_target(sp, translated.target)
                    depth = tree_depth(expr)
                    if depth > job["max_depth"]:
                        raise SymbolicSkip(f"too deep for sympy (expression nesting {depth} > "
                                           f"{job['max_depth']})")
                translations[cut] = (translated, expr)
            translated, expr = translations[cut]
            if translated.skipped is not None:
                raise SymbolicSkip(translated.skipped)
            if name not in translated.sources:
                raise SymbolicSkip(f"{name!r} is not assigned before the target" if cut
                                   else f"no value for {name!r}")
            result = symbolic_gradient(sp, name, translated, expr, translated.sources[name],
                               evaluate=job["evaluate"], want_text=job["want_text"])
        except SymbolicSkip as skip:
            translations.setdefault(cut, (SymbolicProgram(None, {}, {}, skip.reason), None))
            result = SymbolicGradient(name, skipped=skip.reason)
        except RecursionError:
            translations.setdefault(cut, (SymbolicProgram(None, {}, {}, "too deep for sympy (RecursionError)"), None))
            result = SymbolicGradient(name, skipped="too deep for sympy (RecursionError)")
        except MemoryError:
            result = SymbolicGradient(name, skipped="sympy ran out of memory")
        except Exception as err:  # noqa: BLE001 - any sympy failure is a skip, never a crash
            result = SymbolicGradient(name, skipped=f"sympy failed: {type(err).__name__}: "
                                                    f"{short_text(str(err))}")
        emit(name, result)


# ---------------------------------------------------------------------------------------
# The worker process
# ---------------------------------------------------------------------------------------
def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _worker(conn, job: dict) -> None:
    try:
        import sympy as sp
        # The same recursion budget wherever the caller's stack stood when it forked.
        sys.setrecursionlimit(_stack_depth() + _RECURSION_BUDGET)
        conn.send(("ready", time.monotonic()))
        # (a job may bring its own computation: gradcli.check.higher's Hessians)
        job.get("compute", _compute)(sp, job,
                                     lambda name, result: conn.send(("result", name, result)))
        conn.send(("done",))
    except BaseException as err:  # noqa: BLE001 - report, never a traceback on the terminal
        # The pipe may be gone too; the parent then reports the worker's exit code.
        with contextlib.suppress(Exception):
            conn.send(("error", f"sympy failed: {type(err).__name__}: {short_text(str(err))}"))
    finally:
        conn.close()


def _plain(value) -> np.ndarray:
    """A declared value as a numpy array (engine Tensors and Variables included)."""
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def start_method():
    """The multiprocessing context of the workers (its Pipe, Process, Value)."""
    import multiprocessing as mp
    # fork: the child starts with sympy and the tree already in memory (nothing to pickle,
    # no second import of sympy). Elsewhere spawn, which pickles the frozen tree.
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


def symbolic_gradients(program: Program, point: Mapping[str, Any], wrt: Sequence[str],
                       target: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                       max_elements: int = DEFAULT_MAX_ELEMENTS,
                       max_depth: int = DEFAULT_MAX_DEPTH,
                       max_intermediate: int = DEFAULT_MAX_INTERMEDIATE,
                       want_text: bool = False, evaluate: bool = True,
                       intermediates: Iterable[str] | None = None,
                       lookup: Callable[[str], Any] | None = None,
                       in_process: bool = False) -> dict[str, SymbolicGradient]:
    """sympy's gradient of the target for each name of ``wrt``, at ``point``.

    Returns ``{name: SymbolicGradient}`` in ``wrt`` order; never raises for anything sympy
    does: a result that could not be computed has ``skipped`` set ("too large for a
    symbolic check (300 elements > 256)", "took longer than 5s", "too deep for sympy ...",
    "no symbolic form for stop_gradient", ...). ``want_text`` also keeps sympy's str of
    each derivative (``--symbolic``); ``evaluate=False`` skips the evaluation at the point.
    ``intermediates``: the names of ``wrt`` that mean the value of their (last) assignment
    rather than the input of that name; None means every name whose last assignment is a
    computation (``tape`` semantics); ``grad`` and the implicit modes pass ``()``, since
    their sources are always the arguments and variables, even when the program rebinds
    the name (``x = sin(x) * 1.01``).
    ``in_process`` runs without a worker (no time limit; for debugging).

    >>> from gradcli.lang.tree import Call, Name, Program, ExprStatement
    >>> res = symbolic_gradients(Program((ExprStatement(Call("abs", (Name("x"),))),)),
    ...                          {"x": 0.0}, ["x"])
    >>> float(res["x"].value), bool(res["x"].kink)
    (0.0, True)
    """
    wrt = list(dict.fromkeys(wrt))
    point = {name: _plain(value) for name, value in point.items()}
    n = input_elements(program, point, wrt)
    if n > max_elements:
        reason = f"too large for a symbolic check ({n} elements > {max_elements})"
        return {name: SymbolicGradient(name, skipped=reason) for name in wrt}
    import sympy as sp  # here, on the check path only; before fork so the child has it

    if lookup is None:
        lookup = _default_lookup()
    job = {"program": program, "point": point,
           "wrt": wrt, "target": target, "max_elements": max_elements,
           "max_depth": max_depth, "max_intermediate": max_intermediate,
           "want_text": want_text, "evaluate": evaluate, "lookup": lookup,
           "intermediates": (computed_names(program) if intermediates is None
                             else set(intermediates))}
    results: dict[str, SymbolicGradient] = {}
    if in_process:
        _compute(sp, job, results.__setitem__)
        return {name: results[name] for name in wrt}
    return run_worker(job, wrt, timeout)


def run_worker(job: dict, wrt: list[str], timeout: float) -> dict[str, SymbolicGradient]:
    with Worker(job) as worker:
        return worker.results(wrt, timeout)


class Worker:
    """The worker process running ``job``, started at once (``with Worker(job) as
    worker``: killed on leaving the block); ``results(keys, timeout)`` waits for them.
    The caller can work meanwhile: the ``timeout`` counts from the moment the worker was
    ready (sympy imported), not from the call of ``results``. Forked from a caller that
    has not imported sympy, the worker imports it itself (while the caller works on)."""

    def __init__(self, job: dict) -> None:
        ctx = start_method()
        # A forked child flushes its copies of these buffers when it ends: empty them
        # first, or output the parent has buffered would be printed twice.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self.receiver, sender = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_worker, args=(sender, job), daemon=True,
                                   name="gradcli-sympy")
        self.failure = None
        self.started = False
        try:
            self.process.start()
            self.started = True
        except RecursionError:  # spawn pickles the tree, recursively
            self.failure = "too deep for sympy (RecursionError)"
        except Exception as err:  # noqa: BLE001 - e.g. something spawn cannot pickle
            self.failure = (f"sympy worker could not start: {type(err).__name__}: "
                            f"{short_text(str(err))}")
        sender.close()
        # The clock starts once the worker runs (it may have to import sympy first).
        self.deadline = time.monotonic() + 60.0
        self.ready = False

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        if self.started:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(5.0)
        self.receiver.close()

    def results(self, keys: list[str], timeout: float, since: float | None = None) -> dict:
        """``{key: what was emitted}``; a key nothing came for in ``timeout`` seconds
        (from the worker's start, after its import of sympy; or from ``since``, a
        ``time.monotonic()``, for a worker that is given more to do) is a
        ``SymbolicGradient`` whose ``skipped`` says why."""
        results: dict = {}
        failure = self.failure
        if since is not None:
            self.deadline = since + timeout
        elif not self.ready:
            self.deadline += timeout
        while failure is None and len(results) < len(keys):
            # (past the deadline, what the worker sent in time is still read)
            remaining = max(self.deadline - time.monotonic(), 0.0)
            if not self.receiver.poll(remaining):
                failure = (f"took longer than {_seconds(timeout)}" if self.ready
                           else "sympy worker did not start")
                break
            try:
                message = self.receiver.recv()
            except (EOFError, OSError):
                self.process.join(1.0)
                failure = f"sympy worker stopped unexpectedly (exit code {self.process.exitcode})"
                break
            if message[0] == "ready":
                self.ready = True
                self.deadline = message[1] + timeout  # (a clock shared with the worker)
            elif message[0] == "result":
                results[message[1]] = message[2]
            elif message[0] == "error":
                failure = message[1]
            else:  # "done"
                break
        failure = failure or "sympy gave no result"
        return {key: results.get(key) or SymbolicGradient(key, skipped=failure) for key in keys}


def job_target(job: dict, target=None):
    """A formula job's scalar target as a sympy expression, its constants substituted,
    and the translation (for its sources): what ``diff``'s relatives (critical, taylor,
    idiff) each start from in the worker. A translation that was skipped raises."""
    translated = to_sympy(job["program"], job["point"], target, wrt=job["names"],
                          lookup=job["lookup"])
    if translated.skipped is not None:
        raise ValueError(translated.skipped)
    values = {s: translated.values[s] for name in job["constants"]
              if name in translated.sources for s in translated.sources[name].flat}
    return translated.target[()].xreplace(values), translated


def _seconds(timeout: float) -> str:
    return f"{timeout:g}s"


def symbolic_derivative_text(program: Program, point: Mapping[str, Any], wrt: Sequence[str],
                             target: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                             max_elements: int = DEFAULT_MAX_ELEMENTS,
                             intermediates: Iterable[str] | None = None,
                             lookup: Callable[[str], Any] | None = None) -> dict[str, str]:
    """sympy's derivative of the target for each source, as text (``--symbolic``).

    Element symbols stay symbolic (``x[0,1]``); a skipped source gives ``"skipped: why"``.

    >>> from gradcli.lang.tree import Call, Name, Program, ExprStatement
    >>> symbolic_derivative_text(Program((ExprStatement(Call("sin", (Name("x"),))),)),
    ...                          {"x": 1.0}, ["x"])
    {'x': 'cos(x)'}
    """
    results = symbolic_gradients(program, point, wrt, target, timeout=timeout,
                                 max_elements=max_elements, want_text=True, evaluate=False,
                                 intermediates=intermediates, lookup=lookup)
    return {name: res.text if res.skipped is None else f"skipped: {res.skipped}"
            for name, res in results.items()}
