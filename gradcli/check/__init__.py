"""``--check``: the tape's gradients against sympy and finite differences.

- :mod:`.symbolic`: program tree -> sympy -> exact derivative at the point (sympy is
  imported only when a check or ``--symbolic`` runs, in a worker killed at the time limit);
- :mod:`.numeric`: central finite differences, one-sided ones for kinks;
- :mod:`.compare`: the verdict per gradient and the ``check`` JSON object.

The command line calls :func:`check_outcome` (and :func:`symbolic_texts` for
``--symbolic``); :func:`run_check` is the same check for any program, point and gradients.
Importing this package does not import sympy.
"""
from .compare import (
    CheckReport,
    GradientCheck,
    Tolerances,
    check_outcome,
    compare_gradient,
    run_check,
    symbolic_texts,
)
from .numeric import NumericGradient, numeric_gradient
from .symbolic import (
                       SymbolicGradient,
                       SymbolicProgram,
                       symbolic_derivative_text,
                       symbolic_gradients,
                       to_sympy,
)

__all__ = ["CheckReport", "GradientCheck", "NumericGradient", "SymbolicGradient",
           "SymbolicProgram", "Tolerances", "check_outcome", "compare_gradient",
           "numeric_gradient", "run_check", "symbolic_derivative_text", "symbolic_gradients",
           "symbolic_texts", "to_sympy"]
