"""Tensors behave like numpy arrays: methods (``x.sum()``, ``x.reshape(2, 3)``, ...), the
``%`` and ``//`` operators, and numpy's own functions applied to tensors.

numpy hands a tensor given to one of its functions to the tensor's ``__array_ufunc__``
(``np.sin(t)``, ``ndarray * t``) or ``__array_function__`` (``np.sum(t)``,
``np.concatenate([t, t])``). Both dispatch to the function table when it has an entry of
the same name (numpy's keyword names are the table's), so the gradient is kept. A numpy
function the table does not have computes on the plain values, as numpy always did, unless
a tape is recording one of its tensor arguments and the result is floating point: then it
raises ``TypeError`` naming the table function to use, since a result no tape can
differentiate would be a silent wrong gradient.

>>> import numpy as np, gradcli as gc
>>> x = gc.constant([1.0, 2.0])
>>> float(np.sum(np.sin(x) * 2)), x.reshape(2, 1).shape, float(x.sum())
(3.5015368232671564, (2, 1), 3.0)
"""
from __future__ import annotations

import numpy as np

from . import state
from .ops import FUNCTIONS, INTERNAL, apply
from .table import REGISTRY
from .tensor import Tensor, Variable, _make


def _traced(values) -> bool:
    """Whether a tape is recording and one of ``values`` (nested in lists) is a tensor it
    may trace (recorded or a variable: only the tape knows, so any tensor with a node)."""
    if not state.recording:
        return False
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            if v._node is not None:
                return True
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return False


def _plain(value):
    """Tensors (also nested in lists and tuples) as their numpy values."""
    if isinstance(value, Tensor):
        return value._value
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _fallback(what: str, name: str, call, args, kwargs):
    """A numpy function the table lacks: numpy on the values, unless that would cut a
    gradient a tape is recording."""
    result = call(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
    if _traced(list(args) + list(kwargs.values())) and _is_float(result):
        hint = f"gradcli.{name}" if name in FUNCTIONS else "a gradcli function"
        raise TypeError(f"numpy's {what} {name!r} on a tensor a tape is recording would lose "
                        f"its gradient, and gradcli has no {name!r}: use {hint} (functions "
                        f"of the table keep gradients), or x.numpy() for a plain value")
    return result


def _is_float(result) -> bool:
    if isinstance(result, (tuple, list)):
        return any(_is_float(r) for r in result)
    return np.asarray(result).dtype.kind in "fc"


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """``np.sin(t)``, ``ndarray * t``: the table entry of the ufunc's name."""
    fn = FUNCTIONS.get(ufunc.__name__)
    if method == "__call__" and fn is not None and not kwargs:
        return fn(*inputs)
    if method == "__call__" and fn is not None:
        raise TypeError(f"numpy's {ufunc.__name__} on tensors takes no {', '.join(kwargs)} "
                        f"(gradcli.{ufunc.__name__} computes a new tensor)")
    if method != "__call__":  # np.add.reduce(t), np.multiply.outer(t, t), ...
        if _traced(inputs):
            raise TypeError(f"numpy's {ufunc.__name__}.{method} would lose the gradient: use "
                            f"gradcli functions (np.add.reduce is gradcli.sum)")
        return getattr(ufunc, method)(*_plain(inputs), **kwargs)
    return _fallback("ufunc", ufunc.__name__, ufunc, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    """``np.sum(t, axis=0)``, ``np.concatenate([a, t])``: the table entry of the name."""
    name = func.__name__
    op = REGISTRY.get(name)
    if op is not None and op.kind != "constructor":
        try:
            return FUNCTIONS[name](*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"np.{name} on tensors is gradcli.{name}: {err}") from None
    return _fallback("function", name, func, args, kwargs)


# --- methods ---------------------------------------------------------------------------
def _reduction(name):
    fn = FUNCTIONS[name]

    def method(self, axis=None, keepdims=False):
        return fn(self, axis=axis, keepdims=keepdims)
    method.__name__ = name
    method.__doc__ = f"gradcli.{name}(self, axis, keepdims)"
    return method


def _shape_args(args):
    """``reshape(2, 3)`` or ``reshape((2, 3))``, as numpy takes both."""
    return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def reshape(self, *shape):
    """The same elements in a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    return FUNCTIONS["reshape"](self, tuple(_shape_args(shape)))


def transpose(self, *axes):
    """Axes reversed, or permuted: ``x.transpose(1, 0, 2)`` or ``x.transpose((1, 0, 2))``."""
    axes = _shape_args(axes)
    return FUNCTIONS["transpose"](self, tuple(axes) if axes else None)


def squeeze(self, axis=None):
    """Axes of length 1 removed (``gradcli.squeeze``)."""
    return FUNCTIONS["squeeze"](self, axis)


def flatten(self):
    """The elements as a 1-D tensor (``gradcli.ravel``)."""
    return FUNCTIONS["ravel"](self)


def astype(self, dtype):
    """The value in another dtype. float32 <-> float64 is differentiable (the gradient is
    cast back); an integer or boolean dtype gives a tensor with no gradient."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"tensors compute in float32 or float64, not {dtype}")
        return apply(INTERNAL["cast"], (self,), {"dtype": dtype})
    return _make(np.asarray(self._value).astype(dtype)[()])


def _index(self) -> int:
    """An integer tensor of one element used as a Python index (``lst[gc.argmax(x)]``)."""
    value = np.asarray(self._value)
    if value.dtype.kind not in "iu" or value.size != 1:
        raise TypeError("only an integer tensor of one element can be used as an index")
    return int(value.reshape(()))


def install() -> None:
    """Put the methods and the numpy protocols on ``Tensor`` (and so on ``Variable``)."""
    reg = REGISTRY
    for name in ("sum", "mean", "max", "min", "prod"):
        setattr(Tensor, name, _reduction(name))

    def var(self, axis=None, keepdims=False, ddof=0):
        return FUNCTIONS["var"](self, axis=axis, keepdims=keepdims, ddof=ddof)

    def std(self, axis=None, keepdims=False, ddof=0):
        return FUNCTIONS["std"](self, axis=axis, keepdims=keepdims, ddof=ddof)
    Tensor.var, Tensor.std = var, std
    Tensor.reshape, Tensor.transpose, Tensor.squeeze = reshape, transpose, squeeze
    Tensor.flatten = Tensor.ravel = flatten
    Tensor.astype = astype
    Tensor.__index__ = _index
    # (entries of more_ops.py, read at the call: loaded on first use, issue 14)
    Tensor.__mod__ = lambda self, other: apply(reg["mod"], (self, other))
    Tensor.__rmod__ = lambda self, other: apply(reg["mod"], (other, self))
    Tensor.__floordiv__ = lambda self, other: apply(reg["floor_divide"], (self, other))
    Tensor.__rfloordiv__ = lambda self, other: apply(reg["floor_divide"], (other, self))
    Tensor.__array_ufunc__ = _array_ufunc
    Tensor.__array_function__ = _array_function
    assert Variable.__array_ufunc__ is _array_ufunc
