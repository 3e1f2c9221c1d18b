"""The CEL specification's own conformance tests, run against both engines.

The cel-spec project's "simple" test files (``tests/simple/testdata/*.textproto``,
one ``SimpleTestFile`` message each) are not kept in this repository: they are
read from the source distribution of cel-python 0.5.0 on PyPI, which bundles
them under ``features/``, fetched with pip and checked against its SHA-256.
The files of the features the project supports are run; the others, and the
single tests that need something the project does not have, are counted as
unsupported with the reason (:data:`UNSUPPORTED_FILES`, :func:`unsupported`).

Each test is run twice: by the reference's evaluator (``reference/cel.py``),
whose values are compared exactly (type and value), and by the fast path
(``_core.CelProgram``), which answers only bools: a test expecting a bool is
compared directly; one expecting another value passes when
``type(e) == T && e == V`` is true (``e != e`` for NaN); one expecting an
error passes when ``e`` has no value (``type(e) == type(e)`` gives none). The
bindings of a test are given to the fast path as fields of ``ctx`` (the only
variables it binds besides ``tool``), the expression rewritten to read them.

Run as a script for the counts: ``python tests/_cel_conformance.py [-v]``.
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SDIST = "cel_python-0.5.0.tar.gz"
SDIST_SHA256 = "3eb0a619e8df0f338d0430cda01427a742e77e3c433a1c7c3ebd409cd804c45a"
REQUIREMENT = "cel-python==0.5.0"

#: The files run, each a feature the project's CEL has.
SUPPORTED_FILES = (
    "basic", "comparisons", "conversions", "fields", "fp_math", "integer_math", "lists",
    "logic", "macros", "parse", "plumbing", "string",
)
#: The files not run, and why.
UNSUPPORTED_FILES = {
    "bindings_ext": "the cel.bind extension is not in the project's CEL",
    "block_ext": "the cel.block extension is not in the project's CEL",
    "encoders_ext": "the base64 extension is not in the project's CEL",
    "math_ext": "the math extension is not in the project's CEL",
    "macros2": "two-variable comprehensions (the cel crate's macros take one variable)",
    "string_ext": "the strings extension is not in the project's CEL",
    "dynamic": "protocol buffer messages, wrappers and JSON values (tools and ctx are maps)",
    "enums": "protocol buffer enums",
    "proto2": "protocol buffer messages",
    "proto2_ext": "protocol buffer extensions",
    "proto3": "protocol buffer messages",
    "wrappers": "protocol buffer wrapper types",
    "namespace": "containers (qualified names)",
    "optionals": "optional values (the reference has none)",
    "timestamps": "timestamps and durations (the core's cel crate is built without them)",
    "type_deduction": "the type checker (neither engine checks types)",
    "unknowns": "unknown values (partial evaluation)",
}

#: Words in an expression that need a feature the project's CEL has not.
_UNSUPPORTED_WORDS = {
    "timestamp(": "timestamps", "duration(": "durations", "google.protobuf": "protocol buffer types",
    "TestAllTypes": "protocol buffer messages", "NestedTestAllTypes": "protocol buffer messages",
    "optional.": "optional values", ".?": "optional values", "[?": "optional values",
    "{?": "optional values", "getDate": "timestamps", "getHours": "timestamps",
    "`": "quoted field names (the cel crate does not parse them)",
}

#: Tests the fast path fails today, with the reason; the conformance test fails
#: on a failure not listed here and reports a listed one that passes (to trim).
FAST_EXPECTED_FAILURES: dict[str, str] = {}
#: The same for the reference.
REFERENCE_EXPECTED_FAILURES: dict[str, str] = {}


# --- text format ------------------------------------------------------------------------

Message = list[tuple[str, Any]]


class _Text:
    """A protocol buffer text-format reader: fields as (name, value) pairs in order;
    a value is a Message, bytes (a string), an int, a float or a bare word."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def skip(self) -> None:
        while self.at < len(self.text):
            char = self.text[self.at]
            if char.isspace():
                self.at += 1
            elif char == "#":
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.at : self.at + 1]

    def message(self, closing: str) -> Message:
        fields: Message = []
        while True:
            char = self.peek()
            if char == closing:
                self.at += len(closing)
                return fields
            if not char:
                raise ValueError("the text ends inside a message")
            name = self.name()
            if self.peek() == ":":
                self.at += 1
            if self.peek() == "[":
                self.at += 1
                while self.peek() != "]":
                    fields.append((name, self.value()))
                    if self.peek() == ",":
                        self.at += 1
                self.at += 1
            else:
                fields.append((name, self.value()))
            if self.peek() in (",", ";"):
                self.at += 1

    def name(self) -> str:
        self.skip()
        if self.text[self.at] == "[":  # an extension or Any type URL
            end = self.text.index("]", self.at)
            name, self.at = self.text[self.at : end + 1], end + 1
            return name
        start = self.at
        while self.at < len(self.text) and (self.text[self.at].isalnum() or self.text[self.at] in "_."):
            self.at += 1
        if start == self.at:
            raise ValueError(f"a field name expected at {start}: {self.text[start:start + 20]!r}")
        return self.text[start : self.at]

    def value(self) -> Any:
        char = self.peek()
        if char in "{<":
            self.at += 1
            return self.message("}" if char == "{" else ">")
        if char in "\"'":
            data = b""
            while self.peek() in ("'", '"'):
                data += self.string()
            return data
        start = self.at
        while self.at < len(self.text) and (self.text[self.at].isalnum() or self.text[self.at] in "_.-+"):
            self.at += 1
        word = self.text[start : self.at]
        if not word:
            raise ValueError(f"a value expected at {start}")
        lowered = word.lower()
        if lowered in ("inf", "-inf", "infinity", "-infinity", "nan", "-nan"):
            return float(lowered)
        try:
            return int(word, 0)
        except ValueError:
            pass
        try:
            return float(word.rstrip("fF"))
        except ValueError:
            return word

    def string(self) -> bytes:
        quote = self.text[self.at]
        self.at += 1
        out = bytearray()
        while True:
            char = self.text[self.at]
            if char == quote:
                self.at += 1
                return bytes(out)
            if char != "\\":
                out += char.encode("utf-8")
                self.at += 1
                continue
            esc = self.text[self.at + 1]
            simple = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f",
                      "v": b"\v", "\\": b"\\", "'": b"'", '"': b'"', "?": b"?"}
            if esc in simple:
                out += simple[esc]
                self.at += 2
            elif esc in "xX":
                digits = ""
                i = self.at + 2
                while len(digits) < 2 and self.text[i] in "0123456789abcdefABCDEF":
                    digits += self.text[i]
                    i += 1
                out.append(int(digits, 16))
                self.at = i
            elif esc in "01234567":
                digits = ""
                i = self.at + 1
                while len(digits) < 3 and self.text[i] in "01234567":
                    digits += self.text[i]
                    i += 1
                out.append(int(digits, 8) & 0xFF)
                self.at = i
            elif esc in "uU":
                width = 4 if esc == "u" else 8
                out += chr(int(self.text[self.at + 2 : self.at + 2 + width], 16)).encode("utf-8", "surrogatepass")
                self.at += 2 + width
            else:
                raise ValueError(f"an unknown escape \\{esc}")


def parse_text(text: str) -> Message:
    """A whole text-format message."""
    return _Text(text).message("")


def _get(message: Message, name: str, default: Any = None) -> Any:
    for key, value in message:
        if key == name:
            return value
    return default


def _all(message: Message, name: str) -> list[Any]:
    return [value for key, value in message if key == name]


# --- the tests -------------------------------------------------------------------------


@dataclass
class Case:
    """One conformance test."""

    file: str
    section: str
    name: str
    expr: str
    expected: Any  # ("value", Message) | ("error",) | None when it has neither
    bindings: dict[str, Message] = field(default_factory=dict)
    raw: Message = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file}/{self.section}/{self.name}"


def cases(files: dict[str, str]) -> Iterator[Case]:
    """Every test of the given files (name -> text)."""
    for file_name, text in files.items():
        for section in _all(parse_text(text), "section"):
            section_name = _get(section, "name", b"").decode()
            for test in _all(section, "test"):
                if _get(test, "value") is not None:
                    expected: Any = ("value", _get(test, "value"))
                elif _get(test, "eval_error") is not None:
                    expected = ("error",)
                else:
                    expected = None
                bindings = {}
                for binding in _all(test, "bindings"):
                    bindings[_get(binding, "key").decode()] = _get(binding, "value")
                yield Case(file_name, section_name, _get(test, "name").decode(),
                           _get(test, "expr", b"").decode("utf-8"), expected, bindings, test)


_PLAIN_TYPES = {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"}


def unsupported(case: Case) -> str | None:
    """Why the project's CEL cannot run this test, or None."""
    if _get(case.raw, "container"):
        return "a container (qualified names)"
    if _get(case.raw, "check_only"):
        return "checks types only"
    if case.expected is None:
        return "expects an unknown or any of several errors (partial evaluation)"
    for word, feature in _UNSUPPORTED_WORDS.items():
        if word in case.expr:
            return feature
    for value in [case.expected[1]] if case.expected[0] == "value" else []:
        reason = _unsupported_value(value)
        if reason:
            return reason
    if any("." in name for name in case.bindings):
        return "qualified variable names (a.b.c)"
    for binding in case.bindings.values():
        reason = _unsupported_value(_get(binding, "value", []))
        if reason or _get(binding, "value") is None:
            return reason or "a binding that is no value"
    return None


def _unsupported_value(value: Message) -> str | None:
    for kind, inner in value:
        if kind in ("object_value", "enum_value"):
            return "a protocol buffer message or enum value"
        if kind == "type_value" and inner.decode() not in _PLAIN_TYPES:
            return "a protocol buffer type"
        if kind == "list_value":
            for item in _all(inner, "values"):
                reason = _unsupported_value(item)
                if reason:
                    return reason
        if kind == "map_value":
            for entry in _all(inner, "entries"):
                reason = _unsupported_value(_get(entry, "key")) or _unsupported_value(_get(entry, "value"))
                if reason:
                    return reason
    return None


# --- values ----------------------------------------------------------------------------


def reference_value(value: Message) -> Any:
    """A Value message as a value of the reference's evaluator."""
    from toolfilter_fast.reference import cel

    kind, inner = value[0]
    if kind == "null_value":
        return None
    if kind == "bool_value":
        return inner in (True, "true") or inner == 1
    if kind == "int64_value":
        return int(inner)
    if kind == "uint64_value":
        return cel.UInt(inner)
    if kind == "double_value":
        return float(inner)
    if kind == "string_value":
        return inner.decode("utf-8")
    if kind == "bytes_value":
        return inner
    if kind == "list_value":
        return tuple(reference_value(item) for item in _all(inner, "values"))
    if kind == "map_value":
        result = cel.CelMap()
        for entry in _all(inner, "entries"):
            key = reference_value(_get(entry, "key"))
            tag = ("b", key) if isinstance(key, bool) else ("s", key) if isinstance(key, str) else ("n", int(key))
            result.entries[tag] = (key, reference_value(_get(entry, "value")))
        return result
    if kind == "type_value":
        return cel.CelType(inner.decode())
    raise ValueError(f"no value for {kind}")


def same(left: Any, right: Any) -> bool:
    """The same CEL value: the same type and value (NaN is NaN), lists and maps alike."""
    from toolfilter_fast.reference import cel

    if cel.type_name(left) != cel.type_name(right):
        return False
    if isinstance(left, float):
        return (math.isnan(left) and math.isnan(right)) or left == right
    if isinstance(left, tuple):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, cel.CelMap):
        return left.entries.keys() == right.entries.keys() and all(
            same(left.entries[k][0], right.entries[k][0]) and same(left.entries[k][1], right.entries[k][1])
            for k in left.entries)
    return bool(left == right)


def python_value(value: Message) -> Any:
    """A Value message as the Python value the fast path reads; ValueError when
    Python has none that keeps its type (a uint below 2**63 reads as an int)."""
    kind, inner = value[0]
    if kind == "uint64_value":
        if int(inner) < 2**63:
            raise ValueError("a uint below 2**63 has no Python value of its own")
        return int(inner)
    if kind == "list_value":
        return [python_value(item) for item in _all(inner, "values")]
    if kind == "map_value":
        return {python_value(_get(e, "key")): python_value(_get(e, "value")) for e in _all(inner, "entries")}
    if kind == "type_value":
        raise ValueError("a type has no Python value")
    result = reference_value(value)
    return result


def literal(value: Message) -> str:
    """A CEL expression whose value is this Value message (for the fast path)."""
    kind, inner = value[0]
    if kind == "null_value":
        return "null"
    if kind == "bool_value":
        return "true" if reference_value(value) else "false"
    if kind == "int64_value":
        return f"({int(inner) + 1} - 1)" if int(inner) == -(2**63) else f"({int(inner)})"
    if kind == "uint64_value":
        return f"{int(inner)}u"
    if kind == "double_value":
        number = float(inner)
        if math.isinf(number):
            return "(1.0 / 0.0)" if number > 0 else "(-1.0 / 0.0)"
        text = repr(number)
        return f"({text if ('.' in text or 'e' in text) else text + '.0'})"
    if kind == "string_value":
        return '"' + "".join(_escape(c) for c in inner.decode("utf-8")) + '"'
    if kind == "bytes_value":
        return 'b"' + "".join(f"\\x{b:02x}" for b in inner) + '"'
    if kind == "list_value":
        return "[" + ", ".join(literal(item) for item in _all(inner, "values")) + "]"
    if kind == "map_value":
        entries = (f"{literal(_get(e, 'key'))}: {literal(_get(e, 'value'))}" for e in _all(inner, "entries"))
        return "{" + ", ".join(entries) + "}"
    if kind == "type_value":
        return inner.decode()
    raise ValueError(f"no literal for {kind}")


def _escape(char: str) -> str:
    if char.isascii() and char.isprintable() and char not in "\"\\":
        return char
    return f"\\U{ord(char):08x}"


_TYPE_OF = {"null_value": "null_type", "bool_value": "bool", "int64_value": "int",
            "uint64_value": "uint", "double_value": "double", "string_value": "string",
            "bytes_value": "bytes", "list_value": "list", "map_value": "map", "type_value": "type"}


# --- the engines -----------------------------------------------------------------------


def run_reference(case: Case) -> tuple[bool, str]:
    """Whether the reference passes the test, and what it gave."""
    from toolfilter_fast.reference import cel

    try:
        program = cel.compile_cel(case.expr)
        variables = {name: reference_value(_get(b, "value")) for name, b in case.bindings.items()}
        result = program.evaluate(variables)
    except (cel.CelSyntaxError, cel.CelError) as err:
        return case.expected[0] == "error", f"error: {err}"
    except cel.BudgetExhausted as err:
        return False, f"budget: {err}"
    if case.expected[0] == "error":
        return False, f"value {result!r}"
    return same(result, reference_value(case.expected[1])), f"value {result!r}"


def _fast_rewrite(case: Case) -> tuple[str, dict[str, Any]]:
    """The expression reading its bindings from ``ctx``, and that ctx."""
    from toolfilter_fast.reference import cel

    if not case.bindings:
        return case.expr, {}
    ctx = {name: python_value(_get(b, "value")) for name, b in case.bindings.items()}
    tokens = cel._tokens(case.expr)
    out, last = [], 0
    for i, token in enumerate(tokens):
        before = tokens[i - 1].text if i else ""
        after = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if token.kind == "ident" and token.text in ctx and before != "." and after != "(":
            out.append(case.expr[last : token.at] + "ctx." + token.text)
            last = token.at + len(token.text)
    out.append(case.expr[last:])
    return "".join(out), ctx


def fast_unsupported(case: Case) -> str | None:
    """Why the fast path's interface cannot run this test (its bindings), or None."""
    try:
        _fast_rewrite(case)
    except ValueError as err:
        return str(err)
    return None


def run_fast(case: Case) -> tuple[bool, str]:
    """Whether the fast path passes the test, and what it gave."""
    from toolfilter_fast import _core

    source, ctx = _fast_rewrite(case)

    def verdict(text: str) -> tuple[bool | None, str | None]:
        try:
            result: tuple[bool | None, str | None] = _core.CelProgram(text).evaluate(None, ctx)
        except ValueError as err:
            return None, f"refused: {err}"
        return result

    answer, reason = verdict(source)
    if case.expected[0] == "error":
        if answer is not None:
            return False, f"value {answer}"
        has_value = verdict(f"type({source}) == type({source})")[0]
        return has_value is None, reason or ""
    expected = case.expected[1]
    kind = expected[0][0]
    if kind == "bool_value":
        return answer is reference_value(expected), f"{answer} {reason or ''}".strip()
    if answer is not None:
        return False, f"value {answer}"
    if kind == "double_value" and math.isnan(float(expected[0][1])):
        check = f"type({source}) == double && ({source}) != ({source})"
    else:
        check = f"type({source}) == {_TYPE_OF[kind]} && ({source}) == {literal(expected)}"
    answer, why = verdict(check)
    return answer is True, f"{reason}; check {answer} {why or ''}".strip()


# --- fetching ---------------------------------------------------------------------------


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolfilter_fast" / "cel-spec"


def fetch(timeout: float = 180) -> dict[str, str]:
    """The conformance files, name -> text: from ``TOOLFILTER_CEL_SPEC`` (a folder of
    ``*.textproto``) when set, else from the cel-python sdist (fetched once with pip
    into the user's cache and checked by its SHA-256). OSError (or
    subprocess.TimeoutExpired) when it cannot be had, ValueError when what pip got is
    not the pinned file."""
    folder = os.environ.get("TOOLFILTER_CEL_SPEC")
    if folder:
        return {p.stem: p.read_text(encoding="utf-8") for p in sorted(Path(folder).glob("*.textproto"))}
    cache = _cache_dir()
    sdist = cache / SDIST
    if not sdist.exists() or hashlib.sha256(sdist.read_bytes()).hexdigest() != SDIST_SHA256:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            done = subprocess.run(
                # The sdist only: its build tools may come as wheels.
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                 "cel-python", REQUIREMENT, "-d", scratch],
                capture_output=True, text=True, timeout=timeout, check=False,
            )
            got = Path(scratch) / SDIST
            if done.returncode != 0 or not got.exists():
                raise OSError(f"pip download {REQUIREMENT} failed: {done.stderr.strip()[-500:]}")
            if hashlib.sha256(got.read_bytes()).hexdigest() != SDIST_SHA256:
                raise ValueError(f"{SDIST} does not have the SHA-256 it was pinned with")
            got.replace(sdist)
    files = {}
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            path = Path(member.name)
            if member.isfile() and path.parent.name == "features" and path.suffix == ".textproto":
                reader = archive.extractfile(member)
                assert reader is not None
                files[path.stem] = reader.read().decode("utf-8")
    if not files:
        raise OSError(f"{SDIST} holds no conformance files")
    return files


# --- the run ----------------------------------------------------------------------------


@dataclass
class Tally:
    """One engine's outcome."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unsupported: dict[str, str] = field(default_factory=dict)


def run(files: dict[str, str]) -> tuple[Tally, Tally, dict[str, str]]:
    """The reference's and the fast path's tallies, and the files not run (name -> why)."""
    skipped_files = {name: UNSUPPORTED_FILES.get(name, "not a feature of the project's CEL")
                     for name in files if name not in SUPPORTED_FILES}
    chosen = {name: text for name, text in files.items() if name in SUPPORTED_FILES}
    tallies = (Tally(), Tally())
    runners: tuple[tuple[Callable[[Case], tuple[bool, str]], Callable[[Case], str | None]], ...] = (
        (run_reference, lambda case: None), (run_fast, fast_unsupported))
    for case in cases(chosen):
        reason = unsupported(case)
        for tally, (runner, engine_unsupported) in zip(tallies, runners, strict=True):
            why = reason or engine_unsupported(case)
            if why:
                tally.unsupported[case.id] = why
                continue
            ok, got = runner(case)
            if ok:
                tally.passed.append(case.id)
            else:
                tally.failed[case.id] = f"{case.expr!r}: {got}"
    return tallies[0], tallies[1], skipped_files


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    files = fetch()
    reference, fast, skipped = run(files)
    print("files not run:")
    for name, why in sorted(skipped.items()):
        print(f"  {name}: {why}")
    for label, tally, expected in (("reference", reference, REFERENCE_EXPECTED_FAILURES),
                                   ("fast path", fast, FAST_EXPECTED_FAILURES)):
        print(f"{label}: {len(tally.passed)} passed, {len(tally.failed)} failed "
              f"({len(set(tally.failed) - set(expected))} not expected), "
              f"{len(tally.unsupported)} unsupported")
        for test, why in sorted(tally.failed.items()):
            mark = "expected" if test in expected else "FAILED"
            print(f"  {mark} {test}: {why}")
        if verbose:
            for test, why in sorted(tally.unsupported.items()):
                print(f"  unsupported {test}: {why}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    raise SystemExit(main(sys.argv[1:]))
