"""Google ADK: a ToolFilter or a Policy for an ADK toolset.

::

    from google.adk.tools.mcp_tool import McpToolset
    from toolfilter_fast import Policy, ToolFilter
    from toolfilter_fast.adapters.google_adk import filtered_toolset, tool_predicate

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    predicate = tool_predicate(rules, server_id="github")
    toolset = McpToolset(connection_params=..., tool_filter=predicate)

    # The whole Policy (groups by the user content, focus from session state, budget):
    toolset = filtered_toolset(McpToolset(connection_params=...),
                               Policy.from_file("policy.toml"), server_id="github")

ADK calls a toolset's predicate as ``(tool: BaseTool, readonly_context) -> bool``
for every tool of a listing, before ``tool_name_prefix`` is applied, and checks
it with ``isinstance(..., ToolPredicate)``, a runtime-checkable protocol that any
callable satisfies: :func:`tool_predicate` fits it, and judges each tool alone.
The list-level hook is the toolset's ``get_tools(readonly_context)``, the method
ADK's own docs override in a toolset subclass: :func:`filtered_toolset` wraps it,
so a Policy sees the toolset's whole list (MCP toolsets list by name) and its
budget can cut it.

What an LLM request lists is also all it can call: ADK resolves the model's
function calls against the tools it resolved for that step, and answers any
other name with the same error for a hidden tool as for one that never existed.
This module imports nothing from ADK.
"""

from __future__ import annotations

from typing import Any

from .._tool import Tool
from ._common import BoundFilter, CtxFunc, FocusFunc, MessageFunc, filter_method, mcp_tool

__all__ = ["ToolFilterPredicate", "ToolListFilter", "filtered_toolset", "tool_predicate",
           "user_content_text"]

_WHERE = "google-adk"


def _readonly_context(readonly_context: Any) -> Any:
    return readonly_context


def user_content_text(readonly_context: Any) -> str | None:
    """The default message: the text parts of ``readonly_context.user_content``
    (the user content that started this invocation) joined by newlines; None
    without a context or user content."""
    content = getattr(readonly_context, "user_content", None) if readonly_context else None
    if content is None:
        return None
    return "\n".join(part.text for part in content.parts or ()
                     if isinstance(getattr(part, "text", None), str))


def state_focus(readonly_context: Any) -> Any:
    """The default focus: ``readonly_context.state["focus"]``, the session
    state's ``focus`` key; None without a context or key."""
    if readonly_context is None:
        return None
    return readonly_context.state.get("focus")


_DEFAULTS = (_readonly_context, user_content_text, state_focus)


def _base_tool_to_tool(server_id: str, tool: Any) -> Tool:
    """``Tool`` from an ADK ``BaseTool``: an ``McpTool`` is read from the MCP
    definition it wraps (schema and annotations included); any other tool gives
    its name and description only."""
    raw = getattr(tool, "raw_mcp_tool", None)
    if raw is not None:
        return mcp_tool(server_id, raw)
    description = getattr(tool, "description", None)
    return Tool(server_id, tool.name, description if isinstance(description, str) else None)


class _AdkRules(BoundFilter):
    """What the ADK hooks share: the arguments, the defaults, the conversion."""

    __slots__ = ()

    DEFAULTS = _DEFAULTS

    def _to_tool(self, tool: Any) -> Tool:
        return _base_tool_to_tool(self._server_id, tool)


class ToolFilterPredicate(_AdkRules):
    """A ``ToolPredicate``: ``(tool: BaseTool, readonly_context=None) -> bool``.

    Build it with :func:`tool_predicate`. Returns a real ``bool``; anything that
    raises inside (the ctx, message or focus function, the conversion, the
    filter or policy) gives False.
    """

    __slots__ = ()

    PER_TOOL = "tool_predicate (a toolset's tool_filter)"
    LIST_HOOK = "filtered_toolset(toolset, policy, server_id=...)"

    def __call__(self, tool: Any, readonly_context: Any = None) -> bool:
        return self.keeps(self._server_id, tool, self._to_tool, readonly_context, where=_WHERE)


def tool_predicate(
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> ToolFilterPredicate:
    """A ``ToolPredicate`` for ``McpToolset(tool_filter=...)`` (or any ADK toolset).

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` (or any object with
      ``visible``, ``filter`` and ``static_visible``), or a
      :class:`~toolfilter_fast.Policy`. Each tool is judged alone, so a Policy
      with a budget, a lens cap or a relevance stage is refused here (TypeError): give it to
      :func:`filtered_toolset`, which sees the whole list.
    * ``server_id``: the id the patterns see for every tool of this toolset
      (ADK's toolset has no server name of its own).
    * ``ctx``: a function from ADK's ``ReadonlyContext`` (None when ADK lists
      tools outside a run) to the filter's ``ctx``; default the
      ``ReadonlyContext`` itself (``.user_id``, ``.state``, ``.session``).
    * ``message`` (Policy only): a function from the ``ReadonlyContext`` (or
      None) to the turn's user message; default :func:`user_content_text`.
    * ``focus`` (Policy only): a function from the ``ReadonlyContext`` (or None)
      to the focus; default :func:`state_focus` (the session state's ``focus``).

    TypeError at once for a wrong argument; at run time it fails closed.
    """
    return ToolFilterPredicate(tool_filter, server_id=server_id, ctx=ctx, message=message,
                               focus=focus)


class ToolListFilter(_AdkRules):
    """``(tools: list[BaseTool], readonly_context=None) -> list[BaseTool]``: a
    ToolFilter or a Policy over a toolset's whole list, as
    :func:`filtered_toolset` applies it; call it from your own toolset
    subclass's ``get_tools`` to do the same there."""

    __slots__ = ()

    def __call__(self, tools: list[Any], readonly_context: Any = None) -> list[Any]:
        return self.keep(self._server_id, tools, self._to_tool, readonly_context, where=_WHERE)


def filtered_toolset(
    toolset: Any,
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Any:
    """``toolset`` (any ADK ``BaseToolset``), its ``get_tools`` now filtered:
    every listing goes through ``tool_filter`` in one call (for a Policy, one
    ``select``: every stage, the budget included).

    The toolset object itself is returned, changed in place, so ADK keeps
    treating it as the toolset it is (``get_tools_with_prefix``, its
    per-invocation cache, ``tool_name_prefix``, auth and ``close`` are its
    own); its own ``tool_filter``, if any, runs first, and the names judged
    are the unprefixed ones. Arguments as for :func:`tool_predicate`. TypeError
    at once for a wrong argument; at run time it fails closed: a tool that
    cannot be read is dropped alone; a failing ctx, message or focus function,
    filter or policy drops the whole list of that step.
    """
    list_filter = ToolListFilter(tool_filter, server_id=server_id, ctx=ctx, message=message,
                                 focus=focus)
    return filter_method(toolset, "get_tools", list_filter,
                         "toolset must be an ADK BaseToolset (with get_tools(readonly_context))")
