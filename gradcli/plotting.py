"""Sampling a program and its derivatives over a range: the math of ``gradcli plot``.

``sample`` evaluates every point at once with the batching transform
(``gc.vectorized_map``): the program runs once, on a value that holds all the points
and reads as one, so any program (``sum`` over a vector, ``x * mean(x)``, matrix
products) gives each point exactly what it gives alone. Where the transform cannot
batch the program, or a point fails, each point is evaluated on its own (a loop in this
process).

Higher derivatives come from nested tapes (the engine's rules are written in its own ops).

>>> import numpy as np
>>> from gradcli.lang import parse_program, Declarations, build
>>> program = parse_program("x^3")
>>> make = lambda text: build(program, Declarations.from_options(arg=[f"x={text}"]))
>>> table, how = sample(make, "x", np.linspace(-1, 1, 3), order=2)
>>> how, [column.tolist() for column in table]
('vectorised', [[-1.0, 0.0, 1.0], [3.0, 0.0, 3.0], [-6.0, 0.0, 6.0]])
"""
from __future__ import annotations

import re
from contextlib import ExitStack

import numpy as np

from . import engine as gc
from .engine.tensor import Batched
from .errors import GradcliError, InputError

__all__ = ["critical_points", "parse_range", "points_of_interest", "range_text", "sample",
           "sample_grid", "sample_mode"]

_RANGE = re.compile(r"^\s*([^:]+?)\s*:\s*([^:]+?)\s*$")


def parse_range(text: str, points: int):
    """``a:b`` -> ``points`` evenly spaced values from a to b; ``linspace(a, b, n)`` -> its
    values; anything else -> None (an ordinary value). The ends are constant expressions
    of the language (``-pi:pi``), evaluated by its safe parser."""
    from .lang.values import load_value
    stripped = text.strip()
    if stripped.startswith("linspace("):
        values = np.asarray(load_value(stripped), dtype=float).ravel()
    else:
        match = _RANGE.match(stripped)
        if match is None or stripped.startswith("@"):
            return None
        a, b = (float(load_value(part)) for part in match.groups())
        if not (np.isfinite(a) and np.isfinite(b)) or a == b:
            raise InputError(f"range {text!r}: the ends must be finite and different")
        values = np.linspace(a, b, points)
    if values.size < 2:
        raise InputError(f"range {text!r}: at least 2 points are needed")
    return values


def range_text(values: np.ndarray) -> str:
    """The declaration text that makes exactly these points: the numbers in a list."""
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def _derivatives(model, name: str, order: int, value=None) -> list[np.ndarray]:
    """[f, f', ..., f^(order)] at the model's value of ``name`` (or at ``value``)."""
    return [np.asarray(c.numpy(), dtype=float)
            for c in _derivative_tensors(model, name, order, value)]


def _derivative_tensors(model, name: str, order: int, value=None) -> list:
    """``_derivatives`` as tensors; ``value`` may be a batched value of
    ``vectorized_map`` (the tensors are then batched too)."""
    kind = model.kinds.get(name)
    args = list(model.arg_values)
    with ExitStack() as stack:
        tapes = [stack.enter_context(gc.GradientTape()) for _ in range(order)]
        if kind == "arg":
            i = model.arg_names.index(name)
            if value is not None:
                args[i] = value if isinstance(value, Batched) else gc.constant(
                    value, dtype=model.dtype)
            x = args[i]
        else:
            x = model.source(name)
            if value is not None:
                x.assign(value)
        for tape in tapes:
            tape.watch(x)
        y = model.function(*args)
        out = [y]
        current = y
        for k in range(order):
            # the innermost tape differentiates first, while the outer ones still record
            current = tapes[order - 1 - k].gradient(current, x) if current is not None else None
            out.append(gc.constant(np.zeros(np.shape(x))) if current is None else current)
    return out


def _at_point(model, name, order, x) -> list[float]:
    try:
        column = _derivatives(model, name, order, x)
    except GradcliError:
        return [float("nan")] * (order + 1)
    if any(np.size(c) != 1 for c in column):
        raise InputError(f"plot needs a scalar target; at {name} = {x!r} the target has "
                         f"shape {np.shape(column[0])} (reduce it, e.g. sum(...))")
    return [float(np.reshape(c, ())) for c in column]


def sample(make_model, name: str, xs: np.ndarray, order: int = 1):
    """f and its derivatives up to ``order`` with respect to ``name`` at every point of
    ``xs``: ``([f, f', ...], how)`` with ``how`` "vectorised" or "loop".

    ``make_model(text)`` builds the program with ``name`` declared as ``text`` (a number,
    or a list holding every point)."""
    xs = np.asarray(xs, dtype=float)
    single = make_model(repr(float(xs[0])))
    try:
        with np.errstate(all="ignore"):
            table = _batched_derivatives(single, name, order, xs)
        if all(np.shape(c) == xs.shape for c in table):  # else: not a scalar target
            return table, "vectorised"
    except (GradcliError, ValueError):
        pass  # not batchable, or a point fails: each point alone says how
    single = make_model(repr(float(xs[0])))
    with np.errstate(all="ignore"):
        rows = [_at_point(single, name, order, x) for x in xs]
    return [np.array(col) for col in zip(*rows)], "loop"


def _batched_derivatives(model, name: str, order: int, xs: np.ndarray) -> list[np.ndarray]:
    """``_derivatives`` at every point of ``xs`` at once, by ``vectorized_map`` (a
    ``ValueError`` where it would fall back to a loop)."""
    from .engine.batching import vectorized_map
    kind = model.kinds.get(name)

    def at(x):
        if kind == "arg":
            return _derivative_tensors(model, name, order, x)
        # a variable: one per point, in the declared one's place for this call
        declared = model.source(name)
        batched = gc.Variable(x, trainable=declared.trainable, name=declared.name)
        outside = name in model._base_env
        model._variables[name] = batched
        if outside:
            model._base_env[name] = batched
        try:
            return _derivative_tensors(model, name, order)
        finally:
            model._variables[name] = declared
            if outside:
                model._base_env[name] = declared
    columns = vectorized_map(at, gc.constant(xs, dtype=model.dtype),
                             fallback_to_while_loop=False)
    return [np.asarray(c.numpy(), dtype=float) for c in columns]


def points_of_interest(xs, table) -> list[tuple[str, float, float]]:
    """(kind, x, f(x)) for: zeros of f' (a sign change between samples, x by linear
    interpolation; "minimum"/"maximum"/"f' = 0"), non-finite f, jumps of f
    ("discontinuity") and jumps of f' ("kink"), found by ``_jumps``."""
    xs = np.asarray(xs, dtype=float)
    f = table[0]
    found = []
    bad = ~np.isfinite(f)
    for i in np.flatnonzero(bad & ~np.concatenate([[False], bad[:-1]])):
        found.append(("non-finite", float(xs[i]), float(f[i])))
    jumps = {}
    for column, kind in ((f, "discontinuity"), (table[1] if len(table) > 1 else None, "kink")):
        if column is None:
            continue
        for x in _jumps(xs, column):
            if kind == "discontinuity" or x not in jumps:
                jumps[x] = kind
    found += [(kind, x, float(np.interp(x, xs, f))) for x, kind in jumps.items()]
    if len(table) > 1:
        d = table[1]
        for i in range(len(xs) - 1):
            a, b = d[i], d[i + 1]
            if not (np.isfinite(a) and np.isfinite(b)):
                continue
            if a == 0.0 and (i == 0 or d[i - 1] != 0.0):
                x = float(xs[i])
            elif a * b < 0:
                x = float(xs[i] - a * (xs[i + 1] - xs[i]) / (b - a))
            else:
                continue
            kind = "minimum" if a < 0 < b else "maximum" if a > 0 > b else "f' = 0"
            fx = float(np.interp(x, xs, f))
            found.append((kind, x, fx))
    found.sort(key=lambda entry: entry[1])
    return found


def _jumps(xs, column) -> list[float]:
    """Where ``column`` jumps: a change between neighbouring samples more than 10 times
    the changes two samples away on either side and more than 1e-6 of the largest value
    (a smooth function sampled finely changes by about the same amount from one step to
    the next); the two samples at each end are not judged. A jump between two samples is
    reported at their midpoint; one at a sample (two big steps in a row) at that sample."""
    steps = np.abs(np.diff(column))
    if len(steps) < 9:  # too few samples to tell a jump from a steep smooth change
        return []
    finite = column[np.isfinite(column)]
    floor = 1e-6 * max(float(np.max(np.abs(finite))) if finite.size else 0.0, 1.0)
    flagged = []
    for i, step in enumerate(steps):
        if i < 2 or i + 2 >= len(steps):  # both sides are needed to call it a jump
            continue
        around = (steps[i - 2], steps[i + 2])
        if np.isfinite(step) and step > floor and all(np.isfinite(around)) \
                and step > 10 * max(around):
            flagged.append(i)
    out, k = [], 0
    while k < len(flagged):
        i = flagged[k]
        if k + 1 < len(flagged) and flagged[k + 1] == i + 1:
            out.append(float(xs[i + 1]))
            k += 2
        else:
            out.append(float((xs[i] + xs[i + 1]) / 2))
            k += 1
    return out


# ---------------------------------------------------------------------------------------
# Another mode's gradients, and two ranged values (a grid)
# ---------------------------------------------------------------------------------------
def _set_value(model, name: str, value) -> None:
    """Bind ``name`` (a declared argument or variable) to ``value`` for the next runs."""
    if model.kinds.get(name) == "arg":
        model.arg_values[model.arg_names.index(name)] = gc.constant(value, dtype=model.dtype)
    else:
        model.source(name).assign(value)


def sample_mode(make_model, name: str, xs: np.ndarray, mode: str):
    """f and the gradients one mode (tape, grad, implicit, value-grad) returns, at each
    point in turn: ``([f, g1, g2, ...], [source names])``. A tape also watches the ranged
    name, so that its derivative is among the curves. Each gradient must be one number."""
    from .modes import ModeOptions, run_mode
    model = make_model(repr(float(xs[0])))
    options = ModeOptions(watch=[name] if mode == "tape" else None)
    columns, names = [], None
    for x in xs:
        _set_value(model, name, x)
        try:
            outcome = run_mode(mode, model, options)
            value = outcome.value
            if value is None:
                value = model.function(*model.arg_values).numpy()
            grads = [(g.name, g.gradient) for g in outcome.gradients]
        except (GradcliError, ValueError, ArithmeticError):
            if names is None:
                raise
            columns.append([float("nan")] * (len(names) + 1))
            continue
        if names is None:
            names = [g for g, _ in grads]
        for source, g in grads:
            if g is not None and np.size(g) != 1:
                raise InputError(f"plot draws one number per point: the {mode} gradient "
                                 f"for '{source}' has shape {np.shape(g)}")
        if np.size(value) != 1:
            raise InputError(f"plot needs a scalar target; it has shape {np.shape(value)}")
        columns.append([float(np.reshape(value, ()))]
                       + [0.0 if g is None else float(np.reshape(g, ())) for _, g in grads])
    return [np.array(c) for c in zip(*columns)], names


def _value_and_gradients(model, names, values=None) -> list[np.ndarray]:
    """[f, df/dname1, df/dname2, ...] at the model's values (or at ``values``)."""
    args = list(model.arg_values)
    sources = []
    with gc.GradientTape() as tape:
        for k, name in enumerate(names):
            if model.kinds.get(name) == "arg":
                i = model.arg_names.index(name)
                if values is not None:
                    args[i] = gc.constant(values[k], dtype=model.dtype)
                sources.append(args[i])
            else:
                sources.append(model.source(name))
                if values is not None:
                    sources[-1].assign(values[k])
            tape.watch(sources[-1])
        y = model.function(*args)
    grads = tape.gradient(y, sources)
    return [np.asarray(y.numpy(), dtype=float)] + [
        np.zeros(np.shape(s)) if g is None else np.asarray(g.numpy(), dtype=float)
        for g, s in zip(grads, sources)]


def sample_grid(make_model, names, axes):
    """f and its gradient on the grid of two ranged values: ``([F, dF/dx, dF/dy], how)``,
    each of shape (len(axes[1]), len(axes[0])) -- rows follow the second name, as
    ``numpy.meshgrid``. ``make_model(texts)`` takes one declaration text per name.
    Evaluated at once where the program is elementwise in both (checked at three
    points, as ``sample``), else point by point."""
    grid = np.meshgrid(*axes)
    flat = [g.ravel() for g in grid]
    single = make_model([repr(float(a[0])) for a in axes])

    def at_point(point):
        try:
            out = _value_and_gradients(single, names, point)
        except GradcliError:
            return [float("nan")] * (len(names) + 1)
        if any(np.size(c) != 1 for c in out):
            raise InputError("plot needs a scalar target; it has shape "
                             f"{np.shape(out[0])} (reduce it, e.g. sum(...))")
        return [float(np.reshape(c, ())) for c in out]

    table = None
    try:
        with np.errstate(all="ignore"):
            table = _value_and_gradients(make_model([range_text(f) for f in flat]), names)
        if any(np.shape(c) != flat[0].shape for c in table):
            table = None
    except GradcliError:
        table = None
    if table is not None:
        for i in sorted({0, flat[0].size // 2, flat[0].size - 1}):
            with np.errstate(all="ignore"):
                expected = at_point([f[i] for f in flat])
            if not np.allclose([c[i] for c in table], expected, rtol=1e-9, atol=1e-12,
                               equal_nan=True):
                table = None
                break
    how = "vectorised"
    if table is None:
        how = "loop"
        with np.errstate(all="ignore"):
            rows = [at_point(point) for point in zip(*flat)]
        table = [np.array(c) for c in zip(*rows)]
    return [np.reshape(c, grid[0].shape) for c in table], how


def critical_points(axes, table) -> list[tuple[str, float, float, float]]:
    """("critical point", x, y, f) where both partial derivatives change sign among a grid
    cell's four corners and their planes fitted to the corners cross inside the cell (a
    curved valley makes both change sign in cells where they do not both vanish);
    neighbouring such cells (a point on a grid line or corner is in
    up to four) are one point, at the mean of their centres, with f there interpolated
    as the mean of their corners."""
    xs, ys = axes
    f, gx, gy = table
    cells = []
    for r in range(len(ys) - 1):
        for c in range(len(xs) - 1):
            cell = (slice(r, r + 2), slice(c, c + 2))
            a, b = gx[cell], gy[cell]
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                continue
            if a.min() <= 0 <= a.max() and b.min() <= 0 <= b.max() \
                    and a.min() < a.max() and b.min() < b.max() \
                    and _zero_in_cell(xs[c:c + 2], ys[r:r + 2], a, b):
                cells.append((r, c))
    groups: list[list] = []
    for r, c in cells:
        home = [g for g in groups if any(abs(r - r2) <= 1 and abs(c - c2) <= 1 for r2, c2 in g)]
        merged = [cell for g in home for cell in g] + [(r, c)]
        groups = [g for g in groups if g not in home] + [merged]
    found = []
    for group in groups:
        x = float(np.mean([(xs[c] + xs[c + 1]) / 2 for _, c in group]))
        y = float(np.mean([(ys[r] + ys[r + 1]) / 2 for r, _ in group]))
        value = float(np.mean([np.mean(f[r:r + 2, c:c + 2]) for r, c in group]))
        found.append(("critical point", x, y, value))
    return sorted(found, key=lambda p: (p[1], p[2]))


def _zero_in_cell(xs, ys, a, b) -> bool:
    """Whether the planes fitted (least squares) to the two gradients at a cell's corners
    vanish together inside the cell (with a quarter-cell margin)."""
    dx, dy = np.meshgrid(xs - xs[0], ys - ys[0])
    design = np.column_stack([np.ones(4), dx.ravel(), dy.ravel()])
    pa = np.linalg.lstsq(design, a.ravel(), rcond=None)[0]
    pb = np.linalg.lstsq(design, b.ravel(), rcond=None)[0]
    matrix = np.array([pa[1:], pb[1:]])
    if abs(np.linalg.det(matrix)) < 1e-300:
        return False
    u, v = np.linalg.solve(matrix, -np.array([pa[0], pb[0]]))
    w, h = xs[1] - xs[0], ys[1] - ys[0]
    return -0.25 * w <= u <= 1.25 * w and -0.25 * h <= v <= 1.25 * h


def _gradient_and_hessian(model, names, point):
    """The gradient and the Hessian of f at ``point`` (nested tapes on the engine)."""
    sources = []
    args = list(model.arg_values)
    with gc.GradientTape(persistent=True) as outer:
        for k, name in enumerate(names):
            if model.kinds.get(name) == "arg":
                i = model.arg_names.index(name)
                args[i] = gc.constant(point[k], dtype=model.dtype)
                sources.append(args[i])
            else:
                sources.append(model.source(name))
                sources[-1].assign(point[k])
            outer.watch(sources[-1])
        with gc.GradientTape() as inner:
            for source in sources:
                inner.watch(source)
            y = model.function(*args)
        grads = inner.gradient(y, sources)
    grads = [g if g is not None else gc.constant(0.0) for g in grads]
    hessian = [[0.0 if h is None else float(h.numpy()) for h in outer.gradient(g, sources)]
               for g in grads]
    return np.array([float(g.numpy()) for g in grads]), np.array(hessian)


def refine_critical(model, names, axes, candidates, iterations: int = 30):
    """Newton's method from each candidate of ``critical_points``: keeps those that
    converge (gradient norm below 1e-9 of the gradient's scale on the grid, or 1e-12)
    inside the plotted box, once each, classified by the Hessian's eigenvalues
    ("minimum", "maximum", "saddle", or "critical point" when one is zero)."""
    lo = np.array([a[0] for a in axes])
    hi = np.array([a[-1] for a in axes])
    cell = (hi - lo) / np.array([len(a) - 1 for a in axes])
    found = []
    for _, *start, _ in candidates:
        point = np.array(start, dtype=float)
        try:
            with np.errstate(all="ignore"):
                g, h = _gradient_and_hessian(model, names, point)
                scale = max(1e-12, 1e-9 * max(1.0, np.abs(h).max() * np.abs(cell).max()))
                for _ in range(iterations):
                    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
                        break
                    if np.linalg.norm(g) <= scale:
                        break
                    point = point - np.linalg.lstsq(h, g, rcond=None)[0]
                    g, h = _gradient_and_hessian(model, names, point)
        except (GradcliError, np.linalg.LinAlgError):
            continue
        inside = np.all(point >= lo - cell / 2) and np.all(point <= hi + cell / 2)
        if not (inside and np.linalg.norm(g) <= scale):
            continue
        if any(np.all(np.abs(point - np.array(p[1:3])) < cell) for p in found):
            continue
        eig = np.linalg.eigvalsh((h + h.T) / 2)
        kind = ("minimum" if eig.min() > 0 else "maximum" if eig.max() < 0
                else "saddle" if eig.min() < 0 < eig.max() else "critical point")
        value = float(np.reshape(_value_and_gradients(model, names, point)[0], ()))
        found.append((kind, float(point[0]), float(point[1]), value))
    return found
