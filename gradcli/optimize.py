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

Arguments and frozen variables stay fixed: only trainable variables the target reads move.
A variable the target does not reach gets a zero gradient (it does not move).

>>> from gradcli.engine import Variable
>>> w = Variable(3.0, name="w")
>>> result = minimize(lambda: (w - 1.0) ** 2, optimizer="sgd", lr=0.25, steps=200)
>>> result.reason, round(float(w.numpy()), 6)
('converged', 1.0)
"""
from __future__ import annotations

import math
import signal
import time

import numpy as np

from . import engine as gc
from .engine.api import NO_VARIABLES
from .errors import GradcliError, InputError, ModeError

__all__ = ["OPTIMIZERS", "SGD", "Adam", "Result", "minimize", "DEFAULT_LR"]

OPTIMIZERS = ("sgd", "momentum", "adam", "lbfgs")
#: Keras' default learning rates (lbfgs has none: its line search picks the step).
DEFAULT_LR = {"sgd": 0.01, "momentum": 0.01, "adam": 0.001, "lbfgs": None}
#: A loss that grows beyond this factor times (|best loss| + 1) is taken as divergence.
DIVERGENCE_FACTOR = 1e8


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
    """What a run gave: ``loss`` and ``values`` (name -> array) at the best point seen,
    ``steps`` (updates made), ``converged``, ``reason`` ("converged", "max steps",
    "interrupted", "non-finite loss", "diverged", or scipy's message for lbfgs),
    ``history`` (a list of ``(step, loss, grad_norm)``), ``elapsed`` seconds."""
    __slots__ = ("loss", "values", "steps", "converged", "reason", "history", "elapsed")

    def __init__(self, loss, values, steps, converged, reason, history, elapsed):
        self.loss, self.values, self.steps = loss, values, steps
        self.converged, self.reason, self.history = converged, reason, history
        self.elapsed = elapsed

    @property
    def failed(self) -> bool:
        """A run stopped by a non-finite loss or by divergence."""
        return self.reason in ("non-finite loss", "diverged")


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


def _named_variables(pairs, names: dict) -> list:
    return [names.get(id(v), v.name) for _, v in pairs]


def minimize(function, args=(), *, optimizer: str = "adam", lr: float | None = None,
             steps: int = 1000, tol: float = 1e-8, momentum: float = 0.9, names=None,
             on_step=None) -> Result:
    """Minimise the scalar ``function(*args)`` over the trainable variables it reads.

    ``names`` maps ``id(variable)`` to the name shown (default: the variable's name);
    ``on_step(step, loss, grad_norm)`` is called after every evaluation (progress).
    Convergence: the gradient's norm (over all variables) at most ``tol``. The variables
    hold the best point seen when this returns.
    """
    if optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {optimizer!r}; choose one of "
                         f"{', '.join(OPTIMIZERS)}")
    if steps < 0:
        raise InputError("--steps must be at least 0")
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
        if optimizer == "lbfgs":
            return _lbfgs(evaluate, steps, tol, names, on_step, interrupt, start)
        rule = (Adam(lr if lr is not None else DEFAULT_LR["adam"]) if optimizer == "adam"
                else SGD(lr if lr is not None else DEFAULT_LR[optimizer],
                         momentum=momentum if optimizer == "momentum" else 0.0))
        history: list = []
        best = None    # (loss, {id: value})
        reason, step = "max steps", 0
        for step in range(steps + 1):
            loss, grads = evaluate()
            norm = math.sqrt(sum(float(np.sum(g * g)) for g, _ in grads))
            history.append((step, loss, norm))
            if on_step is not None:
                on_step(step, loss, norm)
            if not math.isfinite(loss) or not math.isfinite(norm):
                reason = "non-finite loss"
                break
            if best is None or loss < best[0]:
                best = (loss, [(v, v.numpy().copy()) for _, v in grads])
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
            best = (loss, [(v, v.numpy().copy()) for _, v in grads])
        for var, value in best[1]:
            var.assign(value)
        values = {names.get(id(v), v.name): value for v, value in best[1]}
        return Result(best[0], values, step, reason == "converged", reason, history,
                      time.perf_counter() - start)


def _no_variables() -> GradcliError:
    from .modes import _NO_VARIABLES
    return ModeError(_NO_VARIABLES)


def _lbfgs(evaluate, steps, tol, names, on_step, interrupt, start) -> Result:
    try:
        from scipy.optimize import minimize as scipy_minimize
    except ImportError:
        raise MissingExtra("scipy", "optimize", "--optimizer lbfgs") from None
    loss0, grads0 = evaluate()
    if not grads0:
        raise _no_variables()
    variables = [v for _, v in grads0]
    shapes = [v.shape for v in variables]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(x):
        offset = 0
        for var, shape, size in zip(variables, shapes, sizes):
            var.assign(np.asarray(x[offset:offset + size]).reshape(shape))
            offset += size

    def flat(grads):
        return np.concatenate([np.ravel(g) for g, _ in grads]) if grads else np.zeros(0)

    last = {}

    def fun(x):
        unpack(x)
        loss, grads = evaluate()
        g = flat(grads)
        last["loss"], last["norm"] = loss, float(np.linalg.norm(g))
        if not math.isfinite(loss) or not np.all(np.isfinite(g)):
            # A non-finite trial point of the line search: scipy backs off from inf.
            return math.inf, np.zeros_like(g)
        return loss, g

    x0 = flat([(v.numpy(), v) for v in variables])
    norm0 = float(np.linalg.norm(flat(grads0)))
    history = [(0, loss0, norm0)]
    if on_step is not None:
        on_step(0, loss0, norm0)
    state = {"stopped": None}
    if not math.isfinite(loss0):
        values = {names.get(id(v), v.name): v.numpy().copy() for v in variables}
        return Result(loss0, values, 0, False, "non-finite loss", history,
                      time.perf_counter() - start)

    def callback(intermediate_result):
        step = len(history)
        loss = float(intermediate_result.fun)
        # the gradient at the accepted point was the last one evaluated there
        fun(intermediate_result.x)
        norm = last["norm"]
        history.append((step, loss, norm))
        if on_step is not None:
            on_step(step, loss, norm)
        if interrupt.hit:
            state["stopped"] = "interrupted"
            raise StopIteration
        if loss > DIVERGENCE_FACTOR * (abs(min(h[1] for h in history)) + 1.0):
            state["stopped"] = "diverged"
            raise StopIteration

    # ftol=0: stop on the gradient norm (gtol is the largest gradient component), not on
    # a small relative decrease, which would stop Rosenbrock short of 1e-6.
    res = scipy_minimize(fun, x0, jac=True, method="L-BFGS-B", callback=callback,
                         options={"maxiter": max(steps, 1), "gtol": tol, "ftol": 0.0,
                                  "maxfun": max(steps, 1) * 20})
    unpack(res.x)
    loss, grads = evaluate()
    values = {names.get(id(v), v.name): v.numpy().copy() for v in variables}
    norm = float(np.linalg.norm(flat(grads)))
    reason = state["stopped"]
    if reason is None:
        if not math.isfinite(loss):
            reason = "non-finite loss"
        elif norm <= tol or res.success:
            reason = "converged"
        elif res.nit >= steps:
            reason = "max steps"
        else:
            reason = str(res.message)
    return Result(loss, values, int(res.nit), reason == "converged", reason, history,
                  time.perf_counter() - start)


class MissingExtra(GradcliError):
    """An optional dependency is not installed: the message names the install command."""

    def __init__(self, module: str, extra: str, what: str):
        super().__init__(f"{what} needs {module}, which is not installed: "
                         f"python -m pip install 'gradcli[{extra}]'")
