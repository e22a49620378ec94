"""The verdict of ``--check``: the tape's gradients against sympy and finite differences.

:func:`check_outcome` (a built model and a mode's outcome -> the JSON ``check``
object) is what the command line calls; :func:`run_check` does the same for any program,
point and gradients (the library's entry point). For every source it puts side by side
the tape's gradient, sympy's exact derivative at the point
(:mod:`gradcli.check.symbolic`) and the finite-difference estimate
(:mod:`gradcli.check.numeric`), and gives a status:

- ``ok``: the tape agrees with every usable reference;
- ``mismatch``: it disagrees with one (the command exits 1);
- ``non-differentiable``: the point is a ``kink`` (continuous, the slope jumps:
  ``abs`` at 0), a ``discontinuity`` (the value jumps: ``where(x < 1, x^2, 3*x)`` at 1,
  ``floor`` at an integer) or a ``singularity`` (the target is undefined there, ``1/x``
  or ``arctan2(x, 0)`` at 0, an infinite intermediate; or its derivative is unbounded,
  ``sqrt(x)`` at 0) for some element; ``reason`` starts with which, then the evidence.
  The tape's value there is a convention (``abs'(0) = 0``, ``relu'(0) = 0``, ties split
  1/2, ``arctan2`` at the origin 0) or nan, and is not judged;
- ``overflow``: the derivative is a finite number beyond float64's range (``exp(x)`` at
  710) and the tape gave the infinity float64 rounds it to;
- ``skipped``: sympy could not be used (too large, too deep, too slow, no symbolic form;
  ``reason`` says which) and the finite differences, which then decide, agree; or no
  reference is usable at all; or (``tape`` only) the tape gave None for a source it
  did not watch, which is TensorFlow's answer. Only a mismatch fails the check.

Decisions, element by element:

- what lies at the point: sympy's kind where sympy has a verdict (see
  :mod:`gradcli.check.symbolic`); where sympy has no value, the finite differences'
  (see :mod:`gradcli.check.numeric`: from the one-sided differences and the values of f);
- sympy (exact) decides when it has a value and sees nothing at the point; the finite
  differences are then a second opinion that can still report a mismatch if usable;
- finite differences are *unusable*, never a mismatch, when they straddle a kink near
  the point, when the step cannot resolve the function (``sin`` at 1e20: the step is
  larger than the period), or when their own estimated error is more than a tenth of
  their value (cancellation, rounding in a huge target); ``numeric_unusable`` says why;
- when sympy is skipped (too large, too deep, too slow, no symbolic form), usable finite
  differences decide;
- a point that sympy flags is reported ``non-differentiable`` unless the tape, sympy and
  usable finite differences all agree (``abs(x)**2`` at 0 is differentiable: no need to
  alarm anyone).

The errors shown (``abs_error``, ``rel_error``) are those of the comparisons that
decided: against sympy where it has a value, else against usable finite differences;
never against an unusable reference, and none at a non-differentiable element.

The verdict (``verdict``): ``mismatch`` when any gradient is a mismatch (exit 1);
``nothing to check`` when no source was compared with any reference (no sources, as
when the tape watched nothing, or none with a usable reference: exit 0, and ``passed``
is false); else ``passed``.

``timeout`` (``--check-timeout``) bounds the whole check: sympy and the finite
differences run side by side in worker processes, each stopped at the limit; what did
not finish is reported skipped or "took longer than ...s".

Tolerances (float64 tape): ``|tape - ref| <= atol + rtol * |ref|`` with rtol 1e-6,
atol 1e-8 against sympy, and rtol 1e-4, atol 1e-6 against finite differences, whose own
estimated error (truncation + rounding) is added to the allowance. A float32 tape gets
rtol 1e-3, atol 1e-4 for both. ``--rtol``/``--atol`` replace the defaults for both.
Along a random direction (large sources) the tape's ``dot(gradient, u)`` is compared
with the directional difference, allowing ``atol * sum|u| + rtol * sum|gradient * u|``.

The ``check`` object of ``--json`` (:meth:`CheckReport.to_json`)::

    {"passed": true,                      # true only when the verdict is "passed"
     "verdict": "passed",                 # passed | mismatch | nothing to check
     "reason": "...",                     # present with "nothing to check": why
     "rtol": {"symbolic": 1e-06, "numeric": 0.0001},
     "atol": {"symbolic": 1e-08, "numeric": 1e-06},
     "gradients": [
       {"name": "w1",
        "status": "ok",                   # ok | mismatch | skipped | non-differentiable
                                          #   | overflow
        "reason": "...",                  # present unless a plain ok: why, or a note
        "tape": 5.0,                      # null when the tape gave None (unconnected)
        "symbolic": 5.0,                  # null when sympy was skipped
        "symbolic_skipped": "...",        # present when symbolic is null: why
        "numeric": 5.0,                   # null when no finite difference could be taken
        "numeric_method": "central",      # or "direction" (large sources): then
        "tape_directional": 1.23,         #   numeric is the directional derivative and
                                          #   this the tape's dot(gradient, direction)
        "numeric_unusable": "...",        # present when they could not be used: why
        "abs_error": 0.0,                 # largest |tape - reference| that decided
        "rel_error": 0.0,                 # ... / max(|ref|, atol) (null: none decided)
        "symbolic_derivative": "x1"}]}    # present with want_text (--symbolic)

Arrays are nested lists shaped like the source; non-finite numbers are the strings
``"nan"``, ``"inf"``, ``"-inf"``, as everywhere in gradcli's JSON.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..io.jsonvalue import json_value as _json_value
from ..lang.tree import Assign, Declare, Name, Program
from .numeric import FULL_LIMIT, NumericGradient, numeric_gradient, numeric_in_worker
from .symbolic import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_TIMEOUT,
    SymbolicGradient,
    computed_names,
    symbolic_derivative_text,
    symbolic_gradients,
)


def to_json_value(value: Any) -> Any:
    """``json_value`` (converting arrays in C, non-finite elements included: issue 12)."""
    return _json_value(value)


STATUSES = ("ok", "mismatch", "skipped", "non-differentiable", "overflow")
VERDICTS = ("passed", "mismatch", "nothing to check")


@dataclass(frozen=True)
class Tolerances:
    """Agreement is ``|tape - ref| <= atol + rtol * |ref|`` (per reference)."""
    symbolic_rtol: float = 1e-6
    symbolic_atol: float = 1e-8
    numeric_rtol: float = 1e-4
    numeric_atol: float = 1e-6

    @classmethod
    def for_dtype(cls, dtype: Any = "float64", rtol: float | None = None,
                  atol: float | None = None) -> Tolerances:
        """Defaults for the tape's dtype; a given rtol/atol applies to both references.

        >>> Tolerances.for_dtype("float64", rtol=1e-3).numeric_rtol
        0.001
        >>> Tolerances.for_dtype("float64", atol=float("nan"))
        Traceback (most recent call last):
        ...
        gradcli.errors.InputError: --atol must be a finite number >= 0, got nan
        """
        from ..errors import InputError
        for option, given in (("--rtol", rtol), ("--atol", atol)):
            # nan fails every comparison (a false mismatch), inf passes everything.
            if given is not None and not (np.isfinite(given) and given >= 0):
                raise InputError(f"{option} must be a finite number >= 0, got {given:g}")
        base = cls(1e-3, 1e-4, 1e-3, 1e-4) if np.dtype(dtype) == np.float32 else cls()
        return cls(symbolic_rtol=base.symbolic_rtol if rtol is None else rtol,
                   symbolic_atol=base.symbolic_atol if atol is None else atol,
                   numeric_rtol=base.numeric_rtol if rtol is None else rtol,
                   numeric_atol=base.numeric_atol if atol is None else atol)


@dataclass
class GradientCheck:
    """The verdict for one source (see the module docstring for the fields' meaning)."""
    name: str
    status: str
    tape: np.ndarray | None
    symbolic: np.ndarray | None
    numeric: np.ndarray | None
    numeric_method: str | None
    abs_error: float | None
    rel_error: float | None
    reason: str | None = None
    symbolic_skipped: str | None = None
    tape_directional: float | None = None
    symbolic_derivative: str | None = None
    numeric_unusable: str | None = None
    # False when nothing was compared for this source (no usable reference, or a tape
    # source the tape did not watch); not in the JSON (the status and reason say it).
    checked: bool = True

    def to_json(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        out["tape"] = to_json_value(self.tape)
        out["symbolic"] = to_json_value(self.symbolic)
        if self.symbolic is None and self.symbolic_skipped:
            out["symbolic_skipped"] = self.symbolic_skipped
        out["numeric"] = to_json_value(self.numeric)
        out["numeric_method"] = self.numeric_method
        if self.numeric_unusable:
            out["numeric_unusable"] = self.numeric_unusable
        if self.tape_directional is not None:
            out["tape_directional"] = to_json_value(self.tape_directional)
        out["abs_error"] = to_json_value(self.abs_error)
        out["rel_error"] = to_json_value(self.rel_error)
        if self.symbolic_derivative is not None:
            out["symbolic_derivative"] = self.symbolic_derivative
        return out


@dataclass
class CheckReport:
    """All verdicts, in the mode's order of sources.

    ``verdict``: "mismatch" when any gradient is a mismatch; "nothing to check" when no
    source was compared with any reference (no sources at all, or none with a usable
    reference); else "passed". ``passed`` is True only for "passed".
    """
    gradients: list[GradientCheck]
    tolerances: Tolerances = field(default_factory=Tolerances)

    @property
    def verdict(self) -> str:
        if any(g.status == "mismatch" for g in self.gradients):
            return "mismatch"
        if not any(g.checked for g in self.gradients):
            return "nothing to check"
        return "passed"

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def to_json(self) -> dict:
        tol = self.tolerances
        out = {"passed": self.passed, "verdict": self.verdict}
        if self.verdict == "nothing to check":
            out["reason"] = ("no sources to compare" if not self.gradients else
                             "no source could be compared with a reference")
        out.update({"rtol": {"symbolic": tol.symbolic_rtol, "numeric": tol.numeric_rtol},
                    "atol": {"symbolic": tol.symbolic_atol, "numeric": tol.numeric_atol},
                    "gradients": [g.to_json() for g in self.gradients]})
        return out


# ---------------------------------------------------------------------------------------
# The verdict
# ---------------------------------------------------------------------------------------
def _as_array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value, dtype=np.float64)


def _close(tape: np.ndarray, ref: np.ndarray, allowance: np.ndarray) -> np.ndarray:
    """Elementwise agreement; equal infinities agree, nan never does."""
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(tape) & np.isfinite(ref)
        near = finite & (np.abs(tape - ref) <= allowance)
        same_inf = np.isinf(tape) & np.isinf(ref) & (tape == ref)
    return near | same_inf


def _errors(tape: np.ndarray, ref: np.ndarray, atol: float) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(tape - ref)
        diff = np.where(np.isinf(tape) & np.isinf(ref) & (tape == ref), 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = diff / np.maximum(np.abs(np.nan_to_num(ref, posinf=0.0, neginf=0.0)), atol)
    return diff, rel


def _label(name: str, shape: tuple, idx: tuple) -> str:
    return f"{name}[{','.join(map(str, idx))}]" if shape else name


def _num(v: float) -> str:
    return f"{v + 0.0:.10g}"  # (+ 0.0: a zero reads 0, never -0, as in every output)


def _kinds(kind: Any, kink: Any, shape: tuple) -> np.ndarray:
    """Per-element kind strings ("" or one of KINDS); from ``kink`` alone when a
    hand-made reference has no kinds (a kink flag then means "kink")."""
    if kind is not None:
        return np.broadcast_to(np.asarray(kind, dtype=object), shape)
    if kink is not None:
        return np.where(np.broadcast_to(np.asarray(kink, dtype=bool), shape), "kink", "") \
            .astype(object)
    return np.full(shape, "", dtype=object)


def _per_element(value: Any, shape: tuple, fill: Any) -> np.ndarray:
    if value is None:
        return np.full(shape, fill)
    return np.broadcast_to(np.asarray(value), shape)


# Finite differences whose own estimated error is more than this fraction of their value
# (plus atol) cannot confirm anything: they are reported unusable, never a mismatch.
NUMERIC_USABLE_RTOL = 0.1
NONDIFF_KINDS = ("kink", "discontinuity", "singularity")


class _Evidence:
    """What the verdict for one source reads, computed once: the tape's value, the two
    references, and per element the named masks the decision table is written in."""

    def __init__(self, name: str, tape: Any, symbolic: SymbolicGradient | None,
                 numeric: NumericGradient | None, tol: Tolerances) -> None:
        self.name, self.symbolic, self.numeric, self.tol = name, symbolic, numeric, tol
        self.tape_arr = _as_array(tape)
        self.sym_value = (symbolic.value if symbolic is not None and symbolic.skipped is None
                          else None)
        self.num_value = numeric.value if numeric is not None else None
        self.directional = (numeric is not None and numeric.method == "direction"
                            and self.num_value is not None)
        shape = None
        for candidate in (self.sym_value, None if self.directional else self.num_value,
                          numeric.direction if self.directional else None, self.tape_arr):
            if candidate is not None:
                shape = np.shape(candidate)
                break
        self.shape = () if shape is None else shape
        self.base = {"name": name, "tape": self.tape_arr, "symbolic": self.sym_value,
                     "numeric": self.num_value,
                     "numeric_method": numeric.method if numeric is not None
                     and self.num_value is not None else None,
                     "symbolic_skipped": symbolic.skipped if symbolic is not None
                     else "not run",
                     "symbolic_derivative": symbolic.text if symbolic is not None else None}

    def compare(self) -> None:
        """The per-element comparisons and masks (the tape's shape is the source's)."""
        self.t = self.tape_arr if self.tape_arr is not None else np.zeros(self.shape)
        self._against_sympy()
        self._against_finite_differences()
        self._masks()
        self.numeric_unusable = self._numeric_unusable()

    def _against_sympy(self) -> None:
        shape, tol = self.shape, self.tol
        if self.sym_value is not None:
            self.s = np.asarray(self.sym_value, dtype=np.float64)
            self.s_avail = ~np.isnan(self.s)
            self.s_kind = _kinds(self.symbolic.kind, self.symbolic.kink, shape)
            self.agree_s = _close(self.t, self.s,
                                  tol.symbolic_atol + tol.symbolic_rtol * np.abs(self.s))
        else:
            self.s = np.full(shape, np.nan)
            self.s_avail = self.agree_s = np.zeros(shape, bool)
            self.s_kind = np.full(shape, "", dtype=object)

    def _against_finite_differences(self) -> None:
        """(a direction's verdict applies to every element)"""
        shape, tol, numeric, t = self.shape, self.tol, self.numeric, self.t
        self.tape_directional = self.allowance = None
        self.n_kind = np.full(shape, "", dtype=object)
        self.n_detail = np.full(shape, "", dtype=object)
        if numeric is not None and numeric.kind is not None:
            self.n_kind = _kinds(numeric.kind, None, shape)
            self.n_detail = _per_element(numeric.detail, shape, "")
        if self.directional:
            u = numeric.direction
            n = float(numeric.value)
            self.tape_directional = float(np.sum(t * u))
            scale = float(np.sum(np.abs(u)))
            self.allowance = (tol.numeric_atol * scale
                              + tol.numeric_rtol * max(float(np.sum(np.abs(t * u))), abs(n))
                              + float(numeric.error))
            self.n_avail = np.full(shape, bool(np.isfinite(n)))
            if numeric.kind is None:
                self.n_kind = _kinds(None, np.full(shape, bool(numeric.kink)), shape)
            self.agree_n = np.full(shape, bool(_close(np.asarray(self.tape_directional),
                                                      np.asarray(n),
                                                      np.asarray(self.allowance))))
            self.n_err = np.full(shape, float(numeric.error))
            self.n_ref = np.full(shape, abs(n))
            n_atol = tol.numeric_atol * scale
        elif self.num_value is not None:
            nv = np.asarray(self.num_value, dtype=np.float64)
            self.n_avail = ~np.isnan(nv)
            if numeric.kind is None:
                self.n_kind = _kinds(None, numeric.kink, shape)
            self.n_err = np.nan_to_num(np.asarray(numeric.error, dtype=np.float64), nan=0.0)
            self.agree_n = _close(t, nv, tol.numeric_atol + tol.numeric_rtol * np.abs(nv)
                                  + self.n_err)
            self.n_ref = np.abs(nv)
            n_atol = tol.numeric_atol
        else:
            self.n_avail = self.agree_n = np.zeros(shape, bool)
            self.n_err = self.n_ref = np.zeros(shape)
            n_atol = tol.numeric_atol
        self.unresolved = _per_element(getattr(numeric, "unresolved", None), shape,
                                       False).astype(bool)
        with np.errstate(invalid="ignore"):
            self.rough = self.n_avail & (self.n_err > NUMERIC_USABLE_RTOL * self.n_ref + n_atol)
        self.n_usable = self.n_avail & (self.n_kind == "") & ~self.unresolved & ~self.rough

    def _masks(self) -> None:
        # What lies at the point: sympy says, where it has a verdict; where sympy has a
        # value and sees nothing, a kink in the finite differences is near the point, not at
        # it.
        s_avail, n_usable = self.s_avail, self.n_usable
        self.kind = np.where(self.s_kind != "", self.s_kind,
                             np.where(s_avail, "", self.n_kind)).astype(object)
        all_agree = s_avail & self.agree_s & n_usable & self.agree_n
        self.nondiff = np.isin(self.kind, NONDIFF_KINDS) & ~all_agree
        self.over = self.kind == "overflow"
        over_ok = self.over & (self.agree_s | (~s_avail & np.isinf(self.t)))
        self.smooth = ~self.nondiff & ~self.over
        self.mismatch_s = self.smooth & s_avail & ~self.agree_s
        self.mismatch_n = self.smooth & ~self.mismatch_s & n_usable & ~self.agree_n
        self.mismatch_o = self.over & ~over_ok
        self.unchecked = self.smooth & ~s_avail & ~n_usable
        self.decided_s = (self.smooth | self.over) & s_avail
        self.decided_n = self.smooth & ~s_avail & n_usable
        # (at a kink, discontinuity or singularity the evidence is in the reason already)
        self.blocked = self.n_avail & ~n_usable & ~self.nondiff

    # --- words ------------------------------------------------------------------------
    def first(self, mask: np.ndarray) -> tuple:
        return tuple(int(i) for i in np.argwhere(mask)[0]) if self.shape else ()

    def count(self, mask: np.ndarray) -> str:
        k = int(np.sum(mask))
        return f" ({k} of {mask.size} elements)" if self.shape and mask.size > 1 else ""

    def at(self, mask: np.ndarray) -> str:
        return f" at {self.label(mask)}" if self.shape else ""

    def label(self, mask: np.ndarray) -> str:
        return _label(self.name, self.shape, self.first(mask))

    def errors(self) -> tuple[float | None, float | None]:
        """The errors of the comparisons that decided: sympy where it has a value, else
        usable finite differences (never an unusable reference's)."""
        tol, t = self.tol, self.t
        abs_parts, rel_parts = [], []
        if self.decided_s.any():
            d, r = _errors(t, self.s, tol.symbolic_atol)
            abs_parts.append(d[self.decided_s])
            rel_parts.append(r[self.decided_s])
        if self.directional and self.decided_n.all():
            d, r = _errors(np.asarray(self.tape_directional),
                           np.asarray(float(self.numeric.value)), tol.numeric_atol)
            abs_parts.append(np.atleast_1d(d))
            rel_parts.append(np.atleast_1d(r))
        elif not self.directional and self.decided_n.any():
            d, r = _errors(t, np.asarray(self.num_value, dtype=np.float64), tol.numeric_atol)
            abs_parts.append(d[self.decided_n])
            rel_parts.append(r[self.decided_n])
        abs_all = np.concatenate([np.ravel(p) for p in abs_parts]) if abs_parts else np.empty(0)
        rel_all = np.concatenate([np.ravel(p) for p in rel_parts]) if rel_parts else np.empty(0)
        return (float(abs_all.max()) if abs_all.size else None,
                float(rel_all.max()) if rel_all.size else None)

    def _numeric_unusable(self) -> str | None:
        """Why the finite differences could not be used (reported, never a mismatch)."""
        blocked = self.blocked
        if not blocked.any():
            return None
        idx = self.first(blocked)
        n_err = self.n_err
        if self.n_kind[idx]:
            why = (f"they straddle a {self.n_kind[idx]} near the point"
                   + (f" ({self.n_detail[idx]})" if self.n_detail[idx] else ""))
        elif self.unresolved[idx]:
            why = ("the step is too large for the function's scale here: their values are "
                   "noise (the differences at h and h/16 do not agree)")
        else:
            rounding = _per_element(getattr(self.numeric, "rounding", None), self.shape,
                                    np.nan)
            if np.isfinite(rounding[idx]) and rounding[idx] >= 0.5 * n_err[idx]:
                why = (f"rounding: the target's size swamps its change over the step "
                       f"(estimated error {_num(float(n_err[idx]))})")
            else:
                why = (f"their estimated error {_num(float(n_err[idx]))} is more than "
                       f"{NUMERIC_USABLE_RTOL:g} of their value "
                       f"{_num(float(self.n_ref[idx]))}: the step is too coarse here")
        return f"finite differences unusable{self.at(blocked)}: {why}{self.count(blocked)}"


# --- the reasons, one per row of the decision table --------------------------------------
def _unwatched_reason(e: _Evidence) -> str:
    # A tape gives None for a source it did not watch: TensorFlow's answer, not a bug.
    return ("the tape gave None, but the target depends on it: the tape did not watch it "
            "(watch it to compare its gradient)")


def _sympy_mismatch_reason(e: _Evidence) -> str:
    idx = e.first(e.mismatch_s)
    return (f"tape differs from sympy at {e.label(e.mismatch_s)}: tape {_num(e.t[idx])}, "
            f"sympy {_num(e.s[idx])}{e.count(e.mismatch_s)}")


def _overflow_mismatch_reason(e: _Evidence) -> str:
    return (f"the derivative overflows float64 at {e.label(e.mismatch_o)} but the tape gave "
            f"{_num(e.t[e.first(e.mismatch_o)])}{e.count(e.mismatch_o)}")


def _numeric_mismatch_reason(e: _Evidence) -> str:
    if e.directional:
        return (f"tape differs from finite differences along a random direction: tape "
                f"{_num(e.tape_directional)}, finite differences "
                f"{_num(float(e.numeric.value))}")
    idx = e.first(e.mismatch_n)
    return (f"tape differs from finite differences at {e.label(e.mismatch_n)}: tape "
            f"{_num(e.t[idx])}, finite differences {_num(float(e.num_value[idx]))}"
            f"{e.count(e.mismatch_n)}")


def _nondiff_reason(e: _Evidence) -> str:
    idx = e.first(e.nondiff)
    what = str(e.kind[idx])
    evidence = []
    if e.s_kind[idx] and e.symbolic is not None and e.symbolic.note:
        evidence.append(f"sympy: {e.symbolic.note}")
    if e.n_kind[idx]:
        evidence.append(f"finite differences: {e.n_detail[idx] or e.n_kind[idx]}")
    elif not e.s_kind[idx] and e.numeric is not None and e.numeric.note:
        evidence.append(f"finite differences: {e.numeric.note}")
    kinds = sorted(set(e.kind[e.nondiff]), key=NONDIFF_KINDS.index)
    others = f"; also {', '.join(k for k in kinds if k != what)}" if len(kinds) > 1 else ""
    return (f"{what}{e.at(e.nondiff)}" + (f" ({'; '.join(evidence)})" if evidence else "")
            + f"{e.count(e.nondiff)}{others}")


def _overflow_reason(e: _Evidence) -> str:
    idx = e.first(e.over)
    note = e.symbolic.note if e.symbolic is not None and e.symbolic.note else \
        (str(e.n_detail[idx]) or "beyond float64's range")
    # (the status already says "overflow")
    note = note.removeprefix("overflow: ")
    return f"{note}; the tape's {_num(e.t[idx])} is its float64 value"


def _no_reference_reason(e: _Evidence) -> str:
    symbolic, numeric, unusable = e.symbolic, e.numeric, e.numeric_unusable
    sym_why = "not run" if symbolic is None else \
        (symbolic.skipped or symbolic.note or "no value")
    if unusable is not None:
        num_why = unusable.removeprefix("finite differences ")
    else:
        num_why = numeric.note if numeric is not None and numeric.note else "not taken"
    return f"no reference value (sympy: {sym_why}; finite differences: {num_why})"


def _numeric_decided_reason(e: _Evidence) -> str:
    """sympy could not be used: the finite differences decided, and agree. Says so when
    only the finite differences' own error estimate made them agree."""
    tol = e.tol
    within = ""
    strict = _close(e.t, np.asarray(e.num_value, dtype=np.float64),
                    tol.numeric_atol + tol.numeric_rtol * e.n_ref) if not e.directional \
        else np.full(e.shape, abs(e.tape_directional - float(e.numeric.value))
                     <= e.allowance - float(e.numeric.error))
    if (e.decided_n & ~strict).any():
        within = (" within their estimated error "
                  f"{_num(float(np.max(e.n_err[e.decided_n & ~strict])))}")
    skipped = e.symbolic.skipped if e.symbolic is not None else "not run"
    return f"sympy: {skipped}; finite differences agree{within}"


class _Row(NamedTuple):
    condition: str     # the name of a fact of _facts
    status: str
    checked: bool      # False: nothing was compared for this source
    reason: Callable[[_Evidence], str] | None


# The verdict, read top-down: the first row whose condition holds decides.
_DECISIONS = (
    _Row("unwatched source", "skipped", False, _unwatched_reason),
    _Row("tape differs from sympy", "mismatch", True, _sympy_mismatch_reason),
    _Row("tape is not the overflow", "mismatch", True, _overflow_mismatch_reason),
    _Row("tape differs from finite differences", "mismatch", True,
         _numeric_mismatch_reason),
    _Row("non-differentiable element", "non-differentiable", True, _nondiff_reason),
    _Row("overflowing element", "overflow", True, _overflow_reason),
    _Row("no reference anywhere", "skipped", False, _no_reference_reason),
    _Row("sympy not used", "skipped", True, _numeric_decided_reason),
    _Row("otherwise", "ok", True, None),
)


def _facts(e: _Evidence, none_may_be_right: bool) -> dict[str, bool]:
    """The conditions of the decision table's rows."""
    return {
        # (the tape mode, where a source may be unwatched)
        "unwatched source": (e.tape_arr is None and none_may_be_right
                             and bool(e.mismatch_s.any() or e.mismatch_n.any())),
        "tape differs from sympy": bool(e.mismatch_s.any()),
        "tape is not the overflow": bool(e.mismatch_o.any()),
        "tape differs from finite differences": bool(e.mismatch_n.any()),
        "non-differentiable element": bool(e.nondiff.any()),
        "overflowing element": bool(e.over.any()),
        "no reference anywhere": bool(e.unchecked.all()),
        "sympy not used": e.sym_value is None,
        "otherwise": True,
    }


def _trailing_notes(e: _Evidence, row: _Row) -> list[str]:
    """The notes after the verdict's: unchecked elements of an ok, and why the finite
    differences were unusable or not taken (unless the verdict already says it)."""
    notes = []
    if row.status == "ok" and e.unchecked.any():
        notes.append(f"{int(e.unchecked.sum())} of {e.unchecked.size} elements could not be "
                     "checked")
    numeric, unusable = e.numeric, e.numeric_unusable
    if unusable is not None and not (row.status == "skipped" and not row.checked):
        notes.append(unusable)
    elif (unusable is None and numeric is not None and e.num_value is None
          and numeric.note and row.status not in ("skipped", "non-differentiable")):
        notes.append(f"finite differences not taken: {numeric.note}")
    return notes


def compare_gradient(name: str, tape: Any, symbolic: SymbolicGradient | None,
                     numeric: NumericGradient | None,
                     tolerances: Tolerances = Tolerances(), *,
                     none_may_be_right: bool = False) -> GradientCheck:
    """The verdict for one source, from the tape's value and the two references: the first
    row of ``_DECISIONS`` whose condition holds.

    A tape gradient of None is compared as zeros. ``none_may_be_right`` (the ``tape``
    mode, where a source may be unwatched) turns a None that the references contradict
    into ``skipped`` instead of ``mismatch``: the other modes watch every source, so
    there a None for a source the target depends on is a bug.

    >>> import numpy as np
    >>> from gradcli.check.symbolic import SymbolicGradient
    >>> sym = SymbolicGradient("w1", value=np.asarray(5.0), kink=np.asarray(False))
    >>> compare_gradient("w1", 4.0, sym, None).status
    'mismatch'
    """
    e = _Evidence(name, tape, symbolic, numeric, tolerances)
    if e.tape_arr is not None and e.tape_arr.shape != e.shape:
        return GradientCheck(status="mismatch", abs_error=None, rel_error=None,
                             reason=f"the tape's gradient has shape {e.tape_arr.shape}, the "
                                    f"source has shape {e.shape}", checked=True, **e.base)
    e.compare()
    facts = _facts(e, none_may_be_right)
    row = next(row for row in _DECISIONS if facts[row.condition])
    abs_error, rel_error = e.errors()
    notes = [row.reason(e)] if row.reason is not None else []
    if e.tape_arr is None and row.reason is not _unwatched_reason:  # (which says it)
        notes.append("the tape gave None (not connected)")
    notes += _trailing_notes(e, row)
    return GradientCheck(status=row.status, abs_error=abs_error, rel_error=rel_error,
                         reason="; ".join(notes) or None, tape_directional=e.tape_directional,
                         numeric_unusable=e.numeric_unusable, checked=row.checked, **e.base)


# The --check-timeout range (the command line's option; the library's ``timeout``).
MIN_TIMEOUT, MAX_TIMEOUT = 0.1, 3600.0


def check_timeout(timeout: Any) -> float:
    """``timeout`` as seconds, or an InputError (exit 2) naming the accepted range.

    >>> check_timeout(2)
    2.0
    >>> check_timeout(float("nan"))
    Traceback (most recent call last):
    ...
    gradcli.errors.InputError: --check-timeout must be a number of seconds from 0.1 to 3600, got nan
    """
    from ..errors import InputError
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        seconds = float("nan")
    # Written so that nan fails too (every comparison with nan is False).
    if not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        raise InputError(f"--check-timeout must be a number of seconds from {MIN_TIMEOUT:g} "
                         f"to {MAX_TIMEOUT:g}, got {timeout}")
    return seconds


def run_check(program: Program, point: Mapping[str, Any], wrt: Sequence[str],
              tape_grads: Mapping[str, Any], f_numeric: Callable[[dict], Any], *,
              target: str | None = None, timeout: float = DEFAULT_TIMEOUT,
              rtol: float | None = None, atol: float | None = None,
              dtype: Any = "float64", symbolic: bool = True, want_text: bool = False,
              max_elements: int = DEFAULT_MAX_ELEMENTS, max_depth: int = DEFAULT_MAX_DEPTH,
              full_limit: int = FULL_LIMIT, seed: int = 0,
              intermediates: Iterable[str] | None = None,
              lookup: Callable[[str], Any] | None = None) -> CheckReport:
    """Cross-check the tape's gradients of ``program`` at ``point``; the CLI's ``--check``.

    - ``point``: every declared name (``--var``, ``--frozen``, ``--arg``, and the values of
      the program's ``Variable(...)``/``constant(...)``) -> numpy array; plus the value of
      each intermediate name listed in ``wrt``.
    - ``wrt``: the sources, in the mode's order; ``tape_grads``: name -> the tape's
      gradient (array, Tensor or None when unconnected).
    - ``f_numeric(values) -> float``: evaluates the program's target (summed) in float64
      with ``values`` (same keys as ``point``, one of them perturbed); a value given for an
      intermediate name must replace what the program computes for it.
    - ``intermediates``: which ``wrt`` names are intermediate values (the value of their
      last assignment) rather than inputs; None: every name whose last assignment is a
      computation (``tape --wrt``); pass ``()`` for ``grad`` and the implicit modes.
    - ``timeout``: seconds for the whole check: sympy and the finite differences run
      side by side in worker processes, each stopped at the limit (then reported as
      skipped or unusable, with the reason); ``symbolic=False`` leaves sympy out.
    - ``dtype``: the tape's dtype (float32 loosens the default tolerances).

    >>> import numpy as np
    >>> from gradcli.lang.tree import Binary, ExprStatement, Name, Program
    >>> prog = Program((ExprStatement(Binary("*", Name("w"), Name("x"))),))
    >>> report = run_check(prog, {"w": 2.0, "x": 5.0}, ["w"], {"w": 5.0},
    ...                    lambda v: float(v["w"] * v["x"]))
    >>> report.passed, report.gradients[0].status
    (True, 'ok')
    """
    timeout = check_timeout(timeout)
    wrt = list(dict.fromkeys(wrt))
    tolerances = Tolerances.for_dtype(dtype, rtol, atol)

    def job(deadline: float) -> dict:
        return numeric_gradient(f_numeric, point, wrt, full_limit=full_limit, seed=seed,
                                deadline=deadline)
    numeric = numeric_in_worker([job], wrt, timeout)
    if symbolic:
        sym = symbolic_gradients(program, point, wrt, target, timeout=timeout,
                                 max_elements=max_elements, max_depth=max_depth,
                                 want_text=want_text, intermediates=intermediates,
                                 lookup=lookup)
    else:
        sym = {name: SymbolicGradient(name, skipped="not asked for") for name in wrt}
    num = numeric.collect()
    return CheckReport([compare_gradient(name, tape_grads.get(name), sym.get(name),
                                         num.get(name), tolerances) for name in wrt],
                       tolerances)


# ---------------------------------------------------------------------------------------
# The command line's entry points: a built model and a mode's outcome
# ---------------------------------------------------------------------------------------
def check_outcome(model: Any, outcome: Any, *, rtol: float | None = None,
                  atol: float | None = None, timeout: float = DEFAULT_TIMEOUT,
                  want_text: bool = False) -> dict:
    """``--check`` for one mode's result: the JSON ``check`` object (see the module doc).

    ``model`` is the built program (``gradcli.lang.evaluate.build``), ``outcome`` what
    ``gradcli.run.modes.run_mode`` returned (run first: ``model.values`` then holds every
    name's value). The finite differences run on float64 copies of the model, so the
    user's variables are never touched and a float32 program is still differenced in
    float64.

    Each gradient is checked against what its source *is* (see :func:`_plan`): a source
    that is a declared value (``--var``, ``--arg``, ``Variable(...)``, also under another
    name: ``h = x``) is perturbed as that input; a source the program computes is
    perturbed by pinning the assignment that computed it to a frozen variable holding its
    value, the finite-difference twin of what the tape does. ``timeout`` bounds the whole
    check (sympy and the finite differences run side by side, each in a worker process).
    """
    timeout = check_timeout(timeout)
    program, point, keys, intermediates = _plan(model, outcome)
    tolerances = Tolerances.for_dtype(model.dtype, rtol, atol)
    wanted = list(dict.fromkeys(keys.values()))
    inputs = [key for key in wanted if key not in intermediates]
    jobs = []
    if inputs:
        def inputs_job(deadline: float) -> dict:
            f = check_evaluator(model, program, outside_declarations(model), point)
            return numeric_gradient(f, point, inputs, deadline=deadline)
        jobs.append(inputs_job)
    for k, key in enumerate(key for key in wanted if key in intermediates):
        def pinned_job(deadline: float, key=key, seed=k + 1) -> dict:
            value = float_array(intermediates[key])
            pin = _pin_name(key, set(point) | set(wanted) | assigned_names(program))
            f = check_evaluator(model, _pin(program, key, pin),
                           outside_declarations(model, (pin, value)), point, (key, pin))
            return numeric_gradient(f, {key: value}, [key], seed=seed, deadline=deadline)
        jobs.append(pinned_job)
    numeric = numeric_in_worker(jobs, wanted, timeout)
    sym = symbolic_gradients(program, point, wanted, model.target_name, timeout=timeout,
                             want_text=want_text, intermediates=set(intermediates))
    num = numeric.collect()
    # An unconnected source shown as zeros (--unconnected zero) is checked as the None
    # the tape really gave.
    report = CheckReport([compare_gradient(g.name, g.gradient if getattr(g, "connected", True)
                                           else None, _renamed(sym.get(keys[g.name]), g.name),
                                           _renamed(num.get(keys[g.name]), g.name),
                                           tolerances,
                                           none_may_be_right=outcome.mode == "tape")
                          for g in outcome.gradients], tolerances)
    return report.to_json()


def symbolic_texts(model: Any, outcome: Any, *, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """``--symbolic``: sympy's derivative of the target for each gradient of ``outcome``,
    as text (``"skipped: why"`` when sympy could not give it)."""
    timeout = check_timeout(timeout)
    program, point, keys, intermediates = _plan(model, outcome)
    texts = symbolic_derivative_text(program, point, list(dict.fromkeys(keys.values())),
                                     model.target_name, timeout=timeout,
                                     intermediates=set(intermediates))
    return {name: texts[key] for name, key in keys.items()}


def _renamed(result: Any, name: str) -> Any:
    """A reference computed under another key (an alias), reported under ``name``."""
    if result is None or result.name == name:
        return result
    from dataclasses import replace
    return replace(result, name=name)


def assigned_names(program: Program) -> set[str]:
    return {st.name for st in program.statements if isinstance(st, Assign)}


def _declared_name(model: Any, source: Any) -> str | None:
    """The declared name whose value is the object ``source`` (identity), or None."""
    if source is None:
        return None
    for name, variable in model.variables.items():
        if variable is source:
            return name
    for name, value in zip(model.arg_names, model.arg_values):
        if value is source:
            return name
    for name, value in getattr(model, "constants", {}).items():
        if value is source:
            return name
    return None


def _denoted(program: Program, name: str) -> tuple[int | None, str]:
    """Which statement computed the value ``name`` has at the end, following plain
    aliases (``h = g; g = x * 2``): (its index, the name it assigned), or (None, y) when
    the chain ends at an input ``y`` (declared outside, or by ``Variable(...)``)."""
    statements = program.statements
    end = len(statements)
    while True:
        i = next((k for k in range(end - 1, -1, -1)
                  if isinstance(statements[k], Assign) and statements[k].name == name), None)
        if i is None or isinstance(statements[i].value, Declare):
            return None, name
        value = statements[i].value
        if not isinstance(value, Name):
            return i, name
        name, end = value.id, i


def _plan(model: Any, outcome: Any) -> tuple[Program, dict, dict[str, str], dict[str, Any]]:
    """What each gradient of ``outcome`` is taken with respect to.

    Returns the program to check (the model's, or a copy where an aliased computation
    got a name of its own), the inputs' values (float64), ``keys`` (gradient name -> the
    input or intermediate name the references use) and ``intermediates`` (intermediate
    key -> its value at the point).

    - The other modes differentiate the arguments and variables: the key is the name.
    - ``tape``: the source is the object the tape differentiated. A declared value (by
      identity, so ``h = x`` with ``--wrt h`` is the input ``x``, as on the tape) is that
      input; anything else is the value of the assignment that computed it (after plain
      aliases), cut out of the program as an independent value. When that assignment is
      not the name's own last one (``y = x * 2; h = y``), it is split as
      ``h_source = x * 2; y = h_source`` so that the cut catches every use of the value.
    """
    point = {name: float_array(value) for name, value in zip(model.arg_names, model.arg_values)}
    point.update({name: float_array(v) for name, v in model.variables.items()})
    point.update({name: float_array(c) for name, c in getattr(model, "constants", {}).items()})
    keys: dict[str, str] = {}
    intermediates: dict[str, Any] = {}
    program = model.program
    if outcome.mode != "tape":
        return program, point, {g.name: g.name for g in outcome.gradients}, intermediates
    statements = list(program.statements)
    splits: dict[int, str] = {}
    inputs = set()
    pending = []
    for g in outcome.gradients:
        declared = _declared_name(model, getattr(g, "source", None))
        if declared is None and getattr(g, "source", None) is None and g.name in point \
                and g.name not in computed_names(program):
            declared = g.name
        if declared is not None:
            keys[g.name] = declared
            inputs.add(declared)
            continue
        index, assigned = _denoted(program, g.name)
        if index is None:
            keys[g.name] = assigned
            inputs.add(assigned)
            continue
        pending.append((g, index, assigned))
    taken = set(point) | assigned_names(program) | {g.name for g in outcome.gradients}
    for g, index, assigned in pending:
        value = g.source if getattr(g, "source", None) is not None else \
            model.values.get(g.name)
        last = max(k for k, st in enumerate(statements)
                   if isinstance(st, Assign) and st.name == assigned)
        if index == last and assigned not in inputs:
            keys[g.name] = assigned  # the common case: the name's own last assignment
        else:
            if index not in splits:
                splits[index] = _pin_name(f"{g.name}_source", taken)
                taken.add(splits[index])
            keys[g.name] = splits[index]
        intermediates[keys[g.name]] = value
    if splits:
        out = []
        for k, st in enumerate(statements):
            if k in splits:
                out.append(Assign(splits[k], st.value, st.pos))
                out.append(Assign(st.name, Name(splits[k], st.pos), st.pos))
            else:
                out.append(st)
        program = Program(tuple(out), program.source)
    return program, point, keys, intermediates


def float_array(value: Any) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)


def outside_declarations(model: Any, pin: tuple[str, np.ndarray] | None = None):
    """The model's --var/--frozen/--arg declarations again, in float64 (plus a pin)."""
    from ..lang.values import Declarations
    in_program = {st.name for st in model.program.statements
                  if isinstance(st, Assign) and isinstance(st.value, Declare)}
    decls = Declarations()
    for name, variable in model.variables.items():
        if name not in in_program:
            decls.add("var" if variable.trainable else "frozen", name, float_array(variable))
    if pin is not None:
        decls.add("frozen", *pin)
    for name, value in zip(model.arg_names, model.arg_values):
        decls.add("arg", name, float_array(value))
    return decls


def _pin_name(name: str, taken: set[str]) -> str:
    pin = f"{name}_pinned"
    while pin in taken:
        pin += "_"
    return pin


def _pin(program: Program, name: str, pin: str) -> Program:
    """``program`` with the last assignment of ``name`` reading the variable ``pin``."""
    statements = list(program.statements)
    last = max(i for i, st in enumerate(statements) if isinstance(st, Assign) and st.name == name)
    statements[last] = Assign(name, Name(pin, statements[last].pos), statements[last].pos)
    return Program(tuple(statements), program.source)


def check_evaluator(model: Any, program: Program, decls, inputs: dict,
               pin: tuple[str, str] | None = None) -> Callable[[dict], float]:
    """``f(values) -> float``: a float64 copy of the model evaluated with ``values``
    (inputs by name; with ``pin=(source, variable)``, ``values[source]`` goes to the
    pinned variable and every input keeps its value from ``inputs``)."""
    from ..lang.evaluate import build
    try:
        copy = build(program, decls, dtype="float64", target=model.target_name)
    except Exception as err:  # noqa: BLE001 - reported as "no finite differences"
        failure = f"{type(err).__name__}: {err}"

        def broken(values: dict) -> float:
            raise RuntimeError(f"the program could not be rebuilt in float64 ({failure})")
        return broken

    from ..engine.rules.elementwise import hold_stop_gradients

    def evaluate(values: dict) -> float:
        given = inputs if pin is not None else values
        for name, variable in copy.variables.items():
            if pin is not None and name == pin[1]:
                variable.assign(values[pin[0]])
            elif name in given:
                variable.assign(given[name])
        args = [given[name] for name in copy.arg_names]
        return float(np.sum(float_array(copy.function(*args))))

    # stop_gradient(...) holds its value at the point, as the tape treats it: record the
    # values there once, then every nudged evaluation passes those on instead.
    base = inputs if pin is None else {pin[0]: np.array(copy.variables[pin[1]].numpy())}
    with hold_stop_gradients() as held:
        try:
            evaluate(base)
        except Exception:  # noqa: BLE001 - f reports the failure when it is called
            pass

    def f(values: dict) -> float:
        with hold_stop_gradients(held.values):
            return evaluate(values)
    return f
