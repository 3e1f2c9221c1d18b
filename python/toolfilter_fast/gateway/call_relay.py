"""``tools/call`` through the gateway, sent on the upstream's one session.

FastMCP's proxy answers a call with a client of its own for that call on the
upstream's transport (a session task started, the client's era negotiated,
the call, the session task stopped), the upstream's result made into
FastMCP's ``ToolResult`` and back into the SDK's model, and the name looked
up through FastMCP's provider chain, transforms and middleware on the way:
some 4 ms a call, twice what the upstream takes. :class:`CallRelay` is the
gateway's ``tools/call`` handler in the MCP SDK's server instead. The SDK
still does what it does for any handler: it validates the request, refuses
it before ``initialize``, and shapes the answer for the client's protocol
revision (checked against that revision's schema, fields it lacks left out).
In between, the relay

* routes the name as every call is routed, once
  (:meth:`~toolfilter_fast.gateway.provider.GatewayProvider.route_tool`: the
  catalog, the policy, a hidden tool logged, audit mode);
* sends the call on the one session a stdio upstream's process keeps
  (:meth:`~toolfilter_fast.gateway.upstream.Upstream.call`), with the
  request's ``_meta`` but for the keys of the client's own connection, and
  the upstream's progress passed on to a caller who asked for it;
* answers with the upstream's result as it came: content,
  ``structuredContent``, ``isError`` and ``_meta``, but for the keys that
  describe the upstream's connection (its ``serverInfo`` is not the
  gateway's). A process that ends during the call gets an ``isError``
  answer that says so, the way FastMCP answers a tool that raised.

Any other call goes FastMCP's own way with its route already judged
(:data:`~toolfilter_fast.gateway.provider.ROUTED`, so it is neither judged
nor logged twice): an unknown or hidden tool (FastMCP's own "Unknown tool"
answer, word for word), an upstream over HTTP (FastMCP's proxy opens a
connection per request), a stdio upstream not running, and a request with
more than a name, arguments and ``_meta`` (a task, the answers to an
upstream's question).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.context import Context
from fastmcp.server.dependencies import bind_request_context
from fastmcp.telemetry import inject_trace_context
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    CallToolResult,
    TextContent,
)
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .provider import ROUTED, GatewayProvider
from .upstream import logger

__all__ = ["CallRelay"]

Handler = Callable[[Any, Any], Awaitable[Any]]

#: ``_meta`` keys that describe one MCP connection: they never cross the
#: gateway, neither on the request (the client's) nor on the result (the upstream's).
CONNECTION_KEYS = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY,
                             CLIENT_CAPABILITIES_META_KEY, SERVER_INFO_META_KEY})
#: The request's fields a relayed call reads; a request with any other goes FastMCP's way.
PLAIN = frozenset({"name", "arguments", "meta"})


class CallRelay:
    """The MCP SDK server's ``tools/call`` handler (see the module), in front of
    FastMCP's own (``fallback``)."""

    def __init__(self, server: FastMCP[Any], provider: GatewayProvider,
                 fallback: Handler) -> None:
        self.server = server
        self.provider = provider
        self.fallback = fallback

    def __repr__(self) -> str:
        return f"CallRelay({self.provider!r})"

    @classmethod
    def install(cls, server: FastMCP[Any], provider: GatewayProvider) -> CallRelay:
        """Puts a relay in place of ``server``'s ``tools/call`` handler."""
        sdk = server._mcp_server
        entry = sdk.get_request_handler("tools/call")
        if entry is None:
            raise RuntimeError("FastMCP's server has no tools/call handler to relay for")
        relay = cls(server, provider, entry.handler)
        sdk.add_request_handler("tools/call", entry.params_type, relay)
        return relay

    async def __call__(self, ctx: Any, params: Any) -> Any:
        if not params.model_fields_set <= PLAIN or params.model_extra or \
                _version_asked(params.meta):
            return await self.fallback(ctx, params)
        # The request's context, as FastMCP's own handler binds it: the provider
        # reads the caller (ctx, a message from the request's _meta) in it.
        with bind_request_context(ctx):
            async with Context(fastmcp=self.server):
                entry = await self.provider.route_tool(params.name)
        session = None if entry is None else entry.upstream.session()
        if entry is None or session is None:
            token = ROUTED.set((params.name, entry))
            try:
                return await self.fallback(ctx, params)
            finally:
                ROUTED.reset(token)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        try:
            result = await entry.upstream.call(
                session, entry.name, params.arguments, meta=_forwarded(params.meta),
                progress=_progress(ctx), input_required=modern)
        except Exception as err:
            # A capability the upstream says the client lacks: the call cannot be
            # served at all, an error on the wire (SEP-2575), as FastMCP answers it.
            if isinstance(err, MCPError) and err.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise
            return _failed(params.name, entry.upstream.name, entry.name, err)
        if isinstance(result, CallToolResult):
            return _own_meta(result)
        return result  # an upstream's question (InputRequiredResult), on a modern connection


def _failed(flat: str, server: str, name: str, err: Exception) -> CallToolResult:
    """A call the upstream did not answer with a result: an ``isError`` result
    that says why, as FastMCP answers a tool that raised; one log line."""
    logger.error("tools/call of %r (upstream %r, tool %r) failed: %s", flat, server, name, err)
    return CallToolResult(content=[TextContent(
        type="text", text=f"Error calling tool {flat!r}: {err}")], is_error=True)


def _version_asked(meta: Any) -> bool:
    """Whether the request names a FastMCP component version (FastMCP's path matches it)."""
    return isinstance(meta, Mapping) and "fastmcp" in meta


def _forwarded(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The request's ``_meta`` for the upstream: all but the client's
    connection keys and its progress token (the upstream's session sends its
    own, and the progress comes back by :func:`_progress`), with the trace
    context, as FastMCP's proxy sends it."""
    kept = {key: value for key, value in (meta or {}).items()
            if key not in CONNECTION_KEYS and key != "progress_token"}
    return inject_trace_context(kept or None)


def _progress(ctx: Any) -> ProgressFnT | None:
    """What passes the upstream's progress on to the caller, when the caller
    asked for progress (a ``progressToken``); None when not."""
    meta = ctx.meta
    token = meta.get("progress_token") if isinstance(meta, Mapping) else None
    if token is None:
        return None
    session, request_id = ctx.session, str(ctx.request_id)

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await session.send_progress_notification(token, progress, total, message,
                                                 related_request_id=request_id)

    return forward


def _own_meta(result: CallToolResult) -> CallToolResult:
    """The upstream's result without the ``_meta`` keys of its own connection."""
    meta = result.meta
    if not meta or CONNECTION_KEYS.isdisjoint(meta):
        return result
    kept = {key: value for key, value in meta.items() if key not in CONNECTION_KEYS}
    return result.model_copy(update={"meta": kept or None})
