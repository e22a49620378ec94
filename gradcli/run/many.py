"""``--at``'s computation: a command's per-point function at many points, a chunk of rows
per ``vectorized_map`` call, without the command line (the CLI's cli/batch.py streams
chunks through it to the writers; a worker process can call it on its own chunk).

The per-point function is the command record's ``at`` (``cli/app.py``): ``point(model)``
-> a ``Rowwise`` result (``io/report.py``: ``run.modes.Outcome``, ``JacobianResult``,
``HessianResult``, ``JvpOutcome``), exactly what the single-point command computes. Each
chunk is evaluated by ONE call of ``gc.vectorized_map`` whose function binds the chunk's
values to the model (``Model.bind``) and runs ``point``, so a row's result is the
single-point result at that row by construction. Where the engine cannot batch the
command yet, ``vectorized_map`` runs the function once per row (same results, slower) and
``Evaluator.fell_back`` says so.

    point = per_point("run.derivatives.jacobian", {"wrt": None, "mode": "rev"})
    evaluate = Evaluator(model, point)            # one per run: it learns the row limit
    parts = evaluate_chunk(evaluate, chunk)       # [Result | BadRow, ...], in row order
    layout = evaluate.meta.layout()               # what each row holds (names, notes)

``per_point`` gives a picklable function (a ``functools.partial`` of a module's function),
for a worker process.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..errors import ChunkTooLarge, GradcliError, ModeError, UnknownNameError
from ..io.points import BadRow, Chunk


def per_point(at: str, arguments: dict):
    """A command record's ``at`` ("run.module.function" in gradcli) with its
    ``arguments``: ``point(model=model)`` -> the single-point result."""
    from importlib import import_module
    module, name = at.rsplit(".", 1)
    return functools.partial(getattr(import_module(f"gradcli.{module}"), name), **arguments)


class Evaluator:
    """A command's per-point function ``point`` (``point(model=model)`` -> a ``Rowwise`` result,
    as ``run.modes.run_mode``, ``run.derivatives.jacobian``) on a built model at the rows
    of a chunk: ``__call__(values)`` -> ``(value, outputs)`` arrays with a leading row axis
    (None where the command gives no value, or for an unconnected gradient). ``meta`` is
    the result of the last run (the outputs' names and notes: ``meta.layout()``);
    ``fell_back`` whether vectorized_map had to loop."""

    def __init__(self, model, point):
        self.model, self.point = model, point
        self.meta = None
        self.fell_back = False
        self.rows = 1 << 62  # the most rows at once (fewer after a ChunkTooLarge)

    def run_one(self, values: dict):
        """The single-point command at one row (plain arrays): for ``--check``."""
        self.model.bind(values)
        return self.point(model=self.model)

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
            value, outputs = out.mapped()
            return {"value": value, "gradients": outputs}

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

    def __init__(self, start: int, columns: np.ndarray, value, raw: list, meta,
                 values: dict, kept: np.ndarray | None = None):
        self.start, self.columns, self.value, self.raw = start, columns, value, raw
        self.values, self.kept = values, kept
        self.grads, self.words = meta.shown(value, raw)

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


def evaluate_chunk(evaluate: Evaluator, chunk: Chunk) -> list:
    """The chunk's results, in order: one Result, or (when some row's computation fails)
    Results and BadRows row by row. What the command refuses whatever the values (no
    trainable variable, an unknown --wrt name) is the program's error: it is raised.

    Rows that together go over the limits of one evaluation (``ChunkTooLarge``: big
    arrays per row) are computed in halves, and halves of those, down to one row; the
    size that fit is where the next chunks start (``evaluate.rows``)."""
    if chunk.n > evaluate.rows:
        return [part for piece in _pieces(chunk, evaluate.rows)
                for part in evaluate_chunk(evaluate, piece)]
    try:
        value, grads = evaluate(chunk.values)
        return [Result(chunk.start, chunk.columns, value, grads, evaluate.meta,
                       chunk.values, chunk.kept)]
    except _PROGRAM_ERRORS:
        raise
    except ChunkTooLarge:
        if chunk.n > 1:
            evaluate.rows = (chunk.n + 1) // 2
            return evaluate_chunk(evaluate, chunk)
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
                          evaluate.meta, row, kept))
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
