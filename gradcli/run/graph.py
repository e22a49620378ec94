"""``--graph PATH``: the recorded graph as a picture (issue 23, part 2).

``build`` makes a ``Graph`` from what an engine ``Recorder`` saw of one run: a node per
recorded operation (its id, operation, program text and value), a node per watched leaf
the operations read (a declared variable or argument, by the program's own name), the
target marked; an edge per input link of the tape, labelled with the gradient that
flowed along it. Constants and unconnected sources are drawn too, faded (constants with
dotted edges): they are not part of the tape, so ``class="tape"`` marks what is (the
others are ``class="off"``; Graphviz copies ``class`` into the SVG).

- ``dot_text``: Graphviz source, written by gradcli itself (no dependency);
- ``tree_lines``: the graph as an indented tree from the target (``--graph -``);
- ``render``: .svg/.png/.pdf through the optional ``graphviz`` package and Graphviz's
  ``dot`` program (``pip install 'gradcli[graph]'``).
"""
from __future__ import annotations

from ..errors import InputError
from .explain import Where, operand_text, recorded, value_text

FORMATS = ("dot", "svg", "png", "pdf")
STYLE = {  # kind -> Graphviz attributes (declared names told apart by shape and colour)
    "op": 'shape=box, style="rounded"',
    "variable": 'shape=ellipse, style=filled, fillcolor="#cfe8ff"',
    "frozen": 'shape=ellipse, style=filled, fillcolor="#e8e8e8"',
    "argument": 'shape=ellipse, style=filled, fillcolor="#d8f5d0"',
    "leaf": "shape=ellipse",
    "constant": 'shape=plaintext, fontcolor="#999999"',
    "unconnected": 'shape=ellipse, style=dashed, color="#bbbbbb", fontcolor="#999999"',
}


class Graph:
    """``nodes``: id -> (kind, label, on the tape); ``edges``: (from, to, label or None,
    on the tape); ``target``: the id of the target's node (or None)."""

    def __init__(self):
        self.nodes: dict[str, tuple] = {}
        self.edges: list[tuple] = []
        self.target: str | None = None


def build(recorder, model, outcome) -> Graph:
    graph = Graph()
    where = Where(model.program.source)
    rows, ids = recorded(recorder)
    flowed = {(id(node), index): gx for node, index, _, gx in recorder.flows}
    leaves: dict[int, str] = {}
    for op, out, inputs, node_where in rows:
        name = ids[out._node]
        text = where.of(node_where)[0]
        graph.nodes[name] = ("op", f"{name} {op.name}\n{text}\n= {value_text(out._value)}",
                             True)
        for i, x in enumerate(inputs):
            parent = getattr(x, "_node", None)
            source = ids.get(parent)
            if source is None:
                label = operand_text(x, i, node_where, where)
                if parent is None:  # not traced: a constant, off the tape
                    source = f"c{len(graph.nodes)}"
                    graph.nodes[source] = ("constant", label, False)
                    graph.edges.append((source, name, None, False))
                    continue
                source = leaves.get(id(parent))
                if source is None:
                    source = leaves[id(parent)] = f"v{len(leaves) + 1}"
                    graph.nodes[source] = (_kind(model, label), label, True)
            gx = flowed.get((id(out._node), i))
            graph.edges.append((source, name, None if gx is None else value_text(gx), True))
    _fade_unwatched(graph, leaves, rows, recorder)
    if recorder.taken:
        graph.target = ids.get(recorder.taken[0])
    elif rows:
        graph.target = ids[rows[-1][1]._node]
    shown = {graph.nodes[v][1] for v in leaves.values()}
    for g in outcome.gradients:
        if g.gradient is None and g.name not in shown:
            graph.nodes[f"u_{g.name}"] = ("unconnected", f"{g.name}\n(no gradient)", False)
    return graph


def _fade_unwatched(graph: Graph, leaves: dict, rows: list, recorder) -> None:
    """A leaf the tape does not watch (a variable read by grad, an argument tape was
    not told to watch) is read, but no gradient can flow to it: off the tape."""
    watched = set()
    for row in rows:
        node = row[1]._node
        for trace in node.tapes:
            watched |= trace.watched
    for key, name in leaves.items():
        if key not in watched:
            kind, label, _ = graph.nodes[name]
            graph.nodes[name] = (kind, label, False)
            graph.edges = [(a, b, lab, on and a != name) for a, b, lab, on in graph.edges]


def _kind(model, name: str) -> str:
    kind = model.kinds.get(name)
    if kind == "arg":
        return "argument"
    if kind in ("var", "frozen", "variable"):
        return "variable" if model.trainable.get(name) else "frozen"
    return "leaf"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_text(graph: Graph) -> str:
    """Graphviz source: inputs above, the target at the bottom."""
    lines = ["digraph gradcli {", "  rankdir=TB;", '  node [fontname="monospace"];',
             '  edge [fontname="monospace", fontsize=10];']
    for name, (kind, label, on_tape) in graph.nodes.items():
        extra = ", peripheries=2, penwidth=2" if name == graph.target else ""
        if not on_tape and kind not in ("constant", "unconnected"):  # read, not watched
            extra += ', color="#bbbbbb", fontcolor="#999999", fillcolor="#f4f4f4"'

        lines.append(f"  {name} [label={_quoted(label)}, {STYLE[kind]}{extra}, "
                     f"class={'tape' if on_tape else 'off'}];")
    for source, dest, label, on_tape in graph.edges:
        attrs = [f"label={_quoted('adjoint ' + label)}"] if label is not None else []
        if not on_tape:
            attrs.append('style=dotted, color="#bbbbbb"')
        attrs.append(f"class={'tape' if on_tape else 'off'}")
        lines.append(f"  {source} -> {dest} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def tree_lines(graph: Graph) -> list[str]:
    """The graph as a tree from the target down (a node reached again is named, not
    repeated)."""
    inputs: dict[str, list] = {}
    for source, dest, label, _ in graph.edges:
        inputs.setdefault(dest, []).append((source, label))
    if graph.target is None:
        return ["(nothing was recorded)"]
    lines, seen = [], set()
    stack = [(graph.target, None, "", "")]
    while stack:
        name, label, lead, pad = stack.pop()
        kind, text, _ = graph.nodes[name]
        flat = text.replace("\n", "  ")
        via = f"   <- adjoint {label}" if label is not None else ""
        again = name in seen and kind == "op"
        lines.append(f"{lead}{flat if not again else name + ' (above)'}{via}")
        if again:
            continue
        seen.add(name)
        children = inputs.get(name, [])
        for k, (child, child_label) in reversed(list(enumerate(children))):
            last = k == len(children) - 1
            stack.append((child, child_label, pad + ("└─ " if last else "├─ "),
                          pad + ("   " if last else "│  ")))
    extra = [text.replace("\n", " ") for kind, text, _ in graph.nodes.values()
             if kind == "unconnected"]
    return lines + [f"(not connected: {t})" for t in extra]


def check_path(path: str) -> str:
    """The format PATH asks for (its extension), or a usage error, before any work."""
    if path == "-":
        return "tree"
    ext = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if ext not in FORMATS:
        raise InputError(f"--graph {path}: give a .dot, .svg, .png or .pdf file, or - for "
                         "a tree in the terminal")
    return ext


MISSING = ("--graph {path}: drawing .{ext} needs the graphviz Python package and "
           "Graphviz's dot program: pip install 'gradcli[graph]' and install Graphviz "
           "(e.g. apt install graphviz); a .dot file needs neither")


def render(text: str, path: str, ext: str) -> None:
    """Write .svg/.png/.pdf from Graphviz source through the graphviz package."""
    try:
        import graphviz
    except ImportError:
        raise InputError(MISSING.format(path=path, ext=ext)) from None
    try:
        data = graphviz.Source(text).pipe(format=ext)
    except graphviz.ExecutableNotFound:
        raise InputError(MISSING.format(path=path, ext=ext)) from None
    from ..io.outfile import OutputFile
    with OutputFile(path, binary=True, option="--graph") as out:
        out.write(data)


def write(graph: Graph, path: str) -> list[str] | None:
    """--graph PATH: the tree's lines for '-', else the file written (None)."""
    ext = check_path(path)
    if ext == "tree":
        return tree_lines(graph)
    text = dot_text(graph)
    if ext == "dot":
        from ..io.outfile import OutputFile
        with OutputFile(path, option="--graph") as out:
            out.write(text)
        return None
    render(text, path, ext)
    return None
