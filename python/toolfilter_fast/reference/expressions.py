"""Annotation and expression patterns, spelled out in plain Python.

The reference reads a tool's hints, makes them effective and matches them
here, independently of the core's bit tables; and it runs CEL with its own
evaluator (:mod:`.cel`), written from the language definition, so that the
property tests compare two engines, not one with itself. ``matches()`` uses
RE2 (the ``google-re2`` package, imported when a pattern first calls it):
``pip install 'toolfilter_fast[reference]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import PatternError
from ..filter.entries import Annotations, Cel
from . import cel
from .text import glob_match, text_of

__all__ = ["CelExpression", "annotations_match", "effective_hints", "given_hints", "trusts"]

#: The four hints, and each one's value when it is missing or not believed.
DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}

_MAX_DEPTH = 32


def given_hints(tool: Any) -> dict[str, bool]:
    """The hints the tool's server gave: ``tool.annotations`` read by key (a
    mapping) or by attribute (any other object); only a real ``bool`` counts."""
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return {}
    given = {}
    for key in DEFAULTS:
        if isinstance(annotations, Mapping):
            value = annotations.get(key)
        else:
            value = getattr(annotations, key, None)
        if type(value) is bool:
            given[key] = value
    return given


def trusts(trusted: tuple[str, ...], server_id: str) -> bool:
    """Whether a glob of ``trusted`` matches the server id, exactly."""
    return any(glob_match(glob, server_id) for glob in trusted)


def effective_hints(tool: Any, server_id: str, trusted: tuple[str, ...]) -> dict[str, bool]:
    """The hints as a pattern trusting ``trusted`` sees them: missing ones (and
    all of an untrusted server's) take their defaults, and a read-only tool is
    neither destructive nor non-idempotent."""
    hints = dict(DEFAULTS)
    if trusts(trusted, server_id):
        hints.update(given_hints(tool))
    if hints["readOnlyHint"]:
        hints["destructiveHint"] = False
        hints["idempotentHint"] = True
    return hints


def annotations_match(entry: Annotations, tool: Any, server_id: str) -> bool:
    """Whether every hint the pattern names has the wanted effective value."""
    seen = effective_hints(tool, server_id, entry.trusted)
    return all(seen[key] == value for key, value in entry.hints.items())


class CelFailure(Exception):
    """An expression gave no bool verdict: it fails closed."""


def _cel_value(value: Any, depth: int) -> Any:
    """A Python value as a CEL value, by the rules the fast path keeps: None,
    bool, int, float, str, bytes, lists, tuples and mappings with str, bool or
    int keys; a lone surrogate, anything else, or more than 32 levels is a
    failure. Subclasses are read as their base type (no method of theirs runs)."""
    if depth > _MAX_DEPTH:
        raise CelFailure(f"a value nests deeper than {_MAX_DEPTH} levels")
    if value is None:
        return None
    if isinstance(value, bool):
        return value is True
    if isinstance(value, int):
        number = int.__index__(value)
        if cel.INT_MIN <= number <= cel.INT_MAX:
            return number
        if 0 <= number <= cel.UINT_MAX:
            return cel.UInt(number)
        raise CelFailure("an int out of CEL's range")
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bytes):
        return bytes(memoryview(value))
    if isinstance(value, (list, tuple)):
        return tuple(_cel_value(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        entries = cel.CelMap()
        for key, item in value.items():
            cel_key: Any
            if isinstance(key, str):
                cel_key = _text(key)
            elif isinstance(key, bool):
                cel_key = key is True
            elif isinstance(key, int) and cel.INT_MIN <= int.__index__(key) <= cel.INT_MAX:
                cel_key = int.__index__(key)
            else:
                raise CelFailure(f"a map key of type {type(key).__name__}")
            tag = ("s", cel_key) if isinstance(cel_key, str) else (
                ("b", cel_key) if isinstance(cel_key, bool) else ("n", cel_key))
            entries.entries[tag] = (cel_key, _cel_value(item, depth + 1))
        return entries
    raise CelFailure(f"a {type(value).__name__}, which has no CEL value")


def _text(value: str) -> str:
    text = text_of(value)
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise CelFailure("a string holds a lone surrogate")
    return text


class CelExpression:
    """One CEL pattern, compiled by the reference's own evaluator."""

    def __init__(self, option: str, index: int, entry: Cel) -> None:
        self.entry = entry
        try:
            self.program = cel.compile_cel(entry.source)
        except cel.CelSyntaxError as err:
            raise PatternError(
                f"{option}[{index}]: invalid CEL expression ({err}): {entry!r}",
                option=option, index=index, entry=entry,
            ) from None
        # Dynamic when the identifier ctx is read as a variable anywhere (a
        # field named ctx, after a dot, is not the variable).
        self.dynamic = self.program.mentions("ctx")

    def verdict(self, tool: Any, server_id: str, name: str, ctx: Any) -> bool:
        """The expression's bool, or CelFailure when it gives none."""
        trusted = self.entry.trusted
        value = {
            "server_id": server_id,
            "name": name,
            "title": _str_or_none(getattr(tool, "title", None)),
            "description": _str_or_none(getattr(tool, "description", None)),
            "annotations": effective_hints(tool, server_id, trusted),
            "meta": _mapping_or_none(getattr(tool, "meta", None)),
        }
        activation = {"tool": _cel_value(value, 0), "ctx": _cel_value(ctx, 0)}
        try:
            result = self.program.evaluate(activation)
        except cel.CelError as err:
            raise CelFailure(f"the expression failed: {err}") from None
        except cel.BudgetExhausted as err:
            raise CelFailure(str(err)) from None
        if not isinstance(result, bool):
            raise CelFailure(f"the expression gave a {cel.type_name(result)}, not a bool")
        return result

    def __call__(self, tool: Any, ctx: Any) -> bool:
        """As a function pattern (dynamic): raises when there is no verdict."""
        return self.verdict(tool, text_of(tool.server_id), text_of(tool.name), ctx)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping_or_none(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None
