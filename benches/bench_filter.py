"""ToolFilter benchmarks: the fast path against its baselines, same workload, same run.

Each benchmark records in ``extra_info["correct"]`` whether it produced the same
answer as the reference (checked on a sample for the slow baselines).
"""

from __future__ import annotations

import pytest

from toolfilter_fast import ToolFilter, reference
from toolfilter_fast.bench import runner as _bench
from toolfilter_fast.bench import workload as _workload

PATTERNS = 1_000


@pytest.fixture(scope="module")
def patterns(catalog):
    return (_workload.patterns(PATTERNS, "include", catalog),
            _workload.patterns(PATTERNS, "exclude", catalog))


@pytest.fixture(scope="module")
def expected(catalog, patterns):
    sample = catalog[:200]
    return sample, reference.compile(include=patterns[0], exclude=patterns[1]).static_filter(sample)


def _record(benchmark, got_sample, expected):
    want = expected[1]
    benchmark.extra_info["correct"] = [id(t) for t in got_sample] == [id(t) for t in want]
    assert benchmark.extra_info["correct"]


@pytest.mark.parametrize("threads", [1, None], ids=["1thread", "allcores"])
def test_fast_static_filter(benchmark, catalog, patterns, expected, threads):
    f = ToolFilter.compile(include=patterns[0], exclude=patterns[1])
    kept = benchmark.pedantic(lambda: f.static_filter(catalog, threads=threads), rounds=5)
    kept_ids = set(map(id, kept))
    _record(benchmark, [t for t in expected[0] if id(t) in kept_ids], expected)


def test_fast_static_mask_columns(benchmark, catalog, patterns, expected):
    f = ToolFilter.compile(include=patterns[0], exclude=patterns[1])
    servers, names = [t.server_id for t in catalog], [t.name for t in catalog]
    mask = benchmark.pedantic(lambda: f.static_mask_columns(servers, names), rounds=5)
    _record(benchmark, [t for t, keep in zip(expected[0], mask, strict=False) if keep], expected)


@pytest.mark.parametrize("baseline", ["reference", "fnmatch", "joined_re"])
def test_baseline_static_filter(benchmark, catalog, patterns, expected, baseline):
    impl = {
        "reference": lambda: reference.compile(include=patterns[0], exclude=patterns[1]),
        "fnmatch": lambda: _bench.FnmatchFilter(*patterns),
        "joined_re": lambda: _bench.JoinedRegexFilter(*patterns),
    }[baseline]()
    sample = expected[0]
    got = benchmark.pedantic(lambda: impl.static_filter(sample), rounds=3)
    _record(benchmark, got, expected)


def test_floor_read_only_loop(benchmark, catalog):
    benchmark.pedantic(lambda: _bench.floor(catalog), rounds=5)


def test_scalar_visible(benchmark, catalog):
    include = _workload.patterns(10, "include", catalog)
    exclude = [*_workload.patterns(10, "exclude", catalog), _workload.dynamic_patterns()["exclude"][0]]
    fast = ToolFilter.compile(include=include, exclude=exclude)
    ref = reference.compile(include=include, exclude=exclude)
    ctx = _workload.contexts()[0]
    tool = catalog[len(catalog) // 2]
    benchmark.extra_info["correct"] = fast.visible(tool, ctx) == ref.visible(tool, ctx)
    benchmark(fast.visible, tool, ctx)
    assert benchmark.extra_info["correct"]


@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_compile_10k_patterns(benchmark, catalog, impl):
    include = _workload.patterns(5_000, "include", catalog)
    exclude = _workload.patterns(5_000, "exclude", catalog)
    module = {"fast": ToolFilter, "reference": reference.ToolFilter}[impl]
    f = benchmark.pedantic(lambda: module.compile(include=include, exclude=exclude), rounds=3)
    assert f.static_mask(catalog[:100]) == reference.compile(
        include=include, exclude=exclude).static_mask(catalog[:100])
