"""Program texts from the table entries' own ``samples`` (valid calls of entries whose
domain a range cannot describe: square, positive definite or batched matrices), shared by
the table-wide tests of the language, the sympy translation and the check.

``sample_programs(name)`` gives, for each sample of the entry, the program text calling it
on declared inputs ``a0, a1, ...`` with its parameters written as literals, the point (the
inputs' values) and the value the library computes (``gc.NAME(...)``). An entry returning
several tensors gives one program per output (``eigh(a0)[1]``).
"""
from __future__ import annotations

import math

import numpy as np

import gradcli as gc
from gradcli.engine.rules.linalg import several_outputs
from gradcli.engine.core.table import REGISTRY


def literal(value) -> str | None:
    """The language's spelling of a parameter value, or None when it has none (strings
    other than einsum's subscripts, None)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float, np.integer, np.floating)):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value)) if isinstance(value, (float, np.floating)) else str(value)
    if isinstance(value, tuple):
        parts = [literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return None


def call_text(name: str, args, params: dict) -> str | None:
    """``name(a0, a1, key=value)``; einsum's subscripts go first as the string literal."""
    op = REGISTRY[name]
    names = [f"a{i}" for i in range(len(args))]
    if name == "einsum":
        return f'einsum("{params["subscripts"]}", {", ".join(names)})'
    parts = list(names)
    for key, value in params.items():
        text = literal(value)
        if text is None:
            return None
        parts.append(f"{key}={text}")
    assert not op.variadic, name
    return f"{name}({', '.join(parts)})"


def library_value(name: str, args, params: dict):
    """What ``gc.NAME`` gives for the sample (a tuple for several outputs)."""
    fn = gc.FUNCTIONS[name]
    if name == "einsum":
        return fn(params["subscripts"], *args)
    return fn(*args, **params)


def sample_programs(name: str, seed: int = 0) -> list:
    """(label, text, point, value, run) for every sample of the entry that the language
    can write; ``value`` is the library's result as numpy, ``run(values)`` the library
    call on ``values[a0], values[a1], ...`` (tensors or arrays) giving the same output."""
    op = REGISTRY[name]
    rng = np.random.default_rng(seed)
    out = []
    for label, args, params in op.samples(rng):
        text = call_text(name, args, params)
        if text is None:
            continue
        point = {f"a{i}": np.asarray(a, dtype=np.float64) for i, a in enumerate(args)}
        value = library_value(name, args, params)
        keys = list(point)

        def run(values, pick=None, args_params=(keys, params)):
            result = library_value(name, [values[k] for k in args_params[0]], args_params[1])
            return result if pick is None else result[pick]
        if several_outputs(op, {**dict(op.params), **params}):
            for k, part in enumerate(value):
                out.append((f"{label}[{k}]", f"{text}[{k}]", point, np.asarray(part.numpy()),
                            (lambda run, k: lambda values: run(values, k))(run, k)))
        else:
            out.append((label, text, point, np.asarray(value.numpy()), run))
    return out
