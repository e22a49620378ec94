"""Declared values from files: where a bad field is, headers, byte order marks, dtypes,
and when a file is read."""
import numpy as np
import pytest

from gradcli.errors import InputError
from gradcli.lang import Declarations, build, load_value, parse_program
from gradcli.lang.values import read_table


def error_of(path) -> InputError:
    with pytest.raises(InputError) as info:
        load_value(f"@{path}")
    return info.value


# --- where the bad field is ---------------------------------------------------------------
def test_bad_field_on_line_three_is_quoted_from_line_three(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,2\n3,4\n5,x\n")
    err = error_of(path)
    assert "bad.csv, line 3: 'x' is not a number" in err.message
    assert err.render().splitlines()[1:] == ["  3 | 5,x", "    |   ^"]


def test_bad_field_caret_is_under_the_field_not_an_earlier_equal_text(tmp_path):
    # "1" appears earlier on the line: the caret must go under the third field
    path = tmp_path / "bad.csv"
    path.write_text("# a comment line\n\n1, 11, 1a\n")
    err = error_of(path)
    assert "line 3: '1a' is not a number" in err.message
    assert err.render().splitlines()[1:] == ["  3 | 1, 11, 1a", "    |        ^^"]


def test_bad_field_in_whitespace_separated_text_is_located(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1 2\n3  4\n  5  nope\n")
    err = error_of(path)
    assert "line 3: 'nope' is not a number" in err.message
    assert err.render().splitlines()[1:] == ["  3 |   5  nope", "    |      ^^^^"]


def test_ragged_line_is_named_and_quoted(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("1, 2\n3, 4\n5\n")
    err = error_of(path)
    assert "line 3: 1 values, but earlier lines have 2" in err.message
    assert err.render().splitlines()[1] == "  3 | 5"


# --- headers and byte order marks ----------------------------------------------------------
def test_csv_header_row_is_skipped_and_its_names_kept(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text('x1, "x2"\n1, 2\n3, 4\n')
    assert load_value(f"@{path}").tolist() == [[1.0, 2.0], [3.0, 4.0]]
    values, columns = read_table(str(path))
    assert columns == ("x1", "x2")
    assert values.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_csv_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf1,2\r\n3,4\r\n")
    assert load_value(f"@{path}").tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_byte_order_mark_and_header_together(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbfw\r\n0.5\r\n1.5\r\n")
    values, columns = read_table(str(path))
    assert columns == ("w",)
    assert values.tolist() == [0.5, 1.5]


def test_whitespace_text_file_header_is_skipped(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("# made by hand\na b\n1 2\n")
    values, columns = read_table(str(path))
    assert columns == ("a", "b") and values.tolist() == [1.0, 2.0]


def test_files_without_header_have_no_column_names(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("1,2\n")
    assert read_table(str(path))[1] is None
    np.save(tmp_path / "data.npy", np.ones(2))
    assert read_table(str(tmp_path / "data.npy"))[1] is None


def test_declaration_keeps_the_header_names(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    decls = Declarations.from_options(arg=[f"x=@{path}"])
    assert decls["x"].columns == ("a", "b")
    assert decls["x"].value.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("text, words", [
    ("a,b\n", "only a header"),
    ("a,b\n1,2,3\n", "line 1: the header names 2 columns, but the rows have 3 values"),
    ("1,2\na,b\n", "line 2: 'a' is not a number"),    # a header is only the first row
    ("a,2\n3,4\n", "line 1: 'a' is not a number"),    # a row with a number is data
])
def test_bad_headers_are_refused(tmp_path, text, words):
    path = tmp_path / "data.csv"
    path.write_text(text)
    assert words in error_of(path).message


def test_other_encodings_are_still_refused(tmp_path):
    path = tmp_path / "utf16.csv"
    path.write_bytes("1,2\n".encode("utf-16"))
    assert "cannot read" in error_of(path).message


# --- dtypes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("stored, dtype", [(np.float32, "float64"), (np.float64, "float32"),
                                           (np.float16, "float64"), (">f4", "float64")])
def test_npy_values_are_converted_to_the_computation_dtype(tmp_path, stored, dtype):
    path = tmp_path / "x.npy"
    data = np.array([0.1, 0.2], dtype=stored)
    np.save(path, data)
    model = build(parse_program("w * x"),
                  Declarations.from_options(var=[f"w=@{path}"], arg=[f"x=@{path}"]),
                  dtype=dtype)
    assert model.arg_values[0].numpy().dtype == np.dtype(dtype)
    assert model.variables["w"].numpy().dtype == np.dtype(dtype)
    # the stored numbers, rounded once to the computation's precision
    expected = data.astype(np.float64).astype(dtype)
    assert model.arg_values[0].numpy().tolist() == expected.tolist()


# --- when files are read ------------------------------------------------------------------
def test_declaration_reads_its_file_only_when_the_value_is_asked_for(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("1,2\n")
    decls = Declarations.from_options(arg=[f"x=@{path}"])
    path.write_text("3,4\n")  # changed after the declaration: the value is read later
    assert not decls["x"].loaded
    assert decls["x"].value.tolist() == [3.0, 4.0]
    assert decls["x"].loaded


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "missing.csv", "cannot read file"),
    (lambda d: (d / "dir.csv").mkdir() or d / "dir.csv", "is a directory"),
    (lambda d: (d / "x.json").write_text("[1]") and d / "x.json", "unsupported file type"),
    (lambda d: (d / "p.npy").write_bytes(b"\x80\x04K\x01.") and d / "p.npy", "not a .npy"),
])
def test_what_a_declaration_decides_is_refused_when_it_is_made(tmp_path, make, words):
    with pytest.raises(InputError, match=words) as info:
        Declarations.from_options(arg=[f"x=@{make(tmp_path)}"])
    assert info.value.message.startswith("--arg x: ")


def test_errors_from_a_late_read_name_the_option(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,x\n")
    decls = Declarations.from_options(var=[f"w=@{path}"])
    with pytest.raises(InputError) as info:
        decls["w"].value
    assert info.value.message.startswith("--var w: ")
    assert "line 1: 'x' is not a number" in info.value.message


# --- a row of quoted or tab-separated numbers is not a header: say what is wrong ----------
@pytest.mark.parametrize("name, text, by", [("t.csv", "1\t2\n", "commas"),
                                            ("q.csv", '"1","2"\n', "commas"),
                                            ("q.txt", "'1' '2'\n", "spaces")])
def test_quoted_or_tab_separated_numbers_are_named_as_such(tmp_path, name, text, by):
    (tmp_path / name).write_text(text)
    message = error_of(tmp_path / name).message
    assert message.endswith(f"the file holds no numbers, only a header row "
                            f"({text.strip()!r} is not numbers separated by {by}: write "
                            f"them without quotes, separated by {by})")


def test_a_program_file_may_start_with_a_byte_order_mark(tmp_path):
    from gradcli.lang.source import read_program
    (tmp_path / "p.grad").write_bytes(b"\xef\xbb\xbfy = x * x\n")
    assert read_program(f"@{tmp_path / 'p.grad'}") == "y = x * x\n"
    import io
    assert read_program("-", stdin=io.StringIO("\ufeffx + 1")) == "x + 1"
