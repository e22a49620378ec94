"""The commands' options, declared once as ``inspect.Parameter`` values and composed into
each command's signature by the command table (``app.COMMANDS``): typer reads a
command's options from the signature it is given.

Option groups: ``PROGRAM``, ``DECLARATIONS`` (--var, --frozen, --arg, --target),
``OUTPUT`` (--json, --plain, --precision, --dtype), ``CHECK``, ``TAPE``, ``GRAD``,
``BATCH`` (--at and its options, ``CSV_SOURCE`` included), ``SOURCES``, ``JACOBIAN_MODE``,
``ORDER``, ``HIGHER_CHECK``, ``TANGENTS`` and ``INSIDE`` (seeing inside a gradient).
"""
from __future__ import annotations

import inspect
from typing import Annotated, List, Optional

import typer

_KW = inspect.Parameter.KEYWORD_ONLY


def option(name: str, annotation, default) -> inspect.Parameter:
    """A keyword option of a command's signature: ``name`` is its Python name."""
    return inspect.Parameter(name, _KW, default=default, annotation=annotation)


PROGRAM = inspect.Parameter(
    "program", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[str, typer.Argument(
        metavar="PROGRAM", show_default=False,
        help="The program: its text, '-' for standard input, or @path for a file.")])

DECLARATIONS = [
    option("var", Annotated[Optional[List[str]], typer.Option(
        "--var", metavar="NAME=VALUE", show_default=False,
        help="A trainable variable (repeatable). VALUE: 2, [1, 2], linspace(0, 1, 5), "
             "or @file.npy/.csv/.txt.")], None),
    option("frozen", Annotated[Optional[List[str]], typer.Option(
        "--frozen", metavar="NAME=VALUE", show_default=False,
        help="A variable with trainable=False (repeatable).")], None),
    option("arg", Annotated[Optional[List[str]], typer.Option(
        "--arg", metavar="NAME=VALUE", show_default=False,
        help="An argument of the function, in the order given (repeatable).")], None),
    option("target", Annotated[Optional[str], typer.Option(
        "--target", metavar="NAME", show_default=False,
        help="Differentiate this named value instead of the last statement.")], None),
]

OUTPUT = [
    option("json_out", Annotated[bool, typer.Option(
        "--json", help="Print one JSON object.")], False),
    option("plain", Annotated[bool, typer.Option(
        "--plain", help="Print bare numbers: the value (if any), then one line per "
                        "gradient.")], False),
    option("precision", Annotated[Optional[int], typer.Option(
        "--precision", min=1, max=17, metavar="N", show_default=False,
        help="Significant digits in human and plain output (default: shortest exact).")],
        None),
    option("dtype", Annotated[str, typer.Option(
        "--dtype", metavar="float64|float32", help="Precision of the computation.")],
        "float64"),
]

def finite_tolerance(ctx: typer.Context, param: typer.CallbackParam,
                      value: Optional[float]) -> Optional[float]:
    """--rtol/--atol: nan or inf would judge nothing (nan fails every comparison, a false
    mismatch; inf passes everything), so they are refused with the negative ones."""
    import math
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number (a tolerance must be a "
                                 "finite number >= 0)", ctx=ctx, param=param)
    return value


CHECK = [
    option("check", Annotated[bool, typer.Option(
        "--check", help="Cross-check every gradient with sympy and finite differences; "
                        "exit 1 on a mismatch.")], False),
    option("symbolic", Annotated[bool, typer.Option(
        "--symbolic", help="Also print each symbolic derivative (sympy).")], False),
    option("rtol", Annotated[Optional[float], typer.Option(
        "--rtol", min=0.0, show_default=False, callback=finite_tolerance,
        help="Relative tolerance of --check.")], None),
    option("atol", Annotated[Optional[float], typer.Option(
        "--atol", min=0.0, show_default=False, callback=finite_tolerance,
        help="Absolute tolerance of --check.")], None),
    option("check_timeout", Annotated[float, typer.Option(
        "--check-timeout", min=0.1, max=3600.0, metavar="SECONDS",
        help="Time allowed for the whole check (sympy and finite differences); what has "
             "not finished by then is reported as skipped.")], 5.0),
]

TAPE = [
    option("wrt", Annotated[Optional[List[str]], typer.Option(
        "--wrt", metavar="NAME[,NAME...]", show_default=False,
        help="The sources (default: every watched value, in declaration order). Any name "
             "of the program, intermediate assignments included.")], None),
    option("watch", Annotated[Optional[List[str]], typer.Option(
        "--watch", metavar="NAME", show_default=False,
        help="Watch an argument or a frozen variable (repeatable).")], None),
    option("no_watch_accessed", Annotated[bool, typer.Option(
        "--no-watch-accessed",
        help="Watch only what --watch names (watch_accessed_variables=False).")], False),
    option("unconnected", Annotated[str, typer.Option(
        "--unconnected", metavar="none|zero",
        help="Gradient of a source the target does not reach: null, or zeros.")], "none"),
]

BATCH = [
    option("at", Annotated[Optional[str], typer.Option(
        "--at", metavar="SOURCE", show_default=False,
        help="Many points: run at every row of @points.csv or .tsv (a header names what "
             "each column sets: x, W[0,1]; see --columns), @x.npy, @p.npz, @p.jsonl, or - "
             "(standard input, CSV or JSON Lines). One output per row, in order; rows "
             "count from 0.")], None),
    option("csv", Annotated[bool, typer.Option(
        "--csv", help="With --at: a CSV table (row, the point's columns, value, d_x...).")],
        False),
    option("output", Annotated[Optional[str], typer.Option(
        "--output", metavar="PATH", show_default=False,
        help="With --at: write the rows to PATH (format from .jsonl, .csv or .txt).")],
        None),
    option("chunk", Annotated[Optional[int], typer.Option(
        "--chunk", min=1, max=10_000_000, metavar="N", show_default=False,
        help="With --at: rows read, computed and written at a time (default: by size, up "
             "to 16384).")], None),
    option("skip_bad_rows", Annotated[bool, typer.Option(
        "--skip-bad-rows", help="With --at: record a row that cannot be read or computed "
                                "as an error in its output and carry on (default: stop, "
                                "exit 2).")], False),
    option("check_rows", Annotated[Optional[int], typer.Option(
        "--check-rows", min=1, max=10_000, metavar="N", show_default=False,
        help="With --at --check: how many random rows to cross-check (default 5).")], None),
    option("seed", Annotated[Optional[int], typer.Option(
        "--seed", min=0, max=2**63 - 1, metavar="N", show_default=False,
        help="With --at --check: the seed of the random choice of rows.")], None),
]
#: How to read a CSV or TSV source (gradcli/io/columns.py); minimize takes all but --keep.
CSV_SOURCE = [
    option("columns", Annotated[Optional[List[str]], typer.Option(
        "--columns", metavar="NAME=COLUMN[,...]", show_default=False,
        help="With --at CSV: only these columns set names: NAME=COLUMN (a header name, or "
             "a number from 1), a bare NAME for its own column, NAME=FIRST:LAST for an "
             "array's elements in C order; the other columns are left out.")], None),
    option("keep", Annotated[Optional[List[str]], typer.Option(
        "--keep", metavar="COLUMN[,...]", show_default=False,
        help="With --at CSV: pass these columns through to every output, as text "
             "(LABEL=COLUMN names the output column).")], None),
    option("delimiter", Annotated[Optional[str], typer.Option(
        "--delimiter", metavar="CHAR", show_default=False,
        help="With --at CSV: the field separator (default ',', a tab for .tsv; 'tab' or "
             "'\\t' for a tab).")], None),
    option("no_header", Annotated[bool, typer.Option(
        "--no-header", help="With --at CSV: the first line is data; --columns names "
                            "columns by number (x=1,y=2).")], False),
]
BATCH += CSV_SOURCE
#: Past one process (cli/scale.py): every --at command runs on a Dask cluster.
BATCH.append(option("dask", Annotated[Optional[str], typer.Option(
    "--dask", metavar="SCHEDULER", show_default=False,
    help="With --at: run each partition of the source as a task on Dask: local (a worker "
         "process per core), local:N, or a scheduler's address tcp://host:8786 (default: "
         "$GRADCLI_DASK).")], None))
#: tape, grad and value-grad: one value and gradient over all rows (cli/scale.py).
REDUCE = [
    option("reduce", Annotated[Optional[str], typer.Option(
        "--reduce", metavar="mean|sum", show_default=False,
        help="With --at: one value and gradient, of the mean (or sum) of the target over "
             "all rows (partial sums per partition, combined by a tree).")], None),
]

GRAD = [
    option("params", Annotated[Optional[List[str]], typer.Option(
        "--params", metavar="NAME[,NAME...]", show_default=False,
        help="The arguments to differentiate, by names or indices (default: all, in "
             "order).")], None),
]

SOURCES = [option("wrt", Annotated[Optional[List[str]], typer.Option(
    "--wrt", metavar="NAME[,NAME...]", show_default=False,
    help="The sources: arguments or variables (default: the arguments, then the "
         "trainable variables, in declaration order).")], None)]
JACOBIAN_MODE = [option("mode", Annotated[str, typer.Option(
    "--mode", metavar="rev|fwd|auto",
    help="Reverse mode (a backward pass per target element), forward mode (a pass per "
         "source element), or auto (forward when the sources are smaller).")], "rev")]
ORDER = [option("order", Annotated[Optional[int], typer.Option(
    "--order", metavar="N", show_default=False,
    help="The N-th derivative (1 to 10) of a function of scalar arguments: the pure "
         "partials, by gradients_function nested N times.")], None)]
HIGHER_CHECK = [o for o in CHECK if o.name != "symbolic"]
TANGENTS = [option("tangent", Annotated[Optional[List[str]], typer.Option(
    "--tangent", metavar="NAME=VALUE", show_default=False,
    help="The direction: a tangent for an argument or variable (repeatable; others are "
         "held constant). VALUE as for --arg; one number fills an array.")], None)]
#: Seeing inside a gradient (issue 23): tape, grad, implicit and value-grad; jvp takes
#: all but --graph (``INSIDE[:3]``). --debug-nans, --explain, --explain-all, --graph.
INSIDE = [option("debug_nans", Annotated[bool, typer.Option(
    "--debug-nans", help="Stop at the first operation whose value (forward pass) or "
                         "gradient (backward pass) is nan or inf: exit 1 with a caret into "
                         "the program, its inputs and a hint.")], False),
    option("explain", Annotated[bool, typer.Option(
        "--explain", help="After the result, the computation as the engine saw it: each "
                          "recorded operation with its program text and value, then the "
                          "backward pass with each adjoint and rule (the first and last "
                          "10 of each).")], False),
    option("explain_all", Annotated[bool, typer.Option(
        "--explain-all", help="--explain with every operation.")], False),
    option("graph", Annotated[Optional[str], typer.Option(
        "--graph", metavar="PATH", show_default=False,
        help="The recorded graph: PATH.dot (Graphviz source), .svg/.png/.pdf (needs the "
             "extra gradcli[graph] and Graphviz's dot), or - for a tree after the "
             "result.")], None)]

#: gradcli diff (derivatives as formulas): the declarations and output of the other
#: commands (without --dtype: the formulas are verified in float64), and these.
DIFF = [
    option("wrt", Annotated[Optional[List[str]], typer.Option(
        "--wrt", metavar="NAME[,NAME...]", show_default=False,
        help="The variables to differentiate by (default: every variable: the program's "
             "free names, --arg, --var and its Variables).")], None),
    option("order", Annotated[Optional[int], typer.Option(
        "--order", metavar="N", show_default=False,
        help="Every N-th partial derivative (1 to 6), each distinct one once (N=2: the "
             "Hessian's upper triangle).")], None),
    option("partial", Annotated[Optional[List[str]], typer.Option(
        "--partial", metavar="NAME[,NAME...]", show_default=False,
        help="One mixed partial: --partial x,x,y is d^3/dx^2dy.")], None),
    option("taylor", Annotated[Optional[List[str]], typer.Option(
        "--taylor", metavar="NAME=VALUE[,NAME=VALUE...]", show_default=False,
        help="The Taylor polynomial at this point instead, to --order N (default 3): its "
             "coefficients from the tape, checked against sympy's series.")], None),
    option("steps", Annotated[bool, typer.Option(
        "--steps", help="The derivation rule by rule (sum, product, quotient, chain, "
                        "power, each table function's rule), each step's derivative "
                        "shown; its last line is checked against the verified formula.")],
        False),
    option("latex", Annotated[bool, typer.Option(
        "--latex", help="Print each formula in LaTeX.")], False),
    option("raw", Annotated[bool, typer.Option(
        "--raw", help="Do not simplify: sympy's derivative as it comes.")], False),
    option("simplify_timeout", Annotated[float, typer.Option(
        "--simplify-timeout", min=0.0, max=3600.0, metavar="SECONDS",
        help="Time allowed for simplifying (the shortest of sympy's simplify, factor and "
             "expand; the raw form where time runs out).")], 2.0),
]
DIFF_OUTPUT = [o for o in OUTPUT if o.name != "dtype"]

#: gradcli critical: the box is given by --arg ranges (DECLARATIONS), and this.
CRITICAL = [
    option("solve_timeout", Annotated[float, typer.Option(
        "--solve-timeout", min=0.0, max=3600.0, metavar="SECONDS",
        help="Time allowed for sympy's exact solutions of grad f = 0 (0: do not try).")],
        1.0),
]

#: gradcli idiff (implicit differentiation of an equation).
IDIFF = [
    option("dep", Annotated[str, typer.Option(
        "--dep", metavar="NAME", show_default=False,
        help="The dependent variable: a function of --wrt along the curve.")], ...),
    option("wrt", Annotated[str, typer.Option(
        "--wrt", metavar="NAME", show_default=False,
        help="The independent variable.")], ...),
    option("order", Annotated[int, typer.Option(
        "--order", metavar="N", help="Up to the N-th derivative (1 to 6).")], 1),
] + [o for o in DIFF if o.name in ("latex", "raw", "simplify_timeout")]
