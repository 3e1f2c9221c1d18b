"""The Policy against its reference on hostile input.

First the str subclasses that lie about their characters (through
``__format__``, ``__str__``, ``__eq__``, ``__hash__`` or ``__add__``) and
that run code when freed: every stage reads a name's characters and calls
none of its methods. Then a Hypothesis fuzzer: random policies (globs,
regexes, annotation patterns with trusted lists, a few CEL expressions and
functions, groups, relevance, a focus lens, a budget) over random catalogs
(hostile characters, str subclasses, objects that are not Tools), comparing
``Policy.select`` with the reference's stage by stage. CI runs it at the
profile's example count (500 in ``ci``); ``HYPOTHESIS_PROFILE=long`` runs it
longer.
"""

from __future__ import annotations

import gc
import re

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import Annotations, Cel, Policy, Tool, reference
from toolfilter_fast.groups import GroupFilter, flat_name

from test_filter_properties import HOSTILE

# --- str subclasses whose methods lie ----------------------------------------------


class Mortal(str):
    """A str subclass whose finalizer runs Python code; it counts the dead."""

    deaths = 0

    def __del__(self) -> None:
        Mortal.deaths += 1


class Formats(Mortal):
    def __format__(self, spec):
        return "github"


class Strs(Mortal):
    def __str__(self):
        return "github"


class Equals(Mortal):
    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash("github")


class Hashes(Mortal):
    def __hash__(self):
        return 0


class Adds(Mortal):
    def __add__(self, other):
        return "github" + str.__str__(other)

    def __radd__(self, other):
        return str.__str__(other) + "github"


class Everything(Formats, Strs, Equals, Adds):
    """Lies in every way the shapes above do."""


LIARS = [Formats, Strs, Equals, Hashes, Adds, Everything]
IMPLS = {"fast": (toolfilter_fast, Policy, GroupFilter),
         "reference": (reference, reference.Policy, reference.GroupFilter)}

ALWAYS_GITHUB = [{"mode": "always", "tools": ["github__*"]}]


def kept(selection):
    return [(str.__str__(t.server_id), str.__str__(t.name)) for t in selection.tools]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("liar", LIARS, ids=lambda cls: cls.__name__)
def test_the_groups_stage_reads_a_str_subclass_by_its_characters(impl, liar):
    _, policy_cls, _ = IMPLS[impl]
    # Its characters say "evil": no group lets it in, whatever its methods say;
    # a server that is "github" by its characters is let in, whatever they say.
    tools = [Tool(liar("evil"), "x"), Tool(liar("github"), "y"), Tool("evil", liar("z"))]
    policy = policy_cls(groups=ALWAYS_GITHUB)
    selection = policy.select(tools)
    assert kept(selection) == [("github", "y")]
    assert [selection.stage_of(i) for i in range(3)] == ["groups", None, "groups"]
    if impl == "fast":
        reasons = [d.reason for d in selection.dropped]
        assert reasons[0] == ("hidden: no live group has a pattern matching 'evil__x' "
                              "(live: groups[0])")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("liar", LIARS, ids=lambda cls: cls.__name__)
def test_a_group_filter_names_a_tool_by_its_characters(impl, liar):
    _, _, group_cls = IMPLS[impl]
    tool = Tool(liar("evil"), liar("x"))
    name = flat_name(tool)
    assert type(name) is str and name == "evil__x"
    groups, other = group_cls(ALWAYS_GITHUB), Tool("github", "y")
    assert groups.visible_tools([tool, other], "") == [other]
    assert groups.excluded_tools([tool, other], "") == [tool]
    assert groups.preactivate_tools([tool, other]) == [other]


@pytest.mark.parametrize("impl", IMPLS)
def test_a_relevance_pin_reads_the_flat_name_by_its_characters(impl):
    _, policy_cls, _ = IMPLS[impl]
    # An always group pins github tools past the relevance cut; a tool whose
    # characters are not github's is ranked like any other (and cut here).
    tools = [Tool(Everything("evil"), "open_issue", "nothing relevant here"),
             Tool("web", "fetch", "fetch a web page by its url"),
             Tool("github", "list_issues", "list the issues")]
    policy = policy_cls(relevance={"top_k": 1}, groups=[
        *ALWAYS_GITHUB, {"mode": "dynamic", "tools": ["web__*", "evil__*"], "keywords": ["url"]}])
    selection = policy.select(tools, message="fetch the page at this url")
    assert kept(selection) == [("web", "fetch"), ("github", "list_issues")]
    assert selection.stage_of(0) == "relevance"


@pytest.mark.parametrize("impl", IMPLS)
def test_selecting_frees_no_name_the_catalog_holds_and_keeps_none(impl):
    module, policy_cls, _ = IMPLS[impl]
    policy = policy_cls(filter=module.compile(exclude=["*/drop_*"]),
                        groups=[*ALWAYS_GITHUB,
                                {"mode": "dynamic", "tools": ["fs__*"], "keywords": ["file"]}],
                        focus_lens={"max_tools": 3}, max_tools=4)
    gc.collect()
    before = Mortal.deaths
    tools = [Tool(cls(server), cls(name)) for cls in LIARS
             for server, name in (("github", "get"), ("fs", "read_file"), ("github", "drop_x"),
                                  ("fs", "demo.w.a"))]
    for _ in range(3):
        selection = policy.select(tools, message="a file", focus="demo:w")
        [d.reason for d in selection.dropped]
        del selection
    gc.collect()
    assert Mortal.deaths == before  # nothing the catalog still holds was freed
    count = 2 * len(tools)
    del tools
    gc.collect()
    assert Mortal.deaths == before + count  # and nothing was kept once it is gone


# --- the fuzzer: random policies over random catalogs -------------------------------

_hostile = st.lists(st.sampled_from([*HOSTILE, "__", "d", "e"]), max_size=5).map("".join)
_servers = st.sampled_from(["github", "fs", "ui", "web", "GitHub", "a__b", "g_h"]) | _hostile
_names = st.one_of(st.sampled_from(["get", "delete_x", "Delete-X", "demo.w.a", "demo.v.b",
                                    "other.w.c", "x.y", "list", "__", "_", "d"]), _hostile)
_wrappers = st.sampled_from([str, str, *LIARS])


def _wrapped(strings):
    return st.builds(lambda cls, text: cls(text), _wrappers, strings)


_hint_values = st.sampled_from([True, False, True, False, 1, 0, "false", None])
_annotations = st.none() | st.dictionaries(
    st.sampled_from(["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]),
    _hint_values, max_size=4)
_descriptions = st.none() | st.sampled_from(["read a file", "delete the repo", "fetch a url",
                                             "list issues", "type text", "İσ\ud800"])


class Duck:
    """Not a Tool: plain attributes."""

    def __init__(self, server_id, name, description, annotations):
        self.server_id, self.name = server_id, name
        self.description, self.annotations = description, annotations


class Described:
    """Not a Tool: properties (which give the same objects on every read)."""

    def __init__(self, server_id, name, description, annotations):
        self._fields = (server_id, name, description, annotations)

    server_id = property(lambda self: self._fields[0])
    name = property(lambda self: self._fields[1])
    description = property(lambda self: self._fields[2])
    annotations = property(lambda self: self._fields[3])


_tool = st.builds(
    lambda kind, server, name, description, annotations: kind(
        server, name, description, annotations) if kind is not Tool else Tool(
        server, name, description, annotations=annotations),
    st.sampled_from([Tool, Tool, Tool, Duck, Described]),
    _wrapped(_servers), _wrapped(_names), _descriptions, _annotations)
_catalogs = st.lists(_tool, min_size=1, max_size=14)

_server_globs = st.sampled_from(["github", "fs", "*", "g*", "*b", "ui", "web", "GitHub"])
_tool_globs = st.sampled_from(["*", "get", "delete_*", "demo.*", "*.*", "x*", "d*", "*_*"])
_trusted = st.sampled_from([["*"], ["github"], ["g*"], ["fs", "ui"], ["GitHub"], ["*b", "w*"]])


def _annotation_pattern(hints, trusted):
    return Annotations(trusted=trusted, **hints)


_patterns = st.one_of(
    st.builds(lambda s, t: f"{s}/{t}", _server_globs, _tool_globs),
    st.builds(lambda t: f"*/{t}", _tool_globs),
    _hostile,  # anything, refused patterns included
    st.tuples(_server_globs, st.sampled_from(["^get", "x$", "^d", r"\.", "(?i)g", ""]).map(
        re.compile)),
    st.builds(_annotation_pattern, st.dictionaries(
        st.sampled_from(["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]),
        st.booleans(), min_size=1, max_size=2), _trusted),
    st.sampled_from([lambda tool, ctx: isinstance(ctx, dict) and ctx.get("role") == "admin",
                     lambda tool, ctx: str.__len__(tool.name) % 2 == 0]),
    st.sampled_from([Cel('tool.name.startsWith("d")'), Cel('tool.server_id == "github"'),
                     Cel("tool.annotations.readOnlyHint", trusted=["g*"]),
                     Cel('ctx != null && ctx.role == "admin"')]),
)
_groups = st.lists(st.fixed_dictionaries({
    "mode": st.sampled_from(["always", "dynamic"]),
    "tools": st.lists(st.one_of(st.sampled_from(
        ["github__*", "fs__*", "ui__demo.*", "*", "web__get", "*__delete_*", "g*__*", "*_*",
         "*__*__*", "GitHub__*"]), _hostile), max_size=3),
    "keywords": st.lists(st.sampled_from(["file", "web", "", "İ", "σ", "url"]), max_size=2),
}), max_size=3)
_focus = st.none() | st.sampled_from(["demo:w", "demo:w:v", "other:w", "demo:v:v"])
_lens = st.one_of(st.just({}), st.builds(lambda n: {"max_tools": n}, st.integers(0, 4)),
                  st.just({"mode": "focused"}), st.just({"mode": "all"}))
_relevance = st.none() | st.builds(lambda k: {"top_k": k}, st.integers(1, 4))


def _outcome(fn, *args, **kwargs):
    try:
        return "ok", fn(*args, **kwargs)
    except (TypeError, ValueError) as err:
        return "raised", type(err).__name__


@given(tools=_catalogs, include=st.just([]) | st.lists(_patterns, max_size=4),
       exclude=st.lists(_patterns, max_size=3), groups=_groups, lens=_lens, focus=_focus,
       budget=st.none() | st.integers(0, 8), relevance=_relevance,
       message=st.none() | st.sampled_from(["read a file", "web url", "", "İσ delete"]),
       ctx=st.sampled_from([None, {"role": "admin"}, {"role": "user"}]))
def test_the_fast_policy_equals_the_reference(tools, include, exclude, groups, lens, focus,
                                              budget, relevance, message, ctx):
    made = _outcome(toolfilter_fast.compile, include=include, exclude=exclude)
    want_made = _outcome(reference.compile, include=include, exclude=exclude)
    assert made[0] == want_made[0]
    if made[0] == "raised":
        event("a pattern refused")
        return
    fast = Policy(filter=made[1], groups=groups, focus_lens=lens, max_tools=budget,
                  relevance=relevance)
    ref = reference.Policy(filter=want_made[1], groups=groups, focus_lens=lens,
                           max_tools=budget, relevance=relevance)
    got = _outcome(fast.select, tools, ctx, message, focus)
    want = _outcome(ref.select, tools, ctx, message, focus)
    assert got[0] == want[0], (got, want)
    if got[0] == "raised":
        event("select raised")
        assert got == want
        return
    got, want = got[1], want[1]
    event(f"stages dropping: {sorted({got.stage_of(i) or 'kept' for i in range(len(tools))})}")
    assert [got.stage_of(i) for i in range(len(tools))] == [
        want.stage_of(i) for i in range(len(tools))]
    assert [id(t) for t in got.tools] == [id(t) for t in want.tools]
    assert (got.cache_scope, got.stages) == (want.cache_scope, want.stages)
    dropped = got.dropped
    assert [id(d.tool) for d in dropped] == [id(t) for i, t in enumerate(tools)
                                             if got.stage_of(i) is not None]
    assert all(d.reason.startswith("hidden: ") for d in dropped)
