"""The shape of one entry of the function table, and the registry that holds them.

The table itself is filled by the rule modules (``gradcli.engine.rules``); this module only
defines what an entry is and holds the registry, so that
the language (``gradcli.lang``), the symbolic check (``gradcli.check``), the command
``gradcli functions`` and the tests can all read the same entries.
"""
from __future__ import annotations

import importlib
import operator
import re
import sys
from typing import Any, Callable

from .. import fast

# The fields a caller passes, in constructor order, and the ones derived from them.
_FIELDS = ("name", "forward", "vjps", "inputs", "doc", "derivative", "params", "sympy",
           "elementwise", "aliases", "variadic", "sample", "domain", "kind", "saves",
           "new_axis", "samples", "own_axes", "outputs", "api", "jvps", "batch")
_DERIVED = ("differentiable", "twins", "keeps_inputs", "keeps_ans", "reuse", "axis_params")


class _Slots:
    """Storage of an entry; ``Op`` (read-only) and ``_Filling`` (writable) share it."""
    __slots__ = _FIELDS + _DERIVED


class _Filling(_Slots):
    """An entry while ``Op.__new__`` fills it in, with plain (fast) slot assignments."""
    __slots__ = ()


class Op(_Slots):
    """One function of the table.

    - ``forward(*values, **params)`` computes on raw numpy values.
    - ``vjps`` has one rule per tensor input: ``vjp(m, g, ans, *inputs, **params)`` returns
      the gradient for that input (before un-broadcasting, which the backward pass does in
      one place). ``m`` is the namespace the rule computes in: ``numpy`` on the fast path, or
      ``gradcli.engine.ops`` (differentiable ops on Tensors) when an outer tape records, so
      the same rule gives higher derivatives. ``None`` marks an input that gets no gradient.
    - ``jvps`` has one forward-mode rule per tensor input, beside its VJP:
      ``jvp(m, t, ans, *inputs, **params)`` returns that input's contribution to the output
      tangent, given the input's tangent ``t`` (the forward pass sums the contributions and
      broadcasts them to the output's shape in one place, ``forward.propagate``). ``None``
      where the VJP is ``None``. A variadic entry's single rule takes the list of all the
      tangents (zeros for an input without one) and returns the output tangent.
    - ``batch``: the batching rule, how the entry treats inputs that carry a batch axis
      inside ``vectorized_map`` (see ``gradcli.engine.batching``): the name of a rule of
      that module ("elementwise", "axis", "loop", ...) or a function
      ``batch(op, values, batched, params)`` that returns the result with the batch as
      axis 0. By default "elementwise" for elementwise entries, "axis" for reductions
      and "loop" (one call per example, then a stack) for the rest.
    - ``inputs`` names the tensor inputs in order; ``params`` the static keyword parameters
      with their defaults (``axis``, ``keepdims``, a shape, ...), which may also be passed
      positionally after the inputs.
    - ``sympy(sp, *inputs, **params)`` builds the symbolic counterpart once sympy is imported
      (``sp`` is the sympy module). With ``elementwise=True`` inputs are sympy scalars and the
      caller broadcasts; otherwise they are numpy object arrays of sympy expressions.
    - ``variadic``: the single input is a sequence of tensors (``concatenate``, ``stack``).
    - ``saves``: which forward values the rules read ("all", "inputs", "ans", "none");
      the recorded node keeps only those (a rule sees a ``Shape`` for an input not kept).
    - ``sample``: an input range for the tests that keeps the function in its domain;
      ``domain`` says the same in words for ``gradcli functions``.
    - ``kind``: arithmetic, elementwise, binary, reduction, linalg, shape or constructor.
    - Parameters named ``axis`` or ``axes`` are axes (``axis_params``, found from the
      names): ``recording.apply`` normalises them once per call against the first input's rank
      (plus one with ``new_axis``, for entries such as ``stack`` whose axis indexes a new
      dimension of the result), so forwards, rules and the sympy counterpart see
      non-negative ints or tuples of them; out of range or repeated is a ``ShapeError``
      naming the function. See ``normalise_axes``.
    - ``new_axis``: see above. ``own_axes``: the entry reads its axis parameters itself
      (cross, tensordot: axes of both inputs), so they are not normalised.
    - Entries whose domain a range cannot describe (square, symmetric positive definite
      or batched matrices) also give ``samples(rng) -> [(label, args, params), ...]``:
      valid calls the table-wide tests run (built only when a test asks, never at import).
    - ``outputs``: for an entry returning several tensors (``eigh``: w, v), their names.
      The tape records one value per entry, so ``forward`` returns them packed into one
      array, and ``api`` makes the Python function that unpacks them into a tuple.
    - ``api(op, plain) -> function``: the Python API function, when it differs from the
      plain ``f(*inputs, *params)`` that ``plain`` is (``einsum`` takes its subscripts
      first; entries with ``outputs`` return a tuple).

    Derived when the entry is made: ``differentiable``, ``keeps_inputs`` and
    ``keeps_ans`` (from ``saves``), ``axis_params`` (the names of the parameters that are
    axes, normalised by apply); and when it is registered (``register``), the speed
    tricks ``gradcli.engine.fast`` keeps for its name: ``twins`` (in-place twins of the
    rules, ``fast.TWINS``) and ``reuse`` (a ufunc that may write the result into the first
    input's array, ``fast.REUSE``). An entry that is not the registered one of its name
    (made by ``Op()`` or ``replace``) has none: ``()`` and None.

    Entries are read-only (assigning an attribute raises ``AttributeError``: the derived
    fields would go stale), compared and hashed by identity, and ``replace(**changes)``
    makes a modified copy. A plain class rather than a frozen dataclass: the command line
    builds the whole table at every start, and ``dataclasses`` (its import, the class
    creation and ~5 µs per entry) was measured at ~3 ms of it (issue 14).
    """
    __slots__ = ()

    def __new__(cls, name: str, forward: Callable[..., Any],
                vjps: tuple[Callable[..., Any] | None, ...], inputs: tuple[str, ...], doc: str,
                derivative: str = "", params: tuple[tuple[str, Any], ...] = (),
                sympy: Callable[..., Any] | None = None, elementwise: bool = False,
                aliases: tuple[str, ...] = (), variadic: bool = False,
                sample: tuple[float, float] = (-2.0, 2.0), domain: str = "all reals",
                kind: str = "elementwise", saves: str = "all", new_axis: bool = False,
                samples: Callable[..., Any] | None = None, own_axes: bool = False,
                outputs: tuple[str, ...] = (), api: Callable[..., Any] | None = None,
                jvps: tuple[Callable[..., Any] | None, ...] = (),
                batch: str | Callable[..., Any] | None = None) -> Op:
        if saves not in ("all", "inputs", "ans", "none"):
            raise ValueError(f"{name}: saves must be all, inputs, ans or none")
        # Filled as a writable twin, then turned into an Op: plain slot stores cost a
        # third of object.__setattr__ calls, and entries are made at every start. (So a
        # subclass, like the twin, declares ``__slots__ = ()``: the layouts must match.)
        self = object.__new__(_Filling)
        self.name, self.forward, self.vjps, self.inputs, self.doc = (
            name, forward, vjps, inputs, doc)
        self.derivative, self.params, self.sympy, self.elementwise = (
            derivative, params, sympy, elementwise)
        self.aliases, self.variadic, self.sample, self.domain, self.kind, self.saves = (
            aliases, variadic, sample, domain, kind, saves)
        self.new_axis, self.samples, self.own_axes, self.outputs, self.api = (
            new_axis, samples, own_axes, outputs, api)
        self.jvps = jvps  # forward mode's rules (see above)
        self.batch = batch if batch is not None else (
            "elementwise" if elementwise else "axis" if kind == "reduction" else "loop")
        # Read on every recorded operation: computed once here.
        self.differentiable = any(v is not None for v in vjps)
        self.twins, self.reuse = (), None  # (the registered entry's: see register)
        self.keeps_inputs = saves in ("all", "inputs")
        self.keeps_ans = saves in ("all", "ans")
        axes = () if own_axes else tuple(p for p, _ in params if p in AXIS_NAMES)
        self.axis_params = axes
        if axes and sympy is not None:
            # The symbolic counterpart reads the same normalised axes as the forward.
            self.sympy = _normalising_sympy(self, sympy)
        self.__class__ = cls
        return self

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a table entry")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a table entry")

    def replace(self, **changes) -> Op:
        """A new entry with some constructor fields changed (``dataclasses.replace``):
        the derived fields are computed afresh, and the copy, not registered, has no twins
        and no ``reuse``."""
        return type(self)(**{f: changes.pop(f) if f in changes else getattr(self, f)
                             for f in _FIELDS}, **changes)

    __replace__ = replace  # copy.replace (Python 3.13)

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS + _DERIVED)
        return f"Op({fields})"


# Parameters with these names are axes of the first input (see Op, normalise_axes).
AXIS_NAMES = ("axis", "axes")


def normalise_axes(op: Op, ndim: int, params: dict) -> dict:
    """``params`` with every axis parameter of ``op`` made non-negative for an input of
    ``ndim`` dimensions (a new dict; ``params`` itself is returned when no axis is given).

    An int stays an int, a tuple or list becomes a tuple (its order kept: ``transpose``'s
    axes are a permutation). As in numpy, a 0-d input takes axis 0 or -1 (None, all of
    it, for a reduction). An axis out of range, repeated, or not an integer is a
    ``ShapeError`` naming the function.

    >>> from gradcli.engine.core.table import REGISTRY
    >>> normalise_axes(REGISTRY["transpose"], 2, {"axes": (-1, 0)})
    {'axes': (1, 0)}
    """
    for name in op.axis_params:
        if params.get(name) is not None:
            break
    else:
        return params
    rank = max(ndim + op.new_axis, 1)
    out = dict(params)
    defaults = dict(op.params)
    for name in op.axis_params:
        value = params.get(name)
        if value is None:
            continue
        if rank > ndim + op.new_axis and name == "axis" and defaults[name] is None:
            # A 0-d input's axis 0 or -1 is all of it: None, which every forward takes
            # (numpy's mean refuses axis=0 on a 0-d array where its sum accepts it).
            for a in value if isinstance(value, (tuple, list)) else (value,):
                _one_axis(op, name, a, rank, ndim)
            out[name] = None
            continue
        if isinstance(value, (tuple, list)):
            axes = tuple(_one_axis(op, name, a, rank, ndim) for a in value)
            if len(set(axes)) != len(axes):
                raise _shape_error(f"{op.name}: repeated axis in {name}={tuple(value)!r}")
            out[name] = axes
        else:
            out[name] = _one_axis(op, name, value, rank, ndim)
    return out


def _one_axis(op: Op, name: str, value, rank: int, ndim: int) -> int:
    try:
        if value.__class__ is bool or getattr(value, "dtype", None) == bool:
            raise TypeError
        axis = operator.index(value)
    except TypeError:
        raise _shape_error(f"{op.name}: {name} must be an integer or a tuple of integers, "
                           f"got {value!r}") from None
    if not -rank <= axis < rank:
        dims = "dimension" if ndim == 1 else "dimensions"
        raise _shape_error(f"{op.name}: axis {axis} is out of range for an input of {ndim} "
                           f"{dims} (its axes run from {-rank} to {rank - 1})")
    return axis % rank


def _shape_error(message: str):
    from ...errors import ShapeError
    return ShapeError(message)


def _normalising_sympy(op: Op, sympy: Callable) -> Callable:
    def build(sp, *inputs, **params):
        if params:
            first = inputs[0] if inputs else None
            params = normalise_axes(op, len(getattr(first, "shape", ())), params)
        return sympy(sp, *inputs, **params)
    return build


# ---------------------------------------------------------------------------------------
# Rule modules loaded on demand (issue 14): a rule module given to ``on_demand`` (see
# rules/__init__.py) is imported the first time one of its names is needed, not at every
# start. Its names are read from its own source, never kept in a list: each entry there is
# made by a call with ``name="..."`` (``derive.entry``, or a helper passing the name on),
# its aliases are written ``aliases=(...)``, and tests/engine/test_table_on_demand.py checks that
# the names read are the ones the module registers. The containers below look complete to
# every reader: a name they do not hold loads the module that defines it, and a read of
# the whole (iteration, len, keys, items, ...) loads every pending module first; a hit
# costs nothing more (dict's own __getitem__; __missing__ runs only on a miss).
# ---------------------------------------------------------------------------------------
#: The rule modules not imported yet, in the table's order: module name -> source file.
PENDING: dict[str, str] = {}
#: Called after a pending module registered its entries (``core.recording.publish``).
AFTER_LOADING: list = []
_SOURCES: dict[str, str] = {}
_NAME = re.compile(r'name="(\w+)"')
_ALIASES = re.compile(r"aliases=\(([^)]*)\)")
_QUOTED = re.compile(r'"(\w+)"')


def on_demand(module: str, source: str) -> None:
    """Have ``module`` (a rule module, its file ``source``) imported on first need."""
    PENDING[module] = source


def defined_names(module: str) -> set[str]:
    """The names and aliases a pending rule module defines, read from its source."""
    source = _source(module)
    names = set(_NAME.findall(source))
    for group in _ALIASES.findall(source):
        names.update(_QUOTED.findall(group))
    return names


def _source(module: str) -> str:
    text = _SOURCES.get(module)
    if text is None:
        with open(PENDING[module], encoding="utf-8") as f:
            text = _SOURCES[module] = f.read()
    return text


def _defines(module: str, name: str) -> bool:
    """``name in defined_names(module)``, answered with a substring search or two (asked of
    every name a program declares: a variable's name must cost next to nothing)."""
    source = _source(module)
    if f'name="{name}"' in source:
        return True
    quoted = f'"{name}"'
    return quoted in source and any(quoted in group for group in _ALIASES.findall(source))


def load_defining(name: str) -> None:
    """Import the pending rule module that defines ``name``, if any."""
    for module in list(PENDING):
        if module in PENDING and _defines(module, name):
            _load(module)
            return


def complete() -> None:
    """Import every pending rule module (a no-op once done)."""
    for module in list(PENDING):
        if module in PENDING and not _load(module):
            return


def _load(module: str) -> bool:
    """Import a pending module and publish its entries; False (not yet) while it is being
    imported (its own reads of the table come here)."""
    loaded = sys.modules.get(module)
    if loaded is not None and getattr(loaded.__spec__, "_initializing", False):
        return False
    importlib.import_module(module)
    for name in list(PENDING):  # (a module may import another first: their table order)
        done = sys.modules.get(name)
        if done is not None and not getattr(done.__spec__, "_initializing", False):
            del PENDING[name]
    for publish in AFTER_LOADING:
        publish()
    return True


class LazyTable(dict):
    """A dict of the table (``REGISTRY``, ``recording.FUNCTIONS``, ``INTERNAL``) that
    completes the table before it answers a miss of a pending name or a read of the
    whole."""
    __slots__ = ()

    def __missing__(self, key):
        if PENDING and isinstance(key, str):
            load_defining(key)
            if dict.__contains__(self, key):
                return dict.__getitem__(self, key)
        raise KeyError(key)

    def get(self, key, default=None):
        if PENDING and isinstance(key, str) and not dict.__contains__(self, key):
            load_defining(key)
        return dict.get(self, key, default)

    def __contains__(self, key) -> bool:
        # Asked of every name a program declares or reads: answered from the names the
        # pending modules define, so that a variable's name loads nothing.
        if dict.__contains__(self, key):
            return True
        if PENDING and isinstance(key, str):
            load_defining(key)
            return dict.__contains__(self, key)
        return False

    def __bool__(self) -> bool:
        return dict.__len__(self) > 0  # (the loaded entries alone answer this)

    def __iter__(self):
        complete()
        return dict.__iter__(self)

    def __len__(self) -> int:
        complete()
        return dict.__len__(self)

    def __reversed__(self):
        complete()
        return dict.__reversed__(self)

    def keys(self):
        complete()
        return dict.keys(self)

    def values(self):
        complete()
        return dict.values(self)

    def items(self):
        complete()
        return dict.items(self)

    def copy(self) -> dict:
        complete()
        return dict(dict.items(self))

    def __eq__(self, other) -> bool:
        complete()
        return dict.__eq__(self, other)

    __hash__ = None

    def __repr__(self) -> str:
        complete()
        return dict.__repr__(self)


class LazyOrder(list):
    """``ORDER``: the canonical names in listing order, completed and arranged before any
    read (see ``register``)."""
    __slots__ = ()

    def __iter__(self):
        _arrange()
        return list.__iter__(self)

    def __len__(self) -> int:
        _arrange()
        return list.__len__(self)

    def __getitem__(self, index):
        _arrange()
        return list.__getitem__(self, index)

    def __contains__(self, item) -> bool:
        _arrange()
        return list.__contains__(self, item)

    def __reversed__(self):
        _arrange()
        return list.__reversed__(self)

    def __bool__(self) -> bool:
        return list.__len__(self) > 0

    def index(self, *args):
        _arrange()
        return list.index(self, *args)

    def count(self, item) -> int:
        _arrange()
        return list.count(self, item)

    def copy(self) -> list:
        _arrange()
        return list(list.__iter__(self))

    def __add__(self, other) -> list:
        _arrange()
        return list(list.__iter__(self)) + other

    def __eq__(self, other) -> bool:
        _arrange()
        return list.__eq__(self, other)

    __hash__ = None

    def __repr__(self) -> str:
        _arrange()
        return list.__repr__(self)


# name or alias -> Op; filled by the rule modules when imported.
REGISTRY: dict[str, Op] = LazyTable()
# canonical names in listing order (what `gradcli functions` lists): see register.
ORDER: list[str] = LazyOrder()
# Internal entries serve the backward rules (broadcast_to, sum_to, getitem, scatter, ...);
# they are differentiable like any entry but are not part of the language.
INTERNAL: dict[str, Op] = LazyTable()


def register(op: Op, listed_after: str | None = None) -> Op:
    """Make ``op`` the table's entry of its name and aliases, with the speed tricks
    ``gradcli.engine.fast`` keeps for that name (the one place an entry gets them).

    The listing order (``ORDER``, ``gradcli functions``) is the order of registration:
    the rule modules in the order rules/__init__.py names them, each in the order of its
    source; except an entry registered ``listed_after`` another, which is listed right
    after that one (after the ones listed after it before). Six entries say so: the
    order the table had in one file before it was split by kind (issue 21), kept for the
    users' sake, where a rule module now holds the entry elsewhere."""
    for key in (op.name, *op.aliases):
        if dict.__contains__(REGISTRY, key):  # (not `in`: that would load what is pending)
            raise RuntimeError(f"function table: {key!r} defined twice")
        REGISTRY[key] = op
    list.append(ORDER, op.name)
    _ARRANGED[:] = ()
    if listed_after is not None:
        _LISTED_AFTER[op.name] = listed_after
    twins, reuse = fast.speedups(op)
    if twins or reuse is not None:
        object.__setattr__(op, "twins", twins)  # (past Op's refusal: derived fields)
        object.__setattr__(op, "reuse", reuse)
    return op


# name -> the name it is listed after (register's listed_after); _ARRANGED is empty while
# ORDER may not be in listing order.
_LISTED_AFTER: dict[str, str] = {}
_ARRANGED: list = []


def _arrange() -> None:
    """Complete the table, then put ``ORDER`` in listing order (see ``register``): each
    name stated ``listed_after`` another right after it, the others as registered."""
    complete()
    if _ARRANGED:
        return
    followers: dict[str, list[str]] = {}
    for name in list.__iter__(ORDER):
        if name in _LISTED_AFTER:
            followers.setdefault(_LISTED_AFTER[name], []).append(name)
    arranged = []
    for name in list.__iter__(ORDER):
        if name in _LISTED_AFTER:
            continue
        stack = [name]
        while stack:
            name = stack.pop()
            arranged.append(name)
            stack.extend(reversed(followers.pop(name, ())))
    if followers and not PENDING:
        raise RuntimeError(f"function table: listed after no entry: {sorted(followers)}")
    # (while a rule module is being imported, the ones whose entry is still to come last)
    ORDER[:] = arranged + [name for names in followers.values() for name in names]
    if not followers:
        _ARRANGED.append(True)


def register_internal(op: Op) -> Op:
    """An entry the rules use that the language does not offer (registered again, it
    replaces the earlier one)."""
    INTERNAL[op.name] = op
    return op


def lookup(name: str) -> Op | None:
    """The entry for a name or alias, or None."""
    return REGISTRY.get(name)

