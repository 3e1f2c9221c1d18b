"""Ranked tool search: which of thousands of tools best fit a turn's message.

``ToolIndex`` indexes a catalog's tools once (BM25F over name, title,
description, server id and input parameters, with server evidence; the Rust
core's ``rust/relevance/``) and ranks them per query; ``options`` holds what
it shares with the reference (``reference.relevance``): the ``Ranking``
weights, the Policy's ``Relevance`` stage options, how a tool's text is read
and how a user's scorer (an embedding model, say) is mixed in; ``semantic``
holds scorers from embedding models (imported on its own: it needs NumPy).
"""

from __future__ import annotations

from .index import ToolIndex
from .options import FIELDS, SCORER_WEIGHT, Ranking, Relevance, Scorer, mix_scores, tool_text

__all__ = ["FIELDS", "SCORER_WEIGHT", "Ranking", "Relevance", "Scorer", "ToolIndex", "mix_scores",
           "tool_text"]
