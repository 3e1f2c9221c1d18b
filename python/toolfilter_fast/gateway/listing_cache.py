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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastmcp.server.context import Context
from fastmcp.server.dependencies import bind_request_context

from .provider import LISTING, GatewayProvider

__all__ = ["ANSWERS", "ListingCache"]

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
        self._kept[full] = result
        while len(self._kept) > self.answers:
            self._kept.popitem(last=False)
