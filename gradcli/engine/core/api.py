"""The function transformations of ``tf.contrib.eager``, as thin wrappers over one core:
``_record_and_differentiate`` runs ``f`` under a tape and then the backward pass.

>>> from gradcli.engine.core.tensor import Variable
>>> w = Variable(3.0)
>>> value, pairs = implicit_value_and_gradients(lambda x: w * x)(2.0)
>>> float(value), float(pairs[0][0]), pairs[0][1] is w
(6.0, 2.0, True)
"""
from __future__ import annotations

import gc

import numpy as np

from ...errors import ShapeError
from . import state
from .derive import transposed
from .nest import flatten, pack, pair
from .recording import ENGINE, FUNCTIONS, apply, holds_tensor
from .table import INTERNAL, REGISTRY, Op
from .tape import GradientTape
from .tensor import (
    Batched,
    BatchedVariable,
    NotBatchable,
    Tensor,
    Variable,
    make_tensor,
    as_value,
    constant,
)

NO_VARIABLES = "No trainable variables were accessed while the function was being computed."


def _record_and_differentiate(f, args, kwargs, *, argnums=None, dy=None):
    """Run ``f(*args, **kwargs)`` under a tape; return ``(value, grads, variables)``.

    With ``argnums`` (gradients_function) the chosen arguments are watched and variables
    read inside ``f`` are constants; without it (implicit_*) the trainable variables read
    while ``f`` ran are the sources, in creation order. (One function, not three: on
    large arrays every call between two numpy operations runs with cold caches.)

    ``f`` may return a tensor or any nest of them (lists, tuples, dicts): as in
    TensorFlow, the gradient is that of the sum over all outputs (weighted by ``dy``, one
    entry per output), and ``value`` keeps the structure."""
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
                _distinct_sources(args, argnums)
                for i in argnums:
                    tape._watch_tensor(args[i])
            value = f(*args, **kwargs)
            if value is None:
                raise ValueError(f"the function {_name(f)} returned None; it must return "
                                 "the tensor to differentiate")
            leaves = flatten(value, [])
            if not leaves:
                raise ValueError(f"the function {_name(f)} returned {value!r}, which holds "
                                 "no tensor to differentiate")
            if any(t is None for t in leaves):
                raise ValueError(f"the function {_name(f)} returned None among its "
                                 "outputs; every output must be a tensor or a number")
            targets = [t if isinstance(t, (Tensor, Batched)) else constant(t) for t in leaves]
            if implicit:
                for t in targets:
                    if isinstance(t, (Variable, BatchedVariable)) and t._trainable:
                        tape.watch(t)  # returning a variable reads it
                variables = [v for v in tape.watched_variables() if v._trainable]
                if not variables:
                    raise ValueError(NO_VARIABLES)
                sources = variables
            else:
                variables = None
                sources = [args[i] for i in argnums]
            if value.__class__ is list or value.__class__ is tuple or isinstance(value, dict):
                value = target = pack(value, iter(targets))
                seeds = None if dy is None else flatten(dy, [])  # one per output
            else:
                value = target = targets[0]
                seeds = dy
            return value, tape.gradient(target, sources, output_gradients=seeds), variables
    finally:
        if collecting:
            gc.enable()


def _distinct_sources(args: list, argnums) -> None:
    """Make each differentiated argument a tensor of its own (in place in ``args``).

    As TensorFlow does, the same tensor passed twice is two sources (``f(x, x)`` for
    ``a * b`` gives ``[1, 1]``); unlike TensorFlow, also when only one of them is
    differentiated (the other is then held constant, as a partial derivative holds it).
    A variable passed as an argument is read. Each such argument becomes a copy that
    outer tapes record as an identity, so higher derivatives through it still work. An
    index repeated in ``params`` is one argument, whose gradient is given for each
    repetition (as TensorFlow's make_vjp, which watches ``args[i]`` per entry)."""
    counts: dict[int, int] = {}
    for x in args:
        counts[id(x)] = counts.get(id(x), 0) + 1
    for i in dict.fromkeys(argnums):
        x = args[i]
        if isinstance(x, Batched):  # inside vectorized_map (its rules copy it)
            if isinstance(x, BatchedVariable) or counts[id(x)] > 1:
                args[i] = apply(INTERNAL["cast"], (x,), {"dtype": x.dtype})
        elif not isinstance(x, Tensor):  # a number, an array, or a list holding tensors
            args[i] = FUNCTIONS["stack"](x) if holds_tensor(x) else constant(x)
        elif isinstance(x, Variable) or counts[id(x)] > 1:
            args[i] = apply(INTERNAL["cast"], (x,), {"dtype": x.dtype})
    if state.batching:
        # Inside vectorized_map, called on batched values: per-example gradients for
        # the arguments shared by every example too.
        from .batching import batched_arguments
        batched_arguments(args, argnums)


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


def hessians_function(f, params=None):
    """``h(*args)`` giving the Hessian blocks of ``f`` with respect to the differentiated
    arguments (``params`` as in :func:`gradients_function`): ``h(*args)[i][j]`` is
    d2f / d(args[i]) d(args[j]), of shape ``args[i].shape + args[j].shape``.

    Nested reverse mode: an outer tape records the gradient that ``gradients_function``
    computes, then takes its Jacobian. As for gradients, a non-scalar output is
    differentiated as its sum, and variables read inside ``f`` are constants. The blocks
    are all given, as JAX's ``hessian`` with several ``argnums`` gives them
    (``tf.hessians`` gave the diagonal blocks ``[i][i]`` only), and a block is zeros,
    never None, where the gradient does not depend on an argument (the second
    derivative of ``x * y`` in ``x`` twice is 0).

    >>> h = hessians_function(lambda x, y: x * x * y)
    >>> [[float(block) for block in row] for row in h(3.0, 2.0)]
    [[4.0, 6.0], [6.0, 0.0]]
    """
    indices = _argnums(f, params)

    @_wraps(f)
    def hessian_fn(*args, **kwargs):
        _check_kwargs(kwargs)
        args = list(args)
        chosen = _resolve(indices, args)
        _distinct_sources(args, chosen)
        sources = [args[i] for i in chosen]
        with GradientTape(watch_accessed_variables=False) as outer:
            for source in sources:
                outer._watch_tensor(source)
            _, grads, _ = _record_and_differentiate(f, args, {}, argnums=chosen)
            grads = [g if g is not None else constant(np.zeros(s.shape, dtype=s.dtype))
                     for g, s in zip(grads, sources)]
            if len(sources) == 1:  # its Jacobian is the one block, already in its shape
                [flat] = grads
            else:  # one flat gradient, so that one Jacobian gives every block
                flat = FUNCTIONS["concatenate"]([FUNCTIONS["reshape"](g, (-1,)) for g in grads])
        columns = outer.jacobian(flat, sources, unconnected_gradients="zero")
        if len(sources) == 1:
            return [columns]
        return _blocks(columns, sources)
    return hessian_fn


def _blocks(columns: list, sources: list) -> list:
    """The Hessian blocks ``[i][j]`` from the Jacobians of the flat gradient (the rows
    of source ``i``'s elements), each of shape ``sources[i].shape + sources[j].shape``."""
    reshape, blocks, start = FUNCTIONS["reshape"], [], 0
    for s in sources:
        blocks.append([reshape(column[start:start + s.size], s.shape + other.shape)
                       for column, other in zip(columns, sources)])
        start += s.size
    return blocks


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
    return apply(REGISTRY["stop_gradient"], (x,))


def custom_gradient(f):
    """Decorator: ``f(*xs)`` returns ``(y, grad_fn)``; ``grad_fn(*dys)`` gets one upstream
    gradient per output of ``y`` (``y`` is a tensor or a nest of them, as TensorFlow
    allows) and returns the gradient for each input: one tensor for a single input, or a
    list or tuple with exactly one entry per input. None for an input (or a variable)
    gives it no gradient: as in TensorFlow, a source reached only through it is
    unconnected (None, or zeros with ``unconnected_gradients="zero"``). ``f`` returning
    anything but such a pair is a ``TypeError`` that says what it returned.

    As in TensorFlow, when ``f`` reads trainable variables under a tape, ``grad_fn`` must
    take a keyword ``variables`` (the list of them) and return ``(input_gradients,
    variable_gradients)``, one gradient per variable. Keyword arguments are passed to
    ``f`` and are not differentiated, as in TensorFlow eager: the inputs are the
    positional arguments, and a variable passed as an argument is not among
    ``variables``.

    Higher derivatives, as in TensorFlow eager: ``f`` runs while the tapes record, and
    its outputs are fresh tensors whose recorded rule is ``grad_fn``. So the first
    derivative is ``grad_fn``'s alone, and a tape that records while ``grad_fn`` runs
    (nested tapes, a persistent tape, ``hessians_function``) differentiates ``grad_fn``'s
    operations, through whatever of ``f``'s work it closes over: with ``y = exp(x)`` and
    ``grad_fn = lambda dy: dy * y`` the second derivative is ``exp(x)``. A tape entered
    after ``f`` ran sees none of it. In forward mode (``ForwardAccumulator``, ``jvp``,
    ``hessian_vector_product``) the tangent of ``y`` is ``grad_fn`` transposed (``J t``
    is the gradient in ``dy`` of ``<grad_fn(dy), t>``, as TensorFlow's accumulators
    treat functions without a forward rule), so ``grad_fn`` must be linear in ``dy``.

    >>> @custom_gradient
    ... def log1pexp(x):                    # TensorFlow's example
    ...     e = FUNCTIONS["exp"](x)
    ...     return FUNCTIONS["log"](1 + e), lambda dy: dy * (1 - 1 / (1 + e))
    >>> [[d2]] = hessians_function(log1pexp)(0.0)     # sigmoid'(0)
    >>> float(d2)
    0.25
    """
    @_wraps(f)
    def wrapper(*xs, **kwargs):
        if state.batching and (any(isinstance(x, Batched) for x in xs) or kwargs and any(
                isinstance(v, Batched) for v in kwargs.values())):
            from .batching import custom_gradient_call  # inside vectorized_map
            return custom_gradient_call(custom_gradient, f, xs, kwargs)
        y, grad_fn, variables = _run(f, xs, kwargs)
        if variables and not _takes_variables(grad_fn):
            raise TypeError(f"custom_gradient: {_name(f)} reads variables "
                            f"({', '.join(v.name for v in variables)}), so its grad_fn must "
                            f"accept a keyword argument 'variables' and return (input "
                            f"gradients, variable gradients), as in TensorFlow")
        leaves = flatten(y, [])
        if not leaves or any(leaf is None for leaf in leaves):
            raise ValueError(f"custom_gradient: {_name(f)} must return (outputs, grad_fn) "
                             f"with tensors as outputs, got {y!r}")
        values = [leaf._value if isinstance(leaf, Tensor) else as_value(leaf)
                  for leaf in leaves]
        single = len(values) == 1 and not isinstance(y, (list, tuple, dict))
        shapes = [np.shape(v) for v in values]
        sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
        n = len(xs)
        cache = [None, None]  # (upstream, gradients): grad_fn runs once per backward step

        def gradients(m, g):
            if cache[0] is g:
                return cache[1]
            differentiable = m is ENGINE
            if single:
                dys = [g if differentiable else make_tensor(g)]
            else:  # the packed outputs' gradient, cut back into one per output
                dys, start = [], 0
                for shape, size in zip(shapes, sizes):
                    part = m.reshape(m.getitem(g, index=slice(start, start + size)),
                                     shape=shape)
                    dys.append(part if differentiable else make_tensor(part))
                    start += size
            if variables:
                result = grad_fn(*dys, variables=variables)
                if not isinstance(result, (list, tuple)) or len(result) != 2:
                    raise ValueError(f"custom_gradient: the grad_fn of {_name(f)} must "
                                     "return (input gradients, variable gradients) when "
                                     "given variables")
                dxs, dvs = result
            else:
                dxs, dvs = grad_fn(*dys), []
            flat = ([dxs] if n == 1 and not isinstance(dxs, (list, tuple, dict))
                    else flatten(dxs, []) if dxs is not None else [None] * n)
            if len(flat) != n:
                raise ValueError(f"custom_gradient: the grad_fn of {_name(f)} returned "
                                 f"{len(flat)} gradient(s); expected {n}, one per input "
                                 f"of {_name(f)} (None for an input without one)")
            flat_vars = flatten(dvs, []) if dvs is not None else [None] * len(variables)
            if len(flat_vars) != len(variables):
                raise ValueError(f"custom_gradient: the grad_fn of {_name(f)} returned "
                                 f"{len(flat_vars)} variable gradient(s); expected "
                                 f"{len(variables)}, one per variable it read")
            flat = flat + flat_vars
            cache[:] = [g, flat]
            return flat

        def vjp(m, g, ans, *inputs, index):
            dx = gradients(m, g)[index]
            if dx is None:
                return None  # no gradient: as in TensorFlow, this input is not reached
            x = inputs[index]
            shape = np.shape(x) if not isinstance(x, Tensor) else x.shape
            dshape = dx.shape if isinstance(dx, Tensor) else np.shape(dx)
            if not _fits(dshape, shape):  # summing it to the input would hide the error
                raise ShapeError(f"custom_gradient: the grad_fn of {_name(f)} returned a "
                                 f"gradient of shape {dshape} for input {index} of shape "
                                 f"{shape}")
            if m is ENGINE:
                return dx if isinstance(dx, Tensor) else constant(dx)
            return dx._value if isinstance(dx, Tensor) else as_value(dx)

        packed = (values[0] if single else
                  np.concatenate([np.reshape(v, -1) for v in values]) if values else values)
        # Forward mode, as TensorFlow's accumulators treat a function without a forward
        # rule: the transposition of grad_fn (J t is the gradient in dy of <grad_fn(dy), t>).
        # Only an accumulator active now can ask for it.
        jvps = (transposed(vjp, variadic=True),) if state.forward else ()
        op = Op(name=f"custom_gradient({_name(f)})", forward=lambda *_: packed,
                vjps=(vjp,), inputs=("xs",), variadic=True, jvps=jvps,
                doc="user-defined gradient", kind="custom")
        out = apply(op, tuple(xs) + tuple(variables))
        if single:
            return out
        outputs, start = [], 0
        for shape, size in zip(shapes, sizes):
            outputs.append(FUNCTIONS["reshape"](out[start:start + size], shape))
            start += size
        return pack(y, iter(outputs))
    return wrapper


def _run(f, xs, kwargs):
    """Call ``f(*xs, **kwargs)``; return ``(y, grad_fn, variables)``: the trainable
    variables it read, except those passed to it as arguments (as TensorFlow does: a
    positional one is an input, a keyword one is not differentiated).

    As in TensorFlow, ``f`` runs while the tapes record, so that a ``grad_fn`` closing
    over ``f``'s intermediates (``dy * y`` for ``y = exp(x)``) is connected to ``x`` when
    a tape differentiates its operations (second derivatives). Only a tape that records
    while a backward pass runs through this function can see those operations: one of
    several recording tapes, a persistent one, or one recording what an accumulator
    computes. A single non-persistent tape never does (its ``gradient()`` stops its
    recording), so for it, the first-order case, ``f``'s operations are not recorded at
    all: what it needs is the one entry that stands for the function, and the variables
    ``f`` read. (Only a tensor made inside ``f`` and kept outside it could tell: on that
    tape it is not connected, where TensorFlow's tape would have recorded it.)"""
    tapes = state.recording
    if not tapes:
        return (*pair(f, f(*xs, **kwargs)), [])
    aside = None
    if len(tapes) == 1 and not tapes[0].persistent and not state.forward:
        aside = tapes[:]
        del tapes[:]
    try:
        with GradientTape() as watcher:  # a tape of its own sees which variables f reads
            y, grad_fn = pair(f, f(*xs, **kwargs))
    finally:
        if aside is not None:
            tapes[:] = aside
    read = watcher.watched_variables()
    if any(isinstance(v, Batched) for v in read):
        raise NotBatchable("custom_gradient reading a batched variable")
    if aside is not None:
        # The tape watches what f read, as it would by recording f (a keyword argument's
        # variable too, whose gradient is then None).
        for trace in aside:
            if trace.watch_accessed:
                for v in read:
                    trace.tape._watch_variable(v)
    arguments = (*xs, *kwargs.values())
    variables = [v for v in read if v._trainable and all(v is not a for a in arguments)]
    return y, grad_fn, variables


def _takes_variables(grad_fn) -> bool:
    import inspect  # only here: a noticeable part of the command line's start-up
    try:
        params = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):
        return True  # cannot tell: let the call say
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in params)


def _fits(shape, target) -> bool:
    """Whether a gradient of ``shape`` broadcasts to its input's shape ``target``."""
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------
# Forward mode
# ---------------------------------------------------------------------------------------
def _own_primals(primals) -> list:
    """Each primal as a tensor of its own: an argument of ``f``, distinct from every
    other use of the same tensor (which stays constant, as a partial derivative holds
    it). A tensor is copied by a recorded identity, so outer tapes and accumulators still
    see through it (higher derivatives)."""
    if isinstance(primals, Tensor) or not isinstance(primals, (list, tuple)):
        raise TypeError("primals must be a list or tuple of arguments, one per parameter "
                        "of f (as jax.jvp takes them)")
    return [apply(INTERNAL["cast"], (p,), {"dtype": p.dtype}) if isinstance(p, (Tensor, Batched))
            else FUNCTIONS["stack"](p) if holds_tensor(p) else constant(p)
            for p in primals]


def _one_per_primal(caller: str, what: str, given, args: list) -> None:
    """Tangents (vectors) whose structure is not the primals' (not a list or tuple, or
    another count) raise ``TypeError``, as ``jax.jvp`` does; a tangent of the wrong
    shape is the accumulator's ``ValueError`` (also JAX's)."""
    if not isinstance(given, (list, tuple)) or len(given) != len(args):
        count = len(given) if isinstance(given, (list, tuple)) else f"a {type(given).__name__}"
        raise TypeError(f"{caller}: give one {what} per primal ({len(args)}) as a list or "
                        f"tuple, got {count}")


def jvp(f, primals, tangents):
    """``(f(*primals), J tangents)``: the value and the directional derivative of ``f``
    at ``primals`` along ``tangents`` (one per argument, of its shape), by forward mode,
    as ``jax.jvp``. The JVP has the value's structure; an output the arguments do not
    reach has a zero JVP.

    >>> value, derivative = jvp(lambda x, y: x * y, [3.0, 4.0], [1.0, 0.0])
    >>> float(value), float(derivative)
    (12.0, 4.0)
    """
    from .forward import ForwardAccumulator
    args = _own_primals(primals)
    _one_per_primal("jvp", "tangent", tangents, args)
    with ForwardAccumulator(args, list(tangents)) as acc:
        value = f(*args)
    if value is None:
        raise ValueError(f"the function {_name(f)} returned None; it must return a tensor")
    leaves = [t if isinstance(t, (Tensor, Batched)) else constant(t)
              for t in flatten(value, [])]
    value = pack(value, iter(leaves))
    return value, acc.jvp(value, unconnected_gradients="zero")


def hessian_vector_product(f, primals, vectors):
    """The Hessian of the scalar ``f`` at ``primals`` times ``vectors`` (one per argument,
    of its shape): one tensor per argument, ``sum_j H_ij v_j``. Forward-over-reverse: the
    tangent of the gradient along ``vectors``, never forming the Hessian (the cost of
    about one gradient, whatever the number of arguments).

    >>> hvp = hessian_vector_product(lambda x, y: x * x * y, [3.0, 2.0], [1.0, 0.0])
    >>> [float(h) for h in hvp]           # [[2y, 2x], [2x, 0]] @ [1, 0]
    [4.0, 6.0]
    """
    from .forward import ForwardAccumulator
    args = _own_primals(primals)
    _one_per_primal("hessian_vector_product", "vector", vectors, args)
    with ForwardAccumulator(args, list(vectors)) as acc:
        grads = gradients_function(f)(*args)
    # An argument the value does not reach has no gradient: its row of H is zero.
    return [acc.jvp(g, unconnected_gradients="zero") if g is not None
            else make_tensor(np.zeros(a.shape, dtype=a.dtype)[()] if not a.ndim
                       else np.zeros(a.shape, dtype=a.dtype))
            for g, a in zip(grads, args)]
