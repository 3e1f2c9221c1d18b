"""What the fast focus lens and its reference share.

The option checks, how a tool's name and description are read, and the
meta-tool's definition and MCP results. The rules themselves (which tools a
lens keeps, in which order; which tools a query finds) are written out
separately in ``lens`` (over the Rust core) and the reference's ``focus``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .registry import ToolRegistry

__all__ = [
    "DEFAULT_DISCOVER_LIMIT",
    "DEFAULT_MAX_TOOLS",
    "DISCOVER_RANKS",
    "MODES",
    "Find",
    "check_discover",
    "check_id",
    "check_options",
    "discover_tools_name",
    "discover_tools_spec",
    "found_json",
    "ranked_find",
    "tool_fields",
    "tool_name",
]

MODES = ("all", "focused", "hover")
DEFAULT_MAX_TOOLS = 15
#: How ``discover_tools`` finds tools: by substring (all matches, registry
#: order) or ranked (the best matches, best first).
DISCOVER_RANKS = ("substring", "bm25")
DEFAULT_DISCOVER_LIMIT = 20

#: ``find(tools, session_id, query)``: the JSON text of the tools found.
Find = Callable[[list[Any] | tuple[Any, ...], str, str], str]

_MISSING = object()


def check_id(option: str, value: object, *, required: bool = False) -> None:
    """A session or widget id is None (unless required) or a non-empty str without ``.``."""
    if value is None:
        if required:
            raise ValueError(f"{option} is required")
        return
    if not isinstance(value, str) or value == "" or "." in value:
        raise ValueError(f"{option} must be a non-empty str without '.', not {value!r}")


def _check_registry(registry: object) -> None:
    if not callable(getattr(registry, "list_tools", None)):
        raise ValueError(
            f"registry must have a list_tools() method, and {type(registry).__name__} has none"
        )


def check_options(
    mode: object, session_id: object, focused_id: object, hover_id: object,
    max_tools: object, registry: object,
) -> None:
    """Checks every option in every mode; ValueError naming the first bad one."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
    # bool is an int subclass, but max_tools=True is a mistake, not a count.
    if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 0:
        raise ValueError(f"max_tools must be an int >= 0, not {max_tools!r}")
    if session_id is None and mode != "all":
        raise ValueError(f"session_id is required in mode {mode!r}")
    check_id("session_id", session_id)
    check_id("focused_id", focused_id)
    check_id("hover_id", hover_id)
    if registry is not None:
        _check_registry(registry)


def tool_name(tool: Any, index: int) -> str:
    """The name of ``tools[index]``: ``tool["name"]`` for a mapping, else ``tool.name``."""
    if isinstance(tool, Mapping):
        name = tool.get("name", _MISSING)
    else:
        name = getattr(tool, "name", _MISSING)
    if name is _MISSING:
        raise TypeError(
            f"tools[{index}]: expected an MCP tool (a mapping with a 'name' or an object "
            f"with .name), got {type(tool).__name__}"
        )
    if not isinstance(name, str):
        raise TypeError(f"tools[{index}]: name must be str, not {type(name).__name__}")
    return name


def tool_fields(tool: Any) -> tuple[str | None, str | None]:
    """A registry tool's ``(name, description)``, each None unless a ``str``."""
    if isinstance(tool, Mapping):
        name, description = tool.get("name"), tool.get("description")
    else:
        name, description = getattr(tool, "name", None), getattr(tool, "description", None)
    return (
        name if isinstance(name, str) else None,
        description if isinstance(description, str) else None,
    )


def discover_tools_name(session_id: str) -> str:
    check_id("session_id", session_id, required=True)
    return f"{session_id}.discover_tools"


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _error(message: str) -> dict[str, Any]:
    return {"content": _text(message), "isError": True}


def found_json(found: Iterable[Any]) -> str:
    """The JSON list of ``{"name", "description"}`` of the ``found`` tools.

    Readable for the model (non-ASCII as is); a lone surrogate cannot travel as
    UTF-8, so a text that would hold one is escaped to ASCII throughout.
    """
    items = []
    for tool in found:
        name, description = tool_fields(tool)
        items.append({"name": name, "description": description})
    text = json.dumps(items, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(items)
    return text


_JSON_TYPES = {bool: "boolean", int: "number", float: "number", type(None): "null",
               list: "array", tuple: "array", dict: "object"}


def _query(arguments: object) -> str | dict[str, Any]:
    """The query string, or the error result for arguments that hold none."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return _error(f"arguments must be an object, not {type(arguments).__name__}")
    if "query" not in arguments:
        return _error("missing required argument 'query' (a string)")
    query = arguments["query"]
    if not isinstance(query, str):
        kind = _JSON_TYPES.get(type(query), type(query).__name__)
        return _error(f"argument 'query' must be a string, not {kind}")
    return query


def check_discover(rank: object, limit: object) -> str:
    """The discover search's ``rank`` (None means ``"substring"``) and ``limit``."""
    if rank is None:
        rank = "substring"
    if not isinstance(rank, str) or rank not in DISCOVER_RANKS:
        raise ValueError(f"rank must be None or one of {', '.join(map(repr, DISCOVER_RANKS))}, "
                         f"not {rank!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be an int >= 0, not {limit!r}")
    return rank


def _in_session(tool: Any, session_id: str) -> bool:
    name = tool_fields(tool)[0]
    if name is None:
        return False
    session, dot, _ = str.partition(name, ".")
    return bool(dot) and session == session_id


def ranked_find(index_cls: Callable[[list[Any]], Any], limit: int) -> Find:
    """A ranked ``find``: the session's tools indexed with ``index_cls`` (a
    ``ToolIndex`` class), the best ``limit`` that the query matches, best
    first. The index of the last tools searched is kept while they are the
    same object (a ``ToolRegistry``'s snapshot is, until the next change)."""
    lock = threading.Lock()
    last: list[tuple[Any, str, list[Any], Any]] = []

    def find(tools: list[Any] | tuple[Any, ...], session_id: str, query: str) -> str:
        with lock:
            hit = last[0] if last and last[0][0] is tools and last[0][1] == session_id else None
        if hit is None:
            own = [tool for tool in tools if _in_session(tool, session_id)]
            hit = (tools, session_id, own, index_cls(own))
            with lock:
                last[:] = [hit]
        picks = hit[3].rank(query, limit, matched_only=True)
        return found_json(hit[2][i] for i in picks)

    return find


def discover_tools_spec(registry: Any, session_id: str, find: Find, *,
                        limit: int | None = None) -> dict[str, Any]:
    """The meta-tool definition, its callback finding tools with ``find``
    (``limit``: a ranked find's, which the description then names)."""
    name = discover_tools_name(session_id)
    _check_registry(registry)

    def discover_tools(arguments: Mapping[str, Any] | None) -> Any:
        query = _query(arguments)
        if not isinstance(query, str):
            return query
        # The package's registry hands over its cached snapshot: what its
        # list_tools() copies, so a query costs no copy. A subclass that
        # overrides list_tools() is asked through it.
        if getattr(type(registry), "list_tools", None) is ToolRegistry.list_tools:
            tools: list[Any] | tuple[Any, ...] = registry.snapshot()
        else:
            tools = registry.list_tools()
            if type(tools) not in (list, tuple):
                tools = list(tools)
        return _text(find(tools, session_id, query))

    return {
        "name": name,
        "description": (
            f"Search this session's ({session_id}) tools by keyword, including those not "
            "shown now. Lists the name and description of each tool whose name or "
            "description contains the query, ignoring case; an empty query lists them all."
        ) if limit is None else (
            f"Search this session's ({session_id}) tools by keyword, including those not "
            f"shown now. Lists the name and description of the {limit} tools that best match "
            "the query's words, best first; a query without words lists the first ones."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Text to look for in tool names and descriptions.",
                },
            },
            "required": ["query"],
        },
        "callback": discover_tools,
    }
