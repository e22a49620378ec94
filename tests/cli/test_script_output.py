"""Issue 20, item 9: output a script can read.

- ``compare --plain`` labels each line: the mode, the JSON key of its numbers (``value``,
  ``gradient``, ``jacobian``, ``jvp``) and, for a gradient or Jacobian, the source's name.
- ``--at ... --check --plain`` says a mismatch as the single-point command does: one
  ``check: MISMATCH: row N: ...`` line on standard error per mismatching row, exit 1.
- A zero prints as ``0.0`` (``0``), never ``-0.0``, in every text output; ``.npz`` output
  keeps the IEEE numbers.

Truth: the derivatives written out by hand (products and sums: exact in floating point),
numpy's own IEEE arithmetic for which results are -0.0 (``np.signbit``), numpy's sin and
cos for the planted wrong rule, and a POSIX shell's ``read`` for "a script can split it".
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from batch_helpers import ROSEN, invoke, rosenbrock
from cli_process import COMMAND
from test_cli_check import WRONG_SIN

from gradcli.cli import render
from gradcli.io.jsonvalue import json_value


def ok(result):
    assert result.exit_code == 0, (result.output, result.stderr)
    return result


# ---------------------------------------------------------------------------------------
# compare --plain: every line says what it holds
# ---------------------------------------------------------------------------------------
W1, W2, X1, X2 = 2.0, 3.0, 5.0, 7.0
SEED = ["w1*x1 + w2*x2", "--var", f"w1={W1}", "--var", f"w2={W2}", "--arg", f"x1={X1}",
        "--arg", f"x2={X2}"]


def test_compare_plain_labels_each_line_with_mode_key_and_name():
    # s = w1 x1 + w2 x2: ds/dw1 = x1, ds/dw2 = x2, ds/dx1 = w1, ds/dx2 = w2
    s = W1 * X1 + W2 * X2
    out = ok(invoke("compare", *SEED, "--plain")).stdout
    assert out.splitlines() == [
        f"tape value {s!r}", f"tape gradient w1 {X1!r}", f"tape gradient w2 {X2!r}",
        f"grad gradient x1 {W1!r}", f"grad gradient x2 {W2!r}",
        f"implicit gradient w1 {X1!r}", f"implicit gradient w2 {X2!r}",
        f"value-grad value {s!r}", f"value-grad gradient w1 {X1!r}",
        f"value-grad gradient w2 {X2!r}"]


def parsed(stdout: str) -> dict:
    """compare --plain's lines by (mode, key, name): the numbers (None for null)."""
    table = {}
    for line in stdout.splitlines():
        mode, key, *rest = line.split(" ")
        name = rest.pop(0) if key in ("gradient", "jacobian") else None
        table[mode, key, name] = None if rest == ["null"] else [float(t) for t in rest]
    return table


def test_compare_plain_labels_arrays_unconnected_sources_and_the_jacobian_row():
    # y = w * x with w = [1, 2] (trainable), x = 3, v (trainable) not read:
    # d sum(y)/dw = [x, x], d sum(y)/dx = sum(w); Jacobian dy/dw = x I.
    w, x = np.array([1.0, 2.0]), 3.0
    out = ok(invoke("compare", "w*x", "--var", "w=[1, 2]", "--var", "v=4", "--arg", "x=3",
                    "--wrt", "w,v", "--plain")).stdout
    assert parsed(out) == {
        ("tape", "value", None): (w * x).tolist(),
        ("tape", "gradient", "w"): [x, x],
        ("tape", "gradient", "v"): None,
        ("grad", "gradient", "x"): [w.sum()],
        ("implicit", "gradient", "w"): [x, x],
        ("value-grad", "value", None): (w * x).tolist(),
        ("value-grad", "gradient", "w"): [x, x],
        ("jacobian", "value", None): (w * x).tolist(),
        # the row's sources are the jacobian command's default: the trainable variables
        # the program reads (w), --wrt aside
        ("jacobian", "jacobian", "w"): (x * np.eye(2)).ravel().tolist(),
    }


def test_compare_plain_labels_the_jvp_row_and_a_refusing_mode():
    # f = x^2 * 2 along x: df = 2x * 2 * 1; no trainable variable: implicit refuses
    out = ok(invoke("compare", "x^2 * 2", "--arg", "x=3", "--tangent", "x=1",
                    "--plain")).stdout.splitlines()
    assert out[:2] == ["tape value 18.0", "grad gradient x 12.0"]
    assert out[2].startswith("implicit error: No trainable variables")
    assert out[3].startswith("value-grad error: No trainable variables")
    assert out[4:] == ["jvp value 18.0", "jvp jvp 12.0"]


@pytest.mark.slow
def test_a_shell_read_loop_splits_compare_plain():
    script = ('while read mode what name rest; do '
              '[ "$what" = gradient ] && printf "%s %s=%s\\n" "$mode" "$name" "$rest"; '
              'done; exit 0')
    compare = subprocess.run(COMMAND + ["compare", *SEED, "--plain"], capture_output=True,
                             text=True, timeout=120, check=True)
    shell = subprocess.run(["sh", "-c", script], input=compare.stdout, capture_output=True,
                           text=True, timeout=30, check=True)
    assert shell.stdout.splitlines() == [
        f"tape w1={X1}", f"tape w2={X2}", f"grad x1={W1}", f"grad x2={W2}",
        f"implicit w1={X1}", f"implicit w2={X2}", f"value-grad w1={X1}",
        f"value-grad w2={X2}"]


# ---------------------------------------------------------------------------------------
# --at --check --plain: a line per mismatching row, as for one point
# ---------------------------------------------------------------------------------------
def sin_rule_run(rule: str, points: str, *args):
    """gradcli with the sin rule as shipped ("right") or planted wrong, rows on stdin."""
    return subprocess.run([sys.executable, "-c", WRONG_SIN, rule, *args], input=points,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_at_check_plain_says_each_mismatching_row_in_one_line():
    # The planted rule says d sin(x) = sin(x). At pi/4 sin = cos (the row passes); at 0.5
    # it does not; at -0.0 the tape's sin(-0.0) is IEEE's -0.0 against sympy's cos(0) = 1.
    rows = [0.5, math.pi / 4, -0.0]
    assert np.signbit(np.sin(-0.0))
    points = "x\n" + "".join(f"{x!r}\n" for x in rows)
    args = ["grad", "sin(x)", "--arg", "x", "--at", "-", "--plain", "--check-rows", "3"]
    failed = sin_rule_run("wrong", points, *args, "--check")
    assert failed.returncode == 1, failed.stderr
    why = "check: MISMATCH: row {}: tape differs from sympy at x: tape {:.10g}, sympy {:.10g}"
    assert failed.stderr.splitlines() == [why.format(0, np.sin(0.5), np.cos(0.5)),
                                          why.format(2, 0.0, 1.0)]
    # Standard output: the rows' numbers, as without --check (the planted rule's sin(x)).
    unchecked = sin_rule_run("wrong", points, *args)
    assert unchecked.returncode == 0 and unchecked.stderr == ""
    assert failed.stdout == unchecked.stdout == "".join(
        f"{0.0 if x == 0 else float(np.sin(x))!r}\n" for x in rows)
    # The table as shipped: every row passes, and a plain check that passes says nothing.
    right = sin_rule_run("right", points, *args, "--check")
    assert right.returncode == 0 and right.stderr == "", right.stderr
    assert right.stdout == "".join(f"{float(np.cos(x))!r}\n" for x in rows)


# ---------------------------------------------------------------------------------------
# A zero prints unsigned
# ---------------------------------------------------------------------------------------
# A number as gradcli prints it, as a whole token (not part of a name such as x1).
NUMBER = re.compile(r"(?<![\w.\[])-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]\d+)?)(?![\w.])")


def negative_zeros(text: str) -> list[str]:
    """The numbers in ``text`` that print a zero with a minus sign."""
    return [t for t in NUMBER.findall(text) if t.startswith("-") and float(t) == 0]


# x * y at x = 3, y = -0.0: IEEE gives value -0.0 and d/dx = y = -0.0, d/dy = x = 3.
X, Y = 3.0, -0.0
PRODUCT = ["x*y", "--var", f"x={X}", "--var", f"y={Y}"]
ARGS = ["x*y", "--arg", f"x={X}", "--arg", f"y={Y}"]


def test_the_programs_give_negative_zeros_in_ieee_arithmetic():
    # The premise of the tests below, in numpy: these results are -0.0, and the library
    # (which keeps the sign: docs/output.md, "A zero prints as `0.0`") computes the same.
    import gradcli as gc
    assert np.signbit(np.float64(X) * np.float64(Y))
    _, dx, _ = rosenbrock(1.0, 1.0)
    assert np.signbit(dx)
    x, y = gc.Variable(X), gc.Variable(Y)
    value, [(gx, _), (gy, _)] = gc.implicit_value_and_gradients(lambda: x * y)()
    assert np.signbit(value.numpy()) and np.signbit(gx.numpy()) and gy.numpy() == X


@pytest.mark.parametrize("args, expected", [
    (["value-grad", *PRODUCT, "--plain"], "0.0\n0.0\n3.0\n"),
    (["value-grad", *PRODUCT, "--plain", "--precision", "3"], "0\n0\n3\n"),
    (["grad", *ARGS, "--plain"], "0.0\n3.0\n"),
    (["value-grad", *PRODUCT, "--json"],
     '{"mode": "value-grad", "value": 0.0, "gradients": [{"name": "x", "gradient": 0.0}, '
     '{"name": "y", "gradient": 3.0}]}\n'),
    (["value-grad", ROSEN, "--var", "x=1", "--var", "y=1", "--plain"], "0.0\n0.0\n0.0\n"),
    (["jacobian", *ARGS, "--plain"], "0.0\n0.0\n3.0\n"),
    (["jvp", *ARGS, "--tangent", "x=1", "--plain"], "0.0\n0.0\n"),
    (["compare", "x*y", "--var", f"x={X}", "--arg", f"y={Y}", "--plain"],
     "tape value 0.0\ntape gradient x 0.0\ngrad gradient y 3.0\n"
     "implicit gradient x 0.0\nvalue-grad value 0.0\nvalue-grad gradient x 0.0\n"),
])
def test_a_zero_prints_as_0_whatever_its_ieee_sign(args, expected):
    assert ok(invoke(*args)).stdout == expected


@pytest.mark.parametrize("args", [
    ["value-grad", *PRODUCT], ["value-grad", *PRODUCT, "--check"],
    ["value-grad", *PRODUCT, "--check", "--json"], ["compare", *PRODUCT],
    ["compare", *PRODUCT, "--json"], ["hessian", *ARGS], ["hessian", *ARGS, "--json"],
    ["jacobian", *ARGS], ["jvp", *ARGS, "--tangent", "x=1", "--json"],
])
def test_no_text_output_shows_a_negative_zero(args):
    out = ok(invoke(*args)).stdout
    assert "0.0" in out and negative_zeros(out) == [], out


ROWS = "x,y\n3,-0.0\n2,5\n"  # row 0: value -0.0, d/dx -0.0 in IEEE arithmetic


@pytest.mark.parametrize("fmt, expected", [
    ("--csv", "row,x,y,value,d_x,d_y\n0,3.0,0.0,0.0,0.0,3.0\n1,2.0,5.0,10.0,5.0,2.0\n"),
    ("--plain", "0.0 0.0 3.0\n10.0 5.0 2.0\n"),
    ("--json", '{"row": 0, "mode": "value-grad", "value": 0.0, "gradients": [{"name": "x", '
               '"gradient": 0.0}, {"name": "y", "gradient": 3.0}]}\n'
               '{"row": 1, "mode": "value-grad", "value": 10.0, "gradients": [{"name": "x", '
               '"gradient": 5.0}, {"name": "y", "gradient": 2.0}]}\n'),
])
def test_at_writes_a_zero_as_0_in_every_text_format(fmt, expected):
    at = ["value-grad", "x*y", "--var", "x", "--var", "y", "--at", "-"]
    assert ok(invoke(*at, fmt, stdin=ROWS)).stdout == expected


@pytest.mark.parametrize("fmt, expected", [
    ("--csv", "row,x,y,value,d_x,d_y\n0,3,0,0,0,3\n1,2,5,10,5,2\n"),
    ("--plain", "0 0 3\n10 5 2\n"),
])
def test_at_writes_a_zero_as_0_with_precision(fmt, expected):
    at = ["value-grad", "x*y", "--var", "x", "--var", "y", "--at", "-", "--precision", "2"]
    assert ok(invoke(*at, fmt, stdin=ROWS)).stdout == expected


def test_at_human_table_and_summary_show_no_negative_zero():
    human = ok(invoke("value-grad", "x*y", "--var", "x", "--var", "y", "--at", "-",
                      stdin=ROWS)).stdout
    assert "0.0" in human and negative_zeros(human) == [], human


def test_npz_output_keeps_the_ieee_numbers(tmp_path):
    source = tmp_path / "p.csv"
    source.write_text(ROWS)
    ok(invoke("value-grad", "x*y", "--var", "x", "--var", "y", "--at", f"@{source}",
              "--output", str(tmp_path / "g.npz")))
    with np.load(tmp_path / "g.npz") as g:
        assert np.signbit(g["y"]).tolist() == [True, False]
        assert np.signbit(g["value"]).tolist() == [True, False]
        assert np.signbit(g["d_x"]).tolist() == [True, False]
        assert g["value"].tolist() == [0.0, 10.0] and g["d_x"].tolist() == [0.0, 5.0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_number_texts_and_json_values_write_zero_unsigned_at_c_speed(dtype):
    values = np.array([-0.0, 0.0, -1.5, np.nan, -np.inf], dtype)
    assert np.signbit(values[0])
    assert render.number_texts(values) == ["0.0", "0.0", "-1.5", "nan", "-inf"]
    assert render.number_texts(values, 3) == ["0", "0", "-1.5", "nan", "-inf"]
    assert render.number_text(values[0]) == "0.0" == render.array_text(values[0])
    assert json.dumps(json_value(values)) == '[0.0, 0.0, -1.5, "nan", "-inf"]'
    assert json.dumps(render.json_array(values)) == '[0.0, 0.0, -1.5, "nan", "-inf"]'
    assert json.dumps(json_value(values[0])) == "0.0"
