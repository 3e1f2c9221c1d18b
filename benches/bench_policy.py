"""Annotation patterns and the Policy: what they cost, against the baselines, in one run.

    python benches/bench_policy.py                   # the table (1M tools; 100k for the policy)
    python benches/bench_policy.py --tools 100000    # a quicker look
    pytest benches/bench_policy.py                   # each case once, small, answers checked

Rows (medians of interleaved rounds, fast and baseline in turn):

* a filter of the standard workload's globs (1,000 include + 1,000 exclude)
  plus two annotation patterns (``readOnlyHint = true`` to include,
  ``destructiveHint = true`` to exclude) over a catalog whose tools carry
  annotations (a third read-only, a third destructive, a third none),
  against the same globs alone: target at most 1.3x the cost per tool;
* ``Policy.select`` over 100,000 such tools with all four stages (the filter
  above with a CEL-free mix, 200 groups of which 50 keyword-activated, the
  focus lens, a budget of 40), against the reference Policy, timed on a
  prefix of the catalog (the reference is slow): target >= 20x per tool;
* a dynamic CEL pattern (``ctx.claims.role == "admin" ||
  tool.name.startsWith("get_")``) listing 2,000 tools under a ctx of 10,000
  claims, against the same rule as a Python function pattern: target at most
  2x the cost (the ctx is converted for CEL once a call, not once a tool).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from toolfilter_fast import Annotations, Cel, Policy, Tool, ToolFilter, reference
from toolfilter_fast.bench import workload

ANNOTATIONS = [None, {"readOnlyHint": True}, {"destructiveHint": True},
               {"readOnlyHint": False, "destructiveHint": False}]


def annotated(tools: Sequence[Tool], seed: int = 0) -> list[Tool]:
    """The catalog again, each tool with annotations (and every 50th a UI tool
    named ``session.widget.action``), in the same order."""
    rng = random.Random(seed)
    out = []
    for i, tool in enumerate(tools):
        name = tool.name if i % 50 else f"sess.w{i % 7}.act{i}"
        out.append(Tool(tool.server_id, name, annotations=rng.choice(ANNOTATIONS)))
    return out


def glob_options(tools: Sequence[Tool], count: int) -> dict[str, list[Any]]:
    """The standard workload's pattern mix, without its regex entries."""
    return {side: [p for p in workload.patterns(count, side, list(tools)) if isinstance(p, str)]
            for side in ("include", "exclude")}


def with_annotations(options: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"include": [*options["include"], Annotations(readOnlyHint=True)],
            "exclude": [*options["exclude"], Annotations(destructiveHint=True)]}


def policy_config(tools: Sequence[Tool]) -> dict[str, Any]:
    servers = sorted({t.server_id for t in tools})
    groups = [{"mode": "always", "tools": [f"{s}__*" for s in servers[i::150]]} for i in range(150)]
    groups += [{"mode": "dynamic", "tools": [f"{s}__*"], "keywords": [s.lower()[:5]]}
               for s in servers[:50]]
    options = glob_options(tools, 100)
    options["include"].append({"annotations": {"readOnlyHint": True}})
    options["exclude"].append({"annotations": {"destructiveHint": True}})
    return {"filter": options, "tool_filter_groups": groups, "budget": {"max_tools": 40}}


def message_for(tools: Sequence[Tool]) -> str:
    servers = sorted({t.server_id for t in tools})[:50]
    return "please look at " + " ".join(s.lower()[:5] for s in servers[::5])


CEL_RULE = 'ctx.claims.role == "admin" || tool.name.startsWith("get_")'


def claims_rule(tool: Any, ctx: Any) -> bool:
    """:data:`CEL_RULE` as a function pattern."""
    return bool(ctx["claims"]["role"] == "admin" or tool.name.startswith("get_"))


def claims_case(n_tools: int, n_claims: int) -> tuple[list[Tool], dict[str, Any]]:
    """``n_tools`` tools (a third named ``get_*``) and a ctx of ``n_claims``
    claims whose ``role`` is not admin (so every tool reads the name too)."""
    tools = [Tool(f"srv{i % 40}", f"get_item{i}" if i % 3 == 0 else f"update_item{i}")
             for i in range(n_tools)]
    claims: dict[str, Any] = {f"claim{i}": f"value {i}" for i in range(n_claims - 1)}
    claims["role"] = "user"
    return tools, {"sub": "user-1", "claims": claims}


def medians(fns: Sequence[Callable[[], Any]], rounds: int) -> list[float]:
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for slot, fn in zip(times, fns, strict=True):
            gc.collect()
            start = time.perf_counter()
            fn()
            slot.append(time.perf_counter() - start)
    return [statistics.median(slot) for slot in times]


def rows(n_tools: int, n_policy: int, reference_sample: int, rounds: int) -> list[dict[str, Any]]:
    base = workload.catalog(n_tools)
    tools = annotated(base)
    options = glob_options(base, 1000)
    globs, both = ToolFilter.compile(**options), ToolFilter.compile(**with_annotations(options))
    checked = tools[:300]
    same = both.static_mask(checked) == reference.compile(**with_annotations(options)).static_mask(checked)
    glob_s, both_s = medians([lambda: globs.static_filter(tools), lambda: both.static_filter(tools)],
                             rounds)
    out = [{
        "workload": f"static batch, {n_tools:,} annotated tools, 1,000 + 1,000 globs",
        "fast": "globs + 2 annotation patterns", "baseline": "the globs alone",
        "fast_ns": both_s / n_tools * 1e9, "baseline_ns": glob_s / n_tools * 1e9,
        "ratio": both_s / glob_s, "target": "cost <= 1.3x", "met": both_s / glob_s <= 1.3,
        "correct": same,
    }]
    policy_tools = tools[:n_policy]
    config = policy_config(policy_tools)
    fast, ref = Policy.from_config(config), reference.Policy.from_config(config)
    message, focus = message_for(policy_tools), "sess:w3"
    sample = policy_tools[:reference_sample]
    got, want = fast.select(sample, None, message, focus), ref.select(sample, None, message, focus)
    correct = [id(t) for t in got.tools] == [id(t) for t in want.tools]
    fast_s, = medians([lambda: fast.select(policy_tools, None, message, focus)], rounds)
    ref_s, = medians([lambda: ref.select(sample, None, message, focus)], max(1, rounds // 3))
    fast_ns, ref_ns = fast_s / n_policy * 1e9, ref_s / len(sample) * 1e9
    out.append({
        "workload": f"Policy.select, {n_policy:,} tools, all four stages",
        "fast": "fast", "baseline": f"reference (on the first {len(sample):,} tools)",
        "fast_ns": fast_ns, "baseline_ns": ref_ns, "ratio": ref_ns / fast_ns,
        "target": ">= 20x", "met": ref_ns / fast_ns >= 20, "correct": correct,
    })
    out.append(cel_ctx_row(2_000, 10_000, rounds))
    return out


def cel_ctx_row(n_tools: int, n_claims: int, rounds: int) -> dict[str, Any]:
    """A dynamic CEL pattern under a large ctx against the same rule as a function."""
    tools, ctx = claims_case(n_tools, n_claims)
    cel = ToolFilter.compile(include=[Cel(CEL_RULE)])
    function = ToolFilter.compile(include=[claims_rule])
    correct = cel.filter(tools, ctx) == function.filter(tools, ctx)
    cel_s, fn_s = medians([lambda: cel.filter(tools, ctx), lambda: function.filter(tools, ctx)],
                          rounds)
    return {
        "workload": f"dynamic CEL, {n_tools:,} tools, a ctx of {n_claims:,} claims",
        "fast": "Cel pattern", "baseline": "the same rule as a function",
        "fast_ns": cel_s / n_tools * 1e9, "baseline_ns": fn_s / n_tools * 1e9,
        "ratio": cel_s / fn_s, "target": "cost <= 2x", "met": cel_s / fn_s <= 2,
        "correct": correct,
    }


def render(table: list[dict[str, Any]]) -> str:
    lines = ["| workload | fast | baseline | fast per tool | baseline per tool | ratio | "
             "same answer | target | met |", "| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- |"]
    for row in table:
        lines.append(
            f"| {row['workload']} | {row['fast']} | {row['baseline']} | {row['fast_ns']:,.0f} ns "
            f"| {row['baseline_ns']:,.0f} ns | {row['ratio']:,.2f}x | "
            f"{'yes' if row['correct'] else 'NO'} | {row['target']} | "
            f"{'met' if row['met'] else 'missed'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1_000_000)
    parser.add_argument("--policy-tools", type=int, default=100_000)
    parser.add_argument("--reference-sample", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    print(render(rows(args.tools, min(args.policy_tools, args.tools), args.reference_sample,
                      args.rounds)))
    return 0


# --- pytest: each case once, small, answers checked ----------------------------------


@pytest.fixture(scope="module")
def small():
    return annotated(workload.catalog(5_000))


def test_annotation_patterns_over_a_batch(benchmark, small):
    options = glob_options(small, 100)
    both = ToolFilter.compile(**with_annotations(options))
    ref = reference.compile(**with_annotations(options))
    got = benchmark(both.static_mask, small)
    assert got[:500] == ref.static_mask(small[:500])


def test_cel_under_a_large_ctx(benchmark):
    tools, ctx = claims_case(300, 10_000)
    cel = ToolFilter.compile(include=[Cel(CEL_RULE)])
    got = benchmark(cel.filter, tools, ctx)
    assert got == ToolFilter.compile(include=[claims_rule]).filter(tools, ctx)
    assert got and len(got) < len(tools)


def test_policy_select(benchmark, small):
    config = policy_config(small)
    fast, ref = Policy.from_config(config), reference.Policy.from_config(config)
    message = message_for(small)
    got = benchmark(fast.select, small, None, message, "sess:w3")
    want = ref.select(small, None, message, "sess:w3")
    assert [id(t) for t in got.tools] == [id(t) for t in want.tools]
    benchmark.extra_info["correct"] = True


if __name__ == "__main__":
    sys.exit(main())
