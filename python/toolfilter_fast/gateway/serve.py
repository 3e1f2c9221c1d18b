"""``toolfilter serve``: a FastMCP server in front of the servers of a servers
file, with the Policy on every listing, call, ``prompts/get`` and
``resources/read``.

The gateway is FastMCP's own machinery, put together:

* each upstream is an :class:`~toolfilter_fast.gateway.upstream.Upstream`, a
  ``ProxyProvider`` that knows its health and never makes a request wait on
  it past its deadline;
* one :class:`~toolfilter_fast.gateway.provider.GatewayProvider` names their
  components (tool ``t`` of server ``s`` is ``s__t``), runs the Policy on
  every listing and lookup, and routes each request by an explicit map to the
  upstream's exact name: a component it hides is unknown to FastMCP, which
  answers for it with its own "Unknown tool" (prompt, resource) error, the one
  it gives a name that never existed;
* :class:`~toolfilter_fast.list_filter.ListFilterMiddleware`, the outermost
  layer of the MCP SDK's middleware chain, filters the lists by the
  request's ``params.filter`` (the draft proposal for list filtering) and
  advertises it in the capabilities: it narrows what the policy shows, on
  the names the client sees;
* :class:`~toolfilter_fast.gateway.call_relay.CallRelay`, the SDK server's
  ``tools/call`` handler, routes a call through the provider and sends it on
  a stdio upstream's one kept session (any other goes FastMCP's own way);
* the caller is FastMCP's verified access token (``StaticTokenVerifier`` for a
  token file, ``JWTVerifier`` for JWT/JWKS) and the request's headers, over
  HTTP (uvicorn, run here so that the gateway owns its signals); over stdio,
  one ctx given on the command line.

The policy file is read again on SIGHUP and when it or its ``[pinning]``
lock changes (its size, time or inode, looked at every second); a file that
does not load is logged and the policy in force stays. Each request reads the
policy once, so a reload never drops one. SIGINT and SIGTERM stop the
gateway at any moment, starting up included, which ends its upstreams'
processes and waits for them.

Refused requests, hidden calls, reloads and upstreams going up and down go
to the audit log as well (:mod:`~toolfilter_fast.gateway.audit`); in audit
mode (``--mode audit`` or ``[policy] mode = "audit"``) nothing is hidden and
the audit log says what would have been.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.auth import TokenVerifier
from fastmcp.server.dependencies import get_access_token, get_context, get_http_headers

from ..list_filter import ListFilterMiddleware
from ..policy import Policy
from .audit import AuditLog, policy_digest
from .call_relay import CallRelay
from .listing_cache import ListingCache
from .provider import GatewayProvider, PolicyRunner
from .servers import ServerSpec
from .stopping import Stopper
from .upstream import LIST_TTL, Upstream, logger

try:
    import fcntl
except ImportError:  # (Windows: no pipe sizes)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Gateway", "MessageSource", "PolicyFile", "StartRefused", "Stopper", "bind",
           "build_gateway", "request_ctx", "run"]

#: How often the policy file is looked at for a change, in seconds.
WATCH_INTERVAL = 1.0
#: How long a stop waits for the upstreams to end, in seconds.
STOP_TIMEOUT = 10.0


# --- the policy file ---------------------------------------------------------------


PolicyCheck = Callable[[Policy], None]


class PolicyFile:
    """The policy in force, read from its file, and read again on a change."""

    def __init__(self, path: str, check: PolicyCheck | None = None,
                 audit: AuditLog | None = None) -> None:
        self.path = path
        self._check = check
        self.audit = audit if audit is not None else AuditLog(None)
        self.policy = self._load()
        #: The digest of each policy loaded lately, by id (the policy kept with it).
        self._digests: dict[int, tuple[Policy, str]] = {}
        self.digest = self._remember(self.policy)
        self._stamp = self._stat()

    def _load(self) -> Policy:
        policy = Policy.from_file(self.path)
        if self._check is not None:
            self._check(policy)
        return policy

    def _files(self, policy: Policy) -> list[str]:
        """The policy file, and its lock when it pins tools."""
        lock = policy.pinning.lock.path if policy.pinning is not None else None
        return [self.path] if lock is None else [self.path, lock]

    def _remember(self, policy: Policy) -> str:
        digest = policy_digest(self._files(policy))
        if len(self._digests) >= 4:
            self._digests.pop(next(iter(self._digests)))
        self._digests[id(policy)] = (policy, digest)
        return digest

    def digest_of(self, policy: Policy) -> str:
        """The digest of a policy this file loaded (one a request read before a reload too)."""
        known = self._digests.get(id(policy))
        return known[1] if known is not None and known[0] is policy else self.digest

    def _stat(self) -> tuple[tuple[int, int, int] | None, ...]:
        stamps: list[tuple[int, int, int] | None] = []
        for path in self._files(self.policy):
            try:
                info = os.stat(path)
            except OSError:
                stamps.append(None)
                continue
            stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
        return tuple(stamps)

    def reload(self, why: str) -> bool:
        """Reads the file again; True when the new policy is in force. A file
        that does not load is logged, and the policy in force stays."""
        self._stamp = self._stat()
        try:
            policy = self._load()
        except Exception as err:  # a ConfigError mostly; never the gateway's end
            logger.error("policy %s not reloaded (%s): %s; the policy in force stays",
                         self.path, why, err)
            self.audit.event("reload", ok=False, why=why, old=self.digest, error=str(err))
            return False
        old, self.policy = self.digest, policy
        self.digest = self._remember(policy)
        self._stamp = self._stat()
        logger.warning("policy %s reloaded (%s)", self.path, why)
        self.audit.event("reload", ok=True, why=why, old=old, new=self.digest)
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


# --- the gateway -------------------------------------------------------------------


class StartRefused(Exception):
    """The upstreams' lists cannot be served as they are (two tools would get
    one name): the gateway stops before it serves."""


@dataclass
class Gateway:
    """A built gateway: the FastMCP server, its upstreams and its policy."""

    server: FastMCP[Any]
    upstreams: list[Upstream]
    policy: PolicyFile
    provider: GatewayProvider
    #: Where it serves, for the log: ``stdio`` or the HTTP endpoint's URL.
    where: str = "stdio"
    #: Over HTTP, MCP's stateless streamable HTTP: no session id, each request
    #: answered on its own, so any instance behind one address can take any request.
    stateless: bool = False

    async def start(self) -> None:
        """Starts every upstream (at once; each within its start timeout) and
        says so in one log line. :class:`StartRefused` when two of their tools
        would get one name."""
        await asyncio.gather(*(u.start() for u in self.upstreams))
        for upstream in self.upstreams:
            if upstream.down is None:  # (one that is down said so as it went down)
                self.policy.audit.event("upstream", server=upstream.name, state="up", why=None)
        clashes = await self.provider.clashes("tools")
        if clashes:
            fix = ("rename one with [[rename]] in the policy, or serve --names prefixed"
                   if self.provider.names == "bare" else "rename one with [[rename]]")
            raise StartRefused(f"two tools would get one name: {'; '.join(clashes)}: {fix}")
        up = [u.name for u in self.upstreams if u.down is None]
        logger.warning("gateway ready on %s: %d of %d upstreams up%s", self.where, len(up),
                       len(self.upstreams), f" ({', '.join(up)})" if up else "")

    async def close(self) -> None:
        """Ends every upstream's process (or connection), waiting at most STOP_TIMEOUT."""
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(_close(u) for u in self.upstreams)),
                                   STOP_TIMEOUT)

    async def reload(self, why: str) -> None:
        """The policy read again; every upstream's cached lists dropped (read
        again at the next request); stdio upstreams that are down started again."""
        self.policy.reload(why)
        for upstream in self.upstreams:
            upstream.forget()
        await asyncio.gather(*(u.restart() for u in self.upstreams))


def build_gateway(policy: PolicyFile, servers: Sequence[ServerSpec], *,
                  ctx: Callable[[], Any], message: MessageSource,
                  auth: TokenVerifier | None = None, start_timeout: float = 30.0,
                  list_timeout: float = 10.0, policy_timeout: float = 5.0,
                  watch: bool = True, names: str = "prefixed",
                  page_size: int | None = None, stateless: bool = False,
                  list_ttl: float = LIST_TTL) -> Gateway:
    upstreams = [Upstream(spec, start_timeout=start_timeout, list_timeout=list_timeout,
                          list_ttl=list_ttl) for spec in servers]
    audit = policy.audit
    for upstream in upstreams:
        upstream.on_health = lambda u, state, why: audit.event(
            "upstream", server=u.name, state=state, why=why)
    holder: list[Gateway] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        watcher = asyncio.create_task(_watch(holder[0])) if watch else None
        try:
            yield {}
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    server: FastMCP[Any] = FastMCP("toolfilter gateway", auth=auth, lifespan=lifespan,
                                   mask_error_details=False, list_page_size=page_size)
    provider = GatewayProvider(upstreams, lambda: policy.policy, ctx=ctx, message=message.read,
                               runner=PolicyRunner(policy_timeout), names=names)
    provider.audit, provider.digest_of = audit, policy.digest_of
    server.add_provider(provider)
    CallRelay.install(server, provider)
    # Outermost in the SDK's chain (FastMCP's low-level server, which its own
    # transports run too): the list filter sees each list and the
    # capabilities in their final wire form; inside it, the tools listings
    # answered before are answered from their wire form.
    listing_cache = ListingCache(server, provider)
    server._mcp_server.middleware.insert(0, listing_cache)
    server._mcp_server.middleware.insert(0, ListFilterMiddleware())
    _write_through(server._mcp_server, listing_cache)
    gateway = Gateway(server, upstreams, policy, provider, stateless=stateless)
    holder.append(gateway)
    return gateway


def _write_through(low_level: Any, listing_cache: ListingCache) -> None:
    """Every connection the SDK's ``Server.run`` serves (FastMCP runs stdio and
    SSE through it) writes through the listing cache's write stream, which
    writes a tools listing given again from its JSON text kept."""
    run = low_level.run

    async def run_writing_through(read_stream: Any, write_stream: Any, *args: Any,
                                  **kwargs: Any) -> None:
        await run(read_stream, listing_cache.wire(write_stream), *args, **kwargs)

    low_level.run = run_writing_through


async def _close(upstream: Upstream) -> None:
    try:
        await upstream.close()
    except Exception as err:  # closing one must not keep the others open
        logger.warning("upstream %r did not close cleanly: %s", upstream.name, err)


async def _watch(gateway: Gateway) -> None:
    """SIGHUP and a changed policy file reload; runs for the gateway's life."""
    loop = asyncio.get_running_loop()
    hup = _hangups(loop)
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
        _HANGUPS.pop(loop, None)


#: Each loop's SIGHUP flag, set from the moment the gateway starts: a SIGHUP
#: that comes after "gateway ready" but before the watcher runs is a reload
#: waiting, never the signal's default action (which ends the process).
_HANGUPS: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}


def _hangups(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    hup = _HANGUPS.get(loop)
    if hup is None:
        hup = _HANGUPS[loop] = asyncio.Event()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGHUP, hup.set)
    return hup


# --- stopping --------------------------------------------------------------------------


async def _stop_now(gateway: Gateway, signame: str) -> None:
    try:
        await gateway.close()
        logger.warning("gateway stopped: upstreams closed")
        logger.warning("stopped by %s", signame)
    finally:
        sys.stderr.flush()
        os._exit(0)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: one the system picks);
    OSError when the port is taken. Its protocol is named (TCP): asyncio turns
    Nagle's algorithm off only on sockets that say so, and with it on every
    answer over HTTP waited out the client's delayed ACK (some 40 ms)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Uvicorn:
    """uvicorn's server, made when serving starts; its own signal handling off
    (the gateway's :class:`Stopper` owns SIGINT and SIGTERM)."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="none",
                                timeout_graceful_shutdown=2)
        self.server = Server(config)


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _RefusalLog:
    """An ASGI wrapper that logs every refused request (HTTP 401): the client's
    address and why (no bearer token, or the server's description of what was
    wrong with it), never the token."""

    def __init__(self, app: Any, audit: AuditLog) -> None:
        self.app = app
        self.audit = audit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def watch(message: Any) -> None:
            if message.get("type") == "http.response.start" and message.get("status") == 401:
                _log_refusal(scope, message, self.audit)
            await send(message)

        await self.app(scope, receive, watch)


def _log_refusal(scope: Any, message: Any, audit: AuditLog) -> None:
    headers = {key.lower(): value for key, value in scope.get("headers", [])}
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "-"
    if not headers.get(b"authorization", b"").strip():
        why = "no bearer token"
    else:
        answer = {key.lower(): value for key, value in message.get("headers", [])}
        said = answer.get(b"www-authenticate", b"").decode("latin-1")
        found = re.search(r'error_description="([^"]*)"', said)
        why = "the bearer token was refused" + (f" ({found[1]})" if found else "")
    logger.warning("request refused (HTTP 401): client %s, %s", where, why)
    audit.event("refused", client=where, why=why)


async def _serve_http(gateway: Gateway, sock: socket.socket,
                      made: Callable[[Any], None]) -> None:
    import fastmcp

    host = sock.getsockname()[0]
    protection = fastmcp.settings.http_host_origin_protection
    allowed = fastmcp.settings.http_allowed_hosts
    if protection == "auto" and _loopback(host):
        allowed = [*(allowed or []), host]
    # Without --stateless, FastMCP's own setting (FASTMCP_STATELESS_HTTP) decides, as before.
    app = gateway.server.http_app(transport="http", host_origin_protection=protection,
                                  allowed_hosts=allowed,
                                  stateless_http=True if gateway.stateless else None)
    uvicorn_server = _Uvicorn(_RefusalLog(app, gateway.policy.audit)).server
    made(uvicorn_server)
    await uvicorn_server.serve(sockets=[sock])


async def _main(gateway: Gateway, transport: str, sock: socket.socket | None,
                stopper: Stopper) -> None:
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    state: dict[str, Any] = {"serving": False, "uvicorn": None}

    def act(signame: str, first: bool) -> None:
        uvicorn_server = state["uvicorn"]
        if not state["serving"]:
            main.cancel()
        elif transport == "stdio":
            if first:
                state["stopping"] = loop.create_task(_stop_now(gateway, signame))
        elif uvicorn_server is None:
            main.cancel()
        elif first:
            uvicorn_server.should_exit = True
        else:
            uvicorn_server.force_exit = True

    stopper.attach(loop, act)
    _hangups(loop)
    try:
        await gateway.start()
        state["serving"] = True
        if transport == "stdio":
            _grow_pipe(sys.stdout)
            await gateway.server.run_stdio_async(show_banner=False, log_level="WARNING")
        else:
            assert sock is not None
            await _serve_http(gateway, sock, lambda made: state.__setitem__("uvicorn", made))
    except asyncio.CancelledError:
        if stopper.signal is None:
            raise
    finally:
        await asyncio.shield(_closed(gateway))


#: The room asked for in the pipe the gateway answers on over stdio (Linux's
#: default most: ``/proc/sys/fs/pipe-max-size``).
PIPE_SIZE = 1 << 20


def _grow_pipe(stream: Any) -> None:
    """Gives the pipe of ``stream`` :data:`PIPE_SIZE` bytes of room where the
    system lets it (Linux): a 2 MB listing is then written in two turns of
    the client's reading, not in thirty-two of the default 64 KiB. A stream
    that is no pipe, a system without the call or a lower limit: as it was."""
    if fcntl is None or not hasattr(fcntl, "F_SETPIPE_SZ"):
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fd = stream.fileno()
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE_SIZE:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


async def _closed(gateway: Gateway) -> None:
    await gateway.close()
    logger.warning("gateway stopped: upstreams closed")


def run(gateway: Gateway, transport: str, sock: socket.socket | None = None,
        stopper: Stopper | None = None) -> int:
    """Serves until the client goes away or a signal stops it; 0 when it stops cleanly."""
    if stopper is None:
        stopper = Stopper()
        stopper.install()
    if sock is not None:
        host, port = sock.getsockname()[:2]
        gateway.where = f"http://{host if ':' not in host else f'[{host}]'}:{port}/mcp"
    if stopper.signal is None:
        asyncio.run(_main(gateway, transport, sock, stopper))
    if stopper.signal is not None:
        logger.warning("stopped by %s", stopper.signal)
    sys.stdout.flush()
    return 0


def configure_logging(level: str = "INFO", program: str = "toolfilter serve") -> None:
    """The gateway's log lines on stderr (stdout is the MCP stream over stdio)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{program}: %(levelname)s %(message)s"))
    log = logging.getLogger("toolfilter_fast")
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False
