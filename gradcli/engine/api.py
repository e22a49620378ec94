"""The function transformations of ``tf.contrib.eager``, as thin wrappers over one core:
``_record_and_differentiate`` runs ``f`` under a tape and then the backward pass.

>>> from gradcli.engine.tensor import Variable
>>> w = Variable(3.0)
>>> value, pairs = implicit_value_and_gradients(lambda x: w * x)(2.0)
>>> float(value), float(pairs[0][0]), pairs[0][1] is w
(6.0, 2.0, True)
"""
from __future__ import annotations

import gc

import numpy as np

from . import ops
from .table import Op
from .tape import GradientTape
from .tensor import Tensor, Variable, _make, constant

NO_VARIABLES = "No trainable variables were accessed while the function was being computed."


def _record_and_differentiate(f, args, kwargs, *, argnums=None, dy=None):
    """Run ``f(*args, **kwargs)`` under a tape; return ``(value, grads, variables)``.

    With ``argnums`` (gradients_function) the chosen arguments are watched and variables
    read inside ``f`` are constants; without it (implicit_*) the trainable variables read
    while ``f`` ran are the sources, in creation order. (One function, not three: on
    large arrays every call between two numpy operations runs with cold caches.)"""
    args = list(args)
    implicit = argnums is None
    # The recorded graph is acyclic and freed by reference counting; while it grows,
    # Python's cyclic collector would only rescan it again and again (a chain of 10^5
    # operations spent four full collections, 40% of its time, doing so): pause it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with GradientTape(watch_accessed_variables=implicit) as tape:
            if not implicit:
                for i in argnums:
                    # A variable passed as an argument is read: its value is watched.
                    x = args[i]
                    x = args[i] = (constant(x._value) if isinstance(x, Variable)
                                   else x if isinstance(x, Tensor) else constant(x))
                    tape._watch_tensor(x)
            value = f(*args, **kwargs)
            if value is None:
                raise ValueError(f"the function {_name(f)} returned None; it must return "
                                 "the tensor to differentiate")
            if implicit:
                if isinstance(value, Variable) and value._trainable:
                    tape.watch(value)  # returning a variable reads it
                variables = [v for v in tape.watched_variables() if v._trainable]
                if not variables:
                    raise ValueError(NO_VARIABLES)
                sources = variables
            else:
                variables = None
                sources = [args[i] for i in argnums]
            value = value if isinstance(value, Tensor) else constant(value)
            return value, tape.gradient(value, sources, output_gradients=dy), variables
    finally:
        if collecting:
            gc.enable()


def _wraps(f):
    """A lighter functools.wraps: these wrappers are often made once per call."""
    def decorate(wrapper):
        wrapper.__name__ = getattr(f, "__name__", wrapper.__name__)
        wrapper.__doc__ = getattr(f, "__doc__", None)
        wrapper.__wrapped__ = f
        return wrapper
    return decorate


def _name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _argnums(f, params) -> list[int] | None:
    """Indices of the differentiated parameters, from names or indices (None: all)."""
    if params is None:
        return None
    params = list(params)
    if all(isinstance(p, str) for p in params):
        import inspect  # only here: a noticeable part of the command line's start-up
        try:
            names = list(inspect.signature(f).parameters)
        except (TypeError, ValueError):
            raise ValueError(f"cannot read the parameter names of {_name(f)}") from None
        out = []
        for p in params:
            if p not in names:
                raise ValueError(f"{_name(f)} has no parameter named {p!r} "
                                 f"(its parameters: {', '.join(names)})")
            out.append(names.index(p))
        return out
    if all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in params):
        return [int(p) for p in params]
    raise ValueError("params must be all parameter names or all indices, not a mix")


def _resolve(indices, args) -> list[int]:
    n = len(args)
    if indices is None:
        return list(range(n))
    for i in indices:
        if not -n <= i < n:
            raise ValueError(f"params index {i} is out of range for {n} arguments")
    return [i % n for i in indices]


def _check_kwargs(kwargs) -> None:
    if kwargs:
        raise ValueError(f"unexpected keyword arguments {sorted(kwargs)}: the gradient "
                         "function takes positional arguments and dy=")


def gradients_function(f, params=None):
    """``g(*args, dy=None)`` giving one gradient per differentiated argument of ``f``.

    >>> g = gradients_function(lambda x, y: x * y)
    >>> [float(t) for t in g(3.0, 4.0)]
    [4.0, 3.0]
    """
    indices = _argnums(f, params)

    @_wraps(f)
    def grad_fn(*args, dy=None, **kwargs):
        _check_kwargs(kwargs)
        _, grads, _ = _record_and_differentiate(f, args, {}, argnums=_resolve(indices, args),
                                                dy=dy)
        return grads
    return grad_fn


def value_and_gradients_function(f, params=None):
    """Like ``gradients_function``, returning ``(value, gradients)``."""
    indices = _argnums(f, params)

    @_wraps(f)
    def grad_fn(*args, dy=None, **kwargs):
        _check_kwargs(kwargs)
        value, grads, _ = _record_and_differentiate(f, args, {},
                                                    argnums=_resolve(indices, args), dy=dy)
        return value, grads
    return grad_fn


def implicit_gradients(f):
    """``g(*args, **kwargs)`` giving ``[(gradient, variable), ...]`` for every trainable
    variable read while ``f`` ran, in creation order (None for one not reaching the output).
    """
    @_wraps(f)
    def grad_fn(*args, **kwargs):
        _, grads, variables = _record_and_differentiate(f, args, kwargs)
        return list(zip(grads, variables))
    return grad_fn


def implicit_value_and_gradients(f):
    """``g(*args, **kwargs)`` giving ``(value, [(gradient, variable), ...])``."""
    @_wraps(f)
    def grad_fn(*args, **kwargs):
        value, grads, variables = _record_and_differentiate(f, args, kwargs)
        return value, list(zip(grads, variables))
    return grad_fn


def stop_gradient(x) -> Tensor:
    """``x``, with no gradient flowing back through it."""
    return ops.apply(ops.STOP_GRADIENT, (x,))


def custom_gradient(f):
    """Decorator: ``f(*xs)`` returns ``(y, grad_fn)`` and ``grad_fn(dy)`` returns the
    gradient for each input (one tensor, or a list with one per input).

    >>> @custom_gradient
    ... def clipped_identity(x):
    ...     return x, lambda dy: clip(dy, -1.0, 1.0)
    """
    @_wraps(f)
    def wrapper(*xs):
        from .tape import _recording  # the same list as state.recording
        saved = list(_recording)
        del _recording[:]  # f's own operations are not recorded: grad_fn replaces them
        try:
            y, grad_fn = f(*xs)
        finally:
            _recording[:] = saved

        def rule_for(i):
            def vjp(m, g, ans, *inputs):
                differentiable = m is ops.ENGINE
                dxs = grad_fn(g if differentiable else _make(g))
                dx = dxs[i] if isinstance(dxs, (list, tuple)) else dxs
                if dx is None:
                    return m.zeros_like(inputs[i])
                if differentiable:
                    return dx if isinstance(dx, Tensor) else constant(dx)
                return dx._value if isinstance(dx, Tensor) else np.asarray(dx)
            return vjp

        y_value = y._value if isinstance(y, Tensor) else np.asarray(y, dtype=float)
        op = Op(name=f"custom_gradient({_name(f)})", forward=lambda *_: y_value,
                vjps=tuple(rule_for(i) for i in range(len(xs))),
                inputs=tuple(f"x{i}" for i in range(len(xs))),
                doc="user-defined gradient", kind="custom")
        return ops.apply(op, xs)
    return wrapper
