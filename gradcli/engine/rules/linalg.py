"""Linear algebra and einsum entries of the function table (kind ``linalg``).

Each entry is one ``entry(...)`` (``core.derive``), with rules written against the
namespace ``m`` (numpy on the fast path, the engine under an outer tape, so second
derivatives are exact). The rules follow Giles, "Collected matrix derivative results for
forward and reverse mode algorithmic differentiation" (2008), and the rules of HIPS
autograd (``autograd/numpy/linalg.py``) and JAX; matrices are batched over leading axes
wherever numpy batches them.

Conventions (as JAX): ``cholesky`` and ``eigh`` read the symmetric part ``(a + a^T)/2``
of their input (numpy reads one triangle); their gradients are then symmetric and exact
for any perturbation. ``svd(full_matrices=True)`` ignores the gradient of the extra
columns of U and rows of Vh (arbitrary bases of the complement, as PyTorch does).

``det``'s gradient is the cofactor matrix wherever it exists: at singular matrices and
where det itself overflows or underflows (``_cofactors``). The gradient of ``slogdet``'s
logabsdet at a singular matrix has no limit and is refused; a LAPACK refusal inside any
rule is the entry's ``ShapeError`` (``_refusing``), as ``apply`` makes it for forwards.

Entries returning several tensors (``slogdet``, ``eigh``, ``svd``) record one packed
array on the tape (``Op.outputs``); their API function unpacks it into a tuple through
differentiable indexing, so the gradient of any output reaches the one rule.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..core.derive import entry, reduction_jvp
from ..core.recording import ENGINE, FUNCTIONS, NP, apply
from ..core.table import INTERNAL, REGISTRY
from ..core.tensor import Tensor, shape_of
from .elementwise import gate
from .matmul import swap_last
from .reductions import (
    AXIS_PARAMS,
    expand_reduced,
    keep_reduced_axes,
    norm_bounds,
    ordinary,
    rescaled,
    sympy_reduce,
)

# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------
_LINALG = "linalg"

# string.ascii_letters, without importing string at start-up (8 ms cold)
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _T(m, a):
    return swap_last(m, a)


def _raw(x):
    return x._value if isinstance(x, Tensor) else x


def _is_zero(x) -> bool:
    """Whether an upstream gradient is exactly zero (an output the loss does not read):
    its terms are then left out, so an ill-defined factor never meets a zero."""
    return not np.any(_raw(x))


def _dtype(x):
    """The float dtype of a value (constants in rules take it: float32 stays float32)."""
    dtype = getattr(_raw(x), "dtype", None)
    return dtype if dtype is not None and dtype.kind == "f" else np.dtype(np.float64)


def _eye(n, like):
    return np.eye(n, dtype=_dtype(like))


def _col(m, v):
    """(..., n) -> (..., n, 1)."""
    return m.reshape(v, shape=shape_of(v) + (1,))


def _row(m, v):
    """(..., n) -> (..., 1, n)."""
    s = shape_of(v)
    return m.reshape(v, shape=s[:-1] + (1,) + s[-1:])


def _matrix(name, x):
    if np.ndim(x) < 2:
        raise ValueError(f"{name} needs a matrix (at least 2 dimensions), got shape "
                         f"{np.shape(x)}")


def _square(name, x):
    _matrix(name, x)
    if np.shape(x)[-1] != np.shape(x)[-2]:
        raise ValueError(f"{name} needs square matrices, got shape {np.shape(x)}")


def _sym(x):
    return 0.5 * (x + np.swapaxes(x, -1, -2))


def _sympy_matrices(fn):
    """A sympy builder applying ``fn(sp, Matrix) -> Matrix or scalar`` to each matrix of a
    (possibly batched) object array."""
    def build(sp, a, **params):
        a = np.asarray(a, dtype=object)
        out = None
        for idx in np.ndindex(a.shape[:-2]):
            value = fn(sp, sp.Matrix(a[idx].tolist()), **params)
            value = np.array(value.tolist(), dtype=object) if hasattr(value, "tolist") \
                else value
            if out is None:
                out = np.empty(a.shape[:-2] + np.shape(value), dtype=object)
            out[idx] = value
        return out
    return build


def _rng_matrix(rng, shape, shift=0.0):
    """Random matrices with ``shift`` added on the diagonal (well conditioned for shift
    about the size)."""
    x = rng.uniform(-1.0, 1.0, size=shape)
    return x + shift * np.eye(shape[-1]) if shift else x


def _rng_spd(rng, shape):
    x = rng.uniform(-1.0, 1.0, size=shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def _refusing(name, vjp):
    """A rule whose LAPACK calls (on the numpy path, where no entry's ``apply`` sits
    between) may refuse a matrix: numpy's LinAlgError becomes the entry's ShapeError, as
    ``apply`` makes it for a forward (``inv`` of a singular matrix), never numpy's own."""
    if vjp is None:
        return None

    def rule(m, g, ans, *inputs, **params):
        try:
            return vjp(m, g, ans, *inputs, **params)
        except np.linalg.LinAlgError as err:
            raise _not_defined(name, f"{str(err).splitlines()[0]} in its gradient",
                               inputs) from None
    return rule


def _refusing_all(name, vjps) -> tuple:
    """``_refusing`` for each rule of an entry."""
    return tuple(_refusing(name, vjp) for vjp in vjps)


def _not_defined(name, detail, inputs):
    from ...errors import ShapeError
    shapes = ", ".join(str(shape_of(x)) for x in inputs)
    return ShapeError(f"{name}: {detail} ({shapes})")


def _applied(name):
    """The JVP rule of an entry linear in its input: the entry applied to the tangent."""
    return lambda m, t, ans, x, **params: getattr(m, name)(t, **params)


def _bilinear(name):
    """The JVP rules of an entry linear in each of two inputs: the tangent of one times
    the other."""
    return (lambda m, t, ans, a, b, **params: getattr(m, name)(t, b, **params),
            lambda m, t, ans, a, b, **params: getattr(m, name)(a, t, **params))


def _unpacking(unpack):
    """The API function of a multi-output entry: the plain function's packed result split
    by ``unpack(packed, *inputs, **params)`` into a tuple of tensors."""
    def api(op, plain):
        n_in = len(op.inputs)
        names = [name for name, _ in op.params]

        def fn(*args, **kwargs):
            params = dict(op.params)
            params.update(zip(names, args[n_in:]))
            params.update(kwargs)
            return unpack(plain(*args, **kwargs), *args[:n_in], **params)
        fn.__name__ = fn.__qualname__ = op.name
        fn.__doc__ = plain.__doc__
        return fn
    return api


def several_outputs(op, params) -> bool:
    """Whether a call of ``op`` with ``params`` returns a tuple of tensors
    (``svd(..., compute_uv=False)`` returns S alone)."""
    return bool(op.outputs) and params.get("compute_uv", True) is not False


def _pick(t, index):
    if index[0] is Ellipsis and len(t.shape) == len(index) - 1:
        index = index[1:]  # a single result: a numpy scalar for shape (), not a 0-d array
    return apply(INTERNAL["getitem"], (t,), {"index": index})


def _reshape_t(t, shape):
    return apply(REGISTRY["reshape"], (t,), {"shape": shape})


# Batching rules (inside vectorized_map; see gradcli.engine.batching): the result for
# every example at once, with a few calls of entries on the batched tensors (batch on
# axis 0). An input numpy refuses goes to batching.loop, whose first example then
# raises the entry's own error.
def _batching():
    """The batching module, imported on first use (it imports the table, which this
    module is still filling when it is imported)."""
    from ..core import batching
    return batching


def _stacked_batch(op, values, batched, params):
    """numpy.linalg computes on stacks of matrices (..., M, N): the batch axis is one
    more stack axis. (An example of fewer than 2 axes is refused by the entry.)"""
    b = _batching()
    if b.example_ndim(values[0], True) < 2:
        return b.loop(op, values, batched, params)
    return apply(op, values, params)


# ---------------------------------------------------------------------------------------
# inv, solve, det, slogdet
# ---------------------------------------------------------------------------------------
def _inv(a):
    _square("inv", a)
    return np.linalg.inv(a)


def _inv_vjp(m, g, ans, a):
    t = _T(m, ans)
    return -m.matmul(m.matmul(t, g), t)


def _samples_square(*extra):
    def samples(rng):
        out = [("3x3", (_rng_matrix(rng, (3, 3), 3.0),), {}),
               ("batched", (_rng_matrix(rng, (2, 3, 3), 3.0),), {}),
               ("1x1", (_rng_matrix(rng, (1, 1), 2.0),), {})]
        return out + [(label, (_rng_matrix(rng, shape, 3.0),), params)
                      for label, shape, params in extra]
    return samples


entry(name="inv", forward=_inv, vjps=_refusing_all("inv", (_inv_vjp,)),
      jvps=(lambda m, t, ans, a: -m.matmul(m.matmul(ans, t), ans),), inputs=("a",), kind="linalg",
      saves="ans", doc="matrix inverse (batched)", derivative="-inv(a)^T g inv(a)^T",
      domain="invertible square matrices", sympy=_sympy_matrices(lambda sp, a: a.inv()),
      samples=_samples_square(), batch=_stacked_batch)


def _solve(a, b):
    """numpy 2's solve under any numpy: a 1-D b is one vector, any other b a stack of
    matrices (numpy 1 took b of a.ndim - 1 dimensions as a stack of vectors)."""
    _square("solve", a)
    b = np.asarray(b)
    if b.ndim == 1:
        return np.linalg.solve(a, b[:, None])[..., 0]
    batch = np.broadcast_shapes(np.shape(a)[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(a, batch + np.shape(a)[-2:]),
                           np.broadcast_to(b, batch + b.shape[-2:]))


def _solve_grad_b(m, g, a, b):
    if len(shape_of(b)) == 1:  # numpy 2: a 1-D b is one vector, the others stacks of matrices
        col = m.solve(_T(m, a), _col(m, g))
        return m.reshape(col, shape=shape_of(col)[:-1])
    return m.solve(_T(m, a), g)


def _solve_vjp_a(m, g, ans, a, b):
    gb = _solve_grad_b(m, g, a, b)
    if len(shape_of(b)) == 1:
        return -(_col(m, gb) * _row(m, ans))
    return -m.matmul(gb, _T(m, ans))


def _solve_samples(rng):
    a = _rng_matrix(rng, (3, 3), 3.0)
    return [("vector", (a, rng.uniform(-1, 1, 3)), {}),
            ("matrix", (a, rng.uniform(-1, 1, (3, 2))), {}),
            ("batched", (_rng_matrix(rng, (2, 3, 3), 3.0), rng.uniform(-1, 1, (2, 3, 2))), {}),
            ("batched-vector", (_rng_matrix(rng, (2, 3, 3), 3.0), rng.uniform(-1, 1, 3)), {})]


def _solve_batch(op, values, batched, params):
    """A vector b of every example (numpy 2: a 1-D b) made a column with unit stack axes,
    solved as a stack beside a's and the column dropped; stacks of matrices broadcast
    per example, the batched inputs lifted to one example rank."""
    b = _batching()
    (a, rhs), (a_batched, b_batched) = values, batched
    sa, sb = b.example_shape(a, a_batched), b.example_shape(rhs, b_batched)
    if len(sa) < 2 or not sb:
        return b.loop(op, values, batched, params)  # the entry's error
    if len(sb) == 1:
        lead = (b.batch_size(op, values, batched),) + (1,) * (len(sa) - 2) if b_batched \
            else ()
        out = apply(op, (a, b.reshaped(rhs, lead + (sb[0], 1))), {})
        return b.reshaped(out, np.shape(out._value)[:-1])
    return apply(op, tuple(b.lift_batched(values, batched)), {})


entry(name="solve", forward=_solve,
      vjps=_refusing_all("solve", (_solve_vjp_a,
                                   lambda m, g, ans, a, b: _solve_grad_b(m, g, a, b))),
      inputs=("a", "b"), kind="linalg",
      doc="x with a @ x = b (b a vector or a stack of matrices, as numpy 2)",
      derivative="-solve(a^T, g) x^T, solve(a^T, g)", domain="invertible a",
      sympy=lambda sp, a, b: np.matmul(_sympy_matrices(lambda sp, m: m.inv())(sp, a), b),
      samples=_solve_samples, batch=_solve_batch)


def _det(a):
    _square("det", a)
    return np.linalg.det(a)


def _det_vjp(m, g, ans, a):
    det = np.asarray(_raw(ans))
    if np.all(np.isfinite(det) & (np.abs(det) >= np.finfo(_dtype(a)).tiny)):
        # an ordinary determinant: the cofactors are det(a) inv(a)^T (Giles)
        ga = g * ans
        return m.reshape(ga, shape=shape_of(ga) + (1, 1)) * _T(m, m.inv(a))
    # singular, or a determinant beyond the float range (det(1e120 I) overflows, where its
    # cofactors 1e240 I do not; det(1e-120 I) underflows to 0): the cofactors themselves
    return m.reshape(g, shape=shape_of(g) + (1, 1)) * _cofactors(m, a)


def _cofactors(m, a):
    """The cofactor matrix adj(a)^T, d det(a) / d a, without det(a) or inv(a): on the
    numpy path through the SVD; under an outer tape (differentiable again) as
    scale^(n-1) det(b) inv(b)^T of b = a / scale, or for a singular b through the
    (n-1) x (n-1) minors' determinants. A matrix with a non-finite entry gets nan."""
    raw = np.asarray(_raw(a))
    n = raw.shape[-1]
    bad = ~np.all(np.isfinite(raw), axis=(-2, -1))[..., None, None]
    if np.any(bad):
        ok = _cofactors(m, m.where(bad, _eye(n, a), a))
        return m.where(bad, np.nan, ok)
    if m is NP:
        return _cofactors_svd(raw)
    scale = np.max(np.abs(raw), axis=(-2, -1), keepdims=True)
    scale = np.where(scale == 0, 1.0, scale).astype(_dtype(a))
    if np.all(np.abs(np.linalg.det(raw / scale)) >= np.finfo(_dtype(a)).tiny):
        # cofactors are homogeneous of degree n - 1, and scale a constant
        b = a / scale
        d = m.det(b)
        return scale ** (n - 1) * m.reshape(d, shape=shape_of(d) + (1, 1)) * _T(m, m.inv(b))
    if n == 1:
        return m.ones_like(a)
    if raw.size * (n - 1) ** 2 > _MINORS_LIMIT:
        raise _not_defined("det", "the derivative of the gradient at a singular matrix "
                           f"goes through its minors, too many for n = {n}", (a,))
    rows, cols, signs = _minors(n)
    return _dtype(a).type(1) * signs * m.det(m.getitem(a, index=(Ellipsis, rows, cols)))


_MINORS_LIMIT = 10 ** 7  # elements of all the minors at once (the language's array limit)


@lru_cache(maxsize=16)
def _minors(n):
    """Index arrays picking the (n-1) x (n-1) minor M_ij of an n x n matrix at [i, j]
    (shape (n, n, n-1, n-1)), and the signs (-1)^(i+j) of the cofactors."""
    keep = np.array([[q for q in range(n) if q != i] for i in range(n)])  # (n, n-1)
    rows = keep[:, None, :, None] + np.zeros((n, n, n - 1, n - 1), dtype=int)
    cols = keep[None, :, None, :] + np.zeros((n, n, n - 1, n - 1), dtype=int)
    signs = (-1.0) ** np.add.outer(np.arange(n), np.arange(n))
    return rows, cols, signs


def _cofactors_svd(a):
    """adj(a)^T = det(U) det(Vh) U diag(prod_{j!=i} s_j) Vh, the products taken as
    mantissas and exponents (np.frexp): no intermediate overflow or underflow, so a
    cofactor is finite wherever it is representable."""
    u, s, vh = np.linalg.svd(a)
    mantissa, exponent = np.frexp(s)
    eye = np.eye(s.shape[-1], dtype=bool)
    others = np.ldexp(np.prod(np.where(eye, 1.0, mantissa[..., None, :]), axis=-1),
                      np.sum(np.where(eye, 0, exponent[..., None, :]), axis=-1))
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return ((u * others[..., None, :]) @ vh * sign[..., None, None]).astype(_dtype(a))


entry(name="det", forward=_det, vjps=_refusing_all("det", (_det_vjp,)), inputs=("a",),
      kind="linalg", doc="determinant (batched)", derivative="det(a) inv(a)^T",
      domain="square matrices", sympy=_sympy_matrices(lambda sp, a: a.det()),
      samples=_samples_square(), batch=_stacked_batch)


def _slogdet(a):
    _square("slogdet", a)
    sign, logdet = np.linalg.slogdet(a)
    return np.stack([sign, logdet], axis=-1)


def _slogdet_vjp(m, g, ans, a):
    gl = m.getitem(g, index=(Ellipsis, 1))
    singular = np.asarray(_raw(ans))[..., 0] == 0  # sign 0: log|det| = -inf
    if np.any(singular):
        if np.any(singular & (np.asarray(_raw(gl)) != 0)):
            # d log|det a| = tr(inv(a) da) has no limit at a singular a (it is +-inf on
            # the sides of the singular set): refused as inv refuses a singular matrix
            raise _not_defined("slogdet", "the gradient of logabsdet is not defined at a "
                               "singular matrix (logabsdet is -inf there)", (a,))
        # only the sign of those is read, whose gradient is 0: invert I in their place
        a = m.where(singular[..., None, None], _eye(shape_of(a)[-1], a), a)
    return m.reshape(gl, shape=shape_of(gl) + (1, 1)) * _T(m, m.inv(a))


def _sympy_slogdet(sp, a):
    det = _sympy_matrices(lambda sp, m: m.det())(sp, a)
    sign = np.vectorize(sp.sign, otypes=[object])(det)
    return sign, np.vectorize(lambda d: sp.log(sp.Abs(d)), otypes=[object])(det)


entry(name="slogdet", forward=_slogdet, vjps=_refusing_all("slogdet", (_slogdet_vjp,)),
      inputs=("a",), kind="linalg",
      doc="sign and log|det| of a, as a tuple (sign, logabsdet); in the language pick one: "
        "slogdet(a)[1]",
      derivative="0 for the sign; inv(a)^T for logabsdet",
      domain="square matrices (the gradient needs an invertible a)", sympy=_sympy_slogdet,
      samples=_samples_square(), outputs=("sign", "logabsdet"), batch=_stacked_batch,
      api=_unpacking(lambda p, a: (_pick(p, (Ellipsis, 0)), _pick(p, (Ellipsis, 1)))))


# ---------------------------------------------------------------------------------------
# cholesky, eigh, svd, pinv
# ---------------------------------------------------------------------------------------
def _cholesky(a):
    _square("cholesky", a)
    return np.linalg.cholesky(_sym(a))


def _cholesky_vjp(m, g, ans, a):
    # Murray, "Differentiation of the Cholesky decomposition" (2016), as autograd:
    # S = L^-T phi(L^T g) L^-1 with phi the lower triangle, diagonal halved; symmetrised.
    n = shape_of(ans)[-1]
    phi = (np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(_dtype(ans))
    inv_l = m.inv(ans)
    s = m.matmul(m.matmul(_T(m, inv_l), m.matmul(_T(m, ans), g) * phi), inv_l)
    return 0.5 * (s + _T(m, s))


def _spd_samples(rng):
    return [("3x3", (_rng_spd(rng, (3, 3)),), {}), ("batched", (_rng_spd(rng, (2, 3, 3)),), {}),
            ("1x1", (_rng_spd(rng, (1, 1)),), {})]


entry(name="cholesky", forward=_cholesky, vjps=_refusing_all("cholesky", (_cholesky_vjp,)),
      inputs=("a",), kind="linalg", saves="ans",
      doc="lower Cholesky factor L (L L^T = a) of the symmetric part of a (batched)",
      derivative="L^-T phi(L^T g) L^-1, symmetrised",
      domain="symmetric positive definite matrices",
      sympy=_sympy_matrices(lambda sp, a: ((a + a.T) / 2).cholesky(hermitian=False)),
      samples=_spd_samples, batch=_stacked_batch)


def _eigh(a):
    _square("eigh", a)
    w, v = np.linalg.eigh(_sym(a))
    return np.concatenate([w[..., :, None], v], axis=-1)


def _off_diagonal_inverse(m, d, name):
    """1/d off the diagonal, 0 on it, for d = (..., n, n) differences of eigen- or
    singular values; repeated values make the gradient undefined: an error."""
    n = shape_of(d)[-1]
    eye = np.eye(n, dtype=bool)
    raw = np.asarray(_raw(d))
    if np.any((raw == 0) & ~eye):
        raise ValueError(f"{name}: the gradient through the vectors is not defined where "
                         "values repeat (they have no unique vectors); differentiate a "
                         "function of the values only, or of the whole subspace")
    return m.where(eye, 0.0, 1.0 / m.where(eye, 1.0, d))


def _eigh_vjp(m, g, ans, a):
    # Giles 2008, 3.1: a_bar = V (diag(w_bar) + F o (V^T V_bar)) V^T, F_ij = 1/(w_j - w_i)
    n = shape_of(ans)[-2]
    w, v = m.getitem(ans, index=(Ellipsis, 0)), m.getitem(ans, index=(Ellipsis, slice(1, None)))
    gw, gv = m.getitem(g, index=(Ellipsis, 0)), m.getitem(g, index=(Ellipsis, slice(1, None)))
    inner = _row(m, gw) * _eye(n, gw)
    if not _is_zero(gv):
        f = _off_diagonal_inverse(m, _row(m, w) - _col(m, w), "eigh")
        inner = inner + f * m.matmul(_T(m, v), gv)
    ga = m.matmul(m.matmul(v, inner), _T(m, v))
    return 0.5 * (ga + _T(m, ga))


def _eigh_samples(rng):
    return [("3x3", (_rng_matrix(rng, (3, 3)) * 2.0,), {}),
            ("batched", (_rng_matrix(rng, (2, 3, 3)) * 2.0,), {})]


def _eigh_api(op, plain):
    """``eigh(a, UPLO=None)``: numpy.linalg.eigh's signature. Given ``UPLO`` ('L' or 'U',
    either case, as numpy), one triangle of ``a`` is read, as numpy reads it; without it,
    the symmetric part of ``a`` (the same for a symmetric ``a``, and a gradient that
    stays symmetric)."""
    unpacked = _unpacking(lambda p, a: (_pick(p, (Ellipsis, 0)),
                                        _pick(p, (Ellipsis, slice(1, None)))))(op, plain)

    def eigh(a, UPLO=None):  # (numpy's name)
        if UPLO is not None:
            side = UPLO.upper() if isinstance(UPLO, str) else None
            if side not in ("L", "U"):
                raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
            from ..core.numpy_api import (
                from_triangle,  # (numpy's reading of one triangle)
            )
            a = from_triangle(a, side == "U")
        return unpacked(a)
    eigh.__doc__ = (f"{plain.__doc__}\n\neigh(a, UPLO=None): with UPLO 'L' or 'U', one "
                    f"triangle of a is read, as numpy.linalg.eigh reads it.")
    return eigh


entry(name="eigh", forward=_eigh, vjps=_refusing_all("eigh", (_eigh_vjp,)), inputs=("a",),
      kind="linalg", saves="ans",
      doc="eigenvalues (ascending) and eigenvectors of the symmetric part of a: (w, v), "
        "a = v diag(w) v^T; in the language pick one: eigh(a)[0]",
      derivative="v (diag(g_w) + F o v^T g_v) v^T, F_ij = 1/(w_j - w_i); the eigenvector part needs "
        "distinct eigenvalues",
      domain="symmetric matrices (eigenvector gradients: distinct "
        "eigenvalues)",
      samples=_eigh_samples, outputs=("w", "v"), batch=_stacked_batch, api=_eigh_api)


def _svd_sizes(shape, full_matrices):
    rows, cols = shape[-2], shape[-1]
    k = min(rows, cols)
    return rows, cols, k, (rows if full_matrices else k), (cols if full_matrices else k)


def _svd(a, full_matrices=True, compute_uv=True):
    _matrix("svd", a)
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    batch = np.shape(a)[:-2]
    return np.concatenate([u.reshape(batch + (-1,)), s, vh.reshape(batch + (-1,))], axis=-1)


def _svd_split(m, packed, shape, full_matrices):
    """(U, s, Vh) of a packed svd result, for an input of ``shape``."""
    rows, cols, k, ku, kv = _svd_sizes(shape, full_matrices)
    batch = tuple(shape[:-2])
    u = m.reshape(m.getitem(packed, index=(Ellipsis, slice(0, rows * ku))),
                  shape=batch + (rows, ku))
    s = m.getitem(packed, index=(Ellipsis, slice(rows * ku, rows * ku + k)))
    vh = m.reshape(m.getitem(packed, index=(Ellipsis, slice(rows * ku + k, None))),
                   shape=batch + (kv, cols))
    return u, s, vh


def _svd_unpack(packed, a, full_matrices=True, compute_uv=True):
    if not compute_uv:
        return packed
    return _svd_split(ENGINE, packed, shape_of(a), full_matrices)


def _svd_parts(m, a, name="svd"):
    """The reduced (U, s, Vh) of a in namespace m (differentiable under an outer tape)."""
    if m is NP:
        try:
            return np.linalg.svd(a, full_matrices=False)
        except np.linalg.LinAlgError as err:  # (norm's rule calls this too)
            raise _not_defined(name, f"{err} in its gradient", (a,)) from None
    return m.svd(a, full_matrices=False)


def _svd_vjp(m, g, ans, a, full_matrices=True, compute_uv=True):
    shape = shape_of(a)
    rows, cols, k, _, _ = _svd_sizes(shape, full_matrices)
    if not compute_uv:
        u, _, vh = _svd_parts(m, a)
        return m.matmul(u * _row(m, g), vh)
    u, s, vh = _svd_split(m, ans, shape, full_matrices)
    gu, gs, gvh = _svd_split(m, g, shape, full_matrices)
    if full_matrices:  # the extra columns of U and rows of Vh are arbitrary: not read
        u, gu = m.getitem(u, index=(Ellipsis, slice(0, k))), \
            m.getitem(gu, index=(Ellipsis, slice(0, k)))
        vh, gvh = m.getitem(vh, index=(Ellipsis, slice(0, k), slice(None))), \
            m.getitem(gvh, index=(Ellipsis, slice(0, k), slice(None)))
    middle = _row(m, gs) * _eye(k, gs)
    if _is_zero(gu) and _is_zero(gvh):
        return m.matmul(m.matmul(u, middle), vh)
    # autograd's grad_svd (Townsend, "Differentiating the singular value decomposition")
    v, gv = _T(m, vh), _T(m, gvh)
    # F_ij = 1 / (s_j^2 - s_i^2) enters as F_ij s_j and F_ij s_i, taken as
    # s / (s_j + s_i) / (s_j - s_i): the squares underflow or overflow (svd of 1e-170 a
    # found "repeated" values, of 1e160 a gave nan) where these factors do not
    inv_d = _off_diagonal_inverse(m, _row(m, s) - _col(m, s), "svd")
    total = m.where(_eye(k, s) == 1, 1.0, _row(m, s) + _col(m, s))
    f_row, f_col = inv_d * (_row(m, s) / total), inv_d * (_col(m, s) / total)
    utgu, vtgv = m.matmul(_T(m, u), gu), m.matmul(_T(m, v), gv)
    middle = middle + f_row * (utgu - _T(m, utgu)) + f_col * (vtgv - _T(m, vtgv))
    out = m.matmul(m.matmul(u, middle), vh)
    if rows != cols and np.any(np.asarray(_raw(s)) == 0):
        raise ValueError("svd: the gradient through U or Vh of a rank-deficient "
                         "rectangular matrix is not defined")
    if rows < cols:
        rest = _eye(cols, vh) - m.matmul(v, vh)
        out = out + m.matmul(m.matmul(u / _row(m, s), _T(m, gv)), rest)
    elif rows > cols:
        rest = _eye(rows, u) - m.matmul(u, _T(m, u))
        out = out + _T(m, m.matmul(m.matmul(v / _row(m, s), _T(m, gu)), rest))
    return out


def _svd_samples(rng):
    out = []
    for label, shape in (("3x2", (3, 2)), ("2x3", (2, 3)), ("batched", (2, 3, 2))):
        out.append((label, (_rng_matrix(rng, shape),), {"full_matrices": False}))
        out.append((label + "-values", (_rng_matrix(rng, shape),), {"compute_uv": False}))
    out.append(("3x3-full", (_rng_matrix(rng, (3, 3)),), {}))
    return out


entry(name="svd", forward=_svd, vjps=_refusing_all("svd", (_svd_vjp,)), inputs=("a",),
      params=(("full_matrices", True), ("compute_uv", True)), kind="linalg",
      doc="singular value decomposition a = U diag(S) Vh, as a tuple (U, S, Vh) (S "
        "descending); compute_uv=False gives S alone; in the language pick one: svd(a)[1]",
      derivative="U diag(g_S) Vh, plus Townsend's terms for g_U, g_Vh (distinct singular values)",
      domain="all matrices (U, Vh gradients: distinct nonzero singular values)",
      samples=_svd_samples, outputs=("U", "S", "Vh"), api=_unpacking(_svd_unpack),
      batch=_stacked_batch)


def _pinv(a):
    _matrix("pinv", a)
    return np.linalg.pinv(a)


def _pinv_vjp(m, g, ans, a):
    # Golub & Pereyra (1973), for a of constant rank:
    # a_bar = -X^T g X^T + (I - a X) g^T X X^T + X^T X g^T (I - X a), X = pinv(a)
    x, xt, gt = ans, _T(m, ans), _T(m, g)
    rows, cols = shape_of(a)[-2], shape_of(a)[-1]
    left = _eye(rows, x) - m.matmul(a, x)
    right = _eye(cols, x) - m.matmul(x, a)
    return (-m.matmul(m.matmul(xt, g), xt) + m.matmul(m.matmul(left, gt), m.matmul(x, xt))
            + m.matmul(m.matmul(xt, x), m.matmul(gt, right)))


def _pinv_samples(rng):
    return [("3x2", (_rng_matrix(rng, (3, 2)),), {}), ("2x3", (_rng_matrix(rng, (2, 3)),), {}),
            ("2x2", (_rng_matrix(rng, (2, 2), 2.0),), {}),
            ("batched", (_rng_matrix(rng, (2, 3, 2)),), {})]


entry(name="pinv", forward=_pinv, vjps=_refusing_all("pinv", (_pinv_vjp,)), inputs=("a",),
      kind="linalg", doc="Moore-Penrose pseudo-inverse (batched)",
      derivative="Golub-Pereyra: -X^T g X^T + (I - aX) g^T X X^T + X^T X g^T (I - Xa)",
      domain="matrices of full rank (the gradient assumes the rank does not change)",
      sympy=_sympy_matrices(lambda sp, a: a.pinv()), samples=_pinv_samples, batch=_stacked_batch)


# ---------------------------------------------------------------------------------------
# trace, diag, diagonal, triu, tril
# ---------------------------------------------------------------------------------------
def _diagonal_index(n1, n2, offset):
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        rows = np.arange(length)
        return rows, rows + offset
    length = max(0, min(n1 + offset, n2))
    cols = np.arange(length)
    return cols - offset, cols


def _diag_embed(m, g, shape, offset, axis1, axis2):
    """The adjoint of ``np.diagonal(x, offset, axis1, axis2)``: g (the diagonal as the
    last axis) placed on that diagonal of zeros of ``shape``."""
    nd = len(shape)
    a1, a2 = axis1 % nd, axis2 % nd
    perm = tuple(i for i in range(nd) if i not in (a1, a2)) + (a1, a2)
    moved = tuple(shape[i] for i in perm)
    rows, cols = _diagonal_index(moved[-2], moved[-1], offset)
    out = m.scatter(g, index=(Ellipsis, rows, cols), shape=moved)
    return m.transpose(out, axes=tuple(int(i) for i in np.argsort(perm)))


def _diagonal_batch(op, values, batched, params):
    """diagonal and trace: axis1, axis2 (not normalised by the table) made an example's,
    then moved up by one; the result keeps the batch axis first."""
    b = _batching()
    rank = b.example_ndim(values[0], True)
    p = {**dict(op.params), **params}
    first, second = b.example_axis(p["axis1"], rank), b.example_axis(p["axis2"], rank)
    if first is None or second is None or first == second:
        return b.loop(op, values, batched, params)  # numpy's error
    return apply(op, (values[0],), {"offset": p["offset"], "axis1": first + 1,
                                    "axis2": second + 1})


def _diagonal(x, offset=0, axis1=0, axis2=1):
    return np.diagonal(x, offset, axis1, axis2).copy()


entry(name="diagonal", forward=_diagonal,
      vjps=_refusing_all("diagonal", (lambda m, g, ans, x, offset=0, axis1=0, axis2=1:
         _diag_embed(m, g, shape_of(x), offset, axis1, axis2),)),
      jvps=(_applied("diagonal"),), inputs=("x",),
      params=(("offset", 0), ("axis1", 0), ("axis2", 1)), kind="linalg", saves="none",
      doc="the diagonal of x over axis1, axis2 (as the last axis), as numpy",
      derivative="g on the diagonal, 0 elsewhere", domain="arrays of 2 or more dimensions",
      sympy=lambda sp, x, offset=0, axis1=0, axis2=1: np.diagonal(x, offset, axis1, axis2),
      samples=lambda rng: [("3x3", (rng.uniform(-1, 1, (3, 3)),), {}),
                             ("offset", (rng.uniform(-1, 1, (3, 4)),), {"offset": 1}),
                             ("axes", (rng.uniform(-1, 1, (2, 3, 3)),),
                              {"offset": -1, "axis1": -1, "axis2": 0})],
      batch=_diagonal_batch)


def _trace(x, offset=0, axis1=0, axis2=1):
    return np.trace(x, offset, axis1, axis2)


def _trace_vjp(m, g, ans, x, offset=0, axis1=0, axis2=1):
    shape = shape_of(x)
    nd = len(shape)
    a1, a2 = axis1 % nd, axis2 % nd
    rows, _ = _diagonal_index(shape[a1], shape[a2], offset)
    gcol = m.reshape(g, shape=shape_of(g) + (1,))
    gd = m.broadcast_to(gcol, shape=shape_of(g) + (len(rows),))
    return _diag_embed(m, gd, shape, offset, a1, a2)


entry(name="trace", forward=_trace, vjps=_refusing_all("trace", (_trace_vjp,)),
      jvps=(_applied("trace"),), inputs=("x",), params=(("offset", 0), ("axis1", 0), ("axis2", 1)),
      kind="linalg", saves="none", doc="sum of the diagonal over axis1, axis2 (numpy's trace)",
      derivative="1 on the diagonal", domain="arrays of 2 or more dimensions",
      sympy=lambda sp, x, offset=0, axis1=0, axis2=1: np.trace(x, offset, axis1, axis2),
      samples=lambda rng: [("3x3", (rng.uniform(-1, 1, (3, 3)),), {}),
                             ("offset", (rng.uniform(-1, 1, (3, 4)),), {"offset": -1}),
                             ("batched", (rng.uniform(-1, 1, (2, 3, 3)),),
                              {"axis1": 1, "axis2": 2})],
      batch=_diagonal_batch)


def _diag(v, k=0):
    if np.ndim(v) not in (1, 2):
        raise ValueError(f"diag takes a vector or a matrix, got shape {np.shape(v)}")
    return np.diag(v, k)


def _diag_batch(op, values, batched, params):
    """Each example's rank decides: a matrix's k-th diagonal is ``diagonal`` of axes 1
    and 2; a vector is scattered onto the k-th diagonal of zeros (batch, n+|k|, n+|k|)."""
    b = _batching()
    v = values[0]
    shape = b.example_shape(v, True)
    k = params.get("k", 0)
    if len(shape) == 2:
        return apply(REGISTRY["diagonal"], (v,), {"offset": k, "axis1": 1, "axis2": 2})
    if len(shape) != 1:
        return b.loop(op, values, batched, params)  # the entry's error
    size = shape[0] + abs(int(k))
    rows, cols = _diagonal_index(size, size, int(k))
    return apply(INTERNAL["scatter"], (v,), {"index": (slice(None), rows, cols),
                                                  "shape": (np.shape(v._value)[0], size, size)})


def _diag_vjp(m, g, ans, v, k=0):
    shape = shape_of(v)
    if len(shape) == 1:
        return m.diagonal(g, offset=k)
    return _diag_embed(m, g, shape, k, 0, 1)


entry(name="diag", forward=_diag, vjps=_refusing_all("diag", (_diag_vjp,)),
      jvps=(_applied("diag"),), inputs=("v",), params=(("k", 0),), kind="linalg", saves="none",
      doc="a vector on the k-th diagonal of a matrix, or a matrix's k-th diagonal (numpy)",
      derivative="the diagonal of g, or g on the diagonal", domain="vectors and matrices",
      sympy=lambda sp, v, k=0: np.diag(v, k),
      samples=lambda rng: [("vector", (rng.uniform(-1, 1, 3),), {}),
                             ("vector-k", (rng.uniform(-1, 1, 3),), {"k": -1}),
                             ("matrix", (rng.uniform(-1, 1, (3, 4)),), {"k": 1})],
      batch=_diag_batch)


def _triangle_batch(op, values, batched, params):
    """numpy's triangles act on the last two axes; a vector example is first broadcast to
    the square matrix numpy makes of it (each row the vector)."""
    b = _batching()
    x = values[0]
    shape = b.example_shape(x, True)
    if not shape:
        return b.loop(op, values, batched, params)  # numpy's error
    if len(shape) == 1:
        n = np.shape(x._value)[0]
        x = apply(INTERNAL["broadcast_to"], (b.reshaped(x, (n, 1, shape[0])),),
                  {"shape": (n, shape[0], shape[0])})
    return apply(op, (x,), params)


def _triangle(name, fn):
    entry(name=name, forward=lambda x, k=0: fn(x, k),
          vjps=_refusing_all(name, (lambda m, g, ans, x, k=0: getattr(m, name)(g, k=k),)),
          jvps=(_applied(name),), inputs=("x",), params=(("k", 0),), kind="linalg", saves="none",
          doc=f"{'upper' if name == 'triu' else 'lower'} triangle of the last two axes from "
            f"the k-th diagonal, zeros elsewhere",
          derivative="g on the triangle, 0 elsewhere", domain="arrays of 2 or more dimensions",
          sympy=lambda sp, x, k=0: fn(np.asarray(x, dtype=object), k), batch=_triangle_batch,
          samples=lambda rng: [("3x3", (rng.uniform(-1, 1, (3, 3)),), {}),
                                 ("batched-k", (rng.uniform(-1, 1, (2, 3, 4)),), {"k": 1}),
                                 ("k-neg", (rng.uniform(-1, 1, (3, 3)),), {"k": -1})])


_triangle(name="triu", fn=np.triu)
_triangle(name="tril", fn=np.tril)


# ---------------------------------------------------------------------------------------
# einsum, and the products written with it (inner, tensordot, outer, kron, cross)
# ---------------------------------------------------------------------------------------
_SUBSCRIPT_CHARS = set(_LETTERS) | set(",->. ")


class SubscriptError(ValueError):
    """A malformed einsum subscripts string; ``offset`` is the position of the fault."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


def check_subscripts(text: str, n_operands: int | None = None) -> None:
    """Check the syntax of einsum subscripts (letters, ``,``, ``->``, ``...``, spaces),
    raising ``SubscriptError`` with the offset of the first fault."""
    for i, ch in enumerate(text):
        if ch not in _SUBSCRIPT_CHARS:
            raise SubscriptError(f"einsum subscripts may contain only letters, ',', '->', "
                                 f"'...' and spaces, not {ch!r}", i)
    arrow = text.find("->")
    if text.count("->") > 1:
        raise SubscriptError("einsum subscripts have more than one '->'",
                             text.find("->", arrow + 1))
    for i, ch in enumerate(text):
        if ch == "-" and text[i:i + 2] != "->":
            raise SubscriptError("'-' must be followed by '>' (the output arrow '->')", i)
        if ch == ">" and text[i - 1:i + 1] != "->":
            raise SubscriptError("'>' must follow '-' (the output arrow '->')", i)
    inputs = text if arrow < 0 else text[:arrow]
    output = None if arrow < 0 else text[arrow + 2:]
    start = 0
    terms = []
    for part in inputs.split(","):
        terms.append((part, start))
        start += len(part) + 1
    if output is not None:
        if "," in output:
            raise SubscriptError("the output of einsum (after '->') is one term: no ','",
                                 arrow + 2 + output.index(","))
    for term, at in terms + ([(output, arrow + 2)] if output is not None else []):
        _check_term(term, at)
    if output is not None:
        letters = set(inputs)
        for i, ch in enumerate(output):
            if ch.isalpha() and ch not in letters:
                raise SubscriptError(f"output subscript {ch!r} appears in no input",
                                     arrow + 2 + i)
            if ch.isalpha() and output.count(ch) > 1:
                raise SubscriptError(f"output subscript {ch!r} appears more than once",
                                     arrow + 2 + i)
    if n_operands is not None and len(terms) != n_operands:
        raise SubscriptError(f"einsum subscripts name {len(terms)} operand"
                             f"{'s' if len(terms) != 1 else ''}, but {n_operands} "
                             f"{'were' if n_operands != 1 else 'was'} given", 0)


def _check_term(term: str, at: int) -> None:
    i = term.find(".")
    if i >= 0:
        if term[i:i + 3] != "...":
            raise SubscriptError("'.' is only allowed as the ellipsis '...'", at + i)
        if "." in term[i + 3:]:
            raise SubscriptError("one ellipsis '...' per term at most", at + i + 3)


@lru_cache(maxsize=256)
def _canonical(subscripts: str, shapes: tuple) -> tuple:
    """(input terms, output term, letter sizes) with the ellipsis replaced by letters, as
    numpy reads the subscripts (implicit output: the letters appearing once, sorted)."""
    check_subscripts(subscripts, len(shapes))
    text = subscripts.replace(" ", "")
    inputs, _, output = text.partition("->")
    terms = inputs.split(",")
    used = set(text)
    spare = [c for c in _LETTERS if c not in used]
    n_ellipsis = 0
    for term, shape in zip(terms, shapes):
        named = len(term.replace("...", ""))
        if "..." in term:
            n_ellipsis = max(n_ellipsis, len(shape) - named)
        if len(shape) < named or ("..." not in term and len(shape) != named):
            raise ValueError(f"einsum: operand of shape {shape} does not fit the subscripts "
                             f"{term!r}")
    if n_ellipsis > len(spare):
        raise ValueError("einsum: too many dimensions for the letters left")
    ell = "".join(spare[:n_ellipsis])
    expanded = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            k = len(shape) - len(term.replace("...", ""))
            term = term.replace("...", ell[n_ellipsis - k:] if k else "")
        expanded.append(term)
    if "->" in text:
        out = output.replace("...", ell)
    else:
        joined = "".join(expanded)
        once = sorted(c for c in set(inputs) if c.isalpha() and joined.count(c) == 1)
        out = ell + "".join(once)
    sizes: dict = {}
    for term, shape in zip(expanded, shapes):
        for c, n in zip(term, shape):
            if sizes.get(c, 1) != 1 and n != 1 and sizes[c] != n:
                raise ValueError(f"einsum: subscript {c!r} has sizes {sizes[c]} and {n}")
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    return tuple(expanded), out, sizes


def _einsum(*xs, subscripts):
    _canonical(subscripts, tuple(np.shape(x) for x in xs))  # gradcli's messages (cached)
    return np.einsum(subscripts, *xs, optimize=len(xs) > 2)


def _es(m, subscripts, *xs):
    """einsum in namespace m."""
    if m is NP:
        return np.einsum(subscripts, *xs, optimize=len(xs) > 2)
    return apply(EINSUM, xs, {"subscripts": subscripts})


def _einsum_grad(m, g, xs, subscripts, index):
    """The gradient of einsum for operand ``index``: the einsum of the upstream gradient
    with the other operands, into the operand's subscripts. A letter only this operand
    has is contracted with ones; a letter it repeats (a diagonal) gets a fresh letter
    and an identity matrix, which places the gradient on that diagonal."""
    terms, out, sizes = _canonical(subscripts, tuple(tuple(shape_of(x)) for x in xs))
    mine = terms[index]
    others = [out] + [t for j, t in enumerate(terms) if j != index]
    operands = [g] + [x for j, x in enumerate(xs) if j != index]
    present = set("".join(others))
    free = [c for c in _LETTERS if c not in set("".join(terms) + out)]
    shape = shape_of(xs[index])
    target = []
    seen = set()
    for c, n in zip(mine, shape):
        if c in seen:
            fresh = free.pop()
            size = sizes[c]
            others.append(c + fresh)
            operands.append(_eye(size, g))
            target.append(fresh)
            continue
        seen.add(c)
        target.append(c)
        if c not in present:
            others.append(c)
            operands.append(np.ones(n, dtype=_dtype(g)))
            present.add(c)
    return _es(m, ",".join(others) + "->" + "".join(target), *operands)


def _einsum_samples(rng):
    u = lambda *s: rng.uniform(-1, 1, s)  # noqa: E731
    return [("matmul", (u(2, 3), u(3, 4)), {"subscripts": "ij,jk->ik"}),
            ("implicit", (u(2, 3), u(3, 2)), {"subscripts": "ij,jk"}),
            ("trace", (u(3, 3),), {"subscripts": "ii"}),
            ("diagonal", (u(3, 3),), {"subscripts": "ii->i"}),
            ("sum", (u(2, 3),), {"subscripts": "ij->"}),
            ("outer-repeat", (u(3), u(3, 3)), {"subscripts": "i,ii->i"}),
            ("ellipsis", (u(2, 1, 3, 4), u(5, 4, 2)), {"subscripts": "...ij,...jk->...ik"}),
            ("ellipsis-implicit", (u(2, 3, 3),), {"subscripts": "...ii"}),
            ("three", (u(2, 3), u(3, 4), u(4)), {"subscripts": "ij,jk,k->i"}),
            ("broadcast-one", (u(3, 1), u(1, 4)), {"subscripts": "ij,jk->ik"})]


def _einsum_api(op, plain):
    def einsum(*args, **kwargs):
        """einsum(subscripts, *operands), as numpy, or numpy's sublist form
        einsum(a, [0, 1], b, [1, 2], [0, 2]) (the table's einsum([a, b], subscripts)
        works too)."""
        if args and isinstance(args[0], str) and not kwargs:
            return plain(list(args[1:]), args[0])
        if len(args) >= 2 and _is_sublist(args[1]) and not kwargs:
            return plain(*_from_sublists(args))
        if args and isinstance(args[0], (list, tuple)):
            return plain(*args, **kwargs)
        raise TypeError("einsum takes the subscripts string first: einsum('ij,jk->ik', a, b), "
                        "or numpy's sublists: einsum(a, [0, 1], b, [1, 2])")
    einsum.__doc__ = plain.__doc__
    return einsum


def _is_sublist(x) -> bool:
    """A sublist of numpy's einsum: axis labels, integers (or an Ellipsis)."""
    return isinstance(x, (list, tuple)) and all(
        item is Ellipsis or (isinstance(item, (int, np.integer)) and not isinstance(item, bool))
        for item in x)


def _from_sublists(args) -> tuple:
    """numpy's einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as (operands,
    subscripts), labels read as numpy reads them: 0-25 are 'A'-'Z', 26-51 'a'-'z' (so an
    implicit output comes out in the labels' order, as in numpy)."""
    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    operands, sublists = list(pairs[0::2]), list(pairs[1::2])
    if output is not None:
        sublists.append(output)
    terms = []
    for sublist in sublists:
        if not _is_sublist(sublist):
            raise TypeError(f"einsum: a sublist holds integer labels (or ...), got {sublist!r}")
        terms.append("".join("..." if label is Ellipsis else _label(label)
                             for label in sublist))
    subscripts = ",".join(terms[:len(operands)])
    return operands, subscripts if output is None else f"{subscripts}->{terms[-1]}"


def _label(label) -> str:
    label = int(label)
    if not 0 <= label < 52:
        raise ValueError(f"einsum: a sublist label must be an integer from 0 to 51, got {label}")
    return chr(ord("A") + label) if label < 26 else chr(ord("a") + label - 26)


def _sympy_einsum(sp, *xs, subscripts):
    return np.einsum(subscripts, *[np.asarray(x, dtype=object) for x in xs])


def _batched_einsum(op, values, batched, params, terms, out):
    """The einsum ``terms -> out`` (explicit letters, no ellipsis) of every example: a
    letter no term uses names the batch axis of the batched operands and the output
    (unbatched operands are shared by all examples as they are)."""
    used = set("".join(terms) + out)
    free = [c for c in _LETTERS if c not in used]
    if not free:  # all 52 letters name an example's axes: none is left for the batch
        return _batching().loop(op, values, batched, params)
    z = free[0]
    subscripts = ",".join(z + t if k else t for t, k in zip(terms, batched)) + "->" + z + out
    return apply(EINSUM, values, {"subscripts": subscripts})


def _einsum_batch(op, values, batched, params):
    """The subscripts read for the examples' shapes (ellipsis and implicit output made
    explicit letters), then one batch letter added."""
    b = _batching()
    shapes = tuple(tuple(b.example_shape(v, k)) for v, k in zip(values, batched))
    try:
        terms, out, _ = _canonical(params.get("subscripts"), shapes)
    except (ValueError, TypeError, AttributeError):
        return b.loop(op, values, batched, params)  # the entry's own message
    return _batched_einsum(op, values, batched, params, terms, out)


EINSUM = entry(name="einsum", forward=_einsum,
               vjps=_refusing_all("einsum", (lambda m, g, ans, *xs, index, subscripts:
                                     _einsum_grad(m, g, xs, subscripts, index),)),
               inputs=("operands",), params=(("subscripts", None),), variadic=True, kind="linalg",
               saves="inputs",
               doc="Einstein summation, numpy's subscripts: einsum('ij,jk->ik', "
                 "a, b); implicit output, repeated letters (traces, diagonals) and '...'",
               derivative="the einsum of g with the other operands (diagonals embedded)",
               domain="all reals (sizes as the subscripts say)", sympy=_sympy_einsum,
               samples=_einsum_samples, api=_einsum_api, batch=_einsum_batch)


def _contraction(name, subscripts_of, doc, derivative, params=(), samples=None,
                 sympy=None, domain="all reals", check=None):
    """An entry that is an einsum of its two inputs with subscripts computed from the
    shapes (and params): its rules are einsum's."""
    def forward(a, b, **p):
        if check is not None:
            check(a, b, **p)
        return np.einsum(subscripts_of(np.ndim(a), np.ndim(b), **p), a, b)

    def vjp(i):
        return lambda m, g, ans, a, b, **p: _einsum_grad(
            m, g, (a, b), subscripts_of(len(shape_of(a)), len(shape_of(b)), **p), i)

    def batch(op, values, batched, params):
        # the einsum of the examples' ranks, with a batch letter (_batched_einsum)
        b = _batching()
        try:
            subscripts = subscripts_of(*(b.example_ndim(v, k) for v, k in zip(values, batched)),
                                       **params)
        except (ValueError, TypeError, IndexError):
            return b.loop(op, values, batched, params)  # the entry's own message
        inputs, out = subscripts.split("->")
        return _batched_einsum(op, values, batched, params, inputs.split(","), out)
    return entry(name=name, forward=forward, vjps=_refusing_all(name, (vjp(0), vjp(1))),
                 jvps=_bilinear(name), inputs=("a", "b"), params=params, kind="linalg",
                 saves="inputs", doc=doc, derivative=derivative, domain=domain, sympy=sympy,
                 samples=samples, own_axes=bool(params), batch=batch)


_L = _LETTERS


def _inner_subscripts(na, nb):
    if na == 0 or nb == 0:
        return f"{_L[:na]},{_L[na:na + nb]}->{_L[:na + nb]}"
    a, b = _L[:na - 1], _L[na - 1:na + nb - 2]
    return f"{a}Z,{b}Z->{a}{b}"


def _pair_samples(*cases):
    def samples(rng):
        return [(label, tuple(rng.uniform(-1, 1, s) for s in shapes), params)
                for label, shapes, params in cases]
    return samples


_contraction(name="inner", subscripts_of=_inner_subscripts,
             doc="inner product over the last axes (numpy's inner)",
             derivative="as einsum", sympy=lambda sp, a, b: np.inner(a, b),
             samples=_pair_samples(("vectors", ((3,), (3,)), {}),
                                   ("matrices", ((2, 3), (4, 3)), {}),
                                   ("scalar", ((), (2, 3)), {})))


def _tensordot_axes(na, nb, axes):
    if isinstance(axes, tuple) and len(axes) == 1 and not isinstance(axes[0], tuple):
        axes = axes[0]  # the language writes an integer as a 1-tuple
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(na, nb):
            raise ValueError(f"tensordot: axes={n} does not fit shapes of {na} and {nb} "
                             f"dimensions")
        return list(range(na - n, na)), list(range(n))
    first, second = axes
    first = [first] if isinstance(first, (int, np.integer)) else list(first)
    second = [second] if isinstance(second, (int, np.integer)) else list(second)
    if len(first) != len(second):
        raise ValueError("tensordot: the two lists of axes differ in length")
    return [int(i) % na for i in first], [int(i) % nb for i in second]


def _tensordot_subscripts(na, nb, axes=2):
    ax_a, ax_b = _tensordot_axes(na, nb, axes)
    a = list(_L[:na])
    b = list(_L[na:na + nb])
    for i, j in zip(ax_a, ax_b):
        b[j] = a[i]
    out = [c for i, c in enumerate(a) if i not in ax_a] + \
        [c for j, c in enumerate(b) if j not in ax_b]
    return f"{''.join(a)},{''.join(b)}->{''.join(out)}"


_contraction(name="tensordot", subscripts_of=_tensordot_subscripts,
             doc="sum of products over the given axes (numpy's tensordot; axes=n: the last n of "
             "a with the first n of b)", derivative="as einsum", params=(("axes", 2),),
             sympy=lambda sp, a, b, axes=2: np.einsum(
                 _tensordot_subscripts(np.ndim(a), np.ndim(b), axes), a, b),
             samples=_pair_samples(("default", ((2, 3, 4), (3, 4, 2)), {}),
                                   ("one", ((2, 3), (3, 2)), {"axes": 1}),
                                   ("pairs", ((2, 3, 4), (4, 2)), {"axes": ((2, 0), (0, 1))})))


def _outer_forward(a, b):
    return np.outer(a, b)


def _outer_vjp_a(m, g, ans, a, b):
    flat = m.reshape(b, shape=(-1,))
    return m.reshape(m.matmul(g, flat), shape=shape_of(a))


def _outer_vjp_b(m, g, ans, a, b):
    flat = m.reshape(a, shape=(-1,))
    return m.reshape(m.matmul(flat, g), shape=shape_of(b))


def _outer_batch(op, values, batched, params):
    """Each example's flattened a as a column times its flattened b as a row."""
    b = _batching()

    def flat(v, is_batched, column):
        size = int(np.prod(b.example_shape(v, is_batched), dtype=np.int64))
        lead = (np.shape(v._value)[0],) if is_batched else ()
        return b.reshaped(v, lead + ((size, 1) if column else (1, size)))
    (a, c), (a_batched, c_batched) = values, batched
    return apply(REGISTRY["multiply"], (flat(a, a_batched, True),
                                             flat(c, c_batched, False)))


entry(name="outer", forward=_outer_forward,
      vjps=_refusing_all("outer", (_outer_vjp_a, _outer_vjp_b)), jvps=_bilinear("outer"),
      inputs=("a", "b"), kind="linalg", saves="inputs",
      doc="outer product of the flattened inputs", derivative="g @ b, a @ g",
      domain="all real matrices", sympy=lambda sp, a, b: np.outer(a, b),
      samples=_pair_samples(("vectors", ((3,), (2,)), {}), ("flattened", ((2, 2), (3,)), {}),
                              ("scalar", ((), (3,)), {})),
      batch=_outer_batch)


def _kron_shapes(sa, sb):
    n = max(len(sa), len(sb))
    return (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)


def _kron_vjp(which):
    def vjp(m, g, ans, a, b):
        sa, sb = _kron_shapes(shape_of(a), shape_of(b))
        n = len(sa)
        xs, ys = _L[:n], _L[n:2 * n]
        interleaved = tuple(d for pair in zip(sa, sb) for d in pair)
        g4 = m.reshape(g, shape=interleaved)
        gsubs = "".join(x + y for x, y in zip(xs, ys))
        if which == 0:
            out = _es(m, f"{gsubs},{ys}->{xs}", g4, m.reshape(b, shape=sb))
            return m.reshape(out, shape=shape_of(a))
        out = _es(m, f"{gsubs},{xs}->{ys}", g4, m.reshape(a, shape=sa))
        return m.reshape(out, shape=shape_of(b))
    return vjp


def _kron_batch(op, values, batched, params):
    """np.kron of every example: both padded with leading ones to one rank (as numpy),
    a's axes interleaved with unit axes before b's and b's after, the product of the
    two reshaped to (batch, a_i * b_i, ...)."""
    b = _batching()
    (a, c), (a_batched, c_batched) = values, batched
    sa, sc = _kron_shapes(b.example_shape(a, a_batched), b.example_shape(c, c_batched))
    n = b.batch_size(op, values, batched)

    def spread(v, is_batched, shape, first):
        inner = tuple(d for s in shape for d in ((s, 1) if first else (1, s)))
        return b.reshaped(v, ((n,) if is_batched else ()) + inner)
    product = apply(REGISTRY["multiply"], (spread(a, a_batched, sa, True),
                                                spread(c, c_batched, sc, False)))
    return b.reshaped(product, (n,) + tuple(x * y for x, y in zip(sa, sc)))


entry(name="kron", forward=np.kron, vjps=_refusing_all("kron", (_kron_vjp(0), _kron_vjp(1))),
      jvps=_bilinear("kron"), inputs=("a", "b"), kind="linalg", saves="inputs",
      doc="Kronecker product (numpy's kron)",
      derivative="blocks of g contracted with the other input", domain="all real matrices",
      sympy=lambda sp, a, b: np.kron(np.asarray(a, dtype=object), np.asarray(b, dtype=object)),
      samples=_pair_samples(("matrices", ((2, 2), (3, 2)), {}), ("vectors", ((2,), (3,)), {}),
                              ("mixed", ((2,), (2, 3)), {})),
      batch=_kron_batch)


def _from_end(axis, a):
    """cross's axis counted from the end of ``a`` (the same for inputs of other ranks,
    which broadcast against a from the end)."""
    axis = int(axis)
    return axis - np.ndim(a) if axis >= 0 else axis


def _cross(a, b, axis=-1):
    axis = _from_end(axis, a)
    if not (-np.ndim(a) <= axis and -np.ndim(b) <= axis) \
            or np.shape(a)[axis] != 3 or np.shape(b)[axis] != 3:
        raise ValueError(f"cross takes vectors of 3 components along axis {axis}, got "
                         f"shapes {np.shape(a)} and {np.shape(b)}")
    return np.cross(a, b, axis=axis)


def _cross_vjp(which):
    def vjp(m, g, ans, a, b, axis=-1):
        axis = axis - len(shape_of(a)) if axis >= 0 else axis
        return m.cross(b, g, axis=axis) if which == 0 else m.cross(g, a, axis=axis)
    return vjp


def _cross_batch(op, values, batched, params):
    """cross's axis counts from the end of a, the same place in every example: the
    batched inputs lifted to one example rank broadcast as the examples do."""
    b = _batching()
    (a, c), (a_batched, c_batched) = values, batched
    sa, sc = b.example_shape(a, a_batched), b.example_shape(c, c_batched)
    axis = params.get("axis", -1)
    try:
        axis = int(axis) - len(sa) if int(axis) >= 0 else int(axis)
        fits = -len(sa) <= axis and -len(sc) <= axis and sa[axis] == 3 and sc[axis] == 3
    except (TypeError, ValueError):
        fits = False
    if not fits:
        return b.loop(op, values, batched, params)  # the entry's error
    return apply(op, tuple(b.lift_batched(values, batched)), {"axis": axis})


def _cross_api(op, plain):
    """``cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None)``: numpy.cross's signature.
    ``axisa``/``axisb`` are the vector axes of a and b, ``axisc`` the result's, each read
    against its own array as numpy reads them; ``axis`` (one for all three) overrides
    them and is the entry's, counted from the end of a (numpy's too wherever a and b have
    one rank, or the axis is negative)."""
    def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if axis is not None or axisa == axisb == axisc == -1:
            return plain(a, b, -1 if axis is None else axis)
        moveaxis = FUNCTIONS["moveaxis"]
        a = moveaxis(a, _vector_axis(axisa, a, "axisa"), -1)
        b = moveaxis(b, _vector_axis(axisb, b, "axisb"), -1)
        c = plain(a, b, -1)
        return moveaxis(c, -1, _vector_axis(axisc, c, "axisc"))
    cross.__doc__ = (f"{plain.__doc__}\n\ncross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) "
                     f"as numpy.cross (3-vectors): the vector axes of a, b and the result.")
    return cross


def _vector_axis(axis, x, name: str) -> int:
    """numpy.cross's ``axisa``/``axisb``/``axisc`` for ``x``, or a ShapeError naming it."""
    from ...errors import ShapeError
    ndim = len(shape_of(x))
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) \
            or not -ndim <= axis < ndim:
        raise ShapeError(f"cross: {name}={axis!r} is not an axis of an array of shape "
                         f"{shape_of(x)}")
    return int(axis) % ndim


entry(name="cross", forward=_cross, vjps=_refusing_all("cross", (_cross_vjp(0), _cross_vjp(1))),
      jvps=_bilinear("cross"), inputs=("a", "b"), params=(("axis", -1),), kind="linalg",
      saves="inputs",
      doc="cross product of 3-vectors along axis (broadcast; axis counts from the "
        "end of a)",
      derivative="b x g, g x a", domain="vectors of 3 components",
      sympy=lambda sp, a, b, axis=-1: np.cross(a, b, axis=_from_end(axis, a)), own_axes=True,
      samples=_pair_samples(("vectors", ((3,), (3,)), {}),
                              ("broadcast", ((2, 3), (3,)), {}),
                              ("axis0", ((3, 2), (3, 2)), {"axis": 0}),
                              ("mixed-ranks", ((2, 3, 2), (3, 1)), {"axis": 1})),
      batch=_cross_batch, api=_cross_api)


# ---------------------------------------------------------------------------------------
# norm with ord= (the norm entry, at the end of this module, comes here when ord is given)
# ---------------------------------------------------------------------------------------
def reduced_axes(shape, axis):
    """('vector', (axis,)) or ('matrix', (row, col)) as numpy reads ord with axis."""
    nd = len(shape)
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        axis = (axis,)
    axes = tuple(int(a) % nd for a in axis)
    if len(axes) == 1:
        return "vector", axes
    if len(axes) == 2 and axes[0] != axes[1]:
        return "matrix", axes
    raise ValueError("norm with ord takes one axis (vector norms) or two (matrix norms)")


def norm_forward(x, axis, keepdims, ord):
    """``np.linalg.norm(x, ord, axis, keepdims)``."""
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise ValueError(f"norm: ord must be a number, inf, 'fro' or 'nuc', not {ord!r}")
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def norm_vjp(m, g, ans, x, axis, keepdims, ord):
    """The gradient of ``norm(x, axis, keepdims, ord)`` for a given ord."""
    shape = shape_of(x)
    kind, axes = reduced_axes(shape, axis)
    ge = expand_reduced(m, g, shape, axes, keepdims)
    if kind == "vector" or ord == "fro":
        p = 2.0 if ord == "fro" else float(ord)
        if p not in (0.0, 1.0) and not np.isinf(p) \
                and not ordinary(_raw(ans), norm_bounds(x, p)):
            # the norm underflowed or overflowed (or lost digits): the gradient, the same
            # at x and c x, taken at x / max|x| (see reductions.rescaled)
            x, ans = rescaled(m, x, axes, lambda v: m.norm(
                v, axis=axis, keepdims=keepdims, ord=ord))
    top = keep_reduced_axes(m, ans, shape, axes, keepdims)
    if kind == "vector" or ord == "fro":
        if p == 0:
            return m.zeros_like(x)
        if p == 1:  # sign(x); a hard 0 at x = 0 (abs's kink, see elementwise.gate)
            return gate(m, x != 0, ge * m.sign(x), ge)
        if np.isinf(p):  # the largest (smallest) |x|: ties split equally, as max does
            mask = m.abs(x) == top
            count = m.sum(mask * _dtype(x).type(1), axis=axes, keepdims=True)
            return gate(m, mask, ge * m.sign(x) / count, ge)
        # sign(x) |x|^(p-1) / norm^(p-1); 0 where x = 0 and where the norm is 0
        zero, empty = x == 0, top == 0
        safe = m.abs(m.where(zero, 1.0, x))
        denom = m.where(empty, 1.0, top)
        part = gate(m, x != 0, ge * m.sign(x) * (safe / denom) ** (p - 1.0), ge)
        return gate(m, top != 0, part, ge)
    rows, cols = axes
    if ord in (1, -1, np.inf, -np.inf):
        over = rows if ord in (1, -1) else cols  # column sums (1) or row sums (inf)
        sums = m.sum(m.abs(x), axis=over, keepdims=True)
        best = sums == top
        count = m.sum(best * _dtype(x).type(1), axis=axes, keepdims=True)  # tied columns
        mask = m.broadcast_to(best, shape=shape)
        return gate(m, mask, ge * m.sign(x) / count, ge)
    # 2, -2, 'nuc': through the singular value decomposition of the moved matrices
    nd = len(shape)
    perm = tuple(i for i in range(nd) if i not in axes) + (rows, cols)
    u, _, vh = _svd_parts(m, m.transpose(x, axes=perm), "norm")
    if ord == "nuc":
        dx = m.matmul(u, vh)
    else:
        j = 0 if ord == 2 else -1
        pick = slice(j, None) if j == -1 else slice(0, 1)
        dx = m.matmul(m.getitem(u, index=(Ellipsis, pick)),
                      m.getitem(vh, index=(Ellipsis, pick, slice(None))))
    return ge * m.transpose(dx, axes=tuple(int(i) for i in np.argsort(perm)))


def sympy_norm(sp, x, axis=None, keepdims=False, ord=None):
    """The symbolic norm for a given ord (vector p-norms, matrix 1, inf, 'fro')."""
    arr = np.asarray(x, dtype=object)
    kind, axes = reduced_axes(arr.shape, axis)
    rest = [i for i in range(arr.ndim) if i not in axes]
    moved = np.transpose(arr, rest + list(axes))
    lead = moved.shape[:len(rest)]
    out = np.empty(lead, dtype=object)
    for idx in np.ndindex(lead):
        block = moved[idx]
        if kind == "vector" or ord == "fro":
            out[idx] = _sympy_vector_norm(sp, list(block.ravel()), 2 if ord == "fro" else ord)
        elif ord in (1, -1, np.inf, -np.inf):
            sums = [sp.Add(*[sp.Abs(v) for v in line])
                    for line in (block.T if ord in (1, -1) else block)]
            out[idx] = sp.Max(*sums) if ord > 0 else sp.Min(*sums)
        else:
            raise ValueError(f"no symbolic form for the matrix norm ord={ord!r}")
    if keepdims:
        out = out.reshape(tuple(1 if i in axes else n for i, n in enumerate(arr.shape)))
    return out if out.ndim else out[()]


def _sympy_vector_norm(sp, values, p):
    if p == np.inf:
        return sp.Max(*[sp.Abs(v) for v in values])
    if p == -np.inf:
        return sp.Min(*[sp.Abs(v) for v in values])
    if p == 0:
        raise ValueError("no symbolic form for ord=0 (a count)")
    if p == 1:
        return sp.Add(*[sp.Abs(v) for v in values])
    if p == 2:
        return sp.sqrt(sp.Add(*[v ** 2 for v in values]))
    exponent = sp.nsimplify(p)
    return sp.Add(*[sp.Abs(v) ** exponent for v in values]) ** (1 / exponent)


def norm_samples(rng):
    """Calls of norm with ord, for the table-wide tests."""
    u = lambda *s: rng.uniform(-1, 1, s)  # noqa: E731
    out = [(f"vector-ord{o}", (u(4),), {"ord": o}) for o in (1, 2, 3, 0.5, np.inf, -np.inf)]
    out += [(f"matrix-ord{o}", (u(3, 2),), {"ord": o})
            for o in (1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc")]
    out += [("batched-matrix-2", (u(2, 3, 3),), {"ord": 2, "axis": (1, 2)}),
            ("batched-nuc-keep", (u(2, 2, 3),), {"ord": "nuc", "axis": (-2, -1),
                                                 "keepdims": True}),
            ("vector-axis", (u(2, 3),), {"ord": 1, "axis": 0}),
            ("ord-none", (u(2, 3),), {})]
    return out


# ---------------------------------------------------------------------------------------
# Result sizes, for the language's size limit (known before computing)
# ---------------------------------------------------------------------------------------
def result_count(name: str, shapes: list, params: dict) -> int | None:
    """How many elements a linear algebra entry returns for inputs of ``shapes`` (None
    when the inputs do not fit: the entry reports that itself)."""
    def prod(dims):
        out = 1
        for n in dims:
            out *= int(n)
        return out
    try:
        if name in ("outer", "kron"):
            return prod(shapes[0]) * prod(shapes[1])
        if name == "inner":
            a, b = shapes
            return prod(a) * prod(b) if not a or not b else prod(a[:-1]) * prod(b[:-1])
        if name == "tensordot":
            a, b = shapes
            ax_a, ax_b = _tensordot_axes(len(a), len(b), params.get("axes", 2))
            return prod(n for i, n in enumerate(a) if i not in ax_a) * \
                prod(n for j, n in enumerate(b) if j not in ax_b)
        if name == "einsum":
            _, out, sizes = _canonical(params["subscripts"], tuple(map(tuple, shapes)))
            return prod(sizes[c] for c in out)
        if name == "svd" and params.get("full_matrices", True):
            shape = shapes[0]
            rows, cols = shape[-2], shape[-1]
            return prod(shape[:-2]) * (rows * rows + cols * cols + min(rows, cols))
        if name == "diag" and len(shapes[0]) == 1:
            n = shapes[0][0] + abs(int(params.get("k", 0)))
            return n * n
        return prod(np.broadcast_shapes(*shapes)) if shapes else None
    except (ValueError, TypeError, IndexError, KeyError):
        return None


# --- norm: the Euclidean norm, and numpy's vector and matrix norms with ord= ----------
def _norm(x, axis=None, keepdims=False, ord=None):
    if ord is not None:  # numpy's vector and matrix norms (above)
        return norm_forward(x, axis, keepdims, ord)
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


def _norm_vjp(m, g, ans, x, axis=None, keepdims=False, ord=None):
    if ord is not None:
        return norm_vjp(m, g, ans, x, axis, keepdims, ord)
    shape = shape_of(x)
    if not ordinary(ans._value if isinstance(ans, Tensor) else ans, norm_bounds(x, 2)):
        # underflowed or overflowed ([1e-200, 1e-200] has norm 0, [1e200, 1e200] inf):
        # the gradient x / norm(x) taken at x / max|x|, where the norm is representable
        x, ans = rescaled(m, x, axis, lambda v: m.norm(v, axis=axis, keepdims=keepdims))
    denom = keep_reduced_axes(m, ans, shape, axis, keepdims)
    # Zero norm: the subgradient 0, as PyTorch gives (a hard zero, whatever g is).
    nonzero = denom != 0
    denom = m.where(nonzero, denom, 1.0)
    ge = expand_reduced(m, g, shape, axis, keepdims)
    return gate(m, nonzero, ge * x / denom, ge)


_sympy_norm2 = sympy_reduce(lambda sp, xs: sp.sqrt(sp.Add(*[v ** 2 for v in xs])))
entry(name="norm", listed_after="logsumexp", forward=_norm, vjps=(_norm_vjp,),
      jvps=(reduction_jvp(_norm_vjp),),
      inputs=("x",), params=AXIS_PARAMS + (("ord", None),), kind="reduction", saves="all",
      doc="Euclidean (Frobenius) norm over axis; with ord=, numpy's vector norms (p, "
            "inf, -inf, 0) and matrix norms (1, -1, 2, -2, inf, -inf, 'fro', 'nuc')",
      derivative="x / norm(x); 0 at 0 (with ord: see gradcli.engine.linalg)",
      sympy=lambda sp, x, axis=None, keepdims=False, ord=None:
            _sympy_norm2(sp, x, axis, keepdims) if ord is None
            else sympy_norm(sp, x, axis, keepdims, ord),
      samples=lambda rng: norm_samples(rng))
