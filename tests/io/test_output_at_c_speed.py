"""Issue 12, item 7: arrays are converted and written in C, with the same bytes as the
element-by-element writers they replaced. Those writers are kept here, as they were, as
the independent reference: every number through ``json_number`` / ``number_text`` one at a
time, and the text through the json module. (Issue 20, item 9: since then a zero is written
unsigned, 0.0 for -0.0; the reference says so in its own words, ``0.0 if x == 0``.)"""
from __future__ import annotations

import io
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcli.check.compare import to_json_value
from gradcli.io import text as numbers
from gradcli.io.writers import json as json_writer
from gradcli.io.jsonvalue import NumberList, dumps, json_value, number_list, write_line
from gradcli.run.modes import Gradient, Outcome

# More examples on demand: GRADCLI_PROPERTY_EXAMPLES=5000 pytest tests/io/test_output_at_c_speed.py
EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "200"))


# --- the element-by-element reference (the code before issue 12, item 7) ----------------
def old_json_number(x):
    x = float(x)
    if x == 0:
        return 0.0  # -0.0 too: text output never shows the sign of a zero
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def old_json_value(value):
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        return arr.tolist()
    if arr.ndim == 0:
        return old_json_number(arr)
    return [old_json_value(row) for row in arr]


def old_json_array(value):
    """The output's rule, one element at a time: a float32 as the float64 of its own
    shortest decimal (number_text's text of it)."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        if arr.ndim == 0:
            return old_json_number(float(numbers.number_text(arr[()])))
        return [old_json_array(row) for row in arr]
    return old_json_value(arr)


def old_texts(value, precision):
    return [numbers.number_text(v, precision) for v in np.asarray(value).reshape(-1)]


def leaves(tree):
    if isinstance(tree, list):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


SPECIAL = [0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 1e16, 1e-5, 5e-324, 2.2250738585072014e-308,
           1.7976931348623157e308, -1.7976931348623157e308, 123456789.0, 1e300, math.nan,
           -math.nan, math.inf, -math.inf]


def narrow(values, dtype):
    """``values`` in a smaller float type: the large ones become inf, as intended."""
    with np.errstate(over="ignore"):
        return np.array(values, dtype)


ARRAYS = [
    np.array(SPECIAL), narrow(SPECIAL, np.float32), narrow(SPECIAL[:14], np.float16),
    np.array(SPECIAL).reshape(3, 6), np.array(SPECIAL).reshape(3, 2, 3)[:, ::-1].T,
    np.array(SPECIAL, ">f8"), np.asfortranarray(np.arange(12.0).reshape(3, 4) / 7),
    np.array([[math.nan, math.nan], [math.inf, -math.inf]]), np.full(5, math.nan),
    np.arange(-3, 4), np.array([0, 2**64 - 1], np.uint64), np.array([1, -2], np.int8),
    np.array([True, False]), np.array([[True], [False]]), np.array(True),
    np.array(-0.0), np.array(math.nan), np.float64(31.0), np.float32(0.1), np.float32(math.inf),
    np.zeros(0), np.zeros((2, 0)), np.zeros((0, 3)), np.zeros((2, 0, 3), np.float32),
    np.ones((1, 1, 1, 1)) * 0.1, np.array(SPECIAL, np.longdouble), [1.0, -0.0], 2.5, None,
]
IDS = [f"{i}-{np.asarray(a).dtype}-{np.shape(a)}" if a is not None else "None"
       for i, a in enumerate(ARRAYS)]


@pytest.mark.parametrize("value", ARRAYS, ids=IDS)
def test_json_value_writes_the_element_by_element_bytes(value):
    new, old = json_value(value), old_json_value(value)
    assert dumps(new) == json.dumps(old) == json.dumps(new)
    assert [type(leaf) for leaf in leaves(new)] == [type(leaf) for leaf in leaves(old)]
    assert dumps(to_json_value(value)) == json.dumps(old)  # the --check JSON's values


@pytest.mark.parametrize("value", ARRAYS, ids=IDS)
def test_json_array_writes_the_element_by_element_bytes(value):
    assert dumps(numbers.json_array(value), allow_nan=False) == json.dumps(
        old_json_array(value), allow_nan=False)


@pytest.mark.parametrize("precision", [None, 1, 3, 17])
@pytest.mark.parametrize("value", [a for a in ARRAYS if a is not None],
                         ids=[i for a, i in zip(ARRAYS, IDS) if a is not None])
def test_number_texts_are_number_text_of_each_element(value, precision):
    assert numbers.number_texts(value, precision) == old_texts(value, precision)


@pytest.mark.parametrize("precision", [None, 4])
@pytest.mark.parametrize("value", [np.array(SPECIAL).reshape(3, 6),
                                   narrow(SPECIAL, np.float32).reshape(6, 3),
                                   np.arange(6).reshape(2, 3), np.zeros((3, 0)),
                                   np.zeros((0, 2)), np.array([[True, False]])])
def test_number_texts_rows_are_number_text_row_by_row(value, precision):
    rows = numbers.number_texts_rows(value, precision)
    assert rows == [[numbers.number_text(v, precision) for v in row] for row in value]


def test_number_texts_rows_takes_only_a_table():
    with pytest.raises(ValueError, match="2-d"):
        numbers.number_texts_rows(np.zeros(3))


def test_float32_texts_of_random_bit_patterns_are_numpy_s_shortest_decimals():
    rng = np.random.default_rng(12)
    values = rng.integers(0, 2**32, size=20_000, dtype=np.uint64).astype(np.uint32).view(
        np.float32)
    def shortest(v):  # numpy's str, a zero without its sign (-0.0: issue 20, item 9)
        return "0.0" if float(v) == 0 else str(v)

    assert numbers.number_texts(values) == [shortest(v) for v in values]
    assert dumps(numbers.json_array(values)) == json.dumps(old_json_array(values))
    halves = narrow(values[:2000], np.float16)  # (tiny negatives become -0.0 here)
    assert numbers.number_texts(halves) == [shortest(v) for v in halves]


def test_arrays_are_converted_without_a_python_call_per_element(monkeypatch):
    import gradcli.io.jsonvalue as jsonvalue

    calls = []

    def counted(real):
        return lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs)

    monkeypatch.setattr(jsonvalue, "json_number", counted(jsonvalue.json_number))
    monkeypatch.setattr(jsonvalue, "_float", counted(jsonvalue._float))
    monkeypatch.setattr(numbers, "number_text", counted(numbers.number_text))
    big = np.linspace(-1, 1, 3000).reshape(30, 100)
    big[3, 4], big[5, 6], big[7, 8] = math.nan, math.inf, -math.inf
    for value in (big, big.astype(np.float32), big > 0, np.arange(3000).reshape(30, 100)):
        dumps(json_value(value))
        dumps(numbers.json_array(value))
        numbers.number_texts(value)
        numbers.number_texts(value, 5)
        numbers.number_texts_rows(value)
    assert not calls


def test_a_number_list_is_written_as_json_writes_it():
    tree = number_list(np.array([[1.5, math.nan], [math.inf, -math.inf], [-0.0, 5e-324]]))
    assert type(tree) is NumberList and tree == [[1.5, "nan"], ["inf", "-inf"], [-0.0, 5e-324]]
    assert dumps(tree) == json.dumps(tree) == '[[1.5, "nan"], ["inf", "-inf"], [-0.0, 5e-324]]'
    assert dumps({"g": [tree, NumberList()]}, allow_nan=False) == json.dumps(
        {"g": [tree, []]}, allow_nan=False)


@pytest.mark.parametrize("allow_nan", [False, True])
def test_a_plain_row_of_floats_with_nan_is_written_like_json(allow_nan):
    row = [1.0, math.nan, -math.inf, 2.5, math.inf, -0.0]
    try:
        want = json.dumps(row, allow_nan=allow_nan)
    except ValueError:
        with pytest.raises(ValueError, match="Out of range float"):
            dumps(row, allow_nan=allow_nan)
    else:
        assert dumps(row, allow_nan=allow_nan) == want


def test_print_json_writes_the_outcome_as_json_writes_the_old_values():
    grad = np.array([[0.5, -0.0, math.nan], [math.inf, 1e-300, -math.inf]])
    outcome = Outcome("value-grad", np.float32(2.957324266433716),
                      [Gradient("w", grad), Gradient("v", np.float32([0.1, math.nan])),
                       Gradient("u", None)], notes=["a note"])
    buffer = io.StringIO()
    json_writer.write(outcome.report(), file=buffer)
    expected = {"mode": "value-grad", "value": 2.9573243,
                "gradients": [{"name": "w", "gradient": old_json_value(grad)},
                              {"name": "v", "gradient": [0.1, "nan"]},
                              {"name": "u", "gradient": None}], "notes": ["a note"]}
    assert buffer.getvalue() == json.dumps(expected, allow_nan=False) + "\n"
    lines = io.StringIO()
    write_line({"row": 0, "value": json_value(grad)}, lines)
    write_line({"row": 1, "value": None}, lines)
    assert lines.getvalue().splitlines() == [
        json.dumps({"row": 0, "value": old_json_value(grad)}), '{"row": 1, "value": null}']


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32, np.float16, np.int32, np.bool_]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    return draw(hnp.arrays(dtype, shape))


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(arrays(), st.sampled_from([None, 1, 6, 17]))
def test_any_array_is_written_with_the_element_by_element_bytes(value, precision):
    assert dumps(json_value(value)) == json.dumps(old_json_value(value))
    assert dumps(numbers.json_array(value)) == json.dumps(old_json_array(value))
    assert numbers.number_texts(value, precision) == old_texts(value, precision)
    if value.ndim == 2:
        assert numbers.number_texts_rows(value, precision) == [
            old_texts(row, precision) for row in value]
