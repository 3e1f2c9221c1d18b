"""What the framework adapters share: argument checks, tool conversion, fail-closed calls.

Nothing here imports a framework. Framework objects are read by attribute, so
that one code path serves every generation of the MCP SDK (``inputSchema`` in
1.x, ``input_schema`` in 2.x) and every framework's own tool record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from .._tool import Tool, as_mapping
from ..policy.model import check_max_tools as check_count

__all__ = [
    "BoundFilter",
    "CtxFunc",
    "check_ctx",
    "check_filter",
    "check_max_tools",
    "check_server_id",
    "keep_visible",
    "logger",
    "mapping_or_none",
    "mcp_tool",
    "tool_label",
    "visible_fail_closed",
]

#: Warnings about tools hidden because something raised inside an adapter.
logger = logging.getLogger("toolfilter_fast.adapters")

#: A function from the framework's own context object to the filter's ``ctx``.
CtxFunc = Callable[[Any], Any]

T = TypeVar("T")


def check_filter(tool_filter: Any) -> Any:
    """The filter, if it has ``visible(tool, ctx)``, ``filter(tools, ctx)`` and
    ``static_visible(tool)``; else TypeError.

    Loosely typed on purpose: a :class:`~toolfilter_fast.ToolFilter`, the
    ``reference`` one, or any object with those three methods works.
    """
    for method in ("visible", "filter", "static_visible"):
        if not callable(getattr(tool_filter, method, None)):
            raise TypeError(
                "tool_filter must be a ToolFilter (an object with visible(tool, ctx), "
                f"filter(tools, ctx) and static_visible(tool)), got {type(tool_filter).__name__}"
            )
    return tool_filter


def check_server_id(server_id: Any, expected: str = "str") -> str:
    """``server_id`` if it is a ``str``; else TypeError."""
    if not isinstance(server_id, str):
        raise TypeError(f"server_id must be {expected}, not {type(server_id).__name__}")
    return server_id


def check_ctx(ctx: CtxFunc | None) -> CtxFunc | None:
    """``ctx`` if it is None or callable; else TypeError."""
    if ctx is not None and not callable(ctx):
        raise TypeError(
            "ctx must be a function from the framework's context to the filter's ctx, "
            f"not {type(ctx).__name__}"
        )
    return ctx


def check_max_tools(max_tools: Any) -> int | None:
    """``max_tools`` if it is None or an int >= 0 (not a bool); else TypeError/ValueError."""
    return check_count(max_tools, "max_tools")


class BoundFilter:
    """A filter bound to a server id and a ctx function: the state the adapters hold.

    Arguments are checked here, at construction (TypeError naming the argument);
    ``default_ctx`` stands in when ``ctx`` is None.
    """

    __slots__ = ("_ctx", "_filter", "_server_id")

    def __init__(self, tool_filter: Any, server_id: Any, ctx: Any, default_ctx: CtxFunc) -> None:
        self._filter = check_filter(tool_filter)
        self._server_id: str = check_server_id(server_id)
        self._ctx: CtxFunc = check_ctx(ctx) or default_ctx

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._filter!r}, server_id={self._server_id!r})"


#: A tool's annotations (or schema) as a mapping with camelCase keys.
mapping_or_none = as_mapping


def mcp_tool(server_id: str, tool: Any) -> Tool:
    """A :class:`Tool` from an MCP tool definition of either SDK generation."""
    return Tool.from_mcp(server_id, tool)


def tool_label(tool: Any) -> str:
    """A tool's name for a log line, whatever the object is (never raises)."""
    try:
        name = tool["name"] if isinstance(tool, Mapping) else tool.name
    except Exception:
        return f"<{type(tool).__name__}>"
    return name if isinstance(name, str) else repr(name)


def _warn_hidden(what: str, server_id: Any, where: str) -> None:
    logger.warning(
        "toolfilter_fast %s adapter: %s of server %r hidden because an error was raised",
        where, what, server_id, exc_info=True,
    )


def visible_fail_closed(
    tool_filter: Any,
    server_id: Any,
    tool: Any,
    to_tool: Callable[[Any], Tool],
    ctx: Callable[[], Any],
    *,
    where: str,
) -> bool:
    """Whether one framework tool is visible; False if anything inside raises.

    ``ctx`` is called here, inside the guard, so a failing ctx function hides
    the tool instead of reaching the framework. Only a real ``True`` from the
    filter shows the tool. BaseExceptions that are not Exceptions (cancellation,
    KeyboardInterrupt, SystemExit) propagate.
    """
    try:
        return tool_filter.visible(to_tool(tool), ctx()) is True
    except Exception:
        _warn_hidden(f"tool {tool_label(tool)!r}", server_id, where)
        return False


def keep_visible(
    tool_filter: Any,
    server_id: Any,
    tools: Iterable[T],
    to_tool: Callable[[T], Tool],
    ctx: Callable[[], Any] | None,
    *,
    where: str,
) -> list[T]:
    """The framework tools that the filter keeps, in input order, decided in one
    ``filter(tools, ctx)`` call (or by ``static_visible`` alone when ``ctx`` is None).

    Fails closed at the smallest scope that failed: a tool that cannot be
    converted is hidden alone; a failing ctx function, or a filter call that
    raises, hides the whole list. The filter must return the objects it was
    given (``ToolFilter`` and the reference do): a tool it returns a copy of
    counts as dropped.
    """
    pairs: list[tuple[T, Tool]] = []
    for tool in tools:
        try:
            pairs.append((tool, to_tool(tool)))
        except Exception:
            _warn_hidden(f"tool {tool_label(tool)!r}", server_id, where)
    if not pairs:
        return []
    converted = [converted for _, converted in pairs]
    try:
        if ctx is None:
            kept = [tool for tool in converted if tool_filter.static_visible(tool) is True]
        else:
            kept = tool_filter.filter(converted, ctx())
        kept_ids = {id(tool) for tool in kept}
    except Exception:
        _warn_hidden(f"every tool ({len(pairs)})", server_id, where)
        return []
    return [tool for tool, converted_tool in pairs if id(converted_tool) in kept_ids]
