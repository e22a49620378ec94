"""gradcli: TensorFlow 1.x's four eager gradient APIs on a small numpy tape engine.

>>> import gradcli as gc
>>> w1, w2 = gc.Variable(2.0), gc.Variable(3.0)
>>> s, pairs = gc.implicit_value_and_gradients(lambda x1, x2: w1 * x1 + w2 * x2)(5., 7.)
>>> float(s), [float(g) for g, _ in pairs]
(31.0, [5.0, 7.0])
"""
from __future__ import annotations

from .engine import (CONSTANTS, FUNCTIONS, GradientTape, Tensor, Variable, constant,
                     custom_gradient, gradients_function, implicit_gradients,
                     implicit_value_and_gradients, stop_gradient, value_and_gradients_function)
from .engine.table import REGISTRY as _REGISTRY

__version__ = "0.1.0"

# Every table entry (and alias) as a module function: gc.sin, gc.sum, gc.asin, ...
globals().update({name: FUNCTIONS[name] for name in _REGISTRY if name in FUNCTIONS})
# zeros_like/ones_like are Python API only (the language has no use for them).
zeros_like, ones_like = FUNCTIONS["zeros_like"], FUNCTIONS["ones_like"]
pi, e, inf = CONSTANTS["pi"], CONSTANTS["e"], CONSTANTS["inf"]

__all__ = ["Tensor", "Variable", "constant", "GradientTape", "gradients_function",
           "value_and_gradients_function", "implicit_gradients", "implicit_value_and_gradients",
           "custom_gradient", "stop_gradient", "zeros_like", "ones_like", "pi", "e", "inf",
           "__version__",
           *sorted(_REGISTRY)]

# Issue 11: the Hessian blocks, as gradients_function gives gradients.
from .engine import hessians_function  # noqa: E402

__all__.append("hessians_function")
