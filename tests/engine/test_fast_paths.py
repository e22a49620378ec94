"""The large-array fast paths against the plain path, on random programs.

On arrays of 4096 elements or more the engine takes shortcuts (see ``engine/ops.py`` and
``engine/tape.py``): results written over temporaries, in-place twins of the rules, spent
arrays reused, a sum's gradient handed on as a scalar. Under an outer recording tape none
of them is taken (the rules run as engine operations), so the gradients computed there
are the reference. hypothesis builds random expressions over inputs of several
broadcasting shapes; each is evaluated as nested calls, so intermediate results really
are temporaries (what the reuse check looks for), and a drawn subexpression may also be
named and used twice (what it must refuse).
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcli as gc

SHAPES = {"x": (64, 100), "y": (64, 1), "z": (100,), "s": ()}

UNARY = {
    "sin": gc.sin, "cos": gc.cos, "tanh": gc.tanh, "sigmoid": gc.sigmoid,
    "neg": lambda a: -a, "square": lambda a: a ** 2, "half": lambda a: a * 0.5,
    "exp_tanh": lambda a: gc.exp(gc.tanh(a)), "soft_sqrt": lambda a: gc.sqrt(a * a + 1.0),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.0), "max": gc.maximum,
}


def _leaf(name):
    return lambda env: env[name]


def _unary(fn, child):
    return lambda env: fn(child(env))  # the child's result is a temporary


def _binary(fn, left, right):
    return lambda env: fn(left(env), right(env))


def _shared(fn, child):
    def run(env):
        named = child(env)  # held by a name: never written over
        return fn(named, named)
    return run


leaves = st.sampled_from(sorted(SHAPES)).map(_leaf)
expressions = st.recursive(
    leaves,
    lambda sub: st.one_of(
        st.builds(_unary, st.sampled_from(sorted(UNARY)).map(UNARY.get), sub),
        st.builds(_binary, st.sampled_from(sorted(BINARY)).map(BINARY.get), sub, sub),
        st.builds(_shared, st.sampled_from(sorted(BINARY)).map(BINARY.get), sub),
    ),
    max_leaves=8,
)
REDUCE = [lambda t: gc.sum(t), lambda t: gc.mean(t) * 3.0,
          lambda t: gc.sum(gc.sum(t, axis=0) * 2.0)]


def _inputs(seed, dtype):
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-1.5, 1.5, size=shape).astype(dtype)
            for name, shape in SHAPES.items()}


# float32 stays float32 through every path (Python numbers are weak scalars), so the
# shortcuts' dtype checks are exercised too; there the tolerance is float32's.
TOLERANCE = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-4, atol=1e-5)}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=expressions, reduce=st.sampled_from(range(len(REDUCE))),
       seed=st.integers(0, 2**16), dtype=st.sampled_from([np.float64, np.float32]))
def test_fast_paths_give_the_plain_paths_gradients(expr, reduce, seed, dtype):
    names = sorted(SHAPES)
    point = _inputs(seed, dtype)

    def f(*args):
        out = REDUCE[reduce](expr(dict(zip(names, args))))
        return out if isinstance(out, gc.Tensor) else gc.constant(out)

    args = [point[n] for n in names]
    fast_value, fast = gc.value_and_gradients_function(f)(*args)
    with gc.GradientTape():  # an outer tape records: no shortcut is taken
        plain_value, plain = gc.value_and_gradients_function(f)(*args)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(fast_value.numpy(), plain_value.numpy(), **tol)
    for name, got, want in zip(names, fast, plain):
        assert (got is None) == (want is None), name
        if got is not None:
            assert got.shape == SHAPES[name] and got.dtype == dtype, name
            np.testing.assert_allclose(got.numpy(), want.numpy(), err_msg=name, **tol)
    for name in names:  # nothing was written over the caller's arrays
        np.testing.assert_array_equal(point[name], _inputs(seed, dtype)[name])


# --- the switch: GRADCLI_FAST=0 runs the plain algorithm ---------------------------------
import pytest  # noqa: E402

from gradcli.engine import fast  # noqa: E402
from gradcli.engine.core.table import ORDER, REGISTRY  # noqa: E402

ELEMENTWISE = [n for n in ORDER if REGISTRY[n].elementwise and REGISTRY[n].differentiable
               and not REGISTRY[n].variadic and not REGISTRY[n].params]


def _large_gradients(name):
    """Gradients of sum(f(inputs) * w) on 5000-element inputs: the upstream gradient is a
    large unshared array, what the in-place twins and in-place sums look for."""
    op = REGISTRY[name]
    rng = np.random.default_rng(7)
    lo, hi = op.sample
    inputs = [rng.uniform(lo, hi, size=5000) for _ in op.inputs]
    w = rng.standard_normal(5000)
    f = gc.FUNCTIONS[name]
    return gc.value_and_gradients_function(lambda *xs: gc.sum(f(*xs) * w + f(*xs)))(*inputs)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_fast_paths_off_give_the_same_gradients(name, monkeypatch):
    monkeypatch.setattr(fast, "ENABLED", True)  # (whatever GRADCLI_FAST says)
    value, fast_grads = _large_gradients(name)
    monkeypatch.setattr(fast, "ENABLED", False)
    plain_value, plain_grads = _large_gradients(name)
    np.testing.assert_array_equal(value.numpy(), plain_value.numpy())
    for got, want in zip(fast_grads, plain_grads):
        assert (got is None) == (want is None), name
        if got is None:  # (where's condition)
            continue
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_the_switch_turns_the_in_place_twins_off(monkeypatch):
    """The comparison above compares something: with the switch on, twins run; off,
    none does."""
    made = []

    class Counted(fast.InPlace):
        __slots__ = ()

        def __init__(self, gradient):
            made.append(1)
            super().__init__(gradient)

    monkeypatch.setattr(fast, "InPlace", Counted)
    monkeypatch.setattr(fast, "ENABLED", True)  # (whatever GRADCLI_FAST says)
    for name in ("tanh", "sigmoid", "cos"):
        _large_gradients(name)
    assert made
    del made[:]
    monkeypatch.setattr(fast, "ENABLED", False)
    for name in ("tanh", "sigmoid", "cos"):
        _large_gradients(name)
    assert not made


def test_gradcli_fast_0_in_the_environment_sets_the_switch_off():
    import os
    import subprocess
    import sys
    code = "from gradcli.engine import fast; print(fast.ENABLED)"
    for setting, expected in (("0", "False"), ("1", "True")):
        env = {**os.environ, "GRADCLI_FAST": setting}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == expected
