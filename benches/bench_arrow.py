"""The Arrow path with patterns, on every catalog layout: ``static_mask_arrow``
against ``static_mask_columns`` (lists of ``str``) on the same catalog, in the same
run, fast and baseline timed in turn (issue 34's row "Arrow with 1k + 1k / object
columns", target >= 3x).

    python benches/bench_arrow.py [--n 1000000] [--threads 1] [--rounds 9] [--dictionary] [--markdown]

Rows on in-order and shuffled catalogs of 5,000 servers, servers grouped (a run of
rows per server, as a loader delivers them) and interleaved, with the server
column also sorted (runs) for the interleaved ones. Prints the rows as
``benches/RESULTS.md`` renders them, each with its target and met/missed.

Then the encoded rows (``--dictionary``): the catalog sorted by server, as a
Parquet / Polars / DuckDB catalog comes, its server column dictionary-encoded
(``dictionary_encode()``) or run-end-encoded (``run_end_encode()``), or both
columns dictionary-encoded (a Parquet file read with ``read_dictionary``, a
Polars ``Categorical``), or both columns string views (``string_view``: Polars'
strings, DuckDB's and Velox's), against both columns plain (utf8) and against
object columns, with no patterns and with 1,000 + 1,000. Target: the encoded
columns no slower than the plain ones within 5% (ratio >= 0.95: with a server
column encoded the matcher is most of the time with patterns, and the encoding
saves only the server part; with the names encoded too each distinct name's
every-server answers are kept by its dictionary index); views within 1.5x of
plain (ratio >= 0.67: a view is 16 bytes to read where an offset is 4 or 8,
and a long value's bytes lie elsewhere, one more place a row reads); and >= 3x
the object columns.

With ``--markdown`` the rows come as the table ``runner.render`` draws: what
``benches/report.py`` runs as its part ``arrow`` (``--dictionary --markdown``, n the
report's largest size).
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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


def _rotated_medians(fns: list[Callable[[], Any]], rounds: int) -> list[float]:
    """Median seconds of each of ``fns``, run in turn round after round, each
    round starting one further along. In a trial with a fixed order the call
    right after the object columns' (which free a million objects) ran a third
    slower (the dictionary column's, 90 against 67 ns a tool, where timed alone
    the two were equal), so no one of them is always there."""
    times: list[list[float]] = [[] for _ in fns]
    for r in range(rounds):
        for k in [*range(r % len(fns), len(fns)), *range(r % len(fns))]:
            gc.collect()
            started = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def encoded_rows(n: int, threads: int | None, rounds: int) -> list[runner.Row]:
    tools = sorted(workload.catalog(n, servers=SERVERS, interleaved=True), key=lambda t: t.server_id)
    server_ids, names = [t.server_id for t in tools], [t.name for t in tools]
    plain, name_column = pa.array(server_ids), pa.array(names)
    encodings = {"server column dictionary-encoded": (plain.dictionary_encode(), name_column),
                 "server column run-end-encoded": (pc.run_end_encode(plain), name_column),
                 "server and name columns dictionary-encoded": (plain.dictionary_encode(),
                                                                name_column.dictionary_encode()),
                 "server and name columns string views": (plain.cast(pa.string_view()),
                                                          name_column.cast(pa.string_view()))}
    against_plain = {encoding: "no slower than plain within 5%: ratio >= 0.95" for encoding in encodings}
    against_plain["server and name columns string views"] = "within 1.5x of plain: ratio >= 0.67"
    label = "all cores" if threads is None else f"{threads} thread(s)"
    out = []
    for n_patterns in (0, 1_000):
        f = ToolFilter.compile(include=workload.patterns(n_patterns, "include", tools) if n_patterns else [],
                               exclude=workload.patterns(n_patterns, "exclude", tools) if n_patterns else [])
        timed = [functools.partial(f.static_mask_arrow, servers, tool_names, threads=threads)
                 for servers, tool_names in encodings.values()]
        utf8 = functools.partial(f.static_mask_arrow, plain, name_column, threads=threads)
        lists = functools.partial(f.static_mask_columns, server_ids, names, threads=threads)
        want = lists()
        correct = all(fn().to_pylist() == want for fn in [*timed, utf8])
        *encoded_s, utf8_s, lists_s = _rotated_medians([*timed, utf8, lists], rounds)
        what = f"{n_patterns:,} + {n_patterns:,}" if n_patterns else "no patterns"
        for encoding, seconds in zip(encodings, encoded_s, strict=True):
            where = (f"{n:,} tools of {SERVERS:,} servers, sorted by server, {encoding}, {what}, "
                     f"{label} (static_mask_arrow)")
            fast = f"fast, {encoding}"
            out.append(runner.Row(where, fast, "fast, plain utf8 columns", seconds / n * 1e9,
                                  utf8_s / n * 1e9, correct=correct, target=against_plain[encoding]))
            out.append(runner.Row(where, fast, "static_mask_columns (lists of str)", seconds / n * 1e9,
                                  lists_s / n * 1e9, correct=correct, target=">= 3x"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--dictionary", action="store_true",
                        help="only the rows of encoded columns (server dictionary or runs; both dictionaries)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the rows as the Markdown table of benches/RESULTS.md")
    args = parser.parse_args()
    if args.n < 1 or args.rounds < 1:
        parser.error("--n and --rounds must be at least 1")
    chosen = encoded_rows if args.dictionary else rows
    found = chosen(args.n, args.threads, args.rounds)
    if args.markdown:
        print(runner.render(found, []))
        return
    for row in found:
        met = {True: "met", False: "MISSED", None: ""}[row.met]
        print(f"{row.workload}: {row.fast_ns:.1f} ns vs {row.baseline_ns:.1f} ns per tool, "
              f"{row.ratio:.2f}x (target {row.target}: {met}){'' if row.correct else ' WRONG'}")


if __name__ == "__main__":
    main()
