"""What the smolagents and CrewAI adapters share: mcpadapt, the library both
frameworks load MCP tools through (``MCPAdapt(server, ToolAdapter)``).

A framework's tool keeps the MCP tool's name (sanitized) and description,
but not its annotations, so :class:`RecordingAdapter` wraps the framework's
own ``ToolAdapter`` and remembers, for each tool it makes, the MCP definition
it was made from: the patterns see the tool as the server lists it. Importing
this module imports mcpadapt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

try:
    # Typed (py.typed), but absent from the main venv, where mypy runs.
    from mcpadapt.core import (  # type: ignore[import-not-found,unused-ignore]
        MCPAdapt,
        ToolAdapter,
    )
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the smolagents and CrewAI adapters need mcpadapt: "
        "pip install 'toolfilter_fast[smolagents]' or 'toolfilter_fast[crewai]'"
    ) from err

from .._tool import Tool
from ..sdk_hints import hints_as_sent
from ._common import BoundFilter, CtxFunc, FocusFunc, MessageFunc, focus_from, itself, no_turn
from ._common import mcp_tool as tool_from_mcp

__all__ = ["MCPAdaptFilter", "RecordingAdapter", "filtered_tools"]


class RecordingAdapter(ToolAdapter):  # type: ignore[misc,unused-ignore]
    """A ``ToolAdapter`` that makes each tool with ``inner`` and remembers the
    MCP definition it was made from."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._made: dict[int, tuple[Any, Any]] = {}

    def _record(self, tool: Any, definition: Any) -> Any:
        self._made[id(tool)] = (tool, definition)
        return tool

    def adapt(self, func: Callable[..., Any], mcp_tool: Any) -> Any:
        return self._record(self.inner.adapt(func, mcp_tool), mcp_tool)

    def async_adapt(self, afunc: Callable[..., Any], mcp_tool: Any) -> Any:
        return self._record(self.inner.async_adapt(afunc, mcp_tool), mcp_tool)

    def definition(self, tool: Any) -> Any:
        """The MCP definition ``tool`` was made from; KeyError for another tool."""
        made, definition = self._made[id(tool)]
        if made is not tool:
            raise KeyError(f"{tool!r} was not made by this adapter")
        return definition


class MCPAdaptFilter(BoundFilter):
    """A filter or a Policy over the tools mcpadapt made from one server,
    with the turn read from the caller's ``context``."""

    __slots__ = ("_where",)

    DEFAULTS = (itself, no_turn, focus_from)

    def __init__(self, tool_filter: Any, *, server_id: str, where: str,
                 ctx: CtxFunc | None = None, message: MessageFunc | None = None,
                 focus: FocusFunc | None = None) -> None:
        super().__init__(tool_filter, server_id=server_id, ctx=ctx, message=message, focus=focus)
        self._where = where

    def keep_made(self, tools: list[Any], recorder: RecordingAdapter, context: Any) -> list[Any]:
        """The tools the rules keep, judged by their MCP definitions."""
        def to_tool(tool: Any) -> Tool:
            return tool_from_mcp(self._server_id, recorder.definition(tool))

        return self.keep(self._server_id, tools, to_tool, context, where=self._where)


@contextmanager
def filtered_tools(
    server_parameters: Any,
    inner: Any,
    rules: MCPAdaptFilter,
    context: Any,
    **mcpadapt_options: Any,
) -> Iterator[list[Any]]:
    """``MCPAdapt(server_parameters, inner)`` as a context manager whose value
    is the list of the framework's tools that ``rules`` keep."""
    if isinstance(server_parameters, list):
        raise TypeError("one server at a time: server_parameters must be one server's "
                        "parameters (StdioServerParameters or a dict), not a list")
    recorder = RecordingAdapter(inner)
    # MCPAdapt makes the tools from a listing it asks for from this thread (its
    # tools() lists again on its loop), so the block reaches it: the tools are
    # judged by their hints as the server sent them.
    with hints_as_sent(), MCPAdapt(server_parameters, recorder, **mcpadapt_options) as tools:
        yield rules.keep_made(list(tools), recorder, context)
