"""``GradientTape`` and the backward pass.

The backward pass walks the recorded graph iteratively (no recursion: chains of 10^5
operations work), in reverse topological order, calling each entry's rule and summing
each gradient back to its input's shape in one place (``unbroadcast``).

>>> from gradcli.engine.core.tensor import constant
>>> x = constant(3.0)
>>> with GradientTape() as tape:
...     tape.watch(x)
...     y = x * x
>>> tape.gradient(y, x).numpy()
np.float64(6.0)
"""
from __future__ import annotations

import math
from heapq import heapify, heappop, heappush
from operator import attrgetter

import numpy as np

from .. import fast
from . import state
from .nest import flatten, pack
from .recording import ENGINE, FUNCTIONS, NP
from .tensor import BATCHED_VARIABLES, Batched, Node, Shape, Tensor, Variable, make_tensor, as_value

_recording = state.recording
_creation_order = attrgetter("_order")


def _check_unconnected(unconnected_gradients) -> None:
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero', "
                         f"got {unconnected_gradients!r}")


def _check_sources(sources: list) -> None:
    for s in sources:
        if not isinstance(s, Tensor):
            raise TypeError(f"gradient sources must be tensors or variables, "
                            f"got {type(s).__name__}")


class _Trace:
    """One recording session of a tape. Tensors made by a recorded operation hold it in
    ``Node.tapes``; watched leaves and variables are in ``watched`` (by node id, kept alive in
    ``keep``), so long-lived variables never accumulate references to spent tapes.
    ``reset`` swaps in a new trace: everything recorded before is forgotten at once."""
    __slots__ = ("tape", "watch_accessed", "persistent", "watched", "keep", "alone")

    def __init__(self, tape, watch_accessed: bool, persistent: bool):
        self.alone = (self,)  # the tapes of a node only this trace recorded
        self.tape = tape
        self.watch_accessed = watch_accessed
        self.persistent = persistent
        self.watched: set[int] = set()  # ids of the watched nodes (kept alive in keep)
        self.keep: list = []


class GradientTape:
    """Record operations to differentiate them, as ``tf.GradientTape`` in TensorFlow 2.

    >>> from gradcli.engine.core.tensor import Variable
    >>> w = Variable(2.0)
    >>> with GradientTape() as tape:
    ...     y = w * 5.0
    >>> tape.gradient(y, w).numpy()
    np.float64(5.0)
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._recording = False
        self._blocks = 0  # how many of its with-blocks are open (stop_recording resumes)
        self._used = False
        self._watched_variables: list[Variable] = []
        self._trace = _Trace(self, self._watch_accessed, self._persistent)

    # --- recording -------------------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        if self._recording:
            # As TensorFlow: entering twice would leave the tape on the recording stack.
            raise ValueError("Tape is still recording: this happens when you try to "
                             "re-enter a tape that is already active.")
        if self._used and not self._persistent:
            self.reset()  # a spent tape records afresh, as in TensorFlow
        self._push()
        self._blocks += 1
        return self

    def __exit__(self, *exc) -> None:
        self._blocks -= 1
        if self._recording:
            self._pop()

    def _push(self) -> None:
        self._recording = True
        _recording.append(self._trace)

    def _pop(self) -> None:
        self._recording = False
        for i in range(len(_recording) - 1, -1, -1):
            if _recording[i] is self._trace:
                del _recording[i]
                break

    def stop_recording(self):
        """Context manager: operations inside are not recorded on this tape."""
        return _Paused(self)

    def reset(self) -> None:
        """Forget everything recorded so far; recording continues if inside the block."""
        recording = self._recording
        if recording:
            self._pop()
        # A fresh trace: tensors that traced the old one no longer trace this tape.
        self._trace = _Trace(self, self._watch_accessed, self._persistent)
        self._watched_variables = []
        self._used = False
        if recording:
            self._push()

    def watch(self, tensor) -> None:
        """Trace a tensor or variable (or a nested list/tuple/dict of them)."""
        for item in flatten(tensor, []):
            if isinstance(item, Batched):  # inside vectorized_map: its examples' tensor
                item = item._tensor
            if not isinstance(item, Tensor):
                # ValueError, as TensorFlow raises for anything but a tensor or variable
                raise ValueError(  # noqa: TRY004
                    f"GradientTape.watch takes tensors or variables (or nested lists, tuples "
                    f"or dicts of them), got {type(item).__name__}; make a tensor with "
                    f"gradcli.constant(...)")
            if isinstance(item, Variable):
                self._watch_variable(item)
            else:
                self._watch_tensor(item)

    def _watch_tensor(self, tensor: Tensor) -> None:
        if tensor.__class__ is not Tensor and isinstance(tensor, Batched):
            tensor = tensor._tensor
        if tensor._node is None:
            tensor._node = Node()  # a leaf, now part of the graph
        node = tensor._node
        trace = self._trace
        if id(node) not in trace.watched:
            trace.watched.add(id(node))
            trace.keep.append(node)

    def _watch_variable(self, variable: Variable) -> None:
        node = variable._node
        if id(node) not in self._trace.watched:
            self._trace.watched.add(id(node))
            self._trace.keep.append(node)
            self._watched_variables.append(variable)

    def watched_variables(self) -> tuple:
        """The variables this tape watches, in creation order (inside ``vectorized_map``,
        a batched variable as itself, not as the variable that holds its examples)."""
        out = tuple(sorted(self._watched_variables, key=_creation_order))
        if BATCHED_VARIABLES:
            out = tuple(BATCHED_VARIABLES.get(id(v), v) for v in out)
        return out

    # --- differentiating -------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """Gradients of ``target`` (summed over its elements, and over several targets)
        with respect to ``sources``, in the structure of ``sources``.

        A source not connected to the target gives None, or zeros with
        ``unconnected_gradients="zero"``."""
        _check_unconnected(unconnected_gradients)
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians); make it with "
                               "persistent=True to call gradient() more than once.")
        if self._recording and not self._persistent:
            self._pop()  # as in TensorFlow: stop recording, the tape is spent
        self._used = True

        targets = flatten(target, [])
        if output_gradients is None:
            seeds = [None] * len(targets)
        else:
            seeds = flatten(output_gradients, []) if isinstance(
                output_gradients, (list, tuple, dict)) else [output_gradients]
            if len(seeds) != len(targets):
                raise ValueError(f"output_gradients has {len(seeds)} entries for "
                                 f"{len(targets)} targets")
        flat_sources = flatten(sources, [])
        if state.batching:  # inside vectorized_map: batched values are unwrapped there
            from .batching import gradient
            grads = gradient(self, targets, seeds, flat_sources)
        else:
            _check_sources(flat_sources)
            grads = self._backward(targets, seeds, flat_sources,
                                   release=not self._persistent)
        if unconnected_gradients == "zero":
            grads = [g if g is not None else _zeros_like(s)
                     for g, s in zip(grads, flat_sources)]
        return pack(sources, iter(grads))

    def _backward(self, targets, seeds, sources, release: bool = False) -> list:
        """The reverse pass: one gradient (or None) per source; speed tricks: ``fast``."""
        differentiable = _needs_engine_ops(seeds)
        observer = state.observing[-1] if state.observing else None  # (core/observe.py)
        reached, flowed = (observer.reached, observer.flowed) if observer else (None, None)
        m, speed, in_place = (ENGINE, False, None) if differentiable else (
            NP, fast.ENABLED, fast.InPlace)
        trace, watched, release = self._trace, self._trace.watched, release and not differentiable
        grads, frontier, keep, ends = self._seeded(targets, seeds, sources, differentiable)
        while frontier:
            node = heappop(frontier)[1]
            key, op, params = id(node), node.op, node.params
            g = grads.get(key) if key in keep else grads.pop(key)
            args, ans = _rebuilt(node) if differentiable else (node.values, node.ans)
            if reached is not None:
                reached((node, g))
            spent = release and node.tapes is trace.alone  # recorded by this tape alone: freed
            g, full = (fast.upstream(node, g, ans, args, trace, spent, key in keep)  # (full: g
                       if speed and g.__class__ is np.ndarray else (g, None))  # as a scalar)
            for i, parent in enumerate(node.parents):
                recorded = parent is not None and trace in parent.tapes
                if not (recorded or parent is not None and id(parent) in watched):
                    continue  # the gradient does not flow there
                if g.__class__ is in_place:  # a twin computed the one input's gradient
                    gx = g.gradient
                elif op.variadic:  # one rule for all the inputs
                    gx = op.vjps[0](m, g, ans, *args, index=i, **params)
                else:  # (a None rule: no gradient for that input)
                    gx = (rule := op.vjps[i]) and rule(m, g, ans, *args, **params)
                if gx is None:
                    continue
                if gx.shape != (shape := node.values[i].shape) or full is not None:
                    gx = unbroadcast(m, gx, shape, full)  # (the raw value's shape: no property)
                if flowed is not None:
                    flowed(node, i, parent, g, gx)
                _add_to_parent(grads, frontier, parent, gx, recorded, speed)
            g = gx = None  # (so the next node's reference counts are exact)
            if spent:
                node.values = node.ans = None
        return [_source_gradient(grads, n, s, targets, differentiable) for n, s in ends]

    def _seeded(self, targets, seeds, sources, differentiable: bool):
        """The start of the reverse pass: the targets' seeds in a gradients dict, the
        heap of recorded nodes to visit, the ids of the sources' nodes (whose gradients
        stay in the dict as results) and each source's (node, source)."""
        trace = self._trace
        for s in sources:
            if s._node is None and any(s is t for t in targets):
                s._node = Node()  # a target that is a source: its gradient is the seed
        ends = [(s._node, s) for s in sources]
        keep = {id(n) for n, _ in ends if n is not None}
        grads: dict[int, object] = {}
        frontier = []
        for t, seed in zip(targets, seeds):
            node = t._node if isinstance(t, Tensor) else None
            if node is not None and (trace in node.tapes or id(node) in trace.watched
                                     or id(node) in keep):
                if id(node) not in grads and trace in node.tapes:
                    frontier.append((-node.seq, node))
                _accumulate(grads, node, _seed(t, seed, differentiable))
        heapify(frontier)
        return grads, frontier, keep, ends

    # --- jacobians -------------------------------------------------------------------
    def jacobian(self, target, sources, unconnected_gradients="none",
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target / d source for every element: shape ``target.shape + source.shape``.

        The rows are computed as TensorFlow's pfor computes them: one backward pass on a
        batch of seeds (the basis), in chunks that bound the memory
        (``batching.jacobian_rows``); an operation whose rule cannot batch makes it a
        loop of backward passes, said once in a warning. ``parallel_iterations`` and
        ``experimental_use_pfor`` are accepted for TensorFlow compatibility and change
        nothing (unlike TensorFlow's while_loop path, a non-persistent tape works too)."""
        if not isinstance(target, (Tensor, Batched)):
            raise TypeError(f"jacobian target must be a tensor, got {type(target).__name__}")
        _check_unconnected(unconnected_gradients)
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians).")
        if self._recording and not self._persistent:
            self._pop()
        self._used = True
        flat_sources = flatten(sources, [])
        if state.batching and (isinstance(target, Batched)
                               or any(isinstance(s, Batched) for s in flat_sources)):
            from .batching import jacobian  # per example, inside vectorized_map
            return pack(sources, iter(jacobian(self, target, flat_sources,
                                                unconnected_gradients)))
        _check_sources(flat_sources)
        tshape = target.shape
        n = math.prod(tshape)
        rows = [[] for _ in flat_sources]
        if n == 0:
            # No entries: the jacobian is empty, of shape target + source (as TensorFlow),
            # for every source an (empty) seed reaches.
            grads = self._backward([target], [np.zeros(tshape, dtype=target.dtype)],
                                   flat_sources)
            return pack(sources, iter(
                None if g is None and unconnected_gradients == "none"
                else make_tensor(np.zeros(tshape + src.shape, dtype=src.dtype))
                for g, src in zip(grads, flat_sources)))
        from .batching import jacobian_rows  # one backward pass per chunk of rows
        for j, chunks in enumerate(jacobian_rows(self, target, flat_sources)):
            rows[j].extend(chunks)
        results = []
        for src, row in zip(flat_sources, rows):
            if all(g is None for g in row):
                results.append(None if unconnected_gradients == "none"
                               else make_tensor(np.zeros(tshape + src.shape, dtype=src.dtype)))
                continue
            if bool(_recording):
                stacked = FUNCTIONS["concatenate"](row, axis=0) if len(row) > 1 else row[0]
                results.append(FUNCTIONS["reshape"](stacked, tshape + src.shape))
            else:
                values = [p._value for p in row]
                stacked = np.concatenate(values) if len(values) > 1 else values[0]
                results.append(make_tensor(np.reshape(stacked, tshape + src.shape)))
        return pack(sources, iter(results))

    def batch_jacobian(self, target, source, unconnected_gradients="none",
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example jacobian: target ``[b, y...]``, source ``[b, x...]`` gives
        ``[b, y..., x...]`` (examples are assumed independent, as in TensorFlow).
        ``parallel_iterations`` and ``experimental_use_pfor``: as in :meth:`jacobian`."""
        for what, x in (("target", target), ("source", source)):
            if not isinstance(x, (Tensor, Batched)):
                raise TypeError(f"batch_jacobian {what} must be a tensor, "
                                f"got {type(x).__name__}")
            if x.ndim < 2:  # as TensorFlow: [batch, ...] with at least one more axis
                raise ValueError(f"batch_jacobian: the {what}'s shape {x.shape} must have "
                                 f"rank at least 2")
        tshape, sshape = target.shape, source.shape
        if tshape[0] != sshape[0]:
            raise ValueError(f"batch_jacobian: target batch size {tshape[0]} does not match "
                             f"source batch size {sshape[0]}")
        full = self.jacobian(target, source, unconnected_gradients)
        if full is None:
            return None
        b = tshape[0]
        ny = int(np.prod(tshape[1:], dtype=np.int64))
        nx = int(np.prod(sshape[1:], dtype=np.int64))
        if isinstance(full, Batched):  # inside vectorized_map: the same, by operations
            reshape = FUNCTIONS["reshape"]
            diag = reshape(full, (b, ny, b, nx))[np.arange(b), :, np.arange(b), :]
            return reshape(diag, tshape + sshape[1:])
        value = full._value.reshape((b, ny, b, nx))
        diag = value[np.arange(b), :, np.arange(b), :]  # (b, ny, nx), also for b = 0
        return make_tensor(diag.reshape(tshape + sshape[1:]))


class _Paused:
    __slots__ = ("tape",)

    def __init__(self, tape: GradientTape):
        self.tape = tape

    def __enter__(self):
        if not self.tape._recording:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self.tape._pop()

    def __exit__(self, *exc):
        tape = self.tape
        # Resume only inside the tape's block (never leave a tape recording after it),
        # and on a fresh trace if gradient() spent the tape meanwhile (as TensorFlow).
        if tape._blocks > 0 and not tape._recording:
            if tape._used and not tape._persistent:
                tape.reset()
            tape._push()






def _needs_engine_ops(seeds) -> bool:
    """Whether the rules must run as engine operations: an outer tape or forward mode
    records the backward pass, or the seeds are a batch (a Jacobian's rows)."""
    return (bool(_recording) or bool(state.forward)
            or any(seed.__class__ is Batched for seed in seeds))


def _add_to_parent(grads: dict, frontier: list, parent, gx, recorded: bool,
                   speed: bool) -> None:
    """Add ``gx`` to ``parent``'s gradient; a recorded node enters the heap with its first."""
    prev = grads.get(k := id(parent))
    if prev is None:
        grads[k] = gx
        if recorded:
            heappush(frontier, (-parent.seq, parent))
    else:
        grads[k] = fast.add_into(prev, gx) if speed else prev + gx

def _rebuilt(node):
    """The node's saved inputs and output as tensors, on the same nodes, so that an outer
    tape that recorded them sees the rules' operations as connected."""
    args = [make_tensor(v, p) if p is not None and v.__class__ is not Shape else v
            for v, p in zip(node.values, node.parents)]
    return args, make_tensor(node.ans, node)


def _source_gradient(grads: dict, n, source, targets, differentiable: bool):
    """What ``gradient`` returns for one source (its node ``n``), from its summed gradient
    in ``grads``.

    A boolean or integer source has no gradient (None), as in TensorFlow, whose tapes do
    not watch them: the SPEC's "booleans are never differentiable" and "an integer dtype
    gives a tensor with no gradient". Except as its own target: then, as TensorFlow, the
    target's seed in the source's dtype (tape.gradient(s, s) of a boolean s is all
    True). A gradient has its source's dtype (a float32 source mixed with float64
    constants gets a float32 gradient), as in TensorFlow and PyTorch."""
    dtype = source._value.dtype
    g = None if n is None else grads.get(id(n))
    if g is None or (dtype.kind not in "fc" and not any(
            t._node is n for t in targets if isinstance(t, Tensor))):
        return None
    if g.dtype != dtype and dtype.kind != "c":
        if differentiable:
            return FUNCTIONS["cast"](g, dtype=dtype)
        g = np.asarray(g).astype(dtype)
        g = g[()] if g.ndim == 0 else g
    return g if differentiable else make_tensor(fast.owned(g))


def _accumulate(grads: dict, x, g) -> None:
    key = id(x)
    prev = grads.get(key)
    grads[key] = g if prev is None else prev + g


def unbroadcast(m, g, shape, full=None):
    """Sum a gradient back to its input's shape: the one place broadcasting is undone.
    ``full``: the shape ``g`` stands for when the rule computed with a scalar in place of
    a broadcast upstream gradient (the output's shape); g is summed as that shape."""
    gshape = g.shape if isinstance(g, Tensor) else np.shape(g)
    if full is not None and gshape != full:
        g = m.broadcast_to(g, shape=full)
        gshape = full
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead < 0 or any(a != b and b != 1 for a, b in zip(gshape[lead:], shape)):
        # a rule's gradient smaller than its input: it holds for every element
        gshape = np.broadcast_shapes(gshape, shape)
        g = m.broadcast_to(g, shape=gshape)
    return m.sum_to(g, shape=shape)


def _zeros_like(source: Tensor):
    return make_tensor(np.zeros(source.shape, dtype=source.dtype)[()] if source.ndim == 0
                 else np.zeros(source.shape, dtype=source.dtype))


def _seed(target: Tensor, seed, differentiable: bool):
    value = target._value
    if seed is None:
        seed = np.ones_like(value) if value.ndim else value.dtype.type(1)
    elif not (differentiable and isinstance(seed, (Tensor, Batched))):
        # (a boolean or integer target's seed is read as numbers; only a target that
        # is its own source keeps it, in its dtype)
        seed = as_value(seed, value.dtype if value.dtype.kind == "f" else None)
        if np.shape(seed) != np.shape(value):
            raise ValueError(f"output_gradients shape {np.shape(seed)} does not match the "
                             f"target's shape {np.shape(value)}")
    if differentiable and not isinstance(seed, (Tensor, Batched)):
        seed = make_tensor(seed)
    return seed
