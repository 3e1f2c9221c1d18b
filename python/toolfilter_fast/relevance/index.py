"""The ranked tool search over the Rust core's index."""

from __future__ import annotations

from typing import Any

from .. import _core
from .base import Engine, ToolIndexBase
from .options import Ranking, tool_text

__all__ = ["ToolIndex"]


class ToolIndex(ToolIndexBase):
    __doc__ = ToolIndexBase.__doc__

    __slots__ = ()

    def _make_engine(self, tools: tuple[Any, ...], ranking: Ranking) -> Engine:
        # The core reads exact dicts itself, and asks tool_text for the rest.
        return _core.SearchIndex(tools, ranking.weights, ranking.k1, ranking.server_k1, ranking.b,
                                 ranking.server_evidence, ranking.synonyms, ranking.path_words,
                                 ranking.steps, tool_text)
