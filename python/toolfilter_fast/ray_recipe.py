"""Filtering a tool catalog held in a Ray Dataset, through the Arrow path.

The second scale-out recipe beside :mod:`toolfilter_fast.dask_recipe`. Ray Data
hands each batch over as a ``pyarrow.Table`` (``batch_format="pyarrow"``), and
:meth:`ToolFilter.static_mask_arrow` decides its two string columns in place. The
filter is shipped once per worker: the batches are decided by a pool of actors
(``workers`` of them), each of which receives the filter when it starts (a
ToolFilter pickles as its patterns and compiles once where it lands) and keeps it
for every batch it is given. Each actor holds one CPU of the cluster for as long
as the Dataset runs: leave Ray more CPUs than ``workers`` (a Parquet read lists
its files in tasks of its own, which wait behind a pool that holds every CPU).

    import ray
    import ray.data
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.ray_recipe import visible

    ray.init()                                           # more CPUs than workers
    catalog = ray.data.read_parquet("catalog/")
    tool_filter = ToolFilter.compile(include=["github/*"], exclude=["*/delete_*"])
    kept = visible(catalog, tool_filter, workers=2)      # a Dataset of the kept rows

:func:`with_mask` adds the decision as a boolean column instead of dropping rows.
Ray Data does not keep row order across batches unless its context asks it to
(``DataContext.get_current().execution_options.preserve_order = True``); each
row is decided on its own, so the order changes nothing but where a row lands.

Needs the ``ray`` extra (``pip install 'toolfilter_fast[ray]'``).
"""

from __future__ import annotations

from typing import Any

from .filter import ToolFilter

__all__ = ["visible", "with_mask"]


class _Decide:
    """One actor's copy of the filter, applied to each batch it is given."""

    def __init__(self, tool_filter: ToolFilter, server_column: str, name_column: str,
                 threads: int, mask_column: str | None) -> None:
        if not isinstance(tool_filter, ToolFilter):
            raise TypeError(f"tool_filter must be a ToolFilter, not {type(tool_filter).__name__}")
        self.tool_filter = tool_filter
        self.columns = (server_column, name_column)
        self.threads = threads
        self.mask_column = mask_column

    def __call__(self, batch: Any) -> Any:
        server_ids, names = (batch[column] for column in self.columns)
        mask = self.tool_filter.static_mask_arrow(server_ids, names, threads=self.threads)
        if self.mask_column is None:
            return batch.filter(mask)
        return batch.append_column(self.mask_column, mask)


def _check(dataset: Any, tool_filter: ToolFilter, workers: int, threads: int) -> None:
    if not hasattr(dataset, "map_batches"):
        raise TypeError(f"dataset must be a ray.data.Dataset, not {type(dataset).__name__}")
    if not isinstance(tool_filter, ToolFilter):
        raise TypeError(f"tool_filter must be a ToolFilter, not {type(tool_filter).__name__}")
    for what, value in (("workers", workers), ("threads", threads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{what} must be an int from 1 up, not {value!r}")


def _map(dataset: Any, tool_filter: ToolFilter, server_column: str, name_column: str,
         workers: int, threads: int, mask_column: str | None) -> Any:
    _check(dataset, tool_filter, workers, threads)
    return dataset.map_batches(
        _Decide,
        fn_constructor_args=(tool_filter, server_column, name_column, threads, mask_column),
        batch_format="pyarrow",
        concurrency=workers,
    )


def visible(dataset: Any, tool_filter: ToolFilter, *, server_column: str = "server_id",
            name_column: str = "name", workers: int = 1, threads: int = 1) -> Any:
    """The rows of ``dataset`` (a ``ray.data.Dataset``) that ``tool_filter``
    statically keeps, as a Dataset: lazy, like every Ray Data transform. A row
    whose server id or name is null is dropped, as ``static_mask_arrow`` hides it.
    ``workers`` actors decide the batches, ``threads`` threads each."""
    return _map(dataset, tool_filter, server_column, name_column, workers, threads, None)


def with_mask(dataset: Any, tool_filter: ToolFilter, *, column: str = "visible",
              server_column: str = "server_id", name_column: str = "name",
              workers: int = 1, threads: int = 1) -> Any:
    """``dataset`` with one more boolean column, ``column``: whether
    ``tool_filter`` statically keeps the row."""
    return _map(dataset, tool_filter, server_column, name_column, workers, threads, column)
