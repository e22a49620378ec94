"""The parser: what the language accepts, the trees it builds, and how it refuses."""
import pytest

from gradcli.errors import ArgumentError, GradcliError, LimitError, ParseError, UnknownNameError
from gradcli.lang import parse_expression, parse_program, static_value
from gradcli.lang.tree import (
    ArrayLit,
    Assign,
    Binary,
    Call,
    Compare,
    Declare,
    ExprStatement,
    Index,
    Name,
    Number,
    Pos,
    Slice,
    TupleLit,
    Unary,
)


def expr(text):
    return parse_expression(text)


# --- what is accepted -------------------------------------------------------------------
def test_seed_program_parses_to_declarations_and_an_assignment():
    program = parse_program("w1 = Variable(2.0)\nw2 = Variable(3.0, trainable=False)\n"
                            "s = w1 * x1 + w2 * x2        # x1, x2 declared outside")
    w1, w2, s = program.statements
    assert w1 == Assign("w1", Declare("variable", Number(2.0), True))
    assert w2 == Assign("w2", Declare("variable", Number(3.0), False))
    assert s == Assign("s", Binary("+", Binary("*", Name("w1"), Name("x1")),
                                   Binary("*", Name("w2"), Name("x2"))))


def test_constant_declaration():
    (statement,) = parse_program("c = constant([1, 2])").statements
    assert statement == Assign("c", Declare("constant", ArrayLit((Number(1.0), Number(2.0)))))


def test_caret_is_power_and_binds_like_double_star():
    assert expr("x ^ 2") == expr("x ** 2") == Binary("**", Name("x"), Number(2.0))
    assert expr("-x^2") == Unary("-", Binary("**", Name("x"), Number(2.0)))


def test_power_is_right_associative_with_unary_exponents():
    assert expr("a ** -b ** c") == Binary("**", Name("a"),
                                          Unary("-", Binary("**", Name("b"), Name("c"))))
    assert expr("2^3^2") == Binary("**", Number(2.0), Binary("**", Number(3.0), Number(2.0)))


def test_precedence_matches_python():
    assert expr("a + b * c @ d - e / f") == Binary(
        "-", Binary("+", Name("a"), Binary("@", Binary("*", Name("b"), Name("c")), Name("d"))),
        Binary("/", Name("e"), Name("f")))
    assert expr("+a - -b") == Binary("-", Unary("+", Name("a")), Unary("-", Name("b")))


def test_comparison_is_lowest():
    assert expr("x + 1 < 2 * y") == Compare("<", Binary("+", Name("x"), Number(1.0)),
                                            Binary("*", Number(2.0), Name("y")))


@pytest.mark.parametrize("text, value", [("3", 3.0), ("2.5", 2.5), ("1e-3", 1e-3),
                                         (".5", 0.5), ("1.", 1.0), ("1.5E+2", 150.0)])
def test_numbers_become_floats(text, value):
    node = expr(text)
    assert isinstance(node, Number) and type(node.value) is float and node.value == value


def test_calls_with_keywords_and_tuples():
    assert expr("sum(x, axis=(0, 1), keepdims=True)") == Call(
        "sum", (Name("x"),), (("axis", TupleLit((Number(0.0), Number(1.0)))),
                              ("keepdims", Name("True"))))


def test_indexing_and_slicing():
    assert expr("x[1:3, 0, ::2, :]") == Index(Name("x"), (
        Slice(Number(1.0), Number(3.0), None), Number(0.0), Slice(None, None, Number(2.0)),
        Slice(None, None, None)))


def test_nested_array_literal_spans_lines():
    node = expr("[[1, 2],\n [3, 4]]")
    assert node == ArrayLit((ArrayLit((Number(1.0), Number(2.0))),
                             ArrayLit((Number(3.0), Number(4.0)))))


def test_semicolons_comments_and_blank_lines_separate_statements():
    program = parse_program("\n# comment only\na = 1; b = a + 2  # trailing\n\n;b * 3;\n")
    assert [type(s) for s in program.statements] == [Assign, Assign, ExprStatement]


def test_comments_may_hold_any_text():
    assert len(parse_program("x * 2  # 梯度 'quoted' __import__ ^ ≈").statements) == 1


def test_positions_cover_the_node():
    program = parse_program("a = 1\ns = w1 *  x1")
    s = program.statements[1]
    assert s.pos == Pos(2, 0, 12)
    assert s.value.pos == Pos(2, 4, 8)
    assert s.value.right.pos == Pos(2, 10, 2)


def test_aliases_parse_as_calls_by_the_written_name():
    assert expr("asin(x)") == Call("asin", (Name("x"),))


def test_static_value_folds_floats_without_big_ints():
    assert static_value(expr("(2, 10**3)")) == (2.0, 1000.0)


def test_a_power_of_literals_beyond_float64_is_a_limit_error():
    with pytest.raises(LimitError, match="too large for a float64"):
        expr("9**9**9**9")
    with pytest.raises(LimitError):
        expr("-(10.0 ^ 309)")
    assert static_value(expr("-2 ** 2 + 2 ** -1")) == -3.5


# --- refusals, each naming the construct ------------------------------------------------
@pytest.mark.parametrize("text, cls, words", [
    ("x.y", ParseError, "attribute access is not allowed"),
    ("'abc' * x", ParseError, "strings are not allowed"),
    ('"abc"', ParseError, "strings are not allowed"),
    ("(lambda: x)()", ParseError, "lambda is not allowed"),
    ("[x for x in y]", ParseError, "comprehensions"),
    ("import os", ParseError, "import is not allowed"),
    ("from os import system", ParseError, "import is not allowed"),
    ("x if y else z", ParseError, "conditionals"),
    ("x and y", ParseError, "'and'"),
    ("not x", ParseError, "'not'"),
    ("{1: 2}", ParseError, "dicts and sets"),
    ("x %= 2", ParseError, "augmented assignment"),
    ("x //= 2", ParseError, "augmented assignment"),
    ("x & y", ParseError, "bitwise"),
    ("~x", ParseError, "bitwise"),
    ("x += 1", ParseError, "augmented assignment"),
    ("(y := 2)", ParseError, "walrus"),
    ("sum(*x)", ParseError, "starred"),
    ("sin(**x)", ParseError, "starred"),
    ("a < b < c", ParseError, "chained comparisons"),
    ("a = b = 1", ParseError, "chained assignment"),
    ("x[0] = 1", ParseError, "item assignment"),
    ("x + 1 = 2", ParseError, "only a name can be assigned"),
    ("__x", ParseError, "beginning with '_'"),
    ("_x = 1", ParseError, "beginning with '_'"),
    ("1x", ParseError, "names must start with a letter"),
    ("1.2.3", ParseError, "invalid number"),
    ("0x10", ParseError, "only decimal numbers"),
    ("1_000", ParseError, "digit separators"),
    ("2x + 1", ParseError, "for a product write 2 * x"),
    ("x $ y", ParseError, "unexpected character '$'"),
    ("x \\\n + y", ParseError, "line continuation"),
    ("x y", ParseError, "missing operator"),
    ("x +", ParseError, "expected an expression"),
    ("(x", ParseError, "never closed"),
    ("x)", ParseError, "unmatched ')'"),
    ("(x]", ParseError, "does not match"),
    ("x[]", ParseError, "empty index"),
    ("None", ParseError, "None is not allowed"),
    ("def f(): pass", ParseError, "function definitions"),
    ("sin = 2", ParseError, "name of a function"),
    ("True = 2", ParseError, "cannot assign to True"),
    ("sin", ParseError, "is a function: call it"),
    ("x(2)", UnknownNameError, "unknown function 'x'"),
    ("(x)(2)", ParseError, "only functions of the table can be called"),
    ("sin(x)(2)", ParseError, "only functions of the table can be called"),
    ("tnah(x) * 2", UnknownNameError, "unknown function 'tnah' (did you mean 'tanh'?)"),
    ("exec('1')", ParseError, "strings are not allowed"),
    ("eval(x)", UnknownNameError, "unknown function 'eval'"),
    ("sin(x, x)", ArgumentError, "sin takes 1 argument (x), got 2"),
    ("hypot(x)", ArgumentError, "hypot takes 2 arguments (x, y), got 1"),
    ("reshape(x)", ArgumentError, "reshape takes 2 arguments (x, shape), got 1"),
    ("sum(x, 0, True, 1)", ArgumentError, "sum takes 1 to 3 arguments"),
    ("sum(x, axes=0)", UnknownNameError, "sum has no keyword 'axes' (did you mean 'axis'?)"),
    ("sin(x, foo=1)", UnknownNameError, "sin has no keyword 'foo'"),
    # a keyword is judged by its name, not counted (was "sin takes 1 argument (x), got 1")
    ("sin(x=x)", ArgumentError, "sin: keyword arguments are not accepted for the input "
                                "'x'; pass it by position: sin(x)"),
    ("sum(x=x, axis=0)", ArgumentError, "sum: keyword arguments are not accepted for the "
                                        "input 'x'; pass it by position: sum(x, axis=None, "
                                        "keepdims=False)"),
    ("maximum(x, y=x)", ArgumentError, "keyword arguments are not accepted for the input "
                                       "'y'; pass it by position: maximum(x, y)"),
    ("sin(y=x)", UnknownNameError, "sin has no keyword 'y'; it takes no keywords"),
    ("sum(x, 0, axis=1)", ArgumentError, "two values for 'axis'"),
    ("sum(x, axis=0, axis=1)", ArgumentError, "twice"),
    ("sum(axis=0, x)", ParseError, "positional argument after a keyword"),
    ("sum(x, axis=1.5)", ArgumentError, "axis of sum must be an integer, got 1.5"),
    ("sum(x, axis=y)", ArgumentError, "must be a constant"),
    ("sum(x, keepdims=1)", ArgumentError, "keepdims of sum must be True or False"),
    ("zeros(-1)", ArgumentError, "non-negative"),
    ("zeros(2.5)", ArgumentError, "must be an integer"),
    ("arange(0, 1, 0)", ArgumentError, "step cannot be zero"),
    ("x[1.5]", ArgumentError, "an index must be an integer"),
    ("x[y]", ArgumentError, "must be a constant"),
    ("x[::0]", ArgumentError, "slice step cannot be zero"),
    ("concatenate(x)", ArgumentError, "takes a list of arrays"),
    ("stack([])", ArgumentError, "at least one array"),
    ("Variable(2) * 3", ParseError, "only allowed as the whole right-hand side"),
    ("w = Variable(2) * 3", ParseError, "must be the whole right-hand side"),
    ("w = Variable(2, trainable=1)", ArgumentError, "trainable must be True or False"),
    ("w = Variable(2, name=3)", ArgumentError, "takes a value and trainable"),
    ("w = Variable()", ArgumentError, "needs a value"),
    ("c = constant(1, 2)", ArgumentError, "takes 1 argument"),
    ("a, b = 1", ParseError, "tuple unpacking are not allowed"),
    ("", ParseError, "empty program"),
    ("  # only a comment\n\n", ParseError, "empty program"),
])
def test_refusals_name_the_problem(text, cls, words):
    with pytest.raises(cls) as info:
        parse_program(text)
    assert words in info.value.message
    rendered = info.value.render()
    assert rendered.startswith("error: ")
    if text.strip():
        assert "^" in rendered


def test_error_renders_with_caret_under_the_place():
    with pytest.raises(UnknownNameError) as info:
        parse_program("tnah(x) * 2")
    assert info.value.render() == ("error: unknown function 'tnah' (did you mean 'tanh'?)\n"
                                   "  1 | tnah(x) * 2\n"
                                   "    | ^^^^")


def test_error_on_a_later_line_points_at_that_line():
    with pytest.raises(ParseError) as info:
        parse_program("a = 1\nb = a +\nc = 2")
    assert (info.value.line, info.value.col) == (2, 7)


def test_expression_parser_refuses_statements():
    with pytest.raises(ParseError, match="single expression"):
        parse_expression("a = 1")
    with pytest.raises(ParseError, match="single expression"):
        parse_expression("1; 2")


def test_program_must_be_text():
    with pytest.raises(GradcliError):
        parse_program(b"x + 1")


# --- characters -------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["x\x00 + 1", "x\u200b + 1", "x + 1  # \u202e hidden",
                                  "x\x0c+1", "x\u2028+1", "# \x00\nx"])
def test_invisible_and_control_characters_are_refused_anywhere(text):
    with pytest.raises(ParseError, match="not allowed") as info:
        parse_program(text)
    assert "\x00" not in info.value.render()


def test_non_ascii_outside_comments_is_refused_with_a_caret():
    # Mathematical bold letters: Python's NFKC would make this __class__.
    text = "x.\U0001d41f\U0001d41f\U0001d41c\U0001d425\U0001d41a\U0001d42c\U0001d42c"
    with pytest.raises(ParseError):
        parse_program(text)
    bold_name = "\U0001d431 + 1"
    with pytest.raises(ParseError, match="non-ASCII character") as info:
        parse_program(bold_name)
    assert (info.value.line, info.value.col) == (1, 0)


# --- limits -----------------------------------------------------------------------------
def test_length_limit_names_itself():
    with pytest.raises(LimitError, match=r"length limit \(100,000 characters\)"):
        parse_program("x + " * 30_000 + "x")


def test_nesting_limit_names_itself():
    with pytest.raises(LimitError, match=r"nesting depth limit"):
        parse_program("(" * 101 + "x" + ")" * 101)
    assert parse_program("(" * 100 + "x" + ")" * 100)


def test_unary_run_limit_names_itself():
    with pytest.raises(LimitError, match="unary run limit"):
        parse_program("-" * 101 + "x")
    assert parse_program("-" * 100 + "x")


def test_literal_digit_limit_names_itself():
    with pytest.raises(LimitError, match=r"literal size limit \(400 digits\)"):
        parse_program("1" * 401)
    assert parse_program("1" * 400).statements[0].value.value == float("1" * 400)


@pytest.mark.slow
def test_tree_size_limit_names_itself():
    with pytest.raises(LimitError, match="tree size limit"):
        parse_program("+".join(["x"] * 30_000))


def test_constructor_size_is_checked_at_parse_time():
    with pytest.raises(LimitError, match=r"array size limit \(10,000,000 elements\)"):
        parse_program("sum(zeros(10**12))")
    with pytest.raises(LimitError, match="10,000,000,000 elements"):
        parse_program("ones((100000, 100000))")
    with pytest.raises(LimitError):
        parse_program("eye(10**5)")
    with pytest.raises(LimitError):
        parse_program("arange(0, inf)")
    with pytest.raises(LimitError):
        parse_program("linspace(0, 1, 10**8)")
