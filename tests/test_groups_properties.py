"""Hypothesis: the fast GroupFilter equal to the reference, the laws that tie its
methods together, and the group's round trips."""

from __future__ import annotations

import json
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from toolfilter_fast import GroupFilter, ToolFilterGroup, reference
from toolfilter_fast.groups import group_glob_match

from examples_budget import EQUIVALENCE_EXAMPLES

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

#: Few letters so that patterns and keywords hit; case pairs, the separators, a
#: literal-looking '*', NUL, letters whose lower-case is surprising, lone
#: surrogates and the replacement character.
ALPHABET = [
    "a", "A", "b", "B", "_", "*", "?", "[", "\\", " ", "\x00", "k", "K", "\u212a",
    "İ", "i", "\u0307", "Σ", "σ", "ς", "ß", "Ü", "ü", "\ud800", "\ufffd", "😀",
]

text = st.text(st.sampled_from(ALPHABET), max_size=5)
names = st.lists(text, max_size=12)


@st.composite
def patterns(draw, names_drawn=None):
    """Anything at all, or a name cut in two around a '*' (so that it matches)."""
    base = draw(st.one_of(text, st.sampled_from(names_drawn or [""])))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(base)))
        drop = draw(st.integers(0, len(base) - cut))
        return base[:cut] + "*" + base[cut + drop:]
    return base


@st.composite
def group_filters(draw, pool):
    groups = draw(st.lists(
        st.builds(
            ToolFilterGroup,
            st.sampled_from(["always", "dynamic"]),
            st.lists(patterns(pool), max_size=4),
            st.lists(text, max_size=3),
        ),
        max_size=5,
    ))
    return groups


@st.composite
def turns(draw):
    """(groups, names, message, mcp_names)"""
    pool = draw(names)
    groups = draw(group_filters(pool))
    message = draw(st.text(st.sampled_from(ALPHABET), max_size=12))
    mcp = draw(st.sets(st.sampled_from(pool))) if pool else set()
    return groups, pool, message, mcp


@settings(max_examples=EQUIVALENCE_EXAMPLES)
@given(turns())
def test_fast_equals_reference(turn):
    groups, pool, message, mcp = turn
    fast, slow = GroupFilter(groups), reference.GroupFilter(groups)
    assert fast.visible_names(pool, message, mcp) == slow.visible_names(pool, message, mcp)
    assert fast.excluded_names(pool, message, mcp) == slow.excluded_names(pool, message, mcp)
    assert fast.preactivate(pool) == slow.preactivate(pool)
    assert fast.active_groups(message) == slow.active_groups(message)


@settings(max_examples=EQUIVALENCE_EXAMPLES)
@given(text, text)
def test_glob_equals_reference(pattern, name):
    assert group_glob_match(pattern, name) == reference.group_glob_match(pattern, name)


@given(turns())
def test_visible_and_excluded_partition_the_names(turn):
    groups, pool, message, mcp = turn
    f = GroupFilter(groups)
    shown, hidden = f.visible_names(pool, message, mcp), f.excluded_names(pool, message, mcp)
    hidden_set = set(hidden)
    # Every name lands on exactly one side, in input order on each.
    assert shown == [n for n in pool if n not in hidden_set]
    assert hidden == [n for n in pool if n in hidden_set]
    assert hidden_set <= mcp


@given(turns())
def test_preactivated_are_visible_on_every_turn(turn):
    groups, pool, message, _ = turn
    f = GroupFilter(groups)
    pre = f.preactivate(pool)
    assert len(pre) == len(set(pre))
    assert set(pre) <= set(f.visible_names(pool, message, set(pool)))


@given(turns(), st.randoms(use_true_random=False))
def test_group_order_does_not_matter(turn, rnd):
    groups, pool, message, mcp = turn
    shuffled = list(groups)
    rnd.shuffle(shuffled)
    a, b = GroupFilter(groups), GroupFilter(shuffled)
    assert a.visible_names(pool, message, mcp) == b.visible_names(pool, message, mcp)
    assert a.preactivate(pool) == b.preactivate(pool)


@given(turns())
def test_adding_a_group_only_shows_more(turn):
    groups, pool, message, mcp = turn
    if not groups:
        return
    fewer = set(GroupFilter(groups[:-1]).visible_names(pool, message, mcp)) if groups[:-1] else None
    more = set(GroupFilter(groups).visible_names(pool, message, mcp))
    if fewer is not None:
        assert fewer <= more


@given(turns())
def test_tool_forms_agree_with_name_forms(turn):
    groups, pool, message, mcp = turn
    f = GroupFilter(groups)
    tools = [{"name": n, "origin": "mcp" if n in mcp else "builtin"} for n in pool]
    assert [t["name"] for t in f.visible_tools(tools, message)] == f.visible_names(
        pool, message, mcp,
    )
    assert [t["name"] for t in f.excluded_tools(tools, message)] == f.excluded_names(
        pool, message, mcp,
    )
    assert [t["name"] for t in f.preactivate_tools(tools)] == f.preactivate(
        [n for n in pool if n in mcp],
    )


groups = st.builds(
    ToolFilterGroup, st.sampled_from(["always", "dynamic"]), st.lists(st.text()),
    st.lists(st.text()),
)


@given(groups)
def test_group_round_trips(group):
    assert ToolFilterGroup.from_dict(group.to_dict()) == group
    assert ToolFilterGroup.from_json(group.to_json()) == group
    assert json.loads(group.to_json()) == group.to_dict()
    if not any("\ud800" <= c <= "\udfff" for s in group.tools + group.keywords for c in s):
        assert ToolFilterGroup.from_toml(group.to_toml()) == group
        assert tomllib.loads(group.to_toml()) == group.to_dict()


@given(st.lists(groups, max_size=4), st.text(min_size=1))
def test_filter_toml_round_trip(group_list, profile):
    if any("\ud800" <= c <= "\udfff" for c in profile) or any(
        "\ud800" <= c <= "\udfff" for g in group_list for s in g.tools + g.keywords for c in s
    ):
        return
    f = GroupFilter(group_list)
    assert GroupFilter.from_toml(f.to_toml(profile), profile) == f
