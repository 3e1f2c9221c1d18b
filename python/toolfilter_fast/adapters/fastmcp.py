"""FastMCP, server side: a ToolFilter or a Policy as a transform that hides tools per request.

::

    from fastmcp import FastMCP
    from toolfilter_fast import Policy, ToolFilter
    from toolfilter_fast.adapters.fastmcp import ToolFilterTransform, apply_cache_scope

    def admin(tool, request):  # request: FastMCPRequest (token, headers, context, meta)
        return request.token is not None and "admin" in request.token.scopes

    mcp = FastMCP("github")
    mcp.add_transform(ToolFilterTransform(
        ToolFilter.compile(exclude=["*/delete_*"], include=["*/read_*", admin]),
        server_id="github",
    ))

    # Or the whole Policy; the turn's message and focus come in the request's _meta:
    mcp.add_transform(ToolFilterTransform(Policy.from_file("policy.toml"), server_id="github"))
    apply_cache_scope(mcp)  # tools/list results say whether they may be shared

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
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

try:
    from fastmcp.server.dependencies import (
        get_access_token,
        get_context,
        get_http_headers,
        get_http_request,
        get_server,
    )
    from fastmcp.server.transforms import Transform
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolfilter_fast.adapters.fastmcp needs FastMCP: "
        "pip install 'toolfilter_fast[fastmcp]'"
    ) from err

from .._tool import Tool
from ._common import (
    FOCUS_KEY,
    MESSAGE_KEY,
    BoundFilter,
    itself,
    keep_selected,
    keep_visible,
    logger,
    mapping_or_none,
    meta_focus,
    meta_message,
    visible_fail_closed,
)

__all__ = [
    "FOCUS_KEY",
    "MESSAGE_KEY",
    "FastMCPRequest",
    "ToolFilterTransform",
    "apply_cache_scope",
]

_WHERE = "fastmcp"


@dataclass(frozen=True)
class FastMCPRequest:
    """The default ``ctx``: what the request in flight says about its caller.

    * ``token``: the verified access token (``.client_id``, ``.scopes``,
      ``.claims``), or None without auth (stdio, in-memory, no auth provider);
    * ``headers``: the HTTP request's headers, names lower-case, with
      ``authorization`` and ``cookie`` left out; empty outside HTTP;
    * ``context``: FastMCP's ``Context`` of the request (session id, client
      info, session state), or None;
    * ``meta``: the request's ``_meta`` (a copy; empty when it has none), where
      a client puts the turn's message (:data:`MESSAGE_KEY`) and focus
      (:data:`FOCUS_KEY`).
    """

    token: Any
    headers: Mapping[str, str]
    context: Any
    meta: Mapping[str, Any] = field(default_factory=dict)


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
    request_context = None if context is None else context.request_context
    if request_context is None and not _http_request_present():
        return None
    meta = getattr(request_context, "meta", None)
    return FastMCPRequest(get_access_token(), get_http_headers(), context,
                          dict(meta) if isinstance(meta, Mapping) else {})


_DEFAULTS = (itself, meta_message, meta_focus)


class _Capture:
    """What the transform's own listing was given and kept while a call, a
    prompt or a resource of it was decided."""

    __slots__ = ("given", "kept", "ran", "transform")

    def __init__(self, transform: ToolFilterTransform) -> None:
        self.transform = transform
        self.ran = 0
        self.given: list[Any] = []
        self.kept: list[set[tuple[str, Any]]] = []


class _ListRecord:
    """What the transforms that ran for one ``tools/list`` said about caching it."""

    __slots__ = ("per_turn", "private", "ran")

    def __init__(self) -> None:
        self.ran = self.private = self.per_turn = False

    def add(self, scope: str, per_turn: bool) -> None:
        self.ran = True
        self.private = self.private or scope != "public"
        self.per_turn = self.per_turn or per_turn

    def apply(self, result: Any) -> Any:
        """``result`` with ``cacheScope`` narrowed to ``"private"`` and
        ``ttlMs`` set to 0 as the record says; only fields the result already
        has (the revisions before 2026-07-28 have neither) are set."""
        wire: dict[str, Any] = {"cacheScope": "private"} if self.private else {}
        if self.per_turn:
            wire["ttlMs"] = 0
        if isinstance(result, Mapping):
            return {**result, **{key: value for key, value in wire.items() if key in result}}
        fields = getattr(type(result), "model_fields", {})
        update = {snake: wire[camel] for camel, snake in
                  (("cacheScope", "cache_scope"), ("ttlMs", "ttl_ms"))
                  if camel in wire and snake in fields}
        return result.model_copy(update=update) if update else result


_capture: ContextVar[_Capture | None] = ContextVar("toolfilter_fast_fastmcp_capture",
                                                   default=None)
_list_record: ContextVar[_ListRecord | None] = ContextVar("toolfilter_fast_fastmcp_list",
                                                          default=None)


def _tool_key(tool: Any) -> tuple[str, Any]:
    return tool.name, getattr(tool, "version", None)


class ToolFilterTransform(BoundFilter, Transform):
    """A FastMCP ``Transform`` that shows each request only the tools its rules keep.

    The rules are a :class:`~toolfilter_fast.ToolFilter` (or any object with
    ``visible``, ``filter`` and ``static_visible``) or a
    :class:`~toolfilter_fast.Policy`.

    * In a request (any transport), every tool is judged as ``Tool(server_id,
      name, description, parameters, annotations)`` with ``ctx =
      ctx_func(FastMCPRequest(...))``: a filter's list in one ``filter(tools,
      ctx)`` call, a Policy's in one ``select(tools, ctx, message, focus)`` with
      ``message`` and ``focus`` read from the request by ``message_func`` and
      ``focus_func`` (default the request's ``_meta`` keys
      :data:`MESSAGE_KEY` and :data:`FOCUS_KEY`).
    * A call (``get_tool``): a filter judges the tool alone. A Policy's
      stages depend on the other tools of the turn (its budget, the lens), so
      the transform lists the serving server's tools again, with this
      request's ctx, message and focus, and lets the call through only when
      that list kept the tool (its name and version): a call is decided
      exactly as the list it belongs to.
    * Outside a request (start-up, background-task registration, the server's
      own ``await mcp.list_tools()``), only the static patterns apply
      (``static_visible``; a Policy's groups, focus and budget are per turn
      and do not run): no caller is there to give a ctx, and a ctx-less
      decision would unregister task tools for everyone. Every caller is judged
      again, with its ctx, when it asks.
    * Fails closed: an exception in the ctx, message or focus function, the
      filter or the policy hides the tool (in a listing, the whole listing),
      logs a warning, and never fails the request.
    * Prompts, resources and resource templates, listed and got (``prompts/get``,
      ``resources/read``), through the Policy's ``select_prompts`` and
      ``select_resources`` (for a ToolFilter, a Policy of that filter alone:
      see :func:`~toolfilter_fast.adapters._common.extras_policy`), with the
      serving server's tools as this transform is given them, listed again for
      the request: a hidden one is answered by FastMCP as an unknown one. A
      resource read through a template is judged as the template and as a
      resource of that URI. Outside a request they pass.
    * With :func:`apply_cache_scope` on the server, it also tells the
      ``tools/list`` result's ``cacheScope`` and ``ttlMs`` what it read.

    Add it with ``mcp.add_transform(...)`` or ``FastMCP(transforms=[...])``, last
    if other transforms rename tools (it judges the names it is given).
    """

    DEFAULTS = _DEFAULTS

    def _to_tool(self, tool: Any) -> Tool:
        return Tool(
            self._server_id,
            tool.name,
            tool.description,
            mapping_or_none(tool.parameters, "parameters"),
            mapping_or_none(tool.annotations, "annotations"),
        )

    def _static_filter(self) -> Any:
        return self._filter if self._policy is None else self._policy.filter

    def _request(self) -> tuple[FastMCPRequest | None, Exception | None]:
        """The request in flight (None outside one), or what went wrong reading it."""
        try:
            return _current_request(), None
        except Exception as err:
            return None, err

    def _turn(self, request: FastMCPRequest | None,
              error: Exception | None) -> Callable[[], tuple[Any, Any, Any]]:
        """A function giving the request's ``(ctx, message, focus)``, or raising
        what went wrong reading the request (so the guard hides)."""
        if error is not None:
            def failed() -> tuple[Any, Any, Any]:
                raise error
            return failed
        return self.turn(request)

    def _ctx_of(self, request: FastMCPRequest | None,
                error: Exception | None) -> Callable[[], Any]:
        """As :meth:`_turn`, the ctx alone: what a filter reads."""
        if error is not None:
            def failed() -> Any:
                raise error
            return failed
        ctx_func = self._ctx
        return lambda: ctx_func(request)

    def _per_turn(self, selection: Any) -> bool:
        """Whether a selection's list can change from one turn to the next
        with the same caller: it read the focus or the message."""
        if selection is None:
            return True
        reads_message = "groups" in selection.stages and any(
            group.mode == "dynamic" for group in self._policy.groups.groups)
        return "focus" in selection.stages or reads_message

    async def list_tools(self, tools: Sequence[Any]) -> Sequence[Any]:
        request, error = self._request()
        capture = _capture.get()
        if capture is not None and capture.transform is self:
            capture.ran += 1
            capture.given.extend(tools)
        if request is None and error is None:
            return keep_visible(self._static_filter(), self._server_id, tools, self._to_tool,
                                None, where=_WHERE)
        record = _list_record.get()
        if self._policy is None:
            failed: list[bool] = []
            kept = keep_visible(self._filter, self._server_id, tools, self._to_tool,
                                self._ctx_of(request, error), where=_WHERE,
                                on_error=lambda: failed.append(True))
            if record is not None:
                dynamic = getattr(self._filter, "dynamic", True) is not False
                record.add("private" if dynamic or failed else "public", bool(failed))
            return kept
        kept, selection = keep_selected(self._policy, self._server_id, tools, self._to_tool,
                                        self._turn(request, error), where=_WHERE)
        if record is not None:
            record.add("private" if selection is None else selection.cache_scope,
                       self._per_turn(selection))
        if capture is not None and capture.transform is self:
            capture.kept.append({_tool_key(tool) for tool in kept})
        return kept

    async def get_tool(self, name: str, call_next: Any, *, version: Any = None) -> Any:
        tool = await call_next(name, version=version)
        if tool is None:
            return None
        request, error = self._request()
        if request is None and error is None:
            keep = visible_fail_closed(
                _Static(self._static_filter()), self._server_id, tool, self._to_tool, _no_ctx,
                where=_WHERE,
            )
        elif self._policy is None:
            keep = visible_fail_closed(
                self._filter, self._server_id, tool, self._to_tool, self._ctx_of(request, error),
                where=_WHERE,
            )
        else:
            keep = await self._listed(tool)
        return tool if keep else None

    async def _listed(self, tool: Any) -> bool:
        """Whether this request's listing, through the serving server's whole
        chain, keeps ``tool`` at this transform; False (with a warning) when the
        listing fails or never reaches this transform."""
        capture = _Capture(self)
        token = _capture.set(capture)
        try:
            await get_server().list_tools(run_middleware=False)
        except Exception:
            logger.warning(
                "toolfilter_fast fastmcp adapter: call of tool %r of server %r hidden because "
                "listing the tools to decide it raised", tool.name, self._server_id,
                exc_info=True,
            )
            return False
        finally:
            _capture.reset(token)
        if not capture.kept:
            logger.warning(
                "toolfilter_fast fastmcp adapter: call of tool %r of server %r hidden because "
                "the serving server's tools/list does not pass through this transform",
                tool.name, self._server_id,
            )
            return False
        key = _tool_key(tool)
        return all(key in kept for kept in capture.kept)


    # --- prompts and resources -----------------------------------------------------

    async def _shown_extras(self, kind: str, items: Sequence[Any],
                      also: Sequence[Mapping[str, Any]] = ()) -> list[Any]:
        """The ``items`` (prompts, resources or templates) this request may see:
        :meth:`BoundFilter.keep_extras` with the serving server's tools as this
        transform is given them. Outside a request they pass, as the server's own."""
        request, error = self._request()
        if request is None and error is None:
            return list(items)
        if not items:
            return []
        try:
            tools = await self._given_tools()
        except Exception:
            logger.warning("toolfilter_fast fastmcp adapter: every %s (%d) of server %r hidden "
                           "because listing the tools to decide them raised", kind, len(items),
                           self._server_id, exc_info=True)
            return []
        return self.keep_extras(kind, items, lambda: [self._to_tool(tool) for tool in tools],
                                self._ctx_of(request, error), where=_WHERE, also=also)

    async def _given_tools(self) -> list[Any]:
        """The tools the serving server's listing gives this transform for this
        request (all of them, before it judges); RuntimeError when the listing
        does not pass through it."""
        capture = _Capture(self)
        token = _capture.set(capture)
        try:
            await get_server().list_tools(run_middleware=False)
        finally:
            _capture.reset(token)
        if not capture.ran:
            raise RuntimeError("the serving server's tools/list does not pass through this "
                               "transform")
        return capture.given

    async def list_prompts(self, prompts: Sequence[Any]) -> Sequence[Any]:
        return await self._shown_extras("prompts", prompts)

    async def get_prompt(self, name: str, call_next: Any, *, version: Any = None) -> Any:
        prompt = await call_next(name, version=version)
        return prompt if prompt is not None and await self._shown_extras("prompts", [prompt]) \
            else None

    async def list_resources(self, resources: Sequence[Any]) -> Sequence[Any]:
        return await self._shown_extras("resources", resources)

    async def get_resource(self, uri: Any, call_next: Any, *, version: Any = None) -> Any:
        resource = await call_next(uri, version=version)
        return resource if resource is not None and \
            await self._shown_extras("resources", [resource]) else None

    async def list_resource_templates(self, templates: Sequence[Any]) -> Sequence[Any]:
        return await self._shown_extras("templates", templates)

    async def get_resource_template(self, uri: Any, call_next: Any, *,
                                    version: Any = None) -> Any:
        template = await call_next(uri, version=version)
        if template is None:
            return None
        # The URI the template reads, judged as a resource of the template's name too:
        # an exclude of [resources] hides that URI whatever template would read it.
        read = {"uri": str(uri), "name": getattr(template, "name", None)}
        return template if await self._shown_extras("templates", [template], also=[read]) else None


def _no_ctx() -> None:
    return None


class _Static:
    """A filter's static part, shaped like ``visible(tool, ctx)``."""

    __slots__ = ("_filter",)

    def __init__(self, tool_filter: Any) -> None:
        self._filter = tool_filter

    def visible(self, tool: Any, ctx: Any = None) -> bool:
        return self._filter.static_visible(tool) is True


class _CacheScopeMiddleware:
    """An MCP SDK server middleware: around each ``tools/list``, a record the
    transforms write to, then the result's cache fields narrowed by it."""

    __slots__ = ()

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        if getattr(ctx, "method", None) != "tools/list":
            return await call_next(ctx)
        record = _ListRecord()
        token = _list_record.set(record)
        try:
            result = await call_next(ctx)
        finally:
            _list_record.reset(token)
        return record.apply(result) if record.ran else result

    def __repr__(self) -> str:
        return "toolfilter_fast cache scope"


def apply_cache_scope(server: Any) -> Any:
    """Make ``server``'s ``tools/list`` results carry what its
    :class:`ToolFilterTransform` s read, and return the server.

    On a 2026-07-28 session every ``tools/list`` result has ``cacheScope``
    and ``ttlMs``: FastMCP fills them from ``FastMCP(cache_ttl=...,
    cache_scope=...)``, one value for the whole server (no ``cache_ttl``:
    ``ttlMs`` 0 and ``cacheScope`` ``"private"``). After this call a list
    that a transform decided by the caller's ctx, the message or the focus
    (its selection's ``cache_scope`` is ``"private"``), or that it hid because
    something failed, is sent as ``"private"`` even where the server says
    ``"public"``; one that depends on the turn (the focus, or groups that read
    the message) or that failed is also sent with ``ttlMs`` 0, since a client
    caches ``tools/list`` under the method alone, not the message in its
    ``_meta``. The scope is only ever narrowed: other transforms, auth and
    session visibility can make a list per caller without the transform
    knowing, so a public selection leaves the server's own scope.

    FastMCP offers no per-request hook for a result's cache fields: its
    ``tools/list`` handler builds the result itself, and transforms and
    middleware see tools, not the result. The MCP SDK's server runs a
    middleware chain around each request and its serialized result
    (``Server.middleware``, marked provisional in mcp 2.3); this installs one
    there, reached through the FastMCP server's low-level server
    (``server._mcp_server``), first in the chain. TypeError if ``server`` has
    no such chain (another FastMCP or SDK generation). Call it on the server
    that clients talk to (the parent, when servers are mounted); once is
    enough, more calls change nothing.
    """
    chain = getattr(getattr(server, "_mcp_server", None), "middleware", None)
    if not isinstance(chain, list):
        raise TypeError(
            "apply_cache_scope needs a FastMCP server whose low-level MCP server has a "
            f"middleware list (FastMCP 4.1/4.2 on mcp 2.3), got {type(server).__name__}"
        )
    if not any(isinstance(middleware, _CacheScopeMiddleware) for middleware in chain):
        chain.insert(0, _CacheScopeMiddleware())
    return server
