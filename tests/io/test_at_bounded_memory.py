"""``--at`` sources that claim more than they hold (issue 20, part 4): what a header says
is held to the array size limit before anything is built, and lines are capped, so each
hostile source is one message and exit 2 in bounded memory.

Memory is measured where it is spent: each run is ``gradcli`` in a child of a small
Python process that reports the child's peak resident memory
(``resource.getrusage(RUSAGE_CHILDREN)``), with the child's address space capped so that
a regression fails in seconds instead of filling the machine.
"""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from batch_helpers import invoke
from cli_process import COMMAND

#: A run of gradcli stays well under this (numpy and the CLI take about 50 MB); each
#: hostile source below took 190 MB to 3.7 GB before it was refused.
PEAK_MB = 150
#: The child's address space: a source read whole fails here at once, not after minutes.
ADDRESS_SPACE = 3 << 30

_MEASURE = """
import json, resource, subprocess, sys
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
with open(sys.argv[2], "rb") as stdin:
    done = subprocess.run(sys.argv[3:], stdin=stdin, capture_output=True, preexec_fn=cap,
                          timeout=120)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": done.returncode, "peak_mb": peak / 1024,
                  "stdout": done.stdout.decode(errors="replace"),
                  "stderr": done.stderr.decode(errors="replace")}))
"""


def measured(tmp_path, *args, stdin=None) -> dict:
    """``gradcli ARGS`` in a child process: its exit code, output and peak memory."""
    stdin_path = stdin or tmp_path / "empty-stdin"
    if stdin is None:
        stdin_path.write_bytes(b"")
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(ADDRESS_SPACE),
                           str(stdin_path), *COMMAND, *map(str, args)],
                          capture_output=True, text=True, timeout=180, check=True)
    return json.loads(done.stdout)


def assert_refused_in_bounded_memory(run: dict, words: str) -> None:
    assert run["code"] == 2, run
    assert words in run["stderr"], run["stderr"]
    assert run["stderr"].count("error:") == 1 and "Traceback" not in run["stderr"]
    assert run["stdout"] == ""
    assert run["peak_mb"] < PEAK_MB, run


def npy_header(shape: tuple, fortran: bool = False) -> bytes:
    """The header np.save writes for float64 data of ``shape`` (no data after it)."""
    import io
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "<f8", "fortran_order": fortran,
                                               "shape": shape})
    return out.getvalue()


# ---------------------------------------------------------------------------------------
# Headers that claim huge rows
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("header, words", [
    # The shape the element columns make: 10^10 elements (2.8 GB before the refusal).
    ("W[0,0],W[99999,99999]", ("the element columns of W (W[99999,99999]) make a shape "
                               "(100000, 100000) of 10,000,000,000 elements, over the "
                               "array size limit (10,000,000 elements)")),
    # Under the limit, but every element needs a column: the first missing one is named
    # without listing the 10^7 missing ones (650 MB before).
    ("W[0,0],W[3161,3161]", ("W is declared without a value, so every element needs a "
                             "column; missing W[0,1]")),
])
def test_csv_element_columns_are_held_to_the_array_limit_before_any_work(header, words,
                                                                         tmp_path):
    (tmp_path / "w.csv").write_text(f"{header}\n1,2\n")
    run = measured(tmp_path, "grad", "sum(W)", "--arg", "W", "--at", f"@{tmp_path / 'w.csv'}",
                   "--plain")
    assert_refused_in_bounded_memory(run, "w.csv:1: " + words)


def test_an_index_beyond_c_integers_is_a_limit_message_naming_the_column(tmp_path):
    (tmp_path / "w.csv").write_text("W[0],W[99999999999999999999999]\n1,2\n")
    result = invoke("grad", "sum(W)", "--arg", "W", "--at", f"@{tmp_path / 'w.csv'}")
    assert result.exit_code == 2
    assert result.stderr == (f"error: {tmp_path / 'w.csv'}:1: column "
                             "'W[99999999999999999999999]': index 99999999999999999999999 is "
                             "beyond the array size limit (10,000,000 elements)\n")


@pytest.mark.slow
def test_a_npy_header_claiming_huge_rows_is_refused_before_any_data(tmp_path):
    # (1, 10^4, 10^4): one row of 10^8 numbers, whose labels were built first (3.7 GB).
    (tmp_path / "x.npy").write_bytes(npy_header((1, 10_000, 10_000)) + bytes(64))
    run = measured(tmp_path, "grad", "sum(x)", "--arg", "x", "--at", f"@{tmp_path / 'x.npy'}",
                   "--plain")
    assert_refused_in_bounded_memory(
        run, "x.npy: one row would hold 100,000,000 numbers (x of shape (10000, 10000)), "
             "over the array size limit (10,000,000 elements)")


def test_npz_arrays_that_together_make_huge_rows_are_refused(tmp_path):
    # Two arrays, each within the limit per row, 1.2 * 10^7 numbers a row together.
    with zipfile.ZipFile(tmp_path / "p.npz", "w") as archive:
        for name in ("a", "b"):
            archive.writestr(f"{name}.npy", npy_header((1, 6_000_000)))
    result = invoke("grad", "sum(a) + sum(b)", "--arg", "a", "--arg", "b", "--at",
                    f"@{tmp_path / 'p.npz'}")
    assert result.exit_code == 2
    assert "one row would hold 12,000,000 numbers" in result.stderr


@pytest.mark.slow
def test_a_compressed_fortran_order_npz_is_not_read_whole(tmp_path):
    """A Fortran-order array's rows are apart in the file, so it would be read whole: a
    700 KB .npz of zeros held 160 MB (gigabytes for a larger one). Over the array size
    limit it is refused, saying how to save it."""
    shape = (8000, 2500)
    with zipfile.ZipFile(tmp_path / "f.npz", "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=1) as archive, \
            archive.open("x.npy", "w", force_zip64=True) as member:
        member.write(npy_header(shape, fortran=True))
        zeros, left = bytes(1 << 22), shape[0] * shape[1] * 8
        while left:
            member.write(zeros[:min(left, len(zeros))])
            left -= min(left, len(zeros))
    assert (tmp_path / "f.npz").stat().st_size < 1 << 20
    run = measured(tmp_path, "grad", "sum(x)", "--arg", "x", "--at", f"@{tmp_path / 'f.npz'}",
                   "--output", tmp_path / "out.npz")
    assert_refused_in_bounded_memory(
        run, "x is stored in Fortran (column-major) order, where a row's numbers are "
             "apart, so it is read whole: 20,000,000 numbers, over the array size limit")
    assert "np.ascontiguousarray" in run["stderr"]
    assert not (tmp_path / "out.npz").exists()


def test_a_small_fortran_order_array_gives_the_rows_of_its_c_order_copy(tmp_path):
    """Within the limit, a Fortran-order array is read (whole) and gives the same rows as
    its C-order copy: the truth is numpy's own indexing of the array."""
    points = np.asfortranarray(np.arange(24.0).reshape(6, 4) ** 1.5)
    np.save(tmp_path / "p.npy", points)
    assert np.load(tmp_path / "p.npy").flags.f_contiguous
    result = invoke("value-grad", "sum(p*p)", "--var", "p", "--at", f"@{tmp_path / 'p.npy'}",
                    "--plain", "--chunk", "4")
    assert result.exit_code == 0, result.output
    rows = np.array([list(map(float, line.split())) for line in result.stdout.splitlines()])
    np.testing.assert_allclose(rows[:, 0], (points * points).sum(axis=1), rtol=1e-15)
    np.testing.assert_array_equal(rows[:, 1:], 2 * points)


@pytest.mark.slow
def test_a_large_chunk_of_rows_with_big_declared_values_is_read_in_smaller_pieces(tmp_path):
    """A column sets W[0,0] of a declared (100, 100) W: --chunk 10^7 rows made a copy of W
    per row of the whole file at once (20,000 rows: 1.6 GB, then more), and failed. The
    rows read at once are held to the array size limit in all; the output is the same."""
    rows = 20_000
    (tmp_path / "w.csv").write_text("x,W[0,0]\n" + "".join(f"1,{k}\n" for k in range(rows)))
    run = measured(tmp_path, "grad", "x * sum(W)", "--arg", "x", "--arg",
                   "W=ones([100, 100])", "--params", "x", "--at", f"@{tmp_path / 'w.csv'}",
                   "--chunk", "10000000", "--plain")
    assert run["code"] == 0, run
    # d/dx x*sum(W) = sum(W): 9,999 ones and W[0,0], the row's k.
    assert run["stdout"].split() == [repr(9999.0 + k) for k in range(rows)]
    assert run["peak_mb"] < 500, run


# ---------------------------------------------------------------------------------------
# Lines without end
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_line_without_end_on_standard_input_is_refused_in_bounded_memory(tmp_path):
    # 50 MB without a line end after the header: held whole, it took about 1 GB.
    source = tmp_path / "stdin.csv"
    with open(source, "wb") as f:
        f.write(b"x\n1\n")
        f.writelines(b"1" * (1 << 20) for _ in range(50))
    run = measured(tmp_path, "grad", "x*x", "--arg", "x", "--at", "-", "--plain",
                   stdin=source)
    assert run["code"] == 2, run
    assert run["stdout"] == "2.0\n"   # the row before it, computed first
    assert ("<stdin>:3: the line has 52,428,800 characters, over the limit of 8,388,608 "
            "for a CSV row") in run["stderr"]
    assert run["peak_mb"] < PEAK_MB, run


@pytest.mark.parametrize("name, header, line", [
    ("p.csv", "x\n", "1" * 9_000_000 + "\n"),
    ("p.jsonl", "", '{"x": [' + "1," * 4_500_000 + "1]}\n"),
])
def test_a_long_line_in_a_file_is_a_bad_row_that_skip_bad_rows_records(name, header, line,
                                                                        tmp_path):
    first = '{"x": 1}\n' if name.endswith("jsonl") else "1\n"
    last = '{"x": 3}\n' if name.endswith("jsonl") else "3\n"
    (tmp_path / name).write_text(header + first + line + last)
    result = invoke("grad", "sum(x*x)", "--arg", "x", "--at", f"@{tmp_path / name}", "--json",
                    "--skip-bad-rows")
    assert result.exit_code == 0, result.output
    rows = [json.loads(text) for text in result.stdout.splitlines()]
    assert [r["row"] for r in rows] == [0, 1, 2]
    assert rows[0]["gradients"][0]["gradient"] == 2.0
    assert rows[2]["gradients"][0]["gradient"] == 6.0
    kind = "JSON Lines" if name.endswith("jsonl") else "CSV"
    assert rows[1]["error"] == (f"{tmp_path / name}:{2 + bool(header)}: the line has "
                                f"{len(line) - 1:,} characters, over the limit of 8,388,608 "
                                f"for a {kind} row (write large arrays in .npy or .npz files)")


def test_a_header_line_without_end_is_refused(tmp_path):
    (tmp_path / "p.csv").write_text("x" * 9_000_000)
    result = invoke("grad", "x", "--arg", "x", "--at", f"@{tmp_path / 'p.csv'}")
    assert result.exit_code == 2
    assert "p.csv:1: the line has 9,000,000 characters, over the limit" in result.stderr
