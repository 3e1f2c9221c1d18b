"""Per-tool renames and description overrides: the policy file's ``[[rename]]``.

::

    [[rename]]
    server = "github"
    tool = "create_issue"
    name = "new_issue"
    description = "Opens an issue in one of the team's repositories."

A rename changes only what a client is shown: the tool ``create_issue`` of
server ``github`` is listed as ``new_issue`` (with the new description, when
one is given), a call of ``new_issue`` runs ``create_issue``, and
``create_issue`` itself is unknown. The policy still judges the tool by the
server's own ``(server, name)`` and its own description. ``name`` replaces the
tool's own name; a gateway then names it as it names any tool (``--names
prefixed``: ``github__new_issue``). Either ``name`` or ``description`` may be
left out, not both.

:class:`Renames` checks what it can know without the servers' lists: each
``(server, tool)`` renamed once, and no two tools of one server given one name
(the tool names a server really lists are checked where they are known: the
gateway hides both tools of a name it cannot route, and refuses to start on
one). Errors are :class:`RenameError` (a ``ValueError``) naming the entry;
the config loader turns them into ``ConfigError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RENAME_KEYS", "Rename", "RenameError", "Renames"]

#: The keys of one ``[[rename]]`` entry.
RENAME_KEYS = ("server", "tool", "name", "description")


@dataclass(frozen=True)
class Rename:
    """One tool's new name and description (None: the server's own)."""

    server: str
    tool: str
    name: str | None = None
    description: str | None = None

    @property
    def shown(self) -> str:
        """The name a client is shown."""
        return self.tool if self.name is None else self.name


class RenameError(ValueError):
    """A rename that cannot stand: ``index`` is its place in the list, ``reason`` why."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"rename[{index}]: {reason}")
        self.index = index
        self.reason = reason


def _checked_text(value: Any, what: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {type(value).__name__}")
    if not empty and value == "":
        raise ValueError(f"{what} must not be empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} holds a lone surrogate, which no client can be sent") from None
    return value


def _rename_of(entry: Rename | Mapping[str, Any], index: int) -> Rename:
    try:
        return _parsed(entry)
    except ValueError as err:
        raise RenameError(index, str(err)) from None


def _parsed(entry: Rename | Mapping[str, Any]) -> Rename:
    if isinstance(entry, Rename):
        fields = {"server": entry.server, "tool": entry.tool, "name": entry.name,
                  "description": entry.description}
    elif isinstance(entry, Mapping):
        unknown = sorted(str(key) for key in entry if key not in RENAME_KEYS)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} (the keys are "
                             f"{', '.join(map(repr, RENAME_KEYS))})")
        missing = [key for key in ("server", "tool") if key not in entry]
        if missing:
            raise ValueError(f"{missing[0]!r} is required")
        fields = {key: entry.get(key) for key in RENAME_KEYS}
    else:
        raise ValueError(f"a rename is a table of {', '.join(RENAME_KEYS)}, "
                         f"not {type(entry).__name__}")
    if fields["name"] is None and fields["description"] is None:
        raise ValueError("give a new 'name', a 'description', or both")
    return Rename(
        _checked_text(fields["server"], "'server'"),
        _checked_text(fields["tool"], "'tool'"),
        None if fields["name"] is None else _checked_text(fields["name"], "'name'"),
        None if fields["description"] is None
        else _checked_text(fields["description"], "'description'", empty=True),
    )


class Renames(Mapping[tuple[str, str], Rename]):
    """The renames of a policy, by ``(server, tool)``: an immutable mapping,
    with the lookups a server or gateway needs to show tools and route calls."""

    __slots__ = ("_by_shown", "_by_tool")

    def __init__(self, renames: Iterable[Rename | Mapping[str, Any]] = ()) -> None:
        by_tool: dict[tuple[str, str], Rename] = {}
        by_shown: dict[tuple[str, str], Rename] = {}
        entries = [_rename_of(entry, index) for index, entry in enumerate(renames)]
        for index, rename in enumerate(entries):
            key = (rename.server, rename.tool)
            if key in by_tool:
                raise RenameError(index, f"tool {rename.tool!r} of server {rename.server!r} "
                                  "is renamed twice")
            by_tool[key] = rename
        for index, rename in enumerate(entries):
            shown = (rename.server, rename.shown)
            other = by_shown.get(shown)
            if other is not None:
                raise RenameError(index, f"tools {other.tool!r} and {rename.tool!r} of server "
                                  f"{rename.server!r} would both be named {rename.shown!r}")
            by_shown[shown] = rename
        self._by_tool = by_tool
        self._by_shown = by_shown

    def __getitem__(self, key: tuple[str, str]) -> Rename:
        return self._by_tool[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._by_tool)

    def __len__(self) -> int:
        return len(self._by_tool)

    def __repr__(self) -> str:
        return f"Renames({list(self._by_tool.values())!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Renames):
            return NotImplemented
        return self._by_tool == other._by_tool

    def __hash__(self) -> int:
        return hash(tuple(self._by_tool.values()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Renames, (list(self._by_tool.values()),))

    def name(self, server: str, tool: str) -> str:
        """The name tool ``tool`` of ``server`` is shown under."""
        rename = self._by_tool.get((server, tool))
        return tool if rename is None else rename.shown

    def description(self, server: str, tool: str, description: str | None) -> str | None:
        """The description shown for the tool, given the server's own."""
        rename = self._by_tool.get((server, tool))
        return description if rename is None or rename.description is None \
            else rename.description

    def original(self, server: str, name: str) -> str | None:
        """The server's own name of the tool shown as ``name``; None when
        ``name`` is a tool's own name that a rename took away."""
        rename = self._by_shown.get((server, name))
        if rename is not None:
            return rename.tool
        renamed_away = self._by_tool.get((server, name))
        return None if renamed_away is not None and renamed_away.shown != name else name

    def clashes_across_servers(self) -> list[tuple[Rename, Rename]]:
        """Pairs of renames of two servers to one name: one name when tools
        are shown by their own names alone (a gateway's ``--names bare``)."""
        first: dict[str, Rename] = {}
        found = []
        for rename in self._by_tool.values():
            if rename.name is None:
                continue
            other = first.setdefault(rename.name, rename)
            if other is not rename and other.server != rename.server:
                found.append((other, rename))
        return found
