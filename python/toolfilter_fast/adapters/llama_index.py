"""LlamaIndex, through llama-index-tools-mcp: an ``McpToolSpec`` whose client is filtered.

::

    from llama_index.tools.mcp import BasicMCPClient
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.llama_index import tool_spec

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    spec = tool_spec(BasicMCPClient("http://localhost:8000/mcp"), rules, server_id="github")
    agent = FunctionAgent(tools=await spec.to_tool_list_async(), llm=llm)

``McpToolSpec`` does all its work through its ``client`` (any object with
``list_tools`` and ``call_tool``: a ``BasicMCPClient`` or a ``ClientSession``):
it lists the tools once per ``to_tool_list``, and each ``FunctionTool`` it
makes calls ``client.call_tool(name, kwargs)``. The hook is that public
attribute: :func:`tool_spec` builds a spec over a filtered view of the client
(:mod:`toolfilter_fast.adapters.mcp_client`) and :func:`filtered_tool_spec`
puts the view into a spec already built. So the spec's list holds only the
tools the rules keep (its own ``allowed_tools`` still applies after), and
each call is checked again against the list at that moment, a hidden tool
refused by the view, unsent, with ``Unknown tool: <name>``. The ``ctx``,
``message`` and ``focus`` functions get the ``context=`` object (default:
``ctx`` is the object itself, no message, the focus its ``focus`` key or
attribute). This module imports nothing from LlamaIndex until a function runs.
"""

from __future__ import annotations

from typing import Any

from ._common import CtxFunc, FocusFunc, MessageFunc
from .mcp_client import FilteredSession, session_for

__all__ = ["filtered_tool_spec", "tool_spec"]


def filtered_tool_spec(
    spec: Any,
    tool_filter: Any,
    *,
    server_id: str,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Any:
    """``spec`` (an ``McpToolSpec``) with its ``client`` replaced by a filtered
    view of it; returns the spec. TypeError for a spec without a client, or a
    client already filtered, and for a wrong argument (as :func:`filter_session`)."""
    client = getattr(spec, "client", None)
    if client is None or not callable(getattr(spec, "to_tool_list_async", None)):
        raise TypeError(f"spec must be a LlamaIndex McpToolSpec, got {type(spec).__name__}")
    if isinstance(client, FilteredSession):
        raise TypeError("this spec's client is filtered already")
    spec.client = session_for(client, tool_filter, server_id=server_id, context=context, ctx=ctx,
                              message=message, focus=focus)
    return spec


def tool_spec(
    client: Any,
    tool_filter: Any,
    *,
    server_id: str,
    context: Any = None,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
    **spec_options: Any,
) -> Any:
    """An ``McpToolSpec`` over a filtered view of ``client`` (a ``BasicMCPClient``
    or a ``ClientSession``). ``spec_options`` (``allowed_tools``,
    ``include_resources``, partial params) go to ``McpToolSpec``.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` or a
      :class:`~toolfilter_fast.Policy`; ``server_id``: the id the patterns see.
    * ``context``: the object the functions below get (your user); ``ctx``
      default: ``context`` itself; ``message`` (Policy only) default None;
      ``focus`` (Policy only) default ``context["focus"]`` or ``context.focus``.
    """
    # The optional extra (untyped; absent where it is not installed).
    from llama_index.tools.mcp import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        McpToolSpec,
    )

    view = session_for(client, tool_filter, server_id=server_id, context=context, ctx=ctx,
                       message=message, focus=focus)
    return McpToolSpec(view, **spec_options)
