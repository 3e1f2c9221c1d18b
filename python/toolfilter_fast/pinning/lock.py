"""The lock file: the pinned definition of every tool of every server, as
``toolfilter pin`` writes it and the ``[pinning]`` stage reads it.

Version 1 of the format is a JSON object::

    {
      "lock_version": 1,
      "digest": "sha256 of canonical JSON",
      "tools": [
        {"server": "github", "name": "create_issue",
         "digest": "sha256:3f0c...",
         "definition": {"name": "create_issue", "description": "...",
                        "inputSchema": {...}, "outputSchema": null,
                        "annotations": {...}}}
      ]
    }

``tools`` is sorted by server, then name (code point order), one entry per
``(server, name)``. ``definition`` holds the five pinned fields
(:data:`~toolfilter_fast.pinning.digest.PINNED_FIELDS`) as the server listed
them, so that ``toolfilter pin --diff`` can show what changed; ``digest`` is
their digest (:func:`~toolfilter_fast.pinning.digest.digest_of`), checked
when the file is read: an entry whose digest is not its definition's (an
edit by hand, a truncated file) is refused, as is any unknown key, an unknown
``lock_version`` or a second entry of one tool. A reader of version 1 never
guesses at a later version: it refuses it, naming the version.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .digest import PINNED_FIELDS, DigestError, canonical, definition_of, digest_of

__all__ = ["LOCK_VERSION", "Change", "LockError", "PinnedTool", "ToolLock", "diff", "render"]

#: The version of the lock format this package writes and reads.
LOCK_VERSION = 1
_ENTRY_KEYS = ("server", "name", "digest", "definition")
_TOP_KEYS = ("lock_version", "digest", "tools")
_DIGEST_NOTE = "sha256 of canonical JSON"


class LockError(ValueError):
    """A lock file that cannot be read as a version-1 lock: the message names
    the file and the place (``tools.lock: tools[3].digest: ...``)."""


@dataclass(frozen=True)
class PinnedTool:
    """One tool as it was pinned: its server, name, digest and definition."""

    server: str
    name: str
    digest: str
    definition: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "name": self.name, "digest": self.digest,
                "definition": dict(self.definition)}


@dataclass(frozen=True)
class Change:
    """A difference between the lock and the tools listed now: ``kind`` is
    ``"new"`` (listed, not pinned), ``"changed"`` (its digest differs;
    ``fields`` says which of the pinned fields) or ``"removed"`` (pinned, no
    longer listed); ``pinned`` and ``listed`` are the two definitions (None
    where there is none)."""

    kind: str
    server: str
    name: str
    fields: tuple[str, ...] = ()
    pinned: Mapping[str, Any] | None = None
    listed: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "server": self.server, "name": self.name,
                "fields": list(self.fields), "pinned": self.pinned, "listed": self.listed}


def changed_fields(pinned: Mapping[str, Any], listed: Mapping[str, Any]) -> tuple[str, ...]:
    """The pinned fields whose canonical value differs between two definitions."""
    out = []
    for wire, _ in PINNED_FIELDS:
        one = {key: (pinned.get(wire) if key == wire else None) for key, _ in PINNED_FIELDS}
        two = {key: (listed.get(wire) if key == wire else None) for key, _ in PINNED_FIELDS}
        try:
            differs = digest_of(one) != digest_of(two)
        except DigestError:
            differs = True
        if differs:
            out.append(wire)
    return tuple(out)


class ToolLock:
    """The pinned tools, by ``(server, name)``. Immutable.

    :meth:`from_tools` pins a list of tools (:class:`~toolfilter_fast.Tool`
    objects, or objects with ``server_id``, ``name`` and the pinned fields);
    :meth:`read` and :meth:`loads` read a lock file, :meth:`dumps` writes one.
    """

    __slots__ = ("_by_key", "path")

    def __init__(self, entries: Iterable[PinnedTool] = (), *, path: str | None = None) -> None:
        by_key: dict[tuple[str, str], PinnedTool] = {}
        for entry in entries:
            key = (entry.server, entry.name)
            if key in by_key:
                raise LockError(f"{path or 'lock'}: tool {entry.server}/{entry.name} is "
                                "pinned twice")
            by_key[key] = entry
        self._by_key = dict(sorted(by_key.items()))
        self.path = path

    @classmethod
    def from_tools(cls, tools: Iterable[Any]) -> ToolLock:
        """Pins each tool: a DigestError (a ValueError) names a definition that
        has no canonical JSON, and a LockError a tool listed twice."""
        entries = []
        for tool in tools:
            definition = definition_of(tool)
            try:
                digest = digest_of(definition)
            except DigestError as err:
                raise DigestError(f"{_exact(tool, 'server_id')}/{_exact(tool, 'name')}: "
                                  f"{err}") from None
            entries.append(PinnedTool(_exact(tool, "server_id"), _exact(tool, "name"), digest,
                                      json.loads(canonical(definition))))
        return cls(entries)

    def get(self, server: str, name: str) -> PinnedTool | None:
        return self._by_key.get((server, name))

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[PinnedTool]:
        return iter(self._by_key.values())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolLock) and self._by_key == other._by_key

    def __hash__(self) -> int:
        return hash(tuple(entry.digest for entry in self))

    def __repr__(self) -> str:
        where = "" if self.path is None else f", path={self.path!r}"
        return f"ToolLock({len(self)} tools{where})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (list(self), self.path))

    @property
    def servers(self) -> list[str]:
        """The servers the lock pins tools of, in order."""
        return sorted({server for server, _ in self._by_key})

    # --- the file ------------------------------------------------------------------

    def dumps(self) -> str:
        """The lock file's text (version :data:`LOCK_VERSION`, sorted, one
        final newline)."""
        doc = {"lock_version": LOCK_VERSION, "digest": _DIGEST_NOTE,
               "tools": [entry.to_dict() for entry in self]}
        return json.dumps(doc, ensure_ascii=True, indent=2, sort_keys=False) + "\n"

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ToolLock:
        """Reads and checks a lock file (a LockError naming what is wrong)."""
        name = os.fspath(path)
        try:
            text = Path(name).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise LockError(f"{name}: no such lock file (write one with toolfilter pin "
                            "--servers SERVERS.json > LOCK)") from None
        except (OSError, UnicodeDecodeError) as err:
            raise LockError(f"{name}: cannot read ({err})") from None
        return cls.loads(text, path=name)

    @classmethod
    def loads(cls, text: str, *, path: str | None = None) -> ToolLock:
        """Reads a lock file's text (``path`` only names it in errors)."""
        where = path or "lock"
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise LockError(f"{where}: invalid JSON: {err.msg} (line {err.lineno}, column "
                            f"{err.colno})") from None
        except RecursionError:
            raise LockError(f"{where}: nested too deeply") from None
        if not isinstance(doc, dict):
            raise LockError(f"{where}: expected a JSON object at the top")
        unknown = sorted(set(doc) - set(_TOP_KEYS))
        if unknown:
            raise LockError(f"{where}: unknown key {unknown[0]!r} (the keys are "
                            f"{', '.join(map(repr, _TOP_KEYS))})")
        version = doc.get("lock_version")
        if version != LOCK_VERSION or isinstance(version, bool):
            raise LockError(f"{where}: lock_version {version!r} is not one this version "
                            f"reads ({LOCK_VERSION}); write the lock again with toolfilter pin")
        tools = doc.get("tools")
        if not isinstance(tools, list):
            raise LockError(f"{where}: tools: expected an array")
        return cls([_entry(where, i, item) for i, item in enumerate(tools)], path=path)


def _exact(tool: Any, field: str) -> str:
    """A tool's ``server_id`` or ``name`` as an exact str (a subclass's
    ``__eq__`` and ``__hash__`` never choose an entry)."""
    value = getattr(tool, field)
    if not isinstance(value, str):
        raise TypeError(f"{field} must be str, not {type(value).__name__}")
    return str.__str__(value)


def _rebuild(entries: list[PinnedTool], path: str | None) -> ToolLock:
    return ToolLock(entries, path=path)


def _entry(where: str, index: int, item: Any) -> PinnedTool:
    at = f"{where}: tools[{index}]"
    if not isinstance(item, dict):
        raise LockError(f"{at}: expected an object")
    unknown = sorted(set(item) - set(_ENTRY_KEYS))
    missing = [key for key in _ENTRY_KEYS if key not in item]
    if unknown or missing:
        what = f"unknown key {unknown[0]!r}" if unknown else f"no {missing[0]!r}"
        raise LockError(f"{at}: {what} (an entry has {', '.join(map(repr, _ENTRY_KEYS))})")
    for key in ("server", "name", "digest"):
        if not isinstance(item[key], str):
            raise LockError(f"{at}.{key}: expected a string")
    definition = item["definition"]
    if not isinstance(definition, dict) or set(definition) != {w for w, _ in PINNED_FIELDS}:
        raise LockError(f"{at}.definition: expected an object of exactly the pinned fields "
                        f"({', '.join(w for w, _ in PINNED_FIELDS)})")
    if definition["name"] != item["name"]:
        raise LockError(f"{at}.definition.name: {definition['name']!r} is not the entry's "
                        f"name {item['name']!r}")
    try:
        digest = digest_of(definition)
    except DigestError as err:
        raise LockError(f"{at}.definition: {err}") from None
    if digest != item["digest"]:
        raise LockError(f"{at}.digest: not the digest of its definition (the file was "
                        "edited or cut): write the lock again with toolfilter pin")
    return PinnedTool(item["server"], item["name"], digest, definition)


def diff(lock: ToolLock, tools: Iterable[Any]) -> list[Change]:
    """What differs between the lock and ``tools`` (listed now), sorted by
    server and name: each new, changed and removed tool. Only the servers of
    ``tools`` are compared (a server that could not be listed removes
    nothing)."""
    changes: list[Change] = []
    seen: set[tuple[str, str]] = set()
    servers: set[str] = set()
    for tool in tools:
        key = (_exact(tool, "server_id"), _exact(tool, "name"))
        seen.add(key)
        servers.add(key[0])
        listed = definition_of(tool)
        pinned = lock.get(*key)
        try:
            digest: str | None = digest_of(listed)
        except DigestError:
            digest = None
        if pinned is None:
            changes.append(Change("new", *key, listed=_shown(listed)))
        elif digest != pinned.digest:
            changes.append(Change("changed", *key, changed_fields(pinned.definition, listed),
                                  pinned.definition, _shown(listed)))
    for entry in lock:
        if entry.server in servers and (entry.server, entry.name) not in seen:
            changes.append(Change("removed", entry.server, entry.name, pinned=entry.definition))
    changes.sort(key=lambda change: (change.server, change.name))
    return changes


def _shown(definition: Mapping[str, Any]) -> dict[str, Any] | None:
    """A listed definition as JSON data (None when it has no canonical text)."""
    try:
        return dict(json.loads(canonical(definition)))
    except DigestError:
        return None


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines() or [""]
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True).splitlines()


def render(changes: Sequence[Change]) -> str:
    """The changes for a reader: one heading line a tool, then, for a changed
    tool, a unified diff of each field that changed (pinned, then listed)."""
    out: list[str] = []
    for change in changes:
        label = f"{change.server}/{change.name}"
        if change.kind == "changed":
            out.append(f"changed {label}: {', '.join(change.fields)}")
            for field in change.fields:
                old = (change.pinned or {}).get(field)
                new = None if change.listed is None else change.listed.get(field)
                out.extend(f"  {line}" for line in difflib.unified_diff(
                    _lines(old), _lines(new), f"pinned {field}", f"listed {field}",
                    lineterm=""))
        elif change.kind == "new":
            out.append(f"new     {label}: not in the lock")
        else:
            out.append(f"removed {label}: pinned, no longer listed")
    if not changes:
        out.append("no changes: every listed tool is as pinned")
    return "\n".join(out) + "\n"
