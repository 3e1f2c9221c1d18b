"""pydantic-ai: a ToolFilter or a Policy for ``toolset.filtered`` and ``toolset.prepared``.

::

    from pydantic_ai.mcp import MCPToolset
    from toolfilter_fast import Policy, ToolFilter
    from toolfilter_fast.adapters.pydantic_ai import filter_func, prepare_func

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    server = MCPToolset("http://localhost:8000/mcp")
    toolset = server.filtered(filter_func(rules, server_id="github"))
    # or one call per step over the whole list, cut to 20 tools:
    toolset = server.prepared(prepare_func(rules, server_id="github", max_tools=20))
    # or the whole Policy (groups by the run's prompt, focus from deps, budget):
    toolset = server.prepared(prepare_func(Policy.from_file("policy.toml"), server_id="github"))
    # the same, the server's hints read as it sent them (see filtered_toolset):
    toolset = filtered_toolset(server, Policy.from_file("policy.toml"), server_id="github")

A toolset does not know which MCP server it stands for, so ``server_id`` is
given. The names judged are the ones the wrapped toolset lists: apply
``filtered``/``prepared`` before ``prefixed``/``renamed`` to match the server's
own names. pydantic-ai builds each step's tools from ``get_tools``, so what a
step lists is also all it can call: a tool the list left out is answered as
an unknown tool. This module imports nothing from pydantic-ai until
:func:`filtered_toolset` is called.

``filter_func`` and ``prepare_func`` are handed the definitions pydantic-ai
made from the MCP SDK's models, whose hints the SDK coerced
(``{"destructiveHint": "false"}`` arrives as ``False``). :func:`filtered_toolset`
lists the toolset itself, inside :func:`toolfilter_fast.sdk_hints.hints_as_sent`,
so each hint is judged as the server sent it (one that is no JSON boolean takes
the MCP default, as in the library).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from .._tool import Tool
from ..sdk_hints import hints_as_sent
from ._common import (
    BoundFilter,
    CtxFunc,
    FocusFunc,
    MessageFunc,
    check_max_tools,
    focus_from,
    mapping_or_none,
)

__all__ = ["FilterFunc", "PrepareFunc", "filter_func", "filtered_toolset", "prepare_func",
           "prompt_text"]


def _deps(run_context: Any) -> Any:
    return run_context.deps


def prompt_text(run_context: Any) -> str | None:
    """The default message: ``run_context.prompt``, the user prompt this run
    was given; of a multi-part prompt, its text parts (``str`` and
    ``TextContent``) joined by newlines; None without a prompt."""
    prompt = run_context.prompt
    if prompt is None or isinstance(prompt, str):
        return prompt
    texts = [part if isinstance(part, str) else part.content for part in prompt
             if isinstance(part, str) or getattr(part, "kind", None) == "text-content"]
    return "\n".join(texts)


def _deps_focus(run_context: Any) -> Any:
    return focus_from(run_context.deps)


_DEFAULTS = (_deps, prompt_text, _deps_focus)
_WHERE = "pydantic-ai"


def _tool_def_to_tool(server_id: str, tool_def: Any) -> Tool:
    """``Tool`` from a ``ToolDefinition``; an MCP toolset puts the server's
    annotations (camelCase keys) under ``metadata["annotations"]``."""
    metadata = tool_def.metadata
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return Tool(
        server_id,
        tool_def.name,
        tool_def.description,
        mapping_or_none(tool_def.parameters_json_schema, "parameters_json_schema"),
        mapping_or_none(annotations, "annotations"),
    )


class _PydanticRules(BoundFilter):
    """What the two pydantic-ai hooks share: the arguments, the defaults, the conversion."""

    __slots__ = ()

    DEFAULTS = _DEFAULTS

    def _to_tool(self, tool_def: Any) -> Tool:
        return _tool_def_to_tool(self._server_id, tool_def)


class FilterFunc(_PydanticRules):
    """A callable ``(ctx: RunContext, tool_def: ToolDefinition) -> bool`` for
    ``toolset.filtered(...)``. Build it with :func:`filter_func`."""

    __slots__ = ()

    PER_TOOL = "filter_func (toolset.filtered)"
    LIST_HOOK = "prepare_func (toolset.prepared)"

    def __call__(self, run_context: Any, tool_def: Any) -> bool:
        return self.keeps(self._server_id, tool_def, self._to_tool, run_context, where=_WHERE)


class PrepareFunc(_PydanticRules):
    """A callable ``(ctx: RunContext, tool_defs: list[ToolDefinition]) -> list[ToolDefinition]``
    for ``toolset.prepared(...)``. Build it with :func:`prepare_func`."""

    __slots__ = ("_max_tools",)

    def __init__(
        self,
        tool_filter: Any,
        *,
        server_id: str,
        ctx: CtxFunc | None = None,
        max_tools: int | None = None,
        message: MessageFunc | None = None,
        focus: FocusFunc | None = None,
    ) -> None:
        super().__init__(tool_filter, server_id=server_id, ctx=ctx, message=message, focus=focus)
        self._max_tools = check_max_tools(max_tools)

    def __repr__(self) -> str:
        return (
            f"PrepareFunc({self.rules!r}, server_id={self._server_id!r}, "
            f"max_tools={self._max_tools!r})"
        )

    def __call__(self, run_context: Any, tool_defs: list[Any]) -> list[Any]:
        kept = self.keep(self._server_id, tool_defs, self._to_tool, run_context, where=_WHERE)
        if self._max_tools is not None:
            del kept[self._max_tools:]
        return kept


def filter_func(
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> FilterFunc:
    """A per-tool filter for ``toolset.filtered(...)``.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` (or any object with
      ``visible``, ``filter`` and ``static_visible``), or a
      :class:`~toolfilter_fast.Policy`. Each tool is judged alone, so a Policy
      with a budget, a lens cap or a relevance stage is refused here (TypeError): give it to
      :func:`prepare_func`, which sees the whole list.
    * ``server_id``: the id the patterns see for every tool of this toolset.
    * ``ctx``: a function from pydantic-ai's ``RunContext`` to the filter's
      ``ctx``; default ``run_context.deps``.
    * ``message`` (Policy only): a function from the ``RunContext`` to the
      turn's user message; default :func:`prompt_text` (``run_context.prompt``).
    * ``focus`` (Policy only): a function from the ``RunContext`` to the focus;
      default ``deps["focus"]`` (a mapping) or ``deps.focus``, else None.

    TypeError at once for a wrong argument; at run time it fails closed (an
    error hides that tool).
    """
    return FilterFunc(tool_filter, server_id=server_id, ctx=ctx, message=message, focus=focus)


def prepare_func(
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    max_tools: int | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> PrepareFunc:
    """A whole-list filter for ``toolset.prepared(...)``: one ``filter(tools, ctx)``
    call per step (for a Policy, one ``select(tools, ctx, message, focus)``:
    every stage, the budget included), then the first ``max_tools`` survivors
    in the toolset's order (None: no cut). The tool definitions come back as
    the same objects.

    Arguments as for :func:`filter_func`; ``max_tools`` is an int >= 0 or None
    (TypeError/ValueError otherwise). At run time it fails closed: a tool that
    cannot be read is dropped alone; a failing ctx, message or focus function,
    filter or policy drops every tool of the step.
    """
    return PrepareFunc(tool_filter, server_id=server_id, ctx=ctx, max_tools=max_tools,
                       message=message, focus=focus)


@functools.cache
def _hints_as_sent_toolset() -> Any:
    """A pydantic-ai ``WrapperToolset`` whose ``get_tools`` lists the wrapped
    toolset inside :func:`~toolfilter_fast.sdk_hints.hints_as_sent`."""
    # pydantic-ai, imported when the first such toolset is made: importing this
    # module imports no framework.
    from pydantic_ai.toolsets import WrapperToolset

    class HintsAsSentToolset(WrapperToolset):
        """The wrapped toolset, its MCP server's hints read as the server sent them."""

        async def get_tools(self, ctx: Any) -> Any:
            with hints_as_sent():
                return await super().get_tools(ctx)

    return HintsAsSentToolset


def filtered_toolset(
    toolset: Any,
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    max_tools: int | None = None,
    message: MessageFunc | None = None,
    focus: FocusFunc | None = None,
) -> Any:
    """``toolset.prepared(prepare_func(tool_filter, ...))``, with ``toolset``
    listed inside :func:`~toolfilter_fast.sdk_hints.hints_as_sent`: an MCP
    toolset's hints are judged as its server sent them (a hint that is no JSON
    boolean takes the MCP default), where ``prepare_func`` alone sees the MCP
    SDK's coerced ones. Arguments as for :func:`prepare_func`; TypeError at once
    for a wrong one, or for a ``toolset`` that is no pydantic-ai toolset (one
    with ``get_tools``). An ``MCPToolset`` keeps the list it read
    (``cache_tools``): wrap it before its first listing.
    """
    prepare = PrepareFunc(tool_filter, server_id=server_id, ctx=ctx, max_tools=max_tools,
                          message=message, focus=focus)
    if not callable(getattr(toolset, "get_tools", None)):
        raise TypeError("toolset must be a pydantic-ai toolset (with get_tools), got "
                        f"{type(toolset).__name__}")
    return _hints_as_sent_toolset()(toolset).prepared(prepare)
