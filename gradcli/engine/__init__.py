"""The engine: values, the function table, tapes and the gradient APIs. It knows nothing
of text, sympy or terminals.

Three parts, importing one way (tests/engine/test_engine_layers.py holds it, counting the
imports inside functions too):

- ``core/``: what a newcomer reads. ``tensor`` (values), ``table`` (what an entry is, the
  registry the rules fill in), ``recording`` (``apply``: run an entry, record it on the
  tapes; the entries published as functions), ``tape`` (``GradientTape`` and the
  backward pass), ``forward`` (forward mode), ``batching`` (``vectorized_map``), ``api``
  (the gradient APIs), ``derive`` (forward rules derived from an entry's kind), ``nest``
  (nested structures), ``methods``/``numpy_api`` (tensors as numpy arrays). The core
  imports no rule module: it finds entries by name in the registry, as JAX's
  ``primitive_jvps`` dicts are filled by the modules that define primitives. The two
  places ``apply`` hands over to a higher module (a batched input, an active forward
  accumulator) go through hooks that module sets in ``core.state`` when imported.
- ``rules/``: the function table, one module per kind of operation; each entry states its
  VJP, JVP and batching rule where it is defined.
- ``fast.py``: the speed tricks beside the algorithm (in-place twins, buffer reuse,
  reference counts), each called at one place, all off with ``GRADCLI_FAST=0``. Its
  twins and reusable results are tables by entry name, which ``core.table.register``
  gives the entry of that name: no rule module imports fast.py.

``gradcli.engine.ops`` (a public name since the table lived in ops.py) is
``core.recording``: ``apply``, ``FUNCTIONS``, ``NP``, ``ENGINE``, ``CONSTANTS``.
"""
from __future__ import annotations

from . import rules  # noqa: F401  (fills the table)
from .core import methods, table
from .core import recording as ops
from .core.api import (
    custom_gradient,
    gradients_function,
    hessian_vector_product,
    hessians_function,
    implicit_gradients,
    implicit_value_and_gradients,
    jvp,
    stop_gradient,
    value_and_gradients_function,
)
from .core.recording import CONSTANTS, FUNCTIONS, apply
from .core.tape import GradientTape
from .core.tensor import Tensor, Variable, as_value, constant


def _install_operators() -> None:
    """Python operators on tensors, each one table entry."""
    reg = table.REGISTRY

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
    negative, absolute, getitem = reg["negative"], reg["abs"], table.INTERNAL["getitem"]
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


methods.install()  # array methods, % and //, numpy's functions on tensors


def __getattr__(name: str):
    """Forward mode (forward.py) is imported when first used: ``ForwardAccumulator`` and
    ``jvp`` are the way in, and a command-line start needs neither (issue 14)."""
    if name == "ForwardAccumulator":
        from .core.forward import ForwardAccumulator
        return ForwardAccumulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Tensor", "Variable", "constant", "as_value", "GradientTape", "gradients_function",
           "value_and_gradients_function", "hessians_function", "implicit_gradients",
           "implicit_value_and_gradients", "custom_gradient", "stop_gradient", "CONSTANTS",
           "FUNCTIONS", "apply", "ops", "ForwardAccumulator", "jvp",
           "hessian_vector_product"]
