"""The table's programs, one list per entry, and a point inside each entry's sample range:
shared by the language's sympy agreement test (tests/lang) and the table-wide --at test
(tests/io), which run every program both ways."""
from __future__ import annotations

import more_cases
import numpy as np

from gradcli.engine.core.table import ORDER, REGISTRY


def sample_point(name: str) -> dict:
    """x, v, M strictly inside the entry's sample range, away from integers and 0 for the
    usual (-2, 2) range (so sign/floor/ceil are not evaluated at their jumps)."""
    lo, hi = REGISTRY[name].sample
    def at(*fractions):
        return lo + (hi - lo) * np.array(fractions)
    point = {"x": float(at(0.37)[0]), "v": at(0.21, 0.52, 0.86),
             "M": at(0.13, 0.29, 0.41, 0.58, 0.77, 0.91).reshape(2, 3)}
    if name in more_cases.CASES:  # their programs also read w (3,), W (2, 3), T (2, 3, 4)
        names = {n for _, _, shapes in more_cases.CASES[name] for n in shapes}
        point.update({"w": at(0.33, 0.61, 0.15), "W": at(0.9, 0.2, 0.45, 0.35, 0.7, 0.05)
                      .reshape(2, 3), "T": at(*(np.arange(24) * 0.618 % 1.0)).reshape(2, 3, 4)})
        point = {n: point[n] for n in names}
    return point


# name -> program texts calling it (several when the language has several spellings).
TABLE_PROGRAMS = {
    "add": ["x + v", "M + v", "add(M, x)"],
    "subtract": ["M - v", "x - M", "subtract(v, x)"],
    "multiply": ["v * M", "2.5 * x", "multiply(M, v)"],
    "divide": ["M / v", "x / M", "divide(1, v)"],
    "power": ["M ** v", "x ^ 2", "pow(v, x)", "M ** 3", "2 ** M"],
    "matmul": ["M @ v", "v @ transpose(M)", "matmul(M, transpose(M))", "v @ v"],
    "negative": ["-M", "negative(v)", "-(-x)"],
    "square": ["square(M)"],
    "reciprocal": ["reciprocal(M)"],
    "where": ["where(M > v, M, -v)", "where(x < v, 1, M)", "where(M >= x, v, x)"],
    "clip": ["clip(M, 0.1, 0.4)", "clip(v, x, 1.5)", "clip(M, -1, 1)"],
    "softmax": ["softmax(M)", "softmax(M, axis=0)", "softmax(v)", "softmax(M, -1)"],
    "stop_gradient": ["stop_gradient(M) * v", "stop_gradient(x)"],
    "dot": ["dot(v, v)", "dot(M, v)", "dot(M, transpose(M))", "dot(x, M)"],
    "transpose": ["transpose(M)", "transpose(M, (1, 0)) @ v[0:2]"],
    "reshape": ["reshape(M, (3, 2))", "reshape(M, (6,))", "reshape(v, (3, 1)) * M[0]"],
    "concatenate": ["concatenate([v, v])", "concatenate([M, M], axis=1)",
                    "concatenate([M, [v]], axis=0)"],
    "stack": ["stack([v, v])", "stack([M, M], axis=2)", "stack([x, v[0], x])"],
    "less": ["M < v", "less(x, v)"],
    "less_equal": ["v <= x", "less_equal(M, M)"],
    "greater": ["M > x", "greater(v, M)"],
    "greater_equal": ["M >= v", "greater_equal(x, x)"],
    "equal": ["v == v[1]", "equal(M, M)"],
    "not_equal": ["M != v", "not_equal(x, v)"],
    "zeros": ["zeros((2, 3)) + x", "zeros(3) + v"],
    "ones": ["ones((2, 3)) * v", "ones(3) - x"],
    "full": ["full((2, 3), 0.5) * M", "full(3, -1.5) + x"],
    "eye": ["eye(3) @ v", "eye(2, 3) * M", "eye(2, M=3) + x"],
    "linspace": ["linspace(0, 1, 3) * v", "linspace(-1, 1, num=4) + x"],
    "arange": ["arange(3) * v", "arange(0, 3, 0.5) + x", "arange(1, 4) @ v"],
    "arctan2": ["arctan2(M, v)", "atan2(x, v)"],
    "maximum": ["maximum(M, v)", "maximum(x, M)"],
    "minimum": ["minimum(v, M)", "minimum(M, x)"],
    "hypot": ["hypot(M, v)", "hypot(x, v)"],
}
for _name, _cases in more_cases.CASES.items():
    if _name not in more_cases.NOT_IN_LANGUAGE:
        TABLE_PROGRAMS[_name] = [text for text, _, _ in _cases]
for _name in ORDER:
    _op = REGISTRY[_name]
    if _op.kind in ("elementwise", "arithmetic") and len(_op.inputs) == 1 \
            and _name not in TABLE_PROGRAMS:
        TABLE_PROGRAMS[_name] = [f"{_name}(M)", f"{_name}(v) * x"] + \
            [f"{alias}(x)" for alias in _op.aliases]
    elif _op.kind == "reduction" and _name not in TABLE_PROGRAMS:
        TABLE_PROGRAMS[_name] = [f"{_name}(M)", f"{_name}(M, axis=0)", f"{_name}(M, axis=1)",
                                 f"{_name}(M, axis=-1, keepdims=True)",
                                 f"{_name}(M, (0, 1))", f"{_name}(v, 0, True)"]

# Linear algebra: square and positive definite matrices are built from M and v.
TABLE_PROGRAMS.update({
    "inv": ["inv(M @ transpose(M) + eye(2))", "inv(outer(v, v) + 3 * eye(3)) @ v"],
    "solve": ["solve(M @ transpose(M) + eye(2), M)", "solve(outer(v, v) + 4 * eye(3), v)"],
    "det": ["det(M @ transpose(M))", "det(outer(v, v) + eye(3) * x)"],
    "slogdet": ["slogdet(M @ transpose(M) + eye(2))[1]",
                "slogdet(transpose(M) @ M - 2 * eye(3))[0]"],
    "cholesky": ["cholesky(M @ transpose(M) + eye(2))", "cholesky(outer(v, v) + 5 * eye(3))"],
    "pinv": ["pinv(M)", "pinv(transpose(M))"],
    "trace": ["trace(M)", "trace(outer(v, v), offset=1)", "trace(M, 0, 1, 0)"],
    "diagonal": ["diagonal(M)", "diagonal(M, offset=1)", "diagonal(outer(v, v), -1, 1, 0)"],
    "diag": ["diag(v)", "diag(M, 1)", "diag(v, k=-1)"],
    "triu": ["triu(M)", "triu(outer(v, v), k=1)"],
    "tril": ["tril(M, -1)", "tril(outer(v, x * v))"],
    "outer": ["outer(v, M)", "outer(x, v)"],
    "inner": ["inner(M, M)", "inner(v, M)", "inner(x, v)"],
    "kron": ["kron(M, v)", "kron(v, v)"],
    "cross": ["cross(v, M[0])", "cross(M, v)", "cross(transpose(M), transpose(M), axis=0)"],
    "tensordot": ["tensordot(M, M, axes=((1,), (1,)))", "tensordot(M, v, 1)",
                  "tensordot(M, M, 2)"],
    "einsum": ['einsum("ij,j->i", M, v)', 'einsum("ij,kj", M, M)', 'einsum("...j,j", M, v)',
               'einsum("ii", outer(v, v))', 'einsum("i,i,i->", v, v, v)'],
})
TABLE_PROGRAMS["norm"] = TABLE_PROGRAMS["norm"] + [
    "norm(M, ord=1)", "norm(v, ord=inf)", "norm(M, ord=-inf)", "norm(v, ord=3)",
    "norm(M, axis=1, ord=1)", "norm(v, 0, True, -inf)"]
