"""A thread-safe in-memory registry of MCP tool definitions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["ToolRegistry"]


def _registered_name(tool: Any) -> str:
    name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
    if name is None:
        raise TypeError(
            "expected an MCP tool (a mapping with a 'name' or an object with .name), "
            f"got {type(tool).__name__}"
        )
    if not isinstance(name, str):
        raise TypeError(f"a tool's name must be str, not {type(name).__name__}")
    return name


def _own_callback(tool: Any) -> Any:
    if isinstance(tool, Mapping):
        return tool.get("callback")
    return getattr(tool, "callback", None)


class ToolRegistry:
    """Tool definitions by name, in registration order; what ``discover_tools`` searches.

    A tool is an MCP tool definition (a mapping with ``"name"``, usually
    ``"description"`` and ``"inputSchema"``) or an object with ``.name``; it is
    stored as given. Registering a name again replaces that tool *in place*: it
    keeps the position of its first registration, so a UI that re-derives its
    tools on every render keeps a stable order. :meth:`call` runs the tool's
    callback: the one given to :meth:`register`, else the tool's own
    ``"callback"`` entry (or ``.callback`` attribute), as the meta-tool from
    ``FocusLens.discover_tools_spec`` carries it.

    Thread-safe: every method takes one lock; :meth:`list_tools` returns a new
    list and :meth:`snapshot` an immutable tuple, cached until the next change
    (what ``discover_tools`` reads, so that a query costs no copy). Callbacks run
    outside the lock, so a callback may use the registry.
    """

    __slots__ = ("_callbacks", "_lock", "_snapshot", "_tools")

    def __init__(self, tools: Iterable[Any] = ()) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, Any] = {}
        self._callbacks: dict[str, Callable[..., Any]] = {}
        self._snapshot: tuple[Any, ...] | None = None
        self.register_all(tools)

    def register(self, tool: Any, callback: Callable[..., Any] | None = None) -> None:
        """Adds ``tool``, or replaces the tool of the same name in place.

        Raises TypeError for a tool without a ``str`` name or a ``callback``
        that is not callable.
        """
        name = _registered_name(tool)
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        with self._lock:
            self._tools[name] = tool
            self._snapshot = None
            if callback is None:
                self._callbacks.pop(name, None)
            else:
                self._callbacks[name] = callback

    def register_all(self, tools: Iterable[Any]) -> None:
        """Registers each tool in turn, under one lock; checks them all first."""
        checked = [(_registered_name(tool), tool) for tool in tools]
        with self._lock:
            self._snapshot = None
            for name, tool in checked:
                self._tools[name] = tool
                self._callbacks.pop(name, None)

    def unregister(self, name: str) -> bool:
        """Removes the tool named ``name``; False when there was none."""
        with self._lock:
            self._callbacks.pop(name, None)
            if self._tools.pop(name, None) is None:
                return False
            self._snapshot = None
            return True

    def get(self, name: str) -> Any | None:
        """The tool named ``name``, or None."""
        with self._lock:
            return self._tools.get(name)

    def list_tools(self) -> list[Any]:
        """Every tool, in registration order (a new list each call)."""
        return list(self.snapshot())

    def snapshot(self) -> tuple[Any, ...]:
        """Every tool, in registration order, as a tuple shared until the next change."""
        with self._lock:
            if self._snapshot is None:
                self._snapshot = tuple(self._tools.values())
            return self._snapshot

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Runs the callback of the tool named ``name`` with ``arguments``
        (``{}`` when None) and returns what it returns.

        Raises KeyError for an unknown name and TypeError for a tool without a
        callable callback.
        """
        with self._lock:
            if name not in self._tools:
                raise KeyError(f"no tool named {name!r}")
            tool = self._tools[name]
            callback = self._callbacks.get(name)
        if callback is None:
            callback = _own_callback(tool)
        if not callable(callback):
            raise TypeError(f"tool {name!r} has no callable callback")
        return callback({} if arguments is None else arguments)

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __repr__(self) -> str:
        return f"<ToolRegistry of {len(self)} tools>"
