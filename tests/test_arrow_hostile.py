"""static_mask_arrow against hostile producers: C structures built by hand
(tests/_arrow_hostile.py) whose fields lie. Each is refused with an error
naming what is wrong, never a crash or an answer read from outside the
buffers; what the structures imply about buffer sizes (the interface carries
none) is the one thing trusted (rust/arrow_import.rs)."""

from __future__ import annotations

import ctypes
from struct import pack

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import toolfilter_fast

pa = pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")

from _arrow_hostile import (  # noqa: E402
    KEY_FORMATS,
    ArrowArray,
    ArrowSchema,
    RawColumn,
    RawStream,
    Refused,
    bits,
    capsule,
    column,
    decode,
    encoded,
    i32,
    i64,
    run_encoded,
    view,
)
from test_arrow import expected  # noqa: E402

from examples_budget import EQUIVALENCE_EXAMPLES  # noqa: E402

F = toolfilter_fast.compile(include=["*"], exclude=["*/drop*"])
LONG = b"a value longer than twelve"


def servers(n):
    return pa.array(["s"] * n, pa.string())


def utf8(offsets, values=b"abcdef", *, validity=None, **fields):
    return RawColumn(b"u", fields.pop("length", len(offsets) - 1), [validity, i32(*offsets), values],
                     **fields)


def keyed(keys, **fields):
    """Int32 keys into a dictionary of two strings."""
    return RawColumn(b"i", fields.pop("length", len(keys)), [None, i32(*keys)], dictionary=column(["a", "b"]),
                     **fields)


def runs_of(ends, values=None, end=b"i", validity=None, buffers=(), **fields):
    """A ``+r`` array of int32 (or ``end``) run ends ``ends`` over three strings."""
    code = KEY_FORMATS[end][0]
    run_ends = RawColumn(end, len(ends), [validity, pack(f"<{len(ends)}{code}", *ends)],
                         null_count=0 if validity is None else -1)
    values = column(["a", "b", "c"][:len(ends)]) if values is None else values
    return RawColumn(b"+r", fields.pop("length", max(ends[-1], 0)), list(buffers), runs=(run_ends, values),
                     **fields)


def views(*rows, data=LONG, sizes=None, validity=None, **fields):
    sizes = i64(len(data)) if sizes is None else sizes
    return RawColumn(b"vu", fields.pop("length", len(rows)), [validity, b"".join(rows), data, sizes],
                     **fields)


#: (id, column, what the error must say)
HOSTILE = [
    # Offsets: the class of the SIGSEGV (a last offset read as a huge length).
    ("first offset negative", utf8([-4, 2, 6]), "first offset is negative"),
    ("offsets go back", utf8([0, 4, 2]), r"offset 2 \(2\) is below the one before it \(4\)"),
    ("last offset negative", utf8([0, 2, -2_000_000_000]), "offsets must not decrease"),
    ("large offsets go back", RawColumn(b"U", 2, [None, i64(0, 3, 1), b"abc"]), "below the one before"),
    ("offsets go back behind an offset", utf8([0, 5, 1, 2], offset=1, length=2), "below the one before"),
    # Fields.
    ("negative length", utf8([0, 1], length=-1), "length is negative"),
    ("negative offset", utf8([0, 1], offset=-3, length=1), "offset is negative"),
    ("offset + length overflows", utf8([0, 1], offset=2**63 - 1, length=1), "overflows"),
    ("buffers span overflows", utf8([0, 1], length=2**62), "overflows"),
    ("null count below -1", utf8([0, 1], null_count=-2), "null_count"),
    ("null count over length", utf8([0, 1], validity=bits([False]), null_count=2), "exceeds length"),
    # Null counts and bitmaps: a null count of 0 over a bitmap with nulls
    # would show a null row.
    ("null count 0 with nulls in the bitmap", utf8([0, 1, 2], validity=bits([True, False]), null_count=0),
     "null_count is 0 but the validity bitmap holds 1 nulls"),
    ("null count too high", utf8([0, 1, 2], validity=bits([True, True]), null_count=1), "holds 0 nulls"),
    ("null count without a bitmap", utf8([0, 1, 2], null_count=1), "has no validity bitmap"),
    # Buffers.
    ("two buffers for utf8", RawColumn(b"u", 1, [None, i32(0, 1)]), "2 buffers where its layout has 3"),
    ("negative buffer count", utf8([0, 1], n_buffers=-1), "n_buffers is negative"),
    ("no buffer list", utf8([0, 1], buffers_null=True), "list of buffers itself"),
    ("offsets NULL", RawColumn(b"u", 1, [None, None, b"a"]), r"buffer 1 \(offsets\) is NULL"),
    ("values NULL", RawColumn(b"u", 1, [None, i32(0, 3), None]), r"buffer 2 \(values\) is NULL"),
    ("views NULL", RawColumn(b"vu", 1, [None, None, b"", i64(0)]), r"buffer 1 \(views\) is NULL"),
    ("too few view buffers", RawColumn(b"vu", 1, [None, view(b"a")]), "at least 3"),
    ("data sizes NULL", RawColumn(b"vu", 1, [None, view(LONG), LONG, None]), "sizes of the data buffers"),
    ("data buffer NULL", RawColumn(b"vu", 1, [None, view(LONG), None, i64(len(LONG))]),
     "a data buffer of the views"),
    ("negative data size", views(view(b"a"), sizes=i64(-1)), "negative size"),
    # Views.
    ("view length negative", views(view(b"", length=-5)), "negative length"),
    ("view names a missing buffer", views(view(LONG, buffer=1)), "names data buffer 1, but the array has 1"),
    ("view names a negative buffer", views(view(LONG, buffer=-1)), "names data buffer -1"),
    ("view past its buffer", views(view(LONG, offset=3)), "spans 26 bytes from byte 3 of a data buffer of 26"),
    ("view offset negative", views(view(LONG, offset=-1)), "from byte -1"),
    ("view length past its buffer", views(view(LONG, length=2**31 - 1)), "spans 2147483647 bytes"),
    ("view prefix differs", views(view(LONG, prefix=b"zzzz")), "prefix differs"),
    ("view sizes claim less", views(view(LONG), sizes=i64(20)), "data buffer of 20 bytes"),
    # Types, children, dictionaries, released structures.
    ("binary", RawColumn(b"z", 1, [None, i32(0, 1), b"a"]), r"not binary \(format \"z\"\)"),
    # Run ends: rising from 1, reaching the array's end, as many as the values.
    ("run ends not rising", runs_of([2, 2, 4]), r"run end 1 \(2\) is not above the one before it \(2\)"),
    ("run ends going back", runs_of([3, 1, 4]), r"run end 1 \(1\) is not above"),
    ("first run end 0", runs_of([0, 2, 4]), r"run end 0 \(0\) is not above the one before it \(0\)"),
    ("run end negative", runs_of([-7, 2, 4]), r"run end 0 \(-7\)"),
    ("runs end before the array", runs_of([1, 2, 3], length=4), r"the runs end at row 3, before the array's offset \+ length \(4\)"),
    ("runs end before an offset + length", runs_of([1, 2, 4], length=3, offset=2),
     r"before the array's offset \+ length \(5\)"),
    ("run ends and values differ", runs_of([1, 4], values=column(["a", "b", "c"])),
     r"the run ends \(2\) and the values \(3\) differ in length"),
    ("run end null", runs_of([1, 2, 4], validity=bits([True, False, True])), "1 of its run ends are null"),
    ("runs with buffers", runs_of([1, 2, 4], buffers=[None]), "1 buffers where its layout has 0"),
    ("run values malformed", runs_of([1, 2], values=utf8([0, 4, 2])), r"its values: offset 2 \(2\) is below"),
    ("run ends unsigned", runs_of([1, 2, 4], end=b"I"), r"run ends must be int16, int32 or int64, not uint32"),
    ("runs of binary", runs_of([1], values=RawColumn(b"z", 1, [None, i32(0, 1), b"a"])),
     r"not run-end-encoded binary"),
    ("runs without children", RawColumn(b"+r", 1, [], n_children=0, schema_children=0), "2: run ends, values"),
    ("foreign format bytes", RawColumn(b"\xff\x00", 1, [None, i32(0, 1), b"a"]), r'format "\\xff"\)'),
    ("format NULL", RawColumn(None, 1, [None, i32(0, 1), b"a"]), "format string is NULL"),
    # Dictionaries: keys inside them, the dictionary checked as an array.
    ("schema's dictionary not in the array", RawColumn(b"i", 1, [None, i32(0)], schema_dictionary=True),
     "declares a dictionary the array does not carry"),
    ("key past the dictionary", keyed([0, 2, 1]), "row 1's dictionary key is 2, past the dictionary's 2 values"),
    ("key negative", keyed([0, 1, -1]), r"row 2's dictionary key is negative \(-1\)"),
    ("key past the dictionary behind an offset", keyed([5, 0, 3], offset=1, length=2), "row 1's dictionary key is 3"),
    ("unsigned key past int64", RawColumn(b"L", 1, [None, pack("<Q", 2**64 - 1)],
                                          dictionary=column(["a"])), "key is 18446744073709551615"),
    ("keys NULL", RawColumn(b"i", 1, [None, None], dictionary=column(["a"])), r"buffer 1 \(keys\) is NULL"),
    ("three buffers for keys", RawColumn(b"i", 1, [None, i32(0), b""], dictionary=column(["a"])),
     "3 buffers where its layout has 2"),
    ("dictionary malformed", RawColumn(b"i", 1, [None, i32(0)], dictionary=utf8([0, 4, 2])),
     r"its dictionary: offset 2 \(2\) is below"),
    ("dictionary released", RawColumn(b"i", 1, [None, i32(0)], dictionary=utf8([0, 1], released="array")),
     "its dictionary: the array is already released"),
    ("keys not integers", RawColumn(b"g", 1, [None, i64(0)], dictionary=column(["a"])),
     r"keys must be integers, not double"),
    ("dictionary of binary", RawColumn(b"i", 1, [None, i32(0)],
                                       dictionary=RawColumn(b"z", 1, [None, i32(0, 1), b"a"])),
     r"not a dictionary of binary"),
    ("dictionary of a dictionary", RawColumn(b"i", 1, [None, i32(0)], dictionary=keyed([0])),
     "dictionary of dictionary-encoded values"),
    ("array carries a dictionary", utf8([0, 1], array_dictionary=True), "dictionary its schema"),
    ("schema children", utf8([0, 1], schema_children=1), "schema has 1 children"),
    ("array children", utf8([0, 1], n_children=3), "array has 3 children"),
    ("released array", utf8([0, 1], released="array"), "array is already released"),
    ("released schema", utf8([0, 1], released="schema"), "schema is already released"),
]


#: Cases a TypeError refuses (not a string layout); and those whose fault is
#: in the schema, which a stream gives once, before its chunks.
TYPE_CASES = {"binary", "foreign format bytes", "keys not integers", "dictionary of binary",
              "dictionary of a dictionary", "run ends unsigned", "runs of binary"}
SCHEMA_CASES = TYPE_CASES | {"format NULL", "schema children", "released schema"}
LAYOUT_OF = {b"u": "string", b"U": "large_string", b"vu": "string_view"}


@pytest.mark.parametrize("case, hostile, words", HOSTILE, ids=[c[0] for c in HOSTILE])
@pytest.mark.parametrize("side", ["names", "server_ids"])
def test_a_hostile_array_is_refused_naming_what_is_wrong(case, hostile, words, side):
    with pytest.raises(Refused):
        decode(hostile)  # the reader of the specification agrees it is wrong
    other = servers(max(0, min(hostile.length, 4)))
    error = TypeError if case in TYPE_CASES else ValueError
    args = (hostile, other) if side == "server_ids" else (other, hostile)
    with pytest.raises(error, match=words) as refused:
        F.static_mask_arrow(*args)
    assert str(refused.value).startswith(side)
    # The same in a stream: as its second chunk after a good one of the same
    # layout, or, when the fault is in the schema, as the stream's schema. (A
    # released array ends a stream, as the interface says.)
    if case == "released array":
        return
    if case in SCHEMA_CASES:
        stream, where = RawStream([hostile]), ""
    else:
        good = (encoded(["x"], hostile.format) if hostile.format in KEY_FORMATS
                else run_encoded(["x"]) if hostile.format == b"+r"
                else column(["x"], LAYOUT_OF[hostile.format]))
        stream, where = RawStream([good, hostile]), "(chunk 1 "
    args = (stream, servers(1)) if side == "server_ids" else (servers(1), stream)
    with pytest.raises(error, match=words) as refused:
        F.static_mask_arrow(*args)
    assert str(refused.value).startswith(side) and where in str(refused.value)


def _exported(array):
    """``array`` exported by pyarrow into C structures that the test may edit."""
    schema, raw = ArrowSchema(), ArrowArray()
    array._export_to_c(ctypes.addressof(raw), ctypes.addressof(schema))
    return schema, raw


class _Exported:
    """A pyarrow array's own export, with a field changed before it is handed over."""

    def __init__(self, array, **fields):
        self.array, self.fields = array, fields

        self.exports = []

    def __arrow_c_array__(self, requested_schema=None):
        schema, raw = _exported(self.array)
        for name, value in self.fields.items():
            setattr(raw, name, value)
        self.exports.append((schema, raw))
        return (capsule(schema, b"arrow_schema"), capsule(raw, b"arrow_array"))

    def release(self):
        """Releases what the consumer did not take (the schema, a refused array)."""
        for pair in self.exports:
            for struct in pair:
                if struct.release:
                    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(struct.release)(ctypes.addressof(struct))


def test_a_null_count_that_hides_pyarrows_nulls_is_refused():
    """pyarrow's own export of a column with a null, its null count set to 0:
    before the check the null row was decided from its empty slot (shown)."""
    names = pa.array(["read", None, "write"])
    honest = _Exported(names)
    assert F.static_mask_arrow(servers(3), honest).to_pylist() == [True, False, True]
    lying = _Exported(names, null_count=0)
    with pytest.raises(ValueError, match="null_count is 0 but the validity bitmap holds 1 nulls"):
        F.static_mask_arrow(servers(3), lying)
    lying.release()  # refused, the structures stay the producer's to release
    shorter = _Exported(names, length=2)  # fewer rows than exported: in bounds, read as two
    assert F.static_mask_arrow(servers(2), shorter).to_pylist() == [True, False]
    for exported in (honest, shorter):
        exported.release()


@pytest.mark.parametrize("as_server", [False, True])
def test_views_that_cut_a_character_are_not_utf8(as_server):
    """Long views into a data buffer that is UTF-8 as a whole, one starting
    and one ending inside a two-byte character: the views' bytes are checked
    by their ends against the buffer checked whole, and each is refused by
    its row, as a view of bytes that are not UTF-8 anywhere is."""
    data = "\u00e9".encode() * 20
    good = view(data[0:14], offset=0)
    for row, cut in ((1, view(data[1:15], offset=1)), (2, view(data[0:15], offset=0))):
        rows = [good, cut] if row == 1 else [good, good, cut]
        raw = views(*rows, data=data)
        args = (raw, servers(len(rows))) if as_server else (servers(len(rows)), raw)
        which = "server_ids" if as_server else "names"
        with pytest.raises(ValueError, match=rf"{which}\[{row}\] is not valid UTF-8"):
            F.static_mask_arrow(*args)
    whole = views(good, view(data[2:16], offset=2), data=data)
    args = (whole, servers(2)) if as_server else (servers(2), whole)
    assert F.static_mask_arrow(*args).to_pylist() == [True, True]


@pytest.mark.parametrize("data", [LONG, "\u00e9".encode() * 20], ids=["ascii data", "utf8 data"])
def test_inline_views_are_checked_to_their_length(data):
    """Inline views (at most twelve bytes, held in the view itself) beside a
    long view into a data buffer clean as a whole: a byte that is not UTF-8
    at any place of an inline view of any length is refused by its row; the
    view's bytes past its length (padding) are not its bytes."""
    long = view(data[0:14], offset=0)
    for n in range(1, 13):
        for at in range(n):
            value = bytearray(b"a" * n)
            value[at] = 0xFF
            raw = views(long, view(bytes(value)), data=data)
            with pytest.raises(ValueError, match=r"names\[1\] is not valid UTF-8"):
                F.static_mask_arrow(servers(2), raw)
    padded = pack("<i", 3) + b"abc" + b"\xff" * 9
    twelve = view("\u00e9\u00e9ab\u00e9\u00e9cd".encode())
    raw = views(long, padded, view("\u00e9".encode()), twelve, data=data)
    assert F.static_mask_arrow(servers(4), raw).to_pylist() == [True] * 4


@pytest.mark.parametrize("layout", ["string", "large_string", "string_view"])
def test_the_hand_built_columns_are_read_as_pyarrow_reads_them(layout):
    values = [None, "read", "", "ΣΑΣ", LONG.decode(), None, "drop_it", "x" * 40]
    raw = column(values, layout)
    assert decode(raw) == [v.encode() if v is not None else None for v in values]
    got = F.static_mask_arrow(servers(len(values)), raw).to_pylist()
    assert got == F.static_mask_arrow(servers(len(values)), pa.array(values, getattr(pa, layout)())).to_pylist()
    assert got == expected(F, ["s"] * len(values), values)


# --- the fuzzer: valid columns, then corrupted ---------------------------------------

FUZZ_TEXT = st.one_of(
    st.text(st.sampled_from(["a", "d", "r", "o", "p", "/", "*", "Σ", "İ", "\0", "é"]), max_size=6),
    st.text(st.sampled_from(["d", "r", "o", "p", "_"]), min_size=13, max_size=20),
)
#: Room the fuzzer's rows and offsets may reach: every buffer is allocated
#: that far, so a corruption the checks cannot see still reads owned memory.
ROOM = 24


def _corrupt(data, raw):
    """Corrupts ``raw`` (one or two edits), keeping every read inside ROOM."""
    n = raw.length
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        edit = data.draw(st.sampled_from(
            ["length", "offset", "null_count", "bit", "offsets", "view"]), label="edit")
        if edit == "length":
            raw.length = data.draw(st.one_of(st.integers(-3, n), st.just(2**62), st.just(2**63 - 1)))
        elif edit == "offset":
            raw.offset = data.draw(st.one_of(st.integers(-2, max(0, ROOM - raw.length - 1)),
                                             st.just(2**63 - 2)))
        elif edit == "null_count":
            raw.null_count = data.draw(st.integers(-3, n + 2))
        elif edit == "bit" and n:
            valid = raw.buffers[0] or bits([True] * ROOM)
            k = data.draw(st.integers(0, n - 1))
            flipped = bytearray(valid)
            flipped[k // 8] ^= 1 << (k % 8)
            raw.buffers[0] = bytes(flipped)
        elif edit == "offsets" and raw.format in (b"u", b"U"):
            width = 4 if raw.format == b"u" else 8
            count = len(raw.buffers[1]) // width
            k = data.draw(st.integers(0, count - 1))
            value = data.draw(st.one_of(st.integers(-3, ROOM * 8), st.just(-(2**31))))
            ints = list(memoryview(raw.buffers[1]).cast("i" if width == 4 else "q"))
            ints[k] = value
            raw.buffers[1] = (i32 if width == 4 else i64)(*ints)
        elif edit == "view" and raw.format == b"vu" and n:
            k = data.draw(st.integers(0, n - 1))
            views = bytearray(raw.buffers[1])
            field = data.draw(st.integers(0, 3))
            value = data.draw(st.one_of(st.integers(-3, ROOM * 2), st.just(-(2**31)), st.just(2**31 - 1)))
            views[k * 16 + field * 4:k * 16 + field * 4 + 4] = value.to_bytes(4, "little", signed=True)
            raw.buffers[1] = bytes(views)


def _with_room(raw):
    """Every buffer padded to ROOM rows and ROOM * 8 value bytes."""
    width = {b"u": 4, b"U": 8, b"vu": 16}[raw.format]
    pad = (ROOM + 1) * width
    raw.buffers[1] = raw.buffers[1] + b"\0" * (pad - len(raw.buffers[1]))
    if raw.buffers[0] is not None:
        raw.buffers[0] = raw.buffers[0].ljust(ROOM // 8 + 1, b"\xff")
    if raw.format != b"vu":
        raw.buffers[2] = raw.buffers[2].ljust(ROOM * 8 + 2**0, b"\0")
    else:
        # Views may name the data buffer's listed size at most: keep it true.
        raw.buffers[2] = raw.buffers[2].ljust(ROOM * 2 + 2**0, b"\0")
    return raw


@settings(max_examples=max(50, EQUIVALENCE_EXAMPLES // 20))
@given(st.lists(st.one_of(st.none(), FUZZ_TEXT), min_size=0, max_size=ROOM - 2),
       st.sampled_from(["string", "large_string", "string_view"]), st.booleans(), st.data())
def test_corrupted_columns_are_refused_or_read_as_the_specification_says(values, layout, as_server,
                                                                         data):
    raw = _with_room(column(values, layout))
    _corrupt(data, raw)
    try:
        decoded = decode(raw)
    except Refused:
        decoded = None
    texts = None
    if decoded is not None:
        try:
            texts = [None if v is None else v.decode() for v in decoded]
        except UnicodeDecodeError:
            pass
    n = len(decoded) if decoded is not None else max(0, min(raw.length, ROOM))
    other = ["s"] * n
    args = (raw, servers(n)) if as_server else (servers(n), raw)
    event("refused" if decoded is None else "not UTF-8" if texts is None else "accepted")
    if texts is None:
        with pytest.raises(ValueError):
            F.static_mask_arrow(*args)
        return
    got = F.static_mask_arrow(*args).to_pylist()
    want = expected(F, texts, other) if as_server else expected(F, other, texts)
    assert got == want
