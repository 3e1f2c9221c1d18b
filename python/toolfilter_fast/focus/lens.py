"""The focus lens: the tools a UI session's agent sees, cut to what has its attention."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from itertools import islice
from typing import Any

from .. import _core
from ..relevance import ToolIndex
from .common import (
    DEFAULT_DISCOVER_LIMIT,
    DEFAULT_MAX_TOOLS,
    MODES,
    check_discover,
    check_options,
    ranked_find,
    tool_fields,
    tool_name,
)
from .common import discover_tools_name as _discover_tools_name
from .common import discover_tools_spec as _discover_tools_spec

__all__ = ["FocusLens"]


def _find(tools: list[Any] | tuple[Any, ...], session_id: str, query: str) -> str:
    return _core.focus_discover_json(tools, tool_fields, session_id, query)


class FocusLens:
    """Attention-aware tool filtering for UI sessions (static methods only).

    Widget tools are named ``session_id.widget_id.action``: a tool belongs to
    the session when its first ``.``-segment *is* ``session_id``, and to a
    widget when its second *is* the widget id (``s.w``, with no action, is
    widget ``w``'s too). A global tool has no ``.``. Tools are MCP tool
    definitions (mappings with ``"name"``) or objects with ``.name``, and come
    back as the same objects.
    """

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
        """The tools to show, at most ``max_tools`` of them.

        * ``"all"``: the first ``max_tools`` tools as given (names unread, no dedup,
          no meta-tool).
        * ``"focused"``: the session's tools for ``focused_id``, the meta-tool
          (with a ``registry``), then the globals.
        * ``"hover"``: as ``"focused"`` with the ``hover_id`` widget's tools after
          the focused one's; with ``hover_id`` None or equal to ``focused_id`` it
          is ``"focused"``.

        Each part keeps input order; the first tool of each name is kept (the
        meta-tool too: a focused widget named ``discover_tools`` whose tool
        ``session.discover_tools`` is in the input pushes the generated one out).
        The cut comes last, so globals go first. Every option is checked in every
        mode: ValueError naming it. A tool without a ``str`` name is a TypeError
        naming its index (modes other than ``"all"``).
        """
        check_options(mode, session_id, focused_id, hover_id, max_tools, registry)
        if mode == "all":
            return list(islice(tools, min(max_tools, sys.maxsize)))
        assert session_id is not None  # check_options requires it here
        # A snapshot: the indices the core returns point into it even if reading
        # a tool's name runs code that changes the caller's list.
        snapshot = tuple(tools)
        if mode == "focused" or hover_id == focused_id:
            hover_id = None
        meta = None if registry is None else _discover_tools_spec(registry, session_id, _find)
        picks = _core.focus_select(
            snapshot, tool_name, session_id, focused_id, hover_id,
            None if meta is None else meta["name"], min(max_tools, len(snapshot) + 1),
        )
        return [meta if index < 0 else snapshot[index] for index in picks]

    @staticmethod
    def discover_tools_name(session_id: str) -> str:
        """``"<session_id>.discover_tools"``; ValueError for a bad ``session_id``."""
        return _discover_tools_name(session_id)

    @staticmethod
    def discover_tools_spec(registry: Any, session_id: str, rank: str | None = None,
                            limit: int = DEFAULT_DISCOVER_LIMIT) -> dict[str, Any]:
        """The session's ``discover_tools`` meta-tool: ``name``, ``description``,
        ``inputSchema`` and ``callback``.

        ``callback(arguments)`` reads ``registry.list_tools()`` at call time (a
        :class:`ToolRegistry`'s cached ``snapshot()``, the same tools) and
        returns MCP content, ``[{"type": "text", "text": <JSON>}]``, the JSON a
        list of ``{"name", "description"}`` (registry order) for the session's
        tools (names starting ``session_id.``) whose name or description
        contains ``arguments["query"]``, ignoring case per character; ``""``
        lists them all. A tool without a ``str`` name is skipped; a description
        that is not a ``str`` is ``null`` and not searched. Arguments that hold
        no string query give an MCP error result instead,
        ``{"content": [<text item>], "isError": True}``.

        ``rank="bm25"`` ranks instead (:class:`~toolfilter_fast.relevance.ToolIndex`
        over the session's tools' names, titles, descriptions and input
        parameters): the JSON lists the best ``limit`` tools that a word of
        the query is found in (stems, case folded, character pairs for
        scripts without spaces), best first; a query without words (empty,
        or only stop words and punctuation) lists the first ``limit``. The
        index is built when the registry changes, not per query. ``rank``
        None or ``"substring"`` is the search above; any other value, or a
        ``limit`` that is no int >= 0, is a ValueError.
        """
        if check_discover(rank, limit) == "bm25":
            return _discover_tools_spec(registry, session_id, ranked_find(ToolIndex, limit),
                                        limit=limit)
        return _discover_tools_spec(registry, session_id, _find)
