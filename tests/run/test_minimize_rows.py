"""gradcli minimize --at: training a one-row program on the rows of a data file, against
independent truths: numpy.linalg.lstsq, the mean-loss gradient written out by hand in
numpy, and the documented shuffling recipe (numpy.random.default_rng(seed).permutation,
one per epoch) replayed in the test."""
import itertools
import json
import os
import warnings

import numpy as np
import pytest
from cli_process import run_here

from gradcli.lang.evaluate import build
from gradcli.lang.parser import parse_program
from gradcli.lang.values import Declarations
from gradcli.run.optimize import ProgramRows, batch_order, minimize_rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOSS = "(w*x + b - y)^2"
MODEL = ["--var", "w=0", "--var", "b=0", "--arg", "x", "--arg", "y"]
N = 200


def gradcli(*args):
    """The command in this process (cli_process.run_here): what minimize computes and
    prints is tested here, not the process."""
    return run_here(*args, cwd=ROOT)


def make_data():
    """200 rows from w = 2.5, b = -1 plus noise (x in [0, 2]: every x > 0, so that the
    gradient's sum has no cancellation and rounding stays at a few ulp)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0.0, 2.0, N)
    y = 2.5 * x - 1.0 + rng.normal(0.0, 0.1, N)
    return x, y


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    x, y = make_data()
    path = tmp_path_factory.mktemp("rows") / "lin.csv"
    # repr round-trips: the file holds exactly the arrays the test computes with
    path.write_text("x,y\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(x, y)))
    return str(path), x, y


def lstsq(x, y):
    return np.linalg.lstsq(np.c_[x, np.ones_like(x)], y, rcond=None)[0]


def train(path, *options):
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}", *options, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    values = {v["name"]: v["value"] for v in result["variables"]}
    return result, values["w"], values["b"]


def mean_gradient(w, b, x, y):
    """d/dw and d/db of mean((w*x + b - y)^2), by hand."""
    r = w * x + b - y
    return np.mean(2 * r * x), np.mean(2 * r)


# ---------------------------------------------------------------------------------------
# Against least squares
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_full_batch_lbfgs_equals_lstsq_to_1e_8(data):
    path, x, y = data
    result, w, b = train(path, "--optimizer", "lbfgs", "--tol", "1e-12")
    np.testing.assert_allclose([w, b], lstsq(x, y), rtol=0, atol=1e-8)
    assert result["converged"] and result["batch_size"] == N and result["rows"] == N
    assert "epochs" not in result  # lbfgs counts iterations, not passes
    # the loss is the mean squared error of the fit
    np.testing.assert_allclose(result["loss"], np.mean((w * x + b - y) ** 2), rtol=1e-14)


@pytest.mark.slow
@pytest.mark.parametrize("optimizer,options", [
    ("adam", ["--lr", "0.05", "--epochs", "100"]),
    ("sgd", ["--lr", "0.05", "--epochs", "200"]),
])
def test_mini_batch_training_gets_within_documented_tolerance_of_lstsq(data, optimizer,
                                                                        options):
    # docs/minimize.md: --batch-size 20 with these settings ends within 0.02 of lstsq (the noise of
    # mini-batches at a constant rate keeps it from the exact minimum)
    path, x, y = data
    result, w, b = train(path, "--optimizer", optimizer, "--batch-size", "20", "--seed", "3",
                         *options)
    np.testing.assert_allclose([w, b], lstsq(x, y), rtol=0, atol=0.02)
    assert result["batch_size"] == 20 and result["reason"] == "max epochs"
    assert result["steps"] == result["epochs"] * 10


@pytest.mark.slow
def test_regression_example_rows_match_lstsq():
    out = gradcli("minimize", "@examples/regression_row.grad", "--var", "w=[0,0,0]",
                  "--var", "b=0", "--arg", "x", "--arg", "y",
                  "--at", "@examples/data/rows.csv", "--optimizer", "lbfgs", "--tol", "1e-10",
                  "--json")
    # --tol 1e-10: a gradient norm this loss reaches (at 1e-11 the line search stalls at
    # 5.4e-11, the rounding of float64 over these rows: not converged, exit 1)
    assert out.returncode == 0, out.stderr
    table = np.loadtxt(os.path.join(ROOT, "examples/data/rows.csv"), delimiter=",",
                       skiprows=2)
    expected = lstsq_many(table[:, :3], table[:, 3])
    values = {v["name"]: v["value"] for v in json.loads(out.stdout)["variables"]}
    np.testing.assert_allclose(values["w"] + [values["b"]], expected, rtol=0, atol=1e-8)


@pytest.mark.slow
def test_default_full_batch_run_converges_to_lstsq(data):
    # no --optimizer, no --steps: a run to convergence (lbfgs); adam at lr 0.001 for 1000
    # updates stopped far from the fit and exited 0
    path, x, y = data
    result, w, b = train(path)
    assert result["converged"] is True and result["optimizer"] == "lbfgs"
    assert result["optimizer_default"] is True and result["max_steps"] == 10_000
    np.testing.assert_allclose([w, b], lstsq(x, y), rtol=0, atol=1e-8)


@pytest.mark.slow
def test_default_mini_batch_run_is_a_training_run_with_a_warning(data):
    path, x, y = data
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}", "--batch-size", "20",
                  "--seed", "1", "--json")
    assert out.returncode == 0
    result = json.loads(out.stdout)
    assert result["optimizer"] == "adam" and result["steps"] == 1000
    assert result["max_steps"] is None and result["converged"] is False
    values = {v["name"]: v["value"] for v in result["variables"]}
    gw, gb = mean_gradient(values["w"], values["b"], x, y)
    assert result["grad_norm"] == pytest.approx(np.hypot(gw, gb), rel=1e-12)
    assert out.stderr.startswith(f"warning: the gradient norm at the result is "
                                 f"{np.hypot(gw, gb):.3g}, above --tol 1e-08; training on "
                                 "mini-batches ends after its updates")


def lstsq_many(features, y):
    return np.linalg.lstsq(np.c_[features, np.ones(len(y))], y, rcond=None)[0]


@pytest.mark.slow
def test_frozen_values_from_the_rows_train_like_arguments(data):
    path, x, y = data
    out = gradcli("minimize", LOSS, "--var", "w=0", "--var", "b=0", "--frozen", "x",
                  "--arg", "y", "--at", f"@{path}", "--optimizer", "lbfgs", "--tol", "1e-12",
                  "--plain")
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose([float(v) for v in out.stdout.split()[1:]], lstsq(x, y),
                               rtol=0, atol=1e-8)


# ---------------------------------------------------------------------------------------
# One step, by hand
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_one_sgd_step_on_the_full_batch_equals_numpy_mean_gradient_step(data):
    path, x, y = data
    result, w, b = train(path, "--optimizer", "sgd", "--lr", "0.1", "--steps", "1",
                         "--batch-size", str(N))
    gw, gb = mean_gradient(0.0, 0.0, x, y)
    np.testing.assert_allclose([w, b], [-0.1 * gw, -0.1 * gb], rtol=1e-15, atol=0)
    assert result["history"][0]["loss"] == pytest.approx(np.mean(y ** 2), rel=1e-15)
    np.testing.assert_allclose(result["history"][0]["grad_norm"], np.hypot(gw, gb),
                               rtol=1e-15)


@pytest.mark.slow
def test_rows_whose_arrays_together_go_over_the_limits_train_in_pieces_alike():
    """2,000 rows of a loss with 10,000-element arrays per row: 2 x 10^7 elements for the
    batch at once, over the limits of one evaluation, so the batch is computed in pieces
    whose shares of the mean add up: the value and gradient are numpy's."""
    x, y = np.linspace(0, 2, 2000), np.linspace(1, -1, 2000)
    program = "mean((w * x * linspace(0, 1, 10000) + b - y)^2)"
    model = build(parse_program(program),
                  Declarations.from_options(var=["w=0.5", "b=0.25"], arg=["x", "y"]))
    rows = ProgramRows(model, {"x": x, "y": y}, ["w", "b"])
    value, pairs = rows.value_and_gradients()
    assert rows.piece_rows < 2000  # it was cut
    t = np.linspace(0, 1, 10000)
    r = 0.5 * np.outer(x, t) + 0.25 - y[:, None]  # residuals, row by column
    assert value == pytest.approx(np.mean(np.mean(r ** 2, axis=1)), rel=1e-13)
    grads = {p.name: float(np.asarray(g)) for g, p in pairs}
    assert grads["w"] == pytest.approx(np.mean(np.mean(2 * r * np.outer(x, t), axis=1)),
                                       rel=1e-12)
    assert grads["b"] == pytest.approx(np.mean(np.mean(2 * r, axis=1)), rel=1e-12)


def test_mini_batch_steps_use_exactly_the_rows_of_the_seeds_order(data):
    path, x, y = data
    lr, size, seed = 0.1, 16, 11
    result, w, b = train(path, "--optimizer", "sgd", "--lr", str(lr), "--steps", "14",
                         "--batch-size", str(size), "--seed", str(seed))
    # The documented order (docs/minimize.md, optimize.batch_order), replayed without gradcli:
    # one permutation of the rows per epoch from one default_rng(seed); 200 rows in
    # batches of 16 are 12 full batches and one of 8, then the next epoch's permutation.
    rng = np.random.default_rng(seed)
    first, second = rng.permutation(N), rng.permutation(N)
    batches = [first[k:k + size] for k in range(0, N, size)] + [second[:size]]
    u, c = 0.0, 0.0
    for rows in batches:
        gw, gb = mean_gradient(u, c, x[rows], y[rows])
        u, c = u - lr * gw, c - lr * gb
    np.testing.assert_allclose([w, b], [u, c], rtol=1e-13)
    assert [h["rows"] for h in result["history"]] == [16] * 12 + [8, 16, N]
    assert [h["epoch"] for h in result["history"]] == [1] * 13 + [2, 2]
    assert result["epochs"] == 1 and result["seed"] == seed and result["shuffle"] is True


def test_batch_order_is_one_default_rng_permutation_per_epoch():
    got = list(itertools.islice(batch_order(7, 3, seed=5), 6))
    rng = np.random.default_rng(5)
    p, q = rng.permutation(7), rng.permutation(7)
    expected = [(1, p[:3]), (1, p[3:6]), (1, p[6:]), (2, q[:3]), (2, q[3:6]), (2, q[6:])]
    assert [(e, r.tolist()) for e, r in got] == [(e, r.tolist()) for e, r in expected]


def test_batch_order_without_shuffle_or_with_a_full_batch_is_data_order():
    plain = [r.tolist() for _, r in itertools.islice(batch_order(5, 2, 1, shuffle=False), 3)]
    assert plain == [[0, 1], [2, 3], [4]]
    full = [(e, r.tolist()) for e, r in itertools.islice(batch_order(4, 9, seed=1), 2)]
    assert full == [(1, [0, 1, 2, 3]), (2, [0, 1, 2, 3])]


def test_no_shuffle_trains_on_the_rows_in_file_order(data):
    path, x, y = data
    _, w, b = train(path, "--optimizer", "sgd", "--lr", "0.1", "--steps", "2",
                     "--batch-size", "50", "--no-shuffle")
    u, c = 0.0, 0.0
    for rows in (slice(0, 50), slice(50, 100)):
        gw, gb = mean_gradient(u, c, x[rows], y[rows])
        u, c = u - 0.1 * gw, c - 0.1 * gb
    np.testing.assert_allclose([w, b], [u, c], rtol=1e-13)


@pytest.mark.slow
def test_same_seed_same_run_and_the_drawn_seed_repeats_it(data):
    path, _, _ = data
    options = ("--optimizer", "adam", "--lr", "0.05", "--batch-size", "32", "--epochs", "3")
    first, _, _ = train(path, *options)
    again, _, _ = train(path, *options, "--seed", str(first["seed"]))
    assert again == first


# ---------------------------------------------------------------------------------------
# The batch as one vectorized_map call; the loss goes down
# ---------------------------------------------------------------------------------------
def program_rows(x, y):
    model = build(parse_program(LOSS), Declarations.from_options(var=["w=0", "b=0"],
                                                                 arg=["x", "y"]))
    return ProgramRows(model, {"x": x, "y": y}, ["w", "b"])


def test_batch_gradient_is_one_vectorized_call_without_fallback():
    x, y = make_data()
    rows = program_rows(x, y)
    rows.parameters["w"].assign(0.7)
    rows.parameters["b"].assign(-0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the loop fallback warns: here it must not
        loss, pairs = rows.value_and_gradients(np.arange(40, 90))
    assert rows.fell_back is False
    gw, gb = mean_gradient(0.7, -0.2, x[40:90], y[40:90])
    np.testing.assert_allclose([float(g) for g, _ in pairs], [gw, gb], rtol=1e-14)
    np.testing.assert_allclose(loss, np.mean((0.7 * x[40:90] - 0.2 - y[40:90]) ** 2),
                               rtol=1e-15)
    assert [p.name for _, p in pairs] == ["w", "b"]


def test_epoch_losses_fall_from_first_epoch_to_last():
    x, y = make_data()
    result = minimize_rows(program_rows(x, y), optimizer="sgd", lr=0.05, epochs=30,
                           batch_size=20, seed=0)
    losses = [loss for _, loss, _ in result.history[:-1]]
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    # a fixed seed makes this deterministic; the fall is by orders of magnitude, not a
    # near thing (the last epoch sits at the noise floor, 0.01)
    assert last < first / 50
    assert result.history[-1][1] == pytest.approx(np.mean(
        (result.values["w"] * x + result.values["b"] - y) ** 2), rel=1e-14)
    assert result.history[-1][1] < 0.02


# ---------------------------------------------------------------------------------------
# Bad inputs: one message, exit 2
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_source_setting_a_trainable_variable_is_refused(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("x,y,w\n1,2,3\n")
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}")
    assert out.returncode == 2 and out.stdout == ""
    assert "sets w, a trainable variable" in out.stderr and "--frozen w" in out.stderr
    assert "Traceback" not in out.stderr


def test_lbfgs_with_batch_size_is_refused(data):
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{data[0]}", "--optimizer", "lbfgs",
                  "--batch-size", "20")
    assert out.returncode == 2 and "lbfgs trains on the full batch only" in out.stderr


def test_batch_size_zero_is_refused(data):
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{data[0]}", "--batch-size", "0")
    assert out.returncode == 2 and "--batch-size" in out.stderr and out.stdout == ""


@pytest.mark.slow
def test_batch_size_above_the_rows_is_a_full_batch_with_a_note(data):
    path, _, _ = data
    options = ("--optimizer", "sgd", "--lr", "0.1", "--steps", "3")
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}", *options, "--batch-size",
                  "1000", "--json")
    assert out.returncode == 0
    assert "note: --batch-size 1000 is more than the 200 rows" in out.stderr
    full, _, _ = train(path, *options)
    assert json.loads(out.stdout) == full


@pytest.mark.slow
def test_missing_column_for_an_argument_without_value_is_refused(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("x\n1\n2\n")
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}")
    assert out.returncode == 2
    assert "y is declared without a value but not set by the source" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "x,y\n", "# nothing\n\n"])
def test_empty_source_is_refused(tmp_path, text):
    path = tmp_path / "d.csv"
    path.write_text(text)
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}")
    assert out.returncode == 2 and "no rows (the source is empty)" in out.stderr


@pytest.mark.slow
def test_bad_row_names_the_file_and_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("x,y\n1,2\n3,abc\n")
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}")
    assert out.returncode == 2 and out.stdout == ""
    assert f"{path}:3: 'abc' is not a number (column 2)" in out.stderr


@pytest.mark.parametrize("args,message", [
    (["--steps", "5", "--epochs", "2"], "not both"),
    (["--optimizer", "lbfgs", "--epochs", "2"], "use --steps N, not --epochs"),
])
def test_conflicting_data_options_are_refused(data, args, message):
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{data[0]}", *args)
    assert out.returncode == 2 and message in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("option", [["--batch-size", "4"], ["--epochs", "2"], ["--seed", "1"],
                                    ["--no-shuffle"]])
def test_data_options_without_at_are_refused(option):
    out = gradcli("minimize", "(w - 1)^2", "--var", "w=0", *option)
    assert out.returncode == 2 and "works with --at SOURCE" in out.stderr


@pytest.mark.slow
def test_trainable_variable_without_a_starting_value_is_refused(data):
    out = gradcli("minimize", LOSS, "--var", "w", "--var", "b=0", "--arg", "x", "--arg", "y",
                  "--at", f"@{data[0]}")
    assert out.returncode == 2 and "--var w has no value" in out.stderr


@pytest.mark.slow
def test_a_row_target_that_is_not_one_number_is_refused(data):
    out = gradcli("minimize", "[w*x, b - y]", *MODEL, "--at", f"@{data[0]}")
    assert out.returncode == 2 and "one number per data row" in out.stderr


def test_loop_fallback_gives_the_same_batch_gradient_and_says_so():
    x, y = make_data()
    rows = program_rows(x, y)
    original = rows.model.function

    def data_dependent(xv, yv):
        float(xv)  # a batched value read as a plain one: the map runs row by row
        return original(xv, yv)
    rows.model.function = data_dependent
    rows.parameters["w"].assign(0.7)
    loss, pairs = rows.value_and_gradients(np.arange(5, 25))
    assert rows.fell_back is True
    gw, gb = mean_gradient(0.7, 0.0, x[5:25], y[5:25])
    np.testing.assert_allclose([float(g) for g, _ in pairs], [gw, gb], rtol=1e-14)
    np.testing.assert_allclose(loss, np.mean((0.7 * x[5:25] - y[5:25]) ** 2), rtol=1e-14)


def test_mini_batch_divergence_stops_at_the_last_good_point_exit_1(data):
    path, x, y = data
    out = gradcli("minimize", LOSS, *MODEL, "--at", f"@{path}", "--optimizer", "sgd",
                  "--lr", "50", "--batch-size", "10", "--steps", "1000", "--seed", "0",
                  "--json")
    assert out.returncode == 1 and "error: the loss" in out.stderr
    result = json.loads(out.stdout)
    assert result["reason"] in ("diverged", "non-finite loss")
    assert np.isfinite(result["loss"]) and result["steps"] < 1000
    values = {v["name"]: v["value"] for v in result["variables"]}
    # the reported loss is the mean over every row at the reported point
    np.testing.assert_allclose(result["loss"], np.mean((values["w"] * x + values["b"] - y)
                                                       ** 2), rtol=1e-14)


def test_readme_mini_batch_example_ends_near_lstsq():
    out = gradcli("minimize", "@examples/regression_row.grad", "--var", "w=[0,0,0]",
                  "--var", "b=0", "--arg", "x", "--arg", "y",
                  "--at", "@examples/data/rows.csv", "--batch-size", "32", "--epochs", "50",
                  "--lr", "0.05", "--seed", "0", "--plain")
    assert out.returncode == 0, out.stderr
    table = np.loadtxt(os.path.join(ROOT, "examples/data/rows.csv"), delimiter=",",
                       skiprows=2)
    got = [float(v) for v in out.stdout.split()[1:]]
    np.testing.assert_allclose(got, lstsq_many(table[:, :3], table[:, 3]), atol=0.02)


def test_data_above_the_memory_limit_is_refused_before_training():
    import io

    from gradcli.errors import InputError
    from gradcli.io.points import Slot, read_all
    slots = {"x": Slot("arg", None), "y": Slot("arg", None)}
    text = "x,y\n" + "1,2\n" * 5
    _, values = read_all("-", slots, 10, stdin=io.StringIO(text))
    assert values["x"].tolist() == [1.0] * 5 and values["y"].shape == (5,)
    with pytest.raises(InputError, match="more than 8 numbers; minimize holds its data"):
        read_all("-", slots, 8, stdin=io.StringIO(text))


@pytest.mark.slow
def test_npz_rows_train_as_the_csv_rows(data, tmp_path):
    path, x, y = data
    npz = tmp_path / "d.npz"
    np.savez(npz, x=x, y=y)
    options = ("--optimizer", "adam", "--lr", "0.05", "--batch-size", "25", "--epochs", "4",
               "--seed", "2")
    from_npz, _, _ = train(npz, *options)
    from_csv, _, _ = train(path, *options)
    assert from_npz == from_csv


def test_epochs_times_batches_over_the_update_limit_is_refused_before_training():
    # 10^8 epochs of 200 batches of one row: 2 * 10^10 updates ran without end; --steps
    # is capped at 10^8, and so is --epochs times the batches per epoch (ceil(200 / 1))
    out = gradcli("minimize", "@examples/regression_row.grad", "--var", "w=[0,0,0]",
                  "--var", "b=0", "--arg", "x", "--arg", "y",
                  "--at", "@examples/data/rows.csv", "--epochs", "100000000",
                  "--batch-size", "1", "--plain")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "error: --epochs 100,000,000 over 200 rows in batches of 1 is 20,000,000,000 "
        "updates (200 per epoch), over the limit of 100,000,000 updates (as --steps): give "
        "at most 500,000 epochs, or a larger --batch-size\n")


def test_update_limit_counts_the_short_last_batch_of_an_epoch():
    from gradcli.errors import LimitError
    from gradcli.run.optimize import MAX_UPDATES, total_updates
    # 200 rows in batches of 64: 64, 64, 64, 8 -> 4 batches per epoch
    assert total_updates(200, 64, None, 25_000_000) == MAX_UPDATES == 10**8
    with pytest.raises(LimitError, match="is 100,000,004 updates"):
        total_updates(200, 64, None, 25_000_001)
    with pytest.raises(LimitError, match="over the limit of 100,000,000 updates"):
        total_updates(200, 64, 10**8 + 1, None)
