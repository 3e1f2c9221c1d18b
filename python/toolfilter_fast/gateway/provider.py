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
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
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

__all__ = ["Entry", "GatewayProvider", "PolicyRunner", "PolicyTimeout", "flat_uri", "refusal"]


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
    """The entries of one kind, in the gateway's order, and the map of names."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self._at = {entry.flat: i for i, entry in enumerate(entries)}

    def find(self, flat: str) -> int | None:
        return self._at.get(flat)


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

    def __repr__(self) -> str:
        return f"GatewayProvider({[u.name for u in self.upstreams]!r})"

    # --- the catalogs ----------------------------------------------------------------

    def naming(self) -> Naming:
        """How components are named now: ``--names`` and the policy's renames."""
        return Naming(self.names, self._policy().renames)

    async def catalog(self, kind: str, *, fresh: bool = True) -> Catalog:
        """Every upstream's components of ``kind`` under the gateway's names:
        servers in the servers file's order, each one's by name (URI). Two
        components that would get one name are both left out, with a warning."""
        entries = await self._named(kind, fresh)
        clashes = _clashes(entries)
        for flat, clash in clashes.items():
            self._refuse_clash(kind, flat, clash)
        return Catalog([entry for entry in entries if entry.flat not in clashes])

    async def clashes(self, kind: str) -> list[str]:
        """The names two components of ``kind`` would share, each as
        ``'NAME' (s/x, t/x)``, from the upstreams' last lists."""
        clashes = _clashes(await self._named(kind, False))
        return [f"{flat!r} ({', '.join(f'{e.upstream.name}/{e.name}' for e in clash)})"
                for flat, clash in clashes.items()]

    async def _named(self, kind: str, fresh: bool) -> list[Entry]:
        naming = self.naming()
        lists = await asyncio.gather(*(u.listing(kind, fresh=fresh) for u in self.upstreams))
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

    async def _listed(self, kind: str, catalog: Catalog, judged: Callable[[Policy, Any, Any], Any],
                      what: str) -> list[Any]:
        policy, ctx, message = self._caller()
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
        return [entry.component for i, entry in enumerate(catalog.entries)
                if selection.stage_of(i) is None]

    # --- tools -----------------------------------------------------------------------

    async def _list_tools(self) -> Sequence[Any]:
        tools = await self.catalog("tools")
        records = [entry.record for entry in tools.entries]
        return await self._listed("tools", tools, lambda policy, ctx, message:
                                  policy.select(records, ctx, message), "a tools listing")

    async def _get_tool(self, name: str, version: Any = None) -> Any:
        tools = await self.catalog("tools", fresh=False)
        index = tools.find(name)
        if index is None:
            return None
        entry = tools.entries[index]
        policy, ctx, message = self._caller()
        # Visibility and groups judge each tool by itself; relevance and the
        # budget depend on the whole listing, so the call is judged in it.
        alone = policy.relevance is None and policy.max_tools is None
        records = [entry.record] if alone else [e.record for e in tools.entries]
        at = 0 if alone else index
        selection = await self._judge(f"a call to {name!r}", lambda: policy.select(
            records, ctx, message), ctx)
        stage = "policy" if selection is None else selection.stage_of(at)
        if stage is not None and self._hidden("tools", name, stage, ctx, policy,
                                              entry.upstream.name):
            return None
        return _versioned(entry.component, version)

    # --- prompts ---------------------------------------------------------------------

    async def _list_prompts(self) -> Sequence[Any]:
        prompts, tools = await asyncio.gather(self.catalog("prompts"),
                                              self.catalog("tools", fresh=False))
        return await self._listed("prompts", prompts, _select_extras(
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
        tool_records = [entry.record for entry in tools.entries]
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
        return await self._listed("resources", resources, _select_extras(
            "resources", resources.entries, tools), "a resources listing")

    async def _list_resource_templates(self) -> Sequence[Any]:
        templates, tools = await asyncio.gather(self.catalog("templates"),
                                                self.catalog("tools", fresh=False))
        return await self._listed("templates", templates, _select_extras(
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


def _select_extras(kind: str, entries: list[Entry], tools: Catalog
                   ) -> Callable[[Policy, Any, Any], Any]:
    items = [entry.record for entry in entries]
    tool_records = [entry.record for entry in tools.entries]
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
