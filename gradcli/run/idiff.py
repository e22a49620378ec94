"""``gradcli idiff``: implicit differentiation of an equation, as formulas.

``'x^3 + y^3 = 6*x*y' --dep y --wrt x`` is ``F(x, y) = 0`` with ``F = lhs - rhs``; ``y``
is a function of ``x`` along the curve, and dy/dx = -F_x / F_y (the implicit function
theorem, where F_y != 0). ``=`` is allowed only here: the text is split at its one
``=`` that is not part of ``==``, ``<=``, ``>=`` or ``!=``, and each side is parsed by
gradcli's parser as an expression.

- sympy (in the check's worker): ``sympy.idiff(F, y, x, n)`` for ``--order n`` (1 or
  2), simplified and printed as ``gradcli diff`` does (:mod:`gradcli.run.formulas`).
- Verification against the tape at random points (x, y) where F_y is not 0: the
  formula, as a function of x and y, must equal -F_x/F_y for order 1, and
  ``-(F_xx + 2 F_xy y' + F_yy y'^2) / F_y`` with ``y' = -F_x/F_y`` for order 2, with
  the partials of F from nested tapes. (These identities hold off the curve too: they
  are how both sides are derived, so any (x, y) tests the printed formula.)
- A point (``--arg x=3 --arg y=3``) must lie on the curve: ``|F| <= 1e-9 * max(1,
  |lhs|, |rhs|)``, else exit 2 saying how far off it is; the formulas' values there are
  printed.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import InputError
from . import formulas

MAX_ORDER = 2
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
    """Worker: sympy's idiff of the equation's F, for each order asked."""
    from ..check.symbolic import job_target
    try:
        f, translated = job_target(job)
        dep, wrt = (translated.sources[n][()] for n in (job["dep"], job["wrt"]))
        for key, order in enumerate(job["orders"]):
            emit(str(key), (sp.idiff(f, dep, wrt, order),))
    except Exception as err:  # noqa: BLE001 - one message, never a traceback
        for key in range(len(job["orders"])):
            emit(str(key), f"{type(err).__name__}: {err}")


def _tape_truth(model, dep: str, wrt: str, order: int) -> float:
    """dy/dx (or d2y/dx2) of the implicit function, from the tape's partials of F."""
    partial = lambda *path: formulas.tape_partial(model, path, None)  # noqa: E731
    fx, fy = partial(wrt), partial(dep)
    slope = -fx / fy
    if order == 1:
        return slope
    fxx, fxy, fyy = partial(wrt, wrt), partial(wrt, dep), partial(dep, dep)
    return -(fxx + 2 * fxy * slope + fyy * slope * slope) / fy


def idiff(text: str, *, dep: str, wrt: str, order: int = 1, var=(), frozen=(), arg=(),
          budget: float = 2.0, raw: bool = False) -> formulas.Formulas:
    if not 1 <= order <= MAX_ORDER:
        raise InputError(f"idiff: --order must be 1 or 2, got {order}")
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
    forms = formulas.raw_and_simplified(job, len(orders), budget, raw, "idiff")
    with np.errstate(all="ignore"):
        rows = _rows(model, variables, dep, wrt, orders, low_high, given)
        result = formulas.Formulas(program=text, variables=variables, point=given)
        for index, (k, candidates) in enumerate(zip(orders, forms)):
            derivative = formulas.Derivative(wrt=(wrt,) * k)
            formulas.settle(derivative, candidates, rows, variables, index, raw)
            if derivative.printable and all(n in given for n in variables):
                derivative.value = formulas.formula_value(
                    formulas.formula_model(derivative.formula, variables), given)
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
