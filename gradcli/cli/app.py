"""The ``gradcli`` command: each command parses, evaluates in a mode, checks if asked,
and renders. All math lives below this layer.

Errors a user can make become one message on standard error and exit code 2, with
nothing on standard output; a ``--check`` mismatch is exit code 1.
"""
from __future__ import annotations

import inspect
import sys
from typing import Annotated, NamedTuple, Optional

from ..startup import pause_collector, resume_collector

_collecting = pause_collector()  # until the end of this module: see gradcli/startup.py

import typer  # noqa: E402

from .. import __version__  # noqa: E402
from ..errors import GradcliError  # noqa: E402
from .common import Settings  # noqa: E402
from .options import (BATCH, REDUCE, CHECK, CRITICAL, DECLARATIONS, DIFF, DIFF_OUTPUT,  # noqa: E402
                      GRAD, HIGHER_CHECK, IDIFF, INSIDE, JACOBIAN_MODE, ORDER, OUTPUT, PROGRAM,
                      SOURCES, TANGENTS, TAPE, option)

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


# ---------------------------------------------------------------------------------------
# The command table: one record per command, registered once (git.c's
# ``{ "add", cmd_add, RUN_SETUP }``). A new command is one run function and one row.
# ---------------------------------------------------------------------------------------
class Command(NamedTuple):
    """A command: its ``name``; its ``options`` (the signature typer reads: a list of
    parameters from cli/options.py, or "module:NAME" of a list a command module declares,
    read only when typer builds the command); ``run``, "module:function" in gradcli.cli
    taking the options as ``Settings``, imported only when the command runs; ``check``,
    the function ``--check`` runs ("check.module.function" in gradcli; None: no
    --check); ``result``, the type the run computes and renders ("run.module.Type");
    ``help`` and ``example``; ``context``, click's settings (a program may start
    with "-", as '-x**2 + 1': unknown options are taken as arguments, so it reaches the
    parser instead of being refused as an option); and ``at``, the per-point function
    ``--at`` maps over the rows ("run.module.function" in gradcli, called as
    ``function(model=model, **arguments)`` with the arguments the run function gives;
    None: no --at), its result a ``result`` whose rows run/many.py evaluates and
    ``check`` checks at sampled rows."""
    name: str
    options: list | str
    run: str
    check: str | None
    result: str | None
    help: str
    example: str
    context: dict
    at: str | None = None


def _program(*extra: list) -> list:
    """A program command's options: PROGRAM, the declarations, ``extra``, the output."""
    return [PROGRAM] + DECLARATIONS + [o for group in extra for o in group] + OUTPUT


_PROGRAM_CONTEXT = {"ignore_unknown_options": True, "help_option_names": ["--help"]}
_RANGE_CONTEXT = {"ignore_unknown_options": True}  # (-h is plot's and minimize's help)
_FUNCTIONS_JSON = option("json_out", Annotated[bool, typer.Option(
    "--json", help="Print JSON.")], False)

# In the order ``gradcli --help`` lists them.
COMMANDS = [
    Command("plot", "plot:PARAMETERS", "plot:run", None, "cli.plot.Plot",
            "Plot f and its derivatives over a range (one --arg or --var given as a:b or "
            "linspace(a, b, n)), or a contour plot with the gradient field for two: in the "
            "terminal, as an image (--output), or as a table (--csv, --json). Needs the "
            "extra gradcli[plot] to draw.",
            "gradcli plot 'x^2*sin(x)' --arg x=-3:3 --order 2", _RANGE_CONTEXT),
    Command("minimize", "minimize:PARAMETERS", "minimize:run", None,
            "run.optimize.Result",
            "Minimise the program's scalar target over its trainable variables with "
            "implicit_value_and_gradients at every step: sgd, momentum, adam (the "
            "tf.keras.optimizers rules) or lbfgs (scipy, the extra gradcli[optimize]).",
            "gradcli minimize '(1 - x)^2 + 100*(y - x^2)^2' --var x=-1.2 --var y=1 "
            "--optimizer lbfgs", _RANGE_CONTEXT),
    Command("tape", _program(TAPE, CHECK, INSIDE, BATCH, REDUCE), "commands:tape", "check.compare.check_outcome",
            "run.modes.Outcome", HELP["tape"], EXAMPLES["tape"], _PROGRAM_CONTEXT,
            "run.modes.run_mode"),
    Command("grad", _program(GRAD, ORDER, CHECK, INSIDE, BATCH, REDUCE), "commands:grad",
            "check.compare.check_outcome", "run.modes.Outcome", HELP["grad"], EXAMPLES["grad"],
            _PROGRAM_CONTEXT, "run.modes.run_mode"),
    Command("implicit", _program(CHECK, INSIDE, BATCH), "commands:implicit", "check.compare.check_outcome",
            "run.modes.Outcome", HELP["implicit"], EXAMPLES["implicit"], _PROGRAM_CONTEXT,
            "run.modes.run_mode"),
    Command("value-grad", _program(CHECK, INSIDE, BATCH, REDUCE), "commands:value_grad",
            "check.compare.check_outcome", "run.modes.Outcome", HELP["value-grad"],
            EXAMPLES["value-grad"], _PROGRAM_CONTEXT, "run.modes.run_mode"),
    Command("compare", _program(TAPE, GRAD, CHECK, TANGENTS), "commands:compare",
            "check.compare.check_outcome", "run.modes.Outcome", HELP["compare"], EXAMPLES["compare"],
            _PROGRAM_CONTEXT),
    Command("jacobian", _program(SOURCES, JACOBIAN_MODE, HIGHER_CHECK, BATCH),
            "commands:jacobian", "check.higher.check_jacobian", "run.derivatives.JacobianResult",
            "The Jacobian of the target (any shape) with respect to each source: shape "
            "target.shape + source.shape, with the target's value.",
            "gradcli jacobian '[x*y, sin(x)]' --arg x=1 --arg y=2 --json", _PROGRAM_CONTEXT,
            "run.derivatives.jacobian"),
    Command("hessian", _program(SOURCES, HIGHER_CHECK, BATCH), "commands:hessian",
            "check.higher.check_hessian", "run.derivatives.HessianResult",
            "The Hessian of a scalar target over the flattened sources, with the "
            "gradient and the value, and what it means at the point: eigenvalues, "
            "critical point or not, minimum, maximum, saddle or degenerate.",
            "gradcli hessian '(1-x)^2 + 100*(y-x^2)^2' --arg x=1 --arg y=1   # minimum",
            _PROGRAM_CONTEXT, "run.derivatives.hessian"),
    Command("functions", [_FUNCTIONS_JSON], "commands:functions", None,
            "run.functions.FunctionTable",
            "The function table: name, aliases, derivative, domain.",
            "gradcli functions --json", {"help_option_names": ["--help"]}),
    Command("jvp", _program(TANGENTS, HIGHER_CHECK, INSIDE[:3], BATCH), "commands:jvp",
            "check.directional.check_jvp", "run.directional.JvpOutcome",
            "tf.autodiff.ForwardAccumulator: the directional derivative of the target "
            "along the --tangent values (forward mode, one pass), with the value.",
            "gradcli jvp 'x^2 * y' --arg x=3 --arg y=2 --tangent x=1 --json",
            _PROGRAM_CONTEXT, "run.directional.jvp"),
    Command("diff", [PROGRAM] + DECLARATIONS + DIFF + DIFF_OUTPUT, "diff:run", None,
            "run.formulas.Formulas",
            "The derivatives as formulas, without a point: the program's free names are "
            "its variables. Simplified by sympy, printed in gradcli's notation (they paste "
            "back as programs), each one checked against the tape at random points; with "
            "--arg values, the number there too.",
            "gradcli diff 'x^3 - 3*x'   # d/dx = 3*x^2 - 3", _PROGRAM_CONTEXT),
    Command("critical", [PROGRAM] + DECLARATIONS + CRITICAL + DIFF_OUTPUT, "critical:run",
            None, "run.critical.Critical",
            "The critical points of a scalar program in a box (a range per variable, as "
            "plot takes them): Newton's method on the gradient from a grid of starts, "
            "each point once, classified by the Hessian (minimum, maximum, saddle, "
            "degenerate); sympy's exact solutions too where it finds them in time.",
            "gradcli critical 'x^3 - 3*x' --arg x=-3:3", _PROGRAM_CONTEXT),
    Command("idiff", [PROGRAM] + [o for o in DECLARATIONS if o.name != "target"] + IDIFF
            + DIFF_OUTPUT, "diff:run_idiff", None, "run.formulas.Formulas",
            "Implicit differentiation of an equation LEFT = RIGHT: dy/dx (and d2y/dx2 "
            "with --order 2) as formulas, simplified and checked against the tape (-F_x/F_y "
            "by nested tapes); with values on the curve, the numbers there.",
            "gradcli idiff 'x^3 + y^3 = 6*x*y' --dep y --wrt x", _PROGRAM_CONTEXT),
]
_COMMANDS = {command.name: command for command in COMMANDS}  # name -> record


def _load(reference: str):
    """ "module:NAME" in gradcli.cli -> the object, importing the module now."""
    from importlib import import_module
    module, name = reference.split(":")
    return getattr(import_module(f"{__package__}.{module}"), name)


class _Callback:
    """What typer registers for a command: its signature is the record's options, and a
    call runs the record's ``run`` on them. The options and the run function are read
    only when typer builds the command (plot's and minimize's modules, matplotlib and
    scipy are not paid for by the other commands' start-up)."""

    def __init__(self, command: Command):
        self.command = command

    def _parameters(self) -> list:
        options = self.command.options
        return _load(options) if isinstance(options, str) else options

    @property
    def __signature__(self):
        return inspect.Signature(self._parameters())

    @property
    def __annotations__(self):
        return {p.name: p.annotation for p in self._parameters()}

    def __call__(self, **kwargs):
        # (a failed write is carried past click: _output_flushed)
        _output_flushed(lambda: _load(self.command.run)(Settings(**kwargs)))


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with the one command ``only``: click builds
    each command's options at every start, and a run needs only its own (5 ms of the
    start-up budget)."""
    new = typer.Typer(cls=_Group, **_APP_SETTINGS)
    new.callback()(_main)
    for command in COMMANDS:
        if only is None or command.name == only:
            new.command(command.name, cls=_Command, help=command.help,
                        epilog=f"Example: {command.example}",
                        context_settings=command.context)(_Callback(command))
    return new


resume_collector(_collecting)


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
    ``main()`` itself raises ``SystemExit`` as before, for tests and embedders.

    First, the library is imported as the process's start-up tricks want it (they live
    here, in the entry point, and at the top of this module; gradcli/startup.py): numpy
    first, then the engine, while the cyclic collector pauses. Imported from deep inside
    gradcli.engine.core instead (a chain of partly imported packages), numpy's typing
    modules took ~9 ms more (numpy 2.4, Python 3.11; benchmarks/run.py --only cli)."""
    _reopen_closed_streams()
    collecting = pause_collector()
    try:
        import numpy  # noqa: F401
        from ..engine import FUNCTIONS  # noqa: F401
    finally:
        resume_collector(collecting)
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
