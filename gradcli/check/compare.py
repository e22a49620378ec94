"""The verdict of ``--check``: the tape's gradients against sympy and finite differences.

:func:`check_outcome` (a built model and a mode's outcome -> the JSON ``check``
object) is what the command line calls; :func:`run_check` does the same for any program,
point and gradients (the library's entry point). For every source it puts side by side the tape's gradient, sympy's exact derivative at the point
(:mod:`gradcli.check.symbolic`) and the finite-difference estimate
(:mod:`gradcli.check.numeric`), and gives a status:

- ``ok``: the tape agrees with every reference that has a value;
- ``mismatch``: it disagrees with one (the command exits 1);
- ``non-differentiable``: the point sits on a kink for some element (sympy sees a
  Heaviside/sign/DiracDelta at 0, a Max/Min tie, a floor at an integer, a piecewise
  boundary, or an infinite derivative; or the one-sided differences disagree), where the
  tape's value is a convention (``abs'(0) = 0``, ``relu'(0) = 0``, ties split 1/2);
- ``skipped``: sympy could not be used (too large, too deep, too slow, no symbolic form;
  ``reason`` says which) and the finite differences, which then decide, agree; or no
  reference has a value at all; or (``tape`` only) the tape gave None for a source it
  did not watch, which is TensorFlow's answer. Only a mismatch fails the check.

Decisions, element by element:

- sympy (exact) decides when it has a value and sees no kink; the finite differences are
  then a second opinion that can still report a mismatch, except where they straddle a
  kink near the point (then sympy alone decides);
- when sympy is skipped (too large, too deep, too slow, no symbolic form), the finite
  differences decide;
- a kink that sympy flags is reported ``non-differentiable`` unless the tape, sympy and
  the finite differences all agree and the one-sided differences match (``abs(x)**2`` at
  0 is differentiable: no need to alarm anyone).

Tolerances (float64 tape): ``|tape - ref| <= atol + rtol * |ref|`` with rtol 1e-6,
atol 1e-8 against sympy, and rtol 1e-4, atol 1e-6 against finite differences, whose own
estimated error (truncation + rounding) is added to the allowance. A float32 tape gets
rtol 1e-3, atol 1e-4 for both. ``--rtol``/``--atol`` replace the defaults for both.
Along a random direction (large sources) the tape's ``dot(gradient, u)`` is compared
with the directional difference, allowing ``atol * sum|u| + rtol * sum|gradient * u|``.

The ``check`` object of ``--json`` (:meth:`CheckReport.to_json`)::

    {"passed": true,                      # false when any gradient is a mismatch
     "rtol": {"symbolic": 1e-06, "numeric": 0.0001},
     "atol": {"symbolic": 1e-08, "numeric": 1e-06},
     "gradients": [
       {"name": "w1",
        "status": "ok",                   # ok | mismatch | skipped | non-differentiable
        "reason": "...",                  # present unless a plain ok: why, or a note
        "tape": 5.0,                      # null when the tape gave None (unconnected)
        "symbolic": 5.0,                  # null when sympy was skipped
        "symbolic_skipped": "...",        # present when symbolic is null: why
        "numeric": 5.0,                   # null when no finite difference could be taken
        "numeric_method": "central",      # or "direction" (large sources): then
        "tape_directional": 1.23,         #   numeric is the directional derivative and
                                          #   this the tape's dot(gradient, direction)
        "abs_error": 0.0,                 # largest |tape - reference| (null: none)
        "rel_error": 0.0,                 # largest |tape - reference| / max(|ref|, atol)
        "symbolic_derivative": "x1"}]}    # present with want_text (--symbolic)

Arrays are nested lists shaped like the source; non-finite numbers are the strings
``"nan"``, ``"inf"``, ``"-inf"``, as everywhere in gradcli's JSON.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..jsonvalue import json_value as to_json_value
from ..lang.tree import Assign, Declare, Name, Program
from .numeric import FULL_LIMIT, NumericGradient, numeric_gradient
from .symbolic import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_TIMEOUT,
    SymbolicGradient,
    computed_names,
    symbolic_derivative_text,
    symbolic_gradients,
)

STATUSES = ("ok", "mismatch", "skipped", "non-differentiable")


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
        """
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
        if self.tape_directional is not None:
            out["tape_directional"] = to_json_value(self.tape_directional)
        out["abs_error"] = to_json_value(self.abs_error)
        out["rel_error"] = to_json_value(self.rel_error)
        if self.symbolic_derivative is not None:
            out["symbolic_derivative"] = self.symbolic_derivative
        return out


@dataclass
class CheckReport:
    """All verdicts, in the mode's order of sources; ``passed`` is False on any mismatch."""
    gradients: list[GradientCheck]
    tolerances: Tolerances = field(default_factory=Tolerances)

    @property
    def passed(self) -> bool:
        return not any(g.status == "mismatch" for g in self.gradients)

    def to_json(self) -> dict:
        tol = self.tolerances
        return {"passed": self.passed,
                "rtol": {"symbolic": tol.symbolic_rtol, "numeric": tol.numeric_rtol},
                "atol": {"symbolic": tol.symbolic_atol, "numeric": tol.numeric_atol},
                "gradients": [g.to_json() for g in self.gradients]}


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
    return f"{v:.10g}"


def compare_gradient(name: str, tape: Any, symbolic: SymbolicGradient | None,
                     numeric: NumericGradient | None,
                     tolerances: Tolerances = Tolerances(), *,
                     none_may_be_right: bool = False) -> GradientCheck:
    """The verdict for one source, from the tape's value and the two references.

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
    tol = tolerances
    tape_arr = _as_array(tape)
    sym_value = symbolic.value if symbolic is not None and symbolic.skipped is None else None
    num_value = numeric.value if numeric is not None else None
    directional = numeric is not None and numeric.method == "direction" and num_value is not None

    shape = None
    for candidate in (sym_value, None if directional else num_value,
                      numeric.direction if directional else None, tape_arr):
        if candidate is not None:
            shape = np.shape(candidate)
            break
    if shape is None:
        shape = ()
    notes: list[str] = []
    base = {"name": name, "tape": tape_arr, "symbolic": sym_value, "numeric": num_value,
            "numeric_method": numeric.method if numeric is not None and num_value is not None
            else None,
            "symbolic_skipped": symbolic.skipped if symbolic is not None else "not run",
            "symbolic_derivative": symbolic.text if symbolic is not None else None}
    if tape_arr is not None and tape_arr.shape != shape:
        return GradientCheck(status="mismatch", abs_error=None, rel_error=None,
                             reason=f"the tape's gradient has shape {tape_arr.shape}, the "
                                    f"source has shape {shape}", **base)
    t = tape_arr if tape_arr is not None else np.zeros(shape)

    # sympy, per element
    if sym_value is not None:
        s = np.asarray(sym_value, dtype=np.float64)
        s_avail = ~np.isnan(s)
        s_kink = np.asarray(symbolic.kink, dtype=bool) if symbolic.kink is not None \
            else np.zeros(shape, bool)
        agree_s = _close(t, s, tol.symbolic_atol + tol.symbolic_rtol * np.abs(s))
    else:
        s = np.full(shape, np.nan)
        s_avail = s_kink = agree_s = np.zeros(shape, bool)

    # finite differences, per element (a direction's verdict applies to every element)
    tape_directional = None
    if directional:
        u = numeric.direction
        n = float(numeric.value)
        tape_directional = float(np.sum(t * u))
        allowance = (tol.numeric_atol * float(np.sum(np.abs(u)))
                     + tol.numeric_rtol * max(float(np.sum(np.abs(t * u))), abs(n))
                     + float(numeric.error))
        avail = bool(np.isfinite(n))
        n_avail = np.full(shape, avail)
        n_kink = np.full(shape, bool(numeric.kink))
        agree_n = np.full(shape, bool(_close(np.asarray(tape_directional), np.asarray(n),
                                             np.asarray(allowance))))
    elif num_value is not None:
        nv = np.asarray(num_value, dtype=np.float64)
        n_avail = ~np.isnan(nv)
        n_kink = np.asarray(numeric.kink, dtype=bool)
        agree_n = _close(t, nv, tol.numeric_atol + tol.numeric_rtol * np.abs(nv)
                         + np.nan_to_num(numeric.error, nan=0.0))
    else:
        n_avail = n_kink = agree_n = np.zeros(shape, bool)

    # element by element (see the module docstring)
    all_agree = s_avail & agree_s & n_avail & agree_n & ~n_kink
    nondiff = (s_kink & ~all_agree) | (~s_avail & n_avail & n_kink)
    mismatch_s = ~nondiff & ~s_kink & s_avail & ~agree_s
    mismatch_n = ~nondiff & ~s_kink & ~mismatch_s & n_avail & ~n_kink & ~agree_n
    unchecked = ~s_avail & ~n_avail

    # errors against whatever references exist
    abs_parts, rel_parts = [], []
    if s_avail.any():
        d, r = _errors(t, s, tol.symbolic_atol)
        abs_parts.append(d[s_avail])
        rel_parts.append(r[s_avail])
    if directional and n_avail.all():
        d, r = _errors(np.asarray(tape_directional), np.asarray(float(numeric.value)),
                       tol.numeric_atol)
        abs_parts.append(np.atleast_1d(d))
        rel_parts.append(np.atleast_1d(r))
    elif num_value is not None and n_avail.any():
        d, r = _errors(t, np.asarray(num_value, dtype=np.float64), tol.numeric_atol)
        usable = n_avail & ~n_kink
        abs_parts.append(d[usable])
        rel_parts.append(r[usable])
    abs_all = np.concatenate([np.ravel(p) for p in abs_parts]) if abs_parts else np.empty(0)
    rel_all = np.concatenate([np.ravel(p) for p in rel_parts]) if rel_parts else np.empty(0)
    abs_error = float(abs_all.max()) if abs_all.size else None
    rel_error = float(rel_all.max()) if rel_all.size else None

    def first(mask: np.ndarray) -> tuple:
        return tuple(int(i) for i in np.argwhere(mask)[0]) if shape else ()

    def count(mask: np.ndarray) -> str:
        k = int(np.sum(mask))
        return f" ({k} of {mask.size} elements)" if shape and mask.size > 1 else ""

    if tape_arr is None:
        notes.append("the tape gave None (not connected)")
    if tape_arr is None and none_may_be_right and (mismatch_s.any() or mismatch_n.any()):
        # A tape gives None for a source it did not watch: TensorFlow's answer, not a bug.
        status = "skipped"
        notes[-1] = ("the tape gave None, but the target depends on it: the tape did not "
                     "watch it (watch it to compare its gradient)")
    elif mismatch_s.any():
        idx = first(mismatch_s)
        status = "mismatch"
        notes.insert(0, f"tape differs from sympy at {_label(name, shape, idx)}: tape "
                        f"{_num(t[idx])}, sympy {_num(s[idx])}{count(mismatch_s)}")
    elif mismatch_n.any():
        idx = first(mismatch_n)
        status = "mismatch"
        if directional:
            notes.insert(0, f"tape differs from finite differences along a random direction: "
                            f"tape {_num(tape_directional)}, finite differences "
                            f"{_num(float(numeric.value))}")
        else:
            notes.insert(0, f"tape differs from finite differences at "
                            f"{_label(name, shape, idx)}: tape {_num(t[idx])}, finite "
                            f"differences {_num(float(num_value[idx]))}{count(mismatch_n)}")
    elif nondiff.any():
        status = "non-differentiable"
        what = []
        if (s_kink & nondiff).any() and symbolic.note:
            what.append(f"sympy: {symbolic.note}")
        if (n_kink & nondiff).any():
            where = f" at {_label(name, shape, first(n_kink & nondiff))}" if shape else ""
            what.append(f"one-sided differences disagree{where}")
        notes.insert(0, "on a kink (" + ("; ".join(what) or "no derivative there") + ")")
    elif unchecked.all():
        status = "skipped"
        if symbolic is None:
            sym_why = "not run"
        else:
            sym_why = symbolic.skipped or symbolic.note or "no value"
        num_why = numeric.note if numeric is not None and numeric.note else "not taken"
        why = [f"sympy: {sym_why}", f"finite differences: {num_why}"]
        notes.insert(0, "no reference value (" + "; ".join(why) + ")")
    elif sym_value is None:
        # sympy could not be used: the finite differences decided, and agree.
        status = "skipped"
        notes.insert(0, f"sympy: {symbolic.skipped if symbolic is not None else 'not run'}; "
                        "finite differences agree")
    else:
        status = "ok"
        if (n_kink & ~s_kink & s_avail).any():
            notes.append("finite differences straddle a kink near the point; sympy decides")
        if unchecked.any():
            notes.append(f"{int(unchecked.sum())} of {unchecked.size} elements could not be "
                         "checked")
    return GradientCheck(status=status, abs_error=abs_error, rel_error=rel_error,
                         reason="; ".join(notes) or None, tape_directional=tape_directional,
                         **base)


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
    - ``timeout``: seconds for the sympy worker; ``symbolic=False`` leaves sympy out.
    - ``dtype``: the tape's dtype (float32 loosens the default tolerances).

    >>> import numpy as np
    >>> from gradcli.lang.tree import Binary, ExprStatement, Name, Program
    >>> prog = Program((ExprStatement(Binary("*", Name("w"), Name("x"))),))
    >>> report = run_check(prog, {"w": 2.0, "x": 5.0}, ["w"], {"w": 5.0},
    ...                    lambda v: float(v["w"] * v["x"]))
    >>> report.passed, report.gradients[0].status
    (True, 'ok')
    """
    wrt = list(dict.fromkeys(wrt))
    tolerances = Tolerances.for_dtype(dtype, rtol, atol)
    if symbolic:
        sym = symbolic_gradients(program, point, wrt, target, timeout=timeout,
                                 max_elements=max_elements, max_depth=max_depth,
                                 want_text=want_text, intermediates=intermediates,
                                 lookup=lookup)
    else:
        sym = {name: SymbolicGradient(name, skipped="not asked for") for name in wrt}
    num = numeric_gradient(f_numeric, point, wrt, full_limit=full_limit, seed=seed)
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
    ``gradcli.modes.run_mode`` returned (run first: ``model.values`` then holds every
    name's value). The finite differences run on float64 copies of the model, so the
    user's variables are never touched and a float32 program is still differenced in
    float64. A ``tape`` source that the program only computes (an intermediate; a
    declared name stays its declared input even where the program rebinds it) is
    perturbed by pinning its last assignment to a frozen variable holding that value, the
    finite-difference twin of what the tape does.
    """
    names = [g.name for g in outcome.gradients]
    point, pinned = _model_point(model, outcome.mode, names)
    tolerances = Tolerances.for_dtype(model.dtype, rtol, atol)
    sym = symbolic_gradients(model.program, point, names, model.target_name, timeout=timeout,
                             want_text=want_text, intermediates=pinned)
    num: dict[str, NumericGradient] = {}
    inputs = [name for name in names if name not in pinned]
    if inputs:
        f = _evaluator(model, model.program, _outside_declarations(model), point)
        num.update(numeric_gradient(f, point, inputs))
    for k, name in enumerate(pinned):
        value = _plain(model.values[name])
        pin = _pin_name(name, set(point) | set(names) | computed_names(model.program))
        f = _evaluator(model, _pin(model.program, name, pin),
                       _outside_declarations(model, (pin, value)), point, (name, pin))
        num.update(numeric_gradient(f, {name: value}, [name], seed=k + 1))
    # An unconnected source shown as zeros (--unconnected zero) is checked as the None
    # the tape really gave.
    report = CheckReport([compare_gradient(g.name, g.gradient if getattr(g, "connected", True)
                                           else None, sym.get(g.name),
                                           num.get(g.name), tolerances,
                                           none_may_be_right=outcome.mode == "tape")
                          for g in outcome.gradients], tolerances)
    return report.to_json()


def symbolic_texts(model: Any, outcome: Any, *, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """``--symbolic``: sympy's derivative of the target for each gradient of ``outcome``,
    as text (``"skipped: why"`` when sympy could not give it)."""
    names = [g.name for g in outcome.gradients]
    point, pinned = _model_point(model, outcome.mode, names)
    return symbolic_derivative_text(model.program, point, names, model.target_name,
                                    timeout=timeout, intermediates=pinned)


def _plain(value: Any) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)


def _model_point(model: Any, mode: str, names: Sequence[str]) -> tuple[dict, list[str]]:
    """Every declared value as float64 (the inputs), and the sources the program computes
    (``tape`` only: the other modes differentiate arguments and variables)."""
    point = {name: _plain(value) for name, value in zip(model.arg_names, model.arg_values)}
    point.update({name: _plain(v) for name, v in model.variables.items()})
    point.update({name: _plain(c) for name, c in getattr(model, "constants", {}).items()})
    if mode != "tape":
        return point, []
    # A declared name is its declared input even where the program rebinds it (issue 9):
    # only names the program alone computes are pinned at their last assignment.
    return point, [name for name in names if name not in point]


def _outside_declarations(model: Any, pin: tuple[str, np.ndarray] | None = None):
    """The model's --var/--frozen/--arg declarations again, in float64 (plus a pin)."""
    from ..lang.values import Declarations
    in_program = {st.name for st in model.program.statements
                  if isinstance(st, Assign) and isinstance(st.value, Declare)}
    decls = Declarations()
    for name, variable in model.variables.items():
        if name not in in_program:
            decls.add("var" if variable.trainable else "frozen", name, _plain(variable))
    if pin is not None:
        decls.add("frozen", *pin)
    for name, value in zip(model.arg_names, model.arg_values):
        decls.add("arg", name, _plain(value))
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


def _evaluator(model: Any, program: Program, decls, inputs: dict,
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

    from ..engine.ops import hold_stop_gradients

    def evaluate(values: dict) -> float:
        given = inputs if pin is not None else values
        for name, variable in copy.variables.items():
            if pin is not None and name == pin[1]:
                variable.assign(values[pin[0]])
            elif name in given:
                variable.assign(given[name])
        args = [given[name] for name in copy.arg_names]
        return float(np.sum(_plain(copy.function(*args))))

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
