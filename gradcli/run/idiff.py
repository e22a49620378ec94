"""``gradcli idiff``: implicit differentiation of an equation, as formulas.

``'x^3 + y^3 = 6*x*y' --dep y --wrt x`` is ``F(x, y) = 0`` with ``F = lhs - rhs``; ``y``
is a function of ``x`` along the curve, and dy/dx = -F_x / F_y (the implicit function
theorem, where F_y != 0). ``=`` is allowed only here: the text is split at its one
``=`` that is not part of ``==``, ``<=``, ``>=`` or ``!=``, and each side is parsed by
gradcli's parser as an expression.

- sympy (in the check's worker): repeated implicit differentiation
  (:func:`implicit_derivatives`) for each order ``k`` up to ``--order n`` (1 to
  :data:`MAX_ORDER`: the formulas grow about threefold per order),
  simplified and printed as ``gradcli diff`` does (:mod:`gradcli.run.formulas`).
- Verification against the tape at random points (x, y) where F_y is not 0: the k-th
  formula, as a function of x and y, must equal ``g_k`` with ``g_1 = -F_x/F_y`` and
  ``g_k = d g_(k-1)/dx + d g_(k-1)/dy * g_1`` (differentiating along the curve, y a
  function of x), each partial by a tape nested inside the ones of the next order up
  (:func:`tape_derivative`). (These identities hold off the curve too: they are how
  both sides are derived, so any (x, y) tests the printed formula.)
- A point (``--arg x=3 --arg y=3``) must lie on the curve: ``|F| <= 1e-9 * max(1,
  |lhs|, |rhs|)``, else exit 2 saying how far off it is; the derivatives' values there
  are the tape's (and each formula is checked there too).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import InputError
from . import formulas

#: The highest --order: sympy's formulas of order 6 already run to hundreds of
#: operations (the folium's d^6y/dx^6: 700 before simplifying).
MAX_ORDER = 6
ON_CURVE = 1e-9
_EQUALS = re.compile(r"(?<![=<>!])=(?!=)")


def split_equation(text: str) -> tuple[str, str]:
    """``'lhs = rhs'`` -> (lhs, rhs): exactly one ``=`` outside ``==``/``<=``/``>=``/``!=``."""
    parts = _EQUALS.split(text)
    if len(parts) != 2:
        raise InputError("idiff needs one equation: LEFT = RIGHT (as 'x^3 + y^3 = 6*x*y'), "
                         f"with one '='; found {len(parts) - 1}")
    left, right = (part.strip() for part in parts)
    if not left or not right:
        raise InputError("idiff: both sides of '=' need an expression")
    return left, right


def _expression(side: str, which: str):
    from ..lang import parse_program
    from ..lang.tree import ExprStatement
    program = parse_program(side)
    if len(program.statements) != 1 or not isinstance(program.statements[0], ExprStatement):
        raise InputError(f"idiff: the {which} side of '=' must be one expression")
    return program


def _implicit(sp, job: dict, emit) -> None:
    """Worker: the implicit derivatives of the equation's F, each order as it comes."""
    from ..check.symbolic import job_target
    try:
        f, translated = job_target(job)
        dep, wrt = (translated.sources[n][()] for n in (job["dep"], job["wrt"]))
        for key, formula in enumerate(implicit_derivatives(sp, f, dep, wrt,
                                                           len(job["orders"]))):
            emit(str(key), (formula,))
    except Exception as err:  # noqa: BLE001 - one message, never a traceback
        for key in range(len(job["orders"])):
            emit(str(key), f"{type(err).__name__}: {err}")


def implicit_derivatives(sp, f, y, x, n: int):
    """d^k y/dx^k for k = 1..n along ``f(x, y) = 0``, by repeated implicit
    differentiation, each as ``N_k / F_y^(2k-1)``: with ``D = F_y``, the derivative
    along the curve of ``h(x, y)`` is ``(D h_x - F_x h_y) / D``, so ``N_1 = -F_x`` and
    ``N_(k+1) = D (D N_x - F_x N_y) - (2k-1) N (D D_x - F_x D_y)`` (expanded: sympy's
    ``idiff`` solves for each order instead, and took over 10 s for the folium's 6th)."""
    fx, d = sp.diff(f, x), sp.diff(f, y)
    dx, dy = sp.diff(d, x), sp.diff(d, y)
    numerator = -fx
    for k in range(1, n + 1):
        if k > 1:
            m = 2 * k - 3
            numerator = sp.expand(d * (d * sp.diff(numerator, x) - fx * sp.diff(numerator, y))
                                  - m * numerator * (d * dx - fx * dy))
        yield numerator / d ** (2 * k - 1)


def tape_derivative(model, dep: str, wrt: str, order: int):
    """The ``order``-th derivative of the implicit function at the bound point, as a
    tensor the tapes of the orders above record: ``g_1 = -F_x/F_y``, ``g_k = g_(k-1)_x
    + g_(k-1)_y g_1``, each pair of partials by a tape around the order below."""
    from .. import engine as gc
    x, y = model.source(wrt), model.source(dep)
    with gc.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch([x, y])
        if order == 1:
            inner = model.function(*model.arg_values)
        else:
            inner = tape_derivative(model, dep, wrt, order - 1)
        along_x, along_y = tape.gradient(inner, [x, y], unconnected_gradients="zero")
    if order == 1:
        return -along_x / along_y
    return along_x + along_y * tape_derivative(model, dep, wrt, 1)


def _tape_truth(model, dep: str, wrt: str, order: int) -> float:
    return float(np.asarray(tape_derivative(model, dep, wrt, order).numpy()))


def idiff(text: str, *, dep: str, wrt: str, order: int = 1, var=(), frozen=(), arg=(),
          budget: float = 2.0, raw: bool = False) -> formulas.Formulas:
    if not 1 <= order <= MAX_ORDER:
        raise InputError(f"idiff: --order must be between 1 and {MAX_ORDER}, got {order}")
    left, right = split_equation(text)
    _expression(left, "left")
    _expression(right, "right")
    combined = f"({left}) - ({right})"
    program, model = formulas.prepare(combined, var, frozen, arg)
    variables, constants = formulas.variables_of(model)
    for name, option in ((dep, "--dep"), (wrt, "--wrt")):
        if name not in variables:
            raise InputError(f"idiff: {option} {name}: not a variable of the equation; its "
                             f"variables: {', '.join(variables) or 'none'}")
    if dep == wrt:
        raise InputError("idiff: --dep and --wrt must be different variables")
    given = formulas.point_of(model, variables)
    low_high = formulas.sample_range(program)
    rng = np.random.default_rng(formulas.SEED)
    start = {n: given.get(n, float(rng.uniform(*low_high))) for n in variables}
    formulas.at_point(model, start)
    value = np.asarray(model.function(*model.arg_values).numpy())
    if value.shape != () or value.dtype == bool:
        raise InputError("idiff: each side of the equation must be a number (a scalar)")
    if all(n in given for n in variables):
        formulas.at_point(model, given)
        off = float(np.asarray(model.function(*model.arg_values).numpy()))
        _check_on_curve(off, left, right, given, variables)
    from ..engine.core.table import lookup
    point = {**start, **{n: model.source(n).numpy() for n in constants}}
    orders = list(range(1, order + 1))
    job = {"compute": _implicit, "program": program, "point": point, "names": variables,
           "constants": constants, "dep": dep, "wrt": wrt, "orders": orders,
           "lookup": lookup}

    def points():  # (the tape at the check's points, while sympy simplifies)
        with np.errstate(all="ignore"):
            return _rows(model, variables, dep, wrt, orders, low_high, given)
    forms, rows = formulas.raw_and_simplified(job, len(orders), budget, raw, "idiff", points)
    with np.errstate(all="ignore"):
        result = formulas.Formulas(program=text, variables=variables, point=given)
        for index, (k, candidates) in enumerate(zip(orders, forms)):
            derivative = formulas.Derivative(wrt=(wrt,) * k)
            formulas.settle(derivative, candidates, rows, variables, index, raw)
            if rows and all(n in given for n in variables) and rows[0]["at"] == given:
                derivative.value = rows[0]["tape"][index]  # (the given point: the first)
            result.derivatives.append(derivative)
    return result


def _check_on_curve(off: float, left: str, right: str, given: dict, variables: list) -> None:
    """Refuse a point off the curve: ``off`` is lhs - rhs there (the tape's value)."""
    sides = []
    for side in (left, right):
        try:
            sides.append(formulas.formula_value(formulas.formula_model(side, variables),
                                                given))
        except Exception:  # noqa: BLE001 - a side reading a constant: scale 1
            sides.append(0.0)
    scale = max(1.0, *(abs(v) for v in sides if math.isfinite(v)))
    if not math.isfinite(off) or abs(off) > ON_CURVE * scale:
        at = ", ".join(f"{n}={v!r}" for n, v in given.items())
        raise InputError(f"idiff: the point {at} is not on the curve: left - right = "
                         f"{off!r} there (allowed: {ON_CURVE:g} of the sides' size)")


def _rows(model, variables, dep, wrt, orders, low_high, given) -> list:
    """Random points (and the given one) where F_y != 0 and the tape's values are finite."""
    rng = np.random.default_rng(formulas.SEED)
    draws = ([dict(given)] if all(n in given for n in variables) else []) + [
        {n: float(rng.uniform(*(low_high if i % 2 == 0 else formulas.WIDE)))
         for n in variables} for i in range(formulas.DRAWS)]
    rows = []
    for values in draws:
        if len(rows) >= formulas.POINTS:
            break
        try:
            formulas.at_point(model, values)
            truth = [_tape_truth(model, dep, wrt, k) for k in orders]
        except Exception:  # noqa: BLE001 - outside the domain: draw another
            continue
        if all(math.isfinite(t) for t in truth):
            rows.append({"at": values, "tape": truth})
    return rows
