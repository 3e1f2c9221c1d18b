"""The Policy on prompts and resources: ``[prompts]`` and ``[resources]``, the
three rules of ``select_prompts``/``select_resources`` by example (the
section's filter, a name of a hidden tool, a server the caller sees no tool
of), config errors, pickling, and Hypothesis comparing the fast Policy with
the reference on hostile names."""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import ConfigError, Policy, Tool, reference

TOOLS = [
    Tool("fetch", "fetch", annotations={"readOnlyHint": True}),
    Tool("git", "git_log", annotations={"readOnlyHint": True}),
    Tool("git", "git_reset", annotations={"destructiveHint": True}),
    Tool("time", "get_current_time"),
]

CONFIG = {
    "filter": {"exclude": ["fetch/*", {"annotations": {"destructiveHint": True}}],
               "include": ["fetch/*", "git/*"]},
    "prompts": {"exclude": ["*/debug_*"]},
    "resources": {"exclude": ["git/file:///*/.git/*"]},
}


@pytest.fixture(params=["fast", "reference"])
def policy_cls(request):
    return Policy if request.param == "fast" else reference.Policy


def kept(selection):
    return [item["name"] if "name" in item else item.get("uri") for item in selection.tools]


def stages(selection, count):
    return [selection.stage_of(i) for i in range(count)]


def test_a_server_whose_tools_are_all_hidden_shows_no_prompt(policy_cls):
    # The case: with fetch/* excluded, the fetch server's prompt (named
    # like its tool) is no side door; time shows no tool at all (not included).
    policy = policy_cls.from_config(CONFIG)
    prompts = [{"server_id": "fetch", "name": "fetch"}, {"server_id": "fetch", "name": "other"},
               {"server_id": "git", "name": "summary"}, {"server_id": "time", "name": "now"}]
    selection = policy.select_prompts(prompts, TOOLS)
    assert kept(selection) == ["summary"]
    assert stages(selection, 4) == ["tool-name", "server", None, "server"]
    assert selection.stages == ("prompts", "tool-name", "server")
    assert selection.cache_scope == "public"


def test_a_prompt_named_like_a_hidden_tool_is_hidden_even_when_included(policy_cls):
    # git_reset is hidden (destructive): a prompt of that name, compared
    # loosely as an exclude compares, is hidden whatever [prompts] says.
    config = {**CONFIG, "prompts": {"include": ["git/*"]}}
    policy = policy_cls.from_config(config)
    prompts = [{"server_id": "git", "name": "Git-Reset"}, {"server_id": "git", "name": "git_log"},
               {"server_id": "git", "name": "git.reset"}]
    selection = policy.select_prompts(prompts, TOOLS)
    assert kept(selection) == ["git_log"]
    assert stages(selection, 3) == ["tool-name", None, "tool-name"]


def test_an_include_names_what_a_server_without_visible_tools_may_show(policy_cls):
    config = {**CONFIG, "prompts": {"include": ["time/*"], "exclude": ["*/debug_*"]}}
    policy = policy_cls.from_config(config)
    prompts = [{"server_id": "time", "name": "now"}, {"server_id": "time", "name": "debug_clock"},
               {"server_id": "git", "name": "summary"}]
    selection = policy.select_prompts(prompts, TOOLS)
    # An include list is an allow-list: git's prompt is not on it.
    assert kept(selection) == ["now"]
    assert stages(selection, 3) == [None, "prompts", "prompts"]


def test_resources_are_judged_by_uri_and_templates_by_their_template(policy_cls):
    policy = policy_cls.from_config(CONFIG)
    resources = [
        {"uri": "file:///repo/README.md", "name": "readme"},
        {"uri": "file:///repo/.git/config", "name": "config"},
        {"uri_template": "file:///repo/{path}", "name": "file"},
        {"uriTemplate": "git://log/{ref}", "name": "git_reset"},
    ]
    selection = policy.select_resources(resources, TOOLS, server_id="git")
    assert [r["name"] for r in selection.tools] == ["readme", "file"]
    assert stages(selection, 4) == [None, "resources", None, "tool-name"]
    # The same for a server the caller sees no tool of: nothing.
    assert policy.select_resources(resources, TOOLS, server_id="fetch").tools == []


def test_a_dynamic_section_reads_ctx(policy_cls):
    module = reference if policy_cls is reference.Policy else toolfilter_fast

    def admins(item, ctx):
        return bool(ctx and ctx.get("admin"))

    policy = policy_cls(filter=module.compile(), prompts=module.compile(include=[admins]))
    prompts = [{"server_id": "git", "name": "summary"}]
    assert policy.select_prompts(prompts, TOOLS, {"admin": True}).tools == prompts
    chosen = policy.select_prompts(prompts, TOOLS, {"admin": False})
    assert chosen.tools == [] and chosen.cache_scope == "private"


def test_objects_with_attributes_and_their_errors():
    class Prompt:
        def __init__(self, name):
            self.name = name

    policy = Policy()
    one = Prompt("summary")
    assert policy.select_prompts([one], TOOLS, server_id="git").tools == [one]
    with pytest.raises(TypeError, match=r"prompts\[0\]: a server_id \(str\) is needed"):
        policy.select_prompts([one], TOOLS)
    with pytest.raises(TypeError, match=r"prompts\[1\]\.name must be str, not int"):
        policy.select_prompts([one, Prompt(3)], TOOLS, server_id="git")
    with pytest.raises(TypeError, match=r"resources\[0\]\.uri \(or uri_template\) must be str"):
        policy.select_resources([{"name": "x"}], TOOLS, server_id="git")


def test_reasons_say_which_rule():
    policy = Policy.from_config(CONFIG)
    prompts = [{"server_id": "fetch", "name": "fetch"}, {"server_id": "time", "name": "now"},
               {"server_id": "git", "name": "debug_dump"}]
    reasons = [d.reason for d in policy.select_prompts(prompts, TOOLS).dropped]
    assert reasons == [
        "hidden: named like a tool of server 'fetch' that the policy hides ('fetch')",
        "hidden: the policy shows this caller no tool of server 'time', and [prompts] has no "
        "include pattern naming it",
        '[prompts] hidden: exclude[0] "*/debug_*" matches',
    ]


def test_config_sections_and_their_errors(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('[filter]\nexclude = ["*/delete_*"]\n\n[prompts]\nexclude = ["*/debug_*"]\n\n'
                    '[resources]\ninclude = ["docs/file:///srv/*"]\n')
    policy = Policy.from_file(path)
    assert policy.prompts.exclude == ("*/debug_*",)
    assert policy.resources.include == ("docs/file:///srv/*",)
    copy = pickle.loads(pickle.dumps(policy))
    assert (copy.prompts.exclude, copy.resources.include) == (("*/debug_*",), ("docs/file:///srv/*",))
    for text, message in [
        ('[prompts]\nexlude = []\n', "prompts.exlude: unknown key"),
        ('[prompts]\ninclude = [{annotations = {readOnlyHint = true}}]\n',
         "prompts.include[0]: a prompt has no tool annotations"),
        ('[resources]\nexclude = ["x/"]\n', "resources.exclude[0]: empty tool segment"),
        ('prompts = 3\n', "prompts: expected a table, not integer"),
    ]:
        path.write_text(text)
        with pytest.raises(ConfigError, match=re.escape(message)):
            Policy.from_file(path)
    with pytest.raises(TypeError, match="prompts must be a ToolFilter"):
        Policy(prompts=["*/x"])


# --- Hypothesis: the fast Policy equals the reference ---------------------------------

_text = st.sampled_from(["fetch", "Fetch", "git-log", "git_log", "", "a/b", "\x00", "\ud800",
                         "İ", "Σ", "\u212a", "debug_x", "file:///x/.git/y"])
_servers = st.sampled_from(["fetch", "git", "time", ""])
_tools = st.lists(st.builds(Tool, _servers, _text), max_size=8)
_items = st.lists(st.fixed_dictionaries({"server_id": _servers, "name": _text},
                                        optional={"uri": _text}), max_size=8)
_sections = st.sampled_from([{}, {"exclude": ["*/debug_*"]}, {"include": ["git/*"]},
                             {"include": ["*/fetch"], "exclude": ["time/*"]}])
_filters = st.sampled_from([{}, {"exclude": ["fetch/*"]}, {"include": ["git/*"]},
                            {"include": ["*/git_*"], "exclude": ["*/fetch"]}])


@settings(deadline=None)
@given(tools=_tools, items=_items, options=_filters, section=_sections,
       kind=st.sampled_from(["prompts", "resources"]))
def test_fast_equals_reference(tools, items, options, section, kind):
    if kind == "resources":
        items = [{**item, "uri": item.get("uri", item["name"])} for item in items]
    fast = Policy(filter=toolfilter_fast.compile(**options),
                  **{kind: toolfilter_fast.compile(**section)})
    ref = reference.Policy(filter=reference.compile(**options),
                           **{kind: reference.compile(**section)})
    got = getattr(fast, f"select_{kind}")(items, tools)
    want = getattr(ref, f"select_{kind}")(items, tools)
    assert stages(got, len(items)) == stages(want, len(items))
    assert [id(item) for item in got.tools] == [id(item) for item in want.tools]
    assert (got.cache_scope, got.stages) == (want.cache_scope, want.stages)
