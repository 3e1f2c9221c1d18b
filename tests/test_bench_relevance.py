"""benches/relevance.py on a small dataset the test writes in LiveMCPBench's
format: the recall table's methods and numbers, halves, and the message when
there is no dataset; the timing rows on a small synthetic catalog."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

BENCH = pathlib.Path(__file__).resolve().parent.parent / "benches" / "relevance.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("relevance_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CATALOG = {
    "weather": [{"name": "get_forecast", "description": "Weather forecast for a city"}],
    "files": [{"name": "write_file", "description": "Write text to a file"},
              {"name": "read_file", "description": "Read a file"}],
    "maps": [{"name": "geocode", "description": "Coordinates of an address"},
             {"name": "route", "description": "Driving directions between two places"}],
}
TASKS = [
    {"task_id": "t1", "question": "Will it rain in Oslo? Check the weather forecast.",
     "tools": ["get_forecast"]},
    {"task_id": "t2", "question": "Read notes.txt and write a summary file",
     "tools": ["read_file", "write_file"]},
    {"task_id": "t3", "question": "Directions from this address to the station",
     "tools": ["geocode", "route", "not_in_the_catalog"]},
]


def test_recall_table_on_a_small_dataset(bench, tmp_path, capsys):
    (tmp_path / "catalog.json").write_text(json.dumps(CATALOG))
    (tmp_path / "tasks_dev.json").write_text(json.dumps(TASKS))
    assert bench.main(["--data", str(tmp_path), "--skip-timing"]) == 0
    out = capsys.readouterr().out
    assert "Recall on 3 tasks over 5 tools of 3 servers" in out
    rows = {tuple(cell.strip() for cell in line.strip("|").split("|")[:2]): line
            for line in out.splitlines() if line.startswith("| ") and "---" not in line}
    for method in ("substring", "plain BM25", "ToolIndex (defaults)",
                   "ToolIndex, server evidence off", "ToolIndex, path words off",
                   "ToolIndex, servers at the tools' k1"):
        assert (method, "all (3)") in rows
    ours = [float(x) for x in rows[("ToolIndex (defaults)", "all (3)")].strip("|").split("|")[2:5]]
    # Task 3 can never be complete: one of its tools is not in the catalog.
    assert ours[-1] == pytest.approx((1 + 1 + 2 / 3) / 3, abs=5e-4)
    # The targets' rows: the defaults' Recall@10 and @20 over all tasks, said met or missed.
    targets = {line.split("|")[1].strip(): line.split("|")[2:4] for line in out.splitlines()
               if line.startswith("| Recall@")}
    assert float(targets["Recall@20 >= 0.70"][0]) == pytest.approx(ours[-1], abs=5e-4)
    assert targets["Recall@20 >= 0.70"][1].strip() == "met"
    assert targets["Recall@10 >= 0.55"][1].strip() == (
        "met" if ours[1] >= 0.55 else "missed")
    half_a, half_b = bench.halves(TASKS)
    assert sorted(t["task_id"] for t in half_a + half_b) == ["t1", "t2", "t3"]
    assert len(half_a) == 2


def test_no_dataset_is_said(bench, tmp_path, capsys):
    assert bench.main(["--data", str(tmp_path / "nowhere"), "--skip-timing"]) == 0
    assert "No dataset in LiveMCPBench's format (catalog.json, tasks.json)" in capsys.readouterr().out


def test_the_methods_agree_on_the_obvious(bench):
    tools = [tool for listed in CATALOG.values() for tool in listed]
    assert bench.substring_union(tools, "weather in Oslo") == [0]
    assert bench.PlainBM25(tools).rank("read the file", 2)[0] == 2
    assert bench.recall(["a", "b"], ["b", "c"], 1) == 0.0
    assert bench.recall(["a", "b"], ["b", "c"], None) == 0.5


def test_speed_rows_run_on_a_small_catalog(bench):
    rows = bench.speed_rows(300, rounds=1, queries=2)
    assert len(rows) == 4 and rows[2].startswith("| build the index") and "300 tools" in rows[2]
    catalog = bench.synthetic_catalog(300)
    assert len({tool["server_id"] for tool in catalog}) == 6
    assert all(tool["name"] for tool in catalog)
