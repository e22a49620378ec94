"""The engine: values, the function table, tapes and the gradient APIs. It knows nothing
of text, sympy or terminals."""
from __future__ import annotations

from . import methods, ops, table
from .api import (custom_gradient, gradients_function, hessian_vector_product,
                  hessians_function, implicit_gradients, implicit_value_and_gradients, jvp,
                  stop_gradient, value_and_gradients_function)
from .ops import CONSTANTS, FUNCTIONS, apply
from .tape import GradientTape
from .tensor import Tensor, Variable, as_value, constant


def _install_operators() -> None:
    """Python operators on tensors, each one table entry."""
    reg = ops.REGISTRY

    # frames=1: the lambda lies between the user's expression and apply (see
    # fast.reusable_buffer).
    empty = ops.EMPTY

    def binary(op):
        return lambda self, other: apply(op, (self, other), empty, 1)

    def reflected(op):
        return lambda self, other: apply(op, (other, self))

    for name, entry in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                        ("truediv", "divide"), ("pow", "power"), ("matmul", "matmul")):
        setattr(Tensor, f"__{name}__", binary(reg[entry]))
        setattr(Tensor, f"__r{name}__", reflected(reg[entry]))
    for name, entry in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                        ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")):
        setattr(Tensor, f"__{name}__", binary(reg[entry]))
    negative, absolute, getitem = reg["negative"], reg["abs"], ops.INTERNAL["getitem"]
    Tensor.__neg__ = lambda self: apply(negative, (self,), empty, 1)
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = lambda self: apply(absolute, (self,))
    Tensor.__getitem__ = lambda self, index: apply(getitem, (self,), {"index": _index(index)})
    Tensor.T = property(lambda self: FUNCTIONS["transpose"](self))


def _index(index):
    """Indices as plain Python/numpy values (tensors used as indices are read)."""
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    if isinstance(index, Tensor):
        value = index.numpy()
        return value if value.dtype == bool else value.astype(int)
    return index


_install_operators()


def _install_multi_output() -> None:
    """Entries returning several tensors (``split``) run as one recorded slice per piece:
    their public function replaces the generic one (see ``more_ops.MULTI_OUTPUT``)."""
    for name, fn in ops.more_ops.MULTI_OUTPUT.items():
        fn.__doc__ = FUNCTIONS[name].__doc__
        FUNCTIONS[name] = fn
        setattr(ops.ENGINE, name, fn)
        setattr(ops, name, fn)


# after more_ops.py is loaded (on demand: table.LOADERS), or now if it already is
if table.LOADERS:
    table.LOADERS.append(_install_multi_output)
else:
    _install_multi_output()
methods.install()  # array methods, % and //, numpy's functions on tensors


def __getattr__(name: str):
    """Forward mode (forward.py) is imported when first used: ``ForwardAccumulator`` and
    ``jvp`` are the way in, and a command-line start needs neither (issue 14)."""
    if name == "ForwardAccumulator":
        from .forward import ForwardAccumulator
        return ForwardAccumulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Tensor", "Variable", "constant", "as_value", "GradientTape", "gradients_function",
           "value_and_gradients_function", "hessians_function", "implicit_gradients",
           "implicit_value_and_gradients", "custom_gradient", "stop_gradient", "CONSTANTS",
           "FUNCTIONS", "apply", "ops", "ForwardAccumulator", "jvp",
           "hessian_vector_product"]
