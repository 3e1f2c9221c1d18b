"""LangChain and LangGraph, through langchain-mcp-adapters: the tools an agent is given.

::

    from langchain_mcp_adapters.client import MultiServerMCPClient
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.langchain import get_tools, load_mcp_tools

    rules = ToolFilter.compile(exclude=["*/delete_*"], include=["*/read_*", is_admin])
    client = MultiServerMCPClient({"github": {...}, "fs": {...}})
    tools = await get_tools(client, rules, context=user)       # every server, for this user
    agent = create_agent(model, tools)

    async with client.session("github") as session:            # one session, calls checked too
        tools = await load_mcp_tools(session, rules, server_id="github", context=user)

langchain-mcp-adapters has no filter hook of its own: ``MultiServerMCPClient``
hands over every tool of every server, and its tool-call interceptors see a
call, not the list. These two functions wrap its public entry points:

* :func:`get_tools` calls ``client.get_tools(server_name=...)`` once per
  server and keeps the LangChain tools the rules keep for that server, judged
  in one call per server by the MCP name (``tool_name_prefix`` taken off) with
  the server's description, input schema and annotations. Such a tool opens a
  session per call, so its call is not checked again: what the agent is not
  given it cannot call (LangGraph's ``ToolNode`` answers a name it was not
  given as an invalid tool, alike for a hidden and a never-existing one).
* :func:`load_mcp_tools` is langchain-mcp-adapters' ``load_mcp_tools`` over a
  filtered view of the session (:mod:`toolfilter_fast.adapters.mcp_client`):
  the list is filtered, and each call the tools make goes through the view,
  which lists again and refuses a hidden tool locally, unsent.

``ctx``, ``message`` and ``focus`` are functions of the ``context=`` object
(default: ``ctx`` is the object itself, no message, the focus its ``focus``
key or attribute): build the tools per user, or per turn for a Policy. This
module imports nothing from LangChain until a function runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._tool import Tool
from ..sdk_hints import hints_as_sent
from ._common import (
    BoundFilter,
    CtxFunc,
    FocusFunc,
    MessageFunc,
    focus_from,
    itself,
    mapping_or_none,
    no_turn,
)
from .mcp_client import session_for

__all__ = ["LangChainToolFilter", "filter_tools", "get_tools", "load_mcp_tools"]

_WHERE = "langchain"


class LangChainToolFilter(BoundFilter):
    """A filter or a Policy over LangChain tools made from one MCP server's
    tools. Build it with :func:`filter_tools`, or let :func:`get_tools` do it."""

    __slots__ = ("_prefix",)

    DEFAULTS = (itself, no_turn, focus_from)

    def __init__(
        self,
        tool_filter: Any,
        *,
        server_id: str,
        ctx: CtxFunc | None = None,
        message: MessageFunc | None = None,
        focus: FocusFunc | None = None,
        prefix: str = "",
    ) -> None:
        super().__init__(tool_filter, server_id=server_id, ctx=ctx, message=message, focus=focus)
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be str, not {type(prefix).__name__}")
        self._prefix = prefix

    def _to_tool(self, tool: Any) -> Tool:
        """The MCP tool a LangChain tool was made from: its name less the
        prefix, and the annotations langchain-mcp-adapters put in ``metadata``."""
        name = tool.name
        if not isinstance(name, str) or not name.startswith(self._prefix):
            raise ValueError(f"tool name {name!r} does not start with {self._prefix!r}")
        metadata = mapping_or_none(tool.metadata, "metadata") or {}
        annotations = {key: value for key, value in metadata.items()
                       if key != "_meta" and value is not None}
        schema = tool.args_schema
        return Tool(self._server_id, name[len(self._prefix):], tool.description,
                    schema if isinstance(schema, Mapping) else None, annotations or None)

    def __call__(self, tools: list[Any], context: Any = None) -> list[Any]:
        """The tools the rules keep, in order, with the turn read from ``context``."""
        return self.keep(self._server_id, tools, self._to_tool, context, where=_WHERE)


def filter_tools(
    tools: list[Any],
    tool_filter: Any,
    *,
    server_id: str,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
    prefix: str = "",
) -> list[Any]:
    """The LangChain tools (made by langchain-mcp-adapters from one server's
    MCP tools) that the rules keep, the same objects in the same order.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` or a
      :class:`~toolfilter_fast.Policy`, judged over the whole list in one call.
    * ``server_id``: the id the patterns see.
    * ``context``: the object the functions below get (your user, a LangGraph
      context); ``ctx`` default: ``context`` itself; ``message`` (Policy
      only) default None; ``focus`` (Policy only) default ``context["focus"]``
      or ``context.focus``.
    * ``prefix``: what the tool names start with before the MCP name
      (``"github_"`` with ``tool_name_prefix=True``).

    Fails closed: a tool that cannot be read is dropped alone; a failing
    function, filter or policy drops every tool.
    """
    rules = LangChainToolFilter(tool_filter, server_id=server_id, ctx=ctx, message=message,
                                focus=focus, prefix=prefix)
    return rules(list(tools), context)


async def get_tools(
    client: Any,
    tool_filter: Any,
    *,
    server_name: str | None = None,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> list[Any]:
    """``client.get_tools()`` of a ``MultiServerMCPClient``, each server's tools
    through the rules with that server's name as ``server_id``; only
    ``server_name``'s when given. Arguments as for :func:`filter_tools`;
    TypeError for a client without ``get_tools`` and ``connections``."""
    connections = getattr(client, "connections", None)
    if not callable(getattr(client, "get_tools", None)) or not isinstance(connections, Mapping):
        raise TypeError("client must be a langchain-mcp-adapters MultiServerMCPClient, got "
                        f"{type(client).__name__}")
    names = list(connections) if server_name is None else [server_name]
    prefixed = getattr(client, "tool_name_prefix", False) is True
    kept: list[Any] = []
    for name in names:
        # Checked before listing, so a wrong argument fails before any server is started.
        rules = LangChainToolFilter(tool_filter, server_id=name, ctx=ctx, message=message,
                                    focus=focus, prefix=f"{name}_" if prefixed else "")
        with hints_as_sent():  # the server's hints as sent, not as the SDK coerced them
            tools = await client.get_tools(server_name=name)
        kept.extend(rules(list(tools), context))
    return kept


async def load_mcp_tools(
    session: Any,
    tool_filter: Any,
    *,
    server_id: str,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
    **load_options: Any,
) -> list[Any]:
    """langchain-mcp-adapters' ``load_mcp_tools`` over a filtered view of
    ``session`` (an initialized ``ClientSession``): the tools the rules keep,
    whose calls go through the view (a hidden tool's call is refused there,
    never sent). ``load_options`` (``server_name``, ``tool_name_prefix``,
    ``callbacks``, ``tool_interceptors``, ...) go to ``load_mcp_tools``;
    the other arguments are as for :func:`filter_tools`."""
    # The optional extra, absent from the main venv (mypy there has no stubs of it).
    from langchain_mcp_adapters.tools import (  # type: ignore[import-not-found,unused-ignore]
        load_mcp_tools as load,
    )

    # Any: the view stands in for the ClientSession that load_mcp_tools is typed for.
    view: Any = session_for(session, tool_filter, server_id=server_id, context=context, ctx=ctx,
                            message=message, focus=focus)
    return list(await load(view, **load_options))
