"""gradcli: TensorFlow 1.x's four eager gradient APIs on a small numpy tape engine.

>>> import gradcli as gc
>>> w1, w2 = gc.Variable(2.0), gc.Variable(3.0)
>>> s, pairs = gc.implicit_value_and_gradients(lambda x1, x2: w1 * x1 + w2 * x2)(5., 7.)
>>> float(s), [float(g) for g, _ in pairs]
(31.0, [5.0, 7.0])
"""
from __future__ import annotations

import sys as _sys

from . import startup as _startup

_previous_hook = _startup.install_interrupt_hook()
_collecting = _startup.pause_collector()
try:
    # numpy first, while only this package is being imported: imported from deep inside
    # gradcli.engine.core (a chain of partly imported packages) numpy's typing modules
    # took ~9 ms more (numpy 2.4, Python 3.11; benchmarks/run.py --only cli measures it)
    import numpy as _numpy  # noqa: F401
    del _numpy
    from .engine import (  # noqa: F401  (re-exported: __all__ is built on demand)
                         CONSTANTS, FUNCTIONS, GradientTape, Tensor, Variable, constant,
                         custom_gradient, gradients_function, hessian_vector_product,
                         implicit_gradients, implicit_value_and_gradients, jvp,
                         stop_gradient, value_and_gradients_function)
    from .engine.core.table import REGISTRY as _REGISTRY
finally:
    _startup.resume_collector(_collecting)

__version__ = "0.1.0"

# Every table entry (and alias) as a module function: gc.sin, gc.sum, gc.asin, ...: those
# loaded now, the ones loaded on demand (engine/core/table.py) by __getattr__ when asked for.
globals().update({name: dict.__getitem__(FUNCTIONS, name) for name in dict.__iter__(_REGISTRY)
                  if dict.__contains__(FUNCTIONS, name)})
# zeros_like/ones_like are Python API only (the language has no use for them).
zeros_like, ones_like = FUNCTIONS["zeros_like"], FUNCTIONS["ones_like"]
pi, e, inf = CONSTANTS["pi"], CONSTANTS["e"], CONSTANTS["inf"]


def __getattr__(name: str):
    """What a command-line start does not use is imported on first use (issue 14):
    ``gc.linalg`` (numpy.linalg's names and signatures: ``gc.linalg.inv``),
    ``gc.testing`` (``check_grads``, without an ``import gradcli.testing`` of its own),
    ``gc.ForwardAccumulator`` (forward mode), ``gc.vectorized_map`` (batching), the
    table's entries loaded on demand (``gc.inv``, ``gc.std``, ...) and ``__all__``, which
    lists them all."""
    # (FUNCTIONS loads what is pending: linalg.py imported on its own has registered its
    # entries, but only the table's completion publishes them as functions)
    if name in _REGISTRY and name in FUNCTIONS:
        fn = globals()[name] = dict.__getitem__(FUNCTIONS, name)
        return fn
    if name == "__all__":
        everything = globals()["__all__"] = [*_API, *sorted(_REGISTRY), "hessians_function"]
        return everything
    if name in ("linalg", "testing"):  # (not "from . import linalg": that asks again)
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name == "ForwardAccumulator":
        from .engine.core.forward import ForwardAccumulator
        globals()[name] = ForwardAccumulator
        return ForwardAccumulator
    if name == "debug_nans":  # issue 23: stop at the first nan or inf
        from .engine.core.observe import debug_nans
        globals()[name] = debug_nans
        return debug_nans
    if name == "vectorized_map":  # issue 12: the batching transform
        from .engine.core.batching import vectorized_map
        globals()[name] = vectorized_map
        return vectorized_map
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})


# __all__: these, every table name, hessians_function (built by __getattr__ when asked for)
_API = ["Tensor", "Variable", "constant", "GradientTape", "gradients_function",
        "value_and_gradients_function", "implicit_gradients", "implicit_value_and_gradients",
        "custom_gradient", "stop_gradient", "zeros_like", "ones_like", "pi", "e", "inf",
        "__version__", "linalg", "testing", "ForwardAccumulator", "jvp",
        "hessian_vector_product", "vectorized_map", "debug_nans"]

# Issue 11: the Hessian blocks, as gradients_function gives gradients.
from .engine import hessians_function  # noqa: E402,F401

_sys.excepthook = _previous_hook  # the library leaves the process's hook as it was

