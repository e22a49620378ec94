"""numpy's further elementwise functions (issue 10, parts 3 and 4): ``erf``, ``erfc``,
``sinc``, ``exp2``, ``logaddexp``, ``mod``, ``fmod``, ``fmax``, ... (the ones every start
needs are ``elementwise.py``'s).

Loaded on demand (see the package's docstring).

Conventions decided here (where numpy or TensorFlow leave a choice):
- ``mod``/``remainder`` (the ``%`` operator) follow Python and numpy: the result has the
  divisor's sign; ``fmod`` follows C: the dividend's sign. ``floor_divide`` (``//``) has
  a zero gradient, as ``floor``.
- ``erf``/``erfc``: numpy has none and scipy is not a dependency, so they are computed
  here: a Taylor series below |x| = 1.5 and a continued fraction for erfc above (the
  algorithm of CPython's own fallback ``math.erf``, with exp(-x^2) computed to full
  precision): erf within 1e-15 relative of ``math.erf`` (a few units in the last place),
  erfc within 2e-14 relative of ``math.erfc`` (below x = 1.5 it is 1 - erf).
"""
from __future__ import annotations

import math

import numpy as np

from ..core.derive import entry
from .elementwise import gate
from .statistics import raw_value  # (and its entries come first in the table)

# ---------------------------------------------------------------------------------------
# erf and erfc without scipy (CPython's fallback algorithm, vectorised)
# ---------------------------------------------------------------------------------------
_SQRT_PI = math.sqrt(math.pi)
_ERF_SERIES_CUTOFF, _ERF_SERIES_TERMS, _ERFC_CONTFRAC_TERMS = 1.5, 25, 50


def _erf_series(x):
    """erf(x) by its Taylor series, for |x| < 1.5."""
    x2 = x * x
    acc = np.zeros_like(x)
    fk = _ERF_SERIES_TERMS + 0.5
    for _ in range(_ERF_SERIES_TERMS):
        acc = 2.0 + x2 * acc / fk
        fk -= 1.0
    return acc * x * np.exp(-x2) / _SQRT_PI


def _erfc_contfrac(x):
    """erfc(x) by a continued fraction, for x >= 1.5 (0 beyond 30, where it underflows)."""
    x = np.minimum(x, 30.0)
    x2 = x * x
    a, da = 0.0, 0.5
    p, p_last = np.ones_like(x), np.zeros_like(x)
    q, q_last = da + x2, np.ones_like(x)
    for _ in range(_ERFC_CONTFRAC_TERMS):
        a += da
        da += 2.0
        b = da + x2
        p, p_last = b * p - a * p_last, p
        q, q_last = b * q - a * q_last, q
    return np.where(x >= 30.0, 0.0, p / q * x * _exp_minus_square(x) / _SQRT_PI)


def _exp_minus_square(x):
    """exp(-x^2) to full relative precision: x^2 rounded would carry an error of x^2
    ulps into the result (1e-13 at x = 30), so x is split as hi + lo with hi^2 exact."""
    hi = np.round(x * 4096.0) / 4096.0
    lo = x - hi
    return np.exp(-hi * hi) * np.exp(-lo * (x + hi))


def _erf_parts(x):
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.float64
    v = x.astype(np.float64)
    small = np.abs(v) < _ERF_SERIES_CUTOFF
    series = _erf_series(np.where(small, v, 0.0))
    cf = _erfc_contfrac(np.where(small, _ERF_SERIES_CUTOFF, np.abs(v)))
    return v, small, series, cf, dtype


def _erf(x):
    v, small, series, cf, dtype = _erf_parts(x)
    out = np.where(small, series, np.where(v > 0, 1.0 - cf, cf - 1.0))
    out = np.where(np.isnan(v), np.nan, out)
    return out.astype(dtype)[()]


def _erfc(x):
    v, small, series, cf, dtype = _erf_parts(x)
    out = np.where(small, 1.0 - series, np.where(v > 0, cf, 2.0 - cf))
    out = np.where(np.isnan(v), np.nan, out)
    return out.astype(dtype)[()]


_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI


# ---------------------------------------------------------------------------------------
# sinc: the derivative from its Taylor series near 0, where the closed form cancels
# ---------------------------------------------------------------------------------------
# d/dx sinc(x) = sum_k c_k x^(2k-1), c_k = (-1)^k 2k pi^(2k) / (2k+1)!, k = 1..7: within
# 1e-16 of the closed form's exact value below |x| = 0.1.
_SINC_SERIES = tuple((-1) ** k * 2 * k * math.pi ** (2 * k) / math.factorial(2 * k + 1)
                     for k in range(1, 8))


def _near_integer(x):
    """(n, sign): an integer n nearest to x (a constant) and (-1)^n. x - n is exact in
    floating point, so sin(pi x) = sign sin(pi (x - n)) and cos(pi x) = sign cos(pi (x - n))
    are exact at every integer: numpy's sinc computes sin(pi * x), whose rounding of pi * x
    leaves ~1e-16 absolute, a relative error of 1e-6 at x = 1 - 1e-10 and a garbage
    value at x = 1e200 (an integer: sinc is 0 there)."""
    raw = np.asarray(raw_value(x))
    n = np.rint(raw)
    with np.errstate(invalid="ignore"):  # inf and nan: nan, as numpy's sinc
        sign = np.where(np.remainder(n, 2.0) == 1.0, -1.0, 1.0).astype(n.dtype)
    return n, sign


def _sinc(x):
    x = np.asarray(x)
    v = x if x.dtype.kind == "f" else x.astype(np.float64)
    n, sign = _near_integer(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sign * np.sin(math.pi * (v - n)) / (math.pi * v) + 0.0  # (no -0.0 at 1)
    return np.where(v == 0, np.ones_like(v), out)[()]


def _sinc_vjp(m, g, ans, x):
    raw = np.asarray(raw_value(x))
    small = np.abs(raw) < 0.1
    xs = m.where(small, x, 0.0)  # the series only where it is used (x * x overflows)
    x2 = xs * xs
    poly = _SINC_SERIES[-1]
    for c in _SINC_SERIES[-2::-1]:
        poly = c + x2 * poly
    near = xs * poly
    n, sign = _near_integer(raw)
    safe = m.where(small, 1.0, x)
    far = (m.cos(math.pi * (x - n)) * sign - ans) / safe
    return g * m.where(small, near, far)


# ---------------------------------------------------------------------------------------
# Two-argument elementwise functions
# ---------------------------------------------------------------------------------------
def _fmax_rule(first: bool, larger: bool):
    """fmax/fmin: like maximum/minimum, but a nan loses to a number (the number gets the
    gradient); ties split it equally."""
    def vjp(m, g, ans, x, y):
        a, b = (raw_value(x), raw_value(y)) if first else (raw_value(y), raw_value(x))
        a, b = np.asarray(a), np.asarray(b)
        beats = (a > b) if larger else (a < b)
        take = beats | (np.isnan(b) & ~np.isnan(a))
        return m.where(take, g, m.where(a == b, 0.5 * g, 0.0))
    return vjp


def _zero_binary(m, g, ans, x, y):
    return m.zeros_like(x)


def _zero_binary_y(m, g, ans, x, y):
    return m.zeros_like(y)


def _trunc_sympy(sp, t):
    return sp.Piecewise((sp.floor(t), t >= 0), (sp.ceiling(t), True))


# --- elementwise -----------------------------------------------------------------------
entry(name="nan_to_num",
      forward=lambda x, nan=0.0, posinf=None, neginf=None:
       np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
      vjps=(lambda m, g, ans, x, **_: m.where(np.isfinite(raw_value(x)), g, 0.0),), inputs=("x",),
      params=(("nan", 0.0), ("posinf", None), ("neginf", None)), elementwise=True,
      doc="nan, inf and -inf replaced by numbers (nan=0, the largest finite floats)",
      derivative="1 where x is finite, else 0", sympy=lambda sp, x, **_: x)
entry(name="exp2", forward=np.exp2, vjps=(lambda m, g, ans, x: g * ans * math.log(2.0),),
      inputs=("x",), elementwise=True, saves="ans", doc="2 ** x", derivative="2^x ln 2",
      sympy=lambda sp, x: 2 ** x)
entry(name="sinc", forward=_sinc, vjps=(_sinc_vjp,), inputs=("x",), elementwise=True,
      doc="sin(pi x) / (pi x), 1 at 0 (numpy's sinc)",
      derivative="(cos(pi x) - sinc(x)) / x; 0 at 0", sympy=lambda sp, x: sp.sinc(sp.pi * x))
entry(name="deg2rad", forward=np.deg2rad, vjps=(lambda m, g, ans, x: g * (math.pi / 180.0),),
      inputs=("x",), elementwise=True, saves="none", doc="degrees to radians", derivative="pi/180",
      sympy=lambda sp, x: x * sp.pi / 180, aliases=("radians",))
entry(name="rad2deg", forward=np.rad2deg, vjps=(lambda m, g, ans, x: g * (180.0 / math.pi),),
      inputs=("x",), elementwise=True, saves="none", doc="radians to degrees", derivative="180/pi",
      sympy=lambda sp, x: x * 180 / sp.pi, aliases=("degrees",))
entry(name="fabs", forward=np.fabs, vjps=(lambda m, g, ans, x: g * m.sign(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="absolute value |x| (as abs)",
      derivative="sign(x); 0 at x = 0", sympy=lambda sp, x: sp.Abs(x))
entry(name="trunc", forward=np.trunc, vjps=(lambda m, g, ans, x: m.zeros_like(x),), inputs=("x",),
      elementwise=True, saves="inputs", doc="x rounded toward zero", derivative="0",
      sympy=_trunc_sympy, aliases=("fix",))
entry(name="erf", forward=_erf,
      vjps=(lambda m, g, ans, x: g * _TWO_OVER_SQRT_PI * m.exp(-(x * x)),), inputs=("x",),
      elementwise=True, saves="inputs",
      doc="error function (computed here: series and continued fraction, no scipy)",
      derivative="2/sqrt(pi) exp(-x^2)", sympy=lambda sp, x: sp.erf(x))
entry(name="erfc", forward=_erfc,
      vjps=(lambda m, g, ans, x: -g * _TWO_OVER_SQRT_PI * m.exp(-(x * x)),), inputs=("x",),
      elementwise=True, saves="inputs",
      doc="complementary error function 1 - erf(x), accurate for large x",
      derivative="-2/sqrt(pi) exp(-x^2)", sympy=lambda sp, x: sp.erfc(x))
entry(name="logaddexp", forward=np.logaddexp,
      vjps=(lambda m, g, ans, x, y: g * m.exp(x - ans),
                                   lambda m, g, ans, x, y: g * m.exp(y - ans)),
      inputs=("x", "y"), elementwise=True, kind="binary",
      doc="log(exp(x) + exp(y)), computed stably", derivative="exp(x - ans), exp(y - ans)",
      sympy=lambda sp, x, y: sp.log(sp.exp(x) + sp.exp(y)))
entry(name="logaddexp2", forward=np.logaddexp2,
      vjps=(lambda m, g, ans, x, y: g * m.exp2(x - ans),
                                     lambda m, g, ans, x, y: g * m.exp2(y - ans)),
      inputs=("x", "y"), elementwise=True, kind="binary", doc="log2(2^x + 2^y), computed stably",
      derivative="2^(x - ans), 2^(y - ans)",
      sympy=lambda sp, x, y: sp.log(2 ** x + 2 ** y) / sp.log(2))
def _quotient_rule(quotient):
    """d/dy of x - y q(x/y) with q piecewise constant: -q, a hard zero where q is 0 (no
    0 * inf = nan from an infinite upstream gradient; see gate)."""
    def vjp(m, g, ans, x, y):
        q = quotient(m, x, y)
        return -gate(m, q != 0, g, g) * q  # (g is replaced first: no inf * 0)
    return vjp


entry(name="mod", forward=np.mod,
      vjps=(lambda m, g, ans, x, y: g,
                       _quotient_rule(lambda m, x, y: m.floor_divide(x, y))),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="remainder of x / y with the sign of y (Python's %, numpy's mod)",
      derivative="1, -floor(x / y)", domain="y != 0", sample=(0.5, 2.0),
      sympy=lambda sp, x, y: x - y * sp.floor(x / y), aliases=("remainder",))
entry(name="fmod", forward=np.fmod,
      vjps=(lambda m, g, ans, x, y: g,
                         _quotient_rule(lambda m, x, y: m.trunc(x / y))),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="remainder of x / y with the sign of x (C's fmod)", derivative="1, -trunc(x / y)",
      domain="y != 0", sample=(0.5, 2.0), sympy=lambda sp, x, y: x - y * _trunc_sympy(sp, x / y))
entry(name="floor_divide", forward=np.floor_divide, vjps=(_zero_binary, _zero_binary_y),
      inputs=("x", "y"), elementwise=True, kind="binary", saves="inputs",
      doc="floor(x / y) (Python's //)", derivative="0", domain="y != 0", sample=(0.5, 2.0),
      sympy=lambda sp, x, y: sp.floor(x / y))
entry(name="fmax", forward=np.fmax, vjps=(_fmax_rule(True, True), _fmax_rule(False, True)),
      inputs=("x", "y"), elementwise=True, kind="binary",
      doc="elementwise larger of x and y, ignoring nan",
      derivative="1 where larger; ties split 1/2", sympy=lambda sp, x, y: sp.Max(x, y))
entry(name="fmin", forward=np.fmin, vjps=(_fmax_rule(True, False), _fmax_rule(False, False)),
      inputs=("x", "y"), elementwise=True, kind="binary",
      doc="elementwise smaller of x and y, ignoring nan",
      derivative="1 where smaller; ties split 1/2", sympy=lambda sp, x, y: sp.Min(x, y))
