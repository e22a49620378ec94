"""The engine's layers are a contract (issue 21): the core imports no rule module, the
fast paths import no rule either, and the modules of gradcli/engine import one way (no
cycle), counting the imports inside functions, which hid three cycles before. And the
algorithm reads apart from its speed tricks: each step of fast.py is called at one place,
and the backward pass fits one screen.

Truth: the import statements themselves, read with ``ast`` from the source files (no
module is imported to find them; the calls too).
"""
from __future__ import annotations

import ast
import inspect

import pytest

from gradcli.engine import fast
from gradcli.engine.core.tape import GradientTape
from import_graph import cycles, import_graph, modules

PACKAGE = "gradcli.engine"
GRAPH = import_graph(PACKAGE)
MODULES = set(GRAPH)
CORE = sorted(m for m in MODULES if m.startswith(f"{PACKAGE}.core"))
FAST = sorted(m for m in MODULES if m.startswith(f"{PACKAGE}.fast"))


def test_the_engine_has_the_three_parts():
    assert CORE and FAST and any(m.startswith(f"{PACKAGE}.rules.") for m in MODULES)


@pytest.mark.parametrize("module", CORE + FAST)
def test_the_core_and_the_fast_paths_import_no_rule_module(module):
    rules = sorted(m for m in GRAPH[module] if m.startswith(f"{PACKAGE}.rules"))
    assert not rules, f"{module} imports {rules}: the core finds entries in the registry"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(f"{PACKAGE}.rules")))
def test_the_rules_import_no_fast_path(module):
    # (fast.py keeps its twins by entry name; the registry gives them to the entries)
    assert not {m for m in GRAPH[module] if m.startswith(f"{PACKAGE}.fast")}


@pytest.mark.parametrize("module", FAST)
def test_the_fast_paths_import_only_the_core_s_lowest_modules(module):
    # (the core calls the fast paths; they read values and the global state only)
    allowed = {f"{PACKAGE}.core", f"{PACKAGE}.core.state", f"{PACKAGE}.core.tensor"}
    assert GRAPH[module] <= allowed, sorted(GRAPH[module] - allowed)


def test_the_engine_s_module_graph_has_no_cycle():
    assert cycles(GRAPH) == []


def test_the_reader_finds_imports_inside_functions():
    """The contract's teeth: an import inside a function body counts as any other."""
    tape = GRAPH[f"{PACKAGE}.core.tape"]
    assert f"{PACKAGE}.core.batching" in tape  # (tape.gradient imports it when batching)


# --- the algorithm reads apart from its speed tricks (issue 21) ---------------------------
# The steps the algorithm calls (fast.py's docstring lists them); the rest of fast.py
# serves these.
STEPS = ("upstream", "add_into", "owned", "reusable_buffer", "speedups")


def _calls_of_fast() -> dict[str, list[str]]:
    """fast.NAME(...) calls outside fast.py, by NAME: the modules that make them."""
    found: dict[str, list[str]] = {}
    for name, path in modules("gradcli").items():
        if name == f"{PACKAGE}.fast":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "fast"):
                found.setdefault(node.func.attr, []).append(name)
    return found


def test_each_fast_path_step_is_called_at_one_place():
    calls = _calls_of_fast()
    assert {step: len(calls.get(step, [])) for step in STEPS} == dict.fromkeys(STEPS, 1)
    assert set(calls) <= set(STEPS), "a fast path called from outside its steps"
    assert all(callable(getattr(fast, step)) for step in STEPS)


def test_the_backward_pass_reads_in_one_screen():
    lines = inspect.getsource(GradientTape._backward).splitlines()
    assert len(lines) <= 40, f"GradientTape._backward is {len(lines)} lines"
