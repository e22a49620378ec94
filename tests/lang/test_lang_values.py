"""Declarations from outside the program: --var/--frozen/--arg values and files."""
import os
import pickle

import numpy as np
import pytest

from gradcli.errors import GradcliError, InputError, LimitError, ParseError, UnknownNameError
from gradcli.lang import Declarations, load_value, parse_declaration


@pytest.mark.parametrize("text, expected", [
    ("2", 2.0),
    ("[1, 2]", [1.0, 2.0]),
    ("linspace(0, 1, 5)", [0.0, 0.25, 0.5, 0.75, 1.0]),
    ("-pi/2", -np.pi / 2),
    ("[[1, 2], [3, 4]] @ [1, 1]", [3.0, 7.0]),
    ("e ^ 2", np.e ** 2),
    ("zeros((2, 2))", [[0.0, 0.0], [0.0, 0.0]]),
])
def test_constant_expressions_are_values(text, expected):
    value = load_value(text)
    assert value.dtype == np.float64
    np.testing.assert_allclose(value, expected, rtol=1e-15)


@pytest.mark.parametrize("text, cls", [
    ("__import__('os')", ParseError),
    ("x + 1", UnknownNameError),
    ("a = 1", ParseError),
    ("1; 2", ParseError),
    ("1 < 2", InputError),
    ("zeros(10**12)", LimitError),
    ("", ParseError),
])
def test_bad_values_are_refused(text, cls):
    with pytest.raises(cls):
        load_value(text)


def test_parse_declaration_splits_name_and_value():
    assert parse_declaration("w1=2") == ("w1", "2")
    assert parse_declaration(" x = [1, 2] ") == ("x", "[1, 2]")
    assert parse_declaration("c=a==b") == ("c", "a==b")


@pytest.mark.parametrize("option, words", [
    ("w1", "expected NAME=VALUE"),
    ("1x=2", "names must start with a letter"),
    ("__x=2", "beginning with '_'"),
    ("x y=2", "invalid name"),
    ("sin=2", "name of a function"),
    ("asin=2", "name of a function"),
    ("Variable=2", "name of a function"),
    ("lambda=2", "reserved word"),
    ("True=2", "reserved word"),
    ("x=", "no value given"),
])
def test_bad_declaration_options_are_refused(option, words):
    with pytest.raises(InputError, match=words):
        parse_declaration(option)


def test_declarations_keep_order_and_kinds():
    decls = Declarations.from_options(var=["w1=2"], frozen=["w2=3"], arg=["x2=7", "x1=5"])
    assert [(d.kind, d.name) for d in decls] == [("var", "w1"), ("frozen", "w2"),
                                                 ("arg", "x2"), ("arg", "x1")]
    assert [d.name for d in decls.of_kind("arg")] == ["x2", "x1"]
    assert "w2" in decls and decls["x1"].value == 5.0


def test_a_name_declared_twice_is_refused():
    with pytest.raises(InputError, match="'x' is declared twice .as --var and --arg."):
        Declarations.from_options(var=["x=1"], arg=["x=2"])


def test_value_errors_say_which_declaration():
    with pytest.raises(UnknownNameError, match="--arg x: a value can use only"):
        Declarations.from_options(arg=["x=y + 1"])


def test_pi_may_be_declared_and_shadows_the_constant():
    decls = Declarations.from_options(arg=["pi=3"])
    assert decls["pi"].value == 3.0


def test_arrays_can_be_given_directly():
    decls = Declarations()
    assert decls.add("var", "w", np.arange(3)).value.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(InputError):
        decls.add("var", "v", np.array(["a"]))


# --- files ------------------------------------------------------------------------------
def test_npy_file(tmp_path):
    path = tmp_path / "w.npy"
    np.save(path, np.array([[1, 2], [3, 4]], dtype=np.int32))
    value = load_value(f"@{path}")
    assert value.dtype == np.float64 and value.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_csv_and_txt_files(tmp_path):
    (tmp_path / "a.csv").write_text("1, 2, 3\n4, 5, 6\n")
    (tmp_path / "b.txt").write_text("# comment\n1 2\n3 4\n")
    (tmp_path / "c.csv").write_text("2.5\n")
    assert load_value(f"@{tmp_path / 'a.csv'}").tolist() == [[1, 2, 3], [4, 5, 6]]
    assert load_value(f"@{tmp_path / 'b.txt'}").tolist() == [[1, 2], [3, 4]]
    assert load_value(f"@{tmp_path / 'c.csv'}").shape == ()


def test_pickled_npy_is_refused_without_unpickling(tmp_path):
    canary = tmp_path / "CANARY"

    class Boom:
        def __reduce__(self):
            return (open, (str(canary), "w"))

    path = tmp_path / "evil.npy"
    path.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(InputError, match="pickled"):
        load_value(f"@{path}")
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([Boom()], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="objects"):
        load_value(f"@{objects}")
    assert not canary.exists()


def test_csv_with_a_non_number_names_file_and_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1, 2\n3, abc\n")
    with pytest.raises(InputError) as info:
        load_value(f"@{path}")
    assert "bad.csv, line 2: 'abc' is not a number" in info.value.message
    assert "^^^" in info.value.render()


def test_ragged_csv_is_refused(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("1, 2\n3\n")
    with pytest.raises(InputError, match="line 2"):
        load_value(f"@{path}")


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "missing.npy", "cannot read file"),
    (lambda d: d, "unsupported file type"),
    (lambda d: (d / "dir.csv").mkdir() or d / "dir.csv", "is a directory"),
    (lambda d: (d / "empty.txt").write_text("") and None or d / "empty.txt", "no numbers"),
    (lambda d: (d / "x.json").write_text("[1]") and None or d / "x.json", "unsupported"),
    (lambda d: (d / "bin.txt").write_bytes(b"\xff\xfe\x00") and None or d / "bin.txt",
     "cannot read"),
])
def test_bad_files_are_input_errors(tmp_path, make, words):
    path = make(tmp_path)
    with pytest.raises(InputError, match=words):
        load_value(f"@{path}")


def test_pipes_are_refused_without_blocking(tmp_path):
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)
    with pytest.raises(InputError, match="not a regular file"):
        load_value(f"@{pipe}")
    with pytest.raises(GradcliError):
        load_value("@/dev/zero")
