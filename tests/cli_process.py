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


def run_here(*args, stdin=None, env=None, cwd=None):
    """``gradcli ARGS...`` run by the console script's ``main()`` inside this process, its
    result a CompletedProcess as ``run``'s: the same exit codes and output (main() turns
    every error into its message and code), without the ~0.3 s start of a new interpreter
    (~0.9 s with sympy for ``--check``). For tests of what a command computes and prints;
    the process itself (signals, closed streams, start-up imports) is ``run``'s to test."""
    import contextlib
    import io
    from unittest import mock

    from gradcli.cli.app import main

    def stream(text=""):
        return io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8", newline="")

    argv = ["gradcli", *[str(a) for a in args]]
    out, err = stream(), stream()
    code = 0
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(mock.patch.dict(os.environ, env or {}))
        for name, value in (("argv", argv), ("stdin", stream(stdin or "")), ("stdout", out),
                            ("stderr", err)):
            stack.enter_context(mock.patch.object(sys, name, value))
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        out.flush()
        err.flush()
    return subprocess.CompletedProcess(argv, code, out.buffer.getvalue().decode(),
                                       err.buffer.getvalue().decode())
