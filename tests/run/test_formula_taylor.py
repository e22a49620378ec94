"""``diff --taylor`` by forward mode (issue 22, part 4): the coefficients against series
known in closed form, to orders where nested accumulators must see each other's work."""
from __future__ import annotations

import math

import pytest

from gradcli.run.taylor import taylor


def test_exp_of_a_sum_to_order_6_in_two_variables():
    # exp(x + 2y) = sum x^a (2y)^b / (a! b!): the coefficient of x^a y^b is 2^b / (a! b!)
    result = taylor("exp(x + 2*y)", ["x=0,y=0"], 6)
    assert result.disagreement is None
    found = {(c["powers"]["x"], c["powers"]["y"]): c["value"] for c in result.coefficients}
    assert len(found) == 28                                   # every a + b <= 6
    for (a, b), value in found.items():
        assert value == pytest.approx(2**b / (math.factorial(a) * math.factorial(b)),
                                      rel=1e-13), (a, b)


def test_one_over_one_minus_x_away_from_zero():
    # 1/(1 - x) at x = 0.5: the k-th coefficient in (x - 0.5) is 1/(0.5)^(k+1) = 2^(k+1)
    result = taylor("1/(1 - x)", ["x=0.5"], 8)
    assert [c["value"] for c in result.coefficients] == pytest.approx(
        [2.0 ** (k + 1) for k in range(9)], rel=1e-12)
    assert result.max_rel_err <= 1e-12


def test_mixed_partials_of_a_product_of_transcendental_factors():
    # sin(x)*exp(y): coefficient of x^a y^b is (sin^(a)(0)/a!) (1/b!)
    result = taylor("sin(x)*exp(y)", ["x=0,y=0"], 5)
    sine = [0, 1, 0, -1, 0, 1]
    for c in result.coefficients:
        a, b = c["powers"]["x"], c["powers"]["y"]
        assert c["value"] == pytest.approx(sine[a] / (math.factorial(a) * math.factorial(b)),
                                           abs=1e-15), (a, b)
