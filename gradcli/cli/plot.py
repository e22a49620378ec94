"""``gradcli plot``: f and its derivatives over a range, in the terminal or as an image.

Imported only when ``plot`` runs (or for the full command listing). The sampling lives in
``gradcli.run.plotting``; drawing needs the optional extra ``gradcli[plot]``: uniplot for the
terminal (small, numpy only, returns the plot as a string with frame and legend, which is
what a test can hold at a fixed width), matplotlib for ``--output``.
"""
from __future__ import annotations

import os
import sys
from typing import Annotated, List, Optional

import numpy as np
import typer

from ..errors import InputError
from ..run.optimize import MissingExtra
from ..run.plotting import Plot, column_names
from .common import Settings, guarded
from .options import PROGRAM, option

FORMATS = (".png", ".svg", ".pdf")

OPTIONS = [
    option("var", Annotated[Optional[List[str]], typer.Option(
        "--var", metavar="NAME=VALUE", show_default=False,
        help="A trainable variable (repeatable); a:b makes it the ranged one.")], None),
    option("frozen", Annotated[Optional[List[str]], typer.Option(
        "--frozen", metavar="NAME=VALUE", show_default=False,
        help="A variable with trainable=False (repeatable).")], None),
    option("arg", Annotated[Optional[List[str]], typer.Option(
        "--arg", metavar="NAME=VALUE", show_default=False,
        help="An argument (repeatable); NAME=a:b or NAME=linspace(a, b, n) is the "
             "horizontal axis.")], None),
    option("target", Annotated[Optional[str], typer.Option(
        "--target", metavar="NAME", show_default=False,
        help="Plot this named value instead of the last statement.")], None),
    option("points", Annotated[Optional[int], typer.Option(
        "--points", min=2, max=100_000, metavar="N", show_default=False,
        help="Samples of an a:b range (default 400; 60 per axis for a contour plot, "
             "at most 500 per axis).")],
        None),
    option("mode", Annotated[Optional[str], typer.Option(
        "--mode", metavar="tape|grad|implicit|value-grad", show_default=False,
        help="Plot the gradients this mode returns at each point instead of the "
             "derivative with respect to the ranged value.")], None),
    option("order", Annotated[int, typer.Option(
        "--order", min=0, max=4, metavar="N", help="Derivatives to draw: f', f'', ...")], 1),
    option("output", Annotated[Optional[str], typer.Option(
        "--output", "-o", metavar="PATH.png|.svg|.pdf", show_default=False,
        help="Write an image with matplotlib instead of drawing in the terminal.")], None),
    option("csv", Annotated[bool, typer.Option(
        "--csv", help="Print the sampled table as CSV (x, f, df/dx, ...).")], False),
    option("json_out", Annotated[bool, typer.Option(
        "--json", help="Print the sampled table and the marked points as JSON.")], False),
    option("width", Annotated[Optional[int], typer.Option(
        "--width", min=20, max=1000, show_default=False,
        help="Terminal plot width in characters (default: the terminal's).")], None),
    option("height", Annotated[Optional[int], typer.Option(
        "--height", min=5, max=500, show_default=False,
        help="Terminal plot height in lines (default: from the terminal's).")], None),
    option("precision", Annotated[Optional[int], typer.Option(
        "--precision", min=1, max=17, metavar="N", show_default=False,
        help="Significant digits of printed numbers (default: shortest exact).")], None),
    option("dtype", Annotated[str, typer.Option(
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


def compute(s: Settings) -> Plot:
    """The options checked, then the program sampled over the range(s), with the points
    to mark (``run.plotting.plot_program``)."""
    from ..run.plotting import plot_program
    if sum((s.csv, s.json_out, s.output is not None)) > 1:
        raise InputError("--csv, --json and --output cannot be used together")
    if s.output is not None:
        output_format(s.output)
    return plot_program(s.program, var=s.var, frozen=s.frozen, arg=s.arg, points=s.points,
                        mode=s.mode, order=s.order, dtype=s.dtype, target=s.target)


def run(s: Settings) -> None:
    """Sample, then print the table, write the image or draw in the terminal."""
    result = guarded(lambda: compute(s))
    from . import render
    grid = len(result.names) == 2
    if result.notes:
        sys.stderr.write("".join(f"note: {note}\n" for note in result.notes))
    if s.csv:
        from ..io.writers.csvtext import write_table
        write_table(result.report(s.order, s.mode), s.precision)
    elif s.json_out:
        render.json_writer.write(result.report(s.order, s.mode))
    elif s.output is not None:
        if grid:
            guarded(lambda: save_contour(s.output, result, s.program))
        else:
            guarded(lambda: save_image(s.output, result.names[0], result.axes[0],
                                        result.table, result.points, s.program,
                                        result.labels))
        sys.stdout.write(f"wrote {s.output}\n")
    else:
        if grid:
            text = guarded(lambda: terminal_heatmap(result, s.program, s.width, s.height))
        else:
            text = guarded(lambda: terminal_plot(result.names[0], result.axes[0],
                                                  result.table, result.points, s.program,
                                                  s.width, s.height, labels=result.labels))
        render.show(result.page(s.precision, text))


def _size(width, height) -> tuple[int, int]:
    import shutil
    columns, lines = shutil.get_terminal_size((100, 30))
    # uniplot adds the frame, the y labels (about 12 columns) and the legend lines
    return (width if width is not None else max(20, columns - 14),
            height if height is not None else max(8, min(lines - 10, 25)))


#: The glyphs of the curves (f, f', f'', ...) in a terminal plot without colour.
GLYPHS = ("*", "+", "o", "x", "~", "=", "%", "&")
MARK_GLYPH = "@"


def broken_at_poles_and_jumps(xs, table, points):
    """``xs`` and the columns with a gap (nan) at each pole and jump, so that no line is
    drawn across one (tan's branches are not joined by a vertical stroke)."""
    cuts = np.array(sorted(x for kind, x, _ in points if kind in ("pole", "jump")))
    if not cuts.size:
        return xs, table
    descending = xs[-1] < xs[0]
    ordered = xs[::-1] if descending else xs
    at = np.searchsorted(ordered, cuts)
    if descending:
        at, cuts = len(xs) - at[::-1], cuts[::-1]
    return (np.insert(xs, at, cuts),
            [np.insert(np.asarray(c, dtype=float), at, np.nan) for c in table])


def terminal_plot(name, xs, table, points, title, width=None, height=None,
                  color=None, labels=None) -> str:
    """The curves as text with uniplot: frame, axis labels, legend, marked points."""
    try:
        from uniplot import plot_to_string
    except ImportError:
        raise MissingExtra("uniplot", "plot", "drawing in the terminal") from None
    width, height = _size(width, height)
    labels = list(labels or column_names(name, len(table) - 1)[1:])
    xs, table = broken_at_poles_and_jumps(xs, table, points)
    # Drawn only where f is finite (log's rule gives 1/x where log(x) is nan), infinities
    # as gaps; a curve with nothing left is left out of the plot and its legend.
    defined = np.isfinite(table[0])
    shown = [(np.where(defined & np.isfinite(c), c, np.nan), label)
             for c, label in zip(table, labels)]
    shown = [(c, label) for c, label in shown if np.any(np.isfinite(c))]
    if not shown:
        raise InputError("nothing to draw: every value is nan or infinite")
    ys, labels = [c for c, _ in shown], [label for _, label in shown]
    curves = len(ys)
    xss, lines = [xs] * len(ys), [True] * len(ys)
    # a pole's f is a huge number or inf: it is the gap in the curve, not a dot
    drawn = [(x, f) for kind, x, f in points if np.isfinite(f) and kind != "pole"]
    if drawn:
        ys.append(np.array([f for _, f in drawn]))
        xss.append(np.array([x for x, _ in drawn]))
        lines.append(False)
        labels.append("marked points (below)")
    if color is None:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    # Without colour every curve would be the same blocks: each gets a glyph of its own,
    # which the legend shows ("** f   ++ df/dx"); the marked points are always "@"
    glyphs = {} if color else {
        "character_set": "ascii",
        "force_ascii_characters": [GLYPHS[k % len(GLYPHS)] for k in range(curves)] +
                                  [MARK_GLYPH]}
    title = f"{title}  (horizontal axis: {name})"
    shown = title if len(title) <= width else title[:width - 1] + "…"
    # uniplot's axis labels overflow from about 1e154 (horizontal) and 1e307 (vertical):
    # huge values are drawn divided by a power of ten, which the labels carry ("2e300")
    kx, ky = _power_of_ten(xss), _power_of_ten(ys)
    try:
        with np.errstate(all="ignore"):
            return plot_to_string([y / 10.0 ** ky for y in ys], [x / 10.0 ** kx for x in xss],
                                  lines=lines, legend_labels=labels, width=width,
                                  height=height, title=shown, color=color,
                                  x_unit=f"e{kx}" if kx else "", y_unit=f"e{ky}" if ky else "",
                                  **glyphs)
    except (ArithmeticError, ValueError):
        raise _undrawable("the terminal plot") from None


def _power_of_ten(arrays) -> int:
    """k such that the finite values divided by 10**k are at most 10 in size, where some
    are 1e100 or more; else 0 (drawn as they are)."""
    big = 0.0
    for a in arrays:
        finite = np.abs(a[np.isfinite(a)])
        if finite.size:
            big = max(big, float(finite.max()))
    return int(np.floor(np.log10(big))) if big >= 1e100 else 0


def save_image(path, name, xs, table, points, title, labels=None) -> None:
    """f and its derivatives with matplotlib, the marked points by kind (see
    ``curve_figure``). A PNG carries the axes' pixel box and limits in a text chunk
    ("gradcli-axes"), so that a reader can map data to pixels; the chunk's "xscale" and
    "yscale" are the powers of ten huge values are drawn divided by."""
    extension = output_format(path)
    plt, fig, ax, scale = curve_figure(name, xs, table, points, title, labels)
    _save(plt, fig, ax, path, extension, scale)


#: How each kind of marked point is drawn: a marker at (x, f) for the extrema, a vertical
#: line at x for the others; the legend names each kind drawn.
POINT_MARKERS = {"minimum": "v", "maximum": "^", "stationary point": "s"}
POINT_LINES = {"pole": ("red", "--"), "jump": ("gray", ":"), "kink": ("gray", "-."),
               "non-finite": ("silver", ":")}


def curve_figure(name, xs, table, points, title, labels=None):
    """(pyplot, figure, axes, (x scale, y scale)): f and its derivatives as curves,
    broken at poles and jumps; minima, maxima and stationary points as markers at (x, f)
    labelled by kind in the legend; poles (a vertical asymptote: red dashed), jumps, kinks
    and where f stops being finite as vertical lines, labelled likewise. Values of 1e100
    or more are drawn divided by a power of ten, which the axis label gives (matplotlib's
    ticks overflow near float64's edge)."""
    finite = np.concatenate([c[np.isfinite(c)] for c in table])
    if finite.size == 0:
        raise InputError("nothing to draw: every value is nan or infinite")
    plt = figure_module()
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    labels = list(labels or column_names(name, len(table) - 1)[1:])
    dots = [(kind, x, f) for kind, x, f in points if kind in POINT_MARKERS]
    kx = _power_of_ten([xs])
    ky = _power_of_ten(list(table) + [np.array([f for *_, f in dots], dtype=float)])
    sx, sy = 10.0 ** kx, 10.0 ** ky
    drawn_xs, drawn = broken_at_poles_and_jumps(xs, table, points)
    with np.errstate(all="ignore"):
        for k, (column, label) in enumerate(zip(drawn, labels)):
            ax.plot(drawn_xs / sx, column / sy, color=f"C{k}", label=label, linewidth=1.8)
        for kind, marker in POINT_MARKERS.items():
            chosen = [(x, f) for k, x, f in dots if k == kind]
            if chosen:
                ax.plot([x / sx for x, _ in chosen], [f / sy for _, f in chosen], marker,
                        color="black", markersize=6, linestyle="none", label=kind)
        for kind, (colour, style) in POINT_LINES.items():
            chosen = [x for k, x, _ in points if k == kind]
            for i, x in enumerate(chosen):
                ax.axvline(x / sx, color=colour, linestyle=style, linewidth=1,
                           label=kind if i == 0 else None)
    ax.axhline(0, color="black", linewidth=0.6, alpha=0.5, zorder=0)  # under the curves
    ax.set_xlabel(name + _times(kx))
    if ky:
        ax.set_ylabel("values" + _times(ky))
    ax.set_title(title if len(title) <= 80 else title[:79] + "…")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    return plt, fig, ax, (sx, sy)


def _times(k: int) -> str:
    return f" (× 1e{k})" if k else ""


def _save(plt, fig, ax, path, extension, scale=(1.0, 1.0)) -> None:
    """Lay out and write; a PNG gets the axes' pixel box and limits as a text chunk."""
    import json
    try:
        fig.tight_layout()
        fig.canvas.draw()
        box = ax.get_window_extent()
        metadata = None
        if extension == ".png":
            metadata = {"gradcli-axes": json.dumps({
                "x0": box.x0, "y0": box.y0, "x1": box.x1, "y1": box.y1,
                "xlim": list(ax.get_xlim()), "ylim": list(ax.get_ylim()),
                "xscale": scale[0], "yscale": scale[1], "height": fig.bbox.height})}
        from ..io.outfile import OutputFile
        with OutputFile(path, binary=True) as f:  # renamed into place once complete
            fig.savefig(f, format=extension[1:], dpi=100, metadata=metadata)
    except OSError as err:
        raise InputError(f"--output {path}: cannot write ({err.strerror or err})") from None
    except (ArithmeticError, ValueError):
        raise _undrawable("matplotlib") from None
    finally:
        plt.close(fig)


def _undrawable(what: str) -> InputError:
    return InputError(f"{what} cannot draw these values (their range is beyond what its "
                      "axes handle): print them with --json or --csv")


def save_contour(path, result, title) -> None:
    """Filled contours of f, the gradient field as arrows (about 20 per side), the
    critical points marked by kind. Values of 1e100 or more are drawn divided by a power
    of ten, as ``save_image`` does (the arrows' lengths are relative anyway)."""
    extension = output_format(path)
    (xs, ys), (f, gx, gy) = result.axes, result.table
    if not np.any(np.isfinite(f)):
        raise InputError("nothing to draw: every value is nan or infinite")
    kx, ky, kf, kg = (_power_of_ten(a) for a in ([xs], [ys], [f], [gx, gy]))
    sx, sy, sf, sg = (10.0 ** k for k in (kx, ky, kf, kg))
    plt = figure_module()
    fig, ax = plt.subplots(figsize=(7, 6), dpi=100)
    try:
        with np.errstate(all="ignore"):
            finite = np.where(np.isfinite(f), f, np.nan) / sf
            filled = ax.contourf(xs / sx, ys / sy, finite, levels=15, cmap="viridis")
            fig.colorbar(filled, ax=ax, label="f" + _times(kf))
            step = (max(1, len(ys) // 20), max(1, len(xs) // 20))
            sub = (slice(None, None, step[0]), slice(None, None, step[1]))
            ax.quiver(*np.meshgrid(xs[sub[1]] / sx, ys[sub[0]] / sy), gx[sub] / sg,
                      gy[sub] / sg, color="white", label="gradient")
    except (ArithmeticError, ValueError):
        plt.close(fig)
        raise _undrawable("matplotlib") from None
    markers = {"minimum": ("o", "red"), "maximum": ("^", "orange"), "saddle": ("X", "magenta")}
    for kind in ("minimum", "maximum", "saddle", "critical point"):
        chosen = [p for p in result.points if p[0] == kind]
        if chosen:
            marker, colour = markers.get(kind, ("s", "black"))
            ax.plot([p[1] / sx for p in chosen], [p[2] / sy for p in chosen], marker,
                    color=colour, markersize=9, markeredgecolor="black", linestyle="none",
                    label=kind)
    ax.set_xlabel(result.names[0] + _times(kx))
    ax.set_ylabel(result.names[1] + _times(ky))
    ax.set_title(title if len(title) <= 70 else title[:69] + "…")
    ax.legend(loc="upper right", fontsize="small")
    _save(plt, fig, ax, path, extension, (sx, sy))


_SHADES = " .:-=+*#%@"


def terminal_heatmap(result, title, width=None, height=None) -> str:
    """f on the grid as shades of one character (low ' ' to high '@'), critical points
    as their kind's first letter (m, M, s, c), with the axes' ends and the scale."""
    from . import render
    (xs, ys), f = result.axes, result.table[0]
    width, height = _size(width, height)
    height = min(height, 2 * width)
    finite = f[np.isfinite(f)]
    if finite.size == 0:
        raise InputError("nothing to draw: every value is nan or infinite")
    lo, hi = float(finite.min()), float(finite.max())
    # halves: hi - lo (and v - lo) overflow float64 for values near its edge (+-1e308)
    span = hi / 2 - lo / 2
    cols = np.linspace(0, len(xs) - 1, width).round().astype(int)
    rows = np.linspace(len(ys) - 1, 0, height).round().astype(int)   # y grows upwards
    grid = []
    for r in rows:
        line = []
        for c in cols:
            v = f[r, c]
            if not np.isfinite(v):
                line.append("?")
            else:
                level = 0 if hi == lo else int((v / 2 - lo / 2) / span * (len(_SHADES) - 0.001))
                line.append(_SHADES[level])
        grid.append(line)
    letters = {"minimum": "m", "maximum": "M", "saddle": "s"}
    for kind, x, y, _ in result.points:
        c = int(round((x / 2 - xs[0] / 2) / (xs[-1] / 2 - xs[0] / 2) * (width - 1)))
        r = int(round((ys[-1] / 2 - y / 2) / (ys[-1] / 2 - ys[0] / 2) * (height - 1)))
        if 0 <= r < height and 0 <= c < width:
            grid[r][c] = letters.get(kind, "c")
    n = render.number_text
    top = f"{result.names[1]} = {n(ys[-1], 4)}"
    bottom = f"{result.names[1]} = {n(ys[0], 4)}"
    lines = [title, "┌" + "─" * width + "┐ " + top]
    lines += ["│" + "".join(line) + "│" for line in grid]
    lines.append("└" + "─" * width + "┘ " + bottom)
    left, right = f"{result.names[0]} = {n(xs[0], 4)}", f"{n(xs[-1], 4)}"
    lines.append(" " + left + " " * max(1, width - len(left) - len(right)) + right)
    lines.append(f"f: '{_SHADES[0]}' {n(lo, 4)} … '{_SHADES[-1]}' {n(hi, 4)}; "
                 "m minimum, M maximum, s saddle, c other critical point, ? not finite")
    return "\n".join(lines)


#: The command's signature (app.COMMANDS reads it when typer builds ``plot``).
PARAMETERS = [PROGRAM] + OPTIONS
