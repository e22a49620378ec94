"""``gradcli functions``: the function table (the engine's entries, in the table's order)
and the constants, as a result that says what it holds (``report()``)."""
from __future__ import annotations

from dataclasses import dataclass

from ..io.report import Page, Report


@dataclass
class FunctionTable:
    """Every entry of the engine's table (``entries``, in its order) and the constants a
    program may name (``constants``: name -> value)."""
    entries: list
    constants: dict

    def report(self) -> Report:
        """JSON: each entry (name, aliases, inputs, parameters, kind, derivative, domain,
        description, which modes have rules) and the constants; the command has no
        plain form (no lines)."""
        from ..io.jsonvalue import json_number
        return Report("functions", {
            "functions": [_entry(op) for op in self.entries],
            "constants": {k: json_number(v) for k, v in self.constants.items()}}, [])

    def page(self) -> Page:
        """The human page: the table, every text as written in it, then the constants
        and the operators."""
        rows = []
        for op in self.entries:
            args = ", ".join(list(op.inputs) + [f"{k}={v!r}" for k, v in op.params])
            if op.variadic:
                args = "[x, ...]" + args[2:]
            rows.append([op.name, ", ".join(op.aliases), args, op.derivative, op.domain,
                         op.doc])
        return Page().table(
            ["name", "aliases", "arguments", "derivative", "domain", "description"], rows,
            "gradcli functions", prose=True).line(
            "constants: " + ", ".join(f"{k} = {v!r}" for k, v in self.constants.items())).line(
            "operators: + - * / ** (also ^) @, unary -, comparisons < <= > >= == != "
            "(where conditions), indexing x[i], x[1:3], x[:, 0]")


def function_table() -> FunctionTable:
    """The table as ``gradcli functions`` lists it."""
    from ..engine.core.recording import CONSTANTS
    from ..engine.core.table import ORDER, REGISTRY
    return FunctionTable([REGISTRY[name] for name in ORDER], CONSTANTS)


def _entry(op) -> dict:
    return {"name": op.name, "aliases": list(op.aliases), "inputs": list(op.inputs),
            "params": {k: _json_default(v) for k, v in op.params},
            "kind": op.kind, "derivative": op.derivative, "domain": op.domain,
            "description": op.doc, "differentiable": op.differentiable,
            "sympy": op.sympy is not None,
            # which modes have rules: reverse (a VJP), forward (a JVP), per entry
            "reverse": op.differentiable,
            "forward": any(rule is not None for rule in op.jvps)}


def _json_default(value):
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)
