"""What the ``--at`` test files share: the Rosenbrock programs and their derivatives by
hand, an in-process runner of the command line, and a streamed run whose peak of Python
allocations is measured."""
from __future__ import annotations

import tracemalloc

import numpy as np
from typer.testing import CliRunner

from gradcli.cli.app import app

ROSEN = "(1 - x)^2 + 100*(y - x^2)^2"
ROSEN_P = "(1 - p[0])^2 + 100*(p[1] - p[0]^2)^2"


def rosenbrock(x, y):
    """Value and gradient of the Rosenbrock function, by hand."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    value = (1 - x) ** 2 + 100 * (y - x ** 2) ** 2
    dx = -2 * (1 - x) - 400 * x * (y - x ** 2)
    dy = 200 * (y - x ** 2)
    return value, dx, dy


def invoke(*args, stdin=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=stdin)


def streamed_run(tmp_path, monkeypatch, points: np.ndarray, out):
    """``value-grad ROSEN_P --at @p.npy --chunk 1000 --output out`` over ``points``, with
    the engine's work on a chunk replaced by numpy (what is measured is the reading,
    chunking and writing around it): (the result, the peak of Python allocations)."""
    from gradcli.run import many
    np.save(tmp_path / "p.npy", points)

    def vectorised(self, values):
        p = values["p"]
        value, dx, dy = rosenbrock(p[:, 0], p[:, 1])
        if self.meta is None:
            self.meta = self.run_one({"p": p[0]})
        return value, [np.stack([dx, dy], axis=1)]
    monkeypatch.setattr(many.Evaluator, "__call__", vectorised)
    tracemalloc.start()
    try:
        result = invoke("value-grad", ROSEN_P, "--var", "p", "--at", f"@{tmp_path / 'p.npy'}",
                        "--chunk", "1000", "--output", out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak
