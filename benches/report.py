"""Prints the ratio table of spec/performance.md from one run and writes RESULTS.md.

    python benches/report.py                 # full run: 10k, 100k, 1M tools
    python benches/report.py --sizes 10000   # a quick look

The table is Markdown; with ``--write`` it replaces benches/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

from toolfilter_fast.bench import runner as _bench


def _load_at_end() -> str:
    """The load average as the run ends: other work on a shared machine (a second
    core taken) shows in the 2-thread rows."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return f"load average {load[0]:.2f} (1 min) and {load[2]:.2f} (15 min) at the end"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--counts", default="10,100,1000,10000")
    parser.add_argument("--write", action="store_true", help="write benches/RESULTS.md")
    parser.add_argument("--filter-only", action="store_true",
                        help="skip the tool-group, focus-lens and Dask tables")
    parser.add_argument("--no-layouts", action="store_true",
                        help="skip the 5,000-server catalogs of every layout")
    args = parser.parse_args()
    machine = _bench.machine()
    rows, notes = _bench.run(
        [int(x) for x in args.sizes.split(",")], [int(x) for x in args.counts.split(",")],
        say=lambda s: print(f"... {s}", file=sys.stderr, flush=True),
        layouts=not args.no_layouts,
    )
    table = _bench.render(rows, notes)
    here = pathlib.Path(__file__).parent
    for title, script, script_args in (
        ("Tool groups (`python benches/bench_groups.py standard`)", "bench_groups.py", ["standard"]),
        ("Focus lens (`python benches/bench_focus.py`: paired runs, fast and reference alternating)",
         "bench_focus.py", []),
        ("Dask recipe (`python benches/bench_dask.py`: a local cluster of process workers)",
         "bench_dask.py", []),
        ("Annotation patterns and the Policy (`python benches/bench_policy.py`)",
         "bench_policy.py", []),
    ):
        if args.filter_only:
            break
        print(f"... {title}", file=sys.stderr, flush=True)
        result = subprocess.run([sys.executable, str(here / script), *script_args],
                                capture_output=True, text=True, check=True)
        table += f"\n\n## {title}\n\n```\n{result.stdout.strip()}\n```"
    text = (
        "# Benchmark results\n\n## Tool filter\n\n"
        f"Command: `python benches/report.py --sizes {args.sizes} --counts {args.counts}`\n\n"
        f"Machine: {machine}; {_load_at_end()}\n\n"
        "Ratios are baseline time over fast time per unit, measured side by side in one run:"
        " each comparison times the fast path and its baseline in turn, round after round"
        " (medians of 3 to 9 rounds), so the fast column differs a little from row to row."
        " Slow baselines run on a prefix sample of the catalog. On this shared VM the same"
        " ratio moves by up to a third between runs, and a row with 2 threads needs the"
        " second core free. The last column says whether this run met the row's target."
        " The rows named `of 5,000 servers` run on catalogs of 5,000 servers of 200 tools"
        " (`_workload.catalog(n, servers=5000, layout=..., interleaved=...)`): `in-order`"
        " is made in list order while a JSON listing is parsed, as a loader makes it;"
        " `shuffled` has each server's names made out of list order; `interleaved` mixes"
        " the servers, so that a block of 8,192 tools holds thousands of them.\n\n"
        f"{table}\n"
    )
    print(text)
    if args.write:
        pathlib.Path(__file__).with_name("RESULTS.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
