"""OpenAI Agents SDK (``openai-agents``): a ToolFilter as an MCP server's ``tool_filter``.

::

    from agents.mcp import MCPServerStdio
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.openai_agents import mcp_tool_filter

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    server = MCPServerStdio(params={...}, name="github", tool_filter=mcp_tool_filter(rules))

The SDK calls the filter once per tool with a ``ToolFilterContext`` and the
``mcp.types.Tool``. This module imports nothing from the SDK: the filter is a
plain callable object.
"""

from __future__ import annotations

from typing import Any

from .._tool import Tool
from ._common import (
    CtxFunc,
    check_ctx,
    check_filter,
    check_server_id,
    mcp_tool,
    visible_fail_closed,
)

__all__ = ["MCPToolFilter", "mcp_tool_filter"]


def _run_context_context(context: Any) -> Any:
    # The object the caller passed as ``Runner.run(..., context=...)``.
    return context.run_context.context


class MCPToolFilter:
    """A callable ``(context: ToolFilterContext, tool: mcp.types.Tool) -> bool``.

    Build it with :func:`mcp_tool_filter`. The tool is judged as
    ``Tool(server_id, tool.name, description, inputSchema, annotations)``, the
    server id being ``context.server_name`` (the MCP server's ``name``) unless a
    fixed ``server_id`` was given; annotations arrive with the wire's camelCase
    keys (``destructiveHint``). Returns a real ``bool``; anything that raises
    inside (the ctx function, the conversion, the filter) gives False.
    """

    __slots__ = ("_ctx", "_filter", "_server_id")

    def __init__(
        self, tool_filter: Any, *, server_id: str | None = None, ctx: CtxFunc | None = None,
    ) -> None:
        self._filter = check_filter(tool_filter)
        self._server_id = None if server_id is None else check_server_id(server_id, "str or None")
        self._ctx = check_ctx(ctx) or _run_context_context

    def __repr__(self) -> str:
        return f"MCPToolFilter({self._filter!r}, server_id={self._server_id!r})"

    def __call__(self, context: Any, tool: Any) -> bool:
        server_id = self._server_id
        if server_id is None:
            server_id = getattr(context, "server_name", None)

        def to_tool(mcp: Any) -> Tool:
            # A server_name that is no str raises here, inside the guard: hidden.
            return mcp_tool(check_server_id(server_id), mcp)

        return visible_fail_closed(
            self._filter, server_id, tool, to_tool, lambda: self._ctx(context),
            where="openai-agents",
        )


def mcp_tool_filter(
    tool_filter: Any, *, server_id: str | None = None, ctx: CtxFunc | None = None,
) -> MCPToolFilter:
    """A ``tool_filter`` for ``MCPServerStdio``/``MCPServerSse``/``MCPServerStreamableHttp``.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` (or any object with
      ``visible``, ``filter`` and ``static_visible``).
    * ``server_id``: the id the patterns see; default ``context.server_name``.
    * ``ctx``: a function from the SDK's ``ToolFilterContext`` to the filter's
      ``ctx``; default ``context.run_context.context``, the object given to
      ``Runner.run(..., context=...)``.

    TypeError at once for a wrong argument; at run time it fails closed.
    """
    return MCPToolFilter(tool_filter, server_id=server_id, ctx=ctx)
