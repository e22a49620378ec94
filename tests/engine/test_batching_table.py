"""The batching transform over the whole function table (issue 12): every entry has a
batching rule beside its VJP and JVP rules, and ``vectorized_map`` of every table case
equals a Python loop over the examples (the independent truth) — in value, and in the
gradients a tape takes through it. Each case runs with every input batched, and with one
input batched and the others shared by all examples."""
import numpy as np
import pytest
from test_forward_table import CASES, IDS

import gradcli as gc
from gradcli.engine import ops
from gradcli.engine.core.batching import RULES
from gradcli.engine.core.table import ORDER, REGISTRY
from gradcli.errors import ShapeError

BATCH = 3

# Every entry: the language's, and the internal ones the rules use (listed apart, since
# some share a name with a public entry: broadcast_to, cast).
ALL_ENTRIES = ([(name, REGISTRY[name]) for name in ORDER]
               + [(f"internal {name}", op) for name, op in ops.INTERNAL.items()])

# Entries still batched by the generic loop rule (one call per example): none. An entry
# added without a vectorised rule must be listed here, in sight of a reviewer.
LOOP_ALLOWED: set = set()


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
    for name, op in ALL_ENTRIES:
        assert callable(op.batch) or op.batch in RULES, f"{name}: no batching rule"


def test_only_the_listed_entries_batch_by_a_loop():
    looping = {name for name, op in ALL_ENTRIES if op.batch == "loop"}
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


@pytest.mark.slow
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


# ---------------------------------------------------------------------------------------
# More cases for the rules of more_ops.py and linalg.py: branches the table's cases miss
# (axis=None, negative axes, an example's rank, indices as an input, shapes that
# broadcast between examples and shared inputs), run as the table's cases are.
# ---------------------------------------------------------------------------------------
def _more_cases():
    rng = np.random.default_rng(21)
    X = lambda *s: rng.uniform(-1, 1, size=s)  # noqa: E731
    P = lambda *s: rng.uniform(0.5, 2.0, size=s)  # noqa: E731  (positive: weights)
    F = gc.FUNCTIONS
    return [
        ("sort-None", lambda x: F["sort"](x, axis=None), [X(2, 3)]),
        ("sort-0d", lambda x: F["sort"](x, axis=None), [X()]),
        ("cumprod-None", lambda x: F["cumprod"](x), [X(2, 3)]),
        ("cumsum-negative", lambda x: F["cumsum"](x, axis=-2), [X(2, 3, 2)]),
        ("argmax-None-keepdims", lambda x: F["argmax"](x, keepdims=True), [X(2, 3)]),
        ("argmin-None", lambda x: F["argmin"](x), [X(2, 3)]),
        ("argmax-axis-keepdims", lambda x: F["argmax"](x, axis=-1, keepdims=True), [X(2, 3)]),
        ("repeat-negative", lambda x: F["repeat"](x, 3, axis=-1), [X(2, 2)]),
        ("roll-tuple", lambda x: F["roll"](x, (1, -1), axis=(0, 1)), [X(2, 3)]),
        ("roll-None-3d", lambda x: F["roll"](x, 4), [X(2, 3, 2)]),
        ("flip-tuple", lambda x: F["flip"](x, (0, -1)), [X(2, 3, 2)]),
        ("flip-None-vector", lambda x: F["flip"](x), [X(4)]),
        ("flipud-vector", F["flipud"], [X(3)]),
        ("squeeze-None", F["squeeze"], [X(1, 3, 1)]),
        ("squeeze-axis", lambda x: F["squeeze"](x, axis=-1), [X(1, 3, 1)]),
        ("squeeze-nothing", F["squeeze"], [X(2, 3)]),
        ("expand_dims-0", lambda x: F["expand_dims"](x, 0), [X(3)]),
        ("expand_dims-tuple", lambda x: F["expand_dims"](x, (0, -1)), [X(3)]),
        ("ravel-3d", F["ravel"], [X(2, 1, 3)]),
        ("ravel-0d", F["ravel"], [X()]),
        ("atleast_1d-matrix", F["atleast_1d"], [X(2, 3)]),
        ("atleast_2d-0d", F["atleast_2d"], [X()]),
        ("atleast_2d-matrix", F["atleast_2d"], [X(2, 3)]),
        ("atleast_3d-0d", F["atleast_3d"], [X()]),
        ("atleast_3d-vector", F["atleast_3d"], [X(3)]),
        ("atleast_3d-3d", F["atleast_3d"], [X(2, 1, 2)]),
        ("tile-short-reps", lambda x: F["tile"](x, 2), [X(2, 3)]),
        ("tile-0d", lambda x: F["tile"](x, (2, 3)), [X()]),
        ("pad-before-after", lambda x: F["pad"](x, (1, 2)), [X(2, 3)]),
        ("pad-per-axis-3d", lambda x: F["pad"](x, ((0, 1), (2, 0), (1, 1))), [X(2, 1, 2)]),
        ("swapaxes-negative", lambda x: F["swapaxes"](x, -1, 0), [X(2, 3, 2)]),
        ("moveaxis-tuples", lambda x: F["moveaxis"](x, (0, -1), (-1, 1)), [X(2, 3, 4)]),
        ("rot90-negative", lambda x: F["rot90"](x, 1, (-1, -2)), [X(2, 3)]),
        ("diff-negative", lambda x: F["diff"](x, axis=-2), [X(3, 2)]),
        ("log_softmax-None", lambda x: F["log_softmax"](x, axis=None), [X(2, 3)]),
        ("vstack-scalars", lambda a, b: F["vstack"]([a, b]), [X(), X()]),
        ("vstack-matrices", lambda a, b: F["vstack"]([a, b]), [X(1, 3), X(2, 3)]),
        ("hstack-scalar-vector", lambda a, b: F["hstack"]([a, b]), [X(), X(2)]),
        ("hstack-matrices", lambda a, b: F["hstack"]([a, b]), [X(2, 1), X(2, 3)]),
        ("dstack-vectors", lambda a, b: F["dstack"]([a, b]), [X(3), X(3)]),
        ("dstack-3d", lambda a, b: F["dstack"]([a, b]), [X(2, 1, 2), X(2, 1, 1)]),
        ("take-indices-input", lambda x, i: F["take"](x, i, axis=1),
         [X(2, 3), np.array([2, 0, 2])]),
        ("take-None-indices-input", lambda x, i: F["take"](x, i), [X(2, 3), np.array([[5, 0]])]),
        ("take-0-indices-input", lambda x, i: F["take"](x, i, axis=0),
         [X(3, 2), np.array([[1], [-1]])]),
        ("take-negative-axis", lambda x, i: F["take"](x, i, axis=-2),
         [X(2, 3, 2), np.array([[0, 2], [1, 1]])]),
        ("gather-indices-input", lambda x, i: F["gather"](x, i), [X(3, 2), np.array([2, 2, 0])]),
        ("take_along_axis-input", lambda x, i: F["take_along_axis"](x, i, -1),
         [X(2, 3), np.array([[2, 0], [1, 1]])]),
        ("take_along_axis-0", lambda x, i: F["take_along_axis"](x, i, 0),
         [X(2, 3), np.array([[1, 0, 1]])]),
        ("take_along_axis-None", lambda x, i: F["take_along_axis"](x, i, None),
         [X(2, 3), np.array([5, 0, 3, 3])]),
        ("average-along-0", lambda x, w: F["average"](x, w, axis=0), [X(2, 3), P(2)]),
        ("average-keepdims", lambda x, w: F["average"](x, w, axis=-1, keepdims=True),
         [X(2, 3), P(3)]),
        ("average-vectors", lambda x, w: F["average"](x, w), [X(3), P(3)]),
        ("average-broadcast", lambda x, w: F["average"](x, w, axis=(0, 2)),
         [X(2, 3, 2), P(3, 1)]),
        ("solve-stack-of-b", lambda a, b: F["solve"](a, b),
         [X(3, 3) + 3 * np.eye(3), X(2, 3, 2)]),
        ("solve-stacks-broadcast", lambda a, b: F["solve"](a, b),
         [X(2, 1, 3, 3) + 3 * np.eye(3), X(2, 3, 1)]),
        ("diag-matrix-k-negative", lambda v: F["diag"](v, -1), [X(3, 3)]),
        ("diag-vector-k", lambda v: F["diag"](v, 2), [X(2)]),
        ("triu-vector", F["triu"], [X(3)]),
        ("tril-vector-k", lambda x: F["tril"](x, -1), [X(3)]),
        ("trace-negative-axes", lambda x: F["trace"](x, 0, -1, -2), [X(2, 3, 3)]),
        ("einsum-ellipsis-one", lambda a, b: gc.einsum("...i,i->...", a, b), [X(2, 3), X(3)]),
        ("einsum-implicit-ellipsis-two", lambda a, b: gc.einsum("...ij,...j", a, b),
         [X(2, 2, 3), X(3)]),
        ("einsum-scalar", lambda a, b: gc.einsum(",i->i", a, b), [X(), X(3)]),
        ("inner-matrix-vector", lambda a, b: F["inner"](a, b), [X(2, 3), X(3)]),
        ("tensordot-0", lambda a, b: F["tensordot"](a, b, 0), [X(2), X(3)]),
        ("outer-0d", lambda a, b: F["outer"](a, b), [X(), X()]),
        ("kron-0d", lambda a, b: F["kron"](a, b), [X(), X(2, 2)]),
        ("cross-broadcast-first", lambda a, b: F["cross"](a, b), [X(3), X(2, 3)]),
        ("cross-axis-negative", lambda a, b: F["cross"](a, b, axis=-2), [X(3, 2), X(3, 1)]),
        ("det-stack", F["det"], [X(2, 2, 2) + 2 * np.eye(2)]),
    ]


MORE_CASES = _more_cases()


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in MORE_CASES],
                         ids=[c[0] for c in MORE_CASES])
def test_vectorized_map_equals_a_loop_in_more_branches(fn, args):
    test_vectorized_map_equals_a_loop(fn, args)


@pytest.mark.parametrize("name,params,x_shape,indices", [
    ("take", {"axis": 1}, (2, 3), [[2, 0], [1, 1], [0, 2]]),
    ("take", {"axis": -2}, (3, 2), [[[2], [0]], [[1], [1]], [[0], [-1]]]),
    ("take", {}, (2, 3), [[5, 0, 1], [3, 3, 3], [-1, 2, 4]]),
    ("take", {"axis": 0}, (3, 2), [[2, 0], [1, 1], [0, 2]]),
    ("gather", {}, (3, 2), [[2, 0], [1, 1], [0, 2]]),
    ("take_along_axis", {"axis": 1}, (2, 3), [[[2], [0]], [[1], [1]], [[0], [2]]]),
    ("take_along_axis", {"axis": None}, (2, 3), [[5, 0], [3, 3], [-1, 2]]),
])
@pytest.mark.parametrize("x_batched", [True, False])
def test_indices_differing_per_example_take_each_example_its_own(name, params, x_shape,
                                                                  indices, x_batched):
    """The table's cases batch an index input as copies of one index array; here each
    example has its own indices (x batched too, or shared by the examples): values and
    the gradient with respect to x against a Python loop."""
    rng = np.random.default_rng(9)
    fn = gc.FUNCTIONS[name]
    idx = np.array(indices)
    n = len(idx)
    x = rng.uniform(-1, 1, (n, *x_shape) if x_batched else x_shape)
    looped = [fn(gc.constant(x[b] if x_batched else x), idx[b], **params).numpy()
              for b in range(n)]
    weights = rng.standard_normal(np.shape(looped))
    truth = np.zeros_like(x)
    for b in range(n):
        xb = gc.constant(x[b] if x_batched else x)
        with gc.GradientTape() as tape:
            tape.watch(xb)
            total = gc.sum(fn(xb, idx[b], **params) * weights[b])
        g = tape.gradient(total, xb).numpy()
        if x_batched:
            truth[b] = g
        else:
            truth += g  # a shared x gets the gradients of all the examples

    xt = gc.constant(x)
    with gc.GradientTape() as tape:
        tape.watch(xt)
        if x_batched:
            got = gc.vectorized_map(lambda e: fn(e[0], e[1], **params), [xt, idx])
        else:
            got = gc.vectorized_map(lambda i: fn(xt, i, **params), idx)
        total = gc.sum(got * weights)
    np.testing.assert_array_equal(got.numpy(), np.stack(looped))
    np.testing.assert_allclose(tape.gradient(total, xt).numpy(), truth, rtol=1e-12,
                               atol=1e-15)


def test_squeeze_keeps_the_batch_axis_of_a_batch_of_one():
    x = np.arange(3.0).reshape(1, 1, 3, 1)  # one example of shape (1, 3, 1)
    out = gc.vectorized_map(gc.FUNCTIONS["squeeze"], x)
    assert out.shape == (1, 3)
    np.testing.assert_array_equal(out.numpy(), [[0.0, 1.0, 2.0]])


def test_split_entry_applied_to_a_batch_cuts_every_example():
    """gc.split cuts by getitem; the entry itself, applied to a batched value, gives
    every piece with the batch on axis 0."""
    from gradcli.engine import ops
    from gradcli.engine.core.batching import Batched
    x = np.arange(24.0).reshape(2, 3, 4)
    for name, params in (("split", {"indices_or_sections": 2, "axis": -1}),
                         ("array_split", {"indices_or_sections": 2, "axis": 0})):
        pieces = ops.apply(ops.REGISTRY[name], (Batched(gc.constant(x)),), params)._tensor
        expected = [getattr(np, name)(e, params["indices_or_sections"], axis=params["axis"])
                    for e in x]
        assert len(pieces._value) == len(expected[0])
        for k, piece in enumerate(pieces._value):
            np.testing.assert_array_equal(piece, np.stack([e[k] for e in expected]))


@pytest.fixture
def loop_rule_recorded(monkeypatch):
    """The names of the entries the generic loop rule runs (directly, or called by a rule
    for an input numpy refuses), while the fixture is active."""
    from gradcli.engine.core import batching
    names = []
    original = batching.loop

    def recording(op, values, batched, params):
        names.append(op.name)
        return original(op, values, batched, params)
    monkeypatch.setattr(batching, "loop", recording)
    monkeypatch.setitem(batching.RULES, "loop", recording)
    return names


def test_vectorised_rules_never_fall_back_to_a_loop_on_valid_inputs(loop_rule_recorded):
    """An entry off LOOP_ALLOWED batches every table case without one call per example
    (its rule's O(1) calls of entries), also in the branches of the extra cases."""
    rng = np.random.default_rng(0)
    for case_id, fn, args in list(CASES) + MORE_CASES:
        batched = [gc.constant(_examples(a, rng)) for a in args]
        del loop_rule_recorded[:]
        gc.vectorized_map(lambda xs, fn=fn: fn(*xs), batched)
        assert set(loop_rule_recorded) <= LOOP_ALLOWED, (case_id, loop_rule_recorded)


@pytest.mark.parametrize("fn,example_shape", [
    (gc.FUNCTIONS["fliplr"], (3,)),
    (lambda x: gc.FUNCTIONS["swapaxes"](x, 0, 2), (2, 3)),
    (lambda x: gc.FUNCTIONS["moveaxis"](x, 0, 3), (2, 3)),
    (lambda x: gc.FUNCTIONS["diagonal"](x, 0, 0, -3), (2, 3)),
    (gc.FUNCTIONS["inv"], (3,)),
    (gc.FUNCTIONS["diag"], (2, 2, 2)),
    (lambda x: gc.FUNCTIONS["take"](x, np.array([3]), axis=0), (3,)),
    (lambda x: gc.FUNCTIONS["cross"](x, x), (2,)),
    (lambda x: gc.einsum("ij->i", x), (3,)),
    (lambda x: gc.FUNCTIONS["tile"](x, -1), (3,)),
])
def test_a_batched_input_numpy_refuses_gives_the_entry_own_error(fn, example_shape):
    x = np.ones(example_shape)
    with pytest.raises(Exception) as alone:
        fn(gc.constant(x))
    with pytest.raises(type(alone.value)) as batched:
        gc.vectorized_map(fn, np.stack([x, x]))
    assert str(batched.value) == str(alone.value)


@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in list(CASES) + MORE_CASES],
                         ids=IDS + [c[0] for c in MORE_CASES])
def test_forward_mode_through_vectorized_map_equals_a_loop(fn, args):
    """The rules call ordinary entries, so a forward accumulator outside the map records
    them: the JVP of the batched result is each example's JVP."""
    rng = np.random.default_rng(3)
    examples = [_examples(a, rng) for a in args]
    tangents = [rng.standard_normal(np.shape(e)) if np.asarray(e).dtype.kind == "f"
                else np.zeros(np.shape(e)) for e in examples]
    xs = [gc.constant(e) for e in examples]
    with gc.ForwardAccumulator(xs, tangents) as acc:
        out = gc.vectorized_map(lambda values: fn(*values), xs)
    got = acc.jvp(out, unconnected_gradients="zero").numpy()
    expected = []
    for b in range(BATCH):
        xb = [gc.constant(e[b]) for e in examples]
        with gc.ForwardAccumulator(xb, [t[b] for t in tangents]) as acc:
            y = fn(*xb)
        expected.append(acc.jvp(y, unconnected_gradients="zero").numpy())
    np.testing.assert_allclose(got, np.stack(expected), rtol=1e-10, atol=1e-12)


def _float_cases():
    """The cases with float inputs and a float result (second order applies)."""
    out = []
    for case_id, fn, args in list(CASES) + MORE_CASES:
        if all(np.asarray(a).dtype.kind == "f" for a in args) and \
                np.asarray(fn(*[gc.constant(a) for a in args]).numpy()).dtype.kind == "f":
            out.append((case_id, fn, args))
    return out


FLOAT_CASES = _float_cases()


@pytest.mark.slow
@pytest.mark.parametrize("fn,args", [(f, a) for _, f, a in FLOAT_CASES],
                         ids=[c[0] for c in FLOAT_CASES])
def test_hessian_vector_products_through_vectorized_map_equal_a_loop(fn, args):
    """Second order: a Hessian-vector product of a weighted sum of the batched results is
    each example's Hessian-vector product (the rules' entries are differentiated twice)."""
    rng = np.random.default_rng(5)
    examples = [_examples(a, rng) for a in args]
    out = gc.vectorized_map(lambda xs: fn(*xs), [gc.constant(e) for e in examples])
    weights = gc.constant(rng.standard_normal(out.shape))
    vectors = [rng.standard_normal(np.shape(e)) for e in examples]
    got = gc.hessian_vector_product(
        lambda *xs: gc.sum(gc.vectorized_map(lambda v: fn(*v), list(xs)) * weights),
        examples, vectors)
    for b in range(BATCH):
        expected = gc.hessian_vector_product(lambda *xs: gc.sum(fn(*xs) * weights[b]),
                                             [e[b] for e in examples],
                                             [v[b] for v in vectors])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy()[b], e.numpy(), rtol=1e-9, atol=1e-11)
