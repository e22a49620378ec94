"""gradcli: TensorFlow 1.x's four eager gradient APIs on a small numpy tape engine.

>>> import gradcli as gc
>>> w1, w2 = gc.Variable(2.0), gc.Variable(3.0)
>>> s, pairs = gc.implicit_value_and_gradients(lambda x1, x2: w1 * x1 + w2 * x2)(5., 7.)
>>> float(s), [float(g) for g, _ in pairs]
(31.0, [5.0, 7.0])

The library's names arrive with the first one asked for (``__getattr__``): importing the
package imports nothing else, so that the command line's entry point (cli/app.py's
``run``) decides what a process imports first, and how (its start-up tricks live there
alone, issue 21). After that first name they are plain module attributes.
"""
from __future__ import annotations

__version__ = "0.1.0"

# __all__: these, every table name, hessians_function (built by __getattr__ when asked for)
_API = ["Tensor", "Variable", "constant", "GradientTape", "gradients_function",
        "value_and_gradients_function", "implicit_gradients", "implicit_value_and_gradients",
        "custom_gradient", "stop_gradient", "zeros_like", "ones_like", "pi", "e", "inf",
        "__version__", "linalg", "testing", "ForwardAccumulator", "jvp",
        "hessian_vector_product", "vectorized_map", "debug_nans"]


def _engine_names() -> dict:
    """The engine's public names, made module attributes: the APIs, every table entry
    (and alias) loaded now as a function (gc.sin, gc.sum, gc.asin, ...; the ones loaded
    on demand come through __getattr__ when asked for), zeros_like/ones_like (Python API
    only: the language has no use for them) and the constants."""
    import importlib
    engine = importlib.import_module(f"{__name__}.engine")  # (not "from . import": asks here)
    from .engine.core.table import REGISTRY
    functions = engine.FUNCTIONS
    names = {name: dict.__getitem__(functions, name) for name in dict.__iter__(REGISTRY)
             if dict.__contains__(functions, name)}
    names.update({name: getattr(engine, name) for name in (
        "CONSTANTS", "FUNCTIONS", "GradientTape", "Tensor", "Variable", "constant",
        "custom_gradient", "gradients_function", "hessian_vector_product",
        "hessians_function", "implicit_gradients", "implicit_value_and_gradients", "jvp",
        "stop_gradient", "value_and_gradients_function")})
    names["zeros_like"], names["ones_like"] = functions["zeros_like"], functions["ones_like"]
    constants = engine.CONSTANTS
    names["pi"], names["e"], names["inf"] = constants["pi"], constants["e"], constants["inf"]
    globals().update(names)
    return names


def __getattr__(name: str):
    """Every name of the library, on first use. The engine's (``_engine_names``) all at
    once; then, what a command-line start does not use either (issue 14): ``gc.linalg``
    (numpy.linalg's names and signatures: ``gc.linalg.inv``), ``gc.testing``
    (``check_grads``, without an ``import gradcli.testing`` of its own),
    ``gc.ForwardAccumulator`` (forward mode), ``gc.vectorized_map`` (batching),
    ``gc.debug_nans``, the table's entries loaded on demand (``gc.inv``, ``gc.std``, ...)
    and ``__all__``, which lists them all."""
    if name in ("linalg", "testing"):  # (not "from . import linalg": that asks again)
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if "FUNCTIONS" in globals():
        names = globals()
    elif (name.startswith("__") and name != "__all__") or _is_submodule(name):
        # (copy, pickle and doctest ask for dunders; "from . import errors" asks for the
        # submodule before importing it): nothing the engine has
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        names = _engine_names()
    if name in names:
        return names[name]
    from .engine.core.table import REGISTRY
    # (FUNCTIONS loads what is pending: linalg.py imported on its own has registered its
    # entries, but only the table's completion publishes them as functions)
    if name in REGISTRY and name in names["FUNCTIONS"]:
        fn = globals()[name] = dict.__getitem__(names["FUNCTIONS"], name)
        return fn
    if name == "__all__":
        everything = globals()["__all__"] = [*_API, *sorted(REGISTRY), "hessians_function"]
        return everything
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


def _is_submodule(name: str) -> bool:
    import os
    here = os.path.dirname(__file__)
    return os.path.exists(os.path.join(here, name + ".py")) or os.path.isdir(
        os.path.join(here, name))


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
