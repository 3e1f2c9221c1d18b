"""Leak check: a million scalar calls and a hundred 1M-tool batches keep RSS flat.

    python benches/leak_check.py              # the full run (a few minutes)
    python benches/leak_check.py --scale 0.1  # a tenth of each
    python benches/leak_check.py --part scalar

Prints the resident set size (from /proc/self/statm) after a warm-up and at
checkpoints, and the growth from the warm-up to the end. Scalar calls cover
every path that allocates: ASCII and non-ASCII names (the fold), regex and
function patterns, and the TypeError paths. Batches cover every batch form,
with the GIL released and regex tools judged back in Python. Not run in CI:
it is too slow, and RSS is too noisy for a tight bound in a test.

The warm-up reads every string once before the baseline is taken: the first
time the core reads a non-ASCII ``str``, CPython caches its UTF-8 form inside
the string object (``PyUnicode_AsUTF8AndSize``), which costs memory once per
string, is freed with it, and is not a leak.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import time

import toolfilter_fast
from toolfilter_fast import Tool

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 1e6


def by_role(tool, ctx):
    return ctx == "admin"


def scalar_round(f, tools, i):
    tool = tools[i % len(tools)]
    f.visible(tool, "admin" if i % 2 else "user")
    f.static_visible(tool)
    if i % 10 == 0:
        try:
            f.visible(Tool.__new__(Tool))  # no attributes at all
        except (TypeError, AttributeError):
            pass
        try:
            toolfilter_fast.glob_match("*x*", 5)
        except TypeError:
            pass
    if i % 3 == 0:
        toolfilter_fast.fold_loose(tool.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--part", choices=["scalar", "batches", "both"], default="both")
    args = parser.parse_args()
    calls = int(1_000_000 * args.scale)
    batches = max(2, int(100 * args.scale))
    size = 1_000_000

    f = toolfilter_fast.compile(
        include=["s1/*", "*/read_*", ("s2", re.compile("^w")), by_role],
        exclude=["*/delete_*", "*/*ADMIN*", ("s3", re.compile("x$"))],
    )
    static = toolfilter_fast.compile(
        include=["s1/*", "*/read_*", ("s2", re.compile("^w"))], exclude=["*/delete_*"],
    )
    names = ["read_file", "Delete-Repo", "write_x", "créer_issue", "ΣΙΓΜΑ_admin", "merge_pr"]
    tools = [Tool(f"s{i % 10}", f"{names[i % 6]}_{i}") for i in range(size)]

    if args.part != "batches":
        scalar_part(f, tools, calls)
    if args.part != "scalar":
        batch_part(f, static, tools, batches)


def scalar_part(f, tools, calls) -> None:
    print(f"scalar: {calls:,} rounds (visible + static_visible each, errors and folds mixed in)")
    warm = calls // 10
    scalar_tools = tools[:warm]
    for i in range(warm):
        scalar_round(f, scalar_tools, i)
    base = rss_mb()
    print(f"  after {warm:>9,} rounds: {base:8.1f} MB (baseline)")
    start = time.perf_counter()
    for i in range(warm, calls):
        scalar_round(f, scalar_tools, i)
        if (i + 1) % (calls // 4) == 0:
            print(f"  after {i + 1:>9,} rounds: {rss_mb():8.1f} MB")
    end = rss_mb()
    print(f"  growth after the baseline: {end - base:+.1f} MB ({time.perf_counter() - start:.1f} s)")



def batch_part(f, static, tools, batches) -> None:
    size = len(tools)
    columns = ([t.server_id for t in tools], [t.name for t in tools])
    pairs = list(zip(*columns, strict=True))
    forms = [
        ("static_filter", lambda: static.static_filter(tools)),
        ("static_mask", lambda: static.static_mask(tools, indices=True)),
        ("static_mask_pairs", lambda: static.static_mask_pairs(pairs)),
        ("static_mask_columns", lambda: static.static_mask_columns(*columns)),
        ("static_filter 1 thread", lambda: f.static_filter(tools, threads=1)),
        ("filter (functions called per tool)", lambda: f.filter(tools, "admin")),
    ]
    print(f"batches: {batches} batches of {size:,} tools, cycling {len(forms)} forms")
    for b in range(len(forms)):
        forms[b][1]()
    base = rss_mb()
    print(f"  after {len(forms):>3} warm-up batches: {base:8.1f} MB (baseline)")
    start = time.perf_counter()
    for b in range(batches):
        answer = forms[b % len(forms)][1]()
        del answer
        if (b + 1) % max(1, batches // 5) == 0:
            print(f"  after {b + 1:>3} batches: {rss_mb():8.1f} MB")
    end = rss_mb()
    print(f"  growth after the baseline: {end - base:+.1f} MB ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
