"""The Dask recipe's throughput: a 10M-row Parquet catalog filtered on a local
cluster of process workers (loopback only), 1 and 2 workers, through the Arrow path.

    python benches/bench_dask.py [--rows 10000000] [--parts 8]

Prints a Markdown table of rows per second (median of three runs after a warm-up),
beside the same parts read and masked one after another in this process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _catalog(rows: int, parts: int, folder: Path) -> tuple[list[str], object]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from toolfilter_fast.bench import workload as _workload

    base = _workload.catalog(1_000_000, servers=5_000, layout="in-order")
    servers = pa.array([t.server_id for t in base])
    names = pa.array([t.name for t in base])
    copies = []
    for k in range(-(-rows // len(base))):
        # Each copy's servers are others (``github~3``): 5,000 more servers a copy.
        copies.append(pa.table({"server_id": pc.binary_join_element_wise(servers, str(k), "~"),
                                "name": names}))
    table = pa.concat_tables(copies).slice(0, rows)
    step = -(-rows // parts)
    paths = []
    for k in range(parts):
        path = folder / f"part-{k}.parquet"
        pq.write_table(table.slice(k * step, step), path)
        paths.append(str(path))
    return paths, base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--parts", type=int, default=8)
    args = parser.parse_args()
    import distributed
    import pyarrow.parquet as pq

    from toolfilter_fast import ToolFilter
    from toolfilter_fast.bench import workload as _workload
    from toolfilter_fast.dask_recipe import count_visible

    with tempfile.TemporaryDirectory() as folder:
        print(f"... writing {args.rows:,} rows in {args.parts} parts", file=sys.stderr)
        paths, base = _catalog(args.rows, args.parts, Path(folder))
        tool_filter = ToolFilter.compile(include=_workload.patterns(1_000, "include", base),
                                         exclude=_workload.patterns(1_000, "exclude", base))

        def in_process() -> int:
            total = 0
            for path in paths:
                table = pq.read_table(path, columns=["server_id", "name"])
                total += tool_filter.static_mask_arrow(table["server_id"], table["name"]).true_count
            return total

        rows = [("one process, no Dask (parts in turn, every core)", in_process)]
        clusters = []
        for workers in (1, 2):
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                               processes=True, host="127.0.0.1",
                                               dashboard_address=None,
                                               worker_dashboard_address=None)
            client = distributed.Client(cluster)
            clusters.append((cluster, client))
            rows.append((f"Dask, {workers} process worker{'s' if workers > 1 else ''}",
                         lambda client=client: count_visible(client, paths, tool_filter)))
        lines = ["| how | rows/s | seconds | visible |", "| --- | ---: | ---: | ---: |"]
        for label, run in rows:
            print(f"... {label}", file=sys.stderr)
            visible = run()  # warm-up: the workers compile the filter, the files are cached
            times = []
            for _ in range(3):
                started = time.perf_counter()
                assert run() == visible
                times.append(time.perf_counter() - started)
            seconds = statistics.median(times)
            lines.append(f"| {label} | {args.rows / seconds:,.0f} | {seconds:.2f} | {visible:,} |")
        for cluster, client in clusters:
            client.close()
            cluster.close()
    print(f"{args.rows:,} rows in {args.parts} Parquet parts, 1,000 include + 1,000 exclude "
          "patterns of the standard mix; each worker one thread\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
