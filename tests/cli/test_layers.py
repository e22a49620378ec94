"""The layers are a contract (issue 21): no import cycle anywhere in gradcli, counting the
imports written inside functions, and import-linter's contracts (pyproject.toml) hold.

The graph is read here from every import statement with ``ast`` (tests/import_graph.py),
independently of import-linter.
"""
from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from import_graph import PACKAGE, cycles, import_graph, imports_of


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c", "d"}, "c": {"b"}, "d": set()}) == [["b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_inside_a_function_counts(tmp_path):
    source = tmp_path / "values.py"
    source.write_text("def f():\n    from .evaluate import compile_constant\n")
    known = {"gradcli.lang", "gradcli.lang.values", "gradcli.lang.evaluate"}
    assert imports_of("gradcli.lang.values", source, known) == {"gradcli.lang.evaluate"}


@pytest.mark.slow
def test_gradcli_has_no_import_cycle():
    found = cycles(import_graph())
    assert found == [], "import cycles (imports inside functions count): " + "; ".join(
        " <-> ".join(c) for c in found)


def lint_imports() -> str | None:
    """import-linter's command, installed beside this interpreter (the test extra)."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / "lint-imports"
        if candidate.is_file():
            return str(candidate)
    return None


@pytest.mark.slow
def test_import_linter_contracts_hold():
    exe = lint_imports()
    assert exe is not None, "import-linter is in the test extra: pip install -e '.[test]'"
    result = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, timeout=300,
                            cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_no_module_imports_another_s_private_names():
    """What a module lends its neighbours is public: ``from .compare import _plain`` is
    a private name crossing a module line (issue 21)."""
    import ast
    borrowed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").startswith("gradcli")):
                borrowed += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {alias.name}"
                             for alias in node.names
                             if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert borrowed == []
