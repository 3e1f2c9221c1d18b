"""Hostile Arrow arrays, built by hand through the C data interface.

A :class:`RawColumn` holds the buffers of one string array (plain, large or
view) as ctypes memory and hands out C structures over them through the
PyCapsule interface (``__arrow_c_array__``), with every field as the test
sets it: lengths and offsets that lie, null counts that disagree with the
bitmap, NULL buffers, views past their data, foreign formats, children, a
dictionary. A RawColumn with a ``dictionary`` (another RawColumn) is
dictionary-encoded: its buffers are the keys'. :class:`RawStream` does the
same as a C stream of such arrays.

:func:`decode` reads a :class:`RawColumn` as the Arrow specification reads
it, checking what a consumer can check (the trust boundary of
``rust/arrow_import.rs``): it returns the values, or raises :class:`Refused`
naming what is wrong. The fuzzer compares the fast path with it.

Every buffer is allocated as long as the fields could make a reader go (the
tests keep lengths within the buffers or make them detectably wrong), so a
read the checks let through stays inside memory the test owns.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
from dataclasses import dataclass, field
from typing import Any

RELEASE_SCHEMA = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
RELEASE_ARRAY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class ArrowSchema(ctypes.Structure):
    """``struct ArrowSchema`` of the C data interface."""

    _fields_ = [
        ("format", ctypes.c_void_p),
        ("name", ctypes.c_void_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


class ArrowArray(ctypes.Structure):
    """``struct ArrowArray`` of the C data interface."""

    _fields_ = [
        ("length", ctypes.c_int64),
        ("null_count", ctypes.c_int64),
        ("offset", ctypes.c_int64),
        ("n_buffers", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("buffers", ctypes.c_void_p),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


def _released_at(field: int) -> Any:
    """A release callback that marks the structure released: field ``field``
    (of eight bytes each) is its ``release``, set to NULL."""

    def release(address: int | None) -> None:
        if address:
            ctypes.c_void_p.from_address(address + 8 * field).value = None

    return release


_release_schema = RELEASE_SCHEMA(_released_at(7))
_release_array = RELEASE_ARRAY(_released_at(8))
_RELEASE_SCHEMA_AT = ctypes.cast(_release_schema, ctypes.c_void_p).value
_RELEASE_ARRAY_AT = ctypes.cast(_release_array, ctypes.c_void_p).value

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
#: The capsule names live as long as the module (a capsule keeps the pointer).
_SCHEMA_NAME, _ARRAY_NAME, _STREAM_NAME = b"arrow_schema", b"arrow_array", b"arrow_array_stream"
_NAMES = {name: name for name in (_SCHEMA_NAME, _ARRAY_NAME, _STREAM_NAME)}


def capsule(struct: Any, name: bytes) -> Any:
    """A capsule named ``name`` (``b"arrow_schema"``, ``b"arrow_array"``) over a
    ctypes structure, without a destructor: the structure's owner releases it."""
    return _capsule_new(ctypes.addressof(struct), _NAMES[name], None)


def i32(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def i64(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


def bits(valid: list[bool]) -> bytes:
    """A validity bitmap, least significant bit first."""
    out = bytearray((len(valid) + 7) // 8)
    for i, v in enumerate(valid):
        out[i // 8] |= int(v) << (i % 8)
    return bytes(out)


def view(value: bytes, buffer: int = 0, offset: int = 0, length: int | None = None,
         prefix: bytes | None = None) -> bytes:
    """One 16-byte view: inline when ``value`` is at most 12 bytes, else a
    reference to ``buffer`` at ``offset`` (``length`` and ``prefix`` may lie)."""
    n = len(value) if length is None else length
    if 0 <= n <= 12 and length is None:
        return struct.pack("<i", n) + value.ljust(12, b"\0")
    head = (value[:4] if prefix is None else prefix).ljust(4, b"\0")
    return struct.pack("<i", n) + head + struct.pack("<ii", buffer, offset)


@dataclass
class RawColumn:
    """One array's C structures, every field as given. ``buffers`` are bytes
    (copied into ctypes memory) or None (a NULL pointer)."""

    format: bytes | None
    length: int
    buffers: list[bytes | None]
    null_count: int = 0
    offset: int = 0
    n_buffers: int | None = None
    n_children: int = 0
    schema_children: int = 0
    schema_dictionary: bool = False
    array_dictionary: bool = False
    buffers_null: bool = False
    dictionary: RawColumn | None = None
    runs: tuple[RawColumn, RawColumn] | None = None  # a "+r" array's run ends and values
    released: str | None = None  # "schema" or "array": handed over released
    _keep: list[Any] = field(default_factory=list, repr=False)

    def structures(self) -> tuple[ArrowSchema, ArrowArray]:
        """Fresh structures over the buffers (a consumer moves the array out)."""
        keep: list[Any] = []
        memory = []
        for b in self.buffers:
            if b is None:
                memory.append(None)
            else:
                # Eight bytes more than asked: a NUL after every buffer.
                m = ctypes.create_string_buffer(b, len(b) + 8)
                keep.append(m)
                memory.append(ctypes.addressof(m))
        pointers = (ctypes.c_void_p * max(1, len(memory)))(*memory)
        keep.append(pointers)
        schema = ArrowSchema()
        if self.format is not None:
            fmt = ctypes.create_string_buffer(self.format)
            keep.append(fmt)
            schema.format = ctypes.addressof(fmt)
        schema.flags = 2
        schema.n_children = self.schema_children
        schema.release = None if self.released == "schema" else _RELEASE_SCHEMA_AT
        array = ArrowArray()
        array.length, array.null_count, array.offset = self.length, self.null_count, self.offset
        array.n_buffers = len(self.buffers) if self.n_buffers is None else self.n_buffers
        array.n_children = self.n_children
        array.buffers = None if self.buffers_null else ctypes.addressof(pointers)
        array.release = None if self.released == "array" else _RELEASE_ARRAY_AT
        if self.schema_dictionary:
            inner = ArrowSchema(format=ctypes.addressof(_UTF8), release=_RELEASE_SCHEMA_AT)
            keep.append(inner)
            schema.dictionary = ctypes.addressof(inner)
            schema.format = ctypes.addressof(_INT32)
        if self.array_dictionary:
            inner_array = ArrowArray(release=_RELEASE_ARRAY_AT)
            keep.append(inner_array)
            array.dictionary = ctypes.addressof(inner_array)
        if self.dictionary is not None:
            inner_schema, inner_array = self.dictionary.structures()
            schema.dictionary = ctypes.addressof(inner_schema)
            array.dictionary = ctypes.addressof(inner_array)
        if self.runs is not None:
            pairs = [child.structures() for child in self.runs]
            schemas = (ctypes.c_void_p * 2)(*(ctypes.addressof(p[0]) for p in pairs))
            arrays = (ctypes.c_void_p * 2)(*(ctypes.addressof(p[1]) for p in pairs))
            keep.extend([schemas, arrays])
            schema.children, array.children = ctypes.addressof(schemas), ctypes.addressof(arrays)
            schema.n_children = self.schema_children or 2
            array.n_children = self.n_children or 2
        keep.extend([schema, array])
        self._keep.append(keep)
        return schema, array

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        schema, array = self.structures()
        return (_capsule_new(ctypes.addressof(schema), _SCHEMA_NAME, None),
                _capsule_new(ctypes.addressof(array), _ARRAY_NAME, None))


_UTF8 = ctypes.create_string_buffer(b"u")
_INT32 = ctypes.create_string_buffer(b"i")

GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
GET_ERROR = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
RELEASE_STREAM = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class ArrowArrayStream(ctypes.Structure):
    """``struct ArrowArrayStream`` of the C stream interface."""

    _fields_ = [
        ("get_schema", ctypes.c_void_p),
        ("get_next", ctypes.c_void_p),
        ("get_last_error", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


class RawStream:
    """A C stream of ``chunks`` (RawColumns of one schema, the first's)."""

    def __init__(self, chunks: list[RawColumn]) -> None:
        self.chunks = chunks

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        pending = list(self.chunks)
        keep: list[Any] = []

        def get_schema(_stream: int, out: int) -> int:
            schema, _ = pending[0].structures() if pending else self.chunks[0].structures()
            ctypes.memmove(out, ctypes.addressof(schema), ctypes.sizeof(ArrowSchema))
            return 0

        def get_next(_stream: int, out: int) -> int:
            if not pending:
                ctypes.memset(out, 0, ctypes.sizeof(ArrowArray))
                return 0
            _, array = pending.pop(0).structures()
            ctypes.memmove(out, ctypes.addressof(array), ctypes.sizeof(ArrowArray))
            return 0

        def release(stream: int) -> None:
            ctypes.c_void_p.from_address(stream + 8 * 3).value = None

        callbacks = [GET_SCHEMA(get_schema), GET_NEXT(get_next), GET_ERROR(lambda _s: None),
                     RELEASE_STREAM(release)]
        stream = ArrowArrayStream(*[ctypes.cast(c, ctypes.c_void_p).value for c in callbacks])
        keep.extend([callbacks, stream])
        self._keep = keep
        return _capsule_new(ctypes.addressof(stream), _STREAM_NAME, None)


# --- building valid columns, and reading them as the specification does ------------------


def column(values: list[str | None], layout: str = "string") -> RawColumn:
    """A valid RawColumn of ``values`` (``string``, ``large_string`` or ``string_view``)."""
    valid = [v is not None for v in values]
    validity = bits(valid) if not all(valid) else None
    nulls = valid.count(False)
    data = [(v or "").encode() for v in values]
    if layout == "string_view":
        blob, views = b"", b""
        for d in data:
            views += view(d, 0, len(blob)) if len(d) > 12 else view(d)
            blob += d if len(d) > 12 else b""
        return RawColumn(b"vu", len(values), [validity, views, blob, i64(len(blob))],
                         null_count=nulls)
    pack = i32 if layout == "string" else i64
    ends = [0]
    for d in data:
        ends.append(ends[-1] + len(d))
    return RawColumn(b"u" if layout == "string" else b"U", len(values),
                     [validity, pack(*ends), b"".join(data)], null_count=nulls)


#: The key formats of the C data interface: (struct code, width).
KEY_FORMATS = {b"c": ("b", 1), b"C": ("B", 1), b"s": ("h", 2), b"S": ("H", 2),
               b"i": ("i", 4), b"I": ("I", 4), b"l": ("q", 8), b"L": ("Q", 8)}


def encoded(values: list[str | None], key: bytes = b"i", layout: str = "string",
            null_values: bool = False) -> RawColumn:
    """``values`` dictionary-encoded with keys of format ``key`` (their first
    appearance order), into a dictionary of ``layout``; a null is a null key,
    or with ``null_values`` a key to a null value in the dictionary."""
    pool: list[str | None] = []
    for v in values:
        if (v is not None or null_values) and v not in pool:
            pool.append(v)
    valid = [v is not None or null_values for v in values]
    code, _ = KEY_FORMATS[key]
    keys = struct.pack(f"<{len(values)}{code}", *(pool.index(v) if ok else 0
                                                    for v, ok in zip(values, valid, strict=True)))
    return RawColumn(key, len(values), [bits(valid) if not all(valid) else None, keys],
                     null_count=valid.count(False), dictionary=column(pool, layout))


def run_encoded(values: list[str | None], end: bytes = b"i", layout: str = "string") -> RawColumn:
    """``values`` run-end-encoded (``+r``): run ends of format ``end`` over a
    column of one value per run (a null run is a run of a null value)."""
    ends: list[int] = []
    pool: list[str | None] = []
    for k, v in enumerate(values):
        if ends and pool[-1] == v:
            ends[-1] = k + 1
        else:
            ends.append(k + 1)
            pool.append(v)
    code, _ = KEY_FORMATS[end]
    run_ends = RawColumn(end, len(ends), [None, struct.pack(f"<{len(ends)}{code}", *ends)])
    return RawColumn(b"+r", len(values), [], runs=(run_ends, column(pool, layout)))


class Refused(ValueError):
    """What :func:`decode` found wrong."""


def _ints(buffer: bytes | None, width: int) -> list[int]:
    if buffer is None:
        return []
    n = len(buffer) // width
    return list(struct.unpack(f"<{n}{'i' if width == 4 else 'q'}", buffer[:n * width]))


def decode(col: RawColumn) -> list[bytes | None]:
    """The values of a RawColumn of a string layout (bytes, None where null),
    or :class:`Refused` for what a consumer can check. Not checked as UTF-8."""
    fmt, n, start = col.format, col.length, col.offset
    if col.released:
        raise Refused("released")
    if col.dictionary is not None and not col.schema_dictionary and not col.array_dictionary:
        return _decode_keys(col)
    if col.runs is not None:
        return _decode_runs(col)
    if col.schema_dictionary or col.array_dictionary:
        raise Refused("dictionary")
    if fmt not in (b"u", b"U", b"vu"):
        raise Refused("format")
    if col.n_children or col.schema_children:
        raise Refused("children")
    if n < 0 or start < 0 or col.null_count < -1 or col.null_count > n:
        raise Refused("fields")
    if col.buffers_null or (col.n_buffers is not None and col.n_buffers != len(col.buffers)):
        raise Refused("buffers")
    width = {b"u": 4, b"U": 8, b"vu": 16}[fmt]
    if (start + n + 1) * width > 2**63 - 1:
        raise Refused("overflow")
    if (len(col.buffers) != 3 and fmt != b"vu") or len(col.buffers) < 3:
        raise Refused("buffer count")
    validity = col.buffers[0]

    def is_valid(i: int) -> bool:
        return validity is None or bool(validity[i // 8] >> (i % 8) & 1)

    nulls = sum(not is_valid(start + k) for k in range(n))
    if validity is None and col.null_count > 0:
        raise Refused("null count without a bitmap")
    if col.null_count not in (-1, nulls):
        raise Refused("null count")
    out: list[bytes | None] = []
    if fmt in (b"u", b"U"):
        offsets = _ints(col.buffers[1], width)
        if col.buffers[1] is None:
            raise Refused("offsets NULL")
        span = offsets[start:start + n + 1]
        if span[0] < 0:
            raise Refused("first offset")
        if any(b < a for a, b in itertools.pairwise(span)):
            raise Refused("offsets go back")
        values = col.buffers[2]
        if values is None and n and span[-1] > 0:
            raise Refused("values NULL")
        for k in range(n):
            a, b = span[k], span[k + 1]
            out.append((values or b"")[a:b].ljust(b - a, b"\0") if is_valid(start + k) else None)
        return out
    data = col.buffers[2:-1]
    sizes = _ints(col.buffers[-1], 8)
    if data and col.buffers[-1] is None:
        raise Refused("sizes NULL")
    for k, d in enumerate(data):
        if sizes[k] < 0:
            raise Refused("negative size")
        if sizes[k] > 0 and d is None:
            raise Refused("data NULL")
    if col.buffers[1] is None and start + n > 0:
        raise Refused("views NULL")
    views = col.buffers[1] or b""
    for k in range(n):
        at = start + k
        if not is_valid(at):
            out.append(None)
            continue
        length, head, index, offset = struct.unpack("<i4sii", views[at * 16:at * 16 + 16])
        if length < 0:
            raise Refused("view length")
        if length <= 12:
            out.append(views[at * 16 + 4:at * 16 + 4 + length])
            continue
        if not 0 <= index < len(data):
            raise Refused("view buffer")
        if offset < 0 or offset + length > sizes[index]:
            raise Refused("view range")
        value = (data[index] or b"")[offset:offset + length].ljust(length, b"\0")
        if value[:4] != head:
            raise Refused("view prefix")
        out.append(value)
    return out


def _decode_keys(col: RawColumn) -> list[bytes | None]:
    """:func:`decode` for a dictionary-encoded RawColumn."""
    assert col.dictionary is not None
    if col.dictionary.dictionary is not None:
        raise Refused("a dictionary of a dictionary")
    values = decode(col.dictionary)
    fmt, n, start = col.format, col.length, col.offset
    if fmt not in KEY_FORMATS:
        raise Refused("keys not integers")
    if col.n_children or col.schema_children:
        raise Refused("children")
    if n < 0 or start < 0 or col.null_count < -1 or col.null_count > n:
        raise Refused("fields")
    if col.buffers_null or len(col.buffers) != 2 or col.n_buffers not in (None, 2):
        raise Refused("buffers")
    code, width = KEY_FORMATS[fmt]
    if (start + n + 1) * width > 2**63 - 1:
        raise Refused("overflow")
    validity, keys = col.buffers

    def is_valid(i: int) -> bool:
        return validity is None or bool(validity[i // 8] >> (i % 8) & 1)

    nulls = sum(not is_valid(start + k) for k in range(n))
    if (validity is None and col.null_count > 0) or col.null_count not in (-1, nulls):
        raise Refused("null count")
    if keys is None and n:
        raise Refused("keys NULL")
    out: list[bytes | None] = []
    for k in range(n):
        if not is_valid(start + k):
            out.append(None)
            continue
        (key,) = struct.unpack_from(f"<{code}", keys or b"", (start + k) * width)
        if not 0 <= key < len(values):
            raise Refused("key outside the dictionary")
        out.append(values[key])
    return out


def _decode_runs(col: RawColumn) -> list[bytes | None]:
    """:func:`decode` for a run-end-encoded RawColumn."""
    assert col.runs is not None
    ends_col, values_col = col.runs
    if values_col.dictionary is not None or values_col.runs is not None:
        raise Refused("runs of encoded values")
    values = decode(values_col)
    if ends_col.format not in (b"s", b"i", b"l"):
        raise Refused("run ends not int16, int32 or int64")
    if ends_col.dictionary is not None or ends_col.runs is not None:
        raise Refused("encoded run ends")
    n, start = col.length, col.offset
    if n < 0 or start < 0 or col.null_count > 0 or col.buffers or col.n_buffers:
        raise Refused("fields")
    if col.n_children not in (0, 2) or col.schema_children not in (0, 2):
        raise Refused("children")
    ends = [e if e is not None else None for e in decode_ints(ends_col)]
    if any(e is None for e in ends):
        raise Refused("null run end")
    if len(ends) != len(values):
        raise Refused("run ends and values differ in length")
    if any(b <= a for a, b in itertools.pairwise([0, *ends])):
        raise Refused("run ends do not rise from 1")
    if (ends[-1] if ends else 0) < start + n:
        raise Refused("runs end early")
    return [values[next(k for k, e in enumerate(ends) if e > start + i)] for i in range(n)]


def decode_ints(col: RawColumn) -> list[int | None]:
    """The values of a RawColumn of integers (None where null)."""
    if col.format not in KEY_FORMATS or len(col.buffers) != 2 or col.length < 0 or col.offset < 0:
        raise Refused("not an integer array")
    code, width = KEY_FORMATS[col.format]
    validity, data = col.buffers
    if data is None and col.length:
        raise Refused("data NULL")
    out: list[int | None] = []
    for k in range(col.offset, col.offset + col.length):
        if validity is not None and not validity[k // 8] >> (k % 8) & 1:
            out.append(None)
        else:
            out.append(struct.unpack_from(f"<{code}", data or b"", k * width)[0])
    return out
