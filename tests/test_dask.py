"""The Dask recipe on a real local cluster (process workers, loopback only): a
partitioned Parquet catalog filtered through the Arrow path gives the
single-process answer."""

from __future__ import annotations

import pytest

import toolfilter_fast
from toolfilter_fast.bench import workload as _workload

pa = pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow was built without Parquet")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")

from toolfilter_fast import dask_recipe  # noqa: E402

ROWS, PARTS = 200_000, 4


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    tools = _workload.catalog(ROWS, servers=2_000, layout="in-order", interleaved=True)
    table = pa.table({"server_id": [t.server_id for t in tools], "name": [t.name for t in tools],
                      "row": list(range(ROWS))})
    folder = tmp_path_factory.mktemp("catalog")
    step = ROWS // PARTS
    paths = []
    for k in range(PARTS):
        path = folder / f"part-{k}.parquet"
        pq.write_table(table.slice(k * step, step), path)
        paths.append(str(path))
    return tools, table, paths


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       worker_dashboard_address=None)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def test_the_cluster_gives_the_single_process_mask(catalog, client):
    tools, _table, paths = catalog
    include = _workload.patterns(300, "include", tools)
    exclude = _workload.patterns(300, "exclude", tools)
    tool_filter = toolfilter_fast.compile(include=include, exclude=exclude)
    want = tool_filter.static_mask(tools)
    parts = client.gather(dask_recipe.masks(client, paths, tool_filter))
    got = [keep for part in parts for keep in part.to_pylist()]
    assert len(parts) == PARTS and got == want
    visible = pa.concat_tables(client.gather(dask_recipe.visible_parts(client, paths, tool_filter)))
    assert visible["row"].to_pylist() == [i for i, keep in enumerate(want) if keep]
    assert dask_recipe.count_visible(client, paths, tool_filter) == sum(want)
