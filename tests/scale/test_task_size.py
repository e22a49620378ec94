"""A task carries its job, and the job the opened source: pickled for a worker, the
source does not carry the list of every partition (a run would send O(P^2) bytes), and
it still reads the partition a task gives it."""
from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gradcli.io.parquet import open_partitioned
from gradcli.io.points import Chunk, Slot


def opened(tmp_path, groups: int):
    x = np.arange(groups, dtype=np.float64) / 7
    path = tmp_path / f"g{groups}.parquet"
    pq.write_table(pa.table({"x": x}), path, row_group_size=1)
    return open_partitioned(f"@{path}", {"x": Slot("arg", None)}), x


def test_a_pickled_source_does_not_grow_with_the_partitions(tmp_path):
    few, _ = opened(tmp_path, 2)
    many, x = opened(tmp_path, 300)
    assert len(many.partitions) == 300
    sent = pickle.dumps(many)
    assert len(sent) < len(pickle.dumps(few)) + 50   # (the path's digits differ)
    worker = pickle.loads(sent)
    part = many.partitions[150]
    chunks = [c for c in worker.chunks(pickle.loads(pickle.dumps(part)))]
    assert len(chunks) == 1 and isinstance(chunks[0], Chunk)
    assert chunks[0].start == 150 and chunks[0].values["x"].tolist() == [x[150]]
    assert len(many.partitions) == 300 and worker.total == 300   # (the client's is whole)
