"""Google ADK: a ToolFilter as a ``ToolPredicate`` for ``McpToolset(tool_filter=...)``.

::

    from google.adk.tools.mcp_tool import McpToolset
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.google_adk import tool_predicate

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    predicate = tool_predicate(rules, server_id="github")
    toolset = McpToolset(connection_params=..., tool_filter=predicate)

ADK calls the predicate as ``(tool: BaseTool, readonly_context) -> bool`` for
every tool of a listing, before ``tool_name_prefix`` is applied, and checks it
with ``isinstance(..., ToolPredicate)``, a runtime-checkable protocol that any
callable satisfies. This module imports nothing from ADK.
"""

from __future__ import annotations

from typing import Any

from .._tool import Tool
from ._common import BoundFilter, CtxFunc, mcp_tool, visible_fail_closed

__all__ = ["ToolFilterPredicate", "tool_predicate"]


def _readonly_context(readonly_context: Any) -> Any:
    return readonly_context


def _base_tool_to_tool(server_id: str, tool: Any) -> Tool:
    """``Tool`` from an ADK ``BaseTool``: an ``McpTool`` is read from the MCP
    definition it wraps (schema and annotations included); any other tool gives
    its name and description only."""
    raw = getattr(tool, "raw_mcp_tool", None)
    if raw is not None:
        return mcp_tool(server_id, raw)
    description = getattr(tool, "description", None)
    return Tool(server_id, tool.name, description if isinstance(description, str) else None)


class ToolFilterPredicate(BoundFilter):
    """A ``ToolPredicate``: ``(tool: BaseTool, readonly_context=None) -> bool``.

    Build it with :func:`tool_predicate`. Returns a real ``bool``; anything that
    raises inside (the ctx function, the conversion, the filter) gives False.
    """

    __slots__ = ()

    def __init__(self, tool_filter: Any, *, server_id: str, ctx: CtxFunc | None = None) -> None:
        super().__init__(tool_filter, server_id, ctx, _readonly_context)

    def __call__(self, tool: Any, readonly_context: Any = None) -> bool:
        server_id = self._server_id
        return visible_fail_closed(
            self._filter, server_id, tool,
            lambda base_tool: _base_tool_to_tool(server_id, base_tool),
            lambda: self._ctx(readonly_context),
            where="google-adk",
        )


def tool_predicate(
    tool_filter: Any, *, server_id: str, ctx: CtxFunc | None = None,
) -> ToolFilterPredicate:
    """A ``ToolPredicate`` for ``McpToolset(tool_filter=...)`` (or any ADK toolset).

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` (or any object with
      ``visible``, ``filter`` and ``static_visible``).
    * ``server_id``: the id the patterns see for every tool of this toolset
      (ADK's toolset has no server name of its own).
    * ``ctx``: a function from ADK's ``ReadonlyContext`` (None when ADK lists
      tools outside a run) to the filter's ``ctx``; default the
      ``ReadonlyContext`` itself (``.user_id``, ``.state``, ``.session``).

    TypeError at once for a wrong argument; at run time it fails closed.
    """
    return ToolFilterPredicate(tool_filter, server_id=server_id, ctx=ctx)
