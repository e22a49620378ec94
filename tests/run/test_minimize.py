"""gradcli minimize and gradcli.run.optimize: optimisers on the engine against independent
truths (the known minimum, numpy.linalg.lstsq, the Keras update rules written out by hand
in numpy)."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from cli_process import run_here

from gradcli.engine import Variable
from gradcli.run.optimize import minimize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROSENBROCK = "(1 - x)^2 + 100*(y - x^2)^2"


def gradcli(*args, env=None):
    """The command in this process (cli_process.run_here); the tests of Ctrl-C and of
    the imports start their own processes."""
    return run_here(*args, env=env, cwd=ROOT)


def rosenbrock_variables():
    x, y = Variable(-1.2, name="x"), Variable(1.0, name="y")
    return x, y, lambda: (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def test_lbfgs_reaches_rosenbrock_minimum_in_under_100_iterations():
    x, y, f = rosenbrock_variables()
    result = minimize(f, optimizer="lbfgs", steps=100, tol=1e-10)
    assert result.converged and result.steps < 100
    assert abs(float(x.numpy()) - 1) < 1e-6 and abs(float(y.numpy()) - 1) < 1e-6


@pytest.mark.slow
def test_adam_reaches_rosenbrock_minimum_within_1e_3_with_documented_settings():
    # docs/minimize.md: --optimizer adam --lr 0.02 --steps 10000
    x, y, f = rosenbrock_variables()
    minimize(f, optimizer="adam", lr=0.02, steps=10000)
    assert abs(float(x.numpy()) - 1) < 1e-3 and abs(float(y.numpy()) - 1) < 1e-3


def _keras_adam(w, grad, steps, lr, b1=0.9, b2=0.999, eps=1e-7):
    m = v = np.zeros_like(w)
    for t in range(1, steps + 1):
        g = grad(w)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        w = w - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return w


def test_adam_follows_keras_update_rule_step_by_step():
    target = np.array([1.0, -2.0, 3.0])
    w = Variable(np.zeros(3), name="w")
    from gradcli import engine as gc
    minimize(lambda: gc.FUNCTIONS["sum"]((w - target) ** 2), optimizer="adam", lr=0.1, steps=7,
             tol=0.0)
    expected = _keras_adam(np.zeros(3), lambda u: 2 * (u - target), 7, 0.1)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-13, atol=1e-15)


def test_momentum_follows_keras_sgd_velocity_rule():
    from gradcli import engine as gc
    w = Variable(np.array([3.0, -1.0]), name="w")
    result = minimize(lambda: gc.FUNCTIONS["sum"](w ** 4), optimizer="momentum", lr=0.001,
                      momentum=0.9, steps=5, tol=0.0)
    u, velocity = np.array([3.0, -1.0]), np.zeros(2)
    for _ in range(5):
        velocity = 0.9 * velocity - 0.001 * 4 * u ** 3
        u = u + velocity
    # the best point seen is reported: here the last, as the loss falls at every step
    losses = [loss for _, loss, _ in result.history]
    assert losses == sorted(losses, reverse=True)
    np.testing.assert_allclose(w.numpy(), u, rtol=1e-13)


SEED_DATA = [(5.0, 7.0, 1.0), (1.0, 2.0, 0.5), (-3.0, 4.0, 2.0), (2.0, -1.0, -1.5)]


def seed_least_squares():
    a = np.array([[x1, x2] for x1, x2, _ in SEED_DATA])
    t = np.array([t for _, _, t in SEED_DATA])
    return a, t, np.linalg.lstsq(a, t, rcond=None)[0]


def seed_program():
    x1 = "[" + ", ".join(str(r[0]) for r in SEED_DATA) + "]"
    x2 = "[" + ", ".join(str(r[1]) for r in SEED_DATA) + "]"
    t = "[" + ", ".join(str(r[2]) for r in SEED_DATA) + "]"
    return ["@examples/weighted_sum.grad", "--arg", f"x1={x1}", "--arg", f"x2={x2}",
            "--target", "loss"], t


@pytest.mark.slow
def test_seed_weighted_sum_with_squared_error_trains_to_lstsq_with_lbfgs(tmp_path):
    program = tmp_path / "train.grad"
    program.write_text(open(os.path.join(ROOT, "examples/weighted_sum.grad")).read()
                       + "loss = mean((s - t) ^ 2)\n")
    _, t_text = seed_program()
    args = seed_program()[0][1:]
    # --tol 1e-9: a largest gradient component this loss reaches (it stalls at 2.7e-10,
    # where scipy stops with "success" but the gradient test of 1e-12 does not hold)
    out = gradcli("minimize", f"@{program}", *args, "--arg", f"t={t_text}",
                  "--optimizer", "lbfgs", "--tol", "1e-9", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    _, _, w = seed_least_squares()
    values = {v["name"]: v["value"] for v in result["variables"]}
    assert abs(values["w1"] - w[0]) < 1e-8 and abs(values["w2"] - w[1]) < 1e-8
    assert result["converged"] is True and result["mode"] == "minimize"


@pytest.mark.slow
def test_seed_weighted_sum_trains_to_lstsq_with_adam(tmp_path):
    program = tmp_path / "train.grad"
    program.write_text(open(os.path.join(ROOT, "examples/weighted_sum.grad")).read()
                       + "loss = mean((s - t) ^ 2)\n")
    _, t_text = seed_program()
    args = seed_program()[0][1:]
    out = gradcli("minimize", f"@{program}", *args, "--arg", f"t={t_text}",
                  "--optimizer", "adam", "--lr", "0.05", "--steps", "5000", "--tol", "1e-10",
                  "--plain")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    _, _, w = seed_least_squares()
    np.testing.assert_allclose([float(lines[1]), float(lines[2])], w, atol=1e-6)


@pytest.mark.slow
def test_regression_example_minimised_from_csv_matches_lstsq():
    # --tol 1e-10: a gradient norm this loss reaches (at 1e-12 the line search stalls at
    # 1.5e-12, the rounding of float64 here: not converged, exit 1)
    out = gradcli("minimize", "@examples/regression.grad",
                  "--var", "W=@examples/data/W.csv", "--var", "b=@examples/data/b.csv",
                  "--arg", "X=@examples/data/X.csv", "--arg", "Y=@examples/data/Y.csv",
                  "--optimizer", "lbfgs", "--tol", "1e-10", "--json")
    assert out.returncode == 0, out.stderr
    values = {v["name"]: np.array(v["value"]) for v in json.loads(out.stdout)["variables"]}
    x = np.loadtxt(os.path.join(ROOT, "examples/data/X.csv"), delimiter=",")
    y = np.loadtxt(os.path.join(ROOT, "examples/data/Y.csv"), delimiter=",")
    solution = np.linalg.lstsq(np.column_stack([x, np.ones(len(x))]), y, rcond=None)[0]
    np.testing.assert_allclose(values["W"].ravel(), solution[:3], atol=1e-7)
    np.testing.assert_allclose(values["b"].ravel(), solution[3:], atol=1e-7)


@pytest.mark.slow
def test_json_has_the_documented_schema_and_history():
    out = gradcli("minimize", "(w - 3)^2", "--var", "w=0", "--optimizer", "sgd",
                  "--lr", "0.25", "--steps", "3", "--tol", "0", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) >= {"mode", "loss", "variables", "steps", "converged", "reason",
                           "history"}
    # w: 0 -> 1.5 -> 2.25 -> 2.625 (each step halves the distance to 3)
    assert result["variables"] == [{"name": "w", "value": 2.625}]
    assert [h["loss"] for h in result["history"]] == [9.0, 2.25, 0.5625, 0.140625]
    assert [h["grad_norm"] for h in result["history"]] == [6.0, 3.0, 1.5, 0.75]
    assert result["steps"] == 3 and result["reason"] == "max steps"
    assert result["converged"] is False


@pytest.mark.slow
def test_arguments_and_frozen_variables_stay_fixed():
    out = gradcli("minimize", "(w - a)^2 + (v - 1)^2", "--var", "w=0", "--frozen", "v=5",
                  "--arg", "a=2", "--optimizer", "lbfgs", "--plain")
    assert out.returncode == 0, out.stderr
    loss, w = (float(t) for t in out.stdout.split())  # only trainable variables are shown
    # v stayed 5 and a stayed 2: the loss left is (5 - 1)^2 at w = 2
    assert abs(w - 2) < 1e-7 and abs(loss - 16) < 1e-12


@pytest.mark.slow
def test_saved_variables_feed_back_into_another_command(tmp_path):
    out = gradcli("minimize", ROSENBROCK, "--var", "x=-1.2", "--var", "y=1",
                  "--optimizer", "lbfgs", "--tol", "1e-10", "--save", str(tmp_path / "run"))
    assert out.returncode == 0, out.stderr
    back = gradcli("value-grad", ROSENBROCK, "--var", f"x=@{tmp_path}/run/x.npy",
                   "--var", f"y=@{tmp_path}/run/y.npy", "--json")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["value"] < 1e-20


@pytest.mark.slow
def test_nan_loss_stops_with_message_and_last_finite_point():
    # log(w) with sgd at lr 1: w = 0.5 - 1/0.5 = -1.5, where log is nan
    out = gradcli("minimize", "log(w)", "--var", "w=0.5", "--optimizer", "sgd", "--lr", "1",
                  "--json")
    assert out.returncode == 1
    assert "nan or infinite" in out.stderr
    result = json.loads(out.stdout)
    assert result["reason"] == "non-finite loss"
    assert result["loss"] == np.log(0.5) and result["variables"][0]["value"] == 0.5
    assert result["history"][-1]["loss"] == "nan" and result["steps"] == 1


@pytest.mark.slow
def test_divergence_is_detected_not_looped_on():
    out = gradcli("minimize", ROSENBROCK, "--var", "x=-1.2", "--var", "y=1",
                  "--optimizer", "sgd", "--lr", "1", "--steps", "100000", "--json")
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["reason"] in ("diverged", "non-finite loss") and result["steps"] < 10
    assert result["variables"] == [{"name": "x", "value": -1.2}, {"name": "y", "value": 1.0}]


@pytest.mark.slow
def test_ctrl_c_stops_after_the_step_reports_best_point_and_exits_130():
    env = dict(os.environ, PYTHONPATH=ROOT)
    # adam at its default rate: a run that is still going after 4 s (lbfgs is done in 38)
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "minimize", ROSENBROCK,
                             "--var", "x=-1.2", "--var", "y=1", "--optimizer", "adam",
                             "--steps", "100000000", "--tol", "0", "--json"],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    time.sleep(4.0)  # start-up (under 1 s) and the first steps
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["reason"] == "interrupted"
    assert result["loss"] == min(h["loss"] for h in result["history"])
    assert result["loss"] < 24.2   # it trained: the start's loss is 24.2


@pytest.mark.slow
def test_lbfgs_without_scipy_names_the_install_command():
    code = ("import sys; sys.modules['scipy'] = None; sys.modules['scipy.optimize'] = None; "
            "from gradcli.cli.app import main; sys.argv = ['gradcli', 'minimize', 'w^2', "
            "'--var', 'w=1', '--optimizer', 'lbfgs']; main()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert "python -m pip install 'gradcli[optimize]'" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args, message", [
    (["--optimizer", "newton"], "unknown optimizer"),
    (["--optimizer", "lbfgs", "--lr", "0.1"], "--lr does not apply"),
    (["--plot", "loss.gif"], "unsupported image type"),
])
def test_bad_options_are_one_message_and_exit_2(args, message):
    out = gradcli("minimize", "w^2", "--var", "w=1", *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_non_scalar_target_is_refused():
    out = gradcli("minimize", "w * [1, 2]", "--var", "w=1")
    assert out.returncode == 2 and "scalar target" in out.stderr


@pytest.mark.slow
def test_loss_plot_is_a_png(tmp_path):
    path = tmp_path / "loss.png"
    out = gradcli("minimize", "(w - 3)^2", "--var", "w=0", "--plot", str(path))
    assert out.returncode == 0, out.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_human_output_shows_loss_variables_and_loss_curve():
    out = gradcli("minimize", "(w - 3)^2", "--var", "w=0", "--optimizer", "sgd",
                  "--lr", "0.25", "--steps", "3", "--tol", "0")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["minimize", "sgd,", "lr", "0.25"]
    assert lines[1].startswith("max steps after 3 steps (")
    assert lines[2] == "loss: 0.140625" and "2.625" in out.stdout
    assert "loss curve: █▆▃▁  (step 0 to 3, log scale)" in out.stdout
    assert "[" not in out.stdout   # no markup shown as text


@pytest.mark.slow
@pytest.mark.parametrize("program, args", [
    ("x^2", ["--arg", "x=1"]),
    ("a = Variable(1.0, trainable=False); a^2", []),
])
def test_no_trainable_variable_is_one_message_and_exit_2(program, args):
    out = gradcli("minimize", program, *args)
    assert out.returncode == 2 and "No trainable variables" in out.stderr
    assert "--var NAME=VALUE" in out.stderr and "ValueError" not in out.stderr


@pytest.mark.slow
def test_nan_at_the_start_says_so_and_exits_1():
    out = gradcli("minimize", "log(w)", "--var", "w=-1", "--plain")
    assert out.returncode == 1 and "at the starting point" in out.stderr
    assert out.stdout == "nan\n-1.0\n"


@pytest.mark.slow
def test_lbfgs_on_a_loss_without_minimum_is_a_non_finite_loss_not_converged():
    # -w^2 runs off to -inf: scipy stops with success ("relative reduction") at a loss of
    # -2.2e307, where the gradient -2w is anything but small
    out = gradcli("minimize", "-w^2", "--var", "w=1", "--optimizer", "lbfgs", "--json")
    assert out.returncode == 1, out.stderr
    result = json.loads(out.stdout)
    assert result["converged"] is False and result["reason"] == "non-finite loss"
    w = result["variables"][0]["value"]
    assert result["loss"] == -w * w and abs(2 * w) > 1e150   # the gradient, by hand
    assert result["grad_norm"] == abs(2 * w) and result["point_step"] == result["steps"]
    assert out.stderr == (f"error: the loss ran off towards -inf (the last finite loss is "
                          f"{result['loss']!r}) at step {result['steps']}; the output is the "
                          f"point of step {result['steps']} (loss {result['loss']!r}) (the "
                          "function may have no minimum)\n")


def test_sgd_running_off_to_infinity_has_the_same_exit_code_as_lbfgs():
    out = gradcli("minimize", "-exp(w)", "--var", "w=1", "--optimizer", "sgd", "--lr", "10",
                  "--plain")
    assert out.returncode == 1
    assert out.stderr.startswith("error: the loss became nan or infinite at step ")


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_zero_steps_make_no_step_for_every_optimizer(optimizer):
    out = gradcli("minimize", "(w - 3)^2", "--var", "w=1", "--optimizer", optimizer,
                  "--steps", "0", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["steps"] == 0 and result["variables"] == [{"name": "w", "value": 1.0}]
    assert result["history"] == [{"step": 0, "loss": 4.0, "grad_norm": 4.0}]
    assert result["converged"] is False and result["reason"] == "max steps"


@pytest.mark.slow
def test_zero_steps_at_the_minimum_is_converged_for_lbfgs():
    out = gradcli("minimize", "(w - 3)^2", "--var", "w=3", "--optimizer", "lbfgs",
                  "--steps", "0", "--json")
    result = json.loads(out.stdout)
    assert result["steps"] == 0 and result["converged"] is True
    assert result["reason"] == "converged"
