"""The gateway: the Policy between MCP clients and their servers, and the
catalogs it works on taken from live servers.

* ``servers`` reads the ``{"mcpServers": {...}}`` file that MCP clients write;
* ``upstream`` is one server behind the gateway, a FastMCP proxy provider;
* ``serve`` is ``toolfilter serve``: a FastMCP server over the upstreams with
  the Policy as a transform on every ``tools/list`` and ``tools/call``;
* ``fetch`` is ``toolfilter fetch``: each server's ``tools/list`` as a catalog file;
* ``export`` is ``toolfilter export``: the policy expanded against catalogs into
  the exact-name configuration of a host (OpenAI, Anthropic, Claude Code, Docker);
* ``pin`` lists servers for ``toolfilter pin``; ``audit`` is the audit log.

The subcommands (``serve``, ``fetch``, ``export``, ``pin``) are in
``toolfilter_fast.cli.gateway``. ``servers``, ``export`` and ``audit`` need
nothing beyond the package; ``serve``, ``upstream``, ``fetch`` and ``pin``
need FastMCP (the ``gateway`` extra).
"""
