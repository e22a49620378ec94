"""Running one function per partition: in this process, or on a Dask cluster.

``open_runner(None)`` runs the tasks here, one after the other; ``open_runner("local")``
(a ``distributed.LocalCluster`` of worker processes, one per core), ``"local:N"`` (N of
them) or ``"tcp://host:8786"`` (an existing scheduler) runs them on Dask's workers. Both
give the same two operations, so a command's answers do not depend on where it ran:

- ``map(task, parts)``: ``task(part)`` for every partition, the results in partition
  order (at most ``AHEAD`` per worker computed ahead of the one being consumed, so the
  client holds a bounded number of results whatever the data), or, with
  ``ordered=False``, as they complete (the worker wrote its part; only a summary comes
  back).
- ``reduce(task, parts, combine, *args)``: ``task(part, *args)`` per partition,
  combined by a balanced binary tree, pairs of neighbours level by level (``tree``), the
  same pairs here and on the cluster, so a sum is the same floating-point sum in both.
- ``persist(task, parts)``: ``task(part)`` per partition kept where it was made (on the
  workers' memory; here, in this process), to be given to ``reduce`` as the parts:
  ``minimize --full-batch`` reads its data once and reduces over it at every step.

The task is any picklable callable (the command's, made by the CLI layer); Dask pickles
it once per task and a worker's ``task`` may cache what it builds (the parsed program)
in its process. A scheduler that cannot be reached is an InputError after ``timeout``
seconds (``GRADCLI_DASK_TIMEOUT``, default 10). Leaving the runner (the run finished,
failed, or Ctrl-C) cancels what is still running and closes a cluster it started.
"""
from __future__ import annotations

import os
import sys
import uuid

from ..errors import InputError

__all__ = ["AHEAD", "INSTALL", "QUIET", "local_cluster", "open_runner", "scheduler", "tree"]

INSTALL = "pip install 'gradcli[dask]'"
#: Results per worker computed ahead of the one the client is writing (ordered map).
AHEAD = 4
TIMEOUT = 10.0


def scheduler(option: str | None) -> str | None:
    """``--dask``, else ``GRADCLI_DASK``, else None (no cluster); "" or ``none`` is None."""
    value = option if option is not None else os.environ.get("GRADCLI_DASK")
    if value is None or value.strip().lower() in ("", "none", "off"):
        return None
    return value.strip()


def tree(items: list, combine):
    """``items`` combined pairwise, neighbours first, level by level:
    ``((a b) (c d)) e``. The order every reduction here follows.

    >>> tree([1, 2, 3, 4, 5], lambda a, b: f"({a} {b})")
    '(((1 2) (3 4)) 5)'
    """
    if not items:
        raise ValueError("nothing to combine")
    while len(items) > 1:
        items = [combine(items[k], items[k + 1]) if k + 1 < len(items) else items[k]
                 for k in range(0, len(items), 2)]
    return items[0]


def open_runner(spec: str | None, timeout: float | None = None):
    """A runner for ``spec`` (see the module doc), to be used in a ``with`` block."""
    if spec is None:
        return Here()
    return Cluster(spec, _timeout() if timeout is None else timeout)


def _timeout() -> float:
    text = os.environ.get("GRADCLI_DASK_TIMEOUT", "")
    try:
        value = float(text) if text.strip() else TIMEOUT
    except ValueError:
        raise InputError(f"GRADCLI_DASK_TIMEOUT={text!r}: give seconds, e.g. 10") from None
    if not value > 0:
        raise InputError(f"GRADCLI_DASK_TIMEOUT={text!r}: give a positive number of seconds")
    return value


class Here:
    """The tasks in this process, in order."""
    workers = 1
    where = "this process"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def map(self, task, parts: list, ordered: bool = True):
        for part in parts:
            yield part, task(part)

    def reduce(self, task, parts: list, combine, *args):
        return tree([task(part, *args) for part in parts], combine)

    def persist(self, task, parts: list) -> list:
        return [task(part) for part in parts]


class Cluster:
    """The tasks on a Dask cluster (one we start, ``local``/``local:N``, or an existing
    scheduler's)."""

    def __init__(self, spec: str, timeout: float):
        self.spec, self.timeout = spec, timeout
        self.client = self.cluster = None
        self.futures: list = []
        self.held: list = []
        self.token = uuid.uuid4().hex[:8]
        self.count = 0

    # -- connecting --------------------------------------------------------------------
    def __enter__(self):
        try:
            import distributed
        except ImportError:
            raise InputError(f"--dask needs Dask's distributed scheduler, which is not "
                             f"installed: {INSTALL}") from None
        workers = _local_workers(self.spec)
        try:
            if workers is not None:
                self.cluster = local_cluster(workers)
                self.client = distributed.Client(self.cluster, timeout=self.timeout)
            else:
                self.client = distributed.Client(_address(self.spec), timeout=self.timeout)
        except (OSError, TimeoutError) as err:
            self.__exit__(None, None, None)
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InputError(f"--dask {self.spec}: cannot reach the Dask scheduler within "
                             f"{self.timeout:g} s ({detail})") from None
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        link = getattr(self.client, "dashboard_link", None)
        self.where = f"{self.workers} Dask worker{'s' * (self.workers != 1)}"
        sys.stderr.write(f"dask: {self.where} at {self.client.scheduler.address}"
                         + (f"; dashboard {link}" if link else "") + "\n")
        return self

    def __exit__(self, kind, error, trace) -> None:
        if self.client is not None:
            try:
                if self.futures:
                    self.client.cancel(self.futures, force=True)
                self.client.close(timeout=self.timeout)
            except Exception:  # noqa: BLE001 - closing is best effort on the way out
                pass
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=self.timeout)
            except Exception:  # noqa: BLE001 - as above
                pass
        self.client = self.cluster = None
        self.futures = []

    # -- running -----------------------------------------------------------------------
    def _submit(self, task, *args):
        self.count += 1
        future = self.client.submit(task, *args, key=f"gradcli-{self.token}-{self.count}",
                                    pure=False, retries=2)
        self.futures.append(future)
        return future

    def map(self, task, parts: list, ordered: bool = True):
        from distributed import as_completed
        if not ordered:
            futures = {self._submit(task, part): part for part in parts}
            for future in as_completed(list(futures)):
                yield futures[future], future.result()
                future.release()
            return
        ahead = AHEAD * self.workers
        pending = [(part, self._submit(task, part)) for part in parts[:ahead]]
        at = len(pending)
        while pending:
            part, future = pending.pop(0)
            result = future.result()
            future.release()
            if at < len(parts):
                pending.append((parts[at], self._submit(task, parts[at])))
                at += 1
            yield part, result

    def reduce(self, task, parts: list, combine, *args):
        level = [self._submit(task, part, *args) for part in parts]
        while len(level) > 1:
            level = [self._submit(combine, level[k], level[k + 1]) if k + 1 < len(level)
                     else level[k] for k in range(0, len(level), 2)]
        result = level[0].result()
        held = set(self.held)
        for future in self.futures:
            if future not in held:
                future.release()
        self.futures = list(self.held)
        return result

    def persist(self, task, parts: list) -> list:
        """``task(part)`` for every partition, kept on the worker that made it (a
        reduce over these runs where they are)."""
        self.held = [self._submit(task, part) for part in parts]
        return self.held


def local_cluster(workers: int):
    """A ``distributed.LocalCluster`` of ``workers`` processes of one thread, on
    127.0.0.1, its dashboard on a free port, with ``QUIET`` (Dask's settings that cost a
    run CPU it does not need)."""
    import logging

    import dask
    import distributed
    with dask.config.set(QUIET):
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                        processes=True, host="127.0.0.1",
                                        dashboard_address="127.0.0.1:0",
                                        silence_logs=logging.ERROR)


#: Dask settings of the clusters gradcli starts (the nannies give them to their workers);
#: docs/scaling.md advises them for an existing cluster. Measured on 2 workers at rest
#: (benchmarks/scale.py): their periodic callbacks took 140 ms of CPU a second (14% of a
#: core, and a worker's event loop took the GIL from its task 100 times a second), 18 ms
#: with these.
QUIET = {
    # Without Dask's MALLOC_TRIM_THRESHOLD_ for its workers: set, it turns off glibc's
    # adaptive mmap threshold, and every temporary array of a chunk (128 KiB and more) is
    # then mapped and unmapped afresh, which made the 20-statement benchmark 1.6x slower
    # per row.
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    # The statistical profiler samples the running task's stack every 10 ms (for the
    # dashboard's profile page) on the worker's event loop.
    "distributed.worker.profile.enabled": False,
    # The event loops' liveness tick (every 20 ms; it only warns of a blocked loop), the
    # workers' memory poll (100 ms; a partition's memory is bounded anyway) and the
    # system monitor (500 ms; the dashboard's CPU and memory plots).
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
}


def cores() -> int:
    """The cores this process may run on (its affinity where the system says it)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def _local_workers(spec: str) -> int | None:
    """The workers of ``local`` (one per core) or ``local:N``; None for an address."""
    if spec == "local":
        return cores()
    if spec.startswith("local:"):
        text = spec[6:]
        if not (text.isdigit() and text.isascii()) or not 1 <= int(text) <= 1024:
            raise InputError(f"--dask {spec}: local:N needs a number of workers from 1 to "
                             "1024")
        return int(text)
    return None


def _address(spec: str) -> str:
    if "://" in spec:
        protocol = spec.split("://", 1)[0]
        if protocol not in ("tcp", "tls", "ws", "wss", "ucx", "inproc"):
            raise InputError(f"--dask {spec}: give local, local:N or a scheduler's address "
                             "(tcp://host:8786)")
        return spec
    host, _, port = spec.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--dask {spec}: give local, local:N or a scheduler's address "
                         "(tcp://host:8786)")
    return f"tcp://{spec}"
