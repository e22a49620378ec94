"""The batching transform over the whole function table (issue 12): every entry has a
batching rule beside its VJP and JVP rules, and ``vectorized_map`` of every table case
equals a Python loop over the examples (the independent truth) — in value, and in the
gradients a tape takes through it. Each case runs with every input batched, and with one
input batched and the others shared by all examples."""
import numpy as np
import pytest
from test_forward_table import CASES, ENTRIES, IDS

import gradcli as gc
from gradcli.engine import ops
from gradcli.engine.batching import RULES
from gradcli.errors import ShapeError

BATCH = 3

# Entries still batched by the generic loop rule (one call per example). The list only
# shrinks: an entry given a vectorised rule leaves it.
LOOP_ALLOWED = {
    'argmax',
    'argmin',
    'array_split',
    'atleast_1d',
    'atleast_2d',
    'atleast_3d',
    'average',
    'cast',
    'cholesky',
    'cross',
    'cumprod',
    'cumsum',
    'det',
    'diag',
    'diagonal',
    'diff',
    'dstack',
    'eigh',
    'einsum',
    'expand_dims',
    'flip',
    'fliplr',
    'flipud',
    'gather',
    'hstack',
    'inner',
    'inv',
    'kron',
    'log_softmax',
    'moveaxis',
    'outer',
    'pad',
    'pinv',
    'ravel',
    'repeat',
    'roll',
    'rot90',
    'slogdet',
    'solve',
    'sort',
    'split',
    'squeeze',
    'svd',
    'swapaxes',
    'take',
    'take_along_axis',
    'tensordot',
    'tile',
    'trace',
    'tril',
    'triu',
    'vstack',
}


def _batching_cases():
    """Cases for the branches of the batching rules the table's cases do not reach."""
    rng = np.random.default_rng(5)
    X = lambda *s: rng.uniform(-1, 1, size=s)  # noqa: E731
    F = gc.FUNCTIONS

    def entry(name, **params):
        return lambda *xs: ops.apply(ops.INTERNAL[name], xs, params)
    pair, rows = np.array([0, 1]), np.array([[0, 2], [1, 1]])
    return [
        ("reshape-minus-one", lambda x: F["reshape"](x, (-1,)), [X(2, 3)]),
        ("reshape-minus-one-inner", lambda x: F["reshape"](x, (3, -1)), [X(2, 3)]),
        ("reshape-int", lambda x: F["reshape"](x, 6), [X(2, 3)]),
        ("reshape-to-scalar", lambda x: F["reshape"](x, ()), [X(1, 1)]),
        ("transpose-vector", F["transpose"], [X(3)]),
        ("transpose-3d", F["transpose"], [X(2, 3, 4)]),
        ("getitem-ellipsis", lambda x: x[..., 1], [X(2, 3)]),
        ("getitem-newaxis", lambda x: x[None, :, 1], [X(2, 3)]),
        ("getitem-ints", lambda x: x[1, 2], [X(2, 3)]),
        ("getitem-negative-step", lambda x: x[::-1, ::-2], [X(3, 4)]),
        ("getitem-int-array-2d", lambda x: x[rows], [X(3, 2)]),
        ("getitem-arrays-adjacent", lambda x: x[:, pair, pair[::-1]], [X(2, 3, 2)]),
        ("getitem-arrays-apart", lambda x: x[pair, :, pair[::-1]], [X(2, 3, 2)]),
        ("getitem-int-and-array-apart", lambda x: x[0, :, rows], [X(2, 3, 3)]),
        ("getitem-array-ellipsis-array", lambda x: x[pair, ..., pair], [X(2, 2, 2)]),
        ("getitem-bool-mask", lambda x: x[np.array([[True, False, True],
                                                     [False, True, True]])], [X(2, 3)]),
        ("getitem-bool-rows", lambda x: x[np.array([True, False, True])], [X(3, 2)]),
        ("getitem-bool-apart", lambda x: x[np.array([True, True]), :, 1], [X(2, 3, 2)]),
        ("getitem-list", lambda x: x[[2, 0, 0]], [X(3)]),
        ("scatter-apart", entry("scatter", index=(pair, slice(None), pair[::-1]),
                                shape=(2, 3, 2)), [X(2, 3)]),
        ("scatter-broadcast", entry("scatter", index=(slice(0, 2),), shape=(4, 3)), [X(3)]),
        ("scatter-int", entry("scatter", index=(1,), shape=(3, 2)), [X(2)]),
        ("matmul-vector-stack", F["matmul"], [X(3), X(2, 3, 4)]),
        ("matmul-stack-vector", F["matmul"], [X(2, 4, 3), X(3)]),
        ("matmul-broadcast-stacks", F["matmul"], [X(2, 2, 3), X(4, 1, 3, 2)]),
        ("dot21", F["dot"], [X(2, 3), X(3)]),
        ("dot12", F["dot"], [X(3), X(3, 2)]),
        ("dot-scalar-right", F["dot"], [X(2, 3), X()]),
        ("concatenate-axis1", lambda a, b: F["concatenate"]([a, b], axis=1),
         [X(2, 3), X(2, 1)]),
        ("concatenate-negative-axis", lambda a, b: F["concatenate"]([a, b], axis=-1),
         [X(3), X(2)]),
        ("stack-last", lambda a, b: F["stack"]([a, b], axis=-1), [X(2, 3), X(2, 3)]),
        ("broadcast_to-unit-axis", entry("broadcast_to", shape=(2, 3)), [X(2, 1)]),
        ("sum_to-unit-axis", entry("sum_to", shape=(2, 1)), [X(2, 3)]),
        ("sum_to-lead-and-unit", entry("sum_to", shape=(1, 3)), [X(4, 2, 3)]),
        ("fill-matrix", entry("fill", shape=(2, 2, 3)), [X(2, 3)]),
        ("linspace_between-mixed", entry("linspace_between", num=3), [X(), X(2)]),
        ("stop_gradient-in-product", lambda x: x * F["stop_gradient"](x), [X(3)]),
        ("full-of-tensor", lambda x: F["full"]((2, 3), x), [X(3)]),
        ("linspace-of-tensors", lambda a, b: F["linspace"](a, b, 4), [X(), X()]),
    ]


BATCHING_CASES = _batching_cases()
ALL_CASES = list(CASES) + BATCHING_CASES
ALL_IDS = list(IDS) + [c[0] for c in BATCHING_CASES]


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


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in ALL_CASES], ids=ALL_IDS)
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


def test_dot_of_examples_above_two_dimensions_is_refused_as_unbatched():
    x = np.ones((2, 2, 2, 2))
    with pytest.raises(ShapeError) as unbatched:
        gc.dot(gc.constant(x[0]), gc.constant(x[0]))
    with pytest.raises(ShapeError) as batched:
        gc.vectorized_map(lambda a: gc.dot(a, a), x)
    assert str(batched.value) == str(unbatched.value)


def test_constructors_take_no_batched_input():
    out = gc.vectorized_map(lambda x: x + gc.zeros((2,)) + gc.eye(2)[0] + gc.arange(2.0),
                            np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(out.numpy(), [[2.0, 3.0], [4.0, 5.0]])
