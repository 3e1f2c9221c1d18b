"""ToolFilter.static_mask_arrow: two Arrow string columns, read in place, answer
as static_mask_columns does (a null server id or name is hidden), whatever the
producer, the string layout or the chunking."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast

pa = pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")

from examples_budget import EQUIVALENCE_EXAMPLES  # noqa: E402
from test_filter_properties import HOSTILE, any_pattern, build  # noqa: E402

#: Arrow strings are UTF-8: no lone surrogates. Long strings cross the
#: twelve bytes a string view keeps inline.
ARROW_HOSTILE = [c for c in HOSTILE if not 0xD800 <= ord(c) <= 0xDFFF]
arrow_text = st.one_of(
    st.text(st.sampled_from(ARROW_HOSTILE), max_size=8),
    st.text(st.sampled_from(ARROW_HOSTILE), min_size=13, max_size=40),
    st.sampled_from(["", "github", "fs", "read_file", "Delete-Repo"]),
)
cell = st.one_of(st.none(), arrow_text)
LAYOUTS = ["string", "large_string", "string_view"]


def arrow_column(values, layout, cuts):
    """``values`` as a pyarrow array of ``layout``, or chunked at ``cuts``."""
    array = pa.array(values, type=getattr(pa, layout)())
    if not cuts:
        return array
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return pa.chunked_array([array.slice(a, b - a) for a, b in itertools.pairwise(bounds)],
                            type=array.type)


def expected(fast, servers, names):
    present = [i for i, (s, n) in enumerate(zip(servers, names, strict=True))
               if s is not None and n is not None]
    mask = fast.static_mask_columns([servers[i] for i in present], [names[i] for i in present])
    want = [False] * len(names)
    for i, keep in zip(present, mask, strict=True):
        want[i] = keep
    return want


@settings(max_examples=EQUIVALENCE_EXAMPLES // 10)
@given(
    st.lists(any_pattern, max_size=4), st.lists(any_pattern, max_size=4),
    st.lists(st.tuples(cell, cell), max_size=30),
    st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS),
    st.lists(st.integers(0, 40), max_size=3), st.lists(st.integers(0, 40), max_size=3),
    st.sampled_from([None, 1, 2, 3]),
)
def test_arrow_mask_equals_the_columns_mask(include, exclude, rows, server_layout, name_layout,
                                            server_cuts, name_cuts, threads):
    fast, _ = build(toolfilter_fast, include, exclude)
    if fast is None:
        return
    servers = [s for s, _ in rows]
    names = [n for _, n in rows]
    got = fast.static_mask_arrow(arrow_column(servers, server_layout, server_cuts),
                                 arrow_column(names, name_layout, name_cuts), threads=threads)
    assert isinstance(got, pa.BooleanArray) and got.null_count == 0
    assert got.to_pylist() == expected(fast, servers, names)


def test_a_big_catalog_on_every_core_equals_the_tools_mask():
    from toolfilter_fast.bench import workload as _workload

    tools = _workload.catalog(50_000, servers=2_000, interleaved=True)
    include = _workload.patterns(200, "include", tools)
    exclude = _workload.patterns(200, "exclude", tools)
    fast = toolfilter_fast.compile(include=include, exclude=exclude)
    servers = pa.array([t.server_id for t in tools])
    names = pa.array([t.name for t in tools], type=pa.large_string())
    assert fast.static_mask_arrow(servers, names).to_pylist() == fast.static_mask(tools)


def test_other_producers():
    f = toolfilter_fast.compile(include=["gh/*", "*/read_*"], exclude=["*/Delete*"])
    servers, names = ["gh", "fs", None, "gh", "fs"], ["x", "read_a", "read_b", "delete-it", None]
    want = [True, True, False, False, False]
    pl = pytest.importorskip("polars", reason="polars (the arrow-test extra) is not installed")
    assert f.static_mask_arrow(pl.Series(servers), pl.Series(names)).to_pylist() == want
    na = pytest.importorskip("nanoarrow", reason="nanoarrow (the arrow-test extra) is not installed")
    assert f.static_mask_arrow(na.c_array(servers, na.string()),
                               na.c_array(names, na.string())).to_pylist() == want
    duckdb = pytest.importorskip("duckdb", reason="duckdb (the arrow-test extra) is not installed")
    result = duckdb.sql("select * from (values ('gh', 'x'), ('fs', 'read_q'), ('fs', 'Delete_x')) "
                        "t(s, n)")
    table = result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.arrow()
    assert f.static_mask_arrow(table["s"], table["n"]).to_pylist() == [True, True, False]


def test_regexes_judge_the_rows_they_may_decide():
    f = toolfilter_fast.compile(include=["a/*", ("b", re.compile("^keep"))],
                                exclude=[("A", re.compile("drop"))])
    servers = pa.array(["a", "a", "b", "b", None, "b"])
    names = pa.array(["x", "Drop-it", "keep_1", "no", "keep_2", None])
    assert f.static_mask_arrow(servers, names).to_pylist() == [True, False, True, False, False,
                                                                False]


def test_wrong_input_is_refused_with_words():
    f = toolfilter_fast.compile(include=["a/*"])
    with pytest.raises(ValueError, match="differ in length"):
        f.static_mask_arrow(pa.array(["a"]), pa.array(["x", "y"]))
    with pytest.raises(TypeError, match="server_ids must be an Arrow string array"):
        f.static_mask_arrow(pa.array([1]), pa.array(["x"]))
    with pytest.raises(TypeError, match="must export Arrow data"):
        f.static_mask_arrow(["a"], pa.array(["x"]))
    with pytest.raises(TypeError, match="names must be an Arrow string array"):
        f.static_mask_arrow(pa.array(["a"]), pa.table({"n": ["x"]}))


@pytest.mark.parametrize("layout", ["string", "large_string"])
def test_invalid_utf8_is_refused_naming_the_row(layout):
    offsets = pa.array([0, 1, 3, 4], type=pa.int32() if layout == "string" else pa.int64())
    values = pa.py_buffer(b"a\xc3(b")
    bad = pa.Array.from_buffers(getattr(pa, layout)(), 3, [None, offsets.buffers()[1], values])
    f = toolfilter_fast.compile(include=["*"])
    with pytest.raises(ValueError, match=r"names\[1\] is not valid UTF-8"):
        f.static_mask_arrow(pa.array(["s", "s", "s"]), bad)
    with pytest.raises(ValueError, match=r"server_ids\[1\] is not valid UTF-8"):
        toolfilter_fast.compile().static_mask_arrow(bad, pa.array(["x", "y", "z"]))


SERVER_POOL = ["gh", "GH", "fs", "s1", "s1 ", "ΣΑΣ", "a-very-long-server-id-past-twelve", ""]


@settings(max_examples=EQUIVALENCE_EXAMPLES // 20)
@given(
    st.lists(any_pattern, max_size=4), st.lists(any_pattern, max_size=4),
    st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(SERVER_POOL)), cell), max_size=60),
    st.sampled_from(["sorted", "grouped", "unsorted"]), st.sampled_from(LAYOUTS),
    st.lists(st.integers(0, 60), max_size=3), st.sampled_from([1, 2, None]),
)
def test_server_runs_decide_as_the_object_path(include, exclude, rows, order, layout, cuts,
                                               threads):
    """Rows whose server ids come in runs (sorted, or grouped in first-met order)
    or interleaved: each server's plan is resolved once per run and found again
    by its bytes, and the mask equals the object path's, whatever the order."""
    fast, _ = build(toolfilter_fast, include, exclude)
    if fast is None:
        return
    if order == "sorted":
        rows = sorted(rows, key=lambda r: (r[0] is None, r[0] or ""))
    elif order == "grouped":
        first = {s: i for i, (s, _) in reversed(list(enumerate(rows)))}
        rows = sorted(rows, key=lambda r: first[r[0]])
    servers = [s for s, _ in rows]
    names = [n for _, n in rows]
    got = fast.static_mask_arrow(arrow_column(servers, layout, cuts),
                                 arrow_column(names, "string", []), threads=threads)
    assert got.to_pylist() == expected(fast, servers, names)
