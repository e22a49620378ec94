"""``entry``, the one constructor of table entries, and the forward-mode rules it derives
from an entry's kind.

Each entry states its VJPs, JVPs and batching rule where it is defined. The JVPs (one per
input, ``Op.jvps``) are written by hand where a short form exists; otherwise
``forward_rules`` derives them from the entry's kind:

- elementwise: the Jacobian is diagonal, so it is its own transpose, and the VJP rule (g
  times the local derivative) applied to a tangent is the JVP: ``jvps = vjps``;
- reduction (``axis``, ``keepdims``): ``reduction_jvp``;
- shape (not variadic) and index entries: linear in their (first) input, so the entry
  applied to the tangent is the JVP (``linear_rules``);
- anything else: ``transposed``, the VJP's linear transposition (one VJP and one backward
  pass through it), exact for every entry.

The batching rule is derived the same way by ``Op`` itself (``batch``: "elementwise" for
elementwise entries, "axis" for reductions, "loop" otherwise) unless the entry names one.
"""
from __future__ import annotations

import numpy as np

from . import state
from .recording import ENGINE, FUNCTIONS, NP
from .table import Op, register, register_internal
from .tape import GradientTape, unbroadcast
from .tensor import Tensor, shape_of

_forward = state.forward


def reduction_jvp(vjp):
    """Forward mode for a reduction: each input element feeds one output element, so the
    output tangent is the sum, over the reduced axes, of the input tangent times the
    local derivative d ans / d x — which is the VJP of an upstream gradient of ones."""
    def jvp(m, t, ans, x, axis=None, keepdims=False, **params):
        local = vjp(m, m.ones_like(ans), ans, x, axis=axis, keepdims=keepdims, **params)
        return m.sum(t * local, axis=axis, keepdims=keepdims)
    return jvp


def transposed(vjp, variadic: bool = False):
    """A JVP rule derived from a VJP rule by linear transposition, for entries whose
    forward derivative has no shorter form (factorisations, multi-output entries): the
    VJP ``g -> J^T g`` is linear in ``g``, so ``J t`` is the gradient with respect to
    ``g`` of ``<vjp(g), t>`` (at any ``g``: ones, so no rule skips a zero upstream). One
    VJP and one backward pass through it, as TensorFlow computes forward mode for
    operations without a forward rule. ``variadic``: the rule of a variadic entry (it
    takes the list of tangents)."""
    def jvp(m, t, ans, *inputs, **params):
        paused = None
        if m is NP:  # the fast path: no accumulator may see this internal computation
            paused = _forward[:]
            del _forward[:]
        try:
            g = Tensor(np.ones(np.shape(ans._value if isinstance(ans, Tensor) else ans)))
            tangents = t if variadic else [t]
            with GradientTape() as tape:
                tape.watch(g)
                total = 0.0
                for i, ti in enumerate(tangents):
                    x = inputs[i] if variadic else inputs[jvp.index]
                    gx = (vjp(ENGINE, g, ans, *inputs, index=i, **params) if variadic
                          else vjp(ENGINE, g, ans, *inputs, **params))
                    if gx is None:  # no gradient (a custom_gradient's None): no tangent
                        continue
                    gx = unbroadcast(ENGINE, gx, shape_of(x))
                    total = total + FUNCTIONS["sum"](gx * ti)
            out = tape.gradient(total, g, unconnected_gradients="zero")
        finally:
            if paused is not None:
                _forward[:] = paused
        return out._value if m is NP else out
    jvp.index = 0  # which input the rule is for (set by transposed_rules)
    return jvp


def transposed_rules(vjps, variadic: bool = False) -> tuple:
    """``transposed`` for each rule of an entry (None stays None)."""
    if variadic:
        return (transposed(vjps[0], variadic=True),)
    out = []
    for i, vjp in enumerate(vjps):
        if vjp is None:
            out.append(None)
            continue
        rule = transposed(vjp)
        rule.index = i
        out.append(rule)
    return tuple(out)


def linear_rules(name: str, indexed: bool = False) -> tuple:
    """The JVP of an entry linear in its first input: the entry applied to the tangent
    (``indexed``: its second input, integer indices, gets no tangent)."""
    if indexed:
        return (lambda m, t, ans, x, indices, **params: getattr(m, name)(t, indices, **params),
                None)
    return (lambda m, t, ans, x, **params: getattr(m, name)(t, **params),)


def forward_rules(name: str, kind: str, vjps: tuple, elementwise: bool = False,
                  variadic: bool = False) -> tuple:
    """The JVPs of an entry that writes none, from its kind (see the module's docstring).

    >>> def rule(m, g, ans, x):
    ...     return g * 2.0
    >>> forward_rules("double", "elementwise", (rule,), elementwise=True) == (rule,)
    True
    """
    if elementwise:
        return vjps
    if kind == "reduction":
        return tuple(reduction_jvp(v) for v in vjps)
    if kind == "shape" and not variadic:
        return linear_rules(name)
    if kind == "index" and len(vjps) == 2:
        return linear_rules(name, indexed=True)
    return transposed_rules(vjps, variadic)


def entry(*, name: str, forward, vjps: tuple, inputs: tuple, doc: str, jvps=None,
          internal: bool = False, listed_after: str | None = None, **fields) -> Op:
    """Make a table entry and register it: the one constructor of the rule modules, its
    fields by name (see ``table.Op`` for each). ``jvps`` defaults to ``forward_rules``;
    ``internal``: an entry the rules use that the language does not offer;
    ``listed_after``: where ``gradcli functions`` lists it, when not in the order of
    registration (see ``table.register``). For example
    (``rules/elementwise.py``)::

        entry(name="exp", forward=np.exp, vjps=(lambda m, g, ans, x: g * ans,),
              inputs=("x",), elementwise=True, saves="ans", doc="e^x", derivative="e^x",
              sympy=lambda sp, x: sp.exp(x))
    """
    if jvps is None:
        jvps = forward_rules(name, fields.get("kind", "elementwise"), vjps,
                             fields.get("elementwise", False), fields.get("variadic", False))
    op = Op(name=name, forward=forward, vjps=vjps, inputs=inputs, doc=doc, jvps=jvps, **fields)
    return register_internal(op) if internal else register(op, listed_after)
