"""Higher derivatives of a built program: Jacobians, Hessians with a verdict at the
point, and N-th derivatives (``gradcli jacobian``, ``gradcli hessian``, ``grad --order``).

Like :mod:`gradcli.run.modes`, this layer knows the engine and the ``Model`` of
``gradcli.lang`` and nothing of terminals; all of it is written on the engine's public
API (tapes, ``gradients_function``), by nested reverse mode.

The sources are declared values (:func:`choose_sources`): by default the trainable
variables the program reads when there are any (what ``implicit``, ``value-grad`` and
``minimize`` differentiate: the parameters, not the data), else the arguments; ``--wrt``
may name any argument or variable (frozen ones included), data arguments too. A constant
or a value the program computes is refused: its Jacobian would be taken with the value
cut out of the program, which the tape can do (``gradcli tape --wrt``) but these
commands do not.

>>> from gradcli.lang import parse_program, Declarations, build
>>> decls = Declarations.from_options(arg=["x=1.2", "y=1"])
>>> model = build(parse_program("(1-x)^2 + 100*(y-x^2)^2"), decls)
>>> result = hessian(model)
>>> result.hessian.tolist(), result.verdict
([[1330.0, -480.0], [-480.0, 200.0]], 'not-critical')
"""
from __future__ import annotations

import math

import numpy as np

from .. import engine as gc
from ..errors import InputError, LimitError, ModeError, UnknownNameError, did_you_mean
from ..io.points import element_labels
from ..io.report import Numbers, Page, Report, RowKind, RowLayout, Rowwise
from ..lang import limits

#: The verdicts of ``hessian``, one token each (``undefined``: the gradient or Hessian is
#: not finite).
VERDICTS = ("minimum", "maximum", "saddle", "degenerate", "not-critical", "undefined")
#: How the sources were chosen: named by ``--wrt``, or the default's two cases.
SOURCE_RULES = ("wrt", "variables", "arguments")
JACOBIAN_MODES = ("rev", "fwd", "auto")
MAX_ORDER = 10


# ---------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------
class Sources:
    """The names a command differentiates with respect to, in order; ``taken`` says why
    (one of :data:`SOURCE_RULES`), ``sentence`` says it to the user ("with respect to
    the trainable variable w (declared with --var)") and ``left_out`` lists the declared
    arguments and trainable variables the default did not take (empty under ``--wrt``)."""
    __slots__ = ("names", "taken", "sentence", "left_out")

    def __init__(self, names: list[str], taken: str, sentence: str,
                 left_out: list[str] = ()):
        self.names, self.taken, self.sentence = names, taken, sentence
        self.left_out = list(left_out)

    def notes(self) -> list[str]:
        """The sentence as a note where output has no room for it otherwise (``--plain``,
        ``--at``): only when the default left a declared value out."""
        return [self.sentence] if self.left_out else []


def choose_sources(model, wrt: list[str] | None, command: str) -> Sources:
    """The sources for ``--wrt`` (each a declared value), or by default the trainable
    variables the program reads when it reads any, else the arguments.

    The default is the parameters, as ``implicit``, ``value-grad`` and ``minimize`` take
    them (and as a TensorFlow tape watches them): data given with ``--arg`` enters only
    when ``--wrt`` names it, so a model's Hessian is over its weights, not over every
    data point as well.

    >>> from gradcli.lang import parse_program, Declarations, build
    >>> model = build(parse_program("w * x"), Declarations.from_options(var=["w=2"],
    ...                                                                 arg=["x=3"]))
    >>> chosen = choose_sources(model, None, "hessian")
    >>> chosen.names, chosen.taken, chosen.left_out
    (['w'], 'variables', ['x'])
    """
    if wrt is not None:
        names = _declared_sources(model, list(dict.fromkeys(wrt)), command)
        return Sources(names, "wrt", f"with respect to {', '.join(names)} (named by --wrt)")
    variables = [n for n in model.read_variables if model.trainable[n]]
    args = list(model.arg_names)
    if variables:
        return Sources(variables, "variables", _variables_sentence(model, variables, args),
                       args)
    if not args:
        raise ModeError(f"{command} needs something to differentiate with respect to: "
                        "declare an argument (--arg NAME=VALUE) or a variable "
                        "(--var NAME=VALUE)")
    unread = [n for n, trainable in model.trainable.items() if trainable]
    why = (f"the trainable {_plural('variable', unread)} {', '.join(unread)} "
           f"{'is' if len(unread) == 1 else 'are'} not read by the program" if unread
           else "no trainable variable is declared")
    return Sources(args, "arguments", f"with respect to the {_plural('argument', args)} "
                                      f"{', '.join(args)} (declared with --arg; {why})",
                   unread)


def _plural(word: str, names: list) -> str:
    return word if len(names) == 1 else word + "s"


def _variables_sentence(model, variables: list[str], args: list[str]) -> str:
    origins = {"--var" if model.kinds[n] == "var" else "Variable(...) in the program"
               for n in variables}
    text = (f"with respect to the trainable {_plural('variable', variables)} "
            f"{', '.join(variables)} (declared with {' and '.join(sorted(origins))})")
    if args:
        text += (f"; the {_plural('argument', args)} {', '.join(args)} "
                 f"{'is' if len(args) == 1 else 'are'} held fixed (--wrt names "
                 f"{'it' if len(args) == 1 else 'them'} to include "
                 f"{'it' if len(args) == 1 else 'them'})")
    return text


def _declared_sources(model, names: list[str], command: str) -> list[str]:
    """``names`` (from ``--wrt``), each checked to be a declared argument or variable."""
    inputs = ("arg", "var", "frozen", "variable")
    declared = [n for n in model.names if model.kinds[n] in inputs]
    for name in names:
        kind = model.kinds.get(name)
        if kind in inputs:
            continue
        if kind == "constant":
            raise InputError(f"--wrt {name}: '{name}' is a constant; {command} "
                             "differentiates with respect to arguments and variables "
                             "(declare it with --arg or Variable(...))")
        if kind is not None:
            raise InputError(f"--wrt {name}: {command} differentiates with respect to "
                             f"arguments and variables; '{name}' is computed by the "
                             "program (gradcli tape --wrt takes it)")
        hint = did_you_mean(name, declared)
        raise UnknownNameError(f"unknown source '{name}'{hint}; known: "
                               f"{', '.join(declared) or 'none'}")
    return names


def labels(names: list[str], shapes: list[tuple]) -> list[str]:
    """One label per element of the flattened sources: ``x``, ``W[0,1]``."""
    out = []
    for name, shape in zip(names, shapes):
        out += element_labels(name, shape)
    return out


def _numeric_target(target, command: str) -> None:
    if target.dtype == np.bool_:
        raise ModeError(f"the target is a comparison (boolean), which has no {command}")


def _size(shape) -> int:
    return math.prod(shape)


def _check_derivative_size(what: str, rows: int, columns: int) -> None:
    """Refuse a Jacobian or Hessian of ``rows`` x ``columns`` elements over the array size
    limit before any pass of it runs (its memory, and one pass per row or column); under
    ``--at``, the limit is shared by the rows computed at once (``ChunkTooLarge``)."""
    if rows * columns > limits.array_limit():
        limits.check_elements(rows * columns, f"the {what} ({rows:,} x {columns:,})")


def _check_passes(passes: int, kind: str, other: str, other_passes: int) -> None:
    if passes > limits.MAX_DERIVATIVE_PASSES:
        raise LimitError(f"--mode {kind} would take {passes:,} passes, over the limit of "
                         f"{limits.MAX_DERIVATIVE_PASSES:,} (--mode {other} takes "
                         f"{other_passes:,}; --mode auto takes the fewer)")


# ---------------------------------------------------------------------------------------
# Jacobian
# ---------------------------------------------------------------------------------------
class Jacobian:
    """One source's Jacobian: ``jacobian`` has shape ``target.shape + source.shape``
    (zeros, with ``connected`` False, when the target does not depend on the source)."""
    __slots__ = ("name", "jacobian", "connected", "source")

    def __init__(self, name: str, jacobian: np.ndarray, connected: bool, source=None):
        self.name, self.jacobian, self.connected, self.source = (name, jacobian, connected,
                                                                 source)

    @property
    def shape(self) -> tuple:
        return tuple(np.shape(self.jacobian))


class JacobianResult(Rowwise):
    """What ``jacobian`` gives: the target's value, one :class:`Jacobian` per source, how
    it was computed (``computed_by``: "reverse" or "forward") and how the sources were
    chosen (``sources``: :class:`Sources`, None when not known)."""
    __slots__ = ("value", "jacobians", "computed_by", "mode", "sources")
    ROWS = RowKind(norm="Jacobian norm (Frobenius, all sources)")

    def __init__(self, value, jacobians: list[Jacobian], computed_by: str, mode: str,
                 sources: Sources | None = None):
        self.value, self.jacobians = value, jacobians
        self.computed_by, self.mode, self.sources = computed_by, mode, sources

    def report(self, check: dict | None = None) -> Report:
        """JSON: the value, how it was computed, the sources, each Jacobian with its shape;
        plain: the value, then each Jacobian flattened (every number)."""
        fields = {"mode": "jacobian", "value": Numbers(self.value, summarise=False),
                  "computed_by": self.computed_by, **sources_fields(self.sources),
                  "jacobians": [{"name": j.name, "jacobian": Numbers(j.jacobian, False),
                                 "shape": list(j.shape), "connected": j.connected}
                                for j in self.jacobians]}
        if check is not None:
            fields["check"] = check
        lines = [("value", fields["value"])] + [
            (f"jacobian {j['name']}", j["jacobian"]) for j in fields["jacobians"]]
        return Report("jacobian", fields, lines, source_notes(self.sources))

    def page(self, precision: int | None, check: dict | None = None,
             target: str | None = None, compared: bool = False) -> Page:
        """The human page: what is computed, the sources, the value, a Jacobian per
        source, the check; ``compared``: compare's row (tf.GradientTape.jacobian beside
        the four APIs: no value)."""
        from ..io.text import array_text
        if compared:
            page = Page().line(("jacobian", "heading"), "  ", (
                "tf.GradientTape.jacobian(target, sources): each element of the target, "
                "not their sum", "aside"))
        else:
            page = Page().line(("jacobian", "heading"), "  ", (
                f"d {target or 'target'} / d source: shape target.shape + source.shape "
                f"({self.computed_by} mode)", "aside"))
        if self.sources is not None:
            page.line((self.sources.sentence, "aside"))
        if not compared:
            page.value(f"value of {target}" if target else "value", self.value, precision)
        rows = []
        for j in self.jacobians:
            shown = array_text(j.jacobian, precision)
            rows.append([j.name, shown if j.connected else [shown, (" (not connected)",
                                                                    "aside")],
                         (str(j.shape), "aside")])
        page.table(["source", "jacobian", "shape"], rows)
        return page if check is None else page.check(check, precision)

    def mapped(self) -> tuple:
        return self.value, [j.jacobian for j in self.jacobians]

    def at_row(self, value, raw: list) -> "JacobianResult":
        return JacobianResult(value, [Jacobian(j.name, out, j.connected, j.source)
                                      for j, out in zip(self.jacobians, raw)],
                              self.computed_by, self.mode, self.sources)

    def layout(self) -> RowLayout:
        return RowLayout("jacobian", True, np.ndim(self.value),
                         [j.name for j in self.jacobians],
                         [tuple(getattr(j.source, "shape", ()) or ()) for j in self.jacobians],
                         self.sources.notes(), lambda value, raw: self.at_row(value, raw).report())


def sources_fields(sources) -> dict:
    """The sources and how they were chosen (nothing when a result does not know)."""
    if sources is None:
        return {}
    return {"sources": list(sources.names), "sources_from": sources.taken}


def source_notes(sources) -> list:
    """Which sources the default took, where it left a declared one out (plain: said on
    standard error)."""
    return [] if sources is None else sources.notes()


def jacobian(model, wrt: list[str] | None = None, mode: str = "rev") -> JacobianResult:
    """The Jacobian of the target (any shape) with respect to each source."""
    if mode not in JACOBIAN_MODES:
        raise InputError(f"--mode must be one of {', '.join(JACOBIAN_MODES)}, got {mode!r}")
    from .modes import result_array
    chosen = choose_sources(model, wrt, "jacobian")
    names = chosen.names
    sources = [model.source(n) for n in names]
    value, columns, computed_by = _jacobian(mode, model, sources)
    out = []
    for name, source, column in zip(names, sources, columns):
        if column is None:
            out.append(Jacobian(name, np.zeros(np.shape(value) + source.shape,
                                               dtype=source.dtype), False, source))
        else:
            out.append(Jacobian(name, result_array(column), True, source))
    return JacobianResult(result_array(value), out, computed_by, mode, chosen)


def _jacobian(mode: str, model, sources: list) -> tuple:
    """``(target, [jacobian or None per source], computed_by)``: the one place that
    chooses how a Jacobian is computed. ``rev``: one backward pass per target element;
    ``fwd``: one forward pass per source element (forward mode, a unit tangent each);
    ``auto``: forward when the sources have fewer elements than the target."""
    n_sources = sum(_size(s.shape) for s in sources)
    if mode != "rev":
        target = model.function(*model.arg_values)
        _numeric_target(target, "Jacobian")
        n_target = _size(target.shape)
        _check_derivative_size("Jacobian", n_target, n_sources)
        if mode == "fwd" or n_sources < n_target:
            _check_passes(n_sources, "fwd", "rev", n_target)
            return target, [_forward_columns(model, s, target.shape) for s in sources], \
                "forward"
    with gc.GradientTape(watch_accessed_variables=False) as tape:
        for source in sources:
            tape.watch(source)
        target = model.function(*model.arg_values)
    _numeric_target(target, "Jacobian")
    n_target = _size(target.shape)
    _check_derivative_size("Jacobian", n_target, n_sources)
    _check_passes(n_target, "rev", "fwd", n_sources)
    return target, tape.jacobian(target, sources), "reverse"


def _forward_columns(model, source, tshape: tuple):
    """d target / d source by forward mode: one forward pass on the batch of unit
    tangents, one per element of the source (``vectorized_map`` over the basis, as
    ``jax.jacfwd``; a loop of passes, said once, where an operation cannot batch, and
    inside ``--at``'s own map); None when no tangent reaches the target."""
    from ..engine.core.batching import vectorized_map
    size = int(np.prod(source.shape, dtype=np.int64))
    if size == 0:
        return gc.constant(np.zeros(tuple(tshape) + tuple(source.shape)), dtype=source.dtype)
    connected = [False]

    def column(unit):
        with gc.ForwardAccumulator(source, unit) as acc:
            target = model.function(*model.arg_values)
        tangent = acc.jvp(target)
        connected[0] = connected[0] or tangent is not None
        return acc.jvp(target, unconnected_gradients="zero")

    basis = np.eye(size, dtype=source.dtype).reshape((size, *source.shape))
    columns = vectorized_map(column, basis)  # (size, *tshape): column k along unit k
    if not connected[0]:
        return None
    # Engine ops, not numpy: inside vectorized_map (--at) the columns are batched values.
    moved = gc.FUNCTIONS["moveaxis"](gc.FUNCTIONS["reshape"](columns, (size, -1)), 0, -1)
    return gc.FUNCTIONS["reshape"](moved, tuple(tshape) + tuple(source.shape))


# ---------------------------------------------------------------------------------------
# Hessian and the verdict at the point
# ---------------------------------------------------------------------------------------
class HessianResult(Rowwise):
    """What ``hessian`` gives (see :func:`classify` for the verdict's fields; ``sources``
    is the :class:`Sources` chosen, None when not known)."""
    __slots__ = ("value", "names", "sources", "shapes", "labels", "gradient", "hessian",
                 "verdict", "eigenvalues", "critical", "gradient_norm", "gradient_tolerance",
                 "zero_tolerance", "condition_number", "asymmetry", "asymmetry_tolerance",
                 "dtype", "point")
    # --at: vectorized_map gives the gradient, the Hessian and the point; each row's
    # eigenvalues and verdict are then classify's of them, as at a single point
    ROWS = RowKind(prefix="", norm_of=(0,), word="verdict",
                   word_width=max(map(len, VERDICTS)))

    def __init__(self, **fields):
        for key in self.__slots__:
            setattr(self, key, fields.get(key))

    @property
    def symmetric(self) -> bool:
        """False when the Hessian is asymmetric beyond round-off (a wrong rule)."""
        return not self.asymmetry > self.asymmetry_tolerance

    def report(self, check: dict | None = None) -> Report:
        """JSON: everything the verdict rests on; plain: the value, the gradient, the
        Hessian a row a line, the eigenvalues, the verdict."""
        fields = {"mode": "hessian", "value": Numbers(self.value, False),
                  **sources_fields(self.sources),
                  "labels": list(self.labels), "gradient": Numbers(self.gradient, False),
                  "hessian": Numbers(self.hessian), "eigenvalues": Numbers(self.eigenvalues),
                  "verdict": self.verdict, "critical": self.critical,
                  "gradient_tolerance": Numbers(self.gradient_tolerance),
                  "zero_tolerance": Numbers(self.zero_tolerance),
                  "condition_number": Numbers(self.condition_number),
                  "symmetric": self.symmetric, "asymmetry": Numbers(self.asymmetry)}
        if check is not None:
            fields["check"] = check
        eigenvalues = self.eigenvalues if self.eigenvalues is not None else []
        lines = ([("value", fields["value"]), ("gradient", fields["gradient"])]
                 + [("hessian", Numbers(row, False)) for row in self.hessian]
                 + [("eigenvalues", Numbers(eigenvalues, False)), ("verdict", self.verdict)])
        return Report("hessian", fields, lines, source_notes(self.sources))

    #: The most columns the page shows the Hessian as a labelled table (numpy's layout
    #: beyond).
    TABLE_COLUMNS = 8

    def page(self, precision: int | None, check: dict | None = None,
             target: str | None = None) -> Page:
        """The human page: the sources, the value, the gradient and the Hessian, the
        eigenvalues, the verdict in words, a warning when it is not symmetric, the
        check."""
        from ..io.text import array_text, number_text
        n = len(self.labels)
        table = n <= self.TABLE_COLUMNS
        page = Page().line(("hessian", "heading"), "  ", (
            f"d2 {target or 'target'} / d source^2 over {', '.join(self.names)} "
            f"({n} element{'s' if n != 1 else ''}; nested reverse mode)", "aside"))
        if self.sources is not None:
            page.line((self.sources.sentence, "aside"))
        page.value(f"value of {target}" if target else "value", self.value, precision)
        headers = ["element", "gradient"]
        if table:
            headers += [f"H[:, {label}]" if n == 1 else label for label in self.labels]
        rows = []
        for i, label in enumerate(self.labels):
            row = [label, number_text(self.gradient[i], precision)]
            if table:
                row += [number_text(v, precision) for v in self.hessian[i]]
            rows.append(row)
        page.table(headers, rows)
        if not table:
            page.line("Hessian (rows and columns in the order above):")
            for line in array_text(self.hessian, precision).split("\n"):
                page.line("  " + line)
        if self.eigenvalues is not None:
            page.line("eigenvalues: ", array_text(self.eigenvalues, precision))
            page.line("  ", (self._tolerance_words(), "aside"))
        page.line("verdict: ", (self.verdict, "emphasis"), ": " + self._verdict_words())
        if not self.symmetric:
            page.line(("warning:", "bad"),
                      f" the Hessian is not symmetric: max |H - H^T| = "
                      f"{number_text(self.asymmetry, 3)}, beyond round-off "
                      f"({number_text(self.asymmetry_tolerance, 3)}): a derivative "
                      "rule is wrong; the eigenvalues are those of (H + H^T) / 2")
        return page if check is None else page.check(check, precision)

    def _verdict_words(self) -> str:
        """The verdict in words, with the tolerance that decided it (never "tolerance 0":
        a zero tolerance is a zero Hessian, where only an exact 0 counts)."""
        from ..io.text import number_text
        if self.verdict == "undefined":
            return ("the gradient or the Hessian is not finite here (nan or inf): no "
                    "second-derivative test applies")
        kind = definiteness(self.eigenvalues, self.zero_tolerance)
        gradient = self._gradient_words()
        if self.verdict == "not-critical":
            return (f"not a critical point ({gradient}), so no minimum, maximum or saddle "
                    f"claim is made; the Hessian here is {kind}")
        zero = (f", with a zero eigenvalue (|eigenvalue| <= "
                f"{number_text(self.zero_tolerance, 3)})" if self.zero_tolerance > 0 else "")
        words = {"minimum": "a local minimum (the Hessian is positive definite)",
                 "maximum": "a local maximum (the Hessian is negative definite)",
                 "saddle": "a saddle point (the Hessian has eigenvalues of both signs)",
                 "degenerate": f"a critical point where the test says nothing: the Hessian "
                               f"is {kind}{zero}; higher derivatives decide"}
        return f"{words[self.verdict]}; critical point: {gradient}"

    def _gradient_words(self) -> str:
        from ..io.text import number_text
        norm = f"max |gradient| = {number_text(self.gradient_norm, 3)}"
        if self.gradient_tolerance > 0:
            return (f"{norm} {'<=' if self.critical else '>'} tolerance "
                    f"{number_text(self.gradient_tolerance, 3)}")
        # (a zero tolerance: the Hessian is 0, so rounding cannot explain any gradient)
        if self.critical:
            return "the gradient is exactly 0 (with a zero Hessian only an exact 0 counts)"
        return f"{norm}, and with a zero Hessian only an exact 0 counts"

    def _tolerance_words(self) -> str:
        """The zero test and the condition number (see :func:`classify`)."""
        from ..io.text import number_text
        condition = f"condition number {number_text(self.condition_number, 3)}"
        if self.zero_tolerance > 0:
            return (f"{condition}; an eigenvalue counts as 0 when |eigenvalue| <= "
                    f"{number_text(self.zero_tolerance, 3)} (n (4 eps max |eigenvalue| + "
                    "max |H - H^T|): how far rounding can move one)")
        return f"{condition} (the Hessian is 0)"

    def mapped(self) -> tuple:
        return self.value, [self.gradient, self.hessian, self.point]

    def at_row(self, value, raw: list) -> "HessianResult":
        gradient, matrix, point = raw
        return HessianResult(value=value, names=self.names, sources=self.sources,
                             shapes=self.shapes, labels=self.labels, gradient=gradient,
                             hessian=matrix, dtype=self.dtype, point=point,
                             **classify(gradient, matrix, point, self.dtype))

    def shown(self, value, raw: list) -> tuple:
        """The gradient, the Hessian and the eigenvalues of each row, and its verdict."""
        n = len(raw[0])
        eigenvalues = np.full(raw[0].shape, np.nan)
        words = []
        for i in range(n):
            result = self.at_row(value[i], [r[i] for r in raw])
            if result.eigenvalues is not None:
                eigenvalues[i] = result.eigenvalues
            words.append(result.verdict)
        return [raw[0], raw[1], eigenvalues], words

    def layout(self) -> RowLayout:
        return RowLayout("hessian", True, np.ndim(self.value),
                         ["gradient", "hessian", "eigenvalues"], [(), (), ()],
                         self.sources.notes(), lambda value, raw: self.at_row(value, raw).report())


def hessian(model, wrt: list[str] | None = None) -> HessianResult:
    """The Hessian of a scalar target over the flattened sources, by nested reverse
    mode (an outer tape records the gradient the inner one computes, then takes its
    Jacobian), with the gradient, the value and the verdict at the point."""
    from ..engine.core.tensor import Batched
    fields, target = hessian_fields(model, wrt)
    if isinstance(target, Batched):
        return HessianResult(**fields)
    return HessianResult(**fields, **classify(fields["gradient"], fields["hessian"],
                                              fields["point"], target.dtype))


def hessian_fields(model, wrt: list[str] | None = None) -> tuple[dict, object]:
    """The engine's part of :func:`hessian`: the fields of its result but the verdict
    (value, gradient, Hessian, point, labels), and the target."""
    from .modes import result_array
    chosen = choose_sources(model, wrt, "hessian")
    names = chosen.names
    sources = [model.source(n) for n in names]
    reshape, concatenate = gc.FUNCTIONS["reshape"], gc.FUNCTIONS["concatenate"]
    with gc.GradientTape(watch_accessed_variables=False) as outer:
        for source in sources:
            outer.watch(source)
        with gc.GradientTape(watch_accessed_variables=False) as inner:
            for source in sources:
                inner.watch(source)
            target = model.function(*model.arg_values)
        _numeric_target(target, "Hessian")
        if target.shape != ():
            raise ModeError(f"hessian needs a scalar target; the target has shape "
                            f"{target.shape} (differentiate sum(...) for the Hessian of its "
                            "sum, or use gradcli jacobian)")
        grads = inner.gradient(target, sources, unconnected_gradients="zero")
        # one flat gradient (a single vector source's gradient is one already: nothing
        # more to record, so nothing more for the Jacobian's pass to go through)
        flat = _joined([_vector(g) for g in grads])
    n = int(flat.shape[0])
    if n == 0:
        raise ModeError(f"hessian: the sources ({', '.join(names)}) have no elements")
    _check_derivative_size("Hessian", n, n)
    columns = outer.jacobian(flat, sources, unconnected_gradients="zero")
    # Engine ops, not numpy: inside vectorized_map (--at, where the caller classifies
    # each row) these are batched values. (+ 0.0: a -0.0 from a rule's sign prints 0.0;
    # on result_array's numpy array where there is one, not an engine operation)
    matrix = (columns[0] if len(columns) == 1 and columns[0].ndim == 2 else concatenate(
        [reshape(c, (n, -1)) for c in columns], axis=1))
    point = _joined([_vector(s, np.float64) for s in sources])
    shapes = [tuple(s.shape) for s in sources]
    fields = dict(value=result_array(target), names=names, sources=chosen, shapes=shapes,
                  labels=labels(names, shapes), gradient=result_array(flat) + 0.0,
                  hessian=result_array(matrix) + 0.0, dtype=str(target.dtype),
                  point=result_array(point))
    return fields, target


def _vector(t, dtype=None):
    """``t`` flattened (and cast to ``dtype``), with no operation where it is one already."""
    if dtype is not None and t.dtype != dtype:
        t = t.astype(dtype)
    return t if t.ndim == 1 else gc.FUNCTIONS["reshape"](t, (-1,))


def _joined(vectors: list):
    """The vectors end to end (the one vector itself where there is one)."""
    return vectors[0] if len(vectors) == 1 else gc.FUNCTIONS["concatenate"](vectors)


def classify(gradient: np.ndarray, matrix: np.ndarray, point=None, dtype="float64") -> dict:
    """The verdict of the second-derivative test at ``point`` (the flattened sources).

    With ``n`` the Hessian's size, ``eps`` the machine epsilon of ``dtype`` (2.2e-16 in
    float64, 1.2e-7 in float32) and ``norm = max |eigenvalue|`` (``||H||_2``):

    - ``eigenvalues``: of the symmetric part ``(H + H^T) / 2``, ascending;
    - ``zero_tolerance = n * (4 * eps * norm + max |H - H^T|)``: how far rounding can
      move an eigenvalue, so an eigenvalue is zero only when ``|lambda| <= zero_tolerance``.
      A symmetric eigensolver's eigenvalues are exact for a matrix within about
      ``n * eps * norm`` of the one given (backward stable), and each entry of the
      Hessian the tape gives carries a few roundings of about ``eps * norm``, which move
      an eigenvalue by at most ``n`` times that (Weyl: an eigenvalue moves by at most
      the perturbation's 2-norm, at most ``n`` times its largest entry). ``H_ij`` and
      ``H_ji`` are computed by different passes, so their difference is a witness of the
      entries' own rounding where their terms cancel beyond ``eps * norm``; it is added
      per entry. Cancellation the matrix does not show (an entry whose terms cancel the
      same way in both passes, as a Hessian of 1x1 can) is not seen here: ``--check``
      compares the entries with sympy's;
    - ``condition_number = norm / min |eigenvalue|``, inf when the Hessian is singular as
      far as rounding can tell (an eigenvalue within the zero tolerance; about
      ``1 / (4 * n * eps)`` is the largest finite one);
    - critical point: ``max |gradient| <= gradient_tolerance = zero_tolerance * max(1,
      max |point|)``. Near a critical point ``z*`` the gradient is about ``H (z - z*)``;
      a typed-in point is ``z*`` rounded (``|z - z*| <= eps * |z*|`` per element) and the
      gradient carries its own rounding, so this is the largest gradient rounding alone
      gives. The function's value plays no part (adding a constant changes nothing),
      and a zero Hessian leaves only an exact zero gradient;
    - ``asymmetry``: ``max |H - H^T|``; beyond ``sqrt(eps) * max(1, max |H|)`` it is more
      than round-off, so a derivative rule is wrong (reported, never hidden by
      symmetrising). This cut is deliberately loose: it must not cry wolf where an
      entry's terms cancel, and it decides a warning, not the verdict;
    - the verdict (one token): "not-critical" when the gradient is above its tolerance
      (no min/max/saddle claim is made there); else "saddle" when there are eigenvalues
      of both signs beyond the zero tolerance (the test decides even beside a zero
      eigenvalue); else "degenerate" when one is zero within tolerance (the test says
      nothing: ``x^4``, ``-x^4`` and ``x^3`` at 0 all have H = 0); else "minimum"
      (positive definite) or "maximum" (negative definite); "undefined" when the
      gradient or the Hessian is not finite (nan or inf: no test applies).

    >>> classify(np.zeros(2), np.diag([2.0, -1e-9]))["verdict"]
    'saddle'
    """
    eps = float(np.finfo(np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.float64).eps)
    matrix = np.asarray(matrix, dtype=np.float64)
    gradient = np.asarray(gradient, dtype=np.float64).ravel()
    finite = bool(np.isfinite(matrix).all() and np.isfinite(gradient).all())
    scale_h = float(np.max(np.abs(matrix))) if matrix.size and finite else 0.0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        asymmetry = float(np.max(np.abs(matrix - matrix.T))) if matrix.size and finite else 0.0
    out = {"asymmetry": asymmetry,
           "asymmetry_tolerance": float(np.sqrt(eps)) * max(1.0, scale_h)}
    gradient_norm = float(np.max(np.abs(gradient))) if gradient.size else 0.0
    if not finite:
        return {**out, "verdict": "undefined", "eigenvalues": None, "critical": None,
                "gradient_norm": gradient_norm, "gradient_tolerance": None,
                "zero_tolerance": None, "condition_number": None}
    eigenvalues = np.linalg.eigvalsh((matrix + matrix.T) / 2) if matrix.size else np.empty(0)
    magnitudes = np.abs(eigenvalues)
    norm = float(magnitudes.max()) if eigenvalues.size else 0.0
    smallest = float(magnitudes.min()) if eigenvalues.size else 0.0
    size = float(np.max(np.abs(point))) if point is not None and np.size(point) else 0.0
    with np.errstate(over="ignore"):  # (near float64's edge a tolerance may be inf)
        zero_tolerance = float(len(eigenvalues) * (4 * eps * norm + asymmetry))
        gradient_tolerance = zero_tolerance * max(1.0, size)
        condition_number = norm / smallest if smallest > zero_tolerance else float("inf")
    critical = gradient_norm <= gradient_tolerance
    positive = bool(np.any(eigenvalues > zero_tolerance))
    negative = bool(np.any(eigenvalues < -zero_tolerance))
    zero = bool(np.any(magnitudes <= zero_tolerance))
    if not critical:
        verdict = "not-critical"
    elif positive and negative:
        verdict = "saddle"
    elif zero:
        verdict = "degenerate"
    else:
        verdict = "minimum" if positive else "maximum"
    return {**out, "verdict": verdict, "eigenvalues": eigenvalues, "critical": critical,
            "gradient_norm": gradient_norm, "gradient_tolerance": gradient_tolerance,
            "zero_tolerance": zero_tolerance, "condition_number": condition_number}


def definiteness(eigenvalues, zero_tolerance: float) -> str:
    """The Hessian's kind in words (what the curvature is, critical point or not)."""
    ev = np.asarray(eigenvalues)
    pos, neg = np.any(ev > zero_tolerance), np.any(ev < -zero_tolerance)
    zero = np.any(np.abs(ev) <= zero_tolerance)
    if pos and neg:
        return "indefinite"
    if zero:
        return ("positive semi-definite" if pos else "negative semi-definite" if neg
                else "zero")
    return "positive definite" if pos else "negative definite"


# ---------------------------------------------------------------------------------------
# N-th derivatives (grad --order N)
# ---------------------------------------------------------------------------------------
def nth_derivative(f, x, order: int):
    """The ``order``-th derivative of the scalar function ``f`` at ``x``, by nesting
    ``gradients_function`` ``order`` times (a derivative that no longer depends on x,
    whose gradient the engine gives as None, is 0 from there on)."""
    zero = gc.constant(np.zeros((), dtype=x.dtype))

    def derivative(g):
        def dg(y):
            [grad] = gc.gradients_function(g)(y)
            return zero if grad is None else grad
        return dg

    for _ in range(order):
        f = derivative(f)
    return f(x)


def check_order(order: int) -> None:
    if not 1 <= order <= MAX_ORDER:
        raise InputError(f"--order must be between 1 and {MAX_ORDER}, got {order} (each "
                         "order nests one more reverse pass, and the work grows about "
                         "threefold with each)")


def order_outcome(model, options, order: int):
    """``grad --order N``: the N-th pure partial derivative of the target with respect
    to each differentiated argument (the others held at their values), as a ``grad``
    ``Outcome`` (in ``--params`` order)."""
    from .modes import run_mode
    check_order(order)
    first = run_mode("grad", model, options)  # validates --params, names the arguments
    for g in first.gradients:
        shape = np.shape(g.source)
        if shape != ():
            raise ModeError(f"--order needs scalar arguments: '{g.name}' has shape "
                            f"{shape} (gradcli hessian or jacobian take arrays)")
    for g in first.gradients:
        i = model.arg_names.index(g.name)

        def along(x, i=i):
            args = list(model.arg_values)
            args[i] = x
            return model.function(*args)
        if order > 1:
            g.gradient = np.asarray(nth_derivative(along, model.arg_values[i], order).numpy())
    if order == 2 and len(first.gradients) > 1:
        first.notes.append("these are the pure second partials; the mixed ones are in the "
                           "Hessian: gradcli hessian with the same declarations")
    return first
