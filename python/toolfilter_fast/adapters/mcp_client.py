"""The MCP SDK, client side: a filtered view of a ``ClientSession`` (mcp 1.x and 2.x).

::

    from mcp import ClientSession
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.mcp_client import filter_session

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    async with ClientSession(read, write) as session:
        await session.initialize()
        view = filter_session(session, rules, server_id="github",
                              ctx=lambda session: {"role": "user"})
        tools = (await view.list_tools()).tools          # the hidden ones are not there
        await view.call_tool("delete_repo", {...})       # refused here, never sent

The view is what an application (or a framework that takes a session, such as
langchain-mcp-adapters' ``load_mcp_tools``) uses in place of the session:

* ``list_tools(...)``: the session's own call, its result with the tools the
  rules keep, judged in one call per page, each tool's hints as the server
  sent them (:func:`toolfilter_fast.sdk_hints.hints_as_sent`: a hint that is
  no JSON boolean is left out, where the SDK's models would coerce it);
* ``call_tool(name, ...)``: the session's call, made only if the rules keep
  ``name`` in the session's list now (every page, listed again with the
  view's turn). Any other name, hidden or one the server never had, is
  answered here, without a request, as the SDK's own server answers an unknown
  tool: ``CallToolResult(isError=True)`` whose text is ``Unknown tool: <name>``
  (``unknown=`` replaces that answer);
* every other attribute is the session's.

A session has no turn of its own, so the ``ctx``, ``message`` and ``focus``
functions get the ``context=`` object given (default the wrapped session); one
view per user (or a ``ctx`` function
that reads the current user from your own context variable) makes the list
per user. Importing this module imports the SDK's types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from mcp.types import CallToolResult, PaginatedRequestParams
except ImportError as err:  # pragma: no cover - exercised only without the SDK
    raise ImportError(
        "toolfilter_fast.adapters.mcp_client needs the MCP SDK: pip install mcp"
    ) from err

from .._tool import Tool
from ..sdk_hints import hints_as_sent
from ._common import (
    BoundFilter,
    CtxFunc,
    FocusFunc,
    MessageFunc,
    focus_from,
    is_policy,
    itself,
    logger,
    mcp_tool,
    no_turn,
)

__all__ = ["FilteredSession", "filter_session", "session_for", "unknown_tool"]

_WHERE = "mcp-client"

#: How many ``tools/list`` pages a call's decision reads before it gives up (refused).
_PAGE_LIMIT = 1000


def unknown_tool(name: str) -> Any:
    """The answer of the SDK's own high-level server (``FastMCP`` in 1.x,
    ``MCPServer`` in 2.x) to a call of a tool it has not got: an error result
    whose one text is ``Unknown tool: <name>``."""
    return CallToolResult.model_validate(
        {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True})


def _next_cursor(page: Any) -> Any:
    """A page's cursor under its generation's field name (``next_cursor`` in 2.x)."""
    fields = getattr(type(page), "model_fields", {})
    return getattr(page, "next_cursor" if "next_cursor" in fields else "nextCursor", None)


class FilteredSession(BoundFilter):
    """A ``ClientSession`` seen through a filter or a Policy. Build it with
    :func:`filter_session`."""

    __slots__ = ("_context", "_session", "_unknown")

    DEFAULTS = (no_turn, no_turn, no_turn)

    def __init__(
        self,
        session: Any,
        tool_filter: Any,
        *,
        server_id: str,
        ctx: CtxFunc | None = None,
        message: MessageFunc | None = None,
        focus: FocusFunc | None = None,
        unknown: Callable[[str], Any] | None = None,
        context: Any = None,
    ) -> None:
        for method in ("list_tools", "call_tool"):
            if not callable(getattr(session, method, None)):
                raise TypeError("session must be an MCP ClientSession (with list_tools and "
                                f"call_tool), got {type(session).__name__}")
        if unknown is not None and not callable(unknown):
            raise TypeError("unknown must be a function from a tool name to the call's answer, "
                            f"not {type(unknown).__name__}")
        super().__init__(tool_filter, server_id=server_id, ctx=ctx, message=message, focus=focus)
        self._session = session
        self._context = session if context is None else context
        self._unknown: Callable[[str], Any] = unknown or unknown_tool

    @property
    def session(self) -> Any:
        """The wrapped session."""
        return self._session

    def _to_tool(self, tool: Any) -> Tool:
        return mcp_tool(self._server_id, tool)

    def _kept(self, tools: list[Any]) -> list[Any]:
        return self.keep(self._server_id, tools, self._to_tool, self._context, where=_WHERE)

    async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
        """The session's ``list_tools(...)``, with only the tools the rules keep."""
        with hints_as_sent():
            result = await self._session.list_tools(*args, **kwargs)
        return result.model_copy(update={"tools": self._kept(list(result.tools))})

    async def _keeps(self, name: str) -> bool:
        """Whether the rules keep ``name`` in the session's list now (every page);
        False when listing raised."""
        cursor: Any = None
        try:
            for _ in range(_PAGE_LIMIT):
                # The first page without arguments: a framework's client (LlamaIndex's
                # BasicMCPClient) may take none; a later page needs the SDK's params.
                with hints_as_sent():
                    page = await (self._session.list_tools() if cursor is None else
                                  self._session.list_tools(
                                      params=PaginatedRequestParams(cursor=cursor)))
                if any(tool.name == name for tool in self._kept(list(page.tools))):
                    return True
                cursor = _next_cursor(page)
                if not cursor:
                    return False
            raise RuntimeError(f"tools/list gave more than {_PAGE_LIMIT} pages")
        except Exception:
            logger.warning("toolfilter_fast %s adapter: a call of server %r refused because "
                           "listing the tools to decide it raised", _WHERE, self._server_id,
                           exc_info=True)
            return False

    async def call_tool(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The session's ``call_tool(name, ...)`` if the rules keep ``name``;
        else the unknown-tool answer, and nothing is sent."""
        if isinstance(name, str) and await self._keeps(name):
            return await self._session.call_tool(name, *args, **kwargs)
        return self._unknown(name if isinstance(name, str) else repr(name))

    def __getattr__(self, attribute: str) -> Any:
        if attribute in self.__slots__:  # not set yet: never look it up on the session
            raise AttributeError(attribute)
        return getattr(self._session, attribute)

    def __repr__(self) -> str:
        return f"<{type(self._session).__name__} through {super().__repr__()}>"


def filter_session(
    session: Any,
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
    unknown: Callable[[str], Any] | None = None,
    context: Any = None,
) -> FilteredSession:
    """A filtered view of ``session`` (an MCP ``ClientSession`` of either SDK
    generation, or anything with its ``list_tools`` and ``call_tool``).

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` or a
      :class:`~toolfilter_fast.Policy` (its budget cuts each page).
    * ``server_id``: the id the patterns see (a session does not know it).
    * ``ctx``, ``message``, ``focus`` (the last two Policy only): functions
      from ``context`` (default the session) to the filter's ``ctx``, the
      turn's message and the focus; default None for each.
    * ``unknown``: a function from a refused name to the call's answer
      (return a result, or raise); default :func:`unknown_tool`.

    TypeError at once for a wrong argument. Fails closed: an error in a
    function, the filter or the policy hides the tool (a listing: the whole
    page) and logs a warning; a call whose listing raises is refused.
    """
    return FilteredSession(session, tool_filter, server_id=server_id, ctx=ctx, message=message,
                           focus=focus, unknown=unknown, context=context)


def session_for(
    session: Any,
    tool_filter: Any,
    *,
    server_id: str,
    context: Any,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> FilteredSession:
    """A :func:`filter_session` view for a framework adapter whose turn is an
    object its caller gives (``context``, None included): ``ctx`` default the
    object itself, ``message`` (Policy only) default None, ``focus`` (Policy
    only) default ``context["focus"]`` or ``context.focus``."""
    # The arguments checked as filter_session checks them, before any is wrapped.
    FilteredSession(session, tool_filter, server_id=server_id, ctx=ctx, message=message,
                    focus=focus)
    ctx_func, message_func, focus_func = ctx or itself, message or no_turn, focus or focus_from
    turn: dict[str, Any] = {}
    if is_policy(tool_filter):
        turn = {"message": lambda view: message_func(context),
                "focus": lambda view: focus_func(context)}
    return FilteredSession(session, tool_filter, server_id=server_id,
                           ctx=lambda view: ctx_func(context), **turn)
