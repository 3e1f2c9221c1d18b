"""The figures of docs/performance.md: time per tool against catalog size and
against pattern count, for the fast path and each baseline.

``by_size`` reads the static-batch rows that ``toolfilter_fast.bench.runner``
measured; ``by_count`` times the fast path and the baselines on one catalog at
each pattern count (the runner's scaling rows time the fast path alone);
``draw`` writes both as PNG files with matplotlib, an optional dependency
(``pip install '.[bench]'``). ``benches/report.py`` calls all three.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolfilter_fast import ToolFilter, reference
from toolfilter_fast.bench import runner as _runner
from toolfilter_fast.bench import workload as _workload

#: Series in the order of the legends: the fast path, then the baselines.
SERIES = ("fast", "fast, 1 thread", "floor (read-only loop)", "joined re alternation",
          "fnmatch per pattern", "reference")

#: Per baseline, patterns times tools that one timed round may cost: the sample
#: shrinks as the pattern count grows, so that every point takes about as long.
_BUDGET = {"joined re alternation": 3_000_000, "fnmatch per pattern": 300_000,
           "reference": 30_000}

_BATCH = re.compile(r"static batch, ([0-9,]+) tools")

#: What a series is measured in: ``{series: {x: ns per tool}}``.
Series = dict[str, dict[int, float]]


def by_size(rows: Sequence[_runner.Row]) -> Series:
    """Time per tool at each catalog size, from the runner's static-batch rows."""
    out: Series = {label: {} for label in SERIES}
    for row in rows:
        match = _BATCH.match(row.workload)
        if match is None:
            continue
        n = int(match[1].replace(",", ""))
        if row.baseline == "fast, 1 thread":
            out["fast"][n] = row.fast_ns
            out["fast, 1 thread"][n] = row.baseline_ns
        elif row.fast == "fast" and row.baseline in out:
            out[row.baseline][n] = row.baseline_ns
    return {label: points for label, points in out.items() if points}


def by_count(n_tools: int, counts: Sequence[int],
             say: Callable[[str], None] = lambda _: None) -> tuple[Series, list[str]]:
    """Time per tool at each pattern count (per option) on an ``n_tools`` catalog,
    for the fast path, the floor and the three baselines; and notes (the
    sample sizes, and any baseline whose answer differed from the fast one)."""
    tools = _workload.catalog(n_tools)
    out: Series = {label: {} for label in SERIES if label != "fast, 1 thread"}
    wrong: list[str] = []
    samples: dict[str, list[int]] = {label: [] for label in _BUDGET}
    floor_ns = _runner._per_tool_ns(functools.partial(_runner.floor, tools), n_tools)
    for count in counts:
        say(f"sweep: {count:,} patterns per option on {n_tools:,} tools")
        include = _workload.patterns(count, "include", tools)
        exclude = _workload.patterns(count, "exclude", tools)
        fast = ToolFilter.compile(include=include, exclude=exclude)
        kept = set(map(id, fast.static_filter(tools)))
        out["fast"][count] = _runner._per_tool_ns(
            functools.partial(fast.static_filter, tools), n_tools)
        out["floor (read-only loop)"][count] = floor_ns
        baselines: dict[str, Any] = {
            "joined re alternation": _runner.JoinedRegexFilter(include, exclude),
            "fnmatch per pattern": _runner.FnmatchFilter(include, exclude),
            "reference": reference.compile(include=include, exclude=exclude),
        }
        for label, impl in baselines.items():
            size = max(100, min(n_tools, _BUDGET[label] // count))
            part = tools[:size]
            if [id(t) for t in impl.static_filter(part)] != [id(t) for t in part
                                                             if id(t) in kept]:
                wrong.append(f"{label} at {count:,} patterns gave a different answer")
            out[label][count] = _runner._per_tool_ns(
                functools.partial(impl.static_filter, part), size, 3)
            samples[label].append(size)
    notes = [f"{label}: timed on the first {', '.join(f'{n:,}' for n in sizes)} tools"
             for label, sizes in samples.items()]
    return out, notes + wrong


def markdown(series: Series, axis: str) -> str:
    """The figure's numbers as a Markdown table, one row per x value."""
    labels = [label for label in SERIES if label in series]
    xs = sorted({x for points in series.values() for x in points})
    lines = [f"| {axis} | " + " | ".join(labels) + " |",
             "| ---: | " + " | ".join("---:" for _ in labels) + " |"]
    for x in xs:
        cells = [f"{series[label][x]:,.0f}" if x in series[label] else "" for label in labels]
        lines.append(f"| {x:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draw(size: Series, count: Series, directory: Path, machine: str,
         count_tools: int = 100_000) -> list[Path]:
    """Writes ``ns-per-tool-by-size.png`` and ``ns-per-tool-by-patterns.png`` to
    ``directory``; returns their paths. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    colours = dict(zip(SERIES, ("tab:blue", "tab:cyan", "tab:grey", "tab:green", "tab:red",
                                "tab:purple"), strict=True))

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for series, name, xlabel, title in (
        (size, "ns-per-tool-by-size.png", "catalog size (tools)",
         "Static batch, 1,000 include + 1,000 exclude patterns"),
        (count, "ns-per-tool-by-patterns.png", "patterns per option (include and exclude)",
         f"Static batch of {count_tools:,} tools, by pattern count"),
    ):
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=100)
        for label in SERIES:
            points = series.get(label)
            if points:
                xs = sorted(points)
                ax.plot(xs, [points[x] for x in xs], marker="o", label=label,
                        color=colours[label],
                        linestyle="--" if label.startswith("floor") else "-")
        ax.set_xscale("log")
        ax.set_yscale("log")
        # Ticks at the measured x values, written out (10,000 rather than 10^4).
        ax.xaxis.set_major_locator(FixedLocator(sorted({x for p in series.values() for x in p})))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time per tool (ns, log scale)")
        ax.set_title(title, fontsize=11)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.text(0.01, 0.01, machine, fontsize=6, color="grey")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        path = directory / name
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written
