"""Annotation patterns and CEL expression patterns: the rules by example, the
errors, config entries, and Hypothesis comparing the fast path (the core's bit
tables and the ``cel`` crate) with the reference (plain Python and its own
CEL evaluator)
on random tools, random annotations and random expressions of a small grammar.
"""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import Annotations, Cel, ConfigError, PatternError, Tool, ToolFilter, reference
from toolfilter_fast._tool import HINTS

# --- the effective hints, by example ------------------------------------------------

T, F = True, False


@pytest.mark.parametrize(
    ("annotations", "pattern", "server", "expected"),
    [
        ({"readOnlyHint": T}, Annotations(readOnlyHint=T), "github", T),
        ({}, Annotations(readOnlyHint=F), "github", T),  # missing: the default, false
        ({"readOnlyHint": 1}, Annotations(readOnlyHint=F), "github", T),  # not a bool: missing
        ({"readOnlyHint": "true"}, Annotations(readOnlyHint=T), "github", F),
        (None, Annotations(destructiveHint=T), "github", T),  # destructive by default
        ({"readOnlyHint": T, "destructiveHint": T}, Annotations(destructiveHint=T), "github", F),
        ({"readOnlyHint": T, "idempotentHint": F}, Annotations(idempotentHint=T), "github", T),
        ({"openWorldHint": F}, Annotations(openWorldHint=F), "github", T),
        ({"openWorldHint": F}, Annotations(openWorldHint=F, trusted=["fs"]), "github", F),
        ({"readOnlyHint": T}, Annotations(readOnlyHint=T, trusted=["git*"]), "github", T),
        ({"readOnlyHint": T}, Annotations(readOnlyHint=T, trusted=["github"]), "GitHub", F),
        ({"readOnlyHint": T, "destructiveHint": F}, Annotations(destructiveHint=T, trusted=[]), "s", T),
        ({"readOnlyHint": F, "destructiveHint": F}, Annotations(readOnlyHint=F, destructiveHint=F), "s", T),
        ({"readOnlyHint": F}, Annotations(readOnlyHint=F, destructiveHint=F), "s", F),
    ],
)
def test_effective_hints(impl, annotations, pattern, server, expected):
    tool = Tool(server, "t", annotations=annotations)
    assert impl.compile(include=[pattern]).visible(tool) is expected
    assert impl.compile(exclude=[pattern]).visible(tool) is not expected
    assert impl.compile(include=[pattern]).static_mask([tool]) == [expected]


def test_the_github_policy_that_globs_cannot_say(impl):
    # Read-only for users, never destructive: globs let mark_all_notifications_read
    # through and miss destructive tools with innocent names.
    tools = [
        Tool("github", "get_issue", annotations={"readOnlyHint": True}),
        Tool("github", "mark_all_notifications_read", annotations={"readOnlyHint": False}),
        Tool("github", "merge_pull_request", annotations={"destructiveHint": True}),
        Tool("github", "fork_repository", annotations={"readOnlyHint": False, "destructiveHint": False}),
        Tool("github", "search_code"),  # no hints at all: neither read-only nor safe
    ]
    f = impl.compile(include=[Annotations(readOnlyHint=True)], exclude=[Annotations(destructiveHint=True)])
    assert [t.name for t in f.filter(tools)] == ["get_issue"]
    # Without a destructiveHint, a tool that is not read-only is destructive.
    g = impl.compile(exclude=[Annotations(destructiveHint=True)])
    assert [t.name for t in g.filter(tools)] == ["get_issue", "fork_repository"]


def test_hints_are_read_when_the_tool_is_made():
    given = {"readOnlyHint": True}
    tool = Tool("s", "t", annotations=given)
    given["readOnlyHint"] = False
    assert tool.annotations == {"readOnlyHint": True}
    assert toolfilter_fast.compile(include=[Annotations(readOnlyHint=True)]).visible(tool)


class DuckTool:
    def __init__(self, server_id, name, annotations):
        self.server_id, self.name, self.annotations = server_id, name, annotations


class HintsObject:
    """Annotations as an object (an mcp.types.ToolAnnotations has attributes)."""

    readOnlyHint = True
    destructiveHint = None


class SubTool(Tool):
    __slots__ = ()


@pytest.mark.parametrize("threads", [1, 2])
def test_every_kind_of_tool_in_one_batch(impl, threads):
    f = impl.compile(include=[Annotations(readOnlyHint=True)])
    items = [
        Tool("s", "a", annotations={"readOnlyHint": True}),
        DuckTool("s", "b", {"readOnlyHint": True}),
        DuckTool("s", "c", HintsObject()),
        SubTool("s", "d", annotations={"readOnlyHint": True}),
        DuckTool("s", "e", None),
        Tool("s", "f"),
    ] * 4000
    want = [True, True, True, True, False, False] * 4000
    assert f.static_mask(items, threads=threads) == want
    assert f.mask(items, {"u": 1}, threads=threads) == want


def test_pairs_and_columns_have_no_hints(impl):
    f = impl.compile(exclude=[Annotations(destructiveHint=True)])
    assert f.static_mask_pairs([("s", "a")]) == [False]  # destructive by default
    assert f.static_mask_columns(["s"], ["a"]) == [False]


# --- CEL -------------------------------------------------------------------------


def test_cel_patterns_static_and_dynamic(impl):
    tools = [
        Tool("github", "admin_reset", "Resets", annotations={"readOnlyHint": False}, title="Reset"),
        Tool("github", "get_issue", "Reads an issue", annotations={"readOnlyHint": True},
             meta={"owner": "team-a"}),
    ]
    static = impl.compile(exclude=[Cel('tool.name.startsWith("admin_")')])
    assert [t.name for t in static.static_filter(tools)] == ["get_issue"]
    dynamic = impl.compile(exclude=[Cel('tool.name.startsWith("admin_") && ctx.role != "admin"')])
    assert dynamic.static_mask(tools) == [True, True]  # dynamic: not applied statically
    assert dynamic.mask(tools, {"role": "admin"}) == [True, True]
    assert dynamic.mask(tools, {"role": "user"}) == [False, True]
    # ctx missing: ctx.role is an error, and an exclude fails closed.
    assert dynamic.mask(tools, None) == [False, True]
    fields = impl.compile(include=[Cel('tool.meta.owner == "team-a" || tool.title == "nope"')])
    assert fields.static_mask(tools) == [False, True]  # tool.meta is null for the first: error
    absorbed = impl.compile(include=[Cel('tool.title == "Reset" || tool.meta.owner == "team-a"')])
    assert absorbed.static_mask(tools) == [True, True]  # CEL's `true || error` is true
    by_meta = impl.compile(include=[Cel('has(tool.meta.owner) || tool.title == "Reset"')])
    assert by_meta.static_mask(tools) == [True, True]


@pytest.mark.parametrize(
    ("source", "tool"),
    [
        ("tool.name", Tool("s", "x")),  # not a bool
        ("tool.nothing == 1", Tool("s", "x")),  # an error
        ('tool.name == "x"', Tool("s", "x\ud800")),  # a lone surrogate has no CEL value
        ("ctx.role == 'a'", Tool("s", "x")),  # ctx is null
        ("tool.meta.k == 1", Tool("s", "x", meta={"k": object()})),  # no CEL value
    ],
)
def test_cel_without_a_verdict_fails_closed(impl, source, tool):
    assert not impl.compile(include=[Cel(source)]).visible(tool)
    assert not impl.compile(exclude=[Cel(source)]).visible(tool)
    assert impl.compile(exclude=[Cel(source)]).visible(Tool("s", "y"), {"x": 1}) in (True, False)


def test_cel_errors_name_option_index_and_expression(impl):
    for bad in ["tool.name ==", "(", "tool.name.startsWith('a'"]:
        with pytest.raises(PatternError) as raised:
            impl.compile(include=["a/b"], exclude=["x", Cel(bad)])
        err = raised.value
        assert (err.option, err.index, err.entry) == ("exclude", 1, Cel(bad))
        assert str(err).startswith("exclude[1]: invalid CEL expression (")
        assert str(err).endswith(f"): {Cel(bad)!r}")


def test_hostile_expressions_are_refused_by_the_fast_path():
    for bad in ["(" * 5000 + "true" + ")" * 5000, " + ".join(["1"] * 3000) + " > 0", "a" * 200_000]:
        with pytest.raises(PatternError, match=r"include\[0\]: invalid CEL expression"):
            toolfilter_fast.compile(include=[Cel(bad)])


def test_entries_check_their_arguments():
    with pytest.raises(ValueError, match="at least one hint"):
        Annotations()
    with pytest.raises(ValueError, match="unknown hint 'readonlyHint'"):
        Annotations(readonlyHint=True)
    with pytest.raises(TypeError, match="readOnlyHint must be True or False, not int"):
        Annotations(readOnlyHint=1)
    with pytest.raises(TypeError, match="trusted must be a list"):
        Annotations(readOnlyHint=True, trusted="github")
    with pytest.raises(ValueError, match="is not a server glob"):
        Annotations(readOnlyHint=True, trusted=["a/b"])
    with pytest.raises(TypeError, match="the expression must be str"):
        Cel(b"tool.name")
    assert Annotations(readOnlyHint=True) == Annotations(readOnlyHint=True, trusted=("*",))
    assert hash(Cel("x")) == hash(Cel("x"))
    assert repr(Annotations(destructiveHint=False, readOnlyHint=True)) == (
        "Annotations(readOnlyHint=True, destructiveHint=False, trusted=['*'])")


def test_filters_with_entries_pickle(impl):
    f = impl.compile(include=[Annotations(readOnlyHint=True, trusted=["g*"])],
                     exclude=[Cel('tool.name == "x"', trusted=["a"])])
    back = pickle.loads(pickle.dumps(f))
    assert back.include == f.include and back.exclude == f.exclude
    assert back.visible(Tool("github", "y", annotations={"readOnlyHint": True}))


def test_config_entries():
    f = ToolFilter.from_config({
        "filter": {
            "include": [{"annotations": {"readOnlyHint": True}, "trusted": ["github"]}],
            "exclude": [{"cel": 'tool.name.startsWith("drop")'}],
        },
    })
    assert f.include == (Annotations(readOnlyHint=True, trusted=["github"]),)
    assert f.exclude == (Cel('tool.name.startsWith("drop")'),)
    for bad, message in [
        ({"annotations": {"readonlyHint": True}}, r"filter\.include\[0\]: unknown hint 'annotations\.readonlyHint'"),
        ({"annotations": {"readOnlyHint": "yes"}}, r"'annotations\.readOnlyHint' must be true or false, not string"),
        ({"annotations": {}}, r"'annotations' must be a table of hints"),
        ({"cel": 5}, r"'cel' must be a string, not integer"),
        ({"cel": "x", "regex": "y"}, r"has one of .*not 'regex' and 'cel'"),
        ({"cel": "x", "extra": 1}, r"unknown key 'extra' in a cel pattern"),
        ({"annotations": {"readOnlyHint": True}, "trusted": "github"}, r"'trusted' must be an array"),
        ({"annotations": {"readOnlyHint": True}, "trusted": [""]}, r"'trusted' holds \"\""),
        ({"cel": "tool.name =="}, r"filter\.include\[0\]: invalid CEL expression"),
    ]:
        with pytest.raises(ConfigError, match=message):
            ToolFilter.from_config({"filter": {"include": [bad]}})


def test_explain_shows_effective_hints_and_trust():
    f = toolfilter_fast.compile(exclude=[Annotations(destructiveHint=True, trusted=["github"])])
    decision = f.explain(Tool("evil", "get", annotations={"readOnlyHint": True}))
    assert not decision.visible and decision.trusted is False
    assert decision.hints == {"readOnlyHint": True}
    assert decision.effective_hints == {"readOnlyHint": False, "destructiveHint": True,
                                        "idempotentHint": False, "openWorldHint": True}
    assert "not trusted" in decision.reason
    trusted = f.explain(Tool("github", "get", annotations={"readOnlyHint": True}))
    assert trusted.visible and trusted.hints == {"readOnlyHint": True}
    g = toolfilter_fast.compile(exclude=[Cel("tool.nothing")])
    failed = g.explain(Tool("s", "x"))
    assert not failed.visible and failed.matched_on == "failed" and "fails closed" in failed.reason


# --- Hypothesis: fast equals reference -----------------------------------------------

_values = st.sampled_from([True, False, None, 1, 0, "true"])
_annotations = st.none() | st.dictionaries(
    st.sampled_from([*HINTS, "title"]), _values, max_size=5)
_servers = st.sampled_from(["github", "fs", "evil", "GitHub", "x-y", "fs2"])
_names = st.sampled_from(["get_issue", "delete_repo", "Drop-Table", "list", "admin_x", "İx", "x\ud800", "ΣΑΣ"])
_texts = st.none() | st.sampled_from(["Reads", "Deletes ΣΣ", "", "x\ud800", "admin"])
_metas = st.none() | st.fixed_dictionaries({"owner": st.sampled_from(["a", "b"])}) | st.just({"n": [1, 2]})
_tools = st.builds(Tool, _servers, _names, _texts, st.none(), _annotations, _texts, _metas)
class _EqualsEverything(str):
    """A trusted glob whose ``__eq__`` says it is ``"*"`` (and anything else)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class _HoldsEverything(str):
    """A trusted glob that claims to contain every text."""

    def __contains__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


_trusted = st.sampled_from([["*"], ["github"], ["git*", "fs"], [], ["fs*"],
                            [_EqualsEverything("github")], [_HoldsEverything("fs"), "git*"],
                            [_EqualsEverything("*")]])
_annotation_patterns = st.builds(
    lambda hints, trusted: Annotations(trusted=trusted, **hints),
    st.dictionaries(st.sampled_from(HINTS), st.booleans(), min_size=1), _trusted)

_literals = st.sampled_from(["get", "admin", "fs", "github", "Σ", "İ", "x", "", "issue", "a"])


def _quoted(text):
    return '"' + text + '"'


_atoms = st.one_of(
    st.builds(lambda lit: f"tool.name == {_quoted(lit)}", _literals),
    st.builds(lambda f, lit: f"tool.name.{f}({_quoted(lit)})",
              st.sampled_from(["startsWith", "endsWith", "contains"]), _literals),
    st.builds(lambda a, b: f"tool.server_id in [{_quoted(a)}, {_quoted(b)}]", _literals, _literals),
    st.builds(lambda h: f"tool.annotations.{h}", st.sampled_from(HINTS)),
    st.builds(lambda n: f"size(tool.name) > {n}", st.integers(0, 8)),
    st.sampled_from(["tool.title == null", "has(tool.meta.owner)", "tool.meta == null",
                     "ctx == null", "true", "false", "tool.nothing", "tool.name"]),
    st.builds(lambda lit: f"tool.description.contains({_quoted(lit)})", _literals),
    st.builds(lambda lit: f"ctx.role == {_quoted(lit)}", st.sampled_from(["admin", "user"])),
    st.builds(lambda lit: f'(tool.meta != null && tool.meta.owner == {_quoted(lit)})',
              st.sampled_from(["a", "b"])),
)
_expressions = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.builds(lambda e: f"!({e})", inner),
        st.builds(lambda a, b: f"({a}) && ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) || ({b})", inner, inner),
    ),
    max_leaves=5,
)
_cel_patterns = st.builds(lambda source, trusted: Cel(source, trusted=trusted), _expressions, _trusted)
_entries = st.one_of(
    _annotation_patterns, _cel_patterns,
    st.sampled_from(["github/*", "*/delete_*", "fs*/*", "*admin*", "x"]),
    st.tuples(st.sampled_from(["*", "git*"]), st.sampled_from(["^get", "Table$"]).map(re.compile)),
)
_ctxs = st.one_of(st.none(), st.fixed_dictionaries({"role": st.sampled_from(["admin", "user"])}),
                  st.just({"other": 1}), st.just(5))


@settings(deadline=None)
@given(include=st.lists(_entries, max_size=3), exclude=st.lists(_entries, max_size=3),
       tools=st.lists(_tools, min_size=1, max_size=6), ctx=_ctxs,
       threads=st.sampled_from([None, 1, 2]))
def test_fast_equals_reference_with_annotations_and_cel(include, exclude, tools, ctx, threads):
    fast = toolfilter_fast.compile(include=include, exclude=exclude)
    ref = reference.compile(include=include, exclude=exclude)
    static = ref.static_mask(tools)
    dynamic = ref.mask(tools, ctx)
    assert fast.static_mask(tools, threads=threads) == static
    assert fast.mask(tools, ctx, threads=threads) == dynamic
    assert [fast.static_visible(t) for t in tools] == static
    assert [fast.visible(t, ctx) for t in tools] == dynamic
    assert [fast.explain(t, ctx).visible for t in tools] == dynamic
    # The static/dynamic law, with annotation and expression patterns in the mix.
    for s, d in zip(static, dynamic, strict=True):
        assert (s and d) == d
        assert s or not d
