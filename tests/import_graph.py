"""gradcli's import graph, read from the source with ``ast`` (no module is imported to
find it): every import statement counts, those inside functions too, which hid three
cycles before issue 21. Shared by tests/cli/test_layers.py and tests/engine/test_engine_layers.py."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gradcli"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(under: str = "gradcli") -> dict[str, Path]:
    """The modules of the package (or of one of its subpackages), by dotted name."""
    found = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    return {name: path for name, path in found.items()
            if name == under or name.startswith(under + ".")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that one file imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from package import submodule` imports the submodule (the package's
            # __init__ runs first whatever is imported: a parent, not an edge)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def import_graph(under: str = "gradcli") -> dict[str, set[str]]:
    """module -> the modules (under ``under``) it imports."""
    found = modules(under)
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []

    def enter(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)

    for root in sorted(graph):
        if root in index:
            continue
        enter(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    enter(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while not component or component[-1] != node:
                    component.append(stack.pop())
                    on_stack.discard(component[-1])
                if len(component) > 1:
                    out.append(sorted(component))
    return out
