"""A Policy: everything a deployment decides about which tools a turn shows,
in one object, applied in one call.

The stages run in this order, each on what the one before kept:

1. **visibility**: the :class:`~toolfilter_fast.ToolFilter` (globs, regexes,
   annotation and CEL patterns, functions), with the caller's ``ctx``;
2. **relevance** (with a ``relevance`` option): the ``top_k`` visible tools
   that best fit the turn's message, ranked by the ranked tool search
   (:class:`~toolfilter_fast.relevance.ToolIndex`), and every tool that an
   ``always`` group pins; a message without terms keeps every tool;
3. **groups**: the tool groups, by the turn's user message, over each tool's
   flat name ``<server_id>__<name>`` (every tool with a server is MCP-origin);
4. **focus**: the focus lens, when a focus is given: tools named
   ``session.widget.action`` of the focused (and hovered) widget, and the
   globals (names without ``.``); a tool of another widget or session, or any
   other dotted name, is dropped; the lens keeps the first tool of each name;
5. **budget**: at most ``max_tools`` tools, the first ones in input order.

The selection comes back in input order, whatever order the lens ranks its
parts in.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _core
from ..config import Config, load_config, load_file
from ..filter import ToolFilter
from ..focus.common import tool_name
from ..groups import GroupFilter, GroupMode, ToolFilterGroup
from ..groups.model import GroupFilterBase
from ..relevance import Relevance, ToolIndex
from .model import STAGES, Focus, Selection, check_max_tools, check_relevance, flat_name_of

__all__ = ["Policy", "PolicyDecision"]

_LENS_KEYS = ("mode", "max_tools", "session_id", "focused_id", "hover_id")


class PolicyDecision:
    """Whether one tool is kept for a turn, the stage that decided, and why."""

    __slots__ = ("kept", "reason", "stage", "tool")

    def __init__(self, tool: Any, stage: str | None, reason: str) -> None:
        self.tool = tool
        self.stage = stage
        self.kept = stage is None
        self.reason = reason

    def __repr__(self) -> str:
        verdict = "kept" if self.kept else f"dropped by {self.stage}"
        return f"PolicyDecision({verdict}: {self.reason})"


def _check_lens(section: Mapping[str, Any]) -> dict[str, Any]:
    extra = sorted(set(section) - set(_LENS_KEYS))
    if extra:
        raise ValueError(f"unknown focus_lens key {extra[0]!r} (the keys are "
                         f"{', '.join(map(repr, _LENS_KEYS))})")
    lens = dict(section)
    check_max_tools(lens.get("max_tools"), "focus_lens max_tools")
    if lens.get("mode", "focused") not in ("all", "focused", "hover"):
        raise ValueError("focus_lens mode must be 'all', 'focused' or 'hover', not "
                         f"{lens['mode']!r}")
    return lens


class Policy:
    """Visibility, turn relevance, attention and a tool budget, in one call.

    ``Policy(filter=..., relevance=..., groups=..., focus_lens=...,
    max_tools=...)`` or :meth:`from_file` / :meth:`from_config` (the config
    file's ``[filter]``, ``[relevance]``, ``[[tool_filter_groups]]``,
    ``[focus_lens]`` and ``[budget]`` sections). Then, per turn,
    :meth:`select`. Immutable and thread-safe, as its parts are.

    ``relevance`` (a :class:`~toolfilter_fast.relevance.Relevance` or a
    mapping of its options: ``top_k``, ``weights``, ``k1``, ``server_k1``, ``b``,
    ``server_evidence``, ``synonyms``, ``path_words``, ``scorer``, ``scorer_weight``) turns the
    relevance stage on. Its index is built over the tools given to :meth:`select`, all
    of them, and kept for the next call with the same tools (the same
    objects in the same order).

    ``focus_lens`` holds the lens's defaults: ``max_tools`` (the lens's own
    cap; none unless given, the budget being the usual cap), ``mode``
    (``"all"`` turns the focus stage off; ``"focused"`` ignores a hovered
    widget) and ids that a call's focus falls back on.
    """

    __slots__ = ("_index", "_lock", "filter", "focus_lens", "groups", "max_tools", "relevance")

    filter: ToolFilter
    relevance: Relevance | None
    groups: GroupFilter
    focus_lens: dict[str, Any]
    max_tools: int | None

    def __init__(
        self,
        *,
        filter: ToolFilter | None = None,
        groups: GroupFilterBase | Iterable[ToolFilterGroup | Mapping[str, Any]] | None = None,
        focus_lens: Mapping[str, Any] | None = None,
        max_tools: int | None = None,
        relevance: Relevance | Mapping[str, Any] | None = None,
    ) -> None:
        if filter is not None and not isinstance(filter, ToolFilter):
            raise TypeError(f"filter must be a ToolFilter, not {type(filter).__name__}")
        self.filter = filter if filter is not None else ToolFilter.compile()
        if isinstance(groups, GroupFilterBase) and not isinstance(groups, GroupFilter):
            raise TypeError("groups must be toolfilter_fast's own GroupFilter (or the groups), "
                            f"not {type(groups).__module__}.{type(groups).__name__}")
        self.groups = groups if isinstance(groups, GroupFilter) else GroupFilter(groups or ())
        self.focus_lens = _check_lens(focus_lens or {})
        self.max_tools = check_max_tools(max_tools, "max_tools")
        self.relevance = check_relevance(relevance)
        self._lock = threading.Lock()
        self._index: ToolIndex | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, path: str | None = None) -> Policy:
        """A policy from a parsed config (every section validated; ``path``
        only names the source in errors)."""
        return cls.from_parts(load_config(config, path=path))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Policy:
        """A policy from a TOML or JSON config file."""
        return cls.from_parts(load_file(path))

    @classmethod
    def from_parts(cls, config: Config) -> Policy:
        """A policy from a loaded :class:`~toolfilter_fast.config.Config`."""
        return cls(filter=config.filter, groups=config.group_filter,
                   focus_lens=config.focus_lens, max_tools=config.budget.get("max_tools"),
                   relevance=config.relevance)

    def __reduce__(self) -> tuple[Any, ...]:
        # The index cache and its lock stay behind: a copy builds its own.
        return (_rebuild, (self.filter, self.groups, self.focus_lens, self.max_tools,
                           self.relevance))

    def __repr__(self) -> str:
        relevance = "" if self.relevance is None else f", relevance={self.relevance!r}"
        return (f"Policy(filter={self.filter!r}{relevance}, groups={len(self.groups)} groups, "
                f"focus_lens={self.focus_lens!r}, max_tools={self.max_tools!r})")

    # --- what reads what --------------------------------------------------------

    def _groups_read_message(self) -> bool:
        return any(group.mode is GroupMode.DYNAMIC for group in self.groups.groups)

    def _focus(self, focus: Any) -> Focus | None:
        focus = Focus.parse(focus)
        if focus is None or self.focus_lens.get("mode") == "all":
            return None
        lens = self.focus_lens
        focused = focus.focused_id if focus.focused_id is not None else lens.get("focused_id")
        hover = focus.hover_id if focus.hover_id is not None else lens.get("hover_id")
        if lens.get("mode") == "focused":
            hover = None
        return Focus(focus.session_id, focused, hover)

    def _tool_index(self, items: list[Any]) -> ToolIndex:
        """The index over ``items``: the last one built, when it holds the same tools."""
        assert self.relevance is not None
        with self._lock:
            index = self._index
        if index is None or not index.same_tools(items):
            index = ToolIndex(items, self.relevance.ranking)
            with self._lock:
                self._index = index
        return index

    def _pinned(self, items: list[Any], alive: list[int]) -> set[int]:
        """The places of ``alive`` whose tools an ``always`` group admits."""
        if not len(self.groups):
            return set()
        names = [flat_name_of(items[i]) for i in alive]
        return {alive[j] for j in self.groups._select(names, None, None, indices=True)}

    def _relevance_cut(self, items: list[Any], alive: list[int], message: str | None,
                       stage_of: list[str | None]) -> list[int]:
        """Drops the visible tools outside the ``top_k`` for the message."""
        relevance = self.relevance
        assert relevance is not None
        if message is None or len(alive) <= relevance.top_k:
            return alive
        index = self._tool_index(items)
        if not index.has_terms(message):
            return alive
        pinned = self._pinned(items, alive)
        candidates = [i for i in alive if i not in pinned]
        if len(candidates) <= relevance.top_k:
            return alive
        picks = index.rank(message, relevance.top_k, candidates, scorer=relevance.scorer,
                           scorer_weight=relevance.scorer_weight)
        kept = {candidates[p] for p in picks}
        for i in candidates:
            if i not in kept:
                stage_of[i] = "relevance"
        return [i for i in alive if stage_of[i] is None]

    # --- the selection ------------------------------------------------------------

    def select(self, tools: Iterable[Any], ctx: Any = None, message: str | None = None,
               focus: Any = None) -> Selection:
        """The tools this turn shows: see the module's stages. ``tools`` are
        :class:`~toolfilter_fast.Tool` objects (or objects with ``server_id``
        and ``name``); ``message`` the turn's user message (None: no message,
        so only ``always`` groups are live); ``focus`` a :class:`Focus`, a
        ``"session:widget[:hover]"`` string or a mapping (None: no lens)."""
        items = list(tools)
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be str or None, not {type(message).__name__}")
        where = self._focus(focus)
        ran = ["visibility"]
        private = self.filter.dynamic
        alive = self.filter.mask(items, ctx, indices=True)
        stage_of: list[str | None] = ["visibility"] * len(items)
        for i in alive:
            stage_of[i] = None
        if self.relevance is not None:
            ran.append("relevance")
            private = True
            alive = self._relevance_cut(items, alive, message, stage_of)
        if len(self.groups):
            ran.append("groups")
            private = private or self._groups_read_message()
            names = [flat_name_of(items[i]) for i in alive]
            kept = set(self.groups._select(names, message or "", None, indices=True))
            for j, i in enumerate(alive):
                if j not in kept:
                    stage_of[i] = "groups"
            alive = [i for i in alive if stage_of[i] is None]
        if where is not None:
            ran.append("focus")
            private = True
            cap = self.focus_lens.get("max_tools")
            picks = _core.focus_select(
                tuple(items[i] for i in alive), tool_name, where.session_id, where.focused_id,
                where.hover_id if where.mode == "hover" else None, None,
                min(sys.maxsize if cap is None else cap, len(alive) + 1),
            )
            kept = set(picks)
            for j, i in enumerate(alive):
                if j not in kept:
                    stage_of[i] = "focus"
            alive = [i for i in alive if stage_of[i] is None]
        if self.max_tools is not None:
            ran.append("budget")
            for i in alive[self.max_tools:]:
                stage_of[i] = "budget"
        order = tuple(stage for stage in STAGES if stage in ran)
        return Selection(items, stage_of, "private" if private else "public", order,
                         _Reasons(self, items, ctx, message, where, stage_of).explain)

    def explain(self, tool: Any, ctx: Any = None, message: str | None = None,
                focus: Any = None, *, tools: Iterable[Any] | None = None) -> PolicyDecision:
        """The stage that keeps or drops ``tool`` this turn, and why. The focus
        and budget stages depend on the other tools of the turn: pass them as
        ``tools`` (``tool`` among them); without, ``tool`` is judged alone."""
        items = list(tools) if tools is not None else [tool]
        index = next((i for i, t in enumerate(items) if t is tool), None)
        if index is None:
            items.append(tool)
            index = len(items) - 1
        selection = self.select(items, ctx, message, focus)
        return PolicyDecision(tool, selection.stage_of(index), selection.reason_of(index))


def _rebuild(filter: ToolFilter, groups: GroupFilter, focus_lens: dict[str, Any],
             max_tools: int | None, relevance: Relevance | None) -> Policy:
    return Policy(filter=filter, groups=groups, focus_lens=focus_lens, max_tools=max_tools,
                  relevance=relevance)


class _Reasons:
    """The reasons of one selection's dropped tools, worked out when asked."""

    __slots__ = ("_ctx", "_focus", "_message", "_policy", "_stage_of", "_tools")

    def __init__(self, policy: Policy, tools: list[Any], ctx: Any, message: str | None,
                 focus: Focus | None, stage_of: list[str | None]) -> None:
        self._policy, self._tools, self._ctx = policy, tools, ctx
        self._message, self._focus, self._stage_of = message, focus, stage_of

    def explain(self, index: int, stage: str) -> str:
        tool, policy = self._tools[index], self._policy
        if stage == "visibility":
            return policy.filter.explain(tool, self._ctx).reason
        if stage == "relevance":
            return self._relevance_reason(index)
        if stage == "groups":
            flat = flat_name_of(tool)
            live = policy.groups.active_groups(self._message or "")
            if not live:
                return f"hidden: no group is live for this message, so {flat!r} is not shown"
            return (f"hidden: no live group has a pattern matching {flat!r} (live: "
                    f"{', '.join(f'groups[{g}]' for g in live)})")
        if stage == "focus":
            return f"hidden: {_lens_reason(tool_name(tool, index), self._focus, policy)}"
        return f"hidden: over the budget of {policy.max_tools} tools (the first ones are kept)"

    def _relevance_reason(self, index: int) -> str:
        """The tool's rank among those the relevance stage ranked (the visible
        tools that no ``always`` group pins)."""
        policy, relevance, message = self._policy, self._policy.relevance, self._message
        assert relevance is not None and message is not None
        visible = [i for i, stage in enumerate(self._stage_of) if stage != "visibility"]
        pinned = policy._pinned(self._tools, visible)
        candidates = [i for i in visible if i not in pinned]
        order = policy._tool_index(self._tools).rank(
            message, len(candidates), candidates, scorer=relevance.scorer,
            scorer_weight=relevance.scorer_weight)
        place = order.index(candidates.index(index)) + 1
        return (f"hidden: ranked {place} of {len(candidates)} for this message, and the "
                f"relevance stage keeps the best {relevance.top_k}")


def _lens_reason(name: str, focus: Focus | None, policy: Policy) -> str:
    assert focus is not None
    widgets = [w for w in (focus.focused_id, focus.hover_id if focus.mode == "hover" else None)
               if w is not None]
    segments = name.split(".")
    ours = "." not in name or (
        segments[0] == focus.session_id and len(segments) >= 2 and segments[1] in widgets
    )
    if ours:
        cap = policy.focus_lens.get("max_tools")
        return (f"{name!r} is the lens's, but another tool of that name came first, or the "
                f"lens keeps at most {cap} tools")
    if segments[0] != focus.session_id:
        return f"{name!r} is not of session {focus.session_id!r} and is no global (it has a '.')"
    shown = " or ".join(repr(w) for w in widgets) or "no widget"
    return f"{name!r} is a tool of session {focus.session_id!r} but not of widget {shown}"
