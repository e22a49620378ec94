"""Value constructors: ``zeros``, ``ones``, ``full``, ``eye``, ``linspace``, ``arange``. No
tensor input, so nothing to differentiate; ``full`` and ``linspace`` given tensors run
their differentiable internal twins (``shape.py``'s ``fill`` and ``linspace_between``).
"""
from __future__ import annotations

import numpy as np

from ..core.derive import entry
from ..core.recording import apply, bind, holds_tensor
from ..core.table import INTERNAL


def _const_array(forward):
    return lambda sp, **params: np.vectorize(sp.Float, otypes=[object])(forward(**params))


def _given_tensors(inputs: tuple, twin: str):
    """The ``api`` of ``full``/``linspace``: given a tensor (or a list holding tensors)
    for one of ``inputs``, the differentiable internal entry ``twin`` computes it; given
    numbers, the table's entry."""
    def api(op, table_fn):
        names = [key for key, _ in op.params]

        def fn(*args, **kwargs):
            given = {**dict(zip(names, args)), **kwargs}
            if (len(args) > len(names) or any(k not in given for k in inputs)
                    or not any(holds_tensor(given[k]) for k in inputs)):
                return table_fn(*args, **kwargs)  # numbers, or the table's argument error
            params = bind(op, names, dict(op.params), (), {k: v for k, v in given.items()
                                                           if k not in inputs})
            entry = INTERNAL[twin]
            return apply(entry, tuple(given[k] for k in inputs),
                         {k: params[k] for k, _ in entry.params})
        fn.__name__ = fn.__qualname__ = op.name
        fn.__doc__ = (f"{table_fn.__doc__}\nGiven tensors for {' and '.join(inputs)}, the "
                      f"result is differentiable in them.")
        return fn
    return api


# The constructors full and linspace given tensors: differentiable in the fill value and
# in the endpoints (the table's entries take numbers, as the language's static values).
_TENSOR_CONSTRUCTORS = {"full": _given_tensors(("fill_value",), "fill"),
                        "linspace": _given_tensors(("start", "stop"), "linspace_between")}

# Value constructors (no tensor inputs: nothing to differentiate).
for _name, _fwd, _params, _doc in (
        ("zeros", lambda shape: np.zeros(shape), (("shape", None),), "an array of zeros"),
        ("ones", lambda shape: np.ones(shape), (("shape", None),), "an array of ones"),
        ("full", lambda shape, fill_value: np.full(shape, float(fill_value)),
         (("shape", None), ("fill_value", None)), "an array filled with a value"),
        ("eye", lambda N, M=None: np.eye(N, M), (("N", None), ("M", None)), "identity matrix"),
        ("linspace", lambda start, stop, num=50: np.linspace(start, stop, num),
         (("start", None), ("stop", None), ("num", 50)), "num evenly spaced values"),
        ("arange", lambda start, stop=None, step=1.0: np.arange(start, stop, step, dtype=float),
         (("start", None), ("stop", None), ("step", 1.0)), "values from start to stop by step")):
    entry(name=_name, forward=_fwd, vjps=(), inputs=(), params=_params, kind="constructor",
          doc=_doc, derivative="constant", sympy=_const_array(_fwd), batch="no_inputs",
          api=_TENSOR_CONSTRUCTORS.get(_name))
