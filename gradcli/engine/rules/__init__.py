"""The function table, by rule module (see ``gradcli.engine``'s docstring).

Importing this package registers the entries every start needs and publishes them
(``core.recording.publish``); the linear algebra and the further functions are
registered the first time one of their names is needed (``core.table.LOADERS``).
"""
from __future__ import annotations

import sys

from ..core.recording import publish
from ..core.table import LOADERS

# Each registers its entries when imported: this order is the table's order.
# isort: off
from . import elementwise, reductions, matmul, shape, constructors  # noqa: F401
# isort: on

publish()


def _load_on_demand() -> bool:
    """Register the entries of linalg.py, then more_ops.py (the table's order), and
    publish them; False (not yet) while one of them is being imported by itself."""
    for name in ("linalg", "more_ops"):
        module = sys.modules.get(f"{__name__}.{name}")
        if module is not None and getattr(module.__spec__, "_initializing", False):
            return False
    from . import linalg, more_ops  # noqa: F401
    publish()
    return True


LOADERS.append(_load_on_demand)
