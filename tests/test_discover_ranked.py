"""discover_tools ranked (``rank="bm25"``): the best matches of the session's
tools in score order, the MCP result shape, the index kept while the registry
is unchanged, bad options, and Hypothesis comparing the fast lens with the
reference's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import reference

TOOLS = [
    {"name": "demo.search.type_text", "description": "Type a query into the search box"},
    {"name": "demo.search.submit", "description": "Run the search"},
    {"name": "demo.results.open", "description": "Open one search result in a new tab"},
    {"name": "demo.results.next_page", "description": "Show the next page of results"},
    {"name": "demo.editor.saveFile", "description": "Save the open file to disk",
     "inputSchema": {"type": "object", "properties": {"path": {"description": "Where"}}}},
    {"name": "other.search.type_text", "description": "Type into another session's search"},
    {"name": "global_help", "description": "Search the help pages"},
    {"name": 42, "description": "search without a str name"},
]

IMPLS = {"fast": toolfilter_fast, "reference": reference}


@pytest.fixture(params=sorted(IMPLS))
def impl(request):
    return IMPLS[request.param]


def found(spec, query):
    result = spec["callback"]({"query": query})
    assert isinstance(result, list) and result[0]["type"] == "text"
    return [item["name"] for item in json.loads(result[0]["text"])]


def test_ranked_best_first_and_only_the_sessions(impl):
    registry = impl.ToolRegistry([t for t in TOOLS if isinstance(t["name"], str)])
    spec = impl.FocusLens.discover_tools_spec(registry, "demo", rank="bm25", limit=3)
    assert spec["name"] == "demo.discover_tools"
    assert "best match" in spec["description"]
    names = found(spec, "search")
    assert len(names) == 3 and set(names) <= {t["name"] for t in TOOLS[:4]}
    assert found(spec, "save the file")[0] == "demo.editor.saveFile"
    assert found(spec, "next results page")[0] == "demo.results.next_page"
    assert found(spec, "zzz") == []
    assert found(spec, "") == ["demo.search.type_text", "demo.search.submit",
                               "demo.results.open"]
    assert found(impl.FocusLens.discover_tools_spec(registry, "other", rank="bm25"),
                 "type") == ["other.search.type_text"]


def test_the_default_stays_the_substring_search(impl):
    registry = impl.ToolRegistry([t for t in TOOLS if isinstance(t["name"], str)])
    plain = impl.FocusLens.discover_tools_spec(registry, "demo")
    assert found(plain, "search") == ["demo.search.type_text", "demo.search.submit",
                                      "demo.results.open"]
    assert found(impl.FocusLens.discover_tools_spec(registry, "demo", "substring"),
                 "search") == found(plain, "search")
    assert "contains the query" in plain["description"]


def test_a_registry_change_is_seen(impl):
    registry = impl.ToolRegistry(TOOLS[:2])
    spec = impl.FocusLens.discover_tools_spec(registry, "demo", rank="bm25")
    assert found(spec, "weather") == []
    registry.register({"name": "demo.w.weather", "description": "Today's weather"})
    assert found(spec, "weather") == ["demo.w.weather"]
    registry.unregister("demo.w.weather")
    assert found(spec, "weather") == []


def test_errors_keep_the_mcp_shape(impl):
    spec = impl.FocusLens.discover_tools_spec(impl.ToolRegistry(TOOLS[:2]), "demo", rank="bm25")
    assert spec["callback"]({"query": 3})["isError"] is True
    assert spec["callback"](None)["isError"] is True


def test_bad_options(impl):
    registry = impl.ToolRegistry()
    with pytest.raises(ValueError, match="rank must be None or one of 'substring', 'bm25'"):
        impl.FocusLens.discover_tools_spec(registry, "demo", rank="tfidf")
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        impl.FocusLens.discover_tools_spec(registry, "demo", rank="bm25", limit=-1)
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        impl.FocusLens.discover_tools_spec(registry, "demo", rank="bm25", limit=True)


class _ListingRegistry:
    """Not the package's registry: asked through list_tools(), a new list each time."""

    def __init__(self, tools):
        self.tools = tools

    def list_tools(self):
        return list(self.tools)


_words = st.sampled_from(["search", "open", "file", "Files", "save", "天气", "查询", "the",
                          "\x00", "\ud800", "Σ", "next", "page", "x", ".", "_"])
_text = st.lists(_words, max_size=5).map(" ".join)
_tool = st.fixed_dictionaries({
    "name": st.tuples(st.sampled_from(["demo", "other", ""]), st.sampled_from(["a", "b"]),
                      st.lists(_words, min_size=1, max_size=2).map("_".join)).map(".".join),
    "description": st.one_of(st.none(), _text),
})


@settings(deadline=None, max_examples=200)
@given(st.lists(_tool, max_size=10), _text, st.integers(0, 6), st.booleans())
def test_fast_equals_reference(tools, query, limit, own_registry):
    def spec(module):
        registry = _ListingRegistry(tools) if own_registry else module.ToolRegistry()
        if not own_registry:
            for tool in tools:
                registry.register(tool)
        return module.FocusLens.discover_tools_spec(registry, "demo", rank="bm25", limit=limit)

    fast, ref = spec(toolfilter_fast), spec(reference)
    assert fast["description"] == ref["description"]
    assert fast["callback"]({"query": query}) == ref["callback"]({"query": query})
