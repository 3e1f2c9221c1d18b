"""Name patterns (``*``, ``?``; the globs of MCP's list filters): the Rust
core's ``NamePatterns`` equal to the reference on hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolfilter_fast import _core
from toolfilter_fast.reference.name_patterns import NamePatterns as ReferencePatterns
from toolfilter_fast.reference.name_patterns import name_pattern_match

#: Metacharacters, separators, NUL, case pairs and letters whose case folds
#: surprise, lone surrogates, a character outside the BMP.
HOSTILE = ["a", "b", "A", "_", "*", "?", "/", ":", "\x00", "İ", "i", "Σ", "σ", "\u212a", "k",
           "K", "\ud800", "\udfff", "é", "😀", "[", "\\"]
NAME_CHARS = [c for c in HOSTILE if c not in "*?"] + ["*", "?"]  # a name may hold them too

patterns = st.text(st.sampled_from(HOSTILE), max_size=10)
names = st.text(st.sampled_from(NAME_CHARS), max_size=12)


class Name(str):
    """A str subclass that lies about equality and its characters."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

    def __iter__(self):
        return iter("zz")


@given(st.lists(patterns, max_size=6), st.lists(names, max_size=6))
def test_the_core_equals_the_reference(pattern_list, name_list):
    fast, slow = _core.NamePatterns(pattern_list), ReferencePatterns(pattern_list)
    assert len(fast) == len(slow) == len(pattern_list)
    assert fast.matches(name_list) == slow.matches(name_list)
    for name in name_list:
        assert fast.is_match(name) == slow.is_match(name)


@given(patterns, names)
def test_str_subclasses_are_read_by_value(pattern, name):
    want = name_pattern_match(pattern, name)
    assert _core.NamePatterns([Name(pattern)]).is_match(Name(name)) == want
    assert ReferencePatterns([Name(pattern)]).is_match(Name(name)) == want


@pytest.mark.parametrize(("pattern", "name", "want"), [
    ("git_*", "git_commit", True),
    ("git_*", "Git_commit", False),      # case-sensitive
    ("get_?", "get_x", True),
    ("get_?", "get_xy", False),
    ("?", "😀", True),                   # one code point, whatever its UTF-8 length
    ("?", "\ud800", True),               # a lone surrogate is one character
    ("??", "é", False),
    ("*", "", True),
    ("", "", True),
    ("a[b]", "a[b]", True),              # brackets are literal
    ("a[b]", "ab", False),
    ("k*", "\u212a", False),             # no fold: the Kelvin sign is not k
    ("*a?a*", "baxab", True),
])
def test_the_glob_language(pattern, name, want):
    assert name_pattern_match(pattern, name) is want
    assert _core.NamePatterns([pattern]).is_match(name) is want


def test_many_stars_are_one_pass():
    # A backtracking matcher takes exponential time here; this one reads the
    # name once per pattern (the test finishing is the check).
    name = "a" * 50_000
    many = [f"{'*?a' * 60}{i}*b" for i in range(100)]
    assert _core.NamePatterns(many).matches([name, name + "0b"]) == [False, True]


def test_wrong_types_are_named():
    with pytest.raises(TypeError, match=r"patterns\[1\] must be str, not int"):
        _core.NamePatterns(["a", 1])
    with pytest.raises(TypeError, match=r"names\[0\] must be str, not bytes"):
        _core.NamePatterns(["a"]).matches([b"a"])
    with pytest.raises(TypeError, match=r"name must be str"):
        _core.NamePatterns(["a"]).is_match(None)
    with pytest.raises(TypeError, match=r"patterns\[0\] must be str"):
        ReferencePatterns([None])
