"""The numeric cross-check: central finite differences, and one-sided ones for kinks.

``f(values) -> float`` evaluates the program's (summed) target with the given values;
``numeric_gradient`` perturbs one source at a time around ``point``.

- Step: ``h = eps**(1/3) * max(1, |x|)`` per element (eps = float64 machine epsilon), the
  step that balances the central difference's truncation error (~h^2) against rounding
  (~eps/h). The step actually taken is ``(x + h) - x``, so it is exact in binary.
- Small sources (at most ``full_limit`` elements, default 64) get the full gradient, one
  element at a time: 4 evaluations per element (steps h and h/16) plus one at the point.
- Larger sources get one random direction ``u = v * max(1, |x|)`` (``v`` standard normal
  scaled to max |v| = 1, from a fixed seed, so runs are reproducible); the result is the
  directional derivative, to compare with ``dot(tape_gradient, u)``.
- Error estimate: ``2 |c(h) - c(h/16)|`` (twice the truncation error of ``c(h)``, within
  rounding) plus the rounding bound ``4 eps max|f| / h``; compare.py adds it to its
  tolerance.
- Kinks: a derivative jump shows as one-sided differences ``(f(x+h)-f(x))/h`` and
  ``(f(x)-f(x-h))/h`` that disagree by an amount that does not shrink with the step
  (for a smooth function it shrinks 16-fold from h to h/16); a jump in the value itself
  shows as ``f(x+h) - f(x-h)`` that does not shrink. Either marks the element ``kink``.
  A kink anywhere within the step is seen, not only exactly at the point.
- An evaluation that raises or gives a non-finite value leaves ``nan`` for that element
  (no estimate), with the reason in ``note``.

>>> import numpy as np
>>> res = numeric_gradient(lambda v: float(np.sum(v["x"] ** 2)), {"x": np.array([1.0, 2.0])}, ["x"])
>>> np.round(res["x"].value, 6).tolist()
[2.0, 4.0]
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

EPS = float(np.finfo(np.float64).eps)
STEP = EPS ** (1.0 / 3.0)
# Sources up to this many elements get the full per-element gradient.
FULL_LIMIT = 64
# The second, smaller step (h / SHRINK) that separates smooth behaviour from kinks.
SHRINK = 16.0
# One-sided differences disagreeing by more than this (relative to the slopes) may be a kink.
KINK_RTOL = 1e-6


@dataclass
class NumericGradient:
    """Finite-difference estimate for one source.

    - ``method``: ``"central"`` (``value`` has the source's shape) or ``"direction"``
      (``value`` is the 0-d directional derivative along ``direction``).
    - ``value``: float64 array; ``nan`` where no estimate could be made. None when the
      whole source could not be perturbed (``note`` says why).
    - ``error``: estimated absolute error of ``value`` (same shape).
    - ``kink``: bool array (same shape): a kink or jump lies within the step.
    - ``direction``: the perturbation ``u`` for ``method == "direction"``.
    """
    name: str
    method: str
    value: np.ndarray | None = None
    error: np.ndarray | None = None
    kink: np.ndarray | None = None
    direction: np.ndarray | None = None
    note: str | None = None


class _Evaluator:
    """Calls ``f`` with one source replaced, turning failures into nan."""

    def __init__(self, f: Callable[[dict], Any], point: dict[str, np.ndarray]) -> None:
        self.f = f
        self.point = point
        self.failure: str | None = None

    def __call__(self, name: str | None = None, value: np.ndarray | None = None) -> float:
        values = self.point if name is None else {**self.point, name: value}
        try:
            with np.errstate(all="ignore"):
                out = self.f(values)
            out = np.asarray(out.numpy() if hasattr(out, "numpy") else out, dtype=np.float64)
            result = float(np.sum(out))
        except Exception as err:  # noqa: BLE001 - a failed evaluation is "no estimate"
            if self.failure is None:
                self.failure = f"evaluating the program failed: {type(err).__name__}: {err}"
            return float("nan")
        return result


@dataclass
class _Probe:
    """f at x - h, x, x + h and at x -/+ h/16 along one perturbation."""
    f0: float
    plus: float
    minus: float
    h_plus: float
    h_minus: float
    plus2: float
    minus2: float
    h_plus2: float
    h_minus2: float

    def central(self, small: bool = False) -> float:
        if small:
            return (self.plus2 - self.minus2) / (self.h_plus2 + self.h_minus2)
        return (self.plus - self.minus) / (self.h_plus + self.h_minus)

    def finite(self) -> bool:
        return bool(np.isfinite([self.f0, self.plus, self.minus, self.plus2, self.minus2]).all())

    def error(self) -> float:
        fmax = max(abs(self.f0), abs(self.plus), abs(self.minus))
        rounding = 4.0 * EPS * fmax / min(self.h_plus, self.h_minus)
        # |c(h) - c(h/16)| is 255/256 of c(h)'s truncation error; 2x leaves a margin.
        return 2.0 * abs(self.central() - self.central(small=True)) + rounding

    def kink(self) -> bool:
        fmax = max(abs(self.f0), abs(self.plus), abs(self.minus), abs(self.plus2),
                   abs(self.minus2))
        h = min(self.h_plus, self.h_minus)
        # A jump in the value: f(x+h) - f(x-h) does not shrink with the step.
        jump, jump2 = self.plus - self.minus, self.plus2 - self.minus2
        if abs(jump) > 64.0 * 4.0 * EPS * fmax and abs(jump2 - jump) <= 0.5 * abs(jump):
            return True
        # A jump in the slope: right - left does not shrink with the step.
        right, left = (self.plus - self.f0) / self.h_plus, (self.f0 - self.minus) / self.h_minus
        right2 = (self.plus2 - self.f0) / self.h_plus2
        left2 = (self.f0 - self.minus2) / self.h_minus2
        gap, gap2 = right - left, right2 - left2
        noise = 4.0 * EPS * fmax / h
        threshold = KINK_RTOL * max(1.0, abs(right), abs(left)) + 64.0 * noise
        return abs(gap) > threshold and abs(gap2 - gap) <= 0.5 * abs(gap)


def _probe(evaluate: _Evaluator, name: str, x: np.ndarray, f0: float,
           move: Callable[[float], tuple[np.ndarray, float]]) -> _Probe:
    """f at the four points ``move(t)`` gives for t = +-1 and +-1/16 (value, step taken)."""
    def at(t: float) -> tuple[float, float]:
        moved, taken = move(t)
        return evaluate(name, moved), taken

    plus, h_plus = at(1.0)
    minus, h_minus = at(-1.0)
    plus2, h_plus2 = at(1.0 / SHRINK)
    minus2, h_minus2 = at(-1.0 / SHRINK)
    return _Probe(f0, plus, minus, h_plus, h_minus, plus2, minus2, h_plus2, h_minus2)


def numeric_gradient(f: Callable[[dict], Any], point: Mapping[str, Any], wrt: Sequence[str], *,
                     full_limit: int = FULL_LIMIT, seed: int = 0,
                     step: float = STEP) -> dict[str, NumericGradient]:
    """Finite-difference gradient of ``f`` at ``point`` for each name of ``wrt``.

    ``f`` takes a dict ``{name: float64 array}`` (``point`` with one entry perturbed) and
    returns the scalar target. Returns ``{name: NumericGradient}`` in ``wrt`` order.

    >>> import numpy as np
    >>> res = numeric_gradient(lambda v: float(abs(v["x"])), {"x": 0.0}, ["x"])
    >>> bool(res["x"].kink)
    True
    """
    values = {name: np.array(v.numpy() if hasattr(v, "numpy") else v, dtype=np.float64)
              for name, v in point.items()}
    evaluate = _Evaluator(f, values)
    f0 = evaluate()
    results: dict[str, NumericGradient] = {}
    for k, name in enumerate(dict.fromkeys(wrt)):
        if name not in values:
            results[name] = NumericGradient(name, "central",
                                            note=f"no value for {name!r} to perturb")
            continue
        x = values[name]
        if not np.isfinite(f0):
            results[name] = NumericGradient(name, "central", note=evaluate.failure
                                            or "the target is not finite at the point")
            continue
        if x.size <= full_limit:
            results[name] = _central(evaluate, name, x, f0, step * np.maximum(1.0, np.abs(x)))
        else:
            results[name] = _directional(evaluate, name, x, f0, step, seed + k)
    return results


def _central(evaluate: _Evaluator, name: str, x: np.ndarray, f0: float,
             scale: np.ndarray) -> NumericGradient:
    value = np.full(x.shape, np.nan)
    error = np.full(x.shape, np.nan)
    kink = np.zeros(x.shape, dtype=bool)
    missing = 0
    for idx in np.ndindex(x.shape):
        def move(t: float, idx=idx) -> tuple[np.ndarray, float]:
            moved = x.copy()
            moved[idx] = x[idx] + t * scale[idx]
            return moved, abs(moved[idx] - x[idx])  # the step actually representable

        probe = _probe(evaluate, name, x, f0, move)
        if not probe.finite():
            missing += 1
            continue
        value[idx] = probe.central()
        error[idx] = probe.error()
        kink[idx] = probe.kink()
    note = None
    if missing:
        what = "the element" if x.ndim == 0 else f"{missing} of {x.size} elements"
        note = (evaluate.failure or
                f"the target is not finite within a step of the point ({what})")
    return NumericGradient(name, "central", value, error, kink, note=note)


def _directional(evaluate: _Evaluator, name: str, x: np.ndarray, f0: float, step: float,
                 seed: int) -> NumericGradient:
    v = np.random.default_rng(seed).standard_normal(x.shape)
    v /= np.max(np.abs(v))
    direction = v * np.maximum(1.0, np.abs(x))

    def move(t: float) -> tuple[np.ndarray, float]:
        return x + (t * step) * direction, abs(t) * step

    probe = _probe(evaluate, name, x, f0, move)
    if not probe.finite():
        return NumericGradient(name, "direction", np.asarray(np.nan), np.asarray(np.nan),
                               np.asarray(False), direction,
                               note=evaluate.failure
                               or "the target is not finite within a step of the point")
    return NumericGradient(name, "direction", np.asarray(probe.central()),
                           np.asarray(probe.error()), np.asarray(probe.kink()), direction)
