"""The engine's layers are a contract (issue 21): the core imports no rule module, the
fast paths import no rule either, and the modules of gradcli/engine import one way (no
cycle), counting the imports inside functions, which hid three cycles before.

Truth: the import statements themselves, read with ``ast`` from the source files (no
module is imported to find them).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "gradcli" / "engine"
PACKAGE = "gradcli.engine"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _imports(name: str) -> set[str]:
    """The gradcli.engine modules that ``name`` imports, anywhere in its source."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if _is_package(name) else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
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
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name) for name in MODULES}
CORE = sorted(m for m in MODULES if m.startswith(f"{PACKAGE}.core"))
FAST = sorted(m for m in MODULES if m.startswith(f"{PACKAGE}.fast"))


def test_the_engine_has_the_three_parts():
    assert CORE and FAST and any(m.startswith(f"{PACKAGE}.rules.") for m in MODULES)


@pytest.mark.parametrize("module", CORE + FAST)
def test_the_core_and_the_fast_paths_import_no_rule_module(module):
    rules = sorted(m for m in GRAPH[module] if m.startswith(f"{PACKAGE}.rules"))
    assert not rules, f"{module} imports {rules}: the core finds entries in the registry"


@pytest.mark.parametrize("module", FAST)
def test_the_fast_paths_import_only_the_core_s_lowest_modules(module):
    # (the core calls the fast paths; they read values and the global state only)
    allowed = {f"{PACKAGE}.core", f"{PACKAGE}.core.state", f"{PACKAGE}.core.tensor"}
    assert GRAPH[module] <= allowed, sorted(GRAPH[module] - allowed)


def test_the_engine_s_module_graph_has_no_cycle():
    """Depth-first search; a module met again while on the current path closes a cycle."""
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join(
                path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for other in sorted(GRAPH[module]):
            visit(other)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)


def test_the_reader_finds_imports_inside_functions():
    """The contract's teeth: an import inside a function body counts as any other."""
    tape = GRAPH[f"{PACKAGE}.core.tape"]
    assert f"{PACKAGE}.core.batching" in tape  # (tape.gradient imports it when batching)
