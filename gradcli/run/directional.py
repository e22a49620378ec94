"""The ``jvp`` mode: the directional derivative of a built program by forward mode.

Between the language and the command line, as ``modes.py``: it knows the engine and the
``Model``, nothing of terminals. The tangents (``--tangent NAME=VALUE``) name declared
arguments and variables; every other input is held constant along the direction.

>>> from gradcli.lang import parse_program, Declarations, build
>>> model = build(parse_program("x^2 * y"), Declarations.from_options(arg=["x=3", "y=2"]))
>>> out = run_jvp(model, parse_tangents(model, ["x=1"]))
>>> float(out.value), float(out.jvp)
(18.0, 12.0)
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError, UnknownNameError, did_you_mean
from ..io.report import Numbers, Page, Report, RowKind, RowLayout, Rowwise, shape_text

API_CALL = "tf.autodiff.ForwardAccumulator(primals, tangents): acc.jvp(target)"


class JvpOutcome(Rowwise):
    """What the jvp mode computed: the target's ``value``, its directional derivative
    ``jvp`` (the target's shape), and the ``tangents`` (name -> array, in the order given)."""
    __slots__ = ("mode", "value", "jvp", "tangents")
    ROWS = RowKind(prefix="", norm="jvp norm")

    def __init__(self, value, jvp, tangents: dict):
        self.mode, self.value, self.jvp, self.tangents = "jvp", value, jvp, tangents

    def __repr__(self) -> str:
        return f"JvpOutcome(value={self.value!r}, jvp={self.jvp!r})"

    def report(self, check: dict | None = None) -> Report:
        """``{"mode": "jvp", "value": ..., "jvp": ...}`` (plus ``check`` with --check);
        plain: the value, then the jvp, each flattened on one line."""
        fields = {"mode": "jvp", "value": Numbers(self.value), "jvp": Numbers(self.jvp)}
        if check is not None:
            fields["check"] = check
        return Report("jvp", fields, [("value", fields["value"]), ("jvp", fields["jvp"])])

    def page(self, precision: int | None, check: dict | None = None,
             target: str | None = None, compared: bool = False) -> Page:
        """The human page: the value, the direction, the directional derivative, the
        check; ``compared``: compare's jvp row (one line, the check titled for it)."""
        from ..io.text import array_text
        if compared:
            page = Page().line(
                "jvp (forward mode, tf.autodiff.ForwardAccumulator) along "
                f"{self.direction(precision)}: value {array_text(self.value, precision)}, "
                "directional derivative ", (array_text(self.jvp, precision), "emphasis"))
            return page if check is None else page.check(check, precision,
                                                         title="jvp cross-check")
        label = f"value of {target}" if target else "value"
        page = Page().line(("jvp", "heading"), "  ", (API_CALL, "aside"))
        page.line(f"{label}: ", (array_text(self.value, precision), "emphasis"), "  ",
                  (f"shape {shape_text(self.value)}", "aside"))
        page.line("along: " + self.direction(precision))
        page.line("jvp (directional derivative): ", (array_text(self.jvp, precision),
                                                     "emphasis"),
                  "  ", (f"shape {shape_text(self.jvp)}", "aside"))
        return page if check is None else page.check(check, precision)

    def direction(self, precision: int | None) -> str:
        """The tangents: ``x = 1.0, y = 0.5``."""
        from ..io.text import array_text
        return ", ".join(f"{name} = {array_text(t, precision)}"
                         for name, t in self.tangents.items())

    def mapped(self) -> tuple:
        return self.value, [self.jvp]

    def at_row(self, value, raw: list) -> "JvpOutcome":
        return JvpOutcome(value, raw[0], self.tangents)

    def layout(self) -> RowLayout:
        return RowLayout("jvp", True, np.ndim(self.value), ["jvp"], [()], [],
                         lambda value, raw: self.at_row(value, raw).report())


def jvp(model, tangents: list) -> JvpOutcome:
    """``gradcli jvp`` at one point: ``run_jvp`` along the ``--tangent NAME=VALUE``
    options (the per-point function ``--at`` maps)."""
    return run_jvp(model, parse_tangents(model, tangents))


def parse_tangents(model, options) -> dict:
    """``--tangent NAME=VALUE`` options -> {name: array of the source's shape}.

    The name must be a declared argument or variable (the primals); the value has the
    same grammar as ``--arg`` (numbers, lists, ``linspace(...)``, ``@file``); a single
    number for an array source is that number in every element. Refused (exit 2): no
    tangent, an unknown or computed name, a name given twice, a shape that does not fit.
    """
    from ..lang.values import with_option_label, load_value, parse_declaration
    if not options:
        raise InputError("jvp needs a direction: give --tangent NAME=VALUE for an "
                         "argument or variable (repeatable)")
    declared = [n for n in model.names if model.kinds.get(n) in ("arg", "var", "frozen",
                                                                  "variable")]
    parsed: list[tuple[str, str]] = []
    for option in options:
        name, text = with_option_label("--tangent", parse_declaration, option)
        if name in (n for n, _ in parsed):
            raise InputError(f"--tangent {name} is given twice")
        if name not in declared:
            if name in model.kinds:
                what = ("a constant" if model.kinds[name] == "constant"
                        else "computed by the program")
                raise InputError(f"--tangent {name}: only arguments and variables have "
                                 f"tangents; '{name}' is {what}")
            hint = did_you_mean(name, declared)
            listing = ", ".join(declared) if declared else "none"
            raise UnknownNameError(f"unknown name '{name}' for --tangent{hint}; arguments "
                                   f"and variables: {listing}")
        parsed.append((name, text))
    tangents = {}
    for name, text in parsed:  # values only once every name is known good
        value = with_option_label(f"--tangent {name}", load_value, text)  # as --arg's errors
        shape = model.source(name).shape
        if value.shape != shape:
            if value.ndim:
                raise InputError(f"--tangent {name}: a value of shape {value.shape} for "
                                 f"'{name}' of shape {shape}")
            value = np.full(shape, float(value))
        tangents[name] = value
    return tangents


def run_jvp(model, tangents: dict) -> JvpOutcome:
    """The target's value and its directional derivative along ``tangents`` (forward
    mode: one pass, whatever the target's size). A target the tangents do not reach has
    a zero derivative."""
    from .. import engine as gc
    from .modes import result_array
    primals = [model.source(name) for name in tangents]
    directions = [np.asarray(t, dtype=p.dtype) for t, p in zip(tangents.values(), primals)]
    with gc.ForwardAccumulator(primals, directions) as acc:
        target = model.function(*model.arg_values)
    jvp = acc.jvp(target, unconnected_gradients="zero")
    return JvpOutcome(result_array(target), result_array(jvp), dict(tangents))
