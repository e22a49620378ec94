"""Tensors behave like numpy arrays: methods and properties, % and //, and numpy's own
functions applied to tensors dispatching to the table (gradients kept) or refusing when
a gradient would be lost. Expected gradients are worked out by hand or by numpy."""
from __future__ import annotations

import numpy as np
import pytest

import gradcli as gc


def grad_of(f, value):
    [g] = gc.gradients_function(f)(value)
    return g.numpy()


X = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])


def test_properties_read_like_numpy():
    x = gc.constant(X)
    assert (x.shape, x.ndim, x.size, x.dtype) == ((2, 3), 2, 6, np.float64)
    assert len(x) == 2
    np.testing.assert_array_equal(x.T.numpy(), X.T)
    assert [row.numpy().tolist() for row in x] == X.tolist()
    assert isinstance(x.numpy(), np.ndarray)


@pytest.mark.parametrize("method, reference", [
    (lambda t: t.sum(), lambda a: a.sum()),
    (lambda t: t.sum(axis=0), lambda a: a.sum(axis=0)),
    (lambda t: t.mean(1, keepdims=True), lambda a: a.mean(1, keepdims=True)),
    (lambda t: t.max(), lambda a: a.max()),
    (lambda t: t.min(axis=1), lambda a: a.min(axis=1)),
    (lambda t: t.prod(axis=0), lambda a: a.prod(axis=0)),
    (lambda t: t.var(ddof=1), lambda a: a.var(ddof=1)),
    (lambda t: t.std(axis=0), lambda a: a.std(axis=0)),
    (lambda t: t.reshape(3, 2), lambda a: a.reshape(3, 2)),
    (lambda t: t.reshape((6,)), lambda a: a.reshape((6,))),
    (lambda t: t.transpose(), lambda a: a.transpose()),
    (lambda t: t.transpose(1, 0), lambda a: a.transpose(1, 0)),
    (lambda t: t.reshape(2, 1, 3).squeeze(), lambda a: a.reshape(2, 1, 3).squeeze()),
    (lambda t: t.reshape(2, 1, 3).squeeze(1), lambda a: a.reshape(2, 1, 3).squeeze(1)),
    (lambda t: t.flatten(), lambda a: a.flatten()),
    (lambda t: t % 2.5, lambda a: a % 2.5),
    (lambda t: 7.0 % t, lambda a: 7.0 % a),
    (lambda t: t // 2.5, lambda a: a // 2.5),
    (lambda t: 7.0 // t, lambda a: 7.0 // a),
    (lambda t: abs(t), lambda a: abs(a)),
    (lambda t: -t, lambda a: -a),
    (lambda t: t @ np.ones(3), lambda a: a @ np.ones(3)),
    (lambda t: np.ones((4, 2)) @ t, lambda a: np.ones((4, 2)) @ a),
    (lambda t: [[1.0, 2.0]] @ t, lambda a: [[1.0, 2.0]] @ a),
])
def test_methods_and_operators_compute_what_numpy_computes(method, reference):
    np.testing.assert_array_equal(method(gc.constant(X)).numpy(), reference(X))


def test_methods_keep_the_gradient():
    g = grad_of(lambda t: t.sum() + t.mean(axis=0).sum() + t.reshape(3, 2)[0, 1]
                + t.T[2, 1] + t.max(), X)
    expected = np.ones_like(X) + 0.5
    expected[0, 1] += 1.0   # reshape(3, 2)[0, 1] is X[0, 1]
    expected[1, 2] += 1.0   # T[2, 1] is X[1, 2]
    expected[1, 1] += 1.0   # the maximum, 5
    np.testing.assert_array_equal(g, expected)


def test_mod_has_gradient_one_and_floor_division_zero():
    np.testing.assert_array_equal(grad_of(lambda t: (t % 2.5).sum(), X), np.ones_like(X))
    np.testing.assert_array_equal(grad_of(lambda t: (t // 2.5).sum() + 0.0 * t.sum(), X),
                                  np.zeros_like(X))
    # d/dy (x mod y) = -floor(x / y)
    np.testing.assert_array_equal(grad_of(lambda t: (7.0 % t).sum(), X), -(7.0 // X))


def test_astype_float32_is_differentiable_and_integers_are_not():
    x = gc.constant(X)
    assert x.astype(np.float32).dtype == np.float32
    g = grad_of(lambda t: (t.astype("float32") * 2.0).sum(), X)
    assert g.dtype == np.float64 and np.all(g == 2.0)
    ints = x.astype(int)
    assert ints.dtype.kind == "i" and ints.numpy().tolist() == X.astype(int).tolist()
    with pytest.raises(TypeError, match="float32 or float64"):
        x.astype(np.float16)


def test_an_integer_tensor_is_a_python_index():
    x = gc.constant([0.5, 3.0, 1.0])
    assert ["a", "b", "c"][gc.argmax(x)] == "b"
    with pytest.raises(TypeError, match="integer tensor"):
        [1, 2][x[0]]


@pytest.mark.parametrize("value", [2.7, -2.7, 0.5, 1e300, -0.0, 3.0])
def test_int_of_a_float_tensor_truncates_as_numpy_and_tensorflow(value):
    assert int(gc.constant(value)) == int(np.float64(value))
    assert int(gc.Variable(value)) == int(np.float64(value))
    if abs(value) < 1e38:  # (float32's range)
        assert int(gc.constant(np.float32(value))) == int(np.float32(value))


def test_int_float_and_bool_of_tensors_follow_numpy_on_every_value():
    for value in (np.float64(2.7), np.True_, np.int64(7)):
        t = gc.constant(value)
        assert (int(t), float(t), bool(t)) == (int(value), float(value), bool(value))
    with pytest.raises(ValueError):  # as int(np.float64("nan"))
        int(gc.constant(np.nan))
    with pytest.raises(TypeError):  # as numpy 2: only a 0-d value converts
        int(gc.constant([2.7, 1.0]))
    with pytest.raises(TypeError, match="integer tensor"):  # still no float index
        [1, 2][gc.constant(1.0)]


def test_numpy_functions_on_tensors_dispatch_to_the_table_and_keep_gradients():
    def f(t):
        return (np.sum(np.sin(t) * np.ones(3), axis=1).sum() + np.mean(t)
                + np.max(np.concatenate([t, t]), axis=0)[0] + np.exp(t)[0, 0]
                + (np.ones((1, 2)) @ t).sum())
    g = grad_of(f, X)
    expected = np.cos(X) + 1 / 6 + 1.0
    expected[1, 0] += 1.0  # max of column 0 of [X; X] is 4 = X[1, 0], found twice: 1/2 + 1/2
    expected[0, 0] += np.exp(X[0, 0])
    np.testing.assert_allclose(g, expected, rtol=1e-15)


def test_numpy_ufunc_with_an_array_on_the_left_gives_a_tensor():
    out = np.array([1.0, 2.0]) * gc.constant([3.0, 4.0])
    assert isinstance(out, gc.Tensor) and out.numpy().tolist() == [3.0, 8.0]
    assert isinstance(np.float64(2.0) - gc.constant(1.0), gc.Tensor)


def test_numpy_functions_gradcli_lacks_work_on_untraced_tensors():
    x = gc.constant([1.0, np.nan, 3.0])
    assert np.isnan(x).tolist() == [False, True, False]
    assert np.nanmean(x) == 2.0
    assert np.allclose(gc.constant([1.0, 2.0]), [1.0, 2.0])


def test_numpy_functions_that_would_lose_a_gradient_refuse_with_the_name_to_use():
    x = gc.Variable([1.0, 2.0])
    with gc.GradientTape():
        with pytest.raises(TypeError, match="lose its gradient.*nanmean"):
            np.nanmean(x)
        with pytest.raises(TypeError, match="gradcli.sum"):
            np.add.reduce(x)
        with pytest.raises(TypeError, match="takes no out"):
            np.sin(x, out=np.zeros(2))
        assert np.isfinite(x).tolist() == [True, True]  # booleans lose nothing
        with pytest.raises(TypeError, match="np.sum on a tensor .* gradcli.sum does not "
                                            "compute np.sum with dtype="):
            np.sum(x, dtype=np.float32)


def test_operators_on_tensors_are_the_entries_not_the_numpy_protocol(monkeypatch):
    """Tensor-first operators go straight to their entry: the numpy protocol is only met
    when numpy holds the left operand."""
    from gradcli.engine.core import methods
    calls = []
    original = methods._array_ufunc
    monkeypatch.setattr(gc.Tensor, "__array_ufunc__",
                        lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    x = gc.constant([1.0, 2.0])
    _ = x * np.ones(2) + x - x / 2.0 @ np.ones(2) ** 2
    assert calls == []
    _ = np.ones(2) * x
    assert calls == [np.multiply]


# --- every numpy function dispatch accepts, against numpy itself --------------------------
def _cases():
    """(numpy function, positional arguments[, keyword arguments]) for every numpy
    function with a gradcli counterpart: float arrays become tensors, the rest stays."""
    rng = np.random.default_rng(7)

    def u(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, shape)
    m3, x23, y23, y32, v3, w3, v5, x234 = (u(3, 3) + 3 * np.eye(3), u(2, 3), u(2, 3),
                                          u(3, 2), u(3), u(3), u(5), u(2, 3, 4))
    a22 = np.array([[2.0, -1.0], [1.0, 3.0]])
    b = np.arange(8.0).reshape(2, 2, 2) + np.eye(2) + u(2, 2, 2) * 0.1
    spd = m3 @ m3.T
    lower_read = spd + np.triu(u(3, 3), 1)   # numpy's eigh/cholesky read the lower triangle
    upper_read = spd + np.tril(u(3, 3), -1)
    nans = np.array([np.nan, 0.3, np.inf, -np.inf, -0.7])
    cond = u(2, 3) > 0
    linalg = np.linalg
    cases = [
        (np.sum, (x23,)), (np.sum, (x23, 0)), (np.sum, (x23, 1, None, None, True)),
        (np.mean, (x23, 1)), (np.mean, (x23, 0, None, None, True)),
        (np.prod, (x23, 0)), (np.prod, (x23, None, None, None, True)),
        (np.max, (x23, 1)), (np.max, (x23, 0, None, True)), (np.min, (x23, 0, None, True)),
        (np.amax, (x23, 1)), (np.amin, (x23, None, None, True)),
        (np.var, (x23, 0)), (np.var, (x23, 1, None, None, 1, True)),
        (np.var, (x23,), {"correction": 1}), (np.std, (x23, None, None, None, 1)),
        (np.std, (x23, 0)),
        (np.average, (x23,)), (np.average, (x23, 1)), (np.average, (x23, 1, u(3, lo=0.5))),
        (np.average, (x23, None, u(2, 3, lo=0.5))),
        (np.median, (v5,)), (np.median, (x23, 1)), (np.median, (x23, 0, None, False, True)),
        (np.sort, (x23,)), (np.sort, (x23, 0)), (np.sort, (x23, None)),
        (np.argmax, (x23,)), (np.argmax, (x23, 1)), (np.argmin, (x23, 0)),
        (np.cumsum, (x23,)), (np.cumsum, (x23, 1)), (np.cumprod, (x23, 0)),
        (np.diff, (v5,)), (np.diff, (x23, 1, 0)), (np.diff, (v5, 2)),
        (np.nan_to_num, (nans, True, 5.0)), (np.nan_to_num, (nans, True, 1.0, 100.0, -100.0)),
        (np.sinc, (v3,)), (np.fix, (3 * v3,)),
        (np.clip, (v5, -0.5, 0.5)), (np.clip, (v5, None, 0.5)), (np.clip, (v5, -0.5, None)),
        (np.clip, (v5,), {"a_min": 0.2, "a_max": None}), (np.clip, (v5,), {"min": -0.3}),
        (np.where, (cond, x23, y23)),
        (np.reshape, (x23, (3, 2))), (np.reshape, (x23, -1)),
        (np.transpose, (x234,)), (np.transpose, (x234, (1, 0, 2))),
        (np.concatenate, ([x23, y23],)), (np.concatenate, ([x23, y23], 1)),
        (np.concatenate, ([x23, v3], None)),
        (np.stack, ([v3, w3],)), (np.stack, ([v3, w3], 1)),
        (np.vstack, ([v3, w3],)), (np.hstack, ([x23, y23],)), (np.dstack, ([x23, y23],)),
        (np.expand_dims, (x23, 1)), (np.squeeze, (u(1, 2, 1),)), (np.squeeze, (u(1, 2, 1), 0)),
        (np.ravel, (x23,)),
        (np.atleast_1d, (np.array(0.5),)), (np.atleast_1d, (v3, x23)), (np.atleast_2d, (v3,)),
        (np.atleast_3d, (x23,)),
        (np.broadcast_to, (v3, (2, 3))),
        (np.repeat, (v3, 2)), (np.repeat, (v3, [1, 0, 2])), (np.repeat, (x23, 2, 1)),
        (np.tile, (v3, 2)), (np.tile, (x23, (2, 1))),
        (np.flip, (x23,)), (np.flip, (x23, 1)), (np.fliplr, (x23,)), (np.flipud, (x23,)),
        (np.roll, (v5, 2)), (np.roll, (x23, 1, 1)),
        (np.rot90, (x23,)), (np.rot90, (x23, 2)), (np.rot90, (x234, 1, (1, 2))),
        (np.swapaxes, (x234, 0, 2)), (np.moveaxis, (x234, 0, -1)),
        (np.pad, (v3, 1)), (np.pad, (x23, ((1, 0), (0, 2)))), (np.pad, (v3, 2, "constant")),
        (np.pad, (v3, 1), {"constant_values": 1.5}),
        (np.split, (u(6), 3)), (np.split, (u(6), [1, 4])), (np.split, (u(4, 3), 2, 0)),
        (np.array_split, (v5, 3)),
        (np.take, (v5, [0, 2, 2])), (np.take, (x23, [2, 0], 1)),
        (np.take_along_axis, (x23, np.array([[2, 0], [1, 1]]), 1)),
        (np.take_along_axis, (x23, np.array([[2], [0]]))),
        (np.dot, (m3, v3)), (np.dot, (x23, y32)), (np.inner, (v3, w3)), (np.inner, (x23, y23)),
        (np.outer, (v3, u(2))), (np.outer, (a22, v3)), (np.kron, (a22, y23)),
        (np.tensordot, (x234, u(3, 4, 2))), (np.tensordot, (x23, y32, 1)),
        (np.einsum, ("ij,jk->ik", x23, y32)), (np.einsum, ("ii", m3)),
        (np.einsum, ("i,i", v3, w3)),
        (np.cross, (v3, w3)), (np.cross, (x23, v3)), (np.cross, (u(3, 2), u(3, 2), 0, 0, 0)),
        (np.cross, (u(3, 2), u(3, 2), -1, -1, -1, 0)),
        (np.trace, (m3,)), (np.trace, (u(3, 4), 1)), (np.trace, (u(2, 3, 3), 0, 1, 2)),
        (np.diagonal, (m3,)), (np.diagonal, (u(3, 4), 1)), (np.diagonal, (u(2, 3, 3), 0, 1, 2)),
        (np.diag, (v3,)), (np.diag, (v3, 1)), (np.diag, (m3,)), (np.diag, (u(3, 4), -1)),
        (np.triu, (m3,)), (np.triu, (u(3, 4), 1)), (np.tril, (m3, -1)),
        (linalg.inv, (m3,)), (linalg.inv, (u(2, 3, 3) + 3 * np.eye(3),)),
        (linalg.solve, (m3, v3)), (linalg.solve, (m3, y32)),
        (linalg.det, (m3,)), (linalg.slogdet, (m3,)),
        (linalg.cholesky, (lower_read,)), (linalg.cholesky, (upper_read,), {"upper": True}),
        (linalg.eigh, (lower_read,)), (linalg.eigh, (upper_read, "U")),
        (linalg.svd, (m3,)), (linalg.svd, (y32, False)), (linalg.svd, (y32, False, False)),
        (linalg.pinv, (y32,)),
        (linalg.norm, (a22, 1)), (linalg.norm, (a22, None, 1)), (linalg.norm, (x23, 2)),
        (linalg.norm, (x23, "fro")), (linalg.norm, (x23, "nuc")), (linalg.norm, (x23, np.inf)),
        (linalg.norm, (x23, -1)), (linalg.norm, (x23, -2)), (linalg.norm, (v3, 3)),
        (linalg.norm, (v3, 0.5)), (linalg.norm, (v3,)), (linalg.norm, (x234, None, (1, 2))),
        (linalg.norm, (x23, None, None, True)), (linalg.norm, (x23, 1, 1)),
        (linalg.trace, (b,)), (linalg.trace, (u(2, 3, 4),), {"offset": 1}),
        (linalg.diagonal, (b,)), (linalg.diagonal, (u(2, 3, 4),), {"offset": -1}),
        (linalg.outer, (v3, u(2))), (linalg.cross, (x23, y23)),
        (linalg.cross, (u(3, 2), u(3, 2)), {"axis": 0}),
        (linalg.tensordot, (x234, u(3, 4, 2))), (linalg.tensordot, (x23, y32), {"axes": 1}),
        (linalg.matmul, (x23, y32)),
    ]
    return [c if len(c) == 3 else (*c, {}) for c in cases]


CASES = _cases()


def _ufunc_cases():
    """Every ufunc numpy dispatches to the table: numpy's own ufunc of an entry's name."""
    from gradcli.engine.core.table import REGISTRY
    rng = np.random.default_rng(8)
    out = {}
    for name in list(gc.FUNCTIONS):
        ufunc = getattr(np, name, None)
        if not isinstance(ufunc, np.ufunc) or ufunc in out \
                or ufunc.__name__ not in gc.FUNCTIONS:
            continue
        op = REGISTRY[ufunc.__name__]
        lo, hi = op.sample
        if ufunc is np.matmul:
            args = (rng.uniform(lo, hi, (2, 3)), rng.uniform(lo, hi, (3, 2)))
        else:
            args = tuple(rng.uniform(lo, hi, 4) for _ in range(ufunc.nin))
        out[ufunc] = (ufunc, args, {})
    return list(out.values())


UFUNC_CASES = _ufunc_cases()


def _leaves(result) -> list:
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in _leaves(item)]
    return [result]


def _invariant(func, outputs):
    """The outputs a gradient is checked on: singular and eigenvectors squared, as their
    signs are arbitrary (the same for gradcli and numpy here: the same LAPACK calls)."""
    if func is np.linalg.eigh:
        return [outputs[0], outputs[1] * outputs[1]]
    if func is np.linalg.svd and len(outputs) == 3:
        return [outputs[0] * outputs[0], outputs[1], outputs[2] * outputs[2]]
    return outputs


def _case_id(case):
    func, args, kwargs = case
    shapes = ",".join("x".join(map(str, np.shape(a))) if isinstance(a, np.ndarray)
                      else type(a).__name__ for a in args)
    return f"{func.__module__}.{func.__name__}({shapes}{',' if kwargs else ''}" \
           f"{','.join(kwargs)})"


def _float_slots(args):
    """Where the float arrays are among the arguments: (index, index in a list or None)."""
    slots = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            slots.append((i, None))
        elif isinstance(a, list) and all(isinstance(v, np.ndarray) for v in a):
            slots.extend((i, j) for j in range(len(a)))
    return slots


def _with(args, slot, value):
    args = [list(a) if isinstance(a, list) else a for a in args]
    i, j = slot
    if j is None:
        args[i] = value
    else:
        args[i][j] = value
    return args


def _at(args, slot):
    i, j = slot
    return args[i] if j is None else args[i][j]


@pytest.mark.parametrize("case", CASES + UFUNC_CASES, ids=_case_id)
def test_numpy_function_on_tensors_computes_numpys_value_and_gradient(case):
    """numpy's function called on tensors with positional arguments gives numpy's own
    result on the plain arrays, as a tensor (so dispatched to gradcli, not computed on
    the values), and the gradient of numpy's function by central differences."""
    func, args, kwargs = case
    slots = _float_slots(args)
    tensors = list(args)
    for slot in slots:
        tensors = _with(tensors, slot, gc.constant(_at(args, slot)))
    sources = [_at(tensors, slot) for slot in slots]
    with np.errstate(all="ignore"):
        expected = func(*args, **kwargs)
        rng = np.random.default_rng(9)
        weights = {k: rng.uniform(0.5, 1.5, np.shape(leaf)) for k, leaf in
                   enumerate(_invariant(func, _leaves(expected)))
                   if np.asarray(leaf).dtype.kind == "f"}
        with gc.GradientTape() as tape:
            tape.watch(sources)
            got = func(*tensors, **kwargs)
            loss = sum(gc.sum(leaf * weights[k])
                       for k, leaf in enumerate(_invariant(func, _leaves(got))) if k in weights)
    got_leaves, expected_leaves = _leaves(got), _leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves):
        assert isinstance(g, gc.Tensor), "computed by numpy, not dispatched to gradcli"
        assert g.shape == np.shape(e)
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-12, atol=1e-12)
    if not weights:
        return
    grads = tape.gradient(loss, sources, unconnected_gradients="zero")

    def numpy_loss(values):
        with np.errstate(all="ignore"):
            outputs = _invariant(func, _leaves(func(*values, **kwargs)))
        # (nan_to_num's outputs at nan and inf are constants, up to 1.8e308: left out)
        return sum(np.sum(np.where(np.abs(outputs[k]) < 1e300, outputs[k], 0.0) * weights[k])
                   for k in weights)
    h = 1e-6
    for slot, g in zip(slots, grads):
        x = _at(args, slot)
        truth = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[i] = h
            truth[i] = (numpy_loss(_with(args, slot, x + e))
                        - numpy_loss(_with(args, slot, x - e))) / (2 * h)
        finite = np.isfinite(x)  # (nan_to_num's nan and inf: gradient 0, as numpy's FD)
        np.testing.assert_allclose(np.where(finite, g.numpy(), 0.0),
                                   np.where(finite, truth, 0.0), rtol=1e-5, atol=1e-6)


def test_every_numpy_function_dispatch_accepts_has_a_case_above():
    from gradcli.engine.core import numpy_api
    assert set(numpy_api.functions()) == {func for func, _, _ in CASES}
    assert len(UFUNC_CASES) > 40


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in (
    np.linalg.norm, np.linalg.trace, np.linalg.diagonal, np.nan_to_num, np.sum, np.cross,
    np.linalg.eigh, np.clip)], ids=_case_id)
def test_numpy_functions_inside_vectorized_map_keep_numpys_meaning(case):
    func, args, kwargs = case
    first = args[0]
    if not isinstance(first, np.ndarray) or first.dtype.kind != "f":
        pytest.skip("the batched argument must be a float array")
    batch = np.stack([first, 2 * first + 0.1])
    with np.errstate(all="ignore"):
        got = gc.vectorized_map(lambda x: func(x, *args[1:], **kwargs), batch)
        expected = [func(example, *args[1:], **kwargs) for example in batch]
    got_leaves = _invariant(func, _leaves(got))  # (LAPACK on a stack picks its own signs)
    for k, leaf in enumerate(got_leaves):
        truth = np.stack([_invariant(func, _leaves(e))[k] for e in expected])
        np.testing.assert_allclose(leaf.numpy(), truth, rtol=1e-12, atol=1e-12)


def test_numpy_functions_without_a_counterpart_keep_numpys_meaning():
    """Arguments gradcli does not take, and functions whose name is a table entry's but
    whose meaning is not, compute numpy's own result on the values (a tensor a tape is
    recording is refused instead: the result would have no gradient)."""
    x = gc.constant([-4.0, 9.0])
    np.testing.assert_array_equal(np.emath.sqrt(x), np.emath.sqrt(np.array([-4.0, 9.0])))
    assert np.emath.sqrt(x).dtype.kind == "c"  # numpy's complex root, not gc.sqrt's nan
    assert np.sum(x, dtype=np.float32).dtype == np.float32
    np.testing.assert_array_equal(np.diff(x, prepend=0.0), [-4.0, 13.0])
    np.testing.assert_array_equal(np.where(x > 0)[0], [1])
    with pytest.warns(DeprecationWarning):  # numpy's 2-vector cross, which gradcli lacks
        assert np.cross(gc.constant([1.0, 2.0]), np.array([3.0, 4.0])) == -2.0
    with pytest.raises(ValueError):  # numpy.linalg.outer's own refusal of a matrix
        np.linalg.outer(gc.constant(np.ones((2, 2))), np.ones(2))
    v = gc.Variable([1.0, 2.0])
    with gc.GradientTape():
        with pytest.raises(TypeError, match=r"np.lib.scimath.sqrt on a tensor a tape is "
                                            r"recording would lose its gradient"):
            np.emath.sqrt(v)
        with pytest.raises(TypeError, match=r"gradcli.sum does not compute np.sum with dtype="):
            np.sum(v, dtype=np.float32)
        with pytest.raises(TypeError, match=r"gradcli.diff does not compute np.diff with "
                                            r"prepend"):
            np.diff(v, prepend=0.0)
