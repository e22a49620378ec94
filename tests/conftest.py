"""Shared by every test folder (tests/engine, lang, check, run, io, cli, benchmarks mirror
gradcli/'s packages). The helper modules beside this file (cli_process, central_differences,
table_samples, table_programs, more_cases, import_graph, ...) are importable from every
folder: pytest puts this folder on sys.path because it holds a conftest.py and no
__init__.py.

``python -m pytest -m "not slow"`` is the quick subset: tests marked slow start processes
or sweep the whole table through the command line.
"""
from __future__ import annotations

import weakref

import pytest
import typer.testing

import cli_process

_commands = weakref.WeakKeyDictionary()


def _click_command_once(app):
    """typer's CliRunner builds the click command from the typer app on every invoke:
    ~0.25 s of CPU for gradcli's fourteen commands, 90% of an in-process test run. The
    console script builds it once per process; the tests now do too, once per app."""
    if app not in _commands:
        _commands[app] = typer.main.get_command(app)
    return _commands[app]


# A private name of typer's: where a typer release no longer has it, the tests still run,
# only slower (each invoke builds the command again).
if hasattr(typer.testing, "_get_command"):
    typer.testing._get_command = _click_command_once


@pytest.fixture
def gradcli():
    """``gradcli(*args, stdin=None, env=None, cwd=None)``: the installed command run as a
    user runs it (tests/cli_process.py), its result a CompletedProcess."""
    return cli_process.run
