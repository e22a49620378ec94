"""A function-table entry (``table.Op``): a plain slotted class, read-only, compared by
identity, with the constructor and the derived fields the frozen dataclass had."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli.engine import fast, ops
from gradcli.engine.core.table import REGISTRY, Op


def _rule(m, g, ans, x):
    return g * m.cos(x)


def test_entry_takes_keywords_and_positional_fields_in_the_documented_order():
    by_keyword = Op(name="f", forward=np.sin, vjps=(_rule,), inputs=("x",), doc="d",
                    derivative="cos(x)", params=(("axis", None),), sympy=None,
                    elementwise=True, aliases=("g",), variadic=False, sample=(0.0, 1.0),
                    domain="x > 0", kind="binary", saves="inputs")
    positional = Op("f", np.sin, (_rule,), ("x",), "d", "cos(x)", (("axis", None),), None,
                    True, ("g",), False, (0.0, 1.0), "x > 0", "binary", "inputs")
    for entry in (by_keyword, positional):
        assert (entry.name, entry.forward, entry.vjps, entry.inputs, entry.doc) == (
            "f", np.sin, (_rule,), ("x",), "d")
        assert (entry.derivative, entry.params, entry.sympy, entry.elementwise) == (
            "cos(x)", (("axis", None),), None, True)
        assert (entry.aliases, entry.variadic, entry.sample, entry.domain, entry.kind,
                entry.saves) == (("g",), False, (0.0, 1.0), "x > 0", "binary", "inputs")
        assert (entry.keeps_inputs, entry.keeps_ans, entry.reuse) == (True, False, None)


def test_entry_defaults_are_the_documented_ones():
    entry = Op(name="f", forward=np.sin, vjps=(None,), inputs=("x",), doc="")
    assert (entry.derivative, entry.params, entry.sympy, entry.elementwise, entry.aliases,
            entry.variadic, entry.sample, entry.domain, entry.kind, entry.saves) == (
        "", (), None, False, (), False, (-2.0, 2.0), "all reals", "elementwise", "all")
    assert entry.differentiable is False  # no rule at all
    assert (entry.keeps_inputs, entry.keeps_ans, entry.twins) == (True, True, ())


@pytest.mark.parametrize("saves, inputs, ans", [("all", True, True), ("inputs", True, False),
                                                 ("ans", False, True), ("none", False, False)])
def test_what_a_node_keeps_follows_saves(saves, inputs, ans):
    entry = Op(name="f", forward=np.sin, vjps=(_rule,), inputs=("x",), doc="", saves=saves)
    assert (entry.keeps_inputs, entry.keeps_ans, entry.differentiable) == (inputs, ans, True)


def test_unknown_saves_is_refused_when_the_entry_is_made():
    with pytest.raises(ValueError, match="f: saves must be all, inputs, ans or none"):
        Op(name="f", forward=np.sin, vjps=(_rule,), inputs=("x",), doc="", saves="some")


def test_a_missing_required_field_is_a_type_error():
    with pytest.raises(TypeError):
        Op(name="f", forward=np.sin, vjps=(_rule,), inputs=("x",))  # no doc


def test_entries_are_read_only():
    entry = REGISTRY["sin"]
    with pytest.raises(AttributeError):
        entry.vjps = (None,)
    with pytest.raises(AttributeError):
        entry.new_attribute = 1
    with pytest.raises(AttributeError):
        del entry.doc
    assert entry.vjps[0] is not None and not hasattr(entry, "new_attribute")


def test_entries_compare_and_hash_by_identity():
    a = Op(name="f", forward=np.sin, vjps=(_rule,), inputs=("x",), doc="")
    b = Op(name="f", forward=np.sin, vjps=(_rule,), inputs=("x",), doc="")
    assert a == a and a != b and len({a, b, a}) == 2
    assert type(a) is Op and isinstance(a, Op)


def test_the_registered_entry_of_a_name_gets_the_fast_paths_tricks_for_that_name():
    tanh = REGISTRY["tanh"]
    assert tanh.twins == fast.TWINS["tanh"] and tanh.reuse is fast.REUSE["tanh"] is np.tanh
    assert REGISTRY["pow"] is REGISTRY["power"] and REGISTRY["pow"].twins[1] is None
    # the same rules under another entry (not the table's): no tricks
    same_rules = Op(name="tanh", forward=np.tanh, vjps=tanh.vjps, inputs=("x",), doc="",
                    saves="ans")
    assert (same_rules.twins, same_rules.reuse) == ((), None)


def test_a_fast_path_table_that_does_not_fit_its_entry_is_refused(monkeypatch):
    """``fast.speedups`` checks what the twins and reuse tables assume of an entry: one
    twin per input, and a result written over an input only when no rule reads it."""
    sin = REGISTRY["sin"]  # its rule reads x: its result must not be written over x
    monkeypatch.setitem(fast.TWINS, "sin", (None, None))
    with pytest.raises(RuntimeError, match=r"TWINS\['sin'\]: one twin"):
        fast.speedups(sin)
    monkeypatch.setitem(fast.TWINS, "sin", ())
    monkeypatch.setitem(fast.REUSE, "sin", np.sin)
    with pytest.raises(RuntimeError, match=r"REUSE\['sin'\]: its rules read an input"):
        fast.speedups(sin)


def test_replace_changes_fields_and_derives_the_rest_afresh():
    exp = REGISTRY["exp"]
    assert exp.reuse is np.exp and exp.twins  # (given when it was registered)
    wrong = exp.replace(vjps=(None,), doc="changed")
    assert (wrong.name, wrong.forward, wrong.inputs, wrong.saves) == (
        exp.name, exp.forward, exp.inputs, exp.saves)
    assert wrong.doc == "changed" and wrong.vjps == (None,)
    assert wrong.differentiable is False and wrong.reuse is None and wrong.twins == ()
    assert exp.doc != "changed" and exp.differentiable  # the original is untouched
    with pytest.raises(TypeError):
        exp.replace(differentiable=False)  # derived, not a constructor field


def test_a_replaced_entry_runs_its_own_rule():
    wrong = REGISTRY["sin"].replace(vjps=(lambda m, g, ans, x: g * 3.0,))
    import gradcli as gc
    with gc.GradientTape() as tape:
        x = gc.constant(0.5)
        tape.watch(x)
        y = ops.apply(wrong, (x,))
    assert float(tape.gradient(y, x)) == 3.0


def test_repr_names_every_field():
    text = repr(REGISTRY["sin"])
    assert text.startswith("Op(name='sin', forward=")
    for field in ("vjps=", "saves='inputs'", "differentiable=True", "reuse=None"):
        assert field in text
