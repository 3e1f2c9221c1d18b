"""A Policy: everything a deployment decides about which tools a turn shows,
in one object, applied in one call.

The stages run in this order, each on what the one before kept:

0. **pinning** (with a ``pinning`` option, the file's ``[pinning]``): a tool
   whose definition is not the one its lock pinned, or that the lock does not
   know, is hidden (:class:`~toolfilter_fast.pinning.Pinning`); the stages
   after it never see it (the relevance stage does not index it);
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

Prompts and resources are judged by :meth:`Policy.select_prompts` and
:meth:`Policy.select_resources`: the ``[prompts]``/``[resources]`` filter, and
the tools' visibility (a server the caller sees no tool of shows no prompt or
resource unless the section's include names it; a prompt or resource named
like a hidden tool of its server is hidden).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _core
from .._tool import Tool
from ..config import Config, load_config, load_file
from ..filter import ToolFilter
from ..filter.explain import Explainer
from ..filter.judges import SharedCtx
from ..focus.common import tool_name
from ..groups import GroupFilter, GroupMode, ToolFilterGroup
from ..groups.model import GroupFilterBase
from ..pinning import Pinning
from ..relevance import Relevance, ToolIndex
from ..renames import Renames
from .model import (
    STAGES,
    Focus,
    Selection,
    check_max_tools,
    check_mode,
    check_relevance,
    flat_name_of,
)

__all__ = ["EXTRA_STAGES", "Policy", "PolicyDecision"]

#: The stages of :meth:`Policy.select_prompts` and :meth:`Policy.select_resources`,
#: in the order they judge: the section's own filter (``"prompts"`` or
#: ``"resources"``), a name of a hidden tool (``"tool-name"``), a server the
#: caller sees no tool of (``"server"``).
EXTRA_STAGES = ("prompts", "resources", "tool-name", "server")

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

    ``prompts`` and ``resources`` (ToolFilters over ``(server_id, prompt
    name)`` and ``(server_id, URI)``; the file's ``[prompts]`` and
    ``[resources]``) take part in :meth:`select_prompts` and
    :meth:`select_resources`.

    ``focus_lens`` holds the lens's defaults: ``max_tools`` (the lens's own
    cap; none unless given, the budget being the usual cap), ``mode``
    (``"all"`` turns the focus stage off; ``"focused"`` ignores a hovered
    widget) and ids that a call's focus falls back on.

    ``renames`` (a :class:`~toolfilter_fast.renames.Renames`, or the file's
    ``[[rename]]`` entries as mappings) say how a server or gateway shows a
    tool: its name and description. They take no part in :meth:`select`,
    which judges each tool by its server's own name; an adapter applies them
    to what it lists and maps a call of a new name back
    (:meth:`Renames.original <toolfilter_fast.renames.Renames.original>`).

    ``pinning`` (a :class:`~toolfilter_fast.pinning.Pinning`; the file's
    ``[pinning]``) turns the pinning stage on. ``mode`` (the file's
    ``[policy] mode``, :data:`~toolfilter_fast.policy.MODES`) is what a gateway does with
    the decisions: ``"enforce"`` (the default) applies them, ``"audit"`` only
    logs them; :meth:`select` answers the same in both.
    """

    __slots__ = ("_index", "_lock", "filter", "focus_lens", "groups", "max_tools", "mode",
                 "pinning", "prompts", "relevance", "renames", "resources")

    filter: ToolFilter
    prompts: ToolFilter
    resources: ToolFilter
    relevance: Relevance | None
    groups: GroupFilter
    focus_lens: dict[str, Any]
    max_tools: int | None
    renames: Renames
    pinning: Pinning | None
    mode: str

    def __init__(
        self,
        *,
        filter: ToolFilter | None = None,
        groups: GroupFilterBase | Iterable[ToolFilterGroup | Mapping[str, Any]] | None = None,
        focus_lens: Mapping[str, Any] | None = None,
        max_tools: int | None = None,
        relevance: Relevance | Mapping[str, Any] | None = None,
        prompts: ToolFilter | None = None,
        resources: ToolFilter | None = None,
        renames: Renames | Iterable[Mapping[str, Any]] | None = None,
        pinning: Pinning | None = None,
        mode: str = "enforce",
    ) -> None:
        if pinning is not None and not isinstance(pinning, Pinning):
            raise TypeError(f"pinning must be a Pinning or None, not {type(pinning).__name__}")
        for what, value in (("filter", filter), ("prompts", prompts), ("resources", resources)):
            if value is not None and not isinstance(value, ToolFilter):
                raise TypeError(f"{what} must be a ToolFilter, not {type(value).__name__}")
        self.filter = filter if filter is not None else ToolFilter.compile()
        self.prompts = prompts if prompts is not None else ToolFilter.compile()
        self.resources = resources if resources is not None else ToolFilter.compile()
        if isinstance(groups, GroupFilterBase) and not isinstance(groups, GroupFilter):
            raise TypeError("groups must be toolfilter_fast's own GroupFilter (or the groups), "
                            f"not {type(groups).__module__}.{type(groups).__name__}")
        self.groups = groups if isinstance(groups, GroupFilter) else GroupFilter(groups or ())
        self.focus_lens = _check_lens(focus_lens or {})
        self.max_tools = check_max_tools(max_tools, "max_tools")
        self.relevance = check_relevance(relevance)
        self.renames = renames if isinstance(renames, Renames) else Renames(renames or ())
        self.pinning = pinning
        self.mode = check_mode(mode)
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
                   relevance=config.relevance, prompts=config.prompts,
                   resources=config.resources, renames=config.renames,
                   pinning=config.pinning, mode=config.mode)

    def __reduce__(self) -> tuple[Any, ...]:
        # The index cache and its lock stay behind: a copy builds its own.
        return (_rebuild, (self.filter, self.groups, self.focus_lens, self.max_tools,
                           self.relevance, self.prompts, self.resources, self.renames,
                           self.pinning, self.mode))

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
        if self.pinning is None:
            return self._select(items, ctx, message, focus)
        hidden = self.pinning.hidden(items)
        kept = [i for i, why in enumerate(hidden) if why is None]
        inner = self._select([items[i] for i in kept], ctx, message, focus)
        place = {i: j for j, i in enumerate(kept)}
        stage_of = [inner.stage_of(place[i]) if why is None else "pinning"
                    for i, why in enumerate(hidden)]

        def explain(index: int, stage: str) -> str:
            why = hidden[index]
            return why if why is not None else inner.reason_of(place[index])

        return Selection(items, stage_of, inner.cache_scope, ("pinning", *inner.stages),
                         explain)

    def _select(self, items: list[Any], ctx: Any, message: str | None,
                focus: Any) -> Selection:
        """The stages after pinning, over the tools it kept."""
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

    # --- prompts and resources ------------------------------------------------------

    def select_prompts(self, prompts: Iterable[Any], tools: Iterable[Any], ctx: Any = None, *,
                       server_id: str | None = None) -> Selection:
        """The prompts this caller may see and get. ``prompts`` are objects or
        mappings with a ``name`` (and ``server_id``, else the ``server_id``
        given: a server's own prompts); ``tools`` every tool of their servers
        (what :meth:`select` takes). A prompt is kept when

        1. the ``prompts`` filter shows ``(server_id, name)`` with ``ctx``;
        2. it is not named like a tool of its server that the visibility stage
           hides (the names compared loosely, as an exclude compares them); and
        3. the visibility stage shows this caller at least one tool of its
           server, or the ``prompts`` filter has include patterns (one of
           which then named it).

        Only the visibility stage counts: relevance, groups, the lens and the
        budget pick what one turn shows, not what a caller may reach. Each
        dropped prompt's stage is ``"prompts"``, ``"tool-name"`` or
        ``"server"`` (:data:`EXTRA_STAGES`)."""
        return self._select_extras("prompts", prompts, tools, ctx, server_id)

    def select_resources(self, resources: Iterable[Any], tools: Iterable[Any], ctx: Any = None,
                         *, server_id: str | None = None) -> Selection:
        """The resources and resource templates this caller may see and read,
        by the rules of :meth:`select_prompts` with the ``resources`` filter
        over ``(server_id, URI)``: a resource's ``uri``, a template's
        ``uri_template`` (or ``uriTemplate``), a ``str``; the name compared
        with the hidden tools' is the item's ``name``, when it has one."""
        return self._select_extras("resources", resources, tools, ctx, server_id)

    def _select_extras(self, kind: str, items: Iterable[Any], tools: Iterable[Any], ctx: Any,
                       server_id: str | None) -> Selection:
        given = list(items)
        records = [_extra_record(kind, item, i, server_id) for i, item in enumerate(given)]
        section: ToolFilter = getattr(self, kind)
        catalog = list(tools)
        shown = set(self.filter.mask(catalog, ctx, indices=True))
        if self.pinning is not None:  # a tool the pins hide is hidden here as any other
            shown -= {i for i, why in enumerate(self.pinning.hidden(catalog)) if why is not None}
        with_tools = {catalog[i].server_id for i in shown}
        hidden_names = {(tool.server_id, _core.fold_loose(tool.name))
                        for i, tool in enumerate(catalog) if i not in shown}
        passed = set(section.mask([record for record, _ in records], ctx, indices=True))
        named = bool(section.include)
        stage_of: list[str | None] = []
        for i, (record, name) in enumerate(records):
            if i not in passed:
                stage_of.append(kind)
            elif name is not None and (record.server_id, _core.fold_loose(name)) in hidden_names:
                stage_of.append("tool-name")
            elif not named and record.server_id not in with_tools:
                stage_of.append("server")
            else:
                stage_of.append(None)
        private = section.dynamic or self.filter.dynamic
        reasons = _ExtraReasons(section, kind, records, ctx)
        return Selection(given, stage_of, "private" if private else "public",
                         (kind, "tool-name", "server"), reasons.explain)


def _field(item: Any, *keys: str) -> Any:
    """The first of ``keys`` that ``item`` (a mapping, or an object's attribute)
    has other than None."""
    for key in keys:
        value = item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)
        if value is not None:
            return value
    return None


def _extra_record(kind: str, item: Any, index: int,
                  server_id: str | None) -> tuple[Tool, str | None]:
    """The record a prompt or resource is judged as, ``Tool(server_id, name or
    URI)`` with its description, title and ``_meta``, and the name compared
    with the hidden tools'."""
    where = f"{kind}[{index}]"
    server = _field(item, "server_id")
    if server is None:
        server = server_id
    if not isinstance(server, str):
        raise TypeError(f"{where}: a server_id (str) is needed: give the item one, or "
                        f"server_id=, not {type(server).__name__}")
    if kind == "prompts":
        key = _field(item, "name")
        name = key
    else:
        key = _field(item, "uri", "uri_template", "uriTemplate")
        name = _field(item, "name")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{where}.name must be str, not {type(name).__name__}")
    if not isinstance(key, str):
        what = "name" if kind == "prompts" else "uri (or uri_template)"
        raise TypeError(f"{where}.{what} must be str, not {type(key).__name__}")
    description, title = _field(item, "description"), _field(item, "title")
    meta = _field(item, "_meta", "meta")
    return (Tool(server, key, description if isinstance(description, str) else None,
                 title=title if isinstance(title, str) else None,
                 meta=meta if isinstance(meta, Mapping) else None), name)


class _ExtraReasons:
    """Why a prompt or resource was dropped, worked out when asked."""

    __slots__ = ("_ctx", "_kind", "_records", "_section")

    def __init__(self, section: ToolFilter, kind: str, records: list[tuple[Tool, str | None]],
                 ctx: Any) -> None:
        self._section, self._kind, self._records, self._ctx = section, kind, records, ctx

    def explain(self, index: int, stage: str) -> str:
        record, name = self._records[index]
        if stage == self._kind:
            return f"[{self._kind}] {self._section.explain(record, self._ctx).reason}"
        if stage == "tool-name":
            return (f"hidden: named like a tool of server {record.server_id!r} that the "
                    f"policy hides ({name!r})")
        return (f"hidden: the policy shows this caller no tool of server {record.server_id!r}, "
                f"and [{self._kind}] has no include pattern naming it")


def _rebuild(filter: ToolFilter, groups: GroupFilter, focus_lens: dict[str, Any],
             max_tools: int | None, relevance: Relevance | None,
             prompts: ToolFilter | None = None, resources: ToolFilter | None = None,
             renames: Renames | None = None, pinning: Pinning | None = None,
             mode: str = "enforce") -> Policy:
    return Policy(filter=filter, groups=groups, focus_lens=focus_lens, max_tools=max_tools,
                  relevance=relevance, prompts=prompts, resources=resources, renames=renames,
                  pinning=pinning, mode=mode)


class _Reasons:
    """The reasons of one selection's dropped tools, worked out when asked."""

    __slots__ = ("_ctx", "_explainer", "_focus", "_message", "_policy", "_shared", "_stage_of",
                 "_tools")

    def __init__(self, policy: Policy, tools: list[Any], ctx: Any, message: str | None,
                 focus: Focus | None, stage_of: list[str | None]) -> None:
        self._policy, self._tools, self._ctx = policy, tools, ctx
        self._message, self._focus, self._stage_of = message, focus, stage_of
        # One explainer and one CEL conversion of ctx for all the reasons.
        self._explainer: Explainer | None = None
        self._shared = SharedCtx(ctx)

    def explain(self, index: int, stage: str) -> str:
        tool, policy = self._tools[index], self._policy
        if stage == "visibility":
            if self._explainer is None:
                self._explainer = Explainer(policy.filter)
            return self._explainer.explain_shared(tool, self._ctx, self._shared).reason
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
