"""benches/relevance.py on a small dataset the test writes in LiveMCPBench's
format: the recall table's methods and numbers, halves, and the message when
there is no dataset; the timing rows on a small synthetic catalog."""

from __future__ import annotations

import importlib.util
import itertools
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
    found, missing = bench.alternatives()
    table = [row for row in rows if row.startswith("| ") and "---" not in row][1:]
    # Per layout: build and query against the pure-Python BM25, and against each alternative.
    assert len(table) == 2 * (2 + 2 * len(found))
    for layout in ("servers interleaved", "servers in order"):
        mine = [row for row in table if f"300 tools, {layout};" in row]
        assert len(mine) == 2 + 2 * len(found), layout
        assert mine[0].startswith("| build the index (1 rounds)")
        assert all(row.rstrip(" |").endswith(("met", "missed")) for row in mine)
        for other in found:
            assert sum(f"vs {other.name} |" in row for row in mine) == 2
    assert any("Not installed" in row for row in rows) == bool(missing)
    catalog = bench.synthetic_catalog(300)
    assert len({tool["server_id"] for tool in catalog}) == 6
    assert all(tool["name"] for tool in catalog)


def test_in_server_order_keeps_each_servers_tools_together(bench):
    catalog = bench.synthetic_catalog(300)
    ordered = bench.in_server_order(catalog)
    assert sorted(map(id, ordered)) == sorted(map(id, catalog))
    servers = [tool["server_id"] for tool in ordered]
    changes = sum(a != b for a, b in itertools.pairwise(servers))
    assert changes == len(set(servers)) - 1
    # Servers in order of first appearance, each server's tools in catalog order.
    assert list(dict.fromkeys(servers)) == list(dict.fromkeys(t["server_id"] for t in catalog))
    first = [tool for tool in catalog if tool["server_id"] == servers[0]]
    assert ordered[:len(first)] == first


@pytest.mark.parametrize("name", ["Tantivy", "Bm25s"])
def test_each_alternative_finds_the_obvious_tool(bench, name):
    """The alternatives rank what they index: a tool whose words the query
    holds comes first, whatever the library (skipped where it is not
    installed: `pip install .[search-baselines]`)."""
    package = {"Tantivy": "tantivy", "Bm25s": "bm25s"}[name]
    pytest.importorskip(package, reason=f"{package} is not installed (the search-baselines extra)")
    other = getattr(bench, name)()
    texts = ["get_weather Forecast of a city", "write_file Write text to a file",
             "geocode Coordinates of an address", "route Directions between two places"]
    other.build(texts)
    assert other.rank("write some text to a file", 2)[0] == 1
    assert other.rank("coordinates of my address", 10)[0] == 2
    assert len(other.rank("coordinates of my address", 10)) <= len(texts)


def test_missing_alternatives_are_said(bench, monkeypatch):
    monkeypatch.setattr(bench, "alternatives", lambda: ([], ["tantivy", "bm25s"]))
    rows = bench.speed_rows(200, rounds=1, queries=1)
    assert rows[-1].startswith("Not installed, so not compared: tantivy, bm25s")
    assert sum(row.startswith("| build the index") for row in rows) == 2
