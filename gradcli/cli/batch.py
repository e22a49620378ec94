"""``--at SOURCE``: a command at many points, a chunk of rows per ``vectorized_map`` call.

The program is parsed and built once. Each chunk of rows the source gives (see
``gradcli.io.points``) is evaluated by ``gradcli.run.many`` (ONE call of
``gc.vectorized_map`` binding the chunk's values to the model and running the command's
per-point function, the record's ``at`` in cli/app.py: ``run.modes.run_mode`` for the
four modes, ``run.derivatives.jacobian`` and ``hessian``, ``run.directional.jvp``), so a
row's result is the single-point result at that row by construction. Where the engine
cannot batch the command yet, ``vectorized_map`` runs the function once per row (same
results, slower) and one note says so. This module is the glue: options, the source,
the writer of the format (io/writers/; the human table here), check of sampled rows.

Output, per row in input order, rows numbered from 0 (the first data row is row 0):

- ``--json``: JSON Lines, each line the single-point JSON object plus ``"row"``; a row
  that could not be read or computed (``--skip-bad-rows``) is ``{"row": N, "error": ...}``;
  with ``--check``, one last line ``{"check": {...}}``.
- ``--plain``: one line per row: the value (where the mode gives one), then every
  gradient flattened, space-separated (``null`` for an unconnected one; ``error: ...``
  for a skipped row).
- ``--csv``: a header (``row``, the point's columns, ``value``, ``d_x``, ``d_W[0,1]``...)
  and a line per row (a skipped row has empty fields).
- human: a table of the first rows and a summary (count, min/max of the value and of the
  gradient norm, the rows with non-finite results).
- ``--output PATH.npz``: numpy arrays with a leading row axis (``NpzWriter``), written
  through a temporary file per array beside PATH and assembled at the end as
  ``np.savez`` stores them. Binary output never goes to standard output (``--output -``
  is standard output, for the text formats). ``--output PATH.json``: one JSON document,
  the JSON Lines objects as an array (``JsonArrayFile``).

Every ``--output`` file is written through a temporary file beside PATH renamed into
place (``outfile.OutputFile``): a run that stops with complete rows (a bad row, Ctrl-C,
SIGTERM) commits them; one that stops before its first row leaves PATH as it was.

Everything is streamed: a chunk is read, computed, written and flushed before the next
is read, so memory does not grow with the number of rows, and what was written before a
bad row or Ctrl-C is complete. Numbers are written a chunk at a time from ``tolist()``
(C speed), with the same text as the single-point output.
"""
from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
import typer

from ..errors import GradcliError, InputError, LimitError
from ..io.points import BadRow, Chunk, Slot, open_source
from ..io.writers import WRITERS, JsonArrayFile, NpzOutput, NpzWriter
from ..io.writers.human import HumanWriter
from ..io.writers.base import WRITE_ROWS
from ..run.many import Evaluator, evaluate_chunk, per_point
from .common import guarded

FORMATS = {".jsonl": "json", ".json": "json", ".ndjson": "json", ".csv": "csv",
           ".txt": "plain", ".npz": "npz"}
#: Binary outputs gradcli does not write (whatever the format options say): why.
_ONE_ARRAY = ("a {} file holds one array, and --at writes several (row, the point, value, "
              "gradients): use .npz (numpy's file of named arrays)")
BINARY = {".npy": _ONE_ARRAY.format(".npy"),
          **{ext: "gradcli writes binary output only as .npz (numpy's file of named "
                  "arrays, read by np.load) or .parquet; text as .jsonl, .csv or .txt"
             for ext in (".h5", ".hdf5", ".feather", ".arrow", ".mat", ".pkl",
                         ".pickle", ".gz", ".zip", ".xlsx")}}
FALLBACK_NOTE = ("rows were computed one at a time (vectorized_map's loop fallback: the "
                  "engine does not batch all of this command yet, or a row failed); the "
                  "results are the same, only slower")


def render_console(stderr: bool = False):
    from . import render
    return render.console(stderr=stderr)


def _print_check(out, report: dict, precision) -> None:
    from . import render
    page = render.Page()
    for entry in report["rows"]:
        page.check(entry, precision, title=f"cross-check of row {entry['row']}")
    checked = ", ".join(str(e["row"]) for e in report["rows"]) or "none"
    page.line(f"check at {len(report['rows'])} sampled row"
              f"{'s' if len(report['rows']) != 1 else ''} ({checked}): {report['verdict']}")
    render.show(page, out)


def _print_check_failures(report: dict) -> None:
    """``--plain``: as the single-point command, a passing check says nothing and each
    mismatching row says why in one line on standard error:
    ``check: MISMATCH: row 3: tape differs from sympy at x: tape 0.479, sympy 0.878``."""
    from . import render
    render.print_check_failures({f"row {entry['row']}": entry for entry in report["rows"]})


# ---------------------------------------------------------------------------------------
# The sample of rows --check looks at
# ---------------------------------------------------------------------------------------
class Sample:
    """A uniform random sample of ``size`` rows of a stream of unknown length (reservoir
    sampling), reproducible with ``seed``: (row, {name: its value}) pairs."""

    def __init__(self, size: int, seed: int | None):
        self.size = size
        self.rng = np.random.default_rng(seed)
        self.kept: list = []
        self.seen = 0

    def offer(self, chunk: Chunk, keep) -> None:
        n = chunk.n
        for i in range(n):
            if not keep(chunk.start + i):
                continue
            if len(self.kept) < self.size:
                self.kept.append(self._row(chunk, i))
            else:
                j = int(self.rng.integers(0, self.seen + 1))
                if j < self.size:
                    self.kept[j] = self._row(chunk, i)
            self.seen += 1

    @staticmethod
    def _row(chunk: Chunk, i: int):
        return chunk.start + i, {name: v[i].copy() for name, v in chunk.values.items()}

    def rows(self) -> list:
        return sorted(self.kept, key=lambda item: item[0])


# ---------------------------------------------------------------------------------------
# Progress on standard error
# ---------------------------------------------------------------------------------------
class Progress:
    """A rich progress bar on standard error (rows, rows/s, ETA), shown only when standard
    error is a terminal and the run has lasted more than a second."""

    def __init__(self, source, enabled: bool):
        self.source = source
        self.enabled = enabled
        self.started = time.monotonic()
        self.bar = None
        self.task = None

    def update(self, rows: int) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        if self.bar is None:
            if elapsed < 1.0:
                return
            from rich.progress import (BarColumn, Progress as Bar, TextColumn,
                                       TimeRemainingColumn)
            from . import render
            self.bar = Bar(TextColumn("{task.fields[rows]} rows"), BarColumn(),
                           TextColumn("{task.fields[speed]} rows/s"), TimeRemainingColumn(),
                           console=render.console(stderr=True), transient=True)
            total = self.source.total if self.source.total is not None else self.source.size
            self.task = self.bar.add_task("", total=total, rows="0", speed="-")
            self.bar.start()
        done = rows if self.source.total is not None else self.source.position
        self.bar.update(self.task, completed=done, rows=f"{rows:,}",
                        speed=f"{rows / max(elapsed, 1e-9):,.0f}")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


# ---------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------
def output_format(s) -> str:
    flags = [name for name, on in (("json", s.json_out), ("plain", s.plain),
                                   ("csv", s.csv)) if on]
    if len(flags) > 1:
        raise InputError(f"--{flags[0]} and --{flags[1]} cannot be used together")
    if s.output == "-":
        return flags[0] if flags else "human"   # standard output, as without --output
    if s.output:
        extension = os.path.splitext(s.output)[1].lower()
        if extension in BINARY:
            raise InputError(f"--output {s.output}: {BINARY[extension]}")
        by_name = FORMATS.get(extension)
        if flags and by_name and flags[0] != by_name:
            raise InputError(f"--{flags[0]} conflicts with --output {s.output} (a "
                             f"{extension} file is written as {by_name})")
        if not flags and by_name is None:
            raise InputError(f"--output {s.output}: cannot tell the format from "
                             f"{extension or 'a name without extension'!r}; use .jsonl, "
                             ".csv, .txt or .npz, or give --json, --csv or --plain")
        return flags[0] if flags else by_name
    return flags[0] if flags else "human"


def check_options(s) -> None:
    """Refuse the batch options without --at, and what --at cannot be combined with."""
    if s.at is None:
        for name, given in (("--output", s.output is not None), ("--csv", s.csv),
                            ("--chunk", s.chunk is not None),
                            ("--skip-bad-rows", s.skip_bad_rows),
                            ("--check-rows", s.check_rows is not None),
                            ("--seed", s.seed is not None),
                            ("--dask", getattr(s, "dask", None) is not None),  # cli/scale.py
                            ("--reduce", getattr(s, "reduce", None) is not None)):
            if given:
                raise InputError(f"{name} works with --at SOURCE (many points)")
        csv_options(s)  # (--columns, --keep... without --at)


def csv_options(s, keep: bool = True, what: str = "many points"):
    """How to read a CSV source, from ``--columns``, ``--keep`` (where the command has
    it), ``--delimiter`` and ``--no-header``, checked now, before any file is read;
    refused without --at."""
    from ..io.points import CsvOptions
    options = CsvOptions(s.columns, (s.keep or ()) if keep else None, s.delimiter,
                         not s.no_header)
    if s.at is None and options.given:
        raise InputError(f"{options.given[0]} works with --at SOURCE ({what})")
    return options


def run(name: str, arguments, s, prepare) -> None:
    """``gradcli COMMAND PROGRAM --at SOURCE`` for the command ``name``: its record's
    per-point function (``at``) with ``arguments()`` (checked before any file is read),
    rows evaluated by run/many.py, written by the format's writer; see the module doc."""
    record = command_record(name)
    options = guarded(arguments)
    if getattr(s, "symbolic", False):
        guarded(lambda: _raise(InputError("--symbolic shows one point's derivative; it "
                                           "does not work with --at")))
    to_file = s.output not in (None, "-")   # (--output -: standard output, as without it)

    def setup():
        if s.at.strip() == "-" and s.program.strip() == "-":
            raise InputError("the program and --at cannot both be read from standard input")
        fmt = output_format(s)
        csv = csv_options(s)
        model = prepare(s)
        slots = {}
        for decl in model.declarations:
            slots[decl.name] = Slot(decl.kind, decl.value if decl.has_value else None)
        if to_file and s.at.strip().startswith("@") and _same_file(s.at.strip()[1:],
                                                                   s.output):
            raise InputError(f"--output {s.output} is the source itself: write elsewhere")
        source = open_source(s.at, slots, chunk=s.chunk, csv=csv)
        out = NpzOutput(s.output, source.names, source.shapes, source.kept) \
            if fmt == "npz" else open_output(s.output if to_file else None, fmt)
        return fmt, per_point(record.at, options), model, source, out

    fmt, point, model, source, out = guarded(setup)
    try:
        _run(record, point, s, fmt, model, source, out, to_file)
    finally:
        if to_file:
            out.discard()   # (the temporaries, unless committed: whatever happened)


def command_record(name: str):
    """The command's record in cli/app.py's ``COMMANDS``."""
    from .app import COMMANDS
    return next(command for command in COMMANDS if command.name == name)


def named(dotted: str):
    """ "run.module.NAME" (a record's reference) -> the object in gradcli."""
    from importlib import import_module
    module, name = dotted.rsplit(".", 1)
    return getattr(import_module(f"gradcli.{module}"), name)


def _run(record, point, s, fmt: str, model, source, out, to_file: bool) -> None:
    evaluate = Evaluator(model, point)
    writer_class = {**WRITERS, "human": HumanWriter}[fmt]
    writer = writer_class(out, s.precision, lambda: None if evaluate.meta is None else
                          evaluate.meta.layout(), source.labels, named(record.result).ROWS,
                          source.kept)
    sample = Sample(s.check_rows if s.check_rows is not None else 5, s.seed) \
        if s.check else None
    progress = Progress(source, enabled=_is_terminal(sys.stderr))
    try:
        with np.errstate(all="ignore"):
            _stream(source, evaluate, writer, sample, progress, s.skip_bad_rows)
    except KeyboardInterrupt as stop:  # Ctrl-C; SIGTERM while a file is written (outfile)
        progress.stop()
        _stopped(writer, out, s.output, to_file)
        sys.stderr.write(f"{getattr(stop, 'word', 'interrupted')}: "
                         f"{writer.rows + writer.bad_rows:,} rows were written completely\n")
        raise typer.Exit(getattr(stop, "exit_code", 130)) from None
    except GradcliError as err:
        progress.stop()
        written = _stopped(writer, out, s.output, to_file)
        sys.stderr.write(err.render() + "\n")
        if written and to_file and not getattr(out, "refused", False):
            n = writer.rows + writer.bad_rows
            sys.stderr.write(f"note: {s.output} holds the {n:,} row{'s' * (n != 1)} before "
                             "it\n")
        raise typer.Exit(2) from None
    except (MemoryError, RecursionError) as err:
        progress.stop()
        _stopped(writer, out, s.output, to_file)
        sys.stderr.write(LimitError(f"the program is too large to evaluate "
                                    f"({type(err).__name__})").render() + "\n")
        raise typer.Exit(2) from None
    progress.stop()
    if writer.rows + writer.bad_rows == 0:  # (nothing was written: nothing to finish)
        sys.stderr.write(InputError(f"{source.shown}: no rows (the source is empty)")
                         .render() + "\n")
        raise typer.Exit(2)
    writer.finish()
    notes = list(evaluate.meta.layout().notes) if evaluate.meta is not None and fmt in (
        "plain", "csv", "human", "npz") else []
    if evaluate.fell_back:
        notes.append(FALLBACK_NOTE)
    if notes:
        writer.flush()
        target = sys.stdout if fmt == "human" and not to_file else sys.stderr
        target.write("".join(f"note: {note}\n" for note in notes))
    report = None
    if sample is not None:
        report = guarded(lambda: _check_rows(evaluate, named(record.check), sample, s))
        if fmt == "json":
            writer.check(report)
        elif fmt == "plain":
            writer.flush()
            _print_check_failures(report)
        else:
            writer.flush()
            _print_check(render_console(stderr=fmt != "human" or to_file),
                         report, s.precision)
    writer.flush()
    if to_file:
        if fmt != "npz":
            out.commit()
        if _is_terminal(sys.stderr):
            sys.stderr.write(f"wrote {writer.rows + writer.bad_rows:,} rows to {s.output}\n")
    if report is not None and report["verdict"] == "mismatch":
        raise typer.Exit(1)


def _raise(err):
    raise err


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _stopped(writer, out, path, to_file: bool) -> bool:
    """The run stopped (a bad row, Ctrl-C, SIGTERM): the complete rows, if there are any,
    are written and a file committed (renamed into place); with none, an existing file is
    left as it was. False when nothing was kept, with one line on standard error when
    writing failed."""
    if writer.rows + writer.bad_rows == 0:
        return False
    try:
        writer.stopped()
        if to_file and not isinstance(writer, NpzWriter):
            out.commit()
    except OSError as err:
        if to_file:
            sys.stderr.write(f"error: cannot write {path}: {err.strerror or err}\n")
        return False
    return True


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(os.path.expanduser(a), os.path.expanduser(b))
    except OSError:
        return False


def open_output(path: str | None, fmt: str):
    """Standard output, or PATH written through a temporary file (``outfile``): its
    ``commit()`` puts the rows in place, ``discard()`` leaves PATH as it was."""
    if path is None:
        return sys.stdout
    from ..io.outfile import OutputFile
    out = OutputFile(path)
    if fmt == "json" and os.path.splitext(path)[1].lower() == ".json":
        return JsonArrayFile(out)
    return out


def _stream(source, evaluate, writer, sample, progress, skip: bool) -> None:
    """Read, compute, write and flush, a chunk at a time."""
    skipped: set = set()
    started = False
    for item in source.items():
        if isinstance(item, BadRow):
            if not skip:
                raise InputError(item.message + " (--skip-bad-rows records such rows and "
                                 "carries on)")
            writer.bad(item)
            writer.flush()
            continue
        if item.n == 0:
            continue
        for part in evaluate_chunk(evaluate, item):
            if isinstance(part, BadRow):
                if not skip:
                    writer.flush()
                    error = part.error
                    error.message = (part.message + " (--skip-bad-rows records such rows "
                                     "and carries on)")
                    error.args = (error.message,)
                    raise error
                skipped.add(part.row)
                writer.bad(part)
            else:
                if not started:
                    writer.start(part, source.names)
                    started = True
                for piece in part.pieces(WRITE_ROWS):
                    writer.write(piece)
        if sample is not None:
            sample.offer(item, lambda row: row not in skipped)
        writer.flush()
        progress.update(writer.rows + writer.bad_rows)


def _check_rows(evaluate: Evaluator, check, sample: Sample, s) -> dict:
    """The single-point cross-check at each sampled row: {"rows": [{"row": N, ...the
    check object...}], "verdict", "passed"}."""
    rows = []
    for row, values in sample.rows():
        meta = evaluate.run_one(values)
        rows.append({"row": row, **check(evaluate.model, meta, rtol=s.rtol, atol=s.atol,
                                         timeout=s.check_timeout)})
    verdicts = [r["verdict"] for r in rows]
    verdict = ("mismatch" if "mismatch" in verdicts else
               "passed" if "passed" in verdicts else "nothing to check")
    return {"rows": rows, "checked": [r["row"] for r in rows], "verdict": verdict,
            "passed": verdict != "mismatch"}

