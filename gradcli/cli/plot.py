"""``gradcli plot``: f and its derivatives over a range, in the terminal or as an image.

Imported only when ``plot`` runs (or for the full command listing). The sampling lives in
``gradcli.plotting``; drawing needs the optional extra ``gradcli[plot]``: uniplot for the
terminal (small, numpy only, returns the plot as a string with frame and legend, which is
what a test can hold at a fixed width), matplotlib for ``--output``.
"""
from __future__ import annotations

import os
import sys
from typing import Annotated, List, Optional

import typer

from ..errors import InputError
from ..optimize import MissingExtra
from .app import _COMMANDS, PROGRAM, _guarded, _opt, _Settings

HELP = ("Plot f and its derivatives over a range: give one --arg (or --var) as a range "
        "a:b or linspace(a, b, n); the others stay fixed. Draws in the terminal, marks "
        "zeros of f', kinks, jumps and non-finite values and lists them below; --output "
        "writes an image, --csv/--json print the sampled table.")
EXAMPLE = "gradcli plot 'x^2*sin(x)' --arg x=-3:3 --order 2"
FORMATS = (".png", ".svg", ".pdf")

OPTIONS = [
    _opt("var", Annotated[Optional[List[str]], typer.Option(
        "--var", metavar="NAME=VALUE", show_default=False,
        help="A trainable variable (repeatable); a:b makes it the ranged one.")], None),
    _opt("frozen", Annotated[Optional[List[str]], typer.Option(
        "--frozen", metavar="NAME=VALUE", show_default=False,
        help="A variable with trainable=False (repeatable).")], None),
    _opt("arg", Annotated[Optional[List[str]], typer.Option(
        "--arg", metavar="NAME=VALUE", show_default=False,
        help="An argument (repeatable); NAME=a:b or NAME=linspace(a, b, n) is the "
             "horizontal axis.")], None),
    _opt("target", Annotated[Optional[str], typer.Option(
        "--target", metavar="NAME", show_default=False,
        help="Plot this named value instead of the last statement.")], None),
    _opt("points", Annotated[int, typer.Option(
        "--points", min=2, max=100_000, metavar="N",
        help="Samples of an a:b range.")], 400),
    _opt("order", Annotated[int, typer.Option(
        "--order", min=0, max=4, metavar="N", help="Derivatives to draw: f', f'', ...")], 1),
    _opt("output", Annotated[Optional[str], typer.Option(
        "--output", "-o", metavar="PATH.png|.svg|.pdf", show_default=False,
        help="Write an image with matplotlib instead of drawing in the terminal.")], None),
    _opt("csv", Annotated[bool, typer.Option(
        "--csv", help="Print the sampled table as CSV (x, f, df/dx, ...).")], False),
    _opt("json_out", Annotated[bool, typer.Option(
        "--json", help="Print the sampled table and the marked points as JSON.")], False),
    _opt("width", Annotated[Optional[int], typer.Option(
        "--width", min=20, max=1000, show_default=False,
        help="Terminal plot width in characters (default: the terminal's).")], None),
    _opt("height", Annotated[Optional[int], typer.Option(
        "--height", min=5, max=500, show_default=False,
        help="Terminal plot height in lines (default: from the terminal's).")], None),
    _opt("precision", Annotated[Optional[int], typer.Option(
        "--precision", min=1, max=17, metavar="N", show_default=False,
        help="Significant digits of printed numbers (default: shortest exact).")], None),
    _opt("dtype", Annotated[str, typer.Option(
        "--dtype", metavar="float64|float32", help="Precision of the computation.")],
        "float64"),
]


def output_format(path: str) -> str:
    """The image format of ``path`` (refused unless .png, .svg or .pdf)."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise InputError(f"{path}: unsupported image type {extension or '(none)'!r}; "
                         f"use {', '.join(FORMATS)}")
    return extension


def figure_module():
    """matplotlib.pyplot on the file-only Agg backend (no display needed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtra("matplotlib", "plot", "writing an image") from None
    return plt


def column_names(name: str, order: int) -> list[str]:
    """x, f, df/dx, d2f/dx2, ..."""
    return [name, "f"] + [f"d{'' if k == 1 else k}f/d{name}{'' if k == 1 else k}"
                          for k in range(1, order + 1)]


def _find_range(s: _Settings):
    """(kind, name, points, other declarations by kind) for the one ranged declaration."""
    from ..lang.values import parse_declaration
    from ..plotting import parse_range
    found, rest = [], {"var": [], "frozen": [], "arg": []}
    for kind in ("var", "frozen", "arg"):
        for text in getattr(s, kind) or ():
            name, value = parse_declaration(text)
            points = parse_range(value, s.points)
            if points is None:
                rest[kind].append(text)
            else:
                found.append((kind, name, points))
                rest[kind].append(None)  # keeps the argument order
    if not found:
        raise InputError("plot needs one value given as a range: e.g. --arg x=-3:3 or "
                         "--arg x='linspace(-3, 3, 200)'")
    if len(found) > 1:
        raise InputError("plot takes one ranged value (two, for a contour plot, are not "
                         "supported yet): " + ", ".join(n for _, n, _ in found))
    kind, name, points = found[0]
    return kind, name, points, rest


def compute(s: _Settings):
    """The sampled table and the points of interest."""
    from ..lang.evaluate import build
    from ..lang.parser import parse_program
    from ..lang.source import read_program
    from ..lang.values import Declarations
    from ..plotting import points_of_interest, sample
    if sum((s.csv, s.json_out, s.output is not None)) > 1:
        raise InputError("--csv, --json and --output cannot be used together")
    if s.output is not None:
        output_format(s.output)
    kind, name, xs, rest = _find_range(s)
    program = parse_program(read_program(s.program))

    def make_model(text: str):
        options = {k: [f"{name}={text}" if t is None else t for t in texts]
                   for k, texts in rest.items()}
        return build(program, Declarations.from_options(**options), dtype=s.dtype,
                     target=s.target)

    table, how = sample(make_model, name, xs, s.order)
    return name, xs, table, how, points_of_interest(xs, table)


def run(s: _Settings) -> None:
    """Sample, then print the table, write the image or draw in the terminal."""
    name, xs, table, how, points = _guarded(lambda: compute(s))
    from . import render
    names = column_names(name, s.order)
    if s.csv:
        rows = [",".join(names)]
        rows += [",".join(render.number_text(v, s.precision) for v in row)
                 for row in zip(xs, *table)]
        sys.stdout.write("".join(row + "\n" for row in rows))
    elif s.json_out:
        render.print_json({
            "mode": "plot", "argument": name, "order": s.order, "evaluation": how,
            "columns": names,
            "samples": [[render.json_number(v) for v in row] for row in zip(xs, *table)],
            "points": [{"kind": k, "x": render.json_number(x), "f": render.json_number(f)}
                       for k, x, f in points]})
    elif s.output is not None:
        _guarded(lambda: save_image(s.output, name, xs, table, points, s.program))
        sys.stdout.write(f"wrote {s.output}\n")
    else:
        text = _guarded(lambda: terminal_plot(name, xs, table, points, s.program,
                                              s.width, s.height))
        sys.stdout.write(text + "\n")
        _print_points(points, s.precision)


def _size(width, height) -> tuple[int, int]:
    import shutil
    columns, lines = shutil.get_terminal_size((100, 30))
    # uniplot adds the frame, the y labels (about 12 columns) and the legend lines
    return (width if width is not None else max(20, columns - 14),
            height if height is not None else max(8, min(lines - 10, 25)))


def terminal_plot(name, xs, table, points, title, width=None, height=None,
                  color=None) -> str:
    """The curves as text with uniplot: frame, axis labels, legend, marked points."""
    try:
        from uniplot import plot_to_string
    except ImportError:
        raise MissingExtra("uniplot", "plot", "drawing in the terminal") from None
    import numpy as np
    width, height = _size(width, height)
    labels = ["f"] + [column_names(name, len(table) - 1)[k + 1] for k in range(1, len(table))]
    ys, xss, lines = list(table), [xs] * len(table), [True] * len(table)
    if points:
        ys.append(np.array([f for _, _, f in points]))
        xss.append(np.array([x for _, x, _ in points]))
        lines.append(False)
        labels.append("marked points (below)")
    if color is None:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    title = f"{title}  (horizontal axis: {name})"
    shown = title if len(title) <= width else title[:width - 1] + "…"
    finite = [y[np.isfinite(y)] for y in ys if np.any(np.isfinite(y))]
    if not finite:
        raise InputError("nothing to draw: every value is nan or infinite")
    return plot_to_string(ys, xss, lines=lines, legend_labels=labels, width=width,
                          height=height, title=shown, color=color)


def _print_points(points, precision) -> None:
    if not points:
        return
    from rich.table import Table

    from . import render
    table = Table(title="marked points", show_edge=False, header_style="bold")
    for column in ("kind", "x", "f"):
        table.add_column(column)
    for kind, x, f in points:
        table.add_row(kind, render.number_text(x, precision), render.number_text(f, precision))
    render.console().print(table)


def save_image(path, name, xs, table, points, title) -> None:
    """f and its derivatives with matplotlib; zeros of f' as dots, jumps and kinks as
    dotted vertical lines. A PNG carries the axes' pixel box and limits in a text chunk
    ("gradcli-axes"), so that a reader can map data to pixels."""
    import json

    import numpy as np
    extension = output_format(path)
    plt = figure_module()
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    labels = ["f"] + column_names(name, len(table) - 1)[2:]
    for k, (column, label) in enumerate(zip(table, labels)):
        ax.plot(xs, column, color=f"C{k}", label=label, linewidth=1.8)
    for kind, x, f in points:
        if kind in ("minimum", "maximum", "f' = 0"):
            ax.plot([x], [f], "o", color="black", markersize=5)
        else:
            ax.axvline(x, color="gray", linestyle=":", linewidth=1)
    if points:
        ax.plot([], [], "o", color="black", label="f' = 0")
    ax.axhline(0, color="black", linewidth=0.6, alpha=0.5, zorder=0)  # under the curves
    ax.set_xlabel(name)
    ax.set_title(title if len(title) <= 80 else title[:79] + "…")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    finite = np.concatenate([c[np.isfinite(c)] for c in table])
    if finite.size == 0:
        raise InputError("nothing to draw: every value is nan or infinite")
    fig.tight_layout()
    fig.canvas.draw()
    box = ax.get_window_extent()
    metadata = None
    if extension == ".png":
        metadata = {"gradcli-axes": json.dumps({
            "x0": box.x0, "y0": box.y0, "x1": box.x1, "y1": box.y1,
            "xlim": list(ax.get_xlim()), "ylim": list(ax.get_ylim()),
            "height": fig.bbox.height})}
    try:
        fig.savefig(path, dpi=100, metadata=metadata)
    except OSError as err:
        raise InputError(f"--output {path}: cannot write ({err.strerror or err})") from None
    finally:
        plt.close(fig)


def _register() -> None:
    import inspect

    def command(**kwargs):
        run(_Settings(**kwargs))
    params = [PROGRAM] + OPTIONS
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = "plot"
    _COMMANDS["plot"] = (command, dict(help=HELP, epilog=f"Example: {EXAMPLE}",
                                       context_settings={"ignore_unknown_options": True}))


_register()
