"""The engine's speed tricks, apart from its algorithm, behind one switch.

Each trick is a named step that the plain algorithm calls at one place, and each gives the
same numbers as the plain algorithm (tests/engine/test_fast_paths.py runs a sample of the table
both ways):

- ``upstream``: the backward pass's view of a node's incoming gradient: a broadcast scalar
  (what a ``sum`` sends back) stays a scalar for an elementwise rule, and an unshared
  large gradient is handed to the rule's in-place twin (``TWINS``, below), which writes
  the input's gradient into it (or into a spare buffer the node no longer needs).
- ``add_into``: a gradient sum that nobody else holds is added to in place.
- ``reusable_buffer``: ``apply`` writes a result over its first input's array when that
  input is a temporary of the user's expression (numpy's temporary elision, one level up).
- ``owned``: the gradient handed to the user is copied only when someone else holds it.
- ``speedups``: which of the tricks an entry of the table may take (its twins in
  ``TWINS``, its reusable result in ``REUSE``), asked once, when the entry is registered
  (``core.table.register``). The rule modules know nothing of this module: the tables
  here name the entries.

A fresh 8 MB array costs more than the arithmetic (page faults), which is what these
save. ``GRADCLI_FAST=0`` in the environment (or ``ENABLED = False`` here, as the tests
do) runs the plain algorithm. Those relying on reference counts (all but the scalar
upstream) stay off where ``sys.getrefcount`` is not exact (``state.REFCOUNTS_EXACT``).
The reference counts below name their holders: changing a caller's locals changes them.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .core.state import REFCOUNTS_EXACT
from .core.tensor import Tensor

#: The switch: read at each use, so that a test may turn it off for one call.
ENABLED = os.environ.get("GRADCLI_FAST", "1") != "0"

# Below this many elements a new array is cheap: the tricks are not worth a look-up.
IN_PLACE_SIZE = 4096
REUSE_SIZE = 4096


def exclusive(array, holders: int) -> bool:
    """True when ``array`` owns its memory and only the caller's ``holders`` references
    hold it, so changing it or handing it out cannot be observed elsewhere."""
    return (REFCOUNTS_EXACT and array.__class__ is np.ndarray and array.base is None
            and array.flags.writeable
            and sys.getrefcount(array) <= holders + 2)  # + this call's argument and getrefcount's


class InPlace:
    """Marks a gradient an in-place twin already computed from the upstream gradient:
    the input's gradient, whatever the rule would have said."""
    __slots__ = ("gradient",)

    def __init__(self, gradient):
        self.gradient = gradient


def upstream(node, g, ans, args, trace, spent: bool, kept: bool):
    """``(g, full)``: the upstream gradient as the rules should see it, and the output's
    shape when ``g`` became a scalar standing for a broadcast one (else None).

    ``trace``: the tape's recording, which tells the inputs that get a gradient. With ``spent`` (the
    node is released after this), its output and first input may serve as the twin's
    output when nobody else holds them. ``kept``: g is also a result (a source's
    gradient), so it is never written over."""
    if g.__class__ is not np.ndarray or g.size < IN_PLACE_SIZE:
        return g, None
    op = node.op
    full = None
    if op.elementwise and not any(g.strides):
        # A broadcast scalar (what a sum sends back): elementwise rules compute with the
        # scalar, making one array instead of two; the backward pass's un-broadcasting
        # brings the result to the input's shape.
        full = g.shape
        g = g[(0,) * g.ndim]
    if not op.twins or kept or op.variadic:
        return g, full
    receiving = [i for i, p in enumerate(node.parents)
                 if p is not None and (trace in p.tapes or id(p) in trace.watched)]
    if len(receiving) != 1:
        return g, full
    rule = op.twins[receiving[0]]
    # holders of g: the backward pass's local and this parameter. A twin reads only what
    # its rule reads, which the node kept (see Op.saves).
    if rule is None or (g.__class__ is np.ndarray and not exclusive(g, 2)):
        return g, full
    spare = (None, None)
    if spent:
        first = args[0]
        # holders: node.ans, the backward pass's local, this parameter / the node's list,
        # this local
        spare = (ans if exclusive(ans, 3) else None,
                 first if exclusive(first, 2) else None)
        del first
    out = rule(g, ans, *args, spare=spare)
    return (g, full) if out is None else (InPlace(out), full)


def add_into(prev, gx):
    """``prev + gx``, written into ``prev`` when nobody else holds it.
    (holders of prev: the gradients dict, the caller's local and this parameter)"""
    if exclusive(prev, 3) and prev.dtype == gx.dtype:
        prev += gx
        return prev
    return prev + gx


def owned(g):
    """A gradient the user may keep: ``g`` itself when nobody else holds it (holders: the
    gradients dict, the caller's local and this parameter), else a copy. A gradient may
    be a forward value or a broadcast view (see the rules of ``multiply`` and the
    reductions)."""
    if g.__class__ is not np.ndarray:
        return g
    return g if ENABLED and exclusive(g, 3) else g.copy()


def reusable_buffer(inputs, values, frames: int, recording):
    """The first input's array, when the result may be written over it (else None). It
    holds when the first input is a tensor nobody else holds (a temporary of the user's
    expression), its array is its own and no one else's (no node kept it), no tape will
    keep it (the entry's rules read no input, and no persistent or nested tape records),
    and the result has its shape and dtype. Forward mode reuses alike: the entries' JVP
    rules read no input either (their tangents come from the output and the input
    tangents, which an accumulator holds, so they are never the array written over).
    Large arrays only: there a fresh result costs more than the arithmetic, in page
    faults and in the memory the next operations must stream through the caches.
    ``frames``: how many Python frames lie between the user's expression and ``apply``."""
    if not REFCOUNTS_EXACT or not ENABLED:
        return None
    first = inputs[0]
    if first.__class__ is not Tensor:
        return None
    array = first._value
    if (array.__class__ is not np.ndarray or array.size < REUSE_SIZE
            or array.base is not None or not array.flags.writeable):
        return None
    if recording and (len(recording) > 1 or recording[0].persistent):
        return None
    # Holders of a temporary: the caller's expression, `frames` frames in between, the
    # inputs tuple, this function's local, getrefcount's argument. Of the array: its
    # tensor, the values list, this local, getrefcount's argument.
    if sys.getrefcount(first) > 4 + frames or sys.getrefcount(array) > 4:
        return None
    for v in values[1:]:
        if not fits_into(array, v):
            return None
    return array


def fits_into(target, v) -> bool:
    """Whether ``target`` combined elementwise with ``v`` keeps ``target``'s shape and
    dtype, so the result may be written into ``target``. False when unsure (the caller
    then makes a new array). Deliberately plain Python: it runs right after large numpy
    operations have flushed the caches, where ``np.broadcast_shapes`` costs ~15 µs."""
    cls = v.__class__
    if cls is float or cls is int:  # weak Python scalars take the array's dtype
        return True
    if cls is not np.ndarray and not isinstance(v, np.generic):
        return False
    if v.dtype != target.dtype:
        return False
    shape, tshape = v.shape, target.shape
    if shape == tshape:
        return True
    lead = len(tshape) - len(shape)
    if lead < 0:
        return False
    for i, n in enumerate(shape):
        if n != 1 and n != tshape[lead + i]:
            return False
    return True


# ---------------------------------------------------------------------------------------
# The entries' tricks, by entry name (rules/ holds the entries; these are only faster ways
# to the same numbers, on numpy arrays)
# ---------------------------------------------------------------------------------------
def _scale_in_place(g, factor):
    """g *= factor, when that keeps g's shape and dtype (else None: use the plain rule)."""
    if g.__class__ is not np.ndarray or not fits_into(g, factor):
        return None
    g *= factor
    return g


def _power_in_place(g, ans, x, y, spare=(None, None)):
    if not ((type(y) is float or type(y) is int) and y == 2
            and x.dtype == getattr(g, "dtype", None)):
        return None
    if g.__class__ is np.ndarray:
        g *= x
        g *= 2.0
        return g
    # a scalar g (the gradient of a sum): 2 g x, into x's array when no one needs it
    out = spare[1] if spare[1] is not None else np.empty_like(x)
    return np.multiply(x, 2.0 * g, out=out)


def _tanh_in_place(g, ans, x, spare=(None, None)):
    """g (1 - ans^2), computed into ans's own array when no one needs it any more (else
    into one new array), then into g when g is an array."""
    t = spare[0] if spare[0] is not None else np.empty_like(ans)
    np.multiply(ans, ans, out=t)  # elementwise: t may be ans itself
    np.subtract(1.0, t, out=t)
    if g.__class__ is np.ndarray:
        g *= t
        return g
    t *= g
    return t


def _sigmoid_in_place(g, ans, x, spare=(None, None)):
    """g s (1 - s), with 1 - s computed as the rule computes it (rules/elementwise.py's
    _sigmoid_complement on numpy): accurate on both sides, and the same bits."""
    if g.__class__ is not np.ndarray:
        return None
    g *= ans
    g *= np.where(x > 0, np.exp(-np.abs(x)) * ans, 1.0 - ans)
    return g


def _cos_in_place(g, ans, x, spare=(None, None)):
    if g.__class__ is not np.ndarray:
        return None
    t = np.sin(x)
    np.negative(t, out=t)
    g *= t
    return g


#: In-place twins of rules: entry name -> one twin (or None) per input, each
#: ``twin(g, ans, *values, spare=(ans or None, first value or None))`` computing that
#: input's gradient into ``g`` (an unshared array) or into a spare (a kept value no one
#: needs any more) and returning it, or None when it does not apply (the rule runs).
TWINS = {
    "multiply": (lambda g, ans, x, y, spare=None: _scale_in_place(g, y),
                 lambda g, ans, x, y, spare=None: _scale_in_place(g, x)),
    "power": (_power_in_place, None),
    "negative": (lambda g, ans, x, spare=None:
                 np.negative(g, out=g) if g.__class__ is np.ndarray else None,),
    "exp": (lambda g, ans, x, spare=None: _scale_in_place(g, ans),),
    "sin": (lambda g, ans, x, spare=None:
            _scale_in_place(g, np.cos(x)) if g.__class__ is np.ndarray else None,),
    "cos": (_cos_in_place,),
    "tanh": (_tanh_in_place,),
    "sigmoid": (_sigmoid_in_place,),
}

#: Entries whose result may be written over their first input's array (see
#: ``reusable_buffer``), with the ufunc that writes there. Only entries whose rules read
#: no input (so no node keeps it, and no forward-mode rule reads it after the write).
REUSE = {"add": np.add, "subtract": np.subtract, "negative": np.negative, "exp": np.exp,
         "tanh": np.tanh, "sqrt": np.sqrt}


def speedups(op) -> tuple:
    """``(twins, reuse)`` for a registered entry of the table: its twins (``()`` for none)
    and the ufunc that may write its result over its first input (or None). An entry that
    does not match what the tables above assume of it is a mistake in them: refused."""
    twins, reuse = TWINS.get(op.name, ()), REUSE.get(op.name)
    if twins and len(twins) != len(op.vjps):
        raise RuntimeError(f"fast.TWINS[{op.name!r}]: one twin (or None) per input")
    if reuse is not None and (op.saves not in ("none", "ans") or op.jvps != op.vjps):
        raise RuntimeError(f"fast.REUSE[{op.name!r}]: its rules read an input")
    return twins, reuse
