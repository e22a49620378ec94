"""--graph (issue 23, part 2): the recorded graph as Graphviz source, a tree, a picture.

Truth: the tape's own graph, walked from the node the backward pass took first through
the nodes' parents (an input counts when the tape recorded it or watches it), counts the
nodes and edges the .dot must mark ``class=tape``. The .dot text is parsed here always;
Graphviz's ``dot`` also renders it where it is installed (``shutil.which("dot")``; on a
machine without it, the structure checks still run and the render is not claimed).
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gradcli.engine.core.observe import Recorder, observing
from gradcli.lang import Declarations, build, parse_program
from gradcli.run import graph as graph_module
from gradcli.run.modes import ModeOptions, run_mode

PROGRAMS = [
    ("sin(x*y) + x^2", dict(arg=["x=0.5", "y=2"]), "grad", None),
    ("c = constant(5)\ny = 3*w*x + c\ny^2", dict(var=["w=2", "u=1"], arg=["x=1"]), "tape",
     ModeOptions(wrt=["w", "u"])),
    ("h = tanh(W @ v + b)\nsum(h * h) + w*0", dict(var=["W=[[1, 2], [3, 4]]", "b=[0.5, -1]",
                                                      "w=1"], arg=["v=[0.1, 0.2]"]),
     "value-grad", None),
    ("x*x*x", dict(arg=["x=2"]), "grad", None),
]
NODE = re.compile(r"^  (\w+) \[(.*)\];$")
EDGE = re.compile(r"^  (\w+) -> (\w+) \[(.*)\];$")


def _recorded(program, decls, mode, options):
    model = build(parse_program(program), Declarations.from_options(**decls))
    with observing(Recorder()) as recorder:
        outcome = run_mode(mode, model, options)
    return model, recorder, outcome


def _tape_counts(recorder) -> tuple[int, int]:
    """Nodes and edges of the tape's graph, from its own Node records."""
    target = recorder.taken[0]  # (taken: node, adjoint, node, ...)
    trace = target.tapes[0]
    seen, edges, stack = {id(target)}, 0, [target]
    while stack:
        node = stack.pop()
        for parent in node.parents:
            if parent is None or not (trace in parent.tapes or id(parent) in trace.watched):
                continue
            edges += 1
            if id(parent) not in seen:
                seen.add(id(parent))
                if parent.op is not None:
                    stack.append(parent)
    return len(seen), edges


def _parsed(text: str) -> tuple[dict, list]:
    lines = text.splitlines()
    assert lines[0] == "digraph gradcli {" and lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if (m := EDGE.match(line)):
            edges.append(m.groups())
        elif (m := NODE.match(line)) and m.group(1) not in ("node", "edge"):
            nodes[m.group(1)] = m.group(2)
    assert all(a in nodes and b in nodes for a, b, _ in edges)  # no dangling edge
    return nodes, edges


@pytest.mark.parametrize("program, decls, mode, options", PROGRAMS)
def test_dot_marks_the_tapes_nodes_and_edges(program, decls, mode, options, tmp_path):
    model, recorder, outcome = _recorded(program, decls, mode, options)
    drawn = graph_module.build(recorder, model, outcome)
    text = graph_module.dot_text(drawn)
    nodes, edges = _parsed(text)
    on_tape = [n for n, attrs in nodes.items() if "class=tape" in attrs]
    tape_edges = [e for e in edges if "class=tape" in e[2]]
    assert (len(on_tape), len(tape_edges)) == _tape_counts(recorder)
    assert "peripheries=2" in nodes[drawn.target]  # the target is marked
    for g in outcome.gradients:  # an unconnected source is drawn, faded
        if g.gradient is None:
            assert any(attrs.startswith(f'label="{g.name}\\n(no gradient)"')
                       and "dashed" in attrs for attrs in nodes.values())
    if shutil.which("dot"):  # Graphviz itself reads it, where installed
        path = tmp_path / "g.dot"
        path.write_text(text)
        done = subprocess.run(["dot", "-Tsvg", str(path)], capture_output=True, text=True)
        assert done.returncode == 0 and "<svg" in done.stdout, done.stderr
        # what Graphviz read: it copies each class into the SVG's groups
        assert (done.stdout.count('class="node tape"'), done.stdout.count(
            'class="edge tape"')) == _tape_counts(recorder)
        assert done.stdout.count('class="node') == len(nodes)
        assert done.stdout.count('class="edge') == len(edges)


def test_tree_lists_every_operation_from_the_target_down():
    model, recorder, outcome = _recorded(*PROGRAMS[0])
    lines = graph_module.tree_lines(graph_module.build(recorder, model, outcome))
    assert lines[0].startswith("n4 add  sin(x*y) + x^2")
    assert [line.split("n", 1)[1].split()[0] for line in lines if " n" in line] == \
        ["2", "1", "3"]  # sin, multiply below it, then power
    assert "├─ n2 sin  sin(x*y)" in lines[1] and "└─ n3 power  x^2" in lines[-3]


@pytest.mark.slow
def test_cli_graph_file_tree_and_refusals(tmp_path):
    from cli_process import run
    dot = tmp_path / "g.dot"
    r = run("grad", "x*y", "--arg", "x=2", "--arg", "y=3", "--graph", dot, "--plain")
    assert r.returncode == 0 and r.stdout == "3.0\n2.0\n"
    nodes, edges = _parsed(dot.read_text())
    assert len(nodes) == 3 and len(edges) == 2
    r = run("grad", "x*y", "--arg", "x=2", "--arg", "y=3", "--graph", "-", "--plain")
    assert r.stdout.splitlines()[2].startswith("n1 multiply  x*y  = 6.0")
    r = run("grad", "x*y", "--arg", "x=2", "--arg", "y=3", "--graph", tmp_path / "g.txt")
    assert r.returncode == 2 and ".dot, .svg, .png or .pdf" in r.stderr and not r.stdout
    r = run("grad", "x", "--arg", "x=2", "--graph", "-", "--json")
    assert r.returncode == 2 and "--json" in r.stderr
    svg = tmp_path / "g.svg"
    r = run("grad", "x*y", "--arg", "x=2", "--arg", "y=3", "--graph", svg, "--plain")
    assert r.stdout == "3.0\n2.0\n"  # the result is printed either way
    try:
        import graphviz  # noqa: F401
        drawable = shutil.which("dot") is not None
    except ImportError:
        drawable = False
    if drawable:
        assert r.returncode == 0 and svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    else:  # one message naming what to install, exit 2, no file
        assert r.returncode == 2 and "pip install 'gradcli[graph]'" in r.stderr
        assert "Graphviz" in r.stderr and not svg.exists()


@pytest.mark.slow
def test_the_docs_picture_is_what_gradcli_draws(tmp_path):
    """docs/images/inside-graph.svg (README, docs/inside.md) is gradcli's own drawing of
    the program its caption names: the same texts, nodes and edges as a fresh one."""
    import re
    from pathlib import Path
    from cli_process import run
    committed = (Path(__file__).resolve().parents[2] / "docs" / "images"
                 / "inside-graph.svg").read_text()
    texts = sorted(re.findall(r"<text[^>]*>([^<]*)</text>", committed))
    dot = tmp_path / "g.dot"  # (what gradcli writes itself, Graphviz or not)
    r = run("grad", "sin(x*y) + x^2", "--arg", "x=0.5", "--arg", "y=2", "--graph", dot)
    nodes, edges = _parsed(dot.read_text())
    labels = [part for attrs in nodes.values() for part in
              re.match(r'label="([^"]*)"', attrs).group(1).split("\\n")]
    labels += [m.group(1) for *_, attrs in edges if (m := re.search(r'label="([^"]*)"', attrs))]
    assert texts == sorted(label.replace("&", "&amp;") for label in labels)
    assert (committed.count('class="node'), committed.count('class="edge')) == (
        len(nodes), len(edges))
    if shutil.which("dot"):  # and Graphviz draws the same today
        fresh = tmp_path / "g.svg"
        r = run("grad", "sin(x*y) + x^2", "--arg", "x=0.5", "--arg", "y=2", "--graph", fresh)
        assert r.returncode == 0, r.stderr
        assert sorted(re.findall(r"<text[^>]*>([^<]*)</text>", fresh.read_text())) == texts
