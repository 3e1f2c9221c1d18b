"""Filter config files: TOML and JSON, every pattern form, and errors that point at the entry."""

from __future__ import annotations

import json
import re

import pytest

from toolfilter_fast import (
    ConfigError,
    GroupConfigWarning,
    GroupFilter,
    PatternError,
    Tool,
    ToolFilter,
    ToolFilterGroup,
)
from toolfilter_fast.config import load_config, load_file

TOML = """\
[filter]
include = [
    "github/*",
    {server = "db", regex = "^select_"},
    {callable = "toolfilter_fast.cli.demo:on_call"},
]
exclude = [
    "*/delete_*",
    {regex = "^drop_", flags = "i"},
    {callable = "toolfilter_fast.cli.demo:merge_needs_admin"},
]

[[tool_filter_groups]]
mode = "always"
tools = ["filesystem__*"]

[[tool_filter_groups]]
tools = ["browser__*"]
keywords = ["browse", "url"]

[focus_lens]
mode = "focused"
max_tools = 10
session_id = "s1"
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_toml_file_builds_the_filter_and_sections(tmp_path):
    path = write(tmp_path, "filters.toml", TOML)
    f = ToolFilter.from_file(path)
    from toolfilter_fast.cli import demo as _demo

    assert f.include[:1] == ("github/*",)
    server, regex = f.include[1]
    assert (server, regex.pattern, regex.flags & re.IGNORECASE) == ("db", "^select_", 0)
    assert f.include[2] is _demo.on_call
    assert f.exclude[1][0] == "*" and f.exclude[1][1].flags & re.IGNORECASE
    assert f.exclude[2] is _demo.merge_needs_admin
    assert f.visible(Tool("github", "create_issue"), {"role": "user"})
    assert not f.visible(Tool("github", "merge_pr"), {"role": "user"})
    assert f.visible(Tool("github", "merge_pr"), {"role": "admin"})
    assert f.visible(Tool("db", "select_x"))
    assert not f.visible(Tool("db", "DROP-table"))
    assert not f.visible(Tool("pagerduty", "ack"), {})  # on_call raises KeyError: fails closed
    assert f.visible(Tool("pagerduty", "ack"), {"on_call": True})

    config = load_file(path)
    assert config.groups == (
        ToolFilterGroup("always", ["filesystem__*"], []),
        ToolFilterGroup("dynamic", ["browser__*"], ["browse", "url"]),
    )
    assert isinstance(config.group_filter, GroupFilter)
    names = ["filesystem__read", "browser__open", "shell"]
    mcp = {"filesystem__read", "browser__open"}
    assert config.group_filter.visible_names(names, "hello", mcp) == ["filesystem__read", "shell"]
    assert config.group_filter.visible_names(names, "open this URL", mcp) == names
    assert config.focus_lens == {"mode": "focused", "max_tools": 10, "session_id": "s1"}
    assert config.path == str(path)


def test_json_file_equals_toml(tmp_path):
    doc = {
        "include": ["github/*", {"server": "db", "regex": "^select_"}],
        "exclude": ["*/delete_*", {"regex": "^drop_", "flags": "i"}],
    }
    from_json = ToolFilter.from_file(write(tmp_path, "f.json", json.dumps(doc)))
    from_toml = ToolFilter.from_file(write(tmp_path, "f.toml", """\
include = ["github/*", {server = "db", regex = "^select_"}]
exclude = ["*/delete_*", {regex = "^drop_", flags = "i"}]
"""))
    assert repr(from_json) == repr(from_toml)
    assert repr(ToolFilter.from_config(doc)) == repr(from_json)


def test_format_is_sniffed_for_other_names(tmp_path):
    assert ToolFilter.from_file(write(tmp_path, "filters", '{"exclude": ["x"]}')).exclude == ("x",)
    assert ToolFilter.from_file(write(tmp_path, "filters.conf", 'exclude = ["y"]')).exclude == ("y",)


def test_empty_config_shows_everything():
    f = ToolFilter.from_config({})
    assert (f.include, f.exclude) == ((), ())
    assert f.visible(Tool("a", "b"))


def test_a_string_is_always_a_glob():
    # Strings that look like callables or regexes stay literal globs.
    f = ToolFilter.from_config({"include": ["pkg.mod:fn", "^drop_.*$"]})
    assert f.include == ("pkg.mod:fn", "^drop_.*$")
    assert f.visible(Tool("any", "pkg.mod:fn"))
    assert not f.visible(Tool("any", "pkg"))


def test_callable_with_dotted_attribute():
    f = ToolFilter.from_config({"exclude": [{"callable": "toolfilter_fast.reference:Tool.__eq__"}]})
    assert f.exclude[0] is Tool.__eq__


def test_config_error_is_a_pattern_error_and_value_error():
    assert issubclass(ConfigError, PatternError)
    assert issubclass(ConfigError, ValueError)


@pytest.mark.parametrize(("config", "option", "index", "message"), [
    ({"exlude": ["x"]}, "exlude", None, "unknown top-level key"),
    ({"filter": {"incude": []}}, "filter.incude", None, "unknown key"),
    ({"filter": []}, "filter", None, "expected a table, not array"),
    ({"filter": {"include": []}, "exclude": []}, "exclude", None, "not both"),
    ({"include": "github/*"}, "include", None, "expected an array of patterns, not string"),
    ({"include": ["ok", 3]}, "include", 1, "not integer: 3"),
    ({"include": [None]}, "include", 0, "not null"),
    ({"filter": {"exclude": ["ok", "x/"]}}, "filter.exclude", 1, 'empty tool segment: "x/"'),
    ({"exclude": ["a:b/x"]}, "exclude", 0, "server segment contains ':'"),
    ({"exclude": [""]}, "exclude", 0, "empty pattern"),
    ({"exclude": [{"regex": "("}]}, "exclude", 0, "invalid regex"),
    ({"exclude": [{"regex": "a", "server": ""}]}, "exclude", 0, "empty server segment"),
    ({"exclude": [{"regex": "a", "server": "a/b"}]}, "exclude", 0, "server glob contains '/'"),
    ({"exclude": [{"regex": "a", "flags": "iq"}]}, "exclude", 0, "unknown regex flag 'q'"),
    ({"exclude": [{"regex": "a", "flag": "i"}]}, "exclude", 0, "unknown key 'flag'"),
    ({"exclude": [{"regex": 5}]}, "exclude", 0, "'regex' must be a string, not integer"),
    ({"exclude": [{"server": "a"}]}, "exclude", 0, "needs a 'regex', 'callable', 'annotations' or 'cel' key"),
    ({"exclude": [{"regex": "a", "callable": "m:f"}]}, "exclude", 0, "not 'regex' and 'callable'"),
    ({"exclude": [{"callable": "m:f", "x": 1}]}, "exclude", 0, "unknown key 'x'"),
    ({"exclude": [{"callable": "no_colon"}]}, "exclude", 0, "package.module:function"),
    ({"exclude": [{"callable": 3}]}, "exclude", 0, "must be a string"),
    ({"exclude": [{"callable": "no_such_mod_xyz:f"}]}, "exclude", 0, "cannot import module"),
    ({"exclude": [{"callable": "os:no_such_fn"}]}, "exclude", 0, "has no attribute 'no_such_fn'"),
    ({"exclude": [{"callable": "os:sep"}]}, "exclude", 0, "is a str, not a function"),
    ({"exclude": [{"callable": "os.path:exists"}]}, "exclude", 0, "cannot be called as fn(tool, ctx)"),
    ({"exclude": [{"callable": "asyncio:sleep"}]}, "exclude", 0, "coroutine"),
    ({"tool_filter_groups": {}}, "tool_filter_groups", None, "expected an array of tables"),
    ({"tool_filter_groups": ["x"]}, "tool_filter_groups[0]", 0, "expected a table"),
    ({"tool_filter_groups": [{"mode": "Always"}]}, "tool_filter_groups[0].mode", 0,
     "unknown mode 'Always' (allowed: 'always', 'dynamic'; modes are lower-case)"),
    ({"tool_filter_groups": [{}, {"tools": "a"}]}, "tool_filter_groups[1].tools", 1,
     "expected a list of strings"),
    ({"tool_filter_groups": [{"keywords": ["a", 1]}]}, "tool_filter_groups[0].keywords", 0,
     "tool_filter_groups[0].keywords[1]: expected a string, got int 1"),
    ({"focus_lens": []}, "focus_lens", None, "expected a table"),
    ({"focus_lens": {"mode": "zoom"}}, "focus_lens.mode", None, "unknown mode"),
    ({"focus_lens": {"max_tools": -1}}, "focus_lens.max_tools", None, "integer >= 0"),
    ({"focus_lens": {"max_tools": True}}, "focus_lens.max_tools", None, "integer >= 0"),
    ({"focus_lens": {"session_id": "a.b"}}, "focus_lens.session_id", None, "without '.'"),
    ({"focus_lens": {"sesion_id": "a"}}, "focus_lens.sesion_id", None, "unknown key"),
])
def test_errors_name_the_option_index_and_entry(config, option, index, message):
    with pytest.raises(ConfigError) as info:
        ToolFilter.from_config(config)
    err = info.value
    assert message in str(err)
    assert (err.option, err.index, err.path) == (option, index, None)
    where = option if index is None or option.startswith("tool_filter_groups[") \
        else f"{option}[{index}]"
    assert str(err).startswith(f"{where}")


def test_file_errors_name_the_file(tmp_path):
    path = write(tmp_path, "f.toml", 'exclude = ["ok", {regex = "a", flags = "z"}]\n')
    with pytest.raises(ConfigError) as info:
        ToolFilter.from_file(path)
    assert str(info.value) == (
        f'{path}: exclude[1]: unknown regex flag \'z\' (the flags are a, i, m, s, x): '
        '{"regex": "a", "flags": "z"}'
    )
    assert info.value.path == str(path)
    assert info.value.entry == {"regex": "a", "flags": "z"}


@pytest.mark.parametrize(("name", "content", "message"), [
    ("bad.toml", "include = [", "invalid TOML"),
    ("bad.json", '{"include": [}', "invalid JSON"),
    ("list.json", '["x"]', "expected a JSON object at the top, not array"),
    ("latin.toml", b'include = ["\xe9"]', "not UTF-8"),
])
def test_unreadable_files(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        ToolFilter.from_file(path)
    assert str(info.value).startswith(f"{path}: ")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        ToolFilter.from_file(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        ToolFilter.from_file(tmp_path)


def test_unknown_group_keys_warn_but_load(recorded_warnings):
    with recorded_warnings() as caught:
        config = load_config({"tool_filter_groups": [{"tools": ["a__*"], "note": "x"}]})
    assert config.groups[0].tools == ("a__*",)
    assert [(w.category, str(w.message)) for w in caught] == [
        (GroupConfigWarning, "tool_filter_groups[0]: unknown keys ignored: 'note'")]


def test_focus_lens_defaults_apply_through_config_focus():
    config = load_config({"focus_lens": {"mode": "focused", "max_tools": 2, "focused_id": "w"}})
    tools = [{"name": "s.w.click"}, {"name": "s.v.click"}, {"name": "list"}, {"name": "help"}]
    assert [t["name"] for t in config.focus(tools, session_id="s")] == ["s.w.click", "list"]
    # A call's options override the file's defaults.
    assert [t["name"] for t in config.focus(tools, session_id="s", max_tools=15)] == [
        "s.w.click", "list", "help"]
    assert [t["name"] for t in config.focus(tools, mode="all", max_tools=1)] == ["s.w.click"]
    with pytest.raises(ValueError, match="session_id is required"):
        config.focus(tools)


def test_no_groups_filter_nothing():
    config = load_config({})
    assert config.groups == () and len(config.group_filter) == 0
    assert config.group_filter.visible_names(["a__b"], "", {"a__b"}) == ["a__b"]


def test_from_config_subclass():
    class Mine(ToolFilter):
        __slots__ = ()

    assert type(Mine.from_config({"include": ["a"]})) is Mine
