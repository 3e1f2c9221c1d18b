"""The Policy spelled out in plain Python: each stage a loop over the tools,
on the reference filter, groups and lens. The oracle of the property tests
and the baseline of the benchmarks; the focus state and the selection
(``policy.model``) and the config reader are shared with the fast path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from .._tool import Tool
from ..config import load_config, load_file
from ..groups.model import GroupMode, ToolFilterGroup
from ..policy.model import (
    STAGES,
    Focus,
    Selection,
    check_max_tools,
    check_mode,
    check_relevance,
)
from ..relevance.options import Relevance
from ..renames import Renames
from .filter import ToolFilter
from .focus import FocusLens
from .groups import GroupFilter, group_glob_match
from .pinning import pin_hides
from .relevance import ToolIndex
from .text import fold_loose, text_of

__all__ = ["Policy"]


class Policy:
    """Reference Policy: same API and selections as ``toolfilter_fast.Policy``."""

    def __init__(
        self,
        *,
        filter: ToolFilter | None = None,
        groups: GroupFilter | Iterable[ToolFilterGroup | Mapping[str, Any]] | None = None,
        focus_lens: Mapping[str, Any] | None = None,
        max_tools: int | None = None,
        relevance: Relevance | Mapping[str, Any] | None = None,
        prompts: ToolFilter | None = None,
        resources: ToolFilter | None = None,
        renames: Renames | Iterable[Mapping[str, Any]] | None = None,
        pinning: Any = None,
        mode: str = "enforce",
    ) -> None:
        self.filter = filter if filter is not None else ToolFilter.compile()
        self.prompts = prompts if prompts is not None else ToolFilter.compile()
        self.resources = resources if resources is not None else ToolFilter.compile()
        self.groups = groups if isinstance(groups, GroupFilter) else GroupFilter(groups or ())
        self.focus_lens = dict(focus_lens or {})
        self.max_tools = check_max_tools(max_tools, "max_tools")
        self.relevance = check_relevance(relevance)
        self.renames = renames if isinstance(renames, Renames) else Renames(renames or ())
        self.pinning = pinning
        self.mode = check_mode(mode)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, path: str | None = None) -> Policy:
        parts = load_config(config, path=path, cls=_any(ToolFilter), group_cls=GroupFilter)
        return cls(filter=_any(parts.filter), groups=_any(parts.group_filter),
                   focus_lens=parts.focus_lens, max_tools=parts.budget.get("max_tools"),
                   relevance=parts.relevance, prompts=_any(parts.prompts),
                   resources=_any(parts.resources), renames=parts.renames,
                   pinning=parts.pinning, mode=parts.mode)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Policy:
        parts = load_file(path, cls=_any(ToolFilter), group_cls=GroupFilter)
        return cls(filter=_any(parts.filter), groups=_any(parts.group_filter),
                   focus_lens=parts.focus_lens, max_tools=parts.budget.get("max_tools"),
                   relevance=parts.relevance, prompts=_any(parts.prompts),
                   resources=_any(parts.resources), renames=parts.renames,
                   pinning=parts.pinning, mode=parts.mode)

    def select(self, tools: Iterable[Any], ctx: Any = None, message: str | None = None,
               focus: Any = None) -> Selection:
        items = list(tools)
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be str or None, not {type(message).__name__}")
        focus = Focus.parse(focus)
        lens = self.focus_lens
        if focus is not None and lens.get("mode") == "all":
            focus = None
        stage: list[str | None] = [None] * len(items)
        ran = ["visibility"]
        private = self.filter.dynamic

        if self.pinning is not None:
            ran.append("pinning")
            for i, tool in enumerate(items):
                if pin_hides(self.pinning, tool):
                    stage[i] = "pinning"
        # The stages after pinning see only the tools it kept (the filter's
        # function patterns are not called on them, nor are they indexed).
        unpinned = [i for i in range(len(items)) if stage[i] is None]
        for i, keep in zip(unpinned, self.filter.mask([items[i] for i in unpinned], ctx),
                           strict=True):
            if not keep:
                stage[i] = "visibility"

        if self.relevance is not None:
            ran.append("relevance")
            private = True
            self._relevance(items, stage, message)

        if self.groups.groups:
            ran.append("groups")
            live = [self.groups.groups[g] for g in self.groups.active_groups(message or "")]
            for i, tool in enumerate(items):
                if stage[i] is None:
                    flat = _flat_name(tool)
                    if not any(group_glob_match(p, flat) for g in live for p in g.tools):
                        stage[i] = "groups"
            if any(g.mode is GroupMode.DYNAMIC for g in self.groups.groups):
                private = True

        if focus is not None:
            ran.append("focus")
            private = True
            focused = focus.focused_id if focus.focused_id is not None else lens.get("focused_id")
            hover = focus.hover_id if focus.hover_id is not None else lens.get("hover_id")
            if lens.get("mode") == "focused":
                hover = None
            alive = [i for i in range(len(items)) if stage[i] is None]
            cap = lens.get("max_tools")
            kept = FocusLens.filter(
                [items[i] for i in alive], "hover" if hover not in (None, focused) else "focused",
                session_id=focus.session_id, focused_id=focused, hover_id=hover,
                max_tools=len(alive) if cap is None else cap,
            )
            # The lens answers in its own order, each kept object once: match
            # them to places in input order, each place at most once.
            for i in alive:
                match = next((k for k, obj in enumerate(kept) if obj is items[i]), None)
                if match is None:
                    stage[i] = "focus"
                else:
                    del kept[match]

        if self.max_tools is not None:
            ran.append("budget")
            alive = [i for i in range(len(items)) if stage[i] is None]
            for i in alive[self.max_tools:]:
                stage[i] = "budget"

        def reason(index: int, dropped_by: str) -> str:
            if dropped_by == "visibility":
                return "hidden by the filter"
            return f"hidden by the {dropped_by} stage"

        order = tuple(s for s in STAGES if s in ran)
        return Selection(items, stage, "private" if private else "public", order, reason)


    def select_prompts(self, prompts: Iterable[Any], tools: Iterable[Any], ctx: Any = None, *,
                       server_id: str | None = None) -> Selection:
        return self._extras("prompts", list(prompts), list(tools), ctx, server_id)

    def select_resources(self, resources: Iterable[Any], tools: Iterable[Any], ctx: Any = None,
                         *, server_id: str | None = None) -> Selection:
        return self._extras("resources", list(resources), list(tools), ctx, server_id)

    def _extras(self, kind: str, items: list[Any], tools: list[Any], ctx: Any,
                server_id: str | None) -> Selection:
        """Each item: its section's filter, then no hidden tool of its server
        with its name (loosely), then a tool of its server shown or an include."""
        section = self.prompts if kind == "prompts" else self.resources
        visible = self.filter.mask(tools, ctx)
        if self.pinning is not None:
            visible = [shown and not pin_hides(self.pinning, tool)
                       for tool, shown in zip(tools, visible, strict=True)]
        stage: list[str | None] = []
        for index, item in enumerate(items):
            server = _get(item, "server_id")
            server = server_id if server is None else server
            if not isinstance(server, str):
                raise TypeError(f"{kind}[{index}]: a server_id (str) is needed")
            if kind == "prompts":
                key = name = _get(item, "name")
            else:
                key = _get(item, "uri")
                if key is None:
                    key = _get(item, "uri_template")
                if key is None:
                    key = _get(item, "uriTemplate")
                name = _get(item, "name")
            if not isinstance(key, str) or (name is not None and not isinstance(name, str)):
                raise TypeError(f"{kind}[{index}]: the name or URI must be str")
            description, title, meta = (_get(item, "description"), _get(item, "title"),
                                        _get(item, "_meta"))
            if meta is None:
                meta = _get(item, "meta")
            record = Tool(server, key, description if isinstance(description, str) else None,
                          title=title if isinstance(title, str) else None,
                          meta=meta if isinstance(meta, Mapping) else None)
            if not section.visible(record, ctx):
                stage.append(kind)
                continue
            like_hidden = name is not None and any(
                not shown and text_of(tool.server_id) == text_of(server)
                and fold_loose(text_of(tool.name)) == fold_loose(text_of(name))
                for tool, shown in zip(tools, visible, strict=True))
            if like_hidden:
                stage.append("tool-name")
                continue
            has_tool = any(shown and text_of(tool.server_id) == text_of(server)
                           for tool, shown in zip(tools, visible, strict=True))
            stage.append(None if has_tool or section.include else "server")
        private = section.dynamic or self.filter.dynamic
        return Selection(items, stage, "private" if private else "public",
                         (kind, "tool-name", "server"), lambda i, by: f"hidden by {by}")

    def _relevance(self, items: list[Any], stage: list[str | None], message: str | None) -> None:
        """Marks the visible tools that are neither among the ``top_k`` best
        for the message nor pinned by an ``always`` group."""
        relevance = self.relevance
        assert relevance is not None
        alive = [i for i in range(len(items)) if stage[i] is None]
        if message is None or len(alive) <= relevance.top_k:
            return
        indexed = [i for i in range(len(items)) if stage[i] != "pinning"]
        index = ToolIndex([items[i] for i in indexed], relevance.ranking)
        if not index.has_terms(message):
            return
        always = [g for g in self.groups.groups if g.mode is GroupMode.ALWAYS]
        candidates = []
        for i in alive:
            flat = _flat_name(items[i])
            if not any(group_glob_match(p, flat) for g in always for p in g.tools):
                candidates.append(i)
        if len(candidates) <= relevance.top_k:
            return
        at = {i: j for j, i in enumerate(indexed)}
        scores = index.scores(message, [at[i] for i in candidates], scorer=relevance.scorer,
                              scorer_weight=relevance.scorer_weight)
        best = sorted(range(len(candidates)), key=lambda j: (-scores[j], j))[:relevance.top_k]
        keep = {candidates[j] for j in best}
        for i in candidates:
            if i not in keep:
                stage[i] = "relevance"


def _get(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _flat_name(tool: Any) -> str:
    """``server_id__name`` joined from the two strings' characters (``text_of``):
    no method of a str subclass is called."""
    return text_of(tool.server_id) + "__" + text_of(tool.name)


def _any(value: Any) -> Any:
    """The reference's parts where the shared config reader's types name the
    fast path's: they have the same API."""
    return value
