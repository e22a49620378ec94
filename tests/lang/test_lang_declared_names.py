"""Declared names as gradient sources, shadowed constants, and refusals before any work.

A declared name (``--var``, ``--frozen``, ``--arg``, ``Variable(...)``, ``constant(...)``)
denotes the declared value as a source in every mode, whatever the program later binds to
the name; what the tree and the declarations decide is refused before a file is read.
Expected values are derived by hand in each test's comment.
"""
import numpy as np
import pytest

from gradcli.errors import InputError, ModeError, UnknownNameError
from gradcli.lang import Declarations, build, parse_program
from gradcli.run.modes import ModeOptions, run_mode


def outcome(text, mode, options=None, **decls):
    model = build(parse_program(text), Declarations.from_options(**decls))
    return run_mode(mode, model, options)


def grads(out):
    return {g.name: (None if g.gradient is None else float(g.gradient)) for g in out.gradients}


# --- a rebound declared name is still the declared source -------------------------------
def test_tape_default_source_of_a_rebound_variable_is_the_declared_variable():
    # y = (2w)^2, dy/dw = 8w = 8 at w = 1
    out = outcome("w = w*2; y = w^2", "tape", var=["w=1"])
    assert grads(out) == {"w": 8.0}
    assert float(out.value) == 4.0
    assert not any("watched nothing" in note for note in out.notes)


def test_tape_watch_of_a_rebound_argument_differentiates_the_declared_argument():
    # y = (x + 1)^2, dy/dx = 2(x + 1) = 6 at x = 2
    out = outcome("x = x + 1; y = x^2", "tape", ModeOptions(watch=["x"]), arg=["x=2"])
    assert grads(out) == {"x": 6.0}
    assert out.gradients[0].kind == "argument"


@pytest.mark.parametrize("mode, options, expected", [
    # y = sin(3w) * x with w rebound twice: dy/dw = 3 cos(3w) x, dy/dx = sin(3w)
    ("tape", ModeOptions(wrt=["w", "x"], watch=["x"]),
     {"w": 3 * np.cos(1.5) * 2.0, "x": np.sin(1.5)}),
    ("grad", ModeOptions(params=["x"]), {"x": np.sin(1.5)}),
    ("implicit", None, {"w": 3 * np.cos(1.5) * 2.0}),
    ("value-grad", None, {"w": 3 * np.cos(1.5) * 2.0}),
])
def test_declared_names_are_the_declared_sources_in_every_mode(mode, options, expected):
    out = outcome("w = w * 3; w = sin(w); x = x * w", mode, options,
                  var=["w=0.5"], arg=["x=2"])
    got = grads(out)
    assert list(got) == list(expected)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-14)


def test_rebinding_a_declared_name_to_another_declared_name_keeps_both_sources():
    # x = w (an alias), then w = 5x: y = 5w + x_declared... y = w_new * x_new = (5w) * w
    # dy/dw = 10 w = 10 at w = 1; the declared x is unconnected (None)
    out = outcome("x = w; w = 5 * x; y = w * x", "tape", ModeOptions(wrt=["w", "x"],
                                                                     watch=["x"]),
                  var=["w=1"], arg=["x=7"])
    assert grads(out) == {"w": 10.0, "x": None}


def test_program_variable_rebound_is_still_the_variable():
    # w = Variable(1.5); y = (w * 2)^2: dy/dw = 8w = 12
    for mode in ("tape", "implicit", "value-grad"):
        assert grads(outcome("w = Variable(1.5); w = w * 2; y = w ^ 2", mode)) == {"w": 12.0}


def test_program_constant_can_be_watched_as_a_source():
    # c = constant(3); y = c * x: dy/dc = x = 4
    out = outcome("c = constant(3.0); c = c * 1; y = c * x", "tape",
                  ModeOptions(watch=["c"]), arg=["x=4"])
    assert grads(out) == {"c": 4.0}
    assert out.gradients[0].kind == "constant"


def test_an_intermediate_source_is_its_last_value():
    # h = 6x at its last assignment, y = h^2: dy/dh = 2h = 12 at x = 1
    out = outcome("h = x * 2; h = h * 3; y = h ^ 2", "tape",
                  ModeOptions(wrt=["h"], watch=["x"]), arg=["x=1"])
    assert grads(out) == {"h": 12.0}
    assert out.gradients[0].kind == "intermediate"


def test_default_tape_sources_are_declared_names_not_their_aliases():
    # a = w is the variable itself: it is listed once, under its declared name
    out = outcome("a = w; y = a * 3", "tape", var=["w=2"])
    assert grads(out) == {"w": 3.0}


def test_model_source_is_the_declared_tensor():
    model = build(parse_program("x = x * 2; w = w + x; y = w"),
                  Declarations.from_options(var=["w=1"], arg=["x=3"]))
    model.function(*model.arg_values)
    assert model.source("x") is model.arg_values[0]
    assert model.source("w") is model.variables["w"]
    assert float(model.values["w"].numpy()) == 7.0  # the name's last value stays visible


# --- declared constants shadow pi, e, inf everywhere ------------------------------------
@pytest.mark.parametrize("text, decls, value", [
    ("w * sum([pi])", {"var": ["w=1"], "arg": ["pi=2"]}, 2.0),
    ("w * sum([e, 1])", {"var": ["w=1"], "arg": ["e=5"]}, 6.0),
    ("w * sum([[inf, 1], [2, 3]])", {"var": ["w=1"], "arg": ["inf=4"]}, 10.0),
    ("w * sum([pi, e])", {"var": ["w=1", "pi=2"]}, 2.0 + np.e),
])
def test_declared_constant_names_shadow_constants_inside_array_literals(text, decls, value):
    out = outcome(text, "value-grad", **decls)
    assert float(out.value) == value
    assert grads(out)["w"] == value


def test_array_literal_of_builtin_constants_is_still_folded():
    out = outcome("w * sum([pi, e])", "value-grad", var=["w=1"])
    assert float(out.value) == np.pi + np.e


def test_declared_constant_name_shadows_inside_a_variable_value():
    # v's value may use variables declared before it: the --var pi, not 3.14159...
    model = build(parse_program("v = Variable([pi, 1]); y = sum(v)"),
                  Declarations.from_options(var=["pi=2"]))
    assert model.variables["v"].numpy().tolist() == [2.0, 1.0]
    with pytest.raises(UnknownNameError, match="not 'pi'"):
        model = build(parse_program("v = Variable([pi, 1]); y = sum(v)"),
                      Declarations.from_options(arg=["pi=2"]))
        model.function(*model.arg_values)


# --- refusals come before any work ------------------------------------------------------
@pytest.fixture
def unread_file(tmp_path):
    """A declaration whose file is valid to look at (type, size) but bad to read: any
    attempt to read it fails, so a refusal that mentions it came after reading."""
    path = tmp_path / "data.csv"
    path.write_text("1, 2\n3, 4\n5, oops\n")
    return f"x=@{path}"


@pytest.mark.parametrize("text, mode, options, error, words", [
    ("sum(sin(x)*exp(-x**2))", "value-grad", None, ModeError, "No trainable variables"),
    ("sum(sin(x)*exp(-x**2))", "implicit", None, ModeError, "No trainable variables"),
    ("w = x; sum(w)", "value-grad", None, ModeError, "No trainable variables"),
    ("sum(x)", "tape", ModeOptions(wrt=["y"]), UnknownNameError, "unknown source 'y'"),
    ("sum(x)", "tape", ModeOptions(watch=["y"]), UnknownNameError, "name to watch 'y'"),
    ("h = x; sum(h)", "tape", ModeOptions(watch=["h"]), InputError, "computed by the program"),
    ("sum(x)", "tape", ModeOptions(unconnected="some"), InputError, "--unconnected"),
    ("sum(x)", "grad", ModeOptions(params=["y"]), UnknownNameError, "unknown argument 'y'"),
    ("sum(x)", "grad", ModeOptions(params=["3"]), InputError, "out of range"),
])
def test_mode_refusals_come_before_files_are_read(unread_file, text, mode, options, error,
                                                  words):
    decls = Declarations.from_options(var=["w=1"], arg=[unread_file])
    model = build(parse_program(text), decls)
    with pytest.raises(error, match=words):
        run_mode(mode, model, options)
    assert not decls["x"].loaded


def test_unknown_names_are_refused_before_files_are_read(unread_file):
    decls = Declarations.from_options(arg=[unread_file])
    with pytest.raises(UnknownNameError, match="undeclared name 'y'"):
        build(parse_program("sum(x) + y"), decls)
    assert not decls["x"].loaded


def test_the_file_is_read_when_the_program_runs(unread_file):
    decls = Declarations.from_options(arg=[unread_file])
    model = build(parse_program("sum(x)"), decls)
    with pytest.raises(InputError, match="line 3: 'oops' is not a number"):
        run_mode("grad", model)


def test_a_variable_aliased_but_never_used_is_refused_when_run():
    # The tree cannot rule out a read of w (a = w), the run finds none: still a ModeError.
    with pytest.raises(ModeError, match="No trainable variables"):
        outcome("a = w; y = x * 2", "implicit", var=["w=1"], arg=["x=1"])


@pytest.mark.parametrize("text, target", [("w", None), ("y = x * 2", "w"),
                                          ("a = +w; y = x", "a")])
def test_a_variable_returned_as_the_target_counts_as_read(text, target):
    model = build(parse_program(text), Declarations.from_options(var=["w=3"], arg=["x=1"]),
                  target=target)
    assert model.read_variables == ["w"]
    assert grads(run_mode("implicit", model)) == {"w": 1.0}


def test_read_variables_are_known_from_the_tree():
    model = build(parse_program("u = Variable(1.0); f = Variable(2.0, trainable=False)\n"
                                "w = x; y = u * f * w + v"),
                  Declarations.from_options(var=["w=1", "v=2", "z=3"], arg=["x=1"]))
    # w is rebound before it is read, z is never named; the frozen f is read too
    assert model.read_variables == ["v", "u", "f"]
    assert model.trainable == {"w": True, "v": True, "z": True, "u": True, "f": False}


@pytest.mark.parametrize("text", ["sum(x, axis=e)", "x[e]", "reshape(x, (e,))"])
def test_declared_constant_name_is_not_a_constant_in_static_places(text):
    from gradcli.errors import ArgumentError
    model = None
    with pytest.raises(ArgumentError, match="'e' is declared, so it is not a constant here"):
        model = build(parse_program(text), Declarations.from_options(arg=["x=[1, 2]", "e=0"]))
        model.function(*model.arg_values)
    assert model is None  # refused when the program is built, before it runs


@pytest.mark.parametrize("text, words", [("sum(x, axis=pi)", "axis of sum must be an integer"),
                                         ("x[inf]", "an index must be an integer")])
def test_builtin_constants_in_static_places_are_still_checked(text, words):
    from gradcli.errors import ArgumentError
    with pytest.raises(ArgumentError, match=words):
        build(parse_program(text), Declarations.from_options(arg=["x=[1, 2]"]))
