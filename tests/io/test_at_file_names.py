"""File names whose bytes are not UTF-8 (issue 20, part 4): Python carries such a name as
lone surrogates (``os.fsdecode``), which a message could not print nor a UTF-8 output
file hold; a run with one as ``--at @PATH``, ``--output PATH`` or ``--arg x=@PATH`` works,
or fails with one clean message naming the bytes as ``\\xNN``.

These run the installed command with byte arguments, as a shell passes such a name.
"""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from cli_process import COMMAND

SOURCE = b"p\xff.csv"          # 0xff is never UTF-8
ROWS = "x\n1\n2\nabc\n4\n"     # line 4 cannot be read: a bad row whose message names the file


def run(*args: bytes, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([os.fsencode(c) for c in COMMAND] + list(args), capture_output=True,
                          cwd=cwd, timeout=120, check=False)


@pytest.fixture
def folder(tmp_path):
    with open(os.path.join(os.fsencode(tmp_path), SOURCE), "w") as f:
        f.write(ROWS)
    return tmp_path


def bad_row_message(folder) -> str:
    return f"{folder}/p\\xff.csv:4: 'abc' is not a number (column 1)"


@pytest.mark.slow
@pytest.mark.parametrize("extension", [b".jsonl", b".csv", b".txt", b".npz"])
def test_a_source_and_an_output_named_in_bytes_that_are_not_utf8(extension, folder):
    output = os.path.join(os.fsencode(folder), b"out\xfe" + extension)
    done = run(b"grad", b"x*x", b"--arg", b"x", b"--at", b"@" + os.path.join(
        os.fsencode(folder), SOURCE), b"--output", output, b"--skip-bad-rows", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"" and done.stdout == b""
    # The truth: the rows 1, 2, 4 (d/dx x*x = 2x) and the bad row's message.
    if extension == b".npz":
        with np.load(output) as saved:
            assert saved["row"].tolist() == [0, 1, 2, 3]
            np.testing.assert_array_equal(saved["d_x"], [2.0, 4.0, np.nan, 8.0])
            assert saved["error_message"].tolist() == [bad_row_message(folder)]
        return
    with open(output, encoding="utf-8") as f:
        text = f.read()
    if extension == b".jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
        assert rows[2] == {"row": 2, "error": bad_row_message(folder)}
        assert [r["gradients"][0]["gradient"] for r in rows if "error" not in r] == [2, 4, 8]
    elif extension == b".csv":
        assert text.splitlines() == ["row,x,d_x", "0,1.0,2.0", "1,2.0,4.0", "2,,", "3,4.0,8.0"]
    else:
        assert text.splitlines() == ["2.0", "4.0", f"error: {bad_row_message(folder)}", "8.0"]


@pytest.mark.slow
def test_a_bad_row_of_such_a_source_stops_with_one_clean_message(folder):
    done = run(b"grad", b"x*x", b"--arg", b"x", b"--at", b"@" + SOURCE, b"--json", cwd=folder)
    assert done.returncode == 2
    assert done.stderr.decode("utf-8") == (
        "error: p\\xff.csv:4: 'abc' is not a number (column 1) (--skip-bad-rows records "
        "such rows and carries on)\n")
    assert len(done.stdout.decode("utf-8").splitlines()) == 2


@pytest.mark.parametrize("args, message", [
    ([b"--at", b"@missing\xff.csv"], "error: missing\\xff.csv: cannot read file"),
    ([b"--arg", b"y=@missing\xff.npy"], "error: --arg y: missing\\xff.npy: cannot read file"),
    ([b"--at", b"@" + SOURCE, b"--output", b"no\xfe/out.csv"],
     "error: --output no\\xfe/out.csv: cannot write the file"),
])
def test_a_missing_file_named_in_such_bytes_is_one_clean_message(args, message, folder):
    done = run(b"grad", b"x*x", b"--arg", b"x=1", *args, cwd=folder)
    assert done.returncode == 2
    text = done.stderr.decode("utf-8")
    assert text.startswith(message) and text.count("\n") == 1, text
