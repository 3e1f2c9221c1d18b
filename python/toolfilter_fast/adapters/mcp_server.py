"""The MCP SDK, server side: a ToolFilter or a Policy as a server middleware (mcp 2.x),
or around the tool handlers (mcp 1.x).

::

    from mcp.server.mcpserver import MCPServer
    from toolfilter_fast import Policy, ToolFilter
    from toolfilter_fast.adapters.mcp_server import ToolFilterMiddleware, filter_server

    def admin(tool, request):  # request: MCPRequest (token, headers, context, meta)
        return request.token is not None and "admin" in request.token.scopes

    rules = ToolFilter.compile(exclude=["*/delete_*"], include=["*/read_*", admin])
    mcp = MCPServer("github", middleware=[ToolFilterMiddleware(rules, server_id="github")])

    # Or on a server already built, high- or low-level (mcp.server.lowlevel.Server):
    filter_server(server, Policy.from_file("policy.toml"), server_id="github")

Both of the SDK's server APIs dispatch every request through one middleware
chain (``Server.middleware``, the list ``MCPServer.middleware`` also is;
provisional in mcp 2.3), whose middleware sees the request before the SDK
validates it and the result in its wire form. :class:`ToolFilterMiddleware`
sits there:

* ``tools/list``: the handler's list goes through the rules in one call, with
  the turn read from the request (its auth token, HTTP headers, ``_meta``).
* ``tools/call``: the middleware lists the server's tools again, through the
  rest of the chain with the call's own request, and lets the call through only
  if that list kept the tool. A hidden tool's call is passed on as a call of a
  name the server has not got, so the server itself answers it as it answers
  an unknown tool (``MCPServer``: ``Unknown tool: <name>``, an error result;
  a low-level server: whatever its handler answers), in that request's wire
  envelope, and the answer comes back with the hidden tool's name in place of
  the stand-in. The hidden tool's code never runs.

The SDK 1.x has no middleware chain; there :func:`filter_server` wraps the
low-level server's ``tools/list`` and ``tools/call`` handlers
(``request_handlers``, reached through the private ``_mcp_server`` of a 1.x
``FastMCP``) with the same decisions.

Importing this module imports the SDK; ``import toolfilter_fast`` does not.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

try:
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.shared import exceptions as _exceptions
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolfilter_fast.adapters.mcp_server needs the MCP SDK: pip install 'toolfilter_fast[mcp]'"
    ) from err

from .._tool import Tool
from ._common import (
    FOCUS_KEY,
    MESSAGE_KEY,
    BoundFilter,
    CtxFunc,
    FocusFunc,
    MessageFunc,
    itself,
    keep_selected,
    keep_visible,
    logger,
    mcp_tool,
    meta_focus,
    meta_message,
    raising,
)

__all__ = [
    "FOCUS_KEY",
    "MESSAGE_KEY",
    "MCPRequest",
    "ToolFilterMiddleware",
    "filter_server",
]

_WHERE = "mcp-server"

#: The SDK's JSON-RPC error exception: ``MCPError(code, message, data)`` in 2.x,
#: ``McpError(ErrorData)`` in 1.x.
_MODERN_ERROR: Any = getattr(_exceptions, "MCPError", None)
_SDK_ERROR: Any = _MODERN_ERROR or getattr(_exceptions, "McpError")  # noqa: B009

#: The name a hidden tool's call is passed on under: one the server has not got,
#: shaped as an ordinary tool name (letters and underscores, within the SDK's tool-name
#: rule ``[A-Za-z0-9._-]{1,128}``), so a handler that checks a name's shape before
#: looking it up answers it as it answers any unknown name.
_STAND_IN = "toolfilter_fast_hidden_tool"

#: How many ``tools/list`` pages a call's decision reads before it gives up (hidden).
_PAGE_LIMIT = 1000

_SECRET_HEADERS = frozenset({"authorization", "cookie"})


@dataclass(frozen=True)
class MCPRequest:
    """The default ``ctx``: what the request in flight says about its caller.

    * ``token``: the verified access token (``.client_id``, ``.scopes``,
      ``.claims``), or None without auth (stdio, no token verifier);
    * ``headers``: the HTTP request's headers, names lower-case, with
      ``authorization`` and ``cookie`` left out; empty outside HTTP;
    * ``context``: the SDK's ``ServerRequestContext`` of the request (session,
      protocol version, lifespan context, the HTTP request);
    * ``meta``: the request's ``_meta`` (a copy; empty when it has none), where
      a client puts the turn's message (:data:`MESSAGE_KEY`) and focus
      (:data:`FOCUS_KEY`).
    """

    token: Any
    headers: Mapping[str, str]
    context: Any
    meta: Mapping[str, Any] = field(default_factory=dict)


def _params(ctx: Any) -> Mapping[str, Any]:
    params = ctx.params
    return params if isinstance(params, Mapping) else {}


def _headers(raw_headers: Any) -> dict[str, str]:
    """An HTTP request's headers, names lower-case, less the credentials."""
    return {} if raw_headers is None else {
        name.lower(): value for name, value in raw_headers.items()
        if name.lower() not in _SECRET_HEADERS
    }


def request_of(ctx: Any) -> MCPRequest:
    """The :class:`MCPRequest` of the SDK's (2.x) ``ServerRequestContext``."""
    meta = _params(ctx).get("_meta")
    return MCPRequest(get_access_token(), _headers(getattr(ctx.request, "headers", None)), ctx,
                      dict(meta) if isinstance(meta, Mapping) else {})


def _renamed(value: Any, old: str, new: str) -> Any:
    """``value`` (a wire result: dicts, lists, strings) with ``old`` replaced by
    ``new`` in every string in it."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, Mapping):
        return {key: _renamed(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, old, new) for item in value]
    if type(value) is tuple:
        return tuple(_renamed(item, old, new) for item in value)
    return value


def _renamed_error(err: Exception, old: str, new: str) -> Exception:
    """What the server's handler raised for the stand-in name ``old``, with
    ``new`` in its place: the SDK's JSON-RPC error made again; any other
    exception itself, its ``args`` and attributes renamed in place (the SDK
    writes such an exception's text as the error's message), so it keeps its
    type, its cause and its traceback."""
    if isinstance(err, _SDK_ERROR):
        error = err.error
        message, data = _renamed(error.message, old, new), _renamed(error.data, old, new)
        if _MODERN_ERROR is not None:
            return _SDK_ERROR(error.code, message, data)  # type: ignore[no-any-return]
        return _SDK_ERROR(error.model_copy(update={"message": message, "data": data}))  # type: ignore[no-any-return]
    err.args = _renamed(err.args, old, new)
    for attribute, value in list(getattr(err, "__dict__", {}).items()):
        renamed = _renamed(value, old, new)
        if renamed is not value:
            try:
                setattr(err, attribute, renamed)
            except AttributeError:  # a read-only property's store: its text stays
                pass
    return err


def _cursor_of(page: Any) -> Any:
    """A ``tools/list`` page's next cursor: wire form, or either generation's model."""
    if isinstance(page, Mapping):
        return page.get("nextCursor")
    fields = getattr(type(page), "model_fields", {})
    return getattr(page, "next_cursor" if "next_cursor" in fields else "nextCursor", None)


def _tools_of(result: Any) -> list[Any]:
    tools = result.get("tools") if isinstance(result, Mapping) else getattr(result, "tools", None)
    if not isinstance(tools, list):
        raise TypeError(f"a tools/list result without a tools list: {type(result).__name__}")
    return tools


def _with_tools(result: Any, tools: list[Any], private: bool, per_turn: bool) -> Any:
    """``result`` with its tools replaced, and its cache fields (on the
    revisions that have them) narrowed: ``cacheScope`` to ``"private"`` when
    the list was the caller's own, ``ttlMs`` to 0 when it was the turn's."""
    if isinstance(result, Mapping):
        result = {**result, "tools": tools}
        if private and "cacheScope" in result:
            result["cacheScope"] = "private"
        if per_turn and "ttlMs" in result:
            result["ttlMs"] = 0
        return result
    update: dict[str, Any] = {"tools": tools}
    fields = getattr(type(result), "model_fields", {})
    if private and "cache_scope" in fields:
        update["cache_scope"] = "private"
    if per_turn and "ttl_ms" in fields:
        update["ttl_ms"] = 0
    return result.model_copy(update=update)


Next = Callable[[Any], Awaitable[Any]]


class ToolFilterMiddleware(BoundFilter):
    """An MCP SDK ``ServerMiddleware``: ``(ctx, call_next) -> result``.

    The rules are a :class:`~toolfilter_fast.ToolFilter` (or any object with
    ``visible``, ``filter`` and ``static_visible``) or a
    :class:`~toolfilter_fast.Policy`.

    * ``tools/list``: every tool of the handler's result is judged as
      ``Tool(server_id, name, description, inputSchema, annotations)`` with
      ``ctx = ctx_func(MCPRequest(...))``: a filter's list in one
      ``filter(tools, ctx)`` call, a Policy's in one ``select(tools, ctx,
      message, focus)`` with ``message`` and ``focus`` read from the request by
      ``message_func`` and ``focus_func`` (default the request's ``_meta`` keys
      :data:`MESSAGE_KEY` and :data:`FOCUS_KEY`). A paginated handler's pages
      are judged one by one, so a Policy's budget cuts each page.
    * ``tools/call``: decided by the list of its own request (every page, as
      a ``tools/list`` would have judged it); a hidden tool is answered by the
      server as an unknown one (see the module's docs). A name the server has
      not got passes on unchanged.
    * The ``tools/list`` result's ``cacheScope`` (revision 2026-07-28) is
      narrowed to ``"private"`` when the list read the caller's ctx, the
      message or the focus (a Policy's selection says ``"private"``, or a filter
      is dynamic) or when something failed, and ``ttlMs`` to 0 when it depends
      on the turn (the focus, a dynamic group) or failed.
    * Fails closed: an exception in the ctx, message or focus function, the
      filter or the policy hides the tool (in a listing, the whole listing),
      logs a warning, and never fails the request. Other methods pass.
    """

    __slots__ = ()

    DEFAULTS = (itself, meta_message, meta_focus)

    def _to_tool(self, tool: Any) -> Tool:
        return mcp_tool(self._server_id, tool)

    def _turn_context(self, ctx: Any) -> tuple[MCPRequest | None, Exception | None]:
        try:
            return request_of(ctx), None
        except Exception as err:
            return None, err

    def _per_turn(self, selection: Any) -> bool:
        if selection is None:
            return True
        reads_message = "groups" in selection.stages and any(
            group.mode == "dynamic" for group in self._policy.groups.groups)
        return "focus" in selection.stages or reads_message

    def _kept(self, tools: list[Any], ctx: Any) -> tuple[list[Any], bool, bool]:
        """The tools of one page that the rules keep for the request ``ctx``,
        and whether the list is private and per turn."""
        request, error = self._turn_context(ctx)
        if self._policy is None:
            failed: list[bool] = []
            ctx_func = raising(error) if error is not None else (lambda: self._ctx(request))
            kept = keep_visible(self._filter, self._server_id, tools, self._to_tool, ctx_func,
                                where=_WHERE, on_error=lambda: failed.append(True))
            dynamic = getattr(self._filter, "dynamic", True) is not False
            return kept, dynamic or bool(failed), bool(failed)
        turn = raising(error) if error is not None else self.turn(request)
        kept, selection = keep_selected(self._policy, self._server_id, tools, self._to_tool,
                                        turn, where=_WHERE)
        private = selection is None or selection.cache_scope != "public"
        return kept, private, self._per_turn(selection)

    async def __call__(self, ctx: Any, call_next: Next) -> Any:
        method = getattr(ctx, "method", None)
        if method == "tools/list":
            result = await call_next(ctx)
            try:
                tools = _tools_of(result)
            except Exception:
                logger.warning("toolfilter_fast %s adapter: every tool of server %r hidden because "
                               "the tools/list result could not be read", _WHERE, self._server_id,
                               exc_info=True)
                return _with_tools(result, [], True, True) if isinstance(result, Mapping) \
                    else result
            kept, private, per_turn = self._kept(tools, ctx)
            return _with_tools(result, kept, private, per_turn)
        if method == "tools/call":
            return await self._call(ctx, call_next)
        return await call_next(ctx)

    async def _listing(self, page: Callable[[Any], Awaitable[Any]],
                       ctx: Any) -> tuple[set[str], set[str]] | None:
        """The names the server lists for the call's request ``ctx``, and the
        names this middleware keeps of them, every page (``page(cursor)`` lists
        one); None when listing raised."""
        names: set[str] = set()
        kept_names: set[str] = set()
        cursor: Any = None
        try:
            for _ in range(_PAGE_LIMIT):
                listed = await page(cursor)
                tools = _tools_of(listed)
                names.update(self._to_tool(tool).name for tool in tools)
                kept, _, _ = self._kept(tools, ctx)
                kept_names.update(self._to_tool(tool).name for tool in kept)
                cursor = _cursor_of(listed)
                if not cursor:
                    return names, kept_names
            raise RuntimeError(f"tools/list gave more than {_PAGE_LIMIT} pages")
        except Exception:
            logger.warning("toolfilter_fast %s adapter: a call of server %r refused because "
                           "listing the tools to decide it raised", _WHERE, self._server_id,
                           exc_info=True)
            return None

    async def _stand_in(self, name: str, page: Callable[[Any], Awaitable[Any]],
                        ctx: Any) -> str | None:
        """None to let the call of ``name`` through; else the name, one the
        server has not got, to pass the call on under."""
        listing = await self._listing(page, ctx)
        if listing is None:
            return _STAND_IN
        names, kept_names = listing
        if name in kept_names or name not in names:
            return None
        stand_in = _STAND_IN
        while stand_in in names:
            stand_in += "_"
        return stand_in

    async def _call(self, ctx: Any, call_next: Next) -> Any:
        params = _params(ctx)
        name = params.get("name")
        if not isinstance(name, str):
            return await call_next(ctx)  # the SDK rejects the request itself
        meta = params.get("_meta")

        async def page(cursor: Any) -> Any:
            list_params: dict[str, Any] = {} if meta is None else {"_meta": meta}
            if cursor:
                list_params["cursor"] = cursor
            return await call_next(dataclasses.replace(ctx, method="tools/list",
                                                       params=list_params))

        stand_in = await self._stand_in(name, page, ctx)
        if stand_in is None:
            return await call_next(ctx)
        try:
            result = await call_next(dataclasses.replace(ctx, params={**params, "name": stand_in}))
        except Exception as err:
            answer = _renamed_error(err, stand_in, name)
            if answer is err:
                raise
            raise answer from None
        if isinstance(result, Mapping):
            return _renamed(result, stand_in, name)
        return result


class _HandlerFilter(ToolFilterMiddleware):
    """The same rules around a 1.x server's ``tools/list`` and ``tools/call``
    handlers, which get the typed request; the request context is the SDK's
    ``request_ctx``."""

    __slots__ = ()

    def _turn_context(self, request: Any) -> tuple[MCPRequest | None, Exception | None]:
        try:
            # 1.x only (mypy sees 2.x): the context variable of the request in flight.
            lowlevel_server: Any = importlib.import_module("mcp.server.lowlevel.server")
            context = lowlevel_server.request_ctx.get()
            meta = request.params.meta if request.params is not None else None
            raw_headers = getattr(context.request, "headers", None)
            return MCPRequest(get_access_token(), _headers(raw_headers), context,
                              {} if meta is None else meta.model_dump(exclude_none=True)), None
        except Exception as err:
            return None, err

    def install(self, lowlevel: Any) -> None:
        """Wraps the server's ``tools/list`` and ``tools/call`` handlers."""
        # 1.x's request and result types, which the handlers take (mypy sees 2.x's).
        types: Any = importlib.import_module("mcp.types")

        handlers = lowlevel.request_handlers
        list_handler = handlers.get(types.ListToolsRequest)
        call_handler = handlers.get(types.CallToolRequest)
        if list_handler is None or call_handler is None:
            raise TypeError("the server has no tools/list or tools/call handler yet: register "
                            "them (@server.list_tools(), @server.call_tool()) before filter_server")

        async def list_tools(request: Any) -> Any:
            result = await list_handler(request)
            if request is None:
                # The SDK's own call handler refreshing its tool cache (for input and
                # output validation, on a name it has not cached): no caller asked,
                # and what this returns goes to nobody.
                return result
            try:
                tools = _tools_of(result.root)
            except Exception:
                logger.warning("toolfilter_fast %s adapter: every tool of server %r hidden "
                               "because the tools/list result could not be read", _WHERE,
                               self._server_id, exc_info=True)
                return types.ServerResult(types.ListToolsResult(tools=[]))
            kept, _, _ = self._kept(tools, request)
            return types.ServerResult(result.root.model_copy(update={"tools": kept}))

        async def call_tool(request: Any) -> Any:
            name = request.params.name

            async def page(cursor: Any) -> Any:
                params = types.PaginatedRequestParams(cursor=cursor, _meta=request.params.meta)
                listed = await list_handler(types.ListToolsRequest(method="tools/list",
                                                                   params=params))
                return listed.root

            stand_in = await self._stand_in(name, page, request)
            if stand_in is None:
                return await call_handler(request)
            params = request.params.model_copy(update={"name": stand_in})
            try:
                result = await call_handler(request.model_copy(update={"params": params}))
            except Exception as err:
                answer = _renamed_error(err, stand_in, name)
                if answer is err:
                    raise
                raise answer from None
            answer = result.root
            wire = _renamed(answer.model_dump(by_alias=True, exclude_none=True), stand_in, name)
            return types.ServerResult(type(answer).model_validate(wire))

        handlers[types.ListToolsRequest] = list_tools
        handlers[types.CallToolRequest] = call_tool


def filter_server(
    server: Any,
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Any:
    """``server`` with the rules around its ``tools/list`` and ``tools/call``;
    returns the server.

    * mcp 2.x (``MCPServer``, or a low-level ``mcp.server.lowlevel.Server``): a
      :class:`ToolFilterMiddleware` appended to its middleware chain, so it
      runs inside the SDK's own middleware and any added before it.
    * mcp 1.x (``mcp.server.fastmcp.FastMCP``, or a low-level ``Server``),
      which has no middleware: the same decisions wrap the low-level server's
      ``tools/list`` and ``tools/call`` handlers in ``request_handlers``. A
      ``FastMCP`` is reached through its low-level server, the private
      attribute ``_mcp_server`` (TypeError if it is not there); a low-level
      server must have its tool handlers registered first.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` or a
      :class:`~toolfilter_fast.Policy`.
    * ``server_id``: the id the patterns see (a server's name is often a title).
    * ``ctx``: a function from the :class:`MCPRequest` to the filter's ``ctx``;
      default the :class:`MCPRequest` itself.
    * ``message``, ``focus`` (Policy only): functions from the
      :class:`MCPRequest` to the turn's message and focus; default the
      request's ``_meta`` keys :data:`MESSAGE_KEY` and :data:`FOCUS_KEY`.

    TypeError at once for a wrong argument or a server of neither kind.
    """
    chain = getattr(server, "middleware", None)
    if isinstance(chain, list):
        chain.append(ToolFilterMiddleware(tool_filter, server_id=server_id, ctx=ctx,
                                          message=message, focus=focus))
        return server
    lowlevel = getattr(server, "_mcp_server", server)
    if not isinstance(getattr(lowlevel, "request_handlers", None), dict):
        raise TypeError("server must be an MCP SDK server (2.x: MCPServer or "
                        "mcp.server.lowlevel.Server, with a middleware list; 1.x: FastMCP or "
                        f"a low-level Server, with request handlers), got {type(server).__name__}")
    _HandlerFilter(tool_filter, server_id=server_id, ctx=ctx, message=message,
                   focus=focus).install(lowlevel)
    return server
