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

import sys

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
    num = lambda v: render.number_text(v, s.precision)  # noqa: E731
    if s.json_out:
        return render.json_writer.write(result.report())
    if s.plain:
        return render.plain_writer.write(result.report(), s.precision)
    box = ", ".join(f"{n} in [{num(lo)}, {num(hi)}]" for n, (lo, hi) in result.box.items())
    count = len(result.points)
    sys.stdout.write(f"{count} critical point{'s' if count != 1 else ''} in {box} "
                     "(Newton's method on the gradient, the tape's Hessian):\n")
    for p in result.points:
        at = ", ".join(f"{n}={num(v)}" for n, v in p.at.items())
        eig = ", ".join(num(e) for e in p.eigenvalues)
        sys.stdout.write(f"  {at}: f={num(p.value)}  {p.verdict} (eigenvalues {eig})\n")
    if result.exact is None:
        sys.stdout.write(f"sympy: {result.exact_note or 'not asked'}; whether the list is "
                         "complete is not known\n")
    else:
        n = len(result.exact)
        sys.stdout.write(f"sympy: {n} exact solution{'s' if n != 1 else ''} of grad f = 0 "
                         f"in the box; the list above is "
                         f"{'complete' if result.complete else 'NOT the same set'}\n")
