"""Focus lens on 100,000 tools: the fast path against the reference, in one run.

    pytest benches/bench_focus.py --benchmark-enable --benchmark-group-by=group
    python benches/bench_focus.py   # paired ratios, robust on a loaded machine

Each benchmark records in ``extra_info["correct"]`` whether its answer equals
the reference's (the same tool names in the same order, or the same discover
text).
"""

from __future__ import annotations

import functools
import random
import statistics
import time

import pytest

import toolfilter_fast
from toolfilter_fast import reference

N = 100_000
IMPLS = {"fast": toolfilter_fast, "reference": reference}
VERBS = ["click", "type", "select", "toggle", "scroll", "focus", "submit", "clear"]


@functools.cache
def focus_catalog() -> list[dict]:
    """20 sessions x 625 widgets x 8 actions (every name distinct), shuffled, one
    in a hundred replaced by a global. The dicts are built in list order, as a
    UI deriving its tools would build them."""
    rng = random.Random(5)
    triples = [(s, w, verb) for s in range(20) for w in range(625) for verb in VERBS]
    rng.shuffle(triples)
    tools = []
    for index, (session, widget, verb) in enumerate(triples[:N]):
        if rng.random() < 0.01:
            name, description = f"server_tool_{index}", "A server-level tool"
        else:
            name = f"sess{session}.widget_{widget}.{verb}"
            description = f"{verb.capitalize()} the Widget {widget} of this Screen"
        tools.append({"name": name, "description": description,
                      "inputSchema": {"type": "object", "properties": {}}})
    return tools


FILTERS = {
    "focused": {"mode": "focused", "session_id": "sess3", "focused_id": "widget_42"},
    "hover": {"mode": "hover", "session_id": "sess3", "focused_id": "widget_42",
              "hover_id": "widget_7"},
}


def run_filter(impl, case):
    module = IMPLS[impl]
    return module.FocusLens.filter(focus_catalog(), registry=module.ToolRegistry(), **FILTERS[case])


@functools.cache
def expected_filter(case):
    return [tool["name"] for tool in run_filter("reference", case)]


@pytest.mark.parametrize("case", sorted(FILTERS))
@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_filter_100k(benchmark, impl, case):
    benchmark.group = f"focus filter 100k: {case}"
    expected = expected_filter(case)  # builds the catalog outside the timing
    out = benchmark.pedantic(run_filter, args=(impl, case), rounds=20 if impl == "fast" else 5,
                             iterations=1, warmup_rounds=1)
    benchmark.extra_info["correct"] = [tool["name"] for tool in out] == expected
    assert benchmark.extra_info["correct"]


#: Each query runs over the same registry and session (sess3, 4,949 of the 100,000
#: tools): 8 found, all of the session's found, none found.
QUERIES = {"selective": "WIDGET 42 ", "session_wide": "", "no_hit": "zzz"}


@functools.cache
def discover_spec(impl):
    module = IMPLS[impl]
    return module.FocusLens.discover_tools_spec(module.ToolRegistry(focus_catalog()), "sess3")


def run_discover(impl, query):
    return discover_spec(impl)["callback"]({"query": QUERIES[query]})


@functools.cache
def expected_discover(query):
    return run_discover("reference", query)


@pytest.mark.parametrize("query", sorted(QUERIES))
@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_discover_100k(benchmark, impl, query):
    benchmark.group = f"discover_tools over 100k: {query} query"
    expected = expected_discover(query)  # builds the catalog and registries outside the timing
    discover_spec(impl)
    out = benchmark.pedantic(run_discover, args=(impl, query),
                             rounds=20 if impl == "fast" else 5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["correct"] = out == expected
    assert benchmark.extra_info["correct"]


def paired_ratios(pairs: int = 15) -> None:
    """Times the fast path and the reference alternately, so that both see the
    same load, and prints each case's median of the per-pair ratios."""

    def seconds(fn, *args):
        start = time.perf_counter()
        fn(*args)
        return time.perf_counter() - start

    cases = [("filter", run_filter, expected_filter, case) for case in sorted(FILTERS)]
    cases += [("discover", run_discover, expected_discover, query) for query in sorted(QUERIES)]
    print("| case | fast median (ms) | reference median (ms) | median paired ratio | correct |")
    print("| --- | ---: | ---: | ---: | --- |")
    for kind, run, expected, case in cases:
        expected(case)
        fast, ref = [], []
        for _ in range(pairs):
            fast.append(seconds(run, "fast", case))
            ref.append(seconds(run, "reference", case))
        answer = run("fast", case)
        correct = (answer == expected(case)) if kind == "discover" else (
            [tool["name"] for tool in answer] == expected(case))
        ratio = statistics.median(r / f for r, f in zip(ref, fast, strict=True))
        print(f"| {kind} {case} | {statistics.median(fast) * 1e3:.1f} | "
              f"{statistics.median(ref) * 1e3:.1f} | {ratio:.1f}x | {correct} |")


if __name__ == "__main__":
    paired_ratios()
