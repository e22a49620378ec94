"""Nested structures of values (lists, tuples, named tuples, dicts), as TensorFlow's
``nest``: the one flatten/pack pair of the engine (the gradient APIs, the tapes, forward
mode and ``vectorized_map`` all read their arguments and results through it). A dict's
entries are taken by sorted key, so two dicts with the same keys pair their entries
whatever order they were built in.
"""
from __future__ import annotations

from .tensor import Batched, Tensor


def _keys(d: dict) -> list:
    """A dict's keys in TensorFlow's ``nest`` order: sorted, so that two dicts with the same
    keys pair their entries by key whatever order they were built in (targets with
    ``output_gradients``, outputs with ``dy``)."""
    try:
        return sorted(d)
    except TypeError:
        raise TypeError("nested structures take dicts with sortable keys (as TensorFlow's "
                        f"nest), got keys {list(d)!r}") from None


def flatten(structure, out: list | None = None) -> list:
    """Leaves of a nested list/tuple/dict, in order, a dict's by sorted key (TensorFlow's
    ``nest.flatten``; iteratively: no recursion limits), appended to ``out`` if given.

    >>> flatten({"b": [1, 2], "a": (3,)})
    [3, 1, 2]
    """
    if out is None:
        out = []
    if isinstance(structure, Tensor):
        out.append(structure)
        return out
    if structure.__class__ is list or structure.__class__ is tuple:  # the usual: flat
        for item in structure:
            if not isinstance(item, Tensor):
                break
        else:
            out.extend(structure)
            return out
    stack = [structure]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend([item[k] for k in reversed(_keys(item))])
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


def pack(structure, leaves):
    """Rebuild ``structure`` with ``leaves`` (an iterator) in place of its leaves.

    >>> pack({"b": [1, 2], "a": (3,)}, iter("xyz"))
    {'b': ['y', 'z'], 'a': ('x',)}
    """
    if structure.__class__ is list:
        for item in structure:
            if not isinstance(item, Tensor):
                break
        else:
            return [next(leaves) for _ in structure]
    if isinstance(structure, dict):  # leaves by sorted key (as flatten), keys as given
        packed = {k: pack(structure[k], leaves) for k in _keys(structure)}
        return {k: packed[k] for k in structure}
    if isinstance(structure, (list, tuple)):
        items = [pack(v, leaves) for v in structure]
        if hasattr(structure, "_fields"):  # a namedtuple: its fields, positionally
            return type(structure)(*items)
        return type(structure)(items)
    return next(leaves)


def pair(f, result) -> tuple:
    """``f``'s result as ``(outputs, grad_fn)``, or a TypeError saying what it was (the
    result of a ``custom_gradient`` function)."""
    if result.__class__ is tuple and len(result) == 2 and callable(result[1]):
        return result
    if isinstance(result, (tuple, list)) and len(result) == 2:
        if callable(result[1]):
            return tuple(result)
        what = f"a pair whose second item is {_describe(result[1])}, not a function"
    else:
        what = _describe(result)
    name = getattr(f, "__name__", type(f).__name__)
    raise TypeError(f"custom_gradient: {name} must return a pair (outputs, grad_fn), "
                    f"grad_fn being the function of the upstream gradients; it returned "
                    f"{what}")


def _describe(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, (Tensor, Batched)):
        return f"a tensor of shape {value.shape}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return f"a {type(value).__name__}"
