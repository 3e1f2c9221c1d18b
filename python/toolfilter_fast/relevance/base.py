"""The search API that the fast ``ToolIndex`` and the reference's share,
over an engine that scores (the core's ``SearchIndex``, or the reference's)."""

from __future__ import annotations

import abc
import heapq
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .options import SCORER_WEIGHT, Ranking, Scorer, check_limit, check_scorer, mix_scores

__all__ = ["Engine", "ToolIndexBase"]


class Engine(Protocol):
    def __len__(self) -> int: ...
    def has_terms(self, query: str) -> bool: ...
    def scores(self, query: str, among: list[int] | None = None) -> list[float]: ...
    def rank(self, query: str, limit: int, among: list[int] | None = None,
             matched_only: bool = False) -> list[int]: ...


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise TypeError(f"query must be str, not {type(query).__name__}")
    return query


class ToolIndexBase(abc.ABC):
    """A catalog's tools, indexed once, ranked per query.

    ``tools`` are :class:`~toolfilter_fast.Tool` objects, MCP tool definitions
    (mappings) or objects with the same attributes: each is read for its
    name, title, description, ``server_id`` and input schema (see
    :func:`~toolfilter_fast.relevance.tool_text`); a missing or non-``str``
    field is empty. Immutable and thread-safe.
    """

    __slots__ = ("_engine", "ranking", "tools")

    tools: tuple[Any, ...]
    ranking: Ranking

    def __init__(self, tools: Iterable[Any], ranking: Ranking | None = None) -> None:
        if ranking is not None and not isinstance(ranking, Ranking):
            raise TypeError(f"ranking must be a Ranking, not {type(ranking).__name__}")
        self.tools = tuple(tools)
        self.ranking = ranking if ranking is not None else Ranking()
        self._engine = self._make_engine(self.tools, self.ranking)

    @abc.abstractmethod
    def _make_engine(self, tools: tuple[Any, ...], ranking: Ranking) -> Engine:
        """The scoring engine over ``tools`` (each read as :func:`tool_text` reads it):
        the core's in ``ToolIndex``, the reference's in its twin."""

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)} tools>"

    def same_tools(self, tools: Sequence[Any]) -> bool:
        """Whether ``tools`` are the indexed tools: the same objects, in order."""
        return len(tools) == len(self.tools) and all(
            a is b for a, b in zip(tools, self.tools, strict=True))

    def has_terms(self, query: str) -> bool:
        """Whether ``query`` holds any term (stop words and punctuation hold none)."""
        return self._engine.has_terms(_check_query(query))

    def scores(self, query: str, among: Sequence[int] | None = None, *,
               scorer: Scorer | None = None, scorer_weight: float = SCORER_WEIGHT) -> list[float]:
        """The score of each tool of ``among`` (indices into :attr:`tools`; all
        when None), in that order: the lexical score (``own / best +
        server_evidence * server / best server`` over these tools), mixed with
        ``scorer``'s when one is given."""
        query = _check_query(query)
        scorer, scorer_weight = check_scorer(scorer, scorer_weight)
        places = None if among is None else list(among)
        lexical = self._engine.scores(query, places)
        if scorer is None:
            return lexical
        chosen = self.tools if places is None else [self.tools[i] for i in places]
        return mix_scores(lexical, scorer, scorer_weight, query, chosen)

    def rank(self, query: str, limit: int, among: Sequence[int] | None = None, *,
             matched_only: bool = False, scorer: Scorer | None = None,
             scorer_weight: float = SCORER_WEIGHT) -> list[int]:
        """The places (into ``among``, or indices into :attr:`tools`) of the best
        ``limit`` tools, best first; equal scores in input order.
        ``matched_only`` leaves out the tools scoring 0, which no term of the
        query is found in, nor in their server's tools (all tools stay
        candidates for a query without terms)."""
        query = _check_query(query)
        limit = check_limit(limit, "limit")
        scorer, scorer_weight = check_scorer(scorer, scorer_weight)
        places = None if among is None else list(among)
        if scorer is None:
            return self._engine.rank(query, limit, places, matched_only)
        candidates = list(range(len(self.tools) if places is None else len(places)))
        if matched_only and self._engine.has_terms(query):
            matched = set(self._engine.rank(query, len(candidates), places, True))
            candidates = [j for j in candidates if j in matched]
        tools = [self.tools[i] for i in (places if places is not None else range(len(self.tools)))]
        lexical = self._engine.scores(query, places)
        chosen = [lexical[j] for j in candidates]
        mixed = mix_scores(chosen, scorer, scorer_weight, query, [tools[j] for j in candidates])
        order = heapq.nsmallest(limit, range(len(candidates)), key=lambda k: (-mixed[k], k))
        return [candidates[k] for k in order]

    def search(self, query: str, limit: int = 20, *, matched_only: bool = True,
               scorer: Scorer | None = None, scorer_weight: float = SCORER_WEIGHT) -> list[Any]:
        """The best ``limit`` tools for ``query``, best first (by default only
        tools that a term of the query is found in, or in their server's tools)."""
        picks = self.rank(query, limit, matched_only=matched_only, scorer=scorer,
                          scorer_weight=scorer_weight)
        return [self.tools[i] for i in picks]
