"""OpenAI Agents SDK (``openai-agents``): a ToolFilter or a Policy for an MCP server.

::

    from agents.mcp import MCPServerStdio
    from toolfilter_fast import Policy, ToolFilter
    from toolfilter_fast.adapters.openai_agents import filtered_server, mcp_tool_filter

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    server = MCPServerStdio(params={...}, name="github", tool_filter=mcp_tool_filter(rules))

    # The whole Policy (groups by the turn's user message, focus, budget):
    server = filtered_server(MCPServerStdio(params={...}, name="github"),
                             Policy.from_file("policy.toml"))

The SDK's own hook, the server's ``tool_filter``, is called once per tool with
a ``ToolFilterContext`` and the ``mcp.types.Tool``: :func:`mcp_tool_filter`
fits it, and judges each tool alone. The SDK has no list-level hook of its own;
the closest public seam is the server's ``list_tools(run_context, agent)``,
which the SDK calls for every turn: :func:`filtered_server` wraps it, so a
Policy sees the server's whole list and its budget can cut it.

What a turn lists is also all it can call: the SDK resolves the model's tool
calls against the tools it listed for that turn, and answers any other name
with its own ``ModelBehaviorError("Tool <name> not found in agent <agent>")``,
the same for a hidden tool as for one that never existed.

This module imports nothing from the SDK: the filter is a plain callable
object, and :func:`filtered_server` wraps the server object it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._tool import Tool
from ._common import (
    BoundFilter,
    CtxFunc,
    FocusFunc,
    MessageFunc,
    check_server_id,
    filter_method,
    focus_from,
    mcp_tool,
)

__all__ = ["MCPListFilter", "MCPToolFilter", "filtered_server", "mcp_tool_filter",
           "turn_input_text"]

_WHERE = "openai-agents"


def _run_context_context(context: Any) -> Any:
    # The object the caller passed as ``Runner.run(..., context=...)``; None
    # when the server is listed outside a run.
    run_context = context.run_context
    return None if run_context is None else run_context.context


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else getattr(part, "type", None)
        if kind in ("input_text", "text"):
            text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def turn_input_text(context: Any) -> str | None:
    """The default message: the text of the last ``role == "user"`` item of
    ``context.run_context.turn_input``, the input items of the run (what was
    given to ``Runner.run``: its newest user message is the turn's); of a
    multi-part content, its ``input_text`` parts joined by newlines. None
    outside a run or without a user item."""
    run_context = context.run_context
    for item in reversed(getattr(run_context, "turn_input", None) or ()):
        if isinstance(item, Mapping):
            role, content = item.get("role"), item.get("content")
        else:
            role, content = getattr(item, "role", None), getattr(item, "content", None)
        if role == "user":
            return _content_text(content)
    return None


def _context_focus(context: Any) -> Any:
    return focus_from(_run_context_context(context))


_DEFAULTS = (_run_context_context, turn_input_text, _context_focus)


class _AgentsRules(BoundFilter):
    """What the Agents SDK hooks share: the arguments, the defaults, the conversion."""

    __slots__ = ()

    DEFAULTS = _DEFAULTS
    OPTIONAL_SERVER_ID = True

    def _server_and_tool(self, server_name: Any) -> tuple[Any, Callable[[Any], Tool]]:
        """The server id the patterns see, and the conversion to ``Tool``."""
        server_id = self._server_id if self._server_id is not None else server_name

        def to_tool(mcp: Any) -> Tool:
            # A server_name that is no str raises here, inside the guard: hidden.
            return mcp_tool(check_server_id(server_id), mcp)

        return server_id, to_tool


class MCPToolFilter(_AgentsRules):
    """A callable ``(context: ToolFilterContext, tool: mcp.types.Tool) -> bool``.

    Build it with :func:`mcp_tool_filter`. The tool is judged as
    ``Tool(server_id, tool.name, description, inputSchema, annotations)``, the
    server id being ``context.server_name`` (the MCP server's ``name``) unless a
    fixed ``server_id`` was given; annotations arrive with the wire's camelCase
    keys (``destructiveHint``). Returns a real ``bool``; anything that raises
    inside (the ctx, message or focus function, the conversion, the filter or
    policy) gives False.
    """

    __slots__ = ()

    PER_TOOL = "mcp_tool_filter (an MCP server's tool_filter)"
    LIST_HOOK = "filtered_server(server, policy)"

    def __call__(self, context: Any, tool: Any) -> bool:
        server_id, to_tool = self._server_and_tool(getattr(context, "server_name", None))
        return self.keeps(server_id, tool, to_tool, context, where=_WHERE)


def mcp_tool_filter(
    tool_filter: Any,
    *,
    server_id: str | None = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> MCPToolFilter:
    """A ``tool_filter`` for ``MCPServerStdio``/``MCPServerSse``/``MCPServerStreamableHttp``.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` (or any object with
      ``visible``, ``filter`` and ``static_visible``), or a
      :class:`~toolfilter_fast.Policy`. Each tool is judged alone, so a Policy
      with a budget, a lens cap or a relevance stage is refused here (TypeError): give it to
      :func:`filtered_server`, which sees the whole list.
    * ``server_id``: the id the patterns see; default ``context.server_name``.
    * ``ctx``: a function from the SDK's ``ToolFilterContext`` to the filter's
      ``ctx``; default ``context.run_context.context``, the object given to
      ``Runner.run(..., context=...)``.
    * ``message`` (Policy only): a function from the ``ToolFilterContext`` to
      the turn's user message; default :func:`turn_input_text`.
    * ``focus`` (Policy only): a function from the ``ToolFilterContext`` to the
      focus; default ``context["focus"]`` (a mapping) or ``context.focus`` of the
      run's context object, else None.

    TypeError at once for a wrong argument; at run time it fails closed.
    """
    return MCPToolFilter(tool_filter, server_id=server_id, ctx=ctx, message=message, focus=focus)


class MCPListFilter(_AgentsRules):
    """``(tools, run_context, agent, server_name) -> tools``: a ToolFilter or a
    Policy over a server's whole list, as :func:`filtered_server` applies it.

    The ctx, message and focus functions receive a ``ToolFilterContext``
    (``run_context``, ``agent``, ``server_name``), as :class:`MCPToolFilter`'s
    do, so one set of functions serves both. A Policy sees the list in the
    server's order, and its budget keeps the first tools of it.
    """

    __slots__ = ()

    def __call__(self, tools: list[Any], run_context: Any, agent: Any,
                 server_name: Any) -> list[Any]:
        from agents.mcp import ToolFilterContext

        context = ToolFilterContext(run_context=run_context, agent=agent,
                                    server_name=server_name)
        server_id, to_tool = self._server_and_tool(server_name)
        return self.keep(server_id, tools, to_tool, context, where=_WHERE)


def filtered_server(
    server: Any,
    tool_filter: Any,
    *,
    server_id: str | None = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Any:
    """``server`` (any ``agents.mcp.MCPServer``), its ``list_tools`` now
    filtered: every turn's list goes through ``tool_filter`` in one call (for a
    Policy, one ``select``: every stage, the budget included).

    The server object itself is returned, changed in place (its other methods,
    ``async with``, ``cached_tools`` and ``invalidate_tools_cache`` are its
    own); the server's own ``tool_filter``, if any, runs first. Arguments as
    for :func:`mcp_tool_filter`; the functions get a ``ToolFilterContext``.
    TypeError at once for a wrong argument; at run time it fails closed: a
    tool that cannot be read is dropped alone; a failing ctx, message or focus
    function, filter or policy drops the whole list of that turn.
    """
    list_filter = MCPListFilter(tool_filter, server_id=server_id, ctx=ctx, message=message,
                                focus=focus)
    if not hasattr(server, "name"):
        raise TypeError("server must be an agents.mcp.MCPServer (with list_tools(run_context, "
                        f"agent) and name), got {type(server).__name__}")

    def apply(tools: list[Any], run_context: Any = None, agent: Any = None) -> list[Any]:
        return list_filter(tools, run_context, agent, server.name)

    return filter_method(server, "list_tools", apply,
                         "server must be an agents.mcp.MCPServer (with list_tools(run_context, "
                         "agent) and name)", shown=list_filter)
