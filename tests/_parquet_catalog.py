"""A partitioned Parquet catalog for the scale-out recipes' tests (Dask, Ray)."""

from __future__ import annotations

from typing import Any

from toolfilter_fast.bench import workload as _workload


def write_parts(folder: Any, rows: int, parts: int) -> tuple[list[Any], Any, list[str]]:
    """``rows`` tools of 2,000 interleaved servers, in loader order, written as
    ``parts`` Parquet files in ``folder`` with a ``row`` column of their index:
    the tools, the whole table and the files' paths."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tools = _workload.catalog(rows, servers=2_000, layout="in-order", interleaved=True)
    table = pa.table({"server_id": [t.server_id for t in tools], "name": [t.name for t in tools],
                      "row": list(range(rows))})
    step = rows // parts
    paths = []
    for k in range(parts):
        path = folder / f"part-{k}.parquet"
        pq.write_table(table.slice(k * step, step), path)
        paths.append(str(path))
    return tools, table, paths
