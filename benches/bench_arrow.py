"""The Arrow path with patterns, on every catalog layout: ``static_mask_arrow``
against ``static_mask_columns`` (lists of ``str``) on the same catalog, in the same
run, fast and baseline timed in turn (issue 34's row "Arrow with 1k + 1k / object
columns", target >= 3x).

    python benches/bench_arrow.py [--n 1000000] [--threads 1] [--rounds 9]

Rows on in-order and shuffled catalogs of 5,000 servers, servers grouped (a run of
rows per server, as a loader delivers them) and interleaved, with the server
column also sorted (runs) for the interleaved ones. Prints the rows as
``benches/RESULTS.md`` renders them, each with its target and met/missed.
"""

from __future__ import annotations

import argparse
import functools

import pyarrow as pa

from toolfilter_fast import ToolFilter
from toolfilter_fast.bench import runner, workload

SERVERS = 5_000


def rows(n: int, threads: int | None, rounds: int) -> list[runner.Row]:
    out = []
    for layout in workload.LAYOUTS:
        for interleaved in (False, True):
            tools = workload.catalog(n, servers=SERVERS, layout=layout, interleaved=interleaved)
            include = workload.patterns(1_000, "include", tools)
            exclude = workload.patterns(1_000, "exclude", tools)
            f = ToolFilter.compile(include=include, exclude=exclude)
            where = f"{n:,} tools of {SERVERS:,} servers, {layout}, " + (
                "servers interleaved" if interleaved else "servers grouped")
            server_ids, names = [t.server_id for t in tools], [t.name for t in tools]
            columns = (pa.array(server_ids), pa.array(names))
            arrow = functools.partial(f.static_mask_arrow, *columns, threads=threads)
            lists = functools.partial(f.static_mask_columns, server_ids, names, threads=threads)
            correct = arrow().to_pylist() == lists()
            arrow_s, lists_s = runner._interleaved_medians([arrow, lists], rounds)
            label = "all cores" if threads is None else f"{threads} thread(s)"
            out.append(runner.Row(f"{where}, 1,000 + 1,000, {label} (static_mask_arrow)",
                                  "fast, Arrow columns", "static_mask_columns (lists of str)",
                                  arrow_s / n * 1e9, lists_s / n * 1e9, correct=correct,
                                  target=">= 3x"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    for row in rows(args.n, args.threads, args.rounds):
        met = {True: "met", False: "MISSED", None: ""}[row.met]
        print(f"{row.workload}: {row.fast_ns:.1f} ns vs {row.baseline_ns:.1f} ns per tool, "
              f"{row.ratio:.2f}x (target {row.target}: {met}){'' if row.correct else ' WRONG'}")


if __name__ == "__main__":
    main()
