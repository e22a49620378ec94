"""The hessian benchmark row computes the hand-written Hessian by both of gradcli's ways
(correctness only: speed is measured by benchmarks/run.py, never in a test)."""
import importlib.util
from pathlib import Path

import gradcli as gc

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"
_spec = importlib.util.spec_from_file_location("gradcli_benchmarks_forward", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_hessian_row_agrees_with_the_hand_written_hessian():
    impls, reference = bench.build_hessian(gc, None, None)
    assert set(impls) == {"numpy", "gradcli fwd-over-rev", "gradcli rev-over-rev"}
    for name, run in impls.items():
        assert bench.same(run(), reference) == "ok", name
