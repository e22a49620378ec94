"""Sampling a program and its derivatives over a range: the math of ``gradcli plot``.

Every sampling function here evaluates the points a chunk at a time with the batching
transform (``gc.vectorized_map``, ``CHUNK_POINTS`` points per call): the program runs once
per chunk, on values that hold all its points and read as one (``Model.bind``), so any
program (``sum`` over a vector, ``x * mean(x)``, matrix products) gives each point exactly
what it gives alone, and memory stays bounded whatever the number of points. Where the
transform cannot batch the program, or a point fails, points are evaluated on their own
(at most ``MAX_SINGLE_POINTS`` of them: past that the plot is refused rather than left to
run for minutes).

Higher derivatives come from nested tapes (the engine's rules are written in its own ops).

>>> import numpy as np
>>> from gradcli.lang import parse_program, Declarations, build
>>> declarations = Declarations()
>>> _ = declarations.add("arg", "x", -1.0)
>>> model = build(parse_program("x^3"), declarations)
>>> table, how = sample(model, "x", np.linspace(-1, 1, 3), order=2)
>>> how, [column.tolist() for column in table]
('vectorised', [[-1.0, 0.0, 1.0], [3.0, 0.0, 3.0], [-6.0, 0.0, 6.0]])
"""
from __future__ import annotations

import re
from contextlib import ExitStack

import numpy as np

from .. import engine as gc
from ..errors import ChunkTooLarge, GradcliError, InputError, LimitError
from ..io.report import Numbers, Page, Report

__all__ = ["critical_points", "parse_range", "marked_points", "sample", "sample_grid",
           "sample_mode", "check_size", "plot_program", "find_ranges", "column_names", "Plot",
           "MAX_CURVE_POINTS", "MAX_GRID_POINTS",
           "MAX_SINGLE_POINTS", "MAX_MARKED_CRITICAL"]

#: Points of one curve (``--points``, or the count of a ``linspace(a, b, n)`` range).
MAX_CURVE_POINTS = 100_000
#: Points of a contour grid (the points per axis, squared): 500 x 500. The largest grid
#: of a simple program (``x^2 + y``) takes about 3 s with --json or --csv (printing 1.25
#: million numbers is most of it), about 2 s drawn in the terminal.
MAX_GRID_POINTS = 250_000
#: Points per ``vectorized_map`` call: bounds the memory of one call (a chunk that goes
#: over the limits of one evaluation, ``ChunkTooLarge``, is computed in halves).
CHUNK_POINTS = 1 << 16
#: Points evaluated on their own (where the transform cannot batch the program, or points
#: fail: a failing chunk is cut in halves down to ``_ALONE`` points, which go one by one).
#: One point of a simple program takes 0.1 to 0.3 ms, so these take a few seconds at most.
MAX_SINGLE_POINTS = 10_000
_ALONE = 32
#: Critical points of a contour plot refined by Newton's method and marked: more are not
#: marked (a note says so), as each refinement costs up to 30 Hessians.
MAX_MARKED_CRITICAL = 100

_RANGE = re.compile(r"^\s*([^:]+?)\s*:\s*([^:]+?)\s*$")


def parse_range(text: str, points: int):
    """``a:b`` -> ``points`` evenly spaced values from a to b; ``linspace(a, b, n)`` -> its
    values; anything else -> None (an ordinary value). The ends are constant expressions
    of the language (``-pi:pi``), evaluated by its safe parser."""
    from ..lang.values import load_value
    stripped = text.strip()
    if stripped.startswith("linspace("):
        values = np.asarray(load_value(stripped), dtype=float).ravel()
        if not np.all(np.isfinite(values)):
            raise InputError(f"range {text!r}: its points are not all finite numbers (the "
                             "span overflows float64); write it as a:b")
    else:
        match = _RANGE.match(stripped)
        if match is None or stripped.startswith("@"):
            return None
        ends = [np.asarray(load_value(part), dtype=float) for part in match.groups()]
        if any(end.size != 1 for end in ends):
            raise InputError(f"range {text!r}: each end must be one number")
        a, b = (float(end.reshape(())) for end in ends)
        if not (np.isfinite(a) and np.isfinite(b)) or a == b:
            raise InputError(f"range {text!r}: the ends must be finite and different")
        with np.errstate(over="ignore"):
            span = b - a
        if np.isfinite(span):
            values = np.linspace(a, b, points)
        else:  # the span overflows float64 (-1e308:1e308): halve the ends, exactly
            values = np.linspace(a / 2, b / 2, points) * 2
    if values.size < 2:
        raise InputError(f"range {text!r}: at least 2 points are needed")
    return values


def check_size(axes) -> None:
    """Refuse, before any work, a curve of more than ``MAX_CURVE_POINTS`` points or a grid
    of more than ``MAX_GRID_POINTS``."""
    sizes = [len(a) for a in axes]
    if len(sizes) == 1 and sizes[0] > MAX_CURVE_POINTS:
        raise LimitError(f"a curve of {sizes[0]:,} points is over the limit of "
                         f"{MAX_CURVE_POINTS:,} points")
    if len(sizes) == 2 and sizes[0] * sizes[1] > MAX_GRID_POINTS:
        side = int(MAX_GRID_POINTS ** 0.5)
        raise LimitError(f"a contour grid of {sizes[0]:,} x {sizes[1]:,} = "
                         f"{sizes[0] * sizes[1]:,} points is over the limit of "
                         f"{MAX_GRID_POINTS:,} points ({side} per axis: --points {side})")


def _shown(value) -> str:
    """A point's coordinate in a message: the number's shortest text, not numpy's repr."""
    return repr(float(value))


# ---------------------------------------------------------------------------------------
# Evaluating the points: a chunk at a time by vectorized_map, one at a time where needed
# ---------------------------------------------------------------------------------------
class _Points:
    """``columns(model)`` (``count`` tensors or arrays, each one number per point) at every
    point of ``elems`` (declared name -> array, the points on axis 0), bound to ``model``
    by ``Model.bind``: ``run()`` -> (a float array per column, ``how``).

    ``failures`` are the errors that make one point's columns nan (its own failure);
    ``scalar(i, k, shape)`` is the error for a column k that is not one number (at
    point i)."""

    def __init__(self, model, elems: dict, count: int, columns, scalar,
                 failures=(GradcliError,), axes: int = 1):
        self.model, self.elems, self.columns = model, elems, columns
        # the --points that keeps every point within MAX_SINGLE_POINTS (per axis)
        self.hint = int(MAX_SINGLE_POINTS ** (1 / axes) + 1e-9)
        self.scalar, self.failures = scalar, failures
        self.n = len(next(iter(elems.values())))
        self.table = [np.full(self.n, np.nan) for _ in range(count)]
        self.chunk = CHUNK_POINTS
        self.batchable = True
        self.alone = 0            # points evaluated on their own so far
        self.failure = None       # the first error of a chunk (why points go alone)

    def run(self):
        try:
            at = 0
            while at < self.n:
                size = min(self.chunk, self.n - at)
                self._fill(at, at + size)
                at += size
        finally:
            self.model.bind({})   # back to the declared values
        return self.table, "loop" if self.alone else "vectorised"

    def _fill(self, lo: int, hi: int, failed: bool = False) -> None:
        """Points lo..hi-1: at once, or (``failed``: a piece of a chunk that failed) in
        halves, down to ``_ALONE`` points, which are evaluated one by one."""
        size = hi - lo
        if self.batchable and not (failed and size <= _ALONE):
            try:
                for out, column in zip(self.table, self._batched(lo, hi)):
                    out[lo:hi] = column
                return
            except ChunkTooLarge:
                if size == 1:
                    raise
                # the points together go over the limits of one evaluation: fewer at once
                self.chunk = step = (size + 1) // 2
                for start in range(lo, hi, step):
                    self._fill(start, min(start + step, hi), failed)
                return
            except (GradcliError, ValueError, *self.failures) as err:
                if isinstance(err, ValueError) and str(err).startswith("vectorized_map:"):
                    # data-dependent Python code: every remaining point on its own
                    self.batchable = False
                    if self.n - lo > MAX_SINGLE_POINTS:
                        raise LimitError(
                            "plot: the batching transform cannot batch this program, so "
                            f"its points are computed one at a time, and {self.n:,} are "
                            f"more than the limit of {MAX_SINGLE_POINTS:,}: use "
                            f"--points {self.hint} or fewer") from None
                else:
                    # some point fails: find it by halves, the others stay batched
                    if self.failure is None:
                        self.failure = getattr(err, "message", None) or \
                            f"{type(err).__name__}: {err}"
                    middle = lo + size // 2
                    self._fill(lo, middle, True)
                    self._fill(middle, hi, True)
                    return
        if self.alone + size > MAX_SINGLE_POINTS:
            raise LimitError(
                f"plot: the program fails at some points ({self.failure}); the points "
                "near them are computed one at a time to find them, and more than "
                f"{MAX_SINGLE_POINTS:,} would be (the limit): use fewer --points, or a "
                "range where the program is defined")
        self.alone += size
        for i in range(lo, hi):
            for out, value in zip(self.table, self._alone(i)):
                out[i] = value

    def _batched(self, lo: int, hi: int) -> list:
        from ..engine.core.batching import vectorized_map
        model, dtype = self.model, self.model.dtype
        elems = {name: gc.constant(v[lo:hi], dtype=dtype) for name, v in self.elems.items()}

        def at(example):
            model.bind(example)
            return list(self.columns(model))
        with np.errstate(all="ignore"):
            out = vectorized_map(at, elems, fallback_to_while_loop=False)
        columns = [np.asarray(c.numpy(), dtype=float) for c in out]
        for k, column in enumerate(columns):
            if column.shape != (hi - lo,):
                raise self.scalar(lo, k, column.shape[1:])
        return columns

    def _alone(self, i: int) -> list:
        """The columns at point i, evaluated on its own (nan where it fails)."""
        try:
            with np.errstate(all="ignore"):
                self.model.bind({name: v[i] for name, v in self.elems.items()})
                columns = [np.asarray(c.numpy() if hasattr(c, "numpy") else c, dtype=float)
                           for c in self.columns(self.model)]
        except self.failures:
            return [np.nan] * len(self.table)
        for k, column in enumerate(columns):
            if column.size != 1:
                raise self.scalar(i, k, column.shape)
        return [float(column.reshape(())) for column in columns]


def _derivative_tensors(model, name: str, order: int) -> list:
    """[f, f', ..., f^(order)] with respect to ``name`` at the model's bound values (which
    may be batched values of ``vectorized_map``: the tensors are then batched too)."""
    with ExitStack() as stack:
        tapes = [stack.enter_context(gc.GradientTape()) for _ in range(order)]
        x = model.source(name)
        for tape in tapes:
            tape.watch(x)
        y = model.function(*model.arg_values)
        out = [y]
        current = y
        for k in range(order):
            # the innermost tape differentiates first, while the outer ones still record
            current = tapes[order - 1 - k].gradient(current, x) if current is not None else None
            out.append(gc.constant(np.zeros(np.shape(x))) if current is None else current)
    return out


def _not_scalar(names, points):
    def error(i, k, shape):
        at = ", ".join(f"{n} = {_shown(p[i])}" for n, p in zip(names, points))
        return InputError(f"plot needs a scalar target; at {at} the target has shape "
                          f"{tuple(shape)} (reduce it, e.g. sum(...))")
    return error


def sample(model, name: str, xs: np.ndarray, order: int = 1):
    """f and its derivatives up to ``order`` with respect to ``name`` at every point of
    ``xs``: ``([f, f', ...], how)`` with ``how`` "vectorised" (every point in chunks by
    ``vectorized_map``) or "loop" (some points on their own).

    ``model`` is the built program, ``name`` one of its declared names (its declared value
    is put back at the end)."""
    xs = np.asarray(xs, dtype=float)
    points = _Points(model, {name: xs}, order + 1,
                     lambda m: _derivative_tensors(m, name, order), _not_scalar([name], [xs]))
    return points.run()


def marked_points(model, name: str, xs, table):
    """The points to mark on the curve of ``model`` over ``xs`` (its samples ``table`` =
    [f, f', f'', ...] with respect to ``name``): ``(points, notes)`` from
    ``curve_points.marked_points``, which evaluates the program again (by ``sample``)
    wherever it refines a point. The model's declared values are put back at the end."""
    from .curve_points import marked_points as find

    def evaluate(points, order):
        return sample(model, name, points, order)[0]
    return find(xs, table[:3], evaluate, model.dtype)


# ---------------------------------------------------------------------------------------
# Another mode's gradients, and two ranged values (a grid)
# ---------------------------------------------------------------------------------------
def sample_mode(model, name: str, xs: np.ndarray, mode: str):
    """f and the gradients one mode (tape, grad, implicit, value-grad) returns at every
    point: ``([f, g1, g2, ...], [source names], how)``. A tape also watches the ranged
    name, so that its derivative is among the curves. Each gradient must be one number.

    The mode's own code runs at each point, a chunk of points at a time by
    ``vectorized_map`` (as ``--at`` runs it); every other declared number is given to
    each point as its own copy, so that a gradient for it is per point too."""
    from .modes import ModeOptions, run_mode
    xs = np.asarray(xs, dtype=float)
    options = ModeOptions(watch=[name] if mode == "tape" else None)
    # The first point alone: the sources' names, and their shapes (an error raises here).
    model.bind({name: xs[0]})
    with np.errstate(all="ignore"):
        outcome = run_mode(mode, model, options)
    names = [g.name for g in outcome.gradients]
    for g in outcome.gradients:
        if g.gradient is not None and np.size(g.gradient) != 1:
            raise InputError(f"plot draws one number per point: the {mode} gradient "
                             f"for '{g.name}' has shape {np.shape(g.gradient)}")

    def columns(m):
        out = run_mode(mode, m, options)
        value = out.value if out.value is not None else m.function(*m.arg_values)
        return [value] + [np.zeros(()) if g.gradient is None else g.gradient
                          for g in out.gradients]

    elems = {name: xs}
    for decl in model.declarations:
        if decl.name != name and decl.has_value and np.size(decl.value) == 1:
            elems[decl.name] = np.broadcast_to(decl.value, (len(xs),) + np.shape(decl.value))

    def scalar(i, k, shape):
        if k == 0:
            return _not_scalar([name], [xs])(i, k, shape)
        return InputError(f"plot draws one number per point: the {mode} gradient for "
                          f"'{names[k - 1]}' has shape {tuple(shape)}")
    points = _Points(model, elems, len(names) + 1, columns, scalar,
                     failures=(GradcliError, ValueError, ArithmeticError))
    table, how = points.run()
    return table, names, how


def _value_and_gradient_tensors(model, names) -> list:
    """[f, df/dname1, df/dname2, ...] at the model's bound values (batched values inside
    ``vectorized_map``)."""
    sources = [model.source(name) for name in names]
    with gc.GradientTape() as tape:
        for source in sources:
            tape.watch(source)
        y = model.function(*model.arg_values)
    grads = tape.gradient(y, sources)
    return [y] + [gc.constant(np.zeros(np.shape(s))) if g is None else g
                  for g, s in zip(grads, sources)]


def _value_and_gradients(model, names, values) -> list[np.ndarray]:
    """[f, df/dname1, df/dname2, ...] at ``values`` (one point)."""
    model.bind(dict(zip(names, values)))
    return [np.asarray(c.numpy(), dtype=float) for c in _value_and_gradient_tensors(model, names)]


def sample_grid(model, names, axes):
    """f and its gradient on the grid of two ranged values: ``([F, dF/dx, dF/dy], how)``,
    each of shape (len(axes[1]), len(axes[0])) -- rows follow the second name, as
    ``numpy.meshgrid``. The points go a chunk at a time through ``vectorized_map`` (as
    ``sample``), whatever the program."""
    grid = np.meshgrid(*axes)
    flat = [g.ravel() for g in grid]
    points = _Points(model, dict(zip(names, flat)), len(names) + 1,
                     lambda m: _value_and_gradient_tensors(m, names),
                     _not_scalar(names, flat), axes=2)
    table, how = points.run()
    return [np.reshape(c, grid[0].shape) for c in table], how


def critical_points(axes, table) -> list[tuple[str, float, float, float]]:
    """("critical point", x, y, f) where both partial derivatives change sign among a grid
    cell's four corners and their planes fitted to the corners cross inside the cell (a
    curved valley makes both change sign in cells where they do not both vanish);
    neighbouring such cells (a point on a grid line or corner is in up to four) are one
    point, at the mean of their centres, with f there interpolated as the mean of their
    corners. Every cell is judged at once (numpy), so a grid of any size takes little."""
    xs, ys = (np.asarray(a, dtype=float) for a in axes)
    f, gx, gy = table

    def corners(a):   # (r, c), (r, c + 1), (r + 1, c), (r + 1, c + 1) of every cell
        return a[:-1, :-1], a[:-1, 1:], a[1:, :-1], a[1:, 1:]

    with np.errstate(all="ignore"):
        a, b = np.stack(corners(gx)), np.stack(corners(gy))
        finite = np.all(np.isfinite(a), axis=0) & np.all(np.isfinite(b), axis=0)
        amin, amax, bmin, bmax = a.min(0), a.max(0), b.min(0), b.max(0)
        candidate = finite & (amin <= 0) & (amax >= 0) & (amin < amax) \
            & (bmin <= 0) & (bmax >= 0) & (bmin < bmax)
        rows, cols = np.nonzero(candidate)
        w = (xs[1:] - xs[:-1])[cols]
        h = (ys[1:] - ys[:-1])[rows]
        inside = _zero_in_cells(w, h, a[:, rows, cols], b[:, rows, cols])
    cells = list(zip(rows[inside].tolist(), cols[inside].tolist()))
    found = []
    for group in _neighbours(cells):
        x = float(np.mean([(xs[c] + xs[c + 1]) / 2 for _, c in group]))
        y = float(np.mean([(ys[r] + ys[r + 1]) / 2 for r, _ in group]))
        value = float(np.mean([np.mean(f[r:r + 2, c:c + 2]) for r, c in group]))
        found.append(("critical point", x, y, value))
    return sorted(found, key=lambda p: (p[1], p[2]))


def _neighbours(cells: list) -> list[list]:
    """The cells in groups of neighbours (rows and columns at most 1 apart, chained)."""
    index = {cell: k for k, cell in enumerate(cells)}
    parent = list(range(len(cells)))

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k
    for k, (r, c) in enumerate(cells):
        for other in ((r - 1, c - 1), (r - 1, c), (r - 1, c + 1), (r, c - 1)):
            j = index.get(other)
            if j is not None:
                parent[root(j)] = root(k)
    groups: dict = {}
    for k, cell in enumerate(cells):
        groups.setdefault(root(k), []).append(cell)
    return list(groups.values())


def _zero_in_cells(w, h, a, b):
    """Whether the planes fitted (least squares) to the two gradients at each cell's
    corners vanish together inside the cell (with a quarter-cell margin). ``a`` and ``b``
    hold the corners (r, c), (r, c + 1), (r + 1, c), (r + 1, c + 1) on axis 0; ``w`` and
    ``h`` are the cells' widths and heights. On a rectangle's corners the fit is in
    closed form: slopes from the differences of the sides' means, and the centre value."""
    def plane(v):
        px = (v[1] + v[3] - v[0] - v[2]) / (2 * w)
        py = (v[2] + v[3] - v[0] - v[1]) / (2 * h)
        return v.mean(axis=0) - px * w / 2 - py * h / 2, px, py
    a0, ax, ay = plane(a)
    b0, bx, by = plane(b)
    det = ax * by - ay * bx
    ok = np.abs(det) >= 1e-300
    det = np.where(ok, det, 1.0)
    u = (ay * b0 - a0 * by) / det
    v = (a0 * bx - ax * b0) / det
    return ok & (u >= -0.25 * w) & (u <= 1.25 * w) & (v >= -0.25 * h) & (v <= 1.25 * h)


def _gradient_and_hessian(model, names, point):
    """The gradient and the Hessian of f at ``point`` (nested tapes on the engine)."""
    model.bind(dict(zip(names, point)))
    sources = [model.source(name) for name in names]
    with gc.GradientTape(persistent=True) as outer:
        for source in sources:
            outer.watch(source)
        with gc.GradientTape() as inner:
            for source in sources:
                inner.watch(source)
            y = model.function(*model.arg_values)
        grads = inner.gradient(y, sources)
    grads = [g if g is not None else gc.constant(0.0) for g in grads]
    hessian = [[0.0 if h is None else float(h.numpy()) for h in outer.gradient(g, sources)]
               for g in grads]
    return np.array([float(g.numpy()) for g in grads]), np.array(hessian)


def refine_critical(model, names, axes, candidates, iterations: int = 30):
    """Newton's method from each candidate of ``critical_points``: keeps those that
    converge (gradient norm below 1e-9 of the gradient's scale on the grid, or 1e-12)
    inside the plotted box, once each, classified by the Hessian's eigenvalues
    ("minimum", "maximum", "saddle", or "critical point" when one is zero). The model's
    declared values are put back at the end."""
    try:
        return _refined(model, names, axes, candidates, iterations)
    finally:
        model.bind({})


def _refined(model, names, axes, candidates, iterations):
    lo = np.array([a[0] for a in axes])
    hi = np.array([a[-1] for a in axes])
    with np.errstate(over="ignore"):
        cell = np.array([a[1] - a[0] for a in axes])
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


# ---------------------------------------------------------------------------------------
# The whole of a plot: the ranged declarations, the model, the samples, the marked points
# ---------------------------------------------------------------------------------------
def column_names(name: str, order: int) -> list[str]:
    """x, f, df/dx, d2f/dx2, ..."""
    return [name, "f"] + [f"d{'' if k == 1 else k}f/d{name}{'' if k == 1 else k}"
                          for k in range(1, order + 1)]


def find_ranges(declared: dict, points: int | None):
    """([(name, points), ...] for the one or two ranged declarations, the declarations by
    kind with None where a ranged one was, to keep the arguments' order). ``declared``:
    the --var, --frozen and --arg texts by kind; ``points``: --points (None: default)."""
    from ..lang.values import parse_declaration
    texts = [(kind, text) for kind in ("var", "frozen", "arg") for text in declared[kind] or ()]
    ranged = []
    for kind, text in texts:
        name, value = parse_declaration(text)
        if parse_range(value, 2) is not None:
            ranged.append(name)
    default = 400 if len(ranged) < 2 else 60
    points = points if points is not None else default
    found, rest = [], {"var": [], "frozen": [], "arg": []}
    for kind, text in texts:
        name, value = parse_declaration(text)
        values = parse_range(value, points) if name in ranged else None
        if values is None:
            rest[kind].append(text)
        else:
            found.append((name, values))
            rest[kind].append(None)
    if not found:
        raise InputError("plot needs one value given as a range: e.g. --arg x=-3:3 or "
                         "--arg x='linspace(-3, 3, 200)'")
    if len(found) > 2:
        raise InputError("plot takes one ranged value (a curve) or two (a contour plot), "
                         "not " + str(len(found)) + ": " + ", ".join(n for n, _ in found))
    if len(found) == 2 and found[0][0] == found[1][0]:
        raise InputError(f"'{found[0][0]}' is given twice")
    return found, rest


class Plot:
    """What was computed: ``names`` (one or two ranged names), ``axes`` (their points),
    ``table`` (f, then the derivative columns; 2-D arrays for two names), ``labels``
    (the columns' names), ``how`` ("vectorised" or "loop"), ``points`` (marked points:
    (kind, x, f) or, for two names, (kind, x, y, f)), ``notes`` (strings)."""

    def __init__(self, names, axes, table, labels, how, points, notes=()):
        self.names, self.axes, self.table = names, axes, table
        self.labels, self.how, self.points = labels, how, points
        self.notes = list(notes)

    def report(self, order: int = 1, mode: str | None = None) -> Report:
        """JSON: the ranged names, the ``order`` of the derivatives (or the ``mode`` whose
        gradients they are), how they were evaluated, the samples (a row per point: the
        ranged values, f, the derivatives) and the marked points; CSV: the samples'
        table (``Report.table``); no plain lines (plot has no --plain)."""
        from ..io.jsonvalue import json_number
        grid = len(self.names) == 2
        if grid:
            columns = [m.ravel() for m in np.meshgrid(*self.axes)]
            columns += [c.ravel() for c in self.table]
        else:
            columns = [self.axes[0]] + list(self.table)
        header = self.names + self.labels
        keys = ("kind", "x", "y", "f") if grid else ("kind", "x", "f")
        fields = {
            "mode": "plot", "arguments": self.names, "order": 1 if grid else order,
            "derivatives": mode or "ranged", "evaluation": self.how, "columns": header,
            # every number converted and written in C (a grid has up to 1.25 million)
            "samples": Numbers(np.column_stack(columns)),
            "points": [{k: (v if k == "kind" else json_number(v)) for k, v in zip(keys, p)}
                       for p in self.points]}
        if self.notes:
            fields["notes"] = self.notes
        return Report("plot", fields, [], self.notes, table=(header, columns))

    def page(self, precision: int | None, picture: str) -> Page:
        """The human page: the ``picture`` drawn in the terminal, then the marked points."""
        from ..io.text import number_text
        page = Page().verbatim(picture + "\n")
        if self.points:
            grid = len(self.names) == 2
            page.table(["kind", "x", "y", "f"] if grid else ["kind", "x", "f"],
                       [[kind, *(number_text(v, precision) for v in numbers)]
                        for kind, *numbers in self.points], "marked points", fitted=False)
        return page


def plot_program(program_text: str, *, var=(), frozen=(), arg=(), points: int | None = None,
                 mode: str | None = None, order: int = 1, dtype: str = "float64",
                 target: str | None = None) -> Plot:
    """What ``gradcli plot`` draws: the program (its text, '-' or @path) sampled over the
    one or two ranged declarations (``x=a:b``, ``x=linspace(a, b, n)``), with its
    derivatives up to ``order`` or the gradients ``mode`` returns, and the points to
    mark."""
    from ..lang.evaluate import build
    from ..lang.parser import parse_program
    from ..lang.source import read_program
    from ..lang.values import Declarations
    found, rest = find_ranges({"var": var, "frozen": frozen, "arg": arg}, points)
    names = [n for n, _ in found]
    axes = [values for _, values in found]
    if len(found) == 2 and (mode is not None or order != 1):
        raise InputError("a contour plot (two ranged values) draws f and its gradient: "
                         "--mode and --order apply to one ranged value")
    if mode is not None and order != 1:
        raise InputError("--order applies to the derivative with respect to the ranged "
                         "value, not to --mode")
    check_size(axes)   # before the program is read or anything computed
    program = parse_program(read_program(program_text))
    # The ranged names are declared at their first point, as numbers (never as text: a
    # number's text is not always a value the language reads back, nan for one); the
    # sampling binds every point's value to the model (Model.bind).
    declarations = Declarations()
    ranged = iter(zip(names, axes))
    for kind in ("var", "frozen", "arg"):
        for text in rest[kind]:
            if text is None:
                name, values = next(ranged)
                declarations.add(kind, name, float(values[0]))
            else:
                declarations.add_option(kind, text)
    model = build(program, declarations, dtype=dtype, target=target)
    notes = []

    if len(names) == 2:
        table, how = sample_grid(model, names, axes)
        candidates = critical_points(axes, table)
        if len(candidates) > MAX_MARKED_CRITICAL:
            marked = []
            notes.append(f"{len(candidates):,} critical points on the grid, more than "
                         f"{MAX_MARKED_CRITICAL}: none is marked (plot a smaller "
                         "range to see them)")
        else:
            marked = refine_critical(model, names, axes, candidates)
        return Plot(names, axes, table, ["f"] + [f"df/d{n}" for n in names], how, marked,
                    notes)
    name, xs = names[0], axes[0]
    if mode is not None:
        from .modes import MODES
        if mode not in MODES:
            raise InputError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        table, sources, how = sample_mode(model, name, xs, mode)
        labels = ["f"] + [f"df/d{source}" for source in sources]
        # the marked points are f's: found from its derivatives with respect to the
        # ranged value, whichever gradients the mode draws
        derivatives, _ = sample(model, name, xs, 2)
        marked, notes = marked_points(model, name, xs, derivatives)
        return Plot(names, axes, table, labels, how, marked, notes)
    # f'' is sampled whatever --order draws: the marked points are refined with it
    table, how = sample(model, name, xs, max(order, 2))
    marked, notes = marked_points(model, name, xs, table)
    return Plot(names, axes, table[:order + 1], column_names(name, order)[1:], how,
                marked, notes)
