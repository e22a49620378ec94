"""The ``scale`` workload of benchmarks/run.py (issue 24): ``--at`` over Parquet, in one
process and on a Dask ``LocalCluster`` of 2 worker processes.

- throughput: ``value-grad`` of a 20-statement program (Rosenbrock and 18 more
  statements per row) at every row of a Parquet directory, written as a directory of
  parts, by one process (``--at`` alone) and by ``--dask tcp://...`` (a LocalCluster of
  2 workers started here first, as ``--dask local:2`` starts one, so its start-up is not
  in the ratio, and which has run gradcli before (the runs of the task cost below), so
  its workers' first import of gradcli, ~0.5 s of CPU each, is not either; ``--dask
  local:2``, all of that included, is shown too). Two ratios:
  whole runs (start-up included: the client's imports and connection, the workers'
  first import of gradcli), and throughput, rows per second once running: the rows
  over the time the big run takes beyond a run of as many partitions of 25 rows
  (``tiny_40``, on the same side: the start-ups and per-partition costs cancel).
- CPU accounting, which a busy machine does not blur as it does wall times: user+sys
  of the one process, against the SUM over the ``--dask`` run's client (the gradcli
  process), scheduler (and nannies: they run in this process) and workers
  (``os.times`` on each). On 2 idle cores a 1.6x throughput needs the ``--dask`` run's
  CPU <= 2/1.6 = 1.25x the one process's (and no serial stage).
- the scheduler's cost per task: whole ``--dask`` runs over 1-row partitions, P1 and P2
  of them; the slope (T2 - T1) / (P2 - P1) is the wall time a partition adds, times the
  workers the time each worker spends on one;
- peak memory: the client's (the ``gradcli`` process, RSS by wait4) and each worker's
  (``ru_maxrss`` of the worker process, after a restart) for ``memory_rows`` rows
  streamed into a directory of parts.

Every run is a whole process (``_timed_process`` of run.py); numbers in ``results["scale"]``.
"""
from __future__ import annotations

import os
import resource
import shutil
import tempfile
from pathlib import Path

import numpy as np

#: Rosenbrock, then 18 more statements per row (20 in all): compute-heavy per row.
PROGRAM = """a = x*x
b = y - a
c = 1 - x
r = c*c + 100*b*b
s = sin(x)*cos(y)
e = exp(-a)
t = tanh(x*y)
l = log(1 + a)
q = sqrt(1 + y*y)
u = s + e
v = t*l
w = q - u
z = v*w
k = z + r
m = k / (1 + e)
n = m*m
o = cos(n*0.001)
p = o + sin(k*0.01)
g = p*q
g + r"""
GROUP = 250_000          # rows per row group (a partition)
FILE_ROWS = 2_000_000    # rows per Parquet file


def write_data(root: Path, rows: int, group: int = GROUP, file_rows: int = FILE_ROWS):
    """``rows`` uniform (x, y) rows as Parquet files of ``file_rows``, row groups of
    ``group``; written a file at a time (memory: one file's columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(24)
    for k, start in enumerate(range(0, rows, file_rows)):
        n = min(file_rows, rows - start)
        pq.write_table(pa.table({"x": rng.uniform(-2, 2, n), "y": rng.uniform(-2, 2, n)}),
                       root / f"part-{k:05d}.parquet", row_group_size=group)


def run_scale(results: dict, timed_process, gradcli_args, rows: int, memory_rows: int):
    """Fill ``results["scale"]``; ``timed_process(cmd, cwd, timeout)`` -> (s, rss, status)."""
    import distributed
    entry: dict = {"rows": rows, "memory_rows": memory_rows, "median": {}, "check": {},
                   "cpu": {}}
    results["scale"] = entry
    command = ["value-grad", PROGRAM, "--var", "x", "--var", "y"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # at least 40 partitions (20 tasks per worker), of at most GROUP rows; "small":
        # as many partitions, of 25 rows
        write_data(tmp / "data", rows, group=min(GROUP, max(1000, rows // 40)))
        parts = _partitions(tmp / "data")
        write_data(tmp / "small", 25 * parts, group=25, file_rows=25 * parts)
        entry["partitions"] = parts
        client = None

        def run(key, *extra, data="data", account=True):
            out = tmp / f"out-{key}"
            shutil.rmtree(out, ignore_errors=True)
            before = _cpu(client if account else None)
            seconds, rss, status = timed_process(
                gradcli_args(command + ["--at", f"@{tmp / data}", "--output", f"{out}/",
                                        *extra]), tmp, 3600)
            if account:
                entry["cpu"][key] = _spent(before, _cpu(client))
            entry["median"][key], entry["check"][key] = seconds, status
            entry.setdefault("rss", {})[key] = rss
            shutil.rmtree(out, ignore_errors=True)
            return seconds

        run("one_process")
        run("one_process_small", data="small")
        run("dask_local_2", "--dask", "local:2")
        from gradcli.run.distributed import local_cluster
        cluster = local_cluster(2)   # (as --dask local:2 starts it: see its doc)
        client = distributed.Client(cluster)
        try:
            address = cluster.scheduler_address
            # the cost of a task: 1-row partitions, two counts (these runs are also the
            # ones that import gradcli in the workers: the runs after them find it
            # imported, as on a cluster that served gradcli before)
            counts = (40, 200)
            for p in counts:
                write_data(tmp / f"tiny{p}", p, group=1, file_rows=p)
                run(f"tiny_{p}", "--dask", address, data=f"tiny{p}")
            t1, t2 = (entry["median"].get(f"tiny_{p}") for p in counts)
            if t1 is not None and t2 is not None:
                entry["task_ms"] = 1000 * (t2 - t1) / (counts[1] - counts[0])
            run("dask_2", "--dask", address)
            run("dask_2_small", "--dask", address, data="small")
            # peak memory, with the workers restarted (their maxrss starts afresh)
            shutil.rmtree(tmp / "data")
            write_data(tmp / "big", memory_rows)
            client.restart()
            run("memory", "--dask", address, data="big", account=False)
            entry["worker_rss"] = sorted(client.run(_maxrss).values())
        finally:
            if client is not None:
                client.close()
            cluster.close()
    return entry


def _partitions(root: Path) -> int:
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(f).metadata.num_row_groups for f in root.glob("*.parquet"))


def _cpu(client) -> dict:
    """User+sys seconds so far: the reaped children (the gradcli processes), this
    process (with a LocalCluster: its scheduler and nannies) and each worker's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = os.times()
    workers = {} if client is None else client.run(_own_cpu)
    return {"client": children.ru_utime + children.ru_stime,
            "scheduler": own.user + own.system, "workers": workers}


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _spent(before: dict, after: dict) -> dict:
    """CPU seconds between two ``_cpu``: client, scheduler (None without a cluster of
    ours), workers (a list), total."""
    workers = [after["workers"][w] - before["workers"].get(w, 0.0)
               for w in sorted(after["workers"])]
    spent = {"client": after["client"] - before["client"],
             "scheduler": after["scheduler"] - before["scheduler"] if workers else None,
             "workers": workers}
    spent["total"] = spent["client"] + (spent["scheduler"] or 0.0) + sum(workers)
    return spent


def _maxrss() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rows_of_report(entry: dict, fmt_ratio, verdict) -> list:
    """The target rows of run.py's report."""
    m, cpu = entry["median"], entry.get("cpu", {})
    out = []
    r = _ratio(m.get("one_process"), m.get("dask_2"))
    what = f"{entry['rows']:.0e} rows, 20-statement program, Parquet in and out"
    out.append((f"scale: --dask on 2 workers / one process, whole runs ({what})",
                _shown(r, fmt_ratio), ">= 1.6x", _passed(r, 1.6)))
    r = _ratio(_beyond(m, "one_process"), _beyond(m, "dask_2"))
    out.append(("scale: --dask on 2 workers / one process, throughput (rows/s beyond a "
                "run of as many 25-row partitions)", _shown(r, fmt_ratio), ">= 1.6x",
                _passed(r, 1.6)))
    one, dask = (cpu.get(k, {}).get("total") for k in ("one_process", "dask_2"))
    r = _ratio(dask, one)
    out.append(("scale: CPU of the --dask run (client + scheduler + workers) / one "
                "process's (1.6x on 2 cores needs <= 1.25x)", _shown(r, fmt_ratio),
                "<= 1.25x", verdict(r, 1.25)))
    task = entry.get("task_ms")
    out.append(("scale: wall time a partition adds on 2 workers (1-row partitions)",
                "n/a" if task is None else f"{task:.1f} ms", "none", "info"))
    client = (entry.get("rss") or {}).get("memory")
    workers = entry.get("worker_rss") or []
    out.append((f"scale: peak RSS, client / each worker, {entry['memory_rows']:.0e} rows to "
                "a directory", "n/a" if client is None else
                f"{client / 2**20:.0f} MiB / " + ", ".join(f"{w / 2**20:.0f}" for w in workers)
                + " MiB", "bounded by partition", "info"))
    return out


def _ratio(a, b):
    return None if not a or not b else a / b


def _beyond(m: dict, key: str):
    """The time the big run took beyond its small twin (as many 25-row partitions)."""
    big, small = m.get(key), m.get(f"{key}_small")
    return None if big is None or small is None or big <= small else big - small


def _shown(r, fmt_ratio) -> str:
    return "n/a" if r is None else fmt_ratio(r)


def _passed(r, at_least: float) -> str:
    return "n/a" if r is None else ("PASS" if r >= at_least else "FAIL")


def print_details(entry: dict) -> None:
    m, cpu = entry["median"], entry.get("cpu", {})
    print(f"scale (value-grad, 20 statements, {entry['rows']:,} rows of Parquet, directory "
          "output; whole processes; CPU as user+sys seconds):")
    for key, label in (("one_process", "--at @data/ --output out/ (one process)"),
                       ("one_process_small", "  the same over as many 25-row partitions"),
                       ("dask_local_2", "--dask local:2 (cluster start-up included)"),
                       ("dask_2", "--dask tcp://... (an existing LocalCluster, 2 workers)"),
                       ("dask_2_small", "  the same over as many 25-row partitions")):
        t = m.get(key)
        rate = "" if t is None or key.endswith("small") else f"  {entry['rows'] / t:,.0f} rows/s"
        print(f"  {label:<58} {'n/a' if t is None else f'{t:.2f} s'}{rate}  "
              f"{entry['check'].get(key, '')}")
        c = cpu.get(key)
        if c:
            parts = f"client {c['client']:.2f}"
            if key == "dask_local_2":
                parts = "its process tree (scheduler and workers are its children)"
            elif c["scheduler"] is not None:
                parts += (f" + scheduler {c['scheduler']:.2f} + workers "
                          + " + ".join(f"{w:.2f}" for w in c["workers"]))
            print(f"  {'':<4}CPU {c['total']:.2f} s = {parts}")
    print()
