"""Filtering a partitioned Parquet catalog on a Dask cluster, through the Arrow path.

A recipe, not a framework: each worker gets the filter once (``Client.scatter``
with ``broadcast=True``; a ToolFilter pickles as its patterns and compiles once
where it lands), and each task reads one Parquet part with pyarrow and decides it
with :meth:`ToolFilter.static_mask_arrow`, which reads the columns' buffers in
place. Nothing is made per row in Python on either side.

    from distributed import Client, LocalCluster
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.dask_recipe import visible_parts

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None)
    with Client(cluster) as client:
        tool_filter = ToolFilter.compile(include=["github/*"], exclude=["*/delete_*"])
        parts = visible_parts(client, sorted(glob.glob("catalog/*.parquet")), tool_filter)
        visible = pyarrow.concat_tables(client.gather(parts))

:func:`masks` gives the boolean mask of each part instead, :func:`count_visible`
only the number of visible rows (nothing but a count comes back). Each task decides
its part on ``threads`` threads (1 by default: the workers are the parallelism; give
a worker as many as it has cores to spare).

Needs the ``dask`` extra (``pip install 'toolfilter_fast[dask]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .filter import ToolFilter

__all__ = ["count_visible", "masks", "visible_parts"]


def _read(path: str, columns: list[str] | None) -> Any:
    import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

    return pq.read_table(path, columns=columns)


def _part_mask(path: str, tool_filter: ToolFilter, columns: tuple[str, str], threads: int) -> Any:
    table = _read(path, list(columns))
    return tool_filter.static_mask_arrow(table[columns[0]], table[columns[1]], threads=threads)


def _part_visible(path: str, tool_filter: ToolFilter, columns: tuple[str, str],
                  threads: int) -> Any:
    table = _read(path, None)
    mask = tool_filter.static_mask_arrow(table[columns[0]], table[columns[1]], threads=threads)
    return table.filter(mask)


def _part_count(path: str, tool_filter: ToolFilter, columns: tuple[str, str], threads: int) -> int:
    return int(_part_mask(path, tool_filter, columns, threads).true_count)


def _each_part(function: Any, client: Any, paths: Sequence[str], tool_filter: ToolFilter,
               columns: tuple[str, str], threads: int) -> list[Any]:
    # Sent once to every worker; the tasks name it, and each finds its copy there.
    shipped = client.scatter(tool_filter, broadcast=True, hash=False)
    return list(client.map(function, list(paths), tool_filter=shipped, columns=columns,
                           threads=threads, pure=False))


def visible_parts(client: Any, paths: Sequence[str], tool_filter: ToolFilter, *,
                  server_column: str = "server_id", name_column: str = "name",
                  threads: int = 1) -> list[Any]:
    """One future per Parquet part: the part's rows that ``tool_filter`` statically
    keeps (:meth:`ToolFilter.static_mask_arrow`), as a ``pyarrow.Table``."""
    return _each_part(_part_visible, client, paths, tool_filter, (server_column, name_column),
                      threads)


def masks(client: Any, paths: Sequence[str], tool_filter: ToolFilter, *,
          server_column: str = "server_id", name_column: str = "name",
          threads: int = 1) -> list[Any]:
    """One future per Parquet part: its ``pyarrow.BooleanArray`` mask."""
    return _each_part(_part_mask, client, paths, tool_filter, (server_column, name_column),
                      threads)


def count_visible(client: Any, paths: Sequence[str], tool_filter: ToolFilter, *,
                  server_column: str = "server_id", name_column: str = "name",
                  threads: int = 1) -> int:
    """How many rows of all the parts ``tool_filter`` statically keeps."""
    futures = _each_part(_part_count, client, paths, tool_filter, (server_column, name_column),
                         threads)
    return sum(client.gather(futures))
