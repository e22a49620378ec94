"""Sampling a program and its derivatives over a range: the math of ``gradcli plot``.

``sample`` is the one place that evaluates many points, so that a batching transform can
replace it. Until one lands it uses the elementwise-sum trick where it is valid: the
program is evaluated once with the ranged name bound to all the points, and the gradient
of the (implicitly summed) output with respect to it gives every point's derivative --
exact when output i depends on point i alone. That is checked, not assumed: the output
must have the points' shape, and the values and derivatives at the first, middle and last
points must agree with single-point evaluations (``sum(x)``, ``x * mean(x)``, matrix
products fail it). Otherwise each point is evaluated on its own (a loop in this process).

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
from .errors import GradcliError, InputError

__all__ = ["parse_range", "sample", "points_of_interest", "range_text"]

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
    kind = model.kinds.get(name)
    args = list(model.arg_values)
    with ExitStack() as stack:
        tapes = [stack.enter_context(gc.GradientTape()) for _ in range(order)]
        if kind == "arg":
            i = model.arg_names.index(name)
            if value is not None:
                args[i] = gc.constant(value, dtype=model.dtype)
            x = args[i]
        else:
            x = model.source(name)
            if value is not None:
                x.assign(value)
        for tape in tapes:
            tape.watch(x)
        y = model.function(*args)
        out = [np.asarray(y.numpy(), dtype=float)]
        current = y
        for k in range(order):
            # the innermost tape differentiates first, while the outer ones still record
            current = tapes[order - 1 - k].gradient(current, x) if current is not None else None
            out.append(np.zeros(np.shape(x)) if current is None
                       else np.asarray(current.numpy(), dtype=float))
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
    table = None
    try:
        with np.errstate(all="ignore"):
            table = _derivatives(make_model(range_text(xs)), name, order)
        if any(np.shape(c) != xs.shape for c in table):
            table = None
    except GradcliError:
        table = None
    if table is not None:
        for i in sorted({0, len(xs) // 2, len(xs) - 1}):
            with np.errstate(all="ignore"):
                expected = _at_point(single, name, order, xs[i])
            got = [c[i] for c in table]
            if not np.allclose(got, expected, rtol=1e-9, atol=1e-12, equal_nan=True):
                table = None
                break
    if table is not None:
        return table, "vectorised"
    with np.errstate(all="ignore"):
        rows = [_at_point(single, name, order, x) for x in xs]
    return [np.array(col) for col in zip(*rows)], "loop"


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
