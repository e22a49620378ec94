"""``gradcli diff``: derivatives as formulas, each one verified against the tape.

The steps, each one a function below:

1. **The variables** (:func:`prepare`): the program's free names (read before anything
   assigns them, not a constant such as ``pi``, not declared) become arguments with no
   value, so nothing has to be declared; ``--arg`` gives them values (a point), and
   ``--var`` and the program's ``Variable(...)`` are variables too. A name held
   constant is declared as one (``--frozen c=3``, ``c = constant(3.0)``, a variable with
   ``trainable=False``): its value is put into the formulas. Only scalar variables are
   differentiated (a formula per partial derivative).
2. **The derivatives** (:func:`derivatives_wanted`): ``--wrt`` (default: every variable)
   one per variable; ``--order N`` every N-th partial, each distinct one once (the
   Hessian's upper triangle for N=2: ``d^2/dxdy`` is ``d^2/dydx``); ``--partial x,x,y``
   one mixed partial. A program whose value is an array gives the Jacobian: one formula
   per element and variable (first order only).
3. **sympy** (in the check's worker process, killed at its time limit; nothing the user
   typed reaches sympify: the tree is translated by :func:`gradcli.check.symbolic.to_sympy`):
   first the raw derivatives (``sympy.diff``; a ``DiracDelta`` from differentiating a
   step is dropped, as the tape's rules give 0 away from the step), then, within the
   simplification budget (``--simplify-timeout``, default 2 s), sympy's ``expand``,
   ``factor`` and ``simplify`` of each (``simplify`` of each term of a sum of more than
   35 operations: see :func:`simplified`). The worker that differentiated makes the
   plain forms (expand, factor) while this process imports what ``simplify`` needs;
   then a worker per core (up to 4) makes ``simplify``'s forms and helps with the plain
   ones left (each takes the next form not yet taken), while this process computes the
   tape at the check's points (step 5). The shortest form by
   ``count_ops`` that gradcli can print is kept (the raw form competes too); when the
   budget runs out first, the shortest of the forms that finished, and the output says
   so.
4. **Printing** (:mod:`gradcli.check.notation`): gradcli's own notation, so a formula
   pastes back as a program; one it cannot spell is printed in sympy's notation with a
   note saying so.
5. **Verification** (:func:`settle`): each printed formula is parsed by gradcli's
   parser, evaluated by the engine at the same random points as the tape's derivative
   (nested ``GradientTape``\\ s), and compared: ``|formula - tape| / max(|tape|, 1)``
   must stay within ``1e-8`` (relative where the derivative is 1 or more, absolute
   below it); a formula that is not finite where the tape is disagrees. The shortest
   printable form that agrees is kept (sympy's ``x^(2/3)`` is real for ``x < 0``,
   gradcli's is nan: such a form is passed over). The points are drawn with a fixed
   seed, each variable uniformly in the intersection of the table's ``sample`` ranges
   of the functions the program calls (the ranges the table's own tests keep each
   function in its domain with; (-2, 2) when it calls none or they do not meet), every
   other draw in (-2, 2) instead (a range may leave out part of a domain: cbrt's is
   (0.5, 2)); a point is kept where the program and its tape derivatives are finite
   (8 points, at most 400 draws). The ``--arg`` point, when it gives every variable a
   value, is checked too, and each formula's value there is reported.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, ModeError, did_you_mean
from ..io.report import Numbers, Page, Report
from .distributed import cores

#: How many random points each formula is checked at.
POINTS = 8
#: Draws allowed to find them (points where the program is not finite are skipped).
DRAWS = 400
#: |formula - tape| / max(|tape|, 1) beyond this is a disagreement.
TOLERANCE = 1e-8
#: Time allowed for sympy's translation and differentiation (the simplification has its
#: own budget, --simplify-timeout).
DIFF_TIMEOUT = 10.0
SEED = 0
WIDE = (-2.0, 2.0)
MAX_ORDER = 6


@dataclass
class Derivative:
    """One formula: the partial derivative along ``wrt`` (a variable per order) of the
    target, or of its element ``element`` (a Jacobian's row)."""
    wrt: tuple
    element: tuple | None = None
    formula: str = ""
    latex: str = ""
    printable: bool = True     # False: ``formula`` is sympy's text, not gradcli's
    note: str | None = None
    form: str = "raw"           # which form was kept: raw, expand, factor, simplify
    simplified: bool = False    # the simplification finished within its budget
    operations: int = 0
    points: int = 0
    max_rel_err: float | None = None
    disagreement: str | None = None
    value: float | None = None
    expression: object = None   # the sympy expression (not printed)
    steps: object = None        # diff --steps: its run.steps.Derivation

    def fields(self) -> dict:
        """Its JSON object: the formula, how it was simplified and verified, and the
        element, value, note, disagreement and steps where it has them."""
        out = {"wrt": list(self.wrt), "formula": self.formula, "latex": self.latex,
               "simplified": self.simplified, "form": self.form, "notation":
               "gradcli" if self.printable else "sympy",
               "verified": None if not self.printable else {
                   "points": self.points, "max_rel_err": self.max_rel_err,
                   "agrees": self.disagreement is None}}
        if self.element is not None:
            out["element"] = list(self.element)
        if self.value is not None:
            out["value"] = self.value
        if self.note:
            out["note"] = self.note
        if self.disagreement:
            out["disagreement"] = self.disagreement
        if self.steps is not None:
            out.update(self.steps.fields())
        return out

    def line(self, latex: bool = False) -> list:
        """Its plain line: the formula (or its LaTeX), then ``= VALUE`` with a point."""
        text = self.latex if latex else self.formula
        return [text] if self.value is None else \
            [text, "=", Numbers(np.asarray(self.value), summarise=False)]

    def label(self, of: str = "") -> str:
        """``d/dx``, ``d^2/dxdy``, ``d^3/dx^2dy`` (of ``f[i]`` for a Jacobian's row, of
        ``of`` when given: ``dy/dx``)."""
        counts: dict = {}
        for name in self.wrt:
            counts[name] = counts.get(name, 0) + 1
        below = "".join(f"d{n}" + (f"^{k}" if k > 1 else "") for n, k in counts.items())
        top = "d" if len(self.wrt) == 1 else f"d^{len(self.wrt)}"
        if self.element is not None:
            of = "f[" + ",".join(map(str, self.element)) + "]"
        return f"{top}{of}/{below}"

    def human_lines(self, at: str, precision: int | None, latex: bool, raw: bool,
                    of: str = "") -> list:
        """Its two lines of the human page: the formula (and its value at ``at``), then
        how it was verified and which form was kept."""
        from ..io.text import number_text
        text = self.latex if latex else self.formula
        value = "" if self.value is None else f"    = {number_text(self.value, precision)} at {at}"
        if not self.printable:
            verified = self.note
        elif self.disagreement:
            verified = f"DISAGREES with the tape: {self.disagreement}"
        elif not self.points:
            verified = ("not verified: no point found where the program and its derivatives "
                        "are finite")
        else:
            verified = (f"agrees with the tape at {self.points} points, max rel err "
                        f"{number_text(self.max_rel_err, 2)}")
        if raw:
            form = "raw (not simplified)"
        elif not self.simplified:
            form = f"{self.form}: simplification ran out of time, the shortest form that finished"
        else:
            form = f"{self.form} form, {self.operations} operation{'' if self.operations == 1 else 's'}"
        return [f"{self.label(of)} = {text}{value}", f"    {verified}; {form}"]


@dataclass
class Formulas:
    """What ``gradcli diff`` computed."""
    program: str
    variables: list
    derivatives: list = field(default_factory=list)
    point: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    shape: tuple = ()
    notes: list = field(default_factory=list)
    rows: list = field(default_factory=list)   # the verification points (draw_points)

    @property
    def verified(self) -> bool:
        return all(d.disagreement is None for d in self.derivatives)

    def report(self, mode: str = "diff", dep: str | None = None,
               latex: bool = False) -> Report:
        """JSON: the ``mode`` (diff or idiff, with its ``dep``), the program, the
        variables and each derivative (:meth:`Derivative.fields`); plain: each
        derivation's steps where it has them (``diff --steps``), then a line per
        formula (``latex``: its LaTeX), ``= VALUE`` after it with a point."""
        head = {"mode": mode} if dep is None else {"mode": mode, "dep": dep}
        fields = {**head, "program": self.program, "variables": self.variables,
                  "derivatives": [d.fields() for d in self.derivatives]}
        lines = [line for d in self.derivatives if d.steps is not None
                 for line in d.steps.lines()]
        lines += [("formula", d.line(latex)) for d in self.derivatives]
        return Report(mode, fields, lines)

    def page(self, precision: int | None, latex: bool = False, raw: bool = False,
             of: str = "") -> Page:
        """The human page: each derivation's steps where it has them (``diff --steps``),
        then each formula (``latex``: its LaTeX; labelled d``of``/dx) with its value at
        the point and its verification line."""
        from ..io.text import number_text
        at = ", ".join(f"{n}={number_text(v, precision)}" for n, v in self.point.items())
        lines = [line for d in self.derivatives if d.steps is not None
                 for line in d.steps.human_lines()]
        lines += [line for d in self.derivatives
                  for line in d.human_lines(at, precision, latex, raw, of)]
        return Page().verbatim("".join(line + "\n" for line in lines))


# ---------------------------------------------------------------------------------------
# 1. The variables
# ---------------------------------------------------------------------------------------
class Form:
    """One form of a derivative: its name (raw, expand, factor, simplify), sympy's
    expression, its operation count (sympy's ``count_ops``; the worker that made the form
    counts it) and, printed when first asked for and kept, its text in gradcli's
    notation (None: gradcli has no name for something in it) and its LaTeX."""

    def __init__(self, name: str, expression, operations: int | None = None):
        from ..check import notation
        self.name, self.expression = name, expression
        self.operations = (notation.operation_count(expression) if operations is None
                           else operations)
        self._text = self._latex = None

    def text(self) -> str | None:
        from ..check import notation
        if self._text is None:
            try:
                self._text = notation.to_gradcli(self.expression)
            except notation.Unprintable:
                self._text = False
        return self._text or None

    def latex(self) -> str:
        from ..check import notation
        if self._latex is None:
            self._latex = notation.to_latex(self.expression)
        return self._latex


def free_names(program, declared) -> list[str]:
    """Names the program reads before assigning them, in order of first reading, that
    are neither declared, nor constants, nor functions."""
    from ..lang import CONSTANT_NAMES, iter_postorder
    from ..lang.parser import BOOL_NAMES
    from ..lang.tree import Assign, Name
    known = set(declared) | set(CONSTANT_NAMES) | set(BOOL_NAMES) | {"None"}
    found: list[str] = []
    for statement in program.statements:
        value = getattr(statement, "value", None)
        if value is not None:
            for node in iter_postorder(value):
                if isinstance(node, Name) and node.id not in known and node.id not in found:
                    found.append(node.id)
        if isinstance(statement, Assign):
            known.add(statement.name)
    return found


def _refuse_stop_gradient(program) -> None:
    from ..lang import iter_postorder
    from ..lang.tree import Call
    for statement in program.statements:
        value = getattr(statement, "value", None)
        for node in iter_postorder(value) if value is not None else ():
            if isinstance(node, Call) and node.func == "stop_gradient":
                raise InputError("diff: stop_gradient(...) has no derivative formula (its "
                                 "value is cut from the tape at a point; use gradcli grad)")


def prepare(text: str, var=(), frozen=(), arg=(), target=None, dtype="float64"):
    """The program built with its free names as arguments: (program, model)."""
    from ..lang import Declarations, build, parse_program
    from ..lang.source import read_program
    program = parse_program(read_program(text))
    _refuse_stop_gradient(program)
    decls = Declarations.from_options(var=var or (), frozen=frozen or (), arg=arg or ())
    declared = [d.name for d in decls]
    free = free_names(program, declared)
    decls = Declarations.from_options(var=var or (), frozen=frozen or (),
                                      arg=list(arg or ()) + free)
    return program, build(program, decls, dtype=dtype, target=target)


def variables_of(model) -> tuple[list[str], list[str]]:
    """(the differentiable variables, the names held constant)."""
    variables = list(model.arg_names) + [n for n, t in model.trainable.items() if t]
    constants = [n for n, t in model.trainable.items() if not t]
    constants += [n for n, kind in model.kinds.items() if kind == "constant"]
    return variables, constants


def choose(variables: list[str], wrt: list[str] | None) -> list[str]:
    if wrt is None:
        if not variables:
            raise InputError("diff: the program has no variables (every name is declared "
                             "constant or assigned)")
        return variables
    for name in wrt:
        if name not in variables:
            raise InputError(f"--wrt {name}: not a variable of the program"
                             f"{did_you_mean(name, variables)}; its variables: "
                             f"{', '.join(variables) or 'none'}")
    return list(dict.fromkeys(wrt))


def derivatives_wanted(wrt: list[str], order: int | None, partial: list[str] | None,
                       variables: list[str]) -> list[tuple]:
    """The partials to compute, each a tuple of variable names (one per order)."""
    if partial is not None:
        if order is not None:
            raise InputError("--partial and --order cannot be used together (--partial "
                             "names the order by its length)")
        if len(partial) > MAX_ORDER:
            raise InputError(f"--partial: at most {MAX_ORDER} variables")
        choose(variables, partial)
        return [tuple(partial)]
    order = 1 if order is None else order
    if not 1 <= order <= MAX_ORDER:
        raise InputError(f"--order must be between 1 and {MAX_ORDER}, got {order}")
    return list(itertools.combinations_with_replacement(wrt, order))


# ---------------------------------------------------------------------------------------
# The points: random ones in the table's sample ranges, and the tape there
# ---------------------------------------------------------------------------------------
def sample_range(program) -> tuple[float, float]:
    """The intersection of the ``sample`` ranges of the table functions called."""
    from ..engine.core.table import lookup
    from ..lang import iter_postorder
    from ..lang.tree import Call
    low, high = -math.inf, math.inf
    for statement in program.statements:
        value = getattr(statement, "value", None)
        for node in iter_postorder(value) if value is not None else ():
            op = lookup(node.func) if isinstance(node, Call) else None
            if op is not None and op.elementwise:
                low, high = max(low, op.sample[0]), min(high, op.sample[1])
    if not math.isfinite(low) or not math.isfinite(high) or low >= high:
        return (-2.0, 2.0)
    return (low, high)


def point_of(model, variables: list[str]) -> dict:
    """The values the declarations give the variables (a variable without one: absent)."""
    point = {}
    for name in variables:
        try:
            value = np.asarray(model.source(name).numpy(), dtype=np.float64)
        except Exception:  # noqa: BLE001 - declared without a value (a free name)
            continue
        if value.shape != ():
            raise ModeError(f"diff: '{name}' has shape {value.shape}; diff differentiates "
                            "scalar variables (gradcli jacobian takes arrays)")
        point[name] = float(value)
    return point


def at_point(model, values: dict):
    """Bind the outside declarations to ``values`` (the program's own Variables keep
    theirs) and return the model."""
    outside = {d.name for d in model.declarations}
    return model.bind({k: np.float64(v) for k, v in values.items() if k in outside})


def tape_partial(model, path: tuple, element: tuple | None):
    """The partial derivative along ``path`` of the target (or its ``element``) at the
    bound point, by nested tapes: each tape records the gradient the one inside it
    computes."""
    from .. import engine as gc

    def level(k):
        if k == 0:
            value = model.function(*model.arg_values)
            return value[element] if element is not None else value
        source = model.source(path[k - 1])
        with gc.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(source)
            inner = level(k - 1)
        return tape.gradient(inner, source, unconnected_gradients="zero")
    return float(np.asarray(level(len(path)).numpy()))


# ---------------------------------------------------------------------------------------
# 3. sympy, in the worker process
# ---------------------------------------------------------------------------------------
def _differentiate(sp, job: dict, emit) -> None:
    """Worker: translate, put the constants' values in, differentiate every wanted
    partial; emit each raw derivative (key: its index) or one "error"."""
    from ..check.symbolic import to_sympy
    emitted = set()
    try:
        translated = to_sympy(job["program"], job["point"], job["target"], wrt=job["names"],
                              lookup=job["lookup"])
        if translated.skipped is not None:
            raise ValueError(translated.skipped)
        values = {symbol: translated.values[symbol] for name in job["constants"]
                  if name in translated.sources for symbol in translated.sources[name].flat}
        symbols = {name: translated.sources[name][()] for name in job["names"]
                   if name in translated.sources}
        target = translated.target
        for key, (element, path) in enumerate(job["wanted"]):
            expr = target[element] if element is not None else target[()]
            if isinstance(expr, (sp.logic.boolalg.Boolean,)) and not isinstance(expr, sp.Expr):
                raise ValueError("the program's value is a comparison (true/false), which "
                                 "has no derivative")
            expr = expr.xreplace(values)
            for name in path:
                expr = sp.diff(expr, symbols[name]) if name in symbols else sp.Integer(0)
            emit(str(key), (without_step_derivatives(sp, expr),))  # (a tuple: 0 is falsy)
            emitted.add(key)
    except Exception as err:  # noqa: BLE001 - one message, never a traceback
        message = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
        for key in range(len(job["wanted"])):
            if key not in emitted:
                emit(str(key), message)


def without_step_derivatives(sp, expr):
    """``expr`` with the derivatives of steps put to 0 (``DiracDelta``, an unevaluated
    derivative of ``floor``, ``ceiling``, ``sign`` or ``Heaviside``): the tape's rules
    give 0 for them away from the steps, which is where a formula is used."""
    steps = (sp.floor, sp.ceiling, sp.sign, sp.Heaviside)
    expr = expr.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.Integer(0))
    expr = expr.replace(lambda e: isinstance(e, sp.Derivative) and e.expr.func in steps,
                        lambda e: sp.Integer(0))
    return expr.replace(lambda e: isinstance(e, sp.Subs), lambda e: e.doit())


FORMS = ("expand", "factor", "simplify")
#: sympy's simplify of a whole expression takes seconds beyond about this many
#: operations (4 s for a derivative of a 10-term program, 40 operations): above it, each
#: term of a sum is simplified on its own instead (0.5 s there).
WHOLE_SIMPLIFY_OPS = 35
#: At most this many simplifying workers, one per core (sympy is single-threaded).
MAX_SIMPLIFIERS = 4


def simplified(sp, expr):
    """sympy's simplify, of the whole expression or, when it is a large sum, of each
    term (what may cancel between terms is then left, for factor and expand to find)."""
    if sp.count_ops(expr) <= WHOLE_SIMPLIFY_OPS or not isinstance(expr, sp.Add):
        return sp.simplify(expr)
    return sp.Add(*[sp.simplify(term) for term in expr.args])


def simplify_items(count: int, forms=FORMS) -> list[str]:
    """The ``forms`` to make of each of ``count`` derivatives, cheap forms of every
    derivative first: ``"index:form"``."""
    return [f"{i}:{form}" for form in forms for i in range(count)]


#: The forms sympy's simplify is not among: they need no more imports, so the worker that
#: differentiated makes them while this process imports what simplify needs.
PLAIN_FORMS = ("expand", "factor")


def _simplify(sp, job: dict, emit) -> None:
    """Worker: from each queue of ``job["queues"]`` in turn (``(forms, counter)``, the
    counter shared by the workers), the next form not yet taken, until every queue is
    empty; each emitted as it is made."""
    makers = {"expand": sp.expand, "factor": sp.factor,
              "simplify": lambda e: simplified(sp, e)}
    for forms, counter in job["queues"]:
        items = simplify_items(len(job["raw"]), forms)
        while True:
            with counter.get_lock():
                taken = counter.value
                counter.value = taken + 1
            if taken >= len(items):
                break
            index, form = items[taken].split(":")
            try:
                made = makers[form](job["raw"][int(index)])
                emit(items[taken], (made, int(sp.count_ops(made))))
            except Exception:  # noqa: BLE001 - a form sympy cannot make is not a candidate
                emit(items[taken], None)


def _derive_then_simplify(sp, job: dict, emit) -> None:
    """Worker: the job's own computation (``job["derive"]``: the raw derivatives, keys "0"
    to ``job["count"] - 1``), then the forms of ``job["queues"]`` (the plain forms),
    while the parent imports what sympy's simplify needs and starts the workers that
    make the rest."""
    raw: dict = {}

    def keep(key, value):
        if _is_expression(value):
            raw[int(key)] = value[0]
        emit(key, value)
    job["derive"](sp, job, keep)
    if job["queues"] and len(raw) == job["count"]:
        _simplify(sp, {"raw": [raw[i] for i in range(job["count"])],
                       "queues": job["queues"]}, emit)


def sympy_derivatives(program, model, point: dict, names: list[str], constants: list[str],
                      wanted: list, budget: float, raw: bool, meanwhile=None) -> tuple:
    """Per wanted partial: its :class:`Form` list, the raw one first, then the forms
    the budget allowed, and what ``meanwhile()`` returned (see
    :func:`raw_and_simplified`). Raises InputError when sympy cannot differentiate the
    program."""
    from ..engine.core.table import lookup
    job = {"compute": _differentiate, "program": program, "point": point,
           "target": model.target_name, "names": names, "constants": constants,
           "wanted": wanted, "lookup": lookup}
    return raw_and_simplified(job, len(wanted), budget, raw, "diff", meanwhile)


def raw_and_simplified(job: dict, count: int, budget: float, raw: bool,
                       command: str, meanwhile=None) -> tuple:
    """Run ``job`` (a worker computation emitting ``(expression,)`` for keys "0" to
    ``count - 1``, or the reason it cannot), then simplify what it gave within
    ``budget`` seconds: per key, a :class:`Form` list, the raw one first; and the
    value of ``meanwhile()`` (None without it), which runs here while the workers
    simplify. The forms are shared out: the worker that differentiated makes the plain
    forms (expand, factor) while this process imports what simplify needs, then a worker
    per core makes simplify's forms and helps with the plain ones left (each takes the
    next form not yet taken); each has the budget from its start (the first: from the
    others' start)."""
    import sympy  # noqa: F401 - before the worker is forked, as the check does
    # (sympy's first sum imports this: here once, not again in each worker, 0.3 s each)
    import sympy.tensor.tensor  # noqa: F401

    from ..check.symbolic import Worker, start_method
    keys, items = [str(i) for i in range(count)], simplify_items(count)
    simplifying = not raw and budget > 0
    plain = (PLAIN_FORMS, start_method().Value("i", 0))
    rest = (tuple(f for f in FORMS if f not in PLAIN_FORMS), start_method().Value("i", 0))
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(Worker({
            **job, "compute": _derive_then_simplify, "derive": job["compute"],
            "count": count, "queues": [plain] if simplifying else []}))
        if simplifying:
            # (sympy's simplify imports it, 0.3 s: here, while the worker differentiates
            # and expands, once for all the simplifying workers forked below)
            import sympy.physics.units  # noqa: F401
        results = first.results(keys, DIFF_TIMEOUT)
        for key in keys:
            if not _is_expression(results[key]):
                reason = getattr(results[key], "skipped", None) or results[key]
                raise InputError(f"{command}: sympy cannot differentiate this program: "
                                 f"{reason}")
        forms = [[Form("raw", results[key][0])] for key in keys]
        if not simplifying:
            return forms, meanwhile() if meanwhile else None
        shared = {"compute": _simplify, "raw": [f[0].expression for f in forms],
                  "queues": [rest, plain]}
        started = time.monotonic()  # (the first worker's budget: from here)
        workers = [stack.enter_context(Worker(shared))
                   for _ in range(max(1, min(MAX_SIMPLIFIERS, cores(), len(items))))]
        # (the raw forms are not printed meanwhile: on two cores that slows the workers
        # more than it saves here, 1.82 s against 1.73 s for a 10-term program)
        done = meanwhile() if meanwhile else None
        for worker in [first] + workers:
            got = worker.results(items, budget, since=started if worker is first else None)
            for key, value in got.items():
                if _is_expression(value):
                    index, name = key.split(":")
                    forms[int(index)].append(Form(name, *value))
    return forms, done


def _is_expression(value) -> bool:
    """An emitted (expression,), not a reason it is missing."""
    return isinstance(value, tuple) and hasattr(value[0], "free_symbols")


# ---------------------------------------------------------------------------------------
# 4. Printing, 5. verification
# ---------------------------------------------------------------------------------------
FORMS_ORDER = {"simplify": 0, "factor": 1, "expand": 2, "raw": 3}  # ties: simplify first


def candidates(forms: list):
    """The printable forms, shortest first (ties: simplify first), each printed when it is
    asked for: a long form is not printed when a shorter one is kept (factor's common
    denominator of a 10-term derivative takes 0.07 s to print)."""
    for form in sorted(forms, key=lambda f: (f.operations, FORMS_ORDER[f.name])):
        if form.text() is not None:
            yield form


def formula_model(text: str, names: list[str]):
    """A formula parsed by gradcli's parser and built with its names as arguments."""
    from ..lang import Declarations, build, parse_program
    program = parse_program(text)
    used = free_names(program, ())
    unknown = [n for n in used if n not in names]
    if unknown:
        raise ValueError(f"the formula reads {unknown[0]!r}, not a variable")
    return build(program, Declarations.from_options(arg=used)), used


def formula_value(built, values: dict) -> float:
    model, used = built
    at_point(model, {n: values[n] for n in used})
    value = np.asarray(model.function(*model.arg_values).numpy(), dtype=np.float64)
    return float(value) if value.shape == () else math.nan


def _relative_error(formula: float, tape: float) -> float:
    if formula == tape:
        return 0.0
    if not math.isfinite(formula):
        return math.inf
    return abs(formula - tape) / max(abs(tape), 1.0)


def draw_points(model, wanted: list, variables: list[str], held: dict, low_high: tuple,
                given: dict) -> list[dict]:
    """The points of the check: ``{"at": values, "tape": [partial per wanted]}`` where
    the program and every tape derivative are finite; the given point first when it
    fixes every variable."""
    rng = np.random.default_rng(SEED)
    outside = [n for n in variables if n not in held]
    full = bool(outside) and all(n in given for n in outside)
    # Every other draw in (-2, 2) as well: a range of the table keeps its function in
    # its domain, but may leave out part of it (cbrt's (0.5, 2)), where a formula can
    # fail (sympy's x^(2/3) is real for x < 0, gradcli's is nan).
    ranges = itertools.cycle([low_high, WIDE])
    draws = ([{n: given[n] for n in outside}] if full else []) + [
        {n: float(rng.uniform(*bounds)) for n in outside}
        for bounds in itertools.islice(ranges, DRAWS)]
    rows = []
    for values in draws:
        if len(rows) >= POINTS + full:
            break
        try:
            at_point(model, values)
            value = np.asarray(model.function(*model.arg_values).numpy(), dtype=np.float64)
            tape = [tape_partial(model, path, element) for element, path in wanted]
        except Exception:  # noqa: BLE001 - an error at this point: draw another
            continue
        if np.all(np.isfinite(value)) and all(math.isfinite(t) for t in tape):
            rows.append({"at": {**held, **values}, "tape": tape})
    return rows


def _check(text: str, variables: list[str], rows: list, index: int) -> tuple:
    """(max error, the worst row's (formula, tape, at)) of one printed formula."""
    built = formula_model(text, variables)
    worst, worst_row = 0.0, None
    for row in rows:
        try:
            formula = formula_value(built, row["at"])
        except Exception:  # noqa: BLE001 - the formula fails where the tape does not
            formula = math.nan
        error = _relative_error(formula, row["tape"][index])
        if worst_row is None or error > worst:
            worst, worst_row = error, (formula, row["tape"][index], row["at"])
    return worst, worst_row


def unprintable(expr) -> str:
    """What in ``expr`` gradcli's notation has no name for."""
    from ..check import notation
    try:
        notation.to_gradcli(expr)
    except notation.Unprintable as err:
        return str(err)
    return "nothing"


def settle(derivative: Derivative, forms: list, rows: list, variables: list[str],
           index: int, raw: bool) -> None:
    """Keep the shortest printable form that agrees with the tape at every point (a
    shorter one that does not, as ``abs(x^(2/3))`` where gradcli's ``^`` of a negative
    base is nan, is passed over); if none agrees, the shortest, with its disagreement."""
    from ..check import notation
    derivative.simplified = raw or len(forms) == 1 + len(FORMS)
    derivative.points = len(rows)
    first = None
    for form in candidates(forms):
        try:
            error, worst = _check(form.text(), variables, rows, index)
        except Exception as err:  # noqa: BLE001 - the printer's mistake, said as such
            error, worst = math.inf, f"gradcli cannot read the printed formula back: {err}"
        if first is None or error <= TOLERANCE:
            first = (form, error, worst)
        if error <= TOLERANCE:
            break
    if first is None:  # (no form is printable: the raw one is said in sympy's notation)
        form = forms[0]
        derivative.formula = notation.sympy_text(form.expression)
        derivative.printable = False
        derivative.note = (f"printed in sympy's notation: gradcli has no name for "
                           f"{unprintable(form.expression)}; not checked against the tape")
    else:
        form, error, worst = first
        derivative.formula = form.text()
        derivative.max_rel_err = error if rows else None
        if error > TOLERANCE:
            if isinstance(worst, str):
                derivative.disagreement = worst
            else:
                formula, tape, at = worst
                where = ", ".join(f"{n}={v!r}" for n, v in at.items())
                derivative.disagreement = (f"the formula gives {formula!r}, the tape "
                                           f"{tape!r} at {where}")
    derivative.form, derivative.operations = form.name, form.operations
    derivative.expression, derivative.latex = form.expression, form.latex()


# ---------------------------------------------------------------------------------------
# The command's computation
# ---------------------------------------------------------------------------------------
def diff(text: str, *, var=(), frozen=(), arg=(), target=None, wrt=None, order=None,
         partial=None, budget: float = 2.0, raw: bool = False) -> Formulas:
    """``gradcli diff``: the formulas, verified (see the module's docstring)."""
    program, model = prepare(text, var, frozen, arg, target)
    variables, constants = variables_of(model)
    chosen = choose(variables, wrt)
    wanted_paths = derivatives_wanted(chosen, order, partial, variables)
    given = point_of(model, variables)
    outside = {d.name for d in model.declarations}
    held = {n: v for n, v in given.items() if n not in outside}  # the program's Variables
    low_high = sample_range(program)
    rng = np.random.default_rng(SEED)
    start = {n: given.get(n, float(rng.uniform(*low_high))) for n in variables}
    at_point(model, start)
    value = np.asarray(model.function(*model.arg_values).numpy())
    if value.dtype == bool:
        raise ModeError("diff: the program's value is a comparison (true/false), which has "
                        "no derivative")
    elements = [None] if value.ndim == 0 else list(np.ndindex(value.shape))
    if value.ndim and len(wanted_paths[0]) > 1:
        raise ModeError(f"diff: the program's value has shape {value.shape}: its Jacobian "
                        "(first order) has formulas, higher orders need a scalar program")
    if len(elements) * len(wanted_paths) > 200:
        raise InputError(f"diff: {len(elements) * len(wanted_paths)} formulas asked for "
                         "(at most 200)")
    wanted = [(e, p) for e in elements for p in wanted_paths]
    point = {**start, **{n: model.source(n).numpy() for n in constants}}

    def points():  # (the tape at the check's points, while sympy simplifies)
        with np.errstate(all="ignore"):  # (points outside the domain are dropped)
            return draw_points(model, wanted, variables, held, low_high, given)
    forms, rows = sympy_derivatives(program, model, point, variables, constants, wanted,
                                    budget, raw, points)
    with np.errstate(all="ignore"):
        return _verified(text, variables, held, given, low_high, value, wanted, forms,
                         raw, rows)


def _verified(text, variables, held, given, low_high, value, wanted, forms, raw, rows):
    """The formulas, each settled on its shortest form that agrees with the tape at the
    ``rows`` (:func:`draw_points`)."""
    result = Formulas(program=text, variables=variables, shape=tuple(value.shape),
                      point=given, ranges={n: low_high for n in variables if n not in held},
                      rows=rows)
    for index, ((element, path), candidates_) in enumerate(zip(wanted, forms)):
        derivative = Derivative(wrt=path, element=element)
        settle(derivative, candidates_, rows, variables, index, raw)
        result.derivatives.append(derivative)
    if all(n in given for n in variables):
        for derivative in result.derivatives:
            if derivative.printable:
                derivative.value = formula_value(
                    formula_model(derivative.formula, variables), given)
    return result
