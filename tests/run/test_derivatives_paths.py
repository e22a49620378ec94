"""The hessian command's engine path (run/derivatives.py's hessian_fields) on its short
paths, each against an independent truth: labels against numpy's own index order, the
Hessian against central differences of the hand-written gradient."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli.run.derivatives import labels


@pytest.mark.parametrize("shape", [(), (1,), (3,), (12,), (2, 3), (3, 1, 2), (0,), (2, 0)])
def test_labels_name_each_element_in_numpys_index_order(shape):
    expected = ["v"] if shape == () else [
        "v[" + ",".join(str(i) for i in index) + "]" for index in np.ndindex(*shape)]
    assert labels(["v"], [shape]) == expected


def test_labels_of_several_sources_follow_one_another():
    assert labels(["s", "W", "x"], [(), (2, 2), (3,)]) == [
        "s", "W[0,0]", "W[0,1]", "W[1,0]", "W[1,1]", "x[0]", "x[1]", "x[2]"]


def test_hessian_fields_of_several_sources_match_the_hand_written_derivatives():
    """A scalar and a matrix source: the point, the gradient and the Hessian are joined
    over the flattened sources (s, W[0,0], W[0,1], W[1,0], W[1,1]), written out by hand."""
    from gradcli.lang import Declarations, build, parse_program
    from gradcli.run.derivatives import hessian_fields
    s, W = 0.5, np.array([[1.0, -2.0], [3.0, 4.0]])
    decls = Declarations.from_options(arg=["s=0.5", "W=[[1,-2],[3,4]]"])
    model = build(parse_program("s^2*W[0,1] + 3*sum(W^2) + s*W[1,0]"), decls)
    fields, _ = hessian_fields(model)
    expected = np.zeros((5, 5))
    expected[0, 0] = 2 * W[0, 1]
    expected[0, 2] = expected[2, 0] = 2 * s
    expected[0, 3] = expected[3, 0] = 1.0
    expected[1:, 1:] += 6 * np.eye(4)
    np.testing.assert_array_equal(fields["hessian"], expected)
    zeros = fields["hessian"][fields["hessian"] == 0]
    assert zeros.size and not np.signbit(zeros).any()  # an exact zero is +0.0
    np.testing.assert_array_equal(fields["gradient"], [
        2 * s * W[0, 1] + W[1, 0], 6 * W[0, 0], s * s + 6 * W[0, 1], 6 * W[1, 0] + s,
        6 * W[1, 1]])
    np.testing.assert_array_equal(fields["point"], [s, *W.ravel()])
    assert fields["labels"] == ["s", "W[0,0]", "W[0,1]", "W[1,0]", "W[1,1]"]
    assert float(fields["value"]) == s * s * W[0, 1] + 3 * np.sum(W * W) + s * W[1, 0]


def test_hessian_fields_of_one_vector_source_match_the_hand_written_hessian():
    """Rosenbrock plus log-sum-exp (the benchmark's function) over one vector source, the
    path with no reshape or concatenation, against its Hessian written out by hand."""
    from gradcli.lang import Declarations, build, parse_program
    from gradcli.run.derivatives import hessian_fields
    x = np.random.default_rng(3).standard_normal(7) * 0.5
    decls = Declarations()
    decls.add("arg", "x", x)
    model = build(parse_program("sum(100*(x[1:]-x[:-1]^2)^2 + (1-x[:-1])^2) + "
                                "log(sum(exp(x)))"), decls)
    fields, _ = hessian_fields(model)
    H = np.zeros((7, 7))
    i = np.arange(6)
    H[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    H[i + 1, i + 1] += 200.0
    H[i, i + 1] = H[i + 1, i] = -400.0 * x[:-1]
    p = np.exp(x) / np.sum(np.exp(x))
    H += np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(fields["hessian"], H, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(fields["point"], x)
