"""``--explain``: the computation as the engine saw it, pointing into the program's text.

An engine ``Recorder`` (engine/core/observe.py) watches one mode's run; ``explain`` turns
what it kept into a JSON-able dict:

- ``forward``: each operation a tape recorded, in the order run, with its ``id``
  (``n1``, ``n2``, ... in that order), ``op``, the program ``text`` it came from and its
  ``span`` (``[start, end]`` character offsets), its ``inputs`` (another node's id, or
  the text of a sub-expression no tape recorded: a declared name, a constant), and its
  ``value``;
- ``backward``: the same nodes in the order the backward pass took them, each with the
  ``adjoint`` that reached it (d target / d node) and the ``rule`` (the table's
  derivative, as maths);
- ``sources``: each source with its gradient, or why it got none.

Operations of one sub-expression share its span (a function the table builds from
others runs several; the last gives the sub-expression's value).
"""
from __future__ import annotations

import itertools
import re
from functools import lru_cache
from operator import attrgetter

import numpy as np

from ..engine.core.observe import ROW
from ..io.jsonvalue import json_number
from ..io.jsonvalue import json_value as json_array
from .nonfinite import operand_of

SHOWN = 10  # without --explain-all: the first and the last SHOWN nodes of each pass
FULL_ARRAY = 10  # arrays up to this many elements are given in full


def value_json(value):
    """Scalars and small arrays in full; larger ones as their shape and a summary."""
    if value.__class__ is np.float64:  # (the common case, without numpy's conversions)
        return json_number(value)
    arr = np.asarray(value)
    if arr.size <= FULL_ARRAY or arr.dtype.kind not in "fiub":
        return json_array(value)
    with np.errstate(all="ignore"):
        flat = arr.astype(float, copy=False)
        low, high = flat.min(), flat.max()
        if low != low or high != high:  # a nan: the range of the others (numpy's
            others = flat[~np.isnan(flat)]  # nanmin would warn on standard error
            low, high = (others.min(), others.max()) if others.size else (np.nan, np.nan)
        return {"shape": list(arr.shape), "min": json_number(low),
                "max": json_number(high), "mean": json_number(flat.mean())}


@lru_cache(maxsize=None)  # (the table's entries live as long as the process)
def rule_text(op) -> str:
    """The table's derivative of ``op`` as maths: ``d sin(x) = cos(x)·dx``."""
    names = list(op.inputs or ())
    call = f"{op.name}({', '.join(names)})"
    derivative = op.derivative
    if not derivative:  # (an internal entry: picking one output of several, a cast)
        return f"d {call}: its own rule (no formula in the table)"
    parts = [p.strip() for p in derivative.split(", ")]
    if len(parts) == len(names) and all(" " not in p and not re.search(r"\bg\b", p)
                                        for p in parts):  # (g: a rule in VJP form)
        terms = [f"{_factor(p)}d{n}" for p, n in zip(parts, names) if p != "0"]
        return f"d {call} = " + " + ".join(terms)
    return f"d {call}: {derivative}"


def _factor(p: str) -> str:
    if p == "1":
        return ""
    if p == "-1":
        return "-"
    return (f"({p})" if any(c in p for c in "+-") and not p.startswith("(") else p) + "·"


class Where:
    """The program text and span of a tree node (or nothing, for an operation run outside
    the program's steps)."""

    def __init__(self, source: str):
        self.source = source
        self.count = source.count("\n") + 1  # lines
        # Where lines start, found when asked, from whichever end is nearer: the nodes
        # shown are the first and the last of a long program (a table of all its lines,
        # made right after the run, cost more than the rest of a short description).
        self.head = [0]  # lines 1, 2, ...
        self.tail = [source.rfind("\n") + 1]  # the last line, the one before, ...
        self.known: dict[int, tuple] = {}  # id(tree node) -> (text, span)

    def start(self, line: int) -> int:
        """The offset of the first character of ``line`` (from 1)."""
        source = self.source
        if line - 1 <= self.count - line:
            head = self.head
            while len(head) < line:
                head.append(source.index("\n", head[-1]) + 1)
            return head[line - 1]
        tail, back = self.tail, self.count - line
        while len(tail) <= back:
            tail.append(source.rfind("\n", 0, tail[-1] - 1) + 1)
        return tail[back]

    def of(self, node) -> tuple:
        if node is None:
            return "", None
        known = self.known.get(id(node))
        if known is None:
            pos = node.pos
            start = self.start(pos.line) + pos.col
            span = [start, start + pos.width]
            known = self.known[id(node)] = (self.source[start:span[1]], span)
        return known


class Ids:
    """A recorded node -> its id in the lists, ``"n1"``, ``"n2"``, ... in the order run.

    When the rows are every node recorded during the run, one after the other, a node's
    number is its place in the recording order (``Node.seq``) from the first one's: no
    map of a run's nodes is made (a thousand nodes, cold in the caches, cost more than
    describing the forty shown). Otherwise (``numbers``) a dict numbers them, keyed by the
    nodes themselves (hashed by identity)."""
    __slots__ = ("first", "end", "numbers")

    def __init__(self, first: int = 0, end: int = 0, numbers: dict | None = None):
        self.first, self.end, self.numbers = first, end, numbers

    def number(self, node) -> int | None:
        """``node``'s number (from 1), or None for a node not recorded in the rows."""
        if self.numbers is not None:
            return self.numbers.get(node)
        if node is not None and self.first <= node.seq < self.end:
            return node.seq - self.first + 1
        return None

    def get(self, node, default=None):
        number = self.number(node)
        return default if number is None else f"n{number}"

    def __contains__(self, node) -> bool:
        return self.number(node) is not None

    def __getitem__(self, node) -> str:
        name = self.get(node)
        if name is None:
            raise KeyError(node)
        return name

    def row(self, rows: Rows, node) -> tuple:
        """The row of ``rows`` (as ``recorded`` gives them) that recorded ``node``."""
        return rows[self.number(node) - 1]

    def positions(self, nodes: list) -> list | range:
        """The positions in ``nodes`` of the nodes that have an id (in C: a run has many)."""
        if self.numbers is None:
            seqs = list(map(attrgetter("seq"), nodes))
            if not seqs or (min(seqs) >= self.first and max(seqs) < self.end):
                return range(len(seqs))
            return [k for k, seq in enumerate(seqs) if self.first <= seq < self.end]
        return list(itertools.compress(itertools.count(), map(self.numbers.__contains__,
                                                              nodes)))


class Rows:
    """Some rows of a recorder's flat list (``operations``: ``(op, out, inputs, where)``;
    ``taken``: ``(node, adjoint)``, ``width`` 2), by their positions: a row's tuple is
    made when it is read (a run has many more rows than are shown, and each one touched
    costs, cold in the caches)."""
    __slots__ = ("flat", "positions", "width")

    def __init__(self, flat: list, positions: list, width: int = ROW):
        self.flat, self.positions, self.width = flat, positions, width

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i):
        flat, width = self.flat, self.width
        if i.__class__ is slice:
            return [tuple(flat[k:k + width]) for k in map(width.__mul__, self.positions[i])]
        k = width * self.positions[i]
        return tuple(flat[k:k + width])

    def __iter__(self):
        return map(self.__getitem__, range(len(self)))


def recorded(recorder) -> tuple[Rows, Ids]:
    """The operations a tape recorded, in order, as the recorder's rows ``(op, out,
    inputs, where)``, and their ids by node (``Ids``)."""
    ops = recorder.operations
    count = len(ops) // ROW
    if count and recorder.alone:
        first, last = ops[1]._node, ops[1 - ROW]._node
        if (first is not None and last is not None and first.seq > 0
                and last.seq - first.seq == count - 1):
            # Every row recorded its node, as in a run of gradcli's modes: the nodes
            # recorded while the recorder alone watched are its rows' (apply records and
            # tells the observer), numbered one after the other: ``count`` numbers from
            # the first to the last leave none to a row that recorded nothing.
            return Rows(ops, range(count)), Ids(first.seq, last.seq + 1)
    nodes = list(map(attrgetter("_node"), ops[1::ROW]))  # (the outs and nodes only)
    positions = [k for k, op, node in zip(itertools.count(), ops[::ROW], nodes)
                 if node is not None and node.op is op]
    return Rows(ops, positions), numbered(map(nodes.__getitem__, positions))


def _taken_positions(recorder, ids: Ids) -> range | list:
    """The positions of the pairs in ``recorder.taken`` (node, adjoint, node, ...) whose
    node has an id. One backward pass takes its nodes in decreasing recording order (its
    heap's order): numbered by that order, when the first and the last it took have ids,
    all do, and no pass over a run's nodes (cold in the caches) is needed."""
    taken = recorder.taken
    if (ids.numbers is None and recorder.passes == 1 and taken
            and taken[0].seq < ids.end and taken[-2].seq >= ids.first):
        return range(len(taken) // 2)
    return ids.positions(taken[::2])


def numbered(nodes) -> Ids:
    """The ids of ``nodes``, in order."""
    return Ids(numbers=dict(zip(nodes, itertools.count(1))))  # (in C: a run has many)


def value_text(value) -> str:
    """A value in a few characters: a scalar in full, an array as its shape and range."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return str(json_array(arr))
    return _text(value_json(value)) if arr.size > FULL_ARRAY else str(json_array(arr))


def explain(recorder, model, outcome, show_all: bool = False) -> dict:
    """What ``recorder`` saw of one mode's run on ``model`` (its ``outcome``). Only the
    nodes shown are described (the first and the last ``SHOWN`` of each pass, unless
    ``show_all``): describing a node costs more than running it. For ``jvp``:
    ``explain_jvp``."""
    if outcome.mode == "jvp":
        return explain_jvp(recorder, model, outcome, show_all)
    where = Where(model.program.source)
    rows, ids = recorded(recorder)
    pairs = Rows(recorder.taken, _taken_positions(recorder, ids), width=2)
    obj: dict = {}
    for key, listed in (("forward", rows), ("backward", pairs)):
        shown, elided = (listed, 0) if show_all else _elided(listed)
        obj[key] = [_forward_entry(row, ids, where) if key == "forward" else
                    _backward_entry(row, ids.row(rows, row[0]), ids, where) for row in shown]
        if elided:
            obj[f"{key}_elided"] = elided
    obj["sources"] = _sources(recorder, model, outcome, where)
    return obj


def explain_jvp(recorder, model, outcome, show_all: bool = False) -> dict:
    """Forward mode (``jvp``): the operations the direction reaches, in the order run,
    each as ``forward`` gives it with its ``tangent`` (d node along the direction, what
    the accumulator carried) and its ``rule`` (the table's derivative, which forward
    mode applies to the inputs' tangents); ``direction``: each name's tangent given."""
    where = Where(model.program.source)
    accumulator = recorder.accumulator  # (None: no operation carried a tangent)
    rows = [row for row in recorder.rows() if accumulator is not None
            and row[1]._node is not None and accumulator.jvp(row[1]) is not None]
    ids = numbered(row[1]._node for row in rows)
    shown, elided = (rows, 0) if show_all else _elided(rows)
    obj: dict = {"forward": []}
    for row in shown:
        entry = _forward_entry(row, ids, where)
        entry["tangent"] = value_json(accumulator.jvp(row[1])._value)
        entry["rule"] = rule_text(row[0])
        obj["forward"].append(entry)
    if elided:
        obj["forward_elided"] = elided
    obj["direction"] = [{"name": name, "tangent": value_json(t)}
                        for name, t in outcome.tangents.items()]
    return obj


def _forward_entry(row, ids: Ids, where: Where) -> dict:
    op, out, inputs, node_where = row
    text, span = where.of(node_where)
    return {"id": ids[out._node], "op": op.name, "text": text, "span": span,
            "inputs": _inputs(inputs, ids, node_where, where), "value": value_json(out._value)}


def _backward_entry(taken, row, ids: Ids, where: Where) -> dict:
    node, adjoint = taken
    op, out, _, node_where = row
    text, span = where.of(node_where)
    return {"id": ids[node], "op": op.name, "text": text, "span": span,
            "value": value_json(out._value),
            "adjoint": value_json(getattr(adjoint, "_value", adjoint)),
            "rule": rule_text(op)}


def _inputs(inputs, ids: Ids, node_where, where: Where) -> list:
    return [ids.get(getattr(x, "_node", None)) or operand_text(x, i, node_where, where)
            for i, x in enumerate(inputs)]


def operand_text(x, index: int, node_where, where: Where) -> str:
    """The text input ``index`` (``x``) of an operation run for the tree node
    ``node_where`` was read from: its sub-expression, else ``x`` in a few characters."""
    sub = operand_of(node_where, index) if node_where is not None else None
    return where.of(sub)[0] if sub is not None else short(x)


def short(x) -> str:
    value = getattr(x, "_value", x)
    arr = np.asarray(value)
    return repr(arr.item()) if arr.size == 1 else f"array {arr.shape}"


def _elided(entries: list) -> tuple[list, int]:
    if len(entries) <= 2 * SHOWN:
        return entries, 0
    return entries[:SHOWN] + entries[-SHOWN:], len(entries) - 2 * SHOWN


def _sources(recorder, model, outcome, where: Where) -> list:
    out = []
    for g in outcome.gradients:
        entry = {"name": g.name}
        if g.gradient is not None and g.connected:
            entry["gradient"] = value_json(g.gradient)
        else:
            entry["gradient"] = None
            entry["why"] = _why_none(recorder, model, outcome, g.name, where)
        out.append(entry)
    return out


def _why_none(recorder, model, outcome, name: str, where: Where) -> str:
    """Why a source got no gradient: not read; the tape did not watch it; or read only by
    operations with no gradient (a comparison, an integer cast, stop_gradient)."""
    readers = [(op, node_where) for op, out, inputs, node_where in recorder.rows()
               if node_where is not None and _reads(node_where, name)]
    if not readers and not _reads(model.program, name):
        return "not read by the program"
    if outcome.mode == "tape" and model.kinds.get(name) == "arg":
        return f"the tape did not watch it (add --watch {name})"
    blocked = [f"{op.name} ({where.of(node_where)[0]})" for op, node_where in readers
               if not op.differentiable]
    if blocked:
        return ("only reached through operations with no gradient: "
                + ", ".join(dict.fromkeys(blocked)))
    return "the target does not depend on it"


def _reads(tree, name: str) -> bool:
    from ..lang import iter_postorder
    roots = getattr(tree, "statements", None) or [tree]
    return any(type(n).__name__ == "Name" and n.id == name
               for root in roots for n in iter_postorder(getattr(root, "value", root)))


def explain_lines(obj: dict) -> list[str]:
    """``--explain`` as text: the forward pass, the backward pass, the sources (forward
    mode: the forward pass with tangents, the direction)."""
    count = len(obj["forward"]) + obj.get("forward_elided", 0)
    if "direction" in obj:
        lines = [f"forward mode ({count} operation{'s' if count != 1 else ''} the "
                 "direction reaches, in the order run; tangent = d node along it):"]
        lines += _table([[e["id"], e["op"], e["text"], "inputs " + ", ".join(e["inputs"]),
                          "value " + _text(e["value"]), "tangent " + _text(e["tangent"]),
                          e["rule"]] for e in obj["forward"]], obj.get("forward_elided", 0))
        return lines + ["direction:"] + [f"  {d['name']}: {_text(d['tangent'])}"
                                         for d in obj["direction"]]
    lines = [f"forward ({count} operation{'s' if count != 1 else ''} recorded, in the "
             "order run):"]
    lines += _table([[e["id"], e["op"], e["text"], "inputs " + ", ".join(e["inputs"]),
                      "value " + _text(e["value"])] for e in obj["forward"]],
                    obj.get("forward_elided", 0))
    lines.append("backward (in the order taken; adjoint = d target / d node):")
    lines += _table([[e["id"], e["op"], e["text"], "adjoint " + _text(e["adjoint"]),
                      e["rule"]] for e in obj["backward"]], obj.get("backward_elided", 0))
    lines.append("sources:")
    for s in obj["sources"]:
        lines.append(f"  {s['name']}: " + (_text(s["gradient"]) if s["gradient"] is not None
                                            else f"no gradient: {s['why']}"))
    return lines


def _table(rows: list, elided: int) -> list[str]:
    if not rows:
        return ["  (none)"]
    widths = [max(map(len, column)) for column in zip(*rows)][:-1]  # (the last: as it is)
    out = ["  " + "  ".join(map(str.ljust, r, widths)) + "  " + r[-1] for r in rows]
    if elided:  # (the first and the last halves around what was left out)
        half = len(out) // 2
        out.insert(half, f"  ... {elided} more (--explain-all shows every one)")
    return [line.rstrip() for line in out]


def _text(value) -> str:
    if isinstance(value, dict):
        return (f"shape {tuple(value['shape'])} min {value['min']} max {value['max']} "
                f"mean {value['mean']}")
    return str(value)
