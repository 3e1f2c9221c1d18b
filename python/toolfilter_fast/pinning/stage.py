"""The Policy's ``pinning`` stage: a tool is kept when its definition is
the one its lock pinned; a tool the lock does not know (``on_new``) or whose
definition changed since (``on_changed``) is hidden, or shown, as the policy
says (both hidden unless it says otherwise). A definition that has no
canonical JSON is hidden whatever the options: it cannot be compared.

A tool this stage hides is logged once (a warning of the
``toolfilter_fast.pinning`` logger, naming the fields that changed), the
first time a selection meets it, per stage object and per definition.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .digest import PINNED_FIELDS, DigestError, definition_of, digest_of
from .lock import ToolLock, _exact, changed_fields

__all__ = ["ACTIONS", "Pinning", "logger"]

logger = logging.getLogger("toolfilter_fast.pinning")

#: What ``on_new`` and ``on_changed`` may say.
ACTIONS = ("hide", "show")
#: How many tools' verdicts are kept between selections (the same objects
#: judged again cost a lookup); past it the memory starts again.
_CACHE_SIZE = 1 << 16

Action = Literal["hide", "show"]


def _check_action(value: Any, what: str) -> Action:
    if value not in ACTIONS or not isinstance(value, str):
        raise ValueError(f"pinning {what} must be 'hide' or 'show', not {value!r}")
    return "hide" if value == "hide" else "show"


class Pinning:
    """The pinning stage's options: the lock (a :class:`ToolLock`, or the path
    of a lock file), and what happens to a tool the lock does not know
    (``on_new``) and to one whose definition is not the pinned one
    (``on_changed``): ``"hide"`` (the default of both) or ``"show"``.
    ``fields`` (default: all of :data:`~toolfilter_fast.pinning.digest.PINNED_FIELDS`)
    are the pinned fields compared, by their wire names: where the tool
    records lack one (a framework that gives no ``outputSchema``), leave it
    out, or every tool would look changed. Immutable and thread-safe."""

    __slots__ = ("_cache", "_lock", "_logged", "fields", "lock", "on_changed", "on_new")

    lock: ToolLock
    on_new: Action
    on_changed: Action
    fields: tuple[str, ...]

    def __init__(self, lock: ToolLock | str | os.PathLike[str], *, on_new: str = "hide",
                 on_changed: str = "hide", fields: Sequence[str] | None = None) -> None:
        if isinstance(lock, (str, os.PathLike)):
            lock = ToolLock.read(lock)
        if not isinstance(lock, ToolLock):
            raise TypeError(f"pinning lock must be a ToolLock or a path, not "
                            f"{type(lock).__name__}")
        self.lock = lock
        self.on_new = _check_action(on_new, "on_new")
        self.on_changed = _check_action(on_changed, "on_changed")
        self.fields = _check_fields(fields)
        self._lock = threading.Lock()
        self._cache: dict[int, tuple[Any, str | None]] = {}
        self._logged: set[tuple[str, str, str]] = set()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.lock, self.on_new, self.on_changed, self.fields))

    def __repr__(self) -> str:
        return (f"Pinning({self.lock!r}, on_new={self.on_new!r}, "
                f"on_changed={self.on_changed!r}, fields={list(self.fields)!r})")

    def verdict(self, tool: Any) -> tuple[str, tuple[str, ...]]:
        """What the lock says of ``tool``: ``("pinned", ())``, ``("new", ())``,
        ``("changed", fields)`` or ``("unreadable", ())``."""
        server, name = _exact(tool, "server_id"), _exact(tool, "name")
        definition = self._chosen(definition_of(tool))
        pinned = self.lock.get(server, name)
        try:
            digest = digest_of(definition)
        except DigestError:
            return "unreadable", ()
        if pinned is None:
            return "new", ()
        if len(self.fields) == len(PINNED_FIELDS):
            if pinned.digest == digest:
                return "pinned", ()
        elif digest_of(self._chosen(pinned.definition)) == digest:
            return "pinned", ()
        return "changed", changed_fields(self._chosen(pinned.definition), definition)

    def _chosen(self, definition: Mapping[str, Any]) -> Mapping[str, Any]:
        """The definition with the fields not compared left as None."""
        if len(self.fields) == len(PINNED_FIELDS):
            return definition
        return {wire: definition.get(wire) if wire in self.fields else None
                for wire, _ in PINNED_FIELDS}

    def reason(self, tool: Any) -> str | None:
        """Why the stage hides ``tool`` (None: it keeps it)."""
        state, fields = self.verdict(tool)
        where = f"the lock {self.lock.path}" if self.lock.path else "the lock"
        if state == "unreadable":
            return "hidden: its definition has no canonical JSON, so it cannot be compared " \
                   f"with {where}"
        if state == "new" and self.on_new == "hide":
            return f"hidden: not pinned in {where} (a new tool; on_new = 'hide')"
        if state == "changed" and self.on_changed == "hide":
            return (f"hidden: changed since it was pinned in {where} (changed: "
                    f"{', '.join(fields)}; on_changed = 'hide'): review it with "
                    "toolfilter pin --diff")
        return None

    def hidden(self, tools: Sequence[Any]) -> list[str | None]:
        """For each tool, why the stage hides it (None: kept); each hidden
        tool logged once."""
        out: list[str | None] = []
        with self._lock:
            cache = self._cache
            if len(cache) > max(_CACHE_SIZE, 2 * len(tools)):
                cache.clear()
        for tool in tools:
            # The tool itself is kept with its verdict, so its id is not reused.
            known = cache.get(id(tool))
            if known is not None and known[0] is tool:
                out.append(known[1])
                continue
            why = self.reason(tool)
            cache[id(tool)] = (tool, why)
            out.append(why)
            if why is not None:
                self._log(tool, why)
        return out

    def _log(self, tool: Any, why: str) -> None:
        try:
            digest = digest_of(definition_of(tool))
        except DigestError:
            digest = "-"
        key = (_exact(tool, "server_id"), _exact(tool, "name"), digest)
        with self._lock:
            if key in self._logged:
                return
            self._logged.add(key)
        logger.warning("tool %s/%s %s", key[0], key[1], why)


def _check_fields(fields: Any) -> tuple[str, ...]:
    names = [wire for wire, _ in PINNED_FIELDS]
    if fields is None:
        return tuple(names)
    if isinstance(fields, str) or not isinstance(fields, Sequence):
        raise TypeError(f"pinning fields must be a list of field names, not "
                        f"{type(fields).__name__}")
    for field in fields:
        if not isinstance(field, str) or field not in names:
            raise ValueError(f"pinning fields: {field!r} is not a pinned field (they are "
                             f"{', '.join(names)})")
    if "name" not in fields:
        raise ValueError("pinning fields must hold 'name' (a tool is pinned by its name)")
    return tuple(name for name in names if name in fields)


def _rebuild(lock: ToolLock, on_new: str, on_changed: str,
             fields: Sequence[str] | None = None) -> Pinning:
    return Pinning(lock, on_new=on_new, on_changed=on_changed, fields=fields)
