"""The language's operators and function calls: `%` and `//`, the new table functions by
name with their keyword parameters, the refusals that name the function to use, and the
parser's argument binding read from data each table entry computes once."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from gradcli.lang import parser
from gradcli.lang.parser import parse_program


@pytest.mark.slow
def test_the_parser_inspects_each_entry_once_not_each_call(monkeypatch):
    """Binding data is computed once per entry: a program calling the same functions
    thousands of times inspects each signature at most once."""
    calls = []
    real = inspect.signature

    def counting(obj, *args, **kwargs):
        calls.append(obj)
        return real(obj, *args, **kwargs)
    monkeypatch.setattr(inspect, "signature", counting)
    monkeypatch.setattr(parser, "_BINDINGS", {})
    text = "\n".join(["y = sum(x, axis=0)", "z = mean(x, keepdims=True)",
                      "w = reshape(x, (2, 3))"] * 1000)
    parse_program(text)
    assert len(calls) <= 3
    assert len(calls) == len(set(map(id, calls)))


# ---------------------------------------------------------------------------------------
# % and //
# ---------------------------------------------------------------------------------------
def run(text: str, **values):
    """(value, gradients by name) of a program, every input a trainable variable."""
    import gradcli as gc
    from gradcli.lang import Declarations, build
    decls = Declarations()
    for name, value in values.items():
        decls.add("var", name, np.asarray(value, dtype=np.float64))
    model = build(parse_program(text), decls)
    value, pairs = gc.implicit_value_and_gradients(model.function)(*model.arg_values)
    return value.numpy(), {v.name: g.numpy() for g, v in pairs}


def test_percent_is_python_mod_with_the_divisors_sign():
    for x, y in [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (1.3, 0.7)]:
        value, grads = run("x % y", x=x, y=y)
        assert value == x % y                      # Python's own %, the reference
        assert grads["x"] == 1.0
        assert grads["y"] == -(x // y)             # d/dy (x - y floor(x/y)) = -floor(x/y)


def test_floor_division_has_a_zero_gradient():
    value, grads = run("x // y + 0 * x", x=-7.5, y=2.0)
    assert value == -7.5 // 2.0
    assert grads["x"] == 0.0 and grads["y"] == 0.0


def test_percent_and_floor_division_share_the_precedence_of_times():
    # Python: -x % 3 * 2 is ((-x) % 3) * 2; x + 7 // 2 is x + (7 // 2)
    assert run("-x % 3 * 2", x=1.0)[0] == ((-1.0) % 3) * 2
    assert run("x + 7 // 2 % 2", x=1.0)[0] == 1.0 + (7 // 2) % 2


def test_percent_folds_in_static_places():
    assert parser.static_value(parser.parse_expression("(7 % 4, 7 // 4)")) == (3.0, 1.0)


def test_percent_translates_to_sympy_with_the_same_value_and_gradient():
    from gradcli.check.symbolic import symbolic_gradients, to_sympy
    program, point = parse_program("x % y + x // y"), {"x": -7.5, "y": 2.0}
    translated = to_sympy(program, point)
    value = translated.target[()].xreplace(translated.values)
    assert float(value) == (-7.5 % 2.0) + (-7.5 // 2.0)
    grads = symbolic_gradients(program, point, ["x", "y"], in_process=True)
    assert grads["x"].value == 1.0
    assert grads["y"].value == -(-7.5 // 2.0)


@pytest.mark.parametrize("text", ["x %= 2", "x //= 2"])
def test_augmented_percent_stays_refused(text):
    from gradcli.errors import ParseError
    with pytest.raises(ParseError, match="augmented assignment"):
        parse_program(text)


# ---------------------------------------------------------------------------------------
# Methods and module prefixes: refused, naming the function to use
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, words", [
    ("x.sum()", "write sum(x, ...) instead of x.sum(...)"),
    ("(x + 1).mean(axis=0)", "write mean(x, ...) instead of x.mean(...)"),
    ("x.T", "write transpose(x) instead of x.T"),
    ("x.cumprod()", "write cumprod(x, ...) instead of x.cumprod(...)"),
    ("np.sin(x)", "call the function by its name, sin(...), not np.sin"),
    ("numpy.var(x)", "var(...), not numpy.var"),
    ("tf.reduce_sum(x)", "reduce_sum(...), not tf.reduce_sum"),
    ("np.frobnicate(x)", "'frobnicate' is not a function of the language"),
    ("x.shape", "attribute access is not allowed"),
])
def test_attribute_access_names_the_function_to_use(text, words):
    from gradcli.errors import ParseError
    with pytest.raises(ParseError) as info:
        parse_program(text)
    assert words in str(info.value)
    assert info.value.col == text.index(".")  # the caret points at the dot


def test_split_not_indexed_is_refused_with_the_way_to_pick_a_piece():
    from gradcli.errors import ArgumentError
    from gradcli.lang import Declarations, build
    decls = Declarations()
    decls.add("arg", "x", np.arange(4.0))
    with pytest.raises(ArgumentError, match=r"split returns several tensors.*split\(\.\.\.\)\[0\]"):
        build(parse_program("split(x, 2)"), decls)


# ---------------------------------------------------------------------------------------
# The new functions by name, with keyword parameters
# ---------------------------------------------------------------------------------------
M = [[0.5, -1.2, 0.8], [1.5, 0.3, -0.4]]


@pytest.mark.parametrize("text, expected", [
    ("var(M, axis=0, ddof=1)", np.var(M, axis=0, ddof=1)),
    ("std(M, ddof=1, keepdims=True)", np.std(M, ddof=1, keepdims=True)),
    ("median(M, axis=1, keepdims=True)", np.median(M, axis=1, keepdims=True)),
    ("cumsum(M, axis=1)", np.cumsum(M, axis=1)),
    ("diff(M, n=1, axis=0)", np.diff(M, n=1, axis=0)),
    ("sort(M, axis=0)", np.sort(M, axis=0)),
    ("roll(M, shift=(1, 2), axis=(0, 1))", np.roll(M, (1, 2), axis=(0, 1))),
    ("pad(M, pad_width=((0, 1), (2, 0)))", np.pad(M, ((0, 1), (2, 0)))),
    ("tile(M, reps=(1, 2))", np.tile(M, (1, 2))),
    ("repeat(M, repeats=2, axis=0)", np.repeat(M, 2, axis=0)),
    ("moveaxis(M, source=0, destination=1)", np.moveaxis(M, 0, 1)),
    ("swapaxes(M, axis1=1, axis2=0)", np.swapaxes(M, 1, 0)),
    ("rot90(M, k=2)", np.rot90(M, 2)),
    ("take(M, [2, 0], axis=1)", np.take(M, [2, 0], axis=1)),
    ("reduce_sum(M, axis=1, keepdims=True)", np.sum(M, axis=1, keepdims=True)),
    ("M[0] % 0.7", np.mod(M[0], 0.7)),
])
def test_new_functions_by_name_with_keywords(text, expected):
    value, _ = run(f"w * 0 + {text}", w=1.0, M=M)
    np.testing.assert_allclose(value, expected, rtol=1e-15)


@pytest.mark.parametrize("text, words", [
    ("repeat(M, -1)", "non-negative"),
    ("diff(M, n=1.5)", "must be an integer"),
    ("pad(M, ((1, 2), (0.5, 0)))", "must be an integer"),
    ("var(M, dof=1)", "did you mean 'ddof'"),
])
def test_bad_static_parameters_are_refused_at_parse_time(text, words):
    from gradcli.errors import GradcliError
    with pytest.raises(GradcliError, match=words):
        parse_program(text)


@pytest.mark.parametrize("text", ["sum(repeat(x, 1e9))", "sum(tile(x, (100000, 100000)))",
                                  "sum(pad(x, 1e9))", "sum(pad(x, (1, 1e9)))",
                                  "sum(sin(broadcast_to(x, (100000, 100000))))",
                                  "sum(gather(ones((2000, 1000)), zeros(20000)))",
                                  "sum(take(ones((1000, 10000)), zeros(2000), axis=0))"])
def test_functions_that_grow_arrays_are_refused_before_allocating(text):
    """A result far larger than its inputs (repeat, tile, pad, broadcast_to, take) is
    checked against the array size limit before it is made: never a hang or a MemoryError."""
    import time

    from gradcli.errors import LimitError
    from gradcli.lang import Declarations, build
    decls = Declarations()
    decls.add("arg", "x", np.array([1.0, 2.0]))
    model = build(parse_program(text), decls)
    start = time.perf_counter()
    with pytest.raises(LimitError, match="over the array size limit"):
        model.function(*model.arg_values)
    assert time.perf_counter() - start < 10.0  # refused before the work: a bound, no target
