"""CSV as data users have it (issue 20, part 10): columns that are not declared names
(``id,x,y,label``), ``--columns`` (which columns set which names), ``--keep`` (columns
passed through to every output), headerless CSV and TSV (``--no-header``, ``.tsv``,
``--delimiter``).

The truth: the input file read with Python's csv module (the kept text, the numbers) or
numpy, and the Rosenbrock gradient written out by hand (``batch_helpers.rosenbrock``).
"""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from batch_helpers import ROSEN, ROSEN_P, invoke, rosenbrock

#: Text as spreadsheets write it: a quoted comma, doubled quotes, spaces, non-ASCII, an
#: empty field, a '#' inside quotes.
DATA = ('id,x,y,label\n'
        'a17,1,1,plain\n'
        '"b, 2",2,3,"say ""hi"""\n'
        'c 3,-1.2,1, padded \n'
        'ünï,0.5,-0.25,\n'
        'e5,3,9.5,"#not a comment"\n')


def rows_of(text: str, delimiter: str = ",") -> list[dict]:
    """The truth: the rows as Python's csv module reads them."""
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))


def points_of(rows: list[dict], x: str = "x", y: str = "y") -> np.ndarray:
    return np.array([[float(r[x]), float(r[y])] for r in rows])


@pytest.fixture
def data(tmp_path):
    (tmp_path / "d.csv").write_text(DATA, encoding="utf-8")
    return f"@{tmp_path / 'd.csv'}"


def run(*args, stdin: str | None = None) -> str:
    result = invoke(*args, stdin=stdin)
    assert result.exit_code == 0, (result.output, result.stderr)
    return result.stdout


def refused(*args, stdin: str | None = None) -> str:
    result = invoke(*args, stdin=stdin)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.output
    return result.stderr


# ---------------------------------------------------------------------------------------
# Undeclared columns
# ---------------------------------------------------------------------------------------
def test_an_undeclared_column_is_refused_naming_the_options_that_fix_it(data):
    message = refused("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", data)
    assert "d.csv:1: header column 'id' is not a declared name" in message
    assert "--columns NAME=COLUMN" in message and "(--keep id)" in message


def test_keeping_some_undeclared_columns_still_refuses_the_others(data):
    message = refused("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", data,
                      "--keep", "id")
    assert "header column 'label' is not a declared name" in message
    assert "(--keep label)" in message


# ---------------------------------------------------------------------------------------
# --keep: in every output, equal to the input's text
# ---------------------------------------------------------------------------------------
KEEP = ("value-grad", ROSEN, "--var", "x", "--var", "y", "--keep", "id,label")


@pytest.mark.slow
def test_kept_columns_lead_each_json_lines_row(data):
    truth = rows_of(DATA)
    lines = [json.loads(line) for line in run(*KEEP, "--at", data, "--json").splitlines()]
    value, dx, dy = rosenbrock(*points_of(truth).T)
    for k, (line, row) in enumerate(zip(lines, truth, strict=True)):
        assert list(line)[:4] == ["row", "id", "label", "mode"]
        assert (line["row"], line["id"], line["label"]) == (k, row["id"], row["label"])
        assert line["value"] == pytest.approx(value[k], rel=1e-14, abs=1e-14)
        assert [g["gradient"] for g in line["gradients"]] == pytest.approx(
            [dx[k], dy[k]], rel=1e-14, abs=1e-13)


def test_kept_columns_follow_row_in_csv_output(data):
    truth = rows_of(DATA)
    out = rows_of(run(*KEEP, "--at", data, "--csv"))
    assert list(out[0]) == ["row", "id", "label", "x", "y", "value", "d_x", "d_y"]
    value, dx, _ = rosenbrock(*points_of(truth).T)
    for k, (row, given) in enumerate(zip(out, truth, strict=True)):
        assert (row["id"], row["label"]) == (given["id"], given["label"])
        assert (float(row["x"]), float(row["y"])) == (float(given["x"]), float(given["y"]))
        assert float(row["value"]) == pytest.approx(value[k], rel=1e-14, abs=1e-14)
        assert float(row["d_x"]) == pytest.approx(dx[k], rel=1e-14, abs=1e-13)


def test_kept_columns_start_each_plain_line(data):
    truth = rows_of(DATA)
    lines = run(*KEEP, "--at", data, "--plain").splitlines()
    value, dx, dy = rosenbrock(*points_of(truth).T)
    for k, (line, given) in enumerate(zip(lines, truth, strict=True)):
        kept = f"{given['id']} {given['label']} "
        assert line.startswith(kept), (line, kept)
        numbers = [float(word) for word in line[len(kept):].split()]
        assert numbers == pytest.approx([value[k], dx[k], dy[k]], rel=1e-14, abs=1e-13)


def test_kept_columns_are_string_arrays_after_row_in_npz(data, tmp_path):
    truth = rows_of(DATA)
    run(*KEEP, "--at", data, "--output", tmp_path / "g.npz")
    with np.load(tmp_path / "g.npz") as g:
        assert list(g)[:3] == ["row", "id", "label"]
        assert g["id"].dtype.kind == "U"
        assert g["id"].tolist() == [r["id"] for r in truth]
        assert g["label"].tolist() == [r["label"] for r in truth]
        np.testing.assert_array_equal(np.stack([g["x"], g["y"]], axis=1), points_of(truth))


def test_kept_columns_are_in_the_human_table(data, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    table = run(*KEEP, "--at", data)
    header = next(line for line in table.splitlines() if "label" in line)
    assert [word for word in header.replace("┃", " ").split()][:5] == [
        "row", "id", "label", "x", "y"]
    for given in rows_of(DATA):
        line = next(line for line in table.splitlines() if given["id"] in line)
        assert given["label"].strip() in line


def test_a_kept_column_may_be_renamed_and_a_renamed_clash_is_refused(data):
    lines = run("value-grad", ROSEN, "--var", "x", "--var", "y", "--keep", "key=id,label",
                "--at", data, "--json").splitlines()
    assert [json.loads(line)["key"] for line in lines] == [r["id"] for r in rows_of(DATA)]
    message = refused("value-grad", ROSEN, "--var", "x", "--var", "y", "--keep",
                      "value=id,label", "--at", data, "--json")
    assert "the kept column 'value' would have the name of a column of the output" in message


def test_an_unnamed_column_is_kept_by_number_with_a_name(tmp_path):
    # pandas' to_csv writes its index as a first column with an empty name.
    text = ",x,y,city\n0,1.0,2.0,Paris\n1,3.0,4.0,Zürich\n"
    (tmp_path / "p.csv").write_text(text, encoding="utf-8")
    source = f"@{tmp_path / 'p.csv'}"
    assert "(--keep NAME=1)" in refused("grad", "x*y", "--arg", "x", "--arg", "y", "--at",
                                        source)
    assert "no name in the header: give it one, --keep NAME=1" in refused(
        "grad", "x*y", "--arg", "x", "--arg", "y", "--at", source, "--keep", "1,city")
    out = rows_of(run("grad", "x*y", "--arg", "x", "--arg", "y", "--at", source, "--keep",
                      "index=1,city", "--csv"))
    truth = rows_of(text)
    assert [(r["index"], r["city"]) for r in out] == [(r[""], r["city"]) for r in truth]


def test_bad_rows_keep_their_kept_text(tmp_path):
    text = "id,x,label\nk0,4,a\nk1,abc,b\nk2,-1,c\n"
    (tmp_path / "p.csv").write_text(text)
    lines = [json.loads(line) for line in run(
        "grad", "sqrt(x) + cholesky(x * eye(1))[0, 0]", "--arg", "x", "--keep", "id,label",
        "--at", f"@{tmp_path / 'p.csv'}", "--json", "--skip-bad-rows").splitlines()]
    assert [(line["row"], line["id"], line["label"]) for line in lines] == [
        (0, "k0", "a"), (1, "k1", "b"), (2, "k2", "c")]
    assert "'abc' is not a number" in lines[1]["error"]   # not read
    assert "cholesky" in lines[2]["error"]                 # not computed


# ---------------------------------------------------------------------------------------
# --columns
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("columns, x, y", [
    (["x=label_b,y=label_a"], "label_b", "label_a"),
    (["x=3", "y=2"], "label_b", "label_a"),          # by number, from 1, repeated option
    (["y=label_a, x=3"], "label_b", "label_a"),
])
def test_columns_say_which_column_sets_which_name(columns, x, y, tmp_path):
    text = 'name,label_a,label_b,notes\nn0,1,2,"free, text"\nn1,0.5,-1.5,\nn2,3,9,x\n'
    (tmp_path / "p.csv").write_text(text)
    args = ["--columns"] + [part for c in columns for part in (c, "--columns")][:-1]
    out = rows_of(run("value-grad", ROSEN, "--var", "x", "--var", "y", *args, "--at",
                      f"@{tmp_path / 'p.csv'}", "--csv"))
    truth = points_of(rows_of(text), x, y)
    _, dx, _ = rosenbrock(*truth.T)
    # The rest left out; the point's columns in the order --columns gives them.
    assert sorted(out[0]) == ["d_x", "d_y", "row", "value", "x", "y"]
    np.testing.assert_array_equal([[float(r["x"]), float(r["y"])] for r in out], truth)
    np.testing.assert_allclose([float(r["d_x"]) for r in out], dx, rtol=1e-14, atol=1e-13)


def test_a_range_of_columns_sets_an_array_in_c_order(tmp_path):
    text = "id,p0,p1,w\na,1,1,7\nb,2,3,8\nc,-1.2,1,9\n"
    (tmp_path / "p.csv").write_text(text)
    lines = run("value-grad", ROSEN_P, "--var", "p", "--columns", "p=p0:p1", "--keep", "id",
                "--at", f"@{tmp_path / 'p.csv'}", "--plain").splitlines()
    truth = points_of(rows_of(text), "p0", "p1")
    value, dx, dy = rosenbrock(*truth.T)
    for k, line in enumerate(lines):
        words = line.split()
        assert words[0] == "abc"[k]
        assert [float(w) for w in words[1:]] == pytest.approx([value[k], dx[k], dy[k]],
                                                              rel=1e-14, abs=1e-13)
    # By numbers, into a declared (2, 2) W: the four columns fill it in C order.
    text = "a,b,c,d\n1,2,3,4\n"
    (tmp_path / "w.csv").write_text(text)
    line = json.loads(run("grad", "sum(W * [[1, 10], [100, 1000]])", "--arg",
                          "W=zeros([2, 2])", "--columns", "W=1:4", "--at",
                          f"@{tmp_path / 'w.csv'}", "--json"))
    assert line["gradients"][0]["gradient"] == [[1.0, 10.0], [100.0, 1000.0]]


def test_a_bare_name_picks_its_own_columns_and_the_others_are_left_out(tmp_path):
    text = 'W[0],W[1],x,comment\n1,2,3,"a, b"\n4,5,6,c\n'
    (tmp_path / "p.csv").write_text(text)
    lines = [json.loads(line) for line in run(
        "value-grad", "x * sum(W)", "--var", "W", "--var", "x", "--columns", "W,x", "--at",
        f"@{tmp_path / 'p.csv'}", "--json").splitlines()]
    table = np.array([[float(v) for v in list(r.values())[:3]] for r in rows_of(text)])
    np.testing.assert_array_equal([line["value"] for line in lines],
                                  table[:, 2] * table[:, :2].sum(axis=1))


@pytest.mark.parametrize("args, words", [
    (["--columns", "x=xx,y=y"], ("--columns 'xx': no column 'xx' in the header (did you "
                                 "mean 'x'?)")),
    (["--columns", "x=0,y=y"], "--columns '0': columns are numbered from 1"),
    (["--columns", "x=9,y=y"], "the rows have 4 columns, numbered from 1"),
    (["--columns", "x=x,z=y"], "--columns 'z' is not a declared name"),
    (["--columns", "x=x,y=id:label"], ("y=id:label: 4 columns, but y is declared with "
                                       "shape () (1 element)")),
    (["--columns", "x=x,"], "--columns 'x=x,' has an empty item"),
    (["--keep", "id,id"], "two kept columns are named 'id'"),
    (["--delimiter", "::"], "--delimiter '::': give one character"),
    (["--delimiter", "."], "--delimiter '.': give one character"),
    (["--no-header"], "--no-header needs --columns"),
])
def test_bad_column_options_are_one_message(args, words, data):
    message = refused("value-grad", ROSEN, "--var", "x", "--var", "y=0", "--at", data, *args)
    assert words in message, message


def test_csv_options_need_a_csv_source_and_at(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((2, 1)))
    message = refused("grad", "x", "--arg", "x", "--at", f"@{tmp_path / 'x.npy'}", "--keep",
                      "id")
    assert "--keep is for CSV and TSV sources" in message
    message = refused("grad", "x", "--arg", "x", "--at", "-", "--columns", "x=a",
                      stdin='{"x": [1]}\n')
    assert "standard input (JSON Lines): --columns is for CSV and TSV sources" in message
    assert "--keep works with --at" in refused("grad", "x", "--arg", "x=1", "--keep", "id")
    assert "--columns works with --at SOURCE (training on data rows)" in refused(
        "minimize", "(w - x)^2", "--var", "w=0", "--arg", "x=1", "--columns", "x=1")


# ---------------------------------------------------------------------------------------
# Headerless CSV and TSV
# ---------------------------------------------------------------------------------------
def test_headerless_csv_names_columns_by_number(tmp_path):
    text = "7,1,1\n8,2,3\n# a comment\n9,-1.2,1\n"
    (tmp_path / "p.csv").write_text(text)
    out = rows_of(run("value-grad", ROSEN, "--var", "x", "--var", "y", "--no-header",
                      "--columns", "x=2,y=3", "--keep", "id=1", "--at",
                      f"@{tmp_path / 'p.csv'}", "--csv"))
    table = np.loadtxt(tmp_path / "p.csv", delimiter=",")
    assert [r["id"] for r in out] == ["7", "8", "9"]
    value, _, _ = rosenbrock(table[:, 1], table[:, 2])
    np.testing.assert_allclose([float(r["value"]) for r in out], value, rtol=1e-14)
    message = refused("grad", "x", "--arg", "x", "--no-header", "--columns", "x=2", "--keep",
                      "1", "--at", f"@{tmp_path / 'p.csv'}")
    assert "without a header, give the kept column a name: --keep NAME=1" in message


def test_a_tsv_file_is_tab_separated(tmp_path):
    text = "id\tx\ty\nr 0\t1\t1\nr,1\t2\t3\n"
    (tmp_path / "p.tsv").write_text(text)
    lines = [json.loads(line) for line in run(
        "value-grad", ROSEN, "--var", "x", "--var", "y", "--keep", "id", "--at",
        f"@{tmp_path / 'p.tsv'}", "--json").splitlines()]
    truth = rows_of(text, "\t")
    assert [line["id"] for line in lines] == [r["id"] for r in truth]
    value, _, _ = rosenbrock(*points_of(truth).T)
    assert [line["value"] for line in lines] == pytest.approx(value, rel=1e-14)


@pytest.mark.parametrize("delimiter, sep", [(";", ";"), ("tab", "\t"), ("|", "|")])
def test_delimiter_reads_other_separators_from_a_file_or_standard_input(delimiter, sep,
                                                                         tmp_path):
    text = sep.join(["x", "y", "note"]) + "\n" + sep.join(["2", "3", "a,b"]) + "\n"
    (tmp_path / "p.csv").write_text(text)
    for source, stdin in ((f"@{tmp_path / 'p.csv'}", None), ("-", text)):
        out = run("value-grad", ROSEN, "--var", "x", "--var", "y", "--keep", "note",
                  "--delimiter", delimiter, "--at", source, "--plain", stdin=stdin)
        value, dx, dy = (float(v) for v in rosenbrock(2.0, 3.0))
        assert out == f"a,b {value!r} {dx!r} {dy!r}\n"


# ---------------------------------------------------------------------------------------
# minimize reads the same way
# ---------------------------------------------------------------------------------------
def test_minimize_trains_on_the_columns_it_is_given(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, 40)
    y = 1.5 * x - 0.5 + rng.normal(0, 0.1, 40)
    (tmp_path / "d.csv").write_text("sample,feature,target\n" + "".join(
        f"s{k},{a!r},{b!r}\n" for k, (a, b) in enumerate(zip(x.tolist(), y.tolist()))))
    result = json.loads(run("minimize", "(w*x + b - y)^2", "--var", "w=0", "--var", "b=0",
                            "--arg", "x", "--arg", "y", "--columns", "x=feature,y=target",
                            "--at", f"@{tmp_path / 'd.csv'}", "--optimizer", "lbfgs",
                            "--json"))
    # The truth: least squares by numpy.
    (w, b), *_ = np.linalg.lstsq(np.stack([x, np.ones_like(x)], axis=1), y, rcond=None)
    found = {v["name"]: v["value"] for v in result["variables"]}
    assert found["w"] == pytest.approx(w, abs=1e-6) and found["b"] == pytest.approx(b, abs=1e-6)
