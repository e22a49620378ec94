"""Issue 20 (8): what ``jacobian`` and ``hessian`` differentiate with respect to.

By default the trainable variables the program reads (as ``implicit``, ``value-grad`` and
``minimize`` take them), else the arguments; ``--wrt`` names any of them, data too; the
output says which. Truths: shapes (the sum of the chosen sources' sizes), central
differences written out here in numpy, and the single-point commands for ``--at``.
"""
from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from central_differences import numeric_hessian

from gradcli.cli.app import app

RNG = np.random.default_rng(20)
X = RNG.standard_normal((6, 3))
Y = (RNG.uniform(size=6) > 0.5).astype(float)
W = np.array([0.3, -0.2, 0.5])
LOGISTIC = "p = sigmoid(X @ W + b); -mean(Y*log(p) + (1-Y)*log(1-p))"
DATA = ["--arg", f"X={X.tolist()}", "--arg", f"Y={Y.tolist()}"]
PARAMETERS = ["--var", f"W={W.tolist()}", "--var", "b=0.1"]


def invoke(*args, env=None):
    result = CliRunner().invoke(app, [*map(str, args)], env=env)
    assert result.exit_code == 0, result.output
    return result


def json_of(*args) -> dict:
    return json.loads(invoke(*args, "--json").stdout)


def logistic_loss(z: np.ndarray, x=X, y=Y) -> float:
    p = 1 / (1 + np.exp(-(x @ z[:3] + z[3])))
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def numeric_jacobian(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    y = np.asarray(f(x))
    out = np.empty(y.shape + x.shape)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = h
        out[(Ellipsis,) + idx] = (f(x + step) - f(x - step)) / (2 * h)
    return out


# ---------------------------------------------------------------------------------------
# hessian
# ---------------------------------------------------------------------------------------
def test_hessian_takes_the_trainable_variables_not_the_data():
    out = json_of("hessian", LOGISTIC, *DATA, *PARAMETERS)
    assert out["labels"] == ["W[0]", "W[1]", "W[2]", "b"]  # 3 + 1, not 18 + 6 + 3 + 1
    assert out["sources"] == ["W", "b"] and out["sources_from"] == "variables"
    truth = numeric_hessian(logistic_loss, np.append(W, 0.1))
    np.testing.assert_allclose(out["hessian"], truth, atol=1e-7)


def test_hessian_says_which_sources_it_took():
    text = " ".join(invoke("hessian", LOGISTIC, *DATA, *PARAMETERS,
                           env={"COLUMNS": "200"}).stdout.split())
    assert ("with respect to the trainable variables W, b (declared with --var); the "
            "arguments X, Y are held fixed") in text
    plain = invoke("hessian", LOGISTIC, *DATA, *PARAMETERS, "--plain")
    assert "note: with respect to the trainable variables W, b" in plain.stderr
    assert len(plain.stdout.splitlines()) == 1 + 1 + 4 + 1 + 1  # value, gradient, rows...


def test_hessian_takes_the_arguments_when_no_variable_is_declared():
    out = json_of("hessian", "x^2*y", "--arg", "x=2", "--arg", "y=3")
    assert out["sources"] == ["x", "y"] and out["sources_from"] == "arguments"
    assert out["hessian"] == [[6.0, 4.0], [4.0, 0.0]]  # by hand: 2y, 2x; 2x, 0
    text = invoke("hessian", "x^2*y", "--arg", "x=2", "--arg", "y=3").stdout
    assert "with respect to the arguments x, y" in " ".join(text.split())


def test_wrt_takes_the_data_too():
    out = json_of("hessian", LOGISTIC, *DATA, *PARAMETERS, "--wrt", "b,X")
    assert len(out["labels"]) == 1 + X.size
    assert out["sources"] == ["b", "X"] and out["sources_from"] == "wrt"

    def f(z):
        return logistic_loss(np.append(W, z[0]), x=z[1:].reshape(X.shape))
    truth = numeric_hessian(f, np.append(0.1, X.ravel()))
    np.testing.assert_allclose(out["hessian"], truth, atol=1e-6)
    assert "named by --wrt" in " ".join(invoke("hessian", LOGISTIC, *DATA, *PARAMETERS,
                                               "--wrt", "b,X").stdout.split())


def test_a_variable_of_the_program_is_a_trainable_variable_too():
    out = json_of("hessian", "w = Variable(2.0); w^3 * x", "--arg", "x=3")
    assert out["hessian"] == [[6 * 2.0 * 3.0]] and out["sources"] == ["w"]
    text = " ".join(invoke("hessian", "w = Variable(2.0); w^3 * x", "--arg", "x=3")
                    .stdout.split())
    assert "trainable variable w (declared with Variable(...) in the program)" in text


def test_a_frozen_or_unread_variable_leaves_the_arguments():
    out = json_of("hessian", "c * x^2", "--frozen", "c=3", "--arg", "x=2")
    assert out["hessian"] == [[6.0]] and out["sources"] == ["x"]
    result = invoke("hessian", "x^3", "--var", "w=1", "--arg", "x=2", "--plain")
    assert result.stdout.splitlines()[2] == "12.0"  # d2/dx2 x^3 = 6x
    assert "the trainable variable w is not read by the program" in result.stderr


# ---------------------------------------------------------------------------------------
# jacobian
# ---------------------------------------------------------------------------------------
def test_jacobian_takes_the_trainable_variables_then_wrt_overrides():
    w = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    x = np.array([0.7, -1.1, 0.4])
    args = ["tanh(W @ x)", "--var", f"W={w.tolist()}", "--arg", f"x={x.tolist()}"]
    out = json_of("jacobian", *args)
    [jw] = out["jacobians"]
    assert jw["name"] == "W" and jw["shape"] == [2, 2, 3]
    np.testing.assert_allclose(jw["jacobian"], numeric_jacobian(lambda m: np.tanh(m @ x), w),
                               atol=1e-9)
    assert out["sources"] == ["W"] and out["sources_from"] == "variables"
    out = json_of("jacobian", *args, "--wrt", "x")
    assert out["sources_from"] == "wrt" and [j["name"] for j in out["jacobians"]] == ["x"]
    np.testing.assert_allclose(out["jacobians"][0]["jacobian"],
                               numeric_jacobian(lambda v: np.tanh(w @ v), x), atol=1e-9)
    text = " ".join(invoke("jacobian", *args, env={"COLUMNS": "200"}).stdout.split())
    assert "with respect to the trainable variable W (declared with --var)" in text


def test_jacobian_takes_the_arguments_when_no_variable_is_declared():
    out = json_of("jacobian", "[x*y, x]", "--arg", "x=2", "--arg", "y=3")
    assert out["sources"] == ["x", "y"] and out["sources_from"] == "arguments"
    assert [j["jacobian"] for j in out["jacobians"]] == [[3.0, 1.0], [2.0, 0.0]]


# ---------------------------------------------------------------------------------------
# --at: the same choice at every row
# ---------------------------------------------------------------------------------------
def test_at_rows_take_the_same_sources_as_the_single_point_command(tmp_path):
    points = tmp_path / "x.csv"
    points.write_text("x\n0.5\n-1.25\n")
    program = "w^2 * x^3 + w"
    for command in ("hessian", "jacobian"):
        rows = [json.loads(line) for line in invoke(
            command, program, "--var", "w=1.5", "--arg", "x", "--at", f"@{points}",
            "--json").stdout.splitlines()]
        for row, x in zip(rows, (0.5, -1.25)):
            single = json_of(command, program, "--var", "w=1.5", "--arg", f"x={x}")
            assert {k: v for k, v in row.items() if k != "row"} == single
            assert row["sources"] == ["w"]
        plain = invoke(command, program, "--var", "w=1.5", "--arg", "x", "--at",
                       f"@{points}", "--plain")
        assert "note: with respect to the trainable variable w" in plain.stderr
    # by hand: d2/dw2 (w^2 x^3 + w) = 2 x^3
    rows = [json.loads(line) for line in invoke(
        "hessian", program, "--var", "w=1.5", "--arg", "x", "--at", f"@{points}",
        "--json").stdout.splitlines()]
    assert [row["hessian"] for row in rows] == [[[2 * 0.5 ** 3]], [[2 * (-1.25) ** 3]]]
