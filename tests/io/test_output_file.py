"""Issue 20, parts 2 and 3: an output file is never lost or corrupted, and closed standard
streams are handled.

Every file gradcli writes goes to a temporary file beside PATH and is renamed into place
(``gradcli/io/outfile.py``). The truths here are independent of the program: the bytes
and inode of the file that was there before, ``json.load``/``np.load``/``csv`` reading what
was written, and the derivatives written out by hand (d/dx x^2 = 2x; the Rosenbrock
gradient of ``batch_helpers``).
"""
from __future__ import annotations

import csv
import json
import os
import signal
import stat
import subprocess
import tempfile
import time

import numpy as np
import pytest
from batch_helpers import ROSEN, invoke, rosenbrock
from cli_process import COMMAND
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

POINTS = np.array([[1.0, 1.0], [2.0, 3.0], [-1.2, 1.0], [0.5, -0.25]])
TEXT_FORMATS = (".csv", ".jsonl", ".txt", ".json")


def points_csv(directory) -> str:
    path = os.path.join(directory, "points.csv")
    with open(path, "w") as f:
        f.write("x,y\n" + "".join(f"{x!r},{y!r}\n" for x, y in POINTS.tolist()))
    return f"@{path}"


def xs_csv(directory) -> str:
    """The points' x alone (for ``grad x^2``), as xs.csv."""
    path = os.path.join(directory, "xs.csv")
    with open(path, "w") as f:
        f.write("x\n" + "".join(f"{x!r}\n" for x in POINTS[:, 0].tolist()))
    return f"@{path}"


def leftovers(directory, keep=()) -> list[str]:
    """What is in ``directory`` besides ``keep``: a temporary file or directory left
    behind would be here."""
    return sorted(set(os.listdir(directory)) - {os.path.basename(str(k)) for k in keep})


# ---------------------------------------------------------------------------------------
# A failing run leaves an existing file as it was
# ---------------------------------------------------------------------------------------
def _failures(directory: str, ext: str) -> dict:
    """name -> the arguments of a run that fails before its first row is complete (the
    sources it reads: ``_write_sources``)."""
    src = f"@{os.path.join(directory, 'points.csv')}"
    bad_first = os.path.join(directory, "bad_first.csv")
    wrong_header = os.path.join(directory, "wrong_header.csv")
    other_flag = "--csv" if ext != ".csv" else "--json"
    return {
        "refused --params": ("grad", ROSEN, "--arg", "x", "--arg", "y", "--at", src,
                             "--params", "z"),
        "unknown name": ("value-grad", ROSEN + " + z", "--var", "x", "--var", "y",
                         "--at", src),
        "bad program": ("tape", "(1 - x)^2 +", "--var", "x", "--var", "y", "--at", src),
        "bad first row": ("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                          f"@{bad_first}"),
        "missing input file": ("jacobian", "[x*y, x^2]", "--arg", "x", "--arg", "y",
                               "--at", f"@{os.path.join(directory, 'missing.csv')}"),
        "undeclared column": ("grad", "x^2", "--arg", "x", "--at", f"@{wrong_header}"),
        "--order with --at": ("grad", ROSEN, "--arg", "x", "--arg", "y", "--at", src,
                              "--order", "2"),
        "no trainable variable": ("implicit", ROSEN, "--arg", "x", "--arg", "y", "--at",
                                  src),
        "unknown --wrt": ("hessian", ROSEN, "--arg", "x", "--arg", "y", "--at", src,
                          "--wrt", "q"),
        "unknown tangent": ("jvp", ROSEN, "--arg", "x", "--arg", "y", "--at", src,
                            "--tangent", "q=1"),
        "option out of range": ("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                                src, "--chunk", "0"),
        "--symbolic with --at": ("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                                 src, "--symbolic"),
        "conflicting format": ("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                               src, other_flag),
    }


FAILURES = sorted(_failures("", ".csv"))


def _write_sources(directory: str) -> None:
    points_csv(directory)
    for name, text in (("bad_first.csv", "x,y\nabc,1\n2,3\n"), ("wrong_header.csv", "q\n1\n")):
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)


def assert_failing_run_keeps(directory: str, failure: str, ext: str, before: bytes) -> None:
    _write_sources(directory)
    out = os.path.join(directory, "out" + ext)
    with open(out, "wb") as f:
        f.write(before)
    inode = os.stat(out).st_ino
    result = invoke(*_failures(directory, ext)[failure], "--output", out)
    assert result.exit_code == 2, (failure, ext, result.output)
    assert "Traceback" not in result.output
    with open(out, "rb") as f:
        assert f.read() == before, (failure, ext, result.stderr)
    assert os.stat(out).st_ino == inode  # not even replaced by a copy
    assert leftovers(directory, [out]) == ["bad_first.csv", "points.csv",
                                           "wrong_header.csv"]


@pytest.mark.parametrize("ext", TEXT_FORMATS + (".npz",))
def test_a_refused_run_leaves_the_existing_output_as_it_was(ext, tmp_path):
    # today's symptom: --params z is refused at the first chunk, after PATH was truncated
    assert_failing_run_keeps(str(tmp_path), "refused --params", ext, b"precious\n")


@pytest.mark.parametrize("ext", (".csv", ".npz"))
def test_a_bad_first_row_leaves_the_existing_output_as_it_was(ext, tmp_path):
    assert_failing_run_keeps(str(tmp_path), "bad first row", ext, b"precious\n")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failure=st.sampled_from(FAILURES), ext=st.sampled_from(TEXT_FORMATS + (".npz",)),
       before=st.binary(max_size=300))
def test_any_failing_run_leaves_an_existing_output_byte_identical(failure, ext, before):
    with tempfile.TemporaryDirectory() as directory:
        assert_failing_run_keeps(directory, failure, ext, before)


def test_a_bad_row_after_the_first_keeps_the_complete_rows_and_replaces_the_file(tmp_path):
    (tmp_path / "bad.csv").write_text("x,y\n1,1\n2,3\nabc,1\n")
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    result = invoke("value-grad", ROSEN, "--var", "x", "--var", "y", "--at",
                    f"@{tmp_path / 'bad.csv'}", "--output", out, "--chunk", "1")
    assert result.exit_code == 2 and "'abc' is not a number" in result.stderr
    assert f"{out} holds the 2 rows before it" in result.stderr
    rows = list(csv.reader(out.read_text().splitlines()))
    value, dx, dy = rosenbrock(POINTS[:2, 0], POINTS[:2, 1])
    assert rows[0] == ["row", "x", "y", "value", "d_x", "d_y"]
    np.testing.assert_allclose([[float(v) for v in r] for r in rows[1:]], np.column_stack(
        [[0, 1], POINTS[:2], value, dx, dy]), rtol=1e-13)
    assert leftovers(tmp_path, [out, "bad.csv"]) == []


# ---------------------------------------------------------------------------------------
# What is written, and where
# ---------------------------------------------------------------------------------------
def test_output_json_is_one_json_document_an_array_of_the_rows(tmp_path):
    out = tmp_path / "x.json"
    args = ("value-grad", ROSEN, "--var", "x", "--var", "y", "--at", points_csv(tmp_path))
    result = invoke(*args, "--output", out)
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())  # one document, not JSON Lines
    value, dx, dy = rosenbrock(POINTS[:, 0], POINTS[:, 1])
    assert [r["row"] for r in document] == [0, 1, 2, 3]
    np.testing.assert_allclose([r["value"] for r in document], value, rtol=1e-13)
    np.testing.assert_allclose([[g["gradient"] for g in r["gradients"]] for r in document],
                               np.column_stack([dx, dy]), rtol=1e-13)
    lines = invoke(*args, "--json")  # the same objects as JSON Lines on standard output
    assert document == [json.loads(line) for line in lines.stdout.splitlines()]


def test_output_json_with_check_ends_with_the_check_object(tmp_path):
    out = tmp_path / "x.json"
    result = invoke("grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path), "--check",
                    "--output", out)
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert [r["gradients"][0]["gradient"] for r in document[:-1]] == \
        (2 * POINTS[:, 0]).tolist()
    assert document[-1]["check"]["verdict"] == "passed"


@pytest.mark.parametrize("ext", TEXT_FORMATS + (".npz",))
def test_a_directory_as_output_says_is_a_directory(ext, tmp_path):
    out = tmp_path / ("d" + ext)
    out.mkdir()
    result = invoke("grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path),
                    "--output", out)
    assert result.exit_code == 2
    assert f"--output {out}: is a directory, not a file" in result.stderr
    assert out.is_dir() and leftovers(tmp_path, [out, "xs.csv"]) == []


@pytest.mark.slow
def test_an_image_path_that_is_a_directory_says_is_a_directory(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "d.png").mkdir()
    result = invoke("plot", "x^2", "--arg", "x=-1:1", "--output", tmp_path / "d.png")
    assert result.exit_code == 2
    assert f"--output {tmp_path / 'd.png'}: is a directory, not a file" in result.stderr
    result = invoke("minimize", "(x - 1)^2", "--var", "x=0", "--steps", "2", "--plot",
                    tmp_path / "d.png")
    assert result.exit_code == 2
    assert f"--plot {tmp_path / 'd.png'}: is a directory, not a file" in result.stderr
    assert leftovers(tmp_path, ["d.png"]) == []


def test_the_new_file_keeps_the_permissions_of_the_one_it_replaces(tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    result = invoke("grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path),
                    "--output", out)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert out.read_text().splitlines()[1:] == [f"{i},{x!r},{2 * x!r}" for i, x in
                                                enumerate(POINTS[:, 0].tolist())]


def test_a_new_file_has_the_permissions_open_gives_under_the_umask(tmp_path):
    out = tmp_path / "out.npz"
    old = os.umask(0o027)
    try:
        result = invoke("grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path),
                        "--output", out)
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # 0o666 less the umask


def test_a_symbolic_link_as_output_is_followed(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    result = invoke("grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path),
                    "--output", link)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and real.read_text().startswith("row,x,d_x\n")


def test_a_named_pipe_as_output_is_written_directly(tmp_path):
    import threading
    pipe = tmp_path / "pipe.txt"
    os.mkfifo(pipe)
    received = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()))
    reader.start()
    result = invoke("grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path), "--output",
                    pipe)
    if reader.is_alive():  # (the run failed before opening the pipe: release the reader)
        with open(pipe, "w"):
            pass
    reader.join(60)
    assert result.exit_code == 0, result.output
    assert received == ["".join(f"{2 * x!r}\n" for x in POINTS[:, 0].tolist())]
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert leftovers(tmp_path, [pipe, "xs.csv"]) == []


@pytest.mark.slow
def test_a_descriptor_name_as_output_is_written_directly(tmp_path):
    # /dev/stdout resolves to no file beside which a temporary could go (a pipe here)
    result = subprocess.run(COMMAND + ["grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path),
                                       "--output", "/dev/stdout", "--plain"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(f"{2 * x!r}\n" for x in POINTS[:, 0].tolist())


# ---------------------------------------------------------------------------------------
# Signals and concurrent writers (subprocesses)
# ---------------------------------------------------------------------------------------
def _written_bytes(directory, out) -> int:
    """Bytes written so far: the temporary beside ``out`` (a file, or the .npz's
    directory of arrays), or ``out`` itself where it is written in place."""
    total = 0
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.endswith(".partial") or path == str(out):
            if os.path.isdir(path):
                total += sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
            else:
                total += os.path.getsize(path)
    return total


def _stopped_run(tmp_path, out, sig):
    """``grad x^2 --at`` on 200,000 rows of x = 1.5, one row a chunk (so it lasts far
    longer than the test), stopped by ``sig`` once some rows are written: (return code,
    standard error, rows reported written)."""
    (tmp_path / "p.csv").write_text("x\n" + "1.5\n" * 200_000)
    process = subprocess.Popen(COMMAND + ["grad", "x^2", "--arg", "x", "--at",
                                          f"@{tmp_path / 'p.csv'}", "--chunk", "1",
                                          "--output", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and _written_bytes(tmp_path, out) < 3000:
        time.sleep(0.05)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=90)
    assert "Traceback" not in stderr
    written = stderr.split("rows were written completely")[0].split()[-1] \
        if "rows were written completely" in stderr else "-1"
    return process.returncode, stderr, int(written.replace(",", ""))


def _rows_of(out) -> list:
    """The rows ``out`` holds, as (row, gradient) pairs, read by its format's reader."""
    ext = os.path.splitext(str(out))[1]
    if ext == ".json":
        return [(r["row"], r["gradients"][0]["gradient"]) for r in json.loads(out.read_text())]
    if ext == ".csv":
        lines = out.read_text().splitlines()
        assert lines[0] == "row,x,d_x"
        return [(int(r), float(d)) for r, _, d in csv.reader(lines[1:])]
    with np.load(out) as data:
        return list(zip(data["row"].tolist(), data["d_x"].tolist()))


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, word", [(signal.SIGTERM, 143, "terminated"),
                                             (signal.SIGINT, 130, "interrupted")])
@pytest.mark.parametrize("ext", (".csv", ".json", ".npz"))
def test_a_stopped_run_keeps_the_complete_rows_and_no_temporary(sig, code, word, ext,
                                                                tmp_path):
    out = tmp_path / ("out" + ext)
    returncode, stderr, written = _stopped_run(tmp_path, out, sig)
    assert returncode == code, stderr
    assert stderr.startswith(f"{word}: ")
    rows = _rows_of(out)  # a valid file of its format
    assert 0 < written == len(rows) < 200_000
    assert rows == [(i, 3.0) for i in range(written)]  # d/dx x^2 at 1.5
    assert leftovers(tmp_path, [out, "p.csv"]) == []


@pytest.mark.slow
def test_two_processes_writing_one_path_end_with_one_complete_file(tmp_path):
    # The second starts once the first is writing, and has fewer rows: written in place,
    # its rows would land over the first's beginning, with the first's tail after them.
    out = tmp_path / "out.csv"
    expected, processes = [], []
    for x, rows in ((1.5, 3000), (2.5, 300)):
        source = tmp_path / f"p{x}.csv"
        source.write_text("x\n" + f"{x!r}\n" * rows)
        expected.append("row,x,d_x\n" + "".join(f"{i},{x!r},{2 * x!r}\n"
                                                for i in range(rows)))
        deadline = time.monotonic() + 90
        while processes and _written_bytes(tmp_path, out) < 2000 \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        processes.append(subprocess.Popen(
            COMMAND + ["grad", "x^2", "--arg", "x", "--at", f"@{source}", "--chunk", "1",
                       "--output", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for process in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    assert out.read_text() in expected  # one of the two, whole
    assert leftovers(tmp_path, [out, "p1.5.csv", "p2.5.csv"]) == []


# ---------------------------------------------------------------------------------------
# Closed standard streams (part 3)
# ---------------------------------------------------------------------------------------
def shell(redirections: str, *args, cwd=None) -> subprocess.CompletedProcess:
    """``gradcli ARGS REDIRECTIONS`` run by bash (``>&-`` closes standard output, as a
    user's shell does), with what is left open captured."""
    return subprocess.run(["bash", "-c", f'"$@" {redirections}', "bash", *COMMAND,
                           *map(str, args)], capture_output=True, text=True, timeout=120,
                          cwd=cwd, stdin=subprocess.DEVNULL, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--json"], ["--plain"]])
def test_a_closed_standard_output_is_a_write_error_not_a_traceback(flags, tmp_path):
    for args in (["grad", "x^2", "--arg", "x=3"],
                 ["grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path)]):
        result = shell(">&-", *args, *flags)
        assert result.returncode == 2, result.stderr
        assert result.stderr == "error: cannot write the output: Bad file descriptor\n"
        result = shell(">&- 2>&-", *args, *flags)
        assert result.returncode == 2 and result.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("flags, printed", [(["--plain"], "6.0\n"), (["--json"], None),
                                            ([], None)])
def test_a_closed_standard_error_keeps_the_output_and_the_exit_code(flags, printed):
    result = shell("2>&-", "grad", "x^2", "--arg", "x=3", *flags)
    assert result.returncode == 0
    if printed is not None:
        assert result.stdout == printed  # d/dx x^2 at 3
    elif flags == ["--json"]:
        assert json.loads(result.stdout)["gradients"][0]["gradient"] == 6.0
    else:
        assert "6.0" in result.stdout
    result = shell("2>&-", "grad", "x^2 +", "--arg", "x=3", *flags)
    assert result.returncode == 2 and result.stdout == ""


@pytest.mark.slow
def test_a_file_output_with_standard_streams_closed_is_written_and_exits_0(tmp_path):
    out = tmp_path / "out.csv"
    result = shell(">&- 2>&-", "grad", "x^2", "--arg", "x", "--at", xs_csv(tmp_path),
                   "--output", out)
    assert result.returncode == 0
    assert out.read_text() == "row,x,d_x\n" + "".join(
        f"{i},{x!r},{2 * x!r}\n" for i, x in enumerate(POINTS[:, 0].tolist()))


@pytest.mark.slow
def test_at_dash_with_standard_input_closed_says_there_is_no_standard_input():
    result = shell("<&-", "grad", "x^2", "--arg", "x", "--at", "-")
    assert result.returncode == 2
    assert result.stderr == "error: --at -: there is no standard input\n"
    result = shell("<&-", "grad", "-", "--arg", "x=1")
    assert result.returncode == 2
    assert result.stderr == "error: the program is '-' but there is no standard input\n"


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["plot", "x^2", "--arg", "x=-1:1", "--json", "--points", "20000"],
    ["minimize", "sum((w - 1)^2)", "--var", "w=zeros(5000)", "--steps", "3", "--json"]])
def test_plot_and_minimize_end_as_the_other_commands_on_a_closed_output(args):
    # more output than a pipe holds, so the failed write happens during the run
    result = shell(">&-", *args)
    assert result.returncode == 2
    assert result.stderr == "error: cannot write the output: Bad file descriptor\n"
    result = shell("| head -c 10 > /dev/null; exit ${PIPESTATUS[0]}", *args)
    assert result.returncode == 141 and result.stderr == ""
