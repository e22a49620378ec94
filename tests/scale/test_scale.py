"""``--at`` over Parquet, directories and globs, on one machine and on a Dask cluster
(the session's LocalCluster, tests/scale/conftest.py): per-row results equal to the local
run's bytes and to the derivatives by hand; ``--reduce`` equal to numpy's mean and sum
over the rows; bad rows, a scheduler that cannot be reached, a missing extra."""
from __future__ import annotations

import json
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from batch_helpers import ROSEN, invoke, rosenbrock
from conftest import FILES, GROUP, ROWS

PER_ROW = ("value-grad", ROSEN, "--var", "x", "--var", "y", "--columns", "x,y")
#: A loss per row whose gradient over the rows is the data-parallel one: w, b shared.
LOSS = "(w*x + b - y)^2"
SHARED = ("--var", "w=0.5", "--var", "b=-0.25", "--arg", "x", "--arg", "y", "--columns", "x,y")


def ok(result):
    assert result.exit_code == 0, (result.output, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def table(path):
    return pq.read_table(path)


def test_partitions_keep_the_global_row_order(data):
    from gradcli.io.parquet import open_partitioned
    from gradcli.io.points import CsvOptions, Slot
    source = open_partitioned(f"@{data['dir']}", {"x": Slot("var", None),
                                                   "y": Slot("var", None)},
                              csv=CsvOptions(keep=["id"]))
    starts = [p.start for p in source.partitions]
    sizes = [p.n for p in source.partitions]
    per_file = [GROUP] * (ROWS // GROUP) + [ROWS % GROUP]
    assert sizes == per_file * FILES
    assert starts == np.cumsum([0] + sizes[:-1]).tolist()
    rows = np.concatenate([c.values["x"] for c in source.as_source().items()])
    assert np.array_equal(rows, data["x"])


def test_parquet_rows_are_the_csv_rows_and_the_derivatives_by_hand(data):
    """A directory of Parquet files and one CSV file of the same numbers: the same
    output bytes; the numbers are Rosenbrock's value and gradient by hand."""
    parquet = ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--csv", "--keep", "id"))
    text = ok(invoke(*PER_ROW, "--at", f"@{data['csv']}", "--csv", "--keep", "id"))
    assert parquet == text
    lines = parquet.splitlines()
    assert lines[0] == "row,id,x,y,value,d_x,d_y"
    got = np.array([[float(v) for v in line.split(",")[4:]] for line in lines[1:]])
    value, dx, dy = rosenbrock(data["x"], data["y"])
    np.testing.assert_allclose(got, np.stack([value, dx, dy], axis=1), rtol=1e-13)
    assert [line.split(",")[1] for line in lines[1:]] == data["ids"]


def test_a_glob_and_one_file(data):
    one = ok(invoke(*PER_ROW, "--at", f"@{data['dir'] / 'part-1.parquet'}", "--csv"))
    glob = ok(invoke(*PER_ROW, "--at", f"@{data['dir']}/part-[12].parquet", "--csv"))
    whole = ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--csv")).splitlines()
    assert one.splitlines()[1].split(",")[1:] == whole[1 + ROWS].split(",")[1:]
    assert one.splitlines()[1].split(",")[0] == "0"   # (its own rows, from 0)
    assert [line.split(",", 1)[1] for line in glob.splitlines()[1:]] == \
        [line.split(",", 1)[1] for line in whole[1 + ROWS:]]


def test_npy_shards(tmp_path, data):
    shards = tmp_path / "x"
    shards.mkdir()
    points = np.stack([data["x"], data["y"]], axis=1)
    for k, cut in enumerate((slice(0, 50), slice(50, 51), slice(51, None))):
        np.save(shards / f"part-{k}.npy", points[cut])
    out = ok(invoke("value-grad", "(1 - p[0])^2 + 100*(p[1] - p[0]^2)^2", "--var",
                    "p", "--at", f"@{shards}/part-*.npy", "--csv")).splitlines()
    assert len(out) == 1 + len(points)
    assert [int(line.split(",")[0]) for line in out[1:]] == list(range(len(points)))
    value, _, _ = rosenbrock(data["x"], data["y"])
    np.testing.assert_allclose([float(line.split(",")[3]) for line in out[1:]], value,
                               rtol=1e-13)


def test_parquet_output_one_file_and_a_directory(tmp_path, data):
    one = tmp_path / "one.parquet"
    ok(invoke(*PER_ROW, "--at", f"@{data['csv']}", "--output", one, "--keep", "id"))
    parts = tmp_path / "parts"
    ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--output", f"{parts}/", "--keep", "id"))
    assert sorted(p.name for p in parts.iterdir()) == \
        [f"part-{k:05d}.parquet" for k in range(FILES * -(-ROWS // GROUP))]
    whole = table(one)
    assert whole.column_names == ["row", "id", "x", "y", "value", "d_x", "d_y"]
    assert table(parts).to_pydict() == whole.to_pydict()   # (pyarrow reads the parts)
    value, dx, dy = rosenbrock(data["x"], data["y"])
    np.testing.assert_allclose(whole["d_x"].to_numpy(), dx, rtol=1e-13)
    assert whole["row"].to_pylist() == list(range(FILES * ROWS))


# ---------------------------------------------------------------------------------------
# On the cluster
# ---------------------------------------------------------------------------------------
def test_dask_rows_are_the_local_rows_bit_for_bit(tmp_path, data, scheduler):
    local = ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--json", "--keep", "id"))
    remote = invoke(*PER_ROW, "--at", f"@{data['dir']}", "--json", "--keep", "id",
                    "--dask", scheduler)
    assert ok(remote) == local
    assert f"dask: 2 Dask workers at {scheduler}" in remote.stderr
    parts = tmp_path / "parts"
    ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--output", f"{parts}/", "--dask",
              scheduler))
    single = tmp_path / "one.parquet"
    ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--output", single, "--dask", scheduler))
    here = tmp_path / "here.parquet"
    ok(invoke(*PER_ROW, "--at", f"@{data['dir']}", "--output", here))
    assert table(parts).to_pydict() == table(here).to_pydict() == table(single).to_pydict()


def test_gradcli_dask_is_the_default(data, scheduler, monkeypatch):
    monkeypatch.setenv("GRADCLI_DASK", scheduler)
    result = invoke(*PER_ROW, "--at", f"@{data['dir']}", "--plain")
    assert ok(result) == ok(invoke(*PER_ROW, "--at", f"@{data['csv']}", "--plain"))
    assert "Dask workers" in result.stderr


@pytest.mark.parametrize("how", ["mean", "sum"])
def test_reduce_is_numpy_over_the_rows(data, scheduler, how):
    x, y = data["x"], data["y"]
    r = 0.5 * x - 0.25 - y
    pick = np.mean if how == "mean" else np.sum
    expected = [pick(r * r), pick(2 * r * x), pick(2 * r)]
    answers = []
    for where in ((), ("--dask", scheduler)) if how == "mean" else ((),):
        obj = json.loads(ok(invoke("value-grad", LOSS, *SHARED, "--at", f"@{data['dir']}",
                                   "--reduce", how, "--json", *where)))
        got = [obj["value"]] + [g["gradient"] for g in obj["gradients"]]
        assert [g["name"] for g in obj["gradients"]] == ["w", "b"]
        assert obj["rows"] == len(x)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        answers.append(got)
    assert answers[0] == answers[-1]   # (the same tree of sums here and on the cluster)


def test_reduce_grad_of_shared_arguments(data):
    """grad --params: the data sets x and y, the gradient is of the shared w."""
    obj = json.loads(ok(invoke("grad", "(w*x - y)^2", "--arg", "w=0.5", "--arg", "x",
                               "--arg", "y", "--params", "w", "--columns", "x,y",
                               "--at", f"@{data['dir']}",
                               "--reduce", "mean", "--json")))
    r = 0.5 * data["x"] - data["y"]
    np.testing.assert_allclose(obj["gradients"][0]["gradient"], np.mean(2 * r * data["x"]),
                               rtol=1e-12)


def test_reduce_refuses_a_gradient_per_row(data):
    result = invoke(*PER_ROW, "--at", f"@{data['dir']}", "--reduce", "mean")
    assert result.exit_code == 2
    assert "one per row" in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def with_null(tmp_path_factory):
    import pyarrow as pa
    root = tmp_path_factory.mktemp("null")
    for k in range(2):
        y = [0.5] * 20
        if k == 1:
            y[7] = None
        pq.write_table(pa.table({"x": np.linspace(0, 1, 20), "y": y}),
                       root / f"part-{k}.parquet", row_group_size=10)
    return root


@pytest.mark.parametrize("remote", [False, True])
def test_a_null_is_a_bad_row_named_by_file_partition_and_row(with_null, scheduler, remote,
                                                             tmp_path):
    where = ("--dask", scheduler) if remote else ()
    result = invoke(*PER_ROW, "--at", f"@{with_null}", "--csv", *where)
    assert result.exit_code == 2
    assert "part-1.parquet (partition 2): row 27: y is null" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) == 1 + 27   # (the rows before it)
    skipped = invoke(*PER_ROW, "--at", f"@{with_null}", "--output", tmp_path / "o.parquet",
                     "--skip-bad-rows", *where)
    ok(skipped)
    out = table(tmp_path / "o.parquet")
    assert out["row"].to_pylist() == list(range(40))
    assert out["error"].to_pylist()[27].endswith("row 27: y is null")
    assert out["value"].null_count == 1


def test_an_unreachable_scheduler_is_one_message(gradcli, data):
    started = time.monotonic()
    result = gradcli(*PER_ROW, "--at", f"@{data['dir']}", "--dask", "tcp://127.0.0.1:9",
                     env={"GRADCLI_DASK_TIMEOUT": "2"}, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith("error: --dask tcp://127.0.0.1:9: cannot reach the Dask "
                                    "scheduler within 2 s"), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("args, words", [
    (("--dask", "local:0"), "local:N needs a number of workers"),
    (("--dask", "nowhere"), "give local, local:N or a scheduler's address"),
    (("--reduce", "median"), "--reduce median: give mean or sum"),
])
def test_bad_options(data, args, words):
    result = invoke(*PER_ROW, "--at", f"@{data['dir']}", *args)
    assert result.exit_code == 2 and words in result.stderr, result.stderr


def test_options_need_at():
    result = invoke(*PER_ROW[:2], "--var", "x=1", "--var", "y=1", "--dask", "local")
    assert result.exit_code == 2 and "--dask works with --at" in result.stderr


def test_a_missing_extra_names_the_install_command(monkeypatch):
    import sys
    from gradcli.errors import InputError
    from gradcli.io.parquet import need_pyarrow
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(InputError, match=r"pip install 'gradcli\[dask\]'"):
        need_pyarrow()


# ---------------------------------------------------------------------------------------
# minimize --at DATA --full-batch
# ---------------------------------------------------------------------------------------
FIT = ("minimize", "(w*x + b - y)^2", "--var", "w=0.5", "--var", "b=0", "--arg", "x",
       "--arg", "y", "--columns", "x,y", "--json")


def test_full_batch_is_least_squares_here_and_on_the_cluster(data, scheduler):
    """The fit of y = w x + b over all rows: numpy's least squares; the same run here,
    on the cluster and as the local full batch over one CSV file."""
    x, y = data["x"], data["y"]
    w, b = np.linalg.lstsq(np.stack([x, np.ones_like(x)], axis=1), y, rcond=None)[0]
    runs = [json.loads(ok(invoke(*FIT, "--at", f"@{data['dir']}", *how)))
            for how in (("--full-batch",), ("--dask", scheduler), ())]
    local = json.loads(ok(invoke(*FIT, "--at", f"@{data['csv']}")))
    for run in runs + [local]:
        assert run["converged"] and run["rows"] == len(x)
        got = {v["name"]: v["value"] for v in run["variables"]}
        np.testing.assert_allclose([got["w"], got["b"]], [w, b], rtol=1e-9)
    assert runs[0]["variables"] == runs[1]["variables"]   # (the same sums, bit for bit)
    assert runs[0]["loss"] == pytest.approx(local["loss"], rel=1e-13)


def test_full_batch_refuses_mini_batches(data):
    result = invoke(*FIT, "--at", f"@{data['dir']}", "--full-batch", "--batch-size", "8")
    assert result.exit_code == 2 and "mini-batch optimisers train in this" in result.stderr


# ---------------------------------------------------------------------------------------
# Ctrl-C and a killed worker (processes: slow)
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def many_parts(tmp_path_factory):
    """30 partitions of 3,000 rows: a run long enough (--chunk 50) to stop in the middle."""
    import pyarrow as pa
    root = tmp_path_factory.mktemp("many")
    rng = np.random.default_rng(7)
    for k in range(30):
        pq.write_table(pa.table({"x": rng.normal(size=3000), "y": rng.normal(size=3000)}),
                       root / f"part-{k:03d}.parquet")
    return root


def _started(many_parts, out, scheduler):
    import subprocess

    from cli_process import COMMAND
    process = subprocess.Popen(COMMAND + [*PER_ROW[:6], "--at", f"@{many_parts}", "--chunk",
                                          "50", "--output", f"{out}/", "--dask", scheduler],
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out.is_dir() and sum(p.name.startswith("part-") for p in out.iterdir()) >= 2):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.05)
    return process


def _complete_parts(out):
    """Every file in ``out`` is a complete part (pyarrow reads it) and no temporary is
    left: the rows of the parts, in order."""
    assert all(p.name.startswith("part-") and p.suffix == ".parquet" for p in out.iterdir())
    return np.concatenate([table(p)["row"].to_numpy() for p in sorted(out.iterdir())])


@pytest.mark.slow
def test_ctrl_c_cancels_and_leaves_complete_parts(tmp_path, many_parts, scheduler):
    import signal
    out = tmp_path / "out"
    process = _started(many_parts, out, scheduler)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "complete part" in err and "Traceback" not in err
    time.sleep(1)   # (a task running when it was cancelled may still commit its part)
    rows = _complete_parts(out)
    assert len(rows) < 30 * 3000 and len(rows) % 3000 == 0
    assert len(np.unique(rows)) == len(rows)


@pytest.mark.slow
def test_a_killed_worker_leaves_every_row_exactly_once(tmp_path, many_parts, scheduler):
    import os
    import signal

    import distributed
    out = tmp_path / "out"
    with distributed.Client(scheduler, timeout=30) as client:
        pids = list(client.run(os.getpid).values())
        process = _started(many_parts, out, scheduler)
        os.kill(pids[0], signal.SIGKILL)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        client.wait_for_workers(2, timeout=60)   # (the nanny restarts it, for the others)
    rows = _complete_parts(out)
    assert rows.tolist() == list(range(30 * 3000))


def test_reduce_over_a_one_file_source():
    """--reduce needs no partitions: standard input is one; sum of (w x)^2 and of its
    derivative 2 w x^2 at x = 1, 2, 3."""
    result = invoke("value-grad", "(w*x)^2", "--var", "w=2", "--arg", "x", "--at", "-",
                    "--reduce", "sum", "--plain", stdin="x\n1\n2\n3\n")
    assert ok(result).split() == ["56.0", "56.0"]
