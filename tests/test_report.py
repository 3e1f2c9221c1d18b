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

# --write merges this run's sections into the file there: the existing file below
# has a hand section (with a fenced "## " line that is not a heading), sections of
# three parts and an old list of failures.
HAND = ("## Tool filter, the layout rows of issue 34 (measured by hand)\n\n"
        "Run alone.  \n\n```\n## not a heading\n```\n\n| a | b |\n| --- | --- |\n| 1 | 2 |")
OLD_FILTER = "## Tool filter\n\nCommand: `old`\n\nold filter table"
OLD_GROUPS = "## Tool groups (`python benches/bench_groups.py standard`)\n\n```\nold groups\n```"
OLD_GATEWAY = "## The gateway (`python benches/bench_gateway.py`: old words)\n\nold gateway"
OLD = "\n\n".join(["# Benchmark results", "old intro", OLD_FILTER, HAND, OLD_GROUPS,
                   OLD_GATEWAY, "## Parts that did not finish\n\n- **Dask recipe**: gone"]) + "\n"


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
        Row("static batch, 10,000 tools, 1,000 include + 1,000 exclude",
            "fast, a new filter's first batch", "floor (read-only loop)", 900.0, 121.0),
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
    table, merged into the file there: the old tool-group section and the hand-made
    one stay; the encoded Arrow rows come on the largest size. (``--only`` leaves out the
    other script parts, which time at full size.)"""
    fake = tmp_path / "no_pytest"
    (fake / "pytest").mkdir(parents=True)
    (fake / "pytest" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pytest'\", name='pytest')\n")
    env = {**os.environ, "PYTHONPATH": str(fake)}
    out = tmp_path / "RESULTS.md"
    out.write_text(OLD)
    result = subprocess.run(
        [sys.executable, str(BENCHES / "report.py"), "--sizes", "300", "--counts", "5,10",
         "--only", "groups,focus,arrow", "--write", "--output", str(out), "--figures", str(tmp_path / "images")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )
    assert result.returncode == 1, result.stderr
    assert "CalledProcessError" not in result.stderr
    assert ("Tool groups (`python benches/bench_groups.py standard`): failed: "
            "pytest is not installed: pip install '.[test]'") in result.stderr
    text = out.read_text()
    assert "| workload | fast | baseline |" in text  # the tool-filter table it finished
    assert "## Tool filter by pattern count" in text
    assert "old filter table" not in text and f"\n\n{HAND}\n\n" in text
    assert f"\n\n{OLD_GROUPS}\n\n" in text and "old gateway" in text
    assert ("It wrote: Tool filter, Adversarial patterns, Tool filter by pattern count, "
            "Encoded Arrow columns." in text)
    assert [report.part_of(t) for t in titles(text)] == [
        "filter", "adversarial", "sweep", "arrow", None, "groups", "gateway", None]
    arrow = text.split("## Encoded Arrow columns (", 1)[1].split("\n## ", 1)[0]
    assert "| fast, server column run-end-encoded | static_mask_columns (lists of str) |" in arrow
    assert "| fast, server and name columns dictionary-encoded | fast, plain utf8 columns |" in arrow
    done = text.split("## Parts that did not finish", 1)[1]
    assert "**Tool groups" in done and "**Focus lens" in done
    assert "(its section is from an earlier run)" in done
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


def titles(text):
    return [title for title, _ in report.sections(text)[1]]


def test_a_section_this_run_did_not_produce_is_kept_byte_for_byte_and_a_rerun_one_replaced():
    run = report.Report(sections=["## Tool filter\n\nCommand: `new`\n\nnew filter table",
                                  "## The gateway (`python benches/bench_gateway.py`: new words)"
                                  "\n\nnew gateway"])
    text = run.text("new intro", OLD)
    assert f"\n\n{HAND}\n\n" in text and f"\n\n{OLD_GROUPS}\n\n" in text
    assert "new filter table" in text and "old filter table" not in text
    assert "new gateway" in text and "old gateway" not in text
    assert titles(text) == ["Tool filter", "Tool filter, the layout rows of issue 34 (measured by hand)",
                            "Tool groups (`python benches/bench_groups.py standard`)",
                            "The gateway (`python benches/bench_gateway.py`: new words)"]
    assert text.startswith("# Benchmark results\n\nnew intro\n\n") and "old intro" not in text
    assert "Dask recipe" not in text  # the old run's failures are not this run's


def test_a_failed_part_keeps_its_old_section_and_is_listed():
    run = report.Report(sections=["## Tool filter\n\nnew"],
                        failed=[("Tool groups (`python benches/bench_groups.py standard`)",
                                 "pytest is not installed: pip install '.[test]'\n    tail"),
                                ("Focus lens (`python benches/bench_focus.py`)", "exited with status 1")])
    text = run.text("intro", OLD)
    assert f"\n\n{OLD_GROUPS}\n\n" in text
    done = text.split("## Parts that did not finish\n\n", 1)[1]
    assert done.splitlines() == [
        "- **Tool groups (`python benches/bench_groups.py standard`)**: pytest is not installed: "
        "pip install '.[test]' (its section is from an earlier run)",
        "- **Focus lens (`python benches/bench_focus.py`)**: exited with status 1",
    ]
    assert titles(text)[-1] == "Parts that did not finish"


def test_merging_does_not_duplicate_a_section():
    run = report.Report(sections=["## Tool groups (`new command`)\n\nnew groups",
                                  "## Encoded Arrow columns (`bench_arrow.py`)\n\narrow rows"])
    once = run.text("intro", OLD)
    assert run.text("intro", once) == once  # the same run merged again changes nothing
    doubled = OLD.replace(OLD_GATEWAY, f"{OLD_GROUPS}\n\n{OLD_GATEWAY}")
    merged = run.text("intro", doubled)
    assert merged == once  # a copy of a part's section goes with the old one
    assert [report.part_of(t) for t in titles(merged)] == [
        "filter", "arrow", None, "groups", "gateway"]


def test_a_new_part_goes_where_the_order_of_the_parts_puts_it():
    arrow = "## Encoded Arrow columns (x)\n\narrow rows"
    sweep = "## Tool filter by pattern count\n\nsweep"
    text = report.Report(sections=[sweep, arrow]).text("intro", OLD)
    assert [report.part_of(t) for t in titles(text)] == [
        "filter", "sweep", "arrow", None, "groups", "gateway"]
    # Before the first later part when no earlier one is there; last among hand sections.
    only_later = "\n\n".join(["# Benchmark results", "intro", HAND, OLD_GATEWAY]) + "\n"
    text = report.Report(sections=[arrow]).text("intro", only_later)
    assert [report.part_of(t) for t in titles(text)] == [None, "arrow", "gateway"]
    text = report.Report(sections=[arrow]).text("intro", f"# Results\n\n{HAND}\n")
    assert [report.part_of(t) for t in titles(text)] == [None, "arrow"]


def test_every_part_is_known_by_its_heading_and_a_hand_section_by_none():
    assert report.part_of("Tool filter") == "filter"
    assert report.part_of("Tool filter by pattern count") == "sweep"
    assert report.part_of("Tool filter, the layout rows of issue 34 (`runner._layouts`)") is None
    assert report.part_of("Relevance (`python benches/relevance.py`: recall)") == "relevance"
    assert report.part_of("Relevance II") is None
    assert set(report.SCRIPT_PARTS) <= set(report.HEADINGS)


def test_write_makes_a_fresh_file_where_there_is_none_and_merges_into_one_that_is(tmp_path):
    run = report.Report(sections=["## Tool filter\n\nnew"], failed=[("Figures", "no matplotlib")])
    path = tmp_path / "RESULTS.md"
    assert report.write(path, run, "intro") is False
    assert path.read_text() == run.text("intro") == (
        "# Benchmark results\n\nintro\n\n## Tool filter\n\nnew\n\n"
        "## Parts that did not finish\n\n- **Figures**: no matplotlib\n")
    path.write_text(OLD)
    assert report.write(path, run, "intro") is True
    assert path.read_text() == run.text("intro", OLD)
    assert f"\n\n{HAND}\n\n" in path.read_text()
