"""``--at`` runs every command as ONE batched evaluation per chunk, not the per-row loop
fallback (which gives the same numbers, only slower, and says so in a note): a command
whose result code reads a batched value as a plain array would silently lose the speed
the batching transform is for."""
import pytest
from typer.testing import CliRunner

from gradcli.cli.app import app

PROGRAM = "stack([x*y, sin(x)*y^2])"
COMMANDS = [
    ("tape", ["sum(x*y + sin(x))", "--var", "x", "--var", "y"]),
    ("grad", ["sum(x*y + sin(x))", "--arg", "x", "--arg", "y"]),
    ("implicit", ["sum(x*y + sin(x))", "--var", "x", "--var", "y"]),
    ("value-grad", ["sum(x*y + sin(x))", "--var", "x", "--var", "y"]),
    ("jacobian", [PROGRAM, "--arg", "x", "--arg", "y"]),
    ("jacobian", [PROGRAM, "--arg", "x", "--arg", "y", "--mode", "fwd"]),
    ("hessian", ["x^2*y + sin(y)", "--arg", "x", "--arg", "y"]),
    ("jvp", [PROGRAM, "--arg", "x", "--arg", "y", "--tangent", "x=1", "--tangent", "y=0"]),
]


@pytest.mark.parametrize("command, args", COMMANDS, ids=[f"{c}{i}" for i, (c, _) in
                                                         enumerate(COMMANDS)])
def test_at_evaluates_a_chunk_in_one_batched_call(command, args, tmp_path):
    points = tmp_path / "points.csv"
    points.write_text("x,y\n1,2\n-1.2,1\n0.5,3\n")
    result = CliRunner().invoke(app, [command, *args, "--at", f"@{points}", "--csv"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 4
    assert "one at a time" not in result.stderr, result.stderr
