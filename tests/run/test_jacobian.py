"""Issue 11: ``gradcli jacobian`` and ``tape.jacobian(..., experimental_use_pfor=...)``.

Truths: sympy's ``jacobian`` of the same expression and central differences written out
here in numpy.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from typer.testing import CliRunner

from cli_process import run

import gradcli as gc
from gradcli.cli.app import app


def jacobian_json(*args) -> dict:
    result = CliRunner().invoke(app, ["jacobian", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def numeric_jacobian(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of a numpy function: shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(f(x))
    out = np.empty(y.shape + x.shape)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = h
        out[(Ellipsis,) + idx] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * h)
    return out


def test_jacobian_of_a_vector_target_matches_sympy():
    out = jacobian_json("[x*y, sin(x), x^2 + y^3]", "--arg", "x=1.5", "--arg", "y=-0.5")
    x, y = sp.symbols("x y", real=True)
    truth = sp.Matrix([x * y, sp.sin(x), x ** 2 + y ** 3]).jacobian([x, y]).subs(
        {x: 1.5, y: -0.5})
    truth = np.array(truth.tolist(), dtype=float)
    assert out["mode"] == "jacobian"
    assert [j["name"] for j in out["jacobians"]] == ["x", "y"]
    assert all(j["shape"] == [3] for j in out["jacobians"])
    np.testing.assert_allclose([j["jacobian"] for j in out["jacobians"]], truth.T,
                               rtol=1e-15)
    np.testing.assert_allclose(out["value"], [-0.75, np.sin(1.5), 2.25 - 0.125], rtol=1e-15)


def test_jacobian_shape_is_target_shape_then_source_shape():
    w = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    x = np.array([0.7, -1.1, 0.4])
    out = jacobian_json("tanh(W @ x)", "--var", f"W={w.tolist()}", "--arg",
                        f"x={x.tolist()}", "--wrt", "x,W")
    jx, jw = out["jacobians"]
    assert (jx["name"], jx["shape"]) == ("x", [2, 3])
    assert (jw["name"], jw["shape"]) == ("W", [2, 2, 3])
    np.testing.assert_allclose(jx["jacobian"], numeric_jacobian(lambda v: np.tanh(w @ v), x),
                               atol=1e-9)
    np.testing.assert_allclose(jw["jacobian"], numeric_jacobian(lambda m: np.tanh(m @ x), w),
                               atol=1e-9)


def test_scalar_target_jacobian_is_the_gradient():
    out = jacobian_json("sum(x^3)", "--arg", "x=[1, 2]")
    assert out["jacobians"][0]["jacobian"] == [3.0, 12.0]
    assert out["jacobians"][0]["shape"] == [2]


@pytest.mark.slow
def test_frozen_variables_are_not_default_sources_but_can_be_named():
    out = jacobian_json("c * x", "--frozen", "c=3", "--arg", "x=2")
    assert [j["name"] for j in out["jacobians"]] == ["x"]
    out = jacobian_json("c * x", "--frozen", "c=3", "--arg", "x=2", "--wrt", "c")
    assert out["jacobians"] == [{"name": "c", "jacobian": 2.0, "shape": [],
                                 "connected": True}]


def test_unconnected_source_gives_zeros():
    out = jacobian_json("[x, 2*x]", "--arg", "x=1", "--arg", "y=[1, 2, 3]")
    j = out["jacobians"][1]
    assert j == {"name": "y", "jacobian": [[0.0] * 3] * 2, "shape": [2, 3],
                 "connected": False}


@pytest.mark.parametrize("mode", ["rev", "fwd", "auto"])
def test_every_mode_gives_the_same_jacobian(mode):
    out = jacobian_json("[x*y, x/y]", "--arg", "x=3", "--arg", "y=2", "--mode", mode)
    assert [j["jacobian"] for j in out["jacobians"]] == [[2.0, 0.5], [3.0, -0.75]]


def test_plain_prints_value_then_each_jacobian_flattened():
    result = CliRunner().invoke(app, ["jacobian", "[x*y, x]", "--arg", "x=3", "--arg", "y=2",
                                      "--plain"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["6.0 3.0", "2.0 1.0", "3.0 0.0"]


def test_human_output_shows_sources_and_shapes():
    result = CliRunner().invoke(app, ["jacobian", "[x*y, x]", "--arg", "x=3", "--arg",
                                      "y=2"])
    assert result.exit_code == 0, result.output
    assert "jacobian" in result.stdout and "(2,)" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["x", "--arg", "x=1", "--mode", "sideways"], "--mode must be one of"),
    (["x", "--arg", "x=1", "--wrt", "z"], "unknown source 'z'"),
    (["x < 1", "--arg", "x=0"], "boolean"),
    (["1 + 2"], "needs something to differentiate"),
])
def test_bad_jacobian_input_is_one_message_and_exit_2(args, words):
    result = run("jacobian", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert words in result.stderr


@pytest.mark.slow
def test_check_passes_and_compares_every_entry():
    result = run("jacobian", "[x*y, sin(x)*W[0,1]]", "--arg", "x=0.5", "--arg", "y=2",
                 "--var", "W=[[1, 2]]", "--wrt", "x,y,W", "--check", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    check = out["check"]
    assert check["verdict"] == "passed"
    assert [g["name"] for g in check["gradients"]] == ["x", "y", "W"]
    for g, j in zip(check["gradients"], out["jacobians"]):
        assert g["status"] == "ok"
        assert np.shape(g["symbolic"]) == tuple(j["shape"])
        assert np.shape(g["numeric"]) == tuple(j["shape"])


def test_check_finds_a_wrong_rule_in_one_output(monkeypatch):
    from gradcli.engine.core import table
    wrong = table.REGISTRY["sin"].replace(vjps=(lambda m, g, ans, x: g * m.sin(x),))
    monkeypatch.setitem(table.REGISTRY, "sin", wrong)
    result = CliRunner().invoke(app, ["jacobian", "[x*y, sin(x)]", "--arg", "x=0.5", "--arg",
                                      "y=2", "--check", "--json"])
    assert result.exit_code == 1, result.output
    statuses = [g["status"] for g in json.loads(result.stdout)["check"]["gradients"]]
    assert statuses == ["mismatch", "ok"]


# ---------------------------------------------------------------------------------------
# The library: experimental_use_pfor is accepted
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("use_pfor", [True, False])
def test_tape_jacobian_accepts_experimental_use_pfor(use_pfor):
    x = gc.constant([0.3, -1.2, 2.0])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = gc.sin(x) * gc.sum(x)
    j = tape.jacobian(y, x, experimental_use_pfor=use_pfor, parallel_iterations=4)
    truth = numeric_jacobian(lambda v: np.sin(v) * np.sum(v), x.numpy())
    np.testing.assert_allclose(j.numpy(), truth, atol=1e-9)


def test_batch_jacobian_accepts_experimental_use_pfor():
    x = gc.constant([[1.0, 2.0], [3.0, 4.0]])
    with gc.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    j = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    assert j.numpy().tolist() == [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]


# ---------------------------------------------------------------------------------------
# compare's jacobian row
# ---------------------------------------------------------------------------------------
def test_compare_adds_a_jacobian_row_for_a_vector_target():
    result = CliRunner().invoke(app, ["compare", "w*x", "--var", "w=[1, 2]", "--arg", "x=3",
                                      "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    row = out["jacobian"]
    assert row["value"] == [3.0, 6.0]
    # jacobian's default sources: the trainable variables, as the tape watches them
    assert [(j["name"], j["jacobian"]) for j in row["jacobians"]] == [
        ("w", [[3.0, 0.0], [0.0, 3.0]])]
    # the four APIs give the gradient of the sum, the row each element's
    assert out["tape"]["gradients"][0]["gradient"] == np.sum(row["jacobians"][0]["jacobian"],
                                                             axis=0).tolist()
    human = CliRunner().invoke(app, ["compare", "w*x", "--var", "w=[1, 2]", "--arg", "x=3"])
    assert "tf.GradientTape.jacobian" in human.stdout


def test_compare_has_no_jacobian_row_for_a_scalar_target():
    result = CliRunner().invoke(app, ["compare", "w*x", "--var", "w=2", "--arg", "x=3",
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert "jacobian" not in json.loads(result.stdout)


@pytest.mark.slow
def test_check_of_a_target_without_elements_has_nothing_to_check():
    result = run("jacobian", "x", "--arg", "x=zeros((0,))", "--check", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["jacobians"][0]["shape"] == [0, 0]
    assert out["check"]["verdict"] == "nothing to check"


@pytest.mark.slow
def test_large_finite_difference_results_arrive_while_sympy_runs_to_its_limit():
    import time

    from gradcli.check.higher import _both
    from gradcli.check.numeric import NumericGradient, numeric_in_worker

    def job(deadline):
        # far more than a pipe holds (64 KiB): the worker waits until someone reads
        big = np.arange(200_000, dtype=float)
        return {"x": NumericGradient("x", "central", value=big, error=big * 0)}

    numeric = numeric_in_worker([job], ["x"], timeout=1.0)
    sym, num = _both(numeric, lambda: time.sleep(2.0) or {})
    assert num["x"].value is not None
    assert num["x"].value.shape == (200_000,)
