"""One test per rule and example of spec/tool_filter.md, run on both implementations."""

from __future__ import annotations

import asyncio
import re

import pytest

from toolfilter_fast import PatternError, Tool, ToolCatalog, ToolNotFoundError


def vis(impl, tool, include=(), exclude=(), ctx=None):
    return impl.compile(include=list(include), exclude=list(exclude)).visible(tool, ctx)


# --- The target ------------------------------------------------------------------

@pytest.mark.parametrize(
    "pattern, server, name, expected",
    [
        ("a_b/c", "a_b", "c", True),
        ("a_b/c", "a", "b_c", False),          # a structured pair, never a joined string
        ("a/b_c", "a_b", "c", False),
        ("a/b/c", "a", "b/c", True),           # split at the first '/'
        ("a/b/c", "a/b", "c", False),          # a '/' in a server id needs a server glob
        ("*/c", "a/b", "c", True),
        ("a*/c", "a/b", "c", True),
        ("create_issue", "github", "create_issue", True),   # bare == */create_issue
        ("create_issue", "anything:else", "create_issue", True),
        ("*", "any/server", "any/tool:*\x00", True),
        ("*", "s", "", True),
        ("s/a*c", "s", "a/b/c", True),         # '*' crosses '/' inside its segment
        ("create_*", "s", "create_issue", True),
        ("create_*", "s", "xcreate_issue", False),  # anchored at the start
        ("*_issue", "s", "create_issue", True),
        ("*_issue", "s", "create_issue_v2", False),  # anchored at the end
        ("s/a?c", "s", "abc", False),          # '?' is literal
        ("s/a?c", "s", "a?c", True),
        ("s/[ab]", "s", "a", False),           # brackets are literal
        ("s/[ab]", "s", "[ab]", True),
        ("s/{a,b}", "s", "a", False),
        ("s/a\\b", "s", "a\\b", True),         # backslash is literal
        ("s/a.c", "s", "abc", False),          # '.' is literal
        ("a:b", "s", "a:b", True),             # a bare tool pattern may hold ':'
        ("s/nul\x00*", "s", "nul\x00x", True),
    ],
)
def test_include_string_patterns(impl, pattern, server, name, expected):
    assert vis(impl, Tool(server, name), include=[pattern]) is expected


def test_names_hold_any_characters(impl):
    tool = Tool("srv\ud800", "n\udfff/:*\x00İ")
    assert vis(impl, tool, include=["srv\ud800/n\udfff/:*\x00İ"])
    assert not vis(impl, tool, include=["srv\ufffd/*"])  # no lossy replacement


# --- Regex patterns ----------------------------------------------------------------

def test_regex_is_searched_unanchored(impl):
    rx = re.compile("issue")
    assert vis(impl, Tool("github", "create_issue_v2"), include=[("*", rx)])
    assert not vis(impl, Tool("github", "create_pr"), include=[("*", rx)])


def test_regex_server_glob_is_a_segment_glob(impl):
    rx = re.compile(".")
    assert vis(impl, Tool("github", "x"), include=[("git*", rx)])
    assert not vis(impl, Tool("gitlab2", "x"), include=[("git*b", rx)])
    assert not vis(impl, Tool("GitHub", "x"), include=[("github", rx)])  # include is exact


def test_regex_include_raw_name_only(impl):
    rx = re.compile("delete_repo")
    assert not vis(impl, Tool("s", "Delete-Repo"), include=[("*", rx)])


def test_regex_exclude_tries_raw_and_folded_name(impl):
    assert not vis(impl, Tool("s", "Delete-Repo"), exclude=[("*", re.compile("delete_repo"))])
    assert not vis(impl, Tool("s", "Delete-Repo"), exclude=[("*", re.compile("^Delete-"))])
    assert vis(impl, Tool("s", "keep"), exclude=[("*", re.compile("delete"))])


def test_regex_exclude_server_glob_is_loose(impl):
    assert not vis(impl, Tool("git-hub", "x"), exclude=[("GIT.HUB", re.compile("x"))])


def test_regex_entries_of_every_accepted_shape(impl):
    # A plain (str, re.Pattern) tuple, a tuple subclass and a str-subclass
    # server glob are the same pattern; a bad server glob is refused in each.
    from typing import NamedTuple

    class Rx(NamedTuple):
        server_glob: str
        regex: re.Pattern

    class Glob(str):
        pass

    rx = re.compile("^delete")
    tools = [Tool("gh", "delete_repo"), Tool("gh", "read"), Tool("fs", "delete_file")]
    for make in [lambda g: (g, rx), lambda g: Rx(g, rx), lambda g: (Glob(g), rx)]:
        f = impl.compile(include=["*/read*", make("gh")])
        assert [f.visible(t) for t in tools] == [True, True, False]
        for bad in ["", "g:h", "g/h"]:
            with pytest.raises(PatternError) as caught:
                impl.compile(include=["*/read*", make(bad)])
            assert (caught.value.option, caught.value.index) == ("include", 1)


# --- Function patterns ------------------------------------------------------------

def returns(value):
    def fn(tool, ctx):
        return value
    return fn


def raises(tool, ctx):
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    "fn, in_include, in_exclude",
    [
        (returns(True), True, False),
        (returns(False), False, True),
        (raises, False, False),            # raising: not included, and hidden by exclude
        (returns(1), False, False),        # non-bools fail closed
        (returns(None), False, False),
        (returns("yes"), False, False),
        (returns(0), False, False),
    ],
)
def test_function_patterns_fail_closed(impl, fn, in_include, in_exclude):
    tool = Tool("s", "t")
    assert vis(impl, tool, include=[fn]) is in_include
    assert vis(impl, tool, exclude=[fn]) is in_exclude


def test_function_gets_tool_and_ctx(impl):
    seen = []

    def fn(tool, ctx):
        seen.append((tool, ctx))
        return ctx["role"] == "admin"

    tool = Tool("s", "t")
    ctx = {"role": "admin"}
    assert vis(impl, tool, include=[fn], ctx=ctx)
    assert seen == [(tool, ctx)]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_base_exceptions_propagate(impl, exc):
    def fn(tool, ctx):
        raise exc()

    with pytest.raises(exc):
        vis(impl, Tool("s", "t"), exclude=[fn])


@pytest.mark.parametrize(
    "fn",
    [
        lambda tool, ctx=None: True,
        lambda *args: True,
        lambda tool, *rest: True,
        lambda tool, ctx, extra=1: True,
    ],
)
def test_bindable_signatures_accepted(impl, fn):
    assert vis(impl, Tool("s", "t"), include=[fn])


def test_sync_function_returning_a_coroutine_fails_closed(impl):
    async def later():
        return True

    def fn(tool, ctx):
        return later()

    assert not vis(impl, Tool("s", "t"), include=[fn])


# --- Decision ---------------------------------------------------------------------

def test_exclude_always_wins(impl):
    assert not vis(impl, Tool("s", "t"), include=["*"], exclude=["s/t"])
    assert not vis(impl, Tool("s", "t"), include=[returns(True)], exclude=["*"])


def test_empty_include_shows_everything_not_excluded(impl):
    assert vis(impl, Tool("s", "t"))
    assert vis(impl, Tool("s", "t"), exclude=["s/u"])


def test_nonempty_include_is_an_allow_list(impl):
    assert not vis(impl, Tool("s", "t"), include=["s/u"])


@pytest.mark.parametrize(
    "exclude, server, name, hidden",
    [
        ("*/delete_repo", "s", "Delete-Repo", True),   # the spec's example
        ("*/delete_repo", "s", "DELETE.REPO", True),
        ("*/delete_repo", "s", "delete_repo", True),
        ("*/Delete-Repo", "s", "delete.repo", True),   # patterns are folded too
        ("*/delete_repo", "s", "deleterepo", False),
        ("GitHub/*", "github", "x", True),              # both segments match loosely
        ("git_hub/*", "Git.Hub", "x", True),
        ("*/İ", "s", "i\u0307", True),                  # İ lowers to two code points
        ("*/i\u0307", "s", "İ", True),
        ("*/İ", "s", "i", False),
        ("*/ΑΣ*", "s", "ΑΣΑ", True),                    # no final-sigma context rule
        ("*/ΑΣ*", "s", "ασα", True),
        ("*/ΑΣ", "s", "ας", False),                     # ς stays ς, σ stays σ
        ("*/ς", "s", "ς", True),
        ("*/ß", "s", "ß", True),                        # lower-case is not case-folding
        ("*/SS", "s", "ß", False),
        ("*/ß", "s", "ss", False),
        ("*/ß", "s", "ẞ", True),                        # capital sharp s lowers to ß
        ("*/k", "s", "\u212a", True),                   # the Kelvin sign lowers to k
        ("*/K", "s", "k", True),
    ],
)
def test_exclude_matches_loosely(impl, exclude, server, name, hidden):
    assert vis(impl, Tool(server, name), exclude=[exclude]) is (not hidden)


@pytest.mark.parametrize(
    "include, server, name, shown",
    [
        ("github/*", "GitHub", "x", False),   # the spec's example
        ("github/*", "github", "x", True),
        ("*/delete_repo", "s", "Delete-Repo", False),
        ("*/delete_repo", "s", "delete-repo", False),
        ("*/k", "s", "\u212a", False),
        ("*/i\u0307", "s", "İ", False),
    ],
)
def test_include_matches_exactly(impl, include, server, name, shown):
    assert vis(impl, Tool(server, name), include=[include]) is shown


# --- Static and dynamic -------------------------------------------------------------

class Recorder:
    def __init__(self, result):
        self.result = result
        self.calls = 0

    def __call__(self, tool, ctx):
        self.calls += 1
        return self.result


def test_static_visible_never_calls_functions(impl):
    ex, inc = Recorder(True), Recorder(True)
    f = impl.compile(include=[inc], exclude=[ex])
    assert f.static_visible(Tool("s", "t"))  # an exclude function never hides here
    assert (ex.calls, inc.calls) == (0, 0)


def test_static_keeps_what_an_include_function_may_show(impl):
    f = impl.compile(include=["s/a", returns(False)])
    assert f.static_visible(Tool("s", "b"))
    assert not f.visible(Tool("s", "b"))
    assert not impl.compile(include=["s/a"]).static_visible(Tool("s", "b"))


def test_static_applies_string_and_regex_patterns(impl):
    f = impl.compile(include=["s/*"], exclude=[("*", re.compile("^drop"))])
    assert f.static_visible(Tool("s", "keep"))
    assert not f.static_visible(Tool("s", "drop_table"))
    assert not f.static_visible(Tool("other", "keep"))


def test_functions_not_called_when_static_patterns_decide(impl):
    ex, inc = Recorder(False), Recorder(True)
    f = impl.compile(include=["s/*", inc], exclude=["*/gone", ex])
    assert not f.visible(Tool("s", "gone"))
    assert (ex.calls, inc.calls) == (0, 0)       # static exclude decided
    assert f.visible(Tool("s", "t"))
    assert (ex.calls, inc.calls) == (1, 0)       # static include decided
    assert f.visible(Tool("x", "t"))
    assert (ex.calls, inc.calls) == (2, 1)


def test_exclude_functions_stop_at_first_hide(impl):
    first, second = Recorder(True), Recorder(False)
    assert not vis(impl, Tool("s", "t"), exclude=[first, second])
    assert (first.calls, second.calls) == (1, 0)


def test_failing_exclude_function_stops_the_chain(impl):
    later = Recorder(False)
    assert not vis(impl, Tool("s", "t"), exclude=[raises, later])
    assert later.calls == 0


def test_include_functions_stop_at_first_true(impl):
    first, second, third = Recorder(False), Recorder(True), Recorder(True)
    assert vis(impl, Tool("s", "t"), include=[first, second, third])
    assert (first.calls, second.calls, third.calls) == (1, 1, 0)


def test_empty_include_skips_nothing_but_exclude_functions(impl):
    ex = Recorder(False)
    assert vis(impl, Tool("s", "t"), exclude=[ex])
    assert ex.calls == 1


def test_filters_keep_input_order_and_objects(impl):
    tools = [Tool("s", n) for n in ["b", "x", "a", "y", "c"]]
    f = impl.compile(exclude=["*/x", "*/y"])
    assert f.static_filter(tools) == [tools[0], tools[2], tools[4]]
    assert all(a is b for a, b in zip(f.filter(tools, None), [tools[0], tools[2], tools[4]], strict=True))


# --- compile errors -------------------------------------------------------------

async def _coroutine_fn(tool, ctx):
    return True


@pytest.mark.parametrize(
    "options, message",
    [
        ({"includes": []}, "unknown option 'includes'"),
        ({"include": "github/*"}, "include: expected a list or tuple of patterns, got str 'github/*'"),
        ({"exclude": {"a"}}, "exclude: expected a list or tuple"),
        ({"include": None}, "include: expected a list or tuple"),
        ({"include": ["ok", 3]}, "include[1]: unrecognised pattern; expected"),
        ({"include": [None]}, "include[0]: unrecognised pattern"),
        ({"exclude": [b"a/b"]}, "exclude[0]: unrecognised pattern"),
        ({"include": [("a", re.compile("x"), 1)]}, "include[0]: a tuple pattern has 2 elements"),
        ({"include": [("a", "x")]}, "include[0]: the second element must be a compiled re.Pattern"),
        ({"include": [re.compile("x")]}, "include[0]: unrecognised pattern"),
        ({"include": [(1, re.compile("x"))]}, "include[0]: the server glob of a regex pattern must be str"),
        ({"include": [("*", re.compile(b"x"))]}, "include[0]: a bytes regex cannot match tool names"),
        ({"include": [""]}, "include[0]: empty pattern: ''"),
        ({"include": ["a", "/x"]}, "include[1]: empty server segment: '/x'"),
        ({"exclude": ["x/"]}, "exclude[0]: empty tool segment: 'x/'"),
        ({"exclude": [("", re.compile("x"))]}, "exclude[0]: empty server segment: ('', re.compile('x'))"),
        ({"include": ["a:b/x"]}, "include[0]: server segment contains ':': 'a:b/x'"),
        ({"include": [("a:b", re.compile("x"))]}, "include[0]: server segment contains ':'"),
        ({"include": [("a/b", re.compile("x"))]}, "include[0]: server glob contains '/'"),
        ({"include": [lambda tool: True]}, "include[0]: function cannot be called as fn(tool, ctx)"),
        ({"include": [lambda a, b, c: True]}, "include[0]: function cannot be called"),
        ({"exclude": [lambda a, b, *, key: True]}, "exclude[0]: function cannot be called"),
        ({"exclude": [_coroutine_fn]}, "exclude[0]: coroutine functions cannot be patterns"),
        ({"include": [Tool]}, "include[0]: unrecognised pattern"),
    ],
)
def test_compile_errors(impl, options, message):
    with pytest.raises(PatternError) as info:
        impl.compile(**options)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_compile_error_names_option_index_entry(impl):
    with pytest.raises(PatternError) as info:
        impl.compile(include=["ok", "a:b/x"])
    err = info.value
    assert (err.option, err.index, err.entry) == ("include", 1, "a:b/x")


def _keep(tool, ctx):
    return True


class _Text(str):
    pass


@pytest.mark.parametrize(
    "options, where",
    [
        # A string pattern's index is its place among every kind of entry.
        ({"include": [_keep, ("s", re.compile("x")), "ok", "/x"]}, ("include", 3, "/x")),
        ({"exclude": [("s", re.compile("x")), _keep, "x/"]}, ("exclude", 2, "x/")),
        # A str subclass is a string pattern; the entry is the object as written.
        ({"include": [_keep, _Text("a:b/x")]}, ("include", 1, _Text("a:b/x"))),
        # Entries that are no string pattern are judged before any string pattern,
        # include before exclude; then include's strings, then exclude's.
        ({"include": ["/x", 3], "exclude": [None]}, ("include", 1, 3)),
        ({"include": ["/x"], "exclude": ["ok", None]}, ("exclude", 1, None)),
        ({"include": ["ok", "/x"], "exclude": ["x/"]}, ("include", 1, "/x")),
        ({"include": [_keep, "ok"], "exclude": ["ok", _keep, "x/"]}, ("exclude", 2, "x/")),
    ],
)
def test_compile_error_place_among_kinds(impl, options, where):
    with pytest.raises(PatternError) as info:
        impl.compile(**options)
    err = info.value
    assert (err.option, err.index, err.entry) == where
    assert type(err.entry) is type(where[2])


def test_string_places_among_kinds_match(impl):
    f = impl.compile(
        include=[_keep, "a/x", ("b", re.compile("^y$")), _Text("c/*")],
        exclude=[_keep, "a/X-*", ("c", re.compile("^no")), "c/zz"],
    )
    assert f.static_visible(Tool("a", "x"))
    assert not f.static_visible(Tool("a", "x_1"))  # excluded loosely by a/X-*
    assert f.static_visible(Tool("c", "anything"))
    assert not f.static_visible(Tool("c", "ZZ"))
    assert not f.static_visible(Tool("c", "nope"))


def test_coroutine_callable_object_rejected(impl):
    class Checker:
        async def __call__(self, tool, ctx):
            return True

    with pytest.raises(PatternError, match="coroutine"):
        impl.compile(include=[Checker()])
    assert asyncio.iscoroutinefunction(Checker.__call__)


def test_compile_accepts_tuples_and_defaults(impl):
    assert impl.compile().visible(Tool("s", "t"))
    assert impl.compile(include=("s/*",), exclude=()).visible(Tool("s", "t"))
    assert impl.ToolFilter.compile(include=["s/*"]).visible(Tool("s", "t"))


# --- Tool, catalog and not_found ---------------------------------------------------

def test_tool_is_immutable_and_typed():
    tool = Tool("s", "t", "desc", {"type": "object"})
    with pytest.raises(AttributeError):
        tool.name = "u"  # type: ignore[misc]
    with pytest.raises(TypeError, match="server_id must be str"):
        Tool(1, "t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name must be str"):
        Tool("s", None)  # type: ignore[arg-type]
    assert {tool} == {Tool("s", "t", "desc", {"type": "object"})}


def test_catalog_hides_on_every_path(impl):
    f = impl.compile(exclude=["*/delete_*", lambda t, ctx: t.name == "admin" and ctx != "root"])
    catalog = ToolCatalog(f)
    kept = catalog.refresh("gh", [Tool("gh", "read"), Tool("gh", "Delete-Repo"), Tool("gh", "admin")])
    assert [t.name for t in kept] == ["read", "admin"]   # static filtering at refresh
    assert [t.name for t in catalog.list_tools("user")] == ["read"]
    assert [t.name for t in catalog.list_tools("root")] == ["read", "admin"]
    assert catalog.resolve("gh", "read").name == "read"
    assert catalog.resolve("gh", "admin", "root").name == "admin"

    def failure(server_id, name, ctx=None):
        with pytest.raises(ToolNotFoundError) as info:
            catalog.resolve(server_id, name, ctx)
        assert info.value.kind == "not_found"
        return type(info.value), str(info.value).replace(repr(name), "NAME")

    hidden_static = failure("gh", "Delete-Repo")
    hidden_dynamic = failure("gh", "admin", "user")
    missing = failure("gh", "never_existed")
    missing_server = failure("nope", "read")
    assert hidden_static == hidden_dynamic == missing
    assert missing_server[0] is ToolNotFoundError


def test_catalog_refresh_replaces_and_accepts_mcp_dicts(impl):
    catalog = ToolCatalog(impl.compile())
    catalog.refresh("s", [{"name": "a", "description": "A", "inputSchema": {"type": "object"}}])
    assert catalog.resolve("s", "a").description == "A"
    catalog.refresh("s", [Tool("s", "b"), Tool("s", "b", "second copy")])
    assert [(t.name, t.description) for t in catalog.list_tools()] == [("b", None)]
    with pytest.raises(ToolNotFoundError):
        catalog.resolve("s", "a")
    with pytest.raises(ValueError, match="belongs to server 'other'"):
        catalog.refresh("s", [Tool("other", "x")])
    catalog.remove("s")
    assert catalog.list_tools() == []


def test_catalog_rejects_non_str_lookups(impl):
    catalog = ToolCatalog(impl.compile())
    with pytest.raises(TypeError, match="name must be str"):
        catalog.resolve("s", 3)  # type: ignore[arg-type]


def test_tool_from_mcp_reads_both_sdk_generations():
    from types import SimpleNamespace

    class Annotations:  # a pydantic-like model
        def model_dump(self, by_alias, exclude_none):
            assert by_alias and exclude_none
            return {"destructiveHint": True}

    v1 = SimpleNamespace(name="a", description="d", inputSchema={"type": "object"}, annotations=None)
    v2 = SimpleNamespace(name="a", description="d", input_schema={"type": "object"},
                         annotations=Annotations())
    assert Tool.from_mcp("s", v1) == Tool("s", "a", "d", {"type": "object"})
    assert Tool.from_mcp("s", v2).annotations == {"destructiveHint": True}
    assert Tool.from_mcp("s", {"name": "a", "inputSchema": {}}).input_schema == {}
    with pytest.raises(TypeError, match="needs a 'name'"):
        Tool.from_mcp("s", {"description": "x"})
    with pytest.raises(TypeError, match="annotations must be a mapping"):
        Tool.from_mcp("s", {"name": "a", "annotations": 3})
