"""einsum: numpy's subscripts (explicit and implicit output, repeated letters, '...'),
its gradient (the transposed einsum, diagonals embedded) against finite differences,
and the one string literal of the language with its errors.

Random expressions are drawn by hypothesis; GRADCLI_PROPERTY_EXAMPLES sets how many
(60 by default, to keep CI fast).
"""
from __future__ import annotations

import os
import string

import numpy as np
import pytest
from central_differences import numpy_gradient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcli as gc
from gradcli.engine.rules.linalg import _canonical
from gradcli.errors import ArgumentError, ParseError, ShapeError
from gradcli.lang import Declarations, build, parse_program
from gradcli.testing import check_grads

EXAMPLES = int(os.environ.get("GRADCLI_PROPERTY_EXAMPLES", "60"))


def grad(f, *args):
    return [g.numpy() for g in gc.gradients_function(f)(*args)]


# ---------------------------------------------------------------------------------------
# Values: numpy's reading of the subscripts
# ---------------------------------------------------------------------------------------
CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("Ba,aC", [(2, 3), (3, 4)]),          # implicit output: sorted, capitals first
    ("ba,ac", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,i", [(3,), (3,)]),
    ("i,j", [(3,), (2,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("i...->...", [(3, 2, 2)]),
    ("ij,ij->ij", [(3, 1), (1, 4)]),       # size-1 dimensions broadcast
    ("a b , b c -> a c", [(2, 3), (3, 2)]),  # spaces are ignored
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("i,ii,i->", [(3,), (3, 3), (3,)]),
]


@pytest.mark.parametrize("subscripts,shapes", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_follow_numpy(subscripts, shapes):
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, s) for s in shapes]
    value = gc.einsum(subscripts, *xs).numpy()
    np.testing.assert_allclose(value, np.einsum(subscripts, *xs), rtol=1e-13, atol=1e-15)
    terms, out, _ = _canonical(subscripts, tuple(shapes))
    assert len(out) == np.ndim(value)
    check_grads(lambda *t: gc.einsum(subscripts, *t), xs, order=2)


def test_gradient_of_a_trace_is_the_identity_exactly():
    [g] = grad(lambda a: gc.einsum("ii", a), np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(g, np.eye(3))


def test_gradient_of_a_diagonal_is_embedded_on_the_diagonal():
    w = np.array([1.0, 2.0, 3.0])
    [g] = grad(lambda a: gc.sum(gc.einsum("ii->i", a) * w), np.ones((3, 3)))
    np.testing.assert_array_equal(g, np.diag(w))
    [g] = grad(lambda a: gc.sum(gc.einsum("iij->j", a)), np.ones((2, 2, 3)))
    np.testing.assert_array_equal(g, np.eye(2)[:, :, None] * np.ones(3))


def test_gradient_of_a_broadcast_operand_is_summed_to_its_shape():
    a, b = np.ones((3, 1)), np.ones((1, 4))
    ga, gb = grad(lambda x, y: gc.sum(gc.einsum("ij,ij->ij", x, y)), a, b)
    np.testing.assert_array_equal(ga, np.full((3, 1), 4.0))
    np.testing.assert_array_equal(gb, np.full((1, 4), 3.0))


# A random expression: 1 to 3 operands over a small alphabet (repeats make traces and
# diagonals), an explicit or implicit output, sizes fixed per letter.
@st.composite
def expressions(draw):
    letters = "abcd"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    n = draw(st.integers(1, 3))
    terms = [draw(st.text(alphabet=letters, min_size=0, max_size=3)) for _ in range(n)]
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        subscripts = ",".join(terms) + "->" + out
    else:
        subscripts = ",".join(terms)
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(-1, 1, [sizes[c] for c in t]) for t in terms]
    return subscripts, xs


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
def test_random_expressions_match_numpy_and_finite_differences(case):
    subscripts, xs = case
    value = gc.einsum(subscripts, *xs).numpy()
    np.testing.assert_allclose(value, np.einsum(subscripts, *xs), rtol=1e-12, atol=1e-14)
    check_grads(lambda *t: gc.einsum(subscripts, *t), xs, order=1)


# ---------------------------------------------------------------------------------------
# Errors of the library
# ---------------------------------------------------------------------------------------
def test_library_errors_name_the_problem():
    a = np.ones((2, 3))
    with pytest.raises(TypeError, match="subscripts string first"):
        gc.einsum(a, a)
    with pytest.raises(ShapeError, match="einsum subscripts name 2 operands, but 1 was given"):
        gc.einsum("ij,jk", a)
    with pytest.raises(ShapeError, match="does not fit the subscripts 'ijk'"):
        gc.einsum("ijk", a)
    with pytest.raises(ShapeError, match="einsum"):
        gc.einsum("ij,ij", a, np.ones((3, 2)))


# numpy's sublist form: einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])
SUBLISTS = [
    ("matmul", [(2, 3), [0, 1], (3, 4), [1, 2]]),
    ("with-output", [(2, 3), [0, 1], (3, 4), [1, 2], [2, 0]]),
    ("implicit-order", [(2, 3), [30, 1], (3, 4), [1, 2]]),  # 2 ('C') before 30 ('e')
    ("trace", [(3, 3), [0, 0]]),
    ("ellipsis", [(5, 2, 3), [Ellipsis, 0, 1], (3, 4), [1, 2], [Ellipsis, 2, 0]]),
    ("tuples-and-empty-output", [(2, 3), (0, 1), (2, 3), (0, 1), []]),
]


@pytest.mark.parametrize("args", [c[1] for c in SUBLISTS], ids=[c[0] for c in SUBLISTS])
def test_numpys_sublist_form_gives_numpys_values_and_gradients(args):
    rng = np.random.default_rng(1)
    values = [rng.uniform(-1, 1, a) if i % 2 == 0 and i < len(args) - len(args) % 2 else a
              for i, a in enumerate(args)]
    np.testing.assert_allclose(gc.einsum(*values).numpy(), np.einsum(*values), rtol=1e-13)
    first = values[0]
    [g] = grad(lambda x: gc.sum(gc.einsum(x, *values[1:]) ** 2), first)
    want = numpy_gradient(lambda x: np.sum(np.einsum(x, *values[1:]) ** 2), first)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    # numpy's own einsum given a tensor in the sublist form keeps the gradient
    with gc.GradientTape() as tape:
        x = gc.constant(first)
        tape.watch(x)
        y = gc.sum(np.einsum(x, *values[1:]) ** 2)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), g, rtol=1e-13)


def test_sublist_labels_are_checked_as_numpy_checks_them():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="from 0 to 51, got 52"):
        gc.einsum(a, [0, 52])
    with pytest.raises(TypeError, match="sublists"):
        gc.einsum(a, ["i", "j"])


# ---------------------------------------------------------------------------------------
# The language: one string literal, einsum's first argument, validated with a caret
# ---------------------------------------------------------------------------------------
def run(text, **arrays):
    decls = Declarations()
    for name, value in arrays.items():
        decls.add("arg", name, np.asarray(value, dtype=float))
    model = build(parse_program(text), decls)
    return model, model.function(*model.arg_values)


def test_language_einsum_matches_the_library_and_differentiates():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    model, value = run('sum(einsum("ij,jk->ik", A, B) ** 2)', A=a, B=b)
    assert value.numpy() == np.sum((a @ b) ** 2)
    ga, gb = gc.gradients_function(model.function)(*model.arg_values)
    np.testing.assert_allclose(ga.numpy(), 2 * (a @ b) @ b.T)
    np.testing.assert_allclose(gb.numpy(), a.T @ (2 * (a @ b)))
    _, value = run("einsum('...i,...i', A, A)", A=a)  # single quotes too, and '...'
    np.testing.assert_allclose(value.numpy(), np.sum(a * a, axis=-1))


BAD = [
    ('sin("ij")', ParseError, "strings are not allowed", 4, 4),
    ('x = "ij"', ParseError, "strings are not allowed", 4, 4),
    ('einsum(A, "ij")', ParseError, "strings are not allowed", 10, 4),
    ('einsum(A, A)', ArgumentError, "einsum takes its subscripts first", 0, 12),
    ('einsum("ij")', ArgumentError, "at least one array", 0, 12),
    ('einsum("ij;k", A)', ParseError, "not ';'", 10, 1),
    ('einsum("ij,jk", A)', ParseError, "name 2 operands, but 1 was given", 8, 1),
    ('einsum("ij->q", A)', ParseError, "output subscript 'q' appears in no input", 12, 1),
    ('einsum("ij->ii", A)', ParseError, "output subscript 'i' appears more than once", 12, 1),
    ('einsum("i->j->", A)', ParseError, "more than one '->'", 12, 1),
    ('einsum("i.j", A)', ParseError, "'.' is only allowed as the ellipsis", 9, 1),
    ('einsum("i-j", A)', ParseError, "'-' must be followed by '>'", 9, 1),
    ('einsum("ij,jk->i,k", A, A)', ParseError, "the output of einsum", 16, 1),
    ('einsum("ij" + "k", A)', ParseError, "strings are not allowed", 14, 3),
]


@pytest.mark.parametrize("text,cls,message,col,width", BAD, ids=[b[0] for b in BAD])
def test_language_refuses_bad_subscripts_with_a_caret(text, cls, message, col, width):
    with pytest.raises(cls, match=message.replace("(", r"\(")) as info:
        parse_program(text)
    assert (info.value.line, info.value.col, info.value.width) == (1, col, width)


@pytest.mark.parametrize("text", ['einsum("i", x, subscripts="j")',
                                  'einsum("i", x, subscripts=1)'])
def test_subscripts_given_twice_are_refused_not_one_silently_dropped(text):
    # The subscripts are written first; a subscripts= keyword as well is a second value
    # (the keyword used to be dropped without a word when it was not a string).
    with pytest.raises(ArgumentError, match="einsum got two values for 'subscripts'") as info:
        parse_program(text)
    assert (info.value.col, info.value.width) == (15, len("subscripts"))


def test_subscripts_accept_exactly_letters_commas_arrow_ellipsis_and_spaces():
    from gradcli.engine.rules.linalg import SubscriptError, check_subscripts
    allowed = set(string.ascii_letters) | set(",->. ")
    for code in range(32, 127):
        ch = chr(code)
        if ch in allowed:
            continue
        with pytest.raises(SubscriptError) as info:
            check_subscripts(f"ab{ch}c")
        assert info.value.offset == 2
