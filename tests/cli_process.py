"""The installed command as a user runs it, in a subprocess: one helper for the CLI tests."""
import os
import shutil
import subprocess
import sys

SCRIPT = shutil.which("gradcli")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "gradcli"]


def run(*args, stdin=None, env=None, cwd=None, timeout=120):
    """``gradcli ARGS...`` (arguments turned to text), its output captured."""
    return subprocess.run(COMMAND + [str(a) for a in args], capture_output=True, text=True,
                          input=stdin, env=dict(os.environ, **(env or {})), cwd=cwd,
                          timeout=timeout, check=False)
