"""``check_grads`` for pytest users: reverse-mode gradients against central differences.

>>> import gradcli as gc
>>> check_grads(lambda x: gc.sin(x) * x, [0.3])            # passes silently
>>> check_grads(lambda x, y: x * gc.exp(y), [1.0, 0.5], order=2)
"""
from __future__ import annotations

import numpy as np

from .engine import FUNCTIONS, Tensor, constant, gradients_function

EPS = np.finfo(np.float64).eps


def _value(t) -> np.ndarray:
    return np.asarray(t.numpy() if isinstance(t, Tensor) else t, dtype=np.float64)


def _projected(f, out_dir):
    """x -> sum(out_dir * f(x)): a scalar whose gradient is f's VJP with out_dir."""
    def scalar(*xs):
        return _sum(f(*xs) * constant(out_dir))
    return scalar


def _sum(t):
    return FUNCTIONS["sum"](t)


def check_grads(f, args, order: int = 1, rtol: float = 1e-5, atol: float = 1e-6,
                seed: int = 0) -> None:
    """Compare reverse-mode gradients of ``f`` at ``args`` with central finite differences
    along a random direction; for ``order=2`` also the gradients of the gradients (through
    nested tapes). Raises ``AssertionError`` with a readable report on disagreement."""
    if order not in (1, 2):
        raise ValueError("check_grads supports order 1 and 2")
    rng = np.random.default_rng(seed)
    xs = [_value(a) for a in args]
    y = f(*[constant(x) for x in xs])
    if y is None:
        raise AssertionError("check_grads: f returned None")
    out_dir = rng.standard_normal(np.shape(_value(y)))
    scalar = _projected(f, out_dir)
    _check_first_order(scalar, xs, rng, rtol, atol, label="order 1")
    if order >= 2:
        grad = gradients_function(scalar)
        dirs = [rng.standard_normal(np.shape(x)) for x in xs]

        def directional_grad(*inner):
            gs = grad(*inner)
            total = None
            for g, d in zip(gs, dirs):
                if g is None:
                    continue
                term = _sum(g * constant(d))
                total = term if total is None else total + term
            return total if total is not None else constant(0.0)
        _check_first_order(directional_grad, xs, rng, rtol, atol, label="order 2")


def _check_first_order(scalar, xs, rng, rtol, atol, label) -> None:
    grads = gradients_function(scalar)(*[constant(x) for x in xs])
    direction = [rng.standard_normal(np.shape(x)) for x in xs]
    reverse = sum(float(np.sum(_value(g) * d)) for g, d in zip(grads, direction)
                  if g is not None)
    scale = max([1.0] + [float(np.max(np.abs(x))) if np.size(x) else 1.0 for x in xs])
    h = EPS ** (1.0 / 3.0) * scale

    def at(t):
        return float(_value(scalar(*[constant(x + t * d) for x, d in zip(xs, direction)])))
    numeric = float((at(h) - at(-h)) / (2.0 * h))
    error = abs(reverse - numeric)
    if not error <= atol + rtol * abs(numeric):
        shapes = ", ".join(str(np.shape(x)) for x in xs)
        raise AssertionError(
            f"check_grads ({label}): gradients disagree with finite differences\n"
            f"  argument shapes:             {shapes}\n"
            f"  reverse-mode (directional):  {reverse!r}\n"
            f"  finite differences (h={h:.2e}): {numeric!r}\n"
            f"  abs error {error:.3e}, rel error {error / max(abs(numeric), 1e-300):.3e} "
            f"(rtol={rtol}, atol={atol})")
