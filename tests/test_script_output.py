"""Issue 20, item 9: output a script can read.

- ``compare --plain`` labels each line: the mode, the JSON key of its numbers (``value``,
  ``gradient``, ``jacobian``, ``jvp``) and, for a gradient or Jacobian, the source's name.

Truth: the derivatives written out by hand (products and sums: exact in floating point),
and a POSIX shell's ``read`` for "a script can split it".
"""
from __future__ import annotations

import subprocess

import numpy as np
from batch_helpers import invoke
from cli_process import COMMAND


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
    # d sum(y)/dw = [x, x], d sum(y)/dx = sum(w); Jacobians dy/dx = w, dy/dw = x I, dy/dv 0.
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
        ("jacobian", "jacobian", "x"): w.tolist(),
        ("jacobian", "jacobian", "w"): (x * np.eye(2)).ravel().tolist(),
        ("jacobian", "jacobian", "v"): [0.0, 0.0],  # (the row's sources: all, --wrt aside)
    }


def test_compare_plain_labels_the_jvp_row_and_a_refusing_mode():
    # f = x^2 * 2 along x: df = 2x * 2 * 1; no trainable variable: implicit refuses
    out = ok(invoke("compare", "x^2 * 2", "--arg", "x=3", "--tangent", "x=1",
                    "--plain")).stdout.splitlines()
    assert out[:2] == ["tape value 18.0", "grad gradient x 12.0"]
    assert out[2].startswith("implicit error: No trainable variables")
    assert out[3].startswith("value-grad error: No trainable variables")
    assert out[4:] == ["jvp value 18.0", "jvp jvp 12.0"]


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
