#!/usr/bin/env python
"""Speed and memory benchmark of gradcli (SPEC §5, issue 5).

    python benchmarks/run.py                  # full run, ~1-3 minutes
    python benchmarks/run.py --quick          # fewer repetitions, < 30 s
    python benchmarks/run.py --only big,mlp   # some workloads only
    python benchmarks/run.py --repeat 21      # more repetitions (median of N)
    python benchmarks/run.py --json out.json  # also write every sample as JSON
    python benchmarks/run.py --profile chain  # cProfile of gradcli on one workload
    python benchmarks/run.py --wait-idle 300  # wait for a quiet machine before each workload

Every workload computes a value AND its gradient in float64, on:

- ``numpy``    hand-written value and gradient (the limit);
- ``gradcli``  this project's tape engine;
- ``autograd`` HIPS autograd, when installed;
- ``torch``    PyTorch eager on the CPU, float64, ``torch.set_num_threads(1)``, when installed.

numpy keeps its BLAS threads as they are (OpenBLAS' default, i.e. every core); that only
matters for the matmuls of ``mlp``, where gradcli and the hand-written numpy use the same
BLAS. The optional peers install with ``pip install -e '.[bench]'``.

Method: each implementation is checked once against the hand-written result, warmed up,
then timed with ``time.perf_counter`` in batches long enough to be measurable; the batches
of the implementations of one workload are interleaved (round-robin, rotating the order)
so that drifts of the machine hit them alike, and the table shows the median per call.
Each ratio is the median of per-round ratios (the two samples of a round are taken back to
back), which resists the machine's changes of speed better than a ratio of medians. The garbage collector stays on, as
in a user's program. Peak memory of ``big`` is measured with ``tracemalloc`` (numpy reports
its buffers to it) in a fresh child process per implementation, on the second call; ``deep``
also runs in a fresh process that imports only gradcli (see ``deep_child``). ``cli`` times
whole processes (``subprocess.run``) with .pyc files allowed, as after a real install,
the default output both to a pipe and to a pseudo-terminal (with rich's styles).
Each workload also reports how much CPU other processes used meanwhile, and warns when
the machine was busy (``--wait-idle`` waits for a quiet moment before each workload).

Only the standard library, numpy and gradcli are needed; nothing here is imported by tests.
"""
from __future__ import annotations

import argparse
import gc as _pygc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

IMPLS = ("numpy", "gradcli", "autograd", "torch")
WORKLOADS = ("weighted", "chain", "big", "mlp", "deep", "cli", "hessian", "higher", "jvp",
             "batch", "formulas", "inside", "scale")
#: Not in --quick (Parquet files, Dask clusters, minutes): benchmarks/scale.py.
SLOW_WORKLOADS = ("scale",)

# ---------------------------------------------------------------------------------------
# optional libraries


def _import_gradcli():
    try:
        import gradcli as gc  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - report anything, the library may be half-written
        return None, f"{type(exc).__name__}: {exc}"
    if not hasattr(gc, "implicit_value_and_gradients"):
        return None, "gradcli does not export implicit_value_and_gradients yet"
    return gc, None


def _import_autograd():
    try:
        import autograd
        import autograd.numpy as anp

        return (autograd, anp), None
    except ImportError:
        return None, "not installed"


def _import_torch():
    try:
        import torch

        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        return torch, None
    except ImportError:
        return None, "not installed"


# ---------------------------------------------------------------------------------------
# converting results for the correctness check


def to_np(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch
        x = x.detach()
    if hasattr(x, "numpy"):  # gradcli Tensor / torch
        x = x.numpy()
    return np.asarray(x, dtype=np.float64)


def same(result, reference, rtol=1e-9, atol=1e-12) -> str:
    """'ok' when (value, [grads]) agrees with the hand-written reference."""
    value, grads = result
    ref_value, ref_grads = reference
    try:
        pairs = [(value, ref_value)] + list(zip(grads, ref_grads, strict=True))
        for got, want in pairs:
            got, want = to_np(got), to_np(want)
            if got.shape != want.shape:
                return f"shape {got.shape} != {want.shape}"
            if not np.allclose(got, want, rtol=rtol, atol=atol):
                err = float(np.max(np.abs(got - want)))
                return f"MISMATCH (max abs err {err:.3g})"
    except Exception as exc:  # noqa: BLE001
        return f"MISMATCH ({type(exc).__name__}: {exc})"
    return "ok"


# ---------------------------------------------------------------------------------------
# workloads: each builder returns ({impl: zero-argument callable -> (value, [grads])},
# reference (value, [grads]) from the hand-written numpy); a peer that is not installed
# is passed as None and left out


def build_weighted(gc, ag, torch):
    x1, x2 = 5.0, 7.0
    impls: dict[str, Any] = {}

    w1n, w2n = 2.0, 3.0

    def numpy_hand():
        return w1n * x1 + w2n * x2, [x1, x2]

    impls["numpy"] = numpy_hand

    if gc is not None:
        w1 = gc.Variable(2.0)
        w2 = gc.Variable(3.0)

        def weighted_sum(a, b):
            return w1 * a + w2 * b

        def gradcli_run():
            # the literal SPEC call, wrapper creation included (it is what a user writes)
            value, pairs = gc.implicit_value_and_gradients(weighted_sum)(5.0, 7.0)
            return value, [g for g, _ in pairs]

        impls["gradcli"] = gradcli_run

    if ag is not None:
        autograd, _ = ag

        def f(a1, a2, b1, b2):
            return a1 * b1 + a2 * b2

        def autograd_run():
            value, grads = autograd.value_and_grad(f, argnum=(0, 1))(2.0, 3.0, 5.0, 7.0)
            return value, list(grads)

        impls["autograd"] = autograd_run

    if torch is not None:
        tw1 = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
        tw2 = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)

        def torch_run():
            tw1.grad = None
            tw2.grad = None
            s = tw1 * x1 + tw2 * x2
            s.backward()
            return s, [tw1.grad, tw2.grad]

        impls["torch"] = torch_run

    reference = (31.0, [5.0, 7.0])
    return impls, reference


CHAIN_STEPS = 1000
CHAIN_X0 = 0.5


def build_chain(gc, ag, torch):
    n = CHAIN_STEPS
    impls: dict[str, Any] = {}

    def numpy_hand():
        # scalar work is fastest on Python floats: numpy's scalar ufuncs cost ~10x more
        x = CHAIN_X0
        cosines = []
        for _ in range(n):
            cosines.append(math.cos(x))
            x = math.sin(x) * 1.01 + 0.1
        grad = 1.0
        for c in reversed(cosines):
            grad *= c * 1.01
        return x, [grad]

    impls["numpy"] = numpy_hand

    if gc is not None:

        def f(x):
            for _ in range(n):
                x = gc.sin(x) * 1.01 + 0.1
            return x

        vg = gc.value_and_gradients_function(f)

        def gradcli_run():
            value, grads = vg(CHAIN_X0)
            return value, list(grads)

        impls["gradcli"] = gradcli_run

    if ag is not None:
        autograd, anp = ag

        def fa(x):
            for _ in range(n):
                x = anp.sin(x) * 1.01 + 0.1
            return x

        avg = autograd.value_and_grad(fa)

        def autograd_run():
            value, grad = avg(CHAIN_X0)
            return value, [grad]

        impls["autograd"] = autograd_run

    if torch is not None:
        tx0 = torch.tensor(CHAIN_X0, dtype=torch.float64, requires_grad=True)

        def torch_run():
            tx0.grad = None
            x = tx0
            for _ in range(n):
                x = torch.sin(x) * 1.01 + 0.1
            x.backward()
            return x, [tx0.grad]

        impls["torch"] = torch_run

    return impls, numpy_hand()


BIG_N = 10**6


def big_input() -> np.ndarray:
    # on [0, 3] every term is positive, so the value does not cancel to rounding noise
    return np.linspace(0.0, 3.0, BIG_N)


def big_numpy_hand(x: np.ndarray):
    """sum(sin(x) * exp(-x**2)) and its gradient exp(-x^2) * (cos(x) - 2 x sin(x))."""
    s = np.sin(x)
    e = np.exp(-(x * x))
    value = float(s @ e)
    grad = np.cos(x)
    s *= x
    s *= 2.0
    grad -= s
    grad *= e
    return value, [grad]


def build_big_impls(gc, ag, torch, x: np.ndarray, which=IMPLS):
    impls: dict[str, Any] = {}
    if "numpy" in which:
        impls["numpy"] = lambda: big_numpy_hand(x)

    if gc is not None and "gradcli" in which:

        def f(t):
            return gc.sum(gc.sin(t) * gc.exp(-t**2))

        vg = gc.value_and_gradients_function(f)

        def gradcli_run():
            value, grads = vg(x)
            return value, list(grads)

        impls["gradcli"] = gradcli_run

    if ag is not None and "autograd" in which:
        autograd, anp = ag

        def fa(t):
            return anp.sum(anp.sin(t) * anp.exp(-(t**2)))

        avg = autograd.value_and_grad(fa)

        def autograd_run():
            value, grad = avg(x)
            return value, [grad]

        impls["autograd"] = autograd_run

    if torch is not None and "torch" in which:
        tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)

        def torch_run():
            tx.grad = None
            y = torch.sum(torch.sin(tx) * torch.exp(-(tx**2)))
            y.backward()
            return y, [tx.grad]

        impls["torch"] = torch_run
    return impls


def build_big(gc, ag, torch):
    x = big_input()
    return build_big_impls(gc, ag, torch, x), big_numpy_hand(x)


def mlp_data():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((256, 256)) / 16.0
    X = rng.standard_normal((256, 512))
    Y = rng.standard_normal((256, 512))
    b = rng.standard_normal((256, 1))
    return W, X, Y, b


def mlp_numpy_hand(W, X, Y, b):
    Z = W @ X
    Z += b
    A = np.tanh(Z)
    D = A - Y
    value = float(np.vdot(D, D))
    # dL/dZ = 2 D (1 - A^2), computed in place in Z's buffer
    np.multiply(A, A, out=Z)
    np.subtract(1.0, Z, out=Z)
    Z *= D
    Z *= 2.0
    dW = Z @ X.T
    db = Z.sum(axis=1, keepdims=True)
    return value, [dW, db]


def build_mlp(gc, ag, torch):
    W, X, Y, b = mlp_data()
    impls: dict[str, Any] = {"numpy": lambda: mlp_numpy_hand(W, X, Y, b)}

    if gc is not None:
        Xc, Yc = gc.constant(X), gc.constant(Y)

        def f(w, bias):
            return gc.sum((gc.tanh(w @ Xc + bias) - Yc) ** 2)

        vg = gc.value_and_gradients_function(f)

        def gradcli_run():
            value, grads = vg(W, b)
            return value, list(grads)

        impls["gradcli"] = gradcli_run

    if ag is not None:
        autograd, anp = ag

        def fa(w, bias, x, y):
            return anp.sum((anp.tanh(w @ x + bias) - y) ** 2)

        avg = autograd.value_and_grad(fa, argnum=(0, 1))

        def autograd_run():
            value, grads = avg(W, b, X, Y)
            return value, list(grads)

        impls["autograd"] = autograd_run

    if torch is not None:
        tW = torch.tensor(W, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        tX, tY = torch.tensor(X), torch.tensor(Y)

        def torch_run():
            tW.grad = None
            tb.grad = None
            y = torch.sum((torch.tanh(tW @ tX + tb) - tY) ** 2)
            y.backward()
            return y, [tW.grad, tb.grad]

        impls["torch"] = torch_run

    return impls, mlp_numpy_hand(W, X, Y, b)


# ---------------------------------------------------------------------------------------
# hessian: the full Hessian of sum(tanh(W @ x)), x of 100 elements (issue 11)

HESSIAN_N = 100


def hessian_data():
    rng = np.random.default_rng(11)
    return rng.standard_normal((HESSIAN_N, HESSIAN_N)) / 10.0, rng.standard_normal(HESSIAN_N)


def hessian_numpy_hand(W, x):
    """sum(tanh(W x)) and its Hessian W^T diag(-2 t (1 - t^2)) W, t = tanh(W x)."""
    t = np.tanh(W @ x)
    return float(np.sum(t)), [(W.T * (-2.0 * t * (1.0 - t * t))) @ W]


def build_hessian(gc, ag, torch):
    """Three ways to the same Hessian: forward over reverse (one Hessian-vector product
    per column, never the whole Hessian at once), reverse over reverse (tape.jacobian of
    the gradient: one backward pass per row), and torch.autograd.functional.hessian."""
    W, x0 = hessian_data()
    impls: dict[str, Any] = {"numpy": lambda: hessian_numpy_hand(W, x0)}

    if gc is not None:
        Wc = gc.constant(W)

        def f(x):
            return gc.sum(gc.tanh(Wc @ x))

        basis = np.eye(HESSIAN_N)

        def forward_over_reverse():
            columns = [gc.hessian_vector_product(f, [x0], [basis[k]])[0].numpy()
                       for k in range(HESSIAN_N)]
            return float(f(gc.constant(x0))), [np.stack(columns, axis=1)]

        def reverse_over_reverse():
            x = gc.constant(x0)
            with gc.GradientTape(persistent=True) as outer:
                outer.watch(x)
                with gc.GradientTape() as inner:
                    inner.watch(x)
                    y = f(x)
                g = inner.gradient(y, x)
            return float(y), [outer.jacobian(g, x).numpy()]

        impls["gradcli fwd-over-rev"] = forward_over_reverse
        impls["gradcli rev-over-rev"] = reverse_over_reverse

    if torch is not None:
        tW = torch.tensor(W)

        def ft(x):
            return torch.sum(torch.tanh(tW @ x))

        def torch_run():
            x = torch.tensor(x0)
            return ft(x), [torch.autograd.functional.hessian(ft, x)]

        impls["torch"] = torch_run

    return impls, hessian_numpy_hand(W, x0)


# ---------------------------------------------------------------------------------------
# higher: full Hessians and Jacobians in one batched pass (issue 25), against torch's
# autograd.functional with vectorize=True

HIGHER_HESSIAN_NS = (10, 100, 300)
HIGHER_JACOBIANS = ((100, 100), (1000, 10))  # (inputs, outputs)


def _rosen_lse_hand(x):
    """Rosenbrock plus log-sum-exp, its value and Hessian written out by hand."""
    n = x.size
    value = (np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
             + np.log(np.sum(np.exp(x))))
    H = np.zeros((n, n))
    i = np.arange(n - 1)
    H[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    H[i + 1, i + 1] += 200.0
    H[i, i + 1] = H[i + 1, i] = -400.0 * x[:-1]
    p = np.exp(x) / np.sum(np.exp(x))
    return float(value), [H + np.diag(p) - np.outer(p, p)]


def build_higher_hessian(n):
    def build(gc, ag, torch):
        x0 = np.random.default_rng(n).standard_normal(n) * 0.5
        impls: dict[str, Any] = {"numpy": lambda: _rosen_lse_hand(x0)}
        if gc is not None:
            def f(x):
                return (gc.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
                        + gc.log(gc.sum(gc.exp(x))))
            hessian = gc.hessians_function(f)
            impls["gradcli"] = lambda: (float(f(gc.constant(x0))), [hessian(x0)[0][0].numpy()])
        if torch is not None:
            def ft(x):
                return (torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
                        + torch.logsumexp(x, 0))

            def torch_run():
                x = torch.tensor(x0)
                return float(ft(x)), [torch.autograd.functional.hessian(ft, x, vectorize=True)]
            impls["torch"] = torch_run
        return impls, _rosen_lse_hand(x0)
    return build


ROSEN_LSE_PROGRAM = "sum(100*(x[1:]-x[:-1]^2)^2 + (1-x[:-1])^2) + log(sum(exp(x)))"


def build_higher_hessian_command(n):
    """The same Hessian through the hessian command's engine path
    (gradcli.run.derivatives.hessian_fields on the built program: value, gradient and
    Hessian; the verdict's eigenvalues are numpy's, not the engine's), against the same
    torch call."""
    def build(gc, ag, torch):
        impls, reference = build_higher_hessian(n)(None, ag, torch)
        if gc is not None:
            from gradcli.lang import Declarations, build as build_model, parse_program
            from gradcli.run.derivatives import hessian_fields
            decls = Declarations()
            decls.add("arg", "x", np.random.default_rng(n).standard_normal(n) * 0.5)
            model = build_model(parse_program(ROSEN_LSE_PROGRAM), decls)

            def gradcli_run():
                fields, _ = hessian_fields(model)
                return float(fields["value"]), [fields["hessian"]]
            impls["gradcli"] = gradcli_run
        return impls, reference
    return build


def build_higher_jacobian(n_in, n_out):
    def build(gc, ag, torch):
        rng = np.random.default_rng(n_in + n_out)
        W, x0 = rng.standard_normal((n_out, n_in)) / np.sqrt(n_in), rng.standard_normal(n_in)

        def hand():
            t = np.tanh(W @ x0)
            return float(np.sum(t)), [(1.0 - t * t)[:, None] * W]
        impls: dict[str, Any] = {"numpy": hand}
        if gc is not None:
            Wc = gc.constant(W)

            def gradcli_run():
                x = gc.constant(x0)
                with gc.GradientTape() as tape:
                    tape.watch(x)
                    y = gc.tanh(Wc @ x)
                return float(gc.sum(y)), [tape.jacobian(y, x).numpy()]
            impls["gradcli"] = gradcli_run
        if torch is not None:
            Wt = torch.tensor(W)

            def torch_run():
                x = torch.tensor(x0)
                J = torch.autograd.functional.jacobian(lambda z: torch.tanh(Wt @ z), x,
                                                       vectorize=True)
                return float(torch.tanh(Wt @ x).sum()), [J]
            impls["torch"] = torch_run
        return impls, hand()
    return build


HIGHER_PER_EXAMPLE = (10**3, 10**5)  # batch sizes B, examples of d = 50


def build_per_example(batch, d=50):
    """Per-example gradients of (tanh(w . x) - t)^2 at one shared w, the closure
    pattern vectorized_map(lambda (x, t): gradients_function(loss)(w0, x, t)), against
    torch.func.vmap(grad) (in_dims=(None, 0, 0))."""
    def build(gc, ag, torch):
        rng = np.random.default_rng(batch)
        X, t, w0 = rng.standard_normal((batch, d)), rng.standard_normal(batch), \
            rng.standard_normal(d) * 0.1

        def hand():
            th = np.tanh(X @ w0)
            return float(np.sum((th - t) ** 2)), [(2.0 * (th - t) * (1.0 - th * th))[:, None] * X]
        impls: dict[str, Any] = {"numpy": hand}
        if gc is not None:
            def loss(w, x, target):
                return (gc.tanh(gc.sum(w * x)) - target) ** 2
            grad = gc.value_and_gradients_function(loss, params=[0])

            def gradcli_run():
                values, grads = gc.vectorized_map(lambda a: grad(w0, a[0], a[1]), [X, t])
                return float(gc.sum(values)), [grads[0].numpy()]
            impls["gradcli"] = gradcli_run
        if torch is not None:
            from torch.func import grad as tgrad, vmap
            Xt, tt, wt = torch.tensor(X), torch.tensor(t), torch.tensor(w0)

            def tloss(w, x, target):
                return (torch.tanh(torch.sum(w * x)) - target) ** 2
            per_example = vmap(tgrad(tloss), in_dims=(None, 0, 0))

            def torch_run():
                return (float(vmap(tloss, in_dims=(None, 0, 0))(wt, Xt, tt).sum()),
                        [per_example(wt, Xt, tt)])
            impls["torch"] = torch_run
        return impls, hand()
    return build


def higher_cases():
    """(name, builder) of each higher-order case, in the order they are reported."""
    return ([(f"hessian n={n}", build_higher_hessian(n)) for n in HIGHER_HESSIAN_NS]
            + [(f"hessian command n={n}", build_higher_hessian_command(n))
               for n in HIGHER_HESSIAN_NS]
            + [(f"jacobian {i}->{o}", build_higher_jacobian(i, o)) for i, o in HIGHER_JACOBIANS]
            + [(f"per-example B={b:.0e}", build_per_example(b)) for b in HIGHER_PER_EXAMPLE])


def run_higher(libs, repeat, min_batch, results):
    entry: dict[str, Any] = {"cases": {}}
    results["higher"] = entry
    for name, builder in higher_cases():
        run_timed_workload(name, builder, libs, repeat, min_batch, entry["cases"])


# ---------------------------------------------------------------------------------------
# jvp: forward mode through a chain of 1,000 elementwise operations on 10^5 elements
# (issue 25): time against torch.func.jvp, peak memory against hand-written numpy

JVP_N, JVP_STEPS = 10**5, 250  # four operations a step


def jvp_data():
    return np.linspace(-1.0, 1.0, JVP_N), np.cos(np.arange(JVP_N, dtype=float))


def jvp_numpy_hand(x, t):
    """The chain's value (summed) and its tangent, the chain rule written out."""
    for _ in range(JVP_STEPS):
        c = np.cos(x)
        x = np.tanh(np.sin(x) * 1.01 + 0.1)
        t = t * c * 1.01 * (1.0 - x * x)
    return float(np.sum(x)), [t]


def build_jvp(gc, ag, torch):
    x0, t0 = jvp_data()
    impls: dict[str, Any] = {"numpy": lambda: jvp_numpy_hand(x0, t0)}
    if gc is not None:
        def gradcli_run():
            x = gc.constant(x0)
            with gc.ForwardAccumulator(x, t0) as acc:
                y = x
                for _ in range(JVP_STEPS):
                    y = gc.tanh(gc.sin(y) * 1.01 + 0.1)
            return float(gc.sum(y)), [acc.jvp(y).numpy()]
        impls["gradcli"] = gradcli_run
    if torch is not None:
        def chain(y):
            for _ in range(JVP_STEPS):
                y = torch.tanh(torch.sin(y) * 1.01 + 0.1)
            return y

        def torch_run():
            y, t = torch.func.jvp(chain, (torch.tensor(x0),), (torch.tensor(t0),))
            return float(y.sum()), [t.numpy()]
        impls["torch"] = torch_run
    return impls, jvp_numpy_hand(x0, t0)


DEEP_SIZES = (10**4, 10**5)


def deep_gradcli(gc, n_ops: int):
    """A chain of n_ops scalar operations: n_ops/2 steps of x = x*1.0001 + 0.0001."""
    steps = n_ops // 2

    def f(x):
        for _ in range(steps):
            x = x * 1.0001 + 0.0001
        return x

    vg = gc.value_and_gradients_function(f)

    def run():
        value, grads = vg(1.0)
        return value, list(grads)

    grad = 1.0001**steps
    value = 1.0
    for _ in range(steps):
        value = value * 1.0001 + 0.0001
    return run, (value, [grad])


# ---------------------------------------------------------------------------------------
# timing


def timed_batches(fns: dict[str, Callable], repeat: int, min_batch: float) -> dict[str, list[float]]:
    """Median-ready per-call times: interleaved batches, calibrated to last >= min_batch s."""
    number = {}
    for name, fn in fns.items():
        fn()  # warm-up
        t0 = time.perf_counter()
        fn()
        one = time.perf_counter() - t0
        number[name] = max(1, math.ceil(min_batch / max(one, 1e-9)))
        if number[name] > 1:  # a few more warm-up calls for the cheap ones
            for _ in range(min(number[name], 50)):
                fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    _pygc.collect()
    for r in range(repeat):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            fn, k = fns[name], number[name]
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            samples[name].append((time.perf_counter() - t0) / k)
    return samples


def fmt_time(t: float | None) -> str:
    if t is None:
        return "n/a"
    if t < 1e-6:
        return f"{t * 1e9:.0f} ns"
    if t < 1e-3:
        return f"{t * 1e6:.1f} µs"
    if t < 1.0:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "n/a"
    if r >= 100:
        return f"{r:.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.3f}x"  # three decimals: 0.504x must not read as a passing 0.50x


def fmt_bytes(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f} MiB"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def paired(entry: dict, a: str, b: str) -> float | None:
    """Ratio a/b as the median of per-round ratios: round r times every implementation once,
    back to back, so each pair of samples saw the same state of the machine (on this shared
    machine its speed changes by up to 2x over seconds). Falls back to the ratio of medians.
    """
    sa, sb = entry.get("samples", {}).get(a), entry.get("samples", {}).get(b)
    if sa and sb and len(sa) == len(sb):
        return statistics.median(x / y for x, y in zip(sa, sb) if y > 0)
    return ratio(entry.get("median", {}).get(a), entry.get("median", {}).get(b))


# ---------------------------------------------------------------------------------------
# how busy the machine was: other processes' CPU while a workload ran (Linux /proc/stat)


class OtherLoad:
    """Average number of cores used by other processes between start() and stop().

    Other sessions running tests on this 2-core machine distort timings badly (numpy's
    multi-threaded BLAS in ``mlp`` slows down ~8x when a core is taken), so each workload
    reports it and the table warns when it is above ``BUSY``."""

    BUSY = 0.15  # cores

    def __init__(self):
        self._t0 = self._busy0 = self._own0 = None

    @staticmethod
    def _busy_seconds():
        try:
            with open("/proc/stat") as fh:
                fields = [int(v) for v in fh.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own_seconds():
        import resource

        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            r = resource.getrusage(who)
            total += r.ru_utime + r.ru_stime
        return total

    def start(self):
        self._t0, self._busy0, self._own0 = time.perf_counter(), self._busy_seconds(), self._own_seconds()
        return self

    def stop(self) -> float | None:
        busy = self._busy_seconds()
        if busy is None or self._busy0 is None:
            return None
        wall = time.perf_counter() - self._t0
        other = (busy - self._busy0) - (self._own_seconds() - self._own0)
        return max(0.0, other / wall) if wall > 0 else None


# ---------------------------------------------------------------------------------------
# runners


def run_timed_workload(name, builder, libs, repeat, min_batch, results):
    gc, ag, torch = libs
    entry: dict[str, Any] = {"median": {}, "samples": {}, "check": {}, "notes": {}}
    results[name] = entry
    try:
        impls, reference = builder(gc, ag, torch)
    except Exception as exc:  # noqa: BLE001 - most likely gradcli's part: retry without it
        gc_error = f"error: {type(exc).__name__}: {exc}"
        traceback.print_exc()
        try:
            impls, reference = builder(None, ag, torch)
        except Exception as exc2:  # noqa: BLE001
            entry["error"] = f"{type(exc2).__name__}: {exc2}"
            return
        entry["check"]["gradcli"] = gc_error
    runnable = {}
    for impl, fn in impls.items():
        try:
            status = same(fn(), reference)
        except RecursionError:
            status = "RecursionError"
        except Exception as exc:  # noqa: BLE001
            status = f"error: {type(exc).__name__}: {exc}"
        entry["check"][impl] = status
        if status == "ok" or status.startswith("MISMATCH"):
            runnable[impl] = fn  # a mismatch is still timed, and flagged in the table
    samples = timed_batches(runnable, repeat, min_batch)
    for impl, ts in samples.items():
        entry["samples"][impl] = ts
        entry["median"][impl] = statistics.median(ts)


DEEP_CHILD_FLAG = "--_deep-child"


def deep_child(repeat: int) -> None:
    """In a fresh process that imports only numpy and gradcli: time both chain lengths.

    A fresh process because Python's cyclic garbage collector makes the cost of a 10^5-node
    graph depend on how many objects the process already holds: with torch and autograd
    imported (~170k tracked objects instead of ~25k) the 10^5 chain was measured ~1.6x
    slower and the 10^4 chain not at all, so the ratio would depend on which peers happen
    to be installed."""
    gc, err = _import_gradcli()
    out: dict[str, Any] = {"median": {}, "samples": {}, "check": {}}
    if gc is None:
        out["error"] = err
        print(json.dumps(out))
        return
    fns = {}
    for n in DEEP_SIZES:
        key = f"gradcli_{n}"
        try:
            fn, reference = deep_gradcli(gc, n)
            out["check"][key] = same(fn(), reference, rtol=1e-8)
            fns[key] = fn
        except RecursionError:
            out["check"][key] = "RecursionError"
        except Exception as exc:  # noqa: BLE001
            out["check"][key] = f"error: {type(exc).__name__}: {exc}"
    samples: dict[str, list[float]] = {key: [] for key in fns}
    for _ in range(repeat):  # the sizes alternate, so that the ratio is paired per round
        for key, fn in fns.items():
            _pygc.collect()
            t0 = time.perf_counter()
            fn()
            samples[key].append(time.perf_counter() - t0)
    for key, ts in samples.items():
        out["samples"][key] = ts
        out["median"][key] = statistics.median(ts)
    print(json.dumps(out))


def run_deep(libs, repeat, results):
    if libs[0] is None:
        results["deep"] = {"median": {}, "samples": {}, "check": {},
                           "error": "gradcli not importable"}
        return
    try:
        proc = subprocess.run([sys.executable, __file__, DEEP_CHILD_FLAG, str(repeat)],
                              capture_output=True, text=True, timeout=600, cwd=ROOT)
        results["deep"] = json.loads(proc.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001
        results["deep"] = {"median": {}, "samples": {}, "check": {},
                           "error": f"child process failed: {type(exc).__name__}: {exc}"}


def gradcli_command() -> tuple[list[str], str] | None:
    """The console script of this Python (not a pyenv shim, which adds its own start-up),
    else any on PATH, else None."""
    here = Path(sys.executable).with_name("gradcli")
    for exe in (str(here) if here.is_file() else None, shutil.which("gradcli")):
        if exe and "shims" not in Path(exe).parts:
            return [exe], exe
    return None


SEED_ARGS = ["value-grad", "w1*x1 + w2*x2", "--var", "w1=2", "--var", "w2=3",
             "--arg", "x1=5", "--arg", "x2=7"]
CLI_LABELS = {"import numpy": "python -c 'import numpy'",
              "json": "gradcli value-grad <seed> --json",
              "json -m": "python -m gradcli value-grad <seed> --json",
              "rich": "gradcli value-grad <seed>  (to a pipe)",
              "rich -m": "python -m gradcli value-grad <seed>  (to a pipe)",
              "tty": "gradcli value-grad <seed>  (to a terminal)",
              "tty -m": "python -m gradcli value-grad <seed>  (to a terminal)"}
# Whole processes against python -c 'import numpy' (issue 14): the median of per-round
# ratios, for the console script and for python -m gradcli alike. The default output is
# timed twice: to a pipe (a script's capture: the seed's scalar results are printed
# without rich, byte for byte as rich prints them) and to a terminal (a pseudo-terminal:
# what a user at a prompt runs, with rich and its styles).
CLI_LIMITS = {"json": 1.4, "json -m": 1.4, "rich": 1.6, "rich -m": 1.6, "tty": 1.6,
              "tty -m": 1.6}


try:
    import pty as _pty  # (Unix: the terminal rows of the cli line)
except ImportError:
    _pty = None


def _read_terminal(leader: int) -> str:
    """What a process wrote to the pseudo-terminal ``leader``, once it has ended."""
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO on Linux: nothing left, the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def run_cli(runs, results):
    entry: dict[str, Any] = {"median": {}, "samples": {}, "check": {}}
    results["cli"] = entry
    script = gradcli_command()
    entry["command"] = script[1] if script else "n/a (no console script found)"
    env = dict(os.environ)
    # As on a user's machine, modules are loaded from .pyc files: with this variable set
    # gradcli (installed editable, no .pyc yet) would be compiled from source on every run
    # while numpy's .pyc came with its wheel. The warm-up run writes gradcli/__pycache__.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # Both ways a user starts it: the console script and python -m gradcli (which also
    # imports runpy and finds the package before running it). Every round runs them all
    # back to back, in rotating order, so each ratio to numpy is taken per round.
    module = [sys.executable, "-m", "gradcli"]
    cmds = {"import numpy": [sys.executable, "-c", "import numpy"]}
    for suffix, base in (("", script[0] if script else None), (" -m", module)):
        if base is not None:
            cmds["json" + suffix] = base + SEED_ARGS + ["--json"]
            cmds["rich" + suffix] = base + SEED_ARGS
            if _pty is not None:
                cmds["tty" + suffix] = base + SEED_ARGS
    terminal = {key for key in cmds if key.startswith("tty")}
    # rich's own switches (styles to a pipe, or none to a terminal) would blur the two
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "TERM"):
        env.pop(name, None)

    def once(cmd, on_terminal=False):
        if not on_terminal:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env,
                                  stdin=subprocess.DEVNULL, timeout=120)
            return time.perf_counter() - t0, proc
        # Standard output and error a pseudo-terminal of 80 columns; the seed's output
        # (under 2 KiB) fits its buffer, so it is read once the process has ended.
        leader, follower = _pty.openpty()
        try:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, stdout=follower, stderr=follower, cwd=ROOT,
                                  env=dict(env, TERM="xterm-256color", COLUMNS="80"),
                                  stdin=subprocess.DEVNULL, timeout=120)
            elapsed = time.perf_counter() - t0
            os.close(follower)
            follower = None
            proc.stdout = _read_terminal(leader)
            proc.stderr = proc.stdout
        finally:
            if follower is not None:
                os.close(follower)
            os.close(leader)
        return elapsed, proc

    ok = {}
    for key, cmd in cmds.items():  # also the warm-up (disk cache, .pyc files)
        try:
            _, proc = once(cmd, key in terminal)
        except Exception as exc:  # noqa: BLE001
            entry["check"][key] = f"n/a ({type(exc).__name__}: {exc})"
            continue
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["?"])[-1]
            entry["check"][key] = f"n/a (exit {proc.returncode}: {last[:120]})"
            continue
        status = "ok"
        if key.startswith("json"):
            try:
                data = json.loads(proc.stdout)
                got = [data["value"]] + [g["gradient"] for g in data["gradients"]]
                if not np.allclose(got, [31.0, 5.0, 7.0]):
                    status = f"MISMATCH {got}"
            except Exception as exc:  # noqa: BLE001
                status = f"MISMATCH (bad JSON: {type(exc).__name__}: {exc})"
        elif key.startswith(("rich", "tty")) and "31" not in proc.stdout:
            status = "MISMATCH (31 not in output)"
        elif key in terminal and "\x1b[" not in proc.stdout:
            status = "MISMATCH (no terminal styles: rich did not see a terminal)"
        entry["check"][key] = status
        ok[key] = cmd
    samples: dict[str, list[float]] = {k: [] for k in ok}
    names = list(ok)
    for r in range(runs):
        order = names[r % len(names):] + names[: r % len(names)] if names else []
        for key in order:
            if key not in ok:
                continue
            try:
                t, proc = once(ok[key], key in terminal)
            except Exception as exc:  # noqa: BLE001 - e.g. the script was reinstalled meanwhile
                proc, t = None, f"{type(exc).__name__}: {exc}"
            if proc is None or proc.returncode != 0:
                why = t if proc is None else f"exit {proc.returncode}"
                entry["check"][key] = f"n/a (failed during the timed runs: {why})"
                del ok[key]
                samples.pop(key)
                continue
            samples[key].append(t)
    for key, ts in samples.items():
        entry["samples"][key] = ts
        entry["median"][key] = statistics.median(ts)


# ---------------------------------------------------------------------------------------
# batch (issue 12): gradcli value-grad --at, many points in one process
BATCH_N = 10**6
BATCH_BIG_N = 10**7
BATCH_PROGRAM = "(1 - p[0])^2 + 100*(p[1] - p[0]^2)^2"
# The hand-vectorised numpy the CLI is held against: the same file read, the same maths
# and the same CSV text (row, the point's columns, value, gradient), written the fastest
# way numpy offers (tolist and one %-formatting per chunk, as gradcli does).
BATCH_NUMPY = """
import sys
import numpy as np
p = np.load(sys.argv[1], mmap_mode="r")
with open(sys.argv[2], "w") as out:
    out.write('row,"p[0]","p[1]",value,"d_p[0]","d_p[1]"\\n')
    for start in range(0, len(p), 65536):
        x, y = np.asarray(p[start:start + 65536], dtype=np.float64).T
        r = y - x * x
        value = (1 - x) ** 2 + 100 * r * r
        table = np.column_stack([np.arange(start, start + len(x), dtype=np.float64), x, y,
                                 value, -2 * (1 - x) - 400 * x * r, 200 * r])
        out.write(("%d,%r,%r,%r,%r,%r\\n" * len(x)) % tuple(table.ravel().tolist()))
"""
# The same with binary output: np.load, the same maths, np.savez of the arrays --output
# out.npz holds (row, p, value, d_p, error, error_message), the whole input at once.
BATCH_NUMPY_NPZ = """
import sys
import numpy as np
p = np.load(sys.argv[1])
x, y = p[:, 0], p[:, 1]
r = y - x * x
np.savez(sys.argv[2], row=np.arange(len(p)), p=p, value=(1 - x) ** 2 + 100 * r * r,
         d_p=np.stack([-2 * (1 - x) - 400 * x * r, 200 * r], axis=1),
         error=np.zeros(len(p), dtype=bool), error_message=np.array([], dtype="<U1"))
"""


def _batch_cli(args: list, cwd, timeout: float) -> tuple[float | None, int | None, str]:
    """One ``gradcli`` process: (seconds, peak RSS in bytes (wait4), error or "ok")."""
    script = gradcli_command()
    base = script[0] if script else [sys.executable, "-m", "gradcli"]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return _timed_process(base + args, cwd, timeout, env)


# The command runs under a small launcher, which reports its peak RSS: measured from this
# process, a forked child's peak would start at this (large) process's size.
BATCH_LAUNCHER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))
sys.exit(code)
"""


def _gradcli_base() -> list:
    script = gradcli_command()
    return script[0] if script else [sys.executable, "-m", "gradcli"]


def _timed_process(cmd: list, cwd, timeout: float, env=None):
    import tempfile
    report = tempfile.NamedTemporaryFile(suffix=".rss", delete=False)
    report.close()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", BATCH_LAUNCHER, report.name] + cmd, cwd=cwd,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    deadline = t0 + timeout
    try:
        _, err = proc.communicate(timeout=max(deadline - time.perf_counter(), 1))
    except subprocess.TimeoutExpired:
        proc.kill()  # (the launcher; its child ends with the pipe)
        proc.communicate()
        return None, None, f"n/a (over {timeout:.0f} s)"
    elapsed = time.perf_counter() - t0
    err = err.decode(errors="replace").strip()
    try:
        rss = int(Path(report.name).read_text() or 0) or None
    except (OSError, ValueError):
        rss = None
    finally:
        Path(report.name).unlink(missing_ok=True)
    if proc.returncode != 0:
        return None, None, (f"n/a (exit {proc.returncode}: "
                            f"{(err.splitlines() or ['?'])[-1][:120]})")
    return elapsed, rss, "ok" if "loop fallback" not in err else \
        "ok (loop fallback: the engine does not batch the mode yet)"


def run_batch(results, quick: bool) -> None:
    """``value-grad --at``: 10^6 Rosenbrock gradients from a .npy through the CLI, written
    as .npz and (text output) as CSV, against hand-vectorised numpy (whole processes, same
    I/O) and against a per-point loop of the library in one process (timed on 2,000
    points, scaled; with np.load and np.savez for the .npz row); peak RSS of 10^7 rows
    streamed; a 10^6-row CSV (rows/s of the whole command and of the reader alone)."""
    import tempfile

    # 10^6 points in --quick too: at 10^5 the processes' start-up (~0.15 s) is most of
    # --at's time, and the loop target (>= 50x) would measure start-up, not batching.
    n = BATCH_N
    big = BATCH_BIG_N // 10 if quick else BATCH_BIG_N
    entry: dict[str, Any] = {"median": {}, "samples": {}, "check": {}, "n": n, "big_n": big}
    results["batch"] = entry
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        points = rng.uniform(-2, 2, size=(n, 2))
        np.save(tmp / "p.npy", points)
        at = ["value-grad", BATCH_PROGRAM, "--var", "p", "--at"]
        runs = 1 if quick else 3
        for key, cmd, env in (
                ("cli", at + [f"@{tmp / 'p.npy'}", "--csv", "--output", str(tmp / "g.csv")],
                 None),
                ("numpy", [sys.executable, "-c", BATCH_NUMPY, str(tmp / "p.npy"),
                           str(tmp / "h.csv")], "numpy"),
                ("cli_npz", at + [f"@{tmp / 'p.npy'}", "--output", str(tmp / "g.npz")], None),
                ("numpy_npz", [sys.executable, "-c", BATCH_NUMPY_NPZ, str(tmp / "p.npy"),
                               str(tmp / "h.npz")], "numpy")):
            times = []
            for _ in range(runs):
                if env is None:
                    t, _, status = _batch_cli(cmd, tmp, timeout=900)
                else:
                    t, _, status = _timed_process(cmd, tmp, timeout=900)
                entry["check"][key] = status
                if t is None:
                    break
                times.append(t)
            if times:
                entry["samples"][key] = times
                entry["median"][key] = statistics.median(times)
        if "cli" in entry["median"] and "numpy" in entry["median"]:
            ours = np.loadtxt(tmp / "g.csv", delimiter=",", skiprows=1)
            hand = np.loadtxt(tmp / "h.csv", delimiter=",", skiprows=1)
            if ours.shape != hand.shape or not np.allclose(ours, hand, rtol=1e-12, atol=1e-12):
                entry["check"]["cli"] = "MISMATCH (the CSV differs from numpy's)"
        if "cli_npz" in entry["median"] and "numpy_npz" in entry["median"]:
            with np.load(tmp / "g.npz") as ours, np.load(tmp / "h.npz") as hand:
                if sorted(ours.files) != sorted(hand.files) or not all(
                        ours[k].shape == hand[k].shape and np.allclose(
                            ours[k], hand[k], rtol=1e-12, atol=1e-12) for k in hand.files
                        if hand[k].dtype.kind != "U"):
                    entry["check"]["cli_npz"] = "MISMATCH (the .npz differs from numpy's)"
        # A per-point loop in one process with the library (the way without --at).
        gc, _ = _import_gradcli()
        if gc is not None:
            sample = points[:2000]
            x = gc.Variable(0.0)
            y = gc.Variable(0.0)
            fn = gc.implicit_value_and_gradients(
                lambda: (1 - x) ** 2 + 100 * (y - x ** 2) ** 2)
            t0 = time.perf_counter()
            for a, b in sample.tolist():
                x.assign(a)
                y.assign(b)
                fn()
            entry["median"]["loop"] = (time.perf_counter() - t0) / len(sample) * n
            entry["check"]["loop"] = f"ok (timed on {len(sample)} points, scaled to {n})"
            # The same loop with binary I/O: np.load of the input and np.savez of its
            # results (as --output .npz holds them), timed at full size, plus the loop.
            t0 = time.perf_counter()
            loaded = np.load(tmp / "p.npy")
            grads = np.empty_like(loaded)
            values = np.empty(len(loaded))
            np.savez(tmp / "loop.npz", row=np.arange(n), p=loaded, value=values, d_p=grads,
                     error=np.zeros(n, dtype=bool), error_message=np.array([], dtype="<U1"))
            entry["median"]["loop_npz"] = entry["median"]["loop"] + time.perf_counter() - t0
            entry["check"]["loop_npz"] = (f"ok (loop timed on {len(sample)} points, scaled; "
                                          "np.load and np.savez at full size)")
        # The computation alone, in process and without text (each chunk one
        # vectorized_map call, as --at makes it): what the batching transform gives.
        if gc is not None:
            from gradcli.lang import Declarations, build, parse_program
            from gradcli.run.many import Evaluator, per_point
            from gradcli.run.modes import ModeOptions
            from gradcli.io.points import Slot, open_source
            model = build(parse_program(BATCH_PROGRAM), Declarations.from_options(var=["p"]))
            evaluate = Evaluator(model, per_point("run.modes.run_mode", {
                "mode": "value-grad", "options": ModeOptions()}))
            t0 = time.perf_counter()
            for item in open_source(f"@{tmp / 'p.npy'}", {"p": Slot("var", None)}).items():
                evaluate(item.values)
            entry["median"]["compute"] = time.perf_counter() - t0
            entry["check"]["compute"] = "ok" if not evaluate.fell_back else \
                "ok (loop fallback: the engine does not batch the mode yet)"
        # 10^7 rows streamed: peak resident memory of the whole process.
        np.save(tmp / "big.npy", rng.uniform(-2, 2, size=(big, 2)))  # (freed at once)
        t, rss, status = _batch_cli(at + [f"@{tmp / 'big.npy'}", "--csv", "--output",
                                          os.devnull], tmp, timeout=3600)
        entry["check"]["stream"] = status
        if rss is not None:
            entry["peak_rss"] = rss
            entry["median"]["stream"] = t
        (tmp / "big.npy").unlink()
        # A CSV input of 10^6 rows: the whole command, and the reader alone.
        with open(tmp / "p.csv", "w") as f:
            f.write("x,y\n")
            f.write(("%r,%r\n" * n) % tuple(points.ravel().tolist()))
        t, _, status = _batch_cli(["value-grad", "(1 - x)^2 + 100*(y - x^2)^2", "--var", "x",
                                   "--var", "y", "--at", f"@{tmp / 'p.csv'}", "--csv",
                                   "--output", os.devnull], tmp, timeout=900)
        entry["check"]["csv"] = status
        if t is not None:
            entry["median"]["csv"] = t
        if gc is not None:
            from gradcli.io.points import Slot, open_source
            t0 = time.perf_counter()
            source = open_source(f"@{tmp / 'p.csv'}", {"x": Slot("var", None),
                                                      "y": Slot("var", None)})
            rows = sum(item.n for item in source.items())
            entry["median"]["csv_reader"] = time.perf_counter() - t0
            entry["check"]["csv_reader"] = "ok" if rows == n else f"MISMATCH ({rows} rows)"


MEMORY_CHILD_FLAG = "--_memory-child"


def memory_child(impl: str, work: str = "big") -> None:
    """In a fresh process: peak traced memory of the second call of `big` (or `jvp`) for
    one impl."""
    import tracemalloc

    gc = ag = torch = None
    if impl == "gradcli":
        gc, err = _import_gradcli()
        if gc is None:
            print(json.dumps({"error": err}))
            return
    if impl == "autograd":
        ag, _ = _import_autograd()
    if work == "jvp":
        fn = build_jvp(gc, None, None)[0][impl]
    else:
        fn = build_big_impls(gc, ag, torch, big_input(), which=(impl,))[impl]
    result = fn()  # first call: lazy imports, caches
    del result
    _pygc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    result = fn()  # held while measuring: "still held after the call"
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    print(json.dumps({"peak": peak - before, "retained": current - before}))


# gradcli diff and its kin, whole processes (start-up, sympy's import and its worker
# included): the targets are under 2 s each on this machine.
FORMULA_COMMANDS = {
    "diff of a 10-term program": [
        "diff", "x^3 - 3*x*y + sin(x)*cos(y) + exp(-x^2) + log(1 + y^2) + tanh(x*y) "
        "+ sqrt(1 + x^2*y^2) + x^4/(1 + y^2) + atan(x - y) + cosh(y)/3"],
    "critical of Himmelblau in [-5, 5]^2": [
        "critical", "(x^2 + y - 11)^2 + (x + y^2 - 7)^2", "--arg", "x=-5:5", "--arg",
        "y=-5:5"],
}


def run_formulas(results, runs: int) -> None:
    """The median seconds of each FORMULA_COMMANDS process over ``runs`` runs."""
    entry: dict[str, Any] = {"median": {}, "samples": {}, "check": {}}
    results["formulas"] = entry
    for label, args in FORMULA_COMMANDS.items():
        samples = []
        for _ in range(runs):
            seconds, _, status = _batch_cli(args, ROOT, 120.0)
            if seconds is None:
                entry["check"][label] = status
                break
            samples.append(seconds)
        entry["samples"][label] = samples
        entry["median"][label] = statistics.median(samples) if samples else None


# ---------------------------------------------------------------------------------------
# inside (issue 23): what --explain, and the kink notes of every plain run, cost
INSIDE_LINES = 500  # two operations a line: a 1,000-operation program
INSIDE_LIMITS = {"explain": 1.20, "plain": 1.02}


def inside_program(lines: int = INSIDE_LINES) -> str:
    """A chain of ``lines`` assignments of two operations (sin, a product by a variable)."""
    steps = ["a0 = x*w"] + [f"a{i} = sin(a{i - 1}) * w" for i in range(1, lines)]
    return "\n".join(steps + [f"a{lines - 1} + x"])


def run_inside(results, runs: int) -> None:
    """In process, what a command-line run of a 1,000-operation program costs, on scalars
    and on arrays of 1,000: ``engine`` (value-grad with no observer: the engine alone),
    ``plain`` (the command's path without flags: run/kinks.watching decides there is
    nothing to watch) and ``explain`` (--explain, its text included). Rounds interleave
    the three; the ratios are medians of per-round ratios (``paired``)."""
    from gradcli.cli.common import Settings, observed, prepare
    from gradcli.run.explain import explain_lines
    from gradcli.run.modes import run_mode
    entry: dict[str, Any] = {"median": {}, "samples": {}, "check": {}}
    results["inside"] = entry
    program = inside_program()
    for label, x in (("scalars", "0.5"), ("arrays of 1,000", "linspace(0, 1, 1000)")):
        def settings(**flags):
            return Settings(program=program, var=["w=0.9"], frozen=[], arg=[f"x={x}"],
                            dtype="float64", target=None, json_out=False, plain=True, **flags)
        model = prepare(settings())

        def explained():
            outcome, explanation = observed(settings(explain=True), model,
                                            lambda: run_mode("value-grad", model))
            explain_lines(explanation)
            return outcome
        variants = {"engine": lambda: run_mode("value-grad", model),
                    "plain": lambda: observed(settings(), model,
                                              lambda: run_mode("value-grad", model))[0],
                    "explain": explained}
        grads = {k: float(np.sum(f().gradients[0].gradient)) for k, f in variants.items()}
        entry["check"][label] = ("ok" if len(set(grads.values())) == 1
                                 else f"MISMATCH {grads}")
        samples: dict[str, list] = {k: [] for k in variants}
        names = list(variants)
        for r in range(runs):
            for key in names[r % 3:] + names[:r % 3]:
                t0 = time.perf_counter()
                variants[key]()
                samples[key].append(time.perf_counter() - t0)
        for key, ts in samples.items():
            entry["samples"][f"{key} {label}"] = ts
            entry["median"][f"{key} {label}"] = statistics.median(ts)


def run_memory(results, impls=("numpy", "gradcli", "autograd"), work="big"):
    entry: dict[str, Any] = {"peak": {}, "retained": {}, "input_bytes": BIG_N * 8, "errors": {}}
    results[f"{work}_memory"] = entry
    for impl in impls:
        if impl == "autograd" and _import_autograd()[0] is None:
            continue
        try:
            proc = subprocess.run([sys.executable, __file__, MEMORY_CHILD_FLAG, impl, work],
                                  capture_output=True, text=True, timeout=300, cwd=ROOT)
            data = json.loads(proc.stdout.strip().splitlines()[-1])
        except Exception as exc:  # noqa: BLE001
            entry["errors"][impl] = f"{type(exc).__name__}: {exc}"
            continue
        if "error" in data:
            entry["errors"][impl] = data["error"]
            continue
        entry["peak"][impl] = data["peak"]
        entry["retained"][impl] = data["retained"]


# ---------------------------------------------------------------------------------------
# report

# issue 5's figures, used only when a peer is not installed
QUOTED = {"torch_weighted": 44e-6, "autograd_weighted": 77e-6, "torch_chain": 18.7e-3}


def targets(results) -> list[tuple[str, str, str, str]]:
    """(target, measured, limit, PASS/FAIL/n/a) rows."""
    rows = []

    def med(work, impl):
        return results.get(work, {}).get("median", {}).get(impl)

    def verdict(value, limit):
        if value is None:
            return "n/a"
        return "PASS" if value <= limit else "FAIL"

    if "weighted" in results:
        g = med("weighted", "gradcli")
        for peer in ("torch", "autograd"):
            p = med("weighted", peer)
            if p is None:
                p = QUOTED[f"{peer}_weighted"]
                r = ratio(g, p)
                label = f"weighted: gradcli / {peer} (issue 5's {fmt_time(p)})"
            else:
                r = paired(results["weighted"], "gradcli", peer)
                label = f"weighted: gradcli / {peer} ({fmt_time(g)} vs {fmt_time(p)})"
            rows.append((label, fmt_ratio(r), "< 1x", "n/a" if r is None else ("PASS" if r < 1 else "FAIL")))
        rows.append(("weighted: aim (not a pass/fail bar)", fmt_time(g), "~20 µs",
                     "n/a" if g is None else ("met" if g <= 20e-6 else "not yet")))
    if "chain" in results:
        label = "chain: gradcli / torch"
        r = paired(results["chain"], "gradcli", "torch")
        if med("chain", "torch") is None:
            label = "chain: gradcli / torch (issue 5's 18.7 ms)"
            r = ratio(med("chain", "gradcli"), QUOTED["torch_chain"])
        rows.append((label, fmt_ratio(r), "<= 0.5x", verdict(r, 0.5)))
    for work in ("big", "mlp"):
        if work in results:
            r = paired(results[work], "gradcli", "numpy")
            rows.append((f"{work}: gradcli / numpy", fmt_ratio(r), "<= 1.15x", verdict(r, 1.15)))
    if "big_memory" in results:
        peaks = results["big_memory"]["peak"]
        r = ratio(peaks.get("gradcli"), peaks.get("numpy"))
        rows.append(("big peak memory: gradcli / numpy", "n/a" if r is None else f"{r:.4f}x",
                     "<= 2x", verdict(r, 2.0)))
    for name, case in results.get("higher", {}).get("cases", {}).items():
        r = paired(case, "gradcli", "torch")
        peer = ("vmap(grad)" if name.startswith("per-example") else
                f"{name.split()[0]}(vectorize=True)")
        if name.startswith("hessian command"):
            name = name.replace("hessian command", "hessian (command's engine path)")
        rows.append((f"{name}: gradcli / torch {peer}", fmt_ratio(r), "<= 1x",
                     verdict(r, 1.0)))
    if "jvp" in results:
        r = paired(results["jvp"], "gradcli", "torch")
        rows.append(("jvp: 1,000-op chain on 10^5, gradcli / torch.func.jvp", fmt_ratio(r),
                     "<= 1.5x", verdict(r, 1.5)))
    if "jvp_memory" in results:
        peaks = results["jvp_memory"]["peak"]
        r = ratio(peaks.get("gradcli"), peaks.get("numpy"))
        rows.append(("jvp peak memory: gradcli / numpy", "n/a" if r is None else f"{r:.4f}x",
                     "<= 2x", verdict(r, 2.0)))
    if "deep" in results:
        d = results["deep"]
        big_key = f"gradcli_{DEEP_SIZES[1]}"
        ok = d.get("check", {}).get(big_key) == "ok"
        rows.append(("deep: 10^5 ops run (no RecursionError)",
                     d.get("check", {}).get(big_key, "n/a"), "ok",
                     "PASS" if ok else ("n/a" if "error" in d else "FAIL")))
        r = paired(d, big_key, f"gradcli_{DEEP_SIZES[0]}")
        rows.append(("deep: time(10^5) / time(10^4)", fmt_ratio(r), "<= 12x", verdict(r, 12.0)))
    if "scale" in results:   # (benchmarks/scale.py)
        from benchmarks.scale import rows_of_report
        rows += rows_of_report(results["scale"], fmt_ratio, verdict)
    if "batch" in results:
        b = results["batch"]
        r = ratio(b["median"].get("cli_npz"), b["median"].get("numpy_npz"))
        rows.append((f"batch: --at {b['n']:.0e} points .npy -> .npz / hand numpy (np.load, "
                     "np.savez)", fmt_ratio(r), "<= 3x", verdict(r, 3.0)))
        r = ratio(b["median"].get("loop_npz"), b["median"].get("cli_npz"))
        rows.append((f"batch: per-point library loop / --at, .npy -> .npz ({b['n']:.0e} "
                     "points)", fmt_ratio(r), ">= 50x", "n/a" if r is None else
                     ("PASS" if r >= 50 else "FAIL")))
        r = ratio(b["median"].get("cli"), b["median"].get("numpy"))
        rows.append((f"batch, text output: --at {b['n']:.0e} points .npy -> CSV / hand numpy",
                     fmt_ratio(r), "<= 3x", verdict(r, 3.0)))
        r = ratio(b["median"].get("loop"), b["median"].get("cli"))
        # (information: the >= 50x target is the .npz row's; text costs ~0.45 µs a number)
        rows.append(("batch, text output: per-point library loop / --at, .npy -> CSV",
                     fmt_ratio(r), "none", "info"))
        r = ratio(b["median"].get("loop"), b["median"].get("compute"))
        rows.append(("batch: the same, computation only (in process, no I/O)", fmt_ratio(r),
                     ">= 50x", "n/a" if r is None else ("PASS" if r >= 50 else "FAIL")))
        rss = b.get("peak_rss")
        rows.append((f"batch: peak RSS, {b['big_n']:.0e} rows streamed",
                     "n/a" if rss is None else fmt_bytes(rss), "<= 300 MB",
                     verdict(None if rss is None else rss / 2**20, 300)))
    if "formulas" in results:
        for label, seconds in results["formulas"]["median"].items():
            rows.append((f"formulas: gradcli {label} (whole process)",
                         results["formulas"]["check"].get(label) or fmt_time(seconds),
                         "< 2 s", verdict(seconds, 2.0)))
    if "inside" in results:
        i = results["inside"]
        for label in ("scalars", "arrays of 1,000"):
            bad = i["check"].get(label, "n/a") != "ok"
            for key, base in (("explain", "plain"), ("plain", "engine")):
                r = None if bad else paired(i, f"{key} {label}", f"{base} {label}")
                rows.append((f"inside: {key} / {base} run, 1,000 operations on {label}",
                             i["check"].get(label) if bad else fmt_ratio(r),
                             f"<= {INSIDE_LIMITS[key]}x", verdict(r, INSIDE_LIMITS[key])))
    if "cli" in results:
        base = med("cli", "import numpy")
        for key, limit in CLI_LIMITS.items():
            r = paired(results["cli"], key, "import numpy") if base is not None else None
            rows.append((f"cli: {CLI_LABELS[key]} / import numpy", fmt_ratio(r),
                         f"<= {limit}x", verdict(r, limit)))
    return rows


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def report(results, meta):
    print()
    print(f"gradcli benchmark — {meta['when']}")
    print(f"python {meta['python']}, numpy {meta['numpy']}, {meta['cpus']} cpus; "
          f"autograd {meta['autograd']}; torch {meta['torch']}")
    print(f"median of {meta['repeat']} interleaved repetitions per cell; numpy threads as is "
          f"(BLAS default); torch float64, 1 thread; gc enabled")
    print()

    rows = []
    for work in ("weighted", "chain", "big", "mlp", "jvp"):
        if work not in results:
            continue
        e = results[work]
        m = e.get("median", {})

        def cell(impl, m=m, e=e):
            if impl in m:
                flag = "" if e["check"].get(impl) == "ok" else " (!)"
                return fmt_time(m[impl]) + flag
            if impl in e.get("check", {}):
                return "error"
            return "n/a"

        rows.append([work] + [cell(i) for i in IMPLS] + [
            fmt_ratio(paired(e, "gradcli", "numpy")),
            fmt_ratio(paired(e, "gradcli", "torch")),
            fmt_ratio(paired(e, "gradcli", "autograd")),
        ])
    if rows:
        print_table(["workload", "numpy (hand)", "gradcli", "autograd", "torch",
                     "gc/numpy", "gc/torch", "gc/autograd"], rows)
        print()
        bad = [(w, i, s) for w in ("weighted", "chain", "big", "mlp", "jvp") if w in results
               for i, s in results[w].get("check", {}).items() if s != "ok"]
        for w, i, s in bad:
            print(f"  (!) {w}/{i}: {s}")
        for w in ("weighted", "chain", "big", "mlp", "jvp"):
            if w in results and results[w].get("error"):
                print(f"  {w}: could not build: {results[w]['error']}")
        if "chain" in results:
            print("  numpy (hand) for chain runs on Python floats (math.sin, math.cos): "
                  "numpy's scalar ufuncs are ~10x slower.")
        if "jvp" in results:
            print("  jvp: value and tangent of 1,000 elementwise operations on 10^5 elements "
                  "(torch: torch.func.jvp).")
        if "jvp_memory" in results:
            peaks = results["jvp_memory"]["peak"]
            print("  jvp peak memory (tracemalloc, 2nd call, fresh process): " + ", ".join(
                f"{impl} {fmt_bytes(peaks[impl])}" for impl in ("numpy", "gradcli")
                if impl in peaks))
        print()

    if "big_memory" in results:
        mem = results["big_memory"]
        print(f"big peak memory (tracemalloc, 2nd call, fresh process; input x itself is "
              f"{fmt_bytes(mem['input_bytes'])}, not counted):")
        for impl in ("numpy", "gradcli", "autograd"):
            if impl in mem["peak"]:
                print(f"  {impl:9s} peak {fmt_bytes(mem['peak'][impl]):>10s}   "
                      f"(still held after the call: {fmt_bytes(mem['retained'][impl])})")
            elif impl in mem["errors"]:
                print(f"  {impl:9s} n/a ({mem['errors'][impl]})")
        print()

    if "deep" in results:
        d = results["deep"]
        print("deep (gradcli in a fresh process, n/2 steps of x = x*1.0001 + 0.0001, "
              "value and d/dx0):")
        if d.get("error"):
            print(f"  n/a: {d['error']}")
        for n in DEEP_SIZES:
            key = f"gradcli_{n}"
            t = d["median"].get(key)
            per = f"  ({t / n * 1e6:.2f} µs/op)" if t else ""
            print(f"  {n:>7d} ops: {fmt_time(t)}{per}   check: {d['check'].get(key, 'n/a')}")
        print()

    if "cli" in results:
        c = results["cli"]
        print(f"cli (one process each, median of {len(c['samples'].get('import numpy', []))} "
              f"interleaved rounds; gradcli = {c.get('command')}; .pyc files allowed):")
        width = max(map(len, CLI_LABELS.values()))
        for key, label in CLI_LABELS.items():
            t = c["median"].get(key)
            status = c["check"].get(key, "n/a")
            print(f"  {label:{width}s} {fmt_time(t):>10s}   {'' if status == 'ok' else status}")
        print()

    busy = {w: e.get("other_load") for w, e in results.items()
            if isinstance(e, dict) and e.get("other_load") is not None}
    if busy:
        loaded = {w: v for w, v in busy.items() if v > OtherLoad.BUSY}
        shown = ", ".join(f"{w} {v:.2f}" for w, v in busy.items())
        print(f"other processes' CPU while measuring (cores): {shown}")
        if loaded:
            print(f"  WARNING: the machine was busy during {', '.join(loaded)}: those timings "
                  f"and ratios are unreliable; run again on an idle machine.")
        print()

    if "higher" in results:
        print("higher (hessians_function, and the hessian command's engine path, of Rosenbrock + "
              "log-sum-exp; tape.jacobian of "
              "tanh(W @ x)), value included:")
        for name, case in results["higher"]["cases"].items():
            m = case.get("median", {})
            cells = "  ".join(f"{impl} {fmt_time(m[impl]) if impl in m else 'n/a'}"
                              + ("" if case.get("check", {}).get(impl) in (None, "ok")
                                 else f" ({case['check'][impl]})")
                              for impl in ("numpy", "gradcli", "torch"))
            print(f"  {name:24s} {cells}")
        print()

    if "hessian" in results:
        e = results["hessian"]
        m = e.get("median", {})
        print(f"hessian of sum(tanh(W @ x)), x of {HESSIAN_N} elements (full {HESSIAN_N}x"
              f"{HESSIAN_N} Hessian, value included):")
        for impl in ("numpy", "gradcli fwd-over-rev", "gradcli rev-over-rev", "torch"):
            check = e.get("check", {}).get(impl)
            shown = fmt_time(m[impl]) if impl in m else ("n/a" if check is None else "error")
            flag = "" if check in (None, "ok") else f"   ({check})"
            print(f"  {impl:22s} {shown:>10s}{flag}")
        print(f"  fwd-over-rev / rev-over-rev: "
              f"{fmt_ratio(paired(e, 'gradcli fwd-over-rev', 'gradcli rev-over-rev'))};  "
              f"fwd-over-rev / torch: {fmt_ratio(paired(e, 'gradcli fwd-over-rev', 'torch'))}")
        print()

    if "scale" in results:
        from benchmarks.scale import print_details
        print_details(results["scale"])
    if "batch" in results:
        b = results["batch"]
        m = b["median"]
        print(f"batch (gradcli value-grad --at, Rosenbrock, {b['n']:,} points; whole "
              f"processes):")
        for key, label in (("cli_npz", "--at @p.npy --output g.npz"),
                           ("numpy_npz", "hand numpy, np.load + np.savez"),
                           ("loop_npz", "per-point library loop, np.load/savez"),
                           ("cli", "text: --at @p.npy --csv --output"),
                           ("numpy", "text: hand numpy, same CSV I/O"),
                           ("loop", "per-point loop of the library"),
                           ("compute", "--at's computation alone (in process)"),
                           ("stream", f"--at {b['big_n']:,} rows, output discarded"),
                           ("csv", "--at @p.csv (CSV input)"),
                           ("csv_reader", "CSV reader alone (in process)")):
            t = m.get(key)
            rate = "" if t is None else \
                f"  {(b['big_n'] if key == 'stream' else b['n']) / t:,.0f} rows/s"
            print(f"  {label:40s} {fmt_time(t):>10s}{rate}   {b['check'].get(key, 'n/a')}")
        if b.get("peak_rss") is not None:
            print(f"  peak RSS of the {b['big_n']:,}-row run: {fmt_bytes(b['peak_rss'])}")
        print()

    rows = targets(results)
    if rows:
        print("Targets (issue 5)")
        print_table(["target", "measured", "limit", "result"], rows)
        print()
    return rows


# ---------------------------------------------------------------------------------------


def profile(name: str, libs, calls: int, top: int) -> None:
    import cProfile
    import pstats

    gc = libs[0]
    if gc is None:
        sys.exit("gradcli is not importable")
    if name == "deep":
        fn, _ = deep_gradcli(gc, DEEP_SIZES[1])
        calls = 1
    else:
        builder = {"weighted": build_weighted, "chain": build_chain, "big": build_big,
                   "mlp": build_mlp}.get(name)
        if builder is None:
            sys.exit(f"--profile: one of weighted, chain, big, mlp, deep (not {name!r})")
        fn = builder(gc, None, None)[0]["gradcli"]
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    print(f"cProfile of gradcli on {name!r}, {calls} call(s)")
    for key in ("tottime", "cumulative"):
        pstats.Stats(prof).strip_dirs().sort_stats(key).print_stats(top)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == MEMORY_CHILD_FLAG:
        memory_child(*sys.argv[2:4])
        return 0
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == DEEP_CHILD_FLAG:
        deep_child(int(sys.argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (< 30 s)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(WORKLOADS)}")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions per cell (median)")
    parser.add_argument("--json", metavar="PATH", help="write all results and samples to PATH")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                        help="before each workload, wait (up to SECONDS in all) for other processes to leave the CPU idle")
    parser.add_argument("--profile", metavar="NAME", help="cProfile gradcli on one workload")
    parser.add_argument("--profile-calls", type=int, default=20)
    parser.add_argument("--scale-rows", type=int, default=10**7, metavar="N",
                        help="scale: rows of the throughput runs (default 10^7)")
    parser.add_argument("--scale-memory-rows", type=int, default=10**8, metavar="N",
                        help="scale: rows of the peak-memory run (default 10^8)")
    args = parser.parse_args(argv)

    asked = [w.strip() for w in args.only.split(",") if w.strip()] or \
        [w for w in WORKLOADS if not (args.quick and w in SLOW_WORKLOADS)]
    unknown = [w for w in asked if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    # always the same order: a workload right after mlp's multi-threaded BLAS calls was
    # measured ~15% slower (BLAS worker threads keep spinning for a while)
    only = [w for w in WORKLOADS if w in asked]

    gc, gc_err = _import_gradcli()
    ag, ag_err = _import_autograd()
    torch, torch_err = _import_torch()
    libs = (gc, ag, torch)
    if args.profile:
        profile(args.profile, libs, args.profile_calls, 30)
        return 0

    repeat = args.repeat or (5 if args.quick else 41)
    min_batch = 0.005 if args.quick else 0.01
    deep_repeat = args.repeat or (2 if args.quick else 9)
    cli_runs = args.repeat or (5 if args.quick else 21)

    import importlib.metadata as md

    def version(dist, err):
        if err:
            return err
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "?"

    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "autograd": version("autograd", ag_err),
        "torch": torch.__version__ if torch is not None else torch_err,
        "gradcli": "ok" if gc is not None else gc_err,
        "repeat": repeat,
        "quick": args.quick,
        "argv": sys.argv[1:],
    }
    if gc is None:
        print(f"gradcli: n/a ({gc_err}); timing the peers only", file=sys.stderr)

    deadline = time.perf_counter() + args.wait_idle

    def wait_idle():
        """Before each workload: wait while other processes keep the CPU busy (until the
        --wait-idle budget is spent)."""
        while time.perf_counter() < deadline:
            probe = OtherLoad().start()
            time.sleep(1.0)
            other = probe.stop()
            if other is None or other <= OtherLoad.BUSY:
                return
            print(f"waiting for an idle machine (other processes use {other:.2f} cores)",
                  file=sys.stderr, flush=True)

    results: dict[str, Any] = {}
    t_start = time.perf_counter()
    builders = {"weighted": build_weighted, "chain": build_chain, "big": build_big, "mlp": build_mlp,
                "hessian": build_hessian, "jvp": build_jvp}
    for work in only:
        _pygc.collect()
        time.sleep(0.2)  # let the previous workload's threads and allocations settle
        wait_idle()
        t0 = time.perf_counter()
        print(f"[{work}] ...", file=sys.stderr, flush=True)
        load = OtherLoad().start()
        if work in builders:
            run_timed_workload(work, builders[work], libs, repeat, min_batch, results)
        elif work == "deep":
            run_deep(libs, deep_repeat, results)
        elif work == "cli":
            run_cli(cli_runs, results)
        elif work == "batch":
            run_batch(results, args.quick)
        elif work == "higher":
            run_higher(libs, repeat, min_batch, results)
        elif work == "formulas":
            run_formulas(results, 3 if args.quick else 5)
        elif work == "inside":
            run_inside(results, 15 if args.quick else 41)
        elif work == "scale":   # (benchmarks/scale.py)
            from benchmarks.scale import run_scale
            run_scale(results, _timed_process, lambda a: _gradcli_base() + a,
                      args.scale_rows, args.scale_memory_rows)
        results[work]["other_load"] = load.stop()
        if work == "big":
            run_memory(results)
        if work == "jvp":
            run_memory(results, ("numpy", "gradcli"), work="jvp")
        print(f"[{work}] {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    meta["seconds"] = round(time.perf_counter() - t_start, 1)

    rows = report(results, meta)
    print(f"total {meta['seconds']} s; command: python benchmarks/run.py {' '.join(sys.argv[1:])}".rstrip())
    if args.json:
        out = {"meta": meta, "results": results,
               "targets": [dict(zip(("target", "measured", "limit", "result"), r)) for r in rows]}
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
