"""Prints the ratio table of spec/performance.md from one run and writes RESULTS.md.

    python benches/report.py                 # full run: 10k, 100k, 1M tools
    python benches/report.py --sizes 10000   # a quick look

The table is Markdown; with ``--write`` it replaces benches/RESULTS.md.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from toolfilter_fast import _bench


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--counts", default="10,100,1000,10000")
    parser.add_argument("--write", action="store_true", help="write benches/RESULTS.md")
    args = parser.parse_args()
    machine = _bench.machine()
    rows, notes = _bench.run(
        [int(x) for x in args.sizes.split(",")], [int(x) for x in args.counts.split(",")],
        say=lambda s: print(f"... {s}", file=sys.stderr, flush=True),
    )
    table = _bench.render(rows, notes)
    text = (
        "# Benchmark results\n\n"
        f"Command: `python benches/report.py --sizes {args.sizes} --counts {args.counts}`\n\n"
        f"Machine: {machine}\n\n"
        "Ratios are baseline time over fast time per unit, measured side by side in one run;"
        " medians of 3 to 9 rounds. Slow baselines run on a prefix sample of the catalog.\n\n"
        f"{table}\n"
    )
    print(text)
    if args.write:
        pathlib.Path(__file__).with_name("RESULTS.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
