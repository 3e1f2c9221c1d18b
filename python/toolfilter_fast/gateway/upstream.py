"""One server behind the gateway: a FastMCP ``ProxyProvider`` that knows when
its server is gone or slow, and never makes a request wait on it for longer
than its deadline.

FastMCP's proxy does the protocol: each query gets a fresh ``ProxyClient`` on
the upstream's transport (what ``fastmcp.server.create_proxy`` does), and a
stdio upstream keeps one process, and one MCP session, for all of them. A
call of a stdio upstream's tool skips the fresh client: it goes straight on
that session (:meth:`Upstream.call`, sent by the gateway's
:class:`~toolfilter_fast.gateway.call_relay.CallRelay`). What this module adds
is the upstream's health, and its lists as the gateway reads them
(:meth:`Upstream.listing`, by the upstream's own names), cached:

* each list (tools, prompts, resources, resource templates) is kept after it
  is read and served from memory until the upstream says it changed
  (``notifications/tools/list_changed``, ``prompts/list_changed``,
  ``resources/list_changed``: the list is dropped and read again at the next
  request), the gateway is reloaded (:meth:`Upstream.forget`), the upstream
  goes down (every list dropped), or it is ``list_ttl`` seconds old;
* **up**: a list that is not cached is asked for, and the answer waited for
  at most ``list_timeout`` seconds from when the question was sent (requests
  that come meanwhile wait for the same answer; a question sent before a
  change notice is not joined, and its answer not kept);
* **slow**: it did not answer within that deadline. One log line says so, its
  components are left out, and no request waits for it: the question stays
  asked in the background, and its answer (within ``start_timeout``) makes it
  up again, with a log line;
* **down**: it failed to start, its answer was an error, or it did not
  answer within ``start_timeout``. Its components are left out at once. A
  stdio upstream whose process has ended is not started again behind the
  user's back (a reload does that); any other is asked again in the
  background, at most once every ``RETRY_INTERVAL`` seconds.

An upstream that lists a tool or prompt name twice: both are named in a
warning, and neither is shown or callable (a call cannot tell them apart).
Everything that fails inside is caught: an upstream's trouble hides its own
components and never fails the gateway's request.

A stdio upstream's stderr goes through :class:`StderrRelay`: each line logged
with the server's name, at most ``STDERR_LINES`` lines every
``STDERR_WINDOW`` seconds (the rest counted in one line), so a noisy server
cannot flood the gateway's log.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import select
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import IO, Any

from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import (
    ClientTransport,
    SSETransport,
    StdioTransport,
    StreamableHttpTransport,
)
from fastmcp.server.providers.proxy import ProxyClient, ProxyProvider
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT

from ..sdk_hints import hints_as_sent
from .servers import ServerSpec

__all__ = ["KINDS", "LIST_TTL", "StderrRelay", "Upstream", "UpstreamGone", "logger"]

logger = logging.getLogger("toolfilter_fast.gateway")
stderr_logger = logging.getLogger("toolfilter_fast.gateway.stderr")

#: The lists an upstream has: tools, prompts, resources, resource templates.
KINDS = ("tools", "prompts", "resources", "templates")
#: How long an upstream's list is served from the cache at most before it is
#: asked again (``--list-ttl``), in seconds; a change notice drops it sooner.
LIST_TTL = 60.0
#: FastMCP's own proxy cache (its lookups; the gateway routes by its own map).
CACHE_TTL = 300.0
#: The list each change notice drops.
_CHANGED = {"notifications/tools/list_changed": ("tools",),
            "notifications/prompts/list_changed": ("prompts",),
            "notifications/resources/list_changed": ("resources", "templates")}
#: What a listing of an upstream that is down or slow gives: one object, so the
#: gateway sees that nothing changed (never mutated).
_NOTHING: list[Any] = []
#: How often an upstream that is down (and may come back) is asked again, at most.
RETRY_INTERVAL = 10.0
#: At most this many stderr lines of one upstream are logged every STDERR_WINDOW seconds.
STDERR_LINES = 20
STDERR_WINDOW = 10.0
#: A longer stderr line is cut to this many characters.
STDERR_WIDTH = 1000


class UpstreamGone(RuntimeError):
    """A stdio upstream's process has ended; it is not started again behind the user's back."""


class _OneLifeStdio(StdioTransport):
    """FastMCP's stdio transport, but a process that has ended is not replaced:
    connecting again raises :class:`UpstreamGone` until :meth:`revive`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ended = False

    def gone(self) -> bool:
        """Whether the process has ended (FastMCP's transport checks these same
        two things, and starts a new process when either says it is gone)."""
        task = self._connect_task
        if task is not None and (task.done() or self._is_session_dead()):
            self.ended = True
        return self.ended

    def live_session(self) -> ClientSession | None:
        """The process's one MCP session while it runs (None before the first
        connect, or once the process has ended)."""
        session: ClientSession | None = self._session
        return None if session is None or self.gone() else session

    async def connect(self, **kwargs: Any) -> Any:
        if self.gone():
            raise UpstreamGone("its process has exited")
        return await super().connect(**kwargs)

    async def revive(self) -> None:
        """Reaps what is left of the old process, so the next connect starts a new one."""
        await self.disconnect()  # type: ignore[no-untyped-call]
        self.ended = False


class StderrRelay:
    """A pipe for an upstream's stderr, read on a thread: each line logged as
    ``upstream 'NAME': LINE``, at most :data:`STDERR_LINES` lines every
    :data:`STDERR_WINDOW` seconds; the lines past that are counted, and the
    count logged when the next window opens (or the pipe closes)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._read, write_end = os.pipe()
        self.file: IO[str] = os.fdopen(write_end, "w")
        self._window = 0.0
        self._count = 0
        self._dropped = 0
        threading.Thread(target=self._run, name=f"stderr of {name}", daemon=True).start()

    def _run(self) -> None:
        pending = b""
        while True:
            wait = max(self._window + STDERR_WINDOW - time.monotonic(), 0.0) \
                if self._dropped else None
            try:
                ready, _, _ = select.select([self._read], [], [], wait)
                chunk = os.read(self._read, 65536) if ready else None
            except (OSError, ValueError):
                break
            if chunk is None:  # the window is over: say what it dropped
                self._flush_dropped()
                continue
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for raw in lines:
                self._line(raw.decode("utf-8", "replace").rstrip("\r"))
        if pending:
            self._line(pending.decode("utf-8", "replace"))
        self._flush_dropped()

    def _line(self, text: str) -> None:
        now = time.monotonic()
        if now - self._window >= STDERR_WINDOW:
            self._flush_dropped()
            self._window, self._count = now, 0
        self._count += 1
        if self._count > STDERR_LINES:
            self._dropped += 1
            return
        if len(text) > STDERR_WIDTH:
            text = text[:STDERR_WIDTH] + "..."
        stderr_logger.info("upstream %r: %s", self.name, text)

    def _flush_dropped(self) -> None:
        if self._dropped:
            stderr_logger.warning("upstream %r: %d more stderr lines not logged (more than %d "
                                  "in %g s)", self.name, self._dropped, STDERR_LINES,
                                  STDERR_WINDOW)
            self._dropped = 0


def _transport(spec: ServerSpec, stderr: IO[str] | None = None) -> ClientTransport:
    if spec.kind == "stdio":
        assert spec.command is not None
        return _OneLifeStdio(spec.command, list(spec.args), env=dict(spec.env) or None,
                             cwd=spec.cwd, keep_alive=True, log_file=stderr)
    assert spec.url is not None
    transport = spec.transport
    if transport is None:
        transport = "sse" if spec.url.rstrip("/").endswith("/sse") else "http"
    if transport == "sse":
        return SSETransport(spec.url, headers=dict(spec.headers))
    return StreamableHttpTransport(spec.url, headers=dict(spec.headers))


def _why(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    cause = err.__cause__ or err.__context__
    if not text and cause is not None:
        return _why(cause)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _background(coro: Awaitable[Any]) -> asyncio.Task[Any]:
    """A task that outlives the request that started it, in a context of its
    own (no request's context variables in it)."""
    return contextvars.Context().run(asyncio.ensure_future, coro)


class _ChangeNotices(MessageHandler):
    """The upstream's change notices, to its :class:`Upstream`: each drops the
    lists it names. A stdio upstream's one session carries them whenever they
    come; an HTTP upstream's only while the gateway has a request open on it."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    async def on_notification(self, message: Any) -> None:
        kinds = _CHANGED.get(getattr(message, "method", ""))
        if kinds is not None:
            self.upstream.changed(kinds, getattr(message, "method", ""))


class Upstream(ProxyProvider):
    """A FastMCP proxy provider for one server of the servers file."""

    def __init__(self, spec: ServerSpec, *, start_timeout: float = 30.0,
                 list_timeout: float = 10.0, list_ttl: float = LIST_TTL,
                 relay_stderr: bool = True) -> None:
        self.spec = spec
        self.relay = StderrRelay(spec.name) if spec.kind == "stdio" and relay_stderr else None
        self.transport = _transport(spec, self.relay.file if self.relay else None)
        # The backend era is pinned ("auto": the newest both sides speak), so a
        # stdio upstream keeps one process whatever era each client of the
        # gateway speaks; the caller's HTTP headers are not passed upstream.
        # Its change notices drop the cached lists (_ChangeNotices).
        self._base = ProxyClient(self.transport, mode="auto", forward_incoming_headers=False,
                                 init_timeout=start_timeout,
                                 message_handler=_ChangeNotices(self))
        super().__init__(self._base.new, cache_ttl=CACHE_TTL)
        self.start_timeout = start_timeout
        self.list_timeout = list_timeout
        self.list_ttl = list_ttl
        #: Why it is down (None: it is not).
        self.down: str | None = None
        #: Whether a question of a listing is past its deadline.
        self.slow = False
        #: Each list cached: when it was read, and the list (never mutated:
        #: the gateway knows a list by its identity).
        self._lists: dict[str, tuple[float, list[Any]]] = {}
        #: Each question in flight: when it was sent, its task, and the
        #: generation of its kind then (a change notice makes a new one).
        self._asking: dict[str, tuple[float, asyncio.Task[list[Any]], int]] = {}
        self._generation = dict.fromkeys(KINDS, 0)
        self._retry_at = 0.0
        self._duplicates: dict[str, frozenset[str]] = {}
        #: Told ``(self, state, why)`` as it goes ``down``, ``slow`` or ``up`` again.
        self.on_health: Callable[[Upstream, str, str | None], None] | None = None

    def __repr__(self) -> str:
        return f"Upstream({self.spec.name!r})"

    @property
    def name(self) -> str:
        return self.spec.name

    def _ended(self) -> bool:
        return isinstance(self.transport, _OneLifeStdio) and self.transport.gone()

    # --- health ----------------------------------------------------------------

    def _went_down(self, why: str) -> None:
        if self.down is None:
            if self._ended():
                then = "until the gateway is reloaded (SIGHUP)"
            else:
                then = f"until it answers again (asked every {RETRY_INTERVAL:g} s at most)"
            logger.error("upstream %r (%s) is down: %s; its tools are hidden %s",
                         self.name, self.spec.describe(), why, then)
            self._tell("down", why)
        self.down = why
        self.slow = False
        self.forget()
        self._retry_at = time.monotonic() + RETRY_INTERVAL

    def _came_up(self, count: int) -> None:
        if self.down is not None or self.slow:
            logger.warning("upstream %r is up again: %d tools", self.name, count)
            self._tell("up", None)
        self.down = None
        self.slow = False

    def _tell(self, state: str, why: str | None) -> None:
        if self.on_health is not None:
            self.on_health(self, state, why)

    async def start(self) -> None:
        """Starts the upstream and reads its tools, waiting at most the start
        timeout; on failure it is down, with a log line."""
        tools = await self._wait("tools", self.start_timeout)
        if self.down is None and tools is not None:
            logger.info("upstream %r (%s): %d tools", self.name, self.spec.describe(),
                        len(tools))
        elif tools is None:
            self._went_down(f"it did not start within {self.start_timeout:g} s")

    async def restart(self) -> None:
        """Starts a stdio upstream again if it is down or slow (a reload does
        this); any other is asked again."""
        if self.down is None and not self.slow:
            return
        for _, task, _ in self._asking.values():
            task.cancel()
        self._asking.clear()
        if isinstance(self.transport, _OneLifeStdio):
            await self.transport.revive()
        self.down, self.slow = None, False
        await self.start()

    async def close(self) -> None:
        """Ends the upstream's process (or connection) and waits for it."""
        for _, task, _ in self._asking.values():
            task.cancel()
        await self.transport.close()  # type: ignore[no-untyped-call]

    # --- the lists -------------------------------------------------------------

    def forget(self, kinds: Sequence[str] = KINDS) -> None:
        """Drops the cached lists of ``kinds``: the next listing asks again,
        and no question already sent is joined or kept."""
        for kind in kinds:
            self._lists.pop(kind, None)
            self._generation[kind] += 1

    def changed(self, kinds: Sequence[str], method: str) -> None:
        """A change notice came (``method``): its lists are dropped."""
        logger.info("upstream %r sent %s: its %s are read again at the next request",
                    self.name, method, " and ".join(_plural(kind) for kind in kinds))
        self.forget(kinds)

    def cached(self, kind: str) -> list[Any] | None:
        """The cached list of ``kind`` while it is younger than the TTL and the
        upstream is up, else None. A stdio upstream whose process has ended is
        down here: its lists go at once, never served from the cache."""
        if self._ended() and self.down is None:
            self._went_down("its process has exited")
        found = self._lists.get(kind)
        if found is None or time.monotonic() - found[0] >= self.list_ttl:
            return None
        return found[1]

    async def listing(self, kind: str, *, fresh: bool = True) -> list[Any]:
        """The upstream's components of ``kind`` (see :data:`KINDS`) under its
        own names: the cached list while it holds (see the module), else the
        upstream's answer; an empty list at once when it is down or slow.
        ``fresh`` is kept for the callers: both read the same cache."""
        if self.down is not None:
            if not self._ended() and time.monotonic() >= self._retry_at \
                    and "tools" not in self._asking:
                self._retry_at = time.monotonic() + RETRY_INTERVAL
                self._ask("tools")
            return _NOTHING
        if self.slow:
            return _NOTHING
        cached = self.cached(kind)
        if cached is not None:
            return cached
        found = await self._wait(kind, self.list_timeout)
        if found is None:
            if self.down is None and not self.slow:
                self.slow = True
                logger.error("upstream %r did not answer %s within %g s: its tools are left "
                             "out, no request waits for it, and its answer (within %g s) "
                             "brings them back", self.name, _method(kind), self.list_timeout,
                             self.start_timeout)
                self._tell("slow", f"it did not answer {_method(kind)} within "
                                   f"{self.list_timeout:g} s")
            return _NOTHING
        return found

    async def _wait(self, kind: str, timeout: float) -> list[Any] | None:
        """The answer to the question of ``kind`` (asked now, or joined if it is
        being asked since the last change notice), waiting until ``timeout``
        seconds after it was asked; None past that, the question left running.
        An empty list when it failed."""
        asking = self._asking.get(kind)
        if asking is None or asking[2] != self._generation[kind]:
            asking = self._ask(kind)
        started, task, _ = asking
        remaining = started + timeout - time.monotonic()
        if remaining > 0:
            done, _ = await asyncio.wait({task}, timeout=remaining)
        else:
            done = {task} if task.done() else set()
        if not done:
            return None
        if task.cancelled():
            return _NOTHING
        return task.result()

    def _ask(self, kind: str) -> tuple[float, asyncio.Task[list[Any]], int]:
        generation = self._generation[kind]
        entry = (time.monotonic(), _background(self._query(kind, generation)), generation)
        self._asking[kind] = entry
        entry[1].add_done_callback(lambda _: self._asked(kind, entry[1]))
        return entry

    def _asked(self, kind: str, task: asyncio.Task[list[Any]]) -> None:
        asking = self._asking.get(kind)
        if asking is not None and asking[1] is task:
            del self._asking[kind]

    async def _query(self, kind: str, generation: int) -> list[Any]:
        """Asks the upstream for one list, within the start timeout; the
        upstream's health follows the answer, and the cache gets it unless a
        change notice came meanwhile (``generation`` is past). Never raises
        (but a cancel)."""
        fetch: dict[str, Callable[[], Awaitable[Sequence[Any]]]] = {
            "tools": super()._list_tools, "prompts": super()._list_prompts,
            "resources": super()._list_resources,
            "templates": super()._list_resource_templates}
        try:
            # The upstream's hints as it sent them: a hint that is no JSON boolean is
            # left out (the MCP default), where the SDK's models would coerce it.
            with hints_as_sent():
                listed = list(await asyncio.wait_for(fetch[kind](), self.start_timeout))
        except asyncio.CancelledError:
            raise
        except UpstreamGone as err:
            self._went_down(str(err))
            return _NOTHING
        except Exception as err:
            if self._ended():
                self._went_down("its process has exited")
            elif kind == "tools":
                why = (f"it did not answer {_method(kind)} within {self.start_timeout:g} s"
                       if isinstance(err, (TimeoutError, asyncio.TimeoutError)) else _why(err))
                self._went_down(why)
            else:
                logger.debug("upstream %r: %s failed: %s", self.name, _method(kind), _why(err))
            return _NOTHING
        unique = self._unique(kind, listed)
        if kind == "tools":
            self._came_up(len(unique))
        if generation == self._generation[kind] and self.down is None:
            self._lists[kind] = (time.monotonic(), unique)
        return unique

    def _unique(self, kind: str, items: list[Any]) -> list[Any]:
        """The items whose name (URI) the upstream lists once; the others are
        named in a warning (once, while it lasts)."""
        key = _key_of(kind)
        seen: dict[str, int] = {}
        for item in items:
            seen[key(item)] = seen.get(key(item), 0) + 1
        twice = frozenset(name for name, count in seen.items() if count > 1)
        if twice and twice != self._duplicates.get(kind, frozenset()):
            for name in sorted(twice):
                logger.warning("upstream %r lists %d %s named %r: neither is shown, and a "
                               "request for that name is answered as unknown", self.name,
                               seen[name], kind, name)
        self._duplicates[kind] = twice
        return [item for item in items if key(item) not in twice]

    # --- calls ---------------------------------------------------------------------

    def session(self) -> ClientSession | None:
        """The one MCP session a stdio upstream's process keeps, on which
        :meth:`call` sends; None for any other upstream (FastMCP's proxy
        connects for each request) and for one not running."""
        if isinstance(self.transport, _OneLifeStdio):
            return self.transport.live_session()
        return None

    async def call(self, session: ClientSession, name: str, arguments: dict[str, Any] | None,
                   *, meta: dict[str, Any] | None, progress: ProgressFnT | None,
                   input_required: bool) -> Any:
        """``tools/call`` of the upstream's tool ``name`` on ``session`` (see
        :meth:`session`): the upstream's result as it sent it (a
        ``CallToolResult``, or an ``InputRequiredResult`` when
        ``input_required``). Calls in flight share the session, each its own
        JSON-RPC id; a caller's cancel reaches the upstream as
        ``notifications/cancelled`` (the SDK's session sends it). A process that
        ends meanwhile fails the call at once (and the upstream is down), as an
        :class:`UpstreamGone`."""
        try:
            return await session.call_tool(name, arguments, progress_callback=progress,
                                           meta=meta,  # type: ignore[arg-type]
                                           allow_input_required=input_required)
        except Exception as err:
            if not self._ended():
                raise
            self._went_down("its process has exited")
            raise UpstreamGone(f"upstream {self.name!r} is down: its process has exited "
                               f"({_why(err)})") from err

    # FastMCP's own lookups are not used: the gateway routes by its own map.
    async def get_tasks(self) -> Sequence[Any]:
        return []


def _plural(kind: str) -> str:
    return {"templates": "resource templates"}.get(kind, kind)


def _method(kind: str) -> str:
    return {"templates": "resources/templates/list"}.get(kind, f"{kind}/list")


def _key_of(kind: str) -> Callable[[Any], str]:
    if kind == "resources":
        return lambda item: str(item.uri)
    if kind == "templates":
        return lambda item: str(item.uri_template)
    return lambda item: str(item.name)
