"""benches/report.py and the runner's rows: targets read as met or missed."""

from __future__ import annotations

import pytest

from toolfilter_fast.bench.runner import Row, render, target_met


@pytest.mark.parametrize(("target", "ratio", "fast_ns", "met"), [
    (">= 100x", 225.5, 100.0, True),
    (">= 100x", 98.1, 100.0, False),
    (">= 1.6x on the 1M batch", 1.79, 1.0, True),
    ("fast within 3x of the floor: ratio >= 0.33", 0.30, 1.0, False),
    # The "<= 2x" is context: the bound is the ratio's.
    ("time per tool at 10,000 <= 2x at 10: ratio >= 0.5", 0.88, 1.0, True),
    (">= 5x, and fast <= 100 ms", 8.3, 2.7e6, True),
    (">= 5x, and fast <= 100 ms", 8.3, 120e6, False),
    (">= 5x, and fast <= 100 ms", 4.9, 2.7e6, False),
    (">= 1,000x", 999.0, 1.0, False),
    ("", 3.0, 1.0, None),
    ("context only", 3.0, 1.0, None),
])
def test_a_target_is_met_or_missed_from_the_ratio_and_the_fast_time(target, ratio, fast_ns, met):
    assert target_met(target, ratio, fast_ns) is met
    row = Row("w", "fast", "base", fast_ns, fast_ns * ratio, target=target)
    assert row.met is met


def test_the_table_has_a_met_column():
    rows = [Row("w", "fast", "a", 1.0, 200.0, target=">= 100x"),
            Row("w", "fast", "b", 1.0, 50.0, target=">= 100x"),
            Row("w", "fast", "c", 1.0, 50.0)]
    lines = render(rows, []).splitlines()
    assert lines[0].rstrip().endswith("| target | met |")
    assert [line.rsplit("|", 2)[1].strip() for line in lines[2:5]] == ["met", "missed", ""]
