"""The focus lens (spec/focus_lens.md): a table test per rule on both implementations,
then Hypothesis properties and fast-versus-reference equivalence."""

from __future__ import annotations

import json
import threading
from collections import UserDict
from types import MappingProxyType, SimpleNamespace
from typing import ClassVar

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import reference

from examples_budget import EQUIVALENCE_EXAMPLES

META = "s.discover_tools"


def T(name, description=None):
    tool = {"name": name, "inputSchema": {"type": "object"}}
    if description is not None:
        tool["description"] = description
    return tool


def names(tools):
    return [t["name"] if isinstance(t, dict) else t.name for t in tools]


def lens(impl, tools, mode="focused", **options):
    options.setdefault("session_id", "s")
    return impl.FocusLens.filter(tools, mode, **options)


def found(impl, registry_tools, query, session_id="s"):
    """The names the meta-tool's callback lists for ``query`` over a registry of
    ``registry_tools`` (a plain one, which takes any tool, odd ones too)."""
    registry = SimpleNamespace(list_tools=lambda: list(registry_tools))
    spec = impl.FocusLens.discover_tools_spec(registry, session_id)
    content = spec["callback"]({"query": query})
    assert isinstance(content, list) and len(content) == 1
    assert content[0]["type"] == "text"
    return [item["name"] for item in json.loads(content[0]["text"])]


# --- Names -----------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, kept",
    [
        ("s.w.click", True),
        ("s.w", True),             # no action: still widget w's tool
        ("s.w.a.b", True),         # more segments: the second is the widget
        ("raxol_list", True),      # a global has no '.'
        ("s", True),               # named like the session, but a global
        ("", True),                # the empty name has no '.' either
        ("t.w.click", False),      # another session's tool for the same widget id
        ("st.w.click", False),     # a session prefix is not the session
        ("xs.w.click", False),
        ("S.w.click", False),      # ids are compared exactly, case too
        ("s.wx.click", False),     # a widget prefix is not the widget
        ("s.xw.click", False),
        ("s.W.click", False),
        ("s.ab.click", False),
        (".w.click", False),       # an empty session segment
        ("s..click", False),       # an empty widget segment
        ("s.", False),
        ("s.x.click", False),      # another widget of the session
    ],
)
def test_which_names_the_focused_widget_sees(impl, name, kept):
    assert names(lens(impl, [T(name)], focused_id="w")) == ([name] if kept else [])


def test_the_seed_prefix_case(impl):
    tools = [T("demo.a.click"), T("demo.ab.click")]
    assert names(lens(impl, tools, session_id="demo", focused_id="a")) == ["demo.a.click"]


@pytest.mark.parametrize("option", ["session_id", "focused_id", "hover_id"])
@pytest.mark.parametrize("value", ["", "a.b", ".", "s.", 3, b"s", ["s"]])
def test_a_bad_id_names_the_option(impl, option, value):
    options = {"session_id": "s", option: value}
    with pytest.raises(ValueError, match=option):
        impl.FocusLens.filter([T("g")], "hover", **options)


@pytest.mark.parametrize("option", ["session_id", "focused_id", "hover_id"])
def test_ids_are_checked_in_all_mode_too(impl, option):
    with pytest.raises(ValueError, match=option):
        impl.FocusLens.filter([T("g")], "all", **{option: "a.b"})


def test_tools_come_back_as_given(impl):
    a, g = T("s.w.a"), T("g")
    out = lens(impl, [g, a], focused_id="w")
    assert out[0] is a and out[1] is g
    out = impl.FocusLens.filter([g, a])
    assert out[0] is g and out[1] is a


def test_objects_and_other_mappings_work(impl):
    obj = SimpleNamespace(name="s.w.a")
    proxy = MappingProxyType({"name": "g"})
    user = UserDict({"name": "s.w.b"})
    assert lens(impl, [proxy, obj, user], focused_id="w") == [obj, user, proxy]


def test_a_dict_subclass_is_read_as_a_mapping(impl):
    class Tool(dict):
        pass

    tool = Tool(name="s.w.a")
    assert lens(impl, [tool], focused_id="w") == [tool]


@pytest.mark.parametrize(
    "tool, message",
    [
        ({"description": "no name"}, r"tools\[1\].*name"),
        ({"name": 3}, r"tools\[1\]: name must be str, not int"),
        ({"name": None}, r"tools\[1\]: name must be str"),
        (SimpleNamespace(title="x"), r"tools\[1\].*SimpleNamespace"),
        (42, r"tools\[1\].*int"),
    ],
)
def test_a_tool_without_a_str_name_is_a_type_error(impl, tool, message):
    with pytest.raises(TypeError, match=message):
        lens(impl, [T("g"), tool], focused_id="w")


def test_all_mode_does_not_read_names(impl):
    odd = object()
    assert impl.FocusLens.filter([odd, 1]) == [odd, 1]


# --- Modes -------------------------------------------------------------------------

TOOLS = [
    T("g1"), T("s.h.hover1"), T("s.w.focus1"), T("t.w.other_session"), T("s.x.other_widget"),
    T("g2"), T("s.w.focus2"), T("s.h.hover2"),
]


def test_all_is_the_first_max_tools_unfiltered(impl):
    assert names(impl.FocusLens.filter(TOOLS)) == names(TOOLS)
    assert names(impl.FocusLens.filter(TOOLS, max_tools=3)) == names(TOOLS[:3])
    assert impl.FocusLens.filter(TOOLS, "all", max_tools=0) == []
    assert impl.FocusLens.filter(TOOLS, "all", max_tools=10**30) == TOOLS


def test_all_keeps_duplicates_and_adds_no_meta_tool(impl):
    tools = [T("g"), T("g")]
    registry = impl.ToolRegistry()
    assert impl.FocusLens.filter(tools, "all", session_id="s", registry=registry) == tools


def test_all_takes_any_iterable(impl):
    assert names(impl.FocusLens.filter(iter(TOOLS), max_tools=2)) == ["g1", "s.h.hover1"]


@pytest.mark.parametrize("mode", ["focused", "hover"])
def test_focused_and_hover_need_a_session(impl, mode):
    with pytest.raises(ValueError, match=f"session_id is required in mode '{mode}'"):
        impl.FocusLens.filter(TOOLS, mode, focused_id="w")


def test_focused_is_widget_tools_then_globals(impl):
    assert names(lens(impl, TOOLS, focused_id="w")) == ["s.w.focus1", "s.w.focus2", "g1", "g2"]


def test_focused_with_registry_puts_the_meta_tool_between(impl):
    out = lens(impl, TOOLS, focused_id="w", registry=impl.ToolRegistry())
    assert names(out) == ["s.w.focus1", "s.w.focus2", META, "g1", "g2"]
    assert callable(out[2]["callback"])


def test_focused_without_a_widget_is_meta_and_globals(impl):
    assert names(lens(impl, TOOLS)) == ["g1", "g2"]
    assert names(lens(impl, TOOLS, registry=impl.ToolRegistry())) == [META, "g1", "g2"]


def test_focused_ignores_hover_id(impl):
    assert names(lens(impl, TOOLS, focused_id="w", hover_id="h")) == names(
        lens(impl, TOOLS, focused_id="w")
    )


def test_hover_is_focused_then_hovered_then_meta_then_globals(impl):
    out = lens(impl, TOOLS, "hover", focused_id="w", hover_id="h", registry=impl.ToolRegistry())
    assert names(out) == [
        "s.w.focus1", "s.w.focus2", "s.h.hover1", "s.h.hover2", META, "g1", "g2",
    ]


@pytest.mark.parametrize("hover_id", [None, "w"])
def test_hover_without_a_distinct_hover_id_is_focused(impl, hover_id):
    registry = impl.ToolRegistry()
    assert names(lens(impl, TOOLS, "hover", focused_id="w", hover_id=hover_id,
                      registry=registry)) == names(
        lens(impl, TOOLS, "focused", focused_id="w", registry=registry)
    )


def test_hover_without_focus_shows_the_hovered_widget(impl):
    assert names(lens(impl, TOOLS, "hover", hover_id="h")) == [
        "s.h.hover1", "s.h.hover2", "g1", "g2",
    ]


def test_the_hovered_widget_of_another_session_never_leaks(impl):
    assert names(lens(impl, [T("t.h.a"), T("s.h.b")], "hover", focused_id="w", hover_id="h")) == [
        "s.h.b",
    ]


def test_duplicates_by_name_keep_the_first(impl):
    first, second, g1, g2 = T("s.w.a", "first"), T("s.w.a", "second"), T("g"), T("g")
    out = lens(impl, [g1, first, g2, second], focused_id="w")
    assert out == [first, g1] and out[0] is first and out[1] is g1


def test_duplicates_do_not_use_up_the_cut(impl):
    tools = [T("s.w.a"), T("s.w.a"), T("s.w.b")]
    assert names(lens(impl, tools, focused_id="w", max_tools=2)) == ["s.w.a", "s.w.b"]


@pytest.mark.parametrize(
    "max_tools, expected",
    [
        (7, ["s.w.focus1", "s.w.focus2", "s.h.hover1", "s.h.hover2", META, "g1", "g2"]),
        (6, ["s.w.focus1", "s.w.focus2", "s.h.hover1", "s.h.hover2", META, "g1"]),
        (5, ["s.w.focus1", "s.w.focus2", "s.h.hover1", "s.h.hover2", META]),
        (4, ["s.w.focus1", "s.w.focus2", "s.h.hover1", "s.h.hover2"]),
        (3, ["s.w.focus1", "s.w.focus2", "s.h.hover1"]),
        (1, ["s.w.focus1"]),
        (0, []),
        (10**30, ["s.w.focus1", "s.w.focus2", "s.h.hover1", "s.h.hover2", META, "g1", "g2"]),
    ],
)
def test_the_cut_comes_last(impl, max_tools, expected):
    out = lens(impl, TOOLS, "hover", focused_id="w", hover_id="h", max_tools=max_tools,
               registry=impl.ToolRegistry())
    assert names(out) == expected


def test_default_max_tools_is_15(impl):
    tools = [T(f"g{i}") for i in range(20)]
    assert len(impl.FocusLens.filter(tools)) == 15
    assert len(lens(impl, tools)) == 15


@pytest.mark.parametrize("max_tools", [-1, 1.5, 2.0, "3", None, True, False])
def test_max_tools_must_be_an_int_at_least_zero(impl, max_tools):
    with pytest.raises(ValueError, match="max_tools must be an int >= 0"):
        impl.FocusLens.filter(TOOLS, max_tools=max_tools)


@pytest.mark.parametrize("mode", ["ALL", "focus", "", None, 1])
def test_an_unknown_mode_lists_the_modes(impl, mode):
    with pytest.raises(ValueError, match="mode must be one of 'all', 'focused', 'hover'"):
        impl.FocusLens.filter(TOOLS, mode)


def test_modes_constant(impl):
    assert impl.FocusLens.MODES == ("all", "focused", "hover")


@pytest.mark.parametrize("registry", [object(), [], {"list_tools": 1}])
def test_a_registry_needs_list_tools(impl, registry):
    with pytest.raises(ValueError, match="registry must have a list_tools"):
        lens(impl, TOOLS, registry=registry)


def test_a_tool_named_like_the_meta_tool_keeps_its_place(impl):
    # The input's own "s.discover_tools" is widget discover_tools's tool only:
    # when that widget has focus it comes first and the generated one is dropped.
    own = T(META, "the app's own")
    registry = impl.ToolRegistry()
    out = lens(impl, [own, T("g")], focused_id="discover_tools", registry=registry)
    assert out[0] is own and names(out) == [META, "g"]
    # Otherwise it is neither the focused widget's nor a global: the lens adds its own.
    out = lens(impl, [own, T("g")], focused_id="w", registry=registry)
    assert names(out) == [META, "g"] and out[0] is not own and "callback" in out[0]


def test_any_iterable_of_tools(impl):
    assert names(lens(impl, (t for t in TOOLS), focused_id="w")) == names(
        lens(impl, TOOLS, focused_id="w")
    )


class Meddler:
    """A tool whose name, when read, renames and empties the tools read before it."""

    def __init__(self, victims):
        self.victims = victims

    @property
    def name(self):
        for victim in self.victims:
            victim["name"] = "s.w.renamed"
            victim.clear()
        return "s.w.meddler"


class ListMeddler:
    """A tool whose name, when read, empties the list being filtered."""

    def __init__(self, tools):
        self.tools = tools

    @property
    def name(self):
        self.tools.clear()
        return "g2"


def test_a_name_read_that_changes_the_input_list(impl):
    tools = [T("g1")]
    tools += [ListMeddler(tools), T("s.w.a")]
    first, meddler, last = tools
    assert lens(impl, tools, focused_id="w") == [last, first, meddler]


def test_a_name_read_that_changes_earlier_tools(impl):
    # The Rust scan borrows names without owning them; code run by a later
    # tool must not be able to pull a kept name away from under it.
    first, other = {"name": "s.w." + "x" * 40}, {"name": "s.q.y"}
    tools = [first, other, Meddler([first, other]), {"name": "g"}]
    out = lens(impl, tools, focused_id="w")
    assert [id(t) for t in out] == [id(first), id(tools[2]), id(tools[3])]


class SneakyName(str):
    """A name whose encoding (needed for a lone surrogate) changes its own tool."""

    tool: ClassVar[dict] = {}

    def encode(self, *args):
        SneakyName.tool.clear()
        return str(self).encode(*args)


def test_a_str_subclass_name_that_changes_its_tool_when_encoded(impl):
    tool = {"name": SneakyName("s.w.\ud800" + "x" * 40), "description": "d"}
    SneakyName.tool = tool
    assert lens(impl, [tool], focused_id="w") == [tool]
    tool2 = {"name": SneakyName("s.w.\ud800"), "description": "d"}
    SneakyName.tool = tool2
    text = impl.FocusLens.discover_tools_spec(
        SimpleNamespace(list_tools=lambda: [tool2]), "s")["callback"]({"query": ""})[0]["text"]
    assert json.loads(text)[0]["name"] == "s.w.\ud800"


def test_lone_surrogates_in_names(impl):
    tools = [T("s.\ud800.a"), T("s.\ufffd.a"), T("\udfff")]
    assert names(lens(impl, tools, focused_id="\ud800")) == ["s.\ud800.a", "\udfff"]


# --- discover_tools ------------------------------------------------------------------

def test_discover_tools_name(impl):
    assert impl.FocusLens.discover_tools_name("demo") == "demo.discover_tools"


@pytest.mark.parametrize("session_id", ["", "a.b", None, 3])
def test_discover_tools_name_checks_the_session(impl, session_id):
    with pytest.raises(ValueError, match="session_id"):
        impl.FocusLens.discover_tools_name(session_id)
    with pytest.raises(ValueError, match="session_id"):
        impl.FocusLens.discover_tools_spec(impl.ToolRegistry(), session_id)


def test_discover_tools_spec_needs_a_registry(impl):
    with pytest.raises(ValueError, match="registry must have a list_tools"):
        impl.FocusLens.discover_tools_spec(None, "s")


def test_discover_tools_spec_shape(impl):
    spec = impl.FocusLens.discover_tools_spec(impl.ToolRegistry(), "demo")
    assert set(spec) == {"name", "description", "inputSchema", "callback"}
    assert spec["name"] == "demo.discover_tools"
    assert "demo" in spec["description"] and "keyword" in spec["description"]
    schema = spec["inputSchema"]
    assert schema["type"] == "object"
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["required"] == ["query"]
    assert callable(spec["callback"])
    json.dumps({k: v for k, v in spec.items() if k != "callback"})


def test_discover_returns_one_text_item_of_json(impl):
    registry = impl.ToolRegistry([T("s.w.click", "Click it"), T("s.w.type")])
    spec = impl.FocusLens.discover_tools_spec(registry, "s")
    assert spec["callback"]({"query": "click"}) == [
        {"type": "text", "text": json.dumps([{"name": "s.w.click", "description": "Click it"}])},
    ]
    content = spec["callback"]({"query": "type"})
    assert json.loads(content[0]["text"]) == [{"name": "s.w.type", "description": None}]


def test_discover_reads_the_registry_at_call_time(impl):
    registry = impl.ToolRegistry()
    spec = impl.FocusLens.discover_tools_spec(registry, "s")
    assert json.loads(spec["callback"]({"query": ""})[0]["text"]) == []
    registry.register(T("s.w.late"))
    assert json.loads(spec["callback"]({"query": ""})[0]["text"])[0]["name"] == "s.w.late"


@pytest.mark.parametrize(
    "name, description, query, hit",
    [
        ("s.search.click", None, "click", True),
        ("s.Search.Click", None, "sEARCH", True),       # either side's case
        ("s.w.a", "Submit the Form", "the form", True),  # the description counts
        ("s.w.a", None, "form", False),
        ("s.w.a", "", "", True),                          # empty query: every session tool
        ("t.w.click", None, "click", False),             # another session
        ("t.w.click", None, "", False),
        ("st.w.click", None, "click", False),            # a session prefix is not the session
        ("click", "click", "click", False),              # a global is no session's
        ("s", None, "", False),                          # nor is a global named like it
        ("s.w.a", None, "w.a", True),                    # '.' is literal
        ("s.w.a_b", None, "a-b", False),                 # no separator mapping
        ("s.w.a_b", None, "a_b", True),
        ("s.w.a", None, "s.", True),                     # the whole name is searched
        ("s.w.ÉCRIRE", None, "écrire", True),
        ("s.w.ΟΔΟΣ", None, "οδοσ", True),                # per character: Σ is σ
        ("s.w.ΟΔΟΣ", None, "οδος", False),               # never the final ς
        ("s.w.\u212aey", None, "key", True),              # Kelvin sign
        ("s.w.İ", None, "i\u0307", True),
        ("s.w.straße", None, "STRASSE", False),          # lower-case, not case folding
        ("s.w.\ud800", None, "\ud800", True),
        ("s.w.\ufffd", None, "\ud800", False),
        ("s.w.a*b", None, "*", True),                    # plain substring, no glob
        ("s.w.ab", None, "a*b", False),
    ],
)
def test_discover_matches(impl, name, description, query, hit):
    assert found(impl, [T(name, description)], query) == ([name] if hit else [])


def test_discover_keeps_registry_order(impl):
    tools = [T("s.b.x"), T("s.a.x", "x"), T("t.a.x"), T("g"), T("s.c.y", "has X")]
    assert found(impl, tools, "x") == ["s.b.x", "s.a.x", "s.c.y"]


def test_discover_skips_tools_without_a_str_name(impl):
    tools = [{"description": "x"}, {"name": 3}, T("s.w.x"), SimpleNamespace(title="x")]
    assert found(impl, tools, "") == ["s.w.x"]


def test_discover_ignores_a_non_str_description(impl):
    registry = [{"name": "s.w.a", "description": ["x"]}]
    spec = impl.FocusLens.discover_tools_spec(SimpleNamespace(list_tools=lambda: registry), "s")
    assert json.loads(spec["callback"]({"query": ""})[0]["text"]) == [
        {"name": "s.w.a", "description": None},
    ]
    assert json.loads(spec["callback"]({"query": "x"})[0]["text"]) == []


def test_discover_reads_objects_and_mappings(impl):
    tools = [SimpleNamespace(name="s.w.a", description="Find me"),
             MappingProxyType({"name": "s.w.b", "description": "find me too"}),
             UserDict({"name": "s.w.c"})]
    assert found(impl, tools, "FIND") == ["s.w.a", "s.w.b"]


def test_a_registry_subclass_overriding_list_tools_is_asked_through_it(impl):
    class OnlyClicks(impl.ToolRegistry):
        def list_tools(self):
            return [t for t in super().list_tools() if t["name"].endswith(".click")]

    registry = OnlyClicks([T("s.w.click"), T("s.w.type")])
    spec = impl.FocusLens.discover_tools_spec(registry, "s")
    assert [t["name"] for t in json.loads(spec["callback"]({"query": ""})[0]["text"])] == [
        "s.w.click",
    ]


def test_any_registry_with_list_tools(impl):
    class Frozen:
        def list_tools(self):
            return (T(n) for n in ["s.w.a", "t.w.a", "s.x.a"])

    spec = impl.FocusLens.discover_tools_spec(Frozen(), "s")
    text = spec["callback"]({"query": "A"})[0]["text"]
    assert [t["name"] for t in json.loads(text)] == ["s.w.a", "s.x.a"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"query": 3}, "argument 'query' must be a string, not number"),
        ({"query": None}, "argument 'query' must be a string, not null"),
        ({"query": ["a"]}, "argument 'query' must be a string, not array"),
        ({"query": True}, "argument 'query' must be a string, not boolean"),
        ({"query": b"a"}, "argument 'query' must be a string, not bytes"),
        ({}, "missing required argument 'query'"),
        (None, "missing required argument 'query'"),
        ("click", "arguments must be an object, not str"),
        (["click"], "arguments must be an object, not list"),
    ],
)
def test_a_query_that_is_no_string_is_an_error_result(impl, arguments, message):
    spec = impl.FocusLens.discover_tools_spec(impl.ToolRegistry([T("s.w.a")]), "s")
    result = spec["callback"](arguments)
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": result["content"][0]["text"]}]
    assert message in result["content"][0]["text"]


def test_discover_text_is_readable_json(impl):
    text = impl.FocusLens.discover_tools_spec(
        impl.ToolRegistry([T("s.w.écrire", "Écrire")]), "s")["callback"]({"query": ""})[0]["text"]
    assert "écrire" in text and json.loads(text)[0]["description"] == "Écrire"


def test_discover_text_escapes_lone_surrogates(impl):
    registry = impl.ToolRegistry([T("s.w.\ud800", "é")])
    text = impl.FocusLens.discover_tools_spec(registry, "s")["callback"]({"query": ""})[0]["text"]
    text.encode("utf-8")  # it can travel
    assert json.loads(text) == [{"name": "s.w.\ud800", "description": "é"}]


def test_the_meta_tool_runs_through_the_registry(impl):
    registry = impl.ToolRegistry([T("s.w.submit", "Send the form"), T("g")])
    spec = impl.FocusLens.discover_tools_spec(registry, "s")
    registry.register(spec)
    text = registry.call(META, {"query": "FORM"})[0]["text"]
    assert json.loads(text) == [{"name": "s.w.submit", "description": "Send the form"}]
    # It lists itself too: it is one of the session's tools.
    assert found(impl, registry.list_tools(), "discover") == [META]


# --- ToolRegistry --------------------------------------------------------------------

def test_registry_keeps_registration_order(impl):
    registry = impl.ToolRegistry([T("b"), T("a")])
    registry.register(T("c"))
    assert names(registry.list_tools()) == ["b", "a", "c"]
    assert len(registry) == 3 and "a" in registry and "z" not in registry


def test_registry_replaces_a_name_in_place(impl):
    first, again = T("a", "first"), T("a", "again")
    registry = impl.ToolRegistry([first, T("b")])
    registry.register(again)
    assert registry.list_tools()[0] is again and names(registry.list_tools()) == ["a", "b"]
    assert registry.get("a") is again and registry.get("zz") is None


def test_registry_unregister(impl):
    registry = impl.ToolRegistry([T("a"), T("b")])
    assert registry.unregister("a") is True
    assert registry.unregister("a") is False
    assert names(registry.list_tools()) == ["b"]
    registry.register(T("a"))
    assert names(registry.list_tools()) == ["b", "a"]


def test_registry_list_is_a_snapshot(impl):
    registry = impl.ToolRegistry([T("a")])
    listed = registry.list_tools()
    listed.append(T("x"))
    registry.register(T("b"))
    assert names(listed) == ["a", "x"] and names(registry.list_tools()) == ["a", "b"]


def test_registry_snapshot_is_shared_until_a_change(impl):
    registry = impl.ToolRegistry([T("a")])
    first = registry.snapshot()
    assert isinstance(first, tuple) and names(first) == ["a"]
    assert registry.snapshot() is first
    registry.unregister("zz")  # no change
    assert registry.snapshot() is first
    for change in (lambda: registry.register(T("b")), lambda: registry.register_all([T("c")]),
                   lambda: registry.unregister("a"), lambda: registry.register(T("b"))):
        before = registry.snapshot()
        change()
        assert registry.snapshot() is not before
    assert names(registry.snapshot()) == names(registry.list_tools()) == ["b", "c"]


def test_registry_call(impl):
    seen = []
    registry = impl.ToolRegistry()
    registry.register(T("a"), callback=lambda args: seen.append(args) or "done")
    registry.register({"name": "b", "callback": lambda args: args["x"] * 2})
    assert registry.call("a", {"q": 1}) == "done" and seen == [{"q": 1}]
    assert registry.call("a") == "done" and seen[-1] == {}
    assert registry.call("b", {"x": 21}) == 42


def test_registry_call_errors(impl):
    registry = impl.ToolRegistry([T("a")])
    with pytest.raises(KeyError, match="no tool named 'zz'"):
        registry.call("zz")
    with pytest.raises(TypeError, match="tool 'a' has no callable callback"):
        registry.call("a")


def test_registry_re_register_without_callback_drops_the_old_one(impl):
    registry = impl.ToolRegistry()
    registry.register(T("a"), callback=lambda args: 1)
    registry.register({"name": "a", "callback": lambda args: 2})
    assert registry.call("a") == 2


@pytest.mark.parametrize("tool", [{"description": "x"}, {"name": 1}, 5, SimpleNamespace()])
def test_registry_refuses_a_tool_without_a_str_name(impl, tool):
    registry = impl.ToolRegistry()
    with pytest.raises(TypeError, match=r"name|MCP tool"):
        registry.register(tool)
    with pytest.raises(TypeError):
        registry.register_all([T("ok"), tool])
    assert len(registry) == 0  # register_all checks everything first


def test_registry_refuses_a_non_callable_callback(impl):
    with pytest.raises(TypeError, match="callback must be callable"):
        impl.ToolRegistry().register(T("a"), callback=3)


def test_registry_is_thread_safe(impl):
    registry = impl.ToolRegistry()
    errors = []

    def writer(k):
        for i in range(500):
            registry.register(T(f"s.w{k}.t{i}"))
            if i % 3 == 0:
                registry.unregister(f"s.w{k}.t{i}")

    def reader():
        spec = impl.FocusLens.discover_tools_spec(registry, "s")
        for _ in range(50):
            try:
                json.loads(spec["callback"]({"query": "t1"})[0]["text"])
                registry.list_tools()
            except Exception as err:  # collected: a thread's exception is otherwise lost
                errors.append(err)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = {f"s.w{k}.t{i}" for k in range(4) for i in range(500) if i % 3}
    assert len(registry) == len(expected) and set(names(registry.list_tools())) == expected


def test_reference_module_offers_the_same_names():
    for name in ("FocusLens", "ToolRegistry"):
        assert name in toolfilter_fast.__all__ and name in reference.__all__


# --- Hypothesis ------------------------------------------------------------------------

#: Segments that hit the ids, miss them by a prefix, a suffix or case, and the
#: characters whose lower-case is surprising; names are joined with '.'.
SEGMENTS = ["s", "t", "st", "S", "w", "h", "wh", "W", "", "discover_tools", "a", "click",
            "Σ", "ς", "\u212a", "İ", "ß", "\ud800", "x-y", "x_y"]
IDS = ["s", "t", "w", "h", "wh", "discover_tools", "\ud800"]

name_st = st.one_of(
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map(".".join),
    st.text(st.sampled_from(["s", "w", ".", "a", "Σ"]), max_size=6),
)
description_st = st.one_of(
    st.none(), st.just(3),
    st.text(st.sampled_from(["A", "k", "σ", "Σ", " ", "x", '"', "\\", "\n", "\x00", "\x7f",
                             "é", "😀", "\ud800"]), max_size=5),
)


@st.composite
def tool_st(draw):
    name, description = draw(name_st), draw(description_st)
    shape = draw(st.sampled_from(["dict", "dict", "dict", "object", "proxy"]))
    if shape == "object":
        return SimpleNamespace(name=name, description=description)
    tool = {"name": name} if description is None else {"name": name, "description": description}
    return tool if shape == "dict" else MappingProxyType(tool)


def tool_name(tool):
    return tool["name"] if not isinstance(tool, SimpleNamespace) else tool.name


options_st = st.fixed_dictionaries({
    "mode": st.sampled_from(["all", "focused", "hover"]),
    "session_id": st.sampled_from(["s", "t", "\ud800"]),
    "focused_id": st.one_of(st.none(), st.sampled_from(IDS)),
    "hover_id": st.one_of(st.none(), st.sampled_from(IDS)),
    "max_tools": st.integers(0, 12),
    "registry": st.booleans(),
})


def run(impl, tools, options):
    options = dict(options)
    registry = impl.ToolRegistry() if options.pop("registry") else None
    mode = options.pop("mode")
    return impl.FocusLens.filter(tools, mode, registry=registry, **options)


def part(name, options, from_input=True):
    """0 focused, 1 hovered, 2 meta, 3 global: the order parts come in. The
    lens's own meta-tool (not from the input) is the meta part even when a
    widget id is ``discover_tools`` (its name then looks like that widget's)."""
    if "." not in name:
        return 3
    session, widget = name.split(".")[:2]
    assert session == options["session_id"], "a tool of another session"
    if not from_input:
        assert name == f"{session}.discover_tools", "a tool the lens made up"
        return 2
    hover = options["hover_id"] if options["mode"] == "hover" else None
    if widget == options["focused_id"]:
        return 0
    if widget == hover:
        return 1
    assert name == f"{session}.discover_tools", "a tool of another widget"
    return 2


@pytest.mark.parametrize("module", [toolfilter_fast, reference], ids=["fast", "reference"])
@given(tools=st.lists(tool_st(), max_size=12), options=options_st)
# A widget named `discover_tools`: the lens's meta-tool is named like its tools.
@example(tools=[{"name": "s"}, {"name": "\ud800.wh"}], options={
    "mode": "hover", "session_id": "\ud800", "focused_id": "discover_tools", "hover_id": "wh",
    "max_tools": 2, "registry": True,
})
def test_lens_properties(module, tools, options):
    out = run(module, tools, options)
    assert len(out) <= options["max_tools"]
    if options["mode"] == "all":
        assert out == tools[: options["max_tools"]]
        assert all(a is b for a, b in zip(out, tools, strict=False))
        return
    out_names = [tool_name(t) for t in out]
    assert len(set(out_names)) == len(out_names)
    positions = {id(t): i for i, t in reversed(list(enumerate(tools)))}
    ranks = [(part(tool_name(t), options, id(t) in positions), positions.get(id(t), -1)) for t in out]
    assert ranks == sorted(ranks), "parts out of order, or input order lost within one"


@settings(max_examples=EQUIVALENCE_EXAMPLES)
@given(tools=st.lists(tool_st(), max_size=12), options=options_st)
def test_lens_fast_equals_reference(tools, options):
    fast, ref = run(toolfilter_fast, tools, options), run(reference, tools, options)
    assert [tool_name(t) for t in fast] == [tool_name(t) for t in ref]
    for a, b in zip(fast, ref, strict=True):
        assert a is b or (a["name"] == b["name"] and "callback" in a and "callback" in b)


query_st = st.text(st.sampled_from(["s", "S", ".", "a", "k", "K", "σ", "Σ", "ς", "x", "\ud800",
                                    "\u212a", "i", "\u0307", " "]), max_size=3)


@settings(max_examples=EQUIVALENCE_EXAMPLES)
@given(tools=st.lists(tool_st(), max_size=12), session_id=st.sampled_from(["s", "t", "a"]),
       query=query_st)
def test_discover_fast_equals_reference(tools, session_id, query):
    fast = toolfilter_fast.FocusLens.discover_tools_spec(
        SimpleNamespace(list_tools=lambda: tools), session_id)["callback"]({"query": query})
    ref = reference.FocusLens.discover_tools_spec(
        SimpleNamespace(list_tools=lambda: tools), session_id)["callback"]({"query": query})
    assert fast == ref


@settings(max_examples=EQUIVALENCE_EXAMPLES)
@given(tools=st.lists(st.tuples(st.text(), st.one_of(st.none(), st.text())), max_size=6))
def test_discover_json_fast_equals_reference_on_any_text(tools):
    # Every code point, controls, quotes, backslashes and lone surrogates included:
    # the Rust JSON writer must match json.dumps byte for byte.
    listed = [{"name": f"s.{name}", "description": description} for name, description in tools]
    registry = SimpleNamespace(list_tools=lambda: listed)
    fast = toolfilter_fast.FocusLens.discover_tools_spec(registry, "s")["callback"]({"query": ""})
    ref = reference.FocusLens.discover_tools_spec(registry, "s")["callback"]({"query": ""})
    assert fast == ref
    text = fast[0]["text"]
    text.encode("utf-8")
    assert json.loads(text) == listed


@given(tools=st.lists(tool_st(), max_size=12), query=query_st)
def test_discover_never_lists_another_session(tools, query):
    for module in (toolfilter_fast, reference):
        spec = module.FocusLens.discover_tools_spec(SimpleNamespace(list_tools=lambda: tools), "s")
        listed = json.loads(spec["callback"]({"query": query})[0]["text"])
        assert all(item["name"].startswith("s.") for item in listed)
        if query == "":
            assert len(listed) == sum(
                1 for t in tools if isinstance(tool_name(t), str) and tool_name(t).startswith("s.")
            )
