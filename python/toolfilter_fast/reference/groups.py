"""The tool-groups spec made executable: a pure-Python GroupFilter.

Simple and obviously right: for each name, every live group's every pattern
is tried in turn. The oracle of the property tests and the baseline of the
benchmarks; nothing here calls the Rust core. The data model, configuration
and tool handling (``groups/model.py``) are shared with the fast path; the glob,
the keyword test and the visibility rules are written out again here.
"""

from __future__ import annotations

from typing import Any

from ..groups.model import (
    GroupConfigError,
    GroupConfigWarning,
    GroupFilterBase,
    GroupMode,
    NameList,
    ToolFilterGroup,
)
from .text import text_of

__all__ = [
    "GroupConfigError",
    "GroupConfigWarning",
    "GroupFilter",
    "GroupMode",
    "ToolFilterGroup",
    "group_glob_match",
]


def group_glob_match(pattern: str, name: str) -> bool:
    """No ``*``: equality. Otherwise ``prefix*suffix`` split at the first ``*``
    (later ones are literal): the name starts with the prefix and ends with the
    suffix, and is long enough for both."""
    pattern, name = text_of(pattern), text_of(name)
    if "*" not in pattern:
        return pattern == name
    prefix, suffix = pattern.split("*", 1)
    return (
        len(name) >= len(prefix) + len(suffix)
        and name.startswith(prefix)
        and name.endswith(suffix)
    )


def _lower(s: str) -> str:
    return "".join(c.lower() for c in text_of(s))


class GroupFilter(GroupFilterBase):
    """Reference GroupFilter: same API and semantics as ``toolfilter_fast.GroupFilter``."""

    __slots__ = ()

    def _compile(self) -> None:
        pass

    def _live_groups(self, message: str | None) -> list[int]:
        folded = None if message is None else _lower(message)
        live = []
        for index, group in enumerate(self._groups):
            if group.mode is GroupMode.ALWAYS or (
                folded is not None and any(_lower(k) in folded for k in group.keywords)
            ):
                live.append(index)
        return live

    def _select(
        self, names: NameList, message: str | None,
        mcp: set[Any] | frozenset[Any] | list[bool] | None, *, hidden: bool = False,
        dedupe: bool = False, indices: bool = False,
    ) -> list[Any]:
        live = [self._groups[i] for i in self._live_groups(message)]
        kept: list[Any] = []
        seen: set[str] = set()
        for index, name in enumerate(names):
            if not isinstance(name, str):
                raise TypeError(f"names[{index}] must be str, not {type(name).__name__}")
            if mcp is None:
                is_mcp = True
            elif isinstance(mcp, list):
                is_mcp = mcp[index]
            else:
                is_mcp = name in mcp
            admitted = is_mcp and any(
                group_glob_match(pattern, name) for group in live for pattern in group.tools
            )
            if message is None:
                selected = admitted
            elif hidden:
                selected = is_mcp and bool(self._groups) and not admitted
            else:
                selected = not self._groups or not is_mcp or admitted
            if selected and dedupe:
                if text_of(name) in seen:
                    continue
                seen.add(text_of(name))
            if selected:
                kept.append(index if indices else name)
        return kept
