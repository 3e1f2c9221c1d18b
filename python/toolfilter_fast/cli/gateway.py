"""The gateway's subcommands of ``toolfilter``: ``serve``, ``fetch``, ``export`` and ``pin``.

``register`` adds their parsers; each command checks all its input before
anything starts (a bad servers file, an unknown server in the policy, a port
in use, a command that does not exist: one line on stderr, exit 2). FastMCP is
imported only when ``serve`` or ``fetch`` runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import ConfigError
from ..gateway.audit import AuditLog
from ..gateway.export import FORMATS, ExportError, allowed, render
from ..gateway.naming import MODES, Naming
from ..gateway.servers import (
    ServersError,
    ServerSpec,
    check_server_id,
    parse_server,
    read_servers,
    unknown_servers,
)
from ..pinning import DigestError, LockError, ToolLock, diff
from ..pinning import render as render_changes
from ..policy import Policy
from .options import UsageError, parse_ctx, read_catalogs

__all__ = ["register"]

_GATEWAY_EXTRA = "needs FastMCP: pip install 'toolfilter_fast[gateway]'"


def _usage_error(message: str) -> Exception:
    return UsageError(message)


def _policy(path: str, servers: list[ServerSpec] | None) -> Policy:
    policy = Policy.from_file(path)
    if servers is not None:
        unknown = unknown_servers(policy, [s.name for s in servers])
        if unknown:
            raise ConfigError(f"{path}: {unknown[0]} names a server that is not in the "
                              f"servers file (its servers: {', '.join(s.name for s in servers)})")
    return policy


def _servers(path: str) -> list[ServerSpec]:
    try:
        return read_servers(path)
    except ServersError as err:
        raise _usage_error(str(err)) from None


def _ctx(text: str | None) -> Any:
    return parse_ctx(text)


# --- serve -----------------------------------------------------------------------------


def _auth(args: argparse.Namespace) -> Any:
    """FastMCP's token verifier for the flags given, or None."""
    jwt = args.jwks_uri is not None or args.jwt_public_key is not None
    if args.token_file is not None and jwt:
        raise _usage_error("--token-file and --jwks-uri/--jwt-public-key: give one way to "
                           "verify tokens")
    if args.token_file is not None:
        try:
            tokens = json.loads(Path(args.token_file).read_text(encoding="utf-8-sig"))
        except FileNotFoundError:
            raise _usage_error(f"--token-file {args.token_file}: no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise _usage_error(f"--token-file {args.token_file}: cannot read ({err})") from None
        if not isinstance(tokens, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("client_id"), str)
                for v in tokens.values()):
            raise _usage_error(f"--token-file {args.token_file}: expected an object of "
                               "TOKEN: {\"client_id\": ..., \"scopes\": [...]} entries")
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        return StaticTokenVerifier(tokens=tokens)
    if jwt:
        from fastmcp.server.auth.providers.jwt import JWTVerifier

        key = None
        if args.jwt_public_key is not None:
            try:
                key = Path(args.jwt_public_key).read_text(encoding="utf-8")
            except OSError as err:
                raise _usage_error(f"--jwt-public-key {args.jwt_public_key}: cannot read "
                                   f"({err.strerror or err})") from None
        try:
            return JWTVerifier(public_key=key, jwks_uri=args.jwks_uri, issuer=args.issuer,
                               audience=args.audience, algorithm=args.algorithm)
        except ValueError as err:
            raise _usage_error(f"JWT verification: {err}") from None
    return None


def _cmd_serve(args: argparse.Namespace) -> int:
    # First: a SIGINT or SIGTERM from here on stops the gateway, whatever it is doing.
    from ..gateway.stopping import Stopper

    stopper = Stopper()
    stopper.install()
    http = args.transport == "http"
    if http and args.ctx is not None:
        raise _usage_error("--ctx is for --transport stdio; over HTTP the ctx is each "
                           "request's token and headers")
    if not http and (args.ctx_header or args.token_file or args.jwks_uri
                     or args.jwt_public_key):
        raise _usage_error("--ctx-header and token verification are for --transport http; "
                           "over stdio give --ctx")
    if not http and args.stateless:
        raise _usage_error("--stateless is for --transport http")
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        raise _usage_error(f"serve {_GATEWAY_EXTRA}") from None
    # Late: serve imports FastMCP, which only the gateway extra installs.
    from ..gateway import serve

    try:
        message = serve.MessageSource.parse(args.message_from)
    except ValueError as err:
        raise _usage_error(f"--message-from {err}") from None
    if message.kind == "header" and not http:
        raise _usage_error("--message-from header:NAME is for --transport http")
    servers = _servers(args.servers)
    fixed_ctx = _ctx(args.ctx)
    names = [s.name for s in servers]

    def check(policy: Policy) -> None:
        unknown = unknown_servers(policy, names)
        if unknown:
            raise ConfigError(f"{unknown[0]} names a server that is not in the servers file")
        clashes = Naming(args.names, policy.renames).rename_clashes()
        if clashes:
            raise ConfigError(clashes[0])

    first = _policy(args.config, servers)  # the errors of the file, named as check names them
    # No audit log unless asked for, but in audit mode, whose point it is: stderr then.
    target = args.audit_log
    if target is None and (args.mode or first.mode) == "audit":
        target = "-"
    try:
        audit = AuditLog.open(target, mode=args.mode)
    except OSError as err:
        raise _usage_error(f"--audit-log {args.audit_log}: cannot open ({err.strerror or err})"
                           ) from None
    try:
        policy = serve.PolicyFile(args.config, check, audit)
    except ConfigError as err:
        raise ConfigError(f"{args.config}: {err}") from None
    auth = _auth(args) if http else None
    sock = None
    if http:
        try:
            sock = serve.bind(args.host, args.port)
        except OSError as err:
            raise _usage_error(f"--host {args.host} --port {args.port}: cannot listen "
                               f"({err.strerror or err})") from None
    headers = list(args.ctx_header)

    def ctx() -> Any:
        return serve.request_ctx(headers) if http else fixed_ctx

    serve.configure_logging(args.log_level)
    gateway = serve.build_gateway(policy, servers, ctx=ctx, message=message, auth=auth,
                                  start_timeout=args.start_timeout,
                                  list_timeout=args.list_timeout, list_ttl=args.list_ttl,
                                  policy_timeout=args.policy_timeout, names=args.names,
                                  page_size=args.page_size, stateless=args.stateless)
    try:
        return serve.run(gateway, args.transport, sock, stopper)
    except serve.StartRefused as err:
        raise _usage_error(str(err)) from None


def _page_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of items >= 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds > 0")
    return value


# --- fetch -----------------------------------------------------------------------------


def _default_name(words: list[str]) -> str:
    for word in words[1:]:
        if Path(word).is_file():
            return Path(word).stem
    return Path(words[0]).stem


def _safe(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-_")
    return cleaned.replace("__", "_") or "server"


def _cmd_fetch(args: argparse.Namespace) -> int:
    command = list(args.server_command or [])
    if command and command[0] == "--":
        command = command[1:]
    given = sum(bool(x) for x in (args.servers, args.url, command))
    if given != 1:
        raise _usage_error("give one of --servers FILE, --url URL or -- CMD ARGS...")
    try:
        if args.servers:
            # Each server fails alone: a command that does not exist is that
            # server's error line, and the others are fetched.
            servers = read_servers(args.servers, check_commands=False)
        elif args.url:
            name = args.server_id or _safe(urlsplit(args.url).hostname or "server")
            spec = parse_server(name, {"url": args.url}, "--url")
            servers = [spec] if spec is not None else []
        else:
            name = args.server_id or _safe(_default_name(command))
            spec = parse_server(name, {"command": command[0], "args": command[1:]}, "--")
            servers = [spec] if spec is not None else []
        if args.server_id is not None:
            check_server_id(args.server_id, "--server-id")
    except ServersError as err:
        raise _usage_error(str(err)) from None
    directory = Path(args.output)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _usage_error(f"-o {directory}: {err.strerror or err}") from None
    try:
        # Late: fetch and serve import FastMCP, which only the gateway extra installs.
        from ..gateway.fetch import fetch_all
        from ..gateway.serve import configure_logging  # (the same)
    except ImportError:
        raise _usage_error(f"fetch {_GATEWAY_EXTRA}") from None

    configure_logging("ERROR", "toolfilter fetch")
    logging.getLogger("toolfilter_fast.gateway.stderr").setLevel("INFO")

    def report(fetched: Any) -> None:
        if fetched.error is None:
            print(f"{fetched.server}: {fetched.tools} tools -> {fetched.path}", file=sys.stderr)
        else:
            print(f"{fetched.server}: error: {fetched.error}", file=sys.stderr)
        sys.stderr.flush()

    results = fetch_all(servers, directory, timeout=args.timeout, report=report)
    failed = [r for r in results if r.error is not None]
    print(f"fetched {len(results) - len(failed)} of {len(results)} servers", file=sys.stderr)
    return 1 if failed else 0


# --- export ----------------------------------------------------------------------------


def _urls(args: argparse.Namespace) -> dict[str, str]:
    urls: dict[str, str] = {}
    if args.servers:
        for spec in _servers(args.servers):
            if spec.url is not None:
                urls[spec.name] = spec.url
    for text in args.server_url:
        server, equals, url = text.partition("=")
        if not equals or not server or not url:
            raise _usage_error(f"--server-url {text!r}: expected SERVER=URL")
        urls[server] = url
    return urls


def _cmd_export(args: argparse.Namespace) -> int:
    ctx = _ctx(args.ctx)
    urls = _urls(args)
    policy = _policy(args.config, None)
    tools = read_catalogs(args.catalogs, None)
    try:
        result = allowed(policy, tools, ctx=ctx, ctx_given=args.ctx is not None,
                         message=args.message, describe=[args.config, *args.catalogs],
                         servers=None if not args.servers
                         else [spec.name for spec in _servers(args.servers)])
    except ExportError as err:
        raise _usage_error(f"{args.config}: {err}") from None
    sys.stdout.write(render(args.format, result, urls))
    return 0


# --- pin -------------------------------------------------------------------------------


def _cmd_pin(args: argparse.Namespace) -> int:
    if bool(args.servers) == bool(args.catalogs):
        raise _usage_error("give --servers SERVERS.json or CATALOG files (one of the two)")
    if args.catalogs:
        tools = read_catalogs(args.catalogs, None)
    else:
        servers = _servers(args.servers)
        try:
            # Late: listing servers imports FastMCP, which only the gateway extra installs.
            from ..gateway.pin import list_servers
            from ..gateway.serve import configure_logging  # (the same)
        except ImportError:
            raise _usage_error(f"pin --servers {_GATEWAY_EXTRA}") from None
        configure_logging("ERROR", "toolfilter pin")
        logging.getLogger("toolfilter_fast.gateway.stderr").setLevel("INFO")
        tools, failed = list_servers(servers, args.timeout)
        for name, why in failed:
            print(f"toolfilter pin: error: server {name!r}: {why}", file=sys.stderr)
        if failed:
            # A lock without a server would hide all its tools as new: none is written.
            print(f"toolfilter pin: {len(failed)} of {len(servers)} servers could not be "
                  "listed: nothing written", file=sys.stderr)
            return 1
    if not args.diff:
        try:
            lock = ToolLock.from_tools(tools)
        except (DigestError, LockError) as err:
            raise _usage_error(f"cannot pin: {err}") from None
        text = lock.dumps()
        if args.output is None:
            sys.stdout.write(text)
        else:
            try:
                Path(args.output).write_text(text, encoding="utf-8")
            except OSError as err:
                raise _usage_error(f"-o {args.output}: {err.strerror or err}") from None
        print(f"toolfilter pin: {len(lock)} tools of {len(lock.servers)} servers pinned",
              file=sys.stderr)
        return 0
    try:
        pinned = ToolLock.read(args.lock)
    except LockError as err:
        raise _usage_error(f"--lock {err}") from None
    changes = diff(pinned, tools)
    if args.format == "json":
        json.dump({"lock": args.lock, "changes": [c.to_dict() for c in changes]}, sys.stdout,
                  ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_changes(changes))
    return 1 if changes else 0


# --- the parsers -------------------------------------------------------------------------


def register(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Adds ``serve``, ``fetch`` and ``export`` to ``toolfilter``'s subparsers."""
    config_help = "the policy file (.toml or .json), as check reads it"
    servers_help = ('the servers file, {"mcpServers": {NAME: {"command", "args", "env"} or '
                    '{"url", "headers"}}}, as Claude Desktop and Cursor write it')

    serve = sub.add_parser(
        "serve", parents=parents, help="run a filtering MCP gateway in front of MCP servers",
        description="Starts every server of the servers file and serves their tools as one "
                    "MCP server, named SERVER__TOOL (or by their own names: --names bare; "
                    "renamed by the policy's [[rename]]), with the policy applied to "
                    "every tools/list and tools/call: a hidden tool is "
                    "answered as a name that never existed. SIGHUP (or a change of the "
                    "policy file) reloads the policy and starts upstreams that are down; "
                    "SIGINT/SIGTERM stop the gateway and its upstreams. See docs/gateway.md.",
    )
    serve.add_argument("--config", required=True, metavar="POLICY", help=config_help)
    serve.add_argument("--servers", required=True, metavar="SERVERS.json", help=servers_help)
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                       help="stdio (one client, which starts the gateway) or http "
                            "(streamable HTTP at /mcp) (default: stdio)")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000,
                       help="HTTP port; 0 picks a free one, named in the log (default: 8000)")
    serve.add_argument("--ctx", metavar="JSON",
                       help="stdio: the ctx of every request, JSON or @FILE (default: null)")
    serve.add_argument("--ctx-header", action="append", default=[], metavar="NAME",
                       help="http: a request header to put in ctx['headers']; repeatable")
    serve.add_argument("--message-from", default="off", metavar="SOURCE",
                       help="the groups stage's message: off, header:NAME (http) or meta:KEY "
                            "(the request's _meta) (default: off: only 'always' groups)")
    serve.add_argument("--token-file", metavar="FILE",
                       help='http: bearer tokens, {"TOKEN": {"client_id": ..., "scopes": '
                            '[...]}} (FastMCP\'s static token verifier: for tests)')
    serve.add_argument("--jwks-uri", metavar="URL", help="http: verify JWTs with this JWKS")
    serve.add_argument("--jwt-public-key", metavar="FILE",
                       help="http: verify JWTs with this PEM key (or HS* secret)")
    serve.add_argument("--issuer", help="http: the JWTs' required issuer")
    serve.add_argument("--audience", help="http: the JWTs' required audience")
    serve.add_argument("--algorithm", help="http: the JWT algorithm (default: RS256)")
    serve.add_argument("--start-timeout", type=_seconds, default=30.0, metavar="SECONDS",
                       help="how long an upstream may take to start, or to answer a list "
                            "in the background once slow (default: 30)")
    serve.add_argument("--list-timeout", type=_seconds, default=10.0, metavar="SECONDS",
                       help="how long a listing waits for one upstream; past it the upstream "
                            "is slow, left out and not waited for (default: 10)")
    serve.add_argument("--list-ttl", type=_seconds, default=60.0, metavar="SECONDS",
                       help="how long an upstream's lists are served from the cache at most; "
                            "its list_changed notices, a reload or its going down drop them "
                            "sooner (default: 60)")
    serve.add_argument("--policy-timeout", type=_seconds, default=5.0, metavar="SECONDS",
                       help="the budget of one policy evaluation (run off the event loop); "
                            "past it the request fails closed (default: 5)")
    serve.add_argument("--names", choices=MODES, default="prefixed",
                       help="prefixed: SERVER__TOOL (a resource scheme://SERVER/path); bare: "
                            "each server's own names, refused when two servers list one "
                            "(default: prefixed)")
    serve.add_argument("--page-size", type=_page_size, default=None, metavar="N",
                       help="list at most N items a page, with a cursor for the next "
                            "(default: every item in one page)")
    serve.add_argument("--stateless", action="store_true",
                       help="http: MCP's stateless streamable HTTP (no session: each request "
                            "stands alone), for several instances behind one address")
    serve.add_argument("--mode", choices=("enforce", "audit"), default=None,
                       help="enforce: hide what the policy hides; audit: hide nothing and "
                            "log what would have been hidden (default: the policy's "
                            "[policy] mode, else enforce)")
    serve.add_argument("--audit-log", default=None, metavar="FILE",
                       help="append the audit log (JSON lines: refused requests, hidden "
                            "calls, reloads, upstreams up and down) to FILE; - is stderr "
                            "(default: none, but stderr in audit mode)")
    serve.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                       default="INFO", help="default: INFO")
    serve.set_defaults(run=_cmd_serve)

    fetch = sub.add_parser(
        "fetch", parents=parents, help="write live servers' tools/list as catalog files",
        description="Connects to each server and writes its tools/list result to "
                    "DIR/SERVER.json, a catalog that check, explain, lint and export read. "
                    "One progress line a server on stderr; a server that fails does not "
                    "stop the others (exit 1 when any failed).",
    )
    fetch.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="the directory to write the catalogs to")
    fetch.add_argument("--servers", metavar="SERVERS.json", help=servers_help)
    fetch.add_argument("--url", help="one remote server (streamable HTTP, or SSE at /sse)")
    fetch.add_argument("--server-id", metavar="ID",
                       help="the name of the --url or command server (default: from the "
                            "URL's host or the command)")
    fetch.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                       help="per server (default: 30)")
    fetch.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                       help="one stdio server, the command line after --")
    fetch.set_defaults(run=_cmd_fetch)

    export = sub.add_parser(
        "export", parents=parents, help="expand a policy into a host's exact tool lists",
        description="Applies the policy to the catalogs and writes what it keeps in a host's "
                    "own configuration: openai (Responses API mcp tools, allowed_tools), "
                    "anthropic (MCP connector mcp_servers and mcp_toolset), claude-code "
                    "(permission rules mcp__SERVER__TOOL), docker (docker mcp gateway run "
                    "--servers/--tools). A policy that depends on ctx or the message needs "
                    "--ctx or --message, and the header says whom the list is for.",
    )
    export.add_argument("--config", required=True, metavar="POLICY", help=config_help)
    export.add_argument("--format", required=True, choices=FORMATS)
    export.add_argument("catalogs", nargs="+", metavar="CATALOG",
                        help="a catalog file (as check reads it): FILE or SERVER=FILE")
    export.add_argument("--ctx", metavar="JSON", help="the caller's ctx: JSON or @FILE")
    export.add_argument("--message", metavar="TEXT", help="the turn's user message")
    export.add_argument("--servers", metavar="SERVERS.json",
                        help="take the servers' URLs from this file (openai, anthropic)")
    export.add_argument("--server-url", action="append", default=[], metavar="SERVER=URL",
                        help="a server's URL (openai, anthropic); repeatable")
    export.set_defaults(run=_cmd_export)

    pin = sub.add_parser(
        "pin", parents=parents, help="pin the servers' tool definitions in a lock file",
        description="Lists every server of the servers file (or reads catalogs) and writes a "
                    "lock: the sha256 digest and the definition of each tool's name, "
                    "description, input and output schema and annotations. A policy's "
                    "[pinning] section names the lock, and hides a tool that changed since "
                    "(or a new one). --diff compares the lock with what the servers list "
                    "now and shows each change for review (exit 1 when there is one).",
    )
    pin.add_argument("--servers", metavar="SERVERS.json", help=servers_help)
    pin.add_argument("catalogs", nargs="*", metavar="CATALOG",
                     help="catalog files instead of live servers (as check reads them)")
    pin.add_argument("--diff", action="store_true",
                     help="show what changed since the lock (--lock) instead of writing one")
    pin.add_argument("--lock", default="tools.lock", metavar="FILE",
                     help="the lock --diff compares with (default: tools.lock)")
    pin.add_argument("-o", "--output", metavar="FILE",
                     help="write the lock to FILE (default: standard output)")
    pin.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                     help="per server, to start and list (default: 30)")
    pin.add_argument("--format", choices=("text", "json"), default="text",
                     help="--diff's output (default: text)")
    pin.set_defaults(run=_cmd_pin)
