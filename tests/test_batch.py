"""Batch forms, pickling and sharing: each equal to the scalar answers."""

from __future__ import annotations

import pickle
import re
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import Tool, reference

from examples_budget import EQUIVALENCE_EXAMPLES
from test_filter_properties import any_pattern, build, contexts, tools


@settings(max_examples=EQUIVALENCE_EXAMPLES // 4)
@given(
    st.lists(any_pattern, max_size=4), st.lists(any_pattern, max_size=4),
    st.lists(tools, max_size=12), contexts, st.sampled_from([None, 1, 2, 3]),
)
def test_batches_equal_scalar_and_reference(include, exclude, tool_list, ctx, threads):
    fast, _ = build(toolfilter_fast, include, exclude)
    ref, _ = build(reference, include, exclude)
    if fast is None:
        return
    static = [ref.static_visible(t) for t in tool_list]
    dynamic = [ref.visible(t, ctx) for t in tool_list]
    kept = [i for i, keep in enumerate(static) if keep]
    assert fast.static_mask(tool_list, threads=threads) == static
    assert fast.static_mask(tool_list, indices=True, threads=threads) == kept
    assert fast.mask(tool_list, ctx, threads=threads) == dynamic
    assert fast.mask(tool_list, ctx, indices=True) == ref.mask(tool_list, ctx, indices=True)
    assert fast.static_filter(tool_list, threads=threads) == [tool_list[i] for i in kept]
    assert fast.filter(tool_list, ctx, threads=threads) == ref.filter(tool_list, ctx)
    pairs = [(t.server_id, t.name) for t in tool_list]
    assert fast.static_mask_pairs(pairs, threads=threads) == static
    assert fast.static_mask_pairs(pairs, indices=True) == kept
    columns = ([t.server_id for t in tool_list], [t.name for t in tool_list])
    assert fast.static_mask_columns(*columns, threads=threads) == static
    assert ref.static_mask_columns(*columns) == static


def test_batch_returns_the_same_objects_in_input_order():
    tool_list = [Tool(f"s{i % 7}", f"t{i}") for i in range(100_000)]
    f = toolfilter_fast.compile(include=["s1/*", "s2/*", "*/t9*"], exclude=["*/T99*"])
    got = f.static_filter(tool_list)              # big enough to use every core
    want = [t for t in tool_list if f.static_visible(t)]
    assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True))
    assert f.static_filter(iter(tool_list), threads=1) == got  # any iterable


def test_batch_with_regex_calls_back_only_where_needed():
    f = toolfilter_fast.compile(
        include=["a/*", ("b", re.compile("^keep"))], exclude=[("A", re.compile("drop"))],
    )
    tool_list = [Tool("a", "x"), Tool("a", "Drop-it"), Tool("b", "keep_1"), Tool("b", "no"),
                 Tool("c", "keep")]
    assert f.static_mask(tool_list) == [True, False, True, False, False]


def _visible_count(f: toolfilter_fast.ToolFilter) -> int:
    return len(f.static_filter([Tool("gh", n) for n in ("read", "Delete-Repo", "x")]))


def _admins(tool, ctx):
    return ctx == "admin"


def test_filters_pickle_by_rebuilding():
    f = toolfilter_fast.compile(
        include=["gh/*", ("fs", re.compile("^read")), _admins], exclude=["*/delete_*"],
    )
    g = pickle.loads(pickle.dumps(f))
    assert type(g) is toolfilter_fast.ToolFilter
    assert g.include == f.include and g.exclude == f.exclude
    probe = [Tool("gh", "Delete-Repo"), Tool("fs", "read_x"), Tool("zz", "q")]
    assert g.mask(probe, "admin") == f.mask(probe, "admin") == [False, True, True]
    r = pickle.loads(pickle.dumps(reference.compile(include=["gh/*"])))
    assert r.static_mask(probe) == [True, False, False]


def test_filter_in_a_process_pool():
    f = toolfilter_fast.compile(exclude=["*/delete_*"])
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(_visible_count, [f, f])) == [2, 2]


def test_filter_shared_between_threads():
    f = toolfilter_fast.compile(include=["s*/*"], exclude=["*/*9"])
    tool_list = [Tool(f"s{i % 13}", f"t{i}") for i in range(20_000)]
    want = f.static_mask(tool_list, threads=1)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: f.static_mask(tool_list), range(8)))
        scalars = list(pool.map(lambda t: f.static_visible(t), tool_list[:2000]))
    assert all(r == want for r in results)
    assert scalars == want[:2000]


def test_server_repeated_across_block_boundaries():
    # Regression: a server id object shared by neighbouring tools is copied once per
    # block; a 150k batch crosses two block boundaries inside one server's run.
    server = "srv"
    tool_list = [Tool(server, f"t{i}") for i in range(150_000)]
    tool_list += [Tool("other", "t1"), Tool(server, "t2")]
    f = toolfilter_fast.compile(include=["srv/t1*", "other/*"], exclude=["*/T13*"])
    want = [f.static_visible(t) for t in tool_list]
    for threads in (1, 2):
        assert f.static_mask(tool_list, threads=threads) == want
    columns = ([t.server_id for t in tool_list], [t.name for t in tool_list])
    assert f.static_mask_columns(*columns) == want


# --- the direct read of exact Tool instances (ToolLayout in rust/python/mod.rs) ---

def test_exact_tools_are_read_from_their_slots():
    from toolfilter_fast import _core, _tool

    assert _tool.FAST_READ is True
    assert _core.register_tool_class(Tool("s", "t")) is True  # the same class again


class _PropertyTool:
    """Fields that are properties, not slots: never read directly."""

    def __init__(self, server_id, name):
        self._s, self._n = server_id, name

    server_id = property(lambda self: self._s)
    name = property(lambda self: self._n)


class _SlotsWithLookup:
    __slots__ = ("name", "server_id")

    def __init__(self, server_id, name):
        self.server_id, self.name = server_id, name

    def __getattribute__(self, attr):
        value = object.__getattribute__(self, attr)
        return value.upper() if attr == "name" else value


def test_other_classes_keep_the_attribute_lookup():
    from toolfilter_fast import _core

    assert _core.register_tool_class(_PropertyTool("s", "t")) is False
    assert _core.register_tool_class(_SlotsWithLookup("s", "t")) is False
    f = toolfilter_fast.compile(include=["s/T*"])
    # The custom lookup upper-cases the name: the batch must see "T1", not "t1".
    assert f.static_mask([_SlotsWithLookup("s", "t1"), _PropertyTool("s", "T2")]) == [True, True]


class _RenamingTool(Tool):
    """A subclass whose name property (added below) hides the slot."""

    __slots__ = ()


def test_subclass_with_a_property_is_not_read_from_the_slot():
    tool = _RenamingTool("s", "original")
    _RenamingTool.name = property(lambda self: "renamed")  # after __init__ set the slot
    f = toolfilter_fast.compile(include=["s/renamed"])
    assert f.static_mask([tool] * 3, threads=1) == [True] * 3
    assert f.static_mask([tool] * 20_000, threads=2) == [True] * 20_000


class _EmptyingTool:
    """A tool whose name property empties the list being read and fills it
    with other tools: the items read ahead of it were the list's last
    references, freed by then."""

    def __init__(self, batch, name):
        self.batch, self._n, self.server_id = batch, name, "s"

    @property
    def name(self):
        self.batch[:] = [Tool("other", f"x{i}") for i in range(len(self.batch))]
        return self._n


@pytest.mark.parametrize("at", [0, 5, 40, 9_000])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_property_emptying_the_list_does_not_change_what_is_read(at, threads):
    f = toolfilter_fast.compile(include=["s/keep_*"], exclude=["*/keep_3*"])
    ref = reference.compile(include=["s/keep_*"], exclude=["*/keep_3*"])
    names = [f"keep_{i}" if i % 2 else f"drop_{i}" for i in range(10_000)]
    names[at] = "keep_odd"
    want = [ref.static_visible(Tool("s", name)) for name in names]

    def batch():  # fresh tools that only the list holds
        tools = [Tool("s", name) for name in names]
        tools[at] = _EmptyingTool(tools, names[at])
        return tools

    assert f.static_mask(batch(), threads=threads) == want
    tools = batch()
    given = list(tools)
    kept = f.static_filter(tools, threads=threads)
    assert tools[at].server_id == "other"  # the property did empty the list
    assert kept == [t for t, w in zip(given, want, strict=True) if w]


def test_tampered_tools_get_the_usual_errors():
    unset = Tool("s", "t")
    object.__delattr__(unset, "name")
    not_str = Tool("s", "t")
    object.__setattr__(not_str, "server_id", 7)
    f = toolfilter_fast.compile(include=["s/*"])
    for bad, message in ((unset, r"tools\[1\]: expected a Tool"), (not_str, r"tools\[1\]\.server_id")):
        for threads in (1, 2):
            with pytest.raises(TypeError, match=message):
                f.static_mask([Tool("s", "ok"), bad] + [Tool("s", "x")] * 20_000, threads=threads)


def test_str_subclass_fields_are_read_by_value():
    class Name(str):
        pass

    f = toolfilter_fast.compile(include=["s/ab*"], exclude=["*/AB-X"])
    tools_ = [Tool(Name("s"), Name("abc")), Tool("s", Name("ab.x")), Tool("s", "q")]
    assert f.static_mask(tools_) == [True, False, False]
    assert f.static_mask(tools_) == reference.compile(
        include=["s/ab*"], exclude=["*/AB-X"]).static_mask(tools_)
