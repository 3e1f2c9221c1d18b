"""One server behind the gateway: a FastMCP ``ProxyProvider`` that knows when
its server is gone.

FastMCP's proxy does the protocol: each request of the gateway gets a fresh
``ProxyClient`` on the upstream's transport (what ``fastmcp.server.create_proxy``
does), a stdio upstream keeps one process for all of them, and the tool list
is cached between a ``tools/list`` and the calls after it. What this module
adds is the upstream's health:

* a stdio upstream starts once; when its process ends (it crashed, or was
  killed), FastMCP's transport would quietly start a new one on the next
  request. Here the upstream is *down* instead: its tools disappear, one log
  line says why, and it stays down until the gateway is reloaded (SIGHUP),
  which starts it again;
* a remote upstream that fails a request is down until a later request
  succeeds (one log line each way);
* an upstream that lists a tool name twice: both are named in a warning and
  neither is shown or callable (a call cannot tell them apart).

Everything that fails inside is caught: an upstream's trouble hides its own
tools and never fails the gateway's request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio
from fastmcp.client.transports import (
    ClientTransport,
    SSETransport,
    StdioTransport,
    StreamableHttpTransport,
)
from fastmcp.server.providers.proxy import ProxyClient, ProxyProvider
from fastmcp.tools.base import Tool as FastMCPTool

from ..sdk_hints import hints_as_sent
from .servers import ServerSpec

__all__ = ["Upstream", "UpstreamGone", "logger"]

logger = logging.getLogger("toolfilter_fast.gateway")

#: How long a tool list is reused for calls before the upstream is asked again
#: (every tools/list asks it anyway), as FastMCP's own proxy does.
CACHE_TTL = 300.0


class UpstreamGone(RuntimeError):
    """A stdio upstream's process has ended; it is not started again behind the user's back."""


class _OneLifeStdio(StdioTransport):
    """FastMCP's stdio transport, but a process that has ended is not replaced:
    connecting again raises :class:`UpstreamGone` until :meth:`revive`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ended = False

    async def connect(self, **kwargs: Any) -> Any:
        # FastMCP's transport checks these same two things, and starts a new
        # process when either says the old one is gone.
        task = self._connect_task
        if task is not None and (task.done() or self._is_session_dead()):
            self.ended = True
        if self.ended:
            raise UpstreamGone("its process has exited")
        return await super().connect(**kwargs)

    async def revive(self) -> None:
        """Reaps what is left of the old process, so the next connect starts a new one."""
        await self.disconnect()  # type: ignore[no-untyped-call]
        self.ended = False


def _transport(spec: ServerSpec) -> ClientTransport:
    if spec.kind == "stdio":
        assert spec.command is not None
        return _OneLifeStdio(spec.command, list(spec.args), env=dict(spec.env) or None,
                             cwd=spec.cwd, keep_alive=True)
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


class Upstream(ProxyProvider):
    """A FastMCP proxy provider for one server of the servers file."""

    def __init__(self, spec: ServerSpec, *, start_timeout: float = 30.0,
                 list_timeout: float = 60.0) -> None:
        self.spec = spec
        self.transport = _transport(spec)
        # The backend era is pinned ("auto": the newest both sides speak), so a
        # stdio upstream keeps one process whatever era each client of the
        # gateway speaks; the caller's HTTP headers are not passed upstream.
        self._base = ProxyClient(self.transport, mode="auto", forward_incoming_headers=False,
                                 init_timeout=start_timeout)
        super().__init__(self._base.new, cache_ttl=CACHE_TTL)
        self._list_timeout = list_timeout
        self.down: str | None = None
        self._tools: list[FastMCPTool] | None = None
        self._tools_at = 0.0
        self._duplicates: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return f"Upstream({self.spec.name!r})"

    @property
    def name(self) -> str:
        return self.spec.name

    # --- health ----------------------------------------------------------------

    def _went_down(self, why: str) -> None:
        if self.down is None:
            then = ("until the gateway is reloaded (SIGHUP)" if self.spec.kind == "stdio"
                    else "until it answers again")
            logger.error("upstream %r (%s) is down: %s; its tools are hidden %s",
                         self.name, self.spec.describe(), why, then)
        self.down = why
        self._tools = None

    def _came_up(self, count: int) -> None:
        if self.down is not None:
            logger.warning("upstream %r is up again: %d tools", self.name, count)
        self.down = None

    async def start(self) -> None:
        """Starts the upstream and reads its tools; on failure it is down, with a log line."""
        tools = await self._list_tools()
        if self.down is None:
            logger.info("upstream %r (%s): %d tools", self.name, self.spec.describe(),
                        len(tools))

    async def restart(self) -> None:
        """Starts a stdio upstream again if it is down (a reload does this)."""
        if self.down is None or not isinstance(self.transport, _OneLifeStdio):
            return
        await self.transport.revive()
        self.down = None
        await self.start()

    async def close(self) -> None:
        """Ends the upstream's process (or connection) and waits for it."""
        await self.transport.close()  # type: ignore[no-untyped-call]

    # --- the provider ------------------------------------------------------------

    async def _list_tools(self) -> Sequence[FastMCPTool]:
        if self.down is not None and isinstance(self.transport, _OneLifeStdio) \
                and self.transport.ended:
            return []
        try:
            # The upstream's hints as it sent them: a hint that is no JSON boolean is
            # left out (the MCP default), where the SDK's models would coerce it.
            with anyio.fail_after(self._list_timeout), hints_as_sent():
                listed = list(await super()._list_tools())
        except UpstreamGone as err:
            self._went_down(str(err))
            return []
        except TimeoutError:
            logger.warning("upstream %r did not list its tools within %g s; its tools are "
                           "left out of this list", self.name, self._list_timeout)
            return []
        except Exception as err:
            gone = isinstance(self.transport, _OneLifeStdio) and self.transport.ended
            self._went_down("its process has exited" if gone else _why(err))
            return []
        unique = self._unique(listed)
        self._came_up(len(unique))
        self._tools, self._tools_at = unique, time.monotonic()
        return unique

    def _unique(self, tools: list[FastMCPTool]) -> list[FastMCPTool]:
        """The tools whose name the upstream lists once; the others are named in a warning."""
        seen: dict[str, int] = {}
        for tool in tools:
            seen[tool.name] = seen.get(tool.name, 0) + 1
        twice = frozenset(name for name, count in seen.items() if count > 1)
        if twice and twice != self._duplicates:
            for name in sorted(twice):
                logger.warning("upstream %r lists %d tools named %r: neither is shown, and a "
                               "call to that name is answered as unknown", self.name,
                               seen[name], name)
        self._duplicates = twice
        return [tool for tool in tools if tool.name not in twice]

    async def _get_tool(self, name: str, version: Any = None) -> FastMCPTool | None:
        if self._tools is None or time.monotonic() - self._tools_at >= CACHE_TTL:
            await self._list_tools()
        for tool in self._tools or ():
            if tool.name == name:
                return tool
        return None
