"""Declarations on the command line, as a user runs them (the console script, in a
subprocess): rebound names as sources, shadowed constants, files, refusals before work."""
import json

import numpy as np
import pytest

from cli_process import run


def run_json(*args, cwd=None):
    result = run(*args, "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def gradients(out):
    return {g["name"]: g["gradient"] for g in out["gradients"]}


# --- a declared name is the declared source -----------------------------------------------
@pytest.mark.slow
def test_tape_differentiates_a_rebound_variable_as_value_grad_does():
    # y = (2w)^2 at w = 1: dy/dw = 8
    tape = run_json("tape", "w = w*2; y = w^2", "--var", "w=1")
    assert tape["value"] == 4.0 and gradients(tape) == {"w": 8.0}
    assert gradients(run_json("value-grad", "w = w*2; y = w^2", "--var", "w=1")) == {"w": 8.0}


@pytest.mark.slow
def test_tape_watches_a_rebound_argument():
    # y = (x + 1)^2 at x = 2: dy/dx = 6
    out = run_json("tape", "x = x + 1; y = x^2", "--arg", "x=2", "--watch", "x")
    assert gradients(out) == {"x": 6.0}


@pytest.mark.slow
def test_wrt_names_the_declared_variable_not_its_last_value():
    # y = (3w)^2 at w = 1: dy/dw = 18 (the last value 3w would give 6)
    out = run_json("tape", "w = w * 3; y = w * w", "--var", "w=1", "--wrt", "w")
    assert gradients(out) == {"w": 18.0}


@pytest.mark.slow
def test_compare_gives_the_declared_source_gradient_in_every_mode():
    # y = (x w)^2 with x rebound to x w: dy/dw = 2 x^2 w = 4, dy/dx = 2 x w^2 = 8 at (1, 2)
    out = run_json("compare", "x = x * w; y = x ^ 2", "--var", "w=2", "--arg", "x=1",
                   "--watch", "x")
    assert gradients(out["tape"]) == {"w": 4.0, "x": 8.0}
    assert gradients(out["grad"]) == {"x": 8.0}
    assert gradients(out["implicit"]) == {"w": 4.0}
    assert gradients(out["value-grad"]) == {"w": 4.0}


@pytest.mark.slow
def test_check_of_a_rebound_source_checks_the_declared_source():
    out = run_json("tape", "w = w*2; y = w^2", "--var", "w=1", "--check")
    rows = out["check"]["gradients"]
    assert [row["name"] for row in rows] == ["w"]
    assert rows[0]["status"] == "ok"
    assert rows[0]["symbolic"] == 8.0
    assert rows[0]["numeric"] == pytest.approx(8.0, rel=1e-8)


# --- shadowed constants -------------------------------------------------------------------
@pytest.mark.slow
def test_declared_pi_shadows_the_constant_inside_an_array_literal():
    out = run_json("value-grad", "w * sum([pi])", "--var", "w=1", "--arg", "pi=2")
    assert out["value"] == 2.0 and gradients(out) == {"w": 2.0}


@pytest.mark.slow
def test_declared_pi_in_an_array_literal_passes_the_check():
    out = run_json("value-grad", "w * sum([pi, e])", "--var", "w=1", "--arg", "pi=2",
                   "--arg", "e=3", "--check")
    assert out["check"]["passed"] is True
    assert out["check"]["gradients"][0]["symbolic"] == 5.0


# --- files ------------------------------------------------------------------------------
@pytest.mark.slow
def test_csv_error_frame_shows_the_named_line(tmp_path):
    (tmp_path / "bad.csv").write_text("1,2\n3,4\n5,x\n")
    result = run("grad", "sum(x)", "--arg", "x=@bad.csv", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == ["error: --arg x: bad.csv, line 3: 'x' is not a number",
                                          "  3 | 5,x", "    |   ^"]


@pytest.mark.slow
@pytest.mark.parametrize("content", [b"a,b\n1,2\n3,4\n", b"\xef\xbb\xbf1,2\r\n3,4\r\n",
                                     b"\xef\xbb\xbf\"a\",\"b\"\r\n1,2\r\n3,4\r\n"])
def test_csv_with_header_or_byte_order_mark_is_accepted(tmp_path, content):
    (tmp_path / "data.csv").write_bytes(content)
    out = run_json("grad", "sum(x * x)", "--arg", "x=@data.csv", cwd=tmp_path)
    assert gradients(out) == {"x": [[2.0, 4.0], [6.0, 8.0]]}


@pytest.mark.slow
def test_float32_npy_is_computed_in_float64(tmp_path):
    data = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    np.save(tmp_path / "x.npy", data)
    out = run_json("grad", "sum(x * x)", "--arg", "x=@x.npy", "--dtype", "float64",
                   cwd=tmp_path)
    wide = data.astype(np.float64)
    assert gradients(out) == {"x": (2 * wide).tolist()}


# --- refusals before any work -----------------------------------------------------------
@pytest.fixture
def unreadable_big_file(tmp_path):
    """A .npy whose header announces 10^7 float64 elements but whose data is missing:
    a refusal that reads the file would report a read error instead."""
    path = tmp_path / "big.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (10**7,)})
    return path


@pytest.mark.parametrize("args, words", [
    (["value-grad", "sum(sin(x)*exp(-x**2))"], "No trainable variables"),
    (["implicit", "sum(sin(x)*exp(-x**2))"], "No trainable variables"),
    (["tape", "sum(x)", "--wrt", "y"], "unknown source 'y'"),
    (["tape", "sum(x)", "--watch", "y"], "unknown name to watch 'y'"),
    (["grad", "sum(x)", "--params", "y"], "unknown argument 'y'"),
    (["grad", "sum(x) + y"], "undeclared name 'y'"),
])
def test_refusals_come_before_the_file_is_read(unreadable_big_file, args, words):
    result = run(*args, "--arg", f"x=@{unreadable_big_file}")
    assert result.returncode == 2, result.stderr
    assert words in result.stderr
    assert "big.npy" not in result.stderr


@pytest.mark.slow
def test_the_unreadable_file_is_reported_when_it_is_needed(unreadable_big_file):
    result = run("grad", "sum(x)", "--arg", f"x=@{unreadable_big_file}")
    assert result.returncode == 2
    assert "big.npy" in result.stderr and "Traceback" not in result.stderr
