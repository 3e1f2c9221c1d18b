"""The long fuzz of the Python API against ``reference``.

One property drives every entry point of both implementations with the same
random filters, tools, contexts and batches, and compares answers *and*
errors. CI runs it at the profile's example count; the long run is opt-in:

    TOOLFILTER_LONG_HYPOTHESIS=1 python -m pytest tests/test_fuzz_reference.py   # 100,000 examples
    TOOLFILTER_LONG_HYPOTHESIS=250000 python -m pytest tests/test_fuzz_reference.py

Characters are drawn from every Unicode category that the running Python has
assigned (unassigned ones may fold differently in Rust's newer tables: the
spec's rule), lone surrogates and the hostile alphabet of the other tests.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import PatternError, Tool, ToolCatalog, ToolNotFoundError, reference

from test_filter_properties import HOSTILE, raising, returning

_LONG = os.environ.get("TOOLFILTER_LONG_HYPOTHESIS", "")
EXAMPLES = (100_000 if _LONG in ("1", "true", "yes") else int(_LONG)) if _LONG else None


def long_settings(test):
    if EXAMPLES is None:
        return test
    return settings(
        max_examples=EXAMPLES, deadline=None, database=None,
        suppress_health_check=list(HealthCheck),
    )(test)


assigned = st.characters(exclude_categories=("Cn",))
char = st.one_of(st.sampled_from(HOSTILE), assigned, st.sampled_from(["\u200b", "\u202e", "\u0301", "\ufeff"]))
text = st.text(char, max_size=10)
segment = st.text(st.one_of(char, st.just("*")), min_size=1, max_size=6)
string_pattern = st.one_of(
    text,
    st.builds(lambda s, t: f"{s}/{t}", segment, segment),
    st.builds(lambda t: f"*/{t}", segment),
    st.sampled_from(["*", "*/*", "a*", "*a", "*a*", "a*b*c", "x/", "/x", "a:b/c", ""]),
)
regex_pattern = st.tuples(
    st.one_of(segment, st.just("*")),
    st.sampled_from(["a", "^A", "b$", "_", r"\.", "σ", "(?i)k", "", "\u200b", r"\w+\d", "^$"]).map(re.compile),
)


class Interrupt(BaseException):
    """Raised by a pattern function for some names: both sides must propagate it."""


def _by_ctx(tool, ctx):
    return isinstance(ctx, int) and (len(tool.name) + ctx) % 3 == 0


def _interrupts_on_z(tool, ctx):
    if "z" in tool.name:
        raise Interrupt
    return False


def _non_bool(tool, ctx):
    return [True] if len(tool.server_id) % 2 else None


function_pattern = st.sampled_from(
    [returning(True), returning(False), returning(1), raising, _by_ctx, _interrupts_on_z, _non_bool]
)
pattern = st.one_of(string_pattern, string_pattern, regex_pattern, function_pattern)
pattern_list = st.lists(pattern, max_size=5).map(lambda ps: ps if len(ps) % 2 else tuple(ps))


class Duck:
    def __init__(self, server_id, name):
        self.server_id = server_id
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Duck) and (self.server_id, self.name) == (other.server_id, other.name)

    __hash__ = None


tool = st.one_of(
    st.builds(Tool, text, text),
    st.builds(Tool, st.sampled_from(["a", "s", "A"]), text),
    st.builds(Duck, text, text),
)
batch_item = st.one_of(tool, tool, tool, st.sampled_from([None, 3, "s/x", Duck("s", 5)]))
contexts = st.one_of(st.none(), st.integers(0, 4))


def outcome(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or the type of what it raised (compared between sides)."""
    try:
        return ("ok", fn(*args, **kwargs))
    except (TypeError, ValueError, Interrupt, ToolNotFoundError) as err:
        return ("raised", type(err).__name__)


def same_batch_outcome(fast, ref, items):
    """Batches must agree; which error wins may differ only when a batch holds
    both a non-tool (the core reads every item first) and a function that raises
    (the reference meets them in item order)."""
    if fast[0] == ref[0] == "raised" and not all(_is_tool(i) for i in items):
        return True
    return fast == ref


def _is_tool(item):
    return isinstance(item, (Tool, Duck)) and isinstance(item.server_id, str) and isinstance(item.name, str)


@long_settings
@given(pattern_list, pattern_list, st.lists(batch_item, max_size=10), contexts,
       st.sampled_from([None, 1, 2]))
def test_every_entry_point_equals_reference(include, exclude, items, ctx, threads):
    try:
        fast = toolfilter_fast.compile(include=include, exclude=exclude)
    except PatternError as err:
        with pytest.raises(PatternError) as ref_err:
            reference.compile(include=include, exclude=exclude)
        assert str(err) == str(ref_err.value)
        assert (err.option, err.index) == (ref_err.value.option, ref_err.value.index)
        return
    ref = reference.compile(include=include, exclude=exclude)
    assert fast.include == ref.include and fast.exclude == ref.exclude

    for item in items:
        assert outcome(fast.static_visible, item) == outcome(ref.static_visible, item)
        assert outcome(fast.visible, item, ctx) == outcome(ref.visible, item, ctx)
    for name in ("static_filter", "static_mask"):
        got = outcome(getattr(fast, name), items, threads=threads)
        assert same_batch_outcome(got, outcome(getattr(ref, name), items), items), name
    for name in ("filter", "mask"):
        got = outcome(getattr(fast, name), items, ctx, threads=threads)
        assert same_batch_outcome(got, outcome(getattr(ref, name), items, ctx), items), name
    got = outcome(fast.mask, items, ctx, indices=True)
    assert same_batch_outcome(got, outcome(ref.mask, items, ctx, indices=True), items)

    tools = [t for t in items if _is_tool(t)]
    pairs = [(t.server_id, t.name) for t in tools]
    assert fast.static_mask_pairs(pairs, threads=threads) == ref.static_mask_pairs(pairs)
    columns = ([s for s, _ in pairs], [n for _, n in pairs])
    assert fast.static_mask_columns(*columns, indices=True) == ref.static_mask_columns(*columns, indices=True)

    # The catalog over each filter: the same listing and the same resolutions.
    real = [t for t in tools if isinstance(t, Tool)]
    catalogs = (ToolCatalog(fast), ToolCatalog(ref))
    for catalog in catalogs:
        for t in real:
            catalog.refresh(t.server_id, [u for u in real if u.server_id == t.server_id])
    assert outcome(catalogs[0].list_tools, ctx) == outcome(catalogs[1].list_tools, ctx)
    for t in real:
        for probe in (t.name, t.name.upper(), t.name + "x"):
            answers = [outcome(c.resolve, t.server_id, probe, ctx) for c in catalogs]
            assert answers[0] == answers[1], (t, probe)


@long_settings
@given(st.text(st.one_of(char, st.just("*")), max_size=12), st.text(char, max_size=16))
def test_glob_and_folds_equal_reference(glob, name):
    assert toolfilter_fast.glob_match(glob, name) == reference.glob_match(glob, name)
    assert toolfilter_fast.fold_loose(name) == reference.fold_loose(name)
    assert toolfilter_fast.fold_lower(name) == reference.fold_lower(name)
