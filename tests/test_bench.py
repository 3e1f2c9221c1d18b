"""The benchmark's own logic: the layout rows' targets, and the Hyperscan baseline giving
the fast path's answer (it is compared, not trusted)."""

from __future__ import annotations

import pytest

from toolfilter_fast import ToolFilter
from toolfilter_fast.bench import runner as _bench
from toolfilter_fast.bench import workload as _workload


def test_the_layout_targets_are_read_as_written():
    # The targets the layout rows write, read by the runner's own parser.
    assert _bench.target_met("within 1.5x of the floor: ratio >= 0.67", 0.7, 1) is True
    assert _bench.target_met("within 1.5x of the floor: ratio >= 0.67", 0.6, 1) is False
    assert _bench.target_met(">= 150x", 149.0, 1) is False
    assert _bench.target_met("within 2x of the pass: ratio >= 0.5", 0.5, 1) is True
    assert _bench.target_met("within 1.5x of the few: ratio >= 0.67", 0.66, 1) is False
    assert _bench.target_met(">= 50x", 50.0, 1) is True


def test_the_pattern_count_row_compares_many_with_few():
    # A small catalog: the row's ratio is the few patterns' time over the many's,
    # both answers checked against the reference.
    tools = _workload.catalog(2_000, servers=40, layout="in-order")
    row = _bench._pattern_counts(tools, "small", lambda _: None, counts=(10, 300))
    assert row.correct
    assert row.baseline == "fast, 10 patterns" and row.fast == "fast, 300 patterns"
    assert row.target == "within 1.5x of the few: ratio >= 0.67"
    assert row.met == (row.ratio >= 0.67)


def test_the_static_batch_rows_time_a_new_filters_first_batch_too():
    # Beside the batch of a filter used before, the first batch of filters that
    # were not, against the same floor and with the same target.
    tools = _workload.catalog(2_000, servers=40, layout="in-order")
    rows = _bench._static_batch(tools, 50, lambda _: None,
                                {"reference": 50, "fnmatch": 50, "joined": 50})
    first = [row for row in rows if row.fast == "fast, a new filter's first batch"]
    assert len(first) == 1 and first[0].baseline == "floor (read-only loop)"
    assert first[0].target == "fast within 3x of the floor: ratio >= 0.33"
    assert first[0].met == (first[0].ratio >= 0.33)
    assert all(row.correct for row in rows)


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
