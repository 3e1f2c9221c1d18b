"""Tool filter groups: the data model, configuration and the tool-facing API,
shared by the fast ``GroupFilter`` and the reference one.

This module decides what a group *is* (its three fields, how they are read from
dicts, JSON and a runtime's TOML config, and which tools are MCP-origin). How
a group's globs and keywords are matched is left to each implementation (the
Rust core in ``group_filter``, or the reference's ``groups``), so the two can be compared.
"""

from __future__ import annotations

import abc
import json
import os
import re
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from .._tool import Tool

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "GroupConfigError",
    "GroupConfigWarning",
    "GroupFilterBase",
    "GroupMode",
    "ToolFilterGroup",
]

FIELDS = ("mode", "tools", "keywords")


class GroupMode(str, Enum):
    """How a group activates: on every turn, or when a keyword is in the message."""

    ALWAYS = "always"
    DYNAMIC = "dynamic"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


_MODES = ", ".join(repr(m.value) for m in GroupMode)


class GroupConfigError(ValueError):
    """A group's configuration was refused.

    ``location`` is where, as a config file spells it
    (``runtime_profiles.default.tool_filter_groups[1]``; empty for a lone
    group); ``profile``, ``index`` and ``field`` pick it apart (None where they
    do not apply).
    """

    def __init__(
        self, message: str, *, location: str = "", profile: str | None = None,
        index: int | None = None, field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.location = location
        self.profile = profile
        self.index = index
        self.field = field


class GroupConfigWarning(UserWarning):
    """Something in a group's configuration was ignored (an unknown key)."""


# toolfilter_fast/, not this subpackage: config.py and the reference call in too.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _warn(message: str) -> None:
    """Warns with the location of the first caller outside this package."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, GroupConfigWarning, stacklevel=level)


class _FieldProblem(Exception):
    def __init__(self, field: str, detail: str, kind: type[Exception]) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.kind = kind


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _check_mode(mode: Any) -> GroupMode:
    if isinstance(mode, GroupMode):
        return mode
    if not isinstance(mode, str):
        raise _FieldProblem("mode", f"expected {_MODES}, got {_describe(mode)}", TypeError)
    try:
        return GroupMode(mode)
    except ValueError:
        raise _FieldProblem(
            "mode", f"unknown mode {mode!r} (allowed: {_MODES}; modes are lower-case)",
            ValueError,
        ) from None


def _check_strings(field: str, values: Any) -> tuple[str, ...]:
    if not isinstance(values, (list, tuple)):
        raise _FieldProblem(
            field, f"expected a list of strings, got {_describe(values)}", TypeError,
        )
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise _FieldProblem(
                f"{field}[{index}]", f"expected a string, got {_describe(value)}", TypeError,
            )
    return tuple(values)


@dataclass(frozen=True, slots=True, repr=False, init=False)
class ToolFilterGroup:
    """One group: a mode, glob patterns over MCP flat names, and keywords.

    ``mode`` is ``"always"`` or ``"dynamic"`` (a :class:`GroupMode` or its exact
    lower-case value); ``tools`` and ``keywords`` are lists or tuples of str,
    stored as tuples, so a group is immutable and hashable. Bad fields raise
    TypeError (wrong type) or ValueError (unknown mode) naming the field.
    """

    mode: GroupMode
    tools: tuple[str, ...]
    keywords: tuple[str, ...]

    def __init__(
        self, mode: GroupMode | str = GroupMode.DYNAMIC, tools: Sequence[str] = (),
        keywords: Sequence[str] = (),
    ) -> None:
        try:
            checked = (
                _check_mode(mode), _check_strings("tools", tools),
                _check_strings("keywords", keywords),
            )
        except _FieldProblem as problem:
            raise problem.kind(f"ToolFilterGroup.{problem.field}: {problem.detail}") from None
        for field, value in zip(FIELDS, checked, strict=True):
            object.__setattr__(self, field, value)

    def __repr__(self) -> str:
        return (
            f"ToolFilterGroup(mode={self.mode.value!r}, tools={list(self.tools)!r}, "
            f"keywords={list(self.keywords)!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (ToolFilterGroup, (self.mode.value, self.tools, self.keywords))

    # --- dict / JSON --------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{"mode": "always", "tools": [...], "keywords": [...]}`` (plain types)."""
        return {"mode": self.mode.value, "tools": list(self.tools), "keywords": list(self.keywords)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolFilterGroup:
        """Reads a group from a mapping; missing fields take their defaults.

        Unknown keys are ignored with a :class:`GroupConfigWarning`; bad values
        raise :class:`GroupConfigError` naming the field.
        """
        return _group_from_mapping(data, _Where())

    def to_json(self, **dumps_options: Any) -> str:
        """The dict form as JSON (``json.dumps`` options pass through)."""
        return json.dumps(self.to_dict(), **dumps_options)

    @classmethod
    def from_json(cls, text: str | bytes) -> ToolFilterGroup:
        """Reads a group from a JSON object."""
        return _group_from_mapping(json.loads(text), _Where())

    # --- TOML ---------------------------------------------------------------

    def to_toml(self) -> str:
        """The group as a TOML document of its three keys.

        Raises ValueError for a string that TOML cannot hold (a lone surrogate).
        """
        return "".join(
            f"{field} = {_toml_value(value)}\n" for field, value in self.to_dict().items()
        )

    @classmethod
    def from_toml(cls, text: str) -> ToolFilterGroup:
        """Reads a group from a TOML document holding ``mode``/``tools``/``keywords``."""
        return _group_from_mapping(tomllib.loads(text), _Where())

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """A JSON Schema (draft 2020-12) of a group's dict form (a new dict each call)."""
        def strings() -> dict[str, Any]:
            return {"type": "array", "items": {"type": "string"}, "default": []}

        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ToolFilterGroup",
            "description": (
                "A named group of MCP tool patterns with an activation mode. MCP tools "
                "are named <server>__<tool>."
            ),
            "type": "object",
            "properties": {
                "mode": {
                    "description": "Activation mode: \"always\" or \"dynamic\".",
                    "type": "string",
                    "enum": [m.value for m in GroupMode],
                    "default": GroupMode.DYNAMIC.value,
                },
                "tools": {
                    "description": (
                        "Glob patterns matching MCP tool names (single * wildcard supported)."
                    ),
                    **strings(),
                },
                "keywords": {
                    "description": (
                        "Keywords that activate this group in dynamic mode (case-insensitive "
                        "substring). Ignored when mode = \"always\"."
                    ),
                    **strings(),
                },
            },
        }


# --- reading configuration ---------------------------------------------------


@dataclass(frozen=True)
class _Where:
    """Where a group sits in a configuration, for messages."""

    location: str = ""
    profile: str | None = None
    index: int | None = None
    note: str = ""

    def error(self, detail: str, field: str | None = None) -> GroupConfigError:
        place = ".".join(p for p in (self.location, field) if p)
        prefix = f"{place}{self.note}: " if place or self.note else ""
        return GroupConfigError(
            prefix + detail, location=self.location, profile=self.profile, index=self.index,
            field=field.split("[", 1)[0] if field else None,
        )


def _group_from_mapping(data: Any, where: _Where) -> ToolFilterGroup:
    if isinstance(data, ToolFilterGroup):
        return data
    if not isinstance(data, Mapping):
        raise where.error(f"expected a table of {', '.join(FIELDS)}, got {_describe(data)}")
    unknown = [key for key in data if key not in FIELDS]
    if unknown:
        place = where.location or "tool filter group"
        _warn(f"{place}{where.note}: unknown keys ignored: {', '.join(map(repr, unknown))}")
    try:
        mode = _check_mode(data.get("mode", GroupMode.DYNAMIC))
        tools = _check_strings("tools", data.get("tools", ()))
        keywords = _check_strings("keywords", data.get("keywords", ()))
    except _FieldProblem as problem:
        raise where.error(problem.detail, problem.field) from None
    return ToolFilterGroup(mode, tools, keywords)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def groups_from_config(doc: Mapping[str, Any], profile: str = "default") -> list[ToolFilterGroup]:
    """The groups of ``profile`` in a parsed runtime configuration.

    ``[[runtime_profiles.<profile>.tool_filter_groups]]`` when the profile sets
    it; otherwise the legacy ``[[agent.tool_filter_groups]]`` (which predates
    profiles and serves any profile that does not set its own); otherwise no
    groups. A profile other than ``default`` that is not defined is an error,
    so a misspelt name cannot silently turn filtering off.
    """
    if not isinstance(profile, str):
        raise TypeError(f"profile must be str, not {type(profile).__name__}")
    profiles = doc.get("runtime_profiles", {})
    if not isinstance(profiles, Mapping):
        raise GroupConfigError(
            f"runtime_profiles: expected a table, got {_describe(profiles)}", profile=profile,
        )
    base = f"runtime_profiles.{_toml_key(profile)}"
    table = profiles.get(profile)
    if table is None and profile != "default":
        known = ", ".join(map(repr, profiles)) or "none"
        raise GroupConfigError(
            f"{base}: no runtime profile {profile!r} (defined: {known})", location=base,
            profile=profile,
        )
    if table is not None and not isinstance(table, Mapping):
        raise GroupConfigError(
            f"{base}: expected a table, got {_describe(table)}", location=base, profile=profile,
        )
    agent = doc.get("agent", {})
    legacy = agent.get("tool_filter_groups") if isinstance(agent, Mapping) else None
    note = ""
    if table is not None and "tool_filter_groups" in table:
        raw, location = table["tool_filter_groups"], f"{base}.tool_filter_groups"
        if legacy is not None:
            _warn(f"agent.tool_filter_groups ignored: profile {profile!r} sets its own")
    elif legacy is not None:
        raw, location = legacy, "agent.tool_filter_groups"
        note = f" (legacy, read for profile {profile!r})"
    else:
        return []
    if not isinstance(raw, list):
        raise GroupConfigError(
            f"{location}{note}: expected an array of tables, got {_describe(raw)}",
            location=location, profile=profile,
        )
    return [
        _group_from_mapping(entry, _Where(f"{location}[{index}]", profile, index, note))
        for index, entry in enumerate(raw)
    ]


# --- writing TOML --------------------------------------------------------------

_TOML_ESCAPES = {
    '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
    "\r": "\\r",
}


def _toml_string(s: str) -> str:
    """A TOML basic string: quote, backslash and control characters escaped."""
    out = []
    for c in s:
        if c in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[c])
        elif c < " " or c == "\x7f":
            out.append(f"\\u{ord(c):04X}")
        elif "\ud800" <= c <= "\udfff":
            raise ValueError(f"a lone surrogate ({c!r}) cannot be written as TOML: {s!r}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _toml_value(value: str | list[str]) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    return "[" + ", ".join(_toml_string(v) for v in value) + "]"


# --- the filter API ------------------------------------------------------------

_Self = TypeVar("_Self", bound="GroupFilterBase")

#: What ``_select`` reads names from (the Rust core takes exactly these two).
NameList = list[Any] | tuple[Any, ...]


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_names(names: Any, what: str = "names") -> NameList:
    # A list is copied into a tuple: the core reads it, releases the GIL, then
    # picks the kept items by position, and a str's __hash__, a set's
    # __contains__, a mapping's get or another thread could have shifted the
    # caller's list meanwhile (a hidden name leaked so). A tuple cannot change.
    if type(names) is tuple:
        return names
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise TypeError(f"{what} must be an iterable of str, not {_type_name(names)}")
    return tuple(names)


def _check_message(message: Any) -> str:
    if not isinstance(message, str):
        raise TypeError(f"message must be str, not {_type_name(message)}")
    return message


def _check_mcp_names(mcp_names: Any) -> set[Any] | frozenset[Any]:
    if isinstance(mcp_names, (set, frozenset)):
        return mcp_names
    if isinstance(mcp_names, (str, bytes)) or not isinstance(mcp_names, Iterable):
        raise TypeError(
            f"mcp_names must be a collection of MCP tool names, not {_type_name(mcp_names)}"
        )
    return frozenset(mcp_names)


def _characters(value: Any, what: str) -> str:
    """The characters of a ``str`` as an exact ``str``. ``str.__str__`` called
    directly copies a subclass's value without calling any of its methods
    (``__format__``, ``__str__``, ``__add__``...), so a subclass cannot choose
    the name a group sees; anything else is a TypeError naming ``what``."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {_type_name(value)}")
    return str.__str__(value)


def flat_name(tool: Any) -> str:
    """The name an MCP tool has in an agent runtime: ``<server>__<tool>``, made
    of the characters of ``tool.server_id`` and ``tool.name`` (a str
    subclass's methods are never called)."""
    return _characters(tool.server_id, "server_id") + "__" + _characters(tool.name, "name")


class GroupFilterBase(abc.ABC):
    """The public API of a group filter; subclasses supply the matching."""

    __slots__ = ("_groups",)

    _groups: tuple[ToolFilterGroup, ...]

    def __init__(self, groups: Iterable[ToolFilterGroup | Mapping[str, Any]] = ()) -> None:
        if isinstance(groups, (str, bytes, Mapping, ToolFilterGroup)) or not isinstance(
            groups, Iterable,
        ):
            raise TypeError(
                f"groups must be an iterable of ToolFilterGroup, not {_type_name(groups)}"
            )
        self._groups = tuple(
            _group_from_mapping(g, _Where(f"groups[{i}]", index=i)) for i, g in enumerate(groups)
        )
        self._compile()

    # What a subclass implements ------------------------------------------------

    @abc.abstractmethod
    def _compile(self) -> None:
        """Builds the matcher for ``self._groups``."""

    @abc.abstractmethod
    def _select(
        self, names: NameList, message: str | None,
        mcp: set[Any] | frozenset[Any] | list[bool] | None, *, hidden: bool = False,
        dedupe: bool = False, indices: bool = False,
    ) -> list[Any]:
        """As ``_core.GroupSet.select``: the kept names (or their indices), in order."""

    @abc.abstractmethod
    def _live_groups(self, message: str | None) -> list[int]:
        """The indices of the groups live for ``message``."""

    # The groups ------------------------------------------------------------------

    @property
    def groups(self) -> tuple[ToolFilterGroup, ...]:
        """The groups, in the order given."""
        return self._groups

    def __len__(self) -> int:
        return len(self._groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GroupFilterBase):
            return NotImplemented
        return type(self) is type(other) and self._groups == other._groups

    def __hash__(self) -> int:
        return hash(self._groups)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._groups)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self._groups),))

    # Names -------------------------------------------------------------------------

    def visible_names(
        self, names: Iterable[str], message: str, mcp_names: Iterable[str],
    ) -> list[str]:
        """The names visible for the turn whose user message is ``message``.

        ``mcp_names`` says which names are MCP-origin (a set is used as is; any
        other iterable is made into one). A name not in it always passes; an MCP
        name passes when a live group's pattern matches it; with no groups every
        name passes. Input order and duplicates are kept.
        """
        return self._select(
            _check_names(names), _check_message(message), _check_mcp_names(mcp_names),
        )

    def excluded_names(
        self, names: Iterable[str], message: str, mcp_names: Iterable[str],
    ) -> list[str]:
        """The MCP names hidden for this turn: ``names`` minus :meth:`visible_names`."""
        return self._select(
            _check_names(names), _check_message(message), _check_mcp_names(mcp_names), hidden=True,
        )

    def preactivate(self, names: Iterable[str]) -> list[str]:
        """The MCP names (all of ``names`` are taken as MCP) that an ``always``
        group matches: live from the first turn under deferred loading. Input
        order, first of equal names only; ``dynamic`` groups never pre-activate."""
        return self._select(_check_names(names), None, None, dedupe=True)

    def active_groups(self, message: str) -> list[int]:
        """The indices of the groups live for ``message``, ascending."""
        return self._live_groups(_check_message(message))

    # Tools ---------------------------------------------------------------------------

    def _tool_origins(
        self, tools: Iterable[Any], mcp_names: Iterable[str] | None,
    ) -> tuple[NameList, list[str], list[bool]]:
        tools = _check_names(tools, "tools")
        mcp = None if mcp_names is None else _check_mcp_names(mcp_names)
        names: list[str] = []
        flags: list[bool] = []
        name: Any
        origin: Any
        for index, tool in enumerate(tools):
            if isinstance(tool, Tool):
                name, origin = flat_name(tool), "mcp"
            elif isinstance(tool, Mapping):
                name = tool.get("name")
                if not isinstance(name, str):
                    raise TypeError(f"tools[{index}]['name'] must be str, not {_type_name(name)}")
                origin = tool.get("origin")
                if mcp is None:
                    if "origin" not in tool:
                        raise ValueError(
                            f"tools[{index}] ({name!r}) has no 'origin': tag MCP tools with "
                            "origin='mcp' (others with e.g. 'builtin' or 'skill'), or pass "
                            "mcp_names"
                        )
                    if not isinstance(origin, str):
                        raise TypeError(
                            f"tools[{index}]['origin'] must be str, not {_type_name(origin)}"
                        )
            else:
                raise TypeError(
                    f"tools[{index}]: expected a Tool or a mapping with 'name' and 'origin', "
                    f"got {_type_name(tool)}"
                )
            names.append(name)
            flags.append(name in mcp if mcp is not None else origin == "mcp")
        return tools, names, flags

    def visible_tools(
        self, tools: Iterable[Any], message: str, mcp_names: Iterable[str] | None = None,
    ) -> list[Any]:
        """The tools visible for this turn, in input order (the same objects).

        A tool is a :class:`~toolfilter_fast.Tool` (flat name
        ``<server_id>__<name>``) or a mapping whose ``name`` is the flat name.
        Which are MCP-origin: with ``mcp_names``, those whose flat name is in it;
        without, every ``Tool``, and each mapping whose ``origin`` is ``"mcp"``
        (a mapping must then carry an ``origin``: ValueError otherwise).
        """
        message = _check_message(message)
        tools, names, flags = self._tool_origins(tools, mcp_names)
        return [tools[i] for i in self._select(names, message, flags, indices=True)]

    def excluded_tools(
        self, tools: Iterable[Any], message: str, mcp_names: Iterable[str] | None = None,
    ) -> list[Any]:
        """The MCP tools hidden for this turn (origins as in :meth:`visible_tools`)."""
        message = _check_message(message)
        tools, names, flags = self._tool_origins(tools, mcp_names)
        return [tools[i] for i in self._select(names, message, flags, hidden=True, indices=True)]

    def preactivate_tools(
        self, tools: Iterable[Any], mcp_names: Iterable[str] | None = None,
    ) -> list[Any]:
        """The MCP-origin tools an ``always`` group matches, first of each flat name."""
        tools, names, flags = self._tool_origins(tools, mcp_names)
        return [tools[i] for i in self._select(names, None, flags, dedupe=True, indices=True)]

    # Configuration -------------------------------------------------------------------

    @classmethod
    def from_toml(cls: type[_Self], text: str, profile: str = "default") -> _Self:
        """The groups of ``profile`` in a whole runtime config (TOML text).

        Reads ``[[runtime_profiles.<profile>.tool_filter_groups]]``, or the
        legacy ``[[agent.tool_filter_groups]]``; every other key is ignored.
        Raises :class:`GroupConfigError` naming the profile, group index and
        field; ``tomllib.TOMLDecodeError`` (a ValueError) for broken TOML.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {_type_name(text)}")
        return cls(groups_from_config(tomllib.loads(text), profile))

    @classmethod
    def from_file(
        cls: type[_Self], path: str | os.PathLike[str], profile: str = "default",
    ) -> _Self:
        """:meth:`from_toml` on the file at ``path`` (read as UTF-8)."""
        with open(path, "rb") as f:
            doc = tomllib.load(f)
        return cls(groups_from_config(doc, profile))

    def to_toml(self, profile: str = "default") -> str:
        """The groups as ``[[runtime_profiles.<profile>.tool_filter_groups]]``
        tables, which :meth:`from_toml` reads back."""
        if not isinstance(profile, str):
            raise TypeError(f"profile must be str, not {_type_name(profile)}")
        header = f"[[runtime_profiles.{_toml_key(profile)}.tool_filter_groups]]\n"
        if not self._groups:
            # An empty array, so that the profile's "no groups" survives the trip.
            return f"[runtime_profiles.{_toml_key(profile)}]\ntool_filter_groups = []\n"
        return "\n".join(header + group.to_toml() for group in self._groups)
