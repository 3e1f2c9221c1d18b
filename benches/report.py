"""Runs the standard benchmark and writes benches/RESULTS.md and the figures of
docs/performance.md.

    python benches/report.py                 # full run: 10k, 100k, 1M tools
    python benches/report.py --sizes 10000   # a quick look
    python benches/report.py --write         # update RESULTS.md and docs/images/*.png
    python benches/report.py --only arrow --write   # the filter tables and the encoded Arrow rows

It needs the test extra (the tool-group and focus-lens parts are pytest files)
and, for the figures, the bench extra: ``pip install '.[test,bench]'``.

The report has parts: the tool-filter table (with the layout rows of issue 34
unless ``--no-layouts``), the adversarial patterns, the pattern-count sweep
behind the second figure, then the script parts (``SCRIPT_PARTS``, chosen with
``--only``, all skipped by ``--filter-only``): the encoded Arrow rows, the
tool-group, focus-lens, policy, relevance, Dask and gateway tables; and the
figures. A part that fails does not stop the others: the report keeps what
finished, names the part that failed with its cause (the end of its error
output), and exits 1.

``--write`` merges into the file it finds at ``--output`` rather than
replacing it: each ``## `` section this run produced replaces the section of
the same part (matched by the part's heading, the words of the title before
any `` (``, so a title that names a command still matches), and every other
section, one this run skipped or one written by hand, stays where it is, byte
for byte. A part new to the file goes where the order of the parts puts it. A
part that failed keeps its old section and is listed under "Parts that did not
finish". The intro says which parts this run wrote, when, and on what machine.
With no file there, it writes a fresh one. Standard output has this run's
sections alone.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import re
import shlex
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import figures

from toolfilter_fast.bench import runner as _bench

HERE = pathlib.Path(__file__).parent

#: What to install for a module a part could not import.
_EXTRAS = {"pytest": "test", "hypothesis": "test", "pytest_benchmark": "test",
           "matplotlib": "bench", "pyarrow": "arrow"}

#: The parts that run a benchmark script of their own, by the name ``--only`` takes.
SCRIPT_PARTS = ("arrow", "groups", "focus", "policy", "relevance", "dask", "gateway")

#: Each part's heading (its section's title up to any " (..."), in the order the
#: parts have in the file: ``--write`` knows a section of the existing file by it.
HEADINGS = {
    "filter": "Tool filter",
    "adversarial": "Adversarial patterns",
    "sweep": "Tool filter by pattern count",
    "arrow": "Encoded Arrow columns",
    "groups": "Tool groups",
    "focus": "Focus lens",
    "policy": "Annotation patterns and the Policy",
    "relevance": "Relevance",
    "dask": "Dask recipe",
    "gateway": "The gateway",
}

#: The title of the section that lists the parts that failed; each run writes its own.
FAILED = "Parts that did not finish"

#: How many lines of a failed part's output the report keeps.
TAIL = 12


class PartFailed(Exception):
    """A part of the report that could not finish; the message is its cause."""


def cause(output: str, returncode: int | None = None) -> str:
    """What went wrong, from a failed part's error output: a missing module as the
    install line that brings it, then the last lines of the output."""
    lines = [line for line in output.rstrip().splitlines() if line.strip()]
    tail = "\n".join(f"    {line}" for line in lines[-TAIL:])
    missing = re.findall(r"No module named '([\w.]+)'", output)
    if missing:
        module = missing[-1].split(".")[0]
        extra = _EXTRAS.get(module)
        install = f"pip install '.[{extra}]'" if extra else f"pip install {module}"
        head = f"{module} is not installed: {install}"
    elif returncode is not None:
        head = f"exited with status {returncode}"
    else:
        head = lines[-1] if lines else "failed"
    return f"{head}\n{tail}" if tail else head


def run_script(script: str, *args: str) -> str:
    """The standard output of ``python benches/SCRIPT ARGS``; PartFailed with the
    cause when it fails."""
    result = subprocess.run([sys.executable, str(HERE / script), *args],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise PartFailed(cause(result.stderr or result.stdout, result.returncode))
    return result.stdout


def part_of(title: str) -> str | None:
    """The name of the part whose section has this title, or None for a section
    no part writes (one written by hand)."""
    for name, heading in HEADINGS.items():
        if title == heading or title.startswith(f"{heading} ("):
            return name
    return None


def sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text before the first ``## `` heading, and each section as its title
    and its whole text (heading line included, up to the next ``## `` heading);
    a ``## `` line inside a fenced block is not a heading."""
    head: list[str] = []
    found: list[tuple[str, list[str]]] = []
    fence = ""
    for line in text.splitlines(keepends=True):
        mark = line.lstrip()[:3]
        if mark in ("```", "~~~") and (not fence or mark == fence):
            fence = "" if fence else mark
        elif not fence and line.startswith("## "):
            found.append((line[3:].strip(), []))
        (found[-1][1] if found else head).append(line)
    return "".join(head), [(title, "".join(lines)) for title, lines in found]


def _title(section: str) -> str:
    return section.split("\n", 1)[0].removeprefix("## ").strip()


@dataclass
class Report:
    """The sections that finished, and the parts that failed with their causes."""

    sections: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def part(self, title: str, work: Callable[[], str | None]) -> bool:
        """Runs one part; its text (if any) becomes a section under ``title``."""
        print(f"... {title}", file=sys.stderr, flush=True)
        try:
            text = work()
        except PartFailed as err:
            self.fail(title, str(err))
            return False
        except Exception:
            self.fail(title, cause(traceback.format_exc()))
            return False
        if text is not None:
            self.sections.append(f"## {title}\n\n{text}")
        return True

    def fail(self, title: str, why: str) -> None:
        self.failed.append((title, why))
        print(f"report.py: {title}: failed: {why}", file=sys.stderr, flush=True)

    def text(self, intro: str, old: str | None = None) -> str:
        """The file: this run's sections merged into ``old`` (the file as it was;
        None for a fresh one) as the module's docstring says."""
        order = list(HEADINGS)
        kept: list[tuple[str | None, str]] = [
            (part_of(title), section.rstrip("\n"))
            for title, section in (sections(old)[1] if old is not None else [])
            if title != FAILED
        ]
        earlier = {name for name, _ in kept if name is not None}
        for section in self.sections:
            name = part_of(_title(section))
            same = [i for i, (other, _) in enumerate(kept) if name is not None and other == name]
            if same:  # in the place of the old one (and of any copy of it)
                kept = [(name, section) if i == same[0] else s
                        for i, s in enumerate(kept) if i not in same[1:]]
                continue
            rank = order.index(name) if name is not None else len(order)
            ranks = [order.index(other) if other is not None else None for other, _ in kept]
            before = [i for i, r in enumerate(ranks) if r is not None and r < rank]
            after = [i for i, r in enumerate(ranks) if r is not None and r > rank]
            kept.insert(before[-1] + 1 if before else after[0] if after else len(kept),
                        (name, section))
        parts = ["# Benchmark results", intro, *(section for _, section in kept)]
        if self.failed:
            lines = []
            for title, why in self.failed:
                old_one = part_of(title) in earlier  # a failed part wrote no section
                lines.append(f"- **{title}**: {why.splitlines()[0]}"
                             + (" (its section is from an earlier run)" if old_one else ""))
            parts.append(f"## {FAILED}\n\n" + "\n".join(lines))
        return "\n\n".join(parts) + "\n"


def write(path: pathlib.Path, report: Report, intro: str) -> bool:
    """Merges ``report`` into the file at ``path``, or writes a fresh one where there
    is none; whether there was one."""
    old = path.read_text(encoding="utf-8") if path.exists() else None
    path.write_text(report.text(intro, old), encoding="utf-8")
    return old is not None


def _load_at_end() -> str:
    """The load average as the run ends: other work on a shared machine (a second
    core taken) shows in the 2-thread rows."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return f"load average {load[0]:.2f} (1 min) and {load[2]:.2f} (15 min) at the end"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--counts", default="10,100,1000,10000")
    parser.add_argument("--write", action="store_true",
                        help="write RESULTS.md (--output) and the figures (--figures)")
    parser.add_argument("--output", type=pathlib.Path, default=HERE / "RESULTS.md",
                        help="where --write puts the tables (default: benches/RESULTS.md)")
    parser.add_argument("--figures", type=pathlib.Path,
                        default=HERE.parent / "docs" / "images",
                        help="where --write puts the PNG figures (default: docs/images)")
    parser.add_argument("--filter-only", action="store_true",
                        help="skip the script parts: the encoded Arrow, tool-group, focus-lens, "
                             "policy, relevance, Dask and gateway tables")
    parser.add_argument("--no-layouts", action="store_true",
                        help="skip the 5,000-server catalogs of every layout")
    parser.add_argument("--only", default=",".join(SCRIPT_PARTS),
                        help="the script parts to run beside the tool-filter tables, by name "
                             f"(comma-separated; default: all of {','.join(SCRIPT_PARTS)})")
    args = parser.parse_args(argv)
    only = {name for name in args.only.split(",") if name}
    unknown = sorted(only - set(SCRIPT_PARTS))
    if unknown:
        parser.error(f"--only: unknown part {unknown[0]!r} (the parts are "
                     f"{', '.join(SCRIPT_PARTS)})")
    sizes = [int(x) for x in args.sizes.split(",")]
    counts = [int(x) for x in args.counts.split(",")]
    say = lambda s: print(f"... {s}", file=sys.stderr, flush=True)  # noqa: E731
    machine = _bench.machine()
    report = Report()
    measured: dict[str, figures.Series] = {}
    sweep_tools = min(100_000, max(sizes))

    probes: list[_bench.Probe] = []

    def tool_filter() -> str:
        rows, notes = _bench.run(sizes, counts, say=say, probes=probes,
                                 layouts=not args.no_layouts)
        measured["size"] = figures.by_size(rows)
        return (
            f"Command: `python benches/report.py --sizes {args.sizes} --counts {args.counts}`"
            f"\n\nMachine: {machine}; {_load_at_end()}\n\n"
            "Ratios are baseline time over fast time per unit, measured side by side in one"
            " run: each comparison times the fast path and its baseline in turn, round after"
            " round (medians of 3 to 9 rounds), so the fast column differs a little from row"
            " to row. Slow baselines run on a prefix sample of the catalog. On this shared VM"
            " the same ratio moves by up to a third between runs, and a row with 2 threads"
            " needs the second core free. *met* says whether a row meets its target."
            " The rows named `of 5,000 servers` run on catalogs of 5,000 servers of 200"
            " tools (`workload.catalog(n, servers=5000, layout=..., interleaved=...)`):"
            " `in-order` is made in list order while a JSON listing is parsed, as a loader"
            " makes it; `shuffled` has each server's names made out of list order;"
            " `interleaved` mixes the servers, so that a block of 8,192 tools holds"
            " thousands of them.\n\n"
            f"{_bench.render(rows, notes)}"
        )

    def sweep() -> str:
        series, notes = figures.by_count(sweep_tools, counts, say)
        measured["count"] = series
        return (
            f"Time per tool (ns) on {sweep_tools:,} tools as the number of patterns per"
            f" option grows ({', '.join(f'{c:,}' for c in counts)}): the data of the second"
            " figure. Slow baselines are timed on a prefix of the catalog that shrinks as"
            " the patterns grow.\n\n"
            + figures.markdown(series, "patterns per option") + "\n\n"
            + "\n".join(f"- {note}" for note in notes)
        )

    def adversarial() -> str:
        return (
            "One `static_visible` on a name a server chose, with the baseline count of"
            " patterns and with many, timed in turn (medians of 7 rounds). Before the fix"
            " the cost grew as patterns × name length: (a) took 3.4 s and (b) 3.2 s at 1,000"
            " patterns, the 10,000 mixed patterns 21 s.\n\n"
            + _bench.render_adversarial(probes)
        )

    report.part(HEADINGS["filter"], tool_filter)
    report.part(HEADINGS["adversarial"], adversarial)
    report.part(HEADINGS["sweep"], sweep)

    def script_part(name: str, what: str, run: Callable[[], str]) -> None:
        if not args.filter_only and name in only:
            report.part(f"{HEADINGS[name]} ({what})", run)

    arrow_n = max(sizes)

    def arrow() -> str:
        table = run_script("bench_arrow.py", "--dictionary", "--markdown", "--n", str(arrow_n))
        return (
            f"Machine: {machine}; {_load_at_end()}\n\n"
            f"{arrow_n:,} tools of 5,000 servers sorted by server, as a Parquet, Polars or DuckDB"
            " catalog comes, with no patterns and with 1,000 + 1,000: `static_mask_arrow` with"
            " the server column encoded (or both columns dictionary-encoded, or both string"
            " views) against the same"
            " columns plain (utf8) and against"
            " `static_mask_columns` on lists of `str`, timed in turn, each round starting one"
            f" further along (medians of 9 rounds).\n\n{table.strip()}"
        )

    script_part(
        "arrow",
        f"`python benches/bench_arrow.py --dictionary --n {arrow_n}`: a server column "
        "dictionary- or run-end-encoded, or both columns dictionary-encoded, against the same "
        "columns plain and the object columns",
        arrow,
    )
    script_part(
        "groups", "`python benches/bench_groups.py standard`",
        lambda: f"```\n{run_script('bench_groups.py', 'standard').strip()}\n```",
    )
    script_part(
        "focus",
        "`python benches/bench_focus.py`: paired runs, fast and reference alternating",
        lambda: f"```\n{run_script('bench_focus.py').strip()}\n```",
    )
    script_part(
        "policy", "`python benches/bench_policy.py`",
        lambda: f"```\n{run_script('bench_policy.py').strip()}\n```",
    )
    script_part(
        "relevance",
        "`python benches/relevance.py`: recall by cross-validation on the "
        "tool-selection dataset when present, index and query times",
        lambda: run_script("relevance.py").strip(),
    )
    script_part(
        "dask", "`python benches/bench_dask.py`: a local cluster of process workers",
        lambda: f"```\n{run_script('bench_dask.py').strip()}\n```",
    )
    script_part(
        "gateway",
        "`python benches/bench_gateway.py`: against direct connections to the "
        "same real stdio upstreams, interleaved rounds, timed by a raw JSON-RPC client",
        lambda: run_script("bench_gateway.py").strip(),
    )

    def draw() -> None:
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError as err:
            raise PartFailed(cause(f"No module named '{err.name}'")) from None
        for path in figures.draw(measured.get("size", {}), measured.get("count", {}),
                                 args.figures, machine, sweep_tools):
            print(f"wrote {path}", file=sys.stderr)

    if args.write:
        report.part("Figures", draw)
    wrote = [_title(section).split(" (")[0] for section in report.sections]
    command = shlex.join(["python", "benches/report.py",
                          *(sys.argv[1:] if argv is None else argv)])
    intro = (
        "`python benches/report.py --write` writes this file and the figures of"
        " [docs/performance.md](../docs/performance.md), which explains the numbers."
        " A run replaces the sections of the parts it ran and keeps the others as they"
        " were.\n\n"
        f"Last run: `{command}`, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}"
        f" UTC; {machine}; {_load_at_end()}. It wrote: {', '.join(wrote) or 'nothing'}."
    )
    print(report.text(intro))
    if args.write:
        merged = write(args.output, report, intro)
        print(f"wrote {args.output}" + (" (merged)" if merged else ""), file=sys.stderr)
    if report.failed:
        names = ", ".join(title.split(" (")[0] for title, _ in report.failed)
        print(f"report.py: {len(report.failed)} part(s) did not finish: {names}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
