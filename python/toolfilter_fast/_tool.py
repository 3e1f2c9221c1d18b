"""The tool record that filters and catalogs work on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Tool"]


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool of one MCP server, identified by the pair ``(server_id, name)``.

    Immutable. ``server_id`` and ``name`` must be ``str`` (any characters,
    lone surrogates included). Equality compares every field; the hash uses the
    pair only, so tools with unhashable schemas can still live in sets.
    """

    server_id: str
    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for field in ("server_id", "name"):
            value = getattr(self, field)
            if not isinstance(value, str):
                raise TypeError(f"Tool.{field} must be str, not {type(value).__name__}")

    def __hash__(self) -> int:
        return hash((self.server_id, self.name))

    @classmethod
    def from_mcp(cls, server_id: str, tool: Mapping[str, Any] | Any) -> Tool:
        """Builds a Tool from an MCP tool definition (a mapping with ``name``,
        ``description``, ``inputSchema``, ``annotations``) or an object with
        those attributes (``mcp.types.Tool``)."""
        if isinstance(tool, Mapping):
            get = tool.get
        else:
            def get(key: str, default: Any = None) -> Any:
                return getattr(tool, key, default)
        if get("name") is None:
            raise TypeError(f"an MCP tool needs a 'name', got {tool!r}")
        return cls(
            server_id, get("name"), get("description"), get("inputSchema"), get("annotations"),
        )
