"""Values: the immutable ``Tensor`` and the mutable, named ``Variable``.

A tensor holds a numpy value (an ``ndarray`` or a numpy scalar such as ``np.float64``;
numpy scalars keep scalar arithmetic fast) and, once a tape traces it, a ``Node`` of the
recorded graph. Nodes point to their parents' nodes, never to tensors, and keep only the
values their backward rules read (as TensorFlow keeps only what each gradient function
needs): an intermediate that no rule needs is freed as soon as the program drops it.

>>> x = constant(3.0)
>>> (x * x).numpy()
np.float64(9.0)
"""
from __future__ import annotations

import itertools
import weakref
from operator import itemgetter

import numpy as np

_F64 = np.dtype(np.float64)


def as_value(x, dtype=None):
    """Convert anything array-like to the engine's value type.

    Floats become float64 unless float32 is asked for (or the data already is float32);
    Python and numpy integers become float64 (a calculator user who types 3 means 3.0);
    booleans stay boolean and are never differentiable. Scalars are numpy scalars.
    """
    if x.__class__ is np.ndarray and dtype is None and x.dtype == _F64 and x.ndim:
        return x  # already what the engine computes with (the common case)
    if isinstance(x, Tensor):
        x = x._value
    elif isinstance(x, Batched):  # (said here, before numpy's conversion protocol runs)
        raise NotBatchable("a numpy conversion of a batched value reads it as a plain "
                           "value (data-dependent Python code)")
    try:
        arr = np.asarray(x)
    except ValueError as err:  # a ragged nested list: the library's own shape error
        from ...errors import ShapeError
        raise ShapeError(f"cannot make a tensor from {type(x).__name__}: "
                         f"{str(err).splitlines()[0]}") from None
    if arr.dtype == np.bool_ and dtype is None:
        return arr[()] if arr.ndim == 0 else arr
    if dtype is None:
        dtype = np.float32 if arr.dtype == np.float32 else np.float64
    else:
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a tensor from {type(x).__name__} of dtype {arr.dtype}")
    arr = arr.astype(dtype, copy=False)
    return arr[()] if arr.ndim == 0 else arr


class Tensor:
    """An immutable numpy-backed value that tapes can record operations on."""

    __slots__ = ("_value", "_node")
    # numpy must hand `ndarray * tensor` to Tensor.__rmul__ instead of converting us (until
    # gradcli.engine.methods installs the dispatch of numpy functions to the table).
    __array_ufunc__ = None

    def __init__(self, value, dtype=None):
        self._value = as_value(value, dtype)
        self._node = None     # its Node once a tape traces it

    # --- reading ---------------------------------------------------------------------
    def numpy(self):
        """The value as numpy (a numpy scalar for shape ``()``)."""
        return self._value

    # (read off the numpy value: np.shape and friends cost ~1 us through numpy's function
    # dispatch, and the backward pass reads shapes at every edge)
    @property
    def shape(self) -> tuple:
        try:
            return self._value.shape
        except AttributeError:  # (a value that is no numpy object)
            return np.shape(self._value)

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self) -> int:
        try:
            return self._value.ndim
        except AttributeError:
            return np.ndim(self._value)

    @property
    def size(self) -> int:
        try:
            return self._value.size
        except AttributeError:
            return int(np.size(self._value))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        """``int(t)`` truncates toward zero, as numpy's ``int(np.float64(2.7))`` and
        TensorFlow's give 2 (only a one-element index needs an integer dtype: ``__index__``)."""
        return int(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __array__(self, dtype=None, copy=None):
        arr = np.asarray(self._value)
        return arr if dtype is None else arr.astype(dtype)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        kind = type(self).__name__
        return f"<gradcli.{kind} shape={self.shape} dtype={self.dtype} numpy={self._value!r}>"

    __hash__ = object.__hash__


class NotBatchable(Exception):
    """A batched value (inside ``vectorized_map``) was read as one number or array, as
    data-dependent Python code does (``if x > 0``, ``float(x)``): the map then runs the
    function once per example instead (see ``gradcli.engine.batching``)."""


class Batched:
    """A value inside ``vectorized_map``: one tensor per example, held as one tensor
    ``_tensor`` whose axis 0 is the batch. It reads as one example (``shape``, ``ndim``,
    ``len``); operations on it go to the entries' batching rules (installed on the
    class by ``gradcli.engine.batching``, the only module that makes these)."""

    __slots__ = ("_tensor", "__weakref__")
    __array_ufunc__ = None

    def __init__(self, tensor: Tensor):
        self._tensor = tensor

    @property
    def shape(self) -> tuple:
        return self._tensor.shape[1:]

    @property
    def dtype(self):
        return self._tensor.dtype

    @property
    def ndim(self) -> int:
        return self._tensor.ndim - 1

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def _unbatchable(read: str):
        def unbatchable(self, *args, **kwargs):
            raise NotBatchable(f"{read} of a batched value reads it as a plain value "
                               f"(data-dependent Python code)")
        return unbatchable

    numpy = _unbatchable(".numpy()")
    __float__ = _unbatchable("float()")
    __int__ = _unbatchable("int()")
    __index__ = _unbatchable("an index")
    __bool__ = _unbatchable("a truth test (if, while, and, or)")
    __array__ = _unbatchable("a numpy conversion")
    del _unbatchable

    def __repr__(self) -> str:
        return f"<gradcli.Batched per-example shape={self.shape} batch={self._tensor.shape[0]}>"

    __hash__ = object.__hash__


class BatchedVariable(Batched):
    """A variable made inside ``vectorized_map`` from a batched value
    (``Variable(x)`` with ``x`` batched): one variable per example, held as one
    ``Variable`` (``_tensor``, batch on axis 0). Reading it under a tape watches it, and
    its gradients come out per example, like any batched value's."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return self._tensor._name

    @property
    def trainable(self) -> bool:
        return self._tensor._trainable

    _name, _trainable = name, trainable  # (what the engine's own code reads)

    def assign(self, value):
        """Replace every example's value: a batched value example by example, a plain
        one for every example. Returns self."""
        if isinstance(value, Batched):
            value = value._tensor._value
        else:
            value = np.broadcast_to(as_value(value, self.dtype), self._tensor.shape)
        self._tensor.assign(value)
        return self

    def assign_add(self, delta):
        delta = delta._tensor._value if isinstance(delta, Batched) else as_value(delta)
        return self.assign(Batched(Tensor(self._tensor._value + delta)))

    def assign_sub(self, delta):
        delta = delta._tensor._value if isinstance(delta, Batched) else as_value(delta)
        return self.assign(Batched(Tensor(self._tensor._value - delta)))

    def __repr__(self) -> str:
        return (f"<gradcli.BatchedVariable {self.name!r} per-example shape={self.shape} "
                f"batch={self._tensor.shape[0]}>")


# The batched variables alive, by the id of the Variable each holds: a tape that watches
# that Variable reports the batched variable (see GradientTape.watched_variables).
BATCHED_VARIABLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def make_tensor(value, node=None) -> Tensor:
    """A fresh tensor around an engine value (no conversion: the hot path)."""
    t = object.__new__(Tensor)
    t._value = value
    t._node = node
    return t


class Node:
    """A value in a recorded graph.

    - ``op``: the table entry that computed it (None for a watched leaf or a variable);
    - ``parents``: for each input, the input's node (None for a plain number or an input
      no tape traced);
    - ``values``: the input values the rules read (an input a rule does not read is kept
      as its ``Shape`` only); ``ans``: the output value, when a rule reads it;
    - ``params``: the entry's static parameters; ``tapes``: the traces that recorded it;
      ``seq``: its place in recording order (the backward pass's topological order).

    Forward accumulators hold nodes weakly (their tangents die with them).
    """
    __slots__ = ("op", "parents", "values", "ans", "params", "tapes", "seq", "__weakref__")

    def __init__(self, op=None, parents=(), values=(), ans=None, params=None, tapes=(),
                 seq=0):
        self.op = op
        self.parents = parents
        self.values = values
        self.ans = ans
        self.params = params
        self.tapes = tapes
        self.seq = seq


class Shape(tuple):
    """What a node keeps of a large input its rules do not read: shape and dtype.

    ``Shape((value.shape, value.dtype))``: a tuple with read-only attributes, made and
    read without a Python frame, since one is made per unread input of every recorded
    operation."""
    __slots__ = ()
    shape = property(itemgetter(0))
    dtype = property(itemgetter(1))


_creation = itertools.count()


class Variable(Tensor):
    """A named, mutable value. Reading a trainable variable under a tape makes the tape
    watch it (unless the tape was made with ``watch_accessed_variables=False``).

    >>> w = Variable(2.0, name="w")
    >>> w.assign_add(1.0).numpy()
    np.float64(3.0)
    """

    __slots__ = ("_trainable", "_name", "_order")

    def __new__(cls, initial_value=None, *args, **kwargs):
        if isinstance(initial_value, Batched):  # inside vectorized_map: one per example
            return _batched_variable(initial_value, *args, **kwargs)
        return object.__new__(cls)

    def __init__(self, initial_value, trainable: bool = True, name: str | None = None,
                 dtype=None):
        if isinstance(initial_value, Variable):
            initial_value = initial_value._value
        super().__init__(initial_value, dtype)
        if self._value.dtype == np.bool_:
            raise TypeError("a Variable must hold floats, not booleans")
        self._node = Node()  # a leaf: tapes that watch the variable hold this node's id
        self._trainable = bool(trainable)
        self._order = next(_creation)
        self._name = name if name is not None else f"Variable:{self._order}"

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def name(self) -> str:
        return self._name

    def assign(self, value):
        """Replace the value (same shape; converted to this variable's dtype). Returns self.

        Gradients use the value at the time ``gradient`` runs, so assign after taking the
        gradient, as an optimizer step does."""
        new = as_value(value, self._value.dtype)
        if np.shape(new) != self.shape:
            raise ValueError(f"cannot assign a value of shape {np.shape(new)} "
                             f"to variable {self._name!r} of shape {self.shape}")
        self._value = new
        return self

    def assign_add(self, delta):
        return self.assign(self._value + as_value(delta, self._value.dtype))

    def assign_sub(self, delta):
        return self.assign(self._value - as_value(delta, self._value.dtype))

    def __repr__(self) -> str:
        return (f"<gradcli.Variable {self._name!r} shape={self.shape} dtype={self.dtype} "
                f"trainable={self._trainable} numpy={self._value!r}>")


def _batched_variable(value: Batched, trainable: bool = True, name: str | None = None,
                      dtype=None) -> BatchedVariable:
    variable = Variable(value._tensor, trainable=trainable, name=name, dtype=dtype)
    out = BatchedVariable(variable)
    BATCHED_VARIABLES[id(variable)] = out
    return out


def constant(value, dtype=None) -> Tensor:
    """A tensor from a Python number, list or numpy array (float64 unless float32 asked)."""
    if isinstance(value, Tensor) and dtype is None:
        return make_tensor(value._value)
    return Tensor(value, dtype)


def shape_of(x) -> tuple:
    """The shape of a tensor, a numpy value, a ``Shape`` or a Python number."""
    shape = getattr(x, "shape", None)
    return shape if shape is not None else np.shape(x)
