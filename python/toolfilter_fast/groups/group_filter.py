"""Tool filter groups: keyword-activated allow-lists over MCP ``server__tool``
names, the way an agent runtime exposes MCP tools turn by turn.

Configure :class:`ToolFilterGroup` objects (or read them from a runtime's TOML
config), compile them once into a :class:`GroupFilter`, then ask it each turn
which tool names the model may see for the current user message. Globs and
keywords are matched in the Rust core; ``toolfilter_fast.reference.GroupFilter``
is the pure-Python oracle with the same API.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .._core import group_glob_match
from .model import GroupFilterBase, GroupMode, NameList

__all__ = ["GroupFilter", "group_glob_match"]


class GroupFilter(GroupFilterBase):
    """Tool filter groups compiled once, asked once per turn.

    ``GroupFilter(groups)`` takes :class:`ToolFilterGroup` objects or mappings
    (read as :meth:`ToolFilterGroup.from_dict`). Per turn:

    * :meth:`visible_names` / :meth:`excluded_names` over flat names, with the
      set of MCP-origin names given beside them;
    * :meth:`visible_tools` / :meth:`excluded_tools` over :class:`Tool` objects
      or tool dicts carrying an ``origin``;
    * :meth:`preactivate` / :meth:`preactivate_tools`: what the ``always`` groups
      make live from the first turn under deferred loading.

    The rules: with no groups every tool is visible; a tool that is not
    MCP-origin is visible; an MCP tool is visible when a live group (``always``,
    or ``dynamic`` with a keyword in the message) has a pattern matching its
    name. Patterns are single-star globs (only the first ``*`` is a wildcard);
    keywords are case-insensitive substrings (per-character Unicode lower-case).
    Immutable and thread-safe; pickles by rebuilding from its groups; the GIL is
    released while the core matches.
    """

    __slots__ = ("_core",)

    def _compile(self) -> None:
        self._core = _core.GroupSet(
            [(g.mode is GroupMode.ALWAYS, g.tools, g.keywords) for g in self._groups]
        )

    def _select(
        self, names: NameList, message: str | None,
        mcp: set[Any] | frozenset[Any] | list[bool] | None, *, hidden: bool = False,
        dedupe: bool = False, indices: bool = False,
    ) -> list[Any]:
        return self._core.select(
            names, message, mcp, hidden=hidden, dedupe=dedupe, indices=indices,
        )

    def _live_groups(self, message: str | None) -> list[int]:
        return self._core.live_groups(message)
