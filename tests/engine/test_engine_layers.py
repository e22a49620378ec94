"""The engine's layers are a contract (issue 21): the core imports no rule module, the
fast paths import no rule either, and the modules of gradcli/engine import one way (no
cycle), counting the imports inside functions, which hid three cycles before.

Truth: the import statements themselves, read with ``ast`` from the source files (no
module is imported to find them).
"""
from __future__ import annotations

import pytest

from import_graph import cycles, import_graph

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
