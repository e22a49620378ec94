"""The ``gradcli`` command: each command parses, evaluates in a mode, checks if asked,
and renders. All math lives below this layer.

Errors a user can make become one message on standard error and exit code 2, with
nothing on standard output; a ``--check`` mismatch is exit code 1.
"""
from __future__ import annotations

import inspect
import sys
from typing import Annotated, List, Optional

from .. import _pause_collector, _resume_collector

_collecting = _pause_collector()  # until the end of this module: see gradcli/__init__.py

import typer  # noqa: E402

from .. import __version__  # noqa: E402
from ..errors import GradcliError, LimitError  # noqa: E402

_APP_SETTINGS = dict(
    name="gradcli", no_args_is_help=True, add_completion=True,
    pretty_exceptions_enable=False, rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Gradients from the command line: TensorFlow 1.x's four eager gradient APIs "
         "(GradientTape, gradients_function, implicit_gradients, "
         "implicit_value_and_gradients) on typed-in programs, cross-checked with sympy and "
         "finite differences.",
    epilog="Example: gradcli value-grad 'w1*x1 + w2*x2' --var w1=2 --var w2=3 "
           "--arg x1=5 --arg x2=7")


def _version(value: bool) -> None:
    if value:
        print(f"gradcli {__version__}")
        raise typer.Exit()


def _main(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the version and exit.")] = None) -> None:
    """gradcli: gradients of typed-in programs."""


class _OutputFailed(Exception):
    """Writing the output failed (a closed pipe, a full disk): the OSError, carried past
    click, which would turn a closed pipe into a silent exit 1."""


def _output_flushed(work) -> None:
    """Run a command and flush what it wrote, so a failed write is seen here."""
    try:
        try:
            work()
        finally:
            sys.stdout.flush()
    except OSError as err:
        raise _OutputFailed(err) from None


def _checked_options(command, ctx, args: list, group: bool = False) -> list:
    """The arguments, with ``-h`` read as ``--help`` and an unknown ``--name`` refused
    with a suggestion. A command takes unknown options as arguments (a program may start
    with "-", as in '-x**2 + 1'), so only tokens shaped like a long option are checked,
    and only before ``--``; ``-h`` is not a click option, since '-sinh(x)' would be one.
    For the ``group``, only the options before the command's name."""
    known: dict = {}
    for param in command.get_params(ctx):
        for name in getattr(param, "opts", []) + getattr(param, "secondary_opts", []):
            known[name] = not getattr(param, "is_flag", True) and not param.count
    checked, i = [], 0
    while i < len(args):
        token = args[i]
        if token == "--" or (group and not token.startswith("-")):
            return checked + args[i:]
        name = token.split("=", 1)[0]
        if token == "-h":
            token = "--help"
        elif name.startswith("--") and name not in known and _looks_like_option(name):
            import difflib  # only on an error: not on the start-up path

            guess = difflib.get_close_matches(name, [n for n in known if n.startswith("--")],
                                              n=1, cutoff=0.6)
            hint = f" (did you mean {guess[0]}?)" if guess else ""
            raise _click().exceptions.UsageError(f"no such option {name}{hint}", ctx)
        elif known.get(name) and "=" not in token and i + 1 < len(args):
            checked += [token, args[i + 1]]  # an option's value, whatever it looks like
            i += 2
            continue
        checked.append(token)
        i += 1
    return checked


def _click():
    """The click that typer runs on (typer 0.26 and later vendor it as typer._click)."""
    import typer.core
    return getattr(typer.core, "_click", None) or typer.core.click


def _looks_like_option(name: str) -> bool:
    return len(name) > 2 and name[2].isalpha() and name[2:].replace("-", "").isalnum()


class _Command(typer.core.TyperCommand):
    """A typer command that reads ``-h`` as help and names unknown options."""

    def parse_args(self, ctx, args: list) -> list:
        return super().parse_args(ctx, _checked_options(self, ctx, list(args)))


class _Group(typer.core.TyperGroup):
    """The ``gradcli`` group: unknown options before the command named in the same way."""

    def parse_args(self, ctx, args: list) -> list:
        return super().parse_args(ctx, _checked_options(self, ctx, list(args), group=True))


# name -> (function, typer.command keyword arguments), filled below.
_COMMANDS: dict = {}


class _Lazy:
    """A command whose code lives in its own module (``gradcli.cli.plot``,
    ``gradcli.cli.minimize``), imported only when typer builds the command -- its own run
    or the full listing -- so that the other commands' start-up does not pay for it, nor
    for matplotlib or scipy. typer reads the signature and annotations of the module's
    ``command`` through these properties."""

    def __init__(self, module: str):
        self.module = module

    def _command(self):
        from importlib import import_module
        return import_module(f"{__package__}.{self.module}").command

    @property
    def __signature__(self):
        return self._command().__signature__

    @property
    def __annotations__(self):
        return self._command().__annotations__

    def __call__(self, **kwargs):
        # (a failed write is carried past click, as for the other commands: _command)
        _output_flushed(lambda: self._command()(**kwargs))


# A program may start with "-": unknown options are taken as arguments (as _command).
_COMMANDS["plot"] = (_Lazy("plot"), dict(
    help="Plot f and its derivatives over a range (one --arg or --var given as a:b or "
         "linspace(a, b, n)), or a contour plot with the gradient field for two: in the "
         "terminal, as an image (--output), or as a table (--csv, --json). Needs the "
         "extra gradcli[plot] to draw.",
    epilog="Example: gradcli plot 'x^2*sin(x)' --arg x=-3:3 --order 2",
    context_settings={"ignore_unknown_options": True}))
_COMMANDS["minimize"] = (_Lazy("minimize"), dict(
    help="Minimise the program's scalar target over its trainable variables with "
         "implicit_value_and_gradients at every step: sgd, momentum, adam (the "
         "tf.keras.optimizers rules) or lbfgs (scipy, the extra gradcli[optimize]).",
    epilog="Example: gradcli minimize '(1 - x)^2 + 100*(y - x^2)^2' --var x=-1.2 --var y=1 "
           "--optimizer lbfgs",
    context_settings={"ignore_unknown_options": True}))


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with the one command ``only``: click builds
    each command's options at every start, and a run needs only its own (5 ms of the
    start-up budget)."""
    new = typer.Typer(cls=_Group, **_APP_SETTINGS)
    new.callback()(_main)
    for name, (function, settings) in _COMMANDS.items():
        if only is None or name == only:
            new.command(name, cls=_Command, **settings)(function)
    return new


# ---------------------------------------------------------------------------------------
# Options, declared once and composed into each command's signature
# ---------------------------------------------------------------------------------------
_KW = inspect.Parameter.KEYWORD_ONLY


def _opt(name: str, annotation, default) -> inspect.Parameter:
    return inspect.Parameter(name, _KW, default=default, annotation=annotation)


PROGRAM = inspect.Parameter(
    "program", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[str, typer.Argument(
        metavar="PROGRAM", show_default=False,
        help="The program: its text, '-' for standard input, or @path for a file.")])

DECLARATIONS = [
    _opt("var", Annotated[Optional[List[str]], typer.Option(
        "--var", metavar="NAME=VALUE", show_default=False,
        help="A trainable variable (repeatable). VALUE: 2, [1, 2], linspace(0, 1, 5), "
             "or @file.npy/.csv/.txt.")], None),
    _opt("frozen", Annotated[Optional[List[str]], typer.Option(
        "--frozen", metavar="NAME=VALUE", show_default=False,
        help="A variable with trainable=False (repeatable).")], None),
    _opt("arg", Annotated[Optional[List[str]], typer.Option(
        "--arg", metavar="NAME=VALUE", show_default=False,
        help="An argument of the function, in the order given (repeatable).")], None),
    _opt("target", Annotated[Optional[str], typer.Option(
        "--target", metavar="NAME", show_default=False,
        help="Differentiate this named value instead of the last statement.")], None),
]

OUTPUT = [
    _opt("json_out", Annotated[bool, typer.Option(
        "--json", help="Print one JSON object.")], False),
    _opt("plain", Annotated[bool, typer.Option(
        "--plain", help="Print bare numbers: the value (if any), then one line per "
                        "gradient.")], False),
    _opt("precision", Annotated[Optional[int], typer.Option(
        "--precision", min=1, max=17, metavar="N", show_default=False,
        help="Significant digits in human and plain output (default: shortest exact).")],
        None),
    _opt("dtype", Annotated[str, typer.Option(
        "--dtype", metavar="float64|float32", help="Precision of the computation.")],
        "float64"),
]

def _finite_tolerance(ctx: typer.Context, param: typer.CallbackParam,
                      value: Optional[float]) -> Optional[float]:
    """--rtol/--atol: nan or inf would judge nothing (nan fails every comparison, a false
    mismatch; inf passes everything), so they are refused with the negative ones."""
    import math
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number (a tolerance must be a "
                                 "finite number >= 0)", ctx=ctx, param=param)
    return value


CHECK = [
    _opt("check", Annotated[bool, typer.Option(
        "--check", help="Cross-check every gradient with sympy and finite differences; "
                        "exit 1 on a mismatch.")], False),
    _opt("symbolic", Annotated[bool, typer.Option(
        "--symbolic", help="Also print each symbolic derivative (sympy).")], False),
    _opt("rtol", Annotated[Optional[float], typer.Option(
        "--rtol", min=0.0, show_default=False, callback=_finite_tolerance,
        help="Relative tolerance of --check.")], None),
    _opt("atol", Annotated[Optional[float], typer.Option(
        "--atol", min=0.0, show_default=False, callback=_finite_tolerance,
        help="Absolute tolerance of --check.")], None),
    _opt("check_timeout", Annotated[float, typer.Option(
        "--check-timeout", min=0.1, max=3600.0, metavar="SECONDS",
        help="Time allowed for the whole check (sympy and finite differences); what has "
             "not finished by then is reported as skipped.")], 5.0),
]

TAPE = [
    _opt("wrt", Annotated[Optional[List[str]], typer.Option(
        "--wrt", metavar="NAME[,NAME...]", show_default=False,
        help="The sources (default: every watched value, in declaration order). Any name "
             "of the program, intermediate assignments included.")], None),
    _opt("watch", Annotated[Optional[List[str]], typer.Option(
        "--watch", metavar="NAME", show_default=False,
        help="Watch an argument or a frozen variable (repeatable).")], None),
    _opt("no_watch_accessed", Annotated[bool, typer.Option(
        "--no-watch-accessed",
        help="Watch only what --watch names (watch_accessed_variables=False).")], False),
    _opt("unconnected", Annotated[str, typer.Option(
        "--unconnected", metavar="none|zero",
        help="Gradient of a source the target does not reach: null, or zeros.")], "none"),
]

BATCH = [
    _opt("at", Annotated[Optional[str], typer.Option(
        "--at", metavar="SOURCE", show_default=False,
        help="Many points: run at every row of @points.csv or .tsv (a header names what "
             "each column sets: x, W[0,1]; see --columns), @x.npy, @p.npz, @p.jsonl, or - "
             "(standard input, CSV or JSON Lines). One output per row, in order; rows "
             "count from 0.")], None),
    _opt("csv", Annotated[bool, typer.Option(
        "--csv", help="With --at: a CSV table (row, the point's columns, value, d_x...).")],
        False),
    _opt("output", Annotated[Optional[str], typer.Option(
        "--output", metavar="PATH", show_default=False,
        help="With --at: write the rows to PATH (format from .jsonl, .csv or .txt).")],
        None),
    _opt("chunk", Annotated[Optional[int], typer.Option(
        "--chunk", min=1, max=10_000_000, metavar="N", show_default=False,
        help="With --at: rows read, computed and written at a time (default: by size, up "
             "to 16384).")], None),
    _opt("skip_bad_rows", Annotated[bool, typer.Option(
        "--skip-bad-rows", help="With --at: record a row that cannot be read or computed "
                                "as an error in its output and carry on (default: stop, "
                                "exit 2).")], False),
    _opt("check_rows", Annotated[Optional[int], typer.Option(
        "--check-rows", min=1, max=10_000, metavar="N", show_default=False,
        help="With --at --check: how many random rows to cross-check (default 5).")], None),
    _opt("seed", Annotated[Optional[int], typer.Option(
        "--seed", min=0, max=2**63 - 1, metavar="N", show_default=False,
        help="With --at --check: the seed of the random choice of rows.")], None),
]
#: How to read a CSV or TSV source (gradcli/io/columns.py); minimize takes all but --keep.
CSV_SOURCE = [
    _opt("columns", Annotated[Optional[List[str]], typer.Option(
        "--columns", metavar="NAME=COLUMN[,...]", show_default=False,
        help="With --at CSV: only these columns set names: NAME=COLUMN (a header name, or "
             "a number from 1), a bare NAME for its own column, NAME=FIRST:LAST for an "
             "array's elements in C order; the other columns are left out.")], None),
    _opt("keep", Annotated[Optional[List[str]], typer.Option(
        "--keep", metavar="COLUMN[,...]", show_default=False,
        help="With --at CSV: pass these columns through to every output, as text "
             "(LABEL=COLUMN names the output column).")], None),
    _opt("delimiter", Annotated[Optional[str], typer.Option(
        "--delimiter", metavar="CHAR", show_default=False,
        help="With --at CSV: the field separator (default ',', a tab for .tsv; 'tab' or "
             "'\\t' for a tab).")], None),
    _opt("no_header", Annotated[bool, typer.Option(
        "--no-header", help="With --at CSV: the first line is data; --columns names "
                            "columns by number (x=1,y=2).")], False),
]
BATCH += CSV_SOURCE

GRAD = [
    _opt("params", Annotated[Optional[List[str]], typer.Option(
        "--params", metavar="NAME[,NAME...]", show_default=False,
        help="The arguments to differentiate, by names or indices (default: all, in "
             "order).")], None),
]

EXAMPLES = {
    "tape": ("gradcli tape 'w1*x1 + w2*x2' --var w1=2 --var w2=3 --arg x1=5 --arg x2=7 "
             "--wrt w1   # 5.0"),
    "grad": "gradcli grad 'w1*x1 + w2*x2' --var w1=2 --var w2=3 --arg x1=5 --arg x2=7  # 2.0 3.0",
    "implicit": ("gradcli implicit 'w1*x1 + w2*x2' --frozen w1=2 --var w2=3 --arg x1=5 "
                 "--arg x2=7   # w2: 7.0"),
    "value-grad": ("gradcli value-grad 'w1*x1 + w2*x2' --var w1=2 --var w2=3 --arg x1=5 "
                   "--arg x2=7 --json"),
    "compare": "gradcli compare 'w1*x1 + w2*x2' --var w1=2 --var w2=3 --arg x1=5 --arg x2=7",
}

HELP = {
    "tape": "tf.GradientTape: the gradient of the target with respect to the watched "
            "values (trainable variables read, --watch) or the --wrt sources; prints the "
            "target's value too.",
    "grad": "tfe.gradients_function: the gradient with respect to the program's arguments "
            "(--arg), or the --params subset; variables are constants here; no value.",
    "implicit": "tfe.implicit_gradients: (gradient, variable) pairs for every trainable "
                "variable the program read, in declaration order; no value.",
    "value-grad": "tfe.implicit_value_and_gradients: the value, then the (gradient, "
                  "variable) pairs.",
    "compare": "All four APIs side by side on the same program: what each returns.",
}


class _Settings:
    """A command's options by name (the options a command lacks take these defaults)."""
    check = symbolic = no_watch_accessed = csv = skip_bad_rows = False
    rtol = atol = wrt = watch = params = at = output = chunk = check_rows = seed = None
    columns = keep = delimiter = None
    no_header = False
    check_timeout = 5.0
    unconnected = "none"

    def __init__(self, **options):
        self.__dict__.update(options)


def _split(values: list | None, option: str = "--wrt") -> list | None:
    """``--wrt a,b --wrt c`` -> ['a', 'b', 'c']. An empty name (``--params ''``,
    ``--wrt ','``, ``--wrt 'x,'``) is refused as an unknown one is: it selected nothing,
    silently, and the output said the tape watched nothing.

    >>> _split(["a, b", "c"])
    ['a', 'b', 'c']
    """
    if values is None:
        return None
    names = []
    for value in values:
        parts = [part.strip() for part in value.split(",")]
        if not all(parts):
            what = "names nothing" if not any(parts) else "has an empty name"
            from ..errors import InputError
            raise InputError(f"{option} {value!r} {what}: give NAME[,NAME...]")
        names += parts
    return names


def _fail(err: GradcliError) -> None:
    sys.stderr.write(err.render() + "\n")
    raise typer.Exit(2)


def _prepare(s: _Settings):
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


def _mode_options(s: _Settings):
    from ..run.modes import ModeOptions
    return ModeOptions(wrt=_split(s.wrt), watch=_split(s.watch, "--watch") or [],
                       watch_accessed=not s.no_watch_accessed, unconnected=s.unconnected,
                       params=_split(s.params, "--params"))


def _guarded(work):
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


def _run_mode(mode: str, s: _Settings) -> None:
    from ..run.modes import run_mode
    if s.at is not None:  # many points (issue 12): cli/batch.py, imported only then
        from . import batch
        return batch.run(batch.ModeKind(mode, _guarded(lambda: _mode_options(s))), s,
                         _prepare)
    if s.output is not None or s.csv or s.chunk is not None or s.skip_bad_rows \
            or s.check_rows is not None or s.seed is not None or s.columns or s.keep \
            or s.delimiter is not None or s.no_header:
        from .batch import check_options
        _guarded(lambda: check_options(s))

    def work():
        options = _mode_options(s)  # a malformed option before any file is read
        model = _prepare(s)
        outcome = run_mode(mode, model, options)
        check = _check(s, model, outcome) if s.check else None
        symbolic = _symbolic(s, model, outcome) if s.symbolic else None
        return model, outcome, check, symbolic

    model, outcome, check, symbolic = _guarded(work)
    from . import render
    if s.json_out:
        render.print_json(render.outcome_json(outcome, check, symbolic))
    elif s.plain:
        render.print_plain(outcome, s.precision)
        render.print_check_failures({"": check})
    else:
        render.print_human(outcome, s.precision, check=check, symbolic=symbolic,
                           target=model.target_name)
    # Only a mismatch fails: "nothing to check" is said, not failed (README, --check).
    if check is not None and check["verdict"] == "mismatch":
        raise typer.Exit(1)


def _check(s: _Settings, model, outcome) -> dict:
    from ..check.compare import check_outcome
    return check_outcome(model, outcome, rtol=s.rtol, atol=s.atol, timeout=s.check_timeout)


def _symbolic(s: _Settings, model, outcome) -> dict:
    from ..check.compare import symbolic_texts
    return symbolic_texts(model, outcome, timeout=s.check_timeout)


def _compare_modes(s: _Settings, model) -> tuple[dict, dict, dict]:
    """The four modes on one model (an error is that mode's message), each checked and
    given its symbolic form when asked: compare's rows, with or without --tangent."""
    from ..run.modes import MODES, run_mode

    results, checks, symbolics = {}, {}, {}
    for mode in MODES:
        try:
            results[mode] = run_mode(mode, model, _mode_options(s))
        except GradcliError as err:
            results[mode] = err.message
            continue
        if s.check:
            checks[mode] = _check(s, model, results[mode])
        if s.symbolic:
            symbolics[mode] = _symbolic(s, model, results[mode])
    return results, checks, symbolics


def _compare_plain(results: dict, precision: int | None) -> None:
    """compare's rows in --plain: each mode's lines, labelled (``tape value 31.0``,
    ``tape gradient w1 5.0``: render.plain_lines), or ``MODE error: MESSAGE``."""
    from . import render
    for mode, result in results.items():
        if isinstance(result, str):
            sys.stdout.write(f"{mode} error: {result}\n")
        else:
            render.print_plain(result, precision, labelled=True)


def _run_compare(s: _Settings) -> None:
    def work():
        _mode_options(s)  # a malformed option is the command's error, not one mode's
        model = _prepare(s)
        results, checks, symbolics = _compare_modes(s, model)
        return results, checks, symbolics, _jacobian_row(model, results)

    results, checks, symbolics, jacobian = _guarded(work)
    from . import render
    if s.json_out:
        obj = render.compare_json(results, checks, symbolics)
        if jacobian is not None:
            obj["jacobian"] = jacobian.to_json()
        render.print_json(obj)
    elif s.plain:
        _compare_plain(results, s.precision)
        if jacobian is not None:
            jacobian.print_plain(s.precision)
        render.print_check_failures(checks)
    else:
        render.print_compare_human(results, s.precision, checks=checks if s.check else None,
                                   symbolics=symbolics if s.symbolic else None)
        if jacobian is not None:
            jacobian.print_human(s.precision)
    # Only a mismatch fails (as for one mode): "nothing to check" is said, not failed.
    if any(render.check_verdict(check) == "mismatch" for check in checks.values()):
        raise typer.Exit(1)


def _jacobian_row(model, results: dict):
    """compare's jacobian row (cli/higher.py), where the target is not a scalar: there
    the four APIs differentiate the sum of its elements, the Jacobian each element."""
    value = next((r.value for r in results.values()
                  if not isinstance(r, str) and r.value is not None), None)
    if value is None or getattr(value, "ndim", 0) == 0:
        return None
    from .higher import CompareRow
    return CompareRow(model)


def _command(name: str, extra: list, runner):
    def command(**kwargs):
        _output_flushed(lambda: runner(_Settings(**kwargs)))
    params = [PROGRAM] + DECLARATIONS + extra + OUTPUT
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = name.replace("-", "_")
    # A program may start with "-" ('-x**2 + 1'): unknown options are taken as arguments,
    # so it reaches the parser instead of being refused as an option.
    _COMMANDS[name] = (command, dict(help=HELP[name], epilog=f"Example: {EXAMPLES[name]}",
                                     context_settings={"ignore_unknown_options": True,
                                                       "help_option_names": ["--help"]}))


for _mode, _extra in (("tape", TAPE), ("grad", GRAD), ("implicit", []), ("value-grad", [])):
    _command(_mode, _extra + CHECK + BATCH, (lambda m: lambda s: _run_mode(m, s))(_mode))
_command("compare", TAPE + GRAD + CHECK, _run_compare)


# ---------------------------------------------------------------------------------------
# Higher derivatives: jacobian, hessian, grad --order (the work is in cli/higher.py,
# imported only when one of them runs: the other commands' start-up is unchanged)
# ---------------------------------------------------------------------------------------
def _higher(name: str):
    def run(s: _Settings) -> None:
        from . import higher
        getattr(higher, name)(s)
    return run


SOURCES = [_opt("wrt", Annotated[Optional[List[str]], typer.Option(
    "--wrt", metavar="NAME[,NAME...]", show_default=False,
    help="The sources: arguments or variables (default: the arguments, then the "
         "trainable variables, in declaration order).")], None)]
JACOBIAN_MODE = [_opt("mode", Annotated[str, typer.Option(
    "--mode", metavar="rev|fwd|auto",
    help="Reverse mode (a backward pass per target element), forward mode (a pass per "
         "source element), or auto (forward when the sources are smaller).")], "rev")]
ORDER = [_opt("order", Annotated[Optional[int], typer.Option(
    "--order", metavar="N", show_default=False,
    help="The N-th derivative (1 to 10) of a function of scalar arguments: the pure "
         "partials, by gradients_function nested N times.")], None)]
HIGHER_CHECK = [o for o in CHECK if o.name != "symbolic"]
HELP.update({
    "jacobian": "The Jacobian of the target (any shape) with respect to each source: shape "
                "target.shape + source.shape, with the target's value.",
    "hessian": "The Hessian of a scalar target over the flattened sources, with the "
               "gradient and the value, and what it means at the point: eigenvalues, "
               "critical point or not, minimum, maximum, saddle or degenerate."})
EXAMPLES.update({
    "jacobian": "gradcli jacobian '[x*y, sin(x)]' --arg x=1 --arg y=2 --json",
    "hessian": "gradcli hessian '(1-x)^2 + 100*(y-x^2)^2' --arg x=1 --arg y=1   # minimum"})
def _many_or_one(kind: str, arguments, one):
    """A command with ``--at`` (many points: ``cli/batch.py``'s ``kind`` made from
    ``arguments(s)``) or without (``one``)."""
    def run(s: _Settings) -> None:
        from . import batch
        if s.at is None:
            _guarded(lambda: batch.check_options(s))
            return one(s)
        return batch.run(getattr(batch, kind)(*_guarded(lambda: arguments(s))), s, _prepare)
    return run


_command("jacobian", SOURCES + JACOBIAN_MODE + HIGHER_CHECK + BATCH, _many_or_one(
    "JacobianKind", lambda s: (_split(s.wrt), s.mode), _higher("run_jacobian")))
_command("hessian", SOURCES + HIGHER_CHECK + BATCH, _many_or_one(
    "HessianKind", lambda s: (_split(s.wrt),), _higher("run_hessian")))
# grad gains --order N (without it, grad runs as before).
def _grad_or_order(s: _Settings) -> None:
    if s.order is None:
        return _run_mode("grad", s)
    if s.at is not None:
        _guarded(lambda: _refuse("--order and --at cannot be used together yet"))
    from .batch import check_options
    _guarded(lambda: check_options(s))
    return _higher("run_grad_order")(s)


def _refuse(message: str) -> None:
    raise GradcliError(message)


_command("grad", GRAD + ORDER + CHECK + BATCH, _grad_or_order)


def functions(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
              ) -> None:
    from ..engine.ops import CONSTANTS
    from ..engine.table import ORDER, REGISTRY
    from . import render
    entries = [REGISTRY[name] for name in ORDER]

    def work():
        if json_out:
            render.print_json({"functions": render.functions_json(entries), "constants": {
                k: render.json_number(v) for k, v in CONSTANTS.items()}})
        else:
            render.print_functions_human(entries, CONSTANTS)
    _output_flushed(work)


_COMMANDS["functions"] = (functions, dict(
    help="The function table: name, aliases, derivative, domain.",
    epilog="Example: gradcli functions --json",
    context_settings={"help_option_names": ["--help"]}))


# ---------------------------------------------------------------------------------------
# Forward mode: jvp, and compare's jvp row (the work is in cli/jvp.py, imported only when
# one of them runs: the other commands' start-up is unchanged)
# ---------------------------------------------------------------------------------------
def _forward(name: str):
    def run(s: _Settings) -> None:
        from . import jvp
        getattr(jvp, name)(s)
    return run


TANGENTS = [_opt("tangent", Annotated[Optional[List[str]], typer.Option(
    "--tangent", metavar="NAME=VALUE", show_default=False,
    help="The direction: a tangent for an argument or variable (repeatable; others are "
         "held constant). VALUE as for --arg; one number fills an array.")], None)]
HELP["jvp"] = ("tf.autodiff.ForwardAccumulator: the directional derivative of the target "
               "along the --tangent values (forward mode, one pass), with the value.")
EXAMPLES["jvp"] = "gradcli jvp 'x^2 * y' --arg x=3 --arg y=2 --tangent x=1 --json"
_command("jvp", TANGENTS + [o for o in CHECK if o.name != "symbolic"] + BATCH, _many_or_one(
    "JvpKind", lambda s: (s.tangent,), _forward("run_jvp")))
# compare gains a jvp row when --tangent is given (without it, compare runs as before).
_command("compare", TAPE + GRAD + CHECK + TANGENTS, lambda s: _run_compare(s) if not s.tangent
         else _forward("run_compare")(s))
_resume_collector(_collecting)


def __getattr__(name: str):
    """``app``: the typer app with every command (for typer's CliRunner and other tools),
    built when first asked for, since a run builds only its own command (``main``)."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The console script. Exit codes: 0 success, 1 a --check mismatch, 2 bad input or
    output that cannot be written, 130 Ctrl-C, 141 a closed pipe (quietly, as a Unix tool
    killed by SIGPIPE); never a traceback."""
    command = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        code = build_app(command if command in _COMMANDS else None)(standalone_mode=False)
    except KeyboardInterrupt as stop:  # Ctrl-C; SIGTERM while a file is written: 143
        code = getattr(stop, "exit_code", 130)
    except (_OutputFailed, OSError) as err:
        code = _output_failed(err.args[0] if isinstance(err, _OutputFailed) else err)
    except Exception as err:
        exceptions = _click().exceptions
        # typer's own click (typer._click, typer 0.26 and later) has no Abort: typer.Abort
        # is the one it raises; an older typer's click.exceptions.Abort is kept too.
        aborts = tuple(a for a in (getattr(exceptions, "Abort", None), typer.Abort) if a)
        if isinstance(err, exceptions.ClickException):  # usage errors: click's message
            err.show()
            code = err.exit_code
        elif isinstance(err, aborts):
            sys.stderr.write("Aborted!\n")
            code = 1
        else:  # a bug or an unforeseen input outside _guarded: still one clear line
            sys.stderr.write(GradcliError(f"could not run the command: "
                                          f"{type(err).__name__}: {err}").render() + "\n")
            code = 2
    sys.exit(code or 0)


def run() -> None:
    """The process's entry point: the console script and ``python -m gradcli``.

    ``main()``, then the process ends at once (``os._exit``) instead of through the
    interpreter's teardown, which frees every module and object one by one: ~12 ms of a
    ``python -c "import numpy"`` and ~19 ms of a gradcli run, most of what a short command
    costs beyond its imports (issue 14). Nothing a user can see is skipped: the ``atexit``
    handlers run, and standard output and error are flushed first (a closed pipe still
    ends quietly with 141). Every file gradcli writes is closed by its own code. With any
    other thread still running, the process ends the ordinary way, which waits for it.
    ``main()`` itself raises ``SystemExit`` as before, for tests and embedders."""
    _reopen_closed_streams()
    try:
        main()
        code = 0
    except SystemExit as stop:
        code = stop.code
    _end_process(code)


def _reopen_closed_streams() -> None:
    """A standard stream the process was started without (``<&-``, ``>&-``, ``2>&-``:
    Python then sets ``sys.stdin``/``stdout``/``stderr`` to None) gets its descriptor
    back, on /dev/null, so that no file gradcli opens takes descriptor 0, 1 or 2 (where
    anything written to "standard output" would land in it):

    - standard input: open write-only, so it reads nothing; ``sys.stdin`` stays None and
      ``-`` says "there is no standard input";
    - standard output: open read-only, so that writing fails as on a closed descriptor,
      "error: cannot write the output: Bad file descriptor", exit 2 (as ``ls >&-``) --
      and only if something is written: a run with nothing to print keeps its own code;
    - standard error: writes go nowhere (there is nowhere to say anything): exit code
      only."""
    import os
    for fd, name, flags in ((0, "stdin", os.O_WRONLY), (1, "stdout", os.O_RDONLY),
                            (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
            continue  # (open after all: set to None by an embedder, not ours to replace)
        except OSError:
            pass
        try:
            opened = os.open(os.devnull, flags)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
        except OSError:
            continue
        if fd:
            setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace",
                                    closefd=False))


def _end_process(code) -> None:
    """``sys.exit(code)``'s visible effects, then ``os._exit`` (see ``run``)."""
    import atexit
    import os
    threading = sys.modules.get("threading")
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None or (threading is not None and threading.active_count() > 1):
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): the message, and 1
        sys.stderr.write(f"{code}\n")
        code = 1
    run_exitfuncs()
    try:
        sys.stdout.flush()
    except OSError as err:
        code = _output_failed(err)
    except ValueError:  # closed by an embedder: nothing is left to write
        pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code % 256)


def _output_failed(err: OSError) -> int:
    """A closed pipe ends quietly (141); any other failed write is one line (2)."""
    import errno
    import os
    try:  # what is still buffered goes nowhere, instead of failing again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    if err.errno == errno.EPIPE:
        return 141
    sys.stderr.write(f"error: cannot write the output: {err.strerror or err}\n")
    return 2
