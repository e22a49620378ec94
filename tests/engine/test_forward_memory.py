"""Forward mode without growth (issue 25, part 3): an accumulator's tangents die with
their primals, a dropped accumulator frees its tangents at once, and temporaries' buffers
are reused in forward mode as in reverse. Truths: the chain rule written out in numpy,
central differences, peak RSS of hand-written numpy in its own process."""
import gc as pygc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import gradcli as gc
from gradcli.engine import fast
from gradcli.engine.core.table import REGISTRY

STEPS = 250  # four elementwise operations a step: a chain of 1,000 operations


def _chain(x):
    for _ in range(STEPS):
        x = gc.tanh(gc.sin(x) * 1.01 + 0.1)
    return x


def _chain_by_hand(x, t):
    """The chain's value and tangent, the chain rule written out in numpy."""
    for _ in range(STEPS):
        c = np.cos(x)
        x = np.tanh(np.sin(x) * 1.01 + 0.1)
        t = t * c * 1.01 * (1.0 - x * x)
    return x, t


def test_jvp_of_a_thousand_operation_chain_is_the_chain_rule():
    x0 = np.linspace(-2.0, 2.0, 5000)  # above the size where temporaries are reused
    t0 = np.cos(np.arange(5000.0))
    x = gc.constant(x0)
    with gc.ForwardAccumulator(x, t0) as acc:
        y = _chain(x)
    value, tangent = _chain_by_hand(x0, t0)
    np.testing.assert_allclose(y.numpy(), value, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(acc.jvp(y).numpy(), tangent, rtol=1e-10, atol=1e-14)
    # and against central differences, independently of the hand derivation
    h = 1e-6
    fd = (_chain_by_hand(x0 + h * t0, t0)[0] - _chain_by_hand(x0 - h * t0, t0)[0]) / (2 * h)
    np.testing.assert_allclose(acc.jvp(y).numpy(), fd, rtol=1e-5, atol=1e-8)


def test_a_tangent_dies_with_its_primal():
    x = gc.constant(np.linspace(0.0, 1.0, 100))
    with gc.ForwardAccumulator(x, np.ones(100)) as acc:
        y = gc.sin(x)
        z = gc.exp(y)
    held = weakref.ref(acc.jvp(y).numpy())
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.exp(np.sin(x.numpy())) * np.cos(x.numpy()))
    del y
    assert held() is None  # no one can ask for y's tangent any more: it is freed
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.exp(np.sin(x.numpy())) * np.cos(x.numpy()))


def test_a_dropped_accumulator_frees_its_tangents_without_the_cyclic_collector():
    x = gc.constant(np.linspace(0.0, 1.0, 100))
    pygc.disable()
    try:
        with gc.ForwardAccumulator(x, np.ones(100)) as acc:
            y = gc.sin(x)
        held = weakref.ref(acc.jvp(y).numpy())
        del acc
        assert held() is None
    finally:
        pygc.enable()
    assert y.numpy().shape == (100,)


def test_forward_mode_writes_results_over_temporaries(monkeypatch):
    """``tanh(x * 2.0)`` inside an accumulator: the product is a temporary, so tanh's
    result is written over it (as without an accumulator), and the tangent is right."""
    monkeypatch.setattr(fast, "ENABLED", True)  # (whatever GRADCLI_FAST says)
    calls = []
    ufunc = REGISTRY["tanh"].reuse

    def counting(*args, out):
        calls.append(out.shape)
        return ufunc(*args, out=out)
    x0 = np.linspace(-1.0, 1.0, 10_000)
    x = gc.constant(x0)
    object.__setattr__(REGISTRY["tanh"], "reuse", counting)  # (entries refuse setattr)
    try:
        with gc.ForwardAccumulator(x, np.ones_like(x0)) as acc:
            y = gc.tanh(x * 2.0)
    finally:
        object.__setattr__(REGISTRY["tanh"], "reuse", ufunc)
    assert calls == [(10_000,)]
    np.testing.assert_allclose(y.numpy(), np.tanh(2.0 * x0))
    np.testing.assert_allclose(acc.jvp(y).numpy(), 2.0 * (1.0 - np.tanh(2.0 * x0) ** 2))


_CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import gradcli as gc
    n, steps = 100_000, 250
    x0 = np.linspace(-1.0, 1.0, n); t0 = np.ones(n)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.argv[1] == "engine":
        x = gc.constant(x0)
        with gc.ForwardAccumulator(x, t0) as acc:
            y = x
            for _ in range(steps):
                y = gc.tanh(gc.sin(y) * 1.01 + 0.1)
        tangent = acc.jvp(y).numpy()
    else:
        x, tangent = x0.copy(), t0.copy()
        for _ in range(steps):
            c = np.cos(x)
            x = np.tanh(np.sin(x) * 1.01 + 0.1)
            tangent = tangent * c * 1.01 * (1.0 - x * x)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    print(grown, float(tangent.sum()))
""")


@pytest.mark.slow
def test_peak_memory_of_a_thousand_operation_jvp_chain_is_within_twice_hand_numpy():
    """Before the tangents were held weakly, the chain kept all 1,000 tangents of 10^5
    elements alive (+766 MiB against numpy's +5.6 MiB)."""
    grown = {}
    for who in ("numpy", "engine"):
        out = subprocess.run([sys.executable, "-c", _CHILD, who], capture_output=True,
                             text=True, check=True, timeout=300).stdout.split()
        grown[who] = (int(out[0]), float(out[1]))  # KiB of peak RSS grown, tangent sum
    np.testing.assert_allclose(grown["engine"][1], grown["numpy"][1], rtol=1e-10)
    # (a floor of one array, 0.8 MB, so that a lucky hand-numpy run cannot fail the test)
    assert grown["engine"][0] <= 2 * max(grown["numpy"][0], 800), grown
