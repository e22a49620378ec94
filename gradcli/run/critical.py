"""``gradcli critical``: the critical points of a scalar program in a box.

- **The box**: every variable is given a range as ``plot`` takes one (``--arg x=-3:3``,
  ``--arg x='linspace(-3, 3, 7)'``: its ends); other declarations keep their values. A
  free name of the program without a range is an error (it would be a variable with no
  box). At most 6 ranged variables.
- **Newton's method on the gradient** from a grid of starts (per variable: 25 for one,
  9 for two, 5 for three, 3 beyond), with the tape's gradient and Hessian (nested
  reverse mode, :func:`gradcli.run.derivatives.hessian`), all starts still running at
  once: a step is one Hessian at all their points (``vectorized_map``, as ``hessian
  --at`` computes rows; 10 calls for Himmelblau's 81 starts, not 514), then each start's
  own step, which solves ``H d = -g`` by least squares (a singular H still gives a
  step). A start that leaves the box (by a tenth of its width) or does not converge
  within 60 steps is dropped. Converged means what ``gradcli hessian`` means by a
  critical point: the gradient within the rounding tolerance of
  :func:`gradcli.run.derivatives.classify`.
- **Once each**: points closer than 1e-6 of the box's size are one point (the first
  found is kept, refined to full precision).
- **Classified** by ``classify``: minimum, maximum, saddle or degenerate, with the
  eigenvalues of the Hessian.
- **sympy** (in the check's worker, ``--solve-timeout`` seconds, default 1, counted from
  the worker's start: it imports sympy and solves while Newton's search runs here, and
  this process never imports sympy): the real solutions of ``grad f = 0``, from the
  Groebner basis when the gradient is polynomial (:func:`polynomial_solutions`), else
  from ``solve``; those inside the box are listed, and ``complete`` says whether every
  one of them is among the numeric points and vice versa (None when sympy gives no
  finite list in time).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, ModeError
from ..io.report import Numbers, Page, Report

MAX_VARIABLES = 6
MAX_STEPS = 60
STARTS_PER_AXIS = {1: 25, 2: 9, 3: 5}
SAME = 1e-6          # of the box's size: closer points are one
EXACT_MATCH = 1e-6   # of the box's size: a numeric point matches an exact solution


@dataclass
class CriticalPoint:
    at: dict
    value: float
    gradient_norm: float
    eigenvalues: list
    verdict: str


@dataclass
class Critical:
    program: str
    variables: list
    box: dict
    points: list = field(default_factory=list)
    exact: list | None = None       # sympy's real solutions in the box (None: not known)
    exact_note: str | None = None
    complete: bool | None = None

    def report(self) -> Report:
        """JSON: the program, the box, each point (where, f, the gradient's norm, the
        eigenvalues, the verdict) and sympy's exact solutions; plain: a line per point,
        the variables' values, f and the verdict."""
        fields = {"mode": "critical", "program": self.program, "variables": self.variables,
                  "box": {n: list(b) for n, b in self.box.items()},
                  "points": [{"at": p.at, "value": p.value, "gradient_norm": p.gradient_norm,
                              "eigenvalues": p.eigenvalues, "verdict": p.verdict}
                             for p in self.points],
                  "exact": self.exact, "complete": self.complete}
        lines = [("point", [Numbers([*p.at.values(), p.value], summarise=False), p.verdict])
                 for p in self.points]
        return Report("critical", fields, lines)

    def page(self, precision: int | None) -> Page:
        """The human page: the box, a line per point (where, f, the verdict and the
        eigenvalues), then what sympy found."""
        from ..io.text import number_text

        def num(v):
            return number_text(v, precision)
        box = ", ".join(f"{n} in [{num(lo)}, {num(hi)}]" for n, (lo, hi) in self.box.items())
        count = len(self.points)
        lines = [f"{count} critical point{'s' if count != 1 else ''} in {box} "
                 "(Newton's method on the gradient, the tape's Hessian):"]
        for p in self.points:
            at = ", ".join(f"{n}={num(v)}" for n, v in p.at.items())
            eig = ", ".join(num(e) for e in p.eigenvalues)
            lines.append(f"  {at}: f={num(p.value)}  {p.verdict} (eigenvalues {eig})")
        if self.exact is None:
            lines.append(f"sympy: {self.exact_note or 'not asked'}; whether the list is "
                         "complete is not known")
        else:
            n = len(self.exact)
            lines.append(f"sympy: {n} exact solution{'s' if n != 1 else ''} of grad f = 0 "
                         f"in the box; the list above is "
                         f"{'complete' if self.complete else 'NOT the same set'}")
        return Page().verbatim("".join(line + "\n" for line in lines))


def split_ranges(arg) -> tuple[dict, list]:
    """(name -> (low, high) for the ranged --arg values, the other --arg texts)."""
    from ..lang.values import parse_declaration
    from .plotting import parse_range
    box, rest = {}, []
    for text in arg or ():
        if "=" not in text:
            rest.append(text)
            continue
        name, value = parse_declaration(text)
        values = parse_range(value, 2) if isinstance(value, str) else None
        if values is None:
            rest.append(text)
            continue
        if name in box:
            raise InputError(f"'{name}' is given twice")
        low, high = float(np.min(values)), float(np.max(values))
        box[name] = (low, high)
    return box, rest


def _starts(box: dict) -> list:
    names = list(box)
    per_axis = STARTS_PER_AXIS.get(len(names), 3)
    axes = []
    for name in names:
        low, high = box[name]
        # cell centres: a start is never on the box's edge, where a symmetric
        # function's critical point on the edge (0 in -3:3) would be a start too
        step = (high - low) / per_axis
        axes.append(low + step * (np.arange(per_axis) + 0.5))
    return [np.array(p) for p in itertools.product(*axes)]


def _newton_step(point, result, low, high):
    """The next Newton iterate from ``point`` (``result``: the Hessian there), or None
    when the start is dropped: the gradient or Hessian is not finite, the step leaves the
    box by a tenth of its width, or the linear solve fails."""
    if result.verdict == "undefined":
        return None
    gradient, matrix = np.asarray(result.gradient), np.asarray(result.hessian)
    try:
        step = np.linalg.lstsq(matrix, -gradient, rcond=None)[0]
    except (np.linalg.LinAlgError, ArithmeticError):
        return None
    point = point + step
    width = high - low
    if np.any(point < low - width / 10) or np.any(point > high + width / 10) \
            or not np.all(np.isfinite(point)):
        return None
    return point


def _newton(model, names, starts, low, high) -> list:
    """Per start, the critical point Newton's method reaches from it, ``(point,
    HessianResult)``, or None. Every start still running steps at once: each step is one
    Hessian at all of their points (one ``vectorized_map`` call, :class:`run.many.
    Evaluator`, the ``--at`` path of ``gradcli hessian``; a row's result is the
    single-point ``hessian`` there), then each start's own Newton step."""
    import functools

    from .derivatives import hessian
    from .many import Evaluator
    evaluate = Evaluator(model, functools.partial(hessian, wrt=names))
    reached: list = [None] * len(starts)
    running = {i: start.astype(np.float64) for i, start in enumerate(starts)}
    for _ in range(MAX_STEPS):
        if not running:
            break
        order = list(running)
        points = np.array([running[i] for i in order])
        value, raw = evaluate({n: points[:, j] for j, n in enumerate(names)})
        for row, i in enumerate(order):
            result = evaluate.meta.at_row(value[row], [r[row] for r in raw])
            if result.critical:
                reached[i] = (running.pop(i), result)
                continue
            following = _newton_step(running[i], result, low, high)
            if following is None:
                del running[i]
            else:
                running[i] = following
    return reached


def find(model, names: list, box: dict) -> list[CriticalPoint]:
    low = np.array([box[n][0] for n in names])
    high = np.array([box[n][1] for n in names])
    size = float(np.max(high - low))
    found: list = []
    with np.errstate(all="ignore"):
        for reached in _newton(model, names, _starts(box), low, high):
            if reached is None:
                continue
            point, result = reached
            if np.any(point < low) or np.any(point > high):
                continue
            if any(np.max(np.abs(point - p)) <= SAME * size for p, _ in found):
                continue
            found.append((point, result))
    points = [CriticalPoint(at=dict(zip(names, map(float, p))),
                            value=float(np.asarray(r.value)),
                            gradient_norm=float(r.gradient_norm),
                            eigenvalues=[float(e) for e in r.eigenvalues],
                            verdict=r.verdict) for p, r in found]
    points.sort(key=lambda c: tuple(c.at.values()))
    return points


# ---------------------------------------------------------------------------------------
# sympy: solve grad f = 0 (in the worker, killed at the time limit)
# ---------------------------------------------------------------------------------------
def _solve(sp, job: dict, emit) -> None:
    from ..check.symbolic import job_target
    try:
        f, translated = job_target(job, job["target"])
        symbols = [translated.sources[n][()] for n in job["names"]]
        gradient = [sp.diff(f, s) for s in symbols]
        real = polynomial_solutions(sp, gradient, symbols)
        if real is None:
            real = solved(sp, gradient, symbols)
        emit("solutions", (real,))
    except Exception as err:  # noqa: BLE001 - no exact set: said, never a crash
        emit("solutions", f"{type(err).__name__}: {err}")


def polynomial_solutions(sp, gradient: list, symbols: list) -> list | None:
    """Every real solution of a polynomial ``gradient = 0`` with isolated solutions, from
    its lex Groebner basis in shape position (``x_i - h_i(t)`` for each symbol but the
    last ``t``, and ``p(t)``): the real roots of ``p``, exact (sympy's ``real_roots``),
    each with its ``h_i`` evaluated to 30 digits. A basis not in that shape (solutions
    that share a coordinate: ``x^2 - 1, y^2 - 1``) is computed again with a separating
    linear form ``t = x_1 + 2 x_2 + ...`` as the last variable, which puts it in shape.
    Himmelblau's cubics take 0.1 s this way, where ``solve`` does not finish in a minute.
    None when the gradient is not polynomial or neither basis is in shape (solutions on
    a curve, or repeated ones): ``solve`` is tried then."""
    if not all(g.is_polynomial(*symbols) for g in gradient):
        return None
    # (a float coefficient as the rational it reads: the basis is then computed exactly)
    gradient = [sp.nsimplify(g, rational=True) if g.has(sp.Float) else g for g in gradient]
    basis = sp.groebner(gradient, *symbols, order="lex")
    if list(basis.exprs) == [1]:
        return []  # (no solution at all, complex ones included)
    names = list(symbols)
    shape = _in_shape(sp, basis.exprs, names)
    if shape is None:
        names.append(sp.Dummy("t"))
        form = sum(k * x for k, x in enumerate(symbols, 1))
        shape = _in_shape(sp, sp.groebner([*gradient, names[-1] - form], *names,
                                          order="lex").exprs, names)
        if shape is None:
            return None
    shapes, last = shape
    t = names[-1]
    real = []
    for root in dict.fromkeys(sp.real_roots(sp.Poly(last, t))):
        at = root.evalf(30)
        values = [float(h.evalf(30, subs={t: at})) for h in shapes] + [float(at)]
        real.append(values[:len(symbols)])  # (not the separating form's value)
    return real


def _in_shape(sp, basis, names: list) -> tuple | None:
    """``([h_1, ...], p)`` of a lex basis ``x_i - h_i(t)``, ``p(t)`` (``t`` the last of
    ``names``), else None."""
    *firsts, last = basis
    t = names[-1]
    if len(firsts) != len(names) - 1 or not last.free_symbols <= {t}:
        return None
    shapes = []
    for x, element in zip(names, firsts):
        linear = sp.Poly(element, x)
        a, b = linear.all_coeffs() if linear.degree() == 1 else (None, None)
        if a is None or a.free_symbols or not (b / a).free_symbols <= {t}:
            return None
        shapes.append(-b / a)
    return shapes, last


def solved(sp, gradient: list, symbols: list) -> list:
    """The real solutions of ``gradient = 0`` by sympy's ``solve``; raises when they are
    not isolated points."""
    real = []
    for solution in sp.solve(gradient, symbols, dict=True):
        if set(solution) != set(symbols):
            raise ValueError("sympy's solutions are not isolated points")
        numbers = [complex(sp.N(solution[s], 30)) for s in symbols]
        if all(abs(z.imag) <= 1e-12 * max(1.0, abs(z.real)) for z in numbers):
            real.append([z.real for z in numbers])
    return real


def solving(program, model, names, constants, point):
    """sympy's ``solve`` of ``grad f = 0`` started in the worker, which imports sympy
    itself (this process never does) while Newton's search runs here: a
    :class:`gradcli.check.symbolic.Worker`, for :func:`exact_solutions`."""
    from ..check.symbolic import Worker
    from ..engine.core.table import lookup
    return Worker({"compute": _solve, "program": program, "point": point,
                   "target": model.target_name, "names": names, "constants": constants,
                   "lookup": lookup})


def exact_solutions(worker, timeout) -> tuple:
    """(sympy's real solutions as lists of floats, None) or (None, why not)."""
    got = worker.results(["solutions"], timeout)["solutions"]
    if isinstance(got, tuple):
        return got[0], None
    return None, f"sympy gave no solutions: {getattr(got, 'skipped', None) or got}"


def critical(text: str, *, var=(), frozen=(), arg=(), target=None,
             solve_timeout: float = 1.0) -> Critical:
    from .formulas import prepare, variables_of
    box, rest = split_ranges(arg)
    if not box:
        raise InputError("critical needs a box: a range for each variable, as plot takes "
                         "them (--arg x=-3:3 --arg y=-3:3)")
    if len(box) > MAX_VARIABLES:
        raise InputError(f"critical: at most {MAX_VARIABLES} ranged variables")
    program, model = prepare(text, var, frozen, list(rest) + list(box), target)
    variables, constants = variables_of(model)
    names = list(box)
    unranged = [n for n in model.arg_names if n not in box and not _has_value(model, n)]
    if unranged:
        raise InputError(f"critical: '{unranged[0]}' has no range: give it one "
                         f"(--arg {unranged[0]}=-3:3) or a value")
    first = {n: (lo + hi) / 2 for n, (lo, hi) in box.items()}
    from .formulas import at_point
    at_point(model, first)
    value = np.asarray(model.function(*model.arg_values).numpy())
    if value.shape != ():
        raise ModeError(f"critical needs a scalar program; its value has shape {value.shape}")
    if value.dtype == bool:
        raise ModeError("critical: the program's value is a comparison (true/false)")
    result = Critical(program=text, variables=names, box=box)
    point = {**first, **{n: model.source(n).numpy() for n in constants},
             **{n: model.source(n).numpy() for n in variables if n not in box}}
    fixed = [n for n in variables if n not in box] + constants
    if solve_timeout <= 0:
        result.points = find(model, names, box)
        return result
    with solving(program, model, names, fixed, point) as worker:
        result.points = find(model, names, box)
        exact, why = exact_solutions(worker, solve_timeout)
    if exact is None:
        result.exact_note = why
    else:
        low = np.array([box[n][0] for n in names])
        high = np.array([box[n][1] for n in names])
        inside = [p for p in exact if np.all(np.array(p) >= low) and
                  np.all(np.array(p) <= high)]
        result.exact = [dict(zip(names, p)) for p in inside]
        result.complete = _same_sets(inside, result.points, names,
                                     float(np.max(high - low)))
    return result


def _has_value(model, name) -> bool:
    try:
        model.source(name)
        return True
    except Exception:  # noqa: BLE001 - declared without a value
        return False


def _same_sets(exact: list, points: list, names: list, size: float) -> bool:
    numeric = [np.array([p.at[n] for n in names]) for p in points]
    close = lambda a, b: np.max(np.abs(np.array(a) - b)) <= EXACT_MATCH * max(size, 1.0)  # noqa: E731
    return (all(any(close(e, p) for p in numeric) for e in exact)
            and all(any(close(e, p) for e in exact) for p in numeric))
