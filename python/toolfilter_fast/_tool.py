"""The tool record that filters and catalogs work on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _core

__all__ = ["HINTS", "Tool", "raw_hints"]

#: The MCP tool annotations that annotation patterns read, in the order of
#: their bits in a raw hint byte (two bits each: missing, false, true).
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def raw_hints(annotations: Any) -> int:
    """The raw hint byte of a tool's annotations: for each of :data:`HINTS`,
    whether the server gave it as ``False`` (1) or ``True`` (2), or not at all
    (0). Only a real ``bool`` counts; any other value is missing. A mapping is
    read by key, any other object (an ``mcp.types.ToolAnnotations``) by
    attribute."""
    if annotations is None:
        return 0
    if isinstance(annotations, Mapping):
        values = [annotations.get(key) for key in HINTS]
    else:
        values = [getattr(annotations, key, None) for key in HINTS]
    raw = 0
    for i, value in enumerate(values):
        if value is True:
            raw |= 2 << (2 * i)
        elif value is False:
            raw |= 1 << (2 * i)
    return raw


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool of one MCP server, identified by the pair ``(server_id, name)``.

    Immutable. ``server_id`` and ``name`` must be ``str`` (any characters,
    lone surrogates included). Equality compares every field; the hash uses the
    pair only, so tools with unhashable schemas can still live in sets.

    ``annotations`` (the MCP tool annotations, with the wire's camelCase keys)
    is copied when the tool is made, and the hints that annotation patterns
    read (``readOnlyHint`` and the rest) are read from it then: a tool's
    hints cannot change under a filter. ``title`` and ``meta`` (the MCP
    ``_meta``) are there for expression patterns.
    """

    server_id: str
    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    meta: Mapping[str, Any] | None = None
    #: The raw hint byte of ``annotations`` (:func:`raw_hints`), which the core
    #: reads in place in batches, as it reads ``server_id`` and ``name``.
    _hints: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("server_id", "name"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Tool.{name} must be str, not {type(value).__name__}")
        if isinstance(self.annotations, Mapping):
            object.__setattr__(self, "annotations", dict(self.annotations))
        object.__setattr__(self, "_hints", raw_hints(self.annotations))

    def __hash__(self) -> int:
        return hash((self.server_id, self.name))

    @classmethod
    def from_mcp(cls, server_id: str, tool: Mapping[str, Any] | Any) -> Tool:
        """Builds a Tool from an MCP tool definition: a mapping with ``name``,
        ``description``, ``inputSchema``, ``annotations``, ``title`` and ``_meta``,
        or an ``mcp.types.Tool`` of either SDK generation (``inputSchema`` in
        1.x, ``input_schema`` in 2.x; ``meta`` for ``_meta``). Pydantic
        annotations become mappings with the wire's camelCase keys. A ``title``
        that is not a ``str`` is left out (the annotations may carry one too)."""
        if isinstance(tool, Mapping):
            name, description = tool.get("name"), tool.get("description")
            schema, annotations = tool.get("inputSchema"), tool.get("annotations")
            title, meta = tool.get("title"), tool.get("_meta")
        else:
            name, description = getattr(tool, "name", None), getattr(tool, "description", None)
            schema = getattr(tool, "input_schema", None)
            if schema is None:
                schema = getattr(tool, "inputSchema", None)
            annotations = getattr(tool, "annotations", None)
            title, meta = getattr(tool, "title", None), getattr(tool, "meta", None)
        if name is None:
            raise TypeError(f"an MCP tool needs a 'name', got {tool!r}")
        return cls(server_id, name, description, as_mapping(schema, "inputSchema"),
                   as_mapping(annotations, "annotations"),
                   title if isinstance(title, str) else None, as_mapping(meta, "_meta"))


def as_mapping(value: Any, what: str) -> Mapping[str, Any] | None:
    """A tool's annotations (or schema) as a mapping with the wire's camelCase keys.

    Pydantic models (``mcp.types.ToolAnnotations`` of either SDK generation) are
    dumped ``by_alias``, so a function pattern reads ``destructiveHint`` whatever
    SDK the framework runs on.
    """
    if value is None or isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(by_alias=True, exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    raise TypeError(f"{what} must be a mapping or a pydantic model, not {type(value).__name__}")


def _pair(tool: Any) -> tuple[str, str]:
    """``(server_id, name)`` of a Tool, or of any object with those two str attributes.

    A field that is missing (or an unset slot of a ``Tool`` made without
    ``__init__``) or not a ``str`` is a TypeError, as in the reference.
    """
    try:
        server_id, name = tool.server_id, tool.name
    except AttributeError:
        raise TypeError(
            f"expected a Tool (an object with server_id and name), got {type(tool).__name__}"
        ) from None
    for what, value in (("server_id", server_id), ("name", name)):
        if not isinstance(value, str):
            raise TypeError(f"{what} must be str, not {type(value).__name__}")
    return server_id, name


def _register_layout() -> bool:
    """Lets the core read ``server_id`` and ``name`` of exact ``Tool`` instances
    straight from their slots in batches (see ``ToolLayout`` in
    ``rust/python/inplace.rs``), with its raw hints; other objects keep the
    attribute lookup."""
    return _core.register_tool_class(
        Tool("\0probe-server", "\0probe-name", annotations={"readOnlyHint": True}),
    )


FAST_READ = _register_layout()
