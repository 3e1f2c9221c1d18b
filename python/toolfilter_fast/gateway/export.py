"""``toolfilter export``: a policy expanded against catalogs into a host's own
configuration, for hosts that take exact tool names only.

The tools a policy keeps (:meth:`Policy.select` over the catalogs' tools, for
the ctx and message given) become, per format:

* ``openai``: the OpenAI Responses API's ``mcp`` tools, one per server, with
  the kept names in ``allowed_tools``;
* ``anthropic``: the Anthropic MCP connector's ``mcp_servers`` and, per server,
  an ``mcp_toolset`` that turns every tool off by default and the kept ones on;
* ``claude-code``: Claude Code permission rules, ``mcp__SERVER__TOOL``: the
  kept tools in ``permissions.allow``, the catalogs' other tools in ``deny``;
* ``docker``: the Docker MCP gateway's command line, ``--servers`` and one
  ``--tools SERVER:TOOL`` a kept tool.

JSON formats carry their header as the document's first key, ``"//"`` (the
comment key JSON configs use); the Docker format as ``#`` lines. The header
names the policy and the catalogs, and, when the policy's verdict depends on
the caller, the ctx or message the list was made for.

The policy judges the tools in the order ``toolfilter serve`` lists them
(servers in the servers file's order when one is given, else in the
catalogs' order; each server's tools by name), so that a ``[budget]`` keeps
what the gateway keeps; the lists are written in the catalogs' order.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._tool import Tool
from ..groups import GroupMode
from ..policy import Policy
from ..policy.model import serving_order

__all__ = ["FORMATS", "Allowed", "ExportError", "allowed", "reads", "render"]

FORMATS = ("openai", "anthropic", "claude-code", "docker")

#: What stands for a server's URL that neither --servers nor --server-url gave.
URL_PLACEHOLDER = "https://{server}.invalid/mcp"


class ExportError(ValueError):
    """An export that cannot be made as asked (a ctx or message is missing)."""


def reads(policy: Policy) -> list[str]:
    """What of the caller the policy's verdict depends on: ``"ctx"`` (function
    patterns, CEL reading ``ctx``), ``"message"`` (dynamic groups)."""
    out = []
    if policy.filter.dynamic:
        out.append("ctx")
    if any(group.mode is GroupMode.DYNAMIC for group in policy.groups.groups):
        out.append("message")
    return out


@dataclass(frozen=True)
class Allowed:
    """The kept and the dropped tools of each server, servers in catalog order;
    ``servers``, the servers file's servers (None: no servers file given)."""

    kept: dict[str, list[str]]
    dropped: dict[str, list[str]]
    header: list[str]
    servers: tuple[str, ...] | None = None

    def pairs(self) -> set[tuple[str, str]]:
        return {(server, name) for server, names in self.kept.items() for name in names}


def allowed(policy: Policy, tools: Sequence[Tool], *, ctx: Any = None, ctx_given: bool = False,
            message: str | None = None, describe: Sequence[str] = (),
            servers: Sequence[str] | None = None) -> Allowed:
    """The policy's selection over ``tools``, by server, judged in the
    gateway's order (``servers``: the servers file's servers, in its order;
    None: the catalogs' order). A policy that reads what was not given
    (``ctx_given``, ``message``) is an :class:`ExportError`: an exact list is
    a verdict for one caller."""
    needs = reads(policy)
    if "ctx" in needs and not ctx_given:
        raise ExportError("the policy's verdict depends on the caller's ctx (a function "
                          "pattern or a CEL pattern reading ctx): give --ctx JSON to export "
                          "the list of one caller")
    if "message" in needs and message is None:
        raise ExportError("the policy's verdict depends on the turn's message (a dynamic "
                          "group): give --message TEXT to export the list of one turn")
    order = serving_order(tools, servers or ())
    selection = policy.select([tools[i] for i in order], ctx, message)
    judged = {i: selection.stage_of(j) for j, i in enumerate(order)}
    kept: dict[str, list[str]] = {}
    dropped: dict[str, list[str]] = {}
    for i, tool in enumerate(tools):
        kept.setdefault(tool.server_id, [])
        dropped.setdefault(tool.server_id, [])
        (kept if judged[i] is None else dropped)[tool.server_id].append(tool.name)
    header = [f"made by toolfilter export from {', '.join(describe) or 'the policy'}"]
    if needs:
        given = []
        if "ctx" in needs:
            given.append(f"ctx {json.dumps(ctx, ensure_ascii=False, sort_keys=True)}")
        if "message" in needs:
            given.append(f"message {json.dumps(message, ensure_ascii=False)}")
        header.append(f"the policy depends on the caller: this list is for {' and '.join(given)}"
                      " only; another caller may be allowed other tools")
    total = sum(len(names) for names in kept.values())
    header.append(f"{total} of {len(tools)} tools allowed")
    return Allowed(kept, dropped, header, None if servers is None else tuple(servers))


def _url(server: str, result: Allowed, urls: Mapping[str, str], header: list[str]) -> str:
    url = urls.get(server)
    if url is None:
        if result.servers is None:
            where = f"no URL here (give --servers or --server-url {server}=URL)"
        elif server in result.servers:
            where = (f"no URL in the servers file (a stdio server there; give --server-url "
                     f"{server}=URL)")
        else:
            where = f"no URL: it is not in the servers file (give --server-url {server}=URL)"
        header.append(f"server {server!r} has {where}: a placeholder stands for it")
        return URL_PLACEHOLDER.format(server=server)
    return url


def _openai(result: Allowed, urls: Mapping[str, str]) -> Any:
    # The Responses API's `mcp` tool: `type` "mcp", a `server_label` naming the
    # server in tool calls, its `server_url`, and `allowed_tools` as a plain list
    # of tool names (the API also takes a filter object; a list is exact).
    header = list(result.header)
    tools = [{"type": "mcp", "server_label": server,
              "server_url": _url(server, result, urls, header), "allowed_tools": names}
             for server, names in result.kept.items() if names]
    return {"//": header, "tools": tools}


def _anthropic(result: Allowed, urls: Mapping[str, str]) -> Any:
    # The MCP connector (beta header mcp-client-2025-11-20): each server in
    # `mcp_servers` ({"type": "url", "url", "name"}) is referenced by exactly one
    # `mcp_toolset` in `tools`; an allowlist is `default_config` {"enabled": false}
    # with each allowed tool {"enabled": true} under `configs`.
    header = list(result.header)
    servers = [server for server, names in result.kept.items() if names]
    return {
        "//": header,
        "mcp_servers": [{"type": "url", "url": _url(server, result, urls, header),
                         "name": server} for server in servers],
        "tools": [{"type": "mcp_toolset", "mcp_server_name": server,
                   "default_config": {"enabled": False},
                   "configs": {name: {"enabled": True} for name in result.kept[server]}}
                  for server in servers],
    }


def _claude_code(result: Allowed) -> Any:
    # Claude Code's settings.json: permission rules name an MCP tool as
    # mcp__SERVER__TOOL (the server as configured in Claude Code); `allow` runs a
    # tool without asking, `deny` refuses it. A tool in neither is asked for,
    # so the catalogs' other tools are denied outright.
    def rule(server: str, name: str) -> str:
        return f"mcp__{server}__{name}"

    return {
        "//": result.header,
        "permissions": {
            "allow": [rule(s, n) for s, names in result.kept.items() for n in names],
            "deny": [rule(s, n) for s, names in result.dropped.items() for n in names],
        },
    }


def render(fmt: str, result: Allowed, urls: Mapping[str, str] | None = None) -> str:
    """The export in format ``fmt`` (one of :data:`FORMATS`), as text."""
    urls = urls or {}
    if fmt == "docker":
        return _docker(result)
    doc = {"openai": lambda: _openai(result, urls),
           "anthropic": lambda: _anthropic(result, urls),
           "claude-code": lambda: _claude_code(result)}[fmt]()
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def _docker(result: Allowed) -> str:
    # The Docker MCP gateway: `docker mcp gateway run --servers a,b` enables
    # servers, and each `--tools SERVER:TOOL` enables one tool of one of them.
    servers = [server for server, names in result.kept.items() if names]
    parts = ["docker mcp gateway run"]
    if servers:
        parts.append(f"--servers {shlex.quote(','.join(servers))}")
    parts += [f"--tools {shlex.quote(f'{server}:{name}')}"
              for server in servers for name in result.kept[server]]
    lines = [f"# {line}" for line in result.header]
    lines.append(" \\\n    ".join(parts))
    return "\n".join(lines) + "\n"
