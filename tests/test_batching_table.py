"""The batching transform over the whole function table (issue 12): every entry has a
batching rule beside its VJP and JVP rules, and ``vectorized_map`` of every table case
equals a Python loop over the examples (the independent truth) — in value, and in the
gradients a tape takes through it. Each case runs with every input batched, and with one
input batched and the others shared by all examples."""
import numpy as np
import pytest
from test_forward_table import CASES, ENTRIES, IDS

import gradcli as gc
from gradcli.engine.batching import RULES

BATCH = 3

# Entries still batched by the generic loop rule (one call per example). The list only
# shrinks: an entry given a vectorised rule leaves it.
LOOP_ALLOWED = {
    'arange',
    'argmax',
    'argmin',
    'array_split',
    'atleast_1d',
    'atleast_2d',
    'atleast_3d',
    'average',
    'broadcast_to',
    'cast',
    'cholesky',
    'concatenate',
    'cross',
    'cumprod',
    'cumsum',
    'det',
    'diag',
    'diagonal',
    'diff',
    'dot',
    'dstack',
    'eigh',
    'einsum',
    'expand_dims',
    'eye',
    'fill',
    'flip',
    'fliplr',
    'flipud',
    'full',
    'gather',
    'getitem',
    'hstack',
    'inner',
    'inv',
    'kron',
    'linspace',
    'linspace_between',
    'log_softmax',
    'matmul',
    'moveaxis',
    'ones',
    'ones_like',
    'outer',
    'pad',
    'pinv',
    'ravel',
    'repeat',
    'reshape',
    'roll',
    'rot90',
    'scatter',
    'slogdet',
    'solve',
    'sort',
    'split',
    'squeeze',
    'stack',
    'stop_gradient',
    'sum_to',
    'svd',
    'swapaxes',
    'take',
    'take_along_axis',
    'tensordot',
    'tile',
    'trace',
    'transpose',
    'tril',
    'triu',
    'vstack',
    'zeros',
    'zeros_like',
}


def test_every_entry_has_a_batching_rule():
    for name, op in ENTRIES.items():
        assert callable(op.batch) or op.batch in RULES, f"{name}: no batching rule"


def test_only_the_listed_entries_batch_by_a_loop():
    looping = {name for name, op in ENTRIES.items() if op.batch == "loop"}
    assert looping <= LOOP_ALLOWED, f"entries without a vectorised rule: {looping - LOOP_ALLOWED}"


def _examples(arg, rng):
    """BATCH examples near ``arg`` (the case's own valid input): scaled by 1 + O(1e-3),
    so signs and domains are kept; integer and boolean inputs (indices) stay as they are."""
    arr = np.asarray(arg)
    if arr.dtype.kind != "f":
        return np.stack([arr] * BATCH)
    return np.stack([arr * (1 + 1e-3 * b * rng.uniform(-1, 1, size=arr.shape))
                     for b in range(BATCH)])


def _variants(args):
    n = len(args)
    yield tuple(range(n))
    if n > 1:
        for i in range(n):
            yield (i,)


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in CASES], ids=IDS)
def test_vectorized_map_equals_a_loop(fn, args):
    rng = np.random.default_rng(12)
    for which in _variants(args):
        batched_args = [_examples(a, rng) if i in which else a for i, a in enumerate(args)]
        looped = []
        for b in range(BATCH):
            xs = [gc.constant(a[b] if i in which else a) for i, a in enumerate(batched_args)]
            looped.append(np.asarray(fn(*xs).numpy()))
        expected = np.stack(looped)
        elems = [gc.constant(batched_args[i]) for i in which]

        def one(example, fn=fn, which=which):
            it = iter(example)
            return fn(*[next(it) if i in which else gc.constant(a)
                        for i, a in enumerate(batched_args)])
        with gc.GradientTape() as tape:
            tape.watch(elems)
            got = gc.vectorized_map(one, elems)
            weights = rng.standard_normal(expected.shape)
            total = gc.sum(got * weights) if expected.dtype.kind == "f" else None
        assert got.shape == expected.shape, (which, got.shape, expected.shape)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f"batched inputs {which}")
        if total is None or not any(np.asarray(a).dtype.kind == "f" for a in args):
            continue
        grads = tape.gradient(total, elems, unconnected_gradients="zero")
        for k, i in enumerate(which):
            if np.asarray(args[i]).dtype.kind != "f":
                continue
            truth = []
            for b in range(BATCH):
                xs = [gc.constant(a[b] if j in which else a)
                      for j, a in enumerate(batched_args)]
                with gc.GradientTape() as t:
                    t.watch(xs)
                    y = gc.sum(fn(*xs) * weights[b])
                g = t.gradient(y, xs[i], unconnected_gradients="zero")
                truth.append(g.numpy())
            np.testing.assert_allclose(grads[k].numpy(), np.stack(truth), rtol=1e-10,
                                       atol=1e-12, err_msg=f"gradient of input {i}, {which}")
