"""sympy expressions printed back in gradcli's own notation (``gradcli diff``).

A formula gradcli prints must paste back into gradcli as a program: ``^`` for powers, the
function table's names (``arctan``, ``maximum``; never sympy's ``atan``, ``Max`` or a
``sympy.`` prefix), ``e`` and ``pi`` for the constants. The map from sympy's functions
to the table's names is not written by hand: it is read from the table itself, by
calling each elementwise entry's sympy form on plain symbols and keeping the entries
whose form is one sympy function of exactly those symbols (``arctan`` -> ``atan(t)``:
``atan`` prints as ``arctan``). The first entry in the table's order wins (``abs``
before ``fabs``).

What the table has no name for is spelled with names it has, where that is exact:

- ``Heaviside(a)`` (from the derivative of ``maximum``, ``relu``):
  ``where(a > 0, 1, where(a < 0, 0, H0))`` with sympy's ``H0`` (1/2 by default);
- ``Piecewise((a, c1), (b, True))``: ``where(c1, a, b)``, nested;
- ``sinc(u)`` (sympy's unnormalised sinc) is rewritten as ``sin(u)/u`` with its limit 1.

Anything else (an unevaluated ``Derivative``, ``Subs``, ``I``, ``zoo``, ``nan``, a
special function the table lacks, ``And``/``Or`` conditions) raises
:class:`Unprintable` naming it: the caller prints the raw form with a note, never a
formula gradcli cannot read. The printer is sympy's own ``StrPrinter`` (its operator
precedence is Python's, which is gradcli's), with the leaves and functions above
replaced; every node is checked against the allowed kinds before printing.

LaTeX (``--latex``) is sympy's ``latex`` of the same expression.
"""
from __future__ import annotations

from functools import lru_cache


class Unprintable(Exception):
    """The expression holds something gradcli's language has no name for."""


@lru_cache(maxsize=1)
def function_names() -> dict:
    """sympy function class -> the table's name, read from the table's sympy forms."""
    import sympy as sp

    from ..engine.core.table import ORDER, REGISTRY
    symbols = sp.symbols("t u v", real=True)
    names: dict = {}
    for name in ORDER:
        op = REGISTRY[name]
        if not op.elementwise or op.sympy is None or not 1 <= len(op.inputs) <= 3:
            continue
        args = symbols[:len(op.inputs)]
        try:
            form = op.sympy(sp, *args)
        except Exception:  # noqa: BLE001 - an entry whose form needs parameters
            continue
        if tuple(form.args) == tuple(args) and not isinstance(form, (sp.Add, sp.Mul,
                                                                    sp.Pow)):
            names.setdefault(form.func, name)
    return names


def _printer_class():
    import sympy as sp
    from sympy.printing.precedence import PRECEDENCE, precedence
    from sympy.printing.str import StrPrinter

    class GradcliPrinter(StrPrinter):
        """sympy's str printer with gradcli's spellings."""

        def _print_Pow(self, expr, rational=False):
            text = super()._print_Pow(expr, rational)
            return text.replace("**", "^")

        def _print_Float(self, expr):
            return repr(float(expr))

        def _print_Exp1(self, expr):
            return "e"

        def _print_Infinity(self, expr):
            return "inf"

        def _print_NegativeInfinity(self, expr):
            return "-inf"

        def _print_Symbol(self, expr):
            return expr.name

        _print_Dummy = _print_Symbol

        def _print_Function(self, expr):
            name = function_names().get(expr.func)
            if name is None:
                raise Unprintable(f"sympy's {expr.func.__name__}")
            if name in ("maximum", "minimum") and len(expr.args) > 2:
                first, *rest = expr.args  # the table's maximum takes two
                return f"{name}({self._print(first)}, {self._print(expr.func(*rest))})"
            return f"{name}({self.stringify(expr.args, ', ')})"

        _print_Max = _print_Min = _print_Abs = _print_sign = _print_Function
        _print_floor = _print_ceiling = _print_exp = _print_log = _print_Function

        def _print_Heaviside(self, expr):
            arg = self._print(expr.args[0])
            at_zero = expr.args[1] if len(expr.args) > 1 else sp.Rational(1, 2)
            return f"where({arg} > 0, 1, where({arg} < 0, 0, {self._print(at_zero)}))"

        def _print_Piecewise(self, expr):
            pieces = list(expr.args)
            if pieces[-1].cond is not sp.true:
                raise Unprintable("a Piecewise without an otherwise branch")
            text = self._print(pieces[-1].expr)
            for piece in reversed(pieces[:-1]):
                text = (f"where({self._print(piece.cond)}, {self._print(piece.expr)}, "
                        f"{text})")
            return text

        def _print_Relational(self, expr):
            left = self.parenthesize(expr.lhs, PRECEDENCE["Add"])
            right = self.parenthesize(expr.rhs, PRECEDENCE["Add"])
            return f"{left} {expr.rel_op} {right}"

        def _print_Rational(self, expr):
            return f"{expr.p}/{expr.q}" if expr.q != 1 else str(expr.p)

    GradcliPrinter.precedence = staticmethod(precedence)
    return GradcliPrinter


@lru_cache(maxsize=1)
def _allowed():
    """The sympy node kinds the printer spells (functions: those of the table)."""
    import sympy as sp
    from sympy.core.relational import Relational
    leaves = (sp.Symbol, sp.Integer, sp.Rational, sp.Float)
    atoms = (sp.pi, sp.E, sp.oo, -sp.oo, sp.true)
    nodes = (sp.Add, sp.Mul, sp.Pow, sp.Heaviside, sp.Piecewise,
             sp.functions.elementary.piecewise.ExprCondPair, Relational)
    return leaves, atoms, nodes


def _check_printable(expr) -> None:
    import sympy as sp
    leaves, atoms, nodes = _allowed()
    names = function_names()
    for node in sp.preorder_traversal(expr):
        if node in atoms or isinstance(node, leaves) or isinstance(node, nodes):
            continue
        if node.func in names:
            continue
        raise Unprintable(f"sympy's {type(node).__name__}"
                          + (f" ({node})" if not node.args else ""))


def prepare(expr):
    """``expr`` rewritten with what the table has (``sinc`` as ``sin(u)/u``)."""
    import sympy as sp
    if expr.has(sp.sinc):
        expr = expr.replace(sp.sinc, lambda u: sp.Piecewise(
            (sp.sin(u) / u, sp.Ne(u, 0)), (sp.Integer(1), True)))
    return expr


def to_gradcli(expr) -> str:
    """``expr`` in gradcli's notation, or :class:`Unprintable`.

    >>> import sympy as sp
    >>> x, y = sp.symbols("x y", real=True)
    >>> to_gradcli(3*x**2 - 3)
    '3*x^2 - 3'
    >>> to_gradcli(sp.atan(x / y) + sp.Max(x, 0) + sp.E**x)
    'exp(x) + arctan(x/y) + maximum(0, x)'
    """
    expr = prepare(expr)
    _check_printable(expr)
    return _printer_class()().doprint(expr)


def to_latex(expr) -> str:
    import sympy as sp
    return sp.latex(prepare(expr))


def sympy_text(expr) -> str:
    """sympy's own str (``--raw`` of an unprintable formula: said to be sympy's)."""
    return str(expr)


def operation_count(expr) -> int:
    import sympy as sp
    return int(sp.count_ops(expr))
