"""Tool groups: which MCP names are visible for one turn, fast path against the
baselines, in one run.

    pytest benches/bench_groups.py --benchmark-enable --benchmark-group-by=group
    python benches/bench_groups.py          # the same workloads, printed as a table

Workloads (docs/performance.md), deterministic: ``standard`` is 100,000 MCP names
(plus 2,000 built-in and skill tools), 200 groups and a 2 KB user message;
``large`` is 200,000 names, 500 groups and a 64 KB message. Baselines in the same
run: the reference (``toolfilter_fast.reference.GroupFilter``); what a user would
write without the package (the live groups' globs translated into one compiled
``re`` alternation per turn); and the floor, a Python loop that only reads every
name and tests its origin. Each benchmark records in ``extra_info["correct"]``
whether its answer equals the reference's.

With ``--benchmark-disable`` (the default, as in CI) each case runs once on a
2,000-name slice so that the suite stays fast and the answers are still checked.
"""

from __future__ import annotations

import functools
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass

import pytest

from toolfilter_fast import GroupFilter, ToolFilterGroup, reference

SERVERS = ["github", "fs", "slack", "browser", "jira", "notion", "Linear", "gdrive", "pg",
           "k8s", "Sentry", "stripe", "Zendesk", "figma", "datadog", "s3"]
VERBS = ["create", "read", "list", "update", "delete", "search", "get", "Run", "open", "close"]
NOUNS = ["issue", "file", "message", "page", "Repo", "pull_request", "comment", "user",
         "bucket", "query", "dashboard", "ticket", "event", "channel", "büro", "schéma"]
WORDS = ["please", "the", "a", "my", "and", "then", "check", "look", "at", "what", "is",
         "for", "with", "this", "that", "today", "report", "summary", "data", "Über", "team"]


@dataclass(frozen=True)
class Workload:
    names: list[str]
    mcp: frozenset[str]
    groups: list[ToolFilterGroup]
    message: str


def flat_names(rng: random.Random, count: int) -> list[str]:
    servers = max(1, count // 200)
    names = []
    for index in range(count):
        server = f"{SERVERS[index % len(SERVERS)]}-{(index // len(SERVERS)) % servers}"
        tool = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{index}"
        names.append(f"{server}__{tool}")
    return names


def make_groups(rng: random.Random, names: list[str], count: int) -> list[ToolFilterGroup]:
    """10% always groups; patterns mixed: server__*, *__suffix, exact, prefix*suffix."""
    servers = sorted({n.split("__", 1)[0] for n in names})
    groups = []
    for index in range(count):
        tools = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.random()
            if kind < 0.5:
                tools.append(f"{rng.choice(servers)}__*")
            elif kind < 0.65:
                tools.append(f"*_{rng.choice(NOUNS)}_{rng.randrange(len(names))}")
            elif kind < 0.85:
                tools.append(rng.choice(names))
            else:
                tools.append(f"{rng.choice(servers)}__{rng.choice(VERBS)}*_{rng.randrange(10)}")
        mode = "always" if index % 10 == 0 else "dynamic"
        keywords = [f"{rng.choice(NOUNS)}{rng.randrange(60)}" for _ in range(rng.randint(2, 5))]
        groups.append(ToolFilterGroup(mode, tools, keywords))
    return groups


def make_message(rng: random.Random, size: int, groups: list[ToolFilterGroup]) -> str:
    """Prose of ``size`` characters holding the keywords of about one group in five."""
    keywords = [k for g in groups if g.mode == "dynamic" for k in g.keywords]
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(keywords).upper() if rng.random() < 0.02 else rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


CASES = {
    "standard": (100_000, 200, 2_048),
    "large": (200_000, 500, 65_536),
    # Group-count scaling: the standard catalog and message under 10 and 2,000 groups.
    "groups_10": (100_000, 10, 2_048),
    "groups_2000": (100_000, 2_000, 2_048),
}


@functools.cache
def workload(case: str, small: bool) -> Workload:
    count, group_count, message_size = CASES[case]
    if small:
        count = 2_000
    rng = random.Random(7)
    mcp_names = flat_names(rng, count)
    others = [f"skill{i}__run" for i in range(count // 100)] + [f"builtin_{i}" for i in range(
        count // 100)]
    # As a runtime lists them: built-ins and skills, then each server's tools.
    names = others + mcp_names
    groups = make_groups(rng, mcp_names, group_count)
    return Workload(names, frozenset(mcp_names), groups, make_message(rng, message_size, groups))


def glob_regex(pattern: str) -> str:
    if "*" not in pattern:
        return re.escape(pattern)
    prefix, suffix = pattern.split("*", 1)
    return f"{re.escape(prefix)}.*{re.escape(suffix)}"


def joined_regex(groups: list[ToolFilterGroup]):
    """What a user would write: live groups by ``in`` on the lower-cased message,
    their globs joined into one regex, compiled per turn."""
    def visible(names: list[str], message: str, mcp: frozenset[str]) -> list[str]:
        folded = message.lower()
        live = [g for g in groups if g.mode == "always" or any(k.lower() in folded for k in g.keywords)]
        patterns = [glob_regex(p) for g in live for p in g.tools]
        rx = re.compile("|".join(patterns), re.DOTALL) if patterns else None
        match = rx.fullmatch if rx is not None else (lambda _n: None)
        return [n for n in names if n not in mcp or match(n) is not None]
    return visible


def floor(names: list[str], message: str, mcp: frozenset[str]) -> list[str]:
    """Reads every name and tests its origin, nothing else."""
    return [n for n in names if n not in mcp]


def runner(impl: str, work: Workload):
    if impl == "fast":
        return GroupFilter(work.groups).visible_names
    if impl == "reference":
        return reference.GroupFilter(work.groups).visible_names
    if impl == "joined_regex":
        return joined_regex(work.groups)
    return floor


@functools.cache
def expected(case: str, small: bool) -> list[str]:
    work = workload(case, small)
    return reference.GroupFilter(work.groups).visible_names(work.names, work.message, work.mcp)


IMPLS = ["fast", "reference", "joined_regex", "floor"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", ["standard", "large"])
def test_visible_names(benchmark, case, impl):
    small = benchmark.disabled
    work = workload(case, small)
    run = runner(impl, work)
    benchmark.group = f"groups visible_names: {case}"
    rounds = 1 if impl == "reference" else 5
    out = benchmark.pedantic(run, args=(work.names, work.message, work.mcp), rounds=rounds,
                             iterations=1)
    benchmark.extra_info["correct"] = out == expected(case, small)
    benchmark.extra_info["visible"] = len(out)
    if impl != "floor":
        assert benchmark.extra_info["correct"]


@pytest.mark.parametrize("case", ["groups_10", "standard", "groups_2000"])
def test_group_count_scaling(benchmark, case):
    """The fast path alone: the time per name should not grow with the group count."""
    small = benchmark.disabled
    work = workload(case, small)
    run = runner("fast", work)
    benchmark.group = "groups visible_names: 100k names, 10 / 200 / 2000 groups"
    out = benchmark.pedantic(run, args=(work.names, work.message, work.mcp), rounds=5,
                             iterations=1)
    benchmark.extra_info["correct"] = out == expected(case, small) if small else None
    benchmark.extra_info["live_groups"] = len(GroupFilter(work.groups).active_groups(work.message))
    if small:
        assert benchmark.extra_info["correct"]


@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_compile_and_preactivate(benchmark, impl):
    """Compiling 500 groups and pre-activating the large catalog (deferred loading)."""
    small = benchmark.disabled
    work = workload("large", small)
    module = GroupFilter if impl == "fast" else reference.GroupFilter
    benchmark.group = "groups compile + preactivate: large"
    out = benchmark.pedantic(lambda: module(work.groups).preactivate(work.names),
                             rounds=1 if impl == "reference" else 5, iterations=1)
    want = reference.GroupFilter(work.groups).preactivate(work.names)
    benchmark.extra_info["correct"] = out == want
    assert benchmark.extra_info["correct"]


def median_time(run, work: Workload, rounds: int) -> tuple[float, list[str]]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        out = run(work.names, work.message, work.mcp)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def report(cases: list[str]) -> None:
    """Times each implementation on each workload (median of a few rounds) and prints
    the table with ratios against the fast path, then the group-count scaling."""
    print("| workload | implementation | median | vs fast | correct |")
    print("| --- | --- | --- | --- | --- |")
    for case in cases:
        work = workload(case, False)
        want = expected(case, False)
        medians = {}
        for impl in IMPLS:
            medians[impl], out = median_time(
                runner(impl, work), work, 1 if impl == "reference" else 5,
            )
            correct = "n/a" if impl == "floor" else str(out == want)
            ratio = medians[impl] / medians["fast"]
            print(f"| {case} | {impl} | {medians[impl] * 1e3:.1f} ms | {ratio:.1f}x | {correct} |")
            sys.stdout.flush()
    print()
    print("| groups (100k names, 2 KB message) | live | fast median |")
    print("| --- | --- | --- |")
    for case in ("groups_10", "standard", "groups_2000"):
        work = workload(case, False)
        live = len(GroupFilter(work.groups).active_groups(work.message))
        median, _ = median_time(runner("fast", work), work, 5)
        print(f"| {len(work.groups)} | {live} | {median * 1e3:.1f} ms |")


if __name__ == "__main__":
    # python benches/bench_groups.py [standard] [large]: the large case's reference
    # takes minutes.
    report(sys.argv[1:] or ["standard", "large"])
