"""Training loops on the engine: ``gradcli minimize`` and its Python form.

Each step calls ``implicit_value_and_gradients(f)(*args)`` -- the piece of a training loop
the seed text describes -- and hands the ``(gradient, variable)`` pairs to an optimizer.
The update rules are those of ``tf.keras.optimizers`` (Keras 3, ``update_step``):

- ``SGD``: ``w -= lr * g`` (defaults: lr 0.01);
- momentum (Keras ``SGD(momentum=m)``): ``velocity = m * velocity - lr * g``;
  ``w += velocity`` (defaults: lr 0.01, m 0.9);
- ``Adam``: ``m += (g - m) * (1 - beta_1)``; ``v += (g**2 - v) * (1 - beta_2)``;
  ``alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)``; ``w -= alpha * m / (sqrt(v) +
  epsilon)`` -- epsilon is Keras' "epsilon hat", added outside the bias-corrected square
  root (defaults: lr 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7).

L-BFGS runs through ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)`` (the optional
extra ``gradcli[optimize]``), with the engine giving the value and the gradient together.
``gd`` needs no scipy: gradient descent whose step is the Barzilai-Borwein step of the last
move, halved until Armijo's sufficient decrease holds (a backtracking line search).

Two kinds of run (``steps``):

- ``steps=None``: run to convergence, the gradient's Euclidean norm at most ``tol``
  (absolute, default DEFAULT_TOL), under a cap of ``max_steps`` steps (DEFAULT_MAX_STEPS).
  Reaching the cap, or a line search that can no longer lower the loss ("stalled"), is
  not converged. The default optimizer (``default_optimizer``) is lbfgs when scipy is
  installed, else gd: both choose their own step and converge on textbook problems.
- ``steps=N``: a training run of N updates (stopping early only when converged), whose
  end is its result whatever the gradient there (``result.training``).

Arguments and frozen variables stay fixed: only trainable variables the target reads move.
A variable the target does not reach gets a zero gradient (it does not move).

Training on data rows (``gradcli minimize --at``): ``ProgramRows`` makes a program written
for one row into the mean loss over rows of data (one ``vectorized_map`` call per
mini-batch), ``batch_order`` is the documented order of the mini-batches (Keras-style
shuffling, reproducible with a seed), and ``minimize_rows`` is the loop over them.

>>> from gradcli.engine import Variable
>>> w = Variable(3.0, name="w")
>>> result = minimize(lambda: (w - 1.0) ** 2)
>>> result.optimizer in ("lbfgs", "gd"), result.reason, round(float(w.numpy()), 6)
(True, 'converged', 1.0)
"""
from __future__ import annotations

import math
import signal
import time

import numpy as np

from .. import engine as gc
from ..engine.core.api import NO_VARIABLES
from ..io.report import Numbers, Page, Report
from ..errors import ChunkTooLarge, GradcliError, InputError, LimitError, ModeError

__all__ = ["OPTIMIZERS", "LINE_SEARCH", "SGD", "Adam", "Result", "minimize", "DEFAULT_LR",
           "DEFAULT_TOL", "DEFAULT_MAX_STEPS", "default_optimizer", "default_tol",
           "check_numbers",
           "check_settings",
           "check_rows_options", "ProgramRows", "minimize_rows", "batch_order",
           "total_updates", "run_length", "MAX_UPDATES", "check_trainable",
           "minimize_program", "train_on_rows"]

OPTIMIZERS = ("sgd", "momentum", "adam", "lbfgs", "gd")
#: The optimizers that choose their own step by a line search (no learning rate); they
#: compare losses of one function, so they train on the full batch only.
LINE_SEARCH = ("lbfgs", "gd")
#: Keras' default learning rates (lbfgs and gd have none: their line search picks the step).
DEFAULT_LR = {"sgd": 0.01, "momentum": 0.01, "adam": 0.001, "lbfgs": None, "gd": None}
#: Converged: the gradient's Euclidean norm at most this. Absolute, not relative to the
#: loss: a test scaled by |loss| would call a run that runs off to -1e9 on ``x`` converged.
#: About the square root of float64's epsilon (1.5e-8); float32's rounding stops a
#: gradient near 1e-5, so a float32 run's default (``default_tol``) is 1e-4.
DEFAULT_TOL = 1e-8
DEFAULT_TOL_FLOAT32 = 1e-4
#: The cap on the steps of a run to convergence (``--max-steps``).
DEFAULT_MAX_STEPS = 10_000
#: gd's line search: Armijo's constant (sufficient decrease), and the most halvings of
#: one trial step (a factor of 1e-18) before it is "stalled".
ARMIJO = 1e-4
MAX_HALVINGS = 60
#: A loss that grows beyond this factor times (|best loss| + 1) is taken as divergence.
DIVERGENCE_FACTOR = 1e8
#: A loss this large in size (float64's largest number over DIVERGENCE_FACTOR, 1.8e300)
#: has run off to the edge of float64's range: lbfgs reports it as a non-finite loss.
FLOAT_EDGE = float(np.finfo(np.float64).max) / DIVERGENCE_FACTOR
#: The most updates of one run (``--steps``, or ``--epochs`` times the batches per epoch).
MAX_UPDATES = 10**8


class SGD:
    """``tf.keras.optimizers.SGD``: plain gradient descent, or with ``momentum`` > 0 the
    velocity rule ``v = momentum * v - lr * g; w += v`` (Nesterov: ``w += momentum * v -
    lr * g``)."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0,
                 nesterov: bool = False):
        self.lr, self.momentum, self.nesterov = learning_rate, momentum, nesterov
        self._velocity: dict[int, np.ndarray] = {}

    def apply_gradients(self, pairs) -> None:
        """Update each variable from its gradient (pairs of ``(gradient, variable)``)."""
        for g, var in pairs:
            w = var.numpy()
            if self.momentum == 0.0:
                var.assign(w - self.lr * g)
                continue
            v = self._velocity.get(id(var), np.zeros_like(w))
            v = self.momentum * v - self.lr * g
            self._velocity[id(var)] = v
            var.assign(w + (self.momentum * v - self.lr * g if self.nesterov else v))


class Adam:
    """``tf.keras.optimizers.Adam`` (epsilon outside the square root, as Keras)."""

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7):
        self.lr, self.beta_1, self.beta_2, self.epsilon = learning_rate, beta_1, beta_2, epsilon
        self.iterations = 0
        self._m: dict[int, np.ndarray] = {}
        self._v: dict[int, np.ndarray] = {}

    def apply_gradients(self, pairs) -> None:
        """One Adam step for every ``(gradient, variable)`` pair."""
        self.iterations += 1
        t = self.iterations
        alpha = self.lr * math.sqrt(1 - self.beta_2 ** t) / (1 - self.beta_1 ** t)
        for g, var in pairs:
            w = var.numpy()
            m = self._m.get(id(var), np.zeros_like(w))
            v = self._v.get(id(var), np.zeros_like(w))
            m = m + (g - m) * (1 - self.beta_1)
            v = v + (g * g - v) * (1 - self.beta_2)
            self._m[id(var)], self._v[id(var)] = m, v
            var.assign(w - alpha * m / (np.sqrt(v) + self.epsilon))


class Result:
    """What a run gave: ``loss`` and ``values`` (name -> array) at the point returned (the
    best seen; mini-batches: the last good one), ``grad_norm`` there, ``point_step`` (the
    step whose point it is), ``steps`` (updates made), ``converged`` (the gradient test
    holds at that point), ``reason`` ("converged", "max steps", "stalled",
    "interrupted", "non-finite loss", "diverged"; "max epochs" on data rows), ``detail``
    (more on the reason, e.g. scipy's message, or ""), ``history`` (a list of ``(step,
    loss, grad_norm)``), ``elapsed`` seconds; ``optimizer`` (the one used), ``training``
    (a run of a given number of steps, not to convergence), ``tol`` and ``limit`` (the
    most steps: the given ones, or the cap).

    Training on data rows (``minimize_rows``) also sets ``data``: a dict with ``rows``,
    ``batch_size``, ``epochs`` (complete passes made), ``shuffle``, ``seed``, ``notes``,
    and ``epoch_of`` (history index -> the 1-based epoch of its batch) and ``rows_of``
    (history index -> the rows its loss is over) for the history."""
    __slots__ = ("loss", "values", "steps", "converged", "reason", "history", "elapsed",
                 "data", "grad_norm", "point_step", "detail", "optimizer", "training",
                 "tol", "limit")

    def __init__(self, loss, values, steps, converged, reason, history, elapsed, data=None,
                 *, grad_norm=math.nan, point_step=None, detail=""):
        self.loss, self.values, self.steps = loss, values, steps
        self.converged, self.reason, self.history = converged, reason, history
        self.elapsed, self.data = elapsed, data
        self.grad_norm, self.detail = grad_norm, detail
        self.point_step = steps if point_step is None else point_step
        self.optimizer, self.training, self.tol, self.limit = None, False, None, None

    @property
    def failed(self) -> bool:
        """A run stopped by a non-finite loss or by divergence."""
        return self.reason in ("non-finite loss", "diverged")

    def report(self, lr, default: bool = False) -> Report:
        """JSON (docs/minimize.md): the optimizer (``default``: chosen, not given) and
        its ``lr``, the loss, each variable's value, the gradient's norm, how the run
        ended and its history (training on data rows adds "rows", "batch_size",
        "epochs" (not for lbfgs or gd), "shuffle", "seed", and "epoch" and "rows" in each
        history entry); plain: the loss, then a line per variable."""
        from ..io.jsonvalue import json_number
        fields = {"mode": "minimize", "optimizer": self.optimizer,
                  "optimizer_default": default, "lr": lr, "loss": json_number(self.loss),
                  "variables": [{"name": n, "value": Numbers(v)}
                                for n, v in self.values.items()],
                  "grad_norm": json_number(self.grad_norm), "point_step": self.point_step,
                  "steps": self.steps, "converged": self.converged, "reason": self.reason,
                  "tol": self.tol, "max_steps": None if self.training else self.limit}
        fields.update(self._history())
        lines = [("loss", Numbers(np.asarray(self.loss), summarise=False))]
        lines += [(n, Numbers(v, summarise=False)) for n, v in self.values.items()]
        return Report("minimize", fields, lines)

    #: How the default optimizer is named in the output.
    DEFAULT_TEXT = {"lbfgs": "lbfgs (the default: L-BFGS-B through scipy)",
                    "gd": "gd (the default without scipy: gradient descent with a "
                          "backtracking line search)",
                    "adam": "adam (the default for training with --batch-size or --epochs)"}

    def optimizer_text(self, default: bool) -> str:
        """The optimizer that ran, and why when it was the ``default``'s choice."""
        return self.DEFAULT_TEXT[self.optimizer] if default else self.optimizer

    def page(self, precision: int | None, lr, default: bool = False, at: str | None = None,
             saved: list = (), plot: str | None = None) -> Page:
        """The human page: the optimizer (``default``: chosen, not given) and its ``lr``,
        how the run ended, the data rows (``at``: their source), the loss, each
        variable, the loss curve, the files ``saved`` (one per variable) and the
        ``plot`` of the loss written."""
        from ..io.text import array_text, number_text as n
        settings = self.optimizer_text(default) + (f", lr {n(lr, None)}" if lr is not None
                                                   else "")
        done = self.converged or self.training or self.reason == "interrupted"
        meaning = ("good" if self.converged else "error" if self.failed or not done
                   else "caution")
        status = self.reason if done or self.failed else f"not converged ({self.reason})"
        gradient = f"|grad| {n(self.grad_norm, 3)}, tol {n(self.tol, None)}"
        page = Page().line(("minimize", "heading"), "  ", (settings, "aside"), wrap=False)
        page.line((status, meaning), f" after {self.steps} steps ",
                  (f"({n(self.elapsed, 2)} s)", "aside"), f"  {gradient}", wrap=False)
        if self.point_step != self.steps:
            page.line(f"the point below is that of step {self.point_step}, the lowest loss "
                      "seen", wrap=False)
        if self.data is not None:
            data = self.data
            what = f"{data['rows']:,} rows, " + (
                "full batch" if data["batch_size"] == data["rows"] else
                f"batches of {data['batch_size']:,}" + (
                    f" (shuffled, seed {data['seed']})" if data["shuffle"] else " (data order)"))
            if data["epochs"] is not None:
                what += f", {data['epochs']:,} epoch{'s' if data['epochs'] != 1 else ''}"
            page.line("data: ", what, (f"  ({at})", "aside"), wrap=False)
        page.line("loss: ", (n(self.loss, precision), "emphasis"),
                  (" (mean over all rows)" if self.data is not None else "", "aside"),
                  wrap=False)
        page.table(["variable", "value", "shape"],
                   [[name, array_text(value, precision), str(np.shape(value))]
                    for name, value in self.values.items()], fitted=False, aside=("shape",))
        line = sparkline([h[1] for h in self.history])
        if line and len(self.history) > 1:
            scale = ", log scale" if all(h[1] > 0 for h in self.history) else ""
            page.line("loss curve: ", line, "  ",
                      (f"(step 0 to {self.history[-1][0]}{scale})", "aside"), wrap=False)
        for path, name in zip(saved, self.values):
            page.line(f"saved {name}: {path}  ", (f"(--var {name}=@{path})", "aside"),
                      wrap=False)
        if plot:
            page.line(f"loss curve saved: {plot}", wrap=False)
        return page

    def _history(self) -> dict:
        """The JSON of the history, and of the data rows when trained on them."""
        from ..io.jsonvalue import json_number
        data = self.data
        if data is None:
            return {"history": [{"step": step, "loss": json_number(loss),
                                 "grad_norm": json_number(norm)}
                                for step, loss, norm in self.history]}
        out = {"rows": data["rows"], "batch_size": data["batch_size"]}
        if data["epochs"] is not None:
            out["epochs"] = data["epochs"]
        out["shuffle"], out["seed"] = data["shuffle"], data["seed"]
        epoch_of, rows_of = data["epoch_of"], data["rows_of"]
        out["history"] = [dict({"step": step}, **({"epoch": epoch_of(i)} if data["epochs"]
                                                  is not None else {}),
                               rows=rows_of(i), loss=json_number(loss),
                               grad_norm=json_number(norm))
                          for i, (step, loss, norm) in enumerate(self.history)]
        return out


_SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(losses, width: int = 60) -> str:
    """The loss history as one line of block characters (log scale when every loss is
    positive; the last point at the right), non-finite values as spaces."""
    values = [float(v) for v in losses]
    if len(values) > width:  # keep the shape: the value at evenly spaced steps
        values = [values[round(i * (len(values) - 1) / (width - 1))] for i in range(width)]
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    log = all(v > 0 for v in finite)
    scaled = [math.log10(v) if log and math.isfinite(v) else v for v in values]
    lo, hi = min(s for s in scaled if math.isfinite(s)), max(s for s in scaled if math.isfinite(s))
    span = hi - lo or 1.0
    return "".join(_SPARKS[min(7, int((s - lo) / span * 7.999))] if math.isfinite(s) else " "
                   for s in scaled)


class _Interrupt:
    """Ctrl-C sets a flag the loop reads after the current step (the step is finished,
    the output stays complete); a second Ctrl-C interrupts at once."""

    def __init__(self):
        self.hit = False
        self._old = None

    def __enter__(self):
        try:
            self._old = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: Ctrl-C keeps its default meaning
            self._old = None
        return self

    def _handle(self, signum, frame):
        if self.hit:
            raise KeyboardInterrupt
        self.hit = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def default_optimizer(mini_batches: bool = False) -> str:
    """The optimizer of a run that names none: adam for training on mini-batches (as Keras'
    ``fit``; a line search needs one function, not a noisy batch loss), else lbfgs when
    scipy is installed, else gd (no scipy needed). lbfgs and gd choose their own step, so
    they converge on textbook problems without a learning rate to tune."""
    if mini_batches:
        return "adam"
    try:
        import scipy.optimize  # noqa: F401  (the extra gradcli[optimize])
    except ImportError:
        return "gd"
    return "lbfgs"


def default_tol(dtype: str = "float64") -> float:
    """The default ``tol`` of a run computing in ``dtype``.

    >>> default_tol(), default_tol("float32")
    (1e-08, 0.0001)
    """
    return DEFAULT_TOL_FLOAT32 if dtype == "float32" else DEFAULT_TOL


def check_numbers(*, lr: float | None = None, tol: float | None = None,
                  momentum: float | None = None) -> None:
    """Refuse a learning rate, tolerance or momentum that is nan, infinite or out of range
    (an ``InputError``): nan fails every test (a run that never converges), inf passes
    any (a run that stops at once), and either sends the variables to nan as a rate."""
    for option, value, top in (("--lr", lr, math.inf), ("--tol", tol, math.inf),
                               ("--momentum", momentum, 1.0)):
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= top):
            bounds = "between 0 and 1" if top == 1.0 else ">= 0"
            raise InputError(f"{option} {value} is not a finite number {bounds}")


def check_settings(optimizer: str, *, lr: float | None = None, tol: float = DEFAULT_TOL,
                   momentum: float = 0.9, steps: int | None = None,
                   max_steps: int | None = None) -> int:
    """Refuse settings that cannot run (an ``InputError`` or ``LimitError``: exit 2 in the
    CLI) before any work -- an unknown optimizer, ``check_numbers``, a learning rate for
    a line search, ``steps`` with ``max_steps`` -- and return the most steps of the run
    (``steps``, else the cap).

    >>> check_settings("adam", steps=50), check_settings("lbfgs")
    (50, 10000)
    """
    if optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {optimizer!r}; choose one of "
                         f"{', '.join(OPTIMIZERS)}")
    check_numbers(lr=lr, tol=tol, momentum=momentum)
    if optimizer in LINE_SEARCH and lr is not None:
        raise InputError(f"--lr does not apply to {optimizer} (its line search sets the step)")
    if steps is not None and max_steps is not None:
        raise InputError("give --steps N (a training run of N updates) or --max-steps N "
                         "(the cap of a run to convergence), not both")
    option = "--steps" if steps is not None else "--max-steps"
    limit = steps if steps is not None else max_steps
    limit = DEFAULT_MAX_STEPS if limit is None else limit
    if limit < 0:
        raise InputError(f"{option} must be at least 0")
    if limit > MAX_UPDATES:
        raise LimitError(f"{option} {limit:,} is over the limit of {MAX_UPDATES:,} updates")
    return limit


def minimize(function, args=(), *, optimizer: str | None = None, lr: float | None = None,
             steps: int | None = None, max_steps: int | None = None,
             tol: float = DEFAULT_TOL, momentum: float = 0.9, names=None,
             on_step=None) -> Result:
    """Minimise the scalar ``function(*args)`` over the trainable variables it reads.

    ``optimizer`` None is ``default_optimizer()`` (lbfgs, or gd without scipy).
    ``steps`` None runs to convergence -- the gradient's Euclidean norm (over all
    variables) at most ``tol`` -- under a cap of ``max_steps`` (default
    DEFAULT_MAX_STEPS); ``steps=N`` is a training run of N updates, which stops early
    only when converged. ``names`` maps ``id(variable)`` to the name shown (default: the
    variable's name); ``on_step(step, loss, grad_norm)`` is called after every step
    (progress). The variables hold the returned point when this returns: the converged
    one, or else the lowest loss seen.
    """
    optimizer = optimizer or default_optimizer()
    limit = check_settings(optimizer, lr=lr, tol=tol, momentum=momentum, steps=steps,
                           max_steps=max_steps)
    names = names or {}
    value_and_grads = gc.implicit_value_and_gradients(function)
    start = time.perf_counter()

    def evaluate():
        try:
            value, pairs = value_and_grads(*args)
        except ValueError as err:
            if str(err) == NO_VARIABLES:
                raise _no_variables() from None
            raise
        loss = np.asarray(value.numpy())
        if loss.size != 1:
            raise InputError(f"minimize needs a scalar target; the program's target has "
                             f"shape {loss.shape} (reduce it, e.g. sum(...) or mean(...))")
        grads = [(np.zeros(v.shape) if g is None else np.asarray(g.numpy()), v)
                 for g, v in pairs]
        return float(loss.reshape(())), grads

    with _Interrupt() as interrupt:
        result = _run(optimizer, evaluate, lr, momentum, limit, tol, names, on_step,
                      interrupt, start)
    return _labelled(result, optimizer, steps is not None, tol, limit)


def _run(optimizer, evaluate, lr, momentum, limit, tol, names, on_step, interrupt,
         start) -> Result:
    """One run on one function (every loss comparable with the others)."""
    if optimizer == "lbfgs":
        return _lbfgs(evaluate, limit, tol, names, on_step, interrupt, start)
    if optimizer == "gd":
        return _gradient_descent(evaluate, limit, tol, names, on_step, interrupt, start)
    return _descend(evaluate, _rule(optimizer, lr, momentum), limit, tol, names, on_step,
                    interrupt, start)


def _labelled(result: Result, optimizer: str, training: bool, tol: float,
              limit: int) -> Result:
    result.optimizer, result.training, result.tol, result.limit = (optimizer, training,
                                                                   tol, limit)
    return result


def _rule(optimizer: str, lr: float | None, momentum: float):
    """The optimizer object of sgd, momentum or adam, with Keras' default rate."""
    if optimizer == "adam":
        return Adam(lr if lr is not None else DEFAULT_LR["adam"])
    return SGD(lr if lr is not None else DEFAULT_LR[optimizer],
               momentum=momentum if optimizer == "momentum" else 0.0)


def _grad_norm(grads) -> float:
    """The norm of all the gradients of ``[(gradient, variable)]`` together."""
    return math.sqrt(sum(float(np.sum(g * g)) for g, _ in grads))


def _seen(history: list, on_step, step: int, loss: float, norm: float) -> None:
    """One evaluation into the history, and to the progress display."""
    history.append((step, loss, norm))
    if on_step is not None:
        on_step(step, loss, norm)


def _descend(evaluate, rule, steps, tol, names, on_step, interrupt, start) -> Result:
    """``steps`` updates of ``rule`` from ``evaluate() -> (loss, [(gradient, variable)])``,
    each loss comparable with the others (one function): the point returned is the
    converged one, or else the lowest loss seen."""
    history: list = []
    best = None    # (loss, [(variable, value)], gradient norm, step)
    reason, step = "max steps", 0
    for step in range(steps + 1):
        loss, grads = evaluate()
        norm = _grad_norm(grads)
        _seen(history, on_step, step, loss, norm)
        if not math.isfinite(loss) or not math.isfinite(norm):
            reason = "non-finite loss"
            break
        if best is None or loss < best[0] or norm <= tol:
            best = (loss, [(v, v.numpy().copy()) for _, v in grads], norm, step)
        if loss > DIVERGENCE_FACTOR * (abs(best[0]) + 1.0):
            reason = "diverged"
            break
        if norm <= tol:
            reason = "converged"
            break
        if interrupt.hit:
            reason = "interrupted"
            break
        if step == steps:
            break
        rule.apply_gradients(grads)
    if not grads:
        raise _no_variables()
    if best is None:  # the very first loss was not finite: nothing better to report
        best = (loss, [(v, v.numpy().copy()) for _, v in grads], norm, 0)
    for var, value in best[1]:
        var.assign(value)
    values = {names.get(id(v), v.name): value for v, value in best[1]}
    return Result(best[0], values, step, reason == "converged", reason, history,
                  time.perf_counter() - start, grad_norm=best[2], point_step=best[3])


def _no_variables() -> GradcliError:
    from .modes import NO_TRAINABLE_VARIABLES
    return ModeError(NO_TRAINABLE_VARIABLES)


class _Flat:
    """The trainable variables as one flat vector, as a line search works on them."""

    def __init__(self, variables: list):
        self.variables = variables
        self.shapes = [v.shape for v in variables]
        self.sizes = [int(np.prod(s)) for s in self.shapes]

    def get(self) -> np.ndarray:
        return np.concatenate([np.ravel(v.numpy()) for v in self.variables])

    def set(self, x: np.ndarray) -> None:
        offset = 0
        for var, shape, size in zip(self.variables, self.shapes, self.sizes):
            var.assign(np.asarray(x[offset:offset + size]).reshape(shape))
            offset += size

    def values(self, names: dict) -> dict:
        return {names.get(id(v), v.name): v.numpy().copy() for v in self.variables}

    @staticmethod
    def gradient(grads) -> np.ndarray:
        return np.concatenate([np.ravel(g) for g, _ in grads]) if grads else np.zeros(0)


def _runs_off(loss: float) -> bool:
    """A loss at -inf or float64's edge: the function runs off (no minimum to reach)."""
    return loss == -math.inf or (math.isfinite(loss) and abs(loss) >= FLOAT_EDGE)


def _gradient_descent(evaluate, limit, tol, names, on_step, interrupt, start) -> Result:
    """gd: steps ``w -= t * g`` whose ``t`` is the Barzilai-Borwein step ``s.y / y.y`` of
    the last move (s the change of w, y of g; twice the last step where the curvature
    ``s.y`` is not positive; ``1 / max(1, |g|)`` at first), halved until Armijo's
    condition ``f(w - t g) <= f(w) - 1e-4 t |g|^2`` holds with a lower, finite loss.
    Every step lowers the loss, so the last point is the best. No step found after
    MAX_HALVINGS halvings is "stalled" (the loss cannot decrease along -g: rounding)."""
    loss, grads = evaluate()
    if not grads:
        raise _no_variables()
    flat = _Flat([v for _, v in grads])
    x, g = flat.get(), _Flat.gradient(grads)
    norm = float(np.linalg.norm(g))
    history: list = []
    _seen(history, on_step, 0, loss, norm)
    step, previous, t = 0, None, 1.0 / max(1.0, norm)

    def verdict():   # why the run ends at the current point, or None to go on
        if not (math.isfinite(loss) and math.isfinite(norm)) or _runs_off(loss):
            return "non-finite loss"
        if norm <= tol:
            return "converged"
        if interrupt.hit:
            return "interrupted"
        return "max steps" if step == limit else None

    while (reason := verdict()) is None:
        if previous is not None:
            s, y = x - previous[0], g - previous[1]
            curvature = float(s @ y)
            t = curvature / float(y @ y) if curvature > 0 else 2.0 * t
        found = _armijo_step(evaluate, flat, x, loss, g, norm, t)
        if found is None or found[1] == -math.inf:
            # no lower loss along -g, or a trial reached -inf: the run ends at x
            reason = "stalled" if found is None else "non-finite loss"
            flat.set(x)
            break
        previous = (x, g)
        t, loss, x, g = found
        norm = float(np.linalg.norm(g))
        step += 1
        _seen(history, on_step, step, loss, norm)
    detail = "no step along the gradient lowers the loss" if reason == "stalled" else ""
    return Result(loss, flat.values(names), step, reason == "converged", reason, history,
                  time.perf_counter() - start, grad_norm=norm, detail=detail)


def _armijo_step(evaluate, flat: _Flat, x, loss: float, g, norm: float, t: float):
    """(t, loss, point, gradient) of the first step ``t, t/2, t/4, ...`` along ``-g`` that
    lowers the loss by Armijo's sufficient decrease; ``(t, -inf, ...)`` where a trial
    reaches -inf (the function runs off); None when none does in MAX_HALVINGS halvings.
    A nan or +inf trial (outside the function's domain, or overshooting) is halved."""
    for _ in range(MAX_HALVINGS):
        trial = x - t * g
        flat.set(trial)
        trial_loss, grads = evaluate()
        if trial_loss == -math.inf:
            return t, trial_loss, trial, None
        trial_g = _Flat.gradient(grads)
        if (math.isfinite(trial_loss) and trial_loss < loss
                and trial_loss <= loss - ARMIJO * t * norm * norm
                and np.all(np.isfinite(trial_g))):
            return t, trial_loss, trial, trial_g
        t *= 0.5
    return None


def _lbfgs(evaluate, steps, tol, names, on_step, interrupt, start) -> Result:
    try:
        from scipy.optimize import minimize as scipy_minimize
    except ImportError:
        raise MissingExtra("scipy", "optimize", "--optimizer lbfgs") from None
    loss0, grads0 = evaluate()
    if not grads0:
        raise _no_variables()
    flat = _Flat([v for _, v in grads0])
    last = {}
    state = {"stopped": None, "ran off": False}

    def fun(x):
        flat.set(x)
        loss, grads = evaluate()
        g = _Flat.gradient(grads)
        last["loss"], last["norm"] = loss, float(np.linalg.norm(g))
        if not math.isfinite(loss) or not np.all(np.isfinite(g)):
            # A non-finite trial point of the line search: scipy backs off from inf. A
            # loss of -inf says the function runs off below: remembered for the verdict.
            state["ran off"] |= loss == -math.inf
            return math.inf, np.zeros_like(g)
        return loss, g

    x0 = flat.get()
    norm0 = float(np.linalg.norm(_Flat.gradient(grads0)))
    history: list = []
    _seen(history, on_step, 0, loss0, norm0)
    values = flat.values(names)
    if not math.isfinite(loss0) or not math.isfinite(norm0):
        return Result(loss0, values, 0, False, "non-finite loss", history,
                      time.perf_counter() - start, grad_norm=norm0)
    if steps == 0 or norm0 <= tol:  # no step, as the other optimizers with --steps 0
        reason = "converged" if norm0 <= tol else "max steps"
        return Result(loss0, values, 0, reason == "converged", reason, history,
                      time.perf_counter() - start, grad_norm=norm0)

    def callback(intermediate_result):
        step = len(history)
        loss = float(intermediate_result.fun)
        # the gradient at the accepted point was the last one evaluated there
        fun(intermediate_result.x)
        norm = last["norm"]
        _seen(history, on_step, step, loss, norm)
        if norm <= tol:   # the convergence test of every optimizer (the Euclidean norm)
            raise StopIteration
        if interrupt.hit:
            state["stopped"] = "interrupted"
            raise StopIteration
        if loss > DIVERGENCE_FACTOR * (abs(min(h[1] for h in history)) + 1.0):
            state["stopped"] = "diverged"
            raise StopIteration

    # gtol is scipy's test on the largest gradient component: tol / sqrt(n) there makes
    # the Euclidean norm at most tol. ftol=0: stop on the gradient, not on a small
    # relative decrease, which would stop Rosenbrock short of 1e-6.
    with np.errstate(over="ignore", invalid="ignore"):
        res = scipy_minimize(fun, x0, jac=True, method="L-BFGS-B", callback=callback,
                             options={"maxiter": steps, "gtol": tol / math.sqrt(x0.size),
                                      "ftol": 0.0, "maxfun": steps * 20})
    flat.set(res.x)
    loss, grads = evaluate()
    values = flat.values(names)
    g = _Flat.gradient(grads)
    norm = float(np.linalg.norm(g))
    reason, detail = state["stopped"], ""
    if reason is None:
        # scipy's success flag is not the verdict: it also stops with "success" when the
        # loss cannot decrease any more, at a point where the gradient is anything but
        # small (-w^2 at -2.2e307). Converged is the gradient test, as for the others.
        if math.isfinite(loss) and math.isfinite(norm) and norm <= tol:
            reason = "converged"
        elif not math.isfinite(loss) or not math.isfinite(norm) or state["ran off"] \
                or _runs_off(loss):
            # the loss runs off to -inf (a trial point reached it), or to float64's edge
            reason = "non-finite loss"
        elif res.nit >= steps:
            reason = "max steps"
        else:  # the line search found no lower loss: scipy's message says why
            reason, detail = "stalled", f"scipy: {res.message}"
    return Result(loss, values, int(res.nit), reason == "converged", reason, history,
                  time.perf_counter() - start, grad_norm=norm, detail=detail)


class MissingExtra(GradcliError):
    """An optional dependency is not installed: the message names the install command."""

    def __init__(self, module: str, extra: str, what: str):
        super().__init__(f"{what} needs {module}, which is not installed: "
                         f"python -m pip install 'gradcli[{extra}]'")


# ---------------------------------------------------------------------------------------
# Training on data rows (``gradcli minimize --at``)
# ---------------------------------------------------------------------------------------
#: ``minimize --at`` holds the data in memory: at most this many numbers (256 MiB as
#: float64); a larger source is refused (train on a sample, or in Python).
MAX_DATA_NUMBERS = 1 << 25
#: Rows per ``vectorized_map`` call: a mini-batch up to this size is one call; a larger
#: one (a full batch of many rows) is cut into pieces whose gradients add up, so that the
#: tape's memory stays bounded.
PIECE_ROWS = 1 << 16
#: Updates of a training run on mini-batches given neither ``steps`` nor ``epochs``.
DEFAULT_STEPS = 1000


def batch_order(n_rows: int, batch_size: int, seed: int | None = None,
                shuffle: bool = True):
    """The mini-batches, epoch after epoch: an endless iterator of ``(epoch, rows)``,
    ``epoch`` counted from 1 and ``rows`` an integer array of row indices (0-based, in
    data order).

    ``rng = numpy.random.default_rng(seed)`` is made once; each epoch the order of the
    rows is ``rng.permutation(n_rows)`` (the next permutation of the same generator), or
    ``0, 1, ..., n_rows - 1`` without ``shuffle``, cut into consecutive batches of
    ``batch_size`` rows; the last batch of an epoch is smaller when ``batch_size`` does
    not divide ``n_rows`` (as Keras' ``fit``). A full batch (``batch_size >= n_rows``) is
    every row in data order, never shuffled: its mean does not depend on the order.

    >>> import itertools
    >>> [(e, r.tolist()) for e, r in itertools.islice(batch_order(5, 2, shuffle=False), 4)]
    [(1, [0, 1]), (1, [2, 3]), (1, [4]), (2, [0, 1])]
    """
    rng = np.random.default_rng(seed)
    permute = shuffle and batch_size < n_rows
    epoch = 0
    while True:
        epoch += 1
        order = rng.permutation(n_rows) if permute else np.arange(n_rows)
        for start in range(0, n_rows, batch_size):
            yield epoch, order[start:start + batch_size]


class ProgramRows:
    """A program written for ONE data row, as a loss over rows of data (Keras' loss
    reduction: the mean over the rows of a batch).

    ``model`` is a built program (``gradcli.lang.evaluate.build``), ``data`` maps the
    declared names the rows set (arguments, frozen variables; never a trainable one) to
    arrays whose axis 0 is the row, ``trainable`` names the variables trained.
    ``parameters`` (name -> ``Variable``) are the variables the optimizer moves, starting
    at the declared values.

    ``value_and_gradients(rows)`` is the mean over ``rows`` (indices; None: every row) of
    the program's value, with its gradient for each parameter, computed by one
    ``vectorized_map`` call (per PIECE_ROWS rows, or fewer where their arrays together
    go over the limits of one evaluation) under ``implicit_value_and_gradients``:
    the map's function binds the batch's values to the model (``Model.bind``, which makes
    the model's variables anew), gives each trainable variable its parameter's current
    value, and runs the program; the per-row losses come out with a leading row axis and
    their mean is taken outside the map, so each variable, shared by every row, gets the
    gradient of the mean (the sum over rows, divided by their number) in one backward
    pass. Should the map fall back to a loop (data-dependent code), each row's variables
    get their own gradient and these are added: the same result (``fell_back`` is set).
    """

    def __init__(self, model, data: dict, trainable: list):
        from ..engine.core.tensor import Variable
        self.model, self.data = model, data
        self.n = len(next(iter(data.values())))
        # The starting values: the declared ones (bound with the first row's data, as
        # a name declared without a value has none of its own).
        model.bind({name: v[0] for name, v in data.items()})
        self.parameters = {name: Variable(np.array(model.variables[name].numpy()),
                                          name=name, dtype=model.dtype)
                           for name in trainable}
        self.fell_back = False
        self.piece_rows = PIECE_ROWS

    def value_and_gradients(self, rows=None) -> tuple:
        """(the mean loss over ``rows``, [(gradient, parameter)]) as numpy values."""
        n = self.n if rows is None else len(rows)
        total = 0.0
        grads = {name: np.zeros(p.shape) for name, p in self.parameters.items()}
        at = 0
        while at < n:
            cut = slice(at, at + self.piece_rows)
            if rows is None:
                piece = {name: v[cut] for name, v in self.data.items()}
            else:
                piece = {name: v[rows[cut]] for name, v in self.data.items()}
            size = len(next(iter(piece.values())))
            try:
                value, pairs = self._piece(piece, n)
            except ChunkTooLarge:
                # rows whose arrays together go over the limits of one evaluation: fewer
                # at once, from here on (one row is held to the single-point limits)
                if size == 1:
                    raise
                self.piece_rows = (size + 1) // 2
                continue
            total += value
            for name, g in pairs:
                grads[name] += g
            at += size
        return total, [(grads[name], p) for name, p in self.parameters.items()]

    def _piece(self, piece: dict, n: int) -> tuple:
        """(the piece's share of the batch's mean, [(name, gradient)])."""
        import warnings

        from ..engine.core.batching import vectorized_map
        from ..engine.core.tensor import Variable, constant
        model, dtype = self.model, self.model.dtype
        current = {name: p.numpy() for name, p in self.parameters.items()}
        made: dict = {}   # id(variable made by bind) -> (name, variable)
        elems = {name: constant(v, dtype=dtype) for name, v in piece.items()}
        size = len(next(iter(piece.values())))

        def row_loss(example):
            model.bind(example)
            for name, value in current.items():
                variable = model.variables[name]
                if variable.__class__ is not Variable:
                    raise InputError(f"the trainable variable {name}'s value depends on the "
                                     "data rows, so it cannot be trained on them")
                variable.assign(value)
                made[id(variable)] = (name, variable)
            return model.function(*model.arg_values)

        def batch_loss():
            losses = vectorized_map(row_loss, elems)
            if tuple(losses.shape) != (size,):
                raise InputError(f"minimize needs one number per data row; the program's "
                                 f"target has shape {tuple(losses.shape)[1:]} for a row "
                                 "(reduce it, e.g. sum(...) or mean(...))")
            if size == n:
                return gc.FUNCTIONS["mean"](losses)
            return gc.FUNCTIONS["sum"](losses) / float(n)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value, pairs = gc.implicit_value_and_gradients(batch_loss)()
            except ValueError as err:
                if str(err) == NO_VARIABLES:
                    raise _no_variables() from None
                raise
        for w in caught:
            if "vectorized_map" in str(w.message):
                self.fell_back = True
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        out = [(made[id(v)][0], np.asarray(g.numpy())) for g, v in pairs
               if g is not None and id(v) in made]
        return float(np.asarray(value.numpy()).reshape(())), out


def total_updates(n_rows: int, batch_size: int | None, steps: int | None,
                  epochs: int | None) -> int:
    """The updates a run on ``n_rows`` data rows makes: ``steps``, or ``epochs`` times the
    batches per epoch (ceil(rows / batch size)), or DEFAULT_STEPS; refused (a
    ``LimitError``, before any work) over MAX_UPDATES, as ``--steps`` is.

    >>> total_updates(200, 32, None, 50)
    350
    """
    if steps is not None:
        if steps > MAX_UPDATES:
            raise LimitError(f"--steps {steps:,} is over the limit of {MAX_UPDATES:,} updates")
        return steps
    if epochs is None:
        return DEFAULT_STEPS
    size = n_rows if batch_size is None else min(batch_size, n_rows)
    per_epoch = -(-n_rows // size)
    total = epochs * per_epoch
    if total > MAX_UPDATES:
        raise LimitError(
            f"--epochs {epochs:,} over {n_rows:,} rows in batches of {size:,} is {total:,} "
            f"updates ({per_epoch:,} per epoch), over the limit of {MAX_UPDATES:,} updates "
            f"(as --steps): give at most {MAX_UPDATES // per_epoch:,} epochs, or a larger "
            "--batch-size")
    return total


def run_length(n_rows: int, batch_size: int | None, steps: int | None,
               epochs: int | None, max_steps: int | None) -> tuple[int, bool]:
    """(the most updates, whether it is a training run) of a run on ``n_rows`` data rows:
    a full batch without ``steps`` or ``epochs`` runs to convergence under the cap
    ``max_steps``; the rest train for ``total_updates``. Refuses ``max_steps`` for
    mini-batches, which never run to convergence (their losses are noisy).

    >>> run_length(200, None, None, None, None), run_length(200, 32, None, 5, None)
    ((10000, False), (35, True))
    """
    full = batch_size is None or batch_size >= n_rows
    if full and steps is None and epochs is None:
        return (DEFAULT_MAX_STEPS if max_steps is None else max_steps), False
    if max_steps is not None and not full:
        raise InputError("--max-steps caps a run to convergence on the full batch; "
                         "training on mini-batches runs for --steps N or --epochs E")
    return total_updates(n_rows, batch_size, steps, epochs), True


def check_rows_options(optimizer: str, *, steps: int | None = None,
                       epochs: int | None = None, batch_size: int | None = None,
                       max_steps: int | None = None) -> None:
    """Refuse options of training on data rows that do not go together (an
    ``InputError``), before the rows are read."""
    if steps is not None and epochs is not None:
        raise InputError("give --steps (updates) or --epochs (passes over the data), not both")
    if max_steps is not None and epochs is not None:
        raise InputError("give --epochs E (a training run of E passes) or --max-steps N (the "
                         "cap of a run to convergence), not both")
    if epochs is not None and epochs < 0:
        raise InputError("--epochs must be at least 0")
    if batch_size is not None and batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {batch_size}")
    if optimizer in LINE_SEARCH and batch_size is not None:
        raise InputError(f"{optimizer} trains on the full batch only (its line search "
                         "compares losses of one function): drop --batch-size, or use sgd, "
                         "momentum or adam for mini-batches")
    if optimizer in LINE_SEARCH and epochs is not None:
        raise InputError(f"{optimizer} trains on the full batch and counts iterations: use "
                         "--steps N, not --epochs")


def minimize_rows(rows: ProgramRows, *, optimizer: str | None = None,
                  lr: float | None = None, steps: int | None = None,
                  epochs: int | None = None, batch_size: int | None = None,
                  max_steps: int | None = None, shuffle: bool = True,
                  seed: int | None = None, tol: float = DEFAULT_TOL, momentum: float = 0.9,
                  on_step=None) -> Result:
    """Train ``rows.parameters`` on the data rows of ``rows`` (a ``ProgramRows``).

    Each update uses the mean loss of one mini-batch of ``batch_size`` rows (None: every
    row, a full batch), taken in the order of ``batch_order(rows.n, batch_size, seed,
    shuffle)``; ``steps`` counts updates, ``epochs`` passes over the data (give one). A
    ``batch_size`` above the number of rows is a full batch (``result.data["notes"]``
    says so). Without ``seed`` a shuffled run draws one, reported in
    ``result.data["seed"]`` so that the run can be repeated. ``optimizer`` None is
    ``default_optimizer(mini_batches=...)``: adam when ``batch_size`` or ``epochs`` is
    given (Keras-style training), else lbfgs (gd without scipy).

    - Full batch without ``steps`` or ``epochs``: a run to convergence, as ``minimize``
      (every loss is over all rows; capped at ``max_steps``). With them, a training run.
      Either way the point returned is the converged one or else the lowest loss seen.
      lbfgs and gd train only so (a line search needs one function).
    - Mini-batches (sgd, momentum, adam): always a training run, of ``steps`` or
      ``epochs`` (default DEFAULT_STEPS updates). It makes every update (as Keras' ``fit``)
      and ends at the last point, whose loss and gradient over all rows are computed at
      the end (the history's last entry, ``result.loss``; ``converged`` when that
      gradient's norm is at most ``tol``). The batch losses in the history are not
      comparable with each other, so no best point is chosen among them. A non-finite
      or diverging batch loss stops the run at the point before it.
    """
    optimizer = optimizer or default_optimizer(mini_batches=batch_size is not None
                                               or epochs is not None)
    check_rows_options(optimizer, steps=steps, epochs=epochs, batch_size=batch_size,
                       max_steps=max_steps)
    check_settings(optimizer, lr=lr, tol=tol, momentum=momentum, steps=steps,
                   max_steps=max_steps)
    n = rows.n
    notes: list = []
    if batch_size is not None and batch_size > n:
        notes.append(f"--batch-size {batch_size} is more than the {n} rows: each batch is "
                     f"every row (batch size {n})")
    size = n if batch_size is None else min(batch_size, n)
    per_epoch = -(-n // size)
    full = size == n
    limit, training = run_length(n, batch_size, steps, epochs, max_steps)
    shuffled = shuffle and not full
    if seed is None and shuffled:
        seed = int(np.random.SeedSequence().entropy % (1 << 63))
    names = {id(p): name for name, p in rows.parameters.items()}
    start = time.perf_counter()
    with _Interrupt() as interrupt:
        if full:
            result = _run(optimizer, rows.value_and_gradients, lr, momentum, limit, tol,
                          names, on_step, interrupt, start)
        else:
            result = _mini_batches(rows, _rule(optimizer, lr, momentum), limit, size,
                                   batch_order(n, size, seed, shuffle), tol, names,
                                   on_step, interrupt, start)
    _labelled(result, optimizer, training, tol, limit)
    if epochs is not None and result.reason == "max steps":
        result.reason = "max epochs"
    last = max(1, -(-result.steps // per_epoch))
    final = len(result.history) - 1

    def rows_of(index: int) -> int:
        if full or index >= final:   # (the final evaluation is over every row)
            return n
        return size if index % per_epoch < per_epoch - 1 else n - size * (per_epoch - 1)

    def epoch_of(index: int) -> int:
        return last if index >= final else min(index // per_epoch + 1, last)
    result.data = {"rows": n, "batch_size": size, "shuffle": shuffled,
                   "seed": seed if shuffled else None, "notes": notes,
                   "epochs": None if optimizer in LINE_SEARCH else result.steps // per_epoch,
                   "epoch_of": epoch_of,
                   "rows_of": rows_of}
    return result


def _mini_batches(rows: ProgramRows, rule, steps: int, size: int, order, tol: float,
                  names: dict, on_step, interrupt, start) -> Result:
    """``steps`` updates on the batches of ``order``; then the loss over every row."""
    params = list(rows.parameters.values())
    history: list = []
    reason, updates = "max steps", 0
    good = None     # the point of the last step whose loss was finite and not diverging
    best_loss = None
    for step in range(steps):
        _, batch = next(order)
        loss, grads = rows.value_and_gradients(batch)
        norm = _grad_norm(grads)
        _seen(history, on_step, step, loss, norm)
        if not math.isfinite(loss) or not math.isfinite(norm):
            reason = "non-finite loss"
            break
        best_loss = loss if best_loss is None else min(best_loss, loss)
        if loss > DIVERGENCE_FACTOR * (abs(best_loss) + 1.0):
            reason = "diverged"
            break
        good = [p.numpy().copy() for p in params]
        if interrupt.hit:
            reason = "interrupted"
            break
        rule.apply_gradients(grads)
        updates += 1
    failed = reason in ("non-finite loss", "diverged")
    if failed and good is not None:  # the point before the last update
        for p, value in zip(params, good):
            p.assign(value)
        updates -= 1
    loss, grads = rows.value_and_gradients(None)
    norm = _grad_norm(grads)
    if not failed and not (math.isfinite(loss) and math.isfinite(norm)) and good is not None:
        # The last update made the loss over every row non-finite: back to the point before.
        reason, failed = "non-finite loss", True
        for p, value in zip(params, good):
            p.assign(value)
        updates = max(0, updates - 1)
        loss, grads = rows.value_and_gradients(None)
        norm = _grad_norm(grads)
    _seen(history, on_step, updates, loss, norm)
    converged = not failed and reason != "interrupted" and norm <= tol
    if converged:
        reason = "converged"
    values = {names.get(id(p), p.name): p.numpy().copy() for p in params}
    return Result(loss, values, updates, converged, reason, history,
                  time.perf_counter() - start, grad_norm=norm)


# ---------------------------------------------------------------------------------------
# A program's minimisation, as ``gradcli minimize`` runs it
# ---------------------------------------------------------------------------------------
def check_trainable(model) -> None:
    """Refuse a model that reads no trainable variable: known from the tree, before any
    file is read (as the implicit modes do)."""
    if not any(model.trainable[name] for name in model.read_variables):
        raise _no_variables()


def minimize_program(model, optimizer: str, *, lr=None, steps=None, max_steps=None,
                     tol: float = 1e-8, momentum: float = 0.9, on_step=None) -> Result:
    """Minimise a built model's target over its trainable variables (``minimize``), the
    result's values named as the program names them."""
    names = {id(v): n for n, v in model.variables.items()}
    return minimize(model.function, model.arg_values, optimizer=optimizer, lr=lr,
                    steps=steps, max_steps=max_steps, tol=tol, momentum=momentum,
                    names=names, on_step=on_step)


def train_on_rows(model, at: str, csv, optimizer: str, *, lr=None, steps=None, epochs=None,
                  batch_size=None, max_steps=None, shuffle: bool = True, seed=None,
                  tol: float = 1e-8, momentum: float = 0.9, progress=None):
    """``minimize --at``: read the rows of ``at`` (``csv``: how to read a CSV source),
    train on them (``minimize_rows``). ``progress(total, per_epoch, capped)`` gives
    ``(on_step, done)`` for a progress display. Gives ``(result, fell_back)``, the latter
    True where the rows of a batch were computed one at a time."""
    from ..io.points import Slot, read_all
    trainable = [name for name in model.read_variables if model.trainable[name]]
    slots = {}
    for decl in model.declarations:
        if decl.kind == "var" and not decl.has_value:
            raise InputError(f"--var {decl.name} has no value: minimize trains {decl.name} "
                             f"from a starting value (--var {decl.name}=0); the data rows "
                             "set arguments and frozen variables only")
        slots[decl.name] = Slot(decl.kind, decl.value if decl.has_value else None)

    def refuse_trainable(source):
        for name in source.names:
            if name in model.trainable and model.trainable[name]:
                raise InputError(f"{source.shown}: the source sets {name}, a trainable "
                                 f"variable that minimize trains: the data rows set "
                                 f"arguments and frozen variables only (declare it "
                                 f"--frozen {name} to read it from each row, or drop the "
                                 f"column)")

    _, data = read_all(at, slots, MAX_DATA_NUMBERS, check=refuse_trainable, csv=csv)
    n = len(next(iter(data.values())))
    # --epochs times the batches per epoch is held to --steps' limit, before any work
    total, training = run_length(n, batch_size, steps, epochs, max_steps)
    rows = ProgramRows(model, data, trainable)
    size = rows.n if batch_size is None else min(batch_size, rows.n)
    per_epoch = -(-rows.n // size)
    on_step, done = progress(total, per_epoch if optimizer not in LINE_SEARCH else None,
                             not training) if progress else (None, lambda: None)
    try:
        result = minimize_rows(rows, optimizer=optimizer, lr=lr, steps=steps,
                               epochs=epochs, batch_size=batch_size,
                               max_steps=max_steps, shuffle=shuffle,
                               seed=seed, tol=tol, momentum=momentum,
                               on_step=on_step)
    finally:
        done()
    return result, rows.fell_back
