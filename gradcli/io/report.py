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
