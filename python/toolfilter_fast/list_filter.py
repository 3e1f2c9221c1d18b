"""Server-side filtering of MCP's list methods, as the draft proposal for list
filtering (SEP-2564) describes it: a client sends ``params.filter`` beside
``cursor`` on ``tools/list``, ``prompts/list``, ``resources/list`` or
``resources/templates/list`` and gets only the items that match.

* ``namePatterns`` (every list) is matched against the item's ``name``;
  ``uriPatterns`` (resources and templates) against ``uri`` or
  ``uriTemplate``. Within a field the patterns are OR'ed, across fields AND'ed.
  An empty array is as good as no field; a missing filter or ``{}`` keeps
  everything; any other field (``com.example/x``) is ignored.
* Patterns are globs: ``*`` any run of characters, ``?`` one character
  (a code point), every other character literal and case-sensitive; they
  are matched by the Rust core (``_core.NamePatterns``).
* At most :data:`MAX_PATTERNS` patterns a field and :data:`MAX_PATTERN_LENGTH`
  characters a pattern; beyond that, or a field that is not an array of
  strings, the request is refused with JSON-RPC error -32602 in the
  proposal's wording (:class:`ListFilterError`).
* A page's ``nextCursor`` is wrapped with the list method and a digest of
  the filter as applied (its known fields, each pattern list as a set): a
  cursor sent back with another filter is refused with -32602 "Filter
  parameters must not change between paginated requests", one of another
  list or not given out here with -32602 "Invalid cursor". A change of a
  field the filter ignores is no change.
* The server advertises it in its capabilities (``initialize`` and the
  2026 revision's ``server/discover``): ``tools.filtering``,
  ``prompts.filtering`` = ``{"supported": ["namePatterns"]}`` and
  ``resources.filtering`` = ``{"supported": ["namePatterns", "uriPatterns"]}``,
  under each capability the server already has.

Filtering is not access control: it narrows a list the server (and its
policy) already made, it never adds an item, and it has no say in a call.

:class:`ListFilterMiddleware` does all of this as an MCP SDK (2.x) server
middleware, ``(ctx, call_next) -> result``, over the wire form of requests and
results; it is the outermost layer of ``toolfilter serve`` and of
``toolfilter_fast.adapters.mcp_server``. Importing this module imports no SDK.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import _core

__all__ = [
    "FIELDS",
    "INVALID_PARAMS",
    "LIST_METHODS",
    "MAX_PATTERNS",
    "MAX_PATTERN_LENGTH",
    "ListFilter",
    "ListFilterError",
    "ListFilterMiddleware",
    "advertise",
]

#: JSON-RPC's "invalid params".
INVALID_PARAMS = -32602
#: The most patterns one field may hold, and the longest pattern (characters).
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 256

#: Each list method: the result's key of its items, and each filter field
#: with the item key it matches.
LIST_METHODS: dict[str, tuple[str, dict[str, str]]] = {
    "tools/list": ("tools", {"namePatterns": "name"}),
    "prompts/list": ("prompts", {"namePatterns": "name"}),
    "resources/list": ("resources", {"namePatterns": "name", "uriPatterns": "uri"}),
    "resources/templates/list": ("resourceTemplates",
                                 {"namePatterns": "name", "uriPatterns": "uriTemplate"}),
}
#: The capability each list's filtering is advertised under, and its fields.
FIELDS: dict[str, tuple[str, ...]] = {
    "tools": ("namePatterns",),
    "prompts": ("namePatterns",),
    "resources": ("namePatterns", "uriPatterns"),
}

_CURSOR_VERSION = 1
#: How much of a pattern an error message quotes.
_QUOTED = 80


class ListFilterError(ValueError):
    """A list request refused: ``code`` (-32602) and the message to send."""

    def __init__(self, message: str, code: int = INVALID_PARAMS) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value),
                                                                        type(value).__name__)


def _quoted(pattern: str) -> str:
    shown = pattern if len(pattern) <= _QUOTED else pattern[:_QUOTED] + "..."
    return json.dumps(shown)[1:-1]  # escapes, so the message stays one printable line


@dataclass(frozen=True)
class ListFilter:
    """The filter of one list request, checked: each known field that holds
    patterns, as a sorted tuple (an empty field is left out)."""

    method: str
    fields: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any] | None) -> ListFilter:
        """The filter of ``params`` (a list request's params, wire form), in the
        proposal's order: every pattern checked, then the counts. Raises
        :class:`ListFilterError`."""
        if method not in LIST_METHODS:
            raise ValueError(f"{method!r} is not a list method")
        raw = None if params is None else params.get("filter")
        if raw is None:
            return cls(method)
        if not isinstance(raw, Mapping):
            raise ListFilterError(f"Invalid filter: expected an object, not {_kind(raw)}")
        known = LIST_METHODS[method][1]
        given: list[tuple[str, list[Any]]] = []
        for field in known:
            value = raw.get(field)
            if value is None:
                continue
            if not isinstance(value, list):
                raise ListFilterError(f"Invalid filter field {field}: expected an array of "
                                      f"strings, not {_kind(value)}")
            given.append((field, value))
        for field, patterns in given:
            for pattern in patterns:
                if not isinstance(pattern, str):
                    raise ListFilterError(f"Invalid pattern in {field}: {_kind(pattern)} "
                                          "\u2014 a pattern is a string")
                if len(pattern) > MAX_PATTERN_LENGTH:
                    raise ListFilterError(
                        f"Invalid pattern in {field}: '{_quoted(pattern)}' \u2014 "
                        f"{len(pattern)} characters exceeds maximum of {MAX_PATTERN_LENGTH}")
                try:
                    pattern.encode("utf-8")
                except UnicodeEncodeError:
                    raise ListFilterError(f"Invalid pattern in {field}: '{_quoted(pattern)}' "
                                          "\u2014 it holds a lone surrogate") from None
        for _, patterns in given:
            if len(patterns) > MAX_PATTERNS:
                raise ListFilterError(f"Too many patterns: {len(patterns)} exceeds maximum of "
                                      f"{MAX_PATTERNS}")
        return cls(method, tuple((field, tuple(sorted(set(patterns))))
                                 for field, patterns in given if patterns))

    def __bool__(self) -> bool:
        return bool(self.fields)

    def digest(self) -> str:
        """A short digest of the filter as applied, for cursors."""
        text = json.dumps([list(pair) for pair in self.fields], separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def narrow(self, items: Sequence[Any]) -> list[Any]:
        """The items (wire form: mappings) that every field matches; an item
        whose matched key is missing or not a string does not match."""
        kept = list(items)
        keys = LIST_METHODS[self.method][1]
        for field, patterns in self.fields:
            key = keys[field]
            values = [item.get(key) if isinstance(item, Mapping) else None for item in kept]
            texts = [value if isinstance(value, str) else "" for value in values]
            hits = _core.NamePatterns(patterns).matches(texts)
            kept = [item for item, value, hit in zip(kept, values, hits, strict=True)
                    if hit and isinstance(value, str)]
        return kept

    # --- cursors ------------------------------------------------------------------

    def wrap(self, cursor: Any) -> str:
        """The cursor to give the client for the server's own ``cursor``."""
        text = json.dumps([_CURSOR_VERSION, self.method, self.digest(), cursor],
                          separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")

    def unwrap(self, cursor: Any) -> Any:
        """The server's own cursor in a cursor :meth:`wrap` gave; raises
        :class:`ListFilterError` for one given with another filter, for
        another list, or not given here."""
        try:
            if not isinstance(cursor, str):
                raise ValueError
            padded = cursor + "=" * (-len(cursor) % 4)
            version, method, digest, inner = json.loads(
                base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
            if version != _CURSOR_VERSION or not isinstance(method, str):
                raise ValueError
        except (ValueError, TypeError, UnicodeError, binascii.Error):
            raise ListFilterError("Invalid cursor: it was not given by this server") from None
        if method != self.method:
            raise ListFilterError(f"Invalid cursor: it was given for {method}, not "
                                  f"{self.method}")
        if digest != self.digest():
            raise ListFilterError("Filter parameters must not change between paginated "
                                  "requests")
        return inner


def advertise(capabilities: Any) -> Any:
    """The wire ``capabilities`` object with ``filtering`` added under each
    list capability it has (``tools``, ``prompts``, ``resources``)."""
    if not isinstance(capabilities, Mapping):
        return capabilities
    out = dict(capabilities)
    for capability, fields in FIELDS.items():
        section = out.get(capability)
        if isinstance(section, Mapping):
            out[capability] = {**section, "filtering": {"supported": list(fields)}}
    return out


def _wire(result: Any) -> Any:
    """A result in wire form (a dict), whatever the layer below returned."""
    dump = getattr(result, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, mode="json", exclude_none=True)
    return result


Next = Callable[[Any], Awaitable[Any]]


class ListFilterMiddleware:
    """An MCP SDK (2.x) server middleware that filters the four list methods
    by ``params.filter`` and advertises it (see the module). Put it outside
    the layers that make the lists: it sees the wire form of what they
    return. Other requests pass untouched."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ListFilterMiddleware()"

    async def __call__(self, ctx: Any, call_next: Next) -> Any:
        method = getattr(ctx, "method", None)
        if method in ("initialize", "server/discover"):
            result = _wire(await call_next(ctx))
            if isinstance(result, Mapping) and "capabilities" in result:
                result = {**result, "capabilities": advertise(result["capabilities"])}
            return result
        if method not in LIST_METHODS:
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        try:
            list_filter = ListFilter.parse(method, params)
            cursor = params.get("cursor")
            inner = None if cursor is None else list_filter.unwrap(cursor)
        except ListFilterError as err:
            raise _sdk_error(err) from None
        below = {key: value for key, value in params.items() if key not in ("filter", "cursor")}
        if inner is not None:
            below["cursor"] = inner
        result = _wire(await call_next(dataclasses.replace(ctx, params=below)))
        if not isinstance(result, Mapping):
            return result
        out = dict(result)
        key = LIST_METHODS[method][0]
        if list_filter and isinstance(out.get(key), list):
            out[key] = list_filter.narrow(out[key])
        if out.get("nextCursor") is not None:
            out["nextCursor"] = list_filter.wrap(out["nextCursor"])
        return out


def _sdk_error(err: ListFilterError) -> Exception:
    # Late: the MCP SDK is an optional extra, needed only where a request is served.
    from mcp.shared.exceptions import MCPError

    return MCPError(err.code, err.message)
