"""``--at SOURCE``: a command at many points, a chunk of rows per ``vectorized_map`` call.

The program is parsed and built once. Each chunk of rows the source gives (see
``gradcli.io.points``) is evaluated by ONE call of ``gc.vectorized_map`` whose function binds
the chunk's values to the model (``Model.bind``) and runs the command exactly as the
single-point command does (``gradcli.run.modes.run_mode`` for the four modes; ``jacobian``,
``hessian`` and ``run_jvp`` for the others: a "kind" below says which), so a row's result
is the single-point result at that row by construction. Where the engine cannot batch the mode
yet, ``vectorized_map`` runs the function once per row (same results, slower) and one
note says so.

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

from ..errors import (ChunkTooLarge, GradcliError, InputError, LimitError, ModeError,
                      UnknownNameError)
from ..io.points import BadRow, Chunk, Slot, open_source
from ..io.writers import WRITERS, JsonArrayFile, NpzOutput, NpzWriter, Writer
from ..io.writers.base import WRITE_ROWS
from ..run.modes import Gradient, Outcome, run_mode
from .common import guarded

#: Rows the human output shows in its table.
HEAD_ROWS = 10
#: Row numbers listed for non-finite results in the human summary.
LISTED_ROWS = 10
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
_FALLBACK_NOTE = ("rows were computed one at a time (vectorized_map's loop fallback: the "
                  "engine does not batch all of this command yet, or a row failed); the "
                  "results are the same, only slower")


# ---------------------------------------------------------------------------------------
# Evaluating a chunk
# ---------------------------------------------------------------------------------------
class ModeKind:
    """What a command computes at one point, for ``--at``: here the four modes
    (``gradcli.run.modes.run_mode``); ``JacobianKind`` and ``JvpKind`` below. ``run(model)``
    gives the command's result object (the "meta"), whose value and outputs (gradients)
    are arrays; the rest of it (names, notes) is the same at every row."""
    prefix = "d_"
    norm = "gradient norm"
    norm_of = None   # the outputs the norm is over (None: all)
    word = None      # the name of a word per row (hessian's verdict), if any
    word_width = 0   # its longest word (the width of .npz output's string array)

    def __init__(self, mode: str, options):
        self.mode, self.options = mode, options

    def run(self, model):
        return run_mode(self.mode, model, self.options)

    def value(self, meta):
        return meta.value

    def outputs(self, meta) -> list:
        return [g.gradient for g in meta.gradients]

    def has_value(self, meta) -> bool:
        return meta.mode in ("tape", "value-grad")

    def shown(self, meta, value, raw: list):
        """What the rows show, from what vectorized_map returned: (outputs, words)."""
        return raw, None

    def names(self, meta) -> list:
        return [g.name for g in meta.gradients]

    def missing_shape(self, meta, k: int) -> tuple:
        """The shape of output ``k`` where it is None (an unconnected gradient)."""
        return tuple(getattr(meta.gradients[k].source, "shape", ()) or ())

    def notes(self, meta) -> list:
        return list(meta.notes)

    def title(self, meta) -> str:
        return meta.mode

    def row_json(self, meta, value, outputs) -> dict:
        """The single-point JSON object of the row (value and outputs: the row's arrays)."""
        from . import render
        outcome = Outcome(meta.mode, value, [Gradient(g.name, out) for g, out in
                                             zip(meta.gradients, outputs)], list(meta.notes))
        return render.outcome_json(outcome)

    def template(self, meta) -> str | None:
        """One row's JSON line as a %-template (row, value, gradients), or None."""
        from ..io import jsonvalue
        parts = ['{"row": %d, "mode": ' + jsonvalue.dumps(meta.mode).replace("%", "%%")]
        if self.has_value(meta):
            parts.append(', "value": %r')
        grads = []
        for g in meta.gradients:
            name = jsonvalue.dumps(g.name).replace("%", "%%")
            grads.append('{"name": ' + name + ', "gradient": %r}')
        parts.append(', "gradients": [' + ", ".join(grads) + "]")
        if meta.notes:
            parts.append(', "notes": ' + jsonvalue.dumps(list(meta.notes)).replace("%", "%%"))
        return "".join(parts) + "}\n"

    def check(self, model, meta, s) -> dict:
        from ..check.compare import check_outcome
        return check_outcome(model, meta, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)


class JacobianKind(ModeKind):
    """``gradcli jacobian --at``: the value and one Jacobian per source (CSV: d_x[i,j])."""
    norm = "Jacobian norm (Frobenius, all sources)"

    def __init__(self, wrt, mode: str):
        self.wrt, self.mode = wrt, mode

    def run(self, model):
        from ..run.derivatives import jacobian
        return jacobian(model, self.wrt, self.mode)

    def outputs(self, meta) -> list:
        return [j.jacobian for j in meta.jacobians]

    def has_value(self, meta) -> bool:
        return True

    def names(self, meta) -> list:
        return [j.name for j in meta.jacobians]

    def notes(self, meta) -> list:
        return meta.sources.notes()

    def title(self, meta) -> str:
        return "jacobian"

    def row_json(self, meta, value, outputs) -> dict:
        from ..run.derivatives import Jacobian, JacobianResult
        from .higher import jacobian_json
        return jacobian_json(JacobianResult(value, [
            Jacobian(j.name, out, j.connected, j.source) for j, out in
            zip(meta.jacobians, outputs)], meta.computed_by, meta.mode, meta.sources))

    def template(self, meta):
        return None

    def check(self, model, meta, s) -> dict:
        from ..check.higher import check_jacobian
        return check_jacobian(model, meta, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)


class JvpKind(ModeKind):
    """``gradcli jvp --at``: the value and the directional derivative (CSV: jvp)."""
    prefix = ""
    norm = "jvp norm"

    def __init__(self, tangents):
        self.tangents = tangents

    def run(self, model):
        from ..run.directional import parse_tangents, run_jvp
        return run_jvp(model, parse_tangents(model, self.tangents))

    def outputs(self, meta) -> list:
        return [meta.jvp]

    def has_value(self, meta) -> bool:
        return True

    def names(self, meta) -> list:
        return ["jvp"]

    def notes(self, meta) -> list:
        return []

    def title(self, meta) -> str:
        return "jvp"

    def row_json(self, meta, value, outputs) -> dict:
        from ..run.directional import JvpOutcome
        from .jvp import outcome_json
        return outcome_json(JvpOutcome(value, outputs[0], meta.tangents))

    def template(self, meta):
        return None

    def check(self, model, meta, s) -> dict:
        from ..check.directional import check_jvp
        return check_jvp(model, meta, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)


class HessianKind(ModeKind):
    """``gradcli hessian --at``: the value, gradient, Hessian, eigenvalues and verdict at
    each row. vectorized_map returns the gradient, the Hessian and the point; each row's
    verdict is then ``derivatives.classify`` of them, as the single-point command does."""
    prefix = ""
    norm_of = (0,)
    word = "verdict"

    @property
    def word_width(self) -> int:
        from ..run.derivatives import VERDICTS
        return max(map(len, VERDICTS))

    def __init__(self, wrt):
        self.wrt = wrt

    def run(self, model):
        from ..run.derivatives import hessian
        return hessian(model, self.wrt)

    def outputs(self, meta) -> list:
        return [meta.gradient, meta.hessian, meta.point]

    def has_value(self, meta) -> bool:
        return True

    def names(self, meta) -> list:
        return ["gradient", "hessian", "eigenvalues"]

    def notes(self, meta) -> list:
        return meta.sources.notes()

    def title(self, meta) -> str:
        return "hessian"

    def result_at(self, meta, value, raw: list):
        """The single-point HessianResult of a row."""
        from ..run.derivatives import HessianResult, classify
        gradient, matrix, point = raw
        return HessianResult(value=value, names=meta.names, sources=meta.sources,
                             shapes=meta.shapes,
                             labels=meta.labels, gradient=gradient, hessian=matrix,
                             dtype=meta.dtype, point=point,
                             **classify(gradient, matrix, point, meta.dtype))

    def shown(self, meta, value, raw: list):
        n = len(raw[0])
        eigenvalues = np.full(raw[0].shape, np.nan)
        words = []
        for i in range(n):
            result = self.result_at(meta, value[i], [r[i] for r in raw])
            if result.eigenvalues is not None:
                eigenvalues[i] = result.eigenvalues
            words.append(result.verdict)
        return [raw[0], raw[1], eigenvalues], words

    def row_json(self, meta, value, raw) -> dict:
        from .higher import hessian_json
        return hessian_json(self.result_at(meta, value, raw))

    def template(self, meta):
        return None

    def check(self, model, meta, s) -> dict:
        from ..check.higher import check_hessian
        return check_hessian(model, meta, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)


class Evaluator:
    """A command (``kind``) on a built model at the rows of a chunk: ``__call__(values)``
    -> ``(value, outputs)`` arrays with a leading row axis (None where the command gives
    no value, or for an unconnected gradient). ``meta`` is the result of the last run (the
    outputs' names and notes); ``fell_back`` whether vectorized_map had to loop."""

    def __init__(self, model, kind):
        self.model, self.kind = model, kind
        self.meta = None
        self.fell_back = False
        self.rows = 1 << 62  # the most rows at once (fewer after a ChunkTooLarge)

    def run_one(self, values: dict):
        """The single-point command at one row (plain arrays): for ``--check``."""
        self.model.bind(values)
        return self.kind.run(self.model)

    def __call__(self, values: dict):
        from ..engine.core.batching import vectorized_map
        from ..engine.core.tensor import Batched, NotBatchable, constant
        dtype = self.model.dtype
        elems = {name: constant(v, dtype=dtype) for name, v in values.items()}

        def fn(example):
            try:
                out = self.run_one(example)
            except ChunkTooLarge:
                raise  # (the rows go in smaller pieces: _computed)
            except Exception as err:
                if not any(v.__class__ is Batched for v in example.values()):
                    raise
                # Whatever fails on the whole batch at once (an engine path that does not
                # take batched values yet, or one row's error) is run row by row, where a
                # row's own error is its own.
                raise NotBatchable(f"{type(err).__name__}: {err}") from err
            self.meta = out
            return {"value": self.kind.value(out), "gradients": self.kind.outputs(out)}

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = vectorized_map(fn, elems)
        if any("vectorized_map" in str(w.message) for w in caught):
            self.fell_back = True
        value = result["value"]
        value = None if value is None else np.asarray(_numpy(value))
        grads = [None if g is None else np.asarray(_numpy(g)) for g in result["gradients"]]
        return value, grads


def _numpy(t):
    return t.numpy() if hasattr(t, "numpy") else t


class Result:
    """Rows ``start`` .. ``start + n - 1`` computed: the point's columns, the value and
    the outputs shown (``grads``), each with a leading row axis; ``raw`` the outputs as
    vectorized_map returned them, ``words`` a word per row (hessian's verdict) or None;
    ``values`` the point by name (the chunk's values: what .npz output stores); ``kept``
    the text of the columns kept for the output (``--keep``), or None."""
    __slots__ = ("start", "columns", "value", "grads", "raw", "words", "values", "kept")

    def __init__(self, start: int, columns: np.ndarray, value, raw: list, kind, meta,
                 values: dict, kept: np.ndarray | None = None):
        self.start, self.columns, self.value, self.raw = start, columns, value, raw
        self.values, self.kept = values, kept
        self.grads, self.words = kind.shown(meta, value, raw)

    def pieces(self, size: int):
        """The rows ``size`` at a time (the output's text is made a piece at a time: a
        few MB of strings, whatever the chunk, keep the process's memory flat)."""
        if self.n <= size:
            yield self
            return
        for at in range(0, self.n, size):
            piece = object.__new__(Result)
            cut = slice(at, at + size)
            piece.start, piece.columns = self.start + at, self.columns[cut]
            piece.value = None if self.value is None else self.value[cut]
            piece.raw = [None if r is None else r[cut] for r in self.raw]
            piece.grads = [None if g is None else g[cut] for g in self.grads]
            piece.words = None if self.words is None else self.words[cut]
            piece.values = {name: v[cut] for name, v in self.values.items()}
            piece.kept = None if self.kept is None else self.kept[cut]
            yield piece

    @property
    def n(self) -> int:
        return len(self.columns)


def _computed(evaluate: Evaluator, chunk: Chunk) -> list:
    """The chunk's results, in order: one Result, or (when some row's computation fails)
    Results and BadRows row by row. What the command refuses whatever the values (no
    trainable variable, an unknown --wrt name) is the program's error: it is raised.

    Rows that together go over the limits of one evaluation (``ChunkTooLarge``: big
    arrays per row) are computed in halves, and halves of those, down to one row; the
    size that fit is where the next chunks start (``evaluate.rows``)."""
    if chunk.n > evaluate.rows:
        return [part for piece in _pieces(chunk, evaluate.rows)
                for part in _computed(evaluate, piece)]
    try:
        value, grads = evaluate(chunk.values)
        return [Result(chunk.start, chunk.columns, value, grads, evaluate.kind,
                       evaluate.meta, chunk.values, chunk.kept)]
    except _PROGRAM_ERRORS:
        raise
    except ChunkTooLarge:
        if chunk.n > 1:
            evaluate.rows = (chunk.n + 1) // 2
            return _computed(evaluate, chunk)
        raise  # (one row: never raised, as the limits of one evaluation hold for it)
    except _ROW_ERRORS:
        pass
    out = []
    for i in range(chunk.n):
        row = {name: v[i:i + 1] for name, v in chunk.values.items()}
        kept = None if chunk.kept is None else chunk.kept[i:i + 1]
        try:
            value, grads = evaluate(row)
        except _PROGRAM_ERRORS:
            raise
        except _ROW_ERRORS as err:
            error = _as_error(err)
            out.append(BadRow(chunk.start + i, f"row {chunk.start + i}: {error.message}",
                              error, None if kept is None else kept[0].tolist()))
            continue
        out.append(Result(chunk.start + i, chunk.columns[i:i + 1], value, grads,
                          evaluate.kind, evaluate.meta, row, kept))
    return out


def _pieces(chunk: Chunk, rows: int):
    """The chunk's rows, ``rows`` at a time, as chunks."""
    for at in range(0, chunk.n, rows):
        cut = slice(at, at + rows)
        yield Chunk(chunk.start + at, {name: v[cut] for name, v in chunk.values.items()},
                    chunk.columns[cut], None if chunk.kept is None else chunk.kept[cut])


# Refusals that do not depend on the values (the mode's, the options'): the program's.
_PROGRAM_ERRORS = (ModeError, UnknownNameError)
_ROW_ERRORS = (GradcliError, ArithmeticError, ValueError, TypeError, IndexError)


def _as_error(err: Exception) -> GradcliError:
    if isinstance(err, GradcliError):
        return err
    return GradcliError(f"could not evaluate the program: {type(err).__name__}: {err}")


class HumanWriter(Writer):
    """The first rows as a table, and a summary of all of them."""

    def __init__(self, *args):
        super().__init__(*args)
        # (row, columns, value, [gradients], kept), or (row, message, kept) for a bad row
        self.head: list = []
        self.value_min = self.value_max = None
        self.norm_min = self.norm_max = None
        self.non_finite = 0
        self.non_finite_rows: list = []
        self.words: dict = {}   # hessian's verdicts: word -> rows

    def write(self, res: Result) -> None:
        meta = self.meta_of()
        n = res.n
        for i in range(min(n, HEAD_ROWS - len(self.head))):
            self.head.append((res.start + i, res.columns[i],
                              None if res.value is None else res.value[i],
                              [None if g is None else g[i] for g in res.grads]
                              + ([res.words[i]] if res.words is not None else []),
                              [] if res.kept is None else res.kept[i].tolist()))
        if res.words is not None:
            for word in res.words:
                self.words[word] = self.words.get(word, 0) + 1
        finite = np.ones(n, dtype=bool)
        if self.kind.has_value(meta) and res.value is not None:
            v = res.value.reshape(n, -1).astype(np.float64)
            finite &= np.isfinite(v).all(axis=1)
            self.value_min = _extreme(self.value_min, v, finite, res.start, min)
            self.value_max = _extreme(self.value_max, v, finite, res.start, max)
        squares = np.zeros(n)
        normed = res.grads if self.kind.norm_of is None else [res.grads[k] for k in
                                                                self.kind.norm_of]
        for g in normed:
            if g is not None:
                flat = g.reshape(n, -1).astype(np.float64)
                finite &= np.isfinite(flat).all(axis=1)
                squares += (flat * flat).sum(axis=1)
        if any(g is not None for g in normed):
            norms = np.sqrt(squares)[:, None]
            self.norm_min = _extreme(self.norm_min, norms, finite, res.start, min)
            self.norm_max = _extreme(self.norm_max, norms, finite, res.start, max)
        bad = np.flatnonzero(~finite)
        self.non_finite += len(bad)
        room = LISTED_ROWS - len(self.non_finite_rows)
        self.non_finite_rows += [int(res.start + i) for i in bad[:max(room, 0)]]
        self.rows += n

    def bad(self, row: BadRow) -> None:
        if len(self.head) < HEAD_ROWS:
            self.head.append((row.row, row.message, row.kept or [""] * len(self.kept)))
        self.bad_rows += 1

    def finish(self) -> None:
        from . import render
        out = render.console()
        meta = self.meta_of()
        precision = self.precision
        show_point = len(self.labels) <= 6
        labels = list(self.labels[:6])   # (a row of a big array has millions)
        headers = ["row"] + self.kept + (labels if show_point else ["point"])
        with_value = meta is not None and self.kind.has_value(meta)
        if with_value:
            headers.append("value")
        names = self.kind.names(meta) if meta is not None else []
        headers += [f"{self.kind.prefix}{name}" for name in names]
        if self.kind.word:
            headers.append(self.kind.word)
        rows = []
        for item in self.head:
            if len(item) == 3:
                row, message, kept = item
                cells = [str(row), *kept, f"error: {message}"]
                rows.append(cells + [""] * (len(headers) - len(cells)))
                continue
            row, columns, value, grads, kept = item
            texts = [render.number_text(x, precision) for x in columns[:6].tolist()]
            cells = [str(row)] + kept + (texts if show_point else [", ".join(
                f"{k}={t}" for k, t in zip(labels[:4], texts[:4])) + (
                ", ..." if len(self.labels) > 4 else "")])
            if with_value:
                cells.append(render.array_text(value, precision))
            cells += [g if isinstance(g, str) else render.array_text(g, precision)
                      if g is not None else "None" for g in grads]
            rows.append(cells)
        total = self.rows + self.bad_rows
        what = self.kind.title(meta) if meta is not None else "rows"
        title = (f"{what}: the first {len(rows)} of {total} rows" if total > len(rows)
                 else f"{what}: {total} rows")
        if rows:
            render.show_table(out, headers, rows, title=title)
        lines = [f"rows: {total:,}" + (f" ({self.bad_rows:,} could not be read or computed)"
                                        if self.bad_rows else "")]
        if self.value_min is not None:
            what = "value" if np.ndim(self.kind.value(meta)) == 0 else "value (elements)"
            lines.append(f"{what}: min {render.number_text(self.value_min[0], precision)} "
                         f"(row {self.value_min[1]}), max "
                         f"{render.number_text(self.value_max[0], precision)} "
                         f"(row {self.value_max[1]})")
        if self.norm_min is not None:
            lines.append(f"{self.kind.norm}: min {render.number_text(self.norm_min[0], precision)}"
                         f" (row {self.norm_min[1]}), max "
                         f"{render.number_text(self.norm_max[0], precision)} "
                         f"(row {self.norm_max[1]})")
        if self.words:
            lines.append(f"{self.kind.word}: " + ", ".join(
                f"{word} {count:,}" for word, count in sorted(self.words.items())))
        if self.non_finite:
            listed = ", ".join(map(str, self.non_finite_rows))
            more = ", ..." if self.non_finite > len(self.non_finite_rows) else ""
            lines.append(f"non-finite results (nan or inf): {self.non_finite:,} row"
                         f"{'s' if self.non_finite != 1 else ''} ({listed}{more})")
        else:
            lines.append("non-finite results: none")
        for line in lines:
            render.emit(out, line)


def render_console(stderr: bool = False):
    from . import render
    return render.console(stderr=stderr)


def _extreme(current, values: np.ndarray, finite: np.ndarray, start: int, pick):
    """The running min or max of the finite rows' elements: (number, row)."""
    if not finite.any():
        return current
    rows = np.flatnonzero(finite)
    per_row = (values[rows].min(axis=1) if pick is min else values[rows].max(axis=1))
    k = int(np.argmin(per_row) if pick is min else np.argmax(per_row))
    candidate = (float(per_row[k]), int(start + rows[k]))
    if current is None:
        return candidate
    return pick(current, candidate, key=lambda c: c[0])


def _print_check(out, report: dict, precision) -> None:
    from . import render
    for entry in report["rows"]:
        render.print_check(out, entry, precision, title=f"cross-check of row {entry['row']}")
    checked = ", ".join(str(e["row"]) for e in report["rows"]) or "none"
    render.emit(out, f"check at {len(report['rows'])} sampled row"
                      f"{'s' if len(report['rows']) != 1 else ''} ({checked}): "
                      f"{report['verdict']}")


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
def _format(s) -> str:
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


def run(kind, s, prepare) -> None:
    """``gradcli COMMAND PROGRAM --at SOURCE`` for the command ``kind`` (a ModeKind,
    JacobianKind or JvpKind): see the module doc."""

    if getattr(s, "symbolic", False):
        guarded(lambda: _raise(InputError("--symbolic shows one point's derivative; it "
                                           "does not work with --at")))
    to_file = s.output not in (None, "-")   # (--output -: standard output, as without it)

    def setup():
        if s.at.strip() == "-" and s.program.strip() == "-":
            raise InputError("the program and --at cannot both be read from standard input")
        fmt = _format(s)
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
            if fmt == "npz" else _open_output(s.output if to_file else None, fmt)
        return fmt, model, source, out

    fmt, model, source, out = guarded(setup)
    try:
        _run(kind, s, fmt, model, source, out, to_file)
    finally:
        if to_file:
            out.discard()   # (the temporaries, unless committed: whatever happened)


def _run(kind, s, fmt: str, model, source, out, to_file: bool) -> None:
    evaluate = Evaluator(model, kind)
    writer_class = {**WRITERS, "human": HumanWriter}[fmt]
    writer = writer_class(out, s.precision, lambda: evaluate.meta, source.labels, kind,
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
    notes = kind.notes(evaluate.meta) if evaluate.meta is not None and fmt in (
        "plain", "csv", "human", "npz") else []
    if evaluate.fell_back:
        notes.append(_FALLBACK_NOTE)
    if notes:
        writer.flush()
        target = sys.stdout if fmt == "human" and not to_file else sys.stderr
        target.write("".join(f"note: {note}\n" for note in notes))
    report = None
    if sample is not None:
        report = guarded(lambda: _check_rows(evaluate, sample, s))
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


def _open_output(path: str | None, fmt: str):
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
        for part in _computed(evaluate, item):
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


def _check_rows(evaluate: Evaluator, sample: Sample, s) -> dict:
    """The single-point cross-check at each sampled row: {"rows": [{"row": N, ...the
    check object...}], "verdict", "passed"}."""
    rows = []
    for row, values in sample.rows():
        meta = evaluate.run_one(values)
        rows.append({"row": row, **evaluate.kind.check(evaluate.model, meta, s)})
    verdicts = [r["verdict"] for r in rows]
    verdict = ("mismatch" if "mismatch" in verdicts else
               "passed" if "passed" in verdicts else "nothing to check")
    return {"rows": rows, "checked": [r["row"] for r in rows], "verdict": verdict,
            "passed": verdict != "mismatch"}


# What cli/scale.py (partitioned sources, --dask, --reduce) shares with the runs here.
output_format, computed, open_output, FALLBACK_NOTE = _format, _computed, _open_output, \
    _FALLBACK_NOTE
