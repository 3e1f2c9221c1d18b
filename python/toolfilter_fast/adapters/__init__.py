"""Adapters that drop a :class:`~toolfilter_fast.ToolFilter` or a
:class:`~toolfilter_fast.Policy` into agent frameworks.

One module per framework, each imported on its own so that ``import
toolfilter_fast`` (and this package) imports no framework:

* :mod:`toolfilter_fast.adapters.openai_agents`: ``mcp_tool_filter`` for an
  OpenAI Agents SDK MCP server's ``tool_filter``, ``filtered_server`` around
  its whole list;
* :mod:`toolfilter_fast.adapters.pydantic_ai`: ``filter_func`` for
  ``toolset.filtered(...)`` and ``prepare_func`` for ``toolset.prepared(...)``;
* :mod:`toolfilter_fast.adapters.fastmcp`: ``ToolFilterTransform``, server side,
  for a FastMCP server's ``add_transform``, and ``apply_cache_scope`` for the
  ``tools/list`` result's cache scope;
* :mod:`toolfilter_fast.adapters.google_adk`: ``tool_predicate`` for
  ``McpToolset(tool_filter=...)``, ``filtered_toolset`` around a toolset's
  whole list.

A Policy reads the turn's user message and a focus besides ``ctx``: each
adapter takes them from the framework's own objects, and ``message=`` and
``focus=`` functions replace those defaults as ``ctx=`` does.

Every adapter fails closed: an exception inside it (reading ``ctx``, the
message or the focus, converting the tool, or in the filter or policy) hides
the tool, logs a warning on the ``toolfilter_fast.adapters`` logger, and never
reaches the host framework.
"""

__all__: list[str] = []
