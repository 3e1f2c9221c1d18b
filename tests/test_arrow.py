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
from toolfilter_fast import reference

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



@pytest.mark.parametrize("threads", [1, 2, 3, None])
def test_blocks_shared_by_threads_answer_as_the_reference(threads):
    """Rows are cut into blocks that the threads take in turn: 24,000 rows of
    hostile server ids and names (servers interleaved, so every block meets
    servers another thread met first), three chunks cut off the blocks' bounds,
    decide as the reference does, row by row."""
    import random

    from toolfilter_fast import Tool, reference

    rng = random.Random(34)
    pieces = [*ARROW_HOSTILE, "read_", "Write-", "gh", "fs", "ΣΑΣ", "İx"]
    ids = ["".join(rng.choices(pieces, k=rng.randint(0, 4))) for _ in range(600)]
    rows = 24_000
    servers = [ids[(i * 7919) % len(ids)] for i in range(rows)]
    names = ["".join(rng.choices(pieces, k=rng.randint(0, 5))) for _ in range(rows)]
    include = ["gh/*", "*/read_*", "*:*", f"{ids[3]}/*", "*/*Σ*"]
    exclude = ["*/*-*", "fs/*", f"{ids[5]}/{names[9]}", "*/İ*"]
    want = reference.compile(include=include, exclude=exclude).static_mask(
        [Tool(server_id=s, name=n) for s, n in zip(servers, names, strict=True)])
    f = toolfilter_fast.compile(include=include, exclude=exclude)
    column = arrow_column(names, "string_view", [5_001, 13_333, 20_000])
    for _ in range(2):  # the second batch starts from the plans the first kept
        got = f.static_mask_arrow(pa.array(servers), column, threads=threads).to_pylist()
        assert got == want


@pytest.mark.parametrize("threads", [1, 2, 5, None])
def test_the_first_bad_row_is_named_whichever_thread_meets_it(threads):
    """Bytes that are not UTF-8 in rows of several blocks: the error names the
    first of them by row, on any thread count, every time."""
    rows = 30_000
    good = [f"tool_{i % 977}".encode() for i in range(rows)]
    servers = pa.array([f"s{i % 313}" for i in range(rows)])
    f = toolfilter_fast.compile(include=["s1*/*"], exclude=["*/tool_9*"])
    for bad_rows in ([rows - 1], [21_000, 6_001, 25_000], [4_096, 4_095], [3_750, 11_249]):
        values = [b"x\xff" if i in bad_rows else v for i, v in enumerate(good)]
        offsets = pa.array(list(itertools.accumulate((len(v) for v in values), initial=0)),
                           type=pa.int32())
        bad = pa.Array.from_buffers(pa.string(), rows,
                                    [None, offsets.buffers()[1], pa.py_buffer(b"".join(values))])
        for _ in range(3):
            with pytest.raises(ValueError, match=rf"names\[{min(bad_rows)}\] is not valid UTF-8"):
                f.static_mask_arrow(servers, bad, threads=threads)


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


PATTERNS = st.lists(any_pattern, max_size=4)
#: Rows whose server ids repeat (so that runs and dictionary values are shared), or not.
ENCODED_ROWS = st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(SERVER_POOL), arrow_text), cell),
                        max_size=40)
KEY_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def dictionary_column(values, key_type, value_layout, null_values, offset, value_offset):
    """``values`` dictionary-encoded by hand: keys of ``key_type`` into a
    dictionary of ``value_layout`` (itself sliced by ``value_offset`` rows), the
    keys behind ``offset`` padding rows (sliced off); a null is a null key or,
    with ``null_values``, a key to a null in the dictionary."""
    pool = ["pad"] * value_offset
    for v in values:
        if (v is not None or null_values) and v not in pool[value_offset:]:
            pool.append(v)
    keys = [None if v is None and not null_values else pool.index(v, value_offset) - value_offset
            for v in values]
    keys = [None] * offset + keys
    dictionary = pa.array(pool, type=getattr(pa, value_layout)()).slice(value_offset)
    array = pa.DictionaryArray.from_arrays(pa.array(keys, type=getattr(pa, key_type)()), dictionary)
    return array.slice(offset)


@settings(max_examples=EQUIVALENCE_EXAMPLES // 10)
@given(
    PATTERNS, PATTERNS, ENCODED_ROWS,
    st.sampled_from(KEY_TYPES), st.sampled_from(LAYOUTS), st.booleans(),
    st.integers(0, 3), st.integers(0, 2), st.booleans(), st.booleans(), st.sampled_from([1, 2, None]),
)
def test_a_dictionary_column_decides_as_the_plain_column(include, exclude, rows, key_type, layout,
                                                        null_values, offset, value_offset,
                                                        sort, names_too, threads):
    """A dictionary-encoded server column (any key type, any string layout of
    its dictionary, sliced keys and dictionary, null keys or null values,
    sorted or not), and the names column encoded too: the mask equals the
    plain utf8 columns' and the object path's."""
    assert_encoded_decides_as_plain(
        include, exclude, rows, sort, names_too, threads,
        lambda values, shift: dictionary_column(values, key_type, layout, null_values,
                                                (offset + shift) % 4, (value_offset + shift) % 3))


def assert_encoded_decides_as_plain(include, exclude, rows, sort, names_too, threads, encode):
    """``encode(values, shift)`` (shift 0 for the servers, 1 for the names, so
    that the two are sliced differently) decides as the plain utf8 columns and
    the object path: the server column encoded, and the names too if asked."""
    fast, _ = build(toolfilter_fast, include, exclude)
    if fast is None:
        return
    if sort:
        rows = sorted(rows, key=lambda r: (r[0] is None, r[0] or ""))
    servers = [s for s, _ in rows]
    names = [n for _, n in rows]
    want = expected(fast, servers, names)
    plain = fast.static_mask_arrow(pa.array(servers, pa.string()), pa.array(names, pa.string()),
                                   threads=threads).to_pylist()
    encoded_names = encode(names, 1) if names_too else pa.array(names, pa.string())
    got = fast.static_mask_arrow(encode(servers, 0), encoded_names, threads=threads).to_pylist()
    assert got == plain == want


#: Short names of few letters, and globs for every server over them: most
#: answers depend on the name alone, and names cut elsewhere differ in them.
short_name = st.text("abx_", min_size=1, max_size=4)
every_server_glob = st.one_of(short_name.map("*/{}*".format), short_name.map("*/*{}".format), short_name)


@settings(max_examples=EQUIVALENCE_EXAMPLES // 10)
@given(
    st.lists(every_server_glob, min_size=1, max_size=4), st.lists(every_server_glob, max_size=4),
    st.lists(st.lists(short_name, min_size=1, max_size=6, unique=True), min_size=1, max_size=4),
    st.lists(st.integers(0, 5), min_size=1, max_size=60), st.sampled_from([1, 2, None]),
)
def test_one_filter_over_many_name_dictionaries(include, exclude, dictionaries, keys, threads):
    """One filter decides batch after batch of dictionary-encoded names, each
    dictionary met once or again, or its bytes cut elsewhere (what the filter
    kept of a dictionary before is used only for the same names): every batch
    answers as the pure-Python reference does."""
    fast, _ = build(toolfilter_fast, include, exclude)
    ref, _ = build(reference, include, exclude)
    if fast is None or ref is None:
        return
    # Each dictionary, then it again, then its bytes cut one letter later.
    batches = []
    for values in dictionaries:
        joined = "".join(values)
        cut = [joined[:len(values[0]) + 1], joined[len(values[0]) + 1:]] if len(values) > 1 else values
        batches += [values, values, [v for v in cut if v] or values, values]
    for values in batches:
        row_keys = [k % len(values) for k in keys]
        names = pa.DictionaryArray.from_arrays(pa.array(row_keys, pa.int32()), pa.array(values, pa.string()))
        servers = [SERVER_POOL[k % len(SERVER_POOL)] for k in keys]
        got = fast.static_mask_arrow(pa.array(servers, pa.string()), names, threads=threads).to_pylist()
        want = ref.static_mask_columns(servers, [values[k] for k in row_keys])
        assert got == want, (values, servers)


def test_dictionary_encode_chunked_and_sorted_catalogs():
    """pyarrow's own ``dictionary_encode()``, whole, sliced and chunked with a
    dictionary per chunk, over a sorted catalog and an interleaved one."""
    from toolfilter_fast.bench import workload as _workload

    for interleaved in (False, True):
        tools = _workload.catalog(5_000, servers=300, interleaved=interleaved)
        fast = toolfilter_fast.compile(include=_workload.patterns(50, "include", tools),
                                       exclude=_workload.patterns(50, "exclude", tools))
        want = fast.static_mask(tools)
        servers = pa.array([t.server_id for t in tools])
        names = pa.array([t.name for t in tools])
        encoded = servers.dictionary_encode()
        assert pa.types.is_dictionary(encoded.type)
        assert fast.static_mask_arrow(encoded, names).to_pylist() == want
        assert fast.static_mask_arrow(encoded.slice(777), names.slice(777)).to_pylist() == want[777:]
        chunked = pa.chunked_array([servers.slice(0, 1234).dictionary_encode(),
                                    servers.slice(1234).dictionary_encode()])
        assert fast.static_mask_arrow(chunked, names, threads=2).to_pylist() == want


def test_a_polars_categorical_column():
    pl = pytest.importorskip("polars", reason="polars (the arrow-test extra) is not installed")
    f = toolfilter_fast.compile(include=["gh/*", "*/read_*"], exclude=["*/Delete*"])
    servers = ["gh", "fs", None, "gh", "fs", "ΣΑΣ", "gh"]
    names = ["x", "read_a", "read_b", "delete-it", None, "read_z", "Delete_q"]
    column = pl.Series(servers, dtype=pl.Categorical)
    assert f.static_mask_arrow(column, pl.Series(names)).to_pylist() == expected(f, servers, names)
    names_column = pl.Series(names, dtype=pl.Categorical)
    assert f.static_mask_arrow(column, names_column).to_pylist() == expected(f, servers, names)


def test_invalid_utf8_in_a_dictionary_is_refused_naming_the_row():
    """A dictionary value that is not UTF-8 is refused at the first row whose
    key names it, as in a plain column; a value no row names is not read."""
    offsets = pa.array([0, 1, 3], type=pa.int32())
    bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets.buffers()[1], pa.py_buffer(b"a\xc3(")])
    f = toolfilter_fast.compile(include=["*"])
    servers = pa.DictionaryArray.from_arrays(pa.array([0, 0, 1, 0], pa.int32()), bad)
    with pytest.raises(ValueError, match=r"server_ids\[2\] is not valid UTF-8"):
        f.static_mask_arrow(servers, pa.array(["w", "x", "y", "z"]))
    with pytest.raises(ValueError, match=r"names\[2\] is not valid UTF-8"):
        f.static_mask_arrow(pa.array(["w", "x", "y", "z"]), servers)
    unused = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int8()), bad)
    assert f.static_mask_arrow(unused, pa.array(["x", "y"])).to_pylist() == [True, True]


def test_a_dictionary_of_another_type_is_refused_with_words():
    f = toolfilter_fast.compile(include=["a/*"])
    ints = pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array([7]))
    with pytest.raises(TypeError, match=r"server_ids must be an Arrow string array .*dictionary of int64"):
        f.static_mask_arrow(ints, pa.array(["x"]))


def run_end_column(values, end_type, value_layout, offset):
    """``values`` run-end-encoded by hand (a run per stretch of equal values,
    nulls a run of a null value), behind ``offset`` padding rows (sliced off)."""
    ends, pool = [], []
    for k, v in enumerate(["pad"] * offset + values):
        if ends and pool[-1] == v:
            ends[-1] = k + 1
        else:
            ends.append(k + 1)
            pool.append(v)
    array = pa.RunEndEncodedArray.from_arrays(pa.array(ends, type=getattr(pa, end_type)()),
                                              pa.array(pool, type=getattr(pa, value_layout)()))
    return array.slice(offset)


@settings(max_examples=EQUIVALENCE_EXAMPLES // 10)
@given(
    PATTERNS, PATTERNS, ENCODED_ROWS,
    st.sampled_from(["int16", "int32", "int64"]), st.sampled_from(LAYOUTS), st.integers(0, 3),
    st.booleans(), st.booleans(), st.sampled_from([1, 2, None]),
)
def test_a_run_end_encoded_column_decides_as_the_plain_column(include, exclude, rows, end_type,
                                                             layout, offset, sort, names_too,
                                                             threads):
    """A run-end-encoded server column (any run-end type, any string layout of
    its values, sliced, runs of nulls, sorted or not), and the names column
    encoded too: the mask equals the plain utf8 columns' and the object path's."""
    assert_encoded_decides_as_plain(
        include, exclude, rows, sort, names_too, threads,
        lambda values, shift: run_end_column(values, end_type, layout, (offset + shift) % 4))


def test_run_end_encode_of_a_sorted_catalog():
    import pyarrow.compute as pc

    from toolfilter_fast.bench import workload as _workload

    tools = sorted(_workload.catalog(5_000, servers=300, interleaved=True), key=lambda t: t.server_id)
    fast = toolfilter_fast.compile(include=_workload.patterns(50, "include", tools),
                                   exclude=_workload.patterns(50, "exclude", tools))
    want = fast.static_mask(tools)
    servers = pc.run_end_encode(pa.array([t.server_id for t in tools]))
    names = pa.array([t.name for t in tools])
    assert fast.static_mask_arrow(servers, names, threads=2).to_pylist() == want
    assert fast.static_mask_arrow(servers.slice(1001), names.slice(1001)).to_pylist() == want[1001:]
