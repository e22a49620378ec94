"""gradcli minimize never reports a non-minimum as done (issue 20, part 5): without --steps
a run goes on to convergence (the gradient's norm at most --tol) under a cap and exits 1
when it is not reached; the default optimizer (lbfgs, or gd without scipy) reaches the
minimum of textbook problems; --steps N is a training run (exit 0, a warning when the
gradient is not small); nan/inf settings are exit 2; a failed run names the point it
returns. Truths: closed forms, numpy.linalg.solve/lstsq, scipy.optimize.minimize (BFGS on
numpy code), Newton's method in numpy, the SGD rule iterated by hand."""
import json
import os
import pty
import subprocess
import sys

import numpy as np
import pytest
import scipy.optimize

from cli_process import COMMAND
from cli_process import run as gradcli
from gradcli.engine import Variable
from gradcli.run.optimize import minimize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROSENBROCK = "(1 - x)^2 + 100*(y - x^2)^2"


def in_process(*args):
    """``gradcli ARGS`` in this process (no start-up cost): (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from gradcli.cli.app import app
    out = CliRunner().invoke(app, [str(a) for a in args])
    return out.exit_code, out.stdout, out.stderr


def text(a) -> str:
    """An array as program text (repr round-trips: the CLI reads exactly these numbers)."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 0:
        return repr(float(a))
    return "[" + ", ".join(text(row) for row in a) + "]"


@pytest.fixture
def without_scipy(monkeypatch):
    """scipy not installed, as far as gradcli can tell (its import fails)."""
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)


# ---------------------------------------------------------------------------------------
# The example
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_default_run_of_x2_minus_4x_ends_converged_at_2():
    # d/dx (x^2 - 4x) = 2x - 4 = 0 at x = 2, where the loss is -4. Adam at lr 0.001 for
    # 1000 steps stopped at x = 0.88 and exited 0.
    out = gradcli("minimize", "x^2 - 4*x", "--var", "x=0", "--json", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["converged"] is True and result["reason"] == "converged"
    assert abs(result["variables"][0]["value"] - 2.0) < 1e-8
    assert abs(result["loss"] - (-4.0)) < 1e-14
    assert result["optimizer"] == "lbfgs" and result["optimizer_default"] is True
    assert result["max_steps"] == 10_000 and result["tol"] == 1e-8


def test_python_default_run_converges_too():
    x = Variable(0.0, name="x")
    result = minimize(lambda: x * x - 4.0 * x)
    assert result.converged and result.optimizer == "lbfgs" and not result.training
    assert abs(float(x.numpy()) - 2.0) < 1e-8


# ---------------------------------------------------------------------------------------
# Textbook problems: the DEFAULT run (no --steps, no --optimizer) reaches the minimum
# ---------------------------------------------------------------------------------------
def newton(gradient, hessian, w, iterations=50):
    """Newton's method in numpy (a plain loop): the truth of a smooth convex problem."""
    for _ in range(iterations):
        w = w - np.linalg.solve(hessian(w), gradient(w))
    return w


def problem_quadratic_form():
    a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    b = np.array([1.0, -2.0, 3.0])
    return ("0.5 * sum(x * (A @ x)) - sum(b * x)",
            ["--var", "x=[0, 0, 0]", "--arg", f"A={text(a)}", "--arg", f"b={text(b)}"],
            {"x": np.linalg.solve(a, b)})


def problem_least_squares():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 3)), rng.normal(size=8)
    return ("sum((X @ w - y)^2)",
            ["--var", "w=[0, 0, 0]", "--arg", f"X={text(x)}", "--arg", f"y={text(y)}"],
            {"w": np.linalg.lstsq(x, y, rcond=None)[0]})


def problem_log_sum_exp_l2():
    a = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -2.0], [2.0, 1.0]])

    def f(w):
        z = a @ w
        return np.log(np.sum(np.exp(z))) + 0.5 * w @ w

    def g(w):
        p = np.exp(a @ w)
        return a.T @ (p / p.sum()) + w
    truth = scipy.optimize.minimize(f, np.zeros(2), jac=g, method="BFGS",
                                    options={"gtol": 1e-13}).x
    return ("logsumexp(A @ w) + 0.5 * sum(w^2)", ["--var", "w=[0, 0]", "--arg",
                                                  f"A={text(a)}"], {"w": truth})


def problem_logistic_regression():
    # labels that no line separates (a finite minimum): y = 1 where x0 + x1 + noise > 0
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 2))
    y = (x[:, 0] + x[:, 1] + rng.normal(scale=1.5, size=20) > 0).astype(float)
    design = np.c_[x, np.ones(20)]

    def gradient(v):
        p = 1 / (1 + np.exp(-design @ v))
        return design.T @ (p - y) / 20

    def hessian(v):
        p = 1 / (1 + np.exp(-design @ v))
        return design.T @ (design * (p * (1 - p))[:, None]) / 20
    truth = newton(gradient, hessian, np.zeros(3))
    return ("z = X @ w + b\nmean(softplus(z) - y * z)",
            ["--var", "w=[0, 0]", "--var", "b=0", "--arg", f"X={text(x)}", "--arg",
             f"y={text(y)}"], {"w": truth[:2], "b": truth[2]})


def problem_himmelblau_near_3_2():
    return ("(x^2 + y - 11)^2 + (x + y^2 - 7)^2", ["--var", "x=3.4", "--var", "y=1.6"],
            {"x": 3.0, "y": 2.0})


def problem_himmelblau_near_minus_3_8():
    def f(v):
        return (v[0] ** 2 + v[1] - 11) ** 2 + (v[0] + v[1] ** 2 - 7) ** 2

    def g(v):
        a, b = v[0] ** 2 + v[1] - 11, v[0] + v[1] ** 2 - 7
        return np.array([4 * a * v[0] + 2 * b, 2 * a + 4 * b * v[1]])
    truth = scipy.optimize.minimize(f, [-3.5, -3.0], jac=g, method="BFGS",
                                    options={"gtol": 1e-13}).x
    return ("(x^2 + y - 11)^2 + (x + y^2 - 7)^2", ["--var", "x=-3.5", "--var", "y=-3"],
            {"x": truth[0], "y": truth[1]})


PROBLEMS = {
    "x^2-4x": lambda: ("x^2 - 4*x", ["--var", "x=0"], {"x": 2.0}),
    "quadratic form": problem_quadratic_form,
    "least squares": problem_least_squares,
    "rosenbrock": lambda: (ROSENBROCK, ["--var", "x=-1.2", "--var", "y=1"],
                           {"x": 1.0, "y": 1.0}),
    "himmelblau (3, 2)": problem_himmelblau_near_3_2,
    "himmelblau (-3.78, -3.28)": problem_himmelblau_near_minus_3_8,
    "log-sum-exp + L2": problem_log_sum_exp_l2,
    "logistic regression": problem_logistic_regression,
}


def check_default_run(name: str, optimizer: str) -> None:
    program, declarations, truth = PROBLEMS[name]()
    code, stdout, stderr = in_process("minimize", program, *declarations, "--json")
    assert code == 0, stderr
    result = json.loads(stdout)
    assert result["converged"] is True and result["reason"] == "converged"
    assert result["optimizer"] == optimizer and result["optimizer_default"] is True
    values = {v["name"]: np.array(v["value"]) for v in result["variables"]}
    for variable, expected in truth.items():
        np.testing.assert_allclose(values[variable], expected, rtol=0, atol=1e-6,
                                   err_msg=f"{name}: {variable}")


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_default_run_converges_to_the_true_minimum_with_scipy(name):
    check_default_run(name, "lbfgs")


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_default_run_converges_to_the_true_minimum_without_scipy(name, without_scipy):
    # the truths are computed before scipy is hidden (a fixture runs first): gd here
    check_default_run(name, "gd")


@pytest.mark.parametrize("name", ["logistic regression", "rosenbrock"])
def test_float32_default_run_converges_at_its_own_default_tolerance(name):
    # float32's rounding stops the gradient near 1e-5 (the logistic loss: 2.4e-5), so
    # the default --tol of a float32 run is 1e-4, not float64's 1e-8 (not converged)
    program, declarations, truth = PROBLEMS[name]()
    code, stdout, stderr = in_process("minimize", program, *declarations, "--dtype",
                                      "float32", "--json")
    assert code == 0, stderr
    result = json.loads(stdout)
    assert result["converged"] is True and result["tol"] == 1e-4
    values = {v["name"]: np.array(v["value"]) for v in result["variables"]}
    for variable, expected in truth.items():
        np.testing.assert_allclose(values[variable], expected, rtol=0, atol=1e-3)


# ---------------------------------------------------------------------------------------
# Not converged within the cap: exit 1, "not converged", a hint; the point as it is
# ---------------------------------------------------------------------------------------
def test_unbounded_linear_loss_hits_the_cap_and_exits_1():
    code, stdout, stderr = in_process("minimize", "x", "--var", "x=1", "--max-steps", "100",
                                      "--json")
    assert code == 1
    assert stderr.startswith("error: not converged after 100 steps") and "\nhint: " in stderr
    assert "may have no minimum" in stderr
    result = json.loads(stdout)
    assert result["converged"] is False and result["reason"] == "max steps"
    x = result["variables"][0]["value"]
    assert result["loss"] == x and x < -1e6     # the loss of the point shown is x itself
    assert result["grad_norm"] == 1.0           # d/dx x = 1, never small


def test_tiny_cap_on_rosenbrock_is_not_converged_and_reports_the_point_it_stopped_at():
    code, stdout, stderr = in_process("minimize", ROSENBROCK, "--var", "x=-1.2", "--var",
                                      "y=1", "--max-steps", "5", "--plain")
    assert code == 1 and "not converged after 5 steps" in stderr and "hint: " in stderr
    loss, x, y = (float(v) for v in stdout.split())
    assert loss == pytest.approx((1 - x) ** 2 + 100 * (y - x * x) ** 2, rel=1e-15)
    assert abs(x - 1) > 1e-2   # not the minimum: that is what the exit code says


@pytest.mark.slow
def test_stalled_line_search_above_tol_is_not_converged():
    # scipy stops with "ABNORMAL" (no lower loss found) where the gradient is 1.5e-12:
    # above a --tol of 1e-13, so not converged (it exited 0 with scipy's message)
    out = gradcli("minimize", "@examples/regression.grad",
                  "--var", "W=@examples/data/W.csv", "--var", "b=@examples/data/b.csv",
                  "--arg", "X=@examples/data/X.csv", "--arg", "Y=@examples/data/Y.csv",
                  "--optimizer", "lbfgs", "--tol", "1e-13", "--json", cwd=ROOT)
    assert out.returncode == 1 and out.stderr.startswith("error: not converged")
    result = json.loads(out.stdout)
    assert result["converged"] is False and result["reason"] == "stalled"
    x = np.loadtxt(os.path.join(ROOT, "examples/data/X.csv"), delimiter=",")
    y = np.loadtxt(os.path.join(ROOT, "examples/data/Y.csv"), delimiter=",")
    values = {v["name"]: np.ravel(v["value"]) for v in result["variables"]}
    residual = x @ values["W"] + values["b"][0] - y
    gradient = np.r_[2 * x.T @ residual, 2 * residual.sum()] / len(y)   # by hand
    assert np.linalg.norm(gradient) > 1e-13
    assert result["grad_norm"] == pytest.approx(np.linalg.norm(gradient), rel=1e-3)


@pytest.mark.parametrize("hide_scipy", [False, True])
def test_loss_without_minimum_runs_off_and_reports_the_point_returned(hide_scipy,
                                                                       monkeypatch):
    if hide_scipy:
        monkeypatch.setitem(sys.modules, "scipy", None)
        monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    code, stdout, stderr = in_process("minimize", "-x^2", "--var", "x=1", "--json")
    assert code == 1
    result = json.loads(stdout)
    assert result["reason"] == "non-finite loss" and result["converged"] is False
    x = result["variables"][0]["value"]
    assert result["loss"] == -x * x and abs(result["loss"]) > 1e250   # that point's loss
    assert f"the output is the point of step {result['point_step']} " \
           f"(loss {result['loss']!r})" in stderr


# ---------------------------------------------------------------------------------------
# A diverged run names the point it returns
# ---------------------------------------------------------------------------------------
def test_diverged_run_reports_the_point_it_returns_and_its_step():
    # sgd at lr 0.01 on 50x^2 + y^4/4 from (100, 14.2): x jumps to 0 at the first step
    # (the loss falls from 5.1e5 to 1.1e4), then y grows until the loss is over 1e8
    # times the best: the returned point is step 1's, not the start or the last one.
    program = "50*x^2 + 0.25*y^4"
    code, stdout, stderr = in_process("minimize", program, "--var", "x=100", "--var",
                                      "y=14.2", "--optimizer", "sgd", "--lr", "0.01",
                                      "--json")
    assert code == 1
    result = json.loads(stdout)
    w, points, losses = np.array([100.0, 14.2]), [], []
    while True:   # the SGD rule by hand, stopped as documented (1e8 times the best + 1)
        points.append(w)
        losses.append(50 * w[0] ** 2 + 0.25 * w[1] ** 4)
        if losses[-1] > 1e8 * (abs(min(losses)) + 1):
            break
        w = w - 0.01 * np.array([100 * w[0], w[1] ** 3])
    best = int(np.argmin(losses))
    assert best == 1 and len(losses) == 6
    assert result["reason"] == "diverged" and result["steps"] == len(losses) - 1
    assert result["point_step"] == best
    np.testing.assert_allclose([v["value"] for v in result["variables"]], points[best],
                               rtol=1e-12, atol=1e-12)
    assert result["loss"] == pytest.approx(losses[best], rel=1e-12)
    assert result["history"][-1]["loss"] == pytest.approx(losses[-1], rel=1e-12)
    assert stderr == (f"error: the loss diverged (grew by more than 1e8 times the best loss) "
                      f"at step 5; the output is the point of step 1 (loss "
                      f"{result['loss']!r}) (try a smaller --lr)\n")


# ---------------------------------------------------------------------------------------
# --steps N: a training run (exit 0), with a warning when the gradient is not small
# ---------------------------------------------------------------------------------------
def test_explicit_steps_is_a_training_run_exit_0_with_a_warning():
    code, stdout, stderr = in_process("minimize", "x^2 - 4*x", "--var", "x=0",
                                      "--optimizer", "adam", "--steps", "100", "--json")
    assert code == 0
    result = json.loads(stdout)
    x = result["variables"][0]["value"]
    assert result["reason"] == "max steps" and result["max_steps"] is None
    assert result["grad_norm"] == pytest.approx(abs(2 * x - 4), rel=1e-15)  # by hand
    assert stderr.startswith(f"warning: the gradient norm at the result is "
                             f"{abs(2 * x - 4):.3g}, above --tol 1e-08")
    assert "drop --steps to run to convergence" in stderr


def test_explicit_steps_that_converge_have_no_warning():
    code, stdout, stderr = in_process("minimize", "x^2 - 4*x", "--var", "x=0", "--steps",
                                      "50", "--plain")
    assert code == 0 and stderr == ("note: the optimizer was lbfgs (the default: L-BFGS-B "
                                    "through scipy)\n")
    assert stdout == "-4.0\n2.0\n"


# ---------------------------------------------------------------------------------------
# Bad settings: exit 2
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("option, value", [("--tol", "nan"), ("--tol", "inf"),
                                           ("--lr", "nan"), ("--lr", "inf"),
                                           ("--momentum", "nan"), ("--momentum", "inf")])
def test_non_finite_settings_are_exit_2(option, value):
    code, stdout, stderr = in_process("minimize", "(w - 3)^2", "--var", "w=0",
                                      "--optimizer", "momentum", option, value)
    assert code == 2 and stdout == "" and option in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("args, message", [
    (["--lr", "0.1"], "--lr sets the step of sgd, momentum and adam; the default optimizer "
                      "here, lbfgs"),
    (["--steps", "5", "--max-steps", "9"], "not both"),
    (["--optimizer", "gd", "--lr", "0.1"], "--lr does not apply to gd"),
])
def test_settings_that_do_not_go_together_are_exit_2(args, message):
    code, stdout, stderr = in_process("minimize", "(w - 3)^2", "--var", "w=0", *args)
    assert code == 2 and stdout == "" and message in stderr


def test_python_api_refuses_nan_tolerance():
    from gradcli.errors import InputError
    w = Variable(1.0, name="w")
    with pytest.raises(InputError, match="--tol nan is not a finite number"):
        minimize(lambda: w * w, tol=float("nan"))


# ---------------------------------------------------------------------------------------
# What the command says: the progress line goes away, --plain's help says what it prints
# ---------------------------------------------------------------------------------------
def shown(raw: str) -> list:
    """The lines a terminal shows of ``raw``: a carriage return goes back to the start of
    the line, and what follows overwrites it."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        cells: list = []
        for part in line.split("\r"):
            cells[:len(part)] = part
        lines.append("".join(cells).rstrip())
    return lines


@pytest.mark.slow
def test_progress_line_is_cleared_when_the_run_ends():
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(COMMAND + ["minimize", ROSENBROCK, "--var", "x=-1.2", "--var",
                                       "y=1", "--plain"], stdout=subprocess.PIPE,
                            stderr=terminal, cwd=ROOT)
    os.close(terminal)
    raw = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:   # the terminal closed: the process has ended
            break
        if not chunk:
            break
        raw += chunk
    stdout = proc.stdout.read()
    proc.wait(timeout=60)
    os.close(controller)
    assert proc.returncode == 0 and len(stdout.split()) == 3
    raw_text = raw.decode()
    assert "|grad|" in raw_text    # a progress line was drawn on the terminal ...
    assert not any("|grad|" in line for line in shown(raw_text))   # ... and is gone


def test_plain_help_says_what_minimize_prints():
    code, stdout, _ = in_process("minimize", "--help")
    assert code == 0
    words = " ".join(stdout.split())
    assert "Print bare numbers: the loss, then one line per trained variable" in words
    assert "value (if any), then one line per gradient" not in words
