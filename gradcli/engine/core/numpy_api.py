"""numpy's functions given tensors: the gradcli function that computes each with numpy's
meaning, found by the numpy function itself.

numpy hands ``np.sum(t, 0)`` or ``np.linalg.norm(t, 1)`` to ``Tensor.__array_function__``
(engine/methods.py), which asks ``compute`` here. The answer is looked up by the
numpy function object, never by its bare name: ``np.linalg.norm``, ``np.linalg.trace``
and ``np.emath.sqrt`` share names with table entries of other signatures or meanings.
numpy's own signature binds the arguments, so a positional argument means what it
means in numpy (``np.linalg.norm(t, 1)``'s 1 is ``ord``, ``np.nan_to_num(t, True, 5.0)``'s
True is ``copy``). Each line below says which gradcli function computes a numpy
function and how numpy's parameters become its call::

    _numpy(np.sum, "a | axis keepdims", "sum")

- before ``|``: numpy's names of the tensor inputs, passed on in order (``*arys`` for
  numpy's ``*args``); after: the parameters passed on as keywords (``np:gc`` renames
  one; ``~name`` is read and ignored, for parameters that cannot change the result:
  ``overwrite_input``, a sort's ``kind``);
- every other parameter must keep numpy's default (``out=None``, ``dtype=None``, ...);
- then the table function; or ``call``, a function of the translated arguments, for the
  few that need more (``np.linalg.eigh``'s ``UPLO``), which may answer ``UNSUPPORTED``.

A call with no counterpart (a numpy function not listed, or an argument gradcli does not
take) is answered with the reason instead; methods.py then computes numpy's function on
the plain values, which keeps numpy's meaning, or raises ``TypeError`` where that would
lose a gradient a tape is recording. Results numpy returns as a list or a named tuple
(``np.split``, ``np.linalg.eigh``) are gradcli's tuples of tensors.

>>> import numpy as np, gradcli as gc
>>> a = gc.constant([[2.0, -1.0], [1.0, 3.0]])
>>> float(np.linalg.norm(a, 1)), np.linalg.norm(a, None, 1).numpy().round(3).tolist()
(4.0, [2.236, 3.162])
"""
from __future__ import annotations

import inspect

import numpy as np

from .recording import FUNCTIONS

#: numpy's marker for a parameter not given (``keepdims=<no value>``)
NO_VALUE = getattr(np, "_NoValue", object())
#: what a ``call`` answers for arguments it cannot take: numpy then computes
UNSUPPORTED = object()
_REQUIRED = inspect.Parameter.empty


class _Counterpart:
    """How one numpy function is computed by gradcli (see the module's docstring)."""

    __slots__ = ("func", "inputs", "star", "params", "ignored", "target", "call", "fixed",
                 "_signature")

    def __init__(self, func, spec: str, target: str, call, fixed: dict):
        inputs, _, params = spec.partition("|")
        names = inputs.split()
        self.star = bool(names) and names[0].startswith("*")  # numpy's *args: the inputs
        self.inputs = tuple(n.lstrip("*") for n in names)
        self.params, self.ignored = {}, set()
        for word in params.split():
            if word.startswith("~"):
                self.ignored.add(word[1:])
            else:
                np_name, _, gc_name = word.partition(":")
                self.params[np_name] = gc_name or np_name
        self.func, self.target, self.call, self.fixed = func, target, call, fixed
        self._signature = None

    def signature(self) -> tuple:
        """numpy's parameters, read once (inspect costs tens of microseconds): positional
        names, keyword names, the ``*args`` name, whether ``**kwargs`` is taken, the
        defaults, the required names, and the gradcli keywords every call starts from
        (``fixed`` and numpy's defaults of the parameters passed on)."""
        if self._signature is None:
            positional, keywords, star, double_star, defaults = [], set(), None, False, {}
            for p in inspect.signature(self.func).parameters.values():
                if p.kind is p.VAR_POSITIONAL:
                    star = p.name
                elif p.kind is p.VAR_KEYWORD:
                    double_star = True
                else:
                    if p.kind is not p.KEYWORD_ONLY:
                        positional.append(p.name)
                    if p.kind is not p.POSITIONAL_ONLY:
                        keywords.add(p.name)
                    defaults[p.name] = p.default
            required = tuple(n for n, d in defaults.items() if d is _REQUIRED)
            base = dict(self.fixed)
            for name, gc_name in self.params.items():  # numpy's defaults, where they differ
                default = defaults.get(name, NO_VALUE)
                if default is not NO_VALUE and default is not _REQUIRED:
                    base[gc_name] = default
            self._signature = (tuple(positional), keywords, star, double_star, defaults,
                               required, base)
        return self._signature

    def translate(self, args, kwargs):
        """(inputs, keywords) of the gradcli call, numpy's arguments bound by numpy's
        signature (``**kwargs`` entries by their own names); or a string saying why
        there is none."""
        positional, keywords, star, double_star, defaults, required, base = \
            self._signature or self.signature()
        if len(args) > len(positional) and star is None:
            return "arguments that do not fit numpy's signature"
        values = dict(zip(positional, args))
        if star is not None:
            values[star] = args[len(positional):]
        for key, value in kwargs.items():
            if key in values or (key not in keywords and not double_star):
                return "arguments that do not fit numpy's signature"
            values[key] = value
        for name in required:
            if name not in values:
                return "arguments that do not fit numpy's signature"
        call = dict(base)
        params, inputs = self.params, self.inputs
        for name, value in values.items():
            gc_name = params.get(name)
            if gc_name is not None:
                if value is not NO_VALUE:
                    call[gc_name] = value
            elif name not in inputs and name not in self.ignored \
                    and not _is_default(value, defaults.get(name)):
                return f"{name}={_short(value)}"
        if self.star:
            return list(values[inputs[0]]), call
        return [values.get(name, defaults.get(name)) for name in inputs], call

    def __call__(self, inputs, keywords):
        if self.call is not None:
            return self.call(*inputs, **keywords)
        return FUNCTIONS[self.target](*inputs, **keywords)


def _is_default(value, default) -> bool:
    if value is default:
        return True
    if default is None or default is NO_VALUE or default is _REQUIRED:
        return False
    return type(value) is type(default) and value == default


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def compute(func, args, kwargs):
    """``(result, None)``: numpy's ``func(*args, **kwargs)`` computed by gradcli (the
    gradient kept); or ``(UNSUPPORTED, reason)`` where gradcli has no counterpart, the
    reason naming the function as ``{name}`` (the caller knows how to write it)."""
    entry = _table().get(func)
    if entry is None:
        return UNSUPPORTED, "gradcli has no function with {name}'s meaning"
    try:
        translated = entry.translate(args, kwargs)
    except (TypeError, ValueError):  # numpy's signature unreadable: numpy decides
        return UNSUPPORTED, "gradcli cannot read the signature of {name}"
    if not isinstance(translated, str):
        result = entry(*translated)
        if result is not UNSUPPORTED:
            return result, None
        translated = "these arguments"
    return UNSUPPORTED, f"gradcli.{entry.target} does not compute {{name}} with {translated}"


# --- the counterparts that need more than renaming -------------------------------------
def from_triangle(a, upper: bool):
    """The symmetric matrix that numpy's eigh and cholesky read from one triangle of
    ``a`` (the other triangle is never read, so its gradient is 0)."""
    f = FUNCTIONS
    if upper:
        return f["triu"](a) + f["swapaxes"](f["triu"](a, 1), -1, -2)
    return f["tril"](a) + f["swapaxes"](f["tril"](a, -1), -1, -2)


def _eigh(a, UPLO="L"):  # noqa: N803 (numpy's name)
    if UPLO not in ("L", "U", "l", "u"):
        return UNSUPPORTED
    return FUNCTIONS["eigh"](a, UPLO)  # (gradcli's eigh takes numpy's signature)


def _cholesky(a, upper=False):
    lower = FUNCTIONS["cholesky"](from_triangle(a, bool(upper)))
    return FUNCTIONS["swapaxes"](lower, -1, -2) if upper else lower


def _clip(a, a_min=NO_VALUE, a_max=NO_VALUE, min=NO_VALUE, max=NO_VALUE):  # noqa: A002
    if (a_min is not NO_VALUE and min is not NO_VALUE) or \
            (a_max is not NO_VALUE and max is not NO_VALUE):
        return UNSUPPORTED  # numpy refuses both spellings at once
    lo = min if a_min is NO_VALUE else a_min
    hi = max if a_max is NO_VALUE else a_max
    return FUNCTIONS["clip"](a, None if lo is NO_VALUE else lo, None if hi is NO_VALUE else hi)


def _where(condition, x=None, y=None):
    if x is None or y is None:  # np.where(c) alone: the indices of c, not a selection
        return UNSUPPORTED
    return FUNCTIONS["where"](condition, x, y)


def _einsum(*operands):
    if not operands:
        return UNSUPPORTED
    return FUNCTIONS["einsum"](*operands)  # (the subscripts string, or numpy's sublists)


def _at_least(name):
    def at_least(*arys):
        if not arys:
            return UNSUPPORTED
        out = tuple(FUNCTIONS[name](a) for a in arys)
        return out[0] if len(out) == 1 else out
    return at_least


def _statistic(name):
    def statistic(a, axis=None, ddof=0, keepdims=False, correction=NO_VALUE):
        if correction is not NO_VALUE:  # the array API's name of ddof
            if ddof != 0:
                return UNSUPPORTED  # numpy refuses both
            ddof = correction
        return FUNCTIONS[name](a, axis=axis, keepdims=keepdims, ddof=ddof)
    return statistic


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    if returned is not False:  # (average, sum of weights): numpy computes it
        return UNSUPPORTED
    if weights is None:
        return FUNCTIONS["mean"](a, axis=axis, keepdims=keepdims)
    return FUNCTIONS["average"](a, weights, axis=axis, keepdims=keepdims)


def _ndim(x) -> int:
    return len(getattr(x, "shape", np.shape(x)))


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy's cross of 3-vectors (gradcli's cross reads axisa, axisb and axisc as numpy
    does; numpy's ``axis`` is all three, each read against its own array)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    try:
        fits = np.shape(a)[axisa] == 3 and np.shape(b)[axisb] == 3
    except (IndexError, TypeError):
        fits = False
    if not fits:  # numpy's 2-vectors (deprecated), axes out of range: numpy decides
        return UNSUPPORTED
    return FUNCTIONS["cross"](a, b, axisa, axisb, axisc)


def _linalg_cross(x1, x2, axis=-1):
    return _cross(x1, x2, axis=axis)


def _linalg_outer(x1, x2):
    if _ndim(x1) != 1 or _ndim(x2) != 1:  # numpy.linalg.outer refuses (np.outer flattens)
        return UNSUPPORTED
    return FUNCTIONS["outer"](x1, x2)


def _pad(array, pad_width, mode="constant", constant_values=0.0):
    if mode != "constant":
        return UNSUPPORTED
    return FUNCTIONS["pad"](array, pad_width, constant_values=constant_values)


# --- the table ---------------------------------------------------------------------------
_TABLE: dict | None = None


def _table() -> dict:
    global _TABLE
    if _TABLE is None:
        _TABLE = {}
        _build(_TABLE)
    return _TABLE


def _build(table: dict) -> None:
    linalg = np.linalg

    def _numpy(func, spec, target, call=None, **fixed):
        if func is not None:  # (absent from an older numpy: np.linalg.trace, ...)
            table[func] = _Counterpart(func, spec, target, call, fixed)

    def _linalg_numpy(name, spec, target, call=None, **fixed):
        _numpy(getattr(linalg, name, None), spec, target, call, **fixed)

    # reductions and statistics
    for name in ("sum", "mean", "prod", "max", "min"):
        _numpy(getattr(np, name), "a | axis keepdims", name)
    _numpy(getattr(np, "amax", None), "a | axis keepdims", "max")
    _numpy(getattr(np, "amin", None), "a | axis keepdims", "min")
    _numpy(np.var, "a | axis ddof keepdims correction", "var", _statistic("var"))
    _numpy(np.std, "a | axis ddof keepdims correction", "std", _statistic("std"))
    _numpy(np.average, "a | axis weights returned keepdims", "average", _average)
    _numpy(np.median, "a | axis keepdims ~overwrite_input", "median")
    _numpy(np.sort, "a | axis ~kind ~stable", "sort")
    _numpy(np.argmax, "a | axis keepdims", "argmax")
    _numpy(np.argmin, "a | axis keepdims", "argmin")
    _numpy(np.cumsum, "a | axis", "cumsum")
    _numpy(np.cumprod, "a | axis", "cumprod")
    _numpy(np.diff, "a | n axis", "diff")
    # elementwise functions that are not ufuncs
    _numpy(np.nan_to_num, "x | ~copy nan posinf neginf", "nan_to_num")
    _numpy(np.sinc, "x", "sinc")
    _numpy(np.fix, "x", "trunc")
    _numpy(np.clip, "a | a_min a_max min max", "clip", _clip)
    _numpy(np.where, "condition x y", "where", _where)
    # shape functions
    _numpy(np.reshape, "a | shape newshape:shape", "reshape")
    _numpy(np.transpose, "a | axes", "transpose")
    _numpy(np.concatenate, "arrays | axis", "concatenate")
    _numpy(np.stack, "arrays | axis", "stack")
    _numpy(np.vstack, "tup", "vstack")
    _numpy(np.hstack, "tup", "hstack")
    _numpy(np.dstack, "tup", "dstack")
    _numpy(np.expand_dims, "a | axis", "expand_dims")
    _numpy(np.squeeze, "a | axis", "squeeze")
    _numpy(np.ravel, "a", "ravel")
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        _numpy(getattr(np, name), "*arys", name, _at_least(name))
    _numpy(np.broadcast_to, "array | shape ~subok", "broadcast_to")
    _numpy(np.repeat, "a | repeats axis", "repeat")
    _numpy(np.tile, "A | reps", "tile")
    _numpy(np.flip, "m | axis", "flip")
    _numpy(np.fliplr, "m", "fliplr")
    _numpy(np.flipud, "m", "flipud")
    _numpy(np.roll, "a | shift axis", "roll")
    _numpy(np.rot90, "m | k axes", "rot90")
    _numpy(np.swapaxes, "a | axis1 axis2", "swapaxes")
    _numpy(np.moveaxis, "a | source destination", "moveaxis")
    _numpy(np.pad, "array | pad_width mode constant_values", "pad", _pad)
    _numpy(np.split, "ary | indices_or_sections axis", "split")
    _numpy(np.array_split, "ary | indices_or_sections axis", "array_split")
    _numpy(np.take, "a indices | axis", "take")
    _numpy(np.take_along_axis, "arr indices | axis", "take_along_axis")
    # products and linear algebra
    _numpy(np.dot, "a b", "dot")
    _numpy(np.inner, "a b", "inner")
    _numpy(np.outer, "a b", "outer")
    _numpy(np.kron, "a b", "kron")
    _numpy(np.tensordot, "a b | axes", "tensordot")
    _numpy(np.einsum, "*operands | ~optimize", "einsum", _einsum)
    _numpy(np.cross, "a b | axisa axisb axisc axis", "cross", _cross)
    _numpy(np.trace, "a | offset axis1 axis2", "trace")
    _numpy(np.diagonal, "a | offset axis1 axis2", "diagonal")
    _numpy(np.diag, "v | k", "diag")
    _numpy(np.triu, "m | k", "triu")
    _numpy(np.tril, "m | k", "tril")
    # numpy.linalg: its own signatures (ord second, the last two axes, ...)
    _linalg_numpy("inv", "a", "inv")
    _linalg_numpy("solve", "a b", "solve")
    _linalg_numpy("det", "a", "det")
    _linalg_numpy("slogdet", "a", "slogdet")
    _linalg_numpy("cholesky", "a | upper", "cholesky", _cholesky)
    _linalg_numpy("eigh", "a | UPLO", "eigh", _eigh)
    _linalg_numpy("svd", "a | full_matrices compute_uv", "svd")
    _linalg_numpy("pinv", "a", "pinv")
    _linalg_numpy("norm", "x | ord axis keepdims", "norm")
    _linalg_numpy("trace", "x | offset", "trace", axis1=-2, axis2=-1)
    _linalg_numpy("diagonal", "x | offset", "diagonal", axis1=-2, axis2=-1)
    _linalg_numpy("outer", "x1 x2", "outer", _linalg_outer)
    _linalg_numpy("cross", "x1 x2 | axis", "cross", _linalg_cross)
    _linalg_numpy("tensordot", "x1 x2 | axes", "tensordot")
    _linalg_numpy("matmul", "x1 x2", "matmul")


def functions() -> list:
    """Every numpy function (not ufunc) given a gradcli counterpart here."""
    return list(_table())


__all__ = ["compute", "functions", "UNSUPPORTED", "NO_VALUE"]
