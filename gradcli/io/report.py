"""What a result holds, said once, in a form every writer reads (io/writers/).

The result types of ``gradcli.run`` (a mode's ``Outcome``, ``JacobianResult``,
``HessianResult``, ``JvpOutcome``, ...) describe themselves with these neutral pieces; the
writers (``writers.json``, ``writers.plain``, the ``--at`` writers) read only them, never
a run type (io is below run in the layers):

- :class:`Numbers`: an array of numbers in a report (JSON: nested lists; plain: a line).
- :class:`Report`: one point's result: ``fields`` (the JSON object, in order, its arrays as
  ``Numbers``), ``lines`` (what ``--plain`` prints, in order: (label, item), an item Numbers, a word,
  or a list of them on one line),
  ``notes`` (said on standard error by the plain writer), ``mode`` (the label of
  compare's lines) and ``table`` (a result that is a table of samples, plot's: its
  header and its columns, which ``writers.csvtext.write_table`` writes; None: none).
- :class:`Page`: one point's human page, what ``page()`` of a result type says it shows:
  :class:`Line` (text parts, each with a style named by meaning: :data:`MEANINGS`),
  :class:`Table` (headers and rows), :class:`Verbatim` (text already laid out), built
  with ``Page``'s ``line``, ``table``, ``value``, ``notes`` and ``check`` (the check
  table); ``writers.page`` lays it out.
- :class:`RowKind` (a result type's constant part for ``--at``: its columns' prefix, the
  norm the human summary gives, a word per row) and :class:`RowLayout` (what every row of
  one run holds: the value or not, the outputs' names, their shapes, the notes, the JSON
  of a row).
- :class:`Rowwise`: the base of a result type computed at many rows (``run.many``): what
  ``vectorized_map`` maps (``mapped``), the result at one row (``at_row``), the outputs a
  row shows (``shown``).
"""
from __future__ import annotations


class Numbers:
    """An array (or None: an unconnected gradient, ``null``) in a report. ``summarise``:
    plain output shortens a large array to its ends (``a b c ... x y z``); ``what``: the
    name a summarised array has in its note (None: no note)."""
    __slots__ = ("array", "summarise", "what")

    def __init__(self, array, summarise: bool = True, what: str | None = None):
        self.array, self.summarise, self.what = array, summarise, what


class Report:
    """One point's result for the writers (see the module doc)."""
    __slots__ = ("mode", "fields", "lines", "notes", "table")

    def __init__(self, mode: str, fields: dict, lines: list, notes=(), table=None):
        self.mode, self.fields, self.lines, self.notes = mode, fields, lines, list(notes)
        self.table = table


class RowKind:
    """The constant part of a result at many rows: ``prefix`` of its outputs' columns
    (``d_x``), ``norm`` (the human summary's name for the norm of ``norm_of``, the outputs
    it is over, None: all), ``word`` (a word per row, hessian's verdict) and its longest
    length (``word_width``, .npz's string array)."""
    __slots__ = ("prefix", "norm", "norm_of", "word", "word_width")

    def __init__(self, prefix: str = "d_", norm: str = "gradient norm", norm_of=None,
                 word: str | None = None, word_width: int = 0):
        self.prefix, self.norm, self.norm_of = prefix, norm, norm_of
        self.word, self.word_width = word, word_width


class RowLayout:
    """What each row of a run holds: ``title``; ``has_value``; ``value_ndim``; ``names`` of
    the outputs; ``shapes`` (each output's shape at one row, for an unconnected one);
    ``notes``; ``template`` (one row's JSON line as a %-template of row, value and
    outputs, or None); ``row_report(value, raw)``: the single-point ``Report`` of a row."""
    __slots__ = ("title", "has_value", "value_ndim", "names", "shapes", "notes", "template",
                 "row_report")

    def __init__(self, title: str, has_value: bool, value_ndim: int, names: list,
                 shapes: list, notes: list, row_report, template: str | None = None):
        self.title, self.has_value, self.value_ndim = title, has_value, value_ndim
        self.names, self.shapes, self.notes = names, shapes, notes
        self.row_report, self.template = row_report, template


class Rowwise:
    """A result type that ``--at`` computes at many rows (``run.many``). Subclasses set
    ``ROWS`` (a :class:`RowKind`) and define ``mapped``, ``at_row``, ``layout`` and
    ``report``."""
    __slots__ = ()
    ROWS = RowKind()

    def mapped(self) -> tuple:
        """(value, [outputs]): the arrays ``vectorized_map`` gives a row axis."""
        raise NotImplementedError

    def at_row(self, value, raw: list):
        """The single-point result at one row, from that row's mapped arrays."""
        raise NotImplementedError

    def layout(self) -> RowLayout:
        raise NotImplementedError

    def report(self, check: dict | None = None) -> Report:
        raise NotImplementedError

    def shown(self, value, raw: list) -> tuple:
        """What the rows show, from what vectorized_map returned: (outputs, words)."""
        return raw, None


# ---------------------------------------------------------------------------------------
# The human page of one result (io/writers/page.py writes it)
# ---------------------------------------------------------------------------------------
#: The styles a page names, by meaning; the human writer gives each its look.
MEANINGS = ("heading", "emphasis", "aside", "good", "bad", "error", "caution", "kink",
            "overflow")
#: A check status's meaning (its cell in the check table).
STATUS_MEANING = {"ok": "good", "mismatch": "bad", "skipped": "caution",
                  "non-differentiable": "kink", "overflow": "overflow"}


class Line:
    """A line of text: ``parts``, each a string or ``(string, meaning)``, all taken
    literally. ``wrap``: wrapped at spaces, a hanging indent under an indented line (the
    writer's ``emit``); False: the terminal library's own wrapping."""
    __slots__ = ("parts", "wrap")

    def __init__(self, parts: tuple, wrap: bool = True):
        self.parts, self.wrap = parts, wrap


class Table:
    """A table: ``headers`` and ``rows`` (each cell a string, ``(string, meaning)`` or a
    list of those, one cell), a ``title``, ``rules`` between rows, a ``frame``, ``prose``
    (words that may fold on a wide terminal). ``fitted``: columns at least as wide as
    their longest word, else one field per line (the writer's ``show_table``); False: the
    terminal library's own layout, ``aside`` naming the columns shown dimmed."""
    __slots__ = ("headers", "rows", "title", "rules", "frame", "prose", "fitted", "aside")

    def __init__(self, headers: list, rows: list, title: str | None = None, *,
                 rules: bool = False, frame: bool = False, prose: bool = False,
                 fitted: bool = True, aside: tuple = ()):
        self.headers, self.rows, self.title = headers, rows, title
        self.rules, self.frame, self.prose = rules, frame, prose
        self.fitted, self.aside = fitted, aside


class Verbatim:
    """Text written to the output as it is (lines already laid out, a terminal plot)."""
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class Page:
    """One result's human page: its blocks in order (:class:`Line`, :class:`Table`,
    :class:`Verbatim`), made by the result's ``page()`` with these builders; the human
    writer (io/writers/page.py) lays them out."""
    __slots__ = ("blocks",)

    def __init__(self, blocks=()):
        self.blocks = list(blocks)

    def line(self, *parts, wrap: bool = True) -> "Page":
        self.blocks.append(Line(parts, wrap))
        return self

    def table(self, headers: list, rows: list, title: str | None = None, **how) -> "Page":
        self.blocks.append(Table(headers, rows, title, **how))
        return self

    def verbatim(self, text: str) -> "Page":
        self.blocks.append(Verbatim(text))
        return self

    def extend(self, other: "Page") -> "Page":
        self.blocks += other.blocks
        return self

    def error(self, what: str, message: str) -> "Page":
        """``WHAT error: MESSAGE`` (one row of compare that could not be computed)."""
        return self.line(what, ("error:", "error"), " " + message)

    def value(self, label: str, value, precision: int | None) -> "Page":
        """``LABEL: VALUE  shape S``, or an array's lines indented under ``LABEL (shape S):``."""
        from .text import array_text
        text = array_text(value, precision)
        shape = f"shape {shape_text(value)}"
        if "\n" not in text:
            return self.line(f"{label}: ", (text, "emphasis"), "  ", (shape, "aside"))
        self.line(f"{label} ({shape}):")
        for line in text.split("\n"):
            self.line("  " + line)
        return self

    def notes(self, notes) -> "Page":
        for note in notes:
            self.line(("note:", "caution"), " " + note)
        return self

    def check(self, check: dict, precision: int | None, tapes: dict | None = None,
              title: str = "cross-check") -> "Page":
        """The check table (the tape's gradient, in its own dtype when ``tapes`` gives it,
        beside sympy's and the finite differences'; errors with 2 significant digits)
        and its verdict."""
        rows = []
        for entry in check["gradients"]:
            status, reason = entry["status"], entry.get("reason")
            tape = (tapes or {}).get(entry["name"], entry.get("tape"))
            rows.append([entry["name"], _cell(tape, precision),
                         _cell(entry.get("symbolic"), precision),
                         _cell(entry.get("numeric"), precision),
                         _error(entry.get("abs_error")), _error(entry.get("rel_error")),
                         [(status, STATUS_MEANING.get(status)), f" ({reason})" if reason
                          else ""]])
        self.table(["name", "tape", "symbolic", "finite diff", "abs err", "rel err",
                    "status"], rows, title)
        verdict = check_verdict(check)
        return self.line("check: ", {"passed": ("passed", "good"), "mismatch": (
            "MISMATCH", "bad")}.get(verdict, (verdict, "caution")),
            f" ({check['reason']})" if check.get("reason") else "")


def check_verdict(check: dict) -> str:
    """The check's verdict: "passed", "mismatch" or "nothing to check" (a check object
    without one: from its ``passed``)."""
    return check.get("verdict") or ("passed" if check["passed"] else "mismatch")


def shape_text(value) -> str:
    import numpy as np
    return "" if value is None else str(tuple(np.shape(value)))


def _cell(value, precision) -> str:
    """A number of the check table: "-" for none; JSON's nested lists (with "nan"/"inf"
    strings numpy reads) as an array."""
    import numpy as np

    from .text import array_text
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        value = np.asarray(value, dtype=float)
    return array_text(value, precision)


def _error(value) -> str:
    """An error of the check table, with 2 significant digits: its size is what matters."""
    return _cell(value, 2)
