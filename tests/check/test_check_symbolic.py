"""The sympy side of --check: translation from the tree, derivatives, kinks, limits, safety."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import more_cases
import numpy as np
import pytest

from gradcli.check.symbolic import (
    symbolic_derivative_text,
    symbolic_gradients,
    to_sympy,
)
from gradcli.engine import ops
from gradcli.lang import parse_program
from gradcli.engine.core.table import ORDER, REGISTRY, Op
from gradcli.lang.tree import (
    ArrayLit,
    Assign,
    Binary,
    Call,
    Compare,
    Declare,
    ExprStatement,
    Index,
    Name,
    Number,
    Program,
    Slice,
    TupleLit,
    Unary,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SEED = Program((ExprStatement(Binary("+", Binary("*", Name("w1"), Name("x1")),
                                     Binary("*", Name("w2"), Name("x2")))),))
SEED_POINT = {"w1": 2.0, "w2": 3.0, "x1": 5.0, "x2": 7.0}


def program(*statements) -> Program:
    return Program(tuple(s if isinstance(s, Assign) else ExprStatement(s) for s in statements))


def call(func, *args, **kwargs) -> Call:
    return Call(func, tuple(args), tuple(kwargs.items()))


def num(value: float):
    return Unary("-", Number(-value)) if value < 0 else Number(float(value))


def sympy_value(prog: Program, point: dict) -> np.ndarray:
    """The translated target evaluated at the point (floats, or bools for comparisons)."""
    import sympy as sp
    translated = to_sympy(prog, point)
    assert translated.skipped is None, translated.skipped
    out = np.empty(translated.target.shape, dtype=object)
    for idx in np.ndindex(out.shape):
        v = translated.target[idx].xreplace(translated.values)
        out[idx] = bool(v) if v in (sp.true, sp.false) else float(v.evalf())
    return out


# ---------------------------------------------------------------------------------------
# Every entry of the function table translates, and sympy's value equals the forward's
# ---------------------------------------------------------------------------------------
RNG = np.random.default_rng(7)


def _sample(op: Op, shape) -> np.ndarray:
    lo, hi = op.sample
    return RNG.uniform(lo, hi, size=shape)


A23 = (2, 3)
CONSTRUCTOR_CASES = {
    "zeros": {"shape": (2, 3)}, "ones": {"shape": (3,)}, "full": {"shape": (2, 2), "fill_value": 1.5},
    "eye": {"N": 3}, "linspace": {"start": 0, "stop": 1, "num": 5},
    "arange": {"start": 0, "stop": 3, "step": 0.5},
}


def _param_node(value):
    if isinstance(value, tuple):
        return TupleLit(tuple(_param_node(v) for v in value))
    if isinstance(value, bool):
        return Name("True" if value else "False")
    return num(value)


NUMPY = more_cases.numpy_namespace()


def table_cases():
    """(id, program, point, forward thunk) for every entry with a sympy form."""
    cases = []
    for name in ORDER:
        op = REGISTRY[name]
        if op.sympy is None:
            continue
        if op.samples is not None and op.kind == "linalg":
            # matrices a range cannot describe: the entry's own samples, as program text
            from table_samples import sample_programs

            from gradcli.lang import parse_program
            for label, text, point, value, _ in sample_programs(name):
                cases.append((f"{name}-{label}", parse_program(text), point,
                              lambda value=value: value))
            continue
        if name in more_cases.CASES:  # the entries of more_ops.py
            for k, (text, run, shapes) in enumerate(more_cases.CASES[name]):
                point = {n: _sample(op, s) for n, s in shapes.items()}
                cases.append((f"{name}#{k}", parse_program(text), point,
                              lambda run=run, point=point: run(NUMPY, point)))
            continue
        if op.kind == "constructor":
            params = CONSTRUCTOR_CASES[name]
            node = Call(name, (), tuple((k, _param_node(v)) for k, v in params.items()))
            cases.append((name, program(node), {}, lambda op=op, p=params: op.forward(**p)))
        elif name == "where":
            a, b, c = _sample(op, A23), _sample(op, A23), _sample(op, (3,))
            node = call("where", Compare(">", Name("c"), Number(0.0)), Name("a"), Name("b"))
            cases.append((name, program(node), {"a": a, "b": b, "c": c},
                          lambda a=a, b=b, c=c: np.where(c > 0, a, b)))
        elif name == "clip":
            x = _sample(op, A23)
            node = call("clip", Name("x"), num(-0.5), num(0.5))
            cases.append((name, program(node), {"x": x}, lambda x=x: np.clip(x, -0.5, 0.5)))
        elif op.elementwise:
            names = list(op.inputs)
            shapes = [A23] + [(3,)] * (len(names) - 1)  # broadcasting pairs
            point = {n: _sample(op, s) for n, s in zip(names, shapes)}
            node = Call(name, tuple(Name(n) for n in names))
            cases.append((name, program(node), point,
                          lambda op=op, pt=point, ns=names: op.forward(*(pt[n] for n in ns))))
        elif op.kind == "reduction" and name != "softmax":
            x = _sample(op, A23)
            for params in ({}, {"axis": 1, "keepdims": True}, {"axis": 0}):
                node = Call(name, (Name("x"),), tuple((k, _param_node(v)) for k, v in params.items()))
                cases.append((f"{name}{params}", program(node), {"x": x},
                              lambda op=op, x=x, p=params: op.forward(x, **p)))
        elif name == "softmax":
            x = _sample(op, A23)
            cases.append((name, program(call("softmax", Name("x"))), {"x": x},
                          lambda op=op, x=x: op.forward(x)))
        elif name in ("matmul", "dot"):
            x, y = _sample(op, (2, 3)), _sample(op, (3, 2))
            cases.append((name, program(call(name, Name("x"), Name("y"))), {"x": x, "y": y},
                          lambda op=op, x=x, y=y: op.forward(x, y)))
        elif name == "transpose":
            x = _sample(op, A23)
            cases.append((name, program(call(name, Name("x"))), {"x": x}, lambda x=x: x.T))
        elif name == "reshape":
            x = _sample(op, A23)
            cases.append((name, program(call(name, Name("x"), _param_node((3, 2)))), {"x": x},
                          lambda x=x: x.reshape(3, 2)))
        elif op.variadic:
            a, b = _sample(op, A23), _sample(op, A23)
            node = call(name, ArrayLit((Name("a"), Name("b"))), axis=num(1))
            cases.append((name, program(node), {"a": a, "b": b},
                          lambda op=op, a=a, b=b: op.forward(a, b, axis=1)))
        else:
            cases.append((name, None, None, None))  # fails below: add a case for it
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("case", table_cases(), ids=lambda c: c[0])
def test_every_table_entry_translates_to_the_forward_value(case):
    name, prog, point, forward = case
    assert prog is not None, f"no test case for table entry {name!r}: add one"
    got = sympy_value(prog, point)
    want = np.asarray(forward())
    assert got.shape == want.shape
    if want.dtype == bool:
        assert got.astype(bool).tolist() == want.tolist()
    else:
        np.testing.assert_allclose(got.astype(float), want, rtol=1e-10, atol=1e-12)


def test_aliases_translate_like_their_entry():
    point = {"x": 0.3}
    for alias, name in (("asin", "arcsin"), ("ln", "log"), ("atanh", "arctanh")):
        assert sympy_value(program(call(alias, Name("x"))), point)[()] == \
            pytest.approx(REGISTRY[name].forward(0.3), rel=1e-12)


# ---------------------------------------------------------------------------------------
# Translation details
# ---------------------------------------------------------------------------------------
def test_inputs_become_real_element_symbols():
    translated = to_sympy(program(call("sum", Name("x"))), {"x": np.ones((2, 3))})
    symbols = translated.sources["x"]
    assert symbols.shape == (2, 3)
    assert str(symbols[0, 1]) == "x[0,1]"
    assert all(s.is_real for s in symbols.flat)


def test_names_that_mean_something_to_sympy_stay_plain_symbols():
    # Built node by node, never from text: a user name "I" is not the imaginary unit.
    prog = program(Binary("*", Name("I"), Name("E")))
    assert sympy_value(prog, {"I": 2.0, "E": 3.0})[()] == 6.0


def test_declared_names_shadow_constants():
    prog = program(Binary("*", Name("pi"), Number(2.0)))
    assert sympy_value(prog, {"pi": 3.0})[()] == 6.0
    assert sympy_value(prog, {})[()] == pytest.approx(2 * np.pi)


def test_constants_pi_e_inf():
    prog = program(Binary("+", Name("pi"), Name("e")))
    assert sympy_value(prog, {})[()] == pytest.approx(np.pi + np.e)
    assert sympy_value(program(Name("inf")), {})[()] == np.inf


def test_indexing_slicing_and_array_literals():
    x = np.arange(6.0).reshape(2, 3)
    prog = program(Binary("+", Index(Name("x"), (Slice(None, None, None), Number(1.0))),
                          ArrayLit((Number(10.0), Index(Name("x"), (Number(0.0), Number(2.0)))))))
    np.testing.assert_allclose(sympy_value(prog, {"x": x}).astype(float),
                               x[:, 1] + np.array([10.0, x[0, 2]]))


def test_boolean_used_as_number_counts_one_or_zero():
    prog = program(Binary("*", Compare(">", Name("x"), Number(0.0)), Name("x")))
    assert sympy_value(prog, {"x": 2.0})[()] == 2.0
    assert sympy_value(prog, {"x": -2.0})[()] == 0.0


def test_variable_declared_in_the_program_is_an_input():
    prog = program(Assign("w", Declare("variable", Number(2.0))),
                   Assign("y", Binary("*", Name("w"), Name("w"))))
    res = symbolic_gradients(prog, {}, ["w"], in_process=True)
    assert float(res["w"].value) == 4.0


def test_too_many_elements_is_a_result_not_an_exception():
    prog = program(call("sum", Name("x")))
    translated = to_sympy(prog, {"x": np.ones(300)}, max_elements=256)
    assert translated.target is None
    assert translated.skipped == "too large for a symbolic check (300 elements > 256)"
    res = symbolic_gradients(prog, {"x": np.ones(300)}, ["x"])
    assert res["x"].skipped == "too large for a symbolic check (300 elements > 256)"


def test_function_without_symbolic_form_is_skipped_with_its_name():
    fake = Op(name="mystery", forward=np.sin, vjps=(None,), inputs=("x",), doc="", sympy=None)
    res = symbolic_gradients(program(call("mystery", Name("x"))), {"x": 1.0}, ["x"],
                             lookup={"mystery": fake}.get, in_process=True)
    assert res["x"].skipped == "no symbolic form for mystery"


def test_translation_imports_nothing_by_text(monkeypatch):
    import sympy

    def refuse(*args, **kwargs):
        raise AssertionError("text reached sympy's parser")

    for name in ("sympify", "parse_expr", "lambdify"):
        monkeypatch.setattr(sympy, name, refuse)
    monkeypatch.setattr(sympy.parsing.sympy_parser, "parse_expr", refuse)
    res = symbolic_gradients(SEED, SEED_POINT, ["w1"], in_process=True)
    assert float(res["w1"].value) == 5.0


# ---------------------------------------------------------------------------------------
# Derivatives
# ---------------------------------------------------------------------------------------
def test_seed_derivatives_are_exact():
    res = symbolic_gradients(SEED, SEED_POINT, ["w1", "w2", "x1", "x2"])
    assert [float(res[n].value) for n in ("w1", "w2", "x1", "x2")] == [5.0, 7.0, 2.0, 3.0]
    assert not any(bool(r.kink) for r in res.values())


def test_non_scalar_target_is_differentiated_as_its_sum():
    x = np.array([0.1, 0.2, 0.3])
    res = symbolic_gradients(program(call("sin", Name("x"))), {"x": x}, ["x"], in_process=True)
    np.testing.assert_allclose(res["x"].value, np.cos(x), rtol=1e-14)


def test_source_the_target_does_not_read_gets_zero():
    res = symbolic_gradients(SEED, {**SEED_POINT, "z": np.ones(2)}, ["z"], in_process=True)
    assert res["z"].value.tolist() == [0.0, 0.0]


def test_intermediate_source_is_cut_out_as_the_tape_does():
    # h = x * 2; y = sin(h): d y / d h = cos(h), d y / d x = 2 cos(2x)
    prog = program(Assign("h", Binary("*", Name("x"), Number(2.0))),
                   Assign("y", call("sin", Name("h"))))
    res = symbolic_gradients(prog, {"x": 0.3}, ["h", "x"], in_process=True)
    assert float(res["h"].value) == pytest.approx(np.cos(0.6), rel=1e-14)
    assert float(res["x"].value) == pytest.approx(2 * np.cos(0.6), rel=1e-14)


def test_intermediate_source_still_flows_through_later_intermediates():
    # h1 = x * x; h2 = 3 * h1; y = h1 * h2  -> dy/dh1 (total) = h2 + 3 h1 = 6 h1, dy/dh2 = h1
    prog = program(Assign("h1", Binary("*", Name("x"), Name("x"))),
                   Assign("h2", Binary("*", Number(3.0), Name("h1"))),
                   Assign("y", Binary("*", Name("h1"), Name("h2"))))
    res = symbolic_gradients(prog, {"x": 2.0}, ["h1", "h2"], in_process=True)
    assert float(res["h1"].value) == 24.0
    assert float(res["h2"].value) == 4.0


def test_rebound_argument_is_the_input_when_not_an_intermediate():
    # x = sin(x) * 2 then y = x * x: for grad, x means the argument (total derivative).
    prog = program(Assign("x", Binary("*", call("sin", Name("x")), Number(2.0))),
                   Assign("y", Binary("*", Name("x"), Name("x"))))
    res = symbolic_gradients(prog, {"x": 0.5}, ["x"], intermediates=(), in_process=True)
    assert float(res["x"].value) == pytest.approx(8 * np.sin(0.5) * np.cos(0.5), rel=1e-14)
    as_intermediate = symbolic_gradients(prog, {"x": 0.5}, ["x"], in_process=True)
    assert float(as_intermediate["x"].value) == pytest.approx(4 * np.sin(0.5), rel=1e-14)


def test_stop_gradient_blocks_the_derivative():
    prog = program(Binary("*", call("stop_gradient", Name("x")), Name("x")))
    res = symbolic_gradients(prog, {"x": 3.0}, ["x"], in_process=True)
    assert float(res["x"].value) == 3.0


def test_named_target():
    prog = program(Assign("a", Binary("*", Name("x"), Number(3.0))),
                   Assign("b", Binary("*", Name("x"), Name("x"))))
    res = symbolic_gradients(prog, {"x": 2.0}, ["x"], target="a", in_process=True)
    assert float(res["x"].value) == 3.0


def test_derivative_text():
    assert symbolic_derivative_text(SEED, SEED_POINT, ["w1", "x2"]) == {"w1": "x1", "x2": "w2"}
    text = symbolic_derivative_text(program(call("sum", call("sin", Name("x")))),
                                    {"x": np.zeros(2)}, ["x"])
    assert text == {"x": "[cos(x[0]), cos(x[1])]"}


def test_complex_derivative_is_reported_not_real():
    res = symbolic_gradients(program(call("sqrt", Name("x"))), {"x": -1.0}, ["x"], in_process=True)
    assert np.isnan(res["x"].value)
    assert "not real" in res["x"].note


# ---------------------------------------------------------------------------------------
# Kinks
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("func", ["abs", "relu"])
def test_kink_at_zero(func):
    res = symbolic_gradients(program(call(func, Name("x"))), {"x": 0.0}, ["x"], in_process=True)
    assert bool(res["x"].kink)
    assert float(res["x"].value) == {"abs": 0.0, "relu": 0.5}[func]  # sign(0), Heaviside(0)


def test_kink_only_where_the_element_is_at_zero():
    res = symbolic_gradients(program(call("abs", Name("x"))), {"x": np.array([0.0, 1.0, -2.0])},
                             ["x"], in_process=True)
    assert res["x"].kink.tolist() == [True, False, False]
    assert res["x"].value.tolist() == [0.0, 1.0, -1.0]


def test_maximum_tie_is_a_kink_for_both_inputs():
    prog = program(call("maximum", Name("x"), Name("y")))
    res = symbolic_gradients(prog, {"x": 1.0, "y": 1.0}, ["x", "y"], in_process=True)
    assert bool(res["x"].kink) and bool(res["y"].kink)
    assert float(res["x"].value) == 0.5


def test_no_kink_away_from_it():
    for func, x in (("abs", 0.5), ("relu", -1.0), ("floor", 1.5), ("sign", 2.0)):
        res = symbolic_gradients(program(call(func, Name("x"))), {"x": x}, ["x"], in_process=True)
        assert not bool(res["x"].kink), func
        assert float(res["x"].value) == {"abs": 1.0}.get(func, 0.0)


def test_sign_and_floor_kinks():
    sign = symbolic_gradients(program(call("sign", Name("x"))), {"x": 0.0}, ["x"], in_process=True)
    assert bool(sign["x"].kink)
    floor = symbolic_gradients(program(call("floor", Name("x"))), {"x": 2.0}, ["x"], in_process=True)
    assert bool(floor["x"].kink)


def test_where_boundary_in_another_variable_is_not_a_kink_for_x():
    prog = program(call("where", Compare(">", Name("y"), Number(0.0)), Name("x"),
                        Binary("*", Number(2.0), Name("x"))))
    res = symbolic_gradients(prog, {"x": 1.0, "y": 0.0}, ["x", "y"], in_process=True)
    assert not bool(res["x"].kink)
    assert float(res["x"].value) == 2.0
    assert bool(res["y"].kink)


# ---------------------------------------------------------------------------------------
# Limits and safety: the worker
# ---------------------------------------------------------------------------------------
def sin_chain(depth: int) -> Program:
    node = Name("x")
    for _ in range(depth):
        node = call("sin", node)
    return program(node)


def test_deep_sin_chain_is_skipped_quickly():
    start = time.monotonic()
    res = symbolic_gradients(sin_chain(100), {"x": 0.5}, ["x"], timeout=5.0)
    assert time.monotonic() - start < 5.0
    assert res["x"].skipped.startswith("too deep for sympy")


@pytest.mark.slow
def test_sympy_recursion_error_is_a_skip():
    start = time.monotonic()
    res = symbolic_gradients(sin_chain(400), {"x": 0.5}, ["x"], timeout=5.0, max_depth=10**6)
    assert time.monotonic() - start < 5.0
    assert res["x"].skipped == "too deep for sympy (RecursionError)"


def _slow_lookup(seconds: float):
    def slow(sp, x):
        time.sleep(seconds)
        return sp.sin(x)
    fake = Op(name="slow", forward=np.sin, vjps=(None,), inputs=("x",), doc="", sympy=slow,
              elementwise=True)
    return {"slow": fake, **REGISTRY}.get


@pytest.mark.slow
def test_timeout_is_respected():
    start = time.monotonic()
    res = symbolic_gradients(program(call("slow", Name("x"))), {"x": 1.0}, ["x", "y"],
                             timeout=0.5, lookup=_slow_lookup(30.0))
    assert time.monotonic() - start < 10.0  # the 0.5 s limit, not the function's 30 s
    assert res["x"].skipped == "took longer than 0.5s"
    assert res["y"].skipped == "took longer than 0.5s"


@pytest.mark.slow
def test_results_finished_before_the_timeout_are_kept():
    calls = []

    def slow_second_time(sp, x):  # fast in the first translation, slow in the second
        calls.append(1)
        if len(calls) > 1:
            time.sleep(30.0)
        return sp.sin(x)
    fake = Op(name="slow", forward=np.sin, vjps=(None,), inputs=("x",), doc="",
              sympy=slow_second_time, elementwise=True)
    # x: the shared translation; h: an intermediate, translated again with h cut out.
    prog = program(Assign("h", Binary("*", Name("x"), Number(2.0))),
                   Assign("y", call("slow", Name("h"))))
    start = time.monotonic()
    res = symbolic_gradients(prog, {"x": 0.3}, ["x", "h"], timeout=1.0,
                             lookup={"slow": fake, **REGISTRY}.get)
    assert time.monotonic() - start < 10.0
    assert float(res["x"].value) == pytest.approx(2 * np.cos(0.6), rel=1e-14)
    assert res["h"].skipped == "took longer than 1s"


def test_worker_crash_is_a_skip():
    def crash(sp, x):
        os._exit(3)
    fake = Op(name="crash", forward=np.sin, vjps=(None,), inputs=("x",), doc="", sympy=crash,
              elementwise=True)
    res = symbolic_gradients(program(call("crash", Name("x"))), {"x": 1.0}, ["x"],
                             lookup={"crash": fake}.get)
    assert res["x"].skipped == "sympy worker stopped unexpectedly (exit code 3)"


def test_sympy_exception_is_a_skip_with_the_reason():
    def broken(sp, x):
        raise ZeroDivisionError("boom")
    fake = Op(name="broken", forward=np.sin, vjps=(None,), inputs=("x",), doc="", sympy=broken,
              elementwise=True)
    res = symbolic_gradients(program(call("broken", Name("x"))), {"x": 1.0}, ["x"],
                             lookup={"broken": fake}.get)
    assert res["x"].skipped == "sympy failed: ZeroDivisionError: boom"


def test_importing_the_check_package_does_not_import_sympy():
    code = ("import sys, gradcli.check, gradcli.check.compare, gradcli.check.numeric; "
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_constants_table_matches_sympy_constants():
    import sympy as sp
    for name, value in ops.CONSTANTS.items():
        assert float({"pi": sp.pi, "e": sp.E, "inf": sp.oo}[name]) == value
