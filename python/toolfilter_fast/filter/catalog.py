"""A catalog of servers' tools that enforces visibility on every path."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from .._errors import ToolNotFoundError
from .._tool import Tool

__all__ = ["ToolCatalog"]


class _Filter(Protocol):
    def static_filter(self, tools: Iterable[Any]) -> list[Any]: ...
    def visible(self, tool: Any, ctx: Any = None) -> bool: ...


class ToolCatalog:
    """The tools of many servers, seen through one filter.

    * :meth:`refresh` replaces a server's tool list and applies the static part
      of the filter there, so statically hidden tools are never stored;
    * :meth:`list_tools` applies the whole filter for a ``ctx`` at read time;
    * :meth:`resolve` finds the tool a call names, and raises
      :class:`ToolNotFoundError` alike for a hidden tool and a missing one.

    Works with a fast :class:`~toolfilter_fast.ToolFilter` or a reference one.
    Thread-safe: a refresh swaps in a new snapshot under a lock, readers work on
    whichever snapshot was current when they started. Within one refresh the
    first tool of a name wins; later duplicates are dropped.
    """

    def __init__(self, tool_filter: _Filter) -> None:
        self.filter = tool_filter
        self._lock = threading.Lock()
        self._servers: dict[str, dict[str, Tool]] = {}

    def refresh(self, server_id: str, tools: Iterable[Tool | Mapping[str, Any]]) -> list[Tool]:
        """Replaces ``server_id``'s tools; returns the statically visible ones kept.

        ``tools`` holds :class:`Tool` objects of that server, or MCP tool
        definitions (mappings with ``name``), which are converted.
        """
        if not isinstance(server_id, str):
            raise TypeError(f"server_id must be str, not {type(server_id).__name__}")
        converted: list[Tool] = []
        for index, tool in enumerate(tools):
            if not isinstance(tool, Tool):
                try:
                    tool = Tool.from_mcp(server_id, tool)
                except TypeError as err:
                    raise TypeError(f"tools[{index}]: {err}") from None
            elif tool.server_id != server_id:
                raise ValueError(
                    f"tools[{index}] belongs to server {tool.server_id!r}, "
                    f"not {server_id!r}"
                )
            converted.append(tool)
        kept: dict[str, Tool] = {}
        for tool in self.filter.static_filter(converted):
            kept.setdefault(tool.name, tool)
        with self._lock:
            servers = dict(self._servers)
            servers[server_id] = kept
            self._servers = servers
        return list(kept.values())

    def remove(self, server_id: str) -> None:
        """Forgets a server (a disconnect); unknown ids are ignored."""
        with self._lock:
            servers = dict(self._servers)
            servers.pop(server_id, None)
            self._servers = servers

    def server_ids(self, ctx: Any = None) -> list[str]:
        """The servers with at least one tool visible for ``ctx``, in first-refresh order.

        A server all of whose tools are hidden is not listed: its name alone
        would tell that it exists. With function patterns the answer depends on
        ``ctx``, as :meth:`list_tools` does (the functions are called until each
        server has shown one visible tool).
        """
        visible = self.filter.visible
        return [
            server_id
            for server_id, tools in self._servers.items()
            if any(visible(tool, ctx) for tool in tools.values())
        ]

    def list_tools(self, ctx: Any = None) -> list[Tool]:
        """Every tool visible for ``ctx``: servers in first-refresh order, tools in list order."""
        visible = self.filter.visible
        return [
            tool
            for tools in self._servers.values()
            for tool in tools.values()
            if visible(tool, ctx)
        ]

    def resolve(self, server_id: str, name: str, ctx: Any = None) -> Tool:
        """The tool a call to ``(server_id, name)`` reaches for ``ctx``.

        Raises ToolNotFoundError, with one message shape, when the tool does not
        exist or is hidden for this ``ctx``.
        """
        for what, value in (("server_id", server_id), ("name", name)):
            if not isinstance(value, str):
                raise TypeError(f"{what} must be str, not {type(value).__name__}")
        tool = self._servers.get(server_id, {}).get(name)
        if tool is None or not self.filter.visible(tool, ctx):
            raise ToolNotFoundError(server_id, name)
        return tool
