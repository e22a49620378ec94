"""What a command-line start imports, and the collector pause around it (issue 14).

No timing here: the modules a ``--json`` run imports are compared with what
``import numpy`` and a small typer app import by themselves, so that a stray import on the
start-up path fails in CI rather than in a benchmark. benchmarks/run.py times the result.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import pytest

SEED = ["value-grad", "w1*x1 + w2*x2", "--var", "w1=2", "--var", "w2=3", "--arg", "x1=5",
        "--arg", "x2=7", "--json"]

# Never on the --json path: numpy and typer do not import them, and neither may gradcli.
FORBIDDEN = ("sympy", "rich", "json", "dataclasses", "unicodedata", "fractions", "decimal")
# Heavy modules gradcli keeps off its start-up path but typer (or numpy) imports itself:
# allowed only as long as typer's own import brings them.
TYPERS_OWN = ("difflib", "inspect", "dis", "ast", "tokenize", "gettext", "subprocess",
              "pathlib", "uuid", "shutil")
# What gradcli may add to numpy's and typer's imports, besides its own modules and the
# modules compiled into the interpreter (no file to read, so no start-up cost: gc for the
# collector pause, atexit for the end of the process). Which modules are built in is asked
# of the interpreter running the tests (builtin_modules below), never listed here: it
# differs between builds and versions (issue 20).
ALLOWED_EXTRA = {
    "__future__": "from __future__ import annotations (a few attributes)",
    "runpy": "python -m itself",
}

# A typer app shaped like gradcli's: a callback, one command, list/int/float/bool options,
# and a run of it, so that what typer imports while running counts as typer's own.
TYPER_APP = textwrap.dedent("""
    from typing import Annotated, List, Optional
    import typer
    app = typer.Typer(name="t", no_args_is_help=True, add_completion=True,
                      pretty_exceptions_enable=False, rich_markup_mode=None)
    @app.callback()
    def main(version: Annotated[Optional[bool], typer.Option("--version", is_eager=True)] = None):
        pass
    @app.command("run")
    def run(program: Annotated[str, typer.Argument()],
            var: Annotated[Optional[List[str]], typer.Option("--var")] = None,
            json_out: Annotated[bool, typer.Option("--json")] = False,
            digits: Annotated[Optional[int], typer.Option(min=1, max=17)] = None,
            timeout: Annotated[float, typer.Option(min=0.1)] = 5.0):
        print(program, var, json_out, digits, timeout)
    app(["run", "x", "--var", "a=1", "--json"])
""")
CONSOLE_SCRIPT = ("import sys; from gradcli.cli.app import main; "
                  f"sys.argv = ['gradcli', *{SEED!r}]; main()")


# rich's own switches to a terminal's output (styles): a default run is tested without them
RICH_TERMINAL_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE")


def imported(*python_args: str) -> set[str]:
    """Every module a fresh ``python -X importtime ...`` imports (site's included), its
    standard output a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in RICH_TERMINAL_ENV}
    result = subprocess.run([sys.executable, "-X", "importtime", *python_args],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:") and "self [us]" not in line}


@pytest.fixture(scope="module")
def baseline() -> dict[str, set[str]]:
    return {"numpy": imported("-c", "import numpy"), "typer": imported("-c", TYPER_APP)}


@pytest.fixture(scope="module")
def builtin_modules() -> set[str]:
    """The modules compiled into the interpreter the tests run (and gradcli starts) with."""
    result = subprocess.run([sys.executable, "-c", "import sys; print(*sys.builtin_module_names)"],
                            capture_output=True, text=True, timeout=60, check=True)
    return set(result.stdout.split())


@pytest.fixture(scope="module", params=["console script", "python -m gradcli"])
def how(request) -> str:
    """How gradcli is started."""
    return request.param


@pytest.fixture(scope="module")
def json_run(how) -> set[str]:
    if how == "console script":
        return imported("-c", CONSOLE_SCRIPT)
    return imported("-m", "gradcli", *SEED)


def test_a_json_run_imports_nothing_beyond_numpy_typer_and_gradcli(json_run, baseline,
                                                                    builtin_modules):
    extra = json_run - baseline["numpy"] - baseline["typer"]
    ours = {m for m in extra if m == "gradcli" or m.startswith("gradcli.")}
    stray = extra - ours - set(ALLOWED_EXTRA) - builtin_modules
    assert not stray, (f"new imports on the --json start-up path: {sorted(stray)}; import "
                       "them where they are used, or add them to ALLOWED_EXTRA with a reason")


@pytest.mark.parametrize("module", FORBIDDEN)
def test_a_json_run_does_not_import(module, json_run, baseline):
    assert module not in baseline["numpy"] | baseline["typer"], (
        f"numpy or typer now imports {module} itself: revisit FORBIDDEN")
    assert module not in json_run


@pytest.mark.parametrize("module", TYPERS_OWN)
def test_heavy_modules_come_only_with_typer_or_numpy(module, json_run, baseline):
    assert module not in json_run or module in baseline["numpy"] | baseline["typer"]


# gradcli's own modules a --json run of the seed does not use, imported on first use.
LAZY = ("gradcli.engine.core.forward", "gradcli.linalg", "gradcli.engine.rules.linalg",
        "gradcli.engine.rules.statistics", "gradcli.engine.rules.elementwise_extra",
        "gradcli.engine.rules.shape_extra", "gradcli.testing")


def test_the_gradcli_modules_of_a_json_run_are_the_ones_it_uses(json_run):
    ours = {m for m in json_run if m.startswith("gradcli")}
    assert not {m for m in ours if m.startswith("gradcli.check")}
    assert not set(LAZY) & ours
    assert {"gradcli.engine.core.recording", "gradcli.lang.parser", "gradcli.cli.app",
            "gradcli.cli.render", "gradcli.io.jsonvalue", "gradcli.run.modes"} <= ours


@pytest.fixture(scope="module")
def default_run(how) -> set[str]:
    """The seed's default (human) output, written to a pipe."""
    if how == "console script":
        return imported("-c", CONSOLE_SCRIPT.replace(", '--json']", "]"))
    return imported("-m", "gradcli", *SEED[:-1])


def test_a_default_run_of_scalar_results_does_not_import_rich(default_run, json_run):
    # rich is ~25 ms of a default run: its scalar results are printed as rich would print
    # them without it (tests/cli/test_render_fallback.py proves the text identical)
    assert not {m for m in default_run if m == "rich" or m.startswith("rich.")}
    assert default_run == json_run  # nothing more than the --json run needs


def test_non_ascii_text_loads_what_it_needs_and_is_refused_as_before():
    run = subprocess.run([sys.executable, "-m", "gradcli", "value-grad", "w\u2028+ 1",
                          "--var", "w=1", "--json"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert "character U+2028 LINE SEPARATOR is not allowed" in run.stderr


# ---------------------------------------------------------------------------------------
# What moved off the start-up path still works: the forbidden non-ASCII characters are
# found by their Unicode category now, in comments too
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("ch", ["\x85", "\u2028", "\u2029", "\ud800", "\udfff", "\u200b",
                                "\u202e", "\ufeff", "\u00ad"])
def test_forbidden_non_ascii_characters_are_refused_in_comments_with_their_column(ch):
    from gradcli.errors import ParseError
    from gradcli.lang.parser import parse_program
    text = "y = x + 1  # é " + ch + " after"
    with pytest.raises(ParseError) as err:
        parse_program(text)
    assert err.value.col == text.index(ch)
    assert f"U+{ord(ch):04X}" in err.value.message


def test_the_first_forbidden_character_is_reported_ascii_or_not():
    from gradcli.errors import ParseError
    from gradcli.lang.parser import parse_program
    for text, col in (("x # \u2028 \x01", 4), ("x # \x01 \u2028", 4), ("x # é\x7f\u2029", 5)):
        with pytest.raises(ParseError) as err:
            parse_program(text)
        assert err.value.col == col, text


def test_non_ascii_in_comments_alone_is_accepted():
    from gradcli.lang.parser import parse_program
    assert len(parse_program("y = 2 * x  # café, ☃, 𝐱\nz = y").statements) == 2


# ---------------------------------------------------------------------------------------
# The collector pause
# ---------------------------------------------------------------------------------------
def collector_after_import(before: str) -> tuple[bool, int, int, int]:
    """(enabled, frozen objects before the import, after it, young objects after it) in a
    fresh process that runs ``before`` and then imports the command line."""
    code = textwrap.dedent(f"""
        import gc
        {before}
        frozen = gc.get_freeze_count()
        import gradcli.cli.app
        print(gc.isenabled(), frozen, gc.get_freeze_count(), gc.get_count()[0])
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    enabled, *counts = run.stdout.split()
    return (enabled == "True", *map(int, counts))


@pytest.mark.slow
def test_the_collector_is_on_after_the_import_with_nothing_left_frozen():
    enabled, _, frozen, young = collector_after_import("")
    assert enabled and frozen == 0
    # The import's tens of thousands of objects went to the oldest generation, not
    # into the young one that the next collection would walk (its threshold is 700).
    assert young < 700


def test_a_program_that_turned_the_collector_off_keeps_it_off():
    enabled, *_ = collector_after_import("gc.disable()")
    assert not enabled


def test_a_program_s_own_freeze_is_not_undone():
    enabled, frozen_before, frozen_after, _ = collector_after_import(
        "keep = [[] for _ in range(1000)]; gc.freeze()")
    # Still frozen (an unfreeze would leave 0), and nothing of the import's was frozen
    # too; frozen objects that the import frees meanwhile leave the count (a few, and
    # how many depends on the environment: site, venv), so it may only go down a little.
    assert enabled and frozen_before >= 1000
    assert frozen_before - 100 <= frozen_after <= frozen_before


def test_user_work_runs_with_the_collector_on(monkeypatch, capsys):
    from gradcli.run import modes
    from gradcli.cli import app
    seen = []
    real = modes.run_mode

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)
    monkeypatch.setattr(modes, "run_mode", spy)
    monkeypatch.setattr(sys, "argv", ["gradcli", *SEED])
    with pytest.raises(SystemExit) as done:
        app.main()
    assert done.value.code in (0, None)
    assert seen == [True]
    assert '"value": 31.0' in capsys.readouterr().out


def test_what_is_imported_on_first_use_is_there_when_used():
    # a fresh process: gc.linalg, gc.testing and forward mode arrive on first use, as
    # before (gc.testing with no "import gradcli.testing" of the program's own)
    code = textwrap.dedent("""
        import sys
        import gradcli as gc
        before = [m for m in ("gradcli.engine.core.forward", "gradcli.linalg", "gradcli.testing")
                  if m in sys.modules]
        x = gc.constant(2.0)
        with gc.ForwardAccumulator(x, 1.0) as acc:
            y = x * x * x
        determinant = round(float(gc.linalg.det([[2.0, 1.0], [1.0, 3.0]])), 12)
        gc.testing.check_grads(lambda v: v * v, [3.0])  # passes silently
        from gradcli import *  # noqa: F403  (also gradcli's own round, sum, ...)
        from gradcli.engine import ForwardAccumulator as F
        print(before, float(acc.jvp(y)), determinant, linalg is gc.linalg,
              F is ForwardAccumulator is gc.ForwardAccumulator, "linalg" in dir(gc),
              testing is gc.testing is sys.modules["gradcli.testing"], "testing" in dir(gc))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]", "12.0", "5.0", "True", "True", "True", "True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        import gradcli
        gradcli.no_such_name  # noqa: B018


def test_the_full_app_is_built_on_demand_with_every_command():
    from typer.main import get_command

    from gradcli.cli import app
    commands = get_command(app.app).commands
    assert set(commands) == set(app._COMMANDS)  # every registered command
    assert {"tape", "grad", "implicit", "value-grad", "compare", "functions"} <= set(commands)
    assert app.app is app.app  # built once
    with pytest.raises(AttributeError):
        app.no_such_attribute  # noqa: B018


# ---------------------------------------------------------------------------------------
# The start-up tricks live in the entry point alone (issue 21)
# ---------------------------------------------------------------------------------------
def test_importing_the_library_imports_nothing_more_and_leaves_the_process_as_it_was():
    code = textwrap.dedent("""
        import gc, sys
        hook = sys.excepthook
        gc.disable()  # (a program's own setting, which the import must keep)
        import gradcli
        print(sorted(m for m in sys.modules if m.startswith("gradcli")),
              "numpy" in sys.modules, sys.excepthook is hook, gc.isenabled())
        print(gradcli.GradientTape.__name__, "numpy" in sys.modules, gc.isenabled())
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["['gradcli'] False True False",
                                       "GradientTape True False"]


def test_the_entry_point_imports_numpy_first_then_the_engine():
    """numpy at the top level, not from inside gradcli.engine.core (where its typing
    modules took ~9 ms more), and before the engine."""
    env = {k: v for k, v in os.environ.items() if k not in RICH_TERMINAL_ENV}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "gradcli", *SEED],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    names = [line.rsplit("|", 1)[1] for line in result.stderr.splitlines()
             if line.startswith("import time:")]
    assert " numpy" in names  # (importtime indents a module imported by another)
    assert names.index(" numpy") < names.index(" gradcli.engine")
