"""The points ``gradcli plot`` marks on a curve, found exactly: the samples say roughly
where to look, the program evaluated again at chosen points says where and what.

- ``minimum`` / ``maximum``: f' changes sign between two samples. Newton's method on f'
  with the tape's f'', kept inside the bracket by bisection, goes to the x where f' is
  nearest 0 in floating point; f is the program's value at that x, never interpolated.
  An exact zero of f' at a sample between two of the same sign is a ``stationary point``
  (x^3 at 0).
- ``pole``, ``jump``, ``kink``: f or f' changes far more between two samples than next to
  them. The bracket is halved towards the larger change down to neighbouring floats;
  then the program is evaluated on both sides at distances from 1e-3 of a sample step
  down over ten decades. Values that grow without settling (1/x, tan, log) make a
  ``pole`` (a vertical asymptote); values settling to two different limits a ``jump``
  (sign, floor); f settling to one limit while f' jumps or grows a ``kink`` (abs,
  sqrt(abs)). A change that vanishes as the distance shrinks was a steep but continuous
  stretch (or the halving went past the point: f' of tan is as large on both sides of
  its pole), and is not marked. The x is the shortest decimal in the final bracket (0.3,
  not 0.30000000000000004; 0 within the spacing of floats at the range's ends), and f
  the program's value there (inf at 1/x's x = 0).
- ``non-finite``: where a stretch of f that is not a number begins; a single
  non-finite sample is judged as above (1/x sampled at 0 is a pole) and is
  ``non-finite`` if it is neither a pole nor a jump (sin(x)/x at 0).
- Sampled too coarsely: where f' and f'' at the samples disagree (the trapezoid rule on
  f'' misses the change of f' between two samples by half or more, or that on f' misses
  the change of f), the curve changes faster than the samples follow (x^2*sin(1/x) near
  0), and a sign change of f' there may be an alias: no extremum is marked there, and a
  note says where, and to raise --points or narrow the range.

Every search evaluates all its points at once (one call of ``evaluate`` per step of the
search), so a curve with a thousand extrema costs a few dozen batched evaluations.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["MAX_MARKED_EXTREMA", "MAX_PROBED_STEPS", "marked_points"]

#: Sign changes of f' refined on one curve; with more, none is marked (a note says so).
MAX_MARKED_EXTREMA = 1000
#: Steep changes of f or f' located and judged on one curve (the largest first).
MAX_PROBED_STEPS = 200
#: An interval is sampled too coarsely when the trapezoid rule misses this share of it.
COARSE = 0.5
#: Distances of the probe on each side of a located point: half-decades over ten decades.
_PROBE_DISTANCES = 21
#: Samples on each side of a pole, jump or kink whose disagreement is theirs, not aliasing.
_NEAR = 4

Evaluate = Callable[[np.ndarray, int], Sequence[np.ndarray]]


def marked_points(xs, table, evaluate: Evaluate, dtype: str = "float64"):
    """``(points, notes)`` for a curve sampled at ``xs``: ``table`` is [f, f', f''] there
    and ``evaluate(points, order)`` gives [f, ..., f^(order)] of the same program at any
    points (nan where it fails). ``points`` are (kind, x, f) sorted by x; ``notes`` are
    sentences for the user (sampled too coarsely, too many extrema).

    >>> import numpy as np
    >>> def evaluate(x, order):
    ...     return [x**3 - 3*x, 3*x**2 - 3, 6*x][:order + 1]
    >>> xs = np.linspace(-2.5, 2.5, 50)
    >>> marked_points(xs, evaluate(xs, 2), evaluate)
    ([('maximum', -1.0, 2.0), ('minimum', 1.0, -2.0)], [])
    """
    curve = _Curve(np.asarray(xs, dtype=float), [np.asarray(c, dtype=float) for c in table],
                   evaluate, dtype)
    return curve.marked()


class _Curve:
    """The samples of one curve, the program behind them (``at``), and the scales that
    say when two numbers are the same on this plot."""

    def __init__(self, xs, table, evaluate, dtype):
        self.xs = xs
        self.f, self.df, self.d2f = table[:3]
        self.evaluate = evaluate
        self.float = np.float32 if dtype == "float32" else np.float64
        self.eps = float(np.finfo(self.float).eps)
        # halves: the span of -1e308:1e308 overflows float64
        half_span = abs(xs[-1] / 2 - xs[0] / 2)
        self.step = 2 * half_span / (len(xs) - 1)
        self.direction = 1.0 if xs[-1] > xs[0] else -1.0
        # a number this close to 0 is 0 on this plot (the spacing of floats at its ends)
        self.resolution = 2 * half_span * self.eps
        # below this, a bracket around x = 0 is as good as closed
        self.floor = self.resolution / 64
        # changes of a value below this share of it are rounding
        self.noise = 1e4 * self.eps
        self.notes: list[str] = []

    def at(self, points, order: int):
        """The points as the program sees them (rounded to its dtype) and [f, ...] there."""
        points = np.asarray(points, dtype=float).astype(self.float).astype(float)
        if points.size == 0:
            return points, [np.empty(0)] * (order + 1)
        with np.errstate(all="ignore"):
            return points, [np.asarray(c, dtype=float) for c in self.evaluate(points, order)]

    # -----------------------------------------------------------------------------------
    def marked(self):
        """(points sorted by x, notes): poles, jumps and kinks first, so that the
        stretches sampled too coarsely are judged away from them, then the extrema."""
        found = self._non_finite_runs()
        singular = self._steps()
        found += singular
        coarse = self._coarse_regions([x for _, x, _ in singular])
        found += self._extrema(coarse)
        found = _distinct(found, self.step)
        return sorted(found, key=lambda p: p[1]), self.notes

    def _non_finite_runs(self):
        """(``non-finite``, x, f) where a stretch of two or more non-finite samples of f
        begins (a single one is judged by ``_steps``)."""
        bad = ~np.isfinite(self.f)
        starts = np.flatnonzero(bad & ~np.concatenate([[False], bad[:-1]]))
        return [("non-finite", float(self.xs[i]), float(self.f[i])) for i in starts
                if i + 1 < len(bad) and bad[i + 1]]

    # -----------------------------------------------------------------------------------
    # Poles, jumps and kinks
    # -----------------------------------------------------------------------------------
    def _steps(self):
        """Located and judged: the steep changes of f and of f', and the single
        non-finite samples of f."""
        candidates = []   # (size, lo index, hi index, column); size orders the probing
        for k, column in enumerate((self.f, self.df)):
            candidates += [(size, lo, hi, k) for lo, hi, size in _steep(column)]
        bad = ~np.isfinite(self.f)
        for i in np.flatnonzero(bad[1:-1]) + 1:
            if not (bad[i - 1] or bad[i + 1]):
                candidates.append((np.inf, i, i, 0))
        candidates.sort(key=lambda c: -c[0])
        if len(candidates) > MAX_PROBED_STEPS:
            self.notes.append(f"{len(candidates):,} steep changes between samples, more "
                              f"than {MAX_PROBED_STEPS}: only the {MAX_PROBED_STEPS} "
                              "largest are judged (pole, jump or kink)")
            candidates = candidates[:MAX_PROBED_STEPS]
        if not candidates:
            return []
        _, lo, hi, column = (np.array(c).astype(int) for c in zip(*candidates))
        lone = lo == hi
        lo, hi = self._locate(lo, hi, column)
        return self._judge(lo, hi, lone)

    def _locate(self, lo_index, hi_index, column):
        """Brackets [lo, hi] halved towards the larger change of their column (f or f')
        until they cannot be halved (their ends are neighbouring numbers)."""
        xs = self.xs
        values = [self.f, self.df]
        if self.direction < 0:   # samples from high to low: lo is the higher index
            lo_index, hi_index = hi_index, lo_index
        lo, hi = xs[lo_index].copy(), xs[hi_index].copy()
        v_lo = np.choose(column, [v[lo_index] for v in values])
        v_hi = np.choose(column, [v[hi_index] for v in values])
        active = hi > lo
        for _ in range(200):
            # on to neighbouring floats (``stuck``), or to ``floor`` around 0
            active &= hi - lo > self.floor
            if not active.any():
                break
            which = np.flatnonzero(active)
            mid, columns = self.at(lo[which] / 2 + hi[which] / 2, 1)
            stuck = (mid <= lo[which]) | (mid >= hi[which])
            v_mid = np.choose(column[which], columns)
            with np.errstate(invalid="ignore"):
                left = _change(v_mid, v_lo[which])
                right = _change(v_hi[which], v_mid)
            to_left = left >= right
            go_left, go_right = which[to_left & ~stuck], which[~to_left & ~stuck]
            hi[go_left], v_hi[go_left] = mid[to_left & ~stuck], v_mid[to_left & ~stuck]
            lo[go_right], v_lo[go_right] = mid[~to_left & ~stuck], v_mid[~to_left & ~stuck]
            active[which[stuck]] = False
        return lo, hi

    def _judge(self, lo, hi, lone):
        """(kind, x, f) for each located bracket that is a pole, a jump or a kink; a
        ``lone`` non-finite sample that is neither is marked ``non-finite`` (sin(x)/x at
        0, where f is continuous but 0/0 is nan)."""
        xs = self._simplest_in(lo, hi)
        f_kind, df_kind = self._probe(xs)
        kinds = np.where(f_kind == "grows", "pole", np.where(f_kind == "jump", "jump", np.where(
            lone, "non-finite", np.where((f_kind == "continuous") &
                                         np.isin(df_kind, ("grows", "jump")), "kink", ""))))
        chosen = kinds != ""
        points, (f,) = self.at(xs[chosen], 0)
        return [(str(kind), float(x), float(v)) for kind, x, v in zip(kinds[chosen], points, f)]

    def _probe(self, xs):
        """How f and f' behave on both sides of each x, over ten decades of distance
        from 1e-3 of a sample step (farther would reach past the next pole or jump when x
        is not quite at this one): "grows" (without settling: a pole of f, or f'
        unbounded), "jump" (two limits), "continuous" (one limit), "oscillates" or
        "undefined" (nan). float32 has fewer digits: two decades."""
        n, count = len(xs), _PROBE_DISTANCES
        # x is known to a unit in its last place: the nearest distance is a few above;
        # float32 leaves about two decades between that and the farthest
        nearest = np.maximum(8 * self.eps * abs(xs), self.resolution)
        start = np.minimum(self.step, np.maximum(1e-3 * self.step, 100 * nearest))
        distances = np.geomspace(start, np.maximum(1e-10 * start, nearest), count, axis=1)
        sides = np.concatenate([xs[:, None] - distances, xs[:, None] + distances], axis=1)
        _, (f, df) = self.at(sides.ravel(), 1)
        return tuple(np.array([_limits(row[:count], row[count:], self.noise) for row in
                               column.reshape(n, 2 * count)]) for column in (f, df))

    # -----------------------------------------------------------------------------------
    # Sampled too coarsely
    # -----------------------------------------------------------------------------------
    def _coarse_regions(self, singular_xs):
        """[(first sample, last sample)] of the stretches sampled too coarsely, away from
        the poles, jumps and kinks at ``singular_xs``; a note describes them."""
        with np.errstate(all="ignore"):
            bad = (_disagreement(self.xs, self.f, self.df) > COARSE) | \
                (_disagreement(self.xs, self.df, self.d2f) > COARSE)
        # the two intervals at each end are not judged for steps (``_steep``) either: a
        # jump there would pass for a stretch sampled too coarsely
        bad[:2] = bad[-2:] = False
        for x in singular_xs:
            i = int(np.searchsorted(self.xs, x)) if self.xs[-1] > self.xs[0] else \
                len(self.xs) - int(np.searchsorted(self.xs[::-1], x))
            bad[max(0, i - _NEAR - 1):i + _NEAR] = False
        regions = []
        for i in np.flatnonzero(bad).tolist():
            if regions and i - regions[-1][1] <= _NEAR:
                regions[-1][1] = i + 1
            else:
                regions.append([i, i + 1])
        if regions:
            self.notes.append(self._coarse_note(regions))
        return regions

    def _coarse_note(self, regions) -> str:
        def shown(i):
            return f"{float(self.xs[i]):.4g}"
        where = ", ".join(f"[{shown(a)}, {shown(b)}]" for a, b in regions[:3])
        if len(regions) > 3:
            where += f" and {len(regions) - 3} more"
        return (f"sampled too coarsely for x in {where}: the curve changes faster there "
                "than its samples follow (f' and f'' disagree between samples), so no "
                f"extremum is marked there; raise --points (now {len(self.xs):,}) or "
                "narrow the range")

    # -----------------------------------------------------------------------------------
    # Extrema
    # -----------------------------------------------------------------------------------
    def _extrema(self, coarse):
        d, f = self.df, self.f
        ok = np.isfinite(d) & np.isfinite(f)
        in_coarse = np.zeros(len(d), dtype=bool)
        for a, b in coarse:
            in_coarse[a:b + 1] = True
        ok &= ~in_coarse
        a, b = d[:-1], d[1:]
        with np.errstate(invalid="ignore"):
            crossing = ok[:-1] & ok[1:] & (a * b < 0)
        found = self._exact_zeros(ok)
        brackets = np.flatnonzero(crossing)
        if len(brackets) > MAX_MARKED_EXTREMA:
            self.notes.append(f"{len(brackets):,} sign changes of f', more than "
                              f"{MAX_MARKED_EXTREMA:,}: no extremum is marked (plot a "
                              "smaller range to see them)")
            return [p for p in found if p[0] == "stationary point"]
        if not len(brackets):
            return found
        # f' going from - to + as x grows (the samples may run from high to low)
        kinds = np.where(a[brackets] * self.direction < 0, "minimum", "maximum")
        lo, hi, best_x, best_d, converged = self._newton(brackets)
        scale = np.maximum(abs(a[brackets]), abs(b[brackets]))
        stationary = abs(best_d) <= max(1e-6, self.noise) * scale
        xs, (values, _, curvature) = self.at(
            self._simplest(best_x[stationary], best_d[stationary]), 2)
        # the sign of f'' where it has one: a bracket with three zeros of f' in it would
        # otherwise call the middle one by the bracket's ends
        by_curvature = np.where(curvature > 0, "minimum", np.where(
            curvature < 0, "maximum", kinds[stationary]))
        found += [(str(k), float(x), float(v)) for k, x, v in zip(by_curvature, xs, values)]
        # The others: where Newton's steps stopped short of a small f' (rounding), or
        # where the bracket closed on a point f' jumps across. That is an extremum if f
        # is continuous there (a corner: abs), not if f has a pole or a jump there (1/x^2:
        # those are marked by _steps).
        rest = ~stationary
        others = np.where(converged[rest], best_x[rest], self._simplest_in(lo[rest], hi[rest]))
        if others.size:
            continuous = self._probe(others)[0] == "continuous"
            xs, (values,) = self.at(others[continuous], 0)
            found += [(str(k), float(x), float(v)) for k, x, v in
                      zip(kinds[rest][continuous], xs, values)]
        return found

    def _simplest(self, xs, slopes):
        """Each x replaced by the shortest decimal within its rounding (two units in the
        last place, or ``resolution`` near 0) where f' is no farther from 0 there:
        Newton's 8.7e-19 becomes 0.0 when f'(0) is as small."""
        tolerance = 2 * self.eps * abs(xs)
        shorter = self._simplest_in(xs - tolerance, xs + tolerance)
        shorter, (_, d) = self.at(shorter, 1)
        return np.where(abs(d) <= abs(slopes), shorter, xs)

    def _simplest_in(self, lo, hi):
        """Per bracket [lo, hi], the number with the fewest digits in it; 0 if the bracket
        is within ``resolution`` of 0 (1/x^2 sampled symmetrically is located at -2e-16,
        the mean of two samples that do not quite cancel)."""
        return np.array([0.0 if a - self.resolution <= 0 <= b + self.resolution else
                         _shortest_between(a, b) for a, b in zip(np.minimum(lo, hi),
                                                                 np.maximum(lo, hi))])

    def _exact_zeros(self, ok):
        """Samples where f' is exactly 0 between two non-zero samples: an extremum by the
        sign of f'' there, or (f'' = 0) if the neighbours' f' have opposite signs, else a
        stationary point (x^3 at 0). A stretch of zeros (f flat) is not marked."""
        d = self.df
        found = []
        for i in np.flatnonzero(ok[1:-1] & (d[1:-1] == 0)) + 1:
            before, after = d[i - 1] * self.direction, d[i + 1] * self.direction
            if not (ok[i - 1] and ok[i + 1]) or before == 0 or after == 0:
                continue
            curvature = self.d2f[i]
            kind = ("minimum" if curvature > 0 else "maximum" if curvature < 0 else
                    "minimum" if before < 0 < after else "maximum" if before > 0 > after
                    else "stationary point")
            found.append((kind, float(self.xs[i]), float(self.f[i])))
        return found

    def _newton(self, brackets):
        """Newton's method on f' with f'' from each bracket [x_i, x_i+1] where f' changes
        sign, a bisection step wherever Newton's would leave the bracket; all brackets at
        once. Returns the final brackets; per bracket, the x with the smallest |f'| met and
        that f'; and whether Newton's steps converged (rather than the bracket closing)."""
        lo, hi = self.xs[brackets].copy(), self.xs[brackets + 1].copy()
        d_lo, d_hi = self.df[brackets].copy(), self.df[brackets + 1].copy()
        if np.any(lo > hi):   # a range given from high to low
            lo, hi, d_lo, d_hi = np.minimum(lo, hi), np.maximum(lo, hi), \
                np.where(lo > hi, d_hi, d_lo), np.where(lo > hi, d_lo, d_hi)
        nearer = abs(d_lo) <= abs(d_hi)
        best_x, best_d = np.where(nearer, lo, hi), np.where(nearer, d_lo, d_hi)
        # start where the chord of f' crosses 0 (the samples' linear interpolation)
        x = lo - d_lo * (hi - lo) / (d_hi - d_lo)
        x = np.where((x > lo) & (x < hi), x, lo / 2 + hi / 2)
        active = np.ones(len(x), dtype=bool)
        converged = np.zeros(len(x), dtype=bool)
        for _ in range(100):
            which = np.flatnonzero(active)
            if not which.size:
                break
            points, (_, d, dd) = self.at(x[which], 2)
            x[which] = points
            better = abs(d) < abs(best_d[which])
            best_x[which[better]], best_d[which[better]] = points[better], d[better]
            same_as_lo = np.sign(d) == np.sign(d_lo[which])
            lo[which] = np.where(same_as_lo, points, lo[which])
            d_lo[which] = np.where(same_as_lo, d, d_lo[which])
            hi[which] = np.where(same_as_lo, hi[which], points)
            d_hi[which] = np.where(same_as_lo, d_hi[which], d)
            with np.errstate(all="ignore"):
                newton = points - d / dd
            inside = np.isfinite(newton) & (newton > lo[which]) & (newton < hi[which])
            following = np.where(inside, newton, lo[which] / 2 + hi[which] / 2)
            tolerance = np.maximum(2 * self.eps * abs(points), self.floor)
            settled = (d == 0) | (inside & (abs(newton - points) <= tolerance))
            done = settled | ~np.isfinite(d) | (abs(following - points) <= tolerance) | \
                (hi[which] - lo[which] <= tolerance)
            converged[which[settled]] = True
            x[which] = following
            active[which[done]] = False
        return lo, hi, best_x, best_d, converged


# ---------------------------------------------------------------------------------------
# Helpers on arrays
# ---------------------------------------------------------------------------------------
def _steep(column):
    """(lo, lo + 1, size) of the sample brackets where ``column`` changes more than 10
    times the changes two samples away on either side and more than 1e-6 of its largest
    value (a smooth curve sampled finely changes by about the same from one step to the
    next); the two samples at each end are not judged. Two such steps in a row (a spike
    at the sample between them) are two brackets: the pole or jump is in one of them,
    or at that sample, and each is located and judged on its own."""
    with np.errstate(all="ignore"):
        steps = np.abs(np.diff(column))
    if len(steps) < 9:  # too few samples to tell a jump from a steep smooth change
        return []
    finite = column[np.isfinite(column)]
    floor = 1e-6 * max(float(np.max(np.abs(finite))) if finite.size else 0.0, 1.0)
    step, left, right = steps[2:-2], steps[:-4], steps[4:]
    with np.errstate(all="ignore"):
        jump = np.isfinite(step) & (step > floor) & np.isfinite(left) & np.isfinite(right) \
            & (step > 10 * np.maximum(left, right))
    return [(i, i + 1, float(steps[i])) for i in (np.flatnonzero(jump) + 2).tolist()]


def _change(a, b):
    """|a - b|, with a change to or from a non-finite value counted as infinite."""
    out = np.abs(a - b)
    return np.where(np.isnan(out) | ~np.isfinite(a) | ~np.isfinite(b), np.inf, out)


def _side(values, noise: float) -> str:
    """How a sequence of values, taken nearer and nearer a point, behaves: "settles"
    (its changes shrink), "grows" (unbounded: its changes do not shrink and keep one
    direction, or it reaches inf), "oscillates", or "undefined" (nan)."""
    if np.any(np.isinf(values)):
        return "grows"
    if np.any(np.isnan(values)):
        return "undefined"
    changes = np.diff(values)
    early, late = np.max(np.abs(changes[:4])), np.max(np.abs(changes[-4:]))
    rounding = noise * np.max(np.abs(values))
    if late <= rounding or late < 0.5 * early:
        return "settles"
    directions = np.sign(changes[np.abs(changes) > rounding])
    return "grows" if np.all(directions == directions[0]) else "oscillates"


def _limits(left, right, noise: float) -> str:
    """What a column does at a point, from its values on the left and on the right
    (each ordered from far to near; changes below ``noise`` of the values are
    rounding): "grows", "oscillates", "undefined", "jump" (two limits) or
    "continuous"."""
    sides = (_side(left, noise), _side(right, noise))
    for state in ("grows", "oscillates"):
        if state in sides:
            return state
    if "undefined" in sides:
        return "undefined"
    # two limits: the gap between the sides does not shrink with the distance (as it
    # does where the column is continuous, however steep: tanh(50x)), and it is more
    # than rounding and than what the last step of distance changes (abs(x - 0.3) in
    # float32, where 0.3 itself is rounded)
    gaps = np.abs(left - right)
    last, middle = gaps[-1], gaps[len(gaps) // 2]
    rounding = noise * max(np.max(np.abs(left)), np.max(np.abs(right)))
    last_step = abs(left[-1] - left[-2]) + abs(right[-1] - right[-2])
    if last >= 0.5 * middle and last > rounding and last > 4 * last_step:
        return "jump"
    return "continuous"


def _disagreement(xs, values, slopes):
    """Per interval between samples: how far the trapezoid rule on ``slopes`` misses the
    change of ``values`` (0 where they agree, up to 1 where they have nothing to do with
    each other). The denominator's floor (1e-3 of the values' spread) keeps changes at
    the level of rounding from counting."""
    h = np.diff(xs)
    change = np.diff(values)
    trapezoid = h * (slopes[:-1] + slopes[1:]) / 2
    size = np.abs(change) + np.abs(h) * (np.abs(slopes[:-1]) + np.abs(slopes[1:])) / 2
    finite = values[np.isfinite(values)]
    spread = float(np.percentile(finite, 95) - np.percentile(finite, 5)) if finite.size else 0.0
    out = np.abs(change - trapezoid) / (size + 1e-3 * spread + 1e-300)
    return np.where(np.isfinite(out), out, 0.0)


def _shortest_between(lo: float, hi: float) -> float:
    """The number with the fewest significant digits in [lo, hi] (0 if it is there): the
    x of a point located to within a bracket, in its simplest form."""
    lo, hi = min(lo, hi), max(lo, hi)
    if lo <= 0 <= hi:
        return 0.0
    middle = lo / 2 + hi / 2
    for digits in range(17):
        candidate = float(f"{middle:.{digits}e}")
        if lo <= candidate <= hi:
            return candidate
    return middle


def _distinct(points, step):
    """Each point once: a later one of the same kind within a sample step of an earlier
    one is the same point, found twice (a pole is a steep change of f and of f')."""
    out = []
    for point in points:
        if not any(p[0] == point[0] and abs(p[1] - point[1]) <= step for p in out):
            out.append(point)
    return out
