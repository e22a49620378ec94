"""``--at`` past one file and one process: partitioned sources (Parquet, directories and
globs, ``.npy`` shards: ``gradcli.io.parquet``), Parquet output (one file, or a
directory of parts), ``--dask SCHEDULER`` and ``--reduce mean|sum``.

Every run here, with or without Dask, is the same ``Job`` applied to each partition
(``gradcli.run.distributed`` runs it in this process or on the cluster's workers): it
reads the partition's chunks, computes each with run/many.py's ``evaluate_chunk`` (one
``vectorized_map`` call per chunk, the same chunks as the local run), and then

- returns the rows (a single output, written here in partition order),
- or writes them as ``part-NNNNN.parquet`` in the output directory itself (through a
  temporary file renamed into place: a part is there complete or not at all) and
  returns how many rows it wrote,
- or (``--reduce``) returns the partition's partial sums (``Partial``): rows, the sum of
  the value and of each gradient, combined by ``distributed.tree``.

A worker builds the program once (``_built``: cached by the job's token) and keeps it
for every partition it is given. The engine's recording state is its process's, so the
partitions of one worker process run one at a time (``_ONE_AT_A_TIME``), whatever its
threads: give a cluster's workers one thread each and as many processes as cores
(``dask worker --nthreads 1 --nworkers N``, as ``LocalCluster`` is started here).
"""
from __future__ import annotations

import os
import sys
import threading
import time
import uuid

import numpy as np
import typer

from ..errors import GradcliError, InputError

#: The options this module adds: where a run comes here rather than to cli/batch.py.
REDUCTIONS = ("mean", "sum")
_built = threading.local()   # .token, .value: the job's Evaluator or model
_ONE_AT_A_TIME = threading.Lock()


def _cached(token: str, build):
    """``build()`` once per thread for the job ``token`` (the last job's is dropped)."""
    if getattr(_built, "token", None) != token:
        _built.token, _built.value = None, build()
        _built.token = token
    return _built.value


def wanted(s) -> bool:
    """Whether ``--at`` runs here: a partitioned source, Parquet output, --dask (or
    GRADCLI_DASK) or --reduce."""
    from ..io.parquet import is_partitioned
    if s.at is None:
        return False
    return (is_partitioned(s.at) or _output_kind(s.output) is not None
            or getattr(s, "reduce", None) is not None
            or getattr(s, "dask", None) is not None)


def _scheduler(s, partitioned: bool):
    """--dask's scheduler, or GRADCLI_DASK's for a partitioned source (a source of one
    file is read by one process: it runs here)."""
    from ..run.distributed import scheduler
    if getattr(s, "dask", None) is None and not partitioned:
        return None
    return scheduler(getattr(s, "dask", None))


def _output_kind(path: str | None) -> str | None:
    """"parts" (a directory), "parquet" (one file) or None (cli/batch.py's formats)."""
    if path in (None, "-"):
        return None
    if path.endswith(os.sep) or path.endswith("/") or (
            os.path.isdir(path) and not os.path.splitext(path)[1]):
        return "parts"   # (out/, or an existing out: a file's name, out.csv, is batch's)
    if path.lower().endswith(".parquet"):
        return "parquet"
    return None


# ---------------------------------------------------------------------------------------
# What each partition's task does (on a worker, or here)
# ---------------------------------------------------------------------------------------
class Partial:
    """A partition's (or several combined) contribution to ``--reduce``: ``rows`` summed,
    ``value`` the sum of their values (None without one), ``grads`` the sum of each
    gradient (None: unconnected); ``bad`` rows skipped; the names and notes of the run."""

    def __init__(self, rows, value, grads, bad=0, names=(), notes=(), fell_back=False):
        self.rows, self.value, self.grads, self.bad = rows, value, grads, bad
        self.names, self.notes, self.fell_back = list(names), list(notes), fell_back


def combine(a: Partial, b: Partial) -> Partial:
    """Two partials' sums (a + b: the left one first, as ``tree`` pairs them)."""
    if a.rows == 0 and a.bad == 0:
        return b
    if b.rows == 0 and b.bad == 0:
        return a

    def add(x, y):
        return y if x is None else x if y is None else x + y
    grads = [add(x, y) for x, y in zip(a.grads, b.grads)] if a.grads and b.grads else \
        (a.grads or b.grads)
    return Partial(a.rows + b.rows, add(a.value, b.value), grads, a.bad + b.bad,
                   a.names or b.names, a.notes or b.notes, a.fell_back or b.fell_back)


class Done:
    """What a partition's task gives back: ``items`` (Results and BadRows, for a single
    output), or ``rows``/``bad`` written to its part, or ``partial``; ``error`` the
    message of the bad row it stopped at (without --skip-bad-rows), else None."""

    def __init__(self, items=(), rows=0, bad=0, partial=None, error=None, notes=(),
                 fell_back=False):
        self.items, self.rows, self.bad, self.partial = list(items), rows, bad, partial
        self.error, self.notes, self.fell_back = error, list(notes), fell_back


class Job:
    """One partition's work: picklable (program text and options; the command's ``name``,
    its per-point function ``point``: ``run.many.per_point`` of the record's ``at`` and
    arguments; its result type's ``RowKind``; the opened source), built once per process."""

    def __init__(self, s, text: str, name: str, point, kind, source, what: str,
                 directory: str | None):
        self.token = uuid.uuid4().hex
        self.program = {"program": text, "var": s.var, "frozen": s.frozen, "arg": s.arg,
                        "dtype": s.dtype, "target": s.target}
        self.name, self.point, self.kind = name, point, kind
        self.source, self.what, self.directory = source, what, directory
        self.skip = s.skip_bad_rows

    def evaluator(self):
        from ..run.many import Evaluator
        from .common import Settings, prepare
        return _cached(self.token, lambda: Evaluator(prepare(Settings(
            json_out=False, plain=False, **self.program)), self.point))

    def __call__(self, part) -> Done:
        with _ONE_AT_A_TIME, np.errstate(all="ignore"):
            try:
                return self._run(part)
            except GradcliError as err:
                return Done(error=_located(err.message, part))
            except (MemoryError, RecursionError) as err:
                return Done(error=f"the program is too large to evaluate "
                                  f"({type(err).__name__})")

    def _run(self, part) -> Done:
        from ..io.points import BadRow
        from ..run.many import evaluate_chunk
        evaluate = self.evaluator()
        evaluate.fell_back = False
        items, error = [], None
        for item in self.source.chunks(part):
            parts = [item] if isinstance(item, BadRow) else \
                evaluate_chunk(evaluate, item) if item.n else []
            for one in parts:
                if isinstance(one, BadRow):
                    one.message = _located(one.message, part)
                    if not self.skip:
                        error = one.message + (" (--skip-bad-rows records such rows and "
                                               "carries on)")
                        break
                items.append(one)
            if error:
                break
        notes = _layout(evaluate).notes if evaluate.meta is not None else []
        if self.what == "reduce":
            return Done(partial=None if error else self._partial(items, evaluate, notes),
                        error=error)
        if self.what == "parts" and error is None:
            self._write_part(part, items, evaluate)
            return Done(rows=sum(r.n for r in items if not isinstance(r, BadRow)),
                        bad=sum(isinstance(r, BadRow) for r in items), notes=notes,
                        fell_back=evaluate.fell_back)
        if self.what == "parts":
            return Done(error=error)
        return Done(items=items, error=error, notes=notes, fell_back=evaluate.fell_back)

    def _partial(self, items: list, evaluate, notes: list) -> Partial:
        from ..io.points import BadRow
        good = [r for r in items if not isinstance(r, BadRow)]
        if not good:
            return Partial(0, None, [], len(items) - len(good), notes=notes)
        layout = _layout(evaluate)
        value = _sum(r.value for r in good) if layout.has_value else None
        grads = [_sum(r.raw[k] for r in good) for k in range(len(good[0].raw))]
        return Partial(sum(r.n for r in good), value, grads, len(items) - len(good),
                       layout.names, notes, evaluate.fell_back)

    def _write_part(self, part, items: list, evaluate) -> None:
        from ..io.outfile import OutputFile
        from ..io.points import BadRow
        from ..io.writers.parquet import ParquetWriter
        path = os.path.join(self.directory, f"part-{part.index:05d}.parquet")
        out = OutputFile(path, binary=True)
        try:
            writer = ParquetWriter(out, None, lambda: _layout(evaluate), self.source.labels,
                                   self.kind, self.source.kept, errors=self.skip)
            for item in items:
                if isinstance(item, BadRow):
                    writer.bad(item)
                else:
                    writer.write(item)
            writer.finish()
            out.commit()
        finally:
            out.discard()


def _layout(evaluate):
    """What each row of the evaluator's runs holds (io/report.py's RowLayout), or None
    before its first computed row."""
    return None if evaluate.meta is None else evaluate.meta.layout()


def _sum(arrays):
    """The sum over rows of every chunk's array (rows on axis 0), chunk after chunk."""
    total = None
    for a in arrays:
        if a is None:
            return None
        part = np.asarray(a, dtype=np.float64).sum(axis=0)
        total = part if total is None else total + part
    return total


def _located(message: str, part) -> str:
    """A row's message names the file and partition it came from."""
    return message if message.startswith(part.where) else f"{part.where}: {message}"


# ---------------------------------------------------------------------------------------
# The command: open, run the job on every partition, write or print
# ---------------------------------------------------------------------------------------
class _Whole:
    """A source that is not partitioned (CSV, JSON Lines, .npy, .npz) as one partition."""

    def __init__(self, source, spec: str):
        self.source, self.spec = source, spec
        self.shown, self.names, self.shapes = source.shown, source.names, source.shapes
        self.labels, self.kept, self.total = source.labels, source.kept, source.total
        from ..io.parquet import Partition
        self.partitions = [Partition(0, source.shown, None, 0, source.total or 0)]

    def chunks(self, part):
        yield from self.source.items()


def run(name: str, arguments, s, prepare) -> None:
    """``COMMAND PROGRAM --at SOURCE`` with a partitioned source, Parquet output, --dask
    or --reduce (see the module doc); as cli/batch.py's ``run``: the command ``name``, its
    record's per-point function with ``arguments()``."""
    from .common import guarded
    from .batch import command_record, csv_options, named, output_format
    from ..run.distributed import open_runner
    from ..run.many import per_point
    record = command_record(name)
    options = guarded(arguments)

    def setup():
        from ..io.points import Slot, open_source
        from ..io.parquet import is_partitioned, open_partitioned
        from ..lang.source import read_program
        reduce = getattr(s, "reduce", None)
        spec = _scheduler(s, is_partitioned(s.at))
        for given, flag in ((s.check, "--check"), (getattr(s, "symbolic", False),
                                                   "--symbolic")):
            if given:
                raise InputError(f"{flag} does not work with a partitioned source, Parquet "
                                 "output, --dask or --reduce yet: cross-check a sample of "
                                 "rows with a local --at run")
        if reduce is not None and reduce not in REDUCTIONS:
            raise InputError(f"--reduce {reduce}: give mean or sum")
        if reduce is not None and s.output is not None:
            raise InputError("--reduce prints one value and gradient: --output is for "
                             "per-row results")
        if spec is not None and not is_partitioned(s.at):
            raise InputError(f"--dask runs a task per partition of the source: give "
                             f"Parquet (a file of row groups, a directory, a glob) or .npy "
                             f"shards, not {s.at.strip()!r} (one file, read by one process)")
        where = _output_kind(s.output)
        fmt = "reduce" if reduce else where or output_format(s)
        if fmt == "npz":
            raise InputError(f"--output {s.output}: with a partitioned source or --dask, "
                             "write .parquet, a directory of parts (out/), or text")
        if s.at.strip() == "-" and s.program.strip() == "-":
            raise InputError("the program and --at cannot both be read from standard input")
        csv = csv_options(s)
        text = read_program(s.program)   # (once: the workers are given the text)
        model = prepare(_with_program(s, text))
        slots = {d.name: Slot(d.kind, d.value if d.has_value else None)
                 for d in model.declarations}
        if is_partitioned(s.at):
            source = open_partitioned(s.at, slots, s.chunk, csv)
        else:
            source = _Whole(open_source(s.at, slots, chunk=s.chunk, csv=csv), s.at)
        directory = _directory(s.output) if fmt == "parts" else None
        job = Job(s, text, name, per_point(record.at, options), named(record.result).ROWS,
                  source, "reduce" if reduce else "parts" if fmt == "parts" else "rows",
                  directory)
        return fmt, model, source, job, spec

    fmt, model, source, job, spec = guarded(setup)
    if source.total == 0:
        guarded(lambda: _raise(InputError(f"{source.shown}: no rows (the source is empty)")))
    progress = _Progress(len(source.partitions), source.total)
    try:
        with np.errstate(all="ignore"):
            runner = guarded(lambda: open_runner(spec).__enter__())
            try:
                if fmt == "reduce":
                    _reduce(runner, job, source, model, s, progress)
                elif fmt == "parts":
                    _parts(runner, job, source, s, progress)
                else:
                    _single(runner, job, source, model, fmt, s, progress)
            finally:
                progress.stop()
                runner.__exit__(None, None, None)
                if fmt == "parts":
                    _sweep(job.directory)
    except KeyboardInterrupt as stop:
        word = getattr(stop, "word", "interrupted")
        if fmt == "parts":
            parts = sum(name.startswith("part-") for name in os.listdir(job.directory))
            sys.stderr.write(f"{word}: {s.output} holds {parts} complete part"
                             f"{'s' * (parts != 1)}; the other partitions were cancelled\n")
        else:
            sys.stderr.write(f"{word}: {progress.rows:,} rows were written completely\n")
        raise typer.Exit(getattr(stop, "exit_code", 130)) from None


def _raise(err):
    raise err


def _with_program(s, text: str):
    """The settings with the program's text in place of where it was read from."""
    import copy
    s = copy.copy(s)
    s.program = text
    return s


def _directory(path: str) -> str:
    path = os.path.expanduser(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"--output {path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise InputError(f"--output {path}: cannot make the directory "
                         f"({err.strerror or err})") from None
    if any(not name.startswith(".") for name in os.listdir(path)):
        raise InputError(f"--output {path}: the directory is not empty; give a new or "
                         "empty one (the parts of a run are part-00000.parquet...)")
    return path


def _sweep(directory: str) -> None:
    """Temporaries a stopped run's workers left (their parts were not complete)."""
    for name in os.listdir(directory):
        if name.startswith(".part-") and name.endswith(".partial"):
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass


def _stop(message: str, note: str | None = None) -> None:
    sys.stderr.write(InputError(message).render() + "\n")
    if note:
        sys.stderr.write(f"note: {note}\n")
    raise typer.Exit(2)


def _notes(done_notes: list, fell_back: bool) -> None:
    from .batch import FALLBACK_NOTE
    notes = list(done_notes) + ([FALLBACK_NOTE] if fell_back else [])
    sys.stderr.write("".join(f"note: {note}\n" for note in notes))


# ---------------------------------------------------------------------------------------
# The three kinds of output
# ---------------------------------------------------------------------------------------
def _parts(runner, job: Job, source, s, progress) -> None:
    """Every worker writes its partitions' parts; here only counts come back."""
    notes, fell_back, error = [], False, None
    for part, done in runner.map(job, source.partitions, ordered=False):
        if done.error is not None:
            error = error or done.error   # (the others finish or are cancelled)
            break
        notes = notes or done.notes
        fell_back |= done.fell_back
        progress.update(done.rows + done.bad)
    if error is not None:
        _stop(error, f"{s.output} holds the complete parts of the other partitions")
    _notes(notes, fell_back)
    if _is_terminal(sys.stderr):
        sys.stderr.write(f"wrote {progress.rows:,} rows in {len(source.partitions)} parts "
                         f"to {s.output}\n")


def _single(runner, job: Job, source, model, fmt: str, s, progress) -> None:
    """One output (a file or standard output), the partitions' rows in order."""
    from .batch import open_output
    from ..io.writers.base import WRITE_ROWS
    from ..io.writers.human import HumanWriter
    from ..run.many import Evaluator
    from ..io.points import BadRow
    from ..io.writers import WRITERS
    to_file = s.output not in (None, "-")
    if fmt == "parquet":
        from ..io.outfile import OutputFile
        from ..io.writers.parquet import ParquetWriter
        out = guarded_call(lambda: OutputFile(s.output, binary=True))
        writer_class = ParquetWriter
    else:
        out = guarded_call(lambda: open_output(s.output if to_file else None, fmt))
        writer_class = {**WRITERS, "human": HumanWriter}[fmt]
    here = Evaluator(model, job.point)   # the rows' layout (names, shapes), from one row
    writer = writer_class(out, s.precision, lambda: _layout(here), source.labels, job.kind,
                          source.kept)
    if fmt == "parquet":
        writer.errors = s.skip_bad_rows
    started, notes, fell_back = False, [], False
    try:
        for part, done in runner.map(job, source.partitions):
            for item in done.items:
                if isinstance(item, BadRow):
                    writer.bad(item)
                    continue
                if not started:
                    here({name: v[:1] for name, v in item.values.items()})
                    writer.start(item, source.names)
                    started = True
                for piece in item.pieces(WRITE_ROWS):
                    writer.write(piece)
            writer.flush()
            progress.update(sum(getattr(i, "n", 1) for i in done.items))
            notes = notes or done.notes
            fell_back |= done.fell_back
            if done.error is not None:
                kept = _keep(writer, out, to_file)
                _stop(done.error, f"{s.output} holds the {writer.rows + writer.bad_rows:,} "
                                  "rows before it" if kept and to_file else None)
        writer.finish()
        writer.flush()
        if to_file:
            out.commit()
    except KeyboardInterrupt:
        _keep(writer, out, to_file)
        raise
    except GradcliError as err:
        kept = _keep(writer, out, to_file)
        _stop(err.message, f"{s.output} holds the rows before it" if kept and to_file
              else None)
    finally:
        if to_file:
            out.discard()   # (the temporary, unless committed)
    _notes(notes if fmt != "json" else [], fell_back)
    if to_file and _is_terminal(sys.stderr):
        sys.stderr.write(f"wrote {writer.rows + writer.bad_rows:,} rows to {s.output}\n")


def _keep(writer, out, to_file: bool) -> bool:
    """The run stopped: the complete rows written so far are kept (committed)."""
    if writer.rows + writer.bad_rows == 0:
        return False
    try:
        writer.stopped()
        if to_file:
            out.commit()
    except OSError:
        return False
    return True


def guarded_call(make):
    try:
        return make()
    except GradcliError as err:
        _stop(err.message)


def _reduce(runner, job: Job, source, model, s, progress) -> None:
    """--reduce: one value and gradient, of the mean (or sum) over all rows."""
    from ..run.modes import Gradient, Outcome
    total = runner.reduce(job, source.partitions, _combine_done)
    if total.error is not None:
        _stop(total.error)
    partial = total.partial
    progress.update(partial.rows + partial.bad)
    data = set(source.names)
    per_row = [name for name in partial.names if name in data]
    if per_row:
        _stop(f"--reduce: the gradient of {per_row[0]} is one per row ({per_row[0]} is "
              f"set by {source.shown}): reduce over rows the gradients of what every row "
              "shares (a --var the data does not set; grad: --params)")
    if partial.rows == 0:
        _stop(f"{source.shown}: no row could be computed")
    scale = 1.0 / partial.rows if s.reduce == "mean" else 1.0
    value = None if partial.value is None else partial.value * scale
    grads = [None if g is None else g * scale for g in partial.grads]
    notes = [f"{s.reduce} over {partial.rows:,} rows of {source.shown} "
             f"({len(source.partitions)} partition{'s' * (len(source.partitions) != 1)}, "
             f"{runner.where})"] + partial.notes
    if partial.bad:
        notes.append(f"{partial.bad:,} rows could not be computed and were left out "
                     "(--skip-bad-rows)")
    outcome = Outcome(job.name, value, [Gradient(n, g) for n, g in
                                        zip(partial.names, grads)], notes)
    from . import render
    if s.json_out:
        obj = render.json_writer.as_json(outcome.report())
        obj.update({"reduce": s.reduce, "rows": partial.rows})
        render.json_writer.write_json(obj)
    elif s.plain:
        render.plain_writer.write(outcome.report(), s.precision)
    else:
        render.show(outcome.page(s.precision, target=model.target_name))


def _combine_done(a: Done, b: Done) -> Done:
    """Two partitions' Done of --reduce combined: the first error, else the sums."""
    if a.error is not None or b.error is not None:
        return Done(error=a.error or b.error)
    return Done(partial=combine(a.partial, b.partial))


# ---------------------------------------------------------------------------------------
# Progress on standard error: partitions and rows
# ---------------------------------------------------------------------------------------
class _Progress:
    def __init__(self, partitions: int, rows: int | None):
        self.partitions, self.total = partitions, rows
        self.done = self.rows = 0
        self.started = time.monotonic()
        self.enabled = _is_terminal(sys.stderr)
        self.bar = None

    def update(self, rows: int) -> None:
        self.done += 1
        self.rows += rows
        if not self.enabled or time.monotonic() - self.started < 1.0:
            return
        if self.bar is None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
            from . import render
            self.bar = Progress(TextColumn("{task.fields[parts]} partitions, "
                                           "{task.fields[rows]} rows"), BarColumn(),
                                TimeRemainingColumn(), console=render.console(stderr=True),
                                transient=True)
            self.task = self.bar.add_task("", total=self.partitions, parts="", rows="")
            self.bar.start()
        self.bar.update(self.task, completed=self.done,
                        parts=f"{self.done:,}/{self.partitions:,}", rows=f"{self.rows:,}")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


__all__ = ["REDUCTIONS", "Done", "Job", "Partial", "combine", "run", "wanted"]


# ---------------------------------------------------------------------------------------
# minimize --at DATA --full-batch: each loss and gradient one map-reduce over partitions
# ---------------------------------------------------------------------------------------
class LossJob:
    """A partition's rows for ``minimize --full-batch``: ``load(part)`` reads them once
    (kept on the worker: ``persist``), ``__call__(data, values)`` gives their loss sum
    and gradient sums (a Partial) at the parameters' ``values``, computed as
    ``minimize --at`` computes a batch (``run.optimize.ProgramRows``: one
    ``vectorized_map`` and one backward pass)."""

    def __init__(self, s, text: str, source, trainable: list):
        self.token = uuid.uuid4().hex
        self.program = {"program": text, "var": s.var, "frozen": s.frozen, "arg": s.arg,
                        "dtype": s.dtype, "target": s.target}
        self.source, self.trainable = source, trainable

    def model(self):
        from .common import Settings, prepare
        return _cached(self.token, lambda: prepare(Settings(json_out=False, plain=False,
                                                            **self.program)))

    def load(self, part) -> dict:
        from ..io.points import BadRow
        pieces = []
        for item in self.source.chunks(part):
            if isinstance(item, BadRow):
                raise InputError(_located(item.message, part))
            pieces.append(item.values)
        return {name: np.concatenate([p[name] for p in pieces]) for name in
                self.source.names} if pieces else {}

    def __call__(self, data: dict, values: dict) -> Partial:
        from ..run.optimize import ProgramRows
        if not data:
            return Partial(0, None, [])
        with _ONE_AT_A_TIME, np.errstate(all="ignore"):
            rows = ProgramRows(self.model(), data, self.trainable)
            for name, value in values.items():
                rows.parameters[name].assign(value)
            loss, pairs = rows.value_and_gradients()
        n = rows.n
        return Partial(n, np.float64(loss) * n, [np.asarray(g.numpy() if hasattr(
            g, "numpy") else g) * n for g, _ in pairs], fell_back=rows.fell_back)


class PartitionedRows:
    """What ``run.optimize.minimize_rows`` trains on (as a ``ProgramRows``): ``n`` rows,
    the ``parameters`` it moves, and ``value_and_gradients()``, the mean loss over every
    row and its gradients, each call one reduce over the persisted partitions."""

    def __init__(self, runner, job: LossJob, held: list, n: int, parameters: dict):
        self.runner, self.job, self.held, self.n = runner, job, held, n
        self.parameters = parameters
        self.fell_back = False

    def value_and_gradients(self, rows=None) -> tuple:
        if rows is not None:   # (minimize_rows asks for rows only with mini-batches)
            raise InputError("mini-batches are trained in this process: drop --full-batch")
        values = {name: p.numpy() for name, p in self.parameters.items()}
        total = self.runner.reduce(self.job, self.held, combine, values)
        self.fell_back |= total.fell_back
        return total.value / total.rows, [(g / total.rows, p) for g, p in
                                          zip(total.grads, self.parameters.values())]


def full_batch(s) -> bool:
    """Whether ``minimize --at`` trains here: --full-batch, --dask or a partitioned
    source (read a partition at a time, never whole)."""
    from ..io.parquet import is_partitioned
    return s.at is not None and (s.full_batch or s.dask is not None
                                 or is_partitioned(s.at))


def train_full_batch(model, s, optimizer: str, progress):
    """``minimize --at DATA --full-batch [--dask ...]``: (result, fell_back) as
    ``run.optimize.train_on_rows`` gives them."""
    from ..engine.core.tensor import Variable
    from ..io.parquet import is_partitioned, open_partitioned
    from ..io.points import Slot
    from ..lang.source import read_program
    from ..run.distributed import open_runner
    from ..run.optimize import minimize_rows, run_length
    from .batch import csv_options
    if s.batch_size is not None:
        raise InputError("--batch-size: mini-batch optimisers train in this process on "
                         "data read whole (a CSV, .npy, .npz or JSON Lines source), without "
                         "--full-batch or --dask; over partitions every step is over all "
                         "rows")
    if not is_partitioned(s.at):
        raise InputError(f"--full-batch reduces over the partitions of a Parquet source (a "
                         f"file of row groups, a directory, a glob) or .npy shards, not "
                         f"{s.at.strip()!r}")
    trainable = [name for name in model.read_variables if model.trainable[name]]
    slots, parameters = {}, {}
    for decl in model.declarations:
        if decl.kind == "var" and not decl.has_value:
            raise InputError(f"--var {decl.name} has no value: minimize trains {decl.name} "
                             f"from a starting value (--var {decl.name}=0)")
        slots[decl.name] = Slot(decl.kind, decl.value if decl.has_value else None)
        if decl.name in trainable:
            parameters[decl.name] = Variable(np.array(decl.value, dtype=np.float64),
                                             name=decl.name, dtype=model.dtype)
    source = open_partitioned(s.at, slots, s.chunk, csv_options(s, keep=False))
    for name in source.names:
        if name in parameters:
            raise InputError(f"{source.shown}: the source sets {name}, a trainable variable "
                             f"that minimize trains: declare it --frozen {name} to read it "
                             "from each row, or drop the column")
    total, training = run_length(source.total, None, s.steps, s.epochs, s.max_steps)
    job = LossJob(s, read_program(s.program), source, trainable)
    with open_runner(_scheduler(s, True)) as runner:
        held = runner.persist(job.load, source.partitions)
        rows = PartitionedRows(runner, job, held, source.total, parameters)
        on_step, done = progress(total, None, not training)
        try:
            result = minimize_rows(rows, optimizer=optimizer, lr=s.lr, steps=s.steps,
                                   epochs=s.epochs, max_steps=s.max_steps, tol=s.tol,
                                   momentum=s.momentum, on_step=on_step)
        finally:
            done()
    result.data["notes"].append(f"full batch: each step reduced over "
                                f"{len(source.partitions)} partitions ({runner.where})")
    return result, rows.fell_back
