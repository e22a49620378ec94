"""split / array_split in the language (one piece picked by index) and norm's string ords
(ord='fro', ord='nuc'): values against numpy, gradients against central differences, the
sympy check on the command line, and the errors (exit 2, a caret under the culprit)."""
import json

import numpy as np
import pytest

from central_differences import numpy_gradient

import gradcli as gc
from gradcli.errors import ArgumentError, GradcliError, ParseError
from gradcli.lang import Declarations, build, parse_program

X = np.array([[0.5, -1.2, 0.8, 2.0], [1.5, 0.3, -0.4, 0.7], [-0.9, 1.1, 0.2, -0.6]])


def model_of(text, **args):
    decls = Declarations()
    for name, value in args.items():
        decls.add("arg", name, np.asarray(value, dtype=float))
    return build(parse_program(text), decls)


def value_of(text, **args):
    model = model_of(text, **args)
    return np.asarray(model.function(*model.arg_values).numpy(), dtype=float)


PICKS = [  # (program piece, numpy piece)
    ("split(x, 3)[1]", lambda x: np.split(x, 3)[1]),
    ("split(x, [1, 3], axis=1)[2]", lambda x: np.split(x, [1, 3], axis=1)[2]),
    ("split(x, [1, 3], axis=1)[-3]", lambda x: np.split(x, [1, 3], axis=1)[0]),
    ("split(x, 2, axis=-1)[0][1:]", lambda x: np.split(x, 2, axis=-1)[0][1:]),
    ("array_split(x, 3, axis=1)[0]", lambda x: np.array_split(x, 3, axis=1)[0]),
    ("array_split(x, 2)[1]", lambda x: np.array_split(x, 2)[1]),
    ("split(x, indices_or_sections=(2, 5), axis=1)[1]",
     lambda x: np.split(x, (2, 5), axis=1)[1]),
]


@pytest.mark.parametrize("text,reference", PICKS, ids=[t for t, _ in PICKS])
def test_a_picked_piece_of_split_is_numpys_piece(text, reference):
    np.testing.assert_array_equal(value_of(text, x=X), reference(X))


@pytest.mark.parametrize("text,reference", PICKS, ids=[t for t, _ in PICKS])
def test_gradient_through_a_picked_piece_matches_central_differences(text, reference):
    piece_shape = reference(X).shape
    W = np.cos(np.arange(int(np.prod(piece_shape)), dtype=float)).reshape(piece_shape)
    program = f"w = {text}\nsum(W * w ^ 2)"
    model = model_of(program, x=X, W=W)
    grads = gc.gradients_function(model.function, params=[0])(*model.arg_values)
    expected = numpy_gradient(lambda x: float(np.sum(W * reference(x) ** 2)),
                                  X.copy())
    np.testing.assert_allclose(np.asarray(grads[0].numpy(), dtype=float), expected,
                               rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_cli_gradient_of_a_split_piece_passes_the_check(gradcli):
    result = gradcli("grad", "sum(split(x, 2)[1]^2)", "--arg", "x=[1,2,3,4]", "--check",
                     "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["gradients"][0]["gradient"] == [0.0, 0.0, 6.0, 8.0]
    assert out["check"]["passed"] is True
    assert out["check"]["gradients"][0]["status"] == "ok"  # sympy agrees too


@pytest.mark.slow
def test_cli_check_of_array_split_along_axis_one_is_ok(gradcli):
    result = gradcli("grad", "sum(array_split(A, 2, axis=1)[1] ^ 3)", "--arg",
                 "A=[[1, 2, 3], [4, 5, 6]]", "--check", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # d/dA sum(A[:, 2:]^3) = 3 A^2 on the last column, 0 elsewhere
    assert out["gradients"][0]["gradient"] == [[0.0, 0.0, 27.0], [0.0, 0.0, 108.0]]
    assert out["check"]["gradients"][0]["status"] == "ok"


@pytest.mark.parametrize("text,col,width", [
    ("sum(split(x, 2)[2])", 16, 1),
    ("sum(split(x, [1, 3])[-4])", 21, 2),
    ("sum(array_split(x, 3)[3])", 22, 1),
])
def test_an_index_past_the_pieces_is_refused_with_a_caret(gradcli, text, col, width):
    with pytest.raises(ArgumentError, match="the first index picks one") as info:
        model_of(text, x=np.arange(4.0))
    assert (info.value.col, info.value.width) == (col, width)
    result = gradcli("grad", text, "--arg", "x=[1,2,3,4]")
    assert result.returncode == 2
    assert "^" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("text", ["sum(split(x, 2))", "split(x, 2) + 1", "array_split(x, 3)"])
def test_a_split_not_indexed_is_refused_with_a_caret(gradcli, text):
    with pytest.raises(ArgumentError, match="pick one with an index"):
        model_of(text, x=np.arange(4.0))
    result = gradcli("grad", text, "--arg", "x=[1,2,3,4]")
    assert result.returncode == 2
    assert "^^^" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_split_that_does_not_divide_is_a_clear_error(gradcli):
    result = gradcli("grad", "sum(split(x, 3)[0])", "--arg", "x=[1,2,3,4]")
    assert result.returncode == 2
    assert "split" in result.stderr and "Traceback" not in result.stderr


# --- norm's string ords --------------------------------------------------------------------
A = np.array([[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("text,ord_", [("norm(A, ord='fro')", "fro"),
                                       ('norm(A, ord="fro")', "fro"),
                                       ("norm(A, ord='nuc')", "nuc")])
def test_norm_with_a_string_ord_is_numpys(text, ord_):
    np.testing.assert_allclose(value_of(text, A=A), np.linalg.norm(A, ord=ord_), rtol=1e-14)


@pytest.mark.parametrize("ord_", ["fro", "nuc"])
def test_gradient_of_norm_with_a_string_ord_matches_central_differences(ord_):
    model = model_of(f"norm(A, ord='{ord_}')", A=A)
    grads = gc.gradients_function(model.function, params=[0])(*model.arg_values)
    expected = numpy_gradient(lambda a: float(np.linalg.norm(a, ord=ord_)), A.copy())
    np.testing.assert_allclose(np.asarray(grads[0].numpy(), dtype=float), expected,
                               rtol=1e-7, atol=1e-9)


@pytest.mark.slow
def test_cli_check_of_the_frobenius_norm_passes_with_sympy(gradcli):
    result = gradcli("grad", "norm(A, ord='fro')", "--arg", "A=[[1,2],[3,4]]", "--check",
                     "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    np.testing.assert_allclose(out["gradients"][0]["gradient"], A / np.sqrt(30.0), rtol=1e-14)
    assert out["check"]["gradients"][0]["status"] == "ok"


@pytest.mark.parametrize("text,cls,col", [
    ("norm(A, ord='max')", ArgumentError, 12),   # not one of numpy's string ords
    ("sum(A, ord='fro')", ParseError, 11),       # ord= of another function
    ("norm(A, 'fro')", ParseError, 8),           # a string elsewhere
    ("norm(A, axis='fro')", ParseError, 13),
])
def test_a_string_other_than_norms_ord_is_refused_with_a_caret(gradcli, text, cls, col):
    with pytest.raises(cls) as info:
        parse_program(text)
    assert isinstance(info.value, GradcliError) and info.value.col == col
    result = gradcli("grad", text, "--arg", "A=[[1,2],[3,4]]")
    assert result.returncode == 2
    assert "^" in result.stderr and "Traceback" not in result.stderr
