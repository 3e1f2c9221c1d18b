"""FastMCP, server side: a ToolFilter as a transform that hides tools per request.

::

    from fastmcp import FastMCP
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.fastmcp import ToolFilterTransform

    def admin(tool, request):  # request: FastMCPRequest (token, headers, context)
        return request.token is not None and "admin" in request.token.scopes

    mcp = FastMCP("github")
    mcp.add_transform(ToolFilterTransform(
        ToolFilter.compile(exclude=["*/delete_*"], include=["*/read_*", admin]),
        server_id="github",
    ))

Why a transform and not a middleware: FastMCP resolves every tool through its
transform chain, on every path (``tools/list``, ``tools/call`` by name, the
hashed app-tool names, ``server.get_tool``). A hidden tool is dropped there, so
FastMCP itself raises its own "unknown tool" error for it, from the same line
as for a name that never existed: the two cannot be told apart.

Importing this module imports FastMCP (the transform subclasses its
``Transform``); ``import toolfilter_fast`` does not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from fastmcp.server.dependencies import (
        get_access_token,
        get_context,
        get_http_headers,
        get_http_request,
    )
    from fastmcp.server.transforms import Transform
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolfilter_fast.adapters.fastmcp needs FastMCP: "
        "pip install 'toolfilter_fast[fastmcp]'"
    ) from err

from .._tool import Tool
from ._common import BoundFilter, CtxFunc, keep_visible, mapping_or_none, visible_fail_closed

__all__ = ["FastMCPRequest", "ToolFilterTransform"]


@dataclass(frozen=True)
class FastMCPRequest:
    """The default ``ctx``: what the request in flight says about its caller.

    * ``token``: the verified access token (``.client_id``, ``.scopes``,
      ``.claims``), or None without auth (stdio, in-memory, no auth provider);
    * ``headers``: the HTTP request's headers, names lower-case, with
      ``authorization`` and ``cookie`` left out; empty outside HTTP;
    * ``context``: FastMCP's ``Context`` of the request (session id, client
      info, session state), or None.
    """

    token: Any
    headers: Mapping[str, str]
    context: Any


def _http_request_present() -> bool:
    try:
        get_http_request()
    except RuntimeError:
        return False
    return True


def _current_request() -> FastMCPRequest | None:
    """The request in flight, or None when FastMCP works outside any request
    (server start-up, task registration, the server's own calls)."""
    try:
        context = get_context()
    except RuntimeError:  # no FastMCP context at all
        context = None
    in_request = (
        context is not None and context.request_context is not None
    ) or _http_request_present()
    if not in_request:
        return None
    return FastMCPRequest(get_access_token(), get_http_headers(), context)


def _identity(request: FastMCPRequest) -> FastMCPRequest:
    return request


class ToolFilterTransform(BoundFilter, Transform):
    """A FastMCP ``Transform`` that shows each request only the tools its filter keeps.

    * In a request (any transport), every tool is judged by
      ``tool_filter.visible(Tool(server_id, name, description, parameters,
      annotations), ctx)`` with ``ctx = ctx_func(FastMCPRequest(...))``; the list
      is filtered in one ``filter(tools, ctx)`` call.
    * Outside a request (start-up, background-task registration, the server's
      own ``await mcp.list_tools()``), only the static patterns apply
      (``static_visible``): no caller is there to give a ctx, and a ctx-less
      decision would unregister task tools for everyone. Every caller is judged
      again, with its ctx, when it asks.
    * Fails closed: an exception in ``ctx`` or the filter hides the tool (in a
      listing, the whole listing), logs a warning, and never fails the request.
    * Only tools are filtered; resources and prompts pass through.

    Add it with ``mcp.add_transform(...)`` or ``FastMCP(transforms=[...])``, last
    if other transforms rename tools (it judges the names it is given).
    """

    def __init__(self, tool_filter: Any, *, server_id: str, ctx: CtxFunc | None = None) -> None:
        super().__init__(tool_filter, server_id, ctx, _identity)

    def _to_tool(self, tool: Any) -> Tool:
        return Tool(
            self._server_id,
            tool.name,
            tool.description,
            mapping_or_none(tool.parameters, "parameters"),
            mapping_or_none(tool.annotations, "annotations"),
        )

    def _ctx_thunk(self) -> Callable[[], Any] | None:
        """None outside a request; else a function giving the request's ctx, or
        raising what went wrong reading the request (so the guard hides)."""
        try:
            request = _current_request()
        except Exception as err:
            error = err  # ``err`` itself is unbound when the except block ends

            def failed() -> Any:
                raise error
            return failed
        if request is None:
            return None
        ctx_func = self._ctx
        return lambda: ctx_func(request)

    async def list_tools(self, tools: Sequence[Any]) -> Sequence[Any]:
        return keep_visible(
            self._filter, self._server_id, tools, self._to_tool, self._ctx_thunk(),
            where="fastmcp",
        )

    async def get_tool(self, name: str, call_next: Any, *, version: Any = None) -> Any:
        tool = await call_next(name, version=version)
        if tool is None:
            return None
        ctx = self._ctx_thunk()
        if ctx is None:
            keep = visible_fail_closed(
                _Static(self._filter), self._server_id, tool, self._to_tool, _no_ctx,
                where="fastmcp",
            )
        else:
            keep = visible_fail_closed(
                self._filter, self._server_id, tool, self._to_tool, ctx, where="fastmcp",
            )
        return tool if keep else None


def _no_ctx() -> None:
    return None


class _Static:
    """A filter's static part, shaped like ``visible(tool, ctx)``."""

    __slots__ = ("_filter",)

    def __init__(self, tool_filter: Any) -> None:
        self._filter = tool_filter

    def visible(self, tool: Any, ctx: Any = None) -> bool:
        return self._filter.static_visible(tool) is True
