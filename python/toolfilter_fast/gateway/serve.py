"""``toolfilter serve``: a FastMCP server in front of the servers of a servers
file, with the Policy on every ``tools/list`` and ``tools/call``.

The gateway is FastMCP's own machinery, put together:

* each upstream is an :class:`~toolfilter_fast.gateway.upstream.Upstream`, a
  ``ProxyProvider``, added with :class:`FlatNames` (FastMCP's ``Namespace``
  transform with ``SERVER__`` as the prefix), so its tool ``t`` is ``SERVER__t``;
* the Policy is :class:`PolicyTransform`, a server-level FastMCP ``Transform``:
  FastMCP resolves every listing and every call by name through it, so a tool
  it hides is unknown to FastMCP, which answers a call to it with its own
  "Unknown tool" error, the one it gives a name that never existed;
* the caller is FastMCP's verified access token (``StaticTokenVerifier`` for a
  token file, ``JWTVerifier`` for JWT/JWKS) and the request's headers, over
  HTTP; over stdio, one ctx given on the command line.

The policy file is read again on SIGHUP and when it changes (its size, time or
inode, looked at every second); a file that does not load is logged and the
policy in force stays. Each request reads the policy once, so a reload never
drops one. SIGINT and SIGTERM stop the gateway, which ends its upstreams'
processes and waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.auth import TokenVerifier
from fastmcp.server.dependencies import get_access_token, get_context, get_http_headers
from fastmcp.server.transforms import Namespace, Transform
from fastmcp.tools.base import Tool as FastMCPTool

from .._tool import Tool, as_mapping
from ..policy import Policy
from .servers import SEPARATOR, ServerSpec, split_flat_name
from .upstream import Upstream, logger

__all__ = ["FlatNames", "Gateway", "MessageSource", "PolicyFile", "PolicyTransform",
           "bind", "build_gateway", "request_ctx", "run"]

#: How often the policy file is looked at for a change, in seconds.
WATCH_INTERVAL = 1.0
#: How long a stop waits for the upstreams to end, in seconds.
STOP_TIMEOUT = 10.0


class FlatNames(Namespace):
    """FastMCP's ``Namespace`` with ``SERVER__`` for a prefix: tool and prompt
    ``t`` of server ``SERVER`` is ``SERVER__t`` (resources are
    ``scheme://SERVER/path``, as ``Namespace`` writes them)."""

    def __init__(self, server_id: str) -> None:
        super().__init__(server_id)
        self._name_prefix = f"{server_id}{SEPARATOR}"


# --- the policy file ---------------------------------------------------------------


PolicyCheck = Callable[[Policy], None]


class PolicyFile:
    """The policy in force, read from its file, and read again on a change."""

    def __init__(self, path: str, check: PolicyCheck | None = None) -> None:
        self.path = path
        self._check = check
        self.policy = self._load()
        self._stamp = self._stat()

    def _load(self) -> Policy:
        policy = Policy.from_file(self.path)
        if self._check is not None:
            self._check(policy)
        return policy

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def reload(self, why: str) -> bool:
        """Reads the file again; True when the new policy is in force. A file
        that does not load is logged, and the policy in force stays."""
        self._stamp = self._stat()
        try:
            policy = self._load()
        except Exception as err:  # a ConfigError mostly; never the gateway's end
            logger.error("policy %s not reloaded (%s): %s; the policy in force stays",
                         self.path, why, err)
            return False
        self.policy = policy
        logger.warning("policy %s reloaded (%s)", self.path, why)
        return True

    def changed(self) -> bool:
        return self._stat() != self._stamp


# --- what a request says -------------------------------------------------------------


@dataclass(frozen=True)
class MessageSource:
    """Where the groups stage's user message comes from: ``off`` (no message:
    only ``always`` groups are live), an HTTP header, or a key of the
    request's ``_meta``."""

    kind: str = "off"
    key: str = ""

    @classmethod
    def parse(cls, text: str) -> MessageSource:
        if text == "off":
            return cls()
        kind, colon, key = text.partition(":")
        if not colon or kind not in ("header", "meta") or not key:
            raise ValueError(f"{text!r}: expected off, header:NAME or meta:KEY")
        return cls(kind, key.lower() if kind == "header" else key)

    def read(self) -> str | None:
        if self.kind == "header":
            value = get_http_headers(include={self.key}).get(self.key)
            return value if isinstance(value, str) else None
        if self.kind == "meta":
            meta = _request_meta()
            value = meta.get(self.key) if isinstance(meta, Mapping) else None
            return value if isinstance(value, str) else None
        return None


def _request_meta() -> Any:
    try:
        request_context = get_context().request_context
    except RuntimeError:
        return None
    return getattr(request_context, "meta", None) if request_context is not None else None


def _in_request() -> bool:
    try:
        return get_context().request_context is not None
    except RuntimeError:
        return False


def request_ctx(headers: Sequence[str]) -> dict[str, Any]:
    """The ctx of an HTTP request: ``client_id``, ``scopes`` and ``claims`` of the
    verified token (None, [] and {} without one) and the ``headers`` chosen,
    by lower-case name (a header the request lacks is left out)."""
    token = get_access_token()
    wanted = {name.lower() for name in headers}
    present = get_http_headers(include=wanted) if wanted else {}
    return {
        "client_id": None if token is None else token.client_id,
        "scopes": [] if token is None else list(token.scopes),
        "claims": {} if token is None else dict(getattr(token, "claims", {}) or {}),
        "headers": {name: value for name, value in present.items() if name in wanted},
    }


# --- the policy transform ----------------------------------------------------------


def _record(server_id: str, name: str, tool: FastMCPTool) -> Tool:
    """The Tool the policy judges: the upstream's definition under its own name."""
    return Tool(server_id, name, tool.description, as_mapping(tool.parameters, "inputSchema"),
                as_mapping(tool.annotations, "annotations"), tool.title,
                as_mapping(tool.meta, "_meta"),
                as_mapping(tool.output_schema, "outputSchema"))


class PolicyTransform(Transform):
    """The Policy on the gateway's aggregated tools, per request.

    ``list_tools`` orders the tools (servers in the servers file's order, each
    server's tools by name), runs :meth:`Policy.select` with the request's ctx
    and message and keeps what it keeps. ``get_tool`` (every call by name)
    keeps a tool only if that listing would: alone when the policy has no
    budget (visibility and groups judge each tool by itself), else against the
    whole listing. A tool it does not keep is None: FastMCP answers the call
    as for a name that never existed, and one log line names the caller, the
    tool and the stage (never the arguments).
    """

    def __init__(self, policy: PolicyFile, servers: Sequence[str], *,
                 ctx: Callable[[], Any], message: MessageSource,
                 every_tool: Callable[[], Awaitable[Sequence[FastMCPTool]]]) -> None:
        self._policy = policy
        self._order = {name: i for i, name in enumerate(servers)}
        self._ctx = ctx
        self._message = message
        self._every_tool = every_tool

    def _records(self, tools: Sequence[FastMCPTool]) -> list[tuple[Tool, FastMCPTool]]:
        pairs = []
        for tool in tools:
            split = split_flat_name(tool.name)
            if split is None or split[0] not in self._order:
                continue  # no upstream's tool: nothing to route a call to
            try:
                pairs.append((_record(split[0], split[1], tool), tool))
            except (TypeError, ValueError):
                logger.warning("tool %r hidden: its definition cannot be read", tool.name)
        pairs.sort(key=lambda pair: (self._order[pair[0].server_id], pair[0].name))
        return pairs

    def _caller(self) -> tuple[Any, str | None]:
        return self._ctx(), self._message.read()

    async def list_tools(self, tools: Sequence[FastMCPTool]) -> Sequence[FastMCPTool]:
        pairs = self._records(tools)
        try:
            ctx, message = self._caller()
            selection = self._policy.policy.select([r for r, _ in pairs], ctx, message)
        except Exception:
            logger.warning("every tool hidden from a listing: the policy raised", exc_info=True)
            return []
        return [tool for i, (_, tool) in enumerate(pairs) if selection.stage_of(i) is None]

    async def get_tool(self, name: str, call_next: Any, *, version: Any = None) -> Any:
        tool = await call_next(name, version=version)
        if tool is None:
            return None
        policy = self._policy.policy
        try:
            ctx, message = self._caller()
            if policy.max_tools is None:
                pairs = self._records([tool])
                index = 0
            else:
                pairs = self._records(await self._every_tool())
                index = next((i for i, (_, t) in enumerate(pairs) if t.name == name), -1)
            stage = policy.select([r for r, _ in pairs], ctx, message).stage_of(index) \
                if index >= 0 and pairs else "visibility"
        except Exception:
            logger.warning("call to %r refused: the policy raised", name, exc_info=True)
            return None
        if stage is None:
            return tool
        if _in_request():
            client = ctx.get("client_id") if isinstance(ctx, Mapping) else None
            logger.warning("hidden tool called: client %s, tool %r, stage %s",
                           "-" if client is None else repr(client), name, stage)
        return None


# --- the gateway -------------------------------------------------------------------


@dataclass
class Gateway:
    """A built gateway: the FastMCP server, its upstreams and its policy."""

    server: FastMCP[Any]
    upstreams: list[Upstream]
    policy: PolicyFile
    #: Where it serves, for the log: ``stdio`` or the HTTP endpoint's URL.
    where: str = "stdio"

    async def every_tool(self) -> list[FastMCPTool]:
        """Every upstream's tools under their flat names, before the policy."""
        lists = await asyncio.gather(*(self._flat(u) for u in self.upstreams))
        return [tool for tools in lists for tool in tools]

    @staticmethod
    async def _flat(upstream: Upstream) -> list[FastMCPTool]:
        names = FlatNames(upstream.name)
        return list(await names.list_tools(await upstream.list_tools()))

    async def reload(self, why: str) -> None:
        """The policy read again; stdio upstreams that are down started again."""
        self.policy.reload(why)
        await asyncio.gather(*(u.restart() for u in self.upstreams))


def build_gateway(policy: PolicyFile, servers: Sequence[ServerSpec], *,
                  ctx: Callable[[], Any], message: MessageSource,
                  auth: TokenVerifier | None = None, start_timeout: float = 30.0,
                  watch: bool = True) -> Gateway:
    upstreams = [Upstream(spec, start_timeout=start_timeout) for spec in servers]
    holder: list[Gateway] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        gateway = holder[0]
        await asyncio.gather(*(u.start() for u in upstreams))
        up = [u.name for u in upstreams if u.down is None]
        logger.warning("gateway ready on %s: %d of %d upstreams up%s", gateway.where, len(up),
                       len(upstreams), f" ({', '.join(up)})" if up else "")
        watcher = asyncio.create_task(_watch(gateway)) if watch else None
        try:
            yield {}
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            await asyncio.gather(*(_close(u) for u in upstreams))
            logger.warning("gateway stopped: upstreams closed")

    server: FastMCP[Any] = FastMCP("toolfilter gateway", auth=auth, lifespan=lifespan,
                                   mask_error_details=False)
    for upstream in upstreams:
        server.add_provider(upstream.wrap_transform(FlatNames(upstream.name)))
    gateway = Gateway(server, upstreams, policy)
    holder.append(gateway)
    server.add_transform(PolicyTransform(policy, [s.name for s in servers], ctx=ctx,
                                         message=message, every_tool=gateway.every_tool))
    return gateway


async def _close(upstream: Upstream) -> None:
    try:
        await upstream.close()
    except Exception as err:  # closing one must not keep the others open
        logger.warning("upstream %r did not close cleanly: %s", upstream.name, err)


async def _watch(gateway: Gateway) -> None:
    """SIGHUP and a changed policy file reload; runs for the gateway's life."""
    loop = asyncio.get_running_loop()
    hup = asyncio.Event()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGHUP, hup.set)
    try:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(hup.wait(), WATCH_INTERVAL)
            if hup.is_set():
                hup.clear()
                await gateway.reload("SIGHUP")
            elif gateway.policy.changed():
                await gateway.reload("the file changed")
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGHUP)


# --- running -----------------------------------------------------------------------


async def _stop_now(gateway: Gateway, signame: str) -> None:
    try:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(_close(u) for u in gateway.upstreams)), STOP_TIMEOUT)
        logger.warning("gateway stopped: upstreams closed")
        logger.warning("stopped by %s", signame)
    finally:
        sys.stderr.flush()
        os._exit(0)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: one the system picks);
    OSError when the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def _run(gateway: Gateway, transport: str, sock: socket.socket | None,
               stopped: list[str]) -> None:
    server = gateway.server
    if transport == "stdio":
        loop = asyncio.get_running_loop()

        def stop(signum: int, _frame: Any) -> None:
            # The stdio server reads stdin in a thread that a cancellation
            # cannot interrupt, so a signal does not wait for it: the
            # upstreams are closed (their processes ended and waited for) and
            # the process ends.
            name = signal.Signals(signum).name
            loop.call_soon_threadsafe(lambda: loop.create_task(_stop_now(gateway, name)))

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, stop)
        await server.run_stdio_async(show_banner=False, log_level="WARNING")
        return

    def note(signum: int, _frame: Any) -> None:
        # uvicorn handles the signal itself (a graceful stop), then hands it on here.
        stopped.append(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, note)
    assert sock is not None
    host, port = sock.getsockname()[:2]
    await server.run_http_async(show_banner=False, log_level="WARNING", sockets=[sock],
                                host=host, port=port)


def run(gateway: Gateway, transport: str, sock: socket.socket | None = None) -> int:
    """Serves until the client goes away or a signal stops it; 0 when it stops cleanly."""
    if sock is not None:
        host, port = sock.getsockname()[:2]
        gateway.where = f"http://{host if ':' not in host else f'[{host}]'}:{port}/mcp"
    stopped: list[str] = []
    asyncio.run(_run(gateway, transport, sock, stopped))
    if stopped:
        logger.warning("stopped by %s", stopped[0])
    sys.stdout.flush()
    return 0


def configure_logging(level: str = "INFO") -> None:
    """The gateway's log lines on stderr (stdout is the MCP stream over stdio)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("toolfilter serve: %(levelname)s %(message)s"))
    log = logging.getLogger("toolfilter_fast")
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False
