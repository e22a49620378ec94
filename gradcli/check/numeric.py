"""The numeric cross-check: central finite differences, and one-sided ones for kinks.

``f(values) -> float`` evaluates the program's (summed) target with the given values;
``numeric_gradient`` perturbs one source at a time around ``point``.

- Step: ``h = eps**(1/3) * max(1, |x|)`` per element (eps = float64 machine epsilon), the
  step that balances the central difference's truncation error (~h^2) against rounding
  (~eps/h). The step actually taken is ``(x + h) - x``, so it is exact in binary.
- Small sources (at most ``full_limit`` elements, default 64) get the full gradient, one
  element at a time: 6 evaluations per element (steps h, h/16 and h/256, both sides) plus
  one at the point.
- Larger sources get one random direction ``u = v * max(1, |x|)`` (``v`` standard normal
  scaled to max |v| = 1, from a fixed seed, so runs are reproducible); the result is the
  directional derivative, to compare with ``dot(tape_gradient, u)``.
- Error estimate: ``2 |c(h) - c(h/16)|`` (twice the truncation error of ``c(h)``, within
  rounding) plus the rounding bound ``4 eps max|f| / h``; compare.py adds it to its
  tolerance.
- What lies at the point (``kind``, per element), from the five values of f:

  ================  ==================================================================
  ``overflow``      f is +inf (or -inf) at the point and at all four neighbours
  ``singularity``   f is not finite at the point but is beside it (``1/x`` at 0), or the
                    one-sided slopes grow as the step shrinks (``sqrt(abs(x))`` at 0:
                    an unbounded derivative)
  ``discontinuity`` ``f(x+h) - f(x-h)`` does not shrink with the step (a jump)
  ``kink``          f is continuous but the one-sided slopes ``(f(x+h)-f(x))/h`` and
                    ``(f(x)-f(x-h))/h`` disagree by an amount that does not shrink with
                    the step (for a smooth function it shrinks 16-fold from h to h/16)
  ================  ==================================================================

  A kink or jump anywhere within the step is seen, not only exactly at the point; both
  set ``kink`` too (the element's estimate is not a derivative).
- Resolution (``unresolved``, per element): the estimate means something only if the step
  is small against the function's own scale. Two tests, both needed, at the scales h and
  h/16 and again at h/16 and h/256: the gap between the one-sided slopes shrinks with the
  step (``|gap(h/16)| <= |gap(h)|/4``), and the quadratic through ``f(x-h), f(x), f(x+h)``
  predicts ``f(x -/+ h/16)`` to within a tenth of the change over the step (a resolved
  function misses by at most about 1/16 of it). ``sin(x)`` at ``x = 1e20`` (a step of
  6e14, far more than the period) fails: its differences are noise, however small their
  spread, and noise passes all four tests only by a rare chance (none in 3,000 points of
  ``sin``, ``cos`` and ``sin(3x)`` from 1e3 to 1e20 tried when this was written).
- An evaluation that raises or gives a non-finite value leaves ``nan`` for that element
  (no estimate), with the reason in ``note``.
- Time: with a ``deadline`` (``time.monotonic()`` seconds), elements not reached by then
  are left without an estimate and ``note`` says so; :func:`numeric_in_worker` also runs
  the whole computation in a worker process killed at the deadline, so that one slow
  evaluation cannot outlast the check's time limit.

>>> import numpy as np
>>> res = numeric_gradient(lambda v: float(np.sum(v["x"] ** 2)), {"x": np.array([1.0, 2.0])}, ["x"])
>>> np.round(res["x"].value, 6).tolist()
[2.0, 4.0]
"""
from __future__ import annotations

import contextlib
import sys
import time
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
# What may lie at the point (see the module docstring), in the order they are tested.
KINDS = ("overflow", "singularity", "discontinuity", "kink")


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
    - ``kind``: object array of str (same shape): "" (nothing seen) or one of ``KINDS``;
      ``detail`` the matching words ("jumps from 1 to 3", ...), "" where nothing.
    - ``unresolved``: bool array (same shape): the step is too large for the function's
      scale, so ``value`` is noise (see the module docstring).
    - ``rounding``: the rounding part of ``error`` (same shape).
    """
    name: str
    method: str
    value: np.ndarray | None = None
    error: np.ndarray | None = None
    kink: np.ndarray | None = None
    direction: np.ndarray | None = None
    note: str | None = None
    kind: np.ndarray | None = None
    detail: np.ndarray | None = None
    unresolved: np.ndarray | None = None
    rounding: np.ndarray | None = None


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
    # The same probe one scale finer (h/16 and h/256), evaluated when asked.
    finer: Callable[[], _Probe] | None = None
    cached: _Probe | None = None

    def central(self, small: bool = False) -> float:
        if small:
            return (self.plus2 - self.minus2) / (self.h_plus2 + self.h_minus2)
        return (self.plus - self.minus) / (self.h_plus + self.h_minus)

    def finite(self) -> bool:
        return bool(np.isfinite([self.f0, self.plus, self.minus, self.plus2, self.minus2]).all())

    def error(self) -> float:
        # |c(h) - c(h/16)| is 255/256 of c(h)'s truncation error; 2x leaves a margin.
        return 2.0 * abs(self.central() - self.central(small=True)) + self.rounding()

    def at_bad_point(self) -> tuple[str, str]:
        """f not finite at the point: overflow (inf all around) or a singularity."""
        around = [self.plus, self.minus, self.plus2, self.minus2]
        if np.isinf(self.f0) and all(v == self.f0 for v in around):
            return "overflow", (f"the target is {self.f0:g} at the point and all around it "
                                "(beyond float64's range)")
        if any(np.isfinite(around)):
            return "singularity", (f"the target is {self.f0:g} at the point but finite "
                                   "beside it")
        return "", ""

    def rounding(self) -> float:
        fmax = max(abs(self.f0), abs(self.plus), abs(self.minus))
        return 4.0 * EPS * fmax / min(self.h_plus, self.h_minus)

    def kink(self) -> bool:
        return self.classify()[0] in ("discontinuity", "kink")

    def _fmax(self) -> float:
        return max(abs(self.f0), abs(self.plus), abs(self.minus), abs(self.plus2),
                   abs(self.minus2))

    def _slopes(self) -> tuple[float, float, float, float]:
        right, left = (self.plus - self.f0) / self.h_plus, (self.f0 - self.minus) / self.h_minus
        right2 = (self.plus2 - self.f0) / self.h_plus2
        left2 = (self.f0 - self.minus2) / self.h_minus2
        return right, left, right2, left2

    def classify(self) -> tuple[str, str]:
        """What lies at the point: ("", "") or (one of KINDS, words); f finite here.

        A candidate must show again between h/16 and h/256 (two more evaluations, only
        then): a function the step cannot resolve (``sin`` at 1e20) gives noise that
        mimics a jump or a kink at one scale, but not the same one at the next.
        """
        kind, detail = self._classify_once()
        if not kind or self.finer is None:
            return kind, detail
        finer = self.refined()
        if not finer.finite() or finer._classify_once()[0] != kind:
            return "", ""
        return kind, finer._classify_once()[1]

    def _classify_once(self) -> tuple[str, str]:
        fmax = self._fmax()
        h = min(self.h_plus, self.h_minus)
        noise = 4.0 * EPS * fmax / h
        # A jump in the value: f(x+h) - f(x-h) does not shrink with the step.
        jump, jump2 = self.plus - self.minus, self.plus2 - self.minus2
        if abs(jump) > 64.0 * 4.0 * EPS * fmax and abs(jump2 - jump) <= 0.25 * abs(jump):
            return "discontinuity", (f"the value jumps from {self.minus2:.6g} to "
                                     f"{self.plus2:.6g} across the point")
        right, left, right2, left2 = self._slopes()
        # Slopes that grow as the step shrinks, keeping their signs, alike on both sides:
        # an unbounded derivative (|x|**p, 0 < p < 1, grows 16**(1-p)-fold from h to h/16).
        if (min(abs(right), abs(left)) > 64.0 * noise
                and right * right2 > 0 and left * left2 > 0):
            grow_r, grow_l = abs(right2 / right), abs(left2 / left)
            if min(grow_r, grow_l) > 2.0 and max(grow_r, grow_l) <= 1.5 * min(grow_r, grow_l):
                return "singularity", (f"the one-sided slopes grow as the step shrinks "
                                       f"({right:.3g} -> {right2:.3g}, {left:.3g} -> "
                                       f"{left2:.3g}): an unbounded derivative")
        # A jump in the slope: right - left does not shrink with the step.
        gap, gap2 = right - left, right2 - left2
        threshold = KINK_RTOL * max(1.0, abs(right), abs(left)) + 64.0 * noise
        if abs(gap) > threshold and abs(gap2 - gap) <= 0.25 * abs(gap):
            return "kink", (f"the one-sided slopes differ: {left2:.6g} on the left, "
                            f"{right2:.6g} on the right")
        return "", ""

    def unresolved(self) -> bool:
        """The step is too large for the function's scale here (see the module doc)."""
        if self._unresolved_once():
            return True
        # Near an extremum, or in noise, the curvature over the step is as large as the
        # slope: then the same tests one scale finer too (two more evaluations), which
        # noise passes again only by a rare chance.
        if self.finer is not None:
            finer = self.refined()
            return not finer.finite() or finer._unresolved_once()
        return False

    def _unresolved_once(self) -> bool:
        h = min(self.h_plus, self.h_minus)
        right, left, right2, left2 = self._slopes()
        # Rounding in one value is up to ~2 eps fmax; slopes at h/16 carry 16x its effect.
        noise = 4.0 * EPS * self._fmax()
        if abs(right2 - left2) > 0.25 * abs(right - left) + 4.0 * SHRINK * noise / h:
            return True
        # The quadratic through x-h, x, x+h, evaluated at x -/+ h/16 (for a resolved
        # function it misses by at most about 1/16 of the change: t**3 at 0).
        change = max(abs(self.plus - self.f0), abs(self.minus - self.f0))
        half_d2 = (right - left) / (self.h_plus + self.h_minus)
        slope = self.central()
        for t, actual in ((self.h_plus2, self.plus2), (-self.h_minus2, self.minus2)):
            predicted = self.f0 + slope * t + half_d2 * t * t
            if abs(predicted - actual) > 0.1 * change + 16.0 * noise:
                return True
        return False

    def refined(self) -> _Probe:
        """The probe one scale finer (evaluated once, on first use)."""
        if self.cached is None:
            self.cached = self.finer()
        return self.cached


def _probe(evaluate: _Evaluator, name: str, x: np.ndarray, f0: float,
           move: Callable[[float], tuple[np.ndarray, float]]) -> _Probe:
    """f at the four points ``move(t)`` gives for t = +-1 and +-1/16 (value, step taken);
    ``finer()`` adds t = +-1/256."""
    def at(t: float) -> tuple[float, float]:
        moved, taken = move(t)
        return evaluate(name, moved), taken

    plus, h_plus = at(1.0)
    minus, h_minus = at(-1.0)
    plus2, h_plus2 = at(1.0 / SHRINK)
    minus2, h_minus2 = at(-1.0 / SHRINK)

    def finer() -> _Probe:
        plus3, h_plus3 = at(1.0 / SHRINK ** 2)
        minus3, h_minus3 = at(-1.0 / SHRINK ** 2)
        return _Probe(f0, plus2, minus2, h_plus2, h_minus2, plus3, minus3, h_plus3, h_minus3)
    return _Probe(f0, plus, minus, h_plus, h_minus, plus2, minus2, h_plus2, h_minus2, finer)


def numeric_gradient(f: Callable[[dict], Any], point: Mapping[str, Any], wrt: Sequence[str], *,
                     full_limit: int = FULL_LIMIT, seed: int = 0, step: float = STEP,
                     deadline: float | None = None) -> dict[str, NumericGradient]:
    """Finite-difference gradient of ``f`` at ``point`` for each name of ``wrt``.

    ``f`` takes a dict ``{name: float64 array}`` (``point`` with one entry perturbed) and
    returns the scalar target. Returns ``{name: NumericGradient}`` in ``wrt`` order.
    ``deadline`` (a ``time.monotonic()`` value): elements not reached by then get no
    estimate, and ``note`` says the time ran out.

    >>> import numpy as np
    >>> res = numeric_gradient(lambda v: float(abs(v["x"])), {"x": 0.0}, ["x"])
    >>> bool(res["x"].kink), str(res["x"].kind)
    (True, 'kink')
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
        if not np.isfinite(f0) and evaluate.failure is not None:
            results[name] = NumericGradient(name, "central", note=evaluate.failure)
            continue
        if x.size <= full_limit:
            results[name] = _central(evaluate, name, x, f0, step * np.maximum(1.0, np.abs(x)),
                                     deadline)
        else:
            results[name] = _directional(evaluate, name, x, f0, step, seed + k, deadline)
    return results


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


TIME_NOTE = "took longer than the check's time limit"


def _central(evaluate: _Evaluator, name: str, x: np.ndarray, f0: float,
             scale: np.ndarray, deadline: float | None = None) -> NumericGradient:
    value = np.full(x.shape, np.nan)
    error = np.full(x.shape, np.nan)
    rounding = np.full(x.shape, np.nan)
    kink = np.zeros(x.shape, dtype=bool)
    unresolved = np.zeros(x.shape, dtype=bool)
    kind = np.full(x.shape, "", dtype=object)
    detail = np.full(x.shape, "", dtype=object)
    missing = late = 0
    for idx in np.ndindex(x.shape):
        if _late(deadline):
            late += 1
            continue

        def move(t: float, idx=idx) -> tuple[np.ndarray, float]:
            moved = x.copy()
            moved[idx] = x[idx] + t * scale[idx]
            return moved, abs(moved[idx] - x[idx])  # the step actually representable

        probe = _probe(evaluate, name, x, f0, move)
        if not np.isfinite(f0):
            kind[idx], detail[idx] = probe.at_bad_point()
            missing += 1
            continue
        if not probe.finite():
            missing += 1
            continue
        value[idx] = probe.central()
        error[idx] = probe.error()
        rounding[idx] = probe.rounding()
        kind[idx], detail[idx] = probe.classify()
        kink[idx] = kind[idx] in ("discontinuity", "kink")
        unresolved[idx] = not kind[idx] and probe.unresolved()
    notes = []
    if missing:
        what = "the element" if x.ndim == 0 else f"{missing} of {x.size} elements"
        notes.append(evaluate.failure or (f"the target is not finite at the point ({what})"
                                          if not np.isfinite(f0) else
                                          f"the target is not finite within a step of the "
                                          f"point ({what})"))
    if late:
        what = "" if x.ndim == 0 else f" ({late} of {x.size} elements not reached)"
        notes.append(TIME_NOTE + what)
    return NumericGradient(name, "central", value, error, kink, note="; ".join(notes) or None,
                           kind=kind, detail=detail, unresolved=unresolved, rounding=rounding)


def _directional(evaluate: _Evaluator, name: str, x: np.ndarray, f0: float, step: float,
                 seed: int, deadline: float | None = None) -> NumericGradient:
    v = np.random.default_rng(seed).standard_normal(x.shape)
    v /= np.max(np.abs(v))
    direction = v * np.maximum(1.0, np.abs(x))

    def move(t: float) -> tuple[np.ndarray, float]:
        return x + (t * step) * direction, abs(t) * step

    def empty(note: str, kind: str = "", detail: str = "") -> NumericGradient:
        return NumericGradient(name, "direction", np.asarray(np.nan), np.asarray(np.nan),
                               np.asarray(False), direction, note=note,
                               kind=np.asarray(kind, dtype=object),
                               detail=np.asarray(detail, dtype=object),
                               unresolved=np.asarray(False), rounding=np.asarray(np.nan))

    if _late(deadline):
        return empty(TIME_NOTE)
    probe = _probe(evaluate, name, x, f0, move)
    if not np.isfinite(f0):
        return empty(evaluate.failure or "the target is not finite at the point",
                     *probe.at_bad_point())
    if not probe.finite():
        return empty(evaluate.failure or "the target is not finite within a step of the point")
    kind, detail = probe.classify()
    return NumericGradient(name, "direction", np.asarray(probe.central()),
                           np.asarray(probe.error()), np.asarray(kind in ("discontinuity",
                                                                          "kink")),
                           direction, kind=np.asarray(kind, dtype=object),
                           detail=np.asarray(detail, dtype=object),
                           unresolved=np.asarray(not kind and probe.unresolved()),
                           rounding=np.asarray(probe.rounding()))


# ---------------------------------------------------------------------------------------
# The worker process: finite differences under the check's time limit
# ---------------------------------------------------------------------------------------
def _worker(conn, jobs: list, timeout: float) -> None:
    try:
        # The clock starts when the worker runs (a loaded machine may be slow to fork);
        # CLOCK_MONOTONIC is shared by every process, so the parent can use this start.
        start = time.monotonic()
        conn.send(("ready", start))
        # The jobs stop a little before the worker is killed, to send what they have.
        soft = start + timeout - min(0.25, 0.1 * timeout)
        for job in jobs:
            conn.send(("result", job(soft)))
        conn.send(("done",))
    except BaseException as err:  # noqa: BLE001 - report, never a traceback on the terminal
        with contextlib.suppress(Exception):
            conn.send(("error", f"finite differences failed: {type(err).__name__}: {err}"))
    finally:
        conn.close()


class NumericRun:
    """Finite-difference jobs running in a worker until a deadline (see
    :func:`numeric_in_worker`); :meth:`collect` waits for them.

    A thread reads the worker's results as they come, while the caller waits for sympy:
    a result that is more than a pipe holds (a Jacobian's) never blocks the worker, and
    a result finished in time is kept however long sympy takes afterwards.
    """

    def __init__(self, jobs: list, names: Sequence[str], timeout: float) -> None:
        self.names = list(dict.fromkeys(names))
        self.timeout = timeout
        # Until the worker says it runs: as long as sympy's worker may take to start.
        self.deadline = time.monotonic() + timeout + 60.0
        self.results: dict[str, NumericGradient] = {}
        self.failure: str | None = None
        self.process = self.receiver = self.reader = None
        import multiprocessing as mp
        if "fork" not in mp.get_all_start_methods():
            # Without fork the jobs (closures over the model) cannot be sent to a worker:
            # run them here, stopping between evaluations at the deadline.
            soft = time.monotonic() + timeout
            for job in jobs:
                self.results.update(job(soft))
            return
        ctx = mp.get_context("fork")
        for stream in (sys.stdout, sys.stderr):  # see symbolic.run_worker
            with contextlib.suppress(Exception):
                stream.flush()
        self.receiver, sender = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_worker, args=(sender, jobs, timeout), daemon=True,
                                   name="gradcli-numeric")
        try:
            self.process.start()
        except Exception as err:  # noqa: BLE001 - no worker: no finite differences
            self.failure = f"the finite-difference worker could not start: {err}"
            self.process = None
        sender.close()
        if self.process is not None:
            import threading
            self.reader = threading.Thread(target=self._read, daemon=True,
                                           name="gradcli-numeric-reader")
            self.reader.start()

    def _read(self) -> None:
        """The worker's messages until "done", an error or the deadline; then it is ended."""
        try:
            while self.failure is None:
                remaining = self.deadline - time.monotonic()
                # Past the deadline, what the worker has already sent still counts
                # (poll(0) only looks): only a result not sent by then is out of time.
                if not self.receiver.poll(max(remaining, 0.0)):
                    self.failure = f"took longer than {self.timeout:g}s (the time limit)"
                    break
                try:
                    message = self.receiver.recv()
                except (EOFError, OSError):
                    self.process.join(1.0)
                    self.failure = ("the finite-difference worker stopped unexpectedly "
                                    f"(exit code {self.process.exitcode})")
                    break
                if message[0] == "ready":
                    self.deadline = message[1] + self.timeout
                elif message[0] == "result":
                    self.results.update(message[1])
                elif message[0] == "error":
                    self.failure = message[1]
                else:
                    break
        finally:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(5.0)
            self.receiver.close()

    def collect(self) -> dict[str, NumericGradient]:
        """Every name's result; a name not finished by the deadline says so in ``note``."""
        if self.reader is not None:
            self.reader.join()
            self.reader = self.process = None
        failure = self.failure or "not taken"
        return {name: self.results.get(name) or NumericGradient(name, "central", note=failure)
                for name in self.names}


def numeric_in_worker(jobs: list, names: Sequence[str], timeout: float) -> NumericRun:
    """Start finite-difference ``jobs`` (callables taking a deadline, a
    ``time.monotonic()`` value, and returning ``{name: NumericGradient}``) in a worker
    process killed ``timeout`` seconds after it starts; ``.collect()`` gives
    ``{name: NumericGradient}`` for every name of ``names``.

    The worker runs beside the sympy worker, so the whole check takes about ``timeout``.
    """
    return NumericRun(jobs, names, timeout)
