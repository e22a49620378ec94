"""Tensors behave like numpy arrays: methods (``x.sum()``, ``x.reshape(2, 3)``, ...), the
``%`` and ``//`` operators, and numpy's own functions applied to tensors.

numpy hands a tensor given to one of its functions to the tensor's ``__array_ufunc__``
(``np.sin(t)``, ``ndarray * t``) or ``__array_function__`` (``np.sum(t)``,
``np.linalg.norm(t, 1)``). A ufunc dispatches to the table entry of its name when it is
numpy's own ufunc of that name; a function to its counterpart in ``numpy_api``, found by
the numpy function itself and bound by numpy's signature, so that numpy's meaning is
kept (``np.linalg.norm(t, 1)`` is the matrix 1-norm, not ``gc.norm(t, axis=1)``) with the
gradient. A numpy function without a counterpart (or given arguments gradcli does not
take) computes on the plain values, as numpy always did, unless a tape is recording one
of its tensor arguments and the result is floating point: then it raises ``TypeError``,
since a result no tape can differentiate would be a silent wrong gradient.

>>> import numpy as np, gradcli as gc
>>> x = gc.constant([1.0, 2.0])
>>> float(np.sum(np.sin(x) * 2)), x.reshape(2, 1).shape, float(x.sum())
(3.5015368232671564, (2, 1), 3.0)
"""
from __future__ import annotations

import numpy as np

from . import state
from .recording import FUNCTIONS, apply
from .table import INTERNAL, REGISTRY
from .tensor import Batched, Tensor, Variable, make_tensor


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


def _fallback(func, reason: str, args, kwargs):
    """numpy's own function on the values, unless that would cut a gradient a tape is
    recording: ``reason`` says why gradcli has no counterpart."""
    result = func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
    if _traced(list(args) + list(kwargs.values())) and _is_float(result):
        module = (getattr(func, "__module__", None) or "numpy").replace("numpy", "np", 1)
        name = f"{module}.{func.__name__}"
        raise TypeError(f"{name} on a tensor a tape is recording would lose its gradient: "
                        f"{reason.replace('{name}', name)}; use gradcli's functions (they "
                        f"keep gradients), or x.numpy() for a plain value")
    return result


def _is_float(result) -> bool:
    if isinstance(result, (tuple, list)):
        return any(_is_float(r) for r in result)
    return np.asarray(result).dtype.kind in "fc"


def _ufunc_function(ufunc):
    """The table function of a ufunc: only numpy's own ufunc of an entry's name (np.abs is
    the entry absolute); another library's ufunc is not guessed from its name."""
    fn = FUNCTIONS.get(ufunc.__name__)
    return fn if fn is not None and getattr(np, ufunc.__name__, None) is ufunc else None


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """``np.sin(t)``, ``ndarray * t``: the table entry of the ufunc."""
    fn = _ufunc_function(ufunc) if method == "__call__" else None
    if fn is not None and not kwargs:
        return fn(*inputs)
    if fn is not None:
        raise TypeError(f"numpy's {ufunc.__name__} on tensors takes no {', '.join(kwargs)} "
                        f"(gradcli.{ufunc.__name__} computes a new tensor)")
    if method != "__call__":  # np.add.reduce(t), np.multiply.outer(t, t), ...
        if _traced(inputs):
            raise TypeError(f"numpy's {ufunc.__name__}.{method} would lose the gradient: use "
                            f"gradcli functions (np.add.reduce is gradcli.sum)")
        return getattr(ufunc, method)(*_plain(inputs), **kwargs)
    return _fallback(ufunc, "gradcli has no function with {name}'s meaning", inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    """``np.sum(t, axis=0)``, ``np.linalg.norm(t, 1)``: gradcli's counterpart of that
    numpy function, with numpy's meaning (``numpy_api``), or numpy on the values."""
    api = _numpy_api or _load_numpy_api()
    result, reason = api.compute(func, args, kwargs)
    if result is api.UNSUPPORTED:
        return _fallback(func, reason, args, kwargs)
    return result


_numpy_api = None


def _load_numpy_api():
    """numpy_api, imported on the first numpy function given a tensor (not at start-up)."""
    global _numpy_api
    from . import numpy_api
    _numpy_api = numpy_api
    return numpy_api


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
    if isinstance(self, Batched):  # inside vectorized_map: every example's cast at once
        return Batched(astype(self._tensor, dtype))
    return make_tensor(np.asarray(self._value).astype(dtype)[()])


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
    # (entries of rules/elementwise_extra.py, read at the call: loaded on first use, issue 14)
    Tensor.__mod__ = lambda self, other: apply(reg["mod"], (self, other))
    Tensor.__rmod__ = lambda self, other: apply(reg["mod"], (other, self))
    Tensor.__floordiv__ = lambda self, other: apply(reg["floor_divide"], (self, other))
    Tensor.__rfloordiv__ = lambda self, other: apply(reg["floor_divide"], (other, self))
    Tensor.__array_ufunc__ = _array_ufunc
    Tensor.__array_function__ = _array_function
    assert Variable.__array_ufunc__ is _array_ufunc
