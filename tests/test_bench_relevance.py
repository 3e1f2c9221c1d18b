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


def _rows(out):
    """Each table row's cells by its first cell (a label's first row: a method's
    recall comes before what it adds)."""
    rows = {}
    for line in out.splitlines():
        if line.startswith("| ") and "---" not in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.setdefault(cells[0], cells[1:])
    return rows


def test_recall_tables_on_a_small_dataset(bench, tmp_path, capsys):
    (tmp_path / "catalog.json").write_text(json.dumps(CATALOG))
    (tmp_path / "tasks_dev.json").write_text(json.dumps(TASKS))
    assert bench.main(["--data", str(tmp_path), "--skip-timing", "--skip-semantic",
                       "--folds", "3"]) == 0
    out = capsys.readouterr().out
    assert "Recall on 3 tasks over 5 tools of 3 servers" in out
    assert "Folds: 3 (1, 1, 1 tasks)" in out
    rows = _rows(out)
    for method in ("substring union", "plain BM25", "ToolIndex (defaults)",
                   "ToolIndex, steps off", "ToolIndex, synonyms off",
                   "ToolIndex, server evidence off", "ToolIndex, path words off",
                   "ToolIndex, options chosen by cross-validation"):
        assert method in rows, method
    ours = rows["ToolIndex (defaults)"]
    # Task 3 can never be complete: one of its tools is not in the catalog. Pooled,
    # the folds hold 1/1, 2/2 and 2/3 needed tools; per task, the same shares.
    assert float(ours[2].split()[0]) == pytest.approx((1 + 1 + 2 / 3) / 3, abs=5e-4)
    assert float(ours[5]) == pytest.approx((1 + 1 + 2 / 3) / 3, abs=5e-4)
    assert ours[2].split()[3:] == ["[0.67,", "1.00]"]
    # The targets: the cross-validated recall, said met or missed.
    chosen = float(rows["ToolIndex, options chosen by cross-validation"][2].split()[0])
    assert rows["lexical, the 72 rankings: Recall@20 >= 0.65"] == [
        f"{chosen:.3f}", "met" if chosen >= 0.65 else "missed"]
    inner = rows["the grid itself (72 or 192 rankings) chosen by an inner 5-fold "
                 "cross-validation in each training fold"]
    assert rows["lexical, the grid chosen by an inner cross-validation: Recall@10 >= 0.55"][0] \
        == inner[1].split()[0]
    for method in ("k1, b and field weights (192 rankings) chosen on each training fold",
                   "BM25+ (a lower bound delta on a matched term), chosen per fold (or none)"):
        assert method in rows, method
    assert "The grid itself, chosen on all the tasks: " in out
    assert "Chosen on all 3 tasks (the defaults): " in out
    for part in bench.PARTS:
        assert part in rows, part


def test_cross_validation_measures_each_fold_with_what_the_others_chose(bench):
    tasks = [{"task_id": f"t{i}", "tools": ["a"], "question": ""} for i in range(6)]
    parts = bench.folds(tasks, 3)
    assert sorted(t["task_id"] for part in parts for t in part) == [f"t{i}" for i in range(6)]
    assert [len(p) for p in parts] == [2, 2, 2]
    assert len(bench.folds(tasks[:2], 6)) == 2
    # "good" finds every task's tool but those of fold 0, "fold0" only one of fold 0's:
    # each fold held out picks what does best on the others.
    in_zero = {t["task_id"] for t in parts[0]}
    good = {t["task_id"]: [] if t["task_id"] in in_zero else ["a"] for t in tasks}
    fold0 = {t["task_id"]: ["a"] if t["task_id"] == parts[0][0]["task_id"] else [] for t in tasks}
    row = bench.chosen("x", [("fold0", fold0), ("good", good)], parts)
    assert row.picks == ["good", "good", "good"]
    assert row.column(0) == [0.0, 1.0, 1.0]
    assert bench.pooled_recall(good, tasks, 5) == pytest.approx(4 / 6)
    assert bench.task_recall(good, tasks, 5) == pytest.approx(4 / 6)
    assert bench.gain_row(row, row).endswith("+0.000 (0 up, 0 down) |")


def test_the_grid_holds_the_defaults_first(bench):
    from toolfilter_fast.relevance import Ranking

    grid = bench.grid_rankings()
    assert grid[0] == Ranking()
    assert len(grid) == len(set(grid))
    held = bench.grid_rankings({"synonyms": 0.0, "path_words": False})
    assert all(r.synonyms == 0.0 and not r.path_words for r in held)
    assert bench.describe(Ranking(steps=False)) == "steps=False"
    assert bench.describe(Ranking()) == "the defaults"


def test_the_structural_variants_rank(bench):
    tools = [{**tool, "server_id": server} for server, listed in CATALOG.items() for tool in listed]
    first = bench.servers_first(tools, bench.Ranking(), 1)("directions from the address")
    assert set(first[:2]) == {3, 4}
    assert bench.by_steps_max(tools)("Read notes.txt and write a summary file")[:2] in (
        [1, 2], [2, 1])
    fused = bench.rrf([0.0, 2.0, 1.0], [0.9, 0.1, 0.5], 0.5)
    assert fused[0] == 0.5 / 61 and fused[1] > fused[0]


def test_weighted_steps_at_one_rank_as_the_package_does(bench):
    from toolfilter_fast.relevance import Ranking, ToolIndex

    tools = [{**tool, "server_id": server} for server, listed in CATALOG.items() for tool in listed]
    for task in TASKS:
        question = task["question"]
        assert bench.weighted_steps(tools, 1.0)(question) == ToolIndex(tools).rank(
            question, 20, matched_only=True)
        assert bench.weighted_steps(tools, 0.0)(question) == ToolIndex(
            tools, Ranking(steps=False)).rank(question, 20, matched_only=True)


def test_a_field_on_its_own_adds_its_own_ranking(bench):
    from toolfilter_fast.relevance import ToolIndex

    tools = [
        {"name": "forecast_rain", "description": "Numbers", "server_id": "a"},
        {"name": "get_data", "description": "The forecast, the rain, the forecast of rain "
         "and more rain and more forecast over the week, day by day, in a table",
         "server_id": "b"},
    ]
    question = "rain forecast"
    assert bench.field_added(tools, "name", 0.0)(question) == ToolIndex(tools).rank(
        question, 20, matched_only=True)
    assert bench.field_added(tools, "description", 5.0)(question)[0] == 1
    assert bench.field_added(tools, "name", 5.0)(question)[0] == 0


def test_feedback_brings_in_what_the_first_tools_say(bench):
    tools = [
        {"name": "get_forecast", "description": "Weather forecast for a city", "server_id": "a"},
        {"name": "rain_radar", "description": "Radar map of the weather", "server_id": "b"},
        {"name": "write_file", "description": "Write text to a file", "server_id": "c"},
    ]
    question = "the forecast for Oslo"
    assert bench.with_feedback(tools, "tools", 1, 0.0)(question) == [0]
    assert bench.with_feedback(tools, "tools", 1, 0.5)(question) == [0, 1]
    assert bench.with_feedback(tools, "server", 1, 0.5)(question) == [0, 1]
    assert bench.with_feedback(tools, "tools", 1, 0.5)("zebra") == []


def test_the_variants_chosen_by_cross_validation_are_reported(bench, tmp_path, capsys):
    (tmp_path / "catalog.json").write_text(json.dumps(CATALOG))
    (tmp_path / "tasks_dev.json").write_text(json.dumps(TASKS))
    assert bench.main(["--data", str(tmp_path), "--skip-timing", "--skip-semantic",
                       "--folds", "3"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    feedback = ("ToolIndex (defaults), pseudo-relevance feedback chosen by cross-validation "
                "(none among the choices)")
    assert feedback in rows
    assert "ToolIndex (defaults), the steps' weight chosen by cross-validation" in rows
    assert "Feedback, chosen in each fold: " in out
    assert "The steps' weight, chosen in each fold: " in out
    assert "A field on its own, chosen in each fold: " in out
    assert ("ToolIndex (defaults), a field scored on its own chosen by cross-validation "
            "(none among the choices)") in rows
    assert ("What feedback adds on the held-out folds, against the defaults: pooled "
            "Recall@10 ") in out


def test_another_local_model_is_measured_the_same_way(bench, tmp_path, capsys):
    for spec in ("word2vec:/x", "fastembed:/x", "fastembed:/x:many"):
        with pytest.raises(SystemExit, match="expected"):
            bench.local_scorer(spec)
    model2vec = pytest.importorskip("model2vec", reason="model2vec is not installed "
                                    "(the semantic-test extra)")
    np = pytest.importorskip("numpy", reason="NumPy comes with model2vec")
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = ["[PAD]", "[UNK]", "weather", "file", "address"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)},
                                           unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.eye(len(vocab), 4, k=-1, dtype=np.float32) + 0.01
    folder = tmp_path / "tiny"
    model2vec.StaticModel(vectors, tokenizer, normalize=True).save_pretrained(str(folder))
    (tmp_path / "catalog.json").write_text(json.dumps(CATALOG))
    (tmp_path / "tasks_dev.json").write_text(json.dumps(TASKS))
    assert bench.main(["--data", str(tmp_path), "--skip-timing", "--skip-semantic",
                       "--folds", "3", "--scorer", f"model2vec:{folder}"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert "Model2Vec tiny alone" in rows
    assert "ToolIndex + Model2Vec tiny, weight and fusion chosen by cross-validation" in rows
    assert "ToolIndex + Model2Vec tiny, chosen in each fold: " in out
    assert "ToolIndex + Model2Vec tiny against the defaults: pooled Recall@10 " in out
    cost = bench.semantic_cost_rows(40, 2, f"model2vec:{folder}")
    assert cost[0].startswith("| Model2Vec tiny on 40 synthetic tools")
    assert len(cost) == 7 and all(" ms |" in row for row in cost[2:])


def test_no_dataset_is_said(bench, tmp_path, capsys):
    assert bench.main(["--data", str(tmp_path / "nowhere"), "--skip-timing"]) == 0
    assert "No dataset in LiveMCPBench's format (catalog.json, tasks.json)" in capsys.readouterr().out


def test_the_semantic_rows_with_the_offline_scorer(bench, tmp_path, capsys):
    pytest.importorskip("wordllama", reason="WordLlama is not installed (the semantic extra)")
    (tmp_path / "catalog.json").write_text(json.dumps(CATALOG))
    (tmp_path / "tasks_dev.json").write_text(json.dumps(TASKS))
    assert bench.main(["--data", str(tmp_path), "--skip-timing", "--folds", "3"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert "WordLlama alone" in rows
    assert "ToolIndex + WordLlama, weight and fusion chosen by cross-validation" in rows
    assert rows["with the offline scorer (WordLlama), the lexical defaults fixed: "
                "Recall@10 >= 0.60"][1] in ("met", "missed")
    nested = rows["WordLlama, nested: the ranking's options and then the fusion chosen on "
                  "each training fold"]
    assert rows["with the offline scorer (WordLlama), nested: Recall@20 >= 0.70"][0] \
        == nested[2].split()[0]
    for form in ("steps", "server 0.5", "server 1", "steps, server 0.5"):
        assert f"WordLlama, {form}: fusion chosen per fold" in rows, form
    cost = bench.semantic_cost_rows(300, 2)
    assert cost[0].startswith("| WordLlama on 300 synthetic tools")
    assert len(cost) == 7 and all(" ms |" in row for row in cost[2:])


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


def test_the_fusions_scale_each_side_their_own_way(bench):
    lexical, semantic = [2.0, 1.0, 0.0], [0.1, 0.3, 0.2]
    assert bench.fuse("mix", 0.5, lexical, semantic) == pytest.approx([0.5, 0.75, 0.25])
    assert bench.fuse("rrf", 0.0, lexical, semantic) == pytest.approx([1 / 61, 1 / 62, 0.0])
    z = bench.fuse("z", 1.0, lexical, semantic)
    assert z == pytest.approx([-1.2247, 1.2247, 0.0], abs=1e-4)
    # A side whose scores are all equal counts 0.
    assert bench.zmix([1.0, 1.0], [0.0, 1.0], 0.0) == [0.0, 0.0]


def test_the_literature_changes_at_their_neutral_values_are_the_package(bench):
    from toolfilter_fast.relevance import ToolIndex

    tools = [{**tool, "server_id": server} for server, listed in CATALOG.items()
             for tool in listed]
    questions = [t["question"] for t in TASKS] + ["zebra"]
    fast = ToolIndex(tools)
    same_b = bench.tweaked_index(tools, "field b", {0: 0.9, 2: 0.9})
    no_delta = bench.tweaked_index(tools, "bm25+", 0.0)
    for question in questions:
        assert same_b.scores(question) == pytest.approx(fast.scores(question))
        assert no_delta.scores(question) == pytest.approx(fast.scores(question))
    # BM25+ lifts a match; query likelihood is never below 0 and finds the term's tools.
    plus = bench.tweaked_index(tools, "bm25+", 1.0)
    assert plus.tools.contribution(0, "forecast") > fast_contribution(bench, tools, "forecast")
    likelihood = bench.tweaked_index(tools, "dirichlet", 1.0)
    scores = likelihood.scores("the weather forecast")
    assert min(scores) >= 0 and scores.index(max(scores)) == 0
    assert likelihood.scores("zebra") == [0.0] * len(tools)


def fast_contribution(bench, tools, term):
    return bench.tweaked_index(tools, "bm25+", 0.0).tools.contribution(0, term)


def test_an_inner_cross_validation_keeps_the_procedure_that_holds_up(bench):
    tasks = [{"task_id": f"t{i}", "question": "q", "tools": ["a"]} for i in range(10)]
    right = {t["task_id"]: ["a"] for t in tasks}
    wrong = {t["task_id"]: ["b"] for t in tasks}
    # "fits" is right on the tasks it chose on and wrong on every other: it loses.
    def fits(train):
        return "fitted", {t["task_id"]: ["a"] if t in train else ["b"] for t in tasks}
    procedures = {"fits": fits, "steady": lambda _train: ("steady", right)}
    name, found = bench.inner_cv(procedures)(tasks)
    assert name == "steady: steady" and found is right
    assert bench.picking([("w", wrong), ("r", right)])(tasks)[0] == "r"
    parts = bench.folds(tasks, 5)
    measured = bench.by_procedure("x", bench.inner_cv(procedures), parts)
    assert measured.picks == ["steady: steady"] * 5 and measured.mean(1) == 1.0


def test_the_embedding_forms_add_steps_and_servers(bench):
    np = pytest.importorskip("numpy", reason="NumPy comes with the embedding libraries")
    from toolfilter_fast.relevance import ToolIndex
    from toolfilter_fast.relevance.semantic import EmbeddingScorer

    vocabulary = ["weather", "forecast", "file", "write", "read", "address", "directions"]

    def embed(texts):
        return np.array([[t.lower().count(w) + 0.01 for w in vocabulary] for t in texts])
    tools = [{**tool, "server_id": server} for server, listed in CATALOG.items()
             for tool in listed]
    scorer = EmbeddingScorer(embed)
    tasks = TASKS[:2]
    forms = bench.semantic_variants(tools, tasks, scorer, ToolIndex(tools))
    one, two = tasks[0]["question"], tasks[1]["question"]
    assert forms["whole"][one] == pytest.approx(scorer(one, tools))
    # A server's embedding is the mean of its tools': the files server's two tools
    # share its score; weather has one tool, so its server's cosine is its own.
    added = [a - b for a, b in zip(forms["server 1"][one], forms["whole"][one], strict=True)]
    assert added[1] == pytest.approx(added[2]) and added[0] == pytest.approx(forms["whole"][one][0])
    # "Read notes.txt and write a summary file" has two steps: the whole's and each
    # step's scores are scaled to 0..1 and added, so the best is at most 3.
    assert max(forms["steps"][two]) <= 3 + 1e-9 and max(forms["steps"][two]) > 1
