"""``gradcli minimize``: the training loop the seeds describe, from the command line.

Imported only when ``minimize`` runs (or for the full command listing), so the other
commands' start-up does not pay for it. The math lives in ``gradcli.run.optimize``.
"""
from __future__ import annotations

import math
import sys
import time
from typing import Annotated, Optional

import typer

from ..errors import InputError
from .common import Settings, guarded, prepare
from .options import CSV_SOURCE, DECLARATIONS, OUTPUT, PROGRAM, option

OPTIONS = [
    option("optimizer", Annotated[Optional[str], typer.Option(
        "--optimizer", metavar="lbfgs|gd|sgd|momentum|adam", show_default=False,
        help="The update rule. Default: lbfgs (scipy's L-BFGS-B, the extra "
             "gradcli[optimize]), or without scipy gd (gradient descent with a "
             "backtracking line search); adam for --at with --batch-size or --epochs. "
             "The output says which ran.")], None),
    option("lr", Annotated[Optional[float], typer.Option(
        "--lr", min=0.0, show_default=False,
        help="Learning rate of sgd/momentum/adam (default: Keras' 0.01 for sgd/momentum, "
             "0.001 for adam); lbfgs and gd have none.")], None),
    option("momentum", Annotated[float, typer.Option(
        "--momentum", min=0.0, max=1.0, help="Momentum of --optimizer momentum.")], 0.9),
    option("steps", Annotated[Optional[int], typer.Option(
        "--steps", min=0, max=10**8, metavar="N", show_default=False,  # MAX_UPDATES
        help="A training run of N updates (lbfgs, gd: iterations), stopping early only "
             "when converged; exit 0 at its end, with a warning when the gradient is not "
             "small. Without it the run goes on to convergence.")], None),
    option("max_steps", Annotated[Optional[int], typer.Option(
        "--max-steps", min=0, max=10**8, metavar="N", show_default=False,  # MAX_UPDATES
        help="The cap of a run to convergence (default 10000): reaching it is exit 1, "
             "not converged.")], None),
    option("tol", Annotated[Optional[float], typer.Option(
        "--tol", min=0.0, metavar="T", show_default=False,
        help="Converged when the gradient's Euclidean norm is at most T (default 1e-8; "
             "1e-4 with --dtype float32).")], None),
    option("save", Annotated[Optional[str], typer.Option(
        "--save", metavar="DIR", show_default=False,
        help="Write each variable to DIR/NAME.npy; feed it back with "
             "--var NAME=@DIR/NAME.npy.")], None),
    option("at", Annotated[Optional[str], typer.Option(
        "--at", metavar="SOURCE", show_default=False,
        help="Train on data rows: the program is the loss of ONE row, whose --arg/--frozen "
             "values come from each row of @data.csv, @x.npy, @d.npz, @d.jsonl or - "
             "(as --at of the gradient commands); the loss of a batch is the mean over "
             "its rows.")], None),
    option("batch_size", Annotated[Optional[int], typer.Option(
        "--batch-size", min=1, metavar="B", show_default=False,
        help="With --at: B rows per update (default: every row, a full batch; more "
             "than the rows is a full batch).")], None),
    option("epochs", Annotated[Optional[int], typer.Option(
        "--epochs", min=0, max=10**8, metavar="E", show_default=False,
        help="With --at: E passes over the data (instead of --steps).")], None),
    option("shuffle", Annotated[Optional[bool], typer.Option(
        "--shuffle/--no-shuffle", show_default=False,
        help="With --at --batch-size: a new random order of the rows every epoch "
             "(default, as Keras' fit), or the data order.")], None),
    option("seed", Annotated[Optional[int], typer.Option(
        "--seed", min=0, max=2**63 - 1, metavar="S", show_default=False,
        help="With --at: the seed of the shuffling (default: a fresh one, reported in "
             "--json).")], None),
    option("plot", Annotated[Optional[str], typer.Option(
        "--plot", metavar="PATH.png|.svg|.pdf", show_default=False,
        help="Save the loss curve (needs the extra gradcli[plot]).")], None),
]

OPTIONS += [option for option in CSV_SOURCE if option.name != "keep"]  # (no rows are output)
OPTIONS += [  # each loss and gradient one map-reduce over partitions (cli/scale.py)
    option("full_batch", Annotated[Optional[bool], typer.Option(
        "--full-batch", show_default=False,
        help="With --at over Parquet or .npy shards: each loss and gradient is reduced "
             "over the partitions (with --dask, on the cluster's workers, where the "
             "partitions stay).")], None),
    option("dask", Annotated[Optional[str], typer.Option(
        "--dask", metavar="SCHEDULER", show_default=False,
        help="With --at --full-batch: local, local:N or tcp://host:8786 (implies "
             "--full-batch).")], None),
]


def _progress(total: int, per_epoch: int | None = None, capped: bool = False):
    """A progress line on standard error (a terminal only): epoch (training on data rows,
    ``per_epoch`` updates each), step, loss, gradient norm, steps/s, and the ETA of a
    training run (a run to convergence shows its cap instead: it may end any time); at
    most ten redraws a second. ``done()`` wipes it, so that the result is what stays."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from . import render
    start = time.perf_counter()
    state = {"shown": 0.0, "width": 0}
    epochs = -(-total // per_epoch) if per_epoch else None

    def on_step(step, loss, norm):
        now = time.perf_counter()
        if now - state["shown"] < 0.1 and step != total:
            return
        state["shown"] = now
        rate = step / (now - start) if now > start and step else 0.0
        if capped:
            where = f"step {step} (at most {total})"
        else:
            eta = f"{(total - step) / rate:.0f} s" if rate else "?"
            where = f"step {step}/{total}"
        epoch = (f"epoch {min(step // per_epoch + 1, max(epochs, 1))}/{epochs}  "
                 if per_epoch else "")
        line = (f"{epoch}{where}  loss {render.number_text(loss, 6)}  "
                f"|grad| {render.number_text(norm, 3)}  {rate:.0f} steps/s"
                + ("" if capped else f"  ETA {eta}"))
        state["width"] = max(state["width"], len(line))
        sys.stderr.write("\r" + line.ljust(state["width"]))
        sys.stderr.flush()

    def done():
        if state["width"]:
            sys.stderr.write("\r" + " " * state["width"] + "\r")
            sys.stderr.flush()
    return on_step, done


def save_variables(directory: str, values: dict) -> list[str]:
    """Write each variable to ``directory/NAME.npy`` (made if missing); the paths."""
    import os

    import numpy as np

    from ..io.outfile import OutputFile
    try:
        os.makedirs(directory, exist_ok=True)
        paths = []
        for name, value in values.items():
            path = os.path.join(directory, f"{name}.npy")
            with OutputFile(path, binary=True, option="--save") as f:  # renamed once complete
                np.save(f, np.asarray(value, dtype=np.float64), allow_pickle=False)
            paths.append(path)
    except OSError as err:
        raise InputError(f"--save {directory}: cannot write ({err.strerror or err})") from None
    return paths


def save_loss_plot(path: str, history) -> None:
    """The loss against the step, with matplotlib (log scale when every loss is > 0)."""
    from .plot import figure_module, output_format
    extension = output_format(path)
    plt = figure_module()
    steps = [h[0] for h in history]
    losses = [h[1] for h in history]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.plot(steps, losses, color="C0")
    if all(v > 0 and math.isfinite(v) for v in losses):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title("gradcli minimize: loss")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    try:
        from ..io.outfile import OutputFile
        with OutputFile(path, binary=True, option="--plot") as f:  # renamed once complete
            fig.savefig(f, format=extension[1:])
    except OSError as err:
        raise InputError(f"--plot {path}: cannot write ({err.strerror or err})") from None
    finally:
        plt.close(fig)


def run(s: Settings) -> None:
    """Build the program, choose the optimizer, train, print, save. Exit 1 for a
    non-finite loss, divergence, or a run to convergence that did not converge; 0 for a
    converged run or a training run (--steps, --epochs, mini-batches: a warning when the
    gradient is not small); 130 after Ctrl-C (the point so far is still printed)."""
    from ..run.optimize import (
        DEFAULT_LR,
        DEFAULT_MAX_STEPS,
        check_trainable,
        default_tol,
        minimize_program,
        train_on_rows,
    )
    from .batch import csv_options
    if s.tol is None:
        s.tol = default_tol(s.dtype)

    def work():
        optimizer = _optimizer(s)
        _check_data_options(s, optimizer)
        if s.plot is not None:
            from .plot import output_format
            output_format(s.plot)
        model = prepare(s)
        check_trainable(model)  # before any file is read
        from .scale import full_batch   # (partitions, --dask: cli/scale.py)
        if full_batch(s):
            from .scale import train_full_batch
            return train_full_batch(model, s, optimizer, _progress)
        if s.at is not None:
            return train_on_rows(
                model, s.at, csv_options(s, keep=False), optimizer, lr=s.lr, steps=s.steps,
                epochs=s.epochs, batch_size=s.batch_size, max_steps=s.max_steps,
                shuffle=s.shuffle is not False, seed=s.seed, tol=s.tol, momentum=s.momentum,
                progress=_progress)
        limit = next(n for n in (s.steps, s.max_steps, DEFAULT_MAX_STEPS) if n is not None)
        on_step, done = _progress(limit, capped=s.steps is None)
        try:
            result = minimize_program(model, optimizer, lr=s.lr, steps=s.steps,
                                      max_steps=s.max_steps, tol=s.tol, momentum=s.momentum,
                                      on_step=on_step)
        finally:
            done()
        return result, False

    result, fell_back = guarded(work)
    saved = guarded(lambda: save_variables(s.save, result.values)) if s.save else []
    if s.plot is not None:
        guarded(lambda: save_loss_plot(s.plot, result.history))
    notes = list(result.data["notes"]) if result.data else []
    if fell_back:
        notes.append(_FALLBACK_NOTE)
    if s.plain and s.optimizer is None:   # bare numbers on stdout: the choice said here
        notes.append(f"the optimizer was {result.optimizer_text(default=True)}")
    if notes:
        sys.stderr.write("".join(f"note: {note}\n" for note in notes))
    lr = s.lr if s.lr is not None else DEFAULT_LR[result.optimizer]
    from . import render
    if s.json_out:
        render.json_writer.write(result.report(lr, default=s.optimizer is None))
    elif s.plain:
        render.plain_writer.write(result.report(lr), s.precision)
    else:
        render.show(result.page(s.precision, lr, s.optimizer is None, s.at, saved, s.plot))
    if result.failed:
        sys.stderr.write(_failure_message(result) + "\n")
        raise typer.Exit(1)
    if result.reason == "interrupted":
        raise typer.Exit(130)
    if not result.converged:
        sys.stderr.write(_unconverged_message(result, s) + "\n")
        if not result.training:
            raise typer.Exit(1)


def _optimizer(s: Settings) -> str:
    """The optimizer of the run (the given one, or the default), its settings checked."""
    from ..run.optimize import LINE_SEARCH, check_numbers, check_settings, default_optimizer
    check_numbers(lr=s.lr, tol=s.tol, momentum=s.momentum)
    mini_batches = s.at is not None and (s.batch_size is not None or s.epochs is not None)
    optimizer = s.optimizer or default_optimizer(mini_batches)
    if s.optimizer is None and s.lr is not None and optimizer in LINE_SEARCH:
        raise InputError(f"--lr sets the step of sgd, momentum and adam; the default "
                         f"optimizer here, {optimizer}, sets its own by a line search: give "
                         "--optimizer adam (or sgd, momentum) with --lr")
    check_settings(optimizer, lr=s.lr, tol=s.tol, momentum=s.momentum, steps=s.steps,
                   max_steps=s.max_steps)
    return optimizer


def _failure_message(result) -> str:
    """The error of a run stopped by a non-finite loss or divergence, naming the point
    the output holds."""
    from ..run.optimize import FLOAT_EDGE, LINE_SEARCH
    from . import render
    n = render.number_text
    step, last = result.history[-1][0], result.history[-1][1]
    line_search = result.optimizer in LINE_SEARCH
    if result.reason != "non-finite loss":
        what = "the loss diverged (grew by more than 1e8 times the best loss)"
    elif line_search and math.isfinite(last):
        # a trial step of the line search reached -inf, or the loss float64's edge
        what = (f"the loss reached {n(last)}, the edge of float64's range"
                if last >= FLOAT_EDGE else
                f"the loss ran off towards -inf (the last finite loss is {n(last)})")
    else:
        what = "the loss became nan or infinite"
    advice = "the function may have no minimum" if line_search else "try a smaller --lr"
    if not step:
        return (f"error: {what} at step 0; at the starting point: nothing to minimise from "
                "there (the output is that point)")
    return (f"error: {what} at step {step}; the output is the point of step "
            f"{result.point_step} (loss {n(result.loss)}) ({advice})")


def _unconverged_message(result, s: Settings) -> str:
    """The error of a run to convergence that did not converge (exit 1), or the warning
    of a training run that ended with a gradient that is not small (exit 0)."""
    from . import render
    n = render.number_text
    gradient = (f"the gradient norm at the result is {n(result.grad_norm, 3)}, above "
                f"--tol {n(result.tol, None)}")
    if result.training:
        return f"warning: {gradient}; {_training_end(result, s)}"
    if result.reason == "stalled":
        return (f"error: not converged after {result.steps:,} steps: the loss does not "
                f"decrease any further ({result.detail}) and {gradient}\n"
                f"hint: this may be the rounding of {s.dtype} at this scale: a --tol above "
                f"{n(result.grad_norm, 3)} accepts this point")
    first = result.history[0][1]
    more = "raise --max-steps or --tol, or give --steps N for a training run of N steps (exit 0)"
    if result.optimizer in ("sgd", "momentum", "adam"):
        hint = (f"a fixed learning rate may never settle: drop --optimizer for lbfgs's line "
                f"search or try another --lr; or {more}")
    else:
        hint = (f"{more}; the loss went from {n(first, 6)} to {n(result.loss, 6)}: one that "
                "keeps falling may have no minimum (unbounded below)")
    return (f"error: not converged after {result.steps:,} steps (the cap, --max-steps): "
            f"{gradient}\nhint: {hint}")


def _training_end(result, s: Settings) -> str:
    """Why a training run's end need not be a minimum, and what runs to convergence."""
    data = result.data
    if data is not None and data["batch_size"] < data["rows"]:
        return ("training on mini-batches ends after its updates, not at a minimum (the "
                "full batch, without --batch-size, runs to convergence)")
    option = f"--steps {s.steps:,}" if s.steps is not None else f"--epochs {s.epochs:,}"
    return (f"a training run of {option} ends where its steps end, not at a minimum: drop "
            f"{option.split()[0]} to run to convergence")


_FALLBACK_NOTE = ("the rows of a batch were computed one at a time (vectorized_map's loop "
                  "fallback: the program has code the engine cannot batch); the results "
                  "are the same, only slower")
_DATA_OPTIONS = (("--batch-size", "batch_size"), ("--epochs", "epochs"),
                 ("--shuffle/--no-shuffle", "shuffle"), ("--seed", "seed"),
                 ("--dask", "dask"), ("--full-batch", "full_batch"))


def _check_data_options(s: Settings, optimizer: str) -> None:
    """The options of training on data rows need --at, and go together (before the rows
    are read)."""
    from ..run.optimize import check_rows_options
    from .batch import csv_options
    # --columns, --delimiter, --no-header: checked before any file is read
    csv_options(s, keep=False, what="training on data rows")
    if s.at is None:
        for option, name in _DATA_OPTIONS:
            if getattr(s, name) is not None:
                raise InputError(f"{option} works with --at SOURCE (training on data rows)")
        return
    check_rows_options(optimizer, steps=s.steps, epochs=s.epochs, batch_size=s.batch_size,
                       max_steps=s.max_steps)
    if s.at.strip() == "-" and s.program.strip() == "-":
        raise InputError("the program and --at cannot both be read from standard input")


#: minimize's --plain prints the loss and the variables, not a value and gradients.
PLAIN = option("plain", Annotated[bool, typer.Option(
    "--plain", help="Print bare numbers: the loss, then one line per trained variable (its "
                    "values, flattened, space-separated); notes, warnings and errors go to "
                    "standard error.")], False)


#: The command's signature (app.COMMANDS reads it when typer builds ``minimize``).
PARAMETERS = [PROGRAM] + DECLARATIONS + OPTIONS + [PLAIN if p.name == "plain" else p
                                                   for p in OUTPUT]
