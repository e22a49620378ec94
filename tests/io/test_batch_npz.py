"""``--at SOURCE --output PATH.npz``: the rows as numpy arrays, streamed through temporary
files and assembled as ``np.savez`` stores the same arrays.

The independent truths: the JSON Lines output of the same run (another writer, numbers
as text), arrays built from it and stored by ``np.savez`` (the bytes of each member), and
the Rosenbrock gradient written out by hand in numpy.
"""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
import zipfile

import numpy as np
import pytest
from batch_helpers import ROSEN, invoke, rosenbrock, streamed_run
from cli_process import COMMAND

POINTS = np.array([[1.0, 1.0], [2.0, 3.0], [-1.2, 1.0], [0.5, -0.25], [3.0, 9.5]])
BAD = "x,y\n1,1\n2,3\n2,abc\n-1.2,1\n4\n0.5,-0.25\n5,\n3,9.5\n"


def points_csv(tmp_path, points=POINTS) -> str:
    path = tmp_path / "points.csv"
    path.write_text("x,y\n" + "".join(f"{x!r},{y!r}\n" for x, y in points.tolist()))
    return f"@{path}"


def number(value):
    """A JSON value of gradcli's as numbers ("nan", "inf", "-inf" are strings there)."""
    if isinstance(value, list):
        return [number(v) for v in value]
    return float(value) if isinstance(value, str) else value


def signed_zeros(numbers, hand) -> np.ndarray:
    """JSON numbers with each zero given the sign of the hand computation's (numpy's IEEE
    result): text output writes a zero unsigned, .npz keeps the computed sign (docs/output.md)."""
    arr = np.asarray(numbers, dtype=np.float64)
    return np.where(arr == 0, np.copysign(0.0, hand), arr)


def jsonl_and_npz(tmp_path, *args) -> tuple[list[dict], dict, str]:
    """The run's JSON Lines on standard output, and the same run's .npz (np.load)."""
    lines = invoke(*args, "--json")
    assert lines.exit_code == 0, lines.output
    path = tmp_path / "out.npz"
    result = invoke(*args, "--output", path)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    return [json.loads(line) for line in lines.stdout.splitlines()], arrays, str(path)


def assert_savez_bytes(path: str, expected: dict) -> None:
    """Every member of ``path`` is the bytes np.savez stores for ``expected`` (in order)."""
    buffer = io.BytesIO()
    np.savez(buffer, **expected)
    ours, theirs = zipfile.ZipFile(path), zipfile.ZipFile(buffer)
    assert ours.namelist() == theirs.namelist()
    for info in ours.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        assert ours.read(info.filename) == theirs.read(info.filename), info.filename


def no_partial_files(directory) -> bool:
    return not [p for p in os.listdir(directory) if p.endswith(".partial")]


# ---------------------------------------------------------------------------------------
# The arrays: the JSON Lines rows, as np.savez would store them
# ---------------------------------------------------------------------------------------
def test_value_grad_npz_is_the_json_rows_and_the_hand_gradient(tmp_path):
    lines, arrays, path = jsonl_and_npz(tmp_path, "value-grad", ROSEN, "--var", "x",
                                        "--var", "y", "--at", points_csv(tmp_path))
    assert list(arrays) == ["row", "x", "y", "value", "d_x", "d_y", "error",
                            "error_message"]
    value, dx, dy = rosenbrock(POINTS[:, 0], POINTS[:, 1])  # (dx at (1, 1) is -0.0)
    expected = {
        "row": np.array([line["row"] for line in lines], dtype=np.int64),
        "x": POINTS[:, 0], "y": POINTS[:, 1],
        "value": signed_zeros([line["value"] for line in lines], value),
        "d_x": signed_zeros([line["gradients"][0]["gradient"] for line in lines], dx),
        "d_y": signed_zeros([line["gradients"][1]["gradient"] for line in lines], dy),
        "error": np.zeros(5, dtype=bool), "error_message": np.array([], dtype="<U1")}
    assert_savez_bytes(path, expected)
    np.testing.assert_allclose(arrays["value"], value, rtol=1e-14)
    np.testing.assert_allclose(arrays["d_x"], dx, rtol=1e-14)
    np.testing.assert_allclose(arrays["d_y"], dy, rtol=1e-14)
    assert arrays["row"].tolist() == list(range(5))


def test_array_names_keep_their_shape_with_a_leading_row_axis(tmp_path):
    rng = np.random.default_rng(3)
    W = rng.normal(size=(4, 2, 3))
    v = rng.normal(size=(4, 3))
    np.savez(tmp_path / "p.npz", W=W, v=v)
    lines, arrays, path = jsonl_and_npz(tmp_path, "value-grad", "sum(tanh(W @ v))",
                                        "--var", "W", "--var", "v", "--at",
                                        f"@{tmp_path / 'p.npz'}")
    assert [(k, a.shape) for k, a in arrays.items()] == [
        ("row", (4,)), ("W", (4, 2, 3)), ("v", (4, 3)), ("value", (4,)),
        ("d_W", (4, 2, 3)), ("d_v", (4, 3)), ("error", (4,)), ("error_message", (0,))]
    assert_savez_bytes(path, {
        "row": np.arange(4), "W": W, "v": v,
        "value": np.array([line["value"] for line in lines]),
        "d_W": np.array([line["gradients"][0]["gradient"] for line in lines]),
        "d_v": np.array([line["gradients"][1]["gradient"] for line in lines]),
        "error": np.zeros(4, dtype=bool), "error_message": np.array([], dtype="<U1")})
    # d/dv sum(tanh(W v)) = W^T (1 - tanh(W v)^2), by hand
    t = np.tanh(np.einsum("nij,nj->ni", W, v))
    np.testing.assert_allclose(arrays["d_v"], np.einsum("nij,ni->nj", W, 1 - t * t),
                               rtol=1e-12)


def test_a_csv_element_column_stores_the_whole_declared_value(tmp_path):
    (tmp_path / "p.csv").write_text("W[0,1]\n5\n7\n")
    lines, arrays, _ = jsonl_and_npz(tmp_path, "value-grad", "sum(W * W)", "--var",
                                     "W=[[1, 2], [3, 4]]", "--at", f"@{tmp_path / 'p.csv'}")
    assert arrays["W"].tolist() == [[[1, 5], [3, 4]], [[1, 7], [3, 4]]]
    assert arrays["d_W"].tolist() == [line["gradients"][0]["gradient"] for line in lines]


@pytest.mark.parametrize("command, program, extra, names", [
    ("grad", ROSEN, ("--arg", "x", "--arg", "y"), ["d_x", "d_y"]),
    ("tape", ROSEN, ("--var", "x", "--var", "y"), ["value", "d_x", "d_y"]),
    ("implicit", ROSEN, ("--var", "x", "--var", "y"), ["d_x", "d_y"]),
    ("value-grad", ROSEN, ("--var", "x", "--var", "y", "--dtype", "float32"),
     ["value", "d_x", "d_y"]),
])
def test_every_mode_stores_its_json_numbers(command, program, extra, names, tmp_path):
    lines, arrays, path = jsonl_and_npz(tmp_path, command, program, *extra, "--at",
                                        points_csv(tmp_path))
    assert list(arrays) == ["row", "x", "y", *names, "error", "error_message"]
    dtype = np.float32 if "float32" in extra else np.float64
    expected = {"row": np.arange(5), "x": POINTS[:, 0], "y": POINTS[:, 1]}
    value, *grads = rosenbrock(POINTS[:, 0], POINTS[:, 1])  # the signs of zeros
    if "value" in names:
        expected["value"] = signed_zeros([line["value"] for line in lines],
                                         value).astype(dtype)
    for k, name in enumerate(["d_x", "d_y"]):
        expected[name] = signed_zeros([number(line["gradients"][k]["gradient"])
                                       for line in lines], grads[k]).astype(dtype)
    expected.update(error=np.zeros(5, dtype=bool), error_message=np.array([], dtype="<U1"))
    assert_savez_bytes(path, expected)


def test_an_unconnected_gradient_has_no_array(tmp_path):
    lines, arrays, _ = jsonl_and_npz(tmp_path, "grad", "3 * x", "--arg", "x", "--arg", "y",
                                     "--at", points_csv(tmp_path))
    assert [line["gradients"][1]["gradient"] for line in lines] == [None] * 5
    assert "d_y" not in arrays and arrays["d_x"].tolist() == [3.0] * 5


def test_jacobian_npz_holds_each_rows_jacobian(tmp_path):
    lines, arrays, path = jsonl_and_npz(tmp_path, "jacobian", "stack([x*y, x+y, x^2])",
                                        "--arg", "x", "--arg", "y", "--at",
                                        points_csv(tmp_path))
    assert_savez_bytes(path, {
        "row": np.arange(5), "x": POINTS[:, 0], "y": POINTS[:, 1],
        "value": np.array([line["value"] for line in lines]),
        "d_x": np.array([line["jacobians"][0]["jacobian"] for line in lines]),
        "d_y": np.array([line["jacobians"][1]["jacobian"] for line in lines]),
        "error": np.zeros(5, dtype=bool), "error_message": np.array([], dtype="<U1")})
    x, y = POINTS[:, 0], POINTS[:, 1]
    assert arrays["d_x"].tolist() == np.stack([y, np.ones(5), 2 * x], axis=1).tolist()


def test_hessian_npz_holds_gradient_hessian_eigenvalues_and_verdict(tmp_path):
    lines, arrays, path = jsonl_and_npz(tmp_path, "hessian", ROSEN, "--arg", "x", "--arg",
                                        "y", "--at", points_csv(tmp_path))
    assert arrays["verdict"].tolist() == [line["verdict"] for line in lines]
    assert arrays["verdict"].tolist()[:2] == ["minimum", "not-critical"]
    assert_savez_bytes(path, {
        "row": np.arange(5), "x": POINTS[:, 0], "y": POINTS[:, 1],
        "value": np.array([line["value"] for line in lines]),
        "gradient": np.array([line["gradient"] for line in lines]),
        "hessian": np.array([line["hessian"] for line in lines]),
        "eigenvalues": np.array([number(line["eigenvalues"]) for line in lines]),
        "verdict": np.array([line["verdict"] for line in lines],
                            dtype=arrays["verdict"].dtype),
        "error": np.zeros(5, dtype=bool), "error_message": np.array([], dtype="<U1")})
    x, y = POINTS[:, 0], POINTS[:, 1]  # the Rosenbrock Hessian, by hand
    hand = np.stack([np.stack([1200 * x * x - 400 * y + 2, -400 * x], axis=-1),
                     np.stack([-400 * x, np.full(5, 200.0)], axis=-1)], axis=1)
    np.testing.assert_allclose(arrays["hessian"], hand, rtol=1e-12)


def test_jvp_npz_holds_value_and_jvp(tmp_path):
    lines, arrays, path = jsonl_and_npz(tmp_path, "jvp", "x^2 * y", "--arg", "x", "--arg",
                                        "y", "--tangent", "x=1", "--at", points_csv(tmp_path))
    assert list(arrays) == ["row", "x", "y", "value", "jvp", "error", "error_message"]
    assert arrays["jvp"].tolist() == [line["jvp"] for line in lines]
    assert arrays["jvp"].tolist() == (2 * POINTS[:, 0] * POINTS[:, 1]).tolist()


# ---------------------------------------------------------------------------------------
# Bad rows, a stopped run, Ctrl-C
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("chunk", [[], ["--chunk", "1"], ["--chunk", "3"]])
def test_skipped_rows_are_nan_with_error_true_and_their_messages(chunk, tmp_path):
    (tmp_path / "bad.csv").write_text(BAD)
    lines, arrays, path = jsonl_and_npz(tmp_path, "value-grad", ROSEN, "--var", "x",
                                        "--var", "y", "--at", f"@{tmp_path / 'bad.csv'}",
                                        "--skip-bad-rows", *chunk)
    bad = [line["row"] for line in lines if "error" in line]
    assert bad == [2, 4, 6]
    assert arrays["error"].tolist() == [k in bad for k in range(8)]
    assert arrays["error_message"].tolist() == [line["error"] for line in lines
                                                if "error" in line]
    good = ~arrays["error"]
    assert np.isnan(arrays["value"][~good]).all() and np.isnan(arrays["x"][~good]).all()
    value, dx, dy = rosenbrock(POINTS[:, 0], POINTS[:, 1])
    assert arrays["value"][good].tolist() == [line["value"] for line in lines
                                              if "error" not in line]
    np.testing.assert_allclose(arrays["d_x"][good], dx, rtol=1e-14)
    nan = float("nan")
    assert_savez_bytes(path, {
        "row": np.arange(8),
        "x": np.array([1, 2, nan, -1.2, nan, 0.5, nan, 3]),
        "y": np.array([1, 3, nan, 1, nan, -0.25, nan, 9.5]),
        **{name: arrays[name] for name in ("value", "d_x", "d_y")},
        "error": arrays["error"],
        "error_message": np.array([line["error"] for line in lines if "error" in line])})


def test_bad_rows_before_the_first_computed_row_are_blank_in_every_array(tmp_path):
    (tmp_path / "bad.csv").write_text("x,y\nz,1\n,2\n2,3\n")
    _, arrays, _ = jsonl_and_npz(tmp_path, "value-grad", ROSEN, "--var", "x", "--var", "y",
                                 "--at", f"@{tmp_path / 'bad.csv'}", "--skip-bad-rows",
                                 "--chunk", "1")
    assert arrays["error"].tolist() == [True, True, False]
    assert np.isnan(arrays["d_y"][:2]).all() and arrays["d_y"][2] == -200.0


def test_a_bad_row_stops_the_run_and_the_npz_holds_the_rows_before_it(tmp_path):
    (tmp_path / "bad.csv").write_text(BAD)
    out = tmp_path / "out.npz"
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    f"@{tmp_path / 'bad.csv'}", "--output", out, "--chunk", "1")
    assert result.exit_code == 2
    assert "bad.csv:4: 'abc' is not a number" in result.stderr
    assert f"{out} holds the 2 rows before it" in result.stderr
    with np.load(out) as data:
        assert data["row"].tolist() == [0, 1]
        assert data["value"].tolist() == rosenbrock(POINTS[:2, 0], POINTS[:2, 1])[0].tolist()
        assert not data["error"].any()
    assert no_partial_files(tmp_path)


@pytest.mark.slow
def test_ctrl_c_leaves_a_valid_npz_of_the_completed_rows_and_exits_130(tmp_path):
    # --chunk 1: a vectorized_map call per row, so the run lasts minutes; it is
    # interrupted once the temporary arrays beside the output hold some rows.
    rows = 2_000_000
    (tmp_path / "p.csv").write_text("x,y\n" + "1.5,2.5\n" * rows)
    out = tmp_path / "out.npz"
    process = subprocess.Popen(COMMAND + ["value-grad", ROSEN, "--var", "x", "--var", "y",
                                          "--at", f"@{tmp_path / 'p.csv'}", "--chunk", "1",
                                          "--output", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def spooled() -> int:
        parts = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
        return sum(f.stat().st_size for p in parts for f in p.iterdir())

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and spooled() < 20_000:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    written = int(stderr.split("interrupted: ")[1].split(" rows")[0].replace(",", ""))
    with np.load(out) as data:
        assert 0 < written == len(data["row"]) < rows
        assert data["row"].tolist() == list(range(written))
        value, dx, dy = rosenbrock(1.5, 2.5)
        assert set(data["value"].tolist()) == {value}
        assert set(data["d_y"].tolist()) == {dy}
        assert len(data["x"]) == len(data["d_x"]) == len(data["error"]) == written
    assert no_partial_files(tmp_path)


@pytest.mark.slow
def test_streaming_memory_does_not_grow_with_the_rows(tmp_path, monkeypatch):
    """10^6 rows with --chunk 1000 (16 MB in, 48 MB of arrays out): what is held at any
    time is a chunk and the copy buffer. The engine's work is replaced by numpy on the
    chunk, as in test_batch_cli: what is measured is the streaming around it."""
    n = 10 ** 6
    points = np.random.default_rng(0).uniform(-2, 2, size=(n, 2))
    out = tmp_path / "out.npz"
    result, peak = streamed_run(tmp_path, monkeypatch, points, out)
    assert result.exit_code == 0, result.output
    assert peak < 4 * 10 ** 6, peak
    with np.load(out) as data:
        assert data["p"].shape == (n, 2) and np.array_equal(data["p"], points)
        assert np.array_equal(data["d_p"][:, 1], rosenbrock(points[:, 0], points[:, 1])[2])
    with zipfile.ZipFile(out) as archive:  # as np.savez: zip64 entries, stored
        assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())


# ---------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, flags, words", [
    ("out.npy", [], "a .npy file holds one array"),
    ("out.npy", ["--csv"], "use .npz"),
    ("out.feather", [], "binary output only as .npz"),   # (.parquet: tests/scale)
    ("out.h5", ["--json"], "binary output only as .npz"),
    ("out.npz", ["--csv"], "--csv conflicts with --output"),
    ("out.npz", ["--json"], "--json conflicts with --output"),
    ("missing/out.npz", [], "cannot write the file"),
    ("dir.npz", [], "is a directory"),
])
def test_outputs_that_are_not_written_are_one_message(name, flags, words, tmp_path):
    if name == "dir.npz":
        (tmp_path / name).mkdir()
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    points_csv(tmp_path), "--output", tmp_path / name, *flags)
    assert result.exit_code == 2, result.output
    assert words in result.stderr and "Traceback" not in result.output
    assert (tmp_path / name).is_dir() if name == "dir.npz" else not (tmp_path / name).exists()
    assert no_partial_files(tmp_path)


def test_a_source_name_that_is_an_output_array_is_refused_without_a_file(tmp_path):
    (tmp_path / "p.csv").write_text("value\n1\n2\n")
    out = tmp_path / "out.npz"
    result = invoke("value-grad", "value^2", "--var", "value", "--at",
                    f"@{tmp_path / 'p.csv'}", "--output", out)
    assert result.exit_code == 2
    assert "the source sets value" in result.stderr and "Traceback" not in result.output
    assert not out.exists() and no_partial_files(tmp_path)


def test_an_empty_source_writes_no_npz(tmp_path):
    (tmp_path / "p.csv").write_text("x,y\n")
    out = tmp_path / "out.npz"
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    f"@{tmp_path / 'p.csv'}", "--output", out)
    assert result.exit_code == 2 and "no rows" in result.stderr
    assert not out.exists() and no_partial_files(tmp_path)


def test_output_dash_is_standard_output_for_text(tmp_path):
    source = points_csv(tmp_path)
    dash = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                  "--plain", "--output", "-")
    plain = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                   "--plain")
    assert dash.exit_code == 0 and dash.stdout == plain.stdout != ""
    assert not (tmp_path / "-").exists()
