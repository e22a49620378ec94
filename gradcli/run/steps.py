"""``gradcli diff --steps``: the derivation rule by rule, from the program's own tree.

The walk is over gradcli's parsed tree (:mod:`gradcli.lang.tree`), not sympy's: each node
that depends on the variable gets one step, children before their parent, naming the
rule it takes (sum, difference, constant multiple, product, quotient, power, exponential,
general power for ``x^x``, negation, piecewise ``where``, and the chain rule with each
table function's own derivative) and giving the sub-expression and its derivative, both
in gradcli's notation (they parse back). A node that does not depend on the variable is
a constant (derivative 0, no step); the variable itself has derivative 1.

**A table function's rule** is the table's own: the entry's ``derivative`` text (what
``gradcli functions`` shows) is the rule's statement, and it is used as the formula
where it is one gradcli reads (``cos(x)``, ``1 + tan(x)^2``, ``1/y, -x/y^2``: one per
input, before any ``;``) and where it equals the derivative of the entry's sympy form at
three points of its sample range; otherwise (``2x``, ``sigmoid(x) (1 - sigmoid(x))``,
``x/hypot``) the derivative of the entry's sympy form, printed in gradcli's notation.
These are the only things sympy differentiates here: one table function of plain
symbols, never the user's text.

**Intermediate names** (``u = x^2`` then ``sin(u)``): the steps of a statement are in the
program's names as they stand there (``d/dx sin(u) = cos(u)*du/dx`` with ``du/dx``'s
formula put in), closed by a step for the name itself. A name assigned again is
replaced by its old definition in what was derived before, so every step means what it
says where it stands. Each step also has its standalone form (every intermediate name
replaced by its definition, constants by their values): the tests evaluate those.

**The final line** is the derivative of the program's value, standalone, and it is
checked, not assumed: evaluated at the points ``gradcli diff`` verified its formula at
(:func:`gradcli.run.formulas.diff`), it must equal the verified formula there within
the same tolerance; a difference is exit 1 with both numbers.

Arithmetic with 0 and 1 is done as the steps are built (``0*u``, ``1*u``, ``u + 0``,
``u^1``, numbers folded), nothing else: the steps show the rules, the verified formula
shows the simplified result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..errors import GradcliError, InputError
from ..lang import tree as T
from . import formulas

#: More steps than this is a refusal (``diff`` without ``--steps`` still answers).
MAX_STEPS = 300
#: Deeper trees are refused before the (recursive) walk.
MAX_DEPTH = 200
#: A step whose derivative prints longer than this is a refusal (a product of n factors
#: has a derivative of n^2 of them).
MAX_CHARACTERS = 20_000

LAWS = {
    "sum rule": "(u + v)' = u' + v'",
    "difference rule": "(u - v)' = u' - v'",
    "constant multiple rule": "(c*u)' = c*u', (u/c)' = u'/c",
    "product rule": "(u*v)' = u'*v + u*v'",
    "quotient rule": "(u/v)' = (u'*v - u*v')/v^2",
    "power rule": "(u^n)' = n*u^(n-1)*u'",
    "exponential rule": "(a^v)' = a^v*log(a)*v'",
    "general power rule": "(u^v)' = u^v*(v'*log(u) + v*u'/u)",
    "negation": "(-u)' = -u'",
    "piecewise rule": "where(c, u, v)' = where(c, u', v')",
    "remainder rule": "(u % v)' = u' - floor(u/v)*v'",
    "step": "0 away from its jumps",
    "variable": "dx/dx = 1",
    "constant": "a constant's derivative is 0",
}


@dataclass
class Step:
    """One rule applied: ``d/dx expression = derivative``."""
    rule: str
    law: str
    expression: str
    derivative: str
    standalone: tuple = ()      # (expression, derivative) with names inlined
    within: str | None = None   # the intermediate name whose statement this step is in


@dataclass
class Derivation:
    """The steps of one first derivative, and how its final line compares."""
    wrt: str
    steps: list = field(default_factory=list)
    result: str = ""                  # the final line, standalone
    formula: str = ""                 # the verified formula it is compared with
    points: int = 0
    max_rel_err: float | None = None
    disagreement: str | None = None

    def fields(self) -> dict:
        """Its JSON: each step (rule, law, expression, derivative, the expression it is
        within) and how the final line compares."""
        return {"steps": [{"rule": st.rule, "law": st.law, "expression": st.expression,
                           "derivative": st.derivative,
                           **({"within": st.within} if st.within else {})}
                          for st in self.steps],
                "steps_result": {"formula": self.result, "points": self.points,
                                 "max_rel_err": self.max_rel_err,
                                 "agrees": self.disagreement is None}}

    def human_lines(self) -> list:
        """Its human page: numbered steps with their rules, the final line and how it
        compares with the verified formula."""
        from ..io.text import number_text
        x = self.wrt
        out = [f"Steps of d/d{x}:"]
        for number, st in enumerate(self.steps, start=1):
            where = f" (in {st.within} = ...)" if st.within else ""
            out.append(f"  {number}. d/d{x} {st.expression} = {st.derivative}")
            out.append(f"       {st.rule}{where}: {st.law}")
        out.append(f"  so d/d{x} = {self.result}")
        if self.disagreement:
            out.append(f"  DISAGREES with the verified formula: {self.disagreement}")
        elif self.max_rel_err is not None:
            out.append(f"  equals the verified formula for d/d{x} (below) at its "
                       f"{self.points} points, max rel err {number_text(self.max_rel_err, 2)}")
        else:
            out.append(f"  not compared: the formula for d/d{x} (below) has no checked "
                       "gradcli form")
        return out

    def lines(self) -> list:
        """Its plain lines: ``d/dx EXPRESSION = DERIVATIVE`` per step, then ``= RESULT``."""
        x = self.wrt
        return [("step", f"d/d{x} {st.expression} = {st.derivative}") for st in self.steps] \
            + [("result", f"= {self.result}")]


# ---------------------------------------------------------------------------------------
# Trees: building with 0 and 1 folded, substituting, printing
# ---------------------------------------------------------------------------------------
def number(value: float):
    return T.Number(float(value))


def is_number(node, value=None) -> bool:
    ok = isinstance(node, T.Number)
    return ok and (value is None or node.value == value)


def add(a, b):
    if is_number(a, 0):
        return b
    if is_number(b, 0):
        return a
    if is_number(a) and is_number(b):
        return number(a.value + b.value)
    return T.Binary("+", a, b)


def sub(a, b):
    if is_number(b, 0):
        return a
    if is_number(a, 0):
        return neg(b)
    if is_number(a) and is_number(b):
        return number(a.value - b.value)
    return T.Binary("-", a, b)


def neg(a):
    if is_number(a):
        return number(-a.value)
    if isinstance(a, T.Unary) and a.op == "-":
        return a.operand
    return T.Unary("-", a)


def mul(a, b):
    if is_number(a, 0) or is_number(b, 0):
        return number(0)
    if is_number(a, 1):
        return b
    if is_number(b, 1):
        return a
    if is_number(a, -1):
        return neg(b)
    if is_number(b, -1):
        return neg(a)
    if is_number(a) and is_number(b):
        return number(a.value * b.value)
    return T.Binary("*", a, b)


def div(a, b):
    if is_number(a, 0):
        return number(0)
    if is_number(b, 1):
        return a
    return T.Binary("/", a, b)


def power(a, b):
    if is_number(b, 1):
        return a
    if is_number(b, 0):
        return number(1)
    return T.Binary("**", a, b)


def call(name: str, *args):
    return T.Call(name, tuple(args))


def substitute(node, mapping: dict):
    """``node`` with each ``Name`` in ``mapping`` replaced by its tree (at once)."""
    if isinstance(node, T.Name):
        return mapping.get(node.id, node)
    if not isinstance(node, T.Node) or not node.fields:
        return node
    return type(node)(*[_substitute_field(getattr(node, f), mapping) for f in node.fields],
                      pos=node.pos)


def _substitute_field(value, mapping):
    if isinstance(value, tuple):
        return tuple(_substitute_field(v, mapping) for v in value)
    if isinstance(value, T.Node):
        return substitute(value, mapping)
    return value


#: Python's (and gradcli's) binding strength, loosest first.
_PRECEDENCE = {"compare": 1, "+": 2, "-": 2, "*": 3, "/": 3, "@": 3, "%": 3, "//": 3,
               "unary": 4, "**": 5, "atom": 6}


def _strength(node) -> int:
    if isinstance(node, T.Binary):
        return _PRECEDENCE[node.op]
    if isinstance(node, T.Compare):
        return _PRECEDENCE["compare"]
    if isinstance(node, T.Unary) or (is_number(node) and (node.value < 0 or (
            node.value == 0 and math.copysign(1, node.value) < 0))):
        return _PRECEDENCE["unary"]
    return _PRECEDENCE["atom"]


def text(node) -> str:
    """``node`` in gradcli's notation, with the parentheses its shape needs (so it parses
    back to the same tree): a right operand of its own strength is parenthesised, as is
    anything but an atom beside ``^``."""
    if isinstance(node, T.Number):
        v = node.value
        if math.isfinite(v) and v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(node, T.Name):
        return node.id
    if isinstance(node, T.Str):
        return repr(node.value)
    if isinstance(node, T.Unary):
        return node.op + _wrapped(node.operand, _PRECEDENCE["unary"] + 1)
    if isinstance(node, (T.Binary, T.Compare)):
        op = "^" if node.op == "**" else node.op
        mine = _strength(node)
        left_needs = mine + 1 if node.op == "**" else mine
        right_needs = _PRECEDENCE["atom"] if node.op == "**" else mine + 1
        spaced = f" {op} " if mine <= _PRECEDENCE["+"] else op
        return _wrapped(node.left, left_needs) + spaced + _wrapped(node.right, right_needs)
    if isinstance(node, T.Call):
        args = [text(a) for a in node.args] + [f"{k}={text(v)}" for k, v in node.kwargs]
        return f"{node.func}({', '.join(args)})"
    if isinstance(node, T.ArrayLit):
        return "[" + ", ".join(text(e) for e in node.elements) + "]"
    if isinstance(node, T.TupleLit):
        inner = ", ".join(text(e) for e in node.elements)
        return f"({inner},)" if len(node.elements) == 1 else f"({inner})"
    if isinstance(node, T.Index):
        return _wrapped(node.value, _PRECEDENCE["atom"]) + "[" + ", ".join(
            _item(i) for i in node.items) + "]"
    raise InputError(f"--steps cannot print a {type(node).__name__}")


def _item(item) -> str:
    if isinstance(item, T.Slice):
        parts = [text(p) if p is not None else "" for p in (item.lower, item.upper, item.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if item.step is not None else "")
    return text(item)


def _wrapped(node, needs: int) -> str:
    inner = text(node)
    return inner if _strength(node) >= needs else f"({inner})"


def depth(root) -> int:
    """The tree's depth, without recursion (the walk itself recurses)."""
    from ..lang import children
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node)
                     if isinstance(child, T.Node))
    return deepest


# ---------------------------------------------------------------------------------------
# The table's rules
# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def table_rule(name: str) -> tuple:
    """(the partial derivative of the entry per input, as trees in the entry's input
    names; whether they are the table's own text). Raises InputError for an entry with
    no usable rule."""
    import sympy as sp

    from ..check import notation
    from ..engine.core.table import lookup
    from ..lang import parse_expression
    op = lookup(name)
    if op is None or not op.elementwise or op.sympy is None:
        raise InputError(f"--steps: {name}(...) is not an elementwise function of the table "
                         "with a formula; gradcli diff without --steps differentiates it")
    symbols = [sp.Symbol(n, real=True) for n in op.inputs]
    form = op.sympy(sp, *symbols)
    truths = [formulas.without_step_derivatives(sp, sp.diff(form, s)) for s in symbols]
    stated = _stated_rule(op, symbols, truths)
    if stated is not None:
        return stated, True
    try:
        return tuple(parse_expression(notation.to_gradcli(d)) for d in truths), False
    except Exception as err:  # noqa: BLE001 - the printer's refusal, said as one message
        raise InputError(f"--steps: no printable rule for {name}: {err}") from None


def _stated_rule(op, symbols, truths):
    """The entry's ``derivative`` text as trees, if it reads back and is right."""
    from ..lang import parse_expression
    texts = [part.strip() for part in op.derivative.split(";")[0].split(",")]
    if len(texts) != len(symbols):
        return None
    rng = np.random.default_rng(formulas.SEED)
    points = [{s.name: float(rng.uniform(*op.sample)) for s in symbols} for _ in range(3)]
    trees = []
    try:
        for part, truth in zip(texts, truths):
            built = formulas.formula_model(part, [s.name for s in symbols])
            for values in points:
                expected = float(truth.subs({s: values[s.name] for s in symbols}))
                got = formulas.formula_value(built, values)
                if not abs(got - expected) <= 1e-9 * max(1.0, abs(expected)):
                    return None
            trees.append(parse_expression(part))
    except Exception:  # noqa: BLE001 - prose, not a formula gradcli reads: not used
        return None
    return tuple(trees)


# ---------------------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------------------
class Deriver:
    """d/d``wrt`` of a program's statements, one step per rule applied."""

    def __init__(self, wrt: str, constants: dict):
        self.wrt = wrt
        self.derivatives: dict = {}      # intermediate name -> its derivative's tree
        self.definitions: dict = dict(constants)  # name -> standalone tree (inlining)
        self.steps: list = []
        self.within: str | None = None
        self.memo: dict = {}

    # -- what depends on the variable
    def depends(self, node) -> bool:
        from ..lang import iter_postorder
        return any(isinstance(n, T.Name) and (n.id == self.wrt or not is_number(
            self.derivatives.get(n.id, number(0)), 0)) for n in iter_postorder(node))

    def standalone(self, node):
        return substitute(node, self.definitions) if self.definitions else node

    # -- statements
    def assign(self, name: str, value) -> None:
        """``name = value``: its steps, then the name's own step."""
        self.within, self.memo = name, {}
        derivative = self.d(value)
        self.within = None
        if name in self.definitions or name in self.derivatives:
            # Assigned again: what was derived in the old name's terms keeps its meaning.
            old = {name: self.definitions.get(name, T.Name(name))}
            self.derivatives = {k: substitute(v, old) for k, v in self.derivatives.items()}
            derivative = substitute(derivative, old)
        self.definitions[name] = self.standalone(value)
        self.derivatives[name] = derivative
        if self.depends(T.Name(name)) and not isinstance(value, T.Name):
            self.step(T.Name(name), derivative, "intermediate name",
                      f"{name} = {text(value)}: its derivative, from the steps above")

    def value(self, node):
        """The derivative of the program's value ``node`` (its last expression)."""
        self.memo = {}
        return self.d(node)

    # -- one node
    def step(self, node, derivative, rule: str, law: str | None = None) -> None:
        if len(self.steps) >= MAX_STEPS:
            raise InputError(f"--steps: the derivation takes more than {MAX_STEPS} steps; "
                             "gradcli diff without --steps gives the formula")
        derivative_text = text(derivative)
        if len(derivative_text) > MAX_CHARACTERS:
            raise InputError(f"--steps: a step's derivative runs past {MAX_CHARACTERS:,} "
                             "characters; gradcli diff without --steps gives the formula")
        self.steps.append(Step(
            rule=rule, law=law if law is not None else LAWS[rule], expression=text(node),
            derivative=derivative_text, within=self.within,
            standalone=(text(self.standalone(node)), text(self.standalone(derivative)))))

    def d(self, node):
        if node in self.memo:
            return self.memo[node]
        if not self.depends(node):
            result = number(0)
        elif isinstance(node, T.Name):
            result = number(1) if node.id == self.wrt else self.derivatives[node.id]
        elif isinstance(node, T.Unary):
            result = self.d(node.operand)
            if node.op == "-":
                result = neg(result)
                self.step(node, result, "negation")
        elif isinstance(node, T.Binary):
            result = self.binary(node)
        elif isinstance(node, T.Call):
            result = self.call(node)
        elif isinstance(node, T.Compare):
            result = number(0)
            self.step(node, result, "step", "a comparison is a step: 0 away from its jump")
        else:
            raise InputError(f"--steps follows scalar programs (sums, products, quotients, "
                             f"powers, the table's elementwise functions); "
                             f"'{text(node)}' is not one. gradcli diff without --steps "
                             "gives the formula")
        self.memo[node] = result
        return result

    def binary(self, node):
        op, u, v = node.op, node.left, node.right
        if op == "@":
            raise InputError("--steps follows scalar programs: '@' (matmul) is not one")
        if op == "//":
            self.step(node, number(0), "step", "u // v is a step: 0 away from its jumps")
            return number(0)
        du, dv = self.d(u), self.d(v)
        u_varies, v_varies = self.depends(u), self.depends(v)
        if op in "+-":
            result = add(du, dv) if op == "+" else sub(du, dv)
            rule = "sum rule" if op == "+" else "difference rule"
        elif op == "*" and not (u_varies and v_varies):
            result, rule = mul(du, v) if u_varies else mul(u, dv), "constant multiple rule"
        elif op == "*":
            result, rule = add(mul(du, v), mul(u, dv)), "product rule"
        elif op == "/" and not v_varies:
            result, rule = div(du, v), "constant multiple rule"
        elif op == "/":
            result = div(sub(mul(du, v), mul(u, dv)), power(v, number(2)))
            rule = "quotient rule"
        elif op == "%":
            result, rule = sub(du, mul(call("floor", div(u, v)), dv)), "remainder rule"
        elif not v_varies:            # u^n
            exponent = number(v.value - 1) if is_number(v) else sub(v, number(1))
            result, rule = mul(mul(v, power(u, exponent)), du), "power rule"
        elif not u_varies:            # a^v
            log = number(1) if isinstance(u, T.Name) and u.id == "e" else call("log", u)
            result, rule = mul(mul(node, log), dv), "exponential rule"
        else:                         # u^v: logarithmic differentiation
            result = mul(node, add(mul(dv, call("log", u)), div(mul(v, du), u)))
            rule = "general power rule"
        self.step(node, result, rule)
        return result

    def call(self, node):
        from ..engine.core.table import lookup
        op = lookup(node.func)
        if node.kwargs:
            raise InputError(f"--steps: {node.func}(...) with keyword parameters is not "
                             "followed; gradcli diff without --steps gives the formula")
        if op is not None and op.name == "where":
            cond, a, b = node.args
            result = call("where", cond, self.d(a), self.d(b))
            self.step(node, result, "piecewise rule")
            return result
        partials, stated = table_rule(node.func)
        if len(partials) != len(node.args):
            raise InputError(f"--steps: {node.func} takes {len(partials)} arguments here")
        mapping = dict(zip(op.inputs, node.args))
        result = number(0)
        for partial, arg in zip(partials, node.args):
            if self.depends(arg):
                result = add(result, mul(substitute(partial, mapping), self.d(arg)))
        inputs = ", ".join(op.inputs)
        plain = all(isinstance(a, T.Name) and a.id == self.wrt for a in node.args
                    if self.depends(a))
        rule = "table rule" if plain else "chain rule"
        if stated:
            law = f"{op.name}'({inputs}) = {op.derivative} (the table)"
        else:
            law = (f"{op.name}'({inputs}) = {', '.join(text(p) for p in partials)} (the "
                   f"table: {op.derivative})")
        if not plain:
            law += ", times the inside's derivative"
        self.step(node, result, rule, law)
        return result


# ---------------------------------------------------------------------------------------
# The command's computation
# ---------------------------------------------------------------------------------------
def derive(program, model, wrt: str) -> tuple:
    """(the steps, the final derivative's standalone tree) of ``d/d wrt`` of the
    program's value."""
    constants = {}
    _, held = formulas.variables_of(model)
    for name in held:
        value = np.asarray(model.source(name).numpy(), dtype=np.float64)
        if value.shape == ():
            constants[name] = number(float(value))
    deriver = Deriver(wrt, constants)
    statements = list(program.statements)
    if model.target_name is not None:  # (what follows the target's last assignment: no)
        assigned = [i for i, st in enumerate(statements)
                    if isinstance(st, T.Assign) and st.name == model.target_name]
        statements = statements[:assigned[-1] + 1] if assigned else statements
    for statement in statements:
        if depth(statement) > MAX_DEPTH:
            raise InputError(f"--steps: the program nests deeper than {MAX_DEPTH} levels")
        if isinstance(statement, T.Assign) and not isinstance(statement.value, T.Declare):
            deriver.assign(statement.name, statement.value)
    # The value: the target's name (--target, or a last assignment), else the last
    # expression (a Variable or constant(...) needs no steps: its derivative is 0 or 1).
    last = program.statements[-1]
    if model.target_name is not None:
        final = T.Name(model.target_name)
    elif isinstance(last, T.ExprStatement):
        final = last.value
    else:
        raise InputError("--steps: the program has no value to differentiate")
    derivative = deriver.value(final)
    if not deriver.steps:  # the value is the variable itself, or does not depend on it
        deriver.step(final, derivative, "variable" if is_number(derivative, 1) else "constant")
    return deriver.steps, deriver.standalone(derivative)


def diff_with_steps(text_: str, *, var=(), frozen=(), arg=(), target=None, wrt=None,
                    budget: float = 2.0, raw: bool = False):
    """``gradcli diff --steps``: the verified formulas, each with its derivation, whose
    final line is compared with the formula at the verification points."""
    program, model = formulas.prepare(text_, var, frozen, arg, target)
    variables, _ = formulas.variables_of(model)
    given = formulas.point_of(model, variables)
    formulas.at_point(model, {n: given.get(n, 1.0) for n in variables})  # (constants' values)
    # The derivations first: what they do not follow is refused before sympy's work.
    derived = {name: derive(program, model, name) for name in formulas.choose(variables, wrt)}
    result = formulas.diff(text_, var=var, frozen=frozen, arg=arg, target=target, wrt=wrt,
                           budget=budget, raw=raw)
    if result.shape != ():
        raise InputError(f"--steps follows scalar programs; this one's value has shape "
                         f"{result.shape}")
    for derivative in result.derivatives:
        steps, final = derived[derivative.wrt[0]]
        derivation = Derivation(wrt=derivative.wrt[0], steps=steps, result=text(final),
                                formula=derivative.formula)
        if derivative.printable:
            compare(derivation, result.rows, result.variables)
        derivative.steps = derivation
    return result


def compare(derivation: Derivation, rows: list, variables: list) -> None:
    """The final line against the verified formula at the verification points."""
    try:
        mine = formulas.formula_model(derivation.result, variables)
    except GradcliError as err:  # the parser's limits (a product of 100 factors nests)
        raise InputError(f"--steps: gradcli cannot read the derivation's last line back "
                         f"({err.message}); gradcli "
                         "diff without --steps gives the formula") from None
    with np.errstate(all="ignore"):
        theirs = formulas.formula_model(derivation.formula, variables)
        worst = 0.0
        for row in rows:
            try:
                a = formulas.formula_value(mine, row["at"])
            except Exception:  # noqa: BLE001 - the steps' formula fails: a disagreement
                a = math.nan
            b = formulas.formula_value(theirs, row["at"])
            error = 0.0 if a == b else (abs(a - b) / max(abs(b), 1.0)
                                        if math.isfinite(a) else math.inf)
            if not error <= worst:
                worst = error
                if error > formulas.TOLERANCE and derivation.disagreement is None:
                    where = ", ".join(f"{n}={v!r}" for n, v in row["at"].items())
                    derivation.disagreement = (f"the steps' result gives {a!r}, the "
                                               f"verified formula {b!r} at {where}")
    derivation.points, derivation.max_rel_err = len(rows), worst if rows else None
