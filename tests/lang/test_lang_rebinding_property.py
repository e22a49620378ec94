"""Property: rebinding a declared name never changes what the name means as a source.

Hypothesis writes random programs over the declared names ``x``, ``y`` (arguments) and
``w``, ``v`` (trainable variables) that rebind them in every way a user does: ``x = f(x)``,
``x = other`` (an alias of another declared name or of an intermediate), ``x = x op y``,
several times over. For every mode, the gradient with respect to each declared name must
be the gradient with respect to the *declared* value:

- the same, bit for bit, as the same program written with fresh names (single
  assignment: nothing is ever rebound);
- equal, within finite-difference error, to central differences of that program
  evaluated independently, by a small numpy interpreter in float64.

Examples: 60 by default, derandomized (the same programs on every run); set
``GRADCLI_PROPERTY_EXAMPLES=2000`` for a longer, random search.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gradcli.errors import ModeError
from gradcli.lang import Declarations, build, parse_program
from gradcli.run.modes import ModeOptions, run_mode

EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "0")) or None
ARGS, VARIABLES = ("x", "y"), ("w", "v")
DECLARED = ARGS + VARIABLES
UNARY = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh,
         "sigmoid": lambda a: 1.0 / (1.0 + np.exp(-a))}
BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply}


# --- programs as data: ("name", a) | ("unary", f, a) | ("scale", c, a) | ("binary", op, a, b)
@st.composite
def programs(draw):
    bound = list(DECLARED)
    statements = []
    fresh = 0
    for _ in range(draw(st.integers(1, 6))):
        form = draw(st.sampled_from(["name", "unary", "scale", "binary"]))
        a = draw(st.sampled_from(bound))
        if form == "name":
            expr = ("name", a)
        elif form == "unary":
            expr = ("unary", draw(st.sampled_from(sorted(UNARY))), a)
        elif form == "scale":
            expr = ("scale", draw(st.sampled_from([0.5, 2.0, -1.5])), a)
        else:
            expr = ("binary", draw(st.sampled_from(sorted(BINARY))), a,
                    draw(st.sampled_from(bound)))
        # Mostly rebind a declared name (often the one the value reads: x = f(x)).
        choice = draw(st.integers(0, 3))
        if choice == 0:
            target = f"t{fresh}"
            fresh += 1
            bound.append(target)
        elif choice == 1 and a in DECLARED:
            target = a
        else:
            target = draw(st.sampled_from(DECLARED))
        statements.append((target, expr))
    assume(any(target in DECLARED for target, _ in statements))
    final = ("binary", draw(st.sampled_from(sorted(BINARY))), draw(st.sampled_from(bound)),
             draw(st.sampled_from(bound)))
    return statements, final


def text_of(expr, name) -> str:
    kind = expr[0]
    if kind == "name":
        return name(expr[1])
    if kind == "unary":
        return f"{expr[1]}({name(expr[2])})"
    if kind == "scale":
        return f"{expr[1]!r} * {name(expr[2])}"
    return f"({name(expr[2])} {expr[1]} {name(expr[3])})"


def rebinding_text(program) -> str:
    statements, final = program
    lines = [f"{target} = {text_of(expr, str)}" for target, expr in statements]
    return "\n".join(lines + [f"out = sum({text_of(final, str)})"])


def fresh_names_text(program) -> str:
    """The same program in single assignment: each assignment gets a new name."""
    statements, final = program
    current = {name: name for name in DECLARED}
    lines = []
    for k, (target, expr) in enumerate(statements):
        line = f"s{k} = {text_of(expr, current.__getitem__)}"
        current[target] = f"s{k}"
        lines.append(line)
    return "\n".join(lines + [f"out = sum({text_of(final, current.__getitem__)})"])


def numpy_value(program, point: dict) -> float:
    """The program evaluated by a plain interpreter (numpy, float64): the reference."""
    statements, final = program
    env = {name: np.array(point[name], dtype=np.float64) for name in DECLARED}

    def value(expr):
        kind = expr[0]
        if kind == "name":
            return env[expr[1]]
        if kind == "unary":
            return UNARY[expr[1]](env[expr[2]])
        if kind == "scale":
            return expr[1] * env[expr[2]]
        return BINARY[expr[1]](env[expr[2]], env[expr[3]])

    for target, expr in statements:
        env[target] = value(expr)
    return float(np.sum(value(final)))


def finite_differences(program, point: dict, name: str) -> np.ndarray:
    base = np.array(point[name], dtype=np.float64)
    out = np.zeros_like(base)
    for i in range(base.size):
        h = 1e-6 * max(1.0, abs(base[i]))
        up, down = base.copy(), base.copy()
        up[i] += h
        down[i] -= h
        out[i] = (numpy_value(program, {**point, name: up})
                  - numpy_value(program, {**point, name: down})) / (2 * h)
    return out


def mode_gradients(text: str, point: dict, mode: str) -> dict:
    """name -> gradient (zeros for an unconnected source) of one mode; {} when the mode
    refuses for lack of trainable variables."""
    decls = Declarations()
    for name in VARIABLES:
        decls.add("var", name, point[name])
    for name in ARGS:
        decls.add("arg", name, point[name])
    model = build(parse_program(text), decls)
    options = ModeOptions(wrt=list(DECLARED), watch=list(ARGS)) if mode == "tape" else None
    try:
        out = run_mode(mode, model, options)
    except ModeError:
        return {}
    return {g.name: np.zeros(2) if g.gradient is None else np.asarray(g.gradient)
            for g in out.gradients}


values = st.floats(-2.0, 2.0, allow_nan=False).map(lambda v: round(v, 3))
points = st.fixed_dictionaries({name: st.lists(values, min_size=2, max_size=2).map(np.array)
                                for name in DECLARED})


@settings(max_examples=EXAMPLES or 60, derandomize=EXAMPLES is None, deadline=None,
          database=None, suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.filter_too_much])
@given(program=programs(), point=points)
def test_rebound_declared_names_keep_their_gradients(program, point):
    rebinding, fresh = rebinding_text(program), fresh_names_text(program)
    reference = {name: finite_differences(program, point, name) for name in DECLARED}
    expected_names = {"tape": DECLARED, "grad": ARGS, "implicit": VARIABLES,
                      "value-grad": VARIABLES}
    for mode, names in expected_names.items():
        got = mode_gradients(rebinding, point, mode)
        assert got.keys() == mode_gradients(fresh, point, mode).keys(), (mode, rebinding)
        for name, gradient in mode_gradients(fresh, point, mode).items():
            assert np.array_equal(got[name], gradient), (mode, name, rebinding, fresh)
        for name in names:
            # implicit modes list only the variables read: the others do not matter
            gradient = got.get(name, np.zeros(2))
            np.testing.assert_allclose(gradient, reference[name], rtol=1e-6, atol=1e-6,
                                       err_msg=f"{mode} d/d{name} of\n{rebinding}")
