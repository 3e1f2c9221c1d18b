"""pydantic-ai: a ToolFilter for ``toolset.filtered(...)`` and ``toolset.prepared(...)``.

::

    from pydantic_ai.mcp import MCPToolset
    from toolfilter_fast import ToolFilter
    from toolfilter_fast.adapters.pydantic_ai import filter_func, prepare_func

    rules = ToolFilter.compile(exclude=["*/delete_*"])
    server = MCPToolset("http://localhost:8000/mcp")
    toolset = server.filtered(filter_func(rules, server_id="github"))
    # or one call per step over the whole list, cut to 20 tools:
    toolset = server.prepared(prepare_func(rules, server_id="github", max_tools=20))

A toolset does not know which MCP server it stands for, so ``server_id`` is
given. The names judged are the ones the wrapped toolset lists: apply
``filtered``/``prepared`` before ``prefixed``/``renamed`` to match the server's
own names. This module imports nothing from pydantic-ai.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._tool import Tool
from ._common import (
    BoundFilter,
    CtxFunc,
    check_max_tools,
    keep_visible,
    mapping_or_none,
    visible_fail_closed,
)

__all__ = ["FilterFunc", "PrepareFunc", "filter_func", "prepare_func"]


def _deps(run_context: Any) -> Any:
    return run_context.deps


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


class FilterFunc(BoundFilter):
    """A callable ``(ctx: RunContext, tool_def: ToolDefinition) -> bool`` for
    ``toolset.filtered(...)``. Build it with :func:`filter_func`."""

    __slots__ = ()

    def __init__(self, tool_filter: Any, *, server_id: str, ctx: CtxFunc | None = None) -> None:
        super().__init__(tool_filter, server_id, ctx, _deps)

    def __call__(self, run_context: Any, tool_def: Any) -> bool:
        server_id = self._server_id
        return visible_fail_closed(
            self._filter, server_id, tool_def,
            lambda definition: _tool_def_to_tool(server_id, definition),
            lambda: self._ctx(run_context),
            where="pydantic-ai",
        )


class PrepareFunc(BoundFilter):
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
    ) -> None:
        super().__init__(tool_filter, server_id, ctx, _deps)
        self._max_tools = check_max_tools(max_tools)

    def __repr__(self) -> str:
        return (
            f"PrepareFunc({self._filter!r}, server_id={self._server_id!r}, "
            f"max_tools={self._max_tools!r})"
        )

    def __call__(self, run_context: Any, tool_defs: list[Any]) -> list[Any]:
        server_id = self._server_id
        kept = keep_visible(
            self._filter, server_id, tool_defs,
            lambda definition: _tool_def_to_tool(server_id, definition),
            lambda: self._ctx(run_context),
            where="pydantic-ai",
        )
        if self._max_tools is not None:
            del kept[self._max_tools:]
        return kept


def filter_func(tool_filter: Any, *, server_id: str, ctx: CtxFunc | None = None) -> FilterFunc:
    """A per-tool filter for ``toolset.filtered(...)``.

    * ``tool_filter``: a :class:`~toolfilter_fast.ToolFilter` (or any object with
      ``visible``, ``filter`` and ``static_visible``).
    * ``server_id``: the id the patterns see for every tool of this toolset.
    * ``ctx``: a function from pydantic-ai's ``RunContext`` to the filter's
      ``ctx``; default ``run_context.deps``.

    TypeError at once for a wrong argument; at run time it fails closed (an
    error hides that tool).
    """
    return FilterFunc(tool_filter, server_id=server_id, ctx=ctx)


def prepare_func(
    tool_filter: Any,
    *,
    server_id: str,
    ctx: CtxFunc | None = None,
    max_tools: int | None = None,
) -> PrepareFunc:
    """A whole-list filter for ``toolset.prepared(...)``: one ``filter(tools, ctx)``
    call per step, then the first ``max_tools`` survivors in the toolset's order
    (None: no cut). The tool definitions come back as the same objects.

    Arguments as for :func:`filter_func`; ``max_tools`` is an int >= 0 or None
    (TypeError/ValueError otherwise). At run time it fails closed: a tool that
    cannot be read is dropped alone; a failing ctx function or filter drops
    every tool of the step.
    """
    return PrepareFunc(tool_filter, server_id=server_id, ctx=ctx, max_tools=max_tools)
