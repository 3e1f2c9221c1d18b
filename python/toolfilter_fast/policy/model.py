"""What the fast Policy and its reference share: the focus state, the stages,
and the result of a selection.

The rules of each stage are written out separately, in ``policy.policy``
(over the Rust-cored filter, groups and lens) and ``reference.policy``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..config import POLICY_MODES
from ..focus.common import check_id
from ..groups.model import flat_name
from ..relevance.options import Relevance

__all__ = ["MODES", "STAGES", "Dropped", "Focus", "Selection", "check_max_tools", "check_mode",
           "check_relevance", "flat_name_of", "serving_order"]

#: The stages of a policy, in the order they run.
STAGES = ("pinning", "visibility", "relevance", "groups", "focus", "budget")
#: What a gateway does with a policy's decisions: apply them, or only log them.
MODES = POLICY_MODES

CacheScope = Literal["public", "private"]


def check_max_tools(value: Any, what: str) -> int | None:
    """``value`` if it is None or an int >= 0 (not a bool); else a TypeError
    or ValueError naming ``what``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int >= 0 or None, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be an int >= 0 or None, got {value!r}")
    return value


def check_mode(value: Any) -> str:
    """``value`` if it is one of :data:`MODES`; else a ValueError naming it."""
    if not isinstance(value, str) or value not in MODES:
        raise ValueError(f"policy mode must be 'enforce' or 'audit', not {value!r}")
    return "audit" if value == "audit" else "enforce"


def check_relevance(value: Any) -> Relevance | None:
    """The relevance stage's options: None (no stage), a :class:`Relevance`, or
    a mapping of its options (``top_k``, ``weights``, ``k1``, ``server_k1``, ``b``,
    ``server_evidence``, ``synonyms``, ``path_words``, ``scorer``, ``scorer_weight``)."""
    if value is None or isinstance(value, Relevance):
        return value
    if isinstance(value, Mapping):
        return Relevance.from_mapping(value)
    raise TypeError(f"relevance must be a Relevance, a mapping of its options or None, not "
                    f"{type(value).__name__}")


def flat_name_of(tool: Any) -> str:
    """The name the groups stage sees: ``<server_id>__<name>``, read by
    characters (:func:`~toolfilter_fast.groups.flat_name`): a str subclass's
    ``__format__``, ``__str__`` or ``__add__`` does not choose it."""
    return flat_name(tool)


def serving_order(tools: Sequence[Any], servers: Sequence[str] = ()) -> list[int]:
    """The places of ``tools`` in the order ``toolfilter serve`` lists them:
    servers in the order ``servers`` names them (a servers file's order), then
    every other server in the order its first tool comes; each server's tools
    by name (code point order), tools of one name in the order given. The
    command (``check``, ``explain``, ``lint``, ``export``) has the policy judge
    catalogs in this order, so that a stage that depends on the order (the
    budget, a relevance tie, the lens's first tool of a name) keeps what the
    gateway keeps."""
    rank: dict[str, int] = {}
    for server in servers:
        rank.setdefault(server, len(rank))
    for tool in tools:
        rank.setdefault(tool.server_id, len(rank))
    return sorted(range(len(tools)), key=lambda i: (rank[tools[i].server_id], tools[i].name))


@dataclass(frozen=True)
class Focus:
    """Where a UI session's attention is: the focused widget, and the one under
    the pointer (ids without ``.``, as the lens's tool names spell them:
    ``session.widget.action``).

    ``Focus.parse`` reads the CLI's ``session:widget[:hover]`` and mappings
    with ``session_id``, ``focused_id`` and ``hover_id``.
    """

    session_id: str
    focused_id: str | None = None
    hover_id: str | None = None

    def __post_init__(self) -> None:
        check_id("session_id", self.session_id, required=True)
        check_id("focused_id", self.focused_id)
        check_id("hover_id", self.hover_id)

    @classmethod
    def parse(cls, value: Any) -> Focus | None:
        """None, a Focus, ``"session:widget"``, ``"session:widget:hover"``, or a
        mapping of the three ids; ValueError (TypeError for another type) naming
        what is wrong."""
        if value is None or isinstance(value, Focus):
            return value
        if isinstance(value, str):
            parts = value.split(":")
            if not 1 <= len(parts) <= 3 or any(part == "" for part in parts):
                raise ValueError("focus must look like 'session:widget' or "
                                 f"'session:widget:hover', not {value!r}")
            return cls(*parts)
        if isinstance(value, Mapping):
            extra = sorted(set(value) - {"session_id", "focused_id", "hover_id"})
            if extra:
                raise ValueError(f"unknown focus key {extra[0]!r} (the keys are 'session_id', "
                                 "'focused_id' and 'hover_id')")
            session_id: Any = value.get("session_id")
            return cls(session_id, value.get("focused_id"), value.get("hover_id"))
        raise TypeError(f"focus must be a Focus, a 'session:widget[:hover]' string or a "
                        f"mapping, not {type(value).__name__}")

    @property
    def mode(self) -> str:
        """The lens mode this focus asks for: ``"hover"`` with a hovered widget
        other than the focused one, else ``"focused"``."""
        hovering = self.hover_id is not None and self.hover_id != self.focused_id
        return "hover" if hovering else "focused"


@dataclass(frozen=True)
class Dropped:
    """A tool a selection left out: the stage that dropped it, and why."""

    tool: Any
    stage: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"server_id": getattr(self.tool, "server_id", None),
                "name": getattr(self.tool, "name", None),
                "stage": self.stage, "reason": self.reason}


class Selection:
    """What :meth:`Policy.select` kept and dropped.

    * ``tools``: the kept objects, in input order;
    * ``dropped``: each dropped tool with its stage and reason, in input order
      (the reasons are worked out the first time they are asked for: a
      visibility reason replays the filter, calling its function patterns
      again);
    * ``cache_scope``: ``"public"`` when no stage read the caller's ``ctx``,
      the turn's message or the focus (the same list is right for anyone),
      else ``"private"``: the ``cacheScope`` of a filtered ``tools/list``;
    * ``stages``: the stages that ran, in order; ``stage_of(index)`` the stage
      that dropped the tool at ``index`` of the input (None: kept).
    """

    __slots__ = ("_dropped", "_explain", "_input", "_stage_of", "cache_scope", "stages", "tools")

    def __init__(self, tools: Sequence[Any], stage_of: list[str | None], cache_scope: CacheScope,
                 stages: tuple[str, ...], explain: Callable[[int, str], str]) -> None:
        self._input = tools
        self._stage_of = stage_of
        self.tools = [tool for tool, stage in zip(tools, stage_of, strict=True) if stage is None]
        self.cache_scope: CacheScope = cache_scope
        self.stages = stages
        self._explain = explain
        self._dropped: list[Dropped] | None = None

    @property
    def dropped(self) -> list[Dropped]:
        if self._dropped is None:
            self._dropped = [
                Dropped(self._input[i], stage, self._explain(i, stage))
                for i, stage in enumerate(self._stage_of) if stage is not None
            ]
        return self._dropped

    def stage_of(self, index: int) -> str | None:
        """The stage that dropped input tool ``index``, or None when it was kept."""
        return self._stage_of[index]

    def reason_of(self, index: int) -> str:
        """Why input tool ``index`` was kept or dropped, in one line."""
        stage = self._stage_of[index]
        if stage is None:
            return "kept by every stage"
        return self._explain(index, stage)

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return (f"Selection({len(self.tools)} of {len(self._input)} tools, "
                f"cache_scope={self.cache_scope!r})")
