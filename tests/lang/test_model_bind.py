"""``Model.bind`` (issue 12): the same built program evaluated at other values of its
declared names, which is how ``--at`` runs a chunk of rows."""
import warnings

import numpy as np
import pytest

import gradcli as gc
from gradcli.errors import InputError, UnknownNameError
from gradcli.lang import Declarations, build, parse_program
from gradcli.run.modes import run_mode


def model_of(text, **options):
    return build(parse_program(text), Declarations.from_options(**options))


def test_bind_replaces_declared_values_and_bind_nothing_restores_them():
    model = model_of("w * x + c", var=["w=2"], arg=["x=5"], frozen=["c=1"])
    assert float(model.function(*model.arg_values)) == 11.0
    model.bind({"x": 7.0, "c": 10.0})
    assert float(model.function(*model.arg_values)) == 24.0
    out = run_mode("value-grad", model)
    assert float(out.value) == 24.0 and [float(g.gradient) for g in out.gradients] == [7.0]
    model.bind({})
    assert float(model.function(*model.arg_values)) == 11.0


def test_bound_variables_are_new_trainable_variables_with_the_declared_name():
    model = model_of("w ** 2", var=["w=3"])
    first = model.variables["w"]
    model.bind({"w": np.array(4.0)})
    assert model.variables["w"] is not first
    assert model.variables["w"].trainable and model.variables["w"].name == "w"
    assert float(run_mode("implicit", model).gradients[0].gradient) == 8.0


def test_program_variables_are_made_again_from_bound_values():
    model = model_of("v = Variable(w * 2); v * x", var=["w=1"], arg=["x=3"])
    model.bind({"w": 5.0})
    out = run_mode("value-grad", model)
    assert float(out.value) == 30.0
    # v's initial value reads w's value (not the variable: no gradient reaches w)
    assert [(g.name, float(g.gradient)) for g in out.gradients] == [("v", 3.0)]


def test_bind_takes_a_name_declared_without_a_value():
    model = model_of("x * 2", arg=["x"])
    with pytest.raises(InputError, match="--arg x has no value"):
        model.function(*model.arg_values)
    assert float(model.bind({"x": 4.0}).function(*model.arg_values)) == 8.0


def test_bind_refuses_names_that_are_not_declared_outside():
    model = model_of("v = Variable(1.0); v * x", arg=["x=3"])
    with pytest.raises(UnknownNameError, match="'y' is not a declared name"):
        model.bind({"y": 1.0})
    with pytest.raises(InputError, match="declared in the program"):
        model.bind({"v": 1.0})


def test_bind_runs_inside_vectorized_map_with_per_row_results():
    model = model_of("(1 - x)^2 + 100*(y - x^2)^2", var=["x", "y=1"])

    def one(example):
        out = run_mode("value-grad", model.bind(example))
        return out.value, [g.gradient for g in out.gradients]
    xs = np.array([1.0, 2.0, -1.2])
    with warnings.catch_warnings():
        # (vectorized_map says when it runs row by row: not what is tested here)
        warnings.simplefilter("ignore", RuntimeWarning)
        value, grads = gc.vectorized_map(one, {"x": xs})
    np.testing.assert_allclose(value.numpy(), (1 - xs) ** 2 + 100 * (1 - xs ** 2) ** 2)
    np.testing.assert_allclose(grads[0].numpy(), -2 * (1 - xs) - 400 * xs * (1 - xs ** 2))
    np.testing.assert_allclose(grads[1].numpy(), 200 * (1 - xs ** 2))
