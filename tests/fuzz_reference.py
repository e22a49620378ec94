"""Independent evaluations of the linear algebra entries, for the differential fuzzer
(tests/engine/test_fuzz_differential.py).

numpy.linalg refuses ``longdouble`` ("array type float128 is unsupported in linalg"), so
the fuzzer's extended-precision walk cannot call these entries' forwards. Here each one is
computed again without gradcli's code:

- in ``longdouble``: with mpmath matrices at ``DPS`` digits (``mp.inverse``, ``mp.det``,
  ``mp.cholesky``, ``mp.eigsy``, ``mp.svd_r``; the pseudo-inverse and the matrix norms
  of ord 2, -2 and 'nuc' from ``mp.svd_r``), each element converted exactly (a longdouble
  is the sum of two doubles) and the result rounded back to longdouble;
- in float64: with numpy.linalg directly, returning the several outputs of ``slogdet``,
  ``eigh`` and ``svd`` as a tuple (the engine packs them into one array and unpacks them
  in its API: this side shares neither step);
- the products written in gradcli with einsum subscripts it computes itself (``inner``,
  ``outer``, ``kron``, ``tensordot``, ``cross``) with numpy's own functions, which take
  longdouble; so is ``average`` (gradcli's forward is its own weighted mean, numpy's
  ``average`` takes longdouble). The shape functions (pad, tile, roll, take, ...) need
  nothing here: their forwards are numpy's functions, which take longdouble.

Eigenvectors and singular vectors have a sign that numpy (LAPACK) picks arbitrarily. The
engine differentiates the branch through numpy's choice at the point, so the mpmath
vectors are turned to agree with numpy's float64 vectors at the point (``align``, the
float64 result there; the caller keeps it for the whole finite-difference stencil).
"""
from __future__ import annotations

import numpy as np

DPS = 30  # digits: longdouble carries about 19
LD = np.longdouble


def _sym(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


# ---------------------------------------------------------------------------------------
# longdouble <-> mpmath, exactly
# ---------------------------------------------------------------------------------------
def _mpf(mp, v):
    v = LD(v)
    hi = float(v)
    return mp.mpf(hi) + mp.mpf(float(v - LD(hi)))


def _ld(mp, v):
    hi = float(v)
    return LD(hi) + LD(float(v - mp.mpf(hi)))


def _mp_matrix(mp, a):
    return mp.matrix([[_mpf(mp, v) for v in row] for row in np.asarray(a)])


def _ld_array(mp, m, rows=None, cols=None):
    rows = m.rows if rows is None else rows
    cols = m.cols if cols is None else cols
    return np.array([[_ld(mp, m[i, j]) for j in range(cols)] for i in range(rows)], dtype=LD)


def _ld_vector(mp, v):
    return np.array([_ld(mp, x) for x in v], dtype=LD)


def _batched(fn, *arrays):
    """fn applied to each matrix of the leading (broadcast) axes; the results stacked.
    ``fn`` returns an array or a tuple of arrays."""
    batch = np.broadcast_shapes(*[np.shape(a)[:-2] for a in arrays])
    arrays = [np.broadcast_to(a, batch + np.shape(a)[-2:]) for a in arrays]
    results = [fn(*[a[idx] for a in arrays]) for idx in np.ndindex(batch)]
    if isinstance(results[0], tuple):
        return tuple(np.array([r[k] for r in results], dtype=results[0][k].dtype)
                     .reshape(batch + np.shape(results[0][k])) for k in range(len(results[0])))
    return np.array(results, dtype=results[0].dtype).reshape(batch + np.shape(results[0]))


# ---------------------------------------------------------------------------------------
# The mpmath evaluations (one matrix each)
# ---------------------------------------------------------------------------------------
def _mp_inv(mp, a):
    return _ld_array(mp, mp.inverse(_mp_matrix(mp, a)))


def _mp_det(mp, a):
    return np.array(_ld(mp, mp.det(_mp_matrix(mp, a))), dtype=LD)


def _mp_slogdet(mp, a):
    d = mp.det(_mp_matrix(mp, a))
    sign = LD(0) if d == 0 else LD(1) if d > 0 else LD(-1)
    return (np.array(sign, dtype=LD),
            np.array(_ld(mp, mp.log(abs(d))) if d != 0 else -np.inf, dtype=LD))


def _mp_cholesky(mp, a):
    return _ld_array(mp, mp.cholesky(_mp_matrix(mp, _sym(np.asarray(a, dtype=LD)))))


def _mp_eigh(mp, a, align):
    e, q = mp.eigsy(_mp_matrix(mp, _sym(np.asarray(a, dtype=LD))))
    n = len(e)
    order = sorted(range(n), key=lambda i: e[i])
    w = np.array([_ld(mp, e[i]) for i in order], dtype=LD)
    v = np.array([[_ld(mp, q[r, i]) for i in order] for r in range(n)], dtype=LD)
    if align is not None:  # numpy's sign of each eigenvector at the point
        v = v * np.where(np.sum(v * align[1], axis=0) < 0, -1, 1)
    return w, v


def _mp_svd(mp, a, full_matrices, align):
    rows, cols = np.shape(a)
    u, s, vh = mp.svd_r(_mp_matrix(mp, a), full_matrices=full_matrices)
    k = min(rows, cols)
    order = sorted(range(k), key=lambda i: -s[i])
    s_ld = np.array([_ld(mp, s[i]) for i in order], dtype=LD)
    u_ld, vh_ld = _ld_array(mp, u), _ld_array(mp, vh)
    perm = list(order)
    u_ld[:, :k] = u_ld[:, perm]
    vh_ld[:k, :] = vh_ld[perm, :]
    if align is not None:  # numpy's sign of each pair of singular vectors at the point
        flip = np.where(np.sum(u_ld[:, :k] * align[0][:, :k], axis=0) < 0, -1, 1)
        u_ld[:, :k] *= flip
        vh_ld[:k, :] *= flip[:, None]
    return u_ld, s_ld, vh_ld


def _mp_singular_values(mp, a):
    return sorted(mp.svd_r(_mp_matrix(mp, a), compute_uv=False), reverse=True)


def _mp_pinv(mp, a):
    # full rank (the entry's domain): pinv = V diag(1/s) U^T from the reduced SVD
    u, s, vh = mp.svd_r(_mp_matrix(mp, a), full_matrices=False)
    k = len(s)
    sinv = mp.diag([1 / s[i] for i in range(k)])
    return _ld_array(mp, vh.T * sinv * u.T)


# ---------------------------------------------------------------------------------------
# Per entry: fn(values, params, dtype, align) -> array or tuple of arrays
# ---------------------------------------------------------------------------------------
def _solve_shapes(a, b):
    """numpy 2's reading of solve's b: a 1-D b is one vector (a column here), any other
    a stack of matrices broadcast against a's batch."""
    if np.ndim(b) == 1:
        return a, np.asarray(b)[:, None], True
    return a, np.asarray(b), False


def _inv(values, params, dtype, align):
    (a,) = values
    if dtype == np.float64:
        return np.linalg.inv(a)
    from mpmath import mp
    with mp.workdps(DPS):
        return _batched(lambda m: _mp_inv(mp, m), a)


def _solve(values, params, dtype, align):
    a, b = values
    a, b2, vector = _solve_shapes(a, b)
    if dtype == np.float64:
        batch = np.broadcast_shapes(np.shape(a)[:-2], np.shape(b2)[:-2])
        x = np.linalg.solve(np.broadcast_to(a, batch + np.shape(a)[-2:]),
                            np.broadcast_to(b2, batch + np.shape(b2)[-2:]))
    else:
        from mpmath import mp
        with mp.workdps(DPS):
            x = _batched(lambda m, r: _ld_array(mp, mp.inverse(_mp_matrix(mp, m))
                                                * _mp_matrix(mp, r)), a, b2)
    return x[..., 0] if vector else x


def _det(values, params, dtype, align):
    (a,) = values
    if dtype == np.float64:
        return np.linalg.det(a)
    from mpmath import mp
    with mp.workdps(DPS):
        return _batched(lambda m: _mp_det(mp, m), a)


def _slogdet(values, params, dtype, align):
    (a,) = values
    if dtype == np.float64:
        return tuple(np.linalg.slogdet(a))
    from mpmath import mp
    with mp.workdps(DPS):
        return _batched(lambda m: _mp_slogdet(mp, m), a)


def _cholesky(values, params, dtype, align):
    (a,) = values
    if dtype == np.float64:
        return np.linalg.cholesky(_sym(a))
    from mpmath import mp
    with mp.workdps(DPS):
        return _batched(lambda m: _mp_cholesky(mp, m), a)


def _eigh(values, params, dtype, align):
    (a,) = values
    if dtype == np.float64:
        return tuple(np.linalg.eigh(_sym(a)))
    from mpmath import mp
    with mp.workdps(DPS):
        if align is None:
            return _batched(lambda m: _mp_eigh(mp, m, None), a)
        batch = np.shape(a)[:-2]
        out = [_mp_eigh(mp, a[idx], (align[0][idx], align[1][idx]))
               for idx in np.ndindex(batch)]
        return tuple(np.array([o[k] for o in out], dtype=LD).reshape(
            batch + np.shape(out[0][k])) for k in range(2))


def _svd(values, params, dtype, align):
    (a,) = values
    full = params.get("full_matrices", True)
    if not params.get("compute_uv", True):
        if dtype == np.float64:
            return np.linalg.svd(a, compute_uv=False)
        from mpmath import mp
        with mp.workdps(DPS):
            return _batched(lambda m: _ld_vector(mp, _mp_singular_values(mp, m))[None, :],
                            a)[..., 0, :]
    if dtype == np.float64:
        return tuple(np.linalg.svd(a, full_matrices=full))
    from mpmath import mp
    with mp.workdps(DPS):
        batch = np.shape(a)[:-2]
        out = [_mp_svd(mp, a[idx], full, None if align is None else
                       tuple(x[idx] for x in align)) for idx in np.ndindex(batch)]
        return tuple(np.array([o[k] for o in out], dtype=LD).reshape(
            batch + np.shape(out[0][k])) for k in range(3))


def _pinv(values, params, dtype, align):
    (a,) = values
    if dtype == np.float64:
        return np.linalg.pinv(a)
    from mpmath import mp
    with mp.workdps(DPS):
        return _batched(lambda m: _mp_pinv(mp, m), a)


def _norm(values, params, dtype, align):
    """numpy's norm; the matrix norms of ord 2, -2 and 'nuc' (numpy computes them with
    an SVD, which refuses longdouble) from mpmath's singular values."""
    (x,) = values
    ord_, axis, keepdims = params.get("ord"), params.get("axis"), params.get("keepdims", False)
    nd = np.ndim(x)
    axes = tuple(range(nd)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    if dtype == np.float64 or ord_ not in (2, -2, "nuc") or len(axes) != 2:
        return np.linalg.norm(x, ord=ord_, axis=axis, keepdims=keepdims)
    axes = tuple(int(a) % nd for a in axes)
    moved = np.moveaxis(x, axes, (-2, -1))
    from mpmath import mp

    def one(m):
        s = _mp_singular_values(mp, m)
        value = s[0] if ord_ == 2 else s[-1] if ord_ == -2 else mp.fsum(s)
        return np.array(_ld(mp, value), dtype=LD)
    with mp.workdps(DPS):
        out = _batched(one, moved)
    if keepdims:
        for a in sorted(axes):
            out = np.expand_dims(out, a)
    return out


def _cross(values, params, dtype, align):
    a, b = values
    axis = int(params.get("axis", -1))
    # gradcli's documented reading: the axis counts from the end of a, for both inputs
    k = axis - np.ndim(a) if axis >= 0 else axis
    return np.cross(a, b, axisa=k, axisb=k, axisc=k)


def _tensordot(values, params, dtype, align):
    a, b = values
    return np.tensordot(a, b, axes=params.get("axes", 2))


REFERENCES = {
    "inv": _inv, "solve": _solve, "det": _det, "slogdet": _slogdet, "cholesky": _cholesky,
    "eigh": _eigh, "svd": _svd, "pinv": _pinv, "norm": _norm, "cross": _cross,
    "tensordot": _tensordot,
    "inner": lambda values, params, dtype, align: np.inner(*values),
    "outer": lambda values, params, dtype, align: np.outer(*values),
    "kron": lambda values, params, dtype, align: np.kron(*values),
    "einsum": lambda values, params, dtype, align: np.einsum(params["subscripts"], *values),
    # gradcli writes its own weighted mean (weights along an axis reshaped by hand)
    "average": lambda values, params, dtype, align: np.average(
        values[0], weights=values[1], axis=params.get("axis"),
        keepdims=params.get("keepdims", False)),
}
# Entries whose result depends on a sign numpy picks: the longdouble side needs numpy's
# float64 result at the point (``align``).
ALIGNED = {"eigh", "svd"}
