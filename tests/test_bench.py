"""The benchmark's own logic: a row's verdict, and the Hyperscan baseline giving
the fast path's answer (it is compared, not trusted)."""

from __future__ import annotations

import pytest

from toolfilter_fast import ToolFilter
from toolfilter_fast.bench import runner as _bench
from toolfilter_fast.bench import workload as _workload


def test_a_row_says_whether_it_met_its_target():
    row = _bench.Row("w", "fast", "base", fast_ns=10, baseline_ns=25, least=2)
    assert row.verdict == "met"
    assert _bench.Row("w", "fast", "base", 10, 15, least=2).verdict.startswith("missed (ratio 75%")
    slow = _bench.Row("w", "fast", "base", 200e6, 2_000e6, least=5, most_ns=100e6)
    assert slow.verdict == "missed (fast 2.0x the bound)"
    assert _bench.Row("w", "fast", "base", 10, 15).verdict == ""
    table = _bench.render([row], [])
    assert table.splitlines()[0].endswith("| target | met |") and "| met |" in table


def test_hyperscan_baseline_answers_as_the_fast_path():
    pytest.importorskip("hyperscan", reason="hyperscan (the arrow-test extra) is not installed")
    tools = _workload.catalog(3_000, servers=60, layout="in-order", interleaved=True)
    include = _workload.patterns(300, "include", tools)
    exclude = _workload.patterns(300, "exclude", tools)
    fast = ToolFilter.compile(include=include, exclude=exclude)
    baseline = _bench.HyperscanFilter(include, exclude)
    assert [id(t) for t in baseline.static_filter(tools)] == [id(t) for t in fast.static_filter(tools)]
    open_filter = _bench.HyperscanFilter([], exclude)
    assert open_filter.static_filter(tools) == ToolFilter.compile(exclude=exclude).static_filter(tools)
