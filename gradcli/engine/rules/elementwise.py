"""Arithmetic and elementwise entries: one output element per input element, so each
entry's Jacobian is diagonal and its JVP is its VJP (``jvps=vjps``), and it batches as it
is (``batch="elementwise"``, the default for ``elementwise=True``).

Rules are written against a namespace ``m``: on the fast path ``m`` is ``NP`` (each
entry's raw numpy forward), and when an outer tape is recording ``m`` is ``ENGINE``
(each entry's differentiable wrapper), so one rule gives first derivatives quickly and
higher derivatives exactly. (The in-place twins of some rules, for large arrays, live in
``gradcli.engine.fast``, by entry name.)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..core.derive import entry
from ..core.recording import NP
from ..core.tensor import Batched, Tensor


def _sigmoid(x):
    """1 / (1 + exp(-x)) to full relative precision over the whole range: for x < 0 as
    exp(x) / (1 + exp(x)), so that log(sigmoid(-30)) is -30, not -29.99983 (the value
    0.5 (1 + tanh(x/2)) loses the digits of a small result to cancellation)."""
    if x.__class__ is np.ndarray and x.ndim and x.dtype.kind == "f":  # two arrays, not five
        e = np.abs(x)
        np.negative(e, out=e)
        np.exp(e, out=e)
        out = np.where(x >= 0, 1.0, e)
        e += 1.0
        out /= e
        return out
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def _sigmoid_complement(m, ans, x):
    """1 - sigmoid(x) to full relative precision: 1 - ans cancels for x > 0, where it is
    exp(-x) sigmoid(x) instead."""
    return m.where(x > 0, m.exp(-m.abs(x)) * ans, 1.0 - ans)


def _power_vjp_x(m, g, ans, x, y):
    # Constant exponents are the common case (x**2): avoid a general power in the rule.
    if type(y) is float or type(y) is int:
        if y == 2:
            return g * 2.0 * x
        if y == 1:
            return g
        if y == 0:  # x ** 0 does not depend on x: a hard zero, even under an infinite g
            return gate(m, False, m.zeros_like(x), g)
        return g * y * x ** (y - 1)
    # y == 0: a hard zero, as the literal x ** 0 (0 * 0 ** -1 would be nan at x = 0).
    return gate(m, y != 0, g * y * x ** (y - 1), g)


def _power_vjp_y(m, g, ans, x, y):
    # d/dy x**y = x**y log x, taken as 0 where x <= 0 (as TensorFlow does), a hard zero.
    # x**y is recomputed rather than kept: exponents are rarely differentiated, and
    # keeping every power's output (x**2 before a sum) would hold an array per power.
    positive = x > 0
    safe = m.where(positive, x, 1.0)
    return gate(m, positive, g * x ** y * m.log(safe), g)


def _zero_vjp(m, g, ans, x):
    return m.zeros_like(x)


def gate(m, keep, gradient, upstream):
    """``gradient`` where ``keep``; elsewhere the rule's local derivative is 0 (a kink's
    subgradient, relu's flat side, an exponent of 0, the others of a ``max``, a zero norm)
    and so is the gradient, exactly, whatever number flows from above: ``0 * inf`` would
    make it nan (``sqrt(relu(x))`` at -1 is 0, as in PyTorch). A nan from above stays
    nan there, as ``0 * nan`` in TensorFlow (``upstream``: the incoming gradient, broadcast
    as ``gradient`` is). Selections (``where``, ``maximum``, ``clip``) do not come here:
    their unchosen side gets 0 whatever comes, as in TensorFlow."""
    out = m.where(keep, gradient, _zero_or_nan(m, upstream, gradient))
    # a scalar stays a numpy scalar, as the product it replaces was
    return out[()] if out.__class__ is np.ndarray and not out.ndim else out


def _zero_or_nan(m, upstream, like):
    """0.0; or, where ``upstream`` holds nan, nan there and 0 elsewhere (in ``like``'s
    dtype). A sum is the cheap first look: it is nan only if a nan (or inf and -inf) is
    in there."""
    if upstream.__class__ is Batched:  # a batch of seeds (a Jacobian's rows): per element
        return m.where(upstream != upstream, math.nan, 0.0)  # (nan alone is != itself)
    raw = upstream._value if isinstance(upstream, Tensor) else upstream
    if raw.__class__ is not np.ndarray:
        return raw if math.isnan(raw) else 0.0
    if not np.isnan(raw.sum()):
        return 0.0
    nan = np.isnan(raw)
    return np.where(nan, np.nan, 0.0).astype(like.dtype) if nan.any() else 0.0


# Arithmetic
ADD = entry(name="add", forward=operator.add,
            vjps=(lambda m, g, ans, x, y: g, lambda m, g, ans, x, y: g), inputs=("x", "y"),
            elementwise=True, kind="arithmetic", saves="none", doc="x + y", derivative="1, 1",
            sympy=lambda sp, x, y: x + y)
SUBTRACT = entry(name="subtract", forward=operator.sub,
                 vjps=(lambda m, g, ans, x, y: g, lambda m, g, ans, x, y: -g), inputs=("x", "y"),
                 elementwise=True, kind="arithmetic", saves="none", doc="x - y",
                 derivative="1, -1", sympy=lambda sp, x, y: x - y)
def _times(m, g, other):
    """``g * other``, skipping the pass when g is 1 (the upstream gradient of
    ``sum(x * y)``, the most common loss shape): multiplying by one only copies. The
    backward pass hands elementwise rules a broadcast 1 as the scalar 1."""
    if (m is NP and other.__class__ is np.ndarray and g.__class__ is not np.ndarray
            and g == 1.0 and other.dtype == g.dtype):
        return other
    return g * other


MULTIPLY = entry(name="multiply", forward=operator.mul,
                 vjps=(lambda m, g, ans, x, y: _times(m, g, y),
                        lambda m, g, ans, x, y: _times(m, g, x)),
                 inputs=("x", "y"), elementwise=True, kind="arithmetic", saves="inputs",
                 doc="x * y", derivative="y, x", sympy=lambda sp, x, y: x * y)
DIVIDE = entry(name="divide", forward=operator.truediv,
               vjps=(lambda m, g, ans, x, y: g / y, lambda m, g, ans, x, y: -g * (x / y) / y),
               inputs=("x", "y"), elementwise=True, kind="arithmetic", saves="inputs", doc="x / y",
               derivative="1/y, -x/y^2", domain="y != 0", sample=(0.5, 2.0),
               sympy=lambda sp, x, y: x / y)
# operator.pow, not np.power: ndarray ** 2 takes numpy's fast square path.
POWER = entry(name="power", forward=operator.pow, vjps=(_power_vjp_x, _power_vjp_y),
              inputs=("x", "y"), elementwise=True, kind="arithmetic", saves="inputs",
              doc="x ** y (also written x ^ y)", derivative="y*x^(y-1), x^y*log(x)",
              domain="x > 0 for non-integer y", sample=(0.5, 2.0), sympy=lambda sp, x, y: x ** y,
              aliases=("pow",))


NEGATIVE = entry(name="negative", forward=operator.neg, vjps=(lambda m, g, ans, x: -g,),
                 inputs=("x",), elementwise=True, kind="arithmetic", saves="none", doc="-x",
                 derivative="-1", sympy=lambda sp, x: -x)
entry(name="square", forward=np.square, vjps=(lambda m, g, ans, x: g * 2.0 * x,), inputs=("x",),
      elementwise=True, kind="arithmetic", saves="inputs", doc="x ** 2", derivative="2x",
      sympy=lambda sp, x: x ** 2)
entry(name="reciprocal", forward=np.reciprocal, vjps=(lambda m, g, ans, x: -g * ans * ans,),
      inputs=("x",), elementwise=True, kind="arithmetic", saves="ans", doc="1 / x",
      derivative="-1/x^2", domain="x != 0", sample=(0.5, 2.0), sympy=lambda sp, x: 1 / x)

# Elementwise
entry(name="abs", forward=np.abs, vjps=(lambda m, g, ans, x: gate(m, x != 0, g * m.sign(x), g),),
      inputs=("x",), elementwise=True, saves="inputs", doc="absolute value |x|",
      derivative="sign(x); 0 at x = 0", sympy=lambda sp, x: sp.Abs(x), aliases=("absolute",))
entry(name="exp", forward=np.exp, vjps=(lambda m, g, ans, x: g * ans,), inputs=("x",),
      elementwise=True, saves="ans", doc="e ** x", derivative="exp(x)",
      sympy=lambda sp, x: sp.exp(x))
# (exp(x), not ans + 1: for x < -37 ans + 1 is 0, all digits lost)
entry(name="expm1", forward=np.expm1, vjps=(lambda m, g, ans, x: g * m.exp(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="exp(x) - 1, accurate near 0", derivative="exp(x)",
      sympy=lambda sp, x: sp.exp(x) - 1)
entry(name="log", forward=np.log, vjps=(lambda m, g, ans, x: g / x,), inputs=("x",),
      elementwise=True, saves="inputs", doc="natural logarithm", derivative="1/x", domain="x > 0",
      sample=(0.5, 2.0), sympy=lambda sp, x: sp.log(x), aliases=("ln",))
entry(name="log1p", forward=np.log1p, vjps=(lambda m, g, ans, x: g / (1.0 + x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="log(1 + x), accurate near 0", derivative="1/(1+x)",
      domain="x > -1", sample=(-0.5, 2.0), sympy=lambda sp, x: sp.log(1 + x))
entry(name="log2", forward=np.log2, vjps=(lambda m, g, ans, x: g / (x * math.log(2.0)),),
      inputs=("x",), elementwise=True, saves="inputs", doc="base-2 logarithm",
      derivative="1/(x ln 2)", domain="x > 0", sample=(0.5, 2.0),
      sympy=lambda sp, x: sp.log(x) / sp.log(2))
entry(name="log10", forward=np.log10, vjps=(lambda m, g, ans, x: g / (x * math.log(10.0)),),
      inputs=("x",), elementwise=True, saves="inputs", doc="base-10 logarithm",
      derivative="1/(x ln 10)", domain="x > 0", sample=(0.5, 2.0),
      sympy=lambda sp, x: sp.log(x) / sp.log(10))
entry(name="sqrt", forward=np.sqrt, vjps=(lambda m, g, ans, x: g * 0.5 / ans,), inputs=("x",),
      elementwise=True, saves="ans", doc="square root", derivative="1/(2 sqrt(x)); inf at 0",
      domain="x >= 0", sample=(0.5, 2.0), sympy=lambda sp, x: sp.sqrt(x))
entry(name="cbrt", forward=np.cbrt, vjps=(lambda m, g, ans, x: g / (3.0 * ans * ans),),
      inputs=("x",), elementwise=True, saves="ans", doc="real cube root",
      derivative="1/(3 cbrt(x)^2); inf at 0", sample=(0.5, 2.0),
      sympy=lambda sp, x: sp.sign(x) * sp.Abs(x) ** sp.Rational(1, 3))
entry(name="sin", forward=np.sin, vjps=(lambda m, g, ans, x: g * m.cos(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="sine", derivative="cos(x)",
      sympy=lambda sp, x: sp.sin(x))
entry(name="cos", forward=np.cos, vjps=(lambda m, g, ans, x: g * -m.sin(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="cosine", derivative="-sin(x)",
      sympy=lambda sp, x: sp.cos(x))
entry(name="tan", forward=np.tan, vjps=(lambda m, g, ans, x: g * (1.0 + ans * ans),),
      inputs=("x",), elementwise=True, saves="ans", doc="tangent", derivative="1 + tan(x)^2",
      domain="x != pi/2 + k pi", sample=(-1.2, 1.2), sympy=lambda sp, x: sp.tan(x))
# The square roots of 1 - x^2 and x^2 - 1 as products of factors: 1 - x*x loses digits
# near |x| = 1 and x*x overflows for large |x|.
entry(name="arcsin", forward=np.arcsin,
      vjps=(lambda m, g, ans, x: g / (m.sqrt(1.0 - x) * m.sqrt(1.0 + x)),), inputs=("x",),
      elementwise=True, saves="inputs", doc="inverse sine", derivative="1/sqrt(1-x^2)",
      domain="-1 <= x <= 1", sample=(-0.9, 0.9), sympy=lambda sp, x: sp.asin(x), aliases=("asin",))
entry(name="arccos", forward=np.arccos,
      vjps=(lambda m, g, ans, x: -g / (m.sqrt(1.0 - x) * m.sqrt(1.0 + x)),), inputs=("x",),
      elementwise=True, saves="inputs", doc="inverse cosine", derivative="-1/sqrt(1-x^2)",
      domain="-1 <= x <= 1", sample=(-0.9, 0.9), sympy=lambda sp, x: sp.acos(x), aliases=("acos",))
entry(name="arctan", forward=np.arctan, vjps=(lambda m, g, ans, x: g / (1.0 + x * x),),
      inputs=("x",), elementwise=True, saves="inputs", doc="inverse tangent",
      derivative="1/(1+x^2)", sympy=lambda sp, x: sp.atan(x), aliases=("atan",))
entry(name="sinh", forward=np.sinh, vjps=(lambda m, g, ans, x: g * m.cosh(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="hyperbolic sine", derivative="cosh(x)",
      sympy=lambda sp, x: sp.sinh(x))
entry(name="cosh", forward=np.cosh, vjps=(lambda m, g, ans, x: g * m.sinh(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="hyperbolic cosine", derivative="sinh(x)",
      sympy=lambda sp, x: sp.cosh(x))
entry(name="tanh", forward=np.tanh, vjps=(lambda m, g, ans, x: g * (1.0 - ans * ans),),
      inputs=("x",), elementwise=True, saves="ans", doc="hyperbolic tangent",
      derivative="1 - tanh(x)^2", sympy=lambda sp, x: sp.tanh(x))
entry(name="arcsinh", forward=np.arcsinh, vjps=(lambda m, g, ans, x: g / m.hypot(x, 1.0),),
      inputs=("x",), elementwise=True, saves="inputs", doc="inverse hyperbolic sine",
      derivative="1/sqrt(x^2+1)", sympy=lambda sp, x: sp.asinh(x), aliases=("asinh",))
entry(name="arccosh", forward=np.arccosh,
      vjps=(lambda m, g, ans, x: g / (m.sqrt(x - 1.0) * m.sqrt(x + 1.0)),), inputs=("x",),
      elementwise=True, saves="inputs", doc="inverse hyperbolic cosine",
      derivative="1/sqrt(x^2-1)", domain="x >= 1", sample=(1.2, 3.0),
      sympy=lambda sp, x: sp.acosh(x), aliases=("acosh",))
entry(name="arctanh", forward=np.arctanh, vjps=(lambda m, g, ans, x: g / ((1.0 - x) * (1.0 + x)),),
      inputs=("x",), elementwise=True, saves="inputs", doc="inverse hyperbolic tangent",
      derivative="1/(1-x^2)", domain="-1 < x < 1", sample=(-0.9, 0.9),
      sympy=lambda sp, x: sp.atanh(x), aliases=("atanh",))
entry(name="sigmoid", forward=_sigmoid,
      vjps=(lambda m, g, ans, x: g * ans * _sigmoid_complement(m, ans, x),), inputs=("x",),
      elementwise=True, doc="logistic sigmoid 1/(1+exp(-x))",
      derivative="sigmoid(x) (1 - sigmoid(x))", sympy=lambda sp, x: 1 / (1 + sp.exp(-x)))
entry(name="relu", forward=lambda x: np.maximum(x, 0.0),
      vjps=(lambda m, g, ans, x: gate(m, x > 0, g, g),), inputs=("x",), elementwise=True,
      saves="inputs", doc="max(x, 0)", derivative="1 if x > 0 else 0 (0 at x = 0)",
      sympy=lambda sp, x: sp.Max(0, x))
entry(name="softplus", forward=lambda x: np.logaddexp(0.0, x),
      vjps=(lambda m, g, ans, x: g * m.sigmoid(x),), inputs=("x",), elementwise=True,
      saves="inputs", doc="log(1 + exp(x))", derivative="sigmoid(x)",
      sympy=lambda sp, x: sp.log(1 + sp.exp(x)))
entry(name="sign", forward=np.sign, vjps=(_zero_vjp,), inputs=("x",), elementwise=True,
      saves="inputs", doc="-1, 0 or 1", derivative="0", sympy=lambda sp, x: sp.sign(x))
entry(name="floor", forward=np.floor, vjps=(_zero_vjp,), inputs=("x",), elementwise=True,
      saves="inputs", doc="largest integer <= x", derivative="0", sympy=lambda sp, x: sp.floor(x))
entry(name="ceil", forward=np.ceil, vjps=(_zero_vjp,), inputs=("x",), elementwise=True,
      saves="inputs", doc="smallest integer >= x", derivative="0",
      sympy=lambda sp, x: sp.ceiling(x))

# Two arguments
def _arctan2_vjp(m, g, numerator, y, x):
    """g numerator / (x^2 + y^2), through hypot (x^2 + y^2 underflows for |x|, |y| below
    1e-154, where the derivative is still finite); the subgradient 0 at the origin (as
    PyTorch), where the angle jumps: nan there would poison a whole broadcast sum."""
    r = m.hypot(x, y)
    away = r != 0
    safe = m.where(away, r, 1.0)
    return gate(m, away, g * (numerator / safe) / safe, g)


entry(name="arctan2", forward=np.arctan2,
      vjps=(lambda m, g, ans, y, x: _arctan2_vjp(m, g, x, y, x),
         lambda m, g, ans, y, x: _arctan2_vjp(m, g, -y, y, x)),
      inputs=("y", "x"), elementwise=True, kind="binary", saves="inputs",
      doc="angle of the point (x, y): arctan2(y, x)", derivative="x/(x^2+y^2), -y/(x^2+y^2)",
      sample=(0.5, 2.0), sympy=lambda sp, y, x: sp.atan2(y, x), aliases=("atan2",))
entry(name="maximum", forward=np.maximum,
      vjps=(lambda m, g, ans, x, y: m.where(x > y, g, m.where(x == y, 0.5 * g, 0.0)),
         lambda m, g, ans, x, y: m.where(y > x, g, m.where(x == y, 0.5 * g, 0.0))),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="elementwise larger of x and y", derivative="1 where larger; ties split 1/2",
      sympy=lambda sp, x, y: sp.Max(x, y))
entry(name="minimum", forward=np.minimum,
      vjps=(lambda m, g, ans, x, y: m.where(x < y, g, m.where(x == y, 0.5 * g, 0.0)),
         lambda m, g, ans, x, y: m.where(y < x, g, m.where(x == y, 0.5 * g, 0.0))),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="elementwise smaller of x and y", derivative="1 where smaller; ties split 1/2",
      sympy=lambda sp, x, y: sp.Min(x, y))
entry(name="hypot", forward=np.hypot,
      vjps=(lambda m, g, ans, x, y: g * x / ans, lambda m, g, ans, x, y: g * y / ans),
      inputs=("x", "y"), elementwise=True, kind="binary", doc="sqrt(x^2 + y^2)",
      derivative="x/hypot, y/hypot", sample=(0.5, 2.0),
      sympy=lambda sp, x, y: sp.sqrt(x ** 2 + y ** 2))

# Comparisons: boolean results, never differentiable (usable as `where` conditions).
for _name, _fn, _sp, _sym in (("less", operator.lt, "Lt", "<"), ("less_equal", operator.le, "Le", "<="),
                              ("greater", operator.gt, "Gt", ">"),
                              ("greater_equal", operator.ge, "Ge", ">="),
                              ("equal", operator.eq, "Eq", "=="), ("not_equal", operator.ne, "Ne", "!=")):
    entry(name=_name, forward=_fn, vjps=(None, None), inputs=("x", "y"), elementwise=True,
          kind="comparison", saves="inputs", doc=f"x {_sym} y as booleans (a where condition)",
          derivative="not differentiable",
          sympy=(lambda s: lambda sp, x, y: getattr(sp, s)(x, y))(_sp))


_WHERE_RULES = (None, lambda m, g, ans, c, a, b: m.where(c, g, 0.0),
                lambda m, g, ans, c, a, b: m.where(c, 0.0, g))
entry(name="where", listed_after="stack", forward=np.where, vjps=_WHERE_RULES,
      jvps=_WHERE_RULES, inputs=("cond", "a", "b"), elementwise=True, kind="shape",
      saves="inputs",
      doc="a where cond is true, else b", derivative="g where chosen, else 0",
      sympy=lambda sp, c, a, b: sp.Piecewise((a, c), (b, True)))
# numpy's clip is minimum(maximum(x, lo), hi): with lo > hi every element is hi, so the
# gradient goes to hi there.
_CLIP_RULES = (lambda m, g, ans, x, lo, hi: m.where(x < lo, 0.0, m.where(x > hi, 0.0, g)),
               lambda m, g, ans, x, lo, hi: m.where(lo > hi, 0.0, m.where(x < lo, g, 0.0)),
               lambda m, g, ans, x, lo, hi: m.where(lo > hi, g, m.where(x > hi, g, 0.0)))


def _clip_api(op, plain):
    """``clip(x, lo=None, hi=None)``: None is no bound on that side, as in numpy (the
    entry computes it as -inf or inf, which numpy's clip gives the same values for, and
    whose gradient rules then never select the bound)."""
    def clip(x, lo=None, hi=None):
        return plain(x, -math.inf if lo is None else lo, math.inf if hi is None else hi)
    clip.__doc__ = plain.__doc__
    return clip


entry(name="clip", listed_after="where", forward=np.clip, vjps=_CLIP_RULES, jvps=_CLIP_RULES,
      inputs=("x", "lo", "hi"), elementwise=True, kind="elementwise", saves="inputs",
      doc="x limited to [lo, hi] (hi where lo > hi, as numpy); a bound of None (in "
            "the language -inf or inf) is no bound on that side",
      derivative="1 inside [lo, hi] (bounds included), else 0",
      sympy=lambda sp, x, lo, hi: sp.Min(sp.Max(x, lo), hi), api=_clip_api)


class hold_stop_gradients:
    """Context: record the values ``stop_gradient`` passes on (``values=None``), or pass
    on the recorded ones instead, in the same order.

    Finite differences of a program must hold each ``stop_gradient`` at its value at the
    point, as the tape does; the cross-check evaluates the point once recording, then
    every nudged point replaying."""

    def __init__(self, values: list | None = None):
        self.recording = values is None
        self.values = [] if values is None else values
        self.index = 0
        self._outer = None

    def __enter__(self):
        global _held
        self._outer, _held, self.index = _held, self, 0
        return self

    def __exit__(self, *exc):
        global _held
        _held = self._outer


_held: hold_stop_gradients | None = None


def _stop_gradient_forward(x):
    held = _held
    if held is None:
        return x
    if held.recording:
        held.values.append(x)
        return x
    value = held.values[held.index]
    held.index += 1
    return value


STOP_GRADIENT = entry(name="stop_gradient", listed_after="softmax",
                      forward=_stop_gradient_forward, vjps=(None,), jvps=(None,),
                      inputs=("x",), kind="elementwise",
                      doc="x, with no gradient flowing through", derivative="0 (blocked)",
                      batch="same")

