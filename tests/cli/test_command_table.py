"""The command table (cli/app.py's COMMANDS): one record per command, each registered once,
and every reference a record holds (its run function, its options, its check function, its
result type) names something that exists. The truth is the modules themselves, imported
here: a renamed function fails this test instead of a user's run of the command."""
from __future__ import annotations

import inspect
from importlib import import_module

import pytest

from gradcli.cli import app


def _named(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(import_module(f"gradcli.{module}"), name)


def test_every_command_is_one_record_registered_once():
    from typer.main import get_command
    names = [command.name for command in app.COMMANDS]
    assert len(names) == len(set(names))
    assert list(get_command(app.build_app()).commands) == names


@pytest.mark.parametrize("command", app.COMMANDS, ids=lambda c: c.name)
def test_a_record_names_what_exists(command):
    module, name = command.run.split(":")
    assert callable(getattr(import_module(f"gradcli.cli.{module}"), name))
    options = command.options
    if isinstance(options, str):
        module, name = options.split(":")
        options = getattr(import_module(f"gradcli.cli.{module}"), name)
    assert all(isinstance(p, inspect.Parameter) for p in options)
    if command.check is not None:
        assert callable(_named(command.check))
    if command.result is not None:
        assert isinstance(_named(command.result), type)


@pytest.mark.parametrize("command", [c for c in app.COMMANDS if c.at is not None],
                         ids=lambda c: c.name)
def test_a_record_with_many_points_names_its_per_point_function_and_rows(command):
    # --at maps the record's per-point function; its result type describes its rows
    # (io/report.py) and the record's check checks sampled rows
    from gradcli.io.report import RowKind, Rowwise
    assert callable(_named(command.at)) and command.check is not None
    result = _named(command.result)
    assert issubclass(result, Rowwise) and isinstance(result.ROWS, RowKind)
