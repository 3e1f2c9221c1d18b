"""The tool record that filters and catalogs work on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core

__all__ = ["HINTS", "Tool", "raw_hints"]

#: The fields of an MCP tool definition that a Tool keeps apart, as
#: ``(wire name, attribute)``, in the order :meth:`Tool.to_mcp` writes them.
WIRE_FIELDS = (
    ("name", "name"), ("title", "title"), ("description", "description"),
    ("inputSchema", "input_schema"), ("outputSchema", "output_schema"), ("icons", "icons"),
    ("annotations", "annotations"), ("_meta", "meta"),
)
_ATTRIBUTE_OF = dict(WIRE_FIELDS)

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
    hints cannot change under a filter.

    A Tool keeps every field of an MCP tool definition: ``title``,
    ``input_schema`` (``inputSchema``), ``output_schema`` (``outputSchema``),
    ``icons``, ``annotations``, ``meta`` (``_meta``), and in ``extra`` every
    field the protocol adds later or a server invents. :meth:`from_mcp` reads a
    definition and :meth:`to_mcp` writes it back as it was, key order
    included, so a definition passes through a filter unchanged.
    """

    server_id: str
    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    meta: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    icons: Sequence[Any] | None = None
    extra: Mapping[str, Any] | None = None
    #: The raw hint byte of ``annotations`` (:func:`raw_hints`), which the core
    #: reads in place in batches, as it reads ``server_id`` and ``name``.
    _hints: int = field(default=0, init=False, repr=False, compare=False)
    #: The keys of the definition :meth:`from_mcp` read, in their order.
    _keys: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)

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

    def to_mcp(self) -> dict[str, Any]:
        """The MCP tool definition: what :meth:`from_mcp` read, unchanged (the
        same keys in the same order, the values as given; a shallow copy), or,
        for a Tool made directly, its fields under their wire names."""
        extra = self.extra or {}
        wire: dict[str, Any] = {}
        for key, attribute in WIRE_FIELDS:
            value = getattr(self, attribute)
            if key not in extra and (value is not None or key in self._keys):
                wire[key] = value
        for key, value in extra.items():
            wire.setdefault(key, value)
        if not self._keys:
            return wire
        order = [key for key in self._keys if key in wire]
        order += [key for key in wire if key not in self._keys]
        return {key: wire[key] for key in order}

    @classmethod
    def from_mcp(cls, server_id: str, tool: Mapping[str, Any] | Any) -> Tool:
        """Builds a Tool from an MCP tool definition: a mapping in the wire's
        shape (``name``, ``title``, ``description``, ``inputSchema``,
        ``outputSchema``, ``icons``, ``annotations``, ``_meta``; any other key
        goes to ``extra``), or an ``mcp.types.Tool`` of either SDK generation
        (dumped in the wire's shape). A ``title`` that is not a ``str`` is kept
        in ``extra``, as it came."""
        dump = getattr(tool, "model_dump", None)
        if not isinstance(tool, Mapping) and callable(dump):
            dumped = dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(dumped, Mapping):
                tool = dumped
        if isinstance(tool, Mapping):
            return cls._from_wire(server_id, tool)
        # Any other object with the fields as attributes (SDK 1.x names, or 2.x's).
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

    @classmethod
    def _from_wire(cls, server_id: str, definition: Mapping[str, Any]) -> Tool:
        if definition.get("name") is None:
            raise TypeError(f"an MCP tool needs a 'name', got {definition!r}")
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in definition.items():
            attribute = _ATTRIBUTE_OF.get(key)
            if attribute is None or (attribute == "title" and not isinstance(value, str)
                                     and value is not None):
                extra[key] = value
            else:
                values[attribute] = value
        values["input_schema"] = as_mapping(values.get("input_schema"), "inputSchema")
        values["annotations"] = as_mapping(values.get("annotations"), "annotations")
        values["meta"] = as_mapping(values.get("meta"), "_meta")
        values.pop("name")
        tool = cls(server_id, definition["name"], extra=extra or None, **values)
        object.__setattr__(tool, "_keys", tuple(definition))
        return tool


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
