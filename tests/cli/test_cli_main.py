"""``gradcli.cli.app.main`` (the console script) on what escapes the commands: an
unexpected exception and an abort end with one line and an exit code, never a traceback
(nor an AttributeError of the handler itself: typer's own click has no ``Abort``)."""
from __future__ import annotations

import sys

import pytest
import typer

from gradcli.cli import app as cli_app
from gradcli.cli import render


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["gradcli", *args])
    with pytest.raises(SystemExit) as stop:
        cli_app.main()
    out, err = capsys.readouterr()
    return stop.value.code, out, err


def raising(error):
    def fail(*args, **kwargs):
        raise error
    return fail


def test_unexpected_exception_in_a_command_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(render.json_writer, "write_json", raising(RuntimeError("boom")))
    code, out, err = run_main(monkeypatch, capsys, "grad", "x^2", "--arg", "x=3", "--json")
    assert code == 2
    assert err == "error: could not run the command: RuntimeError: boom\n"
    assert "Traceback" not in out + err


def test_typer_abort_in_a_command_is_aborted_and_exit_1(monkeypatch, capsys):
    monkeypatch.setattr(render.json_writer, "write_json", raising(typer.Abort()))
    code, out, err = run_main(monkeypatch, capsys, "grad", "x^2", "--arg", "x=3", "--json")
    assert (code, err) == (1, "Aborted!\n")


def test_the_command_still_runs_and_usage_errors_are_click_messages(monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "grad", "x^2", "--arg", "x=3", "--json")
    assert code == 0 and '"gradient": 6.0' in out
    code, out, err = run_main(monkeypatch, capsys, "grad", "x^2", "--no-such-option")
    assert code == 2 and "no such option" in err.lower() and "Traceback" not in err
