"""The gateway: the Policy between MCP clients and their servers, and the
catalogs it works on taken from live servers.

* ``servers`` reads the ``{"mcpServers": {...}}`` file that MCP clients write;
* ``upstream`` is one server behind the gateway, a FastMCP proxy provider;
* ``serve`` is ``toolfilter serve``: a FastMCP server over the upstreams with
  the Policy as a transform on every ``tools/list`` and ``tools/call``;
* ``fetch`` is ``toolfilter fetch``: each server's ``tools/list`` as a catalog file;
* ``export`` is ``toolfilter export``: the policy expanded against catalogs into
  the exact-name configuration of a host (OpenAI, Anthropic, Claude Code, Docker);
* ``cli`` adds the three subcommands to ``toolfilter``.

``servers``, ``export`` and ``cli`` need nothing beyond the package; ``serve``,
``upstream`` and ``fetch`` need FastMCP (the ``gateway`` extra).
"""
