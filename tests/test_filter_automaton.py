"""Hypothesis: the index on long pattern lists equal to the reference, on hostile input.

A list's any-server globs are filed by their longest literal in two tries (prefixes,
reversed suffixes) and one Aho-Corasick automaton (infixes), and only a key hit that
sits where its glob needs it is verified; the exclude side walks and scans an ASCII
name through the loose fold's byte map and folds it only when a glob must be
verified or a literal rule looked up. Short lists never reach the index (a handful
of globs is matched one by one), so these lists are long, and their globs are made
of a few pieces that are prefixes, suffixes and infixes of one another, in every
case and separator the loose fold merges.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import PatternError, Tool, reference

#: Pieces that share bytes with each other (so that keys are suffixes and
#: prefixes of one another), in the case and separators the loose fold merges,
#: with the characters whose fold surprises and the bytes that split patterns.
PIECES = [
    "a", "aa", "ab", "ba", "aba", "A", "AB", "Ab", "a-b", "a.b", "a_b", "b", "_", "-", ".",
    "Σ", "σ", "ς", "İ", "i", "\u0307", "\u212a", "k", "K", "ß", "\x00", ":", "\ud800",
]

piece = st.sampled_from(PIECES)
word = st.lists(piece, min_size=1, max_size=3).map("".join)
#: A tool glob of any shape: literal, prefix*, *suffix, *infix*, a*b*c, *a*b*.
tool_glob = st.one_of(
    word,
    word.map(lambda w: f"{w}*"),
    word.map(lambda w: f"*{w}"),
    word.map(lambda w: f"*{w}*"),
    st.tuples(word, word, word).map(lambda t: f"{t[0]}*{t[1]}*{t[2]}"),
    st.tuples(word, word).map(lambda t: f"*{t[0]}*{t[1]}*"),
    st.tuples(word, word).map(lambda t: f"{t[0]}*{t[1]}"),
)
server = st.sampled_from(["s", "S", "t", "s-1", "S.1"])
pattern = st.one_of(
    tool_glob,  # any server: the automaton's globs
    tool_glob.map(lambda g: f"*/{g}"),
    st.tuples(server, tool_glob).map(lambda t: f"{t[0]}/{t[1]}"),
    st.tuples(server, word).map(lambda t: f"{t[0]}/{t[1]}"),  # a literal rule
)
patterns = st.lists(pattern, min_size=5, max_size=40)


class Name(str):
    """A str subclass: read by value, as a str."""


#: Names of the same pieces, short and past the core's 256-byte short path.
name = st.one_of(
    st.lists(piece, max_size=8).map("".join),
    st.tuples(st.lists(piece, max_size=3).map("".join), st.integers(90, 130)).map(
        lambda t: (t[0] or "a") * t[1]),
)
tools = st.lists(
    st.builds(lambda s, n, sub: Tool(s, Name(n) if sub else n), server, name, st.booleans()),
    min_size=1, max_size=12,
)


def _compiled(include, exclude):
    try:
        fast = toolfilter_fast.compile(include=include, exclude=exclude)
    except PatternError as err:
        fast = err
    try:
        ref = reference.compile(include=include, exclude=exclude)
    except PatternError as err:
        ref = err
    return fast, ref


@settings(max_examples=150)
@given(patterns, patterns, tools)
def test_long_lists_match_as_the_reference(include, exclude, tool_list):
    fast, ref = _compiled(include, exclude)
    if isinstance(ref, PatternError):
        assert isinstance(fast, PatternError) and str(fast) == str(ref)
        return
    want = ref.static_mask(tool_list)
    assert fast.static_mask(tool_list) == want
    assert [fast.static_visible(t) for t in tool_list] == want
    # Many servers in one batch, interleaved: each server's plan once.
    many = tool_list * 20
    assert fast.static_mask(many, threads=2) == want * 20


@settings(max_examples=150)
@given(st.lists(tool_glob, min_size=5, max_size=40), tools)
def test_exclude_folds_only_what_it_must(exclude, tool_list):
    # Exclude alone, any server: the lazily folded name decides as the fold does.
    fast, ref = _compiled([], exclude)
    if isinstance(ref, PatternError):
        return
    assert fast.static_mask(tool_list) == ref.static_mask(tool_list)


def test_shared_literals_in_every_role():
    # A thousand globs over the runs of one letter, as literal, prefix, suffix and
    # infix: a name of a's hits a few hundred keys at every byte.
    globs = []
    for i in range(1, 251):
        a = "a" * i
        globs += [a, f"{a}*", f"*{a}", f"*{a}*"]
    tool_list = [Tool("s", "a" * k) for k in (1, 7, 200, 251, 300)] + [Tool("s", "A-a" * 40)]
    for include, exclude in ((globs, []), ([], [g.upper() for g in globs]), (globs, ["*B*"])):
        fast = toolfilter_fast.compile(include=include, exclude=exclude)
        ref = reference.compile(include=include, exclude=exclude)
        assert fast.static_mask(tool_list) == ref.static_mask(tool_list)
