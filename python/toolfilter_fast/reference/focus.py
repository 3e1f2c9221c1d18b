"""The focus lens spelled out in plain Python: the oracle and the benchmark baseline.

Shares the option checks, tool reading and meta-tool format (``focus/common.py``)
and the registry with the fast path; the selection rules and the discover
search are written again here, the obvious way. Never calls the Rust core.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..focus.common import (
    DEFAULT_DISCOVER_LIMIT,
    DEFAULT_MAX_TOOLS,
    MODES,
    Find,
    check_discover,
    check_options,
    found_json,
    tool_fields,
    tool_name,
)
from ..focus.common import discover_tools_name as _discover_tools_name
from ..focus.common import discover_tools_spec as _discover_tools_spec
from ..focus.registry import ToolRegistry
from ..relevance.options import tool_text
from .relevance import SearchIndex
from .text import text_of

__all__ = ["FocusLens", "ToolRegistry"]


def _lower(s: str) -> str:
    """Each character on its own to its Unicode lower-case (no final-sigma rule)."""
    return "".join(c.lower() for c in text_of(s))


def _session_of(name: str) -> str | None:
    """The first segment of a widget tool's name; None for a global."""
    return name.split(".")[0] if "." in name else None


def _widget_of(name: str) -> str | None:
    segments = name.split(".")
    return segments[1] if len(segments) >= 2 else None


def _find(tools: list[Any] | tuple[Any, ...], session_id: str, query: str) -> str:
    needle = _lower(query)
    found = []
    for tool in tools:
        name, description = tool_fields(tool)
        if name is None or _session_of(text_of(name)) != session_id:
            continue
        if needle in _lower(name) or (description is not None and needle in _lower(description)):
            found.append(tool)
    return found_json(found)


def _ranked(limit: int) -> Find:
    """The ranked search, plainly: the session's tools indexed at each query."""

    def find(tools: list[Any] | tuple[Any, ...], session_id: str, query: str) -> str:
        own = []
        for tool in tools:
            name, _ = tool_fields(tool)
            if name is not None and _session_of(text_of(name)) == session_id:
                own.append(tool)
        index = SearchIndex([tool_text(tool) for tool in own])
        return found_json(own[i] for i in index.rank(query, limit, matched_only=True))

    return find


class FocusLens:
    """Reference FocusLens: same API and results as ``toolfilter_fast.FocusLens``."""

    __slots__ = ()

    MODES = MODES

    @staticmethod
    def filter(
        tools: Iterable[Any],
        mode: str = "all",
        *,
        session_id: str | None = None,
        focused_id: str | None = None,
        hover_id: str | None = None,
        max_tools: int = DEFAULT_MAX_TOOLS,
        registry: Any = None,
    ) -> list[Any]:
        check_options(mode, session_id, focused_id, hover_id, max_tools, registry)
        tools = list(tools)
        if mode == "all":
            return tools[:max_tools]
        named = [(text_of(tool_name(tool, index)), tool) for index, tool in enumerate(tools)]
        widgets = [focused_id]
        if mode == "hover" and hover_id != focused_id:
            widgets.append(hover_id)
        ordered: list[tuple[str, Any]] = []
        for widget in widgets:
            if widget is not None:
                ordered += [
                    (name, tool) for name, tool in named
                    if _session_of(name) == session_id and _widget_of(name) == widget
                ]
        if registry is not None:
            meta = FocusLens.discover_tools_spec(registry, str(session_id))
            ordered.append((meta["name"], meta))
        ordered += [(name, tool) for name, tool in named if "." not in name]
        kept, seen = [], set()
        for name, tool in ordered:
            if name not in seen:
                seen.add(name)
                kept.append(tool)
        return kept[:max_tools]

    @staticmethod
    def discover_tools_name(session_id: str) -> str:
        return _discover_tools_name(session_id)

    @staticmethod
    def discover_tools_spec(registry: Any, session_id: str, rank: str | None = None,
                            limit: int = DEFAULT_DISCOVER_LIMIT) -> dict[str, Any]:
        if check_discover(rank, limit) == "bm25":
            return _discover_tools_spec(registry, session_id, _ranked(limit), limit=limit)
        return _discover_tools_spec(registry, session_id, _find)
