"""The clusters gradcli starts (``--dask local``, run/distributed.py's ``local_cluster``)
run without Dask's settings that cost CPU a run does not need (``QUIET``): each is a real
key of Dask's configuration (a misspelt one would be ignored silently), and a started
cluster's worker really runs with them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradcli.run.distributed import QUIET, local_cluster


@pytest.mark.parametrize("key", sorted(QUIET))
def test_every_setting_is_one_of_dasks(key):
    import dask
    import distributed  # noqa: F401 - (its defaults are loaded on import)
    sentinel = object()
    assert dask.config.get(key, sentinel) is not sentinel, key


@pytest.mark.slow
def test_a_local_cluster_worker_has_them():
    import distributed
    cluster = local_cluster(1)
    try:
        with distributed.Client(cluster) as client:
            seen = client.run(lambda dask_worker: (
                {k: v.callback_time for k, v in dask_worker.periodic_callbacks.items()},
                "MALLOC_TRIM_THRESHOLD_" in os.environ))
    finally:
        cluster.close()
    (callbacks, trim), = seen.values()
    assert "profile" not in callbacks            # (the sampling profiler: every 10 ms)
    assert callbacks["tick"] == 1000             # (1 s, not 20 ms)
    assert callbacks["memory_monitor"] == 1000   # (1 s, not 100 ms)
    assert callbacks["monitor"] == 2000          # (2 s, not 500 ms)
    assert not trim


def test_the_docs_advise_the_same_settings_for_an_existing_cluster():
    import yaml   # (Dask's dependency)
    text = (Path(__file__).parents[2] / "docs" / "scaling.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    flat = {}

    def walk(prefix, node):
        for key, value in node.items():
            if isinstance(value, dict):
                walk(f"{prefix}{key}.", value)
            else:
                flat[f"{prefix}{key}"] = value
    walk("", yaml.safe_load(block))
    assert flat == QUIET
