"""What every command's code shares: its options by name (``Settings``), the program
built from them (``prepare``), user errors turned into one message and exit 2
(``guarded``), and the end of a checked run (``finish``).

The command modules (commands.py, higher.py, jvp.py, batch.py, plot.py, minimize.py)
import these publicly; none imports another command module's private helpers.
"""
from __future__ import annotations

import sys

import typer

from ..errors import GradcliError, InputError, LimitError


class Settings:
    """A command's options by name (the options a command lacks take these defaults)."""
    check = symbolic = no_watch_accessed = csv = skip_bad_rows = False
    rtol = atol = wrt = watch = params = at = output = chunk = check_rows = seed = None
    graph = None
    columns = keep = delimiter = None
    no_header = debug_nans = explain = explain_all = False
    check_timeout = 5.0
    unconnected = "none"

    def __init__(self, **options):
        self.__dict__.update(options)


def split(values: list | None, option: str = "--wrt") -> list | None:
    """``--wrt a,b --wrt c`` -> ['a', 'b', 'c']. An empty name (``--params ''``,
    ``--wrt ','``, ``--wrt 'x,'``) is refused as an unknown one is: it selected nothing,
    silently, and the output said the tape watched nothing.

    >>> split(["a, b", "c"])
    ['a', 'b', 'c']
    """
    if values is None:
        return None
    names = []
    for value in values:
        parts = [part.strip() for part in value.split(",")]
        if not all(parts):
            what = "names nothing" if not any(parts) else "has an empty name"
            raise InputError(f"{option} {value!r} {what}: give NAME[,NAME...]")
        names += parts
    return names


def refuse(message: str) -> None:
    """Raise ``message`` as a user error (for use inside ``guarded``)."""
    raise GradcliError(message)


def _fail(err: GradcliError) -> None:
    sys.stderr.write(err.render() + "\n")
    raise typer.Exit(2)


def prepare(s: Settings):
    """Text and declarations -> a built model (every user error is a GradcliError)."""
    from ..lang.evaluate import build
    from ..lang.parser import parse_program
    from ..lang.source import read_program
    from ..lang.values import Declarations
    if s.json_out and s.plain:
        raise GradcliError("--json and --plain cannot be used together")
    text = read_program(s.program)
    program = parse_program(text)
    decls = Declarations.from_options(var=s.var or (), frozen=s.frozen or (), arg=s.arg or ())
    return build(program, decls, dtype=s.dtype, target=s.target)


def mode_options(s: Settings):
    """The four modes' options (--wrt, --watch, --no-watch-accessed, --unconnected,
    --params) as ``run.modes.ModeOptions``."""
    from ..run.modes import ModeOptions
    return ModeOptions(wrt=split(s.wrt), watch=split(s.watch, "--watch") or [],
                       watch_accessed=not s.no_watch_accessed, unconnected=s.unconnected,
                       params=split(s.params, "--params"))


def guarded(work):
    """Run ``work()``; user errors -> exit 2 with the caret message; never a traceback."""
    import numpy as np
    try:
        with np.errstate(all="ignore"):
            return work()
    except GradcliError as err:
        _fail(err)
    except (MemoryError, RecursionError) as err:
        _fail(LimitError(f"the program is too large to evaluate ({type(err).__name__})"))
    except typer.Exit:
        raise
    except Exception as err:  # a bug or an unforeseen input: still one clear line
        _fail(GradcliError(f"could not evaluate the program: {type(err).__name__}: {err}"))


def observed(s: Settings, model, compute) -> tuple:
    """``compute()`` (a mode run on ``model``) -> ``(outcome, explanation)``, watched by
    engine observers: operations at a kink get a note (run/kinks.py); ``--debug-nans``:
    the first nan or inf stops the run with the report (run/nonfinite.py) on standard
    error and exit 1, and without it a non-finite result gets a note suggesting it;
    ``--explain``/``--explain-all``: the explanation (run/explain.py), else None."""
    from ..engine.core.observe import NonFiniteError
    from ..run import nonfinite
    from ..run.kinks import watching
    explaining = s.explain or s.explain_all
    try:
        with watching(model, explain=s.explain, explain_all=s.explain_all,
                      graph=s.graph is not None, debug_nans=s.debug_nans) as (kinks, recorder):
            outcome = compute()
    except NonFiniteError as err:
        sys.stderr.write(nonfinite.report(err, model.program.source) + "\n")
        raise typer.Exit(1) from None
    if hasattr(outcome, "notes"):
        outcome.notes.extend(kinks.notes())
        nonfinite.note_non_finite(outcome)
    if s.graph is not None:
        from ..run import graph
        s.drawn = graph.build(recorder, model, outcome)
    if not explaining:
        return outcome, None
    from ..run.explain import explain
    return outcome, explain(recorder, model, outcome, show_all=s.explain_all)


def check_graph(s: Settings) -> None:
    """--graph PATH: a usable PATH (and not a tree on standard output with --json),
    before any work."""
    if s.graph is None:
        return
    from ..run.graph import check_path
    if check_path(s.graph) == "tree" and s.json_out:
        raise InputError("--graph - prints a tree after the result; with --json give a "
                         "file (--graph graph.dot)")


def write_graph(s: Settings) -> None:
    """--graph PATH, after the result: the file, or the tree for '-'. A picture format
    that cannot be drawn is one message and exit 2 (the result is printed already)."""
    drawn = getattr(s, "drawn", None)
    if drawn is None:
        return
    from ..run.graph import write
    lines = guarded(lambda: write(drawn, s.graph))
    if lines is not None:
        sys.stdout.write("".join(line + "\n" for line in lines))


def print_explanation(s: Settings, explanation: dict | None) -> None:
    """--explain's text after the result (human and plain; JSON has it as a key)."""
    if explanation is not None and not s.json_out:
        from ..run.explain import explain_lines
        sys.stdout.write("".join(line + "\n" for line in explain_lines(explanation)))


def check_outcome(s: Settings, model, outcome) -> dict:
    """``--check`` of one mode's outcome (sympy and finite differences)."""
    from ..check.compare import check_outcome as check
    return check(model, outcome, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)


def symbolic_texts(s: Settings, model, outcome) -> dict:
    """``--symbolic``: each gradient's symbolic derivative (sympy)."""
    from ..check.compare import symbolic_texts as texts
    return texts(model, outcome, timeout=s.check_timeout)


def computed_and_checked(s: Settings, compute, checker: str) -> tuple:
    """A command's work under ``guarded``: ``compute(s)`` gives ``(model, result)``, and
    with ``--check`` the function named ``checker`` of ``gradcli.check`` (as
    ``"higher.check_jacobian"``, imported only then) checks the result. Gives
    ``(model, result, check)``, the check None without ``--check``."""
    def work():
        model, result = compute(s)
        check = None
        if s.check:
            from importlib import import_module
            module, name = checker.rsplit(".", 1)
            check = getattr(import_module(f"gradcli.check.{module}"), name)(
                model, result, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)
        return model, result, check
    return guarded(work)


def finish(check: dict | None, plain: bool = False) -> None:
    """The end of a checked run: with ``--plain`` what failed goes to standard error (the
    plain numbers are out); a mismatch is exit 1."""
    if plain:
        from . import render
        render.print_check_failures({"": check})
    # Only a mismatch fails: "nothing to check" is said, not failed (as the four modes).
    if check is not None and check["verdict"] == "mismatch":
        raise typer.Exit(1)


def compare_modes(s: Settings, model) -> tuple[dict, dict, dict]:
    """The four modes on one model (an error is that mode's message), each checked and
    given its symbolic form when asked: compare's rows, with or without --tangent."""
    from ..run.modes import MODES, run_mode

    results, checks, symbolics = {}, {}, {}
    for mode in MODES:
        try:
            results[mode] = run_mode(mode, model, mode_options(s))
        except GradcliError as err:
            results[mode] = err.message
            continue
        if s.check:
            checks[mode] = check_outcome(s, model, results[mode])
        if s.symbolic:
            symbolics[mode] = symbolic_texts(s, model, results[mode])
    return results, checks, symbolics


def print_compare_plain(results: dict, precision: int | None) -> None:
    """compare's rows in --plain: each mode's lines, labelled (``tape value 31.0``,
    ``tape gradient w1 5.0``: io/writers/plain.py), or ``MODE error: MESSAGE``."""
    from ..io.writers import plain
    for mode, result in results.items():
        if isinstance(result, str):
            sys.stdout.write(f"{mode} error: {result}\n")
        else:
            plain.write(result.report(), precision, labelled=True)


def compare_json(results: dict, checks: dict | None = None,
                 symbolics: dict | None = None) -> dict:
    """``compare --json``: one object per mode, ``{"error": ...}`` for a refusal."""
    from ..io.writers.json import as_json
    return {mode: ({"error": result} if isinstance(result, str) else as_json(result.report(
        (checks or {}).get(mode), (symbolics or {}).get(mode))))
            for mode, result in results.items()}
