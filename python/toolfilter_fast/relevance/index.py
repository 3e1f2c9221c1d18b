"""The ranked tool search over the Rust core's index."""

from __future__ import annotations

from .. import _core
from .base import Engine, ToolIndexBase
from .options import Ranking

__all__ = ["ToolIndex"]


class ToolIndex(ToolIndexBase):
    __doc__ = ToolIndexBase.__doc__

    __slots__ = ()

    def _make_engine(self, texts: list[tuple[str | None, ...]], ranking: Ranking) -> Engine:
        return _core.SearchIndex(texts, ranking.weights, ranking.k1, ranking.b,
                                 ranking.server_evidence)
