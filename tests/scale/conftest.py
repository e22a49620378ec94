"""The tests of ``--at`` past one process (gradcli/cli/scale.py, io/parquet.py,
run/distributed.py): one real Dask ``LocalCluster`` per test session (2 worker processes,
loopback only), started by the first test that asks for it and closed at the end; and a
small partitioned data set, with the same rows as one CSV file."""
from __future__ import annotations

import logging

import numpy as np
import pytest

#: Rows of the data set: 3 Parquet files of 40 rows, row groups of 15 (9 partitions).
FILES, ROWS, GROUP = 3, 40, 15


@pytest.fixture(scope="session")
def scheduler():
    """The address of a LocalCluster (2 worker processes, one thread each, 127.0.0.1)."""
    import distributed   # (the dask extra is part of the test extra)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                       silence_logs=logging.ERROR)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    """``dir`` (3 Parquet files), ``csv`` (the same rows as one CSV file, numbers as
    Python prints them, so both read to the same float64), ``x``, ``y``, ``ids``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    root = tmp_path_factory.mktemp("scale")
    rng = np.random.default_rng(24)
    x, y = rng.normal(size=FILES * ROWS), rng.normal(size=FILES * ROWS)
    ids = [f"id{k}" for k in range(FILES * ROWS)]
    (root / "data").mkdir()
    for f in range(FILES):
        cut = slice(f * ROWS, (f + 1) * ROWS)
        pq.write_table(pa.table({"id": ids[cut], "x": x[cut], "y": y[cut]}),
                       root / "data" / f"part-{f}.parquet", row_group_size=GROUP)
    with open(root / "all.csv", "w") as out:
        out.write("id,x,y\n")
        out.writelines(f"{i},{a!r},{b!r}\n" for i, a, b in zip(ids, x.tolist(), y.tolist()))
    return {"root": root, "dir": root / "data", "csv": root / "all.csv", "x": x, "y": y,
            "ids": ids}
