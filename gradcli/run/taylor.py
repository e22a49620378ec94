"""``gradcli diff --taylor x=0[,y=0] --order N``: the Taylor polynomial at a point.

Each coefficient ``d^a f(p) / a!`` (``a`` a multi-index with ``|a| <= N``) comes from the
tape's forward mode: ``N`` nested ``ForwardAccumulator``\\ s, each with the unit tangent of
one variable, give at their k-th level the k-th partial derivative along the first k of
their variables (each accumulator sees the tangent computations of those inside it:
forward over forward). One nest per multi-index of order exactly N (its variables in
order, ``x, x, y``) so gives every partial along a prefix of it, and every multi-index of
a lower order is such a prefix (``x, x`` of ``x, x, y``): ``C(n + N - 1, N)`` nests of
about ``2^N`` times the program's work each, at the point.

sympy's own series is the check: ``f(p + t (v - p))`` expanded in ``t`` to order N
(``sympy.series``) and evaluated at ``t = 1`` is the same polynomial, and its
coefficient of each monomial in ``(v - p)`` is compared with the tape's: relative error
``|tape - sympy| / max(|sympy|, 1)`` at most 1e-9, else exit 1 with both numbers.

The polynomial is printed in gradcli's notation with the tape's coefficients (an integer
as one, others as the shortest float that reads back), in powers of ``(x - p)`` (of
``x`` where p is 0).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..io.report import Page, Report
from . import formulas

TOLERANCE = 1e-9
MAX_ORDER = 8


@dataclass
class Taylor:
    program: str
    at: dict
    order: int
    polynomial: str = ""
    latex: str = ""
    coefficients: list = field(default_factory=list)   # {"powers", "value", "sympy", "rel_err"}
    disagreement: str | None = None
    note: str | None = None
    max_rel_err: float | None = None

    def report(self, latex: bool = False) -> Report:
        """JSON: the point, the order, the polynomial (and its LaTeX), its coefficients
        and how they compare with sympy's series; plain: the polynomial (``latex``: its
        LaTeX)."""
        verified = None if self.max_rel_err is None else {
            "coefficients": len(self.coefficients), "max_rel_err": self.max_rel_err,
            "agrees": self.disagreement is None}
        fields = {"mode": "taylor", "program": self.program, "at": self.at,
                  "order": self.order, "polynomial": self.polynomial, "latex": self.latex,
                  "coefficients": self.coefficients, "verified": verified}
        return Report("taylor", fields,
                      [("polynomial", self.latex if latex else self.polynomial)])

    def page(self, precision: int | None, latex: bool = False) -> Page:
        """The human page: the polynomial, and how its coefficients compare with sympy's
        series."""
        from ..io.text import number_text
        at = ", ".join(f"{n}={number_text(v, precision)}" for n, v in self.at.items())
        lines = [f"Taylor polynomial of order {self.order} at {at}:",
                 f"  {self.latex if latex else self.polynomial}"]
        if self.disagreement:
            lines.append(f"  DISAGREES with sympy's series: {self.disagreement}")
        elif self.note:
            lines.append(f"  {self.note}")
        else:
            lines.append(f"  coefficients from the tape (forward mode); all "
                         f"{len(self.coefficients)} agree with sympy's series, max rel "
                         f"err {number_text(self.max_rel_err, 2)}")
        return Page().verbatim("".join(line + "\n" for line in lines))


def parse_point(texts: list[str]) -> dict:
    """``['x=0,y=1']`` -> {'x': 0.0, 'y': 1.0} (each value a constant of the language)."""
    from ..lang.values import load_value
    point = {}
    for text in texts:
        for part in text.split(","):
            name, _, value = part.partition("=")
            name = name.strip()
            if not name or not value.strip():
                raise InputError(f"--taylor {text!r}: give NAME=VALUE[,NAME=VALUE...]")
            number = np.asarray(load_value(value.strip()), dtype=float)
            if number.shape != () or not np.isfinite(number):
                raise InputError(f"--taylor {name}: one finite number, got {value.strip()!r}")
            point[name] = float(number)
    return point


def _series(sp, job: dict, emit) -> None:
    from ..check.symbolic import job_target
    try:
        f, translated = job_target(job, job["target"])
        t = sp.Dummy("t")
        symbols = [translated.sources[n][()] for n in job["names"]]
        steps = [sp.Dummy(f"h{i}") for i in range(len(symbols))]
        at = [sp.nsimplify(job["at"][n], rational=True) for n in job["names"]]
        moved = f.xreplace({s: a + t * h for s, a, h in zip(symbols, at, steps)})
        poly = sp.series(moved, t, 0, job["order"] + 1).removeO().subs(t, 1)
        poly = sp.Poly(sp.expand(poly), *steps)
        emit("series", ({tuple(m): c for m, c in poly.terms()},))
    except Exception as err:  # noqa: BLE001 - no series: said, never a crash
        emit("series", f"{type(err).__name__}: {err}")


def taylor(text: str, at_texts: list[str], order: int | None, *, var=(), frozen=(), arg=(),
           target=None, timeout: float = 10.0) -> Taylor:
    import sympy as sp

    from ..check import notation
    from ..check.symbolic import run_worker
    from ..engine.core.table import lookup
    order = 3 if order is None else order
    if not 0 <= order <= MAX_ORDER:
        raise InputError(f"--taylor: --order must be between 0 and {MAX_ORDER}, got {order}")
    at = parse_point(at_texts)
    program, model = formulas.prepare(text, var, frozen, arg, target)
    variables, constants = formulas.variables_of(model)
    for name in variables:
        if name not in at and name not in formulas.point_of(model, variables):
            raise InputError(f"--taylor: give {name} a value (--taylor {name}=0)")
    for name in at:
        if name not in variables:
            raise InputError(f"--taylor {name}: not a variable of the program; its "
                             f"variables: {', '.join(variables) or 'none'}")
    names = [n for n in variables if n in at]
    values = {**formulas.point_of(model, variables), **at}
    formulas.at_point(model, values)
    result = Taylor(program=text, at={n: at[n] for n in names}, order=order)
    monomials = [m for k in range(order + 1)
                 for m in itertools.combinations_with_replacement(range(len(names)), k)]
    tape = {}
    with np.errstate(all="ignore"):
        partials = forward_partials(model, names, order)
        for m in monomials:
            powers = tuple(m.count(i) for i in range(len(names)))
            derivative = partials[m]
            if not math.isfinite(derivative):
                raise InputError(f"--taylor: the derivative of order {len(m)} for the "
                                 f"term {_monomial(names, powers)} is {derivative} at the "
                                 "point: no Taylor polynomial there")
            tape[powers] = derivative / math.prod(math.factorial(p) for p in powers)
    job = {"compute": _series, "program": program, "target": model.target_name,
           "point": {**values, **{n: model.source(n).numpy() for n in constants}},
           "names": names, "constants": constants, "at": at, "order": order,
           "lookup": lookup}
    got = run_worker(job, ["series"], timeout)["series"]
    exact = got[0] if isinstance(got, tuple) else None
    if exact is None:
        result.note = ("not checked: sympy's series failed: "
                       f"{getattr(got, 'skipped', None) or got}")
    # (x - 1) as one symbol so that sympy keeps it whole: its name is text built here
    symbols = [sp.Symbol(f"({n} - {_number(at[n])})" if at[n] else n) for n in names]
    terms = []
    worst = 0.0
    for powers, value in tape.items():
        entry = {"powers": dict(zip(names, powers)), "value": value}
        if exact is not None:
            truth = exact.get(powers, sp.Integer(0))
            truth_value = float(truth)
            error = 0.0 if truth_value == value else (
                abs(value - truth_value) / max(abs(truth_value), 1.0))
            entry.update(sympy=str(truth), rel_err=error)
            if not error <= TOLERANCE and result.disagreement is None:
                result.disagreement = (f"the coefficient of {_monomial(names, powers)} is "
                                       f"{value!r} from the tape, {truth} ({truth_value!r}) "
                                       "from sympy's series")
            worst = max(worst, error)
        result.coefficients.append(entry)
        if value != 0:
            number = sp.Integer(int(value)) if float(value).is_integer() else sp.Float(value)
            terms.append(number * sp.Mul(*[s ** p for s, p in zip(symbols, powers)]))
    polynomial = sp.Add(*terms)
    result.polynomial = notation.to_gradcli(polynomial)
    result.latex = notation.to_latex(polynomial)
    result.max_rel_err = worst if exact is not None else None
    return result


def forward_partials(model, names: list[str], order: int) -> dict:
    """Every partial derivative of order 0 to ``order`` of the (bound) model's scalar
    value along ``names``, by nested forward accumulators: {sorted variable indices:
    value}, as (0, 0, 1) for d^3/dx^2dy."""
    from .. import engine as gc
    found: dict = {}

    def level(path: tuple, k: int):
        """The partial along ``path[:k]``, recorded in ``found`` with those inside it."""
        if k == 0:
            value = model.function(*model.arg_values)
        else:
            source = model.source(names[path[k - 1]])
            with gc.ForwardAccumulator(source, np.ones((), source.dtype)) as acc:
                inner = level(path, k - 1)
            value = acc.jvp(inner, unconnected_gradients="zero")
        found[tuple(sorted(path[:k]))] = float(np.asarray(value.numpy()))
        return value

    for path in itertools.combinations_with_replacement(range(len(names)), order):
        level(path, order)
    if order == 0 or not names:
        level((), 0)
    return found


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _monomial(names, powers) -> str:
    parts = [n if p == 1 else f"{n}^{p}" for n, p in zip(names, powers) if p]
    return "*".join(parts) or "1"
