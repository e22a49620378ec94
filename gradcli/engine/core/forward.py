"""Forward mode: ``ForwardAccumulator``, as ``tf.autodiff.ForwardAccumulator``.

An accumulator holds one tangent per value it has seen, keyed by the value's ``Node``
(the node survives where the tensor object does not: the backward pass rebuilds tensors
around saved values with their nodes, so a gradient computed inside the accumulator gets
its tangent too — forward-over-reverse Hessian-vector products). It holds the nodes
weakly (``Tangents``): a tangent dies with its primal, as in TensorFlow's accumulator, so
a chain of a thousand operations keeps one tangent alive, not a thousand. While an accumulator is
inside its ``with`` block, ``apply`` hands every operation to ``propagate``, which
asks the entry's JVP rules (``Op.jvps``) for the output's tangent. The rules are in the
table; this module is only the bookkeeping.

>>> from gradcli.engine.core.tensor import constant
>>> from gradcli.engine import FUNCTIONS as F
>>> x = constant(2.0)
>>> with ForwardAccumulator(x, 1.0) as acc:
...     y = x * x * x
>>> float(acc.jvp(y))
12.0
"""
from __future__ import annotations

import weakref

import numpy as np

from . import state
from .nest import flatten, pack
from .recording import ENGINE, FUNCTIONS, NP
from .tensor import Batched, Node, Tensor, make_tensor, as_value

_active = state.forward


class ForwardAccumulator:
    """Jacobian-vector products by forward mode, as ``tf.autodiff.ForwardAccumulator``.

    ``primals``: a tensor or variable, or a nest of them; ``tangents``: the same structure
    of values of the same shapes (the direction). Operations run inside ``with acc:``
    carry tangents; ``acc.jvp(t)`` reads the tangent of any value computed there (also
    after the block), or None (zeros with ``unconnected_gradients="zero"``).

    Nesting, as in TensorFlow: a ``GradientTape`` inside the accumulator gives the
    tangents of gradients (forward-over-reverse Hessian-vector products); a tape outside
    records the tangent computations (reverse-over-forward); of two accumulators, the
    outer one sees the inner one's tangent computations (second directional derivatives).

    >>> from gradcli.engine.core.tensor import constant
    >>> from gradcli.engine.core.tape import GradientTape
    >>> x = constant([1.0, 2.0])
    >>> with ForwardAccumulator(x, constant([1.0, 0.0])) as acc:
    ...     with GradientTape() as tape:
    ...         tape.watch(x)
    ...         y = FUNCTIONS["sum"](x ** 3.0)
    ...     g = tape.gradient(y, x)
    >>> acc.jvp(g).numpy()           # the Hessian diag(6 x) times [1, 0]
    array([6., 0.])
    """

    def __init__(self, primals, tangents):
        flat_primals = flatten(primals, [])
        _distinct(flat_primals)
        flat_tangents = _flatten_like(primals, tangents)
        self._tangents = Tangents()
        self._recording = False
        self._outer_tapes: list = []  # the tapes recording when the block was entered
        for primal, tangent in zip(flat_primals, flat_tangents):
            if isinstance(primal, Batched) or isinstance(tangent, Batched):
                primal, tangent = _batched_pair(primal, tangent)
            if not isinstance(primal, Tensor):
                raise TypeError(f"ForwardAccumulator primals must be tensors or variables, "
                                f"got {type(primal).__name__}; make one with "
                                f"gradcli.constant(...)")
            if not isinstance(tangent, (Tensor, Batched)):
                tangent = as_value(tangent, primal.dtype)
            if np.shape(tangent) != primal.shape:
                raise ValueError(f"ForwardAccumulator: a tangent of shape "
                                 f"{np.shape(tangent)} for a primal of shape {primal.shape}")
            if primal._node is None:
                primal._node = Node()  # a leaf: what its tangent is kept under
            self._tangents.put(primal._node, tangent)

    def __enter__(self) -> "ForwardAccumulator":
        if self._recording:
            raise ValueError("ForwardAccumulator is already active: it cannot be "
                             "re-entered")
        self._recording = True
        # Tapes entered before the accumulator see its tangent computations (reverse over
        # forward); tapes entered inside it do not (as in TensorFlow).
        self._outer_tapes = list(state.recording)
        _active.append(self)
        if state.observing:  # (jvp --explain reads the tangents after the run)
            state.observing[-1].accumulating(self)
        return self

    def __exit__(self, *exc) -> None:
        self._recording = False
        for i in range(len(_active) - 1, -1, -1):
            if _active[i] is self:
                del _active[i]
                break

    def jvp(self, primals, unconnected_gradients="none"):
        """The tangents of ``primals`` (a tensor or a nest of them), in their structure:
        None for a value the primals' tangents do not reach, or zeros with
        ``unconnected_gradients="zero"``. Computes nothing: the tangents were computed
        as the operations ran."""
        unconnected = getattr(unconnected_gradients, "value", unconnected_gradients)
        if unconnected not in ("none", "zero"):
            raise ValueError(f"unconnected_gradients must be 'none' or 'zero', "
                             f"got {unconnected_gradients!r}")
        out = []
        for x in flatten(primals, []):
            if isinstance(x, Batched):  # inside vectorized_map: per example
                tangent = self._tangent(x._tensor)
                out.append(None if tangent is None and unconnected == "none" else Batched(
                    make_tensor(_zeros(x._tensor._value)) if tangent is None else
                    tangent if isinstance(tangent, Tensor) else make_tensor(tangent)))
                continue
            if not isinstance(x, Tensor):
                raise TypeError(f"jvp takes tensors (or nests of them), "
                                f"got {type(x).__name__}")
            tangent = self._tangent(x)
            if tangent is None:
                out.append(None if unconnected == "none" else make_tensor(_zeros(x._value)))
            else:
                out.append(tangent if isinstance(tangent, (Tensor, Batched))
                           else make_tensor(tangent))
        return pack(primals, iter(out))

    def _tangent(self, x):
        node = x._node
        return None if node is None else self._tangents.get(node)


class Tangents:
    """An accumulator's tangents by node, holding the nodes weakly: an entry goes when
    its node does (the primal's tensor, and any graph that held its node, were dropped),
    so the tangents alive are those of the values alive.

    Entries are kept by ``id(node)`` with a ``weakref.KeyedRef`` whose callback removes
    them; the callback reaches the table through a weak reference, so no cycle keeps a
    dropped accumulator's tangents alive until the cyclic collector runs."""

    __slots__ = ("_by_id", "_forget", "__weakref__")

    def __init__(self):
        self._by_id: dict[int, tuple] = {}  # id(node) -> (KeyedRef to the node, tangent)
        table = weakref.ref(self)

        def forget(ref, table=table):
            alive = table()
            if alive is not None:
                alive._by_id.pop(ref.key, None)
        self._forget = forget

    def get(self, node):
        """The tangent held for ``node``, or None."""
        entry = self._by_id.get(id(node))
        return None if entry is None else entry[1]

    def put(self, node, tangent) -> None:
        key = id(node)
        self._by_id[key] = (weakref.KeyedRef(node, self._forget, key), tangent)

    def __len__(self) -> int:
        return len(self._by_id)


def _distinct(primals: list) -> None:
    """A primal given twice is refused, as TensorFlow refuses it (which tangent was
    meant? adding them up silently hid the mistake)."""
    seen = set()
    for primal in primals:
        if not isinstance(primal, (Tensor, Batched)):
            continue  # (not a primal at all: the TypeError below says so)
        if id(primal) in seen:
            raise ValueError(f"ForwardAccumulator: the same {type(primal).__name__} is given "
                             f"twice among the primals; give it once, with the sum of its "
                             f"tangents if both were meant")
        seen.add(id(primal))


def _batched_pair(primal, tangent):
    """A primal and its tangent inside ``vectorized_map``: a batched primal is its
    examples' tensor, whose tangent is the batched tangent's, or one tangent repeated
    for every example. A primal shared by every example keeps its batched tangent as
    it is: values computed from the primal alone stay shared, with batched tangents
    (their rules run batched), and where one meets a batched value it is repeated for
    each example first (``repeat_with_tangents``)."""
    from .batching import with_batch
    if not isinstance(primal, Batched):
        if isinstance(primal, Tensor) and np.shape(tangent) != primal.shape:
            raise ValueError(f"ForwardAccumulator: a tangent of shape {np.shape(tangent)} "
                             f"for a primal of shape {primal.shape}")
        return primal, tangent
    size = primal._tensor.shape[0]
    if isinstance(tangent, Batched):
        tangent = tangent._tensor
    elif isinstance(tangent, Tensor):
        tangent = with_batch(tangent, size)
    else:
        value = as_value(tangent, primal.dtype)
        if np.shape(value) != primal.shape:
            raise ValueError(f"ForwardAccumulator: a tangent of shape {np.shape(value)} "
                             f"for a primal of shape {primal.shape}")
        tangent = np.broadcast_to(value, primal._tensor.shape).copy()
    return primal._tensor, tangent


def _flatten_like(primals, tangents) -> list:
    """The tangents as one value per primal leaf: ``tangents`` has the structure of
    ``primals``, down to each primal, whose tangent may itself be a list (array-like)."""
    out, stack = [], [(primals, tangents)]
    while stack:
        p, t = stack.pop()
        if isinstance(p, Tensor) or not isinstance(p, (list, tuple, dict)):
            out.append(t)
        elif isinstance(p, dict):
            if not isinstance(t, dict) or set(t) != set(p):
                raise ValueError("ForwardAccumulator: the tangents must have the primals' "
                                 "structure (the same dict keys)")
            stack.extend((p[k], t[k]) for k in reversed(list(p)))
        else:
            if isinstance(t, Tensor) or not isinstance(t, (list, tuple)) or len(t) != len(p):
                raise ValueError(f"ForwardAccumulator: {len(p)} primal(s) but "
                                 f"{len(t) if isinstance(t, (list, tuple)) else 1} "
                                 f"tangent(s); give one tangent per primal")
            stack.extend(zip(reversed(p), reversed(t)))
    return out


def _zeros(value):
    out = np.zeros(np.shape(value), dtype=getattr(value, "dtype", np.float64))
    return out[()] if out.ndim == 0 else out


def propagate(op, out: Tensor, inputs, values, params) -> None:
    """The tangent of ``out = op(*inputs)`` for every active accumulator that holds a
    tangent of an input, outermost first. Called by ``apply`` when an accumulator is
    active. (Outermost first: an inner accumulator's rule may read ``out`` itself, as
    exp's ``t * ans`` does, and the outer accumulator sees that computation only if it
    already holds ``out``'s tangent; innermost first, the second derivative of
    ``exp(x)`` by two nested accumulators was 0.)

    An accumulator's rules compute on numpy values when nothing else watches (the fast
    path); when a tape records, or an outer accumulator is active, they compute in engine
    operations on the input tensors, so that the tape or the outer accumulator sees them.
    While they run, this accumulator and the ones inside it are set aside: an accumulator
    never sees its own tangent computations (as in TensorFlow)."""
    for level in range(len(_active)):
        acc = _active[level]
        table = acc._tangents
        tangents = None
        batched = False  # a tangent per example of a shared value (see _batched_pair)
        for i, x in enumerate(inputs):
            node = x._node if isinstance(x, Tensor) else None
            if node is not None:
                tangent = table.get(node)
                if tangent is not None:
                    if tangents is None:
                        tangents = [None] * len(inputs)
                    tangents[i] = tangent
                    batched = batched or tangent.__class__ is Batched
        if tangents is None:
            continue
        recording = state.recording
        outer = acc._outer_tapes
        if level == 0 and not batched and not any(trace in outer for trace in recording):
            # Nothing outside watches: the rules run on numpy values (the fast path).
            tangent = _output_tangent(NP, op, out._value, values, tangents, params)
        else:
            inner = _active[level:]
            del _active[level:]
            tapes = recording[:]
            recording[:] = [trace for trace in tapes if trace in outer]
            try:
                tangent = _output_tangent(ENGINE, op, out, inputs, tangents, params)
            finally:
                recording[:] = tapes
                _active.extend(inner)
        if tangent is None:
            continue
        node = out._node
        if node is None:
            node = out._node = Node()  # a leaf of no tape: its tangent is kept under it
        table.put(node, tangent)


def repeat_with_tangents(x: Tensor, size: int):
    """``x``, shared by every example inside ``vectorized_map``, repeated for each of
    ``size`` examples (``batching.with_batch``) when an active accumulator holds a
    batched tangent for it (else None: the caller repeats it as usual). The repeated
    value's tangent is then the batched tangent's examples, one per example (not the
    whole batch of tangents repeated for each example, as ``propagate`` would make it),
    and a plain tangent is repeated alike. Called by ``with_batch`` and by
    ``apply_batched`` for each shared input, which therefore pairs example i of the
    value with tangent i."""
    node = x._node
    if node is None or not any(
            acc._tangents.get(node).__class__ is Batched for acc in _active):
        return None
    from .batching import with_batch
    active = _active[:]
    del _active[:]  # the repetition's tangents are set below, not derived
    try:
        repeated = with_batch(x, size)
        tangents = []
        for acc in active:
            t = acc._tangents.get(node)
            if t is None:
                continue
            if t.__class__ is Batched:
                tangents.append((acc, t._tensor))
            elif isinstance(t, Tensor):
                tangents.append((acc, with_batch(t, size)))
            else:
                tangents.append((acc, np.broadcast_to(t, (size, *np.shape(t)))))
    finally:
        _active.extend(active)
    if repeated._node is None:
        repeated._node = Node()
    for acc, t in tangents:
        acc._tangents.put(repeated._node, t)
    return repeated


def _output_tangent(m, op, ans, inputs, tangents, params):
    """The sum of the rules' contributions, broadcast to the output's shape and given its
    dtype (the one place forward mode broadcasts, as ``tape.unbroadcast`` in reverse)."""
    if m is NP:
        tangents = [t._value if isinstance(t, Tensor) else t for t in tangents]
    rules = op.jvps
    if op.variadic:
        if not rules or rules[0] is None:
            return _no_rule(op, rules)
        full = [t if t is not None else m.zeros_like(x) for t, x in zip(tangents, inputs)]
        total = rules[0](m, full, ans, *inputs, **params)
    else:
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            if i >= len(rules):
                return _no_rule(op, rules)
            rule = rules[i]
            if rule is None:
                if op.vjps[i] is None:
                    continue  # declared not differentiable in this input: no tangent
                return _no_rule(op, rules)
            part = rule(m, t, ans, *inputs, **params)
            total = part if total is None else total + part
        if total is None:
            return None
    shape, dtype = np.shape(ans._value if isinstance(ans, Tensor) else ans), ans.dtype
    if dtype.kind != "f":
        return None  # booleans and integers carry no tangent
    tshape = total.shape if isinstance(total, Tensor) else np.shape(total)
    if tshape != shape:
        total = m.broadcast_to(total, shape=shape)
    if total.dtype != dtype:
        if m is NP:
            total = np.asarray(total).astype(dtype)
            total = total[()] if total.ndim == 0 else total
        else:
            total = FUNCTIONS["cast"](total, dtype=dtype)
    return total


def _no_rule(op, rules):
    from ...errors import ModeError
    raise ModeError(f"forward mode: {op.name} has no JVP rule, so no tangent can pass "
                    f"through it (use reverse mode, GradientTape, instead)")

state.propagate = propagate  # (apply hands every operation here while an accumulator is active)
state.repeat_with_tangents = repeat_with_tangents  # (batching's with_batch asks it)
