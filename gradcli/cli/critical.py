"""``gradcli critical``: the critical points of a scalar program in a box (the work is
gradcli/run/critical.py).

Output: human (a line per point, then what sympy found), ``--plain`` (a line per point:
the variables' values, f, the verdict), ``--json``::

    {"mode": "critical", "program": ..., "variables": [...], "box": {"x": [lo, hi]},
     "points": [{"at": {"x": ...}, "value", "gradient_norm", "eigenvalues", "verdict"}],
     "exact": [{"x": ...}] | null, "complete": bool | null}

Exit 0 with the list, possibly empty.
"""
from __future__ import annotations

from .common import Settings, guarded, refuse


def run(s: Settings) -> None:
    from ..run.critical import critical

    def work():
        if s.json_out and s.plain:
            refuse("--json and --plain cannot be used together")
        return critical(s.program, var=s.var, frozen=s.frozen, arg=s.arg, target=s.target,
                        solve_timeout=s.solve_timeout)

    result = guarded(work)
    from . import render
    if s.json_out:
        return render.json_writer.write(result.report())
    if s.plain:
        return render.plain_writer.write(result.report(), s.precision)
    render.show(result.page(s.precision))
