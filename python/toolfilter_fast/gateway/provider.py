"""The gateway's one FastMCP provider: the upstreams' tools, prompts,
resources and resource templates under the gateway's names, with the Policy
on every listing and every lookup, routed by an explicit map.

Each listing builds, per kind, the list of :class:`Entry` objects: the
upstream, the upstream's **exact** name of the component (the one the policy
judges), the gateway's name (:class:`~toolfilter_fast.gateway.naming.Naming`:
``SERVER__NAME`` and ``scheme://SERVER/path``, or the upstream's own with
``--names bare``; a tool's ``[[rename]]`` first) and the FastMCP proxy
component renamed so, whose backend name is that exact name. A call, ``prompts/get`` or
``resources/read`` looks its name up in that map, and nothing else: a name is
never split back, so the name sent upstream is always the one judged. A name
that cannot be routed so is refused with one warning (never shown, never
reachable): an empty name (``SERVER__`` would be its gateway name, a prefix
and no tool), a name holding a lone surrogate (JSON text cannot carry it to a
client), a URI that is not ``scheme://...``, and two components that would get
one gateway name (neither is shown: :meth:`GatewayProvider.clashes`).

The policy runs off the event loop (:class:`PolicyRunner`), each request's
ctx and message read on the loop first. A request for a hidden component goes
to the audit log; in audit mode nothing is hidden, and the audit log says what
would have been (:mod:`~toolfilter_fast.gateway.audit`).

What costs is done once per change, not per request: each upstream's lists
are cached (:class:`~toolfilter_fast.gateway.upstream.Upstream`), the
catalog of a kind is built again only when one of those lists, the naming
mode or the policy's renames changed (:meth:`GatewayProvider.catalog`), and
the policy's static part (its patterns that read neither ctx nor message) is
judged once per catalog and policy (:class:`Judged`). What depends on the
request (ctx, the message) is judged per request, on the tools the static
part keeps; a policy that reads neither gives one answer for everyone, kept
with the catalog. A hidden tool is hidden the same on every path: a listing
and a call read the same catalog and the same judgement.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import contextvars
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastmcp.resources.template import forward_uri
from fastmcp.server.dependencies import get_context
from fastmcp.server.providers.base import Provider

from .._tool import Tool, as_mapping
from ..policy import Policy
from .audit import AuditLog, who
from .naming import URI, Naming, flat_uri
from .upstream import Upstream, logger

__all__ = ["LISTING", "ROUTED", "Entry", "GatewayProvider", "Judged", "PolicyRunner",
           "PolicyTimeout", "flat_uri", "refusal"]


#: How many callers' answers (by ctx and message) a catalog keeps under one policy.
CALLERS = 64

#: A tools listing's components as the listing cache worked them out for this
#: request (:meth:`GatewayProvider.shown_tools`), so the listing does not judge
#: them again: ``{"shown": [...]}``, and ``"used"`` once the listing took them.
LISTING: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "toolfilter tools listing", default=None)

#: A call already routed (:meth:`GatewayProvider.route_tool`) by the call
#: relay before it hands the call to FastMCP's own path: ``(name, entry)``,
#: the entry None for a tool that is unknown or hidden, so that path neither
#: judges nor logs it again.
ROUTED: contextvars.ContextVar[tuple[str, Entry | None] | None] = contextvars.ContextVar(
    "toolfilter routed call", default=None)


def refusal(kind: str, name: Any) -> str | None:
    """Why the gateway cannot route a component named ``name`` (a tool's or
    prompt's name, a resource's URI or template), or None when it can."""
    if not isinstance(name, str):
        return f"its name is {type(name).__name__}, not a string"
    if name == "":
        return "an empty name cannot be told apart from the server's prefix"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a lone surrogate, which JSON text cannot carry to a client"
    if kind in ("resources", "templates") and URI.fullmatch(name) is None:
        return "it is not a URI of the form scheme://..."
    return None


def _record(server_id: str, name: str, tool: Any) -> Tool:
    """The Tool the policy judges: the upstream's definition under its own name."""
    return Tool(server_id, name, tool.description, as_mapping(tool.parameters, "inputSchema"),
                as_mapping(tool.annotations, "annotations"), tool.title,
                as_mapping(tool.meta, "_meta"),
                as_mapping(tool.output_schema, "outputSchema"))


def _item(kind: str, server_id: str, name: str, component: Any) -> dict[str, Any]:
    """What the Policy's prompts and resources selection reads of a component."""
    key = {"prompts": "name", "resources": "uri", "templates": "uri_template"}[kind]
    item = {"server_id": server_id, key: name, "description": component.description,
            "title": component.title, "_meta": component.meta}
    if kind != "prompts":
        item["name"] = component.name
    return item


@dataclass(frozen=True)
class Entry:
    """One component of one upstream, as the gateway shows it."""

    upstream: Upstream
    #: The upstream's own name (a URI, a URI template): what the policy judges
    #: and what a request sends upstream.
    name: str
    #: The gateway's name.
    flat: str
    #: The FastMCP proxy component under the gateway's name.
    component: Any
    #: What the policy judges: a Tool for a tool, a mapping for the others.
    record: Any


class Catalog:
    """The entries of one kind, in the gateway's order, and the map of names;
    with the policy's judgements of them (:meth:`judged`), which go when the
    catalog does."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.records = [entry.record for entry in entries]
        self._at = {entry.flat: i for i, entry in enumerate(entries)}
        self._judged: tuple[Policy, dict[Any, Any]] | None = None

    def find(self, flat: str) -> int | None:
        return self._at.get(flat)

    def judged(self, policy: Policy) -> dict[Any, Any]:
        """What has been judged of this catalog under ``policy`` (the policy in
        force: another one, after a reload, starts afresh)."""
        judged = self._judged
        if judged is None or judged[0] is not policy:
            judged = self._judged = (policy, {})
        return judged[1]


@dataclass
class Judged:
    """A tools catalog under one policy: the places of the tools its static
    part keeps (every tool when it has a relevance stage, whose index is
    built over all of them), their records, and, once a listing has shown
    that the policy reads neither ctx nor message, the stage of every tool
    (``public``), the same for everyone."""

    kept: list[int]
    records: list[Any]
    public: list[str | None] | None = None


@dataclass
class _Built:
    """One kind's catalog and what it was built from (compared by identity)."""

    lists: list[list[Any]]
    names: str
    renames: Any
    entries: list[Entry]
    catalog: Catalog


class PolicyTimeout(Exception):
    """A policy evaluation did not end within its budget."""


class PolicyRunner:
    """Runs policy evaluations on worker threads, never on the event loop, each
    within ``timeout`` seconds; at most ``workers`` at a time. An evaluation past
    its budget raises :class:`PolicyTimeout` (the request fails closed); its
    thread runs on (a thread cannot be stopped) and holds its slot until it
    ends, so a policy that never returns costs at most ``workers`` threads."""

    def __init__(self, timeout: float, workers: int = 4) -> None:
        self.timeout = timeout
        self._slots = threading.BoundedSemaphore(workers)
        self._waiting: asyncio.Semaphore | None = None
        self._workers = workers

    async def run(self, work: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        if self._waiting is None:
            self._waiting = asyncio.Semaphore(self._workers)
        waiting = self._waiting
        try:
            await asyncio.wait_for(waiting.acquire(), self.timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise PolicyTimeout from None
        future: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            waiting.release()
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        def thread() -> None:
            result, error = None, None
            try:
                result = work()
            except BaseException as err:  # handed to the request, whatever it is
                error = err
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(settle, result, error)

        threading.Thread(target=thread, name="toolfilter policy", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(future),
                                          max(deadline - loop.time(), 0.0))
        except (TimeoutError, asyncio.TimeoutError):
            raise PolicyTimeout from None


def _in_request() -> bool:
    try:
        return get_context().request_context is not None
    except RuntimeError:
        return False


class GatewayProvider(Provider):
    """The upstreams' components through the policy (see the module)."""

    def __init__(self, upstreams: Sequence[Upstream], policy: Callable[[], Policy], *,
                 ctx: Callable[[], Any], message: Callable[[], str | None],
                 runner: PolicyRunner, names: str = "prefixed") -> None:
        super().__init__()
        Naming(names)  # a mode it does not know: ValueError now
        self.names = names
        self.upstreams = list(upstreams)
        self._policy = policy
        self._ctx = ctx
        self._message = message
        self._runner = runner
        self._refused: set[tuple[str, str, str]] = set()
        #: Where hidden requests are told, and the mode (``serve`` sets both).
        self.audit = AuditLog(None)
        self.digest_of: Callable[[Policy], str] = lambda policy: "-"
        self._built: dict[str, _Built] = {}

    def __repr__(self) -> str:
        return f"GatewayProvider({[u.name for u in self.upstreams]!r})"

    # --- the catalogs ----------------------------------------------------------------

    def naming(self) -> Naming:
        """How components are named now: ``--names`` and the policy's renames."""
        return Naming(self.names, self._policy().renames)

    async def catalog(self, kind: str, *, fresh: bool = True) -> Catalog:
        """Every upstream's components of ``kind`` under the gateway's names:
        servers in the servers file's order, each one's by name (URI). Two
        components that would get one name are both left out, with a warning.
        Built again only when an upstream's list, the naming mode or the
        policy's renames changed (``fresh`` is kept for the callers)."""
        return (await self._build(kind)).catalog

    async def clashes(self, kind: str) -> list[str]:
        """The names two components of ``kind`` would share, each as
        ``'NAME' (s/x, t/x)``, from the upstreams' last lists."""
        clashes = _clashes((await self._build(kind)).entries)
        return [f"{flat!r} ({', '.join(f'{e.upstream.name}/{e.name}' for e in clash)})"
                for flat, clash in clashes.items()]

    async def _lists(self, kind: str) -> list[list[Any]]:
        """Each upstream's list of ``kind``: the cached ones at once, the
        others asked for together."""
        lists: list[list[Any] | None] = [u.cached(kind) for u in self.upstreams]
        missing = [i for i, found in enumerate(lists) if found is None]
        if missing:
            answers = await asyncio.gather(*(self.upstreams[i].listing(kind) for i in missing))
            for i, found in zip(missing, answers, strict=True):
                lists[i] = found
        return [found if found is not None else [] for found in lists]

    async def _build(self, kind: str) -> _Built:
        lists = await self._lists(kind)
        renames = self._policy().renames
        built = self._built.get(kind)
        if built is not None and built.names == self.names and built.renames is renames \
                and all(a is b for a, b in zip(built.lists, lists, strict=True)):
            return built
        entries = await self._named(kind, lists, Naming(self.names, renames))
        clashes = _clashes(entries)
        for flat, clash in clashes.items():
            self._refuse_clash(kind, flat, clash)
        catalog = Catalog([entry for entry in entries if entry.flat not in clashes])
        built = self._built[kind] = _Built(lists, self.names, renames, entries, catalog)
        return built

    async def _named(self, kind: str, lists: list[list[Any]], naming: Naming) -> list[Entry]:
        entries: list[Entry] = []
        for upstream, components in zip(self.upstreams, lists, strict=True):
            entries.extend(self._entries(kind, upstream, components, naming))
        return entries

    def _refuse_clash(self, kind: str, flat: str, clash: list[Entry]) -> None:
        key = (kind, "-", repr((flat, [(e.upstream.name, e.name) for e in clash])))
        if key not in self._refused:
            self._refused.add(key)
            logger.warning("%s %s would all be named %r: none is shown, and a request for that "
                           "name is answered as unknown", _plural(kind),
                           " and ".join(f"{e.upstream.name}/{e.name}" for e in clash), flat)

    def _entries(self, kind: str, upstream: Upstream, components: list[Any],
                 naming: Naming) -> list[Entry]:
        server = upstream.name
        found = []
        for component in components:
            name = _name_of(kind, component)
            why = refusal(kind, name)
            if why is not None:
                self._refuse(kind, server, name, why)
                continue
            flat = naming.name(kind, server, name)
            assert flat is not None
            field = {"resources": "uri", "templates": "uri_template"}.get(kind, "name")
            update: dict[str, Any] = {field: flat}
            if kind == "tools":
                update["description"] = naming.description(server, name, component.description)
            shown = component.model_copy(update=update)
            backend = getattr(shown, "_backend_uri" if kind == "resources" else
                              "_backend_uri_template" if kind == "templates" else
                              "_backend_name", None)
            if backend != name:  # FastMCP did not keep the upstream's name: no route
                self._refuse(kind, server, name, "its upstream name was not kept")
                continue
            try:
                record = _record(server, name, component) if kind == "tools" \
                    else _item(kind, server, name, component)
            except (TypeError, ValueError):
                self._refuse(kind, server, name, "its definition cannot be read")
                continue
            found.append((name, Entry(upstream, name, flat, shown, record)))
        found.sort(key=lambda pair: pair[0])
        return [entry for _, entry in found]

    def _refuse(self, kind: str, server: str, name: Any, why: str) -> None:
        key = (kind, server, repr(name))
        if key not in self._refused:
            self._refused.add(key)
            logger.warning("upstream %r lists %s %r: not shown, and no request reaches it: %s",
                           server, _one(kind), name, why)

    # --- judging ---------------------------------------------------------------------

    def _caller(self) -> tuple[Policy, Any, str | None]:
        """The policy in force and the request's ctx and message, read on the loop."""
        return self._policy(), self._ctx(), self._message()

    async def _judge(self, what: str, work: Callable[[], Any], ctx: Any) -> Any | None:
        """``work()`` off the loop; None (fail closed, one log line) when it raises
        an ``Exception`` or is past the policy's budget."""
        try:
            return await self._runner.run(work)
        except PolicyTimeout:
            logger.warning("%s refused for client %s: the policy did not answer within %g s",
                           what, _client(ctx), self._runner.timeout)
        except Exception:
            logger.warning("%s refused for client %s: the policy raised", what, _client(ctx),
                           exc_info=True)
        return None

    def _hidden(self, kind: str, name: str, stage: str, ctx: Any, policy: Policy,
                server: str) -> bool:
        """Logs a request for a component the policy hides; True when it is
        hidden (enforce mode), False in audit mode (it goes through)."""
        enforce = self.audit.mode_of(policy) == "enforce"
        if _in_request():
            verb = "called" if kind == "tools" else "asked for"
            logger.warning("hidden %s %s: client %s, %s %r, stage %s%s", _one(kind), verb,
                           _client(ctx), _one(kind), name, stage,
                           "" if enforce else " (audit mode: let through)")
            self.audit.event("hidden" if enforce else "would_hide", request=_request(kind),
                             who=who(ctx), name=name, server=server, stage=stage,
                             policy=self.digest_of(policy))
        return enforce

    async def _listed(self, kind: str, catalog: Catalog, tools: Catalog,
                      judged: Callable[[Policy, Any, Any], Any], what: str) -> list[Any]:
        policy, ctx, message = self._caller()
        # A prompts or resources listing is judged with the tools: the answer
        # for everyone is kept with this catalog and that tools catalog.
        memo = catalog.judged(policy)
        public = memo.get("listed")
        if public is not None and public[0] is tools:
            return public[1]  # type: ignore[no-any-return]
        selection = await self._judge(what, lambda: judged(policy, ctx, message), ctx)
        if self.audit.mode_of(policy) == "audit":
            items = [{"name": entry.flat, "stage": "policy" if selection is None
                      else selection.stage_of(i)} for i, entry in enumerate(catalog.entries)
                     if selection is None or selection.stage_of(i) is not None]
            if items:
                self.audit.event("would_hide", request=_method(kind), who=who(ctx),
                                 items=items, policy=self.digest_of(policy))
            return [entry.component for entry in catalog.entries]
        if selection is None:
            return []
        shown = [entry.component for i, entry in enumerate(catalog.entries)
                 if selection.stage_of(i) is None]
        if selection.cache_scope == "public":
            memo["listed"] = (tools, shown)  # the last tools catalog's only
        return shown

    async def _prepared(self, tools: Catalog, policy: Policy, ctx: Any) -> Judged | None:
        """The static part of ``policy`` judged on ``tools``, once (None: the
        policy raised or was past its budget, and the request fails closed)."""
        memo = tools.judged(policy)
        judged = memo.get("tools")
        if judged is not None:
            return judged  # type: ignore[no-any-return]
        records = tools.records

        def work() -> Judged:
            if policy.relevance is not None:
                return Judged(list(range(len(records))), records)
            kept = policy.filter.static_mask(records, indices=True)
            return Judged(kept, [records[i] for i in kept])

        judged = await self._judge("a tools listing", work, ctx)
        if judged is not None:
            memo["tools"] = judged
        return judged

    # --- tools -----------------------------------------------------------------------

    async def _list_tools(self) -> Sequence[Any]:
        worked_out = LISTING.get()
        if worked_out is not None and "shown" in worked_out:
            worked_out["used"] = True
            return worked_out.pop("shown")  # type: ignore[no-any-return]
        return (await self.shown_tools())[1]

    async def shown_tools(self) -> tuple[Any, list[Any]]:
        """What this caller's tools listing shows: a key of it (the catalog,
        the policy and, when the policy reads ctx or message, the places of the
        tools shown; None when it failed closed) and the components."""
        tools = await self.catalog("tools")
        policy, ctx, message = self._caller()
        judged = await self._prepared(tools, policy, ctx)
        if self.audit.mode_of(policy) == "audit":
            return await self._audited_tools(tools, judged, policy, ctx, message)
        if judged is None:
            return None, []
        memo = tools.judged(policy)
        shown = memo.get("shown")
        if shown is not None:
            return (tools, policy), shown
        stages = await self._caller_stages(tools, judged, policy, ctx, message)
        if stages is None:
            return None, []
        # A caller's stages kept are one list for as long as they are kept: what
        # it shows is worked out once for them (a walk of every tool, most of a
        # listing's cost here with thousands), not at every listing. Stages
        # judged anew at each request (a function pattern) are not kept here either.
        listings: OrderedDict[int, tuple[list[str | None], tuple[int, ...], list[Any]]] = \
            memo.setdefault("listings", OrderedDict())
        known = listings.get(id(stages))
        if known is not None and known[0] is stages:
            listings.move_to_end(id(stages))
            kept, shown = known[1], known[2]
        else:
            kept = tuple(i for i, stage in enumerate(stages) if stage is None)
            shown = [tools.entries[i].component for i in kept]
            if stages is judged.public or any(
                    held is stages for held in memo.get("callers", {}).values()):
                listings[id(stages)] = (stages, kept, shown)
                while len(listings) > CALLERS:
                    listings.popitem(last=False)
        if judged.public is not None:
            memo["shown"] = shown
            return (tools, policy), shown
        return (tools, policy, kept), shown

    async def _audited_tools(self, tools: Catalog, judged: Judged | None, policy: Policy,
                             ctx: Any, message: str | None) -> tuple[Any, list[Any]]:
        """Audit mode: every tool is shown, and what enforce mode would have
        hidden from this caller (and by which stage) goes to the audit log, at
        every listing (the answer's key is the catalog's, so a cached answer
        is still logged here first)."""
        stages = None if judged is None else await self._caller_stages(
            tools, judged, policy, ctx, message)
        items = [{"name": entry.flat, "stage": "policy" if stages is None else stages[i]}
                 for i, entry in enumerate(tools.entries)
                 if stages is None or stages[i] is not None]
        if items:
            self.audit.event("would_hide", request="tools/list", who=who(ctx),
                             items=items, policy=self.digest_of(policy))
        return (tools, policy, "audit"), [entry.component for entry in tools.entries]

    async def _caller_stages(self, tools: Catalog, judged: Judged, policy: Policy, ctx: Any,
                             message: str | None) -> list[str | None] | None:
        """The stage that hides each tool of ``tools`` from this caller (None:
        shown), judged in the listing; None when the policy failed closed.

        The part that reads ctx or the message is judged per request, but a
        policy of patterns only (strings, regexes, annotations, CEL: no
        function, whose answer may change from one call to the next) answers
        the same for the same ctx and message: its answer is kept per caller
        (ctx and message as JSON), for at most :data:`CALLERS` callers."""
        if judged.public is not None:
            return judged.public
        memo = tools.judged(policy)
        caller = _caller_key(memo, policy, ctx, message)
        callers: OrderedDict[str, list[str | None]] = memo.setdefault("callers", OrderedDict())
        if caller is not None and caller in callers:
            callers.move_to_end(caller)
            return callers[caller]
        records = judged.records
        selection = await self._judge("a tools listing", lambda: policy.select(
            records, ctx, message), ctx)
        if selection is None:
            return None
        stages: list[str | None] = ["visibility"] * len(tools.entries)
        for j, i in enumerate(judged.kept):
            stages[i] = selection.stage_of(j)
        if selection.cache_scope == "public":
            judged.public = stages
        elif caller is not None:
            callers[caller] = stages
            while len(callers) > CALLERS:
                callers.popitem(last=False)
        return stages

    async def _get_tool(self, name: str, version: Any = None) -> Any:
        routed = ROUTED.get()
        if routed is not None and routed[0] == name:  # this call was judged already
            entry: Entry | None = routed[1]
        else:
            entry = await self.route_tool(name)
        return None if entry is None else _versioned(entry.component, version)

    async def route_tool(self, name: str) -> Entry | None:
        """The entry a call of the gateway's tool ``name`` goes to, or None when
        the catalog has no such tool or the policy hides it from this caller
        (logged: :meth:`_hidden`); in audit mode a hidden tool is logged and
        routed. The one judgement of a call, whichever path sends it upstream."""
        tools = await self.catalog("tools", fresh=False)
        index = tools.find(name)
        if index is None:
            return None
        entry = tools.entries[index]
        policy, ctx, message = self._caller()
        judged = await self._prepared(tools, policy, ctx)
        known = None if judged is None else judged.public
        if judged is not None and known is None:
            memo = tools.judged(policy)
            known = memo.get("callers", {}).get(_caller_key(memo, policy, ctx, message))
        if judged is None:
            stage: str | None = "policy"
        elif known is not None:
            stage = known[index]  # as this caller's listing was judged
        else:
            stage = await self._call_stage(name, tools, index, judged, policy, ctx, message)
        if stage is not None and self._hidden("tools", name, stage, ctx, policy,
                                              entry.upstream.name):
            return None
        return entry

    async def _call_stage(self, name: str, tools: Catalog, index: int, judged: Judged,
                          policy: Policy, ctx: Any, message: str | None) -> str | None:
        """The stage that hides the tool at ``index`` from this caller (None: shown)."""
        at = bisect.bisect_left(judged.kept, index)
        if at == len(judged.kept) or judged.kept[at] != index:
            return "visibility"  # the static part hides it, for everyone
        # Visibility and groups judge each tool by itself; relevance and the
        # budget depend on the whole listing, so the call is judged in it.
        alone = policy.relevance is None and policy.max_tools is None
        records = [tools.records[index]] if alone else judged.records
        where = 0 if alone else at
        selection = await self._judge(f"a call to {name!r}", lambda: policy.select(
            records, ctx, message), ctx)
        return "policy" if selection is None else selection.stage_of(where)

    # --- prompts ---------------------------------------------------------------------

    async def _list_prompts(self) -> Sequence[Any]:
        prompts, tools = await asyncio.gather(self.catalog("prompts"),
                                              self.catalog("tools", fresh=False))
        return await self._listed("prompts", prompts, tools, _select_extras(
            "prompts", prompts.entries, tools), "a prompts listing")

    async def _get_prompt(self, name: str, version: Any = None) -> Any:
        prompts, tools = await asyncio.gather(self.catalog("prompts", fresh=False),
                                              self.catalog("tools", fresh=False))
        index = prompts.find(name)
        if index is None:
            return None
        entry = prompts.entries[index]
        if await self._one_kept("prompts", [entry.record], tools, name, entry.upstream.name):
            return _versioned(entry.component, version)
        return None

    async def _one_kept(self, kind: str, records: list[Any], tools: Catalog, name: str,
                        server: str) -> bool:
        """Whether the policy keeps every one of ``records`` (prompts or
        resources) for this caller (or audit mode lets them through); one log
        line when not."""
        policy, ctx, _ = self._caller()
        tool_records = tools.records
        method = policy.select_prompts if kind == "prompts" else policy.select_resources
        selection = await self._judge(f"a request for {name!r}", lambda: method(
            records, tool_records, ctx), ctx)
        stages = ["policy"] if selection is None else \
            [selection.stage_of(i) for i in range(len(records))]
        stage = next((s for s in stages if s is not None), None)
        return stage is None or not self._hidden(kind, name, stage, ctx, policy, server)

    # --- resources -------------------------------------------------------------------

    async def _list_resources(self) -> Sequence[Any]:
        resources, tools = await asyncio.gather(self.catalog("resources"),
                                                self.catalog("tools", fresh=False))
        return await self._listed("resources", resources, tools, _select_extras(
            "resources", resources.entries, tools), "a resources listing")

    async def _list_resource_templates(self) -> Sequence[Any]:
        templates, tools = await asyncio.gather(self.catalog("templates"),
                                                self.catalog("tools", fresh=False))
        return await self._listed("templates", templates, tools, _select_extras(
            "resources", templates.entries, tools), "a resource templates listing")

    async def _get_resource(self, uri: str, version: Any = None) -> Any:
        resources, tools = await asyncio.gather(self.catalog("resources", fresh=False),
                                                self.catalog("tools", fresh=False))
        index = resources.find(uri)
        if index is None:
            return None
        entry = resources.entries[index]
        if await self._one_kept("resources", [entry.record], tools, uri, entry.upstream.name):
            return _versioned(entry.component, version)
        return None

    async def _get_resource_template(self, uri: str, version: Any = None) -> Any:
        resources, templates, tools = await asyncio.gather(
            self.catalog("resources", fresh=False), self.catalog("templates", fresh=False),
            self.catalog("tools", fresh=False))
        if resources.find(uri) is not None:
            return None  # a listed resource answers for its own URI, shown or not
        matching = [(entry, params) for entry in templates.entries
                    if (params := entry.component.matches(uri)) is not None]
        if not matching or len({entry.upstream.name for entry, _ in matching}) > 1:
            return None  # no template, or templates of two servers: no one route
        entry, params = matching[0]
        # The template, and the URI it reads as a resource of the same name:
        # an exclude of [resources] hides that URI whatever template reads it.
        read = {"server_id": entry.upstream.name, "name": entry.component.name,
                "uri": forward_uri(entry.name, params, uri)}
        if await self._one_kept("resources", [entry.record, read], tools, uri,
                                entry.upstream.name):
            return _versioned(entry.component, version)
        return None

    # --- FastMCP's other ways to a tool: none through the gateway ------------------------

    async def get_app_tool(self, app_name: str, tool_name: str) -> Any:
        return None

    async def _get_tool_by_hash(self, tool_hash: str, tool_name: str) -> Any:
        return None

    async def get_tasks(self) -> Sequence[Any]:
        return []


def _caller_key(memo: dict[Any, Any], policy: Policy, ctx: Any, message: str | None
                ) -> str | None:
    """The key of a caller's answers: ctx and message as JSON; None when the
    policy has a function pattern (its answers are not kept) or ctx is no JSON."""
    pure = memo.get("pure")
    if pure is None:
        patterns = (*policy.filter.include, *policy.filter.exclude)
        pure = memo["pure"] = not any(callable(pattern) for pattern in patterns)
    if not pure:
        return None
    try:
        return json.dumps([ctx, message], sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def _select_extras(kind: str, entries: list[Entry], tools: Catalog
                   ) -> Callable[[Policy, Any, Any], Any]:
    items = [entry.record for entry in entries]
    tool_records = tools.records
    if kind == "prompts":
        return lambda policy, ctx, _message: policy.select_prompts(items, tool_records, ctx)
    return lambda policy, ctx, _message: policy.select_resources(items, tool_records, ctx)


def _name_of(kind: str, component: Any) -> Any:
    if kind == "resources":
        return str(component.uri)
    if kind == "templates":
        return component.uri_template
    return component.name


def _clashes(entries: list[Entry]) -> dict[str, list[Entry]]:
    """The gateway names that more than one entry would get, in name order."""
    by_name: dict[str, list[Entry]] = {}
    for entry in entries:
        by_name.setdefault(entry.flat, []).append(entry)
    return {flat: by_name[flat] for flat in sorted(by_name) if len(by_name[flat]) > 1}


def _method(kind: str) -> str:
    return {"templates": "resources/templates/list"}.get(kind, f"{kind}/list")


def _request(kind: str) -> str:
    return {"tools": "tools/call", "prompts": "prompts/get"}.get(kind, "resources/read")


def _plural(kind: str) -> str:
    return {"templates": "resource templates"}.get(kind, kind)


def _one(kind: str) -> str:
    return {"tools": "tool", "prompts": "prompt", "resources": "resource",
            "templates": "resource template"}[kind]


def _client(ctx: Any) -> str:
    client = ctx.get("client_id") if isinstance(ctx, Mapping) else None
    return "-" if client is None else repr(client)


def _versioned(component: Any, version: Any) -> Any:
    if version is not None and not version.matches(component.version):
        return None
    return component
