"""benches/report.py: targets read as met or missed, a failed part reported with its
cause, and the finished tables written all the same."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolfilter_fast.bench.runner import Row, render, target_met

BENCHES = Path(__file__).resolve().parent.parent / "benches"
sys.path.insert(0, str(BENCHES))
import figures  # noqa: E402
import report  # noqa: E402


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


def test_a_missing_module_is_named_with_the_install_that_brings_it():
    output = ("Traceback (most recent call last):\n  File \"benches/bench_groups.py\", line 27\n"
              "    import pytest\nModuleNotFoundError: No module named 'pytest'\n")
    why = report.cause(output, 1)
    assert why.splitlines()[0] == "pytest is not installed: pip install '.[test]'"
    assert "ModuleNotFoundError" in why  # the tail of the output follows
    assert report.cause("boom\nValueError: bad size\n", 1).startswith("exited with status 1")


def test_by_size_reads_the_static_batch_rows():
    rows = [
        Row("static batch, 10,000 tools, 1,000 include + 1,000 exclude", "fast",
            "floor (read-only loop)", 270.0, 120.0),
        Row("static batch, 10,000 tools, 1,000 include + 1,000 exclude", "fast, 2 threads",
            "fast, 1 thread", 277.0, 269.0),
        Row("static batch, 10,000 tools, 1,000 include + 1,000 exclude", "fast", "reference",
            241.0, 2.55e6),
        Row("compile 10 patterns", "fast", "reference", 1.0, 2.0),
    ]
    assert figures.by_size(rows) == {
        "fast": {10_000: 277.0}, "fast, 1 thread": {10_000: 269.0},
        "floor (read-only loop)": {10_000: 120.0}, "reference": {10_000: 2.55e6},
    }


def test_a_failed_part_is_reported_and_the_finished_tables_are_written(tmp_path):
    """Where pytest cannot be imported (the benchmarks' scripts need it), the tool-group
    and focus-lens parts fail with that cause, and RESULTS.md still gets the filter
    table. (``--only`` leaves out the other script parts, which time at full size.)"""
    fake = tmp_path / "no_pytest"
    (fake / "pytest").mkdir(parents=True)
    (fake / "pytest" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pytest'\", name='pytest')\n")
    env = {**os.environ, "PYTHONPATH": str(fake)}
    out = tmp_path / "RESULTS.md"
    result = subprocess.run(
        [sys.executable, str(BENCHES / "report.py"), "--sizes", "300", "--counts", "5,10",
         "--only", "groups,focus", "--write", "--output", str(out), "--figures", str(tmp_path / "images")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )
    assert result.returncode == 1, result.stderr
    assert "CalledProcessError" not in result.stderr
    assert ("Tool groups (`python benches/bench_groups.py standard`): failed: "
            "pytest is not installed: pip install '.[test]'") in result.stderr
    text = out.read_text()
    assert "| workload | fast | baseline |" in text  # the tool-filter table it finished
    assert "## Tool filter by pattern count" in text
    done = text.split("## Parts that did not finish", 1)[1]
    assert "**Tool groups" in done and "**Focus lens" in done
    assert "pytest is not installed: pip install '.[test]'" in done
    if importlib.util.find_spec("matplotlib"):
        pngs = sorted(p.name for p in (tmp_path / "images").iterdir())
        assert pngs == ["ns-per-tool-by-patterns.png", "ns-per-tool-by-size.png"]
        assert (tmp_path / "images" / pngs[0]).read_bytes().startswith(b"\x89PNG")
    else:
        assert "**Figures**: matplotlib is not installed: pip install '.[bench]'" in done


def test_only_names_the_script_parts_and_refuses_others():
    result = subprocess.run(
        [sys.executable, str(BENCHES / "report.py"), "--only", "groups,gatway"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "--only: unknown part 'gatway'" in result.stderr
    assert "groups, focus, policy, relevance, dask, gateway" in result.stderr
