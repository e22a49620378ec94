"""``--at SOURCE`` (issue 12): the sources, the output formats, streaming in chunks, bad
rows, Ctrl-C and ``--check`` on a sample of rows.

The independent truth for the numbers is the Rosenbrock function's gradient written out
by hand in numpy (``rosenbrock``), or the single-point command at the same row.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
from batch_helpers import ROSEN, ROSEN_P, invoke, rosenbrock, streamed_run
from cli_process import COMMAND






def jsonl(result) -> list[dict]:
    assert result.exit_code == 0, (result.output, result.stderr)
    return [json.loads(line) for line in result.stdout.splitlines()]


def write(path, text: str):
    path.write_text(text)
    return f"@{path}"


POINTS = np.array([[1.0, 1.0], [2.0, 3.0], [-1.2, 1.0], [0.5, -0.25], [3.0, 9.5]])


def points_csv(tmp_path, points=POINTS):
    return write(tmp_path / "points.csv", "x,y\n" + "".join(
        f"{x!r},{y!r}\n" for x, y in points.tolist()))


def assert_rosenbrock_rows(lines, points=POINTS, first_row=0):
    value, dx, dy = rosenbrock(points[:, 0], points[:, 1])
    assert [line["row"] for line in lines] == list(range(first_row, first_row + len(points)))
    for k, line in enumerate(lines):
        assert line["mode"] == "value-grad"
        assert line["value"] == pytest.approx(value[k], rel=1e-14, abs=1e-14)
        assert [g["name"] for g in line["gradients"]] == ["x", "y"]
        assert line["gradients"][0]["gradient"] == pytest.approx(dx[k], rel=1e-14, abs=1e-13)
        assert line["gradients"][1]["gradient"] == pytest.approx(dy[k], rel=1e-14, abs=1e-13)


# ---------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------
def test_csv_rows_give_the_gradient_at_each_row(tmp_path):
    lines = jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                         points_csv(tmp_path), "--json"))
    assert_rosenbrock_rows(lines)


def test_a_name_the_source_does_not_set_keeps_its_declared_value(tmp_path):
    source = write(tmp_path / "x.csv", "x\n1\n2\n")
    lines = jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y=3", "--at", source,
                         "--json"))
    value, dx, dy = rosenbrock([1.0, 2.0], [3.0, 3.0])
    assert [line["value"] for line in lines] == pytest.approx(value.tolist())
    assert [line["gradients"][1]["gradient"] for line in lines] == pytest.approx(dy.tolist())


def test_npy_source_sets_the_name_of_its_stem_with_rows_on_axis_0(tmp_path):
    np.save(tmp_path / "p.npy", POINTS)
    lines = jsonl(invoke("value-grad", ROSEN_P, "--var", "p=[0, 0]", "--at",
                         f"@{tmp_path / 'p.npy'}", "--json"))
    value, dx, dy = rosenbrock(POINTS[:, 0], POINTS[:, 1])
    assert [line["value"] for line in lines] == pytest.approx(value.tolist(), rel=1e-14)
    grads = np.array([line["gradients"][0]["gradient"] for line in lines])
    np.testing.assert_allclose(grads, np.stack([dx, dy], axis=1), rtol=1e-14)


def test_npy_source_sets_the_one_name_declared_without_a_value(tmp_path):
    np.save(tmp_path / "data.npy", POINTS.astype(np.float32))  # any real dtype is read
    lines = jsonl(invoke("grad", ROSEN_P, "--arg", "p", "--at", f"@{tmp_path / 'data.npy'}",
                         "--json"))
    assert len(lines) == len(POINTS)
    x, y = POINTS.astype(np.float32).astype(np.float64).T
    _, dx, _ = rosenbrock(x, y)
    assert [line["gradients"][0]["gradient"][0] for line in lines] == pytest.approx(dx)


def test_npz_source_sets_arrays_by_name(tmp_path):
    np.savez(tmp_path / "p.npz", x=POINTS[:, 0], y=POINTS[:, 1])
    assert_rosenbrock_rows(jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y",
                                        "--at", f"@{tmp_path / 'p.npz'}", "--json")))


def test_jsonl_source_reads_named_values_per_line(tmp_path):
    source = write(tmp_path / "p.jsonl", "".join(
        json.dumps({"x": x, "y": y}) + "\n\n" for x, y in POINTS.tolist()))
    assert_rosenbrock_rows(jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y",
                                        "--at", source, "--json")))


def test_jsonl_arrays_and_a_left_out_declared_value(tmp_path):
    source = write(tmp_path / "p.jsonl", '{"W": [[1, 2], [3, 4]], "b": 1}\n'
                                         '{"W": [[0, 1], [1, 0]]}\n')
    lines = jsonl(invoke("value-grad", "sum(W @ [1, 2]) * b", "--var", "W", "--var", "b=5",
                         "--at", source, "--json"))
    assert [line["value"] for line in lines] == [16.0, 15.0]  # (5+11)*1, (2+1)*5
    assert lines[1]["gradients"][0]["gradient"] == [[5.0, 10.0], [5.0, 10.0]]


@pytest.mark.parametrize("text", ["x,y\n1,1\n2,3\n", '{"x": 1, "y": 1}\n{"x": 2, "y": 3}\n',
                                  "\n\n  x , y\n1,1\n\n2,3\n"])
def test_standard_input_is_csv_or_json_lines_by_its_first_character(text):
    lines = jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", "-",
                         "--json", stdin=text))
    assert_rosenbrock_rows(lines, POINTS[:2])


@pytest.mark.parametrize("header", ['x,"W[0,1]",W[1,0]', "x,W[0,1],W[1,0]",
                                    "x, W[0, 1] ,W[1,0]"])
def test_csv_header_elements_set_elements_and_keep_the_rest(header, tmp_path):
    source = write(tmp_path / "p.csv", header + "\n2,10,20\n3,30,40\n")
    lines = jsonl(invoke("value-grad", "x * sum(W)", "--var", "x", "--var",
                         "W=[[1, 2], [3, 4]]", "--at", source, "--json"))
    assert [line["value"] for line in lines] == [2 * (1 + 10 + 20 + 4), 3 * (1 + 30 + 40 + 4)]
    assert lines[0]["gradients"][0]["gradient"] == 35.0


def test_csv_elements_make_the_shape_of_a_name_without_a_value(tmp_path):
    header = ",".join(f'"M[{i},{j}]"' for i in range(2) for j in range(3))
    source = write(tmp_path / "m.csv", header + "\n1,2,3,4,5,6\n")
    [line] = jsonl(invoke("value-grad", "sum(M * M)", "--var", "M", "--at", source,
                          "--json"))
    assert line["value"] == 91.0
    assert line["gradients"][0]["gradient"] == [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]


def test_names_of_the_program_are_typed_into_the_csv_output_header(tmp_path):
    source = write(tmp_path / "m.csv", '"W[0,0]","W[0,1]",x\n1,2,3\n')
    result = invoke("tape", "sum(W) * x", "--var", "W=[[0, 0]]", "--arg", "x", "--watch",
                    "x", "--at", source, "--csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        'row,"W[0,0]","W[0,1]",x,value,"d_W[0,0]","d_W[0,1]",d_x',
        "0,1.0,2.0,3.0,9.0,3.0,3.0,3.0"]


# ---------------------------------------------------------------------------------------
# Refusals: one message, exit 2
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("files, args, words", [
    ({}, ["--var", "x", "--var", "y", "--at", "@{}/missing.csv"], "cannot read file"),
    ({"p.csv": "x,z\n1,2\n"}, ["--var", "x", "--var", "y=1", "--at", "@{}/p.csv"],
     "header column 'z' is not a declared name"),
    ({"p.csv": "x\n1\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv"],
     "y is declared without a value but not set by the source"),
    ({"p.csv": ""}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv"], "no rows"),
    ({"p.csv": "x,y\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv"], "no rows"),
    ({"p.csv": "1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv"],
     "must be a header"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x=[1, 2]", "--var", "y", "--at", "@{}/p.csv"],
     "declared with shape (2,)"),
    ({"p.jsonl": '{"x": [1, 2], "y": 1}\n'}, ["--var", "x=0", "--var", "y", "--at",
                                               "@{}/p.jsonl"], "declared with shape ()"),
    ({"p.txt": "x\n1\n"}, ["--var", "x", "--var", "y=1", "--at", "@{}/p.txt"],
     "unsupported source type"),
    ({}, ["--var", "x", "--var", "y", "--at", "points.csv"], "give a file as @path"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--chunk",
                               "0"], "--chunk"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--chunk",
                               "100000000000"], "--chunk"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv",
                               "--symbolic"], "--symbolic"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--output",
                               "{}/out.bin"], "cannot tell the format"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--csv",
                               "--output", "{}/out.jsonl"], "conflicts with --output"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--output",
                               "{}/no/such/dir/out.csv"], "cannot write the file"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--output",
                               "{}/p.csv"], "is the source itself"),
    ({"p.csv": "x,y\n1,2\n"}, ["--var", "x", "--var", "y", "--at", "@{}/p.csv", "--check",
                               "--seed", "-1"], "--seed"),
    # JSON Lines rows: deep nesting is the file's, a row over 8 MiB points to .npy/.npz
    ({"p.jsonl": '{"x": ' + "[" * 100000 + "1" + "]" * 100000 + ', "y": 1}\n'},
     ["--var", "x", "--var", "y", "--at", "@{}/p.jsonl"],
     "p.jsonl:1: not a JSON object (nested too deeply)"),
    ({"p.jsonl": '{"x": [' + ", ".join(["1.5"] * 1_700_000) + '], "y": 1}\n'},
     ["--var", "x", "--var", "y", "--at", "@{}/p.jsonl"],
     "over the limit of 8,388,608 for a JSON Lines row (write large arrays in .npy"),
])
def test_bad_sources_and_options_are_one_message_and_exit_2(files, args, words, tmp_path):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = invoke("value-grad", ROSEN, *[a.replace("{}", str(tmp_path)) for a in args])
    assert result.exit_code == 2, result.output
    assert words in result.stderr or words in result.output, result.output
    assert "Traceback" not in result.output
    assert result.stdout == "" or "Usage" in result.output


def test_a_json_integer_of_any_length_is_a_float64_as_in_csv(tmp_path):
    """A 5,000-digit integer is beyond Python's int-from-text limit, but values are float64:
    it is read as a float (inf here, as numpy reads the same digits in a CSV file)."""
    digits = "9" * 5000
    source = write(tmp_path / "p.jsonl", f'{{"x": {digits}, "y": 2}}\n{{"x": 3, "y": 2}}\n')
    lines = jsonl(invoke("value-grad", "x * y", "--var", "x", "--var", "y", "--at", source,
                         "--json"))
    assert [line["value"] for line in lines] == ["inf", 6.0]
    assert lines[1]["gradients"] == [{"name": "x", "gradient": 2.0},
                                     {"name": "y", "gradient": 3.0}]


def test_a_name_declared_without_a_value_needs_a_source():
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y=1", "--json")
    assert result.exit_code == 2
    assert "--var x has no value" in result.stderr and "--at" in result.stderr
    assert result.stdout == ""


def test_batch_options_without_at_are_refused():
    result = invoke("value-grad", ROSEN, "--var", "x=1", "--var", "y=1", "--csv")
    assert result.exit_code == 2 and "--csv works with --at" in result.stderr


# ---------------------------------------------------------------------------------------
# Bad rows
# ---------------------------------------------------------------------------------------
BAD = "x,y\n1,1\n2,3\n2,abc\n-1.2,1\n4\n0.5,-0.25\n5,\n3,9.5\n"
GOOD_ROWS = [0, 1, 3, 5, 7]  # the rows of BAD that can be read (POINTS, in order)


@pytest.mark.parametrize("chunk", [[], ["--chunk", "1"], ["--chunk", "2"]])
def test_a_bad_row_stops_with_exit_2_naming_the_line_after_the_rows_before_it(chunk,
                                                                              tmp_path):
    source = write(tmp_path / "bad.csv", BAD)
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source, "--json",
                    *chunk)
    assert result.exit_code == 2
    assert "bad.csv:4: 'abc' is not a number" in result.stderr
    assert "Traceback" not in result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]  # each line complete
    assert_rosenbrock_rows(lines, POINTS[:2])


@pytest.mark.parametrize("chunk", [[], ["--chunk", "3"]])
def test_skip_bad_rows_records_each_error_and_carries_on(chunk, tmp_path):
    source = write(tmp_path / "bad.csv", BAD)
    lines = jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                         "--json", "--skip-bad-rows", *chunk))
    assert [line["row"] for line in lines] == list(range(8))
    errors = {line["row"]: line["error"] for line in lines if "error" in line}
    where = f"{tmp_path / 'bad.csv'}"
    assert errors == {2: f"{where}:4: 'abc' is not a number (column 2)",
                      4: f"{where}:6: 1 values, but the header names 2 columns",
                      6: f"{where}:8: missing value in column 2"}
    good = [line for line in lines if "error" not in line]
    value, _, _ = rosenbrock(POINTS[:, 0], POINTS[:, 1])
    assert [line["value"] for line in good] == pytest.approx(value.tolist())


def test_skipped_rows_are_empty_fields_in_csv_and_a_marker_in_plain(tmp_path):
    source = write(tmp_path / "bad.csv", "x,y\n1,1\nz,2\n2,3\n")
    csv = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source, "--csv",
                 "--skip-bad-rows")
    assert csv.exit_code == 0, csv.output
    # (d_x at (1, 1) is the -0.0 of -2(1 - x) - 400x(y - x^2): a zero prints 0.0)
    assert csv.stdout.splitlines() == ["row,x,y,value,d_x,d_y", "0,1.0,1.0,0.0,0.0,0.0",
                                       "1,,,,,", "2,2.0,3.0,101.0,802.0,-200.0"]
    plain = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                   "--plain", "--skip-bad-rows")
    assert plain.stdout.splitlines() == ["0.0 0.0 0.0",
                                         f"error: {tmp_path / 'bad.csv'}:3: 'z' is not a "
                                         "number (column 1)",
                                         "101.0 802.0 -200.0"]


def test_a_row_whose_computation_fails_is_a_bad_row(tmp_path):
    # cholesky refuses a matrix that is not positive definite: only row 1 is one.
    source = write(tmp_path / "a.csv", "a\n2\n-1\n3\n")
    args = ("value-grad", "sum(cholesky(a * eye(2)))", "--var", "a", "--at", source, "--json")
    single = invoke("value-grad", "sum(cholesky(a * eye(2)))", "--var", "a=-1", "--json")
    if single.exit_code == 0:
        pytest.fail("cholesky of a negative definite matrix is expected to be refused")
    stopped = invoke(*args)
    assert stopped.exit_code == 2 and "row 1" in stopped.stderr
    assert [json.loads(line)["row"] for line in stopped.stdout.splitlines()] == [0]
    lines = jsonl(invoke(*args, "--skip-bad-rows"))
    assert [line["row"] for line in lines] == [0, 1, 2] and "error" in lines[1]
    assert lines[2]["value"] == pytest.approx(2 * np.sqrt(3.0))


def test_nan_and_inf_results_are_rows_not_errors(tmp_path):
    source = write(tmp_path / "p.csv", "x\n-1\n0\n4\n")
    lines = jsonl(invoke("value-grad", "sqrt(x)", "--var", "x", "--at", source, "--json"))
    assert [line["value"] for line in lines] == ["nan", 0.0, 2.0]
    assert [line["gradients"][0]["gradient"] for line in lines] == ["nan", "inf", 0.25]


# ---------------------------------------------------------------------------------------
# Output formats and files
# ---------------------------------------------------------------------------------------
def test_plain_is_one_line_per_point_value_then_gradients(tmp_path):
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    points_csv(tmp_path, POINTS[:2]), "--plain")
    assert result.stdout.splitlines() == ["0.0 0.0 0.0", "101.0 802.0 -200.0"]


def test_each_format_gives_the_same_numbers_as_the_single_point_plain(tmp_path):
    source = points_csv(tmp_path)
    plain = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                   "--plain").stdout.splitlines()
    for k, (x, y) in enumerate(POINTS.tolist()):
        single = invoke("value-grad", ROSEN, "--var", f"x={x!r}", "--var", f"y={y!r}",
                        "--plain").stdout.split()
        assert plain[k].split() == single
    csv = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                 "--csv").stdout.splitlines()
    assert csv[0] == "row,x,y,value,d_x,d_y"
    assert [line.split(",")[3:] for line in csv[1:]] == [line.split() for line in plain]


@pytest.mark.parametrize("name, flag, check", [
    ("out.jsonl", [], lambda text: [json.loads(line)["row"] for line in text.splitlines()]
     == list(range(5))),
    ("out.csv", [], lambda text: text.splitlines()[0] == "row,x,y,value,d_x,d_y"),
    ("out.txt", [], lambda text: text.splitlines()[1] == "101.0 802.0 -200.0"),
    ("out.data", ["--csv"], lambda text: text.startswith("row,x,y")),
])
def test_output_writes_a_file_in_the_format_of_its_extension(name, flag, check, tmp_path):
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    points_csv(tmp_path), "--output", tmp_path / name, *flag)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert check((tmp_path / name).read_text())


def test_human_output_has_the_first_rows_and_a_summary(tmp_path):
    points = np.array([[1.0, 1.0], [2.0, 3.0], [-1.0, np.inf]] + [[0.0, 0.0]] * 12)
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    points_csv(tmp_path, points))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "the first 10 of 15 rows" in out
    assert "rows: 15" in out
    assert "value: min 0.0 (row 0), max 101.0 (row 1)" in out
    norm = float(np.hypot(802.0, 200.0))
    assert f"gradient norm: min 0.0 (row 0), max {norm!r} (row 1)" in out
    assert "non-finite results (nan or inf): 1 row (2)" in out


def test_chunks_give_the_same_output_whatever_their_size(tmp_path):
    rng = np.random.default_rng(3)
    points = rng.uniform(-2, 2, size=(40, 2))
    source = points_csv(tmp_path, points)
    for fmt in ("--json", "--csv", "--plain"):
        outputs = {invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source, fmt,
                          *chunk).stdout for chunk in ([], ["--chunk", "1"], ["--chunk", "7"])}
        assert len(outputs) == 1, fmt
    lines = jsonl(invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source,
                         "--json", "--chunk", "7"))
    assert_rosenbrock_rows(lines, points)


# ---------------------------------------------------------------------------------------
# --check on a sample of rows
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_check_looks_at_a_seeded_sample_of_rows(tmp_path):
    source = points_csv(tmp_path)
    args = ("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", source, "--json",
            "--check", "--check-rows", "2", "--seed", "7")
    lines = jsonl(invoke(*args))
    report = lines[-1]["check"]
    assert len(report["rows"]) == 2 and report["verdict"] == "passed"
    assert report["checked"] == [entry["row"] for entry in report["rows"]]
    assert set(report["checked"]) <= set(range(5))
    assert all(entry["verdict"] == "passed" for entry in report["rows"])
    assert jsonl(invoke(*args))[-1]["check"]["checked"] == report["checked"]
    # every row still has its result line, without a check of its own
    assert [line["row"] for line in lines[:-1]] == list(range(5))


@pytest.mark.slow
def test_check_with_a_wrong_rule_is_a_mismatch_and_exit_1(monkeypatch, tmp_path):
    from gradcli.engine.core import table
    wrong = table.REGISTRY["sin"].replace(vjps=(lambda m, g, ans, x: g * m.sin(x),))
    monkeypatch.setitem(table.REGISTRY, "sin", wrong)
    source = write(tmp_path / "w.csv", "w\n0.5\n1.0\n1.5\n")
    result = invoke("value-grad", "sin(w)", "--var", "w", "--at", source, "--check")
    assert result.exit_code == 1, result.output
    assert "check at 3 sampled rows (0, 1, 2): mismatch" in result.stdout


# ---------------------------------------------------------------------------------------
# Streaming: bounded memory, Ctrl-C
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_streaming_memory_does_not_grow_with_the_rows(tmp_path, monkeypatch):
    """5 x 10^5 rows (8 MB of input, ~30 MB of CSV output) with --chunk 1000: the reading,
    chunking and writing keep far less than the data at any time (measured: 0.8 MB at
    3 x 10^5 rows and at 10^6 alike). The engine's per-row work is replaced here by numpy
    on the chunk: what is measured is the streaming around it."""
    n = 5 * 10 ** 5
    out = tmp_path / "out.csv"
    result, peak = streamed_run(tmp_path, monkeypatch,
                                np.random.default_rng(0).uniform(-2, 2, size=(n, 2)), out)
    assert result.exit_code == 0, result.output
    assert peak < 4 * 10 ** 6, peak  # input alone is 8 MB, output 30 MB
    with open(out) as f:
        assert sum(1 for _ in f) == n + 1


def traced(*args) -> tuple:
    """``invoke(*args)`` and the peak of Python's (and numpy's) allocations during it."""
    import tracemalloc
    tracemalloc.start()
    try:
        result = invoke(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_rows_whose_arrays_together_go_over_the_limits_are_computed_in_pieces(tmp_path):
    """2,000 rows of a program with 20,000-element arrays per row: 4 x 10^7 elements an
    array for the whole chunk, over the 10^7 of one evaluation, so the rows go in pieces
    (before: 640 MB of arrays at once). The numbers are the single-point ones, by hand."""
    x = np.linspace(-1, 1, 2000)
    source = write(tmp_path / "x.csv", "x\n" + "".join(f"{float(v)!r}\n" for v in x))
    result, peak = traced("value-grad", "sum(sin(x * linspace(0, 1, 20000)))", "--var", "x",
                          "--at", source, "--json")
    assert result.exit_code == 0, result.output
    assert peak < 250e6, peak
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["row"] for r in rows] == list(range(2000))
    t = np.linspace(0, 1, 20000)
    value = np.array([r["value"] for r in rows])
    grad = np.array([r["gradients"][0]["gradient"] for r in rows])
    np.testing.assert_allclose(value, np.sin(np.outer(x, t)).sum(axis=1), rtol=1e-12,
                               atol=1e-9)
    np.testing.assert_allclose(grad, (t * np.cos(np.outer(x, t))).sum(axis=1), rtol=1e-12,
                               atol=1e-9)


@pytest.mark.slow
def test_jacobians_of_many_rows_are_computed_in_pieces_under_the_array_limit(tmp_path):
    """4,000 rows of a 100 x 100 Jacobian in one --chunk: 4 x 10^7 elements, over the
    limit of one array, so the rows go in pieces (before: 660 MB at the peak). The
    Jacobian of p^3 is diag(3 p^2)."""
    points = np.random.default_rng(3).uniform(-1, 1, size=(4000, 100))
    np.save(tmp_path / "p.npy", points)
    out = tmp_path / "j.npz"
    result, peak = traced("jacobian", "p^3", "--var", "p", "--at", f"@{tmp_path / 'p.npy'}",
                          "--chunk", "4000", "--output", out)
    assert result.exit_code == 0, result.output
    assert peak < 520e6, peak
    with np.load(out) as data:
        jacobians = data["d_p"]
    assert jacobians.shape == (4000, 100, 100)
    for row in (0, 1999, 3999):
        np.testing.assert_array_equal(jacobians[row], np.diag(3 * points[row] ** 2))


@pytest.mark.slow
def test_hessians_computed_in_pieces_are_the_single_point_ones(tmp_path, monkeypatch):
    """70 rows of a 40-source Hessian in one --chunk (1.1 x 10^5 elements, over the limit
    of one evaluation, lowered here to 10^5 from 10^7: the same pieces as 400 sources
    against 10^7, in a hundredth of the work): in pieces, d^2 sum(p^3) = diag(6 p), with
    each row's verdict."""
    from gradcli.lang import limits
    monkeypatch.setattr(limits, "MAX_ELEMENTS", 100_000)
    points = np.random.default_rng(4).uniform(0.5, 1, size=(70, 40))
    np.save(tmp_path / "p.npy", points)
    out = tmp_path / "h.npz"
    result = invoke("hessian", "sum(p^3)", "--var", "p", "--at", f"@{tmp_path / 'p.npy'}",
                    "--chunk", "70", "--output", out)
    assert result.exit_code == 0, result.output
    with np.load(out) as data:
        hessians, verdicts = data["hessian"], data["verdict"]
    for row in (0, 34, 35, 69):
        np.testing.assert_array_equal(hessians[row], np.diag(6 * points[row]))
    assert set(verdicts.tolist()) == {"not-critical"}  # the gradient 3 p^2 is not 0


@pytest.mark.slow
def test_ctrl_c_flushes_complete_rows_and_exits_130(tmp_path):
    # --chunk 1: a vectorized_map call per row, so the run lasts minutes however fast the
    # engine gets; it is interrupted after its first rows.
    rows = 2_000_000
    (tmp_path / "p.csv").write_text("x,y\n" + "1.5,2.5\n" * rows)
    out = tmp_path / "out.txt"
    process = subprocess.Popen(COMMAND + ["value-grad", ROSEN, "--var", "x", "--var", "y",
                                          "--at", f"@{tmp_path / 'p.csv'}", "--plain",
                                          "--chunk", "1", "--output", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def written() -> int:  # the rows go to a temporary file beside out.txt until the end
        return sum(p.stat().st_size for p in tmp_path.iterdir() if p.name.endswith(".partial"))

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and written() < 1000:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    text = out.read_text()
    assert text.endswith("\n")  # whole rows only
    lines = text.splitlines()
    assert 0 < len(lines) < rows
    value, dx, dy = rosenbrock(1.5, 2.5)
    assert set(lines) == {f"{float(value)!r} {float(dx)!r} {float(dy)!r}"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "p.csv"]  # no temporary


@pytest.mark.slow
def test_no_progress_bar_when_standard_error_is_not_a_terminal(tmp_path):
    source = points_csv(tmp_path)
    result = subprocess.run(COMMAND + ["value-grad", ROSEN, "--var", "x", "--var", "y",
                                       "--at", source, "--plain"],
                            capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, COLUMNS="80"))
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 5
    assert "rows/s" not in result.stderr and "rows/s" not in result.stdout


@pytest.mark.slow
def test_progress_bar_on_a_terminal_goes_to_standard_error_only(tmp_path):
    import pty
    import select
    rows = 20_000  # --chunk 1: a few seconds at least, so the bar appears after 1 s
    (tmp_path / "p.csv").write_text("x,y\n" + "1.5,2.5\n" * rows)
    master, slave = pty.openpty()
    with open(tmp_path / "stdout.txt", "w") as stdout:
        process = subprocess.Popen(COMMAND + ["value-grad", ROSEN, "--var", "x", "--var", "y",
                                              "--at", f"@{tmp_path / 'p.csv'}", "--plain",
                                              "--chunk", "1"],
                                   stdout=stdout, stderr=slave, stdin=subprocess.DEVNULL,
                                   env=dict(os.environ, COLUMNS="100", TERM="xterm"))
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 60
        while b"rows/s" not in seen and time.monotonic() < deadline \
                and process.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    os.close(master)
    assert b"rows/s" in seen and b" rows" in seen
    value, dx, dy = rosenbrock(1.5, 2.5)
    text = (tmp_path / "stdout.txt").read_text()
    assert "rows/s" not in text
    assert set(text.splitlines()) == {f"{float(value)!r} {float(dx)!r} {float(dy)!r}"}


def test_what_the_mode_refuses_whatever_the_values_is_one_message(tmp_path):
    source = points_csv(tmp_path)
    result = invoke("implicit", "x * y", "--arg", "x", "--arg", "y", "--at", source,
                    "--json", "--skip-bad-rows")
    assert result.exit_code == 2 and result.stdout == ""
    assert "No trainable variables" in result.stderr and "row" not in result.stderr


def test_program_and_source_cannot_both_be_standard_input():
    result = invoke("value-grad", "-", "--var", "x", "--at", "-", stdin="x\n1\n")
    assert result.exit_code == 2 and "both be read from standard input" in result.stderr


def test_a_source_that_cannot_be_read_further_stops_after_the_rows_before(tmp_path):
    # Text is decoded 8 KB at a time: the bad byte is met after 4,000 good rows.
    (tmp_path / "p.csv").write_bytes(b"x,y\n" + b"2,3\n" * 4000 + b"\xff\xfe,1\n")
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    f"@{tmp_path / 'p.csv'}", "--plain", "--chunk", "1000")
    assert result.exit_code == 2
    assert "cannot read further" in result.stderr and "Traceback" not in result.output
    lines = result.stdout.splitlines()
    assert len(lines) in (1000, 2000, 3000)  # whole chunks, each complete
    assert set(lines) == {"101.0 802.0 -200.0"}
