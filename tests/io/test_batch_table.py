"""``--at`` over the whole function table (issue 12): for a program calling each entry, the
batch command gives, row by row, what the single-point command gives at that row.

Each row's single-point JSON comes from the same CLI entry (typer's CliRunner, in this
process) with the row's values typed as ``--var NAME=VALUE`` literals (``repr`` of a
float reads back exactly); the batch side reads the same rows from a CSV with one column
per element (``M[0,1]``), its names declared without a value (``--var M``). The objects
must be equal apart from ``"row"``: the same keys, names, notes and non-finite markers,
and the same numbers bit for bit, except for the few entries in ``ROUNDED`` (a batched
kernel, as LAPACK's on a stack of matrices, may round the last bit of ``inv`` or ``solve``
differently from one matrix), which agree to 1e-12.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from table_programs import TABLE_PROGRAMS, sample_point
from typer.testing import CliRunner

from gradcli.cli.app import app
from gradcli.engine.core.table import ORDER
from gradcli.io.points import element_labels

ROWS = 2
# Entries whose batched kernel may round the last bit differently from one example's:
# LAPACK on a stack of matrices, and outer/kron, whose batched rule multiplies reshaped
# operands and whose gradient sums in another order. Every other entry is bit-for-bit.
ROUNDED = {"inv", "solve", "det", "slogdet", "cholesky", "eigh", "svd", "pinv", "outer",
           "kron"}


def invoke(*args, stdin=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=stdin)


def literal(value: np.ndarray) -> str:
    return repr(np.asarray(value, dtype=np.float64).tolist())


def rows_of(point: dict, count: int = ROWS, seed: int = 12) -> list[dict]:
    """``count`` points near ``point`` (the entry's own valid input), scaled by
    1 + O(1e-3) so that signs and domains are kept; the first is the point itself."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(count):
        out.append({name: np.asarray(v, dtype=np.float64) * (
            1 + 1e-3 * b * rng.uniform(-1, 1, size=np.shape(v))) for name, v in point.items()})
    return out


def csv_text(rows: list[dict]) -> str:
    names = list(rows[0])
    header = [label for n in names for label in element_labels(n, np.shape(rows[0][n]))]
    lines = [",".join(header)]
    for row in rows:
        lines.append(",".join(repr(x) for n in names
                              for x in np.ravel(row[n]).tolist()))
    return "\n".join(lines) + "\n"


def assert_same(batch, single, where: str, tol: float = 0.0) -> None:
    """Equal JSON values (a nan equals a nan); floats exactly, or within ``tol``
    relative rounding."""
    if isinstance(single, dict):
        assert isinstance(batch, dict) and set(batch) == set(single), (where, batch, single)
        for key in single:
            assert_same(batch[key], single[key], f"{where}.{key}", tol)
    elif isinstance(single, list):
        assert isinstance(batch, list) and len(batch) == len(single), (where, batch, single)
        for k, (b, s) in enumerate(zip(batch, single)):
            assert_same(b, s, f"{where}[{k}]", tol)
    elif isinstance(single, float) and math.isnan(single):
        assert isinstance(batch, float) and math.isnan(batch), (where, batch)
    elif isinstance(single, float):
        assert isinstance(batch, float), (where, batch, single)
        assert math.isclose(batch, single, rel_tol=tol, abs_tol=0.0), (where, batch,
                                                                           single)
    else:
        assert batch == single and type(batch) is type(single), (where, batch, single)


def compare(mode: str, text: str, rows: list[dict], kind: str = "var", extra=(),
            tmp_path=None) -> None:
    """The batch command at ``rows`` against the single-point command at each row."""
    path = tmp_path / "points.csv"
    path.write_text(csv_text(rows))
    names = list(rows[0])
    declared = [a for n in names for a in (f"--{kind}", n)]
    batch = invoke(mode, text, *declared, *extra, "--at", f"@{path}", "--json")
    singles = []
    for row in rows:
        values = [a for n in names for a in (f"--{kind}", f"{n}={literal(row[n])}")]
        singles.append(invoke(mode, text, *values, *extra, "--json"))
    codes = {s.exit_code for s in singles}
    if codes != {0}:
        # The program fails at a single point: it fails as a batch too, with exit 2.
        assert codes == {2} and batch.exit_code == 2, (text, batch.output)
        return
    assert batch.exit_code == 0, (text, batch.output, batch.stderr)
    lines = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [line.pop("row") for line in lines] == list(range(len(rows))), text
    tol = 1e-12 if ROUNDED & set(re.findall(r"(\w+)\(", text)) else 0.0
    for k, (line, single) in enumerate(zip(lines, singles)):
        assert_same(line, json.loads(single.stdout), f"{text!r} row {k}", tol)


CASES = [(name, text) for name in ORDER for text in TABLE_PROGRAMS.get(name, ())]


@pytest.mark.slow
@pytest.mark.parametrize("name, text", CASES, ids=[f"{n}:{t}" for n, t in CASES])
def test_value_grad_at_rows_equals_the_single_point_command(name, text, tmp_path):
    compare("value-grad", text, rows_of(sample_point(name)), tmp_path=tmp_path)


FIRST = [(name, TABLE_PROGRAMS[name][0]) for name in ORDER if name in TABLE_PROGRAMS]


@pytest.mark.slow
@pytest.mark.parametrize("name, text", FIRST, ids=[f"{n}:{t}" for n, t in FIRST])
def test_grad_at_rows_equals_the_single_point_command(name, text, tmp_path):
    compare("grad", text, rows_of(sample_point(name)), kind="arg", tmp_path=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("mode, extra", [("tape", ()), ("implicit", ()),
                                         ("tape", ("--unconnected", "zero"))])
@pytest.mark.parametrize("name", ["multiply", "matmul", "softmax", "norm", "inv", "where",
                                  "sum", "maximum"])
def test_other_modes_at_rows_equal_the_single_point_command(mode, extra, name, tmp_path):
    text = TABLE_PROGRAMS[name][0]
    compare(mode, text, rows_of(sample_point(name), count=3), extra=extra,
            tmp_path=tmp_path)


SOME = ["multiply", "matmul", "softmax", "norm", "sum", "sin", "where", "stack", "reshape"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SOME)
def test_jacobian_at_rows_equals_the_single_point_command(name, tmp_path):
    compare("jacobian", TABLE_PROGRAMS[name][0], rows_of(sample_point(name)), kind="arg",
            tmp_path=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", SOME)
def test_jvp_at_rows_equals_the_single_point_command(name, tmp_path):
    point = sample_point(name)
    tangents = [a for n in point for a in ("--tangent", f"{n}=1")]
    compare("jvp", TABLE_PROGRAMS[name][0], rows_of(point), kind="arg", extra=tangents,
            tmp_path=tmp_path)


@pytest.mark.parametrize("name", ["multiply", "sin", "softmax", "matmul"])
def test_float32_rows_equal_the_single_point_command(name, tmp_path):
    compare("value-grad", TABLE_PROGRAMS[name][0], rows_of(sample_point(name)),
            extra=("--dtype", "float32"), tmp_path=tmp_path)


def test_plain_and_precision_rows_equal_the_single_point_plain(tmp_path):
    rows = rows_of({"v": np.array([0.3, -1.7, 2.2]), "x": np.array(0.9)}, count=3)
    (tmp_path / "p.csv").write_text(csv_text(rows))
    text = "sum(sin(v) * x) / 3"
    for extra in ((), ("--precision", "4"), ("--dtype", "float32")):
        batch = invoke("value-grad", text, "--var", "v", "--var", "x", "--at",
                       f"@{tmp_path / 'p.csv'}", "--plain", *extra)
        assert batch.exit_code == 0, batch.output
        for k, row in enumerate(rows):
            single = invoke("value-grad", text, "--var", f"v={literal(row['v'])}", "--var",
                            f"x={literal(row['x'])}", "--plain", *extra)
            # one line per row: the single point's lines, joined
            assert batch.stdout.splitlines()[k] == " ".join(single.stdout.splitlines())


@pytest.mark.parametrize("name", ["multiply", "sin", "softmax", "matmul", "norm", "exp"])
def test_hessian_at_rows_equals_the_single_point_command(name, tmp_path):
    compare("hessian", f"sum({TABLE_PROGRAMS[name][0]})", rows_of(sample_point(name)),
            kind="arg", tmp_path=tmp_path)


def test_hessian_plain_rows_are_the_single_point_lines_and_verdict(tmp_path):
    rows = [{"x": np.array(1.0), "y": np.array(1.0)}, {"x": np.array(2.0), "y": np.array(3.0)}]
    (tmp_path / "p.csv").write_text(csv_text(rows))
    text = "(1 - x)^2 + 100*(y - x^2)^2"
    batch = invoke("hessian", text, "--arg", "x", "--arg", "y", "--at",
                   f"@{tmp_path / 'p.csv'}", "--plain")
    assert batch.exit_code == 0, batch.output
    for k, row in enumerate(rows):
        single = invoke("hessian", text, "--arg", f"x={literal(row['x'])}", "--arg",
                        f"y={literal(row['y'])}", "--plain")
        assert batch.stdout.splitlines()[k] == " ".join(single.stdout.splitlines())
    assert batch.stdout.splitlines()[0].endswith(" minimum")
