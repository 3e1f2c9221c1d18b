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

* ``prompts/list``, ``resources/list``, ``resources/templates/list``,
  ``prompts/get`` and ``resources/read``: through the Policy's
  ``select_prompts`` and ``select_resources`` (for a ToolFilter, a Policy of
  that filter alone), with every tool of the server: a prompt or resource its
  section hides, one named like a hidden tool, and those of a server whose every
  tool is hidden are left out of the listings, and a get or read of one is passed
  on under a name (a URI) the server has not got, answered as an unknown one. A
  read of a URI the server lists is judged as that resource; of another, as
  every template that could read it (the SDK's matching) and as a resource of
  that URI.

The middleware also filters the lists by the request's ``params.filter``
(the draft MCP proposal for list filtering: ``namePatterns``,
``uriPatterns``; :mod:`toolfilter_fast.list_filter`) and advertises it in
the capabilities; that only narrows what the rules keep, and a call is
judged by the rules alone. A Policy's ``[[rename]]`` entries are applied to
the listed tools (name and description), and a call of a new name runs the
server's tool under its own name; its old name is then unknown.

The SDK 1.x has no middleware chain; there :func:`filter_server` wraps the
low-level server's ``tools/list`` and ``tools/call`` handlers
(``request_handlers``, reached through the private ``_mcp_server`` of a 1.x
``FastMCP``) with the same decisions. Those handlers get 1.x's typed
request, whose params model keeps no ``filter``, and the capabilities come
from the server's own initialization options: on 1.x there is no list
filtering and no renaming.

Importing this module imports the SDK; ``import toolfilter_fast`` does not.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

try:
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.shared import exceptions as _exceptions
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolfilter_fast.adapters.mcp_server needs the MCP SDK: pip install 'toolfilter_fast[mcp]'"
    ) from err

from .._tool import Tool
from ..list_filter import ListFilterMiddleware
from ._common import (
    FOCUS_KEY,
    MESSAGE_KEY,
    BoundFilter,
    CtxFunc,
    FocusFunc,
    MessageFunc,
    extra_record,
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

#: JSON-RPC's "method not found": a server that does not list these.
_METHOD_NOT_FOUND = -32601

#: The stand-ins of a hidden prompt's name and a hidden resource's URI.
_PROMPT_STAND_IN = "toolfilter_fast_hidden_prompt"
_URI_STAND_IN = "toolfilter-fast://hidden-resource"

#: How many pages of a listing a decision reads before it gives up (hidden).
_PAGE_LIMIT = 1000

#: The listings of prompts, resources and templates: method -> (kind, the result's key).
_EXTRA_LISTINGS = {
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("templates", "resourceTemplates"),
}

_SECRET_HEADERS = frozenset({"authorization", "cookie"})

#: The list filter, around everything the middleware does.
_LISTS = ListFilterMiddleware()


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


def _items_of(result: Any, key: str) -> list[Any]:
    """A listing's items (``key``: ``tools``, ``prompts``, ...), of its wire form
    or of either generation's model."""
    items = result.get(key) if isinstance(result, Mapping) else getattr(result, key, None)
    if items is None and not isinstance(result, Mapping) and key == "resourceTemplates":
        items = getattr(result, "resource_templates", None)
    if not isinstance(items, list):
        raise TypeError(f"a listing without a {key} list: {type(result).__name__}")
    return items


def _tools_of(result: Any) -> list[Any]:
    return _items_of(result, "tools")


def _template_matches(template: Any, uri: str, *, unknown: bool = True) -> bool:
    """Whether a resource template could read ``uri``, by the SDK's own rule: its
    RFC 6570 matcher in mcp 2.x, the rule of its high-level server's templates in
    1.x (each ``{name}`` one path segment); ``unknown`` where it cannot tell (a
    template it cannot read): True to judge the template too, when deciding a read."""
    try:
        if _MODERN_ERROR is not None:
            # mcp 2.x: mypy sees this generation.
            from mcp.shared.uri_template import UriTemplate

            return UriTemplate.parse(template).match(uri) is not None
        # mcp 1.x (mypy sees 2.x): its FastMCP's template rule, which reads nothing
        # of a template but its uri_template.
        templates: Any = importlib.import_module("mcp.server.fastmcp.resources.templates")
        holder = SimpleNamespace(uri_template=template)
        return templates.ResourceTemplate.matches(holder, uri) is not None
    except Exception:
        return unknown


async def _every_item(page: Callable[[Any], Awaitable[Any]], key: str) -> list[Any]:
    """Every item of a paginated listing (``page(cursor)`` lists one page)."""
    items: list[Any] = []
    cursor: Any = None
    for _ in range(_PAGE_LIMIT):
        listed = await page(cursor)
        items.extend(_items_of(listed, key))
        cursor = _cursor_of(listed)
        if not cursor:
            return items
    raise RuntimeError(f"a listing gave more than {_PAGE_LIMIT} pages")


def _free_name(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


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
      logs a warning, and never fails the request.
    * Prompts, resources and resource templates: listed, got and read as the
      module's docs say; a listing that read the caller is ``"private"``.
      Other methods pass.
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
        return await _LISTS(ctx, lambda inner: self._dispatch(inner, call_next))

    def _shown(self, tools: list[Any]) -> list[Any]:
        """The kept tools (wire form) under a Policy's renames; two shown
        under one name are both left out, with a warning."""
        renames = None if self._policy is None else self._policy.renames
        if not renames:
            return tools
        shown = []
        for tool in tools:
            own = tool.get("name") if isinstance(tool, Mapping) else None
            if not isinstance(own, str) or (self._server_id, own) not in renames:
                shown.append(tool)
                continue
            tool = {**tool, "name": renames.name(self._server_id, own)}
            description = renames.description(self._server_id, own, tool.get("description"))
            if description is not None:
                tool["description"] = description
            shown.append(tool)
        names = [tool.get("name") if isinstance(tool, Mapping) else None for tool in shown]
        twice = {name for name in names if name is not None and names.count(name) > 1}
        for name in sorted(twice):
            logger.warning("toolfilter_fast %s adapter: two tools of server %r would be listed "
                           "as %r (a rename): neither is", _WHERE, self._server_id, name)
        return [tool for tool, name in zip(shown, names, strict=True) if name not in twice]

    def _target(self, name: str) -> str | None:
        """The server's own name of the tool called ``name``; None for a name
        a rename took away."""
        renames = None if self._policy is None else self._policy.renames
        return renames.original(self._server_id, name) if renames else name

    async def _dispatch(self, ctx: Any, call_next: Next) -> Any:
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
            return _with_tools(result, self._shown(kept), private, per_turn)
        if method == "tools/call":
            return await self._call(ctx, call_next)
        if method in _EXTRA_LISTINGS:
            return await self._extras_listing(ctx, call_next, *_EXTRA_LISTINGS[method])
        if method in ("prompts/get", "resources/read"):
            return await self._extras_get(ctx, call_next, method)
        return await call_next(ctx)

    # --- prompts and resources (either generation) ------------------------------------

    def _extras_ctx(self, request_ctx: Any) -> Callable[[], Any]:
        request, error = self._turn_context(request_ctx)
        return raising(error) if error is not None else (lambda: self._ctx(request))

    async def _kept_extras(self, kind: str, items: list[Any], request_ctx: Any,
                           tools_page: Callable[[Any], Awaitable[Any]],
                           also: Sequence[Mapping[str, Any]] = ()) -> list[Any]:
        """The prompts, resources or templates of ``items`` this request may
        see, judged with every tool of the server (listed with ``tools_page``);
        none, with a warning, when listing the tools raised."""
        if not items or self._extras is None:
            return items
        try:
            try:
                listed = await _every_item(tools_page, "tools")
            except _SDK_ERROR as err:
                if err.error.code != _METHOD_NOT_FOUND:
                    raise
                listed = []  # a server without tools
            tools = [self._to_tool(tool) for tool in listed]
        except Exception:
            logger.warning("toolfilter_fast %s adapter: every %s (%d) of server %r hidden "
                           "because listing the tools to decide them raised", _WHERE, kind,
                           len(items), self._server_id, exc_info=True)
            return []
        return self.keep_extras(kind, items, lambda: tools, self._extras_ctx(request_ctx),
                                where=_WHERE, also=also)

    def _extras_private(self) -> bool:
        """Whether a listing of prompts or resources read the caller (a dynamic part)."""
        policy = self._extras
        return any(getattr(getattr(policy, part, None), "dynamic", True) is not False
                   for part in ("filter", "prompts", "resources"))

    async def _prompt_stand_in(self, name: str, request_ctx: Any,
                               pages: Callable[[str], Callable[[Any], Awaitable[Any]]]
                               ) -> str | None:
        """None to let ``prompts/get`` of ``name`` through; else a name the
        server has not got, to pass it on under."""
        kept = await self._kept_extras("prompts", [{"name": name}], request_ctx,
                                       pages("tools/list"))
        if kept:
            return None
        try:
            taken = {extra_record("prompts", prompt)["name"]
                     for prompt in await _every_item(pages("prompts/list"), "prompts")}
        except Exception:
            taken = set()
        return _free_name(_PROMPT_STAND_IN, taken)

    async def _uri_stand_in(self, uri: str, request_ctx: Any,
                            pages: Callable[[str], Callable[[Any], Awaitable[Any]]]
                            ) -> str | None:
        """None to let ``resources/read`` of ``uri`` through; else a URI the
        server lists as no resource and no template reads, to pass it on under.

        A listed resource is judged as listed; a URI it does not list, as every
        template that could read it and as a resource of that URI (the
        template's name); any other URI as a resource of its own. Fails closed
        (hidden) when a listing raises."""
        try:
            resources = await _every_item(pages("resources/list"), "resources")
            try:
                templates = await _every_item(pages("resources/templates/list"),
                                              "resourceTemplates")
            except _SDK_ERROR as err:
                if err.error.code != _METHOD_NOT_FOUND:
                    raise
                templates = []  # a server without templates
        except Exception:
            logger.warning("toolfilter_fast %s adapter: a read of server %r refused because "
                           "listing the resources to decide it raised", _WHERE,
                           self._server_id, exc_info=True)
            return _URI_STAND_IN
        uris = {extra_record("resources", resource)["uri"] for resource in resources}
        readers = [template for template in templates
                   if _template_matches(extra_record("templates", template)["uriTemplate"], uri)]
        if uri in uris:
            items = [resource for resource in resources
                     if extra_record("resources", resource)["uri"] == uri]
            kept = await self._kept_extras("resources", items, request_ctx, pages("tools/list"))
        elif readers:
            also = [{"uri": uri, "name": extra_record("templates", template)["name"]}
                    for template in readers]
            items = readers
            kept = await self._kept_extras("templates", items, request_ctx, pages("tools/list"),
                                           also)
        else:
            items = [{"uri": uri}]
            kept = await self._kept_extras("resources", items, request_ctx, pages("tools/list"))
        if len(kept) == len(items):
            return None
        def taken(candidate: str) -> bool:
            return candidate in uris or any(
                _template_matches(extra_record("templates", template)["uriTemplate"],
                                  candidate, unknown=False) for template in templates)

        # A few tries: a template that reads every URI reads any stand-in, as it
        # reads any URI the server has not got.
        stand_in = _URI_STAND_IN
        for _ in range(8):
            if not taken(stand_in):
                break
            stand_in += "_"
        return stand_in

    # --- prompts and resources (mcp 2.x: the middleware) -------------------------------

    def _pages(self, ctx: Any, call_next: Next) -> Callable[[str], Callable[[Any], Any]]:
        """``pages(method)``: a function listing one page of ``method`` through the
        rest of the chain, with the request's ``_meta``."""
        meta = _params(ctx).get("_meta")

        def pages(method: str) -> Callable[[Any], Any]:
            async def page(cursor: Any) -> Any:
                params: dict[str, Any] = {} if meta is None else {"_meta": meta}
                if cursor:
                    params["cursor"] = cursor
                return await call_next(dataclasses.replace(ctx, method=method, params=params))
            return page

        return pages

    async def _extras_listing(self, ctx: Any, call_next: Next, kind: str, key: str) -> Any:
        result = await call_next(ctx)
        try:
            items = _items_of(result, key)
        except Exception:
            logger.warning("toolfilter_fast %s adapter: every %s of server %r hidden because "
                           "the listing could not be read", _WHERE, kind, self._server_id,
                           exc_info=True)
            return {**result, key: []} if isinstance(result, Mapping) else result
        kept = await self._kept_extras(kind, items, ctx, self._pages(ctx, call_next)("tools/list"))
        if not isinstance(result, Mapping):
            return result
        result = {**result, key: kept}
        if "cacheScope" in result and self._extras_private():
            result["cacheScope"] = "private"
        return result

    async def _extras_get(self, ctx: Any, call_next: Next, method: str) -> Any:
        params = _params(ctx)
        field = "name" if method == "prompts/get" else "uri"
        asked = params.get(field)
        if not isinstance(asked, str) or self._extras is None:
            return await call_next(ctx)  # the SDK refuses a malformed request itself
        pages = self._pages(ctx, call_next)
        if method == "prompts/get":
            stand_in = await self._prompt_stand_in(asked, ctx, pages)
        else:
            stand_in = await self._uri_stand_in(asked, ctx, pages)
        if stand_in is None:
            return await call_next(ctx)
        return await self._as_unknown(call_next, dataclasses.replace(
            ctx, params={**params, field: stand_in}), stand_in, asked)

    async def _as_unknown(self, call_next: Next, ctx: Any, stand_in: str, name: str) -> Any:
        """The answer to ``ctx`` (a request for ``stand_in``), ``name`` put back."""
        try:
            result = await call_next(ctx)
        except Exception as err:
            answer = _renamed_error(err, stand_in, name)
            if answer is err:
                raise
            raise answer from None
        return _renamed(result, stand_in, name) if isinstance(result, Mapping) else result

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
                        ctx: Any, shown: str | None = None) -> str | None:
        """None to let the call of ``name`` through; else the name, one the
        server has not got, to pass the call on under. ``shown``: the name
        called, when a Policy's rename made it ``name`` (hidden when the rules
        hide ``name``, the server lists none, or lists ``shown`` as a tool of
        its own too); a name a rename took away is hidden."""
        listing = await self._listing(page, ctx)
        if listing is None:
            return _STAND_IN
        names, kept_names = listing
        if shown is None or shown == name:
            refused = shown is None and self._target(name) is None
            hidden = name in names and (refused or name not in kept_names)
        else:
            renames = self._policy.renames
            clash = shown in names and renames.name(self._server_id, shown) == shown
            hidden = clash or name not in kept_names
        if not hidden:
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

        target = self._target(name)
        stand_in = await self._stand_in(name if target is None else target, page, ctx,
                                        shown=None if target is None else name)
        if stand_in is None:
            if target is None or target == name:
                return await call_next(ctx)
            return await call_next(dataclasses.replace(ctx, params={**params, "name": target}))
        return await self._as_unknown(call_next, dataclasses.replace(
            ctx, params={**params, "name": stand_in}), stand_in, name)


class _HandlerFilter(ToolFilterMiddleware):
    """The same rules around a 1.x server's ``tools/list`` and ``tools/call``
    handlers, which get the typed request; the request context is the SDK's
    ``request_ctx``."""

    __slots__ = ()

    def _target(self, name: str) -> str | None:
        return name  # no renames on 1.x (see the module)

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
        """Wraps the server's ``tools/list`` and ``tools/call`` handlers, and
        those of its prompts and resources that it has."""
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

        async def as_unknown(handler: Any, request: Any, field: str, stand_in: str,
                             asked: str) -> Any:
            """The handler's answer to ``request`` with ``field`` set to the
            stand-in, ``asked`` put back in it."""
            wire = request.params.model_dump(by_alias=True, exclude_none=True)
            params = type(request.params).model_validate({**wire, field: stand_in})
            try:
                result = await handler(request.model_copy(update={"params": params}))
            except Exception as err:
                answer = _renamed_error(err, stand_in, asked)
                if answer is err:
                    raise
                raise answer from None
            answer = result.root
            wire = _renamed(answer.model_dump(by_alias=True, exclude_none=True), stand_in, asked)
            return types.ServerResult(type(answer).model_validate(wire))

        def tools_page(request: Any) -> Callable[[Any], Awaitable[Any]]:
            return pages_for(request)("tools/list")

        def pages_for(request: Any) -> Callable[[str], Callable[[Any], Awaitable[Any]]]:
            """``pages(method)``: one page of a listing of the server, by its own
            (unwrapped) handler, with the request's ``_meta``."""
            meta = request.params.meta if request.params is not None else None

            def pages(method: str) -> Callable[[Any], Awaitable[Any]]:
                request_type = listings[method]
                handler = originals.get(request_type)

                async def page(cursor: Any) -> Any:
                    if handler is None:  # the server lists none of these
                        return {_EXTRA_LISTINGS.get(method, ("", "tools"))[1]: []}
                    params = types.PaginatedRequestParams(cursor=cursor, _meta=meta)
                    listed = await handler(request_type(method=method, params=params))
                    return listed.root
                return page

            return pages

        async def call_tool(request: Any) -> Any:
            name = request.params.name
            stand_in = await self._stand_in(name, tools_page(request), request)
            if stand_in is None:
                return await call_handler(request)
            return await as_unknown(call_handler, request, "name", stand_in, name)

        listings = {"tools/list": types.ListToolsRequest,
                    "prompts/list": types.ListPromptsRequest,
                    "resources/list": types.ListResourcesRequest,
                    "resources/templates/list": types.ListResourceTemplatesRequest}
        originals = {request_type: handlers.get(request_type) for request_type in listings.values()}

        def extras_listing(kind: str, key: str, handler: Any) -> Any:
            async def listing(request: Any) -> Any:
                result = await handler(request)
                try:
                    items = _items_of(result.root, key)
                except Exception:
                    logger.warning("toolfilter_fast %s adapter: every %s of server %r hidden "
                                   "because the listing could not be read", _WHERE, kind,
                                   self._server_id, exc_info=True)
                    return types.ServerResult(type(result.root)(**{key: []}))
                kept = await self._kept_extras(kind, items, request, tools_page(request))
                return types.ServerResult(result.root.model_copy(update={key: kept}))
            return listing

        async def get_prompt(request: Any) -> Any:
            name = request.params.name
            stand_in = await self._prompt_stand_in(name, request, pages_for(request))
            if stand_in is None:
                return await prompt_handler(request)
            return await as_unknown(prompt_handler, request, "name", stand_in, name)

        async def read_resource(request: Any) -> Any:
            uri = str(request.params.uri)
            stand_in = await self._uri_stand_in(uri, request, pages_for(request))
            if stand_in is None:
                return await read_handler(request)
            return await as_unknown(read_handler, request, "uri", stand_in, uri)

        handlers[types.ListToolsRequest] = list_tools
        handlers[types.CallToolRequest] = call_tool
        if self._extras is None:
            return
        for method, (kind, key) in _EXTRA_LISTINGS.items():
            handler = originals[listings[method]]
            if handler is not None:
                handlers[listings[method]] = extras_listing(kind, key, handler)
        prompt_handler = handlers.get(types.GetPromptRequest)
        if prompt_handler is not None:
            handlers[types.GetPromptRequest] = get_prompt
        read_handler = handlers.get(types.ReadResourceRequest)
        if read_handler is not None:
            handlers[types.ReadResourceRequest] = read_resource


def filter_server(
    server: Any,
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Any:
    """``server`` with the rules around its ``tools/list`` and ``tools/call``
    (and its prompts' and resources' listings, ``prompts/get`` and ``resources/read``);
    returns the server.

    * mcp 2.x (``MCPServer``, or a low-level ``mcp.server.lowlevel.Server``): a
      :class:`ToolFilterMiddleware` appended to its middleware chain, so it
      runs inside the SDK's own middleware and any added before it.
    * mcp 1.x (``mcp.server.fastmcp.FastMCP``, or a low-level ``Server``),
      which has no middleware: the same decisions wrap the low-level server's
      ``tools/list`` and ``tools/call`` handlers in ``request_handlers``. A
      ``FastMCP`` is reached through its low-level server, the private
      attribute ``_mcp_server`` (TypeError if it is not there); a low-level
      server must have its tool handlers registered first, and its prompt and
      resource handlers too: one registered later is not wrapped.

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
