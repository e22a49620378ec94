"""Cases for the entries of ``gradcli/engine/more_ops.py``, read by the table-wide tests
(tests/engine/test_ops_table.py, test_check_symbolic.py, test_check_compare.py,
test_lang_sympy_agreement.py), so each new entry is checked there like the others.

``CASES[name]`` is a list of ``(program text, call, shapes)``: the same computation as
program text (for the language and sympy) and as ``call(f, v)`` on a namespace ``f``
(``gc.FUNCTIONS`` as attributes, or the entries' numpy forwards ``ops.NP``) and a dict
``v`` of input values, whose names and shapes ``shapes`` gives. Inputs are drawn from the
entry's ``sample`` range. Entries that are not in the language are in ``NOT_IN_LANGUAGE``
with the reason.
"""
from __future__ import annotations

import numpy as np

A23, V3, A234 = (2, 3), (3,), (2, 3, 4)
I = np.array  # integer index arrays, given as constants

CASES = {
    "var": [("var(M, axis=-2, ddof=1)", lambda f, v: f.var(v["M"], axis=-2, ddof=1), {"M": A23}),
            ("var(M, axis=0, ddof=1)", lambda f, v: f.var(v["M"], axis=0, ddof=1), {"M": A23}),
            ("var(M)", lambda f, v: f.var(v["M"]), {"M": A23})],
    "std": [("std(M, axis=1, keepdims=True)",
             lambda f, v: f.std(v["M"], axis=1, keepdims=True), {"M": A23}),
            ("std(v, ddof=1)", lambda f, v: f.std(v["v"], ddof=1), {"v": V3})],
    "average": [("average(M, w, axis=-1)", lambda f, v: f.average(v["M"], v["w"], axis=-1),
                 {"M": A23, "w": V3}),
                ("average(M, w, axis=1)", lambda f, v: f.average(v["M"], v["w"], axis=1),
                 {"M": A23, "w": V3}),
                ("average(M, W)", lambda f, v: f.average(v["M"], v["W"]),
                 {"M": A23, "W": A23})],
    "median": [("median(M, axis=-1)", lambda f, v: f.median(v["M"], axis=-1), {"M": A23}),
               ("median(v)", lambda f, v: f.median(v["v"]), {"v": V3}),
               ("median(M, axis=1)", lambda f, v: f.median(v["M"], axis=1), {"M": A23}),
               ("median(M)", lambda f, v: f.median(v["M"]), {"M": A23})],
    "sort": [("sort(M, axis=-2)", lambda f, v: f.sort(v["M"], axis=-2), {"M": A23}),
             ("sort(M)", lambda f, v: f.sort(v["M"]), {"M": A23}),
             ("sort(M, axis=0)", lambda f, v: f.sort(v["M"], axis=0), {"M": A23})],
    "cumsum": [("cumsum(M, axis=-1)", lambda f, v: f.cumsum(v["M"], axis=-1), {"M": A23}),
               ("cumsum(M, axis=1)", lambda f, v: f.cumsum(v["M"], axis=1), {"M": A23}),
               ("cumsum(M)", lambda f, v: f.cumsum(v["M"]), {"M": A23})],
    "cumprod": [("cumprod(M, axis=-2)", lambda f, v: f.cumprod(v["M"], axis=-2), {"M": A23}),
                ("cumprod(M, axis=1)", lambda f, v: f.cumprod(v["M"], axis=1), {"M": A23}),
                ("cumprod(v)", lambda f, v: f.cumprod(v["v"]), {"v": V3})],
    "diff": [("diff(M)", lambda f, v: f.diff(v["M"]), {"M": A23}),
             ("diff(v, n=2)", lambda f, v: f.diff(v["v"], n=2), {"v": V3}),
             ("diff(M, axis=0)", lambda f, v: f.diff(v["M"], axis=0), {"M": A23})],
    "log_softmax": [("log_softmax(M)", lambda f, v: f.log_softmax(v["M"]), {"M": A23}),
                    ("log_softmax(M, axis=0)", lambda f, v: f.log_softmax(v["M"], axis=0),
                     {"M": A23})],
    "logaddexp": [("logaddexp(M, v)", lambda f, v: f.logaddexp(v["M"], v["v"]),
                   {"M": A23, "v": V3})],
    "logaddexp2": [("logaddexp2(v, M)", lambda f, v: f.logaddexp2(v["v"], v["M"]),
                    {"v": V3, "M": A23})],
    "mod": [("mod(M, v)", lambda f, v: f.mod(v["M"], v["v"]), {"M": A23, "v": V3}),
            ("remainder(-M, v)", lambda f, v: f.remainder(-v["M"], v["v"]),
             {"M": A23, "v": V3})],
    "fmod": [("fmod(-M, v)", lambda f, v: f.fmod(-v["M"], v["v"]), {"M": A23, "v": V3}),
             ("fmod(M, v)", lambda f, v: f.fmod(v["M"], v["v"]), {"M": A23, "v": V3})],
    "floor_divide": [("floor_divide(M, v) * M",
                      lambda f, v: f.floor_divide(v["M"], v["v"]) * v["M"],
                      {"M": A23, "v": V3})],
    "fmax": [("fmax(M, v)", lambda f, v: f.fmax(v["M"], v["v"]), {"M": A23, "v": V3})],
    "fmin": [("fmin(v, M)", lambda f, v: f.fmin(v["v"], v["M"]), {"v": V3, "M": A23})],
    "expand_dims": [("expand_dims(M, -1)", lambda f, v: f.expand_dims(v["M"], -1), {"M": A23}),
                    ("expand_dims(M, 1)", lambda f, v: f.expand_dims(v["M"], 1), {"M": A23})],
    "squeeze": [("squeeze(reshape(M, (2, 1, 3)))",
                 lambda f, v: f.squeeze(f.reshape(v["M"], (2, 1, 3))), {"M": A23})],
    "ravel": [("ravel(M)", lambda f, v: f.ravel(v["M"]), {"M": A23})],
    "atleast_1d": [("atleast_1d(x)", lambda f, v: f.atleast_1d(v["x"]), {"x": ()})],
    "atleast_2d": [("atleast_2d(v)", lambda f, v: f.atleast_2d(v["v"]), {"v": V3})],
    "atleast_3d": [("atleast_3d(M)", lambda f, v: f.atleast_3d(v["M"]), {"M": A23})],
    "broadcast_to": [("broadcast_to(v, (2, 3))", lambda f, v: f.broadcast_to(v["v"], (2, 3)),
                      {"v": V3})],
    "repeat": [("repeat(M, 2, axis=-2)", lambda f, v: f.repeat(v["M"], 2, axis=-2), {"M": A23}),
               ("repeat(M, 2, axis=1)", lambda f, v: f.repeat(v["M"], 2, axis=1), {"M": A23}),
               ("repeat(M, 2)", lambda f, v: f.repeat(v["M"], 2), {"M": A23})],
    "tile": [("tile(M, (2, 1, 2))", lambda f, v: f.tile(v["M"], (2, 1, 2)), {"M": A23}),
             ("tile(v, 2)", lambda f, v: f.tile(v["v"], 2), {"v": V3})],
    "flip": [("flip(M, -2)", lambda f, v: f.flip(v["M"], -2), {"M": A23}),
             ("flip(M, 1)", lambda f, v: f.flip(v["M"], 1), {"M": A23}),
             ("flip(M)", lambda f, v: f.flip(v["M"]), {"M": A23})],
    "fliplr": [("fliplr(M)", lambda f, v: f.fliplr(v["M"]), {"M": A23})],
    "flipud": [("flipud(M)", lambda f, v: f.flipud(v["M"]), {"M": A23})],
    "roll": [("roll(M, 1, axis=-1)", lambda f, v: f.roll(v["M"], 1, axis=-1), {"M": A23}),
             ("roll(M, 1, axis=1)", lambda f, v: f.roll(v["M"], 1, axis=1), {"M": A23}),
             ("roll(M, -2)", lambda f, v: f.roll(v["M"], -2), {"M": A23})],
    "rot90": [("rot90(M)", lambda f, v: f.rot90(v["M"]), {"M": A23}),
              ("rot90(T, 3, (2, 0))", lambda f, v: f.rot90(v["T"], 3, (2, 0)), {"T": A234})],
    "swapaxes": [("swapaxes(T, 0, 2)", lambda f, v: f.swapaxes(v["T"], 0, 2), {"T": A234})],
    "moveaxis": [("moveaxis(T, 0, -1)", lambda f, v: f.moveaxis(v["T"], 0, -1), {"T": A234})],
    "pad": [("pad(M, ((1, 0), (0, 2)))", lambda f, v: f.pad(v["M"], ((1, 0), (0, 2))),
             {"M": A23}),
            ("pad(v, 1, constant_values=0.5)",
             lambda f, v: f.pad(v["v"], 1, constant_values=0.5), {"v": V3})],
    "vstack": [("vstack([M, v])", lambda f, v: f.vstack([v["M"], v["v"]]),
                {"M": A23, "v": V3})],
    "hstack": [("hstack([M, M])", lambda f, v: f.hstack([v["M"], v["M"]]), {"M": A23}),
               ("hstack([v, v])", lambda f, v: f.hstack([v["v"], v["v"]]), {"v": V3})],
    "dstack": [("dstack([M, M])", lambda f, v: f.dstack([v["M"], v["M"]]), {"M": A23})],
    "take": [("take(M, [1, 0], axis=-2)", lambda f, v: f.take(v["M"], I([1, 0]), axis=-2),
              {"M": A23}),
             ("take(M, [2, 0, 2], axis=1)", lambda f, v: f.take(v["M"], I([2, 0, 2]), axis=1),
              {"M": A23}),
             ("take(M, [5, 1])", lambda f, v: f.take(v["M"], I([5, 1])), {"M": A23})],
    "gather": [("gather(M, [1, 1, 0])", lambda f, v: f.gather(v["M"], I([1, 1, 0])),
                {"M": A23})],
    "take_along_axis": [("take_along_axis(M, [[1], [0]], -1)",
                         lambda f, v: f.take_along_axis(v["M"], I([[1], [0]]), -1),
                         {"M": A23}),
                        ("take_along_axis(M, [[0, 2], [1, 1]], 1)",
                         lambda f, v: f.take_along_axis(v["M"], I([[0, 2], [1, 1]]), 1),
                         {"M": A23})],
    "argmax": [("argmax(M, axis=-2)", lambda f, v: f.argmax(v["M"], axis=-2), {"M": A23}),
               ("argmax(M, axis=1)", lambda f, v: f.argmax(v["M"], axis=1), {"M": A23}),
               ("argmax(v)", lambda f, v: f.argmax(v["v"]), {"v": V3})],
    "argmin": [("argmin(M, axis=0)", lambda f, v: f.argmin(v["M"], axis=0), {"M": A23})],
    "split": [("split(M, 3, axis=1)[1]", lambda f, v: f.split(v["M"], 3, axis=1)[1],
               {"M": A23}),
              ("split(v, [1])[1]", lambda f, v: f.split(v["v"], [1])[1], {"v": V3}),
              ("split(M, [1, 2], axis=-1)[2][1]",
               lambda f, v: f.split(v["M"], [1, 2], axis=-1)[2][1], {"M": A23})],
    "array_split": [("array_split(v, 2)[0]", lambda f, v: f.array_split(v["v"], 2)[0],
                     {"v": V3}),
                    ("array_split(M, 2, axis=1)[-1]",
                     lambda f, v: f.array_split(v["M"], 2, axis=1)[-1], {"M": A23})],
}

#: Entries the language cannot call, with the reason.
#: (None today: split and array_split are written with an index picking one piece.)
NOT_IN_LANGUAGE: dict[str, str] = {}

#: Integer-valued entries: no gradient (checked to compute and to be declared so).
NOT_DIFFERENTIABLE = {"argmax", "argmin"}


def numpy_namespace():
    """The entries' numpy forwards, called as the library calls them (a variadic entry
    takes a list; its forward takes the arrays one by one)."""
    from types import SimpleNamespace

    from gradcli.engine import ops
    from gradcli.engine.core.table import REGISTRY

    def plain(op):
        forward = getattr(ops.NP, op.name)
        return (lambda xs, **p: forward(*xs, **p)) if op.variadic else forward
    return SimpleNamespace(**{name: plain(op) for name, op in REGISTRY.items()})
