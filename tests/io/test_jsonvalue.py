"""gradcli.io.jsonvalue.dumps writes what json.dumps writes, byte for byte: the --json output
stopped importing json for it (issue 14), so json.dumps itself is the truth here."""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.io.jsonvalue import dumps, json_value

# More examples on demand: GRADCLI_PROPERTY_EXAMPLES=5000 pytest tests/io/test_jsonvalue.py
EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "300"))

STRINGS = [
    "", "plain", 'a "quoted" word', "back\\slash", "\\\"", "line\nbreak\r\n\ttab",
    "\b\f", "".join(map(chr, range(0x20))), "\x7f", "é", "naïve café", "☃ snow", "€",
    "\u00a0\u2028\u2029\u0085", "\ufeff bom", "\u200b zero width", "\U0001d431 bold x",
    "😀 emoji", "\ud800 lone high", "\udfff lone low", "\ud83d\ude00", "\uffff\U0010ffff",
    "mixed é \x00 \" \\ 😀",
]
NUMBERS = [0, 1, -1, 2**63, -(2**70), 0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 1e16, 1e-7, 5e-324,
           2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 123456789.0,
           float(np.float32(0.1)), np.float64(31.0), np.float64(-0.0)]


def same_as_json(obj, allow_nan=False):
    """dumps(obj) against json.dumps(obj): the same text, or the same exception."""
    try:
        want = json.dumps(obj, allow_nan=allow_nan)
    except Exception as err:  # noqa: BLE001 - whatever json raises, dumps must raise too
        with pytest.raises(type(err)) as got:
            dumps(obj, allow_nan=allow_nan)
        assert str(got.value) == str(err)
        return
    assert dumps(obj, allow_nan=allow_nan) == want


@pytest.mark.parametrize("text", STRINGS)
def test_strings_are_escaped_as_json_escapes_them(text):
    same_as_json(text)
    same_as_json({text: [text]})


@pytest.mark.parametrize("number", NUMBERS, ids=repr)
def test_numbers_are_written_as_json_writes_them(number):
    same_as_json(number)
    same_as_json([number, [number]])


def test_constants_and_empty_containers():
    for obj in (None, True, False, [], {}, (), [[]], {"a": {}}, [None, True, False, 0]):
        same_as_json(obj)
    assert dumps([True, 1, 1.0]) == "[true, 1, 1.0]"  # bool before int, as json


@pytest.mark.parametrize("allow_nan", [False, True])
@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_follow_allow_nan(x, allow_nan):
    for obj in (x, [1.0, x], [[x]], {"a": x}):
        same_as_json(obj, allow_nan=allow_nan)


def test_a_non_finite_float_without_allow_nan_raises_json_s_error():
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps([1.0, math.nan], allow_nan=False)


def test_tuples_are_lists_and_key_order_is_kept():
    obj = {"z": (1, 2.5), "a": [(3,), ()], "m": {"y": 1, "b": 2}}
    same_as_json(obj)
    assert dumps(obj) == '{"z": [1, 2.5], "a": [[3], []], "m": {"y": 1, "b": 2}}'


def test_what_json_itself_must_handle_gives_json_s_text_or_error():
    # Non-string keys json converts; numpy integers and booleans json refuses.
    for obj in ({1: "a", 2.5: "b", True: "c", None: "d"}, [np.int64(3)], {"a": np.bool_(True)},
                {(1, 2): 3}, {"a": object()}, b"bytes", {1.0: math.nan}):
        same_as_json(obj)


def test_a_cycle_is_json_s_circular_reference_error():
    cyclic: list = [1.0]
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps(cyclic)


def test_deep_nesting_is_written_like_json():
    deep: list = [1.0]
    for _ in range(200):
        deep = [deep, -0.0]
    same_as_json(deep)


@pytest.mark.parametrize("value", [
    np.float64(31.0), np.array(-0.0), np.array([1.0, np.nan, np.inf, -np.inf, -0.0]),
    np.array([[0.1, 2.0], [3e300, -5e-324]]), np.arange(24.0).reshape(2, 3, 4) / 7,
    np.array([True, False]), np.array(True), np.float32(0.1), np.array([[np.nan]], np.float32),
    np.zeros((2, 0)), None,
], ids=lambda v: repr(v)[:40])
def test_json_values_of_arrays_are_written_like_json(value):
    same_as_json({"mode": "value-grad", "value": json_value(value),
                  "gradients": [{"name": "w", "gradient": json_value(value)}]})


JSON_TREES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text() | st.sampled_from(STRINGS),
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(st.text() | st.sampled_from(STRINGS), inner, max_size=5),
    max_leaves=30)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(JSON_TREES, st.booleans())
def test_any_tree_of_json_types_is_written_like_json(obj, allow_nan):
    same_as_json(obj, allow_nan=allow_nan)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=50))
def test_rows_of_finite_floats_are_written_like_json(row):
    same_as_json(row)
    same_as_json([row, row])
