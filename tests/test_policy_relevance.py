"""The Policy's relevance stage: by example, the config section and its
errors, the scorer hook, and Hypothesis comparing the fast stage with the
reference's on random catalogs and messages (the kept set exactly)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import ConfigError, Policy, Tool, reference
from toolfilter_fast.relevance import Ranking, Relevance

CATALOG = [
    Tool("weather", "get_weather_by_city", "Current weather and forecast for a city"),
    Tool("filesystem", "write_file", "Create a new file or overwrite an existing one"),
    Tool("filesystem", "read_file", "Read the complete contents of a file"),
    Tool("maps", "geocode_address", "Convert an address or place name to coordinates"),
    Tool("maps", "reverse_geocode", "Convert coordinates to a detailed address"),
    Tool("maps", "find_nearby_places", "Find restaurants, parks and shops near a point"),
    Tool("time", "get_current_time", "The current time in a timezone"),
    Tool("calc", "calculate", "Evaluate an arithmetic expression"),
]

ALL = [tool.name for tool in CATALOG]


@pytest.fixture(params=["fast", "reference"])
def policy_cls(request):
    return Policy if request.param == "fast" else reference.Policy


def names(selection):
    return [tool.name for tool in selection.tools]


def test_keeps_the_top_k_in_input_order(policy_cls):
    policy = policy_cls(relevance={"top_k": 2})
    turn = policy.select(CATALOG, message="read a file, then write the file")
    assert names(turn) == ["write_file", "read_file"]
    assert turn.stages == ("visibility", "relevance")
    assert turn.cache_scope == "private"
    assert [turn.stage_of(i) for i in range(3)] == ["relevance", None, None]
    # Input order, whatever the rank: the reverse catalog keeps the reverse order.
    reversed_turn = policy.select(CATALOG[::-1], message="read a file, then write the file")
    assert names(reversed_turn) == ["read_file", "write_file"]


def test_empty_message_and_messages_without_terms_keep_everything(policy_cls):
    policy = policy_cls(relevance=Relevance(top_k=1))
    for message in (None, "", "   ", "what is the ...?", "\ud800"):
        turn = policy.select(CATALOG, message=message)
        assert names(turn) == ALL, message
        assert turn.cache_scope == "private" and "relevance" in turn.stages


def test_ties_keep_the_first_tools(policy_cls):
    # No tool holds "zebra": every score is 0, and the first ones are kept.
    assert names(policy_cls(relevance={"top_k": 3}).select(CATALOG, message="zebra")) == ALL[:3]


def test_a_catalog_within_top_k_is_untouched(policy_cls):
    turn = policy_cls(relevance={"top_k": 8}).select(CATALOG, message="weather")
    assert names(turn) == ALL


def test_always_groups_pin_tools_that_then_do_not_count(policy_cls):
    policy = policy_cls(relevance={"top_k": 1},
                        groups=[{"mode": "always", "tools": ["time__*", "calc__*", "maps__*",
                                                             "weather__*", "filesystem__*"]}])
    # Every tool is pinned by the always group: nothing is cut.
    assert len(policy.select(CATALOG, message="weather")) == len(CATALOG)
    pin_two = policy_cls(relevance={"top_k": 1},
                         groups=[{"mode": "always", "tools": ["time__*", "calc__*"]},
                                 {"mode": "dynamic", "tools": ["*"], "keywords": ["weather"]}])
    turn = pin_two.select(CATALOG, message="weather in Oslo")
    assert names(turn) == ["get_weather_by_city", "get_current_time", "calculate"]


def test_visibility_runs_first(policy_cls):
    impl = reference if policy_cls is reference.Policy else toolfilter_fast
    policy = policy_cls(filter=impl.compile(exclude=["filesystem/read_*"]),
                        relevance={"top_k": 1})
    turn = policy.select(CATALOG, message="read the file")
    assert names(turn) == ["write_file"]
    assert turn.stage_of(2) == "visibility"


def test_the_budget_comes_after(policy_cls):
    policy = policy_cls(relevance={"top_k": 3}, max_tools=1)
    turn = policy.select(CATALOG, message="convert the address to coordinates")
    assert names(turn) == ["geocode_address"]
    assert turn.stages == ("visibility", "relevance", "budget")


def test_relevance_runs_before_the_groups(policy_cls):
    policy = policy_cls(relevance={"top_k": 2}, max_tools=1,
                        groups=[{"mode": "dynamic", "tools": ["maps__*"], "keywords": ["address"]}])
    turn = policy.select(CATALOG, message="convert the address to coordinates")
    assert turn.stages == ("visibility", "relevance", "groups", "budget")
    assert names(turn) == ["geocode_address"]
    # Cut by relevance before the groups saw it; the second best, by the budget.
    assert [turn.stage_of(i) for i in (0, 3, 4, 5)] == ["relevance", None, "budget", "relevance"]


def test_reasons_give_the_rank():
    policy = Policy(relevance={"top_k": 2})
    turn = policy.select(CATALOG, message="read a file, then write the file")
    reasons = {d.tool.name: (d.stage, d.reason) for d in turn.dropped}
    stage, reason = reasons["calculate"]
    assert stage == "relevance"
    assert reason.startswith("hidden: ranked ") and "of 8 for this message" in reason
    assert "keeps the best 2" in reason
    assert policy.explain(CATALOG[0], message="read a file", tools=CATALOG).stage == "relevance"


def test_the_index_is_kept_for_the_same_tools():
    policy = Policy(relevance={"top_k": 2})
    policy.select(CATALOG, message="file")
    first = policy._index
    policy.select(list(CATALOG), message="weather")
    assert policy._index is first
    policy.select([*CATALOG, Tool("x", "y")], message="weather")
    assert policy._index is not first


def test_a_policy_pickles_without_its_index():
    policy = Policy(relevance={"top_k": 2, "weights": {"name": 3}}, max_tools=5)
    policy.select(CATALOG, message="file")
    copy = pickle.loads(pickle.dumps(policy))
    assert copy.relevance == policy.relevance and copy.max_tools == 5
    assert copy._index is None
    assert names(copy.select(CATALOG, message="file")) == names(policy.select(CATALOG, message="file"))


def test_a_scorer_replaces_or_mixes(policy_cls):
    def shortest_name(query, tools):
        return [-float(len(tool.name)) for tool in tools]

    replace = policy_cls(relevance={"top_k": 2, "scorer": shortest_name, "scorer_weight": 1})
    assert names(replace.select(CATALOG, message="weather")) == ["read_file", "calculate"]
    lexical = policy_cls(relevance={"top_k": 1, "scorer": shortest_name, "scorer_weight": 0})
    assert names(lexical.select(CATALOG, message="weather")) == ["get_weather_by_city"]
    # The scorer is called with the candidates: the visible tools no always group pins.
    seen = []

    def recording(query, tools):
        seen.append((query, len(tools)))
        return [0.0] * len(tools)

    impl = reference if policy_cls is reference.Policy else toolfilter_fast
    policy_cls(filter=impl.compile(exclude=["calc/*"]), relevance={"top_k": 1, "scorer": recording},
               groups=[{"mode": "always", "tools": ["time__*"]}]).select(CATALOG, message="weather")
    assert seen == [("weather", 6)]


def test_config_section(tmp_path, policy_cls):
    (tmp_path / "scorers.py").write_text("def flat(query, tools):\n    return [1.0] * len(tools)\n")
    path = tmp_path / "policy.toml"
    path.write_text('[relevance]\ntop_k = 3\nk1 = 1.2\nserver_k1 = 2.5\nserver_evidence = 0.5\n'
                    'synonyms = 0.3\npath_words = false\nsteps = false\n'
                    'scorer = "scorers:flat"\nscorer_weight = 0.25\n'
                    '[relevance.weights]\nname = 3\nparams = 0.5\n')
    policy = policy_cls.from_file(path)
    relevance = policy.relevance
    assert relevance.top_k == 3 and relevance.scorer_weight == 0.25
    assert relevance.ranking == Ranking(name=3, params=0.5, k1=1.2, server_k1=2.5,
                                         server_evidence=0.5, synonyms=0.3, path_words=False,
                                         steps=False)
    assert relevance.scorer.__name__ == "flat"
    assert len(policy.select(CATALOG, message="weather")) == 3


@pytest.mark.parametrize(("section", "error"), [
    ({"top_k": -1}, "relevance.top_k: expected an integer >= 0"),
    ({"top_k": True}, "relevance.top_k: expected an integer >= 0"),
    ({"topk": 3}, "relevance.topk: unknown key"),
    ({"weights": {"names": 1}}, "relevance.weights.names: unknown field"),
    ({"weights": {"name": "1"}}, "relevance.weights.name: expected a number"),
    ({"weights": []}, "relevance.weights: expected a table"),
    ({"k1": 0}, "relevance: k1 must be a finite number > 0"),
    ({"server_k1": 0}, "relevance: server_k1 must be a finite number > 0"),
    ({"server_k1": "3"}, "relevance.server_k1: expected a number"),
    ({"path_words": 1}, "relevance.path_words: expected true or false"),
    ({"steps": "yes"}, "relevance.steps: expected true or false"),
    ({"b": 2}, "relevance: b must be a finite number >= 0 and <= 1"),
    ({"scorer_weight": "x"}, "relevance.scorer_weight: expected a number"),
    ({"scorer": "nowhere_at_all:fn"}, "relevance.scorer: cannot import module 'nowhere_at_all'"),
    ({"scorer": 3}, "relevance.scorer: 'callable' must be a string"),
    ([], "relevance: expected a table"),
])
def test_config_errors(section, error):
    with pytest.raises(ConfigError, match=error.replace(".", r"\.").replace("(", r"\(")):
        Policy.from_config({"relevance": section})


def test_bad_arguments():
    with pytest.raises(TypeError, match="relevance must be a Relevance"):
        Policy(relevance=20)
    with pytest.raises(ValueError, match="relevance top_k must be an int >= 0"):
        Policy(relevance={"top_k": -2})
    with pytest.raises(TypeError, match="scorer must be callable"):
        Policy(relevance={"scorer": "module:fn"})
    with pytest.raises(ValueError, match="unknown ranking option 'kl'"):
        Policy(relevance={"kl": 1})


# --- Hypothesis: the fast stage equals the reference --------------------------------

_WORDS = ["read", "reading", "file", "files", "write", "weather", "city", "map", "address",
          "getWeather", "HTTPServer", "天气", "数据", "ÉTÉ", "the", "a", "Σ", "\x00", "\ud800",
          "\U0001F600", "x", "-", "_"]
_text = st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join)
_name = st.lists(st.sampled_from(_WORDS[:11]), min_size=1, max_size=3).map("_".join)
_tools = st.lists(st.builds(Tool, st.sampled_from(["fs", "web", "maps", "Weather-API"]), _name,
                            st.none() | _text), max_size=14)
_groups = st.lists(st.fixed_dictionaries({
    "mode": st.sampled_from(["always", "dynamic"]),
    "tools": st.lists(st.sampled_from(["fs__*", "web__read*", "*", "maps__map"]), max_size=2),
    "keywords": st.lists(st.sampled_from(["file", "map"]), max_size=1),
}), max_size=2)


def _letters(query, tools):
    """A deterministic toy scorer: the letters a tool's name shares with the query."""
    return [float(len(set(query) & set(tool.name))) for tool in tools]


@settings(deadline=None, max_examples=300)
@given(tools=_tools, groups=_groups, top_k=st.integers(0, 6), message=st.none() | _text,
       ranking=st.builds(Ranking, server_evidence=st.sampled_from([0.0, 1.0]),
                         name=st.sampled_from([1.0, 2.0]), k1=st.sampled_from([0.8, 1.5])),
       scorer=st.sampled_from([None, _letters]), weight=st.sampled_from([0.0, 0.5, 1.0]),
       budget=st.none() | st.integers(0, 4))
def test_fast_relevance_equals_reference(tools, groups, top_k, message, ranking, scorer, weight,
                                         budget):
    relevance = Relevance(top_k=top_k, ranking=ranking, scorer=scorer, scorer_weight=weight)
    fast = Policy(groups=groups, relevance=relevance, max_tools=budget)
    ref = reference.Policy(groups=groups, relevance=relevance, max_tools=budget)
    got, want = fast.select(tools, None, message), ref.select(tools, None, message)
    assert [id(t) for t in got.tools] == [id(t) for t in want.tools]
    assert [got.stage_of(i) for i in range(len(tools))] == [
        want.stage_of(i) for i in range(len(tools))]
    assert (got.cache_scope, got.stages) == (want.cache_scope, want.stages)
    assert all(d.reason for d in got.dropped)
