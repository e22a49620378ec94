"""How a gradcli process ends (issue 14): ``run()`` calls ``main()`` and then ``os._exit``,
skipping the interpreter's teardown, but nothing a user can see: the exit code, every byte
of standard output and error, the ``atexit`` handlers, a closed pipe's quiet 141, and the
ordinary exit (which waits) while another thread still runs."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from gradcli.cli import app as cli_app

SEED = ["value-grad", "w1*x1 + w2*x2", "--var", "w1=2", "--var", "w2=3", "--arg", "x1=5",
        "--arg", "x2=7", "--json"]


class Ended(Exception):
    """What the monkeypatched ``os._exit`` raises, with the code it was given."""


@pytest.fixture
def exits(monkeypatch):
    """``os._exit`` raises ``Ended``; the atexit handlers (pytest's own) are not run."""
    def fake_exit(code):
        raise Ended(code)
    monkeypatch.setattr("os._exit", fake_exit)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: None)


def ended(code) -> int:
    with pytest.raises(Ended) as stop:
        cli_app._end_process(code)
    return stop.value.args[0]


@pytest.mark.parametrize("code, expected", [(None, 0), (0, 0), (1, 1), (2, 2), (130, 130),
                                            (141, 141), (256 + 3, 3), (-1, 255)])
def test_the_exit_code_is_sys_exits(exits, code, expected):
    assert ended(code) == expected


def test_a_message_code_is_written_and_ends_with_1(exits, capsys):
    assert ended("something went wrong") == 1
    assert capsys.readouterr().err == "something went wrong\n"


def test_atexit_handlers_run_and_output_is_flushed_first(exits, monkeypatch):
    calls = []
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: calls.append("atexit"))

    class Out:
        def flush(self):
            calls.append("flush")
    monkeypatch.setattr(sys, "stdout", Out())
    assert ended(0) == 0
    assert calls == ["atexit", "flush"]


def test_a_closed_pipe_at_the_last_flush_is_141_and_other_write_errors_2(exits, monkeypatch,
                                                                        capsys):
    import errno

    class Broken:
        def __init__(self, number):
            self.number = number

        def flush(self):
            raise OSError(self.number, "nope")

        def fileno(self):
            raise ValueError("no descriptor")  # _output_failed's redirect is skipped
    monkeypatch.setattr(sys, "stdout", Broken(errno.EPIPE))
    assert ended(0) == 141
    monkeypatch.setattr(sys, "stdout", Broken(errno.ENOSPC))
    assert ended(0) == 2


def test_with_another_thread_running_the_process_ends_the_ordinary_way(exits):
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        with pytest.raises(SystemExit) as normal:
            cli_app._end_process(2)
        assert normal.value.code == 2
    finally:
        stop.set()
        worker.join()


def _process(body: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_run_skips_the_teardown_but_keeps_output_and_atexit():
    # A module-level object whose finaliser runs only in the interpreter's teardown.
    body = """
        import atexit, sys
        class AtTeardown:
            def __del__(self):
                sys.stderr.write("teardown\\n")
        keep = AtTeardown()
        atexit.register(lambda: sys.stderr.write("atexit\\n"))
        from gradcli.cli.app import run, main
        sys.argv = ["gradcli", *sys.argv[2:]]
        (run if sys.argv[1:2] != ["main"] else main)()
    """
    fast = _process(body.replace('sys.argv[1:2] != ["main"]', "True"), "x", *SEED)
    assert fast.returncode == 0
    assert '"value": 31.0' in fast.stdout and fast.stdout.endswith("}\n")
    assert fast.stderr == "atexit\n"  # and no "teardown"
    ordinary = _process(body.replace('sys.argv[1:2] != ["main"]', "False"), "x", *SEED)
    assert (ordinary.returncode, ordinary.stdout) == (0, fast.stdout)
    assert "teardown" in ordinary.stderr  # the test would see the difference


@pytest.mark.slow
def test_every_row_of_a_long_output_reaches_a_pipe():
    rows = 20_000
    points = "".join(f'{{"x": {i}}}\n' for i in range(rows))
    result = subprocess.run([sys.executable, "-m", "gradcli", "grad", "x^2", "--arg", "x",
                             "--at", "-", "--plain"], input=points, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == rows and result.stdout.endswith("\n")
    assert [float(line.split()[-1]) for line in lines[-3:]] == [2.0 * i for i in
                                                               range(rows - 3, rows)]


def test_the_entry_points_are_run():
    import importlib.metadata as md
    scripts = {e.name: e.value for e in md.entry_points(group="console_scripts")
               if e.name == "gradcli"}
    assert scripts == {"gradcli": "gradcli.cli.app:run"}
    from pathlib import Path
    main_py = Path(cli_app.__file__).parent.parent / "__main__.py"
    assert "run()" in main_py.read_text()
