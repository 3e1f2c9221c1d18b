"""Policy: the four stages by example, cache scope, reasons, config files and
their errors, and Hypothesis comparing the fast Policy with the reference."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_policy_fuzz import LIARS

import toolfilter_fast
from toolfilter_fast import Annotations, ConfigError, Focus, Policy, Tool, reference

READ = {"readOnlyHint": True}

CATALOG = [
    Tool("github", "get_issue", annotations=READ),
    Tool("github", "delete_repo", annotations={"destructiveHint": True}),
    Tool("github", "admin_rotate_keys", annotations={"readOnlyHint": False, "destructiveHint": False}),
    Tool("fs", "read_file", annotations=READ),
    Tool("web", "fetch", annotations={**READ, "openWorldHint": True}),
    Tool("ui", "demo.search.type_text", annotations=READ),
    Tool("ui", "demo.results.open", annotations=READ),
    Tool("ui", "other.search.type_text", annotations=READ),
]

CONFIG = {
    "filter": {
        "include": [{"annotations": {"readOnlyHint": True}}, "github/admin_*"],
        "exclude": [{"annotations": {"destructiveHint": True}},
                    {"cel": 'tool.name.startsWith("admin_") && (ctx == null || ctx.role != "admin")'}],
    },
    "tool_filter_groups": [
        {"mode": "always", "tools": ["github__*", "ui__*"]},
        {"mode": "dynamic", "tools": ["fs__*"], "keywords": ["file"]},
        {"mode": "dynamic", "tools": ["web__*"], "keywords": ["http", "url"]},
    ],
    "budget": {"max_tools": 40},
}


@pytest.fixture(params=["fast", "reference"])
def policy_cls(request):
    return Policy if request.param == "fast" else reference.Policy


def names(selection):
    return [tool.name for tool in selection.tools]


def test_each_stage_by_example(policy_cls):
    policy = policy_cls.from_config(CONFIG)
    user = policy.select(CATALOG, ctx={"role": "user"}, message="open the file")
    assert names(user) == ["get_issue", "read_file", "demo.search.type_text",
                           "demo.results.open", "other.search.type_text"]
    admin = policy.select(CATALOG, ctx={"role": "admin"}, message="fetch this url")
    assert names(admin) == ["get_issue", "admin_rotate_keys", "fetch", "demo.search.type_text",
                            "demo.results.open", "other.search.type_text"]
    focused = policy.select(CATALOG, ctx={"role": "user"}, message="a file", focus="demo:search")
    assert names(focused) == ["get_issue", "read_file", "demo.search.type_text"]
    hovering = policy.select(CATALOG, ctx={"role": "user"}, focus=Focus("demo", "search", "results"))
    assert names(hovering) == ["get_issue", "demo.search.type_text", "demo.results.open"]
    stages = [user.stage_of(i) for i in range(len(CATALOG))]
    assert stages == [None, "visibility", "visibility", None, "groups", None, None, None]


def test_budget_keeps_the_first_in_input_order(policy_cls):
    policy = policy_cls.from_config({**CONFIG, "budget": {"max_tools": 2}})
    selection = policy.select(CATALOG, ctx={"role": "admin"}, message="file url")
    assert names(selection) == ["get_issue", "admin_rotate_keys"]
    assert [d.stage for d in selection.dropped].count("budget") == 5


def test_the_lens_cap_and_the_lens_order_do_not_reorder_the_selection(policy_cls):
    policy = policy_cls(focus_lens={"max_tools": 2})
    tools = [Tool("s", "global_a"), Tool("s", "demo.w.x"), Tool("s", "global_b"), Tool("s", "demo.w.y")]
    # The lens ranks the widget's tools first, then globals, and cuts to 2.
    assert names(policy.select(tools, focus="demo:w")) == ["demo.w.x", "demo.w.y"]
    assert names(policy_cls().select(tools, focus="demo:w")) == ["global_a", "demo.w.x", "global_b", "demo.w.y"]


def test_cache_scope(policy_cls):
    impl = reference if policy_cls is reference.Policy else toolfilter_fast
    static = policy_cls(filter=impl.compile(exclude=["*/delete_*"]),
                        groups=[{"mode": "always", "tools": ["*"]}], max_tools=5)
    assert static.select(CATALOG).cache_scope == "public"
    assert static.select(CATALOG, ctx={"role": "x"}, message="m").cache_scope == "public"
    assert static.select(CATALOG, focus="demo:search").cache_scope == "private"
    dynamic_groups = policy_cls(groups=[{"mode": "dynamic", "tools": ["*"], "keywords": ["x"]}])
    assert dynamic_groups.select(CATALOG).cache_scope == "private"
    assert policy_cls.from_config(CONFIG).select(CATALOG).cache_scope == "private"


def test_reasons_name_stage_and_cause():
    policy = Policy.from_config({**CONFIG, "budget": {"max_tools": 1}})
    selection = policy.select(CATALOG, ctx={"role": "user"}, message="hello", focus="demo:search")
    reasons = {d.tool.name: (d.stage, d.reason) for d in selection.dropped}
    assert reasons["delete_repo"][0] == "visibility"
    assert "destructiveHint" in reasons["delete_repo"][1]
    assert reasons["admin_rotate_keys"][0] == "visibility" and "cel" in reasons["admin_rotate_keys"][1]
    assert reasons["read_file"] == ("groups", "hidden: no live group has a pattern matching "
                                              "'fs__read_file' (live: groups[0])")
    assert reasons["other.search.type_text"][0] == "focus"
    assert "not of session 'demo'" in reasons["other.search.type_text"][1]
    assert reasons["demo.results.open"][0] == "focus"
    assert reasons["demo.search.type_text"] == ("budget", "hidden: over the budget of 1 tools (the first ones are kept)")
    assert json.loads(json.dumps([d.to_dict() for d in selection.dropped]))
    decision = policy.explain(CATALOG[3], {"role": "user"}, "hello", tools=CATALOG)
    assert not decision.kept and decision.stage == "groups"
    assert policy.explain(CATALOG[0], {"role": "user"}).kept


def test_from_file_and_errors(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(
        '[filter]\ninclude = [{annotations = {readOnlyHint = true}}]\n'
        'exclude = [{cel = "tool.name == \\"x\\""}]\n'
        '[[tool_filter_groups]]\nmode = "always"\ntools = ["github__*"]\n'
        '[focus_lens]\nmax_tools = 3\n[budget]\nmax_tools = 10\n'
    )
    policy = Policy.from_file(path)
    assert policy.max_tools == 10 and policy.focus_lens == {"max_tools": 3} and len(policy.groups) == 1
    assert names(policy.select(CATALOG)) == ["get_issue"]
    assert names(reference.Policy.from_file(path).select(CATALOG)) == ["get_issue"]
    for text, message in [
        ("[budget]\nmax_tool = 3\n", r"policy\.toml: budget\.max_tool: unknown key"),
        ("[budget]\nmax_tools = -1\n", r"budget\.max_tools: expected an integer >= 0"),
        ("[budgets]\nmax_tools = 1\n", r"budgets: unknown top-level key"),
        ("[[tool_filter_groups]]\nmode = \"Always\"\n", r"tool_filter_groups\[0\]\.mode"),
        ("[filter]\ninclude = [{annotations = {readOnlyHint = 1}}]\n",
         r"filter\.include\[0\]: 'annotations\.readOnlyHint' must be true or false"),
        ("[focus_lens]\nmax_tool = 3\n", r"focus_lens\.max_tool: unknown key"),
    ]:
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            Policy.from_file(path)


def test_bad_arguments():
    with pytest.raises(TypeError, match="filter must be a ToolFilter"):
        Policy(filter=["*"])
    with pytest.raises(TypeError, match="max_tools must be an int >= 0"):
        Policy(max_tools=True)
    with pytest.raises(ValueError, match="unknown focus_lens key 'maxtools'"):
        Policy(focus_lens={"maxtools": 3})
    with pytest.raises(TypeError, match="message must be str or None"):
        Policy().select(CATALOG, message=5)
    for bad in ["demo:", ":w", "a:b:c:d", "a.b:w", "demo:w.x"]:
        with pytest.raises(ValueError):
            Focus.parse(bad)
    with pytest.raises(ValueError, match="focused_id must be a non-empty str without"):
        Policy().select(CATALOG, focus="demo:w.x")
    with pytest.raises(ValueError, match="unknown focus key 'widget'"):
        Focus.parse({"session_id": "s", "widget": "w"})
    with pytest.raises(TypeError, match="expected a Tool"):
        Policy().select([5])


# --- Hypothesis: the fast Policy equals the reference ---------------------------------

_servers = st.sampled_from(["github", "fs", "ui", "web"])
_tool_names = st.sampled_from(["get", "delete_x", "demo.w.a", "demo.v.b", "other.w.c", "x.y", "list", "get"])
_annotations = st.none() | st.fixed_dictionaries(
    {}, optional={"readOnlyHint": st.booleans(), "destructiveHint": st.booleans()})
# Each string plain, or a str subclass that lies through its methods and has a finalizer.
_wrap = st.sampled_from([str, str, *LIARS])
_tools = st.lists(st.builds(Tool, st.builds(lambda cls, s: cls(s), _wrap, _servers),
                            st.builds(lambda cls, s: cls(s), _wrap, _tool_names), st.none(),
                            st.none(), _annotations),
                  max_size=12)
_groups = st.lists(st.fixed_dictionaries({
    "mode": st.sampled_from(["always", "dynamic"]),
    "tools": st.lists(st.sampled_from(["github__*", "fs__*", "ui__demo.*", "*", "web__get"]), max_size=2),
    "keywords": st.lists(st.sampled_from(["file", "web", ""]), max_size=2),
}), max_size=3)
_filters = st.sampled_from([
    {}, {"exclude": ["*/delete_*"]}, {"include": [Annotations(readOnlyHint=True)]},
    {"exclude": [Annotations(destructiveHint=True)], "include": ["github/*", "ui/*"]},
])
_focus = st.one_of(st.none(), st.sampled_from(["demo:w", "demo:w:v", "other:w", "demo:v:v"]))
_lens = st.one_of(st.just({}), st.builds(lambda n: {"max_tools": n}, st.integers(0, 4)),
                  st.just({"mode": "focused"}), st.just({"mode": "all"}))


@settings(deadline=None)
@given(tools=_tools, groups=_groups, options=_filters, lens=_lens, focus=_focus,
       budget=st.none() | st.integers(0, 6), message=st.none() | st.sampled_from(["a file", "web", ""]))
def test_fast_policy_equals_reference(tools, groups, options, lens, focus, budget, message):
    fast = Policy(filter=toolfilter_fast.compile(**options), groups=groups, focus_lens=lens,
                  max_tools=budget)
    ref = reference.Policy(filter=reference.compile(**options), groups=groups, focus_lens=lens,
                           max_tools=budget)
    got, want = fast.select(tools, None, message, focus), ref.select(tools, None, message, focus)
    assert [id(t) for t in got.tools] == [id(t) for t in want.tools]
    assert [got.stage_of(i) for i in range(len(tools))] == [want.stage_of(i) for i in range(len(tools))]
    assert (got.cache_scope, got.stages) == (want.cache_scope, want.stages)
    assert len(got.dropped) == len(tools) - len(got.tools)
