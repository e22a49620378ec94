"""Less Python per batched operation (issue 25, part 4): each entry's batching rule is
resolved once, an elementwise entry whose inputs need no lifting runs on the underlying
tensors as they are, and the Hessian of one source is the Jacobian of its gradient as
it is. Truths: numpy over a Python loop of the examples, central differences."""
import numpy as np
import pytest

import gradcli as gc
from gradcli.engine.core import batching
from gradcli.engine.core.table import REGISTRY
from gradcli.engine.core.tensor import Batched
from gradcli.errors import ShapeError
from central_differences import numeric_hessian

RNG = np.random.default_rng(4)
B = 5


@pytest.fixture
def lifted(monkeypatch):
    """How many times the elementwise rule lifted batched inputs (lift_batched calls)."""
    calls = []
    original = batching.lift_batched

    def counting(values, is_batched):
        calls.append(1)
        return original(values, is_batched)
    monkeypatch.setattr(batching, "lift_batched", counting)
    return calls


# (function on one example, numpy's version, the examples' arguments, lifts needed)
CASES = [
    ("batched * batched", lambda x, y: x * y, lambda x, y: x * y,
     (RNG.standard_normal((B, 3, 4)), RNG.standard_normal((B, 3, 4))), 0),
    ("batched * shared row", lambda x: x * gc.constant(np.arange(4.0)),
     lambda x: x * np.arange(4.0), (RNG.standard_normal((B, 3, 4)),), 0),
    ("number - batched", lambda x: 2.5 - x, lambda x: 2.5 - x,
     (RNG.standard_normal((B, 3)),), 0),
    ("batched / shared 0-d", lambda x: x / gc.constant(4.0), lambda x: x / 4.0,
     (RNG.standard_normal((B, 2)),), 0),
    ("numpy array + batched", lambda x: np.ones(3) + x, lambda x: np.ones(3) + x,
     (RNG.standard_normal((B, 3)),), 0),
    # an example of fewer dimensions than another input: its axes must be lifted
    ("vector example * shared matrix", lambda x: x * gc.constant(np.ones((2, 3))),
     lambda x: x * np.ones((2, 3)), (RNG.standard_normal((B, 3)),), 1),
    ("scalar example * vector example", lambda s, v: s * v, lambda s, v: s * v,
     (RNG.standard_normal(B), RNG.standard_normal((B, 3))), 1),
]


@pytest.mark.parametrize("name, fn, numpy_fn, args, lifts", CASES, ids=[c[0] for c in CASES])
def test_elementwise_entries_batched_equal_a_loop_over_the_examples(lifted, name, fn, numpy_fn,
                                                                     args, lifts):
    got = gc.vectorized_map(lambda a: fn(*a), list(args)).numpy()
    loop = np.stack([numpy_fn(*(a[i] for a in args)) for i in range(B)])
    np.testing.assert_array_equal(got, loop)
    assert len(lifted) == lifts  # the short path lifts nothing


def test_the_short_path_is_differentiable_per_example():
    xs, ys = RNG.standard_normal((B, 4)), RNG.standard_normal((B, 4))

    def per_example(a):
        return gc.gradients_function(lambda x, y: gc.sum(gc.exp(x) * y - x / y))(*a)
    dx, dy = gc.vectorized_map(per_example, [xs, ys])
    np.testing.assert_allclose(dx.numpy(), np.exp(xs) * ys - 1.0 / ys, rtol=1e-14)
    np.testing.assert_allclose(dy.numpy(), np.exp(xs) + xs / ys ** 2, rtol=1e-14)


def test_batched_inputs_of_different_batch_sizes_are_a_shape_error():
    a = Batched(gc.constant(np.ones((3, 2))))
    b = Batched(gc.constant(np.ones((4, 2))))
    with pytest.raises(ShapeError, match=r"multiply: batched inputs of different batch "
                                         r"sizes \[3, 4\]"):
        a * b


def test_each_entrys_rule_is_resolved_once():
    x = Batched(gc.constant(np.ones((2, 3))))
    gc.sin(x)
    gc.cumsum(x, axis=0)
    assert batching._RULE_OF[REGISTRY["sin"]] is batching.elementwise  # by its name
    assert batching._RULE_OF[REGISTRY["cumsum"]] is REGISTRY["cumsum"].batch  # its own


@pytest.mark.parametrize("shape, index", [
    ((10,), (slice(1, None),)), ((4, 5), (np.array([0, 2]), slice(None))),
    ((4, 5), (np.ones((4, 5), dtype=bool),)), ((3, 0), (slice(None),)), ((), ()),
    ((2, 3, 4), (slice(None), None, 1)), ((2, 3, 4), (np.array([1, 0]), slice(None),
                                                      np.array([3, 2]))),
])
def test_the_indexed_part_of_a_scatter_has_numpys_shape(shape, index):
    assert batching._indexed_shape(shape, index) == np.zeros(shape)[index].shape


def _quadratic_and_quartic(m):
    def f(x):  # x of shape (2, 3)
        return m.sum(x ** 4) * 0.25 + m.sum(m.sin(x[0]) * x[1]) + m.sum(x[:, :2] ** 2) * x[1, 2]
    return f


def test_the_hessian_of_one_matrix_source_is_one_block_of_its_shape_squared():
    x0 = RNG.standard_normal((2, 3))
    [[H]] = gc.hessians_function(_quadratic_and_quartic(gc))(x0)
    assert H.shape == (2, 3, 2, 3)
    want = numeric_hessian(_quadratic_and_quartic(np), x0)
    np.testing.assert_allclose(H.numpy().reshape(6, 6), np.reshape(want, (6, 6)),
                               rtol=1e-6, atol=1e-6)


def test_the_hessian_of_a_source_the_output_does_not_reach_is_zeros():
    [[H]] = gc.hessians_function(lambda x: gc.constant(3.0))(np.ones((2, 2)))
    np.testing.assert_array_equal(H.numpy(), np.zeros((2, 2, 2, 2)))
    blocks = gc.hessians_function(lambda x, y: x * x * 3.0)(2.0, np.ones(2))
    assert [[b.shape for b in row] for row in blocks] == [[(), (2,)], [(2,), (2, 2)]]
    assert float(blocks[0][0]) == 6.0
    assert not np.any(blocks[1][1].numpy()) and not np.any(blocks[0][1].numpy())
