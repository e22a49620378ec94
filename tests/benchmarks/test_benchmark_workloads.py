"""The benchmark's workloads compute what the hand-written numpy computes (correctness
only: speed is measured by benchmarks/run.py, never in a test)."""
import importlib.util
from pathlib import Path

import pytest

import gradcli as gc

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"
_spec = importlib.util.spec_from_file_location("gradcli_benchmarks", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.slow
@pytest.mark.parametrize("build", ["build_weighted", "build_chain", "build_big", "build_mlp"])
def test_gradcli_agrees_with_hand_written_numpy(build):
    impls, reference = getattr(bench, build)(gc, None, None)
    assert set(impls) >= {"numpy", "gradcli"}
    assert bench.same(impls["gradcli"](), reference) == "ok"
    assert bench.same(impls["numpy"](), reference) == "ok"


def test_the_agreement_check_can_fail():
    impls, reference = bench.build_weighted(gc, None, None)
    value, grads = impls["gradcli"]()
    assert bench.same((value, [g * 2.0 for g in grads]), reference).startswith("MISMATCH")


@pytest.mark.slow
def test_deep_chains_of_both_sizes_run():
    for n in (10_000, 100_000):
        run, (value, [grad]) = bench.deep_gradcli(gc, n)
        assert bench.same(run(), (value, [grad])) == "ok"
