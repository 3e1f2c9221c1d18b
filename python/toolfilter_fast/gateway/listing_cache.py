"""The gateway's ``tools/list`` answers, kept in their wire form.

Most of a listing's cost is not the upstreams (their lists are cached) nor
the policy (judged once per catalog, the dynamic part per request) but the
making of the answer: FastMCP's components made into the MCP SDK's models,
checked against the protocol revision's schema and dumped, tool by tool.
:class:`ListingCache`, an MCP SDK server middleware inside the list filter,
asks the provider what this request's listing shows
(:meth:`~toolfilter_fast.gateway.provider.GatewayProvider.shown_tools`: the
catalog, the policy and the tools shown) and answers a listing it has
answered before from its wire form; any other goes down the usual way, and its
answer is kept.

The key of an answer is the protocol revision, the page cursor, the catalog
(rebuilt on any change of an upstream's list, the naming or the renames),
the policy in force (a reload makes a new one) and, for a policy that reads
ctx or the message, the tools this caller is shown: two callers shown the
same tools share an answer, a caller shown fewer never gets the longer one.
At most :data:`ANSWERS` answers are kept (the least recently used goes), and
the tool entries of those are shared between them.

An answer given again is also written again without being dumped again: the
MCP SDK's transports turn each response into its JSON text
(``model_dump_json``) as they write it, some 2 MB for 10,000 tools, and that
dump costs more than everything before it. Every connection the SDK's
``Server.run`` serves (stdio, SSE) writes through :meth:`ListingCache.wire`,
a wrapper of its write stream: a response whose ``tools`` is the very list of
an answer kept is written as :class:`WireResponse`, which dumps its envelope
(``jsonrpc``, this request's ``id``, every other key of the result) the SDK's
way and puts in the JSON text of the tools, made once per answer kept with
the same serializer (pydantic-core's). A response made any other way (a
filtered list, a new answer, another request) is written untouched.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import pydantic_core
from fastmcp.server.context import Context
from fastmcp.server.dependencies import bind_request_context
from mcp_types import JSONRPCResponse
from pydantic import PrivateAttr

from .provider import LISTING, GatewayProvider

__all__ = ["ANSWERS", "ListingCache", "WireResponse"]

#: How many ``tools/list`` answers are kept at most.
ANSWERS = 16

Next = Callable[[Any], Awaitable[Any]]


class ListingCache:
    """An MCP SDK (2.x) server middleware: ``tools/list`` answered from the
    answers kept (see the module); other requests pass untouched."""

    def __init__(self, server: Any, provider: GatewayProvider, answers: int = ANSWERS) -> None:
        self.server = server
        self.provider = provider
        self.answers = answers
        self._kept: OrderedDict[Any, dict[str, Any]] = OrderedDict()
        #: The tool entries of the kept answers, by (revision, name): an
        #: entry equal to one kept is shared, not held twice.
        self._entries: dict[tuple[Any, Any], Any] = {}
        self._catalog: Any = None
        #: The JSON text of the tools of each answer kept, made at its first
        #: write, by the id of its list (kept with it: an id is never reused
        #: while its list is held here).
        self._texts: dict[int, tuple[list[Any], str | None]] = {}

    def __repr__(self) -> str:
        return f"ListingCache({len(self._kept)} of {self.answers} answers)"

    async def __call__(self, ctx: Any, call_next: Next) -> Any:
        if getattr(ctx, "method", None) != "tools/list":
            return await call_next(ctx)
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        cursor = params.get("cursor")
        if any(key not in ("cursor", "_meta") for key in params) or \
                not isinstance(cursor, (str, type(None))):
            return await call_next(ctx)
        worked_out: dict[str, Any] = {}
        token = LISTING.set(worked_out)
        try:
            # The request's context, as FastMCP's own handler binds it: the
            # provider reads the caller (a message from the request's _meta) in it.
            with bind_request_context(ctx):
                async with Context(fastmcp=self.server):
                    key, shown = await self.provider.shown_tools()
            worked_out["shown"] = shown
            if key is None:  # failed closed: nothing to keep
                return await call_next(ctx)
            full = (getattr(ctx, "protocol_version", None), cursor, key)
            answer = self._kept.get(full)
            if answer is not None:
                self._kept.move_to_end(full)
                return dict(answer)
            result = await call_next(ctx)
            if worked_out.get("used") and isinstance(result, dict):
                self._keep(full, key[0], result)
            return result
        finally:
            LISTING.reset(token)

    def _keep(self, full: Any, catalog: Any, result: dict[str, Any]) -> None:
        if catalog is not self._catalog:
            self._catalog = catalog
            self._entries.clear()
        tools = result.get("tools")
        if isinstance(tools, list):
            shared = []
            for entry in tools:
                name = entry.get("name") if isinstance(entry, dict) else None
                if not isinstance(name, str):
                    shared.append(entry)
                    continue
                known = self._entries.setdefault((full[0], name), entry)
                shared.append(known if known == entry else entry)
            result = {**result, "tools": shared}
            self._texts[id(shared)] = (shared, None)
        old = self._kept.pop(full, None)
        if old is not None:
            self._forget(old)
        self._kept[full] = result
        while len(self._kept) > self.answers:
            self._forget(self._kept.popitem(last=False)[1])

    def _forget(self, answer: dict[str, Any]) -> None:
        self._texts.pop(id(answer.get("tools")), None)

    # --- writing an answer kept ------------------------------------------------------

    def wire(self, stream: Any) -> _WireStream:
        """``stream`` (an MCP SDK ``WriteStream[SessionMessage]``) writing each
        response of an answer kept as a :class:`WireResponse`."""
        return _WireStream(stream, self)

    def wired(self, item: Any) -> Any:
        """``item`` (a ``SessionMessage``) to write: with a :class:`WireResponse`
        when it answers with the tools of an answer kept, else ``item`` itself."""
        message = getattr(item, "message", None)
        if type(message) is not JSONRPCResponse:
            return item
        tools = message.result.get("tools")
        known = self._texts.get(id(tools))
        if known is None or known[0] is not tools:
            return item
        text = known[1]
        if text is None:
            try:
                text = pydantic_core.to_json(tools).decode()
            except ValueError:  # (pydantic's serialization error): the SDK's own dump then
                return item
            self._texts[id(tools)] = (tools, text)
        wired = WireResponse.model_construct(message.model_fields_set, jsonrpc=message.jsonrpc,
                                             id=message.id, result=message.result)
        wired._tools = text
        return dataclasses.replace(item, message=wired)


#: What stands for the tools in the envelope dumped: unguessable, made anew
#: each run, never written (it is always replaced).
_SLOT = f"toolfilter-wire-tools-{secrets.token_hex(16)}"
_QUOTED_SLOT = f'"{_SLOT}"'
#: The arguments of ``model_dump_json`` that leave a dict's values as they are.
_PLAIN = frozenset({"by_alias", "exclude_unset"})


class WireResponse(JSONRPCResponse):
    """A JSON-RPC response whose ``result["tools"]`` is already JSON text: its
    dump is the SDK's dump of the rest with that text put in (the same text
    as a full dump); a dump with other arguments (indent, ASCII only, ...)
    is the full one."""

    _tools: str = PrivateAttr(default="")

    def model_dump_json(self, **kwargs: Any) -> str:
        # (pydantic's arguments are all keywords; the SDK's transports pass
        # by_alias and exclude_unset.)
        if self._tools and set(kwargs) <= _PLAIN:
            envelope = JSONRPCResponse.model_construct(
                self.model_fields_set, jsonrpc=self.jsonrpc, id=self.id,
                result={**self.result, "tools": _SLOT})
            head, slot, tail = envelope.model_dump_json(**kwargs).partition(_QUOTED_SLOT)
            if slot and _QUOTED_SLOT not in tail:
                return head + self._tools + tail
        return super().model_dump_json(**kwargs)


class _WireStream:
    """A write stream writing through :meth:`ListingCache.wired`."""

    def __init__(self, stream: Any, cache: ListingCache) -> None:
        self._stream = stream
        self._cache = cache

    async def send(self, item: Any, /) -> None:
        await self._stream.send(self._cache.wired(item))

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WireStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc_val: BaseException | None, exc_tb: TracebackType | None
                        ) -> bool | None:
        return await self._stream.__aexit__(exc_type, exc_val, exc_tb)  # type: ignore[no-any-return]
