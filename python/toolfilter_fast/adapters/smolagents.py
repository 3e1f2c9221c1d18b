"""smolagents: ``ToolCollection.from_mcp`` with a ToolFilter or a Policy.

::

    from mcp import StdioServerParameters
    from smolagents import CodeAgent
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.smolagents import tool_collection

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    params = StdioServerParameters(command="github-mcp")
    with tool_collection(params, rules, server_id="github", context=user,
                         trust_remote_code=True) as tools:
        agent = CodeAgent(tools=[*tools.tools], model=model)

``ToolCollection.from_mcp`` and ``MCPClient`` load every tool of a server
through mcpadapt (``MCPAdapt(server, SmolAgentsAdapter())``), and neither
takes a filter; their ``Tool`` objects keep a sanitized name, the description
and the inputs, not the MCP annotations. :func:`tool_collection` is
``from_mcp`` built from the same public parts, with smolagents' own
``SmolAgentsAdapter`` wrapped so that each tool is judged by the MCP
definition it was made from (the server's name, annotations and schema), in
one call for the whole list. The ``ToolCollection`` it yields holds only the
tools the rules keep; an agent resolves a tool call against its own tools,
so a hidden name is answered as an unknown one (``Unknown tool <name>,
should be one of: ...``). The list is decided once, when the collection is
made. ``ctx``, ``message`` and ``focus`` are functions of the ``context=``
object (default: ``ctx`` is the object itself, no message, the focus its
``focus`` key or attribute).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._common import CtxFunc, FocusFunc, MessageFunc
from ._mcpadapt import MCPAdaptFilter, filtered_tools

__all__ = ["tool_collection"]


@contextmanager
def tool_collection(
    server_parameters: Any,
    tool_filter: Any,
    *,
    server_id: str,
    trust_remote_code: bool = False,
    structured_output: bool = False,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Iterator[Any]:
    """A context manager yielding a smolagents ``ToolCollection`` of the
    server's tools that the rules keep, as ``ToolCollection.from_mcp`` would
    load them (``server_parameters``: ``StdioServerParameters`` or a dict with
    ``url`` and ``transport``; ``trust_remote_code`` must be True, as there).

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` or a
      :class:`~toolfilter_fast.Policy`; ``server_id``: the id the patterns see.
    * ``context``: the object the functions get; ``ctx`` default the object
      itself; ``message`` (Policy only) default None; ``focus`` (Policy only)
      default ``context["focus"]`` or ``context.focus``.

    TypeError for a wrong argument, ValueError without ``trust_remote_code``,
    both before the server is started. Fails closed: a failing function,
    filter or policy yields an empty collection and logs a warning.
    """
    # The optional extra, absent from the main venv, where mypy runs.
    from mcpadapt.smolagents_adapter import (  # type: ignore[import-not-found,unused-ignore]
        SmolAgentsAdapter,
    )
    from smolagents import ToolCollection  # type: ignore[import-not-found,unused-ignore]

    rules = MCPAdaptFilter(tool_filter, server_id=server_id, where="smolagents", ctx=ctx,
                           message=message, focus=focus)
    if trust_remote_code is not True:
        raise ValueError("loading tools from MCP runs the server's tools: pass "
                         "trust_remote_code=True, as ToolCollection.from_mcp requires")
    inner = SmolAgentsAdapter(structured_output=structured_output)
    with filtered_tools(server_parameters, inner, rules, context) as tools:
        yield ToolCollection(tools)
