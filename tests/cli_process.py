"""The installed command as a user runs it, in a subprocess: one helper for the CLI tests.

The console script is looked for beside the interpreter running the tests (the venv's
``bin/``), not on PATH: ``v/bin/python -m pytest`` in a venv that is not activated must
test that venv's ``gradcli``, not whichever one PATH finds first.
"""
import os
import subprocess
import sys
import sysconfig
from pathlib import Path


def console_script() -> str | None:
    """The ``gradcli`` console script installed with this interpreter, or None."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        for name in ("gradcli", "gradcli.exe"):
            candidate = Path(folder) / name
            if candidate.is_file():
                return str(candidate)
    return None


SCRIPT = console_script()
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "gradcli"]


def run(*args, stdin=None, env=None, cwd=None, timeout=120):
    """``gradcli ARGS...`` (arguments turned to text), its output captured."""
    return subprocess.run(COMMAND + [str(a) for a in args], capture_output=True, text=True,
                          input=stdin, env=dict(os.environ, **(env or {})), cwd=cwd,
                          timeout=timeout, check=False)
