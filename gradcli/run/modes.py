"""The four TensorFlow eager APIs run on a built program: what each command computes.

This layer sits between the language and the command line: it knows the engine and the
``Model`` of ``gradcli.lang``, and nothing of terminals. Each mode returns an ``Outcome``
that mirrors what its API returns — a value only for ``tape`` and ``value-grad``, the
gradients in the API's order, ``None`` for a source the target does not reach.

>>> from gradcli.lang import parse_program, Declarations, build
>>> decls = Declarations.from_options(var=["w1=2", "w2=3"], arg=["x1=5", "x2=7"])
>>> model = build(parse_program("w1 * x1 + w2 * x2"), decls)
>>> out = run_mode("value-grad", model)
>>> float(out.value), [(g.name, float(g.gradient)) for g in out.gradients]
(31.0, [('w1', 5.0), ('w2', 7.0)])
"""
from __future__ import annotations

import numpy as np

from .. import engine as gc
from ..engine.core.api import NO_VARIABLES
from ..engine.core.tensor import Batched
from ..errors import InputError, ModeError, UnknownNameError, did_you_mean
from ..io.report import Numbers, Page, Report, RowLayout, Rowwise

MODES = ("tape", "grad", "implicit", "value-grad")
NO_TRAINABLE_VARIABLES = (NO_VARIABLES + " (declare one with --var NAME=VALUE, or Variable(...) "
                          "in the program)")

#: What each mode is, in TensorFlow's words (shown by `compare` and in --help).
API_CALLS = {
    "tape": "tf.GradientTape: tape.gradient(target, sources)",
    "grad": "tfe.gradients_function(f, params)(*args)",
    "implicit": "tfe.implicit_gradients(f)(*args)",
    "value-grad": "tfe.implicit_value_and_gradients(f)(*args)",
}
API_NAMES = {"tape": "tf.GradientTape", "grad": "tfe.gradients_function",
             "implicit": "tfe.implicit_gradients",
             "value-grad": "tfe.implicit_value_and_gradients"}


# Plain classes, not dataclasses: the command line defines them at every start, where
# each dataclass costs about 0.4 ms.
class Gradient:
    """One returned gradient: the source's name, its gradient (None when the source does
    not reach the target), the source tensor (for the cross-check), its kind
    ("variable", "frozen", "argument" or "intermediate"), and whether the target reaches
    it (False: zeros were shown for it with --unconnected zero)."""
    __slots__ = ("name", "gradient", "source", "kind", "connected")

    def __init__(self, name: str, gradient, source=None, kind: str = "",
                 connected: bool = True):
        self.name, self.gradient, self.source = name, gradient, source
        self.kind, self.connected = kind, connected

    def __repr__(self) -> str:
        return f"Gradient({self.name!r}, {self.gradient!r}, kind={self.kind!r})"


class Outcome(Rowwise):
    """What one mode returned: the value (tape and value-grad only) and the gradients."""
    __slots__ = ("mode", "value", "gradients", "notes")

    def __init__(self, mode: str, value, gradients=None, notes=None):
        self.mode, self.value = mode, value
        self.gradients: list[Gradient] = gradients if gradients is not None else []
        self.notes: list[str] = notes if notes is not None else []

    def __repr__(self) -> str:
        return f"Outcome({self.mode!r}, value={self.value!r}, gradients={self.gradients!r})"

    @property
    def has_value(self) -> bool:
        """Whether the API returns the value (tape and value-grad)."""
        return self.mode in ("tape", "value-grad")

    def report(self, check: dict | None = None, symbolic: dict | None = None) -> Report:
        """The JSON object of SPEC §3 (value only where the API gives one; ``notes`` only
        when there are some); plain: the value, then each gradient flattened."""
        fields: dict = {"mode": self.mode}
        lines = []
        if self.has_value:
            fields["value"] = Numbers(self.value, what="the value")
            lines.append(("value", fields["value"]))
        fields["gradients"] = []
        for g in self.gradients:
            entry = {"name": g.name, "gradient": Numbers(g.gradient,
                                                         what=f"the gradient of {g.name}")}
            if symbolic is not None:
                entry["symbolic"] = symbolic.get(g.name)
            fields["gradients"].append(entry)
            lines.append((f"gradient {g.name}", entry["gradient"]))
        if self.notes:
            fields["notes"] = list(self.notes)
        if check is not None:
            fields["check"] = check
        return Report(self.mode, fields, lines, self.notes)

    def page(self, precision: int | None, check: dict | None = None,
             symbolic: dict | None = None, target: str | None = None) -> Page:
        """The human page: the API, the value, the gradients (with --symbolic their
        derivatives), the notes, the check."""
        from ..io.text import array_text
        from ..io.report import shape_text
        page = Page().line((self.mode, "heading"), "  ", (API_CALLS[self.mode], "aside"))
        if self.has_value:
            page.value(f"value of {target}" if target else "value", self.value, precision)
        pairs = self.mode in ("implicit", "value-grad")
        headers = ["variable" if pairs else "source" if self.mode == "tape" else "argument",
                   "gradient", "shape"]
        if symbolic is not None:
            headers.append("symbolic derivative")
        rows = []
        for g in self.gradients:
            row = [g.name, array_text(g.gradient, precision) if g.gradient is not None
                   else ("None (not connected)", "aside"), (shape_text(g.gradient), "aside")]
            if symbolic is not None:
                row.append(str(symbolic.get(g.name) or ""))
            rows.append(row)
        if rows:
            if pairs:
                page.line("(gradient, variable) pairs:")
            page.table(headers, rows)
        page.notes(self.notes)
        if check is not None:
            page.check(check, precision, tapes={g.name: g.gradient for g in self.gradients})
        return page

    def order_page(self, order: int, precision: int | None, check: dict | None = None,
                   symbolic: dict | None = None) -> Page:
        """``grad --order N``'s human page: each argument's N-th derivative (with
        --symbolic its formula), the notes, the check."""
        from ..io.text import array_text
        page = Page().line((f"grad --order {order}", "heading"), "  ", (
            f"the pure partial derivatives of order {order}: gradients_function nested "
            f"{order} times", "aside"))
        headers = ["argument", f"d^{order} / d argument^{order}" if order > 1 else "gradient"]
        if symbolic is not None:
            headers.append("symbolic derivative")
        rows = []
        for g in self.gradients:
            row = [g.name, array_text(g.gradient, precision) if g.gradient is not None
                   else ("None (not connected)", "aside")]
            if symbolic is not None:
                row.append(str(symbolic.get(g.name) or ""))
            rows.append(row)
        if rows:
            page.table(headers, rows)
        page.notes(self.notes)
        return page if check is None else page.check(check, precision)

    # --at: the value and the gradients, a row each
    def mapped(self) -> tuple:
        return self.value, [g.gradient for g in self.gradients]

    def at_row(self, value, raw: list) -> "Outcome":
        return Outcome(self.mode, value, [Gradient(g.name, out) for g, out in
                                          zip(self.gradients, raw)], list(self.notes))

    def layout(self) -> RowLayout:
        return RowLayout(self.mode, self.has_value, np.ndim(self.value),
                         [g.name for g in self.gradients],
                         [tuple(getattr(g.source, "shape", ()) or ()) for g in self.gradients],
                         list(self.notes), lambda value, raw: self.at_row(value, raw).report(),
                         self._template())

    def _template(self) -> str:
        """One row's JSON line as a %-template (row, value, gradients)."""
        from ..io import jsonvalue
        parts = ['{"row": %d, "mode": ' + jsonvalue.dumps(self.mode).replace("%", "%%")]
        if self.has_value:
            parts.append(', "value": %r')
        grads = []
        for g in self.gradients:
            name = jsonvalue.dumps(g.name).replace("%", "%%")
            grads.append('{"name": ' + name + ', "gradient": %r}')
        parts.append(', "gradients": [' + ", ".join(grads) + "]")
        if self.notes:
            parts.append(', "notes": ' + jsonvalue.dumps(list(self.notes)).replace("%", "%%"))
        return "".join(parts) + "}\n"


class ModeOptions:
    """The mode options of the command line (all optional): tape's ``wrt`` (sources),
    ``watch`` (arguments or frozen variables to watch), ``watch_accessed``, ``unconnected``
    ("none" or "zero"); grad's ``params`` (names or indices)."""
    __slots__ = ("wrt", "watch", "watch_accessed", "unconnected", "params")

    def __init__(self, wrt=None, watch=None, watch_accessed: bool = True,
                 unconnected: str = "none", params=None):
        self.wrt, self.watch = wrt, watch if watch is not None else []
        self.watch_accessed, self.unconnected, self.params = watch_accessed, unconnected, params


def run_mode(mode: str, model, options: ModeOptions | None = None) -> Outcome:
    """Run one mode on a built program."""
    options = options or ModeOptions()
    if mode == "tape":
        return _tape(model, options)
    if mode == "grad":
        return _grad(model, options)
    if mode in ("implicit", "value-grad"):
        return _implicit(model, with_value=mode == "value-grad")
    raise InputError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")


def result_array(t):
    """A computed tensor as the numpy array a command shows (None stays None). Inside
    ``vectorized_map`` (``--at``: many points at once) a batched value stays one, for
    the map to stack per example: every command's result code goes through here."""
    return None if t is None else t if isinstance(t, Batched) else np.asarray(t.numpy())


def _kind(model, name: str) -> str:
    kind = model.kinds.get(name)
    if kind in ("var", "frozen", "variable"):
        return "variable" if model.trainable[name] else "frozen"
    return {"arg": "argument", "constant": "constant"}.get(kind, "intermediate")


def _unknown(name: str, known, what: str) -> UnknownNameError:
    hint = did_you_mean(name, known)
    listing = ", ".join(known) if known else "none"
    return UnknownNameError(f"unknown {what} '{name}'{hint}; known: {listing}")


def _tape(model, options: ModeOptions) -> Outcome:
    # Everything refusable is refused from the names alone, before a file is read.
    if options.unconnected not in ("none", "zero"):
        raise InputError(f"--unconnected must be 'none' or 'zero', got {options.unconnected!r}")
    for name in options.watch:
        if model.is_declared(name):
            continue
        if name in model.kinds:
            raise InputError(f"--watch {name}: only arguments and variables can be watched; "
                             f"'{name}' is computed by the program, so it is recorded when "
                             "computed from watched values (give it to --wrt instead)")
        raise _unknown(name, [n for n in model.kinds if model.is_declared(n)],
                       "name to watch")
    for name in options.wrt or ():
        if name not in model.kinds:
            raise _unknown(name, model.names, "source")
    # A declared name is the declared argument or variable, whatever the program later
    # binds to it (as in TensorFlow, where the Python name is rebound, not the tensor).
    watch_objects = [model.source(name) for name in options.watch]
    with gc.GradientTape(watch_accessed_variables=options.watch_accessed) as tape:
        for obj in watch_objects:
            tape.watch(obj)
        target = model.function(*model.arg_values)
    if options.wrt is None:
        # Only declared values can be watched: the default sources are those watched.
        watched_ids = {id(v) for v in tape.watched_variables()} | {id(o) for o in watch_objects}
        names = [n for n in model.names if model.is_declared(n)
                 and id(model.source(n)) in watched_ids]
    else:
        names = list(options.wrt)
    sources = [model.source(n) for n in names]
    grads = tape.gradient(target, sources) if sources else []
    out = Outcome("tape", result_array(target))
    for name, source, g in zip(names, sources, grads):
        gradient = result_array(g)
        if g is None and options.unconnected == "zero":
            gradient = np.zeros(source.shape, dtype=source.dtype)
        out.gradients.append(Gradient(name, gradient, source, _kind(model, name),
                                      connected=g is not None))
        if g is None and name in model.arg_names and name not in options.watch:
            out.notes.append(f"'{name}' is an argument the tape did not watch: "
                             f"add --watch {name} to differentiate with respect to it")
    _note_non_scalar(out, out.value)
    if not names:
        out.notes.append("the tape watched nothing: no trainable variable was read "
                         "(use --watch NAME for an argument or a frozen variable)")
    return out


def _grad(model, options: ModeOptions) -> Outcome:
    if not model.arg_names:
        raise ModeError("grad differentiates with respect to the program's arguments, and "
                        "it has none: declare them with --arg NAME=VALUE")
    params = options.params
    if params is None:
        indices = list(range(len(model.arg_names)))
    else:
        is_index = [p.lstrip("-").isdigit() for p in params]
        if any(is_index) and not all(is_index):
            raise InputError("--params must be all argument names or all indices, not a mix")
        if all(is_index):
            indices = []
            for p in params:
                i = int(p)
                if not -len(model.arg_names) <= i < len(model.arg_names):
                    raise InputError(f"--params index {i} is out of range: the program has "
                                     f"{len(model.arg_names)} arguments "
                                     f"({', '.join(model.arg_names)})")
                indices.append(i % len(model.arg_names))
        else:
            indices = []
            for p in params:
                if p not in model.arg_names:
                    raise _unknown(p, model.arg_names, "argument")
                indices.append(model.arg_names.index(p))
    value, grads = gc.value_and_gradients_function(model.function, params=indices)(
        *model.arg_values)
    out = Outcome("grad", None)
    _note_non_scalar(out, result_array(value))
    for i, g in zip(indices, grads):
        name = model.arg_names[i]
        out.gradients.append(Gradient(name, result_array(g), model.arg_values[i], "argument"))
    return out


def _implicit(model, with_value: bool) -> Outcome:
    # Which variables the program reads is known from its tree: refuse before any work
    # (a 10^7-element file is not read, the forward pass not run). The same refusal at
    # run time stays for what the tree cannot rule out (``a = w`` with ``a`` unused).
    if not any(model.trainable[name] for name in model.read_variables):
        raise ModeError(NO_TRAINABLE_VARIABLES)
    try:
        # the value also for implicit (which does not return it): to note a non-scalar target
        value, pairs = gc.implicit_value_and_gradients(model.function)(*model.arg_values)
    except ValueError as err:
        if str(err) == NO_VARIABLES:
            raise ModeError(NO_TRAINABLE_VARIABLES) from None
        raise
    names = {id(v): n for n, v in model.variables.items()}
    out = Outcome("value-grad" if with_value else "implicit",
                  result_array(value) if with_value else None)
    for g, variable in pairs:
        out.gradients.append(Gradient(names.get(id(variable), variable.name), result_array(g),
                                      variable, "variable"))
    _note_non_scalar(out, result_array(value))
    return out


def _note_non_scalar(out: Outcome, value) -> None:
    """Every mode says so when the target is not a scalar: the gradients are then of its
    sum (TensorFlow's rule), which a user expecting a Jacobian would misread."""
    if value is not None and np.ndim(value) > 0:
        out.notes.append(f"the target is not a scalar (shape {tuple(np.shape(value))}): "
                         "gradients are of its sum")


def compare_page(results: dict, precision: int | None, checks: dict | None = None,
                 symbolics: dict | None = None) -> Page:
    """compare's human page: the four modes side by side (``results``: mode -> Outcome,
    or the message of a mode that refused); with --check each mode's cross-check below."""
    from ..io.text import array_text
    rows = []
    for mode, result in results.items():
        if isinstance(result, str):
            rows.append([mode, API_NAMES[mode], "-", [("error:", "error"), " " + result]])
            continue
        value = (array_text(result.value, precision) if result.has_value
                 else ("not returned", "aside"))
        symbolic = (symbolics or {}).get(mode)
        lines = []
        for g in result.gradients:
            text = array_text(g.gradient, precision)
            lines.append(f"{g.name}:" + ("\n" if "\n" in text else " ") + text)
            if symbolic is not None:
                lines.append(f"  symbolic: {symbolic.get(g.name) or '-'}")
        rows.append([mode, API_NAMES[mode], value, "\n".join(lines) or ("(none)", "aside")])
    page = Page().table(["mode", "TensorFlow API", "value", "gradients (in the API's order)"],
                        rows, "the four gradient APIs on one program", rules=True, frame=True)
    page.line(("tape: w.r.t. what the tape watched (trainable variables read, --watch); "
               "grad: w.r.t. the arguments, variables are constants; implicit: w.r.t. the "
               "trainable variables read; value-grad: the same, plus the value.", "aside"))
    notes: dict = {}
    for mode, result in results.items():
        for note in ([] if isinstance(result, str) else result.notes):
            notes.setdefault(note, []).append(mode)
    page.notes([f"({', '.join(modes)}) {note}" for note, modes in notes.items()])
    for mode, check in (checks or {}).items():
        page.check(check, precision, title=f"cross-check of {mode}",
                   tapes={g.name: g.gradient for g in results[mode].gradients})
    return page
