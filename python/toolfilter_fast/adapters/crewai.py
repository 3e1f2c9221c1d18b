"""CrewAI: the tools of ``crewai_tools.MCPServerAdapter`` through a ToolFilter or a Policy.

::

    from crewai import Agent
    from mcp import StdioServerParameters
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.crewai import mcp_tools

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    with mcp_tools(StdioServerParameters(command="github-mcp"), rules,
                   server_id="github", context=user) as tools:
        agent = Agent(role="...", goal="...", backstory="...", tools=tools)

``MCPServerAdapter`` takes a list of exact tool names at most, builds its
``MCPAdapt`` inside (the attribute holding it is private), and its CrewAI
tools keep a sanitized name, the description and an argument model, not the
MCP annotations. :func:`mcp_tools` is ``MCPServerAdapter`` built from the same
public parts (mcpadapt's ``MCPAdapt`` and crewai-tools' own
``CrewAIToolAdapter``), that adapter wrapped so that each tool is judged by
the MCP definition it was made from, the whole list in one call. The
collection it yields holds only the tools the rules keep; CrewAI resolves a
tool call against an agent's tools, so a hidden name is answered as any name
the agent does not have. The list is decided once, when the tools are made.
``ctx``, ``message`` and ``focus`` are functions of the ``context=`` object
(default: ``ctx`` is the object itself, no message, the focus its ``focus``
key or attribute).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._common import CtxFunc, FocusFunc, MessageFunc
from ._mcpadapt import MCPAdaptFilter, filtered_tools

__all__ = ["mcp_tools"]


@contextmanager
def mcp_tools(
    server_parameters: Any,
    tool_filter: Any,
    *,
    server_id: str,
    connect_timeout: int = 30,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Iterator[Any]:
    """A context manager yielding a crewai-tools ``ToolCollection`` of the
    server's tools that the rules keep, as ``MCPServerAdapter`` makes them
    (``server_parameters``: ``StdioServerParameters`` or a dict with ``url``
    and ``transport``).

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` or a
      :class:`~toolfilter_fast.Policy`; ``server_id``: the id the patterns see.
    * ``context``: the object the functions get; ``ctx`` default the object
      itself; ``message`` (Policy only) default None; ``focus`` (Policy only)
      default ``context["focus"]`` or ``context.focus``.

    TypeError for a wrong argument, before the server is started. Fails
    closed: a failing function, filter or policy yields an empty collection
    and logs a warning.
    """
    # The optional extra, absent from the main venv, where mypy runs.
    from crewai_tools.adapters.mcp_adapter import (  # type: ignore[import-not-found,unused-ignore]
        CrewAIToolAdapter,
    )
    from crewai_tools.adapters.tool_collection import (  # type: ignore[import-not-found,unused-ignore]
        ToolCollection,
    )

    rules = MCPAdaptFilter(tool_filter, server_id=server_id, where="crewai", ctx=ctx,
                           message=message, focus=focus)
    with filtered_tools(server_parameters, CrewAIToolAdapter(), rules, context,
                        connect_timeout=connect_timeout) as tools:
        yield ToolCollection(tools)
