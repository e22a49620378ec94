"""The function table, by rule module (see ``gradcli.engine``'s docstring).

Importing this package registers the entries every start needs and publishes them
(``core.recording.publish``); the rule modules given to ``on_demand`` below register
theirs the first time one of their names is needed (their names are read from their
source: see ``core.table``). A new rule module is imported here or given to
``on_demand``; a new entry needs neither.

A module loaded on demand registers its entries like any other and publishes them in the
namespaces ``NP`` and ``ENGINE``, so every entry there is an ordinary entry: ``gc.NAME``,
the language, ``gradcli functions``, the sympy check and the table-wide tests all read
it. All rules are written against the namespace ``m`` (so second derivatives work
through nested tapes), take axes with numpy's semantics under the parameter names
``axis``/``axes``, and give a zero local derivative as a hard zero
(``elementwise.gate``: never ``0 * inf``, but nan stays nan).
"""
from __future__ import annotations

import os

from ..core.recording import publish
from ..core.table import on_demand

# Each registers its entries when imported: this order is the table's order.
# isort: off
from . import elementwise, reductions, matmul, shape, constructors  # noqa: F401
# isort: on

publish()

# Loaded on demand, in this order (each imports the one before it first, so the table's
# order does not depend on which is needed first).
for _module in ("linalg", "statistics", "elementwise_extra", "shape_extra"):
    on_demand(f"{__name__}.{_module}", os.path.join(os.path.dirname(__file__), f"{_module}.py"))
