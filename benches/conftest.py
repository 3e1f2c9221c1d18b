"""Shared workload for the pytest-benchmark suite.

`pytest benches` runs every benchmark once as a test (``--benchmark-disable`` is the
default in pyproject.toml); `pytest benches --benchmark-enable` times them. Sizes
come from ``TOOLFILTER_BENCH_SIZES`` (default ``10000``; the full run in
RESULTS.md uses ``python benches/report.py``).
"""

from __future__ import annotations

import os

import pytest

from toolfilter_fast.bench import workload as _workload

SIZES = [int(s) for s in os.environ.get("TOOLFILTER_BENCH_SIZES", "10000").split(",")]


@pytest.fixture(scope="session", params=SIZES, ids=lambda n: f"{n}tools")
def catalog(request):
    return _workload.catalog(request.param)
