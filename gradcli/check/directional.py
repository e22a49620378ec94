"""``jvp --check``: forward mode's directional derivative against sympy and finite
differences.

The directional derivative of f at x along t is the ordinary derivative of
``g(s) = f(x + s t)`` at ``s = 0``. The check builds that g as a program — the original
with each input that has a tangent rebound to ``x + s * t`` where it is declared, ``s`` a
new scalar argument and ``t`` a new constant — and hands it to the same cross-check as
every other command (:func:`gradcli.check.compare.run_check`): sympy's exact derivative
``dg/ds`` (the directional derivative, ``sum_i df/dx_i t_i``, substituted at the point),
central finite differences of g in ``s`` with their error estimate and kink detection,
the same tolerances, statuses, worker processes and time limit.

As every ``--check``, it differentiates the target summed over its elements (as
TensorFlow does), so for a non-scalar target it checks ``sum(jvp)``, and the entry is
named so.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..lang.tree import Assign, Binary, Declare, Name, Program
from .symbolic import DEFAULT_TIMEOUT


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def directional_program(model: Any, tangent_names, step: str, tangent_of: dict) -> Program:
    """``model.program`` with each name of ``tangent_names`` rebound to
    ``name + step * tangent_of[name]``: right after the program declares it
    (``Variable(...)``), or first of all for a declaration outside the program."""
    statements = list(model.program.statements)
    declared_at = {}
    for i, st in enumerate(statements):
        if isinstance(st, Assign) and isinstance(st.value, Declare) and st.name in tangent_names:
            declared_at[st.name] = i  # the declaration whose variable the tape moves
    first, after = [], {}
    for name in tangent_names:
        moved = Assign(name, Binary("+", Name(name), Binary("*", Name(step),
                                                               Name(tangent_of[name]))))
        if name in declared_at:
            after.setdefault(declared_at[name], []).append(moved)
        else:
            first.append(moved)
    out = list(first)
    for i, st in enumerate(statements):
        out.append(st)
        out.extend(after.get(i, ()))
    return Program(tuple(out), model.program.source)


def check_jvp(model: Any, outcome: Any, *, rtol: float | None = None,
              atol: float | None = None, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """The JSON ``check`` object for a jvp outcome (``gradcli.run.directional.run_jvp``):
    the same shape as every ``--check``, with one entry, ``jvp`` (``sum(jvp)`` for a
    non-scalar target)."""
    from .compare import (assigned_names, check_evaluator, float_array, outside_declarations,
                          run_check)
    program = model.program
    taken = set(model.names) | assigned_names(program) | set(model.arg_names)
    step = _fresh("jvp_step", taken)
    tangent_of = {name: _fresh(f"{name}_tangent", taken) for name in outcome.tangents}
    moved = directional_program(model, list(outcome.tangents), step, tangent_of)
    point = {name: float_array(value) for name, value in zip(model.arg_names, model.arg_values)}
    point.update({name: float_array(v) for name, v in model.variables.items()})
    point.update({name: float_array(c) for name, c in model.constants.items()})
    decls = outside_declarations(model)
    for name, tangent in outcome.tangents.items():
        t = np.asarray(tangent, dtype=np.float64)
        decls.add("frozen", tangent_of[name], t)
        point[tangent_of[name]] = t
    decls.add("arg", step, np.float64(0.0))
    point[step] = np.float64(0.0)
    f = check_evaluator(model, moved, decls, point)
    jvp = np.asarray(outcome.jvp, dtype=np.float64)
    report = run_check(moved, point, [step], {step: np.sum(jvp)}, f,
                       target=model.target_name, timeout=timeout, rtol=rtol, atol=atol,
                       dtype=model.dtype, intermediates=())
    out = report.to_json()
    import re
    label = "jvp" if jvp.ndim == 0 else "sum(jvp)"
    step_word = re.compile(rf"\b{re.escape(step)}\b")
    for entry in out["gradients"]:
        entry["name"] = label
        # The reasons name the entry too ("tape differs from sympy at jvp_step: ..."):
        # the user never wrote the check's step, so they say what is checked.
        for key, text in entry.items():
            if isinstance(text, str):
                entry[key] = step_word.sub(label, text)
    return out
