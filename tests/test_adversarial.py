"""Adversarial input: huge names and pattern sets, every kind of Unicode, wrong
types, non-tools, hostile pattern functions, and pickles from other versions.

Each case has one clear outcome: a right answer, or a named error. Sizes are
the issue's (10 MB, 100,000 patterns, 10,000 stars); the expected answers are
built with plain ``str`` operations, independently of both implementations.
Timings are not asserted here (see the README's Guarantees and the notes).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import multiprocessing
import os
import pickle
import pickletools
import re
import sys
import threading
import time
import unicodedata
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import (
    PatternError,
    Tool,
    ToolCatalog,
    ToolFilter,
    ToolNotFoundError,
    _core,
    reference,
)
from toolfilter_fast.filter import PICKLE_FORMAT, _rebuild

MB10 = 10_000_000


# --- sizes -----------------------------------------------------------------------


def test_ten_megabyte_names():
    body = "a" * MB10
    f = toolfilter_fast.compile(
        include=["s/*", ("r", re.compile("^a{5}b"))],
        exclude=["*/*needle*", "*/x*y*z", "*/*-end"],
    )
    cases = {
        Tool("s", body): True,
        Tool("s", body + "needle"): False,  # infix found at the very end
        Tool("s", "NEEDLE" + body): False,  # folded: the whole 10 MB is lower-cased
        Tool("s", "x" + body + "y" + body[:10] + "z"): False,  # general glob
        Tool("s", "x" + body + "z"): True,  # general glob, middle missing
        Tool("s", body + ".END"): False,  # suffix after folding `.` and case
        Tool("r", "aaaaab" + body): True,  # regex include
        Tool("r", body): False,
        Tool("t", body): False,  # allow-list miss
        Tool(body, "x"): False,  # a 10 MB server id
        Tool("s", "é" * (MB10 // 2)): True,  # 10 MB of two-byte characters
        Tool("s", "É" * (MB10 // 4) + "-END"): False,  # folded on the slow path
    }
    for tool, want in cases.items():
        assert f.visible(tool) is want, tool.name[:20]
        assert f.static_visible(tool) is want
    tools = list(cases)
    assert f.static_mask(tools) == list(cases.values())
    assert f.static_mask_columns([t.server_id for t in tools], [t.name for t in tools]) == list(
        cases.values()
    )
    assert toolfilter_fast.fold_loose("A-" * (MB10 // 2)) == "a_" * (MB10 // 2)


@pytest.mark.parametrize(
    ("pattern", "hit", "miss"),
    [
        ("s/" + "a" * MB10, "a" * MB10, "a" * (MB10 - 1)),  # literal
        ("s/" + "a" * MB10 + "*", "a" * MB10 + "b", "a" * (MB10 - 1) + "b"),  # prefix
        ("s/*" + "a" * MB10, "b" + "a" * MB10, "a" * (MB10 - 1)),  # suffix
        ("s/*" + "a" * MB10 + "*", "b" + "a" * MB10 + "b", "b" + "a" * (MB10 - 1) + "b"),  # infix
        ("s/x*" + "a" * (MB10 // 2) + "*y", "x" + "a" * (MB10 // 2) + "y", "x" + "a" * 9 + "y"),
        ("s/" + "*" * MB10, "anything", None),  # ten million stars match everything
    ],
    ids=["literal", "prefix", "suffix", "infix", "general", "stars"],
)
def test_ten_megabyte_patterns(pattern, hit, miss):
    include = toolfilter_fast.compile(include=[pattern])
    exclude = toolfilter_fast.compile(exclude=[pattern.upper()])  # folded at compile time
    assert include.visible(Tool("s", hit))
    assert not exclude.visible(Tool("s", hit))
    assert not include.visible(Tool("t", hit))
    if miss is not None:
        assert not include.visible(Tool("s", miss))
        assert exclude.visible(Tool("s", miss))


def test_a_hundred_thousand_patterns():
    n = 100_000
    include = []
    for i in range(n):
        include.append(
            [f"srv{i}/tool_{i}", f"srv{i}/pre{i}_*", f"*/*_suf{i}", f"*/*in{i}fix*", f"s{i}/a*{i}*z"][i % 5]
        )
    exclude = [f"*/Block-{i}*" for i in range(n)]
    f = toolfilter_fast.compile(include=include, exclude=exclude)
    assert len(f.include) == len(f.exclude) == n
    cases = {
        Tool("srv0", "tool_0"): True,
        Tool("srv0", "tool_1"): False,
        Tool("srv99995", "tool_99995"): True,
        Tool("srv1", "pre1_x"): True,
        Tool("srv2", "pre1_x"): False,
        Tool("any", "x_suf99997"): True,
        Tool("any", "x_suf9999"): False,  # 9999 % 5 == 4: not a suffix pattern
        Tool("any", "xxin99998fixyy"): True,
        Tool("s99999", "a_99999_z"): True,
        Tool("s99999", "a_99998_z"): False,
        Tool("srv0", "tool_0x"): False,
        Tool("any", "block_77_suf2"): False,  # excluded (loosely) before include is asked
        Tool("any", "x_suf2"): True,
    }
    for tool, want in cases.items():
        assert f.visible(tool) is want, tool
    assert f.static_mask(list(cases)) == list(cases.values())
    bad = [*include[:-1], "x/"]
    with pytest.raises(PatternError, match=r"include\[99999\]: empty tool segment") as err:
        toolfilter_fast.compile(include=bad)
    assert err.value.index == n - 1


def _str_glob(glob: str, s: str) -> bool:
    """A segment glob by ``str`` methods: ends anchored, each middle piece at
    its leftmost place after the one before (greedy, which `*` alone allows)."""
    first, *middles, last = glob.split("*") if "*" in glob else (glob, None)
    if last is None:
        return s == glob
    if len(s) < len(first) + len(last) or not s.startswith(first) or not s.endswith(last):
        return False
    at, end = len(first), len(s) - len(last)
    for piece in filter(None, middles):
        found = s.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _str_first(patterns: list[str], server: str, name: str) -> int | None:
    for i, p in enumerate(patterns):
        s, t = p.split("/", 1) if "/" in p else ("*", p)
        if _str_glob(s, server) and _str_glob(t, name):
            return i
    return None


A = "a" * 100_000


@pytest.mark.parametrize(
    ("patterns", "tools"),
    [
        # Nested infix keys: a thousand end at every byte of the run.
        (["x*" + "a" * i + "*" for i in range(1, 1_001)],
         [("s", A), ("s", "x" + A), ("s", "x" + "a" * 999), ("s", A + "x")]),
        # Infix server globs, every one matching a long server id.
        (["*" + "a" * i + f"*/tool{i}" for i in range(1, 1_001)],
         [(A, "tool5"), (A, "tool1000"), ("a" * 4, "tool5"), ("a" * 5, "tool5"), (A, "tool")]),
        # Multi-star globs past the search budget: the sweep of middle pieces.
        (["*" + "a" * i + f"*b{i % 7}*" for i in range(1, 1_001)],
         [("s", A + "b3"), ("s", A), ("s", "b3" + A), ("s", "a" * 700 + "b6a")]),
        # Long prefixes past the comparing budget: the sweep of whole globs.
        (["a" * 3_000 + "*c" + "b" * i for i in range(1, 4_001)],
         [("s", A + "c" + "b" * 3_500), ("s", A + "c" + "b" * 4_500), ("s", A + "c"),
          ("s", "a" * 2_999 + "c" + "b" * 10), ("s", "a" * 3_000 + "cb")]),
        # A server id that matches a thousand server globs, and a long name.
        (["*" + "a" * i + f"*/*b{i % 13}*" for i in range(1, 1_001)],
         [(A, "x" * 100_000 + "b7"), (A, "x" * 100_000), ("a" * 10, "b12" + "x" * 100_000)]),
    ],
    ids=["nested-infix", "server-globs", "multi-star", "long-prefixes", "many-groups"],
)
def test_long_names_against_many_patterns(patterns, tools):
    """The shapes whose cost once grew as patterns × name length (issue 14)
    give the answers of matching each pattern alone: the first match, and
    on both sides (exclude folds: the patterns written in capitals)."""
    core = _core.RuleSet(patterns)
    include = toolfilter_fast.compile(include=patterns)
    exclude = toolfilter_fast.compile(exclude=[p.upper() for p in patterns])
    for server, name in tools:
        want = _str_first(patterns, server, name)
        assert core.first_match(server, name) == want, (server[:8], name[-8:])
        assert include.static_visible(Tool(server, name)) is (want is not None)
        assert exclude.static_visible(Tool(server, name)) is (want is None)
    batch = [Tool(s, n) for s, n in tools]
    assert include.static_mask(batch) == [_str_first(patterns, s, n) is not None for s, n in tools]


def _long_option(bad_at: int | None = None, bad: object = "x/") -> list[object]:
    """2,000 good entries (long enough to compile on two threads), one regex
    among them, and ``bad`` at ``bad_at``."""
    entries: list[object] = [f"srv{i}/tool_{i}*" for i in range(2_000)]
    entries[7] = ("srv*", re.compile("x"))
    if bad_at is not None:
        entries[bad_at] = bad
    return entries


_BAD_REGEX = ("s", "not a pattern")


@pytest.mark.parametrize(
    "options",
    [
        {"include": _long_option(1_500, _BAD_REGEX), "exclude": _long_option(3)},
        {"include": _long_option(1_500), "exclude": _long_option(3, _BAD_REGEX)},
        {"include": _long_option(1_500), "exclude": _long_option(3)},
        {"include": _long_option(), "exclude": _long_option(1_999, "/x")},
        {"include": _long_option(4, _BAD_REGEX), "exclude": 42},
        {"include": _long_option(), "exclude": 42},
        {"include": _long_option(1_999), "exclude": _long_option(0, "a:b/c")},
    ],
    ids=["include-regex", "exclude-regex-first", "include-str", "exclude-str", "include-then-type",
         "exclude-type", "include-str-wins"],
)
def test_long_options_report_the_reference_error(options):
    """Long options compile on two threads, and the non-str entries are
    judged while they do: the error is still the one the reference names."""
    with pytest.raises(PatternError) as fast:
        toolfilter_fast.compile(**options)
    with pytest.raises(PatternError) as ref:
        reference.compile(**options)
    assert str(fast.value) == str(ref.value)
    assert (fast.value.option, fast.value.index) == (ref.value.option, ref.value.index)


def _threads() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/status")
def test_a_build_abandoned_by_an_error_leaves_no_thread_behind():
    """A bad regex entry raises after the core has handed the exclude side
    to its helper thread: the helper finishes that job and waits for the
    next, and no thread is left behind."""
    options = {"include": _long_option(1_000, _BAD_REGEX), "exclude": _long_option()}
    toolfilter_fast.compile(include=_long_option(), exclude=_long_option())  # the helper is up
    before = _threads()
    for _ in range(20):
        with pytest.raises(PatternError):
            toolfilter_fast.compile(**options)
    deadline = time.monotonic() + 10
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _threads() <= before


_BLOCKS = [f"*/Block-{i}*" for i in range(2_000)]


def _compile_long_in_child(build: object) -> None:
    """In a forked child: a long compile, and finishing a build begun in the
    parent, both give right answers (nothing waits for the parent's helper)."""
    f = toolfilter_fast.compile(include=_long_option(), exclude=_BLOCKS)
    assert f.visible(Tool("srv1", "tool_1x"))
    assert f.visible(Tool("srv1", "tool_1_block_7"))  # a prefix pattern: Block-7 must lead
    assert not f.visible(Tool("srv1", "block_7_tool_1"))
    static = build.finish([], [], False)  # type: ignore[attr-defined]
    assert static.outcome("srv3", "tool_3a") == 1
    assert static.outcome("srv3", "other") == 0
    assert static.outcome("srv3", "tool_3_block_9") == 1
    assert static.outcome("srv3", "block_9_tool_3") == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_compiles_work_in_a_forked_child():
    toolfilter_fast.compile(include=_long_option(), exclude=_long_option())  # the helper is up
    # Its exclude side is handed to the parent's helper, long enough (some
    # tens of milliseconds) to be still compiling when the child is forked.
    build = _core.StaticBuild(tuple(_long_option()), tuple(_BLOCKS * 25))
    context = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: fine here
        child = context.Process(target=_compile_long_in_child, args=(build,))
        child.start()
    child.join(timeout=120)
    if child.is_alive():  # hung: waiting for a thread the fork did not copy
        child.kill()
    assert child.exitcode == 0
    static = build.finish([], [], False)
    assert static.outcome("srv3", "tool_3a") == 1
    assert static.outcome("srv3", "block_9_tool_3") == 0


class _IteratesOtherwise(list):
    """A list whose iterator yields other entries than it holds."""

    def __iter__(self):
        return iter(["*/shown_*"])


def test_a_list_subclass_is_compiled_from_its_iterator_as_in_the_reference():
    entries = _IteratesOtherwise(["*/hidden_*"])
    for impl in (toolfilter_fast, reference):
        f = impl.compile(exclude=entries)
        assert f.exclude == ("*/shown_*",)
        assert not f.visible(Tool("s", "shown_x"))
        assert f.visible(Tool("s", "hidden_x"))


class _Tuple(tuple):
    pass


def test_a_static_build_sorts_the_entries_and_finishes_once():
    plain = ("s", re.compile("x"))
    others = [
        ("s", re.compile(b"x")),        # a bytes regex: refused, in Python
        ("a:b", re.compile("x")),       # a bad server glob: refused, in Python
        ("s", "not compiled"),
        _Tuple(("s", re.compile("x"))),  # a tuple subclass: judged in Python
        ("s", re.compile("x"), 3),
        lambda tool, ctx: True,
    ]
    build = _core.StaticBuild(["a/b", plain, *others, "c/d"], ("c*",))
    assert build.regexes("include") == [plain]
    assert build.regexes("include")[0] is plain
    assert build.others("include") == list(range(2, 2 + len(others)))
    assert build.others("exclude") == [] and build.regexes("exclude") == []
    assert build.sources("include")[1] is plain
    build = _core.StaticBuild(("a/b", plain), ("c*",))
    for method in (build.others, build.regexes, build.sources):
        with pytest.raises(ValueError, match="'include' or 'exclude'"):
            method("both")
    static = build.finish(["s"], [], False)
    assert static.outcome("a", "b") == 1
    assert static.outcome("a", "c") == 0
    with pytest.raises(ValueError, match="already finished"):
        build.finish(["s"], [], False)


@pytest.mark.parametrize(
    ("glob", "hit", "miss"),
    [
        ("*" * 10_000, "", None),
        ("*a" * 10_000 + "*", "a" * 10_000, "a" * 9_999 + "b" * 50_000),
        ("a*" * 10_000, "a" * 10_000, "a" * 9_999),
        ("*ab" * 5_000 + "*c", "ab" * 5_000 + "c", "ab" * 5_000 + "cx"),
        ("x" + "*ab" * 5_000, "x" + "ab" * 5_000, "x" + "ab" * 4_999 + "a"),
        ("*a" * 10_000 + "*b", "a" * 100_000 + "b", "a" * 100_000),
    ],
)
def test_globs_of_ten_thousand_stars(glob, hit, miss):
    assert toolfilter_fast.glob_match(glob, hit)
    assert _core.SegmentGlob(glob.upper(), True).is_match(hit)
    f = toolfilter_fast.compile(include=[f"s/{glob}"], exclude=[f"*/{glob}-never"])
    assert f.visible(Tool("s", hit))
    if miss is not None:
        assert not toolfilter_fast.glob_match(glob, miss)
        assert not f.visible(Tool("s", miss))


def test_glob_on_small_inputs_equals_reference_with_many_stars():
    glob = "*a" * 300 + "*"
    for text in ("a" * 299, "a" * 300, "ba" * 300, "b" * 1000):
        assert toolfilter_fast.glob_match(glob, text) == reference.glob_match(glob, text)


# --- Unicode -----------------------------------------------------------------------

#: One or more characters of every kind that has tripped up a string library.
UNICODE_CASES = {
    "unassigned": "\u0378",
    "unassigned_astral": "\U000e0080",
    "noncharacter": "\ufffe",
    "last_code_point": "\U0010ffff",
    "private_use": "\ue000",
    "lone_high_surrogate": "\ud800",
    "lone_low_surrogate": "\udfff",
    "surrogate_pair_as_two": "\ud83d\ude00",
    "astral_emoji": "\U0001f600",
    "combining_acute": "e\u0301",
    "precomposed_e_acute": "\u00e9",
    "right_to_left_override": "\u202e",
    "hebrew": "\u05e9\u05dc\u05d5\u05dd",
    "arabic": "\u0645\u0631\u062d\u0628\u0627",
    "zero_width_space": "\u200b",
    "zero_width_joiner": "\u200d",
    "byte_order_mark": "\ufeff",
    "nul": "\x00",
    "deseret_capital": "\U00010400",
    "cherokee_capital": "\u13a0",
    "georgian_mtavruli": "\u1c90",
    "titlecase_dz": "\u01c5",
    "dotted_capital_i": "\u0130",
    "capital_sigma": "\u03a3",
    "kelvin": "\u212a",
    "replacement": "\ufffd",
}


@pytest.mark.parametrize("chars", list(UNICODE_CASES.values()), ids=list(UNICODE_CASES))
def test_unicode_characters_are_matched_as_themselves(impl, chars):
    server, name = f"s{chars}", f"x{chars}y"
    tool = impl.Tool(server, name)
    # A pattern equal to the name matches it, exactly and loosely.
    assert impl.compile(include=[f"{server}/{name}"]).visible(tool)
    assert not impl.compile(exclude=[f"{server}/{name}"]).visible(tool)
    assert not impl.compile(exclude=[f"*/*{chars}*"]).visible(tool)
    assert not impl.compile(exclude=[f"*/{impl.fold_loose(name)}"]).visible(tool)
    # Nothing is stripped or normalized: the name without the characters is another name.
    assert not impl.compile(include=[f"{server}/xy"]).visible(tool)
    assert impl.compile(exclude=["*/xy"]).visible(tool)


@pytest.mark.parametrize("chars", list(UNICODE_CASES.values()), ids=list(UNICODE_CASES))
def test_unicode_fast_equals_reference_where_unicode_versions_agree(chars):
    if any(unicodedata.category(c) == "Cn" for c in chars):
        # Unassigned in this Python: Rust's tables may know it (spec/tool_filter.md).
        assert toolfilter_fast.fold_loose(chars * 3) == toolfilter_fast.fold_loose(chars) * 3
        return
    patterns = [f"*/{chars.upper()}*", f"*/*{chars.lower()}", f"*{chars}*/*"]
    fast = toolfilter_fast.compile(include=["*/*y"], exclude=patterns)
    ref = reference.compile(include=["*/*y"], exclude=patterns)
    for name in (chars, f"{chars}y", f"x{chars.upper()}y", f"{chars.lower()}Q", "plain"):
        for server in ("s", f"s{chars}"):
            tool = Tool(server, name)
            assert fast.visible(tool) == ref.visible(tool), (server, name)
    assert toolfilter_fast.fold_loose(chars) == reference.fold_loose(chars)


def test_lookalikes_are_different_names():
    # The fold is per-character lower-case only: no normalization, no stripping of
    # format characters, no confusables. An exclude list cannot catch a name that
    # only *looks* like a hidden one; an include list (fail closed) does not show it.
    excluded = toolfilter_fast.compile(exclude=["*/delete_repo", "*/café"])
    allowed = toolfilter_fast.compile(include=["*/delete_repo"])
    for lookalike in ("delete\u200b_repo", "d\u0435lete_repo", "delete_rep\u043e", "\u202edelete_repo"):
        assert excluded.visible(Tool("s", lookalike))
        assert not allowed.visible(Tool("s", lookalike))
    assert excluded.visible(Tool("s", "cafe\u0301"))  # NFD form of café
    assert not excluded.visible(Tool("s", "CAFÉ"))
    assert toolfilter_fast.glob_match("\ud83d\ude00", "\ud83d\ude00")
    assert not toolfilter_fast.glob_match("\ud83d\ude00", "\U0001f600")
    assert not toolfilter_fast.glob_match("*\ud800*", "\ufffd")


#: Every code point: unassigned, private use, surrogates, controls, marks.
every_char = st.characters(exclude_categories=())


@given(
    st.text(st.characters(exclude_categories=(), exclude_characters="/:"), min_size=1, max_size=8),
    st.text(every_char, min_size=1, max_size=12),
)
def test_a_pattern_written_as_the_tool_matches_it_on_every_code_point(server, name):
    # Pattern and target are folded by the same function, so writing the tool's
    # own pair (or its folded form: the fold is idempotent) always includes it
    # exactly and excludes it loosely, whatever Unicode version knows the characters.
    tool = Tool(server, name)
    assert toolfilter_fast.compile(include=[f"{server}/{name}"]).visible(tool)
    assert not toolfilter_fast.compile(exclude=[f"{server}/{name}"]).visible(tool)
    fold = toolfilter_fast.fold_loose
    assert fold(fold(name)) == fold(name)
    assert not toolfilter_fast.compile(exclude=[f"{fold(server)}/{fold(name)}"]).visible(tool)
    assert toolfilter_fast.compile(include=[f"{server}/{name}"]).static_mask([tool, Tool(server, name + "x")]) == [
        True, reference.glob_match(name, name + "x"),
    ]


# --- wrong types ---------------------------------------------------------------------


class Duck:
    def __init__(self, server_id, name):
        self.server_id = server_id
        self.name = name


@pytest.fixture
def fast_filter():
    return toolfilter_fast.compile(include=["s/*", ("r", re.compile("x"))], exclude=["*/d*"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda f: f.visible(Duck(1, "x")), r"^server_id must be str, not int$"),
        (lambda f: f.static_visible(Duck("s", b"x")), r"^name must be str, not bytes$"),
        (lambda f: f.visible(Duck(None, None)), r"^server_id must be str, not NoneType$"),
        (lambda f: f.filter([Tool("s", "a"), Duck("s", 2)]), r"^tools\[1\]\.name must be str, not int$"),
        (lambda f: f.static_filter([Duck(1.5, "x")]), r"^tools\[0\]\.server_id must be str, not float$"),
        (lambda f: f.mask([Tool("s", "a")] * 3 + [Duck(["s"], "x")]), r"^tools\[3\]\.server_id must be str, not list$"),
        (lambda f: f.static_mask_pairs([("s", "a"), ("s", 7)]), r"^pairs\[1\]\[1\] must be str, not int$"),
        (lambda f: f.static_mask_pairs([["s", "a"]]), r"^pairs\[0\] must be a \(server_id, name\) tuple$"),
        (lambda f: f.static_mask_pairs([("s", "a", "b")]), r"^pairs\[0\] must be a \(server_id, name\) tuple$"),
        (lambda f: f.static_mask_columns(["s", 3], ["a", "b"]), r"^server_ids\[1\] must be str, not int$"),
        (lambda f: f.static_mask_columns(["s"], [None]), r"^names\[0\] must be str, not NoneType$"),
        (lambda f: Tool(b"s", "x"), r"^Tool\.server_id must be str, not bytes$"),
        (lambda f: Tool("s", 5), r"^Tool\.name must be str, not int$"),
        (lambda f: ToolCatalog(f).refresh(5, []), r"^server_id must be str, not int$"),
        (lambda f: ToolCatalog(f).refresh("s", [Tool("s", "a"), {"name": 5}]), r"^tools\[1\]: Tool\.name must be str, not int$"),
        (lambda f: ToolCatalog(f).resolve("s", 5), r"^name must be str, not int$"),
        (lambda f: ToolCatalog(f).resolve(None, "x"), r"^server_id must be str, not NoneType$"),
        (lambda f: toolfilter_fast.glob_match(1, "x"), r"^pattern must be str, not int$"),
        (lambda f: toolfilter_fast.glob_match("x", b"x"), r"^s must be str, not bytes$"),
        (lambda f: toolfilter_fast.fold_loose(None), r"^s must be str, not NoneType$"),
        (lambda f: f.static_filter([Tool("s", "a")], threads="2"), r"threads"),
    ],
)
def test_non_str_ids_and_names_are_type_errors_naming_the_position(fast_filter, call, message):
    with pytest.raises(TypeError, match=message):
        call(fast_filter)


def test_threads_argument_is_checked_and_capped(fast_filter):
    tools = [Tool("s", f"t{i}") for i in range(20_000)] + [Tool("s", "d")]
    want = [True] * 20_000 + [False]
    # Out of range is a ValueError naming the argument, whatever the size (-1
    # and 2**64 were OverflowErrors); the reference says the same words.
    ref = reference.compile(include=list(fast_filter.include), exclude=list(fast_filter.exclude))
    for bad in (0, -1, -(2**70), 2**64, 2**64 - 1, sys.maxsize + 1):
        for f in (fast_filter, ref):
            with pytest.raises(ValueError, match=r"^threads must be None \(every core\) or an int from 1 to sys\.maxsize, not ") as raised:
                f.static_mask(tools[:3], threads=bad)
            assert str(raised.value).endswith(f"not {bad!r}")
    # A huge request is capped (it used to spawn a thread each, or abort the
    # process allocating a queue of 2**41 slots).
    for threads in (5_000, 2**40, sys.maxsize):
        assert fast_filter.static_mask(tools, threads=threads) == want
        assert fast_filter.static_mask(tools[-100:], threads=threads) == want[-100:]


def test_str_subclasses_are_matched_by_their_text():
    # The core reads a str subclass's characters; none of its methods is called.
    class Sneaky(str):
        def __eq__(self, other):
            return True

        def __hash__(self):
            return 0

        def __str__(self):
            return "github"

        def lower(self):
            return "github"

    f = toolfilter_fast.compile(include=["github/*"], exclude=[Sneaky("*/DELETE*")])
    assert not f.visible(Tool(Sneaky("gitlab"), "x"))
    assert f.visible(Tool("github", Sneaky("x")))
    assert not f.visible(Tool("github", Sneaky("delete_it")))
    assert f.static_mask([Tool(Sneaky("gitlab"), "x"), Tool("github", Sneaky("delete_it"))]) == [False, False]


# --- objects that are not tools ------------------------------------------------------


class RaisingName:
    server_id = "s"

    def __init__(self, exc):
        self.exc = exc

    @property
    def name(self):
        raise self.exc


@pytest.mark.parametrize("not_a_tool", [5, None, "s/x", ("s", "x"), {"server_id": "s", "name": "x"}, Duck])
def test_non_tools_in_a_batch_are_type_errors(impl, not_a_tool):
    f = impl.compile(include=["s/*"])
    batch = [impl.Tool("s", "a"), not_a_tool]
    for call in (f.filter, f.static_filter, f.mask, f.static_mask):
        with pytest.raises(TypeError, match=r"(tools\[1\]: expected a Tool)"):
            call(batch)
    with pytest.raises(TypeError):
        f.visible(not_a_tool)


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt(), SystemExit(3), LookupError("x")])
def test_a_property_that_raises_propagates_as_is(impl, exc):
    # Regression: the batch path turned every error of a property into a
    # TypeError, KeyboardInterrupt included; the scalar path let it through.
    f = impl.compile(include=["s/*"])
    for call in (f.filter, f.static_filter, f.mask, f.static_mask):
        with pytest.raises(type(exc)):
            call([impl.Tool("s", "a"), RaisingName(exc)])
        # Past the first blocks, while worker threads match what was read.
        with pytest.raises(type(exc)):
            call([impl.Tool("s", "a")] * 10_000 + [RaisingName(exc)], threads=2)
    with pytest.raises(type(exc)):
        f.visible(RaisingName(exc))
    assert f.static_mask([impl.Tool("s", "a")] * 10_000, threads=2) == [True] * 10_000


def test_batch_inputs_may_be_any_iterable_but_not_a_non_iterable(impl):
    f = impl.compile(include=["s/*"])
    tools = [impl.Tool("s", "a"), impl.Tool("t", "b")]
    assert f.filter(iter(tools)) == f.filter(tuple(tools)) == f.filter(t for t in tools) == tools[:1]
    with pytest.raises(TypeError):
        f.filter(5)


# --- hostile pattern functions ---------------------------------------------------------


def test_a_function_cannot_mutate_the_filter():
    holder = {}
    attempts = []

    def meddle(tool, ctx):
        f = holder["f"]
        for action in (
            lambda: setattr(f, "_static", None),
            lambda: delattr(f, "_exclude"),
            lambda: f.include.append("x/*"),
            lambda: setattr(f, "include", ("*",)),
        ):
            try:
                action()
            except (AttributeError, TypeError) as err:
                attempts.append(type(err).__name__)
        return True

    include = ["s/*", meddle]
    f = toolfilter_fast.compile(include=include, exclude=["*/d*"])
    holder["f"] = f
    include.append("*")  # changing the list compiled from changes nothing either
    assert f.visible(Tool("x", "y")) is True  # meddle returned True
    assert attempts == ["AttributeError"] * 4
    assert f.include == ("s/*", meddle)
    assert not f.visible(Tool("s", "delete"))
    assert f.static_mask([Tool("s", "a"), Tool("q", "a")]) == [True, True]


def _mutating(tools, extra):
    def fn(tool, ctx):
        if tool.name == "trigger":
            tools.insert(0, extra)
            tools.append(extra)
            del tools[1:3]
        return False
    return fn


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_a_function_mutating_the_batch_does_not_tear_the_answer(threads):
    # Regression: a batch read the caller's list again after judging, so a
    # pattern function that inserted a hidden tool shifted it into the answer.
    hidden = Tool("s", "delete_repo")
    tools = [Tool("s", "trigger")] + [Tool("s", f"t{i}") for i in range(20_000)]
    snapshot = list(tools)
    f = toolfilter_fast.compile(exclude=["*/delete_*", _mutating(tools, hidden)])
    want_mask = [f.visible(t) for t in snapshot]
    want = [t for t, keep in zip(snapshot, want_mask, strict=True) if keep]
    tools[:] = snapshot
    got = f.filter(tools, threads=threads)
    assert hidden not in got
    assert got == want
    tools[:] = snapshot
    assert f.mask(tools, threads=threads) == want_mask


def test_a_property_mutating_the_batch_does_not_tear_the_answer():
    hidden = Tool("s", "delete_repo")
    tools = []

    class Mutator:
        server_id = "s"

        @property
        def name(self):
            tools.insert(0, hidden)
            return "mutator"

    tools.extend([Tool("s", "a"), Mutator(), Tool("s", "b")])
    f = toolfilter_fast.compile(exclude=["*/delete_*"])
    got = f.static_filter(tools)
    assert [getattr(t, "name", None) for t in got] == ["a", "mutator", "b"]


def test_another_thread_mutating_the_batch_does_not_tear_the_answer():
    hidden = Tool("s", "delete_repo")
    tools = [Tool("s", f"t{i}") for i in range(200_000)]
    f = toolfilter_fast.compile(exclude=["*/delete_*"])
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            tools.insert(0, hidden)
            del tools[0]

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(5):
            got = f.static_filter(tools, threads=2)
            assert hidden not in got
            assert len(got) == 200_000
    finally:
        stop.set()
        thread.join()


class _Allocated:
    """An object whose allocation counts toward a collection (no free list)."""


@contextlib.contextmanager
def _collecting_at_every_allocation(callback):
    """Runs the body with ``callback`` in ``gc.callbacks`` and a threshold of
    one allocation, both undone after."""
    old_threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    try:
        gc.set_threshold(1)
        yield
    finally:
        gc.set_threshold(*old_threshold)
        gc.callbacks.remove(callback)


def _collections_mutate(tools, extra):
    """A gc callback that inserts ``extra`` at the front of ``tools`` once, when
    a collection starts while the calling frame has set ``armed``."""
    def callback(phase, info):
        if phase == "start" and sys._getframe(1).f_locals.get("armed") and extra not in tools:
            tools.insert(0, extra)
    return callback


@pytest.mark.parametrize("threads", [1, 2])
def test_a_collection_cannot_shift_a_batch_read_in_place(threads):
    # A batch reads the caller's list in place. The one allocation its reading
    # can make is the exception of a name with a lone surrogate, and on
    # CPython before 3.12 an allocation may start the cyclic collector, whose
    # callbacks and finalizers are Python code. The collector is paused while
    # the batch reads, so that code runs only once the answer's objects are
    # held: the answer is about the list as it was given.
    hidden = Tool("s", "delete_repo")
    tools = [Tool("s", f"t{i}") for i in range(20_000)]
    tools[10_000] = Tool("s", "bad\ud800")
    given_tools = list(tools)
    f = toolfilter_fast.compile(exclude=["*/delete_*"])
    select = f._static.select_tools
    with _collecting_at_every_allocation(_collections_mutate(tools, hidden)):
        armed = True  # read by the callback through the frame
        got = select(tools, "items", None, False, threads)
        mutated_during = tools[0] is hidden
        # An allocation after the batch starts a collection: the callback works.
        _Allocated()
        armed = False  # noqa: F841
    assert tools[0] is hidden
    assert not mutated_during
    assert got == given_tools
    assert gc.isenabled()


def test_a_collection_cannot_change_patterns_while_they_are_read():
    # Compiling reads a list of patterns through item pointers taken first;
    # reading a pattern with a lone surrogate allocates an exception, which
    # may start the collector, whose callbacks are Python code. The collector
    # is paused while the patterns are read: the filter is compiled from the
    # list as it was given, and a callback's change to it (here once the
    # read is done) changes nothing compiled.
    everything = "*/*"
    patterns = [f"*/block_{i}" for i in range(3_000)]
    patterns[1_500] = "*/bad\ud800"
    given = tuple(patterns)
    include = ["*"] * 2_000
    _core.StaticBuild([], [])  # the core has looked up re.Pattern (an import runs code)
    with _collecting_at_every_allocation(_collections_mutate(patterns, everything)):
        armed = True  # read by the callback through the frame
        build = _core.StaticBuild(include, patterns)
        kept = [_Allocated() for _ in range(5)]  # a collection by now, surely
        armed = False  # noqa: F841
    assert kept and patterns[0] == everything
    assert build.sources("exclude") == given
    static = build.finish([], [], False)
    assert static.outcome("s", "fine") == 1 and static.outcome("s", "block_7") == 0
    assert gc.isenabled()


def test_a_batch_leaves_the_collector_as_it_found_it():
    f = toolfilter_fast.compile(exclude=["*/delete_*"])
    tools = [Tool("s", "a"), Tool("s", "delete_x")]
    assert gc.isenabled()
    assert f.static_filter(tools) == tools[:1]
    assert gc.isenabled()
    with pytest.raises(TypeError, match=r"tools\[1\]: expected a Tool"):
        f.static_filter([tools[0], object()])
    assert gc.isenabled()
    with pytest.raises(TypeError, match=r"pairs\[1\] must be"):
        f.static_mask_pairs([("s", "a"), "s/a"])
    assert gc.isenabled()
    gc.disable()
    try:
        assert f.static_mask_columns(["s", "s"], ["a", "delete_x"]) == [True, False]
        assert f.static_filter([object.__new__(type("T", (), {"server_id": "s", "name": "a"}))])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_list_subclass_is_read_through_its_iterator():
    class Reversed(list):
        def __iter__(self):
            return iter(list(list.__iter__(self))[::-1])
    f = toolfilter_fast.compile(exclude=["*/delete_*"])
    tools = Reversed([Tool("s", "a"), Tool("s", "delete_x"), Tool("s", "b")])
    assert f.static_filter(tools) == [tools[2], tools[0]]
    assert f.static_mask(tools) == [True, False, True]


def test_functions_may_reenter_the_filter():
    depth = []

    def nested(tool, ctx):
        # Re-enters every entry point of the same filter from inside a call.
        depth.append(1)
        if len(depth) > 3:
            return True
        inner = [Tool("s", "a"), Tool("s", "d_x"), Tool("q", "a")]
        assert f.visible(Tool("s", "a"), ctx) is True
        assert f.filter(inner, ctx) == [inner[0], inner[2]]
        assert f.static_mask(inner) == [True, False, True]
        assert f.mask(inner * 5000, ctx, threads=2) == [True, False, True] * 5000
        return True

    f = toolfilter_fast.compile(include=["s/*", nested], exclude=["*/d_*"])
    assert f.visible(Tool("q", "z"))
    assert len(depth) >= 4


def test_unbounded_reentry_fails_closed_where_it_breaks():
    inner = []

    def recurse(tool, ctx):
        inner.append(f.visible(tool, ctx))  # until RecursionError, an Exception
        return True

    f = toolfilter_fast.compile(include=["s/*", recurse])
    assert f.visible(Tool("q", "z"))
    # The deepest call failed closed; every call above it saw that and went on.
    assert len(inner) > 10 and inner[0] is False and all(inner[1:])
    assert f.static_mask([Tool("s", "a"), Tool("q", "z")]) == [True, True]


def test_a_sleeping_function_holds_no_lock():
    # One thread's pattern function waits until another thread has used the
    # same filter (scalar and a batch on two threads) and the same
    # catalog. If any of them held a lock across the call, this would time out.
    slow_started, other_done = threading.Event(), threading.Event()
    waited = []

    def slow(tool, ctx):
        slow_started.set()
        waited.append(other_done.wait(timeout=60))
        return True

    f = toolfilter_fast.compile(include=["s/*", slow])
    catalog = ToolCatalog(f)
    catalog.refresh("s", [Tool("s", "a")])
    catalog.refresh("q", [Tool("q", "slow")])

    def other():
        assert slow_started.wait(timeout=60)
        assert f.visible(Tool("s", "a"))
        assert f.static_mask([Tool("s", "a")] * 50_000, threads=2) == [True] * 50_000
        assert catalog.resolve("s", "a") == Tool("s", "a")
        catalog.refresh("s", [Tool("s", "a"), Tool("s", "b")])
        other_done.set()

    first = threading.Thread(target=lambda: catalog.list_tools())
    first.start()
    second = threading.Thread(target=other)
    second.start()
    second.join(timeout=120)
    first.join(timeout=120)
    assert waited == [True]


class Custom(BaseException):
    pass


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, GeneratorExit, Custom])
def test_base_exceptions_propagate_from_every_path_and_leave_no_damage(exc):
    def boom(tool, ctx):
        if tool.name == "boom":
            raise exc()
        return False

    f = toolfilter_fast.compile(exclude=["*/d*", boom])
    tools = [Tool("s", f"t{i}") for i in range(20_000)] + [Tool("s", "boom")]
    catalog = ToolCatalog(f)
    catalog.refresh("s", tools)
    for call in (
        lambda: f.visible(tools[-1]),
        lambda: f.filter(tools),
        lambda: f.filter(tools, threads=2),
        lambda: f.mask(tools, indices=True),
        lambda: catalog.list_tools(),
        lambda: catalog.resolve("s", "boom"),
    ):
        with pytest.raises(exc):
            call()
    # Nothing is left half-done: the same filter answers as before.
    assert f.filter(tools[:-1]) == tools[:-1]
    assert f.static_mask(tools) == [True] * len(tools)
    assert catalog.resolve("s", "t5") == tools[5]


def test_odd_return_values_and_exceptions_fail_closed(impl):
    class BadBool:
        def __bool__(self):
            raise RuntimeError("never asked")

    class BadError(Exception):
        def __str__(self):
            raise RuntimeError("never formatted")

    def bad_bool(tool, ctx):
        return BadBool()

    def bad_error(tool, ctx):
        raise BadError()

    for fn in (bad_bool, bad_error):
        assert not impl.compile(include=[fn]).visible(impl.Tool("s", "x"))
        assert not impl.compile(exclude=[fn]).visible(impl.Tool("s", "x"))


def test_a_function_refreshing_the_catalog_while_it_lists():
    f = toolfilter_fast.compile(exclude=[lambda tool, ctx: churn(tool)])
    catalog = ToolCatalog(f)

    def churn(tool):
        catalog.refresh("new", [Tool("new", tool.name)])
        catalog.remove("b")
        return False

    catalog.refresh("a", [Tool("a", "x"), Tool("a", "y")])
    catalog.refresh("b", [Tool("b", "z")])
    # The listing reads the snapshot it started with.
    assert [t.name for t in catalog.list_tools()] == ["x", "y", "z"]
    assert catalog.server_ids() == ["a", "new"]
    with pytest.raises(ToolNotFoundError):
        catalog.resolve("b", "z")


# --- pickles from other versions --------------------------------------------------------


class _Pickled:
    """Stands in for a ToolFilter pickled by another release."""

    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return (_rebuild, self.args)


def test_pickle_carries_a_format_and_the_source_patterns():
    f = toolfilter_fast.compile(include=["s/*", ("r", re.compile("^x"))], exclude=["*/d*"])
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        g = pickle.loads(pickle.dumps(f, protocol=protocol))
        assert g.include == f.include and g.exclude == f.exclude
    assert f.__reduce__() == (_rebuild, (ToolFilter, list(f.include), list(f.exclude), PICKLE_FORMAT))
    for clone in (copy.copy(f), copy.deepcopy(f)):
        assert clone.static_mask([Tool("s", "a"), Tool("s", "d")]) == [True, False]


def test_pickle_from_an_older_release_loads():
    # Before the format number, a pickle carried (cls, include, exclude) only.
    data = pickle.dumps(_Pickled(ToolFilter, ["s/*"], ["*/d*"]))
    g = pickle.loads(data)
    assert g.static_mask([Tool("s", "a"), Tool("s", "d"), Tool("q", "a")]) == [True, False, False]


@pytest.mark.parametrize("args", [
    (ToolFilter, ["s/*"], [], PICKLE_FORMAT + 1),
    (ToolFilter, ["s/*"], [], 99, {"groups": []}),
    (ToolFilter, ["s/*"], [], "1"),
    (ToolFilter, ["s/*"], [], 0),
])
def test_pickle_from_a_newer_release_is_refused_clearly(args):
    data = pickle.dumps(_Pickled(*args))
    with pytest.raises(ValueError, match=r"cannot unpickle this ToolFilter: it was pickled in format .*reads formats 1 to 1"):
        pickle.loads(data)


def test_a_tampered_pickle_is_checked_like_compile():
    data = pickle.dumps(_Pickled(ToolFilter, ["ok/*", "x/"], [], PICKLE_FORMAT))
    with pytest.raises(PatternError, match=r"include\[1\]: empty tool segment"):
        pickle.loads(data)


# Written by this release before the package was split into subpackages, with
# protocol 2, so the module paths they name stand in the bytes: a pickle keeps
# naming the module its class (or its rebuild function) was found in. (Group
# pickles of that time named two modules of a layout no release had, which
# are gone: ``_group_model`` and ``_reference_groups``.)
_PICKLES_BEFORE_THE_SPLIT = {
    "ToolFilter": (
        b'\x80\x02ctoolfilter_fast.filter\n_rebuild\nq\x00(ctoolfilter_fast.filter\nToolFilter\nq'
        b'\x01]q\x02(X\x03\x00\x00\x00s/*q\x03X\x01\x00\x00\x00*q\x04cre\n_compile\nq\x05X\x06\x00'
        b'\x00\x00^list_q\x06K"\x86q\x07Rq\x08\x86q\te]q\nX\x04\x00\x00\x00*/d*q\x0baK\x01tq\x0cRq\r.'
    ),
    "reference ToolFilter": (
        b'\x80\x02ctoolfilter_fast.reference\n_rebuild\nq\x00]q\x01X\x03\x00\x00\x00s/*q\x02a]q'
        b'\x03X\x04\x00\x00\x00*/d*q\x04a\x86q\x05Rq\x06.'
    ),
}


def _pickled_today(kind):
    """What each of those pickles holds, built now."""
    return {
        "ToolFilter": lambda: toolfilter_fast.compile(
            include=["s/*", ("*", re.compile("^list_", re.I))], exclude=["*/d*"]),
        "reference ToolFilter": lambda: reference.compile(include=["s/*"], exclude=["*/d*"]),
    }[kind]()


@pytest.mark.parametrize("kind", sorted(_PICKLES_BEFORE_THE_SPLIT))
def test_a_pickle_written_before_the_package_split_loads(kind):
    loaded, expected = pickle.loads(_PICKLES_BEFORE_THE_SPLIT[kind]), _pickled_today(kind)
    assert type(loaded) is type(expected)
    # Compared by what they do.
    tools = [Tool("s", "a"), Tool("s", "d"), Tool("q", "list_x")]
    assert (loaded.include, loaded.exclude) == (expected.include, expected.exclude)
    assert loaded.static_mask(tools) == expected.static_mask(tools)


def _pickle_globals(obj):
    return [arg for op, arg, _ in pickletools.genops(pickle.dumps(obj, protocol=2))
            if op.name == "GLOBAL"]


def test_a_pickle_names_the_paths_that_earlier_releases_read():
    # An older release reaches `_rebuild` (which refuses a newer format clearly)
    # only if a pickle names modules that it has: the packages' public paths.
    assert _pickle_globals(_pickled_today("ToolFilter")) == [
        "toolfilter_fast.filter _rebuild", "toolfilter_fast.filter ToolFilter", "re _compile"]
    groups = [("dynamic", ["web__*"], ["browse"])]
    made = toolfilter_fast.GroupFilter([toolfilter_fast.ToolFilterGroup(*g) for g in groups])
    assert _pickle_globals(made) == [
        "toolfilter_fast.groups GroupFilter", "toolfilter_fast.groups ToolFilterGroup"]
    made = reference.GroupFilter([reference.ToolFilterGroup(*g) for g in groups])
    assert _pickle_globals(made) == [
        "toolfilter_fast.reference GroupFilter", "toolfilter_fast.groups ToolFilterGroup"]
    assert _pickle_globals(_pickled_today("reference ToolFilter")) == [
        "toolfilter_fast.reference _rebuild"]


def test_recursion_limit_is_untouched():
    # The hostile-function tests above recurse until RecursionError; they must
    # not leave the interpreter with a changed limit.
    assert sys.getrecursionlimit() >= 1000


# --- tool groups (landed on main while this was written) ------------------------------


def _groups(module):
    return module.GroupFilter([
        module.ToolFilterGroup("always", ["gh__read_*", "*__list"]),
        module.ToolFilterGroup("dynamic", ["fs__*"], ["files", "ΣΊΣΥΦΟΣ"]),
    ])


def test_groups_judge_a_private_copy_of_the_names():
    # Regression: visible_names read the caller's list, released the GIL, then
    # picked the kept names by position; a str whose __hash__ (asked while the
    # core tested MCP origin) inserted a hidden name shifted it into the answer.
    from toolfilter_fast.groups import GroupFilter

    g = _groups(toolfilter_fast.groups)
    assert isinstance(g, GroupFilter)
    names: list[str] = []

    class Mutating(str):
        def __hash__(self):
            names.insert(0, "gh__delete_repo")
            return str.__hash__(self)

    mcp = {"gh__read_a", "gh__read_b", "gh__delete_repo", "fs__rm"}
    for call, want in (
        (lambda n: g.visible_names(n, "hi", mcp), ["gh__read_a", "gh__read_b"]),
        (lambda n: g.excluded_names(n, "hi", mcp), ["fs__rm"]),
    ):
        names[:] = [Mutating("gh__read_a"), "gh__read_b", "fs__rm"]
        assert call(names) == want

    class MutatingTool(dict):
        def get(self, key, default=None):
            tools.insert(0, {"name": "gh__delete_repo", "origin": "mcp"})
            return super().get(key, default)

    tools = [MutatingTool(name="gh__read_a", origin="mcp"), {"name": "x", "origin": "builtin"}]
    got = g.visible_tools(tools, "hi")
    assert [t["name"] for t in got] == ["gh__read_a", "x"]


def test_groups_with_another_thread_mutating_the_names():
    g = _groups(toolfilter_fast.groups)
    names = [f"gh__read_{i}" for i in range(200_000)]
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            names.insert(0, "gh__delete_repo")
            del names[0]

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(5):
            got = g.visible_names(names, "hi", {"gh__delete_repo", *names[:10]})
            assert "gh__delete_repo" not in got
    finally:
        stop.set()
        thread.join()


def test_groups_at_size_and_with_wrong_types():
    g = _groups(toolfilter_fast.groups)
    message = "x" * MB10 + " FILES "
    names = [f"gh__read_{i}" for i in range(100_000)] + ["fs__" + "a" * MB10, "gh__write", "a" * MB10 + "__list"]
    got = g.visible_names(names, message, frozenset(names))
    assert got == names[:100_001] + names[-1:]
    assert g.visible_names(names[-3:], "no keyword here", frozenset(names)) == names[-1:]
    assert toolfilter_fast.groups.group_glob_match("a*" + "*" * 10_000, "a" + "*" * 10_000)
    assert not toolfilter_fast.groups.group_glob_match("a*" + "*" * 10_000, "a" + "b" * 10_000)
    for call, message in (
        (lambda: g.visible_names(["a", 5], "m", set()), r"^names\[1\] must be str, not int$"),
        (lambda: g.visible_names(["a"], b"m", set()), r"^message must be str, not bytes$"),
        (lambda: g.visible_tools([{"name": None, "origin": "mcp"}], "m"), r"^tools\[0\]\['name'\] must be str"),
        (lambda: g.visible_tools([5], "m"), r"^tools\[0\]: expected a Tool"),
    ):
        with pytest.raises(TypeError, match=message):
            call()


@pytest.mark.parametrize("chars", list(UNICODE_CASES.values()), ids=list(UNICODE_CASES))
def test_groups_unicode_fast_equals_reference(chars):
    fast, ref = _groups(toolfilter_fast.groups), _groups(reference)
    names = [f"gh__read_{chars}", f"fs__{chars}", f"{chars}__list", f"gh__{chars}"]
    for message in (f"say {chars}", "FILES", "σίσυφος", f"x{chars.upper()}files"):
        if any(unicodedata.category(c) == "Cn" for c in message):
            continue  # keywords are lower-cased: Unicode versions may differ there
        assert fast.visible_names(names, message, set(names)) == ref.visible_names(names, message, set(names))


# --- framework adapters (landed on main while this was written) -----------------------


def test_adapters_keep_only_what_they_judged_and_let_base_exceptions_through():
    # The adapters' shared path converts into private lists and keeps tools by
    # identity; a pattern function that shifts the framework's list cannot
    # smuggle a hidden tool in, and a BaseException is not swallowed as a failure.
    from toolfilter_fast.adapters import _common

    framework_tools = ["a", "trigger", "b"]

    def shift(tool, ctx):
        if tool.name == "trigger":
            framework_tools.insert(0, "delete_repo")
        if tool.name == "stop":
            raise KeyboardInterrupt
        return False

    f = toolfilter_fast.compile(exclude=["*/delete_*", shift])
    kept = _common.keep_visible(f, "s", framework_tools, lambda n: Tool("s", n), lambda: None, where="test")
    assert kept == ["a", "trigger", "b"]
    with pytest.raises(KeyboardInterrupt):
        _common.keep_visible(f, "s", ["a", "stop"], lambda n: Tool("s", n), lambda: None, where="test")
    with pytest.raises(KeyboardInterrupt):
        _common.visible_fail_closed(f, "s", "stop", lambda n: Tool("s", n), lambda: None, where="test")


def test_scalar_and_batch_call_the_same_functions(impl):
    # Found by the long Hypothesis run: with an include list without functions,
    # `filter` hid a tool it did not statically include without calling the
    # exclude functions, while `visible` called them first; an exclude function
    # raising a BaseException therefore escaped one and not the other. Both
    # now follow the spec's "never called when the static patterns decided".
    calls = []

    def audit(tool, ctx):
        calls.append(tool.name)
        if tool.name == "z":
            raise Custom
        return False

    f = impl.compile(include=["s/*", ("r", re.compile("^ok"))], exclude=[audit])
    outside, inside, by_regex = impl.Tool("x", "z"), impl.Tool("s", "a"), impl.Tool("r", "ok")
    assert f.visible(outside) is False
    assert f.filter([outside]) == [] and f.mask([outside], indices=True) == []
    assert calls == []
    assert f.visible(inside) and f.visible(by_regex)
    assert f.filter([outside, inside, by_regex]) == [inside, by_regex]
    assert calls == ["a", "ok", "a", "ok"]
    with pytest.raises(Custom):
        f.visible(impl.Tool("s", "z"))
    with pytest.raises(Custom):
        f.filter([impl.Tool("s", "z")])
