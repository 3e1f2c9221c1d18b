"""The Ray Data recipe on a real local Ray (worker processes on 127.0.0.1): a
partitioned Parquet catalog filtered through the Arrow path gives the
single-process answer."""

from __future__ import annotations

import os

import pytest

import toolfilter_fast
from toolfilter_fast.bench import workload as _workload

pa = pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow was built without Parquet")
# No usage report: the test talks to 127.0.0.1 only.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray = pytest.importorskip("ray", reason="the ray extra is not installed")
ray_data = pytest.importorskip("ray.data", reason="the ray extra is not installed")

from _parquet_catalog import write_parts  # noqa: E402

from toolfilter_fast import ray_recipe  # noqa: E402

ROWS, PARTS = 200_000, 4


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    folder = tmp_path_factory.mktemp("catalog")
    tools, _table, _paths = write_parts(folder, ROWS, PARTS)
    return tools, str(folder)


@pytest.fixture(scope="module")
def local_ray():
    # Logical CPUs: two for the actor pool, the rest for the read tasks (listing
    # the files), which would wait forever behind the pool with only two.
    ray.init(num_cpus=4, include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=256 * 2**20, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_data_gives_the_single_process_mask(catalog, local_ray):
    tools, folder = catalog
    tool_filter = toolfilter_fast.compile(include=_workload.patterns(300, "include", tools),
                                          exclude=_workload.patterns(300, "exclude", tools))
    want = tool_filter.static_mask(tools)
    dataset = ray_data.read_parquet(folder, override_num_blocks=PARTS)
    masked = ray_recipe.with_mask(dataset, tool_filter, workers=2).to_arrow_refs()
    table = pa.concat_tables(ray.get(masked)).sort_by("row")
    assert table["row"].to_pylist() == list(range(ROWS))
    assert table["visible"].to_pylist() == want
    kept = pa.concat_tables(ray.get(ray_recipe.visible(dataset, tool_filter, workers=2)
                                    .to_arrow_refs())).sort_by("row")
    assert kept["row"].to_pylist() == [i for i, keep in enumerate(want) if keep]
    assert 0 < len(kept) < ROWS


def test_nulls_are_hidden_on_ray_too(local_ray):
    tool_filter = toolfilter_fast.compile()
    dataset = ray_data.from_arrow(pa.table({"server_id": ["a", None, "c"],
                                            "name": ["x", "y", None], "row": [0, 1, 2]}))
    table = pa.concat_tables(ray.get(ray_recipe.with_mask(dataset, tool_filter).to_arrow_refs()))
    assert table.sort_by("row")["visible"].to_pylist() == [True, False, False]


@pytest.mark.parametrize(("args", "kwargs", "error", "words"), [
    (([1, 2], None), {}, TypeError, "dataset must be a ray.data.Dataset, not list"),
    ((None, "github/*"), {}, TypeError, "tool_filter must be a ToolFilter, not str"),
    ((None, None), {"workers": 0}, ValueError, "workers must be an int from 1 up, not 0"),
    ((None, None), {"threads": True}, ValueError, "threads must be an int from 1 up, not True"),
])
def test_bad_arguments_are_named(args, kwargs, error, words):
    dataset = args[0] if args[0] is not None else ray_data.from_items([{"server_id": "a", "name": "b"}])
    tool_filter = args[1] if args[1] is not None else toolfilter_fast.compile()
    with pytest.raises(error, match=words):
        ray_recipe.visible(dataset, tool_filter, **kwargs)
