"""Evaluation: programs + declarations -> engine values, under every API mode."""
import inspect

import more_cases
import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.errors import (
    ArgumentError,
    InputError,
    LimitError,
    ParseError,
    ShapeError,
    UnknownNameError,
)
from gradcli.lang import Declarations, build, parse_program

SEED = "w1 = Variable(2.0)\nw2 = Variable(3.0)\ns = w1 * x1 + w2 * x2"


def run(text, **options):
    """Build and evaluate ``text`` with declarations given as var=/frozen=/arg= lists."""
    model = build(parse_program(text), Declarations.from_options(**options))
    return model, model.function(*model.arg_values)


# --- the seeds --------------------------------------------------------------------------
def test_seed_program_pasted_evaluates_to_31():
    model, value = run(SEED, arg=["x1=5", "x2=7"])
    assert value.numpy() == 31.0
    assert list(model.variables) == ["w1", "w2"]
    assert model.target_name == "s"


def test_seed_expression_with_outside_declarations_evaluates_to_31():
    model, value = run("w1 * x1 + w2 * x2", var=["w1=2", "w2=3"], arg=["x1=5", "x2=7"])
    assert value.numpy() == 31.0
    assert model.target_name is None


def test_implicit_value_and_gradients_discovers_the_program_variables():
    model, _ = run(SEED, arg=["x1=5", "x2=7"])
    value, pairs = gc.implicit_value_and_gradients(model.function)(*model.arg_values)
    assert value.numpy() == 31.0
    assert [(g.numpy(), v) for g, v in pairs] == [(5.0, model.variables["w1"]),
                                                  (7.0, model.variables["w2"])]


def test_implicit_gradients_skip_untrainable_variables():
    model, _ = run("w1 = Variable(2., trainable=False)\nw2 = Variable(3.0)\ns = w1*x1 + w2*x2",
                   arg=["x1=5", "x2=7"])
    pairs = gc.implicit_gradients(model.function)(*model.arg_values)
    assert [(g.numpy(), v.name) for g, v in pairs] == [(7.0, "w2")]


def test_gradients_function_by_argument_name():
    model, _ = run(SEED, arg=["x1=5", "x2=7"])
    assert list(inspect.signature(model.function).parameters) == ["x1", "x2"]
    grads = gc.gradients_function(model.function, params=["x2"])(*model.arg_values)
    assert [g.numpy() for g in grads] == [3.0]
    grads = gc.gradients_function(model.function)(*model.arg_values)
    assert [g.numpy() for g in grads] == [2.0, 3.0]


def test_tape_reaches_intermediate_values_by_name():
    model, _ = run("w = Variable(2.0)\nt = w * x\ns = t * t", arg=["x=3"])
    with gc.GradientTape(persistent=True) as tape:
        s = model.function(*model.arg_values)
    assert s.numpy() == 36.0
    ds_dt, ds_dw = tape.gradient(s, [model.values["t"], model.values["w"]])
    assert (ds_dt.numpy(), ds_dw.numpy()) == (12.0, 36.0)


def test_variable_name_evaluates_to_the_variable_itself():
    model, _ = run("w = Variable(2.0); y = w", arg=[])
    assert model.values["y"] is model.variables["w"]


def test_frozen_variables_are_not_trainable():
    model, value = run("a * b", var=["a=2"], frozen=["b=4"])
    assert value.numpy() == 8.0
    assert model.variables["a"].trainable and not model.variables["b"].trainable


def test_variables_are_created_once_and_outside_ones_first():
    model, _ = run("w = Variable(1.0); s = w * v", var=["v=2"])
    assert list(model.variables) == ["v", "w"]
    first = model.variables["w"]
    model.function()
    model.function()
    assert model.variables["w"] is first and model.values["w"] is first


def test_function_accepts_plain_numbers_and_keywords():
    model, _ = run("x1 - x2", arg=["x1=5", "x2=7"])
    assert model.function(10.0, 4.0).numpy() == 6.0
    assert model.function(x2=1.0, x1=3.0).numpy() == 2.0
    with pytest.raises(ArgumentError, match="takes 2 arguments"):
        model.function(1.0)


@pytest.mark.slow
def test_rebinding_a_name_follows_statement_order():
    # The benchmark's `chain`: x = sin(x) * 1.01 + 0.1, many times.
    _, value = run("\n".join(["x = sin(x) * 1.01 + 0.1"] * 50), arg=["x=0.5"])
    expected = 0.5
    for _ in range(50):
        expected = np.sin(expected) * 1.01 + 0.1
    assert value.numpy() == pytest.approx(expected, rel=1e-15)


def test_target_picks_a_named_statement():
    model = build(parse_program("a = x * 2\nb = a + 1"), Declarations.from_options(arg=["x=3"]),
                  target="a")
    assert model.function(*model.arg_values).numpy() == 6.0
    assert model.target_name == "a"
    with pytest.raises(UnknownNameError, match="unknown target 'c'"):
        build(parse_program("a = x"), Declarations.from_options(arg=["x=3"]), target="c")


def test_constant_declaration_and_shadowed_constants():
    _, value = run("c = constant([1, 2]); sum(c * pi)", arg=["pi=3"])
    assert value.numpy() == 9.0
    _, value = run("2 * pi")
    assert value.numpy() == 2 * np.pi


def test_declared_constant_name_is_not_a_static_value():
    with pytest.raises(ArgumentError, match="'e' is declared"):
        run("e = 2; sum(x, axis=e)", arg=["x=[1, 2]"])


@pytest.mark.slow
def test_long_sums_evaluate_without_recursion():
    _, value = run("+".join(["x"] * 20_000), arg=["x=0.5"])
    assert value.numpy() == 10_000.0


def test_float32_programs_stay_float32():
    model = build(parse_program("w = Variable(2.0); s = w * x ** 2 + 1"),
                  Declarations.from_options(arg=["x=[1, 2]"]), dtype="float32")
    value = model.function(*model.arg_values)
    assert value.dtype == np.float32
    assert model.variables["w"].dtype == np.float32


def test_unknown_dtype_is_refused():
    with pytest.raises(InputError, match="dtype"):
        build(parse_program("1"), dtype="int8")


# --- errors at build and evaluation -----------------------------------------------------
def test_undeclared_name_lists_what_is_declared():
    with pytest.raises(UnknownNameError) as info:
        run("x1 + y", arg=["x1=1", "x2=2"])
    assert "undeclared name 'y'" in info.value.message
    assert "declared: x1, x2" in info.value.message
    assert (info.value.line, info.value.col, info.value.width) == (1, 5, 1)


def test_undeclared_name_suggests_a_close_one():
    with pytest.raises(UnknownNameError, match=r"did you mean 'weight'\?"):
        run("weigth * 2", var=["weight=1"])


def test_use_before_declaration_is_refused():
    with pytest.raises(UnknownNameError, match="used before its declaration on line 2"):
        run("s = w * 2\nw = Variable(1.0)")


def test_declaring_a_name_twice_is_refused():
    with pytest.raises(InputError, match="declared twice"):
        run("w = Variable(1.0); w = Variable(2.0)")
    with pytest.raises(InputError, match="declared twice"):
        run("x = Variable(1.0)", arg=["x=2"])


def test_shape_mismatch_in_matmul_names_both_shapes_with_a_caret():
    with pytest.raises(ShapeError) as info:
        run("s = a @ b", arg=["a=[[1, 2, 3], [4, 5, 6]]", "b=[[1, 2, 3], [4, 5, 6]]"])
    assert "matmul" in info.value.message and "(2, 3) @ (2, 3)" in info.value.message
    assert (info.value.line, info.value.col, info.value.width) == (1, 4, 5)
    assert "^^^^^" in info.value.render()


def test_out_of_range_index_is_a_shape_error():
    with pytest.raises(ShapeError, match="out of bounds"):
        run("x[5]", arg=["x=[1, 2, 3]"])


def test_broadcast_over_the_array_limit_is_refused_before_computing():
    with pytest.raises(LimitError, match="array size limit"):
        run("reshape(x, (5000, 1)) * x", arg=["x=ones(5000)"])


def test_true_false_are_not_values():
    with pytest.raises(ArgumentError, match="only allowed as a keyword value"):
        run("x * True", arg=["x=1"])


def test_tuple_as_a_value_is_refused():
    with pytest.raises(ParseError, match="tuple is only allowed as a shape or axis"):
        run("(1, 2) * x", arg=["x=1"])


def test_variable_value_may_use_earlier_declarations_only():
    _, value = run("a = Variable(2.0); b = Variable(a * 3); b")
    assert value.numpy() == 6.0
    with pytest.raises(UnknownNameError, match="can use numbers"):
        run("b = Variable(x)", arg=["x=1"])


# --- every function of the table --------------------------------------------------------
_SPECIAL_CALLS = {
    "zeros": ("zeros((2, 3))", lambda op: op.forward((2, 3))),
    "ones": ("ones(3)", lambda op: op.forward(3)),
    "full": ("full((2, 2), 1.5)", lambda op: op.forward((2, 2), 1.5)),
    "eye": ("eye(3)", lambda op: op.forward(3)),
    "linspace": ("linspace(0, 1, 5)", lambda op: op.forward(0.0, 1.0, 5)),
    "arange": ("arange(0, 3, 0.5)", lambda op: op.forward(0.0, 3.0, 0.5)),
    "reshape": ("reshape(a, (3, 2))", lambda op, a: op.forward(a, shape=(3, 2))),
    "where": ("where(a > 1, a, b)", lambda op, a, b: op.forward(a > 1, a, b)),
    "concatenate": ("concatenate([a, b], axis=1)", lambda op, a, b: op.forward(a, b, axis=1)),
    "stack": ("stack([a, b])", lambda op, a, b: op.forward(a, b)),
    "matmul": ("matmul(a, transpose(b))", lambda op, a, b: op.forward(a, b.T)),
    "dot": ("dot(a, transpose(b))", lambda op, a, b: op.forward(a, b.T)),
    "clip": ("clip(a, 0.8, 1.2)", lambda op, a, b: op.forward(a, 0.8, 1.2)),
}


def _sample_inputs(op):
    lo, hi = op.sample
    a = np.linspace(lo, hi, 6).reshape(2, 3) * 0.9 + 0.05 * (hi - lo)
    b = a[::-1, ::-1].copy()
    return a, b


def _evaluates_its_samples(name):
    """Entries with their own samples (matrices a range cannot describe): every sample,
    written as program text, gives what the library gives."""
    from table_samples import sample_programs
    programs = sample_programs(name)
    assert programs, name
    for label, text, point, expected, _ in programs:
        decls = Declarations()
        for key, value in point.items():
            decls.add("arg", key, value)
        model = build(parse_program(text), decls)
        value = model.function(*model.arg_values)
        np.testing.assert_allclose(np.asarray(value.numpy(), dtype=float), expected,
                                   rtol=1e-12, atol=1e-14, err_msg=f"{label}: {text}")


def _check_more_case(name, op):
    if name in more_cases.NOT_IN_LANGUAGE:
        with pytest.raises(ArgumentError, match="several arrays"):
            parse_program(f"{name}(a, 2)")
        return
    lo, hi = op.sample
    for text, call, shapes in more_cases.CASES[name]:
        point = {n: np.linspace(lo, hi, max(1, int(np.prod(s))) + 2)[1:-1].reshape(s)
                 for n, s in shapes.items()}
        decls = Declarations()
        for n, value in point.items():
            decls.add("arg", n, value)
        model = build(parse_program(text), decls)
        value = model.function(*model.arg_values)
        np.testing.assert_allclose(np.asarray(value.numpy(), dtype=float),
                                   np.asarray(call(NUMPY, point), dtype=float), rtol=1e-12)


NUMPY = more_cases.numpy_namespace()


@pytest.mark.parametrize("name", ORDER)
def test_every_table_function_parses_and_evaluates(name):
    op = REGISTRY[name]
    if op.samples is not None:
        _evaluates_its_samples(name)
    if name in more_cases.CASES:  # the entries of more_ops.py: their own programs
        _check_more_case(name, op)
        return
    a, b = _sample_inputs(op)
    decls = Declarations()
    decls.add("arg", "a", a)
    decls.add("arg", "b", b)
    if op.samples is not None and op.kind == "linalg":
        return  # (matrices: checked on its samples above)
    if name in _SPECIAL_CALLS:
        text, expected_fn = _SPECIAL_CALLS[name]
        n = len(inspect.signature(expected_fn).parameters) - 1
        expected = expected_fn(op, *(a, b)[:n])
    else:
        inputs = (a, b, a)[:len(op.inputs)]
        text = f"{name}({', '.join('aba'[:len(op.inputs)])})"
        expected = op.forward(*inputs)
    model = build(parse_program(text), decls)
    value = model.function(*model.arg_values)
    np.testing.assert_allclose(np.asarray(value.numpy(), dtype=float),
                               np.asarray(expected, dtype=float), rtol=1e-12)


@pytest.mark.parametrize("alias", sorted(set(REGISTRY) - set(ORDER)))
def test_every_alias_evaluates_like_its_function(alias):
    op = REGISTRY[alias]
    a, b = _sample_inputs(op)
    args = ", ".join("ab"[:len(op.inputs)])
    decls = Declarations()
    decls.add("arg", "a", a)
    decls.add("arg", "b", b)
    by_alias = build(parse_program(f"{alias}({args})"), decls)
    by_name = build(parse_program(f"{op.name}({args})"), decls)
    np.testing.assert_array_equal(by_alias.function(*by_alias.arg_values).numpy(),
                                  by_name.function(*by_name.arg_values).numpy())


def test_reductions_take_axis_and_keepdims():
    _, value = run("sum(x, axis=0, keepdims=True)", arg=["x=[[1, 2], [3, 4]]"])
    np.testing.assert_array_equal(value.numpy(), [[4.0, 6.0]])
    _, value = run("mean(x, 1)", arg=["x=[[1, 2], [3, 4]]"])
    np.testing.assert_array_equal(value.numpy(), [1.5, 3.5])


def test_array_literals_of_expressions_are_differentiable():
    model, value = run("v = [x, 2 * x, x ^ 2]; sum(v)", arg=["x=3"])
    assert value.numpy() == 3 + 6 + 9
    [grad] = gc.gradients_function(model.function)(*model.arg_values)
    assert grad.numpy() == 1 + 2 + 6


def test_slicing_gradients_flow_back():
    model, _ = run("sum(x[1:3] * 2) + x[0]", arg=["x=[1, 2, 3, 4]"])
    [grad] = gc.gradients_function(model.function)(*model.arg_values)
    np.testing.assert_array_equal(grad.numpy(), [1.0, 2.0, 2.0, 0.0])


def test_where_differentiates_both_branches_as_the_readme_says():
    # docs/python-api.md: where(x > 0, log(x), 0) has gradient nan at 0 (0 * inf, as TensorFlow);
    # the double-where idiom keeps the unused branch finite: gradients 0, 0, 1/2.
    from gradcli.run.modes import run_mode
    x = ["x=[-1, 0, 2]"]
    single = build(parse_program("sum(where(x > 0, log(x), 0))"),
                   Declarations.from_options(arg=x))
    with np.errstate(all="ignore"):  # the nan is the point here
        gradient = run_mode("grad", single).gradients[0].gradient
    assert np.isnan(gradient[1]) and gradient[0] == 0.0 and gradient[2] == 0.5
    double = build(parse_program("sum(where(x > 0, log(where(x > 0, x, 1)), 0))"),
                   Declarations.from_options(arg=x))
    assert run_mode("grad", double).gradients[0].gradient.tolist() == [0.0, 0.0, 0.5]
