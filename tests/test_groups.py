"""One test per line of spec/tool_groups.md (and the seed's example), run on both
implementations, then the API around it: tools with an origin, configuration
files, round trips, errors."""

from __future__ import annotations

import json
import pickle
import re
import sys

import pytest

import toolfilter_fast
from toolfilter_fast import (
    GroupConfigError,
    GroupConfigWarning,
    GroupFilter,
    GroupMode,
    Tool,
    ToolFilterGroup,
)
from toolfilter_fast import reference as ref
from toolfilter_fast.groups import group_glob_match

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

SEED_TOML = """\
[[runtime_profiles.default.tool_filter_groups]]
mode = "always"
tools = ["filesystem__*"]
keywords = []

[[runtime_profiles.default.tool_filter_groups]]
mode = "dynamic"
tools = ["browser__*"]
keywords = ["browse", "website", "url", "search"]
"""

NAMES = [
    "filesystem__read_file", "browser__open", "shell", "github__create_issue",
    "notes__search", "filesystem__write_file",
]
MCP = {"filesystem__read_file", "browser__open", "github__create_issue", "filesystem__write_file"}


def gf(impl, *groups):
    return impl.GroupFilter([impl.ToolFilterGroup(*g) for g in groups])


def visible(impl, groups, names, message, mcp=None):
    mcp = set(names) if mcp is None else mcp
    return gf(impl, *groups).visible_names(names, message, mcp)


# --- The seed's example ------------------------------------------------------------


def test_seed_example(impl):
    f = impl.GroupFilter.from_toml(SEED_TOML)
    assert f.groups == (
        impl.ToolFilterGroup("always", ["filesystem__*"], []),
        impl.ToolFilterGroup("dynamic", ["browser__*"], ["browse", "website", "url", "search"]),
    )
    assert f.visible_names(NAMES, "read my notes", MCP) == [
        "filesystem__read_file", "shell", "notes__search", "filesystem__write_file",
    ]
    assert f.visible_names(NAMES, "Search the website", MCP) == [
        "filesystem__read_file", "browser__open", "shell", "notes__search",
        "filesystem__write_file",
    ]
    assert f.excluded_names(NAMES, "read my notes", MCP) == ["browser__open", "github__create_issue"]
    assert f.preactivate(NAMES) == ["filesystem__read_file", "filesystem__write_file"]


# --- Model -------------------------------------------------------------------------------


def test_flat_name_of_a_tool_is_server_double_underscore_tool(impl):
    f = gf(impl, ("always", ["filesystem__read_file"]))
    tools = [Tool("filesystem", "read_file"), Tool("filesystem", "write_file")]
    assert f.visible_tools(tools, "") == [tools[0]]


def test_group_defaults(impl):
    group = impl.ToolFilterGroup()
    assert (group.mode, group.tools, group.keywords) == (GroupMode.DYNAMIC, (), ())
    assert impl.ToolFilterGroup.from_dict({}) == group


def test_origin_not_name_shape_skill_tools_pass(impl):
    # A skill tool has the MCP shape {skill}__{tool} but is not MCP-origin.
    f = gf(impl, ("always", ["filesystem__*"]))
    names = ["deploy__run", "filesystem__read_file", "github__x"]
    assert f.visible_names(names, "", {"filesystem__read_file", "github__x"}) == [
        "deploy__run", "filesystem__read_file",
    ]
    tools = [
        {"name": "deploy__run", "origin": "skill"},
        {"name": "github__x", "origin": "mcp"},
        {"name": "shell", "origin": "builtin"},
    ]
    assert f.visible_tools(tools, "") == [tools[0], tools[2]]


# --- Which MCP tools are visible for a turn --------------------------------------------


def test_rule1_no_groups_every_tool_visible(impl):
    f = impl.GroupFilter([])
    assert f.visible_names(NAMES, "anything", set(NAMES)) == NAMES
    assert f.excluded_names(NAMES, "anything", set(NAMES)) == []
    assert f.preactivate(NAMES) == []


def test_rule2_non_mcp_tool_visible(impl):
    assert visible(impl, [("always", ["x"])], ["shell", "x", "y"], "", mcp={"x", "y"}) == [
        "shell", "x",
    ]


@pytest.mark.parametrize(
    "mode, keywords, message, expected",
    [
        ("always", [], "", True),
        ("always", ["zzz"], "no keyword here", True),   # keywords ignored when always
        ("dynamic", ["browse"], "please browse", True),
        ("dynamic", ["browse"], "please read", False),
        ("dynamic", ["a", "browse"], "browse", True),    # any one keyword
    ],
)
def test_rule3_admitted_by_a_live_group(impl, mode, keywords, message, expected):
    assert (visible(impl, [(mode, ["b__*"], keywords)], ["b__x"], message) == ["b__x"]) is expected


def test_rule3_pattern_must_match_too(impl):
    assert visible(impl, [("always", ["b__*"])], ["c__x"], "") == []


def test_rule3_groups_are_ored_and_order_does_not_matter(impl):
    groups = [("dynamic", ["a__*"], ["alpha"]), ("dynamic", ["b__*"], ["beta"]), ("always", ["c"])]
    names = ["a__1", "b__1", "c", "d"]
    for order in (groups, groups[::-1], groups[1:] + groups[:1]):
        assert visible(impl, order, names, "alpha beta") == ["a__1", "b__1", "c"]
        assert visible(impl, order, names, "beta") == ["b__1", "c"]


def test_rule4_unadmitted_mcp_tool_hidden(impl):
    f = gf(impl, ("dynamic", ["b__*"], ["browse"]))
    assert f.visible_names(["b__x", "z__y"], "hello", {"b__x", "z__y"}) == []
    assert f.excluded_names(["b__x", "z__y"], "hello", {"b__x", "z__y"}) == ["b__x", "z__y"]


def test_rule4_dynamic_without_keywords_never_activates(impl):
    f = gf(impl, ("dynamic", ["*"], []))
    assert f.visible_names(["a__b"], "every word in the dictionary", {"a__b"}) == []
    assert f.active_groups("anything") == []


def test_rule4_empty_keyword_always_activates(impl):
    f = gf(impl, ("dynamic", ["*"], [""]))
    assert f.visible_names(["a__b"], "", {"a__b"}) == ["a__b"]
    assert f.active_groups("") == [0]


def test_rule5_output_keeps_input_order_and_duplicates(impl):
    names = ["z__1", "shell", "a__1", "z__1", "m__1"]
    assert visible(impl, [("always", ["*__1"])], names, "", mcp={"z__1", "a__1", "m__1"}) == names
    f = gf(impl, ("always", ["a__*"]))
    assert f.excluded_names(names, "", {"z__1", "a__1", "m__1"}) == ["z__1", "z__1", "m__1"]


# --- Glob (single *) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, name, expected",
    [
        ("filesystem__read_file", "filesystem__read_file", True),   # no '*': exact
        ("filesystem__read_file", "Filesystem__read_file", False),  # case-sensitive
        ("filesystem__read", "filesystem__read_file", False),       # whole name
        ("filesystem__*", "filesystem__read_file", True),           # prefix*
        ("filesystem__*", "filesystem__", True),
        ("filesystem__*", "xfilesystem__read", False),
        ("*__read_file", "filesystem__read_file", True),            # *suffix
        ("*__read_file", "filesystem__read_file_v2", False),
        ("fs__*_file", "fs__read_file", True),                      # prefix*suffix
        ("ab*ba", "aba", False),                                    # never overlapping
        ("ab*ba", "abba", True),
        ("a*b*", "axb*", True),                                     # later '*' is literal
        ("a*b*", "axbc", False),
        ("a*b*", "ab*", True),
        ("**", "x*", True),
        ("**", "x", False),
        ("*", "anything", True),                                    # '*' alone: everything
        ("*", "", True),                                            # the empty name too
        ("a?c", "abc", False),                                      # '?' literal
        ("a?c", "a?c", True),
        ("[ab]*", "a", False),                                      # brackets literal
        ("[ab]*", "[ab]x", True),
        ("a\\*", "a\\x", True),                                     # backslash literal
        ("a\\*", "ax", False),
        ("", "", True),
        ("", "a", False),
        ("é*", "épée", True),
        ("\ud800*", "\ufffdx", False),                              # lossless
    ],
)
def test_glob(impl, pattern, name, expected):
    glob = group_glob_match if impl is toolfilter_fast else ref.group_glob_match
    assert glob(pattern, name) is expected
    assert visible(impl, [("always", [pattern])], [name], "") == ([name] if expected else [])


# --- Keywords ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "keyword, message, expected",
    [
        ("url", "curl https://x", True),        # substring, no word boundaries
        ("Browse", "BROWSE now", True),         # case-insensitive both sides
        ("browse", "BrOwSe", True),
        (" url ", "curl x", False),             # keywords are not trimmed
        (" url ", "a url here", True),
        ("Über", "über alles", True),           # per-character Unicode lower-case
        ("über", "ÜBER", True),
        ("σ", "ΑΣ", True),                      # Σ lower-cases to σ, never final ς
        ("ς", "ΑΣ", False),
        ("k", "\u212a", True),                  # Kelvin sign lower-cases to k
        ("i\u0307", "İ", True),                 # İ lower-cases to i + combining dot
        ("ß", "SS", False),                     # lower-case, not case folding
        ("web", "", False),
    ],
)
def test_keywords(impl, keyword, message, expected):
    f = gf(impl, ("dynamic", ["w__*"], [keyword]))
    assert (f.active_groups(message) == [0]) is expected
    assert (f.visible_names(["w__x"], message, {"w__x"}) == ["w__x"]) is expected


def test_keywords_overlapping_all_found(impl):
    f = gf(impl, ("dynamic", ["a"], ["curl"]), ("dynamic", ["b"], ["url"]), ("dynamic", ["c"], ["rl"]))
    assert f.active_groups("curl") == [0, 1, 2]


def test_only_the_current_message_is_scanned(impl):
    f = gf(impl, ("dynamic", ["b__*"], ["browse"]))
    assert f.visible_names(["b__x"], "browse", {"b__x"}) == ["b__x"]
    assert f.visible_names(["b__x"], "and now?", {"b__x"}) == []   # nothing carried over


# --- Deferred loading ----------------------------------------------------------------------


def test_preactivate_always_groups_input_order_no_duplicates(impl):
    f = gf(impl, ("always", ["fs__*", "gh__issue"]), ("always", ["fs__read"]))
    names = ["gh__pr", "fs__write", "gh__issue", "fs__read", "fs__write", "x"]
    assert f.preactivate(names) == ["fs__write", "gh__issue", "fs__read"]


def test_dynamic_groups_never_preactivate(impl):
    f = gf(impl, ("dynamic", ["*"], [""]), ("dynamic", ["*"], ["x"]))
    assert f.preactivate(["a__b"]) == []


def test_preactivate_tools_only_mcp_origin(impl):
    f = gf(impl, ("always", ["*"]))
    tools = [
        Tool("fs", "read"), {"name": "shell", "origin": "builtin"}, Tool("fs", "read"),
        {"name": "gh__x", "origin": "mcp"},
    ]
    assert f.preactivate_tools(tools) == [tools[0], tools[3]]
    assert f.preactivate_tools(tools, mcp_names={"shell"}) == [tools[1]]


# --- Configuration -------------------------------------------------------------------------

RUNTIME_CONFIG = """\
default_provider = "openrouter"
default_temperature = 0.7

[agent]
max_tool_iterations = 10

[[agent.tool_filter_groups]]
mode = "always"
tools = ["legacy__*"]

[mcp]
deferred_loading = true

[runtime_profiles.default]
model = "x"

[[runtime_profiles.default.tool_filter_groups]]
mode = "always"
tools = ["filesystem__*"]

[[runtime_profiles.research.tool_filter_groups]]
tools = ["browser__*"]
keywords = ["search"]

[runtime_profiles.bare]
model = "y"
"""


def test_config_profile_default_and_named(impl, recorded_warnings):
    with recorded_warnings() as caught:
        default = impl.GroupFilter.from_toml(RUNTIME_CONFIG)
    assert default.groups == (impl.ToolFilterGroup("always", ["filesystem__*"]),)
    assert [str(w.message) for w in caught] == [
        "agent.tool_filter_groups ignored: profile 'default' sets its own",
    ]
    with pytest.warns(GroupConfigWarning, match="profile 'research' sets its own"):
        research = impl.GroupFilter.from_toml(RUNTIME_CONFIG, profile="research")
    assert research.groups == (impl.ToolFilterGroup("dynamic", ["browser__*"], ["search"]),)


def test_config_legacy_agent_layout(impl):
    legacy_only = '[[agent.tool_filter_groups]]\nmode = "always"\ntools = ["legacy__*"]\n'
    assert impl.GroupFilter.from_toml(legacy_only).groups == (
        impl.ToolFilterGroup("always", ["legacy__*"]),
    )
    # A profile that sets no groups of its own falls back to the legacy ones.
    bare = impl.GroupFilter.from_toml(RUNTIME_CONFIG, profile="bare")
    assert bare.groups == (impl.ToolFilterGroup("always", ["legacy__*"]),)


def test_config_without_groups_is_no_groups(impl):
    f = impl.GroupFilter.from_toml('default_model = "m"\n[agent]\nparallel_tools = true\n')
    assert len(f) == 0
    assert f.visible_names(["a__b"], "", {"a__b"}) == ["a__b"]


def test_config_unknown_profile_is_an_error(impl):
    with pytest.raises(GroupConfigError, match=r"no runtime profile 'resarch'.*'research'") as e:
        impl.GroupFilter.from_toml(RUNTIME_CONFIG, profile="resarch")
    assert e.value.profile == "resarch"


def test_config_unknown_keys_warned_and_ignored(impl):
    text = (
        '[[runtime_profiles.p.tool_filter_groups]]\nmode = "always"\ntools = ["a"]\n'
        'name = "fs"\npriority = 3\n'
    )
    with pytest.warns(GroupConfigWarning, match=r"tool_filter_groups\[0\].*'name', 'priority'") as w:
        f = impl.GroupFilter.from_toml(text, profile="p")
    assert f.groups == (impl.ToolFilterGroup("always", ["a"]),)
    assert w[0].filename == __file__   # points at the caller, not into the package


@pytest.mark.parametrize(
    "group, field, message",
    [
        ('mode = "Always"', "mode", r"unknown mode 'Always' \(allowed: 'always', 'dynamic'"),
        ('mode = "ALWAYS"', "mode", r"unknown mode 'ALWAYS'"),
        ('mode = " always"', "mode", r"unknown mode ' always'"),
        ("mode = 1", "mode", r"expected 'always', 'dynamic', got int 1"),
        ('tools = "fs__*"', "tools", r"expected a list of strings, got str 'fs__\*'"),
        ('tools = ["a", 1]', "tools", r"^[^:]*\.tools\[1\]: expected a string, got int 1"),
        ("keywords = [true]", "keywords", r"\.keywords\[0\]: expected a string, got bool True"),
        ("keywords = {a = 1}", "keywords", r"expected a list of strings, got dict"),
    ],
)
def test_config_errors_name_profile_index_and_field(impl, group, field, message):
    text = (
        '[[runtime_profiles.prod.tool_filter_groups]]\nmode = "always"\n\n'
        f"[[runtime_profiles.prod.tool_filter_groups]]\n{group}\n"
    )
    with pytest.raises(GroupConfigError, match=r"runtime_profiles\.prod\.tool_filter_groups\[1\]\."
                       + field) as e:
        impl.GroupFilter.from_toml(text, profile="prod")
    assert re.search(message, str(e.value))
    assert (e.value.profile, e.value.index, e.value.field) == ("prod", 1, field)
    assert isinstance(e.value, ValueError)


def test_config_legacy_errors_name_the_profile(impl):
    with pytest.raises(GroupConfigError, match=r"agent\.tool_filter_groups\[0\]\.mode "
                       r"\(legacy, read for profile 'default'\)") as e:
        impl.GroupFilter.from_toml('[[agent.tool_filter_groups]]\nmode = "Dynamic"\n')
    assert (e.value.profile, e.value.index, e.value.field) == ("default", 0, "mode")


@pytest.mark.parametrize(
    "text, message",
    [
        ("runtime_profiles = 3", r"runtime_profiles: expected a table"),
        ("[runtime_profiles]\ndefault = 3", r"runtime_profiles\.default: expected a table"),
        ("[runtime_profiles.default]\ntool_filter_groups = 3",
         r"runtime_profiles\.default\.tool_filter_groups: expected an array of tables"),
        ("[runtime_profiles.default]\ntool_filter_groups = [3]",
         r"tool_filter_groups\[0\]: expected a table"),
    ],
)
def test_config_structure_errors(impl, text, message):
    with pytest.raises(GroupConfigError, match=message):
        impl.GroupFilter.from_toml(text)


def test_config_broken_toml_is_a_value_error(impl):
    with pytest.raises(tomllib.TOMLDecodeError):
        impl.GroupFilter.from_toml("[[runtime_profiles.default.tool_filter_groups]\n")


@pytest.mark.filterwarnings("ignore::toolfilter_fast.GroupConfigWarning")
def test_config_from_file(impl, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(RUNTIME_CONFIG, encoding="utf-8")
    assert impl.GroupFilter.from_file(path, profile="research") == impl.GroupFilter.from_toml(
        RUNTIME_CONFIG, profile="research",
    )
    assert impl.GroupFilter.from_file(str(path)).groups[0].tools == ("filesystem__*",)


def test_config_profile_names_needing_quotes(impl):
    f = gf(impl, ("always", ["a"]))
    text = f.to_toml(profile="my profile.v2")
    assert '[[runtime_profiles."my profile.v2".tool_filter_groups]]' in text
    assert impl.GroupFilter.from_toml(text, profile="my profile.v2") == f


def test_json_schema():
    schema = ToolFilterGroup.json_schema()
    assert schema["type"] == "object"
    props = schema["properties"]
    assert props["mode"]["enum"] == ["always", "dynamic"]
    assert props["mode"]["default"] == ToolFilterGroup().mode.value
    for field in ("tools", "keywords"):
        assert props[field]["type"] == "array"
        assert props[field]["items"] == {"type": "string"}
        assert props[field]["default"] == list(getattr(ToolFilterGroup(), field))
    assert set(props) == set(ToolFilterGroup().to_dict())
    assert "required" not in schema   # every field has a default
    schema["properties"]["mode"]["enum"].append("x")
    assert ToolFilterGroup.json_schema()["properties"]["mode"]["enum"] == ["always", "dynamic"]
    json.dumps(schema)   # plain JSON data


ROUND_TRIP = [
    ToolFilterGroup(),
    ToolFilterGroup("always", ["filesystem__*"], []),
    ToolFilterGroup("dynamic", ["a*b*", "", "*"], ["", " url ", "Über"]),
    ToolFilterGroup("dynamic", ['q"uote\\back\nline\ttab\x00nul\x7f\x1f', "é😀"], ['"', "\\u0041"]),
]


@pytest.mark.parametrize("group", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_round_trips(group):
    assert ToolFilterGroup.from_dict(group.to_dict()) == group
    assert ToolFilterGroup.from_json(group.to_json()) == group
    assert ToolFilterGroup.from_toml(group.to_toml()) == group
    assert tomllib.loads(group.to_toml()) == group.to_dict()   # a standard TOML reader agrees
    assert json.loads(group.to_json()) == group.to_dict()
    assert eval(repr(group), {"ToolFilterGroup": ToolFilterGroup}) == group
    assert pickle.loads(pickle.dumps(group)) == group


def test_filter_round_trips(impl):
    f = impl.GroupFilter([impl.ToolFilterGroup(*g.to_dict().values()) for g in ROUND_TRIP])
    assert impl.GroupFilter.from_toml(f.to_toml()) == f
    assert impl.GroupFilter.from_toml(f.to_toml("x"), "x") == f
    empty = impl.GroupFilter([])
    assert impl.GroupFilter.from_toml(empty.to_toml("x"), "x") == empty
    assert pickle.loads(pickle.dumps(f)) == f
    assert eval(repr(f), {"GroupFilter": impl.GroupFilter, "ToolFilterGroup": ToolFilterGroup}) == f


def test_lone_surrogates_json_yes_toml_no():
    group = ToolFilterGroup("always", ["a\ud800"])
    assert ToolFilterGroup.from_json(group.to_json()) == group
    with pytest.raises(ValueError, match="lone surrogate"):
        group.to_toml()


# --- The group object ------------------------------------------------------------------------


def test_group_normalises_and_is_hashable():
    a = ToolFilterGroup("always", ["x"], ["k"])
    b = ToolFilterGroup(GroupMode.ALWAYS, ("x",), ("k",))
    assert a == b and hash(a) == hash(b)
    assert a.tools == ("x",) and a.mode is GroupMode.ALWAYS
    assert str(a.mode) == "always" and f"{a.mode}" == "always" and a.mode == "always"
    with pytest.raises(AttributeError):
        a.mode = GroupMode.DYNAMIC  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"mode": "Always"}, ValueError, r"ToolFilterGroup\.mode: unknown mode 'Always'"),
        ({"mode": None}, TypeError, r"ToolFilterGroup\.mode: expected 'always', 'dynamic'"),
        ({"tools": "fs__*"}, TypeError, r"ToolFilterGroup\.tools: expected a list of strings"),
        ({"tools": ["a", b"b"]}, TypeError, r"ToolFilterGroup\.tools\[1\]: expected a string"),
        ({"keywords": None}, TypeError, r"ToolFilterGroup\.keywords: expected a list"),
    ],
)
def test_group_constructor_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        ToolFilterGroup(**kwargs)


def test_from_dict_and_json_errors():
    with pytest.raises(GroupConfigError, match=r"^mode: unknown mode 'x'"):
        ToolFilterGroup.from_dict({"mode": "x"})
    with pytest.raises(GroupConfigError, match="expected a table"):
        ToolFilterGroup.from_json("[1, 2]")
    with pytest.warns(GroupConfigWarning, match="unknown keys ignored: 'name'"):
        assert ToolFilterGroup.from_dict({"name": "x"}) == ToolFilterGroup()


def test_filter_accepts_dicts_and_names_the_bad_one(impl):
    f = impl.GroupFilter([{"mode": "always", "tools": ["a"]}, ToolFilterGroup()])
    assert f.groups == (ToolFilterGroup("always", ["a"]), ToolFilterGroup())
    with pytest.raises(GroupConfigError, match=r"groups\[1\]\.tools\[0\]: expected a string") as e:
        impl.GroupFilter([{}, {"tools": [3]}])
    assert e.value.index == 1
    for bad in ("always", {"mode": "always"}, ToolFilterGroup(), 3):
        with pytest.raises(TypeError, match="groups must be an iterable of ToolFilterGroup"):
            impl.GroupFilter(bad)


# --- Tools and origins -----------------------------------------------------------------------


def test_tools_with_mcp_names_decide_origin(impl):
    f = gf(impl, ("always", ["fs__*"]))
    tools = [Tool("fs", "read"), Tool("builtin", "shell"), {"name": "gh__x"}]
    # mcp_names decides for every tool; dicts then need no origin.
    assert f.visible_tools(tools, "", mcp_names={"fs__read", "gh__x"}) == tools[:2]
    assert f.excluded_tools(tools, "", mcp_names=["fs__read", "gh__x"]) == [tools[2]]
    # Without mcp_names every Tool is MCP-origin.
    assert f.visible_tools(tools[:2], "") == [tools[0]]


def test_tool_dict_origin_tag(impl):
    f = gf(impl, ("dynamic", ["gh__*"], ["issue"]))
    tools = [
        {"name": "gh__x", "origin": "mcp"}, {"name": "gh__y", "origin": "skill"},
        {"name": "other", "origin": "MCP"},   # tags are exact: only "mcp" is MCP
    ]
    assert f.visible_tools(tools, "hi") == tools[1:]
    assert f.visible_tools(tools, "an issue") == tools
    assert f.excluded_tools(tools, "hi") == [tools[0]]


@pytest.mark.parametrize(
    "tool, error, message",
    [
        ({"name": "x"}, ValueError, r"tools\[0\] \('x'\) has no 'origin'"),
        ({"name": "x", "origin": None}, TypeError, r"tools\[0\]\['origin'\] must be str"),
        ({"origin": "mcp"}, TypeError, r"tools\[0\]\['name'\] must be str, not NoneType"),
        ("fs__read", TypeError, r"tools\[0\]: expected a Tool or a mapping"),
    ],
)
def test_tool_errors(impl, tool, error, message):
    with pytest.raises(error, match=message):
        gf(impl, ("always", ["*"])).visible_tools([tool], "")


# --- Argument checking -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda f: f.visible_names(["a", 1], "", set()), r"names\[1\] must be str, not int"),
        (lambda f: f.visible_names("abc", "", set()), r"names must be an iterable of str"),
        (lambda f: f.visible_names(["a"], None, set()), r"message must be str, not NoneType"),
        (lambda f: f.visible_names(["a"], b"x", set()), r"message must be str, not bytes"),
        (lambda f: f.excluded_names(["a"], "", "a"), r"mcp_names must be a collection"),
        (lambda f: f.visible_names(["a"], "", None), r"mcp_names must be a collection"),
        (lambda f: f.preactivate([None]), r"names\[0\] must be str, not NoneType"),
        (lambda f: f.active_groups(3), r"message must be str, not int"),
        (lambda f: f.visible_tools(Tool("a", "b"), ""), r"tools must be an iterable"),
        (lambda f: type(f).from_toml(b"x"), r"text must be str"),
        (lambda f: type(f).from_toml("", profile=1), r"profile must be str"),
    ],
)
def test_bad_arguments(impl, call, message):
    for f in (gf(impl, ("always", ["a"])), impl.GroupFilter([])):
        with pytest.raises(TypeError, match=message):
            call(f)


def test_iterables_accepted(impl):
    f = gf(impl, ("always", ["a*"]))
    assert f.visible_names(iter(["ab", "b"]), "", iter(["ab", "b"])) == ["ab"]
    assert f.visible_names(("ab", "b"), "", frozenset({"b"})) == ["ab"]
    assert f.preactivate(n for n in ["ab", "ab", "ba"]) == ["ab"]


def test_same_objects_returned(impl):
    name = "".join(["a", "b"])
    assert gf(impl, ("always", ["ab"])).visible_names([name], "", {"ab"})[0] is name


def test_names_hold_any_characters(impl):
    name = "s\ud800__n\udfff*\x00İ"
    f = gf(impl, ("always", ["s\ud800__*"]))
    assert f.visible_names([name, "s\ufffd__x"], "", {name, "s\ufffd__x"}) == [name]


def test_reference_and_fast_are_distinct_classes():
    assert toolfilter_fast.GroupFilter is GroupFilter
    assert ref.GroupFilter is not GroupFilter
    assert ref.ToolFilterGroup is ToolFilterGroup   # the data model is shared
    assert GroupFilter([]) != ref.GroupFilter([])
